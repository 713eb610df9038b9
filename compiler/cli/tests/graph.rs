//! `wsp graph`: the task graph as DOT and, through Graphviz's `dot`, as SVG, PNG and PDF.
//! Drawing needs `dot` (Debian's `graphviz`): required when `CI=true`, else those checks are
//! skipped with a note.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wsp-graph-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn wsp(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wsp"));
    c.args(args).current_dir(repo()).env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run wsp")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const LAYER: &str = "examples/llama_layer/llama_layer.wsp";

fn has_dot() -> bool {
    let found = Command::new("dot").arg("-V").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "Graphviz's `dot` is required under CI=true (apt-get install graphviz)"
        );
        eprintln!("note: Graphviz's `dot` is not installed: drawing is not checked");
    }
    found
}

/// The DOT text: every task a node, boxed by step of the workload (three here), laid out left
/// to right with a rank per dependency level, the dependency kinds drawn apart.
#[test]
fn the_dot_text_has_every_task_boxed_by_step() {
    let d = scratch("dot");
    let out = d.join("g.dot");
    let o = wsp(&["graph", LAYER, "-o", out.to_str().expect("path")], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("112 tasks"), "{}", text(&o.stdout));
    let g = std::fs::read_to_string(&out).expect("graph");
    assert!(g.starts_with("digraph") && g.contains("rankdir=LR"), "{g}");
    let nodes = g
        .lines()
        .filter(|l| l.trim_start().starts_with('t') && l.contains(" [label=\""))
        .count();
    assert_eq!(nodes, 112, "{g}");
    for step in ["step 1", "step 2", "step 3"] {
        assert!(g.contains(&format!("label=\"{step}\"")), "{step}: {g}");
    }
    assert!(g.contains("rank=same"), "{g}");
    // Each phase's tasks: rmsnorm of tile 0 in step 1, the scores in step 2.
    let step2 = &g
        [g.find("label=\"step 2\"").expect("step 2")..g.find("label=\"step 3\"").expect("step 3")];
    assert!(
        step2.contains("attn_score[0, 0]") && !step2.contains("rmsnorm["),
        "{step2}"
    );
    // Read after write (plain), write after write (red), write after read (dotted), P.seq
    // order (dashed).
    assert!(g.contains(" -> ") && g.contains("color=\"#c0504d\""), "{g}");
    assert!(
        g.contains("style=dotted") && g.contains("style=dashed"),
        "{g}"
    );
    // Every task's node links its call site (the editor's graph view follows it).
    assert!(g.contains("URL=\"wsp-site:"), "{g}");
}

/// Above the limit, one node per kernel call of each step, saying how many tasks it stands for, and
/// one edge per pair of groups and kind, saying how many task edges it stands for.
#[test]
fn large_graphs_are_grouped_by_kernel_call() {
    let d = scratch("grouped");
    let out = d.join("g.dot");
    let o = wsp(
        &[
            "graph",
            LAYER,
            "-o",
            out.to_str().expect("path"),
            "--group-above",
            "50",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("one node per kernel call"),
        "{}",
        text(&o.stdout)
    );
    let g = std::fs::read_to_string(&out).expect("graph");
    let groups: Vec<&str> = g
        .lines()
        .filter(|l| {
            l.trim_start().starts_with('g') && l.contains(" [label=\"") && !l.contains("->")
        })
        .collect();
    // A node per kernel call: step 1 rmsnorm, three linear, two rope; step 2 the five
    // attention kernels; step 3 four linear, two add, rmsnorm, swiglu.
    assert_eq!(groups.len(), 19, "{g}");
    assert!(g.contains("attn_score\\n16 tasks"), "{g}");
    assert!(
        g.contains("linear\\n4 tasks") && g.contains("rope\\n4 tasks"),
        "{g}"
    );
    assert!(!g.contains(" t0 "), "{g}");
    // `--all` draws every task however many.
    let o = wsp(
        &["graph", LAYER, "-o", out.to_str().expect("path"), "--all"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(std::fs::read_to_string(&out)
        .expect("graph")
        .contains("t111 [label="));
}

/// `text` as XML, or the test fails: Graphviz's SVG starts with a DOCTYPE, which must be
/// allowed.
fn svg_document(text: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(text, opts).expect("the SVG is well-formed XML")
}

/// SVG (well-formed XML with a node per task), PNG and PDF through `dot`; `wsp run --graph`
/// draws the same way.
#[test]
fn images_are_drawn_by_graphviz() {
    if !has_dot() {
        return;
    }
    let d = scratch("images");
    let svg = d.join("g.svg");
    let o = wsp(&["graph", LAYER, "-o", svg.to_str().expect("path")], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = std::fs::read_to_string(&svg).expect("svg");
    let doc = svg_document(&s);
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let nodes = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("node"))
        .count();
    assert_eq!(
        nodes,
        112 + 3 * 4,
        "a node per task and a join point per P.seq step"
    );
    assert!(s.contains("attn_softmax[0, 1]"), "task labels are drawn");
    for (ext, magic) in [("png", &b"\x89PNG"[..]), ("pdf", &b"%PDF"[..])] {
        let f = d.join(format!("g.{ext}"));
        let o = wsp(&["graph", LAYER, "-o", f.to_str().expect("path")], &[]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(
            std::fs::read(&f).expect("image").starts_with(magic),
            "{ext}"
        );
    }
    let f = d.join("run.svg");
    let o = wsp(
        &["run", LAYER, "-q", "--graph", f.to_str().expect("path")],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    svg_document(&std::fs::read_to_string(&f).expect("svg"));
}

/// Without Graphviz: a clear error that says how to get it, exit 2, and no file.
#[test]
fn without_graphviz_the_error_says_how_to_get_it() {
    let d = scratch("nodot");
    let svg = d.join("g.svg");
    let o = wsp(
        &["graph", LAYER, "-o", svg.to_str().expect("path")],
        &[("WSP_DOT", "/nonexistent/graphviz/dot")],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("apt-get install graphviz") && err.contains(".dot"),
        "{err}"
    );
    assert!(!svg.exists());
    assert_eq!(
        std::fs::read_dir(&d).expect("dir").count(),
        0,
        "no temporary file is left"
    );
}
