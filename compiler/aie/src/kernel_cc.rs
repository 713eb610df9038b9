//! Kernels as C++ for an AIE core: one `extern "C"` function per kernel over the task's packed
//! input and output buffers (the object FIFO elements), written as plain loops that compile for
//! the core and on a CPU.
//!
//! The code implements the numeric contract of [`wsp_ir::kernel`] literally, so that the CPU
//! build reproduces `wsp run` bit for bit: f16/bf16 are stored as bits and each elementwise
//! result is rounded to its dtype; reductions use the four-lane row order and the increasing
//! column order; `matmul` accumulates in increasing `k` by fused multiply-adds (`std::fma`;
//! the build disables any other floating-point contraction); `max`/`min` are IEEE `maximum`/`minimum`; integers wrap.
//! Every tile value keeps its valid extent, and stores write only the valid part.
//!
//! # Entry point
//!
//! `extern "C" void wsp_NAME(in, out, vr_0, vc_0, …, scalars…)`: `in` (when the kernel reads
//! a tile) holds the tiles of [`crate::plan::KernelIo::reads`] and `out` (when it writes one)
//! those of `writes`, each densely packed (its valid rows × valid columns, row pitch = valid
//! columns) one after the other at 4-byte aligned offsets; `vr_i, vc_i` are the valid extents
//! of the tile parameters in order; scalars follow as their storage types (f16/bf16 as bits,
//! bool as a byte). Parameters that are read and written are copied from `in` to `out` first.
//!
//! Every intermediate tile is a `static` buffer (a core's data memory has no heap, and its
//! stack is small); [`locals_bytes`] is what those buffers take.

use std::fmt::Write;

use wsp_ir::dtype::DType;
use wsp_ir::interp::exec_order;
use wsp_ir::kernel::*;
use wsp_ir::tensor::{encode_el, El};

use crate::plan::KernelIo;

/// The shared header of every kernel file.
pub const HEADER: &str = include_str!("cc/wsp_aie.h");

/// The C++ storage type of an element.
pub fn st(d: DType) -> &'static str {
    match d {
        DType::F16 | DType::Bf16 => "uint16_t",
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I8 => "int8_t",
        DType::I16 => "int16_t",
        DType::I32 => "int32_t",
        DType::I64 => "int64_t",
        DType::U8 | DType::Bool => "uint8_t",
        DType::U16 => "uint16_t",
        DType::U32 => "uint32_t",
        DType::U64 => "uint64_t",
    }
}

/// The C++ type arithmetic on an element is done in.
fn ct(d: DType) -> &'static str {
    match d {
        DType::F16 | DType::Bf16 => "float",
        _ => st(d),
    }
}

fn load(d: DType, e: &str) -> String {
    match d {
        DType::F16 => format!("wsp_h2f({e})"),
        DType::Bf16 => format!("wsp_b2f({e})"),
        _ => e.to_string(),
    }
}

fn store(d: DType, e: &str) -> String {
    match d {
        DType::F16 => format!("wsp_f2h({e})"),
        DType::Bf16 => format!("wsp_f2b({e})"),
        DType::Bool => format!("(uint8_t)(({e}) ? 1 : 0)"),
        _ => format!("({})({e})", st(d)),
    }
}

/// A C++ literal of the storage type of `d` for the scalar `v` (exact bits).
pub fn literal(v: wsp_ir::dtype::ScalarValue, d: DType) -> String {
    let e = El::from_scalar(v, d);
    let mut b = Vec::new();
    encode_el(e, d, &mut b, false);
    let mut bits: u64 = 0;
    for (i, x) in b.iter().enumerate() {
        bits |= u64::from(*x) << (8 * i);
    }
    match d {
        DType::F32 => format!("wsp_bits_f32(0x{bits:08x}u)"),
        DType::F64 => format!("wsp_bits_f64(0x{bits:016x}ull)"),
        DType::Bool => format!("(uint8_t){bits}"),
        _ => format!("({})(uint64_t)0x{bits:x}ull", st(d)),
    }
}

/// Why a kernel cannot be compiled for a core, if it cannot.
pub fn check_kernel(k: &Kernel) -> Result<(), String> {
    let ty = |v: ValueId| k.value_type(v).map(|t| t.dtype());
    let check_op = |k: &Kernel, op: &Op| -> Result<(), String> {
        let _ = k;
        match op {
            Op::Binary { op, lhs, .. } => {
                let d = ty(*lhs).ok_or("a value has no type")?;
                let ok = match op {
                    BinaryOp::And | BinaryOp::Or => d.is_bool(),
                    BinaryOp::Pow => d.is_float(),
                    _ => !d.is_bool(),
                };
                if !ok {
                    return Err(format!("`{op:?}` is not defined on {d}").to_lowercase());
                }
            }
            Op::Unary { op, x } => {
                let d = ty(*x).ok_or("a value has no type")?;
                let ok = match op {
                    UnaryOp::Not => d.is_bool(),
                    UnaryOp::Relu | UnaryOp::Abs | UnaryOp::Neg => !d.is_bool(),
                    _ => d.is_float(),
                };
                if !ok {
                    return Err(format!("`{op:?}` is not defined on {d}").to_lowercase());
                }
            }
            Op::Reduce { op, x } => {
                let d = ty(*x).ok_or("a value has no type")?;
                if d.is_bool() || (*op == ReduceOp::RowMean && !d.is_float()) {
                    return Err(format!("`{op:?}` is not defined on {d}").to_lowercase());
                }
            }
            Op::Matmul { a, .. } => {
                let d = ty(*a).ok_or("a value has no type")?;
                if !d.is_float() {
                    return Err(format!("`matmul` is not defined on {d}"));
                }
            }
            _ => {}
        }
        Ok(())
    };
    let body = k.body.as_deref().unwrap_or(&[]);
    fn walk2(stmts: &[Stmt], f: &dyn Fn(&Op) -> Result<(), String>) -> Result<(), String> {
        for s in stmts {
            match s {
                Stmt::Op { op, .. } => f(op)?,
                Stmt::For { body, .. } | Stmt::Section { body, .. } => walk2(body, f)?,
                _ => {}
            }
        }
        Ok(())
    }
    walk2(body, &|op| check_op(k, op))
}

