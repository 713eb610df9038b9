//! Structural validation of a whole [`Program`]: every id in range, every kernel valid
//! ([`crate::typing::validate`]), task calls with one argument of the right kind per kernel
//! parameter, loop variables of their owner. Backends and plugins may rely on a validated
//! program; lowering runs this in its tests.

use crate::kernel::ParamKind;
use crate::typing;
use crate::workload::*;

/// Validates `p`; returns every problem found (empty list: valid).
pub fn validate_program(p: &Program) -> Vec<String> {
    let mut c = Checker {
        p,
        errs: Vec::new(),
        open_locals: Vec::new(),
    };
    if p.version != IR_VERSION {
        c.errs.push(format!(
            "version {} (this crate understands {IR_VERSION})",
            p.version
        ));
    }
    for k in &p.kernels {
        if let Err(e) = typing::validate(k) {
            c.errs.push(e);
        }
    }
    for t in &p.tensors {
        for a in &t.shape {
            c.affine(a, 0, &format!("shape of tensor `{}`", t.name));
        }
    }
    for a in &p.axes {
        let at = format!("axis `{}`", a.name);
        match &a.kind {
            AxisKind::Dense { .. } => {}
            AxisKind::DenseDyn { size } => c.expr(size, 0, &at),
            AxisKind::Ragged {
                outer,
                lengths,
                per,
            } => {
                c.axis(*outer, &at);
                c.tensor(*lengths, &at);
                if *per == Some(0) {
                    c.errs.push(format!("{at}: `per` is at least 1"));
                }
            }
            AxisKind::Sparse {
                outer,
                indptr,
                indices,
            } => {
                c.axis(*outer, &at);
                c.tensor(*indptr, &at);
                c.tensor(*indices, &at);
            }
        }
    }
    for w in &p.workloads {
        let at = format!("workload `{}`", w.name);
        match &w.body {
            WorkloadBody::Block { stmts } => c.stmts(stmts, w.vars.len(), &at),
            WorkloadBody::Sequential { parts } | WorkloadBody::Combine { parts } => {
                for x in parts {
                    c.workload(*x, &at);
                }
            }
            WorkloadBody::Connect { processes } => {
                for x in processes {
                    if p.processes.get(x.process.index()).is_none() {
                        c.errs
                            .push(format!("{at}: process #{} does not exist", x.process.0));
                    }
                }
            }
        }
    }
    for pr in &p.processes {
        let at = format!("process `{}`", pr.name);
        for ch in pr.consumes.iter().chain(&pr.produces) {
            c.channel(*ch, &at);
        }
        c.stmts(&pr.body, pr.vars.len(), &at);
    }
    for s in &p.schedules {
        c.workload(s.workload, &format!("schedule `{}`", s.name));
    }
    for e in &p.expects {
        if let Expect::Close {
            actual, expected, ..
        } = e
        {
            c.tensor(*actual, "expect");
            if let ExpectData::Tensor { tensor } = expected {
                c.tensor(*tensor, "expect");
            }
        }
    }
    c.errs
}

struct Checker<'p> {
    p: &'p Program,
    errs: Vec<String>,
    /// The local tensors whose blocks enclose the statement being checked.
    open_locals: Vec<TensorId>,
}

