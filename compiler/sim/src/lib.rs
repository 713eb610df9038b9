//! The `cpu_sim` backend: runs a Program IR on the task-graph runtime with real data.
//!
//! * The orchestration is JIT-compiled ([`wsp_jit::orch`]): workload bodies and CSP process
//!   bodies are native step functions that drive a [`TaskBackend`] which **submits** every
//!   task to the runtime instead of running it; when the orchestration reads data (a `when` on
//!   a runtime value, a Ragged length, a Sparse index) it waits for that tensor's producers
//!   ([`wsp_runtime::Runtime::wait_tensor`]). Process bodies are resumable state machines the
//!   runtime steps as its processes. With [`Options::interpret`] or
//!   [`Options::interpret_orchestration`], or when the compiler refuses the program (the reason
//!   is in [`SimRun::orchestration`]), the reference workload interpreter ([`wsp_ir::exec`])
//!   drives the same backend instead; it is the compiled orchestration's oracle.
//! * Kernels are Cranelift-compiled ([`wsp_jit`]) when the JIT covers them (f32, f16, bf16,
//!   i32 and bool tiles); otherwise they run in the reference interpreter, and
//!   [`KernelInfo::engine`] says why.
//!   Either way the runtime calls them in dependency order on its own tensor buffers.
//! * Each task's compute cycles come from the architecture model's cost tables
//!   ([`wsp_ir::cost::task_cost`]; exactly v9's figure under `pto_wsp_v9`); the runtime adds
//!   dispatch, dependency and transfer time and keeps the clock.
//!
//! The schedule's directives become runtime [`Policies`]; a directive the simulator does not
//! enforce is an error, never silently dropped.

pub mod graph;

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wsp_ir::cost;
use wsp_ir::data::{self, ExpectReport};
use wsp_ir::dtype::{DType, ScalarValue};
use wsp_ir::exec::{self, ExecOutcome, TaskBackend, TaskInstance, TaskValue};
use wsp_ir::interp::{run_kernel, KernelArg, Tile};
use wsp_ir::kernel::{Kernel, Op, ParamKind, Stmt};
use wsp_ir::schedule::{Keys, Shard, Spatial};
use wsp_ir::tensor::{decode_el, encode_el, Data, HostTensor};
use wsp_ir::workload::{
    Program, Schedule, SrcSpan, Stat, TensorId, WStmt, WorkloadBody, WorkloadId,
};
use wsp_runtime as rt;
use wsp_runtime::{Arch, CoreClass, Policies, ProcCx, RawTask, Runtime, RuntimeError};
/// A deadlock's report and what its processes wait for (in [`SimError::Deadlock`]).
pub use wsp_runtime::{DeadlockReport, Wait};
use wsp_vocab::codes;

/// What to run and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// The schedule to run (see [`Program::select_run`]).
    pub schedule: Option<String>,
    /// `--set NAME=VALUE` for params and DenseDyn sizes.
    pub set: Vec<(String, String)>,
    /// `--input NAME=path.npy`.
    pub inputs: Vec<(String, PathBuf)>,
    /// Where `load("...")` paths are relative to (the program's directory).
    pub base_dir: PathBuf,
    pub arch: Arch,
    /// Time only: kernels are not run and outputs are not computed.
    pub timing_only: bool,
    /// Record a Chrome trace, the task graph and the per-task list of [`SimRun::outcome`]
    /// (memory grows with the task count).
    pub record: bool,
    /// Host threads running kernels (1: on the orchestrating thread).
    pub threads: usize,
    /// Run every kernel and the orchestration in the reference interpreters (no JIT).
    pub interpret: bool,
    /// Run the orchestration in the reference workload interpreter (kernels still JIT).
    pub interpret_orchestration: bool,
    /// Stop with E0815 instead of submitting more tasks than this, or of letting semantic
    /// time pass this cycle (a bound for pipelines that never end).
    pub max_tasks: Option<u64>,
    pub max_cycles: Option<u64>,
    /// How the task graph is drawn (with `record`).
    pub graph_style: graph::Style,
    /// Called every [`PROGRESS_EVERY`] tasks with the tasks submitted, the cycles so far and
    /// the tasks the run will submit when its loops say so without data
    /// ([`wsp_ir::counts::static_task_total`]): a progress display, with an ETA when known.
    pub progress: Option<fn(u64, u64, Option<u64>)>,
}

/// How often [`Options::progress`] is called, in tasks.
pub const PROGRESS_EVERY: u64 = 4096;

impl Options {
    pub fn new(arch: Arch, base_dir: impl Into<PathBuf>) -> Options {
        Options {
            schedule: None,
            set: Vec::new(),
            inputs: Vec::new(),
            base_dir: base_dir.into(),
            arch,
            timing_only: false,
            record: false,
            threads: 1,
            interpret: false,
            interpret_orchestration: false,
            max_tasks: None,
            max_cycles: None,
            graph_style: graph::Style::default(),
            progress: None,
        }
    }
}

/// A failed run. `code` is the diagnostic code (E08xx) where there is one.
#[derive(Clone, Debug, PartialEq)]
pub enum SimError {
    /// Bad data, params, schedule or arguments: nothing ran. `at` is the tensor declaration
    /// whose data or shape is wrong, when the error is about one.
    Setup {
        code: &'static str,
        message: String,
        at: Option<SrcSpan>,
    },
    /// A task, view or kernel failed during the run; `at` is the task call or (`place`) the
    /// axis whose data is wrong, when known.
    Exec {
        code: &'static str,
        message: String,
        at: Option<SrcSpan>,
        place: exec::Place,
    },
    /// The run deadlocked: the runtime's report, as text and (when the runtime made it) as
    /// the structure (for `--stats json`).
    Deadlock(String, Option<Box<rt::DeadlockReport>>),
    /// A kernel failed on a task (E0810); `at` is the kernel's declaration, when known.
    Kernel {
        message: String,
        at: Option<SrcSpan>,
    },
}

impl SimError {
    /// The message without the `error[CODE]: ` of its display.
    pub fn message(&self) -> &str {
        match self {
            SimError::Setup { message, .. }
            | SimError::Exec { message, .. }
            | SimError::Kernel { message, .. } => message,
            SimError::Deadlock(m, _) => m,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            SimError::Setup { code, .. } | SimError::Exec { code, .. } => code,
            SimError::Kernel { .. } => codes::E0810,
            SimError::Deadlock(..) => codes::E0811,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Setup { code, message, .. } | SimError::Exec { code, message, .. } => {
                write!(f, "error[{code}]: {message}")
            }
            SimError::Kernel { message, .. } => write!(f, "error[E0810]: {message}"),
            SimError::Deadlock(m, _) => write!(f, "error[E0811]: {m}"),
        }
    }
}

impl std::error::Error for SimError {}

fn setup(message: impl Into<String>) -> SimError {
    SimError::Setup {
        code: codes::E0807,
        message: message.into(),
        at: None,
    }
}

/// The schedule (its selection, a directive or a key) cannot run on the simulator.
fn schedule_error(message: impl Into<String>) -> SimError {
    SimError::Setup {
        code: codes::E0814,
        message: message.into(),
        at: None,
    }
}

/// The run reached `--max-tasks` or `--max-cycles`.
fn limit_error(l: rt::RunLimit) -> SimError {
    SimError::Exec {
        code: codes::E0815,
        message: limit_message(l),
        at: None,
        place: exec::Place::Task,
    }
}

fn limit_message(l: rt::RunLimit) -> String {
    format!("stopped: {l}")
}

fn from_runtime(p: &Program, e: RuntimeError) -> SimError {
    match e {
        RuntimeError::Deadlock(r) => SimError::Deadlock(r.to_string(), Some(r)),
        RuntimeError::Limit(l) => limit_error(l),
        e @ RuntimeError::WindowFull { .. } => SimError::Exec {
            code: codes::E0816,
            message: e.to_string(),
            at: None,
            place: exec::Place::Task,
        },
        RuntimeError::Kernel { ref kernel, .. } => SimError::Kernel {
            at: p
                .kernels
                .iter()
                .find(|k| &k.name == kernel)
                .and_then(|k| k.at.clone()),
            message: e.to_string(),
        },
        other => SimError::Exec {
            code: codes::E0810,
            message: other.to_string(),
            at: None,
            place: exec::Place::Task,
        },
    }
}

