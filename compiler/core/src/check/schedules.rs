//! Schedules: each directive and its arguments (E0601–E0608, W0601) — policies, counts, keys,
//! the window's mode, the task graph's ring sizes — and the key axes the scheduled workload
//! iterates.

use super::*;

/// The largest size `.task_graph(...)` gives each ring ([`POOL_NAMES`] order): the tensor map's
/// entries are allocated up front (as the runtime's `MAX_POOL`), the others are counts, and the
/// heap arena is bytes.
const POOL_LIMITS: [i64; 4] = [1 << 24, u32::MAX as i64, u32::MAX as i64, 1 << 40];

/// `.task_graph(tensormap: n, deplist: n, ready: n, heap: bytes)`: named ring sizes, each once,
/// each an integer constant from 1 to its limit (E0603 for no or unnamed arguments, E0604 for
/// an unknown ring, E0606 for a bad size, W0601 for a ring given twice).
fn pools(c: &mut Checker, d: &wsp_syntax::ast::Directive, name: &str) {
    if d.args.is_empty() || d.args.iter().any(|a| a.name.is_none()) {
        c.diags.push(
            Diagnostic::new(
                codes::E0603,
                format!("`.{name}` takes named ring sizes"),
                c.label(d.span, "sizes are named"),
            )
            .with_help(directive_help(name)),
        );
        return;
    }
    let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
    for a in &d.args {
        let Some(ring) = &a.name else { continue };
        c.expr(&a.value);
        let Some(i) = POOL_NAMES.iter().position(|p| *p == ring.name) else {
            let mut diag = Diagnostic::new(
                codes::E0604,
                format!("`.{name}` has no ring `{}`", ring.name),
                c.label(ring.span, "unknown ring"),
            )
            .with_help(directive_help(name));
            if let Some(sg) = suggest(&ring.name, POOL_NAMES.iter().copied()) {
                diag = diag.with_note(format!("did you mean `{sg}`?"));
            }
            c.diags.push(diag);
            continue;
        };
        if let Some(first) = seen.insert(POOL_NAMES[i], a.span) {
            c.diags.push(
                Diagnostic::new(
                    codes::W0601,
                    format!("`{}` is given twice; the last one applies", ring.name),
                    c.label(a.span, "repeated here"),
                )
                .with_label(c.label(first, "first given here")),
            );
        }
        let limit = POOL_LIMITS[i];
        match crate::types::eval_int(&a.value, c.consts) {
            Some(v) if (1..=limit).contains(&v) => {}
            v => c.diags.push(
                Diagnostic::new(
                    codes::E0606,
                    format!(
                        "`{}` needs an integer constant from 1 to {limit}{}",
                        ring.name,
                        v.map(|v| format!(", found {v}")).unwrap_or_default()
                    ),
                    c.label(a.value.span, "not a ring size"),
                )
                .with_help(directive_help(name)),
            ),
        }
    }
}

