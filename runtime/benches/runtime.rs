//! Runtime benchmarks: LLaMA-7B layer graph construction with dependency inference (timing-only
//! mode) and empty-kernel execution overhead for chain, wide and wavefront graphs.
//!
//! `CARGO_TARGET_DIR=/work/targets/runtime cargo bench -p wsp-runtime --bench runtime`
//! Peak memory is measured with a counting global allocator and printed once per size.

use criterion::{criterion_group, Criterion, Throughput};
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;
use wsp_runtime::*;

/// The model the benches run: ascend910b without the orchestration's submission cost, so that
/// the runtime, the floor engine (and the C floor, the seed's runtime and Taskflow in
/// ../shared/bench) build and time the same graph: the benches measure the engine's own work.
fn model() -> Arch {
    let mut a = Arch::builtin("ascend910b").expect("model");
    a.overheads.submit = 0;
    a
}

#[path = "support/floor.rs"]
mod floor;

struct Counting;
/// Bytes allocated less bytes freed while counting (signed: memory from before counting may be
/// freed), and its peak.
static CUR: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
/// Set by `--memory` alone: the other measures pay nothing for the counting.
static COUNTING: AtomicBool = AtomicBool::new(false);

/// Counts an allocation of `add` bytes that replaces one of `sub`.
#[inline(always)]
fn count(add: usize, sub: usize) {
    if COUNTING.load(Relaxed) {
        let d = add as isize - sub as isize;
        let c = CUR.fetch_add(d, Relaxed) + d;
        PEAK.fetch_max(c, Relaxed);
    }
}

// SAFETY: forwards to the system allocator and only counts bytes. Zeroed allocations and
// reallocations go to the system's own (the defaults would allocate, then write zeros or copy).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            count(l.size(), 0);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            count(l.size(), 0);
        }
        p
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            count(new, l.size());
        }
        q
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        count(0, l.size());
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const WINDOW: u32 = 1024;

fn noop() -> Arc<dyn Kernel> {
    Arc::new(|_: &RawTask| -> Result<(), String> { Ok(()) })
}

/// Where the LLaMA pattern goes: the runtime through the submit API, or the floor engine.
trait Sink {
    fn tensor(&mut self, rows: i64, cols: i64) -> TensorId;
    fn task(&mut self, cube: bool, coords: &[i64], args: &[Arg]);
}

struct Engine {
    rt: Runtime,
    vector: KernelId,
    cube: KernelId,
}

impl Sink for Engine {
    fn tensor(&mut self, rows: i64, cols: i64) -> TensorId {
        self.rt.add_tensor(2, &[rows, cols]).expect("tensor")
    }
    #[inline(always)]
    fn task(&mut self, cube: bool, coords: &[i64], args: &[Arg]) {
        self.rt
            .submit(&TaskDesc {
                kernel: if cube { self.cube } else { self.vector },
                coords,
                args,
                scalars: &[],
                cycles: if cube { 520 } else { 150 },
                key: coords[0],
                priority: 0,
                stream: 0,
                place: None,
            })
            .expect("submit");
    }
}

impl Sink for floor::Floor {
    fn tensor(&mut self, rows: i64, cols: i64) -> TensorId {
        floor::Floor::tensor(self, rows, cols)
    }
    #[inline(always)]
    fn task(&mut self, cube: bool, _coords: &[i64], args: &[Arg]) {
        self.submit(cube, args, if cube { 520 } else { 150 });
    }
}

impl Sink for floor::Split {
    fn tensor(&mut self, rows: i64, cols: i64) -> TensorId {
        floor::Split::tensor(self, rows, cols)
    }
    #[inline(always)]
    fn task(&mut self, cube: bool, _coords: &[i64], args: &[Arg]) {
        self.submit(cube, args, if cube { 520 } else { 150 });
    }
}

/// Construction alone: the runtime's own graph construction, as `Runtime::submit` runs it
/// (region checks, the tensor map's candidates, the task's entries), with no simulation.
impl Sink for Builder {
    fn tensor(&mut self, rows: i64, cols: i64) -> TensorId {
        self.add_tensor(2, &[rows, cols]).expect("tensor")
    }
    #[inline(always)]
    fn task(&mut self, _cube: bool, _coords: &[i64], args: &[Arg]) {
        black_box(self.prepare(args, 0).expect("prepare"));
        black_box(self.candidates());
        self.commit(args, 0).expect("commit");
    }
}

