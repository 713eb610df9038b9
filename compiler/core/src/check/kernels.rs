//! Kernel items: parameters bound as tiles or values, `out` tiles never written (E0302), and
//! the bindings of an extern kernel (E0713: source files, the `sim:` reference, `cost:`).

use super::*;

/// E0713: the bindings of an extern kernel — a backend's source file (a path string),
/// `sim: reference` (a kernel with the same parameters), `cost: n` (cycles, a non-negative
/// integer constant), each given once.
fn extern_bindings(c: &mut Checker, k: &Kernel, bindings: &[ExternBinding]) {
    let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
    for b in bindings {
        let target = b.target.name.as_str();
        let fail = |c: &mut Checker, msg: String, label: &str, help: &str| {
            c.diags.push(
                Diagnostic::new(
                    codes::E0713,
                    msg,
                    c.label(b.value_span(), label.to_string()),
                )
                .with_help(help.to_string()),
            );
        };
        if let Some(first) = seen.insert(target, b.target.span) {
            c.diags.push(
                Diagnostic::new(
                    codes::E0713,
                    format!("`{target}:` is given twice"),
                    c.label(b.target.span, "given again here"),
                )
                .with_label(c.label(first, "first given here"))
                .with_help(format!("keep one `{target}:` binding")),
            );
            continue;
        }
        match (target, &b.value) {
            ("sim", ExternValue::Expr(e)) => match &e.kind {
                ExprKind::Name(n) => sim_reference(c, k, n),
                _ => fail(
                    c,
                    "`sim:` names the kernel the simulator runs in this one's place".into(),
                    "not a kernel name",
                    "write `sim: k_ref`, where `k_ref` is a `.wsp` kernel with the same parameters",
                ),
            },
            ("cost", ExternValue::Expr(e)) => {
                if !matches!(crate::types::eval_int(e, c.consts), Some(n) if n >= 0) {
                    fail(
                        c,
                        "`cost:` is the cycles of one task, a non-negative integer constant".into(),
                        "not a non-negative integer constant",
                        "write e.g. `cost: 1200`",
                    );
                }
            }
            ("sim" | "cost", ExternValue::Path(_)) => fail(
                c,
                format!("`{target}:` does not take a file"),
                "a path",
                "`sim: k_ref` names a `.wsp` kernel; `cost: 1200` gives cycles",
            ),
            (_, ExternValue::Path(p)) if p.value.trim().is_empty() => fail(
                c,
                format!("`{target}:` has an empty path"),
                "empty",
                "give the target's source file, relative to this file",
            ),
            (_, ExternValue::Path(_)) => {}
            (_, ExternValue::Expr(_)) => fail(
                c,
                format!("`{target}:` takes the path of the target's source file, as a string"),
                "not a path string",
                &format!("write e.g. `{target}: \"{}.cpp\"`", k.name.name),
            ),
        }
    }
}

/// `sim: reference`: a kernel with a `.wsp` body and the parameters of `k` (names, directions,
/// dtypes, tile shapes).
fn sim_reference(c: &mut Checker, k: &Kernel, n: &Ident) {
    let sig = |c: &Checker, name: &str| match c.scope.get(name).map(|s| &s.symbol) {
        Some(Symbol::Kernel(ps)) => Some(ps.clone()),
        _ => None,
    };
    match c.scope.get(&n.name).map(|s| s.symbol.clone()) {
        None => c.unresolved(n),
        Some(Symbol::Kernel(_)) if n.name == k.name.name => c.diags.push(
            Diagnostic::new(
                codes::E0713,
                format!("`{}` cannot be its own reference", n.name),
                c.label(n.span, "this kernel"),
            )
            .with_help("`sim:` names a `.wsp` kernel with the same parameters"),
        ),
        Some(Symbol::Kernel(theirs)) => {
            let Some(ours) = sig(c, &k.name.name) else {
                return;
            };
            let key = |p: &crate::db::KernelParamSig| {
                (
                    p.name.clone(),
                    p.tile,
                    p.dir,
                    p.dtype.clone(),
                    p.dims.clone(),
                )
            };
            if ours.len() != theirs.len() || ours.iter().zip(&theirs).any(|(a, b)| key(a) != key(b))
            {
                let show = |ps: &[crate::db::KernelParamSig]| {
                    ps.iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                c.diags.push(
                    Diagnostic::new(
                        codes::E0713,
                        format!(
                            "the reference `{}` does not take the parameters of `{}`",
                            n.name, k.name.name
                        ),
                        c.label(n.span, "different parameters"),
                    )
                    .with_note(format!(
                        "`{}({})` and `{}({})` must agree in names, directions, dtypes and tile shapes",
                        k.name.name,
                        show(&ours),
                        n.name,
                        show(&theirs)
                    ))
                    .with_help("the simulator runs the reference in place of the extern kernel, with the same arguments"),
                );
            }
        }
        Some(other) => c.wrong_kind(
            codes::E0713,
            &n.name,
            &other,
            "a kernel",
            n.span,
            "not a kernel",
            "`sim:` names a `.wsp` kernel with the same parameters",
        ),
    }
}

pub(super) fn kernel(c: &mut Checker, k: &Kernel) {
    c.builtins = KERNEL_CTX;
    for p in &k.params {
        c.dtype(&p.ty);
        if let Some(d) = &p.default {
            c.expr(d);
        }
        let l = match p.dir {
            Some((d, _)) => Local::Tile(d),
            None => Local::Value,
        };
        c.bind(&p.name.name, l);
    }
    let body = match &k.body {
        KernelBody::Block(body) => body,
        KernelBody::Extern(bindings) => return extern_bindings(c, k, bindings),
    };
    c.block(body);
    if crate::flow::has_error_nodes(body) {
        return;
    }
    // Every `out` tile must be written somewhere in the body.
    let mut written = BTreeSet::new();
    collect_written(body, &mut written);
    for p in &k.params {
        if matches!(p.dir, Some((Direction::Out, _))) && !written.contains(p.name.name.as_str()) {
            c.diags.push(
                Diagnostic::new(
                    codes::E0302,
                    format!("`out` tile `{}` is never written", p.name.name),
                    c.label(p.name.span, "never written"),
                )
                .with_help(format!(
                    "assign it in the body (`{} = ...`), or make it `in` if it is only read",
                    p.name.name
                )),
            );
        }
    }
}

/// The names assigned anywhere in a body (`x = ...`, `x[..] = ...`).
fn collect_written<'a>(body: &'a Block, out: &mut BTreeSet<&'a str>) {
    for s in wsp_syntax::visit::statements(body) {
        if let StmtKind::Assign { target, .. } = &s.kind {
            let root = match &target.kind {
                ExprKind::Name(id) => Some(id),
                ExprKind::Index { base, .. } => match &base.kind {
                    ExprKind::Name(id) => Some(id),
                    _ => None,
                },
                _ => None,
            };
            if let Some(id) = root {
                out.insert(id.name.as_str());
            }
        }
    }
}
