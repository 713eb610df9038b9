//! Sequential order as dependencies: `P.seq` iterations on the event clock.
//!
//! The orchestration reports its structure with [`Order`] groups (`order_begin`, `order_step`,
//! `order_end`). In an [`Order::Seq`] group every task of a step starts after every task of
//! the steps before it has completed, whether or not they share data. Rather than an edge from
//! each task of a step to each of the next (quadratic), a step that leaves tasks in flight
//! closes a **gate**: a counter of those tasks. Each task of later steps waits on the gate
//! (one predecessor more); when the last member completes, the gate opens and releases its
//! waiters at that time, as an edge would.
//!
//! One gate per task suffices: a task waits on the gate of the innermost group that has one.
//! That gate's members waited on the gates around them when they were submitted, so an open
//! gate implies the outer ones are open too. Members are the tasks still in flight when the
//! step ends; a completed task needs no waiting for. Memory is bounded by the window: members
//! and waiters are tasks in flight.

use crate::v9::Order;

const NIL: u32 = u32::MAX;

struct Frame {
    order: Order,
    /// The first task of the current step (tasks are numbered in submission order, so a
    /// step's tasks are `start..next_seq`).
    start: u64,
    /// The gate later tasks of this group wait on (`NIL`: none).
    gate: u32,
}

struct Gate {
    /// Members not yet completed.
    left: u32,
    /// Tasks waiting for the gate to open.
    waiters: Vec<u64>,
    /// A frame still refers to the gate (it is freed once open and unreferenced).
    held: bool,
    /// A number for the graph (gates' slots are reused).
    uid: u64,
}

#[derive(Clone, Copy)]
struct Link {
    gate: u32,
    next: u32,
}

/// The open groups and their gates (see the module documentation).
#[derive(Default)]
pub(crate) struct Ordering {
    frames: Vec<Frame>,
    gates: Vec<Gate>,
    free_gates: Vec<u32>,
    /// Per ring slot (allocated when the first gate closes): the task's gate memberships, a
    /// list through `links`.
    member_of: Vec<u32>,
    links: Vec<Link>,
    free_links: u32,
    uids: u64,
    /// With recording: (gate uid, task, member?) — who closed and who waited on each gate.
    pub(crate) graph: Vec<(u64, u64, bool)>,
    record: bool,
}

impl Ordering {
    pub(crate) fn new(record: bool) -> Ordering {
        Ordering {
            free_links: NIL,
            record,
            ..Ordering::default()
        }
    }

    pub(crate) fn begin(&mut self, order: Order, next_seq: u64) {
        self.frames.push(Frame {
            order,
            start: next_seq,
            gate: NIL,
        });
    }

    /// The next member of the innermost group. In a `Seq` group, the tasks of the step that
    /// ends and are still in flight (`pending`, over `from..next_seq`, where `from` is the
    /// oldest task in flight) close a gate; `slot(seq)` is a task's ring slot, `slots` the
    /// ring's size.
    pub(crate) fn step(
        &mut self,
        next_seq: u64,
        from: u64,
        pending: impl Fn(u64) -> bool,
        slot: impl Fn(u64) -> usize,
        slots: usize,
    ) {
        let Some(f) = self.frames.last() else {
            return;
        };
        let (order, start, old) = (f.order, f.start, f.gate);
        if order == Order::Par {
            return;
        }
        if start == next_seq {
            // An empty step: the order with the steps before it still holds.
            return;
        }
        let members: Vec<u64> = (start.max(from)..next_seq)
            .filter(|&s| pending(s))
            .collect();
        let gate = if members.is_empty() {
            NIL
        } else {
            if self.member_of.len() < slots {
                self.member_of = vec![NIL; slots];
            }
            let g = self.new_gate(members.len() as u32);
            for &m in &members {
                let si = slot(m);
                let l = Link {
                    gate: g,
                    next: self.member_of[si],
                };
                self.member_of[si] = self.new_link(l);
                if self.record {
                    self.graph.push((self.gates[g as usize].uid, m, true));
                }
            }
            g
        };
        self.release(old);
        if let Some(f) = self.frames.last_mut() {
            f.gate = gate;
            f.start = next_seq;
        }
    }

    /// Closes the innermost group; false when none is open.
    pub(crate) fn end(&mut self) -> bool {
        match self.frames.pop() {
            Some(f) => {
                self.release(f.gate);
                true
            }
            None => false,
        }
    }

    /// The gate a task submitted now waits on, if one is closed.
    pub(crate) fn closed_gate(&self) -> Option<u32> {
        let g = self.frames.iter().rev().find(|f| f.gate != NIL)?.gate;
        (self.gates[g as usize].left > 0).then_some(g)
    }

    /// Task `seq` waits on gate `g` (from [`Ordering::closed_gate`]).
    pub(crate) fn wait(&mut self, g: u32, seq: u64) {
        let gate = &mut self.gates[g as usize];
        gate.waiters.push(seq);
        if self.record {
            self.graph.push((gate.uid, seq, false));
        }
    }

    /// Task `seq` in ring slot `si` has completed: the waiters of the gates it opened go to
    /// `released`.
    #[inline]
    pub(crate) fn completed(&mut self, si: usize, released: &mut Vec<u64>) {
        let Some(head) = self.member_of.get_mut(si) else {
            return;
        };
        let mut l = std::mem::replace(head, NIL);
        while l != NIL {
            let Link { gate, next } = self.links[l as usize];
            self.links[l as usize].next = self.free_links;
            self.free_links = l;
            let g = &mut self.gates[gate as usize];
            g.left -= 1;
            if g.left == 0 {
                released.append(&mut g.waiters);
                if !g.held {
                    self.free_gates.push(gate);
                }
            }
            l = next;
        }
    }

    fn new_gate(&mut self, left: u32) -> u32 {
        self.uids += 1;
        let gate = Gate {
            left,
            waiters: Vec::new(),
            held: true,
            uid: self.uids,
        };
        match self.free_gates.pop() {
            Some(g) => {
                let old = std::mem::replace(&mut self.gates[g as usize], gate);
                // Keep the waiters' allocation.
                let mut w = old.waiters;
                w.clear();
                self.gates[g as usize].waiters = w;
                g
            }
            None => {
                self.gates.push(gate);
                (self.gates.len() - 1) as u32
            }
        }
    }

    fn new_link(&mut self, l: Link) -> u32 {
        if self.free_links != NIL {
            let id = self.free_links;
            self.free_links = self.links[id as usize].next;
            self.links[id as usize] = l;
            id
        } else {
            self.links.push(l);
            (self.links.len() - 1) as u32
        }
    }

    /// A frame no longer refers to gate `g`: it is freed now if open, else when it opens.
    fn release(&mut self, g: u32) {
        if g == NIL {
            return;
        }
        let gate = &mut self.gates[g as usize];
        gate.held = false;
        if gate.left == 0 {
            self.free_gates.push(g);
        }
    }

    /// The gates of the graph: per gate, its members and its waiters (recorded runs).
    pub(crate) fn graph_gates(&self) -> Vec<(Vec<u64>, Vec<u64>)> {
        let mut by: std::collections::BTreeMap<u64, (Vec<u64>, Vec<u64>)> = Default::default();
        for &(uid, seq, member) in &self.graph {
            let e = by.entry(uid).or_default();
            if member {
                e.0.push(seq);
            } else {
                e.1.push(seq);
            }
        }
        by.into_values().filter(|(_, w)| !w.is_empty()).collect()
    }
}
