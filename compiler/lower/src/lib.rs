//! Lowering of checked programs to the Program IR (a salsa query over wsp-core).
//!
//! [`lower`] reads [`wsp_core::lower::lowering_input`] (the program's items, root file first,
//! and the files that still have errors). A program with errors is not lowered: the check
//! diagnostics are returned. A checked construct this lowering does not handle yet gives the
//! diagnostic `E0813` at the construct, never a partial program. The result is validated with
//! [`wsp_ir::check::validate_program`]; a failure there is reported as `E0813` too (an internal
//! lowering bug, stated as such).

// Diagnostics are the error type of every lowering step; they are built only on the rare
// failure path, so their size does not matter.
#![allow(clippy::result_large_err)]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use wsp_core::db::{item_ast, item_offset, Db, File, ItemId};
use wsp_diagnostics::{Diagnostic, FileName, Label};
use wsp_ir::dtype::{DType, ScalarValue};
use wsp_ir::kernel as k;
use wsp_ir::workload as w;
use wsp_syntax::ast::{self, BinOp, ExprKind, ItemKind, StmtKind, UnOp};
use wsp_syntax::Span;
use wsp_vocab::codes;
use wsp_vocab::ops::KernelFn;

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

/// View indices that are not affine (computed from tensor elements, `%`, `/`): each is bound
/// to a fresh variable of the workload, and the statement that uses them is wrapped in a loop
/// of one iteration per variable, `for v in e .. e + 1`, which evaluates `e` when the
/// statement runs — after the producers of the elements it reads, as for any loop bound — so
/// the view itself stays affine in variables.
struct Binds<'n> {
    names: &'n mut Vec<String>,
    vars: Vec<w::LoopVar>,
    iters: Vec<w::Iter>,
}

