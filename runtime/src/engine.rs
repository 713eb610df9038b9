//! The engine: bounded rings, the event clock, host execution and CSP. Graph construction
//! (region checks, the tensor map) is its [`Builder`]'s.
//!
//! This file holds the engine's data: the configuration and its limits, the errors, the task
//! ring's 24-byte slot, edges, the event and ready queues, cores, channel and process records,
//! the thread pool's jobs, and [`Runtime`] itself. Its behaviour is in rooms, each an
//! `impl Runtime` block: `setup` (construction, kernels, tensors), `scopes` (scopes, the heap
//! arena, program order), `submit` (admission into the rings), `dispatch` (issue, ready queues,
//! starting tasks on cores), `clock` (events, completion, retirement, the orchestration's
//! waits), `host` (running kernels, the pool), `csp` (channels and processes), `stats`
//! (statistics and the trace), `deadlock` (how a run stops short) and `graph` (the recorded
//! task graph).

use crate::api::*;
use crate::build::Builder;
use crate::chunked::Chunked;
use crate::exec::ExecRing;
use crate::idset::IdSet;
use crate::order::Ordering;
#[cfg(doc)]
use crate::policy::WindowMode;
use crate::policy::{Policies, ReadyOrder};
use crate::report::*;
pub use crate::tensormap::MAX_POOL;
use crate::v9::V9Clock;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::sync::{mpsc, Arc};
use wsp_arch::{Arch, CoreClass};

mod clock;
mod csp;
mod deadlock;
mod dispatch;
mod graph;
mod host;
mod scopes;
mod setup;
mod stats;
mod submit;
pub use graph::{dot_escape, DataEdge, DepKind, GraphNode, OrderGate, TaskGraph};

const IO_CACHE: usize = 64;

/// No edge, no channel, no process.
const NIL: u32 = u32::MAX;

/// The largest task window (its ring of 24-byte slots and the builder's 4 bytes a task are
/// allocated up front).
pub const MAX_WINDOW: u32 = 1 << 24;

/// The window a [`WindowMode::Benchmark`] run actually has (when the declared one is smaller):
/// tasks in flight beyond it stall as usual, and the statistics' high-water mark says so.
pub const BENCHMARK_WINDOW: u32 = 1 << 16;

/// The most streams (and, under `pto_wsp_v9`, workers) a schedule may have: the runtime keeps
/// each one's last task (or clock) from the start.
pub const MAX_STREAMS: u32 = 1 << 16;

/// Process steps in a row with no task submitted and no cycle passing before the run stops
/// as a livelock ([`RuntimeError::Limit`]): far more than any pipeline that does work needs
/// between two tasks.
pub const MAX_IDLE_STEPS: u64 = 1 << 24;

/// Workers of the `pto_wsp_v9` clocks when the dispatch does not say (PTO-WSP's default).
const V9_DEFAULT_WORKERS: usize = 4;

/// Runtime configuration: the model, the schedule and the ring sizes.
#[derive(Clone, Debug)]
pub struct Config {
    pub arch: Arch,
    pub policies: Policies,
    /// Tensor-map entries (one per grid bucket a live region argument touches, at most four;
    /// one for a region spanning more).
    pub tensormap_pool: u32,
    /// Dependency edges between in-flight tasks.
    pub deplist_pool: u32,
    /// Bytes for runtime-allocated intermediates.
    pub heap_arena: u64,
    /// Ready tasks per core class.
    pub ready_queue: u32,
    /// Host threads running kernels (1 = on the orchestrating thread).
    pub threads: usize,
    /// False: timing only, kernels are not run and tensors get no buffers.
    pub execute: bool,
    /// Record a Chrome trace and the task graph (memory grows with the task count).
    pub record: bool,
    /// Stop the run ([`RuntimeError::Limit`]) instead of submitting more tasks than this, or
    /// of letting semantic time pass this cycle: a bound for pipelines whose processes never
    /// finish (which are not deadlocks). `u64::MAX`: no limit on tasks; the cycle limit is
    /// at most [`MAX_CYCLES`] whatever is set.
    pub max_tasks: u64,
    pub max_cycles: u64,
}

/// The modeled clock stops a run (a [`RuntimeError::Limit`] on cycles) rather than pass this:
/// with tasks of at most [`MAX_TASK_CYCLES`], no time computed on the way can wrap.
pub const MAX_CYCLES: u64 = 1 << 62;

