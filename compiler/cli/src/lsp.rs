//! `wsp lsp` (issue #5).

use std::process::ExitCode;

/// Arguments of `wsp lsp`.
#[derive(clap::Args)]
pub struct Args {
    /// Arguments (not yet interpreted).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

pub fn main(a: Args) -> ExitCode {
    let _ = a.rest;
    eprintln!("error: `wsp lsp` is not available in this build yet (issue #5)");
    ExitCode::from(2)
}
