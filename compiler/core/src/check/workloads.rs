//! Workloads written as compositions (`combine`, `sequential`, `connect` with `replicate`
//! counts; E0407), races between the operands of `combine`, and the integer-constant arguments
//! of compositions and channels (`depth`, `latency`: E0505).

use super::*;

/// Races between the operands of `combine(a, b, ...)`: reads the operands' ASTs (a dependency
/// on exactly those items).
pub(super) fn combine_races(
    db: &dyn Db,
    file: File,
    fname: &FileName,
    e: &Expr,
    scope: &BTreeMap<String, Scoped>,
    consts: &BTreeMap<String, i64>,
    sizes: &BTreeMap<String, crate::types::D>,
) -> Vec<Diagnostic> {
    let ExprKind::Call { callee, args, .. } = &e.kind else {
        return Vec::new();
    };
    let ExprKind::Name(form) = &callee.kind else {
        return Vec::new();
    };
    if form.name != "combine" {
        return Vec::new();
    }
    let items = crate::db::file_items(db, file);
    let mut asts = Vec::new();
    for a in args {
        let ExprKind::Name(n) = &a.value.kind else {
            continue;
        };
        let found = items
            .iter()
            .find(|id| id.tag(db) == crate::db::ItemTag::Workload && id.key(db) == &n.name);
        if let Some(id) = found {
            if let ItemKind::Workload(Workload {
                body: WorkloadBody::Block(b),
                ..
            }) = &item_ast(db, *id).kind
            {
                asts.push((n, b));
            }
        }
    }
    crate::races::check_combine(fname, form.span, &asts, scope, consts, sizes)
}

/// `combine(a, b)`, `sequential(a, b)`, `connect(p, replicate(w, 4))`.
pub(super) fn composition(c: &mut Checker, e: &Expr) {
    let ExprKind::Call {
        callee,
        args,
        coords: None,
    } = &e.kind
    else {
        c.diags.push(
            Diagnostic::new(
                codes::E0407,
                "a workload is a block or `combine(..)`, `sequential(..)` or `connect(..)`",
                c.label(e.span, "not a workload composition"),
            )
            .with_help("write `workload w { ... }` or `workload w = sequential(a, b)`"),
        );
        return;
    };
    let form = match &callee.kind {
        ExprKind::Name(n) => n.name.as_str(),
        _ => "",
    };
    let want_process = match form {
        "combine" | "sequential" => false,
        "connect" => true,
        _ => {
            c.diags.push(
                Diagnostic::new(
                    codes::E0407,
                    "a workload is a block or `combine(..)`, `sequential(..)` or `connect(..)`",
                    c.label(callee.span, "not a workload composition"),
                )
                .with_help("write `workload w { ... }` or `workload w = sequential(a, b)`"),
            );
            return;
        }
    };
    // Process instances of a `connect` (each `replicate(w, n)` counts n).
    let mut instances = 0i64;
    for a in args {
        let mut v = &a.value;
        instances += 1;
        // `replicate(worker, n)` inside `connect`.
        if let ExprKind::Call {
            callee,
            args: rargs,
            coords: None,
        } = &v.kind
        {
            if matches!(&callee.kind, ExprKind::Name(n) if n.name == "replicate") && want_process {
                if rargs.len() != 2 {
                    c.diags.push(
                        Diagnostic::new(
                            codes::E0407,
                            "`replicate` takes a process and a count",
                            c.label(v.span, "write `replicate(worker, 4)`"),
                        )
                        .with_help("write `replicate(worker, 4)`"),
                    );
                    continue;
                }
                instances += replicate_count(c, &rargs[1].value) - 1;
                v = &rargs[0].value;
            }
        }
        let (expected, plural) = if want_process {
            ("a process", "processes")
        } else {
            ("a workload", "workloads")
        };
        let ExprKind::Name(id) = &v.kind else {
            if !matches!(v.kind, ExprKind::Call { .. }) {
                // A literal or arithmetic: not an item at all.
                c.diags.push(
                    Diagnostic::new(
                        codes::E0407,
                        format!("`{form}` takes {plural}, but this is not the name of one"),
                        c.label(v.span, format!("expected {expected}")),
                    )
                    .with_help(format!("name {expected} declared in this file or imported")),
                );
            }
            c.expr(v);
            continue;
        };
        match c.scope.get(&id.name).map(|s| &s.symbol) {
            Some(Symbol::Process) if want_process => {}
            Some(Symbol::Workload) if !want_process => {}
            Some(other) => {
                let what = other.describe();
                c.diags.push(
                    Diagnostic::new(
                        codes::E0407,
                        format!("`{form}` takes {plural}, but `{}` is {what}", id.name),
                        c.label(id.span, format!("expected {expected}")),
                    )
                    .with_help(if want_process {
                        "`connect(...)` joins processes; `combine`/`sequential` join workloads"
                    } else {
                        "`combine`/`sequential` join workloads; `connect(...)` joins processes"
                    }),
                );
            }
            None => c.unresolved(id),
        }
    }
    if want_process && instances > MAX_PROCESSES {
        c.diags.push(
            Diagnostic::new(
                codes::E0407,
                format!("`connect` of {instances} process instances"),
                c.label(e.span, format!("at most {MAX_PROCESSES}")),
            )
            .with_help(format!(
                "each instance is a process with its own state for the whole run, and a pipeline has at most {MAX_PROCESSES}; replicate fewer workers"
            )),
        );
    }
}

