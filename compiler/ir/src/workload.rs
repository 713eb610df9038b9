//! Program IR: global tensors, params, axes, kernels, workloads, channels and processes,
//! schedules and expects.
//!
//! # Scoping
//!
//! Items are referred to by index ([`TensorId`], [`AxisId`], ...) into the [`Program`]'s
//! tables. Loop variables and `consume` bindings are [`LoopVar`]s indexing the `vars` table of
//! the enclosing [`Workload`] or [`Process`]; each holds a signed 64-bit integer.
//!
//! # Iteration
//!
//! A [`WStmt::For`] binds its `vars` from its `iters` in order; an [`Iter`] binds one variable,
//! except [`Iter::Axis`] on a `Ragged` or `Sparse` axis, which binds two (the row, then the
//! inner index / selected column). Iterations are generated in row-major order of the iterators
//! (the last one varies fastest). A `Ragged(outer, lens)` row `b` has `lens[b]` elements
//! `0..lens[b]`; a `Sparse(outer, indptr, indices)` row `b` selects the columns
//! `indices[indptr[b] .. indptr[b+1]]` in stored order.
//!
//! # Views
//!
//! A [`View`] names a tensor and, per leading dimension, an index or a slice (both affine in
//! loop variables, params and constants); dimensions not mentioned are taken whole. The
//! dimensions that remain (slices and trailing whole dimensions) form the tile: two remain →
//! `[rows, cols]`; one → `[1, n]`; none → `[1, 1]`; more than two is an error. For a partial
//! kernel dimension (`..N`) a slice may run past the tensor's end: the valid extent is the part
//! inside the tensor. Any other out-of-range index or slice is a run-time error naming the task
//! and the view.

use crate::dtype::{DType, ScalarValue};
use crate::kernel::{CmpOp, Kernel};
use serde::{Deserialize, Serialize};

/// Version of the serialized Program IR. Readers reject other versions.
pub const IR_VERSION: u32 = 2;

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// Index into [`Program::params`].
    ProgParamId
);
id_type!(
    /// Index into [`Program::tensors`].
    TensorId
);
id_type!(
    /// Index into [`Program::axes`].
    AxisId
);
id_type!(
    /// Index into [`Program::kernels`].
    KernelId
);
id_type!(
    /// Index into [`Program::workloads`].
    WorkloadId
);
id_type!(
    /// Index into [`Program::channels`].
    ChannelId
);
id_type!(
    /// Index into [`Program::processes`].
    ProcessId
);
id_type!(
    /// Index into the `vars` table of the enclosing workload or process.
    LoopVar
);

/// A whole program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Program {
    /// [`IR_VERSION`].
    pub version: u32,
    /// The source file the program was compiled from (paths in [`Init::Load`] are relative to
    /// its directory).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub params: Vec<ProgParam>,
    #[serde(default)]
    pub tensors: Vec<TensorDecl>,
    #[serde(default)]
    pub axes: Vec<Axis>,
    #[serde(default)]
    pub kernels: Vec<Kernel>,
    #[serde(default)]
    pub workloads: Vec<Workload>,
    #[serde(default)]
    pub channels: Vec<Channel>,
    #[serde(default)]
    pub processes: Vec<Process>,
    #[serde(default)]
    pub schedules: Vec<Schedule>,
    #[serde(default)]
    pub expects: Vec<Expect>,
    /// The root file's own workloads and those it imports by name, which `wsp run` chooses
    /// from when there is no schedule; `None` (an IR written without it): every workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<WorkloadId>>,
}

impl Program {
    /// An empty program of the current version.
    pub fn new() -> Program {
        Program {
            version: IR_VERSION,
            source: None,
            params: Vec::new(),
            tensors: Vec::new(),
            axes: Vec::new(),
            kernels: Vec::new(),
            workloads: Vec::new(),
            channels: Vec::new(),
            processes: Vec::new(),
            schedules: Vec::new(),
            expects: Vec::new(),
            entries: None,
        }
    }

