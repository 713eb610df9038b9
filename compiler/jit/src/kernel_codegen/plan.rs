//! Which elementwise values are kept in a buffer instead of being recomputed.
//!
//! An elementwise value is lazy: every consumer evaluates it again per element (a row sum
//! and a division by that sum each evaluate `e` of `let e = exp(x - rowmax(x))`; a value
//! defined before a `for` is evaluated again in every iteration; a `[R, 1]` value used by an
//! `[R, C]` one is evaluated for each of the `C` columns). [`kept`] counts, for each lazy
//! value, how many element evaluations its consumers make, and compares the two ways of
//! paying for them, with the cost of the expression below the value:
//!
//! * recompute: `evaluations × cost`;
//! * keep: `elements × (cost + a store)` once per definition, then `evaluations × a load`.
//!
//! The value is kept (materialised into its scratch buffer where it is defined) when keeping
//! is cheaper. Costs are rough per-element figures for 4-lane code; what matters is their
//! order: a load, an add or a compare is 1, a division 4, `exp` about 25, a function called
//! per lane about 40. Users are decided before the values they read, so a kept user counts
//! one evaluation of its operands per element.

use super::{is_int_divrem, walk};
use wsp_ir::kernel::{BinaryOp, Kernel, Op, Stmt, UnaryOp, ValueId};
use wsp_ir::typing::operands;
use wsp_ir::DType;

const LOAD: f64 = 1.0;
const STORE: f64 = 1.0;
/// Costs are capped (a long shared chain would otherwise be counted as a tree).
const COST_CAP: f64 = 1.0e6;

/// Whether `op` (defining `v`) is a lazy elementwise value of the JIT.
fn is_lazy(k: &Kernel, v: ValueId, op: &Op) -> bool {
    let tile = k.value_type(v).and_then(|t| t.tile()).is_some();
    tile && !is_int_divrem(k, op)
        && matches!(
            op,
            Op::Binary { .. }
                | Op::Cmp { .. }
                | Op::Select { .. }
                | Op::Unary { .. }
                | Op::Cast { .. }
                | Op::Full { .. }
                | Op::Iota { .. }
                | Op::Slice { .. }
        )
}

/// The cost of `op` itself per element (its operands not included).
fn own_cost(k: &Kernel, v: ValueId, op: &Op) -> f64 {
    let dtype = k.value_type(v).map(|t| t.dtype());
    // f16 and bf16 results are rounded after each operation.
    let round = match dtype {
        Some(DType::F16 | DType::Bf16) => 3.0,
        _ => 0.0,
    };
    let c = match op {
        Op::Binary { op, .. } => match op {
            BinaryOp::Div => 4.0,
            BinaryOp::Rem | BinaryOp::Pow => 40.0,
            _ => 1.0,
        },
        Op::Unary { op, .. } => match op {
            UnaryOp::Exp => 25.0,
            UnaryOp::Log => 30.0,
            UnaryOp::Tanh => 35.0,
            UnaryOp::Sigmoid => 30.0,
            UnaryOp::Silu => 31.0,
            UnaryOp::Gelu => 42.0,
            UnaryOp::Sin | UnaryOp::Cos => 40.0,
            UnaryOp::Sqrt | UnaryOp::Recip => 4.0,
            UnaryOp::Rsqrt => 8.0,
            UnaryOp::Relu | UnaryOp::Abs | UnaryOp::Neg | UnaryOp::Not => 1.0,
        },
        Op::Cast {
            dtype: DType::Bf16,
            x,
        } => {
            // From an integer: a helper call per lane.
            let int = k.value_type(*x).map(|t| t.dtype().is_int()) == Some(true);
            if int {
                40.0
            } else {
                1.0
            }
        }
        Op::Cmp { .. } | Op::Select { .. } | Op::Cast { .. } | Op::Iota { .. } => 1.0,
        Op::Full { .. } | Op::Slice { .. } => 0.0,
        _ => 0.0,
    };
    c + round
}

