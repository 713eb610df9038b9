//! Race analysis: iterations of a `P(...)` loop, and operands of `combine(...)`, are declared
//! independent; a write by one that overlaps an access by another is an error.
//!
//! Each task argument is an *access*: a tensor, the view's index expressions, and whether the
//! kernel writes it (`out`/`inout`). Index expressions are affine in loop variables, params and
//! constants. Two accesses `A` (a write) and `B` of the same tensor, made by two different
//! iterations of a `P` loop over variables `V`, cannot overlap when
//!
//! 1. some dimension's index intervals are disjoint (interval arithmetic over the loop domains), or
//! 2. every `v ∈ V` has a *separating* dimension: both views index it with the same affine form,
//!    whose only varying variable is `v` (outer loop variables, params and constants are fixed
//!    across the two iterations), with a stride at least the extent (`X[b]`, `X[b*64 .. b*64+64]`).
//!
//! Otherwise two iterations that differ only in a non-separated `v` may touch the same region,
//! and the loop is reported. The analysis never misses a race among affine views; it can report
//! one that a finer analysis would rule out (different affine forms whose images happen not to
//! meet), and it treats non-affine indices (`t % 4`) as touching their whole dimension.

use std::collections::{BTreeMap, BTreeSet};

use wsp_diagnostics::{Diagnostic, Edit, FileName, Fix, Label};
use wsp_syntax::ast::*;
use wsp_syntax::Span;

use crate::db::Symbol;
use crate::resolve::Scoped;
use crate::types::{eval_int, D};
use wsp_vocab::codes;

/// An affine form: coefficients per variable name plus a constant.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Affine {
    coef: BTreeMap<String, i64>,
    k: i64,
}

impl Affine {
    fn konst(k: i64) -> Affine {
        Affine {
            coef: BTreeMap::new(),
            k,
        }
    }
    fn var(n: &str) -> Affine {
        Affine {
            coef: [(n.to_string(), 1)].into(),
            k: 0,
        }
    }
    fn add(mut self, o: &Affine, sign: i64) -> Option<Affine> {
        for (v, c) in &o.coef {
            let e = self.coef.entry(v.clone()).or_insert(0);
            *e = e.checked_add(c.checked_mul(sign)?)?;
        }
        self.coef.retain(|_, c| *c != 0);
        self.k = self.k.checked_add(o.k.checked_mul(sign)?)?;
        Some(self)
    }
    fn scale(mut self, s: i64) -> Option<Affine> {
        for c in self.coef.values_mut() {
            *c = c.checked_mul(s)?;
        }
        self.coef.retain(|_, c| *c != 0);
        self.k = self.k.checked_mul(s)?;
        Some(self)
    }
}

fn affine(e: &Expr, consts: &BTreeMap<String, i64>) -> Option<Affine> {
    affine_checked(e, consts).ok().flatten()
}

/// The names an affine form of `e` is over (params and loop variables; constants folded), or
/// `None` when `e` is not affine (`seq / 64`, `n * m`, `min(a, b)`).
pub(crate) fn affine_names(e: &Expr, consts: &BTreeMap<String, i64>) -> Option<Vec<String>> {
    affine(e, consts).map(|a| a.coef.into_keys().collect())
}

/// A coefficient of an affine form left the 64-bit range.
struct Overflow;

/// `e` as an affine form: `Ok(None)` when it is not one, `Err` when a coefficient leaves the
/// 64-bit range. Arithmetic on two constants that fails is not affine here: it is constant
/// arithmetic without a value (E0213 where it fails).
fn affine_checked(e: &Expr, consts: &BTreeMap<String, i64>) -> Result<Option<Affine>, Overflow> {
    let (r, on_constants) = match &e.kind {
        ExprKind::Int(v) => return Ok(i64::try_from(*v).ok().map(Affine::konst)),
        ExprKind::Name(n) => {
            return Ok(Some(match consts.get(&n.name) {
                Some(v) => Affine::konst(*v),
                None => Affine::var(&n.name),
            }))
        }
        ExprKind::Unary {
            op: UnOp::Neg,
            expr,
        } => {
            let Some(a) = affine_checked(expr, consts)? else {
                return Ok(None);
            };
            (a.scale(-1), eval_int(expr, consts).is_some())
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let (Some(a), Some(b)) = (affine_checked(lhs, consts)?, affine_checked(rhs, consts)?)
            else {
                return Ok(None);
            };
            let r = match op {
                BinOp::Add => a.add(&b, 1),
                BinOp::Sub => a.add(&b, -1),
                BinOp::Mul if a.coef.is_empty() => b.scale(a.k),
                BinOp::Mul if b.coef.is_empty() => a.scale(b.k),
                _ => return Ok(None),
            };
            let constants = eval_int(lhs, consts).is_some() && eval_int(rhs, consts).is_some();
            (r, constants)
        }
        _ => return Ok(None),
    };
    match r {
        Some(a) => Ok(Some(a)),
        None if on_constants => Ok(None),
        None => Err(Overflow),
    }
}

