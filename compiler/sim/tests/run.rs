//! `wsp_sim::run` on small programs: data-dependent control waits for its producers, views
//! that are not row-contiguous, interpreter fallback, dispatch keys, run-time errors.

use std::path::Path;
use wsp_sim::{Engine, Options, SimError};

fn lower(src: &str) -> wsp_ir::Program {
    let mut ws = wsp_core::Workspace::new();
    ws.set_file("t.wsp", src.to_string());
    wsp_lower::lower(&ws, "t.wsp").unwrap_or_else(|d| panic!("did not lower: {d:#?}"))
}

fn opts(arch: &str) -> Options {
    Options::new(wsp_arch::Arch::builtin(arch).expect("arch"), Path::new("."))
}

/// [`opts`] without the orchestration's submission cost: for tests about what tasks in flight
/// together do (edges, streams, the window, order), which small tasks submitted 1,610 cycles
/// apart would never be.
fn opts_at_once(arch: &str) -> Options {
    let mut o = opts(arch);
    o.arch.overheads.submit = 0;
    o
}

fn run(src: &str, o: &Options) -> Result<wsp_sim::SimRun, SimError> {
    wsp_sim::run(&lower(src), &wsp_jit::Jit::new(), o)
}

/// The reference interpreters' tensors for the same program.
fn reference(src: &str) -> Vec<wsp_ir::tensor::HostTensor> {
    let p = lower(src);
    wsp_ir::data::run_reference(&p, None, &[], &[], Path::new("."))
        .expect("reference run")
        .tensors
}

/// `sq` over the 16×16 tiles of `X: f32[rows, 16, 16]`, under `schedule main = w{directives}`.
fn squares(rows: u32, directives: &str) -> String {
    format!(
        r#"
axis rows = Dense[{rows}]
input  X: f32[{rows}, 16, 16] = random(seed: 7)
output Y: f32[{rows}, 16, 16]
kernel sq(x: in f32[16, 16], y: out f32[16, 16]) {{ y = x * x }}
workload w {{ for i in P(rows) {{ sq[i](x: X[i], y: Y[i]) }} }}
schedule main = w{directives}
"#
    )
}

fn bits(t: &wsp_ir::tensor::HostTensor) -> Vec<u64> {
    t.to_f64().iter().map(|x| x.to_bits()).collect()
}

const DEPENDENT: &str = r#"
axis rows = Dense[4]
input  X: f32[4, 1, 16] = random(seed: 1)
output F: f32[4, 1, 16]
output Y: f32[4, 1, 16]

kernel mark(x: in f32[1, 16], f: out f32[1, 16]) { f = x * 0.0 + 1.0 }
kernel twice(x: in f32[1, 16], y: out f32[1, 16]) { y = x * 2.0 }
kernel thrice(x: in f32[1, 16], y: out f32[1, 16]) { y = x * 3.0 }

workload marks { for i in P(rows) { mark[i](x: X[i], f: F[i]) } }
workload pick {
    for i in P(rows) {
        when F[i, 0, 0] > 0.5 { twice[i](x: X[i], y: Y[i]) }
        else { thrice[i](x: X[i], y: Y[i]) }
    }
}
workload both = sequential(marks, pick)
schedule main = both.dispatch(round_robin(4))
"#;

#[test]
fn a_data_dependent_branch_sees_what_its_producer_wrote() {
    let r = run(DEPENDENT, &opts("ascend910b")).expect("runs");
    let names: Vec<&str> = r.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["mark", "twice", "thrice"]);
    assert_eq!(r.kernels[1].tasks, 4, "every row took the `twice` branch");
    assert_eq!(r.kernels[2].tasks, 0);
    let x = r.tensors[0].to_f64();
    let y = r.tensors[2].to_f64();
    for (a, b) in x.iter().zip(&y) {
        assert_eq!(*b, (*a as f32 * 2.0) as f64);
    }
    let refr = reference(DEPENDENT);
    assert_eq!(bits(&r.tensors[2]), bits(&refr[2]));
}

#[test]
fn timing_only_refuses_control_flow_on_computed_data() {
    let mut o = opts("ascend910b");
    o.timing_only = true;
    let e = run(DEPENDENT, &o).expect_err("depends on computed data");
    assert!(e.to_string().contains("`F`"), "{e}");
    assert!(e.to_string().contains("--timing-only"), "{e}");
}

#[test]
fn timing_only_reads_the_input_data_its_control_flow_needs() {
    // The branch reads the input `X` (no task writes it): a timing-only run makes `X`'s data
    // when the orchestration first reads it, and takes the branches the full run takes.
    let src = r#"
axis rows = Dense[16]
input  X: f32[16, 1, 16] = random(seed: 9)
output Y: f32[16, 1, 16]
kernel twice(x: in f32[1, 16], y: out f32[1, 16]) { y = x * 2.0 }
kernel thrice(x: in f32[1, 16], y: out f32[1, 16]) { y = x * 3.0 }
workload w {
    for i in P(rows) {
        when X[i, 0, 0] > 0.0 { twice[i](x: X[i], y: Y[i]) }
        else { thrice[i](x: X[i], y: Y[i]) }
    }
}
schedule main = w.dispatch(round_robin(4))
"#;
    let full = run(src, &opts("ascend910b")).expect("runs");
    let counts = |r: &wsp_sim::SimRun| r.kernels.iter().map(|k| k.tasks).collect::<Vec<_>>();
    assert!(counts(&full).iter().all(|c| *c > 0), "{:?}", counts(&full));
    for interpret in [false, true] {
        let mut o = opts("ascend910b");
        o.timing_only = true;
        o.interpret = interpret;
        let t = run(src, &o).expect("runs");
        assert_eq!(counts(&t), counts(&full));
        assert_eq!(t.stats.total_cycles, full.stats.total_cycles);
        // The output was never made.
        assert!(t.tensors[1].data.is_empty());
    }
}

