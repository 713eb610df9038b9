//! The abstract run of a pipeline's process instances: each steps through its tree of actions
//! as `wsp run` schedules processes (the lowest-numbered one that can move takes one visible
//! step), over channels bounded by the given depths, until every instance finishes, none can
//! move (a deadlock, with each blocked site), or the step budget runs out.

use super::*;

/// One process instance of the abstract run.
#[derive(Clone)]
struct Thread<'a> {
    frames: Vec<Frame<'a>>,
    pending: Option<(usize, At)>,
    /// A rendezvous send waiting for its token (channel, serial, the send) to be taken.
    awaiting: Option<(usize, u64, At)>,
    blocked: Option<(usize, At, bool)>,
    sent: Vec<u64>,
    received: Vec<u64>,
}

#[derive(Clone)]
enum Frame<'a> {
    Block { nodes: &'a [Node], pc: usize },
    Loop { left: u64, body: &'a [Node] },
    Consume { ch: usize, at: At, body: &'a [Node] },
}

#[derive(Clone)]
struct ChanState {
    queue: VecDeque<u64>,
    live_producers: usize,
    serial: u64,
}

enum Step {
    Progress,
    Blocked,
    Done,
}

/// Blocked state of one process at a deadlock.
pub(super) struct Wait {
    pub(super) thread: usize,
    pub(super) ch: usize,
    pub(super) at: At,
    /// `true`: waiting to send (full, or for a rendezvous); `false`: waiting on an empty channel.
    pub(super) sending: bool,
}

pub(super) enum Outcome {
    Completes {
        sent: Vec<u64>,
    },
    Deadlock {
        waits: Vec<Wait>,
        fill: Vec<usize>,
        threads: Vec<(Vec<u64>, Vec<u64>)>,
        done: Vec<bool>,
    },
    TooLarge,
}

fn step(th: &mut Thread, chans: &mut [ChanState], depths: &[u64]) -> Step {
    th.blocked = None;
    if let Some((c, serial, span)) = th.awaiting {
        if chans[c].queue.contains(&serial) {
            // Still blocked in its send: a deadlock report names it.
            th.blocked = Some((c, span, true));
            return Step::Blocked;
        }
        th.awaiting = None;
    }
    if let Some((c, span)) = th.pending.take() {
        return if try_send(th, chans, depths, c, span) {
            Step::Progress
        } else {
            Step::Blocked
        };
    }
    loop {
        let Some(frame) = th.frames.last_mut() else {
            return Step::Done;
        };
        match frame {
            Frame::Block { nodes, pc } => {
                let nodes: &[Node] = nodes;
                let Some(n) = nodes.get(*pc) else {
                    th.frames.pop();
                    continue;
                };
                *pc += 1;
                match n {
                    Node::Task => return Step::Progress,
                    Node::Send { ch, at } => {
                        try_send(th, chans, depths, *ch, *at);
                        return Step::Progress;
                    }
                    Node::Loop { count, body } => {
                        th.frames.push(Frame::Loop { left: *count, body })
                    }
                    Node::Consume { ch, at, body } => th.frames.push(Frame::Consume {
                        ch: *ch,
                        at: *at,
                        body,
                    }),
                }
            }
            Frame::Loop { left, body } => {
                if *left == 0 {
                    th.frames.pop();
                    continue;
                }
                *left -= 1;
                let body: &[Node] = body;
                th.frames.push(Frame::Block { nodes: body, pc: 0 });
            }
            Frame::Consume { ch, at, body } => {
                let (c, span, body): (usize, At, &[Node]) = (*ch, *at, body);
                match chans[c].queue.pop_front() {
                    Some(_) => {
                        th.received[c] += 1;
                        th.frames.push(Frame::Block { nodes: body, pc: 0 });
                        return Step::Progress;
                    }
                    None if chans[c].live_producers == 0 => {
                        th.frames.pop();
                    }
                    None => {
                        th.blocked = Some((c, span, false));
                        return Step::Blocked;
                    }
                }
            }
        }
    }
}

fn try_send(th: &mut Thread, chans: &mut [ChanState], depths: &[u64], c: usize, span: At) -> bool {
    let depth = depths[c];
    let ch = &mut chans[c];
    if ch.queue.len() as u64 >= depth.max(1) {
        th.pending = Some((c, span));
        th.blocked = Some((c, span, true));
        return false;
    }
    ch.serial += 1;
    ch.queue.push_back(ch.serial);
    th.sent[c] += 1;
    if depth == 0 {
        th.awaiting = Some((c, ch.serial, span));
        th.blocked = Some((c, span, true));
    }
    true
}

/// Runs the instances (`(process, replica count)`) with the given depths.
pub(super) fn simulate(
    procs: &[&Proc],
    nchans: usize,
    depths: &[u64],
    budget: &mut u64,
) -> Outcome {
    let mut chans = vec![
        ChanState {
            queue: VecDeque::new(),
            live_producers: 0,
            serial: 0,
        };
        nchans
    ];
    let mut threads: Vec<Thread> = Vec::new();
    for p in procs {
        for &c in &p.produces {
            chans[c].live_producers += 1;
        }
        threads.push(Thread {
            frames: vec![Frame::Block {
                nodes: &p.body,
                pc: 0,
            }],
            pending: None,
            awaiting: None,
            blocked: None,
            sent: vec![0; nchans],
            received: vec![0; nchans],
        });
    }
    let mut done = vec![false; threads.len()];
    loop {
        // As `wsp run` schedules them: one step of the lowest-numbered process that can take
        // one, then again from the first (a blocked process's step changes nothing).
        let mut progressed = false;
        for (i, th) in threads.iter_mut().enumerate() {
            if done[i] {
                continue;
            }
            if *budget == 0 {
                return Outcome::TooLarge;
            }
            *budget -= 1;
            match step(th, &mut chans, depths) {
                Step::Progress => progressed = true,
                Step::Blocked => {}
                Step::Done => {
                    done[i] = true;
                    progressed = true;
                    for &c in &procs[i].produces {
                        chans[c].live_producers = chans[c].live_producers.saturating_sub(1);
                    }
                }
            }
            if progressed {
                break;
            }
        }
        if done.iter().all(|d| *d) {
            let mut sent = vec![0; nchans];
            for t in &threads {
                for (s, x) in sent.iter_mut().zip(&t.sent) {
                    *s += x;
                }
            }
            return Outcome::Completes { sent };
        }
        if !progressed {
            let waits = threads
                .iter()
                .enumerate()
                .filter(|(i, _)| !done[*i])
                .filter_map(|(i, t)| {
                    t.blocked.map(|(ch, at, sending)| Wait {
                        thread: i,
                        ch,
                        at,
                        sending,
                    })
                })
                .collect();
            return Outcome::Deadlock {
                waits,
                fill: chans.iter().map(|c| c.queue.len()).collect(),
                threads: threads
                    .iter()
                    .map(|t| (t.sent.clone(), t.received.clone()))
                    .collect(),
                done,
            };
        }
    }
}
