//! The `wsp` command.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

mod atomic;
mod backends;
mod bench;
mod commit;
mod emit;
mod fmt;
mod load;
mod lsp;
mod report;
mod run;

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
        /// Turn on an opt-in lint (repeatable): `narrowing` warns of a store into an
        /// `out`/`inout` tile whose dtype cannot hold every value stored (W0201).
        #[arg(long = "warn", value_name = "LINT")]
        warn: Vec<String>,
        /// Check with an integer constant set to another value: `--set NAME=VALUE`
        /// (repeatable; every constant of that name, in the files and the modules they import).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        set: Vec<String>,
        /// Print the type of every workload.
        #[arg(long)]
        explain_types: bool,
        /// Print each kernel's peak bytes per on-chip buffer on the architecture model.
        #[arg(long)]
        explain_memory: bool,
        /// Architecture model for resource checks (ascend910b, ascend950, aie-ml, ..., or a
        /// model file FILE.toml);
        /// default: each file's schedule `.target(...)`, else ascend910b.
        #[arg(long)]
        arch: Option<String>,
        /// Backend to check capabilities for (sim, ascend, aie, ir, or an external backend
        /// `wsp-backend-NAME`): warns about every directive, kernel operation and CSP feature it
        /// only records or diagnoses, rejects unsupported ones.
        #[arg(long)]
        target: Option<String>,
        /// With --target: a feature the backend does not enforce is an error.
        #[arg(long)]
        strict: bool,
        #[command(flatten)]
        plugins: backends::PluginArgs,
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
    /// Compile a program and run it on real data, modelling the NPU's time in cycles.
    Run(run::Args),
    /// Draw a program's task graph: run its orchestration (timing only) and write the graph as
    /// SVG, PNG or PDF through Graphviz's `dot`, or as DOT.
    Graph(run::GraphArgs),
    /// Time the building and timing of a program's task graph at several sizes, each in a
    /// process of its own (default: the LLaMA-7B layer at 1K to 128K tokens): the PTO-WSP
    /// seed's table.
    Bench(bench::Args),
    /// Check and lower a program and emit it with a backend (`--target ir`, a built-in, or an
    /// external `wsp-backend-NAME`).
    Emit(emit::Args),
    /// Format .wsp files (keeps comments; `--check` only reports).
    Fmt(fmt::Args),
    /// Serve the language server protocol on stdin/stdout.
    Lsp(lsp::Args),
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Human,
    Json,
    /// SARIF 2.1.0, for CI code scanning.
    Sarif,
}

pub(crate) struct WsSources<'a>(&'a Workspace);

impl Sources for WsSources<'_> {
    fn text(&self, file: &FileName) -> Option<Arc<str>> {
        self.0.text(file)
    }
}

fn main() -> ExitCode {
    // Like other command-line tools, end quietly when the reader of standard output or error
    // goes away (`wsp run x.wsp | head -1`): Rust ignores SIGPIPE, and a print to the closed
    // pipe would panic instead.
    #[cfg(unix)]
    // SAFETY: restores the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
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
            warn,
            set,
            explain_types,
            explain_memory,
            arch,
            target,
            strict,
            plugins,
        } => check(
            paths,
            format,
            (deny, warn, set),
            explain_types,
            explain_memory,
            arch,
            (target, strict, plugins),
        ),
        Command::Explain {
            code,
            list,
            markdown,
        } => explain(code, list, markdown),
        Command::Run(a) => run::main(a),
        Command::Graph(a) => run::main(a.into()),
        Command::Bench(a) => bench::main(a),
        Command::Emit(a) => emit::main(a),
        Command::Fmt(a) => fmt::main(a),
        Command::Lsp(a) => lsp::main(a),
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
            if let Some((new, text)) = wsp_diagnostics::renamed(&code)
                .and_then(|new| Some((new, wsp_diagnostics::explain(new)?)))
            {
                eprintln!("note: `{code}` is now `{new}`; its explanation follows");
                print!("{text}");
                return ExitCode::SUCCESS;
            }
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

