//! One traversal of statement and expression trees, with default recursion.
//!
//! An analysis implements [`Visitor`] and overrides the methods for the nodes it cares about;
//! the default methods call the matching `walk_*` function, which visits every child in source
//! order. An override that still wants the children calls the `walk_*` function itself (before,
//! after, or around its own work — e.g. entering a scope for a `for` body). Nested blocks are
//! reached through [`Visitor::visit_block`], so an analysis that tracks loop nesting overrides
//! [`Visitor::visit_stmt`] for `For` and calls [`walk_stmt`] inside.
//!
//! ```
//! use wsp_syntax::ast::{Stmt, StmtKind};
//! use wsp_syntax::visit::{walk_stmt, Visitor};
//!
//! /// The `send` statements, however deeply nested.
//! struct Sends<'a>(Vec<&'a Stmt>);
//! impl<'a> Visitor<'a> for Sends<'a> {
//!     fn visit_stmt(&mut self, s: &'a Stmt) {
//!         if matches!(s.kind, StmtKind::Send { .. }) {
//!             self.0.push(s);
//!         }
//!         walk_stmt(self, s);
//!     }
//! }
//! ```
//!
//! The nodes are borrowed for the tree's lifetime `'a`, so a visitor may keep references to
//! them.

use crate::ast::*;

/// A traversal of statements and expressions of a tree borrowed for `'a`; every method's
/// default visits the children.
pub trait Visitor<'a> {
    fn visit_block(&mut self, b: &'a Block) {
        walk_block(self, b);
    }

    fn visit_stmt(&mut self, s: &'a Stmt) {
        walk_stmt(self, s);
    }

    fn visit_expr(&mut self, e: &'a Expr) {
        walk_expr(self, e);
    }

    /// A type written in a `let`, `var` or `pipe` (its dimensions are expressions).
    fn visit_type(&mut self, t: &'a TypeExpr) {
        walk_type(self, t);
    }
}

/// Visits each statement of `b` in order.
pub fn walk_block<'a, V: Visitor<'a> + ?Sized>(v: &mut V, b: &'a Block) {
    for s in &b.stmts {
        v.visit_stmt(s);
    }
}

/// Visits the expressions, types and blocks of `s`, in source order.
pub fn walk_stmt<'a, V: Visitor<'a> + ?Sized>(v: &mut V, s: &'a Stmt) {
    match &s.kind {
        StmtKind::Let { ty, value, .. } | StmtKind::Var { ty, value, .. } => {
            if let Some(t) = ty {
                v.visit_type(t);
            }
            v.visit_expr(value);
        }
        StmtKind::Assign { target, value, .. } => {
            v.visit_expr(target);
            v.visit_expr(value);
        }
        StmtKind::For { iter, body, .. } => {
            v.visit_expr(iter);
            v.visit_block(body);
        }
        StmtKind::When {
            branches,
            otherwise,
        } => {
            for (cond, body) in branches {
                v.visit_expr(cond);
                v.visit_block(body);
            }
            if let Some(b) = otherwise {
                v.visit_block(b);
            }
        }
        StmtKind::Send { value, .. } => v.visit_expr(value),
        StmtKind::Consume { body, .. } => v.visit_block(body),
        StmtKind::Pipe { elem, args, .. } => {
            v.visit_type(elem);
            for a in args {
                v.visit_expr(&a.value);
            }
        }
        StmtKind::Section { body, .. } => v.visit_block(body),
        StmtKind::Expr(e) => v.visit_expr(e),
        StmtKind::Error => {}
    }
}