/// Whether index `e`'s affine form (a coefficient for each loop variable and param) leaves the
/// 64-bit range, as `X[i * 4611686018427387904 * 4]`'s does: it would wrap (E0213).
pub(crate) fn index_overflows(e: &Expr, consts: &BTreeMap<String, i64>) -> bool {
    affine_checked(e, consts).is_err()
}

/// One dimension of a view: a point, a half-open range, or the whole dimension.
#[derive(Clone, Debug)]
enum Ix {
    Point(Option<Affine>),
    Range(Option<Affine>, Option<Affine>),
    Whole,
}

#[derive(Clone, Debug)]
pub(crate) struct Access {
    tensor: String,
    write: bool,
    dims: Vec<Ix>,
    /// Each dimension's index interval over the loop domains where the access is made.
    ivs: Vec<Interval>,
    pub(crate) text: String,
    /// Item-relative.
    pub(crate) span: Span,
    /// Made under a `when` branch (whose condition may guard the index).
    in_when: bool,
    /// The domains of the loop variables the view's indices use, where it is made.
    dom: BTreeMap<String, Interval>,
}

/// Inclusive integer interval; `None` bounds are unbounded.
type Interval = (Option<i64>, Option<i64>);

fn interval(a: &Affine, dom: &BTreeMap<String, Interval>) -> Interval {
    let (mut lo, mut hi) = (Some(a.k), Some(a.k));
    for (v, c) in &a.coef {
        let (vl, vh) = dom.get(v).copied().unwrap_or((None, None));
        let (x, y) = if *c >= 0 { (vl, vh) } else { (vh, vl) };
        lo = lo
            .zip(x)
            .and_then(|(l, x)| l.checked_add(c.checked_mul(x)?));
        hi = hi
            .zip(y)
            .and_then(|(h, y)| h.checked_add(c.checked_mul(y)?));
    }
    (lo, hi)
}

/// The inclusive index interval a view dimension can touch.
fn dim_interval(ix: &Ix, dom: &BTreeMap<String, Interval>) -> Interval {
    match ix {
        Ix::Point(Some(a)) => interval(a, dom),
        Ix::Range(Some(s), Some(e)) => {
            let (l, _) = interval(s, dom);
            let (_, h) = interval(e, dom);
            (l, h.and_then(|h| h.checked_sub(1)))
        }
        Ix::Range(Some(s), None) => (interval(s, dom).0, None),
        Ix::Range(None, Some(e)) => (Some(0), interval(e, dom).1.and_then(|h| h.checked_sub(1))),
        _ => (None, None),
    }
}

fn disjoint(a: Interval, b: Interval) -> bool {
    matches!((a.1, b.0), (Some(ah), Some(bl)) if ah < bl)
        || matches!((b.1, a.0), (Some(bh), Some(al)) if bh < al)
}

/// Whether some dimension's intervals are provably disjoint.
fn provably_disjoint(a: &Access, b: &Access, dom: &BTreeMap<String, Interval>) -> bool {
    a.dims
        .iter()
        .zip(&b.dims)
        .any(|(x, y)| disjoint(dim_interval(x, dom), dim_interval(y, dom)))
}

/// Whether two iterations that differ in `v` are separated by some dimension.
fn separated(a: &Access, b: &Access, v: &str, varying: &[String]) -> bool {
    a.dims.iter().zip(&b.dims).any(|(x, y)| {
        let only_v = |f: &Affine| {
            f.coef.get(v).copied().unwrap_or(0) != 0
                && f.coef.keys().all(|k| k == v || !varying.contains(k))
        };
        match (x, y) {
            (Ix::Point(Some(f)), Ix::Point(Some(g))) => f == g && only_v(f),
            (Ix::Range(Some(s1), Some(e1)), Ix::Range(Some(s2), Some(e2))) => {
                if s1 != s2 || e1 != e2 || !only_v(s1) {
                    return false;
                }
                let Some(d) = e1.clone().add(s1, -1) else {
                    return false;
                };
                let stride = s1.coef.get(v).copied().unwrap_or(0).abs();
                d.coef.is_empty() && d.k <= stride
            }
            _ => false,
        }
    })
}

/// A slice whose start is affine but whose end is not (`t * 64 .. t * 64 + lens[t]`) covers at
/// most the extent of the parameter's tile dimension it binds (exactly that extent for a fixed
/// shape, at most it for a bounded `..64` one; `wsp run` checks the view against the tile): its
/// end becomes `start + extent`, a region that contains the real one. The view's kept
/// dimensions (slices, `:` and the trailing whole ones of a tensor of rank `rank`) align with
/// the tile's from the right.
fn bound_slice_ends(dims: &mut [Ix], rank: usize, tile: Option<&[crate::types::D]>) {
    let Some(tile) = tile else { return };
    let kept: Vec<usize> = (0..rank.max(dims.len()))
        .filter(|&j| !matches!(dims.get(j), Some(Ix::Point(_))))
        .collect();
    for (k, &j) in kept.iter().enumerate() {
        let Some(t) = (tile.len() + k).checked_sub(kept.len()) else {
            continue;
        };
        if let (Some(Ix::Range(Some(start), end @ None)), Some(crate::types::D::K(n))) =
            (dims.get_mut(j), tile.get(t))
        {
            *end = start.clone().add(&Affine::konst(*n), 1);
        }
    }
}

