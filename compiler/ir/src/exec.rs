//! The reference workload interpreter: generates tasks in program order and runs each kernel
//! (with the reference kernel interpreter) on real tensor data, sequentially.
//!
//! This is the reference semantics of a whole program. `when` conditions are evaluated when
//! reached (every earlier task has run, so they see the data of their producers). Ragged and
//! Sparse axes read their length / CSR tensors when the loop is entered. CSP pipelines
//! (`connect`) run as a deterministic round-robin of process steps: each step of a process
//! runs until it completes one visible action (a task, a token sent, a token received) or
//! blocks; channels are bounded by their depth (`0`: the sender waits until its token is
//! taken); a channel closes when every producer of it has finished. When every unfinished
//! process is blocked, the run fails with a deadlock report naming the processes and the
//! channels with their fill.

use crate::dtype::ScalarValue;
use crate::interp::{run_kernel, KernelArg, Tile};
use crate::kernel::{Kernel, ParamKind, TileType};
use crate::tensor::{Data, El, HostTensor};
use crate::workload::*;
use std::collections::VecDeque;
use std::fmt;
use wsp_vocab::codes;

/// An error of a workload run (E0810: task/view errors; E0811: deadlock).
#[derive(Clone, Debug, PartialEq)]
pub struct ExecError {
    pub code: &'static str,
    pub message: String,
    /// Where the error is, when the program says where that is written: the task call it
    /// happened in, or (`place`) the axis whose data is wrong.
    pub at: Option<SrcSpan>,
    pub place: Place,
}

/// What an [`ExecError`]'s location is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Place {
    /// The task call the error happened in.
    #[default]
    Task,
    /// The declaration of an axis whose data (a Ragged row's length, a Sparse row's
    /// positions or columns, a DenseDyn size) is wrong.
    Axis,
}

impl ExecError {
    /// An error of code `code` with no location yet.
    pub fn new(code: &'static str, message: impl Into<String>) -> ExecError {
        ExecError {
            code,
            message: message.into(),
            at: None,
            place: Place::Task,
        }
    }

    /// Places the error at `at`, the declaration of the axis whose data it is about, unless
    /// it has a place already.
    pub fn on_axis(mut self, at: &Option<SrcSpan>) -> ExecError {
        if self.at.is_none() && at.is_some() {
            self.at.clone_from(at);
            self.place = Place::Axis;
        }
        self
    }

    /// Places the error at `at` (the task call it happened in) unless it has a place already.
    pub fn within(mut self, at: &Option<SrcSpan>) -> ExecError {
        if self.at.is_none() {
            self.at.clone_from(at);
        }
        self
    }
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.code, self.message)
    }
}

impl std::error::Error for ExecError {}

fn xerr(message: impl Into<String>) -> ExecError {
    ExecError::new(codes::E0810, message)
}

/// The most process instances of one `connect` (each keeps its state for the whole run).
pub const MAX_PROCESSES: usize = 1 << 16;

/// The most iterations one loop (entered once) may generate (2²⁶).
pub const MAX_LOOP_ITERATIONS: usize = 1 << 26;

/// One executed task.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRecord {
    pub kernel: KernelId,
    pub coords: Vec<i64>,
    /// The process that ran it (`name` or `name#replica`), for CSP pipelines.
    pub process: Option<String>,
    /// Per kernel parameter, the valid extent of its tile (`None` for scalars).
    pub extents: Vec<Option<[u32; 2]>>,
}

impl TaskRecord {
    /// The record of task `kernel[coords]` with arguments `args`, run by `process`.
    pub fn new(
        kernel: KernelId,
        coords: &[i64],
        process: Option<&str>,
        args: &[TaskValue],
    ) -> TaskRecord {
        TaskRecord {
            kernel,
            coords: coords.to_vec(),
            process: process.map(str::to_string),
            extents: args
                .iter()
                .map(|a| match a {
                    TaskValue::Tile(v) => Some(v.valid),
                    TaskValue::Scalar(_) => None,
                })
                .collect(),
        }
    }
}

/// The result of a run: tasks in execution order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExecOutcome {
    pub tasks: Vec<TaskRecord>,
}

/// A run-time scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
enum V {
    I(i64),
    F(f64),
    B(bool),
}

/// Runs workload `w` of `program` on `tensors` (one per global tensor, updated in place).
pub fn run_workload(
    program: &Program,
    w: WorkloadId,
    params: &[ScalarValue],
    tensors: &mut [HostTensor],
) -> Result<ExecOutcome, ExecError> {
    let mut reference = |_: KernelId, k: &Kernel, args: &mut [KernelArg]| {
        run_kernel(k, args).map_err(|e| e.message)
    };
    run_workload_with(program, w, params, tensors, &mut reference)
}

/// Runs a kernel of a task: the kernel's id and IR, and its arguments (tiles of `out`/`inout`
/// parameters are read back after the call). Returns a message on failure.
pub type KernelExecutor<'e> =
    dyn FnMut(KernelId, &Kernel, &mut [KernelArg]) -> Result<(), String> + 'e;

/// [`run_workload`] with another kernel executor (a JIT, for whole-program differential tests
/// against the reference interpreter); task generation stays the reference one.
pub fn run_workload_with(
    program: &Program,
    w: WorkloadId,
    params: &[ScalarValue],
    tensors: &mut [HostTensor],
    executor: &mut KernelExecutor<'_>,
) -> Result<ExecOutcome, ExecError> {
    let mut backend = InPlace { executor };
    run_workload_on(program, w, params, tensors, &mut backend)
}

/// A tile view of a task, resolved: element `(r, c)` of the tile (for `r < valid[0]`,
/// `c < valid[1]`) is element `origin + r·row_stride + c·col_stride` of the tensor (row-major
/// flat index).
#[derive(Clone, Debug, PartialEq)]
pub struct TileView {
    pub tensor: TensorId,
    pub origin: usize,
    pub row_stride: usize,
    pub col_stride: usize,
    pub valid: [u32; 2],
    /// Per tensor dimension: first index and extent (1 for an indexed dimension).
    pub dims: Vec<(i64, i64)>,
    /// The tensor dimensions that hold the tile's rows and columns (`None`: extent 1).
    pub row_dim: Option<usize>,
    pub col_dim: Option<usize>,
}

impl TileView {
    /// A view of nothing, to resolve into ([`resolve_view_dims`]).
    pub fn empty() -> TileView {
        TileView {
            tensor: TensorId(0),
            origin: 0,
            row_stride: 0,
            col_stride: 0,
            valid: [0; 2],
            dims: Vec::new(),
            row_dim: None,
            col_dim: None,
        }
    }

    pub fn offset(&self, r: usize, c: usize) -> usize {
        self.origin + r * self.row_stride + c * self.col_stride
    }
}

/// An argument of a task, resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskValue {
    Tile(TileView),
    Scalar(ScalarValue),
}

/// A task the workload interpreter generated, with everything resolved.
#[derive(Debug)]
pub struct TaskInstance<'a> {
    pub kernel: KernelId,
    pub ir: &'a Kernel,
    pub coords: &'a [i64],
    /// One per kernel parameter.
    pub args: &'a [TaskValue],
    /// The process that issues it (`name` or `name#replica`).
    pub process: Option<&'a str>,
    /// The values of the loop variables bound to axes around the call (innermost last).
    pub axes: &'a [(AxisId, i64)],
    /// The task call's source span, when the IR has one.
    pub at: Option<&'a SrcSpan>,
}

impl<'a> TaskInstance<'a> {
    /// `task k[1, 2]`, for messages.
    pub fn label(&self) -> TaskName<'a> {
        TaskName {
            kernel: self.ir,
            coords: self.coords,
        }
    }
}

/// A task's name in messages, `task k[1, 2]`: formatted only when a message shows it.
#[derive(Clone, Copy, Debug)]
pub struct TaskName<'a> {
    pub kernel: &'a Kernel,
    pub coords: &'a [i64],
}

impl fmt::Display for TaskName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task {}[", self.kernel.name)?;
        for (i, c) in self.coords.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{c}")?;
        }
        f.write_str("]")
    }
}

/// Why a backend did not take a task.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskError {
    /// Something about this task (a region, a schedule key, its kernel run in place): reported
    /// with the task's name, at its call.
    Task(String),
    /// The run stopped while the task was handed over, for a reason that is not the task's
    /// (another task's kernel failed, a deadlock, a limit): reported as it is.
    Run(ExecError),
    /// The run stopped at this task's submission, with its own code (a full window whose mode
    /// is abort): reported at the task's call.
    Stopped(ExecError),
}

impl From<String> for TaskError {
    fn from(m: String) -> TaskError {
        TaskError::Task(m)
    }
}

impl From<&str> for TaskError {
    fn from(m: &str) -> TaskError {
        TaskError::Task(m.to_string())
    }
}

impl TaskError {
    /// The error of task `label` written at `at`.
    pub fn of_task(self, label: &dyn fmt::Display, at: &Option<SrcSpan>) -> ExecError {
        match self {
            TaskError::Task(m) => xerr(format!("{label}: {m}")).within(at),
            TaskError::Run(e) => e,
            TaskError::Stopped(e) => ExecError {
                message: format!("{label}: {}", e.message),
                ..e
            }
            .within(at),
        }
    }
}

