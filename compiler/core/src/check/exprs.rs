//! Expressions of every item: names (E0101), the forms of `P` (E0404), constant arithmetic and
//! index overflow (E0213), `min`/`max` arguments (E0306), and task calls against the kernel's
//! signature (E0105–E0108; views through `types::check_view`).

use super::*;

impl Checker<'_> {
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

    pub(super) fn expr(&mut self, e: &Expr) {
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
                if let ExprKind::Name(f) = &callee.kind {
                    if self.builtins == WORKLOAD_CTX
                        && self.local(&f.name).is_none()
                        && matches!(
                            self.scope.get(&f.name).map(|s| &s.symbol),
                            Some(Symbol::Kernel(_))
                        )
                    {
                        self.diags.push(
                            Diagnostic::new(
                                codes::E0109,
                                format!("kernel `{}` is called without task coordinates", f.name),
                                self.label(
                                    callee.span,
                                    "a kernel runs as a task: `[coords]` missing",
                                ),
                            )
                            .with_help(format!(
                                "a task is written `{0}[coords](param: view, ...)`: give the \
                                 loop variables that tell its instances apart (`{0}[i](..)`), or \
                                 `{0}[](..)` for a task that runs once",
                                f.name
                            ))
                            .with_fix(Fix {
                                title: format!("run `{}` as a task without coordinates", f.name),
                                edits: vec![Edit {
                                    file: self.file.clone(),
                                    span: Span::new(callee.span.end, callee.span.end),
                                    replacement: "[]".to_string(),
                                }],
                            }),
                        );
                    }
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
    pub(super) fn indices(&mut self, indices: &[Expr]) {
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
}
