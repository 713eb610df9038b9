//! `wsp emit`: checks a program for a target, lowers it and hands the Program IR to the
//! target's backend from the registry (built-in, or an external plugin `wsp-backend-NAME`).
//!
//! `--target ir` prints the Program IR as JSON (the format external backends read) when no
//! output is named; `--out FILE` writes a one-file tree to a file; `-o DIR` commits any tree
//! to a directory as a whole (see `wsp_backend::output`). `--list-targets` lists the
//! backends, `--list-targets --markdown` prints the capability matrix of the built-ins
//! (docs/backends.md), `--ir-schema` the JSON Schema of the Program IR
//! (docs/program-ir.schema.json).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use wsp_backend::registry::Origin;
use wsp_backend::{EmitError, EmitOptions, Registry};
use wsp_diagnostics::render::render_human;
use wsp_diagnostics::{Diagnostic, Severity};

use crate::backends::{self, PluginArgs};

/// Arguments of `wsp emit`.
#[derive(clap::Args)]
pub struct Args {
    /// The program to lower (a .wsp file).
    #[arg(required_unless_present_any = ["list_targets", "ir_schema"])]
    path: Option<PathBuf>,
    /// The backend: `ir` (Program IR JSON), a built-in (`wsp emit --list-targets`), or an
    /// external backend `wsp-backend-NAME` found on `PATH` or by `--backend-path`.
    #[arg(long, default_value = "ir")]
    target: String,
    /// Write a one-file output (the Program IR of `--target ir`) to this file, atomically,
    /// instead of standard output.
    #[arg(long, conflicts_with = "out_dir")]
    out: Option<PathBuf>,
    /// Emit the backend's tree into this directory: created, or replaced as a whole when it
    /// is empty or was produced by `wsp emit`; never a file or another non-empty directory.
    #[arg(short = 'o', long = "out-dir", value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// The architecture to emit for (one of the backend's archs; default its first). When it
    /// names an architecture model, resources are checked against it too.
    #[arg(long)]
    arch: Option<String>,
    /// The schedule to emit (default: the one `wsp run` runs); the backend gets it as the
    /// option `schedule=NAME`, which both built-ins take.
    #[arg(long, value_name = "NAME")]
    schedule: Option<String>,
    /// Emit with a value set: `--set NAME=VALUE` (repeatable). An integer constant is set
    /// before checking and lowering (as `wsp check --set` does); a param's value replaces its
    /// default in the Program IR, which the backends build in.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// A backend-specific option `KEY=VALUE` (repeatable, passed on in order).
    #[arg(long = "option", value_name = "KEY=VALUE")]
    options: Vec<String>,
    #[command(flatten)]
    plugins: PluginArgs,
    /// List the backends (built-ins and plugins found) with their archs, and exit.
    #[arg(long)]
    list_targets: bool,
    /// With --list-targets: print the built-ins' capability matrix as Markdown
    /// (docs/backends.md).
    #[arg(long, requires = "list_targets")]
    markdown: bool,
    /// Print the JSON Schema of the Program IR (docs/program-ir.schema.json) and exit.
    #[arg(long, conflicts_with = "list_targets")]
    ir_schema: bool,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

fn failure(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(1)
}

pub fn main(a: Args) -> ExitCode {
    if a.ir_schema {
        print!("{}", wsp_ir::schema::program_schema_json());
        return ExitCode::SUCCESS;
    }
    if a.list_targets && a.markdown {
        print!("{}", backends::builtins().capability_markdown());
        return ExitCode::SUCCESS;
    }
    let timeout = match a.plugins.timeout() {
        Ok(t) => t,
        Err(e) => return usage(e),
    };
    let registry = match backends::registry(&a.plugins) {
        Ok(r) => r,
        Err(e) => return usage(e),
    };
    if a.list_targets {
        return list(&registry, timeout);
    }
    let Some(path) = a.path.clone() else {
        return usage("give the .wsp file to emit");
    };
    let mut options = Vec::new();
    for o in &a.options {
        match o.split_once('=') {
            Some((k, v)) if !k.is_empty() => options.push((k.to_string(), v.to_string())),
            _ => return usage(format!("`--option {o}`: write `--option KEY=VALUE`")),
        }
    }
    let name = a.target.as_str();
    if let Some(s) = &a.schedule {
        if name == "ir" {
            return usage("`--schedule` with `--target ir`: the Program IR holds every schedule");
        }
        options.push(("schedule".to_string(), s.clone()));
    }
    let mut opts = EmitOptions {
        arch: a.arch.clone(),
        options,
        ..Default::default()
    };
    // Everything the request itself gets wrong is said before any work is done.
    if let Err(e) = registry.can_emit(name) {
        return usage(e);
    }
    if registry.is_plugin(name) && a.out_dir.is_none() {
        return usage(format!(
            "the `{name}` backend is an external plugin and writes a directory: give `-o DIR`"
        ));
    }
    if let Some(dir) = &a.out_dir {
        if let Err(e) = wsp_backend::output::check_destination(dir) {
            return usage(e);
        }
    }
    let info = match registry.info(name, timeout) {
        Ok(i) => i,
        Err(e) if e.is_usage() => return usage(e),
        Err(e) => return failure(e),
    };
    if let Err(e) = registry.check_arch(name, &opts, timeout) {
        return usage(e);
    }
    if path.is_dir() {
        return usage(format!(
            "`{}` is a directory; give one .wsp file",
            path.display()
        ));
    }
    let (mut ws, roots) = match crate::load::load(std::slice::from_ref(&path)) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let Some(root) = roots.first().cloned() else {
        return usage("nothing to emit");
    };
    let params = match crate::set_consts(&mut ws, &roots, &a.set) {
        Ok(rest) => rest,
        Err(e) => return usage(e),
    };
    // The checks of `wsp check --target NAME [--arch A]`.
    if let Some(arch) = &a.arch {
        // An arch that is not an architecture model is the backend's own name for a target.
        let _ = ws.set_arch(Some(arch));
    }
    ws.set_target_table(Some(info.capabilities.clone()), false);
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut diags = Vec::new();
    for p in ws.paths() {
        diags.extend(ws.check(&p));
    }
    if !diags.is_empty() {
        eprint!("{}", render_human(&diags, &crate::WsSources(&ws), color));
    }
    let errors = diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    if errors > 0 {
        return failure(format!(
            "`{root}`{} has {errors} error{} for the `{name}` backend; nothing was emitted",
            crate::consts_note(&ws),
            if errors == 1 { "" } else { "s" }
        ));
    }
    let mut program = match wsp_lower::lower(&ws, &root) {
        Ok(p) => p,
        Err(diags) => {
            eprint!("{}", render_human(&diags, &crate::WsSources(&ws), color));
            return failure(format!("`{root}` was not lowered"));
        }
    };
    match wsp_ir::data::resolve_params(&program, &params) {
        Ok(values) => {
            for (p, v) in program.params.iter_mut().zip(values) {
                p.default = v;
            }
        }
        Err(e) => return usage(e),
    }
    match extern_sources(&program, name) {
        Ok(sources) => opts.extern_sources = sources,
        Err(d) => {
            eprint!("{}", render_human(&[*d], &crate::WsSources(&ws), color));
            return usage("an extern kernel's source file cannot be read; nothing was emitted");
        }
    }
    let report = |e: EmitError| -> ExitCode {
        if let EmitError::Rejected {
            backend,
            diagnostics,
        } = &e
        {
            let shown = backends::not_restated(diagnostics, &info.capabilities);
            eprint!("{}", backends::render(&shown, backend, &ws));
        }
        if e.is_usage() {
            usage(e)
        } else {
            failure(e)
        }
    };
    if let Some(dir) = &a.out_dir {
        return match registry.emit_to_dir(name, &program, &opts, dir, timeout) {
            Ok(warnings) => {
                let shown = backends::not_restated(&warnings, &info.capabilities);
                eprint!("{}", backends::render(&shown, name, &ws));
                eprintln!("emitted `{root}` for `{name}` into `{}`", dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => report(e),
        };
    }
    let (tree, warnings) = match registry.emit_tree(name, &program, &opts) {
        Ok(x) => x,
        Err(e) => return report(e),
    };
    let shown = backends::not_restated(&warnings, &info.capabilities);
    eprint!("{}", backends::render(&shown, name, &ws));
    let mut files = tree.iter();
    let (Some((_, contents)), None) = (files.next(), files.next()) else {
        return usage(format!(
            "the `{name}` backend emits {} files; give `-o DIR` to write them",
            tree.len()
        ));
    };
    match &a.out {
        None => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(contents).and_then(|()| stdout.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => failure(format!("cannot write to standard output: {e}")),
            }
        }
        Some(out) => match crate::atomic::write_atomic(out, contents) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => usage(format!("cannot write `{}`: {e}", out.display())),
        },
    }
}

/// `wsp emit --list-targets`: one line per backend (plugins are asked to describe themselves).
fn list(registry: &Registry, timeout: std::time::Duration) -> ExitCode {
    let names = registry.names();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(0);
    for name in &names {
        match registry.info(name, timeout) {
            Ok(info) => {
                let archs = if info.archs.is_empty() {
                    String::new()
                } else {
                    format!("  archs: {}", info.archs.join(", "))
                };
                let what = match &info.origin {
                    Origin::Builtin => "built-in".to_string(),
                    Origin::Unavailable(reason) => format!("built-in, does not emit: {reason}"),
                    Origin::Plugin(p) => format!("plugin {}", p.display()),
                };
                let desc = if info.description.is_empty() {
                    String::new()
                } else {
                    format!("  ({})", info.description)
                };
                println!("{name:width$}  {what}{archs}{desc}");
            }
            Err(e) => println!("{name:width$}  unusable: {e}"),
        }
    }
    for p in registry.shadowed() {
        println!(
            "note: `{}` is not used: the name `{}` is taken",
            p.path.display(),
            p.name
        );
    }
    ExitCode::SUCCESS
}

/// The largest extern kernel source file `wsp emit` reads.
const MAX_EXTERN_SOURCE: u64 = 16 << 20;

/// The source files the program's extern kernels give for `target` (`ascend: "k.cpp"`), each
/// read relative to the file that declares its kernel: only regular files, at most
/// [`MAX_EXTERN_SOURCE`] bytes. E0715 at the kernel when one cannot be read.
fn extern_sources(
    program: &wsp_ir::Program,
    target: &str,
) -> Result<Vec<wsp_backend::ExternSource>, Box<Diagnostic>> {
    let mut out = Vec::new();
    for (i, k) in program.kernels.iter().enumerate() {
        for e in k.externs.iter().filter(|e| e.target == target) {
            let declaring =
                k.at.as_ref()
                    .map(|at| at.file.clone())
                    .or_else(|| program.source.clone())
                    .unwrap_or_default();
            let dir = std::path::Path::new(&declaring)
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default();
            let file = dir.join(&e.path);
            let read = || -> Result<Vec<u8>, String> {
                wsp_ir::fsio::read_regular(&file, MAX_EXTERN_SOURCE).map_err(|err| err.to_string())
            };
            match read() {
                Ok(contents) => out.push(wsp_backend::ExternSource {
                    kernel: i,
                    target: target.to_string(),
                    path: e.path.clone(),
                    contents,
                }),
                Err(why) => {
                    let at = k.at.clone().unwrap_or(wsp_ir::workload::SrcSpan {
                        file: declaring.clone(),
                        start: 0,
                        end: 0,
                    });
                    return Err(Box::new(Diagnostic::new(
                        wsp_vocab::codes::E0715,
                        format!(
                            "cannot read `{}`, the `{target}` source of the extern kernel `{}`: {why}",
                            file.display(),
                            k.name
                        ),
                        crate::label_at(&at, "declared here",
                        ),
                    )
                    .with_help(format!(
                        "the path `{}` is relative to the file that declares the kernel",
                        e.path
                    ))));
                }
            }
        }
    }
    Ok(out)
}
