//! Elementwise evaluation: calls of the f32 helpers, unary, binary, comparison and cast
//! operations on compute values, the per-element evaluation of lazy values (broadcast,
//! memoised), and region indices and their bounds checks.

use super::{shape_of, Kind, Lower, Pos, Slot, R};
use crate::JitError;
use cranelift::codegen::ir::FuncRef;
use cranelift::prelude::*;
use wsp_ir::kernel::{BinaryOp, CmpOp, KIndex, Op, Region, UnaryOp, ValueId};
use wsp_ir::DType;

impl<'a, 'b> Lower<'a, 'b> {
    fn call1(&mut self, f: FuncRef, x: Value, vec: bool) -> Value {
        self.call_lanes(f, &[x], vec)
    }

    /// Calls the f32 helper `f` on one lane, or on each of four lanes.
    fn call_lanes(&mut self, f: FuncRef, xs: &[Value], vec: bool) -> Value {
        if !vec {
            let c = self.b.ins().call(f, xs);
            return self.b.inst_results(c)[0];
        }
        let mut out = self.vconst(0.0);
        for lane in 0..4u8 {
            let ls: Vec<Value> = xs
                .iter()
                .map(|x| self.b.ins().extractlane(*x, lane))
                .collect();
            let c = self.b.ins().call(f, &ls);
            let r = self.b.inst_results(c)[0];
            out = self.b.ins().insertlane(out, r, lane);
        }
        out
    }

    fn dtype(&self, v: ValueId) -> R<DType> {
        self.k
            .value_type(v)
            .map(|t| t.dtype())
            .ok_or_else(|| self.err(format!("value %{} does not exist", v.0)))
    }

    pub(super) fn kind(&self, v: ValueId) -> R<Kind> {
        let d = self.dtype(v)?;
        Kind::of(d).ok_or_else(|| JitError::unsupported(self.k, format!("{d} values")))
    }

    fn apply_unary(&mut self, op: UnaryOp, x: Value, vec: bool, kind: Kind) -> R<Value> {
        if kind != Kind::F {
            return Ok(match (op, kind) {
                (UnaryOp::Not, Kind::Bool) if vec => self.b.ins().bnot(x),
                (UnaryOp::Not, Kind::Bool) => self.b.ins().bxor_imm_s(x, 1),
                (UnaryOp::Neg, Kind::I32 | Kind::I64) => self.b.ins().ineg(x),
                (UnaryOp::Abs, Kind::I32 | Kind::I64) => self.b.ins().iabs(x),
                (UnaryOp::Relu, Kind::I32 | Kind::I64) => {
                    let z = if kind == Kind::I64 {
                        self.iconst(0)
                    } else {
                        self.ci(0, vec)
                    };
                    self.b.ins().smax(x, z)
                }
                _ => {
                    return Err(JitError::invalid(
                        self.k,
                        format!("`{}` on {kind:?} values", op.name()),
                    ))
                }
            });
        }
        let one = |s: &mut Self| s.num(1.0, vec);
        Ok(match op {
            UnaryOp::Exp => self.exp_f(x, vec),
            UnaryOp::Log => self.ln_f(x, vec),
            UnaryOp::Tanh => self.tanh_f(x, vec),
            UnaryOp::Sin => self.call1(self.h.sin, x, vec),
            UnaryOp::Cos => self.call1(self.h.cos, x, vec),
            UnaryOp::Sqrt => self.b.ins().sqrt(x),
            UnaryOp::Rsqrt => {
                let s = self.b.ins().sqrt(x);
                let o = one(self);
                self.b.ins().fdiv(o, s)
            }
            UnaryOp::Recip => {
                let o = one(self);
                self.b.ins().fdiv(o, x)
            }
            UnaryOp::Sigmoid => self.sigmoid(x, vec),
            UnaryOp::Silu => {
                let s = self.sigmoid(x, vec);
                self.b.ins().fmul(x, s)
            }
            UnaryOp::Gelu => {
                let c = self.num(0.797_884_6, vec);
                let k = self.num(0.044715, vec);
                let kx = self.b.ins().fmul(k, x);
                let kxx = self.b.ins().fmul(kx, x);
                let kxxx = self.b.ins().fmul(kxx, x);
                let s = self.b.ins().fadd(x, kxxx);
                let inner = self.b.ins().fmul(c, s);
                let t = self.tanh_f(inner, vec);
                let half = self.num(0.5, vec);
                let hx = self.b.ins().fmul(half, x);
                let o = one(self);
                let p = self.b.ins().fadd(o, t);
                self.b.ins().fmul(hx, p)
            }
            UnaryOp::Relu => {
                // maximum(x, +0) as `(x < 0 ? 0 : x) + 0`: NaN stays NaN (the comparison is
                // false), −0 becomes +0 by the addition; the selection is the pattern of x86's
                // `maxps`, two instructions instead of the general NaN- and sign-aware `fmax`.
                let z = self.num(0.0, vec);
                let neg = self.b.ins().fcmp(FloatCC::LessThan, x, z);
                let m = self.sel(neg, z, x, vec);
                self.b.ins().fadd(m, z)
            }
            UnaryOp::Abs => self.b.ins().fabs(x),
            UnaryOp::Neg => self.b.ins().fneg(x),
            UnaryOp::Not => {
                return Err(JitError::invalid(
                    self.k,
                    "`not` of a non-bool value".into(),
                ))
            }
        })
    }

