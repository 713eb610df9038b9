//! Static deadlock verdicts of CSP pipelines by abstract token counting (issue #6, item 1).
//!
//! For each `connect(...)` workload whose processes have static trip counts, the processes are
//! executed abstractly: tokens carry no values, only their number matters. A process body
//! becomes a tree of actions — tasks, sends, and `consume` loops whose bodies run once per
//! received token until the channel is closed and empty — and `for` loops over constant Dense
//! axes or constant ranges repeat their bodies. The simulation follows how `wsp run`'s runtime
//! schedules processes (`Runtime::run_processes`): the lowest-numbered process that can move
//! takes one step, one visible action (task, send, receive), then the choice starts again from
//! the first; channels are bounded by their depth (depth 0: the sender waits until its token is
//! taken), a channel closes when every producer of it has finished, and the run deadlocks when
//! no process can move. (Stepping round-robin instead disagreed with `wsp run` on cycles where
//! one process both takes and gives back a channel's tokens that another also produces.)
//!
//! A deadlock is E0509, with the blocked sites, the channel fills and the smallest total
//! increase of depths that completes (or the fact that no depth helps: even unbounded channels
//! deadlock). A pipeline whose counts are not static (Ragged / Sparse / DenseDyn axes, `P.sel`,
//! `when`, params) or too large to simulate is W0505, once per `connect`.
//!
//! A pipeline's processes, channels and axes may come from other files: each is lowered in the
//! file that declares it, with that file's constants, and a channel is one channel under every
//! name that imports it. Labels and quick fixes point into the file of what they name; the
//! primary label stays in the analysed file.
//!
//! The deadlock verdict is a warning rather than an error so that the program still lowers
//! and runs: `wsp run` then reports the same deadlock as E0811 (exit 3).

use std::collections::{BTreeMap, VecDeque};

use wsp_diagnostics::{Diagnostic, Edit, FileName, Fix, Label, Span};
use wsp_syntax::ast::{Block, Expr, ExprKind, ItemKind, StmtKind};

use crate::db::{parse_file, Db, File, Symbol};
use crate::resolve::Scoped;
use wsp_vocab::codes;

/// Budget of abstract steps for one `connect` (all simulations, including the depth search).
const STEP_BUDGET: u64 = 1_000_000;

/// A place in one of the program's files: the file (an index into the analysis's files, the
/// analysed one first) and an absolute span in it.
#[derive(Clone, Copy, Debug)]
struct At {
    file: usize,
    span: Span,
}

#[derive(Clone, Debug)]
enum Node {
    Task,
    Send { ch: usize, at: At },
    Loop { count: u64, body: Vec<Node> },
    Consume { ch: usize, at: At, body: Vec<Node> },
}

struct Chan {
    name: String,
    depth: u64,
    /// A constant depth out of range: an error of its own (E0505), nothing to decide.
    invalid: bool,
    /// Where a quick fix writes a new depth `n` (absolute span in file `fix_file`): replace the
    /// span with `{prefix}{n}{suffix}`.
    fix_at: (Span, &'static str, &'static str),
    fix_file: usize,
}

struct Proc {
    name: String,
    produces: Vec<usize>,
    body: Vec<Node>,
}

/// Why a pipeline cannot be decided: where, and a reason.
struct Undecidable(At, String);

/// What a process body of one file sees: the file, the item's offset, the file's constants, and
/// the axes and channels visible there (its own and those it imports).
struct Ctx<'a> {
    file: usize,
    off: u32,
    consts: &'a BTreeMap<String, i64>,
    axes: &'a BTreeMap<String, Result<u64, String>>,
    chans: &'a BTreeMap<String, usize>,
}

impl Ctx<'_> {
    fn at(&self, span: Span) -> At {
        At {
            file: self.file,
            span: span.shift(self.off),
        }
    }
}

/// A non-negative integer constant expression, folded as everywhere else in the checker.
fn const_int(e: &Expr, consts: &BTreeMap<String, i64>) -> Option<u64> {
    crate::types::eval_int(e, consts).and_then(|v| u64::try_from(v).ok())
}

fn lower_block(b: &Block, cx: &Ctx) -> Result<Vec<Node>, Undecidable> {
    let mut out = Vec::new();
    for s in &b.stmts {
        let span = cx.at(s.span);
        match &s.kind {
            StmtKind::For { iter, body, .. } => {
                let count = trip_count(iter, cx)?;
                let body = lower_block(body, cx)?;
                out.push(Node::Loop { count, body });
            }
            StmtKind::When { .. } => {
                return Err(Undecidable(
                    span,
                    "a `when` chooses its branch from data at run time".into(),
                ))
            }
            StmtKind::Send { channel, .. } => {
                let at = cx.at(channel.span);
                let ch = *cx.chans.get(&channel.name).ok_or_else(|| {
                    Undecidable(at, format!("`{}` is not a declared channel", channel.name))
                })?;
                out.push(Node::Send { ch, at });
            }
            StmtKind::Consume { channel, body, .. } => {
                let at = cx.at(channel.span);
                let ch = *cx.chans.get(&channel.name).ok_or_else(|| {
                    Undecidable(at, format!("`{}` is not a declared channel", channel.name))
                })?;
                let body = lower_block(body, cx)?;
                out.push(Node::Consume { ch, at, body });
            }
            StmtKind::Expr(e) if matches!(e.kind, ExprKind::Call { .. }) => out.push(Node::Task),
            // Other statements are not channel actions (and are rejected in process bodies by
            // the checker where they do not belong).
            _ => {}
        }
    }
    Ok(out)
}

