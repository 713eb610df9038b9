//! Lowering of one kernel to Cranelift IR.
//!
//! Elementwise values are *lazy*: they have no buffer; every consumer (a store, a reduction,
//! a matmul operand copy, a variable assignment) evaluates the whole elementwise DAG below it
//! per element in one fused loop, 4 lanes at a time with a scalar tail. Buffers (in the
//! scratch frame) exist only for values that are read many times or must be snapshots:
//! reduction, matmul, transpose and `rowtopk` results, matmul and `rowtopk` operands,
//! variables and their reads, popped pipe slots (copied out of the pipe's ring), integer
//! divisions (so that a division by zero is found over the operation's whole extent, as the
//! interpreter does), loads of `inout` parameters that the kernel also stores to (unless every
//! read is before the store or in its own loop at the position written: [`plan::read_in_place`]), and
//! elementwise values whose consumers would otherwise evaluate them again more than keeping
//! them costs ([`plan`]: by the cost of the expression and the number of evaluations).
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
//!
//! This file holds the types (compute forms, element layouts, buffers, [`Lower`]), the check
//! of supported types, and the constants and bit operations every part uses. The lowering is
//! in rooms, each an `impl Lower` block: `half` (f16/bf16 rounding and conversion), `entry`
//! (parameters and the checks at entry), `math` (`exp`, `log`, `tanh` in vector form), `loops` (counted and tile loops), `memory` (loads,
//! stores, scratch buffers), `elementwise` (the fused per-element evaluation), `stmt`
//! (statements, stores, variables), `pipe_ops` (`talloc`/`tpush`/`tpop` on the rings), `ops`
//! (each operation's lowering, `rowtopk`), `reduce` and `matmul`.

mod elementwise;
mod entry;
mod half;
mod loops;
mod math;
mod matmul;
mod memory;
mod ops;
mod pipe_ops;
mod plan;
mod reduce;
mod stmt;

use crate::abi::Layout;
use crate::JitError;
use cranelift::codegen::ir::{Endianness, FuncRef, InstructionData, Opcode, ValueDef};
use cranelift::prelude::*;
use std::collections::HashMap;
use wsp_ir::kernel::{BinaryOp, Kernel, Op, ParamKind, Stmt, TileType, Type as IrType, ValueId};
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

/// Where an element is evaluated: row `r`, column `c`, one lane or four: four columns of row
/// `r`, or, when `down` (a loop over a `[R, 1]` value), four rows of column `c`.
#[derive(Clone, Copy)]
struct Pos {
    r: Value,
    c: Value,
    vec: bool,
    down: bool,
}

impl Pos {
    /// One element at `(r, c)`, or four: columns `c..c + 4` of row `r`.
    fn at(r: Value, c: Value, vec: bool) -> Pos {
        Pos {
            r,
            c,
            vec,
            down: false,
        }
    }
}

/// The helper functions imported into the function being built.
pub(crate) struct Helpers {
    pub sin: FuncRef,
    pub cos: FuncRef,
    pub pow: FuncRef,
    pub fmod: FuncRef,
    /// `(i64) -> f32`: an integer rounded to bf16 (round to nearest even, from the exact
    /// integer).
    pub int_to_bf16: FuncRef,
    /// `(row, n, k, kind, vals, idx)`: `rowtopk` of one row.
    pub rowtopk: FuncRef,
    /// `(ptr, stride bytes, rows, row bytes)`: zeroes rows (a store of `full` of +0).
    pub zero_rows: FuncRef,
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
    /// The row loops being generated, innermost last ([`memory`]'s hoisted row addresses).
    rows: Vec<RowScope>,
}

/// A row loop's body: `r` its row, `pre` the block before its column loops, where the row
/// addresses of buffers (`ptr + r·stride·size`) are computed once per row
/// (`(ptr, stride, shift)` → address or row offset).
pub(crate) struct RowScope {
    r: Value,
    pre: Block,
    cache: HashMap<(Value, Value, i64), RowBase>,
}

/// What a row scope holds for a buffer.
#[derive(Clone, Copy)]
pub(crate) enum RowBase {
    /// `ptr + r·stride·size` (the pointer dominates the loop).
    Addr(Value),
    /// `r·stride·size` (the pointer is computed inside the loop).
    Offset(Value),
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

/// Calls `f` on every statement of `stmts`, loop and section bodies included, in order.
pub(crate) fn walk<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in stmts {
        f(s);
        match s {
            Stmt::For { body, .. } | Stmt::Section { body, .. } => walk(body, f),
            _ => {}
        }
    }
}

pub(crate) use plan::kept;

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
            rows: Vec::new(),
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
}

/// Memory flags of every access: in bounds by construction (checked), possibly unaligned.
fn mf() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}
