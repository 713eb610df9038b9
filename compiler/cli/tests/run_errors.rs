//! End-to-end tests of `wsp run`'s errors, where they point and their exit codes: failed
//! expectations, bad data files, tensor and axis data, programs that do not check, task and
//! kernel failures, bad arguments and tensors too large together.

mod common;

use std::path::Path;

use common::run::{example, npy_f32, program, sum4, tempdir, text, wsp};

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
    for engine in [&[][..], &["--jit-orchestration"][..], &["--interpret"][..]] {
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
    for engine in [&[][..], &["--jit-orchestration"][..], &["--interpret"][..]] {
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
        for engine in [&[][..], &["--jit-orchestration"][..], &["--interpret"][..]] {
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
