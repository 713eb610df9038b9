//! Cranelift lowering of one workload body or process body into a resumable step function.
//!
//! The function is `step(slots: *mut i64, ctx: *mut Ctx) -> i64` (0: finished, 1: progress,
//! 2: blocked, −1: error, its message in the context). All state lives in the slot block, never
//! in registers across a callback that may yield, so a process body can return after one
//! visible action and resume at the same point: slot 0 holds the resume point, which the entry
//! dispatches on (`br_table`). Slots `1 ..` hold, per loop variable, its value, whether it is
//! bound, and the axis it was last bound from (−1: none); then per-site scratch (loop counters,
//! tuple and task argument values).
//!
//! The code mirrors [`wsp_ir::exec`] statement by statement: the same reads are synchronised
//! in the same order, a `for` whose iterators read tensor data materialises its iteration
//! tuples at entry and the others count level by level (exactly as the interpreter does, so
//! data reads and errors happen in the same order), and order events, tasks, sends and
//! receives reach the host in the same sequence.

use super::{CallSite, Fail, SiteArg, Ty};
use cranelift::codegen::ir::{BlockArg, FuncRef};
use cranelift::codegen::isa::TargetFrontendConfig;
use cranelift::prelude::*;
use wsp_ir::exec::{chan_name, counted_loop, expr_reads, iter_reads, MAX_LOOP_ITERATIONS};
use wsp_ir::kernel::ParamKind;
use wsp_ir::workload::*;
use wsp_ir::ScalarValue;

/// Imported host callbacks (see `super::callbacks`).
pub(super) struct Cb {
    pub sync: FuncRef,
    pub order: FuncRef,
    pub begin: FuncRef,
    pub view: FuncRef,
    pub task: FuncRef,
    pub run: FuncRef,
    pub send: FuncRef,
    pub recv: FuncRef,
    pub elem: FuncRef,
    pub ragged: FuncRef,
    pub span: FuncRef,
    pub col: FuncRef,
    pub clear: FuncRef,
    pub push: FuncRef,
    pub tuple: FuncRef,
    pub data: FuncRef,
    pub fail: FuncRef,
    pub fmod: FuncRef,
    pub fmin: FuncRef,
    pub fmax: FuncRef,
    pub local: FuncRef,
}

/// Order events (`super::callbacks::order`).
pub(super) const BEGIN_PAR: i64 = 0;
pub(super) const BEGIN_SEQ: i64 = 1;
pub(super) const STEP: i64 = 2;
pub(super) const END: i64 = 3;

/// Step results.
pub(super) const DONE: i64 = 0;
pub(super) const PROGRESS: i64 = 1;
pub(super) const BLOCKED: i64 = 2;

/// Static facts the lowering needs about the run.
pub(super) struct Facts<'a> {
    pub p: &'a Program,
    pub params: &'a [ScalarValue],
    /// Per tensor: the type of its elements as `Expr::Elem` reads them, and its rank.
    pub tensors: &'a [(Ty, usize)],
}

pub(super) struct Gen<'a, 'f> {
    pub f: &'a Facts<'a>,
    pub b: FunctionBuilder<'f>,
    pub cb: Cb,
    pub slots: Value,
    pub ctx: Value,
    /// A process body (yields after each visible action, channels allowed).
    pub process: bool,
    pub var_names: &'a [String],
    pub next_slot: usize,
    pub nbufs: usize,
    pub resume: Vec<Block>,
    pub err: Block,
    /// Loop variables bound on every path to the current point.
    pub bound: Vec<bool>,
    /// While generating a `for`'s tuples: its variables and the slot of each position, and
    /// how many positions are bound.
    pub gen: Option<(Vec<LoopVar>, usize, usize)>,
    pub fails: &'a mut Vec<Fail>,
    pub calls: &'a mut Vec<CallSite>,
}

type R<T> = Result<T, String>;

fn mf() -> MemFlagsData {
    MemFlagsData::trusted()
}

impl Gen<'_, '_> {
    pub fn nvars(&self) -> usize {
        self.var_names.len()
    }
    fn val_slot(&self, v: usize) -> usize {
        1 + v
    }
    fn flag_slot(&self, v: usize) -> usize {
        1 + self.nvars() + v
    }
    fn axis_slot(&self, v: usize) -> usize {
        1 + 2 * self.nvars() + v
    }
    fn alloc(&mut self, n: usize) -> usize {
        let s = self.next_slot;
        self.next_slot += n;
        s
    }
    fn ld(&mut self, slot: usize) -> Value {
        self.b
            .ins()
            .load(types::I64, mf(), self.slots, (slot * 8) as i32)
    }
    fn st(&mut self, slot: usize, v: Value) {
        self.b.ins().store(mf(), v, self.slots, (slot * 8) as i32);
    }
    fn stc(&mut self, slot: usize, c: i64) {
        let v = self.b.ins().iconst(types::I64, c);
        self.st(slot, v);
    }
    fn c(&mut self, c: i64) -> Value {
        self.b.ins().iconst(types::I64, c)
    }
    fn slot_addr(&mut self, slot: usize) -> Value {
        self.b.ins().iadd_imm_s(self.slots, (slot * 8) as i64)
    }
    fn call(&mut self, f: FuncRef, args: &[Value]) -> Value {
        let c = self.b.ins().call(f, args);
        self.b.inst_results(c)[0]
    }
    /// Calls a host callback and leaves with an error when it returns non-zero.
    fn checked(&mut self, f: FuncRef, args: &[Value]) {
        let mut a = vec![self.ctx];
        a.extend_from_slice(args);
        let st = self.call(f, &a);
        self.bail_if(st);
    }
    /// Leaves with an error when `cond` is non-zero.
    fn bail_if(&mut self, cond: Value) {
        let cont = self.b.create_block();
        self.b.ins().brif(cond, self.err, &[], cont, &[]);
        self.b.switch_to_block(cont);
    }
    /// Reports failure `fail` (with values `a`, `b`) and leaves.
    fn fail(&mut self, fail: Fail, a: Value, b: Value) {
        let id = self.fails.len() as i64;
        self.fails.push(fail);
        let id = self.c(id);
        let args = [self.ctx, id, a, b];
        self.call(self.cb.fail, &args);
        self.b.ins().jump(self.err, &[]);
        let dead = self.b.create_block();
        self.b.switch_to_block(dead);
    }
    fn fail0(&mut self, fail: Fail) {
        let z = self.c(0);
        self.fail(fail, z, z);
    }
    /// Fails when `cond` holds.
    fn fail_if(&mut self, cond: Value, fail: Fail, a: Value, b: Value) {
        let bad = self.b.create_block();
        let cont = self.b.create_block();
        self.b.ins().brif(cond, bad, &[], cont, &[]);
        self.b.switch_to_block(bad);
        self.fail(fail, a, b);
        self.b.ins().jump(cont, &[]);
        self.b.switch_to_block(cont);
    }
    /// Returns `code` and resumes here on the next call.
    fn yield_(&mut self, code: i64) {
        let rb = self.b.create_block();
        let id = self.resume.len() as i64;
        self.resume.push(rb);
        self.stc(0, id);
        let c = self.c(code);
        self.b.ins().return_(&[c]);
        self.b.switch_to_block(rb);
    }
    fn order(&mut self, ev: i64) {
        let e = self.c(ev);
        self.checked(self.cb.order, &[e]);
    }
    fn sync(&mut self, reads: &[TensorId]) {
        for t in reads {
            let t = self.c(i64::from(t.0));
            self.checked(self.cb.sync, &[t]);
        }
    }

