//! `wsp-diagnostics`: the one diagnostic type of the toolchain.
//!
//! Diagnostics are plain values returned by compiler queries. They carry byte
//! ranges ([`Span`]) and a [`FileName`]; only the CLI renders them (see
//! [`render`]) and only the language server converts them to LSP positions.
//! The code catalog ([`explain`], [`catalog`]) is built from
//! `explanations/<CODE>.md`, one file per code.

mod catalog;
mod diagnostic;
pub mod render;

pub use catalog::{catalog, explain, markdown_index, nearest, renamed};
pub use diagnostic::*;
pub use wsp_syntax::Span;
