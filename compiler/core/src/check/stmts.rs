//! Statements: blocks and their bindings, assignments (E0301, E0304), a name bound twice by one
//! loop header or `consume` (E0102), loop headers over axes (E0401, E0402, E0405, E0406), and
//! channel use against the process header (E0501–E0504).

use super::*;

impl Checker<'_> {
    pub(super) fn block(&mut self, b: &Block) {
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
