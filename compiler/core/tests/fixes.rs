//! Machine-applicable fixes, applied: the fixed program checks clean of that diagnostic.

use wsp_core::Workspace;
use wsp_diagnostics::Diagnostic;

fn apply(text: &str, d: &Diagnostic) -> String {
    let fix = d
        .fixes
        .first()
        .unwrap_or_else(|| panic!("{} has no fix", d.code));
    let mut edits: Vec<_> = fix.edits.iter().collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.span.start));
    let mut out = text.to_string();
    for e in edits {
        out.replace_range(e.span.start as usize..e.span.end as usize, &e.replacement);
    }
    out
}

fn codes(ws: &Workspace, path: &str) -> Vec<String> {
    ws.check(path).iter().map(|d| d.code.to_string()).collect()
}

const PIPELINE: &str = "axis tiles = Dense[4]
input X: f32[4, 8, 8] = random(seed: 1)
tensor T: f32[4, 8, 8]
output Y: f32[4, 8, 8]
kernel copy(src: in f32[8, 8], dst: out f32[8, 8]) { dst = src }
channel a: Channel[depth: 2]
channel b: Channel[depth: 2]
process loader produces a {
    for i in P.seq(tiles) { send a, copy[i](src: X[i], dst: T[i]); send b, copy[i](src: X[i], dst: T[i]) }
}
process storer {
    consume a as i { copy[i](src: T[i], dst: Y[i]) }
}
workload w = connect(loader, storer)
";

#[test]
fn undeclared_channels_are_declared_in_the_process_header() {
    let mut ws = Workspace::new();
    let mut text = PIPELINE.to_string();
    // Sending on `b` (a list exists: `, b`), consuming `a` (no list: ` consumes a`).
    for (code, header) in [
        ("E0501", "process loader produces a, b {"),
        ("E0502", "process storer consumes a {"),
    ] {
        ws.set_file("p.wsp", text.clone());
        let diags = ws.check("p.wsp");
        let d = diags
            .iter()
            .find(|d| d.code == code)
            .unwrap_or_else(|| panic!("no {code}: {diags:#?}"));
        text = apply(&text, d);
        assert!(text.contains(header), "{text}");
    }
    ws.set_file("p.wsp", text.clone());
    let left = codes(&ws, "p.wsp");
    assert!(
        !left.iter().any(|c| c == "E0501" || c == "E0502"),
        "{left:?}\n{text}"
    );
}

/// `split` sends all of `a` before `b`; `join` takes one `b`, then drains `a`.
fn split_join(a: &str, b: &str) -> String {
    format!(
        "axis tiles = Dense[4]
input X: f32[4, 4, 4] = random(seed: 1)
tensor T: f32[4, 4, 4]
output Y: f32[4, 4, 4]
kernel copy(src: in f32[4, 4], dst: out f32[4, 4]) {{ dst = src }}
channel a{a}
channel b{b}
process split produces a, b {{
    for i in P.seq(tiles) {{ send a, copy[i](src: X[i], dst: T[i]) }}
    for i in P.seq(tiles) {{ send b, i }}
}}
process join consumes a, b {{
    consume b as i {{
        consume a as j {{ copy[j](src: T[j], dst: Y[j]) }}
    }}
}}
workload w = connect(split, join)
"
    )
}

#[test]
fn deadlocking_depths_are_raised_to_the_smallest_that_complete() {
    // Every way a channel can be written: a depth to replace, other arguments, a bare
    // `Channel`, nothing at all.
    for (a, b, want_a, want_b) in [
        (
            ": Channel[depth: 1]",
            ": Channel[depth: 1]",
            "[depth: 4]",
            "[depth: 3]",
        ),
        (
            ": Channel[latency: 2]",
            ": Channel",
            "[depth: 4, latency: 2]",
            "[depth: 3]",
        ),
        (
            "",
            ": Channel[depth: 0]",
            "a: Channel[depth: 4]",
            "[depth: 3]",
        ),
    ] {
        let mut ws = Workspace::new();
        let text = split_join(a, b);
        ws.set_file("p.wsp", text.clone());
        let diags = ws.check("p.wsp");
        let d = diags
            .iter()
            .find(|d| d.code == "W0504")
            .unwrap_or_else(|| panic!("no W0504: {diags:#?}"));
        let fixed = apply(&text, d);
        assert!(fixed.contains(want_a) && fixed.contains(want_b), "{fixed}");
        ws.set_file("p.wsp", fixed.clone());
        let left = codes(&ws, "p.wsp");
        assert!(left.is_empty(), "{left:?}\n{fixed}");
    }
}
