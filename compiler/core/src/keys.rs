//! Schedule keys and the loops around tasks.
//!
//! A schedule key — `affinity(axis)`, `hash(expr)`, `by(expr)`, `stream_by(expr)`,
//! `priority(expr)` — is worked out per task from the coordinates of the loops the task is
//! inside: an axis in a key reads the variable of the innermost loop over that axis around the
//! task. [`crate::check`] reports a key over an axis that no loop of the file iterates (E0608);
//! [`tasks_outside_keys`] reports, per schedule, a task of the scheduled workload that is not
//! inside a loop over a key's axis (E0608 too), which would otherwise fail when it runs
//! (E0810). A `consume` binds the token's values, not axes, so the tasks of a `consume` body
//! are inside only the `for` loops around them.

use std::collections::{BTreeMap, BTreeSet};

use wsp_diagnostics::{Diagnostic, FileName, Label, Span};
use wsp_syntax::ast::{
    Block, Directive, Expr, ExprKind, Ident, ItemKind, Schedule, Stmt, StmtKind,
};
use wsp_syntax::ast::{Workload, WorkloadBody};
use wsp_syntax::visit::{walk_stmt, Visitor};

use crate::db::{items_of, Db, File, ItemTag};
use wsp_vocab::codes;

/// A key expression of a schedule directive.
pub(crate) struct KeyExpr<'a> {
    pub directive: &'a Directive,
    pub expr: &'a Expr,
    /// The key of `affinity(...)`.
    pub affinity: bool,
    /// Its directive is the last of its name (W0601: the last one applies), so the run reads
    /// this key.
    pub effective: bool,
}

