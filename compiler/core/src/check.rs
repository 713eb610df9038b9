//! Per-item checks (names, calls against kernel signatures, channel use, schedules, dtypes, axes,
//! tile directions) and file-level checks (duplicates, imports).
//!
//! [`check_item`] depends only on the item's own AST and on the file's [`scope`] (signatures), and
//! its diagnostics have item-relative spans, so it is not re-run when another item changes.

use std::collections::{BTreeMap, BTreeSet};

use wsp_diagnostics::{Diagnostic, Edit, FileName, Fix, Label, Tag};
use wsp_syntax::ast::*;
use wsp_syntax::Span;

use crate::db::{item_ast, parse_file, Db, File, ItemId, Symbol};
use crate::resolve::{imports_of, scope, ImportTarget, Scoped};

use wsp_vocab::codes;

mod axes;
mod exprs;
mod file_level;
mod kernels;
mod locals;
mod schedules;
mod shapes;
mod stmts;
mod workloads;
use axes::axis;
pub use file_level::{add_import_fixes, check_file_level, import_module_name};
use kernels::kernel;
pub use schedules::{directive_help, MAX_STREAMS, MAX_TASK_WINDOW};
use schedules::{key_axes, schedule};
pub use workloads::MAX_PROCESSES;
use workloads::{channel_arg, combine_races, composition};
use wsp_vocab::ops::KERNEL_FN_NAMES;
use wsp_vocab::schedule::{
    Directive as DirectiveKind, DirectiveArg, Policy, PolicyArg, WindowMode, DIRECTIVE_NAMES,
    GRID_NAMES, POLICY_NAMES, POOL_NAMES, SHARD, SHARD_NAMES, WINDOW_MODE_NAMES,
};
pub use wsp_vocab::words::{
    axis_ctor_signature, AXIS_CTORS, DTYPES, EXPECT_BUILTINS, INITIALISERS, LOCAL_TENSOR,
    WORKLOAD_BUILTINS,
};

/// Architecture models a schedule may target.
pub const TARGETS: &[&str] = &["ascend910b", "ascend950", "aie_ml", "pto_wsp_v9", "cpu_sim"];

/// The closest candidate within a small edit distance (Levenshtein, over characters): one
/// edit per three characters, at least one — except for a one-character name, which any other
/// one-character name is one edit from (`A` is no misspelling of `P`).
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let n = name.chars().count();
    let limit = if n <= 1 { 0 } else { (n / 3).max(1) };
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(name, c), c))
        .filter(|(d, c)| *d <= limit && *c != name)
        .min()
        .map(|(_, c)| c)
}

/// What a local name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Local {
    Value,
    Tile(Direction),
    Pipe,
    /// A local tensor (`let H: f32[64, 128] = scratch()`) of a workload block.
    Tensor,
}

struct Checker<'a> {
    file: FileName,
    scope: &'a BTreeMap<String, Scoped>,
    consts: &'a BTreeMap<String, i64>,
    locals: Vec<BTreeMap<String, Local>>,
    diags: Vec<Diagnostic>,
    /// Extra builtin names allowed in the current context.
    builtins: &'static [&'static [&'static str]],
    /// Channels a process declares.
    produces: BTreeSet<String>,
    consumes: BTreeSet<String>,
    in_process: bool,
    /// Where a quick fix inserts a channel into the process header: after the last
    /// `produces`/`consumes` name (`, c`), else at the header's end (` produces c`).
    produces_end: Option<u32>,
    consumes_end: Option<u32>,
    header_end: u32,
    /// The file's own scope, without the workload's local tensors (`scope` has them).
    globals: &'a BTreeMap<String, Scoped>,
    /// The names of the workload's local tensors.
    local_tensors: BTreeSet<String>,
    /// The local tensors made so far.
    made_locals: BTreeSet<String>,
}

