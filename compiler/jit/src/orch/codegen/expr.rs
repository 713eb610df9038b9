//! Expressions: loop variables, params, affine indices (checked as the interpreter's),
//! constants, and scalar expressions with their operators.

use super::{Gen, R};
use crate::orch::{Fail, Ty};
use cranelift::prelude::*;
use wsp_ir::workload::*;
use wsp_ir::ScalarValue;

impl Gen<'_, '_> {
    fn var_name(&self, v: LoopVar) -> String {
        self.var_names
            .get(v.index())
            .cloned()
            .unwrap_or_else(|| "?".into())
    }

    fn var(&mut self, v: LoopVar) -> R<Value> {
        if v.index() >= self.nvars() {
            return Err(format!("loop variable #{} does not exist", v.0));
        }
        if let Some((vars, base, filled)) = &self.gen {
            if let Some(pos) = vars.iter().position(|x| *x == v) {
                if pos < *filled {
                    let s = base + pos;
                    return Ok(self.ld(s));
                }
                return Err(format!(
                    "a loop iterator reads `{}`, a variable the same loop binds later",
                    self.var_name(v)
                ));
            }
        }
        if !self.bound[v.index()] {
            let f = self.flag_slot(v.index());
            let flag = self.ld(f);
            let unbound = self.b.ins().icmp_imm_s(IntCC::Equal, flag, 0);
            let z = self.c(0);
            self.fail_if(unbound, Fail::Unbound(self.var_name(v)), z, z);
        }
        let s = self.val_slot(v.index());
        Ok(self.ld(s))
    }

    fn param_int(&mut self, p: ProgParamId) -> Option<i64> {
        match self.f.params.get(p.index()) {
            Some(ScalarValue::Int(i)) => Some(*i),
            Some(ScalarValue::UInt(u)) => Some(i64::try_from(*u).unwrap_or(i64::MAX)),
            _ => None,
        }
    }

    /// An affine index: checked arithmetic as the interpreter's (overflow is an error).
    pub(super) fn affine(&mut self, a: &Affine) -> R<Value> {
        let mut acc = self.c(a.constant);
        for (s, c) in &a.terms {
            let v = match s {
                Sym::Var(v) => self.var(*v)?,
                Sym::Param(p) => match self.param_int(*p) {
                    Some(x) => self.c(x),
                    None => {
                        self.fail0(Fail::Plain(format!("param #{} is not an integer", p.0)));
                        self.c(0)
                    }
                },
            };
            let k = self.c(*c);
            let (t, o1) = self.b.ins().smul_overflow(v, k);
            let (sum, o2) = self.b.ins().sadd_overflow(acc, t);
            let o = self.b.ins().bor(o1, o2);
            let z = self.c(0);
            self.fail_if(
                o,
                Fail::Plain("overflow in an index expression".into()),
                z,
                z,
            );
            acc = sum;
        }
        Ok(acc)
    }

    fn scalar_const(&mut self, v: ScalarValue) -> (Ty, Value) {
        match v {
            ScalarValue::Int(i) => (Ty::I, self.c(i)),
            ScalarValue::UInt(u) => (Ty::I, self.c(i64::try_from(u).unwrap_or(i64::MAX))),
            ScalarValue::Float(f) => (Ty::F, self.b.ins().f64const(f)),
            ScalarValue::Bool(b) => (Ty::B, self.c(i64::from(b))),
        }
    }

    /// The value as i64 bits (floats by their bits), for the host.
    pub(super) fn bits(&mut self, ty: Ty, v: Value) -> Value {
        match ty {
            Ty::F => self.b.ins().bitcast(types::I64, MemFlagsData::new(), v),
            Ty::I | Ty::B => v,
        }
    }

    pub fn expr(&mut self, e: &Expr) -> R<(Ty, Value)> {
        Ok(match e {
            Expr::Const { value } => self.scalar_const(*value),
            Expr::Param { param } => match self.f.params.get(param.index()) {
                Some(v) => self.scalar_const(*v),
                None => return Err(format!("param #{} does not exist", param.0)),
            },
            Expr::Var { var } => (Ty::I, self.var(*var)?),
            Expr::Elem { tensor, index } => {
                let (ty, _) = *self
                    .f
                    .tensors
                    .get(tensor.index())
                    .ok_or_else(|| format!("tensor #{} does not exist", tensor.0))?;
                let base = self.alloc(index.len() + 1);
                for (i, x) in index.iter().enumerate() {
                    let v = self.int(x, "a tensor index")?;
                    self.st(base + 1 + i, v);
                }
                let t = self.c(i64::from(tensor.0));
                let ip = self.slot_addr(base + 1);
                let n = self.c(index.len() as i64);
                let out = self.slot_addr(base);
                self.checked(self.cb.elem, &[t, ip, n, out]);
                let v = self.ld(base);
                match ty {
                    Ty::F => (
                        Ty::F,
                        self.b.ins().bitcast(types::F64, MemFlagsData::new(), v),
                    ),
                    t => (t, v),
                }
            }
            Expr::Neg { x } => match self.expr(x)? {
                (Ty::I, v) => (Ty::I, self.b.ins().ineg(v)),
                (Ty::F, v) => (Ty::F, self.b.ins().fneg(v)),
                (Ty::B, v) => {
                    self.fail0(Fail::Plain("negation of a bool".into()));
                    (Ty::B, v)
                }
            },
            Expr::Not { x } => match self.expr(x)? {
                (Ty::B, v) => (Ty::B, self.b.ins().bxor_imm_s(v, 1)),
                (t, v) => {
                    self.fail0(Fail::Plain("`!` of a number".into()));
                    (t, v)
                }
            },
            Expr::Binary { op, lhs, rhs } => {
                let a = self.expr(lhs)?;
                let b = self.expr(rhs)?;
                self.binop(*op, a, b)
            }
        })
    }

