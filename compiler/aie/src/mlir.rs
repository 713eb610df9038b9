//! The MLIR-AIE design (`aie.mlir`) of a [`Plan`]: one `aie.device(npu1_4col)` with its shim
//! and compute tiles, one object FIFO per tile input, tile output and channel pair, a core per
//! used compute tile running its static program of kernel calls, and the host's
//! `aiex.runtime_sequence` of shim transfers (`aiex.npu.dma_memcpy_nd`) and waits.
//!
//! AIE operations are printed in MLIR's generic form, so the file parses with a stock
//! `mlir-opt` (`--allow-unregistered-dialect`) as well as with the AIE tools; `func`, `scf`,
//! `arith` and `memref` operations use their own syntax.

use std::collections::BTreeMap;
use std::fmt::Write;

use wsp_ir::dtype::DType;
use wsp_ir::kernel::ParamKind;
use wsp_ir::Program;

use crate::kernel_cc::{entry_name, literal as _literal, sanitize};
use crate::plan::{End, FifoKind, HostOp, Plan, Step};

/// The MLIR element type of a dtype (signless integers; bool as i8; f16/bf16 scalars travel as
/// their bits, see [`scalar_type`]).
fn elem_type(d: DType) -> &'static str {
    match d {
        DType::F16 => "f16",
        DType::Bf16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I8 | DType::U8 | DType::Bool => "i8",
        DType::I16 | DType::U16 => "i16",
        DType::I32 | DType::U32 => "i32",
        DType::I64 | DType::U64 => "i64",
    }
}

/// The type a scalar kernel argument is passed as (matches the C++ entry's storage types).
fn scalar_type(d: DType) -> &'static str {
    match d {
        DType::F16 | DType::Bf16 => "i16",
        _ => elem_type(d),
    }
}

/// An `arith.constant` value for a scalar argument, as `(literal, type)`.
fn scalar_const(v: wsp_ir::dtype::ScalarValue, d: DType) -> String {
    let e = wsp_ir::tensor::El::from_scalar(v, d);
    let mut b = Vec::new();
    wsp_ir::tensor::encode_el(e, d, &mut b, false);
    let mut bits: u64 = 0;
    for (i, x) in b.iter().enumerate() {
        bits |= u64::from(*x) << (8 * i);
    }
    match d {
        DType::F32 => format!("0x{bits:08X} : f32"),
        DType::F64 => format!("0x{bits:016X} : f64"),
        _ => {
            // Signless integers print as their signed value of the type's width.
            let width = b.len() * 8;
            let signed = if width >= 64 {
                bits as i64
            } else {
                let shift = 64 - width;
                ((bits << shift) as i64) >> shift
            };
            format!("{signed} : {}", scalar_type(d))
        }
    }
}

struct Out {
    s: String,
    indent: usize,
    next: usize,
}

impl Out {
    fn line(&mut self, l: &str) {
        for _ in 0..self.indent {
            self.s.push_str("  ");
        }
        self.s.push_str(l);
        self.s.push('\n');
    }
    fn fresh(&mut self, base: &str) -> String {
        self.next += 1;
        format!("%{base}{}", self.next)
    }
}

/// The call-site data of a task step, for grouping repeated calls into loops.
#[derive(Clone, PartialEq)]
struct CallSig {
    kernel: usize,
    extents: Vec<[u32; 2]>,
    scalars: Vec<String>,
}

