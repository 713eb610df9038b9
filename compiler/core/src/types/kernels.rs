//! Kernel typing: tile shapes and dtypes through every operation and statement of a kernel
//! body (broadcasts, calls, sub-ranges, stores, pipes), the opt-in `narrowing` lint (W0201),
//! and the constant shapes of the tiles a kernel binds (what the tile-memory analysis sizes).

use super::*;

/// The type of a kernel value.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    /// A 2-D tile `[rows, cols]`.
    Tile { dtype: String, r: D, c: D },
    /// A scalar; `dtype` is `None` for an untyped literal.
    Scalar(Option<String>),
    /// The type is not known (an earlier error, or an unsupported form): no further checks.
    Unknown,
}

impl Ty {
    fn describe(&self) -> String {
        match self {
            Ty::Tile { dtype, r, c } => format!("{dtype}[{r}, {c}]"),
            Ty::Scalar(Some(d)) => d.clone(),
            Ty::Scalar(None) => "a scalar".into(),
            Ty::Unknown => "?".into(),
        }
    }
}

fn tile(dtype: &str, dims: &[D]) -> Ty {
    match dims {
        [c] => Ty::Tile {
            dtype: dtype.into(),
            r: D::K(1),
            c: c.clone(),
        },
        [r, c] => Ty::Tile {
            dtype: dtype.into(),
            r: r.clone(),
            c: c.clone(),
        },
        _ => Ty::Unknown,
    }
}

/// One broadcast dimension: equal sizes, or a 1 that stretches.
fn bdim(a: &D, b: &D) -> Option<D> {
    if a == b || *b == D::K(1) {
        Some(a.clone())
    } else if *a == D::K(1) {
        Some(b.clone())
    } else {
        None
    }
}

fn is_float(d: &str) -> bool {
    matches!(d, "f16" | "bf16" | "f32" | "f64")
}

struct TyCx<'a> {
    file: FileName,
    consts: &'a BTreeMap<String, i64>,
    env: Vec<BTreeMap<String, Ty>>,
    pipes: BTreeMap<String, Ty>,
    diags: Vec<Diagnostic>,
    /// Every tile binding (parameter, `let`, `var`) by the start of its name's span, with its
    /// type: what the tile-memory analysis sizes.
    bound: BTreeMap<u32, Ty>,
    /// With the `narrowing` lint: the `out` and `inout` tile parameters, whose stores convert.
    narrowing: Option<std::collections::BTreeSet<String>>,
}

