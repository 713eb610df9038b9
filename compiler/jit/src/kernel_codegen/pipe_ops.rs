//! Pipe operations: `talloc`, `tpush` and `tpop` on a pipe's ring of slots in the scratch
//! frame, with the interpreter's run-time checks.

use super::{mf, Lower, Slot, R};
use crate::abi::PipeLayout;
use cranelift::prelude::*;
use wsp_ir::kernel::{PipeId, ValueId, VarId};

impl<'a, 'b> Lower<'a, 'b> {
    pub(super) fn pipe(&self, p: PipeId) -> R<(PipeLayout, String)> {
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
    pub(super) fn talloc(&mut self, pipe: PipeId, slot: VarId) -> R<()> {
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
    pub(super) fn tpush(&mut self, pipe: PipeId, slot: VarId) -> R<()> {
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
    pub(super) fn tpop(&mut self, v: ValueId, pipe: PipeId) -> R<()> {
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
    pub(super) fn check_holds_value(&mut self, var: VarId, off: usize, message: String) {
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
}
