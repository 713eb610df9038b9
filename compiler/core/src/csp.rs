//! The static channel graph of a file's processes (issue #6, item 1).
//!
//! Nodes are processes, edges are channels from their `produces` processes to their
//! `consumes` processes. Reported: a channel some process consumes that no process
//! produces (it is closed from the start, so the consumer sees no token), a channel some
//! process produces that no process consumes (the producer blocks once `depth` tokens are
//! queued), and cycles of processes joined through channels (a cycle where every process
//! waits to consume before it sends deadlocks).
//!
//! Per `connect(...)`: a channel consumed by two different processes of the pipeline is an
//! error (E0506). Which consumer takes a token depends on the processes' clocks, so on the
//! architecture model and the schedule, and the two bodies differ: the outputs would too.
//! Replicas of one process run the same body, so they may share a channel.

use std::collections::BTreeMap;

use wsp_diagnostics::{Diagnostic, FileName, Label, Span};
use wsp_syntax::ast::{ExprKind, ItemKind, WorkloadBody};

use crate::db::{parse_file, Db, File, Symbol};
use crate::resolve::{ImportTarget, Scoped};

struct Proc {
    name: String,
    span: Span,
    consumes: Vec<(String, Span)>,
    produces: Vec<(String, Span)>,
}

/// Channel-graph diagnostics of one file (absolute spans).
#[salsa::tracked(returns(ref))]
pub fn channel_graph(db: &dyn Db, file: File) -> Vec<Diagnostic> {
    let parse = parse_file(db, file);
    let fname = FileName::new(file.path(db).as_str());
    let mut channels: BTreeMap<String, Span> = BTreeMap::new();
    let mut procs: Vec<Proc> = Vec::new();
    for node in &parse.file.items {
        let off = node.range.start;
        match &node.item.kind {
            ItemKind::Channel(c) => {
                channels
                    .entry(c.name.name.clone())
                    .or_insert(c.name.span.shift(off));
            }
            ItemKind::Process(p) => procs.push(Proc {
                name: p.name.name.clone(),
                span: p.name.span.shift(off),
                consumes: p
                    .consumes
                    .iter()
                    .map(|i| (i.name.clone(), i.span.shift(off)))
                    .collect(),
                produces: p
                    .produces
                    .iter()
                    .map(|i| (i.name.clone(), i.span.shift(off)))
                    .collect(),
            }),
            _ => {}
        }
    }
    let mut diags = Vec::new();
    competing_consumers(db, file, &fname, &procs, &mut diags);
    let producers = |ch: &str| -> Vec<usize> {
        (0..procs.len())
            .filter(|&i| procs[i].produces.iter().any(|(n, _)| n == ch))
            .collect()
    };
    let consumers = |ch: &str| -> Vec<usize> {
        (0..procs.len())
            .filter(|&i| procs[i].consumes.iter().any(|(n, _)| n == ch))
            .collect()
    };
    for (ch, ch_span) in &channels {
        let prods = producers(ch);
        let cons = consumers(ch);
        if prods.is_empty() {
            if let Some(&c) = cons.first() {
                let Some((_, span)) = procs[c].consumes.iter().find(|(n, _)| n == ch) else {
                    continue;
                };
                diags.push(
                    Diagnostic::new(
                        "W0501",
                        format!("process `{}` consumes `{ch}` but no process produces it", procs[c].name),
                        Label::new(fname.clone(), *span, "never produced"),
                    )
                    .with_label(Label::new(fname.clone(), *ch_span, "channel declared here"))
                    .with_note("a channel closes when every producer has finished; with none it is closed from the start and the consumer sees no token")
                    .with_help(format!("add `produces {ch}` to the process that sends on it")),
                );
            }
        } else if cons.is_empty() {
            let p = prods[0];
            let Some((_, span)) = procs[p].produces.iter().find(|(n, _)| n == ch) else {
                continue;
            };
            diags.push(
                Diagnostic::new(
                    "W0502",
                    format!(
                        "process `{}` produces `{ch}` but no process consumes it",
                        procs[p].name
                    ),
                    Label::new(fname.clone(), *span, "never consumed"),
                )
                .with_label(Label::new(fname.clone(), *ch_span, "channel declared here"))
                .with_note("a producer blocks once the channel holds `depth` tokens nobody takes")
                .with_help(format!("add a process that declares `consumes {ch}`")),
            );
        }
    }
    // Process graph: i -> j when i produces a channel j consumes.
    let n = procs.len();
    let mut succ: Vec<Vec<(usize, String)>> = vec![Vec::new(); n];
    for (i, p) in procs.iter().enumerate() {
        for (ch, _) in &p.produces {
            for j in consumers(ch) {
                succ[i].push((j, ch.clone()));
            }
        }
    }
    // Find one cycle per strongly connected component via DFS colouring; report each
    // cycle once, at the process of smallest index on it.
    let mut colour = vec![0u8; n];
    let mut reported = vec![false; n];
    for start in 0..n {
        if colour[start] != 0 {
            continue;
        }
        // Iterative DFS with an explicit path.
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        colour[start] = 1;
        while let Some(&mut (v, ref mut k)) = stack.last_mut() {
            if *k < succ[v].len() {
                let (w, _) = succ[v][*k];
                *k += 1;
                if colour[w] == 0 {
                    colour[w] = 1;
                    stack.push((w, 0));
                } else if colour[w] == 1 {
                    // Back edge v -> w: the cycle is the stack from w to v.
                    let Some(pos) = stack.iter().position(|&(u, _)| u == w) else {
                        continue;
                    };
                    let cycle: Vec<usize> = stack[pos..].iter().map(|&(u, _)| u).collect();
                    if cycle.iter().any(|&u| reported[u]) {
                        continue;
                    }
                    for &u in &cycle {
                        reported[u] = true;
                    }
                    diags.push(cycle_diag(&fname, &procs, &succ, &cycle));
                }
            } else {
                colour[v] = 2;
                stack.pop();
            }
        }
    }
    diags
}

