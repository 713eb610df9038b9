//! Lowering of checked programs to the Program IR (a salsa query over wsp-core).
//!
//! [`lower`] reads [`wsp_core::program::lowering_input`] (the program's items, root file first,
//! and the files that still have errors). A program with errors is not lowered: the check
//! diagnostics are returned. A checked construct this lowering does not handle yet gives the
//! diagnostic `E0813` at the construct, never a partial program. The result is validated with
//! [`wsp_ir::check::validate_program`]; a failure there is reported as `E0813` too (an internal
//! lowering bug, stated as such).
//!
//! This file holds the query, its driver (passes over the items by kind) and the lowerer's
//! state with its per-file name resolution; the items lower in rooms: `consts` (constant
//! evaluation), `exprs` (affine index forms and run-time expressions), `tensors` (tensors and
//! their initialisers), `axes`, `kernels` (signatures, extern bindings, bodies), `workload`
//! (workload statements, task calls and views), `csp` (channels, processes and `connect`),
//! `schedule` (schedules and their directives) and `expects`.

// Diagnostics are the error type of every lowering step; they are built only on the rare
// failure path, so their size does not matter.
#![allow(clippy::result_large_err)]

mod axes;
mod consts;
mod csp;
mod expects;
mod exprs;
mod kernels;
mod schedule;
mod tensors;
mod workload;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use wsp_core::db::{item_offset, Db, File, ItemId};
use wsp_diagnostics::{Diagnostic, FileName, Label};
use wsp_ir::dtype::{DType, ScalarValue};
use wsp_ir::kernel as k;
use wsp_ir::workload as w;
use wsp_syntax::ast::{self, ExprKind, ItemKind};
use wsp_syntax::Span;
use wsp_vocab::codes;

/// The code of "this construct cannot be lowered yet".
pub const UNSUPPORTED: &str = codes::E0813;

/// Lowers the program rooted at `root` (a path loaded in `ws`).
pub fn lower(ws: &wsp_core::Workspace, root: &str) -> Result<wsp_ir::Program, Vec<Diagnostic>> {
    let Some(file) = ws.file_handle(root) else {
        return Err(vec![Diagnostic::new(
            UNSUPPORTED,
            format!("`{root}` is not loaded"),
            Label::new(FileName::new(root), Span::new(0, 0), "not loaded"),
        )]);
    };
    lowered_program(ws.db(), file).clone()
}

/// The lowering query: the IR of the program rooted at `root`, or the diagnostics that prevent it.
#[salsa::tracked(returns(ref), no_eq)]
pub fn lowered_program(db: &dyn Db, root: File) -> Result<wsp_ir::Program, Vec<Diagnostic>> {
    lower_db(db, root)
}