/// Whether value `v` gets a buffer of its own (params read in place and `tpop`/`slice` results
/// alias other storage).
fn owns_buffer(k: &Kernel, op: &Op) -> bool {
    match op {
        Op::Param { param } => match k.params.get(param.index()).map(|p| &p.kind) {
            Some(ParamKind::Tile { dir, .. }) => dir.writes(),
            _ => false,
        },
        Op::TPop { .. } | Op::Slice { .. } => false,
        _ => true,
    }
}

fn for_each_op<'k>(stmts: &'k [Stmt], f: &mut dyn FnMut(&'k [ValueId], &'k Op)) {
    for s in stmts {
        match s {
            Stmt::Op { results, op } => f(results, op),
            Stmt::For { body, .. } | Stmt::Section { body, .. } => for_each_op(body, f),
            _ => {}
        }
    }
}

/// Static count of `tpush` executions per pipe (each kernel call starts with empty pipes).
fn push_counts(k: &Kernel) -> Vec<u64> {
    fn walk(stmts: &[Stmt], mult: u64, out: &mut [u64]) {
        for s in stmts {
            match s {
                Stmt::TPush { pipe, .. } => {
                    if let Some(n) = out.get_mut(pipe.index()) {
                        *n = n.saturating_add(mult);
                    }
                }
                Stmt::For {
                    start, end, body, ..
                } => {
                    let trips = u64::try_from(end.saturating_sub(*start)).unwrap_or(0);
                    walk(body, mult.saturating_mul(trips), out);
                }
                Stmt::Section { body, .. } => walk(body, mult, out),
                _ => {}
            }
        }
    }
    let mut out = vec![0u64; k.pipes.len()];
    walk(k.body.as_deref().unwrap_or(&[]), 1, &mut out);
    out
}

fn round4(n: u64) -> u64 {
    n.div_ceil(4) * 4
}

/// Bytes of data memory the kernel's static buffers take.
pub fn locals_bytes(k: &Kernel) -> u64 {
    let mut total = 0u64;
    let body = k.body.as_deref().unwrap_or(&[]);
    for_each_op(body, &mut |results, op| {
        if owns_buffer(k, op) {
            for r in results {
                if let Some(Type::Tile(t)) = k.value_type(*r) {
                    total += round4(t.len() as u64 * t.dtype.size_bytes() as u64);
                }
            }
        }
        if let Op::RowTopK { x, .. } = op {
            if let Some(Type::Tile(t)) = k.value_type(*x) {
                total += 4 * u64::from(t.cols());
            }
        }
    });
    for v in &k.vars {
        if let Type::Tile(t) = v.ty {
            total += round4(t.len() as u64 * t.dtype.size_bytes() as u64);
        }
    }
    for (p, n) in k.pipes.iter().zip(push_counts(k)) {
        total += n * round4(p.elem.len() as u64 * p.elem.dtype.size_bytes() as u64) + 8 * n;
    }
    total
}

/// How an operand is read at result position `(r, c)`.
struct Operand {
    /// The element (or scalar): in compute type, or raw storage for `select` and `cast`.
    expr: String,
}

struct Gen<'k> {
    k: &'k Kernel,
    out: String,
    indent: usize,
    /// The C string literal of the kernel's name (for errors).
    kname: String,
}

fn vname(v: ValueId) -> String {
    format!("v{}", v.0)
}

