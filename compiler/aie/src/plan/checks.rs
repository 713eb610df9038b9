//! What the placement refuses before expanding anything (a task set that tensor data decides),
//! and the schedule's directives read at compile time.

use super::*;
// ------------------------------------------------------------------------ static checks

pub(super) fn expr_reads_data(e: &Expr) -> bool {
    match e {
        Expr::Elem { .. } => true,
        Expr::Const { .. } | Expr::Param { .. } | Expr::Var { .. } => false,
        Expr::Binary { lhs, rhs, .. } => expr_reads_data(lhs) || expr_reads_data(rhs),
        Expr::Neg { x } | Expr::Not { x } => expr_reads_data(x),
    }
}

pub(super) fn first_call_span(stmts: &[WStmt]) -> Option<SrcSpan> {
    for s in stmts {
        let found = match s {
            WStmt::Call(c)
            | WStmt::Send {
                payload: SendPayload::Task(c),
                ..
            } => c.at.clone(),
            WStmt::For { body, .. } | WStmt::Consume { body, .. } => first_call_span(body),
            WStmt::When {
                branches,
                otherwise,
            } => branches
                .iter()
                .find_map(|b| first_call_span(&b.body))
                .or_else(|| first_call_span(otherwise)),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

pub(super) const STATIC_HELP: &str = "AIE designs are placed at compile time: give the loop constant bounds (Dense axes, ranges over params and constants) and move data-dependent choices into the kernels (e.g. `select` on a mask)";

pub(super) struct StaticCheck<'p> {
    pub(super) p: &'p Program,
    pub(super) diags: Diags,
    pub(super) seen_workloads: BTreeSet<usize>,
}

impl StaticCheck<'_> {
    pub(super) fn workload(&mut self, w: WorkloadId) {
        if !self.seen_workloads.insert(w.index()) {
            return;
        }
        let Some(wl) = self.p.workloads.get(w.index()) else {
            return;
        };
        match &wl.body {
            WorkloadBody::Block { stmts } => self.stmts(stmts),
            WorkloadBody::Sequential { parts } | WorkloadBody::Combine { parts } => {
                for part in parts {
                    self.workload(*part);
                }
            }
            WorkloadBody::Connect { processes } => {
                for item in processes {
                    if let Some(pr) = self.p.processes.get(item.process.index()) {
                        if item.replicas > 1 {
                            self.diags.push(
                                warning(
                                    format!(
                                        "`replicate({}, {})` on AIE: {}",
                                        pr.name,
                                        item.replicas,
                                        capabilities::support(CapBackend::Aie, "csp.replicate")
                                            .map_or("", |e| e.reason)
                                    ),
                                    None,
                                )
                                .with_capability("csp.replicate"),
                            );
                        }
                        self.stmts(&pr.body);
                    }
                }
            }
        }
    }

    fn axis(&mut self, a: AxisId, near: Option<SrcSpan>) {
        let Some(axis) = self.p.axes.get(a.index()) else {
            return;
        };
        let at = axis.at.clone().or(near);
        match &axis.kind {
            AxisKind::Dense { .. } => {}
            AxisKind::DenseDyn { size } => {
                if expr_reads_data(size) {
                    self.diags.push(error(
                        format!(
                            "the AIE target cannot place a loop over axis `{}`: its size is read from a tensor at run time, and AIE has no run-time scheduler",
                            axis.name
                        ),
                        at,
                        STATIC_HELP,
                    ));
                }
            }
            AxisKind::Ragged { .. } => self.diags.push(error(
                format!(
                    "the AIE target cannot place a loop over the Ragged axis `{}`: its row lengths are tensor data known only at run time, and AIE has no run-time scheduler",
                    axis.name
                ),
                at,
                "pad the rows to a Dense axis and mask the padding inside the kernel (partial tiles `..N` give the valid extent)",
            )),
            AxisKind::Sparse { .. } => self.diags.push(error(
                format!(
                    "the AIE target cannot place a loop over the Sparse axis `{}`: the selected columns are tensor data known only at run time, and AIE has no run-time scheduler",
                    axis.name
                ),
                at,
                "iterate densely and select inside the kernel, or run this workload with `wsp run`",
            )),
        }
    }

    fn call(&mut self, c: &TaskCall) {
        let data = c.coords.iter().any(expr_reads_data)
            || c.args.iter().any(|a| match a {
                TaskArg::Scalar { value } => expr_reads_data(value),
                TaskArg::View(_) => false,
            });
        if data {
            self.diags.push(error(
                "the AIE target cannot place this task: a coordinate or scalar argument is read from a tensor at run time, and AIE has no run-time scheduler",
                c.at.clone(),
                STATIC_HELP,
            ));
        }
    }

    fn stmts(&mut self, stmts: &[WStmt]) {
        for s in stmts {
            match s {
                WStmt::For {
                    kind, iters, body, ..
                } => {
                    let near = first_call_span(body);
                    let what = if *kind == LoopKind::Bind {
                        "the AIE target cannot place this task: a view's position is read from a tensor at run time, and AIE has no run-time scheduler"
                    } else {
                        "the AIE target cannot place this loop: its range is read from a tensor at run time, and AIE has no run-time scheduler"
                    };
                    for it in iters {
                        match it {
                            Iter::Axis { axis } => self.axis(*axis, near.clone()),
                            Iter::Row { axis, .. } => self.axis(*axis, near.clone()),
                            Iter::Range { start, end } => {
                                if expr_reads_data(start) || expr_reads_data(end) {
                                    self.diags.push(error(what, near.clone(), STATIC_HELP));
                                }
                            }
                        }
                    }
                    self.stmts(body);
                }
                WStmt::When {
                    branches,
                    otherwise,
                } => {
                    for b in branches {
                        if expr_reads_data(&b.cond) {
                            self.diags.push(error(
                                "the AIE target cannot place the tasks of this `when`: its condition reads tensor data, known only at run time, and AIE has no run-time scheduler",
                                first_call_span(&b.body).or_else(|| first_call_span(otherwise)),
                                STATIC_HELP,
                            ));
                        }
                        self.stmts(&b.body);
                    }
                    self.stmts(otherwise);
                }
                WStmt::Call(c) => self.call(c),
                WStmt::Run { workload } => self.workload(*workload),
                WStmt::Send { payload, .. } => match payload {
                    SendPayload::Task(c) => self.call(c),
                    SendPayload::Values { values } => {
                        if values.iter().any(expr_reads_data) {
                            self.diags.push(error(
                                "the AIE target cannot place this `send`: its token is read from a tensor at run time",
                                None,
                                STATIC_HELP,
                            ));
                        }
                    }
                },
                WStmt::Consume { body, .. } => self.stmts(body),
                WStmt::Local { tensor, body } => {
                    let at = self
                        .p
                        .tensors
                        .get(tensor.index())
                        .and_then(|t| t.at.clone());
                    self.diags.push(error(
                        "the AIE target cannot make this local tensor: each run of its block takes a fresh buffer from a heap arena at run time, and AIE places its buffers at compile time",
                        at.or_else(|| first_call_span(body)),
                        "use a global `tensor` indexed by the loop's variables (one region per iteration), or run this workload with `wsp run`",
                    ));
                    self.stmts(body);
                }
            }
        }
    }
}

// ------------------------------------------------------------------------ directives

/// How tasks are dealt to tiles.
#[derive(Clone, Debug)]
pub(super) enum Dispatch {
    RoundRobin(usize),
    Key { hash: bool, key: DirValue },
}

pub(super) fn eval_key(v: &DirValue, axes: &[(AxisId, i64)]) -> Option<i64> {
    Some(match v {
        DirValue::Int { value } => *value,
        DirValue::Axis { axis } => axes.iter().rev().find(|(a, _)| a == axis)?.1,
        DirValue::Binary { op, lhs, rhs } => {
            let (x, y) = (eval_key(lhs, axes)?, eval_key(rhs, axes)?);
            match op {
                ExprOp::Add => x.wrapping_add(y),
                ExprOp::Sub => x.wrapping_sub(y),
                ExprOp::Mul => x.wrapping_mul(y),
                ExprOp::Div if y != 0 => x.wrapping_div(y),
                ExprOp::Rem if y != 0 => x.wrapping_rem(y),
                ExprOp::Min => x.min(y),
                ExprOp::Max => x.max(y),
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// A fixed 64-bit mix (SplitMix64's finaliser) for `hash(key)`.
pub(super) fn mix(x: i64) -> u64 {
    let mut z = x as u64;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(super) fn directives(s: Option<&Schedule>, diags: &mut Diags) -> Dispatch {
    let mut dispatch = Dispatch::RoundRobin(MAX_TILES);
    let Some(s) = s else {
        return dispatch;
    };
    for d in &s.directives {
        let key = d.capability_key();
        let Some(cap) = capabilities::capability(key) else {
            continue;
        };
        let entry = cap.on(CapBackend::Aie);
        match entry.support {
            Support::Unsupported => diags.push(error(
                format!(
                    "schedule `{}`: `{}` is not supported on AIE: {}",
                    s.name, cap.written, entry.reason
                ),
                None,
                "remove the directive for `--target aie`",
            )),
            Support::Diagnosed | Support::Recorded => diags.push(
                warning(
                    format!(
                        "schedule `{}`: `{}` on AIE: {}",
                        s.name, cap.written, entry.reason
                    ),
                    None,
                )
                .with_capability(key),
            ),
            Support::Enforced => {}
        }
        if let Directive::Policy { policy, args } = d {
            match (policy, args.first()) {
                (Policy::RoundRobin, Some(DirValue::Int { value })) => {
                    let n = usize::try_from(*value).unwrap_or(1).max(1);
                    if n > MAX_TILES {
                        diags.push(warning(
                            format!(
                                "schedule `{}`: round_robin({n}) is dealt over the {MAX_TILES} compute tiles the shim DMA channels can feed",
                                s.name
                            ),
                            None,
                        ));
                    }
                    dispatch = Dispatch::RoundRobin(n.min(MAX_TILES));
                }
                (Policy::Affinity | Policy::By | Policy::Hash, Some(k)) => {
                    dispatch = Dispatch::Key {
                        hash: *policy == Policy::Hash,
                        key: k.clone(),
                    }
                }
                _ => {}
            }
        }
    }
    dispatch
}
