//! Statements: blocks, channel sends and receives, `when` branches, order groups, workload
//! calls and task submission (coordinates and arguments evaluated into the call site's slots).

use super::{Gen, BEGIN_PAR, BLOCKED, END, PROGRESS, R};
use crate::orch::{CallSite, Fail, SiteArg, Ty};
use cranelift::prelude::*;
use wsp_ir::exec::{chan_name, expr_reads};
use wsp_ir::kernel::ParamKind;
use wsp_ir::workload::*;

impl Gen<'_, '_> {
    pub fn block(&mut self, stmts: &[WStmt]) -> R<()> {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn channel_ok(&self, c: ChannelId) -> R<()> {
        if c.index() < self.f.p.channels.len() {
            Ok(())
        } else {
            Err(format!("channel #{} does not exist", c.0))
        }
    }

    fn stmt(&mut self, s: &WStmt) -> R<()> {
        match s {
            WStmt::For {
                kind,
                vars,
                iters,
                body,
            } => self.for_(*kind, vars, iters, body)?,
            WStmt::When {
                branches,
                otherwise,
            } => {
                let mut reads = Vec::new();
                for br in branches {
                    expr_reads(&br.cond, &mut reads);
                }
                self.sync(&reads);
                let join = self.b.create_block();
                let saved = self.bound.clone();
                for br in branches {
                    let (t, c) = self.expr(&br.cond)?;
                    let c = if t != Ty::B {
                        let k = self.c(t as i64);
                        let bits = self.bits(t, c);
                        self.fail(Fail::NotBool, k, bits);
                        self.c(0)
                    } else {
                        c
                    };
                    let then = self.b.create_block();
                    let next = self.b.create_block();
                    self.b.ins().brif(c, then, &[], next, &[]);
                    self.b.switch_to_block(then);
                    self.branch_body(&br.body)?;
                    self.bound.clone_from(&saved);
                    self.b.ins().jump(join, &[]);
                    self.b.switch_to_block(next);
                }
                self.branch_body(otherwise)?;
                self.bound = saved;
                self.b.ins().jump(join, &[]);
                self.b.switch_to_block(join);
            }
            WStmt::Call(call) => {
                self.task(call)?;
                if self.process {
                    self.yield_(PROGRESS);
                }
            }
            WStmt::Local { tensor, body } => {
                if tensor.index() >= self.f.p.tensors.len() {
                    return Err(format!("tensor #{} does not exist", tensor.0));
                }
                let t = self.c(i64::from(tensor.0));
                let begin = self.c(1);
                self.checked(self.cb.local, &[t, begin]);
                self.block(body)?;
                let t = self.c(i64::from(tensor.0));
                let end = self.c(0);
                self.checked(self.cb.local, &[t, end]);
            }
            WStmt::Run { workload } => {
                if workload.index() >= self.f.p.workloads.len() {
                    return Err(format!("workload #{} does not exist", workload.0));
                }
                let w = self.c(i64::from(workload.0));
                self.checked(self.cb.run, &[w]);
                if self.process {
                    self.yield_(PROGRESS);
                }
            }
            WStmt::Send { channel, payload } => {
                self.channel_ok(*channel)?;
                if !self.process {
                    self.fail0(Fail::InThread(format!(
                        "`send` on channel `{}` outside a `connect` of its processes",
                        chan_name(self.f.p, *channel)
                    )));
                    return Ok(());
                }
                let (slot, n, after) = match payload {
                    SendPayload::Task(call) => {
                        let site = self.task(call)?;
                        (self.calls[site].coords, call.coords.len(), 1)
                    }
                    SendPayload::Values { values } => {
                        let mut reads = Vec::new();
                        values.iter().for_each(|e| expr_reads(e, &mut reads));
                        self.sync(&reads);
                        let base = self.alloc(values.len());
                        for (i, e) in values.iter().enumerate() {
                            let v = self.int(e, "a sent value")?;
                            self.st(base + i, v);
                        }
                        (base, values.len(), 0)
                    }
                };
                let ch = self.c(i64::from(channel.0));
                let ptr = self.slot_addr(slot);
                let n = self.c(n as i64);
                let after = self.c(after);
                self.checked(self.cb.send, &[ch, ptr, n, after]);
                self.yield_(PROGRESS);
            }
            WStmt::Consume {
                channel,
                bindings,
                body,
            } => {
                self.channel_ok(*channel)?;
                if !self.process {
                    self.fail0(Fail::InThread(format!(
                        "`consume` on channel `{}` outside a `connect` of its processes",
                        chan_name(self.f.p, *channel)
                    )));
                    return Ok(());
                }
                for v in bindings {
                    if v.index() >= self.nvars() {
                        return Err(format!("loop variable #{} does not exist", v.0));
                    }
                }
                let buf = self.alloc(bindings.len().max(1));
                let head = self.b.create_block();
                let exit = self.b.create_block();
                self.b.ins().jump(head, &[]);
                // The head is also a resume point: a blocked receive returns and retries here.
                let id = self.resume.len() as i64;
                self.resume.push(head);
                self.b.switch_to_block(head);
                let ch = self.c(i64::from(channel.0));
                let ptr = self.slot_addr(buf);
                let n = self.c(bindings.len() as i64);
                let st = self.call(self.cb.recv, &[self.ctx, ch, ptr, n]);
                let got = self.b.create_block();
                let not = self.b.create_block();
                self.b.ins().brif(st, not, &[], got, &[]);
                self.b.switch_to_block(not);
                let closed = self.b.create_block();
                let other = self.b.create_block();
                let is_closed = self.b.ins().icmp_imm_s(IntCC::Equal, st, 1);
                self.b.ins().brif(is_closed, closed, &[], other, &[]);
                self.b.switch_to_block(closed);
                self.b.ins().jump(exit, &[]);
                self.b.switch_to_block(other);
                let blocked = self.b.create_block();
                let is_blocked = self.b.ins().icmp_imm_s(IntCC::Equal, st, 2);
                self.b.ins().brif(is_blocked, blocked, &[], self.err, &[]);
                self.b.switch_to_block(blocked);
                self.stc(0, id);
                let c = self.c(BLOCKED);
                self.b.ins().return_(&[c]);
                self.b.switch_to_block(got);
                let saved = self.bound.clone();
                for (i, v) in bindings.iter().enumerate() {
                    let x = self.ld(buf + i);
                    let (vs, fs) = (self.val_slot(v.index()), self.flag_slot(v.index()));
                    self.st(vs, x);
                    self.stc(fs, 1);
                    self.bound[v.index()] = true;
                }
                self.yield_(PROGRESS);
                self.block(body)?;
                self.bound = saved;
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(exit);
            }
        }
        Ok(())
    }

    /// A chosen `when` branch: its own order group.
    fn branch_body(&mut self, body: &[WStmt]) -> R<()> {
        if !self.process {
            self.order(BEGIN_PAR);
        }
        self.block(body)?;
        if !self.process {
            self.order(END);
        }
        Ok(())
    }

    /// Evaluates a task's coordinates and arguments and submits it; returns its site.
    fn task(&mut self, call: &TaskCall) -> R<usize> {
        let k = self
            .f
            .p
            .kernel(call.kernel)
            .ok_or_else(|| format!("kernel #{} does not exist", call.kernel.0))?;
        if call.args.len() != k.params.len() {
            return Err(format!(
                "a call of `{}` has {} arguments for {} parameters",
                k.name,
                call.args.len(),
                k.params.len()
            ));
        }
        let mut reads = Vec::new();
        call.coords.iter().for_each(|c| expr_reads(c, &mut reads));
        for a in &call.args {
            if let TaskArg::Scalar { value } = a {
                expr_reads(value, &mut reads);
            }
        }
        self.sync(&reads);
        let coords = self.alloc(call.coords.len());
        for (i, c) in call.coords.iter().enumerate() {
            let v = self.int(c, "a task coordinate")?;
            self.st(coords + i, v);
        }
        let site = self.calls.len();
        self.calls.push(CallSite {
            call: call.clone(),
            coords,
            args: Vec::new(),
        });
        let s = self.c(site as i64);
        self.checked(self.cb.begin, &[s]);
        let mut args = Vec::new();
        for (i, (param, arg)) in k.params.iter().zip(&call.args).enumerate() {
            match (&param.kind, arg) {
                (ParamKind::Tile { .. }, TaskArg::View(view)) => {
                    let &(_, rank) = self
                        .f
                        .tensors
                        .get(view.tensor.index())
                        .ok_or_else(|| format!("tensor #{} does not exist", view.tensor.0))?;
                    let base = self.alloc(2 * rank);
                    for (d, vd) in view.dims.iter().take(rank).enumerate() {
                        match vd {
                            ViewDim::Index { at } => {
                                let v = self.affine(at)?;
                                self.st(base + 2 * d, v);
                            }
                            ViewDim::Slice { start, end } => {
                                let v = self.affine(start)?;
                                self.st(base + 2 * d, v);
                                let v = self.affine(end)?;
                                self.st(base + 2 * d + 1, v);
                            }
                            ViewDim::Full => {}
                        }
                    }
                    args.push(SiteArg::View { base });
                    let s = self.c(site as i64);
                    let a = self.c(i as i64);
                    self.checked(self.cb.view, &[s, a]);
                }
                (ParamKind::Scalar { .. }, TaskArg::Scalar { value }) => {
                    let (t, v) = self.expr(value)?;
                    let slot = self.alloc(1);
                    let bits = self.bits(t, v);
                    self.st(slot, bits);
                    args.push(SiteArg::Scalar { slot, ty: t });
                }
                _ => {
                    return Err(format!(
                        "argument `{}` of a call of `{}` is of the wrong kind (view vs scalar)",
                        param.name, k.name
                    ))
                }
            }
        }
        self.calls[site].args = args;
        let s = self.c(site as i64);
        self.checked(self.cb.task, &[s]);
        Ok(site)
    }
}
