//! Differential test of the Ascend kernel emitter on the corpus: every kernel of every
//! example and std module is emitted as PTO-ISA C++, compiled with g++ against the CPU
//! stand-in (one harness per source file), run on random tasks, and compared with the
//! reference interpreter: every byte of every written tensor must agree (floats bit for bit,
//! any NaN matching any NaN), elements outside the regions must stay untouched, and a task the
//! interpreter rejects must make the entry return nonzero.

mod common;

use std::path::PathBuf;
use wsp_ir::kernel::Kernel;

/// Kernels the emitter refuses on purpose: (kernel, words of the diagnostic, why).
const EXPECTED_REFUSALS: &[(&str, &str, &str)] = &[];

/// The kernels of every example (lowered as `wsp emit --target ir` does) and of every std
/// module (each kernel lowered on its own), by source file.
fn corpus() -> Vec<(String, Vec<Kernel>)> {
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(common::root().join("examples"))
        .expect("examples")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .filter_map(|d| {
            let n = d.file_name()?.to_string_lossy().to_string();
            let f = d.join(format!("{n}.wsp"));
            f.exists().then_some(f)
        })
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("example");
        let mut ws = wsp_core::Workspace::new();
        let key = path.to_string_lossy().to_string();
        ws.set_file(&key, text);
        let p = wsp_lower::lower(&ws, &key)
            .unwrap_or_else(|d| panic!("{} did not lower: {d:#?}", path.display()));
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        out.push((name, p.kernels));
    }
    let mut std_files: Vec<PathBuf> = std::fs::read_dir(common::root().join("std"))
        .expect("std")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wsp"))
        .collect();
    std_files.sort();
    for path in std_files {
        let text = std::fs::read_to_string(&path).expect("std module");
        let names: Vec<String> = text
            .lines()
            .filter_map(|l| {
                let rest = l.trim_start().strip_prefix("kernel ")?;
                let n: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                (!n.is_empty()).then_some(n)
            })
            .collect();
        let mut ws = wsp_core::Workspace::new();
        let key = path.to_string_lossy().to_string();
        ws.set_file(&key, text);
        let file = ws.file_handle(&key).expect("loaded");
        let kernels: Vec<Kernel> = names
            .iter()
            .map(|n| {
                wsp_lower::kernel_ir(ws.db(), file, n)
                    .unwrap_or_else(|| panic!("std kernel `{n}` does not lower on its own"))
            })
            .collect();
        let name = format!(
            "std_{}",
            path.file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default()
        );
        out.push((name, kernels));
    }
    out
}

#[test]
fn every_kernel_agrees_with_the_interpreter_on_the_standin() {
    let inc = common::standin_dir("corpus");
    let corpus = corpus();
    let n: usize = corpus.iter().map(|(_, k)| k.len()).sum();
    assert!(n > 40, "the corpus has {n} kernels");
    let failures = common::run_jobs(&corpus, EXPECTED_REFUSALS, &inc, &[], "corpus");
    let _ = std::fs::remove_dir_all(inc.parent().expect("parent"));
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
