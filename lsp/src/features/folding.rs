//! Folding ranges: every `{ … }` spanning lines, and runs of two or more whole-line comments.

use wsp_core::Workspace;
use wsp_syntax::{lex, Token};

use super::{comments, span, text_of};
use crate::analysis::LineIndex;

/// Folding ranges `(start line, end line, is comment)`: every `{ … }` spanning lines (kernel,
/// workload, process and schedule bodies, nested blocks), up to the line before its `}`; and
/// runs of two or more whole-line comments.
pub fn folding_ranges(ws: &Workspace, path: &str) -> Vec<(u32, u32, bool)> {
    let Some(text) = text_of(ws, path) else {
        return Vec::new();
    };
    let idx = LineIndex::new(&text);
    let toks = lex(&text);
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for t in &toks {
        match t.kind {
            Token::LBrace => stack.push(idx.position(t.span.start as usize).line),
            Token::RBrace => {
                if let Some(open) = stack.pop() {
                    let close = idx.position(t.span.start as usize).line;
                    if close > open + 1 {
                        out.push((open, close - 1, false));
                    }
                }
            }
            _ => {}
        }
    }
    // Whole-line comments (plain and doc).
    let mut lines: Vec<u32> = comments(&text, &toks)
        .into_iter()
        .chain(
            toks.iter()
                .filter(|t| t.kind == Token::DocComment)
                .map(span),
        )
        .filter(|(s, _)| {
            let ls = text[..*s].rfind('\n').map(|i| i + 1).unwrap_or(0);
            text[ls..*s].trim().is_empty()
        })
        .map(|(s, _)| idx.position(s).line)
        .collect();
    lines.sort_unstable();
    lines.dedup();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j + 1] == lines[j] + 1 {
            j += 1;
        }
        if j > i {
            out.push((lines[i], lines[j], true));
        }
        i = j + 1;
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::test_support::ws;

    #[test]
    fn folding_bodies_and_comment_runs() {
        let ws = ws();
        let f = folding_ranges(&ws, "a.wsp");
        assert!(f.contains(&(4, 6, true)), "{f:?}");
        assert!(f.contains(&(7, 9, false)), "kernel body {f:?}");
        assert!(f.contains(&(11, 12, false)), "workload body {f:?}");
    }
}