const KERNEL_CTX: &[&[&str]] = &[&KERNEL_FN_NAMES, DTYPES];
const WORKLOAD_CTX: &[&[&str]] = &[WORKLOAD_BUILTINS];
const GLOBAL_CTX: &[&[&str]] = &[INITIALISERS, DTYPES];
const EXPECT_CTX: &[&[&str]] = &[EXPECT_BUILTINS];

impl<'a> Checker<'a> {
    fn new(
        file: FileName,
        scope: &'a BTreeMap<String, Scoped>,
        consts: &'a BTreeMap<String, i64>,
    ) -> Self {
        Checker {
            file,
            scope,
            consts,
            locals: vec![BTreeMap::new()],
            diags: Vec::new(),
            builtins: &[],
            produces: BTreeSet::new(),
            consumes: BTreeSet::new(),
            in_process: false,
            produces_end: None,
            consumes_end: None,
            header_end: 0,
            globals: scope,
            local_tensors: BTreeSet::new(),
            made_locals: BTreeSet::new(),
        }
    }

    fn label(&self, span: Span, msg: impl Into<String>) -> Label {
        Label::new(self.file.clone(), span, msg)
    }

    fn local(&self, name: &str) -> Option<Local> {
        self.locals.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn bind(&mut self, name: &str, l: Local) {
        if let Some(s) = self.locals.last_mut() {
            s.insert(name.to_string(), l);
        }
    }

    fn is_builtin(&self, name: &str) -> bool {
        self.builtins.iter().any(|set| set.contains(&name))
    }

    fn candidates(&self) -> Vec<&str> {
        let mut c: Vec<&str> = self.scope.keys().map(String::as_str).collect();
        for s in &self.locals {
            c.extend(s.keys().map(String::as_str));
        }
        for set in self.builtins {
            c.extend(set.iter().copied());
        }
        c
    }

    fn unresolved(&mut self, id: &Ident) {
        let cands = self.candidates();
        let sugg = suggest(&id.name, cands.iter().copied()).map(str::to_string);
        let mut d = Diagnostic::new(
            codes::E0101,
            format!("cannot find `{}` in this scope", id.name),
            self.label(id.span, "not found"),
        );
        match sugg {
            Some(s) => {
                d = d
                    .with_help(format!("a name with a similar spelling exists: `{s}`"))
                    .with_fix(Fix {
                        title: format!("change to `{s}`"),
                        edits: vec![Edit {
                            file: self.file.clone(),
                            span: id.span,
                            replacement: s,
                        }],
                    });
            }
            None => {
                d = d.with_help(
                    "define it (`const`, `param`, `axis`, `input`, `kernel`, ...) or import it \
                     (`import std.nn.{name}`)",
                );
            }
        }
        self.diags.push(d);
    }

    /// "`name` is a constant, not a kernel": a name resolved to the wrong kind of item.
    #[allow(clippy::too_many_arguments)]
    fn wrong_kind(
        &mut self,
        code: &'static str,
        name: &str,
        found: &Symbol,
        expected: &str,
        span: Span,
        label: impl Into<String>,
        help: impl Into<String>,
    ) {
        let what = found.describe();
        self.diags.push(
            Diagnostic::new(
                code,
                format!("`{name}` is {what}, not {expected}"),
                self.label(span, label),
            )
            .with_help(help),
        );
    }

    fn check_name(&mut self, id: &Ident) {
        if self.is_local_tensor(&id.name) {
            // A local tensor named anywhere but as a task argument's view.
            self.local_tensor_use(id, false);
            return;
        }
        if self.local(&id.name).is_some()
            || self.scope.contains_key(&id.name)
            || self.is_builtin(&id.name)
        {
            return;
        }
        self.unresolved(id);
    }

    fn dtype(&mut self, ty: &TypeExpr) {
        if !DTYPES.contains(&ty.dtype.name.as_str()) {
            let sugg = suggest(&ty.dtype.name, DTYPES.iter().copied());
            let mut d = Diagnostic::new(
                codes::E0201,
                format!("unknown dtype `{}`", ty.dtype.name),
                self.label(ty.dtype.span, "not a dtype"),
            )
            .with_note(format!("the dtypes are {}", DTYPES.join(" ")));
            if let Some(s) = sugg {
                d = d.with_help(format!("did you mean `{s}`?")).with_fix(Fix {
                    title: format!("change to `{s}`"),
                    edits: vec![Edit {
                        file: self.file.clone(),
                        span: ty.dtype.span,
                        replacement: s.to_string(),
                    }],
                });
            }
            self.diags.push(d);
        }
        for dim in ty.dims.iter().flatten() {
            self.expr(&dim.size);
        }
    }
}

/// Diagnostics of one item, with spans relative to the item's start.
/// Types and flow of one kernel: tile shapes and dtypes through every operation
/// (`types::check_kernel`), then reads before writes and the pipe protocol (`flow`).
#[salsa::tracked(returns(ref))]
pub fn kernel_types<'db>(db: &'db dyn Db, item: ItemId<'db>) -> Vec<Diagnostic> {
    let ItemKind::Kernel(k) = &item_ast(db, item).kind else {
        return Vec::new();
    };
    let file = item.file(db);
    let fname = FileName::new(file.path(db).as_str());
    let consts = crate::db::const_values(db, file);
    let narrowing = db.file_set().lints(db).iter().any(|l| l == "narrowing");
    let mut out = crate::types::check_kernel_linted(&fname, k, consts, narrowing);
    // Flow checks need the whole body; a recovered syntax error may have swallowed a write.
    let damaged = matches!(&k.body, KernelBody::Block(b) if crate::flow::has_error_nodes(b));
    if !damaged {
        out.extend(crate::flow::check_kernel_flow(&fname, k, consts));
    }
    out
}

