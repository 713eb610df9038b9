//! Constants as the IR's scalars: literals, constants and integer or float arithmetic on
//! them, folded by the checker's folder (one folder for checking and lowering).

use crate::{Lowerer, R};
use wsp_core::types::{fold, Const, FoldError};
use wsp_ir::dtype::ScalarValue;
use wsp_syntax::ast;

impl Lowerer {
    /// A compile-time scalar (literals, constants, arithmetic on them), folded by the checker's
    /// own folder ([`wsp_core::types::fold`]).
    pub(super) fn scalar_const(&self, e: &ast::Expr) -> R<ScalarValue> {
        let lookup = |n: &str| {
            self.consts.get(n).map(|v| match *v {
                ScalarValue::Int(i) => Const::Int(i),
                ScalarValue::UInt(u) => Const::UInt(u),
                ScalarValue::Float(f) => Const::Float(f),
                ScalarValue::Bool(b) => Const::Bool(b),
            })
        };
        match fold(e, &lookup) {
            Ok(Const::Int(i)) => Ok(ScalarValue::Int(i)),
            Ok(Const::UInt(u)) => Ok(ScalarValue::UInt(u)),
            Ok(Const::Float(f)) => Ok(ScalarValue::Float(f)),
            Ok(Const::Bool(b)) => Ok(ScalarValue::Bool(b)),
            // Reported by the checker first (E0213); lowering stops on it too.
            Err(FoldError::NoValue(span)) => Err(self.no_value(span)),
            Err(FoldError::Name(n, span)) => {
                Err(self.unsupported(span, format!("`{n}` as a constant")))
            }
            Err(FoldError::Negation(span)) => Err(self.unsupported(span, "this negation")),
            Err(FoldError::Expression(span)) => {
                Err(self.unsupported(span, "this constant expression"))
            }
        }
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
