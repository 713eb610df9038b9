//! Memory: element addresses, loads and stores of every element layout ([`Elem`]), scratch
//! buffers of values and their extents.

use super::{le, mf, shape_of, Buf, Elem, Lower, Pos, RowBase, RowScope, R};
use crate::JitError;
use cranelift::codegen::cursor::{Cursor, FuncCursor};
use cranelift::codegen::ir::{InstructionData, Opcode, ValueDef};
use cranelift::prelude::*;
use std::collections::HashMap;
use wsp_ir::kernel::{TileType, ValueId};

impl<'a, 'b> Lower<'a, 'b> {
    /// Starts a row loop's body for row `r`: the block where row addresses are hoisted to.
    /// Column loops follow; [`Self::leave_row`] ends it.
    pub(super) fn enter_row(&mut self, r: Value) {
        let pre = self.b.create_block();
        self.b.ins().jump(pre, &[]);
        self.b.seal_block(pre);
        self.b.switch_to_block(pre);
        self.rows.push(RowScope {
            r,
            pre,
            cache: HashMap::new(),
        });
    }

    pub(super) fn leave_row(&mut self) {
        self.rows.pop();
    }

    /// Whether `v` is defined in a block created before `pre` (a row loop's first block):
    /// then it is defined outside the loop, and as it is used inside, it dominates `pre`.
    fn before(&self, v: Value, pre: Block) -> bool {
        let block = match self.b.func.dfg.value_def(v) {
            ValueDef::Result(inst, _) => self.b.func.layout.inst_block(inst),
            ValueDef::Param(block, _) => Some(block),
            _ => None,
        };
        block.is_some_and(|b| b.as_u32() < pre.as_u32())
    }

    /// `ptr` as available in `pre`: itself, or `x + k` (rebuilt there) when only `x` is (a
    /// scratch buffer's address, computed where it is first used).
    fn ptr_before(&self, ptr: Value, pre: Block) -> Option<(Value, i64)> {
        if self.before(ptr, pre) {
            return Some((ptr, 0));
        }
        let ValueDef::Result(inst, 0) = self.b.func.dfg.value_def(ptr) else {
            return None;
        };
        match self.b.func.dfg.insts[inst] {
            InstructionData::Binary {
                opcode: Opcode::Iadd,
                args: [x, k],
            } if self.before(x, pre) => self.cval(k).map(|k| (x, k)),
            _ => None,
        }
    }

    /// `buf`'s address or offset of row `r`, computed once in the row loop of `r` (before its
    /// column loops), when `r` is the row of a loop being generated and its stride is a
    /// constant or computed before the loop.
    fn row_base(&mut self, buf: Buf, r: Value) -> Option<RowBase> {
        let i = self.rows.iter().rposition(|s| s.r == r)?;
        let pre = self.rows[i].pre;
        // Still in `pre` (no column loop yet, e.g. a matmul's k step): computed here, once.
        let inline = self.b.current_block() == Some(pre);
        let sh = buf.elem.shift();
        let key = (buf.ptr, buf.stride, sh);
        if let Some(x) = self.rows[i].cache.get(&key) {
            return Some(*x);
        }
        let stride = self.cval(buf.stride);
        if stride.is_none() && !inline && !self.before(buf.stride, pre) {
            return None;
        }
        if inline {
            self.b.ensure_inserted_block();
        }
        let (ptr, mut cur) = if inline {
            (
                Some((buf.ptr, 0)),
                FuncCursor::new(self.b.func).at_bottom(pre),
            )
        } else {
            let term = self.b.func.layout.last_inst(pre)?;
            (
                self.ptr_before(buf.ptr, pre),
                FuncCursor::new(self.b.func).at_inst(term),
            )
        };
        let off = match stride {
            Some(n) => cur.ins().imul_imm_s(r, n << sh),
            None => {
                let rs = cur.ins().imul(r, buf.stride);
                if sh == 0 {
                    rs
                } else {
                    cur.ins().ishl_imm_s(rs, sh)
                }
            }
        };
        let base = match ptr {
            Some((p, 0)) => RowBase::Addr(cur.ins().iadd(p, off)),
            Some((p, k)) => {
                let p = cur.ins().iadd_imm_s(p, k);
                RowBase::Addr(cur.ins().iadd(p, off))
            }
            None => RowBase::Offset(off),
        };
        self.rows[i].cache.insert(key, base);
        Some(base)
    }

