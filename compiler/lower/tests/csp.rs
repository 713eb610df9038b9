//! CSP programs (channels, processes, `connect`, `replicate`) lowered to the Program IR and run
//! by the reference workload interpreter: outputs, task counts, per-process attribution and
//! deadlock reports.

use std::path::Path;

fn lower(name: &str, src: &str) -> Result<wsp_ir::Program, Vec<wsp_diagnostics::Diagnostic>> {
    let mut ws = wsp_core::Workspace::new();
    ws.set_file(name, src.to_string());
    wsp_lower::lower(&ws, name)
}

fn lower_ok(name: &str, src: &str) -> wsp_ir::Program {
    let p = lower(name, src).unwrap_or_else(|d| panic!("{name} did not lower: {d:#?}"));
    let problems = wsp_ir::check::validate_program(&p);
    assert!(problems.is_empty(), "{name}: invalid IR: {problems:?}");
    p
}

fn run(p: &wsp_ir::Program) -> Result<wsp_ir::data::ReferenceRun, String> {
    wsp_ir::data::run_reference(p, None, &[], &[], Path::new("."))
}

fn tensor(p: &wsp_ir::Program, r: &wsp_ir::data::ReferenceRun, name: &str) -> Vec<f64> {
    let id = p.tensor_by_name(name).expect("tensor exists");
    r.tensors[id.index()].to_f64()
}

fn kernel_name(p: &wsp_ir::Program, t: &wsp_ir::exec::TaskRecord) -> String {
    p.kernels[t.kernel.index()].name.clone()
}

const PIPELINE: &str = r#"
axis tiles = Dense[4]
input X: f32[4, 8, 8] = random(seed: 7)
tensor T0: f32[4, 8, 8]
tensor T1: f32[4, 8, 8]
output Y: f32[4, 8, 8]

kernel load_tile(src: in f32[8, 8], dst: out f32[8, 8]) { dst = src }
kernel square_tile(src: in f32[8, 8], dst: out f32[8, 8]) { dst = src * src + 1.0 }
kernel store_tile(src: in f32[8, 8], dst: out f32[8, 8]) { dst = src * 2.0 }

channel l2c: Channel[depth: 2]
channel c2s: Channel[depth: 2, latency: 5]

process loader produces l2c {
    for i in P.seq(tiles) { send l2c, load_tile[i](src: X[i], dst: T0[i]) }
}
process computer consumes l2c produces c2s {
    consume l2c as i { send c2s, square_tile[i](src: T0[i], dst: T1[i]) }
}
process storer consumes c2s {
    consume c2s as i { store_tile[i](src: T1[i], dst: Y[i]) }
}

workload squares = connect(loader, computer, storer)
"#;

#[test]
fn pipeline_lowers_to_channels_processes_and_connect() {
    let p = lower_ok("pipeline.wsp", PIPELINE);
    assert_eq!(p.channels.len(), 2);
    assert_eq!(p.channels[0].name, "l2c");
    assert_eq!((p.channels[0].depth, p.channels[0].latency), (2, None));
    assert_eq!((p.channels[1].depth, p.channels[1].latency), (2, Some(5)));
    let names: Vec<&str> = p.processes.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["loader", "computer", "storer"]);
    let computer = &p.processes[1];
    assert_eq!(computer.consumes, [wsp_ir::workload::ChannelId(0)]);
    assert_eq!(computer.produces, [wsp_ir::workload::ChannelId(1)]);
    assert_eq!(computer.vars, ["i"]);
    match &computer.body[..] {
        [wsp_ir::workload::WStmt::Consume { channel, body, .. }] => {
            assert_eq!(channel.0, 0);
            assert!(matches!(
                &body[..],
                [wsp_ir::workload::WStmt::Send {
                    payload: wsp_ir::workload::SendPayload::Task(_),
                    ..
                }]
            ));
        }
        other => panic!("computer body: {other:?}"),
    }
    match &p.workloads[0].body {
        wsp_ir::workload::WorkloadBody::Connect { processes } => {
            let ids: Vec<(u32, u32)> = processes
                .iter()
                .map(|c| (c.process.0, c.replicas))
                .collect();
            assert_eq!(ids, [(0, 1), (1, 1), (2, 1)]);
        }
        other => panic!("workload body: {other:?}"),
    }
}