impl TyCx<'_> {
    fn label(&self, span: Span, msg: impl Into<String>) -> Label {
        Label::new(self.file.clone(), span, msg)
    }

    fn get(&self, n: &str) -> Ty {
        self.env
            .iter()
            .rev()
            .find_map(|s| s.get(n).cloned())
            .unwrap_or_else(|| {
                // A global constant is an untyped number, like a literal.
                if self.consts.contains_key(n) {
                    Ty::Scalar(None)
                } else {
                    Ty::Unknown
                }
            })
    }

    fn bind(&mut self, n: &Ident, t: Ty) {
        self.bound.insert(n.span.start, t.clone());
        self.set(&n.name, t);
    }

    fn set(&mut self, n: &str, t: Ty) {
        if let Some(s) = self.env.last_mut() {
            s.insert(n.to_string(), t);
        }
    }

    fn err(&mut self, code: &'static str, msg: String, span: Span, label: String, help: &str) {
        self.diags
            .push(Diagnostic::new(code, msg, self.label(span, label)).with_help(help.to_string()));
    }

    /// Broadcasting of two operands of an elementwise operation.
    fn broadcast(&mut self, op: &str, a: &Ty, b: &Ty, span: Span) -> Ty {
        match (a, b) {
            (Ty::Unknown, _) | (_, Ty::Unknown) => Ty::Unknown,
            (Ty::Scalar(x), Ty::Scalar(y)) => Ty::Scalar(x.clone().or(y.clone())),
            (t @ Ty::Tile { dtype, .. }, Ty::Scalar(Some(sd)))
            | (Ty::Scalar(Some(sd)), t @ Ty::Tile { dtype, .. }) => {
                if sd != dtype && !(is_float(sd) && is_float(dtype)) {
                    self.dtype_mismatch(op, dtype, sd, span);
                }
                t.clone()
            }
            (t @ Ty::Tile { .. }, Ty::Scalar(None)) | (Ty::Scalar(None), t @ Ty::Tile { .. }) => {
                t.clone()
            }
            (
                Ty::Tile {
                    dtype: da,
                    r: ra,
                    c: ca,
                },
                Ty::Tile {
                    dtype: db,
                    r: rb,
                    c: cb,
                },
            ) => {
                if da != db {
                    self.dtype_mismatch(op, da, db, span);
                }
                let (r, c) = (bdim(ra, rb), bdim(ca, cb));
                match (r, c) {
                    (Some(r), Some(c)) => Ty::Tile {
                        dtype: da.clone(),
                        r,
                        c,
                    },
                    _ => {
                        self.diags.push(
                            Diagnostic::new(
                                codes::E0204,
                                format!(
                                    "`{op}` of tiles with incompatible shapes [{ra}, {ca}] and [{rb}, {cb}]"
                                ),
                                self.label(span, format!("[{ra}, {ca}] {op} [{rb}, {cb}]")),
                            )
                            .with_help(
                                "elementwise operations take equal shapes, or broadcast a [R, 1] \
                                 column per row, a [1, C] row per column, or a scalar",
                            ),
                        );
                        Ty::Unknown
                    }
                }
            }
        }
    }

    fn dtype_mismatch(&mut self, op: &str, a: &str, b: &str, span: Span) {
        self.diags.push(
            Diagnostic::new(
                codes::E0205,
                format!("`{op}` mixes {a} and {b}"),
                self.label(span, format!("{a} {op} {b}")),
            )
            .with_help(format!(
                "convert one operand explicitly, e.g. `cast(x, {a})`; dtypes never mix implicitly"
            )),
        );
    }

    fn args<'e>(&mut self, args: &'e [Arg]) -> Vec<(Ty, &'e Expr)> {
        args.iter()
            .map(|a| (self.expr(&a.value), &a.value))
            .collect()
    }

    fn shape_list(&self, e: &Expr) -> Option<(D, D)> {
        let ExprKind::List(items) = &e.kind else {
            return None;
        };
        match items.as_slice() {
            [r, c] => Some((eval_dim(r, self.consts)?, eval_dim(c, self.consts)?)),
            [c] => Some((D::K(1), eval_dim(c, self.consts)?)),
            _ => None,
        }
    }

    fn call(&mut self, e: &Expr, name: &str, args: &[Arg]) -> Ty {
        let span = e.span;
        let a = self.args(args);
        let arity = |n: usize, me: &mut Self| -> bool {
            if a.len() < n {
                me.err(
                    codes::E0306,
                    format!("`{name}` takes {n} argument(s), found {}", a.len()),
                    span,
                    "missing arguments".into(),
                    "see `wsp explain E0306` for the operations and their arguments",
                );
                false
            } else {
                true
            }
        };
        match KernelFn::from_name(name) {
            Some(KernelFn::Unary(_)) => {
                if !arity(1, self) {
                    return Ty::Unknown;
                }
                a[0].0.clone()
            }
            Some(KernelFn::Binary(_)) => {
                if !arity(2, self) {
                    return Ty::Unknown;
                }
                self.broadcast(name, &a[0].0, &a[1].0, span)
            }
            Some(KernelFn::Select) => {
                if !arity(3, self) {
                    return Ty::Unknown;
                }
                if let Ty::Tile { dtype, .. } = &a[0].0 {
                    if dtype != "bool" {
                        self.err(
                            codes::E0207,
                            format!("`select` needs a bool mask, found {}", a[0].0.describe()),
                            a[0].1.span,
                            "not a mask".into(),
                            "build the mask with a comparison: `select(x > 0.0, x, y)`",
                        );
                    }
                }
                self.broadcast("select", &a[1].0, &a[2].0, span)
            }
            Some(KernelFn::Reduce(op)) => {
                if !arity(1, self) {
                    return Ty::Unknown;
                }
                match &a[0].0 {
                    Ty::Tile { dtype, r, c } => {
                        let out = if matches!(dtype.as_str(), "f16" | "bf16") {
                            "f32".to_string()
                        } else {
                            dtype.clone()
                        };
                        if op.is_row() {
                            Ty::Tile {
                                dtype: out,
                                r: r.clone(),
                                c: D::K(1),
                            }
                        } else {
                            Ty::Tile {
                                dtype: out,
                                r: D::K(1),
                                c: c.clone(),
                            }
                        }
                    }
                    Ty::Scalar(_) => {
                        self.err(
                            codes::E0206,
                            format!("`{name}` reduces a tile, found a scalar"),
                            a[0].1.span,
                            "not a tile".into(),
                            "reductions take a tile: `rowsum(x)` gives [R, 1]",
                        );
                        Ty::Unknown
                    }
                    Ty::Unknown => Ty::Unknown,
                }
            }
            Some(KernelFn::Matmul) => {
                if !arity(2, self) {
                    return Ty::Unknown;
                }
                match (&a[0].0, &a[1].0) {
                    (
                        Ty::Tile {
                            dtype: da,
                            r: m,
                            c: k1,
                        },
                        Ty::Tile {
                            dtype: db,
                            r: k2,
                            c: n,
                        },
                    ) => {
                        if k1 != k2 {
                            self.diags.push(
                                Diagnostic::new(
                                    codes::E0206,
                                    format!(
                                        "`matmul` inner dimensions differ: [{m}, {k1}] × [{k2}, {n}]"
                                    ),
                                    self.label(span, format!("{k1} ≠ {k2}")),
                                )
                                .with_help("matmul(a, b) needs a: [M, K] and b: [K, N]; use `transpose(b)` if b is [N, K]"),
                            );
                            return Ty::Unknown;
                        }
                        if da != db {
                            self.dtype_mismatch("matmul", da, db, span);
                        }
                        let out = Ty::Tile {
                            dtype: if da == "f64" {
                                "f64".into()
                            } else {
                                "f32".into()
                            },
                            r: m.clone(),
                            c: n.clone(),
                        };
                        if let Some((Ty::Tile { r, c, .. }, ae)) = a.get(2) {
                            if (r, c) != (m, n) {
                                self.err(
                                    codes::E0206,
                                    format!(
                                        "`matmul` accumulator is [{r}, {c}], the product is [{m}, {n}]"
                                    ),
                                    ae.span,
                                    "wrong accumulator shape".into(),
                                    "the accumulator has the product's shape [M, N]",
                                );
                            }
                        }
                        out
                    }
                    (Ty::Unknown, _) | (_, Ty::Unknown) => Ty::Unknown,
                    _ => {
                        self.err(
                            codes::E0206,
                            "`matmul` multiplies two tiles".into(),
                            span,
                            "needs tiles".into(),
                            "matmul(a, b) needs a: [M, K] and b: [K, N]",
                        );
                        Ty::Unknown
                    }
                }
            }
            Some(KernelFn::Transpose) => {
                if !arity(1, self) {
                    return Ty::Unknown;
                }
                match &a[0].0 {
                    Ty::Tile { dtype, r, c } => Ty::Tile {
                        dtype: dtype.clone(),
                        r: c.clone(),
                        c: r.clone(),
                    },
                    t => t.clone(),
                }
            }
            Some(KernelFn::Cast) => {
                if !arity(2, self) {
                    return Ty::Unknown;
                }
                let target = match &a[1].1.kind {
                    ExprKind::Name(n) if crate::check::DTYPES.contains(&n.name.as_str()) => {
                        n.name.clone()
                    }
                    _ => {
                        self.err(
                            codes::E0207,
                            "`cast` takes a dtype as its second argument".into(),
                            a[1].1.span,
                            "not a dtype".into(),
                            "write `cast(x, f16)`",
                        );
                        return Ty::Unknown;
                    }
                };
                match &a[0].0 {
                    Ty::Tile { r, c, .. } => Ty::Tile {
                        dtype: target,
                        r: r.clone(),
                        c: c.clone(),
                    },
                    Ty::Scalar(_) => Ty::Scalar(Some(target)),
                    Ty::Unknown => Ty::Unknown,
                }
            }
            Some(KernelFn::Full | KernelFn::Iota) => {
                let need = if name == "full" { 2 } else { 1 };
                if !arity(need, self) {
                    return Ty::Unknown;
                }
                match self.shape_list(a[0].1) {
                    Some((r, c)) => {
                        let dtype = if name == "iota" {
                            "i32".to_string()
                        } else {
                            match &a[1].0 {
                                Ty::Scalar(Some(d)) => d.clone(),
                                _ => "f32".to_string(),
                            }
                        };
                        Ty::Tile { dtype, r, c }
                    }
                    None => {
                        self.err(
                            codes::E0207,
                            format!("`{name}` takes a constant shape `[R, C]`"),
                            a[0].1.span,
                            "not a constant shape".into(),
                            "write `full([16, 1], 0.0)` or `iota([1, 32])`",
                        );
                        Ty::Unknown
                    }
                }
            }
            Some(KernelFn::TAlloc | KernelFn::TPop) => match args.first().map(|x| &x.value.kind) {
                Some(ExprKind::Name(p)) => self.pipes.get(&p.name).cloned().unwrap_or(Ty::Unknown),
                _ => Ty::Unknown,
            },
            _ => Ty::Unknown,
        }
    }

    fn expr(&mut self, e: &Expr) -> Ty {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) => Ty::Scalar(None),
            ExprKind::Bool(_) => Ty::Scalar(Some("bool".into())),
            ExprKind::Name(n) => self.get(&n.name),
            ExprKind::Unary { expr, .. } => self.expr(expr),
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.expr(lhs), self.expr(rhs));
                let t = self.broadcast(op.as_str(), &a, &b, e.span);
                match op {
                    BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                        match t {
                            Ty::Tile { r, c, .. } => Ty::Tile {
                                dtype: "bool".into(),
                                r,
                                c,
                            },
                            Ty::Scalar(_) => Ty::Scalar(Some("bool".into())),
                            Ty::Unknown => Ty::Unknown,
                        }
                    }
                    _ => t,
                }
            }
            ExprKind::Call { callee, args, .. } => match &callee.kind {
                ExprKind::Name(n) => self.call(e, &n.name, args),
                _ => Ty::Unknown,
            },
            ExprKind::Index { base, indices } => {
                let bt = self.expr(base);
                self.subrange(&bt, indices, e.span)
            }
            _ => Ty::Unknown,
        }
    }

    /// The type of a static sub-range `t[a..b, :]`.
    fn subrange(&mut self, t: &Ty, idx: &[Expr], span: Span) -> Ty {
        let Ty::Tile { dtype, r, c } = t else {
            return Ty::Unknown;
        };
        if idx.len() != 2 {
            return Ty::Unknown;
        }
        let mut dims = Vec::new();
        for (i, (ix, full)) in idx.iter().zip([r, c]).enumerate() {
            match &ix.kind {
                ExprKind::FullSlice => dims.push(full.clone()),
                ExprKind::Range { start, end } => {
                    let s = match start {
                        Some(s) => eval_int(s, self.consts),
                        None => Some(0),
                    };
                    let en = match end {
                        Some(x) => eval_int(x, self.consts),
                        None => match full {
                            D::K(v) => Some(*v),
                            D::S(_) => None,
                        },
                    };
                    match (s, en) {
                        (Some(s), Some(en)) => {
                            if let D::K(limit) = full {
                                if s < 0 || en > *limit || s >= en {
                                    self.err(
                                        codes::E0208,
                                        format!(
                                            "sub-range {s}..{en} of dimension {} is outside 0..{limit}",
                                            i + 1
                                        ),
                                        ix.span,
                                        "out of range".into(),
                                        "sub-ranges are static and lie within the tile",
                                    );
                                    return Ty::Unknown;
                                }
                            }
                            dims.push(D::K(en - s));
                        }
                        _ => return Ty::Unknown,
                    }
                }
                _ => {
                    self.err(
                        codes::E0208,
                        "a tile is indexed by static sub-ranges `a..b` or `:`".into(),
                        ix.span,
                        "not a range".into(),
                        "write `t[0..16, :]`",
                    );
                    return Ty::Unknown;
                }
            }
        }
        let _ = span;
        Ty::Tile {
            dtype: dtype.clone(),
            r: dims[0].clone(),
            c: dims[1].clone(),
        }
    }

    /// W0201 (the opt-in `narrowing` lint): a store into an `out`/`inout` tile of a dtype that
    /// cannot hold every value of the stored one (f32 into f16, i32 into i8, a float into an
    /// integer), which converts as `cast` does. The fix writes the `cast`.
    fn narrowing_store(&mut self, target: &Expr, tt: &Ty, value: &Ty, vspan: Span) {
        let Some(stores) = &self.narrowing else {
            return;
        };
        let root = match &target.kind {
            ExprKind::Name(n) => n,
            ExprKind::Index { base, .. } => match &base.kind {
                ExprKind::Name(n) => n,
                _ => return,
            },
            _ => return,
        };
        if !stores.contains(&root.name) {
            return;
        }
        let (Ty::Tile { dtype: to, .. }, Ty::Tile { dtype: from, .. }) = (tt, value) else {
            return;
        };
        if to == from || holds_every_value(to, from) {
            return;
        }
        self.diags.push(
            Diagnostic::new(
                codes::W0201,
                format!("storing {from} into `{}`, which is {to}, narrows it", root.name),
                self.label(vspan, format!("{from} value")),
            )
            .with_label(self.label(target.span, format!("{to} tile")))
            .with_note(format!(
                "the store converts as `cast` does: values {to} cannot hold are rounded or saturated"
            ))
            .with_help(format!("write the conversion: `cast(..., {to})`"))
            .with_fix(Fix {
                title: format!("write `cast(..., {to})`"),
                edits: vec![
                    Edit {
                        file: self.file.clone(),
                        span: Span::new(vspan.start, vspan.start),
                        replacement: "cast(".into(),
                    },
                    Edit {
                        file: self.file.clone(),
                        span: Span::new(vspan.end, vspan.end),
                        replacement: format!(", {to})"),
                    },
                ],
            }),
        );
    }

    fn assign(&mut self, target: &Expr, value: &Ty, vspan: Span) {
        let tt = self.expr(target);
        self.narrowing_store(target, &tt, value, vspan);
        let (Ty::Tile { r: tr, c: tc, .. }, Ty::Tile { r, c, .. }) = (&tt, value) else {
            return;
        };
        if (tr, tc) != (r, c) {
            let name = match &target.kind {
                ExprKind::Name(n) => format!("`{}`", n.name),
                _ => "the sub-range".into(),
            };
            self.diags.push(
                Diagnostic::new(
                    codes::E0209,
                    format!("cannot assign a [{r}, {c}] tile to {name}, which is [{tr}, {tc}]"),
                    self.label(vspan, format!("[{r}, {c}]")),
                )
                .with_label(self.label(target.span, format!("[{tr}, {tc}]")))
                .with_help(
                    "assign a value of the target's shape, or assign to a sub-range `t[0..R, :]`",
                ),
            );
        }
    }

    fn block(&mut self, b: &Block) {
        self.env.push(BTreeMap::new());
        for s in &b.stmts {
            self.stmt(s);
        }
        self.env.pop();
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Let {
                names,
                tuple,
                value,
                ..
            } => {
                let t = self.expr(value);
                if *tuple {
                    // `let (v, i) = rowtopk(x, k)`
                    if let ExprKind::Call { callee, args, .. } = &value.kind {
                        if matches!(&callee.kind, ExprKind::Name(n) if n.name == "rowtopk") {
                            let x = args
                                .first()
                                .map(|a| self.expr(&a.value))
                                .unwrap_or(Ty::Unknown);
                            let k = args.get(1).and_then(|a| eval_int(&a.value, self.consts));
                            if let (Ty::Tile { dtype, r, c }, Some(k)) = (&x, k) {
                                if let D::K(cols) = c {
                                    if k < 1 || k > *cols {
                                        self.err(
                                            codes::E0208,
                                            format!("`rowtopk` k = {k} is outside 1..={cols}"),
                                            value.span,
                                            "k out of range".into(),
                                            "k selects at most the tile's columns",
                                        );
                                    }
                                }
                                let vals = Ty::Tile {
                                    dtype: dtype.clone(),
                                    r: r.clone(),
                                    c: D::K(k),
                                };
                                let idx = Ty::Tile {
                                    dtype: "i32".into(),
                                    r: r.clone(),
                                    c: D::K(k),
                                };
                                if let [v, i] = names.as_slice() {
                                    self.bind(v, vals);
                                    self.bind(i, idx);
                                    return;
                                }
                            }
                        }
                    }
                    names.iter().for_each(|n| self.set(&n.name, Ty::Unknown));
                } else if let Some(n) = names.first() {
                    self.bind(n, t);
                }
            }
            StmtKind::Var { name, value, .. } => {
                let t = self.expr(value);
                self.bind(name, t);
            }
            StmtKind::Assign { target, value, .. } => {
                let v = self.expr(value);
                self.assign(target, &v, value.span);
            }
            StmtKind::For { vars, body, .. } => {
                self.env.push(BTreeMap::new());
                vars.iter()
                    .for_each(|v| self.set(&v.name, Ty::Scalar(Some("i32".into()))));
                self.block(body);
                self.env.pop();
            }
            StmtKind::When {
                branches,
                otherwise,
            } => {
                for (c, b) in branches {
                    self.expr(c);
                    self.block(b);
                }
                if let Some(b) = otherwise {
                    self.block(b);
                }
            }
            StmtKind::Pipe { name, elem, .. } => {
                let t = eval_dims(elem, self.consts)
                    .map(|d| tile(&elem.dtype.name, &d))
                    .unwrap_or(Ty::Unknown);
                self.pipes.insert(name.name.clone(), t);
            }
            StmtKind::Section { body, .. } => self.block(body),
            StmtKind::Expr(e) => {
                self.expr(e);
            }
            _ => {}
        }
    }
}

