//! The backend registry: every backend `wsp check --target` and `wsp emit --target` can name.
//!
//! A backend is registered one of three ways:
//!
//! * a built-in emitter, constructed by the driver and passed to [`Registry::register`] (it
//!   replaces an entry of the same name, so a placeholder becomes the real backend);
//! * a built-in without an emitter, [`Registry::register_unavailable`]: its capabilities are
//!   known (`wsp check --target` works), and `wsp emit` says why it cannot emit (the
//!   simulator runs programs instead; a built-in whose emitter the driver did not register
//!   says so);
//! * an external executable `wsp-backend-NAME` ([`Registry::add_plugins`], found with
//!   [`crate::plugin::discover`]): its archs and capabilities are what its `describe` declares,
//!   asked on first use.
//!
//! Every backend has a [`CapabilityTable`]: built-ins take the matrix's column
//! ([`Backend::capabilities`]), plugins declare theirs. Both commands read it through
//! [`Registry::info`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use wsp_arch::capabilities::{self as caps, CapabilityTable, Support, MATRIX};
use wsp_ir::Program;

use crate::output::Staging;
use crate::plugin::{Description, Failure, Plugin, PluginError};
use crate::{Backend, BackendDiagnostic, EmitOptions, FileTree};

/// The built-in `ir` backend: the Program IR as `program.json` (what external backends read
/// on standard input). It keeps every feature.
pub struct IrBackend;

impl Backend for IrBackend {
    fn name(&self) -> &str {
        "ir"
    }

    fn archs(&self) -> Vec<String> {
        Vec::new()
    }

    fn capabilities(&self) -> CapabilityTable {
        CapabilityTable::all_enforced("ir")
    }

    fn emit(
        &self,
        program: &Program,
        opts: &EmitOptions,
    ) -> Result<(FileTree, Vec<BackendDiagnostic>), Vec<BackendDiagnostic>> {
        if let Some((k, _)) = opts.options.first() {
            return Err(vec![BackendDiagnostic::error(
                format!("the `ir` backend takes no options (got `--option {k}=...`)"),
                None,
            )
            .with_help("remove the `--option`s")]);
        }
        let mut json = program.to_json();
        json.push('\n');
        let mut tree = FileTree::new();
        tree.add("program.json", json)
            .map_err(|e| vec![BackendDiagnostic::error(e, None)])?;
        Ok((tree, Vec::new()))
    }
}

enum Kind {
    Builtin {
        backend: Box<dyn Backend>,
        archs: Vec<String>,
        capabilities: CapabilityTable,
    },
    Unavailable {
        archs: Vec<String>,
        capabilities: CapabilityTable,
        reason: String,
    },
    Plugin {
        plugin: Plugin,
        described: OnceLock<Result<Description, PluginError>>,
    },
}

struct Entry {
    name: String,
    kind: Kind,
}

/// Where a backend comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Compiled into `wsp`, with an emitter.
    Builtin,
    /// Compiled into `wsp` without an emitter; the reason `wsp emit` gives.
    Unavailable(String),
    /// An external executable.
    Plugin(PathBuf),
}

/// What the registry knows of one backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    pub name: String,
    /// The architectures `--arch` may name; the first is the default. Empty: no `--arch`.
    pub archs: Vec<String>,
    pub capabilities: CapabilityTable,
    pub origin: Origin,
    /// One line for listings (plugins' own; empty for built-ins).
    pub description: String,
}

/// Why a backend was not found or did not emit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmitError {
    /// No backend of this name; the known names.
    Unknown { name: String, known: Vec<String> },
    /// The backend has no emitter here.
    Unavailable { name: String, reason: String },
    /// The request cannot be served as given (an `--arch` the backend does not have, an output
    /// directory that may not be replaced, no output directory for a multi-file tree).
    Usage(String),
    /// The backend reported errors (and maybe warnings): the program cannot be emitted.
    Rejected {
        backend: String,
        diagnostics: Vec<BackendDiagnostic>,
    },
    /// An external backend failed.
    Plugin(PluginError),
    /// The emitted tree could not be written.
    Output { backend: String, message: String },
}

