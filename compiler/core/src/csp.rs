//! The static channel graph of a file's processes (issue #6, item 1).
//!
//! Nodes are processes, edges are channels from their `produces` processes to their
//! `consumes` processes. Reported: a channel some process consumes that no process
//! produces (it is closed from the start, so the consumer sees no token), a channel some
//! process produces that no process consumes (the producer blocks once `depth` tokens are
//! queued), and cycles of processes joined through channels (a cycle where every process
//! waits to consume before it sends deadlocks).

use std::collections::BTreeMap;

use wsp_diagnostics::{Diagnostic, FileName, Label, Span};
use wsp_syntax::ast::ItemKind;

use crate::db::{parse_file, Db, File};

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
