//! Kernels: their parameters, extern bindings and `sim:` references, and the lowering of
//! kernel bodies (statements, expressions, sub-ranges, calls of kernel functions) to the
//! kernel IR.

use crate::{dtype, is_name, Lowerer, R};
use std::collections::BTreeMap;
use wsp_diagnostics::{Diagnostic, Label};
use wsp_ir::dtype::{DType, ScalarValue};
use wsp_ir::kernel as k;
use wsp_syntax::ast::{self, BinOp, ExprKind, StmtKind, UnOp};
use wsp_syntax::Span;
use wsp_vocab::codes;
use wsp_vocab::ops::KernelFn;

impl Lowerer {
    pub(super) fn kernel(&self, kd: &ast::Kernel) -> R<k::Kernel> {
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