#[test]
fn pipeline_runs_and_computes_each_tile() {
    let p = lower_ok("pipeline.wsp", PIPELINE);
    let r = run(&p).expect("pipeline runs");
    let x = tensor(&p, &r, "X");
    let y = tensor(&p, &r, "Y");
    assert_eq!(x.len(), 4 * 64);
    for (xv, yv) in x.iter().zip(&y) {
        let want = ((*xv as f32) * (*xv as f32) + 1.0) * 2.0;
        assert!(
            (want as f64 - yv).abs() <= 1e-5 * want.abs() as f64,
            "{yv} vs {want}"
        );
    }
    assert_eq!(r.outcome.tasks.len(), 12);
    for t in &r.outcome.tasks {
        let want = match kernel_name(&p, t).as_str() {
            "load_tile" => "loader",
            "square_tile" => "computer",
            "store_tile" => "storer",
            k => panic!("unexpected kernel {k}"),
        };
        assert_eq!(t.process.as_deref(), Some(want));
    }
    // Every tile passes through all three stages, in order, with its coordinates.
    for i in 0..4i64 {
        let stages: Vec<String> = r
            .outcome
            .tasks
            .iter()
            .filter(|t| t.coords == [i])
            .map(|t| kernel_name(&p, t))
            .collect();
        assert_eq!(
            stages,
            ["load_tile", "square_tile", "store_tile"],
            "tile {i}"
        );
    }
}

const REPLICATED: &str = r#"
const N = 8
axis tiles = Dense[N]
input X: f32[N, 4, 4] = random(seed: 3)
output Y: f32[N, 4, 4]

kernel scale(src: in f32[4, 4], dst: out f32[4, 4], k: f32) { dst = src * k }

channel work: Channel[depth: 2]

process feeder produces work {
    for i in P.seq(tiles) { send work, i }
}
process worker consumes work {
    consume work as i {
        when i % 2 == 0 { scale[i](src: X[i], dst: Y[i], k: 3.0) }
        else { scale[i](src: X[i], dst: Y[i], k: -1.0) }
    }
}

workload farm = connect(feeder, replicate(worker, 4))
"#;

#[test]
fn replicated_worker_shares_its_input_channel() {
    let p = lower_ok("farm.wsp", REPLICATED);
    match &p.workloads[0].body {
        wsp_ir::workload::WorkloadBody::Connect { processes } => {
            assert_eq!(processes.len(), 2);
            assert_eq!((processes[1].process.0, processes[1].replicas), (1, 4));
        }
        other => panic!("workload body: {other:?}"),
    }
    let r = run(&p).expect("farm runs");
    let x = tensor(&p, &r, "X");
    let y = tensor(&p, &r, "Y");
    for (n, (xv, yv)) in x.iter().zip(&y).enumerate() {
        let tile = n / 16;
        let k = if tile % 2 == 0 { 3.0f32 } else { -1.0 };
        let want = (*xv as f32 * k) as f64;
        assert!((want - yv).abs() <= 1e-6 * want.abs(), "{yv} vs {want}");
    }
    // One task per token, each by one of the replicas.
    assert_eq!(r.outcome.tasks.len(), 8);
    let mut coords: Vec<i64> = r.outcome.tasks.iter().map(|t| t.coords[0]).collect();
    coords.sort();
    assert_eq!(coords, (0..8).collect::<Vec<_>>());
    let mut procs: Vec<&str> = r
        .outcome
        .tasks
        .iter()
        .map(|t| t.process.as_deref().expect("attributed"))
        .collect();
    assert!(procs.iter().all(|n| n.starts_with("worker#")), "{procs:?}");
    procs.sort();
    procs.dedup();
    assert!(procs.len() > 1, "the work was not shared: {procs:?}");
}

const TUPLES: &str = r#"
axis rows = Dense[2]
axis cols = Dense[3]
input X: f32[2, 3, 4] = random(seed: 5)
output Y: f32[2, 3, 4]

kernel neg(src: in f32[4], dst: out f32[4]) { dst = -src }

channel pairs: Channel[depth: 0]

process source produces pairs {
    for r, c in P.seq(rows, cols) { send pairs, (r, c) }
}
process sink consumes pairs {
    consume pairs as (r, c) { neg[r, c](src: X[r, c], dst: Y[r, c]) }
}

