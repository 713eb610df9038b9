//! Every example of `examples/manifest.toml` on the AIE target: either the emitter refuses it
//! with one of the expected diagnostics below, or the emitted tree's CPU stand-in is built
//! (CMake, else g++ directly), run, and every output tensor equals `wsp run`'s bit for bit
//! (the kernels compute wsp's arithmetic exactly), and `aie.mlir` is verified by `mlir-opt-19
//! --allow-unregistered-dialect` (Debian's mlir-19-tools: required when `CI=true`, else the
//! check is skipped with a note).

use std::path::{Path, PathBuf};
use std::process::Command;

use wsp_aie::AieBackend;
use wsp_backend::{Backend, EmitOptions, FileTree, Severity};

/// Examples the AIE target refuses, with a piece of the expected error and why.
const REFUSED: &[(&str, &str, &str)] = &[
    (
        "lightning_indexer",
        "cannot place the tasks of this `when`: its condition reads tensor data",
        "its tasks are chosen by a `when` on a tensor's contents (the effective sequence length)",
    ),
    (
        "llama_layer",
        "bytes of data memory",
        "its attention tiles and intermediates need about 600 KiB per core; a compute tile has 64 KiB",
    ),
    (
        "moe_routing",
        "cannot place a loop over the Sparse axis `routing`",
        "the experts a token visits are tensor data (CSR routing)",
    ),
    (
        "varlen_attention",
        "cannot place a loop over the Ragged axis `tiles`",
        "the sequence lengths are tensor data",
    ),
];

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn manifest() -> Vec<(String, PathBuf)> {
    let text = std::fs::read_to_string(examples_dir().join("manifest.toml")).expect("manifest");
    let table: toml::Table = text.parse().expect("manifest parses");
    table
        .iter()
        .map(|(name, v)| {
            (
                name.clone(),
                examples_dir().join(v["program"].as_str().expect("program")),
            )
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

fn write_tree(tree: &FileTree, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    for (path, bytes) in tree.iter() {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, bytes).expect("write");
    }
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Builds the stand-in; returns the executable.
fn build(dir: &Path, sources: &[String]) -> PathBuf {
    if have("cmake") {
        let out = Command::new("cmake")
            .args(["-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE=Release"])
            .current_dir(dir)
            .output()
            .expect("cmake runs");
        assert!(
            out.status.success(),
            "cmake configure: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = Command::new("cmake")
            .args(["--build", "build"])
            .current_dir(dir)
            .output()
            .expect("cmake runs");
        assert!(
            out.status.success(),
            "cmake build in {}: {}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        return dir.join("build/aie_cpu");
    }
    assert!(
        !ci(),
        "cmake is required under CI=true (apt-get install -y cmake)"
    );
    eprintln!("note: cmake not found; building the stand-in with g++ directly");
    std::fs::create_dir_all(dir.join("build")).expect("mkdir");
    let out = Command::new("g++")
        .args([
            "-std=c++17",
            "-O2",
            "-ffp-contract=off",
            "-fno-fast-math",
            "-DWSP_AIE_CPU=1",
            "-Ikernels",
            "-Icpu",
            "-o",
            "build/aie_cpu",
        ])
        .args(sources)
        .arg("-lm")
        .current_dir(dir)
        .output()
        .expect("g++ runs");
    assert!(
        out.status.success(),
        "g++: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("build/aie_cpu")
}

fn mlir_opt_check(name: &str, design: &str, dir: &Path) {
    if !have("mlir-opt-19") {
        assert!(
            !ci(),
            "mlir-opt-19 is required under CI=true (apt-get install -y mlir-19-tools)"
        );
        eprintln!("note: mlir-opt-19 not found; {name}: aie.mlir not verified");
        return;
    }
    let path = dir.join("aie.check.mlir");
    std::fs::write(&path, wsp_aie::mlir::for_stock_mlir_opt(design)).expect("write");
    let out = Command::new("mlir-opt-19")
        .arg("--allow-unregistered-dialect")
        .arg(&path)
        .output()
        .expect("mlir-opt-19 runs");
    assert!(
        out.status.success(),
        "{name}: mlir-opt-19 rejects aie.mlir: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_example_emits_and_matches_wsp_run_or_is_refused_with_a_reason() {
    let base = std::env::temp_dir().join(format!("wsp-aie-examples-{}", std::process::id()));
    let mut emitted = 0;
    let mut summary: Vec<String> = Vec::new();
    let mut failures = Vec::new();
    for (name, path) in manifest() {
        let r = std::panic::catch_unwind(|| check(&base, &name, &path));
        match r {
            Ok(Some(line)) => {
                emitted += 1;
                summary.push(line);
            }
            Ok(None) => summary.push(format!("{name}: refused as expected")),
            Err(e) => failures.push(format!(
                "{name}: {}",
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )),
        }
    }
    eprintln!("{}", summary.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(emitted >= 1, "no example emitted");
}

/// One example: `Some(summary)` when it emitted and matched, `None` when refused as expected.
fn check(base: &Path, name: &str, path: &Path) -> Option<String> {
    let name = name.to_string();
    let path = path.to_path_buf();
    {
        let program = lower(&path);
        let result = AieBackend.emit(
            &program,
            &EmitOptions {
                arch: Some("aie-ml".into()),
                options: Vec::new(),
            },
        );
        let expected = REFUSED.iter().find(|(n, _, _)| *n == name);
        let (tree, _warnings) = match (result, expected) {
            (Err(diags), Some((_, want, _))) => {
                assert!(
                    diags
                        .iter()
                        .any(|d| d.severity == Severity::Error && d.message.contains(want)),
                    "{name}: refused, but not with `{want}`: {diags:#?}"
                );
                return None;
            }
            (Err(diags), None) => panic!("{name}: refused unexpectedly: {diags:#?}"),
            (Ok(_), Some((_, want, _))) => {
                panic!("{name}: expected a refusal (`{want}`), but it emitted")
            }
            (Ok(x), None) => x,
        };
        let dir = base.join(&name);
        write_tree(&tree, &dir);
        let design = String::from_utf8_lossy(tree.get("aie.mlir").expect("aie.mlir")).to_string();
        mlir_opt_check(&name, &design, &dir);

        let (plan, _) = AieBackend.plan(&program).expect("plans");
        let exe = build(&dir, &wsp_aie::cpu::sources(&program, &plan));
        let res = dir.join("res");
        std::fs::create_dir_all(&res).expect("mkdir");
        let data = wsp_sim_base(&path);
        let out = Command::new(&exe)
            .arg("--data")
            .arg(&data)
            .arg("--out-dir")
            .arg(&res)
            .output()
            .expect("stand-in runs");
        assert!(
            out.status.success(),
            "{name}: the stand-in failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );

        // `wsp run` in process.
        let mut o = wsp_sim::Options::new(
            // Outputs do not depend on the cost model; `wsp run`'s default one.
            wsp_arch::Arch::builtin("ascend910b").expect("arch"),
            wsp_sim::base_dir_of(&path),
        );
        o.schedule = None;
        let jit = wsp_jit::Jit::new();
        let run =
            wsp_sim::run(&program, &jit, &o).unwrap_or_else(|e| panic!("{name}: wsp run: {e}"));
        let mut outputs = 0;
        for (i, t) in program.tensors.iter().enumerate() {
            if t.kind != wsp_ir::workload::TensorKind::Output {
                continue;
            }
            outputs += 1;
            let got = wsp_ir::npy::read_npy(&res.join(format!("{}.npy", t.name)))
                .unwrap_or_else(|e| panic!("{name}: output {}: {e}", t.name));
            let want = &run.tensors[i];
            assert_eq!(got.shape, want.shape, "{name}: shape of {}", t.name);
            let (g, w) = (got.data.to_bytes(t.dtype), want.data.to_bytes(t.dtype));
            let differ = g
                .chunks(t.dtype.size_bytes())
                .zip(w.chunks(t.dtype.size_bytes()))
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(
                differ, 0,
                "{name}: {differ} elements of `{}` differ from wsp run",
                t.name
            );
        }
        assert!(outputs > 0, "{name} has no output");
        let _ = std::fs::remove_dir_all(&dir);
        Some(format!(
            "{name}: emitted, {outputs} outputs bit-identical to wsp run"
        ))
    }
}

fn wsp_sim_base(path: &Path) -> PathBuf {
    wsp_sim::base_dir_of(path)
}