/// Construction alone: the floor's builder into `out`, which keeps every built task when
/// `keep` (for a later simulation alone) and only the last one otherwise.
struct Built {
    build: floor::Build,
    out: Vec<u32>,
    keep: bool,
}

impl Sink for Built {
    fn tensor(&mut self, rows: i64, cols: i64) -> TensorId {
        self.build.tensor(rows, cols)
    }
    #[inline(always)]
    fn task(&mut self, cube: bool, _coords: &[i64], args: &[Arg]) {
        if !self.keep {
            self.out.clear();
        }
        self.build
            .submit(&mut self.out, cube, args, if cube { 520 } else { 150 });
    }
}

/// The LLaMA-7B layer orchestration pattern for `tokens`: 16T + 3T² tasks, T = tokens / 64.
fn llama_pattern(tokens: i64, sink: &mut impl Sink) -> u64 {
    let t = tokens / 64;
    let s = tokens;
    let [x, xn, q, k, v, o, a, h, hn, g, u, sw, d, y] = [(); 14].map(|_| sink.tensor(s, 128));
    let sc = sink.tensor(s, 64);
    let p = sink.tensor(s, 64);
    let ml = sink.tensor(s, 2);
    let [wq, wk, wv, wo, wg, wu, wd] = [(); 7].map(|_| sink.tensor(128, 128));
    let tile = |tt: TensorId, i: i64, dir: Direction| Arg {
        region: Region::dense(tt, &[i * 64, 0], &[64, 128]).expect("region"),
        dir,
    };
    let part = |tt: TensorId, i: i64, cols: i64, dir: Direction| Arg {
        region: Region::dense(tt, &[i * 64, 0], &[64, cols]).expect("region"),
        dir,
    };
    let w = |tt: TensorId| Arg {
        region: Region::dense(tt, &[0, 0], &[128, 128]).expect("region"),
        dir: Direction::In,
    };
    use Direction::*;
    let mut n = 0u64;
    let mut sub = |cube: bool, c: &[i64], args: &[Arg]| {
        sink.task(cube, c, args);
        n += 1;
    };
    for i in 0..t {
        sub(false, &[i], &[tile(x, i, In), tile(xn, i, Out)]);
        sub(true, &[i], &[tile(xn, i, In), w(wq), tile(q, i, Out)]);
        sub(true, &[i], &[tile(xn, i, In), w(wk), tile(k, i, Out)]);
        sub(true, &[i], &[tile(xn, i, In), w(wv), tile(v, i, Out)]);
        sub(false, &[i], &[tile(q, i, InOut)]);
        sub(false, &[i], &[tile(k, i, InOut)]);
    }
    for i in 0..t {
        sub(false, &[i], &[tile(o, i, Out), part(ml, i, 2, Out)]);
        for j in 0..t {
            sub(
                true,
                &[i, j],
                &[tile(q, i, In), tile(k, j, In), part(sc, i, 64, Out)],
            );
            sub(
                false,
                &[i, j],
                &[
                    part(sc, i, 64, In),
                    part(ml, i, 2, InOut),
                    part(p, i, 64, Out),
                ],
            );
            sub(
                true,
                &[i, j],
                &[part(p, i, 64, In), tile(v, j, In), tile(o, i, InOut)],
            );
        }
        sub(false, &[i], &[tile(o, i, InOut), part(ml, i, 2, In)]);
    }
    for i in 0..t {
        sub(true, &[i], &[tile(o, i, In), w(wo), tile(a, i, Out)]);
        sub(
            false,
            &[i],
            &[tile(a, i, In), tile(x, i, In), tile(h, i, Out)],
        );
        sub(false, &[i], &[tile(h, i, In), tile(hn, i, Out)]);
        sub(true, &[i], &[tile(hn, i, In), w(wg), tile(g, i, Out)]);
        sub(true, &[i], &[tile(hn, i, In), w(wu), tile(u, i, Out)]);
        sub(
            false,
            &[i],
            &[tile(g, i, In), tile(u, i, In), tile(sw, i, Out)],
        );
        sub(true, &[i], &[tile(sw, i, In), w(wd), tile(d, i, Out)]);
        sub(
            false,
            &[i],
            &[tile(d, i, In), tile(h, i, In), tile(y, i, Out)],
        );
    }
    assert_eq!(n as i64, 16 * t + 3 * t * t);
    n
}

