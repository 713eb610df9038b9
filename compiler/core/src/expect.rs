//! E0212: the forms of `expect`.
//!
//! - `expect close(T, reference, rtol: r, atol: a)`: `T` is a global tensor; `reference` is a
//!   tensor or an initialiser (`load("g.npy")`, `zeros`, `ones`, `full(v)`, `random(seed: s)`,
//!   a list literal); `rtol`/`atol` are non-negative numbers (both optional, default 0).
//! - `expect STAT OP N` with `STAT` one of `total_cycles`, `tasks`, `OP` a comparison and `N` an
//!   integer constant expression.

use std::collections::BTreeMap;

use wsp_diagnostics::{Diagnostic, FileName, Label};
use wsp_syntax::ast::*;
use wsp_syntax::Span;

use crate::db::Symbol;
use crate::resolve::Scoped;
use crate::types::eval_int;
use wsp_vocab::codes;

/// Statistics an `expect` can compare.
pub const STATS: &[&str] = &["total_cycles", "tasks"];

const FORMS: &str = "write `expect close(Y, load(\"golden.npy\"), rtol: 1e-5, atol: 1e-6)` or \
                     `expect total_cycles == 4864` (statistics: `total_cycles`, `tasks`)";

struct Cx<'a> {
    file: &'a FileName,
    scope: &'a BTreeMap<String, Scoped>,
    consts: &'a BTreeMap<String, i64>,
    diags: Vec<Diagnostic>,
}

impl Cx<'_> {
    fn err(&mut self, msg: String, span: Span, label: &str, help: &str) {
        self.diags.push(
            Diagnostic::new(
                codes::E0212,
                msg,
                Label::new(self.file.clone(), span, label),
            )
            .with_help(help.to_string()),
        );
    }

    fn is_tensor(&self, e: &Expr) -> Option<bool> {
        match &e.kind {
            // Unresolved names (`None`) are reported by name resolution.
            ExprKind::Name(n) => self
                .scope
                .get(&n.name)
                .map(|s| matches!(s.symbol, Symbol::Tensor { .. })),
            _ => Some(false),
        }
    }

    fn close(&mut self, args: &[Arg], span: Span) {
        let positional: Vec<&Arg> = args.iter().filter(|a| a.name.is_none()).collect();
        if positional.len() != 2 {
            self.err(
                format!(
                    "`close` takes the tensor and its reference, found {} positional argument(s)",
                    positional.len()
                ),
                span,
                "expected `close(T, reference, rtol: .., atol: ..)`",
                FORMS,
            );
        }
        if let Some(a) = positional.first() {
            if self.is_tensor(&a.value) == Some(false) {
                self.err(
                    "the first argument of `close` must be a global tensor".into(),
                    a.value.span,
                    "not a tensor",
                    "name an `output`, `tensor` or `input`: `close(Y, load(\"y.npy\"))`",
                );
            }
        }
        if let Some(r) = positional.get(1) {
            let ok = match &r.value.kind {
                ExprKind::Name(_) => self.is_tensor(&r.value) != Some(false),
                ExprKind::List(_) => true,
                ExprKind::Call {
                    callee,
                    coords: None,
                    ..
                } => matches!(&callee.kind, ExprKind::Name(n)
                    if crate::check::INITIALISERS.contains(&n.name.as_str())),
                _ => false,
            };
            if !ok {
                self.err(
                    "the reference of `close` must be a tensor or an initialiser".into(),
                    r.value.span,
                    "not a tensor or initialiser",
                    "use a tensor, `load(\"golden.npy\")`, `zeros`, `ones`, `full(v)`, \
                     `random(seed: s)` or a list literal",
                );
            }
        }
        let mut seen = Vec::new();
        for a in args {
            let Some(n) = &a.name else { continue };
            if n.name != "rtol" && n.name != "atol" {
                self.err(
                    format!("`close` has no argument `{}`", n.name),
                    n.span,
                    "unknown argument",
                    "the tolerances are `rtol:` and `atol:`",
                );
                continue;
            }
            if seen.contains(&n.name) {
                self.err(
                    format!("`{}` is given twice", n.name),
                    n.span,
                    "repeated",
                    "give each tolerance once",
                );
            }
            seen.push(n.name.clone());
            let v = match &a.value.kind {
                ExprKind::Float(f) => Some(f.0),
                ExprKind::Int(i) => Some(*i as f64),
                _ => eval_int(&a.value, self.consts).map(|i| i as f64),
            };
            match v {
                Some(v) if v >= 0.0 && v.is_finite() => {}
                _ => self.err(
                    format!("`{}` must be a non-negative number", n.name),
                    a.value.span,
                    "not a non-negative number",
                    "write a literal such as `1e-5`",
                ),
            }
        }
    }

    fn stat(&mut self, lhs: &Expr, rhs: &Expr) {
        let ok = matches!(&lhs.kind, ExprKind::Name(n) if STATS.contains(&n.name.as_str()));
        if !ok {
            self.err(
                "an `expect` comparison needs a run statistic on the left".into(),
                lhs.span,
                "not `total_cycles` or `tasks`",
                FORMS,
            );
        }
        if eval_int(rhs, self.consts).is_none() {
            self.err(
                "a run statistic is compared with an integer constant".into(),
                rhs.span,
                "not an integer constant",
                "write an integer or a constant expression: `total_cycles <= 5000`",
            );
        }
    }
}

/// Checks one `expect` item (item-relative spans).
pub fn check_expect(
    file: &FileName,
    e: &Expect,
    scope: &BTreeMap<String, Scoped>,
    consts: &BTreeMap<String, i64>,
) -> Vec<Diagnostic> {
    let mut cx = Cx {
        file,
        scope,
        consts,
        diags: Vec::new(),
    };
    match &e.expr.kind {
        ExprKind::Call {
            callee,
            coords: None,
            args,
        } if matches!(&callee.kind, ExprKind::Name(n) if n.name == "close") => {
            cx.close(args, e.expr.span)
        }
        ExprKind::Binary {
            op: BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge,
            lhs,
            rhs,
        } => cx.stat(lhs, rhs),
        ExprKind::Error => {}
        _ => cx.err(
            "this is not a form `expect` can check".into(),
            e.expr.span,
            "unknown expectation",
            FORMS,
        ),
    }
    cx.diags
}
