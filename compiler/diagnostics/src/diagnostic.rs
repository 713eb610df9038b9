use std::sync::Arc;

use wsp_syntax::Span;

/// How a file is named in diagnostics: the path as the user gave it (CLI) or
/// the document URI's path (LSP), or `std/...` for the standard library.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileName(pub Arc<str>);

impl FileName {
    pub fn new(name: impl Into<Arc<str>>) -> FileName {
        FileName(name.into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for FileName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

/// Extra meaning an editor can show (LSP `DiagnosticTag`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// Unused item: the editor greys it out.
    Unnecessary,
    Deprecated,
}

/// A labelled source range.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Label {
    pub file: FileName,
    pub span: Span,
    pub message: String,
}

impl Label {
    pub fn new(file: FileName, span: Span, message: impl Into<String>) -> Label {
        Label {
            file,
            span,
            message: message.into(),
        }
    }
}

/// One text replacement of a fix.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Edit {
    pub file: FileName,
    pub span: Span,
    pub replacement: String,
}

/// A machine-applicable fix (an LSP quick fix, `wsp check --fix` later).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fix {
    /// Shown to the user: "change `P` to `P.seq`".
    pub title: String,
    pub edits: Vec<Edit>,
}

impl Fix {
    /// `text` (the contents of `file`) with this fix's edits of `file` applied. Edits are
    /// applied from the last to the first so that earlier spans stay valid; an edit whose
    /// span is not a range of `text` on character boundaries is skipped.
    pub fn apply_to(&self, file: &FileName, text: &str) -> String {
        let mut edits: Vec<&Edit> = self.edits.iter().filter(|e| &e.file == file).collect();
        edits.sort_by_key(|e| std::cmp::Reverse((e.span.start, e.span.end)));
        let mut out = text.to_string();
        for e in edits {
            let r = e.span.start as usize..e.span.end as usize;
            if out.get(r.clone()).is_some() {
                out.replace_range(r, &e.replacement);
            }
        }
        out
    }
}

/// A diagnostic: stable code, severity, message, primary and secondary labels,
/// notes, help and optional fixes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    /// Stable code: `E0xxx` for errors, `W0xxx` for warnings.
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub primary: Label,
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
    pub fixes: Vec<Fix>,
    pub tags: Vec<Tag>,
}

impl Diagnostic {
    /// An error; the severity follows the code's first letter (`E`/`W`).
    pub fn new(code: &'static str, message: impl Into<String>, primary: Label) -> Diagnostic {
        let severity = if code.starts_with('W') {
            Severity::Warning
        } else {
            Severity::Error
        };
        Diagnostic {
            code,
            severity,
            message: message.into(),
            primary,
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
            fixes: Vec::new(),
            tags: Vec::new(),
        }
    }

    pub fn with_label(mut self, label: Label) -> Self {
        self.secondary.push(label);
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn with_fix(mut self, fix: Fix) -> Self {
        self.fixes.push(fix);
        self
    }

    pub fn with_tag(mut self, tag: Tag) -> Self {
        self.tags.push(tag);
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Moves every span in `file` right by `offset` (item-relative → absolute).
    pub fn shifted(mut self, file: &FileName, offset: u32) -> Self {
        let shift = |l: &mut Label| {
            if &l.file == file {
                l.span = l.span.shift(offset);
            }
        };
        shift(&mut self.primary);
        self.secondary.iter_mut().for_each(shift);
        for fix in &mut self.fixes {
            for e in &mut fix.edits {
                if &e.file == file {
                    e.span = e.span.shift(offset);
                }
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixes_apply_back_to_front_and_only_to_their_file() {
        let f = FileName::new("a.wsp");
        let edit = |file: &FileName, s: u32, e: u32, r: &str| Edit {
            file: file.clone(),
            span: Span::new(s, e),
            replacement: r.into(),
        };
        let fix = Fix {
            title: "t".into(),
            edits: vec![
                edit(&f, 0, 1, "P.seq"),
                edit(&f, 3, 3, ", b"),
                edit(&FileName::new("b.wsp"), 0, 1, "no"),
                // Not on a character boundary of `é`, and past the end: skipped.
                edit(&f, 7, 8, "x"),
                edit(&f, 40, 41, "x"),
            ],
        };
        assert_eq!(fix.apply_to(&f, "P(a)  é"), "P.seq(a, b)  é");
    }
}
