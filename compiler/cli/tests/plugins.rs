//! End-to-end tests of backends through the `wsp` binary: the registry's built-ins, the sample
//! external backend `examples/plugins/wsp-backend-summary`, and test plugins
//! (`tests/plugins/`) that crash, hang, print garbage, write outside their directory or emit a
//! symbolic link. Every failure must name the plugin and leave the output directory as it was.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn test_plugins() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugins")
}

fn sample_plugins() -> PathBuf {
    repo().join("examples/plugins")
}

fn wsp_env(dir: &Path, args: &[&str], path_env: Option<&std::ffi::OsStr>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wsp"));
    c.args(args).current_dir(dir).env("NO_COLOR", "1");
    if let Some(p) = path_env {
        c.env("PATH", p);
    }
    c.output().expect("run wsp")
}

fn wsp(dir: &Path, args: &[&str]) -> Output {
    wsp_env(dir, args, None)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

const CLEAN: &str = "axis rows = Dense[4]\ninput X: f32[4, 8, 8] = load(\"x.npy\")\noutput Y: f32[4, 8, 8]\nkernel copy(x: in f32[8, 8], y: out f32[8, 8]) {\n    y = x\n}\nworkload w {\n    for i in P(rows) { copy[i](x: X[i], y: Y[i]) }\n}\n";

/// A temporary directory holding `a.wsp` (CLEAN) and a previous `wsp emit` tree in `out/`.
fn workdir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a.wsp"), CLEAN).unwrap();
    let o = wsp(d.path(), &["emit", "--target", "ir", "-o", "out", "a.wsp"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        listing(&d.path().join("out")),
        [".wsp-emit", "program.json"]
    );
    d
}

/// The previous tree is intact and nothing else is left beside it.
fn assert_untouched(d: &Path) {
    assert_eq!(listing(&d.join("out")), [".wsp-emit", "program.json"]);
    assert_eq!(listing(d), ["a.wsp", "out"]);
}

#[test]
fn ir_target_writes_a_directory_a_file_or_standard_output() {
    let d = workdir();
    let json = std::fs::read_to_string(d.path().join("out/program.json")).unwrap();
    assert!(
        json.contains(&format!("\"version\": {}", wsp_ir::IR_VERSION)) && json.contains("\"copy\"")
    );
    let marker = std::fs::read_to_string(d.path().join("out/.wsp-emit")).unwrap();
    assert!(marker.contains("\"target\": \"ir\""), "{marker}");
    // Standard output and `--out FILE` carry the same text.
    let o = wsp(d.path(), &["emit", "a.wsp"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), json);
    let o = wsp(d.path(), &["emit", "--out", "p.json", "a.wsp"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(d.path().join("p.json")).unwrap(),
        json
    );
    // Re-emitting replaces the tree as a whole.
    std::fs::write(d.path().join("out/stale.txt"), "old").unwrap();
    let o = wsp(d.path(), &["emit", "-o", "out", "a.wsp"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        listing(&d.path().join("out")),
        [".wsp-emit", "program.json"]
    );
}

#[test]
fn output_directories_that_are_not_ours_are_refused() {
    let d = workdir();
    std::fs::create_dir(d.path().join("src")).unwrap();
    std::fs::write(d.path().join("src/main.rs"), "fn main() {}").unwrap();
    let o = wsp(d.path(), &["emit", "-o", "src", "a.wsp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not produced by `wsp emit`"),
        "{}",
        stderr(&o)
    );
    assert_eq!(listing(&d.path().join("src")), ["main.rs"]);
    let o = wsp(d.path(), &["emit", "-o", "a.wsp", "a.wsp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is a file"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(d.path().join("a.wsp")).unwrap(),
        CLEAN
    );
    let o = wsp(d.path(), &["emit", "--out", "x", "-o", "y", "a.wsp"]);
    assert_eq!(o.status.code(), Some(2));
    // The working directory (or one holding it) is never replaced.
    let o = wsp(&d.path().join("src"), &["emit", "-o", ".", "../a.wsp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("holds the working directory"),
        "{}",
        stderr(&o)
    );
    // The `ir` backend takes no options.
    let o = wsp(d.path(), &["emit", "--option", "k=v", "-o", "out", "a.wsp"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("takes no options"), "{}", stderr(&o));
    assert_eq!(
        listing(&d.path().join("out")),
        [".wsp-emit", "program.json"]
    );
}

#[test]
fn targets_are_listed_and_unknown_ones_rejected() {
    let d = workdir();
    let o = wsp(d.path(), &["emit", "--target", "gpu", "-o", "out", "a.wsp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown target `gpu`; targets: sim, ascend, aie, ir"),
        "{}",
        stderr(&o)
    );
    let o = wsp(d.path(), &["emit", "--target", "sim", "a.wsp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("use `wsp run FILE`"), "{}", stderr(&o));
    assert_untouched(d.path());
    // On PATH, the sample plugin is found and described.
    let mut dirs = vec![sample_plugins()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(dirs).unwrap();
    let o = wsp_env(d.path(), &["emit", "--list-targets"], Some(&path));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("sim ") && lines[3].starts_with("ir "),
        "{out}"
    );
    assert!(
        lines[4].starts_with("summary  plugin ") && lines[4].contains("wsp-backend-summary"),
        "{out}"
    );
    // A plugin needs an output directory.
    let o = wsp_env(
        d.path(),
        &["emit", "--target", "summary", "a.wsp"],
        Some(&path),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("give `-o DIR`"), "{}", stderr(&o));
}

#[test]
fn summary_plugin_end_to_end() {
    let d = tempfile::tempdir().unwrap();
    let ex = repo().join("examples/pipe_scores");
    for f in ["pipe_scores.wsp", "q.npy", "k.npy", "p_golden.npy"] {
        std::fs::copy(ex.join(f), d.path().join(f)).unwrap();
    }
    let plugins = sample_plugins();
    let args = |out: &'static str| {
        vec![
            "emit".to_string(),
            "--target".into(),
            "summary".into(),
            "--backend-path".into(),
            plugins.to_string_lossy().into_owned(),
            "-o".into(),
            out.into(),
            "--option".into(),
            "title=Scores".into(),
            "pipe_scores.wsp".into(),
        ]
    };
    let a = args("summary");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let o = wsp(d.path(), &a);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // The capability check (declared `diagnosed`) and the plugin's own warning, at their spans.
    assert!(
        err.contains("[W0710]") && err.contains("pipe_scores.wsp:18:10"),
        "{err}"
    );
    assert!(
        err.contains("[W0721] Warning: kernel `scores_exp` uses pipes")
            && err.contains("pipe_scores.wsp:17:8")
            && err.contains("reported by the `summary` backend"),
        "{err}"
    );
    let out = d.path().join("summary");
    assert_eq!(listing(&out), [".wsp-emit", "kernels.json", "summary.md"]);
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.starts_with("# Scores\n"), "{md}");
    assert!(
        md.contains("### `scores_exp` (pipe_scores.wsp:17:8)")
            && md.contains("`q: in f32[16, 16]`")
            && md.contains("| matmul | 2 |")
            && md.contains("Pipe `s`: 2 slots of f32[16, 64].")
            && md.contains("- pipe_scores.wsp:34:9, in workload scores (1 coordinate)"),
        "{md}"
    );
    let k: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("kernels.json")).unwrap()).unwrap();
    let k0 = &k["kernels"][0];
    assert_eq!(k0["name"], "scores_exp");
    assert_eq!(k0["ops"]["matmul"], 2);
    assert_eq!(k0["calls"][0]["where"]["line"], 34);
    assert_eq!(
        listing(d.path()),
        [
            "k.npy",
            "p_golden.npy",
            "pipe_scores.wsp",
            "q.npy",
            "summary"
        ]
    );

    // `wsp check --target summary` reads the same declaration; `--strict` makes it an error.
    let b = plugins.to_string_lossy().into_owned();
    let o = wsp(
        d.path(),
        &[
            "check",
            "--target",
            "summary",
            "--backend-path",
            &b,
            "pipe_scores.wsp",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("only diagnosed on the `summary` backend"));
    let o = wsp(
        d.path(),
        &[
            "check",
            "--target",
            "summary",
            "--strict",
            "--backend-path",
            &b,
            "pipe_scores.wsp",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("E0711"), "{}", stderr(&o));
}

#[test]
fn summary_plugin_refuses_extern_kernels_at_their_span() {
    let d = workdir();
    let src = CLEAN.replace(
        "kernel copy(x: in f32[8, 8], y: out f32[8, 8]) {\n    y = x\n}",
        "extern kernel copy(x: in f32[8, 8], y: out f32[8, 8]) { ascend: \"copy.cpp\" }",
    );
    std::fs::write(d.path().join("a.wsp"), src).unwrap();
    let b = sample_plugins().to_string_lossy().into_owned();
    let o = wsp(
        d.path(),
        &[
            "emit",
            "--target",
            "summary",
            "--backend-path",
            &b,
            "-o",
            "out",
            "a.wsp",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("[E0720] Error: kernel `copy` has no .wsp body to summarise (external implementations only: ascend: copy.cpp)")
            && err.contains("a.wsp:4:15")
            && err.contains("Help: give the kernel a .wsp body"),
        "{err}"
    );
    assert!(
        err.contains("the `summary` backend reported 1 error; nothing was written"),
        "{err}"
    );
    assert_untouched(d.path());
}

/// Runs a failing test plugin on `a.wsp` into the previous tree `out/`.
fn failing(name: &str, extra: &[&str]) -> (String, Duration) {
    let d = workdir();
    let b = test_plugins().to_string_lossy().into_owned();
    let mut args = vec!["emit", "--target", name, "--backend-path", &b, "-o", "out"];
    args.extend_from_slice(extra);
    args.push("a.wsp");
    let start = Instant::now();
    let o = wsp(d.path(), &args);
    let took = start.elapsed();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{name}: {err}");
    assert!(
        err.contains(&format!("backend plugin `{name}` (")) && err.contains("failed in `emit`"),
        "{name}: {err}"
    );
    assert_untouched(d.path());
    (err, took)
}

#[test]
fn a_crashing_plugin_is_reported_with_its_standard_error() {
    let (err, _) = failing("crash", &[]);
    assert!(err.contains("it crashed (exit status 3)"), "{err}");
    assert!(
        err.contains("| internal error: the code generator exploded"),
        "{err}"
    );
}

#[test]
fn a_hanging_plugin_is_killed_after_the_timeout() {
    let (err, took) = failing("hang", &["--backend-timeout", "2"]);
    assert!(err.contains("did not finish within 2 s"), "{err}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn a_plugin_printing_garbage_is_reported() {
    let (err, _) = failing("garbage", &[]);
    assert!(
        err.contains("not the protocol's JSON") && err.contains("hello, this is not JSON"),
        "{err}"
    );
}

#[test]
fn a_plugin_writing_outside_its_directory_is_refused() {
    let (err, _) = failing("escape", &[]);
    assert!(
        err.contains("wrote `../escaped.txt`, outside the output directory"),
        "{err}"
    );
}

#[test]
fn a_plugin_emitting_a_symbolic_link_is_refused() {
    let (err, _) = failing("symlink", &[]);
    assert!(err.contains("wrote a symbolic link `host`"), "{err}");
}

#[test]
fn a_plugin_failing_without_an_error_diagnostic_breaks_the_protocol() {
    let (err, _) = failing("silent", &[]);
    assert!(
        err.contains("exited with status 1 but reported no error diagnostic"),
        "{err}"
    );
}

#[test]
fn diagnostics_without_a_usable_span_are_shown_as_text() {
    let d = workdir();
    let b = test_plugins().to_string_lossy().into_owned();
    let o = wsp(
        d.path(),
        &[
            "emit",
            "--target",
            "badspan",
            "--backend-path",
            &b,
            "-o",
            "out",
            "a.wsp",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for want in [
        "error[E0720]: no span here\n  = note: reported by the `badspan` backend\n  = help: nothing to point at\n",
        "error[E0720]: a file wsp did not load\n  = note: reported by the `badspan` backend at `elsewhere.wsp` bytes 0..3, which is not a span of a loaded file\n",
        "warning[W0721]: past the end\n",
        "[W0721] Warning: the first byte",
        "a.wsp:1:1",
        "the `badspan` backend reported 2 errors; nothing was written",
    ] {
        assert!(err.contains(want), "{want}\n---\n{err}");
    }
    assert_untouched(d.path());
}

#[test]
fn declared_unsupported_features_stop_emission_before_the_plugin_runs() {
    let d = workdir();
    let src = format!("{CLEAN}schedule s = w\n    .dispatch(round_robin(4))\n");
    std::fs::write(d.path().join("a.wsp"), src).unwrap();
    let b = test_plugins().to_string_lossy().into_owned();
    let o = wsp(
        d.path(),
        &[
            "emit",
            "--target",
            "refuse",
            "--backend-path",
            &b,
            "-o",
            "out",
            "a.wsp",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("[E0712]")
            && err.contains("not supported on the `refuse` backend")
            && err.contains("refuse: this backend places tasks statically")
            && err.contains("nothing was emitted"),
        "{err}"
    );
    assert_untouched(d.path());
    // `wsp check --target refuse` says the same.
    let o = wsp(
        d.path(),
        &["check", "--target", "refuse", "--backend-path", &b, "a.wsp"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("[E0712]"));
}

#[test]
fn backend_paths_are_checked() {
    let d = workdir();
    let o = wsp(
        d.path(),
        &["emit", "--backend-path", "nowhere", "-o", "out", "a.wsp"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no such file or directory"),
        "{}",
        stderr(&o)
    );
    let o = wsp(
        d.path(),
        &[
            "check",
            "--target",
            "ir",
            "--backend-path",
            "a.wsp",
            "a.wsp",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is not a backend plugin"),
        "{}",
        stderr(&o)
    );
    assert_untouched(d.path());
}

/// docs/backends.md holds the built-ins' capability matrix as `wsp emit --list-targets
/// --markdown` prints it.
#[test]
fn backends_doc_matrix_is_current() {
    let o = wsp(&repo(), &["emit", "--list-targets", "--markdown"]);
    assert_eq!(o.status.code(), Some(0));
    let generated = String::from_utf8_lossy(&o.stdout).into_owned();
    let doc = std::fs::read_to_string(repo().join("docs/backends.md")).unwrap();
    let begin =
        "<!-- capability-matrix:begin (generated: wsp emit --list-targets --markdown) -->\n";
    let end = "<!-- capability-matrix:end -->";
    let section = doc
        .split_once(begin)
        .and_then(|(_, rest)| rest.split_once(end))
        .map(|(s, _)| s);
    assert!(
        section == Some(generated.as_str()),
        "the capability matrix in docs/backends.md is out of date; replace the text between\n  {begin}and {end}\nwith the output of\n  cargo run -p wsp -- emit --list-targets --markdown"
    );
}
