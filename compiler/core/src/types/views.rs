//! Task views: the shape of a view of a tensor, one task argument's view against the kernel
//! parameter it binds (dtype E0211, an input written E0408, shape E0209 with the fix that
//! slices it to the tile, a view indexed twice E0214), and how messages quote a view.

use super::*;

/// The shape of a view `T[i, a..b, :]` of a tensor with shape `dims`: integer indices drop a
/// dimension, slices keep `end - start`, remaining dimensions are kept. `None` when unknown.
pub fn view_shape(
    dims: &[D],
    idx: &[Expr],
    consts: &BTreeMap<String, i64>,
) -> Result<Vec<D>, String> {
    if idx.len() > dims.len() {
        return Err(format!(
            "{} indices for a tensor with {} dimensions",
            idx.len(),
            dims.len()
        ));
    }
    let mut out = Vec::new();
    for (ix, d) in idx.iter().zip(dims) {
        match &ix.kind {
            ExprKind::FullSlice => out.push(d.clone()),
            ExprKind::Range { start, end } => {
                let s = match start {
                    Some(s) => s,
                    None => {
                        match end.as_ref().and_then(|e| eval_int(e, consts)) {
                            Some(v) => out.push(D::K(v)),
                            None => return Err(String::new()),
                        }
                        continue;
                    }
                };
                let Some(e) = end else {
                    return Err(String::new());
                };
                // `i*64 .. i*64+64`: the extent is end - start when it folds to a constant.
                match extent(s, e, consts) {
                    Some(v) => out.push(D::K(v)),
                    None => return Err(String::new()),
                }
            }
            _ => {}
        }
    }
    out.extend(dims[idx.len()..].iter().cloned());
    Ok(out)
}

/// For each dimension of a view (as [`view_shape`] builds it), the index of the range that
/// made it (`None` for a full slice `:` or a dimension the view leaves unindexed).
fn view_sources(rank: usize, idx: &[Expr]) -> Vec<Option<usize>> {
    let mut out = Vec::new();
    for (j, ix) in idx.iter().enumerate().take(rank) {
        match &ix.kind {
            ExprKind::FullSlice => out.push(None),
            ExprKind::Range { .. } => out.push(Some(j)),
            _ => {}
        }
    }
    out.extend(std::iter::repeat_n(None, rank.saturating_sub(idx.len())));
    out
}

/// Edits making a view's shape `v` the tile shape `p` by changing the end of each slice
/// whose extent differs (`i*64 .. i*64 + 32` → `… + 64`, `0..32` → `0..64`, `..32` →
/// `..64`), when that is unambiguous: the ranks agree, every differing dimension comes from a
/// slice with a constant extent, and the tile's extent there is a constant.
fn slice_fix(
    file: &FileName,
    idx: &[Expr],
    src: &[Option<usize>],
    v: &[D],
    p: &[D],
    consts: &BTreeMap<String, i64>,
) -> Option<Vec<Edit>> {
    if v.len() != p.len() || src.len() != v.len() {
        return None;
    }
    let mut edits = Vec::new();
    for k in 0..v.len() {
        if v[k] == p[k] {
            continue;
        }
        let D::K(want) = p[k] else { return None };
        let ExprKind::Range { start, end } = &idx[src[k]?].kind else {
            return None;
        };
        let end = end.as_ref()?;
        let (span, text) = match start {
            None => (end.span, want.to_string()),
            Some(s) => match &end.kind {
                ExprKind::Binary {
                    op: BinOp::Add,
                    lhs,
                    rhs,
                } if (**lhs == **s || strip_spans_eq(lhs, s))
                    && eval_int(rhs, consts).is_some() =>
                {
                    (rhs.span, want.to_string())
                }
                _ => {
                    let a = eval_int(s, consts)?;
                    eval_int(end, consts)?;
                    (end.span, a.checked_add(want)?.to_string())
                }
            },
        };
        edits.push(Edit {
            file: file.clone(),
            span,
            replacement: text,
        });
    }
    (!edits.is_empty()).then_some(edits)
}