/// The design's text.
pub fn design(program: &Program, plan: &Plan) -> String {
    let mut o = Out {
        s: String::new(),
        indent: 0,
        next: 0,
    };
    o.line(&format!(
        "// MLIR-AIE design of workload `{}` (wsp emit --target aie --arch aie-ml).",
        plan.workload
    ));
    o.line("// AIE operations are in MLIR's generic form; kernels are in kernels/*.cc.");
    o.line("module {");
    o.indent += 1;
    o.line("\"aie.device\"() ({");
    o.indent += 1;

    // Kernel declarations.
    let mut used: Vec<usize> = plan.tasks.iter().map(|t| t.kernel.index()).collect();
    used.sort_unstable();
    used.dedup();
    let mut sigs: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for &ki in &used {
        let (Some(k), Some(Some(io))) = (program.kernels.get(ki), plan.io.get(ki)) else {
            continue;
        };
        let mut tys = Vec::new();
        if !io.reads.is_empty() {
            tys.push(format!("memref<{}xi8>", io.in_bytes));
        }
        if !io.writes.is_empty() {
            tys.push(format!("memref<{}xi8>", io.out_bytes));
        }
        for _ in k.tile_params() {
            tys.push("i32".into());
            tys.push("i32".into());
        }
        for p in &k.params {
            if let ParamKind::Scalar { dtype, .. } = p.kind {
                tys.push(scalar_type(dtype).into());
            }
        }
        o.line(&format!(
            "func.func private @{}({}) attributes {{link_with = \"{}.o\"}}",
            entry_name(k),
            tys.join(", "),
            sanitize(&k.name)
        ));
        sigs.insert(ki, tys);
    }

    // Tiles.
    let mut shim_cols: Vec<usize> = plan.tiles.iter().map(|t| t.col).collect();
    shim_cols.sort_unstable();
    shim_cols.dedup();
    for c in &shim_cols {
        o.line(&format!(
            "%shim_{c} = \"aie.tile\"() {{col = {c} : i32, row = 0 : i32}} : () -> index"
        ));
    }
    for t in &plan.tiles {
        o.line(&format!(
            "%tile_{0}_{1} = \"aie.tile\"() {{col = {0} : i32, row = {1} : i32}} : () -> index",
            t.col, t.row
        ));
    }
    let end_name = |e: End| match e {
        End::Shim(c) => format!("%shim_{c}"),
        End::Tile(i) => format!("%tile_{}_{}", plan.tiles[i].col, plan.tiles[i].row),
    };
    let fifo_elem = |f: usize| {
        let fifo = &plan.fifos[f];
        match fifo.kind {
            FifoKind::Channel(_) => format!("memref<{}xi32>", fifo.elem_bytes / 4),
            _ => format!("memref<{}xi8>", fifo.elem_bytes),
        }
    };

    // Object FIFOs.
    for (i, f) in plan.fifos.iter().enumerate() {
        let what = match f.kind {
            FifoKind::Input => "task inputs from the shim DMA".to_string(),
            FifoKind::Output => "task outputs to the shim DMA".to_string(),
            FifoKind::Channel(c) => format!(
                "tokens of channel `{}`",
                program
                    .channels
                    .get(c.index())
                    .map_or("?", |c| c.name.as_str())
            ),
        };
        o.line(&format!("// {what}"));
        o.line(&format!(
            "\"aie.objectfifo\"({}, {}) {{sym_name = \"{}\", elemNumber = {} : i32, elemType = !aie.objectfifo<{}>, dimensionsToStream = #aie<bd_dim_layout_array[]>, dimensionsFromStreamPerConsumer = #aie<bd_dim_layout_array_array[[]]>}} : (index, index) -> ()",
            end_name(f.producer),
            end_name(f.consumer),
            f.name,
            f.depth,
            fifo_elem(i)
        ));
    }

    // Cores.
    for (ti, t) in plan.tiles.iter().enumerate() {
        if t.program.is_empty() {
            continue;
        }
        o.line(&format!(
            "// core ({}, {}){}: {} steps; data memory {} of {} bytes",
            t.col,
            t.row,
            t.process
                .as_ref()
                .map(|p| format!(" runs process `{p}`"))
                .unwrap_or_default(),
            t.program.len(),
            t.memory,
            plan.tile_memory
        ));
        o.line(&format!(
            "%core_{0}_{1} = \"aie.core\"(%tile_{0}_{1}) ({{",
            t.col, t.row
        ));
        o.indent += 1;
        let mut i = 0;
        while i < t.program.len() {
            match &t.program[i] {
                Step::Task(ti0) => {
                    let sig = call_sig(plan, *ti0);
                    let mut n = 1;
                    while let Some(Step::Task(next)) = t.program.get(i + n) {
                        if call_sig(plan, *next) == sig {
                            n += 1;
                        } else {
                            break;
                        }
                    }
                    if n > 1 {
                        let (lo, hi, one) = (o.fresh("c"), o.fresh("c"), o.fresh("c"));
                        o.line(&format!("{lo} = arith.constant 0 : index"));
                        o.line(&format!("{hi} = arith.constant {n} : index"));
                        o.line(&format!("{one} = arith.constant 1 : index"));
                        let iv = o.fresh("i");
                        o.line(&format!("scf.for {iv} = {lo} to {hi} step {one} {{"));
                        o.indent += 1;
                        task_call(&mut o, program, plan, ti, &sig, &sigs, &fifo_elem);
                        o.indent -= 1;
                        o.line("}");
                    } else {
                        task_call(&mut o, program, plan, ti, &sig, &sigs, &fifo_elem);
                    }
                    i += n;
                }
                Step::Send { fifo, token } => {
                    let ty = fifo_elem(*fifo);
                    let sv = o.fresh("sv");
                    let b = o.fresh("b");
                    o.line(&format!(
                        "{sv} = \"aie.objectfifo.acquire\"() {{objFifo_name = @{}, port = 0 : i32, size = 1 : i32}} : () -> !aie.objectfifosubview<{ty}>",
                        plan.fifos[*fifo].name
                    ));
                    o.line(&format!(
                        "{b} = \"aie.objectfifo.subview.access\"({sv}) {{index = 0 : i32}} : (!aie.objectfifosubview<{ty}>) -> {ty}"
                    ));
                    for (j, v) in token.iter().enumerate() {
                        let (c, ix) = (o.fresh("t"), o.fresh("c"));
                        o.line(&format!("{c} = arith.constant {} : i32", *v as i32));
                        o.line(&format!("{ix} = arith.constant {j} : index"));
                        o.line(&format!("memref.store {c}, {b}[{ix}] : {ty}"));
                    }
                    o.line(&format!(
                        "\"aie.objectfifo.release\"() {{objFifo_name = @{}, port = 0 : i32, size = 1 : i32}} : () -> ()",
                        plan.fifos[*fifo].name
                    ));
                    i += 1;
                }
                Step::Recv { fifo } => {
                    let ty = fifo_elem(*fifo);
                    let sv = o.fresh("sv");
                    o.line(&format!(
                        "{sv} = \"aie.objectfifo.acquire\"() {{objFifo_name = @{}, port = 1 : i32, size = 1 : i32}} : () -> !aie.objectfifosubview<{ty}>",
                        plan.fifos[*fifo].name
                    ));
                    o.line(&format!(
                        "\"aie.objectfifo.release\"() {{objFifo_name = @{}, port = 1 : i32, size = 1 : i32}} : () -> ()",
                        plan.fifos[*fifo].name
                    ));
                    i += 1;
                }
            }
        }
        o.line("\"aie.end\"() : () -> ()");
        o.indent -= 1;
        o.line("}) : (index) -> index");
    }

    // The host's runtime sequence.
    let args: Vec<String> = plan
        .tensors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "%arg{i}: memref<{}x{}>",
                t.elements().max(1),
                elem_type(t.dtype)
            )
        })
        .collect();
    o.line("// The host: shim transfers in task order, waits where a later transfer could overtake an earlier one.");
    o.line("\"aiex.runtime_sequence\"() ({");
    o.line(&format!("^bb0({}):", args.join(", ")));
    o.indent += 1;
    let mut id = 0usize;
    for op in &plan.host {
        match op {
            HostOp::Fill { fifo, segments } | HostOp::Drain { fifo, segments } => {
                for s in segments {
                    let t = &plan.tensors[s.tensor.index()];
                    o.line(&format!(
                        "\"aiex.npu.dma_memcpy_nd\"(%arg{}) {{id = {} : i64, metadata = @{}, operandSegmentSizes = array<i32: 1, 0, 0, 0>, static_offsets = array<i64: 0, 0, 0, {}>, static_sizes = array<i64: 1, 1, {}, {}>, static_strides = array<i64: 0, 0, {}, {}>}} : (memref<{}x{}>) -> ()",
                        s.tensor.0,
                        id % 16,
                        plan.fifos[*fifo].name,
                        s.offset,
                        s.sizes[0],
                        s.sizes[1],
                        s.strides[0],
                        s.strides[1].max(1),
                        t.elements().max(1),
                        elem_type(t.dtype)
                    ));
                    id += 1;
                }
            }
            HostOp::Wait { fifo } => {
                o.line(&format!(
                    "\"aiex.npu.dma_wait\"() {{symbol = @{}}} : () -> ()",
                    plan.fifos[*fifo].name
                ));
            }
        }
    }
    o.indent -= 1;
    o.line("}) {sym_name = \"sequence\"} : () -> ()");
    o.indent -= 1;
    o.line("}) {device = #aie<device npu1_4col>} : () -> ()");
    o.indent -= 1;
    o.line("}");
    let _ = _literal;
    let mut s = o.s;
    if !s.ends_with('\n') {
        let _ = writeln!(s);
    }
    s
}

