//! The task graph of a run as a picture: DOT for Graphviz's `dot`, laid out left to right,
//! one column per dependency level, the tasks of each step of the workload that ran (a
//! top-level statement, a part of `sequential`/`combine`, a process of `connect`) in a box of
//! their own, each kind of data dependency drawn its own way and `P.seq` order dashed. Above a
//! size limit the tasks of each kernel call of a step are one node that says how many tasks
//! it stands for.

use std::collections::{BTreeMap, HashMap};

use wsp_ir::workload::{walk_stmts, SrcSpan, WStmt, WorkloadBody};
use wsp_ir::{Program, WorkloadId};
use wsp_runtime::{dot_escape, DepKind, TaskGraph};

/// How to draw a graph.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    /// Group tasks by step and kernel when there are more than this many (`None`: never).
    pub group_above: Option<usize>,
}

/// A step of the workload that ran: its label and the call sites its tasks come from.
struct Step {
    label: String,
    sites: Vec<(String, u32)>,
}

/// The steps of workload `w`: what a reader of its source sees as its phases.
fn steps(p: &Program, w: WorkloadId) -> (Vec<Step>, bool) {
    let Some(wl) = p.workloads.get(w.index()) else {
        return (Vec::new(), false);
    };
    let sites_of_workload = |id: WorkloadId| {
        let mut out = Vec::new();
        workload_sites(p, id, &mut out, 0);
        out
    };
    match &wl.body {
        WorkloadBody::Block { stmts } => {
            let steps = stmts
                .iter()
                .enumerate()
                .map(|(k, st)| {
                    let mut sites = Vec::new();
                    stmt_sites(p, std::slice::from_ref(st), &mut sites, 0);
                    Step {
                        label: format!("step {}", k + 1),
                        sites,
                    }
                })
                .collect();
            (steps, true)
        }
        WorkloadBody::Sequential { parts } | WorkloadBody::Combine { parts } => {
            let steps = parts
                .iter()
                .map(|&id| Step {
                    label: p
                        .workloads
                        .get(id.index())
                        .map_or_else(|| "?".into(), |w| format!("workload {}", w.name)),
                    sites: sites_of_workload(id),
                })
                .collect();
            (steps, matches!(wl.body, WorkloadBody::Sequential { .. }))
        }
        WorkloadBody::Connect { processes } => {
            let steps = processes
                .iter()
                .filter_map(|c| p.processes.get(c.process.index()))
                .map(|pr| {
                    let mut sites = Vec::new();
                    stmt_sites(p, &pr.body, &mut sites, 0);
                    Step {
                        label: format!("process {}", pr.name),
                        sites,
                    }
                })
                .collect();
            (steps, false)
        }
    }
}

/// Workloads run inside workloads nest at most this deep here (the checker rejects cycles).
const MAX_NESTING: usize = 64;

fn workload_sites(p: &Program, id: WorkloadId, out: &mut Vec<(String, u32)>, depth: usize) {
    if depth > MAX_NESTING {
        return;
    }
    let Some(w) = p.workloads.get(id.index()) else {
        return;
    };
    match &w.body {
        WorkloadBody::Block { stmts } => stmt_sites(p, stmts, out, depth + 1),
        WorkloadBody::Sequential { parts } | WorkloadBody::Combine { parts } => {
            for &part in parts {
                workload_sites(p, part, out, depth + 1);
            }
        }
        WorkloadBody::Connect { processes } => {
            for c in processes {
                if let Some(pr) = p.processes.get(c.process.index()) {
                    stmt_sites(p, &pr.body, out, depth + 1);
                }
            }
        }
    }
}

fn stmt_sites(p: &Program, stmts: &[WStmt], out: &mut Vec<(String, u32)>, depth: usize) {
    let mut site = |at: &Option<SrcSpan>| {
        if let Some(at) = at {
            out.push((at.file.clone(), at.start));
        }
    };
    let mut runs = Vec::new();
    walk_stmts(stmts, &mut |st| match st {
        WStmt::Call(c) => site(&c.at),
        WStmt::Send {
            payload: wsp_ir::workload::SendPayload::Task(c),
            ..
        } => site(&c.at),
        WStmt::Run { workload } => runs.push(*workload),
        _ => {}
    });
    for w in runs {
        workload_sites(p, w, out, depth + 1);
    }
}

