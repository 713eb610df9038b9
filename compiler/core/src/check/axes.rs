//! Axis declarations: the constructor (`Dense`, `DenseDyn`, `Ragged`, `Sparse`; E0403), the
//! kinds and lengths of its arguments (E0412), and the outer axis of a nested one (E0401).

use super::*;

/// The note of the axis-constructor errors.
const AXIS_KINDS: &str = "axis kinds: `Dense[n]`, `DenseDyn(size)`, `Ragged(outer, lens)` (or `Ragged(outer, lens, per: k)`), `Sparse(outer, indptr, indices)`";

pub(super) fn axis(c: &mut Checker, d: &AxisDecl, sizes: &BTreeMap<String, crate::types::D>) {
    let (ctor, args): (&Ident, Vec<&Expr>) = match &d.ctor.kind {
        ExprKind::Index { base, indices } => match &base.kind {
            ExprKind::Name(n) => (n, indices.iter().collect()),
            _ => return bad_axis(c, &d.ctor),
        },
        ExprKind::Call {
            callee,
            args,
            coords: None,
        } => match &callee.kind {
            ExprKind::Name(n) => {
                // `Ragged(outer, lens, per: k)`: rows of ⌈lens[b] / k⌉ tiles. No other named
                // argument exists.
                for a in args.iter().filter(|a| a.name.is_some()) {
                    let name = a.name.as_ref().map_or("", |x| x.name.as_str());
                    if n.name == "Ragged" && name == "per" {
                        c.expr(&a.value);
                        if !crate::types::eval_int(&a.value, c.consts)
                            .is_some_and(|k| (1..=1 << 26).contains(&k))
                        {
                            c.diags.push(
                                Diagnostic::new(
                                    codes::E0412,
                                    "`per` of `Ragged` needs a constant from 1 to 2^26",
                                    c.label(a.value.span, "not a positive constant"),
                                )
                                .with_help("`Ragged(seqs, lens, per: 64)` has ⌈lens[b] / 64⌉ elements in row b: the tiles of 64 that cover it"),
                            );
                        }
                    } else {
                        c.diags.push(
                            Diagnostic::new(
                                codes::E0403,
                                format!("`{}` has no argument `{name}`", n.name),
                                c.label(a.span, "unknown argument"),
                            )
                            .with_note(AXIS_KINDS),
                        );
                    }
                }
                (
                    n,
                    args.iter()
                        .filter(|a| a.name.is_none())
                        .map(|a| &a.value)
                        .collect(),
                )
            }
            _ => return bad_axis(c, &d.ctor),
        },
        _ => return bad_axis(c, &d.ctor),
    };
    let want = match ctor.name.as_str() {
        "Dense" | "DenseDyn" => 1,
        "Ragged" => 2,
        "Sparse" => 3,
        _ => {
            let sugg = suggest(&ctor.name, AXIS_CTORS.iter().copied());
            let mut diag = Diagnostic::new(
                codes::E0403,
                format!("unknown axis kind `{}`", ctor.name),
                c.label(ctor.span, "not an axis kind"),
            )
            .with_note(AXIS_KINDS);
            if let Some(s) = sugg {
                diag = diag.with_help(format!("did you mean `{s}`?"));
            }
            c.diags.push(diag);
            return;
        }
    };
    if args.len() != want {
        c.diags.push(
            Diagnostic::new(
                codes::E0403,
                format!(
                    "`{}` takes {want} argument(s), found {}",
                    ctor.name,
                    args.len()
                ),
                c.label(d.ctor.span, "wrong number of arguments"),
            )
            .with_note(AXIS_KINDS),
        );
    }
    for a in &args {
        c.expr(a);
    }
    if args.len() == want {
        axis_args(c, ctor, &args, sizes);
    }
    // The outer axis of a nested axis must be an axis.
    if matches!(ctor.name.as_str(), "Ragged" | "Sparse") {
        if let Some(Expr {
            kind: ExprKind::Name(outer),
            ..
        }) = args.first()
        {
            if let Some(sym) = c.scope.get(&outer.name).map(|s| &s.symbol) {
                if !matches!(sym, Symbol::Axis(_)) {
                    c.wrong_kind(
                        codes::E0401,
                        &outer.name,
                        sym,
                        "an axis",
                        outer.span,
                        "the outer axis must be an axis",
                        format!(
                            "`{}(outer, ...)` nests inside an axis declared with `axis`",
                            ctor.name
                        ),
                    );
                }
            }
        }
    }
}

