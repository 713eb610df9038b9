//! The fixture harness: every `tests/ui/**/*.wsp` is checked, and the set of
//! `(line, code)` pairs of its diagnostics must equal its inline expectations:
//! `//~ ERROR E0101` (or `//~ WARN W0601`) on the line of the primary label, or `//~^ ERROR ...`
//! for the line above. A fixture without expectations must check clean.
//! Header comments configure the check: `//@ target: aie` checks capabilities for a backend
//! (`Workspace::set_target`), `//@ strict` makes capability losses errors, `//@ lint: NAME`
//! turns on an opt-in lint (`Workspace::set_lints`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use wsp_core::Workspace;

fn fixtures(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            fixtures(&p, out);
        } else if p.extension().is_some_and(|x| x == "wsp") {
            out.push(p);
        }
    }
}

fn expectations(src: &str) -> BTreeSet<(usize, String)> {
    let mut out = BTreeSet::new();
    for (i, line) in src.lines().enumerate() {
        let mut rest = line;
        while let Some(pos) = rest.find("//~") {
            let after = &rest[pos + 3..];
            let up = after.chars().take_while(|c| *c == '^').count();
            let mut words = after[up..].split_whitespace();
            let (Some(sev), Some(code)) = (words.next(), words.next()) else {
                break;
            };
            assert!(sev == "ERROR" || sev == "WARN", "bad annotation `{line}`");
            out.insert((i + 1 - up, code.to_string()));
            rest = &after[up..];
        }
    }
    out
}

