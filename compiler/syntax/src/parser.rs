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
//! ([`committed`]) instead of ending quietly before it.

use chumsky::error::LabelError;
use chumsky::extra::SimpleState;
use chumsky::input::{InputRef, MapExtra, MappedInput};
use chumsky::pratt::{infix, left, prefix};
use chumsky::prelude::*;
use chumsky::util::MaybeRef;
use chumsky::DefaultExpected;

use crate::ast::*;
use crate::lexer::{lex, Token, TokenInfo};
use crate::{Parse, Span, SyntaxError};

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
pub fn parse(src: &str) -> Parse {
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
    let significant: Vec<TokenInfo> = tokens
        .iter()
        .copied()
        .filter(|t| t.kind != Token::Newline)
        .collect();

    // Each item's tokens, with insignificant newlines and doc comments removed and spans made
    // relative to the item's start: the pairs chumsky parses.
    let mut prepared = Vec::new();
    for range in split_items(&tokens, src, &mut errors) {
        let slice = &tokens[range];
        let Some(first) = slice.first() else { continue };
        let last = slice
            .iter()
            .rev()
            .find(|t| t.kind != Token::Newline)
            .unwrap_or(first);
        let base = first.span.start;
        let abs = Span::new(base, last.span.end.max(base));
        let significant = significant_newlines(slice);
        let docs = collect_docs(src, base, &significant);
        let pairs: Vec<Pair> = significant
            .iter()
            .map(|t| {
                let s = t.span.start.saturating_sub(base) as usize;
                let e = t.span.end.saturating_sub(base) as usize;
                (t.kind, CSpan::from(s..e.max(s)))
            })
            .collect();
        prepared.push((base, abs, docs, pairs));
    }

    let parser = item_parser();
    let mut items = Vec::with_capacity(prepared.len());
    for (base, abs, docs, pairs) in prepared.iter() {
        let base = *base;
        let text = src.get(base as usize..).unwrap_or("");
        let eoi = pairs.last().map_or(0, |p| p.1.end);
        let kind = match nesting(pairs) {
            Err(e) => {
                errors.push(shifted(e, base));
                ItemKind::Error
            }
            Ok(depth) => {
                let mut state = SimpleState(St {
                    text,
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
                        .map(|e| shifted(to_syntax_error(e, text, pairs), base)),
                );
                out.unwrap_or(ItemKind::Error)
            }
        };
        let start = pairs.first().map_or(0, |p| p.1.start);
        items.push(ItemNode {
            range: *abs,
            item: Item {
                docs: docs.clone(),
                kind,
                span: Span::new(0, eoi.max(start) as u32),
            },
        });
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
        file: SourceFile { items },
        errors,
        tokens: significant,
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

/// The item's nesting depth (open brackets plus runs of prefix operators). Nesting deeper than
/// [`MAX_DEPTH`] is an error before parsing: the item is not parsed at all, so deep input never
/// reaches the parser's recursion.
fn nesting(pairs: &[Pair]) -> Result<u32, SyntaxError> {
    let mut max = 0;
    let mut depth = 0u32;
    let mut unary = 0u32;
    // Operators chained at this bracket level and the levels around it; the count each open
    // level had when it opened.
    let mut chain = 0u32;
    let mut outer: Vec<u32> = Vec::new();
    let mut prev: Option<Token> = None;
    for (t, s) in pairs {
        let after_operand = prev.is_some_and(|p| {
            matches!(
                p,
                Token::Ident
                    | Token::Int
                    | Token::Float
                    | Token::Str
                    | Token::True
                    | Token::False
                    | Token::RParen
                    | Token::RBracket
                    | Token::Out
                    | Token::InOut
            )
        });
        match t {
            Token::LParen | Token::LBracket | Token::LBrace => {
                // A call or an index right after an operand (`a[0][0]`, `f(1)(1)`) is a postfix
                // operator of this level's chain: the tree nests once per link.
                if after_operand && *t != Token::LBrace {
                    chain += 1;
                    if chain > MAX_CHAIN {
                        let m = format!("an expression chains more than {MAX_CHAIN} operators");
                        return Err(too_deep(*s, m, "too long a chain"));
                    }
                }
                depth += 1;
                outer.push(chain);
            }
            Token::RParen | Token::RBracket | Token::RBrace => {
                depth = depth.saturating_sub(1);
                chain = outer.pop().unwrap_or(0);
            }
            Token::Minus | Token::Bang if !after_operand => unary += 1,
            Token::Ident | Token::Int | Token::Float | Token::Str | Token::True | Token::False => {
                unary = 0
            }
            t if is_binop_token(*t) || matches!(t, Token::Dot | Token::DotDot) => {
                chain += 1;
                if chain > MAX_CHAIN {
                    let m = format!("an expression chains more than {MAX_CHAIN} operators");
                    return Err(too_deep(*s, m, "too long a chain"));
                }
            }
            // A new expression at this level: an argument, an element, a statement.
            Token::Comma
            | Token::Semi
            | Token::Newline
            | Token::Colon
            | Token::Assign
            | Token::PlusAssign
            | Token::MinusAssign
            | Token::StarAssign
            | Token::SlashAssign => chain = outer.last().copied().unwrap_or(0),
            _ => {}
        }
        max = max.max(depth + unary);
        if depth + unary > MAX_DEPTH {
            let m = format!("nesting deeper than {MAX_DEPTH} levels");
            return Err(too_deep(*s, m, "too deeply nested"));
        }
        prev = Some(*t);
    }
    Ok(max)
}

/// E0006 at the token at `s`.
fn too_deep(s: CSpan, message: String, label: &str) -> SyntaxError {
    SyntaxError {
        code: codes::TOO_DEEP,
        span: to_span(s),
        message,
        label: label.into(),
        help: Some("split the expression with `let` bindings".into()),
    }
}

/// The item's doc comment: the `///` lines between the item's start and its first token.
fn collect_docs(src: &str, base: u32, significant: &[TokenInfo]) -> Option<String> {
    let first = significant.first()?;
    let region = src.get(base as usize..first.span.start as usize)?;
    let lines: Vec<&str> = region
        .lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("///"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect();
    if lines.is_empty() {
        None
    } else {
        Some(lines.join("\n"))
    }
}

fn line_of(src: &str, offset: u32) -> usize {
    let end = (offset as usize).min(src.len());
    src.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
}

/// Splits the token stream (newlines included) into item token ranges.
/// Top-level tokens before the first item or between items that cannot start an item
/// are reported once per run (E0007) and dropped.
fn split_items(
    tokens: &[TokenInfo],
    src: &str,
    errors: &mut Vec<SyntaxError>,
) -> Vec<std::ops::Range<usize>> {
    let mut starts = Vec::new();
    let mut line_start = true;
    let mut i = 0;
    while i < tokens.len() {
        let k = tokens[i].kind;
        if k == Token::Newline {
            line_start = true;
            i += 1;
            continue;
        }
        if line_start && (k.is_item_keyword() || k == Token::DocComment) {
            // A doc-comment run starts an item only if an item keyword follows it.
            let mut j = i;
            while j < tokens.len() && matches!(tokens[j].kind, Token::DocComment | Token::Newline) {
                j += 1;
            }
            if j < tokens.len() && tokens[j].kind.is_item_keyword() {
                let at_line_start = j == i
                    || tokens[..j]
                        .iter()
                        .rev()
                        .find(|t| t.kind != Token::DocComment)
                        .is_none_or(|t| t.kind == Token::Newline);
                if at_line_start {
                    starts.push(i);
                    i = j + 1;
                    line_start = false;
                    continue;
                }
            }
        }
        line_start = false;
        i += 1;
    }

    // Leading garbage before the first item.
    let first = starts.first().copied().unwrap_or(tokens.len());
    let garbage: Vec<&TokenInfo> = tokens[..first]
        .iter()
        .filter(|t| !matches!(t.kind, Token::Newline | Token::DocComment))
        .collect();
    if let (Some(a), Some(b)) = (garbage.first(), garbage.last()) {
        let text = src.get(a.span.range()).unwrap_or("");
        errors.push(SyntaxError {
            code: codes::EXPECTED_ITEM,
            span: Span::new(a.span.start, b.span.end),
            message: format!("expected an item, found `{}`", text.escape_debug()),
            label: "not the start of an item".into(),
            help: Some(
                "top-level items start with `import`, `const`, `param`, `axis`, `input`, `output`, \
                 `tensor`, `kernel`, `workload`, `channel`, `process`, `schedule` or `expect`"
                    .into(),
            ),
        });
    }

    let mut out = Vec::with_capacity(starts.len());
    for (n, &s) in starts.iter().enumerate() {
        let e = starts.get(n + 1).copied().unwrap_or(tokens.len());
        out.push(s..e);
    }
    out
}

fn is_binop_token(t: Token) -> bool {
    matches!(
        t,
        Token::Plus
            | Token::Minus
            | Token::Star
            | Token::Slash
            | Token::Percent
            | Token::EqEq
            | Token::NotEq
            | Token::Lt
            | Token::Le
            | Token::Gt
            | Token::Ge
            | Token::AndAnd
            | Token::OrOr
    )
}

/// Keywords that can only begin a statement, never continue an expression.
fn starts_statement(t: Token) -> bool {
    matches!(
        t,
        Token::Let | Token::Var | Token::For | Token::When | Token::Send | Token::Consume
    )
}

/// Applies the newline rules: newlines inside `()`/`[]` are insignificant; a line that begins
/// with `.` or a binary operator, or that follows a line ending in a binary operator, `,`, `=`,
/// `(` or `[`, continues the previous line; blank lines collapse; doc comments inside an item
/// are trivia.
fn significant_newlines(slice: &[TokenInfo]) -> Vec<TokenInfo> {
    let mut out: Vec<TokenInfo> = Vec::with_capacity(slice.len());
    let mut stack: Vec<Token> = Vec::new();
    let toks: Vec<TokenInfo> = slice
        .iter()
        .copied()
        .filter(|t| t.kind != Token::DocComment)
        .collect();
    for (i, t) in toks.iter().enumerate() {
        match t.kind {
            Token::LParen | Token::LBracket | Token::LBrace => stack.push(t.kind),
            Token::RParen | Token::RBracket | Token::RBrace => {
                // Pop to the matching opener if present (tolerates mismatches).
                let want = match t.kind {
                    Token::RParen => Token::LParen,
                    Token::RBracket => Token::LBracket,
                    _ => Token::LBrace,
                };
                if let Some(p) = stack.iter().rposition(|&k| k == want) {
                    stack.truncate(p);
                }
            }
            Token::Newline => {
                if matches!(stack.last(), Some(Token::LParen | Token::LBracket)) {
                    // A line that starts a statement cannot continue an expression: the `(`/`[`
                    // before it is unclosed. Keep the newline so that statement recovery
                    // resumes here instead of swallowing the rest of the block.
                    let next = toks[i + 1..]
                        .iter()
                        .map(|t| t.kind)
                        .find(|&k| k != Token::Newline);
                    if !next.is_some_and(starts_statement) {
                        continue;
                    }
                    let keep = stack
                        .iter()
                        .rposition(|&k| k == Token::LBrace)
                        .map_or(0, |p| p + 1);
                    stack.truncate(keep);
                }
                let prev = out.last().map(|p| p.kind);
                if matches!(
                    prev,
                    None | Some(Token::Newline | Token::LBrace | Token::Semi)
                ) {
                    continue;
                }
                if let Some(p) = prev {
                    if is_binop_token(p)
                        || matches!(
                            p,
                            Token::Comma
                                | Token::Assign
                                | Token::PlusAssign
                                | Token::MinusAssign
                                | Token::StarAssign
                                | Token::SlashAssign
                                | Token::Dot
                        )
                    {
                        continue;
                    }
                }
                let next = toks[i + 1..].iter().find(|n| n.kind != Token::Newline);
                if let Some(n) = next {
                    if n.kind == Token::Dot || is_binop_token(n.kind) {
                        continue;
                    }
                }
            }
            _ => {}
        }
        out.push(*t);
    }
    while out.last().is_some_and(|t| t.kind == Token::Newline) {
        out.pop();
    }
    out
}

fn describe(t: Token) -> &'static str {
    use Token::*;
    match t {
        DocComment => "a doc comment",
        Newline => "end of line",
        Ident => "an identifier",
        Int => "an integer",
        Float => "a float",
        Str | UnterminatedStr => "a string",
        LParen => "`(`",
        RParen => "`)`",
        LBracket => "`[`",
        RBracket => "`]`",
        LBrace => "`{`",
        RBrace => "`}`",
        Comma => "`,`",
        Semi => "`;`",
        Colon => "`:`",
        DotDot => "`..`",
        Dot => "`.`",
        Assign => "`=`",
        PlusAssign => "`+=`",
        MinusAssign => "`-=`",
        StarAssign => "`*=`",
        SlashAssign => "`/=`",
        EqEq => "`==`",
        NotEq => "`!=`",
        Le => "`<=`",
        Ge => "`>=`",
        Lt => "`<`",
        Gt => "`>`",
        AndAnd => "`&&`",
        OrOr => "`||`",
        Bang => "`!`",
        Plus => "`+`",
        Minus => "`-`",
        Star => "`*`",
        Slash => "`/`",
        Percent => "`%`",
        Error => "an unknown character",
        _ => "a keyword",
    }
}

// ---- the chumsky grammar ---------------------------------------------------------------

/// Spans inside the grammar: item-relative byte offsets.
type CSpan = SimpleSpan;
/// One token of an item with its item-relative span.
type Pair = (Token, CSpan);
/// The grammar's input: an item's `(Token, span)` pairs, split into tokens and spans.
type In<'a> = MappedInput<'a, Token, CSpan, &'a [Pair]>;
/// Errors, per-item state and context (the span of the innermost open delimiter).
type Ex<'a> = extra::Full<PErr, SimpleState<St<'a>>, CSpan>;
type Inp<'a, 'p> = InputRef<'a, 'p, In<'a>, Ex<'a>>;
type Mx<'a, 'b> = MapExtra<'a, 'b, In<'a>, Ex<'a>>;

/// Per-item parser state.
struct St<'a> {
    /// The item's text: item-relative spans index it directly.
    text: &'a str,
    /// End offset of the item's last token (the end-of-input span).
    eoi: usize,
    /// Furthest position at which one of our expectations failed. A construct that stopped
    /// before it did not end cleanly: something it began (a call's `(`, a `when`'s `else`)
    /// failed, so the construct fails too (see [`committed`]).
    hard_at: Option<usize>,
    /// Position of the failure being recovered from (set by [`note_failure`]).
    fail_at: usize,
}

/// The grammar's error type. chumsky's own `Rich` errors merge the expected sets of every
/// alternative tried at a position (and reorder them) and allocate for every failed
/// alternative; this type carries the project's own `SyntaxError` (code, wording) when one of
/// our expectations failed, and is free to construct when a chumsky primitive fails.
#[derive(Clone, Debug)]
struct PErr {
    /// Where the parser failed (item-relative offset of the offending token).
    at: usize,
    span: CSpan,
    msg: Option<Box<SyntaxError>>,
}

impl PErr {
    /// A failure at `span` with no message of ours (a primitive failure, or a lookahead).
    fn bare(span: CSpan) -> PErr {
        PErr {
            at: span.start,
            span,
            msg: None,
        }
    }
}

impl<'a> chumsky::error::Error<'a, In<'a>> for PErr {
    fn merge(self, other: Self) -> Self {
        // Our message beats a bare primitive failure; between two of ours, the first wins.
        if self.msg.is_none() && other.msg.is_some() {
            other
        } else {
            self
        }
    }
}

impl<'a> LabelError<'a, In<'a>, DefaultExpected<'a, Token>> for PErr {
    fn expected_found<E: IntoIterator<Item = DefaultExpected<'a, Token>>>(
        _expected: E,
        _found: Option<MaybeRef<'a, Token>>,
        span: CSpan,
    ) -> Self {
        PErr::bare(span)
    }
}

