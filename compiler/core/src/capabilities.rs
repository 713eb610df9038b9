//! Capability checks: what a program loses on a target backend (`wsp check --target X`).
//!
//! The support of every schedule directive form, kernel operation family and CSP feature is
//! declared once, in `wsp_arch::capabilities::MATRIX`. This module finds the uses of those
//! features in an item and reports, for the backend the driver chose ([`Target`], an input of
//! the [`FileSet`](crate::db::FileSet)):
//!
//! * `W0710` (warning) for a use the backend records or diagnoses instead of enforcing;
//! * `E0711` (error) for the same use under `--strict` — a distinct code, because a code's
//!   severity is fixed by its first letter;
//! * `E0712` (error) for a use the backend does not support at all.
//!
//! With no target set nothing is reported. A kernel reports each operation family once, at its
//! first use; schedules, channels, processes and `replicate` report every use.

use std::collections::BTreeMap;
use std::sync::Arc;

use wsp_arch::capabilities::{self as caps, Backend, CapabilityTable, Support};
use wsp_diagnostics::{Diagnostic, FileName, Label};
use wsp_syntax::ast::{self, BinOp, Expr, ExprKind, ItemKind, KernelBody, Stmt, StmtKind, UnOp};
use wsp_syntax::visit::{walk_expr, walk_stmt, Visitor};
use wsp_syntax::Span;

use crate::db::{item_ast, Db, ItemId};
use wsp_vocab::codes;

/// The backend a program is checked for, and whether losses are errors. The backend is its
/// capability column: a built-in backend's comes from the matrix
/// ([`CapabilityTable::builtin`]), an external backend declares its own.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    pub table: Arc<CapabilityTable>,
    pub strict: bool,
}

impl Target {
    /// The target of a built-in backend.
    pub fn builtin(backend: Backend, strict: bool) -> Target {
        Target {
            table: Arc::new(CapabilityTable::builtin(backend)),
            strict,
        }
    }

    /// The built-in backend checked for, when the target is one.
    pub fn backend(&self) -> Option<Backend> {
        self.table.builtin_backend()
    }
}

/// The capability diagnostics of one item, with item-relative spans (empty without a target).
#[salsa::tracked(returns(ref))]
pub fn item_capabilities<'db>(db: &'db dyn Db, item: ItemId<'db>) -> Vec<Diagnostic> {
    let Some(target) = db.file_set().target(db).clone() else {
        return Vec::new();
    };
    let ast = item_ast(db, item);
    let file = FileName::new(item.file(db).path(db).as_str());
    let mut out: Vec<Diagnostic> = uses(&ast.kind)
        .into_iter()
        .filter_map(|(key, span)| diagnose(&file, &target, key, span))
        .collect();
    if let ItemKind::Kernel(k) = &ast.kind {
        out.extend(extern_without_implementation(&file, target.table.name(), k));
    }
    out
}

/// E0714: an extern kernel that says nothing of how `backend` runs it. The simulator needs
/// `sim: reference`; another backend its own source file (`ascend: "k.cpp"`), or the
/// reference's `.wsp` body, which every backend lowers.
pub fn extern_without_implementation(
    file: &FileName,
    backend: &str,
    k: &ast::Kernel,
) -> Option<Diagnostic> {
    let KernelBody::Extern(bindings) = &k.body else {
        return None;
    };
    let has = |t: &str| bindings.iter().any(|b| b.target.name == t);
    let file_for = |t: &str| {
        bindings
            .iter()
            .any(|b| b.target.name == t && b.path().is_some())
    };
    if has("sim") || file_for(backend) {
        return None;
    }
    let name = &k.name.name;
    let help = if backend == "sim" {
        format!("add `sim: {name}_ref`, a `.wsp` kernel with the same parameters that the simulator runs in its place")
    } else {
        format!("add `{backend}: \"{name}.cpp\"` (the backend's source file), or `sim: {name}_ref` (a `.wsp` kernel with the same parameters, which every backend lowers)")
    };
    Some(
        Diagnostic::new(
            codes::E0714,
            format!("the `{backend}` backend has no implementation of the extern kernel `{name}`"),
            Label::new(
                file.clone(),
                k.extern_span.unwrap_or(k.name.span),
                "no implementation here",
            ),
        )
        .with_help(help),
    )
}

