//! Find references and document highlights: the occurrences of the name at an offset. A
//! top-level item is found across the loaded files (not where a local binding shadows it); a
//! name local to an item inside that item, and a kernel parameter also as the named argument
//! `name:` of the calls to its kernel.

use std::collections::BTreeSet;

use wsp_core::Workspace;
use wsp_syntax::{lex, Token};

use super::{
    all_named_args, binds_locally, callee, significant, span, target, text_of, Range, Target,
};
use crate::analysis::{decls, find_decl};

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

/// Paths to search for references: the user files and the declaration's own file.
fn search_paths(ws: &Workspace, decl_path: &str) -> Vec<String> {
    let mut ps = ws.paths();
    if !ps.iter().any(|p| p == decl_path) {
        ps.push(decl_path.to_string());
    }
    ps
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::test_support::{at, ws, SRC};

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
}
