//! Programs over several modules: a module's own items shadow imported ones, an imported
//! kernel keeps its module's constants, and only the kernels the program calls are lowered.

use std::path::Path;

fn run(ws: &wsp_core::Workspace, root: &str) -> (wsp_ir::Program, wsp_ir::data::ReferenceRun) {
    let p = wsp_lower::lower(ws, root).unwrap_or_else(|d| panic!("did not lower: {d:#?}"));
    assert!(wsp_ir::check::validate_program(&p).is_empty());
    let r = wsp_ir::data::run_reference(&p, None, &[], &[], Path::new(".")).expect("runs");
    (p, r)
}

fn tensor(p: &wsp_ir::Program, r: &wsp_ir::data::ReferenceRun, name: &str) -> Vec<f64> {
    let id = p.tensor_by_name(name).expect("tensor exists");
    r.tensors[id.index()].to_f64()
}

#[test]
fn own_items_shadow_imported_ones_and_imported_kernels_keep_their_constants() {
    let mut ws = wsp_core::Workspace::new();
    // The module's `add` and `W` clash with the root's; its kernel `scale` uses its own `W`.
    ws.set_file(
        "lib/m.wsp",
        "const W = 4\n\
         kernel add(a: in f32[2, W], b: in f32[2, W], out: out f32[2, W]) { out = a - b }\n\
         kernel scale(x: in f32[2, W], out: out f32[2, W]) { out = x * 10.0 }\n\
         kernel unused(x: in f32[2, W], out: out f32[2, W]) { out = x }\n"
            .into(),
    );
    ws.set_file(
        "main.wsp",
        "import lib.m.{scale}\n\
         const W = 8\n\
         input A: f32[2, 8] = ones\n\
         input B: f32[2, 8] = full(2.0)\n\
         input S: f32[2, 4] = full(3.0)\n\
         output C: f32[2, 8]\n\
         output D: f32[2, 4]\n\
         kernel add(a: in f32[2, W], b: in f32[2, W], out: out f32[2, W]) { out = a + b }\n\
         workload w {\n    add[0](a: A, b: B, out: C)\n    scale[0](x: S, out: D)\n}\n"
            .into(),
    );
    let diags = ws.check("main.wsp");
    assert!(diags.is_empty(), "{diags:#?}");
    let (p, r) = run(&ws, "main.wsp");
    // The root's `add` (a + b over 8 columns), not the module's (a - b over 4).
    assert_eq!(tensor(&p, &r, "C"), vec![3.0; 16]);
    // The module's `scale` over its own W = 4 columns.
    assert_eq!(tensor(&p, &r, "D"), vec![30.0; 8]);
    let mut names: Vec<&str> = p.kernels.iter().map(|k| k.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        ["add", "scale"],
        "the uncalled module kernels are dropped"
    );
}

#[test]
fn std_nn_kernels_run() {
    let mut ws = wsp_core::Workspace::new();
    ws.set_file(
        "main.wsp",
        "import std.nn.{rmsnorm, swiglu}\n\
         axis tiles = Dense[2]\n\
         input X: f32[2, 64, 128] = full(2.0)\n\
         input G: f32[2, 64, 128] = zeros\n\
         input W: f32[1, 128] = full(0.5)\n\
         output Y: f32[2, 64, 128]\n\
         output Z: f32[2, 64, 128]\n\
         workload w {\n    for t in P(tiles) {\n        rmsnorm[t](x: X[t], w: W, out: Y[t])\n        swiglu[t](gate: G[t], up: X[t], out: Z[t])\n    }\n}\n"
            .into(),
    );
    let diags = ws.check("main.wsp");
    assert!(diags.is_empty(), "{diags:#?}");
    let (p, r) = run(&ws, "main.wsp");
    // rmsnorm of a constant row 2.0 is 1.0 (eps aside), times w = 0.5.
    for v in tensor(&p, &r, "Y") {
        assert!((v - 0.5).abs() < 1e-5, "{v}");
    }
    // silu(0) · 2 = 0.
    assert!(tensor(&p, &r, "Z").iter().all(|v| *v == 0.0));
    assert_eq!(p.kernels.len(), 2);
}

/// Constants fold in lowering as in the checker: the smallest 64-bit integer, written as a
/// negated literal, is a constant (it passed `wsp check` and stopped lowering with E0813).
#[test]
fn the_smallest_integer_constant_lowers() {
    let mut ws = wsp_core::Workspace::new();
    ws.set_file(
        "main.wsp",
        "const A = -9223372036854775808
         const B = A + 9223372036854775807 + 4
         input X: f32[4, 4] = ones
         output Y: f32[4, 4]
         kernel cp(x: in f32[1, 4], y: out f32[1, 4]) { y = x }
         workload w {
    cp[0](x: X[B], y: Y[B])
}
"
        .into(),
    );
    let errors: Vec<_> = ws
        .check("main.wsp")
        .into_iter()
        .filter(|d| d.is_error())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let (p, r) = run(&ws, "main.wsp");
    assert_eq!(tensor(&p, &r, "Y")[16..].to_vec(), vec![1.0; 4 * 4 - 16]);
    assert_eq!(
        tensor(&p, &r, "Y")[..16]
            .iter()
            .filter(|v| **v == 1.0)
            .count(),
        4
    );
}

/// A kernel lowers on its own (`kernel_ir`: the language server prices it on hover) when its
/// shapes use constants of a module it imports, as std.deepseek's do std.moe's.
#[test]
fn a_kernel_lowers_on_its_own_with_imported_constants() {
    let mut ws = wsp_core::Workspace::new();
    ws.set_file(
        "sizes.wsp",
        "const ROWS = 8\nconst COLS = ROWS * 2\n".into(),
    );
    ws.set_file(
        "k.wsp",
        "import sizes.{ ROWS, COLS }\nconst HALF = COLS / 2\nkernel twice(x: in f32[ROWS, HALF], y: out f32[ROWS, HALF]) { y = x * 2.0 }\n"
            .into(),
    );
    let file = ws.file_handle("k.wsp").expect("loaded");
    let k = wsp_lower::kernel_ir(ws.db(), file, "twice").expect("lowers on its own");
    assert_eq!(k.params.len(), 2);
    let std_deepseek = wsp_core::std_lib::STD_MODULES
        .iter()
        .find(|(n, _)| *n == "deepseek")
        .expect("std.deepseek")
        .1;
    ws.set_file("deepseek_copy.wsp", std_deepseek.to_string());
    let file = ws.file_handle("deepseek_copy.wsp").expect("loaded");
    assert!(wsp_lower::kernel_ir(ws.db(), file, "route_sigmoid").is_some());
    assert!(wsp_lower::kernel_ir(ws.db(), file, "no_such_kernel").is_none());
}