/// The number of iterations of a process `for` loop, when static.
fn trip_count(iter: &Expr, cx: &Ctx) -> Result<u64, Undecidable> {
    let span = cx.at(iter.span);
    let axis = |e: &Expr| -> Result<u64, Undecidable> {
        match &e.kind {
            ExprKind::Name(n) => match cx.axes.get(&n.name) {
                Some(Ok(v)) => Ok(*v),
                Some(Err(why)) => Err(Undecidable(cx.at(e.span), why.clone())),
                None => Err(Undecidable(
                    cx.at(e.span),
                    format!("`{}` is not a declared axis", n.name),
                )),
            },
            _ => Err(Undecidable(
                cx.at(e.span),
                "the loop runs over a nested (Ragged or Sparse) axis row whose length is data"
                    .into(),
            )),
        }
    };
    match &iter.kind {
        ExprKind::Range { start, end } => {
            let s = match start {
                Some(s) => const_int(s, cx.consts),
                None => Some(0),
            };
            let e = end.as_ref().and_then(|e| const_int(e, cx.consts));
            match (s, e) {
                (Some(s), Some(e)) => Ok(e.saturating_sub(s)),
                _ => Err(Undecidable(
                    span,
                    "the range bounds are not constants".into(),
                )),
            }
        }
        ExprKind::Name(_) => axis(iter),
        ExprKind::Call { callee, args, .. } => {
            let kind = match &callee.kind {
                ExprKind::Name(n) if n.name == "P" => "P",
                ExprKind::Field { base, field } if matches!(&base.kind, ExprKind::Name(n) if n.name == "P") => {
                    field.name.as_str()
                }
                _ => "",
            };
            match kind {
                "P" | "seq" => {
                    let mut n: u64 = 1;
                    for a in args {
                        n = n.saturating_mul(axis(&a.value)?);
                    }
                    Ok(n)
                }
                "sel" => Err(Undecidable(
                    span,
                    "`P.sel` iterates the entries a Sparse row selects, known only at run time"
                        .into(),
                )),
                _ => Err(Undecidable(
                    span,
                    "the loop's trip count is not static".into(),
                )),
            }
        }
        _ => Err(Undecidable(
            span,
            "the loop's trip count is not static".into(),
        )),
    }
}

/// One process instance of the abstract run.
#[derive(Clone)]
struct Thread<'a> {
    frames: Vec<Frame<'a>>,
    pending: Option<(usize, At)>,
    /// A rendezvous send waiting for its token (channel, serial, the send) to be taken.
    awaiting: Option<(usize, u64, At)>,
    blocked: Option<(usize, At, bool)>,
    sent: Vec<u64>,
    received: Vec<u64>,
}