/// How a kernel was executed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    Jit,
    /// The reference interpreter, with the reason the JIT did not take it.
    Interpreter(String),
    /// Not run (`--timing-only`).
    None,
}

/// One kernel of the run.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    pub name: String,
    pub engine: Engine,
    pub class: CoreClass,
    pub tasks: u64,
}

/// Everything a run produced.
#[derive(Debug)]
pub struct SimRun {
    /// The schedule that ran (`None`: a lone workload).
    pub schedule: Option<String>,
    pub workload: String,
    /// Final contents of every global tensor, in [`Program::tensors`] order. An input that no
    /// expectation compares keeps what it started with and is not read back (its shape, no
    /// elements), nor is a local tensor; timing-only: data only for the tensors the
    /// orchestration read, the others have their shapes and no elements.
    pub tensors: Vec<HostTensor>,
    /// What the orchestration generated; its per-task list only with [`Options::record`].
    pub outcome: ExecOutcome,
    pub stats: rt::Stats,
    pub expects: Vec<ExpectReport>,
    pub kernels: Vec<KernelInfo>,
    /// Chrome trace JSON and Graphviz task graph (with [`Options::record`]).
    pub trace: Option<String>,
    pub graph: Option<String>,
    /// How the orchestration ran: [`Engine::Jit`] (compiled by [`wsp_jit::orch`]) or the
    /// reference workload interpreter, with the reason.
    pub orchestration: Engine,
    /// Time spent compiling kernels.
    pub compile_time: Duration,
    /// Time spent compiling the orchestration.
    pub orch_compile_time: Duration,
    /// Wall time of the run proper (orchestration, kernels, clock).
    pub run_time: Duration,
    /// How the model adapted the schedule (e.g. a `round_robin(n)` wider than a core class).
    pub notes: Vec<String>,
}

impl SimRun {
    /// True when every expectation holds.
    pub fn passed(&self) -> bool {
        self.expects.iter().all(|e| e.failure.is_none())
    }
}

/// The runtime policies of a schedule, the key expressions of its tasks and its placements
/// (`.spatial_map`, `.layout`).
fn policies(p: &Program, s: Option<&Schedule>) -> Result<(Policies, Keys, Placement), String> {
    let r = wsp_ir::schedule::resolve(p, s)?;
    let mut pol = Policies::default();
    for (form, args) in &r.forms {
        pol.apply(form, args)?;
    }
    Ok((
        pol,
        r.keys,
        Placement {
            spatial: r.spatial,
            shards: r.shards,
        },
    ))
}

/// Where a schedule places tasks: its spatial map, and the shards of its tensors (each task
/// that touches one runs on the shard's owner, core `shard mod count` of its class).
#[derive(Default)]
struct Placement {
    spatial: Option<Spatial>,
    shards: Vec<Shard>,
}

/// A sharded tensor as the run places tasks by it: its name, the dimension, the shard size.
struct Sharded {
    name: String,
    dim: usize,
    size: i64,
}

/// E0817: a spatial grid larger than the cores of a class the program's kernels run on.
fn grid_fits(p: &Program, s: &Spatial, ids: &[rt::KernelId], r: &Runtime) -> Result<(), SimError> {
    for (k, id) in p.kernels.iter().zip(ids) {
        let cores = r.kernel_cores(*id);
        if s.cores() > u64::from(cores) {
            return Err(SimError::Setup {
                code: codes::E0817,
                message: format!(
                    "`.spatial_map(grid: ({}, {}), ...)` names {} cores of each class, but kernel `{}` runs on a class with {cores} cores on {}",
                    s.rows,
                    s.cols,
                    s.cores(),
                    k.name,
                    r.config().arch.name
                ),
                at: None,
            });
        }
    }
    Ok(())
}

/// The shards of `.layout`s per program tensor, checked against the tensors' shapes (E0814 for
/// a dimension the tensor lacks or a size that does not divide, known only now for shapes
/// over parameters).
fn sharded(
    p: &Program,
    shards: &[Shard],
    tensors: &[HostTensor],
) -> Result<Vec<Option<Sharded>>, SimError> {
    let mut out: Vec<Option<Sharded>> = (0..p.tensors.len()).map(|_| None).collect();
    for sh in shards {
        let i = sh.tensor.index();
        let (Some(decl), Some(t)) = (p.tensors.get(i), tensors.get(i)) else {
            return Err(schedule_error(format!("`.layout` of unknown tensor #{i}")));
        };
        let dim = sh.dim as usize;
        let Some(&size) = t.shape.get(dim) else {
            return Err(schedule_error(format!(
                "`.layout({}, shard(dim: {dim}, ...))`: `{}` has {} dimension(s)",
                decl.name,
                decl.name,
                t.shape.len()
            )));
        };
        let parts = sh.parts as usize;
        if parts == 0 || size % parts != 0 || size == 0 {
            return Err(schedule_error(format!(
                "`.layout({}, shard(dim: {dim}, parts: {parts}))`: dimension {dim} of `{}` has {size} indices, which do not split into {parts} equal shards",
                decl.name, decl.name
            )));
        }
        if let Some(o) = out.get_mut(i) {
            *o = Some(Sharded {
                name: decl.name.clone(),
                dim,
                size: (size / parts) as i64,
            });
        }
    }
    Ok(out)
}

fn has_matmul(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Op { op, .. } => matches!(op, Op::Matmul { .. }),
        Stmt::For { body, .. } | Stmt::Section { body, .. } => has_matmul(body),
        _ => false,
    })
}

/// The core class of a kernel: a kernel with a matmul runs on the matmul (cube) cores.
pub fn kernel_class(k: &Kernel) -> CoreClass {
    if k.body.as_deref().is_some_and(has_matmul) {
        CoreClass::Cube
    } else {
        CoreClass::Vector
    }
}

// ------------------------------------------------------------------- kernel adapters

/// How a tile parameter of a task maps onto its region argument: scalars passed to the
/// kernel hold, per parameter in order, `[row_dim, col_dim]` (−1 for none) for a tile and
/// the value for a scalar (f64 bits for floats, the integer otherwise).
struct TileArg<'a> {
    raw: &'a rt::RawArg,
    origin: usize,
    row_stride: usize,
    col_stride: usize,
    rows: usize,
    cols: usize,
}

fn tile_args<'a>(k: &Kernel, task: &'a RawTask) -> Result<(Vec<TileArg<'a>>, Vec<i64>), String> {
    // SAFETY: the runtime passes `nargs` valid arguments and `nscalars` scalars.
    let raws = unsafe { std::slice::from_raw_parts(task.args, task.nargs as usize) };
    let scalars = unsafe { std::slice::from_raw_parts(task.scalars, task.nscalars as usize) };
    let mut tiles = Vec::new();
    let mut vals = Vec::new();
    let mut si = 0;
    let mut ri = 0;
    for p in &k.params {
        match p.kind {
            ParamKind::Tile { .. } => {
                let raw = raws.get(ri).ok_or("missing region argument")?;
                ri += 1;
                let (rd, cd) = (
                    *scalars.get(si).ok_or("missing tile layout")?,
                    *scalars.get(si + 1).ok_or("missing tile layout")?,
                );
                si += 2;
                let rank = raw.rank as usize;
                let mut ts = [0usize; rt::MAX_RANK];
                let mut acc = 1usize;
                for d in (0..rank).rev() {
                    ts[d] = acc;
                    acc *= raw.dims[d] as usize;
                }
                let origin = (0..rank).map(|d| raw.offsets[d] as usize * ts[d]).sum();
                let dim = |x: i64| usize::try_from(x).ok().filter(|d| *d < rank);
                let (rdim, cdim) = (dim(rd), dim(cd));
                tiles.push(TileArg {
                    raw,
                    origin,
                    row_stride: rdim.map(|d| ts[d]).unwrap_or(0),
                    col_stride: cdim.map(|d| ts[d]).unwrap_or(0),
                    rows: rdim.map(|d| raw.extents[d] as usize).unwrap_or(1),
                    cols: cdim.map(|d| raw.extents[d] as usize).unwrap_or(1),
                });
            }
            ParamKind::Scalar { .. } => {
                vals.push(*scalars.get(si).ok_or("missing scalar argument")?);
                si += 1;
            }
        }
    }
    Ok((tiles, vals))
}