/// Visits the sub-expressions of `e`, in source order.
pub fn walk_expr<'a, V: Visitor<'a> + ?Sized>(v: &mut V, e: &'a Expr) {
    match &e.kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Bool(_)
        | ExprKind::Name(_)
        | ExprKind::FullSlice
        | ExprKind::Error => {}
        ExprKind::Field { base, .. } => v.visit_expr(base),
        ExprKind::Unary { expr, .. } => v.visit_expr(expr),
        ExprKind::Binary { lhs, rhs, .. } => {
            v.visit_expr(lhs);
            v.visit_expr(rhs);
        }
        ExprKind::Call {
            callee,
            coords,
            args,
        } => {
            v.visit_expr(callee);
            for c in coords.iter().flatten() {
                v.visit_expr(c);
            }
            for a in args {
                v.visit_expr(&a.value);
            }
        }
        ExprKind::Index { base, indices } => {
            v.visit_expr(base);
            for i in indices {
                v.visit_expr(i);
            }
        }
        ExprKind::Range { start, end } => {
            if let Some(s) = start {
                v.visit_expr(s);
            }
            if let Some(e) = end {
                v.visit_expr(e);
            }
        }
        ExprKind::List(items) | ExprKind::Tuple(items) => {
            for i in items {
                v.visit_expr(i);
            }
        }
    }
}

/// Visits the dimension expressions of `t`.
pub fn walk_type<'a, V: Visitor<'a> + ?Sized>(v: &mut V, t: &'a TypeExpr) {
    for d in t.dims.iter().flatten() {
        v.visit_expr(&d.size);
    }
}

/// Every statement of `b`, nested ones included, in source order (pre-order).
pub fn statements(b: &Block) -> Vec<&Stmt> {
    struct All<'a>(Vec<&'a Stmt>);
    impl<'a> Visitor<'a> for All<'a> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            self.0.push(s);
            walk_stmt(self, s);
        }
        // Statements only: expressions hold none.
        fn visit_expr(&mut self, _: &'a Expr) {}
    }
    let mut all = All(Vec::new());
    all.visit_block(b);
    all.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn process_body(src: &str) -> Block {
        let p = parse(src);
        assert!(p.errors.is_empty(), "{:?}", p.errors);
        p.file
            .items
            .into_iter()
            .find_map(|i| match &i.item.kind {
                ItemKind::Process(p) => Some(p.body.clone()),
                _ => None,
            })
            .expect("a process")
    }

    const SRC: &str = "process p consumes a produces b {
    for i in P.seq(t) {
        when i < 2 { send b, k[i](x: X[i + 1]) } else { send b, i }
    }
    consume a as j {
        k[j](x: X[j * 2])
    }
}
";

    #[test]
    fn the_default_walk_reaches_every_statement_and_expression() {
        struct Count {
            stmts: usize,
            ints: Vec<u64>,
            names: Vec<String>,
        }
        impl Visitor<'_> for Count {
            fn visit_stmt(&mut self, s: &Stmt) {
                self.stmts += 1;
                walk_stmt(self, s);
            }
            fn visit_expr(&mut self, e: &Expr) {
                match &e.kind {
                    ExprKind::Int(i) => self.ints.push(*i),
                    ExprKind::Name(n) => self.names.push(n.name.clone()),
                    _ => {}
                }
                walk_expr(self, e);
            }
        }
        let body = process_body(SRC);
        let mut c = Count {
            stmts: 0,
            ints: Vec::new(),
            names: Vec::new(),
        };
        c.visit_block(&body);
        // for, when, send, send, consume, the task call statement.
        assert_eq!(c.stmts, 6);
        assert_eq!(c.ints, [2, 1, 2]);
        assert_eq!(
            c.names,
            ["P", "t", "i", "k", "i", "X", "i", "i", "k", "j", "X", "j"]
        );
        assert_eq!(statements(&body).len(), 6);
    }

    #[test]
    fn an_override_that_does_not_walk_prunes_the_subtree() {
        struct Outer(usize);
        impl Visitor<'_> for Outer {
            fn visit_block(&mut self, b: &Block) {
                self.0 += b.stmts.len();
            }
        }
        let body = process_body(SRC);
        let mut o = Outer(0);
        walk_block(&mut o, &body);
        // The two top-level statements' blocks only (the for body, the consume body).
        assert_eq!(o.0, 2);
    }
}