/// Where the workload interpreter sends the tasks it generates: run them at once on host
/// tensors (the reference semantics), or submit them to a runtime.
pub trait TaskBackend {
    /// Runs or submits a task. A backend that runs tasks later must make their results
    /// visible in `tensors` by the time [`TaskBackend::sync`] returns.
    fn task(&mut self, t: &TaskInstance<'_>, tensors: &mut [HostTensor]) -> Result<(), TaskError>;
    /// Whether the run's [`ExecOutcome::tasks`] lists every task (true by default). A backend
    /// that does not need the list says no, so a run of millions of tasks keeps no memory per
    /// task in the orchestration.
    fn keeps_records(&self) -> bool {
        true
    }
    /// Called before the orchestration reads elements of `tensor` (a `when` condition, a task
    /// coordinate, a Ragged length or Sparse index): afterwards `tensors[tensor]` holds the
    /// results of every task generated so far that writes it.
    fn sync(&mut self, tensor: TensorId, tensors: &mut [HostTensor]) -> Result<(), String>;
    /// Called between the parts of a `sequential(...)`: every task generated so far must
    /// finish before any later one starts ("ordered, even without shared data").
    fn barrier(&mut self, _tensors: &mut [HostTensor]) -> Result<(), String> {
        Ok(())
    }
    /// The structure of the main orchestration, for clocks that follow program order
    /// rather than data edges (`pto_wsp_v9`): groups open and close around blocks, loops and
    /// the parts of `sequential` and `combine`, and `Step` separates the members of a group.
    /// Process bodies report none (their time is their own clock).
    fn order(&mut self, _event: OrderEvent) -> Result<(), String> {
        Ok(())
    }
    /// A block making a local tensor begins ([`WStmt::Local`]): the tasks up to the matching
    /// [`TaskBackend::local_end`] that name `tensor` mean a fresh instance of it, zeroed
    /// (`tensors[tensor]` already is). A backend that keeps its own buffers allocates one.
    fn local_begin(
        &mut self,
        _tensor: TensorId,
        _tensors: &mut [HostTensor],
    ) -> Result<(), String> {
        Ok(())
    }
    /// The block of [`TaskBackend::local_begin`] has ended: no later task names this
    /// instance, which lives until the tasks that use it have completed.
    fn local_end(&mut self, _tensor: TensorId) -> Result<(), String> {
        Ok(())
    }
    /// Runs a `connect` of processes itself (stepping [`connect_threads`] on its own
    /// scheduler) and returns the tasks it generated, or `None` to let the interpreter run
    /// it as a deterministic round-robin with its own channels.
    fn connect(
        &mut self,
        _program: &Program,
        _workload: &str,
        _items: &[ConnectItem],
        _params: &[ScalarValue],
        _tensors: &mut [HostTensor],
    ) -> Option<Result<Vec<TaskRecord>, ExecError>> {
        None
    }
}

/// A local tensor's block begins ([`WStmt::Local`]), in the interpreter and the compiled
/// orchestration alike: its host tensor starts zeroed (when it holds data: a timing-only run
/// keeps none), and the backend makes its instance.
pub fn local_begin(
    backend: &mut dyn TaskBackend,
    tensors: &mut [HostTensor],
    t: TensorId,
) -> Result<(), ExecError> {
    let ht = tensors
        .get_mut(t.index())
        .ok_or_else(|| xerr(format!("tensor #{} does not exist", t.0)))?;
    if !ht.data.is_empty() {
        ht.data = Data::zeros(ht.dtype, ht.data.len());
    }
    backend.local_begin(t, tensors).map_err(xerr)
}

/// A structural event of the main orchestration ([`TaskBackend::order`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderEvent {
    /// A group opens. `seq`: each member starts after the previous one has ended (`P.seq`
    /// iterations, `sequential` parts); otherwise every member starts with the group (`P`
    /// iterations, `combine` parts, the statements of a block).
    Begin { seq: bool },
    /// The next member of the innermost group starts.
    Step,
    /// The innermost group closes.
    End,
}

/// What one step of a process did, for a scheduler outside the interpreter.
#[derive(Clone, Debug, PartialEq)]
pub enum ProcAction {
    /// It made progress (generated a task); step it again.
    Continue,
    /// Send `token` on `channel`. With `after_task`, the token is the coordinates of the
    /// task the step generated and is delivered when that task completes.
    Send {
        channel: ChannelId,
        token: Vec<i64>,
        after_task: bool,
    },
    /// Wait for a token on `channel`; give it (or `None`: closed and empty) to the next step.
    Recv { channel: ChannelId },
    /// The process has ended.
    Finished,
}

/// One process instance of a `connect`, stepped by an outside scheduler.
pub struct ProcThread<'p> {
    th: Thread<'p>,
    /// The channels this instance produces (a channel closes when all its producers end).
    pub produces: Vec<ChannelId>,
}

/// The process instances of a `connect`, in order: each process's id, its definition and the
/// instance's name (`replicate(p, n)` gives `p#0` … `p#n-1`). The interpreter and the
/// compiled orchestration both start their instances from this list.
pub fn connect_instances<'p>(
    p: &'p Program,
    items: &[ConnectItem],
) -> Result<Vec<(ProcessId, &'p Process, String)>, ExecError> {
    let total: u64 = items.iter().map(|i| i.replicas as u64).sum();
    if total > MAX_PROCESSES as u64 {
        return Err(xerr(format!(
            "a `connect` of {total} process instances: at most {MAX_PROCESSES}"
        )));
    }
    let mut out = Vec::new();
    for item in items {
        let proc_ = p
            .processes
            .get(item.process.index())
            .ok_or_else(|| xerr(format!("process #{} does not exist", item.process.0)))?;
        for r in 0..item.replicas {
            let name = if item.replicas > 1 {
                format!("{}#{r}", proc_.name)
            } else {
                proc_.name.clone()
            };
            out.push((item.process, proc_, name));
        }
    }
    Ok(out)
}

/// The process instances of a `connect`, ready to step.
pub fn connect_threads<'p>(
    p: &'p Program,
    items: &[ConnectItem],
) -> Result<Vec<ProcThread<'p>>, ExecError> {
    Ok(connect_instances(p, items)?
        .into_iter()
        .map(|(id, proc_, name)| ProcThread {
            th: Thread {
                name,
                vars: vec![None; proc_.vars.len()],
                var_names: &proc_.vars,
                frames: vec![Frame::Block {
                    stmts: &proc_.body,
                    pc: 0,
                    local: None,
                }],
                pending: None,
                awaiting: None,
                process: Some(id),
                waiting: None,
                var_axes: vec![None; proc_.vars.len()],
                external: None,
            },
            produces: proc_.produces.clone(),
        })
        .collect())
}

impl<'p> ProcThread<'p> {
    /// `name` or `name#replica`.
    pub fn name(&self) -> &str {
        &self.th.name
    }

    /// Runs the process until its next visible action. `received` is the result of the
    /// previous [`ProcAction::Recv`] (`Some(None)`: the channel is closed). Tasks go to
    /// `backend`; their records are appended to `tasks`.
    pub fn step(
        &mut self,
        program: &'p Program,
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
        backend: &mut dyn TaskBackend,
        received: Option<Option<Vec<i64>>>,
        tasks: &mut Vec<TaskRecord>,
    ) -> Result<ProcAction, ExecError> {
        let io = self.th.external.get_or_insert_with(ExtIo::default);
        io.action = None;
        if received.is_some() {
            io.inbox = received;
        }
        let mut m = Machine {
            p: program,
            params,
            tensors,
            out: ExecOutcome::default(),
            depth: 1,
            backend,
        };
        let step = m.step(&mut self.th, &mut []);
        tasks.append(&mut m.out.tasks);
        let action = self.th.external.as_mut().and_then(|io| io.action.take());
        Ok(match (step?, action) {
            (_, Some(a)) => a,
            (Step::Done, None) => ProcAction::Finished,
            (Step::Progress, None) => ProcAction::Continue,
            (Step::Blocked, None) => {
                return Err(xerr(format!(
                    "process `{}` blocked without a channel action",
                    self.th.name
                )))
            }
        })
    }
}

/// The reference backend: copies the tiles out, runs the kernel, copies results back.
struct InPlace<'e, 'x> {
    executor: &'e mut KernelExecutor<'x>,
}

impl TaskBackend for InPlace<'_, '_> {
    fn task(&mut self, t: &TaskInstance<'_>, tensors: &mut [HostTensor]) -> Result<(), TaskError> {
        let k = t.ir;
        let mut args = Vec::with_capacity(t.args.len());
        for (param, arg) in k.params.iter().zip(t.args) {
            match (&param.kind, arg) {
                (ParamKind::Tile { tile, .. }, TaskValue::Tile(v)) => {
                    let src = tensors.get(v.tensor.index()).ok_or("bad tensor")?;
                    args.push(KernelArg::Tile(gather(src, v, *tile)));
                }
                (_, TaskValue::Scalar(s)) => args.push(KernelArg::Scalar(*s)),
                _ => return Err(format!("argument `{}` is of the wrong kind", param.name).into()),
            }
        }
        (self.executor)(t.kernel, k, &mut args)?;
        for ((param, arg), v) in k.params.iter().zip(&args).zip(t.args) {
            if let (ParamKind::Tile { dir, .. }, KernelArg::Tile(tl), TaskValue::Tile(v)) =
                (&param.kind, arg, v)
            {
                if dir.writes() {
                    let dst = tensors.get_mut(v.tensor.index()).ok_or("bad tensor")?;
                    scatter(tl, v, dst);
                }
            }
        }
        Ok(())
    }