impl Checker<'_> {
    fn tensor(&mut self, t: TensorId, at: &str) {
        match self.p.tensors.get(t.index()) {
            None => self
                .errs
                .push(format!("{at}: tensor #{} does not exist", t.0)),
            Some(d) if d.kind == TensorKind::Local && !self.open_locals.contains(&t) => {
                self.errs.push(format!(
                    "{at}: local tensor `{}` is used outside the block that makes it",
                    d.name
                ))
            }
            Some(_) => {}
        }
    }
    fn axis(&mut self, a: AxisId, at: &str) {
        if self.p.axes.get(a.index()).is_none() {
            self.errs
                .push(format!("{at}: axis #{} does not exist", a.0));
        }
    }
    fn workload(&mut self, w: WorkloadId, at: &str) {
        if self.p.workloads.get(w.index()).is_none() {
            self.errs
                .push(format!("{at}: workload #{} does not exist", w.0));
        }
    }
    fn channel(&mut self, ch: ChannelId, at: &str) {
        if self.p.channels.get(ch.index()).is_none() {
            self.errs
                .push(format!("{at}: channel #{} does not exist", ch.0));
        }
    }
    fn var(&mut self, v: LoopVar, nvars: usize, at: &str) {
        if v.index() >= nvars {
            self.errs.push(format!(
                "{at}: loop variable #{} is outside its owner's {nvars} variables",
                v.0
            ));
        }
    }
    fn affine(&mut self, a: &Affine, nvars: usize, at: &str) {
        for (s, _) in &a.terms {
            match s {
                Sym::Var(v) => self.var(*v, nvars, at),
                Sym::Param(p) => {
                    if self.p.params.get(p.index()).is_none() {
                        self.errs
                            .push(format!("{at}: param #{} does not exist", p.0));
                    }
                }
            }
        }
    }
    fn expr(&mut self, e: &Expr, nvars: usize, at: &str) {
        match e {
            Expr::Const { .. } => {}
            Expr::Param { param } => {
                if self.p.params.get(param.index()).is_none() {
                    self.errs
                        .push(format!("{at}: param #{} does not exist", param.0));
                }
            }
            Expr::Var { var } => self.var(*var, nvars, at),
            Expr::Elem { tensor, index } => {
                self.tensor(*tensor, at);
                for i in index {
                    self.expr(i, nvars, at);
                }
            }
            Expr::Binary { lhs, rhs, .. } => {
                self.expr(lhs, nvars, at);
                self.expr(rhs, nvars, at);
            }
            Expr::Neg { x } | Expr::Not { x } => self.expr(x, nvars, at),
        }
    }
    fn call(&mut self, call: &TaskCall, nvars: usize, at: &str) {
        let Some(k) = self.p.kernels.get(call.kernel.index()) else {
            self.errs
                .push(format!("{at}: kernel #{} does not exist", call.kernel.0));
            return;
        };
        let at = format!("{at}: call of `{}`", k.name);
        for c in &call.coords {
            self.expr(c, nvars, &at);
        }
        if call.args.len() != k.params.len() {
            self.errs.push(format!(
                "{at}: {} arguments for {} parameters",
                call.args.len(),
                k.params.len()
            ));
        }
        for (param, arg) in k.params.iter().zip(&call.args) {
            match (&param.kind, arg) {
                (ParamKind::Tile { .. }, TaskArg::View(v)) => {
                    self.tensor(v.tensor, &at);
                    for d in &v.dims {
                        match d {
                            ViewDim::Index { at: a } => self.affine(a, nvars, &at),
                            ViewDim::Slice { start, end } => {
                                self.affine(start, nvars, &at);
                                self.affine(end, nvars, &at);
                            }
                            ViewDim::Full => {}
                        }
                    }
                }
                (ParamKind::Scalar { .. }, TaskArg::Scalar { value }) => {
                    self.expr(value, nvars, &at)
                }
                _ => self.errs.push(format!(
                    "{at}: argument `{}` is of the wrong kind (view vs scalar)",
                    param.name
                )),
            }
        }
    }
    fn stmts(&mut self, stmts: &[WStmt], nvars: usize, at: &str) {
        for s in stmts {
            match s {
                WStmt::For {
                    vars, iters, body, ..
                } => {
                    for v in vars {
                        self.var(*v, nvars, at);
                    }
                    for it in iters {
                        match it {
                            Iter::Axis { axis } => self.axis(*axis, at),
                            Iter::Row { axis, row } => {
                                self.axis(*axis, at);
                                self.affine(row, nvars, at);
                            }
                            Iter::Range { start, end } => {
                                self.expr(start, nvars, at);
                                self.expr(end, nvars, at);
                            }
                        }
                    }
                    self.stmts(body, nvars, at);
                }
                WStmt::When {
                    branches,
                    otherwise,
                } => {
                    for b in branches {
                        self.expr(&b.cond, nvars, at);
                        self.stmts(&b.body, nvars, at);
                    }
                    self.stmts(otherwise, nvars, at);
                }
                WStmt::Call(call) => self.call(call, nvars, at),
                WStmt::Run { workload } => self.workload(*workload, at),
                WStmt::Send { channel, payload } => {
                    self.channel(*channel, at);
                    match payload {
                        SendPayload::Task(call) => self.call(call, nvars, at),
                        SendPayload::Values { values } => {
                            for v in values {
                                self.expr(v, nvars, at);
                            }
                        }
                    }
                }
                WStmt::Consume {
                    channel,
                    bindings,
                    body,
                } => {
                    self.channel(*channel, at);
                    for v in bindings {
                        self.var(*v, nvars, at);
                    }
                    self.stmts(body, nvars, at);
                }
                WStmt::Local { tensor, body } => {
                    match self.p.tensors.get(tensor.index()) {
                        Some(d) if d.kind == TensorKind::Local => {
                            if d.shape.iter().any(|a| !a.terms.is_empty()) {
                                self.errs.push(format!(
                                    "{at}: local tensor `{}` has a shape that is not constant",
                                    d.name
                                ));
                            }
                        }
                        Some(d) => self.errs.push(format!(
                            "{at}: tensor `{}` is made by a block but is not local",
                            d.name
                        )),
                        None => self.tensor(*tensor, at),
                    }
                    self.open_locals.push(*tensor);
                    self.stmts(body, nvars, at);
                    self.open_locals.pop();
                }
            }
        }
    }
}