    /// Serializes to pretty JSON.
    pub fn to_json(&self) -> String {
        // Serializing these plain data types cannot fail (no maps with non-string keys).
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parses JSON and checks the version.
    pub fn from_json(text: &str) -> Result<Program, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("invalid Program IR JSON: {e}"))?;
        match v.get("version").and_then(|v| v.as_u64()) {
            Some(n) if n == u64::from(IR_VERSION) => {}
            Some(n) => {
                return Err(format!(
                "unsupported Program IR version {n}: this reader understands version {IR_VERSION}"
            ))
            }
            None => return Err("Program IR JSON has no numeric `version` field".into()),
        }
        serde_json::from_value(v).map_err(|e| format!("invalid Program IR: {e}"))
    }

    /// Drops the kernels no workload or process calls (an imported module's other kernels)
    /// and renumbers the calls. Kernels keep their relative order.
    pub fn retain_called_kernels(&mut self) {
        let mut called = vec![false; self.kernels.len()];
        self.for_each_task_call(&mut |c| {
            if let Some(x) = called.get_mut(c.kernel.index()) {
                *x = true;
            }
        });
        let mut next = 0u32;
        let remap: Vec<Option<KernelId>> = called
            .iter()
            .map(|&c| {
                c.then(|| {
                    next += 1;
                    KernelId(next - 1)
                })
            })
            .collect();
        let mut keep = called.iter();
        self.kernels
            .retain(|_| keep.next().copied().unwrap_or(false));
        self.for_each_task_call(&mut |c| {
            if let Some(Some(id)) = remap.get(c.kernel.index()) {
                c.kernel = *id;
            }
        });
    }

    /// Calls `f` on every task call of every workload and process, nested ones included.
    fn for_each_task_call(&mut self, f: &mut impl FnMut(&mut TaskCall)) {
        for wl in &mut self.workloads {
            if let WorkloadBody::Block { stmts } = &mut wl.body {
                for_each_call(stmts, f);
            }
        }
        for p in &mut self.processes {
            for_each_call(&mut p.body, f);
        }
    }

    pub fn kernel(&self, id: KernelId) -> Option<&Kernel> {
        self.kernels.get(id.index())
    }
    pub fn tensor_by_name(&self, name: &str) -> Option<TensorId> {
        self.tensors
            .iter()
            .position(|t| t.name == name)
            .map(|i| TensorId(i as u32))
    }
    pub fn workload_by_name(&self, name: &str) -> Option<WorkloadId> {
        self.workloads
            .iter()
            .position(|t| t.name == name)
            .map(|i| WorkloadId(i as u32))
    }
    pub fn schedule_by_name(&self, name: &str) -> Option<&Schedule> {
        self.schedules.iter().find(|s| s.name == name)
    }

    /// What `wsp run` runs: the schedule `name` if given; else the schedule `main`, else the
    /// only schedule, else the only workload (with no schedule). Returns the schedule (if
    /// any) and its workload, or a message listing the choices.
    pub fn select_run(
        &self,
        name: Option<&str>,
    ) -> Result<(Option<&Schedule>, WorkloadId), String> {
        let names = || {
            self.schedules
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let pick = |s: &Schedule| -> Result<WorkloadId, String> {
            if self.workloads.get(s.workload.index()).is_none() {
                return Err(format!(
                    "schedule `{}` names workload #{}, which does not exist",
                    s.name, s.workload.0
                ));
            }
            Ok(s.workload)
        };
        if let Some(n) = name {
            return match self.schedule_by_name(n) {
                Some(s) => Ok((Some(s), pick(s)?)),
                None => Err(format!(
                    "no schedule `{n}` (schedules: {})",
                    if self.schedules.is_empty() {
                        "none".to_string()
                    } else {
                        names()
                    }
                )),
            };
        }
        if let Some(s) = self.schedule_by_name("main") {
            return Ok((Some(s), pick(s)?));
        }
        // Without a schedule, the workload the root file sees (when it sees one).
        let (count, only) = match &self.entries {
            None => (self.workloads.len(), WorkloadId(0)),
            Some(e) => (e.len(), e.first().copied().unwrap_or(WorkloadId(0))),
        };
        match (self.schedules.as_slice(), count) {
            ([s], _) => Ok((Some(s), pick(s)?)),
            ([], 1) if self.workloads.get(only.index()).is_some() => Ok((None, only)),
            ([], 1) => Err(format!("the program's entry workload #{} does not exist", only.0)),
            ([], 0) => Err("the program has no workload to run".into()),
            ([], n) => Err(format!(
                "the program has {n} workloads and no schedule; add `schedule main = <workload>`"
            )),
            _ => Err(format!(
                "the program has several schedules ({}) and none is named `main`; choose one with --schedule",
                names()
            )),
        }
    }
}

