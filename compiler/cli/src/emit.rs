//! `wsp emit` (issue #4).

use std::process::ExitCode;

/// Arguments of `wsp emit`.
#[derive(clap::Args)]
pub struct Args {
    /// Arguments (not yet interpreted).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    rest: Vec<String>,
}

pub fn main(a: Args) -> ExitCode {
    let _ = a.rest;
    eprintln!("error: `wsp emit` is not available in this build yet (issue #4)");
    ExitCode::from(2)
}