    fn sync(&mut self, _: TensorId, _: &mut [HostTensor]) -> Result<(), String> {
        Ok(())
    }
}

/// The tile a view shows of `t` (elements outside the valid extent are zero).
pub fn gather(t: &HostTensor, v: &TileView, ty: TileType) -> Tile {
    let mut tl = Tile::zeros(ty);
    tl.valid = v.valid;
    for r in 0..v.valid[0] as usize {
        for c in 0..v.valid[1] as usize {
            tl.set(r, c, t.data.get(v.offset(r, c)).unwrap_or(El::I(0)));
        }
    }
    tl
}

/// Writes the valid part of `tl` through view `v` into `t`.
pub fn scatter(tl: &Tile, v: &TileView, t: &mut HostTensor) {
    for r in 0..v.valid[0] as usize {
        for c in 0..v.valid[1] as usize {
            t.data.set(v.offset(r, c), tl.get(r, c));
        }
    }
}

/// Runs workload `w`, sending every task to `backend`.
pub fn run_workload_on(
    program: &Program,
    w: WorkloadId,
    params: &[ScalarValue],
    tensors: &mut [HostTensor],
    backend: &mut dyn TaskBackend,
) -> Result<ExecOutcome, ExecError> {
    if tensors.len() != program.tensors.len() {
        return Err(xerr(format!(
            "expected {} tensors, found {}",
            program.tensors.len(),
            tensors.len()
        )));
    }
    let mut m = Machine {
        p: program,
        params,
        tensors,
        out: ExecOutcome::default(),
        depth: 0,
        backend,
    };
    m.run_workload(w)?;
    Ok(m.out)
}

struct Machine<'p, 't> {
    p: &'p Program,
    params: &'t [ScalarValue],
    tensors: &'t mut [HostTensor],
    out: ExecOutcome,
    depth: usize,
    backend: &'t mut dyn TaskBackend,
}

enum Frame<'p> {
    Block {
        stmts: &'p [WStmt],
        pc: usize,
        /// The local tensor the block makes ([`WStmt::Local`]): it ends with the block, which
        /// opened no order group.
        local: Option<TensorId>,
    },
    Loop {
        vars: &'p [LoopVar],
        tuples: Tuples<'p>,
        /// Iterations begun.
        next: usize,
        body: &'p [WStmt],
        /// The variables' axes before the loop, restored when it ends: a task after the
        /// loop is not inside it (its schedule key cannot read the loop's last values).
        outer_axes: Vec<Option<AxisId>>,
    },
    Consume {
        channel: ChannelId,
        bindings: &'p [LoopVar],
        body: &'p [WStmt],
    },
}

/// A loop's iteration tuples. Iterators that read tensor data or iterate rows are listed up
/// front (flat, `width` values a tuple), as their domains are read when the loop begins. The
/// others (Dense and DenseDyn axes, ranges) are counted level by level, as the compiled
/// orchestration does: the same tuples in the same order, in memory that does not grow with
/// the trip count.
enum Tuples<'p> {
    Listed {
        flat: Vec<i64>,
        width: usize,
        len: usize,
    },
    Counted {
        iters: &'p [Iter],
        /// Per level: its current value and its end.
        at: Vec<(i64, i64)>,
    },
    /// Taken out of its frame while the next tuple is worked out.
    Moved,
}

/// A thread of execution: a process instance, or the main workload.
struct Thread<'p> {
    name: String,
    vars: Vec<Option<i64>>,
    var_names: &'p [String],
    frames: Vec<Frame<'p>>,
    /// A token whose task ran but which did not fit in its channel yet.
    pending: Option<(ChannelId, Vec<i64>)>,
    /// Rendezvous: the serial of a token we sent on a depth-0 channel, until it is taken.
    awaiting: Option<(ChannelId, u64)>,
    process: Option<ProcessId>,
    /// What the thread waits for, when blocked.
    waiting: Option<String>,
    /// The axis each loop variable was last bound from (for dispatch keys).
    var_axes: Vec<Option<AxisId>>,
    /// Channels are handled by an outside scheduler ([`ProcThread`]): sends and receives
    /// become [`ProcAction`]s instead of touching the interpreter's own queues.
    external: Option<ExtIo>,
}

#[derive(Default)]
struct ExtIo {
    /// What the last receive produced (`None` inside: the channel is closed).
    inbox: Option<Option<Vec<i64>>>,
    /// The action the step ended with.
    action: Option<ProcAction>,
}

/// A channel of the interpreters' own round-robin ([`round_robin`]).
pub struct Chan {
    /// Queued tokens with their serial numbers.
    pub queue: VecDeque<(u64, Vec<i64>)>,
    /// Producers still running (the channel is closed at 0).
    pub live_producers: u32,
    pub serial: u64,
}

/// What one step of a process did under [`round_robin`].
pub enum Step {
    Progress,
    Blocked,
    Done,
}

/// The deterministic round-robin of a `connect` that both orchestration engines use when the
/// backend does not schedule processes: steps every unfinished thread in turn until all have
/// finished; a channel closes when every producer of it has finished; a round in which no
/// thread makes progress is a deadlock (E0811), reported with what each thread waits for
/// (`waiting`: its name and wait) and every channel's fill.
pub fn round_robin<T>(
    p: &Program,
    wname: &str,
    threads: &mut [T],
    produces: impl Fn(&T) -> Vec<ChannelId>,
    waiting: impl Fn(&T) -> (String, String),
    mut step: impl FnMut(&mut T, &mut [Chan]) -> Result<Step, ExecError>,
) -> Result<(), ExecError> {
    let mut chans: Vec<Chan> = p
        .channels
        .iter()
        .map(|_| Chan {
            queue: VecDeque::new(),
            live_producers: 0,
            serial: 0,
        })
        .collect();
    for t in threads.iter() {
        for c in produces(t) {
            let ch = chans
                .get_mut(c.index())
                .ok_or_else(|| xerr(format!("channel #{} does not exist", c.0)))?;
            ch.live_producers += 1;
        }
    }
    let mut done = vec![false; threads.len()];
    loop {
        let mut progressed = false;
        for (i, th) in threads.iter_mut().enumerate() {
            if done[i] {
                continue;
            }
            match step(th, &mut chans)? {
                Step::Progress => progressed = true,
                Step::Blocked => {}
                Step::Done => {
                    done[i] = true;
                    progressed = true;
                    for c in produces(th) {
                        if let Some(ch) = chans.get_mut(c.index()) {
                            ch.live_producers = ch.live_producers.saturating_sub(1);
                        }
                    }
                }
            }
        }
        if done.iter().all(|d| *d) {
            return Ok(());
        }
        if !progressed {
            let waits: Vec<String> = threads
                .iter()
                .zip(&done)
                .filter(|(_, d)| !**d)
                .map(|(t, _)| {
                    let (name, wait) = waiting(t);
                    format!("`{name}` waits {wait}")
                })
                .collect();
            let fill: Vec<String> = p
                .channels
                .iter()
                .zip(&chans)
                .map(|(c, s)| {
                    format!(
                        "`{}` {}/{}{}",
                        c.name,
                        s.queue.len(),
                        c.depth,
                        if s.live_producers == 0 {
                            " (closed)"
                        } else {
                            ""
                        }
                    )
                })
                .collect();
            return Err(ExecError::new(
                codes::E0811,
                format!(
                    "deadlock in `{wname}`: {}; channels: {}. Increase a channel's depth or \
                     reorder sends and consumes so that every wait can be satisfied",
                    waits.join(", "),
                    fill.join(", ")
                ),
            ));
        }
    }
}

