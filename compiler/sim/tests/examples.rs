//! Every example of `examples/manifest.toml` run on the runtime: outputs against the NumPy
//! goldens (the programs' `expect`s), `total_cycles` under `pto_wsp_v9` equal to PTO-WSP v9's
//! published figure, JIT and interpreter bit-identical, and the default model's cycles
//! deterministic and recorded here.

use std::path::{Path, PathBuf};
use wsp_sim::{Engine, Options};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

struct Example {
    name: String,
    program: PathBuf,
    schedule: Option<String>,
    /// PTO-WSP v9's published `total_cycles` (`None`: an example beyond v9).
    v9: Option<u64>,
}

fn manifest() -> Vec<Example> {
    let text = std::fs::read_to_string(examples_dir().join("manifest.toml")).expect("manifest");
    let table: toml::Table = text.parse().expect("manifest parses");
    table
        .iter()
        .map(|(name, v)| Example {
            name: name.clone(),
            program: examples_dir().join(v["program"].as_str().expect("program")),
            schedule: v.get("schedule").and_then(|s| s.as_str()).map(String::from),
            v9: v
                .get("v9_total_cycles")
                .map(|c| c.as_integer().expect("v9_total_cycles is an integer") as u64),
        })
        .collect()
}

fn lower(path: &Path) -> wsp_ir::Program {
    let text = std::fs::read_to_string(path).expect("example exists");
    let mut ws = wsp_core::Workspace::new();
    let key = path.to_string_lossy().to_string();
    ws.set_file(&key, text);
    wsp_lower::lower(&ws, &key)
        .unwrap_or_else(|d| panic!("{} did not lower: {d:#?}", path.display()))
}

fn run(e: &Example, arch: &str, interpret: bool) -> wsp_sim::SimRun {
    run_threads(e, arch, interpret, 1)
}

fn run_threads(e: &Example, arch: &str, interpret: bool, threads: usize) -> wsp_sim::SimRun {
    let p = lower(&e.program);
    let mut o = Options::new(
        wsp_arch::Arch::builtin(arch).expect("arch"),
        wsp_sim::base_dir_of(&e.program),
    );
    o.schedule = e.schedule.clone();
    o.interpret = interpret;
    o.threads = threads;
    let jit = wsp_jit::Jit::new();
    wsp_sim::run(&p, &jit, &o).unwrap_or_else(|err| panic!("{}: {err}", e.name))
}

fn assert_passed(e: &Example, r: &wsp_sim::SimRun) {
    assert!(!r.expects.is_empty(), "{} has no expect", e.name);
    for x in &r.expects {
        assert!(
            x.failure.is_none(),
            "{}: {} failed: {:?}",
            e.name,
            x.description,
            x.failure
        );
    }
}

#[test]
fn every_example_matches_pto_wsp_v9_cycles_and_its_golden() {
    let m = manifest();
    assert!(m.len() >= 3);
    for e in &m {
        let r = run(e, "pto_wsp_v9", false);
        assert_passed(e, &r);
        if let Some(v9) = e.v9 {
            assert_eq!(r.stats.total_cycles, v9, "{}: v9 total_cycles", e.name);
        }
    }
}

/// `total_cycles` under the default model (ascend910b), per example: deterministic, and
/// recorded so that a change to the model or the runtime shows up here.
const ASCEND910B_CYCLES: &[(&str, u64)] = &[
    ("validated_matmul", 1873),
    ("tensor_data_add", 13316),
    ("tensor_data_square", 13246),
    ("moe_routing", 20533),
    ("varlen_attention", 18474),
    ("flash_attention", 18547),
    ("llama_layer", 190819),
    ("paged_gather", 16631),
    ("fa_slots", 63802),
    ("residual_tiles", 6996),
    ("pipe_scores", 3880),
    ("attention", 6976),
    ("bgemm", 103370),
    ("deepseek_v3", 9993),
    ("e2e_rmsnorm", 3660),
    ("flashinfer_decode", 2282),
    ("split_kv_decode", 15678),
    ("planned_decode", 55023),
    ("planned_decode_naive", 140744),
    ("binary_expansion", 81530),
    ("binary_expansion_naive", 228104),
    ("tests_std_nn", 48618),
    ("tests_std_attention", 139306),
    ("tests_std_moe", 110214),
    ("tests_std_deepseek", 172969),
    ("lightning_indexer", 13115),
    ("llama", 16338),
    ("softmax", 77581),
    ("csp_pipeline", 6762),
    ("swiglu_mlp", 58332),
];

#[test]
fn every_example_has_recorded_deterministic_cycles_on_the_default_model() {
    let mut wrong = Vec::new();
    let mut counted = 0;
    for e in &manifest() {
        let a = run(e, "ascend910b", false);
        assert_passed(e, &a);
        // Kernels on two host threads: the same cycles and the same bits.
        let b = run_threads(e, "ascend910b", false, 2);
        assert_passed(e, &b);
        assert_eq!(a.stats.total_cycles, b.stats.total_cycles, "{}", e.name);
        for (x, y) in a.tensors.iter().zip(&b.tensors) {
            assert_eq!(x.to_f64(), y.to_f64(), "{}", e.name);
        }
        // The count the progress display's ETA divides by, where loops tell it without data.
        let p = lower(&e.program);
        let (_, w) = p.select_run(e.schedule.as_deref()).expect("a workload");
        let params: Vec<_> = p.params.iter().map(|q| q.default).collect();
        if let Some(n) = wsp_ir::counts::static_task_total(&p, w, &params) {
            assert_eq!(n, a.stats.tasks, "{}: the static task count", e.name);
            counted += 1;
        }
        let want = ASCEND910B_CYCLES
            .iter()
            .find(|(n, _)| *n == e.name)
            .unwrap_or_else(|| {
                panic!(
                    "record {}'s ascend910b total_cycles ({}) in ASCEND910B_CYCLES",
                    e.name, a.stats.total_cycles
                )
            })
            .1;
        if a.stats.total_cycles != want {
            wrong.push(format!(
                "{}: {} (recorded {want})",
                e.name, a.stats.total_cycles
            ));
        }
    }
    assert!(wrong.is_empty(), "ascend910b total_cycles: {wrong:?}");
    assert!(
        counted >= 10,
        "only {counted} examples have a static task count"
    );
}

/// The JIT and the reference interpreter give bit-identical outputs on every example, and
/// the JIT compiles every kernel of every example (none falls back to the interpreter).
#[test]
fn jit_and_interpreter_agree_bit_for_bit_on_every_example() {
    for e in &manifest() {
        let j = run(e, "ascend910b", false);
        for k in &j.kernels {
            assert_eq!(k.engine, Engine::Jit, "{}: kernel `{}`", e.name, k.name);
        }
        let i = run(e, "ascend910b", true);
        assert!(i
            .kernels
            .iter()
            .all(|k| matches!(k.engine, Engine::Interpreter(_))));
        for (k, (a, b)) in j.tensors.iter().zip(&i.tensors).enumerate() {
            let (a, b) = (a.to_f64(), b.to_f64());
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert!(
                    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                    "{}: tensor #{k} differs: {x} vs {y}",
                    e.name
                );
            }
        }
        assert_eq!(j.stats.total_cycles, i.stats.total_cycles, "{}", e.name);
    }
}
