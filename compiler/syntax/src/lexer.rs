//! The logos lexer. Never fails: unknown bytes become [`Token::Error`].

use logos::Logos;

use crate::Span;

/// A token kind. Trivia (whitespace, comments, a byte-order mark) is skipped except doc
/// comments and newlines, which are significant (statements end at a newline). A newline is
/// `\n`, `\r\n` or a lone `\r`, as editors write them.
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[logos(skip r"[ \t\f\u{FEFF}]+")]
#[logos(skip(r"//([^/\n\r][^\n\r]*)?|////[^\n\r]*", allow_greedy = true))]
pub enum Token {
    #[regex(r"///([^/\n\r][^\n\r]*)?", allow_greedy = true)]
    DocComment,
    #[regex(r"\r\n|\n|\r")]
    Newline,

    // keywords
    #[token("import")]
    Import,
    #[token("const")]
    Const,
    #[token("param")]
    Param,
    #[token("axis")]
    Axis,
    #[token("input")]
    Input,
    #[token("output")]
    Output,
    #[token("tensor")]
    Tensor,
    #[token("kernel")]
    Kernel,
    #[token("workload")]
    Workload,
    #[token("process")]
    Process,
    #[token("channel")]
    Channel,
    #[token("schedule")]
    Schedule,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("when")]
    When,
    #[token("else")]
    Else,
    #[token("let")]
    Let,
    #[token("var")]
    Var,
    #[token("send")]
    Send,
    #[token("consume")]
    Consume,
    #[token("as")]
    As,
    #[token("expect")]
    Expect,
    #[token("extern")]
    Extern,
    #[token("out")]
    Out,
    #[token("inout")]
    InOut,
    #[token("true")]
    True,
    #[token("false")]
    False,

    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    Ident,
    /// `42`, `0x2a`, `1_024`
    #[regex(r"[0-9][0-9_]*|0[xX][0-9a-fA-F_]+")]
    Int,
    /// `1.0`, `1e-6`, `2.5E+3` (a `1..2` range is Int, DotDot, Int)
    #[regex(r"[0-9][0-9_]*\.[0-9][0-9_]*([eE][+-]?[0-9]+)?|[0-9][0-9_]*[eE][+-]?[0-9]+")]
    Float,
    #[regex(r#""([^"\\\n]|\\.)*""#)]
    Str,

    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
    #[token(":")]
    Colon,
    #[token("..")]
    DotDot,
    #[token(".")]
    Dot,
    #[token("=")]
    Assign,
    #[token("+=")]
    PlusAssign,
    #[token("-=")]
    MinusAssign,
    #[token("*=")]
    StarAssign,
    #[token("/=")]
    SlashAssign,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("!")]
    Bang,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    /// An unterminated string literal (reported by the parser).
    #[regex(r#""([^"\\\n]|\\.)*"#, priority = 1)]
    UnterminatedStr,

    /// Any byte sequence the lexer does not recognise.
    Error,
}

impl Token {
    /// Whether the token is a keyword (for highlighting).
    pub fn is_keyword(self) -> bool {
        use Token::*;
        matches!(
            self,
            Import
                | Const
                | Param
                | Axis
                | Input
                | Output
                | Tensor
                | Kernel
                | Workload
                | Process
                | Channel
                | Schedule
                | For
                | In
                | When
                | Else
                | Let
                | Var
                | Send
                | Consume
                | As
                | Expect
                | Extern
                | Out
                | InOut
                | True
                | False
        )
    }
}

/// A token with its absolute span.
/// The keywords that start an item, with their spelling, in the order completion lists them.
/// The parser's item split and the language server both read this table.
pub const ITEM_KEYWORDS: [(Token, &str); 14] = [
    (Token::Import, "import"),
    (Token::Const, "const"),
    (Token::Param, "param"),
    (Token::Axis, "axis"),
    (Token::Input, "input"),
    (Token::Output, "output"),
    (Token::Tensor, "tensor"),
    (Token::Kernel, "kernel"),
    (Token::Extern, "extern"),
    (Token::Workload, "workload"),
    (Token::Channel, "channel"),
    (Token::Process, "process"),
    (Token::Schedule, "schedule"),
    (Token::Expect, "expect"),
];

impl Token {
    /// Whether the token is one of [`ITEM_KEYWORDS`].
    pub fn is_item_keyword(self) -> bool {
        ITEM_KEYWORDS.iter().any(|(t, _)| *t == self)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TokenInfo {
    pub kind: Token,
    pub span: Span,
}

/// The item keyword `text` starts with, after its doc comments (`None`: it starts with
/// something else): the kind of item an item range of [`crate::cut`] is, as its first token
/// says, without lexing the rest.
pub fn item_keyword(text: &str) -> Option<Token> {
    Token::lexer(text)
        .filter_map(Result::ok)
        .find(|t| !matches!(t, Token::DocComment | Token::Newline))
        .filter(|t| t.is_item_keyword())
}

/// Lexes `src` into tokens. Never fails; unrecognised input becomes `Token::Error`.
pub fn lex(src: &str) -> Vec<TokenInfo> {
    let mut out = Vec::with_capacity(src.len() / 3);
    let mut lexer = Token::lexer(src);
    while let Some(res) = lexer.next() {
        let r = lexer.span();
        let kind = res.unwrap_or(Token::Error);
        out.push(TokenInfo {
            kind,
            span: Span::new(r.start as u32, r.end as u32),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Token> {
        lex(src).into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn every_newline_convention_and_a_byte_order_mark() {
        use Token::*;
        let want = vec![
            Const, Ident, Assign, Int, Newline, Const, Ident, Assign, Int, Newline,
        ];
        for nl in ["\n", "\r\n", "\r"] {
            let src = format!("\u{FEFF}const A = 1 // one{nl}const B = 2{nl}");
            assert_eq!(kinds(&src), want, "{nl:?}");
        }
        assert_eq!(kinds("/// doc\rx"), vec![DocComment, Newline, Ident]);
    }

    #[test]
    fn numbers_and_ranges() {
        use Token::*;
        assert_eq!(kinds("0..16"), vec![Int, DotDot, Int]);
        assert_eq!(kinds("1.0 1e-6 0x2a 1_024"), vec![Float, Float, Int, Int]);
        assert_eq!(kinds("..64"), vec![DotDot, Int]);
    }

    #[test]
    fn comments_and_docs() {
        use Token::*;
        assert_eq!(
            kinds("// c\n/// doc\nx"),
            vec![Newline, DocComment, Newline, Ident]
        );
        assert_eq!(kinds("//// not doc\nx"), vec![Newline, Ident]);
    }

    #[test]
    fn keywords_vs_idents() {
        use Token::*;
        assert_eq!(
            kinds("in inout input out output"),
            vec![In, InOut, Input, Out, Output]
        );
        assert_eq!(kinds("kernels"), vec![Ident]);
    }

    #[test]
    fn unknown_bytes_are_errors() {
        assert!(kinds("@ #").iter().all(|k| *k == Token::Error));
        assert_eq!(kinds("\"abc"), vec![Token::UnterminatedStr]);
    }
}

#[cfg(test)]
mod item_keyword_tests {
    use super::*;

    #[test]
    fn every_item_keyword_lexes_to_its_token() {
        for (tok, kw) in ITEM_KEYWORDS {
            let toks: Vec<Token> = lex(kw).iter().map(|t| t.kind).collect();
            assert_eq!(toks.first(), Some(&tok), "{kw}");
            assert!(tok.is_item_keyword());
        }
        assert!(!Token::For.is_item_keyword());
    }
}
