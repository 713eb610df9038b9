//! The language server's answers on files of many items: `semanticTokens/full` over n
//! constants must stay linear in n (it was quadratic: a declaration search per name and an
//! item search per token). Compare `semantic_tokens/1000` with `semantic_tokens/8000`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wsp_core::Workspace;

fn semantic_tokens(c: &mut Criterion) {
    let mut g = c.benchmark_group("semantic_tokens");
    for n in [1_000usize, 8_000] {
        let text: String = (0..n).map(|i| format!("const C{i} = {i}\n")).collect();
        let mut ws = Workspace::new();
        ws.set_file("c.wsp", text);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &ws, |b, ws| {
            b.iter(|| wsp_lsp::features::semantic_tokens(ws, "c.wsp").len())
        });
    }
    g.finish();
}

criterion_group!(benches, semantic_tokens);
criterion_main!(benches);