struct Collector<'a> {
    scope: &'a BTreeMap<String, Scoped>,
    consts: &'a BTreeMap<String, i64>,
    axis_sizes: &'a BTreeMap<String, D>,
    /// Loop variable domains in scope.
    dom: BTreeMap<String, Interval>,
    /// Loop variables bound inside the region being collected (they vary freely).
    inner: Vec<String>,
    out: Vec<Access>,
    /// Depth of `when` branches around the current statement (bounds are not checked there:
    /// the condition may guard the index).
    in_when: usize,
    /// View indices that leave their tensor's bounds: (index span, message, note).
    oob: Vec<(Span, String, String)>,
    /// The variables `consume c as ...` binds (tokens received).
    tokens: Vec<String>,
    /// The local tensors made inside the region (`let H: f32[..] = scratch()`): each
    /// iteration of a loop around them has its own, so they are never shared between them.
    private: BTreeSet<String>,
}

impl Collector<'_> {
    fn axis_domain(&self, iter_arg: &Expr) -> Interval {
        let ExprKind::Name(n) = &iter_arg.kind else {
            return (Some(0), None);
        };
        match self.scope.get(&n.name).map(|s| &s.symbol) {
            Some(Symbol::Axis(_)) => {}
            _ => return (Some(0), None),
        }
        match self.axis_sizes.get(&n.name) {
            Some(D::K(n)) => (Some(0), Some(n - 1)),
            _ => (Some(0), None),
        }
    }

    fn block(&mut self, b: &Block) {
        for s in &b.stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::For { vars, iter, body } => {
                let args: Vec<&Expr> = match &iter.kind {
                    ExprKind::Call { args, .. } => args.iter().map(|a| &a.value).collect(),
                    _ => Vec::new(),
                };
                // `for i in a..b` with constant bounds: a to b − 1.
                let range = match &iter.kind {
                    ExprKind::Range { start, end } => {
                        let lo = start.as_ref().map_or(Some(0), |e| eval_int(e, self.consts));
                        let hi = end.as_ref().and_then(|e| eval_int(e, self.consts));
                        Some((lo, hi.and_then(|h| h.checked_sub(1))))
                    }
                    _ => None,
                };
                for (i, v) in vars.iter().enumerate() {
                    let d = args
                        .get(i)
                        .map(|a| self.axis_domain(a))
                        .or(range)
                        .unwrap_or((Some(0), None));
                    self.dom.insert(v.name.clone(), d);
                    self.inner.push(v.name.clone());
                }
                self.block(body);
            }
            StmtKind::When {
                branches,
                otherwise,
            } => {
                self.in_when += 1;
                for (_, b) in branches {
                    self.block(b);
                }
                if let Some(b) = otherwise {
                    self.block(b);
                }
                self.in_when -= 1;
            }
            StmtKind::Consume { bindings, body, .. } => {
                for b in bindings {
                    // A token's value is whatever was sent: any index.
                    self.dom.insert(b.name.clone(), (None, None));
                    self.tokens.push(b.name.clone());
                }
                self.block(body);
            }
            StmtKind::Expr(e) | StmtKind::Send { value: e, .. } => self.task(e),
            StmtKind::Let { .. } => {
                if let Some((name, _)) = s.local_tensor() {
                    self.private.insert(name.name.clone());
                }
            }
            _ => {}
        }
    }

    fn task(&mut self, e: &Expr) {
        let ExprKind::Call {
            callee,
            coords: Some(_),
            args,
        } = &e.kind
        else {
            return;
        };
        let ExprKind::Name(k) = &callee.kind else {
            return;
        };
        let Some(Symbol::Kernel(params)) = self.scope.get(&k.name).map(|s| &s.symbol) else {
            return;
        };
        for (i, a) in args.iter().enumerate() {
            let param = match &a.name {
                Some(n) => params.iter().find(|p| p.name == n.name),
                None => params.get(i),
            };
            let Some(param) = param else { continue };
            if !param.tile {
                continue;
            }
            let (tensor, idx): (&Ident, &[Expr]) = match &a.value.kind {
                ExprKind::Name(n) => (n, &[]),
                ExprKind::Index { base, indices } => match &base.kind {
                    ExprKind::Name(n) => (n, indices.as_slice()),
                    _ => continue,
                },
                _ => continue,
            };
            let write = matches!(param.dir, Some(Direction::Out | Direction::InOut));
            let shape = match self.scope.get(&tensor.name).map(|s| &s.symbol) {
                // Writing an input is already E0408; a race report on it would be noise.
                Some(Symbol::Tensor { kind, dims, .. })
                    if !(write && *kind == TensorKind::Input) =>
                {
                    dims.clone()
                }
                _ => continue,
            };
            let mut dims: Vec<Ix> = idx
                .iter()
                .map(|ix| match &ix.kind {
                    ExprKind::FullSlice => Ix::Whole,
                    ExprKind::Range { start, end } => Ix::Range(
                        start.as_ref().and_then(|s| affine(s, self.consts)),
                        end.as_ref().and_then(|s| affine(s, self.consts)),
                    ),
                    _ => Ix::Point(affine(ix, self.consts)),
                })
                .collect();
            if self.in_when == 0 {
                if let Some(shape) = &shape {
                    self.bounds(tensor, shape, idx, &dims);
                }
            }
            if self.private.contains(&tensor.name) {
                continue;
            }
            // For the race analysis (after the bounds check, which sees only what is written).
            bound_slice_ends(
                &mut dims,
                shape.as_ref().map_or(0, Vec::len),
                param.dims.as_deref(),
            );
            let ivs = dims.iter().map(|d| dim_interval(d, &self.dom)).collect();
            let mut dom = BTreeMap::new();
            for d in &dims {
                let forms: Vec<&Affine> = match d {
                    Ix::Point(a) => a.iter().collect(),
                    Ix::Range(s, e) => s.iter().chain(e.iter()).collect(),
                    Ix::Whole => Vec::new(),
                };
                for v in forms.into_iter().flat_map(|a| a.coef.keys()) {
                    if let Some(i) = self.dom.get(v) {
                        dom.insert(v.clone(), *i);
                    }
                }
            }
            self.out.push(Access {
                tensor: tensor.name.clone(),
                write,
                dims,
                ivs,
                text: crate::types::expr_text(&a.value),
                span: a.value.span,
                in_when: self.in_when > 0,
                dom,
            });
        }
    }
}

