//! End-to-end tests of the `wsp` binary: exit codes, formats, walking, imports.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wsp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wsp"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run wsp")
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wsp-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const CLEAN: &str = "axis rows = Dense[4]\ninput X: f32[4, 8, 8] = load(\"x.npy\")\noutput Y: f32[4, 8, 8]\nkernel copy(x: in f32[8, 8], y: out f32[8, 8]) {\n    y = x\n}\nworkload w {\n    for i in P(rows) { copy[i](x: X[i], y: Y[i]) }\n}\n";

#[test]
fn clean_file_exits_zero() {
    let d = tempdir("clean");
    std::fs::write(d.join("a.wsp"), CLEAN).unwrap();
    let o = wsp(&d, &["check", "a.wsp"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("checked 1 file: 0 errors"));
}

#[test]
fn errors_exit_one_and_render_location() {
    let d = tempdir("err");
    std::fs::write(d.join("a.wsp"), CLEAN.replace("y = x", "y = xx")).unwrap();
    let o = wsp(&d, &["check", "a.wsp"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("E0101") && err.contains("a.wsp:5:9"), "{err}");
}

#[test]
fn json_format_is_an_array_with_positions() {
    let d = tempdir("json");
    std::fs::write(d.join("a.wsp"), CLEAN.replace("y = x", "y = xx")).unwrap();
    let o = wsp(&d, &["check", "--format", "json", "a.wsp"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.trim_start().starts_with('['), "{out}");
    // One diagnostic a line.
    assert!(
        out.lines()
            .nth(1)
            .is_some_and(|l| l.contains("\"code\":\"E0101\"")),
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let d = &v[0];
    assert_eq!(d["code"], "E0101");
    assert_eq!(
        (&d["labels"][0]["line"], &d["labels"][0]["column"]),
        (&5.into(), &9.into())
    );
    assert_eq!(d["fixes"][0]["edits"][0]["replacement"], "x");
}

#[test]
fn sarif_format() {
    let d = tempdir("sarif");
    std::fs::write(d.join("a.wsp"), CLEAN.replace("y = x", "y = xx")).unwrap();
    let o = wsp(&d, &["check", "--format", "sarif", "a.wsp"]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("\"version\": \"2.1.0\"") && out.contains("\"ruleId\": \"E0101\""),
        "{out}"
    );
}

#[test]
fn directories_are_walked_and_imports_loaded() {
    let d = tempdir("walk");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(
        d.join("sub/lib.wsp"),
        "kernel copy(x: in f32[8, 8], y: out f32[8, 8]) {\n    y = x\n}\n",
    )
    .unwrap();
    let main = "import lib.{copy}\naxis rows = Dense[4]\ninput X: f32[4, 8, 8] = load(\"x.npy\")\noutput Y: f32[4, 8, 8]\nworkload w {\n    for i in P(rows) { copy[i](x: X[i], y: Y[i]) }\n}\n";
    std::fs::write(d.join("sub/main.wsp"), main).unwrap();
    let o = wsp(&d, &["check", "."]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("checked 2 files"));
    // A missing module is an error at the import.
    std::fs::write(
        d.join("sub/main.wsp"),
        main.replace("lib.{copy}", "nolib.{copy}"),
    )
    .unwrap();
    let o = wsp(&d, &["check", "sub/main.wsp"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("E0103"), "{err}");
    // Said as a module not found, not as a file that could not be read.
    assert!(err.contains("cannot find module `nolib`"), "{err}");
}

#[test]
fn deny_warnings_turns_warnings_into_failure() {
    let d = tempdir("deny");
    let src = format!("{CLEAN}schedule s = w.dispatch(work_steal).dispatch(work_steal)\n");
    std::fs::write(d.join("a.wsp"), src).unwrap();
    assert_eq!(wsp(&d, &["check", "a.wsp"]).status.code(), Some(0));
    assert_eq!(
        wsp(&d, &["check", "--deny", "warnings", "a.wsp"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(
        wsp(&d, &["check", "--deny", "bogus", "a.wsp"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn usage_and_io_problems_exit_two() {
    let d = tempdir("io");
    assert_eq!(wsp(&d, &["check", "missing.wsp"]).status.code(), Some(2));
    std::fs::write(d.join("bad.wsp"), [0xff, 0xfe, 0x00]).unwrap();
    let o = wsp(&d, &["check", "bad.wsp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not valid UTF-8"));
    assert_eq!(wsp(&d, &["frobnicate"]).status.code(), Some(2));
}

#[test]
fn explain_prints_and_rejects_unknown_codes() {
    let d = tempdir("explain");
    let o = wsp(&d, &["explain", "E0101"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("# E0101"));
    let o = wsp(&d, &["explain", "E0199"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("E0101"));
    // A renamed code leads to its new one.
    let o = wsp(&d, &["explain", "W0504"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("# E0509"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`W0504` is now `E0509`"));
}

#[test]
fn explain_types_prints_workload_types() {
    let d = tempdir("types");
    std::fs::write(d.join("a.wsp"), CLEAN).unwrap();
    let o = wsp(&d, &["check", "--explain-types", "a.wsp"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "w: Workload[Dense[4], copy, Independent]"
    );
}

#[test]
fn arch_flag_chooses_the_buffers_checked() {
    // 160 KB of vector tiles: fits ascend910b's UB, overflows AIE-ML's 64 KB data memory.
    let d = tempdir("arch");
    std::fs::write(
        d.join("k.wsp"),
        "kernel wide(x: in f32[80, 256], y: out f32[80, 256]) {\n    y = x * 2.0\n}\n",
    )
    .unwrap();
    let o = wsp(&d, &["check", "k.wsp"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for name in ["aie-ml", "aie_ml"] {
        let o = wsp(&d, &["check", "k.wsp", "--arch", name]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("E0701") && err.contains("163,840 bytes of DM on aie-ml"),
            "{err}"
        );
    }
    let o = wsp(
        &d,
        &["check", "k.wsp", "--explain-memory", "--arch", "ascend950"],
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "kernel wide on ascend950: UB 163,840 / 262,144 B"
    );
    let o = wsp(&d, &["check", "k.wsp", "--arch", "tpu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("known: ascend910b"));
}

#[test]
fn emit_ir_prints_the_program_ir() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/validated_matmul");
    let o = wsp(&root, &["emit", "--target", "ir", "validated_matmul.wsp"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("\"version\": 2") && out.contains("matmul_tile"),
        "{out}"
    );
    let o = wsp(
        &root,
        &["emit", "--target", "ascend", "validated_matmul.wsp"],
    );
    // A source tree goes to a directory, never to standard output.
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give `-o DIR`"));
    let d = tempdir("emit");
    std::fs::write(d.join("bad.wsp"), "workload w {\n    undefined_k[0]()\n}\n").unwrap();
    let o = wsp(&d, &["emit", "bad.wsp"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("E01"));
}

#[test]
fn target_flag_reports_capability_losses() {
    let d = tempdir("target");
    let src = format!("{CLEAN}schedule s = w\n    .timing(batched(8))\n");
    std::fs::write(d.join("a.wsp"), src).unwrap();
    // Without a target: no capability diagnostics.
    let o = wsp(&d, &["check", "a.wsp"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("W0710"));
    // On aie: a warning naming the directive and the backend; still exit 0.
    let o = wsp(&d, &["check", "--target", "aie", "a.wsp"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("W0710") && err.contains("batched") && err.contains("`aie`"),
        "{err}"
    );
    // Enforced on ascend: nothing to say.
    let o = wsp(&d, &["check", "--target", "ascend", "a.wsp"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("W0710"));
    // --strict makes the loss an error.
    let o = wsp(&d, &["check", "--target", "aie", "--strict", "a.wsp"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("E0711"));
    // Unknown target: usage error listing the known backends.
    let o = wsp(&d, &["check", "--target", "gpu", "a.wsp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("known: sim, ascend, aie"));
}

/// A folder named `std` of the user's own is checked like any other, not mistaken for the
/// embedded standard library (and the toolchain's `std/` sources check from the repository).
#[test]
fn a_users_std_folder_is_checked() {
    let d = tempdir("ownstd");
    std::fs::create_dir_all(d.join("std")).unwrap();
    std::fs::write(d.join("std/mine.wsp"), "const A = B\n").unwrap();
    let o = wsp(&d, &["check", "std/mine.wsp"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("E0101") && err.contains("std/mine.wsp"),
        "{err}"
    );

    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = wsp(&repo, &["check", "std/"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("checked ") && !err.contains("checked 0 files"),
        "{err}"
    );
}

/// `wsp emit` hands a backend the source file an extern kernel gives for it, read beside the
/// declaring file (a module's kernel beside the module); a file it cannot read is E0715 with
/// nothing emitted.
#[test]
fn emit_reads_extern_sources_beside_the_declaring_file() {
    let d = tempdir("extern-src");
    std::fs::create_dir_all(d.join("lib")).unwrap();
    std::fs::write(
        d.join("lib/ops.wsp"),
        "kernel twice_ref(a: in f32[8, 8], c: out f32[8, 8]) {\n    c = a + a\n}\n\
         extern kernel twice(a: in f32[8, 8], c: out f32[8, 8]) {\n    aie: \"twice.cc\",\n    sim: twice_ref\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("p.wsp"),
        "import lib.ops.{twice}\ninput A: f32[8, 8] = random(seed: 1)\noutput C: f32[8, 8]\n\
         workload w {\n    twice[0](a: A, c: C)\n}\n",
    )
    .unwrap();
    // Missing: E0715 at the kernel, exit 2, no tree.
    let o = wsp(&d, &["emit", "--target", "aie", "p.wsp", "-o", "out"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("E0715") && err.contains("twice.cc") && err.contains("ops.wsp"),
        "{err}"
    );
    assert!(!d.join("out").exists());
    // Present beside the module: copied into the tree as the kernel's source.
    let src =
        "extern \"C\" void wsp_twice(unsigned char*, unsigned char*, int, int, int, int) {}\n";
    std::fs::write(d.join("lib/twice.cc"), src).unwrap();
    let o = wsp(&d, &["emit", "--target", "aie", "p.wsp", "-o", "out"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("out/kernels/twice.cc")).unwrap(),
        src
    );
    // A directory is not a source file.
    std::fs::remove_file(d.join("lib/twice.cc")).unwrap();
    std::fs::create_dir(d.join("lib/twice.cc")).unwrap();
    let o = wsp(&d, &["emit", "--target", "aie", "p.wsp", "-o", "out2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a regular file"));
}

/// `wsp emit` reports each use of a capability its target does not enforce once, as the
/// checker's W0710 at its span; the backend's restatement of the matrix (W0721 carrying the
/// capability's key) is not shown again, while what the backend adds (the bf16 note) is.
#[test]
fn emit_reports_a_diagnosed_capability_once() {
    let d = tempdir("caps-once");
    std::fs::write(
        d.join("p.wsp"),
        "input A: f32[16, 16] = random(seed: 1)\noutput C: f32[16, 16]\n\
         kernel mm(a: in f32[16, 16], c: out f32[16, 16]) {\n    c = matmul(a, a)\n}\n\
         workload w {\n    mm[0](a: A, c: C)\n}\n\
         schedule main = w.task_window(64)\n",
    )
    .unwrap();
    let o = wsp(&d, &["emit", "--target", "aie", "p.wsp", "-o", "out"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(err.matches(".task_window(n)").count(), 1, "{err}");
    assert_eq!(err.matches("[W0710]").count(), 2, "{err}");
    assert_eq!(err.matches("[W0721]").count(), 1, "{err}");
    assert!(err.contains("bf16 rounding applies"), "{err}");
}

/// A path that names no regular file — a FIFO (whose open would block), `/dev/zero` (which
/// never ends) or a link to one — is refused at once, for an import, a root and an input.
#[cfg(unix)]
#[test]
fn fifos_and_devices_are_refused_without_reading() {
    let d = tempdir("not-regular");
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.wsp")).unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(d.join("fifo.wsp"))
        .status()
        .is_ok_and(|s| s.success());
    for m in ["zero", "fifo"] {
        if m == "fifo" && !fifo {
            continue;
        }
        std::fs::write(d.join("a.wsp"), format!("import {m}\nconst A = 1\n")).unwrap();
        let o = wsp(&d, &["check", "a.wsp"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{m}: {err}");
        // The link to a device leads to no .wsp file; the FIFO is no regular file.
        assert!(
            err.contains("E0103")
                && (err.contains("not a regular file") || err.contains("not a .wsp file")),
            "{m}: {err}"
        );
    }
    let o = wsp(&d, &["check", "zero.wsp"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a regular file"));
    std::fs::write(
        d.join("p.wsp"),
        "input A: f32[4, 4] = load(\"a.npy\")\noutput B: f32[4, 4]\nkernel k(a: in f32[4, 4], b: out f32[4, 4]) {\n    b = a\n}\nworkload w {\n    k[0](a: A, b: B)\n}\n",
    )
    .unwrap();
    let o = wsp(&d, &["run", "p.wsp", "--input", "A=/dev/zero"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("E0806") && err.contains("not a regular file"),
        "{err}"
    );
}

/// `wsp check --warn narrowing` turns on the opt-in lint; an unknown lint is a usage error.
#[test]
fn warn_turns_on_an_opt_in_lint() {
    let d = std::env::temp_dir().join(format!("wsp-cli-warn-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("n.wsp"),
        "kernel half(x: in f32[16, 16], y: out f16[16, 16]) {\n    y = x * 0.5\n}\n",
    )
    .unwrap();
    let o = wsp(&d, &["check", "n.wsp"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("W0201"));
    let o = wsp(&d, &["check", "n.wsp", "--warn", "narrowing"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("W0201") && err.contains("cast("), "{err}");
    let o = wsp(
        &d,
        &[
            "check",
            "n.wsp",
            "--warn",
            "narrowing",
            "--deny",
            "warnings",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let o = wsp(&d, &["check", "n.wsp", "--warn", "narrow"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("known: narrowing"));
}

/// `wsp emit --schedule NAME` emits that schedule on both built-ins (the backends' option
/// `schedule=NAME`); an unknown one is the backend's error and nothing is written.
#[test]
fn emit_takes_the_schedule_to_emit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/planned_decode");
    let d = tempdir("emit-schedule");
    let emit = |target: &str, schedule: &str, out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_wsp"))
            .args(["emit", "--target", target, "--schedule", schedule])
            .args(["planned_decode.wsp", "-o"])
            .arg(out)
            .current_dir(&root)
            .output()
            .expect("run wsp")
    };
    let o = emit("ascend", "naive", &d.join("tree"));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let plan = std::fs::read_to_string(d.join("tree/plan.json")).expect("plan.json");
    assert!(plan.contains("\"schedule\": \"naive\""), "{plan}");
    // AIE: the naive schedule's Ragged loop is what it refuses (not the planned one's axis).
    let o = emit("aie", "naive", &d.join("aie"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Ragged axis `tiles`") && !err.contains("axis `work`"),
        "{err}"
    );
    let o = emit("ascend", "nope", &d.join("none"));
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no schedule `nope`"));
    assert!(!d.join("none").exists());
    let o = wsp(
        &root,
        &["emit", "--schedule", "naive", "planned_decode.wsp"],
    );
    assert_eq!(o.status.code(), Some(2));
}
