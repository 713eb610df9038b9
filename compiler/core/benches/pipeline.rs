//! Static analysis of a large CSP program (issue 6: 500 processes and channels in under 100 ms):
//! the whole `wsp check` of one file — channel graph, abstract token counting, every other check.
//! Run: `cargo bench -p wsp-core --bench pipeline`.

use criterion::{criterion_group, criterion_main, Criterion};
use wsp_core::Workspace;

/// A chain of `n` processes over `n - 1` channels of depths 0, 1 and 2: `p0` sends `tokens`
/// tokens, each middle process relays them through a task, the last one stores them.
fn chain(n: usize, tokens: usize) -> String {
    let mut s = format!(
        "axis tiles = Dense[{tokens}]\n\
         input X: f32[{tokens}, 16, 16] = random(seed: 1)\n\
         output Y: f32[{tokens}, 16, 16]\n\
         kernel copy(src: in f32[16, 16], dst: out f32[16, 16]) {{ dst = src * 2.0 }}\n"
    );
    for c in 0..n - 1 {
        s += &format!("channel c{c}: Channel[depth: {}]\n", c % 3);
    }
    s += "process p0 produces c0 {\n    for i in P.seq(tiles) { send c0, i }\n}\n";
    for p in 1..n - 1 {
        s += &format!(
            "process p{p} consumes c{} produces c{p} {{\n    consume c{} as i {{ send c{p}, copy[i](src: X[i], dst: Y[i]) }}\n}}\n",
            p - 1,
            p - 1
        );
    }
    let last = n - 1;
    s += &format!(
        "process p{last} consumes c{} {{\n    consume c{} as i {{ copy[i](src: X[i], dst: Y[i]) }}\n}}\n",
        last - 1,
        last - 1
    );
    let names: Vec<String> = (0..n).map(|p| format!("p{p}")).collect();
    s += &format!("workload w = connect({})\n", names.join(", "));
    s
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("pipeline");
    let text = chain(500, 8);
    {
        let mut ws = Workspace::new();
        ws.set_file("p.wsp", text.clone());
        let codes: Vec<_> = ws
            .check("p.wsp")
            .iter()
            .map(|d| d.code.to_string())
            .collect();
        assert!(codes.is_empty(), "{codes:?}");
    }
    g.bench_function("check_500_processes_safe", |b| {
        b.iter(|| {
            let mut ws = Workspace::new();
            ws.set_file("p.wsp", text.clone());
            ws.check("p.wsp").len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
