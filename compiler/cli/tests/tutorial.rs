//! docs/tutorial.md: every complete program it shows is the file of `docs/tutorial/` it names,
//! byte for byte, and runs with its `expect` holding; the commands of its later sections work
//! on them. (Every ```wsp block of the docs also checks: `wsp-core`'s `ui` test.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn wsp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wsp"))
        .args(args)
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .output()
        .expect("run wsp")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The ```wsp blocks of the tutorial that are whole programs (they start with the comment
/// `// The tutorial's`), each with the file the text before it links.
fn programs() -> Vec<(String, String)> {
    let md = std::fs::read_to_string(repo().join("docs/tutorial.md")).expect("tutorial");
    let mut out = Vec::new();
    let mut rest = md.as_str();
    while let Some(i) = rest.find("```wsp\n") {
        let before = &rest[..i];
        let body = &rest[i + "```wsp\n".len()..];
        let end = body.find("\n```").expect("closed block");
        let code = format!("{}\n", &body[..end]);
        rest = &body[end..];
        if !code.starts_with("// The tutorial's") {
            continue;
        }
        let link = before
            .rfind("(tutorial/")
            .map(|k| &before[k + 1..])
            .and_then(|l| l.split(')').next())
            .expect("the program's file is linked before it");
        out.push((format!("docs/{link}"), code));
    }
    out
}

#[test]
fn the_tutorials_programs_are_its_files_and_run() {
    let progs = programs();
    assert_eq!(progs.len(), 2, "{progs:?}");
    for (file, code) in &progs {
        let on_disk = std::fs::read_to_string(repo().join(file)).expect(file);
        assert_eq!(&on_disk, code, "{file} differs from the tutorial's text");
        let o = wsp(&["run", file]);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{file}: {out}{}", text(&o.stderr));
        assert!(out.contains("expects       1/1 hold"), "{file}: {out}");
    }
}

/// What the tutorial says of the ragged program: 9 tasks, 6 on the full tier and 3 on the
/// tail, outputs written, a trace and a graph.
#[test]
fn the_ragged_program_does_what_the_tutorial_says() {
    let d = std::env::temp_dir().join(format!("wsp-tutorial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let p = |f: &str| d.join(f).to_str().expect("path").to_string();
    let o = wsp(&[
        "run",
        "docs/tutorial/ragged_attention.wsp",
        "--out-dir",
        &p("out"),
        "--trace",
        &p("trace.json"),
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(out.contains("tasks         9 "), "{out}");
    assert!(out.contains("kernel attn_full        6 tasks"), "{out}");
    assert!(out.contains("kernel attn_tail        3 tasks"), "{out}");
    assert!(d.join("out/O.npy").is_file());
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("trace.json")).expect("trace")).expect("JSON");
    assert!(trace["traceEvents"].as_array().is_some_and(|a| a.len() > 9));
    let o = wsp(&[
        "graph",
        "docs/tutorial/ragged_attention.wsp",
        "-o",
        &p("g.dot"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let g = std::fs::read_to_string(d.join("g.dot")).expect("graph");
    assert!(
        g.contains("attn_tail[0, 3]") && g.contains("attn_full[2, 1]"),
        "{g}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
