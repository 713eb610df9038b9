//! Placements on the simulator: `.spatial_map(grid: (rows, cols), at: (r, c))` puts each task
//! on core `(r mod rows) * cols + (c mod cols)` of its class; `.layout(T, shard(dim, parts))`
//! puts a task that touches shard `s` of `T` on core `s mod count`. Views across shards stop
//! the run (E0818), as do two placements of one task that differ (E0819) and a grid larger than
//! a class (E0817). Under `pto_wsp_v9` the placements do not change the cycles (a note says so).

use std::path::Path;
use wsp_sim::Options;

fn lower(src: &str) -> wsp_ir::Program {
    let mut ws = wsp_core::Workspace::new();
    ws.set_file("t.wsp", src.to_string());
    wsp_lower::lower(&ws, "t.wsp").unwrap_or_else(|d| panic!("did not lower: {d:#?}"))
}

fn opts(arch: &str) -> Options {
    let mut o = Options::new(wsp_arch::Arch::builtin(arch).expect("arch"), Path::new("."));
    // Tasks in flight together: the submission cost would otherwise serialise small tasks.
    o.arch.overheads.submit = 0;
    o
}

fn run(src: &str, o: &Options) -> Result<wsp_sim::SimRun, wsp_sim::SimError> {
    wsp_sim::run(&lower(src), &wsp_jit::Jit::new(), o)
}

/// The tasks each vector core ran, up to the last busy one.
fn per_core(r: &wsp_sim::SimRun) -> Vec<u64> {
    let mut v: Vec<u64> = r
        .stats
        .cores
        .iter()
        .filter(|c| c.class == "vector")
        .map(|c| c.tasks)
        .collect();
    while v.last() == Some(&0) {
        v.pop();
    }
    v
}

/// `sq` over `X: f32[2, 4, 64, 64]`'s tiles in a loop over `batch` × `heads`.
fn grid_program(directives: &str) -> String {
    format!(
        r#"
axis batch = Dense[2]
axis heads = Dense[4]
input  X: f32[2, 4, 64, 64] = random(seed: 3)
output Y: f32[2, 4, 64, 64]
kernel sq(x: in f32[64, 64], y: out f32[64, 64]) {{ y = x * x + x }}
workload w {{ for b, h in P(batch, heads) {{ sq[b, h](x: X[b, h], y: Y[b, h]) }} }}
schedule main = w{directives}
"#
    )
}

#[test]
fn spatial_map_puts_each_task_on_its_grid_cell() {
    let o = opts("ascend910b");
    // (batch mod 2) * 4 + (heads mod 4): one task per core 0..8.
    let g = run(
        &grid_program(".spatial_map(grid: (2, 4), at: (batch, heads))"),
        &o,
    )
    .expect("runs");
    assert_eq!(per_core(&g), [1; 8]);
    // Row 0 of a 1 × 3 grid, column heads mod 3: heads 0 and 3 on core 0, 1 on 1, 2 on 2.
    let t = run(
        &grid_program(".spatial_map(grid: (1, 3), at: (batch, heads))"),
        &o,
    )
    .expect("runs");
    assert_eq!(per_core(&t), [4, 2, 2]);
    // Arithmetic keys: heads * 2 + batch on a 8 × 1 grid (the row key), the column key 0.
    let k = run(
        &grid_program(".spatial_map(grid: (8, 1), at: (heads * 2 + batch, 7))"),
        &o,
    )
    .expect("runs");
    assert_eq!(per_core(&k), [1; 8]);
    // The results are the program's, wherever its tasks ran.
    let steal = run(&grid_program(".dispatch(work_steal)"), &o).expect("runs");
    for r in [&g, &t, &k] {
        assert_eq!(r.tensors[1].to_f64(), steal.tensors[1].to_f64());
    }
    // One cell runs every task in turn; work stealing and the 2 × 4 grid run them side by side.
    let one = run(
        &grid_program(".spatial_map(grid: (1, 1), at: (batch, heads))"),
        &o,
    )
    .expect("runs");
    assert_eq!(per_core(&one), [8]);
    assert!(
        one.stats.total_cycles > 4 * steal.stats.total_cycles,
        "{} vs {}",
        one.stats.total_cycles,
        steal.stats.total_cycles
    );
    assert!(g.stats.total_cycles < one.stats.total_cycles);
    assert_ne!(per_core(&steal), per_core(&t));
    assert!(g.notes.is_empty(), "{:?}", g.notes);
}