impl<'n> Binds<'n> {
    fn new(names: &'n mut Vec<String>) -> Binds<'n> {
        Binds {
            names,
            vars: Vec::new(),
            iters: Vec::new(),
        }
    }

    fn bind(&mut self, x: w::Expr) -> w::LoopVar {
        let v = w::LoopVar(self.names.len() as u32);
        self.names.push(format!("index{}", self.vars.len()));
        self.vars.push(v);
        let end = w::Expr::Binary {
            op: w::ExprOp::Add,
            lhs: Box::new(x.clone()),
            rhs: Box::new(w::Expr::Const {
                value: ScalarValue::Int(1),
            }),
        };
        self.iters.push(w::Iter::Range { start: x, end });
        v
    }

    /// `stmt`, inside the loop that binds the variables, if any.
    fn around(self, stmt: w::WStmt) -> w::WStmt {
        if self.vars.is_empty() {
            return stmt;
        }
        w::WStmt::For {
            kind: w::LoopKind::Bind,
            vars: self.vars,
            iters: self.iters,
            body: vec![stmt],
        }
    }
}

/// The lowering query: the IR of the program rooted at `root`, or the diagnostics that prevent it.
#[salsa::tracked(returns(ref), no_eq)]
pub fn lowered_program(db: &dyn Db, root: File) -> Result<wsp_ir::Program, Vec<Diagnostic>> {
    lower_db(db, root)
}

fn lower_db(db: &dyn Db, root: File) -> Result<wsp_ir::Program, Vec<Diagnostic>> {
    let input = wsp_core::lower::lowering_input(db, root);
    if !input.blocked_by.is_empty() {
        let mut diags = Vec::new();
        for f in wsp_core::lower::program_files(db, root) {
            diags.extend(
                wsp_core::check_file(db, f)
                    .into_iter()
                    .filter(wsp_core::lower::blocks_lowering),
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
    let files = wsp_core::lower::program_files(db, root);
    // For each file, the file (by index) each imported name comes from.
    let from: Vec<BTreeMap<String, u32>> = files
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
        .collect();
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
    l.root_named = named;
    let cur = l.cur.clone();
    let file_index = |id: ItemId| {
        let f = id.file(db);
        files.iter().position(|g| *g == f).unwrap_or(0) as u32
    };
    l.p.source = Some(root.path(db).clone());
    let items: Vec<(ItemId, ast::Item)> = input
        .items
        .iter()
        .filter_map(|id| item_ast(db, *id).clone().map(|a| (*id, a)))
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
        let mut todo: Vec<&(ItemId, ast::Item)> =
            items.iter().filter(|(_, it)| pass(&it.kind)).collect();
        loop {
            let mut failed = Vec::new();
            let mut failures = Vec::new();
            for x in &todo {
                let (id, it) = x;
                l.file = FileName::new(id.file(db).path(db).as_str());
                l.offset = item_offset(db, *id);
                cur.set(file_index(*id));
                if let Err(d) = l.item(it) {
                    failed.push(*x);
                    failures.push(d);
                }
            }
            // Constants may use constants of modules that come later in program order (a
            // module's constant from an imported one): those go again once the others have
            // values, until no more of them lower.
            if k > 0 || failed.is_empty() || failed.len() == todo.len() {
                errs.extend(failures);
                break;
            }
            todo = failed;
        }
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
    let mut l = Lowerer::new(FileName::new(file.path(db).as_str()), Rc::default());
    let nodes = &wsp_core::db::parse_file(db, file).file.items;
    for n in nodes {
        if matches!(n.item.kind, ItemKind::Const(_) | ItemKind::Param(_)) {
            l.offset = n.range.start;
            // A constant that does not lower leaves its uses unlowerable, nothing more.
            let _ = l.item(&n.item);
        }
    }
    nodes.iter().find_map(|n| match &n.item.kind {
        ItemKind::Kernel(kd) if kd.name.name == name => {
            l.offset = n.range.start;
            l.kernel(kd).ok()
        }
        _ => None,
    })
}

type R<T> = Result<T, Diagnostic>;

struct Lowerer {
    p: wsp_ir::Program,
    consts: Scoped<ScalarValue>,
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
    fn new(file: FileName, from: Rc<Vec<BTreeMap<String, u32>>>) -> Lowerer {
        let cur = Rc::new(Cell::new(0));
        Lowerer {
            p: wsp_ir::Program::new(),
            consts: Scoped::new(&cur, &from),
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

    fn item(&mut self, it: &ast::Item) -> R<()> {
        match &it.kind {
            ItemKind::Import(_) | ItemKind::Error => Ok(()),
            ItemKind::Const(c) => {
                let v = self.scalar_const(&c.value)?;
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

    /// A compile-time scalar (literals, constants, arithmetic on them).
    fn scalar_const(&self, e: &ast::Expr) -> R<ScalarValue> {
        Ok(match &e.kind {
            ExprKind::Int(v) => match i64::try_from(*v) {
                Ok(i) => ScalarValue::Int(i),
                Err(_) => ScalarValue::UInt(*v),
            },
            ExprKind::Float(f) => ScalarValue::Float(f.0),
            ExprKind::Bool(b) => ScalarValue::Bool(*b),
            ExprKind::Name(n) => match self.consts.get(&n.name) {
                Some(v) => *v,
                None => return Err(self.unsupported(e.span, format!("`{}` as a constant", n.name))),
            },
            ExprKind::Unary {
                op: UnOp::Neg,
                expr,
            } => match self.scalar_const(expr)? {
                ScalarValue::Int(i) => ScalarValue::Int(-i),
                ScalarValue::Float(f) => ScalarValue::Float(-f),
                _ => return Err(self.unsupported(e.span, "this negation")),
            },
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.scalar_const(lhs)?, self.scalar_const(rhs)?);
                match (a, b) {
                    (ScalarValue::Int(a), ScalarValue::Int(b)) => {
                        let r = match op {
                            BinOp::Add => a.checked_add(b),
                            BinOp::Sub => a.checked_sub(b),
                            BinOp::Mul => a.checked_mul(b),
                            BinOp::Div => a.checked_div(b),
                            BinOp::Rem => a.checked_rem(b),
                            _ => None,
                        };
                        match r {
                            Some(v) => ScalarValue::Int(v),
                            None => {
                                return Err(self.unsupported(e.span, "this constant expression"))
                            }
                        }
                    }
                    (a, b) => {
                        let (Some(x), Some(y)) = (as_f64(a), as_f64(b)) else {
                            return Err(self.unsupported(e.span, "this constant expression"));
                        };
                        ScalarValue::Float(match op {
                            BinOp::Add => x + y,
                            BinOp::Sub => x - y,
                            BinOp::Mul => x * y,
                            BinOp::Div => x / y,
                            _ => return Err(self.unsupported(e.span, "this constant expression")),
                        })
                    }
                }
            }
            _ => return Err(self.unsupported(e.span, "this constant expression")),
        })
    }

    fn const_int(&self, e: &ast::Expr) -> R<i64> {
        match self.scalar_const(e)? {
            ScalarValue::Int(i) => Ok(i),
            _ => Err(self.unsupported(e.span, "a non-integer here")),
        }
    }

    /// An affine expression over params and (optionally) loop variables.
    /// A view index or slice bound: affine in loop variables and params, or else any integer
    /// expression the orchestration evaluates (tensor elements, `%`, `/`), bound to a
    /// variable of its own around the task ([`Binds`]).
    fn index(
        &self,
        e: &ast::Expr,
        vars: &BTreeMap<String, w::LoopVar>,
        binds: &mut Binds<'_>,
    ) -> R<w::Affine> {
        match self.affine(e, vars) {
            Err(d) if d.code == UNSUPPORTED => match self.rexpr(e, vars) {
                Ok(x) => Ok(w::Affine::var(binds.bind(x))),
                Err(_) => Err(d),
            },
            r => r,
        }
    }

    fn affine(&self, e: &ast::Expr, vars: &BTreeMap<String, w::LoopVar>) -> R<w::Affine> {
        if let Ok(ScalarValue::Int(c)) = self.scalar_const(e) {
            return Ok(w::Affine::constant(c));
        }
        match &e.kind {
            ExprKind::Name(n) => {
                if let Some(v) = vars.get(&n.name) {
                    Ok(w::Affine::var(*v))
                } else if let Some(p) = self.params.get(&n.name) {
                    Ok(w::Affine::param(*p))
                } else {
                    Err(self.unsupported(e.span, format!("`{}` in an index", n.name)))
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.affine(lhs, vars)?;
                let b = self.affine(rhs, vars)?;
                let r = match op {
                    BinOp::Add => add(a, b, 1),
                    BinOp::Sub => add(a, b, -1),
                    BinOp::Mul if a.terms.is_empty() => scale(b, a.constant),
                    BinOp::Mul if b.terms.is_empty() => scale(a, b.constant),
                    _ => return Err(self.unsupported(e.span, "a non-affine index")),
                };
                // The checker reports this (E0213); a program that reached lowering without
                // the check gets the same error, never a wrapped index.
                r.ok_or_else(|| {
                    Diagnostic::new(
                        codes::E0213,
                        "integer overflow in an index expression",
                        Label::new(
                            self.file.clone(),
                            e.span.shift(self.offset),
                            "a coefficient outside the 64-bit integer range",
                        ),
                    )
                })
            }
            _ => Err(self.unsupported(e.span, "this index expression")),
        }
    }

    fn init(&self, e: &ast::Expr) -> R<w::Init> {
        if let ExprKind::List(xs) = &e.kind {
            let values = xs
                .iter()
                .map(|x| self.scalar_const(x))
                .collect::<R<Vec<_>>>()?;
            return Ok(w::Init::Literal { values });
        }
        if let ExprKind::Name(n) = &e.kind {
            match n.name.as_str() {
                "zeros" => return Ok(w::Init::Zeros),
                "ones" => return Ok(w::Init::Ones),
                _ => {}
            }
        }
        let ExprKind::Call {
            callee,
            coords: None,
            args,
        } = &e.kind
        else {
            return Err(self.unsupported(e.span, "this initialiser"));
        };
        let ExprKind::Name(f) = &callee.kind else {
            return Err(self.unsupported(e.span, "this initialiser"));
        };
        let arg = |i: usize| args.get(i).map(|a| &a.value);
        match f.name.as_str() {
            "load" => match arg(0).map(|a| &a.kind) {
                Some(ExprKind::Str(s)) => Ok(w::Init::Load { path: s.clone() }),
                _ => Err(self.unsupported(e.span, "`load` without a string path")),
            },
            "random" => {
                let seed = match args
                    .iter()
                    .find(|a| a.name.as_ref().is_some_and(|n| n.name == "seed"))
                    .or(args.first())
                {
                    Some(a) => self.const_int(&a.value)?,
                    None => 0,
                };
                Ok(w::Init::Random { seed: seed as u64 })
            }
            "zeros" => Ok(w::Init::Zeros),
            "ones" => Ok(w::Init::Ones),
            "full" => match args.last() {
                Some(a) => Ok(w::Init::Full {
                    value: self.scalar_const(&a.value)?,
                }),
                None => Err(self.unsupported(e.span, "`full` without a value")),
            },
            _ => Err(self.unsupported(e.span, format!("the initialiser `{}`", f.name))),
        }
    }

    fn tensor(&mut self, t: &ast::TensorDecl) -> R<()> {
        let dt = dtype(&t.ty.dtype).ok_or_else(|| self.unsupported(t.ty.span, "this dtype"))?;
        let mut shape = Vec::new();
        for d in t.ty.dims.iter().flatten() {
            shape.push(self.affine(&d.size, &BTreeMap::new())?);
        }
        let init = match &t.init {
            Some(e) => Some(self.init(e)?),
            None => None,
        };
        let id = w::TensorId(self.p.tensors.len() as u32);
        self.p.tensors.push(w::TensorDecl {
            name: t.name.name.clone(),
            kind: match t.kind {
                ast::TensorKind::Input => w::TensorKind::Input,
                ast::TensorKind::Output => w::TensorKind::Output,
                ast::TensorKind::Scratch => w::TensorKind::Scratch,
                ast::TensorKind::Local => w::TensorKind::Local,
            },
            dtype: dt,
            shape,
            init,
            at: Some(self.src_span(t.init.as_ref().map_or(t.name.span, |e| e.span))),
        });
        self.tensors.insert(t.name.name.clone(), id);
        Ok(())
    }

    fn axis(&mut self, a: &ast::AxisDecl) -> R<()> {
        let kind = match &a.ctor.kind {
            ExprKind::Index { base, indices } if is_name(base, "Dense") && indices.len() == 1 => {
                let n = self.const_int(&indices[0])?;
                w::AxisKind::Dense {
                    size: n.max(0) as u64,
                }
            }
            ExprKind::Call {
                callee,
                coords: None,
                args,
            } => {
                let get_tensor = |i: usize| -> R<w::TensorId> {
                    match args.get(i).map(|a| &a.value.kind) {
                        Some(ExprKind::Name(n)) => self
                            .tensors
                            .get(&n.name)
                            .copied()
                            .ok_or_else(|| self.unsupported(a.ctor.span, "this axis argument")),
                        _ => Err(self.unsupported(a.ctor.span, "this axis argument")),
                    }
                };
                let get_axis = || -> R<w::AxisId> {
                    match args.first().map(|a| &a.value.kind) {
                        Some(ExprKind::Name(n)) => {
                            self.axes.get(&n.name).copied().ok_or_else(|| {
                                self.unsupported(a.ctor.span, "an axis declared after its use")
                            })
                        }
                        _ => Err(self.unsupported(a.ctor.span, "this axis argument")),
                    }
                };
                if is_name(callee, "DenseDyn") {
                    let Some(arg) = args.first() else {
                        return Err(self.unsupported(a.ctor.span, "this axis"));
                    };
                    w::AxisKind::DenseDyn {
                        size: self.rexpr(&arg.value, &BTreeMap::new())?,
                    }
                } else if is_name(callee, "Ragged") {
                    let per = match args
                        .iter()
                        .find(|x| x.name.as_ref().is_some_and(|n| n.name == "per"))
                    {
                        Some(x) => Some(
                            u32::try_from(self.const_int(&x.value)?)
                                .ok()
                                .filter(|k| *k > 0)
                                .ok_or_else(|| self.unsupported(x.value.span, "this `per`"))?,
                        ),
                        None => None,
                    };
                    w::AxisKind::Ragged {
                        outer: get_axis()?,
                        lengths: get_tensor(1)?,
                        per,
                    }
                } else if is_name(callee, "Sparse") {
                    w::AxisKind::Sparse {
                        outer: get_axis()?,
                        indptr: get_tensor(1)?,
                        indices: get_tensor(2)?,
                    }
                } else {
                    return Err(self.unsupported(a.ctor.span, "this axis constructor"));
                }
            }
            _ => return Err(self.unsupported(a.ctor.span, "this axis constructor")),
        };
        self.axes
            .insert(a.name.name.clone(), w::AxisId(self.p.axes.len() as u32));
        self.p.axes.push(w::Axis {
            name: a.name.name.clone(),
            kind,
            at: Some(self.src_span(a.ctor.span)),
        });
        Ok(())
    }

    /// A run-time scalar expression of a workload.
    fn rexpr(&self, e: &ast::Expr, vars: &BTreeMap<String, w::LoopVar>) -> R<w::Expr> {
        Ok(match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => w::Expr::Const {
                value: self.scalar_const(e)?,
            },
            ExprKind::Name(n) => {
                if let Some(v) = vars.get(&n.name) {
                    w::Expr::Var { var: *v }
                } else if let Some(p) = self.params.get(&n.name) {
                    w::Expr::Param { param: *p }
                } else if let Some(c) = self.consts.get(&n.name) {
                    w::Expr::Const { value: *c }
                } else {
                    return Err(self.unsupported(e.span, format!("`{}` in an expression", n.name)));
                }
            }
            ExprKind::Index { base, indices } => {
                let ExprKind::Name(n) = &base.kind else {
                    return Err(self.unsupported(e.span, "this element read"));
                };
                let Some(t) = self.tensors.get(&n.name) else {
                    return Err(self.unsupported(e.span, "this element read"));
                };
                w::Expr::Elem {
                    tensor: *t,
                    index: indices
                        .iter()
                        .map(|i| self.rexpr(i, vars))
                        .collect::<R<Vec<_>>>()?,
                }
            }
            ExprKind::Unary { op, expr } => {
                let x = Box::new(self.rexpr(expr, vars)?);
                match op {
                    UnOp::Neg => w::Expr::Neg { x },
                    UnOp::Not => w::Expr::Not { x },
                }
            }
            ExprKind::Binary { op, lhs, rhs } => w::Expr::Binary {
                op: expr_op(*op),
                lhs: Box::new(self.rexpr(lhs, vars)?),
                rhs: Box::new(self.rexpr(rhs, vars)?),
            },
            ExprKind::Call {
                callee,
                coords: None,
                args,
            } if args.len() == 2 && (is_name(callee, "min") || is_name(callee, "max")) => {
                w::Expr::Binary {
                    op: if is_name(callee, "min") {
                        w::ExprOp::Min
                    } else {
                        w::ExprOp::Max
                    },
                    lhs: Box::new(self.rexpr(&args[0].value, vars)?),
                    rhs: Box::new(self.rexpr(&args[1].value, vars)?),
                }
            }
            _ => return Err(self.unsupported(e.span, "this expression in a workload")),
        })
    }

    fn kernel(&self, kd: &ast::Kernel) -> R<k::Kernel> {
        let mut kl = KLower {
            l: self,
            k: k::Kernel {
                name: kd.name.name.clone(),
                params: Vec::new(),
                values: Vec::new(),
                vars: Vec::new(),
                pipes: Vec::new(),
                body: None,
                externs: Vec::new(),
                cost: None,
                at: Some(self.src_span(kd.name.span)),
            },
            env: Vec::new(),
        };
        let mut scope = BTreeMap::new();
        for (i, p) in kd.params.iter().enumerate() {
            let dt = dtype(&p.ty.dtype).ok_or_else(|| self.unsupported(p.ty.span, "this dtype"))?;
            let kind = match p.dir {
                Some((dir, _)) => {
                    let dims = p.ty.dims.clone().unwrap_or_default();
                    let mut sz = Vec::new();
                    let mut partial = Vec::new();
                    for d in &dims {
                        let n = self.const_int(&d.size)?;
                        sz.push(
                            u32::try_from(n)
                                .map_err(|_| self.unsupported(d.span, "this tile size"))?,
                        );
                        partial.push(d.partial);
                    }
                    let (shape, part) = match (sz.as_slice(), partial.as_slice()) {
                        ([r, c], [pr, pc]) => ([*r, *c], [*pr, *pc]),
                        ([c], [pc]) => ([1, *c], [false, *pc]),
                        ([], []) => ([1, 1], [false, false]),
                        _ => {
                            return Err(
                                self.unsupported(p.ty.span, "a tile of more than two dimensions")
                            )
                        }
                    };
                    k::ParamKind::Tile {
                        dir: match dir {
                            ast::Direction::In => k::Direction::In,
                            ast::Direction::Out => k::Direction::Out,
                            ast::Direction::InOut => k::Direction::InOut,
                        },
                        tile: k::TileType::new(dt, shape[0], shape[1]),
                        partial: part,
                    }
                }
                None => k::ParamKind::Scalar {
                    dtype: dt,
                    default: match &p.default {
                        Some(e) => Some(self.scalar_const(e)?),
                        None => None,
                    },
                },
            };
            kl.k.params.push(k::Param {
                name: p.name.name.clone(),
                kind,
            });
            scope.insert(p.name.name.clone(), KB::Param(k::ParamId(i as u32)));
        }
        kl.env.push(scope);
        match &kd.body {
            ast::KernelBody::Block(b) => {
                let body = kl.block(b)?;
                kl.k.body = Some(body);
            }
            ast::KernelBody::Extern(bs) => {
                for b in bs {
                    match (b.target.name.as_str(), &b.value) {
                        (target, ast::ExternValue::Path(p)) => kl.k.externs.push(k::ExternImpl {
                            target: target.to_string(),
                            path: p.value.clone(),
                        }),
                        ("cost", ast::ExternValue::Expr(e)) => {
                            let n = self.const_int(e)?;
                            kl.k.cost = Some(
                                u64::try_from(n)
                                    .map_err(|_| self.unsupported(e.span, "a negative cost"))?,
                            );
                        }
                        ("sim", ast::ExternValue::Expr(e)) => self.sim_reference(&mut kl.k, e)?,
                        _ => return Err(self.unsupported(b.value_span(), "this extern binding")),
                    }
                }
            }
        }
        Ok(kl.k)
    }

    /// `sim: reference` of an extern kernel: the simulator runs the reference's body, which
    /// takes the same parameters (E0713 otherwise, from the checker; a reference that is itself
    /// extern is refused here).
    fn sim_reference(&self, k: &mut k::Kernel, e: &ast::Expr) -> R<()> {
        let ExprKind::Name(n) = &e.kind else {
            return Err(self.unsupported(e.span, "a `sim:` reference that is not a kernel name"));
        };
        let reference = self
            .kernels
            .get(&n.name)
            .and_then(|id| self.p.kernels.get(id.index()))
            .filter(|r| r.body.is_some())
            .ok_or_else(|| {
                Diagnostic::new(
                    codes::E0713,
                    format!("`{}` is not a kernel with a `.wsp` body", n.name),
                    Label::new(self.file.clone(), e.span.shift(self.offset), "not a reference"),
                )
                .with_help("`sim:` names a kernel with a body and the same parameters: the simulator runs it in place of the extern kernel")
            })?;
        let same = |a: &k::Param, b: &k::Param| {
            a.name == b.name
                && match (&a.kind, &b.kind) {
                    (
                        k::ParamKind::Scalar { dtype: x, .. },
                        k::ParamKind::Scalar { dtype: y, .. },
                    ) => x == y,
                    (x, y) => x == y,
                }
        };
        if reference.params.len() != k.params.len()
            || !reference
                .params
                .iter()
                .zip(&k.params)
                .all(|(a, b)| same(a, b))
        {
            return Err(Diagnostic::new(
                codes::E0713,
                format!(
                    "the reference `{}` does not take the parameters of `{}`",
                    n.name, k.name
                ),
                Label::new(
                    self.file.clone(),
                    e.span.shift(self.offset),
                    "different parameters",
                ),
            ));
        }
        k.values = reference.values.clone();
        k.vars = reference.vars.clone();
        k.pipes = reference.pipes.clone();
        k.body = reference.body.clone();
        Ok(())
    }

    fn workload(&self, wl: &ast::Workload) -> R<w::Workload> {
        let mut out = w::Workload {
            name: wl.name.name.clone(),
            vars: Vec::new(),
            body: w::WorkloadBody::Block { stmts: Vec::new() },
        };
        match &wl.body {
            ast::WorkloadBody::Block(b) => {
                let mut vars = BTreeMap::new();
                let stmts = self.wblock(b, &mut out.vars, &mut vars)?;
                out.body = w::WorkloadBody::Block { stmts };
            }
            ast::WorkloadBody::Expr(e) => {
                let ExprKind::Call {
                    callee,
                    coords: None,
                    args,
                } = &e.kind
                else {
                    return Err(self.unsupported(e.span, "this workload expression"));
                };
                if is_name(callee, "connect") {
                    out.body = w::WorkloadBody::Connect {
                        processes: self.connect_items(args)?,
                    };
                    return Ok(out);
                }
                let mut parts = Vec::new();
                for a in args {
                    match &a.value.kind {
                        ExprKind::Name(n) if self.workloads.contains_key(&n.name) => {
                            parts.push(self.workloads[&n.name])
                        }
                        _ => return Err(self.unsupported(a.span, "this workload part")),
                    }
                }
                out.body = if is_name(callee, "combine") {
                    w::WorkloadBody::Combine { parts }
                } else if is_name(callee, "sequential") {
                    w::WorkloadBody::Sequential { parts }
                } else {
                    return Err(self.unsupported(e.span, "this workload expression"));
                };
            }
        }
        Ok(out)
    }

    /// `channel c: Channel[depth: 2, latency: 10]` (depth 1 when omitted; the model's latency
    /// when `latency` is).
    fn channel(&mut self, c: &ast::ChannelDecl) -> R<()> {
        let mut depth = 1u32;
        let mut latency = None;
        for a in &c.args {
            let what = a.name.as_ref().map(|n| n.name.as_str());
            let v = self.const_int(&a.value).map_err(|_| {
                self.unsupported(
                    a.value.span,
                    "a channel argument that is not a constant integer",
                )
            })?;
            match what {
                Some("depth") => {
                    depth = u32::try_from(v).map_err(|_| {
                        self.unsupported(a.value.span, format!("a channel depth of {v}"))
                    })?
                }
                Some("latency") => {
                    latency = Some(u64::try_from(v).map_err(|_| {
                        self.unsupported(a.value.span, format!("a channel latency of {v}"))
                    })?)
                }
                _ => return Err(self.unsupported(a.span, "this channel argument")),
            }
        }
        self.channels.insert(
            c.name.name.clone(),
            w::ChannelId(self.p.channels.len() as u32),
        );
        self.p.channels.push(w::Channel {
            name: c.name.name.clone(),
            depth,
            latency,
        });
        Ok(())
    }

    fn channel_id(&self, n: &ast::Ident) -> R<w::ChannelId> {
        self.channels
            .get(&n.name)
            .copied()
            .ok_or_else(|| self.unsupported(n.span, format!("`{}` as a channel", n.name)))
    }

    /// `process p consumes a produces b { body }`.
    fn process(&self, pr: &ast::Process) -> R<w::Process> {
        let consumes = pr
            .consumes
            .iter()
            .map(|c| self.channel_id(c))
            .collect::<R<Vec<_>>>()?;
        let produces = pr
            .produces
            .iter()
            .map(|c| self.channel_id(c))
            .collect::<R<Vec<_>>>()?;
        let mut names = Vec::new();
        self.in_process.set(true);
        let body = self.wblock(&pr.body, &mut names, &mut BTreeMap::new());
        self.in_process.set(false);
        let body = body?;
        Ok(w::Process {
            name: pr.name.name.clone(),
            consumes,
            produces,
            vars: names,
            body,
        })
    }

    /// The arguments of `connect(p1, p2, replicate(worker, 4))`.
    fn connect_items(&self, args: &[ast::Arg]) -> R<Vec<w::ConnectItem>> {
        let mut items = Vec::new();
        for a in args {
            let (proc_expr, replicas) = match &a.value.kind {
                ExprKind::Call {
                    callee,
                    coords: None,
                    args: rargs,
                } if is_name(callee, "replicate") && rargs.len() == 2 => {
                    let n = self.const_int(&rargs[1].value).map_err(|_| {
                        self.unsupported(
                            rargs[1].value.span,
                            "a `replicate` count that is not a constant integer",
                        )
                    })?;
                    let n = u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
                        self.unsupported(
                            rargs[1].value.span,
                            format!("`replicate` with a count of {n} (it needs at least 1)"),
                        )
                    })?;
                    (&rargs[0].value, n)
                }
                _ => (&a.value, 1),
            };
            match &proc_expr.kind {
                ExprKind::Name(n) if self.processes.contains_key(&n.name) => {
                    items.push(w::ConnectItem {
                        process: self.processes[&n.name],
                        replicas,
                    })
                }
                _ => return Err(self.unsupported(a.span, "this `connect` part")),
            }
        }
        Ok(items)
    }

    fn wblock(
        &self,
        b: &ast::Block,
        names: &mut Vec<String>,
        vars: &mut BTreeMap<String, w::LoopVar>,
    ) -> R<Vec<w::WStmt>> {
        self.wstmts(&b.stmts, names, vars)
    }

    fn wstmts(
        &self,
        stmts: &[ast::Stmt],
        names: &mut Vec<String>,
        vars: &mut BTreeMap<String, w::LoopVar>,
    ) -> R<Vec<w::WStmt>> {
        let mut out = Vec::new();
        for (i, s) in stmts.iter().enumerate() {
            if let Some((name, ty)) = s.local_tensor() {
                // The rest of the block is the local tensor's scope.
                let tensor = self.local_tensor(name, ty, s.span)?;
                self.local_names
                    .borrow_mut()
                    .push((name.name.clone(), tensor));
                let body = self.wstmts(&stmts[i + 1..], names, vars);
                self.local_names.borrow_mut().pop();
                out.push(w::WStmt::Local {
                    tensor,
                    body: body?,
                });
                return Ok(out);
            }
            out.push(self.wstmt(s, names, vars)?);
        }
        Ok(out)
    }

    /// The declaration of a local tensor (its id follows the program's tensors and the
    /// workload's earlier locals).
    fn local_tensor(&self, name: &ast::Ident, ty: &ast::TypeExpr, span: Span) -> R<w::TensorId> {
        if self.in_process.get() {
            return Err(self.unsupported(span, "a local tensor in a process"));
        }
        let dt = dtype(&ty.dtype).ok_or_else(|| self.unsupported(ty.span, "this dtype"))?;
        let mut shape = Vec::new();
        for d in ty.dims.iter().flatten() {
            let n = self.const_int(&d.size).map_err(|_| {
                self.unsupported(d.size.span, "a local tensor size that is not constant")
            })?;
            shape.push(w::Affine::constant(n));
        }
        let mut locals = self.locals.borrow_mut();
        let id = w::TensorId((self.p.tensors.len() + locals.len()) as u32);
        locals.push(w::TensorDecl {
            name: name.name.clone(),
            kind: w::TensorKind::Local,
            dtype: dt,
            shape,
            init: None,
            at: Some(self.src_span(name.span)),
        });
        Ok(id)
    }

    fn wstmt(
        &self,
        s: &ast::Stmt,
        names: &mut Vec<String>,
        vars: &mut BTreeMap<String, w::LoopVar>,
    ) -> R<w::WStmt> {
        match &s.kind {
            StmtKind::For {
                vars: vs,
                iter,
                body,
            } => {
                let (kind, iter_args): (w::LoopKind, Vec<&ast::Expr>) = match &iter.kind {
                    ExprKind::Call {
                        callee,
                        coords: None,
                        args,
                    } => {
                        let kind = if is_name(callee, "P") {
                            w::LoopKind::Parallel
                        } else if let ExprKind::Field { base, field } = &callee.kind {
                            match (is_name(base, "P"), field.name.as_str()) {
                                (true, "seq") => w::LoopKind::Sequential,
                                (true, "sel") => w::LoopKind::Selected,
                                _ => return Err(self.unsupported(iter.span, "this iterator")),
                            }
                        } else {
                            return Err(self.unsupported(iter.span, "this iterator"));
                        };
                        (kind, args.iter().map(|a| &a.value).collect())
                    }
                    _ => (w::LoopKind::Plain, vec![iter]),
                };
                let mut iters = Vec::new();
                let mut bound = 0usize;
                for a in iter_args {
                    match &a.kind {
                        ExprKind::Name(n) if self.axes.contains_key(&n.name) => {
                            let id = self.axes[&n.name];
                            bound += match self.p.axes[id.index()].kind {
                                w::AxisKind::Ragged { .. } | w::AxisKind::Sparse { .. } => 2,
                                _ => 1,
                            };
                            iters.push(w::Iter::Axis { axis: id });
                        }
                        ExprKind::Index { base, indices }
                            if indices.len() == 1
                                && matches!(&base.kind, ExprKind::Name(n) if self.axes.contains_key(&n.name)) =>
                        {
                            let ExprKind::Name(n) = &base.kind else {
                                unreachable!()
                            };
                            bound += 1;
                            iters.push(w::Iter::Row {
                                axis: self.axes[&n.name],
                                row: self.affine(&indices[0], vars)?,
                            });
                        }
                        ExprKind::Range {
                            start,
                            end: Some(end),
                        } => {
                            bound += 1;
                            let start = match start {
                                Some(s) => self.rexpr(s, vars)?,
                                None => w::Expr::Const {
                                    value: ScalarValue::Int(0),
                                },
                            };
                            iters.push(w::Iter::Range {
                                start,
                                end: self.rexpr(end, vars)?,
                            });
                        }
                        _ => return Err(self.unsupported(a.span, "this iterator")),
                    }
                }
                if bound != vs.len() {
                    return Err(self.unsupported(
                        iter.span,
                        "a loop whose variables do not match its iterators",
                    ));
                }
                let mut inner = vars.clone();
                let mut lvs = Vec::new();
                for v in vs {
                    let id = w::LoopVar(names.len() as u32);
                    names.push(v.name.clone());
                    inner.insert(v.name.clone(), id);
                    lvs.push(id);
                }
                let body = self.wblock(body, names, &mut inner)?;
                Ok(w::WStmt::For {
                    kind,
                    vars: lvs,
                    iters,
                    body,
                })
            }
            StmtKind::When {
                branches,
                otherwise,
            } => {
                let mut bs = Vec::new();
                for (c, b) in branches {
                    bs.push(w::WhenBranch {
                        cond: self.rexpr(c, vars)?,
                        body: self.wblock(b, names, &mut vars.clone())?,
                    });
                }
                let otherwise = match otherwise {
                    Some(b) => self.wblock(b, names, &mut vars.clone())?,
                    None => Vec::new(),
                };
                Ok(w::WStmt::When {
                    branches: bs,
                    otherwise,
                })
            }
            StmtKind::Send { channel, value } => {
                let channel = self.channel_id(channel)?;
                let payload = match &value.kind {
                    ExprKind::Call {
                        coords: Some(_), ..
                    } => {
                        let mut binds = Binds::new(names);
                        let call = self.task_call(value, vars, &mut binds)?;
                        return Ok(binds.around(w::WStmt::Send {
                            channel,
                            payload: w::SendPayload::Task(call),
                        }));
                    }
                    ExprKind::Tuple(xs) => w::SendPayload::Values {
                        values: xs
                            .iter()
                            .map(|x| self.rexpr(x, vars))
                            .collect::<R<Vec<_>>>()?,
                    },
                    _ => w::SendPayload::Values {
                        values: vec![self.rexpr(value, vars)?],
                    },
                };
                Ok(w::WStmt::Send { channel, payload })
            }
            StmtKind::Consume {
                channel,
                bindings,
                body,
            } => {
                let channel = self.channel_id(channel)?;
                let mut inner = vars.clone();
                let mut lvs = Vec::new();
                for b in bindings {
                    let id = w::LoopVar(names.len() as u32);
                    names.push(b.name.clone());
                    inner.insert(b.name.clone(), id);
                    lvs.push(id);
                }
                let body = self.wblock(body, names, &mut inner)?;
                Ok(w::WStmt::Consume {
                    channel,
                    bindings: lvs,
                    body,
                })
            }
            StmtKind::Expr(e) => match &e.kind {
                ExprKind::Call {
                    coords: Some(_), ..
                } => {
                    let mut binds = Binds::new(names);
                    let call = self.task_call(e, vars, &mut binds)?;
                    Ok(binds.around(w::WStmt::Call(call)))
                }
                ExprKind::Name(n) if self.workloads.contains_key(&n.name) => Ok(w::WStmt::Run {
                    workload: self.workloads[&n.name],
                }),
                _ => Err(self.unsupported(e.span, "this workload statement")),
            },
            _ => Err(self.unsupported(s.span, "this workload statement")),
        }
    }

    fn task_call(
        &self,
        e: &ast::Expr,
        vars: &BTreeMap<String, w::LoopVar>,
        binds: &mut Binds<'_>,
    ) -> R<w::TaskCall> {
        let ExprKind::Call {
            callee,
            coords,
            args,
        } = &e.kind
        else {
            return Err(self.unsupported(e.span, "this task call"));
        };
        let ExprKind::Name(kn) = &callee.kind else {
            return Err(self.unsupported(callee.span, "this task call"));
        };
        let Some(kid) = self.kernels.get(&kn.name).copied() else {
            return Err(self.unsupported(callee.span, "a call of an unknown kernel"));
        };
        let kern = &self.p.kernels[kid.index()];
        let coords = coords
            .iter()
            .flatten()
            .map(|c| self.rexpr(c, vars))
            .collect::<R<Vec<_>>>()?;
        let mut out = Vec::new();
        for (i, p) in kern.params.iter().enumerate() {
            let arg = args
                .iter()
                .find(|a| a.name.as_ref().is_some_and(|n| n.name == p.name))
                .or_else(|| args.get(i).filter(|a| a.name.is_none()));
            match (&p.kind, arg) {
                (k::ParamKind::Tile { .. }, Some(a)) => {
                    out.push(w::TaskArg::View(self.view(&a.value, vars, binds)?))
                }
                (k::ParamKind::Scalar { .. }, Some(a)) => out.push(w::TaskArg::Scalar {
                    value: self.rexpr(&a.value, vars)?,
                }),
                (
                    k::ParamKind::Scalar {
                        default: Some(d), ..
                    },
                    None,
                ) => out.push(w::TaskArg::Scalar {
                    value: w::Expr::Const { value: *d },
                }),
                _ => {
                    return Err(self.unsupported(e.span, format!("a call that omits `{}`", p.name)))
                }
            }
        }
        Ok(w::TaskCall {
            kernel: kid,
            coords,
            args: out,
            at: Some(self.src_span(e.span)),
        })
    }

    fn view(
        &self,
        e: &ast::Expr,
        vars: &BTreeMap<String, w::LoopVar>,
        binds: &mut Binds<'_>,
    ) -> R<w::View> {
        let (base, indices): (&ast::Expr, &[ast::Expr]) = match &e.kind {
            ExprKind::Index { base, indices } => (base, indices),
            _ => (e, &[]),
        };
        let ExprKind::Name(n) = &base.kind else {
            return Err(self.unsupported(e.span, "this view"));
        };
        let local = self
            .local_names
            .borrow()
            .iter()
            .rev()
            .find(|(l, _)| *l == n.name)
            .map(|(_, t)| *t);
        let Some(t) = local.or_else(|| self.tensors.get(&n.name).copied()) else {
            return Err(self.unsupported(e.span, "this view"));
        };
        let mut dims = Vec::new();
        for ix in indices {
            dims.push(match &ix.kind {
                ExprKind::FullSlice => w::ViewDim::Full,
                ExprKind::Range { start, end } => {
                    let start = match start {
                        Some(s) => self.index(s, vars, binds)?,
                        None => w::Affine::constant(0),
                    };
                    let end = match end {
                        Some(s) => self.index(s, vars, binds)?,
                        None => return Err(self.unsupported(ix.span, "an open-ended slice")),
                    };
                    w::ViewDim::Slice { start, end }
                }
                _ => w::ViewDim::Index {
                    at: self.index(ix, vars, binds)?,
                },
            });
        }
        Ok(w::View { tensor: t, dims })
    }

    fn dir_value(&self, e: &ast::Expr) -> R<w::DirValue> {
        Ok(match &e.kind {
            ExprKind::Int(_) => w::DirValue::Int {
                value: self.const_int(e)?,
            },
            ExprKind::Float(f) => w::DirValue::Float { value: f.0 },
            ExprKind::Str(s) => w::DirValue::Str { value: s.clone() },
            ExprKind::Name(n) => match (self.axes.get(&n.name), self.consts.get(&n.name)) {
                (Some(a), _) => w::DirValue::Axis { axis: *a },
                (None, Some(ScalarValue::Int(i))) => w::DirValue::Int { value: *i },
                _ => w::DirValue::Ident {
                    name: n.name.clone(),
                },
            },
            ExprKind::Call {
                callee,
                coords: None,
                args,
            } => {
                let ExprKind::Name(n) = &callee.kind else {
                    return Err(self.unsupported(e.span, "this directive argument"));
                };
                w::DirValue::Call {
                    name: n.name.clone(),
                    args: self.dir_args(args)?,
                }
            }
            ExprKind::Binary { op, lhs, rhs } => w::DirValue::Binary {
                op: expr_op(*op),
                lhs: Box::new(self.dir_value(lhs)?),
                rhs: Box::new(self.dir_value(rhs)?),
            },
            _ => return Err(self.unsupported(e.span, "this directive argument")),
        })
    }

    fn dir_args(&self, args: &[ast::Arg]) -> R<Vec<w::DirArg>> {
        args.iter()
            .map(|a| {
                Ok(w::DirArg {
                    name: a.name.as_ref().map(|n| n.name.clone()),
                    value: self.dir_value(&a.value)?,
                })
            })
            .collect()
    }

    /// A schedule directive in its typed IR form. The checker has validated the directive and
    /// its policy (E0601-E0607); what does not fit here is E0813.
    fn directive<'a>(&self, d: &'a ast::Directive) -> R<w::Directive> {
        use wsp_vocab::schedule::{Directive as D, DirectiveArg, Policy};
        let unsupported = || self.unsupported(d.span, "this schedule directive");
        let kind = D::from_name(&d.name.name).ok_or_else(unsupported)?;
        if kind.arg() == DirectiveArg::Pools {
            // Named ring sizes; the last of a name applies (W0601).
            let mut sizes = [None::<i64>; 4];
            for a in &d.args {
                let i = a
                    .name
                    .as_ref()
                    .and_then(|n| {
                        wsp_vocab::schedule::POOL_NAMES
                            .iter()
                            .position(|p| *p == n.name)
                    })
                    .ok_or_else(unsupported)?;
                sizes[i] = Some(self.const_int(&a.value)?);
            }
            let small = |v: Option<i64>| -> R<Option<u32>> {
                v.map(|v| u32::try_from(v).map_err(|_| unsupported()))
                    .transpose()
            };
            return Ok(w::Directive::TaskGraph {
                tensormap: small(sizes[0])?,
                deplist: small(sizes[1])?,
                ready: small(sizes[2])?,
                heap: sizes[3]
                    .map(|v| u64::try_from(v).map_err(|_| unsupported()))
                    .transpose()?,
            });
        }
        if kind.arg() == DirectiveArg::Grid {
            // `grid: (rows, cols), at: (row, col)`, as the checker has validated them.
            let named = |n: &str| {
                d.args
                    .iter()
                    .find(|a| a.name.as_ref().is_some_and(|x| x.name == n))
                    .map(|a| &a.value)
            };
            let pair = |e: Option<&'a ast::Expr>| match e.map(|e| &e.kind) {
                Some(ExprKind::Tuple(xs)) if xs.len() == 2 => Ok((&xs[0], &xs[1])),
                _ => Err(unsupported()),
            };
            let (r, c) = pair(named("grid"))?;
            let (row, col) = pair(named("at"))?;
            let size = |e: &ast::Expr| -> R<u32> {
                u32::try_from(self.const_int(e)?)
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(unsupported)
            };
            return Ok(w::Directive::SpatialMap {
                rows: size(r)?,
                cols: size(c)?,
                row: self.dir_value(row)?,
                col: self.dir_value(col)?,
            });
        }
        if kind.arg() == DirectiveArg::Shard {
            // `T, shard(dim: d, parts: n)` (or `shard(d, n)`).
            let [t, sh] = d.args.as_slice() else {
                return Err(unsupported());
            };
            let tensor = match &t.value.kind {
                ExprKind::Name(n) => self.tensors.get(&n.name).copied(),
                _ => None,
            }
            .ok_or_else(unsupported)?;
            let ExprKind::Call {
                callee,
                coords: None,
                args,
            } = &sh.value.kind
            else {
                return Err(unsupported());
            };
            if !is_name(callee, wsp_vocab::schedule::SHARD) {
                return Err(unsupported());
            }
            let arg = |i: usize| {
                let name = wsp_vocab::schedule::SHARD_NAMES[i];
                args.iter()
                    .find(|a| a.name.as_ref().is_some_and(|x| x.name == name))
                    .or_else(|| args.get(i).filter(|a| a.name.is_none()))
                    .ok_or_else(unsupported)
                    .and_then(|a| {
                        u32::try_from(self.const_int(&a.value)?).map_err(|_| unsupported())
                    })
            };
            return Ok(w::Directive::Layout {
                tensor,
                dim: arg(0)?,
                parts: arg(1)?,
            });
        }
        // `.task_window(n, mode)` alone takes a second argument.
        let (arg, mode) = match d.args.as_slice() {
            [arg] => (arg, None),
            [arg, mode] if kind == D::TaskWindow => (arg, Some(&mode.value)),
            _ => return Err(unsupported()),
        };
        let arg = &arg.value;
        let mode = match mode.map(|m| &m.kind) {
            None => wsp_vocab::schedule::WindowMode::Stall,
            Some(ExprKind::Name(n)) => {
                wsp_vocab::schedule::WindowMode::from_name(&n.name).ok_or_else(unsupported)?
            }
            Some(_) => return Err(unsupported()),
        };
        Ok(match kind.arg() {
            DirectiveArg::Policy => {
                let (name, args) = match &arg.kind {
                    ExprKind::Name(n) => (n, &[][..]),
                    ExprKind::Call {
                        callee,
                        coords: None,
                        args,
                    } => match &callee.kind {
                        ExprKind::Name(n) => (n, args.as_slice()),
                        _ => return Err(unsupported()),
                    },
                    _ => return Err(unsupported()),
                };
                let policy = Policy::from_name(&name.name)
                    .filter(|p| p.directive() == kind)
                    .ok_or_else(unsupported)?;
                w::Directive::Policy {
                    policy,
                    args: args
                        .iter()
                        .map(|a| self.dir_value(&a.value))
                        .collect::<R<_>>()?,
                }
            }
            DirectiveArg::Count => {
                let n = self.const_int(arg)?;
                match kind {
                    D::TaskWindow => w::Directive::TaskWindow { size: n, mode },
                    _ => w::Directive::Streams { count: n },
                }
            }
            // `.dispatch_by(e)` is `.dispatch(by(e))`.
            DirectiveArg::Key if kind == D::DispatchBy => w::Directive::Policy {
                policy: Policy::By,
                args: vec![self.dir_value(arg)?],
            },
            DirectiveArg::Key => w::Directive::StreamBy {
                key: self.dir_value(arg)?,
            },
            DirectiveArg::Pools | DirectiveArg::Grid | DirectiveArg::Shard => {
                return Err(unsupported())
            }
            DirectiveArg::Arch => match &arg.kind {
                ExprKind::Name(n) => w::Directive::Target {
                    arch: n.name.clone(),
                },
                ExprKind::Str(s) => w::Directive::Target { arch: s.clone() },
                _ => return Err(unsupported()),
            },
        })
    }

    fn schedule(&mut self, s: &ast::Schedule) -> R<()> {
        let Some(wid) = self.workloads.get(&s.workload.name).copied() else {
            return Err(self.unsupported(s.workload.span, "a schedule of an unknown workload"));
        };
        let mut directives = Vec::new();
        for d in &s.directives {
            directives.push(self.directive(d)?);
        }
        self.p.schedules.push(w::Schedule {
            name: s.name.name.clone(),
            workload: wid,
            directives,
        });
        Ok(())
    }

    fn expect(&mut self, e: &ast::Expect) -> R<()> {
        let x = &e.expr;
        let ex = match &x.kind {
            ExprKind::Call {
                callee,
                coords: None,
                args,
            } if is_name(callee, "close") => {
                let named = |n: &str| {
                    args.iter()
                        .find(|a| a.name.as_ref().is_some_and(|i| i.name == n))
                };
                let pos: Vec<&ast::Arg> = args.iter().filter(|a| a.name.is_none()).collect();
                let (Some(actual), Some(expected)) = (pos.first(), pos.get(1)) else {
                    return Err(self.unsupported(x.span, "this `close`"));
                };
                let actual = match &actual.value.kind {
                    ExprKind::Name(n) if self.tensors.contains_key(&n.name) => {
                        self.tensors[&n.name]
                    }
                    _ => return Err(self.unsupported(actual.span, "this `close` operand")),
                };
                let expected = match &expected.value.kind {
                    ExprKind::Name(n) if self.tensors.contains_key(&n.name) => {
                        w::ExpectData::Tensor {
                            tensor: self.tensors[&n.name],
                        }
                    }
                    _ => w::ExpectData::Init {
                        init: self.init(&expected.value)?,
                    },
                };
                let f = |n: &str| -> R<f64> {
                    match named(n) {
                        Some(a) => as_f64(self.scalar_const(&a.value)?)
                            .ok_or_else(|| self.unsupported(a.span, "this tolerance")),
                        None => Ok(0.0),
                    }
                };
                w::Expect::Close {
                    actual,
                    expected,
                    rtol: f("rtol")?,
                    atol: f("atol")?,
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let stat = match &lhs.kind {
                    ExprKind::Name(n) if n.name == "total_cycles" => w::Stat::TotalCycles,
                    ExprKind::Name(n) if n.name == "tasks" => w::Stat::Tasks,
                    _ => return Err(self.unsupported(lhs.span, "this expectation")),
                };
                let op = match op {
                    BinOp::Eq => k::CmpOp::Eq,
                    BinOp::Ne => k::CmpOp::Ne,
                    BinOp::Lt => k::CmpOp::Lt,
                    BinOp::Le => k::CmpOp::Le,
                    BinOp::Gt => k::CmpOp::Gt,
                    BinOp::Ge => k::CmpOp::Ge,
                    _ => return Err(self.unsupported(x.span, "this expectation")),
                };
                w::Expect::Stat {
                    stat,
                    op,
                    value: self.const_int(rhs)?,
                }
            }
            _ => return Err(self.unsupported(x.span, "this expectation")),
        };
        self.p.expects.push(ex);
        Ok(())
    }
}

/// A kernel-scope binding.
#[derive(Clone, Copy)]
enum KB {
    Param(k::ParamId),
    Value(k::ValueId),
    Var(k::VarId),
    Pipe(k::PipeId),
}

struct KLower<'a> {
    l: &'a Lowerer,
    k: k::Kernel,
    env: Vec<BTreeMap<String, KB>>,
}

impl KLower<'_> {
    fn lookup(&self, n: &str) -> Option<KB> {
        self.env.iter().rev().find_map(|s| s.get(n).copied())
    }

    fn emit(
        &mut self,
        out: &mut Vec<k::Stmt>,
        op: k::Op,
        span: Span,
        name: Option<String>,
    ) -> R<Vec<k::ValueId>> {
        let tys = wsp_ir::typing::result_types(&self.k, &op)
            .map_err(|m| self.l.unsupported(span, format!("this operation ({m})")))?;
        let mut ids = Vec::new();
        for ty in tys {
            ids.push(k::ValueId(self.k.values.len() as u32));
            self.k.values.push(k::ValueInfo {
                ty,
                name: name.clone(),
            });
        }
        out.push(k::Stmt::Op {
            results: ids.clone(),
            op,
        });
        Ok(ids)
    }

    fn one(&mut self, out: &mut Vec<k::Stmt>, op: k::Op, span: Span) -> R<k::ValueId> {
        let ids = self.emit(out, op, span, None)?;
        ids.first()
            .copied()
            .ok_or_else(|| self.l.unsupported(span, "this operation"))
    }

    fn block(&mut self, b: &ast::Block) -> R<Vec<k::Stmt>> {
        self.env.push(BTreeMap::new());
        let mut out = Vec::new();
        let r = b.stmts.iter().try_for_each(|s| self.stmt(s, &mut out));
        self.env.pop();
        r.map(|_| out)
    }

    fn stmt(&mut self, s: &ast::Stmt, out: &mut Vec<k::Stmt>) -> R<()> {
        match &s.kind {
            StmtKind::Let { names, value, .. } => {
                if let (
                    ExprKind::Call {
                        callee,
                        args,
                        coords: None,
                    },
                    [name],
                ) = (&value.kind, names.as_slice())
                {
                    if is_name(callee, "talloc") {
                        // `let slot = talloc(s)`: a variable of the pipe's element type.
                        let pipe = self.pipe_arg(args, value.span)?;
                        let elem = self.k.pipes[pipe.index()].elem;
                        let slot = k::VarId(self.k.vars.len() as u32);
                        self.k.vars.push(k::Var {
                            name: name.name.clone(),
                            ty: k::Type::Tile(elem),
                        });
                        out.push(k::Stmt::TAlloc { pipe, slot });
                        if let Some(sc) = self.env.last_mut() {
                            sc.insert(name.name.clone(), KB::Var(slot));
                        }
                        return Ok(());
                    }
                }
                let ids = match (&value.kind, names.len()) {
                    (_, 1) => vec![self.expr(value, out, None)?],
                    (
                        ExprKind::Call {
                            callee,
                            args,
                            coords: None,
                        },
                        2,
                    ) if is_name(callee, "rowtopk") && args.len() == 2 => {
                        let x = self.expr(&args[0].value, out, None)?;
                        let kk = self.l.const_int(&args[1].value)?;
                        let kk = u32::try_from(kk)
                            .map_err(|_| self.l.unsupported(args[1].span, "this `k`"))?;
                        self.emit(out, k::Op::RowTopK { x, k: kk }, value.span, None)?
                    }
                    _ => return Err(self.l.unsupported(s.span, "this `let`")),
                };
                for (n, id) in names.iter().zip(ids) {
                    if let Some(info) = self.k.values.get_mut(id.index()) {
                        info.name = Some(n.name.clone());
                    }
                    if let Some(sc) = self.env.last_mut() {
                        sc.insert(n.name.clone(), KB::Value(id));
                    }
                }
                Ok(())
            }
            StmtKind::Var { name, value, .. } => {
                let v = self.expr(value, out, None)?;
                let ty = self.k.values[v.index()].ty;
                let var = k::VarId(self.k.vars.len() as u32);
                self.k.vars.push(k::Var {
                    name: name.name.clone(),
                    ty,
                });
                out.push(k::Stmt::Assign {
                    var,
                    region: None,
                    value: v,
                });
                if let Some(sc) = self.env.last_mut() {
                    sc.insert(name.name.clone(), KB::Var(var));
                }
                Ok(())
            }
            StmtKind::Assign { target, op, value } => {
                let (name, region) = match &target.kind {
                    ExprKind::Name(n) => (n, None),
                    ExprKind::Index { base, indices } => match &base.kind {
                        ExprKind::Name(n) => (n, Some(self.region(indices, n, target.span)?)),
                        _ => return Err(self.l.unsupported(target.span, "this assignment target")),
                    },
                    _ => return Err(self.l.unsupported(target.span, "this assignment target")),
                };
                let mut v = self.expr(value, out, None)?;
                if let Some(op) = op {
                    let cur = self.expr(target, out, None)?;
                    v = self.one(
                        out,
                        k::Op::Binary {
                            op: bin_op(*op).ok_or_else(|| {
                                self.l.unsupported(s.span, "this compound assignment")
                            })?,
                            lhs: cur,
                            rhs: v,
                        },
                        s.span,
                    )?;
                }
                match self.lookup(&name.name) {
                    Some(KB::Param(param)) => out.push(k::Stmt::Store {
                        param,
                        region,
                        value: v,
                    }),
                    Some(KB::Var(var)) => out.push(k::Stmt::Assign {
                        var,
                        region,
                        value: v,
                    }),
                    _ => return Err(self.l.unsupported(target.span, "this assignment target")),
                }
                Ok(())
            }
            StmtKind::For { vars, iter, body } => {
                let ExprKind::Range {
                    start,
                    end: Some(end),
                } = &iter.kind
                else {
                    return Err(self.l.unsupported(iter.span, "this kernel loop"));
                };
                if vars.len() != 1 {
                    return Err(self.l.unsupported(iter.span, "this kernel loop"));
                }
                let start = match start {
                    Some(s) => self.l.const_int(s)?,
                    None => 0,
                };
                let end = self.l.const_int(end)?;
                let index = k::ValueId(self.k.values.len() as u32);
                self.k.values.push(k::ValueInfo {
                    ty: k::Type::scalar(DType::I64),
                    name: Some(vars[0].name.clone()),
                });
                self.env
                    .push(BTreeMap::from([(vars[0].name.clone(), KB::Value(index))]));
                let b = self.block(body);
                self.env.pop();
                out.push(k::Stmt::For {
                    index,
                    start,
                    end,
                    body: b?,
                });
                Ok(())
            }
            StmtKind::Expr(ast::Expr {
                kind:
                    ExprKind::Call {
                        callee,
                        args,
                        coords: None,
                    },
                span,
                ..
            }) if is_name(callee, "tpush") || is_name(callee, "tfree") => {
                let pipe = self.pipe_arg(args, *span)?;
                let second = args
                    .iter()
                    .filter(|a| a.name.is_none())
                    .nth(1)
                    .map(|a| &a.value)
                    .ok_or_else(|| self.l.unsupported(*span, "this pipe call"))?;
                if is_name(callee, "tpush") {
                    let slot = match &second.kind {
                        ExprKind::Name(n) => match self.lookup(&n.name) {
                            Some(KB::Var(v)) => v,
                            _ => return Err(self.l.unsupported(second.span, "this pipe slot")),
                        },
                        _ => return Err(self.l.unsupported(second.span, "this pipe slot")),
                    };
                    out.push(k::Stmt::TPush { pipe, slot });
                } else {
                    let value = self.expr(second, out, None)?;
                    out.push(k::Stmt::TFree { pipe, value });
                }
                Ok(())
            }
            StmtKind::Expr(e) => {
                self.expr(e, out, None)?;
                Ok(())
            }
            StmtKind::Pipe { name, elem, args } => {
                let dt = dtype(&elem.dtype)
                    .ok_or_else(|| self.l.unsupported(elem.span, "this dtype"))?;
                let dims = elem.dims.clone().unwrap_or_default();
                let mut sz = Vec::new();
                for d in &dims {
                    let n = self.l.const_int(&d.size)?;
                    sz.push(
                        u32::try_from(n)
                            .ok()
                            .filter(|n| *n > 0)
                            .ok_or_else(|| self.l.unsupported(d.span, "this tile size"))?,
                    );
                }
                let shape = match sz.as_slice() {
                    [r, c] => [*r, *c],
                    [c] => [1, *c],
                    _ => return Err(self.l.unsupported(elem.span, "this pipe element type")),
                };
                let slots = match args
                    .iter()
                    .find(|a| a.name.as_ref().is_some_and(|n| n.name == "slots"))
                {
                    Some(a) => u32::try_from(self.l.const_int(&a.value)?)
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| self.l.unsupported(a.span, "this slot count"))?,
                    None => 1,
                };
                let id = k::PipeId(self.k.pipes.len() as u32);
                self.k.pipes.push(k::Pipe {
                    name: name.name.clone(),
                    elem: k::TileType::new(dt, shape[0], shape[1]),
                    slots,
                });
                if let Some(sc) = self.env.last_mut() {
                    sc.insert(name.name.clone(), KB::Pipe(id));
                }
                Ok(())
            }
            StmtKind::Section { kind, body, .. } => {
                let body = self.block(body)?;
                out.push(k::Stmt::Section {
                    kind: match kind {
                        ast::SectionKind::Cube => k::SectionKind::Cube,
                        ast::SectionKind::Vector => k::SectionKind::Vector,
                    },
                    body,
                });
                Ok(())
            }
            _ => Err(self.l.unsupported(s.span, "this kernel statement")),
        }
    }

    /// The pipe named by a pipe call's first positional argument.
    fn pipe_arg(&self, args: &[ast::Arg], span: Span) -> R<k::PipeId> {
        match args
            .iter()
            .find(|a| a.name.is_none())
            .map(|a| &a.value.kind)
        {
            Some(ExprKind::Name(n)) => match self.lookup(&n.name) {
                Some(KB::Pipe(p)) => Ok(p),
                _ => Err(self.l.unsupported(span, format!("`{}` as a pipe", n.name))),
            },
            _ => Err(self.l.unsupported(span, "this pipe call")),
        }
    }

    fn kindex(&self, e: &ast::Expr) -> R<k::KIndex> {
        if let Ok(c) = self.l.const_int(e) {
            return Ok(k::KIndex::constant(c));
        }
        match &e.kind {
            ExprKind::Name(n) => match self.lookup(&n.name) {
                Some(KB::Value(v)) => Ok(k::KIndex {
                    constant: 0,
                    terms: vec![(v, 1)],
                }),
                _ => Err(self.l.unsupported(e.span, "this index")),
            },
            ExprKind::Binary { op, lhs, rhs } => {
                let (a, b) = (self.kindex(lhs)?, self.kindex(rhs)?);
                let comb = |a: k::KIndex, b: k::KIndex, s: i64| {
                    let mut t = a.terms;
                    t.extend(b.terms.into_iter().map(|(v, c)| (v, c * s)));
                    k::KIndex {
                        constant: a.constant + s * b.constant,
                        terms: t,
                    }
                };
                let sc = |a: k::KIndex, s: i64| k::KIndex {
                    constant: a.constant * s,
                    terms: a.terms.into_iter().map(|(v, c)| (v, c * s)).collect(),
                };
                match op {
                    BinOp::Add => Ok(comb(a, b, 1)),
                    BinOp::Sub => Ok(comb(a, b, -1)),
                    BinOp::Mul if a.terms.is_empty() => Ok(sc(b, a.constant)),
                    BinOp::Mul if b.terms.is_empty() => Ok(sc(a, b.constant)),
                    _ => Err(self.l.unsupported(e.span, "a non-affine index")),
                }
            }
            _ => Err(self.l.unsupported(e.span, "this index")),
        }
    }

    /// The shape of the thing named `n` (param, value or var).
    fn shape_of(&self, n: &ast::Ident) -> Option<[u32; 2]> {
        let ty = match self.lookup(&n.name)? {
            KB::Param(p) => match &self.k.params.get(p.index())?.kind {
                k::ParamKind::Tile { tile, .. } => return Some(tile.shape),
                k::ParamKind::Scalar { .. } => return None,
            },
            KB::Value(v) => self.k.values.get(v.index())?.ty,
            KB::Var(v) => self.k.vars.get(v.index())?.ty,
            KB::Pipe(_) => return None,
        };
        ty.tile().map(|t| t.shape)
    }

    fn region(&self, indices: &[ast::Expr], n: &ast::Ident, span: Span) -> R<k::Region> {
        let Some(shape) = self.shape_of(n) else {
            return Err(self.l.unsupported(span, "a sub-range of a scalar"));
        };
        let dim = |e: Option<&ast::Expr>, full: u32| -> R<(k::KIndex, u32)> {
            match e.map(|e| &e.kind) {
                None | Some(ExprKind::FullSlice) => Ok((k::KIndex::constant(0), full)),
                Some(ExprKind::Range { start, end }) => {
                    let s = match start {
                        Some(s) => self.kindex(s)?,
                        None => k::KIndex::constant(0),
                    };
                    let len = match end {
                        Some(en) => {
                            let en = self.kindex(en)?;
                            // The extent must be static: end − start has no terms.
                            let mut d = en.constant - s.constant;
                            let mut rest: BTreeMap<u32, i64> = BTreeMap::new();
                            for (v, c) in &en.terms {
                                *rest.entry(v.0).or_default() += c;
                            }
                            for (v, c) in &s.terms {
                                *rest.entry(v.0).or_default() -= c;
                            }
                            if rest.values().any(|c| *c != 0) {
                                return Err(self
                                    .l
                                    .unsupported(span, "a sub-range of dynamic extent"));
                            }
                            if d < 0 {
                                d = 0;
                            }
                            d
                        }
                        None if s.terms.is_empty() => i64::from(full) - s.constant,
                        None => {
                            return Err(self.l.unsupported(span, "a sub-range of dynamic extent"))
                        }
                    };
                    Ok((
                        s,
                        u32::try_from(len)
                            .map_err(|_| self.l.unsupported(span, "this sub-range"))?,
                    ))
                }
                Some(_) => Ok((self.kindex(e.unwrap_or(&indices[0]))?, 1)),
            }
        };
        let (rows, cols) = match indices.len() {
            1 if shape[0] == 1 => ((k::KIndex::constant(0), 1), dim(indices.first(), shape[1])?),
            1 | 2 => (
                dim(indices.first(), shape[0])?,
                dim(indices.get(1), shape[1])?,
            ),
            _ => return Err(self.l.unsupported(span, "this sub-range")),
        };
        Ok(k::Region {
            row_start: rows.0,
            rows: rows.1,
            col_start: cols.0,
            cols: cols.1,
        })
    }

    fn scalar_of(
        &mut self,
        out: &mut Vec<k::Stmt>,
        v: ScalarValue,
        dt: DType,
        span: Span,
    ) -> R<k::ValueId> {
        self.one(
            out,
            k::Op::Const {
                value: v,
                dtype: dt,
            },
            span,
        )
    }

    /// Lowers an expression; `hint` is the dtype a bare literal takes.
    fn expr(
        &mut self,
        e: &ast::Expr,
        out: &mut Vec<k::Stmt>,
        hint: Option<DType>,
    ) -> R<k::ValueId> {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => {
                let v = self.l.scalar_const(e)?;
                let dt = hint.unwrap_or(match v {
                    ScalarValue::Float(_) => DType::F32,
                    ScalarValue::Bool(_) => DType::Bool,
                    _ => DType::I32,
                });
                self.scalar_of(out, v, dt, e.span)
            }
            ExprKind::Name(n) => match self.lookup(&n.name) {
                Some(KB::Param(param)) => self.one(out, k::Op::Param { param }, e.span),
                Some(KB::Value(v)) => Ok(v),
                Some(KB::Var(var)) => self.one(out, k::Op::VarRead { var }, e.span),
                Some(KB::Pipe(_)) => Err(self
                    .l
                    .unsupported(e.span, format!("the pipe `{}` as a value", n.name))),
                None => match self.l.consts.get(&n.name) {
                    Some(v) => {
                        let dt = hint.unwrap_or(match v {
                            ScalarValue::Float(_) => DType::F32,
                            _ => DType::I32,
                        });
                        self.scalar_of(out, *v, dt, e.span)
                    }
                    None => Err(self
                        .l
                        .unsupported(e.span, format!("`{}` in a kernel", n.name))),
                },
            },
            ExprKind::Unary { op, expr } => {
                let x = self.expr(expr, out, hint)?;
                let op = match op {
                    UnOp::Neg => k::UnaryOp::Neg,
                    UnOp::Not => k::UnaryOp::Not,
                };
                self.one(out, k::Op::Unary { op, x }, e.span)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let lhs_lit = is_literal(lhs);
                let (a, b) = if lhs_lit {
                    let b = self.expr(rhs, out, hint)?;
                    let dt = self.k.values[b.index()].ty.dtype();
                    (self.expr(lhs, out, Some(dt))?, b)
                } else {
                    let a = self.expr(lhs, out, hint)?;
                    let dt = self.k.values[a.index()].ty.dtype();
                    (a, self.expr(rhs, out, Some(dt))?)
                };
                let op = match (cmp_op(*op), bin_op(*op)) {
                    (Some(c), _) => k::Op::Cmp {
                        op: c,
                        lhs: a,
                        rhs: b,
                    },
                    (None, Some(o)) => k::Op::Binary {
                        op: o,
                        lhs: a,
                        rhs: b,
                    },
                    _ => return Err(self.l.unsupported(e.span, "this operator")),
                };
                self.one(out, op, e.span)
            }
            ExprKind::Index { base, indices } => {
                let ExprKind::Name(n) = &base.kind else {
                    return Err(self.l.unsupported(e.span, "this sub-range"));
                };
                let region = self.region(indices, n, e.span)?;
                let x = self.expr(base, out, hint)?;
                self.one(out, k::Op::Slice { x, region }, e.span)
            }
            ExprKind::Call {
                callee,
                coords: None,
                args,
            } => {
                let ExprKind::Name(f) = &callee.kind else {
                    return Err(self.l.unsupported(e.span, "this call"));
                };
                self.call(&f.name, args, e.span, out, hint)
            }
            _ => Err(self.l.unsupported(e.span, "this kernel expression")),
        }
    }