fn scalar_of(dtype: DType, bits: i64) -> ScalarValue {
    if dtype.is_float() {
        ScalarValue::Float(f64::from_bits(bits as u64))
    } else if dtype == DType::Bool {
        ScalarValue::Bool(bits != 0)
    } else {
        ScalarValue::Int(bits)
    }
}

/// A kernel run by the reference interpreter on the runtime's buffers.
struct Interpreted {
    k: Kernel,
}

impl rt::Kernel for Interpreted {
    fn run(&self, task: &RawTask) -> Result<(), String> {
        let (tiles, vals) = tile_args(&self.k, task)?;
        let mut args = Vec::with_capacity(self.k.params.len());
        let (mut ti, mut vi) = (0, 0);
        for p in &self.k.params {
            match p.kind {
                ParamKind::Tile { tile, .. } => {
                    let a = &tiles[ti];
                    ti += 1;
                    let es = a.raw.elem_size as usize;
                    let mut tl = Tile::zeros(tile);
                    tl.valid = [a.rows as u32, a.cols as u32];
                    for r in 0..a.rows {
                        for c in 0..a.cols {
                            let i = a.origin + r * a.row_stride + c * a.col_stride;
                            // SAFETY: the region lies inside the tensor (the runtime validated
                            // it) and element `i` is inside the region.
                            let b =
                                unsafe { std::slice::from_raw_parts(a.raw.base.add(i * es), es) };
                            tl.set(r, c, decode_el(tile.dtype, b, false));
                        }
                    }
                    args.push(KernelArg::Tile(tl));
                }
                ParamKind::Scalar { dtype, .. } => {
                    args.push(KernelArg::Scalar(scalar_of(dtype, vals[vi])));
                    vi += 1;
                }
            }
        }
        run_kernel(&self.k, &mut args).map_err(|e| e.message)?;
        let mut ti = 0;
        let mut buf = Vec::new();
        for (p, arg) in self.k.params.iter().zip(&args) {
            let (ParamKind::Tile { tile, dir, .. }, KernelArg::Tile(tl)) = (&p.kind, arg) else {
                continue;
            };
            let a = &tiles[ti];
            ti += 1;
            if !dir.writes() {
                continue;
            }
            let es = a.raw.elem_size as usize;
            for r in 0..a.rows {
                for c in 0..a.cols {
                    let i = a.origin + r * a.row_stride + c * a.col_stride;
                    buf.clear();
                    encode_el(tl.get(r, c), tile.dtype, &mut buf, false);
                    // SAFETY: as above; the parameter writes, so the region is `out`/`inout`
                    // and no other running task touches it.
                    unsafe {
                        std::ptr::copy_nonoverlapping(buf.as_ptr(), a.raw.base.add(i * es), es)
                    };
                }
            }
        }
        Ok(())
    }
}

/// A JIT-compiled kernel on the runtime's buffers (the tensors' real bit layouts, which are
/// the JIT's ABI): row-contiguous views are passed in place, others are gathered into a dense
/// copy and written back.
struct Compiled {
    ck: Arc<wsp_jit::CompiledKernel>,
    k: Kernel,
}

impl rt::Kernel for Compiled {
    fn run(&self, task: &RawTask) -> Result<(), String> {
        let (tiles, vals) = tile_args(&self.k, task)?;
        let layout = self.ck.layout();
        let mut block = vec![0u64; layout.arg_slots];
        let mut copies: Vec<(usize, Vec<u8>)> = Vec::new();
        let (mut ti, mut vi) = (0, 0);
        for (i, p) in self.k.params.iter().enumerate() {
            match (&p.kind, layout.params.get(i)) {
                (ParamKind::Tile { tile, .. }, Some(wsp_jit::abi::ParamSlot::Tile(s))) => {
                    let a = &tiles[ti];
                    ti += 1;
                    let es = tile.dtype.size_bytes();
                    if a.raw.elem_size as usize != es {
                        return Err(format!(
                            "argument `{}`: {}-byte tensor elements for a {} tile",
                            p.name, a.raw.elem_size, tile.dtype
                        ));
                    }
                    if a.col_stride <= 1 {
                        // SAFETY: `origin` is inside the tensor buffer.
                        let ptr = unsafe { a.raw.base.add(a.origin * es) };
                        block[*s] = ptr as u64;
                        block[s + 1] = a.row_stride as u64;
                    } else {
                        let mut v = vec![0u8; a.rows * a.cols * es];
                        for r in 0..a.rows {
                            for c in 0..a.cols {
                                let e = a.origin + r * a.row_stride + c * a.col_stride;
                                let d = (r * a.cols + c) * es;
                                // SAFETY: element `e` is inside the region.
                                unsafe {
                                    std::ptr::copy_nonoverlapping(
                                        a.raw.base.add(e * es),
                                        v[d..d + es].as_mut_ptr(),
                                        es,
                                    )
                                };
                            }
                        }
                        block[*s] = v.as_ptr() as u64;
                        block[s + 1] = a.cols as u64;
                        copies.push((ti - 1, v));
                    }
                    block[s + 2] = a.rows as u64;
                    block[s + 3] = a.cols as u64;
                }
                (ParamKind::Scalar { dtype, .. }, Some(wsp_jit::abi::ParamSlot::Scalar(s))) => {
                    block[*s] = wsp_jit::abi::scalar_slot(*dtype, scalar_of(*dtype, vals[vi]));
                    vi += 1;
                }
                _ => return Err("argument layout mismatch".into()),
            }
        }
        let mut scratch = self.ck.new_scratch();
        // SAFETY: every tile pointer addresses `rows` rows of `cols` valid elements of the
        // parameter's dtype at the given row stride, inside a live tensor buffer or a dense
        // copy; the kernel checks the extents against its static shapes before any access.
        unsafe { self.ck.call_raw(&block, &mut scratch) }.map_err(|e| e.message)?;
        let mut ti = 0;
        for p in &self.k.params {
            let ParamKind::Tile { dir, tile, .. } = p.kind else {
                continue;
            };
            let this = ti;
            ti += 1;
            if !dir.writes() {
                continue;
            }
            if let Some((_, v)) = copies.iter().find(|(i, _)| *i == this) {
                let a = &tiles[this];
                let es = tile.dtype.size_bytes();
                for r in 0..a.rows {
                    for c in 0..a.cols {
                        let e = a.origin + r * a.row_stride + c * a.col_stride;
                        let d = (r * a.cols + c) * es;
                        // SAFETY: element `e` is inside the written region.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                v[d..d + es].as_ptr(),
                                a.raw.base.add(e * es),
                                es,
                            )
                        };
                    }
                }
            }
        }
        Ok(())
    }
}

// ------------------------------------------------------------------- the backend

/// Everything needed to turn a generated task into a runtime submission.
struct Submitter<'p> {
    p: &'p Program,
    ids: Vec<rt::KernelId>,
    keys: Keys,
    arch: Arch,
    costs: HashMap<(u32, cost::Extents), u64>,
    /// Per kernel, the extents and cost of its last task (its tasks mostly share them).
    last_cost: Vec<Option<(cost::Extents, u64)>>,
    execute: bool,
    /// Per tensor: a task writes it.
    written: Vec<bool>,
    /// The task being submitted (its buffers are reused).
    pr: Prepared,
    /// Its extents per argument, reused.
    extents: cost::Extents,
    counts: Vec<u64>,
    /// Runtime tensor of rank 1 standing in for a rank-0 program tensor.
    scalar_tensor: Vec<bool>,
    /// Runtime channel of each program channel.
    channels: Vec<rt::ChannelId>,
    submitted: u64,
    progress: Option<fn(u64, u64, Option<u64>)>,
    /// The run's task count, when known before it runs (for `progress`).
    expected: Option<u64>,
    /// Keep the per-task records of [`SimRun::outcome`] ([`Options::record`]).
    records: bool,
    /// With `records`: the call site of each task submitted, in submission order.
    sites: Vec<Option<wsp_ir::workload::SrcSpan>>,
    /// Timing-only: how to fill a tensor of [`data::declare_tensors`] that the orchestration
    /// reads (parameters, base directory, `--input` files).
    deferred: Option<Sources>,
    /// The runtime tensor of each local tensor whose block is running (program tensor,
    /// instance): tasks that name the program tensor use the instance.
    locals: Vec<(u32, rt::TensorId)>,
    /// `.spatial_map`: the grid and its keys.
    spatial: Option<Spatial>,
    /// Per program tensor, its shards (`.layout`); empty when no tensor is sharded.
    shards: Vec<Option<Sharded>>,
    /// Per kernel: the cores of the class it runs on.
    kernel_cores: Vec<u32>,
}