/// The step of each task (by submission number), from its call site: a site written in
/// several steps (a workload run twice) goes to the first of them not before the step of the
/// task submitted last, when the steps run one after another.
fn task_steps(steps: &[Step], ordered: bool, sites: &[Option<SrcSpan>]) -> Vec<Option<usize>> {
    let mut of_site: HashMap<(&str, u32), Vec<usize>> = HashMap::new();
    for (k, s) in steps.iter().enumerate() {
        for (f, start) in &s.sites {
            let v = of_site.entry((f.as_str(), *start)).or_default();
            if v.last() != Some(&k) {
                v.push(k);
            }
        }
    }
    let mut cursor = 0;
    sites
        .iter()
        .map(|at| {
            let at = at.as_ref()?;
            let cands = of_site.get(&(at.file.as_str(), at.start))?;
            let k = if ordered {
                cands
                    .iter()
                    .copied()
                    .find(|&k| k >= cursor)
                    .or_else(|| cands.first().copied())?
            } else {
                *cands.first()?
            };
            cursor = k;
            Some(k)
        })
        .collect()
}

/// Fill colours for kernels, in order of their first task.
const PALETTE: [&str; 10] = [
    "#cfe2f3", "#d9ead3", "#fff2cc", "#f4cccc", "#d9d2e9", "#fce5cd", "#d0e0e3", "#ead1dc",
    "#e6e6e6", "#c9daf8",
];

const HEAD: &str = "  rankdir=LR;\n  newrank=true;\n  compound=true;\n  \
    node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n  \
    edge [color=\"#404040\", arrowsize=0.6, fontname=\"Helvetica\", fontsize=9];\n  \
    graph [fontname=\"Helvetica\", fontsize=11];\n";

const ORDER: &str = "style=dashed, color=\"#808080\"";

/// How a data dependency of each kind is drawn.
fn dep_style(k: DepKind) -> &'static str {
    match k {
        DepKind::Raw => "",
        DepKind::Waw => "color=\"#c0504d\"",
        DepKind::War => "style=dotted, color=\"#c0504d\"",
    }
}

/// DOT attributes `[a, b]`, or nothing.
fn attrs(parts: &[&str]) -> String {
    let v: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    if v.is_empty() {
        String::new()
    } else {
        format!(" [{}]", v.join(", "))
    }
}

