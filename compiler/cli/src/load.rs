//! Reading programs from disk into a [`Workspace`]: the roots the user named (files, or
//! directories walked for `*.wsp`) and every file they import, transitively.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use wsp_core::Workspace;

/// Collects `*.wsp` files under a directory, sorted, skipping hidden and build directories.
pub fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                walk(&p, out)?;
            }
        } else if p.extension().is_some_and(|e| e == "wsp") {
            out.push(p);
        }
    }
    Ok(())
}

pub fn display_path(p: &Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    let s = s.strip_prefix("./").map(str::to_string).unwrap_or(s);
    // `std/...` names the embedded standard library; a user's own `std/` folder (or the
    // toolchain's sources, checked from the repository root) keeps its `./`.
    if wsp_core::resolve::is_std(&s) {
        format!("./{s}")
    } else {
        s
    }
}

/// Loads the given paths (the current directory when empty) and closes the import graph.
/// Returns the workspace and the display names of the roots; on an I/O error prints it and
/// returns exit code 2.
pub fn load(paths: &[PathBuf]) -> Result<(Workspace, Vec<String>), ExitCode> {
    let paths = if paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        paths.to_vec()
    };
    let mut files = Vec::new();
    for p in &paths {
        if p.is_dir() {
            if let Err(e) = walk(p, &mut files) {
                eprintln!("error: cannot read directory `{}`: {e}", p.display());
                return Err(ExitCode::from(2));
            }
        } else if p.exists() {
            files.push(p.clone());
        } else {
            eprintln!("error: `{}` does not exist", p.display());
            return Err(ExitCode::from(2));
        }
    }
    let mut ws = Workspace::new();
    let mut roots = Vec::new();
    for f in &files {
        let name = display_path(f);
        match wsp_ir::fsio::read_source(f) {
            Ok(text) => {
                ws.set_file(&name, text);
                roots.push(name);
            }
            Err(e) => {
                eprintln!("error: cannot read `{name}`: {e}");
                return Err(ExitCode::from(2));
            }
        }
    }
    ws.load_imports(|m| wsp_ir::fsio::read_module(std::path::Path::new(m)));
    Ok((ws, roots))
}
