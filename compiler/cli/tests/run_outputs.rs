//! End-to-end tests of `wsp run`'s summary, statistics and written files: the outputs, trace
//! and graph (written all or nothing, clashing paths refused) and the completion of an
//! interrupted switch of outputs.

mod common;

use std::path::Path;

use common::run::{example, program, tempdir, text, wsp};

#[test]
fn an_example_runs_and_prints_its_summary() {
    let o = wsp(
        Path::new("."),
        &["run", &example("validated_matmul").to_string_lossy()],
    );
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    for s in [
        "total_cycles",
        "tasks",
        "busy",
        "stalls",
        "kernel matmul_tile",
        "jit",
        "expects       1/1 hold",
        "wall",
    ] {
        assert!(out.contains(s), "missing `{s}` in\n{out}");
    }
    // It says which model ran and why, what the cycles are in time, how busy each class of
    // cores was over all its cores, and what the expectation measured.
    let first = out.lines().next().unwrap_or("");
    assert!(first.contains(" on ascend910b ("), "{first}");
    assert!(
        out.contains("modelled cycles = ") && out.contains(" at 1.85 GHz"),
        "{out}"
    );
    assert!(
        out.contains(" of 48 cores ran tasks (") || out.contains(" of 24 cores ran tasks ("),
        "{out}"
    );
    assert!(out.contains("cores, all idle"), "{out}");
    assert!(out.contains(": holds, max |Δ| "), "{out}");
}

