//! Affine index forms over loop variables and params, and the run-time scalar expressions of
//! workloads (loop bounds, conditions, task coordinates, scalar arguments).

use crate::{is_name, Lowerer, R};
use std::collections::BTreeMap;
use wsp_diagnostics::{Diagnostic, Label};
use wsp_ir::dtype::ScalarValue;
use wsp_ir::workload as w;
use wsp_syntax::ast::{self, BinOp, ExprKind, UnOp};
use wsp_vocab::codes;

impl Lowerer {
    pub(super) fn affine(
        &self,
        e: &ast::Expr,
        vars: &BTreeMap<String, w::LoopVar>,
    ) -> R<w::Affine> {
        if let Ok(ScalarValue::Int(c)) = self.scalar_const(e) {
            return Ok(w::Affine::constant(c));
        }
        match &e.kind {
            ExprKind::Name(n) => {
                if let Some(v) = vars.get(&n.name) {
                    Ok(w::Affine::var(*v))
                } else if let Some(p) = self.params.get(&n.name) {
                    Ok(w::Affine::param(*p))
                } else {
                    Err(self.unsupported(e.span, format!("`{}` in an index", n.name)))
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.affine(lhs, vars)?;
                let b = self.affine(rhs, vars)?;
                let r = match op {
                    BinOp::Add => add(a, b, 1),
                    BinOp::Sub => add(a, b, -1),
                    BinOp::Mul if a.terms.is_empty() => scale(b, a.constant),
                    BinOp::Mul if b.terms.is_empty() => scale(a, b.constant),
                    _ => return Err(self.unsupported(e.span, "a non-affine index")),
                };
                // The checker reports this (E0213); a program that reached lowering without
                // the check gets the same error, never a wrapped index.
                r.ok_or_else(|| {
                    Diagnostic::new(
                        codes::E0213,
                        "integer overflow in an index expression",
                        Label::new(
                            self.file.clone(),
                            e.span.shift(self.offset),
                            "a coefficient outside the 64-bit integer range",
                        ),
                    )
                })
            }
            _ => Err(self.unsupported(e.span, "this index expression")),
        }
    }

    /// A run-time scalar expression of a workload.
    pub(super) fn rexpr(&self, e: &ast::Expr, vars: &BTreeMap<String, w::LoopVar>) -> R<w::Expr> {
        Ok(match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => w::Expr::Const {
                value: self.scalar_const(e)?,
            },
            ExprKind::Name(n) => {
                if let Some(v) = vars.get(&n.name) {
                    w::Expr::Var { var: *v }
                } else if let Some(p) = self.params.get(&n.name) {
                    w::Expr::Param { param: *p }
                } else if let Some(c) = self.consts.get(&n.name) {
                    w::Expr::Const { value: *c }
                } else {
                    return Err(self.unsupported(e.span, format!("`{}` in an expression", n.name)));
                }
            }
            ExprKind::Index { base, indices } => {
                let ExprKind::Name(n) = &base.kind else {
                    return Err(self.unsupported(e.span, "this element read"));
                };
                let Some(t) = self.tensors.get(&n.name) else {
                    return Err(self.unsupported(e.span, "this element read"));
                };
                w::Expr::Elem {
                    tensor: *t,
                    index: indices
                        .iter()
                        .map(|i| self.rexpr(i, vars))
                        .collect::<R<Vec<_>>>()?,
                }
            }
            ExprKind::Unary { op, expr } => {
                let x = Box::new(self.rexpr(expr, vars)?);
                match op {
                    UnOp::Neg => w::Expr::Neg { x },
                    UnOp::Not => w::Expr::Not { x },
                }
            }
            ExprKind::Binary { op, lhs, rhs } => w::Expr::Binary {
                op: expr_op(*op),
                lhs: Box::new(self.rexpr(lhs, vars)?),
                rhs: Box::new(self.rexpr(rhs, vars)?),
            },
            ExprKind::Call {
                callee,
                coords: None,
                args,
            } if args.len() == 2 && (is_name(callee, "min") || is_name(callee, "max")) => {
                w::Expr::Binary {
                    op: if is_name(callee, "min") {
                        w::ExprOp::Min
                    } else {
                        w::ExprOp::Max
                    },
                    lhs: Box::new(self.rexpr(&args[0].value, vars)?),
                    rhs: Box::new(self.rexpr(&args[1].value, vars)?),
                }
            }
            _ => return Err(self.unsupported(e.span, "this expression in a workload")),
        })
    }
}

/// `a + s·b` (a symbol's terms merged, as the checker folds them), or `None` when a
/// coefficient leaves the 64-bit range.
fn add(a: w::Affine, b: w::Affine, s: i64) -> Option<w::Affine> {
    let mut terms = a.terms;
    for (v, c) in b.terms {
        let c = c.checked_mul(s)?;
        match terms.iter_mut().find(|(u, _)| *u == v) {
            Some((_, t)) => *t = t.checked_add(c)?,
            None => terms.push((v, c)),
        }
    }
    Some(w::Affine {
        constant: a.constant.checked_add(s.checked_mul(b.constant)?)?,
        terms,
    })
}

/// `s·a`, or `None` when a coefficient leaves the 64-bit range.
fn scale(a: w::Affine, s: i64) -> Option<w::Affine> {
    let mut terms = Vec::with_capacity(a.terms.len());
    for (v, c) in a.terms {
        terms.push((v, c.checked_mul(s)?));
    }
    Some(w::Affine {
        constant: a.constant.checked_mul(s)?,
        terms,
    })
}

pub(super) fn expr_op(op: BinOp) -> w::ExprOp {
    match op {
        BinOp::Add => w::ExprOp::Add,
        BinOp::Sub => w::ExprOp::Sub,
        BinOp::Mul => w::ExprOp::Mul,
        BinOp::Div => w::ExprOp::Div,
        BinOp::Rem => w::ExprOp::Rem,
        BinOp::Eq => w::ExprOp::Eq,
        BinOp::Ne => w::ExprOp::Ne,
        BinOp::Lt => w::ExprOp::Lt,
        BinOp::Le => w::ExprOp::Le,
        BinOp::Gt => w::ExprOp::Gt,
        BinOp::Ge => w::ExprOp::Ge,
        BinOp::And => w::ExprOp::And,
        BinOp::Or => w::ExprOp::Or,
    }
}