#[test]
fn timing_only_checks_the_shapes_of_only_the_data_its_orchestration_reads() {
    // `X.npy` holds 8 rows, the program at `n = 16` declares 16: a full run refuses it, a
    // timing-only run never reads it (no task's placement reads `X`), so its shape does not
    // matter there — unless its control flow reads `X`, which makes it and then refuses the
    // file. A file that is missing or not an `.npy` is refused either way.
    let dir = std::env::temp_dir().join(format!("wsp-sim-timing-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let eight =
        wsp_ir::tensor::HostTensor::from_f64(wsp_ir::DType::F32, vec![8, 1, 16], &[1.0; 128]);
    std::fs::write(dir.join("x.npy"), wsp_ir::npy::encode_npy(&eight)).expect("write");
    let src = r#"
param n: i64 = 16
axis rows = DenseDyn(n)
input  X: f32[n, 1, 16] = load("x.npy")
output Y: f32[n, 1, 16]
kernel cp(x: in f32[1, 16], y: out f32[1, 16]) { y = x }
workload w { for i in P(rows) { cp[i](x: X[i], y: Y[i]) } }
schedule main = w.dispatch(round_robin(4))
"#;
    let mut o = Options::new(wsp_arch::Arch::builtin("ascend910b").expect("arch"), &dir);
    let e = run(src, &o).expect_err("a full run reads X");
    assert!(e.to_string().contains("x.npy"), "{e}");
    o.timing_only = true;
    assert_eq!(run(src, &o).expect("runs").stats.tasks, 16);
    let reads = src.replace(
        "cp[i](x: X[i], y: Y[i])",
        "when X[i, 0, 0] > 0.0 { cp[i](x: X[i], y: Y[i]) }",
    );
    let e = run(&reads, &o).expect_err("the control flow reads X");
    assert!(
        e.to_string().contains("x.npy") && e.to_string().contains("shape"),
        "{e}"
    );
    std::fs::write(dir.join("x.npy"), b"not npy").expect("write");
    let e = run(src, &o).expect_err("not an .npy file");
    assert!(e.to_string().contains("x.npy"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn timing_only_takes_tensors_larger_than_host_memory() {
    // `Y` has 2^33 elements (32 GiB of f32): a timing-only run needs only its shape.
    let src = r#"
axis rows = Dense[4]
input  X: f32[4, 16, 16] = random(seed: 2)
output Y: f32[32768, 1024, 16, 16]
kernel cp(x: in f32[16, 16], y: out f32[16, 16]) { y = x }
workload w { for i in P(rows) { cp[i](x: X[i], y: Y[i, 0]) } }
schedule main = w.dispatch(round_robin(4))
"#;
    let mut o = opts("ascend910b");
    o.timing_only = true;
    let t = run(src, &o).expect("runs");
    assert_eq!(t.stats.tasks, 4);
    let e = run(src, &opts("ascend910b")).expect_err("too large to run");
    assert!(e.to_string().contains("the limit of host tensors"), "{e}");
    // A tensor that large which the orchestration reads must be made after all: an error.
    let reads = src.replace(
        "cp[i](x: X[i], y: Y[i, 0])",
        "when B[i, 0, 0, 0] > 0.0 { cp[i](x: X[i], y: Y[i, 0]) }",
    ) + "input B: f32[32768, 1024, 16, 16] = zeros()\n";
    let e = run(&reads, &o).expect_err("reads a tensor too large to make");
    assert!(
        e.to_string().contains("reads data that cannot be made")
            && e.to_string().contains("tensor `B`"),
        "{e}"
    );
}

#[test]
fn timing_only_runs_no_kernel_and_gives_the_same_cycles() {
    let src = r#"
axis rows = Dense[8]
input  X: f32[8, 16, 16] = random(seed: 4)
output Y: f32[8, 16, 16]
kernel sq(x: in f32[16, 16], y: out f32[16, 16]) { y = x * x }
workload w { for i in P(rows) { sq[i](x: X[i], y: Y[i]) } }
schedule main = w.dispatch(round_robin(4))
"#;
    let full = run(src, &opts("ascend910b")).expect("runs");
    let mut o = opts("ascend910b");
    o.timing_only = true;
    let t = run(src, &o).expect("runs");
    assert_eq!(t.stats.total_cycles, full.stats.total_cycles);
    assert!(t.kernels.iter().all(|k| k.engine == Engine::None));
    assert!(t.tensors[1].to_f64().iter().all(|v| *v == 0.0));
    // Expectations on statistics are checked without kernels; those on results are not.
    let cycles = full.stats.total_cycles;
    let with = |e: &str| format!("{src}{e}");
    let t = run(
        &with(&format!(
            "expect total_cycles == {cycles}\nexpect tasks <= 7\nexpect close(Y, zeros)\n"
        )),
        &o,
    )
    .expect("runs");
    let got: Vec<(&str, bool)> = t
        .expects
        .iter()
        .map(|e| (e.description.as_str(), e.failure.is_none()))
        .collect();
    assert_eq!(
        got,
        [
            (format!("total_cycles == {cycles}").as_str(), true),
            ("tasks <= 7", false)
        ]
    );
}

#[test]
fn a_column_view_is_gathered_and_written_back() {
    // `X[:, j]` keeps dimension 0 as the tile's columns: not row-contiguous.
    let src = r#"
axis cols = Dense[4]
input  X: f32[16, 4] = random(seed: 2)
output Y: f32[16, 4]
kernel dbl(x: in f32[1, 16], y: out f32[1, 16]) { y = x * 2.0 + 1.0 }
workload w { for j in P(cols) { dbl[j](x: X[:, j], y: Y[:, j]) } }
"#;
    let r = run(src, &opts("ascend910b")).expect("runs");
    assert_eq!(r.kernels[0].engine, Engine::Jit);
    assert_eq!(bits(&r.tensors[1]), bits(&reference(src)[1]));
}

#[test]
fn f16_kernels_run_in_the_jit_with_the_interpreters_bits() {
    let src = r#"
axis rows = Dense[2]
input  H: f16[2, 16, 16] = random(seed: 3)
output G: f16[2, 16, 16]
output S: f32[2, 16, 1]
kernel h(x: in f16[16, 16], y: out f16[16, 16], s: out f32[16, 1]) {
    y = x * x + x
    s = rowsum(x)
}
workload w { for i in P(rows) { h[i](x: H[i], y: G[i], s: S[i]) } }
"#;
    let r = run(src, &opts("ascend910b")).expect("runs");
    assert_eq!(r.kernels[0].engine, Engine::Jit);
    let want = reference(src);
    assert_eq!(bits(&r.tensors[1]), bits(&want[1]));
    assert_eq!(bits(&r.tensors[2]), bits(&want[2]));
}

#[test]
fn a_kernel_the_jit_does_not_cover_runs_in_the_interpreter_and_says_why() {
    let src = r#"
axis rows = Dense[2]
input  H: f64[2, 16, 16] = random(seed: 3)
output G: f64[2, 16, 16]
kernel h(x: in f64[16, 16], y: out f64[16, 16]) { y = x * x + x }
workload w { for i in P(rows) { h[i](x: H[i], y: G[i]) } }
"#;
    let r = run(src, &opts("ascend910b")).expect("runs");
    match &r.kernels[0].engine {
        Engine::Interpreter(why) => assert!(why.contains("f64"), "{why}"),
        other => panic!("expected the interpreter, got {other:?}"),
    }
    assert_eq!(bits(&r.tensors[1]), bits(&reference(src)[1]));
}

#[test]
fn affinity_keys_tasks_by_their_axis_coordinate() {
    // v9 clocks: 8 tasks of one kernel; round robin spreads them 2 per worker, affinity on
    // the batch coordinate puts the 4 tasks of each batch on one worker.
    let prog = |dispatch: &str| {
        format!(
            r#"
axis batch = Dense[2]
axis inner = Dense[4]
input  X: f32[2, 4, 16, 16] = random(seed: 5)
output Y: f32[2, 4, 16, 16]
kernel sq(x: in f32[16, 16], y: out f32[16, 16]) {{ y = x * x }}
workload w {{ for b, i in P(batch, inner) {{ sq[b, i](x: X[b, i], y: Y[b, i]) }} }}
schedule main = w.dispatch({dispatch})
"#
        )
    };
    let task = 3 * 16 * 16; // x and y loaded, one multiply
    let rr = run(&prog("round_robin(4)"), &opts("pto_wsp_v9")).expect("runs");
    assert_eq!(rr.stats.total_cycles, 2 * task);
    let aff = run(&prog("affinity(batch)"), &opts("pto_wsp_v9")).expect("runs");
    assert_eq!(aff.stats.total_cycles, 4 * task);
    assert_eq!(bits(&aff.tensors[1]), bits(&rr.tensors[1]));
}

#[test]
fn a_schedule_key_is_not_read_from_a_loop_that_has_ended() {
    // After the loop over `rows`, the tasks of the loop over `other` are not inside a loop
    // over `rows`: the key is an error there (as without the first loop), in both engines,
    // instead of the first loop's last value (which put them all on one core). In one file
    // `wsp check` says so first (E0608); the run's own error is for a workload of another
    // module, which the check does not follow.
    let module = |second: &str| {
        format!(
            r#"
axis rows = Dense[4]
axis other = Dense[3]
input  X: f32[4, 8, 8] = random(seed: 1)
output Y: f32[4, 8, 8]
output Z: f32[3, 8, 8]
kernel k(src: in f32[8, 8], dst: out f32[8, 8]) {{ dst = src }}
workload w {{
    for i in P(rows) {{ k[i](src: X[i], dst: Y[i]) }}
    {second}
}}
"#
        )
    };
    let after = module("for j in P(other) { k[j](src: X[j], dst: Z[j]) }");
    let one_file = format!("{after}schedule main = w.dispatch(affinity(rows))\n");
    let mut ws = wsp_core::Workspace::new();
    ws.set_file("t.wsp", one_file);
    let d = wsp_lower::lower(&ws, "t.wsp").expect_err("E0608 at check time");
    assert!(d.iter().any(|d| d.code == "E0608"), "{d:#?}");
    let main = "import keyed.{w, rows}\nschedule main = w.dispatch(affinity(rows))\n";
    let lower2 = |m: String| {
        let mut ws = wsp_core::Workspace::new();
        ws.set_file("keyed.wsp", m);
        ws.set_file("t.wsp", main.to_string());
        wsp_lower::lower(&ws, "t.wsp").unwrap_or_else(|d| panic!("did not lower: {d:#?}"))
    };
    for interpret in [false, true] {
        let mut o = opts("ascend910b");
        o.interpret_orchestration = interpret;
        let e = wsp_sim::run(&lower2(after.clone()), &wsp_jit::Jit::new(), &o)
            .expect_err("the key's loop has ended");
        assert!(e.to_string().contains("not inside a loop over it"), "{e}");
        // Nested inside a new loop over `rows`, the key is that loop's coordinate.
        let inside =
            module("for r in P.seq(rows) { for j in P(other) { k[j](src: X[j], dst: Z[j]) } }");
        let r = wsp_sim::run(&lower2(inside), &wsp_jit::Jit::new(), &o)
            .expect("keyed by the enclosing loop");
        assert_eq!(r.stats.tasks, 4 + 12);
    }
}

#[test]
fn a_schedule_the_simulator_cannot_run_is_e0814_in_the_programs_words() {
    let src = |directives: &str| squares(2, &format!(".{directives}"));
    for (sched, msg) in [
        ("streams(3)", "`.streams(3)` needs `.stream_by(expr)`"),
        ("stream_by(rows)", "`.stream_by(...)` needs `.streams(n)`"),
    ] {
        let e = run(&src(sched), &opts("ascend910b")).expect_err(sched);
        assert_eq!(e.code(), "E0814", "{e}");
        assert!(e.to_string().contains(msg), "{sched}: {e}");
        assert!(!e.to_string().contains("Ident {"), "{e}");
    }
    let r = run(&src("streams(2).stream_by(rows)"), &opts("ascend910b")).expect("two streams");
    assert_eq!(r.stats.tasks, 2);
}

#[test]
fn dispatch_priority_and_stream_keys_are_separate_expressions() {
    // The shape of language.md's schedule example: each policy reads its own key.
    let src = |schedule: &str| {
        format!(
            r#"
axis b = Dense[4]
axis h = Dense[2]
input  X: f32[4, 2, 16, 16] = random(seed: 4)
output Y: f32[4, 2, 16, 16]
kernel k(src: in f32[16, 16], dst: out f32[16, 16]) {{ dst = src * src }}
workload w {{ for i, j in P(b, h) {{ k[i, j](src: X[i, j], dst: Y[i, j]) }} }}
schedule main = w{schedule}
"#
        )
    };
    let docs = ".dispatch(affinity(b)).streams(3).stream_by(h).ready(priority(h)).task_window(64)";
    for interpret in [false, true] {
        let mut o = opts_at_once("ascend910b");
        o.interpret_orchestration = interpret;
        let r = run(&src(docs), &o).expect("three keys");
        assert_eq!(r.stats.tasks, 8);
        // Eight independent tasks on the streams `h` picks (two of three): each stream
        // orders its tasks, 8 − 2 edges. Keyed by `b` (the dispatch key) they would use all
        // three streams: 8 − 3 edges.
        assert_eq!(r.stats.edges, 6, "stream_by(h)");
        let by_dispatch = run(&src(".dispatch(affinity(b)).streams(3)"), &o).expect("one key");
        assert_eq!(by_dispatch.stats.edges, 5, "the dispatch key");
        let r = run(&src(".dispatch(hash(b + h)).ready(priority(0 - h))"), &o).expect("two");
        assert_eq!(r.stats.tasks, 8);
    }
}

#[test]
fn a_declared_channel_latency_of_zero_is_zero() {
    // aie-ml's model adds 8 cycles per channel operation unless the channel says otherwise.
    let src = |latency: &str| {
        format!(
            r#"
axis tiles = Dense[2]
input X: f32[2, 16, 16] = random(seed: 1)
tensor T: f32[2, 16, 16]
output Y: f32[2, 16, 16]
kernel fast(src: in f32[16, 16], dst: out f32[16, 16]) {{ dst = src }}
kernel slow(src: in f32[16, 16], dst: out f32[16, 16]) {{ dst = exp(src * src) + src }}
channel c: Channel[depth: 1{latency}]
process prod produces c {{ for i in P.seq(tiles) {{ send c, fast[i](src: X[i], dst: T[i]) }} }}
process cons consumes c {{ consume c as i {{ slow[i](src: T[i], dst: Y[i]) }} }}
workload w = connect(prod, cons)
"#
        )
    };
    let cycles = |latency: &str| {
        run(&src(latency), &opts("aie-ml"))
            .expect(latency)
            .stats
            .total_cycles
    };
    let (zero, one, model, eight) = (
        cycles(", latency: 0"),
        cycles(", latency: 1"),
        cycles(""),
        cycles(", latency: 8"),
    );
    assert!(zero < one && one < eight, "{zero} {one} {eight}");
    assert_eq!(model, eight, "an omitted latency is the model's");
}

#[test]
fn a_sender_blocked_on_a_full_buffered_channel_waits_on_the_trace() {
    // A fast producer and a slow consumer on one core: the producer's third send finds the
    // channel full whatever its depth, and its wait is on the trace like a rendezvous's.
    for depth in [0, 1, 2] {
        let src = format!(
            r#"
axis tiles = Dense[6]
input X: f32[6, 16, 16] = random(seed: 1)
tensor T: f32[6, 16, 16]
output Y: f32[6, 16, 16]
kernel fast(src: in f32[16, 16], dst: out f32[16, 16]) {{ dst = src }}
kernel slow(src: in f32[16, 16], dst: out f32[16, 16]) {{ dst = exp(exp(exp(src * src))) + src }}
channel c: Channel[depth: {depth}]
process prod produces c {{ for i in P.seq(tiles) {{ send c, fast[i](src: X[i], dst: T[i]) }} }}
process cons consumes c {{ consume c as i {{ slow[i](src: T[i], dst: Y[i]) }} }}
workload w = connect(prod, cons)
schedule main = w.dispatch(round_robin(1))
"#
        );
        let mut o = opts("ascend910b");
        o.record = true;
        let r = run(&src, &o).expect("pipeline");
        let trace = r.trace.expect("trace");
        // Waits of zero cycles are not recorded.
        let waits = trace.matches("c: CHANNEL_FULL_WAIT").count();
        assert!(
            waits > 0,
            "depth {depth}: no full-channel wait on the trace"
        );
    }
}

#[test]
fn neg_is_the_unary_minus() {
    let src = r#"
axis rows = Dense[2]
input  X: f32[2, 16, 16] = random(seed: 3)
output Y: f32[2, 16, 16]
output Z: f32[2, 16, 16]
kernel k(x: in f32[16, 16], y: out f32[16, 16], z: out f32[16, 16]) {
    y = neg(x)
    z = -x
}
workload w { for i in P(rows) { k[i](x: X[i], y: Y[i], z: Z[i]) } }
"#;
    let r = run(src, &opts("ascend910b")).expect("`neg` lowers");
    assert_eq!(bits(&r.tensors[1]), bits(&r.tensors[2]));
    let x = r.tensors[0].to_f64();
    assert!(r.tensors[1].to_f64().iter().zip(&x).all(|(y, x)| *y == -*x));
}

#[test]
fn an_out_of_range_view_at_run_time_names_the_task_and_the_view() {
    let src = r#"
param n: u32 = 4
axis rows = DenseDyn(n)
input  X: f32[4, 16, 16] = random(seed: 6)
output Y: f32[4, 16, 16]
kernel sq(x: in f32[16, 16], y: out f32[16, 16]) { y = x * x }
workload w { for i in P(rows) { sq[i](x: X[i], y: Y[i]) } }
"#;
    run(src, &opts("ascend910b")).expect("in range by default");
    let mut o = opts("ascend910b");
    o.set = vec![("n".into(), "5".into())];
    let e = run(src, &o).expect_err("row 4 is out of range");
    let m = e.to_string();
    assert!(matches!(e, SimError::Exec { .. }), "{m}");
    assert!(m.contains("task sq[4]") && m.contains("X["), "{m}");
}

#[test]
fn an_unknown_schedule_directive_form_is_an_error() {
    let src = squares(
        2,
        ".dispatch(round_robin(4)).timing(batched(2)).ready(lifo).task_window(16)",
    );
    let r = run(&src, &opts("ascend910b")).expect("these directives are enforced");
    assert_eq!(r.stats.tasks, 2);
}

#[test]
fn sequential_orders_parts_without_shared_data_and_combine_overlaps_them() {
    // A vector part and a cube part touching different tensors: `combine` lets them overlap
    // on their own cores, `sequential` starts the second after the first has finished.
    let prog = |how: &str| {
        format!(
            r#"
axis rows = Dense[4]
input  X: f32[4, 64, 64] = random(seed: 8)
input  A: f32[4, 16, 16] = random(seed: 9)
output Y: f32[4, 64, 64]
output C: f32[4, 16, 16]
kernel sq(x: in f32[64, 64], y: out f32[64, 64]) {{ y = x * x + x }}
kernel mm(a: in f32[16, 16], c: out f32[16, 16]) {{ c = matmul(a, a) }}
workload vec {{ for i in P(rows) {{ sq[i](x: X[i], y: Y[i]) }} }}
workload cube {{ for i in P(rows) {{ mm[i](a: A[i], c: C[i]) }} }}
workload both = {how}(vec, cube)
schedule main = both.dispatch(round_robin(4))
"#
        )
    };
    let seq = run(&prog("sequential"), &opts("ascend910b")).expect("runs");
    let comb = run(&prog("combine"), &opts("ascend910b")).expect("runs");
    let vec_only = run(
        &prog("combine").replace("combine(vec, cube)", "combine(vec)"),
        &opts("ascend910b"),
    )
    .expect("runs");
    assert!(
        seq.stats.total_cycles > comb.stats.total_cycles,
        "sequential {} vs combine {}",
        seq.stats.total_cycles,
        comb.stats.total_cycles
    );
    assert!(seq.stats.total_cycles > vec_only.stats.total_cycles);
    assert_eq!(bits(&seq.tensors[2]), bits(&comb.tensors[2]));
    assert_eq!(bits(&seq.tensors[3]), bits(&comb.tensors[3]));
}

/// The checker's largest task window (E0607) is the runtime's: a window the checker accepts
/// never fails to start, and none it refuses would.
#[test]
fn the_checkers_window_limit_is_the_runtimes() {
    assert_eq!(
        wsp_core::check::MAX_TASK_WINDOW,
        wsp_runtime::MAX_WINDOW as i64
    );
}

/// Likewise the most process instances of a `connect` (E0407).
#[test]
fn the_checkers_process_limit_is_the_simulators() {
    assert_eq!(
        wsp_core::check::MAX_PROCESSES,
        wsp_ir::exec::MAX_PROCESSES as i64
    );
}

/// Likewise the most streams (E0607).
#[test]
fn the_checkers_stream_limit_is_the_runtimes() {
    assert_eq!(
        wsp_core::check::MAX_STREAMS,
        wsp_runtime::MAX_STREAMS as i64
    );
}

/// More v9 workers than the runtime models is a schedule it cannot run (E0814), not an
/// allocation that fails; the checker does not know the model, so this is the run's to say.
#[test]
fn a_v9_round_robin_beyond_the_most_workers_is_e0814() {
    let Err(SimError::Setup { code, message, .. }) = run(
        &squares(4, ".dispatch(round_robin(65537))"),
        &opts("pto_wsp_v9"),
    ) else {
        panic!("not refused at setup");
    };
    assert_eq!(code, "E0814");
    assert!(message.contains("at most 65536"), "{message}");
    // On an event-timed model the count goes round the class's cores.
    run(
        &squares(4, ".dispatch(round_robin(65537))"),
        &opts("ascend910b"),
    )
    .expect("runs");
}

#[test]
fn a_round_robin_wider_than_a_core_class_is_noted() {
    let src = |n: u32| squares(40, &format!(".dispatch(round_robin({n}))"));
    let mut o = opts("aie-ml");
    o.timing_only = true;
    // aie-ml has 16 vector cores: 32 go round 16, as 16 does, and the run says so.
    let wide = run(&src(32), &o).expect("runs");
    assert_eq!(
        wide.notes,
        ["`round_robin(32)`: aie-ml has 16 vector cores, so vector tasks go round 16"]
    );
    let fit = run(&src(16), &o).expect("runs");
    assert!(fit.notes.is_empty(), "{:?}", fit.notes);
    assert_eq!(wide.stats.total_cycles, fit.stats.total_cycles);
    // Under v9, `n` is the number of workers: nothing is adapted.
    let v9 = run(&src(32), &opts("pto_wsp_v9")).expect("runs");
    assert!(v9.notes.is_empty(), "{:?}", v9.notes);
}

#[test]
fn policies_that_do_not_change_v9_cycles_are_noted() {
    let mut o = opts("pto_wsp_v9");
    o.timing_only = true;
    let plain = run(&squares(40, ".dispatch(round_robin(3))"), &o).expect("runs");
    assert!(plain.notes.is_empty(), "{:?}", plain.notes);
    let sched =
        ".dispatch(round_robin(3)).ready(lifo).timing(rate_limit(1)).streams(2).stream_by(rows)";
    let r = run(&squares(40, sched), &o).expect("runs");
    assert_eq!(r.stats.total_cycles, plain.stats.total_cycles);
    assert_eq!(r.notes.len(), 3, "{:?}", r.notes);
    for (n, p) in r
        .notes
        .iter()
        .zip(["ready(lifo)", "rate_limit(1)", "streams(2)"])
    {
        assert!(
            n.contains(p) && n.contains("does not change its cycles"),
            "{n}"
        );
    }
    // Beside another dispatch, `streams(n)` is the number of v9 workers: it changes the
    // cycles and is not noted.
    let ws = |n: u32| {
        let s = format!(".dispatch(affinity(rows)).streams({n}).stream_by(rows)");
        run(&squares(40, &s), &o).expect("runs")
    };
    let (one, eight) = (ws(1), ws(8));
    assert!(
        one.notes.is_empty() && eight.notes.is_empty(),
        "{:?}",
        one.notes
    );
    assert!(eight.stats.total_cycles < one.stats.total_cycles);
}

#[test]
fn a_pipelines_window_and_dispatch_under_v9_are_noted() {
    // Under v9 a process's tasks run on the process's own clock: the pipeline's cycles are
    // the same whatever its window and dispatch, and the run says so.
    let src = |directives: &str| {
        format!(
            r#"
axis tiles = Dense[4]
input X: f32[4, 16, 16] = random(seed: 1)
tensor T: f32[4, 16, 16]
output Y: f32[4, 16, 16]
kernel copy(src: in f32[16, 16], dst: out f32[16, 16]) {{ dst = src }}
channel c: Channel[depth: 1]
process prod produces c {{ for i in P.seq(tiles) {{ send c, copy[i](src: X[i], dst: T[i]) }} }}
process cons consumes c {{ consume c as i {{ copy[i](src: T[i], dst: Y[i]) }} }}
workload w = connect(prod, cons)
schedule main = w{directives}
"#
        )
    };
    let o = opts("pto_wsp_v9");
    let plain = run(&src(""), &o).expect("runs");
    assert!(plain.notes.is_empty(), "{:?}", plain.notes);
    let window = run(&src(".task_window(1)"), &o).expect("runs");
    assert_eq!(window.stats.total_cycles, plain.stats.total_cycles);
    assert_eq!(
        window.notes,
        ["`.task_window`: pto_wsp_v9 times a process's tasks on the process's own clock, so this policy does not change its processes' cycles"]
    );
    let both = run(&src(".dispatch(round_robin(1)).task_window(2)"), &o).expect("runs");
    assert_eq!(both.stats.total_cycles, plain.stats.total_cycles);
    assert!(
        both.notes[0].starts_with("the dispatch and `.task_window`:")
            && both.notes[0].contains("these policies do not change"),
        "{:?}",
        both.notes
    );
    // On an event-timed model the window and the dispatch apply to the pipeline: no note.
    let ev = run(
        &src(".dispatch(round_robin(1)).task_window(2)"),
        &opts("ascend910b"),
    );
    assert!(ev.expect("runs").notes.is_empty());
}

/// The tasks each modelled core ran.
fn per_core(r: &wsp_sim::SimRun) -> Vec<u64> {
    r.stats.cores.iter().map(|c| c.tasks).collect()
}

#[test]
fn dispatch_by_a_custom_key_places_tasks_on_key_mod_n() {
    // `by(expr)` is a custom key: core `expr mod n`, as `affinity` over an axis. With every
    // task keyed 1, one core runs them all; keyed by the row, they spread as `affinity(rows)`.
    let o = opts("ascend910b");
    let all_on_one = run(&squares(8, ".dispatch(by(rows * 0 + 1))"), &o).expect("runs");
    let busy: Vec<u64> = per_core(&all_on_one)
        .into_iter()
        .filter(|n| *n > 0)
        .collect();
    assert_eq!(busy, vec![8], "{:?}", per_core(&all_on_one));
    let by_rows = run(&squares(8, ".dispatch(by(rows))"), &o).expect("runs");
    let affinity = run(&squares(8, ".dispatch(affinity(rows))"), &o).expect("runs");
    assert_eq!(per_core(&by_rows), per_core(&affinity));
    assert_eq!(by_rows.stats.total_cycles, affinity.stats.total_cycles);
    assert_ne!(per_core(&by_rows), per_core(&all_on_one));
}

#[test]
fn a_repeated_dispatch_or_ready_directive_drops_the_earlier_key() {
    // W0601: the last directive applies, its key with it. The task after the loop is inside no
    // loop over `rows`, so an overridden key over `rows` would fail it (E0810); the checker
    // does not report it (E0608) either.
    let src = |directives: &str| {
        format!(
            r#"
axis rows = Dense[4]
input X: f32[4, 8, 8] = random(seed: 4)
output Y: f32[4, 8, 8]
output Z: f32[4, 8, 8]
kernel copy(x: in f32[8, 8], y: out f32[8, 8]) {{ y = x }}
workload after {{
    for i in P(rows) {{ copy[i](x: X[i], y: Y[i]) }}
    copy[0](x: Y[0], y: Z[0])
}}
schedule main = after{directives}
"#
        )
    };
    let o = opts("ascend910b");
    for d in [
        ".dispatch(affinity(rows)).dispatch(round_robin(2))",
        ".ready(priority(rows)).ready(fifo)",
        ".dispatch(hash(rows)).dispatch(work_steal).streams(2).stream_by(1)",
    ] {
        let r = run(&src(d), &o).unwrap_or_else(|e| panic!("{d}: {e}"));
        assert_eq!(r.stats.tasks, 5, "{d}");
    }
}

/// `copy` over 4 independent rows in a `{loop}` loop, on `arch`.
fn four_copies(lp: &str) -> String {
    format!(
        r#"
axis rows = Dense[4]
input  X: f32[4, 16, 16] = random(seed: 3)
output Y: f32[4, 16, 16]
kernel cp(x: in f32[16, 16], y: out f32[16, 16]) {{ y = x }}
workload w {{ for i in {lp}(rows) {{ cp[i](x: X[i], y: Y[i]) }} }}
"#
    )
}

#[test]
fn p_seq_orders_independent_iterations_on_every_model_and_p_does_not() {
    for arch in ["ascend910b", "ascend950", "aie-ml", "pto_wsp_v9"] {
        for interpret in [false, true] {
            let mut o = opts_at_once(arch);
            o.record = true;
            o.interpret_orchestration = interpret;
            let par = run(&four_copies("P"), &o).expect("P runs");
            let seq = run(&four_copies("P.seq"), &o).expect("P.seq runs");
            let one = {
                let src = four_copies("P").replace("Dense[4]", "Dense[1]");
                run(&src, &o).expect("one runs").stats.total_cycles
            };
            // P: side by side, the time of one; P.seq: one after another, four times as long
            // (less the overheads that overlap a successor's start).
            assert_eq!(par.stats.total_cycles, one, "{arch}");
            assert!(
                seq.stats.total_cycles >= 4 * one * 3 / 4,
                "{arch}: P.seq {} vs one {one}",
                seq.stats.total_cycles
            );
            assert_eq!(bits(&seq.tensors[1]), bits(&par.tensors[1]), "{arch}");
            if arch != "pto_wsp_v9" {
                let g = seq.graph.expect("graph");
                for (a, b) in [(0, 1), (1, 2), (2, 3)] {
                    assert!(
                        g.contains(&format!("t{a} -> t{b} [style=dashed")),
                        "{arch}: {g}"
                    );
                }
                assert!(!par.graph.expect("graph").contains("dashed"), "{arch}");
            }
        }
    }
}

#[test]
fn a_full_window_stalls_aborts_or_is_measured_as_its_mode_says() {
    for arch in ["ascend910b", "pto_wsp_v9"] {
        let o = opts_at_once(arch);
        let stall = run(&squares(8, ".task_window(2)"), &o).expect("stall runs");
        let wide = run(&squares(8, ".task_window(64)"), &o).expect("a wide window runs");
        // Stall: the window holds the orchestration back, and the run says so.
        let tw = &stall.stats.rings[0];
        assert_eq!((tw.capacity, tw.high_water), (2, 2), "{arch}");
        assert!(tw.stalls > 0, "{arch}");
        assert!(stall.stats.total_cycles > wide.stats.total_cycles, "{arch}");
        // Abort: the run stops at the first task that finds the window full, naming it.
        let Err(e) = run(&squares(8, ".task_window(2, abort)"), &o) else {
            panic!("{arch}: an abort window stops the run");
        };
        assert_eq!(e.code(), "E0816", "{arch}: {e}");
        assert!(e.to_string().contains("task window of 2"), "{arch}: {e}");
        // Abort through a window the run never fills: runs as stall would.
        let fits = run(&squares(8, ".task_window(8, abort)"), &o).expect("fits");
        assert_eq!(fits.stats.total_cycles, wide.stats.total_cycles, "{arch}");
        // Benchmark: nothing held back (the time of an unbounded window), and the high water
        // says how far the window of 2 would have had to grow.
        let b = run(&squares(8, ".task_window(2, benchmark)"), &o).expect("benchmark runs");
        assert_eq!(b.stats.window_mode, "benchmark");
        let tw = &b.stats.rings[0];
        assert_eq!((tw.capacity, tw.high_water, tw.stalls), (2, 8, 0), "{arch}");
        assert_eq!(b.stats.total_cycles, wide.stats.total_cycles, "{arch}");
        assert_eq!(bits(&b.tensors[1]), bits(&stall.tensors[1]), "{arch}");
    }
}

/// `cp` of the 16-row block of `X` that `Off[0, b]` (written by `mk` from `Seed`) names.
fn offsets_from_a_task(seed: &str) -> String {
    format!(
        r#"
axis batch = Dense[2]
input  X: f32[64, 16] = random(seed: 5)
input  Seed: i32[1, 2] = [{seed}]
output Off: i32[1, 2]
output Y: f32[2, 16, 16]
kernel mk(s: in i32[1, 2], o: out i32[1, 2]) {{ o = s * 16 }}
kernel cp(x: in f32[16, 16], y: out f32[16, 16]) {{ y = x }}
workload w {{
    mk[0](s: Seed, o: Off)
    for b in P(batch) {{ cp[b](x: X[Off[0, b] .. Off[0, b] + 16, :], y: Y[b]) }}
}}
"#
    )
}

#[test]
fn a_view_placed_by_data_waits_for_its_producer_and_is_bounds_checked_when_it_runs() {
    for interpret in [false, true] {
        let mut o = opts("ascend910b");
        o.interpret_orchestration = interpret;
        let r = run(&offsets_from_a_task("3, 1"), &o).expect("runs");
        // An input is not read back (it keeps what it started with): the reference's.
        let x = reference(&offsets_from_a_task("3, 1"))[0].to_f64();
        let y = r.tensors[3].to_f64();
        // Y[0] is rows 48..64 of X, Y[1] rows 16..32: what `mk` wrote, read after it ran.
        assert_eq!(&y[..256], &x[48 * 16..64 * 16]);
        assert_eq!(&y[256..], &x[16 * 16..32 * 16]);
        let Err(e) = run(&offsets_from_a_task("3, 4"), &o) else {
            panic!("an offset past X runs");
        };
        let m = e.to_string();
        assert_eq!(e.code(), "E0810", "{m}");
        assert!(m.contains("cp[1]") && m.contains("X[64..80, 0..16]"), "{m}");
    }
}

#[test]
fn dispatch_by_is_v9_spelling_of_dispatch_by() {
    let o = opts_at_once("ascend910b");
    let a = run(&squares(6, ".dispatch_by(rows * 5)"), &o).expect("dispatch_by runs");
    let b = run(&squares(6, ".dispatch(by(rows * 5))"), &o).expect("by runs");
    let c = run(&squares(6, ""), &o).expect("default runs");
    let cores = |r: &wsp_sim::SimRun| -> Vec<(u32, u64)> {
        r.stats
            .cores
            .iter()
            .filter(|c| c.tasks > 0)
            .map(|c| (c.index, c.tasks))
            .collect()
    };
    // Keys 0, 5, 10, ..., 25: cores 0, 5, 10, ... of the 48 vector cores.
    assert_eq!(
        cores(&a),
        [(0, 1), (5, 1), (10, 1), (15, 1), (20, 1), (25, 1)]
    );
    assert_eq!(cores(&a), cores(&b));
    assert_ne!(cores(&a), cores(&c));
    assert_eq!(a.stats.total_cycles, b.stats.total_cycles);
}

#[test]
fn a_ragged_axis_counts_tiles_per_row_and_partial_tails_run_in_one_kernel() {
    // Rows of 40 and 16 tokens in tiles of 16: 3 + 1 tasks; the tail of the first row has 8.
    // The tail's view ends at `lens[b]`: chosen by a `when`, or as a `min` in the view.
    let program = |body: &str| {
        format!(
            r#"
const TS = 16
axis seqs = Dense[2]
input  lens: i32[2] = [40, 16]
axis tiles = Ragged(seqs, lens, per: TS)
input  X: f32[2, 48, 4] = random(seed: 9)
output Y: f32[2, 48, 4]
kernel twice(x: in f32[..TS, 4], y: out f32[..TS, 4]) {{ y = x * 2.0 }}
workload w {{
    for b in P(seqs) {{
        for t in P(tiles[b]) {{
            {body}
        }}
    }}
}}
"#
        )
    };
    let src = program(
        "when lens[b] >= t * TS + TS {
                twice[b, t](x: X[b, t * TS..t * TS + TS, :], y: Y[b, t * TS..t * TS + TS, :])
            } else {
                twice[b, t](x: X[b, t * TS..lens[b], :], y: Y[b, t * TS..lens[b], :])
            }",
    );
    let with_min = program(
        "twice[b, t](x: X[b, t * TS..min(t * TS + TS, lens[b]), :], y: Y[b, t * TS..min(t * TS + TS, lens[b]), :])",
    );
    for (src, interpret) in [
        (&src, false),
        (&src, true),
        (&with_min, false),
        (&with_min, true),
    ] {
        let mut o = opts("ascend910b");
        o.interpret_orchestration = interpret;
        let r = run(src, &o).expect("runs");
        assert_eq!(r.stats.tasks, 4);
        // An input is not read back (it keeps what it started with): the reference's.
        let (x, y) = (reference(src)[1].to_f64(), r.tensors[2].to_f64());
        for (b, len) in [(0usize, 40usize), (1, 16)] {
            for i in 0..48 * 4 {
                let at = b * 48 * 4 + i;
                let want = if i < len * 4 { 2.0 * x[at] } else { 0.0 };
                assert_eq!(y[at], want, "b {b} element {i}");
            }
        }
    }
}

#[test]
fn task_graph_sizes_the_rings_which_stall_and_deadlock_by_name() {
    // Eight accumulations into `Acc`, one after another (each task has an edge to the one
    // before it and two regions in the tensor map).
    let src = |sizes: &str| {
        format!(
            r#"
axis rows = Dense[8]
input  X: f32[16, 16] = random(seed: 3)
output Acc: f32[16, 16]
kernel acc(x: in f32[16, 16], a: inout f32[16, 16]) {{ a = a + x }}
workload w {{ for i in P.seq(rows) {{ acc[i](x: X, a: Acc) }} }}
schedule main = w.task_graph({sizes})
"#
        )
    };
    let o = opts_at_once("ascend910b");
    let ring = |r: &wsp_sim::SimRun, name: &str| {
        r.stats
            .rings
            .iter()
            .find(|x| x.name == name)
            .cloned()
            .unwrap_or_else(|| panic!("no ring {name}"))
    };
    // The sizes reach the runtime's rings.
    let r = run(&src("tensormap: 64, deplist: 32, ready: 4, heap: 4096"), &o).expect("runs");
    assert_eq!(
        [
            ring(&r, "tensormap_pool").capacity,
            ring(&r, "deplist_pool").capacity,
            ring(&r, "ready_queue").capacity,
            ring(&r, "heap_arena").capacity
        ],
        [64, 32, 4, 4096]
    );
    // A tensor map smaller than one task's regions cannot make progress: a deadlock that
    // names the ring.
    let Err(e) = run(&src("tensormap: 1"), &o) else {
        panic!("a one-entry tensor map runs");
    };
    assert_eq!(e.code(), "E0811", "{e}");
    assert!(e.to_string().contains("TENSORMAP_POOL_FULL"), "{e}");
}

/// Local tensors (`let H: f32[16, 16] = scratch()`) come from the heap arena: fresh for each
/// iteration, freed once its tasks retire; a small arena stalls the orchestration at the `let`,
/// one too small for a block's locals is a deadlock naming the ring.
#[test]
fn local_tensors_take_the_heap_arena_which_fills_stalls_and_deadlocks() {
    // Two locals of 1,024 bytes an iteration; each iteration reads X[i] into H, squares it
    // into K, and writes K + K into Y[i].
    let src = |sizes: &str| {
        format!(
            r#"
axis rows = Dense[8]
input  X: f32[8, 16, 16] = random(seed: 5)
output Y: f32[8, 16, 16]
kernel cp(x: in f32[16, 16], y: out f32[16, 16]) {{ y = x }}
kernel sq(x: in f32[16, 16], y: out f32[16, 16]) {{ y = x * x }}
kernel dbl(x: in f32[16, 16], y: out f32[16, 16]) {{ y = x + x }}
workload w {{
    for i in P(rows) {{
        let H: f32[16, 16] = scratch()
        cp[i](x: X[i], y: H)
        let K: f32[16, 16] = scratch()
        sq[i](x: H, y: K)
        dbl[i](x: K, y: Y[i])
    }}
}}
schedule main = w{sizes}
"#
        )
    };
    let heap = |r: &wsp_sim::SimRun| {
        r.stats
            .rings
            .iter()
            .find(|x| x.name == "heap_arena")
            .cloned()
            .expect("a heap ring")
    };
    let o = opts_at_once("ascend910b");
    let free = run(&src(""), &o).expect("runs");
    let want = reference(&src(""));
    // X, Y, then the locals H and K (which a run leaves as they were declared).
    let y = 1;
    assert_eq!(bits(&free.tensors[y]), bits(&want[y]), "the reference's Y");
    let x = wsp_ir::data::run_reference(&lower(&src("")), None, &[], &[], Path::new("."))
        .expect("reference")
        .tensors[0]
        .to_f64();
    assert_eq!(
        free.tensors[y].to_f64()[17],
        2.0 * (x[17] as f32 * x[17] as f32) as f64
    );
    // All eight iterations' locals at once: nothing retires while the orchestration submits.
    let h = heap(&free);
    assert_eq!((h.high_water, h.stalls, h.used), (16 * 1024, 0, 0));
    // Room for two iterations: the orchestration waits at a `let` for earlier locals to be
    // freed, with the same results.
    let small = run(&src(".task_graph(heap: 4096)"), &o).expect("runs");
    let h = heap(&small);
    assert_eq!(h.capacity, 4096);
    assert!(h.high_water <= 4096 && h.stalls > 0, "{h:?}");
    assert_eq!(bits(&small.tensors[y]), bits(&want[y]));
    assert!(small.stats.total_cycles > free.stats.total_cycles);
    // Room for one local: H is held (its block has not ended) when K is taken.
    let Err(e) = run(&src(".task_graph(heap: 1024)"), &o) else {
        panic!("an arena of one local runs two");
    };
    assert_eq!(e.code(), "E0811", "{e}");
    assert!(e.to_string().contains("HEAP_ARENA_FULL"), "{e}");
    assert!(e.to_string().contains("2048"), "{e}");
    // Timing only: the same cycles, no data.
    let mut t = o.clone();
    t.timing_only = true;
    let timed = run(&src(".task_graph(heap: 4096)"), &t).expect("runs");
    assert_eq!(timed.stats.total_cycles, small.stats.total_cycles);
}

/// `.task_graph(ready: n)` bounds each core class's ready queue: independent tasks submitted
/// at once fill it, the orchestration stalls on it, and its high water is the bound.
#[test]
fn a_small_ready_queue_fills_and_stalls_the_orchestration() {
    let o = opts_at_once("ascend910b");
    let wide = run(&squares(64, ".dispatch(round_robin(1))"), &o).expect("runs");
    let narrow = run(
        &squares(64, ".dispatch(round_robin(1)).task_graph(ready: 2)"),
        &o,
    )
    .expect("runs");
    let ready = |r: &wsp_sim::SimRun| {
        r.stats
            .rings
            .iter()
            .find(|x| x.name == "ready_queue")
            .cloned()
            .expect("a ready ring")
    };
    let (w, n) = (ready(&wide), ready(&narrow));
    assert!(w.high_water > 2 && w.stalls == 0, "{w:?}");
    assert_eq!((n.capacity, n.high_water), (2, 2), "{n:?}");
    assert!(n.stalls > 0, "{n:?}");
    assert_eq!(bits(&narrow.tensors[1]), bits(&wide.tensors[1]));
}