/// The key expressions of a schedule's directives: `stream_by(e)`, `dispatch_by(e)`, the two
/// keys of `spatial_map(..., at: (r, c))`, and the argument of `affinity`, `hash`, `by`
/// (dispatch) and `priority` (ready).
pub(crate) fn key_exprs(s: &Schedule) -> Vec<KeyExpr<'_>> {
    let mut out = Vec::new();
    for (i, d) in s.directives.iter().enumerate() {
        let effective = !s.directives[i + 1..]
            .iter()
            .any(|l| l.name.name == d.name.name);
        let key = |expr, affinity| KeyExpr {
            directive: d,
            expr,
            affinity,
            effective,
        };
        // `.spatial_map(grid: (rows, cols), at: (row_key, col_key))`: two keys.
        if d.name.name == "spatial_map" {
            for a in &d.args {
                if let (Some(n), ExprKind::Tuple(xs)) = (&a.name, &a.value.kind) {
                    if n.name == "at" {
                        out.extend(xs.iter().map(|x| key(x, false)));
                    }
                }
            }
            continue;
        }
        let Some(arg) = d.args.first().map(|a| &a.value) else {
            continue;
        };
        match (d.name.name.as_str(), &arg.kind) {
            ("stream_by" | "dispatch_by", _) => out.push(key(arg, false)),
            ("dispatch" | "ready", ExprKind::Call { callee, args, .. }) => {
                if let ExprKind::Name(p) = &callee.kind {
                    if matches!(p.name.as_str(), "affinity" | "hash" | "by" | "priority") {
                        if let Some(k) = args.first() {
                            out.push(key(&k.value, p.name == "affinity"));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The names a key expression uses, in source order.
pub(crate) fn key_names<'e>(e: &'e Expr, out: &mut Vec<&'e Ident>) {
    match &e.kind {
        ExprKind::Name(n) => out.push(n),
        ExprKind::Unary { expr, .. } => key_names(expr, out),
        ExprKind::Binary { lhs, rhs, .. } => {
            key_names(lhs, out);
            key_names(rhs, out);
        }
        ExprKind::Call { args, .. } => args.iter().for_each(|a| key_names(&a.value, out)),
        ExprKind::Tuple(xs) | ExprKind::List(xs) => xs.iter().for_each(|x| key_names(x, out)),
        _ => {}
    }
}

/// A task call of a workload or process body: where it is (absolute), its kernel, the axes of
/// the loops around it, and whether it is in a `consume` body.
struct Site {
    span: Span,
    kernel: String,
    axes: BTreeSet<String>,
    in_consume: bool,
}

/// The task calls of a body (statements, and the tasks of `send`s), with the loop axes around
/// each.
struct Sites<'o> {
    off: u32,
    axes: Vec<String>,
    in_consume: bool,
    out: &'o mut Vec<Site>,
}

impl<'a> Visitor<'a> for Sites<'_> {
    fn visit_stmt(&mut self, s: &'a Stmt) {
        match &s.kind {
            StmtKind::For { iter, body, .. } => {
                let n = self.axes.len();
                self.axes.extend(crate::wltype::loop_axes(iter));
                self.visit_block(body);
                self.axes.truncate(n);
            }
            StmtKind::Consume { body, .. } => {
                let was = std::mem::replace(&mut self.in_consume, true);
                self.visit_block(body);
                self.in_consume = was;
            }
            StmtKind::Expr(e) | StmtKind::Send { value: e, .. } => {
                if let ExprKind::Call {
                    callee,
                    coords: Some(_),
                    ..
                } = &e.kind
                {
                    if let ExprKind::Name(k) = &callee.kind {
                        self.out.push(Site {
                            span: e.span.shift(self.off),
                            kernel: k.name.clone(),
                            axes: self.axes.iter().cloned().collect(),
                            in_consume: self.in_consume,
                        });
                    }
                }
            }
            // `when` branches and sections: their blocks.
            _ => walk_stmt(self, s),
        }
    }

    // Task calls are statements; expressions hold none.
    fn visit_expr(&mut self, _: &'a Expr) {}
}

/// The workloads and processes a composition expression names (`combine`, `sequential`,
/// `connect`, `replicate`), in order.
fn composed<'e>(e: &'e Expr, out: &mut Vec<&'e str>) {
    match &e.kind {
        ExprKind::Name(n) => out.push(&n.name),
        ExprKind::Call { args, .. } => args.iter().for_each(|a| composed(&a.value, out)),
        _ => {}
    }
}

/// E0608 per task: for each schedule of the file, a task its workload runs (through
/// compositions and the processes of a `connect`, within this file) that no loop over an axis
/// of a key surrounds. Virtual spans ([`crate::db::real_spans`]); one diagnostic per key name.
#[salsa::tracked(returns(ref))]
pub fn tasks_outside_keys(db: &dyn Db, file: File) -> Vec<Diagnostic> {
    let fname = FileName::new(file.path(db).as_str());
    let iterated = crate::wltype::iterated_axes(db, file);
    let mut axes_of_file: BTreeSet<&str> = BTreeSet::new();
    // Workload and process bodies by name (the first of a name; a second is E0102).
    enum Body<'a> {
        Block(&'a Block, u32),
        Expr(&'a Expr),
    }
    let mut bodies: BTreeMap<&str, Body<'_>> = BTreeMap::new();
    let tags = &[ItemTag::Axis, ItemTag::Workload, ItemTag::Process];
    for (_, off, item) in items_of(db, file, tags) {
        match &item.kind {
            ItemKind::Axis(a) => {
                axes_of_file.insert(&a.name.name);
            }
            ItemKind::Workload(Workload { name, body, .. }) => {
                let b = match body {
                    WorkloadBody::Block(b) => Body::Block(b, off),
                    WorkloadBody::Expr(e) => Body::Expr(e),
                };
                bodies.entry(&name.name).or_insert(b);
            }
            ItemKind::Process(p) => {
                bodies
                    .entry(&p.name.name)
                    .or_insert(Body::Block(&p.body, off));
            }
            _ => {}
        }
    }
    let mut diags = Vec::new();
    for (_, off, item) in items_of(db, file, &[ItemTag::Schedule]) {
        let ItemKind::Schedule(s) = &item.kind else {
            continue;
        };
        // Key axes of this file that some loop iterates (the others are E0608 already).
        let mut keyed: Vec<(&Directive, &Ident)> = Vec::new();
        for k in key_exprs(s).into_iter().filter(|k| k.effective) {
            let mut names = Vec::new();
            key_names(k.expr, &mut names);
            for n in names {
                if axes_of_file.contains(n.name.as_str()) && iterated.contains(&n.name) {
                    keyed.push((k.directive, n));
                }
            }
        }
        if keyed.is_empty() {
            continue;
        }
        // The tasks the schedule's workload runs.
        let mut all = Vec::new();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut todo = vec![s.workload.name.as_str()];
        while let Some(w) = todo.pop() {
            if !seen.insert(w) {
                continue;
            }
            match bodies.get(w) {
                Some(Body::Block(b, boff)) => Sites {
                    off: *boff,
                    axes: Vec::new(),
                    in_consume: false,
                    out: &mut all,
                }
                .visit_block(b),
                Some(Body::Expr(e)) => {
                    let mut names = Vec::new();
                    composed(e, &mut names);
                    todo.extend(names.into_iter().rev());
                }
                None => {}
            }
        }
        all.sort_by_key(|t| t.span.start);
        for (d, n) in keyed {
            let outside: Vec<&Site> = all.iter().filter(|t| !t.axes.contains(&n.name)).collect();
            let Some(first) = outside.first() else {
                continue;
            };
            let others = match outside.len() - 1 {
                0 => String::new(),
                1 => " (and 1 other task)".to_string(),
                k => format!(" (and {k} other tasks)"),
            };
            let mut diag = Diagnostic::new(
                codes::E0608,
                format!(
                    "the schedule's key uses axis `{}`, but task `{}` of `{}` is not inside a loop over it{others}",
                    n.name, first.kernel, s.workload.name
                ),
                Label::new(
                    fname.clone(),
                    n.span.shift(off),
                    format!("`.{}` reads the loop over `{}`", d.name.name, n.name),
                ),
            )
            .with_label(Label::new(
                fname.clone(),
                first.span,
                format!("not inside a loop over `{}`", n.name),
            ))
            .with_note(format!(
                "a task's key reads the variable of the loop over `{}` around it; this task has none, so it would fail when it runs (E0810)",
                n.name
            ));
            if first.in_consume {
                diag = diag.with_note(
                    "a `consume` binds the token's values, not axes: a task in its body is inside only the `for` loops around it",
                );
            }
            diags.push(diag.with_help(format!(
                "key by an axis every task of `{}` is inside, or put the task inside a loop over `{}`",
                s.workload.name, n.name
            )));
        }
    }
    diags
}

/// The block bodies (with their items' offsets) that workload `name` runs, through
/// compositions and the processes of a `connect`, within the file; each once.
pub(crate) fn scheduled_bodies<'a>(
    db: &'a dyn Db,
    file: File,
    name: &'a str,
) -> Vec<(&'a Block, u32)> {
    let mut bodies: BTreeMap<&str, (Option<&Block>, Option<&Expr>, u32)> = BTreeMap::new();
    for (_, off, item) in items_of(db, file, &[ItemTag::Workload, ItemTag::Process]) {
        let off = &off;
        match &item.kind {
            ItemKind::Workload(Workload { name, body, .. }) => {
                let b = match body {
                    WorkloadBody::Block(b) => (Some(b), None, *off),
                    WorkloadBody::Expr(e) => (None, Some(e), *off),
                };
                bodies.entry(&name.name).or_insert(b);
            }
            ItemKind::Process(p) => {
                bodies
                    .entry(&p.name.name)
                    .or_insert((Some(&p.body), None, *off));
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut todo = vec![name];
    while let Some(w) = todo.pop() {
        if !seen.insert(w) {
            continue;
        }
        match bodies.get(w) {
            Some((Some(b), _, off)) => out.push((*b, *off)),
            Some((None, Some(e), _)) => {
                let mut names = Vec::new();
                composed(e, &mut names);
                todo.extend(names.into_iter().rev());
            }
            _ => {}
        }
    }
    out
}

/// The kernels the task calls of a body name, in source order.
pub(crate) fn task_kernels(b: &Block) -> Vec<String> {
    let mut all = Vec::new();
    Sites {
        off: 0,
        axes: Vec::new(),
        in_consume: false,
        out: &mut all,
    }
    .visit_block(b);
    all.into_iter().map(|s| s.kernel).collect()
}