impl Default for Program {
    fn default() -> Self {
        Program::new()
    }
}

/// `param batch_size: u32 = 4`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProgParam {
    pub name: String,
    pub dtype: DType,
    pub default: ScalarValue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TensorKind {
    Input,
    Output,
    Scratch,
    /// A tensor local to one execution of a workload block (`let H: f32[64, 128] =
    /// scratch()`): each execution of [`WStmt::Local`] makes a fresh, zeroed instance (from the
    /// runtime's heap arena), freed once the block has ended and the tasks using it have
    /// retired. Its shape is constant.
    Local,
}

/// A global tensor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TensorDecl {
    pub name: String,
    pub kind: TensorKind,
    pub dtype: DType,
    /// Dimensions, affine over params (no loop variables).
    pub shape: Vec<Affine>,
    /// `None`: zeros for scratch and output tensors; an input without initialiser must be
    /// supplied by the caller (`--input`).
    #[serde(default)]
    pub init: Option<Init>,
    /// The declaration's initialiser (else its name) in the source, for errors about its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<SrcSpan>,
}

/// A tensor initialiser.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Init {
    /// `load("x.npy")`, relative to the program's directory.
    Load {
        path: String,
    },
    /// `random(seed: s)`: standard normal values, see [`crate::tensor::random_normal`].
    Random {
        seed: u64,
    },
    Zeros,
    Ones,
    Full {
        value: ScalarValue,
    },
    /// `[1, 2, 3]`, row-major, exactly as many values as elements.
    Literal {
        values: Vec<ScalarValue>,
    },
}

/// A symbol of an affine expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Sym {
    Var(LoopVar),
    Param(ProgParamId),
}

/// `constant + Σ coeff · sym`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Affine {
    pub constant: i64,
    #[serde(default)]
    pub terms: Vec<(Sym, i64)>,
}

impl Affine {
    pub fn constant(c: i64) -> Affine {
        Affine {
            constant: c,
            terms: Vec::new(),
        }
    }
    pub fn var(v: LoopVar) -> Affine {
        Affine {
            constant: 0,
            terms: vec![(Sym::Var(v), 1)],
        }
    }
    pub fn param(p: ProgParamId) -> Affine {
        Affine {
            constant: 0,
            terms: vec![(Sym::Param(p), 1)],
        }
    }
}

/// An axis (a typed iteration space).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Axis {
    pub name: String,
    #[serde(flatten)]
    pub kind: AxisKind,
    /// The declaration's constructor in the source, for errors about the axis's data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<SrcSpan>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AxisKind {
    Dense {
        size: u64,
    },
    /// Size given by a runtime expression (params; it may read tensor elements).
    DenseDyn {
        size: Expr,
    },
    /// Row `b` of `outer` has `lengths[b]` inner elements, or with `per`, `⌈lengths[b] / per⌉`
    /// (tiles of `per` elements: `Ragged(seqs, lens, per: 64)`).
    Ragged {
        outer: AxisId,
        lengths: TensorId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        per: Option<u32>,
    },
    /// CSR: row `b` selects `indices[indptr[b] .. indptr[b+1]]`.
    Sparse {
        outer: AxisId,
        indptr: TensorId,
        indices: TensorId,
    },
}

