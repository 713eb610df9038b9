//! The grammar's foundations: its input, per-item state and error types, and the token-level
//! combinators every rule is built from (expectations, lookahead, commitment, delimiters and
//! their "unclosed" errors).

use chumsky::error::LabelError;
use chumsky::extra::SimpleState;
use chumsky::input::{InputRef, MapExtra, MappedInput};
use chumsky::prelude::*;
use chumsky::util::MaybeRef;
use chumsky::DefaultExpected;

use super::codes;
use super::tokens::describe;
use crate::lexer::Token;
use crate::{Span, SyntaxError};

/// Spans inside the grammar: item-relative byte offsets.
pub(super) type CSpan = SimpleSpan;
/// One token of an item with its item-relative span.
pub(super) type Pair = (Token, CSpan);
/// The grammar's input: an item's `(Token, span)` pairs, split into tokens and spans.
pub(super) type In<'a> = MappedInput<'a, Token, CSpan, &'a [Pair]>;
/// Errors, per-item state and context (the span of the innermost open delimiter).
pub(super) type Ex<'a> = extra::Full<PErr, SimpleState<St<'a>>, CSpan>;
pub(super) type Inp<'a, 'p> = InputRef<'a, 'p, In<'a>, Ex<'a>>;
pub(super) type Mx<'a, 'b> = MapExtra<'a, 'b, In<'a>, Ex<'a>>;

/// Per-item parser state.
pub(super) struct St<'a> {
    /// The item's text: item-relative spans index it directly.
    pub(super) text: &'a str,
    /// End offset of the item's last token (the end-of-input span).
    pub(super) eoi: usize,
    /// Furthest position at which one of our expectations failed. A construct that stopped
    /// before it did not end cleanly: something it began (a call's `(`, a `when`'s `else`)
    /// failed, so the construct fails too (see [`committed`]).
    pub(super) hard_at: Option<usize>,
    /// Position of the failure being recovered from (set by
    /// [`note_failure`](super::recovery::note_failure)).
    pub(super) fail_at: usize,
}

/// The grammar's error type. chumsky's own `Rich` errors merge the expected sets of every
/// alternative tried at a position (and reorder them) and allocate for every failed
/// alternative; this type carries the project's own `SyntaxError` (code, wording) when one of
/// our expectations failed, and is free to construct when a chumsky primitive fails.
#[derive(Clone, Debug)]
pub(super) struct PErr {
    /// Where the parser failed (item-relative offset of the offending token).
    pub(super) at: usize,
    pub(super) span: CSpan,
    pub(super) msg: Option<Box<SyntaxError>>,
}

impl PErr {
    /// A failure at `span` with no message of ours (a primitive failure, or a lookahead).
    pub(super) fn bare(span: CSpan) -> PErr {
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

pub(super) fn to_span(s: CSpan) -> Span {
    Span::new(s.start as u32, s.end.max(s.start) as u32)
}

/// The next token and its span, not consumed (at the end: `None` and the end span).
pub(super) fn peek_tok(inp: &mut Inp<'_, '_>) -> (Option<Token>, CSpan) {
    let cp = inp.save();
    let t = inp.next();
    let span = inp.span_since(cp.cursor());
    inp.rewind(cp);
    (t, span)
}

pub(super) fn found(st: &St, t: Option<Token>, span: CSpan) -> String {
    let text = st.text.get(span.start..span.end).unwrap_or("");
    match t {
        None => "end of item".into(),
        Some(Token::Newline) => "end of line".into(),
        Some(Token::Ident) => format!("`{text}`"),
        Some(k) if k.is_keyword() => format!("keyword `{text}`"),
        Some(k) => describe(k).into(),
    }
}

pub(super) fn note_hard(st: &mut St, at: usize) {
    st.hard_at = Some(st.hard_at.map_or(at, |h| h.max(at)));
}

/// "expected X, found Y" at the next token (E0001).
pub(super) fn unexpected_err(inp: &mut Inp<'_, '_>, expected: &str) -> PErr {
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
pub(super) fn fail<'a, O>(expected: &'static str) -> impl Parser<'a, In<'a>, O, Ex<'a>> + Clone {
    custom(move |inp: &mut Inp<'a, '_>| Err(unexpected_err(inp, expected)))
}

/// One token of kind `k`, giving its span; failing quietly (for optional parts).
pub(super) fn tok<'a>(k: Token) -> impl Parser<'a, In<'a>, CSpan, Ex<'a>> + Clone {
    just(k).map_with(|_, e| e.span())
}

/// One token of kind `k` or the error "expected `what`, found ...".
pub(super) fn expect<'a>(
    k: Token,
    what: &'static str,
) -> impl Parser<'a, In<'a>, CSpan, Ex<'a>> + Clone {
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
pub(super) fn not_at<'a>(k: Token) -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    unless_next(move |t| t == Some(k))
}

/// Succeeds without consuming when the next token is neither `k` nor the end.
pub(super) fn not_at_or_end<'a>(k: Token) -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    unless_next(move |t| t.is_none() || t == Some(k))
}

/// Fails when one of our expectations failed at or after the next token: the construct just
/// parsed began something (a call, an `else`) that failed, and must not end quietly before it.
pub(super) fn committed<'a>() -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    custom(|inp: &mut Inp<'a, '_>| {
        let (_, span) = peek_tok(inp);
        check_committed(inp, span)
    })
}

/// `Err` when one of our expectations failed at or after `span` (see [`committed`]).
pub(super) fn check_committed(inp: &mut Inp<'_, '_>, span: CSpan) -> Result<(), PErr> {
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

pub(super) fn unclosed(open: Span, k: Token, what: &str) -> SyntaxError {
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
pub(super) fn delim<'a, O, P>(
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
