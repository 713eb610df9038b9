//! Matmul: register-blocked (1 row × 16 columns, then single vectors, then scalar columns),
//! f32 accumulation.

use super::{Lower, Pos, Slot, R};
use cranelift::prelude::*;
use wsp_ir::kernel::ValueId;

impl<'a, 'b> Lower<'a, 'b> {
    pub(super) fn matmul(
        &mut self,
        v: ValueId,
        a: ValueId,
        bm: ValueId,
        acc: Option<ValueId>,
    ) -> R<()> {
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