impl Gen<'_> {
    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn ty(&self, v: ValueId) -> Type {
        self.k
            .value_type(v)
            .unwrap_or(Type::Scalar { dtype: DType::I64 })
    }

    /// The element of operand `v` at result position `(r, c)` (broadcasting), in compute type.
    fn at(&self, v: ValueId, r: &str, c: &str) -> Operand {
        let n = vname(v);
        match self.ty(v) {
            Type::Scalar { dtype } => Operand {
                expr: load(dtype, &n),
            },
            Type::Tile(t) => {
                let rr = if t.rows() == 1 { "0" } else { r };
                let cc = if t.cols() == 1 { "0" } else { c };
                Operand {
                    expr: load(t.dtype, &format!("{n}[({rr}) * {n}_ld + ({cc})]")),
                }
            }
        }
    }

    /// Raw storage element (no conversion).
    fn raw(&self, v: ValueId, r: &str, c: &str) -> String {
        let n = vname(v);
        match self.ty(v) {
            Type::Scalar { .. } => n,
            Type::Tile(t) => {
                let rr = if t.rows() == 1 { "0" } else { r };
                let cc = if t.cols() == 1 { "0" } else { c };
                format!("{n}[({rr}) * {n}_ld + ({cc})]")
            }
        }
    }

    /// Emits an elementwise op producing `res` from `operands` via `f` (compute-type
    /// expression from operand expressions), stored as dtype `rd`.
    fn elementwise(
        &mut self,
        res: ValueId,
        operands: &[ValueId],
        f: &dyn Fn(&[Operand]) -> String,
        raw: bool,
    ) {
        let n = vname(res);
        match self.ty(res) {
            Type::Scalar { dtype } => {
                let ops: Vec<Operand> = operands
                    .iter()
                    .map(|v| {
                        if raw {
                            Operand {
                                expr: self.raw(*v, "0", "0"),
                            }
                        } else {
                            self.at(*v, "0", "0")
                        }
                    })
                    .collect();
                let e = f(&ops);
                let s = if raw { e } else { store(dtype, &e) };
                self.line(&format!("{n} = {s};"));
            }
            Type::Tile(t) => {
                // Valid extent: per dimension, the minimum over the operands not broadcast in it.
                for (d, dim) in [("r", 0usize), ("c", 1usize)] {
                    let parts: Vec<String> = operands
                        .iter()
                        .filter_map(|v| match self.ty(*v) {
                            Type::Tile(ot) if ot.shape[dim] == t.shape[dim] => {
                                Some(format!("{}_{d}", vname(*v)))
                            }
                            _ => None,
                        })
                        .collect();
                    let mut e = t.shape[dim].to_string();
                    for p in parts {
                        e = format!("wsp_min32({e}, {p})");
                    }
                    self.line(&format!("{n}_{d} = {e};"));
                }
                self.line(&format!(
                    "for (int32_t r = 0; r < {n}_r; ++r) for (int32_t c = 0; c < {n}_c; ++c) {{"
                ));
                let ops: Vec<Operand> = operands
                    .iter()
                    .map(|v| {
                        if raw {
                            Operand {
                                expr: self.raw(*v, "r", "c"),
                            }
                        } else {
                            self.at(*v, "r", "c")
                        }
                    })
                    .collect();
                let e = f(&ops);
                let s = if raw { e } else { store(t.dtype, &e) };
                self.indent += 1;
                self.line(&format!("{n}[r * {n}_ld + c] = {s};"));
                self.indent -= 1;
                self.line("}");
            }
        }
    }

    fn kindex(&self, ix: &KIndex) -> String {
        let mut e = format!("(int64_t){}", ix.constant);
        for (v, c) in &ix.terms {
            e = format!("{e} + (int64_t){c} * (int64_t){}", vname(*v));
        }
        e
    }

    fn block(&mut self, stmts: &[Stmt]) {
        for s in exec_order(stmts) {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Op { results, op } => self.op(results, op),
            Stmt::Store {
                param,
                region,
                value,
            } => self.store_param(*param, region.as_ref(), *value),
            Stmt::Assign { var, region, value } => self.assign(*var, region.as_ref(), *value),
            Stmt::For {
                index,
                start,
                end,
                body,
            } => {
                let n = vname(*index);
                self.line(&format!(
                    "for (int64_t {n}_i = {start}; {n}_i < {end}; ++{n}_i) {{"
                ));
                self.indent += 1;
                self.line(&format!("{n} = {n}_i;"));
                self.block(body);
                self.indent -= 1;
                self.line("}");
            }
            Stmt::Section { body, .. } => {
                self.line("{");
                self.indent += 1;
                self.block(body);
                self.indent -= 1;
                self.line("}");
            }
            Stmt::TAlloc { slot, .. } => {
                let w = format!("w{}", slot.0);
                if let Some(Type::Tile(t)) = self.k.vars.get(slot.index()).map(|v| v.ty) {
                    self.line(&format!("std::memset({w}, 0, sizeof({w}));"));
                    self.line(&format!("{w}_r = {}; {w}_c = {};", t.rows(), t.cols()));
                }
            }
            Stmt::TPush { pipe, slot } => {
                let q = format!("q{}", pipe.0);
                let w = format!("w{}", slot.0);
                let kn = self.kname.clone();
                self.line(&format!(
                    "if ({q}_tail >= {q}_cap) wsp_fail({kn}, \"tpush on a full pipe\");"
                ));
                self.line(&format!(
                    "std::memcpy({q} + (size_t){q}_tail * {q}_elems, {w}, sizeof({w}));"
                ));
                self.line(&format!(
                    "{q}_vr[{q}_tail] = {w}_r; {q}_vc[{q}_tail] = {w}_c; ++{q}_tail;"
                ));
            }
            Stmt::TFree { .. } => {}
        }
    }

    fn store_param(&mut self, param: ParamId, region: Option<&Region>, value: ValueId) {
        let Some(p) = self.k.params.get(param.index()) else {
            return;
        };
        let ParamKind::Tile { tile, .. } = p.kind else {
            return;
        };
        let pn = format!("p{}", param.0);
        let src = vname(value);
        let sd = self.ty(value).dtype();
        let kn = self.kname.clone();
        let (r0, c0, rows, cols) = match region {
            Some(reg) => (
                self.kindex(&reg.row_start),
                self.kindex(&reg.col_start),
                reg.rows,
                reg.cols,
            ),
            None => (
                "(int64_t)0".into(),
                "(int64_t)0".into(),
                tile.rows(),
                tile.cols(),
            ),
        };
        self.line("{");
        self.indent += 1;
        self.line(&format!("const int64_t r0 = {r0}, c0 = {c0};"));
        if region.is_some() {
            self.line(&format!(
                "if (r0 < 0 || c0 < 0 || r0 + {rows} > {} || c0 + {cols} > {}) wsp_fail({kn}, \"store region outside `{}`\");",
                tile.rows(),
                tile.cols(),
                p.name
            ));
        }
        self.line(&format!(
            "const int32_t vr = wsp_min32(wsp_min32({src}_r, {rows}), wsp_max32(0, (int32_t)({pn}_vr - r0)));"
        ));
        self.line(&format!(
            "const int32_t vc = wsp_min32(wsp_min32({src}_c, {cols}), wsp_max32(0, (int32_t)({pn}_vc - c0)));"
        ));
        let conv = cast_expr(sd, tile.dtype, &format!("{src}[r * {src}_ld + c]"));
        self.line(&format!(
            "for (int32_t r = 0; r < vr; ++r) for (int32_t c = 0; c < vc; ++c) {pn}[(r0 + r) * {pn}_vc + (c0 + c)] = {conv};"
        ));
        self.indent -= 1;
        self.line("}");
    }

    fn assign(&mut self, var: VarId, region: Option<&Region>, value: ValueId) {
        let Some(v) = self.k.vars.get(var.index()) else {
            return;
        };
        let w = format!("w{}", var.0);
        let src = vname(value);
        match (v.ty, region) {
            (Type::Scalar { .. }, _) => self.line(&format!("{w} = {src};")),
            (Type::Tile(t), None) => {
                self.line(&format!("{w}_r = {src}_r; {w}_c = {src}_c;"));
                self.line(&format!(
                    "for (int32_t r = 0; r < {w}_r; ++r) for (int32_t c = 0; c < {w}_c; ++c) {w}[r * {} + c] = {src}[r * {src}_ld + c];",
                    t.cols()
                ));
            }
            (Type::Tile(t), Some(reg)) => {
                let kn = self.kname.clone();
                self.line("{");
                self.indent += 1;
                self.line(&format!(
                    "const int64_t r0 = {}, c0 = {};",
                    self.kindex(&reg.row_start),
                    self.kindex(&reg.col_start)
                ));
                self.line(&format!(
                    "if (r0 < 0 || c0 < 0 || r0 + {} > {} || c0 + {} > {}) wsp_fail({kn}, \"assignment region outside `{}`\");",
                    reg.rows,
                    t.rows(),
                    reg.cols,
                    t.cols(),
                    v.name
                ));
                self.line(&format!(
                    "const int32_t vr = wsp_min32({src}_r, wsp_max32(0, (int32_t)({w}_r - r0)));"
                ));
                self.line(&format!(
                    "const int32_t vc = wsp_min32({src}_c, wsp_max32(0, (int32_t)({w}_c - c0)));"
                ));
                self.line(&format!(
                    "for (int32_t r = 0; r < vr; ++r) for (int32_t c = 0; c < vc; ++c) {w}[(r0 + r) * {} + (c0 + c)] = {src}[r * {src}_ld + c];",
                    t.cols()
                ));
                self.indent -= 1;
                self.line("}");
            }
        }
    }

    fn op(&mut self, results: &[ValueId], op: &Op) {
        let Some(&res) = results.first() else {
            return;
        };
        let n = vname(res);
        let kn = self.kname.clone();
        match op {
            Op::Param { param } => {
                let pn = format!("p{}", param.0);
                match self.k.params.get(param.index()).map(|p| &p.kind) {
                    Some(ParamKind::Tile { dir, tile, .. }) => {
                        if dir.writes() {
                            // A snapshot: later stores to the parameter must not change it.
                            self.line(&format!("{n}_r = {pn}_vr; {n}_c = {pn}_vc;"));
                            self.line(&format!(
                                "for (int32_t r = 0; r < {n}_r; ++r) for (int32_t c = 0; c < {n}_c; ++c) {n}[r * {} + c] = {pn}[r * {pn}_vc + c];",
                                tile.cols()
                            ));
                        } else {
                            self.line(&format!(
                                "{n} = {pn}; {n}_ld = {pn}_vc; {n}_r = {pn}_vr; {n}_c = {pn}_vc;"
                            ));
                        }
                    }
                    _ => self.line(&format!("{n} = {pn};")),
                }
            }
            Op::Const { value, dtype } => {
                self.line(&format!("{n} = {};", literal(*value, *dtype)));
            }
            Op::Binary { op, lhs, rhs } => {
                let d = self.ty(*lhs).dtype();
                let op = *op;
                let kn2 = kn.clone();
                self.elementwise(
                    res,
                    &[*lhs, *rhs],
                    &move |o| binary_expr(op, d, &o[0].expr, &o[1].expr, &kn2),
                    false,
                );
            }
            Op::Cmp { op, lhs, rhs } => {
                let sym = op.symbol();
                self.elementwise(
                    res,
                    &[*lhs, *rhs],
                    &move |o| format!("({} {sym} {})", o[0].expr, o[1].expr),
                    false,
                );
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                self.elementwise(
                    res,
                    &[*cond, *on_true, *on_false],
                    &|o| format!("({} ? {} : {})", o[0].expr, o[1].expr, o[2].expr),
                    true,
                );
            }
            Op::Unary { op, x } => {
                let d = self.ty(*x).dtype();
                let op = *op;
                self.elementwise(res, &[*x], &move |o| unary_expr(op, d, &o[0].expr), false);
            }
            Op::Cast { x, dtype } => {
                let from = self.ty(*x).dtype();
                let to = *dtype;
                self.elementwise(res, &[*x], &move |o| cast_expr(from, to, &o[0].expr), true);
            }
            Op::Reduce { op, x } => self.reduce(res, *op, *x),
            Op::Matmul { a, b, acc } => self.matmul(res, *a, *b, *acc),
            Op::Transpose { x } => {
                let xn = vname(*x);
                self.line(&format!("{n}_r = {xn}_c; {n}_c = {xn}_r;"));
                self.line(&format!(
                    "for (int32_t r = 0; r < {xn}_r; ++r) for (int32_t c = 0; c < {xn}_c; ++c) {n}[c * {n}_ld + r] = {xn}[r * {xn}_ld + c];"
                ));
            }
            Op::Full { shape, value, .. } => {
                self.line(&format!("{n}_r = {}; {n}_c = {};", shape[0], shape[1]));
                self.line(&format!(
                    "for (int32_t i = 0; i < {}; ++i) {n}[i] = {};",
                    shape[0] * shape[1],
                    vname(*value)
                ));
            }
            Op::Iota { shape, dtype } => {
                self.line(&format!("{n}_r = {}; {n}_c = {};", shape[0], shape[1]));
                let e = cast_expr(DType::I64, *dtype, "(int64_t)i");
                self.line(&format!(
                    "for (int32_t i = 0; i < {}; ++i) {n}[i] = {e};",
                    shape[0] * shape[1]
                ));
            }
            Op::RowTopK { x, k } => {
                let xn = vname(*x);
                let Some(&ires) = results.get(1) else {
                    return;
                };
                let iname = vname(ires);
                let xd = self.ty(*x).dtype();
                let cols = self.ty(*x).tile().map_or(1, |t| t.cols());
                let el = |e: &str| load(xd, e);
                self.line("{");
                self.indent += 1;
                self.line(&format!("static int32_t idx[{cols}];"));
                self.line(&format!(
                    "if ({k} > {xn}_c) wsp_fail({kn}, \"rowtopk with k = {k} on a tile with fewer valid columns\");"
                ));
                self.line(&format!(
                    "{n}_r = {xn}_r; {n}_c = {k}; {iname}_r = {xn}_r; {iname}_c = {k};"
                ));
                self.line(&format!("for (int32_t r = 0; r < {xn}_r; ++r) {{"));
                self.indent += 1;
                self.line(&format!("for (int32_t c = 0; c < {xn}_c; ++c) idx[c] = c;"));
                self.line(&format!("for (int32_t j = 0; j < {k}; ++j) {{"));
                self.indent += 1;
                self.line("int32_t best = j;");
                self.line(&format!(
                    "for (int32_t c = j + 1; c < {xn}_c; ++c) if (wsp_topk_before({}, idx[c], {}, idx[best])) best = c;",
                    el(&format!("{xn}[r * {xn}_ld + idx[c]]")),
                    el(&format!("{xn}[r * {xn}_ld + idx[best]]"))
                ));
                self.line("int32_t t = idx[j]; idx[j] = idx[best]; idx[best] = t;");
                self.line(&format!(
                    "{n}[r * {n}_ld + j] = {xn}[r * {xn}_ld + idx[j]];"
                ));
                self.line(&format!("{iname}[r * {iname}_ld + j] = idx[j];"));
                self.indent -= 1;
                self.line("}");
                self.indent -= 1;
                self.line("}");
                self.indent -= 1;
                self.line("}");
            }
            Op::Slice { x, region } => {
                let xn = vname(*x);
                let Some(xt) = self.ty(*x).tile() else {
                    return;
                };
                self.line("{");
                self.indent += 1;
                self.line(&format!(
                    "const int64_t r0 = {}, c0 = {};",
                    self.kindex(&region.row_start),
                    self.kindex(&region.col_start)
                ));
                self.line(&format!(
                    "if (r0 < 0 || c0 < 0 || r0 + {} > {} || c0 + {} > {}) wsp_fail({kn}, \"slice region outside its tile\");",
                    region.rows,
                    xt.rows(),
                    region.cols,
                    xt.cols()
                ));
                self.line(&format!(
                    "{n} = {xn} + r0 * {xn}_ld + c0; {n}_ld = {xn}_ld;"
                ));
                self.line(&format!(
                    "{n}_r = wsp_min32({}, wsp_max32(0, (int32_t)({xn}_r - r0)));",
                    region.rows
                ));
                self.line(&format!(
                    "{n}_c = wsp_min32({}, wsp_max32(0, (int32_t)({xn}_c - c0)));",
                    region.cols
                ));
                self.indent -= 1;
                self.line("}");
            }
            Op::VarRead { var } => {
                let w = format!("w{}", var.0);
                match self.k.vars.get(var.index()).map(|v| v.ty) {
                    Some(Type::Tile(t)) => {
                        self.line(&format!("{n}_r = {w}_r; {n}_c = {w}_c;"));
                        self.line(&format!(
                            "for (int32_t r = 0; r < {n}_r; ++r) for (int32_t c = 0; c < {n}_c; ++c) {n}[r * {n}_ld + c] = {w}[r * {} + c];",
                            t.cols()
                        ));
                    }
                    _ => self.line(&format!("{n} = {w};")),
                }
            }
            Op::TPop { pipe } => {
                let q = format!("q{}", pipe.0);
                self.line(&format!(
                    "if ({q}_head >= {q}_tail) wsp_fail({kn}, \"tpop on an empty pipe\");"
                ));
                if let Some(p) = self.k.pipes.get(pipe.index()) {
                    self.line(&format!(
                        "{n} = {q} + (size_t){q}_head * {q}_elems; {n}_ld = {}; {n}_r = {q}_vr[{q}_head]; {n}_c = {q}_vc[{q}_head]; ++{q}_head;",
                        p.elem.cols()
                    ));
                }
            }
        }
    }

    fn reduce(&mut self, res: ValueId, op: ReduceOp, x: ValueId) {
        let n = vname(res);
        let xn = vname(x);
        let xd = self.ty(x).dtype();
        let acc = xd.accumulator();
        let a = ct(acc);
        let el = load(
            xd,
            &if op.is_row() {
                format!("{xn}[o * {xn}_ld + i]")
            } else {
                format!("{xn}[i * {xn}_ld + o]")
            },
        );
        let el = format!("({a})({el})");
        let (outer, inner) = if op.is_row() {
            (format!("{xn}_r"), format!("{xn}_c"))
        } else {
            (format!("{xn}_c"), format!("{xn}_r"))
        };
        if op.is_row() {
            self.line(&format!("{n}_r = {xn}_r; {n}_c = 1;"));
        } else {
            self.line(&format!("{n}_r = 1; {n}_c = {xn}_c;"));
        }
        self.line(&format!("for (int32_t o = 0; o < {outer}; ++o) {{"));
        self.indent += 1;
        let result = if acc.is_float() {
            match op {
                ReduceOp::RowSum | ReduceOp::RowMean => {
                    self.line(&format!("{a} s[4] = {{({a})0, ({a})0, ({a})0, ({a})0}};"));
                    self.line(&format!(
                        "for (int32_t i = 0; i < {inner}; ++i) s[i & 3] = s[i & 3] + {el};"
                    ));
                    self.line(&format!("{a} acc = (s[0] + s[1]) + (s[2] + s[3]);"));
                    if op == ReduceOp::RowMean {
                        self.line(&format!("acc = acc / ({a}){inner};"));
                    }
                    "acc".to_string()
                }
                ReduceOp::ColSum => {
                    self.line(&format!("{a} acc = ({a})0;"));
                    self.line(&format!(
                        "for (int32_t i = 0; i < {inner}; ++i) acc = acc + {el};"
                    ));
                    "acc".to_string()
                }
                ReduceOp::RowMax | ReduceOp::ColMax => {
                    self.line(&format!("{a} acc = -std::numeric_limits<{a}>::infinity();"));
                    self.line(&format!(
                        "for (int32_t i = 0; i < {inner}; ++i) acc = wsp_maximum(acc, {el});"
                    ));
                    "acc".to_string()
                }
                ReduceOp::RowMin | ReduceOp::ColMin => {
                    self.line(&format!("{a} acc = std::numeric_limits<{a}>::infinity();"));
                    self.line(&format!(
                        "for (int32_t i = 0; i < {inner}; ++i) acc = wsp_minimum(acc, {el});"
                    ));
                    "acc".to_string()
                }
            }
        } else {
            match op {
                ReduceOp::RowSum | ReduceOp::ColSum | ReduceOp::RowMean => {
                    self.line(&format!("{a} acc = 0;"));
                    self.line(&format!(
                        "for (int32_t i = 0; i < {inner}; ++i) acc = wsp_add<{a}>(acc, {el});"
                    ));
                }
                ReduceOp::RowMax | ReduceOp::ColMax => {
                    self.line(&format!("{a} acc = std::numeric_limits<{a}>::min();"));
                    self.line(&format!(
                        "for (int32_t i = 0; i < {inner}; ++i) {{ {a} e = {el}; if (e > acc) acc = e; }}"
                    ));
                }
                ReduceOp::RowMin | ReduceOp::ColMin => {
                    self.line(&format!("{a} acc = std::numeric_limits<{a}>::max();"));
                    self.line(&format!(
                        "for (int32_t i = 0; i < {inner}; ++i) {{ {a} e = {el}; if (e < acc) acc = e; }}"
                    ));
                }
            }
            "acc".to_string()
        };
        let dst = if op.is_row() {
            format!("{n}[o * {n}_ld]")
        } else {
            format!("{n}[o]")
        };
        self.line(&format!("{dst} = {};", store(acc, &result)));
        self.indent -= 1;
        self.line("}");
    }

    fn matmul(&mut self, res: ValueId, a: ValueId, b: ValueId, acc: Option<ValueId>) {
        let n = vname(res);
        let (an, bn) = (vname(a), vname(b));
        let ad = self.ty(a).dtype();
        let rd = ad.accumulator();
        let f = ct(rd);
        self.line(&format!("{n}_r = {an}_r; {n}_c = {bn}_c;"));
        if let Some(c) = acc {
            let cn = vname(c);
            self.line(&format!(
                "{n}_r = wsp_min32({n}_r, {cn}_r); {n}_c = wsp_min32({n}_c, {cn}_c);"
            ));
        }
        self.line("{");
        self.indent += 1;
        self.line(&format!("const int32_t kk = wsp_min32({an}_c, {bn}_r);"));
        self.line(&format!(
            "for (int32_t i = 0; i < {n}_r; ++i) for (int32_t j = 0; j < {n}_c; ++j) {{"
        ));
        self.indent += 1;
        match acc {
            Some(c) => {
                let cn = vname(c);
                self.line(&format!("{f} s = ({f}){cn}[i * {cn}_ld + j];"));
            }
            None => self.line(&format!("{f} s = ({f})0;")),
        }
        self.line(&format!(
            "for (int32_t k = 0; k < kk; ++k) s = std::fma(({f}){}, ({f}){}, s);",
            load(ad, &format!("{an}[i * {an}_ld + k]")),
            load(ad, &format!("{bn}[k * {bn}_ld + j]"))
        ));
        self.line(&format!("{n}[i * {n}_ld + j] = {};", store(rd, "s")));
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
    }
}

