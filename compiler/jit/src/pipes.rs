//! Static bounds of kernel pipes.
//!
//! The JIT runs pipe sections one after another in the reference interpreter's order
//! ([`wsp_ir::interp::exec_order`]) and keeps each pipe's queued slots in a ring of the scratch frame. The IR
//! has no branches and every `for` has constant bounds, so the sequence of `tpush`/`tpop` of a
//! run is fixed by the kernel text (a run-time error only cuts it short): [`max_queued`]
//! computes, per pipe, the most slots queued (pushed and not yet popped) at any point, which
//! sizes the ring.

use wsp_ir::interp::exec_order;
use wsp_ir::kernel::{Kernel, Op, Stmt, TileType};

/// The most bytes the JIT reserves for the queue of one pipe.
pub(crate) const MAX_QUEUE_BYTES: u64 = 1 << 30;

/// The effect of a statement sequence on one pipe's queue length: the net change and the
/// highest length above the starting one reached on the way (at least 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Effect {
    delta: i128,
    peak: i128,
}

impl Effect {
    /// `self` followed by `next`.
    fn then(self, next: Effect) -> Option<Effect> {
        let delta = self.delta.checked_add(next.delta)?;
        let peak = self.peak.max(self.delta.checked_add(next.peak)?);
        Some(Effect { delta, peak })
    }

    /// `self` repeated `n` times: the peak of iteration `i` is `i·delta + peak`, highest at
    /// the last iteration when the queue grows and at the first otherwise.
    fn repeat(self, n: i128) -> Option<Effect> {
        if n <= 0 {
            return Some(Effect::default());
        }
        let delta = self.delta.checked_mul(n)?;
        let peak = if self.delta > 0 {
            self.delta.checked_mul(n - 1)?.checked_add(self.peak)?
        } else {
            self.peak
        };
        Some(Effect { delta, peak })
    }
}

/// The effect of `stmts` on the queue of pipe `pipe`; `None` when the count overflows.
fn effect(stmts: &[Stmt], pipe: usize) -> Option<Effect> {
    let mut acc = Effect::default();
    for s in exec_order(stmts) {
        let step = match s {
            Stmt::TPush { pipe: p, .. } if p.index() == pipe => Effect { delta: 1, peak: 1 },
            Stmt::Op {
                op: Op::TPop { pipe: p },
                ..
            } if p.index() == pipe => Effect { delta: -1, peak: 0 },
            Stmt::Section { body, .. } => effect(body, pipe)?,
            Stmt::For {
                start, end, body, ..
            } => effect(body, pipe)?.repeat(i128::from(*end) - i128::from(*start))?,
            _ => continue,
        };
        acc = acc.then(step)?;
    }
    Some(acc)
}

/// Bytes of one queued slot: 16 bytes of valid extent (two i64), then the elements in their
/// compute form (4 bytes each), rounded up to 16.
pub(crate) fn slot_bytes(elem: TileType) -> u64 {
    (16 + elem.len() as u64 * 4).div_ceil(16) * 16
}

