//! The error-recovering parser.
//!
//! Parsing happens in three steps:
//!
//! 1. [`crate::lex`] turns the text into tokens (never fails).
//! 2. [`split_items`] cuts the token stream into top-level items. An item starts at an item
//!    keyword (`kernel`, `workload`, `input`, ...) that is the first token of its line, together
//!    with the `///` doc comment lines right above it. Because no item keyword can appear at the
//!    start of a line inside a body, an unclosed `{` in one item never swallows the next item.
//! 3. Each item's tokens are parsed by a recursive-descent [`Parser`] whose spans are rebased to
//!    the item's start (see the span convention in [`crate::ast`]).
//!
//! Recovery happens at three levels: a failed item becomes `ItemKind::Error`; a failed statement
//! becomes `StmtKind::Error` and parsing resumes at the next line (or `;`/`}`) of the enclosing
//! block; a failed call argument or list element becomes `ExprKind::Error` and parsing resumes at
//! the next `,` or closing bracket. Each statement reports at most one error, so one mistake never
//! hides the next and never produces a cascade. Nesting deeper than [`MAX_DEPTH`] is an error, not
//! a stack overflow.

use crate::ast::*;
use crate::lexer::{lex, Token, TokenInfo};
use crate::{Parse, Span, SyntaxError};

/// The deepest expression/statement nesting the parser accepts.
pub const MAX_DEPTH: u32 = 64;

/// Error codes of the syntax layer (explained in `compiler/diagnostics/explanations`).
pub mod codes {
    /// Unexpected token: expected one thing, found another.
    pub const UNEXPECTED: &str = "E0001";
    /// An opening delimiter that is never closed.
    pub const UNCLOSED: &str = "E0002";
    /// A number literal that is malformed or out of range.
    pub const BAD_NUMBER: &str = "E0003";
    /// A string literal that is not closed before the end of the line.
    pub const UNTERMINATED_STRING: &str = "E0004";
    /// A character that is not part of the language.
    pub const UNKNOWN_CHAR: &str = "E0005";
    /// Nesting deeper than the parser accepts.
    pub const TOO_DEEP: &str = "E0006";
    /// Text at the top level that does not start an item.
    pub const EXPECTED_ITEM: &str = "E0007";
}

/// Parses a whole file. Never fails and never panics.
pub fn parse(src: &str) -> Parse {
    let all = lex(src);
    let mut errors = Vec::new();
    let mut tokens = Vec::with_capacity(all.len());
    for t in &all {
        match t.kind {
            Token::Error => errors.push(SyntaxError {
                code: codes::UNKNOWN_CHAR,
                span: t.span,
                message: format!(
                    "unknown character `{}`",
                    src.get(t.span.range()).unwrap_or("?").escape_debug()
                ),
                label: "not part of the language".into(),
                help: Some("remove it; comments start with `//`".into()),
            }),
            Token::UnterminatedStr => {
                errors.push(SyntaxError {
                    code: codes::UNTERMINATED_STRING,
                    span: t.span,
                    message: "unterminated string literal".into(),
                    label: "this string is never closed".into(),
                    help: Some("add a closing `\"` before the end of the line".into()),
                });
                tokens.push(*t);
            }
            _ => tokens.push(*t),
        }
    }
    let significant: Vec<TokenInfo> = tokens
        .iter()
        .copied()
        .filter(|t| t.kind != Token::Newline)
        .collect();

    let mut items = Vec::new();
    for range in split_items(&tokens, src, &mut errors) {
        let slice = &tokens[range.clone()];
        let Some(first) = slice.first() else { continue };
        let last = slice
            .iter()
            .rev()
            .find(|t| t.kind != Token::Newline)
            .unwrap_or(first);
        let base = first.span.start;
        let abs = Span::new(base, last.span.end.max(base));
        let mut p = Parser::new(src, slice, base);
        let item = p.item();
        errors.extend(p.errors.into_iter().map(|mut e| {
            e.span = e.span.shift(base);
            e
        }));
        items.push(ItemNode { range: abs, item });
    }
    // A lexical error (unknown character, unterminated string) already explains its line; the
    // parser errors it causes on the same line would only be noise.
    let lexical_lines: Vec<usize> = errors
        .iter()
        .filter(|e| matches!(e.code, codes::UNKNOWN_CHAR | codes::UNTERMINATED_STRING))
        .map(|e| line_of(src, e.span.start))
        .collect();
    if !lexical_lines.is_empty() {
        errors.retain(|e| {
            matches!(e.code, codes::UNKNOWN_CHAR | codes::UNTERMINATED_STRING)
                || !lexical_lines.contains(&line_of(src, e.span.start))
        });
    }
    errors.sort_by_key(|e| (e.span.start, e.span.end));
    Parse {
        file: SourceFile { items },
        errors,
        tokens: significant,
    }
}

fn line_of(src: &str, offset: u32) -> usize {
    let end = (offset as usize).min(src.len());
    src.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
}

fn is_item_keyword(t: Token) -> bool {
    matches!(
        t,
        Token::Import
            | Token::Const
            | Token::Param
            | Token::Axis
            | Token::Input
            | Token::Output
            | Token::Tensor
            | Token::Kernel
            | Token::Workload
            | Token::Process
            | Token::Channel
            | Token::Schedule
            | Token::Expect
            | Token::Extern
    )
}

