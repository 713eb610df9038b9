//! The host side built and run on the CPU: emitted trees (with hand-written C kernels, so the
//! host side is tested on its own) are configured with CMake, built against the runtime's
//! static library, run, and compared with `wsp run`: outputs bit for bit, tasks, edges and
//! cycles.

mod cpu_tree;

use std::path::{Path, PathBuf};

use cpu_tree::*;
use wsp_arch::Arch;
use wsp_ascend::host::{emit_host, HostKernel, HostOptions};
use wsp_backend::FileTree;

/// Generic C kernels over whole regions (row-major order of their elements): `wsp_k_add_f32`
/// (out = a + b) and `wsp_k_copy` (out = in, byte for byte).
const C_KERNELS: &str = r#"
#include <string.h>
#include "wsp_task.h"

static int64_t elem(const struct wsp_raw_arg *a, int64_t i) {
    int64_t flat = 0, rest = i, idx[WSP_MAX_RANK];
    for (int64_t d = (int64_t)a->rank - 1; d >= 0; d--) { idx[d] = rest % a->extents[d]; rest /= a->extents[d]; }
    for (uint64_t d = 0; d < a->rank; d++) flat = flat * a->dims[d] + a->offsets[d] + a->strides[d] * idx[d];
    return flat;
}

static int64_t count(const struct wsp_raw_arg *a) {
    int64_t n = 1;
    for (uint64_t d = 0; d < a->rank; d++) n *= a->extents[d];
    return n;
}

int32_t wsp_k_add_f32(const struct wsp_raw_task *t) {
    if (t->nargs != 3 || t->nscalars != 6) return 1;
    const struct wsp_raw_arg *a = &t->args[0], *b = &t->args[1], *c = &t->args[2];
    for (int64_t i = 0; i < count(c); i++)
        ((float *)c->base)[elem(c, i)] = ((const float *)a->base)[elem(a, i)] + ((const float *)b->base)[elem(b, i)];
    return 0;
}

/* y = x * s over f32 (the parameters x, s, y: scalars [x rows, x cols, s as f64 bits, ...]). */
int32_t wsp_k_scale_f32(const struct wsp_raw_task *t) {
    if (t->nargs != 2 || t->nscalars != 5) return 1;
    double s;
    memcpy(&s, &t->scalars[2], 8);
    const struct wsp_raw_arg *x = &t->args[0], *y = &t->args[1];
    for (int64_t i = 0; i < count(y); i++)
        ((float *)y->base)[elem(y, i)] = ((const float *)x->base)[elem(x, i)] * (float)s;
    return 0;
}

int32_t wsp_k_copy(const struct wsp_raw_task *t) {
    if (t->nargs != 2) return 1;
    const struct wsp_raw_arg *x = &t->args[0], *y = &t->args[1];
    for (int64_t i = 0; i < count(y); i++)
        memcpy(y->base + elem(y, i) * y->elem_size, x->base + elem(x, i) * x->elem_size, y->elem_size);
    return 0;
}
"#;

fn opts() -> HostOptions {
    HostOptions {
        arch_name: "ascend910b".into(),
        schedule: None,
        runtime_lib: built().1.display().to_string(),
        standin_include: vec![],
    }
}

