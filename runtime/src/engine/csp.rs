//! CSP: channels and processes on the event clock. Processes are state machines stepped one at a
//! time, the lowest runnable first; a channel closes when every process that produces it has
//! finished, and only its producers send. A token sent after a task is available once that task
//! completes (plus the channel's latency); a rendezvous (depth 0) holds its sender until the
//! token is received. Each `run_processes` call is a run of its own.

use super::{
    api, Channel, Ev, PStatus, Proc, ProcCx, ProcSpec, Process, QTok, Runtime, RuntimeError,
    MAX_CYCLES, MAX_IDLE_STEPS, NIL,
};
use crate::api::{ChannelId, Received, Step, TaskId, Token};
use crate::idset::IdSet;
use crate::report::{ChannelStats, TraceEvent};
use std::collections::VecDeque;
use wsp_arch::TimingSemantics;

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

    pub(super) fn token_task_done(&mut self, c: u32, seq: u64) {
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
    pub(super) fn wake_processes(&mut self) {
        let mut woken = std::mem::take(&mut self.woken);
        woken.sort_unstable();
        woken.dedup();
        for &c in &woken {
            self.wake_channel(c);
        }
        woken.clear();
        self.woken = woken;
    }
}