/// The features an item uses: (matrix key, span of the use), in source order.
pub fn uses(kind: &ItemKind) -> Vec<(&'static str, Span)> {
    let mut out = Vec::new();
    match kind {
        ItemKind::Schedule(s) => {
            for d in &s.directives {
                let name = d.name.name.as_str();
                let takes_policy = wsp_vocab::schedule::Directive::from_name(name)
                    .is_some_and(|d| d.arg() == wsp_vocab::schedule::DirectiveArg::Policy);
                let (key, span) = if takes_policy {
                    let Some(policy) = d.args.first().and_then(|a| policy_name(&a.value)) else {
                        continue;
                    };
                    (
                        wsp_vocab::schedule::capability_key(name, Some(&policy.name)),
                        policy.span,
                    )
                } else {
                    (wsp_vocab::schedule::capability_key(name, None), d.name.span)
                };
                // Unknown directives and policies are the checker's errors (E0602, E0604).
                if let Some(key) = key {
                    out.push((key, span));
                }
            }
        }
        ItemKind::Kernel(k) => {
            if let KernelBody::Block(b) = &k.body {
                let mut first = KernelFeatures(BTreeMap::new());
                first.visit_block(b);
                let mut v: Vec<_> = first.0.into_iter().collect();
                v.sort_by_key(|(k, s)| (s.start, *k));
                out.extend(v);
            }
        }
        ItemKind::Channel(c) => {
            out.push(("csp.channel", c.name.span));
            for a in &c.args {
                match a.name.as_ref().map(|n| n.name.as_str()) {
                    Some("depth") if matches!(a.value.kind, ExprKind::Int(0)) => {
                        out.push(("csp.rendezvous", a.span))
                    }
                    Some("latency") => out.push(("csp.latency", a.span)),
                    _ => {}
                }
            }
        }
        ItemKind::Process(p) => {
            out.push(("csp.process", p.name.span));
            Replicates(&mut out).visit_block(&p.body);
        }
        ItemKind::Workload(w) => match &w.body {
            ast::WorkloadBody::Expr(e) => Replicates(&mut out).visit_expr(e),
            ast::WorkloadBody::Block(b) => {
                Replicates(&mut out).visit_block(b);
                for (name, _) in crate::locals::local_tensors(b) {
                    out.push(("workload.local_tensor", name.span));
                }
                out.sort_by_key(|(_, s)| s.start);
            }
        },
        _ => {}
    }
    out
}

fn policy_name(e: &Expr) -> Option<&ast::Ident> {
    match &e.kind {
        ExprKind::Name(n) => Some(n),
        ExprKind::Call { callee, .. } => match &callee.kind {
            ExprKind::Name(n) => Some(n),
            _ => None,
        },
        _ => None,
    }
}

/// The capability-matrix key of a kernel function's operation family.
fn family(name: &str) -> Option<&'static str> {
    wsp_vocab::ops::KernelFn::from_name(name).map(|f| f.family().capability_key())
}

fn note(out: &mut BTreeMap<&'static str, Span>, key: &'static str, span: Span) {
    out.entry(key)
        .and_modify(|s| {
            if span.start < s.start {
                *s = span
            }
        })
        .or_insert(span);
}