fn binary_expr(op: BinaryOp, d: DType, a: &str, b: &str, kname: &str) -> String {
    if d.is_float() {
        match op {
            BinaryOp::Add => format!("({a} + {b})"),
            BinaryOp::Sub => format!("({a} - {b})"),
            BinaryOp::Mul => format!("({a} * {b})"),
            BinaryOp::Div => format!("({a} / {b})"),
            BinaryOp::Rem => format!("wsp_fmod({a}, {b})"),
            BinaryOp::Max => format!("wsp_maximum({a}, {b})"),
            BinaryOp::Min => format!("wsp_minimum({a}, {b})"),
            BinaryOp::Pow => format!("wsp_pow({a}, {b})"),
            BinaryOp::And | BinaryOp::Or => "0".into(),
        }
    } else if d.is_bool() {
        match op {
            BinaryOp::And => format!("({a} && {b})"),
            _ => format!("({a} || {b})"),
        }
    } else {
        let t = st(d);
        match op {
            BinaryOp::Add => format!("wsp_add<{t}>({a}, {b})"),
            BinaryOp::Sub => format!("wsp_sub<{t}>({a}, {b})"),
            BinaryOp::Mul => format!("wsp_mul<{t}>({a}, {b})"),
            BinaryOp::Div => format!("wsp_div<{t}>({kname}, {a}, {b})"),
            BinaryOp::Rem => format!("wsp_rem<{t}>({kname}, {a}, {b})"),
            BinaryOp::Max => format!("(({a}) > ({b}) ? ({a}) : ({b}))"),
            BinaryOp::Min => format!("(({a}) < ({b}) ? ({a}) : ({b}))"),
            _ => "0".into(),
        }
    }
}