#[test]
fn the_trace_shows_each_task_on_the_lane_of_its_cell() {
    let mut o = opts("ascend910b");
    o.record = true;
    // Cell (heads mod 2, batch mod 4) of a 2 × 4 grid: core (heads mod 2) * 4 + batch.
    let r = run(
        &grid_program(".spatial_map(grid: (2, 4), at: (heads, batch))"),
        &o,
    )
    .expect("runs");
    let trace: serde_json::Value =
        serde_json::from_str(r.trace.as_deref().expect("a trace")).expect("JSON");
    let events = trace["traceEvents"].as_array().expect("events");
    let lane = |tid: &serde_json::Value| {
        events
            .iter()
            .find(|e| e["name"] == "thread_name" && e["tid"] == *tid)
            .and_then(|e| e["args"]["name"].as_str())
            .map(str::to_string)
    };
    let mut seen = 0;
    for e in events.iter().filter(|e| e["cat"] == "task") {
        let c = &e["args"]["coords"];
        let (b, h) = (c[0].as_i64().expect("b"), c[1].as_i64().expect("h"));
        let want = format!("vector{:03}", (h % 2) * 4 + b);
        assert_eq!(lane(&e["tid"]), Some(want), "{e}");
        seen += 1;
    }
    assert_eq!(seen, 8);
}

#[test]
fn a_grid_larger_than_a_class_is_refused_before_the_run() {
    // pto_wsp_v9 models one vector core: a 2 × 4 grid names 8.
    let Err(e) = run(
        &grid_program(".spatial_map(grid: (2, 4), at: (batch, heads))"),
        &opts("pto_wsp_v9"),
    ) else {
        panic!("a grid of 8 runs on one core");
    };
    assert_eq!(e.code(), "E0817", "{e}");
    let m = e.to_string();
    assert!(
        m.contains("8 cores") && m.contains("pto_wsp_v9") && m.contains("`sq`"),
        "{m}"
    );
    // aie_ml has 16 vector cores: 4 × 4 fits, 4 × 5 does not.
    assert!(run(
        &grid_program(".spatial_map(grid: (4, 4), at: (batch, heads))"),
        &opts("aie-ml")
    )
    .is_ok());
    let e = run(
        &grid_program(".spatial_map(grid: (4, 5), at: (batch, heads))"),
        &opts("aie-ml"),
    )
    .expect_err("20 cells on 16 cores");
    assert_eq!(e.code(), "E0817", "{e}");
}

#[test]
fn under_v9_placements_are_noted_and_keep_the_cycles() {
    let o = opts("pto_wsp_v9");
    let plain = run(&grid_program(""), &o).expect("runs");
    let placed = run(
        &grid_program(
            ".spatial_map(grid: (1, 1), at: (batch, heads)).layout(X, shard(dim: 0, parts: 2))",
        ),
        &o,
    )
    .expect("runs");
    assert_eq!(placed.stats.total_cycles, plain.stats.total_cycles);
    assert!(plain.notes.is_empty(), "{:?}", plain.notes);
    assert_eq!(placed.notes.len(), 1, "{:?}", placed.notes);
    assert!(
        placed.notes[0].starts_with(
            "`.spatial_map(...)` and `.layout(...)`: pto_wsp_v9 times tasks in program order"
        ),
        "{:?}",
        placed.notes
    );
}

/// `cp` over the 6-row blocks of `X: f32[24, 16]`, under `schedule main = w{directives}`.
fn blocks(directives: &str) -> String {
    format!(
        r#"
axis blocks = Dense[4]
input  X: f32[24, 16] = random(seed: 5)
input  B: f32[4, 6, 16] = random(seed: 6)
output Y: f32[24, 16]
kernel cp(x: in f32[6, 16], b: in f32[6, 16], y: out f32[6, 16]) {{ y = x + b }}
workload w {{
    for i in P(blocks) {{ cp[i](x: X[6 * i .. 6 * i + 6, :], b: B[i], y: Y[6 * i .. 6 * i + 6, :]) }}
}}
workload reversed {{
    for i in P(blocks) {{ cp[i](x: X[6 * i .. 6 * i + 6, :], b: B[3 - i], y: Y[6 * i .. 6 * i + 6, :]) }}
}}
schedule main = w{directives}
schedule rev = reversed{directives}
"#
    )
}

