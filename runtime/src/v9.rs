//! The `pto_wsp_v9` clock: PTO-WSP v9's time, kept alongside the event simulation.
//!
//! v9 times tasks by program structure, not data edges. The orchestration tells the runtime
//! its structure with [`Order`] groups ([`crate::Runtime::order_begin`], `order_step`,
//! `order_end`): in a [`Order::Par`] group every member starts when the group does; in a
//! [`Order::Seq`] group each step starts when everything before it has ended. A task is ready
//! at its group's ready time; issue time never goes back; at most `window` tasks are in
//! flight; a task starts when the issue time and its worker both allow. The total is the end
//! of the last task. Execution still honours data edges; only this clock ignores them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How the members of a structural group are ordered in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Every member starts when the group starts (`P` iterations, `combine` parts, the
    /// statements of a block).
    Par,
    /// Each step starts when everything earlier in the group has ended (`P.seq`
    /// iterations, `sequential` parts).
    Seq,
}

#[derive(Clone, Copy, Debug)]
struct Group {
    order: Order,
    ready: u64,
    done: u64,
}

#[derive(Debug)]
pub(crate) struct V9Clock {
    workers: Vec<u64>,
    /// Per worker: tasks and busy cycles, for the run's statistics.
    load: Vec<(u64, u64)>,
    emitted: u64,
    window: usize,
    issue: u64,
    in_flight: BinaryHeap<Reverse<u64>>,
    groups: Vec<Group>,
    /// Tasks whose issue waited for the window, and the cycles they waited.
    window_stalls: (u64, u64),
}

impl V9Clock {
    pub(crate) fn new(workers: usize, window: usize) -> V9Clock {
        V9Clock {
            workers: vec![0; workers.max(1)],
            load: vec![(0, 0); workers.max(1)],
            emitted: 0,
            window: window.max(1),
            issue: 0,
            in_flight: BinaryHeap::new(),
            groups: Vec::new(),
            window_stalls: (0, 0),
        }
    }

    pub(crate) fn workers(&self) -> usize {
        self.workers.len()
    }

    /// The worker of the next task under round-robin: the emission counter.
    pub(crate) fn next_round_robin(&self) -> usize {
        (self.emitted % self.workers.len() as u64) as usize
    }

    fn ready(&self) -> u64 {
        self.groups.last().map_or(0, |g| g.ready)
    }

    pub(crate) fn begin(&mut self, order: Order) {
        let ready = self.ready();
        self.groups.push(Group {
            order,
            ready,
            done: ready,
        });
    }

    /// In a `Seq` group, the next member starts after everything so far; in `Par`, nothing.
    pub(crate) fn step(&mut self) {
        if let Some(g) = self.groups.last_mut() {
            if g.order == Order::Seq {
                g.ready = g.done;
            }
        }
    }

    /// Ends the innermost group; false when none is open.
    pub(crate) fn end(&mut self) -> bool {
        let Some(g) = self.groups.pop() else {
            return false;
        };
        if let Some(parent) = self.groups.last_mut() {
            parent.done = parent.done.max(g.done);
        }
        true
    }

    pub(crate) fn depth(&self) -> usize {
        self.groups.len()
    }

    fn advance_to(&mut self, t: u64) {
        self.issue = self.issue.max(t);
        while self.in_flight.peek().is_some_and(|r| r.0 <= self.issue) {
            self.in_flight.pop();
        }
    }

    /// Times a task of `cycles` on `worker` (taken modulo the worker count); returns its end
    /// and, when its issue waited for the window, that wait as (start, cycles).
    pub(crate) fn task(&mut self, worker: usize, cycles: u64) -> (u64, Option<(u64, u64)>) {
        let w = worker % self.workers.len();
        self.emitted += 1;
        let ready = self.ready();
        self.advance_to(ready);
        let t0 = self.issue;
        while self.in_flight.len() >= self.window {
            let next = self.in_flight.peek().map_or(self.issue, |r| r.0);
            self.advance_to(next);
        }
        let stall = (self.issue > t0).then(|| (t0, self.issue - t0));
        if let Some((_, d)) = stall {
            self.window_stalls.0 += 1;
            self.window_stalls.1 += d;
        }
        let end = self.workers[w].max(self.issue) + cycles;
        self.workers[w] = end;
        self.load[w].0 += 1;
        self.load[w].1 += cycles;
        self.in_flight.push(Reverse(end));
        if let Some(g) = self.groups.last_mut() {
            g.done = g.done.max(end);
        }
        (end, stall)
    }

    /// Per worker: (tasks, busy cycles).
    pub(crate) fn load(&self) -> &[(u64, u64)] {
        &self.load
    }

    /// (tasks whose issue waited for a full window, cycles waited).
    pub(crate) fn window_stalls(&self) -> (u64, u64) {
        self.window_stalls
    }

    pub(crate) fn total(&self) -> u64 {
        self.workers.iter().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_tasks_fill_workers_round_robin() {
        let mut c = V9Clock::new(4, 1024);
        for _ in 0..8 {
            let w = c.next_round_robin();
            c.task(w, 10);
        }
        assert_eq!(c.total(), 20);
    }

    #[test]
    fn a_seq_group_chains_its_steps_and_issue_never_goes_back() {
        let mut c = V9Clock::new(4, 1024);
        c.begin(Order::Par);
        for _ in 0..2 {
            // Two independent chains of three steps each, 10 cycles a step.
            c.begin(Order::Seq);
            for i in 0..3 {
                if i > 0 {
                    c.step();
                }
                let w = c.next_round_robin();
                c.task(w, 10);
            }
            assert!(c.end());
        }
        assert!(c.end());
        // The second chain cannot start before the issue time the first one reached (20).
        assert_eq!(c.total(), 50);
        assert!(!c.end());
    }

    #[test]
    fn the_window_bounds_tasks_in_flight() {
        let mut c = V9Clock::new(4, 1);
        let stalls: Vec<_> = (0..4)
            .map(|_| {
                let w = c.next_round_robin();
                c.task(w, 10).1
            })
            .collect();
        // One task in flight at a time: fully serial despite four workers.
        assert_eq!(c.total(), 40);
        // Each later task's issue waited from 0 (its group's ready time) for the one before.
        assert_eq!(
            stalls,
            [None, Some((0, 10)), Some((10, 10)), Some((20, 10))]
        );
        // Tasks 2 to 4 each waited 10 cycles for the one before.
        assert_eq!(c.window_stalls(), (3, 30));
    }
}