workload w = connect(source, sink)
"#;

#[test]
fn tuple_tokens_bind_several_names_through_a_rendezvous() {
    let p = lower_ok("tuples.wsp", TUPLES);
    assert_eq!(p.channels[0].depth, 0);
    assert_eq!(p.processes[1].vars, ["r", "c"]);
    let r = run(&p).expect("runs");
    let x = tensor(&p, &r, "X");
    let y = tensor(&p, &r, "Y");
    assert!(x.iter().zip(&y).all(|(a, b)| *b == -*a));
    assert_eq!(r.outcome.tasks.len(), 6);
    let coords: Vec<Vec<i64>> = r.outcome.tasks.iter().map(|t| t.coords.clone()).collect();
    assert_eq!(
        coords,
        [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]].map(|c| c.to_vec())
    );
    assert!(r
        .outcome
        .tasks
        .iter()
        .all(|t| t.process.as_deref() == Some("sink")));
}

const DEADLOCK: &str = r#"
axis tiles = Dense[2]
input X: f32[2, 4, 4] = random(seed: 1)
output Y: f32[2, 4, 4]

kernel copy(src: in f32[4, 4], dst: out f32[4, 4]) { dst = src }

channel ping: Channel[depth: 1]
channel pong: Channel[depth: 1]

process left consumes pong produces ping {
    consume pong as i { send ping, copy[i](src: X[i], dst: Y[i]) }
}
process right consumes ping produces pong {
    consume ping as i { send pong, i }
}

workload w = connect(left, right)
"#;

#[test]
fn processes_waiting_on_each_other_deadlock_with_e0811() {
    let p = lower_ok("deadlock.wsp", DEADLOCK);
    let err = match run(&p) {
        Ok(_) => panic!("a cycle of consumes must deadlock"),
        Err(e) => e,
    };
    // Both processes wait on an empty channel the other would fill.
    for part in [
        "E0811",
        "deadlock in `w`",
        "`left` waits on `pong`",
        "`right` waits on `ping`",
        "`ping` 0/1",
        "`pong` 0/1",
    ] {
        assert!(err.contains(part), "{part} missing from: {err}");
    }
}

#[test]
fn a_non_constant_replicate_count_is_e0813_at_the_count() {
    let src = r#"
param n: u32 = 2
axis tiles = Dense[2]
input X: f32[2, 4, 4] = random(seed: 1)
output Y: f32[2, 4, 4]
kernel copy(src: in f32[4, 4], dst: out f32[4, 4]) { dst = src }
channel c: Channel[depth: 1]
process feeder produces c {
    for i in P.seq(tiles) { send c, i }
}
process worker consumes c {
    consume c as i { copy[i](src: X[i], dst: Y[i]) }
}
workload w = connect(feeder, replicate(worker, n))
"#;
    let errs = match lower("rep.wsp", src) {
        Ok(_) => panic!("a param count cannot be lowered"),
        Err(e) => e,
    };
    assert_eq!(errs.len(), 1, "{errs:#?}");
    let d = &errs[0];
    assert_eq!(d.code, wsp_lower::UNSUPPORTED);
    assert!(d.message.contains("replicate"), "{}", d.message);
    let at = src.find("replicate(worker, n)").expect("in source") + "replicate(worker, ".len();
    assert_eq!(d.primary.span.start as usize, at, "{d:#?}");
}

/// The language reference's §7 sketch (tests/ui/lang_csp.wsp) lowers to valid IR.
#[test]
fn the_language_reference_pipeline_lowers() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ui/lang_csp.wsp");
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    let p = lower_ok("lang_csp.wsp", &text);
    let chans: Vec<(&str, u32)> = p
        .channels
        .iter()
        .map(|c| (c.name.as_str(), c.depth))
        .collect();
    assert_eq!(chans, [("l2c", 2), ("c2s", 2)]);
    let procs: Vec<(&str, usize, usize)> = p
        .processes
        .iter()
        .map(|x| (x.name.as_str(), x.consumes.len(), x.produces.len()))
        .collect();
    assert_eq!(
        procs,
        [("loader", 0, 1), ("computer", 1, 1), ("storer", 1, 0)]
    );
    assert!(matches!(
        p.workloads[0].body,
        wsp_ir::workload::WorkloadBody::Connect { ref processes } if processes.len() == 3
    ));
}
