//! How many tasks a workload generates, when its loops say so without reading tensor data:
//! per kernel, for the Ascend plan and the progress display of long runs (an ETA).

use crate::dtype::ScalarValue;
use crate::workload::*;

/// Tasks of each kernel (indexed by [`KernelId`]) that workload `w` generates with `params`,
/// `None` for a kernel whose count depends on data: a `when` around its calls, a loop over a
/// Ragged or Sparse axis or bounded by tensor data, or a process (whose tasks depend on the
/// tokens exchanged). Dense axes, DenseDyn axes of params and constant ranges are counted.
pub fn static_task_counts(p: &Program, w: WorkloadId, params: &[ScalarValue]) -> Vec<Option<u64>> {
    let mut c = Counter {
        p,
        params,
        out: vec![Some(0); p.kernels.len()],
    };
    c.workload(w, Some(1), 0);
    c.out
}

/// The total of [`static_task_counts`], when every kernel's is known.
pub fn static_task_total(p: &Program, w: WorkloadId, params: &[ScalarValue]) -> Option<u64> {
    static_task_counts(p, w, params)
        .into_iter()
        .try_fold(0u64, |a, n| n.map(|n| a.saturating_add(n)))
}

struct Counter<'p> {
    p: &'p Program,
    params: &'p [ScalarValue],
    out: Vec<Option<u64>>,
}

impl Counter<'_> {
    /// A constant integer expression over params (no loop variable, no tensor element).
    fn int(&self, e: &Expr) -> Option<i64> {
        Some(match e {
            Expr::Const { value } => int_of(value)?,
            Expr::Param { param } => int_of(self.params.get(param.index())?)?,
            Expr::Neg { x } => self.int(x)?.checked_neg()?,
            Expr::Binary { op, lhs, rhs } => {
                let (a, b) = (self.int(lhs)?, self.int(rhs)?);
                match op {
                    ExprOp::Add => a.checked_add(b)?,
                    ExprOp::Sub => a.checked_sub(b)?,
                    ExprOp::Mul => a.checked_mul(b)?,
                    ExprOp::Div => a.checked_div(b)?,
                    ExprOp::Rem => a.checked_rem(b)?,
                    ExprOp::Min => a.min(b),
                    ExprOp::Max => a.max(b),
                    _ => return None,
                }
            }
            Expr::Var { .. } | Expr::Elem { .. } | Expr::Not { .. } => return None,
        })
    }

    fn trips(&self, it: &Iter) -> Option<u64> {
        match it {
            Iter::Axis { axis } => match &self.p.axes.get(axis.index())?.kind {
                AxisKind::Dense { size } => Some(*size),
                AxisKind::DenseDyn { size } => u64::try_from(self.int(size)?).ok(),
                AxisKind::Ragged { .. } | AxisKind::Sparse { .. } => None,
            },
            Iter::Row { .. } => None,
            Iter::Range { start, end } => {
                let n = self.int(end)?.checked_sub(self.int(start)?)?;
                Some(u64::try_from(n).unwrap_or(0))
            }
        }
    }

    fn call(&mut self, c: &TaskCall, mult: Option<u64>) {
        if let Some(x) = self.out.get_mut(c.kernel.index()) {
            *x = match (*x, mult) {
                (Some(a), Some(m)) => Some(a.saturating_add(m)),
                _ => None,
            };
        }
    }

    fn stmts(&mut self, s: &[WStmt], mult: Option<u64>, depth: usize) {
        for st in s {
            match st {
                WStmt::Call(c)
                | WStmt::Send {
                    payload: SendPayload::Task(c),
                    ..
                } => self.call(c, mult),
                WStmt::For { iters, body, .. } => {
                    let m = iters.iter().fold(mult, |m, it| {
                        m.zip(self.trips(it)).map(|(a, b)| a.saturating_mul(b))
                    });
                    self.stmts(body, m, depth);
                }
                WStmt::When {
                    branches,
                    otherwise,
                } => {
                    for b in branches {
                        self.stmts(&b.body, None, depth);
                    }
                    self.stmts(otherwise, None, depth);
                }
                WStmt::Run { workload } => self.workload(*workload, mult, depth + 1),
                WStmt::Local { body, .. } => self.stmts(body, mult, depth),
                WStmt::Consume { body, .. } => self.stmts(body, None, depth),
                WStmt::Send { .. } => {}
            }
        }
    }

    fn workload(&mut self, w: WorkloadId, mult: Option<u64>, depth: usize) {
        // A workload that runs itself is refused elsewhere; do not follow it forever.
        if depth > 64 {
            self.out.iter_mut().for_each(|x| *x = None);
            return;
        }
        let p = self.p;
        match p.workloads.get(w.index()).map(|w| &w.body) {
            Some(WorkloadBody::Block { stmts }) => self.stmts(stmts, mult, depth),
            Some(WorkloadBody::Sequential { parts } | WorkloadBody::Combine { parts }) => {
                for part in parts {
                    self.workload(*part, mult, depth + 1);
                }
            }
            Some(WorkloadBody::Connect { processes }) => {
                for item in processes {
                    if let Some(pr) = p.processes.get(item.process.index()) {
                        self.stmts(&pr.body, None, depth + 1);
                    }
                }
            }
            None => {}
        }
    }
}

fn int_of(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::Int(i) => Some(*i),
        ScalarValue::UInt(u) => i64::try_from(*u).ok(),
        _ => None,
    }
}
