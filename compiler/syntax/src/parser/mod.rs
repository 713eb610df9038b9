//! The error-recovering parser.
//!
//! Parsing happens in three steps:
//!
//! 1. [`crate::lex`] turns the text into tokens (never fails).
//! 2. [`split_items`] cuts the token stream into top-level items. An item starts at an item
//!    keyword (`kernel`, `workload`, `input`, ...) that is the first token of its line, together
//!    with the `///` doc comment lines right above it. Because no item keyword can appear at the
//!    start of a line inside a body, an unclosed `{` in one item never swallows the next item.
//! 3. Each item's tokens go through [`significant_newlines`] (newlines inside `()`/`[]` and before
//!    a continuation line vanish), spans become relative to the item's start (see the span
//!    convention in [`crate::ast`]), and an item nested deeper than [`MAX_DEPTH`] is an error
//!    (E0006) without being parsed, so deep input never reaches the parser's recursion.
//! 4. A chumsky 0.13 grammar ([`item_parser`]) parses the item's `(Token, span)` pairs: items,
//!    kernels, processes, schedules, type expressions, blocks and statements are combinators;
//!    expressions are a `pratt` parser over postfix chains, ranges binding loosest. The grammar is
//!    built once per file and run on every item with the item's text as parser state; the span
//!    of the innermost open delimiter is the parser context (for "unclosed `(`", E0002).
//!
//! Recovery is `recover_with(via_parser(...))` at three levels: a failed item becomes
//! `ItemKind::Error`; a failed statement becomes `StmtKind::Error` and parsing resumes at the end
//! of the line (or `;`/`}`) where it failed; a failed call argument, list element or kernel
//! parameter becomes `ExprKind::Error` (or is dropped) and parsing resumes at the next `,` or
//! closing bracket. Each statement reports at most one error, so one mistake never hides the next
//! and never produces a cascade.
//!
//! Errors are [`PErr`], our implementation of chumsky's error traits: a failed expectation of ours
//! carries the finished [`SyntaxError`] (our code and wording, "expected `)`, found `,`"), a failed
//! chumsky primitive inside an alternative costs nothing. chumsky keeps the furthest failure.
//! Because chumsky's alternatives backtrack, the state also remembers the furthest failed
//! expectation: a construct that stops short of it (a call whose `(` never closed) fails with it
//! ([`committed`](combinators::committed)) instead of ending quietly before it.
//!
//! The token-stream passes are in `tokens`; the grammar's types and token-level combinators
//! in `combinators`, its recovery strategies in `recovery` and its terminals in `terminals`;
//! its rules in `expr`, `types`, `stmt` (blocks and statements) and `items`.

mod combinators;
mod expr;
mod items;
mod recovery;
mod stmt;
mod terminals;
mod tokens;
mod types;

use chumsky::extra::SimpleState;
use chumsky::prelude::*;

use crate::ast::*;
use crate::lexer::{lex, Token, TokenInfo};
use crate::{Parse, Span, SyntaxError};
use combinators::{found, to_span, CSpan, PErr, Pair, St};
use items::item_parser;
use tokens::{collect_docs, line_of, nesting, significant_newlines, split_items};

/// The deepest expression/statement nesting the parser accepts.
pub const MAX_DEPTH: u32 = 64;

/// The most operators (binary, `.`, `..`, and postfix calls and indexing: `a[0][0]`,
/// `f(1)(1)`) one expression may chain, counting those of the expressions it sits in: each is a
/// level of the syntax tree that every later pass walks recursively.
pub const MAX_CHAIN: u32 = 1024;

/// Error codes of the syntax layer (explained in `compiler/diagnostics/explanations`).
pub mod codes {
    /// Unexpected token: expected one thing, found another.
    pub const UNEXPECTED: &str = wsp_vocab::codes::E0001;
    /// An opening delimiter that is never closed.
    pub const UNCLOSED: &str = wsp_vocab::codes::E0002;
    /// A number literal that is malformed or out of range.
    pub const BAD_NUMBER: &str = wsp_vocab::codes::E0003;
    /// A string literal that is not closed before the end of the line.
    pub const UNTERMINATED_STRING: &str = wsp_vocab::codes::E0004;
    /// A character that is not part of the language.
    pub const UNKNOWN_CHAR: &str = wsp_vocab::codes::E0005;
    /// Nesting deeper than the parser accepts.
    pub const TOO_DEEP: &str = wsp_vocab::codes::E0006;
    /// Text at the top level that does not start an item.
    pub const EXPECTED_ITEM: &str = wsp_vocab::codes::E0007;
}

