//! Schedule directives (`.dispatch(...)`, `.task_window(n)`, ...) and the policies of
//! `.dispatch`, `.timing` and `.ready`.
//!
//! [`Directive::ALL`] and [`Policy::ALL`] are the tables: each directive and policy has its
//! name, how it is written, the form of its argument and the key of its row in the capability
//! matrix (`wsp_arch::capabilities`), where each backend's support is declared.

use serde::{Deserialize, Serialize};

/// A schedule directive.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Directive {
    Dispatch,
    /// `.dispatch_by(expr)`: PTO-WSP v9's spelling of `.dispatch(by(expr))`.
    DispatchBy,
    Streams,
    StreamBy,
    Timing,
    TaskWindow,
    /// `.task_graph(tensormap: n, deplist: n, ready: n, heap: bytes)`: the runtime's other rings
    /// (PTO-WSP v9's task-graph pool configuration).
    TaskGraph,
    Ready,
    Target,
    /// `.spatial_map(grid: (rows, cols), at: (row_key, col_key))`: each task on a fixed core of
    /// its class, viewed as a row-major grid (PTO-WSP v9's `spatial_map`).
    SpatialMap,
    /// `.layout(T, shard(dim: d, parts: n))`: tensor `T` split along `d` into `n` shards, each
    /// owned by a core; a task touching a shard runs on its owner (PTO-WSP v9's tensor layout).
    Layout,
}

/// What a directive takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectiveArg {
    /// One of the directive's [`Policy`]s.
    Policy,
    /// An integer constant ≥ 1.
    Count,
    /// A key expression over axes (`heads % 4`).
    Key,
    /// An architecture model's name.
    Arch,
    /// Named ring sizes ([`POOL_NAMES`]), each an integer constant ≥ 1.
    Pools,
    /// `grid: (rows, cols), at: (row_key, col_key)`: a grid of integer constants ≥ 1 and two
    /// key expressions.
    Grid,
    /// A global tensor and its sharding, `T, shard(dim: d, parts: n)`.
    Shard,
}

/// The arguments of `.spatial_map(...)`, as they are named.
pub const GRID_NAMES: [&str; 2] = ["grid", "at"];

/// The arguments of `shard(...)` in `.layout(T, shard(dim: d, parts: n))`, as they are named
/// (or in this order when unnamed).
pub const SHARD_NAMES: [&str; 2] = ["dim", "parts"];

/// The sharding form of `.layout(...)`.
pub const SHARD: &str = "shard";

/// The rings `.task_graph(...)` sizes, as its arguments are named: the tensor map's entries, the
/// dependency-list pool's edges, each core class's ready queue, the heap arena's bytes.
pub const POOL_NAMES: [&str; 4] = ["tensormap", "deplist", "ready", "heap"];

/// The `task_graph` policy form's arguments for the sizes given (the runtime's registry reads
/// them back with [`task_graph_sizes`]): tensor map, dependency list, ready queue, heap low and
/// high halves; 0 for a ring not given.
pub fn task_graph_form(
    tensormap: Option<u32>,
    deplist: Option<u32>,
    ready: Option<u32>,
    heap: Option<u64>,
) -> Vec<u32> {
    let h = heap.unwrap_or(0);
    vec![
        tensormap.unwrap_or(0),
        deplist.unwrap_or(0),
        ready.unwrap_or(0),
        h as u32,
        (h >> 32) as u32,
    ]
}

/// The sizes of a `task_graph` form ([`task_graph_form`]), `None` for a ring not given.
#[allow(clippy::type_complexity)]
pub fn task_graph_sizes(
    args: &[u32],
) -> Option<(Option<u32>, Option<u32>, Option<u32>, Option<u64>)> {
    let [t, d, r, lo, hi] = args else {
        return None;
    };
    let some = |v: u32| (v > 0).then_some(v);
    let heap = u64::from(*hi) << 32 | u64::from(*lo);
    Some((some(*t), some(*d), some(*r), (heap > 0).then_some(heap)))
}

impl Directive {
    /// In the order completion lists them.
    pub const ALL: [Directive; 11] = [
        Directive::Dispatch,
        Directive::DispatchBy,
        Directive::Streams,
        Directive::StreamBy,
        Directive::Timing,
        Directive::TaskWindow,
        Directive::TaskGraph,
        Directive::Ready,
        Directive::Target,
        Directive::SpatialMap,
        Directive::Layout,
    ];

