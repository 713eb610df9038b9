//! Hover of names local to an item (kernel parameters and tiles, loop, `let` and `consume`
//! bindings, a workload's local tensors) and of the tensor views passed at task calls; hover of
//! top-level items is [`crate::analysis::hover`], which asks these first.

use wsp_core::Workspace;
use wsp_syntax::ast::ItemKind;
use wsp_syntax::{lex, Token};

use super::{all_named_args, binds_locally, callee, enclosing, enclosing_paren, significant, span};

/// Hover text for a name bound inside its item (a kernel parameter or `let`/`var` tile, a loop
/// variable): for a kernel tile its dtype, shape and the on-chip buffer it lives in on the
/// file's architecture. Local names shadow top-level items of the same name.
pub fn local_hover(
    ws: &Workspace,
    path: &str,
    text: &str,
    name: &str,
    at: usize,
) -> Option<String> {
    let item = enclosing(ws, path, at)?;
    if item.name.0 == at || all_named_args(text).contains(&at) || !binds_locally(text, &item, name)
    {
        return None;
    }
    let owner = item.item.name()?.name.clone();
    if let ItemKind::Workload(wsp_syntax::ast::Workload {
        body: wsp_syntax::ast::WorkloadBody::Block(b),
        ..
    }) = &item.item.kind
    {
        let local = wsp_core::locals::local_tensors(b)
            .into_iter()
            .find(|(n, _)| n.name == name);
        if let Some((_, ty)) = local {
            let src = text.get(item.range.0..item.range.1)?;
            let written = src.get(ty.span.start as usize..ty.span.end as usize)?;
            let file = ws.file_handle(&item.path)?;
            let consts = wsp_core::db::const_values(ws.db(), file);
            let bytes = wsp_core::types::eval_dims(ty, consts)
                .and_then(|dims| {
                    dims.iter().try_fold(1i64, |a, d| match d {
                        wsp_core::types::D::K(n) => a.checked_mul(*n),
                        _ => None,
                    })
                })
                .zip(wsp_ir::dtype::DType::from_name(&ty.dtype.name))
                .map(|(n, dt)| format!(" ({} bytes)", n.saturating_mul(dt.size_bytes() as i64)))
                .unwrap_or_default();
            return Some(format!(
                "```wsp\nlet {name}: {written} = scratch()\n```\n\nlocal tensor of workload `{owner}`{bytes}: a fresh zeroed instance from the heap arena each time its block runs, for the tasks of the rest of the block\n"
            ));
        }
    }
    let ItemKind::Kernel(k) = &item.item.kind else {
        let what = match &item.item.kind {
            ItemKind::Workload(_) => "workload",
            ItemKind::Process(_) => "process",
            _ => "item",
        };
        return Some(format!(
            "```wsp\n{name}\n```\n\nlocal `{name}` of {what} `{owner}` (a loop, `let` or `consume` binding)\n"
        ));
    };
    let file = ws.file_handle(&item.path)?;
    let consts = wsp_core::db::const_values(ws.db(), file);
    let shapes = wsp_core::types::kernel_tile_shapes(k, consts);
    let src = text.get(item.range.0..item.range.1)?;
    // The binding in effect: the last one of that name at or before the cursor, else the first.
    let rel = (at - item.range.0) as u32;
    let named: Vec<(u32, &(String, i64, i64))> = shapes
        .iter()
        .filter(|(o, _)| {
            let o = **o as usize;
            src.get(o..o + name.len()) == Some(name)
                && !src[o + name.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
        })
        .map(|(o, t)| (*o, t))
        .collect();
    let param = k.params.iter().find(|p| p.name.name == name);
    let binding = named
        .iter()
        .rev()
        .find(|(o, _)| *o <= rel)
        .or(named.first())
        .copied();
    let mut out = String::new();
    match (param, binding) {
        (Some(p), _) => {
            let ps = src
                .get(p.span.start as usize..p.span.end as usize)
                .unwrap_or(name);
            out.push_str(&format!(
                "```wsp\n{ps}\n```\n\nparameter of kernel `{owner}`"
            ));
            if matches!(
                p.dir.map(|d| d.0),
                Some(wsp_syntax::ast::Direction::Out | wsp_syntax::ast::Direction::InOut)
            ) {
                // The language's one implicit conversion (language.md, "Kernels").
                out.push_str(&format!(
                    "; a value assigned to it is stored as {} (converted as `cast` converts)",
                    p.ty.dtype.name
                ));
            }
        }
        (None, Some((_, (dt, r, c)))) => {
            out.push_str(&format!(
                "```wsp\nlet {name}: {dt}[{r}, {c}]\n```\n\ntile of kernel `{owner}`"
            ));
        }
        (None, None) => {
            out.push_str(&format!(
                "```wsp\n{name}\n```\n\nlocal of kernel `{owner}` (its shape is not a constant)"
            ));
        }
    }
    if let Some((o, (dt, r, c))) = binding {
        let bytes = wsp_core::memory::dtype_bytes(dt) * (*r).max(0) as u64 * (*c).max(0) as u64;
        out.push_str(&format!(": {dt}[{r}, {c}], {bytes} B"));
        let fp = ws
            .kernel_footprints(&item.path)
            .into_iter()
            .find(|(n, _)| *n == owner)
            .map(|(_, fp)| fp);
        if let Some(fp) = fp {
            match fp.tiles.iter().find(|t| t.1.start == o) {
                Some((_, _, _, bufs)) if !bufs.is_empty() => {
                    out.push_str(&format!("; lives in {} on {}", bufs.join(" and "), fp.arch))
                }
                Some(_) => out.push_str(&format!("; held in global memory on {}", fp.arch)),
                None => {}
            }
        }
    }
    out.push('\n');
    Some(out)
}

/// Hover text for a tensor view passed to a kernel at a task call (`k[i](x: X[i, 0..8])`,
/// the cursor on `X`): the view's resolved shape against the parameter's tile shape.
pub fn view_hover(ws: &Workspace, path: &str, text: &str, at: usize) -> Option<String> {
    let toks = significant(&lex(text));
    let i = toks.iter().position(|t| t.span.start as usize == at)?;
    // `name: X[` or `name: X` directly inside a call's parentheses.
    if i < 2 || toks[i - 1].kind != Token::Colon || toks[i - 2].kind != Token::Ident {
        return None;
    }
    if !all_named_args(text).contains(&(toks[i - 2].span.start as usize)) {
        return None;
    }
    let param = &text[span(&toks[i - 2]).0..span(&toks[i - 2]).1];
    let c = callee(&toks, enclosing_paren(&toks, i - 2))?;
    let kname = &text[span(&toks[c]).0..span(&toks[c]).1];
    // The view's text: the name and its brackets.
    let mut end = span(&toks[i]).1;
    if toks.get(i + 1).is_some_and(|t| t.kind == Token::LBracket) {
        let mut d = 0i32;
        for t in &toks[i + 1..] {
            match t.kind {
                Token::LBracket => d += 1,
                Token::RBracket => {
                    d -= 1;
                    if d == 0 {
                        end = span(t).1;
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    let view = text.get(at..end)?;
    let file = ws.file_handle(path)?;
    let scope = wsp_core::resolve::scope(ws.db(), file);
    let consts = wsp_core::db::const_values(ws.db(), file);
    let wsp_core::db::Symbol::Tensor { dtype, dims, .. } =
        &scope.get(&text[span(&toks[i]).0..span(&toks[i]).1])?.symbol
    else {
        return None;
    };
    let wsp_core::db::Symbol::Kernel(params) = &scope.get(kname)?.symbol else {
        return None;
    };
    let p = params.iter().find(|p| p.name == param)?;
    // Parse the view as an expression (`const v = X[i]`) to fold its indices.
    let parsed = wsp_syntax::parse(&format!("const v = {view}\n"));
    let idx: Vec<wsp_syntax::ast::Expr> = match parsed.file.items.first().map(|n| &n.item.kind) {
        Some(ItemKind::Const(c)) => match &c.value.kind {
            wsp_syntax::ast::ExprKind::Index { indices, .. } => indices.clone(),
            _ => Vec::new(),
        },
        _ => return None,
    };
    let shape = match dims {
        Some(d) => match wsp_core::types::view_shape(d, &idx, consts) {
            Ok(v) => format!("{dtype}{}", wsp_core::types::show(&v)),
            Err(m) if !m.is_empty() => format!("invalid: {m}"),
            Err(_) => format!("{dtype}[?] (an extent is not constant)"),
        },
        None => format!("{dtype}[?]"),
    };
    let pshape = match &p.dims {
        Some(d) => format!("{}{}", p.dtype, wsp_core::types::show(d)),
        None => p.dtype.clone(),
    };
    Some(format!(
        "view `{}`: {shape}\n\nparameter `{param}` of kernel `{kname}`: {pshape}\n",
        view.split_whitespace().collect::<Vec<_>>().join(" ")
    ))
}
