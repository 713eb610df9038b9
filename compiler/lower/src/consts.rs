//! Constant evaluation: literals, constants and integer or float arithmetic on them, at
//! compile time.

use crate::{Lowerer, R};
use wsp_ir::dtype::ScalarValue;
use wsp_syntax::ast::{self, BinOp, ExprKind, UnOp};

impl Lowerer {
    /// A compile-time scalar (literals, constants, arithmetic on them).
    pub(super) fn scalar_const(&self, e: &ast::Expr) -> R<ScalarValue> {
        Ok(match &e.kind {
            ExprKind::Int(v) => match i64::try_from(*v) {
                Ok(i) => ScalarValue::Int(i),
                Err(_) => ScalarValue::UInt(*v),
            },
            ExprKind::Float(f) => ScalarValue::Float(f.0),
            ExprKind::Bool(b) => ScalarValue::Bool(*b),
            ExprKind::Name(n) => match self.consts.get(&n.name) {
                Some(v) => *v,
                None => return Err(self.unsupported(e.span, format!("`{}` as a constant", n.name))),
            },
            ExprKind::Unary {
                op: UnOp::Neg,
                expr,
            } => match self.scalar_const(expr)? {
                // As the checker folds: `-9223372036854775808` is the smallest i64, and a
                // negation without a 64-bit value is E0213 (reported there first).
                ScalarValue::Int(i) => match i.checked_neg() {
                    Some(n) => ScalarValue::Int(n),
                    None => return Err(self.no_value(e.span)),
                },
                ScalarValue::UInt(u) if u == 1 << 63 => ScalarValue::Int(i64::MIN),
                ScalarValue::Float(f) => ScalarValue::Float(-f),
                _ => return Err(self.unsupported(e.span, "this negation")),
            },
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.scalar_const(lhs)?, self.scalar_const(rhs)?);
                match (a, b) {
                    (ScalarValue::Int(a), ScalarValue::Int(b)) => {
                        let r = match op {
                            BinOp::Add => a.checked_add(b),
                            BinOp::Sub => a.checked_sub(b),
                            BinOp::Mul => a.checked_mul(b),
                            BinOp::Div => a.checked_div(b),
                            BinOp::Rem => a.checked_rem(b),
                            _ => None,
                        };
                        match (r, op) {
                            (Some(v), _) => ScalarValue::Int(v),
                            (
                                None,
                                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem,
                            ) => return Err(self.no_value(e.span)),
                            (None, _) => {
                                return Err(self.unsupported(e.span, "this constant expression"))
                            }
                        }
                    }
                    (a, b) => {
                        let (Some(x), Some(y)) = (as_f64(a), as_f64(b)) else {
                            return Err(self.unsupported(e.span, "this constant expression"));
                        };
                        ScalarValue::Float(match op {
                            BinOp::Add => x + y,
                            BinOp::Sub => x - y,
                            BinOp::Mul => x * y,
                            BinOp::Div => x / y,
                            _ => return Err(self.unsupported(e.span, "this constant expression")),
                        })
                    }
                }
            }
            _ => return Err(self.unsupported(e.span, "this constant expression")),
        })
    }

    pub(super) fn const_int(&self, e: &ast::Expr) -> R<i64> {
        match self.scalar_const(e)? {
            ScalarValue::Int(i) => Ok(i),
            _ => Err(self.unsupported(e.span, "a non-integer here")),
        }
    }
}

pub(super) fn as_f64(v: ScalarValue) -> Option<f64> {
    match v {
        ScalarValue::Float(f) => Some(f),
        ScalarValue::Int(i) => Some(i as f64),
        ScalarValue::UInt(u) => Some(u as f64),
        ScalarValue::Bool(_) => None,
    }
}