/// Splits the token stream (newlines included) into item token ranges.
/// Top-level tokens before the first item or between items that cannot start an item
/// are reported once per run (E0007) and dropped.
fn split_items(
    tokens: &[TokenInfo],
    src: &str,
    errors: &mut Vec<SyntaxError>,
) -> Vec<std::ops::Range<usize>> {
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
        if line_start && (is_item_keyword(k) || k == Token::DocComment) {
            // A doc-comment run starts an item only if an item keyword follows it.
            let mut j = i;
            while j < tokens.len() && matches!(tokens[j].kind, Token::DocComment | Token::Newline) {
                j += 1;
            }
            if j < tokens.len() && is_item_keyword(tokens[j].kind) {
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

    // Leading garbage before the first item.
    let first = starts.first().copied().unwrap_or(tokens.len());
    let garbage: Vec<&TokenInfo> = tokens[..first]
        .iter()
        .filter(|t| !matches!(t.kind, Token::Newline | Token::DocComment))
        .collect();
    if let (Some(a), Some(b)) = (garbage.first(), garbage.last()) {
        let text = src.get(a.span.range()).unwrap_or("");
        errors.push(SyntaxError {
            code: codes::EXPECTED_ITEM,
            span: Span::new(a.span.start, b.span.end),
            message: format!("expected an item, found `{}`", text.escape_debug()),
            label: "not the start of an item".into(),
            help: Some(
                "top-level items start with `import`, `const`, `param`, `axis`, `input`, `output`, \
                 `tensor`, `kernel`, `workload`, `channel`, `process`, `schedule` or `expect`"
                    .into(),
            ),
        });
    }

    let mut out = Vec::with_capacity(starts.len());
    for (n, &s) in starts.iter().enumerate() {
        let e = starts.get(n + 1).copied().unwrap_or(tokens.len());
        out.push(s..e);
    }
    out
}

/// Marker: an error was reported; the caller recovers.
struct Fail;

type PResult<T> = Result<T, Fail>;

struct Parser<'a> {
    src: &'a str,
    /// The item's tokens with insignificant newlines removed and doc comments dropped.
    toks: Vec<TokenInfo>,
    pos: usize,
    base: u32,
    depth: u32,
    errors: Vec<SyntaxError>,
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
fn significant_newlines(slice: &[TokenInfo]) -> Vec<TokenInfo> {
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

fn describe(t: Token) -> &'static str {
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

impl<'a> Parser<'a> {
    fn new(src: &'a str, slice: &[TokenInfo], base: u32) -> Parser<'a> {
        Parser {
            src,
            toks: significant_newlines(slice),
            pos: 0,
            base,
            depth: 0,
            errors: Vec::new(),
        }
    }

    // ---- token access ----------------------------------------------------------------

    fn peek(&self) -> Option<Token> {
        self.toks.get(self.pos).map(|t| t.kind)
    }

    fn peek_at(&self, n: usize) -> Option<Token> {
        self.toks.get(self.pos + n).map(|t| t.kind)
    }

    fn at(&self, k: Token) -> bool {
        self.peek() == Some(k)
    }

    /// Relative span of the current token (or an empty span at the end).
    fn span(&self) -> Span {
        match self.toks.get(self.pos) {
            Some(t) => self.rel(t.span),
            None => self.end_span(),
        }
    }

    fn end_span(&self) -> Span {
        let end = self.toks.last().map(|t| t.span.end).unwrap_or(self.base);
        let e = end.saturating_sub(self.base);
        Span::new(e, e)
    }

    /// Relative span of the previous token.
    fn prev_span(&self) -> Span {
        match self.pos.checked_sub(1).and_then(|p| self.toks.get(p)) {
            Some(t) => self.rel(t.span),
            None => Span::new(0, 0),
        }
    }

    fn rel(&self, s: Span) -> Span {
        Span::new(
            s.start.saturating_sub(self.base),
            s.end.saturating_sub(self.base),
        )
    }

    fn text(&self) -> &'a str {
        match self.toks.get(self.pos) {
            Some(t) => self.src.get(t.span.range()).unwrap_or(""),
            None => "",
        }
    }

    fn bump(&mut self) -> Span {
        let s = self.span();
        if self.pos < self.toks.len() {
            self.pos += 1;
        }
        s
    }

    fn eat(&mut self, k: Token) -> bool {
        if self.at(k) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn found(&self) -> String {
        match self.peek() {
            None => "end of item".into(),
            Some(Token::Newline) => "end of line".into(),
            Some(Token::Ident) => format!("`{}`", self.text()),
            Some(t) if t.is_keyword() => format!("keyword `{}`", self.text()),
            Some(t) => describe(t).into(),
        }
    }

    fn error_here(&mut self, expected: &str) -> Fail {
        let span = self.span();
        let found = self.found();
        self.errors.push(SyntaxError {
            code: codes::UNEXPECTED,
            span,
            message: format!("expected {expected}, found {found}"),
            label: format!("expected {expected}"),
            help: None,
        });
        Fail
    }

    fn expect(&mut self, k: Token, expected: &str) -> PResult<Span> {
        if self.at(k) {
            Ok(self.bump())
        } else {
            Err(self.error_here(expected))
        }
    }

    /// Expects the closer of a delimiter opened at `open`; reports an unclosed delimiter at the
    /// opener when the item ends first.
    fn expect_close(&mut self, k: Token, open: Span, what: &str) -> PResult<Span> {
        if self.at(k) {
            return Ok(self.bump());
        }
        // The item, the line or the enclosing block ends before the closer: the opener is
        // what is wrong, so point at it.
        let ends_here = match self.peek() {
            None => true,
            Some(Token::Newline | Token::RBrace | Token::Semi) => k != Token::RBrace,
            // An unexpected token on a later line than the opener: the line break was taken
            // as insignificant only because the opener was never closed.
            Some(_) => {
                let from = (open.end + self.base) as usize;
                let to = self
                    .toks
                    .get(self.pos)
                    .map_or(from, |t| t.span.start as usize);
                k != Token::RBrace && self.src.get(from..to).is_some_and(|g| g.contains('\n'))
            }
        };
        if ends_here {
            self.errors.push(SyntaxError {
                code: codes::UNCLOSED,
                span: open,
                message: format!("unclosed {what}"),
                label: format!("this {what} is never closed"),
                help: Some(format!("add the matching {}", describe(k))),
            });
            return Err(Fail);
        }
        Err(self.error_here(describe(k)))
    }

    /// Whether the current token can be a name. `out` and `inout` are keywords only in the
    /// direction position of a kernel parameter; elsewhere they are ordinary names (the
    /// language's own examples name tiles `out`).
    fn at_name(&self) -> bool {
        matches!(self.peek(), Some(Token::Ident | Token::Out | Token::InOut))
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        if self.at_name() {
            let name = self.text().to_string();
            let span = self.bump();
            Ok(Ident { name, span })
        } else {
            Err(self.error_here(what))
        }
    }

    fn at_contextual(&self, word: &str) -> bool {
        self.at(Token::Ident) && self.text() == word
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = self.span();
            // Report once per item.
            if !self.errors.iter().any(|e| e.code == codes::TOO_DEEP) {
                self.errors.push(SyntaxError {
                    code: codes::TOO_DEEP,
                    span,
                    message: format!("nesting deeper than {MAX_DEPTH} levels"),
                    label: "too deeply nested".into(),
                    help: Some("split the expression with `let` bindings".into()),
                });
            }
            // Skip the rest of the item: nothing sensible can be recovered inside.
            self.pos = self.toks.len();
            return Err(Fail);
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Skips to the end of the current line at the current bracket depth, stopping before a
    /// `}` that closes the enclosing block.
    fn sync_statement(&mut self) {
        let mut depth = 0i32;
        while let Some(k) = self.peek() {
            match k {
                Token::Newline | Token::Semi if depth <= 0 => return,
                Token::RBrace if depth <= 0 => return,
                Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
                Token::RParen | Token::RBracket | Token::RBrace => depth -= 1,
                _ => {}
            }
            self.bump();
        }
    }

    /// Skips to the next `,` or the closer `close` at the current depth (not consuming either).
    fn sync_list(&mut self, close: Token) {
        let mut depth = 0i32;
        while let Some(k) = self.peek() {
            match k {
                Token::Comma if depth <= 0 => return,
                k if k == close && depth <= 0 => return,
                // A list never runs past the end of the enclosing block.
                Token::RBrace if depth <= 0 => return,
                Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
                Token::RParen | Token::RBracket | Token::RBrace => depth -= 1,
                _ => {}
            }
            self.bump();
        }
    }

    fn skip_newlines(&mut self) {
        while self.eat(Token::Newline) || self.eat(Token::Semi) {}
    }

    // ---- items -----------------------------------------------------------------------

    fn item(&mut self) -> Item {
        // Doc comments were dropped by `significant_newlines`; collect them from the source.
        let docs = self.collect_docs();
        let start = self.span().start;
        let kind = match self.item_kind() {
            Ok(k) => k,
            Err(Fail) => ItemKind::Error,
        };
        // Anything left over after a complete item is an error (once).
        self.skip_newlines();
        if self.peek().is_some() && !matches!(kind, ItemKind::Error) {
            self.error_here("end of line after the item");
        }
        let end = self.end_span().end.max(start);
        Item {
            docs,
            kind,
            span: Span::new(0, end),
        }
    }

    fn collect_docs(&self) -> Option<String> {
        // The item's raw tokens start at `base`; doc comment text sits between `base` and the
        // first significant token.
        let first = self.toks.first()?;
        let region = self
            .src
            .get(self.base as usize..first.span.start as usize)?;
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

    fn item_kind(&mut self) -> PResult<ItemKind> {
        match self.peek() {
            Some(Token::Import) => self.import().map(ItemKind::Import),
            Some(Token::Const) => {
                self.bump();
                let name = self.ident("a constant name")?;
                let ty = if self.eat(Token::Colon) {
                    Some(self.type_expr()?)
                } else {
                    None
                };
                self.expect(Token::Assign, "`=`")?;
                let value = self.expr()?;
                Ok(ItemKind::Const(ConstDecl { name, ty, value }))
            }
            Some(Token::Param) => {
                self.bump();
                let name = self.ident("a parameter name")?;
                self.expect(Token::Colon, "`:` and a type")?;
                let ty = self.type_expr()?;
                let default = if self.eat(Token::Assign) {
                    Some(self.expr()?)
                } else {
                    None
                };
                Ok(ItemKind::Param(ParamDecl { name, ty, default }))
            }
            Some(Token::Axis) => {
                self.bump();
                let name = self.ident("an axis name")?;
                self.expect(Token::Assign, "`=`")?;
                let ctor = self.expr()?;
                Ok(ItemKind::Axis(AxisDecl { name, ctor }))
            }
            Some(k @ (Token::Input | Token::Output | Token::Tensor)) => {
                let kind_span = self.bump();
                let kind = match k {
                    Token::Input => TensorKind::Input,
                    Token::Output => TensorKind::Output,
                    _ => TensorKind::Scratch,
                };
                let name = self.ident("a tensor name")?;
                self.expect(Token::Colon, "`:` and a tensor type")?;
                let ty = self.type_expr()?;
                let init = if self.eat(Token::Assign) {
                    Some(self.expr()?)
                } else {
                    None
                };
                Ok(ItemKind::Tensor(TensorDecl {
                    kind,
                    kind_span,
                    name,
                    ty,
                    init,
                }))
            }
            Some(Token::Kernel | Token::Extern) => self.kernel().map(ItemKind::Kernel),
            Some(Token::Workload) => {
                self.bump();
                let name = self.ident("a workload name")?;
                let body = if self.eat(Token::Assign) {
                    WorkloadBody::Expr(self.expr()?)
                } else if self.at(Token::LBrace) {
                    WorkloadBody::Block(self.block()?)
                } else {
                    return Err(self.error_here("`{` or `=`"));
                };
                Ok(ItemKind::Workload(Workload { name, body }))
            }
            Some(Token::Channel) => {
                self.bump();
                let name = self.ident("a channel name")?;
                let mut ty_name = None;
                let mut args = Vec::new();
                if self.eat(Token::Colon) {
                    ty_name = Some(self.ident("`Channel`")?);
                    if self.at(Token::LBracket) {
                        let open = self.bump();
                        args = self.args(Token::RBracket)?;
                        self.expect_close(Token::RBracket, open, "`[`")?;
                    }
                }
                Ok(ItemKind::Channel(ChannelDecl {
                    name,
                    ty_name,
                    args,
                }))
            }
            Some(Token::Process) => self.process().map(ItemKind::Process),
            Some(Token::Schedule) => self.schedule().map(ItemKind::Schedule),
            Some(Token::Expect) => {
                self.bump();
                let expr = self.expr()?;
                Ok(ItemKind::Expect(Expect { expr }))
            }
            _ => Err(self.error_here("an item")),
        }
    }

    fn import(&mut self) -> PResult<Import> {
        self.bump();
        let mut path = vec![self.ident("a module name")?];
        let mut names = None;
        while self.eat(Token::Dot) {
            if self.at(Token::LBrace) {
                let open = self.bump();
                let mut list = Vec::new();
                loop {
                    self.skip_newlines();
                    if self.at(Token::RBrace) {
                        break;
                    }
                    list.push(self.ident("a name to import")?);
                    self.skip_newlines();
                    if !self.eat(Token::Comma) {
                        break;
                    }
                }
                self.skip_newlines();
                self.expect_close(Token::RBrace, open, "`{`")?;
                names = Some(list);
                break;
            }
            path.push(self.ident("a module name or `{`")?);
        }
        Ok(Import { path, names })
    }

    fn kernel(&mut self) -> PResult<Kernel> {
        let extern_span = if self.at(Token::Extern) {
            Some(self.bump())
        } else {
            None
        };
        self.expect(Token::Kernel, "`kernel`")?;
        let name = self.ident("a kernel name")?;
        let open = self.expect(Token::LParen, "`(`")?;
        let mut params = Vec::new();
        loop {
            if self.at(Token::RParen) || self.peek().is_none() {
                break;
            }
            match self.kernel_param() {
                Ok(p) => params.push(p),
                Err(Fail) => self.sync_list(Token::RParen),
            }
            if !self.eat(Token::Comma) {
                break;
            }
        }
        self.expect_close(Token::RParen, open, "`(`")?;
        let body = if extern_span.is_some() {
            let open = self.expect(Token::LBrace, "`{`")?;
            let mut bindings = Vec::new();
            loop {
                self.skip_newlines();
                if self.at(Token::RBrace) || self.peek().is_none() {
                    break;
                }
                let target = self.ident("a target name (`ascend`, `aie`)")?;
                self.expect(Token::Colon, "`:`")?;
                if !self.at(Token::Str) && !self.at(Token::UnterminatedStr) {
                    return Err(self.error_here("a file path string"));
                }
                let (value, span) = self.string_lit();
                bindings.push(ExternBinding {
                    target,
                    path: StrLit { value, span },
                });
                self.skip_newlines();
                if !self.eat(Token::Comma) {
                    self.skip_newlines();
                    break;
                }
            }
            self.skip_newlines();
            self.expect_close(Token::RBrace, open, "`{`")?;
            KernelBody::Extern(bindings)
        } else {
            KernelBody::Block(self.block()?)
        };
        Ok(Kernel {
            extern_span,
            name,
            params,
            body,
        })
    }

    fn kernel_param(&mut self) -> PResult<KernelParam> {
        let name = self.ident("a parameter name")?;
        let start = name.span.start;
        self.expect(Token::Colon, "`:`")?;
        let dir = match self.peek() {
            Some(Token::In) => Some((Direction::In, self.bump())),
            Some(Token::Out) if self.peek_at(1) == Some(Token::Ident) => {
                Some((Direction::Out, self.bump()))
            }
            Some(Token::InOut) if self.peek_at(1) == Some(Token::Ident) => {
                Some((Direction::InOut, self.bump()))
            }
            _ => None,
        };
        let ty = self.type_expr()?;
        let default = if self.eat(Token::Assign) {
            Some(self.expr()?)
        } else {
            None
        };
        let end = self.prev_span().end;
        Ok(KernelParam {
            name,
            dir,
            ty,
            default,
            span: Span::new(start, end),
        })
    }

    fn process(&mut self) -> PResult<Process> {
        self.bump();
        let name = self.ident("a process name")?;
        let mut consumes = Vec::new();
        let mut produces = Vec::new();
        loop {
            let list = if self.at_contextual("consumes") {
                &mut consumes
            } else if self.at_contextual("produces") {
                &mut produces
            } else {
                break;
            };
            self.bump();
            let mut names = vec![self.ident("a channel name")?];
            while self.eat(Token::Comma) {
                names.push(self.ident("a channel name")?);
            }
            list.extend(names);
        }
        if !self.at(Token::LBrace) {
            return Err(self.error_here("`consumes`, `produces` or `{`"));
        }
        let body = self.block()?;
        Ok(Process {
            name,
            consumes,
            produces,
            body,
        })
    }

    fn schedule(&mut self) -> PResult<Schedule> {
        self.bump();
        let name = self.ident("a schedule name")?;
        self.expect(Token::Assign, "`=`")?;
        let workload = self.ident("a workload name")?;
        let mut directives = Vec::new();
        while self.at(Token::Dot) {
            let dot = self.bump();
            let dname = self.ident("a schedule directive")?;
            let mut args = Vec::new();
            if self.at(Token::LParen) {
                let open = self.bump();
                args = self.args(Token::RParen)?;
                self.expect_close(Token::RParen, open, "`(`")?;
            }
            let end = self.prev_span().end;
            directives.push(Directive {
                name: dname,
                args,
                span: Span::new(dot.start, end),
            });
        }
        Ok(Schedule {
            name,
            workload,
            directives,
        })
    }

    fn type_expr(&mut self) -> PResult<TypeExpr> {
        let dtype = self.ident("a type such as `f32` or `f32[64, 64]`")?;
        let start = dtype.span.start;
        let dims = if self.at(Token::LBracket) {
            let open = self.bump();
            let mut dims = Vec::new();
            loop {
                if self.at(Token::RBracket) || self.peek().is_none() {
                    break;
                }
                let dstart = self.span().start;
                let partial = self.eat(Token::DotDot);
                let size = self.expr_bp(BP_RANGE + 1)?;
                let dend = self.prev_span().end;
                dims.push(Dim {
                    partial,
                    size,
                    span: Span::new(dstart, dend),
                });
                if !self.eat(Token::Comma) {
                    break;
                }
            }
            self.expect_close(Token::RBracket, open, "`[`")?;
            Some(dims)
        } else {
            None
        };
        let end = self.prev_span().end;
        Ok(TypeExpr {
            dtype,
            dims,
            span: Span::new(start, end),
        })
    }

    // ---- statements ------------------------------------------------------------------

    fn block(&mut self) -> PResult<Block> {
        let open = self.expect(Token::LBrace, "`{`")?;
        self.enter()?;
        let mut stmts = Vec::new();
        loop {
            self.skip_newlines();
            match self.peek() {
                None => {
                    // Unclosed block: report at the opener but keep what was parsed.
                    let _ = self.expect_close(Token::RBrace, open, "`{`");
                    self.leave();
                    let end = self.end_span().end.max(open.end);
                    return Ok(Block {
                        stmts,
                        span: Span::new(open.start, end),
                    });
                }
                Some(Token::RBrace) => break,
                _ => {}
            }
            let start_pos = self.pos;
            let sstart = self.span().start;
            let stmt = match self.stmt() {
                Ok(kind) => {
                    // A statement ends at a newline, `;` or the block's `}`.
                    if !matches!(
                        self.peek(),
                        None | Some(Token::Newline | Token::Semi | Token::RBrace)
                    ) {
                        self.error_here("end of statement (a new line or `;`)");
                        self.sync_statement();
                    }
                    kind
                }
                Err(Fail) => {
                    self.sync_statement();
                    StmtKind::Error
                }
            };
            if self.pos == start_pos {
                // Guarantee progress.
                self.bump();
            }
            let send = self.prev_span().end.max(sstart);
            stmts.push(Stmt {
                kind: stmt,
                span: Span::new(sstart, send),
            });
            if self.depth > MAX_DEPTH {
                break;
            }
        }
        let close = self.bump();
        self.leave();
        Ok(Block {
            stmts,
            span: Span::new(open.start, close.end),
        })
    }

    fn stmt(&mut self) -> PResult<StmtKind> {
        match self.peek() {
            Some(Token::Let) => {
                self.bump();
                let (names, tuple) = if self.at(Token::LParen) {
                    let open = self.bump();
                    let mut names = vec![self.ident("a name")?];
                    while self.eat(Token::Comma) {
                        if self.at(Token::RParen) {
                            break;
                        }
                        names.push(self.ident("a name")?);
                    }
                    self.expect_close(Token::RParen, open, "`(`")?;
                    (names, true)
                } else {
                    (vec![self.ident("a name")?], false)
                };
                let ty = if self.eat(Token::Colon) {
                    Some(self.type_expr()?)
                } else {
                    None
                };
                self.expect(Token::Assign, "`=`")?;
                let value = self.expr()?;
                Ok(StmtKind::Let {
                    names,
                    tuple,
                    ty,
                    value,
                })
            }
            Some(Token::Var) => {
                self.bump();
                let name = self.ident("a name")?;
                let ty = if self.eat(Token::Colon) {
                    Some(self.type_expr()?)
                } else {
                    None
                };
                self.expect(Token::Assign, "`=`")?;
                let value = self.expr()?;
                Ok(StmtKind::Var { name, ty, value })
            }
            Some(Token::For) => {
                self.bump();
                let mut vars = vec![self.ident("a loop variable")?];
                while self.eat(Token::Comma) {
                    vars.push(self.ident("a loop variable")?);
                }
                self.expect(Token::In, "`in`")?;
                let iter = self.expr()?;
                let body = self.block()?;
                Ok(StmtKind::For { vars, iter, body })
            }
            Some(Token::When) => {
                self.bump();
                let mut branches = Vec::new();
                let cond = self.expr()?;
                let body = self.block()?;
                branches.push((cond, body));
                let mut otherwise = None;
                while self.at(Token::Else)
                    || (self.at(Token::Newline) && self.peek_at(1) == Some(Token::Else))
                {
                    self.eat(Token::Newline);
                    self.bump();
                    if self.eat(Token::When) {
                        let cond = self.expr()?;
                        let body = self.block()?;
                        branches.push((cond, body));
                    } else {
                        otherwise = Some(self.block()?);
                        break;
                    }
                }
                Ok(StmtKind::When {
                    branches,
                    otherwise,
                })
            }
            Some(Token::Send) => {
                self.bump();
                let channel = self.ident("a channel name")?;
                self.expect(Token::Comma, "`,` and the task or value to send")?;
                let value = self.expr()?;
                Ok(StmtKind::Send { channel, value })
            }
            Some(Token::Consume) => {
                self.bump();
                let channel = self.ident("a channel name")?;
                self.expect(Token::As, "`as`")?;
                let bindings = if self.at(Token::LParen) {
                    let open = self.bump();
                    let mut names = vec![self.ident("a name")?];
                    while self.eat(Token::Comma) {
                        names.push(self.ident("a name")?);
                    }
                    self.expect_close(Token::RParen, open, "`(`")?;
                    names
                } else {
                    vec![self.ident("a name")?]
                };
                let body = self.block()?;
                Ok(StmtKind::Consume {
                    channel,
                    bindings,
                    body,
                })
            }
            Some(Token::Ident)
                if self.text() == "pipe"
                    && self.peek_at(1) == Some(Token::Ident)
                    && self.peek_at(2) == Some(Token::Colon) =>
            {
                self.bump();
                let name = self.ident("a pipe name")?;
                self.expect(Token::Colon, "`:`")?;
                let pipe_ty = self.ident("`Pipe`")?;
                if pipe_ty.name != "Pipe" {
                    self.errors.push(SyntaxError {
                        code: codes::UNEXPECTED,
                        span: pipe_ty.span,
                        message: format!("expected `Pipe`, found `{}`", pipe_ty.name),
                        label: "expected `Pipe[tile type, slots: n]`".into(),
                        help: None,
                    });
                    return Err(Fail);
                }
                let open = self.expect(Token::LBracket, "`[`")?;
                let elem = self.type_expr()?;
                let mut args = Vec::new();
                if self.eat(Token::Comma) {
                    args = self.args(Token::RBracket)?;
                }
                self.expect_close(Token::RBracket, open, "`[`")?;
                Ok(StmtKind::Pipe { name, elem, args })
            }
            Some(Token::Ident)
                if (self.text() == "cube" || self.text() == "vector")
                    && self.peek_at(1) == Some(Token::LBrace) =>
            {
                let kind = if self.text() == "cube" {
                    SectionKind::Cube
                } else {
                    SectionKind::Vector
                };
                let kind_span = self.bump();
                let body = self.block()?;
                Ok(StmtKind::Section {
                    kind,
                    kind_span,
                    body,
                })
            }
            _ => {
                let target = self.expr()?;
                let op = match self.peek() {
                    Some(Token::Assign) => Some(None),
                    Some(Token::PlusAssign) => Some(Some(BinOp::Add)),
                    Some(Token::MinusAssign) => Some(Some(BinOp::Sub)),
                    Some(Token::StarAssign) => Some(Some(BinOp::Mul)),
                    Some(Token::SlashAssign) => Some(Some(BinOp::Div)),
                    _ => None,
                };
                match op {
                    Some(op) => {
                        self.bump();
                        let value = self.expr()?;
                        Ok(StmtKind::Assign { target, op, value })
                    }
                    None => Ok(StmtKind::Expr(target)),
                }
            }
        }
    }

    // ---- expressions -----------------------------------------------------------------

    fn expr(&mut self) -> PResult<Expr> {
        self.expr_bp(0)
    }

    /// Pratt parser: `min_bp` is the lowest binding power accepted.
    fn expr_bp(&mut self, min_bp: u8) -> PResult<Expr> {
        self.enter()?;
        let r = self.expr_bp_inner(min_bp);
        self.leave();
        r
    }

    fn expr_bp_inner(&mut self, min_bp: u8) -> PResult<Expr> {
        // Prefix range `..b`.
        let mut lhs = if self.at(Token::DotDot) && min_bp <= BP_RANGE {
            let start = self.bump();
            let end = if self.range_end_follows() {
                None
            } else {
                Some(Box::new(self.expr_bp(BP_RANGE + 1)?))
            };
            let span = Span::new(start.start, self.prev_span().end);
            return Ok(Expr {
                kind: ExprKind::Range { start: None, end },
                span,
            });
        } else {
            self.unary()?
        };
        while let Some(tok) = self.peek() {
            if tok == Token::DotDot {
                if BP_RANGE < min_bp {
                    break;
                }
                self.bump();
                let end = if self.range_end_follows() {
                    None
                } else {
                    Some(Box::new(self.expr_bp(BP_RANGE + 1)?))
                };
                let span = Span::new(lhs.span.start, self.prev_span().end);
                lhs = Expr {
                    kind: ExprKind::Range {
                        start: Some(Box::new(lhs)),
                        end,
                    },
                    span,
                };
                continue;
            }
            let Some((op, bp)) = binop(tok) else { break };
            if bp < min_bp {
                break;
            }
            self.bump();
            let rhs = self.expr_bp(bp + 1)?;
            let span = lhs.span.cover(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
            };
        }
        Ok(lhs)
    }

    /// Whether a range's end is omitted (`a..` before `,`, `]`, `)` or `{`).
    fn range_end_follows(&self) -> bool {
        matches!(
            self.peek(),
            None | Some(
                Token::Comma
                    | Token::RBracket
                    | Token::RParen
                    | Token::LBrace
                    | Token::Newline
                    | Token::Semi
            )
        )
    }

    fn unary(&mut self) -> PResult<Expr> {
        let op = match self.peek() {
            Some(Token::Minus) => Some(UnOp::Neg),
            Some(Token::Bang) => Some(UnOp::Not),
            _ => None,
        };
        if let Some(op) = op {
            let start = self.bump();
            self.enter()?;
            let inner = self.unary();
            self.leave();
            let inner = inner?;
            let span = Span::new(start.start, inner.span.end);
            return Ok(Expr {
                kind: ExprKind::Unary {
                    op,
                    expr: Box::new(inner),
                },
                span,
            });
        }
        self.postfix()
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            match self.peek() {
                Some(Token::Dot) => {
                    self.bump();
                    let field = self.ident("a name after `.`")?;
                    let span = Span::new(e.span.start, field.span.end);
                    e = Expr {
                        kind: ExprKind::Field {
                            base: Box::new(e),
                            field,
                        },
                        span,
                    };
                }
                Some(Token::LParen) => {
                    let open = self.bump();
                    let args = self.args(Token::RParen)?;
                    let close = self.expect_close(Token::RParen, open, "`(`")?;
                    let span = Span::new(e.span.start, close.end);
                    // `k[coords](args)` is a task call.
                    let (callee, coords) = match e.kind {
                        ExprKind::Index { base, indices } => (base, Some(indices)),
                        other => (
                            Box::new(Expr {
                                kind: other,
                                span: e.span,
                            }),
                            None,
                        ),
                    };
                    e = Expr {
                        kind: ExprKind::Call {
                            callee,
                            coords,
                            args,
                        },
                        span,
                    };
                }
                Some(Token::LBracket) => {
                    let open = self.bump();
                    let indices = self.list(Token::RBracket, true)?;
                    let close = self.expect_close(Token::RBracket, open, "`[`")?;
                    let span = Span::new(e.span.start, close.end);
                    e = Expr {
                        kind: ExprKind::Index {
                            base: Box::new(e),
                            indices,
                        },
                        span,
                    };
                }
                _ => break,
            }
        }
        Ok(e)
    }

    fn primary(&mut self) -> PResult<Expr> {
        let span = self.span();
        let kind = match self.peek() {
            Some(Token::Int) => {
                let text = self.text().replace('_', "");
                self.bump();
                let parsed = if let Some(hex) =
                    text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))
                {
                    u64::from_str_radix(hex, 16)
                } else {
                    text.parse::<u64>()
                };
                match parsed {
                    Ok(v) => ExprKind::Int(v),
                    Err(_) => {
                        self.bad_number(span, "integer literal is out of range or malformed");
                        ExprKind::Error
                    }
                }
            }
            Some(Token::Float) => {
                let text = self.text().replace('_', "");
                self.bump();
                match text.parse::<f64>() {
                    Ok(v) if v.is_finite() => ExprKind::Float(FloatLit(v)),
                    _ => {
                        self.bad_number(span, "float literal is out of range or malformed");
                        ExprKind::Error
                    }
                }
            }
            Some(Token::Str | Token::UnterminatedStr) => {
                let (value, _) = self.string_lit();
                ExprKind::Str(value)
            }
            Some(Token::True) => {
                self.bump();
                ExprKind::Bool(true)
            }
            Some(Token::False) => {
                self.bump();
                ExprKind::Bool(false)
            }
            Some(Token::Ident | Token::Out | Token::InOut) => {
                let id = self.ident("a name")?;
                ExprKind::Name(id)
            }
            Some(Token::LParen) => {
                let open = self.bump();
                let mut items = self.list(Token::RParen, false)?;
                let close = self.expect_close(Token::RParen, open, "`(`")?;
                if items.len() == 1 && !self.prev_was_trailing_comma(close) {
                    let mut inner = items.remove(0);
                    inner.span = Span::new(open.start, close.end);
                    return Ok(inner);
                }
                return Ok(Expr {
                    kind: ExprKind::Tuple(items),
                    span: Span::new(open.start, close.end),
                });
            }
            Some(Token::LBracket) => {
                let open = self.bump();
                let items = self.list(Token::RBracket, false)?;
                let close = self.expect_close(Token::RBracket, open, "`[`")?;
                return Ok(Expr {
                    kind: ExprKind::List(items),
                    span: Span::new(open.start, close.end),
                });
            }
            _ => return Err(self.error_here("an expression")),
        };
        Ok(Expr {
            kind,
            span: Span::new(span.start, self.prev_span().end),
        })
    }

    fn prev_was_trailing_comma(&self, close: Span) -> bool {
        // The token before `)` is a comma: `(a,)` is a one-element tuple.
        self.pos >= 2
            && self
                .toks
                .get(self.pos - 2)
                .is_some_and(|t| t.kind == Token::Comma && self.rel(t.span).end <= close.start)
    }

    fn bad_number(&mut self, span: Span, message: &str) {
        self.errors.push(SyntaxError {
            code: codes::BAD_NUMBER,
            span,
            message: message.into(),
            label: "invalid number".into(),
            help: Some(
                "integers fit in 64 bits (`42`, `0x2a`, `1_024`); floats are finite (`1.0`, `1e-6`)"
                    .into(),
            ),
        });
    }

    /// Consumes a string token and returns its unescaped value and span.
    fn string_lit(&mut self) -> (String, Span) {
        let raw = self.text();
        let span = self.bump();
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
        (out, span)
    }

    /// A comma-separated list of expressions up to `close` (not consumed). Elements that fail
    /// become `Error` expressions and parsing resumes at the next `,`.
    fn list(&mut self, close: Token, slices: bool) -> PResult<Vec<Expr>> {
        let mut items = Vec::new();
        loop {
            if self.at(close) || self.peek().is_none() {
                break;
            }
            if slices && self.at(Token::Colon) {
                let span = self.bump();
                items.push(Expr {
                    kind: ExprKind::FullSlice,
                    span,
                });
            } else {
                let start = self.span();
                match self.expr() {
                    Ok(e) => items.push(e),
                    Err(Fail) => {
                        if self.depth > MAX_DEPTH || self.pos >= self.toks.len() {
                            return Err(Fail);
                        }
                        self.sync_list(close);
                        items.push(Expr {
                            kind: ExprKind::Error,
                            span: Span::new(start.start, self.prev_span().end.max(start.start)),
                        });
                    }
                }
            }
            if !self.eat(Token::Comma) {
                break;
            }
        }
        Ok(items)
    }

    /// Call arguments `a, name: b` up to `close` (not consumed), recovering per argument.
    fn args(&mut self, close: Token) -> PResult<Vec<Arg>> {
        let mut args = Vec::new();
        loop {
            if self.at(close) || self.peek().is_none() {
                break;
            }
            let start = self.span().start;
            let name = if self.at_name() && self.peek_at(1) == Some(Token::Colon) {
                let id = self.ident("a name")?;
                self.bump();
                Some(id)
            } else {
                None
            };
            let value = match self.expr() {
                Ok(e) => e,
                Err(Fail) => {
                    if self.depth > MAX_DEPTH || self.pos >= self.toks.len() {
                        return Err(Fail);
                    }
                    let s = self.span().start;
                    self.sync_list(close);
                    Expr {
                        kind: ExprKind::Error,
                        span: Span::new(s, self.prev_span().end.max(s)),
                    }
                }
            };
            let end = value.span.end.max(start);
            args.push(Arg {
                name,
                value,
                span: Span::new(start, end),
            });
            if !self.eat(Token::Comma) {
                break;
            }
        }
        Ok(args)
    }
}

const BP_RANGE: u8 = 1;

fn binop(t: Token) -> Option<(BinOp, u8)> {
    Some(match t {
        Token::OrOr => (BinOp::Or, 2),
        Token::AndAnd => (BinOp::And, 3),
        Token::EqEq => (BinOp::Eq, 4),
        Token::NotEq => (BinOp::Ne, 4),
        Token::Lt => (BinOp::Lt, 4),
        Token::Le => (BinOp::Le, 4),
        Token::Gt => (BinOp::Gt, 4),
        Token::Ge => (BinOp::Ge, 4),
        Token::Plus => (BinOp::Add, 5),
        Token::Minus => (BinOp::Sub, 5),
        Token::Star => (BinOp::Mul, 6),
        Token::Slash => (BinOp::Div, 6),
        Token::Percent => (BinOp::Rem, 6),
        _ => return None,
    })
}