    fn call(
        &mut self,
        f: &str,
        args: &[ast::Arg],
        span: Span,
        out: &mut Vec<k::Stmt>,
        hint: Option<DType>,
    ) -> R<k::ValueId> {
        let pos: Vec<&ast::Arg> = args.iter().filter(|a| a.name.is_none()).collect();
        let named = |n: &str| {
            args.iter()
                .find(|a| a.name.as_ref().is_some_and(|i| i.name == n))
        };
        let callee = KernelFn::from_name(f);
        let (unary, reduce, binary) = match callee {
            Some(KernelFn::Unary(op)) => (Some(op), None, None),
            Some(KernelFn::Reduce(op)) => (None, Some(op), None),
            Some(KernelFn::Binary(op)) => (None, None, Some(op)),
            _ => (None, None, None),
        };
        let arg = |i: usize| pos.get(i).map(|a| &a.value).ok_or(());
        let bad = |s: &Self| s.l.unsupported(span, format!("this call of `{f}`"));
        if let Some(op) = unary {
            let x = self.expr(arg(0).map_err(|_| bad(self))?, out, hint)?;
            return self.one(out, k::Op::Unary { op, x }, span);
        }
        if let Some(op) = reduce {
            let x = self.expr(arg(0).map_err(|_| bad(self))?, out, hint)?;
            return self.one(out, k::Op::Reduce { op, x }, span);
        }
        if let Some(op) = binary {
            let a = self.expr(arg(0).map_err(|_| bad(self))?, out, hint)?;
            let dt = self.k.values[a.index()].ty.dtype();
            let b = self.expr(arg(1).map_err(|_| bad(self))?, out, Some(dt))?;
            return self.one(out, k::Op::Binary { op, lhs: a, rhs: b }, span);
        }
        match (callee, f) {
            (Some(KernelFn::TPop), _) => {
                let pipe = self.pipe_arg(args, span)?;
                self.one(out, k::Op::TPop { pipe }, span)
            }
            (Some(KernelFn::Matmul), _) => {
                let a = self.expr(arg(0).map_err(|_| bad(self))?, out, None)?;
                let b = self.expr(arg(1).map_err(|_| bad(self))?, out, None)?;
                let acc = match named("acc")
                    .map(|a| &a.value)
                    .or(pos.get(2).map(|a| &a.value))
                {
                    Some(c) => Some(self.expr(c, out, None)?),
                    None => None,
                };
                self.one(out, k::Op::Matmul { a, b, acc }, span)
            }
            (Some(KernelFn::Transpose), _) => {
                let x = self.expr(arg(0).map_err(|_| bad(self))?, out, hint)?;
                self.one(out, k::Op::Transpose { x }, span)
            }
            (Some(KernelFn::Select), _) => {
                let c = self.expr(arg(0).map_err(|_| bad(self))?, out, None)?;
                let t = self.expr(arg(1).map_err(|_| bad(self))?, out, hint)?;
                let dt = self.k.values[t.index()].ty.dtype();
                let fl = self.expr(arg(2).map_err(|_| bad(self))?, out, Some(dt))?;
                self.one(
                    out,
                    k::Op::Select {
                        cond: c,
                        on_true: t,
                        on_false: fl,
                    },
                    span,
                )
            }
            (Some(KernelFn::Cast), _) => {
                let x = self.expr(arg(0).map_err(|_| bad(self))?, out, None)?;
                let dt = match arg(1).map(|a| &a.kind) {
                    Ok(ExprKind::Name(n)) => DType::from_name(&n.name),
                    _ => None,
                };
                let dt = dt.ok_or_else(|| bad(self))?;
                self.one(out, k::Op::Cast { x, dtype: dt }, span)
            }
            (Some(KernelFn::Full | KernelFn::Iota), _) | (None, "zeros" | "ones") => {
                let shape = match arg(0).map(|a| &a.kind) {
                    Ok(ExprKind::List(xs)) if xs.len() == 2 => {
                        let r = self.l.const_int(&xs[0])?;
                        let c = self.l.const_int(&xs[1])?;
                        match (u32::try_from(r), u32::try_from(c)) {
                            (Ok(r), Ok(c)) => [r, c],
                            _ => return Err(bad(self)),
                        }
                    }
                    _ => return Err(bad(self)),
                };
                let dt = match named("dtype").map(|a| &a.value.kind) {
                    Some(ExprKind::Name(n)) => {
                        DType::from_name(&n.name).ok_or_else(|| bad(self))?
                    }
                    Some(_) => return Err(bad(self)),
                    None => hint.unwrap_or(if f == "iota" { DType::I32 } else { DType::F32 }),
                };
                if f == "iota" {
                    return self.one(out, k::Op::Iota { shape, dtype: dt }, span);
                }
                let value = match f {
                    "zeros" => self.scalar_of(out, ScalarValue::Float(0.0), dt, span)?,
                    "ones" => self.scalar_of(out, ScalarValue::Float(1.0), dt, span)?,
                    _ => self.expr(arg(1).map_err(|_| bad(self))?, out, Some(dt))?,
                };
                self.one(
                    out,
                    k::Op::Full {
                        shape,
                        dtype: dt,
                        value,
                    },
                    span,
                )
            }
            _ => Err(self
                .l
                .unsupported(span, format!("a call of `{f}` in a kernel"))),
        }
    }
}