/// The longest task the runtime models (cycles, compute and transfer): a longer one is an
/// [`RuntimeError::Api`] error at its submission (an architecture model with absurd costs).
pub const MAX_TASK_CYCLES: u64 = 1 << 48;

impl Config {
    pub fn new(arch: Arch) -> Config {
        let p = Policies::default();
        let w = p.task_window;
        Config {
            arch,
            policies: p,
            tensormap_pool: 4 * w,
            deplist_pool: 8 * w,
            heap_arena: 1 << 30,
            ready_queue: w,
            threads: 1,
            execute: true,
            record: false,
            max_tasks: u64::MAX,
            max_cycles: MAX_CYCLES,
        }
    }

    /// Grows the tensor map (up to [`MAX_POOL`]) so that a task with `args` region arguments
    /// always fits, whatever the window: otherwise a small window with many arguments a task
    /// is a deadlock (`TENSORMAP_POOL_FULL`), not backpressure.
    pub fn fit_region_args(&mut self, args: usize) {
        let need = u32::try_from(args)
            .unwrap_or(u32::MAX)
            .saturating_mul(crate::tensormap::WIDE_SPAN as u32);
        self.tensormap_pool = self.tensormap_pool.max(need.min(MAX_POOL));
    }

    /// Sets the task window and sizes the other rings from it (4 entries, at most
    /// [`MAX_POOL`] in all, and 8 edges per task).
    pub fn with_window(mut self, w: u32) -> Config {
        self.policies.task_window = w;
        self.tensormap_pool = w.saturating_mul(4).min(MAX_POOL);
        self.deplist_pool = w.saturating_mul(8);
        self.ready_queue = w;
        self
    }
}

/// A run-time failure.
#[derive(Clone, Debug, PartialEq)]
pub enum RuntimeError {
    /// A bad argument to the submit API.
    Api(String),
    /// A kernel reported an error: the task's sequence number, kernel and coordinates.
    Kernel {
        task: u64,
        kernel: String,
        coords: Vec<i64>,
        message: String,
    },
    /// A process body reported an error.
    Process { process: String, message: String },
    /// Nothing can run and nothing is pending.
    Deadlock(Box<DeadlockReport>),
    /// The run reached [`Config::max_tasks`] or [`Config::max_cycles`], or its processes
    /// passed tokens round without a task or a cycle passing ([`MAX_IDLE_STEPS`]).
    Limit(RunLimit),
    /// Under [`WindowMode::Abort`], a task found the window full: the window, the task's
    /// submission number and the cycle.
    WindowFull { window: u64, task: u64, cycle: u64 },
}

/// Which limit stopped a run, and where the run was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLimit {
    /// `"tasks"`, `"cycles"`, or process steps in a row without a task or a cycle passing
    /// ([`MAX_IDLE_STEPS`]).
    pub what: &'static str,
    pub limit: u64,
    /// Tasks submitted and the cycle reached when the run stopped.
    pub tasks: u64,
    pub cycle: u64,
}

impl fmt::Display for RunLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the run reached its limit of {} {} ({} tasks submitted, cycle {})",
            self.limit, self.what, self.tasks, self.cycle
        )
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::Api(m) => write!(f, "invalid runtime call: {m}"),
            RuntimeError::Kernel {
                task,
                kernel,
                coords,
                message,
            } => {
                let c: Vec<String> = coords.iter().map(i64::to_string).collect();
                write!(
                    f,
                    "task {kernel}[{}] (submission {task}) failed: {message}",
                    c.join(", ")
                )
            }
            RuntimeError::Process { process, message } => {
                write!(f, "process `{process}` failed: {message}")
            }
            RuntimeError::Deadlock(r) => r.fmt(f),
            RuntimeError::Limit(l) => l.fmt(f),
            RuntimeError::WindowFull {
                window,
                task,
                cycle,
            } => write!(
                f,
                "the task window of {window} is full: task {task} would make {} tasks in flight at cycle {cycle}, and the window's mode is abort",
                window + 1
            ),
        }
    }
}

impl std::error::Error for RuntimeError {}

impl From<ApiError> for RuntimeError {
    fn from(e: ApiError) -> Self {
        RuntimeError::Api(e.0)
    }
}

#[cold]
#[inline(never)]
pub(crate) fn api<T>(m: String) -> Result<T, RuntimeError> {
    Err(RuntimeError::Api(m))
}

