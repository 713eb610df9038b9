//! Local tensors of workload blocks (`let H: f32[64, 128] = scratch()`): where one may be made
//! (E0413), under which name (E0102), and where it may be named (E0414: only as the view of a
//! task argument, from its `let` to the end of its block). The scope the other checks see them
//! in is `crate::locals`.

use super::*;

impl Checker<'_> {
    /// Whether `name` here is a local tensor of the workload (not a loop variable or binding
    /// that happens to share its name).
    pub(super) fn is_local_tensor(&self, name: &str) -> bool {
        self.local_tensors.contains(name) && matches!(self.local(name), None | Some(Local::Tensor))
    }

    /// A task argument: a view of a local tensor names it where it may be named.
    pub(super) fn task_arg(&mut self, e: &Expr) {
        let (base, indices) = match &e.kind {
            ExprKind::Index { base, indices } => (&**base, indices.as_slice()),
            _ => (e, &[][..]),
        };
        match &base.kind {
            ExprKind::Name(n) if self.is_local_tensor(&n.name) => {
                self.local_tensor_use(n, true);
                self.indices(indices);
            }
            _ => self.expr(e),
        }
    }

    /// E0414: a local tensor named outside the rest of the block that makes it, or read by
    /// the orchestration (anything but the view of a task argument).
    pub(super) fn local_tensor_use(&mut self, id: &Ident, view: bool) {
        let (msg, label, help) = if self.local(&id.name) != Some(Local::Tensor) {
            (
                format!("local tensor `{}` is used outside the block that makes it", id.name),
                "not in its block",
                "a local tensor lives from its `let` to the end of its block; make it in the block where its tasks are",
            )
        } else if !view {
            (
                format!("the orchestration cannot read local tensor `{}`", id.name),
                "read by the orchestration",
                "a local tensor holds task data only: pass it to tasks as a view; for data the orchestration reads (a `when`, an index), write a global `tensor`",
            )
        } else {
            return;
        };
        self.diags
            .push(Diagnostic::new(codes::E0414, msg, self.label(id.span, label)).with_help(help));
    }

    /// E0413: a local tensor made where or as it cannot be.
    pub(super) fn misplaced_local(&mut self, span: Span, msg: String, label: &str) {
        self.diags.push(
            Diagnostic::new(codes::E0413, msg, self.label(span, label)).with_help(
                "a workload block makes a local tensor with `let H: f32[64, 128] = scratch()`: \
                 a constant shape, a fresh zeroed instance each time the block runs",
            ),
        );
    }

    /// `let H: f32[64, 128] = scratch()`: in a workload block (not a kernel or a process),
    /// with a dtype and a constant shape, under a name of its own.
    pub(super) fn local_tensor_decl(&mut self, s: &Stmt, name: &Ident, ty: &TypeExpr) {
        if self.builtins != WORKLOAD_CTX || self.in_process {
            let place = if self.in_process {
                "a process"
            } else {
                "a kernel"
            };
            self.misplaced_local(
                s.span,
                format!("a local tensor is made in a workload block, not in {place}"),
                "not in a workload",
            );
            return;
        }
        self.dtype(ty);
        match ty.dims.as_ref().filter(|d| !d.is_empty()) {
            None => self.misplaced_local(
                ty.span,
                format!("local tensor `{}` needs a shape", name.name),
                "no shape",
            ),
            Some(dims) => {
                for d in dims {
                    match crate::types::eval_int(&d.size, self.consts) {
                        Some(n) if n >= 1 => {}
                        Some(n) => self.misplaced_local(
                            d.size.span,
                            format!("a dimension of local tensor `{}` is {n}", name.name),
                            "at least 1",
                        ),
                        None => self.misplaced_local(
                            d.size.span,
                            format!(
                                "local tensor `{}` has a size that is not a constant",
                                name.name
                            ),
                            "not a constant",
                        ),
                    }
                }
            }
        }
        if self.globals.contains_key(&name.name) {
            self.diags.push(
                Diagnostic::new(
                    codes::E0102,
                    format!("local tensor `{}` has the name of a global item", name.name),
                    self.label(name.span, "defined again here"),
                )
                .with_help("give the local tensor a name of its own"),
            );
        } else if !self.made_locals.insert(name.name.clone()) {
            self.diags.push(
                Diagnostic::new(
                    codes::E0102,
                    format!("local tensor `{}` is made twice in one workload", name.name),
                    self.label(name.span, "made again here"),
                )
                .with_help("each local tensor of a workload has a name of its own"),
            );
        }
        self.bind(&name.name, Local::Tensor);
    }
}
