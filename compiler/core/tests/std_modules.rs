//! The embedded standard library: every `std/*.wsp` module checks clean on the Ascend models it
//! is sized for, and a program can import each of them.

use wsp_core::std_lib::{modules, STD_MODULES};
use wsp_core::Workspace;

#[test]
fn std_modules_exist() {
    let names = modules();
    for m in ["std.nn", "std.attention", "std.moe"] {
        assert!(names.iter().any(|n| n == m), "{m} missing from {names:?}");
    }
}

#[test]
fn every_std_module_checks_clean_on_ascend() {
    for arch in ["ascend910b", "ascend950"] {
        for (name, text) in STD_MODULES {
            let mut ws = Workspace::new();
            ws.set_arch(Some(arch)).expect("model");
            // Checked as a user file, so that nothing is trusted.
            let path = format!("copy_of_{name}.wsp");
            ws.set_file(&path, text.to_string());
            let diags = ws.check(&path);
            assert!(diags.is_empty(), "std.{name} on {arch}: {diags:#?}");
        }
    }
}

#[test]
fn a_program_imports_every_std_module() {
    let mut src = String::new();
    for (name, _) in STD_MODULES {
        src += &format!("import std.{name}\n");
    }
    let mut ws = Workspace::new();
    ws.set_file("main.wsp", src);
    let diags = ws.check("main.wsp");
    assert!(diags.is_empty(), "{diags:#?}");
}