/// E0412: the arguments of an axis constructor have the right kind: `Dense[n]` a positive
/// constant, `DenseDyn(size)` a runtime size, `Ragged`/`Sparse` 1-D integer tensors whose length
/// fits the outer axis (`lens`: one per outer index; `indptr`: one more).
fn axis_args(
    c: &mut Checker,
    ctor: &Ident,
    args: &[&Expr],
    sizes: &BTreeMap<String, crate::types::D>,
) {
    use crate::types::D;
    let err = |c: &mut Checker, span: Span, msg: String, label: &str, help: String| {
        c.diags.push(
            Diagnostic::new(codes::E0412, msg, c.label(span, label.to_string())).with_help(help),
        );
    };
    match ctor.name.as_str() {
        "Dense" => {
            let Some(a) = args.first() else { return };
            match crate::types::eval_int(a, c.consts) {
                Some(v) if v > 0 => {}
                Some(v) => err(
                    c,
                    a.span,
                    format!("`Dense` needs a positive size, found {v}"),
                    "not positive",
                    "an axis has at least one index".into(),
                ),
                None => {
                    let is_param = matches!(&a.kind, ExprKind::Name(n)
                        if matches!(c.scope.get(&n.name).map(|s| &s.symbol), Some(Symbol::Param)));
                    if is_param || !matches!(&a.kind, ExprKind::Name(_)) {
                        err(
                            c,
                            a.span,
                            "`Dense` needs a constant size".into(),
                            "not a constant",
                            "for a size known only at run time write `DenseDyn(size)`".into(),
                        );
                    }
                }
            }
        }
        "DenseDyn" => {
            let Some(a) = args.first() else { return };
            if let Some(v) = crate::types::eval_int(a, c.consts) {
                err(
                    c,
                    a.span,
                    format!("`DenseDyn` needs a runtime size, but this is the constant {v}"),
                    "a constant",
                    format!("write `Dense[{v}]` for a static size, or pass a `param`"),
                );
            }
        }
        "Ragged" | "Sparse" => {
            let outer = match args.first().map(|a| &a.kind) {
                Some(ExprKind::Name(n)) => sizes.get(&n.name).cloned(),
                _ => None,
            };
            for (i, a) in args.iter().enumerate().skip(1) {
                let role = match (ctor.name.as_str(), i) {
                    ("Ragged", _) => "lens",
                    (_, 1) => "indptr",
                    _ => "indices",
                };
                let ExprKind::Name(n) = &a.kind else {
                    err(
                        c,
                        a.span,
                        format!("`{role}` of `{}` must name an integer tensor", ctor.name),
                        "not a tensor",
                        format!("declare it: `input {role}: i32[N] = load(\"{role}.npy\")`"),
                    );
                    continue;
                };
                let Some(sym) = c.scope.get(&n.name).map(|s| s.symbol.clone()) else {
                    continue;
                };
                let Symbol::Tensor { dtype, dims, .. } = sym else {
                    err(
                        c,
                        a.span,
                        format!(
                            "`{role}` of `{}` must be an integer tensor; `{}` is {}",
                            ctor.name,
                            n.name,
                            sym.describe()
                        ),
                        "not a tensor",
                        format!("declare it: `input {role}: i32[N] = load(\"{role}.npy\")`"),
                    );
                    continue;
                };
                if !matches!(
                    dtype.as_str(),
                    "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64"
                ) {
                    err(
                        c,
                        a.span,
                        format!(
                            "`{role}` of `{}` must be an integer tensor; `{}` is `{dtype}`",
                            ctor.name, n.name
                        ),
                        "not an integer tensor",
                        "declare it with an integer dtype such as `i32`".into(),
                    );
                    continue;
                }
                let Some(dims) = dims else { continue };
                if dims.len() != 1 {
                    err(
                        c,
                        a.span,
                        format!(
                            "`{role}` of `{}` must be a vector; `{}` has {} dimensions",
                            ctor.name,
                            n.name,
                            dims.len()
                        ),
                        "not a vector",
                        format!("`{role}` is one-dimensional"),
                    );
                    continue;
                }
                let want = match (role, &outer) {
                    ("lens", Some(o)) => Some(o.clone()),
                    ("indptr", Some(D::K(k))) => Some(D::K(k + 1)),
                    _ => None,
                };
                if let Some(w) = want {
                    if dims[0] != w {
                        err(
                            c,
                            a.span,
                            format!(
                                "`{role}` of `{}` has length {}, but the outer axis needs {w}",
                                ctor.name, dims[0]
                            ),
                            "wrong length",
                            if role == "lens" {
                                "`lens` holds one length per index of the outer axis".into()
                            } else {
                                "`indptr` holds one offset per outer index, plus one".into()
                            },
                        );
                    }
                }
            }
        }
        _ => {}
    }
}

fn bad_axis(c: &mut Checker, e: &Expr) {
    c.diags.push(
        Diagnostic::new(
            codes::E0403,
            "expected an axis kind",
            c.label(e.span, "not an axis kind"),
        )
        .with_note(AXIS_KINDS),
    );
}
