//! Type expressions: a dtype with optional dimensions (`f32`, `f32[..16, 64]`).

use chumsky::prelude::*;

use super::combinators::{delim, not_at_or_end, to_span, tok, CSpan};
use super::expr::Boxed;
use super::terminals::name_or;
use crate::ast::*;
use crate::lexer::Token;

/// `f32` or `f32[..16, 64]`.
pub(super) fn type_expr<'a>(binary: Boxed<'a, Expr>) -> Boxed<'a, TypeExpr> {
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
