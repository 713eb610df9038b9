//! CSP processes and channels: the process instances of a `connect`, stepped one visible
//! action at a time by an outside scheduler ([`ProcThread`]), and the deterministic round-robin
//! with bounded channels that both orchestration engines run otherwise.

use super::{
    xerr, ExecError, ExecOutcome, ExtIo, Frame, Machine, TaskBackend, TaskRecord, Thread,
    MAX_PROCESSES,
};
use crate::dtype::ScalarValue;
use crate::tensor::HostTensor;
use crate::workload::*;
use std::collections::VecDeque;
use wsp_vocab::codes;

/// What one step of a process did, for a scheduler outside the interpreter.
#[derive(Clone, Debug, PartialEq)]
pub enum ProcAction {
    /// It made progress (generated a task); step it again.
    Continue,
    /// Send `token` on `channel`. With `after_task`, the token is the coordinates of the
    /// task the step generated and is delivered when that task completes.
    Send {
        channel: ChannelId,
        token: Vec<i64>,
        after_task: bool,
    },
    /// Wait for a token on `channel`; give it (or `None`: closed and empty) to the next step.
    Recv { channel: ChannelId },
    /// The process has ended.
    Finished,
}

/// One process instance of a `connect`, stepped by an outside scheduler.
pub struct ProcThread<'p> {
    th: Thread<'p>,
    /// The channels this instance produces (a channel closes when all its producers end).
    pub produces: Vec<ChannelId>,
}

/// The process instances of a `connect`, in order: each process's id, its definition and the
/// instance's name (`replicate(p, n)` gives `p#0` … `p#n-1`). The interpreter and the
/// compiled orchestration both start their instances from this list.
pub fn connect_instances<'p>(
    p: &'p Program,
    items: &[ConnectItem],
) -> Result<Vec<(ProcessId, &'p Process, String)>, ExecError> {
    let total: u64 = items.iter().map(|i| i.replicas as u64).sum();
    if total > MAX_PROCESSES as u64 {
        return Err(xerr(format!(
            "a `connect` of {total} process instances: at most {MAX_PROCESSES}"
        )));
    }
    let mut out = Vec::new();
    for item in items {
        let proc_ = p
            .processes
            .get(item.process.index())
            .ok_or_else(|| xerr(format!("process #{} does not exist", item.process.0)))?;
        for r in 0..item.replicas {
            let name = if item.replicas > 1 {
                format!("{}#{r}", proc_.name)
            } else {
                proc_.name.clone()
            };
            out.push((item.process, proc_, name));
        }
    }
    Ok(out)
}

/// The process instances of a `connect`, ready to step.
pub fn connect_threads<'p>(
    p: &'p Program,
    items: &[ConnectItem],
) -> Result<Vec<ProcThread<'p>>, ExecError> {
    Ok(connect_instances(p, items)?
        .into_iter()
        .map(|(id, proc_, name)| ProcThread {
            th: Thread {
                name,
                vars: vec![None; proc_.vars.len()],
                var_names: &proc_.vars,
                frames: vec![Frame::Block {
                    stmts: &proc_.body,
                    pc: 0,
                    local: None,
                }],
                pending: None,
                awaiting: None,
                process: Some(id),
                waiting: None,
                var_axes: vec![None; proc_.vars.len()],
                external: None,
            },
            produces: proc_.produces.clone(),
        })
        .collect())
}

impl<'p> ProcThread<'p> {
    /// `name` or `name#replica`.
    pub fn name(&self) -> &str {
        &self.th.name
    }

    /// Runs the process until its next visible action. `received` is the result of the
    /// previous [`ProcAction::Recv`] (`Some(None)`: the channel is closed). Tasks go to
    /// `backend`; their records are appended to `tasks`.
    pub fn step(
        &mut self,
        program: &'p Program,
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
        backend: &mut dyn TaskBackend,
        received: Option<Option<Vec<i64>>>,
        tasks: &mut Vec<TaskRecord>,
    ) -> Result<ProcAction, ExecError> {
        let io = self.th.external.get_or_insert_with(ExtIo::default);
        io.action = None;
        if received.is_some() {
            io.inbox = received;
        }
        let mut m = Machine {
            p: program,
            params,
            tensors,
            out: ExecOutcome::default(),
            depth: 1,
            backend,
        };
        let step = m.step(&mut self.th, &mut []);
        tasks.append(&mut m.out.tasks);
        let action = self.th.external.as_mut().and_then(|io| io.action.take());
        Ok(match (step?, action) {
            (_, Some(a)) => a,
            (Step::Done, None) => ProcAction::Finished,
            (Step::Progress, None) => ProcAction::Continue,
            (Step::Blocked, None) => {
                return Err(xerr(format!(
                    "process `{}` blocked without a channel action",
                    self.th.name
                )))
            }
        })
    }
}

/// A channel of the interpreters' own round-robin ([`round_robin`]).
pub struct Chan {
    /// Queued tokens with their serial numbers.
    pub queue: VecDeque<(u64, Vec<i64>)>,
    /// Producers still running (the channel is closed at 0).
    pub live_producers: u32,
    pub serial: u64,
}

/// What one step of a process did under [`round_robin`].
pub enum Step {
    Progress,
    Blocked,
    Done,
}