fn is_literal(e: &ast::Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_)
    ) || matches!(&e.kind, ExprKind::Unary { op: UnOp::Neg, expr } if is_literal(expr))
}

fn is_name(e: &ast::Expr, n: &str) -> bool {
    matches!(&e.kind, ExprKind::Name(i) if i.name == n)
}

fn as_f64(v: ScalarValue) -> Option<f64> {
    match v {
        ScalarValue::Float(f) => Some(f),
        ScalarValue::Int(i) => Some(i as f64),
        ScalarValue::UInt(u) => Some(u as f64),
        ScalarValue::Bool(_) => None,
    }
}

/// `a + s·b` (a symbol's terms merged, as the checker folds them), or `None` when a
/// coefficient leaves the 64-bit range.
fn add(a: w::Affine, b: w::Affine, s: i64) -> Option<w::Affine> {
    let mut terms = a.terms;
    for (v, c) in b.terms {
        let c = c.checked_mul(s)?;
        match terms.iter_mut().find(|(u, _)| *u == v) {
            Some((_, t)) => *t = t.checked_add(c)?,
            None => terms.push((v, c)),
        }
    }
    Some(w::Affine {
        constant: a.constant.checked_add(s.checked_mul(b.constant)?)?,
        terms,
    })
}

/// `s·a`, or `None` when a coefficient leaves the 64-bit range.
fn scale(a: w::Affine, s: i64) -> Option<w::Affine> {
    let mut terms = Vec::with_capacity(a.terms.len());
    for (v, c) in a.terms {
        terms.push((v, c.checked_mul(s)?));
    }
    Some(w::Affine {
        constant: a.constant.checked_mul(s)?,
        terms,
    })
}

