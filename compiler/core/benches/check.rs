//! `wsp check` speed: cold throughput (lines/s) and re-check after a one-line edit.
//! Run: `cargo bench -p wsp-core --bench check`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wsp_core::Workspace;

#[path = "gen.rs"]
mod gen;
use gen::module;

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

/// Constant chains (`const C{i} = C{i-1} + 1`) beside as many independent constants: checking
/// either is linear in the constants (a chain of 2,000 took 35 s when each constant's cycle
/// search walked the whole chain again; 100,000 independent constants took 9 s when each
/// item's AST was found by a search of the file's items and the cycle query copied a table
/// of every constant per constant). Compare n = 2,000 with n = 16,000: 8× the time.
fn const_chains(c: &mut Criterion) {
    let mut g = c.benchmark_group("const_chain");
    for n in [2_000usize, 16_000] {
        let chain: String = std::iter::once("const C0 = 1\n".to_string())
            .chain((1..n).map(|i| format!("const C{i} = C{} + 1\n", i - 1)))
            .collect();
        let independent: String = (0..n).map(|i| format!("const C{i} = {i}\n")).collect();
        for (name, src) in [("chain", chain), ("independent", independent)] {
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::new(name, n), &src, |b, src| {
                b.iter(|| {
                    let mut ws = Workspace::new();
                    ws.set_file("c.wsp", src.clone());
                    let d = ws.check("c.wsp");
                    assert!(d.is_empty(), "{:?}", d.first());
                })
            });
        }
    }
    g.finish();
}

/// `let`s in one kernel: linear in the lets (100,000 took 10 s when the tile-memory peak was
/// found by scanning every value's live range at every point). Compare n = 2,000 with
/// n = 16,000: 8× the time.
fn kernel_lets(c: &mut Criterion) {
    let mut g = c.benchmark_group("kernel_lets");
    for n in [2_000usize, 16_000] {
        let src = format!(
            "kernel k(a: in f32[8, 8], c: out f32[8, 8]) {{\n{}    c = a\n}}\n",
            (0..n)
                .map(|i| format!("    let x{i} = a\n"))
                .collect::<String>()
        );
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &src, |b, src| {
            b.iter(|| {
                let mut ws = Workspace::new();
                ws.set_file("k.wsp", src.clone());
                ws.check("k.wsp").len()
            })
        });
    }
    g.finish();
}

/// A one-line edit inside the middle kernel of one file, undone by the next edit: the
/// workspace holding that file alone, checked again.
struct OneFile {
    ws: Workspace,
    variants: [String; 2],
    flip: usize,
}

impl OneFile {
    fn new(lines: usize) -> OneFile {
        const LINE: &str = "acc = acc + e / s";
        let text = module(0, lines);
        let middle = text.match_indices(LINE).count() / 2;
        let (at, _) = text.match_indices(LINE).nth(middle).expect("a kernel");
        let mut edited = text.clone();
        edited.insert_str(at + LINE.len(), " * 1.0");
        let mut ws = Workspace::new();
        ws.set_file("m.wsp", text.clone());
        assert!(ws.check("m.wsp").is_empty());
        OneFile {
            ws,
            variants: [edited, text],
            flip: 0,
        }
    }

    fn edit(&mut self) -> usize {
        self.flip ^= 1;
        self.ws.set_file("m.wsp", self.variants[self.flip].clone());
        self.ws.check("m.wsp").len()
    }
}

/// Editing a large file (issue 27 item 5): a one-line edit re-parses only the items it
/// touches, so the re-check of one 10,000-line file is within 2× of the same edit in one
/// 1,000-line file. Criterion times each; then the two are alternated side by side, seven
/// rounds of 200 edits, and the medians' ratio printed.
fn edit_one_file(c: &mut Criterion) {
    let mut g = c.benchmark_group("edit_one_file");
    for lines in [1_000usize, 10_000] {
        let mut f = OneFile::new(lines);
        g.bench_function(BenchmarkId::from_parameter(lines), |b| b.iter(|| f.edit()));
    }
    g.finish();
    let mut small = OneFile::new(1_000);
    let mut large = OneFile::new(10_000);
    let round = |f: &mut OneFile| {
        let t = std::time::Instant::now();
        for _ in 0..200 {
            std::hint::black_box(f.edit());
        }
        t.elapsed().as_secs_f64() / 200.0
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        a.push(round(&mut small));
        b.push(round(&mut large));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (a, b) = (median(&mut a), median(&mut b));
    println!(
        "edit_one_file side by side: 1,000 lines {:.1} µs, 10,000 lines {:.1} µs, ratio {:.2}",
        a * 1e6,
        b * 1e6,
        b / a
    );
}

criterion_group!(benches, bench, const_chains, kernel_lets, edit_one_file);
criterion_main!(benches);