fn to_span(s: CSpan) -> Span {
    Span::new(s.start as u32, s.end.max(s.start) as u32)
}

/// The next token and its span, not consumed (at the end: `None` and the end span).
fn peek_tok(inp: &mut Inp<'_, '_>) -> (Option<Token>, CSpan) {
    let cp = inp.save();
    let t = inp.next();
    let span = inp.span_since(cp.cursor());
    inp.rewind(cp);
    (t, span)
}

fn found(st: &St, t: Option<Token>, span: CSpan) -> String {
    let text = st.text.get(span.start..span.end).unwrap_or("");
    match t {
        None => "end of item".into(),
        Some(Token::Newline) => "end of line".into(),
        Some(Token::Ident) => format!("`{text}`"),
        Some(k) if k.is_keyword() => format!("keyword `{text}`"),
        Some(k) => describe(k).into(),
    }
}

fn note_hard(st: &mut St, at: usize) {
    st.hard_at = Some(st.hard_at.map_or(at, |h| h.max(at)));
}

/// "expected X, found Y" at the next token (E0001).
fn unexpected_err(inp: &mut Inp<'_, '_>, expected: &str) -> PErr {
    let (t, span) = peek_tok(inp);
    let st: &mut St = inp.state();
    let message = format!("expected {expected}, found {}", found(st, t, span));
    note_hard(st, span.start);
    PErr {
        at: span.start,
        span,
        msg: Some(Box::new(SyntaxError {
            code: codes::UNEXPECTED,
            span: to_span(span),
            message,
            label: format!("expected {expected}"),
            help: None,
        })),
    }
}