/// What makes a program's tensors: its parameters, base directory and `--input` files.
type Sources = (Vec<ScalarValue>, PathBuf, Vec<(String, PathBuf)>);

/// A task ready to submit.
struct Prepared {
    kernel: rt::KernelId,
    args: Vec<rt::Arg>,
    scalars: Vec<i64>,
    cycles: u64,
    /// The dispatch, priority and stream keys.
    keys: [i64; 3],
    /// The core a placement fixes (`.spatial_map`, a shard's owner).
    place: Option<u32>,
}

impl Default for Prepared {
    fn default() -> Self {
        Prepared {
            kernel: rt::KernelId(0),
            args: Vec::new(),
            scalars: Vec::new(),
            cycles: 0,
            keys: [0; 3],
            place: None,
        }
    }
}

impl Prepared {
    fn desc<'a>(&'a self, coords: &'a [i64]) -> rt::TaskDesc<'a> {
        rt::TaskDesc {
            kernel: self.kernel,
            coords,
            args: &self.args,
            scalars: &self.scalars,
            cycles: self.cycles,
            key: self.keys[0],
            priority: self.keys[1],
            stream: self.keys[2],
            place: self.place,
        }
    }
}

/// A refused submission: the task's own fault (a bad region) is reported at the task; the
/// run stopping meanwhile (another task's kernel failed, a deadlock, a limit) is not.
fn submit_error(e: RuntimeError) -> exec::TaskError {
    match e {
        e @ RuntimeError::Api(_) => exec::TaskError::Task(e.to_string()),
        // A limit reached while this task was submitted: the run stops at its call.
        e @ (RuntimeError::WindowFull { .. } | RuntimeError::Limit(_)) => {
            exec::TaskError::Stopped(run_error(e))
        }
        other => exec::TaskError::Run(run_error(other)),
    }
}

/// A runtime error that stopped the run, for the orchestration to pass on: a deadlock
/// (E0811), a limit (E0815), a full abort window (E0816), anything else (E0810).
fn run_error(e: RuntimeError) -> exec::ExecError {
    match e {
        RuntimeError::Deadlock(r) => exec::ExecError::new(codes::E0811, r.to_string()),
        RuntimeError::Limit(l) => exec::ExecError::new(codes::E0815, limit_message(l)),
        e @ RuntimeError::WindowFull { .. } => exec::ExecError::new(codes::E0816, e.to_string()),
        other => exec::ExecError::new(codes::E0810, other.to_string()),
    }
}

impl Submitter<'_> {
    /// Prepares task `t` in `self.pr`.
    fn prepare(&mut self, t: &TaskInstance<'_>) -> Result<(), exec::TaskError> {
        let kid = t.kernel.index();
        let mut extents = std::mem::take(&mut self.extents);
        extents.clear();
        extents.extend(t.args.iter().map(|a| match a {
            TaskValue::Tile(v) => Some(v.valid),
            TaskValue::Scalar(_) => None,
        }));
        let memo = self.last_cost.get(kid).and_then(|m| m.as_ref());
        let cycles = match memo {
            Some((e, c)) if *e == extents => *c,
            _ => {
                let c = match self.costs.get(&(t.kernel.0, extents.clone())) {
                    Some(c) => *c,
                    None => {
                        let c = cost::task_cost(&self.arch, t.ir, &extents)?.compute;
                        self.costs.insert((t.kernel.0, extents.clone()), c);
                        c
                    }
                };
                if let Some(m) = self.last_cost.get_mut(kid) {
                    *m = Some((extents.clone(), c));
                }
                c
            }
        };
        self.extents = extents;
        let pr = &mut self.pr;
        pr.args.clear();
        pr.scalars.clear();
        for (param, a) in t.ir.params.iter().zip(t.args) {
            match (a, &param.kind) {
                (TaskValue::Tile(v), ParamKind::Tile { dir, .. }) => {
                    let tid = v.tensor.index();
                    let dir = match dir {
                        wsp_ir::kernel::Direction::In => rt::Direction::In,
                        wsp_ir::kernel::Direction::Out => rt::Direction::Out,
                        wsp_ir::kernel::Direction::InOut => rt::Direction::InOut,
                    };
                    if dir.writes() {
                        if self.written.len() <= tid {
                            self.written.resize(tid + 1, false);
                        }
                        self.written[tid] = true;
                    }
                    let tensor = match self.locals.iter().rev().find(|l| l.0 == v.tensor.0) {
                        Some(l) => l.1,
                        None => rt::TensorId(v.tensor.0),
                    };
                    let scalar = self.scalar_tensor.get(tid).copied().unwrap_or(false);
                    if !scalar && (v.dims.is_empty() || v.dims.len() > rt::MAX_RANK) {
                        // Refused by `dense`, with the view's rank.
                        let offs: Vec<i64> = v.dims.iter().map(|d| d.0).collect();
                        let exts: Vec<i64> = v.dims.iter().map(|d| d.1.max(1)).collect();
                        let region = rt::Region::dense(tensor, &offs, &exts).map_err(|e| e.0)?;
                        pr.args.push(rt::Arg { region, dir });
                    } else {
                        // Written in place (a region is 200 bytes, and building one to move
                        // it cost two copies): the runtime checks every region it is given,
                        // and a resolved view's offsets are ≥ 0 and its extents ≥ 1.
                        let n = if scalar { 1 } else { v.dims.len() };
                        pr.args.push(rt::Arg {
                            region: rt::Region {
                                tensor,
                                rank: n as u8,
                                offsets: [0; rt::MAX_RANK],
                                extents: [1; rt::MAX_RANK],
                                strides: [1; rt::MAX_RANK],
                            },
                            dir,
                        });
                        if let (false, Some(a)) = (scalar, pr.args.last_mut()) {
                            for (d, x) in v.dims.iter().enumerate() {
                                (a.region.offsets[d], a.region.extents[d]) = (x.0, x.1.max(1));
                            }
                        }
                    }
                    let d = |x: Option<usize>| x.map(|x| x as i64).unwrap_or(-1);
                    pr.scalars.push(d(v.row_dim));
                    pr.scalars.push(d(v.col_dim));
                }
                (TaskValue::Scalar(s), _) => pr.scalars.push(match s {
                    ScalarValue::Float(f) => f.to_bits() as i64,
                    ScalarValue::Int(i) => *i,
                    ScalarValue::UInt(u) => *u as i64,
                    ScalarValue::Bool(b) => i64::from(*b),
                }),
                _ => return Err(format!("argument `{}` is of the wrong kind", param.name).into()),
            }
        }
        let k = &self.keys;
        pr.keys = [
            Keys::eval(&k.dispatch, t.axes)?,
            Keys::eval(&k.priority, t.axes)?,
            Keys::eval(&k.stream, t.axes)?,
        ];
        let place = if self.spatial.is_some() || !self.shards.is_empty() {
            self.place(t)?
        } else {
            None
        };
        let pr = &mut self.pr;
        pr.place = place;
        pr.kernel = *self
            .ids
            .get(kid)
            .ok_or_else(|| format!("kernel #{kid} is not registered"))?;
        pr.cycles = cycles;
        if let Some(c) = self.counts.get_mut(kid) {
            *c += 1;
        }
        Ok(())
    }

    /// The core task `t`'s placements fix: its spatial map's cell, or the owner of the shards
    /// it touches (E0818 for a view across shards, E0819 for two placements that differ).
    fn place(&self, t: &TaskInstance<'_>) -> Result<Option<u32>, exec::TaskError> {
        let cores = self
            .kernel_cores
            .get(t.kernel.index())
            .copied()
            .unwrap_or(0);
        if cores == 0 {
            return Ok(None);
        }
        let stop = |code, m: String| exec::TaskError::Stopped(exec::ExecError::new(code, m));
        // (core, tensor, shard) of the first sharded view.
        let mut owner: Option<(u32, &str, i64)> = None;
        for a in t.args {
            let TaskValue::Tile(v) = a else { continue };
            let Some(Some(sh)) = self.shards.get(v.tensor.index()) else {
                continue;
            };
            let (off, ext) = v.dims.get(sh.dim).copied().unwrap_or((0, 1));
            let (first, last) = (off, off.saturating_add(ext.max(1) - 1));
            let (fs, ls) = (first.div_euclid(sh.size), last.div_euclid(sh.size));
            if fs != ls {
                return Err(stop(
                    codes::E0818,
                    format!(
                        "its view of `{}` covers indices {first}..={last} of dimension {}, across shards {fs} and {ls} (shards of {} indices, from `.layout`)",
                        sh.name, sh.dim, sh.size
                    ),
                ));
            }
            let core = fs.rem_euclid(i64::from(cores)) as u32;
            match owner {
                Some((c, name, s)) if c != core => {
                    return Err(stop(
                        codes::E0819,
                        format!(
                            "it touches shard {s} of `{name}`, owned by core {c}, and shard {fs} of `{}`, owned by core {core}: a task runs on one core",
                            sh.name
                        ),
                    ))
                }
                Some(_) => {}
                None => owner = Some((core, &sh.name, fs)),
            }
        }
        let Some(sp) = &self.spatial else {
            return Ok(owner.map(|o| o.0));
        };
        let cell = sp.core(t.axes)?;
        let cell = u32::try_from(cell).map_err(|_| format!("grid cell {cell} is out of range"))?;
        match owner {
            Some((c, name, s)) if c != cell => Err(stop(
                codes::E0819,
                format!(
                    "`.spatial_map` places it on core {cell}, but it touches shard {s} of `{name}`, owned by core {c}: a task runs on one core"
                ),
            )),
            _ => Ok(Some(cell)),
        }
    }

    fn submitted(&mut self, r: &Runtime, at: Option<&wsp_ir::workload::SrcSpan>) {
        self.submitted += 1;
        if self.records {
            self.sites.push(at.cloned());
        }
        if let Some(f) = self.progress {
            if self.submitted.is_multiple_of(PROGRESS_EVERY) {
                f(self.submitted, r.total_cycles(), self.expected);
            }
        }
    }

    /// Fills a declared-only tensor (timing-only) that the orchestration is about to read.
    fn materialise(&self, tensor: TensorId, tensors: &mut [HostTensor]) -> Result<(), String> {
        let (Some((params, base, inputs)), Some(t)) = (&self.deferred, tensors.get(tensor.index()))
        else {
            return Ok(());
        };
        if t.data.len() == t.shape.iter().product::<usize>() {
            return Ok(());
        }
        let m = data::materialise_tensor(self.p, params, base, inputs, tensor.index()).map_err(
            |e| {
                format!(
                    "the orchestration reads data that cannot be made: {} ({})",
                    e.message, e.code
                )
            },
        )?;
        tensors[tensor.index()] = m;
        Ok(())
    }

    fn sync(
        &self,
        r: &mut Runtime,
        tensor: TensorId,
        tensors: &mut [HostTensor],
    ) -> Result<(), String> {
        if !self.written.get(tensor.index()).copied().unwrap_or(false) {
            if !self.execute {
                return self.materialise(tensor, tensors);
            }
            // Its host values went once the runtime had its buffer: read them back (no task
            // writes it, so nothing to wait for).
            let made = tensors
                .get(tensor.index())
                .is_some_and(|t| t.len() == t.shape.iter().product::<usize>());
            return if made {
                Ok(())
            } else {
                read_back(r, tensor.index(), tensors)
            };
        }
        let name = self
            .p
            .tensors
            .get(tensor.index())
            .map(|t| t.name.as_str())
            .unwrap_or("?");
        if !self.execute {
            return Err(format!(
                "the orchestration reads `{name}`, which tasks write; --timing-only cannot run a program whose control flow depends on computed data"
            ));
        }
        r.wait_tensor(rt::TensorId(tensor.0))
            .map_err(|e| e.to_string())?;
        read_back(r, tensor.index(), tensors)
    }
}