    /// The directive's name, as written after the `.`.
    pub const fn name(self) -> &'static str {
        match self {
            Directive::Dispatch => "dispatch",
            Directive::DispatchBy => "dispatch_by",
            Directive::Streams => "streams",
            Directive::StreamBy => "stream_by",
            Directive::Timing => "timing",
            Directive::TaskWindow => "task_window",
            Directive::TaskGraph => "task_graph",
            Directive::Ready => "ready",
            Directive::Target => "target",
            Directive::SpatialMap => "spatial_map",
            Directive::Layout => "layout",
        }
    }

    pub fn from_name(name: &str) -> Option<Directive> {
        Directive::ALL.into_iter().find(|d| d.name() == name)
    }

    pub const fn arg(self) -> DirectiveArg {
        match self {
            Directive::Dispatch | Directive::Timing | Directive::Ready => DirectiveArg::Policy,
            Directive::Streams | Directive::TaskWindow => DirectiveArg::Count,
            Directive::StreamBy | Directive::DispatchBy => DirectiveArg::Key,
            Directive::Target => DirectiveArg::Arch,
            Directive::TaskGraph => DirectiveArg::Pools,
            Directive::SpatialMap => DirectiveArg::Grid,
            Directive::Layout => DirectiveArg::Shard,
        }
    }

    /// The policies the directive accepts (empty for a directive that takes no policy).
    pub fn policies(self) -> impl Iterator<Item = Policy> {
        Policy::ALL
            .into_iter()
            .filter(move |p| p.directive() == self)
    }

    /// How the directive is written (messages, hovers).
    pub const fn usage(self) -> &'static str {
        match self {
            Directive::Dispatch => {
                "`.dispatch(round_robin(n) | affinity(axis) | hash(expr) | work_steal | by(expr))`"
            }
            Directive::DispatchBy => {
                "`.dispatch_by(expr)`: the same as `.dispatch(by(expr))`, PTO-WSP v9's spelling"
            }
            Directive::Streams => "`.streams(n)` with n ≥ 1",
            Directive::StreamBy => "`.stream_by(expr)`, e.g. `.stream_by(heads % 4)`",
            Directive::Timing => {
                "`.timing(immediate | batched(n) | interleaved(n) | rate_limit(n))`"
            }
            Directive::TaskWindow => {
                "`.task_window(n)` or `.task_window(n, stall | abort | benchmark)`: at most n tasks in flight, n ≥ 1"
            }
            Directive::TaskGraph => {
                "`.task_graph(tensormap: n, deplist: n, ready: n, heap: bytes)`: the sizes of the runtime's rings (any of them)"
            }
            Directive::Ready => "`.ready(fifo | lifo | priority(expr))`",
            Directive::Target => {
                "`.target(ascend910b | ascend950 | aie_ml | pto_wsp_v9 | cpu_sim)`"
            }
            Directive::SpatialMap => {
                "`.spatial_map(grid: (rows, cols), at: (row_key, col_key))`: each task on core `(row_key mod rows) * cols + (col_key mod cols)` of its class, rows and cols ≥ 1"
            }
            Directive::Layout => {
                "`.layout(T, shard(dim: d, parts: n))`: tensor `T` split along dimension `d` into `n` equal shards; a task touching shard `s` runs on core `s mod count` of its class"
            }
        }
    }

    /// The key of the directive's row in the capability matrix; `None` for the directives
    /// whose rows are per policy.
    pub const fn capability_key(self) -> Option<&'static str> {
        match self {
            Directive::Dispatch | Directive::Timing | Directive::Ready => None,
            Directive::DispatchBy => Some("dispatch.by"),
            Directive::Streams => Some("streams"),
            Directive::StreamBy => Some("stream_by"),
            Directive::TaskWindow => Some("task_window"),
            Directive::TaskGraph => Some("task_graph"),
            Directive::Target => Some("target"),
            Directive::SpatialMap => Some("spatial_map"),
            Directive::Layout => Some("layout"),
        }
    }
}

/// What a full task window does: `.task_window(n, mode)` (PTO-WSP v9's window modes).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WindowMode {
    /// The orchestration waits until a task in flight completes (the default).
    #[default]
    Stall,
    /// The run stops with an error naming the window.
    Abort,
    /// The window does not hold the orchestration back; the run records how far it would
    /// have had to grow (the most tasks in flight).
    Benchmark,
}

impl WindowMode {
    pub const ALL: [WindowMode; 3] = [WindowMode::Stall, WindowMode::Abort, WindowMode::Benchmark];