    // ------------------------------------------------------------------- expressions

    fn var_name(&self, v: LoopVar) -> String {
        self.var_names
            .get(v.index())
            .cloned()
            .unwrap_or_else(|| "?".into())
    }

    fn var(&mut self, v: LoopVar) -> R<Value> {
        if v.index() >= self.nvars() {
            return Err(format!("loop variable #{} does not exist", v.0));
        }
        if let Some((vars, base, filled)) = &self.gen {
            if let Some(pos) = vars.iter().position(|x| *x == v) {
                if pos < *filled {
                    let s = base + pos;
                    return Ok(self.ld(s));
                }
                return Err(format!(
                    "a loop iterator reads `{}`, a variable the same loop binds later",
                    self.var_name(v)
                ));
            }
        }
        if !self.bound[v.index()] {
            let f = self.flag_slot(v.index());
            let flag = self.ld(f);
            let unbound = self.b.ins().icmp_imm_s(IntCC::Equal, flag, 0);
            let z = self.c(0);
            self.fail_if(unbound, Fail::Unbound(self.var_name(v)), z, z);
        }
        let s = self.val_slot(v.index());
        Ok(self.ld(s))
    }

    fn param_int(&mut self, p: ProgParamId) -> Option<i64> {
        match self.f.params.get(p.index()) {
            Some(ScalarValue::Int(i)) => Some(*i),
            Some(ScalarValue::UInt(u)) => Some(i64::try_from(*u).unwrap_or(i64::MAX)),
            _ => None,
        }
    }

    /// An affine index: checked arithmetic as the interpreter's (overflow is an error).
    fn affine(&mut self, a: &Affine) -> R<Value> {
        let mut acc = self.c(a.constant);
        for (s, c) in &a.terms {
            let v = match s {
                Sym::Var(v) => self.var(*v)?,
                Sym::Param(p) => match self.param_int(*p) {
                    Some(x) => self.c(x),
                    None => {
                        self.fail0(Fail::Plain(format!("param #{} is not an integer", p.0)));
                        self.c(0)
                    }
                },
            };
            let k = self.c(*c);
            let (t, o1) = self.b.ins().smul_overflow(v, k);
            let (sum, o2) = self.b.ins().sadd_overflow(acc, t);
            let o = self.b.ins().bor(o1, o2);
            let z = self.c(0);
            self.fail_if(
                o,
                Fail::Plain("overflow in an index expression".into()),
                z,
                z,
            );
            acc = sum;
        }
        Ok(acc)
    }

    fn scalar_const(&mut self, v: ScalarValue) -> (Ty, Value) {
        match v {
            ScalarValue::Int(i) => (Ty::I, self.c(i)),
            ScalarValue::UInt(u) => (Ty::I, self.c(i64::try_from(u).unwrap_or(i64::MAX))),
            ScalarValue::Float(f) => (Ty::F, self.b.ins().f64const(f)),
            ScalarValue::Bool(b) => (Ty::B, self.c(i64::from(b))),
        }
    }

    /// The value as i64 bits (floats by their bits), for the host.
    fn bits(&mut self, ty: Ty, v: Value) -> Value {
        match ty {
            Ty::F => self.b.ins().bitcast(types::I64, MemFlagsData::new(), v),
            Ty::I | Ty::B => v,
        }
    }