fn line_of(src: &str, offset: u32) -> usize {
    src.as_bytes()[..(offset as usize).min(src.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

fn check_fixture(path: &Path) -> Result<(), String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let name = path.to_string_lossy().replace('\\', "/");
    let mut ws = Workspace::new();
    let target = src
        .lines()
        .find_map(|l| l.trim().strip_prefix("//@ target:"))
        .map(str::trim);
    let strict = src.lines().any(|l| l.trim() == "//@ strict");
    ws.set_target(target, strict)?;
    let lints: Vec<&str> = src
        .lines()
        .filter_map(|l| l.trim().strip_prefix("//@ lint:"))
        .map(str::trim)
        .collect();
    ws.set_lints(&lints)?;
    ws.set_file(&name, src.clone());
    // The harness, not the core, reads imported files.
    ws.load_imports(|m| std::fs::read_to_string(m));
    let got: BTreeSet<(usize, String)> = ws
        .check(&name)
        .iter()
        .filter(|d| d.primary.file.as_str() == name)
        .map(|d| (line_of(&src, d.primary.span.start), d.code.to_string()))
        .collect();
    let want = expectations(&src);
    if got == want {
        return Ok(());
    }
    let diags: Vec<String> = ws
        .check(&name)
        .iter()
        .map(|d| {
            format!(
                "  line {}: {} {}",
                line_of(&src, d.primary.span.start),
                d.code,
                d.message
            )
        })
        .collect();
    Err(format!(
        "{name}\n  missing: {:?}\n  unexpected: {:?}\n diagnostics:\n{}",
        want.difference(&got).collect::<Vec<_>>(),
        got.difference(&want).collect::<Vec<_>>(),
        diags.join("\n")
    ))
}

#[test]
fn ui_fixtures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ui");
    let mut files = Vec::new();
    fixtures(&root, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no fixtures under {}", root.display());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| check_fixture(f).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} fixture(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every code emitted by the compiler has an explanation and at least one fixture.
#[test]
fn every_code_is_explained_and_tested() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Every `.rs` file of the two crates' sources, modules in folders included.
    let mut sources = Vec::new();
    let mut dirs: Vec<PathBuf> = ["compiler/syntax/src", "compiler/core/src"]
        .iter()
        .map(|d| repo.join(d))
        .collect();
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                sources.push(std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut codes = BTreeSet::new();
    // A code is written as a constant of `wsp_vocab::codes` (`codes::E0101`) or, in tests, quoted.
    for s in &sources {
        let quoted = s.match_indices('"').map(|(i, _)| (i + 1, true));
        let constants = s
            .match_indices("codes::")
            .map(|(i, m)| (i + m.len(), false));
        for (at, quote) in quoted.chain(constants) {
            let rest = &s[at..];
            if rest.len() >= 6 && (!quote || rest.as_bytes()[5] == b'"') {
                let c = &rest[..5];
                if (c.starts_with('E') || c.starts_with('W'))
                    && c[1..].chars().all(|d| d.is_ascii_digit())
                {
                    codes.insert(c.to_string());
                }
            }
        }
    }
    let mut fixtures_text = String::new();
    let mut files = Vec::new();
    fixtures(&repo.join("tests/ui"), &mut files);
    for f in files {
        fixtures_text.push_str(&std::fs::read_to_string(f).unwrap());
    }
    let mut problems = Vec::new();
    for c in &codes {
        let expl = repo.join(format!("compiler/diagnostics/explanations/{c}.md"));
        if !expl.exists() {
            problems.push(format!("{c}: no explanation file {}", expl.display()));
        }
        if !fixtures_text.contains(&format!(" {c}")) {
            problems.push(format!("{c}: no fixture in tests/ui"));
        }
    }
    assert!(codes.len() > 10, "found only {codes:?}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every ```wsp example of the README and the docs checks without errors. An example may lean
/// on declarations it does not show: an HTML comment right before it, `<!-- wsp-context NAME`
/// then the declarations and `-->`, holds them (hidden when the Markdown is rendered) and names
/// the example; `<!-- wsp-context: NAME -->` continues example NAME (its context and code),
/// and the continued program takes the name.
#[test]
fn readme_and_docs_examples_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut docs = vec![root.join("README.md")];
    let mut more: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    let mut blocks = 0;
    let mut problems = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        let name = doc.strip_prefix(&root).unwrap_or(doc).display().to_string();
        let mut named: std::collections::HashMap<String, String> = Default::default();
        let mut rest = text.as_str();
        let mut offset = 0;
        while let Some(start) = rest.find("```wsp\n") {
            let before = rest[..start].trim_end();
            let body = &rest[start + 7..];
            let end = body.find("```").expect("unclosed ```wsp block");
            let code = &body[..end];
            let (name_of, context) = match before.rfind("<!-- wsp-context") {
                Some(open) if before.ends_with("-->") => {
                    let comment = &before[open + "<!-- wsp-context".len()..before.len() - 3];
                    if let Some(of) = comment.strip_prefix(':') {
                        let of = of.trim().to_string();
                        let ctx = named.get(&of).cloned();
                        assert!(ctx.is_some(), "{name}: no example named `{of}` before");
                        (Some(of), ctx.unwrap_or_default())
                    } else {
                        let (head, ctx) = comment.split_once('\n').unwrap_or((comment, ""));
                        (Some(head.trim().to_string()), ctx.to_string())
                    }
                }
                _ => (None, String::new()),
            };
            let line = text[..offset + start].lines().count() + 1;
            let src = format!("{context}\n{code}");
            let mut ws = Workspace::new();
            let file = format!("example_{blocks}.wsp");
            ws.set_file(&file, src.clone());
            let errors: Vec<String> = ws
                .check(&file)
                .into_iter()
                .filter(|d| d.severity == wsp_diagnostics::Severity::Error)
                .map(|d| format!("{} {}", d.code, d.message))
                .collect();
            if !errors.is_empty() {
                problems.push(format!("{name}:{line}:\n{code}\n{}", errors.join("\n")));
            }
            if let Some(n) = name_of {
                named.insert(n, src);
            }
            blocks += 1;
            offset += start + 7 + end + 3;
            rest = &body[end + 3..];
        }
    }
    assert!(blocks >= 10, "only {blocks} examples found");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Every embedded std module checks without errors (std ships with the toolchain, so a
/// diagnostic there is a bug of the library or of the checker).
#[test]
fn std_modules_check_clean() {
    let ws = Workspace::new();
    for (name, _) in wsp_core::std_lib::STD_MODULES {
        let path = format!("std/{name}.wsp");
        let errors: Vec<String> = ws
            .check(&path)
            .iter()
            .filter(|d| d.severity == wsp_diagnostics::Severity::Error)
            .map(|d| format!("{} {} at {:?}", d.code, d.message, d.primary.span))
            .collect();
        assert!(errors.is_empty(), "{path}:\n{}", errors.join("\n"));
    }
}
