//! File-level checks (virtual spans, [`crate::layout`]): items defined twice, imports (modules and names that do
//! not exist, a name imported from two modules, unused names, imported kernels too large for
//! the importing file's target), and the quick fixes that import an unknown name.

use super::*;
use crate::db::file_items;

/// File-level diagnostics (virtual spans: [`crate::db::real_spans`]): duplicate definitions
/// and imports.
#[salsa::tracked(returns(ref))]
pub fn check_file_level(db: &dyn Db, file: File) -> Vec<Diagnostic> {
    let fname = FileName::new(file.path(db).as_str());
    let virt = file.virt(db);
    let mut diags = Vec::new();
    let mut first: BTreeMap<&str, Span> = BTreeMap::new();
    for (i, id) in file_items(db, file).iter().enumerate() {
        if let (_, Some(name)) = crate::db::item_head(db, id.src(db)) {
            let span = name.span.shift(virt.get(i).copied().unwrap_or(0));
            if let Some(prev) = first.get(name.name.as_str()) {
                diags.push(
                    Diagnostic::new(
                        codes::E0102,
                        format!("`{}` is defined twice", name.name),
                        Label::new(fname.clone(), span, "defined again here"),
                    )
                    .with_label(Label::new(fname.clone(), *prev, "first defined here"))
                    .with_help("rename one of them; every item of a module needs its own name"),
                );
            } else {
                first.insert(name.name.as_str(), span);
            }
        }
    }
    // Names used outside the imports (by token, so a local of the same name counts as a use:
    // an unused-import warning is never wrong, at worst missing); gathered only for a file
    // that imports something, on the first import that asks.
    let used_names: std::cell::OnceCell<BTreeSet<&str>> = std::cell::OnceCell::new();
    let used = || {
        used_names.get_or_init(|| {
            file_items(db, file)
                .iter()
                .filter(|id| id.tag(db) != crate::db::ItemTag::Import)
                .flat_map(|id| crate::db::item_idents(db, id.src(db)))
                .map(String::as_str)
                .collect()
        })
    };
    let imports = imports_of(db, file);
    let import_nodes = crate::db::items_of(db, file, &[crate::db::ItemTag::Import]).filter_map(
        |(src, off, item)| match &item.kind {
            ItemKind::Import(i) => {
                let range = crate::db::parse_item(db, src).node.range.shift(off);
                Some(((range, off), i))
            }
            _ => None,
        },
    );
    let kernels = ImportedKernels {
        here: crate::memory::file_target(db, file),
        model: std::cell::OnceCell::new(),
    };
    // Names imported one by one so far: the module and where (E0102 for a second module).
    let mut imported: BTreeMap<&str, (&str, Span)> = BTreeMap::new();
    for (((range, off), imp), (path, target)) in import_nodes.zip(imports) {
        let path_span = match (imp.path.first(), imp.path.last()) {
            (Some(a), Some(b)) => a.span.cover(b.span).shift(off),
            _ => range,
        };
        let modname = imp
            .path
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(".");
        match target {
            ImportTarget::Loaded(m) => {
                let std = crate::resolve::is_std(path);
                if let Some(names) = &imp.names {
                    let theirs = crate::db::own_symbols(db, *m);
                    for (i, n) in names.iter().enumerate() {
                        // A name imported one by one from two modules: which one it means
                        // would depend on the order of the imports (the file's own item of
                        // that name shadows both).
                        if theirs.contains_key(&n.name) && !first.contains_key(n.name.as_str()) {
                            let span = n.span.shift(off);
                            match imported.get(n.name.as_str()) {
                                Some((p, prev)) if *p != path.as_str() => diags.push(
                                    Diagnostic::new(
                                        codes::E0102,
                                        format!("`{}` is imported from two modules", n.name),
                                        Label::new(fname.clone(), span, "imported again here"),
                                    )
                                    .with_label(Label::new(
                                        fname.clone(),
                                        *prev,
                                        "first imported here",
                                    ))
                                    .with_help(
                                        "import the name from one module, or declare it here",
                                    ),
                                ),
                                Some(_) => {}
                                None => {
                                    imported.insert(n.name.as_str(), (path.as_str(), span));
                                }
                            }
                        }
                        // A schedule or workload imported by name is one `wsp run` may run.
                        let entry = matches!(
                            theirs.get(&n.name),
                            Some(Symbol::Schedule | Symbol::Workload)
                        );
                        if theirs.contains_key(&n.name)
                            && !entry
                            && !used().contains(n.name.as_str())
                        {
                            diags.push(unused_import(&fname, (range, off), names, i));
                        }
                        let at = Label::new(fname.clone(), n.span.shift(off), "imported here");
                        diags.extend(kernels.memory(db, *m, std, &n.name, at));
                        if !theirs.contains_key(&n.name) {
                            let mut d = Diagnostic::new(
                                codes::E0104,
                                format!("module `{modname}` has no item `{}`", n.name),
                                Label::new(fname.clone(), n.span.shift(off), "not in the module"),
                            );
                            if let Some(s) = suggest(&n.name, theirs.keys().map(String::as_str)) {
                                d = d.with_help(format!("did you mean `{s}`?"));
                            } else {
                                d = d.with_help(format!(
                                    "`{modname}` defines: {}",
                                    theirs.keys().cloned().collect::<Vec<_>>().join(", ")
                                ));
                            }
                            diags.push(d);
                        }
                    }
                } else {
                    // The whole module: the kernels this file names.
                    let theirs = crate::db::own_symbols(db, *m);
                    for name in theirs.keys().filter(|k| used().contains(k.as_str())) {
                        let at = Label::new(
                            fname.clone(),
                            path_span,
                            format!("`{name}` is imported here"),
                        );
                        diags.extend(kernels.memory(db, *m, std, name, at));
                    }
                }
            }
            ImportTarget::Missing => {
                let help = if crate::resolve::is_std(path) {
                    format!(
                        "the standard library has: {}",
                        crate::std_lib::modules().join(", ")
                    )
                } else {
                    format!("create `{path}` or fix the module path")
                };
                diags.push(
                    Diagnostic::new(
                        codes::E0103,
                        format!("cannot find module `{modname}`"),
                        Label::new(fname.clone(), path_span, format!("no file `{path}`")),
                    )
                    .with_help(help),
                );
            }
            ImportTarget::Unreadable(e) => diags.push(
                Diagnostic::new(
                    codes::E0103,
                    format!("cannot read module `{modname}` ({path}): {e}"),
                    Label::new(fname.clone(), path_span, "could not be read"),
                )
                .with_help("check the file's permissions and that it is UTF-8 text"),
            ),
        }
    }
    diags
}