fn call_sig(plan: &Plan, task: usize) -> CallSig {
    let t = &plan.tasks[task];
    CallSig {
        kernel: t.kernel.index(),
        extents: t.tiles.iter().map(|a| a.valid).collect(),
        scalars: t
            .scalars
            .iter()
            .map(|(d, v)| scalar_const(*v, *d))
            .collect(),
    }
}

/// One kernel call: acquire the tile's input and output elements, call, release.
fn task_call(
    o: &mut Out,
    program: &Program,
    plan: &Plan,
    tile: usize,
    sig: &CallSig,
    sigs: &BTreeMap<usize, Vec<String>>,
    fifo_elem: &dyn Fn(usize) -> String,
) {
    let Some(k) = program.kernels.get(sig.kernel) else {
        return;
    };
    let Some(Some(io)) = plan.io.get(sig.kernel) else {
        return;
    };
    let t = &plan.tiles[tile];
    let mut args: Vec<String> = Vec::new();
    let acquire = |o: &mut Out, fifo: usize, port: u32, want: u64| -> String {
        let ty = fifo_elem(fifo);
        let sv = o.fresh("sv");
        let b = o.fresh("b");
        o.line(&format!(
            "{sv} = \"aie.objectfifo.acquire\"() {{objFifo_name = @{}, port = {port} : i32, size = 1 : i32}} : () -> !aie.objectfifosubview<{ty}>",
            plan.fifos[fifo].name
        ));
        o.line(&format!(
            "{b} = \"aie.objectfifo.subview.access\"({sv}) {{index = 0 : i32}} : (!aie.objectfifosubview<{ty}>) -> {ty}"
        ));
        if plan.fifos[fifo].elem_bytes == want {
            return b;
        }
        // A smaller kernel on a tile with a larger element: its leading bytes.
        let sub = o.fresh("b");
        let cast = o.fresh("b");
        o.line(&format!(
            "{sub} = memref.subview {b}[0] [{want}] [1] : {ty} to memref<{want}xi8, strided<[1]>>"
        ));
        o.line(&format!(
            "{cast} = memref.cast {sub} : memref<{want}xi8, strided<[1]>> to memref<{want}xi8>"
        ));
        cast
    };
    let mut releases = Vec::new();
    if !io.reads.is_empty() {
        if let Some(f) = t.input {
            args.push(acquire(o, f, 1, io.in_bytes));
            releases.push((f, 1));
        }
    }
    if !io.writes.is_empty() {
        if let Some(f) = t.output {
            args.push(acquire(o, f, 0, io.out_bytes));
            releases.push((f, 0));
        }
    }
    for e in &sig.extents {
        for v in e {
            let c = o.fresh("e");
            o.line(&format!("{c} = arith.constant {v} : i32"));
            args.push(c);
        }
    }
    for s in &sig.scalars {
        let c = o.fresh("s");
        o.line(&format!("{c} = arith.constant {s}"));
        args.push(c);
    }
    let tys = sigs.get(&sig.kernel).cloned().unwrap_or_default();
    o.line(&format!(
        "func.call @{}({}) : ({}) -> ()",
        entry_name(k),
        args.join(", "),
        tys.join(", ")
    ));
    for (f, port) in releases {
        o.line(&format!(
            "\"aie.objectfifo.release\"() {{objFifo_name = @{}, port = {port} : i32, size = 1 : i32}} : () -> ()",
            plan.fifos[f].name
        ));
    }
}