    fn binop(&mut self, op: ExprOp, (ta, a): (Ty, Value), (tb, b): (Ty, Value)) -> (Ty, Value) {
        use ExprOp::*;
        let bool_of = |g: &mut Self, c: Value| (Ty::B, g.b.ins().uextend(types::I64, c));
        match (ta, tb) {
            (Ty::I, Ty::I) => {
                let ins = |g: &mut Self, cc: IntCC| {
                    let c = g.b.ins().icmp(cc, a, b);
                    bool_of(g, c)
                };
                match op {
                    Add => (Ty::I, self.b.ins().iadd(a, b)),
                    Sub => (Ty::I, self.b.ins().isub(a, b)),
                    Mul => (Ty::I, self.b.ins().imul(a, b)),
                    Div | Rem => {
                        let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
                        let z = self.c(0);
                        self.fail_if(
                            zero,
                            Fail::InThread("integer division by zero".into()),
                            z,
                            z,
                        );
                        // Wrapping: x / −1 is −x (and x % −1 is 0) without trapping.
                        let m1 = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
                        let one = self.c(1);
                        let safe = self.b.ins().select(m1, one, b);
                        if op == Div {
                            let q = self.b.ins().sdiv(a, safe);
                            let n = self.b.ins().ineg(a);
                            (Ty::I, self.b.ins().select(m1, n, q))
                        } else {
                            let r = self.b.ins().srem(a, safe);
                            (Ty::I, self.b.ins().select(m1, z, r))
                        }
                    }
                    Min => (Ty::I, self.b.ins().smin(a, b)),
                    Max => (Ty::I, self.b.ins().smax(a, b)),
                    Eq => ins(self, IntCC::Equal),
                    Ne => ins(self, IntCC::NotEqual),
                    Lt => ins(self, IntCC::SignedLessThan),
                    Le => ins(self, IntCC::SignedLessThanOrEqual),
                    Gt => ins(self, IntCC::SignedGreaterThan),
                    Ge => ins(self, IntCC::SignedGreaterThanOrEqual),
                    And | Or => {
                        self.fail0(Fail::InThread("`&&`/`||` on integers".into()));
                        (Ty::I, a)
                    }
                }
            }
            (Ty::B, Ty::B) => match op {
                And => (Ty::B, self.b.ins().band(a, b)),
                Or => (Ty::B, self.b.ins().bor(a, b)),
                Eq => {
                    let c = self.b.ins().icmp(IntCC::Equal, a, b);
                    bool_of(self, c)
                }
                Ne => {
                    let c = self.b.ins().icmp(IntCC::NotEqual, a, b);
                    bool_of(self, c)
                }
                _ => {
                    self.fail0(Fail::InThread(format!("{op:?} on bools")));
                    (Ty::B, a)
                }
            },
            (Ty::B, _) | (_, Ty::B) => {
                self.fail0(Fail::InThread(format!("{op:?} mixes a bool and a number")));
                (Ty::B, self.c(0))
            }
            _ => {
                let f = |g: &mut Self, t: Ty, v: Value| match t {
                    Ty::I => g.b.ins().fcvt_from_sint(types::F64, v),
                    _ => v,
                };
                let (x, y) = (f(self, ta, a), f(self, tb, b));
                let cmp = |g: &mut Self, cc: FloatCC| {
                    let c = g.b.ins().fcmp(cc, x, y);
                    bool_of(g, c)
                };
                match op {
                    Add => (Ty::F, self.b.ins().fadd(x, y)),
                    Sub => (Ty::F, self.b.ins().fsub(x, y)),
                    Mul => (Ty::F, self.b.ins().fmul(x, y)),
                    Div => (Ty::F, self.b.ins().fdiv(x, y)),
                    Rem => (Ty::F, self.call(self.cb.fmod, &[x, y])),
                    Min => (Ty::F, self.call(self.cb.fmin, &[x, y])),
                    Max => (Ty::F, self.call(self.cb.fmax, &[x, y])),
                    Eq => cmp(self, FloatCC::Equal),
                    Ne => cmp(self, FloatCC::NotEqual),
                    Lt => cmp(self, FloatCC::LessThan),
                    Le => cmp(self, FloatCC::LessThanOrEqual),
                    Gt => cmp(self, FloatCC::GreaterThan),
                    Ge => cmp(self, FloatCC::GreaterThanOrEqual),
                    And | Or => {
                        self.fail0(Fail::InThread("`&&`/`||` on numbers".into()));
                        (Ty::F, x)
                    }
                }
            }
        }
    }

    /// An integer expression (`what` names it in the error when it is not one).
    pub(super) fn int(&mut self, e: &Expr, what: &'static str) -> R<Value> {
        let (t, v) = self.expr(e)?;
        if t != Ty::I {
            let k = self.c(t as i64);
            let bits = self.bits(t, v);
            self.fail(Fail::NotInt(what), k, bits);
            return Ok(self.c(0));
        }
        Ok(v)
    }
}