    pub fn expr(&mut self, e: &Expr) -> R<(Ty, Value)> {
        Ok(match e {
            Expr::Const { value } => self.scalar_const(*value),
            Expr::Param { param } => match self.f.params.get(param.index()) {
                Some(v) => self.scalar_const(*v),
                None => return Err(format!("param #{} does not exist", param.0)),
            },
            Expr::Var { var } => (Ty::I, self.var(*var)?),
            Expr::Elem { tensor, index } => {
                let (ty, _) = *self
                    .f
                    .tensors
                    .get(tensor.index())
                    .ok_or_else(|| format!("tensor #{} does not exist", tensor.0))?;
                let base = self.alloc(index.len() + 1);
                for (i, x) in index.iter().enumerate() {
                    let v = self.int(x, "a tensor index")?;
                    self.st(base + 1 + i, v);
                }
                let t = self.c(i64::from(tensor.0));
                let ip = self.slot_addr(base + 1);
                let n = self.c(index.len() as i64);
                let out = self.slot_addr(base);
                self.checked(self.cb.elem, &[t, ip, n, out]);
                let v = self.ld(base);
                match ty {
                    Ty::F => (
                        Ty::F,
                        self.b.ins().bitcast(types::F64, MemFlagsData::new(), v),
                    ),
                    t => (t, v),
                }
            }
            Expr::Neg { x } => match self.expr(x)? {
                (Ty::I, v) => (Ty::I, self.b.ins().ineg(v)),
                (Ty::F, v) => (Ty::F, self.b.ins().fneg(v)),
                (Ty::B, v) => {
                    self.fail0(Fail::Plain("negation of a bool".into()));
                    (Ty::B, v)
                }
            },
            Expr::Not { x } => match self.expr(x)? {
                (Ty::B, v) => (Ty::B, self.b.ins().bxor_imm_s(v, 1)),
                (t, v) => {
                    self.fail0(Fail::Plain("`!` of a number".into()));
                    (t, v)
                }
            },
            Expr::Binary { op, lhs, rhs } => {
                let a = self.expr(lhs)?;
                let b = self.expr(rhs)?;
                self.binop(*op, a, b)
            }
        })
    }

    fn binop(&mut self, op: ExprOp, (ta, a): (Ty, Value), (tb, b): (Ty, Value)) -> (Ty, Value) {
        use ExprOp::*;
        let bool_of = |g: &mut Self, c: Value| (Ty::B, g.b.ins().uextend(types::I64, c));
        match (ta, tb) {
            (Ty::I, Ty::I) => {
                let ins = |g: &mut Self, cc: IntCC| {
                    let c = g.b.ins().icmp(cc, a, b);
                    bool_of(g, c)
                };
                match op {
                    Add => (Ty::I, self.b.ins().iadd(a, b)),
                    Sub => (Ty::I, self.b.ins().isub(a, b)),
                    Mul => (Ty::I, self.b.ins().imul(a, b)),
                    Div | Rem => {
                        let zero = self.b.ins().icmp_imm_s(IntCC::Equal, b, 0);
                        let z = self.c(0);
                        self.fail_if(
                            zero,
                            Fail::InThread("integer division by zero".into()),
                            z,
                            z,
                        );
                        // Wrapping: x / −1 is −x (and x % −1 is 0) without trapping.
                        let m1 = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
                        let one = self.c(1);
                        let safe = self.b.ins().select(m1, one, b);
                        if op == Div {
                            let q = self.b.ins().sdiv(a, safe);
                            let n = self.b.ins().ineg(a);
                            (Ty::I, self.b.ins().select(m1, n, q))
                        } else {
                            let r = self.b.ins().srem(a, safe);
                            (Ty::I, self.b.ins().select(m1, z, r))
                        }
                    }
                    Min => (Ty::I, self.b.ins().smin(a, b)),
                    Max => (Ty::I, self.b.ins().smax(a, b)),
                    Eq => ins(self, IntCC::Equal),
                    Ne => ins(self, IntCC::NotEqual),
                    Lt => ins(self, IntCC::SignedLessThan),
                    Le => ins(self, IntCC::SignedLessThanOrEqual),
                    Gt => ins(self, IntCC::SignedGreaterThan),
                    Ge => ins(self, IntCC::SignedGreaterThanOrEqual),
                    And | Or => {
                        self.fail0(Fail::InThread("`&&`/`||` on integers".into()));
                        (Ty::I, a)
                    }
                }
            }
            (Ty::B, Ty::B) => match op {
                And => (Ty::B, self.b.ins().band(a, b)),
                Or => (Ty::B, self.b.ins().bor(a, b)),
                Eq => {
                    let c = self.b.ins().icmp(IntCC::Equal, a, b);
                    bool_of(self, c)
                }
                Ne => {
                    let c = self.b.ins().icmp(IntCC::NotEqual, a, b);
                    bool_of(self, c)
                }
                _ => {
                    self.fail0(Fail::InThread(format!("{op:?} on bools")));
                    (Ty::B, a)
                }
            },
            (Ty::B, _) | (_, Ty::B) => {
                self.fail0(Fail::InThread(format!("{op:?} mixes a bool and a number")));
                (Ty::B, self.c(0))
            }
            _ => {
                let f = |g: &mut Self, t: Ty, v: Value| match t {
                    Ty::I => g.b.ins().fcvt_from_sint(types::F64, v),
                    _ => v,
                };
                let (x, y) = (f(self, ta, a), f(self, tb, b));
                let cmp = |g: &mut Self, cc: FloatCC| {
                    let c = g.b.ins().fcmp(cc, x, y);
                    bool_of(g, c)
                };
                match op {
                    Add => (Ty::F, self.b.ins().fadd(x, y)),
                    Sub => (Ty::F, self.b.ins().fsub(x, y)),
                    Mul => (Ty::F, self.b.ins().fmul(x, y)),
                    Div => (Ty::F, self.b.ins().fdiv(x, y)),
                    Rem => (Ty::F, self.call(self.cb.fmod, &[x, y])),
                    Min => (Ty::F, self.call(self.cb.fmin, &[x, y])),
                    Max => (Ty::F, self.call(self.cb.fmax, &[x, y])),
                    Eq => cmp(self, FloatCC::Equal),
                    Ne => cmp(self, FloatCC::NotEqual),
                    Lt => cmp(self, FloatCC::LessThan),
                    Le => cmp(self, FloatCC::LessThanOrEqual),
                    Gt => cmp(self, FloatCC::GreaterThan),
                    Ge => cmp(self, FloatCC::GreaterThanOrEqual),
                    And | Or => {
                        self.fail0(Fail::InThread("`&&`/`||` on numbers".into()));
                        (Ty::F, x)
                    }
                }
            }
        }
    }