impl<'p> Machine<'p, '_> {
    fn run_workload(&mut self, w: WorkloadId) -> Result<(), ExecError> {
        self.depth += 1;
        if self.depth > 64 {
            return Err(xerr(
                "workloads nest more than 64 deep (a workload runs itself?)",
            ));
        }
        let wl = self
            .p
            .workloads
            .get(w.index())
            .ok_or_else(|| xerr(format!("workload #{} does not exist", w.0)))?;
        let r = match &wl.body {
            WorkloadBody::Block { stmts } => {
                let mut th = Thread {
                    name: format!("workload `{}`", wl.name),
                    vars: vec![None; wl.vars.len()],
                    var_names: &wl.vars,
                    frames: vec![Frame::Block {
                        stmts,
                        pc: 0,
                        local: None,
                    }],
                    pending: None,
                    awaiting: None,
                    process: None,
                    waiting: None,
                    var_axes: vec![None; wl.vars.len()],
                    external: None,
                };
                let mut no_chans = Vec::new();
                self.order(&th, OrderEvent::Begin { seq: false })?;
                loop {
                    match self.step(&mut th, &mut no_chans)? {
                        Step::Done => break Ok(()),
                        Step::Progress => {}
                        Step::Blocked => {
                            break Err(xerr(format!(
                                "{} uses a channel outside a process ({})",
                                th.name,
                                th.waiting.unwrap_or_default()
                            )))
                        }
                    }
                }
            }
            WorkloadBody::Sequential { parts } => {
                self.backend
                    .order(OrderEvent::Begin { seq: true })
                    .map_err(xerr)?;
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        self.backend.barrier(self.tensors).map_err(xerr)?;
                        self.backend.order(OrderEvent::Step).map_err(xerr)?;
                    }
                    self.run_workload(*part)?;
                }
                self.backend.order(OrderEvent::End).map_err(xerr)
            }
            WorkloadBody::Combine { parts } => {
                self.backend
                    .order(OrderEvent::Begin { seq: false })
                    .map_err(xerr)?;
                for part in parts {
                    self.run_workload(*part)?;
                }
                self.backend.order(OrderEvent::End).map_err(xerr)
            }
            WorkloadBody::Connect { processes } => {
                match self
                    .backend
                    .connect(self.p, &wl.name, processes, self.params, self.tensors)
                {
                    Some(r) => r.map(|tasks| self.out.tasks.extend(tasks)),
                    None => self.run_connect(&wl.name, processes),
                }
            }
        };
        self.depth -= 1;
        r
    }

    fn run_connect(&mut self, wname: &str, items: &[ConnectItem]) -> Result<(), ExecError> {
        let p = self.p;
        let mut threads: Vec<Thread<'p>> = connect_threads(p, items)?
            .into_iter()
            .map(|pt| pt.th)
            .collect();
        round_robin(
            p,
            wname,
            &mut threads,
            |t| {
                t.process
                    .and_then(|pid| p.processes.get(pid.index()))
                    .map(|pr| pr.produces.clone())
                    .unwrap_or_default()
            },
            |t| (t.name.clone(), t.waiting.clone().unwrap_or_default()),
            |th, chans| self.step(th, chans),
        )
    }

    /// Runs `th` until one visible action, a block, or its end.
    fn step(&mut self, th: &mut Thread<'p>, chans: &mut [Chan]) -> Result<Step, ExecError> {
        let p = self.p;
        th.waiting = None;
        if let Some((c, serial)) = th.awaiting {
            let ch = chans.get(c.index()).ok_or_else(|| xerr("bad channel"))?;
            if ch.queue.iter().any(|(s, _)| *s == serial) {
                th.waiting = Some(format!(
                    "for its token on `{}` to be taken",
                    chan_name(p, c)
                ));
                return Ok(Step::Blocked);
            }
            th.awaiting = None;
        }
        if let Some((c, tok)) = th.pending.take() {
            return Ok(match try_send(p, chans, c, tok, th.send_state())? {
                true => Step::Progress,
                false => Step::Blocked,
            });
        }
        loop {
            let Some(frame) = th.frames.last_mut() else {
                return Ok(Step::Done);
            };
            match frame {
                Frame::Block { stmts, pc, local } => {
                    let Some(s) = stmts.get(*pc) else {
                        let local = *local;
                        th.frames.pop();
                        match local {
                            Some(t) => self.backend.local_end(t).map_err(xerr)?,
                            None => self.order(th, OrderEvent::End)?,
                        }
                        continue;
                    };
                    *pc += 1;
                    match s {
                        WStmt::For {
                            kind,
                            vars,
                            iters,
                            body,
                            ..
                        } => {
                            let mut reads = Vec::new();
                            for it in iters.iter() {
                                iter_reads(p, it, &mut reads);
                            }
                            self.sync(&reads)?;
                            let outer_axes: Vec<Option<AxisId>> = vars
                                .iter()
                                .map(|v| th.var_axes.get(v.index()).copied().flatten())
                                .collect();
                            let mut pos = 0;
                            for it in iters.iter() {
                                let bound: Vec<Option<AxisId>> = match it {
                                    Iter::Axis { axis } => match self.axis(*axis)?.kind {
                                        AxisKind::Ragged { outer, .. }
                                        | AxisKind::Sparse { outer, .. } => {
                                            vec![Some(outer), Some(*axis)]
                                        }
                                        _ => vec![Some(*axis)],
                                    },
                                    Iter::Row { axis, .. } => vec![Some(*axis)],
                                    Iter::Range { .. } => vec![None],
                                };
                                for a in bound {
                                    if let Some(v) = vars.get(pos) {
                                        if let Some(slot) = th.var_axes.get_mut(v.index()) {
                                            *slot = a;
                                        }
                                    }
                                    pos += 1;
                                }
                            }
                            let tuples = if counted_loop(p, iters, &reads) {
                                if vars.len() != iters.len() {
                                    return Err(arity_error(th, vars.len(), iters.len()));
                                }
                                Tuples::Counted {
                                    iters,
                                    at: vec![(0, 0); iters.len()],
                                }
                            } else {
                                let mut out = (Vec::new(), 0);
                                let mut vals = th.vars.clone();
                                self.iterate(
                                    th,
                                    vars,
                                    iters,
                                    0,
                                    &mut vals,
                                    &mut Vec::new(),
                                    &mut out,
                                )?;
                                Tuples::Listed {
                                    flat: out.0,
                                    width: vars.len(),
                                    len: out.1,
                                }
                            };
                            let seq = *kind == LoopKind::Sequential;
                            self.order(th, OrderEvent::Begin { seq })?;
                            th.frames.push(Frame::Loop {
                                vars,
                                tuples,
                                next: 0,
                                body,
                                outer_axes,
                            });
                        }
                        WStmt::When {
                            branches,
                            otherwise,
                        } => {
                            let mut chosen: &'p [WStmt] = otherwise;
                            let mut reads = Vec::new();
                            for b in branches.iter() {
                                expr_reads(&b.cond, &mut reads);
                            }
                            self.sync(&reads)?;
                            for b in branches {
                                match self.eval(th, &b.cond)? {
                                    V::B(true) => {
                                        chosen = &b.body;
                                        break;
                                    }
                                    V::B(false) => {}
                                    other => {
                                        return Err(xerr(format!(
                                            "in {}: a `when` condition evaluated to {other:?}, not a bool",
                                            th.name
                                        )))
                                    }
                                }
                            }
                            self.order(th, OrderEvent::Begin { seq: false })?;
                            th.frames.push(Frame::Block {
                                stmts: chosen,
                                pc: 0,
                                local: None,
                            });
                        }
                        WStmt::Call(call) => {
                            self.exec_task(th, call)?;
                            return Ok(Step::Progress);
                        }
                        WStmt::Run { workload } => {
                            self.run_workload(*workload)?;
                            return Ok(Step::Progress);
                        }
                        WStmt::Send { channel, payload } => {
                            if th.external.is_none() && chans.get(channel.index()).is_none() {
                                return Err(xerr(format!(
                                    "in {}: `send` on channel `{}` outside a `connect` of its processes",
                                    th.name,
                                    chan_name(p, *channel)
                                )));
                            }
                            let tok = match payload {
                                SendPayload::Task(call) => self.exec_task(th, call)?,
                                SendPayload::Values { values } => {
                                    let mut reads = Vec::new();
                                    values.iter().for_each(|e| expr_reads(e, &mut reads));
                                    self.sync(&reads)?;
                                    values
                                        .iter()
                                        .map(|e| self.eval_int(th, e, "a sent value"))
                                        .collect::<Result<_, _>>()?
                                }
                            };
                            if let Some(io) = th.external.as_mut() {
                                io.action = Some(ProcAction::Send {
                                    channel: *channel,
                                    token: tok,
                                    after_task: matches!(payload, SendPayload::Task(_)),
                                });
                                return Ok(Step::Progress);
                            }
                            try_send(p, chans, *channel, tok, th.send_state())?;
                            return Ok(Step::Progress);
                        }
                        WStmt::Consume {
                            channel,
                            bindings,
                            body,
                        } => {
                            if th.external.is_none() && chans.get(channel.index()).is_none() {
                                return Err(xerr(format!(
                                    "in {}: `consume` on channel `{}` outside a `connect` of its processes",
                                    th.name,
                                    chan_name(p, *channel)
                                )));
                            }
                            th.frames.push(Frame::Consume {
                                channel: *channel,
                                bindings,
                                body,
                            });
                        }
                        WStmt::Local { tensor, body } => {
                            self.local_begin(*tensor)?;
                            th.frames.push(Frame::Block {
                                stmts: body,
                                pc: 0,
                                local: Some(*tensor),
                            });
                        }
                    }
                }
                Frame::Loop {
                    vars,
                    tuples,
                    next,
                    body,
                    ..
                } => {
                    let (vars, body, n): (&'p [LoopVar], &'p [WStmt], usize) = (vars, body, *next);
                    let mut tuples = std::mem::replace(tuples, Tuples::Moved);
                    let more = self.next_tuple(th, vars, &mut tuples, n);
                    let Some(Frame::Loop {
                        tuples: slot,
                        next,
                        outer_axes,
                        ..
                    }) = th.frames.last_mut()
                    else {
                        return Err(xerr("a loop lost its frame"));
                    };
                    *slot = tuples;
                    if !more? {
                        let outer = std::mem::take(outer_axes);
                        for (v, a) in vars.iter().zip(outer) {
                            if let Some(slot) = th.var_axes.get_mut(v.index()) {
                                *slot = a;
                            }
                        }
                        th.frames.pop();
                        self.order(th, OrderEvent::End)?;
                        continue;
                    }
                    let first = *next == 0;
                    *next += 1;
                    if !first {
                        self.order(th, OrderEvent::Step)?;
                    }
                    self.order(th, OrderEvent::Begin { seq: false })?;
                    th.frames.push(Frame::Block {
                        stmts: body,
                        pc: 0,
                        local: None,
                    });
                }
                Frame::Consume {
                    channel,
                    bindings,
                    body,
                } => {
                    let (c, bindings, body): (ChannelId, &'p [LoopVar], &'p [WStmt]) =
                        (*channel, bindings, body);
                    if let Some(io) = th.external.as_mut() {
                        match io.inbox.take() {
                            None => {
                                io.action = Some(ProcAction::Recv { channel: c });
                                return Ok(Step::Blocked);
                            }
                            Some(None) => {
                                th.frames.pop();
                                continue;
                            }
                            Some(Some(tok)) => {
                                if tok.len() < bindings.len() {
                                    return Err(xerr(format!(
                                        "in {}: a token of {} values on `{}` binds {} names",
                                        th.name,
                                        tok.len(),
                                        chan_name(p, c),
                                        bindings.len()
                                    )));
                                }
                                for (v, x) in bindings.iter().zip(tok) {
                                    set_var(th, *v, x)?;
                                }
                                th.frames.push(Frame::Block {
                                    stmts: body,
                                    pc: 0,
                                    local: None,
                                });
                                return Ok(Step::Progress);
                            }
                        }
                    }
                    let ch = chans
                        .get_mut(c.index())
                        .ok_or_else(|| xerr("bad channel"))?;
                    match ch.queue.pop_front() {
                        Some((_, tok)) => {
                            if tok.len() < bindings.len() {
                                return Err(xerr(format!(
                                    "in {}: a token of {} values on `{}` binds {} names",
                                    th.name,
                                    tok.len(),
                                    chan_name(p, c),
                                    bindings.len()
                                )));
                            }
                            for (v, x) in bindings.iter().zip(tok) {
                                set_var(th, *v, x)?;
                            }
                            th.frames.push(Frame::Block {
                                stmts: body,
                                pc: 0,
                                local: None,
                            });
                            return Ok(Step::Progress);
                        }
                        None if ch.live_producers == 0 => {
                            th.frames.pop();
                        }
                        None => {
                            th.waiting = Some(format!("on `{}` (empty)", chan_name(p, c)));
                            return Ok(Step::Blocked);
                        }
                    }
                }
            }
        }
    }

    fn local_begin(&mut self, t: TensorId) -> Result<(), ExecError> {
        local_begin(&mut *self.backend, self.tensors, t)
    }

    /// Reports a structural event of the main orchestration to the backend (process
    /// threads report none).
    fn order(&mut self, th: &Thread<'p>, event: OrderEvent) -> Result<(), ExecError> {
        if th.process.is_some() || th.external.is_some() {
            return Ok(());
        }
        self.backend.order(event).map_err(xerr)
    }

    /// Binds the loop's variables to its next tuple (iteration `n`); false when there is none.
    fn next_tuple(
        &self,
        th: &mut Thread<'p>,
        vars: &[LoopVar],
        tuples: &mut Tuples<'p>,
        n: usize,
    ) -> Result<bool, ExecError> {
        match tuples {
            Tuples::Listed { flat, width, len } => {
                if n >= *len {
                    return Ok(false);
                }
                let Some(tuple) = flat.get(n * *width..(n + 1) * *width) else {
                    return Ok(false);
                };
                for (v, x) in vars.iter().zip(tuple) {
                    set_var(th, *v, *x)?;
                }
                Ok(true)
            }
            Tuples::Counted { iters, at } => {
                // An odometer: step the innermost level, and (re)start the levels inside
                // one that stepped from their first values, whose bounds may read the
                // variables outside them; an empty level steps the one outside it.
                let mut k = if n == 0 {
                    0
                } else {
                    let last = iters.len() - 1;
                    at[last].0 += 1;
                    last
                };
                let mut start = n == 0;
                loop {
                    if start {
                        at[k] = self.level_bounds(th, &iters[k])?;
                    }
                    if at[k].0 < at[k].1 {
                        set_var(th, vars[k], at[k].0)?;
                        if k + 1 == iters.len() {
                            // The listed form (and the compiled orchestration) refuse as many.
                            if n >= MAX_LOOP_ITERATIONS {
                                return Err(too_many_iterations(th));
                            }
                            return Ok(true);
                        }
                        k += 1;
                        start = true;
                    } else {
                        if k == 0 {
                            return Ok(false);
                        }
                        k -= 1;
                        at[k].0 += 1;
                        start = false;
                    }
                }
            }
            Tuples::Moved => Err(xerr("a loop's tuples were taken")),
        }
    }

    /// The (first, end) of one level of a counted loop: a range, or a Dense/DenseDyn axis.
    fn level_bounds(&self, th: &Thread<'p>, it: &Iter) -> Result<(i64, i64), ExecError> {
        match it {
            Iter::Range { start, end } => {
                let s = self.eval_int(th, start, "a range start")?;
                let e = self.eval_int(th, end, "a range end")?;
                range_ok(th, s, e)?;
                Ok((s, e))
            }
            Iter::Axis { axis } => Ok((0, self.flat_len(th, *axis)?)),
            Iter::Row { .. } => Err(xerr("a row iterator in a counted loop")),
        }
    }

    /// Generates the iteration tuples of a `for`, binding variables as it goes so that later
    /// iterators may depend on earlier ones.
    #[allow(clippy::too_many_arguments)]
    fn iterate(
        &self,
        th: &Thread<'p>,
        vars: &[LoopVar],
        iters: &[Iter],
        k: usize,
        env: &mut Vec<Option<i64>>,
        prefix: &mut Vec<i64>,
        out: &mut (Vec<i64>, usize),
    ) -> Result<(), ExecError> {
        let Some(it) = iters.get(k) else {
            if prefix.len() != vars.len() {
                return Err(arity_error(th, vars.len(), prefix.len()));
            }
            if out.1 >= MAX_LOOP_ITERATIONS {
                return Err(too_many_iterations(th));
            }
            out.0.extend_from_slice(prefix);
            out.1 += 1;
            return Ok(());
        };
        let scratch = Thread {
            name: th.name.clone(),
            vars: env.clone(),
            var_names: th.var_names,
            frames: Vec::new(),
            pending: None,
            awaiting: None,
            process: None,
            waiting: None,
            var_axes: Vec::new(),
            external: None,
        };
        let domain = self.domain(&scratch, it)?;
        for tuple in domain {
            let n = tuple.len();
            for (j, x) in tuple.iter().enumerate() {
                if let Some(v) = vars.get(prefix.len() + j) {
                    if let Some(slot) = env.get_mut(v.index()) {
                        *slot = Some(*x);
                    }
                }
            }
            prefix.extend(tuple);
            self.iterate(th, vars, iters, k + 1, env, prefix, out)?;
            prefix.truncate(prefix.len() - n);
        }
        Ok(())
    }

    /// The values one iterator ranges over (tuples of 1 or 2 values).
    fn domain(&self, th: &Thread<'p>, it: &Iter) -> Result<Vec<Vec<i64>>, ExecError> {
        match it {
            Iter::Range { start, end } => {
                let s = self.eval_int(th, start, "a range start")?;
                let e = self.eval_int(th, end, "a range end")?;
                range_ok(th, s, e)?;
                Ok((s..e).map(|i| vec![i]).collect())
            }
            Iter::Row { axis, row } => {
                let b = self.affine(th, row)?;
                Ok(self
                    .row(th, *axis, b)?
                    .into_iter()
                    .map(|i| vec![i])
                    .collect())
            }
            Iter::Axis { axis } => {
                let a = self.axis(*axis)?;
                match &a.kind {
                    AxisKind::Dense { .. } | AxisKind::DenseDyn { .. } => {
                        Ok(self.flat(th, *axis)?.into_iter().map(|i| vec![i]).collect())
                    }
                    AxisKind::Ragged { outer, .. } | AxisKind::Sparse { outer, .. } => {
                        let mut out = Vec::new();
                        for b in self.flat(th, *outer)? {
                            for i in self.row(th, *axis, b)? {
                                out.push(vec![b, i]);
                            }
                        }
                        Ok(out)
                    }
                }
            }
        }
    }

    fn axis(&self, a: AxisId) -> Result<&'p Axis, ExecError> {
        self.p
            .axes
            .get(a.index())
            .ok_or_else(|| xerr(format!("axis #{} does not exist", a.0)))
    }

    /// A Dense/DenseDyn axis as a flat range.
    fn flat(&self, th: &Thread<'p>, a: AxisId) -> Result<Vec<i64>, ExecError> {
        Ok((0..self.flat_len(th, a)?).collect())
    }

    /// The size of a Dense/DenseDyn axis.
    fn flat_len(&self, th: &Thread<'p>, a: AxisId) -> Result<i64, ExecError> {
        let ax = self.axis(a)?;
        let n = match &ax.kind {
            AxisKind::Dense { size } => i64::try_from(*size).unwrap_or(i64::MAX),
            AxisKind::DenseDyn { size } => self.eval_int(th, size, "an axis size")?,
            _ => {
                return Err(xerr(format!(
                    "axis `{}` is nested; iterate it with its row (`{}[b]`) or as a whole",
                    ax.name, ax.name
                )))
            }
        };
        if n < 0 {
            return Err(
                xerr(format!("axis `{}` has a negative size ({n})", ax.name)).on_axis(&ax.at),
            );
        }
        Ok(n)
    }

    /// Row `b` of a Ragged or Sparse axis.
    fn row(&self, th: &Thread<'p>, a: AxisId, b: i64) -> Result<Vec<i64>, ExecError> {
        let ax = self.axis(a)?;
        match &ax.kind {
            AxisKind::Ragged { .. } => {
                let n = ragged_row_len(self.p, self.tensors, a, b, &th.name)?;
                Ok((0..n).collect())
            }
            AxisKind::Sparse { .. } => {
                let (s, e) = sparse_row_span(self.p, self.tensors, a, b, &th.name)?;
                (s..e)
                    .map(|i| sparse_col(self.p, self.tensors, a, i, &th.name))
                    .collect()
            }
            _ => Err(xerr(format!(
                "axis `{}` is not Ragged or Sparse; it has no rows",
                ax.name
            ))),
        }
    }

    fn var(&self, th: &Thread<'p>, v: LoopVar) -> Result<i64, ExecError> {
        match th.vars.get(v.index()) {
            Some(Some(x)) => Ok(*x),
            Some(None) => Err(xerr(format!(
                "in {}: loop variable `{}` is read before it is bound",
                th.name,
                th.var_names
                    .get(v.index())
                    .map(String::as_str)
                    .unwrap_or("?")
            ))),
            None => Err(xerr(format!("loop variable #{} does not exist", v.0))),
        }
    }

    fn affine(&self, th: &Thread<'p>, a: &Affine) -> Result<i64, ExecError> {
        let mut acc = a.constant;
        for (s, c) in &a.terms {
            let v = match s {
                Sym::Var(v) => self.var(th, *v)?,
                Sym::Param(p) => match self.params.get(p.index()) {
                    Some(ScalarValue::Int(i)) => *i,
                    Some(ScalarValue::UInt(u)) => i64::try_from(*u).unwrap_or(i64::MAX),
                    _ => return Err(xerr(format!("param #{} is not an integer", p.0))),
                },
            };
            acc = v
                .checked_mul(*c)
                .and_then(|t| acc.checked_add(t))
                .ok_or_else(|| xerr("overflow in an index expression"))?;
        }
        Ok(acc)
    }

    fn eval_int(&self, th: &Thread<'p>, e: &Expr, what: &str) -> Result<i64, ExecError> {
        match self.eval(th, e)? {
            V::I(i) => Ok(i),
            other => Err(xerr(format!(
                "in {}: {what} evaluated to {other:?}, not an integer",
                th.name
            ))),
        }
    }

    fn eval(&self, th: &Thread<'p>, e: &Expr) -> Result<V, ExecError> {
        Ok(match e {
            Expr::Const { value } => scalar_v(*value),
            Expr::Param { param } => scalar_v(
                *self
                    .params
                    .get(param.index())
                    .ok_or_else(|| xerr(format!("param #{} does not exist", param.0)))?,
            ),
            Expr::Var { var } => V::I(self.var(th, *var)?),
            Expr::Elem { tensor, index } => {
                let idx = index
                    .iter()
                    .map(|i| self.eval_int(th, i, "a tensor index"))
                    .collect::<Result<Vec<_>, _>>()?;
                scalar_v(read_elem(self.p, self.tensors, *tensor, &idx, &th.name)?)
            }
            Expr::Neg { x } => match self.eval(th, x)? {
                V::I(i) => V::I(i.wrapping_neg()),
                V::F(f) => V::F(-f),
                V::B(_) => return Err(xerr("negation of a bool")),
            },
            Expr::Not { x } => match self.eval(th, x)? {
                V::B(b) => V::B(!b),
                _ => return Err(xerr("`!` of a number")),
            },
            Expr::Binary { op, lhs, rhs } => {
                let (a, b) = (self.eval(th, lhs)?, self.eval(th, rhs)?);
                binop(*op, a, b).map_err(|m| xerr(format!("in {}: {m}", th.name)))?
            }
        })
    }

    /// Waits (through the backend) until the tensors in `reads` hold their producers' data.
    fn sync(&mut self, reads: &[TensorId]) -> Result<(), ExecError> {
        for t in reads {
            self.backend.sync(*t, self.tensors).map_err(xerr)?;
        }
        Ok(())
    }

    /// Runs one task; returns its coordinates.
    /// Runs one task call. Errors of the call itself (its coordinates, views, arguments, and
    /// what the backend says of it) are placed at the call; a failure elsewhere that surfaces
    /// meanwhile (waiting for data, submitting) is reported as it is.
    fn exec_task(&mut self, th: &Thread<'p>, call: &TaskCall) -> Result<Vec<i64>, ExecError> {
        let p = self.p;
        let k: &Kernel = p
            .kernel(call.kernel)
            .ok_or_else(|| xerr(format!("kernel #{} does not exist", call.kernel.0)))?;
        let mut reads = Vec::new();
        call.coords.iter().for_each(|c| expr_reads(c, &mut reads));
        for a in &call.args {
            if let TaskArg::Scalar { value } = a {
                expr_reads(value, &mut reads);
            }
        }
        self.sync(&reads)?;
        let (coords, args, task) = self
            .resolve_call(th, call, k)
            .map_err(|e| e.within(&call.at))?;
        let axes: Vec<(AxisId, i64)> = th
            .var_axes
            .iter()
            .zip(&th.vars)
            .filter_map(|(a, v)| Some(((*a)?, (*v)?)))
            .collect();
        let process = th.process.map(|_| th.name.as_str());
        let inst = TaskInstance {
            kernel: call.kernel,
            ir: k,
            coords: &coords,
            args: &args,
            process,
            axes: &axes,
            at: call.at.as_ref(),
        };
        self.backend
            .task(&inst, self.tensors)
            .map_err(|e| e.of_task(&task, &call.at))?;
        if !self.backend.keeps_records() {
            return Ok(coords);
        }
        self.out
            .tasks
            .push(TaskRecord::new(call.kernel, &coords, process, &args));
        Ok(coords)
    }

    /// A call's coordinates, arguments and name.
    fn resolve_call(
        &self,
        th: &Thread<'p>,
        call: &TaskCall,
        k: &Kernel,
    ) -> Result<(Vec<i64>, Vec<TaskValue>, String), ExecError> {
        let coords = call
            .coords
            .iter()
            .map(|c| self.eval_int(th, c, "a task coordinate"))
            .collect::<Result<Vec<_>, _>>()?;
        let task = task_label(k, &coords);
        if call.args.len() != k.params.len() {
            return Err(xerr(format!(
                "{task}: {} arguments for {} parameters",
                call.args.len(),
                k.params.len()
            )));
        }
        let mut args = Vec::with_capacity(k.params.len());
        for (param, arg) in k.params.iter().zip(&call.args) {
            match (&param.kind, arg) {
                (ParamKind::Tile { tile, partial, .. }, TaskArg::View(view)) => {
                    let v = self.resolve_view(th, view, *tile, *partial, &task, &param.name)?;
                    args.push(TaskValue::Tile(v));
                }
                (ParamKind::Scalar { .. }, TaskArg::Scalar { value }) => {
                    let v = self.eval(th, value)?;
                    args.push(TaskValue::Scalar(match v {
                        V::I(i) => ScalarValue::Int(i),
                        V::F(f) => ScalarValue::Float(f),
                        V::B(b) => ScalarValue::Bool(b),
                    }));
                }
                _ => {
                    return Err(xerr(format!(
                        "{task}: argument `{}` is of the wrong kind (view vs scalar)",
                        param.name
                    )))
                }
            }
        }
        Ok((coords, args, task))
    }

    fn resolve_view(
        &self,
        th: &Thread<'p>,
        view: &View,
        tile: TileType,
        partial: [bool; 2],
        task: &str,
        pname: &str,
    ) -> Result<TileView, ExecError> {
        self.p
            .tensors
            .get(view.tensor.index())
            .ok_or_else(|| xerr(format!("tensor #{} does not exist", view.tensor.0)))?;
        let t = self
            .tensors
            .get(view.tensor.index())
            .ok_or_else(|| xerr("bad tensor"))?;
        let rank = t.shape.len();
        // Evaluate every dimension first, for the message.
        let mut dims: Vec<(i64, Option<i64>)> = Vec::with_capacity(rank);
        for d in 0..rank {
            dims.push(match view.dims.get(d) {
                Some(ViewDim::Index { at }) => (self.affine(th, at)?, None),
                Some(ViewDim::Slice { start, end }) => {
                    (self.affine(th, start)?, Some(self.affine(th, end)?))
                }
                Some(ViewDim::Full) | None => (0, Some(t.shape[d] as i64)),
            });
        }
        let mut out = TileView::empty();
        resolve_view_dims(
            self.p,
            self.tensors,
            view,
            &dims,
            tile,
            partial,
            &task,
            pname,
            &mut out,
        )?;
        Ok(out)
    }
}

