//! Editing features as pure functions of a [`Workspace`] and byte offsets, one module per
//! feature: references and document highlights, rename, go to definition of a local tensor,
//! hover of local names and views, completion, signature help, inlay hints, semantic tokens and
//! folding ranges. Name resolution is the one `wsp check` uses for top-level items (the file
//! first, then imported and std files); names local to an item (kernel parameters,
//! `let`/`var`/loop bindings) resolve inside that item. This module holds what the features
//! share: what the name at an offset refers to, the item around an offset and its local
//! bindings, calls and named arguments in the tokens, and `//` comments.

mod completion;
mod definition;
mod folding;
mod hover;
mod inlay_hints;
mod references;
mod rename;
mod semantic_tokens;
mod signature_help;
#[cfg(test)]
mod test_support;

pub use completion::{completion, completion_with, importable_modules, Completion};
pub use definition::local_tensor_definition;
pub use folding::folding_ranges;
pub use hover::{local_hover, view_hover};
pub use inlay_hints::inlay_hints;
pub use references::{highlights, references};
pub use rename::{is_builtin, prepare_rename, rename};
pub use semantic_tokens::{classify, semantic_tokens, tt, TOKEN_TYPES};
pub use signature_help::signature_help;

use std::collections::BTreeSet;

use wsp_core::Workspace;
use wsp_diagnostics::FileName;
use wsp_syntax::ast::{ItemKind, KernelParam};
use wsp_syntax::{lex, Token, TokenInfo};

use crate::analysis::{decls, find_decl, ident_at, Decl};

/// A byte range.
pub type Range = (usize, usize);

fn text_of(ws: &Workspace, path: &str) -> Option<std::sync::Arc<str>> {
    ws.text(&FileName::new(path))
}

fn span(t: &TokenInfo) -> Range {
    (t.span.start as usize, t.span.end as usize)
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
