//! Evaluation of the orchestration's scalar expressions: loop variables, affine index forms,
//! params, tensor elements and operators.

use super::{read_elem, xerr, ExecError, Machine, Thread};
use crate::dtype::ScalarValue;
use crate::workload::*;

/// A run-time scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum V {
    I(i64),
    F(f64),
    B(bool),
}

impl<'p> Machine<'p, '_> {
    fn var(&self, th: &Thread<'p>, v: LoopVar) -> Result<i64, ExecError> {
        match th.vars.get(v.index()) {
            Some(Some(x)) => Ok(*x),
            Some(None) => Err(xerr(format!(
                "in {}: loop variable `{}` is read before it is bound",
                th.name,
                th.var_names
                    .get(v.index())
                    .map(String::as_str)
                    .unwrap_or("?")
            ))),
            None => Err(xerr(format!("loop variable #{} does not exist", v.0))),
        }
    }

    pub(super) fn affine(&self, th: &Thread<'p>, a: &Affine) -> Result<i64, ExecError> {
        let mut acc = a.constant;
        for (s, c) in &a.terms {
            let v = match s {
                Sym::Var(v) => self.var(th, *v)?,
                Sym::Param(p) => match self.params.get(p.index()) {
                    Some(ScalarValue::Int(i)) => *i,
                    Some(ScalarValue::UInt(u)) => i64::try_from(*u).unwrap_or(i64::MAX),
                    _ => return Err(xerr(format!("param #{} is not an integer", p.0))),
                },
            };
            acc = v
                .checked_mul(*c)
                .and_then(|t| acc.checked_add(t))
                .ok_or_else(|| xerr("overflow in an index expression"))?;
        }
        Ok(acc)
    }

    pub(super) fn eval_int(&self, th: &Thread<'p>, e: &Expr, what: &str) -> Result<i64, ExecError> {
        match self.eval(th, e)? {
            V::I(i) => Ok(i),
            other => Err(xerr(format!(
                "in {}: {what} evaluated to {other:?}, not an integer",
                th.name
            ))),
        }
    }

    pub(super) fn eval(&self, th: &Thread<'p>, e: &Expr) -> Result<V, ExecError> {
        Ok(match e {
            Expr::Const { value } => scalar_v(*value),
            Expr::Param { param } => scalar_v(
                *self
                    .params
                    .get(param.index())
                    .ok_or_else(|| xerr(format!("param #{} does not exist", param.0)))?,
            ),
            Expr::Var { var } => V::I(self.var(th, *var)?),
            Expr::Elem { tensor, index } => {
                let idx = index
                    .iter()
                    .map(|i| self.eval_int(th, i, "a tensor index"))
                    .collect::<Result<Vec<_>, _>>()?;
                scalar_v(read_elem(self.p, self.tensors, *tensor, &idx, &th.name)?)
            }
            Expr::Neg { x } => match self.eval(th, x)? {
                V::I(i) => V::I(i.wrapping_neg()),
                V::F(f) => V::F(-f),
                V::B(_) => return Err(xerr("negation of a bool")),
            },
            Expr::Not { x } => match self.eval(th, x)? {
                V::B(b) => V::B(!b),
                _ => return Err(xerr("`!` of a number")),
            },
            Expr::Binary { op, lhs, rhs } => {
                let (a, b) = (self.eval(th, lhs)?, self.eval(th, rhs)?);
                binop(*op, a, b).map_err(|m| xerr(format!("in {}: {m}", th.name)))?
            }
        })
    }
}

/// A run-time value as the interpreter's messages show it (`I(3)`, `F(1.5)`, `B(true)`).
pub fn describe_value(v: ScalarValue) -> String {
    format!("{:?}", scalar_v(v))
}

fn scalar_v(s: ScalarValue) -> V {
    match s {
        ScalarValue::Float(f) => V::F(f),
        ScalarValue::Int(i) => V::I(i),
        ScalarValue::UInt(u) => V::I(i64::try_from(u).unwrap_or(i64::MAX)),
        ScalarValue::Bool(b) => V::B(b),
    }
}

fn binop(op: ExprOp, a: V, b: V) -> Result<V, String> {
    use ExprOp::*;
    Ok(match (a, b) {
        (V::I(x), V::I(y)) => match op {
            Add => V::I(x.wrapping_add(y)),
            Sub => V::I(x.wrapping_sub(y)),
            Mul => V::I(x.wrapping_mul(y)),
            Div | Rem if y == 0 => return Err("integer division by zero".into()),
            Div => V::I(x.wrapping_div(y)),
            Rem => V::I(x.wrapping_rem(y)),
            Min => V::I(x.min(y)),
            Max => V::I(x.max(y)),
            Eq => V::B(x == y),
            Ne => V::B(x != y),
            Lt => V::B(x < y),
            Le => V::B(x <= y),
            Gt => V::B(x > y),
            Ge => V::B(x >= y),
            And | Or => return Err("`&&`/`||` on integers".into()),
        },
        (V::B(x), V::B(y)) => match op {
            And => V::B(x && y),
            Or => V::B(x || y),
            Eq => V::B(x == y),
            Ne => V::B(x != y),
            _ => return Err(format!("{op:?} on bools")),
        },
        (V::B(_), _) | (_, V::B(_)) => return Err(format!("{op:?} mixes a bool and a number")),
        (x, y) => {
            let f = |v: V| match v {
                V::I(i) => i as f64,
                V::F(f) => f,
                V::B(_) => 0.0,
            };
            let (x, y) = (f(x), f(y));
            match op {
                Add => V::F(x + y),
                Sub => V::F(x - y),
                Mul => V::F(x * y),
                Div => V::F(x / y),
                Rem => V::F(x % y),
                Min => V::F(crate::num::minimum(x, y)),
                Max => V::F(crate::num::maximum(x, y)),
                Eq => V::B(x == y),
                Ne => V::B(x != y),
                Lt => V::B(x < y),
                Le => V::B(x <= y),
                Gt => V::B(x > y),
                Ge => V::B(x >= y),
                And | Or => return Err("`&&`/`||` on numbers".into()),
            }
        }
    })
}