fn check(
    paths: Vec<PathBuf>,
    format: Format,
    (deny, warn, set): (Option<String>, Vec<String>, Vec<String>),
    explain_types: bool,
    explain_memory: bool,
    arch: Option<String>,
    (target, strict, plugins): (Option<String>, bool, backends::PluginArgs),
) -> ExitCode {
    // The capability column of the target: the matrix's for a built-in, the declared one of
    // an external backend (asked with `describe`).
    let table = match &target {
        Some(t) => {
            let registry = match backends::registry(&plugins) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let timeout = match plugins.timeout() {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            match registry.info(t, timeout) {
                Ok(info) => Some(info.capabilities),
                Err(wsp_backend::EmitError::Unknown { known, .. }) => {
                    eprintln!(
                        "error: no backend `{t}` for `--target`; known: {}",
                        known.join(", ")
                    );
                    return ExitCode::from(2);
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(1);
                }
            }
        }
        None if strict => {
            eprintln!("error: `--strict` needs `--target sim|ascend|aie|...`");
            return ExitCode::from(2);
        }
        None => None,
    };
    let deny_warnings = match deny.as_deref() {
        None => false,
        Some("warnings") => true,
        Some(other) => {
            eprintln!("error: `--deny {other}` is not known; the only lint group is `warnings`");
            return ExitCode::from(2);
        }
    };
    let (mut ws, roots) = match load::load(&paths) {
        Ok(x) => x,
        Err(code) => return code,
    };
    if let Some(name) = &arch {
        if let Err(e) = set_arch(&mut ws, name) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    ws.set_target_table(table, strict);
    match set_consts(&mut ws, &roots, &set) {
        Ok(rest) => {
            if let Some((name, _)) = rest.first() {
                eprintln!(
                    "error: --set {name}: no integer constant `{name}` in the checked programs \
                     (`wsp check` sets constants; `wsp run --set` binds params and DenseDyn sizes)"
                );
                return ExitCode::from(2);
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    let lints: Vec<&str> = warn.iter().map(String::as_str).collect();
    if let Err(e) = ws.set_lints(&lints) {
        eprintln!("error: --warn: {e}");
        return ExitCode::from(2);
    }
    // Report on every loaded user file (roots and what they import), each once.
    let mut diags: Vec<Diagnostic> = Vec::new();
    let all = ws.paths();
    for p in &all {
        diags.extend(ws.check(p));
    }
    // Errors of the std modules they import (with `--set`, a module can be wrong), each once.
    diags.extend(ws.std_errors(&roots));
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
    if explain_memory {
        for p in &roots {
            for (name, fp) in ws.kernel_footprints(p) {
                println!("kernel {name} on {}: {}", fp.arch, fp.summary());
            }
        }
    }
    eprintln!(
        "checked {} file{}{}: {errors} error{}, {warnings} warning{}",
        all.len(),
        if all.len() == 1 { "" } else { "s" },
        consts_note(&ws),
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" }
    );
    if errors > 0 || (deny_warnings && warnings > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Splits the `--set NAME=VALUE` options for the programs rooted at `roots`: a name of one of
/// their integer constants sets that constant on `ws` (the programs are checked and lowered
/// with it; a value that is not an integer is an error), the others (params, `DenseDyn` sizes)
/// are returned for the run to bind. An option not `NAME=VALUE`, or a name given twice, is an
/// error.
pub(crate) fn set_consts(
    ws: &mut Workspace,
    roots: &[String],
    options: &[String],
) -> Result<Vec<(String, String)>, String> {
    let set = options
        .iter()
        .map(|s| run::split_kv("--set", s))
        .collect::<Result<Vec<_>, _>>()?;
    let consts: std::collections::BTreeSet<String> =
        roots.iter().flat_map(|r| ws.int_consts(r)).collect();
    let mut values = std::collections::BTreeMap::new();
    let mut rest = Vec::new();
    for (i, (name, text)) in set.iter().enumerate() {
        if set[..i].iter().any(|(n, _)| n == name) {
            return Err(format!("--set gives `{name}` twice; give each name once"));
        }
        if consts.contains(name) {
            let v = text.parse::<i64>().map_err(|_| {
                format!("--set {name}={text}: `{name}` is an integer constant; give an integer")
            })?;
            values.insert(name.clone(), v);
        } else {
            rest.push((name.clone(), text.clone()));
        }
    }
    ws.set_consts(values);
    Ok(rest)
}

/// How the constants set by `--set` read after a summary (" with rows = 32, D = 64"); empty
/// when none are.
pub(crate) fn consts_note(ws: &Workspace) -> String {
    let set = ws.consts_set();
    if set.is_empty() {
        return String::new();
    }
    let vals: Vec<String> = set.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    format!(" with {}", vals.join(", "))
}

/// A label at a source range the IR carries (a task call, a kernel), for run- and emit-time
/// diagnostics.
pub(crate) fn label_at(
    at: &wsp_ir::workload::SrcSpan,
    msg: impl Into<String>,
) -> wsp_diagnostics::Label {
    wsp_diagnostics::Label::new(
        wsp_diagnostics::FileName::new(at.file.as_str()),
        wsp_syntax::Span::new(at.start, at.end.max(at.start)),
        msg,
    )
}

/// Checks resources against `--arch NAME` (a built-in model, in either spelling) or
/// `--arch FILE.toml`, read once; returns the model.
pub(crate) fn set_arch(ws: &mut wsp_core::Workspace, name: &str) -> Result<wsp_arch::Arch, String> {
    let path = std::path::Path::new(name);
    if name.ends_with(".toml") || path.is_file() {
        let text = wsp_ir::fsio::read_source(path)
            .map_err(|e| format!("{name}: cannot read the file: {e}"))?;
        ws.set_arch_file(name, &text)?;
        return wsp_arch::Arch::parse(&text, name).map_err(|e| e.to_string());
    }
    ws.set_arch(Some(name))?;
    let n = wsp_core::memory::builtin_arch_name(name).unwrap_or_else(|| name.to_string());
    wsp_arch::Arch::builtin(&n).map_err(|e| e.to_string())
}
