//! End-to-end tests of `wsp run` on architecture models: a `cpu_sim` target's default model,
//! resources checked on the model that runs, `.spatial_map` placements on its cores, and
//! extern kernels run by their reference at their declared cost.

mod common;

use std::path::Path;

use common::run::{program, text, wsp};

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