impl Collector<'_> {
    /// Records every view index of `tensor` whose range over the loop domains provably leaves
    /// the dimension (only when the dimension's size and the index's range are known).
    fn bounds(&mut self, tensor: &Ident, shape: &[D], idx: &[Expr], dims: &[Ix]) {
        for (j, ((ix, e), d)) in dims.iter().zip(idx).zip(shape).enumerate() {
            let D::K(size) = d else { continue };
            let (lo, hi) = dim_interval(ix, &self.dom);
            let vars: BTreeSet<&String> = match ix {
                Ix::Point(Some(a)) => a.coef.keys().collect(),
                Ix::Range(s, e) => s
                    .iter()
                    .chain(e.iter())
                    .flat_map(|a| a.coef.keys())
                    .collect(),
                _ => BTreeSet::new(),
            };
            // Every variable bounded, the forms known, and still no bound: the index leaves
            // the 64-bit range for some iteration.
            let overflows = !vars.is_empty()
                && matches!(ix, Ix::Point(Some(_)) | Ix::Range(Some(_), Some(_)))
                && vars
                    .iter()
                    .all(|v| matches!(self.dom.get(*v), Some((Some(_), Some(_)))))
                && (lo.is_none() || hi.is_none());
            let reach = match (lo.filter(|l| *l < 0), hi.filter(|h| *h >= *size)) {
                (Some(l), _) => l.to_string(),
                (None, Some(h)) => h.to_string(),
                (None, None) if overflows => "beyond the 64-bit integer range".to_string(),
                (None, None) => continue,
            };
            let ranges: Vec<String> = vars
                .iter()
                .filter_map(|v| match self.dom.get(*v) {
                    Some((Some(l), Some(h))) => Some(format!("`{v}` in {l}..={h}")),
                    _ => None,
                })
                .collect();
            let note = if ranges.is_empty() {
                format!(
                    "dimension {j} of `{}` has indices 0..={}",
                    tensor.name,
                    size - 1
                )
            } else {
                format!(
                    "with {}, the index reaches {reach}; dimension {j} of `{}` has indices 0..={}",
                    ranges.join(", "),
                    tensor.name,
                    size - 1
                )
            };
            self.oob.push((
                e.span,
                format!(
                    "view index `{}` is out of bounds for dimension {j} of `{}` (size {size})",
                    crate::types::expr_text(e),
                    tensor.name
                ),
                note,
            ));
        }
    }
}

impl<'a> Collector<'a> {
    fn new(
        scope: &'a BTreeMap<String, Scoped>,
        consts: &'a BTreeMap<String, i64>,
        axis_sizes: &'a BTreeMap<String, D>,
    ) -> Collector<'a> {
        Collector {
            scope,
            consts,
            axis_sizes,
            dom: BTreeMap::new(),
            inner: Vec::new(),
            out: Vec::new(),
            in_when: 0,
            oob: Vec::new(),
            tokens: Vec::new(),
            private: BTreeSet::new(),
        }
    }
}

/// A process body's tensor accesses, for the race check between the processes of one
/// pipeline (E0507). Tensors are named by the file that declares them and their name there.
pub(crate) struct ProcAccesses {
    accesses: Vec<((String, String), Access)>,
    /// Its loop variables and received tokens: they differ from one replica to another.
    varying: Vec<String>,
}