/// A process of a pipeline, as E0506 sees it: its name, and each channel it consumes as
/// (the module that declares the channel, its name) with where to label it in this file.
struct Member {
    name: String,
    consumes: Vec<((String, String), Span)>,
}

/// The module that declares channel `ch` as `file`'s scope sees it.
fn channel_home(db: &dyn Db, file: File, ch: &str) -> String {
    match crate::resolve::scope(db, file).get(ch) {
        Some(Scoped { from: Some(m), .. }) => m.clone(),
        _ => file.path(db).to_string(),
    }
}

/// The pipeline member named `name` (a process of this file, or one it imports), labelled at
/// its `consumes` declarations when local and at `operand` when imported.
fn member(db: &dyn Db, file: File, procs: &[Proc], name: &str, operand: Span) -> Option<Member> {
    if let Some(p) = procs.iter().find(|p| p.name == name) {
        return Some(Member {
            name: name.to_string(),
            consumes: p
                .consumes
                .iter()
                .map(|(c, span)| ((channel_home(db, file, c), c.clone()), *span))
                .collect(),
        });
    }
    let Some(Scoped {
        symbol: Symbol::Process,
        from: Some(module),
    }) = crate::resolve::scope(db, file).get(name)
    else {
        return None;
    };
    let m = crate::resolve::imports_of(db, file)
        .iter()
        .find_map(|(path, t)| match t {
            ImportTarget::Loaded(m) if path == module => Some(*m),
            _ => None,
        })?;
    parse_file(db, m)
        .file
        .items
        .iter()
        .find_map(|n| match &n.item.kind {
            ItemKind::Process(p) if p.name.name == name => Some(Member {
                name: name.to_string(),
                consumes: p
                    .consumes
                    .iter()
                    .map(|c| ((channel_home(db, m, &c.name), c.name.clone()), operand))
                    .collect(),
            }),
            _ => None,
        })
}

