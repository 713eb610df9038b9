//! What the CPU tests of emitted trees share: building `wsp` and the runtime library, lowering,
//! `wsp run` as the reference, CMake builds and runs of `wsp_host`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use wsp_backend::FileTree;
use wsp_ir::Program;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository")
}

/// `target/<profile>` (the test binary is in its `deps/`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf()
}

/// Builds `wsp` and the runtime's static library into this target directory, once.
pub fn built() -> &'static (PathBuf, PathBuf) {
    static B: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    B.get_or_init(|| {
        let dir = profile_dir();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "-q", "-p", "wsp", "-p", "wsp-runtime-capi"])
            .env("CARGO_TARGET_DIR", dir.parent().expect("target"))
            .current_dir(repo())
            .status()
            .expect("cargo runs");
        assert!(
            st.success(),
            "cargo build -p wsp -p wsp-runtime-capi failed"
        );
        (dir.join("wsp"), dir.join("libwsp_runtime_capi.a"))
    })
}

pub fn wsp() -> &'static Path {
    &built().0
}

pub fn lowered(file: &Path) -> Program {
    let o = Command::new(wsp())
        .args(["emit", "--target", "ir"])
        .arg(file)
        .output()
        .expect("wsp runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Program::from_json(&String::from_utf8_lossy(&o.stdout)).expect("IR")
}

/// `wsp run FILE --arch ARCH --out-dir DIR --stats json`: (tasks, edges, total_cycles).
pub fn reference(file: &Path, arch: &str, out: &Path) -> (u64, u64, u64) {
    reference_schedule(file, arch, None, out)
}

/// [`reference`] of the schedule named `schedule` (`--schedule`).
pub fn reference_schedule(
    file: &Path,
    arch: &str,
    schedule: Option<&str>,
    out: &Path,
) -> (u64, u64, u64) {
    let o = Command::new(wsp())
        .arg("run")
        .arg(file)
        .args(["--arch", arch])
        .args(schedule.map(|s| ["--schedule", s]).into_iter().flatten())
        .arg("--out-dir")
        .arg(out)
        .args(["--stats", "json", "-q"])
        .output()
        .expect("wsp runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let s = &v["stats"];
    let n = |k: &str| s[k].as_u64().expect("a count");
    (n("tasks"), n("edges"), n("total_cycles"))
}

pub fn write_tree(tree: &FileTree, dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    for (p, c) in tree.iter() {
        let f = dir.join(p);
        std::fs::create_dir_all(f.parent().expect("a parent")).expect("a directory");
        std::fs::write(f, c).expect("written");
    }
}

/// Configures and builds a tree; returns `wsp_host`.
pub fn build_tree(dir: &Path) -> PathBuf {
    build_tree_with(dir, &[])
}

/// `build_tree` with more CMake arguments (`-DPTO_ISA_ROOT=...`).
pub fn build_tree_with(dir: &Path, extra: &[String]) -> PathBuf {
    let b = dir.join("build");
    let o = Command::new("cmake")
        .arg("-S")
        .arg(dir)
        .arg("-B")
        .arg(&b)
        .arg("-DWSP_BUILD_CPU=ON")
        .arg(format!("-DWSP_RUNTIME_LIB={}", built().1.display()))
        .args(extra)
        .output()
        .expect("cmake runs");
    assert!(
        o.status.success(),
        "cmake: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new("cmake")
        .arg("--build")
        .arg(&b)
        .output()
        .expect("cmake runs");
    assert!(
        o.status.success(),
        "build: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    // The generated C compiles without a warning (-Wall -Wextra).
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("warning") && (l.contains("orchestration.c") || l.contains("host.c"))
        })
        .collect();
    assert!(
        warned.is_empty(),
        "warnings in the generated C:\n{}",
        warned.join("\n")
    );
    b.join("wsp_host")
}

/// Runs `wsp_host`; returns (tasks, edges, total_cycles) from its stats.json.
pub fn run_host(host: &Path, data: &Path, out: &Path) -> (u64, u64, u64) {
    run_host_with(host, data, out, &[])
}

/// `run_host` with more arguments (`--threads N`).
pub fn run_host_with(host: &Path, data: &Path, out: &Path, extra: &[&str]) -> (u64, u64, u64) {
    let o = Command::new(host)
        .args(extra)
        .arg("--data")
        .arg(data)
        .arg("--out-dir")
        .arg(out)
        .output()
        .expect("wsp_host runs");
    assert!(
        o.status.success(),
        "wsp_host: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("stats.json")).expect("stats.json"))
            .expect("JSON");
    let n = |k: &str| v[k].as_u64().expect("a count");
    (n("tasks"), n("edges"), n("total_cycles"))
}

pub fn scratch(name: &str) -> PathBuf {
    let d = profile_dir().join("wsp_ascend_host_tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a directory");
    d
}
