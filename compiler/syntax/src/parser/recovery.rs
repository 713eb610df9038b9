//! Error recovery: where a construct failed, and skipping from there to where parsing resumes
//! (the end of the statement, the next list element).

use chumsky::extra::SimpleState;
use chumsky::prelude::*;

use super::combinators::{peek_tok, Ex, In, Inp, PErr, St};
use crate::lexer::Token;

/// Remembers where `p` failed, for the recovery strategy that follows.
pub(super) fn note_failure<'a, O, P>(p: P) -> impl Parser<'a, In<'a>, O, Ex<'a>> + Clone
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
pub(super) fn skip_to_statement_end(inp: &mut Inp<'_, '_>) -> bool {
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
pub(super) fn sync_statement<'a>() -> impl Parser<'a, In<'a>, (), Ex<'a>> + Clone {
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
pub(super) fn sync_list<'a>(close: Token) -> impl Parser<'a, In<'a>, usize, Ex<'a>> + Clone {
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
