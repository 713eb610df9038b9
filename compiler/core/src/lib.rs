//! `wsp-core`: the salsa database and every semantic query of wsp.
//!
//! The core is pure: no file system, clock or threads. Drivers (the CLI, the language server)
//! read files and hand them in through [`Workspace`]. See `db` for the incrementality scheme.

pub mod capabilities;
pub mod check;
pub mod csp;
mod cycles;
pub mod db;
pub mod expect;
mod files;
pub mod flow;
pub mod keys;
pub mod layout;
pub mod locals;
pub mod memory;
pub mod placement;
pub mod program;
pub mod races;
pub mod resolve;
pub mod std_lib;
pub mod tokens;
pub mod types;
pub mod wltype;

use std::collections::BTreeMap;
use std::sync::Arc;

use salsa::{Durability, Setter};
use wsp_diagnostics::{Diagnostic, FileName, Label};

use crate::db::{file_items, Database, File, FileSet};
use wsp_vocab::codes;

/// Whether a panic's payload is a query cancelled by an edit ([`Workspace::snapshot`]).
pub fn is_cancelled(payload: &(dyn std::any::Any + Send)) -> bool {
    payload.is::<salsa::Cancelled>()
}

/// The facade drivers use: owns the database and the file inputs.
pub struct Workspace {
    db: Database,
    files: FileSet,
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace::new()
    }
}

impl Workspace {
    /// A workspace with the standard library loaded (high durability).
    pub fn new() -> Workspace {
        Self::from_db(Database::default())
    }

    /// A workspace whose database logs executed queries (for incrementality tests).
    pub fn with_query_log() -> (Workspace, Arc<std::sync::Mutex<Vec<String>>>) {
        let (db, log) = Database::with_log();
        (Self::from_db(db), log)
    }

    fn from_db(mut db: Database) -> Workspace {
        let mut map = BTreeMap::new();
        for (name, text) in std_lib::STD_MODULES {
            let path = format!("std/{name}.wsp");
            let f = files::new_file(&db, path.clone(), text);
            map.insert(path, f);
        }
        // The file set and the driver's options change seldom (a file loaded, an option
        // set): durable, so that what reads them is verified at once after an edit.
        let files = FileSet::builder(
            map,
            BTreeMap::new(),
            None,
            None,
            None,
            Vec::new(),
            BTreeMap::new(),
        )
        .durability(Durability::HIGH)
        .new(&db);
        db.set_file_set_handle(files);
        Workspace { db, files }
    }

    pub fn db(&self) -> &Database {
        &self.db
    }

    /// The workspace as it is now, to answer a request on another thread while this one is
    /// edited. Only read it: an edit of the original cancels the snapshot's queries (they
    /// unwind with salsa's `Cancelled`, see [`is_cancelled`]) and waits until every snapshot
    /// has been dropped.
    pub fn snapshot(&self) -> Workspace {
        Workspace {
            db: self.db.clone(),
            files: self.files,
        }
    }

    /// Unwinds with salsa's `Cancelled` when an edit waits for this snapshot: long
    /// computations between queries call it now and then.
    pub fn unwind_if_cancelled(&self) {
        salsa::Database::unwind_if_revision_cancelled(&self.db);
    }

    fn file(&self, path: &str) -> Option<File> {
        self.files.files(&self.db).get(path).copied()
    }

    /// The salsa input of a loaded file (for queries such as [`lower::lowering_input`]).
    pub fn file_handle(&self, path: &str) -> Option<File> {
        self.file(path)
    }

    /// Adds or replaces a file. Module paths in it resolve relative to `path`.
    ///
    /// The file is held as one input per item ([`db::ItemSrc`]): a new version is cut again
    /// only around the bytes that changed ([`layout::recut`]), and only the items whose text
    /// changed are set ([`files`]).
    pub fn set_file(&mut self, path: &str, text: String) {
        match self.file(path) {
            Some(f) => files::edit_file(&mut self.db, f, text),
            None => {
                let f = files::new_file(&self.db, path.to_string(), &text);
                let mut map = self.files.files(&self.db).clone();
                map.insert(path.to_string(), f);
                let mut unreadable = self.files.unreadable(&self.db).clone();
                unreadable.remove(path);
                self.files.set_files(&mut self.db).to(map);
                self.files.set_unreadable(&mut self.db).to(unreadable);
            }
        }
    }

    /// Paths imported by loaded files that are neither loaded nor known to be unreadable
    /// (never std modules: those are embedded).
    pub fn unloaded_imports(&self) -> Vec<String> {
        let all: Vec<String> = self.files.files(&self.db).keys().cloned().collect();
        self.unloaded_imports_of(&all)
    }