    pub(super) fn addr(&mut self, buf: Buf, r: Value, c: Value) -> Value {
        if let Some(base) = self.row_base(buf, r) {
            let sh = buf.elem.shift();
            let cs = if sh == 0 {
                c
            } else {
                self.b.ins().ishl_imm_s(c, sh)
            };
            return match base {
                RowBase::Addr(a) => self.b.ins().iadd(a, cs),
                RowBase::Offset(o) => {
                    let p = self.b.ins().iadd(buf.ptr, o);
                    self.b.ins().iadd(p, cs)
                }
            };
        }
        let rs = self.b.ins().imul(r, buf.stride);
        let i = self.b.ins().iadd(rs, c);
        let sh = buf.elem.shift();
        let off = if sh == 0 {
            i
        } else {
            self.b.ins().ishl_imm_s(i, sh)
        };
        self.b.ins().iadd(buf.ptr, off)
    }

    /// Element(s) at `(r, c)` in their compute form.
    pub(super) fn load(&mut self, buf: Buf, r: Value, c: Value, vec: bool) -> Value {
        let a = self.addr(buf, r, c);
        let f = mf();
        match (buf.elem, vec) {
            (Elem::F32, false) => self.b.ins().load(types::F32, f, a, 0),
            (Elem::F32, true) => self.b.ins().load(types::F32X4, f, a, 0),
            (Elem::I32, false) => self.b.ins().load(types::I32, f, a, 0),
            (Elem::I32 | Elem::Mask32, true) => self.b.ins().load(types::I32X4, f, a, 0),
            (Elem::Mask32, false) => {
                let x = self.b.ins().load(types::I32, f, a, 0);
                self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
            }
            (Elem::F16, false) => {
                let h = self.b.ins().uload16(types::I32, f, a, 0);
                self.h2f(h, false)
            }
            (Elem::F16, true) => {
                let h = self.b.ins().uload16x4(f, a, 0);
                self.h2f(h, true)
            }
            (Elem::Bf16, _) => {
                let h = if vec {
                    self.b.ins().uload16x4(f, a, 0)
                } else {
                    self.b.ins().uload16(types::I32, f, a, 0)
                };
                let bits = self.shl_c(h, 16);
                self.as_float(bits, vec)
            }
            (Elem::Bool8, false) => {
                let x = self.b.ins().load(types::I8, f, a, 0);
                self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
            }
            (Elem::Bool8, true) => {
                let w = self.b.ins().load(types::I32, f, a, 0);
                let v = self.b.ins().scalar_to_vector(types::I32X4, w);
                let v = self.b.ins().bitcast(types::I8X16, le(), v);
                let v = self.b.ins().uwiden_low(v);
                let v = self.b.ins().uwiden_low(v);
                let z = self.ci(0, true);
                self.b.ins().icmp(IntCC::NotEqual, v, z)
            }
        }
    }

    /// Elements at rows `r..r + 4` of column `c` in their compute form (a `down` position):
    /// one vector load when the rows are adjacent in memory (a row stride of 1), else four.
    pub(super) fn load_rows(&mut self, buf: Buf, r: Value, c: Value) -> R<Value> {
        if self.cval(buf.stride) == Some(1) {
            return Ok(self.load(buf, r, c, true));
        }
        let mut out: Option<Value> = None;
        for l in 0..4u8 {
            let rl = self.iadd_imm_f(r, i64::from(l));
            let mut x = self.load(buf, rl, c, false);
            if self.b.func.dfg.value_type(x) == types::I8 {
                // A bool: its lane mask.
                let w = self.b.ins().uextend(types::I32, x);
                x = self.b.ins().ineg(w);
            }
            out = Some(match out {
                None => {
                    let t = self.b.func.dfg.value_type(x);
                    let vt = if t == types::F32 {
                        types::F32X4
                    } else {
                        types::I32X4
                    };
                    self.b.ins().splat(vt, x)
                }
                Some(v) => self.b.ins().insertlane(v, x, l),
            });
        }
        out.ok_or_else(|| self.err("an empty gather".into()))
    }

