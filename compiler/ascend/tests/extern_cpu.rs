//! An extern kernel's own Ascend source through `wsp emit --target ascend`: the tree compiles the
//! file in place of a generated kernel, and the CPU build matches `wsp run` (which runs the
//! kernel's `sim:` reference) in tasks, edges, cycles and every output byte.

mod cpu_tree;

use std::process::Command;

use cpu_tree::*;

#[test]
fn an_extern_kernel_runs_its_own_ascend_source() {
    let programs = repo().join("compiler/ascend/tests/programs");
    let file = programs.join("extern.wsp");
    let dir = scratch("extern");
    let tree = dir.join("tree");
    let o = Command::new(wsp())
        .args(["emit", "--target", "ascend", "--arch", "ascend910b"])
        .arg(&file)
        .arg("-o")
        .arg(&tree)
        .output()
        .expect("wsp runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ours = std::fs::read(programs.join("twice_ascend.cpp")).expect("source");
    assert_eq!(
        std::fs::read(tree.join("kernels/twice.cpp")).expect("copied"),
        ours,
        "the extern source is the kernel's translation unit, as given"
    );
    let host = build_tree(&tree);
    let got = run_host(&host, &programs, &dir.join("res"));
    let want = reference(&file, "ascend910b", &dir.join("ref"));
    assert_eq!(got, want, "(tasks, edges, total_cycles)");
    for out in ["C.npy", "D.npy"] {
        assert_eq!(
            std::fs::read(dir.join("res").join(out)).expect("ours"),
            std::fs::read(dir.join("ref").join(out)).expect("wsp run's"),
            "{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