/// The graph of workload `w` of `p` as DOT. `sites[n]` is the call site of the `n`-th task
/// submitted; `extra(n)` gives more attributes for a task's node (drawn task by task only).
pub fn dot(
    p: &Program,
    w: WorkloadId,
    g: &TaskGraph,
    sites: &[Option<SrcSpan>],
    style: Style,
    extra: &dyn Fn(u64) -> Option<String>,
) -> String {
    let (steps, ordered) = steps(p, w);
    let step_of = task_steps(&steps, ordered, sites);
    let index: HashMap<u64, usize> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.seq, i))
        .collect();
    // Dependency level: one more than the deepest predecessor (data or order).
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); g.nodes.len()];
    for e in &g.data {
        if let (Some(&a), Some(&b)) = (index.get(&e.from), index.get(&e.to)) {
            preds[b].push(a);
        }
    }
    for gate in &g.order {
        for b in &gate.waiters {
            let Some(&b) = index.get(b) else { continue };
            preds[b].extend(gate.members.iter().filter_map(|a| index.get(a)));
        }
    }
    // The nodes are in submission order, a dependency order: predecessors come first.
    let mut level = vec![0usize; g.nodes.len()];
    for i in 0..g.nodes.len() {
        level[i] = preds[i].iter().map(|&a| level[a] + 1).max().unwrap_or(0);
    }
    let mut colour: HashMap<&str, &str> = HashMap::new();
    for n in &g.nodes {
        let k = colour.len();
        colour
            .entry(n.kernel.as_str())
            .or_insert(PALETTE[k % PALETTE.len()]);
    }
    let step_label = |s: Option<usize>| match s {
        Some(k) => steps.get(k).map_or("?", |s| s.label.as_str()).to_string(),
        None => "other".to_string(),
    };
    let name = p.workloads.get(w.index()).map_or("?", |w| w.name.as_str());
    let node_step = |i: usize| {
        step_of
            .get(usize::try_from(g.nodes[i].seq).unwrap_or(usize::MAX))
            .copied()
            .flatten()
    };
    let count = |k: DepKind| g.data.iter().filter(|e| e.kind == k).count();
    let order_edges: usize = g
        .order
        .iter()
        .map(|o| o.members.len() * o.waiters.len())
        .sum();
    let grouped = style.group_above.is_some_and(|m| g.nodes.len() > m);
    let mut s = String::from("digraph tasks {\n");
    s.push_str(HEAD);
    let title = format!(
        "workload {name}: {} tasks; dependencies: {} read after write (black), {} write after \
         write (red), {} write after read (red, dotted), {order_edges} P.seq orderings \
         (grey dashes){}",
        g.nodes.len(),
        count(DepKind::Raw),
        count(DepKind::Waw),
        count(DepKind::War),
        if grouped {
            "; tasks grouped by kernel call"
        } else {
            ""
        }
    );
    s.push_str(&format!(
        "  label=\"{}\";\n  labelloc=t;\n",
        dot_escape(&title)
    ));
    if grouped {
        // The call a task comes from (its place in the source), else its kernel alone.
        let call = |i: usize| {
            let at = usize::try_from(g.nodes[i].seq)
                .ok()
                .and_then(|n| sites.get(n))
                .and_then(Option::as_ref);
            (
                node_step(i),
                at.map(|a| (a.file.as_str(), a.start)),
                g.nodes[i].kernel.as_str(),
            )
        };
        grouped_body(&mut s, g, &index, &level, &colour, &call, &step_label);
    } else {
        // Tasks, boxed by step, one rank per level within a step.
        let mut by_step: BTreeMap<Option<usize>, BTreeMap<usize, Vec<usize>>> = BTreeMap::new();
        for (i, &l) in level.iter().enumerate() {
            by_step
                .entry(node_step(i))
                .or_default()
                .entry(l)
                .or_default()
                .push(i);
        }
        for (ci, (st, levels)) in by_step.iter().enumerate() {
            s.push_str(&format!(
                "  subgraph cluster_{ci} {{\n    label=\"{}\";\n    style=rounded;\n    color=\"#a0a0a0\";\n",
                dot_escape(&step_label(*st))
            ));
            for nodes in levels.values() {
                for &i in nodes {
                    let n = &g.nodes[i];
                    let coords: Vec<String> = n.coords.iter().map(i64::to_string).collect();
                    let label = dot_escape(&format!("{}[{}]", n.kernel, coords.join(", ")));
                    let fill = colour.get(n.kernel.as_str()).copied().unwrap_or("#ffffff");
                    match extra(n.seq) {
                        Some(a) => s.push_str(&format!(
                            "    t{} [label=\"{label}\", fillcolor=\"{fill}\", {a}];\n",
                            n.seq
                        )),
                        None => s.push_str(&format!(
                            "    t{} [label=\"{label}\", fillcolor=\"{fill}\"];\n",
                            n.seq
                        )),
                    }
                }
                if nodes.len() > 1 {
                    let names: Vec<String> = nodes
                        .iter()
                        .map(|&i| format!("t{}", g.nodes[i].seq))
                        .collect();
                    s.push_str(&format!("    {{ rank=same; {}; }}\n", names.join("; ")));
                }
            }
            s.push_str("  }\n");
        }
        for e in &g.data {
            s.push_str(&format!(
                "  t{} -> t{}{};\n",
                e.from,
                e.to,
                attrs(&[dep_style(e.kind)])
            ));
        }
        // `P.seq` order, through a join point when many wait on many.
        for (gi, gate) in g.order.iter().enumerate() {
            s.push_str(&gate.dot(gi, ORDER));
        }
    }
    s.push_str("}\n");
    s
}

