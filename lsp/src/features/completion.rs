//! Completion: what can be written at an offset. Schedule directives and, inside their
//! parentheses, policies, ring names, grid arguments and window modes; module paths after
//! `import`; axis constructors; dtypes in types; a called kernel's parameter names; item
//! keywords at the start of a top-level line; elsewhere the names in scope (in a kernel body
//! also its parameters and the tile operations with their signatures).

use std::collections::{BTreeMap, BTreeSet};

use tower_lsp_server::ls_types as lsp;
use wsp_core::Workspace;
use wsp_syntax::ast::ItemKind;
use wsp_syntax::lexer::ITEM_KEYWORDS;
use wsp_syntax::{lex, Token, TokenInfo};
use wsp_vocab::ops::KERNEL_FNS;
use wsp_vocab::schedule::{Directive, WindowMode, DIRECTIVE_NAMES, GRID_NAMES, POOL_NAMES, SHARD};
use wsp_vocab::words::{axis_ctor_signature, AXIS_CTORS, DTYPES};

use super::{enclosing, kernel_params, open_call, span, text_of};
use crate::analysis::{decls, ident_at, Decl};

/// A completion: label, kind, detail, text to insert.
pub type Completion = (String, lsp::CompletionItemKind, String, String);

const BODY_KEYWORDS: &[&str] = &["for", "in", "when", "else", "let", "var", "send", "consume"];

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::test_support::{at, ws, SRC};

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
}