struct KernelEntry {
    name: String,
    class: CoreClass,
    /// The class's index in `Runtime::classes`.
    ci: usize,
    body: Arc<dyn Kernel>,
    /// Host nanoseconds per run, measured (u64::MAX: not yet); decides, with a thread pool,
    /// whether handing a task to the pool pays for the round trip.
    est_ns: u64,
    /// Timed inline runs so far: the first `SAMPLE_FIRST` runs are timed, then those of tasks
    /// whose sequence number is a multiple of `SAMPLE_EVERY`.
    sampled: u64,
    /// Measured at `OFFLOAD_NS` or more (only ever with a pool): its tasks wait for their
    /// dispatch, to run on the pool.
    offload: bool,
    /// The transfer cycles of its last task: (bytes in, bytes out, cycles). A kernel's tasks
    /// mostly move the same bytes.
    io_last: Option<(u64, u64, u64)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Empty,
    Waiting,
    Ready,
    Running,
    Done,
}

impl State {
    /// Submitted and not yet completed: what an edge or an order gate may wait on.
    #[inline]
    fn pending(self) -> bool {
        matches!(self, State::Waiting | State::Ready | State::Running)
    }
}

struct ExecData {
    coords: Vec<i64>,
    args: Vec<RawArg>,
    scalars: Vec<i64>,
}

/// A task in the ring: 24 bytes, what the event model needs (the builder keeps each task's
/// first tensor-map entry). The policy key (for `priority`), the scope, the channel a
/// completion sends on and the kernel arguments live in side arrays that exist only when a
/// run uses them.
#[derive(Clone, Copy)]
struct Slot {
    /// Compute plus transfer cycles (low and high halves: 4-byte alignment keeps the slot
    /// at 24 bytes).
    dur: [u32; 2],
    preds_left: u32,
    /// Successor edges (a list through `Edge::next`).
    succ: u32,
    kernel: u32,
    /// The assigned core (fixed dispatch policies), then the running one; `NO_CORE`: none.
    core: u16,
    state: State,
    flags: u8,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 24);

const NO_CORE: u16 = u16::MAX;
// A class is a bit of `Runtime::dispatch_due`.
const _: () = assert!(CoreClass::ALL.len() <= 64);
/// Slot flags: issued per the timing policy; held by an open scope; the kernel is on the
/// thread pool and its result has not come back; the kernel ran at submission.
const ISSUED: u8 = 1;
const HELD: u8 = 2;
const ON_POOL: u8 = 4;
const RAN: u8 = 8;

impl Slot {
    fn dur(&self) -> u64 {
        (self.dur[1] as u64) << 32 | self.dur[0] as u64
    }

    const EMPTY: Slot = Slot {
        dur: [0; 2],
        preds_left: 0,
        succ: NIL,
        kernel: 0,
        core: NO_CORE,
        state: State::Empty,
        flags: 0,
    };
}

