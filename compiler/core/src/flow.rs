//! Flow checks of a kernel body, in program order:
//!
//! - E0307: kernel loops iterate a non-empty constant range `a..b`.
//! - E0303: an `out` tile is read (in an expression, as `acc:`, or by a compound assignment
//!   `out += e`) before any statement has written it.
//! - E0305: the pipe slot protocol (`talloc`/`tpush` on the producer side, `tpop`/`tfree` on the
//!   consumer side): the first argument must be a declared `pipe`; a slot is bound with `let`; it
//!   is pushed (or freed) exactly once, on the pipe it came from, within the block that took it; a
//!   popped slot is read-only and a pushed slot is no longer writable.
//!
//! Loops with constant bounds run their body at least once, so writes inside a `for` count
//! afterwards; a `when` counts a write only when every branch (and an `else`) makes it.

use std::collections::{BTreeMap, BTreeSet};

use wsp_diagnostics::{Diagnostic, FileName, Label};
use wsp_syntax::ast::*;
use wsp_syntax::visit::{walk_expr, walk_stmt, Visitor};
use wsp_syntax::Span;

use crate::types::eval_int;
use wsp_vocab::codes;

#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotKind {
    /// From `talloc`: written by the producer, committed with `tpush`.
    Alloc,
    /// From `tpop`: read by the consumer, released with `tfree`.
    Pop,
}

#[derive(Clone)]
struct Slot {
    pipe: String,
    kind: SlotKind,
    span: Span,
    done: bool,
}

struct Flow<'a> {
    file: &'a FileName,
    consts: &'a BTreeMap<String, i64>,
    outs: BTreeSet<String>,
    written: BTreeSet<String>,
    reported: BTreeSet<String>,
    pipes: BTreeSet<String>,
    /// Slots in scope, innermost block last.
    slots: Vec<BTreeMap<String, Slot>>,
    diags: Vec<Diagnostic>,
}

fn root_name(target: &Expr) -> Option<&Ident> {
    match &target.kind {
        ExprKind::Name(id) => Some(id),
        ExprKind::Index { base, .. } => match &base.kind {
            ExprKind::Name(id) => Some(id),
            _ => None,
        },
        _ => None,
    }
}

fn callee_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::Call {
            callee,
            coords: None,
            ..
        } => match &callee.kind {
            ExprKind::Name(n) => Some(n.name.as_str()),
            _ => None,
        },
        _ => None,
    }
}

