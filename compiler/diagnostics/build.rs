//! Builds the code catalog from `explanations/<CODE>.md` (one file per code).
use std::fmt::Write;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("explanations");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "md") {
                println!("cargo:rerun-if-changed={}", p.display());
                let code = p
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("")
                    .to_string();
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                let title = text
                    .lines()
                    .next()
                    .and_then(|l| l.split_once(": "))
                    .map(|(_, t)| t.trim().to_string())
                    .unwrap_or_default();
                entries.push((code, title, p));
            }
        }
    }
    entries.sort();
    let mut out = String::from("pub(crate) static CATALOG: &[(&str, &str, &str)] = &[\n");
    for (code, title, path) in &entries {
        let _ = writeln!(
            out,
            "    ({code:?}, {title:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("catalog.rs");
    std::fs::write(dest, out).expect("write catalog.rs");
}