/// The body of a workload written as a block (the one kind of body with local tensors).
fn workload_block(kind: &ItemKind) -> Option<&Block> {
    match kind {
        ItemKind::Workload(Workload {
            body: WorkloadBody::Block(b),
            ..
        }) => Some(b),
        _ => None,
    }
}

/// The body of a workload block or a process.
fn item_body(kind: &ItemKind) -> Option<&Block> {
    match kind {
        ItemKind::Process(p) => Some(&p.body),
        _ => workload_block(kind),
    }
}

/// The file's scope with the local tensors of an item's body (`crate::locals`), once per item
/// for the checks and the race analysis; `None` when the body makes none.
#[salsa::tracked(returns(ref))]
fn body_scope<'db>(db: &'db dyn Db, item: ItemId<'db>) -> Option<BTreeMap<String, Scoped>> {
    let body = item_body(&item_ast(db, item).kind)?;
    let file = item.file(db);
    crate::locals::scope_with_locals(scope(db, file), body, crate::db::const_values(db, file))
}

/// Races between iterations of `P` loops and view bounds in one workload or process body.
#[salsa::tracked(returns(ref))]
pub fn item_races<'db>(db: &'db dyn Db, item: ItemId<'db>) -> Vec<Diagnostic> {
    let Some(body) = item_body(&item_ast(db, item).kind) else {
        return Vec::new();
    };
    let file = item.file(db);
    let fname = FileName::new(file.path(db).as_str());
    crate::races::check_block(
        &fname,
        body,
        body_scope(db, item).as_ref().unwrap_or(scope(db, file)),
        crate::db::const_values(db, file),
        crate::races::axis_sizes(db, file),
    )
}