/// Always fails with "expected `expected`, found ...".
fn fail<'a, O>(expected: &'static str) -> impl Parser<'a, In<'a>, O, Ex<'a>> + Clone {
    custom(move |inp: &mut Inp<'a, '_>| Err(unexpected_err(inp, expected)))
}

/// One token of kind `k`, giving its span; failing quietly (for optional parts).
fn tok<'a>(k: Token) -> impl Parser<'a, In<'a>, CSpan, Ex<'a>> + Clone {
    just(k).map_with(|_, e| e.span())
}

/// One token of kind `k` or the error "expected `what`, found ...".
fn expect<'a>(k: Token, what: &'static str) -> impl Parser<'a, In<'a>, CSpan, Ex<'a>> + Clone {
    tok(k).or(fail(what))
}

/// Succeeds without consuming unless `stop` holds for the next token (`None`: the end).
fn unless_next<'a>(
    stop: impl Fn(Option<Token>) -> bool + Clone + 'a,
) -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    custom(move |inp: &mut Inp<'a, '_>| {
        let (t, span) = peek_tok(inp);
        if stop(t) {
            Err(PErr::bare(span))
        } else {
            Ok(())
        }
    })
}

/// Succeeds without consuming when the next token is not `k` (the end counts as not `k`).
fn not_at<'a>(k: Token) -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    unless_next(move |t| t == Some(k))
}

/// Succeeds without consuming when the next token is neither `k` nor the end.
fn not_at_or_end<'a>(k: Token) -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    unless_next(move |t| t.is_none() || t == Some(k))
}

/// Fails when one of our expectations failed at or after the next token: the construct just
/// parsed began something (a call, an `else`) that failed, and must not end quietly before it.
fn committed<'a>() -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    custom(|inp: &mut Inp<'a, '_>| {
        let (_, span) = peek_tok(inp);
        check_committed(inp, span)
    })
}

/// `Err` when one of our expectations failed at or after `span` (see [`committed`]).
fn check_committed(inp: &mut Inp<'_, '_>, span: CSpan) -> Result<(), PErr> {
    if inp.state().hard_at.is_some_and(|h| h >= span.start) {
        Err(PErr::bare(span))
    } else {
        Ok(())
    }
}

/// The closer `k` of the delimiter whose span is the context. When the item, the line or the
/// enclosing block ends first, the opener is what is wrong: "unclosed `(`" at the opener (E0002).
fn close<'a>(k: Token, what: &'static str) -> impl Parser<'a, In<'a>, CSpan, Ex<'a>> + Clone {
    custom(move |inp: &mut Inp<'a, '_>| {
        let open: CSpan = *inp.ctx();
        let (t, span) = peek_tok(inp);
        if t == Some(k) {
            inp.skip();
            return Ok(span);
        }
        let ends_here = match t {
            None => true,
            Some(Token::Newline | Token::RBrace | Token::Semi) => k != Token::RBrace,
            // An unexpected token on a later line than the opener: the line break was taken
            // as insignificant only because the opener was never closed.
            Some(_) => {
                k != Token::RBrace
                    && inp
                        .state()
                        .text
                        .get(open.end..span.start)
                        .is_some_and(|g| g.contains('\n'))
            }
        };
        if !ends_here {
            return Err(unexpected_err(inp, describe(k)));
        }
        note_hard(inp.state(), span.start);
        Err(PErr {
            at: span.start,
            span: open,
            msg: Some(Box::new(unclosed(to_span(open), k, what))),
        })
    })
}

fn unclosed(open: Span, k: Token, what: &str) -> SyntaxError {
    SyntaxError {
        code: codes::UNCLOSED,
        span: open,
        message: format!("unclosed {what}"),
        label: format!("this {what} is never closed"),
        help: Some(format!("add the matching {}", describe(k))),
    }
}

/// `open inner close`, giving the inner output and the span from opener to closer. The
/// opener's span is the context of `inner` and of the closer (for "unclosed" errors).
fn delim<'a, O, P>(
    open: impl Parser<'a, In<'a>, CSpan, Ex<'a>> + Clone,
    inner: P,
    k: Token,
    what: &'static str,
) -> impl Parser<'a, In<'a>, (O, CSpan), Ex<'a>> + Clone
where
    O: 'a,
    P: Parser<'a, In<'a>, O, Ex<'a>> + Clone,
{
    open.then_with_ctx(inner.then(close(k, what)))
        .map(|(o, (x, c)): (CSpan, (O, CSpan))| (x, CSpan::from(o.start..c.end.max(o.start))))
}

