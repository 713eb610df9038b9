//! Workloads: their bodies (blocks, `combine`, `sequential`, `connect`), statements (loops,
//! `when`, sends, consumes, local tensors, runs), task calls and their views.

use crate::{dtype, is_name, Lowerer, R, UNSUPPORTED};
use std::collections::BTreeMap;
use wsp_ir::dtype::ScalarValue;
use wsp_ir::kernel as k;
use wsp_ir::workload as w;
use wsp_syntax::ast::{self, ExprKind, StmtKind};
use wsp_syntax::Span;

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

impl Lowerer {
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

    pub(super) fn workload(&self, wl: &ast::Workload) -> R<w::Workload> {
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

    pub(super) fn wblock(
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
}