fn unary_expr(op: UnaryOp, d: DType, x: &str) -> String {
    let f = ct(d);
    if d.is_float() {
        let one = format!("({f})1");
        match op {
            UnaryOp::Exp => format!("wsp_exp({x})"),
            UnaryOp::Log => format!("wsp_log({x})"),
            UnaryOp::Sqrt => format!("wsp_sqrt({x})"),
            UnaryOp::Rsqrt => format!("({one} / wsp_sqrt({x}))"),
            UnaryOp::Recip => format!("({one} / {x})"),
            UnaryOp::Tanh => format!("wsp_tanh({x})"),
            UnaryOp::Sigmoid => format!("({one} / ({one} + wsp_exp(-({x}))))"),
            UnaryOp::Sin => format!("wsp_sin({x})"),
            UnaryOp::Cos => format!("wsp_cos({x})"),
            UnaryOp::Relu => format!("wsp_maximum({x}, ({f})0)"),
            UnaryOp::Gelu => format!(
                "((({f})0.5 * {x}) * ({one} + wsp_tanh(({f})0.7978845608028654 * ({x} + ((({f})0.044715 * {x}) * {x}) * {x}))))"
            ),
            UnaryOp::Silu => format!("({x} * ({one} / ({one} + wsp_exp(-({x})))))"),
            UnaryOp::Abs => format!("wsp_fabs({x})"),
            UnaryOp::Neg => format!("(-({x}))"),
            UnaryOp::Not => "0".into(),
        }
    } else if d.is_bool() {
        format!("(!({x}))")
    } else {
        match op {
            UnaryOp::Neg => format!("wsp_sub<{f}>(({f})0, {x})"),
            UnaryOp::Abs if d.is_signed_int() => {
                format!("(({x}) < 0 ? wsp_sub<{f}>(({f})0, {x}) : ({x}))")
            }
            UnaryOp::Abs => x.to_string(),
            UnaryOp::Relu => format!("(({x}) > 0 ? ({x}) : ({f})0)"),
            _ => "0".into(),
        }
    }
}

