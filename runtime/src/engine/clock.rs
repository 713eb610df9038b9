//! The event clock: each step takes every event due at the earliest time (time never goes
//! back), then retires, releases the arena, wakes processes and dispatches. A task's end on its
//! core frees the core at once; its completion (after the model's `complete + resolve`
//! cycles) releases its successors and `P.seq` gates and sends the token queued after it; the
//! ring retires from its head, in order, done tasks no scope holds. The orchestration's waits
//! (`wait_tensor`, `wait_all`, `finish`) drive the clock, and a run stops at the cycle limit.

use super::{api, Edge, Ev, Runtime, RuntimeError, State, HELD, ISSUED, NIL};
use crate::api::TensorId;
use crate::report::{StallReason, Stats};
use wsp_arch::TimingSemantics;

impl Runtime {
    /// Processes the earliest batch of events. False when nothing is pending.
    pub(super) fn advance(&mut self) -> Result<bool, RuntimeError> {
        self.batch_of_events()
    }

    /// Processes batches of events while `more` holds. False when nothing is pending while it
    /// does. (A full window stalls most submissions of a long run: this loop keeps the batches
    /// of such a stall in one call.)
    pub(super) fn advance_while(
        &mut self,
        more: impl Fn(&Self) -> bool,
    ) -> Result<bool, RuntimeError> {
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
    pub(super) fn advance_to(&mut self, t: u64) -> Result<(), RuntimeError> {
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

    pub(super) fn retire(&mut self) {
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
}