/// The importing file's view of the kernels it imports: its target, and that target's model
/// parsed at most once for all of them.
struct ImportedKernels<'a> {
    here: &'a str,
    model: std::cell::OnceCell<Option<wsp_arch::Arch>>,
}

impl ImportedKernels<'_> {
    /// E0701 for kernel `name` of module `m` when it does not fit the buffers of the importing
    /// file's target: e.g. a std kernel, sized for Ascend, in a program for AIE-ML. A user
    /// module checked on the same target reports its own kernels; std's diagnostics are never
    /// shown, so its kernels are always reported here.
    fn memory(&self, db: &dyn Db, m: File, std: bool, name: &str, at: Label) -> Vec<Diagnostic> {
        let here = self.here;
        let same = here == crate::memory::file_target(db, m);
        if !std && same {
            return Vec::new();
        }
        let item = crate::db::file_items(db, m)
            .iter()
            .filter(|id| id.tag(db) == crate::db::ItemTag::Kernel && id.key(db) == name)
            .find_map(|id| match &item_ast(db, *id).kind {
                ItemKind::Kernel(k) if k.name.name == name => Some((*id, k)),
                _ => None,
            });
        let Some((id, k)) = item else {
            return Vec::new();
        };
        // On the module's own target the footprint is the memoised one of its own check.
        let computed;
        let fp = if same {
            crate::memory::kernel_footprint(db, id).as_ref()
        } else {
            let Some(arch) = self
                .model
                .get_or_init(|| wsp_arch::Arch::builtin(here).ok())
            else {
                return Vec::new();
            };
            computed = crate::memory::footprint(k, crate::db::const_values(db, m), arch);
            computed.as_ref()
        };
        let Some(fp) = fp else {
            return Vec::new();
        };
        fp.buffers
            .iter()
            .filter(|b| b.peak > b.capacity)
            .map(|b| {
                Diagnostic::new(
                    codes::E0701,
                    format!(
                        "imported kernel `{name}` needs {} bytes of {} on {here}, which has {} bytes",
                        crate::memory::thousands(b.peak),
                        b.buffer,
                        crate::memory::thousands(b.capacity)
                    ),
                    at.clone(),
                )
                .with_help(format!(
                    "the module's tiles are sized for other targets or tile sizes; on {here}, use \
                     a kernel of your own with smaller tiles, or smaller sizes of the module's \
                     constants (`--set TILE_ROWS=32`)"
                ))
            })
            .collect()
    }
}

