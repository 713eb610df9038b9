//! Kernel operations of every family (f16, bf16, f32, i32; elementwise, transcendental,
//! reductions, rowtopk, select, cast, iota, full, matmul with accumulator, transpose, vars,
//! loops, sub-range stores, inout) through the AIE emitter: the CPU stand-in's outputs equal
//! `wsp run`'s bit for bit.

mod common;

use std::path::Path;
use wsp_backend::Backend;

#[test]
fn every_kernel_operation_matches_wsp_run_bit_for_bit() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let path = dir.join("ops.wsp");
    let program = common::lower(&path);
    let work = std::env::temp_dir().join(format!("wsp-aie-ops-{}", std::process::id()));
    let n = common::run_and_compare("ops", &program, &dir, &work);
    assert_eq!(n, 10);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn partial_tiles_match_wsp_run_bit_for_bit() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let program = common::lower(&dir.join("partial.wsp"));
    // The last task's tiles have 8 valid rows of 16.
    let (plan, _) = wsp_aie::AieBackend.plan(&program).expect("plans");
    assert_eq!(plan.tasks[2].tiles[0].valid, [8, 24]);
    let work = std::env::temp_dir().join(format!("wsp-aie-partial-{}", std::process::id()));
    assert_eq!(common::run_and_compare("partial", &program, &dir, &work), 6);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn an_extern_kernel_runs_its_own_aie_source() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs");
    let program = common::lower(&dir.join("extern.wsp"));
    let (tree, _) = wsp_aie::AieBackend
        .emit(
            &program,
            &wsp_backend::EmitOptions {
                extern_sources: common::extern_sources(&program, &dir),
                ..Default::default()
            },
        )
        .expect("emits");
    let ours = std::fs::read(dir.join("twice_aie.cc")).expect("source");
    assert_eq!(
        tree.get("kernels/twice.cc"),
        Some(&ours[..]),
        "the file is copied as given"
    );
    let work = std::env::temp_dir().join(format!("wsp-aie-extern-{}", std::process::id()));
    assert_eq!(common::run_and_compare("extern", &program, &dir, &work), 1);
    let _ = std::fs::remove_dir_all(&work);
    // Without the file's contents, the backend says so at the kernel.
    let d = wsp_aie::AieBackend
        .emit(&program, &wsp_backend::EmitOptions::default())
        .expect_err("refused");
    assert!(
        d[0].message.contains("twice_aie.cc") && d[0].at.is_some(),
        "{d:#?}"
    );
}