/// Groups of tasks (one call of a kernel in one step) as nodes, and the edges between groups
/// with how many task edges each stands for.
fn grouped_body<'a>(
    s: &mut String,
    g: &'a TaskGraph,
    index: &HashMap<u64, usize>,
    level: &[usize],
    colour: &HashMap<&str, &str>,
    call: &dyn Fn(usize) -> GroupKey<'a>,
    step_label: &dyn Fn(Option<usize>) -> String,
) {
    // Keyed by (step, call site, kernel): numbered in source order within a step.
    let mut groups: BTreeMap<GroupKey<'a>, Group> = BTreeMap::new();
    for (i, &l) in level.iter().enumerate() {
        let e = groups.entry(call(i)).or_insert(Group {
            id: 0,
            tasks: 0,
            levels: (usize::MAX, 0),
        });
        e.tasks += 1;
        e.levels = (e.levels.0.min(l), e.levels.1.max(l));
    }
    for (id, v) in groups.values_mut().enumerate() {
        v.id = id;
    }
    let group_of = |seq: &u64| {
        let i = *index.get(seq)?;
        groups.get(&call(i)).map(|v| v.id)
    };
    let mut step = None;
    let mut open = false;
    for (ci, ((st, _, kernel), v)) in groups.iter().enumerate() {
        if !open || step != *st {
            if open {
                s.push_str("  }\n");
            }
            s.push_str(&format!(
                "  subgraph cluster_{ci} {{\n    label=\"{}\";\n    style=rounded;\n    color=\"#a0a0a0\";\n",
                dot_escape(&step_label(*st))
            ));
            (step, open) = (*st, true);
        }
        let (lo, hi) = v.levels;
        let levels = if lo == hi {
            format!("level {lo}")
        } else {
            format!("levels {lo}-{hi}")
        };
        let fill = colour.get(kernel).copied().unwrap_or("#ffffff");
        s.push_str(&format!(
            "    g{} [label=\"{}\\n{} tasks, {levels}\", fillcolor=\"{fill}\", peripheries={}];\n",
            v.id,
            dot_escape(kernel),
            v.tasks,
            if v.tasks > 1 { 2 } else { 1 }
        ));
    }
    if open {
        s.push_str("  }\n");
    }
    let mut data: BTreeMap<(usize, usize, DepKind), usize> = BTreeMap::new();
    for e in &g.data {
        if let (Some(a), Some(b)) = (group_of(&e.from), group_of(&e.to)) {
            *data.entry((a, b, e.kind)).or_default() += 1;
        }
    }
    let mut order: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for gate in &g.order {
        for a in &gate.members {
            for b in &gate.waiters {
                if let (Some(a), Some(b)) = (group_of(a), group_of(b)) {
                    *order.entry((a, b)).or_default() += 1;
                }
            }
        }
    }
    for ((a, b, k), n) in &data {
        let w = format!("penwidth={}", width(*n));
        let label = format!("label=\"{n}\"");
        s.push_str(&format!(
            "  g{a} -> g{b}{};\n",
            attrs(&[&label, dep_style(*k), &w])
        ));
    }
    for ((a, b), n) in &order {
        s.push_str(&format!(
            "  g{a} -> g{b} [label=\"{n}\", {ORDER}, penwidth={}];\n",
            width(*n)
        ));
    }
}

/// A group's key: the step, the call site (file and offset; none in a hand-built program) and
/// the kernel.
type GroupKey<'a> = (Option<usize>, Option<(&'a str, u32)>, &'a str);

/// Tasks of one kernel call of a step, drawn as one node.
struct Group {
    id: usize,
    tasks: usize,
    /// The lowest and highest dependency level of its tasks.
    levels: (usize, usize),
}

/// An edge's width for the number of task edges it stands for: 1 to 4, logarithmic.
fn width(n: usize) -> String {
    let w = 1.0 + (n.max(1) as f64).log10().min(3.0);
    format!("{w:.1}")
}