/// The LLaMA pattern through the runtime (timing only); returns the tasks and the runtime.
fn llama_layer(tokens: i64, window: u32) -> (u64, Runtime) {
    let mut cfg = Config::new(model()).with_window(window);
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).expect("runtime");
    let vector = rt.register_kernel("vec", CoreClass::Vector, noop());
    let cube = rt.register_kernel("cube", CoreClass::Cube, noop());
    let mut e = Engine { rt, vector, cube };
    let n = llama_pattern(tokens, &mut e);
    e.rt.finish().expect("finish");
    (n, e.rt)
}

/// The LLaMA pattern through the floor engine: the tasks, `total_cycles` and edges.
fn llama_floor(tokens: i64, window: u32) -> (u64, u64, u64) {
    let mut f = floor::Floor::new(model(), window as u64);
    let n = llama_pattern(tokens, &mut f);
    let (cycles, edges) = f.finish();
    (n, cycles, edges)
}

/// The LLaMA pattern through the split floor (construction here, simulation on a second
/// thread): the tasks, `total_cycles` and edges.
fn llama_split(tokens: i64, window: u32) -> (u64, u64, u64) {
    let mut f = floor::Split::new(model(), window as u64);
    let n = llama_pattern(tokens, &mut f);
    let (cycles, edges) = f.finish();
    (n, cycles, edges)
}

/// The LLaMA pattern through the runtime's graph construction alone, with a tensor map of
/// `pool` entries: the tasks.
fn llama_construct(tokens: i64, pool: u32) -> u64 {
    let mut b = Builder::new(WINDOW, pool, 0).expect("builder");
    llama_pattern(tokens, &mut b)
}

/// The tasks of an empty-kernel graph of `n` tasks on tensor `x` (`n` × √n one-byte
/// elements), each passed to `task` with its coordinates and 1×1 region arguments: a chain
/// (each task updates one element), wide (each writes its own), or a 2-D wavefront (each
/// writes its cell of a √n × √n grid after reading the cells above and to its left).
fn empty_tasks(shape: &str, n: i64, x: TensorId, mut task: impl FnMut(&[i64], &[Arg])) {
    let side = (n as f64).sqrt() as i64;
    let one = |r: i64, c: i64, dir: Direction| Arg {
        region: Region::dense(x, &[r, c], &[1, 1]).expect("region"),
        dir,
    };
    match shape {
        "chain" => {
            for i in 0..n {
                task(&[i], &[one(0, 0, Direction::InOut)]);
            }
        }
        "wide" => {
            for i in 0..n {
                task(&[i], &[one(i, 0, Direction::Out)]);
            }
        }
        _ => {
            for i in 0..side {
                for j in 0..side {
                    // A fixed array, so the bench itself allocates nothing per task.
                    let mut args = [one(i, j, Direction::Out); 3];
                    let mut k = 1;
                    if i > 0 {
                        args[k] = one(i - 1, j, Direction::In);
                        k += 1;
                    }
                    if j > 0 {
                        args[k] = one(i, j - 1, Direction::In);
                        k += 1;
                    }
                    task(&[i, j], &args[..k]);
                }
            }
        }
    }
}

/// The shape of [`empty_tasks`]'s tensor for `n` tasks.
fn empty_dims(n: i64) -> [i64; 2] {
    let side = (n as f64).sqrt() as i64;
    [side.max(n), side]
}

/// Empty-kernel graphs run by the runtime (construction, the event clock and the kernels):
/// returns tasks submitted.
fn empty_graph(shape: &str, threads: usize, n: i64) -> u64 {
    empty_run(shape, threads, n).0
}

/// [`empty_graph`]'s run: the tasks, `total_cycles` and edges.
fn empty_run(shape: &str, threads: usize, n: i64) -> (u64, u64, u64) {
    let mut cfg = Config::new(model()).with_window(WINDOW);
    cfg.threads = threads;
    let mut rt = Runtime::new(cfg).expect("runtime");
    let k = rt.register_kernel("empty", CoreClass::Vector, noop());
    let x = rt.add_tensor(1, &empty_dims(n)).expect("tensor");
    let mut count = 0;
    empty_tasks(shape, n, x, |c, args| {
        rt.submit(&TaskDesc {
            kernel: k,
            coords: c,
            args,
            scalars: &[],
            cycles: 10,
            key: 0,
            priority: 0,
            stream: 0,
            place: None,
        })
        .expect("submit");
        count += 1;
    });
    rt.finish().expect("finish");
    let st = rt.stats();
    (count, st.total_cycles, st.edges)
}

