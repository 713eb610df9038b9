//! Issue, ready queues and dispatch. An issued task with no pending predecessor is ready: it is
//! queued on its core's own queue (fixed dispatch, placed tasks) or its class's shared one, or
//! waits in the class's overflow while the ready queue is full. Bit `ci` of `dispatch_due` is
//! set whenever a dispatch in class `ci` may start something, so a dispatch with nothing to do
//! is a flag test; a dispatch starts ready tasks on idle cores at the current time and pushes
//! their ends onto the event queue.

use super::{Ev, ReadyQ, Runtime, State, ISSUED, RAN};
use crate::policy::Dispatch;
use std::cmp::Reverse;

impl Runtime {
    /// Issues the tasks a `batched` timing holds (inline: without one, the batch is empty).
    #[inline]
    pub(super) fn flush_batch(&mut self) {
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

    pub(super) fn issue(&mut self, seq: u64) {
        let s = self.slot_mut(seq);
        s.flags |= ISSUED;
        if s.preds_left == 0 && s.state == State::Waiting {
            self.make_ready(seq);
        }
    }

    pub(super) fn make_ready(&mut self, seq: u64) {
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
    pub(super) fn push_event(&mut self, t: u64, ev: Ev) {
        self.events.push(t, ev);
    }

    /// Starts ready tasks on idle cores at the current time. Called after every step that
    /// might have made work, so the nothing-to-do case is a flag test in the caller.
    #[inline(always)]
    pub(super) fn dispatch(&mut self) {
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
}
