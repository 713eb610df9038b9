//! Module resolution and the scope of a file.

use std::collections::{BTreeMap, BTreeSet};

use wsp_syntax::ast::{Import, ItemKind};

use crate::db::{own_symbols, Db, File, ItemTag, Symbol};

/// The file path an import names, relative to the importing file.
/// `import std.nn` → `std/nn.wsp`; `import layers.norm` → `<dir of importer>/layers/norm.wsp`.
pub fn module_path(importer: &str, import: &Import) -> String {
    let segs: Vec<&str> = import.path.iter().map(|s| s.name.as_str()).collect();
    if segs.first() == Some(&"std") {
        return format!("{}.wsp", segs.join("/"));
    }
    let dir = match importer.rfind('/') {
        Some(i) => &importer[..=i],
        None => "",
    };
    format!("{dir}{}.wsp", segs.join("/"))
}

/// Whether a path names a std module (never read from disk).
pub fn is_std(path: &str) -> bool {
    path.starts_with("std/")
}

/// How an import resolved.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ImportTarget {
    Loaded(File),
    /// Not loaded (yet): the driver should read it.
    Missing,
    /// Read failed with this error.
    Unreadable(String),
}

pub fn resolve_import(db: &dyn Db, importer: File, import: &Import) -> (String, ImportTarget) {
    let path = module_path(importer.path(db), import);
    let fs = db.file_set();
    if let Some(f) = fs.files(db).get(&path) {
        return (path, ImportTarget::Loaded(*f));
    }
    if let Some(e) = fs.unreadable(db).get(&path) {
        return (path.clone(), ImportTarget::Unreadable(e.clone()));
    }
    (path, ImportTarget::Missing)
}

/// A global name in scope: its symbol and the module path that defines it (`None` = this file).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scoped {
    pub symbol: Symbol,
    pub from: Option<String>,
}

/// Every global name visible in a file: its own items, then imported ones (own names shadow
/// imports; the first import of a name wins).
#[salsa::tracked(returns(ref))]
pub fn scope(db: &dyn Db, file: File) -> BTreeMap<String, Scoped> {
    let mut out: BTreeMap<String, Scoped> = own_symbols(db, file)
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                Scoped {
                    symbol: v.clone(),
                    from: None,
                },
            )
        })
        .collect();
    for (_, _, item) in crate::db::items_of(db, file, &[ItemTag::Import]) {
        let ItemKind::Import(imp) = &item.kind else {
            continue;
        };
        let (path, target) = resolve_import(db, file, imp);
        let ImportTarget::Loaded(m) = target else {
            continue;
        };
        let theirs = own_symbols(db, m);
        let mut add = |name: &str| {
            if let Some(sym) = theirs.get(name) {
                out.entry(name.to_string()).or_insert_with(|| Scoped {
                    symbol: sym.clone(),
                    from: Some(path.clone()),
                });
            }
        };
        match &imp.names {
            Some(names) => names.iter().for_each(|n| add(&n.name)),
            None => theirs.keys().for_each(|n| add(n)),
        }
    }
    out
}

/// The file that declares the global name `name` as `file` sees it (the file itself, or the
/// loaded module it imports the name from), and the name's symbol.
pub fn declaring_file<'db>(db: &'db dyn Db, file: File, name: &str) -> Option<(File, &'db Symbol)> {
    let s = scope(db, file).get(name)?;
    let home = match &s.from {
        None => file,
        Some(m) => imported_file(db, file, m)?,
    };
    Some((home, &s.symbol))
}

/// The loaded module that `file` imports as `module` (a path, as [`Scoped::from`] gives it).
fn imported_file(db: &dyn Db, file: File, module: &str) -> Option<File> {
    imports_of(db, file).iter().find_map(|(p, t)| match t {
        ImportTarget::Loaded(m) if p == module => Some(*m),
        _ => None,
    })
}

/// Files imported by `file` (resolved paths), loaded or not.
#[salsa::tracked(returns(ref))]
pub fn imports_of(db: &dyn Db, file: File) -> Vec<(String, ImportTarget)> {
    crate::db::items_of(db, file, &[ItemTag::Import])
        .filter_map(|(_, _, item)| match &item.kind {
            ItemKind::Import(imp) => Some(resolve_import(db, file, imp)),
            _ => None,
        })
        .collect()
}

/// The modules a file depends on, itself first, depth first in import order, each once.
pub fn program_files(db: &dyn Db, root: File) -> Vec<File> {
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    let mut stack = vec![root];
    while let Some(f) = stack.pop() {
        if !seen.insert(f.path(db).clone()) {
            continue;
        }
        order.push(f);
        let deps: Vec<File> = imports_of(db, f)
            .iter()
            .filter_map(|(_, t)| match t {
                ImportTarget::Loaded(m) => Some(*m),
                _ => None,
            })
            .collect();
        stack.extend(deps.into_iter().rev());
    }
    order
}