/// `end - start` for affine bounds that differ by a constant (`i*64 .. i*64 + 64` → 64).
fn extent(s: &Expr, e: &Expr, consts: &BTreeMap<String, i64>) -> Option<i64> {
    if let (Some(a), Some(b)) = (eval_int(s, consts), eval_int(e, consts)) {
        // A span beyond 64 bits has no extent (and fits no tile).
        return b.checked_sub(a);
    }
    if let ExprKind::Binary {
        op: BinOp::Add,
        lhs,
        rhs,
    } = &e.kind
    {
        if **lhs == *s || strip_spans_eq(lhs, s) {
            return eval_int(rhs, consts);
        }
    }
    None
}

fn strip_spans_eq(a: &Expr, b: &Expr) -> bool {
    fn canon(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Int(v) => v.to_string(),
            ExprKind::Name(n) => n.name.clone(),
            ExprKind::Binary { op, lhs, rhs } => {
                format!("({} {} {})", canon(lhs), op.as_str(), canon(rhs))
            }
            ExprKind::Unary { expr, .. } => format!("-{}", canon(expr)),
            _ => "?".into(),
        }
    }
    canon(a) == canon(b)
}

/// E0214 for a view indexed twice (`X[i][0]`), with the fix that writes its indices in one
/// pair of brackets (`X[i, 0]`) when the innermost base is a name.
fn chained_view(file: &FileName, view: &Expr) -> Diagnostic {
    let mut groups: Vec<&[Expr]> = Vec::new();
    let mut e = view;
    while let ExprKind::Index { base, indices } = &e.kind {
        groups.push(indices);
        e = base;
    }
    groups.reverse();
    let mut d = Diagnostic::new(
        codes::E0214,
        format!(
            "`{}` indexes a view again; a view indexes its tensor once",
            expr_text(view)
        ),
        Label::new(file.clone(), view.span, "indexed twice"),
    )
    .with_help("write every index in one pair of brackets: `X[i, 0]`, not `X[i][0]`");
    if let ExprKind::Name(n) = &e.kind {
        let all: Vec<String> = groups
            .iter()
            .flat_map(|g| g.iter().map(expr_text))
            .collect();
        let text = format!("{}[{}]", n.name, all.join(", "));
        d = d.with_fix(Fix {
            title: format!("write `{text}`"),
            edits: vec![Edit {
                file: file.clone(),
                span: view.span,
                replacement: text,
            }],
        });
    }
    d
}