/// Remembers where `p` failed, for the recovery strategy that follows.
fn note_failure<'a, O, P>(p: P) -> impl Parser<'a, In<'a>, O, Ex<'a>> + Clone
where
    P: Parser<'a, In<'a>, O, Ex<'a>> + Clone,
{
    p.map_err_with_state(|e: PErr, _, st: &mut SimpleState<St<'a>>| {
        st.fail_at = e.at;
        e
    })
}

/// Skips to the end of the current statement at bracket depth 0: before a newline, `;`, or a
/// `}` that closes the enclosing block. Whether it skipped anything.
fn skip_to_statement_end(inp: &mut Inp<'_, '_>) -> bool {
    let mut depth = 0i32;
    let mut moved = false;
    while let Some(k) = inp.peek() {
        match k {
            Token::Newline | Token::Semi if depth <= 0 => break,
            Token::RBrace if depth <= 0 => break,
            Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
            Token::RParen | Token::RBracket | Token::RBrace => depth -= 1,
            _ => {}
        }
        inp.skip();
        moved = true;
    }
    moved
}

/// Statement recovery: skips to the failure point, then to the end of its line at the current
/// bracket depth, stopping before a `}` that closes the enclosing block. Always makes progress.
fn sync_statement<'a>() -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    custom(|inp: &mut Inp<'a, '_>| {
        let fail_at = inp.state().fail_at;
        let mut moved = false;
        loop {
            let (t, span) = peek_tok(inp);
            if t.is_none() || span.start >= fail_at {
                break;
            }
            inp.skip();
            moved = true;
        }
        moved |= skip_to_statement_end(inp);
        if !moved && inp.peek().is_some() {
            inp.skip();
        }
        Ok(())
    })
}

/// List-element recovery: skips to the failure point, then to the next `,` or the closer
/// `close` at the current depth (consuming neither). Gives the failure offset. Fails when the
/// element failed at the end of the item: the enclosing construct fails with it.
fn sync_list<'a>(close: Token) -> impl Parser<'a, In<'a>, usize, Ex<'a>> + Clone {
    custom(move |inp: &mut Inp<'a, '_>| {
        let (fail_at, eoi) = (inp.state().fail_at, inp.state().eoi);
        if fail_at >= eoi {
            let (_, span) = peek_tok(inp);
            return Err(PErr::bare(span));
        }
        loop {
            let (t, span) = peek_tok(inp);
            if t.is_none() || span.start >= fail_at {
                break;
            }
            inp.skip();
        }
        let mut depth = 0i32;
        while let Some(k) = inp.peek() {
            match k {
                Token::Comma if depth <= 0 => break,
                k if k == close && depth <= 0 => break,
                // A list never runs past the end of the enclosing block.
                Token::RBrace if depth <= 0 => break,
                Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
                Token::RParen | Token::RBracket | Token::RBrace => depth -= 1,
                _ => {}
            }
            inp.skip();
        }
        Ok(fail_at)
    })
}

/// Newlines and `;` (between statements, inside braces of lists).
fn separators<'a>() -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    one_of([Token::Newline, Token::Semi]).repeated()
}

/// A name: an identifier, or `out`/`inout`, which are keywords only in the direction position
/// of a kernel parameter (the language's own examples name tiles `out`).
fn name<'a>() -> impl Parser<'a, In<'a>, Ident, Ex<'a>> + Clone {
    one_of([Token::Ident, Token::Out, Token::InOut]).map_with(|_, e: &mut Mx<'a, '_>| {
        let span: CSpan = e.span();
        let st: &mut St = e.state();
        Ident {
            name: st.text.get(span.start..span.end).unwrap_or("").to_string(),
            span: to_span(span),
        }
    })
}

/// A name or the error "expected `what`, found ...".
fn name_or<'a>(what: &'static str) -> impl Parser<'a, In<'a>, Ident, Ex<'a>> + Clone {
    name().or(fail(what))
}

/// The identifier `word` (a contextual keyword such as `pipe`, `cube`, `consumes`).
fn word<'a>(word: &'static str) -> impl Parser<'a, In<'a>, CSpan, Ex<'a>> + Clone {
    just(Token::Ident).map_with(|_, e| e.span()).try_map_with(
        move |span: CSpan, e: &mut Mx<'a, '_>| {
            let st: &mut St = e.state();
            if st.text.get(span.start..span.end) == Some(word) {
                Ok(span)
            } else {
                Err(PErr::bare(span))
            }
        },
    )
}

fn bad_number(span: CSpan, message: &str) -> PErr {
    PErr {
        at: span.start,
        span,
        msg: Some(Box::new(SyntaxError {
            code: codes::BAD_NUMBER,
            span: to_span(span),
            message: message.into(),
            label: "invalid number".into(),
            help: Some(
                "integers fit in 64 bits (`42`, `0x2a`, `1_024`); floats are finite (`1.0`, `1e-6`)"
                    .into(),
            ),
        })),
    }
}

/// The unescaped value of a string token's text.
fn unescape(raw: &str) -> String {
    let inner = raw.strip_prefix('"').unwrap_or(raw);
    let inner = inner.strip_suffix('"').unwrap_or(inner);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('0') => out.push('\0'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A string literal (a value and its span).
fn string<'a>() -> impl Parser<'a, In<'a>, StrLit, Ex<'a>> + Clone {
    one_of([Token::Str, Token::UnterminatedStr]).map_with(|_, e: &mut Mx<'a, '_>| {
        let span: CSpan = e.span();
        let st: &mut St = e.state();
        StrLit {
            value: unescape(st.text.get(span.start..span.end).unwrap_or("")),
            span: to_span(span),
        }
    })
}

fn expr_at(kind: ExprKind, span: Span) -> Expr {
    Expr { kind, span }
}

/// A postfix operation: `.field`, `(args)`, `[indices]`.
enum Post {
    Field(Ident),
    Call(Vec<Arg>, CSpan),
    Index(Vec<Expr>, CSpan),
}

fn binop_fold(lhs: Expr, op: BinOp, rhs: Expr, _: &mut Mx<'_, '_>) -> Expr {
    let span = lhs.span.cover(rhs.span);
    Expr {
        kind: ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        span,
    }
}

/// Whether a range's end is omitted (`a..` before `,`, `]`, `)`, `{`, a line end or the end).
fn range_end_omitted<'a>() -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    custom(|inp: &mut Inp<'a, '_>| {
        let (t, span) = peek_tok(inp);
        match t {
            None
            | Some(
                Token::Comma
                | Token::RBracket
                | Token::RParen
                | Token::LBrace
                | Token::Newline
                | Token::Semi,
            ) => Ok(()),
            _ => Err(PErr::bare(span)),
        }
    })
}

type Boxed<'a, O> = chumsky::Boxed<'a, 'a, In<'a>, O, Ex<'a>>;

/// The expression parsers: `expr` (ranges included) and `binary` (no ranges: type dims and
/// range ends).
struct ExprParsers<'a> {
    expr: Boxed<'a, Expr>,
    binary: Boxed<'a, Expr>,
    args_paren: Boxed<'a, Vec<Arg>>,
    args_bracket: Boxed<'a, Vec<Arg>>,
}