#[derive(Clone)]
enum Frame<'a> {
    Block { nodes: &'a [Node], pc: usize },
    Loop { left: u64, body: &'a [Node] },
    Consume { ch: usize, at: At, body: &'a [Node] },
}

#[derive(Clone)]
struct ChanState {
    queue: VecDeque<u64>,
    live_producers: usize,
    serial: u64,
}

enum Step {
    Progress,
    Blocked,
    Done,
}

/// Blocked state of one process at a deadlock.
struct Wait {
    thread: usize,
    ch: usize,
    at: At,
    /// `true`: waiting to send (full, or for a rendezvous); `false`: waiting on an empty channel.
    sending: bool,
}

enum Outcome {
    Completes {
        sent: Vec<u64>,
    },
    Deadlock {
        waits: Vec<Wait>,
        fill: Vec<usize>,
        threads: Vec<(Vec<u64>, Vec<u64>)>,
        done: Vec<bool>,
    },
    TooLarge,
}

fn step(th: &mut Thread, chans: &mut [ChanState], depths: &[u64]) -> Step {
    th.blocked = None;
    if let Some((c, serial, span)) = th.awaiting {
        if chans[c].queue.contains(&serial) {
            // Still blocked in its send: a deadlock report names it.
            th.blocked = Some((c, span, true));
            return Step::Blocked;
        }
        th.awaiting = None;
    }
    if let Some((c, span)) = th.pending.take() {
        return if try_send(th, chans, depths, c, span) {
            Step::Progress
        } else {
            Step::Blocked
        };
    }
    loop {
        let Some(frame) = th.frames.last_mut() else {
            return Step::Done;
        };
        match frame {
            Frame::Block { nodes, pc } => {
                let nodes: &[Node] = nodes;
                let Some(n) = nodes.get(*pc) else {
                    th.frames.pop();
                    continue;
                };
                *pc += 1;
                match n {
                    Node::Task => return Step::Progress,
                    Node::Send { ch, at } => {
                        try_send(th, chans, depths, *ch, *at);
                        return Step::Progress;
                    }
                    Node::Loop { count, body } => {
                        th.frames.push(Frame::Loop { left: *count, body })
                    }
                    Node::Consume { ch, at, body } => th.frames.push(Frame::Consume {
                        ch: *ch,
                        at: *at,
                        body,
                    }),
                }
            }
            Frame::Loop { left, body } => {
                if *left == 0 {
                    th.frames.pop();
                    continue;
                }
                *left -= 1;
                let body: &[Node] = body;
                th.frames.push(Frame::Block { nodes: body, pc: 0 });
            }
            Frame::Consume { ch, at, body } => {
                let (c, span, body): (usize, At, &[Node]) = (*ch, *at, body);
                match chans[c].queue.pop_front() {
                    Some(_) => {
                        th.received[c] += 1;
                        th.frames.push(Frame::Block { nodes: body, pc: 0 });
                        return Step::Progress;
                    }
                    None if chans[c].live_producers == 0 => {
                        th.frames.pop();
                    }
                    None => {
                        th.blocked = Some((c, span, false));
                        return Step::Blocked;
                    }
                }
            }
        }
    }
}

fn try_send(th: &mut Thread, chans: &mut [ChanState], depths: &[u64], c: usize, span: At) -> bool {
    let depth = depths[c];
    let ch = &mut chans[c];
    if ch.queue.len() as u64 >= depth.max(1) {
        th.pending = Some((c, span));
        th.blocked = Some((c, span, true));
        return false;
    }
    ch.serial += 1;
    ch.queue.push_back(ch.serial);
    th.sent[c] += 1;
    if depth == 0 {
        th.awaiting = Some((c, ch.serial, span));
        th.blocked = Some((c, span, true));
    }
    true
}

/// Runs the instances (`(process, replica count)`) with the given depths.
fn simulate(procs: &[&Proc], nchans: usize, depths: &[u64], budget: &mut u64) -> Outcome {
    let mut chans = vec![
        ChanState {
            queue: VecDeque::new(),
            live_producers: 0,
            serial: 0,
        };
        nchans
    ];
    let mut threads: Vec<Thread> = Vec::new();
    for p in procs {
        for &c in &p.produces {
            chans[c].live_producers += 1;
        }
        threads.push(Thread {
            frames: vec![Frame::Block {
                nodes: &p.body,
                pc: 0,
            }],
            pending: None,
            awaiting: None,
            blocked: None,
            sent: vec![0; nchans],
            received: vec![0; nchans],
        });
    }
    let mut done = vec![false; threads.len()];
    loop {
        // As `wsp run` schedules them: one step of the lowest-numbered process that can take
        // one, then again from the first (a blocked process's step changes nothing).
        let mut progressed = false;
        for (i, th) in threads.iter_mut().enumerate() {
            if done[i] {
                continue;
            }
            if *budget == 0 {
                return Outcome::TooLarge;
            }
            *budget -= 1;
            match step(th, &mut chans, depths) {
                Step::Progress => progressed = true,
                Step::Blocked => {}
                Step::Done => {
                    done[i] = true;
                    progressed = true;
                    for &c in &procs[i].produces {
                        chans[c].live_producers = chans[c].live_producers.saturating_sub(1);
                    }
                }
            }
            if progressed {
                break;
            }
        }
        if done.iter().all(|d| *d) {
            let mut sent = vec![0; nchans];
            for t in &threads {
                for (s, x) in sent.iter_mut().zip(&t.sent) {
                    *s += x;
                }
            }
            return Outcome::Completes { sent };
        }
        if !progressed {
            let waits = threads
                .iter()
                .enumerate()
                .filter(|(i, _)| !done[*i])
                .filter_map(|(i, t)| {
                    t.blocked.map(|(ch, at, sending)| Wait {
                        thread: i,
                        ch,
                        at,
                        sending,
                    })
                })
                .collect();
            return Outcome::Deadlock {
                waits,
                fill: chans.iter().map(|c| c.queue.len()).collect(),
                threads: threads
                    .iter()
                    .map(|t| (t.sent.clone(), t.received.clone()))
                    .collect(),
                done,
            };
        }
    }
}

/// Static deadlock diagnostics of one file's `connect` workloads (absolute spans).
#[salsa::tracked(returns(ref))]
pub fn pipeline_tokens(db: &dyn Db, file: File) -> Vec<Diagnostic> {
    tokens_with(db, file, crate::db::const_values(db, file), None)
}

/// The same analysis with the values a run gives the file's params (`wsp run` after a
/// deadlock): a `DenseDyn(n)` axis or a `replicate(p, n)` count whose size folds with them is
/// then a constant, so a pipeline undecided by `wsp check` may be decided for that run.
pub fn pipeline_tokens_bound(
    db: &dyn Db,
    file: File,
    params: &BTreeMap<String, i64>,
    only: &std::collections::BTreeSet<String>,
) -> Vec<Diagnostic> {
    let mut consts = crate::db::const_values(db, file).clone();
    for (k, v) in params {
        consts.insert(k.clone(), *v);
    }
    tokens_with(db, file, &consts, Some(only))
}

/// The analysis of `file`'s `connect` workloads (those named in `only`, when given).
fn tokens_with(
    db: &dyn Db,
    file: File,
    consts: &BTreeMap<String, i64>,
    only: Option<&std::collections::BTreeSet<String>>,
) -> Vec<Diagnostic> {
    // The analysed file first, then every file it imports (each once).
    let files = crate::lower::program_files(db, file);
    let names: Vec<FileName> = files
        .iter()
        .map(|f| FileName::new(f.path(db).as_str()))
        .collect();
    let index: BTreeMap<&str, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path(db).as_str(), i))
        .collect();
    let consts_of = |i: usize| {
        if i == 0 {
            consts
        } else {
            crate::db::const_values(db, files[i])
        }
    };
    // Each file's own axes and channels, evaluated with its constants; every channel of the
    // program once, in `chans`.
    let mut chans: Vec<Chan> = Vec::new();
    let own: Vec<Decls> = (0..files.len())
        .map(|fi| file_decls(db, files[fi], fi, consts_of(fi), &mut chans))
        .collect();
    // What each file sees: its own declarations and those it imports, by the name it uses.
    let visible: Vec<Decls> = files
        .iter()
        .enumerate()
        .map(|(fi, f)| {
            let mut v = Decls::default();
            for (name, Scoped { symbol, from }) in crate::resolve::scope(db, *f) {
                let home = match from {
                    Some(p) => match index.get(p.as_str()) {
                        Some(&h) => h,
                        None => continue,
                    },
                    None => fi,
                };
                match symbol {
                    Symbol::Channel => {
                        if let Some(&c) = own[home].chans.get(name) {
                            v.chans.insert(name.clone(), c);
                        }
                    }
                    Symbol::Axis(_) => {
                        if let Some(a) = own[home].axes.get(name) {
                            v.axes.insert(name.clone(), a.clone());
                        }
                    }
                    _ => {}
                }
            }
            v
        })
        .collect();
    // The processes the analysed file names, each lowered in its own file, with its failure.
    let mut procs: BTreeMap<String, Result<Proc, Undecidable>> = BTreeMap::new();
    for (name, scoped) in crate::resolve::scope(db, file) {
        let Scoped {
            symbol: Symbol::Process,
            from,
        } = scoped
        else {
            continue;
        };
        let Some(home) = from
            .as_ref()
            .map_or(Some(0), |p| index.get(p.as_str()).copied())
        else {
            continue;
        };
        let found = parse_file(db, files[home])
            .file
            .items
            .iter()
            .find_map(|node| match &node.item.kind {
                ItemKind::Process(p) if &p.name.name == name => Some((node.range.start, p)),
                _ => None,
            });
        let Some((off, p)) = found else {
            continue;
        };
        let seen = &visible[home];
        let cx = Ctx {
            file: home,
            off,
            consts: consts_of(home),
            axes: &seen.axes,
            chans: &seen.chans,
        };
        let lowered = lower_block(&p.body, &cx).map(|body| Proc {
            name: name.clone(),
            produces: p
                .produces
                .iter()
                .filter_map(|c| seen.chans.get(&c.name).copied())
                .collect(),
            body,
        });
        procs.insert(name.clone(), lowered);
    }
    let params: Vec<String> = parse_file(db, file)
        .file
        .items
        .iter()
        .filter_map(|node| match &node.item.kind {
            ItemKind::Param(p) => Some(p.name.name.clone()),
            _ => None,
        })
        .collect();
    let mut diags = Vec::new();
    for node in &parse_file(db, file).file.items {
        let ItemKind::Workload(w) = &node.item.kind else {
            continue;
        };
        let wsp_syntax::ast::WorkloadBody::Expr(e) = &w.body else {
            continue;
        };
        if only.is_some_and(|o| !o.contains(&w.name.name)) {
            continue;
        }
        let off = node.range.start;
        let mut connects = Vec::new();
        find_connects(e, &mut connects);
        for (call_span, args) in connects {
            let span = call_span.shift(off);
            let d = analyse_connect(
                &names,
                &w.name.name,
                span,
                args,
                off,
                &procs,
                &chans,
                consts,
                &params,
            );
            diags.extend(d);
        }
    }
    diags
}