/// Resolves a view of a task whose dimensions are evaluated into `out`: per tensor dimension,
/// the index (`(i, None)`) or the slice (`(start, Some(end))`; a whole dimension is
/// `(0, Some(size))`). Checks the view against the tensor and the kernel parameter (`pname`
/// of tile type `tile`, `partial` per tile dimension); `task` names the task in messages
/// (formatted only for one). `out`'s vector is reused (a caller resolving many views keeps one
/// per argument); `out` is unspecified after an error.
#[allow(clippy::too_many_arguments)]
pub fn resolve_view_dims(
    p: &Program,
    tensors: &[HostTensor],
    view: &View,
    dims: &[(i64, Option<i64>)],
    tile: TileType,
    partial: [bool; 2],
    task: &dyn fmt::Display,
    pname: &str,
    out: &mut TileView,
) -> Result<(), ExecError> {
    let decl = p
        .tensors
        .get(view.tensor.index())
        .ok_or_else(|| xerr(format!("tensor #{} does not exist", view.tensor.0)))?;
    let t = tensors
        .get(view.tensor.index())
        .ok_or_else(|| xerr("bad tensor"))?;
    let rank = t.shape.len();
    if dims.len() != rank {
        return Err(xerr(format!(
            "{task}: view of `{}` has {} evaluated dimensions for rank {rank}",
            decl.name,
            dims.len()
        )));
    }
    // Only error messages use these: built on demand, not per task.
    let shown = || {
        format!(
            "`{pname}: {}[{}]`",
            decl.name,
            dims.iter()
                .map(|(s, e)| match e {
                    None => s.to_string(),
                    Some(e) => format!("{s}..{e}"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let shape_s = || format!("{:?}", t.shape);
    if view.dims.len() > rank {
        return Err(xerr(format!(
            "{task}: view {shown} indexes {} dimensions of `{}` of shape {shape_s}",
            view.dims.len(),
            decl.name,
            shown = shown(),
            shape_s = shape_s()
        )));
    }
    if t.dtype != tile.dtype {
        return Err(xerr(format!(
            "{task}: view {shown} is {} but parameter `{pname}` is {}",
            t.dtype,
            tile.dtype,
            shown = shown()
        )));
    }
    // The kept (sliced) dimensions hold the tile's: one kept dimension is the tile's
    // columns, two are its rows and columns.
    let mut kept = [0usize; 2];
    let mut nkept = 0;
    for (d, (_, e)) in dims.iter().enumerate() {
        if e.is_some() {
            if nkept == 2 {
                let n = dims.iter().filter(|(_, e)| e.is_some()).count();
                return Err(xerr(format!(
                    "{task}: view {shown} keeps {n} dimensions; a tile has at most 2",
                    shown = shown()
                )));
            }
            kept[nkept] = d;
            nkept += 1;
        }
    }
    // Tile dimension (0 rows, 1 columns) to tensor dimension.
    let (row_dim, col_dim) = match nkept {
        0 => (None, None),
        1 => (None, Some(kept[0])),
        _ => (Some(kept[0]), Some(kept[1])),
    };
    if nkept < 2 && tile.shape[0] != 1 || nkept == 0 && tile.shape[1] != 1 {
        return Err(xerr(format!(
            "{task}: view {shown} has fewer dimensions than parameter `{pname}` of shape [{}, {}]",
            tile.shape[0],
            tile.shape[1],
            shown = shown()
        )));
    }
    let mut valid = [1u32, 1u32];
    let oob = |d: usize| {
        xerr(format!(
            "{task}: view {shown} is out of range in dimension {d} of `{}` (shape {shape_s})",
            decl.name,
            shown = shown(),
            shape_s = shape_s()
        ))
    };
    let mut extents = std::mem::take(&mut out.dims);
    extents.clear();
    for (d, &(s, e)) in dims.iter().enumerate() {
        let size = t.shape[d] as i64;
        match e {
            None => {
                if s < 0 || s >= size {
                    return Err(oob(d));
                }
                extents.push((s, 1));
            }
            Some(e) => {
                let td = usize::from(Some(d) == col_dim);
                let len = e - s;
                let stat = i64::from(tile.shape[td]);
                let part = partial[td];
                if s < 0 || len < 0 || (part && len > stat) || (!part && len != stat) {
                    if s >= 0 && len >= 0 {
                        return Err(xerr(format!(
                            "{task}: view {shown} has extent {len} in dimension {d}, parameter `{pname}` needs {}{stat}",
                            if part { "at most " } else { "" }, shown = shown())));
                    }
                    return Err(oob(d));
                }
                let clipped = if e > size {
                    if !part || s > size {
                        return Err(oob(d));
                    }
                    size - s
                } else {
                    len
                };
                valid[td] = clipped as u32;
                extents.push((s, clipped));
            }
        }
    }
    // Row-major strides, from the last dimension: the origin and the kept dimensions' strides.
    let (mut origin, mut stride) = (0usize, 1usize);
    let (mut row_stride, mut col_stride) = (0usize, 0usize);
    for d in (0..rank).rev() {
        origin += extents[d].0 as usize * stride;
        if Some(d) == row_dim {
            row_stride = stride;
        }
        if Some(d) == col_dim {
            col_stride = stride;
        }
        stride *= t.shape[d];
    }
    *out = TileView {
        tensor: view.tensor,
        origin,
        row_stride,
        col_stride,
        valid,
        dims: extents,
        row_dim,
        col_dim,
    };
    Ok(())
}

fn axis_of(p: &Program, a: AxisId) -> Result<&Axis, ExecError> {
    p.axes
        .get(a.index())
        .ok_or_else(|| xerr(format!("axis #{} does not exist", a.0)))
}

/// Element `i` of `t`, one of the integer tensors describing axis `ax` (`what`: `lengths`,
/// `indptr` or `indices`), read by `thread`.
fn axis_data(
    p: &Program,
    tensors: &[HostTensor],
    ax: &Axis,
    t: TensorId,
    i: i64,
    what: &str,
    thread: &str,
) -> Result<i64, ExecError> {
    let tensor = tensors
        .get(t.index())
        .ok_or_else(|| xerr(format!("tensor #{} does not exist", t.0)))?;
    match tensor.at(&[i]) {
        Some(El::I(v)) => i64::try_from(v).map_err(|_| xerr("axis data overflow")),
        Some(_) => Err(xerr(format!(
            "axis `{}`: {what} `{}` must be an integer tensor",
            ax.name,
            tensor_name(p, t)
        ))),
        None => Err(xerr(format!(
            "axis `{}`: index {i} is outside {what} `{}` of shape {:?} (in {thread})",
            ax.name,
            tensor_name(p, t),
            tensor.shape,
        ))),
    }
}

/// The length of row `b` of Ragged axis `a` (its `lengths[b]`, checked).
pub fn ragged_row_len(
    p: &Program,
    tensors: &[HostTensor],
    a: AxisId,
    b: i64,
    thread: &str,
) -> Result<i64, ExecError> {
    let ax = axis_of(p, a)?;
    let AxisKind::Ragged { lengths, per, .. } = &ax.kind else {
        return Err(xerr(format!("axis `{}` is not Ragged", ax.name)));
    };
    let n =
        axis_data(p, tensors, ax, *lengths, b, "lengths", thread).map_err(|e| e.on_axis(&ax.at))?;
    if n < 0 || n > MAX_LOOP_ITERATIONS as i64 {
        return Err(xerr(format!(
            "axis `{}`: row {b} has length {n}, outside 0..={MAX_LOOP_ITERATIONS}",
            ax.name
        ))
        .on_axis(&ax.at));
    }
    // Tiles of `per` elements: the last one partial.
    Ok(match per {
        Some(k) if *k > 0 => (n + i64::from(*k) - 1) / i64::from(*k),
        _ => n,
    })
}

/// The positions `indptr[b] .. indptr[b+1]` of row `b` of Sparse axis `a` (checked).
pub fn sparse_row_span(
    p: &Program,
    tensors: &[HostTensor],
    a: AxisId,
    b: i64,
    thread: &str,
) -> Result<(i64, i64), ExecError> {
    let ax = axis_of(p, a)?;
    let AxisKind::Sparse { indptr, .. } = &ax.kind else {
        return Err(xerr(format!("axis `{}` is not Sparse", ax.name)));
    };
    let on_axis = |e: ExecError| e.on_axis(&ax.at);
    let s = axis_data(p, tensors, ax, *indptr, b, "indptr", thread).map_err(on_axis)?;
    let e = axis_data(p, tensors, ax, *indptr, b + 1, "indptr", thread).map_err(on_axis)?;
    if e < s {
        return Err(on_axis(xerr(format!(
            "axis `{}`: indptr is decreasing at row {b} ({s} then {e})",
            ax.name
        ))));
    }
    Ok((s, e))
}

/// The column stored at position `i` of Sparse axis `a` (`indices[i]`).
pub fn sparse_col(
    p: &Program,
    tensors: &[HostTensor],
    a: AxisId,
    i: i64,
    thread: &str,
) -> Result<i64, ExecError> {
    let ax = axis_of(p, a)?;
    let AxisKind::Sparse { indices, .. } = &ax.kind else {
        return Err(xerr(format!("axis `{}` is not Sparse", ax.name)));
    };
    axis_data(p, tensors, ax, *indices, i, "indices", thread).map_err(|e| e.on_axis(&ax.at))
}

/// Element `idx` of tensor `t` as the orchestration reads it (`Expr::Elem`), by `thread`:
/// floats as `Float`, integers as `Int` (an error if outside i64), bools as `Bool`.
pub fn read_elem(
    p: &Program,
    tensors: &[HostTensor],
    t: TensorId,
    idx: &[i64],
    thread: &str,
) -> Result<ScalarValue, ExecError> {
    let tensor = tensors
        .get(t.index())
        .ok_or_else(|| xerr(format!("tensor #{} does not exist", t.0)))?;
    match tensor.at(idx) {
        Some(El::F(f)) => Ok(ScalarValue::Float(f)),
        Some(El::I(i)) => Ok(ScalarValue::Int(i64::try_from(i).map_err(|_| {
            xerr(format!(
                "element {idx:?} of `{}` does not fit in i64",
                tensor_name(p, t)
            ))
        })?)),
        Some(El::B(b)) => Ok(ScalarValue::Bool(b)),
        None => Err(xerr(format!(
            "in {thread}: element {idx:?} is outside `{}` of shape {:?}",
            tensor_name(p, t),
            tensor.shape
        ))),
    }
}

/// A run-time value as the interpreter's messages show it (`I(3)`, `F(1.5)`, `B(true)`).
pub fn describe_value(v: ScalarValue) -> String {
    format!("{:?}", scalar_v(v))
}

/// `task k[1, 2]`: how messages name a task.
pub fn task_label(k: &Kernel, coords: &[i64]) -> String {
    TaskName { kernel: k, coords }.to_string()
}

/// The tensors an iterator reads (Ragged lengths, Sparse indptr/indices, sizes).
pub fn iter_reads(p: &Program, it: &Iter, out: &mut Vec<TensorId>) {
    let axis_reads = |a: AxisId, out: &mut Vec<TensorId>| {
        let Some(ax) = p.axes.get(a.index()) else {
            return;
        };
        match &ax.kind {
            AxisKind::Dense { .. } => {}
            AxisKind::DenseDyn { size } => expr_reads(size, out),
            AxisKind::Ragged { lengths, .. } => out.push(*lengths),
            AxisKind::Sparse {
                indptr, indices, ..
            } => {
                out.push(*indptr);
                out.push(*indices);
            }
        }
    };
    match it {
        Iter::Range { start, end } => {
            expr_reads(start, out);
            expr_reads(end, out);
        }
        Iter::Row { axis, .. } => axis_reads(*axis, out),
        Iter::Axis { axis } => {
            axis_reads(*axis, out);
            if let Some(ax) = p.axes.get(axis.index()) {
                if let AxisKind::Ragged { outer, .. } | AxisKind::Sparse { outer, .. } = ax.kind {
                    axis_reads(outer, out);
                }
            }
        }
    }
}

/// The tensors an expression reads elements of (each once, in order).
pub fn expr_reads(e: &Expr, out: &mut Vec<TensorId>) {
    match e {
        Expr::Const { .. } | Expr::Param { .. } | Expr::Var { .. } => {}
        Expr::Elem { tensor, index } => {
            if !out.contains(tensor) {
                out.push(*tensor);
            }
            index.iter().for_each(|i| expr_reads(i, out));
        }
        Expr::Neg { x } | Expr::Not { x } => expr_reads(x, out),
        Expr::Binary { lhs, rhs, .. } => {
            expr_reads(lhs, out);
            expr_reads(rhs, out);
        }
    }
}

/// Whether a loop runs counted level by level (no materialised tuples): its iterators
/// (`reads`: the tensors their bounds read) read no data and are ranges or Dense/DenseDyn
/// axes. Both orchestration engines decide by this.
pub fn counted_loop(p: &Program, iters: &[Iter], reads: &[TensorId]) -> bool {
    reads.is_empty()
        && !iters.is_empty()
        && iters.iter().all(|it| match it {
            Iter::Range { .. } => true,
            Iter::Axis { axis } => matches!(
                p.axes.get(axis.index()).map(|a| &a.kind),
                Some(AxisKind::Dense { .. } | AxisKind::DenseDyn { .. })
            ),
            Iter::Row { .. } => false,
        })
}

fn arity_error(th: &Thread<'_>, vars: usize, values: usize) -> ExecError {
    xerr(format!(
        "in {}: a loop binds {vars} variables but its iterators give {values}",
        th.name
    ))
}

fn too_many_iterations(th: &Thread<'_>) -> ExecError {
    xerr(format!(
        "in {}: a loop has more than {MAX_LOOP_ITERATIONS} iterations",
        th.name
    ))
}

fn range_ok(th: &Thread<'_>, s: i64, e: i64) -> Result<(), ExecError> {
    if e.saturating_sub(s) > MAX_LOOP_ITERATIONS as i64 {
        return Err(xerr(format!(
            "in {}: range {s}..{e} has more than {MAX_LOOP_ITERATIONS} iterations",
            th.name
        )));
    }
    Ok(())
}

fn set_var(th: &mut Thread<'_>, v: LoopVar, x: i64) -> Result<(), ExecError> {
    match th.vars.get_mut(v.index()) {
        Some(slot) => {
            *slot = Some(x);
            Ok(())
        }
        None => Err(xerr(format!("loop variable #{} does not exist", v.0))),
    }
}

/// A thread's channel state under [`round_robin`]: the token it could not send yet, the
/// token of a rendezvous it waits to see taken, and what it waits for (for messages).
pub struct SendState<'a> {
    pub pending: &'a mut Option<(ChannelId, Vec<i64>)>,
    pub awaiting: &'a mut Option<(ChannelId, u64)>,
    pub waiting: &'a mut Option<String>,
}

/// Sends `tok` on channel `c` under [`round_robin`]: false (and the token kept as pending)
/// when the channel is full; a depth-0 channel is a rendezvous (the sender then awaits the
/// token being taken).
pub fn try_send(
    p: &Program,
    chans: &mut [Chan],
    c: ChannelId,
    tok: Vec<i64>,
    st: SendState<'_>,
) -> Result<bool, ExecError> {
    let depth = p.channels.get(c.index()).map(|c| c.depth).unwrap_or(0);
    let ch = chans
        .get_mut(c.index())
        .ok_or_else(|| xerr(format!("channel #{} does not exist", c.0)))?;
    let cap = depth.max(1) as usize;
    if ch.queue.len() >= cap {
        *st.waiting = Some(format!("to send on `{}` (full)", chan_name(p, c)));
        *st.pending = Some((c, tok));
        return Ok(false);
    }
    ch.serial += 1;
    ch.queue.push_back((ch.serial, tok));
    if depth == 0 {
        *st.awaiting = Some((c, ch.serial));
    }
    Ok(true)
}

impl Thread<'_> {
    fn send_state(&mut self) -> SendState<'_> {
        SendState {
            pending: &mut self.pending,
            awaiting: &mut self.awaiting,
            waiting: &mut self.waiting,
        }
    }
}

/// A channel's name for messages (`?` for an unknown id).
pub fn chan_name(p: &Program, c: ChannelId) -> &str {
    p.channels
        .get(c.index())
        .map(|c| c.name.as_str())
        .unwrap_or("?")
}

fn tensor_name(p: &Program, t: TensorId) -> &str {
    p.tensors
        .get(t.index())
        .map(|t| t.name.as_str())
        .unwrap_or("?")
}

fn scalar_v(s: ScalarValue) -> V {
    match s {
        ScalarValue::Float(f) => V::F(f),
        ScalarValue::Int(i) => V::I(i),
        ScalarValue::UInt(u) => V::I(i64::try_from(u).unwrap_or(i64::MAX)),
        ScalarValue::Bool(b) => V::B(b),
    }
}

fn binop(op: ExprOp, a: V, b: V) -> Result<V, String> {
    use ExprOp::*;
    Ok(match (a, b) {
        (V::I(x), V::I(y)) => match op {
            Add => V::I(x.wrapping_add(y)),
            Sub => V::I(x.wrapping_sub(y)),
            Mul => V::I(x.wrapping_mul(y)),
            Div | Rem if y == 0 => return Err("integer division by zero".into()),
            Div => V::I(x.wrapping_div(y)),
            Rem => V::I(x.wrapping_rem(y)),
            Min => V::I(x.min(y)),
            Max => V::I(x.max(y)),
            Eq => V::B(x == y),
            Ne => V::B(x != y),
            Lt => V::B(x < y),
            Le => V::B(x <= y),
            Gt => V::B(x > y),
            Ge => V::B(x >= y),
            And | Or => return Err("`&&`/`||` on integers".into()),
        },
        (V::B(x), V::B(y)) => match op {
            And => V::B(x && y),
            Or => V::B(x || y),
            Eq => V::B(x == y),
            Ne => V::B(x != y),
            _ => return Err(format!("{op:?} on bools")),
        },
        (V::B(_), _) | (_, V::B(_)) => return Err(format!("{op:?} mixes a bool and a number")),
        (x, y) => {
            let f = |v: V| match v {
                V::I(i) => i as f64,
                V::F(f) => f,
                V::B(_) => 0.0,
            };
            let (x, y) = (f(x), f(y));
            match op {
                Add => V::F(x + y),
                Sub => V::F(x - y),
                Mul => V::F(x * y),
                Div => V::F(x / y),
                Rem => V::F(x % y),
                Min => V::F(crate::num::minimum(x, y)),
                Max => V::F(crate::num::maximum(x, y)),
                Eq => V::B(x == y),
                Ne => V::B(x != y),
                Lt => V::B(x < y),
                Le => V::B(x <= y),
                Gt => V::B(x > y),
                Ge => V::B(x >= y),
                And | Or => return Err("`&&`/`||` on numbers".into()),
            }
        }
    })
}