/// A runtime scalar expression (conditions, coordinates, sizes). Integers evaluate in i64,
/// floats in f64.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Expr {
    Const {
        value: ScalarValue,
    },
    Param {
        param: ProgParamId,
    },
    Var {
        var: LoopVar,
    },
    /// An element of a tensor (`lens[b]`); all indices given.
    Elem {
        tensor: TensorId,
        index: Vec<Expr>,
    },
    Binary {
        op: ExprOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Neg {
        x: Box<Expr>,
    },
    Not {
        x: Box<Expr>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExprOp {
    Add,
    Sub,
    Mul,
    /// Integer division truncates toward zero.
    Div,
    Rem,
    Min,
    Max,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

/// A workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Workload {
    pub name: String,
    /// Names of the loop variables ([`LoopVar`] indexes this).
    #[serde(default)]
    pub vars: Vec<String>,
    pub body: WorkloadBody,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadBody {
    /// A block of statements (`Dataflow`).
    Block { stmts: Vec<WStmt> },
    /// `sequential(w..)`.
    Sequential { parts: Vec<WorkloadId> },
    /// `combine(w..)`.
    Combine { parts: Vec<WorkloadId> },
    /// `connect(p..)`: CSP processes.
    Connect { processes: Vec<ConnectItem> },
}

/// A process of a `connect`, possibly replicated (`replicate(worker, 4)`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnectItem {
    pub process: ProcessId,
    #[serde(default = "one")]
    pub replicas: u32,
}

fn one() -> u32 {
    1
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoopKind {
    /// `P(...)`: independent iterations.
    Parallel,
    /// `P.seq(...)`.
    Sequential,
    /// `P.sel(...)`: sparse iteration.
    Selected,
    /// A plain `for` (dataflow order).
    Plain,
    /// Not written by the user: one iteration per variable (`v in e .. e + 1`) binding the
    /// computed indices of the views of the one statement inside (a view positioned by
    /// tensor data, or by a non-affine index such as `t % 4`).
    Bind,
}

/// What one loop iterator ranges over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Iter {
    /// A whole axis: one variable for Dense/DenseDyn, two (row, inner) for Ragged/Sparse.
    Axis { axis: AxisId },
    /// One row of a Ragged/Sparse axis (`tokens[b]`, `routing[b]`): one variable.
    Row { axis: AxisId, row: Affine },
    /// `start .. end`.
    Range { start: Expr, end: Expr },
}

/// A workload or process statement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "stmt", rename_all = "snake_case")]
pub enum WStmt {
    For {
        kind: LoopKind,
        vars: Vec<LoopVar>,
        iters: Vec<Iter>,
        body: Vec<WStmt>,
    },
    /// `when c {..} else when c2 {..} else {..}`: the first true branch runs.
    When {
        branches: Vec<WhenBranch>,
        #[serde(default)]
        otherwise: Vec<WStmt>,
    },
    Call(TaskCall),
    /// Runs another (named) workload in place.
    Run {
        workload: WorkloadId,
    },
    /// `send ch, task` (runs the task, then sends its coordinates) or `send ch, expr`.
    Send {
        channel: ChannelId,
        payload: SendPayload,
    },
    /// `consume ch as i, j { body }`.
    Consume {
        channel: ChannelId,
        bindings: Vec<LoopVar>,
        body: Vec<WStmt>,
    },
    /// `let H: f32[64, 128] = scratch()` and the rest of its block: a fresh instance of the
    /// [`TensorKind::Local`] tensor `tensor`, zeroed, for the tasks of `body`; it ends with
    /// `body`.
    Local {
        tensor: TensorId,
        body: Vec<WStmt>,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WhenBranch {
    pub cond: Expr,
    pub body: Vec<WStmt>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SendPayload {
    Task(TaskCall),
    Values { values: Vec<Expr> },
}

/// `k[coords](arg: view, ...)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskCall {
    pub kernel: KernelId,
    pub coords: Vec<Expr>,
    /// One argument per kernel parameter, in parameter order (defaults already filled in).
    pub args: Vec<TaskArg>,
    /// Where the call is written, for run-time errors (absent in hand-built programs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<SrcSpan>,
}

/// A source range: the file as diagnostics name it, and byte offsets into its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SrcSpan {
    pub file: String,
    pub start: u32,
    pub end: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TaskArg {
    View(View),
    Scalar { value: Expr },
}

/// A view of a global tensor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct View {
    pub tensor: TensorId,
    /// Leading dimensions; the rest are whole.
    pub dims: Vec<ViewDim>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ViewDim {
    /// Drops the dimension.
    Index { at: Affine },
    /// Keeps `start .. end`.
    Slice { start: Affine, end: Affine },
    /// Keeps the whole dimension (`:`).
    Full,
}

/// `channel c: Channel[depth: 2]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Channel {
    pub name: String,
    /// Capacity in tokens; 0 is a rendezvous.
    pub depth: u32,
    /// Cycles added by a channel operation, as declared (`None`: the architecture model's
    /// `channel_latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<u64>,
}

/// `process p consumes a produces b { ... }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Process {
    pub name: String,
    #[serde(default)]
    pub consumes: Vec<ChannelId>,
    #[serde(default)]
    pub produces: Vec<ChannelId>,
    #[serde(default)]
    pub vars: Vec<String>,
    pub body: Vec<WStmt>,
}

/// `schedule main = w.dispatch(...)...`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Schedule {
    pub name: String,
    pub workload: WorkloadId,
    pub directives: Vec<Directive>,
}

/// One directive of a schedule, typed by the language's vocabulary
/// (`wsp_vocab::schedule`). Serialized with a `"directive"` tag.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "directive", rename_all = "snake_case")]
pub enum Directive {
    /// `.dispatch(p)`, `.timing(p)` or `.ready(p)`: the policy names its directive
    /// ([`Policy::directive`]). `args` as written: counts for `round_robin(n)`, `batched(n)`
    /// and the like, one key expression for `affinity`, `hash`, `by` and `priority`.
    Policy {
        policy: Policy,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<DirValue>,
    },
    /// `.task_window(n)`, `.task_window(n, mode)`.
    TaskWindow {
        size: i64,
        #[serde(default, skip_serializing_if = "is_stall")]
        mode: WindowMode,
    },
    /// `.task_graph(tensormap: n, deplist: n, ready: n, heap: bytes)`: the sizes given.
    TaskGraph {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tensormap: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        deplist: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ready: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        heap: Option<u64>,
    },
    /// `.streams(n)`.
    Streams { count: i64 },
    /// `.stream_by(key)`.
    StreamBy { key: DirValue },
    /// `.target(arch)`.
    Target { arch: String },
    /// `.spatial_map(grid: (rows, cols), at: (row, col))`: a task goes to core
    /// `(row mod rows) * cols + (col mod cols)` of its class.
    SpatialMap {
        rows: u32,
        cols: u32,
        row: DirValue,
        col: DirValue,
    },
    /// `.layout(T, shard(dim: d, parts: n))`: tensor `T` split along dimension `dim` into
    /// `parts` equal contiguous shards; shard `s` is owned by core `s mod count` of the class of
    /// the task that uses it.
    Layout {
        tensor: TensorId,
        dim: u32,
        parts: u32,
    },
}

pub use wsp_vocab::schedule::{Policy, WindowMode};

fn is_stall(m: &WindowMode) -> bool {
    *m == WindowMode::Stall
}

impl Directive {
    /// The directive as the language names it.
    pub fn kind(&self) -> wsp_vocab::schedule::Directive {
        use wsp_vocab::schedule::Directive as D;
        match self {
            Directive::Policy { policy, .. } => policy.directive(),
            Directive::TaskWindow { .. } => D::TaskWindow,
            Directive::TaskGraph { .. } => D::TaskGraph,
            Directive::Streams { .. } => D::Streams,
            Directive::StreamBy { .. } => D::StreamBy,
            Directive::Target { .. } => D::Target,
            Directive::SpatialMap { .. } => D::SpatialMap,
            Directive::Layout { .. } => D::Layout,
        }
    }

    /// The key of the directive's row in the capability matrix (`dispatch.hash`,
    /// `task_window`).
    pub fn capability_key(&self) -> &'static str {
        match self {
            Directive::Policy { policy, .. } => policy.capability_key(),
            Directive::TaskWindow { .. } => "task_window",
            Directive::TaskGraph { .. } => "task_graph",
            Directive::Streams { .. } => "streams",
            Directive::StreamBy { .. } => "stream_by",
            Directive::Target { .. } => "target",
            Directive::SpatialMap { .. } => "spatial_map",
            Directive::Layout { .. } => "layout",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DirArg {
    #[serde(default)]
    pub name: Option<String>,
    pub value: DirValue,
}

/// A directive argument.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DirValue {
    Int {
        value: i64,
    },
    Float {
        value: f64,
    },
    Str {
        value: String,
    },
    /// A keyword such as `fifo`, `immediate`, `work_steal`.
    Ident {
        name: String,
    },
    /// An axis coordinate (`affinity(batch)`, `stream_by(heads % 4)`).
    Axis {
        axis: AxisId,
    },
    /// `round_robin(4)`, `batched(8)`, `hash(expr)`, ...
    Call {
        name: String,
        args: Vec<DirArg>,
    },
    Binary {
        op: ExprOp,
        lhs: Box<DirValue>,
        rhs: Box<DirValue>,
    },
}

/// Something checked after a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Expect {
    /// `close(actual, expected, rtol, atol)`: `|a − e| ≤ atol + rtol·|e|` elementwise.
    Close {
        actual: TensorId,
        expected: ExpectData,
        rtol: f64,
        atol: f64,
    },
    /// `total_cycles == 4864` and the like.
    Stat { stat: Stat, op: CmpOp, value: i64 },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExpectData {
    Tensor { tensor: TensorId },
    Init { init: Init },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    TotalCycles,
    Tasks,
}

impl WStmt {
    /// The statement lists nested directly in this one — a loop's, a `consume`'s or a local
    /// tensor's body, each `when` branch and then its `else` — in source order.
    pub fn bodies(&self) -> Vec<&[WStmt]> {
        match self {
            WStmt::For { body, .. } | WStmt::Consume { body, .. } | WStmt::Local { body, .. } => {
                vec![body]
            }
            WStmt::When {
                branches,
                otherwise,
            } => branches
                .iter()
                .map(|b| &b.body[..])
                .chain(std::iter::once(&otherwise[..]))
                .collect(),
            WStmt::Call(_) | WStmt::Run { .. } | WStmt::Send { .. } => Vec::new(),
        }
    }

    /// [`WStmt::bodies`], to change them.
    pub fn bodies_mut(&mut self) -> Vec<&mut Vec<WStmt>> {
        match self {
            WStmt::For { body, .. } | WStmt::Consume { body, .. } | WStmt::Local { body, .. } => {
                vec![body]
            }
            WStmt::When {
                branches,
                otherwise,
            } => branches
                .iter_mut()
                .map(|b| &mut b.body)
                .chain(std::iter::once(otherwise))
                .collect(),
            WStmt::Call(_) | WStmt::Run { .. } | WStmt::Send { .. } => Vec::new(),
        }
    }
}

/// Calls `f` on every statement of `stmts` and of the bodies nested in them, each before its
/// bodies, in source order: the one walk of a statement tree for what needs no context.
pub fn walk_stmts<'a>(stmts: &'a [WStmt], f: &mut impl FnMut(&'a WStmt)) {
    for st in stmts {
        f(st);
        for b in st.bodies() {
            walk_stmts(b, f);
        }
    }
}

/// Calls `f` on every task call in `stmts`, nested ones included.
fn for_each_call(stmts: &mut [WStmt], f: &mut impl FnMut(&mut TaskCall)) {
    for st in stmts {
        match st {
            WStmt::Call(c)
            | WStmt::Send {
                payload: SendPayload::Task(c),
                ..
            } => f(c),
            other => {
                for b in other.bodies_mut() {
                    for_each_call(b, f);
                }
            }
        }
    }
}
