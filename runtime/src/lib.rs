//! Bounded task-graph runtime with exact dependency inference, CSP and deterministic semantic
//! time.
//!
//! Design in brief:
//! - **One submit API** ([`api`]): register kernels (a `Send + Sync` [`Kernel`], or a C entry
//!   [`KernelFn`] a JIT provides) with a core class, add tensors (byte buffers the runtime owns),
//!   then [`Runtime::submit`] tasks — kernel, coordinates, region arguments with direction,
//!   scalars, and the task's compute `cycles` from the architecture model. Scopes, channels and
//!   processes complete the API. The runtime knows nothing of the compiler.
//! - **Bounded rings**: the task ring (`task_window`), tensor-map entries, dependency edges, the
//!   heap arena and per-class ready queues are fixed-size; exhausting one stalls the submitter,
//!   which advances the event clock until something retires. A task's tensor-map entries are
//!   freed in order when it retires (`tensormap.rs`: chains of generations, newest first, cut
//!   lazily). Memory depends on the configuration, not on the number of tasks or the tensors'
//!   shapes.
//! - **Construction apart from time** ([`Builder`]): region checks, the tensor map's candidate
//!   producers and the task's entries depend on the submissions only, never on the simulation's
//!   progress; the runtime keeps as edges the candidates still pending when it admits a task.
//! - **Exact dependencies** ([`region`]): strided hyper-rectangles intersect iff their
//!   per-dimension arithmetic progressions do (decided with gcd/CRT); RAW, WAR and WAW edges
//!   are added only between overlapping regions, and a scan stops at the newest writer that
//!   contains its region (everything older is ordered before that writer).
//! - **One clock**: a deterministic discrete-event simulation on the single orchestrating
//!   thread decides when each task starts and ends on a modeled core. Kernels run on host
//!   threads in dependency order: at the task's submission when every earlier kernel has run
//!   and none is on the pool (always on one thread; submission order is a dependency order),
//!   otherwise at its dispatch. Results and cycles never depend on host timing. Each
//!   submission first spends the model's `submit` overhead on the orchestration's clock.
//!   [`Order`] groups from the orchestration give program structure: the event clock keeps a
//!   `Seq` group's steps in order as dependencies (`order.rs`), and the `pto_wsp_v9` model keeps
//!   v9's clocks alongside (round-robin workers in emission order; per-process local clocks).
//! - **CSP**: processes are state machines stepped by the engine ([`Process::step`] returns
//!   `Continue`, `Send`, `Recv` or `Finished`); when nothing can run and no event is pending
//!   the run stops with a [`DeadlockReport`].

pub mod api;
mod build;
mod chunked;
mod engine;
mod exec;
mod idset;
mod order;
pub mod policy;
pub mod region;
pub mod report;
mod tensormap;
mod v9;

pub use api::*;
pub use build::{Builder, Prepared};
pub use engine::{
    dot_escape, Config, DataEdge, DepKind, GraphNode, OrderGate, ProcCx, ProcSpec, Process,
    RunLimit, Runtime, RuntimeError, TaskGraph, BENCHMARK_WINDOW, MAX_CYCLES, MAX_IDLE_STEPS,
    MAX_POOL, MAX_STREAMS, MAX_TASK_CYCLES, MAX_WINDOW,
};
pub use policy::{Dispatch, Policies, Pools, ReadyOrder, Streams, Support, Timing, WindowMode};
pub use report::{
    BlockedProcess, ChannelStats, ClassStats, CoreStats, DeadlockReport, RingUse, StallReason,
    Stats, Wait,
};
pub use v9::Order;
pub use wsp_arch::{Arch, CoreClass};

#[cfg(test)]
mod tests;
