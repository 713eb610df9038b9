//! The function's entry: which values need buffers, the parameters loaded from the argument
//! block with their extents checked, pipe slots and queues initialised.

use super::{is_int_divrem, mf, shape_of, walk, Buf, Elem, Kind, Lower, R};
use crate::abi::ParamSlot;
use crate::JitError;
use cranelift::prelude::*;
use std::collections::HashMap;
use wsp_ir::kernel::{Op, ParamKind, Stmt, ValueId};
use wsp_ir::DType;

impl<'a, 'b> Lower<'a, 'b> {
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
        needs.extend(
            self.layout
                .kept
                .iter()
                .enumerate()
                .filter(|(_, keep)| **keep)
                .map(|(i, _)| ValueId(i as u32)),
        );
        self.defs = defs;
        for v in needs {
            if let Some(n) = self.needs_buf.get_mut(v.index()) {
                *n = true;
            }
        }
        // A parameter the kernel stores to is read from a snapshot, unless every read of it
        // comes before the store or in the store's own loop at the position written.
        let in_place = super::plan::read_in_place(k, &self.needs_buf);
        for (id, op) in self.defs.clone() {
            let buf = match op {
                Op::VarRead { .. } | Op::TPop { .. } => true,
                Op::Param { param } => {
                    stored.get(param.index()).copied().unwrap_or(false)
                        && !in_place.get(id.index()).copied().unwrap_or(false)
                }
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
}
