//! Blocks and statements (kernel, workload and process bodies): `let`, `var`, `for`, `when`,
//! `send`, `consume`, `pipe`, `cube`/`vector` sections, assignments and expression statements,
//! each recovering to the end of its line.

use chumsky::prelude::*;

use super::codes;
use super::combinators::{
    check_committed, delim, expect, not_at, not_at_or_end, note_hard, peek_tok, to_span, tok,
    unclosed, unexpected_err, CSpan, Ex, In, Inp, PErr,
};
use super::expr::{Boxed, ExprParsers};
use super::recovery::{note_failure, skip_to_statement_end, sync_statement};
use super::terminals::{name_or, separators, word};
use crate::ast::*;
use crate::lexer::Token;
use crate::SyntaxError;

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
pub(super) fn block_parser<'a>(ex: &ExprParsers<'a>, ty: Boxed<'a, TypeExpr>) -> Boxed<'a, Block> {
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