impl EmitError {
    /// Whether the error is the user's request (exit status 2) rather than the program's or
    /// the backend's (exit status 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            EmitError::Unknown { .. } | EmitError::Unavailable { .. } | EmitError::Usage(_)
        )
    }
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::Unknown { name, known } => {
                write!(f, "unknown target `{name}`; targets: {}", known.join(", "))
            }
            EmitError::Unavailable { reason, .. } => f.write_str(reason),
            EmitError::Usage(m) => f.write_str(m),
            EmitError::Rejected {
                backend,
                diagnostics,
            } => {
                let n = diagnostics
                    .iter()
                    .filter(|d| d.severity == crate::Severity::Error)
                    .count();
                write!(
                    f,
                    "the `{backend}` backend reported {n} error{}; nothing was written",
                    if n == 1 { "" } else { "s" }
                )
            }
            EmitError::Plugin(e) => write!(f, "{e}"),
            EmitError::Output { backend, message } => {
                write!(f, "writing the `{backend}` tree: {message}")
            }
        }
    }
}

impl std::error::Error for EmitError {}

/// The backends `wsp` knows, in registration order (built-ins first, then plugins).
#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
    shadowed: Vec<Plugin>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// The built-ins: `sim` (capabilities only: it runs programs), `ir`, and places for `ascend`
    /// and `aie`, whose emitters live in crates of their own (`wsp-ascend`, `wsp-aie`, which
    /// depend on this one): the driver registers them with [`Registry::register`], and until
    /// then they have their capabilities from the matrix and refuse to emit.
    pub fn with_builtins() -> Registry {
        let mut r = Registry::new();
        r.register_unavailable(
            "sim",
            Vec::new(),
            CapabilityTable::builtin(caps::Backend::Sim),
            "the `sim` backend runs programs instead of emitting them: use `wsp run FILE`",
        );
        for b in [caps::Backend::Ascend, caps::Backend::Aie] {
            r.register_unavailable(
                b.name(),
                Vec::new(),
                CapabilityTable::builtin(b),
                &format!(
                    "the `{b}` backend's emitter is not registered in this build of the driver"
                ),
            );
        }
        r.register(Box::new(IrBackend));
        r
    }

    fn put(&mut self, entry: Entry) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.name == entry.name) {
            *e = entry;
            return;
        }
        let at = self
            .entries
            .iter()
            .position(|e| matches!(e.kind, Kind::Plugin { .. }))
            .unwrap_or(self.entries.len());
        self.entries.insert(at, entry);
    }

    /// Registers a built-in emitter under its [`Backend::name`], replacing an entry of that
    /// name (a placeholder of [`Registry::with_builtins`], or a plugin).
    pub fn register(&mut self, backend: Box<dyn Backend>) {
        let entry = Entry {
            name: backend.name().to_string(),
            kind: Kind::Builtin {
                archs: backend.archs(),
                capabilities: backend.capabilities(),
                backend,
            },
        };
        self.put(entry);
    }

    /// Registers a built-in backend without an emitter: `reason` is what `wsp emit` answers.
    pub fn register_unavailable(
        &mut self,
        name: &str,
        archs: Vec<String>,
        capabilities: CapabilityTable,
        reason: &str,
    ) {
        self.put(Entry {
            name: name.to_string(),
            kind: Kind::Unavailable {
                archs,
                capabilities,
                reason: reason.to_string(),
            },
        });
    }

    /// Adds external backends (see [`crate::plugin::discover`]). A plugin whose name is taken
    /// (by a built-in, or an earlier plugin) is not added; it is listed by
    /// [`Registry::shadowed`].
    pub fn add_plugins(&mut self, plugins: Vec<Plugin>) {
        for plugin in plugins {
            if self.entries.iter().any(|e| e.name == plugin.name) {
                self.shadowed.push(plugin);
                continue;
            }
            self.entries.push(Entry {
                name: plugin.name.clone(),
                kind: Kind::Plugin {
                    plugin,
                    described: OnceLock::new(),
                },
            });
        }
    }

    /// Plugins that were not added because their name was taken.
    pub fn shadowed(&self) -> &[Plugin] {
        &self.shadowed
    }

    /// Every backend's name, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.name.clone()).collect()
    }

    /// Whether the backend of this name is an external plugin.
    pub fn is_plugin(&self, name: &str) -> bool {
        matches!(self.entry(name).map(|e| &e.kind), Some(Kind::Plugin { .. }))
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    fn lookup(&self, name: &str) -> Result<&Entry, EmitError> {
        self.entry(name).ok_or_else(|| EmitError::Unknown {
            name: name.to_string(),
            known: self.names(),
        })
    }

    /// What the registry knows of a backend: a plugin is asked (`describe`, once, within
    /// `timeout`).
    pub fn info(&self, name: &str, timeout: Duration) -> Result<Info, EmitError> {
        let e = self.lookup(name)?;
        Ok(match &e.kind {
            Kind::Builtin {
                archs,
                capabilities,
                ..
            } => Info {
                name: e.name.clone(),
                archs: archs.clone(),
                capabilities: capabilities.clone(),
                origin: Origin::Builtin,
                description: String::new(),
            },
            Kind::Unavailable {
                archs,
                capabilities,
                reason,
            } => Info {
                name: e.name.clone(),
                archs: archs.clone(),
                capabilities: capabilities.clone(),
                origin: Origin::Unavailable(reason.clone()),
                description: String::new(),
            },
            Kind::Plugin { plugin, described } => {
                let d = described
                    .get_or_init(|| plugin.describe(timeout))
                    .clone()
                    .map_err(EmitError::Plugin)?;
                Info {
                    name: e.name.clone(),
                    archs: d.archs,
                    capabilities: d.capabilities,
                    origin: Origin::Plugin(plugin.path.clone()),
                    description: d.description,
                }
            }
        })
    }

    /// Whether `name` can emit at all: `Err` for an unknown name or a backend without an
    /// emitter (before any work is done).
    pub fn can_emit(&self, name: &str) -> Result<(), EmitError> {
        match &self.lookup(name)?.kind {
            Kind::Unavailable { reason, .. } => Err(EmitError::Unavailable {
                name: name.to_string(),
                reason: reason.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Checks `opts.arch` against the backend's archs.
    pub fn check_arch(
        &self,
        name: &str,
        opts: &EmitOptions,
        timeout: Duration,
    ) -> Result<(), EmitError> {
        let info = self.info(name, timeout)?;
        match &opts.arch {
            Some(a) if info.archs.is_empty() => Err(EmitError::Usage(format!(
                "the `{name}` backend takes no `--arch` (got `{a}`)"
            ))),
            Some(a) if !info.archs.contains(a) => Err(EmitError::Usage(format!(
                "the `{name}` backend has no arch `{a}`; its archs: {}",
                info.archs.join(", ")
            ))),
            _ => Ok(()),
        }
    }

    /// Emits with a built-in backend, returning its tree and warnings (for printing a
    /// one-file tree, or committing it elsewhere). A plugin writes files itself: use
    /// [`Registry::emit_to_dir`].
    pub fn emit_tree(
        &self,
        name: &str,
        program: &Program,
        opts: &EmitOptions,
    ) -> Result<(FileTree, Vec<BackendDiagnostic>), EmitError> {
        self.can_emit(name)?;
        match &self.lookup(name)?.kind {
            Kind::Builtin { backend, .. } => {
                self.check_arch(name, opts, Duration::ZERO)?;
                backend
                    .emit(program, opts)
                    .map_err(|diagnostics| EmitError::Rejected {
                        backend: name.to_string(),
                        diagnostics,
                    })
            }
            _ => Err(EmitError::Usage(format!(
                "the `{name}` backend is an external plugin and writes a directory: give `-o DIR`"
            ))),
        }
    }

    /// Emits with any backend into the directory `dest`, replacing it as a whole on success
    /// (see [`crate::output`]); on failure `dest` is left as it was. Returns the warnings.
    pub fn emit_to_dir(
        &self,
        name: &str,
        program: &Program,
        opts: &EmitOptions,
        dest: &Path,
        timeout: Duration,
    ) -> Result<Vec<BackendDiagnostic>, EmitError> {
        self.can_emit(name)?;
        self.check_arch(name, opts, timeout)?;
        crate::output::check_destination(dest).map_err(EmitError::Usage)?;
        let out_err = |message: String| EmitError::Output {
            backend: name.to_string(),
            message,
        };
        let staging = Staging::beside(dest).map_err(out_err)?;
        let warnings = match &self.lookup(name)?.kind {
            Kind::Builtin { backend, .. } => {
                let (tree, warnings) =
                    backend
                        .emit(program, opts)
                        .map_err(|diagnostics| EmitError::Rejected {
                            backend: name.to_string(),
                            diagnostics,
                        })?;
                staging.write_tree(&tree).map_err(out_err)?;
                staging.verify().map_err(out_err)?;
                warnings
            }
            Kind::Plugin { plugin, .. } => {
                let json = program.to_json();
                let warnings = plugin
                    .emit(
                        json.as_bytes(),
                        opts,
                        staging.dir(),
                        staging.wrapper(),
                        timeout,
                    )
                    .map_err(|e| match e {
                        Ok(diagnostics) => EmitError::Rejected {
                            backend: name.to_string(),
                            diagnostics,
                        },
                        Err(p) => EmitError::Plugin(p),
                    })?;
                staging.verify().map_err(|m| {
                    EmitError::Plugin(PluginError {
                        plugin: plugin.name.clone(),
                        path: plugin.path.clone(),
                        command: "emit",
                        failure: Box::new(Failure::Protocol(m)),
                        stderr: String::new(),
                    })
                })?;
                warnings
            }
            Kind::Unavailable { .. } => unreachable_unavailable(name)?,
        };
        staging.commit(name).map_err(out_err)?;
        Ok(warnings)
    }

    /// The capability matrix of the registered built-ins (plugins are left out, so the text
    /// does not depend on `PATH`) as Markdown: a table of every feature's support per
    /// backend, then each backend's reasons for what it does not enforce. docs/backends.md
    /// holds this text.
    pub fn capability_markdown(&self) -> String {
        let tables: Vec<&CapabilityTable> = self
            .entries
            .iter()
            .filter_map(|e| match &e.kind {
                Kind::Builtin { capabilities, .. } | Kind::Unavailable { capabilities, .. } => {
                    Some(capabilities)
                }
                Kind::Plugin { .. } => None,
            })
            .collect();
        let mut out = String::from("| feature | key |");
        for t in &tables {
            out.push_str(&format!(" {} |", t.name()));
        }
        out.push_str("\n|---|---|");
        out.push_str(&"---|".repeat(tables.len()));
        out.push('\n');
        for c in MATRIX {
            out.push_str(&format!(
                "| {} | `{}` |",
                c.written.replace('|', "\\|"),
                c.key
            ));
            for t in &tables {
                let s = t.entry(c.key).map(|e| e.support.name()).unwrap_or("?");
                out.push_str(&format!(" {s} |"));
            }
            out.push('\n');
        }
        for t in &tables {
            let losses: Vec<_> = t
                .iter()
                .filter(|(_, e)| e.support != Support::Enforced)
                .collect();
            out.push_str(&format!("\n**{}**", t.name()));
            if losses.is_empty() {
                out.push_str(": enforces every feature.\n");
                continue;
            }
            out.push_str(":\n\n");
            for (c, e) in losses {
                out.push_str(&format!("- `{}` ({}): {}\n", c.key, e.support, e.reason));
            }
        }
        out
    }
}

fn unreachable_unavailable<T>(name: &str) -> Result<T, EmitError> {
    Err(EmitError::Unavailable {
        name: name.to_string(),
        reason: format!("the `{name}` backend has no emitter"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsp_ir::Program;

    struct Fake {
        name: &'static str,
        fail: bool,
    }

    impl Backend for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn archs(&self) -> Vec<String> {
            vec!["a1".into(), "a2".into()]
        }
        fn emit(
            &self,
            _program: &Program,
            opts: &EmitOptions,
        ) -> Result<(FileTree, Vec<BackendDiagnostic>), Vec<BackendDiagnostic>> {
            if self.fail {
                return Err(vec![BackendDiagnostic::error("cannot", None)]);
            }
            let mut t = FileTree::new();
            t.add("src/k.c", format!("arch {:?}", opts.arch)).unwrap();
            Ok((t, vec![BackendDiagnostic::warning("approximated", None)]))
        }
    }

    fn program() -> Program {
        Program::new()
    }

    #[test]
    fn builtins_and_registration() {
        let mut r = Registry::with_builtins();
        assert_eq!(r.names(), ["sim", "ascend", "aie", "ir"]);
        let t = Duration::from_secs(1);
        let aie = r.info("aie", t).unwrap();
        assert_eq!(
            aie.capabilities,
            CapabilityTable::builtin(caps::Backend::Aie)
        );
        assert!(matches!(aie.origin, Origin::Unavailable(ref m) if m.contains("not registered")));
        let e = r.can_emit("sim").unwrap_err();
        assert!(e.is_usage() && e.to_string().contains("wsp run"), "{e}");
        let e = r.info("gpu", t).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown target `gpu`; targets: sim, ascend, aie, ir"
        );
        // Registering the real emitter replaces the placeholder, in place, with the matrix's
        // column.
        r.register(Box::new(Fake {
            name: "aie",
            fail: false,
        }));
        assert_eq!(r.names(), ["sim", "ascend", "aie", "ir"]);
        let aie = r.info("aie", t).unwrap();
        assert_eq!(aie.origin, Origin::Builtin);
        assert_eq!(
            aie.capabilities,
            CapabilityTable::builtin(caps::Backend::Aie)
        );
        assert_eq!(aie.archs, ["a1", "a2"]);
        // A backend the matrix does not list supports nothing until it declares otherwise.
        r.register(Box::new(Fake {
            name: "new",
            fail: true,
        }));
        let new = r.info("new", t).unwrap();
        assert!(new
            .capabilities
            .iter()
            .all(|(_, e)| e.support == Support::Unsupported));
        // The ir backend keeps everything and emits program.json.
        let ir = r.info("ir", t).unwrap();
        assert_eq!(ir.capabilities, CapabilityTable::all_enforced("ir"));
        let (tree, w) = r
            .emit_tree("ir", &program(), &EmitOptions::default())
            .unwrap();
        assert!(w.is_empty());
        let json = std::str::from_utf8(tree.get("program.json").unwrap()).unwrap();
        assert!(Program::from_json(json).is_ok());
        let with_option = EmitOptions {
            arch: None,
            options: vec![("k".into(), "v".into())],
            ..Default::default()
        };
        let e = r.emit_tree("ir", &program(), &with_option).unwrap_err();
        assert!(matches!(e, EmitError::Rejected { .. }), "{e}");
    }

    #[test]
    fn emit_to_dir_commits_or_leaves_nothing() {
        let mut r = Registry::with_builtins();
        r.register(Box::new(Fake {
            name: "aie",
            fail: false,
        }));
        r.register(Box::new(Fake {
            name: "bad",
            fail: true,
        }));
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("out");
        let t = Duration::from_secs(1);
        let opts = EmitOptions {
            arch: Some("a2".into()),
            options: Vec::new(),
            ..Default::default()
        };
        let w = r.emit_to_dir("aie", &program(), &opts, &dest, t).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(
            std::fs::read_to_string(dest.join("src/k.c")).unwrap(),
            "arch Some(\"a2\")"
        );
        assert!(dest.join(crate::output::MARKER).is_file());
        // Errors: nothing changes.
        let e = r
            .emit_to_dir("bad", &program(), &EmitOptions::default(), &dest, t)
            .unwrap_err();
        assert!(matches!(e, EmitError::Rejected { .. }) && !e.is_usage());
        let bad_arch = EmitOptions {
            arch: Some("z".into()),
            options: Vec::new(),
            ..Default::default()
        };
        let e = r
            .emit_to_dir("aie", &program(), &bad_arch, &dest, t)
            .unwrap_err();
        assert!(
            e.is_usage() && e.to_string().contains("its archs: a1, a2"),
            "{e}"
        );
        let e = r
            .emit_to_dir("ascend", &program(), &EmitOptions::default(), &dest, t)
            .unwrap_err();
        assert!(e.to_string().contains("not registered"));
        assert!(dest.join("src/k.c").is_file());
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out"]);
    }

    #[test]
    fn markdown_lists_every_feature_and_reason() {
        let md = Registry::with_builtins().capability_markdown();
        assert!(md.starts_with("| feature | key | sim | ascend | aie | ir |\n"));
        for c in MATRIX {
            assert!(md.contains(&format!("`{}`", c.key)), "{}", c.key);
            for b in caps::Backend::ALL {
                let e = c.on(b);
                if !e.reason.is_empty() {
                    assert!(md.contains(e.reason), "{}", e.reason);
                }
            }
        }
        assert!(md.contains("**ir**: enforces every feature."));
    }
}
