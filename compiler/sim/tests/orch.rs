//! The JIT-compiled orchestration against the reference workload interpreter: every example
//! and every runnable fixture of `tests/ui` runs both ways on the runtime, and the task
//! sequences (kernel, coordinates, extents, process), the runtime's task graph (regions and
//! dependencies), the outputs (bit for bit), `total_cycles` and errors must be identical.

use std::path::{Path, PathBuf};
use wsp_sim::{Engine, Options};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn wsp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(wsp_files(&p));
        } else if p.extension().is_some_and(|x| x == "wsp") {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn lower(path: &Path) -> Option<wsp_ir::Program> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut ws = wsp_core::Workspace::new();
    let key = path.to_string_lossy().to_string();
    ws.set_file(&key, text);
    wsp_lower::lower(&ws, &key).ok()
}

fn run(p: &wsp_ir::Program, path: &Path, interpret_orch: bool) -> Result<wsp_sim::SimRun, String> {
    let mut o = Options::new(
        wsp_arch::Arch::builtin("ascend910b").expect("arch"),
        wsp_sim::base_dir_of(path),
    );
    o.interpret_orchestration = interpret_orch;
    o.record = true;
    let jit = wsp_jit::Jit::new();
    wsp_sim::run(p, &jit, &o).map_err(|e| e.to_string())
}

/// Runs `path` both ways and compares; returns whether it ran (lowered and selected).
fn differential(path: &Path) -> bool {
    let Some(p) = lower(path) else {
        return false;
    };
    if p.select_run(None).is_err() {
        return false;
    }
    let a = run(&p, path, true);
    let b = run(&p, path, false);
    let name = path.display();
    match (a, b) {
        (Ok(a), Ok(b)) => {
            assert_eq!(b.orchestration, Engine::Jit, "{name}: not compiled");
            assert!(matches!(a.orchestration, Engine::Interpreter(_)));
            assert_eq!(a.outcome, b.outcome, "{name}: task sequences differ");
            assert_eq!(a.graph, b.graph, "{name}: task graphs differ");
            assert_eq!(
                a.stats.total_cycles, b.stats.total_cycles,
                "{name}: total_cycles differ"
            );
            assert_eq!(a.stats.tasks, b.stats.tasks, "{name}: task counts differ");
            for (x, y) in a.tensors.iter().zip(&b.tensors) {
                assert_eq!(x.shape, y.shape, "{name}");
                assert_eq!(
                    x.data.to_bytes(x.dtype),
                    y.data.to_bytes(y.dtype),
                    "{name}: outputs differ"
                );
            }
            assert_eq!(
                a.expects.iter().map(|e| &e.failure).collect::<Vec<_>>(),
                b.expects.iter().map(|e| &e.failure).collect::<Vec<_>>(),
                "{name}: expectations differ"
            );
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "{name}: errors differ"),
        (a, b) => panic!(
            "{name}: interpreted {:?} but compiled {:?}",
            a.map(|r| r.stats.total_cycles),
            b.map(|r| r.stats.total_cycles)
        ),
    }
    true
}

#[test]
fn every_example_runs_the_same_compiled_and_interpreted() {
    let files = wsp_files(&root().join("examples"));
    assert!(files.len() >= 10);
    let ran = files.iter().filter(|f| differential(f)).count();
    assert!(ran >= 10, "only {ran} examples ran");
}

#[test]
fn every_runnable_fixture_runs_the_same_compiled_and_interpreted() {
    let files = wsp_files(&root().join("tests/ui"));
    let ran = files.iter().filter(|f| differential(f)).count();
    assert!(ran >= 1, "no fixture ran");
}

#[test]
fn the_summary_names_the_orchestration_engine() {
    let path = root().join("examples/csp_pipeline/csp_pipeline.wsp");
    let p = lower(&path).expect("lowers");
    let r = run(&p, &path, false).expect("runs");
    assert_eq!(r.orchestration, Engine::Jit);
    let mut o = Options::new(
        wsp_arch::Arch::builtin("ascend910b").expect("arch"),
        wsp_sim::base_dir_of(&path),
    );
    o.interpret = true;
    let r = wsp_sim::run(&p, &wsp_jit::Jit::new(), &o).expect("runs");
    assert_eq!(r.orchestration, Engine::Interpreter("--interpret".into()));
}

