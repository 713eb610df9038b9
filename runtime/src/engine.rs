//! The engine: bounded rings, the event clock, host execution and CSP. Graph construction
//! (region checks, the tensor map) is its [`Builder`]'s.

use crate::api::*;
use crate::build::{Builder, Prepared};
use crate::chunked::Chunked;
use crate::exec::{ExecRing, RAW_ARG};
use crate::idset::IdSet;
use crate::order::{OrderWait, Ordering};
use crate::policy::{Dispatch, Policies, ReadyOrder, Timing, WindowMode};
use crate::report::*;
pub use crate::tensormap::MAX_POOL;
use crate::v9::{Order, V9Clock};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;
use wsp_arch::{Arch, CoreClass, TimingSemantics};

mod graph;
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

/// Tasks whose kernels take less than this run on the orchestrating thread even with a pool.
const OFFLOAD_NS: u64 = 5_000;
const SAMPLE_FIRST: u64 = 8;
const SAMPLE_EVERY: u64 = 256;

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

fn run_job(
    seq: u64,
    coords: &[i64],
    args: &[RawArg],
    scalars: &[i64],
    k: &dyn Kernel,
) -> Result<(), String> {
    let raw = RawTask {
        task: seq,
        coords: coords.as_ptr(),
        ncoords: coords.len() as u64,
        args: args.as_ptr(),
        nargs: args.len() as u64,
        scalars: scalars.as_ptr(),
        nscalars: scalars.len() as u64,
    };
    k.run(&raw)
}

/// Runs task `seq`'s kernel (`ke`, kernel `ki`) on this thread; a failure goes to `failed`
/// unless an earlier one is there. With a pool (`threads` > 1) the first runs of a kernel and
/// then a sample are timed, for the estimate that decides what goes to the pool.
#[allow(clippy::too_many_arguments)]
fn run_inline(
    ke: &mut KernelEntry,
    failed: &mut Option<Failure>,
    threads: usize,
    seq: u64,
    ki: usize,
    coords: &[i64],
    args: &[RawArg],
    scalars: &[i64],
) {
    let timed = threads > 1 && (ke.sampled < SAMPLE_FIRST || seq.is_multiple_of(SAMPLE_EVERY));
    let t0 = timed.then(Instant::now);
    let r = run_job(seq, coords, args, scalars, &*ke.body);
    if let Some(t0) = t0 {
        ke.sampled += 1;
        ke.measured(t0.elapsed().as_nanos() as u64);
    }
    if let Err(m) = r {
        Failure::keep_earliest(failed, seq, || Failure::new(seq, ki, m, coords));
    }
}

impl KernelEntry {
    /// A measured run of `ns` host nanoseconds.
    fn measured(&mut self, ns: u64) {
        self.est_ns = estimate(self.est_ns, ns);
        self.offload = self.est_ns >= OFFLOAD_NS;
    }
}

impl Pool {
    /// A pool of up to `n` workers: as many as the system lets start (a pool without any
    /// fails the tasks given to it instead of waiting for them forever).
    fn new(n: usize) -> Pool {
        let (tx, jrx) = mpsc::channel::<Job>();
        let (dtx, rx) = mpsc::channel();
        let jrx = Arc::new(Mutex::new(jrx));
        let mut spawn_error = None;
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            let jrx = Arc::clone(&jrx);
            let dtx = dtx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("wsp-kernel-{i}"))
                .spawn(move || loop {
                    let job = match jrx.lock() {
                        Ok(g) => g.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    let Job { seq, kernel, data } = job;
                    let t0 = Instant::now();
                    let r = run_job(seq, &data.coords, &data.args, &data.scalars, &*kernel);
                    let ns = t0.elapsed().as_nanos() as u64;
                    drop(kernel);
                    if dtx.send((seq, r, data, ns)).is_err() {
                        return;
                    }
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    spawn_error =
                        Some(format!("could not start host thread {} of {n}: {e}", i + 1));
                    break;
                }
            }
        }
        Pool {
            tx: (!handles.is_empty()).then_some(tx),
            spawn_error,
            rx,
            handles,
            failed: None,
            in_flight: 0,
        }
    }
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

/// A running estimate of a kernel's host time.
fn estimate(old: u64, sample: u64) -> u64 {
    if old == u64::MAX {
        sample
    } else {
        (3 * old + sample) / 4
    }
}