#[salsa::tracked(returns(ref))]
pub fn check_item<'db>(db: &'db dyn Db, item: ItemId<'db>) -> Vec<Diagnostic> {
    let ast = item_ast(db, item);
    let file = item.file(db);
    let globals = scope(db, file);
    let consts = crate::db::const_values(db, file);
    // Local tensors are tensors of a workload block's scope (a process's are E0413).
    let with_locals = workload_block(&ast.kind).and_then(|_| body_scope(db, item).as_ref());
    let scope = with_locals.unwrap_or(globals);
    let mut c = Checker::new(FileName::new(file.path(db).as_str()), scope, consts);
    c.globals = globals;
    if let Some(b) = workload_block(&ast.kind) {
        c.local_tensors = crate::locals::local_tensors(b)
            .into_iter()
            .map(|(n, _)| n.name.clone())
            .filter(|n| !globals.contains_key(n))
            .collect();
    }
    match &ast.kind {
        ItemKind::Const(d) => {
            c.builtins = &[];
            if let Some(t) = &d.ty {
                c.dtype(t);
            }
            c.expr(&d.value);
            // An integer literal past the 64-bit signed range (`-9223372036854775808` is the
            // smallest value, the negation of one) has no value as an untyped or signed
            // constant; a `u64` constant may hold it.
            let signed = d.ty.as_ref().is_none_or(|t| !t.dtype.name.starts_with('u'));
            if let (true, ExprKind::Int(v)) = (signed, &d.value.kind) {
                if i64::try_from(*v).is_err() {
                    c.diags.push(
                        Diagnostic::new(
                            codes::E0213,
                            format!(
                                "constant `{}` is outside the 64-bit integer range",
                                d.name.name
                            ),
                            c.label(d.value.span, "larger than 9223372036854775807"),
                        )
                        .with_help(
                            "integer constants are 64-bit signed integers; write a smaller value, \
                             or give the constant a `u64` type",
                        ),
                    );
                }
            }
            if let Some(via) = crate::cycles::const_cycles(db, file).get(&d.name.name) {
                let path = via.join(" → ");
                c.diags.push(
                    Diagnostic::new(
                        codes::E0213,
                        format!(
                            "constant `{}` has no value: it depends on itself",
                            d.name.name
                        ),
                        c.label(d.value.span, format!("{} → {path}", d.name.name)),
                    )
                    .with_help(
                        "a constant is folded from literals and earlier constants; break the cycle",
                    ),
                );
            }
        }
        ItemKind::Param(d) => {
            c.dtype(&d.ty);
            if let Some(v) = &d.default {
                c.expr(v);
            }
        }
        ItemKind::Axis(d) => axis(&mut c, d, crate::races::axis_sizes(db, file)),
        ItemKind::Tensor(d) => {
            c.builtins = GLOBAL_CTX;
            c.dtype(&d.ty);
            c.tensor_dims(d);
            if d.ty.dims.is_none() {
                c.diags.push(
                    Diagnostic::new(
                        codes::E0202,
                        format!("tensor `{}` needs a shape", d.name.name),
                        c.label(d.ty.span, "scalar type"),
                    )
                    .with_help(format!("write a shape: `{}[N, 64]`", d.ty.dtype.name)),
                );
            }
            if let Some(init) = &d.init {
                if d.kind == TensorKind::Output {
                    c.diags.push(
                        Diagnostic::new(
                            codes::E0203,
                            format!("output `{}` cannot have an initialiser", d.name.name),
                            c.label(init.span, "initialiser"),
                        )
                        .with_help("outputs are written by the workload; use `tensor` for an initialised scratch tensor"),
                    );
                }
                c.expr(init);
            }
        }
        ItemKind::Kernel(k) => {
            kernel(&mut c, k);
            c.diags.extend(kernel_types(db, item).iter().cloned());
            // A std kernel's tiles are checked where it is imported, against the importing
            // file's target (`ImportedKernels::memory`), not here: a std module holds kernels
            // of several sizes and dtypes, and one that does not fit a target (or a `--set`
            // tile size) must not stop a program that does not import it.
            if c.diags.is_empty() && !crate::resolve::is_std(file.path(db)) {
                if let Some(fp) = crate::memory::kernel_footprint(db, item) {
                    let more = crate::memory::memory_diagnostics(&c.file, &k.name.name, fp);
                    c.diags.extend(more);
                }
            }
        }
        ItemKind::Workload(w) => {
            c.builtins = WORKLOAD_CTX;
            let sizes = crate::races::axis_sizes(db, file);
            match &w.body {
                WorkloadBody::Block(b) => {
                    c.block(b);
                    c.diags.extend(item_races(db, item).iter().cloned());
                }
                WorkloadBody::Expr(e) => {
                    composition(&mut c, e);
                    let more = combine_races(db, file, &c.file, e, scope, consts, sizes);
                    c.diags.extend(more);
                }
            }
        }
        ItemKind::Channel(ch) => {
            if let Some(t) = &ch.ty_name {
                if t.name != "Channel" {
                    c.diags.push(
                        Diagnostic::new(
                            codes::E0505,
                            format!("expected `Channel`, found `{}`", t.name),
                            c.label(t.span, "not a channel type"),
                        )
                        .with_help("write `channel name: Channel[depth: 2]`"),
                    );
                }
            }
            for a in &ch.args {
                match a.name.as_ref().map(|n| n.name.as_str()) {
                    Some(arg @ ("depth" | "latency")) => channel_arg(&mut c, arg, &a.value),
                    _ => c.diags.push(
                        Diagnostic::new(
                            codes::E0505,
                            "a channel takes `depth:` and `latency:`",
                            c.label(a.span, "unknown channel argument"),
                        )
                        .with_help("write `Channel[depth: 2]` or `Channel[depth: 2, latency: 10]`"),
                    ),
                }
            }
        }
        ItemKind::Process(p) => {
            c.builtins = WORKLOAD_CTX;
            c.in_process = true;
            c.produces_end = p.produces.last().map(|i| i.span.end);
            c.consumes_end = p.consumes.last().map(|i| i.span.end);
            c.header_end = p
                .consumes
                .iter()
                .chain(&p.produces)
                .map(|i| i.span.end)
                .fold(p.name.span.end, u32::max);
            for (list, set) in [(&p.consumes, 0), (&p.produces, 1)] {
                for ch in list {
                    match c.scope.get(&ch.name).map(|s| &s.symbol) {
                        Some(Symbol::Channel) => {}
                        Some(other) => {
                            c.wrong_kind(
                                codes::E0503,
                                &ch.name,
                                other,
                                "a channel",
                                ch.span,
                                "expected a channel",
                                "declare it with `channel name: Channel[depth: n]`",
                            );
                        }
                        None => c.unresolved(ch),
                    }
                    if set == 0 {
                        c.consumes.insert(ch.name.clone());
                    } else {
                        c.produces.insert(ch.name.clone());
                    }
                }
            }
            c.block(&p.body);
            // `P` loops inside a process declare independence too; views are bounds-checked.
            c.diags.extend(item_races(db, item).iter().cloned());
        }
        ItemKind::Schedule(s) => {
            schedule(&mut c, s);
            key_axes(&mut c, s, crate::wltype::iterated_axes(db, file));
        }
        ItemKind::Expect(e) => {
            c.builtins = EXPECT_CTX;
            c.expr(&e.expr);
            let more = crate::expect::check_expect(&c.file, e, scope, consts);
            c.diags.extend(more);
        }
        ItemKind::Import(_) | ItemKind::Error => {}
    }
    c.diags
}

#[cfg(test)]
mod tests {
    use super::suggest;

    #[test]
    fn suggestions_are_plausible_misspellings() {
        assert_eq!(suggest("kernal", ["kernel", "channel"]), Some("kernel"));
        assert_eq!(suggest("Yy", ["Y", "N"]), Some("Y"));
        // One letter is no misspelling of another.
        assert_eq!(suggest("A", ["P", "B"]), None);
        // Too far, and the name itself.
        assert_eq!(suggest("softmax", ["matmul"]), None);
        assert_eq!(suggest("x", ["x"]), None);
    }
}