/// The accesses of process body `body` of file `here` (its scope, constants and axis sizes).
pub(crate) fn process_accesses(
    here: &str,
    body: &Block,
    scope: &BTreeMap<String, Scoped>,
    consts: &BTreeMap<String, i64>,
    axis_sizes: &BTreeMap<String, D>,
) -> ProcAccesses {
    let mut cx = Collector::new(scope, consts, axis_sizes);
    cx.block(body);
    let home = |t: &str| {
        let from = scope.get(t).and_then(|s| s.from.clone());
        (from.unwrap_or_else(|| here.to_string()), t.to_string())
    };
    let mut varying = cx.inner;
    varying.extend(cx.tokens);
    ProcAccesses {
        accesses: cx.out.into_iter().map(|a| (home(&a.tensor), a)).collect(),
        varying,
    }
}

/// Whether some dimension's intervals (each over its own process's loops) are disjoint.
fn disjoint_ivs(a: &Access, b: &Access) -> bool {
    a.ivs.iter().zip(&b.ivs).any(|(x, y)| disjoint(*x, *y))
}

/// The first pair of accesses by which two processes that nothing orders may race (one writes
/// a region the other touches): `a`'s and `b`'s. With `replicas`, `a` and `b` are the same
/// process run as several replicas, each on its own tokens: an access indexed by a received
/// token that differs from one token to the next (`distinct`; the same form in both, over that
/// token alone) is then each replica's own.
pub(crate) fn process_conflict<'a>(
    a: &'a ProcAccesses,
    b: &'a ProcAccesses,
    replicas: bool,
    distinct: &[String],
) -> Option<(&'a Access, &'a Access)> {
    for (ka, x) in &a.accesses {
        for (kb, y) in &b.accesses {
            if ka != kb || !(x.write || y.write) || disjoint_ivs(x, y) {
                continue;
            }
            if replicas && distinct.iter().any(|t| separated(x, y, t, &a.varying)) {
                continue;
            }
            return Some((x, y));
        }
    }
    None
}

/// Race diagnostics of one workload body (item-relative spans).
pub fn check_block(
    file: &FileName,
    body: &Block,
    scope: &BTreeMap<String, Scoped>,
    consts: &BTreeMap<String, i64>,
    axis_sizes: &BTreeMap<String, D>,
) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    walk(
        file,
        body,
        scope,
        consts,
        axis_sizes,
        &BTreeMap::new(),
        &mut diags,
    );
    diags.extend(view_bounds(file, body, scope, consts, axis_sizes));
    diags
}

/// A view that crosses a shard boundary of its tensor (`.layout`, E0612): the view, the
/// iteration (loop variables and their values) and the first and last index it touches in the
/// sharded dimension; `whole` when it keeps the whole dimension.
pub(crate) struct Straddle {
    pub text: String,
    /// Item-relative.
    pub span: Span,
    pub at: Vec<(String, i64)>,
    pub first: i64,
    pub last: i64,
    pub whole: bool,
}

/// A tensor's dimension split into shards (`.layout`): the dimension's size and the shard's.
pub(crate) struct Sharded<'a> {
    pub tensor: &'a str,
    pub dim: usize,
    pub size: i64,
    pub shard: i64,
}

/// The most iterations of one view [`straddles`] enumerates; a view over more is left to the
/// run-time check (E0818).
const MAX_STRADDLE_ITERATIONS: u64 = 1 << 16;

/// The first straddling iteration of each view of `tensor` in `body` (outside `when` branches)
/// whose index in dimension `dim` is affine over loop variables of known domains, with shards
/// of `shard` indices in a dimension of `size`. Iterations whose view leaves the dimension
/// are E0411's, not reported here.
pub(crate) fn straddles(
    body: &Block,
    scope: &BTreeMap<String, Scoped>,
    consts: &BTreeMap<String, i64>,
    axis_sizes: &BTreeMap<String, D>,
    sharded: &Sharded<'_>,
) -> Vec<Straddle> {
    let &Sharded {
        tensor,
        dim,
        size,
        shard,
    } = sharded;
    let mut cx = Collector::new(scope, consts, axis_sizes);
    cx.block(body);
    let mut out = Vec::new();
    for a in cx.out.iter().filter(|a| a.tensor == tensor && !a.in_when) {
        let (start, end) = match a.dims.get(dim) {
            None | Some(Ix::Whole) => {
                if shard < size {
                    out.push(Straddle {
                        text: a.text.clone(),
                        span: a.span,
                        at: Vec::new(),
                        first: 0,
                        last: size - 1,
                        whole: true,
                    });
                }
                continue;
            }
            Some(Ix::Point(Some(p))) => match p.clone().add(&Affine::konst(1), 1) {
                Some(e) => (p.clone(), e),
                None => continue,
            },
            Some(Ix::Range(Some(s), Some(e))) => (s.clone(), e.clone()),
            _ => continue,
        };
        let vars: Vec<&String> = start.coef.keys().chain(end.coef.keys()).collect();
        let mut vars: Vec<&String> = vars
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        vars.sort();
        let mut doms = Vec::new();
        let mut count: u64 = 1;
        for v in &vars {
            match a.dom.get(*v) {
                Some((Some(l), Some(h))) if l <= h => {
                    count = count.saturating_mul((h - l + 1) as u64);
                    doms.push((*l, *h));
                }
                _ => count = u64::MAX,
            }
        }
        if count > MAX_STRADDLE_ITERATIONS {
            continue;
        }
        let eval = |f: &Affine, vals: &[i64]| -> Option<i64> {
            let mut x = f.k;
            for (v, c) in &f.coef {
                let i = vars.iter().position(|w| *w == v)?;
                x = x.checked_add(c.checked_mul(vals[i])?)?;
            }
            Some(x)
        };
        let mut vals: Vec<i64> = doms.iter().map(|d| d.0).collect();
        'iter: loop {
            let range = eval(&start, &vals).zip(eval(&end, &vals).and_then(|e| e.checked_sub(1)));
            if let Some((f, l)) = range {
                if f <= l && f >= 0 && l < size && f / shard != l / shard {
                    out.push(Straddle {
                        text: a.text.clone(),
                        span: a.span,
                        at: vars
                            .iter()
                            .map(|v| v.to_string())
                            .zip(vals.clone())
                            .collect(),
                        first: f,
                        last: l,
                        whole: false,
                    });
                    break 'iter;
                }
            }
            // The next iteration, the last variable fastest.
            let mut k = vals.len();
            loop {
                if k == 0 {
                    break 'iter;
                }
                k -= 1;
                if vals[k] < doms[k].1 {
                    vals[k] += 1;
                    break;
                }
                vals[k] = doms[k].0;
            }
        }
    }
    out
}

