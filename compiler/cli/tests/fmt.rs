//! `wsp fmt`: in-place formatting, `--check`, and refusal of files with syntax errors.

use std::path::PathBuf;
use std::process::{Command, Output};

fn wsp(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wsp"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run wsp")
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wsp-fmt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const UGLY: &str = "// keep me\nkernel k(x:in f32[4,4],y:out f32[4,4]){\ny=x*2.0 // twice\n}\n";
const PRETTY: &str =
    "// keep me\nkernel k(x: in f32[4, 4], y: out f32[4, 4]) {\n    y = x * 2.0 // twice\n}\n";

#[test]
fn check_reports_then_fmt_rewrites() {
    let d = tempdir("rewrite");
    std::fs::write(d.join("a.wsp"), UGLY).unwrap();
    std::fs::write(d.join("b.wsp"), PRETTY).unwrap();
    let o = wsp(&d, &["fmt", "--check", "."]);
    assert_eq!(o.status.code(), Some(1));
    let listed = String::from_utf8_lossy(&o.stdout);
    assert!(
        listed.contains("a.wsp") && !listed.contains("b.wsp"),
        "{listed}"
    );
    assert_eq!(std::fs::read_to_string(d.join("a.wsp")).unwrap(), UGLY);

    let o = wsp(&d, &["fmt", "a.wsp", "b.wsp"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(d.join("a.wsp")).unwrap(), PRETTY);
    let o = wsp(&d, &["fmt", "--check", "."]);
    assert_eq!(o.status.code(), Some(0));
    // No temporary files are left behind.
    let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
    assert_eq!(left.len(), 2);
}

#[test]
fn syntax_errors_are_refused_and_the_file_is_untouched() {
    let d = tempdir("syntax");
    let bad = "kernel k(x: in f32[4, 4] {\n";
    std::fs::write(d.join("bad.wsp"), bad).unwrap();
    let o = wsp(&d, &["fmt", "bad.wsp"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.wsp:1:") && err.contains("syntax errors"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(d.join("bad.wsp")).unwrap(), bad);
    let o = wsp(&d, &["fmt", "missing.wsp"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Formatting through a symbolic link formats the file it names (the link stays a link), and a
/// file with other hard links is rewritten in place, so every link sees the formatted text.
#[cfg(unix)]
#[test]
fn fmt_writes_through_links() {
    let d = tempdir("links");
    std::fs::write(d.join("real.wsp"), UGLY).unwrap();
    std::os::unix::fs::symlink("real.wsp", d.join("link.wsp")).unwrap();
    std::fs::hard_link(d.join("real.wsp"), d.join("hard.wsp")).unwrap();
    let o = wsp(&d, &["fmt", "link.wsp"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::symlink_metadata(d.join("link.wsp"))
        .unwrap()
        .file_type()
        .is_symlink());
    for f in ["real.wsp", "hard.wsp", "link.wsp"] {
        assert_eq!(std::fs::read_to_string(d.join(f)).unwrap(), PRETTY, "{f}");
    }
}
