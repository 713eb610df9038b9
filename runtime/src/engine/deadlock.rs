//! How a run stops short: a deadlock's report (the ring or channel that stalled, the blocked
//! processes, every ring's use, the open scopes and a mitigation to try), a run limit, and
//! those kept, with a kernel failure, for callers that passed the error on as text. Built out
//! of line: no hot path builds them.

use super::{PStatus, RunLimit, Runtime, RuntimeError};
use crate::report::{BlockedProcess, DeadlockReport, StallReason, Wait};

impl Runtime {
    #[cold]
    #[inline(never)]
    pub(super) fn deadlock(&mut self, reason: StallReason, mitigation: String) -> RuntimeError {
        let blocked = self
            .procs
            .iter()
            .filter_map(|p| {
                let (ch, wait) = match p.status {
                    PStatus::Recv(c) => (c, Wait::Empty),
                    PStatus::Send(c) => (c, Wait::Full),
                    _ => return None,
                };
                let c = &self.channels[ch as usize];
                Some(BlockedProcess {
                    process: p.name.clone(),
                    channel: c.name.clone(),
                    wait,
                    fill: c.queue.len() as u64,
                    depth: c.depth as u64,
                })
            })
            .collect();
        let report = Box::new(DeadlockReport {
            reason,
            cycle: self.now,
            blocked,
            rings: self.ring_uses(),
            scope_depth: self.scopes.len() as u32,
            scope_held_tasks: self.held_tasks(),
            scope_held_bytes: self.arena_used,
            mitigation,
        });
        self.last_deadlock = Some(report.clone());
        RuntimeError::Deadlock(report)
    }

    pub(super) fn channel_deadlock(&mut self) -> RuntimeError {
        let full = self.procs.iter().find_map(|p| match p.status {
            PStatus::Send(c) => Some(c),
            _ => None,
        });
        let (reason, m) = match full {
            Some(c) => {
                let ch = &self.channels[c as usize];
                // The runtime sees one stuck state, not the tokens still to come: it can say
                // the depth is too small, not by how much (the CLI adds the static count).
                let waiting: Vec<String> = self
                    .procs
                    .iter()
                    .filter_map(|p| match p.status {
                        PStatus::Recv(r) => Some(format!(
                            "`{}` on `{}`",
                            p.name, self.channels[r as usize].name
                        )),
                        _ => None,
                    })
                    .collect();
                let (fill, depth) = (ch.queue.len(), ch.depth);
                let m = if waiting.is_empty() {
                    format!(
                        "channel `{}` is full ({fill}/{depth}) and no process is left to receive from it (the others have finished or wait to send): consume it in a process that is still running, or raise its depth above {depth} to hold every token sent on it",
                        ch.name
                    )
                } else {
                    format!(
                        "channel `{}` is full ({fill}/{depth}) while the processes that could receive from it wait on other channels ({}): raise its depth above {depth} (the tokens still to come decide how far), or receive from it before waiting on another channel",
                        ch.name,
                        waiting.join(", ")
                    )
                };
                (StallReason::ChannelFullWait, m)
            }
            None => {
                let names: Vec<String> = self
                    .procs
                    .iter()
                    .filter_map(|p| match p.status {
                        PStatus::Recv(c) => Some(format!("`{}`", self.channels[c as usize].name)),
                        _ => None,
                    })
                    .collect();
                (
                    StallReason::ChannelEmptyWait,
                    format!(
                        "channels {} stay empty: their producers are blocked or finished without sending enough tokens; make one process of the cycle send before it receives, or produce as many tokens as are consumed",
                        names.join(", ")
                    ),
                )
            }
        };
        self.deadlock(reason, m)
    }

    #[cold]
    #[inline(never)]
    pub(super) fn limit(&mut self, what: &'static str, limit: u64) -> RuntimeError {
        let l = RunLimit {
            what,
            limit,
            tasks: self.next_seq,
            cycle: self.total_cycles(),
        };
        self.last_limit = Some(l);
        RuntimeError::Limit(l)
    }

    /// The limit that stopped the run, if one did (kept for callers that passed the error
    /// on as text).
    pub fn limit_reached(&self) -> Option<RunLimit> {
        self.last_limit
    }

    /// The [`RuntimeError::Kernel`] failure that stopped the run, if one did (kept for
    /// callers that passed the error on as text).
    pub fn kernel_failure(&self) -> Option<&RuntimeError> {
        self.last_kernel_failure.as_deref()
    }

    /// The report of the deadlock that stopped the run, if one did (kept for callers that
    /// passed the error on as text).
    pub fn deadlock_report(&self) -> Option<&DeadlockReport> {
        self.last_deadlock.as_deref()
    }
}
