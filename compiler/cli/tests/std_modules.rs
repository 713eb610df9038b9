//! The standard library against NumPy: each module `std/M.wsp` has a program
//! `tests/std/M/M.wsp` that calls every kernel of the module (or, for a module of workloads
//! such as std.llama, runs them) on NumPy-generated data and compares each result with a NumPy
//! golden (`gen.py` beside it, or the example whose data it takes). Every such program must run
//! with its expectations holding — with the arguments of an `args` file beside it, if any
//! (`--input NAME=PATH`, relative to its directory) — and every std kernel must be called by
//! its module's program.

mod common;

use std::path::{Path, PathBuf};

use common::run::{text, wsp};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The std modules (`std/*.wsp`), by name.
fn modules() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("std"))
        .expect("std/")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "wsp"))
        .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}

/// The kernels a module declares (`kernel NAME(` at the start of a line).
fn kernels(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| l.strip_prefix("kernel "))
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

#[test]
fn every_std_kernel_is_checked_against_numpy() {
    let mods = modules();
    assert!(mods.len() >= 3, "{mods:?}");
    for m in &mods {
        let program = repo().join("tests/std").join(m).join(format!("{m}.wsp"));
        let source = std::fs::read_to_string(&program)
            .unwrap_or_else(|_| panic!("std.{m} has no test program {}", program.display()));
        let module =
            std::fs::read_to_string(repo().join("std").join(format!("{m}.wsp"))).expect("module");
        let ks = kernels(&module);
        assert!(
            !ks.is_empty() || module.lines().any(|l| l.starts_with("workload ")),
            "std.{m} declares neither a kernel nor a workload"
        );
        for k in &ks {
            assert!(
                source.contains(&format!("{k}[")),
                "std.{m}'s kernel `{k}` is not called by {}",
                program.display()
            );
        }
        assert!(source.contains("expect close"), "{}", program.display());
        let dir = program.parent().expect("dir");
        let file = format!("{m}.wsp");
        let extra = std::fs::read_to_string(dir.join("args")).unwrap_or_default();
        let mut args = vec!["run", "-q", file.as_str()];
        args.extend(extra.split_whitespace());
        let o = wsp(dir, &args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "std.{m}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
    }
}

#[test]
fn the_test_sees_a_kernel_left_out() {
    // The coverage rule reads declarations as the modules write them.
    let ks = kernels(
        "/// doc\nkernel a_1(x: in f32[1, 1]) {}\nconst K = 1\nkernel b(y: in f32[1, 1]) {}\n",
    );
    assert_eq!(ks, ["a_1", "b"]);
}

/// std.llama is parameterised by its tile rows and head dim as well as its length: at 192
/// tokens in 32 × 64 tiles (`tests/std/llama/tiles_32x64`, whose `args` set them) it runs
/// 16T + 3T² tasks for T = 6 and matches NumPy at those sizes.
#[test]
fn std_llama_runs_at_other_tile_sizes() {
    let dir = repo().join("tests/std/llama/tiles_32x64");
    let extra = std::fs::read_to_string(dir.join("args")).expect("args");
    assert!(extra.contains("TILE_ROWS=32") && extra.contains("HEAD_DIM=64"));
    let mut args = vec!["run", "tiles_32x64.wsp", "--stats", "json"];
    args.extend(extra.split_whitespace());
    let o = wsp(&dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stats");
    assert_eq!(stats["stats"]["tasks"], 16 * 6 + 3 * 36);
    assert!(text(&o.stderr).contains("1/1 hold"), "{}", text(&o.stderr));
}
