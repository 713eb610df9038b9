//! Semantic tokens: every token classified (keywords, dtypes, kernels, tensors and constants,
//! axes, parameters, locals, comments, numbers, strings, workloads, channels, schedules) and
//! delta-encoded as the protocol wants.

use std::collections::BTreeMap;

use tower_lsp_server::ls_types as lsp;
use wsp_core::Workspace;
use wsp_syntax::ast::ItemKind;
use wsp_syntax::{lex, Token};
use wsp_vocab::words::DTYPES;

use super::{all_named_args, binds_locally, comments, kernel_params, span, text_of, Range};
use crate::analysis::{decls, find_decl, Decl, LineIndex};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::test_support::{at, ws};

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
}