/// The design as a stock `mlir-opt` can verify it: MLIR cannot resolve a `func.call` callee
/// through operations of an unloaded dialect (`aie.core` might be a symbol table), so each
/// kernel call becomes an unregistered `wsp.check.call` with the same operands, callee and
/// types. Everything else is checked as emitted.
pub fn for_stock_mlir_opt(design: &str) -> String {
    let mut out = String::with_capacity(design.len());
    for line in design.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("func.call @") {
            let indent = &line[..line.len() - trimmed.len()];
            // `NAME(args) : (types) -> ()`
            if let (Some(open), Some(colon)) = (rest.find('('), rest.find(") : (")) {
                let name = &rest[..open];
                let args = &rest[open + 1..colon];
                let types = &rest[colon + 4..];
                out.push_str(&format!(
                    "{indent}\"wsp.check.call\"({args}) {{callee = @{name}}} : {types}\n"
                ));
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_calls_become_unregistered_ops_for_stock_mlir_opt() {
        let d = "  %x = arith.constant 1 : i32\n    func.call @wsp_k(%b1, %e2) : (memref<64xi8>, i32) -> ()\n";
        let c = for_stock_mlir_opt(d);
        assert_eq!(
            c,
            "  %x = arith.constant 1 : i32\n    \"wsp.check.call\"(%b1, %e2) {callee = @wsp_k} : (memref<64xi8>, i32) -> ()\n"
        );
    }

    #[test]
    fn scalar_constants_are_exact() {
        use wsp_ir::dtype::ScalarValue;
        assert_eq!(
            scalar_const(ScalarValue::Float(1.0), DType::F32),
            "0x3F800000 : f32"
        );
        assert_eq!(
            scalar_const(ScalarValue::Float(1.0), DType::F16),
            "15360 : i16"
        );
        assert_eq!(scalar_const(ScalarValue::Int(-1), DType::U8), "-1 : i8");
        assert_eq!(scalar_const(ScalarValue::Int(-5), DType::I64), "-5 : i64");
    }
}
