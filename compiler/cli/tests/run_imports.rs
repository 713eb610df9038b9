//! End-to-end tests of `wsp run` on files that import modules: imported constants keep their
//! module's values, the schedules and expects of imported modules do not run, and outputs of
//! one name in two files are refused by `--out-dir`.

mod common;

use std::path::PathBuf;

use common::run::{tempdir, text, wsp};

/// Writes `files` (name, text) into a fresh directory.
fn files(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let d = tempdir(name);
    for (f, src) in files {
        std::fs::write(d.join(f), src).expect("write");
    }
    d
}

/// A module's names resolve in that module: an axis whose size is a constant its module
/// imports keeps that size in a program that declares the same name (the run used the root's
/// `N`), and imported constants fold wherever a constant is needed (channel depths, replica
/// counts, schedule arguments; they were E0505, E0407 and E0606), in constants of the file
/// too (`const M = R * 2` did not lower).
#[test]
fn imported_constants_keep_their_module_values() {
    let d = files(
        "imported-consts",
        &[
            ("consts.wsp", "const N = 4\nconst R = 2\nconst D = 8\n"),
            ("ax.wsp", "import consts.{N}\naxis tiles = Dense[N]\n"),
            (
                "main.wsp",
                "import ax.{tiles}
import consts.{R, D}
const N = 2
const M = R * 2
axis quad = Dense[M]
input X: f32[4, 4, 4] = random(seed: 1)
output Y: f32[4, 4, 4]
output Z: f32[4, 4, 4]
kernel copy(src: in f32[4, 4], dst: out f32[4, 4]) { dst = src }
channel c: Channel[depth: D]
process src produces c { for i in P.seq(tiles) { send c, i } }
process sink consumes c { consume c as i { copy[i](src: X[i], dst: Z[i]) } }
workload each { for i in P(quad) { copy[i](src: X[i], dst: Y[i]) } }
workload piped = connect(src, replicate(sink, R))
workload both = sequential(each, piped)
schedule main = both.dispatch(round_robin(D)).task_window(D)
expect tasks == 8
expect close(Y, X)
expect close(Z, X)
",
            ),
        ],
    );
    let out = wsp(&d, &["check", "main.wsp"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = wsp(&d, &["run", "main.wsp"]);
    let so = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{so}\n{}", text(&out.stderr));
    assert!(so.contains("expects       3/3 hold"), "{so}");
}

/// `wsp run` runs the given file's own schedule or workload, not a schedule of a module it
/// imports (which ran the module's workload, even before the file's own schedule when the
/// module's was `main`); only the file's own `expect`s are checked.
#[test]
fn a_run_ignores_the_schedules_and_expects_of_imported_modules() {
    let module = "axis t = Dense[2]
input X: f32[2, 4, 4] = random(seed: 1)
output Y: f32[2, 4, 4]
kernel copy(src: in f32[4, 4], dst: out f32[4, 4]) { dst = src }
workload mw { for i in P(t) { copy[i](src: X[i], dst: Y[i]) } }
schedule main = mw.dispatch(round_robin(2))
expect tasks == 99
";
    let mine = "output Z: f32[2, 4, 4]
workload w { for i in P(t) { copy[i](src: X[i], dst: Z[i]) } }
expect close(Z, X)
expect tasks == 2
";
    let d = files(
        "imported-schedules",
        &[
            ("m.wsp", module),
            ("named.wsp", &format!("import m.{{t, X, copy}}\n{mine}")),
            ("kernel_only.wsp", "import m.{copy}\n"),
            ("entry.wsp", "import m.{main}\n"),
            (
                "whole.wsp",
                &format!("import m\n{mine}schedule s = w.dispatch(round_robin(1))\n"),
            ),
        ],
    );
    // A schedule imported by name is the file's to run, and no unused import.
    let out = wsp(&d, &["check", "entry.wsp"]);
    assert!(
        !text(&out.stderr).contains("W0103"),
        "{}",
        text(&out.stderr)
    );
    let out = wsp(&d, &["run", "entry.wsp"]);
    let so = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{so}\n{}", text(&out.stderr));
    assert!(so.contains("schedule `main`"), "{so}");
    // A file that imports a kernel only has no workload of its own to run.
    let out = wsp(&d, &["run", "kernel_only.wsp"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("no workload to run"),
        "{}",
        text(&out.stderr)
    );
    for f in ["named.wsp", "whole.wsp"] {
        let out = wsp(&d, &["run", f]);
        let so = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{f}: {so}\n{}",
            text(&out.stderr)
        );
        assert!(so.contains("expects       2/2 hold"), "{f}: {so}");
    }
}

/// Two outputs of one name (the file's own and an imported module's) cannot both be `NAME.npy`
/// in `--out-dir`: a usage error naming both files, and nothing written.
#[test]
fn outputs_of_one_name_in_two_files_are_refused_by_out_dir() {
    let lib = "const N = 3
axis rows = Dense[N]
input X: f32[N, 8] = random(seed: 1)
output Y: f32[N, 8]
kernel cp(src: in f32[1, 8], dst: out f32[1, 8]) { dst = src }
workload lw { for i in P(rows) { cp[i](src: X[i], dst: Y[i]) } }
";
    let main = "import lib.{lw}
const N = 7
axis rows = Dense[N]
input X: f32[N, 8] = random(seed: 2)
output Y: f32[N, 8]
kernel cp(src: in f32[1, 8], dst: out f32[1, 8]) { dst = src }
workload own { for i in P(rows) { cp[i](src: X[i], dst: Y[i]) } }
workload both = sequential(own, lw)
schedule main = both
";
    let d = files("same-output", &[("lib.wsp", lib), ("main.wsp", main)]);
    let out = wsp(&d, &["run", "main.wsp", "--out-dir", "o"]);
    let se = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{se}");
    assert!(se.contains("two outputs are named `Y`"), "{se}");
    assert!(!d.join("o").exists(), "a directory was left behind");
    // Without `--out-dir` the run is fine.
    let out = wsp(&d, &["run", "main.wsp"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