    fn sigmoid(&mut self, x: Value, vec: bool) -> Value {
        let n = self.b.ins().fneg(x);
        let e = self.exp_f(n, vec);
        let one = self.num(1.0, vec);
        let d = self.b.ins().fadd(one, e);
        self.b.ins().fdiv(one, d)
    }

    fn apply_binary(&mut self, op: BinaryOp, a: Value, c: Value, vec: bool, d: DType) -> R<Value> {
        let kind = Kind::of(d).ok_or_else(|| JitError::unsupported(self.k, format!("{d}")))?;
        let bad = |s: &Self| JitError::invalid(s.k, format!("`{}` on {d} operands", op.symbol()));
        Ok(match kind {
            Kind::F => match op {
                BinaryOp::Add => self.b.ins().fadd(a, c),
                BinaryOp::Sub => self.b.ins().fsub(a, c),
                BinaryOp::Mul => self.b.ins().fmul(a, c),
                BinaryOp::Div => self.b.ins().fdiv(a, c),
                BinaryOp::Max => self.b.ins().fmax(a, c),
                BinaryOp::Min => self.b.ins().fmin(a, c),
                BinaryOp::Rem => self.call_lanes(self.h.fmod, &[a, c], vec),
                BinaryOp::Pow => self.call_lanes(self.h.pow, &[a, c], vec),
                BinaryOp::And | BinaryOp::Or => return Err(bad(self)),
            },
            Kind::I32 | Kind::I64 => match op {
                BinaryOp::Add => self.b.ins().iadd(a, c),
                BinaryOp::Sub => self.b.ins().isub(a, c),
                BinaryOp::Mul => self.b.ins().imul(a, c),
                BinaryOp::Max => self.b.ins().smax(a, c),
                BinaryOp::Min => self.b.ins().smin(a, c),
                BinaryOp::Div | BinaryOp::Rem => {
                    if !vec {
                        return self.divrem(op, a, c, d);
                    }
                    let mut out = self.ci(0, true);
                    for lane in 0..4u8 {
                        let x = self.b.ins().extractlane(a, lane);
                        let y = self.b.ins().extractlane(c, lane);
                        let r = self.divrem(op, x, y, d)?;
                        out = self.b.ins().insertlane(out, r, lane);
                    }
                    out
                }
                BinaryOp::Pow | BinaryOp::And | BinaryOp::Or => return Err(bad(self)),
            },
            Kind::Bool => match op {
                BinaryOp::And => self.b.ins().band(a, c),
                BinaryOp::Or => self.b.ins().bor(a, c),
                _ => return Err(bad(self)),
            },
        })
    }

    /// Scalar integer `/` or `%`: truncating, wrapping (`MIN / -1 = MIN`, `MIN % -1 = 0`),
    /// an error on a zero divisor.
    fn divrem(&mut self, op: BinaryOp, a: Value, c: Value, d: DType) -> R<Value> {
        let nz = self.b.ins().icmp_imm_s(IntCC::NotEqual, c, 0);
        let what = if op == BinaryOp::Div {
            "division"
        } else {
            "remainder"
        };
        self.check(nz, format!("integer {what} by zero ({d})"));
        let m1 = self.b.ins().icmp_imm_s(IntCC::Equal, c, -1);
        let ty = self.b.func.dfg.value_type(c);
        let one = self.b.ins().iconst(ty, 1);
        let dv = self.b.ins().select(m1, one, c);
        Ok(if op == BinaryOp::Div {
            let q = self.b.ins().sdiv(a, dv);
            let n = self.b.ins().ineg(a);
            self.b.ins().select(m1, n, q)
        } else {
            self.b.ins().srem(a, dv)
        })
    }