/// Parses a whole file. Never fails and never panics.
///
/// The same as [`split`], [`parse_item`] on the text of each item range, then [`assemble`]:
/// what the salsa database does item by item, so that an edit re-parses only the items whose
/// text changed.
pub fn parse(src: &str) -> Parse {
    let split = split(src);
    let items: Vec<(u32, ItemParse)> = split
        .items
        .iter()
        .map(|r| (r.start as u32, parse_item(src.get(r.clone()).unwrap_or(""))))
        .collect();
    assemble(src, split, items)
}

/// A file cut into items: the first step of [`parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The byte range of each item: from its first token (its doc comment, or its keyword)
    /// to the next item's first token, or the end of the file.
    pub items: Vec<std::ops::Range<usize>>,
    /// The errors of the whole file's tokens (unknown characters, unterminated strings) and
    /// of the text before the first item (absolute spans).
    errors: Vec<SyntaxError>,
    /// Every significant token with its absolute span.
    tokens: Vec<TokenInfo>,
}

/// One item parsed on its own, from the text of one of its file's [`Split::items`]: its node
/// and its syntax errors, with spans relative to the start of that text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ItemParse {
    pub node: ItemNode,
    pub errors: Vec<SyntaxError>,
}

/// Lexes a file and cuts it into items (see the module documentation, step 2).
pub fn split(src: &str) -> Split {
    let all = lex(src);
    let mut errors = Vec::new();
    let mut tokens = Vec::with_capacity(all.len());
    for t in &all {
        match t.kind {
            Token::Error => errors.push(SyntaxError {
                code: codes::UNKNOWN_CHAR,
                span: t.span,
                message: format!(
                    "unknown character `{}`",
                    src.get(t.span.range()).unwrap_or("?").escape_debug()
                ),
                label: "not part of the language".into(),
                help: Some("remove it; comments start with `//`".into()),
            }),
            Token::UnterminatedStr => {
                errors.push(SyntaxError {
                    code: codes::UNTERMINATED_STRING,
                    span: t.span,
                    message: "unterminated string literal".into(),
                    label: "this string is never closed".into(),
                    help: Some("add a closing `\"` before the end of the line".into()),
                });
                tokens.push(*t);
            }
            _ => tokens.push(*t),
        }
    }
    let ranges = split_items(&tokens, src, &mut errors);
    let items = ranges
        .iter()
        .map(|r| {
            let start = tokens
                .get(r.start)
                .map_or(src.len(), |t| t.span.start as usize);
            let end = tokens
                .get(r.end)
                .map_or(src.len(), |t| t.span.start as usize);
            start..end.max(start)
        })
        .collect();
    Split {
        items,
        errors,
        tokens: tokens
            .into_iter()
            .filter(|t| t.kind != Token::Newline)
            .collect(),
    }
}

