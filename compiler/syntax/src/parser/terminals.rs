//! The grammar's terminals: statement separators, names, contextual keywords, string literals
//! and the error of a malformed number.

use chumsky::prelude::*;

use super::codes;
use super::combinators::{fail, to_span, CSpan, Ex, In, Mx, PErr, St};
use crate::ast::*;
use crate::lexer::Token;
use crate::SyntaxError;

/// Newlines and `;` (between statements, inside braces of lists).
pub(super) fn separators<'a>() -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
    one_of([Token::Newline, Token::Semi]).repeated()
}

/// A name: an identifier, or `out`/`inout`, which are keywords only in the direction position
/// of a kernel parameter (the language's own examples name tiles `out`).
pub(super) fn name<'a>() -> impl Parser<'a, In<'a>, Ident, Ex<'a>> + Clone {
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
pub(super) fn name_or<'a>(what: &'static str) -> impl Parser<'a, In<'a>, Ident, Ex<'a>> + Clone {
    name().or(fail(what))
}

/// The identifier `word` (a contextual keyword such as `pipe`, `cube`, `consumes`).
pub(super) fn word<'a>(word: &'static str) -> impl Parser<'a, In<'a>, CSpan, Ex<'a>> + Clone {
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

pub(super) fn bad_number(span: CSpan, message: &str) -> PErr {
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
pub(super) fn string<'a>() -> impl Parser<'a, In<'a>, StrLit, Ex<'a>> + Clone {
    one_of([Token::Str, Token::UnterminatedStr]).map_with(|_, e: &mut Mx<'a, '_>| {
        let span: CSpan = e.span();
        let st: &mut St = e.state();
        StrLit {
            value: unescape(st.text.get(span.start..span.end).unwrap_or("")),
            span: to_span(span),
        }
    })
}