/// The same graphs through the floor engine, which runs no kernels: the tasks, `total_cycles`
/// and edges (a vector task of 10 cycles, as in [`empty_run`]).
fn empty_floor(shape: &str, n: i64) -> (u64, u64, u64) {
    let mut f = floor::Floor::new(model(), WINDOW as u64);
    let [rows, cols] = empty_dims(n);
    let x = f.tensor(rows, cols);
    let mut count = 0;
    empty_tasks(shape, n, x, |_, args| {
        f.submit(false, args, 10);
        count += 1;
    });
    let (cycles, edges) = f.finish();
    (count, cycles, edges)
}

/// The same graphs through the runtime's graph construction alone (`Builder`, as
/// `Runtime::submit` drives it, with the runtime's window and tensor map): returns tasks.
fn empty_construct(shape: &str, n: i64) -> u64 {
    let cfg = Config::new(model()).with_window(WINDOW);
    let mut b = Builder::new(WINDOW, cfg.tensormap_pool, 0).expect("builder");
    let x = b.add_tensor(1, &empty_dims(n)).expect("tensor");
    let mut count = 0;
    empty_tasks(shape, n, x, |_, args| {
        Sink::task(&mut b, false, &[], args);
        count += 1;
    });
    count
}

/// A CSP fan-out: one loader sends `tokens` tokens on a channel of depth 16 to `workers`
/// replicated workers, each of which submits one task a token (a one-row tile of its own
/// row, so tasks of different tokens are independent) until the channel closes. Returns the
/// tokens and `total_cycles`.
fn csp_fanout(workers: u32, tokens: i64) -> (u64, u64) {
    struct Load {
        out: ChannelId,
        i: i64,
        n: i64,
    }
    impl Process for Load {
        fn step(&mut self, _: &mut ProcCx<'_>) -> Result<Step, String> {
            if self.i == self.n {
                return Ok(Step::Finished);
            }
            self.i += 1;
            Ok(Step::Send {
                ch: self.out,
                token: Token::new(&[self.i - 1]),
                after: None,
            })
        }
    }
    struct Work {
        inp: ChannelId,
        k: KernelId,
        x: TensorId,
        rows: i64,
        waiting: bool,
    }
    impl Process for Work {
        fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
            if !self.waiting {
                self.waiting = true;
                return Ok(Step::Recv { ch: self.inp });
            }
            self.waiting = false;
            match cx.received() {
                Some(Received::Token(t)) => {
                    let i = t.values()[0];
                    let region = Region::dense(self.x, &[i % self.rows, 0], &[1, 1])
                        .map_err(|e| e.to_string())?;
                    cx.submit(&TaskDesc {
                        kernel: self.k,
                        coords: &[i],
                        args: &[Arg {
                            region,
                            dir: Direction::InOut,
                        }],
                        scalars: &[],
                        cycles: 10,
                        key: 0,
                        priority: 0,
                        stream: 0,
                        place: None,
                    })
                    .map_err(|e| e.to_string())?;
                    Ok(Step::Continue)
                }
                Some(Received::Closed) => Ok(Step::Finished),
                None => Err("no token".into()),
            }
        }
    }
    let cfg = Config::new(model()).with_window(WINDOW);
    let mut rt = Runtime::new(cfg).expect("runtime");
    let k = rt.register_kernel("empty", CoreClass::Vector, noop());
    let rows = 4096;
    let x = rt.add_tensor(1, &[rows, 1]).expect("tensor");
    let q = rt.add_channel("q", 16, None);
    let mut specs = vec![ProcSpec {
        name: "loader".into(),
        body: Box::new(Load {
            out: q,
            i: 0,
            n: tokens,
        }),
        produces: vec![q],
    }];
    for w in 0..workers {
        specs.push(ProcSpec {
            name: format!("worker{w}"),
            body: Box::new(Work {
                inp: q,
                k,
                x,
                rows,
                waiting: false,
            }),
            produces: vec![],
        });
    }
    rt.run_processes(specs).expect("processes");
    let st = rt.finish().expect("finish");
    (st.tasks, st.total_cycles)
}