/// E0411: view indices that provably leave their tensor (affine indices over loops whose axes
/// have known sizes; indices under `when` are not checked, the condition may guard them).
pub fn view_bounds(
    file: &FileName,
    body: &Block,
    scope: &BTreeMap<String, Scoped>,
    consts: &BTreeMap<String, i64>,
    axis_sizes: &BTreeMap<String, D>,
) -> Vec<Diagnostic> {
    let mut cx = Collector::new(scope, consts, axis_sizes);
    cx.block(body);
    cx.oob
        .into_iter()
        .map(|(span, msg, note)| {
            Diagnostic::new(codes::E0411, msg, Label::new(file.clone(), span, "out of bounds"))
                .with_note(note)
                .with_help("keep every index inside the tensor: check the axis sizes, the offsets and the slice ends")
        })
        .collect()
}

fn walk(
    file: &FileName,
    b: &Block,
    scope: &BTreeMap<String, Scoped>,
    consts: &BTreeMap<String, i64>,
    axis_sizes: &BTreeMap<String, D>,
    outer_dom: &BTreeMap<String, Interval>,
    diags: &mut Vec<Diagnostic>,
) {
    for s in &b.stmts {
        match &s.kind {
            StmtKind::For { vars, iter, body } => {
                let mut cx = Collector::new(scope, consts, axis_sizes);
                cx.dom = outer_dom.clone();
                // `P(..)` and `P.sel(row)` declare their iterations independent (the selected
                // indices of a CSR row are distinct).
                let (is_p, sel, p_span, args) = match &iter.kind {
                    ExprKind::Call { callee, args, .. } => match &callee.kind {
                        ExprKind::Name(n) if n.name == "P" => {
                            (true, false, n.span, args.as_slice())
                        }
                        ExprKind::Field { base, field }
                            if field.name == "sel"
                                && matches!(&base.kind, ExprKind::Name(b) if b.name == "P") =>
                        {
                            // Only over a Sparse row; anything else is already E0402.
                            let sparse_row = match args.first().map(|a| &a.value.kind) {
                                Some(ExprKind::Index { base, .. }) => match &base.kind {
                                    ExprKind::Name(n) => matches!(
                                        scope.get(&n.name).map(|s| &s.symbol),
                                        Some(Symbol::Axis(k)) if k == "Sparse"
                                    ),
                                    _ => false,
                                },
                                _ => false,
                            };
                            (sparse_row, true, callee.span, args.as_slice())
                        }
                        _ => (false, false, iter.span, args.as_slice()),
                    },
                    _ => (false, false, iter.span, &[][..]),
                };
                let mut dom = outer_dom.clone();
                for (i, v) in vars.iter().enumerate() {
                    let d = args
                        .get(i)
                        .map(|a| cx.axis_domain(&a.value))
                        .unwrap_or((Some(0), None));
                    dom.insert(v.name.clone(), d);
                }
                // A header with a different number of variables and axes is already E0405.
                if is_p && vars.len() == args.len() {
                    cx.dom = dom.clone();
                    cx.block(body);
                    let loop_vars: Vec<String> = vars.iter().map(|v| v.name.clone()).collect();
                    let mut varying = loop_vars.clone();
                    varying.extend(cx.inner.iter().cloned());
                    if let Some(d) = race_in(&cx.out, &loop_vars, &varying, &cx.dom) {
                        diags.push(report(file, d, p_span, vars, sel));
                    }
                }
                walk(file, body, scope, consts, axis_sizes, &dom, diags);
            }
            StmtKind::When {
                branches,
                otherwise,
            } => {
                for (_, bb) in branches {
                    walk(file, bb, scope, consts, axis_sizes, outer_dom, diags);
                }
                if let Some(bb) = otherwise {
                    walk(file, bb, scope, consts, axis_sizes, outer_dom, diags);
                }
            }
            _ => {}
        }
    }
}

