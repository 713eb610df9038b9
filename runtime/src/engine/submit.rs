//! Submission: a task's admission into the bounded rings. The submitter waits, advancing the
//! event clock, until the window has a slot, the edge pool room for an edge to each pending
//! candidate the builder found (and a `P.seq` step's task), the tensor map room for the task's
//! entries and, for a task with no predecessor, its class's ready queue room; a stall no event
//! can end is a deadlock. A refused task leaves no trace. Then the slot is filled, the edges
//! linked, the core assigned per the dispatch policy in emission order, the `pto_wsp_v9`
//! clocks charged, and the task issued per the timing policy. The ring's accessors are here:
//! a slot is `seq & ring_mask`, and sequence numbers in flight differ by less than 2^32.

use super::{
    api, mix, Edge, Runtime, RuntimeError, Slot, State, HELD, IO_CACHE, MAX_TASK_CYCLES, NIL,
    NO_CORE, RAN,
};
use crate::api::{TaskDesc, TaskId, Token};
use crate::build::Prepared;
use crate::order::OrderWait;
use crate::policy::{Dispatch, Timing, WindowMode};
use crate::report::{StallReason, TraceEvent};
use wsp_arch::{CoreClass, TimingSemantics};

impl Runtime {
    /// Submits a task from the main orchestration.
    pub fn submit(&mut self, t: &TaskDesc<'_>) -> Result<TaskId, RuntimeError> {
        self.submit_from(t, NIL)
    }

    pub(super) fn slot(&self, seq: u64) -> &Slot {
        &self.ring[(seq & self.ring_mask) as usize]
    }

    pub(super) fn slot_mut(&mut self, seq: u64) -> &mut Slot {
        &mut self.ring[(seq & self.ring_mask) as usize]
    }

    pub(super) fn is_live(&self, seq: u64) -> bool {
        seq >= self.head && seq < self.next_seq && self.slot(seq).state != State::Done
    }

    /// The in-flight task whose sequence number ends in `low`.
    #[inline]
    pub(super) fn seq_of(&self, low: u32) -> u64 {
        self.head + low.wrapping_sub(self.head as u32) as u64
    }

    /// Counts a stall of `ring` that began at `t0` (inline: a full window stalls most
    /// submissions of a long run; the trace event is out of line).
    #[inline]
    pub(super) fn note_stall(&mut self, ring: usize, t0: u64) {
        self.rings[ring].stalls += 1;
        self.rings[ring].stalled += self.now - t0;
        if self.cfg.record && self.now > t0 && self.cfg.arch.timing == TimingSemantics::Event {
            self.trace_stall(ring, t0);
        }
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

    pub(super) fn submit_from(
        &mut self,
        t: &TaskDesc<'_>,
        proc: u32,
    ) -> Result<TaskId, RuntimeError> {
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

    pub(super) fn held_tasks(&self) -> u64 {
        (self.head..self.next_seq)
            .filter(|s| self.slot(*s).flags & HELD != 0)
            .count() as u64
    }
}
