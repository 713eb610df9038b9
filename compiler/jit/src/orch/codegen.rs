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
//!
//! This file holds the generator ([`Gen`]), the callbacks it imports, the slot block's
//! layout, failures and yields, and the function's finish (the resume dispatch); `expr`
//! generates expressions, `stmt` statements and tasks, `loops` the `for` loops.

mod expr;
mod loops;
mod stmt;

use super::{CallSite, Fail, Ty};
use cranelift::codegen::ir::{BlockArg, FuncRef};
use cranelift::codegen::isa::TargetFrontendConfig;
use cranelift::prelude::*;
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