/// A file's axes (their sizes, or why they are not static) and channels (their index in the
/// program's), by name.
#[derive(Default)]
struct Decls {
    axes: BTreeMap<String, Result<u64, String>>,
    chans: BTreeMap<String, usize>,
}

/// File `fi`'s own axes and channels, evaluated with its constants; its channels join `chans`.
fn file_decls(
    db: &dyn Db,
    file: File,
    fi: usize,
    consts: &BTreeMap<String, i64>,
    chans: &mut Vec<Chan>,
) -> Decls {
    let mut own = Decls::default();
    for node in &parse_file(db, file).file.items {
        match &node.item.kind {
            ItemKind::Axis(a) => {
                let v = match &a.ctor.kind {
                    ExprKind::Index { base, indices }
                        if matches!(&base.kind, ExprKind::Name(n) if n.name == "Dense")
                            && indices.len() == 1 =>
                    {
                        const_int(&indices[0], consts).ok_or_else(|| {
                            format!("the size of axis `{}` is not a constant", a.name.name)
                        })
                    }
                    ExprKind::Call { callee, args, .. } => {
                        let k = match &callee.kind {
                            ExprKind::Name(n) => n.name.clone(),
                            _ => String::new(),
                        };
                        // `DenseDyn(n)` whose size folds (a literal, or a param the run bound).
                        let size = match args.as_slice() {
                            [a] if k == "DenseDyn" && a.name.is_none() => {
                                const_int(&a.value, consts)
                            }
                            _ => None,
                        };
                        size.ok_or_else(|| {
                            format!(
                                "axis `{}` is {k}: its length is known only at run time",
                                a.name.name
                            )
                        })
                    }
                    _ => Err(format!("the size of axis `{}` is not static", a.name.name)),
                };
                own.axes.insert(a.name.name.clone(), v);
            }
            ItemKind::Channel(c) => {
                let off = node.range.start;
                let depth_arg = c
                    .args
                    .iter()
                    .find(|a| a.name.as_ref().is_some_and(|n| n.name == "depth"));
                // `u64::MAX`: not a constant.
                let (depth, invalid) = match depth_arg {
                    None => (1, false),
                    Some(a) => match crate::types::eval_int(&a.value, consts) {
                        Some(v) => u32::try_from(v).map_or((u64::MAX, true), |d| (d as u64, false)),
                        None => (u64::MAX, false),
                    },
                };
                let fix_at = match (depth_arg, c.args.first(), &c.ty_name) {
                    (Some(a), _, _) => (a.value.span.shift(off), "", ""),
                    (None, Some(first), _) => {
                        let at = first.span.shift(off);
                        (Span::new(at.start, at.start), "depth: ", ", ")
                    }
                    (None, None, Some(ty)) => {
                        let at = ty.span.shift(off).end;
                        (Span::new(at, at), "[depth: ", "]")
                    }
                    (None, None, None) => {
                        let at = c.name.span.shift(off).end;
                        (Span::new(at, at), ": Channel[depth: ", "]")
                    }
                };
                if !own.chans.contains_key(&c.name.name) {
                    own.chans.insert(c.name.name.clone(), chans.len());
                    chans.push(Chan {
                        name: c.name.name.clone(),
                        depth,
                        invalid,
                        fix_at,
                        fix_file: fi,
                    });
                }
            }
            _ => {}
        }
    }
    own
}