fn elements(k: &Kernel, v: ValueId) -> f64 {
    k.value_type(v)
        .and_then(|t| t.tile())
        .map(|t| t.len() as f64)
        .unwrap_or(0.0)
}

/// What the walk over the body gathers, per value.
struct Uses<'a> {
    k: &'a Kernel,
    lazy: Vec<bool>,
    /// How many times the definition runs (the trip counts of the loops around it).
    runs: Vec<f64>,
    /// Element evaluations made by consumers that are not lazy values.
    direct: Vec<f64>,
    /// Lazy values reading each value.
    users: Vec<Vec<ValueId>>,
    /// Cost per element of the value's own operation.
    own: Vec<f64>,
    /// The tile values each lazy value reads.
    reads: Vec<Vec<ValueId>>,
    /// Lazy values in definition order.
    order: Vec<ValueId>,
}

impl Uses<'_> {
    fn tile(&self, v: ValueId) -> bool {
        v.index() < self.lazy.len() && self.k.value_type(v).and_then(|t| t.tile()).is_some()
    }

    fn visit(&mut self, stmts: &[Stmt], mult: f64) {
        let k = self.k;
        for s in stmts {
            match s {
                Stmt::Op { results, op } => {
                    let Some(&v) = results.first() else { continue };
                    for r in results {
                        if let Some(x) = self.runs.get_mut(r.index()) {
                            *x = mult;
                        }
                    }
                    let mut reads: Vec<ValueId> =
                        operands(op).into_iter().filter(|o| self.tile(*o)).collect();
                    // A value read twice by one operation is evaluated once per element.
                    reads.sort_unstable_by_key(|o| o.0);
                    reads.dedup();
                    if self.tile(v) && is_lazy(k, v, op) {
                        self.lazy[v.index()] = true;
                        self.order.push(v);
                        self.own[v.index()] = own_cost(k, v, op);
                        for o in &reads {
                            self.users[o.index()].push(v);
                        }
                        self.reads[v.index()] = reads;
                    } else {
                        for o in reads {
                            self.direct[o.index()] += elements(k, o) * mult;
                        }
                    }
                }
                Stmt::Store { value, .. } | Stmt::Assign { value, .. } => {
                    if self.tile(*value) {
                        self.direct[value.index()] += elements(k, *value) * mult;
                    }
                }
                Stmt::For {
                    start, end, body, ..
                } => self.visit(body, mult * end.saturating_sub(*start).max(0) as f64),
                Stmt::Section { body, .. } => self.visit(body, mult),
                Stmt::TAlloc { .. } | Stmt::TPush { .. } | Stmt::TFree { .. } => {}
            }
        }
    }
}

/// For each value of `k`: whether it is a lazy elementwise value that is kept in a buffer.
///
/// A value's cost depends on which of its operands are kept, and its evaluations on which of
/// its users are: the two are settled in turns (costs forward, decisions backward) until the
/// decisions no longer change, four turns at most.
pub(crate) fn kept(k: &Kernel) -> Vec<bool> {
    let n = k.values.len();
    let mut u = Uses {
        k,
        lazy: vec![false; n],
        runs: vec![1.0; n],
        direct: vec![0.0; n],
        users: vec![Vec::new(); n],
        own: vec![0.0; n],
        reads: vec![Vec::new(); n],
        order: Vec::new(),
    };
    if let Some(body) = &k.body {
        u.visit(body, 1.0);
    }
    let mut keep = vec![false; n];
    let mut cost = vec![0.0f64; n];
    let mut evals = vec![0.0f64; n];
    for _ in 0..4 {
        for v in &u.order {
            let i = v.index();
            let c = u.own[i]
                + u.reads[i]
                    .iter()
                    .map(|o| {
                        let j = o.index();
                        if u.lazy[j] && !keep[j] {
                            cost[j]
                        } else {
                            LOAD
                        }
                    })
                    .sum::<f64>();
            cost[i] = c.min(COST_CAP);
        }
        let before = keep.clone();
        for v in u.order.iter().rev() {
            let i = v.index();
            let e = u.direct[i]
                + u.users[i]
                    .iter()
                    .map(|w| {
                        let j = w.index();
                        if keep[j] {
                            elements(k, *w) * u.runs[j]
                        } else {
                            evals[j]
                        }
                    })
                    .sum::<f64>();
            evals[i] = e;
            let once = elements(k, *v) * u.runs[i];
            let recompute = e * cost[i];
            let kept = once * (cost[i] + STORE) + e * LOAD;
            keep[i] = e > once && kept < recompute;
        }
        if keep == before {
            break;
        }
    }
    keep
}