struct Race<'a> {
    a: &'a Access,
    b: &'a Access,
    var: String,
    /// Two values of `var` whose iterations touch overlapping regions, when one was found.
    pair: Option<(i64, i64)>,
}

/// Whether the access's region is known exactly for given loop values (every index affine), so
/// that an overlap found for two values is a real one.
fn exact(a: &Access) -> bool {
    a.dims.iter().all(|d| {
        matches!(
            d,
            Ix::Point(Some(_)) | Ix::Range(Some(_), Some(_)) | Ix::Whole
        )
    })
}

/// What the search for two overlapping iterations found.
enum Witness {
    /// Two values of the variable whose iterations' exact regions overlap.
    Pair(i64, i64),
    /// Exact regions, the whole domain searched, no overlap: the iterations are disjoint.
    None,
    /// Not decided: a region is not exact, or the domain is larger than the search.
    Unknown,
}

/// Two distinct values of `v` (searched in the first 64 of its domain) for which the access `a`
/// of one iteration and `b` of the other overlap in every dimension, checked on their exact
/// regions.
fn witness(a: &Access, b: &Access, v: &str, dom: &BTreeMap<String, Interval>) -> Witness {
    if !(exact(a) && exact(b)) {
        return Witness::Unknown;
    }
    let (lo, hi0) = dom.get(v).copied().unwrap_or((Some(0), None));
    let lo = lo.unwrap_or(0);
    let hi = hi0.unwrap_or(lo + 63).min(lo + 63);
    let whole = hi0 == Some(hi);
    let at = |x: i64| {
        let mut d = dom.clone();
        d.insert(v.to_string(), (Some(x), Some(x)));
        d
    };
    for x in lo..=hi {
        let dx = at(x);
        for y in lo..=hi {
            if x == y {
                continue;
            }
            let dy = at(y);
            let overlap = a
                .dims
                .iter()
                .zip(&b.dims)
                .all(|(p, q)| !disjoint(dim_interval(p, &dx), dim_interval(q, &dy)));
            if overlap {
                return Witness::Pair(x.min(y), x.max(y));
            }
        }
    }
    // Other loop variables range over their whole domains here, so no overlap for any pair
    // of values of `v` means none at all.
    if whole {
        Witness::None
    } else {
        Witness::Unknown
    }
}

fn race_in<'a>(
    acc: &'a [Access],
    loop_vars: &[String],
    varying: &[String],
    dom: &BTreeMap<String, Interval>,
) -> Option<Race<'a>> {
    for a in acc.iter().filter(|a| a.write) {
        for b in acc.iter().filter(|b| b.tensor == a.tensor) {
            if provably_disjoint(a, b, dom) {
                continue;
            }
            for v in loop_vars {
                // A loop of one iteration cannot race with itself.
                if dom.get(v) == Some(&(Some(0), Some(0))) {
                    continue;
                }
                if !separated(a, b, v, varying) {
                    let pair = match witness(a, b, v, dom) {
                        Witness::Pair(x, y) => Some((x, y)),
                        Witness::None => continue,
                        Witness::Unknown => None,
                    };
                    return Some(Race {
                        a,
                        b,
                        var: v.clone(),
                        pair,
                    });
                }
            }
        }
    }
    None
}

fn report(file: &FileName, r: Race, p_span: Span, vars: &[Ident], sel: bool) -> Diagnostic {
    let v = &r.var;
    let which = match r.pair {
        Some((x, y)) => format!("`{v} = {x}` and `{v} = {y}`"),
        None => format!("for some values of `{v}`"),
    };
    let what = match (std::ptr::eq(r.a, r.b), r.pair) {
        (true, Some((x, y))) => format!(
            "iterations `{v} = {x}` and `{v} = {y}` both write `{}`",
            r.a.text
        ),
        (true, None) => format!(
            "iterations that differ in `{v}` may both write `{}` (its region depends on values the check cannot bound)",
            r.a.text
        ),
        (false, pair) => format!(
            "`{}` written by one iteration {} `{}` {} by another ({which})",
            r.a.text,
            if pair.is_some() { "overlaps" } else { "may overlap" },
            r.b.text,
            if r.b.write { "written" } else { "read" },
        ),
    };
    let mut d = Diagnostic::new(
        codes::E0409,
        format!(
            "iterations of this `{}` loop race on `{}`: {what}",
            if sel { "P.sel" } else { "P" },
            r.a.tensor
        ),
        Label::new(file.clone(), p_span, "declared independent here"),
    )
    .with_label(Label::new(file.clone(), r.a.span, "written here"));
    if !std::ptr::eq(r.a, r.b) {
        d = d.with_label(Label::new(
            file.clone(),
            r.b.span,
            if r.b.write {
                "written here"
            } else {
                "read here"
            },
        ));
    }
    d = d.with_note(format!(
        "no index of the views separates iterations that differ in `{v}`: give each iteration its \
         own region (index by `{v}`), or order the iterations"
    ));
    if sel {
        d = d.with_help(format!(
            "selected iterations run independently: index the written view by `{v}` so each \
             selected index has its own region, or move the shared update after the loop"
        ));
    } else if vars.len() == 1 {
        d = d
            .with_help("make the loop sequential with `P.seq`, or use a plain block")
            .with_fix(Fix {
                title: "change `P` to `P.seq`".into(),
                edits: vec![Edit {
                    file: file.clone(),
                    span: p_span,
                    replacement: "P.seq".into(),
                }],
            });
    } else {
        d = d.with_help(format!(
            "split the loop and iterate `{v}` with `P.seq`, or use `sequential(...)` to order the work"
        ));
    }
    d
}