/// Marks the channels that `nodes` send on or consume.
fn mark_channels(nodes: &[Node], used: &mut [bool]) {
    for n in nodes {
        match n {
            Node::Task => {}
            Node::Send { ch, .. } => used[*ch] = true,
            Node::Loop { body, .. } => mark_channels(body, used),
            Node::Consume { ch, body, .. } => {
                used[*ch] = true;
                mark_channels(body, used);
            }
        }
    }
}

/// The `connect(...)` calls of a workload expression: the callee's span and the operands.
pub(crate) fn find_connects<'a>(e: &'a Expr, out: &mut Vec<(Span, &'a [wsp_syntax::ast::Arg])>) {
    if let ExprKind::Call { callee, args, .. } = &e.kind {
        if matches!(&callee.kind, ExprKind::Name(n) if n.name == "connect") {
            out.push((callee.span, args));
            return;
        }
        for a in args {
            find_connects(&a.value, out);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn analyse_connect(
    names: &[FileName],
    wname: &str,
    span: Span,
    args: &[wsp_syntax::ast::Arg],
    off: u32,
    procs: &BTreeMap<String, Result<Proc, Undecidable>>,
    chans: &[Chan],
    consts: &BTreeMap<String, i64>,
    params: &[String],
) -> Option<Diagnostic> {
    let fname = &names[0];
    let here = |span: Span| At {
        file: 0,
        span: span.shift(off),
    };
    let undecidable = |at: At, why: String| {
        Some(
            Diagnostic::new(
                codes::W0505,
                format!("cannot decide statically whether `{wname}` completes or deadlocks"),
                Label::new(fname.clone(), span, "pipeline not decided statically"),
            )
            .with_label(Label::new(names[at.file].clone(), at.span, why.clone()))
            .with_note(format!(
                "the static deadlock check counts tokens when every trip count is a constant; here {why}"
            ))
            .with_help(
                "a deadlock, if any, is reported at run time (E0811); a pipeline that never ends \
                 runs until `wsp run --max-tasks N` or `--max-cycles N` stops it (E0815)",
            ),
        )
    };
    // Instances in connect order, replicas adjacent (as `wsp run` starts them).
    let mut inst: Vec<(&Proc, String)> = Vec::new();
    for a in args {
        let (name_e, reps) = match &a.value.kind {
            ExprKind::Call {
                callee,
                args: rargs,
                ..
            } if matches!(&callee.kind, ExprKind::Name(n) if n.name == "replicate") => {
                let p = rargs.first()?;
                let n = rargs.get(1).and_then(|r| const_int(&r.value, consts));
                let Some(n) = n else {
                    // A negative count, or one without a value that names no param, is an
                    // error of its own (E0407, E0213).
                    let count = rargs.get(1).map(|r| &r.value);
                    let is_param = |x: &str| params.iter().any(|p| p == x);
                    if !count.is_some_and(|r| {
                        crate::types::eval_int(r, consts).is_none()
                            && crate::types::names_any(r, &is_param)
                    }) {
                        return None;
                    }
                    let at = rargs.get(1).map(|r| r.value.span).unwrap_or(a.value.span);
                    let why = match rargs.get(1).map(|r| &r.value.kind) {
                        Some(ExprKind::Name(x)) if params.contains(&x.name) => {
                            format!("the replica count is the param `{}`", x.name)
                        }
                        _ => "the replica count is not a constant".to_string(),
                    };
                    return undecidable(here(at), why);
                };
                // A count out of range is an error of its own (E0407): nothing to decide.
                if n == 0 || n > crate::check::MAX_PROCESSES as u64 {
                    return None;
                }
                (&p.value, n)
            }
            _ => (&a.value, 1),
        };
        // An operand that is not a process is an error of its own (E0101, E0407): nothing to
        // decide.
        let ExprKind::Name(pn) = &name_e.kind else {
            return None;
        };
        match procs.get(&pn.name) {
            None => return None,
            Some(Err(Undecidable(at, why))) => {
                return undecidable(*at, format!("in process `{}`, {why}", pn.name))
            }
            Some(Ok(p)) => {
                if reps > 4096 {
                    return undecidable(
                        here(name_e.span),
                        format!("{reps} replicas are too many to simulate"),
                    );
                }
                for r in 0..reps {
                    let label = if reps > 1 {
                        format!("{}#{r}", p.name)
                    } else {
                        p.name.clone()
                    };
                    inst.push((p, label));
                }
                // More instances than a pipeline has is an error of its own (E0407).
                if inst.len() as i64 > crate::check::MAX_PROCESSES {
                    return None;
                }
            }
        }
    }
    let procs_only: Vec<&Proc> = inst.iter().map(|(p, _)| *p).collect();
    // The channels the pipeline uses decide it; the program's others do not matter here.
    let mut used = vec![false; chans.len()];
    for p in &procs_only {
        for &c in &p.produces {
            used[c] = true;
        }
        mark_channels(&p.body, &mut used);
    }
    let mut in_use = chans.iter().zip(&used).filter(|(_, u)| **u).map(|(c, _)| c);
    if in_use.clone().any(|c| c.invalid) {
        return None;
    }
    if let Some(c) = in_use.find(|c| c.depth == u64::MAX) {
        return undecidable(
            At { file: 0, span },
            format!("the depth of channel `{}` is not a constant", c.name),
        );
    }
    let depths: Vec<u64> = chans.iter().map(|c| c.depth).collect();
    let mut budget = STEP_BUDGET;
    let too_large = || {
        undecidable(
            At { file: 0, span },
            format!(
                "the pipeline takes more than {STEP_BUDGET} abstract steps, too large to decide"
            ),
        )
    };
    let (waits, fill, counts, done) = match simulate(&procs_only, chans.len(), &depths, &mut budget)
    {
        Outcome::Completes { .. } => return None,
        Outcome::TooLarge => return too_large(),
        Outcome::Deadlock {
            waits,
            fill,
            threads,
            done,
        } => (waits, fill, threads, done),
    };
    // Deadlocked: label every blocked process.
    let describe = |w: &Wait| -> String {
        let (sent, recv) = &counts[w.thread];
        let c = &chans[w.ch];
        let who = &inst[w.thread].1;
        if w.sending {
            if c.depth == 0 {
                format!(
                    "`{who}` waits for its token on `{}` (rendezvous, depth 0) to be taken, after sending {} tokens",
                    c.name, sent[w.ch]
                )
            } else {
                format!(
                    "`{who}` waits to send on `{}`: full ({}/{} tokens), after sending {} tokens",
                    c.name, fill[w.ch], c.depth, sent[w.ch]
                )
            }
        } else {
            // The channel stays open while a producer of it has not finished.
            let open: Vec<&str> = inst
                .iter()
                .enumerate()
                .filter(|(i, (p, _))| !done[*i] && p.produces.contains(&w.ch))
                .map(|(_, (_, label))| label.as_str())
                .collect();
            let never = if open.is_empty() {
                String::new()
            } else {
                format!(
                    "; it never closes: its producer {} is blocked too",
                    open.iter()
                        .map(|l| format!("`{l}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            format!(
                "`{who}` waits on `{}`: empty, after receiving {} tokens{never}",
                c.name, recv[w.ch]
            )
        }
    };
    waits.first()?;
    // The primary label is in the analysed file: its first blocked site there, or else the
    // `connect` (every blocked process is in another file).
    let label = |w: &Wait| Label::new(names[w.at.file].clone(), w.at.span, describe(w));
    let primary = waits.iter().position(|w| w.at.file == 0);
    let mut d = Diagnostic::new(
        codes::E0509,
        format!("the pipeline `{wname}` deadlocks"),
        match primary {
            Some(i) => label(&waits[i]),
            None => Label::new(
                fname.clone(),
                span,
                "deadlocks: its blocked processes are declared in other files",
            ),
        },
    );
    for (i, w) in waits.iter().enumerate() {
        if Some(i) != primary {
            d = d.with_label(label(w));
        }
    }
    d = d.with_note("counted statically with the declared channel depths; `wsp run` reports this deadlock as E0811");
    // Unbounded channels: does any depth help?
    let mut unbounded_budget = STEP_BUDGET;
    let big: Vec<u64> = vec![u64::MAX / 2; chans.len()];
    let totals = match simulate(&procs_only, chans.len(), &big, &mut unbounded_budget) {
        Outcome::Completes { sent } => sent,
        Outcome::Deadlock { .. } => {
            return Some(d.with_help(
                "no channel depths avoid it: even with unbounded channels some process waits on an empty channel that is never filled; reorder sends and consumes (one process on the cycle must send before it consumes)",
            ))
        }
        Outcome::TooLarge => return Some(d),
    };
    // Candidate channels: those with tokens; each depth from its declared value up to its total.
    let cand: Vec<usize> = (0..chans.len())
        .filter(|&c| totals[c] > 0 && depths[c] < totals[c])
        .collect();
    let max_extra: u64 = cand.iter().map(|&c| totals[c] - depths[c]).sum();
    let mut found: Option<Vec<u64>> = None;
    let mut k = 1;
    'search: while k <= max_extra {
        let mut extra = vec![0u64; cand.len()];
        // Enumerate compositions of k over cand with per-channel caps.
        let caps: Vec<u64> = cand.iter().map(|&c| totals[c] - depths[c]).collect();
        let mut done = false;
        if !first_composition(k, &caps, &mut extra) {
            done = true;
        }
        while !done {
            let mut trial = depths.clone();
            for (i, &c) in cand.iter().enumerate() {
                trial[c] += extra[i];
            }
            match simulate(&procs_only, chans.len(), &trial, &mut budget) {
                Outcome::Completes { .. } => {
                    found = Some(trial);
                    break 'search;
                }
                Outcome::Deadlock { .. } => {}
                Outcome::TooLarge => {
                    break 'search;
                }
            }
            done = !next_composition(&caps, &mut extra);
        }
        k += 1;
    }
    let fmt_depths = |ds: &[u64]| -> String {
        (0..chans.len())
            .filter(|&c| ds[c] != depths[c])
            .map(|c| format!("`{}` depth {} (now {})", chans[c].name, ds[c], depths[c]))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let raise = |ds: &[u64]| Fix {
        title: format!("raise {}", fmt_depths(ds)),
        edits: (0..chans.len())
            .filter(|&c| ds[c] != depths[c])
            .map(|c| {
                let (span, prefix, suffix) = chans[c].fix_at;
                Edit {
                    file: names[chans[c].fix_file].clone(),
                    span,
                    replacement: format!("{prefix}{}{suffix}", ds[c]),
                }
            })
            .collect(),
    };
    Some(match found {
        Some(ds) => d
            .with_help(format!(
                "the smallest depths that complete: {}",
                fmt_depths(&ds)
            ))
            .with_fix(raise(&ds)),
        None => {
            let mut ds = depths.clone();
            for &c in &cand {
                ds[c] = totals[c];
            }
            d.with_help(format!(
                "depths that complete (the search for the smallest was too large): {}",
                fmt_depths(&ds)
            ))
            .with_fix(raise(&ds))
        }
    })
}

/// The first composition of `k` into `caps.len()` parts bounded by `caps` (lexicographically
/// largest first part), or `false` when none exists.
fn first_composition(k: u64, caps: &[u64], out: &mut [u64]) -> bool {
    let mut left = k;
    for (o, c) in out.iter_mut().zip(caps) {
        *o = left.min(*c);
        left -= *o;
    }
    left == 0
}

/// The next composition with the same sum, in decreasing lexicographic order.
fn next_composition(caps: &[u64], out: &mut [u64]) -> bool {
    let n = out.len();
    // Find the rightmost position i < n-1 with out[i] > 0 such that the suffix after i can
    // absorb one more unit.
    let mut suffix_sum: u64 = 0;
    let mut suffix_cap: u64 = 0;
    for i in (0..n).rev() {
        if i + 1 < n {
            suffix_sum += out[i + 1];
            suffix_cap += caps[i + 1];
        }
        if i + 1 < n && out[i] > 0 && suffix_sum < suffix_cap {
            out[i] -= 1;
            // Refill the suffix greedily from the left with suffix_sum + 1.
            let mut left = suffix_sum + 1;
            for j in i + 1..n {
                out[j] = left.min(caps[j]);
                left -= out[j];
            }
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two processes that deadlock with small depths: `split` fills `a` before it sends on
    /// `b`, and `join` takes a token of `b` before it consumes `a`.
    const SPLIT_JOIN: &str = "process split produces a, b {
    for i in P.seq(tiles) { send a, i }
    for i in P.seq(tiles) { send b, i }
}
process join consumes a, b {
    consume b as i {
        consume a as j { send_nothing(j) }
    }
}
";

    /// Sizes, depths and replica counts fold like every other constant of the checker
    /// (`2 * H`), so the pipeline is decided, not W0505.
    #[test]
    fn folded_constants_are_static_counts() {
        let src = format!(
            "const H = 2
const N = 2 * H
axis tiles = Dense[N - 1 + 1]
channel a: Channel[depth: H - 1]
channel b: Channel[depth: 1]
{SPLIT_JOIN}workload w = connect(split, replicate(join, H - 1))
"
        );
        let mut ws = crate::Workspace::new();
        ws.set_file("p.wsp", src);
        let d: Vec<_> = pipeline_tokens(ws.db(), ws.file_handle("p.wsp").expect("file"))
            .iter()
            .map(|d| (d.code.to_string(), d.help.clone().unwrap_or_default()))
            .collect();
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].0, "E0509", "{d:?}");
        assert!(
            d[0].1.contains("`a` depth 4 (now 1), `b` depth 3 (now 1)"),
            "{d:?}"
        );
    }

    /// A pipeline whose processes all live in another file: decided there, with the primary
    /// label on the analysed file's `connect` and the blocked sites labelled in their file.
    #[test]
    fn a_pipeline_of_imported_processes_is_labelled_in_both_files() {
        let stages = format!(
            "axis tiles = Dense[4]
channel a: Channel[depth: 1]
channel b: Channel[depth: 1]
{SPLIT_JOIN}"
        );
        let mut ws = crate::Workspace::new();
        ws.set_file("stages.wsp", stages);
        ws.set_file(
            "main.wsp",
            "import stages.{split, join}\nworkload w = connect(split, join)\n".to_string(),
        );
        let main = ws.file_handle("main.wsp").expect("file");
        let d = pipeline_tokens(ws.db(), main);
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(d[0].code, "E0509", "{d:#?}");
        assert_eq!(d[0].primary.file.as_str(), "main.wsp");
        assert!(d[0].primary.message.contains("other files"), "{d:#?}");
        assert_eq!(d[0].secondary.len(), 2, "{d:#?}");
        assert!(
            d[0].secondary
                .iter()
                .all(|l| l.file.as_str() == "stages.wsp"),
            "{d:#?}"
        );
        assert!(
            d[0].fixes[0]
                .edits
                .iter()
                .all(|e| e.file.as_str() == "stages.wsp"),
            "{d:#?}"
        );
    }

    /// An imported axis whose size is a constant its own file imports is static: decided
    /// (E0509 here), not W0505.
    #[test]
    fn an_axis_sized_by_a_constant_of_a_third_file_is_static() {
        let mut ws = crate::Workspace::new();
        ws.set_file("consts.wsp", "const N = 4\n".to_string());
        ws.set_file(
            "chans.wsp",
            "import consts.{N}\naxis tiles = Dense[N]\nchannel c: Channel[depth: 0]\n".to_string(),
        );
        ws.set_file(
            "main.wsp",
            "import chans.{c, tiles}
process p produces c {
    for i in P.seq(tiles) { send c, i }
}
workload w = connect(p)
"
            .to_string(),
        );
        let main = ws.file_handle("main.wsp").expect("file");
        let d = pipeline_tokens(ws.db(), main);
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(d[0].code, "E0509", "{d:#?}");
    }

    #[test]
    fn compositions_enumerate_all_bounded_splits() {
        let caps = [2, 1, 3];
        let mut out = [0; 3];
        let mut seen = Vec::new();
        assert!(first_composition(3, &caps, &mut out));
        loop {
            seen.push(out);
            if !next_composition(&caps, &mut out) {
                break;
            }
        }
        let mut want = Vec::new();
        for a in 0..=2u64 {
            for b in 0..=1u64 {
                for c in 0..=3u64 {
                    if a + b + c == 3 {
                        want.push([a, b, c]);
                    }
                }
            }
        }
        seen.sort();
        want.sort();
        assert_eq!(seen, want);
        assert!(!first_composition(7, &caps, &mut out));
    }
}