/// How a value is used, at which top-level statement.
#[derive(Clone, Copy)]
enum Use {
    /// By a lazy value (evaluated wherever that one is).
    Lazy(ValueId),
    /// By an operation or statement at top-level statement `t`; `store` when it is the whole
    /// store `Stmt::Store` to a parameter without region (the parameter's index).
    At { t: usize, store: Option<usize> },
}

/// For each value: whether it is the load of a tile parameter that the kernel also stores to
/// and that can nevertheless be read in place (no snapshot copy, see the module docs of
/// `kernel_codegen`). That is so when the parameter is stored once, whole, by a top-level
/// statement, the load is at top level, and every evaluation of the load happens before that
/// store or in the store's own loop at the position it writes: through lazy values only (no
/// slice), which `materialised` values (computed where they are defined) cut off.
pub(crate) fn read_in_place(k: &Kernel, materialised: &[bool]) -> Vec<bool> {
    let n = k.values.len();
    let mut out = vec![false; n];
    let Some(body) = &k.body else {
        return out;
    };
    let mut uses: Vec<Vec<Use>> = vec![Vec::new(); n];
    let mut def_at: Vec<Option<(usize, bool)>> = vec![None; n];
    let mut stores: Vec<Vec<(usize, bool, bool)>> = vec![Vec::new(); k.params.len()];
    let mut ops: Vec<Option<&Op>> = vec![None; n];
    // Every statement, with the top-level statement `t` it belongs to.
    for (t, top) in body.iter().enumerate() {
        walk(std::slice::from_ref(top), &mut |s| {
            let at_top = std::ptr::eq(s, top);
            let mut add = |v: ValueId, u: Use| {
                if let Some(x) = uses.get_mut(v.index()) {
                    x.push(u);
                }
            };
            match s {
                Stmt::Op { results, op } => {
                    let Some(&v) = results.first() else { return };
                    for r in results {
                        if let Some(d) = def_at.get_mut(r.index()) {
                            *d = Some((t, at_top));
                        }
                        if let Some(d) = ops.get_mut(r.index()) {
                            *d = Some(op);
                        }
                    }
                    let lazy = is_lazy(k, v, op);
                    for o in operands(op) {
                        add(
                            o,
                            if lazy {
                                Use::Lazy(v)
                            } else {
                                Use::At { t, store: None }
                            },
                        );
                    }
                }
                Stmt::Store {
                    param,
                    region,
                    value,
                } => {
                    let whole = region.is_none() && at_top;
                    add(
                        *value,
                        Use::At {
                            t,
                            store: whole.then_some(param.index()),
                        },
                    );
                    if let Some(x) = stores.get_mut(param.index()) {
                        x.push((t, region.is_none(), at_top));
                    }
                }
                // (Region starts are scalar indices: no tile is read there.)
                Stmt::Assign { value, .. } | Stmt::TFree { value, .. } => {
                    add(*value, Use::At { t, store: None })
                }
                // Their bodies are walked too.
                Stmt::For { .. } | Stmt::Section { .. } => {}
                Stmt::TAlloc { .. } | Stmt::TPush { .. } => {}
            }
        });
    }
    for (i, info) in k.values.iter().enumerate() {
        let v = ValueId(i as u32);
        let Some(Op::Param { param }) = ops[i] else {
            continue;
        };
        let p = param.index();
        if info.ty.tile().is_none() || materialised.get(i).copied().unwrap_or(true) {
            continue;
        }
        let (Some((_, true)), [(ts, true, true)]) = (def_at[i], stores[p].as_slice()) else {
            continue;
        };
        let ts = *ts;
        let mut ok = true;
        let mut seen = vec![false; n];
        let mut stack = vec![v];
        while let Some(d) = stack.pop() {
            if std::mem::replace(&mut seen[d.index()], true) {
                continue;
            }
            for u in &uses[d.index()] {
                match *u {
                    Use::At { t, store } => ok &= t < ts || (t == ts && store == Some(p)),
                    Use::Lazy(w) => {
                        if materialised.get(w.index()).copied().unwrap_or(false) {
                            ok &= def_at[w.index()].is_some_and(|(t, _)| t < ts);
                        } else if matches!(ops[w.index()], Some(Op::Slice { .. })) {
                            ok = false;
                        } else {
                            stack.push(w);
                        }
                    }
                }
            }
        }
        out[i] = ok;
    }
    out
}