/// The main orchestration's backend.
struct RtBackend<'p> {
    rt: Runtime,
    s: Submitter<'p>,
    /// The compiled orchestration, whose process bodies a `connect` steps (`None`: the
    /// interpreter's).
    orch: Option<&'p wsp_jit::CompiledOrch<'p>>,
}

/// A process instance the runtime steps: the interpreter's or the compiled one.
trait Stepper {
    fn name(&self) -> &str;
    fn produces(&self) -> &[wsp_ir::workload::ChannelId];
    fn step(
        &mut self,
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
        backend: &mut dyn TaskBackend,
        received: Option<Option<Vec<i64>>>,
        tasks: &mut Vec<exec::TaskRecord>,
    ) -> Result<exec::ProcAction, exec::ExecError>;
}

struct Interp<'p> {
    p: &'p Program,
    th: exec::ProcThread<'p>,
}

impl Stepper for Interp<'_> {
    fn name(&self) -> &str {
        self.th.name()
    }
    fn produces(&self) -> &[wsp_ir::workload::ChannelId] {
        &self.th.produces
    }
    fn step(
        &mut self,
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
        backend: &mut dyn TaskBackend,
        received: Option<Option<Vec<i64>>>,
        tasks: &mut Vec<exec::TaskRecord>,
    ) -> Result<exec::ProcAction, exec::ExecError> {
        self.th
            .step(self.p, params, tensors, backend, received, tasks)
    }
}

impl Stepper for wsp_jit::CompiledProc<'_> {
    fn name(&self) -> &str {
        wsp_jit::CompiledProc::name(self)
    }
    fn produces(&self) -> &[wsp_ir::workload::ChannelId] {
        &self.produces
    }
    fn step(
        &mut self,
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
        backend: &mut dyn TaskBackend,
        received: Option<Option<Vec<i64>>>,
        tasks: &mut Vec<exec::TaskRecord>,
    ) -> Result<exec::ProcAction, exec::ExecError> {
        wsp_jit::CompiledProc::step(self, params, tensors, backend, received, tasks)
    }
}

/// DOT attributes linking a task's node to its call site: `URL="wsp-site:START:END:FILE"`
/// (byte offsets into FILE, as `wsp` names it), which editors open on a click.
fn site_attrs(at: &wsp_ir::workload::SrcSpan) -> String {
    let q = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "URL=\"wsp-site:{}:{}:{}\", tooltip=\"{}\"",
        at.start,
        at.end,
        q(&at.file),
        q(&format!("the task call in {}", at.file))
    )
}