impl Flow<'_> {
    fn label(&self, span: Span, msg: impl Into<String>) -> Label {
        Label::new(self.file.clone(), span, msg)
    }

    fn pipe_err(&mut self, msg: String, span: Span, label: &str, help: &str) {
        let d =
            Diagnostic::new(codes::E0305, msg, self.label(span, label)).with_help(help.to_string());
        self.diags.push(d);
    }

    fn slot_mut(&mut self, name: &str) -> Option<&mut Slot> {
        self.slots.iter_mut().rev().find_map(|s| s.get_mut(name))
    }

    fn slot(&self, name: &str) -> Option<&Slot> {
        self.slots.iter().rev().find_map(|s| s.get(name))
    }

    /// Checks that the first argument of a pipe operation names a declared pipe; returns it.
    fn pipe_arg(&mut self, op: &str, args: &[Arg], span: Span) -> Option<String> {
        match args.first().map(|a| &a.value) {
            Some(Expr {
                kind: ExprKind::Name(p),
                ..
            }) if self.pipes.contains(&p.name) => Some(p.name.clone()),
            Some(a) => {
                let shown = match &a.kind {
                    ExprKind::Name(p) => format!("`{}` is not a pipe", p.name),
                    _ => "this is not a pipe".to_string(),
                };
                self.pipe_err(
                    format!("`{op}` needs a pipe as its first argument; {shown}"),
                    a.span,
                    "not a pipe",
                    "declare it in the kernel: `pipe s: Pipe[f32[128, 256], slots: 2]`",
                );
                None
            }
            None => {
                self.pipe_err(
                    format!("`{op}` needs a pipe as its first argument"),
                    span,
                    "no pipe",
                    "write `talloc(s)`, `tpush(s, slot)`, `tpop(s)` or `tfree(s, t)`",
                );
                None
            }
        }
    }

    fn read(&mut self, id: &Ident) {
        if self.outs.contains(&id.name)
            && !self.written.contains(&id.name)
            && self.reported.insert(id.name.clone())
        {
            self.diags.push(
                Diagnostic::new(
                    codes::E0303,
                    format!("`out` tile `{}` is read before it is written", id.name),
                    self.label(id.span, "read here, but nothing has been written to it yet"),
                )
                .with_help(format!(
                    "write `{0}` first, or declare it `{0}: inout ...` if the task's view \
                     supplies its initial contents",
                    id.name
                )),
            );
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Name(id) => self.read(id),
            ExprKind::Call {
                callee,
                coords,
                args,
            } => {
                let name = match &callee.kind {
                    ExprKind::Name(n) => Some(n.name.as_str()),
                    _ => None,
                };
                match name {
                    Some(op @ ("talloc" | "tpop")) => {
                        self.pipe_arg(op, args, e.span);
                        self.pipe_err(
                            format!("bind the slot of `{op}` with `let`"),
                            e.span,
                            "slot not bound",
                            "write `let slot = talloc(s)` (or `let t = tpop(s)`) so it can be \
                             committed or released",
                        );
                    }
                    Some(op @ ("tpush" | "tfree")) => self.release(op, args, e.span),
                    _ => {
                        if name.is_none() {
                            self.expr(callee);
                        }
                        for a in args {
                            self.expr(&a.value);
                        }
                    }
                }
                for c in coords.iter().flatten() {
                    self.expr(c);
                }
            }
            ExprKind::Field { base, .. } => self.expr(base),
            ExprKind::Unary { expr, .. } => self.expr(expr),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Index { base, indices } => {
                self.expr(base);
                indices.iter().for_each(|i| self.expr(i));
            }
            ExprKind::Range { start, end } => {
                if let Some(s) = start {
                    self.expr(s);
                }
                if let Some(s) = end {
                    self.expr(s);
                }
            }
            ExprKind::List(xs) | ExprKind::Tuple(xs) => xs.iter().for_each(|x| self.expr(x)),
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Bool(_)
            | ExprKind::FullSlice
            | ExprKind::Error => {}
        }
    }

    /// E0307: a kernel loop is `for i in a..b` with constant bounds (it is unrolled or becomes a
    /// counted loop on every backend), and runs at least once.
    fn loop_bounds(&mut self, iter: &Expr) {
        let help = "kernel loops have constant bounds: `for i in 0..4 { }`; data-dependent \
                    iteration belongs in the workload (`for i in P(axis)`)";
        let ExprKind::Range {
            start: Some(a),
            end: Some(b),
        } = &iter.kind
        else {
            if !matches!(iter.kind, ExprKind::Error) {
                let d = Diagnostic::new(
                    codes::E0307,
                    "a kernel loop iterates a constant range `a..b`",
                    self.label(iter.span, "not a range with both bounds"),
                )
                .with_help(help);
                self.diags.push(d);
            }
            return;
        };
        for e in [a, b] {
            if eval_int(e, self.consts).is_none() {
                let d = Diagnostic::new(
                    codes::E0307,
                    "kernel loop bounds must be constant",
                    self.label(e.span, "not a constant"),
                )
                .with_help(help);
                self.diags.push(d);
                return;
            }
        }
        if let (Some(x), Some(y)) = (eval_int(a, self.consts), eval_int(b, self.consts)) {
            if y <= x {
                let d = Diagnostic::new(
                    codes::E0307,
                    format!("the kernel loop `{x}..{y}` never runs"),
                    self.label(iter.span, "empty range"),
                )
                .with_help("the end of the range is exclusive and must exceed its start");
                self.diags.push(d);
            }
        }
    }

    /// `tpush(s, slot)` / `tfree(s, t)`.
    fn release(&mut self, op: &str, args: &[Arg], span: Span) {
        let pipe = self.pipe_arg(op, args, span);
        let (want, from) = if op == "tpush" {
            (SlotKind::Alloc, "talloc")
        } else {
            (SlotKind::Pop, "tpop")
        };
        let Some(arg) = args.get(1) else {
            self.pipe_err(
                format!("`{op}` needs the slot as its second argument"),
                span,
                "no slot",
                &format!("write `{op}(s, slot)` with the slot returned by `{from}(s)`"),
            );
            return;
        };
        let ExprKind::Name(id) = &arg.value.kind else {
            self.pipe_err(
                format!("`{op}` takes a slot bound by `let x = {from}(s)`"),
                arg.value.span,
                "not a slot",
                &format!("pass the name bound by `let x = {from}(s)`"),
            );
            return;
        };
        let Some(slot) = self.slot(&id.name).cloned() else {
            self.pipe_err(
                format!("`{}` is not a slot taken with `{from}`", id.name),
                id.span,
                "not a slot",
                &format!("pass the name bound by `let {} = {from}(s)`", id.name),
            );
            return;
        };
        if slot.kind != want {
            let (got, should) = if want == SlotKind::Alloc {
                ("tpop", "tfree")
            } else {
                ("talloc", "tpush")
            };
            self.pipe_err(
                format!(
                    "`{}` was taken with `{got}`, so it is released with `{should}`, not `{op}`",
                    id.name
                ),
                id.span,
                "wrong release",
                &format!("write `{should}({}, {})`", slot.pipe, id.name),
            );
            return;
        }
        if let Some(p) = &pipe {
            if *p != slot.pipe {
                self.pipe_err(
                    format!("`{}` belongs to pipe `{}`, not `{p}`", id.name, slot.pipe),
                    id.span,
                    "slot of another pipe",
                    &format!("write `{op}({}, {})`", slot.pipe, id.name),
                );
                return;
            }
        }
        if slot.done {
            let d = Diagnostic::new(
                codes::E0305,
                format!("slot `{}` is released twice (`{op}`)", id.name),
                self.label(id.span, "second release"),
            )
            .with_label(self.label(slot.span, "taken here"))
            .with_help("each slot is committed or released exactly once");
            self.diags.push(d);
            return;
        }
        if let Some(s) = self.slot_mut(&id.name) {
            s.done = true;
        }
    }

    fn block(&mut self, b: &Block) {
        self.slots.push(BTreeMap::new());
        for s in &b.stmts {
            self.stmt(s);
        }
        let scope = self.slots.pop().unwrap_or_default();
        for (name, slot) in scope {
            if !slot.done {
                let (op, what) = match slot.kind {
                    SlotKind::Alloc => ("tpush", "committed"),
                    SlotKind::Pop => ("tfree", "released"),
                };
                self.diags.push(
                    Diagnostic::new(
                        codes::E0305,
                        format!(
                            "slot `{name}` of pipe `{}` is never {what} in this block",
                            slot.pipe
                        ),
                        self.label(slot.span, format!("taken here, never {what}")),
                    )
                    .with_help(format!(
                        "add `{op}({}, {name})` before the end of the block that took it",
                        slot.pipe
                    )),
                );
            }
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Let { names, value, .. } => {
                let op = callee_name(value);
                if let (Some(op @ ("talloc" | "tpop")), ExprKind::Call { args, .. }) =
                    (op, &value.kind)
                {
                    let pipe = self.pipe_arg(op, args, value.span);
                    if let (Some(pipe), [n]) = (pipe, names.as_slice()) {
                        let kind = if op == "talloc" {
                            SlotKind::Alloc
                        } else {
                            SlotKind::Pop
                        };
                        if let Some(scope) = self.slots.last_mut() {
                            scope.insert(
                                n.name.clone(),
                                Slot {
                                    pipe,
                                    kind,
                                    span: n.span,
                                    done: false,
                                },
                            );
                        }
                    }
                } else {
                    self.expr(value);
                }
                for n in names {
                    self.outs.remove(&n.name);
                }
            }
            StmtKind::Var { name, value, .. } => {
                self.expr(value);
                self.outs.remove(&name.name);
            }
            StmtKind::Assign { target, op, value } => {
                self.expr(value);
                if let ExprKind::Index { indices, .. } = &target.kind {
                    indices.iter().for_each(|i| self.expr(i));
                }
                if let Some(id) = root_name(target) {
                    if op.is_some() {
                        self.read(id);
                    }
                    if let Some(slot) = self.slot(&id.name).cloned() {
                        if slot.kind == SlotKind::Pop {
                            self.pipe_err(
                                format!("`{}` was taken with `tpop` and is read-only", id.name),
                                id.span,
                                "written here",
                                "write into a slot taken with `talloc` on the producer side",
                            );
                        } else if slot.done {
                            self.pipe_err(
                                format!("`{}` is written after `tpush` committed it", id.name),
                                id.span,
                                "written after commit",
                                "finish writing the slot before `tpush`",
                            );
                        }
                    }
                    self.written.insert(id.name.clone());
                }
            }
            StmtKind::For { iter, body, .. } => {
                self.loop_bounds(iter);
                self.expr(iter);
                self.block(body);
            }
            StmtKind::When {
                branches,
                otherwise,
            } => {
                let before = self.written.clone();
                let mut all: Option<BTreeSet<String>> = None;
                for (c, b) in branches {
                    self.expr(c);
                    self.written = before.clone();
                    self.block(b);
                    all = Some(match all {
                        None => self.written.clone(),
                        Some(a) => a.intersection(&self.written).cloned().collect(),
                    });
                }
                self.written = before.clone();
                match (otherwise, all) {
                    (Some(b), Some(a)) => {
                        self.block(b);
                        self.written = a.intersection(&self.written).cloned().collect();
                    }
                    (Some(b), None) => self.block(b),
                    (None, _) => {}
                }
            }
            StmtKind::Pipe { name, args, .. } => {
                args.iter().for_each(|a| self.expr(&a.value));
                self.pipes.insert(name.name.clone());
            }
            StmtKind::Section { body, .. } => self.block(body),
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Send { value, .. } => self.expr(value),
            StmtKind::Consume { body, .. } => self.block(body),
            StmtKind::Error => {}
        }
    }
}