/// Call arguments `a, name: b` up to `close` (not consumed), recovering per argument: a failed
/// argument becomes an `Error` expression and parsing resumes at the next `,` or the closer.
fn args<'a>(expr: Boxed<'a, Expr>, close: Token) -> Boxed<'a, Vec<Arg>> {
    let value = note_failure(expr.then_ignore(committed())).recover_with(via_parser(
        sync_list(close).map_with(|fail_at, e| {
            let end = e.span().end.max(fail_at);
            expr_at(ExprKind::Error, Span::new(fail_at as u32, end as u32))
        }),
    ));
    let arg = not_at_or_end(close)
        .ignore_then(
            // `name:` (looked at before building the name, which most arguments lack).
            one_of([Token::Ident, Token::Out, Token::InOut])
                .then(just(Token::Colon))
                .rewind()
                .ignore_then(name())
                .then_ignore(just(Token::Colon))
                .or_not(),
        )
        .then(value)
        .map_with(|(name, value): (Option<Ident>, Expr), e| {
            let start = e.span().start as u32;
            let end = value.span.end.max(start);
            Arg {
                name,
                value,
                span: Span::new(start, end),
            }
        });
    arg.separated_by(just(Token::Comma))
        .allow_trailing()
        .collect::<Vec<_>>()
        .boxed()
}

/// A comma-separated list of expressions up to `close` (not consumed), with `:` full slices
/// when `slices`. Elements that fail become `Error` expressions; parsing resumes at the next
/// `,`. Also tells whether the list ends with a comma (`(a,)` is a one-element tuple).
fn list<'a>(expr: Boxed<'a, Expr>, close: Token, slices: bool) -> Boxed<'a, (Vec<Expr>, bool)> {
    let value = note_failure(expr.then_ignore(committed())).recover_with(via_parser(
        sync_list(close).map_with(|_, e| {
            let s = e.span();
            expr_at(ExprKind::Error, to_span(s))
        }),
    ));
    let full_slice = just(Token::Colon)
        .filter(move |_| slices)
        .map_with(|_, e| expr_at(ExprKind::FullSlice, to_span(e.span())));
    not_at_or_end(close)
        .ignore_then(full_slice.or(value))
        .separated_by(just(Token::Comma))
        .collect::<Vec<_>>()
        .then(just(Token::Comma).or_not().map(|c| c.is_some()))
        .boxed()
}

fn expressions<'a>() -> ExprParsers<'a> {
    // `recursive` (not `Recursive::declare` + `define`): the grammar refers to itself through a
    // weak reference, so dropping it frees it. A declared parser holds itself strongly and
    // leaks the whole grammar on every parse (LeakSanitizer in the fuzz target finds it).
    let mut parts = None;
    let expr = recursive(|expr| {
        let expr_b = expr.clone().boxed();

        let args_paren = args(expr_b.clone(), Token::RParen);
        let args_bracket = args(expr_b.clone(), Token::RBracket);
        let list_paren = list(expr_b.clone(), Token::RParen, false);
        let list_bracket = list(expr_b.clone(), Token::RBracket, false);
        let list_index = list(expr_b.clone(), Token::RBracket, true);

        let int = just(Token::Int).map_with(|_, e: &mut Mx<'a, '_>| {
            let span: CSpan = e.span();
            let st: &mut St = e.state();
            let text = st
                .text
                .get(span.start..span.end)
                .unwrap_or("")
                .replace('_', "");
            let parsed =
                if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
                    u64::from_str_radix(hex, 16)
                } else {
                    text.parse::<u64>()
                };
            match parsed {
                Ok(v) => expr_at(ExprKind::Int(v), to_span(span)),
                Err(_) => {
                    e.emit(bad_number(
                        span,
                        "integer literal is out of range or malformed",
                    ));
                    expr_at(ExprKind::Error, to_span(span))
                }
            }
        });
        let float = just(Token::Float).map_with(|_, e: &mut Mx<'a, '_>| {
            let span: CSpan = e.span();
            let st: &mut St = e.state();
            let text = st
                .text
                .get(span.start..span.end)
                .unwrap_or("")
                .replace('_', "");
            match text.parse::<f64>() {
                Ok(v) if v.is_finite() => expr_at(ExprKind::Float(FloatLit(v)), to_span(span)),
                _ => {
                    e.emit(bad_number(
                        span,
                        "float literal is out of range or malformed",
                    ));
                    expr_at(ExprKind::Error, to_span(span))
                }
            }
        });
        let string_e = string().map(|s| expr_at(ExprKind::Str(s.value), s.span));
        let boolean = select! { Token::True => true, Token::False => false }
            .map_with(|b, e| expr_at(ExprKind::Bool(b), to_span(e.span())));
        let name_e = name().map(|id| {
            let span = id.span;
            expr_at(ExprKind::Name(id), span)
        });
        let paren = delim(tok(Token::LParen), list_paren, Token::RParen, "`(`").map(
            |((mut items, trailing), span): ((Vec<Expr>, bool), CSpan)| {
                if items.len() == 1 && !trailing {
                    let mut inner = items.remove(0);
                    inner.span = to_span(span);
                    inner
                } else {
                    expr_at(ExprKind::Tuple(items), to_span(span))
                }
            },
        );
        let bracket = delim(tok(Token::LBracket), list_bracket, Token::RBracket, "`[`")
            .map(|((items, _), span)| expr_at(ExprKind::List(items), to_span(span)));
        let atom = choice((
            int,
            float,
            string_e,
            boolean,
            name_e,
            paren,
            bracket,
            fail("an expression"),
        ));

        let post = choice((
            just(Token::Dot)
                .ignore_then(name_or("a name after `.`"))
                .map(Post::Field),
            delim(tok(Token::LParen), args_paren.clone(), Token::RParen, "`(`")
                .map(|(a, s)| Post::Call(a, s)),
            delim(tok(Token::LBracket), list_index, Token::RBracket, "`[`")
                .map(|((l, _), s)| Post::Index(l, s)),
        ));
        let postfix = atom.foldl(post.repeated(), |e: Expr, p| match p {
            Post::Field(field) => {
                let span = Span::new(e.span.start, field.span.end.max(e.span.start));
                expr_at(
                    ExprKind::Field {
                        base: Box::new(e),
                        field,
                    },
                    span,
                )
            }
            Post::Call(args, s) => {
                let span = Span::new(e.span.start, (s.end as u32).max(e.span.start));
                // `k[coords](args)` is a task call.
                let (callee, coords) = match e.kind {
                    ExprKind::Index { base, indices } => (base, Some(indices)),
                    other => (Box::new(expr_at(other, e.span)), None),
                };
                expr_at(
                    ExprKind::Call {
                        callee,
                        coords,
                        args,
                    },
                    span,
                )
            }
            Post::Index(indices, s) => {
                let span = Span::new(e.span.start, (s.end as u32).max(e.span.start));
                expr_at(
                    ExprKind::Index {
                        base: Box::new(e),
                        indices,
                    },
                    span,
                )
            }
        });

        let binary = postfix.pratt((
        prefix(
            7,
            select! { Token::Minus => UnOp::Neg, Token::Bang => UnOp::Not }
                .map_with(|op, e| (op, e.span())),
            |(op, s): (UnOp, CSpan), rhs: Expr, _: &mut Mx<'a, '_>| {
                let span = Span::new(s.start as u32, rhs.span.end.max(s.start as u32));
                expr_at(
                    ExprKind::Unary {
                        op,
                        expr: Box::new(rhs),
                    },
                    span,
                )
            },
        ),
        infix(
            left(6),
            select! { Token::Star => BinOp::Mul, Token::Slash => BinOp::Div, Token::Percent => BinOp::Rem },
            binop_fold,
        ),
        infix(
            left(5),
            select! { Token::Plus => BinOp::Add, Token::Minus => BinOp::Sub },
            binop_fold,
        ),
        infix(
            left(4),
            select! {
                Token::EqEq => BinOp::Eq, Token::NotEq => BinOp::Ne, Token::Lt => BinOp::Lt,
                Token::Le => BinOp::Le, Token::Gt => BinOp::Gt, Token::Ge => BinOp::Ge,
            },
            binop_fold,
        ),
        infix(left(3), just(Token::AndAnd).to(BinOp::And), binop_fold),
        infix(left(2), just(Token::OrOr).to(BinOp::Or), binop_fold),
    ))
    .boxed();

        // Ranges bind loosest: `a..b`, `..b`, `a..`, `..`.
        let range_end = range_end_omitted().to(None).or(binary.clone().map(Some));
        let prefix_range =
            tok(Token::DotDot)
                .then(range_end.clone())
                .map(|(s, end): (CSpan, Option<Expr>)| {
                    let e = end.as_ref().map_or(s.end as u32, |x| x.span.end);
                    expr_at(
                        ExprKind::Range {
                            start: None,
                            end: end.map(Box::new),
                        },
                        Span::new(s.start as u32, e.max(s.start as u32)),
                    )
                });
        let ranges = binary.clone().foldl(
            tok(Token::DotDot).then(range_end).repeated(),
            |lhs: Expr, (s, end): (CSpan, Option<Expr>)| {
                let e = end.as_ref().map_or(s.end as u32, |x| x.span.end);
                let span = Span::new(lhs.span.start, e.max(lhs.span.start));
                expr_at(
                    ExprKind::Range {
                        start: Some(Box::new(lhs)),
                        end: end.map(Box::new),
                    },
                    span,
                )
            },
        );
        parts = Some((binary, args_paren, args_bracket));
        prefix_range.or(ranges)
    });
    // `recursive` runs its closure before it returns, so the parts are always there.
    let Some((binary, args_paren, args_bracket)) = parts else {
        unreachable!("recursive() builds the expression grammar eagerly")
    };
    ExprParsers {
        expr: expr.boxed(),
        binary,
        args_paren,
        args_bracket,
    }
}