/// Converts `x` (a compute-type expression of dtype `from`; storage for ints and bools) to the
/// *storage* value of dtype `to`, with the `cast` rules.
fn cast_expr(from: DType, to: DType, x_storage: &str) -> String {
    let x = load(from, x_storage);
    if to.is_bool() {
        return format!("(uint8_t)(({x}) != 0 ? 1 : 0)");
    }
    if from.is_bool() {
        return store(to, &format!("(({x}) ? 1 : 0)"));
    }
    if to.is_float() {
        if from.is_float() {
            let v = format!("(double)({x})");
            return match to {
                DType::F64 => v,
                DType::F32 => format!("(float){v}"),
                DType::F16 => format!("wsp_d2h({v})"),
                _ => format!("wsp_d2b({v})"),
            };
        }
        // int -> float
        let wide = if from.is_signed_int() {
            format!("(int64_t)({x})")
        } else {
            format!("(uint64_t)({x})")
        };
        return match to {
            DType::F64 => format!("(double){wide}"),
            DType::F32 => format!("(float){wide}"),
            DType::F16 => format!("wsp_f2h(wsp_i2f_odd({wide}))"),
            _ => format!("wsp_f2b(wsp_i2f_odd({wide}))"),
        };
    }
    // to int
    let t = st(to);
    if from.is_float() {
        format!("wsp_f2i<{t}>((double)({x}))")
    } else {
        format!("({t})(uint64_t)({x})")
    }
}