/// E0506: in one `connect`, a channel consumed by two different processes (of this file or
/// imported).
fn competing_consumers(
    db: &dyn Db,
    file: File,
    fname: &FileName,
    procs: &[Proc],
    diags: &mut Vec<Diagnostic>,
) {
    for node in &parse_file(db, file).file.items {
        let ItemKind::Workload(w) = &node.item.kind else {
            continue;
        };
        let WorkloadBody::Expr(e) = &w.body else {
            continue;
        };
        let off = node.range.start;
        let mut connects = Vec::new();
        crate::tokens::find_connects(e, &mut connects);
        for (callee, args) in connects {
            // The pipeline's processes (a replicated one once), in operand order.
            let mut members: Vec<Member> = Vec::new();
            for a in args {
                let v = match &a.value.kind {
                    ExprKind::Call { callee, args, .. } if matches!(&callee.kind, ExprKind::Name(n) if n.name == "replicate") => {
                        match args.first() {
                            Some(p) => &p.value,
                            None => continue,
                        }
                    }
                    _ => &a.value,
                };
                let ExprKind::Name(n) = &v.kind else {
                    continue;
                };
                if members.iter().any(|m| m.name == n.name) {
                    continue;
                }
                // An unknown name is E0101, a non-process E0407.
                if let Some(m) = member(db, file, procs, &n.name, v.span.shift(off)) {
                    members.push(m);
                }
            }
            let mut seen: Vec<&(String, String)> = Vec::new();
            for m in &members {
                for (ch, _) in &m.consumes {
                    if seen.contains(&ch) {
                        continue;
                    }
                    seen.push(ch);
                    let who: Vec<(&str, Span)> = members
                        .iter()
                        .filter_map(|x| {
                            let (_, at) = x.consumes.iter().find(|(c, _)| c == ch)?;
                            Some((x.name.as_str(), *at))
                        })
                        .collect();
                    if who.len() < 2 {
                        continue;
                    }
                    diags.push(consumers_diag(fname, &ch.1, &who, callee.shift(off)));
                }
            }
        }
    }
}

fn consumers_diag(fname: &FileName, ch: &str, who: &[(&str, Span)], connect: Span) -> Diagnostic {
    let names: Vec<String> = who.iter().map(|(n, _)| format!("`{n}`")).collect();
    let listed = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    };
    let (first, at) = who[0];
    let mut d = Diagnostic::new(
        "E0506",
        format!("channel `{ch}` is consumed by {listed} in one pipeline"),
        Label::new(fname.clone(), at, format!("`{first}` consumes `{ch}`")),
    );
    for &(n, at) in &who[1..] {
        d = d.with_label(Label::new(fname.clone(), at, format!("and so does `{n}`")));
    }
    d.with_label(Label::new(fname.clone(), connect, "in this pipeline"))
        .with_note(
            "each token goes to one consumer, the first ready to take it: which one depends on the processes' clocks, so on the architecture model and the schedule, and with different bodies the outputs would too",
        )
        .with_help(format!(
            "consume `{ch}` in one process; to share its tokens among workers, `replicate` that process (replicas run the same body), or give each consumer a channel of its own"
        ))
}

fn cycle_diag(
    fname: &FileName,
    procs: &[Proc],
    succ: &[Vec<(usize, String)>],
    cycle: &[usize],
) -> Diagnostic {
    let first = cycle[0];
    let mut names: Vec<String> = Vec::new();
    let mut d = Diagnostic::new(
        "W0503",
        String::new(),
        Label::new(fname.clone(), procs[first].span, "on a cycle of channels"),
    );
    for (k, &u) in cycle.iter().enumerate() {
        let next = cycle[(k + 1) % cycle.len()];
        let ch = succ[u]
            .iter()
            .find(|(w, _)| *w == next)
            .map(|(_, c)| c.clone())
            .unwrap_or_default();
        names.push(format!("`{}` -[{ch}]->", procs[u].name));
        if let Some((_, span)) = procs[u].produces.iter().find(|(n, _)| *n == ch) {
            d = d.with_label(Label::new(
                fname.clone(),
                *span,
                format!(
                    "`{}` feeds `{}` through `{ch}`",
                    procs[u].name, procs[next].name
                ),
            ));
        }
    }
    names.push(format!("`{}`", procs[first].name));
    d.message = format!(
        "processes form a cycle through channels: {}",
        names.join(" ")
    );
    d.with_note("if every process on the cycle waits to consume before it sends, none can start: the pipeline deadlocks")
        .with_help("make sure one process on the cycle sends before it consumes, or break the cycle")
}