/// Emits `file` with the given hand-written kernels (program kernel name → C entry), builds
/// and runs it, and compares it with `wsp run`.
fn check(file: &Path, entries: &[(&str, &str)], name: &str) {
    let program = lowered(file);
    let kernels: Vec<HostKernel> = program
        .kernels
        .iter()
        .map(|k| HostKernel {
            name: k.name.clone(),
            entry: entries
                .iter()
                .find(|(n, _)| *n == k.name)
                .map(|(_, e)| e.to_string())
                .expect("a hand-written kernel"),
            source: "kernels/generic.c".into(),
            unit: wsp_ascend::host::plan_class(k).into(),
        })
        .collect();
    let mut tree = FileTree::new();
    tree.add("kernels/generic.c", C_KERNELS).expect("a path");
    emit_host(
        &program,
        &Arch::builtin("ascend910b").expect("built in"),
        &kernels,
        &opts(),
        &mut tree,
    )
    .unwrap_or_else(|d| panic!("{d:?}"));
    let dir = scratch(name);
    write_tree(&tree, &dir.join("tree"));
    let host = build_tree(&dir.join("tree"));
    let data = file.parent().expect("a directory");
    let got = run_host(&host, data, &dir.join("res"));
    let want = reference(file, "ascend910b", &dir.join("ref"));
    // Kernels on a pool of host threads: the same results, graph and cycles.
    let threaded = run_host_with(&host, data, &dir.join("res2"), &["--threads", "3"]);
    assert_eq!(threaded, got, "{name} with --threads 3");
    for e in std::fs::read_dir(dir.join("res")).expect("results") {
        let e = e.expect("an entry");
        let n = e.file_name();
        if n != "stats.json" {
            let b = std::fs::read(dir.join("res2").join(&n)).expect("the threaded run's output");
            assert!(
                std::fs::read(e.path()).expect("read") == b,
                "{name}: {n:?} with --threads 3"
            );
        }
    }
    assert_eq!(got, want, "(tasks, edges, total_cycles) of {name}");
    let mut outputs = 0;
    for t in program
        .tensors
        .iter()
        .filter(|t| t.kind == wsp_ir::workload::TensorKind::Output)
    {
        let f = format!("{}.npy", t.name);
        let a = std::fs::read(dir.join("res").join(&f)).expect("wsp_host's output");
        let b = std::fs::read(dir.join("ref").join(&f)).expect("wsp run's output");
        assert!(a == b, "{name}: {f} differs from wsp run's");
        outputs += 1;
    }
    assert!(outputs > 0);
    // Passed: the build (a static binary per tree) is not kept.
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tensor_data_add_runs_as_wsp_run_does() {
    let file = repo().join("examples/tensor_data_add/tensor_data_add.wsp");
    check(&file, &[("add_tile", "wsp_k_add_f32")], "tensor_data_add");
}

#[test]
fn initialisers_make_the_values_wsp_run_makes() {
    let dir = scratch("inits_src");
    let file = dir.join("inits.wsp");
    std::fs::write(
        &file,
        r#"
axis r = Dense[4]
input A: f16[4, 16] = random(seed: 7)
input B: bf16[4, 16] = random(seed: 11)
input C: f32[4, 16] = random(seed: 3)
input D: i32[4, 16] = full(-3)
input E: f64[4, 16] = ones()
input F: i8[4] = [1, -2, 3, 127]
output A2: f16[4, 16]
output B2: bf16[4, 16]
output C2: f32[4, 16]
output D2: i32[4, 16]
output E2: f64[4, 16]
output F2: i8[4]

kernel cp16(x: in f16[1, 16], y: out f16[1, 16]) { y = x }
kernel cpb(x: in bf16[1, 16], y: out bf16[1, 16]) { y = x }
kernel cp32(x: in f32[1, 16], y: out f32[1, 16]) { y = x }
kernel cpi(x: in i32[1, 16], y: out i32[1, 16]) { y = x }
kernel cp64(x: in f64[1, 16], y: out f64[1, 16]) { y = x }
kernel cp8(x: in i8[1, 4], y: out i8[1, 4]) { y = x }

workload copy {
    for i in P(r) {
        cp16[i](x: A[i], y: A2[i])
        cpb[i](x: B[i], y: B2[i])
        cp32[i](x: C[i], y: C2[i])
        cpi[i](x: D[i], y: D2[i])
        cp64[i](x: E[i], y: E2[i])
    }
    cp8[0](x: F, y: F2)
}
"#,
    )
    .expect("written");
    let k = [
        ("cp16", "wsp_k_copy"),
        ("cpb", "wsp_k_copy"),
        ("cp32", "wsp_k_copy"),
        ("cpi", "wsp_k_copy"),
        ("cp64", "wsp_k_copy"),
        ("cp8", "wsp_k_copy"),
    ];
    check(&file, &k, "inits");
}

/// Ragged and Sparse axes (the Sparse indices computed by a task the orchestration waits for),
/// `when` on tensor data, a DenseDyn axis, partial tiles (cycles from the extents table), a
/// scalar argument, `P.seq`, `combine` inside `sequential`, and every key of the schedule
/// (affinity, priority, streams) with a small task window.
#[test]
fn orchestration_features_run_as_wsp_run_does() {
    let dir = scratch("features_src");
    let file = dir.join("features.wsp");
    std::fs::write(&file, FEATURES).expect("written");
    let k = [
        ("cp", "wsp_k_copy"),
        ("cpi", "wsp_k_copy"),
        ("add", "wsp_k_add_f32"),
        ("cpp", "wsp_k_copy"),
        ("scale", "wsp_k_scale_f32"),
    ];
    check(&file, &k, "features");
}

const FEATURES: &str = r#"param N: u32 = 3
param M: u32 = 5
axis rows = Dense[4]
axis dyn = DenseDyn(N)
axis chunks = Dense[2]
input lens: i32[4] = [1, 0, 3, 2]
axis rag = Ragged(rows, lens)
input ptr: i32[5] = [0, 1, 1, 3, 4]
input idx0: i32[4] = [2, 0, 3, 1]
output idx: i32[4]
axis sel = Sparse(rows, ptr, idx)
input X: f32[4, 4, 8] = random(seed: 5)
input Y: f32[4, 2 * M] = random(seed: 6)
output A: f32[4, 4, 8]
output B: f32[4, 4, 8]
output C: f32[4, 2 * M]
output D: f32[4, 3, 8]
output E: f32[4, 8]

kernel cp(x: in f32[1, 8], y: out f32[1, 8]) { y = x }
kernel cpi(x: in i32[1, 4], y: out i32[1, 4]) { y = x }
kernel add(a: in f32[1, 8], b: in f32[1, 8], c: out f32[1, 8]) { c = a + b }
kernel cpp(x: in f32[1, ..8], y: out f32[1, ..8]) { y = x }
kernel scale(x: in f32[1, 8], s: f32, y: out f32[1, 8]) { y = x * s }

workload make_idx { for r in P.seq(rows) { when r == 0 { cpi[r](x: idx0, y: idx) } } }
workload ragged { for r in P(rows) { for t in P(rag[r]) { cp[r, t](x: X[r, t], y: A[r, t]) } } }
workload sparse { for r in P(rows) { for c in P.sel(sel[r]) { add[r, c](a: X[r, c], b: X[c, r], c: B[r, c]) } } }
workload partial { for r in P(rows) { for j in P.seq(chunks) { cpp[r, j](x: Y[r, 5 * j .. 5 * j + M], y: C[r, 5 * j .. 5 * j + M]) } } }
workload dynw { for r, i in P(rows, dyn) { scale[r, i](x: X[r, i], s: 2.5, y: D[r, i]) } }
workload branch {
    for r in P(rows) {
        when lens[r] > 1 { add[r](a: X[r, 0], b: X[r, 1], c: E[r]) }
        else { cp[r](x: X[r, 2], y: E[r]) }
    }
}
workload mid = combine(ragged, partial, dynw, branch)
workload all = sequential(make_idx, mid, sparse)

schedule main = all
    .dispatch(affinity(rows))
    .ready(priority(rows * 2 - 1))
    .streams(2)
    .stream_by(rows % 2)
    .task_window(4)
"#;

/// A tree of tensor_data_add with the hand-written kernel, built once.
fn add_tree(name: &str) -> (PathBuf, PathBuf) {
    let file = repo().join("examples/tensor_data_add/tensor_data_add.wsp");
    let program = lowered(&file);
    let kernels = vec![HostKernel {
        name: "add_tile".into(),
        entry: "wsp_k_add_f32".into(),
        source: "kernels/generic.c".into(),
        unit: "vector".into(),
    }];
    let mut tree = FileTree::new();
    tree.add("kernels/generic.c", C_KERNELS).expect("a path");
    emit_host(
        &program,
        &Arch::builtin("ascend910b").expect("built in"),
        &kernels,
        &opts(),
        &mut tree,
    )
    .unwrap_or_else(|d| panic!("{d:?}"));
    let dir = scratch(name);
    write_tree(&tree, &dir.join("tree"));
    (dir.join("tree"), dir)
}

#[test]
fn wsp_host_refuses_missing_and_mistyped_inputs_with_a_message() {
    let (tree, dir) = add_tree("bad_inputs");
    let host = build_tree(&tree);
    let run = |data: &Path| {
        std::process::Command::new(&host)
            .arg("--data")
            .arg(data)
            .arg("--out-dir")
            .arg(dir.join("res"))
            .output()
            .expect("wsp_host runs")
    };
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).expect("a directory");
    let o = run(&empty);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("tensor `A`: cannot open") && err.contains("a.npy"),
        "{err}"
    );
    // An f64 file for the f32 tensor A, and a wrong shape for B.
    let a = wsp_ir::tensor::HostTensor::from_f64(
        wsp_ir::dtype::DType::F64,
        vec![2, 2, 2, 32, 32],
        &vec![1.0; 8 * 1024],
    );
    std::fs::write(empty.join("a.npy"), wsp_ir::npy::encode_npy(&a)).expect("written");
    let o = run(&empty);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("holds <f8 (2,2,2,32,32); the program declares <f4 (2, 2, 2, 32, 32)"),
        "{err}"
    );
    let o = std::process::Command::new(&host).output().expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("usage: wsp_host --data DIR --out-dir RES"));
    assert!(!dir.join("res").join("C.npy").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cmake_explains_the_device_build_and_a_missing_runtime_library() {
    let (tree, dir) = add_tree("cmake_errors");
    let o = std::process::Command::new("cmake")
        .arg("-S")
        .arg(&tree)
        .arg("-B")
        .arg(dir.join("b1"))
        .output()
        .expect("cmake runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("-DWSP_BUILD_CPU=ON") && err.contains("CANN"),
        "{err}"
    );
    let o = std::process::Command::new("cmake")
        .arg("-S")
        .arg(&tree)
        .arg("-B")
        .arg(dir.join("b2"))
        .arg("-DWSP_BUILD_CPU=ON")
        .arg("-DWSP_RUNTIME_LIB=/nonexistent/libwsp_runtime_capi.a")
        .output()
        .expect("cmake runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("cargo build -p wsp-runtime-capi"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_archs_options_and_schedules_are_diagnostics() {
    use wsp_backend::{Backend, EmitOptions};
    let b = wsp_ascend::AscendBackend;
    assert_eq!(b.name(), "ascend");
    assert_eq!(b.archs(), vec!["ascend910b", "ascend950"]);
    // A `connect` is lowered onto the runtime's process API (run by `examples_cpu`).
    let csp = lowered(&repo().join("examples/csp_pipeline/csp_pipeline.wsp"));
    let emitted = b.emit(&csp, &EmitOptions::default());
    assert!(emitted.is_ok(), "{:?}", emitted.err());
    let add = lowered(&repo().join("examples/tensor_data_add/tensor_data_add.wsp"));
    let o = EmitOptions {
        arch: Some("aie-ml".into()),
        options: vec![],
        ..Default::default()
    };
    let d = refused(b.emit(&add, &o));
    assert!(d[0].message.contains("no architecture `aie-ml`"), "{d:?}");
    let o = EmitOptions {
        arch: None,
        options: vec![("fast".into(), "yes".into())],
        ..Default::default()
    };
    let d = refused(b.emit(&add, &o));
    assert!(d[0].message.contains("no option `fast`"), "{d:?}");
    let o = EmitOptions {
        arch: None,
        options: vec![("schedule".into(), "nope".into())],
        ..Default::default()
    };
    let d = refused(b.emit(&add, &o));
    assert!(d[0].message.contains("no schedule `nope`"), "{d:?}");
    // Placements the orchestration cannot honour are refused, never dropped.
    let mut placed = add.clone();
    placed.schedules[0]
        .directives
        .push(wsp_ir::workload::Directive::SpatialMap {
            rows: 1,
            cols: 2,
            row: wsp_ir::workload::DirValue::Int { value: 0 },
            col: wsp_ir::workload::DirValue::Int { value: 1 },
        });
    let d = refused(b.emit(&placed, &EmitOptions::default()));
    assert!(
        d.iter().any(|d| d.message.contains(".spatial_map(")
            && d.message.contains("not supported on Ascend")),
        "{d:?}"
    );
    // The default tree: kernels, stand-in, host side; the library next to the executable.
    let (tree, _) = b.emit(&add, &EmitOptions::default()).expect("emitted");
    for f in [
        "kernels/add_tile.cpp",
        "orchestration.c",
        "host.c",
        "wsp_program.h",
        "include/wsp_runtime.h",
        "include/wsp_task.h",
        "CMakeLists.txt",
        "plan.json",
    ] {
        assert!(tree.get(f).is_some(), "{f} missing");
    }
    let plan: serde_json::Value =
        serde_json::from_slice(tree.get("plan.json").expect("a plan")).expect("JSON");
    assert_eq!(plan["tasks"], 8);
    assert_eq!(plan["kernels"][0]["tasks"], 8);
    assert_eq!(plan["kernels"][0]["unit"], "vector");
    assert_eq!(plan["arch"], "ascend910b");
    // Without --arch, the schedule's `.target(...)` (as `wsp run`).
    let mut targeted = add.clone();
    targeted.schedules[0]
        .directives
        .push(wsp_ir::workload::Directive::Target {
            arch: "ascend950".into(),
        });
    let (t950, _) = b.emit(&targeted, &EmitOptions::default()).expect("emitted");
    let plan950: serde_json::Value =
        serde_json::from_slice(t950.get("plan.json").expect("a plan")).expect("JSON");
    assert_eq!(plan950["arch"], "ascend950");
    let cmake = String::from_utf8_lossy(tree.get("CMakeLists.txt").expect("cmake"));
    assert!(cmake.contains("libwsp_runtime_capi.a"), "{cmake}");
}

/// Processes: a rendezvous channel and a channel with a latency, tokens of values and of tasks,
/// `consume` binding fewer names than the token holds, `when` on tensor data inside a
/// process, and two replicas of one process.
#[test]
fn processes_run_as_wsp_run_does() {
    let dir = scratch("procs_src");
    let file = dir.join("procs.wsp");
    std::fs::write(&file, PROCS).expect("written");
    check(
        &file,
        &[("cp", "wsp_k_copy"), ("add", "wsp_k_add_f32")],
        "procs",
    );
}

const PROCS: &str = r#"axis rows = Dense[6]
input X: f32[6, 8] = random(seed: 9)
input flags: i32[6] = [1, 0, 1, 1, 0, 1]
output Y: f32[6, 8]
output Z: f32[6, 8]

kernel cp(x: in f32[1, 8], y: out f32[1, 8]) { y = x }
kernel add(a: in f32[1, 8], b: in f32[1, 8], c: out f32[1, 8]) { c = a + b }

channel work: Channel[depth: 0]
channel done: Channel[depth: 3, latency: 7]

process producer produces work {
    for r in P.seq(rows) { send work, (r, r * 2) }
}
process worker consumes work produces done {
    consume work as (i) {
        when flags[i] == 1 { send done, add[i](a: X[i], b: X[i], c: Y[i]) }
        else { send done, cp[i](x: X[i], y: Y[i]) }
    }
}
process finisher consumes done {
    consume done as j { cp[j](x: Y[j], y: Z[j]) }
}
workload pipe = connect(producer, replicate(worker, 2), finisher)

schedule main = pipe
    .dispatch(round_robin(3))
    .task_window(16)
"#;

/// The diagnostics of a refused emission (a tree is not printed: it is large).
fn refused<T>(
    r: Result<T, Vec<wsp_backend::BackendDiagnostic>>,
) -> Vec<wsp_backend::BackendDiagnostic> {
    match r {
        Ok(_) => panic!("emitted, not refused"),
        Err(d) => d,
    }
}