fn expr_op(op: BinOp) -> w::ExprOp {
    match op {
        BinOp::Add => w::ExprOp::Add,
        BinOp::Sub => w::ExprOp::Sub,
        BinOp::Mul => w::ExprOp::Mul,
        BinOp::Div => w::ExprOp::Div,
        BinOp::Rem => w::ExprOp::Rem,
        BinOp::Eq => w::ExprOp::Eq,
        BinOp::Ne => w::ExprOp::Ne,
        BinOp::Lt => w::ExprOp::Lt,
        BinOp::Le => w::ExprOp::Le,
        BinOp::Gt => w::ExprOp::Gt,
        BinOp::Ge => w::ExprOp::Ge,
        BinOp::And => w::ExprOp::And,
        BinOp::Or => w::ExprOp::Or,
    }
}

fn bin_op(op: BinOp) -> Option<k::BinaryOp> {
    Some(match op {
        BinOp::Add => k::BinaryOp::Add,
        BinOp::Sub => k::BinaryOp::Sub,
        BinOp::Mul => k::BinaryOp::Mul,
        BinOp::Div => k::BinaryOp::Div,
        BinOp::Rem => k::BinaryOp::Rem,
        BinOp::And => k::BinaryOp::And,
        BinOp::Or => k::BinaryOp::Or,
        _ => return None,
    })
}

fn cmp_op(op: BinOp) -> Option<k::CmpOp> {
    Some(match op {
        BinOp::Eq => k::CmpOp::Eq,
        BinOp::Ne => k::CmpOp::Ne,
        BinOp::Lt => k::CmpOp::Lt,
        BinOp::Le => k::CmpOp::Le,
        BinOp::Gt => k::CmpOp::Gt,
        BinOp::Ge => k::CmpOp::Ge,
        _ => return None,
    })
}
