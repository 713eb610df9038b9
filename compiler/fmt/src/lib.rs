//! The `.wsp` formatter: canonical spacing and indentation, every comment kept.
//!
//! The formatter works on the token stream, not the tree: line structure is the user's (line
//! breaks are kept; runs of blank lines become one), and within a line the spacing between
//! tokens is canonical — one space around binary operators and after `,` and `:`, none inside
//! brackets, before `(`/`[` of a call or index, around `.` and `..`, or after a unary minus.
//! Indentation is four spaces per open `{`, `(` and `[`, plus one level for a line that
//! continues a chain (`.dispatch(...)`) or an expression (a line starting with an operator).
//! Comments stay where they are: a comment on its own line is indented like code, a trailing
//! comment keeps its distance from the code before it.
//!
//! A file with syntax errors is not formatted (the first error is returned). The result is
//! verified before it is returned: its tokens and comments must equal the input's, in order.
//! Formatting is idempotent: the rules depend only on the token sequence and line breaks,
//! which formatting does not change.

use std::fmt;

use wsp_syntax::{lex, Token};

/// Why a source could not be formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// 1-based line and column (in characters) of the problem.
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for FormatError {}

fn position(src: &str, offset: usize) -> (usize, usize) {
    let before = &src[..offset.min(src.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, col)
}

/// One element of a line: a token (kind and text) or a trailing comment with the number of
/// spaces that separated it from the code.
#[derive(Clone, Debug, PartialEq)]
enum El<'a> {
    Tok(Token, &'a str),
    Comment(&'a str, usize),
}

/// Adds the comment of a gap between tokens (the only non-blank trivia in a gap is one `//`
/// comment, which runs to the newline) to the current line.
fn push_gap<'a>(out: &mut [Vec<El<'a>>], gap: &'a str) {
    if let Some(pos) = gap.find("//") {
        let before = &gap[..pos];
        let spaces = before.chars().filter(|c| *c == ' ' || *c == '\t').count();
        let text = gap[pos..].trim_end();
        if let Some(l) = out.last_mut() {
            l.push(El::Comment(text, spaces.max(1)));
        }
    }
}

/// The source as lines of elements (line breaks are the `Newline` tokens).
fn lines(src: &str) -> Vec<Vec<El<'_>>> {
    let toks = lex(src);
    let mut out: Vec<Vec<El>> = vec![Vec::new()];
    let mut prev_end = 0usize;
    for t in &toks {
        let (s, e) = (t.span.start as usize, t.span.end as usize);
        push_gap(&mut out, &src[prev_end..s]);
        if t.kind == Token::Newline {
            out.push(Vec::new());
        } else if let Some(l) = out.last_mut() {
            l.push(El::Tok(t.kind, &src[s..e]));
        }
        prev_end = e;
    }
    push_gap(&mut out, &src[prev_end..]);
    out
}

fn is_binary_op(t: Token) -> bool {
    use Token::*;
    matches!(
        t,
        Assign
            | PlusAssign
            | MinusAssign
            | StarAssign
            | SlashAssign
            | EqEq
            | NotEq
            | Le
            | Ge
            | Lt
            | Gt
            | AndAnd
            | OrOr
            | Plus
            | Minus
            | Star
            | Slash
            | Percent
    )
}

fn is_opener(t: Token) -> bool {
    matches!(t, Token::LParen | Token::LBracket | Token::LBrace)
}

fn is_closer(t: Token) -> bool {
    matches!(t, Token::RParen | Token::RBracket | Token::RBrace)
}

/// Whether a `-` (or `!`) after `prev` is a prefix operator.
fn prefix_position(prev: Option<Token>) -> bool {
    match prev {
        None => true,
        Some(p) => {
            is_binary_op(p)
                || matches!(
                    p,
                    Token::LParen
                        | Token::LBracket
                        | Token::LBrace
                        | Token::Comma
                        | Token::Colon
                        | Token::DotDot
                        | Token::Bang
                        | Token::In
                        | Token::Send
                        | Token::Expect
                        | Token::Semi
                )
        }
    }
}

/// The space (`""` or `" "`) between two tokens on one line.
fn space(prev: Token, prev_prefix: bool, cur: Token, cur_prefix: bool) -> &'static str {
    use Token::*;
    if prev_prefix {
        return "";
    }
    match (prev, cur) {
        (_, Comma | Semi | RParen | RBracket | Dot | DotDot) => "",
        (LParen | LBracket | Dot | DotDot, _) => "",
        // `X[0, :]`: a whole-dimension slice after a comma.
        (Comma, Colon) => " ",
        (_, Colon) => "",
        // `out` and `inout` are also names (a kernel parameter called `out`: `out[0..16, :] = ..`).
        (Ident | Out | InOut | RBracket | RParen, LParen | LBracket) => "",
        (LBrace, _) | (_, RBrace) => " ",
        (_, Minus | Bang) if cur_prefix => " ",
        _ => " ",
    }
}

