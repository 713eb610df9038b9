//! The entry function: arguments from a `wsp_raw_task`, the kernel's variables and pipes, and
//! the assembled translation unit.

use std::fmt::Write;

use wsp_ir::kernel::*;
use wsp_ir::DType;

use super::emit::{CTile, Cg, R};
use super::plan::{Loc, Storage};
use super::scalar::{elem_ty, scalar_ty, PRELUDE};

/// PTO-ISA's global-memory pipe instructions for the CPU build (see the file's comment).
const CPU_PIPE: &str = include_str!("cpu_pipe.hpp");
use super::{entry_name, Arch, ErrorCode};

/// Helpers of every entry (guarded like the scalar helpers).
const VIEW_HELPER: &str = r#"#ifndef WSP_ASCEND_KERNEL_VIEWS
#define WSP_ASCEND_KERNEL_VIEWS
/* A tile parameter's view of its region argument (the conventions of wsp-sim): `row_dim` and
 * `col_dim` name the tensor dimensions that are the tile's rows and columns (-1: none, one
 * row or column); element (r, c) is at origin + r * rs + c * cs, in elements of the tensor. */
struct wsp_view {
    uint8_t *base;
    int64_t rows, cols, rs, cs;
};
static inline int32_t wsp_map_view(const struct wsp_raw_arg *a, int64_t row_dim, int64_t col_dim,
                                   uint64_t elem_size, struct wsp_view *v) {
    if (a->elem_size != elem_size) return 3;
    if (a->rank > WSP_MAX_RANK) return 2;
    const int64_t rank = (int64_t)a->rank;
    int64_t ts[WSP_MAX_RANK];
    int64_t total = 1;
    for (int64_t d = rank - 1; d >= 0; d--) {
        if (a->dims[d] < 0 || a->offsets[d] < 0 || a->extents[d] < 0 || a->strides[d] < 1) return 2;
        if (a->extents[d] > 0 && a->offsets[d] + a->strides[d] * (a->extents[d] - 1) >= a->dims[d]) return 2;
        ts[d] = total;
        if (a->dims[d] != 0 && total > (INT64_C(1) << 40) / a->dims[d]) return 2;
        total *= a->dims[d];
    }
    int64_t origin = 0;
    for (int64_t d = 0; d < rank; d++) origin += a->offsets[d] * ts[d];
    const bool hr = row_dim >= 0 && row_dim < rank, hc = col_dim >= 0 && col_dim < rank;
    v->rs = hr ? ts[row_dim] : 0;
    v->cs = hc ? ts[col_dim] : 0;
    v->rows = hr ? a->extents[row_dim] : 1;
    v->cols = hc ? a->extents[col_dim] : 1;
    if (v->rows > 0 && v->cols > 0) {
        if (a->base == nullptr) return 2;
        if (origin + (v->rows - 1) * v->rs + (v->cols - 1) * v->cs >= total) return 2;
    }
    v->base = a->base + origin * (int64_t)elem_size;
    return 0;
}
#endif
"#;

/// Declares the kernel's variables (at the top of the entry, or of each core's function);
/// returns the declarations and fills `cg.var_tiles`.
pub(super) fn declarations(cg: &mut Cg<'_>) -> R<String> {
    let saved = std::mem::take(&mut cg.body);
    for (i, v) in cg.k.vars.iter().enumerate() {
        let id = VarId(i as u32);
        match v.ty {
            Type::Scalar { dtype } => {
                cg.line(format!("{} x{i} = 0;", scalar_ty(dtype)));
            }
            Type::Tile(t) if cg.slot_pipe(id).is_some() => {
                // A pipe slot: a tensor bound to a slot of the ring by `talloc`, and the
                // valid extent its writes give it.
                let p = cg.slot_pipe(id).map(|p| p.0).unwrap_or(0);
                let e = elem_ty(t.dtype);
                cg.line(format!(
                    "Slot{p} x{i}(({e} *)nullptr, Shape<1, 1, 1, DYNAMIC, DYNAMIC>(1, 1, 1, {r}, {c}), Stride<1, 1, 1, DYNAMIC, DYNAMIC>(1, 1, 1, {c}, 1));",
                    r = t.rows(),
                    c = t.cols()
                ));
                cg.line(format!(
                    "unsigned x{i}_vr = 0, x{i}_vc = 0;\n{}(void)x{i}_vr; (void)x{i}_vc;",
                    "    ".repeat(cg.ind)
                ));
            }
            Type::Tile(t) => {
                let st = Storage::of(Loc::Vec, t);
                let Some(off) = cg.var_off.get(&id) else {
                    return Err(cg.err(format!("variable `{}` has no buffer", v.name)));
                };
                let addr = format!("kVar + 0x{off:x}");
                let name = format!("x{i}");
                cg.declare(
                    &name,
                    st,
                    &t.rows().to_string(),
                    &t.cols().to_string(),
                    &addr,
                );
                cg.var_tiles.insert(
                    id,
                    CTile {
                        name,
                        st,
                        addr,
                        shape: t.shape,
                    },
                );
            }
        }
    }
    Ok(std::mem::replace(&mut cg.body, saved))
}

