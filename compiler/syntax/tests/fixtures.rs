//! The syntax fixtures `tests/ui/syntax_*.wsp` of the repository: every `//~ ERROR E00xx`
//! annotation is matched by a syntax error on that line, and there is no other syntax error.
//! (The full fixture harness in wsp-core runs them too, with every later check.)

use std::path::Path;

#[test]
fn syntax_fixtures_match_their_annotations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ui");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/ui exists") {
        let path = entry.expect("readable dir").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !(name.starts_with("syntax_") && name.ends_with(".wsp")) {
            continue;
        }
        let src = std::fs::read_to_string(&path).expect("readable fixture");
        let mut want: Vec<(usize, String)> = Vec::new();
        for (i, line) in src.lines().enumerate() {
            if let Some(pos) = line.find("//~ ERROR ") {
                let code = line[pos + 10..].split_whitespace().next().unwrap_or("");
                if code.starts_with("E00") {
                    want.push((i + 1, code.to_string()));
                }
            }
        }
        let p = wsp_syntax::parse(&src);
        let mut got: Vec<(usize, String)> = p
            .errors
            .iter()
            .map(|e| {
                let line = src[..e.span.start as usize].matches('\n').count() + 1;
                (line, e.code.to_string())
            })
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{name}");
        n += 1;
    }
    assert!(n >= 7, "expected the syntax fixtures, found {n}");
}
