//! The backends `wsp check --target` and `wsp emit --target` name: the registry of built-ins
//! and the external plugins found on `PATH` or through `--backend-path`, and the rendering of
//! what backends report.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use wsp_backend::{BackendDiagnostic, Registry, Severity as BackendSeverity};
use wsp_core::Workspace;
use wsp_diagnostics::render::render_human;
use wsp_diagnostics::{Diagnostic, FileName, Label};
use wsp_syntax::Span;

/// Code of an error a backend reported (see `wsp explain E0720`).
pub const BACKEND_ERROR: &str = wsp_vocab::codes::E0720;
/// Code of a warning a backend reported (see `wsp explain W0721`).
pub const BACKEND_WARNING: &str = wsp_vocab::codes::W0721;

/// Where external backends are found, and how long they may take.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct PluginArgs {
    /// An external backend executable `wsp-backend-NAME`, or a directory holding such
    /// executables; searched before `PATH` (repeatable).
    #[arg(long = "backend-path", value_name = "FILE_OR_DIR")]
    pub backend_path: Vec<PathBuf>,
    /// Seconds an external backend may take for one command before it is killed.
    #[arg(long = "backend-timeout", value_name = "SECS", default_value_t = 60.0)]
    pub backend_timeout: f64,
}

impl PluginArgs {
    pub fn timeout(&self) -> Result<Duration, String> {
        if self.backend_timeout.is_nan() || self.backend_timeout <= 0.0 {
            return Err(format!(
                "`--backend-timeout {}`: give a positive number of seconds",
                self.backend_timeout
            ));
        }
        Duration::try_from_secs_f64(self.backend_timeout).map_err(|_| {
            format!(
                "`--backend-timeout {}`: give a number of seconds",
                self.backend_timeout
            )
        })
    }
}

/// The built-in backends of this `wsp`: the registry's own (`sim`, `ascend`, `aie`, `ir`),
/// with every emitter compiled into the command registered over its placeholder.
pub fn builtins() -> Registry {
    let mut r = Registry::with_builtins();
    r.register(Box::new(wsp_ascend::AscendBackend));
    r.register(Box::new(wsp_aie::AieBackend));
    r
}

/// The built-ins and the plugins found through `--backend-path` and `PATH`.
pub fn registry(args: &PluginArgs) -> Result<Registry, String> {
    let mut r = builtins();
    let path_env = std::env::var_os("PATH");
    let plugins = wsp_backend::plugin::discover(&args.backend_path, path_env.as_deref())?;
    r.add_plugins(plugins);
    Ok(r)
}

/// What a backend reported, without the warnings that restate a capability of the matrix the
/// target's table does not enforce: the checker already reported each use of those at its
/// span (W0710) before the backend ran.
pub fn not_restated(
    diags: &[BackendDiagnostic],
    table: &wsp_arch::capabilities::CapabilityTable,
) -> Vec<BackendDiagnostic> {
    diags
        .iter()
        .filter(|d| {
            !(d.severity == BackendSeverity::Warning
                && d.capability.as_deref().is_some_and(|key| {
                    table
                        .entry(key)
                        .is_some_and(|e| e.support != wsp_arch::capabilities::Support::Enforced)
                }))
        })
        .cloned()
        .collect()
}

/// Renders what a backend reported: as `wsp`'s own diagnostics (E0720 for errors, W0721 for
/// warnings) with the source span when the diagnostic has one inside a loaded file, as text
/// otherwise.
pub fn render(diags: &[BackendDiagnostic], backend: &str, ws: &Workspace) -> String {
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = String::new();
    for d in diags {
        let code = match d.severity {
            BackendSeverity::Error => BACKEND_ERROR,
            BackendSeverity::Warning => BACKEND_WARNING,
        };
        let located = d.at.as_ref().and_then(|at| {
            let file = FileName::new(at.file.as_str());
            let text = ws.text(&file)?;
            let (start, end) = (at.start as usize, at.end as usize);
            (start <= end
                && end <= text.len()
                && text.is_char_boundary(start)
                && text.is_char_boundary(end))
            .then_some((file, at))
        });
        match located {
            Some((file, at)) => {
                let mut diag = Diagnostic::new(
                    code,
                    d.message.clone(),
                    Label::new(
                        file,
                        Span::new(at.start, at.end),
                        format!("reported by the `{backend}` backend"),
                    ),
                );
                if let Some(h) = &d.help {
                    diag = diag.with_help(h.clone());
                }
                out.push_str(&render_human(&[diag], &crate::WsSources(ws), color));
            }
            None => {
                let sev = match d.severity {
                    BackendSeverity::Error => "error",
                    BackendSeverity::Warning => "warning",
                };
                out.push_str(&format!("{sev}[{code}]: {}\n", d.message));
                match &d.at {
                    Some(at) => out.push_str(&format!(
                        "  = note: reported by the `{backend}` backend at `{}` bytes {}..{}, which is not a span of a loaded file\n",
                        at.file, at.start, at.end
                    )),
                    None => out.push_str(&format!(
                        "  = note: reported by the `{backend}` backend\n"
                    )),
                }
                if let Some(h) = &d.help {
                    out.push_str(&format!("  = help: {h}\n"));
                }
            }
        }
    }
    out
}
