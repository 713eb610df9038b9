//! The calling convention of compiled kernels.
//!
//! A compiled kernel is one function
//!
//! ```text
//! extern "C" fn(args: *const u64, scratch: *mut u8) -> i32
//! ```
//!
//! `args` is the *argument block*: for each kernel parameter in order,
//! * a tile parameter takes 4 slots: data pointer, row stride in elements, valid rows, valid
//!   columns; element `(r, c)` is at `ptr + size·(r·stride + c)` in the real bit layout of
//!   the parameter's dtype (little-endian): f32 and i32 4 bytes, f16 (IEEE binary16) and
//!   bf16 (the top half of an f32) 2 bytes, bool one byte 0/1 (any non-zero byte reads as
//!   true);
//! * a scalar parameter takes 1 slot ([`scalar_slot`]): a float (f32, f16, bf16; already
//!   rounded to its dtype) as f32 bits in the low 32 bits, an integer as a two's complement
//!   i64, a bool as 0/1.
//!
//! The JIT compiles tiles of f32, f16, bf16, i32 and bool and scalars of those and i64.
//!
//! `scratch` is a 16-byte aligned frame of [`Layout::scratch_bytes`] bytes for intermediate
//! tiles, variables and pipe queues; its contents need no initialisation. The result is 0 on success, or `i + 1` for the
//! error message `i` of the kernel (an out-of-range extent or region), detected before any
//! out-of-range access.

use crate::kernel_codegen::{is_int_divrem, kept, walk};
use wsp_ir::kernel::*;
use wsp_ir::tensor::El;
use wsp_ir::{DType, ScalarValue};

/// The argument-block slot of a scalar parameter of `dtype` holding `v`, converted to the
/// dtype with the `cast` rules, as the interpreter converts scalar arguments.
pub fn scalar_slot(dtype: DType, v: ScalarValue) -> u64 {
    match El::from_scalar(v, dtype) {
        El::F(f) => u64::from((f as f32).to_bits()),
        El::I(i) => i as i64 as u64,
        El::B(b) => u64::from(b),
    }
}

/// Where a parameter lives in the argument block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamSlot {
    /// First of 4 slots: ptr, stride, valid rows, valid cols.
    Tile(usize),
    /// One slot.
    Scalar(usize),
}

/// Argument block and scratch frame layout of one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub params: Vec<ParamSlot>,
    /// Number of u64 slots of the argument block.
    pub arg_slots: usize,
    /// Scratch offset of each value held in memory (in its compute form: 4 bytes an element,
    /// f32 for f16/bf16/f32, i32, and i32 lane masks for bool).
    pub value_offsets: Vec<Option<usize>>,
    /// Scratch offset of each variable: 16 bytes of extent (two i64), then the data.
    pub var_offsets: Vec<usize>,
    /// The queue of each pipe.
    pub pipes: Vec<PipeLayout>,
    pub scratch_bytes: usize,
    /// Elementwise values kept in their scratch buffer rather than recomputed by each
    /// consumer (the JIT's plan, decided once here and read by the lowering).
    pub kept: Vec<bool>,
}

/// The queue of one pipe in the scratch frame: a ring of `capacity` slots of `slot_bytes`
/// each (16 bytes of valid extent, two i64, then the elements in compute form, as a
/// variable), and its state at `state`: three i64, the ring index of the oldest queued slot,
/// the number of queued slots, and the number of popped slots not yet freed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipeLayout {
    pub state: usize,
    pub ring: usize,
    pub capacity: usize,
    pub slot_bytes: usize,
}

fn align16(n: usize) -> usize {
    (n + 15) & !15
}

impl Layout {
    /// The layout of `k` whose pipes queue at most `queued[i]` slots at once (pipe `i`; see
    /// the JIT's static bound of pipes).
    pub fn new(k: &Kernel, queued: &[usize]) -> Layout {
        let mut params = Vec::new();
        let mut slot = 0;
        for p in &k.params {
            match p.kind {
                ParamKind::Tile { .. } => {
                    params.push(ParamSlot::Tile(slot));
                    slot += 4;
                }
                ParamKind::Scalar { .. } => {
                    params.push(ParamSlot::Scalar(slot));
                    slot += 1;
                }
            }
        }
        let mut in_memory = vec![false; k.values.len()];
        let mut mark = |v: ValueId| {
            if let Some(m) = in_memory.get_mut(v.index()) {
                *m = true;
            }
        };
        if let Some(body) = &k.body {
            walk(body, &mut |s| {
                if let Stmt::Op { results, op } = s {
                    match op {
                        Op::Matmul { a, b, .. } => {
                            mark(*a);
                            mark(*b);
                            results.iter().for_each(|r| mark(*r));
                        }
                        Op::RowTopK { x, .. } => {
                            mark(*x);
                            results.iter().for_each(|r| mark(*r));
                        }
                        _ if is_int_divrem(k, op) => results.iter().for_each(|r| mark(*r)),
                        Op::Reduce { .. }
                        | Op::Transpose { .. }
                        | Op::VarRead { .. }
                        | Op::TPop { .. }
                        | Op::Param { .. } => results.iter().for_each(|r| mark(*r)),
                        _ => {}
                    }
                }
            });
        }
        let kept = kept(k);
        for (v, keep) in kept.iter().enumerate() {
            if *keep {
                in_memory[v] = true;
            }
        }
        let mut off = 0;
        let mut value_offsets = Vec::with_capacity(k.values.len());
        for (i, v) in k.values.iter().enumerate() {
            match v.ty.tile() {
                Some(t) if in_memory.get(i).copied().unwrap_or(false) => {
                    value_offsets.push(Some(off));
                    off = align16(off + t.len() * 4);
                }
                _ => value_offsets.push(None),
            }
        }
        let mut var_offsets = Vec::new();
        for v in &k.vars {
            var_offsets.push(off);
            let n = v.ty.tile().map(|t| t.len()).unwrap_or(2);
            off = align16(off + 16 + n * 4);
        }
        let mut pipes = Vec::new();
        for (i, p) in k.pipes.iter().enumerate() {
            let state = off;
            let ring = state + 32;
            let capacity = queued.get(i).copied().unwrap_or(0);
            let slot_bytes = align16(16 + p.elem.len() * 4);
            off = ring + capacity * slot_bytes;
            pipes.push(PipeLayout {
                state,
                ring,
                capacity,
                slot_bytes,
            });
        }
        Layout {
            params,
            arg_slots: slot,
            value_offsets,
            var_offsets,
            pipes,
            scratch_bytes: off.max(16),
            kept,
        }
    }
}