/// W0103: the `i`-th name of `import m.{..}` is never used; the fix removes it (the whole
/// import when it is the only name).
fn unused_import(
    fname: &FileName,
    (range, off): (Span, u32),
    names: &[wsp_syntax::ast::Ident],
    i: usize,
) -> Diagnostic {
    let n = &names[i];
    let (span, title) = if names.len() == 1 {
        (range, "remove the unused import".to_string())
    } else if i + 1 < names.len() {
        (
            Span::new(n.span.start, names[i + 1].span.start).shift(off),
            format!("remove `{}` from the import", n.name),
        )
    } else {
        (
            Span::new(names[i - 1].span.end, n.span.end).shift(off),
            format!("remove `{}` from the import", n.name),
        )
    };
    Diagnostic::new(
        codes::W0103,
        format!("`{}` is imported but never used", n.name),
        Label::new(fname.clone(), n.span.shift(off), "never used in this file"),
    )
    .with_help(format!("remove `{}` from the import", n.name))
    .with_tag(Tag::Unnecessary)
    .with_fix(Fix {
        title,
        edits: vec![Edit {
            file: fname.clone(),
            span,
            replacement: String::new(),
        }],
    })
}

/// The module path an `import` in `importer` must name to reach the file `target`
/// (`std/nn.wsp` → `std.nn`; `dir/layers/norm.wsp` from `dir/main.wsp` → `layers.norm`), when
/// one can (the target lies in the importer's directory or below, every segment a name).
pub fn import_module_name(importer: &str, target: &str) -> Option<String> {
    let stem = target.strip_suffix(".wsp")?;
    let rel = if crate::resolve::is_std(target) {
        stem
    } else {
        let dir = importer.rfind('/').map(|i| &importer[..=i]).unwrap_or("");
        stem.strip_prefix(dir)?
    };
    let segs: Vec<&str> = rel.split('/').collect();
    let ident = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    segs.iter().all(|s| ident(s)).then(|| segs.join("."))
}

/// Adds "import it" fixes to the unknown-name errors (E0101) of `file` whose name another
/// loaded file or a std module declares: one fix per such module, adding the name to an
/// existing `import m.{…}` of that module, else inserting `import m.{name}` after the last
/// import (or at the top). Runs only when the file has such an error.
pub fn add_import_fixes(db: &dyn Db, file: File, diags: &mut [Diagnostic]) {
    let text = file.text(db).clone();
    let path = file.path(db).clone();
    let fname = FileName::new(path.as_str());
    let nodes = &parse_file(db, file).file.items;
    let imports: Vec<(&ItemNode, &Import)> = nodes
        .iter()
        .filter_map(|n| match &n.item.kind {
            ItemKind::Import(i) => Some((n, i)),
            _ => None,
        })
        .collect();
    // Where a new import line goes: the line after the last import, else the file's start.
    let new_line_at = match imports.last() {
        Some((n, _)) => {
            let end = (n.range.end as usize).min(text.len());
            let end = text[..end].trim_end().len();
            match text[end..].find('\n') {
                Some(i) => (end + i + 1, false),
                None => (text.len(), true),
            }
        }
        None => (0, false),
    };
    let files = db.file_set().files(db);
    for d in diags.iter_mut() {
        if d.code != codes::E0101 || d.primary.file != fname {
            continue;
        }
        let (s, e) = (d.primary.span.start as usize, d.primary.span.end as usize);
        let Some(name) = text.get(s..e) else { continue };
        for (other, f) in files.iter() {
            if *other == path || !crate::db::own_symbols(db, *f).contains_key(name) {
                continue;
            }
            let Some(module) = import_module_name(&path, other) else {
                continue;
            };
            let existing = imports.iter().find_map(|(n, imp)| {
                let names = imp.names.as_ref()?;
                (crate::resolve::module_path(&path, imp) == *other)
                    .then(|| names.last().map(|l| n.range.start + l.span.end))
                    .flatten()
            });
            let edit = match existing {
                Some(at) => Edit {
                    file: fname.clone(),
                    span: Span::new(at, at),
                    replacement: format!(", {name}"),
                },
                None => {
                    let (at, nl_first) = new_line_at;
                    Edit {
                        file: fname.clone(),
                        span: Span::new(at as u32, at as u32),
                        replacement: if nl_first {
                            format!("\nimport {module}.{{{name}}}\n")
                        } else {
                            format!("import {module}.{{{name}}}\n")
                        },
                    }
                }
            };
            d.fixes.push(Fix {
                title: format!("import `{name}` from `{module}`"),
                edits: vec![edit],
            });
        }
    }
}
