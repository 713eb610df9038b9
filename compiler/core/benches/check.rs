//! `wsp check` speed: cold throughput (lines/s) and re-check after a one-line edit.
//! Run: `cargo bench -p wsp-core --bench check`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wsp_core::Workspace;

/// A realistic module of about `lines` lines: constants, axes, tensors, kernels with
/// reductions and matmuls, workloads with P loops and views, and schedules.
fn module(index: usize, lines: usize) -> String {
    let mut s = format!(
        "// generated module {index}\nconst N{index} = 8\nconst T{index} = 16\naxis rows{index} = Dense[N{index}]\naxis tiles{index} = Dense[T{index}]\n"
    );
    let mut k = 0;
    while s.lines().count() < lines {
        s.push_str(&format!(
            "input X{index}_{k}: f32[N{index}, T{index}, 16, 64] = load(\"x{k}.npy\")
output Y{index}_{k}: f32[N{index}, T{index}, 16, 64]
tensor S{index}_{k}: f32[N{index}, 16, 1]

/// kernel {k} of module {index}
kernel k{index}_{k}(x: in f32[16, 64], w: in f32[64, 64], y: out f32[16, 64], eps: f32 = 1e-6) {{
    let h = matmul(x, w)
    let m = rowmax(h)
    let e = exp(h - m)
    let s = rowsum(e)
    var acc = full([16, 64], 0.0)
    for i in 0..4 {{
        acc = acc + e / s
    }}
    y = acc * rsqrt(rowmean(x * x) + eps)
}}

input W{index}_{k}: f32[64, 64] = load(\"w{k}.npy\")
workload w{index}_{k} {{
    for r, t in P(rows{index}, tiles{index}) {{
        k{index}_{k}[r, t](x: X{index}_{k}[r, t], w: W{index}_{k}, y: Y{index}_{k}[r, t])
    }}
}}

schedule s{index}_{k} = w{index}_{k}
    .dispatch(round_robin(4))
    .task_window(8192)

"
        ));
        k += 1;
    }
    s
}

fn workspace(total_lines: usize) -> (Workspace, Vec<(String, String)>, usize) {
    let per = 1000;
    let files: Vec<(String, String)> = (0..total_lines.div_ceil(per))
        .map(|i| (format!("m{i}.wsp"), module(i, per)))
        .collect();
    let lines = files.iter().map(|(_, t)| t.lines().count()).sum();
    let mut ws = Workspace::new();
    for (p, t) in &files {
        ws.set_file(p, t.clone());
    }
    (ws, files, lines)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("check");
    {
        let (_, files, lines) = workspace(10_000);
        g.throughput(Throughput::Elements(lines as u64));
        g.bench_with_input(BenchmarkId::new("cold", lines), &files, |b, files| {
            b.iter(|| {
                let mut ws = Workspace::new();
                for (p, t) in files {
                    ws.set_file(p, t.clone());
                }
                let n: usize = files.iter().map(|(p, _)| ws.check(p).len()).sum();
                assert_eq!(n, 0);
            })
        });
    }
    g.finish();

    // Re-check after a one-line edit inside one kernel body of a 10,000-line workspace.
    let (mut ws, files, _) = workspace(10_000);
    for (p, _) in &files {
        assert!(ws.check(p).is_empty());
    }
    let (path, text) = files[files.len() / 2].clone();
    let a = text.replacen("acc = acc + e / s", "acc = acc + e / s * 1.0", 1);
    let variants = [a, text];
    let mut flip = 0;
    c.bench_function("recheck_after_one_line_edit_10k", |b| {
        b.iter(|| {
            flip ^= 1;
            ws.set_file(&path, variants[flip].clone());
            ws.check(&path).len()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
