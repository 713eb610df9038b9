//! Row and column reductions: 4-lane accumulators in the IR's canonical summation order.

use super::{Combine, Kind, Lower, Pos, Slot, R};
use crate::JitError;
use cranelift::codegen::ir::BlockArg;
use cranelift::prelude::*;
use wsp_ir::kernel::{ReduceOp, ValueId};
use wsp_ir::tensor::El;

impl<'a, 'b> Lower<'a, 'b> {
    pub(super) fn reduce(&mut self, v: ValueId, op: ReduceOp, x: ValueId) -> R<()> {
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
                s.enter_row(r);
                let acc0 = s.kconst(kind, init, true)?;
                let step4 = |s: &mut Self, lo: Value, init: Value| {
                    s.for_loop(lo, vend, 4, &[init], &mut |s, c, a| {
                        s.memo.clear();
                        let e = s.elem(x, Pos::at(r, c, true))?;
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
                        let e0 = s.elem(x, Pos::at(r, c, true))?;
                        s.memo.clear();
                        let c4 = s.b.ins().iadd_imm_s(c, 4);
                        let e1 = s.elem(x, Pos::at(r, c4, true))?;
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
                            let e = s.elem(x, Pos::at(r, c, false))?;
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
                    let e = s.elem(x, Pos::at(r, c, false))?;
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
                s.leave_row();
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
                        let e = s.elem(x, Pos::at(r, c, vec))?;
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
}