/// The C++ source of kernel `k` (`kernels/NAME.cc`).
pub fn kernel_source(k: &Kernel, io: &KernelIo) -> String {
    let mut g = Gen {
        k,
        out: String::new(),
        indent: 0,
        kname: format!("{:?}", k.name),
    };
    let _ = writeln!(
        g.out,
        "// Kernel `{}` for an AIE-ML core (wsp emit --target aie). See kernels/wsp_aie.h.",
        k.name
    );
    g.out.push_str("#include \"wsp_aie.h\"\n\n");
    let _ = writeln!(g.out, "extern \"C\" void {}", entry_signature(k, io));
    g.out.push_str("{\n");
    g.indent = 1;
    // Parameter pointers into the packed buffers.
    if !io.reads.is_empty() {
        g.line("size_t in_off = 0;");
    }
    if !io.writes.is_empty() {
        g.line("size_t out_off = 0;");
    }
    for (id, dir, tile, _) in k.tile_params() {
        let i = id.index();
        let pn = format!("p{i}");
        let s = st(tile.dtype);
        let bytes = format!("(size_t){pn}_vr * (size_t){pn}_vc * sizeof({s})");
        if io.reads.contains(&i) {
            g.line(&format!("{s}* {pn}_in = ({s}*)(in + in_off);"));
            g.line(&format!("in_off += ({bytes} + 3) & ~(size_t)3;"));
        }
        if io.writes.contains(&i) {
            g.line(&format!("{s}* {pn} = ({s}*)(out + out_off);"));
            g.line(&format!("out_off += ({bytes} + 3) & ~(size_t)3;"));
            if io.reads.contains(&i) {
                g.line(&format!("std::memcpy({pn}, {pn}_in, {bytes});"));
            }
        } else {
            g.line(&format!("{s}* {pn} = {pn}_in;"));
        }
        let _ = dir;
    }
    // Values, variables and pipes.
    let body = k.body.as_deref().unwrap_or(&[]);
    let mut decls: Vec<String> = Vec::new();
    let mut owned = vec![false; k.values.len()];
    for_each_op(body, &mut |results, op| {
        if owns_buffer(k, op) {
            for r in results {
                if let Some(o) = owned.get_mut(r.index()) {
                    *o = true;
                }
            }
        }
    });
    for (i, v) in k.values.iter().enumerate() {
        let n = format!("v{i}");
        match v.ty {
            Type::Scalar { dtype } => decls.push(format!("{} {n} = 0;", st(dtype))),
            Type::Tile(t) => {
                let s = st(t.dtype);
                if owned[i] {
                    decls.push(format!("static {s} {n}_buf[{}];", t.len().max(1)));
                    decls.push(format!(
                        "{s}* {n} = {n}_buf; int32_t {n}_ld = {}; int32_t {n}_r = 0, {n}_c = 0;",
                        t.cols()
                    ));
                } else {
                    decls.push(format!(
                        "{s}* {n} = nullptr; int32_t {n}_ld = {}; int32_t {n}_r = 0, {n}_c = 0;",
                        t.cols()
                    ));
                }
            }
        }
    }
    for (i, v) in k.vars.iter().enumerate() {
        let n = format!("w{i}");
        match v.ty {
            Type::Scalar { dtype } => decls.push(format!("{} {n} = 0;", st(dtype))),
            Type::Tile(t) => {
                decls.push(format!("static {} {n}[{}];", st(t.dtype), t.len().max(1)));
                decls.push(format!(
                    "int32_t {n}_r = {}, {n}_c = {};",
                    t.rows(),
                    t.cols()
                ));
            }
        }
    }
    for (i, (p, cap)) in k.pipes.iter().zip(push_counts(k)).enumerate() {
        let q = format!("q{i}");
        let cap = cap.max(1);
        decls.push(format!(
            "static {} {q}[{}];",
            st(p.elem.dtype),
            cap * p.elem.len().max(1) as u64
        ));
        decls.push(format!("static int32_t {q}_vr[{cap}], {q}_vc[{cap}];"));
        decls.push(format!(
            "const int32_t {q}_cap = {cap}; const size_t {q}_elems = {}; int32_t {q}_head = 0, {q}_tail = 0;",
            p.elem.len()
        ));
    }
    for d in decls {
        g.line(&d);
    }
    g.block(body);
    // Silence unused-variable warnings for values only some paths use.
    g.out.push_str("}\n");
    g.out
}

