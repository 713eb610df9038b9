//! The backend interface: what `wsp emit --target NAME` and `wsp check --target NAME` drive.
//!
//! A [`Backend`] turns a lowered [`Program`] into a [`FileTree`] (the files of a source tree,
//! by relative path), or explains with [`BackendDiagnostic`]s what it cannot lower. It never
//! writes the file system itself: the driver commits a tree to its output directory as a
//! whole, so a failed emission leaves nothing half-written ([`output`]).
//!
//! The [`registry`] holds every backend `wsp` knows: the built-ins (constructed by the driver
//! and [`Registry::register`]ed) and external executables `wsp-backend-NAME` ([`plugin`]),
//! each with its capability column (`wsp_arch::capabilities`), which `wsp check --target` and
//! `wsp emit --target` both read.

pub mod output;
pub mod plugin;
pub mod registry;

pub use registry::{EmitError, Registry};

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use wsp_arch::capabilities::{self as caps, CapabilityTable, Support};
use wsp_ir::workload::SrcSpan;
use wsp_ir::Program;

/// Options of one emission.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EmitOptions {
    /// The architecture the tree is for (`--arch`), when the backend has more than one.
    pub arch: Option<String>,
    /// Backend-specific options, `--option KEY=VALUE`, in the order given.
    pub options: Vec<(String, String)>,
    /// The source files extern kernels give for this backend (`ascend: "k.cpp"`), read by the
    /// driver (backends never read the file system).
    pub extern_sources: Vec<ExternSource>,
}

/// The contents of an extern kernel's source file for one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternSource {
    /// Index of the kernel in [`Program::kernels`].
    pub kernel: usize,
    /// The target the file is for (`ascend`).
    pub target: String,
    /// The path as the program writes it.
    pub path: String,
    pub contents: Vec<u8>,
}

impl EmitOptions {
    /// The source file kernel `kernel` gives for `target`, when the driver read one.
    pub fn extern_source(&self, kernel: usize, target: &str) -> Option<&ExternSource> {
        self.extern_sources
            .iter()
            .find(|s| s.kernel == kernel && s.target == target)
    }
}

/// The files of an emitted source tree: relative paths (`/`-separated, no `..`, no leading
/// `/`) to contents. Ordered, so a tree's listing and hashing are deterministic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileTree {
    files: BTreeMap<String, Vec<u8>>,
}

impl FileTree {
    pub fn new() -> FileTree {
        FileTree::default()
    }

    /// Adds a file. Refuses a path that could leave the output directory, and one already in
    /// the tree (two kernels whose names differ only in punctuation would share a file).
    pub fn add(&mut self, path: &str, contents: impl Into<Vec<u8>>) -> Result<(), String> {
        check_relative_path(path)?;
        if self.files.contains_key(path) {
            return Err(format!(
                "`{path}` would be written twice (two items whose names differ only in characters a file name cannot keep?)"
            ));
        }
        self.files.insert(path.to_string(), contents.into());
        Ok(())
    }

    pub fn get(&self, path: &str) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files.iter().map(|(p, c)| (p.as_str(), c.as_slice()))
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Why `path` is not a safe relative path inside an output directory, if it is not.
pub fn check_relative_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("an emitted file has an empty path".into());
    }
    if path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return Err(format!(
            "emitted file `{path}` is not a relative `/`-separated path"
        ));
    }
    if path
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(format!(
            "emitted file `{path}` has an empty, `.` or `..` component"
        ));
    }
    Ok(())
}

/// `s` as a C (and C++) string literal: `"`, `\\` and newlines escaped, printable ASCII as is,
/// every other byte as an octal escape. Emitters write names and paths into generated code with
/// it.
pub fn c_string_literal(s: &str) -> String {
    use std::fmt::Write as _;
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if c.is_ascii_graphic() || c == ' ' => o.push(c),
            c => {
                let mut b = [0u8; 4];
                for x in c.encode_utf8(&mut b).bytes() {
                    let _ = write!(o, "\\{x:03o}");
                }
            }
        }
    }
    o.push('"');
    o
}