/// `f32` or `f32[..16, 64]`.
fn type_expr<'a>(binary: Boxed<'a, Expr>) -> Boxed<'a, TypeExpr> {
    let dim = not_at_or_end(Token::RBracket)
        .ignore_then(tok(Token::DotDot).or_not())
        .then(binary)
        .map_with(|(partial, size): (Option<CSpan>, Expr), e| Dim {
            partial: partial.is_some(),
            size,
            span: to_span(e.span()),
        });
    let dims = delim(
        tok(Token::LBracket),
        dim.separated_by(just(Token::Comma))
            .allow_trailing()
            .collect::<Vec<_>>(),
        Token::RBracket,
        "`[`",
    )
    .map(|(d, _)| d);
    name_or("a type such as `f32` or `f32[64, 64]`")
        .then(dims.or_not())
        .map_with(|(dtype, dims), e| TypeExpr {
            dtype,
            dims,
            span: to_span(e.span()),
        })
        .boxed()
}

/// `( a, b )` names of a `let` tuple or a `consume` binding list.
fn name_tuple<'a>(trailing: bool) -> impl Parser<'a, In<'a>, Vec<Ident>, Ex<'a>> + Clone {
    let names = name_or("a name")
        .then(
            just(Token::Comma)
                .ignore_then(if trailing {
                    not_at(Token::RParen).boxed()
                } else {
                    empty().boxed()
                })
                .ignore_then(name_or("a name"))
                .repeated()
                .collect::<Vec<_>>(),
        )
        .then_ignore(if trailing {
            just(Token::Comma).ignored().or_not().ignored().boxed()
        } else {
            empty().boxed()
        })
        .map(|(first, mut rest): (Ident, Vec<Ident>)| {
            rest.insert(0, first);
            rest
        });
    delim(tok(Token::LParen), names, Token::RParen, "`(`").map(|(n, _)| n)
}

fn assign_op<'a>() -> impl Parser<'a, In<'a>, Option<BinOp>, Ex<'a>> + Clone {
    select! {
        Token::Assign => None,
        Token::PlusAssign => Some(BinOp::Add),
        Token::MinusAssign => Some(BinOp::Sub),
        Token::StarAssign => Some(BinOp::Mul),
        Token::SlashAssign => Some(BinOp::Div),
    }
}

/// A statement ends at a newline, `;`, the block's `}` or the end of the item. Anything else
/// is reported once ("expected end of statement") and skipped, keeping the statement.
fn statement_end<'a>() -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    custom(|inp: &mut Inp<'a, '_>| {
        let (t, span) = peek_tok(inp);
        if matches!(t, None | Some(Token::Newline | Token::Semi | Token::RBrace)) {
            return Ok(());
        }
        check_committed(inp, span)?;
        let e = unexpected_err(inp, "end of statement (a new line or `;`)");
        inp.emit(e);
        inp.state().fail_at = span.start;
        skip_to_statement_end(inp);
        Ok(())
    })
}