fn lower_db(db: &dyn Db, root: File) -> Result<wsp_ir::Program, Vec<Diagnostic>> {
    let input = wsp_core::program::lowering_input(db, root);
    if !input.blocked_by.is_empty() {
        let mut diags = Vec::new();
        for f in wsp_core::resolve::program_files(db, root) {
            diags.extend(
                wsp_core::check_file(db, f)
                    .into_iter()
                    .filter(wsp_core::program::blocks_lowering),
            );
        }
        if diags.is_empty() {
            diags.push(Diagnostic::new(
                UNSUPPORTED,
                format!(
                    "the program cannot be lowered: {} has unresolved imports",
                    input.blocked_by.join(", ")
                ),
                Label::new(
                    FileName::new(root.path(db).as_str()),
                    Span::new(0, 0),
                    "here",
                ),
            ));
        }
        return Err(diags);
    }
    let files = wsp_core::resolve::program_files(db, root);
    let from = import_sources(db, &files);
    // The names the root imports by name (`import m.{a, b}`), with the file they come from: a
    // module imported whole brings no schedule or entry workload of its own.
    let named: BTreeMap<String, u32> = wsp_core::db::parse_file(db, root)
        .file
        .items
        .iter()
        .filter_map(|n| match &n.item.kind {
            ItemKind::Import(imp) => imp.names.as_ref(),
            _ => None,
        })
        .flatten()
        .filter_map(|n| Some((n.name.clone(), *from.first()?.get(&n.name)?)))
        .collect();
    let mut l = Lowerer::new(FileName::new(root.path(db).as_str()), Rc::new(from));
    l.int_consts = int_consts(db, &files);
    l.root_named = named;
    let cur = l.cur.clone();
    let file_index = |id: ItemId| {
        let f = id.file(db);
        files.iter().position(|g| *g == f).unwrap_or(0) as u32
    };
    l.p.source = Some(root.path(db).clone());
    let items: Vec<(ItemId, Arc<ast::Item>)> = input
        .items
        .iter()
        .map(|id| (*id, wsp_core::db::item_arc(db, *id).clone()))
        .collect();
    // Workload and process names first, so schedules, `combine` and `connect` can refer to
    // any of them. Processes are lowered in this same item order (the last pass).
    let mut wl_index = 0u32;
    let mut proc_index = 0u32;
    for (id, it) in &items {
        cur.set(file_index(*id));
        match &it.kind {
            ItemKind::Workload(wl) => {
                l.workloads
                    .insert(wl.name.name.clone(), w::WorkloadId(wl_index));
                wl_index += 1;
            }
            ItemKind::Process(pr) => {
                l.processes
                    .insert(pr.name.name.clone(), w::ProcessId(proc_index));
                proc_index += 1;
            }
            _ => {}
        }
    }
    let mut errs = Vec::new();
    // Declarations before uses: imported modules come after the root, so go in passes by kind.
    // Extern kernels after the others: an extern kernel's `sim:` reference is a kernel with a
    // body, lowered by then.
    let passes: [&dyn Fn(&ItemKind) -> bool; 7] = [
        &|k| matches!(k, ItemKind::Const(_) | ItemKind::Param(_)),
        &|k| matches!(k, ItemKind::Tensor(_) | ItemKind::Channel(_)),
        &|k| matches!(k, ItemKind::Axis(_)),
        &|k| matches!(k, ItemKind::Kernel(kd) if matches!(kd.body, ast::KernelBody::Block(_))),
        &|k| matches!(k, ItemKind::Kernel(kd) if matches!(kd.body, ast::KernelBody::Extern(_))),
        &|k| matches!(k, ItemKind::Workload(_)),
        &|k| {
            matches!(
                k,
                ItemKind::Schedule(_) | ItemKind::Expect(_) | ItemKind::Process(_)
            )
        },
    ];
    for (k, pass) in passes.iter().enumerate() {
        let todo: Vec<&(ItemId, Arc<ast::Item>)> =
            items.iter().filter(|(_, it)| pass(&it.kind)).collect();
        errs.extend(l.lower_items(db, &files, todo, k == 0));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    // The workloads the root file sees: what runs when there is no schedule.
    let mut entries: Vec<w::WorkloadId> = l
        .workloads
        .map
        .iter()
        .flat_map(|(name, decls)| decls.iter().map(move |(f, id)| (name, *f, *id)))
        .filter(|(name, f, _)| l.root_sees(*f, name))
        .map(|(_, _, id)| id)
        .collect();
    entries.sort_by_key(|id| id.0);
    l.p.entries = Some(entries);
    // Imported modules bring all their kernels; the program keeps the ones it calls.
    l.p.retain_called_kernels();
    let problems = wsp_ir::check::validate_program(&l.p);
    if !problems.is_empty() {
        return Err(vec![Diagnostic::new(
            UNSUPPORTED,
            format!(
                "internal error: the lowered program is not valid IR: {}",
                problems.join("; ")
            ),
            Label::new(
                FileName::new(root.path(db).as_str()),
                Span::new(0, 0),
                "while lowering this program",
            ),
        )]);
    }
    Ok(l.p)
}

/// The IR of the kernel `name` declared in `file`, lowered on its own after the file's
/// constants and params, so that a kernel can be priced (language server hovers) while the
/// rest of the program does not lower. `None` when the kernel is not in the file or does not
/// lower.
pub fn kernel_ir(db: &dyn Db, file: File, name: &str) -> Option<k::Kernel> {
    // The constants and params of the file and of the modules it imports (a kernel's shapes
    // may use an imported constant); one that does not lower leaves its uses unlowerable.
    let files = wsp_core::resolve::program_files(db, file);
    let mut l = Lowerer::new(
        FileName::new(file.path(db).as_str()),
        Rc::new(import_sources(db, &files)),
    );
    l.int_consts = int_consts(db, &files);
    let consts: Vec<(ItemId, Arc<ast::Item>)> = wsp_core::program::lowering_input(db, file)
        .items
        .iter()
        .map(|id| (*id, wsp_core::db::item_arc(db, *id).clone()))
        .filter(|(_, it)| matches!(it.kind, ItemKind::Const(_) | ItemKind::Param(_)))
        .collect();
    let _ = l.lower_items(db, &files, consts.iter().collect(), true);
    l.cur.set(0);
    l.file = FileName::new(file.path(db).as_str());
    let nodes = &wsp_core::db::parse_file(db, file).file.items;
    nodes.iter().find_map(|n| match &n.item.kind {
        ItemKind::Kernel(kd) if kd.name.name == name => {
            l.offset = n.range.start;
            l.kernel(kd).ok()
        }
        _ => None,
    })
}

/// For each file of a program, the values of the integer constants it sees, as the checker
/// folded them ([`wsp_core::db::const_values`], with the constants the driver set).
fn int_consts(db: &dyn Db, files: &[File]) -> Vec<BTreeMap<String, i64>> {
    files
        .iter()
        .map(|f| wsp_core::db::const_values(db, *f).clone())
        .collect()
}

/// For each file of a program, the file (by index in `files`) each imported name comes from.
fn import_sources(db: &dyn Db, files: &[File]) -> Vec<BTreeMap<String, u32>> {
    files
        .iter()
        .map(|f| {
            wsp_core::resolve::scope(db, *f)
                .iter()
                .filter_map(|(name, sc)| {
                    let path = sc.from.as_ref()?;
                    let i = files.iter().position(|g| g.path(db) == path)?;
                    Some((name.clone(), i as u32))
                })
                .collect()
        })
        .collect()
}

type R<T> = Result<T, Diagnostic>;

struct Lowerer {
    p: wsp_ir::Program,
    consts: Scoped<ScalarValue>,
    /// Per file (by index in program order), the integer constants as the checker folded them
    /// (with any `--set`): a constant lowers to that value, so checking and lowering agree;
    /// other constants (floats, booleans) fold here.
    int_consts: Vec<BTreeMap<String, i64>>,
    params: Scoped<w::ProgParamId>,
    axes: Scoped<w::AxisId>,
    tensors: Scoped<w::TensorId>,
    kernels: Scoped<w::KernelId>,
    workloads: Scoped<w::WorkloadId>,
    channels: Scoped<w::ChannelId>,
    processes: Scoped<w::ProcessId>,
    file: FileName,
    offset: u32,
    /// The index (in program order, root first) of the file whose item is being lowered.
    cur: Rc<Cell<u32>>,
    /// The names the root file imports by name, with the index of the file each comes from.
    root_named: BTreeMap<String, u32>,
    /// Local tensors (`let H: f32[..] = scratch()`) of the workload being lowered, given ids
    /// after the program's tensors so far; appended to them once it has lowered.
    locals: RefCell<Vec<w::TensorDecl>>,
    /// The local tensors in scope at the statement being lowered, innermost last.
    local_names: RefCell<Vec<(String, w::TensorId)>>,
    /// A process body is being lowered (it has no local tensors).
    in_process: Cell<bool>,
}

impl Lowerer {
    /// Lowers `todo` (items of the program whose files are `files`), each in its file's scope;
    /// returns the diagnostics of those that did not lower. With `retry`, the ones that failed
    /// go again while others succeed: constants may use constants of modules that come later
    /// in program order (a module's constant from an imported one).
    fn lower_items(
        &mut self,
        db: &dyn Db,
        files: &[File],
        mut todo: Vec<&(ItemId, Arc<ast::Item>)>,
        retry: bool,
    ) -> Vec<Diagnostic> {
        loop {
            let mut failed = Vec::new();
            let mut failures = Vec::new();
            for x in &todo {
                let (id, it) = x;
                let f = id.file(db);
                self.file = FileName::new(f.path(db).as_str());
                self.offset = item_offset(db, *id);
                self.cur
                    .set(files.iter().position(|g| *g == f).unwrap_or(0) as u32);
                if let Err(d) = self.item(it) {
                    failed.push(*x);
                    failures.push(d);
                }
            }
            if !retry || failed.is_empty() || failed.len() == todo.len() {
                return failures;
            }
            todo = failed;
        }
    }

    fn new(file: FileName, from: Rc<Vec<BTreeMap<String, u32>>>) -> Lowerer {
        let cur = Rc::new(Cell::new(0));
        Lowerer {
            p: wsp_ir::Program::new(),
            consts: Scoped::new(&cur, &from),
            int_consts: Vec::new(),
            params: Scoped::new(&cur, &from),
            axes: Scoped::new(&cur, &from),
            tensors: Scoped::new(&cur, &from),
            kernels: Scoped::new(&cur, &from),
            workloads: Scoped::new(&cur, &from),
            channels: Scoped::new(&cur, &from),
            processes: Scoped::new(&cur, &from),
            file,
            offset: 0,
            cur,
            root_named: BTreeMap::new(),
            locals: RefCell::new(Vec::new()),
            local_names: RefCell::new(Vec::new()),
            in_process: Cell::new(false),
        }
    }
}

/// Names of the program's files, each declaration tagged with its file. A name resolves to
/// the declaration of the file being lowered when it has one (a module's own items shadow
/// imported ones, and a module's kernels see the module's own constants), else to the
/// declaration of the file it imports the name from, else to the first declaration in program
/// order (root first). The checker has already resolved every name; this only picks the right
/// one of several files' declarations of the same name.
struct Scoped<V> {
    cur: Rc<Cell<u32>>,
    /// Per file: the file each imported name comes from.
    from: Rc<Vec<BTreeMap<String, u32>>>,
    map: BTreeMap<String, Vec<(u32, V)>>,
}

impl<V> Scoped<V> {
    fn new(cur: &Rc<Cell<u32>>, from: &Rc<Vec<BTreeMap<String, u32>>>) -> Scoped<V> {
        Scoped {
            cur: cur.clone(),
            from: from.clone(),
            map: BTreeMap::new(),
        }
    }

    fn insert(&mut self, name: String, v: V) {
        let f = self.cur.get();
        let entries = self.map.entry(name).or_default();
        match entries.iter_mut().find(|(g, _)| *g == f) {
            Some(e) => e.1 = v,
            None => entries.push((f, v)),
        }
    }

    fn get(&self, name: &str) -> Option<&V> {
        let entries = self.map.get(name)?;
        let f = self.cur.get();
        let home = self.from.get(f as usize).and_then(|m| m.get(name));
        entries
            .iter()
            .find(|(g, _)| *g == f)
            .or_else(|| entries.iter().find(|(g, _)| Some(g) == home))
            .or_else(|| entries.iter().min_by_key(|(g, _)| *g))
            .map(|(_, v)| v)
    }

    fn contains_key(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }
}

/// Like a map's index: only after `contains_key` (a declared name always has an entry).
impl<V> std::ops::Index<&String> for Scoped<V> {
    type Output = V;
    fn index(&self, name: &String) -> &V {
        match self.get(name) {
            Some(v) => v,
            None => panic!("lowering looked up the undeclared name `{name}`"),
        }
    }
}

fn dtype(name: &ast::Ident) -> Option<DType> {
    DType::from_name(&name.name)
}

impl Lowerer {
    /// Whether item `name` of file `f` (its index in program order) is one of the root
    /// file's entry points: the root's own, or one the root imports by name from that file.
    fn root_sees(&self, f: u32, name: &str) -> bool {
        f == 0 || self.root_named.get(name) == Some(&f)
    }

    /// `span` of the item being lowered, as a file-relative range for the IR.
    fn src_span(&self, span: Span) -> w::SrcSpan {
        let s = span.shift(self.offset);
        w::SrcSpan {
            file: self.file.as_str().to_string(),
            start: s.start,
            end: s.end,
        }
    }

    fn unsupported(&self, span: Span, what: impl Into<String>) -> Diagnostic {
        let what = what.into();
        Diagnostic::new(
            UNSUPPORTED,
            format!("cannot lower {what} yet"),
            Label::new(self.file.clone(), span.shift(self.offset), "not supported by lowering"),
        )
        .with_note("the program passed every check; only the lowering to the Program IR lacks this construct")
    }

    /// Integer constant arithmetic without a 64-bit value (E0213, as the checker says first).
    fn no_value(&self, span: Span) -> Diagnostic {
        Diagnostic::new(
            codes::E0213,
            "integer overflow in a constant expression",
            Label::new(
                self.file.clone(),
                span.shift(self.offset),
                "outside the 64-bit integer range",
            ),
        )
    }

    fn item(&mut self, it: &ast::Item) -> R<()> {
        match &it.kind {
            ItemKind::Import(_) | ItemKind::Error => Ok(()),
            ItemKind::Const(c) => {
                let checked = self
                    .int_consts
                    .get(self.cur.get() as usize)
                    .and_then(|m| m.get(&c.name.name));
                let v = match checked {
                    Some(i) => ScalarValue::Int(*i),
                    None => self.scalar_const(&c.value)?,
                };
                self.consts.insert(c.name.name.clone(), v);
                Ok(())
            }
            ItemKind::Param(pd) => {
                let dt = dtype(&pd.ty.dtype)
                    .ok_or_else(|| self.unsupported(pd.ty.span, "this param type"))?;
                let default = match &pd.default {
                    Some(e) => self.scalar_const(e)?,
                    None => return Err(self.unsupported(pd.name.span, "a param without a default")),
                };
                let id = w::ProgParamId(self.p.params.len() as u32);
                self.p.params.push(w::ProgParam {
                    name: pd.name.name.clone(),
                    dtype: dt,
                    default,
                });
                self.params.insert(pd.name.name.clone(), id);
                Ok(())
            }
            ItemKind::Tensor(t) => self.tensor(t),
            ItemKind::Axis(a) => self.axis(a),
            ItemKind::Kernel(kd) => {
                let kern = self.kernel(kd)?;
                self.kernels.insert(
                    kd.name.name.clone(),
                    w::KernelId(self.p.kernels.len() as u32),
                );
                self.p.kernels.push(kern);
                Ok(())
            }
            ItemKind::Workload(wl) => {
                self.locals.borrow_mut().clear();
                let lw = self.workload(wl)?;
                self.p.tensors.append(&mut self.locals.borrow_mut());
                self.p.workloads.push(lw);
                Ok(())
            }
            // A program runs the root file's own schedules and those it imports by name, and
            // checks the root's expectations, not those of the modules it imports.
            ItemKind::Schedule(s) if !self.root_sees(self.cur.get(), &s.name.name) => Ok(()),
            ItemKind::Expect(_) if self.cur.get() != 0 => Ok(()),
            ItemKind::Schedule(s) => self.schedule(s),
            ItemKind::Expect(e) => self.expect(e),
            ItemKind::Channel(c) => self.channel(c),
            ItemKind::Process(pr) => {
                let lp = self.process(pr)?;
                self.p.processes.push(lp);
                Ok(())
            }
        }
    }
}

fn is_name(e: &ast::Expr, n: &str) -> bool {
    matches!(&e.kind, ExprKind::Name(i) if i.name == n)
}