/// `--csp TOKENS REPS WORKERS...`: [`csp_fanout`]'s median ns a token for each number of
/// workers (one run, so the ratios are what to compare).
fn csp_report(tokens: i64, reps: usize, workers: &[u32]) {
    for &w in workers {
        let mut times = Vec::new();
        let mut cycles = None;
        for _ in 0..reps.max(1) {
            let t0 = Instant::now();
            let (n, c) = csp_fanout(w, tokens);
            times.push(t0.elapsed().as_nanos() as f64 / n as f64);
            assert_eq!(*cycles.get_or_insert(c), c, "the same run every time");
        }
        times.sort_by(f64::total_cmp);
        println!(
            "csp_fanout {w} workers, {tokens} tokens: median {:.1} ns/token over {} runs, total_cycles {}",
            times[times.len() / 2],
            times.len(),
            cycles.unwrap_or(0)
        );
    }
}

/// A criterion group timing `run` (tokens → tasks) on the LLaMA pattern at 1K to 16K tokens.
fn llama_group(c: &mut Criterion, name: &str, run: impl Fn(i64) -> u64) {
    let mut g = c.benchmark_group(name);
    g.sample_size(10);
    for tokens in [1024i64, 2048, 4096, 8192, 16384] {
        let t = tokens / 64;
        g.throughput(Throughput::Elements((16 * t + 3 * t * t) as u64));
        g.bench_function(format!("{tokens}"), |b| b.iter(|| black_box(run(tokens))));
    }
    g.finish();
}

fn bench(c: &mut Criterion) {
    // Graph construction with dependency inference alone: the runtime's `Builder`, as
    // `Runtime::submit` drives it, without the event clock.
    let pool = Config::new(model()).with_window(WINDOW).tensormap_pool;
    llama_group(c, "llama_layer_construct", |tokens| {
        llama_construct(tokens, pool)
    });
    // The whole timing-only run: construction and the simulation of the NPU's time.
    llama_group(c, "llama_layer_build", |tokens| {
        llama_layer(tokens, WINDOW).0
    });
    let mut g = c.benchmark_group("empty_kernels");
    g.sample_size(10);
    for shape in ["chain", "wide", "wavefront"] {
        for threads in [1usize, 2] {
            g.throughput(Throughput::Elements(10_000));
            g.bench_function(format!("{shape}/{threads}t"), |b| {
                b.iter(|| black_box(empty_graph(shape, threads, 10_000)))
            });
        }
        // The same graph's construction alone: the rest of a run is its execution.
        g.throughput(Throughput::Elements(10_000));
        g.bench_function(format!("{shape}/construction"), |b| {
            b.iter(|| black_box(empty_construct(shape, 10_000)))
        });
    }
    g.finish();
    // CSP: a token's cost must not grow with the number of replicated workers.
    let mut g = c.benchmark_group("csp_fanout");
    g.sample_size(10);
    for workers in [1u32, 64, 1024] {
        g.throughput(Throughput::Elements(20_000));
        g.bench_function(format!("{workers}w"), |b| {
            b.iter(|| black_box(csp_fanout(workers, 20_000)))
        });
    }
    g.finish();
}

/// Peak heap (above the baseline) of one run, with its tasks and seconds.
fn measured(tokens: i64, window: u32) -> (usize, u64, f64, Runtime) {
    let base = CUR.load(Relaxed);
    PEAK.store(base, Relaxed);
    let t0 = Instant::now();
    let (n, rt) = llama_layer(tokens, window);
    let el = t0.elapsed().as_secs_f64();
    ((PEAK.load(Relaxed) - base) as usize, n, el, rt)
}

