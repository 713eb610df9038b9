//! Matmul: register-blocked (2 rows × 16 columns, then single vectors, then scalar columns),
//! f32 accumulation by fused multiply-adds (the host's FMA instruction where it has one,
//! else Cranelift's call of the C library's `fmaf`: the same result).

use super::{Buf, Lower, Pos, Slot, R};
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
        let m = Mm {
            out,
            a: ab,
            b: bb,
            acc,
            kk,
            vn,
            vend: self.band_imm_f(vn, !3i64),
            vend16: self.band_imm_f(vn, !15i64),
        };
        // Register blocking: 2 rows × 16 columns (eight accumulators, so that the chains of
        // dependent fused multiply-adds keep both FMA units busy), then a last odd row.
        let vm2 = self.band_imm_f(vm, !1i64);
        self.for_loop(zero, vm2, 2, &[], &mut |s, i, _| {
            let i1 = s.b.ins().iadd_imm_s(i, 1);
            s.enter_row(i);
            s.enter_row(i1);
            s.mm_rows(&m, &[i, i1])?;
            s.leave_row();
            s.leave_row();
            Ok(vec![])
        })?;
        self.for_loop(vm2, vm, 1, &[], &mut |s, i, _| {
            s.enter_row(i);
            s.mm_rows(&m, &[i])?;
            s.leave_row();
            Ok(vec![])
        })?;
        self.memo.clear();
        self.set_ext(v, (vm, vn));
        self.set_slot(v, Slot::Buf(out))
    }

    /// The rows `rows` (one or two) of a matmul's result: 16 columns at a time, then single
    /// vectors, then scalar columns.
    fn mm_rows(&mut self, m: &Mm, rows: &[Value]) -> R<()> {
        let zero = self.iconst(0);
        let init = |s: &mut Self, r: Value, c: Value, vec: bool| -> R<Value> {
            match m.acc {
                Some(cv) => {
                    s.memo.clear();
                    s.elem(cv, Pos::at(r, c, vec))
                }
                None => Ok(if vec { s.vconst(0.0) } else { s.fconst(0.0) }),
            }
        };
        for (lo, hi, width) in [
            (zero, m.vend16, 16),
            (m.vend16, m.vend, 4),
            (m.vend, m.vn, 1),
        ] {
            self.for_loop(lo, hi, width, &[], &mut |s, j, _| {
                let vec = width > 1;
                let cols: Vec<Value> = (0..width.max(4) / 4)
                    .map(|q| {
                        if q == 0 {
                            j
                        } else {
                            s.b.ins().iadd_imm_s(j, q * 4)
                        }
                    })
                    .collect();
                let mut accs = Vec::new();
                for r in rows {
                    for c in &cols {
                        accs.push(init(s, *r, *c, vec)?);
                    }
                }
                let res = s.for_loop(zero, m.kk, 1, &accs, &mut |s, k, cs| {
                    s.enter_row(k);
                    let mut avs = Vec::new();
                    for r in rows {
                        let av = s.load(m.a, *r, k, false);
                        avs.push(if vec {
                            s.b.ins().splat(types::F32X4, av)
                        } else {
                            av
                        });
                    }
                    let mut next = cs.to_vec();
                    for (q, c) in cols.iter().enumerate() {
                        let bv = s.load(m.b, k, *c, vec);
                        for (ri, av) in avs.iter().enumerate() {
                            let x = ri * cols.len() + q;
                            next[x] = s.b.ins().fma(*av, bv, cs[x]);
                        }
                    }
                    s.leave_row();
                    Ok(next)
                })?;
                for (ri, r) in rows.iter().enumerate() {
                    for (q, c) in cols.iter().enumerate() {
                        s.store_el(m.out, *r, *c, res[ri * cols.len() + q]);
                    }
                }
                Ok(vec![])
            })?;
        }
        Ok(())
    }
}

/// A matmul's buffers and bounds.
struct Mm {
    out: Buf,
    a: Buf,
    b: Buf,
    acc: Option<ValueId>,
    kk: Value,
    vn: Value,
    vend: Value,
    vend16: Value,
}