/// Type-checks a kernel body: tile shapes and dtypes through every operation.
pub fn check_kernel(
    file: &FileName,
    k: &Kernel,
    consts: &BTreeMap<String, i64>,
) -> Vec<Diagnostic> {
    check_kernel_linted(file, k, consts, false)
}

/// [`check_kernel`], with the opt-in `narrowing` lint (W0201) when `narrowing` is set.
pub fn check_kernel_linted(
    file: &FileName,
    k: &Kernel,
    consts: &BTreeMap<String, i64>,
    narrowing: bool,
) -> Vec<Diagnostic> {
    let stores = k
        .params
        .iter()
        .filter(|p| matches!(p.dir, Some((Direction::Out | Direction::InOut, _))))
        .map(|p| p.name.name.clone())
        .collect();
    let mut cx = TyCx {
        file: file.clone(),
        consts,
        env: vec![BTreeMap::new()],
        pipes: BTreeMap::new(),
        diags: Vec::new(),
        bound: BTreeMap::new(),
        narrowing: narrowing.then_some(stores),
    };
    for p in &k.params {
        let t = match (&p.dir, eval_dims(&p.ty, consts)) {
            (Some(_), Some(d)) => {
                if d.len() > 2 {
                    cx.err(
                        codes::E0210,
                        format!(
                            "tile `{}` has {} dimensions; tiles are at most 2-D",
                            p.name.name,
                            d.len()
                        ),
                        p.ty.span,
                        "more than 2 dimensions".into(),
                        "index the leading dimensions in the task's view instead: `X[b, h]`",
                    );
                    Ty::Unknown
                } else {
                    tile(&p.ty.dtype.name, &d)
                }
            }
            (Some(_), None) => Ty::Unknown,
            (None, _) => Ty::Scalar(Some(p.ty.dtype.name.clone())),
        };
        cx.bind(&p.name, t);
    }
    if let KernelBody::Block(b) = &k.body {
        cx.block(b);
    }
    cx.diags
}

