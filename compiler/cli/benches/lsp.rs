//! Language-server latency over stdio, as an editor sees it (issue 5: keystroke to published
//! diagnostics on a 10,000-line workspace p50 ≤ 10 ms, p99 ≤ 50 ms; hover and completion p99
//! ≤ 50 ms). Starts the real `wsp lsp` (the bench profile's build), opens the ten files of the
//! generated workspace the `wsp check` benchmark uses, then times, one after the other:
//! one-line edits inside a kernel body until that file's diagnostics arrive, hovers on task
//! calls, and completions inside kernel bodies.
//!
//! Edits go as an editor sends them to a server that asks for incremental changes: the
//! changed range and its new text.
//!
//! Run: `cargo bench -p wsp --bench lsp` (prints percentiles; results in docs/perf.md).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "../../core/benches/gen.rs"]
mod gen;

use common::Client;
use serde_json::json;
use std::time::{Duration, Instant};

const SAMPLES: usize = 400;

fn percentiles(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    println!(
        "{name:<36} n={:<4} p50 {:>7.2} ms   p99 {:>7.2} ms   max {:>7.2} ms",
        v.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

/// The line the keystroke benchmarks edit, in a kernel body of every generated module.
const EDITED: &str = "acc = acc + e / s";

/// The two incremental changes that toggle ` * 1.0` at the end of the `n`-th [`EDITED`] line
/// of `text`: insert it, then delete it again.
fn toggle(text: &str, n: usize) -> [serde_json::Value; 2] {
    let (at, _) = text.match_indices(EDITED).nth(n).expect("a kernel");
    let at = at + EDITED.len();
    let line = text[..at].matches('\n').count();
    let col = at - text[..at].rfind('\n').map_or(0, |i| i + 1);
    let pos = |c: usize| json!({"line": line, "character": c});
    [
        json!({"range": {"start": pos(col), "end": pos(col)}, "text": " * 1.0"}),
        json!({"range": {"start": pos(col), "end": pos(col + 6)}, "text": ""}),
    ]
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is configurable.
    let dir = std::env::temp_dir().join(format!("wsp-lsp-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let dir = dir.canonicalize().expect("temp dir");
    let files: Vec<(String, String)> = (0..10)
        .map(|i| (format!("m{i}.wsp"), gen::module(i, 1000)))
        .collect();
    let lines: usize = files.iter().map(|(_, t)| t.lines().count()).sum();
    let mut c = Client::start(&dir, false);
    let uri = |p: &str| format!("file://{}/{p}", dir.display());
    for (p, t) in &files {
        std::fs::write(dir.join(p), t).expect("write module");
        c.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(p), "languageId": "wsp", "version": 1, "text": t}}),
        );
        assert!(c.diagnostics(&uri(p)).is_empty(), "{p} checks clean");
    }
    println!("workspace: {} files, {lines} lines", files.len());

    // Keystrokes: a one-line edit inside one kernel body of the middle file, toggled, sent as
    // editors send them (the server asks for incremental changes).
    let (path, text) = files[files.len() / 2].clone();
    let u = uri(&path);
    let variants = toggle(&text, 0);
    let mut keys = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let t0 = Instant::now();
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": u, "version": i + 2},
                   "contentChanges": [variants[i % 2]]}),
        );
        let d = c.diagnostics(&u);
        keys.push(t0.elapsed());
        assert!(d.is_empty(), "{d:?}");
    }
    percentiles("keystroke -> publishDiagnostics", keys);

    // Hover on task calls and completion inside kernel bodies, all over the file.
    let lines: Vec<&str> = text.lines().collect();
    let calls: Vec<(usize, usize)> = lines
        .iter()
        .enumerate()
        .filter_map(|(n, l)| {
            l.find("](x: ")
                .map(|_| (n, l.len() - l.trim_start().len() + 2))
        })
        .collect();
    let bodies: Vec<(usize, usize)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("let e = "))
        .map(|(n, l)| (n, l.len() - 4))
        .collect();
    assert!(!calls.is_empty() && !bodies.is_empty());
    let mut hovers = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let (l, ch) = calls[i * 7 % calls.len()];
        let t0 = Instant::now();
        let r = c.request("textDocument/hover", common::pos(l as u32, ch as u32, &u));
        hovers.push(t0.elapsed());
        assert!(r["result"]["contents"]["value"].is_string(), "{r}");
    }
    percentiles("hover", hovers);
    let mut completions = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let (l, ch) = bodies[i * 7 % bodies.len()];
        let t0 = Instant::now();
        let r = c.request(
            "textDocument/completion",
            common::pos(l as u32, ch as u32, &u),
        );
        completions.push(t0.elapsed());
        assert!(r["result"].as_array().is_some_and(|a| !a.is_empty()), "{r}");
    }
    percentiles("completion", completions);

    // Editing a large file (issue 27 item 5): the same one-line edit in one 10,000-line file
    // and in one of the 1,000-line files, alternated side by side (seven rounds of 40
    // keystrokes each), medians of the rounds' medians.
    let big_path = "big.wsp";
    let big = gen::module(10, 10_000);
    std::fs::write(dir.join(big_path), &big).expect("write module");
    let big_u = uri(big_path);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": big_u, "languageId": "wsp", "version": 1, "text": big}}),
    );
    assert!(c.diagnostics(&big_u).is_empty(), "big.wsp checks clean");
    let middle_edit = |t: &str| toggle(t, t.matches(EDITED).count() / 2);
    let mut version = 1_000;
    let mut round = |u: &str, variants: &[serde_json::Value; 2]| {
        let mut v: Vec<Duration> = (0..40)
            .map(|i| {
                version += 1;
                let t0 = Instant::now();
                c.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": u, "version": version},
                           "contentChanges": [variants[i % 2]]}),
                );
                let d = c.diagnostics(u);
                assert!(d.is_empty(), "{d:?}");
                t0.elapsed()
            })
            .collect();
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e3
    };
    let (small_v, big_v) = (middle_edit(&text), middle_edit(&big));
    let (mut small_ms, mut big_ms) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        small_ms.push(round(&u, &small_v));
        big_ms.push(round(&big_u, &big_v));
    }
    small_ms.sort_by(f64::total_cmp);
    big_ms.sort_by(f64::total_cmp);
    let (a, b) = (small_ms[3], big_ms[3]);
    println!(
        "keystroke in one file, side by side: 1,000 lines p50 {a:.2} ms, 10,000 lines p50 {b:.2} ms, ratio {:.2}",
        b / a
    );
    c.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
