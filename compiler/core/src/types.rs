//! Types: dimensions, tile shapes through kernel operations, and task views against kernel
//! parameters.
//!
//! A dimension is a known integer or a `param` name (symbolic). Shapes that cannot be evaluated
//! are not checked (never guessed). Kernel tiles are at most 2-D; a 1-D tile `f32[N]` is the row
//! `[1, N]` for broadcasting.

use std::collections::BTreeMap;
use std::fmt;

use wsp_diagnostics::{Diagnostic, Edit, FileName, Fix, Label};
use wsp_syntax::ast::*;
use wsp_syntax::Span;
use wsp_vocab::ops::KernelFn;

use crate::db::{KernelParamSig, Symbol};
use crate::resolve::Scoped;
use wsp_vocab::codes;

mod kernels;
mod views;
pub use kernels::{check_kernel, check_kernel_linted, kernel_tile_shapes};
pub(crate) use views::expr_text;
pub use views::{check_view, view_shape};

/// One dimension: a known size or a symbolic `param`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum D {
    K(i64),
    S(String),
}

impl fmt::Display for D {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            D::K(v) => write!(f, "{v}"),
            D::S(s) => f.write_str(s),
        }
    }
}

pub fn show(dims: &[D]) -> String {
    format!(
        "[{}]",
        dims.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `[..64, 16]`: a tile shape with its partial dimensions marked.
pub fn show_partial(dims: &[D], partial: &[bool]) -> String {
    format!(
        "[{}]",
        dims.iter()
            .enumerate()
            .map(|(i, d)| if partial.get(i).copied().unwrap_or(false) {
                format!("..{d}")
            } else {
                d.to_string()
            })
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A folded compile-time constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    Int(i64),
    /// An integer literal past `i64::MAX`.
    UInt(u64),
    Float(f64),
    Bool(bool),
}

/// Why an expression did not fold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoldError<'a> {
    /// Integer arithmetic without a 64-bit value (overflow, division by zero): E0213.
    NoValue(Span),
    /// A name that is not a constant.
    Name(&'a str, Span),
    /// A negation of something that is not a number.
    Negation(Span),
    /// Any other expression (a call, a comparison, float `%`...).
    Expression(Span),
}

/// The one constant folder, shared by the checker ([`eval_int`]) and lowering: literals,
/// constants (`lookup`), negation and `+ - * / %`. Integers fold with checked 64-bit
/// arithmetic (`-9223372036854775808` is the smallest i64, written as the negation of a literal
/// one past the largest); anything else with a float folds as f64 (`%` of floats does not).
pub fn fold<'a>(
    e: &'a Expr,
    lookup: &dyn Fn(&str) -> Option<Const>,
) -> Result<Const, FoldError<'a>> {
    Ok(match &e.kind {
        ExprKind::Int(v) => match i64::try_from(*v) {
            Ok(i) => Const::Int(i),
            Err(_) => Const::UInt(*v),
        },
        ExprKind::Float(f) => Const::Float(f.0),
        ExprKind::Bool(b) => Const::Bool(*b),
        ExprKind::Name(n) => lookup(&n.name).ok_or(FoldError::Name(&n.name, e.span))?,
        ExprKind::Unary {
            op: UnOp::Neg,
            expr,
        } => match fold(expr, lookup)? {
            Const::Int(i) => Const::Int(i.checked_neg().ok_or(FoldError::NoValue(e.span))?),
            Const::UInt(u) if u == 1 << 63 => Const::Int(i64::MIN),
            Const::Float(f) => Const::Float(-f),
            _ => return Err(FoldError::Negation(e.span)),
        },
        ExprKind::Binary { op, lhs, rhs } => {
            let arith = matches!(
                op,
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem
            );
            if !arith {
                return Err(FoldError::Expression(e.span));
            }
            match (fold(lhs, lookup)?, fold(rhs, lookup)?) {
                (Const::Int(a), Const::Int(b)) => Const::Int(
                    match op {
                        BinOp::Add => a.checked_add(b),
                        BinOp::Sub => a.checked_sub(b),
                        BinOp::Mul => a.checked_mul(b),
                        BinOp::Div => a.checked_div(b),
                        _ => a.checked_rem(b),
                    }
                    .ok_or(FoldError::NoValue(e.span))?,
                ),
                (a, b) => {
                    let f = |c: Const| match c {
                        Const::Int(i) => Some(i as f64),
                        Const::UInt(u) => Some(u as f64),
                        Const::Float(f) => Some(f),
                        Const::Bool(_) => None,
                    };
                    let (Some(x), Some(y)) = (f(a), f(b)) else {
                        return Err(FoldError::Expression(e.span));
                    };
                    Const::Float(match op {
                        BinOp::Add => x + y,
                        BinOp::Sub => x - y,
                        BinOp::Mul => x * y,
                        BinOp::Div => x / y,
                        _ => return Err(FoldError::Expression(e.span)),
                    })
                }
            }
        }
        _ => return Err(FoldError::Expression(e.span)),
    })
}

/// Folds an integer constant expression ([`fold`] with integer constants; `None` when it does
/// not fold to an i64).
pub fn eval_int(e: &Expr, consts: &BTreeMap<String, i64>) -> Option<i64> {
    match fold(e, &|n| consts.get(n).map(|v| Const::Int(*v))) {
        Ok(Const::Int(i)) => Some(i),
        _ => None,
    }
}

/// Whether integer arithmetic `e` names a name for which `is` holds (a param, say).
pub fn names_any(e: &Expr, is: &impl Fn(&str) -> bool) -> bool {
    match &e.kind {
        ExprKind::Name(n) => is(&n.name),
        ExprKind::Unary { expr, .. } => names_any(expr, is),
        ExprKind::Binary { lhs, rhs, .. } => names_any(lhs, is) || names_any(rhs, is),
        _ => false,
    }
}

fn eval_dim(e: &Expr, consts: &BTreeMap<String, i64>) -> Option<D> {
    if let Some(v) = eval_int(e, consts) {
        return Some(D::K(v));
    }
    match &e.kind {
        ExprKind::Name(n) => Some(D::S(n.name.clone())),
        _ => None,
    }
}

/// The evaluated shape of a type, `None` for scalars or when a dimension cannot be evaluated.
pub fn eval_dims(ty: &TypeExpr, consts: &BTreeMap<String, i64>) -> Option<Vec<D>> {
    ty.dims
        .as_ref()?
        .iter()
        .map(|d| eval_dim(&d.size, consts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::expr_text;
    use wsp_syntax::ast::{ItemKind, StmtKind};

    /// The views of `workload w { k[0](x: VIEW) }`, quoted as messages quote them.
    fn quoted(view: &str) -> String {
        let src = format!("workload w {{ k[0](x: {view}) }}");
        let p = wsp_syntax::parse(&src);
        let ItemKind::Workload(w) = &p.file.items[0].item.kind else {
            panic!("not a workload")
        };
        let wsp_syntax::ast::WorkloadBody::Block(b) = &w.body else {
            panic!("not a block")
        };
        let StmtKind::Expr(e) = &b.stmts[0].kind else {
            panic!("not a call")
        };
        let wsp_syntax::ast::ExprKind::Call { args, .. } = &e.kind else {
            panic!("not a call")
        };
        expr_text(&args[0].value)
    }

    #[test]
    fn quoted_views_keep_the_parentheses_their_tree_needs() {
        for v in [
            "Y[(i + 1) * TS..(i + 2) * TS, :]",
            "Y[i * TS..i * TS + TS]",
            "Y[a - (b - c), a - b - c]",
            "Y[(a + b) % 4, a + b * c]",
        ] {
            assert_eq!(quoted(v), v);
        }
    }
}