    /// [`Workspace::unloaded_imports`] of the files `paths` only.
    fn unloaded_imports_of(&self, paths: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for f in paths.iter().filter_map(|p| self.file(p)) {
            for (path, target) in resolve::imports_of(&self.db, f) {
                if matches!(target, resolve::ImportTarget::Missing)
                    && !resolve::is_std(path)
                    && !out.contains(path)
                {
                    out.push(path.clone());
                }
            }
        }
        out
    }

    /// Loads what the loaded files import, through `read` (a module's path to its text), until
    /// the import graph is closed. A module `read` does not find (`NotFound`) stays missing:
    /// the checker says it cannot find it (E0103); one it finds but cannot read is unreadable
    /// (E0103 with the reason). The core reads no files: every driver (the CLI, the language
    /// server, tests) passes its reader here.
    pub fn load_imports(&mut self, read: impl FnMut(&str) -> std::io::Result<String>) {
        let all: Vec<String> = self.files.files(&self.db).keys().cloned().collect();
        self.load_imports_of(&all, read);
    }

    /// [`Workspace::load_imports`] for what the files `paths` import (those an edit changed:
    /// the other files' imports are as they were), and what those import in turn.
    pub fn load_imports_of(
        &mut self,
        paths: &[String],
        mut read: impl FnMut(&str) -> std::io::Result<String>,
    ) {
        let mut absent = std::collections::BTreeSet::new();
        let mut from = paths.to_vec();
        loop {
            let missing: Vec<String> = self
                .unloaded_imports_of(&from)
                .into_iter()
                .filter(|m| !absent.contains(m))
                .collect();
            if missing.is_empty() {
                return;
            }
            for m in &missing {
                match read(m) {
                    Ok(t) => self.set_file(m, t),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        absent.insert(m.clone());
                    }
                    Err(e) => self.set_unreadable(m, e.to_string()),
                }
            }
            from.extend(missing);
        }
    }

    /// Chooses the architecture model resource checks use (`None`: each file's schedule
    /// `.target(...)`, else `ascend910b`). Accepts the model names and the language's
    /// spelling (`aie_ml` for `aie-ml`); an unknown name is an error listing the known ones.
    pub fn set_arch(&mut self, arch: Option<&str>) -> Result<(), String> {
        let arch = match arch {
            None => None,
            Some(name) => match memory::builtin_arch_name(name) {
                Some(n) => Some(n),
                None => {
                    return Err(format!(
                        "no architecture model `{name}`; known: {}",
                        wsp_arch::Arch::builtin_names()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                }
            },
        };
        if *self.files.arch(&self.db) != arch {
            self.files.set_arch(&mut self.db).to(arch);
        }
        if self.files.arch_file(&self.db).is_some() {
            self.files.set_arch_file(&mut self.db).to(None);
        }
        Ok(())
    }

    /// Checks resources against the model in `text` (read from `path`, an `--arch FILE.toml`)
    /// instead of a built-in one; an error (naming the file and key) if it does not parse.
    /// Turns on the opt-in lints named (`narrowing`); an unknown name is an error listing the
    /// known ones, and the others stay as they were.
    pub fn set_lints(&mut self, lints: &[&str]) -> Result<(), String> {
        let known: Vec<&str> = wsp_vocab::words::LINTS.iter().map(|(n, _)| *n).collect();
        if let Some(bad) = lints.iter().find(|l| !known.contains(l)) {
            return Err(format!("no lint `{bad}`; known: {}", known.join(", ")));
        }
        let mut v: Vec<String> = lints.iter().map(|l| l.to_string()).collect();
        v.sort();
        v.dedup();
        if *self.files.lints(&self.db) != v {
            self.files.set_lints(&mut self.db).to(v);
        }
        Ok(())
    }

    /// Sets integer constants by name, for checking and lowering (`--set TILE_ROWS=32`):
    /// every integer `const` of that name in any loaded file takes the value (see
    /// [`db::const_values`]); the ones set before and not named here go back to their
    /// declared values.
    pub fn set_consts(&mut self, values: BTreeMap<String, i64>) {
        if *self.files.consts(&self.db) != values {
            self.files.set_consts(&mut self.db).to(values);
        }
    }

    /// The integer constants set by [`Workspace::set_consts`].
    pub fn consts_set(&self) -> &BTreeMap<String, i64> {
        self.files.consts(&self.db)
    }

    /// The names of the integer constants declared in the program rooted at `root` (its own
    /// file and the modules it imports): those [`Workspace::set_consts`] can set.
    pub fn int_consts(&self, root: &str) -> std::collections::BTreeSet<String> {
        let Some(file) = self.file_handle(root) else {
            return Default::default();
        };
        let db: &dyn db::Db = &self.db;
        resolve::program_files(db, file)
            .into_iter()
            .flat_map(|f| {
                let values = db::const_values(db, f);
                db::parse_file(db, f)
                    .file
                    .items
                    .iter()
                    .filter_map(|n| match &n.item.kind {
                        wsp_syntax::ast::ItemKind::Const(c)
                            if values.contains_key(&c.name.name) =>
                        {
                            Some(c.name.name.clone())
                        }
                        _ => None,
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    pub fn set_arch_file(&mut self, path: &str, text: &str) -> Result<(), String> {
        wsp_arch::Arch::parse(text, path).map_err(|e| e.to_string())?;
        let model = Some((path.to_string(), Arc::from(text)));
        if *self.files.arch_file(&self.db) != model {
            self.files.set_arch_file(&mut self.db).to(model);
        }
        Ok(())
    }

    /// Chooses the backend capability checks are made for (`None`: none are made). Accepts
    /// `sim`, `ascend` and `aie`; an unknown name is an error listing the known ones. With
    /// `strict`, uses a backend only records or diagnoses are errors (E0711) instead of
    /// warnings (W0710); unsupported uses are errors either way (E0712).
    pub fn set_target(&mut self, target: Option<&str>, strict: bool) -> Result<(), String> {
        let target = match target {
            None => None,
            Some(name) => match wsp_arch::capabilities::Backend::from_name(name) {
                Some(backend) => Some(wsp_arch::capabilities::CapabilityTable::builtin(backend)),
                None => {
                    return Err(format!(
                        "no backend `{name}`; known: {}",
                        wsp_arch::capabilities::Backend::known()
                    ))
                }
            },
        };
        self.set_target_table(target, strict);
        Ok(())
    }

    /// Chooses the capability column checks are made for: a built-in backend's
    /// ([`CapabilityTable::builtin`](wsp_arch::capabilities::CapabilityTable::builtin)) or one
    /// an external backend declared (`None`: no capability checks). `strict` as in
    /// [`Workspace::set_target`].
    pub fn set_target_table(
        &mut self,
        table: Option<wsp_arch::capabilities::CapabilityTable>,
        strict: bool,
    ) {
        let target = table.map(|t| capabilities::Target {
            table: Arc::new(t),
            strict,
        });
        if *self.files.target(&self.db) != target {
            self.files.set_target(&mut self.db).to(target);
        }
    }

    /// The backend capability checks are made for (see [`Workspace::set_target`]).
    pub fn target(&self) -> Option<capabilities::Target> {
        self.files.target(&self.db).clone()
    }

    /// Records that `path` could not be read; importing it reports the error.
    pub fn set_unreadable(&mut self, path: &str, error: String) {
        let mut unreadable = self.files.unreadable(&self.db).clone();
        unreadable.insert(path.to_string(), error);
        self.files.set_unreadable(&mut self.db).to(unreadable);
    }

    /// Every diagnostic of the file, with absolute spans, sorted by position.
    pub fn check(&self, path: &str) -> Vec<Diagnostic> {
        let Some(file) = self.file(path) else {
            return Vec::new();
        };
        check_file(&self.db, file)
    }

    /// The errors of the standard-library modules the programs rooted at `roots` import, each
    /// module once: they stop a program from lowering like its own. std's diagnostics are not
    /// shown otherwise (its modules are clean as shipped), but a constant set by
    /// [`Workspace::set_consts`] can make one wrong (`--set HEAD_DIM=63`: RoPE's halves differ).
    pub fn std_errors(&self, roots: &[String]) -> Vec<Diagnostic> {
        let mut seen = std::collections::BTreeSet::new();
        roots
            .iter()
            .filter_map(|r| self.file(r))
            .flat_map(|f| resolve::program_files(&self.db, f))
            .filter(|f| resolve::is_std(f.path(&self.db)) && seen.insert(f.path(&self.db).clone()))
            .flat_map(|f| check_file(&self.db, f))
            .filter(program::blocks_lowering)
            .collect()
    }

    /// The static deadlock analysis of the file's pipelines in the workloads named `only`,
    /// with its params bound to a run's values (see [`tokens::pipeline_tokens_bound`]): E0509
    /// when a pipeline deadlocks, with the smallest channel depths that complete in its help.
    pub fn pipeline_tokens_bound(
        &self,
        path: &str,
        params: &std::collections::BTreeMap<String, i64>,
        only: &std::collections::BTreeSet<String>,
    ) -> Vec<Diagnostic> {
        match self.file(path) {
            Some(f) => tokens::pipeline_tokens_bound(&self.db, f, params, only),
            None => Vec::new(),
        }
    }

    /// The text of a loaded file or std module, for rendering.
    pub fn text(&self, file: &FileName) -> Option<Arc<str>> {
        self.file(file.as_str()).map(|f| f.text(&self.db).clone())
    }

    /// `(workload name, Workload[Axes, Tasks, Deps])` for every workload of the file.
    pub fn workload_types(&self, path: &str) -> Vec<(String, String)> {
        match self.file(path) {
            Some(f) => wltype::workload_types(&self.db, f),
            None => Vec::new(),
        }
    }

    /// `(kernel name, footprint)` for every kernel of the file on its architecture model
    /// (see [`memory::file_target`]); kernels without a `.wsp` body, or models without buffer
    /// figures, are left out.
    pub fn kernel_footprints(&self, path: &str) -> Vec<(String, memory::Footprint)> {
        let Some(f) = self.file(path) else {
            return Vec::new();
        };
        file_items(&self.db, f)
            .iter()
            .filter(|id| id.tag(&self.db) == db::ItemTag::Kernel)
            .filter_map(|id| {
                memory::kernel_footprint(&self.db, *id)
                    .clone()
                    .map(|fp| (id.key(&self.db).clone(), fp))
            })
            .collect()
    }

    /// Paths of the loaded user files (not std), sorted.
    pub fn paths(&self) -> Vec<String> {
        self.files
            .files(&self.db)
            .keys()
            .filter(|p| !resolve::is_std(p))
            .cloned()
            .collect()
    }
}

/// A syntax error as a diagnostic in `fname`.
fn syntax_diagnostic(fname: &FileName, e: &wsp_syntax::SyntaxError) -> Diagnostic {
    let mut d = Diagnostic::new(
        e.code,
        e.message.clone(),
        Label::new(fname.clone(), e.span, e.label.clone()),
    );
    if let Some(h) = &e.help {
        d = d.with_help(h.clone());
    }
    d
}

/// One item's diagnostics, item-relative: its syntax errors, its checks and, against a target,
/// its capabilities. One query per item, so that after an edit elsewhere `check_file` asks
/// each other item one durable question.
#[salsa::tracked(returns(ref))]
fn item_diagnostics<'db>(db: &'db dyn db::Db, item: db::ItemId<'db>) -> Vec<Diagnostic> {
    let fname = FileName::new(item.file(db).path(db).as_str());
    let mut out: Vec<Diagnostic> = db::parse_item(db, item.src(db))
        .errors
        .iter()
        .map(|e| syntax_diagnostic(&fname, e))
        .collect();
    out.extend(check::check_item(db, item).iter().cloned());
    if db.file_set().target(db).is_some() {
        out.extend(capabilities::item_capabilities(db, item).iter().cloned());
    }
    out
}

/// All diagnostics of a file: syntax errors, file-level checks, and every item's checks with
/// their item-relative spans made absolute.
pub fn check_file(db: &dyn db::Db, file: File) -> Vec<Diagnostic> {
    let fname = FileName::new(file.path(db).as_str());
    let starts = db::item_starts(db, file);
    let mut out: Vec<Diagnostic> = db::prefix_errors(db, file)
        .iter()
        .map(|e| syntax_diagnostic(&fname, e))
        .collect();
    // Whole-file analyses give virtual spans; items' checks, item-relative ones.
    let whole = [
        check::check_file_level(db, file),
        csp::channel_graph(db, file),
        tokens::pipeline_tokens(db, file),
        keys::tasks_outside_keys(db, file),
        placement::placements(db, file),
    ];
    out.extend(
        whole
            .into_iter()
            .flatten()
            .map(|d| db::real_spans(db, d.clone())),
    );
    for (item, offset) in file_items(db, file).iter().zip(starts) {
        for d in item_diagnostics(db, *item) {
            out.push(d.clone().shifted(&fname, *offset));
        }
    }
    if out.iter().any(|d| d.code == codes::E0101) {
        check::add_import_fixes(db, file, &mut out);
    }
    out.sort_by(|a, b| {
        (a.primary.span.start, a.primary.span.end, a.code).cmp(&(
            b.primary.span.start,
            b.primary.span.end,
            b.code,
        ))
    });
    out
}