/// `combine(a, b, ...)`: operands that write what another reads or writes race.
pub fn check_combine(
    file: &FileName,
    form_span: Span,
    operands: &[(&Ident, &Block)],
    scope: &BTreeMap<String, Scoped>,
    consts: &BTreeMap<String, i64>,
    axis_sizes: &BTreeMap<String, D>,
) -> Vec<Diagnostic> {
    let accesses: Vec<Vec<Access>> = operands
        .iter()
        .map(|(_, b)| {
            let mut cx = Collector::new(scope, consts, axis_sizes);
            cx.block(b);
            // Each operand's loop variables range over their own domains.
            cx.out
                .into_iter()
                .map(|mut a| {
                    a.dims = a.dims.iter().map(|ix| covered(ix, &cx.dom)).collect();
                    a
                })
                .collect()
        })
        .collect();
    let mut diags = Vec::new();
    for i in 0..operands.len() {
        for j in 0..operands.len() {
            if i == j {
                continue;
            }
            for a in accesses[i].iter().filter(|a| a.write) {
                for b in accesses[j].iter().filter(|b| b.tensor == a.tensor) {
                    if (b.write && j < i) || provably_disjoint(a, b, &BTreeMap::new()) {
                        continue;
                    }
                    let (na, nb) = (operands[i].0, operands[j].0);
                    let verb = if b.write { "writes" } else { "reads" };
                    diags.push(
                        Diagnostic::new(
                            codes::E0410,
                            format!(
                                "`combine` operands race on `{}`: `{}` writes `{}` and `{}` {verb} `{}`",
                                a.tensor, na.name, a.text, nb.name, b.text
                            ),
                            Label::new(file.clone(), form_span, "declared independent here"),
                        )
                        .with_label(Label::new(file.clone(), na.span, format!("writes `{}`", a.text)))
                        .with_label(Label::new(file.clone(), nb.span, format!("{verb} `{}`", b.text)))
                        .with_help("order them with `sequential(...)` instead of `combine(...)`")
                        .with_fix(Fix {
                            title: "change `combine` to `sequential`".into(),
                            edits: vec![Edit {
                                file: file.clone(),
                                span: form_span,
                                replacement: "sequential".into(),
                            }],
                        }),
                    );
                    return diags;
                }
            }
        }
    }
    diags
}

/// A dimension replaced by the constant interval it covers over the loop domains (so that views
/// from different workloads, whose loop variables are unrelated, compare by extent).
fn covered(ix: &Ix, dom: &BTreeMap<String, Interval>) -> Ix {
    match dim_interval(ix, dom) {
        (Some(l), Some(h)) => Ix::Range(Some(Affine::konst(l)), Some(Affine::konst(h + 1))),
        _ => Ix::Whole,
    }
}

/// Sizes of the file's axes (`Dense[n]` with a constant `n`).
#[salsa::tracked(returns(ref))]
pub fn axis_sizes(db: &dyn crate::db::Db, file: crate::db::File) -> BTreeMap<String, D> {
    let consts = crate::db::const_values(db, file);
    let mut out = BTreeMap::new();
    for (_, _, item) in crate::db::items_of(db, file, &[crate::db::ItemTag::Axis]) {
        if let ItemKind::Axis(a) = &item.kind {
            // `DenseDyn(p)` over a param: the symbolic size `p`.
            if let ExprKind::Call { callee, args, .. } = &a.ctor.kind {
                if let (ExprKind::Name(k), [arg]) = (&callee.kind, args.as_slice()) {
                    if let (true, ExprKind::Name(p)) = (k.name == "DenseDyn", &arg.value.kind) {
                        if !consts.contains_key(&p.name) {
                            out.insert(a.name.name.clone(), D::S(p.name.clone()));
                        }
                    }
                }
            }
            if let ExprKind::Index { base, indices } = &a.ctor.kind {
                if matches!(&base.kind, ExprKind::Name(k) if k.name == "Dense") {
                    if let Some(v) = indices.first().and_then(|i| eval_int(i, consts)) {
                        out.insert(a.name.name.clone(), D::K(v));
                    }
                }
            }
        }
    }
    out
}