/// `wsp_NAME(uint8_t* in, uint8_t* out, int32_t p0_vr, ...)` with the parameter list.
pub fn entry_signature(k: &Kernel, io: &KernelIo) -> String {
    let mut args: Vec<String> = Vec::new();
    if !io.reads.is_empty() {
        args.push("uint8_t* in".into());
    }
    if !io.writes.is_empty() {
        args.push("uint8_t* out".into());
    }
    for (id, _, _, _) in k.tile_params() {
        args.push(format!("int32_t p{0}_vr, int32_t p{0}_vc", id.0));
    }
    for (i, p) in k.params.iter().enumerate() {
        if let ParamKind::Scalar { dtype, .. } = p.kind {
            args.push(format!("{} p{i}", st(dtype)));
        }
    }
    format!("{}({})", entry_name(k), args.join(", "))
}

/// The entry's symbol.
pub fn entry_name(k: &Kernel) -> String {
    format!("wsp_{}", sanitize(&k.name))
}

/// A C identifier from a wsp name.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsp_ir::dtype::ScalarValue;

    #[test]
    fn literals_are_the_exact_storage_bits() {
        assert_eq!(
            literal(ScalarValue::Float(1.5), DType::F32),
            "wsp_bits_f32(0x3fc00000u)"
        );
        assert_eq!(
            literal(ScalarValue::Float(1.0), DType::F16),
            "(uint16_t)(uint64_t)0x3c00ull"
        );
        assert_eq!(
            literal(ScalarValue::Float(1.0), DType::Bf16),
            "(uint16_t)(uint64_t)0x3f80ull"
        );
        assert_eq!(
            literal(ScalarValue::Float(f64::NEG_INFINITY), DType::F64),
            "wsp_bits_f64(0xfff0000000000000ull)"
        );
        assert_eq!(
            literal(ScalarValue::Int(-1), DType::I8),
            "(int8_t)(uint64_t)0xffull"
        );
        assert_eq!(literal(ScalarValue::Bool(true), DType::Bool), "(uint8_t)1");
    }

    #[test]
    fn casts_follow_the_contract() {
        // float -> int saturates through the helper; int -> half rounds to odd first.
        assert_eq!(
            cast_expr(DType::F32, DType::I32, "x"),
            "wsp_f2i<int32_t>((double)(x))"
        );
        assert_eq!(
            cast_expr(DType::I32, DType::F16, "x"),
            "wsp_f2h(wsp_i2f_odd((int64_t)(x)))"
        );
        assert_eq!(
            cast_expr(DType::F16, DType::Bool, "x"),
            "(uint8_t)((wsp_h2f(x)) != 0 ? 1 : 0)"
        );
        assert_eq!(
            cast_expr(DType::I64, DType::U8, "x"),
            "(uint8_t)(uint64_t)(x)"
        );
    }
}