#[derive(Clone, Copy, Default)]
struct Edge {
    /// The successor's sequence number (low 32 bits).
    succ: u32,
    next: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Ev {
    /// The task's core finishes it.
    Done(u64),
    /// The runtime has handled the task's completion (`complete + resolve` cycles after it
    /// ended): its successors become ready, later submissions get no edge to it,
    /// and its slot may retire.
    Resolve(u64),
    Token(u32),
}

/// A ready queue of sequence numbers. FIFO and LIFO take tasks in push order (a task is
/// queued once, and only on its class's shared queue under work stealing, only on its core's
/// own queue under fixed dispatch, so no two queues are ever compared); priorities need a
/// heap, least (negated key, ready stamp) first.
enum ReadyQ {
    Fifo(VecDeque<u64>),
    Lifo(Vec<u64>),
    Heap(BinaryHeap<Reverse<(i64, u64, u64)>>),
}

impl ReadyQ {
    fn new(order: ReadyOrder) -> ReadyQ {
        match order {
            ReadyOrder::Fifo => ReadyQ::Fifo(VecDeque::new()),
            ReadyOrder::Lifo => ReadyQ::Lifo(Vec::new()),
            ReadyOrder::Priority => ReadyQ::Heap(BinaryHeap::new()),
        }
    }
    fn pop(&mut self) -> Option<u64> {
        match self {
            ReadyQ::Fifo(q) => q.pop_front(),
            ReadyQ::Lifo(q) => q.pop(),
            ReadyQ::Heap(q) => q.pop().map(|r| r.0 .2),
        }
    }
    fn is_empty(&self) -> bool {
        match self {
            ReadyQ::Fifo(q) => q.is_empty(),
            ReadyQ::Lifo(q) => q.is_empty(),
            ReadyQ::Heap(q) => q.is_empty(),
        }
    }
}

/// The event queue, earliest (time, order) first. `Resolve` events come a fixed delay after the
/// current time, which never goes back, so they arrive in order and wait in a FIFO; the
/// others share a binary heap ordered by (time, order) alone: the order is unique, so the
/// events themselves are never compared.
#[derive(Default)]
struct Events {
    heap: Vec<Timed>,
    fifo: VecDeque<Timed>,
    order: u64,
}

#[derive(Clone, Copy)]
struct Timed {
    t: u64,
    order: u64,
    ev: Ev,
}

impl Timed {
    #[inline(always)]
    fn key(&self) -> (u64, u64) {
        (self.t, self.order)
    }
}

impl Events {
    /// Inline: callers name the event's kind, so the FIFO test folds away.
    #[inline(always)]
    fn push(&mut self, t: u64, ev: Ev) {
        self.order += 1;
        let x = Timed {
            t,
            order: self.order,
            ev,
        };
        if matches!(ev, Ev::Resolve(_)) && self.fifo.back().is_none_or(|b| b.t <= t) {
            self.fifo.push_back(x);
            return;
        }
        // Sift a hole up from the end.
        let h = &mut self.heap;
        let mut i = h.len();
        h.push(x);
        while i > 0 {
            let p = (i - 1) / 2;
            if h[p].key() <= x.key() {
                break;
            }
            h[i] = h[p];
            i = p;
        }
        h[i] = x;
    }
    /// The earliest event's time.
    fn next_time(&self) -> Option<u64> {
        match (self.heap.first(), self.fifo.front()) {
            (Some(h), Some(f)) => Some(h.t.min(f.t)),
            (Some(h), None) => Some(h.t),
            (None, f) => f.map(|f| f.t),
        }
    }
    /// Takes the earliest event, with its time, if that is at most `t`. Inline: `advance`
    /// calls it for a batch's first event and for the rest, both hot.
    #[inline(always)]
    fn pop_due(&mut self, t: u64) -> Option<(u64, Ev)> {
        let from_heap = match (self.heap.first(), self.fifo.front()) {
            (Some(h), Some(f)) => h.key() <= f.key(),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if !from_heap {
            return match self.fifo.front() {
                Some(f) if f.t <= t => self.fifo.pop_front().map(|f| (f.t, f.ev)),
                _ => None,
            };
        }
        let h = &mut self.heap;
        if h.first().is_none_or(|x| x.t > t) {
            return None;
        }
        let last = h.pop()?;
        let Some(&top) = h.first() else {
            return Some((last.t, last.ev));
        };
        // Sift the last element down from the root's hole.
        let n = h.len();
        let mut i = 0;
        loop {
            let mut c = 2 * i + 1;
            if c >= n {
                break;
            }
            if c + 1 < n && h[c + 1].key() < h[c].key() {
                c += 1;
            }
            if last.key() <= h[c].key() {
                break;
            }
            h[i] = h[c];
            i = c;
        }
        h[i] = last;
        Some((top.t, top.ev))
    }
}

struct Core {
    free_at: u64,
    busy: u64,
    tasks: u64,
    queue: ReadyQ,
}

struct ClassState {
    class: CoreClass,
    cores: Vec<Core>,
    /// Idle cores.
    idle: u32,
    /// Bit sets over the cores: idle, and with a nonempty own queue.
    idle_bits: Vec<u64>,
    own_bits: Vec<u64>,
    shared: ReadyQ,
    queued: u32,
    overflow: VecDeque<u64>,
    emitted: u64,
}

#[derive(Default, Clone, Copy)]
struct RingStat {
    /// Kept for the edges and the heap arena; the window's, the tensor map's and the ready
    /// queues' use is worked out when reported.
    used: u64,
    cap: u64,
    hw: u64,
    stalls: u64,
    stalled: u64,
}

impl RingStat {
    fn set(&mut self, used: u64) {
        self.used = used;
        self.hw = self.hw.max(used);
    }
}

struct QTok {
    token: Token,
    avail: u64,
    after: u64,
    v9: u64,
    /// A rendezvous's sender, blocked until this token is received (`NIL`: none).
    sender: u32,
}

struct Channel {
    name: String,
    depth: u32,
    latency: u64,
    queue: VecDeque<QTok>,
    producers: u32,
    closed: bool,
    /// A sender blocked on this channel: (process, token, after task, v9 stamp).
    blocked_sender: VecDeque<(u32, Token, u64, u64)>,
    /// The processes waiting to receive from this channel.
    receivers: IdSet,
    /// The run's [`ChannelStats`]: tokens, high water and waits.
    stats: ChannelStats,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PStatus {
    Runnable,
    Recv(u32),
    Send(u32),
    Finished,
}

struct Proc {
    name: String,
    status: PStatus,
    received: Option<Received>,
    produces: Vec<u32>,
    v9_clock: u64,
    /// Tasks and their cycles, for the `pto_wsp_v9` statistics.
    v9_load: (u64, u64),
    blocked_since: u64,
}

/// A process body: a deterministic state machine driven one step at a time on the event clock.
pub trait Process {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String>;
}

impl<F> Process for F
where
    F: FnMut(&mut ProcCx<'_>) -> Result<Step, String>,
{
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        self(cx)
    }
}

/// What a process step can do: submit tasks, read what its last receive produced.
pub struct ProcCx<'a> {
    rt: &'a mut Runtime,
    proc: u32,
}

impl ProcCx<'_> {
    pub fn submit(&mut self, t: &TaskDesc<'_>) -> Result<TaskId, RuntimeError> {
        self.rt.submit_from(t, self.proc)
    }
    /// The result of the last `Step::Recv`, taken once.
    pub fn received(&mut self) -> Option<Received> {
        self.rt.procs.get_mut(self.proc as usize)?.received.take()
    }
    pub fn runtime(&mut self) -> &mut Runtime {
        self.rt
    }
}

/// A process as registered. Its body may borrow (it lives for one
/// [`Runtime::run_processes`] call).
pub struct ProcSpec<'a> {
    pub name: String,
    pub body: Box<dyn Process + 'a>,
    pub produces: Vec<ChannelId>,
}