#[test]
fn layout_runs_each_task_on_the_owner_of_its_shard() {
    let o = opts("ascend910b");
    // Shards of 6 rows: block i on core i.
    let four = run(&blocks(".layout(X, shard(dim: 0, parts: 4))"), &o).expect("runs");
    assert_eq!(per_core(&four), [1, 1, 1, 1]);
    // Shards of 12 rows: blocks 0 and 1 on core 0, 2 and 3 on core 1, whatever the dispatch
    // policy (a sharded tensor's owner overrides it).
    for d in [
        "",
        ".dispatch(round_robin(4))",
        ".dispatch(affinity(blocks))",
        ".dispatch(work_steal)",
    ] {
        let two = run(
            &blocks(&format!(".layout(X, shard(dim: 0, parts: 2)){d}")),
            &o,
        )
        .unwrap_or_else(|e| panic!("{d}: {e}"));
        assert_eq!(per_core(&two), [2, 2], "{d}");
        assert_eq!(two.tensors[2].to_f64(), four.tensors[2].to_f64(), "{d}");
    }
    // Two tensors sharded alike agree on every owner.
    let both = run(
        &blocks(".layout(X, shard(dim: 0, parts: 2)).layout(B, shard(dim: 0, parts: 2))"),
        &o,
    )
    .expect("runs");
    assert_eq!(per_core(&both), [2, 2]);
    // With a spatial map that agrees with the owners (block i on core i).
    let agree = run(
        &blocks(".layout(X, shard(dim: 0, parts: 4)).spatial_map(grid: (1, 4), at: (0, blocks))"),
        &o,
    )
    .expect("runs");
    assert_eq!(per_core(&agree), [1, 1, 1, 1]);
}

#[test]
fn two_placements_of_one_task_that_differ_stop_the_run() {
    let o = opts("ascend910b");
    // `rev`: block 0 reads shard 0 of X (core 0) and shard 3 of B (core 3).
    let src = blocks(".layout(X, shard(dim: 0, parts: 4)).layout(B, shard(dim: 0, parts: 4))")
        .replace("schedule main = w.", "schedule other = w.")
        .replace("schedule rev", "schedule main");
    let e = run(&src, &o).expect_err("owners differ");
    assert_eq!(e.code(), "E0819", "{e}");
    let m = e.to_string();
    assert!(
        m.contains("cp[0]") && m.contains("shard 0 of `X`") && m.contains("shard 3 of `B`"),
        "{m}"
    );
    // A spatial map that puts block 1 on core 0, where shard 1's owner is core 1.
    let e = run(
        &blocks(".layout(X, shard(dim: 0, parts: 4)).spatial_map(grid: (1, 1), at: (0, blocks))"),
        &o,
    )
    .expect_err("the cell and the owner differ");
    assert_eq!(e.code(), "E0819", "{e}");
    assert!(
        e.to_string().contains("cp[1]") && e.to_string().contains("owned by core 1"),
        "{e}"
    );
}

/// `cp` of the 16-row block of `X` at the row offset `mk` computes from `Seed` (data).
fn offsets(scale: u32, parts: u32) -> String {
    format!(
        r#"
axis batch = Dense[2]
input  X: f32[64, 16] = random(seed: 5)
input  Seed: i32[1, 2] = [1, 2]
output Off: i32[1, 2]
output Y: f32[2, 16, 16]
kernel mk(s: in i32[1, 2], o: out i32[1, 2]) {{ o = s * {scale} }}
kernel cp(x: in f32[16, 16], y: out f32[16, 16]) {{ y = x }}
workload w {{
    mk[0](s: Seed, o: Off)
    for b in P(batch) {{ cp[b](x: X[Off[0, b] .. Off[0, b] + 16, :], y: Y[b]) }}
}}
schedule main = w.layout(X, shard(dim: 0, parts: {parts}))
"#
    )
}

#[test]
fn a_view_placed_by_data_is_checked_against_the_shards_when_it_runs() {
    for interpret in [false, true] {
        let mut o = opts("ascend910b");
        o.interpret_orchestration = interpret;
        // Offsets 16 and 32 in shards of 16: shards 1 and 2, cores 1 and 2.
        let r = run(&offsets(16, 4), &o).expect("runs");
        let cp: Vec<u64> = per_core(&r);
        assert_eq!(cp.iter().sum::<u64>(), 3, "{cp:?}");
        assert!(cp.get(1) >= Some(&1) && cp.get(2) >= Some(&1), "{cp:?}");
        // Offset 8: rows 8..=23 cross from shard 0 into shard 1.
        let e = run(&offsets(8, 4), &o).expect_err("a view across shards runs");
        assert_eq!(e.code(), "E0818", "{e}");
        let m = e.to_string();
        assert!(
            m.contains("cp[0]") && m.contains("8..=23") && m.contains("across shards 0 and 1"),
            "{m}"
        );
    }
}
