//! `wsp emit`: lowers a checked program and prints it for a target. `--target ir` prints the
//! Program IR as JSON (the format external backends read); the Ascend and AIE source-tree
//! emitters are not built yet and say so.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use wsp_diagnostics::render::render_human;

/// Arguments of `wsp emit`.
#[derive(clap::Args)]
pub struct Args {
    /// The program to lower (a .wsp file).
    path: PathBuf,
    /// What to emit: `ir` (Program IR JSON), `ascend` or `aie`.
    #[arg(long, default_value = "ir")]
    target: String,
    /// Write to this file (atomically) instead of standard output.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn main(a: Args) -> ExitCode {
    match a.target.as_str() {
        "ir" => {}
        "ascend" | "aie" => {
            eprintln!(
                "error: the `{}` backend is not built yet; `wsp emit --target ir` prints the Program IR that backends read",
                a.target
            );
            return ExitCode::from(2);
        }
        other => {
            eprintln!("error: unknown target `{other}`; targets: ir, ascend, aie");
            return ExitCode::from(2);
        }
    }
    if a.path.is_dir() {
        eprintln!(
            "error: `{}` is a directory; give one .wsp file",
            a.path.display()
        );
        return ExitCode::from(2);
    }
    let (ws, roots) = match crate::load::load(std::slice::from_ref(&a.path)) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let Some(root) = roots.first() else {
        eprintln!("error: nothing to emit");
        return ExitCode::from(2);
    };
    let program = match wsp_lower::lower(&ws, root) {
        Ok(p) => p,
        Err(diags) => {
            let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            eprint!("{}", render_human(&diags, &crate::WsSources(&ws), color));
            eprintln!("error: `{root}` was not lowered");
            return ExitCode::from(1);
        }
    };
    let mut json = program.to_json();
    json.push('\n');
    match a.out {
        None => {
            print!("{json}");
            ExitCode::SUCCESS
        }
        Some(out) => match wsp_ir::fsio::write_atomic(&out, json.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: cannot write `{}`: {e}", out.display());
                ExitCode::from(2)
            }
        },
    }
}