struct Job {
    seq: u64,
    kernel: Arc<dyn Kernel>,
    data: Box<ExecData>,
}

// SAFETY: as for `Job`: the buffers go back to the orchestrating thread after the run, and the
// pointers are not used until they are rewritten for the next task.
unsafe impl Send for ExecData {}

// SAFETY: the raw pointers in `ExecData` point into tensor buffers owned by the runtime, which
// outlives every job (the pool is joined before buffers are dropped); the dependency engine
// ensures no two concurrently running jobs conflict on a region.
unsafe impl Send for Job {}

/// A task whose kernel failed: its kernel (an index of `Runtime::kernels`), the message and
/// the task's coordinates.
struct Failure {
    seq: u64,
    kernel: usize,
    message: String,
    coords: Vec<i64>,
}

impl Failure {
    fn new(seq: u64, kernel: usize, message: String, coords: &[i64]) -> Failure {
        Failure {
            seq,
            kernel,
            message,
            coords: coords.to_vec(),
        }
    }

    /// Keeps in `slot` the failure of the earliest task: `make` builds task `seq`'s when it
    /// is earlier than the one kept (whichever finished first on the host).
    fn keep_earliest(slot: &mut Option<Failure>, seq: u64, make: impl FnOnce() -> Failure) {
        if slot.as_ref().is_none_or(|f| seq < f.seq) {
            *slot = Some(make());
        }
    }
}

/// (task, outcome, its buffers back for reuse, host nanoseconds).
type JobResult = (u64, Result<(), String>, Box<ExecData>, u64);

