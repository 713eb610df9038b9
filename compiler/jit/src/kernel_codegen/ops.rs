//! Operations: each op's lowering (parameters, constants, scalar arithmetic, lazy elementwise
//! tiles, slices, transpose, variable reads), their extents, and `rowtopk`.

use super::{mf, shape_of, Elem, Kind, Lower, Pos, Slot, R};
use crate::JitError;
use cranelift::prelude::*;
use wsp_ir::kernel::{Op, Type as IrType, ValueId};
use wsp_ir::tensor::El;

impl<'a, 'b> Lower<'a, 'b> {
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

    pub(super) fn op(&mut self, results: &[ValueId], op: &'a Op) -> R<()> {
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
                    self.tile_loop_unrolled(vr, vc, super::plan::UNROLL, &mut |s, p| {
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
                let x = self.eval_op(v, op, Pos::at(z, z, false))?;
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
            let unroll = self.unroll_for(v);
            self.tile_loop_v(e.0, e.1, unroll, &mut |s, p| {
                let x = s.elem(v, p)?;
                s.store_at(buf, p, x);
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
