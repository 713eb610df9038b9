//! Lowering of one kernel to Cranelift IR.
//!
//! Elementwise values are *lazy*: they have no buffer; every consumer (a store, a reduction,
//! a matmul operand copy, a variable assignment) evaluates the whole elementwise DAG below it
//! per element in one fused loop, 4 lanes at a time with a scalar tail. Buffers (in the
//! scratch frame) exist only for values that are read many times or must be snapshots:
//! reduction, matmul, transpose and `rowtopk` results, matmul and `rowtopk` operands,
//! variables and their reads, popped pipe slots (copied out of the pipe's ring), integer
//! divisions (so that a division by zero is found over the operation's whole extent, as the
//! interpreter does), and loads of `inout` parameters that the kernel also stores to.
//!
//! Pipes: sections run one after another in the interpreter's order; a pipe's queue is a ring
//! of slots in the scratch frame ([`crate::abi::PipeLayout`], sized statically by
//! [`crate::pipes::max_queued`]); `tpush` copies the slot variable into the ring and marks the
//! variable empty (valid rows −1), `tpop` copies the oldest slot out; every misuse the
//! interpreter reports (empty pipe, unreserved slot, `tfree` without `tpop`, reading an empty
//! slot) is a run-time check with the interpreter's message.
//!
//! Registers hold every element in its compute form ([`Kind`]): f32, f16 and bf16 as f32
//! (`F32X4`; f16/bf16 values are exact in f32, and each f16/bf16 operation rounds its f32
//! result to the dtype with ties to even, as the interpreter does), i32 as `I32X4`, bool as
//! an `I32X4` lane mask (one lane: an `i8` 0/1), i64 scalars as `i64`. Parameter tiles keep
//! their dtype's real bit layout in memory ([`Elem`]); scratch buffers hold compute forms.

use crate::abi::{Layout, ParamSlot, PipeLayout};
use crate::JitError;
use cranelift::codegen::ir::{BlockArg, Endianness, FuncRef, InstructionData, Opcode, ValueDef};
use cranelift::prelude::*;
use std::collections::HashMap;
use wsp_ir::interp::exec_order;
use wsp_ir::kernel::{
    BinaryOp, CmpOp, KIndex, Kernel, Op, ParamKind, PipeId, ReduceOp, Region, Stmt, TileType,
    Type as IrType, UnaryOp, ValueId, VarId,
};
use wsp_ir::tensor::El;
use wsp_ir::DType;

/// The compute form of a dtype in registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// f32, f16, bf16: `F32` / `F32X4`.
    F,
    /// i32: `I32` / `I32X4`.
    I32,
    /// i64 (scalars only): `I64`.
    I64,
    /// bool: `I8` 0/1 / `I32X4` lane mask.
    Bool,
}

impl Kind {
    pub(crate) fn of(d: DType) -> Option<Kind> {
        match d {
            DType::F32 | DType::F16 | DType::Bf16 => Some(Kind::F),
            DType::I32 => Some(Kind::I32),
            DType::I64 => Some(Kind::I64),
            DType::Bool => Some(Kind::Bool),
            _ => None,
        }
    }
    fn scalar(self) -> Type {
        match self {
            Kind::F => types::F32,
            Kind::I32 => types::I32,
            Kind::I64 => types::I64,
            Kind::Bool => types::I8,
        }
    }
    fn vector(self) -> Type {
        match self {
            Kind::F => types::F32X4,
            Kind::I32 | Kind::Bool => types::I32X4,
            Kind::I64 => types::I64X2,
        }
    }
}

/// How the elements of a buffer are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    F32,
    /// IEEE binary16 bits.
    F16,
    /// bfloat16 bits (the top half of an f32).
    Bf16,
    I32,
    /// One byte 0/1 (bool parameters).
    Bool8,
    /// An i32 lane mask, 0 or −1 (bool scratch buffers).
    Mask32,
}

impl Elem {
    /// The storage of a parameter tile of `d` (its real bit layout).
    pub(crate) fn param(d: DType) -> Option<Elem> {
        match d {
            DType::F32 => Some(Elem::F32),
            DType::F16 => Some(Elem::F16),
            DType::Bf16 => Some(Elem::Bf16),
            DType::I32 => Some(Elem::I32),
            DType::Bool => Some(Elem::Bool8),
            _ => None,
        }
    }
    /// The storage of a scratch buffer of `d` (its compute form).
    fn scratch(d: DType) -> Option<Elem> {
        match Kind::of(d)? {
            Kind::F => Some(Elem::F32),
            Kind::I32 => Some(Elem::I32),
            Kind::Bool => Some(Elem::Mask32),
            Kind::I64 => None,
        }
    }
    /// log2 of the element size in bytes.
    fn shift(self) -> i64 {
        match self {
            Elem::Bool8 => 0,
            Elem::F16 | Elem::Bf16 => 1,
            Elem::F32 | Elem::I32 | Elem::Mask32 => 2,
        }
    }
}

/// A tile held in memory: elements at `ptr + size·(r·stride + c)`.
#[derive(Clone, Copy)]
pub(crate) struct Buf {
    ptr: Value,
    stride: Value,
    elem: Elem,
}

#[derive(Clone, Copy)]
enum Slot {
    /// Not defined yet.
    Undef,
    /// A scalar SSA value in its compute form.
    Scalar(Value),
    /// An elementwise tile evaluated on demand.
    Lazy,
    /// A tile in memory.
    Buf(Buf),
}

/// Where an element is evaluated: row `r`, column `c`, one lane or four.
#[derive(Clone, Copy)]
struct Pos {
    r: Value,
    c: Value,
    vec: bool,
}

/// The helper functions imported into the function being built.
pub(crate) struct Helpers {
    pub exp: FuncRef,
    pub log: FuncRef,
    pub tanh: FuncRef,
    pub sin: FuncRef,
    pub cos: FuncRef,
    pub pow: FuncRef,
    pub fmod: FuncRef,
    /// `(i64) -> f32`: an integer rounded to bf16 (round to nearest even, from the exact
    /// integer).
    pub int_to_bf16: FuncRef,
    /// `(row, n, k, kind, vals, idx)`: `rowtopk` of one row.
    pub rowtopk: FuncRef,
}

pub(crate) struct Lower<'a, 'b> {
    pub k: &'a Kernel,
    pub b: FunctionBuilder<'b>,
    pub h: Helpers,
    pub layout: &'a Layout,
    /// Entry parameters: the argument block and the scratch frame.
    pub args: Value,
    pub scratch: Value,
    /// The block that returns an error code (its block parameter).
    pub fail: Block,
    /// Error messages; code `i + 1` is `errors[i]`.
    pub errors: &'a mut Vec<String>,
    slots: Vec<Slot>,
    /// Valid extent `(rows, cols)` of each tile value, as i64 values.
    ext: Vec<Option<(Value, Value)>>,
    defs: HashMap<ValueId, &'a Op>,
    /// Values that must live in a buffer.
    needs_buf: Vec<bool>,
    /// Parameter buffers (ptr, stride) and extents, loaded at entry.
    params: Vec<Option<(Buf, Value, Value)>>,
    scalar_params: Vec<Option<Value>>,
    memo: HashMap<(ValueId, Value, Value, bool), Value>,
    /// Variables that are pipe slots (named by a `talloc` or `tpush`): their valid rows are
    /// −1 while they hold no value (before `talloc`, after `tpush`), checked at run time.
    slot_vars: Vec<bool>,
}

type R<T> = Result<T, JitError>;
/// A loop body: `(lowering, induction variable, carried values) -> next carried values`.
type LoopBody<'x, 'a, 'b> = dyn FnMut(&mut Lower<'a, 'b>, Value, &[Value]) -> R<Vec<Value>> + 'x;
/// A reduction step `(builder, accumulator, element) -> accumulator`.
type Combine = fn(&mut FunctionBuilder, Value, Value) -> Value;

fn shape_of(k: &Kernel, v: ValueId) -> R<Option<TileType>> {
    k.value_type(v)
        .map(|t| t.tile())
        .ok_or_else(|| JitError::invalid(k, format!("value %{} does not exist", v.0)))
}

fn fmt_ty(t: IrType) -> String {
    match t {
        IrType::Tile(t) => format!("{}[{}, {}]", t.dtype, t.rows(), t.cols()),
        IrType::Scalar { dtype } => format!("scalar {dtype}"),
    }
}

/// Checks that the JIT supports every type of `k`: tiles of f32, f16, bf16, i32 and bool;
/// scalars of those and i64 (every operation is supported; pipe queues are bounded by
/// [`crate::pipes::max_queued`]).
pub(crate) fn check_supported(k: &Kernel) -> R<()> {
    let tile_ok = |d: DType| Elem::param(d).is_some();
    let scalar_ok = |d: DType| Kind::of(d).is_some();
    let ty_ok = |t: IrType| match t {
        IrType::Tile(t) => tile_ok(t.dtype),
        IrType::Scalar { dtype } => scalar_ok(dtype),
    };
    const WHAT: &str = "only f32, f16, bf16, i32 and bool tiles and those or i64 scalars";
    for (i, v) in k.values.iter().enumerate() {
        if !ty_ok(v.ty) {
            return Err(JitError::unsupported(
                k,
                format!("value %{i} of type {}: {WHAT}", fmt_ty(v.ty)),
            ));
        }
    }
    for v in &k.vars {
        if !ty_ok(v.ty) {
            return Err(JitError::unsupported(
                k,
                format!("variable `{}` of type {}: {WHAT}", v.name, fmt_ty(v.ty)),
            ));
        }
    }
    for p in &k.params {
        let (ok, d) = match p.kind {
            ParamKind::Tile { tile, .. } => (tile_ok(tile.dtype), tile.dtype),
            ParamKind::Scalar { dtype, .. } => (scalar_ok(dtype), dtype),
        };
        if !ok {
            return Err(JitError::unsupported(
                k,
                format!("parameter `{}` of dtype {d}: {WHAT}", p.name),
            ));
        }
    }
    Ok(())
}

fn walk<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::For { body, .. } | Stmt::Section { body, .. } => walk(body, f),
            _ => {}
        }
    }
}

/// Whether `op` is an integer division or remainder (materialised: see the module docs).
pub(crate) fn is_int_divrem(k: &Kernel, op: &Op) -> bool {
    match op {
        Op::Binary {
            op: BinaryOp::Div | BinaryOp::Rem,
            lhs,
            ..
        } => k
            .value_type(*lhs)
            .map(|t| t.dtype().is_int())
            .unwrap_or(false),
        _ => false,
    }
}

/// Little-endian flags for vector bitcasts.
fn le() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