/// `{ statements }`. An unclosed block is reported at its `{` and keeps what was parsed.
fn block_parser<'a>(ex: &ExprParsers<'a>, ty: Boxed<'a, TypeExpr>) -> Boxed<'a, Block> {
    // `recursive`, not `declare` + `define`: see `expressions`.
    recursive(|block| {
        let expr = ex.expr.clone();

        let annotation = just(Token::Colon).ignore_then(ty.clone()).or_not();
        let let_stmt = just(Token::Let)
            .ignore_then(
                name_tuple(true)
                    .map(|n| (n, true))
                    .or(name_or("a name").map(|n| (vec![n], false))),
            )
            .then(annotation.clone())
            .then_ignore(expect(Token::Assign, "`=`"))
            .then(expr.clone())
            .map(|(((names, tuple), ty), value)| StmtKind::Let {
                names,
                tuple,
                ty,
                value,
            });
        let var_stmt = just(Token::Var)
            .ignore_then(name_or("a name"))
            .then(annotation)
            .then_ignore(expect(Token::Assign, "`=`"))
            .then(expr.clone())
            .map(|((name, ty), value)| StmtKind::Var { name, ty, value });
        let for_stmt = just(Token::For)
            .ignore_then(
                name_or("a loop variable")
                    .separated_by(just(Token::Comma))
                    .at_least(1)
                    .collect::<Vec<_>>(),
            )
            .then_ignore(expect(Token::In, "`in`"))
            .then(expr.clone())
            .then(block.clone())
            .map(|((vars, iter), body)| StmtKind::For { vars, iter, body });
        let else_part = just(Token::Newline)
            .or_not()
            .ignore_then(just(Token::Else))
            .ignore_then(
                just(Token::When)
                    .ignore_then(expr.clone())
                    .then(block.clone())
                    .map(|(c, b)| (Some(c), b))
                    .or(block.clone().map(|b| (None, b))),
            );
        let when_stmt = just(Token::When)
            .ignore_then(expr.clone())
            .then(block.clone())
            .then(else_part.repeated().collect::<Vec<_>>())
            .map(|(first, rest)| {
                let mut branches = vec![first];
                let mut otherwise = None;
                for (cond, body) in rest {
                    if otherwise.is_some() {
                        break;
                    }
                    match cond {
                        Some(c) => branches.push((c, body)),
                        None => otherwise = Some(body),
                    }
                }
                StmtKind::When {
                    branches,
                    otherwise,
                }
            });
        let send_stmt = just(Token::Send)
            .ignore_then(name_or("a channel name"))
            .then_ignore(expect(Token::Comma, "`,` and the task or value to send"))
            .then(expr.clone())
            .map(|(channel, value)| StmtKind::Send { channel, value });
        let consume_stmt = just(Token::Consume)
            .ignore_then(name_or("a channel name"))
            .then_ignore(expect(Token::As, "`as`"))
            .then(name_tuple(false).or(name_or("a name").map(|n| vec![n])))
            .then(block.clone())
            .map(|((channel, bindings), body)| StmtKind::Consume {
                channel,
                bindings,
                body,
            });
        let pipe_ty = name_or("`Pipe`").try_map_with(|id: Ident, e| {
            if id.name == "Pipe" {
                return Ok(id);
            }
            let span: CSpan = e.span();
            note_hard(e.state(), span.start);
            Err(PErr {
                at: span.start,
                span,
                msg: Some(Box::new(SyntaxError {
                    code: codes::UNEXPECTED,
                    span: id.span,
                    message: format!("expected `Pipe`, found `{}`", id.name),
                    label: "expected `Pipe[tile type, slots: n]`".into(),
                    help: None,
                })),
            })
        });
        let pipe_stmt = word("pipe")
            .then(just(Token::Ident))
            .then(just(Token::Colon))
            .rewind()
            .ignore_then(word("pipe"))
            .ignore_then(name_or("a pipe name"))
            .then_ignore(expect(Token::Colon, "`:`"))
            .then_ignore(pipe_ty)
            .then(delim(
                expect(Token::LBracket, "`[`"),
                ty.clone().then(
                    just(Token::Comma)
                        .ignore_then(ex.args_bracket.clone())
                        .or_not(),
                ),
                Token::RBracket,
                "`[`",
            ))
            .map(|(name, ((elem, args), _))| StmtKind::Pipe {
                name,
                elem,
                args: args.unwrap_or_default(),
            });
        let section_stmt = word("cube")
            .to(SectionKind::Cube)
            .or(word("vector").to(SectionKind::Vector))
            .map_with(|k, e| (k, to_span(e.span())))
            .then_ignore(just(Token::LBrace).rewind())
            .then(block.clone())
            .map(|((kind, kind_span), body)| StmtKind::Section {
                kind,
                kind_span,
                body,
            });
        let expr_stmt = expr
            .clone()
            .then(assign_op().then(expr.clone()).or_not())
            .map(|(target, rest)| match rest {
                Some((op, value)) => StmtKind::Assign { target, op, value },
                None => StmtKind::Expr(target),
            });
        let stmt_kind = choice((
            let_stmt,
            var_stmt,
            for_stmt,
            when_stmt,
            send_stmt,
            consume_stmt,
            pipe_stmt,
            section_stmt,
            expr_stmt,
        ))
        .then_ignore(statement_end());
        let stmt = not_at_or_end(Token::RBrace)
            .ignore_then(
                note_failure(stmt_kind)
                    .recover_with(via_parser(sync_statement().to(StmtKind::Error))),
            )
            .map_with(|kind, e| Stmt {
                kind,
                span: to_span(e.span()),
            });
        let close_block = custom(|inp: &mut Inp<'a, '_>| {
            let (t, span) = peek_tok(inp);
            match t {
                Some(Token::RBrace) => {
                    inp.skip();
                    Ok(())
                }
                None => {
                    // Unclosed block: reported at the opener; what was parsed is kept.
                    let open: CSpan = *inp.ctx();
                    inp.emit(PErr {
                        at: span.start,
                        span: open,
                        msg: Some(Box::new(unclosed(to_span(open), Token::RBrace, "`{`"))),
                    });
                    Ok(())
                }
                Some(_) => Err(unexpected_err(inp, "`}`")),
            }
        });
        expect(Token::LBrace, "`{`")
            .then_with_ctx(
                separators()
                    .ignore_then(
                        stmt.then_ignore(separators())
                            .repeated()
                            .collect::<Vec<_>>(),
                    )
                    .then_ignore(close_block),
            )
            .map_with(|(_, stmts), e| Block {
                stmts,
                span: to_span(e.span()),
            })
    })
    .boxed()
}