    pub const fn name(self) -> &'static str {
        match self {
            WindowMode::Stall => "stall",
            WindowMode::Abort => "abort",
            WindowMode::Benchmark => "benchmark",
        }
    }

    pub fn from_name(name: &str) -> Option<WindowMode> {
        WindowMode::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The mode as a policy argument (`task_window(n, code)`): its index in [`WindowMode::ALL`].
    pub const fn code(self) -> u32 {
        self as u32
    }

    pub fn from_code(code: u32) -> Option<WindowMode> {
        WindowMode::ALL.get(code as usize).copied()
    }

    /// What the mode does, for hovers and messages.
    pub const fn doc(self) -> &'static str {
        match self {
            WindowMode::Stall => {
                "a full window stalls the orchestration until a task completes (the default)"
            }
            WindowMode::Abort => {
                "a full window stops the run with an error (E0816) naming the window"
            }
            WindowMode::Benchmark => {
                "the window never stalls; the run reports how far it would have had to grow"
            }
        }
    }
}

/// The names of [`WindowMode::ALL`].
pub const WINDOW_MODE_NAMES: [&str; 3] = ["stall", "abort", "benchmark"];

/// What a policy takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyArg {
    /// Written bare: `work_steal`.
    None,
    /// One integer constant ≥ 1: `round_robin(4)`.
    Count,
    /// One axis: `affinity(batch)`.
    Axis,
    /// One key expression over axes: `hash(b * 8 + h)`.
    Key,
}

/// A policy of `.dispatch`, `.timing` or `.ready`.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    RoundRobin,
    Affinity,
    Hash,
    WorkSteal,
    By,
    Immediate,
    Batched,
    Interleaved,
    RateLimit,
    Fifo,
    Lifo,
    Priority,
}

impl Policy {
    /// In the order completion lists them.
    pub const ALL: [Policy; 12] = [
        Policy::RoundRobin,
        Policy::Affinity,
        Policy::Hash,
        Policy::WorkSteal,
        Policy::By,
        Policy::Immediate,
        Policy::Batched,
        Policy::Interleaved,
        Policy::RateLimit,
        Policy::Fifo,
        Policy::Lifo,
        Policy::Priority,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Policy::RoundRobin => "round_robin",
            Policy::Affinity => "affinity",
            Policy::Hash => "hash",
            Policy::WorkSteal => "work_steal",
            Policy::By => "by",
            Policy::Immediate => "immediate",
            Policy::Batched => "batched",
            Policy::Interleaved => "interleaved",
            Policy::RateLimit => "rate_limit",
            Policy::Fifo => "fifo",
            Policy::Lifo => "lifo",
            Policy::Priority => "priority",
        }
    }

    pub fn from_name(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The directive the policy belongs to.
    pub const fn directive(self) -> Directive {
        match self {
            Policy::RoundRobin
            | Policy::Affinity
            | Policy::Hash
            | Policy::WorkSteal
            | Policy::By => Directive::Dispatch,
            Policy::Immediate | Policy::Batched | Policy::Interleaved | Policy::RateLimit => {
                Directive::Timing
            }
            Policy::Fifo | Policy::Lifo | Policy::Priority => Directive::Ready,
        }
    }

    pub const fn arg(self) -> PolicyArg {
        match self {
            Policy::RoundRobin | Policy::Batched | Policy::Interleaved | Policy::RateLimit => {
                PolicyArg::Count
            }
            Policy::Affinity => PolicyArg::Axis,
            Policy::Hash | Policy::By | Policy::Priority => PolicyArg::Key,
            Policy::WorkSteal | Policy::Immediate | Policy::Fifo | Policy::Lifo => PolicyArg::None,
        }
    }

    /// How the policy is written: `round_robin(n)`, `work_steal`.
    pub const fn written(self) -> &'static str {
        match self {
            Policy::RoundRobin => "round_robin(n)",
            Policy::Affinity => "affinity(axis)",
            Policy::Hash => "hash(expr)",
            Policy::WorkSteal => "work_steal",
            Policy::By => "by(expr)",
            Policy::Immediate => "immediate",
            Policy::Batched => "batched(n)",
            Policy::Interleaved => "interleaved(n)",
            Policy::RateLimit => "rate_limit(n)",
            Policy::Fifo => "fifo",
            Policy::Lifo => "lifo",
            Policy::Priority => "priority(expr)",
        }
    }

    /// The key of the policy's row in the capability matrix: `dispatch.round_robin`.
    pub const fn capability_key(self) -> &'static str {
        match self {
            Policy::RoundRobin => "dispatch.round_robin",
            Policy::Affinity => "dispatch.affinity",
            Policy::Hash => "dispatch.hash",
            Policy::WorkSteal => "dispatch.work_steal",
            Policy::By => "dispatch.by",
            Policy::Immediate => "timing.immediate",
            Policy::Batched => "timing.batched",
            Policy::Interleaved => "timing.interleaved",
            Policy::RateLimit => "timing.rate_limit",
            Policy::Fifo => "ready.fifo",
            Policy::Lifo => "ready.lifo",
            Policy::Priority => "ready.priority",
        }
    }
}

