//! `wsp fmt`: formats `.wsp` files in place (atomically), or with `--check` lists the files that
//! would change.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::load::{display_path, walk};

/// Arguments of `wsp fmt`.
#[derive(clap::Args)]
pub struct Args {
    /// Files or directories (walked for *.wsp). Default: the current directory.
    paths: Vec<PathBuf>,
    /// Do not write: list the files that are not formatted and exit 1 if there are any.
    #[arg(long)]
    check: bool,
}

pub fn main(a: Args) -> ExitCode {
    let paths = if a.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        a.paths
    };
    let mut files = Vec::new();
    for p in &paths {
        if p.is_dir() {
            if let Err(e) = walk(p, &mut files) {
                eprintln!("error: cannot read directory `{}`: {e}", p.display());
                return ExitCode::from(2);
            }
        } else if p.exists() {
            files.push(p.clone());
        } else {
            eprintln!("error: `{}` does not exist", p.display());
            return ExitCode::from(2);
        }
    }
    let mut failed = false;
    let mut unformatted = 0;
    let mut changed = 0;
    for f in &files {
        let name = display_path(f);
        let src = match wsp_ir::fsio::read_source(f) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot read `{name}`: {e}");
                failed = true;
                continue;
            }
        };
        let out = match wsp_fmt::format(&src) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("error: {name}:{e}");
                failed = true;
                continue;
            }
        };
        if out == src {
            continue;
        }
        if a.check {
            println!("{name}");
            unformatted += 1;
        } else if let Err(e) = std::fs::canonicalize(f).and_then(|t| write_through(&t, &out)) {
            eprintln!("error: cannot write `{name}`: {e}");
            failed = true;
        } else {
            changed += 1;
        }
    }
    if a.check {
        if unformatted > 0 {
            eprintln!(
                "{unformatted} of {} file{} would be reformatted (run `wsp fmt` to fix)",
                files.len(),
                if files.len() == 1 { "" } else { "s" }
            );
        }
    } else if changed > 0 {
        eprintln!(
            "formatted {changed} file{}",
            if changed == 1 { "" } else { "s" }
        );
    }
    if failed {
        ExitCode::from(2)
    } else if unformatted > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Writes formatted text to `target`, the file a path names once symbolic links are followed
/// (replacing a link would leave the real file unformatted): atomically (a whole new file)
/// when nothing else links to it, in place when other hard links share it, so they keep
/// seeing the formatted text.
fn write_through(target: &std::path::Path, text: &str) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if std::fs::metadata(target)?.nlink() > 1 {
            return std::fs::write(target, text);
        }
    }
    crate::atomic::write_atomic(target, text.as_bytes())
}
