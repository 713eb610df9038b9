//! The recorded task graph (with `Config::record`): as plain data for tools that lay it out
//! themselves, and as DOT.

use std::collections::HashMap;

use super::Runtime;
use crate::api::{Arg, Region, TensorId};
use crate::region::{covers, overlaps};

/// A submitted task of the recorded graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphNode {
    /// Submission number, from 0.
    pub seq: u64,
    /// Its kernel's name.
    pub kernel: String,
    /// Its coordinates.
    pub coords: Vec<i64>,
}

/// A `P.seq` step boundary: every task of `waiters` starts after every task of `members`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderGate {
    pub members: Vec<u64>,
    pub waiters: Vec<u64>,
}

impl OrderGate {
    /// The gate as DOT edges between task nodes `t{seq}` with the attributes `attrs`: one edge
    /// per pair, or through a join point `seq{index}` when many wait on many.
    pub fn dot(&self, index: usize, attrs: &str) -> String {
        let mut s = String::new();
        if self.members.len() == 1 || self.waiters.len() == 1 {
            for a in &self.members {
                for b in &self.waiters {
                    s.push_str(&format!("  t{a} -> t{b} [{attrs}];\n"));
                }
            }
        } else {
            s.push_str(&format!(
                "  seq{index} [shape=point, width=0.08, label=\"\"];\n"
            ));
            for a in &self.members {
                s.push_str(&format!("  t{a} -> seq{index} [{attrs}];\n"));
            }
            for b in &self.waiters {
                s.push_str(&format!("  seq{index} -> t{b} [{attrs}];\n"));
            }
        }
        s
    }
}

/// Why one task depends on another through a tensor region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DepKind {
    /// The later task writes what the earlier one reads (write after read).
    War,
    /// Both write it (write after write).
    Waw,
    /// The later task reads what the earlier one writes (read after write).
    Raw,
}

impl DepKind {
    pub fn name(self) -> &'static str {
        match self {
            DepKind::Raw => "read after write",
            DepKind::Waw => "write after write",
            DepKind::War => "write after read",
        }
    }
}

/// A data dependency of the recorded graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataEdge {
    pub from: u64,
    pub to: u64,
    pub kind: DepKind,
}

/// The recorded task graph: tasks, every data dependency between them (direct ones: one
/// implied through a third task is left out, as the runtime leaves it out), and the `P.seq`
/// order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskGraph {
    /// In submission order.
    pub nodes: Vec<GraphNode>,
    pub data: Vec<DataEdge>,
    pub order: Vec<OrderGate>,
}

/// The accesses of every task submitted so far that a later task can still depend on
/// directly, per tensor: the runtime's tensor map forgets a task when it retires, this
/// remembers it (for the recorded graph only) until a later write covers its region.
#[derive(Debug, Default)]
pub(crate) struct DepRecorder {
    tensors: HashMap<TensorId, Accesses>,
    pub(crate) edges: Vec<(u64, u64, DepKind)>,
}

#[derive(Debug, Default)]
struct Accesses {
    /// Oldest first.
    writers: Vec<(Region, u64)>,
    readers: Vec<(Region, u64)>,
}

impl DepRecorder {
    /// Records task `seq`'s arguments and the direct dependencies they give it.
    pub(crate) fn record(&mut self, seq: u64, args: &[Arg]) {
        let mut found: HashMap<u64, DepKind> = HashMap::new();
        let mut add = |from: u64, kind: DepKind| {
            if from != seq {
                let k = found.entry(from).or_insert(kind);
                *k = (*k).max(kind);
            }
        };
        for a in args {
            let Some(acc) = self.tensors.get(&a.region.tensor) else {
                continue;
            };
            let r = &a.region;
            // Writers newest first, down to one that covers the region: what is older is
            // ordered before that one already.
            let mut floor = None;
            for (w, s) in acc.writers.iter().rev() {
                if overlaps(w, r) {
                    // An `inout` argument reads what the writer wrote: read after write, the
                    // strongest kind (it orders the write after too).
                    add(
                        *s,
                        if a.dir.reads() {
                            DepKind::Raw
                        } else {
                            DepKind::Waw
                        },
                    );
                    if covers(w, r) {
                        floor = Some(*s);
                        break;
                    }
                }
            }
            if a.dir.writes() {
                for (rd, s) in acc.readers.iter().rev() {
                    if floor.is_some_and(|f| *s < f) {
                        continue;
                    }
                    if overlaps(rd, r) {
                        add(*s, DepKind::War);
                    }
                }
            }
        }
        let mut deps: Vec<(u64, DepKind)> = found.into_iter().collect();
        deps.sort_unstable();
        self.edges
            .extend(deps.into_iter().map(|(from, kind)| (from, seq, kind)));
        for a in args {
            let acc = self.tensors.entry(a.region.tensor).or_default();
            if a.dir.writes() {
                // What this write covers is reached through it from now on.
                acc.writers.retain(|(w, _)| !covers(&a.region, w));
                acc.readers.retain(|(rd, _)| !covers(&a.region, rd));
                acc.writers.push((a.region, seq));
            } else {
                acc.readers.push((a.region, seq));
            }
        }
    }
}

impl Runtime {
    /// The task graph recorded so far (needs `Config::record`).
    pub fn task_graph(&self) -> TaskGraph {
        let nodes = self
            .graph_nodes
            .iter()
            .map(|(seq, k, c)| GraphNode {
                seq: *seq,
                kernel: self
                    .kernels
                    .get(*k as usize)
                    .map_or_else(|| "?".to_string(), |k| k.name.clone()),
                coords: c.values().to_vec(),
            })
            .collect();
        let order = self
            .order
            .graph_gates()
            .into_iter()
            .map(|(members, waiters)| OrderGate { members, waiters })
            .collect();
        let data = self
            .recorded
            .edges
            .iter()
            .map(|&(from, to, kind)| DataEdge { from, to, kind })
            .collect();
        TaskGraph { nodes, data, order }
    }

    /// The task graph as the runtime saw it, as DOT (needs `Config::record`): data edges to
    /// tasks already finished at submission were satisfied then and are not drawn.
    pub fn dot(&self) -> String {
        self.dot_with(&|_| None)
    }

    /// [`Runtime::dot`] with more attributes for some nodes: `attrs(n)` for the `n`-th task
    /// submitted (from 0) gives DOT attribute text such as `URL="..."`, written as is.
    pub fn dot_with(&self, attrs: &dyn Fn(u64) -> Option<String>) -> String {
        let g = self.task_graph();
        let mut s = String::from("digraph tasks {\n  node [shape=box];\n");
        for n in &g.nodes {
            let label = dot_escape(&format!("{}{:?}", n.kernel, n.coords));
            match attrs(n.seq) {
                Some(a) => s.push_str(&format!("  t{} [label=\"{label}\", {a}];\n", n.seq)),
                None => s.push_str(&format!("  t{} [label=\"{label}\"];\n", n.seq)),
            }
        }
        // The edges the runtime waited on (to tasks still in flight at submission).
        for (a, b) in &self.graph_edges {
            s.push_str(&format!("  t{a} -> t{b};\n"));
        }
        // `P.seq` order: dashed, through a join point when many wait on many.
        for (gi, gate) in g.order.iter().enumerate() {
            s.push_str(&gate.dot(gi, "style=dashed, color=\"#808080\""));
        }
        s.push_str("}\n");
        s
    }
}

/// A DOT string's text: quotes and backslashes escaped.
pub fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}