/// The parser of one item's tokens (doc comments and insignificant newlines removed).
fn item_parser<'a>() -> Boxed<'a, ItemKind> {
    let ex = expressions();
    let expr = ex.expr.clone();
    let ty = type_expr(ex.binary.clone());
    let block = block_parser(&ex, ty.clone());

    let import = just(Token::Import)
        .ignore_then(name_or("a module name"))
        .then(
            just(Token::Dot)
                .then(not_at(Token::LBrace))
                .ignore_then(name_or("a module name or `{`"))
                .repeated()
                .collect::<Vec<_>>(),
        )
        .then(
            just(Token::Dot)
                .ignore_then(delim(
                    tok(Token::LBrace),
                    separators()
                        .ignore_then(not_at(Token::RBrace))
                        .ignore_then(name_or("a name to import"))
                        .then_ignore(separators())
                        .separated_by(just(Token::Comma))
                        .allow_trailing()
                        .collect::<Vec<_>>()
                        .then_ignore(separators()),
                    Token::RBrace,
                    "`{`",
                ))
                .map(|(n, _)| n)
                .or_not(),
        )
        .map(|((first, mut rest), names)| {
            rest.insert(0, first);
            ItemKind::Import(Import { path: rest, names })
        });
    let const_item = just(Token::Const)
        .ignore_then(name_or("a constant name"))
        .then(just(Token::Colon).ignore_then(ty.clone()).or_not())
        .then_ignore(expect(Token::Assign, "`=`"))
        .then(expr.clone())
        .map(|((name, ty), value)| ItemKind::Const(ConstDecl { name, ty, value }));
    let param = just(Token::Param)
        .ignore_then(name_or("a parameter name"))
        .then_ignore(expect(Token::Colon, "`:` and a type"))
        .then(ty.clone())
        .then(just(Token::Assign).ignore_then(expr.clone()).or_not())
        .map(|((name, ty), default)| ItemKind::Param(ParamDecl { name, ty, default }));
    let axis = just(Token::Axis)
        .ignore_then(name_or("an axis name"))
        .then_ignore(expect(Token::Assign, "`=`"))
        .then(expr.clone())
        .map(|(name, ctor)| ItemKind::Axis(AxisDecl { name, ctor }));
    let tensor = select! {
        Token::Input => TensorKind::Input,
        Token::Output => TensorKind::Output,
        Token::Tensor => TensorKind::Scratch,
    }
    .map_with(|k, e| (k, to_span(e.span())))
    .then(name_or("a tensor name"))
    .then_ignore(expect(Token::Colon, "`:` and a tensor type"))
    .then(ty.clone())
    .then(just(Token::Assign).ignore_then(expr.clone()).or_not())
    .map(|((((kind, kind_span), name), ty), init)| {
        ItemKind::Tensor(TensorDecl {
            kind,
            kind_span,
            name,
            ty,
            init,
        })
    });

    let direction = select! {
        Token::In => Direction::In,
    }
    .or(select! {
        Token::Out => Direction::Out,
        Token::InOut => Direction::InOut,
    }
    .then_ignore(just(Token::Ident).rewind()))
    .map_with(|d, e| (d, to_span(e.span())));
    let kernel_param = name_or("a parameter name")
        .then_ignore(expect(Token::Colon, "`:`"))
        .then(direction.or_not())
        .then(ty.clone())
        .then(just(Token::Assign).ignore_then(expr.clone()).or_not())
        .map_with(|(((name, dir), ty), default), e| KernelParam {
            name,
            dir,
            ty,
            default,
            span: to_span(e.span()),
        });
    let kernel_params = not_at_or_end(Token::RParen)
        .ignore_then(
            note_failure(kernel_param.then_ignore(committed()))
                .map(Some)
                .recover_with(via_parser(sync_list(Token::RParen).to(None))),
        )
        .separated_by(just(Token::Comma))
        .allow_trailing()
        .collect::<Vec<_>>()
        .map(|ps: Vec<Option<KernelParam>>| ps.into_iter().flatten().collect::<Vec<_>>());
    let binding = separators()
        .ignore_then(not_at_or_end(Token::RBrace))
        .ignore_then(name_or("a target name (`ascend`, `aie`, `sim`, `cost`)"))
        .then_ignore(expect(Token::Colon, "`:`"))
        .then(
            string()
                .map(ExternValue::Path)
                .or(expr.clone().map(ExternValue::Expr))
                .or(fail("a file path string, a kernel name or a cycle count")),
        )
        .map(|(target, value)| ExternBinding { target, value })
        .then_ignore(separators());
    let extern_body = delim(
        expect(Token::LBrace, "`{`"),
        binding
            .separated_by(just(Token::Comma))
            .allow_trailing()
            .collect::<Vec<_>>()
            .then_ignore(separators()),
        Token::RBrace,
        "`{`",
    )
    .map(|(b, _)| KernelBody::Extern(b));
    let kernel_sig = expect(Token::Kernel, "`kernel`")
        .ignore_then(name_or("a kernel name"))
        .then(
            delim(
                expect(Token::LParen, "`(`"),
                kernel_params,
                Token::RParen,
                "`(`",
            )
            .map(|(p, _)| p),
        )
        .boxed();
    let extern_kernel = tok(Token::Extern)
        .then(kernel_sig.clone())
        .then(extern_body)
        .map(|((s, (name, params)), body)| {
            ItemKind::Kernel(Kernel {
                extern_span: Some(to_span(s)),
                name,
                params,
                body,
            })
        });
    let plain_kernel = just(Token::Kernel)
        .rewind()
        .ignore_then(kernel_sig)
        .then(block.clone())
        .map(|((name, params), body)| {
            ItemKind::Kernel(Kernel {
                extern_span: None,
                name,
                params,
                body: KernelBody::Block(body),
            })
        });
    let kernel = extern_kernel.or(plain_kernel);

    let workload = just(Token::Workload)
        .ignore_then(name_or("a workload name"))
        .then(choice((
            just(Token::Assign)
                .ignore_then(expr.clone())
                .map(WorkloadBody::Expr),
            just(Token::LBrace)
                .rewind()
                .ignore_then(block.clone())
                .map(WorkloadBody::Block),
            fail("`{` or `=`"),
        )))
        .map(|(name, body)| ItemKind::Workload(Workload { name, body }));
    let channel = just(Token::Channel)
        .ignore_then(name_or("a channel name"))
        .then(
            just(Token::Colon)
                .ignore_then(name_or("`Channel`"))
                .then(
                    delim(
                        tok(Token::LBracket),
                        ex.args_bracket.clone(),
                        Token::RBracket,
                        "`[`",
                    )
                    .map(|(a, _)| a)
                    .or_not(),
                )
                .or_not(),
        )
        .map(|(name, ty)| {
            let (ty_name, args) = match ty {
                Some((t, a)) => (Some(t), a.unwrap_or_default()),
                None => (None, Vec::new()),
            };
            ItemKind::Channel(ChannelDecl {
                name,
                ty_name,
                args,
            })
        });
    let channel_names = name_or("a channel name")
        .separated_by(just(Token::Comma))
        .at_least(1)
        .collect::<Vec<_>>();
    let process = just(Token::Process)
        .ignore_then(name_or("a process name"))
        .then(
            word("consumes")
                .to(true)
                .or(word("produces").to(false))
                .then(channel_names)
                .repeated()
                .collect::<Vec<_>>(),
        )
        .then_ignore(
            just(Token::LBrace)
                .rewind()
                .ignored()
                .or(fail("`consumes`, `produces` or `{`")),
        )
        .then(block.clone())
        .map(|((name, lists), body)| {
            let mut consumes = Vec::new();
            let mut produces = Vec::new();
            for (is_consumes, names) in lists {
                if is_consumes {
                    consumes.extend(names);
                } else {
                    produces.extend(names);
                }
            }
            ItemKind::Process(Process {
                name,
                consumes,
                produces,
                body,
            })
        });
    let directive = tok(Token::Dot)
        .ignore_then(name_or("a schedule directive"))
        .then(
            delim(
                tok(Token::LParen),
                ex.args_paren.clone(),
                Token::RParen,
                "`(`",
            )
            .map(|(a, _)| a)
            .or_not(),
        )
        .map_with(|(name, args), e| Directive {
            name,
            args: args.unwrap_or_default(),
            span: to_span(e.span()),
        });
    let schedule = just(Token::Schedule)
        .ignore_then(name_or("a schedule name"))
        .then_ignore(expect(Token::Assign, "`=`"))
        .then(name_or("a workload name"))
        .then(directive.repeated().collect::<Vec<_>>())
        .map(|((name, workload), directives)| {
            ItemKind::Schedule(Schedule {
                name,
                workload,
                directives,
            })
        });
    let expect_item = just(Token::Expect)
        .ignore_then(expr.clone())
        .map(|expr| ItemKind::Expect(Expect { expr }));

    // Anything left over after a complete item is reported once and skipped.
    let item_end = custom(|inp: &mut Inp<'a, '_>| {
        while matches!(inp.peek(), Some(Token::Newline | Token::Semi)) {
            inp.skip();
        }
        let (t, span) = peek_tok(inp);
        if t.is_none() {
            return Ok(());
        }
        check_committed(inp, span)?;
        let e = unexpected_err(inp, "end of line after the item");
        inp.emit(e);
        while inp.peek().is_some() {
            inp.skip();
        }
        Ok(())
    });

    choice((
        import,
        const_item,
        param,
        axis,
        tensor,
        kernel,
        workload,
        channel,
        process,
        schedule,
        expect_item,
        fail("an item"),
    ))
    .then_ignore(item_end)
    .recover_with(via_parser(any().repeated().to(ItemKind::Error)))
    .boxed()
}