/// The per-element cost up to which a loop body is cheap enough to unroll.
const UNROLL_MAX_COST: f64 = 8.0;
/// How many times the vector loop of a cheap body is unrolled.
pub(super) const UNROLL: i64 = 4;

impl super::Lower<'_, '_> {
    /// The cost per element of evaluating `v` as it is held now (lazy values: their
    /// expression down to values in memory).
    fn eval_cost(&self, v: ValueId, depth: u32) -> f64 {
        if depth > 64 {
            return COST_CAP;
        }
        match self.slots.get(v.index()) {
            Some(super::Slot::Lazy) => {
                let Some(op) = self.defs.get(&v) else {
                    return COST_CAP;
                };
                let own = own_cost(self.k, v, op);
                operands(op)
                    .into_iter()
                    .filter(|o| self.k.value_type(*o).and_then(|t| t.tile()).is_some())
                    .map(|o| self.eval_cost(o, depth + 1))
                    .sum::<f64>()
                    + own
            }
            Some(super::Slot::Buf(_)) => LOAD,
            _ => 0.0,
        }
    }

    /// How many times to unroll a loop that evaluates `v` per element.
    pub(super) fn unroll_for(&self, v: ValueId) -> i64 {
        if self.eval_cost(v, 0) <= UNROLL_MAX_COST {
            UNROLL
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::kept;
    use wsp_ir::kernel::*;
    use wsp_ir::typing::KernelBuilder;
    use wsp_ir::{DType, ScalarValue};

    fn t(r: u32, c: u32) -> TileType {
        TileType::new(DType::F32, r, c)
    }

    fn reduce(b: &mut KernelBuilder, op: ReduceOp, x: ValueId) -> ValueId {
        b.op(Op::Reduce { op, x }).unwrap()
    }

    #[test]
    fn softmax_keeps_the_exponential_its_sum_and_quotient_both_read() {
        let mut b = KernelBuilder::new("softmax");
        let x = b.tile_param("x", Direction::In, t(64, 256));
        let o = b.tile_param("y", Direction::Out, t(64, 256));
        let xv = b.load(x).unwrap();
        let m = reduce(&mut b, ReduceOp::RowMax, xv);
        let d = b.binary(BinaryOp::Sub, xv, m).unwrap();
        let e = b.unary(UnaryOp::Exp, d).unwrap();
        let s = reduce(&mut b, ReduceOp::RowSum, e);
        let y = b.binary(BinaryOp::Div, e, s).unwrap();
        b.store(o, y);
        let keep = kept(&b.finish().unwrap());
        assert!(keep[e.index()]);
        assert!(!keep[d.index()] && !keep[y.index()]);
    }

    #[test]
    fn a_cheap_value_read_twice_is_recomputed_and_a_broadcast_root_is_kept() {
        let mut b = KernelBuilder::new("rmsnorm");
        let x = b.tile_param("x", Direction::In, t(64, 128));
        let o = b.tile_param("y", Direction::Out, t(64, 128));
        let o2 = b.tile_param("z", Direction::Out, t(64, 128));
        let xv = b.load(x).unwrap();
        let two = b.constant(ScalarValue::Float(2.0), DType::F32).unwrap();
        let x2 = b.binary(BinaryOp::Mul, xv, two).unwrap();
        let sq = b.binary(BinaryOp::Mul, xv, xv).unwrap();
        let ms = reduce(&mut b, ReduceOp::RowMean, sq);
        let eps = b.constant(ScalarValue::Float(1e-6), DType::F32).unwrap();
        let a = b.binary(BinaryOp::Add, ms, eps).unwrap();
        let r = b.unary(UnaryOp::Rsqrt, a).unwrap();
        let y = b.binary(BinaryOp::Mul, xv, r).unwrap();
        b.store(o, y);
        let z = b.binary(BinaryOp::Add, x2, y).unwrap();
        let z = b.binary(BinaryOp::Add, z, x2).unwrap();
        b.store(o2, z);
        let keep = kept(&b.finish().unwrap());
        // `x * 2` read twice by one expression and by nothing else: one evaluation.
        assert!(!keep[x2.index()]);
        // rsqrt of a [64, 1] value read by every column of a [64, 128] one.
        assert!(keep[r.index()]);
        // `x * r` read by a store and by `z`: a multiply and a load, cheaper again than kept.
        assert!(!keep[y.index()]);
        assert!(!keep[sq.index()]);
    }

    #[test]
    fn a_value_read_in_every_iteration_of_a_loop_is_kept() {
        let mut b = KernelBuilder::new("loop");
        let x = b.tile_param("x", Direction::In, t(16, 16));
        let o = b.tile_param("y", Direction::Out, t(16, 16));
        let xv = b.load(x).unwrap();
        let e = b.unary(UnaryOp::Tanh, xv).unwrap();
        let acc = b.var("acc", Type::Tile(t(16, 16)));
        let assign = |value| Stmt::Assign {
            var: acc,
            region: None,
            value,
        };
        b.stmt(assign(xv));
        b.begin_for(0, 8);
        let cur = b.op(Op::VarRead { var: acc }).unwrap();
        let nxt = b.binary(BinaryOp::Add, cur, e).unwrap();
        b.stmt(assign(nxt));
        b.end_for().unwrap();
        let fin = b.op(Op::VarRead { var: acc }).unwrap();
        b.store(o, fin);
        let keep = kept(&b.finish().unwrap());
        assert!(keep[e.index()]);
        assert!(!keep[nxt.index()]);
    }

    #[test]
    fn an_accumulator_updated_in_its_own_loop_is_read_in_place() {
        use super::read_in_place;
        let build = |after: bool| {
            let mut b = KernelBuilder::new("scale_add");
            let y = b.tile_param("y", Direction::In, t(64, 128));
            let g = b.tile_param("g", Direction::In, t(64, 1));
            let acc = b.tile_param("acc", Direction::InOut, t(64, 128));
            let q = b.tile_param("q", Direction::Out, t(64, 128));
            let a = b.load(acc).unwrap();
            let yv = b.load(y).unwrap();
            let gv = b.load(g).unwrap();
            let m = b.binary(BinaryOp::Mul, yv, gv).unwrap();
            let s = b.binary(BinaryOp::Add, a, m).unwrap();
            b.store(acc, s);
            if after {
                b.store(q, a);
            }
            (b.finish().unwrap(), a)
        };
        for (after, want) in [(false, true), (true, false)] {
            let (k, a) = build(after);
            let none = vec![false; k.values.len()];
            assert_eq!(
                read_in_place(&k, &none)[a.index()],
                want,
                "read after: {after}"
            );
        }
    }
}
