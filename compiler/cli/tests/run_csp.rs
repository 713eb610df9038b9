//! End-to-end tests of pipelines (`connect`) under `wsp run`: channel statistics against the
//! trace, and deadlocks (exit 3) reported in the program's terms, as JSON, with the trace and
//! graph up to the deadlock.

mod common;

use std::path::Path;

use common::run::{program, text, wsp};

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