/// The whole translation unit.
pub(super) fn assemble(cg: &Cg<'_>, arch: Arch, decls: &str, bases: [u64; 2]) -> String {
    let k = cg.k;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "/* Kernel `{}` for {} (PTO-ISA tile API), emitted by wsp. */",
        k.name,
        arch.name()
    );
    s.push_str("#include <pto/pto-inst.hpp>\n#include <wsp_task.h>\n#include \"wsp_math.h\"\n\n");
    s.push_str("#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstring>\n#include <limits>\n#include <type_traits>\n\n");
    let rings = cg.pipes.iter().any(|p| p.route.is_some());
    if rings {
        s.push_str("#include <atomic>\n#include <thread>\n\n");
        s.push_str(CPU_PIPE);
        s.push('\n');
    }
    s.push_str(PRELUDE);
    s.push_str(VIEW_HELPER);
    let ns = format!("wsp_k_{}", super::emit::ident(&k.name));
    let _ = writeln!(s, "\nnamespace {ns} {{\nusing namespace pto;");
    for (st, name) in &cg.types {
        let (e, r, c) = (elem_ty(st.dtype), st.rows, st.cols);
        let ty = match st.loc {
            Loc::Vec => format!("Tile<TileType::Vec, {e}, {r}, {c}, BLayout::RowMajor, DYNAMIC, DYNAMIC>"),
            Loc::Mat => format!(
                "Tile<TileType::Mat, {e}, {r}, {c}, BLayout::ColMajor, DYNAMIC, DYNAMIC, SLayout::RowMajor, TileConfig::fractalABSize>"
            ),
            Loc::Left => format!("TileLeft<{e}, {r}, {c}, DYNAMIC, DYNAMIC>"),
            Loc::Right => format!("TileRight<{e}, {r}, {c}, DYNAMIC, DYNAMIC>"),
            Loc::Acc => format!("TileAcc<{e}, {r}, {c}, DYNAMIC, DYNAMIC>"),
        };
        let _ = writeln!(s, "using {name} = {ty};");
    }
    for (i, p) in cg.pipes.iter().enumerate() {
        let Some(route) = p.route else { continue };
        let (e, r, c) = (elem_ty(p.elem.dtype), p.elem.rows(), p.elem.cols());
        let _ = writeln!(
            s,
            "/* pipe `{}`: {} -> {}, {} slots of {e}[{r}, {c}] in global memory (PTO-ISA TPipe<FlagID, Dir, SlotSize, SlotNum>) */",
            k.pipes[i].name,
            route.producer.name(),
            route.consumer.name(),
            p.slots
        );
        let _ = writeln!(
            s,
            "using Pipe{i} = wsp_cpu::TPipe<{i}, wsp_cpu::{}, {}, {}>;",
            route.direction(),
            p.slot_bytes,
            p.slots
        );
        let _ = writeln!(
            s,
            "using Slot{i} = GlobalTensor<{e}, Shape<1, 1, 1, DYNAMIC, DYNAMIC>, Stride<1, 1, 1, DYNAMIC, DYNAMIC>>;"
        );
    }
    let _ = writeln!(
        s,
        "/* Unified-buffer layout: variables, values, scratch. */\nconstexpr uint32_t kVar = 0x0, kVal = 0x{:x}, kScr = 0x{:x};",
        bases[0], bases[1]
    );
    let _ = writeln!(s, "}} // namespace {ns}\n");
    let _ = writeln!(
        s,
        "extern \"C\" int32_t {}(const struct wsp_raw_task *task) {{",
        entry_name(k)
    );
    let _ = writeln!(s, "    using namespace pto;\n    using namespace {ns};");
    let ntiles = k.tile_params().count();
    let nscalars: usize = k
        .params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Tile { .. } => 2,
            ParamKind::Scalar { .. } => 1,
        })
        .sum();
    let _ = writeln!(
        s,
        "    if (task == nullptr || task->nargs != {ntiles}u || task->nscalars != {nscalars}u || (task->nargs && task->args == nullptr) || (task->nscalars && task->scalars == nullptr)) return {};",
        ErrorCode::Arity as i32
    );
    let (mut ai, mut si) = (0usize, 0usize);
    for (i, p) in k.params.iter().enumerate() {
        match &p.kind {
            ParamKind::Tile { dir, tile, partial } => {
                let e = elem_ty(tile.dtype);
                let _ = writeln!(s, "    struct wsp_view w{i};");
                let _ = writeln!(
                    s,
                    "    {{ const int32_t rc = wsp_map_view(&task->args[{ai}], task->scalars[{si}], task->scalars[{}], sizeof({e}), &w{i}); if (rc != 0) return rc; }}",
                    si + 1
                );
                for (d, what) in [(0, "rows"), (1, "cols")] {
                    let n = tile.shape[d];
                    let cond = if partial[d] {
                        format!("w{i}.{what} > {n}")
                    } else {
                        format!("w{i}.{what} != {n}")
                    };
                    let _ = writeln!(s, "    if ({cond}) return {};", ErrorCode::Extent as i32);
                }
                if dir.writes() {
                    let _ = writeln!(
                        s,
                        "    if (task->args[{ai}].dir == WSP_DIR_IN) return {};",
                        ErrorCode::Direction as i32
                    );
                }
                let _ = writeln!(
                    s,
                    "    {e} *const p{i}_base = reinterpret_cast<{e} *>(w{i}.base);\n    const int64_t p{i}_rows = w{i}.rows, p{i}_cols = w{i}.cols, p{i}_rs = w{i}.rs, p{i}_cs = w{i}.cs;\n    (void)p{i}_base; (void)p{i}_rows; (void)p{i}_cols; (void)p{i}_rs; (void)p{i}_cs;"
                );
                ai += 1;
                si += 2;
            }
            ParamKind::Scalar { dtype, .. } => {
                let ty = scalar_ty(*dtype);
                let raw = format!("task->scalars[{si}]");
                let e = scalar_param(&raw, *dtype);
                let _ = writeln!(s, "    const {ty} p{i} = {e};\n    (void)p{i};");
                si += 1;
            }
        }
    }
    s.push_str(decls);
    s.push_str(&cg.body);
    s.push_str("    return 0;\n}\n");
    s
}

/// A scalar argument from its 64 bits: floats are f64 bit patterns, converted to the dtype;
/// integers wrap; bool is nonzero.
fn scalar_param(raw: &str, d: DType) -> String {
    let ty = scalar_ty(d);
    match d {
        DType::F64 => format!("wsp_f64((uint64_t){raw})"),
        DType::F32 => format!("(float)wsp_f64((uint64_t){raw})"),
        DType::F16 => format!("wsp_rnd_f16(wsp_f64_odd(wsp_f64((uint64_t){raw})))"),
        DType::Bf16 => format!("wsp_rnd_bf16(wsp_f64_odd(wsp_f64((uint64_t){raw})))"),
        DType::Bool => format!("({raw} != 0)"),
        _ => format!("wsp_wrap<{ty}>((uint64_t){raw})"),
    }
}