/// One run per size: tasks/ms, peak heap above the baseline, bytes per in-flight task; then the
/// same size with twice the window, whose extra peak over the extra window is what each
/// in-flight task retains (the fixed part — model, kernels, tensors — cancels out).
fn memory_report(sizes: &[i64]) {
    COUNTING.store(true, Relaxed);
    for &tokens in sizes {
        let (peak, n, el, rt) = measured(tokens, WINDOW);
        let s = rt.stats();
        drop(rt);
        let (peak2, ..) = measured(tokens, 2 * WINDOW);
        println!(
            "llama_layer {tokens} tokens: {n} tasks in {el:.2} s = {:.0} tasks/ms; peak heap {peak} bytes = {:.1} bytes per in-flight task (window {WINDOW}); window {}: {peak2} bytes, {:.1} bytes per added in-flight task; total_cycles {}, edges {}",
            n as f64 / el / 1000.0,
            peak as f64 / WINDOW as f64,
            2 * WINDOW,
            (peak2 as f64 - peak as f64) / WINDOW as f64,
            s.total_cycles,
            s.edges
        );
        for r in &s.rings {
            println!(
                "  ring {}: high water {} of {}",
                r.name, r.high_water, r.capacity
            );
        }
    }
}

criterion_group!(benches, bench);

/// `--floor REPS SIZES`: the engine, the floor engine on one thread, the floor split over two
/// threads (construction on this one, simulation on another), and each half of the floor
/// alone, on the LLaMA pattern, alternating, REPS times per size; checks they agree on
/// `total_cycles` and edges, and prints the median tasks/ms of each (one run, so the ratios
/// are what to compare).
fn floor_report(reps: usize, sizes: &[i64]) {
    let rate = |n: u64, t0: Instant| n as f64 / t0.elapsed().as_secs_f64() / 1000.0;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let arch = || model();
    // The tensor map `llama_layer`'s runtime has.
    let pool = Config::new(arch()).with_window(WINDOW).tensormap_pool;
    for &tokens in sizes {
        let mut rates = [(); 6].map(|_| Vec::new());
        for _ in 0..reps.max(1) {
            let t0 = Instant::now();
            let (n, rt) = llama_layer(tokens, WINDOW);
            rates[0].push(rate(n, t0));
            let s = rt.stats();
            let want = (s.total_cycles, s.edges);
            drop(rt);
            let t0 = Instant::now();
            let (n, cycles, edges) = llama_floor(tokens, WINDOW);
            rates[1].push(rate(n, t0));
            assert_eq!((cycles, edges), want, "the floor must model the same run");
            let t0 = Instant::now();
            let (n, cycles, edges) = llama_split(tokens, WINDOW);
            rates[2].push(rate(n, t0));
            assert_eq!(
                (cycles, edges),
                want,
                "the split floor must model the same run"
            );
            let mut b = Built {
                build: floor::Build::new(arch(), WINDOW as u64),
                out: Vec::new(),
                keep: false,
            };
            let t0 = Instant::now();
            let n = llama_pattern(tokens, &mut b);
            rates[3].push(rate(n, t0));
            drop(b);
            let mut b = Built {
                build: floor::Build::new(arch(), WINDOW as u64),
                out: Vec::new(),
                keep: true,
            };
            let n = llama_pattern(tokens, &mut b);
            let mut sim = floor::Sim::new(&arch(), WINDOW as u64);
            let t0 = Instant::now();
            let mut at = 0;
            while at < b.out.len() {
                let len = 2 + (b.out[at + 1] >> 1) as usize;
                sim.admit(&b.out[at..at + len]);
                at += len;
            }
            sim.finish();
            rates[4].push(rate(n, t0));
            assert_eq!((sim.makespan, sim.edges_total), want);
            let t0 = Instant::now();
            let n = llama_construct(tokens, pool);
            rates[5].push(rate(n, t0));
        }
        let [e, f, sp, b, sm, eb] = rates.map(|mut r| median(&mut r));
        println!(
            "llama_layer {tokens} tokens (tasks/ms): engine {e:.0} (its construction alone {eb:.0}); floor {f:.0} ({:.2}x); split floor {sp:.0} ({:.2}x); floor construction alone {b:.0}; floor simulation alone {sm:.0}; same total_cycles and edges",
            f / e,
            sp / e
        );
    }
}