#[test]
fn stats_json_reports_v9_cycles_under_the_v9_model() {
    let o = wsp(
        Path::new("."),
        &[
            "run",
            &example("validated_matmul").to_string_lossy(),
            "--arch",
            "pto_wsp_v9",
            "--stats",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stats are JSON");
    assert_eq!(v["stats"]["total_cycles"], 4864);
    assert_eq!(v["stats"]["tasks"], 1);
    assert_eq!(v["arch"], "pto_wsp_v9");
    assert_eq!(v["kernels"][0]["engine"], "jit");
}

#[test]
fn outputs_trace_and_graph_are_written() {
    let d = tempdir("out");
    let out = d.join("out");
    let o = wsp(
        &d,
        &[
            "run",
            &example("tensor_data_square").to_string_lossy(),
            "--out-dir",
            &out.to_string_lossy(),
            "--trace",
            "t.json",
            "--graph",
            "g.dot",
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        o.stdout.is_empty(),
        "--quiet prints nothing: {}",
        text(&o.stdout)
    );
    let y = wsp_ir::npy::read_npy(&out.join("Y.npy")).expect("Y.npy is a valid .npy");
    let golden = example("tensor_data_square").with_file_name("y_golden.npy");
    let g = wsp_ir::npy::read_npy(&golden).expect("golden");
    assert_eq!(y.shape, g.shape);
    assert_eq!(y.to_f64(), g.to_f64());
    let names: Vec<String> = std::fs::read_dir(&out)
        .expect("out dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["Y.npy"], "only the outputs, no temporary files");
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("t.json")).expect("trace")).expect("JSON");
    assert!(trace["traceEvents"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
    let graph = std::fs::read_to_string(d.join("g.dot")).expect("graph");
    assert!(graph.starts_with("digraph"), "{graph}");
    // Every task links to its call site (byte offsets of the `square[...](...)` call).
    let src = std::fs::read_to_string(example("tensor_data_square")).expect("source");
    let nodes: Vec<&str> = graph.lines().filter(|l| l.contains("[label=")).collect();
    assert!(!nodes.is_empty(), "{graph}");
    for n in nodes {
        let url = n
            .split("URL=\"wsp-site:")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_else(|| panic!("no call site: {n}"));
        let mut parts = url.splitn(3, ':');
        let start: usize = parts.next().and_then(|x| x.parse().ok()).expect("start");
        let end: usize = parts.next().and_then(|x| x.parse().ok()).expect("end");
        assert!(
            parts
                .next()
                .is_some_and(|f| f.ends_with("tensor_data_square.wsp")),
            "{n}"
        );
        let call = &src[start..end];
        assert!(call.contains('[') && call.contains('('), "{call:?}");
    }
}

#[test]
fn outputs_trace_and_graph_are_written_all_or_nothing() {
    let d = program(
        "all-or-nothing",
        r#"
axis rows = Dense[2]
input  X: f32[2, 16, 16] = random(seed: 1)
output Y: f32[2, 16, 16]
output Z: f32[2, 16, 16]
kernel two(x: in f32[16, 16], y: out f32[16, 16], z: out f32[16, 16]) { y = x
    z = x * 2.0 }
workload w { for i in P(rows) { two[i](x: X[i], y: Y[i], z: Z[i]) } }
"#,
    );
    let listing = |dir: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // `Z.npy` cannot be written (a directory is in the way): `Y.npy` is not written either.
    std::fs::create_dir_all(d.join("o/Z.npy")).expect("dir");
    let o = wsp(&d, &["run", "p.wsp", "--out-dir", "o", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("Z.npy"), "{}", text(&o.stderr));
    assert_eq!(listing(&d.join("o")), ["Z.npy"]);
    // Earlier outputs survive a run whose trace cannot be written.
    std::fs::remove_dir(d.join("o/Z.npy")).expect("rmdir");
    let o = wsp(&d, &["run", "p.wsp", "--out-dir", "o", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let before = std::fs::read(d.join("o/Y.npy")).expect("Y.npy");
    std::fs::write(d.join("o/Y.npy"), b"old").expect("write");
    let o = wsp(
        &d,
        &[
            "run",
            "p.wsp",
            "--out-dir",
            "o",
            "--trace",
            "missing/t.json",
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert_eq!(
        listing(&d.join("o")),
        ["Y.npy", "Z.npy"],
        "no temporary files"
    );
    assert_eq!(std::fs::read(d.join("o/Y.npy")).expect("Y.npy"), b"old");
    // And a run that succeeds replaces them.
    let o = wsp(
        &d,
        &["run", "p.wsp", "--out-dir", "o", "--trace", "t.json", "-q"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(d.join("o/Y.npy")).expect("Y.npy"), before);
    assert_eq!(listing(&d.join("o")), ["Y.npy", "Z.npy"]);
    // An output directory the failed run would have created is not left behind.
    let o = wsp(
        &d,
        &[
            "run",
            "p.wsp",
            "--out-dir",
            "new/o",
            "--trace",
            "missing/t.json",
            "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(!d.join("new").exists(), "the new directories are removed");
}

/// Two of the run's files at one path, and an input given twice, are usage errors that say so.
#[test]
fn clashing_output_paths_and_repeated_inputs_are_refused() {
    let ex = example("tensor_data_add").to_string_lossy().into_owned();
    let d = tempdir("clash");
    let o = wsp(&d, &["run", &ex, "--out-dir", "od", "--trace", "od/C.npy"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("would be written to `od/C.npy`"), "{err}");
    assert!(!d.join("od/C.npy").exists());
    let o = wsp(
        &d,
        &["run", &ex, "--input", "A=a.npy", "--input", "A=b.npy"],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--input gives `A` twice"), "{err}");
}

/// A run killed while switching its outputs leaves a journal; the next run writing into that
/// directory completes the switch (says so) and removes the temporary files of dead runs.
#[test]
fn an_interrupted_switch_of_outputs_is_completed_by_the_next_run() {
    let d = program(
        "journal",
        r#"
axis rows = Dense[2]
input  X: f32[2, 16, 16] = random(seed: 1)
output Y: f32[2, 16, 16]
kernel cp(x: in f32[16, 16], y: out f32[16, 16]) { y = x }
workload w { for i in P(rows) { cp[i](x: X[i], y: Y[i]) } }
"#,
    );
    let o = wsp(&d, &["run", "p.wsp", "--out-dir", "o", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = d.join("o");
    let abs = |n: &str| std::path::absolute(out.join(n)).expect("absolute");
    // Process 2000000000 does not exist: it staged `N.npy`, wrote its journal and died.
    std::fs::write(out.join(".N.npy.2000000000.aB3dE9.tmp"), b"staged").expect("tmp");
    std::fs::write(out.join(".N.npy.2000000000.Xy7Zq1.old"), b"").expect("old");
    let journal = serde_json::json!({
        "pid": 2000000000u32,
        "entries": [{
            "tmp": abs(".N.npy.2000000000.aB3dE9.tmp"),
            "dst": abs("N.npy"),
            "old": abs(".N.npy.2000000000.Xy7Zq1.old"),
        }],
    });
    std::fs::write(
        out.join(".wsp-commit.2000000000.journal"),
        journal.to_string(),
    )
    .expect("journal");
    // And a temporary file of another dead run, never journaled.
    std::fs::write(out.join(".Y.npy.2000000000.q1w2e3.tmp"), b"partial").expect("tmp");
    let o = wsp(&d, &["run", "p.wsp", "--out-dir", "o"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("completed the replacement of 1 file(s)"),
        "{err}"
    );
    assert!(err.contains("removed"), "{err}");
    assert_eq!(std::fs::read(out.join("N.npy")).expect("N.npy"), b"staged");
    let left: Vec<String> = std::fs::read_dir(&out)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A small run interprets its orchestration (compiling it would cost more than it saves) and
/// says so; `--jit-orchestration` compiles it anyway; both compute the same.
#[test]
fn a_small_run_interprets_its_orchestration_unless_asked_to_compile_it() {
    let dir = example("softmax");
    let dir = dir.parent().expect("dir");
    let json = |extra: &[&str]| {
        let o = wsp(
            dir,
            &[&["run", "softmax.wsp", "--stats", "json", "-q"][..], extra].concat(),
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("JSON")
    };
    let small = json(&[]);
    assert_eq!(small["orchestration"]["engine"], "interpreter", "{small}");
    let why = small["orchestration"]["reason"].as_str().unwrap_or("");
    assert!(why.starts_with("a small run (48 tasks)"), "{why}");
    let jit = json(&["--jit-orchestration"]);
    assert_eq!(jit["orchestration"]["engine"], "jit", "{jit}");
    assert_eq!(small["stats"]["total_cycles"], jit["stats"]["total_cycles"]);
    assert_eq!(small["stats"]["tasks"], jit["stats"]["tasks"]);
    // The summary says it too.
    let o = wsp(dir, &["run", "softmax.wsp"]);
    let out = text(&o.stdout);
    assert!(
        out.contains("orchestration interpreter (a small run (48 tasks)"),
        "{out}"
    );
}
