//! End-to-end tests of `wsp run`: summary, statistics, outputs, trace and graph, expectation
//! failures, bad data files, bad arguments and deadlocks, with their exit codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wsp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wsp"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run wsp")
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wsp-run-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// A fresh directory holding `src` as `p.wsp`.
fn program(name: &str, src: &str) -> PathBuf {
    let d = tempdir(name);
    std::fs::write(d.join("p.wsp"), src).expect("write");
    d
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
        .join(format!("{name}.wsp"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const SUM4: &str = r#"
axis rows = Dense[2]
input  A: f32[2, 16, 16] = load("a.npy")
input  B: f32[2, 16, 16] = random(seed: 2)
input  C: f32[2, 16, 16] = random(seed: 3)
input  D: f32[2, 16, 16] = random(seed: 4)
output Y: f32[2, 16, 16]
kernel sum4(a: in f32[16, 16], b: in f32[16, 16], c: in f32[16, 16], d: in f32[16, 16], y: out f32[16, 16]) {
    y = a + b + c + d
}
workload w { for i in P(rows) { sum4[i](a: A[i], b: B[i], c: C[i], d: D[i], y: Y[i]) } }
schedule main = w.task_window(WINDOW)
"#;

/// A `.npy` of f32 zeros with the given shape.
fn npy_f32(shape: &[usize]) -> Vec<u8> {
    let dims = shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let comma = if shape.len() == 1 { "," } else { "" };
    let mut h = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({dims}{comma}), }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((h.len() as u16).to_le_bytes());
    out.extend(h.as_bytes());
    out.extend(vec![0u8; 4 * shape.iter().product::<usize>()]);
    out
}

fn sum4(d: &Path, window: u32, expect: &str) {
    let src = SUM4.replace("WINDOW", &window.to_string()) + expect;
    std::fs::write(d.join("p.wsp"), src).expect("write");
    std::fs::write(d.join("a.npy"), npy_f32(&[2, 16, 16])).expect("write");
}

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

#[test]
fn a_failed_expect_exits_one_with_the_worst_element() {
    let d = tempdir("expect");
    sum4(&d, 8, "expect close(Y, zeros, rtol: 1e-6, atol: 1e-6)\n");
    let o = wsp(&d, &["run", "p.wsp"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("[E0812] Error: expect close(Y, zeros")
            && err.contains("worst at [")
            && err.contains("expected 0, found"),
        "{err}"
    );
    // In the check-time format: at the `expect`, with what it measured and the explain hint.
    assert!(
        err.contains("p.wsp:") && err.contains("this expectation"),
        "{err}"
    );
    assert!(err.contains("Help: measured: max |Δ|"), "{err}");
    assert!(err.contains("`wsp explain E0812`"), "{err}");
}

#[test]
fn bad_data_files_exit_two_naming_the_file() {
    let d = tempdir("data");
    sum4(&d, 8, "");
    // Wrong shape.
    std::fs::write(d.join("small.npy"), npy_f32(&[1, 16, 16])).expect("write");
    let o = wsp(&d, &["run", "p.wsp", "--input", "A=small.npy"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("small.npy")
            && err.contains("expected f32[2, 16, 16]")
            && err.contains("found f32[1, 16, 16]"),
        "{err}"
    );
    // Not a .npy file.
    std::fs::write(d.join("junk.npy"), b"hello").expect("write");
    let o = wsp(&d, &["run", "p.wsp", "--input", "A=junk.npy"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("junk.npy"), "{}", text(&o.stderr));
    // Truncated.
    let mut t = npy_f32(&[2, 16, 16]);
    t.truncate(t.len() - 10);
    std::fs::write(d.join("cut.npy"), t).expect("write");
    let o = wsp(&d, &["run", "p.wsp", "--input", "A=cut.npy"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("cut.npy"), "{}", text(&o.stderr));
    // Missing.
    let o = wsp(&d, &["run", "p.wsp", "--input", "A=missing.npy"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("missing.npy"));
    // Unknown tensor and param.
    let o = wsp(&d, &["run", "p.wsp", "--input", "Q=junk.npy"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("no tensor `Q`"));
    let o = wsp(&d, &["run", "p.wsp", "--set", "n=3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("no param `n`"));
    // Nothing was written on failure.
    let o = wsp(
        &d,
        &["run", "p.wsp", "--input", "A=junk.npy", "--out-dir", "o"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(!d.join("o").exists());
}

#[test]
fn a_window_of_one_slows_a_run_but_never_deadlocks_it() {
    // Five region arguments a task through a window of one: the tensor map is sized for the
    // widest task, so the window only stalls the orchestration (it once deadlocked with
    // TENSORMAP_POOL_FULL). Impossible pipelines (exit 3) are tests/deadlock.rs.
    // The tasks take less than a submission: on a model without the submission cost they are
    // in flight together, so the window has something to hold back.
    let model = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../std/arch/ascend910b.toml"),
    )
    .expect("the model")
    .replace("submit = 1610", "submit = 0");
    let stats = |window: u32| {
        let d = tempdir(&format!("window-{window}"));
        sum4(&d, window, "");
        std::fs::write(d.join("at_once.toml"), &model).expect("write");
        let o = wsp(
            &d,
            &[
                "run",
                "p.wsp",
                "--out-dir",
                "o",
                "--stats",
                "json",
                "--arch",
                "at_once.toml",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stats are JSON");
        let y = std::fs::read(d.join("o/Y.npy")).expect("Y.npy");
        (v["stats"].clone(), y)
    };
    let (one, y1) = stats(1);
    let (wide, y16) = stats(16);
    assert_eq!(y1, y16, "the window changes time, not results");
    assert_eq!((&one["tasks"], &wide["tasks"]), (&2.into(), &2.into()));
    let ring = |s: &serde_json::Value, name: &str| {
        s["rings"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == name).cloned())
            .unwrap_or_else(|| panic!("no ring {name} in {s}"))
    };
    assert_eq!(ring(&one, "task_ring")["high_water"], 1);
    assert!(
        ring(&one, "task_ring")["stalls"].as_u64() > Some(0),
        "{one}"
    );
    assert!(
        one["total_cycles"].as_u64() > wide["total_cycles"].as_u64(),
        "{one} vs {wide}"
    );
}

#[test]
fn a_deadlock_with_stats_json_prints_the_report_as_json() {
    // A rendezvous on `a` while the consumer waits on `b` first.
    let d = program(
        "deadlock-json",
        r#"
axis n = Dense[1]
input  X: f32[1, 8, 8] = random(seed: 5)
tensor A: f32[1, 8, 8]
output Y: f32[1, 8, 8]
kernel cp(src: in f32[8, 8], dst: out f32[8, 8]) { dst = src }
channel a: Channel[depth: 0]
channel b: Channel[depth: 1]
process prod produces a, b {
    for i in P.seq(n) {
        send a, cp[i](src: X[i], dst: A[i])
        send b, i
    }
}
process cons consumes a, b {
    consume b as j {
        consume a as i { cp[i](src: A[i], dst: Y[i]) }
    }
}
workload w = connect(prod, cons)
"#,
    );
    let o = wsp(&d, &["run", "p.wsp", "--stats", "json", "--out-dir", "o"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("[E0811] Error: deadlock at cycle"),
        "{}",
        text(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the report is JSON");
    let r = &v["error"]["deadlock"];
    assert_eq!(v["error"]["code"], "E0811");
    assert_eq!(r["reason"], "CHANNEL_FULL_WAIT", "{v}");
    assert_eq!(r["blocked"][0]["process"], "prod", "{v}");
    assert_eq!(r["blocked"][0]["channel"], "a", "{v}");
    assert!(r["rings"].as_array().is_some_and(|a| a.len() == 5), "{v}");
    assert!(
        r["mitigation"].as_str().is_some_and(|m| !m.is_empty()),
        "{v}"
    );
    assert!(!d.join("o").exists(), "no output on a deadlock");
}

#[test]
fn a_pipeline_that_never_ends_stops_at_a_limit_with_exit_four() {
    // `ping` answers every token `pong` sends back, so neither ever finishes.
    let d = program(
        "limits",
        r#"
tensor A: f32[1, 16, 16]
output B: f32[1, 16, 16]
kernel copy(src: in f32[16, 16], dst: out f32[16, 16]) { dst = src }
channel ab: Channel[depth: 1]
channel ba: Channel[depth: 1]
process ping produces ab consumes ba {
    send ab, copy[0](src: A[0], dst: B[0])
    consume ba as i { send ab, copy[i](src: A[0], dst: B[0]) }
}
process pong produces ba consumes ab {
    consume ab as i { send ba, copy[i](src: B[0], dst: A[0]) }
}
workload w = connect(ping, pong)
"#,
    );
    let o = wsp(
        &d,
        &["run", "p.wsp", "--max-tasks", "500", "--out-dir", "o"],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    // At the call of the task that reached it, in `ping`'s `consume` body.
    assert!(
        err.contains("[E0815]")
            && err.contains("stopped: the run reached its limit of 500 tasks (500 tasks")
            && err.contains("p.wsp:9:32")
            && err.contains("the run stopped at this task"),
        "{err}"
    );
    assert!(
        err.contains("Help: a pipeline whose processes never finish"),
        "{err}"
    );
    assert!(
        !d.join("o").exists(),
        "no output when a limit stops the run"
    );
    // The same in both orchestration engines, on the model's clock, as JSON.
    let o = wsp(
        &d,
        &[
            "run",
            "p.wsp",
            "--interpret",
            "--max-cycles",
            "100000",
            "--stats",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the error is JSON");
    assert_eq!(v["error"]["code"], "E0815", "{v}");
    let m = v["error"]["message"].as_str().unwrap_or("");
    assert!(
        m.starts_with("stopped: the run reached its limit of 100000 cycles"),
        "{v}"
    );
    // A limit the run does not reach changes nothing.
    let o = wsp(
        example("csp_pipeline").parent().expect("dir"),
        &["run", "csp_pipeline.wsp", "--max-tasks", "24", "-q"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = wsp(&d, &["run", "p.wsp", "--max-tasks", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn a_cpu_sim_target_runs_the_default_model() {
    let d = program(
        "cpu-sim",
        r#"
axis rows = Dense[2]
input  X: f32[2, 16, 16] = random(seed: 1)
output Y: f32[2, 16, 16]
kernel sq(x: in f32[16, 16], y: out f32[16, 16]) { y = x * x }
workload w { for i in P(rows) { sq[i](x: X[i], y: Y[i]) } }
schedule main = w.dispatch(work_steal).target(cpu_sim)
"#,
    );
    let o = wsp(&d, &["run", "p.wsp"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("on ascend910b"),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn a_program_with_errors_does_not_run() {
    let d = program("errors", "kernel k(x: in f32[4, 4]) { y = x }\n");
    let o = wsp(&d, &["run", "p.wsp"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("does not run"),
        "{}",
        text(&o.stderr)
    );
    let o = wsp(&d, &["run", "nope.wsp"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let o = wsp(
        &d,
        &[
            "run",
            &example("validated_matmul").to_string_lossy(),
            "--schedule",
            "fast",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("no schedule `fast`"));
    let o = wsp(
        &d,
        &[
            "run",
            &example("validated_matmul").to_string_lossy(),
            "--arch",
            "tpu",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("ascend910b"),
        "lists the known models: {}",
        text(&o.stderr)
    );
}

#[test]
fn a_task_error_at_run_time_points_at_the_task_call() {
    // The view of the last iteration lies past `A`'s end: only the run can tell.
    let d = program(
        "task-error",
        r#"param n: u32 = 4
axis rows = DenseDyn(n)
input A: f32[64, 32] = random(1)
output B: f32[64, 32]
kernel cp(a: in f32[16, 32], b: out f32[16, 32]) { b = a }
workload w {
    for i in P(rows) {
        cp[i](a: A[(i + 1) * 16 .. (i + 2) * 16, :], b: B[i * 16 .. (i + 1) * 16, :])
    }
}
"#,
    );
    for engine in [&[][..], &["--interpret"][..]] {
        let o = wsp(
            &d,
            &[&["run", "p.wsp", "--out-dir", "out"], engine].concat(),
        );
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(err.contains("E0810") && err.contains("task cp[3]"), "{err}");
        assert!(err.contains("p.wsp:8:9"), "{err}");
        assert!(err.contains("in this task"), "{err}");
        assert!(!d.join("out").exists(), "no outputs after a failed run");
    }
    let o = wsp(&d, &["run", "p.wsp", "--stats", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(j["error"]["code"], "E0810");
    assert_eq!(j["error"]["location"]["file"], "p.wsp");
    assert_eq!(j["error"]["location"]["line"], 8);
    assert_eq!(j["error"]["location"]["column"], 9);
}

#[test]
fn a_kernel_failure_is_not_blamed_on_the_task_being_submitted() {
    // Every `dv` divides by zero; with a window of 4 the first failure (`dv[0]`) surfaces while
    // a later task is submitted, which must not be named or pointed at.
    let d = program(
        "kernel-failure",
        r#"axis rows = Dense[64]
input A: i32[1024, 32] = random(1)
input Z: i32[1024, 32] = zeros()
output B: i32[1024, 32]
kernel dv(a: in i32[16, 32], z: in i32[16, 32], b: out i32[16, 32]) { b = a / z }
workload w {
    for i in P(rows) {
        dv[i](a: A[i * 16 .. (i + 1) * 16, :], z: Z[i * 16 .. (i + 1) * 16, :], b: B[i * 16 .. (i + 1) * 16, :])
    }
}
schedule s = w.task_window(4)
"#,
    );
    for engine in [&[][..], &["--interpret"][..]] {
        let o = wsp(&d, &[&["run", "p.wsp"], engine].concat());
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        let err = text(&o.stderr);
        // Named by its coordinates, not only its submission number.
        assert!(
            err.contains("task dv[0] (submission 0) failed: integer division by zero"),
            "{err}"
        );
        assert!(
            !err.contains("task dv[4]"),
            "blamed on a submitted task: {err}"
        );
        assert!(!err.contains("in this task"), "{err}");
        // It points at the kernel that failed instead.
        assert!(
            err.contains("p.wsp:5:8") && err.contains("this kernel failed"),
            "{err}"
        );
    }
    let o = wsp(&d, &["run", "p.wsp", "--stats", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(j["error"]["code"], "E0810");
    assert_eq!(
        (
            &j["error"]["location"]["line"],
            &j["error"]["location"]["column"]
        ),
        (&serde_json::json!(5), &serde_json::json!(8))
    );
}

#[test]
fn channel_statistics_agree_with_the_trace() {
    let d = program(
        "channel-stats",
        r#"axis tiles = Dense[6]
input X: f32[6, 16, 16] = random(seed: 1)
tensor T: f32[6, 16, 16]
output Y: f32[6, 16, 16]
kernel fast(src: in f32[16, 16], dst: out f32[16, 16]) { dst = src }
kernel slow(src: in f32[16, 16], dst: out f32[16, 16]) { dst = exp(exp(exp(src * src))) + src }
channel c: Channel[depth: 1]
process prod produces c { for i in P.seq(tiles) { send c, fast[i](src: X[i], dst: T[i]) } }
process cons consumes c { consume c as i { slow[i](src: T[i], dst: Y[i]) } }
workload w = connect(prod, cons)
schedule main = w.dispatch(round_robin(1))
"#,
    );
    // On the event model, and on v9's clocks (the processes' own) under `pto_wsp_v9`.
    for arch in ["ascend910b", "pto_wsp_v9"] {
        channel_statistics_agree_with_the_trace_on(&d, arch);
    }
}

fn channel_statistics_agree_with_the_trace_on(d: &std::path::Path, arch: &str) {
    let o = wsp(
        d,
        &[
            "run", "p.wsp", "--arch", arch, "--stats", "json", "--trace", "t.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stats are JSON");
    let c = &v["stats"]["channels"][0];
    assert_eq!(
        (c["name"].as_str(), c["tokens"].as_u64()),
        (Some("c"), Some(6))
    );
    assert_eq!(c["high_water"], 1);
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("t.json")).expect("trace")).expect("JSON");
    let waits = |name: &str| {
        let ev: Vec<f64> = trace["traceEvents"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["name"] == name)
            .map(|e| e["args"]["cycles"].as_f64().expect("cycles"))
            .collect();
        (ev.len() as u64, ev.iter().sum::<f64>() as u64)
    };
    let full = waits("c: CHANNEL_FULL_WAIT");
    assert!(full.0 > 0, "{arch}: the producer waits for room");
    assert_eq!(
        full,
        (
            c["full_waits"].as_u64().unwrap(),
            c["full_wait_cycles"].as_u64().unwrap()
        )
    );
    let empty = waits("c: CHANNEL_EMPTY_WAIT");
    assert_eq!(
        empty,
        (
            c["empty_waits"].as_u64().unwrap(),
            c["empty_wait_cycles"].as_u64().unwrap()
        )
    );
}

#[test]
fn resources_are_checked_on_the_model_that_runs() {
    // 128 KiB of live f32 tiles: fits ascend910b's UB, not aie-ml's DM.
    let src = |target: &str| {
        format!(
            r#"input X: f32[128, 128] = full(1.0)
output Y: f32[128, 128]
kernel k(a: in f32[128, 128], b: out f32[128, 128]) {{ b = a * a + a }}
workload w {{ k[0](a: X, b: Y) }}
schedule main = w{target}
"#
        )
    };
    let d = program("arch-resources", &src(""));
    let run = |args: &[&str]| {
        let o = wsp(&d, &[&["run", "p.wsp"], args].concat());
        (o.status.code(), text(&o.stderr))
    };
    assert_eq!(run(&[]).0, Some(0));
    // `--arch` is the model the kernels are checked against, not only the one that runs.
    let (code, err) = run(&["--arch", "aie-ml"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("E0701") && err.contains("DM on aie-ml"),
        "{err}"
    );
    // ... over the schedule's target too.
    std::fs::write(d.join("p.wsp"), src(".target(aie_ml)")).expect("write");
    assert_eq!(run(&[]).0, Some(1));
    assert_eq!(run(&["--arch", "ascend910b"]).0, Some(0));
    // A model file, for `wsp run` and `wsp check`.
    let model = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../std/arch/ascend910b.toml"),
    )
    .expect("model");
    std::fs::write(d.join("tiny.toml"), model.replace("UB = 196608", "UB = 1")).expect("write");
    for cmd in ["run", "check"] {
        let o = wsp(&d, &[cmd, "p.wsp", "--arch", "tiny.toml"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains("which has 1 bytes"), "{cmd}: {err}");
    }
    std::fs::write(d.join("bad.toml"), "name = ").expect("write");
    let o = wsp(&d, &["check", "p.wsp", "--arch", "bad.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("bad.toml"), "{}", text(&o.stderr));
}

/// A tensor whose data cannot be made (a missing `.npy`, a shape a param makes impossible)
/// is reported at its declaration, in text and in `--stats json`, before anything runs
/// (exit 2); data given with `--input` is not the source's, so it gets no source location.
#[test]
fn bad_tensor_data_points_at_the_declaration() {
    let d = program(
        "baddata",
        "param n: i32 = 4\n\
         input X: f32[4, 4] = load(\"nothere.npy\")\n\
         output Y: f32[4, 4]\n\
         kernel k(a: in f32[4, 4], b: out f32[4, 4]) { b = a }\n\
         workload w { k[0](a: X, b: Y) }\n",
    );
    let o = wsp(&d, &["run", "p.wsp"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("E0806") && err.contains("p.wsp:2:22"), "{err}");
    assert!(err.contains("this tensor's data"), "{err}");
    let o = wsp(&d, &["run", "p.wsp", "--timing-only", "--stats", "json"]);
    assert_eq!(o.status.code(), Some(2));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(j["error"]["code"], "E0806");
    assert_eq!(j["error"]["location"]["line"], 2);
    assert_eq!(j["error"]["location"]["column"], 22);
    let o = wsp(&d, &["run", "p.wsp", "--input", "X=missing.npy"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("missing.npy") && !err.contains("p.wsp:"),
        "{err}"
    );
}

#[test]
fn bad_axis_data_points_at_the_axis() {
    // (name, program, the axis's line and column, words of the message): a negative Ragged
    // row length, a decreasing Sparse indptr, a Sparse column outside its indices, a negative
    // DenseDyn size. Each is found when a loop reaches the axis, by either engine.
    let head = "input X: f32[3, 4, 16] = random(seed: 1)\n\
                output Y: f32[3, 4, 16]\n\
                kernel cp(src: in f32[16], dst: out f32[16]) { dst = src }\n";
    let nested = |iter: &str| {
        format!(
            "workload w {{\n    for i in P(b) {{ for j in {iter}(s[i]) {{ cp[i, j](src: X[i, j], dst: Y[i, j]) }} }}\n}}\n"
        )
    };
    let (ragged, sparse) = (nested("P"), nested("P.sel"));
    let cases = [
        (
            "ragged",
            format!(
                "input L: i32[3] = [2, -1, 3]\naxis b = Dense[3]\naxis s = Ragged(b, L)\n{head}{ragged}"
            ),
            "p.wsp:3:10",
            "row 1 has length -1",
        ),
        (
            "sparse",
            format!(
                "input P: i32[4] = [0, 2, 1, 3]\ninput I: i32[3] = [0, 1, 2]\naxis b = Dense[3]\n\
                 axis s = Sparse(b, P, I)\n{head}{sparse}"
            ),
            "p.wsp:4:10",
            "indptr is decreasing at row 1",
        ),
        (
            "sparse_cols",
            format!(
                "input P: i32[4] = [0, 1, 2, 4]\ninput I: i32[3] = [0, 1, 2]\naxis b = Dense[3]\n\
                 axis s = Sparse(b, P, I)\n{head}{sparse}"
            ),
            "p.wsp:4:10",
            "index 3 is outside indices",
        ),
        (
            "densedyn",
            format!(
                "param n: i32 = -2\naxis b = DenseDyn(n)\n{head}\
                 workload w {{\n    for i in P(b) {{ cp[i, 0](src: X[i, 0], dst: Y[i, 0]) }}\n}}\n"
            ),
            "p.wsp:2:10",
            "negative size (-2)",
        ),
    ];
    for (name, src, at, words) in cases {
        let d = program(&format!("badaxis_{name}"), &src);
        for engine in [&[][..], &["--interpret"][..]] {
            let o = wsp(&d, &[&["run", "p.wsp"][..], engine].concat());
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{name} {engine:?}: {err}");
            assert!(
                err.contains("E0810") && err.contains(at),
                "{name} {engine:?}: {err}"
            );
            assert!(err.contains(words), "{name} {engine:?}: {err}");
            assert!(err.contains("this axis's data"), "{name} {engine:?}: {err}");
        }
        let o = wsp(&d, &["run", "p.wsp", "--stats", "json"]);
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let (line, col) = at[6..].split_once(':').expect("line:col");
        assert_eq!(j["error"]["location"]["line"].to_string(), line, "{name}");
        assert_eq!(j["error"]["location"]["column"].to_string(), col, "{name}");
    }
}

/// Writes `files` (name, text) into a fresh directory.
fn files(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let d = tempdir(name);
    for (f, src) in files {
        std::fs::write(d.join(f), src).expect("write");
    }
    d
}

/// A module's names resolve in that module: an axis whose size is a constant its module
/// imports keeps that size in a program that declares the same name (the run used the root's
/// `N`), and imported constants fold wherever a constant is needed (channel depths, replica
/// counts, schedule arguments; they were E0505, E0407 and E0606), in constants of the file
/// too (`const M = R * 2` did not lower).
#[test]
fn imported_constants_keep_their_module_values() {
    let d = files(
        "imported-consts",
        &[
            ("consts.wsp", "const N = 4\nconst R = 2\nconst D = 8\n"),
            ("ax.wsp", "import consts.{N}\naxis tiles = Dense[N]\n"),
            (
                "main.wsp",
                "import ax.{tiles}
import consts.{R, D}
const N = 2
const M = R * 2
axis quad = Dense[M]
input X: f32[4, 4, 4] = random(seed: 1)
output Y: f32[4, 4, 4]
output Z: f32[4, 4, 4]
kernel copy(src: in f32[4, 4], dst: out f32[4, 4]) { dst = src }
channel c: Channel[depth: D]
process src produces c { for i in P.seq(tiles) { send c, i } }
process sink consumes c { consume c as i { copy[i](src: X[i], dst: Z[i]) } }
workload each { for i in P(quad) { copy[i](src: X[i], dst: Y[i]) } }
workload piped = connect(src, replicate(sink, R))
workload both = sequential(each, piped)
schedule main = both.dispatch(round_robin(D)).task_window(D)
expect tasks == 8
expect close(Y, X)
expect close(Z, X)
",
            ),
        ],
    );
    let out = wsp(&d, &["check", "main.wsp"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = wsp(&d, &["run", "main.wsp"]);
    let so = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{so}\n{}", text(&out.stderr));
    assert!(so.contains("expects       3/3 hold"), "{so}");
}

/// `wsp run` runs the given file's own schedule or workload, not a schedule of a module it
/// imports (which ran the module's workload, even before the file's own schedule when the
/// module's was `main`); only the file's own `expect`s are checked.
#[test]
fn a_run_ignores_the_schedules_and_expects_of_imported_modules() {
    let module = "axis t = Dense[2]
input X: f32[2, 4, 4] = random(seed: 1)
output Y: f32[2, 4, 4]
kernel copy(src: in f32[4, 4], dst: out f32[4, 4]) { dst = src }
workload mw { for i in P(t) { copy[i](src: X[i], dst: Y[i]) } }
schedule main = mw.dispatch(round_robin(2))
expect tasks == 99
";
    let mine = "output Z: f32[2, 4, 4]
workload w { for i in P(t) { copy[i](src: X[i], dst: Z[i]) } }
expect close(Z, X)
expect tasks == 2
";
    let d = files(
        "imported-schedules",
        &[
            ("m.wsp", module),
            ("named.wsp", &format!("import m.{{t, X, copy}}\n{mine}")),
            ("kernel_only.wsp", "import m.{copy}\n"),
            ("entry.wsp", "import m.{main}\n"),
            (
                "whole.wsp",
                &format!("import m\n{mine}schedule s = w.dispatch(round_robin(1))\n"),
            ),
        ],
    );
    // A schedule imported by name is the file's to run, and no unused import.
    let out = wsp(&d, &["check", "entry.wsp"]);
    assert!(
        !text(&out.stderr).contains("W0103"),
        "{}",
        text(&out.stderr)
    );
    let out = wsp(&d, &["run", "entry.wsp"]);
    let so = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{so}\n{}", text(&out.stderr));
    assert!(so.contains("schedule `main`"), "{so}");
    // A file that imports a kernel only has no workload of its own to run.
    let out = wsp(&d, &["run", "kernel_only.wsp"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("no workload to run"),
        "{}",
        text(&out.stderr)
    );
    for f in ["named.wsp", "whole.wsp"] {
        let out = wsp(&d, &["run", f]);
        let so = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{f}: {so}\n{}",
            text(&out.stderr)
        );
        assert!(so.contains("expects       2/2 hold"), "{f}: {so}");
    }
}

/// After a deadlock, the report adds the static depths of the pipelines that ran, not those of
/// the file's other pipelines.
#[test]
fn a_deadlock_report_names_only_the_pipelines_that_ran() {
    let d = program(
        "deadlock-ran",
        "axis tiles = Dense[4]
input X: f32[4, 4, 4] = random(seed: 1)
output Y: f32[4, 4, 4]
kernel copy(src: in f32[4, 4], dst: out f32[4, 4]) { dst = src }
channel a: Channel[depth: 1]
channel b: Channel[depth: 1]
channel z: Channel[depth: 0]
process split produces a, b {
    for i in P.seq(tiles) { send a, i }
    for i in P.seq(tiles) { send b, i }
}
process join consumes a, b {
    consume b as i { consume a as j { copy[j](src: X[j], dst: Y[j]) } }
}
process lone produces z { for i in P.seq(tiles) { send z, i } }
workload w = connect(split, join)
workload v = connect(lone)
schedule s = v
",
    );
    let out = wsp(&d, &["run", "p.wsp"]);
    let se = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{se}");
    assert!(se.contains("`z` depth 4 (now 0)"), "{se}");
    assert!(!se.contains("`a` depth"), "{se}");
}

/// Two outputs of one name (the file's own and an imported module's) cannot both be `NAME.npy`
/// in `--out-dir`: a usage error naming both files, and nothing written.
#[test]
fn outputs_of_one_name_in_two_files_are_refused_by_out_dir() {
    let lib = "const N = 3
axis rows = Dense[N]
input X: f32[N, 8] = random(seed: 1)
output Y: f32[N, 8]
kernel cp(src: in f32[1, 8], dst: out f32[1, 8]) { dst = src }
workload lw { for i in P(rows) { cp[i](src: X[i], dst: Y[i]) } }
";
    let main = "import lib.{lw}
const N = 7
axis rows = Dense[N]
input X: f32[N, 8] = random(seed: 2)
output Y: f32[N, 8]
kernel cp(src: in f32[1, 8], dst: out f32[1, 8]) { dst = src }
workload own { for i in P(rows) { cp[i](src: X[i], dst: Y[i]) } }
workload both = sequential(own, lw)
schedule main = both
";
    let d = files("same-output", &[("lib.wsp", lib), ("main.wsp", main)]);
    let out = wsp(&d, &["run", "main.wsp", "--out-dir", "o"]);
    let se = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{se}");
    assert!(se.contains("two outputs are named `Y`"), "{se}");
    assert!(!d.join("o").exists(), "a directory was left behind");
    // Without `--out-dir` the run is fine.
    let out = wsp(&d, &["run", "main.wsp"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

const EXTERN: &str = r#"
axis rows = Dense[2]
input  A: f32[2, 16, 16] = random(seed: 5)
output C: f32[2, 16, 16]
output R: f32[2, 16, 16]
kernel twice(a: in f32[16, 16], c: out f32[16, 16]) { c = a + a }
extern kernel fast_twice(a: in f32[16, 16], c: out f32[16, 16]) {
    ascend: "fast_twice.cpp",
    sim: twice,
    cost: COST
}
workload w {
    for i in P(rows) {
        fast_twice[i](a: A[i], c: C[i])
        twice[i](a: A[i], c: R[i])
    }
}
expect close(C, R, rtol: 0.0, atol: 0.0)
expect tasks == 4
"#;

#[test]
fn an_extern_kernel_runs_its_reference_at_its_declared_cost() {
    let cycles = |cost: &str| {
        let d = program(
            &format!("extern-{cost}"),
            &format!("const COST = {cost}\n{EXTERN}"),
        );
        let o = wsp(
            &d,
            &["run", "p.wsp", "--arch", "pto_wsp_v9", "--stats", "json"],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let stats: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stats json");
        stats["stats"]["total_cycles"]
            .as_u64()
            .expect("total_cycles")
    };
    // The declared cost is what a task of the extern kernel takes: with 100,000 cycles a task,
    // the run takes at least that long; with 100, the reference's own tasks dominate.
    let (low, high) = (cycles("100"), cycles("100000"));
    assert!(high >= 100000 && low < 1000, "{low} {high}");
}

#[test]
fn an_extern_kernel_without_a_reference_does_not_run() {
    let src = EXTERN.replace("    sim: twice,\n", "");
    let d = program("extern-none", &format!("const COST = 10\n{src}"));
    let o = wsp(&d, &["run", "p.wsp"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("E0714") && err.contains("fast_twice") && err.contains("sim:"),
        "{err}"
    );
}

/// A deadlocked run leads with the program's terms — each blocked process, its channel, and
/// the line of its `send`/`consume` — before the runtime's state, and still writes its trace
/// and graph (that is when they are needed most).
#[test]
fn a_deadlock_is_told_in_the_programs_terms_and_keeps_its_trace_and_graph() {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ui/csp_deadlock_full.wsp"),
    )
    .expect("fixture");
    let d = program("deadlock-trace", &src);
    let o = wsp(
        &d,
        &["run", "p.wsp", "--trace", "t.json", "--graph", "g.dot"],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    // The proof first (E0509, `wsp check`'s error), then the run's report from its first line.
    assert!(err.starts_with("[E0509] Error"), "{err}");
    // The run's report is a diagnostic like `wsp check`'s: labels at each blocked process's
    // `send`/`consume` of its channel, then the mitigation, then the runtime's state.
    let report = &err[err.find("[E0811] Error: deadlock at cycle").expect("E0811")..];
    let at = |needle: &str| {
        report
            .find(needle)
            .unwrap_or_else(|| panic!("{needle}: {report}"))
    };
    let send = at("`split` waits to send on `a`: full");
    let consume = at("`join` waits to receive from `b`: empty");
    assert!(at("p.wsp:16:") < send && at(" 20 │") < consume, "{report}");
    let state = at("runtime state at the deadlock");
    assert!(at("Help: ") < state, "{report}");
    assert!(report.contains("`wsp explain E0811`"), "{report}");
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("t.json")).expect("trace")).expect("JSON");
    assert!(trace["traceEvents"]
        .as_array()
        .is_some_and(|a| !a.is_empty()));
    let graph = std::fs::read_to_string(d.join("g.dot")).expect("graph");
    assert!(
        graph.starts_with("digraph") && graph.contains("copy[0]"),
        "{graph}"
    );
    assert!(err.contains("wrote the trace `t.json` and the graph `g.dot` up to the failure"));
}

/// `--threads` is bounded (a documented maximum, not a thread spawn that fails and aborts).
#[test]
fn threads_beyond_the_maximum_are_a_usage_error() {
    let o = wsp(
        Path::new("."),
        &[
            "run",
            &example("softmax").to_string_lossy(),
            "--threads",
            "20000",
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("20000 is not in 1..=256"), "{err}");
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

/// A full window under `.task_window(n, abort)` stops the run with E0816 at the task that found
/// it full, in the check-time format, exit 1, nothing written.
#[test]
fn an_abort_window_stops_the_run_at_the_task_that_found_it_full() {
    let d = program(
        "abort-window",
        "axis rows = Dense[8]
input  A: f32[8, 128, 128] = random(seed: 1)
input  B: f32[128, 128] = random(seed: 2)
output C: f32[8, 128, 128]
kernel mm(a: in f32[128, 128], b: in f32[128, 128], c: out f32[128, 128]) { c = matmul(a, b) }
workload w { for i in P(rows) { mm[i](a: A[i], b: B, c: C[i]) } }
schedule main = w.task_window(2, abort)
",
    );
    let o = wsp(&d, &["run", "p.wsp", "--out-dir", "o"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("[E0816] Error: task mm[2]: the task window of 2 is full"),
        "{err}"
    );
    assert!(err.contains("p.wsp:6:33"), "{err}");
    assert!(err.contains("this task found the window full"), "{err}");
    assert!(!d.join("o").exists());
    // With the default mode the same schedule stalls and completes.
    std::fs::write(
        d.join("p.wsp"),
        std::fs::read_to_string(d.join("p.wsp"))
            .expect("read")
            .replace(".task_window(2, abort)", ".task_window(2)"),
    )
    .expect("write");
    let o = wsp(&d, &["run", "p.wsp", "--out-dir", "o", "--stats", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

/// Tensors that each fit in memory but together do not are refused before anything is
/// allocated (E0808 naming the largest), rather than running into the allocator.
#[test]
fn tensors_too_large_together_are_refused_before_the_run() {
    let Some(avail) = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map(|kib| kib * 1024)
    }) else {
        return;
    };
    // Six f32 outputs of at most 2^31 elements, each a third of what is available as the
    // host's f64 and the runtime's f32 (12 bytes an element): reading the results back holds
    // every output's host values (8 bytes an element) and one buffer, more than is available.
    let n = (avail / 3 / 12).min(1 << 31);
    if 6 * n * 8 + n * 4 <= avail {
        return;
    }
    let outs: String = (0..6).map(|i| format!("output C{i}: f32[{n}]\n")).collect();
    let src = format!(
        "input A: f32[1, 4] = zeros\n{outs}\
         kernel k(a: in f32[1, 4], c: out f32[1, 4]) {{ c = a }}\n\
         workload w {{ k[0](a: A, c: C0[0..4]) }}\n"
    );
    let d = program("too-large-together", &src);
    let o = wsp(&d, &["run", "p.wsp", "--out-dir", "o"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("E0808") && err.contains("the run's tensors need"),
        "{err}"
    );
    assert!(err.contains("the largest: `C0`"), "{err}");
    assert!(!d.join("o").exists());
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

#[test]
fn placements_put_tasks_on_their_cores_and_refuse_what_cannot_be_placed() {
    let src = |grid: &str| {
        format!(
            r#"axis batch = Dense[2]
axis heads = Dense[4]
input X: f32[2, 4, 16, 16] = random(seed: 1)
output Y: f32[2, 4, 16, 16]
kernel copy(x: in f32[16, 16], y: out f32[16, 16]) {{ y = x }}
workload w {{
    for b, h in P(batch, heads) {{ copy[b, h](x: X[b, h], y: Y[b, h]) }}
}}
schedule main = w.spatial_map(grid: {grid}, at: (heads, batch))
"#
        )
    };
    // `--stats json` counts each core's tasks: (heads mod 4) * 2 + batch names cores 0 to 7.
    let d = program("spatial-map", &src("(4, 2)"));
    let o = wsp(&d, &["run", "p.wsp", "--stats", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let cores = j["stats"]["cores"].as_array().expect("cores");
    let busy: Vec<(u64, u64)> = cores
        .iter()
        .filter(|c| c["tasks"].as_u64() > Some(0))
        .map(|c| {
            (
                c["index"].as_u64().unwrap_or(99),
                c["tasks"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(busy, (0..8).map(|i| (i, 1)).collect::<Vec<_>>());
    // 49 cells on ascend910b's 48 vector cores: the checker knows the model with `--arch`
    // (E0610); on the default model the run refuses it before any task (E0817).
    let d = program("spatial-map-large", &src("(7, 7)"));
    let o = wsp(&d, &["run", "p.wsp", "--arch", "ascend910b"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("E0610"), "{}", text(&o.stderr));
    let o = wsp(&d, &["run", "p.wsp"]);
    assert_ne!(o.status.code(), Some(0));
    let err = text(&o.stderr);
    assert!(err.contains("E0817") && err.contains("48 cores"), "{err}");
}

/// A limit reached while the main orchestration submits a task points at that task's call, in
/// the renderer of every other diagnostic; an error with no place still ends with the hint.
#[test]
fn a_limit_points_at_the_task_that_reached_it() {
    let d = program(
        "limit-at",
        r#"
axis rows = Dense[8]
input  X: f32[8, 16, 16] = random(seed: 1)
output Y: f32[8, 16, 16]
kernel cp(x: in f32[16, 16], y: out f32[16, 16]) { y = x }
workload w {
    for i in P(rows) {
        cp[i](x: X[i], y: Y[i])
    }
}
"#,
    );
    let o = wsp(&d, &["run", "p.wsp", "--max-tasks", "3"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(
        err.contains("[E0815]") && err.contains("p.wsp:8:9"),
        "{err}"
    );
    assert!(err.contains("the run stopped at this task"), "{err}");
    assert!(err.contains("`wsp explain E0815`"), "{err}");
}
