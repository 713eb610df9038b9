//! Setting a runtime up: [`Runtime::new`] checks a configuration (and values built by hand
//! that a loaded model or the policy parser would have refused) and allocates every ring from
//! it, sized once for the whole run; kernels are registered on a core class the model has (a
//! class without cores falls back to one with cores); tensors are added with their buffers
//! (zero-filled, given, or none in timing-only mode) and read back once no kernel on the
//! thread pool can write them.

use super::{
    api, class_index, graph, zeroed_bytes, ClassState, Config, Core, Events, KernelEntry, ReadyQ,
    RingStat, Runtime, RuntimeError, Slot, BENCHMARK_WINDOW, IO_CACHE, MAX_CYCLES, MAX_STREAMS,
    NIL, NO_CORE, V9_DEFAULT_WORKERS,
};
#[cfg(doc)]
use crate::api::TaskDesc;
use crate::api::{Kernel, KernelId, TensorId};
use crate::build::Builder;
use crate::chunked::Chunked;
use crate::exec::ExecRing;
use crate::idset::IdSet;
use crate::order::Ordering;
use crate::policy::{Dispatch, ReadyOrder, WindowMode};
use crate::v9::V9Clock;
use std::collections::VecDeque;
use std::sync::Arc;
use wsp_arch::{CoreClass, TimingSemantics};

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
}