    fn apply_cmp(&mut self, op: CmpOp, a: Value, c: Value, kind: Kind) -> Value {
        if kind == Kind::F {
            let cc = match op {
                CmpOp::Eq => FloatCC::Equal,
                CmpOp::Ne => FloatCC::NotEqual,
                CmpOp::Lt => FloatCC::LessThan,
                CmpOp::Le => FloatCC::LessThanOrEqual,
                CmpOp::Gt => FloatCC::GreaterThan,
                CmpOp::Ge => FloatCC::GreaterThanOrEqual,
            };
            return self.b.ins().fcmp(cc, a, c);
        }
        // Bools compare unsigned (false < true as 0 < 1 and 0 < 0xFFFF_FFFF lane masks).
        let signed = kind != Kind::Bool;
        let cc = match (op, signed) {
            (CmpOp::Eq, _) => IntCC::Equal,
            (CmpOp::Ne, _) => IntCC::NotEqual,
            (CmpOp::Lt, true) => IntCC::SignedLessThan,
            (CmpOp::Le, true) => IntCC::SignedLessThanOrEqual,
            (CmpOp::Gt, true) => IntCC::SignedGreaterThan,
            (CmpOp::Ge, true) => IntCC::SignedGreaterThanOrEqual,
            (CmpOp::Lt, false) => IntCC::UnsignedLessThan,
            (CmpOp::Le, false) => IntCC::UnsignedLessThanOrEqual,
            (CmpOp::Gt, false) => IntCC::UnsignedGreaterThan,
            (CmpOp::Ge, false) => IntCC::UnsignedGreaterThanOrEqual,
        };
        self.b.ins().icmp(cc, a, c)
    }

