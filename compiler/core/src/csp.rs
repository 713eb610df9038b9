//! The static channel graph of a file's processes.
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

use std::collections::{BTreeMap, BTreeSet};

use wsp_diagnostics::{Diagnostic, FileName, Label, Span};
use wsp_syntax::ast::{Expr, ExprKind, ItemKind, WorkloadBody};

use crate::db::{items_of, Db, File, ItemTag, Symbol};
use crate::resolve::Scoped;
use wsp_vocab::codes;

struct Proc {
    name: String,
    span: Span,
    consumes: Vec<(String, Span)>,
    produces: Vec<(String, Span)>,
}

/// Channel-graph diagnostics of one file (virtual spans: [`crate::db::real_spans`]).
#[salsa::tracked(returns(ref))]
pub fn channel_graph(db: &dyn Db, file: File) -> Vec<Diagnostic> {
    let fname = FileName::new(file.path(db).as_str());
    let mut channels: BTreeMap<String, Span> = BTreeMap::new();
    let mut procs: Vec<Proc> = Vec::new();
    for (_, off, item) in items_of(db, file, &[ItemTag::Channel, ItemTag::Process]) {
        match &item.kind {
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
    // Channels of this file that imported processes of its pipelines produce or consume (a
    // module of stages that imports the file's channel): (produced, consumed) by name.
    let (imp_prod, imp_cons) = pipeline_members(db, file, &fname, &mut diags);
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
        if imp_prod.contains(ch) || imp_cons.contains(ch) {
            continue;
        }
        if prods.is_empty() {
            if let Some(&c) = cons.first() {
                let Some((_, span)) = procs[c].consumes.iter().find(|(n, _)| n == ch) else {
                    continue;
                };
                diags.push(
                    Diagnostic::new(
                        codes::W0501,
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
                    codes::W0502,
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

/// A process of a pipeline, as the pipeline checks see it (E0506–E0508, and W0501/W0502 for
/// the channels an imported process uses): its name, each channel it consumes as (the module
/// that declares the channel, its name) with where to label it in this file, the channels it
/// produces, its tensor accesses, and its sends and consumes.
struct Member {
    name: String,
    consumes: Vec<((String, String), Span)>,
    produces: Vec<(String, String)>,
    accesses: crate::races::ProcAccesses,
    /// Its `send`s and `consume`s, by channel key.
    uses: Vec<ChanUse>,
    /// The process's item offset when it is this file's; `None`: imported (labelled at
    /// `operand`).
    local: Option<u32>,
    operand: Span,
    /// Run as more than one instance (`replicate(p, n)` with n ≠ 1, or named twice).
    replicated: bool,
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
fn member(db: &dyn Db, file: File, name: &str, operand: Span) -> Option<Member> {
    let (home, Symbol::Process) = crate::resolve::declaring_file(db, file, name)? else {
        return None;
    };
    let local = home == file;
    let (off, p) =
        items_of(db, home, &[ItemTag::Process]).find_map(|(_, off, item)| match &item.kind {
            ItemKind::Process(p) if p.name.name == name => Some((off, p)),
            _ => None,
        })?;
    let key = |c: &str| (channel_home(db, home, c), c.to_string());
    let accesses = crate::races::process_accesses(
        home.path(db),
        &p.body,
        crate::resolve::scope(db, home),
        crate::db::const_values(db, home),
        crate::races::axis_sizes(db, home),
    );
    let mut walk = UseWalk::default();
    walk.block(&p.body, off);
    let uses = walk.finish(|c| key(c));
    Some(Member {
        uses,
        name: name.to_string(),
        consumes: p
            .consumes
            .iter()
            .map(|c| {
                (
                    key(&c.name),
                    if local { c.span.shift(off) } else { operand },
                )
            })
            .collect(),
        produces: p.produces.iter().map(|c| key(&c.name)).collect(),
        accesses,
        local: local.then_some(off),
        operand,
        replicated: false,
    })
}

/// The checks of each `connect` of the file, over its processes (the file's and imported
/// ones): E0506, a channel consumed by two different processes; E0507, two instances that no
/// channel orders race on a tensor; E0508, a `consume` binding more names than a token carries.
/// Returns the file's channels that imported members produce and consume (by name).
fn pipeline_members(
    db: &dyn Db,
    file: File,
    fname: &FileName,
    diags: &mut Vec<Diagnostic>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let here = file.path(db).as_str();
    let (mut imp_prod, mut imp_cons) = (BTreeSet::new(), BTreeSet::new());
    let consts = crate::db::const_values(db, file);
    // Channels some process of this file consumes (by key).
    let consumed_here: BTreeSet<(String, String)> = items_of(db, file, &[ItemTag::Process])
        .filter_map(|(_, _, item)| match &item.kind {
            ItemKind::Process(p) => Some(&p.consumes),
            _ => None,
        })
        .flatten()
        .map(|c| (channel_home(db, file, &c.name), c.name.clone()))
        .collect();
    for (_, off, item) in items_of(db, file, &[ItemTag::Workload]) {
        let ItemKind::Workload(w) = &item.kind else {
            continue;
        };
        let WorkloadBody::Expr(e) = &w.body else {
            continue;
        };
        let mut connects = Vec::new();
        crate::tokens::find_connects(e, &mut connects);
        for (callee, args) in connects {
            // The pipeline's processes (a replicated one once), in operand order; `whole`: every
            // operand is one (else the pipeline has errors of its own).
            let mut members: Vec<Member> = Vec::new();
            let mut whole = true;
            for a in args {
                let (v, many) = match &a.value.kind {
                    ExprKind::Call { callee, args, .. } if matches!(&callee.kind, ExprKind::Name(n) if n.name == "replicate") =>
                    {
                        match args.first() {
                            // A count of 1 is one instance; a param may be more.
                            Some(p) => (
                                &p.value,
                                args.get(1).is_none_or(|n| {
                                    crate::types::eval_int(&n.value, consts) != Some(1)
                                }),
                            ),
                            None => {
                                whole = false;
                                continue;
                            }
                        }
                    }
                    _ => (&a.value, false),
                };
                let ExprKind::Name(n) = &v.kind else {
                    whole = false;
                    continue;
                };
                if let Some(m) = members.iter_mut().find(|m| m.name == n.name) {
                    m.replicated = true;
                    continue;
                }
                // An unknown name is E0101, a non-process E0407.
                match member(db, file, &n.name, v.span.shift(off)) {
                    Some(mut m) => {
                        m.replicated = many;
                        members.push(m);
                    }
                    None => whole = false,
                }
            }
            let connect = callee.shift(off);
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
                    diags.push(consumers_diag(fname, &ch.1, &who, connect));
                }
            }
            races_between(fname, &members, connect, diags);
            token_arity(fname, &members, connect, diags);
            if whole {
                left_behind(fname, &members, connect, &consumed_here, diags);
            }
            for m in members.iter().filter(|m| m.local.is_none()) {
                let mine = |(f, c): &(String, String)| (f == here).then(|| c.clone());
                imp_prod.extend(m.produces.iter().filter_map(mine));
                imp_cons.extend(m.consumes.iter().filter_map(|(k, _)| mine(k)));
            }
        }
    }
    (imp_prod, imp_cons)
}

/// A `send` or a `consume` of a process, on channel `ch` (by key once the member is built),
/// at `at` (absolute, in the process's file).
struct ChanUse {
    ch: (String, String),
    kind: UseKind,
    at: Span,
}

enum UseKind {
    /// A token of `n` values, whose components at `distinct` differ from one execution of the
    /// send to the next (see [`UseWalk::send`]).
    Send { n: usize, distinct: Vec<usize> },
    /// The names bound, and whether each of them is bound only there in the whole body (a
    /// name bound again may stand for another variable).
    Consume { names: Vec<String>, once: bool },
}

/// The walk of a process body that records its sends and consumes.
#[derive(Default)]
struct UseWalk {
    uses: Vec<ChanUse>,
    /// Variables of the loops around the current statement, innermost last; how many
    /// `consume` bodies it is in; the names `let` bound so far; every name a loop, a `consume`
    /// or a `let` binds, once per binding.
    loops: Vec<Vec<String>>,
    in_consume: usize,
    lets: Vec<String>,
    bound: Vec<String>,
}

impl UseWalk {
    fn block(&mut self, b: &wsp_syntax::ast::Block, off: u32) {
        use wsp_syntax::ast::StmtKind;
        for st in &b.stmts {
            match &st.kind {
                StmtKind::Send { channel, value } => {
                    self.send(&channel.name, value, st.span.shift(off))
                }
                StmtKind::Consume {
                    channel,
                    bindings,
                    body,
                } => {
                    let names: Vec<String> = bindings.iter().map(|b| b.name.clone()).collect();
                    self.bound.extend(names.iter().cloned());
                    self.uses.push(ChanUse {
                        ch: (String::new(), channel.name.clone()),
                        kind: UseKind::Consume { names, once: false },
                        at: bindings
                            .first()
                            .zip(bindings.last())
                            .map_or(channel.span, |(a, z)| a.span.cover(z.span))
                            .shift(off),
                    });
                    self.in_consume += 1;
                    self.block(body, off);
                    self.in_consume -= 1;
                }
                StmtKind::For { vars, body, .. } => {
                    let names: Vec<String> = vars.iter().map(|v| v.name.clone()).collect();
                    self.bound.extend(names.iter().cloned());
                    self.loops.push(names);
                    self.block(body, off);
                    self.loops.pop();
                }
                StmtKind::Section { body, .. } => self.block(body, off),
                StmtKind::When {
                    branches,
                    otherwise,
                } => {
                    for (_, bb) in branches {
                        self.block(bb, off);
                    }
                    if let Some(bb) = otherwise {
                        self.block(bb, off);
                    }
                }
                StmtKind::Let { names, .. } => {
                    for n in names {
                        self.bound.push(n.name.clone());
                        self.lets.push(n.name.clone());
                    }
                }
                _ => {}
            }
        }
    }

    /// Records a `send` on `channel`: its token's components (the task's coordinates, a
    /// tuple's values, or the one value), and which of them are distinct from one execution
    /// of the send to the next. That is known when the send runs once per iteration of a
    /// single one-variable loop and of nothing else (no outer loop, not in a `consume` body,
    /// the variable not bound again by a `let` before it): the components that are that
    /// loop's variable.
    fn send(&mut self, channel: &str, value: &Expr, at: Span) {
        let comps: Vec<&Expr> = match &value.kind {
            ExprKind::Call {
                coords: Some(c), ..
            } => c.iter().collect(),
            ExprKind::Tuple(xs) => xs.iter().collect(),
            _ => vec![value],
        };
        let distinct = match self.loops.as_slice() {
            [only] if only.len() == 1 && self.in_consume == 0 && !self.lets.contains(&only[0]) => {
                comps
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| matches!(&e.kind, ExprKind::Name(n) if n.name == only[0]))
                    .map(|(k, _)| k)
                    .collect()
            }
            _ => Vec::new(),
        };
        self.uses.push(ChanUse {
            ch: (String::new(), channel.to_string()),
            kind: UseKind::Send {
                n: comps.len(),
                distinct,
            },
            at,
        });
    }

    /// The uses, channels keyed by `key` (of their name), with each consume's `once`.
    fn finish(self, key: impl Fn(&str) -> (String, String)) -> Vec<ChanUse> {
        let bound = self.bound;
        self.uses
            .into_iter()
            .map(|mut u| {
                u.ch = key(&u.ch.1);
                if let UseKind::Consume { names, once } = &mut u.kind {
                    *once = names
                        .iter()
                        .all(|n| bound.iter().filter(|b| *b == n).count() == 1);
                }
                u
            })
            .collect()
    }
}

/// E0508: in one pipeline, a `consume` that binds more names than a token sent on its channel
/// carries (the run would stop at that token).
fn token_arity(fname: &FileName, members: &[Member], connect: Span, diags: &mut Vec<Diagnostic>) {
    let at = |m: &Member, u: &ChanUse| if m.local.is_some() { u.at } else { m.operand };
    for c in members {
        for recv in &c.uses {
            let UseKind::Consume { names, .. } = &recv.kind else {
                continue;
            };
            let bound = names.len();
            let short = members.iter().find_map(|p| {
                p.uses.iter().find_map(|u| match u.kind {
                    UseKind::Send { n, .. } if u.ch == recv.ch && n < bound => Some((p, u, n)),
                    _ => None,
                })
            });
            let Some((p, send, n)) = short else { continue };
            let ch = &recv.ch.1;
            let values = |n: usize| {
                if n == 1 {
                    "1 value".to_string()
                } else {
                    format!("{n} values")
                }
            };
            diags.push(
                Diagnostic::new(
                    codes::E0508,
                    format!(
                        "`{}` binds {bound} names to a token of `{ch}`, but `{}` sends tokens of {}",
                        c.name,
                        p.name,
                        values(n)
                    ),
                    Label::new(fname.clone(), at(c, recv), format!("binds {bound} names")),
                )
                .with_label(Label::new(
                    fname.clone(),
                    at(p, send),
                    format!("a token of {}", values(n)),
                ))
                .with_label(Label::new(fname.clone(), connect, "in this pipeline"))
                .with_note("a token carries the values sent (`send c, (i, j)`: 2) or the coordinates of the task sent (`send c, k[i](...)`: 1); a `consume` may bind fewer names, never more")
                .with_help(format!(
                    "bind at most {n} name{} in this `consume`, or send more values",
                    if n == 1 { "" } else { "s" }
                )),
            );
        }
    }
}

/// W0506: a channel that a process of the pipeline produces and none of its processes consumes,
/// when another process of the file does (else it is W0502): the pipeline leaves its tokens in
/// the channel, and a later pipeline that uses it starts with them.
fn left_behind(
    fname: &FileName,
    members: &[Member],
    connect: Span,
    consumed_here: &BTreeSet<(String, String)>,
    diags: &mut Vec<Diagnostic>,
) {
    let mut seen = BTreeSet::new();
    for p in members {
        for ch in &p.produces {
            let consumed = members
                .iter()
                .any(|m| m.consumes.iter().any(|(c, _)| c == ch));
            if consumed || !consumed_here.contains(ch) || !seen.insert(ch.clone()) {
                continue;
            }
            diags.push(
                Diagnostic::new(
                    codes::W0506,
                    format!(
                        "no process of this pipeline consumes `{}`, which `{}` produces",
                        ch.1, p.name
                    ),
                    Label::new(fname.clone(), p.operand, format!("`{}` sends on `{}`", p.name, ch.1)),
                )
                .with_label(Label::new(fname.clone(), connect, "in this pipeline"))
                .with_note("its tokens stay in the channel when the pipeline ends: a later pipeline that uses the channel starts with them, and its producers block once the channel is full")
                .with_help(format!(
                    "add a process that consumes `{}` to this `connect`, or do not produce it here",
                    ch.1
                )),
            );
        }
    }
}

/// The most distinct processes of one pipeline that E0507 judges.
const MAX_RACE_MEMBERS: usize = 4096;

/// E0507: accesses of two instances of a pipeline's processes that may overlap, one writing,
/// when neither process sends to the other through the pipeline's channels (directly or
/// through other processes): nothing orders them, so which comes first depends on the
/// processes' clocks. Processes a channel path connects may be ordered by their tokens and are
/// not judged here; replicas of one process are, each on its own tokens.
fn races_between(fname: &FileName, members: &[Member], connect: Span, diags: &mut Vec<Diagnostic>) {
    let n = members.len();
    // The token paths are a matrix over the pipeline's distinct processes: beyond
    // `MAX_RACE_MEMBERS` of them the check is not made (language.md says so).
    if n > MAX_RACE_MEMBERS {
        return;
    }
    // reach[i][j]: a token path from member i to member j.
    let feeds = |i: usize, j: usize| {
        members[i]
            .produces
            .iter()
            .any(|c| members[j].consumes.iter().any(|(d, _)| d == c))
    };
    let succ: Vec<Vec<usize>> = (0..n)
        .map(|i| (0..n).filter(|&j| feeds(i, j)).collect())
        .collect();
    let mut reach = vec![vec![false; n]; n];
    for (i, row) in reach.iter_mut().enumerate() {
        let mut stack = vec![i];
        while let Some(x) = stack.pop() {
            for &j in &succ[x] {
                if !row[j] {
                    row[j] = true;
                    stack.push(j);
                }
            }
        }
    }
    for i in 0..n {
        for j in i..n {
            let (a, b) = (&members[i], &members[j]);
            let same = i == j;
            // Two processes that consume one channel are E0506 already.
            let compete = || {
                a.consumes
                    .iter()
                    .any(|(c, _)| b.consumes.iter().any(|(d, _)| d == c))
            };
            if (same && (!a.replicated || reach[i][i]))
                || (!same && (reach[i][j] || reach[j][i] || compete()))
            {
                continue;
            }
            let distinct = if same {
                distinct_tokens(members, a)
            } else {
                Vec::new()
            };
            if let Some((x, y)) =
                crate::races::process_conflict(&a.accesses, &b.accesses, same, &distinct)
            {
                diags.push(race_diag(fname, (a, x), (b, y), connect));
            }
        }
    }
}

/// The names replicated member `m` binds to token components that differ from one token to
/// the next, so that each replica's tokens differ there: its channel has one producer in the
/// pipeline, run as one instance, with one `send` on it, whose component at that position is
/// the variable of the one loop around the send (see [`UseWalk::send`]).
fn distinct_tokens(members: &[Member], m: &Member) -> Vec<String> {
    let mut out = Vec::new();
    for u in &m.uses {
        let UseKind::Consume { names, once: true } = &u.kind else {
            continue;
        };
        let producers: Vec<&Member> = members
            .iter()
            .filter(|p| p.produces.contains(&u.ch))
            .collect();
        let [p] = producers.as_slice() else { continue };
        if p.replicated || std::ptr::eq(*p, m) {
            continue;
        }
        let sends: Vec<&Vec<usize>> = p
            .uses
            .iter()
            .filter_map(|s| match &s.kind {
                UseKind::Send { distinct, .. } if s.ch == u.ch => Some(distinct),
                _ => None,
            })
            .collect();
        let [d] = sends.as_slice() else { continue };
        out.extend(d.iter().filter_map(|&k| names.get(k).cloned()));
    }
    out
}

fn race_diag(
    fname: &FileName,
    (a, x): (&Member, &crate::races::Access),
    (b, y): (&Member, &crate::races::Access),
    connect: Span,
) -> Diagnostic {
    let label = |m: &Member, acc: &crate::races::Access, what: &str| match m.local {
        Some(off) => Label::new(fname.clone(), acc.span.shift(off), what.to_string()),
        None => Label::new(
            fname.clone(),
            m.operand,
            format!("{what} (`{}` is imported)", m.name),
        ),
    };
    let same = std::ptr::eq(a, b);
    let (msg, first, second, help) = if same {
        (
            format!(
                "replicas of `{}` race on `{}` in one pipeline",
                a.name, x.text
            ),
            format!("one replica of `{}` accesses `{}`", a.name, x.text),
            format!("while another accesses `{}`", y.text),
            "index what each replica writes by the token it received (`Y[i]` in `consume c as i`), so that each token's region is its own, or run one instance".to_string(),
        )
    } else {
        (
            format!(
                "processes `{}` and `{}` race on `{}` in one pipeline",
                a.name, b.name, x.text
            ),
            format!("`{}` accesses `{}`", a.name, x.text),
            format!("and `{}` accesses `{}`", b.name, y.text),
            format!(
                "give each process its own region, or order them: let `{}` consume a channel that `{}` produces (a token sent after the access) or the other way round",
                b.name, a.name
            ),
        )
    };
    let mut d = Diagnostic::new(codes::E0507, msg, label(a, x, &first));
    if !same || x.span != y.span {
        d = d.with_label(label(b, y, &second));
    }
    d.with_label(Label::new(fname.clone(), connect, "in this pipeline"))
        .with_note("one of the accesses writes, and no channel token orders them: which comes first depends on the processes' clocks, so on the architecture model and the schedule, and so would the outputs")
        .with_help(help)
}

fn consumers_diag(fname: &FileName, ch: &str, who: &[(&str, Span)], connect: Span) -> Diagnostic {
    let names: Vec<String> = who.iter().map(|(n, _)| format!("`{n}`")).collect();
    let listed = match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    };
    let (first, at) = who[0];
    let mut d = Diagnostic::new(
        codes::E0506,
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
        codes::W0503,
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
