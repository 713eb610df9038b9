//! Channels, processes and the parts of a `connect` (with `replicate`).

use crate::{is_name, Lowerer, R};
use std::collections::BTreeMap;
use wsp_ir::workload as w;
use wsp_syntax::ast::{self, ExprKind};

impl Lowerer {
    /// `channel c: Channel[depth: 2, latency: 10]` (depth 1 when omitted; the model's latency
    /// when `latency` is).
    pub(super) fn channel(&mut self, c: &ast::ChannelDecl) -> R<()> {
        let mut depth = 1u32;
        let mut latency = None;
        for a in &c.args {
            let what = a.name.as_ref().map(|n| n.name.as_str());
            let v = self.const_int(&a.value).map_err(|_| {
                self.unsupported(
                    a.value.span,
                    "a channel argument that is not a constant integer",
                )
            })?;
            match what {
                Some("depth") => {
                    depth = u32::try_from(v).map_err(|_| {
                        self.unsupported(a.value.span, format!("a channel depth of {v}"))
                    })?
                }
                Some("latency") => {
                    latency = Some(u64::try_from(v).map_err(|_| {
                        self.unsupported(a.value.span, format!("a channel latency of {v}"))
                    })?)
                }
                _ => return Err(self.unsupported(a.span, "this channel argument")),
            }
        }
        self.channels.insert(
            c.name.name.clone(),
            w::ChannelId(self.p.channels.len() as u32),
        );
        self.p.channels.push(w::Channel {
            name: c.name.name.clone(),
            depth,
            latency,
        });
        Ok(())
    }

    pub(super) fn channel_id(&self, n: &ast::Ident) -> R<w::ChannelId> {
        self.channels
            .get(&n.name)
            .copied()
            .ok_or_else(|| self.unsupported(n.span, format!("`{}` as a channel", n.name)))
    }

    /// `process p consumes a produces b { body }`.
    pub(super) fn process(&self, pr: &ast::Process) -> R<w::Process> {
        let consumes = pr
            .consumes
            .iter()
            .map(|c| self.channel_id(c))
            .collect::<R<Vec<_>>>()?;
        let produces = pr
            .produces
            .iter()
            .map(|c| self.channel_id(c))
            .collect::<R<Vec<_>>>()?;
        let mut names = Vec::new();
        self.in_process.set(true);
        let body = self.wblock(&pr.body, &mut names, &mut BTreeMap::new());
        self.in_process.set(false);
        let body = body?;
        Ok(w::Process {
            name: pr.name.name.clone(),
            consumes,
            produces,
            vars: names,
            body,
        })
    }

    /// The arguments of `connect(p1, p2, replicate(worker, 4))`.
    pub(super) fn connect_items(&self, args: &[ast::Arg]) -> R<Vec<w::ConnectItem>> {
        let mut items = Vec::new();
        for a in args {
            let (proc_expr, replicas) = match &a.value.kind {
                ExprKind::Call {
                    callee,
                    coords: None,
                    args: rargs,
                } if is_name(callee, "replicate") && rargs.len() == 2 => {
                    let n = self.const_int(&rargs[1].value).map_err(|_| {
                        self.unsupported(
                            rargs[1].value.span,
                            "a `replicate` count that is not a constant integer",
                        )
                    })?;
                    let n = u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
                        self.unsupported(
                            rargs[1].value.span,
                            format!("`replicate` with a count of {n} (it needs at least 1)"),
                        )
                    })?;
                    (&rargs[0].value, n)
                }
                _ => (&a.value, 1),
            };
            match &proc_expr.kind {
                ExprKind::Name(n) if self.processes.contains_key(&n.name) => {
                    items.push(w::ConnectItem {
                        process: self.processes[&n.name],
                        replicas,
                    })
                }
                _ => return Err(self.unsupported(a.span, "this `connect` part")),
            }
        }
        Ok(items)
    }
}