/// The first use of each kernel capability in a kernel body (written types are not looked
/// into: their dimensions are constant arithmetic, not tile operations).
struct KernelFeatures(BTreeMap<&'static str, Span>);

impl<'a> Visitor<'a> for KernelFeatures {
    fn visit_stmt(&mut self, s: &'a Stmt) {
        match &s.kind {
            StmtKind::Assign { op: Some(_), .. } => note(&mut self.0, "kernel.elementwise", s.span),
            StmtKind::Pipe { name, .. } => {
                note(&mut self.0, "kernel.pipe", name.span);
                // Its element type and arguments are constants.
                return;
            }
            StmtKind::Section { kind_span, .. } => note(&mut self.0, "kernel.section", *kind_span),
            _ => {}
        }
        walk_stmt(self, s);
    }

    fn visit_expr(&mut self, e: &'a Expr) {
        match &e.kind {
            ExprKind::Binary { op, .. } => {
                let key = match op {
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                        "kernel.elementwise"
                    }
                    _ => "kernel.select_compare",
                };
                note(&mut self.0, key, e.span);
            }
            ExprKind::Unary { op, .. } => {
                let key = match op {
                    UnOp::Neg => "kernel.elementwise",
                    _ => "kernel.select_compare",
                };
                note(&mut self.0, key, e.span);
            }
            ExprKind::Call { callee, .. } => {
                if let ExprKind::Name(n) = &callee.kind {
                    if let Some(key) = family(&n.name) {
                        note(&mut self.0, key, n.span);
                    }
                }
            }
            _ => {}
        }
        walk_expr(self, e);
    }

    fn visit_type(&mut self, _: &'a ast::TypeExpr) {}
}

/// Every `replicate(...)` call.
struct Replicates<'o>(&'o mut Vec<(&'static str, Span)>);

impl<'a> Visitor<'a> for Replicates<'_> {
    fn visit_expr(&mut self, e: &'a Expr) {
        if let ExprKind::Call { callee, .. } = &e.kind {
            if let ExprKind::Name(n) = &callee.kind {
                if n.name == "replicate" {
                    self.0.push(("csp.replicate", n.span));
                }
            }
        }
        walk_expr(self, e);
    }
}

/// The diagnostic for one use, if the backend does not enforce it.
fn diagnose(file: &FileName, target: &Target, key: &str, span: Span) -> Option<Diagnostic> {
    let cap = caps::capability(key)?;
    let entry = target.table.entry(key)?;
    let backend = target.table.name();
    let enforced_on: Vec<&str> = Backend::ALL
        .into_iter()
        .filter(|b| cap.on(*b).support == Support::Enforced)
        .map(|b| b.name())
        .collect();
    let elsewhere = if enforced_on.is_empty() {
        "no backend enforces it".to_string()
    } else {
        format!("enforced on: {}", enforced_on.join(", "))
    };
    let what = cap.written;
    let d = match entry.support {
        Support::Enforced => return None,
        Support::Unsupported => Diagnostic::new(
            codes::E0712,
            format!("{what} is not supported on the `{backend}` backend"),
            Label::new(file.clone(), span, format!("unsupported on {backend}")),
        )
        .with_note(format!("{backend}: {}", entry.reason))
        .with_help(format!(
            "remove it or check for another backend ({elsewhere})"
        )),
        s @ (Support::Recorded | Support::Diagnosed) => {
            let (code, message, help) = if target.strict {
                (
                    codes::E0711,
                    format!("{what} is only {s} on the `{backend}` backend (`--strict`)"),
                    format!(
                        "remove it, or check without `--strict` to accept the loss ({elsewhere})"
                    ),
                )
            } else {
                (
                    codes::W0710,
                    format!("{what} is only {s} on the `{backend}` backend"),
                    format!("remove it to silence this, or keep it for the backends that enforce it ({elsewhere}); `--strict` makes this an error"),
                )
            };
            Diagnostic::new(
                code,
                message,
                Label::new(
                    file.clone(),
                    span,
                    format!("{s}, not enforced, on {backend}"),
                ),
            )
            .with_note(format!("{backend}: {}", entry.reason))
            .with_help(help)
        }
    };
    Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item_uses(src: &str) -> Vec<&'static str> {
        let parse = wsp_syntax::parse(src);
        parse
            .file
            .items
            .iter()
            .flat_map(|n| uses(&n.item.kind))
            .map(|(k, _)| k)
            .collect()
    }

    #[test]
    fn finds_schedule_kernel_and_csp_uses() {
        assert_eq!(
            item_uses("schedule s = w .dispatch(hash(b)) .timing(batched(8)) .task_window(4) .ready(teleport)"),
            ["dispatch.hash", "timing.batched", "task_window"]
        );
        assert_eq!(
            item_uses(
                "kernel k(a: in f32[8, 8], o: out f32[8, 8]) { let t = transpose(a)\n o = matmul(t, a) + rowsum(a) }"
            ),
            ["kernel.transpose", "kernel.elementwise", "kernel.matmul", "kernel.reduction"]
        );
        assert_eq!(
            item_uses("channel c: Channel[depth: 0, latency: 5]"),
            ["csp.channel", "csp.rendezvous", "csp.latency"]
        );
        assert_eq!(
            item_uses("workload w = connect(p, replicate(q, 4))"),
            ["csp.replicate"]
        );
    }
}
