//! Rendering: terminal (ariadne), JSON and SARIF (serde_json). Line/column conversion lives in [`LineIndex`].

use std::sync::Arc;

use crate::{Diagnostic, FileName, Severity};

/// Byte offset → 1-based line and column (columns count characters, not bytes).
pub struct LineIndex {
    starts: Vec<usize>,
}

/// The byte offsets at which the lines of `text` start: after `\n`, `\r\n` or a lone `\r`
/// (the newlines the lexer knows, as editors write them).
pub fn line_starts(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut starts = vec![0];
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' || (c == b'\r' && b.get(i + 1) != Some(&b'\n')) {
            starts.push(i + 1);
        }
    }
    starts
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        LineIndex {
            starts: line_starts(text),
        }
    }

    /// 1-based (line, column) of a byte offset; offsets inside a character or past the end are
    /// clamped.
    pub fn line_col(&self, text: &str, offset: u32) -> (usize, usize) {
        let off = (offset as usize).min(text.len());
        let line = self.starts.partition_point(|&s| s <= off).saturating_sub(1);
        let start = self.starts.get(line).copied().unwrap_or(0);
        let mut end = off;
        while end > start && !text.is_char_boundary(end) {
            end -= 1;
        }
        let col = text.get(start..end).map(|s| s.chars().count()).unwrap_or(0);
        (line + 1, col + 1)
    }
}

/// Where the renderers find source text.
pub trait Sources {
    fn text(&self, file: &FileName) -> Option<Arc<str>>;
}

/// Renders diagnostics for a terminal with ariadne (colour only when `color`), each followed by
/// the `wsp explain CODE` line of its code.
pub fn render_human(diags: &[Diagnostic], sources: &dyn Sources, color: bool) -> String {
    use ariadne::{Config, IndexType, Label, Report, ReportKind};
    let mut out = Vec::new();
    for d in diags {
        let kind = match d.severity {
            Severity::Error => ReportKind::Error,
            Severity::Warning => ReportKind::Warning,
            Severity::Note => ReportKind::Advice,
        };
        let texts: Vec<(String, String)> = std::iter::once(&d.primary)
            .chain(&d.secondary)
            .map(|l| {
                let t = sources
                    .text(&l.file)
                    .map(|t| t.to_string())
                    .unwrap_or_default();
                (l.file.to_string(), t)
            })
            .collect();
        let clamp = |file: &str, r: std::ops::Range<usize>| {
            let len = texts
                .iter()
                .find(|(f, _)| f == file)
                .map(|(_, t)| t.len())
                .unwrap_or(0);
            r.start.min(len)..r.end.min(len)
        };
        let pfile = d.primary.file.to_string();
        let mut b = Report::build(kind, (pfile.clone(), clamp(&pfile, d.primary.span.range())))
            .with_config(
                Config::default()
                    .with_color(color)
                    .with_index_type(IndexType::Byte),
            )
            .with_code(d.code)
            .with_message(&d.message)
            .with_label(
                Label::new((pfile.clone(), clamp(&pfile, d.primary.span.range())))
                    .with_message(&d.primary.message),
            );
        for l in &d.secondary {
            let f = l.file.to_string();
            b = b.with_label(
                Label::new((f.clone(), clamp(&f, l.span.range()))).with_message(&l.message),
            );
        }
        for n in &d.notes {
            b = b.with_note(n);
        }
        if let Some(h) = &d.help {
            b = b.with_help(h);
        }
        let cache = ariadne::sources(texts.clone());
        let _ = b.finish().write(cache, &mut out);
        // Every code of the catalog has a page: say how to read it.
        if crate::explain(d.code).is_some() {
            out.extend_from_slice(
                format!("  (causes and fixes: `wsp explain {}`)\n", d.code).as_bytes(),
            );
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// One diagnostic of [`render_json`] (fields in this order).
#[derive(serde::Serialize)]
struct JsonDiagnostic<'a> {
    code: &'a str,
    severity: &'static str,
    message: &'a str,
    help: Option<&'a str>,
    notes: &'a [String],
    labels: Vec<JsonLabel<'a>>,
    fixes: Vec<JsonFix<'a>>,
}

#[derive(serde::Serialize)]
struct JsonLabel<'a> {
    file: &'a str,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    message: &'a str,
    primary: bool,
}

#[derive(serde::Serialize)]
struct JsonFix<'a> {
    title: &'a str,
    edits: Vec<JsonEdit<'a>>,
}