/// The tiles a kernel binds (parameters, `let`, `var`), by the start of the name's span
/// (item-relative), with their dtype and constant shape `[rows, cols]`. Tiles whose shape is not
/// a constant (or that failed to type) are left out.
pub fn kernel_tile_shapes(
    k: &Kernel,
    consts: &BTreeMap<String, i64>,
) -> BTreeMap<u32, (String, i64, i64)> {
    let mut cx = TyCx {
        file: FileName::new(""),
        consts,
        env: vec![BTreeMap::new()],
        pipes: BTreeMap::new(),
        diags: Vec::new(),
        bound: BTreeMap::new(),
        narrowing: None,
    };
    for p in &k.params {
        let t = match (&p.dir, eval_dims(&p.ty, consts)) {
            (Some(_), Some(d)) if d.len() <= 2 => tile(&p.ty.dtype.name, &d),
            (Some(_), _) => Ty::Unknown,
            (None, _) => Ty::Scalar(Some(p.ty.dtype.name.clone())),
        };
        cx.bind(&p.name, t);
    }
    if let KernelBody::Block(b) = &k.body {
        cx.block(b);
    }
    cx.bound
        .into_iter()
        .filter_map(|(at, t)| match t {
            Ty::Tile {
                dtype,
                r: D::K(r),
                c: D::K(c),
            } => Some((at, (dtype, r, c))),
            _ => None,
        })
        .collect()
}