/// The deterministic round-robin of a `connect` that both orchestration engines use when the
/// backend does not schedule processes: steps every unfinished thread in turn until all have
/// finished; a channel closes when every producer of it has finished; a round in which no
/// thread makes progress is a deadlock (E0811), reported with what each thread waits for
/// (`waiting`: its name and wait) and every channel's fill.
pub fn round_robin<T>(
    p: &Program,
    wname: &str,
    threads: &mut [T],
    produces: impl Fn(&T) -> Vec<ChannelId>,
    waiting: impl Fn(&T) -> (String, String),
    mut step: impl FnMut(&mut T, &mut [Chan]) -> Result<Step, ExecError>,
) -> Result<(), ExecError> {
    let mut chans: Vec<Chan> = p
        .channels
        .iter()
        .map(|_| Chan {
            queue: VecDeque::new(),
            live_producers: 0,
            serial: 0,
        })
        .collect();
    for t in threads.iter() {
        for c in produces(t) {
            let ch = chans
                .get_mut(c.index())
                .ok_or_else(|| xerr(format!("channel #{} does not exist", c.0)))?;
            ch.live_producers += 1;
        }
    }
    let mut done = vec![false; threads.len()];
    loop {
        let mut progressed = false;
        for (i, th) in threads.iter_mut().enumerate() {
            if done[i] {
                continue;
            }
            match step(th, &mut chans)? {
                Step::Progress => progressed = true,
                Step::Blocked => {}
                Step::Done => {
                    done[i] = true;
                    progressed = true;
                    for c in produces(th) {
                        if let Some(ch) = chans.get_mut(c.index()) {
                            ch.live_producers = ch.live_producers.saturating_sub(1);
                        }
                    }
                }
            }
        }
        if done.iter().all(|d| *d) {
            return Ok(());
        }
        if !progressed {
            let waits: Vec<String> = threads
                .iter()
                .zip(&done)
                .filter(|(_, d)| !**d)
                .map(|(t, _)| {
                    let (name, wait) = waiting(t);
                    format!("`{name}` waits {wait}")
                })
                .collect();
            let fill: Vec<String> = p
                .channels
                .iter()
                .zip(&chans)
                .map(|(c, s)| {
                    format!(
                        "`{}` {}/{}{}",
                        c.name,
                        s.queue.len(),
                        c.depth,
                        if s.live_producers == 0 {
                            " (closed)"
                        } else {
                            ""
                        }
                    )
                })
                .collect();
            return Err(ExecError::new(
                codes::E0811,
                format!(
                    "deadlock in `{wname}`: {}; channels: {}. Increase a channel's depth or \
                     reorder sends and consumes so that every wait can be satisfied",
                    waits.join(", "),
                    fill.join(", ")
                ),
            ));
        }
    }
}

impl<'p> Machine<'p, '_> {
    pub(super) fn run_connect(
        &mut self,
        wname: &str,
        items: &[ConnectItem],
    ) -> Result<(), ExecError> {
        let p = self.p;
        let mut threads: Vec<Thread<'p>> = connect_threads(p, items)?
            .into_iter()
            .map(|pt| pt.th)
            .collect();
        round_robin(
            p,
            wname,
            &mut threads,
            |t| {
                t.process
                    .and_then(|pid| p.processes.get(pid.index()))
                    .map(|pr| pr.produces.clone())
                    .unwrap_or_default()
            },
            |t| (t.name.clone(), t.waiting.clone().unwrap_or_default()),
            |th, chans| self.step(th, chans),
        )
    }
}

/// A thread's channel state under [`round_robin`]: the token it could not send yet, the
/// token of a rendezvous it waits to see taken, and what it waits for (for messages).
pub struct SendState<'a> {
    pub pending: &'a mut Option<(ChannelId, Vec<i64>)>,
    pub awaiting: &'a mut Option<(ChannelId, u64)>,
    pub waiting: &'a mut Option<String>,
}

/// Sends `tok` on channel `c` under [`round_robin`]: false (and the token kept as pending)
/// when the channel is full; a depth-0 channel is a rendezvous (the sender then awaits the
/// token being taken).
pub fn try_send(
    p: &Program,
    chans: &mut [Chan],
    c: ChannelId,
    tok: Vec<i64>,
    st: SendState<'_>,
) -> Result<bool, ExecError> {
    let depth = p.channels.get(c.index()).map(|c| c.depth).unwrap_or(0);
    let ch = chans
        .get_mut(c.index())
        .ok_or_else(|| xerr(format!("channel #{} does not exist", c.0)))?;
    let cap = depth.max(1) as usize;
    if ch.queue.len() >= cap {
        *st.waiting = Some(format!("to send on `{}` (full)", chan_name(p, c)));
        *st.pending = Some((c, tok));
        return Ok(false);
    }
    ch.serial += 1;
    ch.queue.push_back((ch.serial, tok));
    if depth == 0 {
        *st.awaiting = Some((c, ch.serial));
    }
    Ok(true)
}

impl Thread<'_> {
    pub(super) fn send_state(&mut self) -> SendState<'_> {
        SendState {
            pending: &mut self.pending,
            awaiting: &mut self.awaiting,
            waiting: &mut self.waiting,
        }
    }
}

/// A channel's name for messages (`?` for an unknown id).
pub fn chan_name(p: &Program, c: ChannelId) -> &str {
    p.channels
        .get(c.index())
        .map(|c| c.name.as_str())
        .unwrap_or("?")
}
