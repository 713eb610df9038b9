//! End-to-end tests of task windows and run limits in `wsp run`: a window of one slows a run
//! without deadlocking it, an abort window stops it, and `--max-tasks`/`--max-cycles` stop a
//! run (exit 4) at the task that reached them.

mod common;

use std::path::Path;

use common::run::{example, program, sum4, tempdir, text, wsp};

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
