//! The `wsp` command.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use wsp_core::Workspace;
use wsp_diagnostics::render::{render_human, render_json, render_sarif, Sources};
use wsp_diagnostics::{Diagnostic, FileName, Severity};

#[derive(Parser)]
#[command(name = "wsp", version, about = "The wsp workload language toolchain")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check programs (and everything they import) for errors.
    Check {
        /// Files or directories (walked for *.wsp). Default: the current directory.
        paths: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Treat warnings as errors (`--deny warnings`).
        #[arg(long, value_name = "LINT")]
        deny: Option<String>,
        /// Print the type of every workload.
        #[arg(long)]
        explain_types: bool,
    },
    /// Print the long explanation of a diagnostic code.
    Explain {
        /// A code such as E0101.
        code: Option<String>,
        /// List every code with its title.
        #[arg(long)]
        list: bool,
        /// With --list: print the Markdown index (docs/diagnostics.md).
        #[arg(long)]
        markdown: bool,
    },
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Human,
    Json,
    /// SARIF 2.1.0, for CI code scanning.
    Sarif,
}

struct WsSources<'a>(&'a Workspace);

impl Sources for WsSources<'_> {
    fn text(&self, file: &FileName) -> Option<Arc<str>> {
        self.0.text(file)
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(2),
            };
        }
    };
    match cli.command {
        Command::Check {
            paths,
            format,
            deny,
            explain_types,
        } => check(paths, format, deny, explain_types),
        Command::Explain {
            code,
            list,
            markdown,
        } => explain(code, list, markdown),
    }
}

fn explain(code: Option<String>, list: bool, markdown: bool) -> ExitCode {
    if list {
        if markdown {
            print!("{}", wsp_diagnostics::markdown_index());
        } else {
            for (c, t) in wsp_diagnostics::catalog() {
                println!("{c}  {t}");
            }
        }
        return ExitCode::SUCCESS;
    }
    let Some(code) = code else {
        eprintln!("error: give a code (`wsp explain E0101`) or `--list`");
        return ExitCode::from(2);
    };
    match wsp_diagnostics::explain(&code) {
        Some(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        None => {
            let near = wsp_diagnostics::nearest(&code);
            eprintln!("error: no diagnostic code `{code}`");
            if !near.is_empty() {
                eprintln!("codes nearby: {}", near.join(", "));
            }
            eprintln!("`wsp explain --list` lists every code");
            ExitCode::from(2)
        }
    }
}

/// Collects `*.wsp` files under a directory, sorted, skipping hidden and build directories.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
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

fn display_path(p: &Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

fn check(
    paths: Vec<PathBuf>,
    format: Format,
    deny: Option<String>,
    explain_types: bool,
) -> ExitCode {
    let deny_warnings = match deny.as_deref() {
        None => false,
        Some("warnings") => true,
        Some(other) => {
            eprintln!("error: `--deny {other}` is not known; the only lint group is `warnings`");
            return ExitCode::from(2);
        }
    };
    let paths = if paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        paths
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
    let mut ws = Workspace::new();
    let mut roots = Vec::new();
    for f in &files {
        let name = display_path(f);
        match std::fs::read(f) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => {
                    ws.set_file(&name, text);
                    roots.push(name);
                }
                Err(e) => {
                    eprintln!(
                        "error: `{name}` is not valid UTF-8 (at byte {})",
                        e.utf8_error().valid_up_to()
                    );
                    return ExitCode::from(2);
                }
            },
            Err(e) => {
                eprintln!("error: cannot read `{name}`: {e}");
                return ExitCode::from(2);
            }
        }
    }
    // Load imported files until the import graph is closed.
    loop {
        let missing = ws.unloaded_imports();
        if missing.is_empty() {
            break;
        }
        for m in missing {
            match std::fs::read(&m).map(String::from_utf8) {
                Ok(Ok(t)) => ws.set_file(&m, t),
                Ok(Err(_)) => ws.set_unreadable(&m, "not valid UTF-8".into()),
                Err(e) => ws.set_unreadable(&m, e.to_string()),
            }
        }
    }
    // Report on every loaded user file (roots and what they import), each once.
    let mut diags: Vec<Diagnostic> = Vec::new();
    let all = ws.paths();
    for p in &all {
        diags.extend(ws.check(p));
    }
    let errors = diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diags
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .count();
    let sources = WsSources(&ws);
    match format {
        Format::Human => {
            let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            eprint!("{}", render_human(&diags, &sources, color));
        }
        Format::Json => print!("{}", render_json(&diags, &sources)),
        Format::Sarif => print!("{}", render_sarif(&diags, &sources)),
    }
    if explain_types {
        for p in &roots {
            for (name, ty) in ws.workload_types(p) {
                println!("{name}: {ty}");
            }
        }
    }
    eprintln!(
        "checked {} file{}: {errors} error{}, {warnings} warning{}",
        all.len(),
        if all.len() == 1 { "" } else { "s" },
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" }
    );
    if errors > 0 || (deny_warnings && warnings > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