    /// An integer expression (`what` names it in the error when it is not one).
    fn int(&mut self, e: &Expr, what: &'static str) -> R<Value> {
        let (t, v) = self.expr(e)?;
        if t != Ty::I {
            let k = self.c(t as i64);
            let bits = self.bits(t, v);
            self.fail(Fail::NotInt(what), k, bits);
            return Ok(self.c(0));
        }
        Ok(v)
    }

    // ------------------------------------------------------------------- statements

    pub fn block(&mut self, stmts: &[WStmt]) -> R<()> {
        for s in stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn channel_ok(&self, c: ChannelId) -> R<()> {
        if c.index() < self.f.p.channels.len() {
            Ok(())
        } else {
            Err(format!("channel #{} does not exist", c.0))
        }
    }

    fn stmt(&mut self, s: &WStmt) -> R<()> {
        match s {
            WStmt::For {
                kind,
                vars,
                iters,
                body,
            } => self.for_(*kind, vars, iters, body)?,
            WStmt::When {
                branches,
                otherwise,
            } => {
                let mut reads = Vec::new();
                for br in branches {
                    expr_reads(&br.cond, &mut reads);
                }
                self.sync(&reads);
                let join = self.b.create_block();
                let saved = self.bound.clone();
                for br in branches {
                    let (t, c) = self.expr(&br.cond)?;
                    let c = if t != Ty::B {
                        let k = self.c(t as i64);
                        let bits = self.bits(t, c);
                        self.fail(Fail::NotBool, k, bits);
                        self.c(0)
                    } else {
                        c
                    };
                    let then = self.b.create_block();
                    let next = self.b.create_block();
                    self.b.ins().brif(c, then, &[], next, &[]);
                    self.b.switch_to_block(then);
                    self.branch_body(&br.body)?;
                    self.bound.clone_from(&saved);
                    self.b.ins().jump(join, &[]);
                    self.b.switch_to_block(next);
                }
                self.branch_body(otherwise)?;
                self.bound = saved;
                self.b.ins().jump(join, &[]);
                self.b.switch_to_block(join);
            }
            WStmt::Call(call) => {
                self.task(call)?;
                if self.process {
                    self.yield_(PROGRESS);
                }
            }
            WStmt::Local { tensor, body } => {
                if tensor.index() >= self.f.p.tensors.len() {
                    return Err(format!("tensor #{} does not exist", tensor.0));
                }
                let t = self.c(i64::from(tensor.0));
                let begin = self.c(1);
                self.checked(self.cb.local, &[t, begin]);
                self.block(body)?;
                let t = self.c(i64::from(tensor.0));
                let end = self.c(0);
                self.checked(self.cb.local, &[t, end]);
            }
            WStmt::Run { workload } => {
                if workload.index() >= self.f.p.workloads.len() {
                    return Err(format!("workload #{} does not exist", workload.0));
                }
                let w = self.c(i64::from(workload.0));
                self.checked(self.cb.run, &[w]);
                if self.process {
                    self.yield_(PROGRESS);
                }
            }
            WStmt::Send { channel, payload } => {
                self.channel_ok(*channel)?;
                if !self.process {
                    self.fail0(Fail::InThread(format!(
                        "`send` on channel `{}` outside a `connect` of its processes",
                        chan_name(self.f.p, *channel)
                    )));
                    return Ok(());
                }
                let (slot, n, after) = match payload {
                    SendPayload::Task(call) => {
                        let site = self.task(call)?;
                        (self.calls[site].coords, call.coords.len(), 1)
                    }
                    SendPayload::Values { values } => {
                        let mut reads = Vec::new();
                        values.iter().for_each(|e| expr_reads(e, &mut reads));
                        self.sync(&reads);
                        let base = self.alloc(values.len());
                        for (i, e) in values.iter().enumerate() {
                            let v = self.int(e, "a sent value")?;
                            self.st(base + i, v);
                        }
                        (base, values.len(), 0)
                    }
                };
                let ch = self.c(i64::from(channel.0));
                let ptr = self.slot_addr(slot);
                let n = self.c(n as i64);
                let after = self.c(after);
                self.checked(self.cb.send, &[ch, ptr, n, after]);
                self.yield_(PROGRESS);
            }
            WStmt::Consume {
                channel,
                bindings,
                body,
            } => {
                self.channel_ok(*channel)?;
                if !self.process {
                    self.fail0(Fail::InThread(format!(
                        "`consume` on channel `{}` outside a `connect` of its processes",
                        chan_name(self.f.p, *channel)
                    )));
                    return Ok(());
                }
                for v in bindings {
                    if v.index() >= self.nvars() {
                        return Err(format!("loop variable #{} does not exist", v.0));
                    }
                }
                let buf = self.alloc(bindings.len().max(1));
                let head = self.b.create_block();
                let exit = self.b.create_block();
                self.b.ins().jump(head, &[]);
                // The head is also a resume point: a blocked receive returns and retries here.
                let id = self.resume.len() as i64;
                self.resume.push(head);
                self.b.switch_to_block(head);
                let ch = self.c(i64::from(channel.0));
                let ptr = self.slot_addr(buf);
                let n = self.c(bindings.len() as i64);
                let st = self.call(self.cb.recv, &[self.ctx, ch, ptr, n]);
                let got = self.b.create_block();
                let not = self.b.create_block();
                self.b.ins().brif(st, not, &[], got, &[]);
                self.b.switch_to_block(not);
                let closed = self.b.create_block();
                let other = self.b.create_block();
                let is_closed = self.b.ins().icmp_imm_s(IntCC::Equal, st, 1);
                self.b.ins().brif(is_closed, closed, &[], other, &[]);
                self.b.switch_to_block(closed);
                self.b.ins().jump(exit, &[]);
                self.b.switch_to_block(other);
                let blocked = self.b.create_block();
                let is_blocked = self.b.ins().icmp_imm_s(IntCC::Equal, st, 2);
                self.b.ins().brif(is_blocked, blocked, &[], self.err, &[]);
                self.b.switch_to_block(blocked);
                self.stc(0, id);
                let c = self.c(BLOCKED);
                self.b.ins().return_(&[c]);
                self.b.switch_to_block(got);
                let saved = self.bound.clone();
                for (i, v) in bindings.iter().enumerate() {
                    let x = self.ld(buf + i);
                    let (vs, fs) = (self.val_slot(v.index()), self.flag_slot(v.index()));
                    self.st(vs, x);
                    self.stc(fs, 1);
                    self.bound[v.index()] = true;
                }
                self.yield_(PROGRESS);
                self.block(body)?;
                self.bound = saved;
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(exit);
            }
        }
        Ok(())
    }

    /// A chosen `when` branch: its own order group.
    fn branch_body(&mut self, body: &[WStmt]) -> R<()> {
        if !self.process {
            self.order(BEGIN_PAR);
        }
        self.block(body)?;
        if !self.process {
            self.order(END);
        }
        Ok(())
    }

    /// Evaluates a task's coordinates and arguments and submits it; returns its site.
    fn task(&mut self, call: &TaskCall) -> R<usize> {
        let k = self
            .f
            .p
            .kernel(call.kernel)
            .ok_or_else(|| format!("kernel #{} does not exist", call.kernel.0))?;
        if call.args.len() != k.params.len() {
            return Err(format!(
                "a call of `{}` has {} arguments for {} parameters",
                k.name,
                call.args.len(),
                k.params.len()
            ));
        }
        let mut reads = Vec::new();
        call.coords.iter().for_each(|c| expr_reads(c, &mut reads));
        for a in &call.args {
            if let TaskArg::Scalar { value } = a {
                expr_reads(value, &mut reads);
            }
        }
        self.sync(&reads);
        let coords = self.alloc(call.coords.len());
        for (i, c) in call.coords.iter().enumerate() {
            let v = self.int(c, "a task coordinate")?;
            self.st(coords + i, v);
        }
        let site = self.calls.len();
        self.calls.push(CallSite {
            call: call.clone(),
            coords,
            args: Vec::new(),
        });
        let s = self.c(site as i64);
        self.checked(self.cb.begin, &[s]);
        let mut args = Vec::new();
        for (i, (param, arg)) in k.params.iter().zip(&call.args).enumerate() {
            match (&param.kind, arg) {
                (ParamKind::Tile { .. }, TaskArg::View(view)) => {
                    let &(_, rank) = self
                        .f
                        .tensors
                        .get(view.tensor.index())
                        .ok_or_else(|| format!("tensor #{} does not exist", view.tensor.0))?;
                    let base = self.alloc(2 * rank);
                    for (d, vd) in view.dims.iter().take(rank).enumerate() {
                        match vd {
                            ViewDim::Index { at } => {
                                let v = self.affine(at)?;
                                self.st(base + 2 * d, v);
                            }
                            ViewDim::Slice { start, end } => {
                                let v = self.affine(start)?;
                                self.st(base + 2 * d, v);
                                let v = self.affine(end)?;
                                self.st(base + 2 * d + 1, v);
                            }
                            ViewDim::Full => {}
                        }
                    }
                    args.push(SiteArg::View { base });
                    let s = self.c(site as i64);
                    let a = self.c(i as i64);
                    self.checked(self.cb.view, &[s, a]);
                }
                (ParamKind::Scalar { .. }, TaskArg::Scalar { value }) => {
                    let (t, v) = self.expr(value)?;
                    let slot = self.alloc(1);
                    let bits = self.bits(t, v);
                    self.st(slot, bits);
                    args.push(SiteArg::Scalar { slot, ty: t });
                }
                _ => {
                    return Err(format!(
                        "argument `{}` of a call of `{}` is of the wrong kind (view vs scalar)",
                        param.name, k.name
                    ))
                }
            }
        }
        self.calls[site].args = args;
        let s = self.c(site as i64);
        self.checked(self.cb.task, &[s]);
        Ok(site)
    }

    fn axis(&self, a: AxisId) -> R<&Axis> {
        self.f
            .p
            .axes
            .get(a.index())
            .ok_or_else(|| format!("axis #{} does not exist", a.0))
    }

    fn for_(&mut self, kind: LoopKind, vars: &[LoopVar], iters: &[Iter], body: &[WStmt]) -> R<()> {
        // Static shape: as many variables as the iterators bind, each once, all existing.
        let mut binds = Vec::new();
        for it in iters {
            match it {
                Iter::Axis { axis } => match self.axis(*axis)?.kind {
                    AxisKind::Ragged { outer, .. } | AxisKind::Sparse { outer, .. } => {
                        binds.push(Some(outer));
                        binds.push(Some(*axis));
                    }
                    _ => binds.push(Some(*axis)),
                },
                Iter::Row { axis, .. } => {
                    self.axis(*axis)?;
                    binds.push(Some(*axis));
                }
                Iter::Range { .. } => binds.push(None),
            }
        }
        if binds.len() != vars.len() {
            return Err(format!(
                "a loop binds {} variables but its iterators give {}",
                vars.len(),
                binds.len()
            ));
        }
        for (i, v) in vars.iter().enumerate() {
            if v.index() >= self.nvars() || vars[..i].contains(v) {
                return Err(format!(
                    "a loop binds variable #{} twice or not at all",
                    v.0
                ));
            }
        }
        let mut reads = Vec::new();
        for it in iters {
            iter_reads(self.f.p, it, &mut reads);
        }
        self.sync(&reads);
        // The variables' axes before the loop, restored when it ends: a task after the loop
        // is not inside it (its schedule key cannot read the loop's last values).
        let outer_axes = self.alloc(vars.len().max(1));
        for (i, (v, a)) in vars.iter().zip(&binds).enumerate() {
            let s = self.axis_slot(v.index());
            let old = self.ld(s);
            self.st(outer_axes + i, old);
            self.stc(s, a.map(|a| i64::from(a.0)).unwrap_or(-1));
        }
        let nv = vars.len();
        // Iterators whose bounds read no tensor data (Dense and DenseDyn axes, ranges) run as
        // nested counted loops around the body: the same tuples in the same order as the
        // materialised form below, with memory that does not grow with the iteration space.
        if counted_loop(self.f.p, iters, &reads) {
            if !self.process {
                self.order(if kind == LoopKind::Sequential {
                    BEGIN_SEQ
                } else {
                    BEGIN_PAR
                });
            }
            let at = Direct {
                tup: self.alloc(nv.max(1)),
                count: self.alloc(1),
            };
            self.stc(at.count, 0);
            let outer_gen = self.gen.replace((vars.to_vec(), at.tup, 0));
            let r = self.nest(iters, 0, at, body, &outer_gen);
            self.gen = outer_gen;
            r?;
        } else {
            self.materialised(kind, vars, iters, body)?;
        }
        for (i, v) in vars.iter().enumerate() {
            let old = self.ld(outer_axes + i);
            self.st(self.axis_slot(v.index()), old);
        }
        if !self.process {
            self.order(END);
        }
        Ok(())
    }

    /// Level `k` of a direct loop (see `for_`): binds position `pos` of the tuple, and at the
    /// last level runs one iteration of `body`.
    fn nest(
        &mut self,
        iters: &[Iter],
        k: usize,
        at: Direct,
        body: &[WStmt],
        outer_gen: &Option<(Vec<LoopVar>, usize, usize)>,
    ) -> R<()> {
        let Direct { tup, count } = at;
        let pos = self.gen.as_ref().map(|g| g.2).unwrap_or(0);
        let Some(it) = iters.get(k) else {
            let Some((vars, ..)) = self.gen.clone() else {
                return Err("a loop level outside its loop".into());
            };
            // The interpreter's bound on one loop's iterations.
            let n = self.ld(count);
            let over = self.b.ins().icmp_imm_s(
                IntCC::SignedGreaterThanOrEqual,
                n,
                MAX_LOOP_ITERATIONS as i64,
            );
            let msg = format!("a loop has more than {MAX_LOOP_ITERATIONS} iterations");
            self.fail_if(over, Fail::InThread(msg), n, n);
            let n1 = self.b.ins().iadd_imm_s(n, 1);
            self.st(count, n1);
            let values: Vec<Value> = (0..vars.len()).map(|i| self.ld(tup + i)).collect();
            let first = self.b.ins().icmp_imm_s(IntCC::Equal, n, 0);
            // The body resolves variables as the enclosing code does.
            let gen = std::mem::replace(&mut self.gen, outer_gen.clone());
            let r = self.iteration(&vars, &values, first, body);
            self.gen = gen;
            return r;
        };
        let (start, end) = match it {
            Iter::Range { start, end } => {
                let s = self.int(start, "a range start")?;
                let e = self.int(end, "a range end")?;
                self.range_ok(s, e);
                (s, e)
            }
            Iter::Axis { axis } => (self.c(0), self.flat(*axis)?),
            Iter::Row { .. } => return Err("a row iterator in a direct loop".into()),
        };
        self.counted(start, end, &mut |g, i| {
            g.bind_gen(tup, pos, i);
            g.set_filled(pos + 1);
            let r = g.nest(iters, k + 1, at, body, outer_gen);
            g.set_filled(pos);
            r
        })
    }

    /// A loop whose iterators read tensor data (or iterate rows): every tuple is generated
    /// first, then the body runs once per tuple.
    fn materialised(
        &mut self,
        kind: LoopKind,
        vars: &[LoopVar],
        iters: &[Iter],
        body: &[WStmt],
    ) -> R<()> {
        // Materialise the tuples.
        let nv = vars.len();
        let tbuf = self.nbufs as i64;
        self.nbufs += 1;
        let tup = self.alloc(nv.max(1));
        let t = self.c(tbuf);
        self.checked(self.cb.clear, &[t]);
        let outer_gen = self.gen.replace((vars.to_vec(), tup, 0));
        let r = self.level(iters, 0, tbuf, tup, nv);
        self.gen = outer_gen;
        r?;
        let ls = self.alloc(3); // data pointer, tuple count, next
        let t = self.c(tbuf);
        let lenp = self.slot_addr(ls + 1);
        let ptr = self.call(self.cb.data, &[self.ctx, t, lenp]);
        self.st(ls, ptr);
        if nv > 0 {
            let len = self.ld(ls + 1);
            let cnt = self.b.ins().udiv_imm_u(len, nv as i64);
            self.st(ls + 1, cnt);
        }
        self.stc(ls + 2, 0);
        if !self.process {
            self.order(if kind == LoopKind::Sequential {
                BEGIN_SEQ
            } else {
                BEGIN_PAR
            });
        }
        let head = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let next = self.ld(ls + 2);
        let cnt = self.ld(ls + 1);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, next, cnt);
        let go = self.b.create_block();
        self.b.ins().brif(more, go, &[], exit, &[]);
        self.b.switch_to_block(go);
        let ptr = self.ld(ls);
        let off = self.b.ins().imul_imm_s(next, (nv * 8) as i64);
        let row = self.b.ins().iadd(ptr, off);
        let values: Vec<Value> = (0..nv)
            .map(|i| self.b.ins().load(types::I64, mf(), row, (i * 8) as i32))
            .collect();
        let n1 = self.b.ins().iadd_imm_s(next, 1);
        self.st(ls + 2, n1);
        let first = self.b.ins().icmp_imm_s(IntCC::Equal, next, 0);
        self.iteration(vars, &values, first, body)?;
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// One iteration of a loop: `values` into its variables (bound for the body), the order
    /// events (a step between iterations; `first` is nonzero on the first), the body.
    fn iteration(
        &mut self,
        vars: &[LoopVar],
        values: &[Value],
        first: Value,
        body: &[WStmt],
    ) -> R<()> {
        let saved = self.bound.clone();
        for (v, &x) in vars.iter().zip(values) {
            let (vs, fs) = (self.val_slot(v.index()), self.flag_slot(v.index()));
            self.st(vs, x);
            self.stc(fs, 1);
            self.bound[v.index()] = true;
        }
        if !self.process {
            let step = self.b.create_block();
            let cont = self.b.create_block();
            self.b.ins().brif(first, cont, &[], step, &[]);
            self.b.switch_to_block(step);
            self.order(STEP);
            self.b.ins().jump(cont, &[]);
            self.b.switch_to_block(cont);
            self.order(BEGIN_PAR);
        }
        self.block(body)?;
        if !self.process {
            self.order(END);
        }
        self.bound = saved;
        Ok(())
    }

    fn set_filled(&mut self, n: usize) {
        if let Some(x) = self.gen.as_mut() {
            x.2 = n;
        }
    }

    /// Fails the run when the range `[s, e)` overflows or has more than
    /// `MAX_LOOP_ITERATIONS` iterations.
    fn range_ok(&mut self, s: Value, e: Value) {
        let (d, of) = self.b.ins().ssub_overflow(e, s);
        let gt = self.b.ins().icmp(IntCC::SignedGreaterThan, e, s);
        let big = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThan, d, MAX_LOOP_ITERATIONS as i64);
        let bad = self.b.ins().select(of, gt, big);
        self.fail_if(bad, Fail::RangeTooLong, s, e);
    }

