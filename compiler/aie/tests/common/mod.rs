//! Shared by the AIE tests: lowering a program, emitting it, building and running the CPU
//! stand-in, and comparing its outputs with `wsp run` bit for bit.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use wsp_aie::AieBackend;
use wsp_backend::{Backend, BackendDiagnostic, EmitOptions, FileTree};

pub fn lower_text(key: &str, text: String) -> wsp_ir::Program {
    let mut ws = wsp_core::Workspace::new();
    ws.set_file(key, text);
    wsp_lower::lower(&ws, key).unwrap_or_else(|d| panic!("{key} did not lower: {d:#?}"))
}

pub fn emit(
    program: &wsp_ir::Program,
) -> Result<(FileTree, Vec<BackendDiagnostic>), Vec<BackendDiagnostic>> {
    emit_schedule(program, None)
}

/// [`emit`] of the schedule named `schedule` (`--option schedule=NAME`).
pub fn emit_schedule(
    program: &wsp_ir::Program,
    schedule: Option<&str>,
) -> Result<(FileTree, Vec<BackendDiagnostic>), Vec<BackendDiagnostic>> {
    AieBackend.emit(
        program,
        &EmitOptions {
            arch: Some("aie-ml".into()),
            options: schedule
                .map(|s| ("schedule".to_string(), s.to_string()))
                .into_iter()
                .collect(),
            ..Default::default()
        },
    )
}

/// The `aie:` sources of the program's extern kernels, read from `dir` as `wsp emit` reads
/// them beside the declaring file.
pub fn extern_sources(program: &wsp_ir::Program, dir: &Path) -> Vec<wsp_backend::ExternSource> {
    let mut out = Vec::new();
    for (i, k) in program.kernels.iter().enumerate() {
        for e in k.externs.iter().filter(|e| e.target == "aie") {
            out.push(wsp_backend::ExternSource {
                kernel: i,
                target: e.target.clone(),
                path: e.path.clone(),
                contents: std::fs::read(dir.join(&e.path)).expect("extern source"),
            });
        }
    }
    out
}

pub fn lower(path: &Path) -> wsp_ir::Program {
    let text = std::fs::read_to_string(path).expect("example exists");
    let mut ws = wsp_core::Workspace::new();
    let key = path.to_string_lossy().to_string();
    ws.set_file(&key, text);
    wsp_lower::lower(&ws, &key)
        .unwrap_or_else(|d| panic!("{} did not lower: {d:#?}", path.display()))
}

pub fn write_tree(tree: &FileTree, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    for (path, bytes) in tree.iter() {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, bytes).expect("write");
    }
}

pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Builds the stand-in; returns the executable.
pub fn build(dir: &Path, sources: &[String]) -> PathBuf {
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

pub fn mlir_opt_check(name: &str, design: &str, dir: &Path) {
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
    // The file as emitted: the only complaint may be the kernel calls' callees, which a stock
    // mlir-opt cannot resolve through the unloaded `aie` operations.
    let raw = dir.join("aie.mlir");
    std::fs::write(&raw, design).expect("write");
    let out = Command::new("mlir-opt-19")
        .arg("--allow-unregistered-dialect")
        .arg(&raw)
        .output()
        .expect("mlir-opt-19 runs");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    for line in err.lines().filter(|l| l.contains("error:")) {
        assert!(
            line.contains("'func.call' op") && line.contains("does not reference a valid function"),
            "{name}: mlir-opt-19 on aie.mlir as emitted: {err}"
        );
    }
}

/// Emits `program` (which must emit), checks `aie.mlir` with mlir-opt-19, builds and runs the
/// stand-in on the data of `data_dir`, and compares every output with `wsp run`. Returns the
/// number of outputs compared.
pub fn run_and_compare(
    name: &str,
    program: &wsp_ir::Program,
    data_dir: &Path,
    work: &Path,
) -> usize {
    run_and_compare_schedule(name, program, None, data_dir, work)
}

/// [`run_and_compare`] of the schedule named `schedule` (the emitted tree's and `wsp run`'s).
pub fn run_and_compare_schedule(
    name: &str,
    program: &wsp_ir::Program,
    schedule: Option<&str>,
    data_dir: &Path,
    work: &Path,
) -> usize {
    let opts = EmitOptions {
        arch: Some("aie-ml".into()),
        options: schedule
            .map(|s| ("schedule".to_string(), s.to_string()))
            .into_iter()
            .collect(),
        extern_sources: extern_sources(program, data_dir),
    };
    let (tree, _) = AieBackend
        .emit(program, &opts)
        .unwrap_or_else(|d| panic!("{name}: refused: {d:#?}"));
    let dir = work.join(name);
    write_tree(&tree, &dir);
    let design = String::from_utf8_lossy(tree.get("aie.mlir").expect("aie.mlir")).to_string();
    mlir_opt_check(name, &design, &dir);
    let (plan, _) = AieBackend.plan_schedule(program, schedule).expect("plans");
    let exe = build(&dir, &wsp_aie::cpu::sources(program, &plan));
    let res = dir.join("res");
    std::fs::create_dir_all(&res).expect("mkdir");
    let out = Command::new(&exe)
        .arg("--data")
        .arg(data_dir)
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
    // `wsp run` in process; outputs do not depend on the cost model (its default one).
    let mut o = wsp_sim::Options::new(
        wsp_arch::Arch::builtin("ascend910b").expect("arch"),
        data_dir.to_path_buf(),
    );
    o.schedule = schedule.map(str::to_string);
    let jit = wsp_jit::Jit::new();
    let run = wsp_sim::run(program, &jit, &o).unwrap_or_else(|e| panic!("{name}: wsp run: {e}"));
    let mut outputs = 0;
    for (i, t) in program.tensors.iter().enumerate() {
        if t.kind != wsp_ir::workload::TensorKind::Output {
            continue;
        }
        outputs += 1;
        let want = &run.tensors[i];
        // As its dtype: bf16 is stored as `<u2` bits.
        let got =
            wsp_ir::npy::read_npy_as(&res.join(format!("{}.npy", t.name)), t.dtype, &want.shape)
                .unwrap_or_else(|e| panic!("{name}: output {}: {e}", t.name));
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
    outputs
}