/// Severity of a backend diagnostic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// Something a backend reports about a program: a construct it cannot lower, a resource the
/// target does not have. Serialized as the JSON diagnostics external backends print.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendDiagnostic {
    pub severity: Severity,
    /// What the target cannot do, in one sentence.
    pub message: String,
    /// Where in the source, when the IR knows it (task calls, kernels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<SrcSpan>,
    /// What the user can do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// The capability-matrix key (`kernel.pipe`) a warning restates, when it is one: the
    /// checker reports every use of a capability the backend's table does not enforce at its
    /// span (W0710), so `wsp` shows such a warning only for a capability the table enforces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
}

impl BackendDiagnostic {
    pub fn error(message: impl Into<String>, at: Option<SrcSpan>) -> BackendDiagnostic {
        BackendDiagnostic {
            severity: Severity::Error,
            message: message.into(),
            at,
            help: None,
            capability: None,
        }
    }

    pub fn warning(message: impl Into<String>, at: Option<SrcSpan>) -> BackendDiagnostic {
        BackendDiagnostic {
            severity: Severity::Warning,
            message: message.into(),
            at,
            help: None,
            capability: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> BackendDiagnostic {
        self.help = Some(help.into());
        self
    }

    /// Marks a warning as restating capability `key` of the matrix.
    pub fn with_capability(mut self, key: impl Into<String>) -> BackendDiagnostic {
        self.capability = Some(key.into());
        self
    }
}

impl fmt::Display for BackendDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// A backend. Implementations are pure: they read the program and return files or
/// diagnostics.
pub trait Backend {
    /// The name `--target` selects (`ascend`, `aie`, `ir`, an external plugin's name).
    fn name(&self) -> &str;

    /// The architectures `--arch` may name for this backend; the first is the default. Empty
    /// when the backend takes no architecture.
    fn archs(&self) -> Vec<String>;

    /// How the backend treats every feature of the language (what `wsp check --target`
    /// checks). By default the column of the capability matrix with the backend's name; a
    /// backend the matrix does not list supports nothing until it says otherwise.
    fn capabilities(&self) -> CapabilityTable {
        match caps::Backend::from_name(self.name()) {
            Some(b) => CapabilityTable::builtin(b),
            None => CapabilityTable::uniform(
                self.name(),
                Support::Unsupported,
                "the backend declares no capabilities",
            ),
        }
    }

    /// Emits the program's source tree, or the diagnostics that prevent it. Warnings may
    /// accompany a tree.
    fn emit(
        &self,
        program: &Program,
        opts: &EmitOptions,
    ) -> Result<(FileTree, Vec<BackendDiagnostic>), Vec<BackendDiagnostic>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_output_directory() {
        let mut t = FileTree::new();
        assert!(t.add("kernels/add.cpp", "x").is_ok());
        for bad in [
            "",
            "/etc/passwd",
            "a/../b",
            "./a",
            "a//b",
            "a\\b",
            "..",
            "a/",
        ] {
            assert!(t.add(bad, "x").is_err(), "{bad:?} accepted");
        }
        // A path already written (two kernels `add-1` and `add_1` both become `add_1.cpp`).
        let e = t.add("kernels/add.cpp", "y").expect_err("written twice");
        assert!(
            e.contains("`kernels/add.cpp` would be written twice"),
            "{e}"
        );
        assert_eq!(t.len(), 1);
        assert_eq!(t.get("kernels/add.cpp"), Some(&b"x"[..]));
    }

    #[test]
    fn c_string_literals_escape_what_c_needs() {
        assert_eq!(c_string_literal("a.npy"), "\"a.npy\"");
        assert_eq!(c_string_literal("q\"b\\\n"), "\"q\\\"b\\\\\\n\"");
        assert_eq!(c_string_literal("é"), "\"\\303\\251\"");
    }

    #[test]
    fn diagnostics_round_trip_as_json() {
        let d = BackendDiagnostic::error(
            "no",
            Some(SrcSpan {
                file: "a.wsp".into(),
                start: 1,
                end: 2,
            }),
        )
        .with_help("do this");
        let j = serde_json::to_string(&d).unwrap();
        assert_eq!(serde_json::from_str::<BackendDiagnostic>(&j).unwrap(), d);
    }
}