/// Whether dtype `to` holds every value of dtype `from` exactly (names as written).
fn holds_every_value(to: &str, from: &str) -> bool {
    // (float, mantissa bits with the implicit one, exponent bits) or (integer, signed, bits).
    fn kind(d: &str) -> Option<(bool, u32, u32)> {
        Some(match d {
            "f64" => (true, 53, 11),
            "f32" => (true, 24, 8),
            "f16" => (true, 11, 5),
            "bf16" => (true, 8, 8),
            "i8" => (false, 1, 8),
            "i16" => (false, 1, 16),
            "i32" => (false, 1, 32),
            "i64" => (false, 1, 64),
            "u8" => (false, 0, 8),
            "u16" => (false, 0, 16),
            "u32" => (false, 0, 32),
            "u64" => (false, 0, 64),
            "bool" => (false, 0, 1),
            _ => return None,
        })
    }
    let (Some(t), Some(f)) = (kind(to), kind(from)) else {
        return true;
    };
    match (t, f) {
        // Floats: as many mantissa and exponent bits.
        ((true, tm, te), (true, fm, fe)) => tm >= fm && te >= fe,
        // An integer (magnitude bits) fits the mantissa.
        ((true, tm, _), (false, signed, bits)) => tm >= bits - signed,
        ((false, ..), (true, ..)) => false,
        // Integers: an unsigned one fits a wider signed one or a no narrower unsigned one; a
        // signed one only a no narrower signed one. Into bool only bool.
        ((false, ts, tb), (false, fs, fb)) => {
            if tb == 1 {
                fb == 1
            } else if fb == 1 {
                true
            } else {
                match (ts == 1, fs == 1) {
                    (true, true) | (false, false) => tb >= fb,
                    (true, false) => tb > fb,
                    (false, true) => false,
                }
            }
        }
    }
}
