//! `wsp-syntax`: tokens, the error-recovering parser and the AST of `.wsp`.
//!
//! [`parse`] never fails and never panics: every input gives a [`SourceFile`]
//! plus a list of [`SyntaxError`]s. See [`ast`] for the span convention.

pub mod ast;
pub mod lexer;
pub mod parser;
mod span;
pub mod visit;

pub use ast::SourceFile;
pub use lexer::{item_keyword, lex, Token, TokenInfo};
pub use parser::{assemble, cut, idents, parse, parse_item, parse_prefix, ItemParse};
pub use span::Span;

/// The result of parsing one file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Parse {
    pub file: SourceFile,
    /// Errors with absolute spans, in source order.
    pub errors: Vec<SyntaxError>,
}

/// A syntax error. `code` is a stable diagnostic code from the `E00xx` range.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SyntaxError {
    pub code: &'static str,
    pub span: Span,
    pub message: String,
    /// Short label text for the primary span (e.g. "expected `)`").
    pub label: String,
    pub help: Option<String>,
}
