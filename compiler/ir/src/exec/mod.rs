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
//!
//! The interpreter's rooms: `error` (errors and their places), `backend` (the [`TaskBackend`]
//! trait, resolved task instances and views, the reference backend), `step` (running a
//! workload and stepping a thread through its statements), `loops` (iteration tuples and axis
//! domains), `eval` (scalar expressions), `reads` (the tensor data the orchestration reads),
//! `task` (task calls and their views) and `csp` (process instances, channels and the
//! round-robin).

mod backend;
mod csp;
mod error;
mod eval;
mod loops;
mod reads;
mod step;
mod task;

pub use backend::{
    gather, local_begin, scatter, task_label, OrderEvent, TaskBackend, TaskError, TaskInstance,
    TaskName, TaskValue, TileView,
};
pub use csp::{
    chan_name, connect_instances, connect_threads, round_robin, try_send, Chan, ProcAction,
    ProcThread, SendState, Step,
};
pub use error::{ExecError, Place};
pub use eval::describe_value;
pub use loops::counted_loop;
pub use reads::{expr_reads, iter_reads, ragged_row_len, read_elem, sparse_col, sparse_row_span};
pub use task::resolve_view_dims;

use crate::dtype::ScalarValue;
use crate::interp::{run_kernel, KernelArg};
use crate::kernel::Kernel;
use crate::tensor::HostTensor;
use crate::workload::*;
use backend::InPlace;
use error::xerr;

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