fn mix(k: i64) -> u64 {
    let mut x = k as u64 ^ 0x9e37_79b9_7f4a_7c15;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Runtime {
    pub fn new(mut cfg: Config) -> Result<Runtime, RuntimeError> {
        cfg.max_cycles = cfg.max_cycles.min(MAX_CYCLES);
        // A benchmark window holds nothing back: the rings are sized for a window of
        // `BENCHMARK_WINDOW` (or the declared one, if larger), and the statistics report the
        // declared window's capacity against the most tasks in flight.
        let declared = cfg.policies.task_window as u64;
        if cfg.policies.window_mode == WindowMode::Benchmark {
            let w = cfg.policies.task_window.max(BENCHMARK_WINDOW);
            let tm = cfg.tensormap_pool;
            cfg = cfg.with_window(w);
            cfg.tensormap_pool = cfg.tensormap_pool.max(tm);
        }
        // Ring sizes the schedule gives override those the window implies.
        let pools = cfg.policies.pools;
        if let Some(n) = pools.tensormap {
            cfg.tensormap_pool = n;
        }
        if let Some(n) = pools.deplist {
            cfg.deplist_pool = n;
        }
        if let Some(n) = pools.ready {
            cfg.ready_queue = n;
        }
        if let Some(n) = pools.heap {
            cfg.heap_arena = n;
        }
        let p = &cfg.policies;
        // The task window and the tensor map's pool are the builder's to check (below).
        if cfg.deplist_pool == 0 {
            return api("deplist_pool must be ≥ 1".into());
        }
        if cfg.ready_queue == 0 {
            return api("ready_queue must be ≥ 1".into());
        }
        if let (Dispatch::RoundRobin(n), TimingSemantics::V9) = (p.dispatch, cfg.arch.timing) {
            if n > MAX_STREAMS {
                return api(format!(
                    "round_robin({n}) asks {} for {n} workers; it models at most {MAX_STREAMS}",
                    cfg.arch.name
                ));
            }
        }
        // A loaded model has at most `MAX_CORES` (checked with the file); one built by hand
        // may not.
        const _: () = assert!(wsp_arch::MAX_CORES < NO_CORE as u32);
        if let Some((c, n)) = cfg
            .arch
            .cores
            .iter()
            .find(|(_, n)| **n > wsp_arch::MAX_CORES)
        {
            return api(format!(
                "the model has {n} {c} cores; the runtime models at most {}",
                wsp_arch::MAX_CORES
            ));
        }
        // What a loaded model and the policy parser guarantee, for values built by hand.
        if cfg.arch.cores.values().all(|n| *n == 0) {
            return api("the architecture model has no cores".into());
        }
        let o = cfg.arch.overheads;
        let most = [o.dispatch, o.complete, o.resolve, o.channel_latency];
        if let Some(v) = most.iter().find(|v| **v > wsp_arch::MAX_OVERHEAD) {
            return api(format!(
                "the model's overheads are at most {} cycles (2^40) each; found {v}",
                wsp_arch::MAX_OVERHEAD
            ));
        }
        if p.dispatch == Dispatch::RoundRobin(0) {
            return api("round_robin(n) needs n ≥ 1".into());
        }
        // The builder checks the window, the pool and the streams (at most `MAX_STREAMS`)
        // before anything sized by them, v9's workers included, is allocated.
        let streams = p.streams.map(|s| s.0 as usize).unwrap_or(0);
        let build = Builder::new(p.task_window, cfg.tensormap_pool, streams)?;
        let window = p.task_window as u64;
        let classes = cfg
            .arch
            .cores
            .iter()
            .map(|(c, n)| ClassState {
                class: *c,
                cores: (0..*n)
                    .map(|_| Core {
                        free_at: 0,
                        busy: 0,
                        tasks: 0,
                        queue: ReadyQ::new(p.ready),
                    })
                    .collect(),
                idle: *n,
                idle_bits: (0..(*n as usize).div_ceil(64))
                    .map(|w| {
                        let left = *n as usize - 64 * w;
                        if left >= 64 {
                            u64::MAX
                        } else {
                            (1u64 << left) - 1
                        }
                    })
                    .collect(),
                own_bits: vec![0; (*n as usize).div_ceil(64)],
                shared: ReadyQ::new(p.ready),
                queued: 0,
                overflow: VecDeque::new(),
                emitted: 0,
            })
            .collect();
        // v9 workers: `round_robin(n)` has n; other dispatches use `streams(n)`, else
        // PTO-WSP's cpu_sim default of 4 workers. Only v9 reads them (an event-timed
        // `round_robin(n)` goes round the class's cores, whatever `n`).
        let v9n = match (cfg.arch.timing, p.dispatch, p.streams) {
            (TimingSemantics::Event, ..) => 1,
            (_, Dispatch::RoundRobin(n), _) => n as usize,
            (_, _, Some(s)) => s.0 as usize,
            _ => V9_DEFAULT_WORKERS,
        }
        .max(1);
        let mut rings = [RingStat::default(); 5];
        rings[0].cap = declared;
        rings[1].cap = cfg.tensormap_pool as u64;
        rings[2].cap = cfg.deplist_pool as u64;
        rings[3].cap = cfg.heap_arena;
        rings[4].cap = cfg.ready_queue as u64;
        Ok(Runtime {
            window,
            ring: vec![Slot::EMPTY; window.next_power_of_two() as usize],
            ring_mask: window.next_power_of_two() - 1,
            keys: if p.ready == ReadyOrder::Priority {
                vec![0; window.next_power_of_two() as usize]
            } else {
                Vec::new()
            },
            chan_after: Vec::new(),
            scope_of: Vec::new(),
            // Room for a window of tasks with a rank-2 argument and a coordinate or two each
            // (allocated at the first task; a run with larger records grows it).
            exec: ExecRing::new(16 * window.next_power_of_two() as usize),
            exec_at: if cfg.execute {
                vec![0; window.next_power_of_two() as usize]
            } else {
                Vec::new()
            },
            raw_args: Vec::new(),
            deferred: 0,
            build,
            bufs: Vec::new(),
            edges: Chunked::new(),
            edge_free: NIL,
            classes,
            kernels: Vec::new(),
            next_seq: 0,
            head: 0,
            events: Events::default(),
            dispatch_due: 0,
            trace_tasks: cfg.record && cfg.arch.timing == TimingSemantics::Event,
            now: 0,
            ready_stamp: 0,
            rings,
            arena_used: 0,
            pending_free: VecDeque::new(),
            scopes: Vec::new(),
            scope_ids: 0,
            batch: Vec::new(),
            since_yield: 0,
            v9: V9Clock::new(v9n, window as usize),
            order: Ordering::new(cfg.record),
            released: Vec::new(),
            total_edges: 0,
            makespan: 0,
            horizon: 0,
            deps: Vec::new(),
            io_cache: [None; IO_CACHE],
            exec_free: Vec::new(),
            channels: Vec::new(),
            procs: Vec::new(),
            runnable: IdSet::default(),
            woken: Vec::new(),
            pool: None,
            failed_inline: None,
            last_kernel_failure: None,
            started: Vec::new(),
            trace: Vec::new(),
            graph_nodes: Vec::new(),
            graph_edges: Vec::new(),
            recorded: graph::DepRecorder::default(),
            last_deadlock: None,
            last_limit: None,
            cfg,
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Registers a kernel of a core class. A class the model lacks runs on the model's matmul
    /// class (cube) or vector cores (aicpu).
    /// The cores of the class kernel `k` runs on (0 for an unknown kernel): a task's
    /// [`TaskDesc::place`] is below it.
    pub fn kernel_cores(&self, k: KernelId) -> u32 {
        self.kernels
            .get(k.0 as usize)
            .map_or(0, |e| self.classes[e.ci].cores.len() as u32)
    }

    pub fn register_kernel(
        &mut self,
        name: &str,
        class: CoreClass,
        body: Arc<dyn Kernel>,
    ) -> KernelId {
        let arch = &self.cfg.arch;
        let class = if arch.core_count(class) > 0 {
            class
        } else if class == CoreClass::Cube {
            arch.matmul_class
        } else if arch.core_count(CoreClass::Vector) > 0 {
            CoreClass::Vector
        } else {
            CoreClass::Cube
        };
        // A model built by hand may lack the class chosen: any class with cores takes it.
        let class = if arch.core_count(class) > 0 {
            class
        } else {
            let with_cores = arch.cores.iter().find(|(_, n)| **n > 0);
            with_cores.map_or(class, |(c, _)| *c)
        };
        let ci = class_index(&self.classes, class);
        self.kernels.push(KernelEntry {
            name: name.to_string(),
            class,
            ci,
            body,
            est_ns: u64::MAX,
            offload: false,
            sampled: 0,
            io_last: None,
        });
        KernelId(self.kernels.len() as u32 - 1)
    }

    /// Adds a tensor of `dims` elements of `elem_size` bytes, zero-filled (no buffer in
    /// timing-only mode).
    pub fn add_tensor(&mut self, elem_size: u64, dims: &[i64]) -> Result<TensorId, RuntimeError> {
        self.add_tensor_data(elem_size, dims, None)
    }

    /// Adds a tensor with initial contents (row-major bytes).
    pub fn add_tensor_data(
        &mut self,
        elem_size: u64,
        dims: &[i64],
        data: Option<Vec<u8>>,
    ) -> Result<TensorId, RuntimeError> {
        let bytes = Builder::tensor_bytes(elem_size, dims)?;
        let buf = if let Some(d) = data {
            if d.len() as u64 != bytes {
                return api(format!(
                    "tensor of {dims:?} × {elem_size} bytes needs {bytes} bytes of data, got {}",
                    d.len()
                ));
            }
            d
        } else if self.cfg.execute {
            // An error, not an abort in the allocator, when it cannot be had.
            let n = usize::try_from(bytes).unwrap_or(usize::MAX);
            let Some(v) = zeroed_bytes(n) else {
                return api(format!(
                    "tensor of {dims:?} × {elem_size} bytes: {bytes} bytes cannot be allocated"
                ));
            };
            v
        } else {
            Vec::new()
        };
        let id = self.build.add_tensor(elem_size, dims)?;
        let i = id.0 as usize;
        if self.bufs.len() <= i {
            self.bufs.resize_with(i + 1, Vec::new);
        }
        self.bufs[i] = buf;
        Ok(id)
    }

    /// The bytes of a tensor: after [`Runtime::finish`] (or [`Runtime::wait_tensor`]) its
    /// final contents. Kernels still on the host thread pool finish first, so no thread
    /// writes the buffer while it is borrowed; kernels not yet dispatched have not run.
    pub fn tensor_bytes(&mut self, t: TensorId) -> Option<&[u8]> {
        self.build.tensor(t)?;
        self.drain_pool();
        self.bufs.get(t.0 as usize).map(|b| &b[..])
    }

    /// Moves a tensor's bytes out of the runtime once the run has finished (its buffer is
    /// left empty), so that whoever reads the results back never holds them twice.
    pub fn take_tensor_bytes(&mut self, t: TensorId) -> Option<Vec<u8>> {
        self.build.tensor(t)?;
        self.drain_pool();
        self.bufs.get_mut(t.0 as usize).map(std::mem::take)
    }

    /// Allocates an intermediate from the heap arena for the tasks of the enclosing scope; it
    /// is released when that scope has ended and all of its tasks have retired. Stalls while
    /// the arena is full.
    pub fn alloc_tensor(&mut self, elem_size: u64, dims: &[i64]) -> Result<TensorId, RuntimeError> {
        let bytes = dims
            .iter()
            .try_fold(elem_size, |a, d| a.checked_mul((*d).max(0) as u64))
            .ok_or_else(|| RuntimeError::Api(format!("tensor of {dims:?} is too large")))?;
        if self.scopes.is_empty() {
            return api("alloc_tensor needs an open scope (call scope_begin first)".into());
        }
        if bytes > self.cfg.heap_arena {
            return Err(self.deadlock(
                StallReason::HeapArenaFull,
                format!(
                    "raise heap_arena to at least {bytes} bytes (one allocation needs {bytes}, the arena holds {})",
                    self.cfg.heap_arena
                ),
            ));
        }
        let t0 = self.now;
        let mut stalled = false;
        while self.arena_used + bytes > self.cfg.heap_arena {
            self.release_arena();
            if self.arena_used + bytes <= self.cfg.heap_arena {
                break;
            }
            stalled = true;
            // The submitter waits: a batch it holds is issued (as every stall does).
            self.flush_batch();
            if !self.advance()? {
                let held = self.arena_used;
                return Err(self.deadlock(
                    StallReason::HeapArenaFull,
                    format!(
                        "raise heap_arena to at least {} bytes ({held} held by open scopes + {bytes} requested), or end the scope before allocating more",
                        held + bytes
                    ),
                ));
            }
        }
        if stalled {
            self.note_stall(3, t0);
        }
        let id = self.add_tensor(elem_size, dims)?;
        self.arena_used += bytes;
        self.rings[3].set(self.arena_used);
        if let Some(s) = self.scopes.last_mut() {
            s.allocs.push((id.0, bytes));
        }
        Ok(id)
    }

    fn release_arena(&mut self) {
        while let Some(&(seq, t, bytes)) = self.pending_free.front() {
            if seq > self.head {
                break;
            }
            self.pending_free.pop_front();
            self.arena_used -= bytes;
            if let Some(b) = self.bufs.get_mut(t as usize) {
                *b = Vec::new();
            }
            self.build.free_tensor(t);
        }
        self.rings[3].set(self.arena_used);
    }

    /// Opens a scope whose tasks stay in the window (held, as PTO-WSP's orchestration scopes
    /// hold their outputs) until it ends.
    pub fn scope_begin(&mut self) {
        if self.scope_of.is_empty() {
            self.scope_of = vec![0; self.ring.len()];
        }
        self.open_scope(true);
    }

    /// Opens a scope that bounds the lifetime of its allocations ([`Runtime::alloc_tensor`])
    /// alone: its tasks retire as they complete, and what it allocated is freed once the
    /// scope has ended and every task submitted before its end has retired (a workload
    /// block's local tensor).
    pub fn alloc_scope_begin(&mut self) {
        self.open_scope(false);
    }

    fn open_scope(&mut self, hold: bool) {
        self.scope_ids += 1;
        self.scopes.push(Scope {
            id: self.scope_ids,
            tasks: 0,
            allocs: Vec::new(),
            hold,
        });
    }

    /// Ends the innermost scope: its tasks become reclaimable once done; its allocations take
    /// no new task (a submission naming one is an error) and are freed once every task
    /// submitted so far has retired.
    pub fn scope_end(&mut self) -> Result<(), RuntimeError> {
        let Some(s) = self.scopes.pop() else {
            return api("scope_end without a matching scope_begin".into());
        };
        for seq in (self.head..self.next_seq).filter(|_| s.hold) {
            let i = (seq & self.ring_mask) as usize;
            if self.scope_of.get(i) == Some(&s.id) {
                self.ring[i].flags &= !HELD;
            }
        }
        for (t, b) in s.allocs {
            // Only the tasks submitted so far may use it: it is freed once they retire.
            self.build.close_tensor(t);
            self.pending_free.push_back((self.next_seq, t, b));
        }
        self.retire();
        Ok(())
    }

    // ---------------------------------------------------------------- program order

    /// Opens a structural group of the orchestration (a `P` or `P.seq` loop, a block, the
    /// parts of a `sequential` or `combine`). The `pto_wsp_v9` clock times by program
    /// structure; the event simulation follows data edges plus the order of `Seq` groups:
    /// each step's tasks start after the earlier steps' tasks have completed (`order.rs`).
    pub fn order_begin(&mut self, order: Order) {
        self.v9.begin(order);
        self.order.begin(order, self.next_seq);
    }

    /// The next member of the innermost group (a loop iteration, a `sequential` part).
    pub fn order_step(&mut self) {
        self.v9.step();
        let (ring, mask) = (&self.ring, self.ring_mask);
        self.order.step(
            self.next_seq,
            self.head,
            |s| ring[(s & mask) as usize].state.pending(),
            |s| (s & mask) as usize,
            ring.len(),
        );
    }

    /// Closes the innermost group.
    pub fn order_end(&mut self) -> Result<(), RuntimeError> {
        if self.v9.end() && self.order.end() {
            Ok(())
        } else {
            api("order_end without a matching order_begin".into())
        }
    }

    /// How many structural groups are open.
    pub fn order_depth(&self) -> usize {
        self.v9.depth()
    }

    // ---------------------------------------------------------------- submission

    /// Submits a task from the main orchestration.
    pub fn submit(&mut self, t: &TaskDesc<'_>) -> Result<TaskId, RuntimeError> {
        self.submit_from(t, NIL)
    }

    fn slot(&self, seq: u64) -> &Slot {
        &self.ring[(seq & self.ring_mask) as usize]
    }

    fn slot_mut(&mut self, seq: u64) -> &mut Slot {
        &mut self.ring[(seq & self.ring_mask) as usize]
    }

    fn is_live(&self, seq: u64) -> bool {
        seq >= self.head && seq < self.next_seq && self.slot(seq).state != State::Done
    }

    /// The in-flight task whose sequence number ends in `low`.
    #[inline]
    fn seq_of(&self, low: u32) -> u64 {
        self.head + low.wrapping_sub(self.head as u32) as u64
    }

    /// A task's name in traces: its kernel and coordinates, `k[1, 2]`.
    fn task_name(&self, kernel: u32, coords: &[i64]) -> String {
        format!("{}{coords:?}", self.kernels[kernel as usize].name)
    }

    /// Counts a stall of `ring` that began at `t0` (inline: a full window stalls most
    /// submissions of a long run; the trace event is out of line).
    #[inline]
    fn note_stall(&mut self, ring: usize, t0: u64) {
        self.rings[ring].stalls += 1;
        self.rings[ring].stalled += self.now - t0;
        if self.cfg.record && self.now > t0 && self.cfg.arch.timing == TimingSemantics::Event {
            self.trace_stall(ring, t0);
        }
    }

    #[cold]
    fn trace_stall(&mut self, ring: usize, t0: u64) {
        let r = StallReason::RINGS[ring];
        self.trace.push(TraceEvent {
            name: r.code().to_string(),
            lane: "orchestrator".into(),
            start: t0,
            dur: self.now - t0,
            cat: "stall",
            args: None,
        });
    }

    /// The in-flight tasks the prepared task depends on into `self.deps`, as the low 32 bits
    /// of their sequence numbers, in submission order without repeats: the builder's
    /// candidates that have not completed.
    fn collect_preds(&mut self) {
        let mut deps = std::mem::take(&mut self.deps);
        deps.clear();
        let (ring, mask) = (&self.ring, self.ring_mask);
        deps.extend(
            self.build
                .candidates()
                .iter()
                .filter(|&&task| ring[(task as u64 & mask) as usize].state.pending()),
        );
        // Age order: distance from the ring's head (sequence numbers in flight differ by
        // less than 2^32).
        let h = self.head as u32;
        match deps[..] {
            [] | [_] => {}
            // Two (a wavefront's cell after its neighbours) without the general sort's call.
            [a, b] => {
                if a == b {
                    deps.pop();
                } else if a.wrapping_sub(h) > b.wrapping_sub(h) {
                    deps.swap(0, 1);
                }
            }
            _ => {
                deps.sort_unstable_by_key(|d| d.wrapping_sub(h));
                deps.dedup();
            }
        }
        self.deps = deps;
    }

    /// Entries the tasks from the head on hold: the tensor map's use.
    fn entries_held(&self) -> u64 {
        self.build.entries_from(self.head)
    }

    fn edges_free(&self) -> u64 {
        self.cfg.deplist_pool as u64 - self.rings[2].used
    }

    fn submit_from(&mut self, t: &TaskDesc<'_>, proc: u32) -> Result<TaskId, RuntimeError> {
        if self.next_seq >= self.cfg.max_tasks {
            return Err(self.limit("tasks", self.cfg.max_tasks));
        }
        // The orchestration thread spends the model's `submit` cycles on each task it submits
        // (the cores run meanwhile): a task is submitted no sooner. Processes step on the
        // event clock and are not charged.
        let cost = self.cfg.arch.overheads.submit;
        if cost > 0 && proc == NIL && self.cfg.arch.timing == TimingSemantics::Event {
            self.advance_to(self.now.saturating_add(cost))?;
        }
        if t.kernel.0 as usize >= self.kernels.len() {
            return api(format!("unknown kernel id {}", t.kernel.0));
        }
        if let Some(c) = t.place {
            let k = &self.kernels[t.kernel.0 as usize];
            let n = self.classes[k.ci].cores.len();
            if c as usize >= n {
                return api(format!(
                    "a task of `{}` is placed on {} core {c}, but {} has {n} {} cores",
                    k.name, k.class, self.cfg.arch.name, k.class
                ));
            }
        }
        let Prepared {
            entries: need_m,
            in_bytes,
            out_bytes,
        } = self.build.prepare(t.args, t.stream)?;
        if need_m > self.cfg.tensormap_pool as u64 {
            return Err(self.deadlock(
                StallReason::TensormapPoolFull,
                format!(
                    "raise tensormap_pool to at least {need_m} (one task's {} region arguments need {need_m} entries)",
                    t.args.len(),
                ),
            ));
        }
        let seq = self.next_seq;
        // 1. A slot in the task ring.
        if seq - self.head >= self.window {
            let t0 = self.now;
            self.flush_batch();
            if self.cfg.policies.window_mode == WindowMode::Abort
                && self.cfg.arch.timing == TimingSemantics::Event
            {
                // What completes at this cycle frees its slot first.
                self.advance_to(self.now)?;
                if seq - self.head >= self.window {
                    return Err(RuntimeError::WindowFull {
                        window: self.window,
                        task: seq,
                        cycle: self.now,
                    });
                }
            }
            if !self.advance_while(|rt| seq - rt.head >= rt.window)? {
                // Open scopes hold every task submitted in them (nested ones too) until they
                // end: the window must take them all, twice over to keep the cores busy.
                let held = self.held_tasks();
                let m = match self.scopes.len() {
                    n if n > 0 && held >= self.window => format!(
                        "raise task_window to at least {} (2 × the {held} tasks {} holds), or end {} sooner",
                        2 * held.max(1),
                        if n == 1 { "the open scope".to_string() } else { format!("the {n} open scopes") },
                        if n == 1 { "the scope" } else { "a scope" },
                    ),
                    _ => format!("raise task_window above {}", self.window),
                };
                return Err(self.deadlock(StallReason::TaskRingFull, m));
            }
            self.note_stall(0, t0);
        }
        let kernel = t.kernel.0;
        let class = self.kernels[kernel as usize].class;
        let key = t.key;
        // 2. Room for the edges and the tensor-map entries.
        let mut held;
        let mut order_edge: Option<u32>;
        let mut wait;
        let preds = loop {
            self.collect_preds();
            // A `P.seq` step's single task still in flight: an edge like a data edge (kept apart
            // for the graph and the edge count when no data edge already orders them).
            let (ring, mask) = (&self.ring, self.ring_mask);
            wait = self
                .order
                .wait(|s| ring[(s & mask) as usize].state.pending());
            order_edge = match wait {
                OrderWait::Task(p) if !self.deps.contains(&(p as u32)) => {
                    self.deps.push(p as u32);
                    Some(p as u32)
                }
                _ => None,
            };
            // Edges go only to predecessors still pending, so the need falls as they
            // complete: more than the whole pool is a stall too.
            let need_e = self.deps.len() as u64;
            if self.edges_free() < need_e {
                let t0 = self.now;
                self.flush_batch();
                if !self.advance()? {
                    let pool = self.cfg.deplist_pool;
                    let m = if need_e > pool as u64 {
                        format!(
                            "raise deplist_pool to at least {need_e} (one task depends on {need_e} in-flight tasks)"
                        )
                    } else {
                        format!(
                            "raise deplist_pool above {pool} (edges to in-flight tasks exhaust it)"
                        )
                    };
                    return Err(self.deadlock(StallReason::DeplistPoolFull, m));
                }
                self.note_stall(2, t0);
                continue;
            }
            held = self.entries_held();
            if (self.cfg.tensormap_pool as u64).saturating_sub(held) < need_m {
                let t0 = self.now;
                self.flush_batch();
                if !self.advance()? {
                    let m = format!(
                        "raise tensormap_pool above {} (regions of in-flight tasks exhaust it)",
                        self.cfg.tensormap_pool
                    );
                    return Err(self.deadlock(StallReason::TensormapPoolFull, m));
                }
                self.note_stall(1, t0);
                continue;
            }
            if self.deps.is_empty() && !matches!(wait, OrderWait::Gate(_)) {
                let ci = self.kernels[kernel as usize].ci;
                if self.classes[ci].queued >= self.cfg.ready_queue {
                    let t0 = self.now;
                    if !self.advance()? {
                        let m = format!("raise ready_queue above {}", self.cfg.ready_queue);
                        return Err(self.deadlock(StallReason::ReadyQueueFull, m));
                    }
                    self.note_stall(4, t0);
                    continue;
                }
            }
            break std::mem::take(&mut self.deps);
        };
        // 3. Fill the slot.
        let io_cycles = match self.kernels[kernel as usize].io_last {
            Some((i, o, v)) if i == in_bytes && o == out_bytes => v,
            _ => {
                let v = self.io_cycles(class, in_bytes, out_bytes)?;
                self.kernels[kernel as usize].io_last = Some((in_bytes, out_bytes, v));
                v
            }
        };
        // Before anything is recorded: a task refused here leaves no trace.
        let dur = t.cycles.saturating_add(io_cycles);
        if dur > MAX_TASK_CYCLES {
            return api(format!(
                "the model prices this task at {dur} cycles ({} compute, {io_cycles} transfer), \
                 above the runtime's {MAX_TASK_CYCLES} (2^48): check the architecture model's costs",
                t.cycles
            ));
        }
        // The kernel runs at once when every earlier task's has run and none is on the pool:
        // submission order is a dependency order. Otherwise it waits for its dispatch.
        let eager = !self.exec_at.is_empty() && self.runs_at_submission(kernel as usize);
        let exec = if self.exec_at.is_empty() || eager {
            self.exec.end()
        } else {
            self.deferred += 1;
            self.exec.push(t.coords, t.scalars, t.args)
        };
        if let Some(s) = self.scopes.last_mut() {
            s.tasks += 1;
        }
        // Held by the innermost scope that holds its tasks.
        let scope = self
            .scopes
            .iter()
            .rev()
            .find(|s| s.hold)
            .map_or(0, |s| s.id);
        // A task of a `P.seq` step waits for the steps before it (a gate of several tasks; one
        // task is an edge in `preds`).
        let gate = match wait {
            OrderWait::Gate(g) => Some(g),
            _ => None,
        };
        let npreds = preds.len() as u32 + gate.is_some() as u32;
        let si = (seq & self.ring_mask) as usize;
        // The pool has room: `held` counted every entry the builder holds.
        self.build.commit(t.args, t.stream)?;
        self.ring[si] = Slot {
            dur: [dur as u32, (dur >> 32) as u32],
            preds_left: npreds,
            succ: NIL,
            kernel,
            core: NO_CORE,
            state: State::Waiting,
            flags: if scope != 0 { HELD } else { 0 } | if eager { RAN } else { 0 },
        };
        if let Some(k) = self.keys.get_mut(si) {
            *k = t.priority;
        }
        if let Some(c) = self.chan_after.get_mut(si) {
            *c = NIL;
        }
        if let Some(c) = self.scope_of.get_mut(si) {
            *c = scope;
        }
        if let Some(x) = self.exec_at.get_mut(si) {
            *x = exec;
        }
        self.next_seq += 1;
        self.rings[0].set(self.next_seq - self.head);
        if let Some(g) = gate {
            self.order.wait_gate(g, seq);
        }
        if eager {
            self.run_now(seq, kernel as usize, t);
        }
        let low = seq as u32;
        for &p in &preds {
            let ps = &mut self.ring[(p as u64 & self.ring_mask) as usize];
            let e = Edge {
                succ: low,
                next: ps.succ,
            };
            let id = if self.edge_free != NIL {
                let id = self.edge_free;
                self.edge_free = self.edges.get(id).next;
                *self.edges.get_mut(id) = e;
                id
            } else {
                self.edges.push(e)
            };
            ps.succ = id;
            if self.cfg.record && order_edge != Some(p) {
                let p = self.seq_of(p);
                self.graph_edges.push((p, seq));
            }
        }
        if order_edge.is_some() {
            self.order.waited_task(seq);
        }
        self.total_edges += preds.len() as u64 - order_edge.is_some() as u64;
        let used = self.rings[2].used + preds.len() as u64;
        self.rings[2].set(used);
        self.deps = preds;
        // The task's entries are the pool's newest.
        debug_assert_eq!(self.entries_held(), held + need_m);
        self.rings[1].set(held + need_m);
        // Dispatch assignment for fixed policies, in emission order.
        let ci = self.kernels[kernel as usize].ci;
        let ncores = self.classes[ci].cores.len() as u64;
        // A placed task's core is fixed (checked above); the others follow the policy.
        let core = match (t.place, self.cfg.policies.dispatch) {
            (Some(c), _) => c as u16,
            (None, Dispatch::RoundRobin(n)) => {
                (self.classes[ci].emitted % (n as u64).min(ncores)) as u16
            }
            (None, Dispatch::Affinity) => key.rem_euclid(ncores as i64) as u16,
            (None, Dispatch::Hash) => (mix(key) % ncores) as u16,
            (None, Dispatch::WorkSteal) => NO_CORE,
        };
        self.classes[ci].emitted += 1;
        self.slot_mut(seq).core = core;
        // v9 clocks: in-order issue over program structure, no data edges.
        let v9 = self.cfg.arch.timing == TimingSemantics::V9;
        // (worker, or the process when `proc` is one; v9 end; v9 window stall)
        let span = if let Some(p) = self.procs.get_mut(proc as usize) {
            p.v9_clock += t.cycles;
            p.v9_load.0 += 1;
            p.v9_load.1 += t.cycles;
            (None, p.v9_clock, None)
        } else if v9 {
            let n = self.v9.workers() as u64;
            let w = match self.cfg.policies.dispatch {
                Dispatch::Affinity => key.rem_euclid(n as i64) as usize,
                Dispatch::Hash => (mix(key) % n) as usize,
                _ => self.v9.next_round_robin(),
            };
            let (end, stall) = self.v9.task(w, t.cycles);
            (Some(w), end, stall)
        } else {
            (None, 0, None)
        };
        // Under v9 the window is v9's: an abort window stops at v9's first window stall.
        if let (true, WindowMode::Abort, Some((start, _))) =
            (v9, self.cfg.policies.window_mode, span.2)
        {
            return Err(RuntimeError::WindowFull {
                window: self.window,
                task: seq,
                cycle: start,
            });
        }
        // Under v9 the limit is on v9's clocks (the event clock is not its time).
        if v9 && span.1 > self.cfg.max_cycles {
            return Err(self.limit("cycles", self.cfg.max_cycles));
        }
        if self.cfg.record && v9 {
            // Under v9 the trace shows v9's time: each task on its worker's (or process's)
            // lane, as `total_cycles` counts it, and the window's stalls (the one ring v9
            // models) on the orchestrator's, as the statistics count them.
            if let Some((start, dur)) = span.2 {
                self.trace.push(TraceEvent {
                    name: StallReason::TaskRingFull.code().to_string(),
                    lane: "orchestrator".into(),
                    start,
                    dur,
                    cat: "stall",
                    args: None,
                });
            }
            let lane = match (span.0, self.procs.get(proc as usize)) {
                (Some(w), _) => format!("v9_worker{w:03}"),
                (None, Some(p)) => format!("v9_process {}", p.name),
                (None, None) => String::new(),
            };
            self.trace.push(TraceEvent {
                name: self.task_name(kernel, t.coords),
                lane,
                start: span.1 - t.cycles,
                dur: t.cycles,
                cat: "task",
                args: Some(self.task_args(kernel, t.coords)),
            });
        }
        if self.cfg.record {
            self.graph_nodes.push((seq, kernel, Token::new(t.coords)));
            self.recorded.record(seq, t.args);
        }
        // Issue per the timing policy.
        match self.cfg.policies.timing {
            Timing::Batched(n) => {
                self.batch.push(seq);
                if self.batch.len() as u32 >= n {
                    self.flush_batch();
                }
            }
            _ => self.issue(seq),
        }
        self.since_yield += 1;
        match self.cfg.policies.timing {
            // The n-th task is issued with the n − 1 before it: it may start now, and only
            // the next task waits for the clock.
            Timing::Interleaved(n) if self.since_yield >= n => {
                self.since_yield = 0;
                self.dispatch();
                let t = self.now + self.cfg.arch.overheads.dispatch.max(1);
                self.advance_to(t)?;
            }
            Timing::RateLimit(n) if self.since_yield >= n => {
                self.since_yield = 0;
                self.dispatch();
                let t = self.now + 1000;
                self.advance_to(t)?;
            }
            _ => {}
        }
        self.dispatch();
        Ok(TaskId(seq))
    }

    /// The model's transfer cycles, through a small direct-mapped cache (a pure function).
    fn io_cycles(&mut self, class: CoreClass, i: u64, o: u64) -> Result<u64, RuntimeError> {
        let h = (mix((i ^ o.rotate_left(29)) as i64) as usize) & (IO_CACHE - 1);
        if let Some((c, ci, co, v)) = self.io_cache[h] {
            if c == class && ci == i && co == o {
                return Ok(v);
            }
        }
        let v = self
            .cfg
            .arch
            .task_io_cycles(class, i, o)
            .map_err(|e| RuntimeError::Api(e.0))?;
        self.io_cache[h] = Some((class, i, o, v));
        Ok(v)
    }

    fn held_tasks(&self) -> u64 {
        (self.head..self.next_seq)
            .filter(|s| self.slot(*s).flags & HELD != 0)
            .count() as u64
    }

    /// Issues the tasks a `batched` timing holds (inline: without one, the batch is empty).
    #[inline]
    fn flush_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let b = std::mem::take(&mut self.batch);
        for seq in &b {
            self.issue(*seq);
        }
        self.batch = b;
        self.batch.clear();
    }

    fn issue(&mut self, seq: u64) {
        let s = self.slot_mut(seq);
        s.flags |= ISSUED;
        if s.preds_left == 0 && s.state == State::Waiting {
            self.make_ready(seq);
        }
    }

    fn make_ready(&mut self, seq: u64) {
        let s = &mut self.ring[(seq & self.ring_mask) as usize];
        s.state = State::Ready;
        let (kernel, core) = (s.kernel, s.core);
        let ci = self.kernels[kernel as usize].ci;
        if self.classes[ci].queued >= self.cfg.ready_queue {
            self.classes[ci].overflow.push_back(seq);
            self.rings[4].stalls += 1;
            return;
        }
        self.enqueue(ci, seq, core);
    }

    fn enqueue(&mut self, ci: usize, seq: u64, core: u16) {
        let c = &mut self.classes[ci];
        // `NO_CORE` is no core's index (classes have fewer cores): the shared queue.
        let q = match c.cores.get_mut(core as usize) {
            Some(cr) => {
                c.own_bits[core as usize / 64] |= 1 << (core % 64);
                &mut cr.queue
            }
            None => &mut c.shared,
        };
        match q {
            ReadyQ::Fifo(q) => q.push_back(seq),
            ReadyQ::Lifo(q) => q.push(seq),
            ReadyQ::Heap(q) => {
                // The policy key is kept only for `priority`, the one order that reads it.
                let key = self
                    .keys
                    .get((seq & self.ring_mask) as usize)
                    .copied()
                    .unwrap_or(0);
                self.ready_stamp += 1;
                q.push(Reverse((key.saturating_neg(), self.ready_stamp, seq)));
            }
        }
        c.queued += 1;
        // A dispatch can start something only if the class has an idle core.
        self.dispatch_due |= ((c.idle > 0) as u64) << ci;
        // The ring's use is the fullest class's queue (worked out when reported).
        let r = &mut self.rings[4];
        r.hw = r.hw.max(c.queued as u64);
    }

    #[inline(always)]
    fn push_event(&mut self, t: u64, ev: Ev) {
        self.events.push(t, ev);
    }

    /// Starts ready tasks on idle cores at the current time. Called after every step that
    /// might have made work, so the nothing-to-do case is a flag test in the caller.
    #[inline(always)]
    fn dispatch(&mut self) {
        if self.dispatch_due != 0 {
            self.dispatch_now();
        }
    }

    #[inline(never)]
    fn dispatch_now(&mut self) {
        self.started.clear();
        self.dispatch_into();
        if self.started.is_empty() {
            return;
        }
        let started = std::mem::take(&mut self.started);
        // With a pool: a lone task with an idle pool, or a task whose kernel is too short to
        // pay for a round trip, runs on this thread; the others run on the pool in parallel.
        let lone = started.len() == 1 && self.pool.as_ref().is_some_and(|p| p.in_flight == 0);
        for &seq in &started {
            let k = self.slot(seq).kernel as usize;
            // Unmeasured kernels run here first (timed), so cheap kernels never pay for
            // the pool; its threads start with the first kernel worth offloading.
            let inline = lone || !self.kernels[k].offload;
            self.start_exec(seq, inline);
        }
        self.started = started;
    }

    /// Starts what can start now in the classes due; tasks whose kernels wait for their
    /// dispatch go to `self.started`.
    fn dispatch_into(&mut self) {
        let now = self.now;
        let disp = self.cfg.arch.overheads.dispatch;
        let steal = self.cfg.policies.dispatch == Dispatch::WorkSteal;
        let defer = self.deferred > 0;
        // In class order. A class queued into while it is visited is due again: it is cleared
        // when it has nothing more to start.
        while self.dispatch_due != 0 {
            let ci = self.dispatch_due.trailing_zeros() as usize;
            let mut from = 0usize;
            loop {
                let c = &mut self.classes[ci];
                if c.queued == 0 || c.idle == 0 {
                    break;
                }
                // Fixed dispatch (and placed tasks, under any policy) queues each task on its
                // core's own queue: the idle cores with tasks, in index order from the last
                // taken. Work stealing queues the other tasks on the shared queue: the lowest
                // idle core takes the next.
                let mut k = usize::MAX;
                let mut w = from / 64;
                while w < c.idle_bits.len() {
                    let mut m = c.idle_bits[w] & c.own_bits[w];
                    if w == from / 64 {
                        m &= u64::MAX << (from % 64);
                    }
                    if m != 0 {
                        k = 64 * w + m.trailing_zeros() as usize;
                        break;
                    }
                    w += 1;
                }
                let (k, seq) = if let Some(q) = c.cores.get_mut(k).map(|cr| &mut cr.queue) {
                    from = k + 1;
                    let Some(seq) = q.pop() else { continue };
                    if q.is_empty() {
                        c.own_bits[k / 64] &= !(1 << (k % 64));
                    }
                    (k, seq)
                } else if steal {
                    let Some(w) = c.idle_bits.iter().position(|&m| m != 0) else {
                        break;
                    };
                    let Some(seq) = c.shared.pop() else { break };
                    (64 * w + c.idle_bits[w].trailing_zeros() as usize, seq)
                } else {
                    break;
                };
                c.queued -= 1;
                if let Some(o) = c.overflow.pop_front() {
                    let core = self.slot(o).core;
                    self.enqueue(ci, o, core);
                }
                let slot = &mut self.ring[(seq & self.ring_mask) as usize];
                let end = now + disp + slot.dur();
                slot.state = State::Running;
                slot.core = k as u16;
                let (kernel, ran) = (slot.kernel, slot.flags & RAN != 0);
                let c = &mut self.classes[ci];
                let core = &mut c.cores[k];
                core.free_at = end;
                core.busy += end - now;
                core.tasks += 1;
                c.idle -= 1;
                c.idle_bits[k / 64] &= !(1 << (k % 64));
                if self.trace_tasks {
                    self.trace_dispatch(seq, kernel, ci, k, end);
                }
                self.push_event(end, Ev::Done(seq));
                if defer && !ran {
                    self.started.push(seq);
                }
            }
            self.dispatch_due &= !(1 << ci);
        }
    }

    /// A task's trace arguments: its kernel and coordinates (out of line: only a recorded run
    /// builds them, and the submission path stays small).
    #[cold]
    #[inline(never)]
    fn task_args(&self, kernel: u32, coords: &[i64]) -> serde_json::Value {
        serde_json::json!({
            "kernel": self.kernels[kernel as usize].name,
            "coords": coords,
        })
    }

    /// The trace of a task dispatched now onto core `k` of class `ci`, ending at `end`; the
    /// model's dispatch overhead is a slice nested at its start, and its arguments name the
    /// kernel, the coordinates and the overheads (the completion ones the runtime charges after
    /// the core is free).
    #[cold]
    fn trace_dispatch(&mut self, seq: u64, kernel: u32, ci: usize, k: usize, end: u64) {
        let coords: Vec<i64> = self
            .graph_nodes
            .get(seq as usize)
            .map_or(Vec::new(), |n| n.2.values().to_vec());
        let name = self.task_name(kernel, &coords);
        let class = self.classes[ci].class;
        let lane = format!("{class}{k:03}");
        let oh = self.cfg.arch.overheads;
        let dispatch = oh.dispatch.min(end - self.now);
        self.trace.push(TraceEvent {
            name: name.clone(),
            lane: lane.clone(),
            start: self.now,
            dur: end - self.now,
            cat: "task",
            args: Some(serde_json::json!({
                "kernel": self.kernels[kernel as usize].name,
                "coords": coords,
                "dispatch_cycles": dispatch,
                "complete_cycles": oh.complete,
                "resolve_cycles": oh.resolve,
            })),
        });
        if dispatch > 0 {
            self.trace.push(TraceEvent {
                name: "dispatch".into(),
                lane,
                start: self.now,
                dur: dispatch,
                cat: "overhead",
                args: Some(serde_json::json!({ "task": name })),
            });
        }
    }

    /// Runs a deferred task's kernel from its record, here or on the pool (out of line: one
    /// thread never defers).
    #[inline(never)]
    fn start_exec(&mut self, seq: u64, inline: bool) {
        let si = (seq & self.ring_mask) as usize;
        let Some(&pos) = self.exec_at.get(si) else {
            return;
        };
        let ki = self.ring[si].kernel as usize;
        // The kernel's view of its arguments, from the task's record.
        let rec = self.exec.record(pos);
        let mut raw = std::mem::take(&mut self.raw_args);
        let mut n = 0;
        for a in rec.args() {
            let t = self
                .build
                .tensor(TensorId(a.tensor))
                .expect("a checked tensor");
            let base = self.bufs[a.tensor as usize].as_mut_ptr();
            if n == raw.len() {
                raw.push(RAW_ARG);
            }
            a.fill(&mut raw[n], base, t.elem_size, &t.dims);
            n += 1;
        }
        let raw_n = &raw[..n];
        if inline || self.cfg.threads <= 1 {
            self.deferred -= 1;
            let ke = &mut self.kernels[ki];
            let failed = &mut self.failed_inline;
            run_inline(
                ke,
                failed,
                self.cfg.threads,
                seq,
                ki,
                rec.coords,
                raw_n,
                rec.scalars,
            );
            self.raw_args = raw;
            return;
        }
        let mut data = self.exec_free.pop().unwrap_or_else(|| {
            Box::new(ExecData {
                coords: Vec::new(),
                args: Vec::new(),
                scalars: Vec::new(),
            })
        });
        data.coords.clear();
        data.coords.extend_from_slice(rec.coords);
        data.scalars.clear();
        data.scalars.extend_from_slice(rec.scalars);
        data.args.clear();
        data.args.extend_from_slice(raw_n);
        self.raw_args = raw;
        let threads = self.cfg.threads;
        let pool = self.pool.get_or_insert_with(|| Pool::new(threads));
        let kernel = Arc::clone(&self.kernels[ki].body);
        if let Some(tx) = &pool.tx {
            if tx.send(Job { seq, kernel, data }).is_ok() {
                pool.in_flight += 1;
                self.ring[si].flags |= ON_POOL;
                return;
            }
        }
        let why = pool
            .spawn_error
            .clone()
            .unwrap_or_else(|| "the host thread pool stopped".into());
        Failure::keep_earliest(&mut pool.failed, seq, || Failure::new(seq, ki, why, &[]));
        self.deferred -= 1;
    }

    /// Whether a task of kernel `ki` runs at its submission: when every earlier task's kernel
    /// has run (none waits for its dispatch or is on the pool) and its own is not one to
    /// offload. On one thread that is always (nothing is timed, so nothing is offloaded), and
    /// one thread and a pool take the same path until a kernel is measured slow.
    #[inline]
    fn runs_at_submission(&self, ki: usize) -> bool {
        self.deferred == 0 && !self.kernels[ki].offload
    }

    /// Runs task `seq`'s kernel (`ki`) at its submission, with its arguments as submitted.
    fn run_now(&mut self, seq: u64, ki: usize, t: &TaskDesc<'_>) {
        let raw = &mut self.raw_args;
        for (n, a) in t.args.iter().enumerate() {
            let r = &a.region;
            let ten = self.build.tensor(r.tensor).expect("a checked tensor");
            if n == raw.len() {
                raw.push(RAW_ARG);
            }
            let x = &mut raw[n];
            x.base = self.bufs[r.tensor.0 as usize].as_mut_ptr();
            x.elem_size = ten.elem_size;
            // A checked region has its tensor's rank.
            x.set_dims(ten.rank, &ten.dims, &r.offsets, &r.extents, &r.strides);
            x.dir = a.dir.code();
        }
        run_inline(
            &mut self.kernels[ki],
            &mut self.failed_inline,
            self.cfg.threads,
            seq,
            ki,
            t.coords,
            &raw[..t.args.len()],
            t.scalars,
        );
    }

    /// Waits until task `seq`'s kernel is not on the pool.
    fn wait_exec(&mut self, seq: u64) {
        while self.ring[(seq & self.ring_mask) as usize].flags & ON_POOL != 0 {
            if !self.recv_pooled() {
                return;
            }
        }
    }

    /// Waits until no kernel is on the pool: no host thread writes a tensor after this.
    fn drain_pool(&mut self) {
        while self.pool.as_ref().is_some_and(|p| p.in_flight > 0) {
            if !self.recv_pooled() {
                return;
            }
        }
    }

    /// Takes the next result of a kernel on the pool (waiting for one). False when there is
    /// no pool or it has stopped.
    fn recv_pooled(&mut self) -> bool {
        let Some(pool) = &mut self.pool else {
            return false;
        };
        let Ok((s, r, data, ns)) = pool.rx.recv() else {
            return false;
        };
        let w = self.ring_mask;
        pool.in_flight -= 1;
        if let Err(m) = r {
            let k = self.ring[(s & w) as usize].kernel as usize;
            Failure::keep_earliest(&mut pool.failed, s, || Failure::new(s, k, m, &data.coords));
        }
        let slot = &mut self.ring[(s & w) as usize];
        slot.flags &= !ON_POOL;
        if let Some(k) = self.kernels.get_mut(slot.kernel as usize) {
            k.measured(ns);
        }
        self.deferred -= 1;
        self.exec_free.push(data);
        true
    }

    /// Processes the earliest batch of events. False when nothing is pending.
    fn advance(&mut self) -> Result<bool, RuntimeError> {
        self.batch_of_events()
    }

    /// Processes batches of events while `more` holds. False when nothing is pending while it
    /// does. (A full window stalls most submissions of a long run: this loop keeps the batches
    /// of such a stall in one call.)
    fn advance_while(&mut self, more: impl Fn(&Self) -> bool) -> Result<bool, RuntimeError> {
        while more(self) {
            if !self.batch_of_events()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// [`Runtime::advance`]'s body, inline in it and in [`Runtime::advance_while`].
    #[inline(always)]
    fn batch_of_events(&mut self) -> Result<bool, RuntimeError> {
        self.dispatch();
        let Some((t, mut ev)) = self.events.pop_due(u64::MAX) else {
            return Ok(false);
        };
        self.now = self.now.max(t);
        let mut done = false;
        let mut seen = false;
        loop {
            match ev {
                Ev::Done(seq) => {
                    seen = true;
                    if self.end_on_core(seq) {
                        // Only the head's completion can let the ring retire (a done task at
                        // the head is held by a scope until it ends, which retires).
                        done |= seq == self.head;
                    }
                }
                Ev::Resolve(seq) => {
                    self.complete(seq);
                    done |= seq == self.head;
                }
                Ev::Token(c) => {
                    seen = true;
                    self.woken.push(c);
                }
            }
            // The rest of the batch: events pushed meanwhile come no earlier than `t`.
            match self.events.pop_due(t) {
                Some((_, e)) => ev = e,
                None => break,
            }
        }
        if seen {
            self.horizon = self.horizon.max(t);
            // Stop at the first batch of core events or tokens past the limit (completion
            // handling alone does not count as time passing).
            if t > self.cfg.max_cycles && self.cfg.arch.timing == TimingSemantics::Event {
                return Err(self.limit("cycles", self.cfg.max_cycles));
            }
        }
        if done {
            self.retire();
        }
        if !self.pending_free.is_empty() {
            self.release_arena();
        }
        if !self.woken.is_empty() {
            self.wake_processes();
        }
        self.dispatch();
        if self.failed_inline.is_some() || self.pool.is_some() {
            self.check_failure()?;
        }
        Ok(true)
    }

    /// Processes events up to time `t`, then sets the clock to `t`.
    fn advance_to(&mut self, t: u64) -> Result<(), RuntimeError> {
        while let Some(te) = self.events.next_time() {
            if te > t {
                break;
            }
            self.advance()?;
        }
        self.now = self.now.max(t);
        self.horizon = self.horizon.max(t);
        if self.now > self.cfg.max_cycles && self.cfg.arch.timing == TimingSemantics::Event {
            return Err(self.limit("cycles", self.cfg.max_cycles));
        }
        self.dispatch();
        Ok(())
    }

    fn check_failure(&mut self) -> Result<(), RuntimeError> {
        let first = |f: &Option<Failure>| f.as_ref().map(|f| f.seq);
        let Some(seq) = [
            first(&self.failed_inline),
            self.pool.as_ref().and_then(|p| first(&p.failed)),
        ]
        .into_iter()
        .flatten()
        .min() else {
            return Ok(());
        };
        // The failure reported is the earliest task's among those that fail, whatever the
        // threads: on one thread every kernel ran at its task's submission, in order. So every
        // kernel on the pool finishes, and every earlier one still waiting for its dispatch
        // runs now, in submission order (a dependency order), before one is chosen.
        self.drain_pool();
        for s in self.head..seq {
            let slot = &mut self.ring[(s & self.ring_mask) as usize];
            if matches!(slot.state, State::Waiting | State::Ready) && slot.flags & RAN == 0 {
                slot.flags |= RAN;
                self.start_exec(s, true);
            }
        }
        let pooled = self.pool.as_mut().and_then(|p| p.failed.take());
        let failed = match (self.failed_inline.take(), pooled) {
            (Some(a), Some(b)) => Some(if a.seq <= b.seq { a } else { b }),
            (a, b) => a.or(b),
        };
        if let Some(f) = failed {
            let e = RuntimeError::Kernel {
                task: f.seq,
                kernel: self.kernels[f.kernel].name.clone(),
                coords: f.coords,
                message: f.message,
            };
            self.last_kernel_failure = Some(Box::new(e.clone()));
            return Err(e);
        }
        Ok(())
    }

    /// Task `seq`'s core finishes it: the core is free at once; the rest of its completion
    /// (successors, tensor map, retirement) waits for the runtime's `complete + resolve`
    /// overheads, or happens now (true) when the model has none.
    fn end_on_core(&mut self, seq: u64) -> bool {
        self.wait_exec(seq);
        let now = self.now;
        let s = self.slot(seq);
        let (kernel, core) = (s.kernel, s.core);
        self.makespan = self.makespan.max(now);
        let ci = self.kernels[kernel as usize].ci;
        let cs = &mut self.classes[ci];
        let (w, bit) = (core as usize / 64, 1u64 << (core % 64));
        if let Some(b) = cs.idle_bits.get_mut(w).filter(|b| **b & bit == 0) {
            *b |= bit;
            cs.idle += 1;
            self.dispatch_due |= ((cs.queued > 0) as u64) << ci;
        }
        let oh = self.cfg.arch.overheads;
        let at = now + oh.complete + oh.resolve;
        if at == now {
            self.complete(seq);
            return true;
        }
        self.push_event(at, Ev::Resolve(seq));
        false
    }

    /// The runtime has handled task `seq`'s completion: its successors with no other
    /// predecessor become ready, and it no longer counts as pending.
    fn complete(&mut self, seq: u64) {
        let si = (seq & self.ring_mask) as usize;
        let mut e = {
            let s = &mut self.ring[si];
            s.state = State::Done;
            std::mem::replace(&mut s.succ, NIL)
        };
        let chan = self.chan_after.get(si).copied().unwrap_or(NIL);
        let mut freed = 0;
        if e != NIL {
            // The whole list goes onto the free list: only its last edge is rewritten.
            let list = e;
            loop {
                let Edge { succ, next } = *self.edges.get(e);
                freed += 1;
                let s = &mut self.ring[(succ as u64 & self.ring_mask) as usize];
                s.preds_left -= 1;
                if s.preds_left == 0 && s.flags & ISSUED != 0 {
                    let succ = self.seq_of(succ);
                    self.make_ready(succ);
                }
                if next == NIL {
                    break;
                }
                e = next;
            }
            self.edges.get_mut(e).next = self.edge_free;
            self.edge_free = list;
        }
        let used = self.rings[2].used - freed;
        self.rings[2].set(used);
        self.order.completed(si, &mut self.released);
        if !self.released.is_empty() {
            let mut released = std::mem::take(&mut self.released);
            for &w in &released {
                let s = self.slot_mut(w);
                s.preds_left -= 1;
                if s.preds_left == 0 && s.flags & ISSUED != 0 {
                    self.make_ready(w);
                }
            }
            released.clear();
            self.released = released;
        }
        if chan != NIL {
            self.token_task_done(chan, seq);
        }
    }

    fn retire(&mut self) {
        let from = self.head;
        while self.head < self.next_seq {
            let s = self.slot(self.head);
            if s.state != State::Done || s.flags & HELD != 0 {
                break;
            }
            self.slot_mut(self.head).state = State::Empty;
            self.head += 1;
        }
        if self.head != from {
            self.build.retire_to(self.head);
            if !self.exec_at.is_empty() {
                // The records of the retired tasks.
                let to = if self.head < self.next_seq {
                    self.exec_at[(self.head & self.ring_mask) as usize]
                } else {
                    self.exec.end()
                };
                self.exec.release_to(to);
            }
        }
        // The window's and the tensor map's use fall: their high-water marks stand, and their
        // use is worked out when reported.
    }

    /// Waits until every task submitted so far that writes tensor `t` has completed (its
    /// results are in [`Runtime::tensor_bytes`]): the orchestration reads data it produced,
    /// e.g. a data-dependent branch. The event clock advances to the last producer's end; the
    /// `pto_wsp_v9` clocks do not move (v9 has no data edges).
    pub fn wait_tensor(&mut self, t: TensorId) -> Result<(), RuntimeError> {
        if self.build.tensor(t).is_none() {
            return api(format!("unknown tensor id {}", t.0));
        }
        self.flush_batch();
        while let Some(w) = self.pending_writer(t) {
            while self.is_live(w) {
                if !self.advance()? {
                    let m = format!(
                        "the orchestration waits for the producers of tensor {}, which cannot run",
                        t.0
                    );
                    return Err(self.deadlock(StallReason::TaskRingFull, m));
                }
            }
        }
        self.check_failure()
    }

    /// Waits until every task submitted so far has completed (a `sequential` boundary: later
    /// tasks start after all earlier ones, with or without shared data). Like
    /// [`Runtime::wait_tensor`], it moves the event clock, not the `pto_wsp_v9` clocks.
    pub fn wait_all(&mut self) -> Result<(), RuntimeError> {
        self.flush_batch();
        while (self.head..self.next_seq).any(|s| self.is_live(s)) {
            if !self.advance()? {
                let m = "the orchestration waits for every submitted task, and some cannot run"
                    .to_string();
                return Err(self.deadlock(StallReason::TaskRingFull, m));
            }
        }
        self.check_failure()
    }

    /// A task in flight that writes tensor `t` and has not completed.
    fn pending_writer(&self, t: TensorId) -> Option<u64> {
        let w = self
            .build
            .pending_writer(t, |low| self.is_live(self.seq_of(low)))?;
        Some(self.seq_of(w))
    }

    /// Drains every pending task and returns the run's statistics.
    pub fn finish(&mut self) -> Result<Stats, RuntimeError> {
        self.flush_batch();
        while self.advance()? {}
        if self.head < self.next_seq && self.scopes.is_empty() {
            let m = "every in-flight task is blocked; check the task graph".to_string();
            return Err(self.deadlock(StallReason::TaskRingFull, m));
        }
        self.check_failure()?;
        Ok(self.stats())
    }

    /// Cycles so far: the makespan (event model) or the largest v9 clock.
    pub fn total_cycles(&self) -> u64 {
        match self.cfg.arch.timing {
            TimingSemantics::Event => self.makespan.max(self.horizon),
            TimingSemantics::V9 => {
                let w = self.v9.total();
                let p = self.procs.iter().map(|p| p.v9_clock).max().unwrap_or(0);
                w.max(p)
            }
        }
    }

    /// Each ring's use. Under `pto_wsp_v9` the stalls are v9's, on its clock: the window's
    /// (the one resource v9 models), none for the other rings.
    fn ring_uses(&self) -> Vec<RingUse> {
        let queued = self.classes.iter().map(|c| c.queued as u64).max();
        let v9 = self.cfg.arch.timing == TimingSemantics::V9;
        StallReason::RINGS
            .iter()
            .zip(self.rings.iter())
            .enumerate()
            .map(|(i, (r, s))| {
                let (stalls, stalled_cycles) = match (v9, i) {
                    (false, _) => (s.stalls, s.stalled),
                    (true, 0) => self.v9.window_stalls(),
                    (true, _) => (0, 0),
                };
                let used = match i {
                    0 => self.next_seq - self.head,
                    1 => self.build.entries_from(self.head),
                    4 => queued.unwrap_or(0),
                    _ => s.used,
                };
                RingUse {
                    name: r.ring(),
                    used,
                    capacity: s.cap,
                    high_water: s.hw,
                    stalls,
                    stalled_cycles,
                }
            })
            .collect()
    }

    pub fn stats(&self) -> Stats {
        let total = self.total_cycles();
        let mut cores = Vec::new();
        if self.cfg.arch.timing == TimingSemantics::V9 {
            // v9 time is the workers' and processes' clocks: report those, not the event
            // model's cores.
            let util = |busy: u64| busy as f64 / total.max(1) as f64;
            let workers = self.v9.load().iter().map(|l| ("v9_worker", l));
            let procs = self.procs.iter().map(|p| ("v9_process", &p.v9_load));
            let mut index = [0u32; 2];
            for (class, &(tasks, busy)) in workers.chain(procs) {
                if tasks == 0 {
                    continue;
                }
                let i = &mut index[usize::from(class == "v9_process")];
                cores.push(CoreStats {
                    class,
                    index: *i,
                    tasks,
                    busy_cycles: busy,
                    utilization: util(busy),
                });
                *i += 1;
            }
        } else {
            for c in &self.classes {
                for (i, k) in c.cores.iter().enumerate() {
                    cores.push(CoreStats {
                        class: c.class.name(),
                        index: i as u32,
                        tasks: k.tasks,
                        busy_cycles: k.busy,
                        // Of `total_cycles` (the clock ends later, after the last
                        // completion's handling, which no core spends).
                        utilization: if total == 0 {
                            0.0
                        } else {
                            k.busy as f64 / total as f64
                        },
                    });
                }
            }
        }
        Stats {
            arch: self.cfg.arch.name.clone(),
            timing: match self.cfg.arch.timing {
                TimingSemantics::Event => "event",
                TimingSemantics::V9 => "v9",
            },
            total_cycles: total,
            tasks: self.next_seq,
            edges: self.total_edges,
            rings: self.ring_uses(),
            window_mode: self.cfg.policies.window_mode.name(),
            cores,
            channels: self.channels.iter().map(|c| c.stats.clone()).collect(),
        }
    }

    /// Chrome trace-event JSON (needs `Config::record`).
    pub fn chrome_trace(&self) -> String {
        chrome_trace(&self.trace, self.cfg.arch.clock_hz)
    }

    #[cold]
    #[inline(never)]
    fn deadlock(&mut self, reason: StallReason, mitigation: String) -> RuntimeError {
        let blocked = self
            .procs
            .iter()
            .filter_map(|p| {
                let (ch, wait) = match p.status {
                    PStatus::Recv(c) => (c, Wait::Empty),
                    PStatus::Send(c) => (c, Wait::Full),
                    _ => return None,
                };
                let c = &self.channels[ch as usize];
                Some(BlockedProcess {
                    process: p.name.clone(),
                    channel: c.name.clone(),
                    wait,
                    fill: c.queue.len() as u64,
                    depth: c.depth as u64,
                })
            })
            .collect();
        let report = Box::new(DeadlockReport {
            reason,
            cycle: self.now,
            blocked,
            rings: self.ring_uses(),
            scope_depth: self.scopes.len() as u32,
            scope_held_tasks: self.held_tasks(),
            scope_held_bytes: self.arena_used,
            mitigation,
        });
        self.last_deadlock = Some(report.clone());
        RuntimeError::Deadlock(report)
    }

    #[cold]
    #[inline(never)]
    fn limit(&mut self, what: &'static str, limit: u64) -> RuntimeError {
        let l = RunLimit {
            what,
            limit,
            tasks: self.next_seq,
            cycle: self.total_cycles(),
        };
        self.last_limit = Some(l);
        RuntimeError::Limit(l)
    }

    /// The limit that stopped the run, if one did (kept for callers that passed the error
    /// on as text).
    pub fn limit_reached(&self) -> Option<RunLimit> {
        self.last_limit
    }

    /// The [`RuntimeError::Kernel`] failure that stopped the run, if one did (kept for
    /// callers that passed the error on as text).
    pub fn kernel_failure(&self) -> Option<&RuntimeError> {
        self.last_kernel_failure.as_deref()
    }

    /// The report of the deadlock that stopped the run, if one did (kept for callers that
    /// passed the error on as text).
    pub fn deadlock_report(&self) -> Option<&DeadlockReport> {
        self.last_deadlock.as_deref()
    }
}

// -------------------------------------------------------------------- CSP

impl Runtime {
    /// Creates a channel of `depth` tokens (0 = rendezvous); `latency` cycles per token (the
    /// model's `channel_latency` when `None`). A latency above [`MAX_CYCLES`] is taken as `MAX_CYCLES`: a token sent on such a channel
    /// arrives past any run's limit either way.
    pub fn add_channel(&mut self, name: &str, depth: u32, latency: Option<u64>) -> ChannelId {
        self.channels.push(Channel {
            name: name.to_string(),
            depth,
            latency: latency
                .unwrap_or(self.cfg.arch.overheads.channel_latency)
                .min(MAX_CYCLES),
            queue: VecDeque::new(),
            producers: 0,
            closed: false,
            blocked_sender: VecDeque::new(),
            receivers: IdSet::default(),
            stats: ChannelStats {
                name: name.to_string(),
                depth,
                ..ChannelStats::default()
            },
        });
        ChannelId(self.channels.len() as u32 - 1)
    }

    /// Highest number of tokens a channel held.
    pub fn channel_high_water(&self, c: ChannelId) -> Option<u64> {
        self.channels.get(c.0 as usize).map(|c| c.stats.high_water)
    }

    /// The local clock of a process under `pto_wsp_v9` accounting.
    pub fn process_v9_clock(&self, name: &str) -> Option<u64> {
        self.procs
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.v9_clock)
    }

    /// Runs processes to completion on the event clock. A channel closes when every process
    /// that produces it has finished.
    ///
    /// Each call is a run of its own: a channel is open while this call's processes that
    /// produce it run (tokens an earlier run left in it stay), so a program may run several
    /// pipelines one after the other on one runtime. Not after a run that stopped: its
    /// processes are still blocked.
    pub fn run_processes(&mut self, specs: Vec<ProcSpec<'_>>) -> Result<(), RuntimeError> {
        if let Some(p) = self.procs.iter().find(|p| p.status != PStatus::Finished) {
            return api(format!(
                "process `{}` of an earlier run_processes did not finish: a runtime runs no processes after a run that stopped",
                p.name
            ));
        }
        if let Some((s, c)) = specs.iter().find_map(|s| {
            s.produces
                .iter()
                .find(|c| c.0 as usize >= self.channels.len())
                .map(|c| (s, c))
        }) {
            return api(format!(
                "process `{}` produces unknown channel {}",
                s.name, c.0
            ));
        }
        for ch in &mut self.channels {
            ch.producers = 0;
        }
        let base = self.procs.len();
        let mut bodies = Vec::with_capacity(specs.len());
        for s in specs {
            let mut produces = Vec::new();
            for c in &s.produces {
                self.channels[c.0 as usize].producers += 1;
                produces.push(c.0);
            }
            bodies.push(Some(s.body));
            self.runnable.insert(self.procs.len());
            self.procs.push(Proc {
                name: s.name,
                status: PStatus::Runnable,
                received: None,
                produces,
                v9_clock: 0,
                v9_load: (0, 0),
                blocked_since: 0,
            });
        }
        // A channel is closed once every producer has finished: with none, at once (its
        // consumers see the end instead of waiting forever).
        for ch in &mut self.channels {
            ch.closed = ch.producers == 0;
        }
        // Process steps since a task was last submitted or the clock last moved: tokens
        // passed round forever at one instant (a livelock) never reach the other limits.
        let (mut at, mut idle_steps) = ((self.next_seq, self.now), 0u64);
        loop {
            // Processes of earlier runs have all finished.
            if let Some(i) = self.runnable.next(base) {
                if (self.next_seq, self.now) != at {
                    at = (self.next_seq, self.now);
                    idle_steps = 0;
                }
                idle_steps += 1;
                if idle_steps > MAX_IDLE_STEPS {
                    return Err(self.limit(
                        "process steps without a task or a cycle passing",
                        MAX_IDLE_STEPS,
                    ));
                }
                self.step_process(i, &mut bodies[i - base])?;
                continue;
            }
            // Every process waits: a batch of tasks held back is issued.
            self.flush_batch();
            if self.advance()? {
                continue;
            }
            if (base..self.procs.len()).all(|i| self.procs[i].status == PStatus::Finished) {
                return Ok(());
            }
            return Err(self.channel_deadlock());
        }
    }

    fn step_process(
        &mut self,
        i: usize,
        slot: &mut Option<Box<dyn Process + '_>>,
    ) -> Result<(), RuntimeError> {
        let Some(body) = slot.as_mut() else {
            return Ok(());
        };
        let r = {
            let mut cx = ProcCx {
                rt: self,
                proc: i as u32,
            };
            body.step(&mut cx)
        };
        let step = match r {
            Ok(s) => s,
            Err(message) => {
                return Err(RuntimeError::Process {
                    process: self.procs[i].name.clone(),
                    message,
                })
            }
        };
        match step {
            Step::Continue => {}
            Step::Finished => {
                self.set_status(i, PStatus::Finished);
                *slot = None;
                for c in self.procs[i].produces.clone() {
                    let ch = &mut self.channels[c as usize];
                    ch.producers -= 1;
                    if ch.producers == 0 {
                        ch.closed = true;
                        self.wake_channel(c);
                    }
                }
            }
            Step::Send { ch, token, after } => self.send(i, ch, token, after)?,
            Step::Recv { ch } => {
                if ch.0 as usize >= self.channels.len() {
                    return api(format!("receive on unknown channel {}", ch.0));
                }
                self.procs[i].blocked_since = self.now;
                self.try_recv(i, ch.0);
            }
        }
        Ok(())
    }

    fn send(
        &mut self,
        i: usize,
        ch: ChannelId,
        token: Token,
        after: Option<TaskId>,
    ) -> Result<(), RuntimeError> {
        let c = ch.0;
        let Some(chan) = self.channels.get(c as usize) else {
            return api(format!("send on unknown channel {}", ch.0));
        };
        // Only declared producers send: a channel closes when they have all finished.
        if !self.procs[i].produces.contains(&c) {
            return api(format!(
                "process `{}` sends on channel `{}` without producing it",
                self.procs[i].name, chan.name
            ));
        }
        let latency = chan.latency;
        let mut avail = self.now + latency;
        let mut after_seq = u64::MAX;
        if let Some(t) = after {
            if t.0 >= self.next_seq {
                return api(format!("send after unknown task {}", t.0));
            }
            if self.is_live(t.0) {
                if self.chan_after.is_empty() {
                    self.chan_after = vec![NIL; self.ring.len()];
                }
                let si = (t.0 & self.ring_mask) as usize;
                if self.chan_after[si] != NIL {
                    return api(format!("task {} already sends a token", t.0));
                }
                self.chan_after[si] = c;
                avail = u64::MAX;
                after_seq = t.0;
            }
        }
        let v9 = self.procs[i].v9_clock;
        let chan = &mut self.channels[c as usize];
        chan.stats.tokens += 1;
        if chan.depth > 0
            && (chan.queue.len() as u32) < chan.depth
            && chan.blocked_sender.is_empty()
        {
            chan.queue.push_back(QTok {
                token,
                avail,
                after: after_seq,
                v9,
                sender: NIL,
            });
            chan.stats.high_water = chan.stats.high_water.max(chan.queue.len() as u64);
            if avail != u64::MAX && latency > 0 {
                self.push_event(avail, Ev::Token(c));
            }
        } else {
            chan.blocked_sender
                .push_back((i as u32, token, after_seq, v9));
            self.set_status(i, PStatus::Send(c));
            self.procs[i].blocked_since = self.now;
        }
        self.wake_channel(c);
        Ok(())
    }

    fn try_recv(&mut self, i: usize, c: u32) {
        let now = self.now;
        // Rendezvous (or a full channel): move one blocked sender's token into the queue.
        let chan = &self.channels[c as usize];
        if chan.queue.len() < chan.depth.max(1) as usize {
            self.admit_sender(i, c);
        }
        let chan = &mut self.channels[c as usize];
        let got = match chan.queue.front() {
            Some(q) if q.avail <= now => chan.queue.pop_front(),
            Some(_) => None,
            None => {
                if chan.closed && chan.blocked_sender.is_empty() {
                    self.procs[i].received = Some(Received::Closed);
                    self.set_status(i, PStatus::Runnable);
                    return;
                }
                None
            }
        };
        let Some(q) = got else {
            self.set_status(i, PStatus::Recv(c));
            return;
        };
        let latency = chan.latency;
        // Room again: admit one blocked sender of a buffered channel.
        if chan.depth > 0 {
            self.admit_sender(i, c);
        }
        self.set_status(i, PStatus::Runnable);
        let p = &mut self.procs[i];
        let before = p.v9_clock;
        p.v9_clock = p.v9_clock.max(q.v9 + latency);
        p.received = Some(Received::Token(q.token));
        let (since, after) = (p.blocked_since, p.v9_clock);
        self.channel_wait(c, i, false, since, before, after);
        if q.sender != NIL {
            // The rendezvous is complete: its sender runs again.
            self.release_sender(i, c, q.sender as usize);
        }
    }

    /// Sender `s` of channel `c`, blocked until receiver `i` took its token, runs again (its
    /// wait is a `CHANNEL_FULL_WAIT` on the trace), after the receiver's v9 clock.
    fn release_sender(&mut self, i: usize, c: u32, s: usize) {
        let rclock = self.procs[i].v9_clock;
        self.set_status(s, PStatus::Runnable);
        let sp = &mut self.procs[s];
        let before = sp.v9_clock;
        sp.v9_clock = sp.v9_clock.max(rclock);
        let (since, after) = (sp.blocked_since, sp.v9_clock);
        self.channel_wait(c, s, true, since, before, after);
    }

    /// Counts, and with `record` traces, process `p`'s wait on channel `c` (`full`: to send,
    /// else to receive). Event timing: from `since` to now; `pto_wsp_v9`: the process's own
    /// clock, moved from `before` to `after` by the token or the receiver it waited for.
    fn channel_wait(&mut self, c: u32, p: usize, full: bool, since: u64, before: u64, after: u64) {
        let event = self.cfg.arch.timing == TimingSemantics::Event;
        let (start, end) = if event {
            (since, self.now)
        } else {
            (before, after)
        };
        if end <= start {
            return;
        }
        let chan = &mut self.channels[c as usize];
        let st = &mut chan.stats;
        if full {
            st.full_waits += 1;
            st.full_wait_cycles += end - start;
        } else {
            st.empty_waits += 1;
            st.empty_wait_cycles += end - start;
        }
        if self.cfg.record {
            let what = if full {
                "CHANNEL_FULL_WAIT"
            } else {
                "CHANNEL_EMPTY_WAIT"
            };
            let name = &self.procs[p].name;
            self.trace.push(TraceEvent {
                name: format!("{}: {what}", chan.name),
                lane: if event {
                    format!("process {name}")
                } else {
                    format!("v9_process {name}")
                },
                start,
                dur: end - start,
                cat: "channel",
                args: Some(serde_json::json!({ "channel": chan.name, "process": name })),
            });
        }
    }

    /// Moves the first blocked sender's token of channel `c` into its queue, for receiver `i`.
    /// A buffered channel's sender runs again at once; a rendezvous's only once its token
    /// is received (a token sent after a task is sent when the task completes, so the sender
    /// waits for that too).
    fn admit_sender(&mut self, i: usize, c: u32) {
        let now = self.now;
        let Some((s, token, after, v9)) = self.channels[c as usize].blocked_sender.pop_front()
        else {
            return;
        };
        // `after` is `u64::MAX` (no task) or a submitted task.
        let live = self.is_live(after);
        let chan = &mut self.channels[c as usize];
        let avail = if live { u64::MAX } else { now + chan.latency };
        let rendezvous = chan.depth == 0;
        chan.queue.push_back(QTok {
            token,
            avail,
            after,
            v9,
            sender: if rendezvous { s } else { NIL },
        });
        // A rendezvous holds no token: its fill is the sender's handover.
        if !rendezvous {
            chan.stats.high_water = chan.stats.high_water.max(chan.queue.len() as u64);
            self.release_sender(i, c, s as usize);
        }
        if avail != u64::MAX && avail > now {
            self.push_event(avail, Ev::Token(c));
        }
    }

    fn token_task_done(&mut self, c: u32, seq: u64) {
        let now = self.now;
        let chan = &mut self.channels[c as usize];
        let lat = chan.latency;
        if let Some(q) = chan.queue.iter_mut().find(|q| q.after == seq) {
            q.avail = now + lat;
        }
        if lat > 0 {
            self.push_event(now + lat, Ev::Token(c));
        } else {
            self.woken.push(c);
        }
    }

    /// Moves process `i` to `status`, keeping the runnable set and the channels' receivers.
    fn set_status(&mut self, i: usize, status: PStatus) {
        let old = std::mem::replace(&mut self.procs[i].status, status);
        if old == status {
            return;
        }
        match old {
            PStatus::Runnable => self.runnable.remove(i),
            PStatus::Recv(c) => self.channels[c as usize].receivers.remove(i),
            _ => {}
        }
        match status {
            PStatus::Runnable => self.runnable.insert(i),
            PStatus::Recv(c) => self.channels[c as usize].receivers.insert(i),
            _ => {}
        }
    }

    /// Offers channel `c`'s tokens (or its end) to the processes waiting on it, lowest first.
    fn wake_channel(&mut self, c: u32) {
        let mut from = 0;
        while let Some(i) = self.channels[c as usize].receivers.next(from) {
            from = i + 1;
            self.try_recv(i, c);
        }
    }

    /// Wakes the receivers of the channels whose tokens became available, in channel order.
    fn wake_processes(&mut self) {
        let mut woken = std::mem::take(&mut self.woken);
        woken.sort_unstable();
        woken.dedup();
        for &c in &woken {
            self.wake_channel(c);
        }
        woken.clear();
        self.woken = woken;
    }

    fn channel_deadlock(&mut self) -> RuntimeError {
        let full = self.procs.iter().find_map(|p| match p.status {
            PStatus::Send(c) => Some(c),
            _ => None,
        });
        let (reason, m) = match full {
            Some(c) => {
                let ch = &self.channels[c as usize];
                // The runtime sees one stuck state, not the tokens still to come: it can say
                // the depth is too small, not by how much (the CLI adds the static count).
                let waiting: Vec<String> = self
                    .procs
                    .iter()
                    .filter_map(|p| match p.status {
                        PStatus::Recv(r) => Some(format!(
                            "`{}` on `{}`",
                            p.name, self.channels[r as usize].name
                        )),
                        _ => None,
                    })
                    .collect();
                let (fill, depth) = (ch.queue.len(), ch.depth);
                let m = if waiting.is_empty() {
                    format!(
                        "channel `{}` is full ({fill}/{depth}) and no process is left to receive from it (the others have finished or wait to send): consume it in a process that is still running, or raise its depth above {depth} to hold every token sent on it",
                        ch.name
                    )
                } else {
                    format!(
                        "channel `{}` is full ({fill}/{depth}) while the processes that could receive from it wait on other channels ({}): raise its depth above {depth} (the tokens still to come decide how far), or receive from it before waiting on another channel",
                        ch.name,
                        waiting.join(", ")
                    )
                };
                (StallReason::ChannelFullWait, m)
            }
            None => {
                let names: Vec<String> = self
                    .procs
                    .iter()
                    .filter_map(|p| match p.status {
                        PStatus::Recv(c) => Some(format!("`{}`", self.channels[c as usize].name)),
                        _ => None,
                    })
                    .collect();
                (
                    StallReason::ChannelEmptyWait,
                    format!(
                        "channels {} stay empty: their producers are blocked or finished without sending enough tokens; make one process of the cycle send before it receives, or produce as many tokens as are consumed",
                        names.join(", ")
                    ),
                )
            }
        };
        self.deadlock(reason, m)
    }
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
mod event_tests {
    use super::*;

    /// The event queue against a sorted list: random pushes (times at or after the clock,
    /// `Resolve` events in order and out of it) and due pops give events in (time, push order).
    #[test]
    fn events_come_out_in_time_then_push_order() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut q = Events::default();
        let mut oracle: Vec<(u64, u64, Ev)> = Vec::new();
        let (mut now, mut order) = (0u64, 0u64);
        for step in 0..20_000u64 {
            if rand(3) > 0 {
                let t = now + rand(8);
                let ev = match rand(3) {
                    0 => Ev::Resolve(step),
                    1 => Ev::Done(step),
                    _ => Ev::Token(step as u32),
                };
                order += 1;
                q.push(t, ev);
                oracle.push((t, order, ev));
                continue;
            }
            oracle.sort_by_key(|e| (e.0, e.1));
            assert_eq!(q.next_time(), oracle.first().map(|e| e.0));
            let Some(t) = q.next_time() else { continue };
            now = t;
            while let Some((te, ev)) = q.pop_due(t) {
                assert_eq!(te, t);
                assert_eq!(ev, oracle.remove(0).2, "step {step}");
            }
            assert!(oracle.first().is_none_or(|e| e.0 > t));
        }
    }
}