    /// Stores the value of position `p` (four lanes when `p.vec`; four rows of a column when
    /// `p.down`).
    pub(super) fn store_at(&mut self, buf: Buf, p: Pos, x: Value) {
        if !(p.vec && p.down) || self.cval(buf.stride) == Some(1) {
            self.store_el(buf, p.r, p.c, x);
            return;
        }
        let bools = matches!(buf.elem, Elem::Bool8 | Elem::Mask32);
        for l in 0..4u8 {
            let rl = self.iadd_imm_f(p.r, i64::from(l));
            let mut e = self.b.ins().extractlane(x, l);
            if bools {
                e = self.b.ins().icmp_imm_s(IntCC::NotEqual, e, 0);
            }
            self.store_el(buf, rl, p.c, e);
        }
    }

    /// Stores `x` (compute form; four lanes when it is a vector) at `(r, c)`.
    pub(super) fn store_el(&mut self, buf: Buf, r: Value, c: Value, x: Value) {
        let vec = self.b.func.dfg.value_type(x).is_vector();
        let a = self.addr(buf, r, c);
        let f = mf();
        match buf.elem {
            Elem::F32 | Elem::I32 => {
                self.b.ins().store(f, x, a, 0);
            }
            Elem::Mask32 => {
                let x = if vec {
                    x
                } else {
                    let w = self.b.ins().uextend(types::I32, x);
                    self.b.ins().ineg(w)
                };
                self.b.ins().store(f, x, a, 0);
            }
            Elem::F16 | Elem::Bf16 => {
                let bits = if buf.elem == Elem::F16 {
                    self.f2h(x, vec)
                } else {
                    let b = self.qbf_bits(x, vec);
                    self.ushr_c(b, 16)
                };
                if vec {
                    let n = self.b.ins().unarrow(bits, bits);
                    let n = self.b.ins().bitcast(types::I64X2, le(), n);
                    let w = self.b.ins().extractlane(n, 0);
                    self.b.ins().store(f, w, a, 0);
                } else {
                    self.b.ins().istore16(f, bits, a, 0);
                }
            }
            Elem::Bool8 => {
                if vec {
                    let one = self.and_c(x, 1, true);
                    let n = self.b.ins().unarrow(one, one);
                    let n = self.b.ins().unarrow(n, n);
                    let n = self.b.ins().bitcast(types::I32X4, le(), n);
                    let w = self.b.ins().extractlane(n, 0);
                    self.b.ins().store(f, w, a, 0);
                } else {
                    self.b.ins().store(f, x, a, 0);
                }
            }
        }
    }

    /// A scratch buffer of a static tile type.
    fn scratch_buf(&mut self, off: usize, t: TileType) -> R<Buf> {
        let elem = Elem::scratch(t.dtype)
            .ok_or_else(|| JitError::unsupported(self.k, format!("{} tiles", t.dtype)))?;
        let ptr = self.b.ins().iadd_imm_s(self.scratch, off as i64);
        let stride = self.iconst(i64::from(t.cols()));
        Ok(Buf { ptr, stride, elem })
    }

    pub(super) fn value_buf(&mut self, v: ValueId) -> R<(Buf, TileType)> {
        let t = shape_of(self.k, v)?.ok_or_else(|| self.err(format!("%{} is not a tile", v.0)))?;
        let off = self
            .layout
            .value_offsets
            .get(v.index())
            .copied()
            .flatten()
            .ok_or_else(|| self.err(format!("%{} has no scratch buffer", v.0)))?;
        Ok((self.scratch_buf(off, t)?, t))
    }

    pub(super) fn extent(&self, v: ValueId) -> R<(Value, Value)> {
        self.ext
            .get(v.index())
            .copied()
            .flatten()
            .ok_or_else(|| self.err(format!("tile %{} used before it is defined", v.0)))
    }
}
