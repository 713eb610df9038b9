//! Every `.wsp` file of the repository (examples, fixtures without syntax errors, std) formats
//! without loss (the formatter verifies tokens and comments itself), parses to the same items,
//! and formatting is idempotent; the examples and std are already formatted.

use std::path::{Path, PathBuf};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "wsp") {
            out.push(p);
        }
    }
}

#[test]
fn corpus_formats_losslessly_and_idempotently() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for d in ["examples", "tests/ui", "std"] {
        walk(&root.join(d), &mut files);
    }
    assert!(files.len() > 20, "corpus not found");
    let mut formatted = 0;
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        let parsed = wsp_syntax::parse(&src);
        match wsp_fmt::format(&src) {
            Ok(once) => {
                assert!(
                    parsed.errors.is_empty(),
                    "{}: formatted despite errors",
                    f.display()
                );
                let twice = wsp_fmt::format(&once)
                    .unwrap_or_else(|e| panic!("{}: second pass: {e}", f.display()));
                assert_eq!(once, twice, "{}: not idempotent", f.display());
                // What the project ships is in the formatter's style (`wsp fmt --check`).
                let shipped = ["examples", "std"]
                    .iter()
                    .any(|d| f.starts_with(root.join(d)));
                assert!(
                    !shipped || once == src,
                    "{}: not formatted; run `wsp fmt examples std`",
                    f.display()
                );
                let again = wsp_syntax::parse(&once);
                assert!(
                    again.errors.is_empty(),
                    "{}: output does not parse",
                    f.display()
                );
                assert_eq!(
                    parsed.file.items.len(),
                    again.file.items.len(),
                    "{}: item count changed",
                    f.display()
                );
                formatted += 1;
            }
            Err(e) => assert!(
                !parsed.errors.is_empty(),
                "{}: refused a valid file: {e}",
                f.display()
            ),
        }
    }
    assert!(formatted > 20);
}

#[test]
fn random_inputs_never_panic() {
    // A deterministic stream of fragments glued together.
    let parts = [
        "kernel",
        " k(",
        "x: in f32[4, 4]",
        ")",
        " {",
        "\n",
        "}",
        "// c",
        "///d",
        "-",
        "..",
        ":",
        ",",
        "[",
        "]",
        "(",
        "\"s",
        "1.0",
        "0x",
        "\u{e9}",
        "for i in P(a) ",
        "=",
        " ",
    ];
    let mut state: u64 = 0x9e3779b97f4a7c15;
    for _ in 0..3000 {
        let mut s = String::new();
        for _ in 0..(state % 24) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            s.push_str(parts[(state % parts.len() as u64) as usize]);
        }
        state = state.wrapping_add(1);
        if let Ok(out) = wsp_fmt::format(&s) {
            assert_eq!(
                wsp_fmt::format(&out).ok().as_deref(),
                Some(out.as_str()),
                "{s:?}"
            );
        }
    }
}