/// A small deterministic generator (xorshift) for the generated-workload test.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A random program over Dense, Ragged and Sparse axes: nested `P`/`P.seq` loops, `when` on
/// the length tensor, `sequential`, views with offsets (some out of range on purpose), views
/// indexed by `%` and by tensor data, tasks of two kernels. Every seed gives one program; some fail to check or to run, which both
/// engines must then report alike.
fn generated_program(seed: u64) -> String {
    let mut g = Gen(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let b = 1 + g.below(3);
    let m = 4;
    let e = 3;
    let lens: Vec<String> = (0..b).map(|_| g.below(m + 1).to_string()).collect();
    let mut indptr = vec![0u64];
    let mut idx = Vec::new();
    for _ in 0..b {
        let n = g.below(3);
        for _ in 0..n {
            idx.push(g.below(e).to_string());
        }
        indptr.push(indptr.last().copied().unwrap_or(0) + n);
    }
    if idx.is_empty() {
        // A Sparse axis needs at least one index element to declare.
        idx.push("0".into());
        if let Some(l) = indptr.last_mut() {
            *l += 1;
        }
    }
    let indptr: Vec<String> = indptr.iter().map(|x| x.to_string()).collect();
    let par = |g: &mut Gen| if g.below(3) == 0 { "P.seq" } else { "P" };
    let off = |g: &mut Gen| if g.below(8) == 0 { " + 1" } else { "" };
    let mut body = String::new();
    let parts = 1 + g.below(2);
    let mut workloads = Vec::new();
    for w in 0..parts {
        let (p1, p2) = (par(&mut g), par(&mut g));
        let inner = match g.below(6) {
            0 => format!(
                "        for t in {p2}(rag[b]) {{\n            scale[b, t](x: X[b, t{}], y: Y1[b, t])\n        }}\n",
                off(&mut g)
            ),
            1 => format!(
                "        for t in {p2}(rag[b]) {{\n            when lens[b] > t + {} {{\n                scale[b, t](x: X[b, t], y: Y1[b, t])\n            }} else {{\n                shift[b, t](x: X[b, t], y: Y1[b, t])\n            }}\n        }}\n",
                g.below(3)
            ),
            2 => format!(
                "        for s in P.sel(sp[b]) {{\n            shift[b, s](x: X[b, 0], y: Y2[b, s{}])\n        }}\n",
                off(&mut g)
            ),
            // Views whose index is not affine: computed (`%`), or read from tensor data (the
            // length tensor, possibly out of range).
            4 => format!(
                "        for t in {p2}(rag[b]) {{\n            scale[b, t](x: X[b, (t + {}) % M], y: Y1[b, t])\n        }}\n",
                g.below(m)
            ),
            5 => format!(
                "        for t in {p2}(rag[b]) {{\n            shift[b, t](x: X[b, lens[b] - 1 - t{}], y: Y1[b, t])\n        }}\n",
                if g.below(4) == 0 { " + 1" } else { "" }
            ),
            _ => format!(
                "        for t in 0..{} {{\n            scale[b, t](x: X[b, t], y: Y1[b, t])\n        }}\n",
                1 + g.below(m)
            ),
        };
        body.push_str(&format!(
            "workload w{w} {{\n    for b in {p1}(outer) {{\n{inner}    }}\n}}\n\n"
        ));
        workloads.push(format!("w{w}"));
    }
    let main = if workloads.len() == 1 {
        workloads[0].clone()
    } else {
        body.push_str(&format!(
            "workload both = sequential({})\n\n",
            workloads.join(", ")
        ));
        "both".into()
    };
    format!(
        "const B = {b}\nconst M = {m}\nconst E = {e}\n\naxis outer = Dense[B]\n\
         input lens: i32[B] = [{}]\naxis rag = Ragged(outer, lens)\n\
         input indptr: i32[B + 1] = [{}]\ninput idx: i32[{}] = [{}]\n\
         axis sp = Sparse(outer, indptr, idx)\n\n\
         input X: f32[B, M, 1, 4] = random(seed: {})\noutput Y1: f32[B, M, 1, 4]\n\
         output Y2: f32[B, E, 1, 4]\n\n\
         kernel scale(x: in f32[1, 4], y: out f32[1, 4]) {{\n    y = x * 2.0\n}}\n\n\
         kernel shift(x: in f32[1, 4], y: out f32[1, 4]) {{\n    y = x + 1.0\n}}\n\n\
         {body}schedule main = {main}.dispatch(round_robin(4)).task_window({})\n",
        lens.join(", "),
        indptr.join(", "),
        idx.len(),
        idx.join(", "),
        g.below(100),
        [1, 2, 8, 64][g.below(4) as usize],
    )
}

/// Generated workloads (loops over Dense, Ragged and Sparse axes, `when` on data, `P.seq`,
/// `sequential`, out-of-range views) run the same compiled and interpreted. With
/// `WSP_KEEP_GEN=1` the generated programs stay in the temporary directory for inspection.
#[test]
fn generated_workloads_run_the_same_compiled_and_interpreted() {
    let dir = std::env::temp_dir().join(format!("wsp-orch-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut ran = 0;
    for seed in 0..150u64 {
        let src = generated_program(seed);
        let path = dir.join(format!("gen{seed}.wsp"));
        std::fs::write(&path, &src).expect("write");
        // A program that checks clean lowers: E0813 after a clean check is a bug.
        let mut ws = wsp_core::Workspace::new();
        ws.set_file("gen.wsp", src.clone());
        let clean = ws
            .check("gen.wsp")
            .iter()
            .all(|d| d.severity != wsp_diagnostics::Severity::Error);
        if clean {
            if let Err(d) = wsp_lower::lower(&ws, "gen.wsp") {
                panic!("seed {seed} checks clean but does not lower: {d:#?}\n{src}");
            }
        }
        if differential(&path) {
            ran += 1;
        }
    }
    if std::env::var_os("WSP_KEEP_GEN").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        ran >= 140,
        "only {ran} of 150 generated programs lowered and ran"
    );
}