impl TaskBackend for RtBackend<'_> {
    fn keeps_records(&self) -> bool {
        self.s.records
    }
    fn task(&mut self, t: &TaskInstance<'_>, _: &mut [HostTensor]) -> Result<(), exec::TaskError> {
        self.s.prepare(t)?;
        self.rt
            .submit(&self.s.pr.desc(t.coords))
            .map_err(submit_error)?;
        self.s.submitted(&self.rt, t.at);
        Ok(())
    }

    fn sync(&mut self, tensor: TensorId, tensors: &mut [HostTensor]) -> Result<(), String> {
        self.s.sync(&mut self.rt, tensor, tensors)
    }

    fn barrier(&mut self, _: &mut [HostTensor]) -> Result<(), String> {
        self.rt.wait_all().map_err(|e| e.to_string())
    }

    /// A fresh instance of the local tensor from the runtime's heap arena (zeroed), for the
    /// tasks of its block; a full arena stalls here, one too small stops the run (E0811).
    fn local_begin(&mut self, tensor: TensorId, _: &mut [HostTensor]) -> Result<(), String> {
        let decl = self
            .s
            .p
            .tensors
            .get(tensor.index())
            .ok_or_else(|| format!("tensor #{} does not exist", tensor.0))?;
        let dims: Vec<i64> = decl.shape.iter().map(|a| a.constant).collect();
        self.rt.alloc_scope_begin();
        let id = self
            .rt
            .alloc_tensor(decl.dtype.size_bytes() as u64, &dims)
            .map_err(|e| format!("local tensor `{}`: {e}", decl.name))?;
        self.s.locals.push((tensor.0, id));
        Ok(())
    }

    /// The instance takes no more tasks; the arena gets it back once they have retired.
    fn local_end(&mut self, tensor: TensorId) -> Result<(), String> {
        match self.s.locals.pop() {
            Some((t, _)) if t == tensor.0 => self.rt.scope_end().map_err(|e| e.to_string()),
            _ => Err(format!("local tensor #{} ends out of order", tensor.0)),
        }
    }

    fn order(&mut self, event: exec::OrderEvent) -> Result<(), String> {
        match event {
            exec::OrderEvent::Begin { seq: true } => self.rt.order_begin(rt::Order::Seq),
            exec::OrderEvent::Begin { seq: false } => self.rt.order_begin(rt::Order::Par),
            exec::OrderEvent::Step => self.rt.order_step(),
            exec::OrderEvent::End => return self.rt.order_end().map_err(|e| e.to_string()),
        }
        Ok(())
    }

    /// Runs the processes of a `connect` as runtime processes: each steps its interpreter
    /// thread, submits its tasks from its own process (its own `pto_wsp_v9` clock), and sends
    /// and receives on runtime channels (depth, closing, deadlock reports are the runtime's).
    fn connect(
        &mut self,
        program: &Program,
        _workload: &str,
        items: &[wsp_ir::workload::ConnectItem],
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
    ) -> Option<Result<Vec<exec::TaskRecord>, exec::ExecError>> {
        let threads: Result<Vec<Box<dyn Stepper + '_>>, exec::ExecError> = match self.orch {
            Some(o) => o.connect_threads(items).map(|ts| {
                ts.into_iter()
                    .map(|t| Box::new(t) as Box<dyn Stepper + '_>)
                    .collect()
            }),
            None => exec::connect_threads(program, items).map(|ts| {
                ts.into_iter()
                    .map(|th| Box::new(Interp { p: program, th }) as Box<dyn Stepper + '_>)
                    .collect()
            }),
        };
        let threads = match threads {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        let RtBackend { rt, s, .. } = self;
        let channels = s.channels.clone();
        let shared = RefCell::new((s, tensors, Vec::new()));
        // A step's error with its place (a limit reached at a task's submission): the runtime
        // passes step errors on as text.
        let located: RefCell<Option<exec::ExecError>> = RefCell::new(None);
        let mut specs = Vec::new();
        for mut th in threads {
            let name = th.name().to_string();
            let mut produces = Vec::new();
            for c in th.produces() {
                match channels.get(c.index()) {
                    Some(id) => produces.push(*id),
                    None => {
                        return Some(Err(exec::ExecError::new(
                            codes::E0810,
                            format!("process `{name}` produces an unknown channel"),
                        )))
                    }
                }
            }
            let sh = &shared;
            let at = &located;
            let chans = &channels;
            let body = move |cx: &mut ProcCx<'_>| -> Result<rt::Step, String> {
                let received = cx.received().map(|r| match r {
                    rt::Received::Token(t) => Some(t.values().to_vec()),
                    rt::Received::Closed => None,
                });
                let mut g = sh.borrow_mut();
                let (s, tensors, tasks) = &mut *g;
                let mut pb = ProcBackend { cx, s, last: None };
                let action = th
                    .step(params, tensors, &mut pb, received, tasks)
                    .map_err(|e| {
                        let m = e.message.clone();
                        if e.at.is_some() {
                            *at.borrow_mut() = Some(e);
                        }
                        m
                    })?;
                let ch = |c: wsp_ir::workload::ChannelId| {
                    chans
                        .get(c.index())
                        .copied()
                        .ok_or_else(|| format!("unknown channel #{}", c.0))
                };
                Ok(match action {
                    exec::ProcAction::Continue => rt::Step::Continue,
                    exec::ProcAction::Finished => rt::Step::Finished,
                    exec::ProcAction::Recv { channel } => rt::Step::Recv { ch: ch(channel)? },
                    exec::ProcAction::Send {
                        channel,
                        token,
                        after_task,
                    } => {
                        if token.len() > rt::MAX_RANK {
                            return Err(format!(
                                "a token of {} values (at most {})",
                                token.len(),
                                rt::MAX_RANK
                            ));
                        }
                        rt::Step::Send {
                            ch: ch(channel)?,
                            token: rt::Token::new(&token),
                            after: if after_task { pb.last } else { None },
                        }
                    }
                })
            };
            specs.push(rt::ProcSpec {
                name,
                body: Box::new(body),
                produces,
            });
        }
        let r = rt.run_processes(specs);
        let (_, _, tasks) = shared.into_inner();
        let located = located.into_inner();
        Some(r.map(|()| tasks).map_err(|e| match (e, located) {
            // A step's own error (a limit reached at a task's submission, a view out of
            // range): as the step reported it, at its task's call.
            (RuntimeError::Process { .. }, Some(x)) => x,
            (e, _) => run_error(e),
        }))
    }
}

/// The backend of one process step: submits through the process's context.
struct ProcBackend<'c, 'r, 's, 'p> {
    cx: &'c mut ProcCx<'r>,
    s: &'s mut Submitter<'p>,
    /// The task this step submitted (a token sent with it waits for it).
    last: Option<rt::TaskId>,
}

impl TaskBackend for ProcBackend<'_, '_, '_, '_> {
    fn keeps_records(&self) -> bool {
        self.s.records
    }
    fn task(&mut self, t: &TaskInstance<'_>, _: &mut [HostTensor]) -> Result<(), exec::TaskError> {
        self.s.prepare(t)?;
        let id = self
            .cx
            .submit(&self.s.pr.desc(t.coords))
            .map_err(submit_error)?;
        self.last = Some(id);
        self.s.submitted(self.cx.runtime(), t.at);
        Ok(())
    }

    fn sync(&mut self, tensor: TensorId, tensors: &mut [HostTensor]) -> Result<(), String> {
        self.s.sync(self.cx.runtime(), tensor, tensors)
    }

    fn barrier(&mut self, _: &mut [HostTensor]) -> Result<(), String> {
        self.cx.runtime().wait_all().map_err(|e| e.to_string())
    }

    fn connect(
        &mut self,
        _: &Program,
        workload: &str,
        _: &[wsp_ir::workload::ConnectItem],
        _: &[ScalarValue],
        _: &mut [HostTensor],
    ) -> Option<Result<Vec<exec::TaskRecord>, exec::ExecError>> {
        Some(Err(exec::ExecError::new(
            codes::E0810,
            format!(
                "a process runs `{workload}`, a `connect`; pipelines do not nest inside processes"
            ),
        )))
    }
}

fn read_back(r: &mut Runtime, i: usize, tensors: &mut [HostTensor]) -> Result<(), String> {
    let bytes = r
        .tensor_bytes(rt::TensorId(i as u32))
        .ok_or("the runtime lost a tensor")?;
    set_from_bytes(tensors, i, bytes)
}

/// [`read_back`] at the end of a run, moving the bytes out of the runtime: a tensor is never
/// held twice while the results are read.
fn take_back(r: &mut Runtime, i: usize, tensors: &mut [HostTensor]) -> Result<(), String> {
    let bytes = r
        .take_tensor_bytes(rt::TensorId(i as u32))
        .ok_or("the runtime lost a tensor")?;
    set_from_bytes(tensors, i, &bytes)
}

/// Host tensor `i`'s values from the runtime's bytes of it.
fn set_from_bytes(tensors: &mut [HostTensor], i: usize, bytes: &[u8]) -> Result<(), String> {
    let t = tensors.get_mut(i).ok_or("bad tensor")?;
    let n = t.shape.iter().product();
    t.data = Data::from_bytes(t.dtype, bytes, n, false).ok_or("short tensor buffer")?;
    Ok(())
}

/// Runs `program` on the runtime. Expectations are checked (failures are in
/// [`SimRun::expects`], not errors).
pub fn run(program: &Program, jit: &wsp_jit::Jit, opts: &Options) -> Result<SimRun, SimError> {
    run_recorded(program, jit, opts).0
}

/// The Chrome trace and the DOT task graph of a run that failed after it started (with
/// [`Options::record`]): a deadlock's or a failed task's are what one needs most.
#[derive(Clone, Debug, Default)]
pub struct Records {
    pub trace: Option<String>,
    pub graph: Option<String>,
}

impl RtBackend<'_> {
    /// The trace and the graph of workload `w` recorded so far.
    fn records(&self, program: &Program, w: WorkloadId, style: graph::Style) -> Records {
        let sites = &self.s.sites;
        let graph = graph::dot(program, w, &self.rt.task_graph(), sites, style, &|n| {
            let at = sites.get(usize::try_from(n).ok()?)?.as_ref()?;
            Some(site_attrs(at))
        });
        Records {
            trace: Some(self.rt.chrome_trace()),
            graph: Some(graph),
        }
    }
}

