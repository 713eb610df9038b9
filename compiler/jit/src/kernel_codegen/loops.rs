//! Loops: a counted loop carrying values, and the tile loop (4 columns at a time, unrolled
//! for cheap bodies, then a scalar tail).

use super::{LoopBody, Lower, Pos, R};
use cranelift::codegen::ir::BlockArg;
use cranelift::prelude::*;

impl<'a, 'b> Lower<'a, 'b> {
    /// `for i in (start..end).step_by(step)` carrying `init` values; `body` returns the next
    /// carried values. Returns the final carried values.
    pub(super) fn for_loop(
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
            if a.saturating_add(step) >= e {
                // One iteration: the body, without a loop.
                return body(self, start, init);
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
    pub(super) fn tile_loop(
        &mut self,
        rows: Value,
        cols: Value,
        body: &mut dyn FnMut(&mut Self, Pos) -> R<()>,
    ) -> R<()> {
        self.tile_loop_unrolled(rows, cols, 1, body)
    }

    /// Runs `body` at `p` with a fresh memo (each position evaluates its values anew).
    fn visit(&mut self, body: &mut dyn FnMut(&mut Self, Pos) -> R<()>, p: Pos) -> R<()> {
        self.memo.clear();
        body(self, p)
    }

    /// A loop over `start..end` by `step` that visits `body` at `at(i)`.
    fn visit_loop(
        &mut self,
        start: Value,
        end: Value,
        step: i64,
        body: &mut dyn FnMut(&mut Self, Pos) -> R<()>,
        at: impl Fn(Value) -> Pos,
    ) -> R<()> {
        self.for_loop(start, end, step, &[], &mut |s, i, _| {
            s.visit(body, at(i))?;
            Ok(vec![])
        })?;
        Ok(())
    }

    /// A tile loop for a body that only evaluates elements ([`Self::elem`]) and stores them
    /// ([`Self::store_at`]): over a `[R, 1]` extent (constant one column) it goes four rows at
    /// a time (`down` positions), then a scalar tail; otherwise as
    /// [`Self::tile_loop_unrolled`].
    pub(super) fn tile_loop_v(
        &mut self,
        rows: Value,
        cols: Value,
        unroll: i64,
        body: &mut dyn FnMut(&mut Self, Pos) -> R<()>,
    ) -> R<()> {
        if self.cval(cols) != Some(1) {
            return self.tile_loop_unrolled(rows, cols, unroll, body);
        }
        let zero = self.iconst(0);
        let rend = self.band_imm_f(rows, !3i64);
        self.visit_loop(zero, rend, 4, body, |r| Pos {
            r,
            c: zero,
            vec: true,
            down: true,
        })?;
        self.visit_loop(rend, rows, 1, body, |r| Pos::at(r, zero, false))?;
        self.memo.clear();
        Ok(())
    }

    /// [`Self::tile_loop`] with its vector loop unrolled `unroll` times (`4·unroll` columns an
    /// iteration, then 4 at a time, then the scalar tail): for cheap bodies, whose loop
    /// overhead would otherwise be a large part of their time.
    pub(super) fn tile_loop_unrolled(
        &mut self,
        rows: Value,
        cols: Value,
        unroll: i64,
        body: &mut dyn FnMut(&mut Self, Pos) -> R<()>,
    ) -> R<()> {
        let zero = self.iconst(0);
        let vend = self.band_imm_f(cols, !3i64);
        let unroll = unroll.max(1);
        let uend = if unroll > 1 {
            self.band_imm_f(cols, !(4 * unroll - 1))
        } else {
            zero
        };
        self.for_loop(zero, rows, 1, &[], &mut |s, r, _| {
            s.enter_row(r);
            s.for_loop(zero, uend, 4 * unroll, &[], &mut |s, c, _| {
                for k in 0..unroll {
                    let ck = if k == 0 {
                        c
                    } else {
                        s.b.ins().iadd_imm_s(c, 4 * k)
                    };
                    s.visit(body, Pos::at(r, ck, true))?;
                }
                Ok(vec![])
            })?;
            s.visit_loop(uend, vend, 4, body, |c| Pos::at(r, c, true))?;
            s.visit_loop(vend, cols, 1, body, |c| Pos::at(r, c, false))?;
            s.leave_row();
            Ok(vec![])
        })?;
        self.memo.clear();
        Ok(())
    }
}