struct Pool {
    /// `None` when no worker could be started (or the workers are gone).
    tx: Option<mpsc::Sender<Job>>,
    /// Why a worker thread could not be started, when one could not.
    spawn_error: Option<String>,
    rx: mpsc::Receiver<JobResult>,
    handles: Vec<std::thread::JoinHandle<()>>,
    /// The earliest failure.
    failed: Option<Failure>,
    in_flight: u64,
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.tx = None;
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

struct Scope {
    id: u32,
    tasks: u64,
    allocs: Vec<(u32, u64)>,
    /// Its tasks stay in the window until it ends ([`Runtime::scope_begin`]); a scope of
    /// [`Runtime::alloc_scope_begin`] bounds its allocations' lifetime alone.
    hold: bool,
}

/// The runtime: submit tasks, run processes, then [`Runtime::finish`].
pub struct Runtime {
    cfg: Config,
    window: u64,
    kernels: Vec<KernelEntry>,
    /// Graph construction: tensors' shapes, the tensor map, each task's candidates.
    build: Builder,
    /// Tensor buffers by tensor id (empty in timing-only mode).
    bufs: Vec<Vec<u8>>,
    /// Slots: the window rounded up to a power of two (indexed by `seq & ring_mask`).
    ring: Vec<Slot>,
    ring_mask: u64,
    /// Per slot, only when the ready order is `priority`: the task's key.
    keys: Vec<i64>,
    /// Per slot, once a process sends after a task: the channel its completion sends on.
    chan_after: Vec<u32>,
    /// Per slot, once a scope has opened: the task's innermost scope (0: none).
    scope_of: Vec<u32>,
    /// When kernels run: the in-flight tasks' kernel arguments, and per slot its task's
    /// record there (empty in timing-only mode).
    exec: ExecRing,
    exec_at: Vec<u64>,
    /// The running kernel's arguments (reused).
    raw_args: Vec<RawArg>,
    /// Tasks whose kernels were not run at submission and have not finished (waiting for
    /// their dispatch, recorded in `exec`, or on the pool).
    deferred: u64,
    next_seq: u64,
    head: u64,
    edges: Chunked<Edge>,
    /// Free edges, linked through `Edge::next`.
    edge_free: u32,
    classes: Vec<ClassState>,
    events: Events,
    /// Bit `ci`: a task was queued in class `ci` while it had an idle core, or one of its
    /// cores went idle while it had queued tasks, since the last dispatch.
    dispatch_due: u64,
    /// Dispatches go to the trace (recording under event timing).
    trace_tasks: bool,
    now: u64,
    ready_stamp: u64,
    rings: [RingStat; 5],
    arena_used: u64,
    pending_free: VecDeque<(u64, u32, u64)>,
    scopes: Vec<Scope>,
    scope_ids: u32,
    batch: Vec<u64>,
    since_yield: u32,
    v9: V9Clock,
    /// `P.seq` order on the event clock: open groups and their gates.
    order: Ordering,
    /// Tasks a gate released (reused).
    released: Vec<u64>,
    total_edges: u64,
    makespan: u64,
    /// The latest time something other than a task's completion handling happened (a core
    /// event, a token, the orchestration waiting): with the makespan, `total_cycles`.
    horizon: u64,
    /// The submitted task's predecessors (low 32 bits of their sequence numbers).
    deps: Vec<u32>,
    io_cache: [Option<(CoreClass, u64, u64, u64)>; IO_CACHE],
    /// Argument buffers of kernels sent to the pool, for reuse (boxed: they move to pool jobs
    /// and back).
    #[allow(clippy::vec_box)]
    exec_free: Vec<Box<ExecData>>,
    channels: Vec<Channel>,
    procs: Vec<Proc>,
    /// The runnable processes (the scheduler steps the lowest).
    runnable: IdSet,
    /// Channels whose tokens became available (or closed) since processes were last woken.
    woken: Vec<u32>,
    pool: Option<Pool>,
    failed_inline: Option<Failure>,
    /// The kernel failure that stopped the run, if one did.
    last_kernel_failure: Option<Box<RuntimeError>>,
    started: Vec<u64>,
    trace: Vec<TraceEvent>,
    graph_nodes: Vec<(u64, u32, Token)>,
    graph_edges: Vec<(u64, u64)>,
    /// Every direct data dependency (with `Config::record`).
    recorded: graph::DepRecorder,
    last_deadlock: Option<Box<DeadlockReport>>,
    last_limit: Option<RunLimit>,
}

/// `n` zero bytes (`n` ≥ 1), or `None` when the allocator cannot give them: `vec![0; n]`
/// aborts the process instead. Zeroed pages are mapped lazily, as `vec!` maps them.
fn zeroed_bytes(n: usize) -> Option<Vec<u8>> {
    let layout = std::alloc::Layout::array::<u8>(n).ok()?;
    if n == 0 {
        return Some(Vec::new());
    }
    // SAFETY: the layout has a nonzero size; a non-null block of `n` zeroed bytes from the
    // global allocator with the layout `Vec<u8>` of capacity `n` uses is what
    // `Vec::from_raw_parts` takes.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout);
        (!p.is_null()).then(|| Vec::from_raw_parts(p, n, n))
    }
}

fn class_index(classes: &[ClassState], c: CoreClass) -> usize {
    classes.iter().position(|s| s.class == c).unwrap_or(0)
}

fn mix(k: i64) -> u64 {
    let mut x = k as u64 ^ 0x9e37_79b9_7f4a_7c15;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
impl Runtime {
    pub(crate) fn graph_edges_for_tests(&self) -> Vec<(u64, u64)> {
        self.graph_edges.clone()
    }
    pub(crate) fn pool_started_for_tests(&self) -> bool {
        self.pool.is_some()
    }
}

#[cfg(test)]
mod event_tests;