    /// `cast` of a compute value from dtype `from` to `to` (the kernel IR's cast rules).
    pub(super) fn cast(&mut self, x: Value, from: DType, to: DType, vec: bool) -> R<Value> {
        let unsupported = |s: &Self| {
            JitError::unsupported(
                s.k,
                format!(
                    "cast from {from} to {to}{}",
                    if vec { " in a tile" } else { "" }
                ),
            )
        };
        let (Some(fk), Some(tk)) = (Kind::of(from), Kind::of(to)) else {
            return Err(unsupported(self));
        };
        if from == to {
            return Ok(x);
        }
        Ok(match (fk, tk) {
            // f16/bf16 values are exact in f32.
            (Kind::F, Kind::F) => self.round_to(x, to, vec),
            (Kind::F, Kind::I32) if vec => self.b.ins().fcvt_to_sint_sat(types::I32X4, x),
            (Kind::F, Kind::I32 | Kind::I64) => self.b.ins().fcvt_to_sint_sat(tk.scalar(), x),
            (Kind::F, Kind::Bool) => {
                let z = self.num(0.0, vec);
                self.b.ins().fcmp(FloatCC::NotEqual, x, z)
            }
            (Kind::I32 | Kind::I64, Kind::F) if to == DType::Bf16 => {
                // Rounded once from the exact integer (i32 → f32 → bf16 would round twice).
                if !vec {
                    let w = if fk == Kind::I32 {
                        self.b.ins().sextend(types::I64, x)
                    } else {
                        x
                    };
                    let c = self.b.ins().call(self.h.int_to_bf16, &[w]);
                    self.b.inst_results(c)[0]
                } else {
                    let mut out = self.vconst(0.0);
                    for lane in 0..4u8 {
                        let e = self.b.ins().extractlane(x, lane);
                        let w = self.b.ins().sextend(types::I64, e);
                        let c = self.b.ins().call(self.h.int_to_bf16, &[w]);
                        let r = self.b.inst_results(c)[0];
                        out = self.b.ins().insertlane(out, r, lane);
                    }
                    out
                }
            }
            (Kind::I32 | Kind::I64, Kind::F) => {
                // To f16: exact below 2^24, and larger integers round to inf either way.
                let t = if vec { types::F32X4 } else { types::F32 };
                let f = self.b.ins().fcvt_from_sint(t, x);
                self.round_to(f, to, vec)
            }
            (Kind::I32, Kind::I64) if !vec => self.b.ins().sextend(types::I64, x),
            (Kind::I64, Kind::I32) if !vec => self.b.ins().ireduce(types::I32, x),
            (Kind::I32 | Kind::I64, Kind::Bool) => {
                if vec {
                    let z = self.ci(0, true);
                    self.b.ins().icmp(IntCC::NotEqual, x, z)
                } else {
                    self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0)
                }
            }
            (Kind::Bool, Kind::F) => {
                if vec {
                    let one = self.and_c(x, i64::from(1.0f32.to_bits()), true);
                    self.as_float(one, true)
                } else {
                    let o = self.fconst(1.0);
                    let z = self.fconst(0.0);
                    self.b.ins().select(x, o, z)
                }
            }
            (Kind::Bool, Kind::I32 | Kind::I64) => {
                if vec {
                    self.and_c(x, 1, true)
                } else {
                    self.b.ins().uextend(tk.scalar(), x)
                }
            }
            _ => return Err(unsupported(self)),
        })
    }

    /// Element `pos` of value `v` (broadcasting `[R,1]`, `[1,C]` and scalars).
    pub(super) fn elem(&mut self, v: ValueId, pos: Pos) -> R<Value> {
        if let Some(x) = self.memo.get(&(v, pos.r, pos.c, pos.vec)) {
            return Ok(*x);
        }
        let x = self.elem_uncached(v, pos)?;
        self.memo.insert((v, pos.r, pos.c, pos.vec), x);
        Ok(x)
    }

    /// One lane in compute form → four equal lanes.
    fn splat(&mut self, x: Value, kind: Kind) -> R<Value> {
        Ok(match kind {
            Kind::F | Kind::I32 => self.b.ins().splat(kind.vector(), x),
            Kind::Bool => {
                let w = self.b.ins().uextend(types::I32, x);
                let m = self.b.ins().ineg(w);
                self.b.ins().splat(types::I32X4, m)
            }
            Kind::I64 => {
                return Err(JitError::unsupported(
                    self.k,
                    "i64 scalars in tile operations".into(),
                ))
            }
        })
    }

    fn elem_uncached(&mut self, v: ValueId, pos: Pos) -> R<Value> {
        let slot = *self
            .slots
            .get(v.index())
            .ok_or_else(|| self.err(format!("value %{} does not exist", v.0)))?;
        let t = shape_of(self.k, v)?;
        let kind = self.kind(v)?;
        // Broadcast the position into v's shape; the lanes stay apart where v varies along
        // them (its columns, or its rows for a `down` position).
        let (r, c, lanes_vary) = match t {
            Some(t) => {
                let r = if t.rows() == 1 { self.iconst(0) } else { pos.r };
                let c = if t.cols() == 1 { self.iconst(0) } else { pos.c };
                let vary = if pos.down {
                    t.rows() != 1
                } else {
                    t.cols() != 1
                };
                (r, c, vary)
            }
            None => (pos.r, pos.c, false),
        };
        let p = Pos {
            r,
            c,
            vec: pos.vec && lanes_vary,
            down: pos.down,
        };
        let x = match slot {
            Slot::Undef => {
                return Err(self.err(format!("value %{} used before it is defined", v.0)))
            }
            Slot::Scalar(x) => x,
            Slot::Buf(b) if p.vec && p.down => self.load_rows(b, p.r, p.c)?,
            Slot::Buf(b) => self.load(b, p.r, p.c, p.vec),
            Slot::Lazy => {
                let op = *self
                    .defs
                    .get(&v)
                    .ok_or_else(|| self.err(format!("value %{} has no definition", v.0)))?;
                self.eval_op(v, op, p)?
            }
        };
        if pos.vec && !p.vec {
            return self.splat(x, kind);
        }
        Ok(x)
    }

    /// Evaluates an elementwise op at `p` (`p` already broadcast into the op's shape).
    pub(super) fn eval_op(&mut self, v: ValueId, op: &Op, p: Pos) -> R<Value> {
        let d = self.dtype(v)?;
        match op {
            Op::Binary { op, lhs, rhs } => {
                let a = self.elem(*lhs, p)?;
                let c = self.elem(*rhs, p)?;
                let x = self.apply_binary(*op, a, c, p.vec, d)?;
                Ok(self.round_to(x, d, p.vec))
            }
            Op::Cmp { op, lhs, rhs } => {
                let kind = self.kind(*lhs)?;
                let a = self.elem(*lhs, p)?;
                let c = self.elem(*rhs, p)?;
                Ok(self.apply_cmp(*op, a, c, kind))
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                let m = self.elem(*cond, p)?;
                let a = self.elem(*on_true, p)?;
                let c = self.elem(*on_false, p)?;
                Ok(self.sel(m, a, c, p.vec))
            }
            Op::Unary { op, x } => {
                let kind = self.kind(*x)?;
                let a = self.elem(*x, p)?;
                let y = self.apply_unary(*op, a, p.vec, kind)?;
                Ok(self.round_to(y, d, p.vec))
            }
            Op::Full { value, .. } => self.elem(*value, p),
            Op::Cast { x, dtype } => {
                let from = self.dtype(*x)?;
                let a = self.elem(*x, p)?;
                self.cast(a, from, *dtype, p.vec)
            }
            Op::Iota { shape, dtype } => {
                let cols = self.iconst(i64::from(shape[1]));
                let rc = self.b.ins().imul(p.r, cols);
                let i = self.b.ins().iadd(rc, p.c);
                if p.vec {
                    let i32v = self.b.ins().ireduce(types::I32, i);
                    let s = self.b.ins().splat(types::I32X4, i32v);
                    let mut lanes = self.lane_ids();
                    if p.down {
                        // Four rows: the index steps by the row length.
                        let n = self.ci(i64::from(shape[1]), true);
                        lanes = self.b.ins().imul(lanes, n);
                    }
                    let s = self.b.ins().iadd(s, lanes);
                    self.cast(s, DType::I32, *dtype, true)
                } else {
                    self.cast(i, DType::I64, *dtype, false)
                }
            }
            Op::Slice { x, region } => {
                let (r0, c0) = self.region_start(region)?;
                let r = self.b.ins().iadd(p.r, r0);
                let c = self.b.ins().iadd(p.c, c0);
                self.elem(*x, Pos { r, c, ..p })
            }
            _ => Err(self.err(format!("value %{} is not elementwise", v.0))),
        }
    }

    fn lane_ids(&mut self) -> Value {
        let mut v = self.b.ins().iconst(types::I32, 0);
        v = self.b.ins().splat(types::I32X4, v);
        for lane in 1..4u8 {
            let x = self.b.ins().iconst(types::I32, i64::from(lane));
            v = self.b.ins().insertlane(v, x, lane);
        }
        v
    }

    fn kindex(&mut self, ix: &KIndex) -> R<Value> {
        let mut acc = self.iconst(ix.constant);
        for (v, coeff) in &ix.terms {
            let x = match self.slots.get(v.index()) {
                Some(Slot::Scalar(x)) => *x,
                _ => {
                    return Err(self.err(format!(
                        "index term %{} is not a defined integer scalar",
                        v.0
                    )))
                }
            };
            let x = match self.b.func.dfg.value_type(x) {
                types::I64 => x,
                types::I32 => self.b.ins().sextend(types::I64, x),
                _ => return Err(self.err(format!("index term %{} is not an integer", v.0))),
            };
            let m = self.b.ins().imul_imm_s(x, *coeff);
            acc = self.b.ins().iadd(acc, m);
        }
        Ok(acc)
    }

    pub(super) fn region_start(&mut self, region: &Region) -> R<(Value, Value)> {
        let r0 = self.kindex(&region.row_start)?;
        let c0 = self.kindex(&region.col_start)?;
        Ok((r0, c0))
    }

    /// Bounds check of a region against a static shape; `what` names the view.
    pub(super) fn check_region(
        &mut self,
        r0: Value,
        c0: Value,
        region: &Region,
        shape: [u32; 2],
        what: &str,
    ) {
        for (d, (s, n)) in [(r0, region.rows), (c0, region.cols)]
            .into_iter()
            .enumerate()
        {
            let lo = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, s, 0);
            let end = self.b.ins().iadd_imm_s(s, i64::from(n));
            let hi =
                self.b
                    .ins()
                    .icmp_imm_s(IntCC::SignedLessThanOrEqual, end, i64::from(shape[d]));
            let ok = self.b.ins().band(lo, hi);
            self.check(
                ok,
                format!(
                    "{} range of {what} (length {n}) is outside its static shape [{}, {}]",
                    ["row", "column"][d],
                    shape[0],
                    shape[1]
                ),
            );
        }
    }
}