/// Per pipe of `k`, the most slots queued at once in any run; `Err` names the pipe whose
/// queue the JIT cannot bound (or would not hold in [`MAX_QUEUE_BYTES`]).
pub(crate) fn max_queued(k: &Kernel) -> Result<Vec<usize>, String> {
    let Some(body) = &k.body else {
        return Ok(vec![0; k.pipes.len()]);
    };
    let mut out = Vec::with_capacity(k.pipes.len());
    for (i, p) in k.pipes.iter().enumerate() {
        let e = effect(body, i).ok_or_else(|| {
            format!(
                "pipe `{}`: the count of its queued slots overflows (loops too long)",
                p.name
            )
        })?;
        let bytes = u64::try_from(e.peak)
            .ok()
            .and_then(|n| n.checked_mul(slot_bytes(p.elem)));
        match bytes {
            Some(b) if b <= MAX_QUEUE_BYTES => out.push(e.peak as usize),
            _ => {
                return Err(format!(
                    "pipe `{}`: up to {} slots of {}[{}, {}] are queued at once, more than the \
                     {MAX_QUEUE_BYTES} bytes the JIT reserves for a pipe's queue",
                    p.name,
                    e.peak,
                    p.elem.dtype,
                    p.elem.rows(),
                    p.elem.cols()
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsp_ir::kernel::{PipeId, SectionKind, ValueId, VarId};
    use wsp_ir::DType;

    fn push(p: u32) -> Stmt {
        Stmt::TPush {
            pipe: PipeId(p),
            slot: VarId(0),
        }
    }
    fn pop(p: u32) -> Stmt {
        Stmt::Op {
            results: vec![ValueId(0)],
            op: Op::TPop { pipe: PipeId(p) },
        }
    }
    fn for_(n: i64, body: Vec<Stmt>) -> Stmt {
        Stmt::For {
            index: ValueId(1),
            start: 0,
            end: n,
            body,
        }
    }
    fn section(kind: SectionKind, body: Vec<Stmt>) -> Stmt {
        Stmt::Section { kind, body }
    }
    fn kernel(elem: TileType, body: Vec<Stmt>) -> Kernel {
        Kernel {
            name: "k".into(),
            params: vec![],
            values: vec![],
            vars: vec![],
            pipes: vec![
                wsp_ir::kernel::Pipe {
                    name: "a".into(),
                    elem,
                    slots: 2,
                },
                wsp_ir::kernel::Pipe {
                    name: "b".into(),
                    elem,
                    slots: 2,
                },
            ],
            body: Some(body),
            externs: vec![],
            cost: None,
            at: None,
        }
    }
    const T: TileType = TileType {
        dtype: DType::F32,
        shape: [4, 4],
    };

    #[test]
    fn producer_section_runs_first_and_fills_the_queue() {
        // The consumer comes first in program order but runs after the producer: 5 queued.
        let k = kernel(
            T,
            vec![
                section(SectionKind::Vector, vec![for_(5, vec![pop(0)])]),
                section(SectionKind::Cube, vec![for_(5, vec![push(0)])]),
            ],
        );
        assert_eq!(max_queued(&k), Ok(vec![5, 0]));
    }

    #[test]
    fn balanced_loops_need_their_inner_peak() {
        let k = kernel(
            T,
            vec![for_(
                1000,
                vec![push(0), push(0), pop(0), push(1), pop(0), pop(1)],
            )],
        );
        assert_eq!(max_queued(&k), Ok(vec![2, 1]));
        // Growing by one per iteration: the last iteration peaks (6 queued, then 2 more).
        let k = kernel(T, vec![for_(7, vec![push(0), push(0), pop(0)])]);
        assert_eq!(max_queued(&k), Ok(vec![8, 0]));
        // Empty loops do nothing.
        let k = kernel(T, vec![for_(0, vec![push(0)]), for_(-3, vec![push(1)])]);
        assert_eq!(max_queued(&k), Ok(vec![0, 0]));
    }

    #[test]
    fn queues_too_large_or_unbounded_are_refused() {
        let k = kernel(T, vec![for_(1 << 40, vec![push(0)])]);
        let e = max_queued(&k).unwrap_err();
        assert!(e.contains("pipe `a`") && e.contains("bytes"), "{e}");
        let deep = (0..6).fold(vec![push(1)], |b, _| vec![for_(i64::MAX, b)]);
        let e = max_queued(&kernel(T, deep)).unwrap_err();
        assert!(e.contains("pipe `b`") && e.contains("overflows"), "{e}");
    }

    #[test]
    fn exec_order_puts_producers_first_only_within_a_run_of_sections() {
        let body = vec![
            section(SectionKind::Vector, vec![pop(0)]),
            section(SectionKind::Cube, vec![push(0)]),
            Stmt::TFree {
                pipe: PipeId(0),
                value: ValueId(0),
            },
            section(SectionKind::Vector, vec![pop(1)]),
        ];
        let order = exec_order(&body);
        assert!(std::ptr::eq(order[0], &body[1]));
        assert!(std::ptr::eq(order[1], &body[0]));
        assert!(std::ptr::eq(order[2], &body[2]));
        assert!(std::ptr::eq(order[3], &body[3]));
    }
}
