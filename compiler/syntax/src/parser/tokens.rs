//! The token-stream passes before the grammar: the split into items, the significant
//! newlines, the depth check, an item's doc comment, and how a token is named in messages.

use super::combinators::{to_span, CSpan, Pair};
use super::{codes, MAX_CHAIN, MAX_DEPTH};
use crate::lexer::{Token, TokenInfo};
use crate::SyntaxError;

/// The item's nesting depth (open brackets plus runs of prefix operators). Nesting deeper than
/// [`MAX_DEPTH`] is an error before parsing: the item is not parsed at all, so deep input never
/// reaches the parser's recursion.
pub(super) fn nesting(pairs: &[Pair]) -> Result<u32, SyntaxError> {
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
pub(super) fn collect_docs(src: &str, base: u32, significant: &[TokenInfo]) -> Option<String> {
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

pub(super) fn line_of(src: &str, offset: u32) -> usize {
    let end = (offset as usize).min(src.len());
    src.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
}

#[cfg(test)]
/// Splits the token stream (newlines included) into item token ranges (the tokens before the
/// first item are the prefix's: `parse_prefix` reports them, E0007).
pub(super) fn split_items(tokens: &[TokenInfo]) -> Vec<std::ops::Range<usize>> {
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
pub(super) fn significant_newlines(slice: &[TokenInfo]) -> Vec<TokenInfo> {
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

pub(super) fn describe(t: Token) -> &'static str {
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
