//! The items (declarations): `import`, `const`, `param`, `axis`, tensors, kernels (with their
//! parameters, and `extern` bindings), `workload`, `channel`, `process`, `schedule` with its
//! directives, and `expect`; the parser of one item's tokens.

use chumsky::prelude::*;

use super::combinators::{
    check_committed, committed, delim, expect, fail, not_at, not_at_or_end, peek_tok, to_span, tok,
    unexpected_err, Inp,
};
use super::expr::{expressions, Boxed};
use super::recovery::{note_failure, sync_list};
use super::stmt::block_parser;
use super::terminals::{name_or, separators, string, word};
use super::types::type_expr;
use crate::ast::*;
use crate::lexer::Token;

/// The parser of one item's tokens (doc comments and insignificant newlines removed).
pub(super) fn item_parser<'a>() -> Boxed<'a, ItemKind> {
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