/// The most process instances of one `connect` (each `replicate(w, n)` counts n): the
/// simulator's `wsp_ir::exec::MAX_PROCESSES` (kept equal by a wsp-sim test).
pub const MAX_PROCESSES: i64 = 1 << 16;

/// E0407: a `replicate` count is an integer constant from 1 to [`MAX_PROCESSES`]. Returns the
/// count (1 when it has none).
fn replicate_count(c: &mut Checker, n: &Expr) -> i64 {
    let Some(value) = constant_arg(c, n) else {
        return 1;
    };
    let (msg, label) = match value {
        Some(v) if (1..=MAX_PROCESSES).contains(&v) => return v,
        Some(v) if v < 1 => (
            format!("`replicate` with a count of {v}"),
            "at least 1".to_string(),
        ),
        Some(v) => (
            format!("`replicate` with a count of {v}"),
            format!("at most {MAX_PROCESSES}"),
        ),
        None => (
            "`replicate` takes an integer constant count".to_string(),
            "not an integer constant".to_string(),
        ),
    };
    c.diags.push(
        Diagnostic::new(codes::E0407, msg, c.label(n.span, label)).with_help(format!(
            "write `replicate(worker, 4)`: a count from 1 to {MAX_PROCESSES}"
        )),
    );
    1
}

/// Checks argument `e`, which takes an integer constant: `None` when there is nothing more to
/// say of it (an error inside it was reported, or it is over params, the run's to give, which
/// `wsp run` does not lower yet: E0813), else `Some` of its value (`None`: not a constant).
fn constant_arg(c: &mut Checker, e: &Expr) -> Option<Option<i64>> {
    let before = c.diags.len();
    c.expr(e);
    if c.diags.len() > before || matches!(e.kind, ExprKind::Error) {
        return None;
    }
    let v = crate::types::eval_int(e, c.consts);
    let is_param = |n: &str| matches!(c.scope.get(n).map(|s| &s.symbol), Some(Symbol::Param));
    if v.is_none() && crate::types::names_any(e, &is_param) {
        return None;
    }
    Some(v)
}

/// E0505: a channel's `depth` (0, a rendezvous, to 2³² − 1 tokens) or `latency` (0 or more
/// cycles) is an integer constant in range.
pub(super) fn channel_arg(c: &mut Checker, arg: &str, value: &Expr) {
    let Some(v) = constant_arg(c, value) else {
        return;
    };
    let (max, range) = if arg == "depth" {
        (u32::MAX as i64, "0 (a rendezvous) to 4294967295 tokens")
    } else {
        (i64::MAX, "0 or more cycles")
    };
    let (msg, label) = match v {
        Some(v) if (0..=max).contains(&v) => return,
        Some(v) => (
            format!("a channel {arg} is {range}, found {v}"),
            "out of range".to_string(),
        ),
        None => (
            format!("a channel {arg} is an integer constant"),
            "not an integer constant".to_string(),
        ),
    };
    c.diags.push(
        Diagnostic::new(codes::E0505, msg, c.label(value.span, label))
            .with_help("write `Channel[depth: 2]` or `Channel[depth: 2, latency: 10]`"),
    );
}