    /// Binds position `pos` of the tuple being generated.
    fn bind_gen(&mut self, tup: usize, pos: usize, v: Value) {
        self.st(tup + pos, v);
    }

    /// A counted loop `for i in [start, end)` whose body `f` sees `i` in `ctr`.
    fn counted(
        &mut self,
        start: Value,
        end: Value,
        f: &mut dyn FnMut(&mut Self, Value) -> R<()>,
    ) -> R<()> {
        let s = self.alloc(2);
        self.st(s, start);
        self.st(s + 1, end);
        let head = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let i = self.ld(s);
        let e = self.ld(s + 1);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, i, e);
        let go = self.b.create_block();
        self.b.ins().brif(more, go, &[], exit, &[]);
        self.b.switch_to_block(go);
        f(self, i)?;
        let i = self.ld(s);
        let i1 = self.b.ins().iadd_imm_s(i, 1);
        self.st(s, i1);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// The size of a Dense/DenseDyn axis (errors as the interpreter's `flat`).
    fn flat(&mut self, a: AxisId) -> R<Value> {
        let ax = self.axis(a)?.clone();
        Ok(match &ax.kind {
            AxisKind::Dense { size } => self.c(i64::try_from(*size).unwrap_or(i64::MAX)),
            AxisKind::DenseDyn { size } => {
                let n = self.int(size, "an axis size")?;
                let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, n, 0);
                let z = self.c(0);
                self.fail_if(neg, Fail::NegSize(ax.name.clone(), ax.at.clone()), n, z);
                n
            }
            _ => {
                self.fail0(Fail::Plain(format!(
                    "axis `{}` is nested; iterate it with its row (`{}[b]`) or as a whole",
                    ax.name, ax.name
                )));
                self.c(0)
            }
        })
    }

    /// Generates iterator `k` and the ones after it, pushing complete tuples to `tbuf`.
    fn level(&mut self, iters: &[Iter], k: usize, tbuf: i64, tup: usize, nv: usize) -> R<()> {
        let Some(it) = iters.get(k) else {
            let t = self.c(tbuf);
            let ptr = self.slot_addr(tup);
            let n = self.c(nv as i64);
            self.checked(self.cb.tuple, &[t, ptr, n]);
            return Ok(());
        };
        let pos = self.gen.as_ref().map(|g| g.2).unwrap_or(0);
        match it {
            Iter::Range { start, end } => {
                let s = self.int(start, "a range start")?;
                let e = self.int(end, "a range end")?;
                self.range_ok(s, e);
                self.counted(s, e, &mut |g, i| {
                    g.bind_gen(tup, pos, i);
                    g.set_filled(pos + 1);
                    let r = g.level(iters, k + 1, tbuf, tup, nv);
                    g.set_filled(pos);
                    r
                })?;
            }
            Iter::Row { axis, row } => {
                let b = self.affine(row)?;
                self.row(*axis, b, &mut |g, i| {
                    g.bind_gen(tup, pos, i);
                    g.set_filled(pos + 1);
                    let r = g.level(iters, k + 1, tbuf, tup, nv);
                    g.set_filled(pos);
                    r
                })?;
            }
            Iter::Axis { axis } => {
                let ax = self.axis(*axis)?.clone();
                match ax.kind {
                    AxisKind::Dense { .. } | AxisKind::DenseDyn { .. } => {
                        let n = self.flat(*axis)?;
                        let z = self.c(0);
                        self.counted(z, n, &mut |g, i| {
                            g.bind_gen(tup, pos, i);
                            g.set_filled(pos + 1);
                            let r = g.level(iters, k + 1, tbuf, tup, nv);
                            g.set_filled(pos);
                            r
                        })?;
                    }
                    AxisKind::Ragged { outer, .. } | AxisKind::Sparse { outer, .. } => {
                        // The whole domain first (every row's data read and checked), then
                        // the iteration, as the interpreter does.
                        let dbuf = self.nbufs as i64;
                        self.nbufs += 1;
                        let d = self.c(dbuf);
                        self.checked(self.cb.clear, &[d]);
                        let pair = self.alloc(2);
                        let n = self.flat(outer)?;
                        let z = self.c(0);
                        let axis = *axis;
                        self.counted(z, n, &mut |g, b| {
                            let bslot = g.alloc(1);
                            g.st(bslot, b);
                            g.row(axis, b, &mut |g, i| {
                                let b = g.ld(bslot);
                                g.st(pair, b);
                                g.st(pair + 1, i);
                                let d = g.c(dbuf);
                                let p = g.slot_addr(pair);
                                let two = g.c(2);
                                g.checked(g.cb.push, &[d, p, two]);
                                Ok(())
                            })
                        })?;
                        let ds = self.alloc(3);
                        let d = self.c(dbuf);
                        let lenp = self.slot_addr(ds + 1);
                        let ptr = self.call(self.cb.data, &[self.ctx, d, lenp]);
                        self.st(ds, ptr);
                        let z = self.c(0);
                        let len = self.ld(ds + 1);
                        let cnt = self.b.ins().ushr_imm_s(len, 1);
                        self.counted(z, cnt, &mut |g, j| {
                            let ptr = g.ld(ds);
                            let off = g.b.ins().imul_imm_s(j, 16);
                            let at = g.b.ins().iadd(ptr, off);
                            let b = g.b.ins().load(types::I64, mf(), at, 0);
                            let i = g.b.ins().load(types::I64, mf(), at, 8);
                            g.bind_gen(tup, pos, b);
                            g.bind_gen(tup, pos + 1, i);
                            g.set_filled(pos + 2);
                            let r = g.level(iters, k + 1, tbuf, tup, nv);
                            g.set_filled(pos);
                            r
                        })?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Calls `f` on each element of row `b` of a Ragged/Sparse axis (the row's data is read
    /// and checked whole before the first call, as the interpreter's `row`).
    fn row(&mut self, a: AxisId, b: Value, f: &mut dyn FnMut(&mut Self, Value) -> R<()>) -> R<()> {
        let ax = self.axis(a)?.clone();
        let av = self.c(i64::from(a.0));
        match ax.kind {
            AxisKind::Ragged { .. } => {
                let out = self.alloc(1);
                let op = self.slot_addr(out);
                self.checked(self.cb.ragged, &[av, b, op]);
                let n = self.ld(out);
                let z = self.c(0);
                self.counted(z, n, f)
            }
            AxisKind::Sparse { .. } => {
                let span = self.alloc(2);
                let sp = self.slot_addr(span);
                self.checked(self.cb.span, &[av, b, sp]);
                let dbuf = self.nbufs as i64;
                self.nbufs += 1;
                let d = self.c(dbuf);
                self.checked(self.cb.clear, &[d]);
                let (s, e) = (self.ld(span), self.ld(span + 1));
                let col = self.alloc(1);
                self.counted(s, e, &mut |g, i| {
                    let av = g.c(i64::from(a.0));
                    let cp = g.slot_addr(col);
                    g.checked(g.cb.col, &[av, i, cp]);
                    let d = g.c(dbuf);
                    let one = g.c(1);
                    g.checked(g.cb.push, &[d, cp, one]);
                    Ok(())
                })?;
                let ds = self.alloc(2);
                let d = self.c(dbuf);
                let lenp = self.slot_addr(ds + 1);
                let ptr = self.call(self.cb.data, &[self.ctx, d, lenp]);
                self.st(ds, ptr);
                let z = self.c(0);
                let n = self.ld(ds + 1);
                self.counted(z, n, &mut |g, j| {
                    let ptr = g.ld(ds);
                    let off = g.b.ins().imul_imm_s(j, 8);
                    let at = g.b.ins().iadd(ptr, off);
                    let c = g.b.ins().load(types::I64, mf(), at, 0);
                    f(g, c)
                })
            }
            _ => {
                self.fail0(Fail::Plain(format!(
                    "axis `{}` is not Ragged or Sparse; it has no rows",
                    ax.name
                )));
                Ok(())
            }
        }
    }

    /// Finishes the function: the error exit and the entry's dispatch on the resume point.
    pub fn finish(mut self, entry: Block, cfg: TargetFrontendConfig) {
        let c = self.c(DONE);
        self.b.ins().return_(&[c]);
        self.b.switch_to_block(self.err);
        let m1 = self.c(-1);
        self.b.ins().return_(&[m1]);
        self.b.switch_to_block(entry);
        let at = self.ld(0);
        let at32 = self.b.ins().ireduce(types::I32, at);
        let bad = self.b.create_block();
        let pool = &mut self.b.func.dfg;
        let table: Vec<_> = self
            .resume
            .iter()
            .map(|bl| pool.block_call(*bl, &[] as &[BlockArg]))
            .collect();
        let def = pool.block_call(bad, &[] as &[BlockArg]);
        let jt = self.b.create_jump_table(JumpTableData::new(def, &table));
        self.b.ins().br_table(at32, jt);
        self.b.switch_to_block(bad);
        let m1 = self.b.ins().iconst(types::I64, -1);
        self.b.ins().return_(&[m1]);
        self.b.seal_all_blocks();
        self.b.finalize(cfg);
    }
}

/// The slots of a direct loop: the tuple being generated and the iterations so far.
#[derive(Clone, Copy)]
struct Direct {
    tup: usize,
    count: usize,
}
