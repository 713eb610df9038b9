//! Statements: blocks in the interpreter's order, stores into parameters, and variables
//! (their buffers and assignments).

use super::{mf, shape_of, Buf, Elem, Lower, Slot, R};
use cranelift::prelude::*;
use wsp_ir::interp::exec_order;
use wsp_ir::kernel::{Op, ParamKind, Region, Stmt, TileType, Type as IrType, ValueId, VarId};
use wsp_ir::ScalarValue;

impl<'a, 'b> Lower<'a, 'b> {
    /// Lowers a block; runs of adjacent pipe sections in the interpreter's order (producers
    /// of a pipe before its consumers, see [`exec_order`]).
    pub fn block(&mut self, stmts: &'a [Stmt]) -> R<()> {
        for s in exec_order(stmts) {
            self.stmt(s)?;
        }
        Ok(())
    }

    pub(super) fn set_slot(&mut self, v: ValueId, s: Slot) -> R<()> {
        match self.slots.get_mut(v.index()) {
            Some(x) => {
                *x = s;
                Ok(())
            }
            None => Err(self.err(format!("value %{} does not exist", v.0))),
        }
    }

    pub(super) fn set_ext(&mut self, v: ValueId, e: (Value, Value)) {
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
        if self.is_zero_fill(value) {
            // Zero bits in every element layout: the C library's memset.
            let sh = d.elem.shift();
            let stride = self.b.ins().ishl_imm_s(d.stride, sh);
            let row_bytes = self.b.ins().ishl_imm_s(cols, sh);
            self.b
                .ins()
                .call(self.h.zero_rows, &[d.ptr, stride, rows, row_bytes]);
            return Ok(());
        }
        // Float → f16/bf16/f32 memory rounds in the store itself (once, to nearest even).
        let from = vt.dtype;
        let convert = from != dt.dtype && !(from.is_float() && dt.dtype.is_float());
        let unroll = self.unroll_for(value);
        self.tile_loop_v(rows, cols, unroll, &mut |s, p| {
            let mut x = s.elem(value, p)?;
            if convert {
                x = s.cast(x, from, dt.dtype, p.vec)?;
            }
            s.store_at(d, p, x);
            Ok(())
        })
    }

    /// Whether `v` is (still) a lazy `full` of +0, `0` or `false`.
    fn is_zero_fill(&self, v: ValueId) -> bool {
        if !matches!(self.slots.get(v.index()), Some(Slot::Lazy)) {
            return false;
        }
        let Some(Op::Full { value, .. }) = self.defs.get(&v) else {
            return false;
        };
        matches!(
            self.defs.get(value),
            Some(Op::Const { value: c, .. })
                if matches!(c, ScalarValue::Float(f) if f.to_bits() == 0)
                    || matches!(c, ScalarValue::Int(0) | ScalarValue::UInt(0) | ScalarValue::Bool(false))
        )
    }

    pub(super) fn var_buf(&mut self, var: VarId) -> R<(Buf, IrType, usize)> {
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
}
