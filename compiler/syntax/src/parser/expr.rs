//! The expression grammar: literals, names, tuples and lists, postfix chains (fields, calls,
//! indexing), a `pratt` parser of prefix and binary operators, and ranges binding loosest;
//! call arguments and lists recover per element.

use chumsky::pratt::{infix, left, prefix};
use chumsky::prelude::*;

use super::combinators::{
    committed, delim, fail, not_at_or_end, peek_tok, to_span, tok, CSpan, Ex, In, Inp, Mx, PErr, St,
};
use super::recovery::{note_failure, sync_list};
use super::terminals::{bad_number, name, name_or, string};
use crate::ast::*;
use crate::lexer::Token;
use crate::Span;

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

pub(super) type Boxed<'a, O> = chumsky::Boxed<'a, 'a, In<'a>, O, Ex<'a>>;

/// The expression parsers: `expr` (ranges included) and `binary` (no ranges: type dims and
/// range ends).
pub(super) struct ExprParsers<'a> {
    pub(super) expr: Boxed<'a, Expr>,
    pub(super) binary: Boxed<'a, Expr>,
    pub(super) args_paren: Boxed<'a, Vec<Arg>>,
    pub(super) args_bracket: Boxed<'a, Vec<Arg>>,
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

pub(super) fn expressions<'a>() -> ExprParsers<'a> {
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
