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
#[cfg(test)]
use tokens::split_items;
use tokens::{collect_docs, line_of, nesting, significant_newlines};

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
/// The same as [`cut`], [`parse_prefix`] on the text before the first item, [`parse_item`] on
/// the text of each item range, then [`assemble`]: what the salsa database does item by item,
/// so that an edit re-parses only the items whose text changed.
pub fn parse(src: &str) -> Parse {
    let ranges = cut(src);
    let prefix_end = ranges.first().map_or(src.len(), |r| r.start);
    let prefix = parse_prefix(src.get(..prefix_end).unwrap_or(""));
    let items: Vec<(u32, ItemParse)> = ranges
        .iter()
        .map(|r| (r.start as u32, parse_item(src.get(r.clone()).unwrap_or(""))))
        .collect();
    assemble(prefix, items.iter().map(|(base, p)| (*base, p)))
}

/// Cuts a file into items (see the module documentation, step 2): the byte range of each item,
/// from its first token (its doc comment, or its keyword) to the next item's first token, or
/// the end of the text.
///
/// Tokens never span lines and an item starts at the start of a line, so only the first token
/// of each line is lexed here (the same cut as [`split_items`] over every token), and cutting
/// a piece of a file that starts at an item's start (or at the file's start) and ends at
/// another item's start (or the file's end) gives the same ranges as cutting the whole file:
/// the language server's edits are cut again only around the items they touch.
pub fn cut(src: &str) -> Vec<std::ops::Range<usize>> {
    use logos::Logos;
    // Each line's first token (unknown characters skipped, as the parser drops them) and
    // where it starts; `None` for a line with no token.
    let b = src.as_bytes();
    let mut lines: Vec<Option<(Token, usize)>> = Vec::new();
    let mut at = 0;
    loop {
        let end = memchr::memchr2(b'\n', b'\r', &b[at..]).map_or(b.len(), |i| at + i);
        let line = &src[at..end];
        let mut lexer = Token::lexer(line);
        let first = loop {
            match lexer.next() {
                Some(Ok(t)) => break Some((t, at + lexer.span().start)),
                Some(Err(_)) => continue,
                None => break None,
            }
        };
        lines.push(first);
        if end == b.len() {
            break;
        }
        at = if b[end] == b'\r' && b.get(end + 1) == Some(&b'\n') {
            end + 2
        } else {
            end + 1
        };
    }
    let mut starts = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        match lines[i] {
            Some((t, pos)) if t.is_item_keyword() => starts.push(pos),
            // A run of doc comments (blank lines between) starts an item only if an item
            // keyword begins the next line with a token.
            Some((Token::DocComment, pos)) => {
                let mut j = i + 1;
                while j < lines.len() && matches!(lines[j], None | Some((Token::DocComment, _))) {
                    j += 1;
                }
                if let Some(Some((t, _))) = lines.get(j) {
                    if t.is_item_keyword() {
                        starts.push(pos);
                        i = j;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    starts
        .iter()
        .enumerate()
        .map(|(n, &s)| s..starts.get(n + 1).copied().unwrap_or(src.len()))
        .collect()
}

/// [`cut`] over every token of the file ([`split_items`]): what [`cut`] must agree with.
#[cfg(test)]
pub(crate) fn cut_by_tokens(src: &str) -> Vec<std::ops::Range<usize>> {
    let tokens: Vec<TokenInfo> = lex(src)
        .into_iter()
        .filter(|t| t.kind != Token::Error)
        .collect();
    split_items(&tokens)
        .into_iter()
        .map(|r| {
            let start = tokens
                .get(r.start)
                .map_or(src.len(), |t| t.span.start as usize);
            let end = tokens
                .get(r.end)
                .map_or(src.len(), |t| t.span.start as usize);
            start..end.max(start)
        })
        .collect()
}

/// One item parsed on its own, from the text of one of its file's [`cut`] ranges: its node
/// and its syntax errors (lexical ones included) with spans relative to the start of that
/// text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ItemParse {
    pub node: ItemNode,
    pub errors: Vec<SyntaxError>,
}

/// Every identifier token of `text`, sorted, without repeats (a local of an imported name's
/// spelling counts: what the unused-import check reads).
pub fn idents(text: &str) -> Vec<String> {
    let all = lex(text);
    let mut names: Vec<&str> = all
        .iter()
        .filter(|t| t.kind == Token::Ident)
        .filter_map(|t| text.get(t.span.range()))
        .collect();
    names.sort_unstable();
    names.dedup();
    names.into_iter().map(str::to_string).collect()
}

/// The lexical errors of `tokens` (unknown characters, unterminated strings), spans as
/// the tokens have them.
fn lexical_errors(text: &str, tokens: &[TokenInfo]) -> Vec<SyntaxError> {
    let mut errors = Vec::new();
    for t in tokens {
        match t.kind {
            Token::Error => errors.push(SyntaxError {
                code: codes::UNKNOWN_CHAR,
                span: t.span,
                message: format!(
                    "unknown character `{}`",
                    text.get(t.span.range()).unwrap_or("?").escape_debug()
                ),
                label: "not part of the language".into(),
                help: Some("remove it; comments start with `//`".into()),
            }),
            Token::UnterminatedStr => errors.push(SyntaxError {
                code: codes::UNTERMINATED_STRING,
                span: t.span,
                message: "unterminated string literal".into(),
                label: "this string is never closed".into(),
                help: Some("add a closing `\"` before the end of the line".into()),
            }),
            _ => {}
        }
    }
    errors
}

/// A lexical error (unknown character, unterminated string) already explains its line; the
/// parser errors it causes on the same line would only be noise. Lines never cross items, so
/// this is decided within one item's (or the prefix's) text.
fn drop_explained(text: &str, errors: &mut Vec<SyntaxError>) {
    let lexical =
        |e: &SyntaxError| matches!(e.code, codes::UNKNOWN_CHAR | codes::UNTERMINATED_STRING);
    let lexical_lines: Vec<usize> = errors
        .iter()
        .filter(|e| lexical(e))
        .map(|e| line_of(text, e.span.start))
        .collect();
    if !lexical_lines.is_empty() {
        errors.retain(|e| lexical(e) || !lexical_lines.contains(&line_of(text, e.span.start)));
    }
}

/// The errors of the text before a file's first item (all of the file when it has none):
/// its lexical errors, and anything but comments there (E0007).
pub fn parse_prefix(text: &str) -> Vec<SyntaxError> {
    let all = lex(text);
    let mut errors = lexical_errors(text, &all);
    let garbage: Vec<&TokenInfo> = all
        .iter()
        .filter(|t| !matches!(t.kind, Token::Newline | Token::DocComment | Token::Error))
        .collect();
    if let (Some(a), Some(b)) = (garbage.first(), garbage.last()) {
        let found = text.get(a.span.range()).unwrap_or("");
        errors.push(SyntaxError {
            code: codes::EXPECTED_ITEM,
            span: Span::new(a.span.start, b.span.end),
            message: format!("expected an item, found `{}`", found.escape_debug()),
            label: "not the start of an item".into(),
            help: Some(
                "top-level items start with `import`, `const`, `param`, `axis`, `input`, `output`, \
                 `tensor`, `kernel`, `workload`, `channel`, `process`, `schedule` or `expect`"
                    .into(),
            ),
        });
    }
    drop_explained(text, &mut errors);
    errors
}

/// Parses the text of one item range of [`cut`] (see the module documentation, steps 3 and
/// 4): the text alone decides the result, whatever surrounds it in the file.
pub fn parse_item(text: &str) -> ItemParse {
    let all = lex(text);
    let mut errors = lexical_errors(text, &all);
    let tokens: Vec<TokenInfo> = all.into_iter().filter(|t| t.kind != Token::Error).collect();
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
    drop_explained(text, &mut errors);
    errors.sort_by_key(|e| (e.span.start, e.span.end));
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

/// The parse of a file from the errors of the text before its first item ([`parse_prefix`])
/// and the [`parse_item`] of each of its item ranges with the range's start: spans made
/// absolute, errors in source order.
pub fn assemble<'p>(
    prefix: Vec<SyntaxError>,
    items: impl IntoIterator<Item = (u32, &'p ItemParse)>,
) -> Parse {
    let mut errors = prefix;
    let mut nodes = Vec::new();
    for (base, p) in items {
        errors.extend(p.errors.iter().map(|e| shifted(e.clone(), base)));
        nodes.push(ItemNode {
            range: p.node.range.shift(base),
            item: p.node.item.clone(),
        });
    }
    errors.sort_by_key(|e| (e.span.start, e.span.end));
    Parse {
        file: SourceFile { items: nodes },
        errors,
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

#[cfg(test)]
mod cut_tests {
    use super::*;

    /// Every `.wsp` file of the repository's tests, examples and std, and each of them with
    /// lines that change the cut (keywords, doc comments, garbage, line endings) inserted at
    /// many places: the line-by-line cut is the token-by-token one.
    #[test]
    fn cut_agrees_with_the_token_cut() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for dir in ["tests/ui", "std", "examples", "compiler/syntax/tests/data"] {
            let mut stack = vec![root.join(dir)];
            while let Some(d) = stack.pop() {
                let Ok(rd) = std::fs::read_dir(&d) else {
                    continue;
                };
                for e in rd.flatten() {
                    let p = e.path();
                    if p.is_dir() {
                        stack.push(p);
                    } else if p.extension().is_some_and(|x| x == "wsp") {
                        files.push(std::fs::read_to_string(&p).unwrap_or_default());
                    }
                }
            }
        }
        assert!(files.len() > 20, "found {} files", files.len());
        let inserts = [
            "kernel k() {}\n",
            "/// doc\n",
            "/// doc\n\n",
            "////\n",
            "  workload",
            "@@ const N = 1\n",
            "\r",
            "\r\n",
            "kernelx\n",
            "\"kernel\n",
            "// kernel\n",
            "\u{FEFF}input X: f32[1]\n",
        ];
        let mut n = 0;
        for f in &files {
            assert_eq!(cut(f), cut_by_tokens(f));
            let lines: Vec<usize> = std::iter::once(0)
                .chain(f.match_indices('\n').map(|(i, _)| i + 1))
                .collect();
            for (k, &at) in lines.iter().enumerate().step_by(7) {
                let ins = inserts[k % inserts.len()];
                let mut g = f.clone();
                g.insert_str(at, ins);
                assert_eq!(cut(&g), cut_by_tokens(&g), "{ins:?} at {at}");
                n += 1;
            }
        }
        assert!(n > 100);
    }
}
