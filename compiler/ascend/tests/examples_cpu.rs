//! Every example of `examples/manifest.toml` through the whole backend (`wsp_ascend::emit`):
//! the tree is configured with CMake (`-DWSP_BUILD_CPU=ON`), built against the CPU stand-in
//! and the runtime's static library, and `wsp_host` run on the example's data; its outputs
//! must equal `wsp run`'s (bit for bit, or within the example's `expect close` tolerance) and
//! it must make the same number of tasks, dependency edges and cycles. An example the backend
//! does not lower must be refused with diagnostics that say so.

mod cpu_tree;

use std::path::Path;

use cpu_tree::*;
use wsp_backend::EmitOptions;
use wsp_ir::workload::{Expect, TensorKind};

/// The manifest's programs, each with the schedule its entry names.
fn manifest_programs() -> Vec<(String, Option<String>)> {
    let text = std::fs::read_to_string(repo().join("examples/manifest.toml")).expect("manifest");
    let table: toml::Table = text.parse().expect("manifest parses");
    table
        .values()
        .map(|v| {
            (
                v["program"].as_str().expect("program").to_string(),
                v.get("schedule").and_then(|s| s.as_str()).map(String::from),
            )
        })
        .collect()
}

/// Compares an output with wsp run's: bit for bit, else within the tolerance of an
/// `expect close` on the tensor. Returns a description of a mismatch.
fn compare(p: &wsp_ir::Program, t: usize, got: &Path, want: &Path) -> Option<String> {
    let a = std::fs::read(got).expect("wsp_host's output");
    let b = std::fs::read(want).expect("wsp run's output");
    if a == b {
        return None;
    }
    let decl = &p.tensors[t];
    let tol = p.expects.iter().find_map(|e| match e {
        Expect::Close {
            actual, rtol, atol, ..
        } if actual.index() == t => Some((*rtol, *atol)),
        _ => None,
    });
    let Some((rtol, atol)) = tol else {
        return Some(format!("`{}` differs and has no tolerance", decl.name));
    };
    let shape: Vec<usize> = {
        let params = wsp_ir::data::resolve_params(p, &[]).expect("params");
        wsp_ir::data::tensor_shape(decl, &params).expect("a shape")
    };
    eprintln!(
        "note: `{}` is not bit for bit wsp run's; checking the tolerance",
        decl.name
    );
    let x = wsp_ir::npy::read_npy_as(got, decl.dtype, &shape).expect("an .npy");
    let y = wsp_ir::npy::read_npy_as(want, decl.dtype, &shape).expect("an .npy");
    for (i, (u, v)) in x.to_f64().iter().zip(y.to_f64()).enumerate() {
        if (u - v).abs() > atol + rtol * v.abs() || u.is_nan() != v.is_nan() {
            return Some(format!(
                "`{}`[{i}]: {u} vs wsp run's {v} (rtol {rtol}, atol {atol})",
                decl.name
            ));
        }
    }
    None
}

fn run_example(rel: &str, arch: &str) -> Result<(), String> {
    run_example_with(rel, None, arch, &[])
}

fn run_example_with(
    rel: &str,
    schedule: Option<&str>,
    arch: &str,
    cmake: &[String],
) -> Result<(), String> {
    let file = repo().join("examples").join(rel);
    let program = lowered(&file);
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("x");
    let name = match schedule {
        Some(s) if s != "main" => format!("{stem}_{s}"),
        _ => stem.to_string(),
    };
    let mut options = vec![("runtime_lib".into(), built().1.display().to_string())];
    if let Some(s) = schedule {
        options.push(("schedule".into(), s.to_string()));
    }
    let opts = EmitOptions {
        arch: Some(arch.to_string()),
        options,
        ..Default::default()
    };
    let tree = match wsp_ascend::emit(&program, &opts) {
        Ok((tree, _)) => tree,
        Err(diags) => {
            // Refused: every reason must be a construct the backend says it does not lower.
            for d in &diags {
                if !d.message.contains("not lowered by the ascend backend") {
                    return Err(format!("{name}: refused for another reason: {}", d.message));
                }
            }
            eprintln!("{name}: not lowered ({})", diags[0].message);
            return Ok(());
        }
    };
    let tag = if cmake.is_empty() { "" } else { "_pto" };
    let dir = scratch(&format!("ex_{name}_{arch}{tag}"));
    write_tree(&tree, &dir.join("tree"));
    let host = build_tree_with(&dir.join("tree"), cmake);
    let got = run_host(&host, file.parent().expect("a directory"), &dir.join("res"));
    let want = reference_schedule(&file, arch, schedule, &dir.join("ref"));
    if got != want {
        return Err(format!(
            "{name} on {arch}: (tasks, edges, total_cycles) {got:?}, wsp run {want:?}"
        ));
    }
    for (i, t) in program.tensors.iter().enumerate() {
        if t.kind != TensorKind::Output {
            continue;
        }
        let f = format!("{}.npy", t.name);
        if let Some(m) = compare(
            &program,
            i,
            &dir.join("res").join(&f),
            &dir.join("ref").join(&f),
        ) {
            return Err(format!("{name} on {arch}: {m}"));
        }
    }
    eprintln!("{name} on {arch}: {got:?} as wsp run");
    // Passed: the build (a static binary per tree) is not kept.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[test]
fn every_example_builds_runs_and_matches_wsp_run() {
    let programs = manifest_programs();
    assert!(programs.len() >= 10, "the manifest lists {programs:?}");
    let mut failures = Vec::new();
    for (p, schedule) in &programs {
        if let Err(m) = run_example_with(p, schedule.as_deref(), "ascend910b", &[]) {
            failures.push(m);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn examples_run_on_the_ascend950_model_too() {
    for p in ["softmax/softmax.wsp", "moe_routing/moe_routing.wsp"] {
        run_example(p, "ascend950").unwrap_or_else(|m| panic!("{m}"));
    }
}

/// With `PTO_ISA_ROOT` naming a checkout of PTO-ISA (whose CPU headers compile: verified with
/// 3186c381), the trees build against its CPU implementation instead of the stand-in
/// (`-DPTO_ISA_ROOT`, `clang++-19` or `$PTO_CXX`) and still match `wsp run`: the examples
/// whose kernels PTO-ISA's CPU implementation computes bit for bit as wsp does (see the
/// kernel section of docs/backends.md). Skipped, with a note, when unset.
#[test]
fn trees_build_against_pto_isa_s_own_cpu_headers() {
    let Some(root) = std::env::var_os("PTO_ISA_ROOT") else {
        eprintln!("note: PTO_ISA_ROOT is unset; the tree build against PTO-ISA is skipped");
        return;
    };
    let cxx = std::env::var("PTO_CXX").unwrap_or_else(|_| "clang++-19".to_string());
    let args = vec![
        format!("-DPTO_ISA_ROOT={}", Path::new(&root).display()),
        format!("-DCMAKE_CXX_COMPILER={cxx}"),
    ];
    for p in [
        "tensor_data_add/tensor_data_add.wsp",
        "csp_pipeline/csp_pipeline.wsp",
        "bgemm/bgemm.wsp",
    ] {
        run_example_with(p, None, "ascend910b", &args).unwrap_or_else(|m| panic!("{m}"));
    }
}