/// The mode of `.task_window(n, mode)`: `stall`, `abort` or `benchmark` (E0604 otherwise).
fn window_mode(c: &mut Checker, e: &Expr) {
    let name = match &e.kind {
        ExprKind::Name(n) => Some(n),
        _ => None,
    };
    if name.is_some_and(|n| WindowMode::from_name(&n.name).is_some()) {
        return;
    }
    let mut diag = Diagnostic::new(
        codes::E0604,
        "`.task_window` has no such window mode",
        c.label(e.span, "unknown window mode"),
    )
    .with_help(format!(
        "the modes are {}",
        WindowMode::ALL
            .iter()
            .map(|m| format!("`{}` ({})", m.name(), m.doc()))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    if let Some(sg) = name.and_then(|n| suggest(&n.name, WINDOW_MODE_NAMES.iter().copied())) {
        diag = diag.with_note(format!("did you mean `{sg}`?"));
    }
    c.diags.push(diag);
}

pub(super) fn schedule(c: &mut Checker, s: &Schedule) {
    match c.scope.get(&s.workload.name).map(|x| &x.symbol) {
        Some(Symbol::Workload) => {}
        Some(other) => {
            c.wrong_kind(
                codes::E0602,
                &s.workload.name,
                other,
                "a workload",
                s.workload.span,
                "expected a workload",
                "a schedule is written `schedule name = workload .directive(...)`",
            );
        }
        None => c.unresolved(&s.workload),
    }
    c.builtins = &[&POLICY_NAMES, TARGETS, &WINDOW_MODE_NAMES];
    let mut seen: BTreeMap<String, Span> = BTreeMap::new();
    for d in &s.directives {
        let name = d.name.name.as_str();
        let Some(kind) = DirectiveKind::from_name(name) else {
            let mut diag = Diagnostic::new(
                codes::E0601,
                format!("unknown schedule directive `.{name}`"),
                c.label(d.name.span, "unknown directive"),
            )
            .with_note(format!(
                "the directives are {}",
                DIRECTIVE_NAMES
                    .iter()
                    .map(|d| format!("`.{d}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            if let Some(sg) = suggest(name, DIRECTIVE_NAMES.iter().copied()) {
                diag = diag
                    .with_help(format!("did you mean `.{sg}`?"))
                    .with_fix(Fix {
                        title: format!("change to `.{sg}`"),
                        edits: vec![Edit {
                            file: c.file.clone(),
                            span: d.name.span,
                            replacement: sg.to_string(),
                        }],
                    });
            }
            c.diags.push(diag);
            continue;
        };
        // `.dispatch_by(e)` sets the dispatch as `.dispatch(by(e))` does; `.layout(T, ...)`
        // sets the layout of `T`.
        let sets = match (kind, d.args.first().map(|a| &a.value.kind)) {
            (DirectiveKind::DispatchBy, _) => DirectiveKind::Dispatch.name().to_string(),
            (DirectiveKind::Layout, Some(ExprKind::Name(t))) => format!("layout({}, ...)", t.name),
            _ => name.to_string(),
        };
        if let Some(first) = seen.insert(sets.clone(), d.span) {
            c.diags.push(
                Diagnostic::new(
                    codes::W0601,
                    format!("`.{sets}` is given twice; the last one applies"),
                    c.label(d.span, "repeated here"),
                )
                .with_label(c.label(first, "first given here"))
                .with_help(format!("remove one of the two `.{sets}` directives")),
            );
        }
        if kind.arg() == DirectiveArg::Pools {
            pools(c, d, name);
            continue;
        }
        if kind.arg() == DirectiveArg::Grid {
            grid(c, d, name);
            continue;
        }
        if kind.arg() == DirectiveArg::Shard {
            shard(c, d, name);
            continue;
        }
        // `.task_window(n, mode)` alone takes a second argument: the window's mode.
        let most = if kind == DirectiveKind::TaskWindow {
            2
        } else {
            1
        };
        if d.args.is_empty() || d.args.len() > most {
            c.diags.push(
                Diagnostic::new(
                    codes::E0603,
                    format!(
                        "`.{name}` takes {}, found {}",
                        if most == 1 {
                            "one argument"
                        } else {
                            "a size and an optional mode"
                        },
                        d.args.len()
                    ),
                    c.label(d.span, "wrong number of arguments"),
                )
                .with_help(directive_help(name)),
            );
            continue;
        }
        if let Some(m) = d.args.get(1) {
            window_mode(c, &m.value);
        }
        let arg = &d.args[0].value;
        // Names inside directive arguments may refer to task coordinates (`hash(b)`), so only
        // the policy itself is checked here.
        let policy = match &arg.kind {
            ExprKind::Name(n) => Some(n),
            ExprKind::Call { callee, .. } => match &callee.kind {
                ExprKind::Name(n) => Some(n),
                _ => None,
            },
            _ => None,
        };
        let allowed: Vec<&str> = match kind.arg() {
            DirectiveArg::Policy => kind.policies().map(Policy::name).collect(),
            DirectiveArg::Arch => TARGETS.to_vec(),
            DirectiveArg::Count
            | DirectiveArg::Key
            | DirectiveArg::Pools
            | DirectiveArg::Grid
            | DirectiveArg::Shard => Vec::new(),
        };
        if !allowed.is_empty() {
            match policy {
                Some(p) if allowed.contains(&p.name.as_str()) => policy_args(c, name, p, arg),
                _ => {
                    let span = policy.map(|p| p.span).unwrap_or(arg.span);
                    let mut diag = Diagnostic::new(
                        codes::E0604,
                        format!("`.{name}` does not accept this policy"),
                        c.label(span, "unknown policy"),
                    )
                    .with_help(directive_help(name));
                    if let Some(p) = policy {
                        if let Some(sg) = suggest(&p.name, allowed.iter().copied()) {
                            diag = diag.with_note(format!("did you mean `{sg}`?"));
                        }
                    }
                    c.diags.push(diag);
                }
            }
        } else if kind.arg() == DirectiveArg::Count
            && crate::types::eval_int(arg, c.consts).is_none()
            && !matches!(arg.kind, ExprKind::Error)
        {
            c.diags.push(
                Diagnostic::new(
                    codes::E0606,
                    format!("`.{name}` takes an integer constant"),
                    c.label(arg.span, "not an integer constant"),
                )
                .with_help(directive_help(name)),
            );
        } else if let Some(n) = (kind == DirectiveKind::TaskWindow)
            .then(|| crate::types::eval_int(arg, c.consts))
            .flatten()
            .filter(|n| *n > MAX_TASK_WINDOW)
        {
            c.diags.push(
                Diagnostic::new(
                    codes::E0607,
                    format!("`.task_window({n})` is larger than the runtime's ring"),
                    c.label(arg.span, format!("at most {MAX_TASK_WINDOW}")),
                )
                .with_help(format!(
                    "the runtime allocates the window's ring of task slots before the run, so a window holds at most {MAX_TASK_WINDOW} tasks in flight; use a smaller window"
                )),
            );
        } else if let Some(n) = (kind == DirectiveKind::Streams)
            .then(|| crate::types::eval_int(arg, c.consts))
            .flatten()
            .filter(|n| *n > MAX_STREAMS)
        {
            c.diags.push(
                Diagnostic::new(
                    codes::E0607,
                    format!("`.streams({n})` is more streams than the runtime keeps"),
                    c.label(arg.span, format!("at most {MAX_STREAMS}")),
                )
                .with_help(format!(
                    "the runtime keeps each stream's last task from the start of the run, so a schedule has at most {MAX_STREAMS} streams; use fewer"
                )),
            );
        } else if let Some(n) = (kind.arg() == DirectiveArg::Count)
            .then(|| crate::types::eval_int(arg, c.consts))
            .flatten()
            .filter(|n| *n < 1)
        {
            c.diags.push(
                Diagnostic::new(
                    codes::E0605,
                    format!("`.{name}({n})` can never run a task"),
                    c.label(arg.span, "must be at least 1"),
                )
                .with_help(directive_help(name)),
            );
        }
    }
    placement_conflict(c, s);
}

/// E0609: `.spatial_map(...)` and a dispatch (`.dispatch(...)`, `.dispatch_by(...)`) in one
/// schedule: both choose each task's core.
fn placement_conflict(c: &mut Checker, s: &Schedule) {
    let find = |k: &[DirectiveKind]| {
        s.directives
            .iter()
            .find(|d| DirectiveKind::from_name(&d.name.name).is_some_and(|x| k.contains(&x)))
    };
    let (Some(map), Some(disp)) = (
        find(&[DirectiveKind::SpatialMap]),
        find(&[DirectiveKind::Dispatch, DirectiveKind::DispatchBy]),
    ) else {
        return;
    };
    c.diags.push(
        Diagnostic::new(
            codes::E0609,
            format!(
                "`.spatial_map` places every task, so `.{}` in the same schedule would never apply",
                disp.name.name
            ),
            c.label(disp.span, "a dispatch policy"),
        )
        .with_label(c.label(map.span, "places every task on a core of the grid"))
        .with_help("keep one of the two: a spatial map, or a dispatch policy"),
    );
}

/// An integer constant from 1 to `most`, else E0606 (`what` names it).
fn positive(c: &mut Checker, e: &Expr, what: &str, most: i64, directive: &str) -> Option<i64> {
    match crate::types::eval_int(e, c.consts) {
        Some(v) if (1..=most).contains(&v) => Some(v),
        v => {
            if !matches!(e.kind, ExprKind::Error) {
                c.diags.push(
                    Diagnostic::new(
                        codes::E0606,
                        format!(
                            "{what} needs an integer constant from 1 to {most}{}",
                            v.map(|v| format!(", found {v}")).unwrap_or_default()
                        ),
                        c.label(e.span, "not a positive integer constant"),
                    )
                    .with_help(directive_help(directive)),
                );
            }
            None
        }
    }
}

/// `.spatial_map(grid: (rows, cols), at: (row_key, col_key))`: both arguments named, each a
/// pair; the grid's sizes integer constants ≥ 1 (E0606), the keys key expressions (checked with
/// the other keys, [`key_axes`]). E0603 for missing or extra arguments, E0604 for an unknown
/// name.
fn grid(c: &mut Checker, d: &wsp_syntax::ast::Directive, name: &str) {
    let arg = |n: &str| {
        d.args
            .iter()
            .find(|a| a.name.as_ref().is_some_and(|x| x.name == n))
    };
    for a in &d.args {
        if let Some(n) = &a.name {
            if !GRID_NAMES.contains(&n.name.as_str()) {
                let mut diag = Diagnostic::new(
                    codes::E0604,
                    format!("`.{name}` has no argument `{}`", n.name),
                    c.label(n.span, "unknown argument"),
                )
                .with_help(directive_help(name));
                if let Some(sg) = suggest(&n.name, GRID_NAMES.iter().copied()) {
                    diag = diag.with_note(format!("did you mean `{sg}`?"));
                }
                c.diags.push(diag);
                return;
            }
        }
    }
    let (Some(g), Some(at), 2) = (arg("grid"), arg("at"), d.args.len()) else {
        c.diags.push(
            Diagnostic::new(
                codes::E0603,
                format!("`.{name}` takes a grid and two keys, both named"),
                c.label(d.span, "write `grid: (rows, cols), at: (row_key, col_key)`"),
            )
            .with_help(directive_help(name)),
        );
        return;
    };
    for (a, what) in [
        (g, "a grid `(rows, cols)`"),
        (at, "two keys `(row_key, col_key)`"),
    ] {
        if !matches!(&a.value.kind, ExprKind::Tuple(xs) if xs.len() == 2) {
            c.diags.push(
                Diagnostic::new(
                    codes::E0606,
                    format!("`{}` takes {what}", a.name.as_ref().map_or("", |n| &n.name)),
                    c.label(a.value.span, "not a pair"),
                )
                .with_help(directive_help(name)),
            );
        }
    }
    if let ExprKind::Tuple(xs) = &g.value.kind {
        let most = i64::from(wsp_arch::MAX_CORES);
        for (x, what) in xs
            .iter()
            .zip(["the grid's row count", "the grid's column count"])
        {
            positive(c, x, what, most, name);
        }
    }
}

/// `.layout(T, shard(dim: d, parts: n))` (or `shard(d, n)`): `T` a global tensor of the file,
/// `d` one of its dimensions and `n` ≥ 1 dividing its size (E0611); E0603 for the wrong
/// number of arguments, E0604 for a layout other than `shard` or an unknown argument name.
fn shard(c: &mut Checker, d: &wsp_syntax::ast::Directive, name: &str) {
    let [t, sh] = d.args.as_slice() else {
        c.diags.push(
            Diagnostic::new(
                codes::E0603,
                format!(
                    "`.{name}` takes a tensor and its sharding, found {} argument(s)",
                    d.args.len()
                ),
                c.label(d.span, "write `.layout(T, shard(dim: d, parts: n))`"),
            )
            .with_help(directive_help(name)),
        );
        return;
    };
    if t.name.is_some() || sh.name.is_some() {
        c.diags.push(
            Diagnostic::new(
                codes::E0603,
                format!("`.{name}`'s tensor and sharding are not named"),
                c.label(d.span, "write `.layout(T, shard(dim: d, parts: n))`"),
            )
            .with_help(directive_help(name)),
        );
        return;
    }
    // The tensor: a global tensor of the file.
    let dims = match &t.value.kind {
        ExprKind::Name(n) => match c.scope.get(&n.name).map(|s| s.symbol.clone()) {
            Some(Symbol::Tensor { dims, .. }) => Some(dims),
            Some(other) => {
                c.diags.push(
                    Diagnostic::new(
                        codes::E0611,
                        format!(
                            "`.{name}` shards a global tensor; `{}` is {}",
                            n.name,
                            other.describe()
                        ),
                        c.label(n.span, "not a global tensor"),
                    )
                    .with_help(directive_help(name)),
                );
                None
            }
            None => {
                c.unresolved(n);
                None
            }
        },
        _ => {
            c.diags.push(
                Diagnostic::new(
                    codes::E0611,
                    format!("`.{name}` shards a global tensor, named"),
                    c.label(t.value.span, "not a tensor's name"),
                )
                .with_help(directive_help(name)),
            );
            None
        }
    };
    // The sharding: `shard(dim: d, parts: n)`.
    let args = match &sh.value.kind {
        ExprKind::Call {
            callee,
            coords: None,
            args,
        } if matches!(&callee.kind, ExprKind::Name(n) if n.name == SHARD) => args,
        _ => {
            c.diags.push(
                Diagnostic::new(
                    codes::E0604,
                    format!("`.{name}` does not accept this layout"),
                    c.label(sh.value.span, "not `shard(dim: d, parts: n)`"),
                )
                .with_help(directive_help(name)),
            );
            return;
        }
    };
    let mut vals: [Option<&Expr>; 2] = [None, None];
    for (i, a) in args.iter().enumerate() {
        let slot = match &a.name {
            Some(n) => match SHARD_NAMES.iter().position(|x| *x == n.name) {
                Some(j) => j,
                None => {
                    let mut diag = Diagnostic::new(
                        codes::E0604,
                        format!("`shard` has no argument `{}`", n.name),
                        c.label(n.span, "unknown argument"),
                    )
                    .with_help(directive_help(name));
                    if let Some(sg) = suggest(&n.name, SHARD_NAMES.iter().copied()) {
                        diag = diag.with_note(format!("did you mean `{sg}`?"));
                    }
                    c.diags.push(diag);
                    return;
                }
            },
            None => i,
        };
        match vals.get_mut(slot) {
            Some(v @ None) => *v = Some(&a.value),
            _ => {
                c.diags.push(
                    Diagnostic::new(
                        codes::E0603,
                        "`shard` takes a dimension and a number of parts, each once",
                        c.label(a.span, "extra argument"),
                    )
                    .with_help(directive_help(name)),
                );
                return;
            }
        }
    }
    let [Some(dim), Some(parts)] = vals else {
        c.diags.push(
            Diagnostic::new(
                codes::E0603,
                "`shard` takes a dimension and a number of parts",
                c.label(sh.value.span, "write `shard(dim: d, parts: n)`"),
            )
            .with_help(directive_help(name)),
        );
        return;
    };
    let dim_v = match crate::types::eval_int(dim, c.consts) {
        Some(v) if v >= 0 => Some(v),
        v => {
            c.diags.push(
                Diagnostic::new(
                    codes::E0606,
                    format!(
                        "`dim` needs an integer constant ≥ 0{}",
                        v.map(|v| format!(", found {v}")).unwrap_or_default()
                    ),
                    c.label(dim.span, "not a dimension"),
                )
                .with_help(directive_help(name)),
            );
            None
        }
    };
    let parts_v = positive(c, parts, "`parts`", u32::MAX as i64, name);
    let (Some(Some(dims)), Some(j)) = (dims, dim_v) else {
        return;
    };
    let tensor = match &t.value.kind {
        ExprKind::Name(n) => n.name.as_str(),
        _ => "?",
    };
    let Some(size) = usize::try_from(j).ok().and_then(|j| dims.get(j)) else {
        c.diags.push(
            Diagnostic::new(
                codes::E0611,
                format!(
                    "`{tensor}` has {} dimension(s), so it has no dimension {j} to shard",
                    dims.len()
                ),
                c.label(
                    dim.span,
                    format!("dimensions are 0 to {}", dims.len().saturating_sub(1)),
                ),
            )
            .with_help(directive_help(name)),
        );
        return;
    };
    if let (crate::types::D::K(size), Some(n)) = (size, parts_v) {
        if size % n != 0 {
            c.diags.push(
                Diagnostic::new(
                    codes::E0611,
                    format!(
                        "dimension {j} of `{tensor}` has {size} indices, which do not split into {n} equal shards"
                    ),
                    c.label(parts.span, format!("{size} is not a multiple of {n}")),
                )
                .with_help(format!(
                    "shard into a number of parts that divides {size}: {}",
                    divisors(*size)
                )),
            );
        }
    }
}

/// The divisors of `n` (at most a few, for help texts).
fn divisors(n: i64) -> String {
    let ds: Vec<String> = (1..=n.min(1 << 20))
        .filter(|d| n % d == 0)
        .take(8)
        .map(|d| d.to_string())
        .collect();
    ds.join(", ")
}

/// E0608: a schedule key (`affinity`, `hash`, `by`, `stream_by`, `priority`) over an axis of
/// this file that no loop of its workloads or processes iterates: a task's key reads the
/// coordinate of the loop over that axis the task is inside, so every task would fail.
pub(super) fn key_axes(c: &mut Checker, s: &Schedule, iterated: &BTreeSet<String>) {
    for k in crate::keys::key_exprs(s) {
        let (d, affinity) = (k.directive, k.affinity);
        let mut used = Vec::new();
        crate::keys::key_names(k.expr, &mut used);
        // `affinity(x)` of a non-axis is E0606 already (`policy_args`).
        for n in used {
            match c.scope.get(&n.name).map(|s| s.symbol.clone()) {
                Some(Symbol::Axis(_) | Symbol::Const) => {}
                Some(_) if affinity => continue,
                Some(other) => {
                    c.diags.push(
                        Diagnostic::new(
                            codes::E0606,
                            format!(
                                "a schedule key is built from axes, integer constants and arithmetic; `{}` is {}",
                                n.name,
                                other.describe()
                            ),
                            c.label(n.span, "not an axis or a constant"),
                        )
                        .with_help(directive_help(&d.name.name)),
                    );
                    continue;
                }
                None => {
                    c.unresolved(n);
                    if let Some(last) = c.diags.last_mut() {
                        last.notes.push(
                            "a schedule key names axes, not loop variables: `affinity(batch)` keys a task by the coordinate of the loop over `batch` it is inside"
                                .into(),
                        );
                    }
                    continue;
                }
            }
            let local_axis = matches!(
                c.scope.get(&n.name),
                Some(Scoped {
                    symbol: Symbol::Axis(_),
                    from: None
                })
            );
            // A key a later directive of its name overrides (W0601) is never read.
            if !local_axis || iterated.contains(&n.name) || !k.effective {
                continue;
            }
            c.diags.push(
                Diagnostic::new(
                    codes::E0608,
                    format!("the schedule's key uses axis `{}`, which no loop iterates", n.name),
                    c.label(n.span, "no loop of this file's workloads or processes iterates it"),
                )
                .with_note(format!(
                    "a task's key reads the coordinate of the loop over `{}` the task is inside; with no such loop, every task fails at run time",
                    n.name
                ))
                .with_help("key by an axis a loop iterates (`for b in P(batch)` makes `affinity(batch)` mean `b`)"),
            );
        }
    }
}

/// E0606: the arguments of a schedule policy: `round_robin(n)`, `batched(n)`, `interleaved(n)`,
/// `rate_limit(n)` a positive integer constant; `affinity(axis)` an axis; `hash(e)`, `by(e)`,
/// `priority(e)` one expression; `work_steal`, `immediate`, `fifo`, `lifo` and targets none.
fn policy_args(c: &mut Checker, directive: &str, policy: &Ident, arg: &Expr) {
    let args: Vec<&Expr> = match &arg.kind {
        ExprKind::Call { args, .. } => args.iter().map(|a| &a.value).collect(),
        _ => Vec::new(),
    };
    let is_call = matches!(arg.kind, ExprKind::Call { .. });
    let p = policy.name.as_str();
    let fail = |c: &mut Checker, span: Span, msg: String, label: &str| {
        c.diags.push(
            Diagnostic::new(codes::E0606, msg, c.label(span, label.to_string()))
                .with_help(directive_help(directive)),
        );
    };
    match Policy::from_name(p).map(Policy::arg) {
        Some(PolicyArg::Count) => match args.as_slice() {
            [n] => match crate::types::eval_int(n, c.consts) {
                Some(v) if (1..=u32::MAX as i64).contains(&v) => {}
                Some(v) if v >= 1 => fail(
                    c,
                    n.span,
                    format!("`{p}` takes a count up to {}, found {v}", u32::MAX),
                    "too large",
                ),
                Some(v) => fail(
                    c,
                    n.span,
                    format!("`{p}` needs a positive count, found {v}"),
                    "must be at least 1",
                ),
                None => fail(
                    c,
                    n.span,
                    format!("`{p}` takes an integer constant"),
                    "not an integer constant",
                ),
            },
            _ => fail(
                c,
                arg.span,
                format!("`{p}` takes one count, found {} argument(s)", args.len()),
                "write e.g. `round_robin(4)`",
            ),
        },
        Some(PolicyArg::Axis) => match args.as_slice() {
            [Expr {
                kind: ExprKind::Name(n),
                span,
            }] => match c.scope.get(&n.name).map(|s| s.symbol.clone()) {
                Some(Symbol::Axis(_)) | None => {}
                Some(other) => fail(
                    c,
                    *span,
                    format!(
                        "`affinity` takes an axis; `{}` is {}",
                        n.name,
                        other.describe()
                    ),
                    "not an axis",
                ),
            },
            _ => fail(
                c,
                arg.span,
                "`affinity` takes one axis".into(),
                "write e.g. `affinity(batch)`",
            ),
        },
        Some(PolicyArg::Key) => {
            if args.len() != 1 {
                fail(
                    c,
                    arg.span,
                    format!("`{p}` takes one expression, found {}", args.len()),
                    "write e.g. `hash(b)`",
                );
            }
        }
        _ => {
            if is_call {
                fail(
                    c,
                    arg.span,
                    format!("`{p}` takes no arguments"),
                    "remove the parentheses",
                );
            }
        }
    }
}

/// The largest `.task_window(n)`: the runtime's `MAX_WINDOW` (the checker does not link the
/// runtime; a wsp-sim test keeps the two equal).
pub const MAX_TASK_WINDOW: i64 = 1 << 24;

/// The most `.streams(n)`: the runtime's `MAX_STREAMS` (kept equal the same way).
pub const MAX_STREAMS: i64 = 1 << 16;

/// How a schedule directive is written (for messages and hovers).
pub fn directive_help(name: &str) -> &'static str {
    DirectiveKind::from_name(name).map_or(
        "see `wsp explain E0601` for the directives",
        DirectiveKind::usage,
    )
}