/// Formats one `.wsp` source.
pub fn format(src: &str) -> Result<String, FormatError> {
    let parsed = wsp_syntax::parse(src);
    if let Some(e) = parsed.errors.first() {
        let (line, column) = position(src, e.span.start as usize);
        return Err(FormatError {
            line,
            column,
            message: format!("cannot format a file with syntax errors: {}", e.message),
        });
    }
    let mut out = String::with_capacity(src.len() + src.len() / 8);
    let mut depth: usize = 0;
    let mut blank_run = 0usize;
    let mut started = false;
    for line in lines(src) {
        if line.is_empty() {
            blank_run += 1;
            continue;
        }
        if started && blank_run > 0 {
            out.push('\n');
        }
        blank_run = 0;
        started = true;
        // Indentation: the depth before the line, one less when it starts with a closer, one
        // more when it continues a chain or an expression.
        let first = line.iter().find_map(|e| match e {
            El::Tok(t, _) => Some(*t),
            El::Comment(..) => None,
        });
        let mut indent = depth;
        match first {
            Some(t) if is_closer(t) => indent = indent.saturating_sub(1),
            Some(t) if t == Token::Dot || (is_binary_op(t) && t != Token::Minus) => indent += 1,
            _ => {}
        }
        let mut text = " ".repeat(indent * 4);
        let mut prev: Option<Token> = None;
        let mut prev_prefix = false;
        for el in &line {
            match el {
                El::Tok(t, s) => {
                    let prefix = matches!(t, Token::Minus | Token::Bang) && prefix_position(prev);
                    if let Some(p) = prev {
                        text.push_str(space(p, prev_prefix, *t, prefix));
                    }
                    text.push_str(s);
                    if is_opener(*t) {
                        depth += 1;
                    } else if is_closer(*t) {
                        depth = depth.saturating_sub(1);
                    }
                    prev = Some(*t);
                    prev_prefix = prefix;
                }
                El::Comment(c, spaces) => {
                    if prev.is_some() {
                        text.push_str(&" ".repeat(*spaces));
                    }
                    text.push_str(c);
                }
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    verify(src, &out)?;
    Ok(out)
}

/// The formatted text must have the same tokens and comments as the source, in order.
fn verify(src: &str, out: &str) -> Result<(), FormatError> {
    let sig = |s: &str| -> Vec<String> {
        lines(s)
            .into_iter()
            .flatten()
            .map(|e| match e {
                El::Tok(_, t) => t.to_string(),
                El::Comment(c, _) => c.to_string(),
            })
            .collect()
    };
    if sig(src) == sig(out) {
        Ok(())
    } else {
        Err(FormatError {
            line: 1,
            column: 1,
            message:
                "internal error: formatting would change the program; the file was left as it is"
                    .into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::format;

    fn f(s: &str) -> String {
        match format(s) {
            Ok(x) => x,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn spacing_and_indentation() {
        let src = "kernel k(x:in f32[16,64],y:out f32[16,64]){\ny=exp(x-rowmax(x))*2.0\n}\n";
        assert_eq!(
            f(src),
            "kernel k(x: in f32[16, 64], y: out f32[16, 64]) {\n    y = exp(x - rowmax(x)) * 2.0\n}\n"
        );
    }

    #[test]
    fn views_slices_ranges_and_unary_minus() {
        let src = "workload w {\nfor t in P.seq(tiles) {\ncopy[t](x: X[0, t*8 .. t*8+16, :], y: Y[ - 1 + t], z: Z[:, 0])\n}\n}\n";
        assert_eq!(
            f(src),
            "workload w {\n    for t in P.seq(tiles) {\n        copy[t](x: X[0, t * 8..t * 8 + 16, :], y: Y[-1 + t], z: Z[:, 0])\n    }\n}\n"
        );
    }

    #[test]
    fn parameters_named_out_keep_their_sub_range_assignments() {
        let src = "kernel k(x: in f32[4, 8], out: out f32[4, 8]) {\nout [:, 0..4] = x[:, 0..4]\nout[:, 4..8] = x[:, 4..8]\n}\n";
        assert_eq!(
            f(src),
            "kernel k(x: in f32[4, 8], out: out f32[4, 8]) {\n    out[:, 0..4] = x[:, 0..4]\n    out[:, 4..8] = x[:, 4..8]\n}\n"
        );
    }

    #[test]
    fn comments_blank_lines_and_chains() {
        let src = "\n\n// head\nconst N = 4   // four\n\n\n\n/// doc\nschedule s = w\n.dispatch(round_robin(4))\n     .task_window(8192)\n";
        assert_eq!(
            f(src),
            "// head\nconst N = 4   // four\n\n/// doc\nschedule s = w\n    .dispatch(round_robin(4))\n    .task_window(8192)\n"
        );
    }

    #[test]
    fn syntax_errors_are_refused_with_a_position() {
        let e = format("const N = \nkernel k(").unwrap_err();
        assert!(e.message.contains("syntax errors"), "{e}");
        assert!(e.line >= 1 && e.column >= 1);
    }

    #[test]
    fn never_panics_on_odd_input() {
        for s in [
            "",
            "\n",
            "//",
            "///",
            "{",
            "\u{1F600}",
            "kernel",
            "const X = -(-1)\n",
        ] {
            let _ = format(s);
        }
    }
}
