//! Editing features as pure functions of a [`Workspace`] and byte offsets: references and
//! rename, completion, signature help, inlay hints, semantic tokens and folding ranges. Name
//! resolution is the one `wsp check` uses for top-level items (the file first, then imported and
//! std files); names local to an item (kernel parameters, `let`/`var`/loop bindings) resolve
//! inside that item.

use std::collections::{BTreeMap, BTreeSet};

use tower_lsp_server::ls_types as lsp;
use wsp_core::check::TARGETS;
use wsp_core::Workspace;
use wsp_diagnostics::FileName;
use wsp_syntax::ast::{ItemKind, KernelParam};
use wsp_syntax::lexer::ITEM_KEYWORDS;
use wsp_syntax::{lex, Token, TokenInfo};
use wsp_vocab::ops::{KERNEL_FNS, KERNEL_FN_NAMES};
use wsp_vocab::schedule::{
    Directive, WindowMode, DIRECTIVE_NAMES, GRID_NAMES, POLICY_NAMES, POOL_NAMES, SHARD,
    WINDOW_MODE_NAMES,
};
use wsp_vocab::words::{
    axis_ctor_signature, AXIS_CTORS, DTYPES, EXPECT_BUILTINS, INITIALISERS, WORKLOAD_BUILTINS,
};

use crate::analysis::{decls, find_decl, ident_at, Decl, LineIndex};

/// A byte range.
pub type Range = (usize, usize);

fn text_of(ws: &Workspace, path: &str) -> Option<std::sync::Arc<str>> {
    ws.text(&FileName::new(path))
}

fn span(t: &TokenInfo) -> Range {
    (t.span.start as usize, t.span.end as usize)
}

/// The schedule directive whose parentheses are open at the end of `sig` (`.name(` before the
/// innermost unclosed `(`), and which of its arguments is being written (commas at its depth).
fn open_directive<'t>(text: &'t str, sig: &[TokenInfo]) -> Option<(&'t str, usize)> {
    let mut depth = 0i32;
    let mut commas = 0;
    let open = sig.iter().rposition(|t| {
        match t.kind {
            Token::RParen => depth += 1,
            Token::LParen if depth == 0 => return true,
            Token::LParen => depth -= 1,
            Token::Comma if depth == 0 => commas += 1,
            _ => {}
        }
        false
    })?;
    if open < 2 || sig[open - 2].kind != Token::Dot || sig[open - 1].kind != Token::Ident {
        return None;
    }
    Some((
        &text[span(&sig[open - 1]).0..span(&sig[open - 1]).1],
        commas,
    ))
}

/// Whether a name is built into the language (dtypes, kernel functions, initialisers, schedule
/// directives and policies, targets …): such names cannot be renamed.
pub fn is_builtin(name: &str) -> bool {
    [
        DTYPES,
        &KERNEL_FN_NAMES,
        INITIALISERS,
        AXIS_CTORS,
        WORKLOAD_BUILTINS,
        EXPECT_BUILTINS,
        &DIRECTIVE_NAMES,
        &POLICY_NAMES,
        &WINDOW_MODE_NAMES,
        TARGETS,
    ]
    .iter()
    .any(|l| l.contains(&name))
}

/// The item of `path` whose range holds `offset`.
fn enclosing(ws: &Workspace, path: &str, offset: usize) -> Option<Decl> {
    decls(ws, path)
        .into_iter()
        .find(|d| d.range.0 <= offset && offset <= d.range.1)
}

fn kernel_params(d: &Decl) -> &[KernelParam] {
    match &d.item.kind {
        ItemKind::Kernel(k) => &k.params,
        _ => &[],
    }
}

/// Whether `name` is bound locally inside item `d` (a kernel parameter, or a `let`, `var` or
/// loop binding found in the item's tokens).
fn binds_locally(text: &str, d: &Decl, name: &str) -> bool {
    if kernel_params(d).iter().any(|p| p.name.name == name) {
        return true;
    }
    let toks = significant(&lex(text.get(d.range.0..d.range.1).unwrap_or("")));
    let src = text.get(d.range.0..d.range.1).unwrap_or("");
    for (i, t) in toks.iter().enumerate() {
        if t.kind != Token::Ident || &src[span(t).0..span(t).1] != name {
            continue;
        }
        // `let x`, `var x`, `let (a, x)`, `for a, x in`
        let mut j = i;
        while j > 0
            && matches!(
                toks[j - 1].kind,
                Token::Comma | Token::Ident | Token::LParen
            )
        {
            j -= 1;
        }
        if j > 0 && matches!(toks[j - 1].kind, Token::Let | Token::Var | Token::For) {
            return true;
        }
    }
    false
}

/// Tokens without newlines and doc comments.
fn significant(toks: &[TokenInfo]) -> Vec<TokenInfo> {
    toks.iter()
        .copied()
        .filter(|t| !matches!(t.kind, Token::Newline | Token::DocComment))
        .collect()
}