/// Checks one task argument's view against the kernel parameter it binds.
pub fn check_view(
    file: &FileName,
    kernel: &str,
    param: &KernelParamSig,
    arg: &Arg,
    scope: &BTreeMap<String, Scoped>,
    consts: &BTreeMap<String, i64>,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let (name, idx): (&Ident, &[Expr]) = match &arg.value.kind {
        ExprKind::Name(n) => (n, &[]),
        ExprKind::Index { base, indices } => match &base.kind {
            ExprKind::Name(n) => (n, indices.as_slice()),
            ExprKind::Index { .. } => {
                out.push(chained_view(file, &arg.value));
                return out;
            }
            _ => return out,
        },
        _ => return out,
    };
    let Some(Symbol::Tensor { kind, dtype, dims }) = scope.get(&name.name).map(|s| &s.symbol)
    else {
        return out;
    };
    if !param.tile {
        return out;
    }
    let label = |span: Span, m: String| Label::new(file.clone(), span, m);
    if *dtype != param.dtype {
        out.push(
            Diagnostic::new(
                codes::E0211,
                format!(
                    "`{}` is {dtype} but `{kernel}`'s parameter `{}` is {}",
                    name.name, param.name, param.dtype
                ),
                label(arg.value.span, format!("{dtype} view")),
            )
            .with_help(format!(
                "pass a {} tensor, or change the parameter's dtype (a kernel may `cast` inside)",
                param.dtype
            )),
        );
    }
    if matches!(param.dir, Some(Direction::Out | Direction::InOut)) && *kind == TensorKind::Input {
        out.push(
            Diagnostic::new(
                codes::E0408,
                format!(
                    "`{}` is an `input`, but `{kernel}` writes its parameter `{}`",
                    name.name, param.name
                ),
                label(arg.value.span, "written by the task".into()),
            )
            .with_help("write to an `output` or a scratch `tensor`; inputs are read-only"),
        );
    }
    let (Some(tdims), Some(pdims)) = (dims, &param.dims) else {
        return out;
    };
    match view_shape(tdims, idx, consts) {
        Ok(v) => {
            // Leading unit dimensions of the view are dropped to match the tile's rank.
            let mut v = v;
            let mut src = view_sources(tdims.len(), idx);
            while v.len() > pdims.len() && v.first() == Some(&D::K(1)) {
                v.remove(0);
                src.remove(0);
            }
            let mut p = pdims.clone();
            let mut partial = param.partial.clone();
            while p.len() > v.len() && p.first() == Some(&D::K(1)) {
                p.remove(0);
                if !partial.is_empty() {
                    partial.remove(0);
                }
            }
            // A partial dimension (`..64`) takes a view of any extent from 1 up to its bound;
            // the others take exactly their extent.
            let fits = v.len() == p.len()
                && v.iter().zip(&p).enumerate().all(|(i, (vd, pd))| {
                    vd == pd
                        || (partial.get(i).copied().unwrap_or(false)
                            && matches!((vd, pd), (D::K(a), D::K(b)) if 1 <= *a && a <= b))
                });
            if !fits {
                let fix = slice_fix(file, idx, &src, &v, &p, consts).map(|edits| Fix {
                    title: format!(
                        "slice `{}` to `{kernel}`'s {} tile",
                        expr_text(&arg.value),
                        show(pdims)
                    ),
                    edits,
                });
                let mut d = Diagnostic::new(
                    codes::E0209,
                    format!(
                        "the view `{}` is {} but `{kernel}`'s parameter `{}` is a {} tile",
                        expr_text(&arg.value),
                        show(&v),
                        param.name,
                        show_partial(pdims, &param.partial)
                    ),
                    label(arg.value.span, format!("view shape {}", show(&v))),
                )
                .with_note(format!("`{}` is {dtype}{}", name.name, show(tdims)))
                .with_help("index the leading dimensions and slice the rest to the tile's shape");
                if let Some(fix) = fix {
                    d = d.with_fix(fix);
                }
                out.push(d);
            }
        }
        Err(msg) if !msg.is_empty() => out.push(
            Diagnostic::new(
                codes::E0209,
                format!("the view of `{}` has {msg}", name.name),
                label(arg.value.span, "too many indices".into()),
            )
            .with_note(format!("`{}` is {dtype}{}", name.name, show(tdims))),
        ),
        Err(_) => {}
    }
    out
}

/// Prints a view or index expression the way messages quote it (`A[i + 1, 0..N]`).
pub(crate) fn expr_text(e: &Expr) -> String {
    fn t(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Name(n) => n.name.clone(),
            ExprKind::Int(v) => v.to_string(),
            ExprKind::FullSlice => ":".into(),
            ExprKind::Range { start, end } => format!(
                "{}..{}",
                start.as_ref().map(|s| t(s)).unwrap_or_default(),
                end.as_ref().map(|s| t(s)).unwrap_or_default()
            ),
            ExprKind::Binary { op, lhs, rhs } => {
                // Parenthesised where the tree needs it: a looser operand, or a right operand
                // of the same precedence (all operators are left-associative).
                let side = |x: &Expr, right: bool| match &x.kind {
                    ExprKind::Binary { op: o, .. }
                        if o.precedence() < op.precedence()
                            || (right && o.precedence() == op.precedence()) =>
                    {
                        format!("({})", t(x))
                    }
                    _ => t(x),
                };
                format!("{} {} {}", side(lhs, false), op.as_str(), side(rhs, true))
            }
            ExprKind::Index { base, indices } => format!(
                "{}[{}]",
                t(base),
                indices.iter().map(t).collect::<Vec<_>>().join(", ")
            ),
            _ => "…".into(),
        }
    }
    t(e)
}