/// [`run`], and when the run fails after it started and [`Options::record`] asks for them,
/// its trace and graph up to the failure (empty otherwise).
pub fn run_recorded(
    program: &Program,
    jit: &wsp_jit::Jit,
    opts: &Options,
) -> (Result<SimRun, SimError>, Records) {
    let mut records = Records::default();
    let r = run_inner(program, jit, opts, &mut records);
    if r.is_ok() {
        records = Records::default();
    }
    (r, records)
}

fn run_inner(
    program: &Program,
    jit: &wsp_jit::Jit,
    opts: &Options,
    records: &mut Records,
) -> Result<SimRun, SimError> {
    let data_err = |e: data::DataError| SimError::Setup {
        code: e.code,
        message: e.message,
        at: e.at,
    };
    let params = data::resolve_params(program, &opts.set).map_err(data_err)?;
    // A timing-only run computes no results: its tensors are declared (shapes, checked
    // sources) and only those its orchestration reads get data, when it reads them.
    // The tensors are declared (shapes, checked sources). A timing-only run computes no
    // results: only those its orchestration reads get data, when it reads them. Otherwise
    // each is made when its runtime buffer is, and its host values go at once (the
    // orchestration reads them back when it needs them, and the results are read at the end):
    // the run never holds every tensor twice.
    let mut tensors =
        data::declare_tensors(program, &params, &opts.base_dir, &opts.inputs).map_err(data_err)?;
    if !opts.timing_only {
        data::check_total_memory(program, &params, data::available_memory()).map_err(data_err)?;
    }
    let (sched, w) = program
        .select_run(opts.schedule.as_deref())
        .map_err(schedule_error)?;
    let (pol, keys, placement) = policies(program, sched).map_err(schedule_error)?;
    let mut notes = schedule_notes(program, w, &opts.arch, &pol);
    notes.extend(placement_notes(&placement, &opts.arch));
    let mut cfg = rt::Config::new(opts.arch.clone()).with_window(pol.task_window);
    // One task always fits, whatever the window (language.md: a window slows a run, never
    // deadlocks it).
    let views = program.kernels.iter().map(|k| {
        let tile =
            |p: &&wsp_ir::kernel::Param| matches!(p.kind, wsp_ir::kernel::ParamKind::Tile { .. });
        k.params.iter().filter(tile).count()
    });
    cfg.fit_region_args(views.max().unwrap_or(0));
    cfg.policies = pol;
    cfg.execute = !opts.timing_only;
    cfg.record = opts.record;
    cfg.threads = opts.threads.max(1);
    cfg.max_tasks = opts.max_tasks.unwrap_or(u64::MAX);
    cfg.max_cycles = opts.max_cycles.unwrap_or(rt::MAX_CYCLES);
    // A configuration the runtime refuses is a schedule (or model) it cannot run.
    let mut runtime = Runtime::new(cfg).map_err(|e| match e {
        RuntimeError::Api(m) => schedule_error(m),
        e => from_runtime(program, e),
    })?;

    let t0 = Instant::now();
    let mut kernels = Vec::new();
    let mut ids = Vec::new();
    for k in &program.kernels {
        let class = kernel_class(k);
        let (engine, body): (Engine, Arc<dyn rt::Kernel>) = if opts.timing_only {
            (Engine::None, Arc::new(Interpreted { k: k.clone() }))
        } else {
            let why = opts.interpret.then(|| "--interpret".to_string());
            match why {
                Some(w) => (
                    Engine::Interpreter(w),
                    Arc::new(Interpreted { k: k.clone() }),
                ),
                None => match jit.compile(k) {
                    Ok(ck) => (Engine::Jit, Arc::new(Compiled { ck, k: k.clone() })),
                    Err(e) if e.kind == wsp_jit::JitErrorKind::Unsupported => (
                        Engine::Interpreter(e.message),
                        Arc::new(Interpreted { k: k.clone() }),
                    ),
                    Err(e) => {
                        return Err(SimError::Exec {
                            code: codes::E0810,
                            message: e.to_string(),
                            at: None,
                            place: exec::Place::Task,
                        })
                    }
                },
            }
        };
        ids.push(runtime.register_kernel(&k.name, class, body));
        kernels.push(KernelInfo {
            name: k.name.clone(),
            engine,
            class,
            tasks: 0,
        });
    }
    let compile_time = t0.elapsed();
    if let Some(s) = &placement.spatial {
        grid_fits(program, s, &ids, &runtime)?;
    }
    let shards = if placement.shards.is_empty() {
        Vec::new()
    } else {
        sharded(program, &placement.shards, &tensors)?
    };
    let kernel_cores = ids.iter().map(|id| runtime.kernel_cores(*id)).collect();

    let t2 = Instant::now();
    let (orch, orchestration) = if opts.interpret {
        (None, Engine::Interpreter("--interpret".into()))
    } else if opts.interpret_orchestration {
        (
            None,
            Engine::Interpreter("the interpreted orchestration was requested".into()),
        )
    } else {
        match wsp_jit::compile_orchestration(program, &params, &tensors) {
            Ok(o) => (Some(o), Engine::Jit),
            Err(why) => (None, Engine::Interpreter(why.0)),
        }
    };
    let orch_compile_time = t2.elapsed();
    let t1 = Instant::now();
    let mut scalar_tensor = Vec::new();
    for (i, t) in tensors.iter().enumerate() {
        let es = t.dtype.size_bytes() as u64;
        let dims: Vec<i64> = if t.shape.is_empty() {
            vec![1]
        } else {
            t.shape.iter().map(|d| *d as i64).collect()
        };
        // A local tensor's instances come from the heap arena while its block runs; its
        // program id stands for them and holds one element.
        let local = program.tensors[i].kind == wsp_ir::workload::TensorKind::Local;
        let dims = if local { vec![1] } else { dims };
        let decl = &program.tensors[i];
        // Zeros need no host values: the runtime's buffer starts zeroed.
        let zeros = data::starts_zeroed(decl, &opts.inputs);
        if zeros && !opts.timing_only && !local {
            // Read back at the end as host values: within the limit of host tensors.
            data::check_host(decl, &t.shape).map_err(data_err)?;
        }
        let bytes = if opts.timing_only || local || zeros {
            None
        } else {
            // The host values (within the limit of host tensors), then the runtime's copy.
            let made = data::materialise_tensor(program, &params, &opts.base_dir, &opts.inputs, i)
                .map_err(data_err)?;
            let what = format!("tensor `{}`", program.tensors[i].name);
            let n = t.shape.iter().product::<usize>();
            data::can_allocate(&what, n.saturating_mul(es as usize)).map_err(data_err)?;
            Some(made.data.to_bytes(made.dtype))
        };
        let id = runtime
            .add_tensor_data(es, &dims, bytes)
            .map_err(|e| setup(format!("tensor `{}`: {e}", program.tensors[i].name)))?;
        if id.0 as usize != i {
            return Err(setup("runtime tensor ids are out of step"));
        }
        scalar_tensor.push(t.shape.is_empty());
    }
    let channels = program
        .channels
        .iter()
        .map(|c| runtime.add_channel(&c.name, c.depth, c.latency))
        .collect();
    let mut backend = RtBackend {
        orch: orch.as_ref(),
        rt: runtime,
        s: Submitter {
            p: program,
            ids,
            keys,
            arch: opts.arch.clone(),
            costs: HashMap::new(),
            last_cost: vec![None; program.kernels.len()],
            execute: !opts.timing_only,
            written: Vec::new(),
            pr: Prepared::default(),
            extents: Vec::new(),
            counts: vec![0; program.kernels.len()],
            scalar_tensor,
            channels,
            submitted: 0,
            progress: opts.progress,
            expected: opts
                .progress
                .and_then(|_| wsp_ir::counts::static_task_total(program, w, &params)),
            records: opts.record,
            sites: Vec::new(),
            deferred: opts
                .timing_only
                .then(|| (params.clone(), opts.base_dir.clone(), opts.inputs.clone())),
            locals: Vec::new(),
            spatial: placement.spatial,
            shards,
            kernel_cores,
        },
    };
    let outcome = match &orch {
        Some(o) => o.run_workload_on(w, &params, &mut tensors, &mut backend),
        None => exec::run_workload_on(program, w, &params, &mut tensors, &mut backend),
    };
    if outcome.is_err() && opts.record {
        *records = backend.records(program, w, opts.graph_style);
    }
    let outcome = match outcome {
        Ok(o) => o,
        // A limit or a deadlock that stopped the run reaches here as text when a submission
        // or a process step passed it on; the runtime keeps the limit and the report.
        // A limit reached at a submission keeps that task's call as its place.
        Err(e) if let Some(l) = backend.rt.limit_reached() => {
            return Err(SimError::Exec {
                code: codes::E0815,
                message: limit_message(l),
                at: e.at,
                place: exec::Place::Task,
            })
        }
        // So does a kernel failure, which the submission that found it passed on as text.
        Err(_) if let Some(k) = backend.rt.kernel_failure() => {
            return Err(from_runtime(program, k.clone()))
        }
        // The runtime keeps the report of the deadlock that stopped it, whichever path (a
        // submission, a process step) passed the error on as text.
        Err(e) if e.code == codes::E0811 || backend.rt.deadlock_report().is_some() => {
            let report = backend.rt.deadlock_report().cloned().map(Box::new);
            return Err(SimError::Deadlock(e.message, report));
        }
        Err(e) => {
            return Err(SimError::Exec {
                code: e.code,
                message: e.message,
                at: e.at,
                place: e.place,
            })
        }
    };
    let stats = match backend.rt.finish() {
        Ok(s) => s,
        Err(e) => {
            if opts.record {
                *records = backend.records(program, w, opts.graph_style);
            }
            return Err(from_runtime(program, e));
        }
    };
    if !opts.timing_only {
        // Inputs keep what they started with (no task writes one): read back only those an
        // expectation compares; the others' buffers are just freed.
        let read = data::read_back_at_end(program);
        for i in 0..tensors.len() {
            if !read[i] {
                tensors[i].data = Data::zeros(tensors[i].dtype, 0);
                drop(backend.rt.take_tensor_bytes(rt::TensorId(i as u32)));
                continue;
            }
            take_back(&mut backend.rt, i, &mut tensors).map_err(|m| SimError::Exec {
                code: codes::E0810,
                message: m,
                at: None,
                place: exec::Place::Task,
            })?;
        }
    }
    let run_time = t1.elapsed();
    for (k, c) in kernels.iter_mut().zip(&backend.s.counts) {
        k.tasks = *c;
    }
    let (trace, graph) = if opts.record {
        let r = backend.records(program, w, opts.graph_style);
        (r.trace, r.graph)
    } else {
        (None, None)
    };
    let total = i64::try_from(stats.total_cycles).unwrap_or(i64::MAX);
    let ntasks = i64::try_from(stats.tasks).unwrap_or(i64::MAX);
    // A timing-only run has statistics but no results: only their expectations are checked.
    let timing_only = opts.timing_only;
    let expects = data::check_expects_where(
        program,
        &tensors,
        &opts.base_dir,
        |s| match s {
            Stat::TotalCycles => Some(total),
            Stat::Tasks => Some(ntasks),
        },
        |e| !timing_only || matches!(e, wsp_ir::workload::Expect::Stat { .. }),
    )
    .map_err(data_err)?;
    Ok(SimRun {
        schedule: sched.map(|s| s.name.clone()),
        workload: program
            .workloads
            .get(w.index())
            .map(|w| w.name.clone())
            .unwrap_or_default(),
        tensors,
        outcome,
        stats,
        expects,
        kernels,
        trace,
        graph,
        orchestration,
        compile_time,
        orch_compile_time,
        run_time,
        notes,
    })
}

