//! The program a root file makes, as lowering to `wsp-ir` reads it.
//!
//! Lowering (the `wsp-lower` crate) consumes [`lowering_input`]: the items of a program in
//! source order — the root file's own items followed by the items of every module it
//! imports, transitively, each module once — and the files that still have errors. Lowering runs
//! only when `blocked_by` is empty: every item it sees has passed name resolution, type, race and
//! schedule checks, so it never re-reports a user error and may treat a violated check as an
//! internal bug. Keeping this a tracked query over [`ItemId`]s means a lowering query keyed on one
//! item is re-run only when that item's AST (item-relative spans) or the signatures it reads
//! change, as for the checks (invariant 4).

use wsp_diagnostics::{Diagnostic, Severity};
use wsp_vocab::codes;

use crate::db::{file_items, Db, File, ItemId};
use crate::resolve::{imports_of, program_files, ImportTarget};

/// What lowering reads for one program.
#[derive(Clone, Debug, PartialEq, Eq, salsa::SalsaValue)]
pub struct LoweringInput<'db> {
    /// Every item of the program, root file first, then imported modules (depth first, in
    /// import order, each once).
    pub items: Vec<ItemId<'db>>,
    /// Paths of the program's files that have errors (or imports that are missing or
    /// unreadable); lowering must not run while this is non-empty.
    pub blocked_by: Vec<String>,
}

/// Whether diagnostic `d` stops lowering: every error but a verdict on how a well-formed
/// program will run (E0509, a proven deadlock), which `wsp run` shows by running it.
pub fn blocks_lowering(d: &Diagnostic) -> bool {
    d.severity == Severity::Error && d.code != codes::E0509
}

/// The boundary query lowering reads (see the module documentation).
#[salsa::tracked(returns(ref))]
pub fn lowering_input(db: &dyn Db, root: File) -> LoweringInput<'_> {
    let files = program_files(db, root);
    let mut items = Vec::new();
    let mut blocked_by = Vec::new();
    for f in &files {
        items.extend(file_items(db, *f).iter().copied());
        let has_error = crate::check_file(db, *f).iter().any(blocks_lowering);
        let unresolved = imports_of(db, *f)
            .iter()
            .any(|(_, t)| !matches!(t, ImportTarget::Loaded(_)));
        if has_error || unresolved {
            blocked_by.push(f.path(db).clone());
        }
    }
    LoweringInput { items, blocked_by }
}

#[cfg(test)]
mod tests {
    use crate::db::ItemTag;
    use crate::Workspace;

    #[test]
    fn lowering_sees_imported_items_and_is_blocked_by_errors() {
        let mut ws = Workspace::new();
        ws.set_file("lib/m.wsp", "const K = 8\n".into());
        ws.set_file(
            "main.wsp",
            "import lib.m\nconst N = K\naxis rows = Dense[N]\n".into(),
        );
        let db = ws.db();
        let root = ws.file_handle("main.wsp").expect("loaded");
        let input = super::lowering_input(db, root);
        let names: Vec<(ItemTag, String)> = input
            .items
            .iter()
            .map(|i| (i.tag(db), i.key(db).clone()))
            .collect();
        assert_eq!(
            names,
            vec![
                (ItemTag::Import, "#1".to_string()),
                (ItemTag::Const, "N".into()),
                (ItemTag::Axis, "rows".into()),
                (ItemTag::Const, "K".into()),
            ]
        );
        assert!(input.blocked_by.is_empty(), "{:?}", input.blocked_by);

        ws.set_file("main.wsp", "import lib.m\nconst N = L\n".into());
        let root = ws.file_handle("main.wsp").expect("loaded");
        let input = super::lowering_input(ws.db(), root);
        assert_eq!(input.blocked_by, vec!["main.wsp".to_string()]);
    }
}