impl<'a, 'b> Lower<'a, 'b> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        k: &'a Kernel,
        b: FunctionBuilder<'b>,
        h: Helpers,
        layout: &'a Layout,
        args: Value,
        scratch: Value,
        fail: Block,
        errors: &'a mut Vec<String>,
    ) -> Self {
        let n = k.values.len();
        Lower {
            k,
            b,
            h,
            layout,
            args,
            scratch,
            fail,
            errors,
            slots: vec![Slot::Undef; n],
            ext: vec![None; n],
            defs: HashMap::new(),
            needs_buf: vec![false; n],
            params: vec![None; k.params.len()],
            scalar_params: vec![None; k.params.len()],
            memo: HashMap::new(),
            slot_vars: vec![false; k.vars.len()],
        }
    }

    fn err(&self, m: String) -> JitError {
        JitError::invalid(self.k, m)
    }

    /// Emits a check: when `ok` is false, return the error `message`.
    fn check(&mut self, ok: Value, message: String) {
        let code = match self.errors.iter().position(|m| *m == message) {
            Some(i) => i + 1,
            None => {
                self.errors.push(message);
                self.errors.len()
            }
        };
        let code = self.b.ins().iconst(types::I32, code as i64);
        let cont = self.b.create_block();
        self.b.ins().brif(ok, cont, &[], self.fail, &[code.into()]);
        self.b.seal_block(cont);
        self.b.switch_to_block(cont);
    }

    fn iconst(&mut self, v: i64) -> Value {
        self.b.ins().iconst(types::I64, v)
    }

    /// The constant an i64 value is, when it is an `iconst`.
    fn cval(&self, v: Value) -> Option<i64> {
        let ValueDef::Result(inst, 0) = self.b.func.dfg.value_def(v) else {
            return None;
        };
        match self.b.func.dfg.insts[inst] {
            InstructionData::UnaryImm {
                opcode: Opcode::Iconst,
                imm,
            } if self.b.func.dfg.value_type(v) == types::I64 => Some(imm.bits()),
            _ => None,
        }
    }

    /// i64 arithmetic on extents and loop bounds, folded when the operands are constants
    /// (extents of non-partial dimensions are): statically empty loops and tails are then
    /// not generated at all.
    fn fold2(
        &mut self,
        a: Value,
        c: Value,
        f: fn(i64, i64) -> i64,
        g: fn(&mut FunctionBuilder<'b>, Value, Value) -> Value,
    ) -> Value {
        match (self.cval(a), self.cval(c)) {
            (Some(x), Some(y)) => self.iconst(f(x, y)),
            _ => g(&mut self.b, a, c),
        }
    }

    fn smin_f(&mut self, a: Value, c: Value) -> Value {
        self.fold2(a, c, i64::min, |b, a, c| b.ins().smin(a, c))
    }

    fn smax_f(&mut self, a: Value, c: Value) -> Value {
        self.fold2(a, c, i64::max, |b, a, c| b.ins().smax(a, c))
    }

    fn isub_f(&mut self, a: Value, c: Value) -> Value {
        self.fold2(a, c, i64::wrapping_sub, |b, a, c| b.ins().isub(a, c))
    }

    fn band_imm_f(&mut self, a: Value, m: i64) -> Value {
        match self.cval(a) {
            Some(x) => self.iconst(x & m),
            None => self.b.ins().band_imm_s(a, m),
        }
    }

    fn iadd_imm_f(&mut self, a: Value, n: i64) -> Value {
        match self.cval(a) {
            Some(x) => self.iconst(x.wrapping_add(n)),
            None => self.b.ins().iadd_imm_s(a, n),
        }
    }

    fn fconst(&mut self, v: f32) -> Value {
        self.b.ins().f32const(v)
    }

    fn vconst(&mut self, v: f32) -> Value {
        let s = self.fconst(v);
        self.b.ins().splat(types::F32X4, s)
    }

    fn num(&mut self, x: f32, vec: bool) -> Value {
        if vec {
            self.vconst(x)
        } else {
            self.fconst(x)
        }
    }

    /// An i32 constant (splat when `vec`).
    fn ci(&mut self, c: i64, vec: bool) -> Value {
        let s = self.b.ins().iconst(types::I32, i64::from(c as u32));
        if vec {
            self.b.ins().splat(types::I32X4, s)
        } else {
            s
        }
    }

    /// A constant of `kind` from an element (splat when `vec`).
    fn kconst(&mut self, kind: Kind, e: El, vec: bool) -> R<Value> {
        Ok(match (kind, e) {
            (Kind::F, El::F(f)) => self.num(f as f32, vec),
            (Kind::I32, El::I(i)) => self.ci(i as i64, vec),
            (Kind::I64, El::I(i)) if !vec => self.iconst(i as i64),
            (Kind::Bool, El::B(x)) if vec => self.ci(-i64::from(x), true),
            (Kind::Bool, El::B(x)) => self.b.ins().iconst(types::I8, i64::from(x)),
            _ => return Err(self.err(format!("constant {e:?} of the wrong kind {kind:?}"))),
        })
    }

    fn as_int(&mut self, x: Value, vec: bool) -> Value {
        let t = if vec { types::I32X4 } else { types::I32 };
        self.b.ins().bitcast(t, le(), x)
    }

    fn as_float(&mut self, x: Value, vec: bool) -> Value {
        let t = if vec { types::F32X4 } else { types::F32 };
        self.b.ins().bitcast(t, le(), x)
    }

    /// `m ? a : c` with a mask (`vec`: a lane mask of `I32X4`; else an `i8`).
    fn sel(&mut self, m: Value, a: Value, c: Value, vec: bool) -> Value {
        if !vec {
            return self.b.ins().select(m, a, c);
        }
        let t = self.b.func.dfg.value_type(a);
        let m = if t == types::I32X4 {
            m
        } else {
            self.b.ins().bitcast(t, le(), m)
        };
        self.b.ins().bitselect(m, a, c)
    }

    fn and_c(&mut self, x: Value, c: i64, vec: bool) -> Value {
        let k = self.ci(c, vec);
        self.b.ins().band(x, k)
    }

    fn or_c(&mut self, x: Value, c: i64, vec: bool) -> Value {
        let k = self.ci(c, vec);
        self.b.ins().bor(x, k)
    }

    fn add_c(&mut self, x: Value, c: i64, vec: bool) -> Value {
        let k = self.ci(c, vec);
        self.b.ins().iadd(x, k)
    }

    fn ushr_c(&mut self, x: Value, n: i64) -> Value {
        let k = self.b.ins().iconst(types::I32, n);
        self.b.ins().ushr(x, k)
    }

    fn shl_c(&mut self, x: Value, n: i64) -> Value {
        let k = self.b.ins().iconst(types::I32, n);
        self.b.ins().ishl(x, k)
    }

    /// Signed compare of i32 lanes with a constant: a mask.
    fn cmp_c(&mut self, cc: IntCC, x: Value, c: i64, vec: bool) -> Value {
        let k = self.ci(c, vec);
        self.b.ins().icmp(cc, x, k)
    }

    // ----- f16 / bf16 ------------------------------------------------------------------

    /// An f32 rounded to the nearest f16 (ties to even), as f32: `f16::from_f32(x).to_f32()`.
    fn q16(&mut self, x: Value, vec: bool) -> Value {
        let bits = self.as_int(x, vec);
        let sign = self.and_c(bits, 0x8000_0000, vec);
        let a = self.and_c(bits, 0x7FFF_FFFF, vec);
        // Normal results: round the significand to 10 bits; at or above 65520 → inf.
        let t = self.ushr_c(a, 13);
        let odd = self.and_c(t, 1, vec);
        let n = self.add_c(a, 0xFFF, vec);
        let n = self.b.ins().iadd(n, odd);
        let n = self.and_c(n, !0x1FFF, vec);
        let ovf = self.cmp_c(IntCC::SignedGreaterThanOrEqual, n, 0x4780_0000, vec);
        let inf = self.ci(0x7F80_0000, vec);
        let n = self.sel(ovf, inf, n, vec);
        // Subnormal results (|x| < 2^-14): round to a multiple of 2^-24 by adding 0.5.
        let af = self.as_float(a, vec);
        let half = self.num(0.5, vec);
        let s = self.b.ins().fadd(af, half);
        let s = self.b.ins().fsub(s, half);
        let s = self.as_int(s, vec);
        let sub = self.cmp_c(IntCC::SignedLessThan, a, 0x3880_0000, vec);
        let r = self.sel(sub, s, n, vec);
        let nan = self.cmp_c(IntCC::SignedGreaterThan, a, 0x7F80_0000, vec);
        let r = self.sel(nan, a, r, vec);
        let r = self.b.ins().bor(r, sign);
        self.as_float(r, vec)
    }

    /// The f32 bits of an f32 rounded to the nearest bf16 (ties to even; NaN stays a quiet
    /// NaN), low 16 bits zero: `bf16::from_f32(x).to_f32()`.
    fn qbf_bits(&mut self, x: Value, vec: bool) -> Value {
        let b = self.as_int(x, vec);
        let t = self.ushr_c(b, 16);
        let odd = self.and_c(t, 1, vec);
        let r = self.add_c(b, 0x7FFF, vec);
        let r = self.b.ins().iadd(r, odd);
        let r = self.and_c(r, 0xFFFF_0000, vec);
        let a = self.and_c(b, 0x7FFF_FFFF, vec);
        let nan = self.cmp_c(IntCC::SignedGreaterThan, a, 0x7F80_0000, vec);
        let q = self.or_c(b, 0x0040_0000, vec);
        let q = self.and_c(q, 0xFFFF_0000, vec);
        self.sel(nan, q, r, vec)
    }

    fn qbf(&mut self, x: Value, vec: bool) -> Value {
        let r = self.qbf_bits(x, vec);
        self.as_float(r, vec)
    }

    /// Rounds an f32 compute value to `d` (f16 or bf16; f32 unchanged).
    fn round_to(&mut self, x: Value, d: DType, vec: bool) -> Value {
        match d {
            DType::F16 => self.q16(x, vec),
            DType::Bf16 => self.qbf(x, vec),
            _ => x,
        }
    }

    /// The f16 bits (in an i32 lane) of an f32, rounded to nearest even (`f16::from_f32`).
    fn f2h(&mut self, x: Value, vec: bool) -> Value {
        let b = self.as_int(x, vec);
        let s = self.and_c(b, 0x8000_0000, vec);
        let sign = self.ushr_c(s, 16);
        let a = self.and_c(b, 0x7FFF_FFFF, vec);
        // Normal: rebias the exponent, round the significand to 10 bits.
        let t = self.ushr_c(a, 13);
        let odd = self.and_c(t, 1, vec);
        let n = self.add_c(a, 0xC800_0FFF, vec);
        let n = self.b.ins().iadd(n, odd);
        let n = self.ushr_c(n, 13);
        // Subnormal: the multiple of 2^-24 by adding 0.5.
        let af = self.as_float(a, vec);
        let half = self.num(0.5, vec);
        let sf = self.b.ins().fadd(af, half);
        let si = self.as_int(sf, vec);
        let si = self.add_c(si, -0x3F00_0000, vec);
        let sub = self.cmp_c(IntCC::SignedLessThan, a, 0x3880_0000, vec);
        let r = self.sel(sub, si, n, vec);
        // ≥ 65536 (after rounding: inf), inf and NaN.
        let nm = self.and_c(t, 0x3FF, vec);
        let nanb = self.or_c(nm, 0x7E00, vec);
        let infb = self.ci(0x7C00, vec);
        let nan = self.cmp_c(IntCC::SignedGreaterThan, a, 0x7F80_0000, vec);
        let special = self.sel(nan, nanb, infb, vec);
        let big = self.cmp_c(IntCC::SignedGreaterThanOrEqual, a, 0x4780_0000, vec);
        let r = self.sel(big, special, r, vec);
        self.b.ins().bor(r, sign)
    }

    /// The f32 value of f16 bits (zero-extended in an i32 lane); exact.
    fn h2f(&mut self, h: Value, vec: bool) -> Value {
        let s = self.and_c(h, 0x8000, vec);
        let sign = self.shl_c(s, 16);
        let em = self.and_c(h, 0x7FFF, vec);
        let bits = self.shl_c(em, 13);
        // Normal and subnormal: the exponent rebias is a multiplication by 2^112 (exact).
        let f = self.as_float(bits, vec);
        let scale = self.num(f32::from_bits(0x7780_0000), vec);
        let f = self.b.ins().fmul(f, scale);
        let fi = self.as_int(f, vec);
        let sp = self.or_c(bits, 0x7F80_0000, vec);
        let infnan = self.cmp_c(IntCC::SignedGreaterThan, em, 0x7BFF, vec);
        let r = self.sel(infnan, sp, fi, vec);
        let r = self.b.ins().bor(r, sign);
        self.as_float(r, vec)
    }

    // ----- entry -----------------------------------------------------------------------

    fn load_arg(&mut self, ty: Type, slot: usize) -> Value {
        self.b.ins().load(ty, mf(), self.args, (slot * 8) as i32)
    }

    /// Loads parameters and checks their extents (the bounds checks at entry).
    pub fn entry(&mut self, body: &'a [Stmt]) -> R<()> {
        // Definitions and which values need buffers.
        let mut stored = vec![false; self.k.params.len()];
        let mut defs = HashMap::new();
        let mut needs = Vec::new();
        let mut slot_vars = Vec::new();
        let k = self.k;
        walk(body, &mut |s| match s {
            Stmt::Op { results, op } => {
                for r in results {
                    defs.insert(*r, op);
                }
                match op {
                    Op::Matmul { a, b, .. } => {
                        needs.push(*a);
                        needs.push(*b);
                    }
                    Op::RowTopK { x, .. } => needs.push(*x),
                    _ if is_int_divrem(k, op) => needs.extend(results.iter().copied()),
                    _ => {}
                }
            }
            Stmt::Store { param, .. } => {
                if let Some(s) = stored.get_mut(param.index()) {
                    *s = true;
                }
            }
            Stmt::TAlloc { slot, .. } | Stmt::TPush { slot, .. } => slot_vars.push(*slot),
            _ => {}
        });
        // Operands read from memory in place: a parameter of f32 or i32 (its layout is its
        // compute form) that the kernel does not store to needs no copy.
        let in_place = |v: ValueId| match defs.get(&v) {
            Some(Op::Param { param }) => {
                let p = k.params.get(param.index());
                let dt = p.and_then(|p| match p.kind {
                    ParamKind::Tile { tile, .. } => Some(tile.dtype),
                    ParamKind::Scalar { .. } => None,
                });
                matches!(dt, Some(DType::F32 | DType::I32))
                    && !stored.get(param.index()).copied().unwrap_or(true)
            }
            _ => false,
        };
        needs.retain(|v| !in_place(*v));
        self.defs = defs;
        for v in needs {
            if let Some(n) = self.needs_buf.get_mut(v.index()) {
                *n = true;
            }
        }
        for (id, op) in self.defs.clone() {
            let buf = match op {
                Op::VarRead { .. } | Op::TPop { .. } => true,
                Op::Param { param } => stored.get(param.index()).copied().unwrap_or(false),
                _ => false,
            };
            if buf && shape_of(self.k, id)?.is_some() {
                if let Some(n) = self.needs_buf.get_mut(id.index()) {
                    *n = true;
                }
            }
        }
        for (i, p) in self.k.params.iter().enumerate() {
            match (&p.kind, self.layout.params.get(i)) {
                (ParamKind::Tile { tile, partial, .. }, Some(ParamSlot::Tile(s))) => {
                    let elem = Elem::param(tile.dtype).ok_or_else(|| {
                        JitError::unsupported(self.k, format!("{} tiles", tile.dtype))
                    })?;
                    let ptr = self.load_arg(types::I64, *s);
                    let stride = self.load_arg(types::I64, s + 1);
                    let vr = self.load_arg(types::I64, s + 2);
                    let vc = self.load_arg(types::I64, s + 3);
                    for (d, v) in [vr, vc].into_iter().enumerate() {
                        let n = i64::from(tile.shape[d]);
                        let cc = if partial[d] {
                            IntCC::UnsignedLessThanOrEqual
                        } else {
                            IntCC::Equal
                        };
                        let ok = self.b.ins().icmp_imm_s(cc, v, n);
                        self.check(
                            ok,
                            format!(
                                "argument `{}`: valid {} outside the tile's static {} {n}{}",
                                p.name,
                                ["rows", "columns"][d],
                                ["rows", "columns"][d],
                                if partial[d] {
                                    ""
                                } else {
                                    " (dimension not partial)"
                                }
                            ),
                        );
                    }
                    // Row stride must cover the valid columns (no overlapping rows).
                    let multi = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, vr, 1);
                    let wide = self
                        .b
                        .ins()
                        .icmp(IntCC::UnsignedGreaterThanOrEqual, stride, vc);
                    let one = self.b.ins().bnot(multi);
                    let ok = self.b.ins().bor(one, wide);
                    self.check(
                        ok,
                        format!(
                            "argument `{}`: row stride smaller than its valid columns",
                            p.name
                        ),
                    );
                    // A dimension that is not partial has its static extent (checked above).
                    let vr = if partial[0] {
                        vr
                    } else {
                        self.iconst(i64::from(tile.shape[0]))
                    };
                    let vc = if partial[1] {
                        vc
                    } else {
                        self.iconst(i64::from(tile.shape[1]))
                    };
                    if let Some(x) = self.params.get_mut(i) {
                        *x = Some((Buf { ptr, stride, elem }, vr, vc));
                    }
                }
                (ParamKind::Scalar { dtype, .. }, Some(ParamSlot::Scalar(s))) => {
                    let kind = Kind::of(*dtype)
                        .ok_or_else(|| JitError::unsupported(self.k, format!("{dtype} scalars")))?;
                    let mut v = self.load_arg(kind.scalar(), *s);
                    if kind == Kind::Bool {
                        v = self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0);
                    }
                    if let Some(x) = self.scalar_params.get_mut(i) {
                        *x = Some(v);
                    }
                }
                _ => return Err(self.err(format!("parameter `{}` has no ABI slot", p.name))),
            }
        }
        // Pipes start empty and slots unreserved.
        for v in slot_vars {
            if let Some(x) = self.slot_vars.get_mut(v.index()) {
                *x = true;
            }
            let (_, _, off) = self.var_buf(v)?;
            let m1 = self.iconst(-1);
            self.b.ins().store(mf(), m1, self.scratch, off as i32);
        }
        for p in self.layout.pipes.clone() {
            let z = self.iconst(0);
            for i in 0..3 {
                self.b
                    .ins()
                    .store(mf(), z, self.scratch, (p.state + 8 * i) as i32);
            }
        }
        Ok(())
    }

    // ----- loops -----------------------------------------------------------------------

    /// `for i in (start..end).step_by(step)` carrying `init` values; `body` returns the next
    /// carried values. Returns the final carried values.
    fn for_loop(
        &mut self,
        start: Value,
        end: Value,
        step: i64,
        init: &[Value],
        body: &mut LoopBody<'_, 'a, 'b>,
    ) -> R<Vec<Value>> {
        if let (Some(a), Some(e)) = (self.cval(start), self.cval(end)) {
            if a >= e {
                return Ok(init.to_vec());
            }
        }
        let header = self.b.create_block();
        let lbody = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(header, types::I64);
        for v in init {
            let t = self.b.func.dfg.value_type(*v);
            self.b.append_block_param(header, t);
            self.b.append_block_param(exit, t);
        }
        let mut a: Vec<BlockArg> = vec![start.into()];
        a.extend(init.iter().map(|v| BlockArg::from(*v)));
        self.b.ins().jump(header, &a);
        self.b.switch_to_block(header);
        let ps = self.b.block_params(header).to_vec();
        let i = ps[0];
        let carried = ps[1..].to_vec();
        let go = self.b.ins().icmp(IntCC::SignedLessThan, i, end);
        let ex: Vec<BlockArg> = carried.iter().map(|v| BlockArg::from(*v)).collect();
        self.b.ins().brif(go, lbody, &[], exit, &ex);
        self.b.seal_block(lbody);
        self.b.switch_to_block(lbody);
        let next = body(self, i, &carried)?;
        let i2 = self.b.ins().iadd_imm_s(i, step);
        let mut a: Vec<BlockArg> = vec![i2.into()];
        a.extend(next.iter().map(|v| BlockArg::from(*v)));
        self.b.ins().jump(header, &a);
        self.b.seal_block(header);
        self.b.seal_block(exit);
        self.b.switch_to_block(exit);
        Ok(self.b.block_params(exit).to_vec())
    }

    /// Runs `body(r, c, vec)` over rows `0..rows` and columns `0..cols`: 4 columns at a time,
    /// then a scalar tail.
    fn tile_loop(
        &mut self,
        rows: Value,
        cols: Value,
        body: &mut dyn FnMut(&mut Self, Pos) -> R<()>,
    ) -> R<()> {
        let zero = self.iconst(0);
        let vend = self.band_imm_f(cols, !3i64);
        self.for_loop(zero, rows, 1, &[], &mut |s, r, _| {
            s.for_loop(zero, vend, 4, &[], &mut |s, c, _| {
                s.memo.clear();
                body(s, Pos { r, c, vec: true })?;
                Ok(vec![])
            })?;
            s.for_loop(vend, cols, 1, &[], &mut |s, c, _| {
                s.memo.clear();
                body(s, Pos { r, c, vec: false })?;
                Ok(vec![])
            })?;
            Ok(vec![])
        })?;
        self.memo.clear();
        Ok(())
    }

    // ----- memory ----------------------------------------------------------------------

    fn addr(&mut self, buf: Buf, r: Value, c: Value) -> Value {
        let rs = self.b.ins().imul(r, buf.stride);
        let i = self.b.ins().iadd(rs, c);
        let sh = buf.elem.shift();
        let off = if sh == 0 {
            i
        } else {
            self.b.ins().ishl_imm_s(i, sh)
        };
        self.b.ins().iadd(buf.ptr, off)
    }

    /// Element(s) at `(r, c)` in their compute form.
    fn load(&mut self, buf: Buf, r: Value, c: Value, vec: bool) -> Value {
        let a = self.addr(buf, r, c);
        let f = mf();
        match (buf.elem, vec) {
            (Elem::F32, false) => self.b.ins().load(types::F32, f, a, 0),
            (Elem::F32, true) => self.b.ins().load(types::F32X4, f, a, 0),
            (Elem::I32, false) => self.b.ins().load(types::I32, f, a, 0),
            (Elem::I32 | Elem::Mask32, true) => self.b.ins().load(types::I32X4, f, a, 0),
            (Elem::Mask32, false) => {
                let x = self.b.ins().load(types::I32, f, a, 0);
                self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
            }
            (Elem::F16, false) => {
                let h = self.b.ins().uload16(types::I32, f, a, 0);
                self.h2f(h, false)
            }
            (Elem::F16, true) => {
                let h = self.b.ins().uload16x4(f, a, 0);
                self.h2f(h, true)
            }
            (Elem::Bf16, _) => {
                let h = if vec {
                    self.b.ins().uload16x4(f, a, 0)
                } else {
                    self.b.ins().uload16(types::I32, f, a, 0)
                };
                let bits = self.shl_c(h, 16);
                self.as_float(bits, vec)
            }
            (Elem::Bool8, false) => {
                let x = self.b.ins().load(types::I8, f, a, 0);
                self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
            }
            (Elem::Bool8, true) => {
                let w = self.b.ins().load(types::I32, f, a, 0);
                let v = self.b.ins().scalar_to_vector(types::I32X4, w);
                let v = self.b.ins().bitcast(types::I8X16, le(), v);
                let v = self.b.ins().uwiden_low(v);
                let v = self.b.ins().uwiden_low(v);
                let z = self.ci(0, true);
                self.b.ins().icmp(IntCC::NotEqual, v, z)
            }
        }
    }

    /// Stores `x` (compute form; four lanes when it is a vector) at `(r, c)`.
    fn store_el(&mut self, buf: Buf, r: Value, c: Value, x: Value) {
        let vec = self.b.func.dfg.value_type(x).is_vector();
        let a = self.addr(buf, r, c);
        let f = mf();
        match buf.elem {
            Elem::F32 | Elem::I32 => {
                self.b.ins().store(f, x, a, 0);
            }
            Elem::Mask32 => {
                let x = if vec {
                    x
                } else {
                    let w = self.b.ins().uextend(types::I32, x);
                    self.b.ins().ineg(w)
                };
                self.b.ins().store(f, x, a, 0);
            }
            Elem::F16 | Elem::Bf16 => {
                let bits = if buf.elem == Elem::F16 {
                    self.f2h(x, vec)
                } else {
                    let b = self.qbf_bits(x, vec);
                    self.ushr_c(b, 16)
                };
                if vec {
                    let n = self.b.ins().unarrow(bits, bits);
                    let n = self.b.ins().bitcast(types::I64X2, le(), n);
                    let w = self.b.ins().extractlane(n, 0);
                    self.b.ins().store(f, w, a, 0);
                } else {
                    self.b.ins().istore16(f, bits, a, 0);
                }
            }
            Elem::Bool8 => {
                if vec {
                    let one = self.and_c(x, 1, true);
                    let n = self.b.ins().unarrow(one, one);
                    let n = self.b.ins().unarrow(n, n);
                    let n = self.b.ins().bitcast(types::I32X4, le(), n);
                    let w = self.b.ins().extractlane(n, 0);
                    self.b.ins().store(f, w, a, 0);
                } else {
                    self.b.ins().store(f, x, a, 0);
                }
            }
        }
    }

    /// A scratch buffer of a static tile type.
    fn scratch_buf(&mut self, off: usize, t: TileType) -> R<Buf> {
        let elem = Elem::scratch(t.dtype)
            .ok_or_else(|| JitError::unsupported(self.k, format!("{} tiles", t.dtype)))?;
        let ptr = self.b.ins().iadd_imm_s(self.scratch, off as i64);
        let stride = self.iconst(i64::from(t.cols()));
        Ok(Buf { ptr, stride, elem })
    }

    fn value_buf(&mut self, v: ValueId) -> R<(Buf, TileType)> {
        let t = shape_of(self.k, v)?.ok_or_else(|| self.err(format!("%{} is not a tile", v.0)))?;
        let off = self
            .layout
            .value_offsets
            .get(v.index())
            .copied()
            .flatten()
            .ok_or_else(|| self.err(format!("%{} has no scratch buffer", v.0)))?;
        Ok((self.scratch_buf(off, t)?, t))
    }

    fn extent(&self, v: ValueId) -> R<(Value, Value)> {
        self.ext
            .get(v.index())
            .copied()
            .flatten()
            .ok_or_else(|| self.err(format!("tile %{} used before it is defined", v.0)))
    }

    // ----- elementwise evaluation ------------------------------------------------------

    fn call1(&mut self, f: FuncRef, x: Value, vec: bool) -> Value {
        self.call_lanes(f, &[x], vec)
    }

    /// Calls the f32 helper `f` on one lane, or on each of four lanes.
    fn call_lanes(&mut self, f: FuncRef, xs: &[Value], vec: bool) -> Value {
        if !vec {
            let c = self.b.ins().call(f, xs);
            return self.b.inst_results(c)[0];
        }
        let mut out = self.vconst(0.0);
        for lane in 0..4u8 {
            let ls: Vec<Value> = xs
                .iter()
                .map(|x| self.b.ins().extractlane(*x, lane))
                .collect();
            let c = self.b.ins().call(f, &ls);
            let r = self.b.inst_results(c)[0];
            out = self.b.ins().insertlane(out, r, lane);
        }
        out
    }

    fn dtype(&self, v: ValueId) -> R<DType> {
        self.k
            .value_type(v)
            .map(|t| t.dtype())
            .ok_or_else(|| self.err(format!("value %{} does not exist", v.0)))
    }

    fn kind(&self, v: ValueId) -> R<Kind> {
        let d = self.dtype(v)?;
        Kind::of(d).ok_or_else(|| JitError::unsupported(self.k, format!("{d} values")))
    }

    fn apply_unary(&mut self, op: UnaryOp, x: Value, vec: bool, kind: Kind) -> R<Value> {
        if kind != Kind::F {
            return Ok(match (op, kind) {
                (UnaryOp::Not, Kind::Bool) if vec => self.b.ins().bnot(x),
                (UnaryOp::Not, Kind::Bool) => self.b.ins().bxor_imm_s(x, 1),
                (UnaryOp::Neg, Kind::I32 | Kind::I64) => self.b.ins().ineg(x),
                (UnaryOp::Abs, Kind::I32 | Kind::I64) => self.b.ins().iabs(x),
                (UnaryOp::Relu, Kind::I32 | Kind::I64) => {
                    let z = if kind == Kind::I64 {
                        self.iconst(0)
                    } else {
                        self.ci(0, vec)
                    };
                    self.b.ins().smax(x, z)
                }
                _ => {
                    return Err(JitError::invalid(
                        self.k,
                        format!("`{}` on {kind:?} values", op.name()),
                    ))
                }
            });
        }
        let one = |s: &mut Self| s.num(1.0, vec);
        Ok(match op {
            UnaryOp::Exp => self.call1(self.h.exp, x, vec),
            UnaryOp::Log => self.call1(self.h.log, x, vec),
            UnaryOp::Tanh => self.call1(self.h.tanh, x, vec),
            UnaryOp::Sin => self.call1(self.h.sin, x, vec),
            UnaryOp::Cos => self.call1(self.h.cos, x, vec),
            UnaryOp::Sqrt => self.b.ins().sqrt(x),
            UnaryOp::Rsqrt => {
                let s = self.b.ins().sqrt(x);
                let o = one(self);
                self.b.ins().fdiv(o, s)
            }
            UnaryOp::Recip => {
                let o = one(self);
                self.b.ins().fdiv(o, x)
            }
            UnaryOp::Sigmoid => self.sigmoid(x, vec),
            UnaryOp::Silu => {
                let s = self.sigmoid(x, vec);
                self.b.ins().fmul(x, s)
            }
            UnaryOp::Gelu => {
                let c = self.num(0.797_884_6, vec);
                let k = self.num(0.044715, vec);
                let kx = self.b.ins().fmul(k, x);
                let kxx = self.b.ins().fmul(kx, x);
                let kxxx = self.b.ins().fmul(kxx, x);
                let s = self.b.ins().fadd(x, kxxx);
                let inner = self.b.ins().fmul(c, s);
                let t = self.call1(self.h.tanh, inner, vec);
                let half = self.num(0.5, vec);
                let hx = self.b.ins().fmul(half, x);
                let o = one(self);
                let p = self.b.ins().fadd(o, t);
                self.b.ins().fmul(hx, p)
            }
            UnaryOp::Relu => {
                let z = self.num(0.0, vec);
                self.b.ins().fmax(x, z)
            }
            UnaryOp::Abs => self.b.ins().fabs(x),
            UnaryOp::Neg => self.b.ins().fneg(x),
            UnaryOp::Not => {
                return Err(JitError::invalid(
                    self.k,
                    "`not` of a non-bool value".into(),
                ))
            }
        })
    }

    fn sigmoid(&mut self, x: Value, vec: bool) -> Value {
        let n = self.b.ins().fneg(x);
        let e = self.call1(self.h.exp, n, vec);
        let one = self.num(1.0, vec);
        let d = self.b.ins().fadd(one, e);
        self.b.ins().fdiv(one, d)
    }

    fn apply_binary(&mut self, op: BinaryOp, a: Value, c: Value, vec: bool, d: DType) -> R<Value> {
        let kind = Kind::of(d).ok_or_else(|| JitError::unsupported(self.k, format!("{d}")))?;
        let bad = |s: &Self| JitError::invalid(s.k, format!("`{}` on {d} operands", op.symbol()));
        Ok(match kind {
            Kind::F => match op {
                BinaryOp::Add => self.b.ins().fadd(a, c),
                BinaryOp::Sub => self.b.ins().fsub(a, c),
                BinaryOp::Mul => self.b.ins().fmul(a, c),
                BinaryOp::Div => self.b.ins().fdiv(a, c),
                BinaryOp::Max => self.b.ins().fmax(a, c),
                BinaryOp::Min => self.b.ins().fmin(a, c),
                BinaryOp::Rem => self.call_lanes(self.h.fmod, &[a, c], vec),
                BinaryOp::Pow => self.call_lanes(self.h.pow, &[a, c], vec),
                BinaryOp::And | BinaryOp::Or => return Err(bad(self)),
            },
            Kind::I32 | Kind::I64 => match op {
                BinaryOp::Add => self.b.ins().iadd(a, c),
                BinaryOp::Sub => self.b.ins().isub(a, c),
                BinaryOp::Mul => self.b.ins().imul(a, c),
                BinaryOp::Max => self.b.ins().smax(a, c),
                BinaryOp::Min => self.b.ins().smin(a, c),
                BinaryOp::Div | BinaryOp::Rem => {
                    if !vec {
                        return self.divrem(op, a, c, d);
                    }
                    let mut out = self.ci(0, true);
                    for lane in 0..4u8 {
                        let x = self.b.ins().extractlane(a, lane);
                        let y = self.b.ins().extractlane(c, lane);
                        let r = self.divrem(op, x, y, d)?;
                        out = self.b.ins().insertlane(out, r, lane);
                    }
                    out
                }
                BinaryOp::Pow | BinaryOp::And | BinaryOp::Or => return Err(bad(self)),
            },
            Kind::Bool => match op {
                BinaryOp::And => self.b.ins().band(a, c),
                BinaryOp::Or => self.b.ins().bor(a, c),
                _ => return Err(bad(self)),
            },
        })
    }

    /// Scalar integer `/` or `%`: truncating, wrapping (`MIN / -1 = MIN`, `MIN % -1 = 0`),
    /// an error on a zero divisor.
    fn divrem(&mut self, op: BinaryOp, a: Value, c: Value, d: DType) -> R<Value> {
        let nz = self.b.ins().icmp_imm_s(IntCC::NotEqual, c, 0);
        let what = if op == BinaryOp::Div {
            "division"
        } else {
            "remainder"
        };
        self.check(nz, format!("integer {what} by zero ({d})"));
        let m1 = self.b.ins().icmp_imm_s(IntCC::Equal, c, -1);
        let ty = self.b.func.dfg.value_type(c);
        let one = self.b.ins().iconst(ty, 1);
        let dv = self.b.ins().select(m1, one, c);
        Ok(if op == BinaryOp::Div {
            let q = self.b.ins().sdiv(a, dv);
            let n = self.b.ins().ineg(a);
            self.b.ins().select(m1, n, q)
        } else {
            self.b.ins().srem(a, dv)
        })
    }

    fn apply_cmp(&mut self, op: CmpOp, a: Value, c: Value, kind: Kind) -> Value {
        if kind == Kind::F {
            let cc = match op {
                CmpOp::Eq => FloatCC::Equal,
                CmpOp::Ne => FloatCC::NotEqual,
                CmpOp::Lt => FloatCC::LessThan,
                CmpOp::Le => FloatCC::LessThanOrEqual,
                CmpOp::Gt => FloatCC::GreaterThan,
                CmpOp::Ge => FloatCC::GreaterThanOrEqual,
            };
            return self.b.ins().fcmp(cc, a, c);
        }
        // Bools compare unsigned (false < true as 0 < 1 and 0 < 0xFFFF_FFFF lane masks).
        let signed = kind != Kind::Bool;
        let cc = match (op, signed) {
            (CmpOp::Eq, _) => IntCC::Equal,
            (CmpOp::Ne, _) => IntCC::NotEqual,
            (CmpOp::Lt, true) => IntCC::SignedLessThan,
            (CmpOp::Le, true) => IntCC::SignedLessThanOrEqual,
            (CmpOp::Gt, true) => IntCC::SignedGreaterThan,
            (CmpOp::Ge, true) => IntCC::SignedGreaterThanOrEqual,
            (CmpOp::Lt, false) => IntCC::UnsignedLessThan,
            (CmpOp::Le, false) => IntCC::UnsignedLessThanOrEqual,
            (CmpOp::Gt, false) => IntCC::UnsignedGreaterThan,
            (CmpOp::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
        };
        self.b.ins().icmp(cc, a, c)
    }

    /// `cast` of a compute value from dtype `from` to `to` (the kernel IR's cast rules).
    fn cast(&mut self, x: Value, from: DType, to: DType, vec: bool) -> R<Value> {
        let unsupported = |s: &Self| {
            JitError::unsupported(
                s.k,
                format!(
                    "cast from {from} to {to}{}",
                    if vec { " in a tile" } else { "" }
                ),
            )
        };
        let (Some(fk), Some(tk)) = (Kind::of(from), Kind::of(to)) else {
            return Err(unsupported(self));
        };
        if from == to {
            return Ok(x);
        }
        Ok(match (fk, tk) {
            // f16/bf16 values are exact in f32.
            (Kind::F, Kind::F) => self.round_to(x, to, vec),
            (Kind::F, Kind::I32) if vec => self.b.ins().fcvt_to_sint_sat(types::I32X4, x),
            (Kind::F, Kind::I32 | Kind::I64) => self.b.ins().fcvt_to_sint_sat(tk.scalar(), x),
            (Kind::F, Kind::Bool) => {
                let z = self.num(0.0, vec);
                self.b.ins().fcmp(FloatCC::NotEqual, x, z)
            }
            (Kind::I32 | Kind::I64, Kind::F) if to == DType::Bf16 => {
                // Rounded once from the exact integer (i32 → f32 → bf16 would round twice).
                if !vec {
                    let w = if fk == Kind::I32 {
                        self.b.ins().sextend(types::I64, x)
                    } else {
                        x
                    };
                    let c = self.b.ins().call(self.h.int_to_bf16, &[w]);
                    self.b.inst_results(c)[0]
                } else {
                    let mut out = self.vconst(0.0);
                    for lane in 0..4u8 {
                        let e = self.b.ins().extractlane(x, lane);
                        let w = self.b.ins().sextend(types::I64, e);
                        let c = self.b.ins().call(self.h.int_to_bf16, &[w]);
                        let r = self.b.inst_results(c)[0];
                        out = self.b.ins().insertlane(out, r, lane);
                    }
                    out
                }
            }
            (Kind::I32 | Kind::I64, Kind::F) => {
                // To f16: exact below 2^24, and larger integers round to inf either way.
                let t = if vec { types::F32X4 } else { types::F32 };
                let f = self.b.ins().fcvt_from_sint(t, x);
                self.round_to(f, to, vec)
            }
            (Kind::I32, Kind::I64) if !vec => self.b.ins().sextend(types::I64, x),
            (Kind::I64, Kind::I32) if !vec => self.b.ins().ireduce(types::I32, x),
            (Kind::I32 | Kind::I64, Kind::Bool) => {
                if vec {
                    let z = self.ci(0, true);
                    self.b.ins().icmp(IntCC::NotEqual, x, z)
                } else {
                    self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
                }
            }
            (Kind::Bool, Kind::F) => {
                if vec {
                    let one = self.and_c(x, i64::from(1.0f32.to_bits()), true);
                    self.as_float(one, true)
                } else {
                    let o = self.fconst(1.0);
                    let z = self.fconst(0.0);
                    self.b.ins().select(x, o, z)
                }
            }
            (Kind::Bool, Kind::I32 | Kind::I64) => {
                if vec {
                    self.and_c(x, 1, true)
                } else {
                    self.b.ins().uextend(tk.scalar(), x)
                }
            }
            _ => return Err(unsupported(self)),
        })
    }

    /// Element `pos` of value `v` (broadcasting `[R,1]`, `[1,C]` and scalars).
    fn elem(&mut self, v: ValueId, pos: Pos) -> R<Value> {
        if let Some(x) = self.memo.get(&(v, pos.r, pos.c, pos.vec)) {
            return Ok(*x);
        }
        let x = self.elem_uncached(v, pos)?;
        self.memo.insert((v, pos.r, pos.c, pos.vec), x);
        Ok(x)
    }

    /// One lane in compute form → four equal lanes.
    fn splat(&mut self, x: Value, kind: Kind) -> R<Value> {
        Ok(match kind {
            Kind::F | Kind::I32 => self.b.ins().splat(kind.vector(), x),
            Kind::Bool => {
                let w = self.b.ins().uextend(types::I32, x);
                let m = self.b.ins().ineg(w);
                self.b.ins().splat(types::I32X4, m)
            }
            Kind::I64 => {
                return Err(JitError::unsupported(
                    self.k,
                    "i64 scalars in tile operations".into(),
                ))
            }
        })
    }

    fn elem_uncached(&mut self, v: ValueId, pos: Pos) -> R<Value> {
        let slot = *self
            .slots
            .get(v.index())
            .ok_or_else(|| self.err(format!("value %{} does not exist", v.0)))?;
        let t = shape_of(self.k, v)?;
        let kind = self.kind(v)?;
        // Broadcast the position into v's shape.
        let (r, c, col_bcast) = match t {
            Some(t) => {
                let r = if t.rows() == 1 { self.iconst(0) } else { pos.r };
                let (c, cb) = if t.cols() == 1 {
                    (self.iconst(0), true)
                } else {
                    (pos.c, false)
                };
                (r, c, cb)
            }
            None => (pos.r, pos.c, true),
        };
        let p = Pos {
            r,
            c,
            vec: pos.vec && !col_bcast,
        };
        let x = match slot {
            Slot::Undef => {
                return Err(self.err(format!("value %{} used before it is defined", v.0)))
            }
            Slot::Scalar(x) => x,
            Slot::Buf(b) => self.load(b, p.r, p.c, p.vec),
            Slot::Lazy => {
                let op = *self
                    .defs
                    .get(&v)
                    .ok_or_else(|| self.err(format!("value %{} has no definition", v.0)))?;
                self.eval_op(v, op, p)?
            }
        };
        if pos.vec && !p.vec {
            return self.splat(x, kind);
        }
        Ok(x)
    }

    /// Evaluates an elementwise op at `p` (`p` already broadcast into the op's shape).
    fn eval_op(&mut self, v: ValueId, op: &Op, p: Pos) -> R<Value> {
        let d = self.dtype(v)?;
        match op {
            Op::Binary { op, lhs, rhs } => {
                let a = self.elem(*lhs, p)?;
                let c = self.elem(*rhs, p)?;
                let x = self.apply_binary(*op, a, c, p.vec, d)?;
                Ok(self.round_to(x, d, p.vec))
            }
            Op::Cmp { op, lhs, rhs } => {
                let kind = self.kind(*lhs)?;
                let a = self.elem(*lhs, p)?;
                let c = self.elem(*rhs, p)?;
                Ok(self.apply_cmp(*op, a, c, kind))
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                let m = self.elem(*cond, p)?;
                let a = self.elem(*on_true, p)?;
                let c = self.elem(*on_false, p)?;
                Ok(self.sel(m, a, c, p.vec))
            }
            Op::Unary { op, x } => {
                let kind = self.kind(*x)?;
                let a = self.elem(*x, p)?;
                let y = self.apply_unary(*op, a, p.vec, kind)?;
                Ok(self.round_to(y, d, p.vec))
            }
            Op::Full { value, .. } => self.elem(*value, p),
            Op::Cast { x, dtype } => {
                let from = self.dtype(*x)?;
                let a = self.elem(*x, p)?;
                self.cast(a, from, *dtype, p.vec)
            }
            Op::Iota { shape, dtype } => {
                let cols = self.iconst(i64::from(shape[1]));
                let rc = self.b.ins().imul(p.r, cols);
                let i = self.b.ins().iadd(rc, p.c);
                if p.vec {
                    let i32v = self.b.ins().ireduce(types::I32, i);
                    let s = self.b.ins().splat(types::I32X4, i32v);
                    let lanes = self.lane_ids();
                    let s = self.b.ins().iadd(s, lanes);
                    self.cast(s, DType::I32, *dtype, true)
                } else {
                    self.cast(i, DType::I64, *dtype, false)
                }
            }
            Op::Slice { x, region } => {
                let (r0, c0) = self.region_start(region)?;
                let r = self.b.ins().iadd(p.r, r0);
                let c = self.b.ins().iadd(p.c, c0);
                self.elem(*x, Pos { r, c, vec: p.vec })
            }
            _ => Err(self.err(format!("value %{} is not elementwise", v.0))),
        }
    }

    fn lane_ids(&mut self) -> Value {
        let mut v = self.b.ins().iconst(types::I32, 0);
        v = self.b.ins().splat(types::I32X4, v);
        for lane in 1..4u8 {
            let x = self.b.ins().iconst(types::I32, i64::from(lane));
            v = self.b.ins().insertlane(v, x, lane);
        }
        v
    }

    fn kindex(&mut self, ix: &KIndex) -> R<Value> {
        let mut acc = self.iconst(ix.constant);
        for (v, coeff) in &ix.terms {
            let x = match self.slots.get(v.index()) {
                Some(Slot::Scalar(x)) => *x,
                _ => {
                    return Err(self.err(format!(
                        "index term %{} is not a defined integer scalar",
                        v.0
                    )))
                }
            };
            let x = match self.b.func.dfg.value_type(x) {
                types::I64 => x,
                types::I32 => self.b.ins().sextend(types::I64, x),
                _ => return Err(self.err(format!("index term %{} is not an integer", v.0))),
            };
            let m = self.b.ins().imul_imm_s(x, *coeff);
            acc = self.b.ins().iadd(acc, m);
        }
        Ok(acc)
    }

    fn region_start(&mut self, region: &Region) -> R<(Value, Value)> {
        let r0 = self.kindex(&region.row_start)?;
        let c0 = self.kindex(&region.col_start)?;
        Ok((r0, c0))
    }

    /// Bounds check of a region against a static shape; `what` names the view.
    fn check_region(&mut self, r0: Value, c0: Value, region: &Region, shape: [u32; 2], what: &str) {
        for (d, (s, n)) in [(r0, region.rows), (c0, region.cols)]
            .into_iter()
            .enumerate()
        {
            let lo = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, s, 0);
            let end = self.b.ins().iadd_imm_s(s, i64::from(n));
            let hi =
                self.b
                    .ins()
                    .icmp_imm_s(IntCC::SignedLessThanOrEqual, end, i64::from(shape[d]));
            let ok = self.b.ins().band(lo, hi);
            self.check(
                ok,
                format!(
                    "{} range of {what} (length {n}) is outside its static shape [{}, {}]",
                    ["row", "column"][d],
                    shape[0],
                    shape[1]
                ),
            );
        }
    }

    // ----- statements ------------------------------------------------------------------

    /// Lowers a block; runs of adjacent pipe sections in the interpreter's order (producers
    /// of a pipe before its consumers, see [`exec_order`]).
    pub fn block(&mut self, stmts: &'a [Stmt]) -> R<()> {
        for s in exec_order(stmts) {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn set_slot(&mut self, v: ValueId, s: Slot) -> R<()> {
        match self.slots.get_mut(v.index()) {
            Some(x) => {
                *x = s;
                Ok(())
            }
            None => Err(self.err(format!("value %{} does not exist", v.0))),
        }
    }

    fn set_ext(&mut self, v: ValueId, e: (Value, Value)) {
        if let Some(x) = self.ext.get_mut(v.index()) {
            *x = Some(e);
        }
    }

    fn stmt(&mut self, s: &'a Stmt) -> R<()> {
        match s {
            Stmt::Op { results, op } => self.op(results, op),
            Stmt::Store {
                param,
                region,
                value,
            } => {
                let (buf, pvr, pvc) = self
                    .params
                    .get(param.index())
                    .copied()
                    .flatten()
                    .ok_or_else(|| self.err(format!("store to non-tile parameter #{}", param.0)))?;
                let p = &self.k.params[param.index()];
                let tile = match p.kind {
                    ParamKind::Tile { tile, .. } => tile,
                    ParamKind::Scalar { .. } => {
                        return Err(self.err(format!("store to scalar `{}`", p.name)))
                    }
                };
                let pname = format!("`{}`", p.name);
                self.store_into(buf, pvr, pvc, tile, region.as_ref(), *value, &pname)
            }
            Stmt::For {
                index,
                start,
                end,
                body,
            } => {
                let s0 = self.iconst(*start);
                let e = self.iconst(*end);
                self.for_loop(s0, e, 1, &[], &mut |s, i, _| {
                    s.set_slot(*index, Slot::Scalar(i))?;
                    s.block(body)?;
                    Ok(vec![])
                })?;
                Ok(())
            }
            Stmt::Section { body, .. } => self.block(body),
            Stmt::Assign { var, region, value } => self.assign(*var, region.as_ref(), *value),
            Stmt::TAlloc { pipe, slot } => self.talloc(*pipe, *slot),
            Stmt::TPush { pipe, slot } => self.tpush(*pipe, *slot),
            Stmt::TFree { pipe, .. } => {
                let (p, name) = self.pipe(*pipe)?;
                let at = p.state as i32 + 16;
                let n = self.b.ins().load(types::I64, mf(), self.scratch, at);
                let ok = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, n, 0);
                self.check(
                    ok,
                    format!("tfree on pipe `{name}` without a matching tpop"),
                );
                let n = self.b.ins().iadd_imm_s(n, -1);
                self.b.ins().store(mf(), n, self.scratch, at);
                Ok(())
            }
        }
    }

    // ----- pipes -----------------------------------------------------------------------

    fn pipe(&self, p: PipeId) -> R<(PipeLayout, String)> {
        match (
            self.layout.pipes.get(p.index()),
            self.k.pipes.get(p.index()),
        ) {
            (Some(l), Some(info)) => Ok((*l, info.name.clone())),
            _ => Err(self.err(format!("pipe #{} does not exist", p.0))),
        }
    }

    /// Copies `bytes` (a multiple of 16) from `src` to `dst`, 16 at a time.
    fn copy_bytes(&mut self, dst: Value, src: Value, bytes: usize) -> R<()> {
        let zero = self.iconst(0);
        let end = self.iconst(bytes as i64);
        self.for_loop(zero, end, 16, &[], &mut |s, i, _| {
            let a = s.b.ins().iadd(src, i);
            let x = s.b.ins().load(types::I32X4, mf(), a, 0);
            let a = s.b.ins().iadd(dst, i);
            s.b.ins().store(mf(), x, a, 0);
            Ok(vec![])
        })?;
        Ok(())
    }

    /// Address of ring slot `i` (an i64 in `0..capacity`) of a pipe.
    fn ring_slot(&mut self, p: PipeLayout, i: Value) -> Value {
        let o = self.b.ins().imul_imm_s(i, p.slot_bytes as i64);
        let o = self.b.ins().iadd_imm_s(o, p.ring as i64);
        self.b.ins().iadd(self.scratch, o)
    }

    /// `talloc`: the slot variable holds a zero tile of the pipe's full element shape.
    fn talloc(&mut self, pipe: PipeId, slot: VarId) -> R<()> {
        self.pipe(pipe)?;
        let (buf, ty, off) = self.var_buf(slot)?;
        let t = ty
            .tile()
            .ok_or_else(|| self.err(format!("pipe slot #{} is not a tile", slot.0)))?;
        let r = self.iconst(i64::from(t.rows()));
        let c = self.iconst(i64::from(t.cols()));
        self.b.ins().store(mf(), r, self.scratch, off as i32);
        self.b.ins().store(mf(), c, self.scratch, off as i32 + 8);
        let z = self.ci(0, true);
        let zero = self.iconst(0);
        let end = self.iconst((t.len() * 4).div_ceil(16) as i64 * 16);
        self.for_loop(zero, end, 16, &[], &mut |s, i, _| {
            let a = s.b.ins().iadd(buf.ptr, i);
            s.b.ins().store(mf(), z, a, 0);
            Ok(vec![])
        })?;
        Ok(())
    }

    /// `tpush`: moves the slot variable's value (extent and elements) to the back of the
    /// queue; the variable holds no value afterwards.
    fn tpush(&mut self, pipe: PipeId, slot: VarId) -> R<()> {
        let (p, name) = self.pipe(pipe)?;
        let (_, _, off) = self.var_buf(slot)?;
        // Every `tpush` operand is a slot variable (see `slot_vars`), so this always checks.
        self.check_holds_value(
            slot,
            off,
            format!("tpush on pipe `{name}` of a slot that was not reserved by talloc"),
        );
        let head = self
            .b
            .ins()
            .load(types::I64, mf(), self.scratch, p.state as i32);
        let count = self
            .b
            .ins()
            .load(types::I64, mf(), self.scratch, p.state as i32 + 8);
        // Never fails: the ring holds the most slots any run queues (`pipes::max_queued`).
        let cap = p.capacity as i64;
        let ok = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, count, cap);
        self.check(
            ok,
            format!(
                "pipe `{name}` holds more than the {cap} slots the JIT's static bound allows \
                 (an internal error of the JIT)"
            ),
        );
        let tail = self.b.ins().iadd(head, count);
        let wrapped = self.b.ins().iadd_imm_s(tail, -cap);
        let past = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, tail, cap);
        let tail = self.b.ins().select(past, wrapped, tail);
        let dst = self.ring_slot(p, tail);
        let src = self.b.ins().iadd_imm_s(self.scratch, off as i64);
        self.copy_bytes(dst, src, p.slot_bytes)?;
        let count = self.b.ins().iadd_imm_s(count, 1);
        self.b
            .ins()
            .store(mf(), count, self.scratch, p.state as i32 + 8);
        let m1 = self.iconst(-1);
        self.b.ins().store(mf(), m1, self.scratch, off as i32);
        Ok(())
    }

    /// `tpop`: the oldest queued slot, copied into `v`'s buffer (a snapshot, as the
    /// interpreter's value is).
    fn tpop(&mut self, v: ValueId, pipe: PipeId) -> R<()> {
        let (p, name) = self.pipe(pipe)?;
        let st = p.state as i32;
        let head = self.b.ins().load(types::I64, mf(), self.scratch, st);
        let count = self.b.ins().load(types::I64, mf(), self.scratch, st + 8);
        let ok = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, count, 0);
        self.check(
            ok,
            format!(
                "tpop on empty pipe `{name}` (the reference interpreter runs sections in \
                 program order: the producing section must come first)"
            ),
        );
        let src = self.ring_slot(p, head);
        let vr = self.b.ins().load(types::I64, mf(), src, 0);
        let vc = self.b.ins().load(types::I64, mf(), src, 8);
        let (buf, _) = self.value_buf(v)?;
        let data = self.b.ins().iadd_imm_s(src, 16);
        self.copy_bytes(buf.ptr, data, p.slot_bytes - 16)?;
        self.set_ext(v, (vr, vc));
        self.set_slot(v, Slot::Buf(buf))?;
        let next = self.b.ins().iadd_imm_s(head, 1);
        let z = self.iconst(0);
        let wrap =
            self.b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, next, p.capacity as i64);
        let next = self.b.ins().select(wrap, z, next);
        self.b.ins().store(mf(), next, self.scratch, st);
        let count = self.b.ins().iadd_imm_s(count, -1);
        self.b.ins().store(mf(), count, self.scratch, st + 8);
        let popped = self.b.ins().load(types::I64, mf(), self.scratch, st + 16);
        let popped = self.b.ins().iadd_imm_s(popped, 1);
        self.b.ins().store(mf(), popped, self.scratch, st + 16);
        Ok(())
    }

    /// For a pipe slot variable: fails with `message` when it holds no value.
    fn check_holds_value(&mut self, var: VarId, off: usize, message: String) {
        if self.slot_vars.get(var.index()).copied().unwrap_or(false) {
            let vr = self
                .b
                .ins()
                .load(types::I64, mf(), self.scratch, off as i32);
            let ok = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, vr, 0);
            self.check(ok, message);
        }
    }

    /// Writes tile `value` into `dst` of type `dt` (whole or a region), clipped to the
    /// destination's valid extent `(dvr, dvc)` and converted to its dtype (round on store).
    #[allow(clippy::too_many_arguments)]
    fn store_into(
        &mut self,
        dst: Buf,
        dvr: Value,
        dvc: Value,
        dt: TileType,
        region: Option<&Region>,
        value: ValueId,
        what: &str,
    ) -> R<()> {
        let shape = dt.shape;
        let vt = shape_of(self.k, value)?
            .ok_or_else(|| self.err(format!("store of scalar %{} into {what}", value.0)))?;
        let (r0, c0, rs, cs) = match region {
            Some(reg) => {
                let (r0, c0) = self.region_start(reg)?;
                self.check_region(r0, c0, reg, shape, what);
                if [reg.rows, reg.cols] != vt.shape {
                    return Err(self.err(format!(
                        "store of a [{}, {}] tile into a [{}, {}] region of {what}",
                        vt.shape[0], vt.shape[1], reg.rows, reg.cols
                    )));
                }
                (r0, c0, reg.rows, reg.cols)
            }
            None => {
                if vt.shape != shape {
                    return Err(self.err(format!(
                        "store of a [{}, {}] tile into {what} of shape [{}, {}]",
                        vt.shape[0], vt.shape[1], shape[0], shape[1]
                    )));
                }
                let z = self.iconst(0);
                (z, z, shape[0], shape[1])
            }
        };
        let (vr, vc) = self.extent(value)?;
        let clip = |s: &mut Self, v: Value, n: u32, d: Value, o: Value| {
            let n = s.iconst(i64::from(n));
            let a = s.smin_f(v, n);
            let room = s.isub_f(d, o);
            let z = s.iconst(0);
            let room = s.smax_f(room, z);
            s.smin_f(a, room)
        };
        let rows = clip(self, vr, rs, dvr, r0);
        let cols = clip(self, vc, cs, dvc, c0);
        // Destination view starting at (r0, c0).
        let off = self.b.ins().imul(r0, dst.stride);
        let off = self.b.ins().iadd(off, c0);
        let sh = dst.elem.shift();
        let off = if sh == 0 {
            off
        } else {
            self.b.ins().ishl_imm_s(off, sh)
        };
        let ptr = self.b.ins().iadd(dst.ptr, off);
        let d = Buf {
            ptr,
            stride: dst.stride,
            elem: dst.elem,
        };
        // Float → f16/bf16/f32 memory rounds in the store itself (once, to nearest even).
        let from = vt.dtype;
        let convert = from != dt.dtype && !(from.is_float() && dt.dtype.is_float());
        self.tile_loop(rows, cols, &mut |s, p| {
            let mut x = s.elem(value, p)?;
            if convert {
                x = s.cast(x, from, dt.dtype, p.vec)?;
            }
            s.store_el(d, p.r, p.c, x);
            Ok(())
        })
    }

    fn var_buf(&mut self, var: VarId) -> R<(Buf, IrType, usize)> {
        let info = self
            .k
            .vars
            .get(var.index())
            .ok_or_else(|| self.err(format!("variable #{} does not exist", var.0)))?;
        let off = self
            .layout
            .var_offsets
            .get(var.index())
            .copied()
            .ok_or_else(|| self.err(format!("variable `{}` has no buffer", info.name)))?;
        let ty = info.ty;
        let cols = ty.tile().map(|t| t.cols()).unwrap_or(1);
        let elem = Elem::scratch(ty.dtype()).unwrap_or(Elem::F32);
        let ptr = self.b.ins().iadd_imm_s(self.scratch, off as i64 + 16);
        let stride = self.iconst(i64::from(cols));
        Ok((Buf { ptr, stride, elem }, ty, off))
    }

    fn assign(&mut self, var: VarId, region: Option<&Region>, value: ValueId) -> R<()> {
        let (buf, ty, off) = self.var_buf(var)?;
        let name = format!("variable `{}`", self.k.vars[var.index()].name);
        match ty {
            IrType::Scalar { .. } => {
                if region.is_some() {
                    return Err(self.err(format!("region assignment to scalar {name}")));
                }
                let x = match self.slots.get(value.index()) {
                    Some(Slot::Scalar(x)) => *x,
                    _ => return Err(self.err(format!("{name} assigned a non-scalar"))),
                };
                self.b.ins().store(mf(), x, buf.ptr, 0);
                Ok(())
            }
            IrType::Tile(t) => {
                let flags = mf();
                match region {
                    None => {
                        let (vr, vc) = self.extent(value)?;
                        self.b.ins().store(flags, vr, self.scratch, off as i32);
                        self.b.ins().store(flags, vc, self.scratch, off as i32 + 8);
                        let r = self.iconst(i64::from(t.rows()));
                        let c = self.iconst(i64::from(t.cols()));
                        self.store_into(buf, r, c, t, None, value, &name)
                    }
                    Some(reg) => {
                        if self.slot_vars.get(var.index()).copied().unwrap_or(false) {
                            // The interpreter checks the region, then that the slot holds a
                            // value.
                            let (r0, c0) = self.region_start(reg)?;
                            let vname = format!("`{}`", self.k.vars[var.index()].name);
                            self.check_region(r0, c0, reg, t.shape, &vname);
                            self.check_holds_value(
                                var,
                                off,
                                format!("sub-range assignment to {vname} before it has a value"),
                            );
                        }
                        // Clipped to the variable's current extent, as a store is.
                        let dvr = self
                            .b
                            .ins()
                            .load(types::I64, flags, self.scratch, off as i32);
                        let dvc =
                            self.b
                                .ins()
                                .load(types::I64, flags, self.scratch, off as i32 + 8);
                        self.store_into(buf, dvr, dvc, t, Some(reg), value, &name)
                    }
                }
            }
        }
    }

    /// Extent of an elementwise result over `operands`.
    fn broadcast_ext(&mut self, shape: [u32; 2], operands: &[ValueId]) -> R<(Value, Value)> {
        let mut out = [
            self.iconst(i64::from(shape[0])),
            self.iconst(i64::from(shape[1])),
        ];
        for o in operands {
            if let Some(t) = shape_of(self.k, *o)? {
                let (vr, vc) = self.extent(*o)?;
                for (d, v) in [vr, vc].into_iter().enumerate() {
                    if t.shape[d] == shape[d] {
                        out[d] = self.smin_f(out[d], v);
                    }
                }
            }
        }
        Ok((out[0], out[1]))
    }

    fn op(&mut self, results: &[ValueId], op: &'a Op) -> R<()> {
        let v = *results
            .first()
            .ok_or_else(|| self.err("an operation without results".into()))?;
        let t = shape_of(self.k, v)?;
        match (op, t) {
            (Op::Param { param }, Some(_)) => {
                let (buf, vr, vc) = self
                    .params
                    .get(param.index())
                    .copied()
                    .flatten()
                    .ok_or_else(|| self.err(format!("parameter #{} is not a tile", param.0)))?;
                self.set_ext(v, (vr, vc));
                self.set_slot(v, Slot::Buf(buf))?;
                if self.needs_buf[v.index()] {
                    // A snapshot (the kernel stores to this parameter later) or an operand
                    // read in compute form (matmul, rowtopk).
                    let (b, _) = self.value_buf(v)?;
                    self.tile_loop(vr, vc, &mut |s, p| {
                        let x = s.load(buf, p.r, p.c, p.vec);
                        s.store_el(b, p.r, p.c, x);
                        Ok(())
                    })?;
                    self.set_slot(v, Slot::Buf(b))?;
                }
                Ok(())
            }
            (Op::Param { param }, None) => {
                let x = self
                    .scalar_params
                    .get(param.index())
                    .copied()
                    .flatten()
                    .ok_or_else(|| self.err(format!("parameter #{} is not a scalar", param.0)))?;
                self.set_slot(v, Slot::Scalar(x))
            }
            (Op::Const { value, dtype }, None) => {
                let kind = self.kind(v)?;
                let x = self.kconst(kind, El::from_scalar(*value, *dtype), false)?;
                self.set_slot(v, Slot::Scalar(x))
            }
            (
                Op::Binary { .. }
                | Op::Cmp { .. }
                | Op::Select { .. }
                | Op::Unary { .. }
                | Op::Cast { .. },
                None,
            ) => {
                // Scalar arithmetic, evaluated once here.
                let z = self.iconst(0);
                self.memo.clear();
                let x = self.eval_op(
                    v,
                    op,
                    Pos {
                        r: z,
                        c: z,
                        vec: false,
                    },
                )?;
                self.memo.clear();
                self.set_slot(v, Slot::Scalar(x))
            }
            (Op::Binary { lhs, rhs, .. } | Op::Cmp { lhs, rhs, .. }, Some(t)) => {
                let e = self.broadcast_ext(t.shape, &[*lhs, *rhs])?;
                self.lazy(v, e)
            }
            (
                Op::Select {
                    cond,
                    on_true,
                    on_false,
                },
                Some(t),
            ) => {
                let e = self.broadcast_ext(t.shape, &[*cond, *on_true, *on_false])?;
                self.lazy(v, e)
            }
            (Op::Unary { x, .. } | Op::Cast { x, .. }, Some(t)) => {
                let e = self.broadcast_ext(t.shape, &[*x])?;
                self.lazy(v, e)
            }
            (Op::Full { shape, .. } | Op::Iota { shape, .. }, Some(_)) => {
                let r = self.iconst(i64::from(shape[0]));
                let c = self.iconst(i64::from(shape[1]));
                self.lazy(v, (r, c))
            }
            (Op::Slice { x, region }, Some(_)) => {
                let xt = shape_of(self.k, *x)?
                    .ok_or_else(|| self.err(format!("slice of scalar %{}", x.0)))?;
                let (r0, c0) = self.region_start(region)?;
                let what = format!("the slice of {}", self.vname(*x));
                self.check_region(r0, c0, region, xt.shape, &what);
                let (xr, xc) = self.extent(*x)?;
                let clip = |s: &mut Self, ext: Value, st: Value, n: u32| {
                    let d = s.isub_f(ext, st);
                    let z = s.iconst(0);
                    let d = s.smax_f(d, z);
                    let n = s.iconst(i64::from(n));
                    s.smin_f(d, n)
                };
                let vr = clip(self, xr, r0, region.rows);
                let vc = clip(self, xc, c0, region.cols);
                self.lazy(v, (vr, vc))
            }
            (Op::Reduce { op: rop, x }, Some(_)) => self.reduce(v, *rop, *x),
            (Op::Matmul { a, b, acc }, Some(_)) => self.matmul(v, *a, *b, *acc),
            (Op::RowTopK { x, k }, Some(_)) => {
                let i = *results
                    .get(1)
                    .ok_or_else(|| self.err("`rowtopk` without its index result".into()))?;
                self.rowtopk(v, i, *x, *k)
            }
            (Op::Transpose { x }, Some(_)) => {
                let (buf, _) = self.value_buf(v)?;
                let (xr, xc) = self.extent(*x)?;
                let kind = self.kind(*x)?;
                let x = *x;
                self.tile_loop(xr, xc, &mut |s, p| {
                    let p1 = Pos { vec: false, ..p };
                    if p.vec {
                        let val = s.elem(x, p)?;
                        for lane in 0..4u8 {
                            let mut e = s.b.ins().extractlane(val, lane);
                            if kind == Kind::Bool {
                                e = s.b.ins().icmp_imm_s(IntCC::NotEqual, e, 0);
                            }
                            let c = s.b.ins().iadd_imm_s(p.c, i64::from(lane));
                            s.store_el(buf, c, p.r, e);
                        }
                    } else {
                        let e = s.elem(x, p1)?;
                        s.store_el(buf, p.c, p.r, e);
                    }
                    Ok(())
                })?;
                self.set_ext(v, (xc, xr));
                self.set_slot(v, Slot::Buf(buf))
            }
            (Op::TPop { pipe }, Some(_)) => self.tpop(v, *pipe),
            (Op::VarRead { var }, _) => {
                let (vb, ty, off) = self.var_buf(*var)?;
                let vname = self.k.vars[var.index()].name.clone();
                self.check_holds_value(
                    *var,
                    off,
                    format!("variable `{vname}` is read before it is assigned"),
                );
                match ty {
                    IrType::Scalar { dtype } => {
                        let kind = Kind::of(dtype).ok_or_else(|| {
                            JitError::unsupported(self.k, format!("{dtype} variables"))
                        })?;
                        let x = self.b.ins().load(kind.scalar(), mf(), vb.ptr, 0);
                        self.set_slot(v, Slot::Scalar(x))
                    }
                    IrType::Tile(_) => {
                        let f = mf();
                        let vr = self.b.ins().load(types::I64, f, self.scratch, off as i32);
                        let vc = self
                            .b
                            .ins()
                            .load(types::I64, f, self.scratch, off as i32 + 8);
                        self.set_ext(v, (vr, vc));
                        let (b, _) = self.value_buf(v)?;
                        self.tile_loop(vr, vc, &mut |s, p| {
                            let x = s.load(vb, p.r, p.c, p.vec);
                            s.store_el(b, p.r, p.c, x);
                            Ok(())
                        })?;
                        self.set_slot(v, Slot::Buf(b))
                    }
                }
            }
            (op, _) => Err(JitError::unsupported(
                self.k,
                format!("operation {}", op_name(op)),
            )),
        }
    }

    fn vname(&self, v: ValueId) -> String {
        match self.k.values.get(v.index()).and_then(|i| i.name.as_deref()) {
            Some(n) => format!("`{n}`"),
            None => format!("%{}", v.0),
        }
    }

    fn lazy(&mut self, v: ValueId, e: (Value, Value)) -> R<()> {
        self.set_ext(v, e);
        self.set_slot(v, Slot::Lazy)?;
        if self.needs_buf.get(v.index()).copied().unwrap_or(false) {
            // Materialise into v's own buffer (evaluating v's DAG once).
            let (buf, _) = self.value_buf(v)?;
            self.tile_loop(e.0, e.1, &mut |s, p| {
                let x = s.elem(v, p)?;
                s.store_el(buf, p.r, p.c, x);
                Ok(())
            })?;
            self.set_slot(v, Slot::Buf(buf))?;
        }
        Ok(())
    }

    /// `rowtopk`: per row, one call of the selection helper on the operand's buffer.
    fn rowtopk(&mut self, vals: ValueId, idx: ValueId, x: ValueId, k: u32) -> R<()> {
        let xb = match self.slots.get(x.index()) {
            Some(Slot::Buf(b)) if b.elem != Elem::F16 && b.elem != Elem::Bf16 => *b,
            _ => return Err(self.err(format!("rowtopk operand %{} is not in memory", x.0))),
        };
        let kind = match xb.elem {
            Elem::F32 => 0,
            Elem::I32 => 1,
            Elem::Mask32 => 2,
            _ => return Err(self.err(format!("rowtopk operand %{} is not in memory", x.0))),
        };
        let (vb, _) = self.value_buf(vals)?;
        let (ib, _) = self.value_buf(idx)?;
        let (xr, xc) = self.extent(x)?;
        let ok = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, xc, i64::from(k));
        self.check(
            ok,
            format!("`rowtopk` with k = {k} on a tile with fewer valid columns"),
        );
        let zero = self.iconst(0);
        let kk = self.iconst(i64::from(k));
        let kind = self.b.ins().iconst(types::I32, kind);
        self.for_loop(zero, xr, 1, &[], &mut |s, r, _| {
            let row = s.addr(xb, r, zero);
            let vp = s.addr(vb, r, zero);
            let ip = s.addr(ib, r, zero);
            s.b.ins().call(s.h.rowtopk, &[row, xc, kk, kind, vp, ip]);
            Ok(vec![])
        })?;
        for v in [vals, idx] {
            self.set_ext(v, (xr, kk));
        }
        self.set_slot(vals, Slot::Buf(vb))?;
        self.set_slot(idx, Slot::Buf(ib))
    }

    fn reduce(&mut self, v: ValueId, op: ReduceOp, x: ValueId) -> R<()> {
        let (buf, _) = self.value_buf(v)?;
        let (xr, xc) = self.extent(x)?;
        let kind = self.kind(x)?;
        let (init, f): (El, Combine) = match (kind, op) {
            (Kind::F, ReduceOp::RowSum | ReduceOp::RowMean | ReduceOp::ColSum) => {
                (El::F(0.0), |b, a, c| b.ins().fadd(a, c))
            }
            (Kind::F, ReduceOp::RowMax | ReduceOp::ColMax) => {
                (El::F(f64::NEG_INFINITY), |b, a, c| b.ins().fmax(a, c))
            }
            (Kind::F, ReduceOp::RowMin | ReduceOp::ColMin) => {
                (El::F(f64::INFINITY), |b, a, c| b.ins().fmin(a, c))
            }
            (Kind::I32, ReduceOp::RowSum | ReduceOp::ColSum) => {
                (El::I(0), |b, a, c| b.ins().iadd(a, c))
            }
            (Kind::I32, ReduceOp::RowMax | ReduceOp::ColMax) => {
                (El::I(i32::MIN.into()), |b, a, c| b.ins().smax(a, c))
            }
            (Kind::I32, ReduceOp::RowMin | ReduceOp::ColMin) => {
                (El::I(i32::MAX.into()), |b, a, c| b.ins().smin(a, c))
            }
            _ => {
                return Err(JitError::invalid(
                    self.k,
                    format!("reduction {op:?} of {kind:?} values"),
                ))
            }
        };
        let zero = self.iconst(0);
        if op.is_row() {
            let vend = self.band_imm_f(xc, !3i64);
            self.for_loop(zero, xr, 1, &[], &mut |s, r, _| {
                let acc0 = s.kconst(kind, init, true)?;
                let step4 = |s: &mut Self, lo: Value, init: Value| {
                    s.for_loop(lo, vend, 4, &[init], &mut |s, c, a| {
                        s.memo.clear();
                        let e = s.elem(x, Pos { r, c, vec: true })?;
                        Ok(vec![f(&mut s.b, a[0], e)])
                    })
                };
                let acc = if !matches!(op, ReduceOp::RowSum | ReduceOp::RowMean) {
                    // max and min are exactly associative and commutative: two independent
                    // vector accumulators (columns c..c+4 and c+4..c+8) halve the chain of
                    // dependent (NaN-propagating, multi-instruction) fmax/fmin, then one
                    // step of 4 for a remaining chunk.
                    let vend8 = s.band_imm_f(xc, !7i64);
                    let two = s.for_loop(zero, vend8, 8, &[acc0, acc0], &mut |s, c, a| {
                        s.memo.clear();
                        let e0 = s.elem(x, Pos { r, c, vec: true })?;
                        s.memo.clear();
                        let c4 = s.b.ins().iadd_imm_s(c, 4);
                        let e1 = s.elem(
                            x,
                            Pos {
                                r,
                                c: c4,
                                vec: true,
                            },
                        )?;
                        Ok(vec![f(&mut s.b, a[0], e0), f(&mut s.b, a[1], e1)])
                    })?;
                    let joined = f(&mut s.b, two[0], two[1]);
                    step4(s, vend8, joined)?
                } else {
                    // Sums keep the lanes' canonical order: lane l sums the columns ≡ l
                    // (mod 4) in increasing order.
                    step4(s, zero, acc0)?
                };
                let mut lanes: Vec<Value> =
                    (0..4u8).map(|l| s.b.ins().extractlane(acc[0], l)).collect();
                // Tail: at most 3 columns, column vend + l goes to lane l.
                #[allow(clippy::needless_range_loop)]
                for l in 0..3usize {
                    let c = s.iadd_imm_f(vend, l as i64);
                    if let (Some(cc), Some(n)) = (s.cval(c), s.cval(xc)) {
                        // A static extent: the tail column exists or not.
                        if cc < n {
                            s.memo.clear();
                            let e = s.elem(x, Pos { r, c, vec: false })?;
                            lanes[l] = f(&mut s.b, lanes[l], e);
                        }
                        continue;
                    }
                    let inb = s.b.ins().icmp(IntCC::SignedLessThan, c, xc);
                    let then = s.b.create_block();
                    let join = s.b.create_block();
                    s.b.append_block_param(join, kind.scalar());
                    s.b.ins()
                        .brif(inb, then, &[], join, &[BlockArg::from(lanes[l])]);
                    s.b.seal_block(then);
                    s.b.switch_to_block(then);
                    s.memo.clear();
                    let e = s.elem(x, Pos { r, c, vec: false })?;
                    let nv = f(&mut s.b, lanes[l], e);
                    s.b.ins().jump(join, &[BlockArg::from(nv)]);
                    s.b.seal_block(join);
                    s.b.switch_to_block(join);
                    lanes[l] = s.b.block_params(join)[0];
                }
                s.memo.clear();
                let a = f(&mut s.b, lanes[0], lanes[1]);
                let c = f(&mut s.b, lanes[2], lanes[3]);
                let mut res = f(&mut s.b, a, c);
                if op == ReduceOp::RowMean {
                    let n = s.b.ins().fcvt_from_sint(types::F32, xc);
                    res = s.b.ins().fdiv(res, n);
                }
                s.store_el(buf, r, zero, res);
                Ok(vec![])
            })?;
            let one = self.iconst(1);
            self.set_ext(v, (xr, one));
        } else {
            let vend = self.band_imm_f(xc, !3i64);
            for (lo, hi, step, vec) in [(zero, vend, 4, true), (vend, xc, 1, false)] {
                self.for_loop(lo, hi, step, &[], &mut |s, c, _| {
                    let a0 = s.kconst(kind, init, vec)?;
                    let acc = s.for_loop(zero, xr, 1, &[a0], &mut |s, r, a| {
                        s.memo.clear();
                        let e = s.elem(x, Pos { r, c, vec })?;
                        Ok(vec![f(&mut s.b, a[0], e)])
                    })?;
                    s.store_el(buf, zero, c, acc[0]);
                    Ok(vec![])
                })?;
            }
            let one = self.iconst(1);
            self.set_ext(v, (one, xc));
        }
        self.memo.clear();
        self.set_slot(v, Slot::Buf(buf))
    }

    fn matmul(&mut self, v: ValueId, a: ValueId, bm: ValueId, acc: Option<ValueId>) -> R<()> {
        let (out, _) = self.value_buf(v)?;
        let ab = match self.slots.get(a.index()) {
            Some(Slot::Buf(b)) => *b,
            _ => return Err(self.err(format!("matmul operand %{} is not in memory", a.0))),
        };
        let bb = match self.slots.get(bm.index()) {
            Some(Slot::Buf(b)) => *b,
            _ => return Err(self.err(format!("matmul operand %{} is not in memory", bm.0))),
        };
        let (ar, ac) = self.extent(a)?;
        let (br, bc) = self.extent(bm)?;
        let mut vm = ar;
        let mut vn = bc;
        if let Some(c) = acc {
            let (cr, cc) = self.extent(c)?;
            vm = self.smin_f(vm, cr);
            vn = self.smin_f(vn, cc);
        }
        let kk = self.smin_f(ac, br);
        let zero = self.iconst(0);
        let vend = self.band_imm_f(vn, !3i64);
        // Register blocking: 1 row × 4 vectors (16 columns) per inner loop, then single
        // vectors, then scalar columns.
        let vend16 = self.band_imm_f(vn, !15i64);
        self.for_loop(zero, vm, 1, &[], &mut |s, i, _| {
            let init = |s: &mut Self, c: Value, vec: bool| -> R<Value> {
                match acc {
                    Some(cv) => {
                        s.memo.clear();
                        s.elem(cv, Pos { r: i, c, vec })
                    }
                    None => Ok(if vec { s.vconst(0.0) } else { s.fconst(0.0) }),
                }
            };
            s.for_loop(zero, vend16, 16, &[], &mut |s, j, _| {
                let mut accs = Vec::new();
                for q in 0..4 {
                    let c = s.b.ins().iadd_imm_s(j, q * 4);
                    accs.push(init(s, c, true)?);
                }
                let res = s.for_loop(zero, kk, 1, &accs, &mut |s, k, cs| {
                    let av = s.load(ab, i, k, false);
                    let av = s.b.ins().splat(types::F32X4, av);
                    let mut next = Vec::new();
                    for (q, cq) in cs.iter().enumerate() {
                        let c = s.b.ins().iadd_imm_s(j, q as i64 * 4);
                        let bv = s.load(bb, k, c, true);
                        let p = s.b.ins().fmul(av, bv);
                        next.push(s.b.ins().fadd(*cq, p));
                    }
                    Ok(next)
                })?;
                for (q, r) in res.iter().enumerate() {
                    let c = s.b.ins().iadd_imm_s(j, q as i64 * 4);
                    s.store_el(out, i, c, *r);
                }
                Ok(vec![])
            })?;
            for (lo, hi, step, vec) in [(vend16, vend, 4, true), (vend, vn, 1, false)] {
                s.for_loop(lo, hi, step, &[], &mut |s, j, _| {
                    let c0 = init(s, j, vec)?;
                    let res = s.for_loop(zero, kk, 1, &[c0], &mut |s, k, cs| {
                        let mut av = s.load(ab, i, k, false);
                        if vec {
                            av = s.b.ins().splat(types::F32X4, av);
                        }
                        let bv = s.load(bb, k, j, vec);
                        let p = s.b.ins().fmul(av, bv);
                        Ok(vec![s.b.ins().fadd(cs[0], p)])
                    })?;
                    s.store_el(out, i, j, res[0]);
                    Ok(vec![])
                })?;
            }
            Ok(vec![])
        })?;
        self.memo.clear();
        self.set_ext(v, (vm, vn));
        self.set_slot(v, Slot::Buf(out))
    }
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Param { .. } => "param",
        Op::Const { .. } => "const",
        Op::Binary { .. } => "binary",
        Op::Cmp { .. } => "compare",
        Op::Select { .. } => "select",
        Op::Unary { .. } => "unary",
        Op::Reduce { .. } => "reduce",
        Op::Matmul { .. } => "matmul",
        Op::Transpose { .. } => "transpose",
        Op::Cast { .. } => "cast",
        Op::Full { .. } => "full",
        Op::Iota { .. } => "iota",
        Op::RowTopK { .. } => "rowtopk",
        Op::Slice { .. } => "slice",
        Op::VarRead { .. } => "var read",
        Op::TPop { .. } => "tpop",
    }
}

/// Memory flags of every access: in bounds by construction (checked), possibly unaligned.
fn mf() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}
