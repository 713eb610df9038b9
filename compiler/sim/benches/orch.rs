//! `wsp run`'s own path to the runtime: `examples/llama_layer` scaled to `T` tiles of 64
//! tokens (16T + 3T² tasks), its inputs declared instead of loaded, run timing-only (no kernel
//! runs). What is timed is the compiled orchestration's callbacks, wsp-sim's submitter and the
//! runtime: `wsp_sim::run` on a program lowered beforehand.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::path::Path;

/// The example with `T` tiles (and `S = 64·T` tokens), no `.npy` input and no `expect`.
fn scaled(t: u64) -> String {
    let src = include_str!("../../../examples/llama_layer/llama_layer.wsp");
    let lines: Vec<String> = src
        .lines()
        .map(|l| {
            if l.starts_with("const T = ") {
                format!("const T = {t}")
            } else if l.starts_with("const S = ") {
                format!("const S = {}", 64 * t)
            } else if l.starts_with("expect ") {
                String::new()
            } else if let Some((decl, _)) = l
                .strip_prefix("input ")
                .and_then(|r| r.split_once(" = load("))
            {
                format!("tensor {decl}")
            } else {
                l.to_string()
            }
        })
        .collect();
    lines.join("\n")
}

fn bench(c: &mut Criterion) {
    let jit = wsp_jit::Jit::new();
    let mut opts = wsp_sim::Options::new(
        wsp_arch::Arch::builtin("ascend910b").expect("model"),
        Path::new("."),
    );
    opts.timing_only = true;
    let mut g = c.benchmark_group("wsp_run_timing_only");
    g.sample_size(10);
    for t in [64u64, 256] {
        let mut ws = wsp_core::Workspace::new();
        ws.set_file("ll.wsp", scaled(t));
        let program = wsp_lower::lower(&ws, "ll.wsp").expect("the scaled example lowers");
        let tasks = 16 * t + 3 * t * t;
        let run = wsp_sim::run(&program, &jit, &opts).expect("it runs");
        assert_eq!(run.stats.tasks, tasks, "the scaled example's task count");
        g.throughput(Throughput::Elements(tasks));
        g.bench_function(format!("llama_layer/{}tokens", 64 * t), |b| {
            b.iter(|| {
                black_box(
                    wsp_sim::run(&program, &jit, &opts)
                        .expect("it runs")
                        .stats
                        .tasks,
                )
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
