//! What runs the tasks the interpreter generates: resolved task instances and tile views, the
//! [`TaskBackend`] trait with its order events and local tensors, and the reference backend
//! that runs each kernel in place on host tensors.

use super::{xerr, ExecError, KernelExecutor, TaskRecord};
use crate::dtype::ScalarValue;
use crate::interp::{KernelArg, Tile};
use crate::kernel::{Kernel, ParamKind, TileType};
use crate::tensor::{Data, El, HostTensor};
use crate::workload::*;
use std::fmt;

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
    /// A view of nothing, to resolve into ([`resolve_view_dims`](super::resolve_view_dims)).
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
    /// Whether the run's [`ExecOutcome::tasks`](super::ExecOutcome::tasks) lists every task (true by default). A backend
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
    /// Runs a `connect` of processes itself (stepping [`connect_threads`](super::connect_threads) on its own
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

/// The reference backend: copies the tiles out, runs the kernel, copies results back.
pub(super) struct InPlace<'e, 'x> {
    pub(super) executor: &'e mut KernelExecutor<'x>,
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

/// `task k[1, 2]`: how messages name a task.
pub fn task_label(k: &Kernel, coords: &[i64]) -> String {
    TaskName { kernel: k, coords }.to_string()
}