#[derive(serde::Serialize)]
struct JsonEdit<'a> {
    file: &'a str,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    replacement: &'a str,
}

/// Renders diagnostics as a JSON array, one diagnostic a line: code, severity, message, help,
/// notes, labels (file, 1-based line and column — columns count characters — end line/column,
/// message, primary), and fixes.
pub fn render_json(diags: &[Diagnostic], sources: &dyn Sources) -> String {
    let pos = |file: &FileName, off: u32| -> (usize, usize) {
        match sources.text(file) {
            Some(t) => LineIndex::new(&t).line_col(&t, off),
            None => (1, 1),
        }
    };
    let lines: Vec<String> = diags
        .iter()
        .map(|d| {
            let labels = std::iter::once((&d.primary, true))
                .chain(d.secondary.iter().map(|l| (l, false)))
                .map(|(l, primary)| {
                    let (line, column) = pos(&l.file, l.span.start);
                    let (end_line, end_column) = pos(&l.file, l.span.end);
                    JsonLabel {
                        file: l.file.as_str(),
                        line,
                        column,
                        end_line,
                        end_column,
                        message: &l.message,
                        primary,
                    }
                })
                .collect();
            let fixes = d
                .fixes
                .iter()
                .map(|f| JsonFix {
                    title: &f.title,
                    edits: f
                        .edits
                        .iter()
                        .map(|e| {
                            let (line, column) = pos(&e.file, e.span.start);
                            let (end_line, end_column) = pos(&e.file, e.span.end);
                            JsonEdit {
                                file: e.file.as_str(),
                                line,
                                column,
                                end_line,
                                end_column,
                                replacement: &e.replacement,
                            }
                        })
                        .collect(),
                })
                .collect();
            let j = JsonDiagnostic {
                code: d.code,
                severity: severity_name(d.severity),
                message: &d.message,
                help: d.help.as_deref(),
                notes: &d.notes,
                labels,
                fixes,
            };
            // Serializing plain strings, numbers and booleans cannot fail.
            serde_json::to_string(&j).unwrap_or_default()
        })
        .collect();
    if lines.is_empty() {
        "[]\n".to_string()
    } else {
        format!("[\n  {}\n]\n", lines.join(",\n  "))
    }
}

