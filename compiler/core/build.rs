//! Embeds the `.wsp` standard library (`std/*.wsp` at the repository root).
use std::fmt::Write;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../std");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "wsp") {
                println!("cargo:rerun-if-changed={}", p.display());
                if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                    files.push((stem.to_string(), p));
                }
            }
        }
    }
    files.sort();
    let mut out = String::from("/// The embedded std modules: (module name, source).\npub static STD_MODULES: &[(&str, &str)] = &[\n");
    for (name, path) in &files {
        let _ = writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("std_modules.rs");
    std::fs::write(dest, out).expect("write std_modules.rs");
}
