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

mod locals;
mod schedules;
mod shapes;
pub use schedules::{directive_help, MAX_STREAMS, MAX_TASK_WINDOW};
use schedules::{key_axes, schedule};
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

    // ---- expressions -----------------------------------------------------------------

    /// E0213: integer arithmetic on constants that has no value: a division or remainder by
    /// zero, or a result outside the 64-bit range. (Its operands have values: an operand
    /// without one was reported where it failed.)
    fn const_arith(&mut self, e: &Expr) {
        let int = |x: &Expr| crate::types::eval_int(x, self.consts);
        let failed = match &e.kind {
            ExprKind::Binary { op, lhs, rhs } => {
                if !matches!(
                    op,
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem
                ) {
                    return;
                }
                let (Some(_), Some(b)) = (int(lhs), int(rhs)) else {
                    return;
                };
                (int(e).is_none()).then_some(matches!(op, BinOp::Div | BinOp::Rem) && b == 0)
            }
            ExprKind::Unary {
                op: UnOp::Neg,
                expr,
            } => (int(expr).is_some() && int(e).is_none()).then_some(false),
            _ => None,
        };
        let Some(by_zero) = failed else {
            return;
        };
        let (msg, label) = if by_zero {
            (
                "division by zero in a constant expression",
                "divides by zero",
            )
        } else {
            (
                "integer overflow in a constant expression",
                "outside the 64-bit integer range",
            )
        };
        self.diags.push(
            Diagnostic::new(codes::E0213, msg, self.label(e.span, label)).with_help(
                "integer constants are 64-bit signed integers folded when the program is checked; \
                 change the expression so it has a value",
            ),
        );
    }

    /// E0213: an index whose affine form (the loop variables' and params' coefficients) leaves
    /// the 64-bit range, as `X[i * 4611686018427387904 * 4]`: it would wrap.
    fn index_overflow(&mut self, e: &Expr) {
        if crate::races::index_overflows(e, self.consts) {
            self.diags.push(
                Diagnostic::new(
                    codes::E0213,
                    "integer overflow in an index expression",
                    self.label(e.span, "a coefficient outside the 64-bit integer range"),
                )
                .with_help(
                    "an index is an affine form of loop variables and params with 64-bit \
                     coefficients; keep its constants small enough that no coefficient leaves \
                     the 64-bit range",
                ),
            );
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Name(id) => self.check_name(id),
            ExprKind::Field { base, field } => {
                if let ExprKind::Name(b) = &base.kind {
                    if b.name == "P" && self.is_builtin("P") {
                        if !matches!(field.name.as_str(), "seq" | "sel") {
                            let mut d = Diagnostic::new(
                                codes::E0404,
                                format!("`P` has no form `P.{}`", field.name),
                                self.label(field.span, "unknown loop form"),
                            )
                            .with_help(
                                "the loop forms are `P(axes)` (parallel), `P.seq(axis)` \
                                 (sequential) and `P.sel(sparse[row])` (selected)",
                            );
                            if field.name == "pipe" {
                                // PTO-WSP v9 users look for a pipelined loop.
                                d = d.with_note(
                                    "a pipeline is written as processes joined by channels: \
                                     `process` items that `send` and `consume`, run together by \
                                     `workload w = connect(p1, p2)` (see `wsp explain E0404`)",
                                );
                            }
                            self.diags.push(d);
                        }
                        return;
                    }
                }
                self.expr(base);
            }
            ExprKind::Unary { expr, .. } => {
                self.expr(expr);
                self.const_arith(e);
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
                self.const_arith(e);
            }
            ExprKind::Call {
                callee,
                coords,
                args,
            } => {
                if let Some(coords) = coords {
                    self.task_call(e, callee, coords, args);
                    return;
                }
                if matches!(&callee.kind, ExprKind::Name(f) if f.name == LOCAL_TENSOR && self.local(&f.name).is_none() && !self.scope.contains_key(&f.name))
                {
                    self.misplaced_local(
                        e.span,
                        format!("`{LOCAL_TENSOR}()` makes a local tensor only as the value of a typed `let`"),
                        "not a `let H: dtype[dims] = scratch()`",
                    );
                    args.iter().for_each(|a| self.expr(&a.value));
                    return;
                }
                self.expr(callee);
                for a in args {
                    self.expr(&a.value);
                }
                // `min(a, b)` / `max(a, b)` of workload and process expressions.
                if let ExprKind::Name(f) = &callee.kind {
                    if matches!(f.name.as_str(), "min" | "max")
                        && self.builtins == WORKLOAD_CTX
                        && !self.scope.contains_key(&f.name)
                        && (args.len() != 2 || args.iter().any(|a| a.name.is_some()))
                    {
                        self.diags.push(
                            Diagnostic::new(
                                codes::E0306,
                                format!("`{}` takes two arguments, found {}", f.name, args.len()),
                                self.label(e.span, "wrong number of arguments"),
                            )
                            .with_help(format!(
                                "`{}(a, b)` of two integers, e.g. a slice end `min(t * 64 + 64, lens[b])`",
                                f.name
                            )),
                        );
                    }
                }
            }
            ExprKind::Index { base, indices } => {
                self.expr(base);
                self.indices(indices);
            }
            ExprKind::Range { start, end } => {
                if let Some(s) = start {
                    self.expr(s);
                }
                if let Some(s) = end {
                    self.expr(s);
                }
            }
            ExprKind::List(items) | ExprKind::Tuple(items) => {
                items.iter().for_each(|i| self.expr(i))
            }
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::FullSlice
            | ExprKind::Error => {}
        }
    }

    /// The indices of a view or of a tensor read.
    fn indices(&mut self, indices: &[Expr]) {
        indices.iter().for_each(|i| self.expr(i));
        for i in indices {
            match &i.kind {
                ExprKind::Range { start, end } => {
                    start.iter().chain(end).for_each(|x| self.index_overflow(x))
                }
                _ => self.index_overflow(i),
            }
        }
    }

    /// `k[coords](args)`: the callee must be a kernel; arguments must match its parameters.
    fn task_call(&mut self, call: &Expr, callee: &Expr, coords: &[Expr], args: &[Arg]) {
        coords.iter().for_each(|c| self.expr(c));
        args.iter().for_each(|a| self.task_arg(&a.value));
        let ExprKind::Name(kid) = &callee.kind else {
            self.diags.push(
                Diagnostic::new(
                    codes::E0105,
                    "only a kernel can be called with task coordinates",
                    self.label(callee.span, "not a kernel name"),
                )
                .with_help("a task is written `kernel[coords](param: view, ...)`"),
            );
            return;
        };
        let params = match self.scope.get(&kid.name).map(|s| &s.symbol) {
            Some(Symbol::Kernel(p)) => p.clone(),
            Some(other) => {
                self.wrong_kind(
                    codes::E0105,
                    &kid.name,
                    other,
                    "a kernel",
                    kid.span,
                    "called as a task",
                    "a task is written `kernel[coords](param: view, ...)`",
                );
                return;
            }
            None => {
                self.unresolved(kid);
                return;
            }
        };
        let mut given: BTreeMap<String, Span> = BTreeMap::new();
        for (i, a) in args.iter().enumerate() {
            let pname = match &a.name {
                Some(n) => {
                    if !params.iter().any(|p| p.name == n.name) {
                        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
                        let mut d = Diagnostic::new(
                            codes::E0106,
                            format!("kernel `{}` has no parameter `{}`", kid.name, n.name),
                            self.label(n.span, "unknown parameter"),
                        )
                        .with_note(format!(
                            "`{}` takes ({})",
                            kid.name,
                            names.join(", ")
                        ));
                        if let Some(s) = suggest(&n.name, names.iter().copied()) {
                            d = d.with_help(format!("did you mean `{s}`?")).with_fix(Fix {
                                title: format!("change to `{s}`"),
                                edits: vec![Edit {
                                    file: self.file.clone(),
                                    span: n.span,
                                    replacement: s.to_string(),
                                }],
                            });
                        }
                        self.diags.push(d);
                        continue;
                    }
                    n.name.clone()
                }
                None => match params.get(i) {
                    Some(p) => p.name.clone(),
                    None => {
                        self.diags.push(
                            Diagnostic::new(
                                codes::E0106,
                                format!(
                                    "kernel `{}` takes {} parameters but argument {} was given",
                                    kid.name,
                                    params.len(),
                                    i + 1
                                ),
                                self.label(a.span, "extra argument"),
                            )
                            .with_help("remove the argument"),
                        );
                        continue;
                    }
                },
            };
            if let Some(sig) = params.iter().find(|p| p.name == pname) {
                let more = crate::types::check_view(
                    &self.file,
                    &kid.name,
                    sig,
                    a,
                    self.scope,
                    self.consts,
                );
                self.diags.extend(more);
            }
            if let Some(first) = given.insert(pname.clone(), a.span) {
                self.diags.push(
                    Diagnostic::new(
                        codes::E0108,
                        format!("parameter `{pname}` is given twice"),
                        self.label(a.span, "given again here"),
                    )
                    .with_label(self.label(first, "first given here"))
                    .with_help("remove one of the two arguments"),
                );
            }
        }
        let missing: Vec<&str> = params
            .iter()
            .filter(|p| !p.has_default && !given.contains_key(&p.name))
            .map(|p| p.name.as_str())
            .collect();
        if !missing.is_empty() {
            let list = missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ");
            self.diags.push(
                Diagnostic::new(
                    codes::E0107,
                    format!("task `{}` is missing {list}", kid.name),
                    self.label(call.span, format!("missing {list}")),
                )
                .with_help(format!(
                    "pass every parameter without a default: {}",
                    missing
                        .iter()
                        .map(|m| format!("{m}: <view>"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            );
        }
    }

    // ---- statements ------------------------------------------------------------------

    fn block(&mut self, b: &Block) {
        self.locals.push(BTreeMap::new());
        for s in &b.stmts {
            self.stmt(s);
        }
        self.locals.pop();
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Let { .. } if s.local_tensor().is_some() => {
                if let Some((name, ty)) = s.local_tensor() {
                    self.local_tensor_decl(s, name, ty);
                }
            }
            StmtKind::Let {
                names, ty, value, ..
            } => {
                self.expr(value);
                if let Some(t) = ty {
                    self.dtype(t);
                }
                names.iter().for_each(|n| self.bind(&n.name, Local::Value));
            }
            StmtKind::Var { name, ty, value } => {
                self.expr(value);
                if let Some(t) = ty {
                    self.dtype(t);
                }
                self.bind(&name.name, Local::Value);
            }
            StmtKind::Assign { target, value, .. } => {
                self.expr(value);
                self.assign_target(target);
            }
            StmtKind::For { vars, iter, body } => {
                self.loop_iter(vars, iter);
                self.bound_once(vars, "loop");
                self.locals.push(BTreeMap::new());
                vars.iter().for_each(|v| self.bind(&v.name, Local::Value));
                self.block(body);
                self.locals.pop();
            }
            StmtKind::When {
                branches,
                otherwise,
            } => {
                for (c, b) in branches {
                    self.expr(c);
                    self.block(b);
                }
                if let Some(b) = otherwise {
                    self.block(b);
                }
            }
            StmtKind::Send { channel, value } => {
                self.channel_use(channel, true);
                self.expr(value);
            }
            StmtKind::Consume {
                channel,
                bindings,
                body,
            } => {
                self.channel_use(channel, false);
                self.bound_once(bindings, "`consume`");
                self.locals.push(BTreeMap::new());
                bindings
                    .iter()
                    .for_each(|v| self.bind(&v.name, Local::Value));
                self.block(body);
                self.locals.pop();
            }
            StmtKind::Pipe { name, elem, args } => {
                self.dtype(elem);
                args.iter().for_each(|a| self.expr(&a.value));
                self.bind(&name.name, Local::Pipe);
            }
            StmtKind::Section { body, .. } => self.block(body),
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Error => {}
        }
    }

    /// E0102: one loop header or `consume` binding a name twice (the second would hide the
    /// first).
    fn bound_once(&mut self, names: &[Ident], what: &str) {
        for (i, n) in names.iter().enumerate() {
            if let Some(first) = names[..i].iter().find(|m| m.name == n.name) {
                let d = Diagnostic::new(
                    codes::E0102,
                    format!("`{}` is bound twice in one {what}", n.name),
                    self.label(n.span, "bound again here"),
                )
                .with_label(self.label(first.span, "first bound here"))
                .with_help("give each variable its own name");
                self.diags.push(d);
            }
        }
    }

    fn assign_target(&mut self, target: &Expr) {
        let root = match &target.kind {
            ExprKind::Name(id) => Some(id),
            ExprKind::Index { base, indices } => {
                indices.iter().for_each(|i| self.expr(i));
                match &base.kind {
                    ExprKind::Name(id) => Some(id),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some(id) = root else {
            self.diags.push(
                Diagnostic::new(
                    codes::E0304,
                    "this cannot be assigned to",
                    self.label(target.span, "not a tile, `var` or sub-range"),
                )
                .with_help("assign to an `out`/`inout` tile, a sub-range of one, or a `var`"),
            );
            return;
        };
        match self.local(&id.name) {
            Some(Local::Tile(Direction::In)) => self.diags.push(
                Diagnostic::new(
                    codes::E0301,
                    format!("cannot write to `{}`, an `in` tile", id.name),
                    self.label(id.span, "written here"),
                )
                .with_help(format!(
                    "declare the parameter `{}: inout ...` to read and write it, or write to an \
                     `out` tile",
                    id.name
                )),
            ),
            Some(_) => {}
            None => self.check_name(id),
        }
    }

    fn loop_iter(&mut self, vars: &[Ident], iter: &Expr) {
        // `P(a, b)`, `P.seq(a)`, `P.sel(s[b])`, or a constant range `0..N`.
        if let ExprKind::Call { callee, args, .. } = &iter.kind {
            let form = match &callee.kind {
                ExprKind::Name(n) if n.name == "P" => Some("P"),
                ExprKind::Field { base, field } => match &base.kind {
                    ExprKind::Name(n) if n.name == "P" => match field.name.as_str() {
                        "seq" => Some("P.seq"),
                        "sel" => Some("P.sel"),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            };
            if let Some(form) = form {
                if self.is_builtin("P") {
                    self.loop_axes(form, vars, iter, args);
                    return;
                }
            }
        }
        self.expr(iter);
    }

    fn loop_axes(&mut self, form: &str, vars: &[Ident], iter: &Expr, args: &[Arg]) {
        if form != "P.sel" && vars.len() != args.len() {
            self.diags.push(
                Diagnostic::new(
                    codes::E0405,
                    format!(
                        "{} loop variable(s) for {} axis/axes",
                        vars.len(),
                        args.len()
                    ),
                    self.label(iter.span, "one variable per axis"),
                )
                .with_help("write `for a, b in P(x, y)`: one loop variable per axis"),
            );
        }
        for a in args {
            match &a.value.kind {
                ExprKind::Name(id) => {
                    match self.scope.get(&id.name).map(|s| &s.symbol) {
                        Some(Symbol::Axis(kind)) => {
                            if form == "P.sel" {
                                self.diags.push(
                                    Diagnostic::new(
                                        codes::E0402,
                                        format!(
                                        "`P.sel` iterates over one row of a Sparse axis, but `{}` \
                                         is used without a row",
                                        id.name
                                    ),
                                        self.label(a.value.span, "needs a row"),
                                    )
                                    .with_help(format!("write `P.sel({}[row])`", id.name)),
                                );
                            } else if kind == "Sparse" || kind == "Ragged" {
                                // A nested axis iterated as a whole needs its row.
                                self.diags.push(
                                Diagnostic::new(
                                    codes::E0406,
                                    format!(
                                        "`{}` is a {kind} axis: iterate one row of it, \
                                         `{}[row]`",
                                        id.name, id.name
                                    ),
                                    self.label(a.value.span, "nested axis without a row"),
                                )
                                .with_help(if kind == "Sparse" {
                                    format!("write `P.sel({}[b])` inside a loop over its outer axis", id.name)
                                } else {
                                    format!("write `P({}[b])` inside a loop over its outer axis", id.name)
                                }),
                            );
                            }
                        }
                        Some(other) => {
                            self.wrong_kind(
                                codes::E0401,
                                &id.name,
                                other,
                                "an axis",
                                a.value.span,
                                "expected an axis",
                                "loops iterate over axes declared with `axis`",
                            );
                        }
                        None => {
                            if self.local(&id.name).is_none() {
                                self.unresolved(id)
                            }
                        }
                    }
                }
                ExprKind::Index { base, indices } => {
                    indices.iter().for_each(|i| self.expr(i));
                    if let ExprKind::Name(id) = &base.kind {
                        match self.scope.get(&id.name).map(|s| &s.symbol) {
                            Some(Symbol::Axis(kind)) => {
                                if form == "P.sel" && kind != "Sparse" {
                                    self.diags.push(
                                        Diagnostic::new(
                                            codes::E0402,
                                            format!(
                                                "`P.sel` needs a row of a Sparse axis, but `{}` is \
                                                 {kind}",
                                                id.name
                                            ),
                                            self.label(base.span, format!("a {kind} axis")),
                                        )
                                        .with_help(
                                            "declare the axis as `Sparse(outer, indptr, indices)`, \
                                             or iterate it with `P(...)`",
                                        ),
                                    );
                                } else if form != "P.sel" && kind == "Sparse" {
                                    self.diags.push(
                                        Diagnostic::new(
                                            codes::E0402,
                                            format!(
                                                "`{}` is a Sparse axis: iterate its row with \
                                                 `P.sel`",
                                                id.name
                                            ),
                                            self.label(iter_span(a), "Sparse row"),
                                        )
                                        .with_help(format!("write `P.sel({}[..])`", id.name)),
                                    );
                                }
                            }
                            Some(other) => {
                                self.wrong_kind(
                                    codes::E0401,
                                    &id.name,
                                    other,
                                    "an axis",
                                    base.span,
                                    "expected an axis",
                                    "loops iterate over axes declared with `axis`",
                                );
                            }
                            None => self.unresolved(id),
                        }
                    } else {
                        self.expr(base);
                    }
                }
                _ => {
                    self.diags.push(
                        Diagnostic::new(
                            codes::E0401,
                            format!("`{form}` takes axes"),
                            self.label(a.value.span, "expected an axis"),
                        )
                        .with_help("loops iterate over axes declared with `axis`"),
                    );
                }
            }
        }
    }

    fn channel_use(&mut self, ch: &Ident, send: bool) {
        match self.scope.get(&ch.name).map(|s| &s.symbol) {
            Some(Symbol::Channel) => {}
            Some(other) => {
                self.wrong_kind(
                    codes::E0503,
                    &ch.name,
                    other,
                    "a channel",
                    ch.span,
                    "expected a channel",
                    "declare it with `channel name: Channel[depth: n]`",
                );
                return;
            }
            None => {
                self.unresolved(ch);
                return;
            }
        }
        if !self.in_process {
            self.diags.push(
                Diagnostic::new(
                    codes::E0504,
                    format!(
                        "`{}` outside a process",
                        if send { "send" } else { "consume" }
                    ),
                    self.label(ch.span, "channel used here"),
                )
                .with_help("channels are used inside `process` bodies; connect processes with `connect(...)`"),
            );
            return;
        }
        let (declared, code, clause) = if send {
            (&self.produces, codes::E0501, "produces")
        } else {
            (&self.consumes, codes::E0502, "consumes")
        };
        if !declared.contains(&ch.name) {
            let verb = if send { "sends on" } else { "consumes" };
            self.diags.push(
                Diagnostic::new(
                    code,
                    format!(
                        "this process {verb} `{}` but does not declare `{clause} {}`",
                        ch.name, ch.name
                    ),
                    self.label(ch.span, format!("not declared `{clause}`")),
                )
                .with_help(format!("add `{clause} {}` to the process header", ch.name))
                .with_fix(Fix {
                    title: format!("declare `{clause} {}`", ch.name),
                    edits: vec![match if send {
                        self.produces_end
                    } else {
                        self.consumes_end
                    } {
                        Some(end) => Edit {
                            file: self.file.clone(),
                            span: Span::new(end, end),
                            replacement: format!(", {}", ch.name),
                        },
                        None => Edit {
                            file: self.file.clone(),
                            span: Span::new(self.header_end, self.header_end),
                            replacement: format!(" {clause} {}", ch.name),
                        },
                    }],
                }),
            );
        }
    }
}

fn iter_span(a: &Arg) -> Span {
    a.value.span
}

/// Diagnostics of one item, with spans relative to the item's start.
/// Types and flow of one kernel: tile shapes and dtypes through every operation
/// (`types::check_kernel`), then reads before writes and the pipe protocol (`flow`).
#[salsa::tracked(returns(ref))]
pub fn kernel_types<'db>(db: &'db dyn Db, item: ItemId<'db>) -> Vec<Diagnostic> {
    let Some(Item {
        kind: ItemKind::Kernel(k),
        ..
    }) = item_ast(db, item)
    else {
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
    let body = item_body(&item_ast(db, item).as_ref()?.kind)?;
    let file = item.file(db);
    crate::locals::scope_with_locals(scope(db, file), body, crate::db::const_values(db, file))
}

/// Races between iterations of `P` loops and view bounds in one workload or process body.
#[salsa::tracked(returns(ref))]
pub fn item_races<'db>(db: &'db dyn Db, item: ItemId<'db>) -> Vec<Diagnostic> {
    let Some(body) = item_ast(db, item).as_ref().and_then(|i| item_body(&i.kind)) else {
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
    let Some(ast) = item_ast(db, item) else {
        return Vec::new();
    };
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
            if c.diags.is_empty() {
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

/// Races between the operands of `combine(a, b, ...)`: reads the operands' ASTs (a dependency
/// on exactly those items).
fn combine_races(
    db: &dyn Db,
    file: File,
    fname: &FileName,
    e: &Expr,
    scope: &BTreeMap<String, Scoped>,
    consts: &BTreeMap<String, i64>,
    sizes: &BTreeMap<String, crate::types::D>,
) -> Vec<Diagnostic> {
    let ExprKind::Call { callee, args, .. } = &e.kind else {
        return Vec::new();
    };
    let ExprKind::Name(form) = &callee.kind else {
        return Vec::new();
    };
    if form.name != "combine" {
        return Vec::new();
    }
    let items = crate::db::file_items(db, file);
    let mut asts = Vec::new();
    for a in args {
        let ExprKind::Name(n) = &a.value.kind else {
            continue;
        };
        let found = items
            .iter()
            .find(|(id, _)| id.tag(db) == crate::db::ItemTag::Workload && id.key(db) == &n.name);
        if let Some((id, _)) = found {
            if let Some(Item {
                kind:
                    ItemKind::Workload(Workload {
                        body: WorkloadBody::Block(b),
                        ..
                    }),
                ..
            }) = item_ast(db, *id)
            {
                asts.push((n, b));
            }
        }
    }
    crate::races::check_combine(fname, form.span, &asts, scope, consts, sizes)
}

/// The note of the axis-constructor errors.
const AXIS_KINDS: &str = "axis kinds: `Dense[n]`, `DenseDyn(size)`, `Ragged(outer, lens)` (or `Ragged(outer, lens, per: k)`), `Sparse(outer, indptr, indices)`";

fn axis(c: &mut Checker, d: &AxisDecl, sizes: &BTreeMap<String, crate::types::D>) {
    let (ctor, args): (&Ident, Vec<&Expr>) = match &d.ctor.kind {
        ExprKind::Index { base, indices } => match &base.kind {
            ExprKind::Name(n) => (n, indices.iter().collect()),
            _ => return bad_axis(c, &d.ctor),
        },
        ExprKind::Call {
            callee,
            args,
            coords: None,
        } => match &callee.kind {
            ExprKind::Name(n) => {
                // `Ragged(outer, lens, per: k)`: rows of ⌈lens[b] / k⌉ tiles. No other named
                // argument exists.
                for a in args.iter().filter(|a| a.name.is_some()) {
                    let name = a.name.as_ref().map_or("", |x| x.name.as_str());
                    if n.name == "Ragged" && name == "per" {
                        c.expr(&a.value);
                        if !crate::types::eval_int(&a.value, c.consts)
                            .is_some_and(|k| (1..=1 << 26).contains(&k))
                        {
                            c.diags.push(
                                Diagnostic::new(
                                    codes::E0412,
                                    "`per` of `Ragged` needs a constant from 1 to 2^26",
                                    c.label(a.value.span, "not a positive constant"),
                                )
                                .with_help("`Ragged(seqs, lens, per: 64)` has ⌈lens[b] / 64⌉ elements in row b: the tiles of 64 that cover it"),
                            );
                        }
                    } else {
                        c.diags.push(
                            Diagnostic::new(
                                codes::E0403,
                                format!("`{}` has no argument `{name}`", n.name),
                                c.label(a.span, "unknown argument"),
                            )
                            .with_note(AXIS_KINDS),
                        );
                    }
                }
                (
                    n,
                    args.iter()
                        .filter(|a| a.name.is_none())
                        .map(|a| &a.value)
                        .collect(),
                )
            }
            _ => return bad_axis(c, &d.ctor),
        },
        _ => return bad_axis(c, &d.ctor),
    };
    let want = match ctor.name.as_str() {
        "Dense" | "DenseDyn" => 1,
        "Ragged" => 2,
        "Sparse" => 3,
        _ => {
            let sugg = suggest(&ctor.name, AXIS_CTORS.iter().copied());
            let mut diag = Diagnostic::new(
                codes::E0403,
                format!("unknown axis kind `{}`", ctor.name),
                c.label(ctor.span, "not an axis kind"),
            )
            .with_note(AXIS_KINDS);
            if let Some(s) = sugg {
                diag = diag.with_help(format!("did you mean `{s}`?"));
            }
            c.diags.push(diag);
            return;
        }
    };
    if args.len() != want {
        c.diags.push(
            Diagnostic::new(
                codes::E0403,
                format!(
                    "`{}` takes {want} argument(s), found {}",
                    ctor.name,
                    args.len()
                ),
                c.label(d.ctor.span, "wrong number of arguments"),
            )
            .with_note(AXIS_KINDS),
        );
    }
    for a in &args {
        c.expr(a);
    }
    if args.len() == want {
        axis_args(c, ctor, &args, sizes);
    }
    // The outer axis of a nested axis must be an axis.
    if matches!(ctor.name.as_str(), "Ragged" | "Sparse") {
        if let Some(Expr {
            kind: ExprKind::Name(outer),
            ..
        }) = args.first()
        {
            if let Some(sym) = c.scope.get(&outer.name).map(|s| &s.symbol) {
                if !matches!(sym, Symbol::Axis(_)) {
                    c.wrong_kind(
                        codes::E0401,
                        &outer.name,
                        sym,
                        "an axis",
                        outer.span,
                        "the outer axis must be an axis",
                        format!(
                            "`{}(outer, ...)` nests inside an axis declared with `axis`",
                            ctor.name
                        ),
                    );
                }
            }
        }
    }
}

/// E0412: the arguments of an axis constructor have the right kind: `Dense[n]` a positive
/// constant, `DenseDyn(size)` a runtime size, `Ragged`/`Sparse` 1-D integer tensors whose length
/// fits the outer axis (`lens`: one per outer index; `indptr`: one more).
fn axis_args(
    c: &mut Checker,
    ctor: &Ident,
    args: &[&Expr],
    sizes: &BTreeMap<String, crate::types::D>,
) {
    use crate::types::D;
    let err = |c: &mut Checker, span: Span, msg: String, label: &str, help: String| {
        c.diags.push(
            Diagnostic::new(codes::E0412, msg, c.label(span, label.to_string())).with_help(help),
        );
    };
    match ctor.name.as_str() {
        "Dense" => {
            let Some(a) = args.first() else { return };
            match crate::types::eval_int(a, c.consts) {
                Some(v) if v > 0 => {}
                Some(v) => err(
                    c,
                    a.span,
                    format!("`Dense` needs a positive size, found {v}"),
                    "not positive",
                    "an axis has at least one index".into(),
                ),
                None => {
                    let is_param = matches!(&a.kind, ExprKind::Name(n)
                        if matches!(c.scope.get(&n.name).map(|s| &s.symbol), Some(Symbol::Param)));
                    if is_param || !matches!(&a.kind, ExprKind::Name(_)) {
                        err(
                            c,
                            a.span,
                            "`Dense` needs a constant size".into(),
                            "not a constant",
                            "for a size known only at run time write `DenseDyn(size)`".into(),
                        );
                    }
                }
            }
        }
        "DenseDyn" => {
            let Some(a) = args.first() else { return };
            if let Some(v) = crate::types::eval_int(a, c.consts) {
                err(
                    c,
                    a.span,
                    format!("`DenseDyn` needs a runtime size, but this is the constant {v}"),
                    "a constant",
                    format!("write `Dense[{v}]` for a static size, or pass a `param`"),
                );
            }
        }
        "Ragged" | "Sparse" => {
            let outer = match args.first().map(|a| &a.kind) {
                Some(ExprKind::Name(n)) => sizes.get(&n.name).cloned(),
                _ => None,
            };
            for (i, a) in args.iter().enumerate().skip(1) {
                let role = match (ctor.name.as_str(), i) {
                    ("Ragged", _) => "lens",
                    (_, 1) => "indptr",
                    _ => "indices",
                };
                let ExprKind::Name(n) = &a.kind else {
                    err(
                        c,
                        a.span,
                        format!("`{role}` of `{}` must name an integer tensor", ctor.name),
                        "not a tensor",
                        format!("declare it: `input {role}: i32[N] = load(\"{role}.npy\")`"),
                    );
                    continue;
                };
                let Some(sym) = c.scope.get(&n.name).map(|s| s.symbol.clone()) else {
                    continue;
                };
                let Symbol::Tensor { dtype, dims, .. } = sym else {
                    err(
                        c,
                        a.span,
                        format!(
                            "`{role}` of `{}` must be an integer tensor; `{}` is {}",
                            ctor.name,
                            n.name,
                            sym.describe()
                        ),
                        "not a tensor",
                        format!("declare it: `input {role}: i32[N] = load(\"{role}.npy\")`"),
                    );
                    continue;
                };
                if !matches!(
                    dtype.as_str(),
                    "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64"
                ) {
                    err(
                        c,
                        a.span,
                        format!(
                            "`{role}` of `{}` must be an integer tensor; `{}` is `{dtype}`",
                            ctor.name, n.name
                        ),
                        "not an integer tensor",
                        "declare it with an integer dtype such as `i32`".into(),
                    );
                    continue;
                }
                let Some(dims) = dims else { continue };
                if dims.len() != 1 {
                    err(
                        c,
                        a.span,
                        format!(
                            "`{role}` of `{}` must be a vector; `{}` has {} dimensions",
                            ctor.name,
                            n.name,
                            dims.len()
                        ),
                        "not a vector",
                        format!("`{role}` is one-dimensional"),
                    );
                    continue;
                }
                let want = match (role, &outer) {
                    ("lens", Some(o)) => Some(o.clone()),
                    ("indptr", Some(D::K(k))) => Some(D::K(k + 1)),
                    _ => None,
                };
                if let Some(w) = want {
                    if dims[0] != w {
                        err(
                            c,
                            a.span,
                            format!(
                                "`{role}` of `{}` has length {}, but the outer axis needs {w}",
                                ctor.name, dims[0]
                            ),
                            "wrong length",
                            if role == "lens" {
                                "`lens` holds one length per index of the outer axis".into()
                            } else {
                                "`indptr` holds one offset per outer index, plus one".into()
                            },
                        );
                    }
                }
            }
        }
        _ => {}
    }
}

fn bad_axis(c: &mut Checker, e: &Expr) {
    c.diags.push(
        Diagnostic::new(
            codes::E0403,
            "expected an axis kind",
            c.label(e.span, "not an axis kind"),
        )
        .with_note(AXIS_KINDS),
    );
}

/// E0713: the bindings of an extern kernel — a backend's source file (a path string),
/// `sim: reference` (a kernel with the same parameters), `cost: n` (cycles, a non-negative
/// integer constant), each given once.
fn extern_bindings(c: &mut Checker, k: &Kernel, bindings: &[ExternBinding]) {
    let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
    for b in bindings {
        let target = b.target.name.as_str();
        let fail = |c: &mut Checker, msg: String, label: &str, help: &str| {
            c.diags.push(
                Diagnostic::new(
                    codes::E0713,
                    msg,
                    c.label(b.value_span(), label.to_string()),
                )
                .with_help(help.to_string()),
            );
        };
        if let Some(first) = seen.insert(target, b.target.span) {
            c.diags.push(
                Diagnostic::new(
                    codes::E0713,
                    format!("`{target}:` is given twice"),
                    c.label(b.target.span, "given again here"),
                )
                .with_label(c.label(first, "first given here"))
                .with_help(format!("keep one `{target}:` binding")),
            );
            continue;
        }
        match (target, &b.value) {
            ("sim", ExternValue::Expr(e)) => match &e.kind {
                ExprKind::Name(n) => sim_reference(c, k, n),
                _ => fail(
                    c,
                    "`sim:` names the kernel the simulator runs in this one's place".into(),
                    "not a kernel name",
                    "write `sim: k_ref`, where `k_ref` is a `.wsp` kernel with the same parameters",
                ),
            },
            ("cost", ExternValue::Expr(e)) => {
                if !matches!(crate::types::eval_int(e, c.consts), Some(n) if n >= 0) {
                    fail(
                        c,
                        "`cost:` is the cycles of one task, a non-negative integer constant".into(),
                        "not a non-negative integer constant",
                        "write e.g. `cost: 1200`",
                    );
                }
            }
            ("sim" | "cost", ExternValue::Path(_)) => fail(
                c,
                format!("`{target}:` does not take a file"),
                "a path",
                "`sim: k_ref` names a `.wsp` kernel; `cost: 1200` gives cycles",
            ),
            (_, ExternValue::Path(p)) if p.value.trim().is_empty() => fail(
                c,
                format!("`{target}:` has an empty path"),
                "empty",
                "give the target's source file, relative to this file",
            ),
            (_, ExternValue::Path(_)) => {}
            (_, ExternValue::Expr(_)) => fail(
                c,
                format!("`{target}:` takes the path of the target's source file, as a string"),
                "not a path string",
                &format!("write e.g. `{target}: \"{}.cpp\"`", k.name.name),
            ),
        }
    }
}

/// `sim: reference`: a kernel with a `.wsp` body and the parameters of `k` (names, directions,
/// dtypes, tile shapes).
fn sim_reference(c: &mut Checker, k: &Kernel, n: &Ident) {
    let sig = |c: &Checker, name: &str| match c.scope.get(name).map(|s| &s.symbol) {
        Some(Symbol::Kernel(ps)) => Some(ps.clone()),
        _ => None,
    };
    match c.scope.get(&n.name).map(|s| s.symbol.clone()) {
        None => c.unresolved(n),
        Some(Symbol::Kernel(_)) if n.name == k.name.name => c.diags.push(
            Diagnostic::new(
                codes::E0713,
                format!("`{}` cannot be its own reference", n.name),
                c.label(n.span, "this kernel"),
            )
            .with_help("`sim:` names a `.wsp` kernel with the same parameters"),
        ),
        Some(Symbol::Kernel(theirs)) => {
            let Some(ours) = sig(c, &k.name.name) else {
                return;
            };
            let key = |p: &crate::db::KernelParamSig| {
                (
                    p.name.clone(),
                    p.tile,
                    p.dir,
                    p.dtype.clone(),
                    p.dims.clone(),
                )
            };
            if ours.len() != theirs.len() || ours.iter().zip(&theirs).any(|(a, b)| key(a) != key(b))
            {
                let show = |ps: &[crate::db::KernelParamSig]| {
                    ps.iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                c.diags.push(
                    Diagnostic::new(
                        codes::E0713,
                        format!(
                            "the reference `{}` does not take the parameters of `{}`",
                            n.name, k.name.name
                        ),
                        c.label(n.span, "different parameters"),
                    )
                    .with_note(format!(
                        "`{}({})` and `{}({})` must agree in names, directions, dtypes and tile shapes",
                        k.name.name,
                        show(&ours),
                        n.name,
                        show(&theirs)
                    ))
                    .with_help("the simulator runs the reference in place of the extern kernel, with the same arguments"),
                );
            }
        }
        Some(other) => c.wrong_kind(
            codes::E0713,
            &n.name,
            &other,
            "a kernel",
            n.span,
            "not a kernel",
            "`sim:` names a `.wsp` kernel with the same parameters",
        ),
    }
}

fn kernel(c: &mut Checker, k: &Kernel) {
    c.builtins = KERNEL_CTX;
    for p in &k.params {
        c.dtype(&p.ty);
        if let Some(d) = &p.default {
            c.expr(d);
        }
        let l = match p.dir {
            Some((d, _)) => Local::Tile(d),
            None => Local::Value,
        };
        c.bind(&p.name.name, l);
    }
    let body = match &k.body {
        KernelBody::Block(body) => body,
        KernelBody::Extern(bindings) => return extern_bindings(c, k, bindings),
    };
    c.block(body);
    if crate::flow::has_error_nodes(body) {
        return;
    }
    // Every `out` tile must be written somewhere in the body.
    let mut written = BTreeSet::new();
    collect_written(body, &mut written);
    for p in &k.params {
        if matches!(p.dir, Some((Direction::Out, _))) && !written.contains(p.name.name.as_str()) {
            c.diags.push(
                Diagnostic::new(
                    codes::E0302,
                    format!("`out` tile `{}` is never written", p.name.name),
                    c.label(p.name.span, "never written"),
                )
                .with_help(format!(
                    "assign it in the body (`{} = ...`), or make it `in` if it is only read",
                    p.name.name
                )),
            );
        }
    }
}

/// The names assigned anywhere in a body (`x = ...`, `x[..] = ...`).
fn collect_written<'a>(body: &'a Block, out: &mut BTreeSet<&'a str>) {
    for s in wsp_syntax::visit::statements(body) {
        if let StmtKind::Assign { target, .. } = &s.kind {
            let root = match &target.kind {
                ExprKind::Name(id) => Some(id),
                ExprKind::Index { base, .. } => match &base.kind {
                    ExprKind::Name(id) => Some(id),
                    _ => None,
                },
                _ => None,
            };
            if let Some(id) = root {
                out.insert(id.name.as_str());
            }
        }
    }
}

/// `combine(a, b)`, `sequential(a, b)`, `connect(p, replicate(w, 4))`.
fn composition(c: &mut Checker, e: &Expr) {
    let ExprKind::Call {
        callee,
        args,
        coords: None,
    } = &e.kind
    else {
        c.diags.push(
            Diagnostic::new(
                codes::E0407,
                "a workload is a block or `combine(..)`, `sequential(..)` or `connect(..)`",
                c.label(e.span, "not a workload composition"),
            )
            .with_help("write `workload w { ... }` or `workload w = sequential(a, b)`"),
        );
        return;
    };
    let form = match &callee.kind {
        ExprKind::Name(n) => n.name.as_str(),
        _ => "",
    };
    let want_process = match form {
        "combine" | "sequential" => false,
        "connect" => true,
        _ => {
            c.diags.push(
                Diagnostic::new(
                    codes::E0407,
                    "a workload is a block or `combine(..)`, `sequential(..)` or `connect(..)`",
                    c.label(callee.span, "not a workload composition"),
                )
                .with_help("write `workload w { ... }` or `workload w = sequential(a, b)`"),
            );
            return;
        }
    };
    // Process instances of a `connect` (each `replicate(w, n)` counts n).
    let mut instances = 0i64;
    for a in args {
        let mut v = &a.value;
        instances += 1;
        // `replicate(worker, n)` inside `connect`.
        if let ExprKind::Call {
            callee,
            args: rargs,
            coords: None,
        } = &v.kind
        {
            if matches!(&callee.kind, ExprKind::Name(n) if n.name == "replicate") && want_process {
                if rargs.len() != 2 {
                    c.diags.push(
                        Diagnostic::new(
                            codes::E0407,
                            "`replicate` takes a process and a count",
                            c.label(v.span, "write `replicate(worker, 4)`"),
                        )
                        .with_help("write `replicate(worker, 4)`"),
                    );
                    continue;
                }
                instances += replicate_count(c, &rargs[1].value) - 1;
                v = &rargs[0].value;
            }
        }
        let (expected, plural) = if want_process {
            ("a process", "processes")
        } else {
            ("a workload", "workloads")
        };
        let ExprKind::Name(id) = &v.kind else {
            if !matches!(v.kind, ExprKind::Call { .. }) {
                // A literal or arithmetic: not an item at all.
                c.diags.push(
                    Diagnostic::new(
                        codes::E0407,
                        format!("`{form}` takes {plural}, but this is not the name of one"),
                        c.label(v.span, format!("expected {expected}")),
                    )
                    .with_help(format!("name {expected} declared in this file or imported")),
                );
            }
            c.expr(v);
            continue;
        };
        match c.scope.get(&id.name).map(|s| &s.symbol) {
            Some(Symbol::Process) if want_process => {}
            Some(Symbol::Workload) if !want_process => {}
            Some(other) => {
                let what = other.describe();
                c.diags.push(
                    Diagnostic::new(
                        codes::E0407,
                        format!("`{form}` takes {plural}, but `{}` is {what}", id.name),
                        c.label(id.span, format!("expected {expected}")),
                    )
                    .with_help(if want_process {
                        "`connect(...)` joins processes; `combine`/`sequential` join workloads"
                    } else {
                        "`combine`/`sequential` join workloads; `connect(...)` joins processes"
                    }),
                );
            }
            None => c.unresolved(id),
        }
    }
    if want_process && instances > MAX_PROCESSES {
        c.diags.push(
            Diagnostic::new(
                codes::E0407,
                format!("`connect` of {instances} process instances"),
                c.label(e.span, format!("at most {MAX_PROCESSES}")),
            )
            .with_help(format!(
                "each instance is a process with its own state for the whole run, and a pipeline has at most {MAX_PROCESSES}; replicate fewer workers"
            )),
        );
    }
}

/// The most process instances of one `connect` (each `replicate(w, n)` counts n): the
/// simulator's `wsp_ir::exec::MAX_PROCESSES` (kept equal by a wsp-sim test).
pub const MAX_PROCESSES: i64 = 1 << 16;

/// E0407: a `replicate` count is an integer constant from 1 to [`MAX_PROCESSES`]. Returns the
/// count (1 when it has none).
fn replicate_count(c: &mut Checker, n: &Expr) -> i64 {
    let Some(value) = constant_arg(c, n) else {
        return 1;
    };
    let (msg, label) = match value {
        Some(v) if (1..=MAX_PROCESSES).contains(&v) => return v,
        Some(v) if v < 1 => (
            format!("`replicate` with a count of {v}"),
            "at least 1".to_string(),
        ),
        Some(v) => (
            format!("`replicate` with a count of {v}"),
            format!("at most {MAX_PROCESSES}"),
        ),
        None => (
            "`replicate` takes an integer constant count".to_string(),
            "not an integer constant".to_string(),
        ),
    };
    c.diags.push(
        Diagnostic::new(codes::E0407, msg, c.label(n.span, label)).with_help(format!(
            "write `replicate(worker, 4)`: a count from 1 to {MAX_PROCESSES}"
        )),
    );
    1
}

/// Checks argument `e`, which takes an integer constant: `None` when there is nothing more to
/// say of it (an error inside it was reported, or it is over params, the run's to give, which
/// `wsp run` does not lower yet: E0813), else `Some` of its value (`None`: not a constant).
fn constant_arg(c: &mut Checker, e: &Expr) -> Option<Option<i64>> {
    let before = c.diags.len();
    c.expr(e);
    if c.diags.len() > before || matches!(e.kind, ExprKind::Error) {
        return None;
    }
    let v = crate::types::eval_int(e, c.consts);
    let is_param = |n: &str| matches!(c.scope.get(n).map(|s| &s.symbol), Some(Symbol::Param));
    if v.is_none() && crate::types::names_any(e, &is_param) {
        return None;
    }
    Some(v)
}

/// E0505: a channel's `depth` (0, a rendezvous, to 2³² − 1 tokens) or `latency` (0 or more
/// cycles) is an integer constant in range.
fn channel_arg(c: &mut Checker, arg: &str, value: &Expr) {
    let Some(v) = constant_arg(c, value) else {
        return;
    };
    let (max, range) = if arg == "depth" {
        (u32::MAX as i64, "0 (a rendezvous) to 4294967295 tokens")
    } else {
        (i64::MAX, "0 or more cycles")
    };
    let (msg, label) = match v {
        Some(v) if (0..=max).contains(&v) => return,
        Some(v) => (
            format!("a channel {arg} is {range}, found {v}"),
            "out of range".to_string(),
        ),
        None => (
            format!("a channel {arg} is an integer constant"),
            "not an integer constant".to_string(),
        ),
    };
    c.diags.push(
        Diagnostic::new(codes::E0505, msg, c.label(value.span, label))
            .with_help("write `Channel[depth: 2]` or `Channel[depth: 2, latency: 10]`"),
    );
}

/// File-level diagnostics (absolute spans): duplicate definitions and imports.
#[salsa::tracked(returns(ref))]
pub fn check_file_level(db: &dyn Db, file: File) -> Vec<Diagnostic> {
    let parse = parse_file(db, file);
    let fname = FileName::new(file.path(db).as_str());
    let mut diags = Vec::new();
    let mut first: BTreeMap<&str, Span> = BTreeMap::new();
    for node in &parse.file.items {
        if let Some(name) = node.item.name() {
            let span = name.span.shift(node.range.start);
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
    // an unused-import warning is never wrong, at worst missing).
    let text = file.text(db);
    let import_ranges: Vec<Span> = parse
        .file
        .items
        .iter()
        .filter(|n| matches!(n.item.kind, ItemKind::Import(_)))
        .map(|n| n.range)
        .collect();
    let used: BTreeSet<&str> = parse
        .tokens
        .iter()
        .filter(|t| t.kind == wsp_syntax::Token::Ident)
        .filter(|t| {
            !import_ranges
                .iter()
                .any(|r| r.start <= t.span.start && t.span.end <= r.end)
        })
        .filter_map(|t| text.get(t.span.start as usize..t.span.end as usize))
        .collect();
    let imports = imports_of(db, file);
    let import_nodes = parse.file.items.iter().filter_map(|n| match &n.item.kind {
        ItemKind::Import(i) => Some((n, i)),
        _ => None,
    });
    let kernels = ImportedKernels {
        here: crate::memory::file_target(db, file),
        model: std::cell::OnceCell::new(),
    };
    // Names imported one by one so far: the module and where (E0102 for a second module).
    let mut imported: BTreeMap<&str, (&str, Span)> = BTreeMap::new();
    for ((node, imp), (path, target)) in import_nodes.zip(imports) {
        let off = node.range.start;
        let path_span = match (imp.path.first(), imp.path.last()) {
            (Some(a), Some(b)) => a.span.cover(b.span).shift(off),
            _ => node.range,
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
                        if theirs.contains_key(&n.name) && !entry && !used.contains(n.name.as_str())
                        {
                            diags.push(unused_import(&fname, node, names, i));
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
                    for name in theirs.keys().filter(|k| used.contains(k.as_str())) {
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
        let item =
            crate::db::file_items(db, m)
                .iter()
                .find_map(|(id, _)| match item_ast(db, *id) {
                    Some(Item {
                        kind: ItemKind::Kernel(k),
                        ..
                    }) if k.name.name == name => Some((*id, k)),
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
                    "the module's tiles are sized for other targets; on {here}, use a kernel of your own with smaller tiles"
                ))
            })
            .collect()
    }
}

/// W0103: the `i`-th name of `import m.{..}` is never used; the fix removes it (the whole
/// import when it is the only name).
fn unused_import(
    fname: &FileName,
    node: &wsp_syntax::ast::ItemNode,
    names: &[wsp_syntax::ast::Ident],
    i: usize,
) -> Diagnostic {
    let off = node.range.start;
    let n = &names[i];
    let (span, title) = if names.len() == 1 {
        (node.range, "remove the unused import".to_string())
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
