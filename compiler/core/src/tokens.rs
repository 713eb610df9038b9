//! Static deadlock verdicts of CSP pipelines by abstract token counting.
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

use crate::db::{items_of, Db, File, ItemTag, Symbol};
use crate::resolve::Scoped;
use wsp_vocab::codes;

mod run;
mod verdict;
use verdict::analyse_connect;

/// Budget of abstract steps for one `connect` (all simulations, including the depth search).
const STEP_BUDGET: u64 = 1_000_000;

/// A place in one of the program's files: the file (an index into the analysis's files, the
/// analysed one first) and a virtual span in it.
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
    /// Where a quick fix writes a new depth `n` (virtual span in file `fix_file`): replace the
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

/// Static deadlock diagnostics of one file's `connect` workloads (virtual spans:
/// [`crate::db::real_spans`]).
#[salsa::tracked(returns(ref))]
pub fn pipeline_tokens(db: &dyn Db, file: File) -> Vec<Diagnostic> {
    tokens_with(db, file, crate::db::const_values(db, file), None)
}

/// The same analysis with the values a run gives the file's params (`wsp run` after a
/// deadlock): a `DenseDyn(n)` axis or a `replicate(p, n)` count whose size folds with them is
/// then a constant, so a pipeline undecided by `wsp check` may be decided for that run. Real
/// spans.
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
        .into_iter()
        .map(|d| crate::db::real_spans(db, d))
        .collect()
}

/// The analysis of `file`'s `connect` workloads (those named in `only`, when given).
fn tokens_with(
    db: &dyn Db,
    file: File,
    consts: &BTreeMap<String, i64>,
    only: Option<&std::collections::BTreeSet<String>>,
) -> Vec<Diagnostic> {
    // The analysed file first, then every file it imports (each once).
    let files = crate::resolve::program_files(db, file);
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
        let found = items_of(db, files[home], &[ItemTag::Process]).find_map(|(_, off, item)| {
            match &item.kind {
                ItemKind::Process(p) if &p.name.name == name => Some((off, p)),
                _ => None,
            }
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
    let params: Vec<String> = items_of(db, file, &[ItemTag::Param])
        .filter_map(|(_, _, item)| match &item.kind {
            ItemKind::Param(p) => Some(p.name.name.clone()),
            _ => None,
        })
        .collect();
    let mut diags = Vec::new();
    for (_, off, item) in items_of(db, file, &[ItemTag::Workload]) {
        let ItemKind::Workload(w) = &item.kind else {
            continue;
        };
        let wsp_syntax::ast::WorkloadBody::Expr(e) = &w.body else {
            continue;
        };
        if only.is_some_and(|o| !o.contains(&w.name.name)) {
            continue;
        }
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
    for (_, off, item) in items_of(db, file, &[ItemTag::Axis, ItemTag::Channel]) {
        match &item.kind {
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

#[cfg(test)]
mod tests {
    use super::verdict::{first_composition, next_composition};
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