/// Runs the flow checks over a kernel body (relative spans, as the item's other checks).
pub fn check_kernel_flow(
    file: &FileName,
    k: &Kernel,
    consts: &BTreeMap<String, i64>,
) -> Vec<Diagnostic> {
    let KernelBody::Block(body) = &k.body else {
        return Vec::new();
    };
    let mut f = Flow {
        file,
        consts,
        outs: k
            .params
            .iter()
            .filter(|p| matches!(p.dir, Some((Direction::Out, _))))
            .map(|p| p.name.name.clone())
            .collect(),
        written: BTreeSet::new(),
        reported: BTreeSet::new(),
        pipes: BTreeSet::new(),
        slots: Vec::new(),
        diags: Vec::new(),
    };
    f.block(body);
    f.diags
}

/// Whether a block contains a recovered syntax error (an `Error` statement or expression); checks
/// that need the whole body (an `out` tile never written) are skipped then, as the syntax error
/// is already reported and the missing write may be inside the damaged part.
pub fn has_error_nodes(b: &Block) -> bool {
    struct Errors(bool);
    impl<'a> Visitor<'a> for Errors {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            self.0 |= matches!(s.kind, StmtKind::Error);
            if !self.0 {
                walk_stmt(self, s);
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            self.0 |= matches!(e.kind, ExprKind::Error);
            if !self.0 {
                walk_expr(self, e);
            }
        }
    }
    let mut v = Errors(false);
    v.visit_block(b);
    v.0
}