/// The capability-matrix key of a directive as written, with its policy's name for the
/// directives that take one: `("dispatch", Some("hash"))` → `dispatch.hash`,
/// `("task_window", None)` → `task_window`. `None` for an unknown directive or policy, or a
/// policy of another directive.
pub fn capability_key(directive: &str, policy: Option<&str>) -> Option<&'static str> {
    let d = Directive::from_name(directive)?;
    match (d.capability_key(), policy) {
        (Some(key), _) => Some(key),
        (None, Some(p)) => Policy::from_name(p)
            .filter(|p| p.directive() == d)
            .map(Policy::capability_key),
        (None, None) => None,
    }
}

/// The names of [`Directive::ALL`], in table order.
pub const DIRECTIVE_NAMES: [&str; Directive::ALL.len()] = {
    let mut out = [""; Directive::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = Directive::ALL[i].name();
        i += 1;
    }
    out
};

/// The names of [`Policy::ALL`], in table order.
pub const POLICY_NAMES: [&str; Policy::ALL.len()] = {
    let mut out = [""; Policy::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = Policy::ALL[i].name();
        i += 1;
    }
    out
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_graph_forms_round_trip() {
        for sizes in [
            (Some(64), None, Some(3), Some(5u64 << 32 | 7)),
            (None, Some(9), None, None),
            (None, None, None, Some(1 << 40)),
        ] {
            let form = task_graph_form(sizes.0, sizes.1, sizes.2, sizes.3);
            assert_eq!(task_graph_sizes(&form), Some(sizes));
        }
        assert_eq!(task_graph_sizes(&[1, 2]), None);
    }

    #[test]
    fn window_modes_round_trip() {
        for (m, n) in WindowMode::ALL.into_iter().zip(WINDOW_MODE_NAMES) {
            assert_eq!(m.name(), n);
            assert_eq!(WindowMode::from_name(n), Some(m));
            assert_eq!(WindowMode::from_code(m.code()), Some(m));
            assert!(Directive::TaskWindow.usage().contains(n));
        }
    }

    #[test]
    fn names_round_trip() {
        for d in Directive::ALL {
            assert_eq!(Directive::from_name(d.name()), Some(d));
            assert!(d.usage().contains(d.name()), "{d:?}");
        }
        for p in Policy::ALL {
            assert_eq!(Policy::from_name(p.name()), Some(p));
            assert!(p.written().starts_with(p.name()));
            assert_eq!(
                p.capability_key(),
                format!("{}.{}", p.directive().name(), p.name())
            );
            assert!(p.directive().usage().contains(p.name()), "{p:?}");
            assert_eq!(p.written().contains('('), p.arg() != PolicyArg::None);
        }
    }

    #[test]
    fn capability_keys_of_written_directives() {
        assert_eq!(
            capability_key("dispatch", Some("hash")),
            Some("dispatch.hash")
        );
        assert_eq!(capability_key("task_window", None), Some("task_window"));
        assert_eq!(
            capability_key("task_window", Some("x")),
            Some("task_window")
        );
        assert_eq!(capability_key("dispatch", Some("teleport")), None);
        assert_eq!(capability_key("dispatch", Some("fifo")), None);
        assert_eq!(capability_key("dispatch", None), None);
        assert_eq!(capability_key("teleport", None), None);
    }

    #[test]
    fn a_directive_takes_policies_exactly_when_its_argument_is_one() {
        for d in Directive::ALL {
            assert_eq!(
                d.policies().next().is_some(),
                d.arg() == DirectiveArg::Policy,
                "{d:?}"
            );
            assert_eq!(
                d.capability_key().is_none(),
                d.arg() == DirectiveArg::Policy
            );
        }
    }
}