/// What the model changes about the schedule: `round_robin(n)` over more cores than a class
/// used by the program has goes round the class's cores (under `pto_wsp_v9`, `n` is the
/// number of v9 workers and is taken as it is).
fn schedule_notes(program: &Program, w: WorkloadId, arch: &Arch, pol: &Policies) -> Vec<String> {
    if arch.timing == wsp_arch::TimingSemantics::V9 {
        // v9 times tasks in program order on its workers (dispatch) through its window: the
        // other policies order the run, not v9's cycles.
        let d = Policies::default();
        let mut ignored = Vec::new();
        let mut notes = Vec::new();
        // A process's tasks run on the process's own clock: neither the workers nor the
        // window of the other tasks.
        if runs_processes(program, w) {
            let mut set = Vec::new();
            if pol.dispatch != d.dispatch {
                set.push("the dispatch");
            }
            if pol.task_window != d.task_window {
                set.push("`.task_window`");
            }
            if !set.is_empty() {
                let verb = if set.len() == 1 { "does" } else { "do" };
                notes.push(format!(
                    "{}: {} times a process's tasks on the process's own clock, so {} {verb} not change its processes' cycles",
                    set.join(" and "),
                    arch.name,
                    if set.len() == 1 { "this policy" } else { "these policies" },
                ));
            }
        }
        if pol.ready != d.ready {
            ignored.push(match pol.ready {
                rt::ReadyOrder::Lifo => "`.ready(lifo)`".to_string(),
                _ => "`.ready(priority(...))`".to_string(),
            });
        }
        match pol.timing {
            rt::Timing::Immediate => {}
            rt::Timing::Batched(n) => ignored.push(format!("`.timing(batched({n}))`")),
            rt::Timing::Interleaved(n) => ignored.push(format!("`.timing(interleaved({n}))`")),
            rt::Timing::RateLimit(n) => ignored.push(format!("`.timing(rate_limit({n}))`")),
        }
        // With another dispatch, `streams(n)` is the number of v9 workers.
        if let (Some(rt::Streams(n)), rt::Dispatch::RoundRobin(_)) = (pol.streams, pol.dispatch) {
            ignored.push(format!("`.streams({n})`"));
        }
        notes.extend(ignored.into_iter().map(|p| {
            format!(
                "{p}: {} times tasks in program order on its workers, so this policy does not change its cycles",
                arch.name
            )
        }));
        return notes;
    }
    let rt::Dispatch::RoundRobin(n) = pol.dispatch else {
        return Vec::new();
    };
    let mut classes: Vec<CoreClass> = program.kernels.iter().map(kernel_class).collect();
    classes.sort();
    classes.dedup();
    classes
        .into_iter()
        .filter_map(|c| {
            let cores = *arch.cores.get(&c)?;
            (n > cores).then(|| {
                format!(
                    "`round_robin({n})`: {} has {cores} {c} cores, so {c} tasks go round {cores}",
                    arch.name
                )
            })
        })
        .collect()
}

/// What the model changes about the placements: under `pto_wsp_v9`, tasks are timed in
/// program order on v9's workers, so a core placement does not change the cycles (its checks
/// still apply).
fn placement_notes(p: &Placement, arch: &Arch) -> Vec<String> {
    if arch.timing != wsp_arch::TimingSemantics::V9 {
        return Vec::new();
    }
    let mut set = Vec::new();
    if p.spatial.is_some() {
        set.push("`.spatial_map(...)`");
    }
    if !p.shards.is_empty() {
        set.push("`.layout(...)`");
    }
    if set.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "{}: {} times tasks in program order on its workers, not on cores, so the placement does not change its cycles (views across shards and conflicting placements are still errors)",
        set.join(" and "),
        arch.name
    )]
}

/// Whether workload `w` runs processes: it is a `connect`, or runs one (through `sequential`,
/// `combine` or a block's `run`).
fn runs_processes(program: &Program, w: WorkloadId) -> bool {
    fn in_stmts(stmts: &[WStmt], out: &mut Vec<WorkloadId>) {
        wsp_ir::workload::walk_stmts(stmts, &mut |s| {
            if let WStmt::Run { workload } = s {
                out.push(*workload);
            }
        });
    }
    let mut seen = vec![false; program.workloads.len()];
    let mut todo = vec![w];
    while let Some(w) = todo.pop() {
        let Some(wl) = program.workloads.get(w.index()) else {
            continue;
        };
        if std::mem::replace(&mut seen[w.index()], true) {
            continue;
        }
        match &wl.body {
            WorkloadBody::Connect { .. } => return true,
            WorkloadBody::Sequential { parts } | WorkloadBody::Combine { parts } => {
                todo.extend(parts.iter().copied())
            }
            WorkloadBody::Block { stmts } => in_stmts(stmts, &mut todo),
        }
    }
    false
}

/// The directory a program's relative `load(...)` paths resolve against.
pub fn base_dir_of(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}
