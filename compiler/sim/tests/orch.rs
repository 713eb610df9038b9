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
