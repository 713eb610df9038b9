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
//! A step that leaves one task in flight (a chain: `P.seq` over single tasks) needs no gate:
//! later tasks get an ordinary dependency edge on that task ([`OrderWait::Task`]), which costs what
//! a data edge costs.
//!
//! One gate per task suffices: a task waits on the gate of the innermost group that has one.
//! That gate's members waited on the gates around them when they were submitted, so an open
//! gate implies the outer ones are open too. Members are the tasks still in flight when the
//! step ends; a completed task needs no waiting for. Memory is bounded by the window: members
//! and waiters are tasks in flight.

use crate::v9::Order;

const NIL: u32 = u32::MAX;
const NO_TASK: u64 = u64::MAX;

/// What a task submitted now must wait for, besides its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OrderWait {
    None,
    /// One task in flight: an edge from it.
    Task(u64),
    /// Several: the gate.
    Gate(u32),
}

struct Frame {
    order: Order,
    /// The first task of the current step (tasks are numbered in submission order, so a
    /// step's tasks are `start..next_seq`).
    start: u64,
    /// The gate later tasks of this group wait on (`NIL`: none).
    gate: u32,
    /// Or the one task they wait on (`NO_TASK`: none), and its number for the graph.
    single: u64,
    single_uid: u64,
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
    /// The members of the step being closed (reused).
    members: Vec<u64>,
    /// Open frames with a gate or a single task: none, and a task waits for nothing (the
    /// common case, checked first on every submission).
    armed: u32,
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
            single: NO_TASK,
            single_uid: 0,
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
        let mut members = std::mem::take(&mut self.members);
        members.clear();
        members.extend((start.max(from)..next_seq).filter(|&s| pending(s)));
        let mut single = (NO_TASK, 0);
        let gate = if members.len() <= 1 {
            if let Some(&m) = members.first() {
                self.uids += 1;
                single = (m, self.uids);
                if self.record {
                    self.graph.push((self.uids, m, true));
                }
            }
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
        self.members = members;
        self.release(old);
        if let Some(f) = self.frames.last_mut() {
            let was = f.gate != NIL || f.single != NO_TASK;
            f.gate = gate;
            (f.single, f.single_uid) = single;
            f.start = next_seq;
            let is = f.gate != NIL || f.single != NO_TASK;
            self.armed = self.armed + u32::from(is) - u32::from(was);
        }
    }

    /// Closes the innermost group; false when none is open.
    pub(crate) fn end(&mut self) -> bool {
        match self.frames.pop() {
            Some(f) => {
                self.armed -= u32::from(f.gate != NIL || f.single != NO_TASK);
                self.release(f.gate);
                true
            }
            None => false,
        }
    }

    /// What a task submitted now waits on: the innermost group's closed gate or task still in
    /// flight (`pending`).
    #[inline]
    pub(crate) fn wait(&self, pending: impl Fn(u64) -> bool) -> OrderWait {
        if self.armed == 0 {
            return OrderWait::None;
        }
        let Some(f) = self
            .frames
            .iter()
            .rev()
            .find(|f| f.gate != NIL || f.single != NO_TASK)
        else {
            return OrderWait::None;
        };
        if f.single != NO_TASK {
            return if pending(f.single) {
                OrderWait::Task(f.single)
            } else {
                OrderWait::None
            };
        }
        if self.gates[f.gate as usize].left > 0 {
            OrderWait::Gate(f.gate)
        } else {
            OrderWait::None
        }
    }

    /// Task `seq` waits on gate `g` (from [`Ordering::wait`]).
    pub(crate) fn wait_gate(&mut self, g: u32, seq: u64) {
        let gate = &mut self.gates[g as usize];
        gate.waiters.push(seq);
        if self.record {
            self.graph.push((gate.uid, seq, false));
        }
    }

    /// Task `seq` has an order edge from the innermost group's single task (recorded runs:
    /// for the graph).
    pub(crate) fn waited_task(&mut self, seq: u64) {
        if !self.record {
            return;
        }
        if let Some(f) = self
            .frames
            .iter()
            .rev()
            .find(|f| f.gate != NIL || f.single != NO_TASK)
        {
            self.graph.push((f.single_uid, seq, false));
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
