//! Declares one constant per diagnostic code, from the explanation files
//! (`compiler/diagnostics/explanations/<CODE>.md`): a code exists exactly when it is explained.
use std::fmt::Write;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../diagnostics/explanations");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut codes: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            let stem = p.file_stem()?.to_str()?.to_string();
            let is_code = p.extension().is_some_and(|x| x == "md")
                && stem.len() == 5
                && (stem.starts_with('E') || stem.starts_with('W'))
                && stem[1..].bytes().all(|b| b.is_ascii_digit());
            is_code.then_some(stem)
        })
        .collect();
    codes.sort();
    let mut out = String::new();
    for c in &codes {
        let _ = writeln!(
            out,
            "/// Diagnostic `{c}` (`wsp explain {c}`).\npub const {c}: &str = {c:?};"
        );
    }
    let _ = writeln!(out, "/// Every code, sorted.\npub const ALL: &[&str] = &[");
    for c in &codes {
        let _ = writeln!(out, "    {c},");
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("codes.rs");
    std::fs::write(dest, out).expect("write codes.rs");
}