/// `--construct REPS SIZES`: the runtime's graph construction alone on the LLaMA pattern
/// (`Builder`, with the tensor map `llama_layer`'s runtime has), REPS times per size; prints the
/// median tasks/ms.
fn construct_report(reps: usize, sizes: &[i64]) {
    let pool = Config::new(model()).with_window(WINDOW).tensormap_pool;
    for &tokens in sizes {
        let mut rates: Vec<f64> = (0..reps.max(1))
            .map(|_| {
                let t0 = Instant::now();
                let n = llama_construct(tokens, pool);
                n as f64 / t0.elapsed().as_secs_f64() / 1000.0
            })
            .collect();
        rates.sort_by(f64::total_cmp);
        println!(
            "llama_construct {tokens} tokens: median {:.0} tasks/ms over {} runs (min {:.0}, max {:.0})",
            rates[rates.len() / 2],
            rates.len(),
            rates[0],
            rates[rates.len() - 1]
        );
    }
}

/// `--empty SHAPE THREADS REPS`: runs one empty-kernel graph of 10,000 tasks REPS times, its
/// construction alone as many times and the floor engine on it as many times (alternating),
/// and prints the median time per task of each and the difference of the first two: what
/// executing the graph costs beyond building it. The floor must model the same run (same
/// `total_cycles` and edges; checked on every rep).
fn empty_report(shape: &str, threads: usize, reps: usize) {
    let mut times = [(); 3].map(|_| Vec::new());
    let per_task = |t0: Instant, n: u64| t0.elapsed().as_nanos() as f64 / n as f64;
    for _ in 0..reps.max(1) {
        let t0 = Instant::now();
        let (n, cycles, edges) = empty_run(shape, threads, 10_000);
        times[0].push(per_task(t0, n));
        let t0 = Instant::now();
        let n = empty_construct(shape, 10_000);
        times[1].push(per_task(t0, n));
        let t0 = Instant::now();
        let (n, fc, fe) = empty_floor(shape, 10_000);
        times[2].push(per_task(t0, n));
        assert_eq!(
            (fc, fe),
            (cycles, edges),
            "the floor must model the same run"
        );
    }
    let [r, b, f] = times.map(|mut v| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    });
    println!(
        "empty_kernels {shape} {threads}t: median {r:.1} ns/task over {reps} runs; construction alone {b:.1}; execution beyond construction {:.1}; floor engine (no kernels) {f:.1}",
        r - b,
        reps = reps.max(1)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(p) = args.iter().position(|a| a == "--empty") {
        let get = |i: usize| args.get(p + i).map(String::as_str);
        let shape = get(1).unwrap_or("chain");
        let threads = get(2).and_then(|a| a.parse().ok()).unwrap_or(1);
        let reps = get(3).and_then(|a| a.parse().ok()).unwrap_or(101);
        empty_report(shape, threads, reps);
        return;
    }
    if let Some(p) = args.iter().position(|a| a == "--csp") {
        let tokens = args
            .get(p + 1)
            .and_then(|a| a.parse().ok())
            .unwrap_or(20_000);
        let reps = args.get(p + 2).and_then(|a| a.parse().ok()).unwrap_or(11);
        let mut workers: Vec<u32> = args[(p + 3).min(args.len())..]
            .iter()
            .filter_map(|a| a.parse().ok())
            .collect();
        if workers.is_empty() {
            workers = vec![1, 64, 1024];
        }
        csp_report(tokens, reps, &workers);
        return;
    }
    // `--MODE REPS SIZES`: REPS (default 11) and the sizes in tokens (default 16384).
    let reps_sizes = |p: usize| {
        let reps = args.get(p + 1).and_then(|a| a.parse().ok()).unwrap_or(11);
        let mut sizes: Vec<i64> = args[(p + 2).min(args.len())..]
            .iter()
            .filter_map(|a| a.parse().ok())
            .collect();
        if sizes.is_empty() {
            sizes.push(16384);
        }
        (reps, sizes)
    };
    if let Some(p) = args.iter().position(|a| a == "--construct") {
        // The runtime's construction alone (and for profiling it: `--construct 1 4096`).
        let (reps, sizes) = reps_sizes(p);
        construct_report(reps, &sizes);
        return;
    }
    if let Some(p) = args.iter().position(|a| a == "--floor") {
        let (reps, sizes) = reps_sizes(p);
        floor_report(reps, &sizes);
        return;
    }
    if let Some(p) = args.iter().position(|a| a == "--memory") {
        let sizes: Vec<i64> = args[p + 1..]
            .iter()
            .filter_map(|a| a.parse().ok())
            .collect();
        memory_report(if sizes.is_empty() {
            &[16384, 131072]
        } else {
            &sizes
        });
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
