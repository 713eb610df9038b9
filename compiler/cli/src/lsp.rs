//! `wsp lsp`: the language server on stdin/stdout (see the `wsp-lsp` crate).

use std::process::ExitCode;

/// Arguments of `wsp lsp`.
#[derive(clap::Args)]
pub struct Args {
    /// Accepted for editor clients that pass it; stdio is the only transport.
    #[arg(long)]
    stdio: bool,
}

pub fn main(a: Args) -> ExitCode {
    let _ = a.stdio;
    match wsp_lsp::run_stdio() {
        // The LSP specification: exit code 0 after `shutdown`, 1 without it.
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: wsp lsp: {e}");
            ExitCode::from(2)
        }
    }
}