/// Parses the text of one item range of a [`Split`] (see the module documentation, steps 3
/// and 4): the text alone decides the result, whatever surrounds it in the file.
pub fn parse_item(text: &str) -> ItemParse {
    let tokens: Vec<TokenInfo> = lex(text)
        .into_iter()
        .filter(|t| t.kind != Token::Error)
        .collect();
    let mut errors = Vec::new();
    let first = tokens.first().map_or(0, |t| t.span.start);
    let last = tokens
        .iter()
        .rev()
        .find(|t| t.kind != Token::Newline)
        .map_or(first, |t| t.span.end);
    let abs = Span::new(first, last.max(first));
    let significant = significant_newlines(&tokens);
    let docs = collect_docs(text, first, &significant);
    let pairs: Vec<Pair> = significant
        .iter()
        .map(|t| {
            let s = t.span.start.saturating_sub(first) as usize;
            let e = t.span.end.saturating_sub(first) as usize;
            (t.kind, CSpan::from(s..e.max(s)))
        })
        .collect();
    let from_first = text.get(first as usize..).unwrap_or("");
    let eoi = pairs.last().map_or(0, |p| p.1.end);
    let kind = match nesting(&pairs) {
        Err(e) => {
            errors.push(shifted(e, first));
            ItemKind::Error
        }
        Ok(depth) => {
            let parser = item_parser();
            let mut state = SimpleState(St {
                text: from_first,
                eoi,
                hard_at: None,
                fail_at: 0,
            });
            let input = pairs.as_slice().split_token_span(CSpan::from(eoi..eoi));
            let mut run = || {
                parser
                    .parse_with_state(input, &mut state)
                    .into_output_errors()
            };
            // Each nesting level costs the grammar some stack (tens of KiB unoptimised): an
            // item nested beyond a few levels gets a stack of its own.
            let (out, errs) = if depth > SHALLOW {
                stacker::grow(DEEP_STACK, run)
            } else {
                run()
            };
            errors.extend(
                errs.into_iter()
                    .map(|e| shifted(to_syntax_error(e, from_first, &pairs), first)),
            );
            out.unwrap_or(ItemKind::Error)
        }
    };
    let start = pairs.first().map_or(0, |p| p.1.start);
    ItemParse {
        node: ItemNode {
            range: abs,
            item: std::sync::Arc::new(Item {
                docs,
                kind,
                span: Span::new(0, eoi.max(start) as u32),
            }),
        },
        errors,
    }
}

/// The parse of a file from its [`Split`] and the [`parse_item`] of each of its item ranges,
/// with the range's start: spans made absolute, and the parser errors that a lexical error on
/// the same line explains dropped.
pub fn assemble(src: &str, split: Split, items: Vec<(u32, ItemParse)>) -> Parse {
    let mut errors = split.errors;
    let mut nodes = Vec::with_capacity(items.len());
    for (base, p) in items {
        errors.extend(p.errors.into_iter().map(|e| shifted(e, base)));
        let mut node = p.node;
        node.range = node.range.shift(base);
        nodes.push(node);
    }
    // A lexical error (unknown character, unterminated string) already explains its line; the
    // parser errors it causes on the same line would only be noise.
    let lexical_lines: Vec<usize> = errors
        .iter()
        .filter(|e| matches!(e.code, codes::UNKNOWN_CHAR | codes::UNTERMINATED_STRING))
        .map(|e| line_of(src, e.span.start))
        .collect();
    if !lexical_lines.is_empty() {
        errors.retain(|e| {
            matches!(e.code, codes::UNKNOWN_CHAR | codes::UNTERMINATED_STRING)
                || !lexical_lines.contains(&line_of(src, e.span.start))
        });
    }
    errors.sort_by_key(|e| (e.span.start, e.span.end));
    Parse {
        file: SourceFile { items: nodes },
        errors,
        tokens: split.tokens,
    }
}

fn shifted(mut e: SyntaxError, base: u32) -> SyntaxError {
    e.span = e.span.shift(base);
    e
}

/// Maps a grammar error to the project's `SyntaxError` (item-relative spans).
fn to_syntax_error(e: PErr, text: &str, pairs: &[Pair]) -> SyntaxError {
    if let Some(msg) = e.msg {
        return *msg;
    }
    // A bare primitive failure (none of our expectations applied): name what was found.
    let tok = pairs
        .iter()
        .find(|p| p.1.start == e.span.start)
        .map(|p| p.0);
    let span = match tok {
        Some(_) => e.span,
        None => CSpan::from(e.span.start..e.span.start),
    };
    let st = St {
        text,
        eoi: 0,
        hard_at: None,
        fail_at: 0,
    };
    let found = found(&st, tok, span);
    SyntaxError {
        code: codes::UNEXPECTED,
        span: to_span(span),
        message: format!("unexpected {found}"),
        label: "unexpected here".into(),
        help: None,
    }
}

/// Items nested at most this deep are parsed on the caller's stack.
const SHALLOW: u32 = 8;
/// The stack for parsing a more deeply nested item (at most [`MAX_DEPTH`] levels).
const DEEP_STACK: usize = 64 << 20;