/// Renders diagnostics as a SARIF 2.1.0 log (for CI code scanning): one run, the catalog's codes
/// as rules, each diagnostic a result with its primary location and secondary labels as related
/// locations. Lines and columns are 1-based; columns count characters.
pub fn render_sarif(diags: &[Diagnostic], sources: &dyn Sources) -> String {
    use serde_json::{json, Value};
    let region = |file: &FileName, span: wsp_syntax::Span| -> Value {
        match sources.text(file) {
            Some(t) => {
                let li = LineIndex::new(&t);
                let (l, c) = li.line_col(&t, span.start);
                let (el, ec) = li.line_col(&t, span.end);
                json!({"startLine": l, "startColumn": c, "endLine": el, "endColumn": ec})
            }
            None => json!({"startLine": 1}),
        }
    };
    let location = |l: &crate::Label, id: Option<usize>| -> Value {
        let mut v = json!({
            "physicalLocation": {
                "artifactLocation": {"uri": l.file.as_str()},
                "region": region(&l.file, l.span),
            },
            "message": {"text": l.message},
        });
        if let (Some(i), Some(o)) = (id, v.as_object_mut()) {
            o.insert("id".into(), json!(i));
        }
        v
    };
    let rules: Vec<Value> = crate::catalog()
        .iter()
        .map(|(c, t)| {
            json!({
                "id": c,
                "shortDescription": {"text": t},
                "fullDescription": {"text": crate::explain(c).unwrap_or("")},
            })
        })
        .collect();
    let results: Vec<Value> = diags
        .iter()
        .map(|d| {
            let mut text = d.message.clone();
            if let Some(h) = &d.help {
                text.push_str("\nhelp: ");
                text.push_str(h);
            }
            let related: Vec<Value> = d
                .secondary
                .iter()
                .enumerate()
                .map(|(i, l)| location(l, Some(i + 1)))
                .collect();
            json!({
                "ruleId": d.code,
                "level": severity_name(d.severity),
                "message": {"text": text},
                "locations": [location(&d.primary, None)],
                "relatedLocations": related,
            })
        })
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "wsp", "version": env!("CARGO_PKG_VERSION"), "rules": rules}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    let mut out = serde_json::to_string_pretty(&log).unwrap_or_default();
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Label;
    use wsp_syntax::Span;

    struct One(FileName, Arc<str>);
    impl Sources for One {
        fn text(&self, f: &FileName) -> Option<Arc<str>> {
            (f == &self.0).then(|| self.1.clone())
        }
    }

    #[test]
    fn line_col_counts_characters() {
        let t = "ab\nκλμ x\n";
        let li = LineIndex::new(t);
        assert_eq!(li.line_col(t, 0), (1, 1));
        assert_eq!(li.line_col(t, 3), (2, 1));
        let x = t.find('x').unwrap() as u32;
        assert_eq!(li.line_col(t, x), (2, 5));
        assert_eq!(li.line_col(t, 4), (2, 1)); // inside a character: clamped
        assert_eq!(li.line_col(t, 999), (3, 1));
    }

    #[test]
    fn json_has_positions_and_escapes() {
        let f = FileName::new("a.wsp");
        let src: Arc<str> = Arc::from("const A = \"q\"\nconst A = 2\n");
        let d = Diagnostic::new(
            "E0102",
            "`A` is \"defined\" twice",
            Label::new(f.clone(), Span::new(20, 21), "again"),
        )
        .with_label(Label::new(f.clone(), Span::new(6, 7), "first"))
        .with_help("rename");
        let j = render_json(&[d], &One(f, src));
        assert!(j.contains("\"line\":2,\"column\":7"), "{j}");
        assert!(j.contains("\\\"defined\\\""), "{j}");
        assert!(j.contains("\"primary\":false"), "{j}");
    }

    #[test]
    fn sarif_is_valid_json_with_rules_and_results() {
        let f = FileName::new("a.wsp");
        let src: Arc<str> = Arc::from("const A = 1\nconst A = 2\n");
        let d = Diagnostic::new(
            "E0102",
            "`A` is defined twice",
            Label::new(f.clone(), Span::new(18, 19), "again"),
        )
        .with_label(Label::new(f.clone(), Span::new(6, 7), "first"));
        let out = render_sarif(&[d], &One(f, src));
        let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
        assert_eq!(v["version"], "2.1.0");
        let run = &v["runs"][0];
        assert!(run["tool"]["driver"]["rules"]
            .as_array()
            .is_some_and(|r| r.len() > 10));
        let r = &run["results"][0];
        assert_eq!(r["ruleId"], "E0102");
        assert_eq!(
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            2
        );
        assert_eq!(
            r["locations"][0]["physicalLocation"]["region"]["startColumn"],
            7
        );
        assert_eq!(
            r["relatedLocations"][0]["physicalLocation"]["region"]["startLine"],
            1
        );
    }

    #[test]
    fn json_output_parses() {
        let f = FileName::new("a.wsp");
        let src: Arc<str> = Arc::from("x\n");
        let d = Diagnostic::new(
            "E0101",
            "tab\there \u{1}",
            Label::new(f.clone(), Span::new(0, 1), "l"),
        );
        let v: serde_json::Value =
            serde_json::from_str(&render_json(&[d], &One(f, src))).expect("valid JSON");
        assert_eq!(v[0]["message"], "tab\there \u{1}");
    }

    #[test]
    fn human_rendering_names_code_and_labels() {
        let f = FileName::new("a.wsp");
        let src: Arc<str> = Arc::from("const A = 1\nconst A = 2\n");
        let d = Diagnostic::new(
            "E0102",
            "`A` is defined twice",
            Label::new(f.clone(), Span::new(18, 19), "defined again here"),
        )
        .with_help("rename one");
        let out = render_human(&[d], &One(f, src), false);
        assert!(out.contains("E0102"), "{out}");
        assert!(out.contains("defined again here"), "{out}");
        assert!(out.contains("a.wsp:2:7"), "{out}");
    }
}
