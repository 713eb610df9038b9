//! Running a workload and stepping a thread through its statements (loops, `when`, task calls,
//! runs of other workloads, sends, consumes, local tensors) until one visible action.

use super::eval::V;
use super::loops::{arity_error, set_var};
use super::{
    chan_name, counted_loop, expr_reads, iter_reads, local_begin, try_send, xerr, Chan, ExecError,
    Frame, Machine, OrderEvent, ProcAction, Step, Thread, Tuples,
};
use crate::workload::*;

impl<'p> Machine<'p, '_> {
    pub(super) fn run_workload(&mut self, w: WorkloadId) -> Result<(), ExecError> {
        self.depth += 1;
        if self.depth > 64 {
            return Err(xerr(
                "workloads nest more than 64 deep (a workload runs itself?)",
            ));
        }
        let wl = self
            .p
            .workloads
            .get(w.index())
            .ok_or_else(|| xerr(format!("workload #{} does not exist", w.0)))?;
        let r = match &wl.body {
            WorkloadBody::Block { stmts } => {
                let mut th = Thread {
                    name: format!("workload `{}`", wl.name),
                    vars: vec![None; wl.vars.len()],
                    var_names: &wl.vars,
                    frames: vec![Frame::Block {
                        stmts,
                        pc: 0,
                        local: None,
                    }],
                    pending: None,
                    awaiting: None,
                    process: None,
                    waiting: None,
                    var_axes: vec![None; wl.vars.len()],
                    external: None,
                };
                let mut no_chans = Vec::new();
                self.order(&th, OrderEvent::Begin { seq: false })?;
                loop {
                    match self.step(&mut th, &mut no_chans)? {
                        Step::Done => break Ok(()),
                        Step::Progress => {}
                        Step::Blocked => {
                            break Err(xerr(format!(
                                "{} uses a channel outside a process ({})",
                                th.name,
                                th.waiting.unwrap_or_default()
                            )))
                        }
                    }
                }
            }
            WorkloadBody::Sequential { parts } => {
                self.backend
                    .order(OrderEvent::Begin { seq: true })
                    .map_err(xerr)?;
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        self.backend.barrier(self.tensors).map_err(xerr)?;
                        self.backend.order(OrderEvent::Step).map_err(xerr)?;
                    }
                    self.run_workload(*part)?;
                }
                self.backend.order(OrderEvent::End).map_err(xerr)
            }
            WorkloadBody::Combine { parts } => {
                self.backend
                    .order(OrderEvent::Begin { seq: false })
                    .map_err(xerr)?;
                for part in parts {
                    self.run_workload(*part)?;
                }
                self.backend.order(OrderEvent::End).map_err(xerr)
            }
            WorkloadBody::Connect { processes } => {
                match self
                    .backend
                    .connect(self.p, &wl.name, processes, self.params, self.tensors)
                {
                    Some(r) => r.map(|tasks| self.out.tasks.extend(tasks)),
                    None => self.run_connect(&wl.name, processes),
                }
            }
        };
        self.depth -= 1;
        r
    }

    /// Runs `th` until one visible action, a block, or its end.
    pub(super) fn step(
        &mut self,
        th: &mut Thread<'p>,
        chans: &mut [Chan],
    ) -> Result<Step, ExecError> {
        let p = self.p;
        th.waiting = None;
        if let Some((c, serial)) = th.awaiting {
            let ch = chans.get(c.index()).ok_or_else(|| xerr("bad channel"))?;
            if ch.queue.iter().any(|(s, _)| *s == serial) {
                th.waiting = Some(format!(
                    "for its token on `{}` to be taken",
                    chan_name(p, c)
                ));
                return Ok(Step::Blocked);
            }
            th.awaiting = None;
        }
        if let Some((c, tok)) = th.pending.take() {
            return Ok(match try_send(p, chans, c, tok, th.send_state())? {
                true => Step::Progress,
                false => Step::Blocked,
            });
        }
        loop {
            let Some(frame) = th.frames.last_mut() else {
                return Ok(Step::Done);
            };
            match frame {
                Frame::Block { stmts, pc, local } => {
                    let Some(s) = stmts.get(*pc) else {
                        let local = *local;
                        th.frames.pop();
                        match local {
                            Some(t) => self.backend.local_end(t).map_err(xerr)?,
                            None => self.order(th, OrderEvent::End)?,
                        }
                        continue;
                    };
                    *pc += 1;
                    match s {
                        WStmt::For {
                            kind,
                            vars,
                            iters,
                            body,
                            ..
                        } => {
                            let mut reads = Vec::new();
                            for it in iters.iter() {
                                iter_reads(p, it, &mut reads);
                            }
                            self.sync(&reads)?;
                            let outer_axes: Vec<Option<AxisId>> = vars
                                .iter()
                                .map(|v| th.var_axes.get(v.index()).copied().flatten())
                                .collect();
                            let mut pos = 0;
                            for it in iters.iter() {
                                let bound: Vec<Option<AxisId>> = match it {
                                    Iter::Axis { axis } => match self.axis(*axis)?.kind {
                                        AxisKind::Ragged { outer, .. }
                                        | AxisKind::Sparse { outer, .. } => {
                                            vec![Some(outer), Some(*axis)]
                                        }
                                        _ => vec![Some(*axis)],
                                    },
                                    Iter::Row { axis, .. } => vec![Some(*axis)],
                                    Iter::Range { .. } => vec![None],
                                };
                                for a in bound {
                                    if let Some(v) = vars.get(pos) {
                                        if let Some(slot) = th.var_axes.get_mut(v.index()) {
                                            *slot = a;
                                        }
                                    }
                                    pos += 1;
                                }
                            }
                            let tuples = if counted_loop(p, iters, &reads) {
                                if vars.len() != iters.len() {
                                    return Err(arity_error(th, vars.len(), iters.len()));
                                }
                                Tuples::Counted {
                                    iters,
                                    at: vec![(0, 0); iters.len()],
                                }
                            } else {
                                let mut out = (Vec::new(), 0);
                                let mut vals = th.vars.clone();
                                self.iterate(
                                    th,
                                    vars,
                                    iters,
                                    0,
                                    &mut vals,
                                    &mut Vec::new(),
                                    &mut out,
                                )?;
                                Tuples::Listed {
                                    flat: out.0,
                                    width: vars.len(),
                                    len: out.1,
                                }
                            };
                            let seq = *kind == LoopKind::Sequential;
                            self.order(th, OrderEvent::Begin { seq })?;
                            th.frames.push(Frame::Loop {
                                vars,
                                tuples,
                                next: 0,
                                body,
                                outer_axes,
                            });
                        }
                        WStmt::When {
                            branches,
                            otherwise,
                        } => {
                            let mut chosen: &'p [WStmt] = otherwise;
                            let mut reads = Vec::new();
                            for b in branches.iter() {
                                expr_reads(&b.cond, &mut reads);
                            }
                            self.sync(&reads)?;
                            for b in branches {
                                match self.eval(th, &b.cond)? {
                                    V::B(true) => {
                                        chosen = &b.body;
                                        break;
                                    }
                                    V::B(false) => {}
                                    other => {
                                        return Err(xerr(format!(
                                            "in {}: a `when` condition evaluated to {other:?}, not a bool",
                                            th.name
                                        )))
                                    }
                                }
                            }
                            self.order(th, OrderEvent::Begin { seq: false })?;
                            th.frames.push(Frame::Block {
                                stmts: chosen,
                                pc: 0,
                                local: None,
                            });
                        }
                        WStmt::Call(call) => {
                            self.exec_task(th, call)?;
                            return Ok(Step::Progress);
                        }
                        WStmt::Run { workload } => {
                            self.run_workload(*workload)?;
                            return Ok(Step::Progress);
                        }
                        WStmt::Send { channel, payload } => {
                            if th.external.is_none() && chans.get(channel.index()).is_none() {
                                return Err(xerr(format!(
                                    "in {}: `send` on channel `{}` outside a `connect` of its processes",
                                    th.name,
                                    chan_name(p, *channel)
                                )));
                            }
                            let tok = match payload {
                                SendPayload::Task(call) => self.exec_task(th, call)?,
                                SendPayload::Values { values } => {
                                    let mut reads = Vec::new();
                                    values.iter().for_each(|e| expr_reads(e, &mut reads));
                                    self.sync(&reads)?;
                                    values
                                        .iter()
                                        .map(|e| self.eval_int(th, e, "a sent value"))
                                        .collect::<Result<_, _>>()?
                                }
                            };
                            if let Some(io) = th.external.as_mut() {
                                io.action = Some(ProcAction::Send {
                                    channel: *channel,
                                    token: tok,
                                    after_task: matches!(payload, SendPayload::Task(_)),
                                });
                                return Ok(Step::Progress);
                            }
                            try_send(p, chans, *channel, tok, th.send_state())?;
                            return Ok(Step::Progress);
                        }
                        WStmt::Consume {
                            channel,
                            bindings,
                            body,
                        } => {
                            if th.external.is_none() && chans.get(channel.index()).is_none() {
                                return Err(xerr(format!(
                                    "in {}: `consume` on channel `{}` outside a `connect` of its processes",
                                    th.name,
                                    chan_name(p, *channel)
                                )));
                            }
                            th.frames.push(Frame::Consume {
                                channel: *channel,
                                bindings,
                                body,
                            });
                        }
                        WStmt::Local { tensor, body } => {
                            self.local_begin(*tensor)?;
                            th.frames.push(Frame::Block {
                                stmts: body,
                                pc: 0,
                                local: Some(*tensor),
                            });
                        }
                    }
                }
                Frame::Loop {
                    vars,
                    tuples,
                    next,
                    body,
                    ..
                } => {
                    let (vars, body, n): (&'p [LoopVar], &'p [WStmt], usize) = (vars, body, *next);
                    let mut tuples = std::mem::replace(tuples, Tuples::Moved);
                    let more = self.next_tuple(th, vars, &mut tuples, n);
                    let Some(Frame::Loop {
                        tuples: slot,
                        next,
                        outer_axes,
                        ..
                    }) = th.frames.last_mut()
                    else {
                        return Err(xerr("a loop lost its frame"));
                    };
                    *slot = tuples;
                    if !more? {
                        let outer = std::mem::take(outer_axes);
                        for (v, a) in vars.iter().zip(outer) {
                            if let Some(slot) = th.var_axes.get_mut(v.index()) {
                                *slot = a;
                            }
                        }
                        th.frames.pop();
                        self.order(th, OrderEvent::End)?;
                        continue;
                    }
                    let first = *next == 0;
                    *next += 1;
                    if !first {
                        self.order(th, OrderEvent::Step)?;
                    }
                    self.order(th, OrderEvent::Begin { seq: false })?;
                    th.frames.push(Frame::Block {
                        stmts: body,
                        pc: 0,
                        local: None,
                    });
                }
                Frame::Consume {
                    channel,
                    bindings,
                    body,
                } => {
                    let (c, bindings, body): (ChannelId, &'p [LoopVar], &'p [WStmt]) =
                        (*channel, bindings, body);
                    if let Some(io) = th.external.as_mut() {
                        match io.inbox.take() {
                            None => {
                                io.action = Some(ProcAction::Recv { channel: c });
                                return Ok(Step::Blocked);
                            }
                            Some(None) => {
                                th.frames.pop();
                                continue;
                            }
                            Some(Some(tok)) => {
                                if tok.len() < bindings.len() {
                                    return Err(xerr(format!(
                                        "in {}: a token of {} values on `{}` binds {} names",
                                        th.name,
                                        tok.len(),
                                        chan_name(p, c),
                                        bindings.len()
                                    )));
                                }
                                for (v, x) in bindings.iter().zip(tok) {
                                    set_var(th, *v, x)?;
                                }
                                th.frames.push(Frame::Block {
                                    stmts: body,
                                    pc: 0,
                                    local: None,
                                });
                                return Ok(Step::Progress);
                            }
                        }
                    }
                    let ch = chans
                        .get_mut(c.index())
                        .ok_or_else(|| xerr("bad channel"))?;
                    match ch.queue.pop_front() {
                        Some((_, tok)) => {
                            if tok.len() < bindings.len() {
                                return Err(xerr(format!(
                                    "in {}: a token of {} values on `{}` binds {} names",
                                    th.name,
                                    tok.len(),
                                    chan_name(p, c),
                                    bindings.len()
                                )));
                            }
                            for (v, x) in bindings.iter().zip(tok) {
                                set_var(th, *v, x)?;
                            }
                            th.frames.push(Frame::Block {
                                stmts: body,
                                pc: 0,
                                local: None,
                            });
                            return Ok(Step::Progress);
                        }
                        None if ch.live_producers == 0 => {
                            th.frames.pop();
                        }
                        None => {
                            th.waiting = Some(format!("on `{}` (empty)", chan_name(p, c)));
                            return Ok(Step::Blocked);
                        }
                    }
                }
            }
        }
    }

    fn local_begin(&mut self, t: TensorId) -> Result<(), ExecError> {
        local_begin(&mut *self.backend, self.tensors, t)
    }

    /// Reports a structural event of the main orchestration to the backend (process
    /// threads report none).
    fn order(&mut self, th: &Thread<'p>, event: OrderEvent) -> Result<(), ExecError> {
        if th.process.is_some() || th.external.is_some() {
            return Ok(());
        }
        self.backend.order(event).map_err(xerr)
    }
}