/// The callee of the call whose `(` is `toks[lp]`: `k(` or `k[...](`; its name and token index.
fn callee(toks: &[TokenInfo], lp: usize) -> Option<usize> {
    let mut j = lp.checked_sub(1)?;
    if toks[j].kind == Token::RBracket {
        let mut depth = 0i32;
        loop {
            match toks[j].kind {
                Token::RBracket => depth += 1,
                Token::LBracket => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j = j.checked_sub(1)?;
        }
        j = j.checked_sub(1)?;
    }
    (toks[j].kind == Token::Ident).then_some(j)
}

/// Named arguments `name:` of calls to `kernel` in `text`: the byte ranges of the names.
fn named_args(text: &str, kernel: &str, param: Option<&str>) -> Vec<Range> {
    let toks = significant(&lex(text));
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.kind != Token::LParen {
            continue;
        }
        let Some(c) = callee(&toks, i) else { continue };
        let (a, b) = span(&toks[c]);
        if &text[a..b] != kernel {
            continue;
        }
        let mut depth = 0i32;
        for j in i..toks.len() {
            match toks[j].kind {
                Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
                Token::RParen | Token::RBracket | Token::RBrace => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Token::Ident
                    if depth == 1
                        && matches!(toks[j - 1].kind, Token::LParen | Token::Comma)
                        && toks.get(j + 1).is_some_and(|n| n.kind == Token::Colon) =>
                {
                    let r = span(&toks[j]);
                    if param.is_none_or(|p| p == &text[r.0..r.1]) {
                        out.push(r);
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Every named argument `name:` of any call in `text` (these name kernel parameters, not
/// top-level items).
fn all_named_args(text: &str) -> BTreeSet<usize> {
    let toks = significant(&lex(text));
    let mut out = BTreeSet::new();
    let mut stack: Vec<bool> = Vec::new(); // per open bracket: is it a call's `(`
    for (i, t) in toks.iter().enumerate() {
        match t.kind {
            Token::LParen => stack.push(callee(&toks, i).is_some()),
            Token::LBracket | Token::LBrace => stack.push(false),
            Token::RParen | Token::RBracket | Token::RBrace => {
                stack.pop();
            }
            Token::Ident
                if stack.last() == Some(&true)
                    && i > 0
                    && matches!(toks[i - 1].kind, Token::LParen | Token::Comma)
                    && toks.get(i + 1).is_some_and(|n| n.kind == Token::Colon) =>
            {
                out.insert(t.span.start as usize);
            }
            _ => {}
        }
    }
    out
}

/// Paths to search for references: the user files and the declaration's own file.
fn search_paths(ws: &Workspace, decl_path: &str) -> Vec<String> {
    let mut ps = ws.paths();
    if !ps.iter().any(|p| p == decl_path) {
        ps.push(decl_path.to_string());
    }
    ps
}

/// What the name at an offset refers to.
enum Target {
    /// A top-level item: its file and name range.
    Global(Box<Decl>),
    /// A name local to an item of `path` (item range), or a kernel parameter (kernel name too).
    Local { item: Range, kernel: Option<String> },
}

fn target(ws: &Workspace, path: &str, offset: usize) -> Option<(String, Range, Target)> {
    let text = text_of(ws, path)?;
    let (name, s, e) = ident_at(&text, offset)?;
    // A named argument names a parameter of the called kernel.
    if all_named_args(&text).contains(&s) {
        let toks = significant(&lex(&text));
        let i = toks.iter().position(|t| t.span.start as usize == s)?;
        let c = callee(&toks, enclosing_paren(&toks, i))?;
        let (a, b) = span(&toks[c]);
        let k = find_decl(ws, path, &text[a..b])?;
        return Some((
            name,
            (s, e),
            Target::Local {
                item: k.range,
                kernel: Some(k.path.clone()).map(|p| format!("{p}\0{}", &text[a..b])),
            },
        ));
    }
    if let Some(item) = enclosing(ws, path, s) {
        let own_name = item.name.0 == s;
        if !own_name && binds_locally(&text, &item, &name) {
            let kernel = kernel_params(&item)
                .iter()
                .any(|p| p.name.name == name)
                .then(|| {
                    format!(
                        "{path}\0{}",
                        item.item.name().map(|n| n.name.as_str()).unwrap_or("")
                    )
                });
            return Some((
                name,
                (s, e),
                Target::Local {
                    item: item.range,
                    kernel,
                },
            ));
        }
    }
    let d = find_decl(ws, path, &name)?;
    Some((name, (s, e), Target::Global(Box::new(d))))
}

/// References to the name at `offset`, as `(path, byte range)`, sorted; with `include_decl`
/// the declaration itself is included.
pub fn references(
    ws: &Workspace,
    path: &str,
    offset: usize,
    include_decl: bool,
) -> Vec<(String, Range)> {
    let Some((name, _, t)) = target(ws, path, offset) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    match t {
        Target::Global(d) => {
            for p in search_paths(ws, &d.path) {
                let Some(text) = text_of(ws, &p) else {
                    continue;
                };
                let named = all_named_args(&text);
                let items = decls(ws, &p);
                for tok in lex(&text) {
                    let r = span(&tok);
                    if tok.kind != Token::Ident || text[r.0..r.1] != *name || named.contains(&r.0) {
                        continue;
                    }
                    // Shadowed by a local binding of the enclosing item?
                    if let Some(it) = items
                        .iter()
                        .find(|it| it.range.0 <= r.0 && r.0 <= it.range.1)
                    {
                        if it.name.0 != r.0 && binds_locally(&text, it, &name) {
                            continue;
                        }
                    }
                    let is_decl = p == d.path && r == d.name;
                    if is_decl && !include_decl {
                        continue;
                    }
                    // The same declaration?
                    if !is_decl {
                        match find_decl(ws, &p, &name) {
                            Some(x) if x.path == d.path && x.name == d.name => {}
                            _ => continue,
                        }
                    }
                    out.push((p.clone(), r));
                }
            }
        }
        Target::Local { item, kernel } => {
            let decl_path = kernel
                .as_deref()
                .and_then(|k| k.split('\0').next())
                .unwrap_or(path)
                .to_string();
            if let Some(text) = text_of(ws, &decl_path) {
                let named: BTreeSet<usize> = all_named_args(&text);
                let mut first = true;
                for tok in lex(&text[item.0..item.1.min(text.len())]) {
                    let r = (
                        item.0 + tok.span.start as usize,
                        item.0 + tok.span.end as usize,
                    );
                    if tok.kind != Token::Ident || text[r.0..r.1] != *name || named.contains(&r.0) {
                        continue;
                    }
                    // The first binding occurrence is the declaration.
                    if first {
                        first = false;
                        if !include_decl {
                            continue;
                        }
                    }
                    out.push((decl_path.clone(), r));
                }
            }
            // A kernel parameter is also named at call sites: `k[i](x: X[i])`.
            if let Some((_, k)) = kernel.as_deref().and_then(|k| k.split_once('\0')) {
                for p in ws.paths() {
                    let Some(text) = text_of(ws, &p) else {
                        continue;
                    };
                    match find_decl(ws, &p, k) {
                        Some(x) if x.path == decl_path && x.range == item => {}
                        _ => continue,
                    }
                    for r in named_args(&text, k, Some(&name)) {
                        out.push((p.clone(), r));
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Document highlights: the occurrences of the name at `offset` in its own file, each with
/// whether it is the declaration (a write) rather than a use.
pub fn highlights(ws: &Workspace, path: &str, offset: usize) -> Vec<(Range, bool)> {
    let all = references(ws, path, offset, true);
    let uses: BTreeSet<(String, Range)> = references(ws, path, offset, false).into_iter().collect();
    all.into_iter()
        .filter(|(p, _)| p == path)
        .map(|(p, r)| {
            let decl = !uses.contains(&(p, r));
            (r, decl)
        })
        .collect()
}

/// Why a rename is refused, for the editor to show.
pub fn prepare_rename(ws: &Workspace, path: &str, offset: usize) -> Result<Range, String> {
    let text = text_of(ws, path).ok_or("the file is not loaded")?;
    let Some((name, s, e)) = ident_at(&text, offset) else {
        if let Some(t) = lex(&text)
            .into_iter()
            .find(|t| t.kind.is_keyword() && span(t).0 <= offset && offset <= span(t).1)
        {
            let r = span(&t);
            return Err(format!(
                "`{}` is a keyword and cannot be renamed",
                &text[r.0..r.1]
            ));
        }
        return Err("there is no name here to rename".into());
    };
    match target(ws, path, offset) {
        Some((_, _, Target::Global(d))) if d.path.starts_with("std/") => Err(format!(
            "`{name}` is declared in the standard library (`{}`) and cannot be renamed",
            d.path
        )),
        Some(_) => Ok((s, e)),
        None if is_builtin(&name) => Err(format!(
            "`{name}` is a builtin of the language and cannot be renamed"
        )),
        None => Err(format!(
            "`{name}` is not declared, so there is nothing to rename"
        )),
    }
}

/// The edits renaming the name at `offset` to `new_name` across the loaded files.
pub fn rename(
    ws: &Workspace,
    path: &str,
    offset: usize,
    new_name: &str,
) -> Result<BTreeMap<String, Vec<Range>>, String> {
    prepare_rename(ws, path, offset)?;
    let toks = lex(new_name);
    if toks.len() != 1
        || toks[0].kind != Token::Ident
        || toks[0].span.end as usize != new_name.len()
    {
        let why = if toks.len() == 1 && toks[0].kind.is_keyword() {
            "it is a keyword"
        } else {
            "it is not an identifier"
        };
        return Err(format!("cannot rename to `{new_name}`: {why}"));
    }
    if is_builtin(new_name) {
        return Err(format!(
            "cannot rename to `{new_name}`: it is a builtin of the language"
        ));
    }
    let mut out: BTreeMap<String, Vec<Range>> = BTreeMap::new();
    for (p, r) in references(ws, path, offset, true) {
        out.entry(p).or_default().push(r);
    }
    if let Some(why) = clash(ws, path, offset, new_name, &out) {
        return Err(format!("cannot rename to `{new_name}`: {why}"));
    }
    Ok(out)
}

/// Why renaming the name at `offset` to `new_name` would change what some name means, if it
/// would: for a top-level item, `new_name` is already declared in a file the rename touches
/// (or the item's own file), or a local binding of it would shadow a renamed use; for a local
/// (a kernel parameter, `let`/`var`/loop binding), `new_name` is already used in the
/// enclosing item (bound there, or a top-level name the item refers to).
fn clash(
    ws: &Workspace,
    path: &str,
    offset: usize,
    new_name: &str,
    edits: &BTreeMap<String, Vec<Range>>,
) -> Option<String> {
    let (name, _, t) = target(ws, path, offset)?;
    if name == new_name {
        return None;
    }
    match t {
        Target::Global(d) => {
            let mut files: Vec<&str> = edits.keys().map(String::as_str).collect();
            if !files.contains(&d.path.as_str()) {
                files.push(&d.path);
            }
            for f in &files {
                if let Some(x) = decls(ws, f)
                    .into_iter()
                    .find(|x| x.item.name().is_some_and(|n| n.name == new_name))
                {
                    let line = text_of(ws, f)
                        .and_then(|t| t.get(..x.name.0).map(|b| b.matches('\n').count() + 1))
                        .unwrap_or(0);
                    return Some(format!(
                        "`{new_name}` is already declared in `{f}` ({} on line {line})",
                        crate::analysis::kind_word(&x.item),
                    ));
                }
            }
            for (f, ranges) in edits {
                let Some(text) = text_of(ws, f) else { continue };
                let items = decls(ws, f);
                for r in ranges {
                    if let Some(it) = items
                        .iter()
                        .find(|it| it.range.0 <= r.0 && r.0 <= it.range.1)
                    {
                        if binds_locally(&text, it, new_name) {
                            return Some(format!(
                                "`{new_name}` is already declared inside `{}` in `{f}`, where it \
                                 would shadow the renamed `{name}`",
                                it.item.name().map(|n| n.name.as_str()).unwrap_or("?")
                            ));
                        }
                    }
                }
            }
            None
        }
        Target::Local { item, kernel } => {
            let decl_path = kernel
                .as_deref()
                .and_then(|k| k.split('\0').next())
                .unwrap_or(path)
                .to_string();
            let text = text_of(ws, &decl_path)?;
            let it = decls(ws, &decl_path)
                .into_iter()
                .find(|d| d.range == item)?;
            let owner = it.item.name().map(|n| n.name.clone()).unwrap_or_default();
            if binds_locally(&text, &it, new_name) {
                return Some(format!(
                    "`{new_name}` is already declared in `{owner}` (a parameter or a local binding)"
                ));
            }
            let body = text.get(item.0..item.1).unwrap_or("");
            let named = all_named_args(&text);
            let used = lex(body).iter().any(|t| {
                t.kind == Token::Ident
                    && &body[span(t).0..span(t).1] == new_name
                    && !named.contains(&(item.0 + span(t).0))
            });
            if used {
                return Some(format!(
                    "`{new_name}` is already used in `{owner}`: the renamed `{name}` would \
                     capture or shadow it"
                ));
            }
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Hover of names local to an item, and of views at task calls

/// Hover text for a name bound inside its item (a kernel parameter or `let`/`var` tile, a loop
/// variable): for a kernel tile its dtype, shape and the on-chip buffer it lives in on the
/// file's architecture. Local names shadow top-level items of the same name.
/// The name of the `let` making the local tensor `name` of the workload around `at` (a local
/// tensor is named once in its workload, E0102).
pub fn local_tensor_definition(ws: &Workspace, path: &str, name: &str, at: usize) -> Option<Range> {
    let item = enclosing(ws, path, at)?;
    let ItemKind::Workload(wsp_syntax::ast::Workload {
        body: wsp_syntax::ast::WorkloadBody::Block(b),
        ..
    }) = &item.item.kind
    else {
        return None;
    };
    let (n, _) = wsp_core::locals::local_tensors(b)
        .into_iter()
        .find(|(n, _)| n.name == name)?;
    Some((
        item.range.0 + n.span.start as usize,
        item.range.0 + n.span.end as usize,
    ))
}

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

// ---------------------------------------------------------------------------------------------
// Completion and signature help

/// A completion: label, kind, detail, text to insert.
pub type Completion = (String, lsp::CompletionItemKind, String, String);

const BODY_KEYWORDS: &[&str] = &["for", "in", "when", "else", "let", "var", "send", "consume"];

/// The innermost unclosed `(` among `toks` (all before the cursor).
fn open_paren(toks: &[TokenInfo]) -> Option<usize> {
    let mut depth = 0i32;
    for j in (0..toks.len()).rev() {
        match toks[j].kind {
            Token::RParen | Token::RBracket | Token::RBrace => depth += 1,
            Token::LParen if depth == 0 => return Some(j),
            Token::LBrace if depth == 0 => return None,
            Token::LParen | Token::LBracket | Token::LBrace => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The kernel called by the innermost open call before `offset`, the call's `(` index in
/// `toks`, and the tokens (significant, before the cursor).
fn open_call(
    ws: &Workspace,
    path: &str,
    text: &str,
    offset: usize,
) -> Option<(Decl, Vec<TokenInfo>)> {
    let toks: Vec<TokenInfo> = significant(&lex(text))
        .into_iter()
        .filter(|t| (t.span.end as usize) <= offset)
        .collect();
    let lp = open_paren(&toks)?;
    let c = callee(&toks, lp)?;
    let (a, b) = span(&toks[c]);
    let d = find_decl(ws, path, &text[a..b])?;
    matches!(d.item.kind, ItemKind::Kernel(_)).then_some(())?;
    Some((d, toks[lp..].to_vec()))
}

fn decl_kind(d: &Decl) -> (lsp::CompletionItemKind, &'static str) {
    match &d.item.kind {
        ItemKind::Kernel(_) => (lsp::CompletionItemKind::FUNCTION, "kernel"),
        ItemKind::Workload(_) => (lsp::CompletionItemKind::CLASS, "workload"),
        ItemKind::Process(_) => (lsp::CompletionItemKind::CLASS, "process"),
        ItemKind::Axis(_) => (lsp::CompletionItemKind::ENUM, "axis"),
        ItemKind::Tensor(_) => (lsp::CompletionItemKind::VARIABLE, "tensor"),
        ItemKind::Channel(_) => (lsp::CompletionItemKind::EVENT, "channel"),
        ItemKind::Schedule(_) => (lsp::CompletionItemKind::MODULE, "schedule"),
        ItemKind::Const(_) => (lsp::CompletionItemKind::CONSTANT, "const"),
        ItemKind::Param(_) => (lsp::CompletionItemKind::CONSTANT, "param"),
        _ => (lsp::CompletionItemKind::TEXT, "item"),
    }
}

fn simple(list: &[&str], kind: lsp::CompletionItemKind, detail: &str) -> Vec<Completion> {
    list.iter()
        .map(|s| (s.to_string(), kind, detail.to_string(), s.to_string()))
        .collect()
}

/// Completions at `offset`: after `.` in a schedule, its directives; after `:` in a type (or
/// a tile direction), the dtypes; after `k[...](` or `,` in a kernel call, the kernel's
/// parameter names not yet given; at the start of a top-level line, the item keywords;
/// elsewhere the declared names in scope (and statement keywords inside bodies).
pub fn completion(ws: &Workspace, path: &str, offset: usize) -> Vec<Completion> {
    completion_with(ws, path, offset, &[])
}

/// The modules `import` can name from `path`: the std modules (`std.nn`), the loaded files
/// in its directory or below, and `nearby` (module names the caller found on disk).
pub fn importable_modules(ws: &Workspace, path: &str, nearby: &[String]) -> Vec<String> {
    let mut out: Vec<String> = wsp_core::std_lib::modules();
    for p in ws.paths() {
        if p != path {
            if let Some(m) = wsp_core::check::import_module_name(path, &p) {
                out.push(m);
            }
        }
    }
    out.extend(nearby.iter().cloned());
    out.sort();
    out.dedup();
    out
}

/// [`completion`], with the module names found next to the file on disk (`nearby`) offered
/// after `import`.
pub fn completion_with(
    ws: &Workspace,
    path: &str,
    offset: usize,
    nearby: &[String],
) -> Vec<Completion> {
    let Some(text) = text_of(ws, path) else {
        return Vec::new();
    };
    let offset = offset.min(text.len());
    // Tokens before the word being typed.
    let start = match ident_at(&text, offset) {
        Some((_, s, _)) if s < offset => s,
        _ => offset,
    };
    let all = lex(&text);
    let before: Vec<TokenInfo> = all
        .iter()
        .copied()
        .filter(|t| (t.span.end as usize) <= start && t.kind != Token::DocComment)
        .collect();
    let sig: Vec<TokenInfo> = before
        .iter()
        .copied()
        .filter(|t| t.kind != Token::Newline)
        .collect();
    let prev = sig.last().map(|t| t.kind);
    let prev2 = sig.len().checked_sub(2).map(|i| sig[i].kind);
    let prev3 = sig.len().checked_sub(3).map(|i| sig[i].kind);
    // The item keyword this position belongs to: the last one at a line start.
    let mut item_kw = None;
    for (i, t) in before.iter().enumerate() {
        if t.kind.is_item_keyword() && (i == 0 || before[i - 1].kind == Token::Newline) {
            item_kw = Some((i, t.kind));
        }
    }
    let depth: i32 = before
        .iter()
        .map(|t| match t.kind {
            Token::LBrace => 1,
            Token::RBrace => -1,
            _ => 0,
        })
        .sum();
    // Schedule directives after `.`.
    if prev == Some(Token::Dot) && matches!(item_kw, Some((_, Token::Schedule))) {
        return simple(
            &DIRECTIVE_NAMES,
            lsp::CompletionItemKind::METHOD,
            "schedule directive",
        );
    }
    // Module paths after `import` (`import std.` → the std modules; `import a.` → the
    // modules under `a`).
    if matches!(item_kw, Some((_, Token::Import))) {
        let i = item_kw.map(|x| x.0).unwrap_or(0);
        let written: String = before[i + 1..]
            .iter()
            .filter(|t| t.kind != Token::Newline)
            .map(|t| &text[span(t).0..span(t).1])
            .collect();
        if !written.contains('{') && (written.is_empty() || written.ends_with('.')) {
            return importable_modules(ws, path, nearby)
                .into_iter()
                .filter_map(|m| {
                    let rest = m.strip_prefix(written.as_str())?;
                    let label = rest.split('.').next()?.to_string();
                    let kind = if rest.contains('.') || (m.starts_with("std") && written.is_empty())
                    {
                        lsp::CompletionItemKind::FOLDER
                    } else {
                        lsp::CompletionItemKind::MODULE
                    };
                    Some((
                        label.clone(),
                        (label.clone(), kind, format!("module {m}"), label),
                    ))
                })
                .collect::<BTreeMap<String, Completion>>()
                .into_values()
                .collect();
        }
    }
    // Inside a schedule directive's parentheses: its policies, ring names or window modes.
    if matches!(item_kw, Some((_, Token::Schedule)))
        && matches!(prev, Some(Token::LParen | Token::Comma))
    {
        if let Some((directive, arg)) =
            open_directive(&text, &sig).and_then(|(d, a)| Some((Directive::from_name(d)?, a)))
        {
            let policies: Vec<_> = directive.policies().collect();
            if prev == Some(Token::LParen) && !policies.is_empty() {
                return policies
                    .iter()
                    .map(|p| {
                        (
                            p.name().to_string(),
                            lsp::CompletionItemKind::ENUM_MEMBER,
                            format!(".{}({})", directive.name(), p.written()),
                            p.name().to_string(),
                        )
                    })
                    .collect();
            }
            // The named arguments of `.task_graph(` and `.spatial_map(`, and `shard` as
            // `.layout(T, `'s layout.
            let named: &[&str] = match directive {
                Directive::TaskGraph => &POOL_NAMES,
                Directive::SpatialMap => &GRID_NAMES,
                _ => &[],
            };
            if !named.is_empty() {
                return named
                    .iter()
                    .map(|p| {
                        (
                            p.to_string(),
                            lsp::CompletionItemKind::FIELD,
                            directive.usage().to_string(),
                            format!("{p}: "),
                        )
                    })
                    .collect();
            }
            if directive == Directive::Layout && arg == 1 {
                return vec![(
                    SHARD.to_string(),
                    lsp::CompletionItemKind::FUNCTION,
                    directive.usage().to_string(),
                    format!("{SHARD}(dim: 0, parts: 2)"),
                )];
            }
            if directive == Directive::TaskWindow && arg == 1 {
                return WindowMode::ALL
                    .iter()
                    .map(|m| {
                        (
                            m.name().to_string(),
                            lsp::CompletionItemKind::ENUM_MEMBER,
                            format!(".task_window(n, {}): {}", m.name(), m.doc()),
                            m.name().to_string(),
                        )
                    })
                    .collect();
            }
        }
    }
    // Axis constructors after `axis x =`.
    if prev == Some(Token::Assign) && prev2 == Some(Token::Ident) && prev3 == Some(Token::Axis) {
        return AXIS_CTORS
            .iter()
            .map(|c| {
                (
                    c.to_string(),
                    lsp::CompletionItemKind::CONSTRUCTOR,
                    axis_ctor_signature(c).unwrap_or("axis").to_string(),
                    c.to_string(),
                )
            })
            .collect();
    }
    // Dtypes in types.
    let in_kernel_header = match item_kw {
        Some((i, Token::Kernel | Token::Extern)) => {
            !before[i..].iter().any(|t| t.kind == Token::LBrace)
        }
        _ => false,
    };
    let dtype = match prev {
        Some(Token::In | Token::Out | Token::InOut) => prev2 == Some(Token::Colon),
        Some(Token::Colon) => {
            in_kernel_header
                || (prev2 == Some(Token::Ident)
                    && matches!(
                        prev3,
                        Some(
                            Token::Input
                                | Token::Output
                                | Token::Tensor
                                | Token::Param
                                | Token::Const
                                | Token::Let
                                | Token::Var
                        )
                    ))
        }
        _ => false,
    };
    if dtype {
        return simple(DTYPES, lsp::CompletionItemKind::TYPE_PARAMETER, "dtype");
    }
    // Parameter names in a kernel call.
    if matches!(prev, Some(Token::LParen | Token::Comma)) {
        if let Some((k, toks)) = open_call(ws, path, &text, start) {
            let src = text_of(ws, &k.path).unwrap_or_default();
            let given: BTreeSet<&str> = toks
                .windows(2)
                .filter(|w| w[0].kind == Token::Ident && w[1].kind == Token::Colon)
                .map(|w| &text[span(&w[0]).0..span(&w[0]).1])
                .collect();
            return kernel_params(&k)
                .iter()
                .filter(|p| !given.contains(p.name.name.as_str()))
                .map(|p| {
                    let ps = (
                        k.range.0 + p.span.start as usize,
                        k.range.0 + p.span.end as usize,
                    );
                    (
                        p.name.name.clone(),
                        lsp::CompletionItemKind::FIELD,
                        src.get(ps.0..ps.1).unwrap_or("").to_string(),
                        format!("{}: ", p.name.name),
                    )
                })
                .collect();
        }
    }
    // Item keywords at the start of a top-level line.
    if depth <= 0 && matches!(before.last().map(|t| t.kind), None | Some(Token::Newline)) {
        return ITEM_KEYWORDS
            .iter()
            .map(|(_, kw)| {
                let kw = kw.to_string();
                (
                    kw.clone(),
                    lsp::CompletionItemKind::KEYWORD,
                    "keyword".into(),
                    kw,
                )
            })
            .collect();
    }
    // Declared names in scope.
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for p in crate::analysis::scope_paths(ws, path) {
        for d in decls(ws, &p) {
            let Some(n) = d.item.name() else { continue };
            if !seen.insert(n.name.clone()) {
                continue;
            }
            let (kind, word) = decl_kind(&d);
            let detail = if p == path {
                word.to_string()
            } else {
                format!("{word} from {p}")
            };
            out.push((n.name.clone(), kind, detail, n.name.clone()));
        }
    }
    if depth > 0 {
        // In a kernel body: its parameters and the tile operations with their signatures.
        if let Some(k) = enclosing(ws, path, start)
            .filter(|d| matches!(d.item.kind, ItemKind::Kernel(_)) && !in_kernel_header)
        {
            for p in kernel_params(&k) {
                let ps = text
                    .get(k.range.0 + p.span.start as usize..k.range.0 + p.span.end as usize)
                    .unwrap_or("");
                out.push((
                    p.name.name.clone(),
                    lsp::CompletionItemKind::VARIABLE,
                    ps.to_string(),
                    p.name.name.clone(),
                ));
            }
            for r in KERNEL_FNS {
                let name = r.f.name();
                out.push((
                    name.to_string(),
                    lsp::CompletionItemKind::FUNCTION,
                    r.signature.to_string(),
                    name.to_string(),
                ));
            }
        }
        out.extend(simple(
            BODY_KEYWORDS,
            lsp::CompletionItemKind::KEYWORD,
            "keyword",
        ));
    }
    out
}

/// Signature help inside `k[...](`: the kernel's signature, the byte ranges of each parameter
/// in it, and the active parameter (by the argument's name when written `name:`, else by the
/// number of commas before the cursor).
pub fn signature_help(
    ws: &Workspace,
    path: &str,
    offset: usize,
) -> Option<(String, Vec<Range>, u32)> {
    let text = text_of(ws, path)?;
    let (k, toks) = open_call(ws, path, &text, offset.min(text.len()))?;
    let src = text_of(ws, &k.path)?;
    let name = k.item.name()?.name.clone();
    let mut label = format!("{name}(");
    let mut ranges = Vec::new();
    for (i, p) in kernel_params(&k).iter().enumerate() {
        if i > 0 {
            label.push_str(", ");
        }
        let ps = src.get(k.range.0 + p.span.start as usize..k.range.0 + p.span.end as usize)?;
        let ps = ps.split_whitespace().collect::<Vec<_>>().join(" ");
        ranges.push((label.len(), label.len() + ps.len()));
        label.push_str(&ps);
    }
    label.push(')');
    // Commas at depth 1 (toks[0] is the call's `(`).
    let mut depth = 0i32;
    let mut commas = 0u32;
    let mut last_arg = 0usize;
    for (i, t) in toks.iter().enumerate() {
        match t.kind {
            Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
            Token::RParen | Token::RBracket | Token::RBrace => depth -= 1,
            Token::Comma if depth == 1 => {
                commas += 1;
                last_arg = i + 1;
            }
            _ => {}
        }
    }
    let mut active = commas;
    if last_arg == 0 {
        last_arg = 1;
    }
    if let (Some(a), Some(b)) = (toks.get(last_arg), toks.get(last_arg + 1)) {
        if a.kind == Token::Ident && b.kind == Token::Colon {
            let an = &text[span(a).0..span(a).1];
            if let Some(i) = kernel_params(&k).iter().position(|p| p.name.name == an) {
                active = i as u32;
            }
        }
    }
    Some((label, ranges, active))
}

// ---------------------------------------------------------------------------------------------
// Inlay hints

/// Inlay hints: `(byte offset, label)` after the names of workloads (their inferred
/// `Workload[...]` type), after each loop header of a workload or process (its dependency type
/// over its axes), and after kernel `let`/`var` bindings written without a type (their tile
/// type, when its shape is constant).
pub fn inlay_hints(ws: &Workspace, path: &str) -> Vec<(usize, String)> {
    let Some(text) = text_of(ws, path) else {
        return Vec::new();
    };
    let items = decls(ws, path);
    let mut out = Vec::new();
    let types: BTreeMap<String, String> = ws.workload_types(path).into_iter().collect();
    let mut consts = BTreeMap::new();
    for d in &items {
        if let ItemKind::Const(c) = &d.item.kind {
            if let Some(v) = wsp_core::types::eval_int(&c.value, &consts) {
                consts.insert(c.name.name.clone(), v);
            }
        }
    }
    let axes = ws
        .file_handle(path)
        .map(|f| wsp_core::wltype::axis_types(ws.db(), f).clone())
        .unwrap_or_default();
    let loops = |body: &wsp_syntax::ast::Block, base: usize, out: &mut Vec<(usize, String)>| {
        for (end, label) in wsp_core::wltype::loop_headers(body, &axes) {
            out.push((base + end as usize, format!(": {label}")));
        }
    };
    for d in &items {
        match &d.item.kind {
            ItemKind::Workload(w) => {
                if let Some(t) = types.get(&w.name.name) {
                    out.push((d.name.1, format!(": {t}")));
                }
                if let wsp_syntax::ast::WorkloadBody::Block(b) = &w.body {
                    loops(b, d.range.0, &mut out);
                }
            }
            ItemKind::Process(p) => loops(&p.body, d.range.0, &mut out),
            ItemKind::Kernel(k) => {
                let params: BTreeSet<u32> = k.params.iter().map(|p| p.name.span.start).collect();
                for (at, (dtype, r, c)) in wsp_core::types::kernel_tile_shapes(k, &consts) {
                    if params.contains(&at) {
                        continue;
                    }
                    let s = d.range.0 + at as usize;
                    let Some((_, _, e)) = ident_at(&text, s) else {
                        continue;
                    };
                    // Already annotated (`let x: f32[8, 8] = …`)?
                    let annotated = lex(&text[e..])
                        .into_iter()
                        .find(|t| t.kind != Token::Newline)
                        .is_some_and(|t| t.kind == Token::Colon);
                    if !annotated {
                        out.push((e, format!(": {dtype}[{r}, {c}]")));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Semantic tokens and folding

/// The semantic token types, in legend order.
pub const TOKEN_TYPES: &[lsp::SemanticTokenType] = &[
    lsp::SemanticTokenType::KEYWORD,
    lsp::SemanticTokenType::TYPE,
    lsp::SemanticTokenType::FUNCTION,
    lsp::SemanticTokenType::VARIABLE,
    lsp::SemanticTokenType::ENUM,
    lsp::SemanticTokenType::PARAMETER,
    lsp::SemanticTokenType::COMMENT,
    lsp::SemanticTokenType::NUMBER,
    lsp::SemanticTokenType::STRING,
    lsp::SemanticTokenType::CLASS,
    lsp::SemanticTokenType::EVENT,
    lsp::SemanticTokenType::NAMESPACE,
];

/// Indices into [`TOKEN_TYPES`].
pub mod tt {
    pub const KEYWORD: u32 = 0;
    pub const TYPE: u32 = 1;
    pub const FUNCTION: u32 = 2;
    pub const VARIABLE: u32 = 3;
    pub const AXIS: u32 = 4;
    pub const PARAMETER: u32 = 5;
    pub const COMMENT: u32 = 6;
    pub const NUMBER: u32 = 7;
    pub const STRING: u32 = 8;
    pub const WORKLOAD: u32 = 9;
    pub const CHANNEL: u32 = 10;
    pub const SCHEDULE: u32 = 11;
}

/// `//` comments (skipped by the lexer): their byte ranges, found in the gaps between tokens.
fn comments(text: &str, toks: &[TokenInfo]) -> Vec<Range> {
    let mut out = Vec::new();
    let mut prev = 0usize;
    let ends = toks
        .iter()
        .map(|t| (t.span.start as usize, t.span.end as usize))
        .chain(std::iter::once((text.len(), text.len())));
    for (s, e) in ends {
        if let Some(gap) = text.get(prev..s) {
            if let Some(i) = gap.find("//") {
                let end = gap[i..].find('\n').map(|n| i + n).unwrap_or(gap.len());
                out.push((prev + i, prev + end));
            }
        }
        prev = e;
    }
    out
}

/// Classified tokens `(byte range, type index)` in source order.
pub fn classify(ws: &Workspace, path: &str) -> Vec<(Range, u32)> {
    let Some(text) = text_of(ws, path) else {
        return Vec::new();
    };
    let toks = lex(&text);
    let items = decls(ws, path);
    let named = all_named_args(&text);
    let mut kinds: BTreeMap<String, Option<u32>> = BTreeMap::new();
    let mut out: Vec<(Range, u32)> = comments(&text, &toks)
        .into_iter()
        .map(|r| (r, tt::COMMENT))
        .collect();
    // The tokens come in source order: the item around each is found by walking the items in
    // order too (linear, where a search per token was quadratic in a file of many items).
    // This file's declarations by name (a search per name was quadratic in a file of many
    // items); other names are looked up in the files it imports.
    let own: std::collections::HashMap<&str, &Decl> = items
        .iter()
        .filter_map(|d| Some((d.item.name()?.name.as_str(), d)))
        .rev()
        .collect();
    let mut by_start: Vec<_> = items.iter().collect();
    by_start.sort_by_key(|d| d.range.0);
    let mut next_item = 0;
    for (i, t) in toks.iter().enumerate() {
        if i % 4096 == 4095 {
            // A long file: an edit waiting for this snapshot is not held up.
            ws.unwind_if_cancelled();
        }
        let r = span(t);
        while by_start.get(next_item).is_some_and(|d| d.range.1 < r.0) {
            next_item += 1;
        }
        let ty = match t.kind {
            k if k.is_keyword() => Some(tt::KEYWORD),
            Token::Int | Token::Float => Some(tt::NUMBER),
            Token::Str | Token::UnterminatedStr => Some(tt::STRING),
            Token::DocComment => Some(tt::COMMENT),
            Token::Ident => {
                let name = &text[r.0..r.1];
                let item = by_start
                    .get(next_item)
                    .copied()
                    .filter(|d| d.range.0 <= r.0 && r.0 <= d.range.1);
                if DTYPES.contains(&name) {
                    Some(tt::TYPE)
                } else if named.contains(&r.0)
                    || item.is_some_and(|d| kernel_params(d).iter().any(|p| p.name.name == name))
                {
                    Some(tt::PARAMETER)
                } else if item.is_some_and(|d| d.name.0 != r.0 && binds_locally(&text, d, name)) {
                    Some(tt::VARIABLE)
                } else {
                    *kinds.entry(name.to_string()).or_insert_with(|| {
                        let kind_of = |d: &Decl| match d.item.kind {
                            ItemKind::Kernel(_) => Some(tt::FUNCTION),
                            ItemKind::Tensor(_) | ItemKind::Const(_) => Some(tt::VARIABLE),
                            ItemKind::Axis(_) => Some(tt::AXIS),
                            ItemKind::Param(_) => Some(tt::PARAMETER),
                            ItemKind::Workload(_) | ItemKind::Process(_) => Some(tt::WORKLOAD),
                            ItemKind::Channel(_) => Some(tt::CHANNEL),
                            ItemKind::Schedule(_) => Some(tt::SCHEDULE),
                            _ => None,
                        };
                        match own.get(name) {
                            Some(d) => kind_of(d),
                            None => find_decl(ws, path, name).and_then(|d| kind_of(&d)),
                        }
                    })
                }
            }
            _ => None,
        };
        if let Some(ty) = ty {
            out.push((r, ty));
        }
    }
    out.sort();
    out
}

/// Semantic tokens (full), delta-encoded as the protocol wants (single-line tokens).
pub fn semantic_tokens(ws: &Workspace, path: &str) -> Vec<lsp::SemanticToken> {
    let Some(text) = text_of(ws, path) else {
        return Vec::new();
    };
    let idx = LineIndex::new(&text);
    let mut out = Vec::new();
    let (mut pl, mut pc) = (0u32, 0u32);
    for ((s, e), ty) in classify(ws, path) {
        let (a, b) = (idx.position(s), idx.position(e));
        if b.line != a.line || b.character <= a.character {
            continue;
        }
        let delta_line = a.line - pl;
        let delta_start = if delta_line == 0 {
            a.character - pc
        } else {
            a.character
        };
        out.push(lsp::SemanticToken {
            delta_line,
            delta_start,
            length: b.character - a.character,
            token_type: ty,
            token_modifiers_bitset: 0,
        });
        (pl, pc) = (a.line, a.character);
    }
    out
}

/// Folding ranges `(start line, end line, is comment)`: every `{ … }` spanning lines (kernel,
/// workload, process and schedule bodies, nested blocks), up to the line before its `}`; and
/// runs of two or more whole-line comments.
pub fn folding_ranges(ws: &Workspace, path: &str) -> Vec<(u32, u32, bool)> {
    let Some(text) = text_of(ws, path) else {
        return Vec::new();
    };
    let idx = LineIndex::new(&text);
    let toks = lex(&text);
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for t in &toks {
        match t.kind {
            Token::LBrace => stack.push(idx.position(t.span.start as usize).line),
            Token::RBrace => {
                if let Some(open) = stack.pop() {
                    let close = idx.position(t.span.start as usize).line;
                    if close > open + 1 {
                        out.push((open, close - 1, false));
                    }
                }
            }
            _ => {}
        }
    }
    // Whole-line comments (plain and doc).
    let mut lines: Vec<u32> = comments(&text, &toks)
        .into_iter()
        .chain(
            toks.iter()
                .filter(|t| t.kind == Token::DocComment)
                .map(span),
        )
        .filter(|(s, _)| {
            let ls = text[..*s].rfind('\n').map(|i| i + 1).unwrap_or(0);
            text[ls..*s].trim().is_empty()
        })
        .map(|(s, _)| idx.position(s).line)
        .collect();
    lines.sort_unstable();
    lines.dedup();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j + 1] == lines[j] + 1 {
            j += 1;
        }
        if j > i {
            out.push((lines[i], lines[j], true));
        }
        i = j + 1;
    }
    out.sort();
    out
}

/// The index of the `(` that encloses token `i` (scanning back over balanced brackets), or 0.
fn enclosing_paren(toks: &[TokenInfo], i: usize) -> usize {
    let mut depth = 0i32;
    let mut j = i;
    while j > 0 {
        j -= 1;
        match toks[j].kind {
            Token::RParen | Token::RBracket | Token::RBrace => depth += 1,
            Token::LParen if depth == 0 => break,
            Token::LParen | Token::LBracket | Token::LBrace => depth -= 1,
            _ => {}
        }
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "const N = 8\naxis rows = Dense[4]\ninput X: f32[4, 8, 8] = random(seed: 1)\noutput Y: f32[4, 8, 8]\n// a comment\n// on two lines\n/// doubles a tile\nkernel double(x: in f32[8, 8], y: out f32[8, 8]) {\n    let t = x * 2.0\n    y = t\n}\nworkload w {\n    for i in P(rows) { double[i](x: X[i], y: Y[i]) }\n}\nschedule s = w .dispatch(round_robin)\n";

    fn ws() -> Workspace {
        let mut ws = Workspace::new();
        ws.set_file("a.wsp", SRC.to_string());
        ws
    }

    fn at(needle: &str, plus: usize) -> usize {
        SRC.find(needle).expect(needle) + plus
    }

    fn texts(refs: &[(String, Range)]) -> Vec<(String, &'static str, usize)> {
        refs.iter()
            .map(|(p, r)| (p.clone(), &SRC[r.0..r.1], r.0))
            .collect()
    }

    #[test]
    fn references_of_a_tensor_with_and_without_the_declaration() {
        let ws = ws();
        let r = references(&ws, "a.wsp", at("X[i]", 0), true);
        assert_eq!(
            texts(&r),
            [
                ("a.wsp".into(), "X", at("X:", 0)),
                ("a.wsp".into(), "X", at("X[i]", 0))
            ]
        );
        let r = references(&ws, "a.wsp", at("X[i]", 0), false);
        assert_eq!(r.len(), 1);
        // A kernel parameter: its declaration, its uses in the body and the named arguments.
        let r = references(&ws, "a.wsp", at("x * 2.0", 0), true);
        assert_eq!(
            r.iter().map(|x| x.1 .0).collect::<Vec<_>>(),
            [at("x: in", 0), at("x * 2.0", 0), at("x: X[i]", 0)]
        );
    }

    #[test]
    fn rename_across_files_and_refusals() {
        let mut ws = ws();
        let other =
            "import a\nworkload v {\n    for i in P(rows) { double[i](x: X[i], y: Y[i]) }\n}\n";
        ws.set_file("b.wsp", other.to_string());
        let edits = rename(&ws, "a.wsp", at("double(", 0), "twice").unwrap();
        assert_eq!(edits["a.wsp"].len(), 2, "{edits:?}");
        assert_eq!(
            edits["b.wsp"],
            [(
                other.find("double").unwrap(),
                other.find("double").unwrap() + 6
            )]
        );
        // Keywords, builtins and bad new names are refused with a reason.
        let e = prepare_rename(&ws, "a.wsp", at("kernel", 1)).unwrap_err();
        assert!(e.contains("keyword"), "{e}");
        let e = prepare_rename(&ws, "a.wsp", at("f32[8, 8]", 1)).unwrap_err();
        assert!(e.contains("builtin"), "{e}");
        let e = rename(&ws, "a.wsp", at("X[i]", 0), "kernel").unwrap_err();
        assert!(e.contains("keyword"), "{e}");
        let e = rename(&ws, "a.wsp", at("X[i]", 0), "f16").unwrap_err();
        assert!(e.contains("builtin"), "{e}");
        let e = rename(&ws, "a.wsp", at("X[i]", 0), "a b").unwrap_err();
        assert!(e.contains("not an identifier"), "{e}");
    }

    #[test]
    fn highlights_mark_the_declaration() {
        let ws = ws();
        let h = highlights(&ws, "a.wsp", at("double[i]", 1));
        assert_eq!(
            h,
            [
                ((at("double(", 0), at("double(", 6)), true),
                ((at("double[i]", 0), at("double[i]", 6)), false)
            ]
        );
        // A local: the `let` binding and its use.
        let h = highlights(&ws, "a.wsp", at("t\n}", 0));
        assert_eq!(
            h.iter().map(|x| (x.0 .0, x.1)).collect::<Vec<_>>(),
            [(at("t = x", 0), true), (at("t\n}", 0), false)]
        );
    }

    #[test]
    fn rename_refuses_clashes() {
        let mut ws = ws();
        let other =
            "import a\naxis cols = Dense[2]\nworkload v {\n    for j in P(rows) { double[j](x: X[j], y: Y[j]) }\n}\n";
        ws.set_file("b.wsp", other.to_string());
        // A top-level name already declared in the same file …
        let e = rename(&ws, "a.wsp", at("X[i]", 0), "Y").unwrap_err();
        assert!(
            e.contains("`Y` is already declared in `a.wsp` (tensor on line 4)"),
            "{e}"
        );
        // … or in another file the rename touches (b.wsp uses `double`).
        let e = rename(&ws, "a.wsp", at("double(", 0), "cols").unwrap_err();
        assert!(e.contains("already declared in `b.wsp`"), "{e}");
        // A top-level name that a local binding would shadow at a renamed use.
        let e = rename(&ws, "a.wsp", at("X[i]", 0), "i").unwrap_err();
        assert!(e.contains("shadow"), "{e}");
        // A local: the loop variable cannot take a name the workload uses.
        let e = rename(&ws, "a.wsp", at("i in P", 0), "rows").unwrap_err();
        assert!(e.contains("already used in `w`"), "{e}");
        // A `let` cannot take a parameter's name.
        let e = rename(&ws, "a.wsp", at("t = x", 0), "y").unwrap_err();
        assert!(e.contains("already declared in `double`"), "{e}");
        // Free names still rename; a named argument is not a use.
        assert!(rename(&ws, "a.wsp", at("X[i]", 0), "Xin").is_ok());
        assert!(rename(&ws, "a.wsp", at("i in P", 0), "x").is_ok());
        assert!(rename(&ws, "a.wsp", at("t = x", 0), "u").is_ok());
    }

    fn labels(c: Vec<Completion>) -> Vec<String> {
        c.into_iter().map(|c| c.0).collect()
    }

    #[test]
    fn completion_contexts() {
        let mut ws = ws();
        let l = labels(completion(&ws, "a.wsp", at(".dispatch", 1)));
        assert!(
            l.contains(&"task_window".into()) && l.contains(&"dispatch".into()),
            "{l:?}"
        );
        let l = labels(completion(&ws, "a.wsp", at("f32[4, 8, 8] =", 0)));
        assert!(
            l.contains(&"bf16".into()) && !l.contains(&"double".into()),
            "{l:?}"
        );
        let l = labels(completion(&ws, "a.wsp", at("f32[8, 8], y", 0)));
        assert!(l.contains(&"f16".into()), "{l:?}");
        let l = labels(completion(&ws, "a.wsp", at("workload w", 0)));
        assert!(
            l.contains(&"kernel".into()) && l.contains(&"schedule".into()),
            "{l:?}"
        );
        let l = labels(completion(&ws, "a.wsp", at("X[i], y", 0)));
        assert!(
            l.contains(&"rows".into()) && l.contains(&"double".into()),
            "{l:?}"
        );
        // Parameter names in a kernel call, without the ones already given.
        let src = SRC.replace("double[i](x: X[i], y: Y[i])", "double[i](x: X[i], ");
        ws.set_file("a.wsp", src.clone());
        let c = completion(&ws, "a.wsp", src.find("X[i], ").unwrap() + 6);
        assert_eq!(labels(c.clone()), ["y"]);
        assert_eq!(c[0].2, "y: out f32[8, 8]");
    }

    #[test]
    fn completion_of_tile_operations_axis_constructors_policies_and_modules() {
        let mut ws = ws();
        // In a kernel body: tile operations with signatures, and the kernel's parameters.
        let c = completion(&ws, "a.wsp", at("x * 2.0", 0));
        let mm = c.iter().find(|c| c.0 == "matmul").expect("matmul");
        assert_eq!(mm.2, "matmul(a: [M, K], b: [K, N], acc: c?) -> [M, N]");
        assert!(
            c.iter().any(|c| c.0 == "x" && c.2 == "x: in f32[8, 8]"),
            "{c:?}"
        );
        // Outside kernels, no tile operations.
        let l = labels(completion(&ws, "a.wsp", at("X[i], y", 0)));
        assert!(!l.contains(&"matmul".into()), "{l:?}");
        // Axis constructors after `axis x =`.
        let src = format!("{SRC}axis cols = ");
        ws.set_file("a.wsp", src.clone());
        let c = completion(&ws, "a.wsp", src.len());
        assert_eq!(labels(c.clone()), ["Dense", "DenseDyn", "Ragged", "Sparse"]);
        assert!(c[0].2.contains("constant size"), "{c:?}");
        // Policies inside `.dispatch(`, `.timing(`, `.ready(`.
        for (d, want) in [
            ("dispatch", "round_robin"),
            ("timing", "batched"),
            ("ready", "priority"),
        ] {
            let src = SRC.replace(".dispatch(round_robin)", &format!(".{d}("));
            ws.set_file("a.wsp", src.clone());
            let at = src.find(&format!(".{d}(")).unwrap() + d.len() + 2;
            let l = labels(completion(&ws, "a.wsp", at));
            assert!(l.contains(&want.to_string()), "{d}: {l:?}");
            assert!(
                !l.contains(&"fifo".to_string()) || d == "ready",
                "{d}: {l:?}"
            );
        }
        // Ring names inside `.task_graph(`, first and after a comma.
        for written in [".task_graph(", ".task_graph(deplist: 8, "] {
            let src = SRC.replace(".dispatch(round_robin)", written);
            ws.set_file("a.wsp", src.clone());
            let l = labels(completion(&ws, "a.wsp", src.len() - 1));
            assert_eq!(
                l,
                ["tensormap", "deplist", "ready", "heap"],
                "{written}: {l:?}"
            );
        }
        // The arguments of `.spatial_map(`, first and after a comma; `shard` in `.layout(T, `.
        for written in [".spatial_map(", ".spatial_map(grid: (2, 4), "] {
            let src = SRC.replace(".dispatch(round_robin)", written);
            ws.set_file("a.wsp", src.clone());
            let l = labels(completion(&ws, "a.wsp", src.len() - 1));
            assert_eq!(l, ["grid", "at"], "{written}: {l:?}");
        }
        let src = SRC.replace(".dispatch(round_robin)", ".layout(X, ");
        ws.set_file("a.wsp", src.clone());
        let l = labels(completion(&ws, "a.wsp", src.len() - 1));
        assert_eq!(l, ["shard"], "{l:?}");
        // Window modes after `.task_window(n,`.
        let src = SRC.replace(".dispatch(round_robin)", ".task_window(8, ");
        ws.set_file("a.wsp", src.clone());
        let l = labels(completion(&ws, "a.wsp", src.len() - 1));
        assert_eq!(l, ["stall", "abort", "benchmark"], "{l:?}");
        // Module paths after `import` and `import std.`: the std modules (whatever
        // std_lib::modules() holds) and the files next to this one.
        ws.set_file("dir/main.wsp", "import ".into());
        ws.set_file("dir/layers/norm.wsp", "const K = 1\n".into());
        ws.set_file("dir/util.wsp", "const U = 1\n".into());
        let l = labels(completion_with(&ws, "dir/main.wsp", 7, &["disk".into()]));
        assert!(
            l.contains(&"layers".into())
                && l.contains(&"util".into())
                && l.contains(&"disk".into()),
            "{l:?}"
        );
        assert_eq!(
            l.contains(&"std".into()),
            !wsp_core::std_lib::modules().is_empty(),
            "{l:?}"
        );
        ws.set_file("dir/main.wsp", "import layers.".into());
        assert_eq!(labels(completion(&ws, "dir/main.wsp", 14)), ["norm"]);
        ws.set_file("dir/main.wsp", "import std.".into());
        let want: Vec<String> = wsp_core::std_lib::modules()
            .iter()
            .filter_map(|m| {
                m.strip_prefix("std.")
                    .map(|r| r.split('.').next().unwrap_or("").to_string())
            })
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(labels(completion(&ws, "dir/main.wsp", 11)), want);
    }

    #[test]
    fn signature_help_tracks_the_active_parameter() {
        let ws = ws();
        let (label, ranges, active) = signature_help(&ws, "a.wsp", at("x: X[i]", 0)).unwrap();
        assert_eq!(label, "double(x: in f32[8, 8], y: out f32[8, 8])");
        assert_eq!(&label[ranges[1].0..ranges[1].1], "y: out f32[8, 8]");
        assert_eq!(active, 0);
        let (_, _, active) = signature_help(&ws, "a.wsp", at("Y[i])", 1)).unwrap();
        assert_eq!(active, 1);
        assert!(
            signature_help(&ws, "a.wsp", at("rows)", 0)).is_none(),
            "P is no kernel"
        );
    }

    #[test]
    fn inlay_hints_show_workload_and_tile_types() {
        let ws = ws();
        let h = inlay_hints(&ws, "a.wsp");
        assert!(
            h.iter()
                .any(|(o, l)| *o == at("w {", 1) && l.starts_with(": Workload[")),
            "{h:?}"
        );
        assert!(h.contains(&(at("t = x", 1), ": f32[8, 8]".into())), "{h:?}");
        // The dependency type at the loop header, after `P(rows)`.
        assert!(
            h.contains(&(at("P(rows)", 7), ": Independent[rows: Dense[4]]".into())),
            "{h:?}"
        );
    }

    #[test]
    fn semantic_tokens_classify_names_comments_and_numbers() {
        let ws = ws();
        let c = classify(&ws, "a.wsp");
        let ty = |needle: &str| {
            let s = at(needle, 0);
            c.iter().find(|(r, _)| r.0 == s).map(|x| x.1)
        };
        assert_eq!(ty("kernel double"), Some(tt::KEYWORD));
        assert_eq!(ty("double[i]"), Some(tt::FUNCTION));
        assert_eq!(ty("X[i]"), Some(tt::VARIABLE));
        assert_eq!(ty("rows)"), Some(tt::AXIS));
        assert_eq!(ty("x * 2.0"), Some(tt::PARAMETER));
        assert_eq!(ty("f32[8, 8], y"), Some(tt::TYPE));
        assert_eq!(ty("// a comment"), Some(tt::COMMENT));
        assert_eq!(ty("2.0"), Some(tt::NUMBER));
        let toks = semantic_tokens(&ws, "a.wsp");
        assert_eq!(toks.len(), c.len());
        assert_eq!(
            (toks[0].delta_line, toks[0].delta_start, toks[0].length),
            (0, 0, 5)
        );
    }

    #[test]
    fn folding_bodies_and_comment_runs() {
        let ws = ws();
        let f = folding_ranges(&ws, "a.wsp");
        assert!(f.contains(&(4, 6, true)), "{f:?}");
        assert!(f.contains(&(7, 9, false)), "kernel body {f:?}");
        assert!(f.contains(&(11, 12, false)), "workload body {f:?}");
    }
}
