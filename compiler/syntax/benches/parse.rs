//! Parser throughput on a generated file of realistic kernels, workloads, processes and
//! schedules (≥ 10,000 lines). Reports lines/s through criterion's element throughput.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::fmt::Write;

/// One block of about 60 lines exercising most of the language; `i` keeps names unique.
fn block(out: &mut String, i: usize) {
    let _ = write!(
        out,
        r#"// ---- block {i}
const D{i} = 64
const T{i} = 4 * 2
param batch{i}: u32 = 4
axis heads{i} = Dense[8]
axis tiles{i} = Dense[T{i}]
axis dyn{i} = DenseDyn(batch{i})
input  X{i}: f32[8, T{i}, 16, D{i}] = load("x{i}.npy")
input  W{i}: f16[D{i}, D{i}] = random(seed: {i})
output Y{i}: f32[8, T{i}, 16, D{i}]
tensor S{i}: f32[8, 16, 1] = full(-1e30)

/// softmax-normalised projection of one tile
kernel proj{i}(x: in f32[..16, 64], w: in f16[64, 64], out: out f32[16, 64], eps: f32 = 1e-6) {{
    let xs = x * rsqrt(rowmean(x * x) + eps)
    var acc = full([16, 64], 0.0)
    for k in 0..4 {{
        acc += matmul(cast(xs, f16), w)
    }}
    let m = rowmax(acc)
    let e = exp(acc - m)
    let (v, idx) = rowtopk(e, 2)
    out[0..8, :] = e[0..8, :] / rowsum(e[0..8, :])
    out[8..16, :] = select(e[8..16, :] > 0.5, e[8..16, :], neg(e[8..16, :]))
}}

kernel fused{i}(a: in f32[128, 256], out: out f32[128, 256]) {{
    pipe s: Pipe[f32[128, 256], slots: 2]
    cube {{
        let slot = talloc(s)
        slot[:, 0..128] = matmul(a[:, 0..128], transpose(a[0..128, 0..128]))
        slot[:, 128..256] = a[:, 128..256] * 2.0
        tpush(s, slot)
    }}
    vector {{
        let t = tpop(s)
        out = gelu(t) + silu(t) - relu(t)
        tfree(s, t)
    }}
}}

workload layer{i} {{
    for h, t in P(heads{i}, tiles{i}) {{
        proj{i}[h, t](x: X{i}[h, t, 0..16, :], w: W{i}, out: Y{i}[h, t])
    }}
    for b in P.seq(dyn{i}) {{
        when b % 2 == 0 {{ fused{i}[b](a: X{i}[b], out: Y{i}[b]) }}
        else when b < 3 {{ proj{i}[b, 0](x: X{i}[b, 0], w: W{i}, out: Y{i}[b, 0]) }}
        else {{ fused{i}[b](a: X{i}[b], out: Y{i}[b]) }}
    }}
}}
workload both{i} = combine(layer{i}, sequential(layer{i}, layer{i}))

channel c{i}: Channel[depth: 2]
process load{i} produces c{i} {{
    for t in P.seq(tiles{i}) {{ send c{i}, proj{i}[t](x: X{i}[0, t], w: W{i}, out: Y{i}[0, t]) }}
}}
process use{i} consumes c{i} {{
    consume c{i} as t {{ fused{i}[t](a: X{i}[t], out: Y{i}[t]) }}
}}
workload pipe{i} = connect(load{i}, replicate(use{i}, 4))

schedule main{i} = layer{i}
    .dispatch(affinity(heads{i}))
    .streams(4)
    .stream_by(heads{i} % 4)
    .task_window(8192)
    .ready(fifo)

expect close(Y{i}, load("y{i}.npy"), rtol: 1e-4, atol: 1e-5)
"#
    );
}

fn generate(min_lines: usize) -> String {
    let mut s = String::from("import std.nn.{rmsnorm, softmax}\n");
    let mut i = 0;
    while s.lines().count() < min_lines {
        block(&mut s, i);
        i += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let src = generate(10_000);
    let lines = src.lines().count() as u64;
    let check = wsp_syntax::parse(&src);
    assert!(
        check.errors.is_empty(),
        "generated benchmark input has syntax errors: {:?}",
        check.errors.first()
    );
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Elements(lines));
    g.bench_function(format!("{lines}_lines"), |b| {
        b.iter(|| wsp_syntax::parse(std::hint::black_box(&src)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
