//! `orchestration.c`: the entry schedule's workloads as C against `wsp_runtime.h`.
//!
//! The generated code mirrors the reference workload interpreter (`wsp_ir::exec`) statement
//! for statement, and submits each task as the simulator does (`wsp_sim`): one region per tile
//! parameter (the view's per-dimension first index and valid extent), the scalars `[row_dim,
//! col_dim]` per tile parameter and each scalar parameter's value (f64 bits for floats), the
//! schedule's dispatch, priority and stream keys, and the task's compute cycles from the
//! architecture model's cost tables (`wsp_ir::cost::task_cost`, evaluated here at emission
//! time: a constant per kernel, or a table over the valid extents of its partial dimensions).
//! Data the orchestration reads (`when` on tensor elements, Ragged lengths, Sparse indices,
//! DenseDyn sizes) is read from the runtime's buffers after waiting for the tensor's producers,
//! exactly where the interpreter waits. Structural events (loops, `sequential`, `combine`)
//! are reported to the runtime's order groups as the interpreter reports them.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use wsp_arch::Arch;
use wsp_backend::BackendDiagnostic;
use wsp_ir::cost;
use wsp_ir::dtype::ScalarValue;
use wsp_ir::exec::{counted_loop, expr_reads, iter_reads, MAX_PROCESSES};
use wsp_ir::kernel::{Kernel, ParamKind};
use wsp_ir::workload::{
    Affine, AxisId, AxisKind, ConnectItem, Expr, ExprOp, Iter, LoopKind, Program, SendPayload,
    SrcSpan, Sym, TaskArg, TaskCall, TensorId, ViewDim, WStmt, WorkloadBody, WorkloadId,
};

use super::sched::{Key, Keys};

mod call;
mod expr;

/// Most values a channel token holds (the runtime's `Token`).
const MAX_TOKEN: usize = 8;

/// The static type of a run-time expression (the interpreter's `V`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    I,
    F,
    B,
}

/// Most entries a kernel's cost table over its partial extents may have.
const MAX_COST_TABLE: u64 = 1 << 16;

/// A kernel's cycles: a constant, or a table indexed by the valid extents of its partial
/// dimensions (`(param index, tile dimension, static extent)` in order, the first varying
/// slowest).
enum Cycles {
    Const(u64),
    Table {
        dims: Vec<(usize, usize, u32)>,
        name: String,
    },
}

pub(crate) struct Orch<'p> {
    p: &'p Program,
    params: &'p [ScalarValue],
    shapes: &'p [Vec<usize>],
    keys: &'p Keys,
    diags: Vec<BackendDiagnostic>,
    /// Function definitions, one per workload reached.
    funcs: String,
    /// Cost tables.
    tables: String,
    cycles: Vec<Cycles>,
    /// Workloads emitted (or being emitted), and processes.
    done: HashMap<u32, ()>,
    procs_done: HashSet<u32>,
    tmp: usize,
}

fn diag(m: impl Into<String>, at: Option<SrcSpan>) -> BackendDiagnostic {
    BackendDiagnostic::error(m, at)
}

/// A C string literal.
pub(crate) use wsp_backend::c_string_literal as c_str;

/// An i64 as a C constant (`INT64_MIN` has no literal).
fn c_i64(v: i64) -> String {
    if v == i64::MIN {
        "INT64_MIN".into()
    } else {
        format!("INT64_C({v})")
    }
}

impl<'p> Orch<'p> {
    pub(crate) fn new(
        p: &'p Program,
        arch: &Arch,
        params: &'p [ScalarValue],
        shapes: &'p [Vec<usize>],
        keys: &'p Keys,
    ) -> Orch<'p> {
        let mut o = Orch {
            p,
            params,
            shapes,
            keys,
            diags: Vec::new(),
            funcs: String::new(),
            tables: String::new(),
            cycles: Vec::new(),
            done: HashMap::new(),
            procs_done: HashSet::new(),
            tmp: 0,
        };
        for (i, k) in p.kernels.iter().enumerate() {
            let c = o.kernel_cycles(arch, i, k);
            o.cycles.push(c);
        }
        o
    }

    /// The cycles of kernel `k` (index `i`) at every extent its tasks can have.
    fn kernel_cycles(&mut self, arch: &Arch, i: usize, k: &Kernel) -> Cycles {
        let mut base: cost::Extents = Vec::new();
        let mut dims = Vec::new();
        for (j, prm) in k.params.iter().enumerate() {
            match prm.kind {
                ParamKind::Tile { tile, partial, .. } => {
                    base.push(Some(tile.shape));
                    for (td, part) in partial.iter().enumerate() {
                        if *part {
                            dims.push((j, td, tile.shape[td]));
                        }
                    }
                }
                ParamKind::Scalar { .. } => base.push(None),
            }
        }
        if dims.is_empty() {
            return match cost::task_cost(arch, k, &base) {
                Ok(c) => Cycles::Const(c.compute),
                Err(m) => {
                    self.diags.push(diag(
                        format!(
                            "kernel `{}`: the architecture model prices no task of it: {m}",
                            k.name
                        ),
                        k.at.clone(),
                    ));
                    Cycles::Const(0)
                }
            };
        }
        let n: u64 = dims
            .iter()
            .fold(1u64, |a, d| a.saturating_mul(u64::from(d.2) + 1));
        if n > MAX_COST_TABLE {
            self.diags.push(diag(
                format!(
                    "kernel `{}`: its partial dimensions have {n} combinations of valid extents; the ascend backend tabulates task cycles for at most {MAX_COST_TABLE}",
                    k.name
                ),
                k.at.clone(),
            ));
            return Cycles::Const(0);
        }
        let name = format!("wsp_cycles_{i}");
        let _ = write!(
            self.tables,
            "/* Cycles of `{}` by the valid extents of its partial dimensions. */\nstatic const uint64_t {name}[{n}] = {{",
            k.name.replace("*/", "* /")
        );
        let mut ext = base.clone();
        for idx in 0..n {
            let mut rest = idx;
            for (j, td, stat) in dims.iter().rev() {
                let span = u64::from(*stat) + 1;
                let v = (rest % span) as u32;
                rest /= span;
                if let Some(Some(e)) = ext.get_mut(*j) {
                    e[*td] = v;
                }
            }
            let c = cost::task_cost(arch, k, &ext).map_or(u64::MAX, |c| c.compute);
            if idx % 8 == 0 {
                self.tables.push_str("\n   ");
            }
            let _ = write!(self.tables, " UINT64_C({c}),");
        }
        self.tables.push_str("\n};\n\n");
        Cycles::Table { dims, name }
    }

    fn fresh(&mut self, what: &str) -> String {
        self.tmp += 1;
        format!("{what}{}", self.tmp)
    }

    /// Emits the entry workload `w` (and everything it runs); returns the C source's body
    /// (cost tables and functions) or the diagnostics.
    pub(crate) fn emit(mut self, w: WorkloadId) -> Result<String, Vec<BackendDiagnostic>> {
        let mut stack = Vec::new();
        self.workload(w, &mut stack);
        if !self.diags.is_empty() {
            return Err(self.diags);
        }
        let mut out = self.tables;
        out.push_str(&self.funcs);
        out.push_str(
            "int wsp_orchestrate(wsp_rt *rt) {\n    struct wsp_cx c_ = {rt, NULL};\n    const struct wsp_cx *cx = &c_;\n",
        );
        for (i, c) in self.p.channels.iter().enumerate() {
            let lat = c.latency.map_or("-1".to_string(), |l| {
                c_i64(i64::try_from(l).unwrap_or(i64::MAX))
            });
            let _ = writeln!(
                out,
                "    {{ uint32_t id_ = 0; WSP_TRY(wsp_rt_add_channel(rt, {n}, {}, {lat}, &id_), {n}); if (id_ != {i}) return 1; }}",
                c.depth,
                n = c_str(&c.name)
            );
        }
        let _ = write!(out, "    return wsp_w{}(cx);\n}}\n", w.0);
        Ok(out)
    }

    /// The state struct of a function (its variables, loop slots and tuple lists).
    fn state_struct(name: &str, cx: &Cx, extra: &str) -> String {
        format!(
            "struct {name} {{\n{extra}    int64_t v[{}];\n    int64_t L[{}];\n    struct wsp_tuples T[{}];\n}};\n",
            cx.nvars.max(1),
            cx.slots.max(1),
            cx.tuples.max(1)
        )
    }

    /// Emits the function of workload `w` unless done; `stack` holds the workloads being
    /// emitted (a cycle is a workload that runs itself).
    fn workload(&mut self, w: WorkloadId, stack: &mut Vec<u32>) {
        if stack.contains(&w.0) {
            let name = self
                .p
                .workloads
                .get(w.index())
                .map_or("?", |x| x.name.as_str());
            self.diags.push(diag(
                format!("workload `{name}` runs itself; the ascend backend needs a finite orchestration"),
                None,
            ));
            return;
        }
        if self.done.contains_key(&w.0) {
            return;
        }
        self.done.insert(w.0, ());
        let Some(wl) = self.p.workloads.get(w.index()) else {
            self.diags
                .push(diag(format!("workload #{} does not exist", w.0), None));
            return;
        };
        stack.push(w.0);
        let mut body = String::new();
        let name = c_str(&format!("workload `{}`", wl.name));
        let mut state = String::new();
        match &wl.body {
            WorkloadBody::Block { stmts } => {
                let mut cx = Cx::new(wl.vars.len(), name.clone(), false);
                let mut inner = String::new();
                let _ = writeln!(inner, "    WSP_TRY(wsp_cx_order_begin(cx, 0), {name});");
                self.block(stmts, &mut cx, &mut inner, 1, stack);
                let _ = writeln!(inner, "    WSP_TRY(wsp_cx_order_end(cx), {name});");
                let sname = format!("wsp_sw{}", w.0);
                state = Self::state_struct(&sname, &cx, "");
                let _ = write!(
                    body,
                    "    struct {sname} s_;\n    struct {sname} *st = &s_;\n    memset(st, 0, sizeof s_);\n{inner}"
                );
            }
            WorkloadBody::Sequential { parts } => {
                let _ = writeln!(body, "    WSP_TRY(wsp_cx_order_begin(cx, 1), {name});");
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        let _ = writeln!(
                            body,
                            "    WSP_TRY(wsp_cx_wait_all(cx), {name});\n    WSP_TRY(wsp_cx_order_step(cx), {name});"
                        );
                    }
                    let _ = writeln!(body, "    if (wsp_w{}(cx)) return 1;", part.0);
                    self.workload(*part, stack);
                }
                let _ = writeln!(body, "    WSP_TRY(wsp_cx_order_end(cx), {name});");
            }
            WorkloadBody::Combine { parts } => {
                let _ = writeln!(body, "    WSP_TRY(wsp_cx_order_begin(cx, 0), {name});");
                for part in parts {
                    let _ = writeln!(body, "    if (wsp_w{}(cx)) return 1;", part.0);
                    self.workload(*part, stack);
                }
                let _ = writeln!(body, "    WSP_TRY(wsp_cx_order_end(cx), {name});");
            }
            WorkloadBody::Connect { processes } => {
                body = self.connect(&wl.name, processes, stack);
            }
        }
        stack.pop();
        let _ = write!(
            self.funcs,
            "/* {} */\n{state}static int wsp_w{}(const struct wsp_cx *cx) {{\n{body}    return 0;\n}}\n\n",
            format!("workload `{}`", wl.name).replace("*/", "* /"),
            w.0
        );
        // Callers come later in the file than their callees only by accident: declare all.
        self.funcs = format!("static int wsp_w{}(const struct wsp_cx *cx);\n", w.0) + &self.funcs;
    }

    /// The body of a `connect` workload: its process instances run on the runtime's process
    /// API, each a resumable step function over its own state (`wsp_sim` steps the
    /// interpreter's process threads the same way).
    fn connect(&mut self, wname: &str, items: &[ConnectItem], stack: &mut Vec<u32>) -> String {
        let mut b = String::new();
        let total: u64 = items.iter().map(|i| u64::from(i.replicas)).sum();
        if total > MAX_PROCESSES as u64 {
            self.diags.push(diag(
                format!("a `connect` of {total} process instances: at most {MAX_PROCESSES}"),
                None,
            ));
            return b;
        }
        let _ = writeln!(
            b,
            "    if (cx->proc) {{ fprintf(stderr, \"wsp_host: a process runs `%s`, a `connect`; pipelines do not nest inside processes\\n\", {}); return 1; }}",
            c_str(wname)
        );
        let n = total.max(1);
        let _ = writeln!(
            b,
            "    struct wsp_rt_process *ps_ = calloc({n}, sizeof *ps_);\n    void **sts_ = calloc({n}, sizeof *sts_);\n    char **nms_ = calloc({n}, sizeof *nms_);\n    size_t i_ = 0;\n    int rc_ = 0;\n    if (!ps_ || !sts_ || !nms_) {{ fprintf(stderr, \"wsp_host: out of memory\\n\"); return 1; }}"
        );
        for item in items {
            let Some(pr) = self.p.processes.get(item.process.index()) else {
                self.diags.push(diag(
                    format!("process #{} does not exist", item.process.0),
                    None,
                ));
                return b;
            };
            self.process(item.process.0, stack);
            let prod: Vec<String> = pr.produces.iter().map(|c| c.0.to_string()).collect();
            let k = item.process.0;
            let _ = writeln!(
                b,
                "    {{\n        {}\n        for (uint32_t r_ = 0; r_ < {reps}; r_++, i_++) {{\n            struct wsp_sp{k} *s_ = calloc(1, sizeof *s_);\n            char *nm_ = malloc({len});\n            if (!s_ || !nm_) {{ fprintf(stderr, \"wsp_host: out of memory\\n\"); return 1; }}\n            s_->cx.rt = cx->rt;\n            if ({reps} > 1) snprintf(nm_, {len}, \"%s#%u\", {name}, r_); else snprintf(nm_, {len}, \"%s\", {name});\n            sts_[i_] = s_; nms_[i_] = nm_;\n            ps_[i_].name = nm_; ps_[i_].step = wsp_p{k}; ps_[i_].user = s_;\n            ps_[i_].produces = {}; ps_[i_].nproduces = {};\n        }}\n    }}",
                if prod.is_empty() {
                    "/* it produces no channel */".to_string()
                } else {
                    format!("static const uint32_t prod_[] = {{{}}};", prod.join(", "))
                },
                if prod.is_empty() { "NULL" } else { "prod_" },
                prod.len(),
                reps = item.replicas,
                len = pr.name.len() + 16,
                name = c_str(&pr.name),
            );
        }
        let _ = writeln!(
            b,
            "    if (wsp_rt_run_processes(cx->rt, ps_, (uint32_t)i_) != WSP_RT_OK) rc_ = wsp_fail_cx(cx, {});\n    for (size_t j_ = 0; j_ < i_; j_++) {{ free(sts_[j_]); free(nms_[j_]); }}\n    free(ps_); free(sts_); free(nms_);\n    if (rc_) return rc_;",
            c_str(&format!("workload `{wname}`"))
        );
        b
    }

    /// The step function of process `k` (once per process; replicas share it).
    fn process(&mut self, k: u32, stack: &mut Vec<u32>) {
        if !self.procs_done.insert(k) {
            return;
        }
        let Some(pr) = self.p.processes.get(k as usize) else {
            return;
        };
        let name = c_str(&format!("process `{}`", pr.name));
        let mut cx = Cx::new(pr.vars.len(), name.clone(), true);
        let mut inner = String::new();
        self.block(&pr.body, &mut cx, &mut inner, 1, stack);
        let sname = format!("wsp_sp{k}");
        let state = Self::state_struct(
            &sname,
            &cx,
            "    int64_t pc;\n    int32_t inbox;             /* 0 none, 1 a token, 2 closed */\n    uint32_t tok_len;\n    int64_t tok[WSP_MAX_RANK];\n    struct wsp_cx cx;\n",
        );
        let _ = write!(
            self.funcs,
            "/* {} */\n{state}static int32_t wsp_p{k}(void *user, wsp_rt_proc *proc, struct wsp_rt_step *out) {{\n    struct {sname} *st = user;\n    st->cx.proc = proc;\n    const struct wsp_cx *cx = &st->cx;\n    {{\n        int32_t s_ = 0; int64_t t_[WSP_MAX_RANK]; uint32_t n_ = 0;\n        if (wsp_rt_proc_received(proc, &s_, t_, &n_) != WSP_RT_OK) return 1;\n        if (s_) {{ st->inbox = s_; st->tok_len = n_; memcpy(st->tok, t_, sizeof t_); }}\n    }}\n    out->kind = WSP_STEP_CONTINUE;\n    switch (st->pc) {{\n    case 0:;\n{inner}        break;\n    default:;\n    }}\n    st->pc = -1;\n    out->kind = WSP_STEP_FINISHED;\n    return 0;\n}}\n\n",
            format!("process `{}`", pr.name).replace("*/", "* /"),
        );
        let _ = name;
    }

    /// A resumption point of a process step function: the step returns (with what `out`
    /// holds) and the next step continues here. Nothing in the main orchestration.
    fn resume(&mut self, cx: &mut Cx, out: &mut String, pad: &str) {
        if cx.proc_mode {
            cx.labels += 1;
            let _ = writeln!(
                out,
                "{pad}st->pc = {l}; return 0; case {l}:;",
                l = cx.labels
            );
        }
    }

    fn block(
        &mut self,
        stmts: &[WStmt],
        cx: &mut Cx,
        out: &mut String,
        ind: usize,
        stack: &mut Vec<u32>,
    ) {
        for s in stmts {
            self.stmt(s, cx, out, ind, stack);
        }
    }

    fn stmt(&mut self, s: &WStmt, cx: &mut Cx, out: &mut String, ind: usize, stack: &mut Vec<u32>) {
        let pad = "    ".repeat(ind);
        let wh = cx.where_.clone();
        match s {
            WStmt::Call(call) => {
                self.call(call, cx, out, ind, "");
                self.resume(cx, out, &pad);
            }
            WStmt::Local { tensor, body } => {
                if cx.proc_mode {
                    self.diags.push(diag(
                        format!("in {}: a local tensor in a process", wh.trim_matches('"')),
                        None,
                    ));
                    return;
                }
                let _ = writeln!(out, "{pad}if (wsp_local_begin(cx, {})) return 1;", tensor.0);
                self.block(body, cx, out, ind, stack);
                let _ = writeln!(out, "{pad}WSP_TRY(wsp_rt_scope_end(cx->rt), {wh});");
            }
            WStmt::Run { workload } => {
                let _ = writeln!(out, "{pad}if (wsp_w{}(cx)) return 1;", workload.0);
                self.workload(*workload, stack);
                self.resume(cx, out, &pad);
            }
            WStmt::When {
                branches,
                otherwise,
            } => {
                let mut reads = Vec::new();
                for b in branches {
                    expr_reads(&b.cond, &mut reads);
                }
                self.syncs(&reads, out, &pad);
                let flag = format!("st->L[{}]", cx.slot());
                let _ = writeln!(out, "{pad}{flag} = -1;");
                for (i, b) in branches.iter().enumerate() {
                    let Some(c) = self.expr_ty(&b.cond, Ty::B, cx, "a `when` condition") else {
                        continue;
                    };
                    let _ = writeln!(
                        out,
                        "{pad}if ({flag} < 0) {{ int c_ = {c}; WSP_CHECK({wh}); if (c_) {flag} = {i}; }}"
                    );
                }
                let _ = writeln!(out, "{pad}WSP_TRY(wsp_cx_order_begin(cx, 0), {wh});");
                for (i, b) in branches.iter().enumerate() {
                    let _ = writeln!(out, "{pad}if ({flag} == {i}) {{");
                    self.block(&b.body, cx, out, ind + 1, stack);
                    let _ = writeln!(out, "{pad}}}");
                }
                let _ = writeln!(out, "{pad}if ({flag} < 0) {{");
                self.block(otherwise, cx, out, ind + 1, stack);
                let _ = writeln!(out, "{pad}}}");
                let _ = writeln!(out, "{pad}WSP_TRY(wsp_cx_order_end(cx), {wh});");
            }
            WStmt::For {
                kind,
                vars,
                iters,
                body,
            } => self.for_loop(*kind, vars, iters, body, cx, out, ind, stack),
            WStmt::Send { channel, payload } => {
                if !cx.proc_mode {
                    self.diags.push(diag(
                        format!(
                            "in {}: `send` on channel `{}` outside a process",
                            wh.trim_matches('"'),
                            self.chan(*channel)
                        ),
                        None,
                    ));
                    return;
                }
                match payload {
                    SendPayload::Task(call) => {
                        if call.coords.len() > MAX_TOKEN {
                            self.diags.push(diag(
                                format!(
                                    "a token of {} values (at most {MAX_TOKEN})",
                                    call.coords.len()
                                ),
                                call.at.clone(),
                            ));
                            return;
                        }
                        let after = format!(
                            "\n{pad}    out->kind = WSP_STEP_SEND; out->channel = {}; out->token_len = {n}; memcpy(out->token, co_, {n} * sizeof(int64_t)); out->has_after = 1; out->after = id_;",
                            channel.0,
                            n = call.coords.len()
                        );
                        self.call(call, cx, out, ind, &after);
                    }
                    SendPayload::Values { values } => {
                        if values.len() > MAX_TOKEN {
                            self.diags.push(diag(
                                format!("a token of {} values (at most {MAX_TOKEN})", values.len()),
                                None,
                            ));
                            return;
                        }
                        let mut reads = Vec::new();
                        values.iter().for_each(|e| expr_reads(e, &mut reads));
                        self.syncs(&reads, out, &pad);
                        let _ = writeln!(out, "{pad}out->kind = WSP_STEP_SEND; out->channel = {}; out->token_len = {}; out->has_after = 0;", channel.0, values.len());
                        for (i, v) in values.iter().enumerate() {
                            let Some(c) = self.expr_ty(v, Ty::I, cx, "a sent value") else {
                                return;
                            };
                            let _ = writeln!(out, "{pad}out->token[{i}] = {c};");
                        }
                        let _ = writeln!(out, "{pad}WSP_CHECK({wh});");
                    }
                }
                self.resume(cx, out, &pad);
            }
            WStmt::Consume {
                channel,
                bindings,
                body,
            } => {
                if !cx.proc_mode {
                    self.diags.push(diag(
                        format!(
                            "in {}: `consume` of channel `{}` outside a process",
                            wh.trim_matches('"'),
                            self.chan(*channel)
                        ),
                        None,
                    ));
                    return;
                }
                if let Some(v) = bindings.iter().find(|v| v.index() >= cx.nvars) {
                    self.diags
                        .push(diag(format!("variable #{} does not exist", v.0), None));
                    return;
                }
                cx.labels += 1;
                let wait = cx.labels;
                let _ = writeln!(
                    out,
                    "{pad}for (;;) {{\n{pad}    st->pc = {wait}; __attribute__((fallthrough)); case {wait}:;\n{pad}    if (!st->inbox) {{ out->kind = WSP_STEP_RECV; out->channel = {}; return 0; }}\n{pad}    if (st->inbox == 2) {{ st->inbox = 0; break; }}\n{pad}    if (st->tok_len < {nb}) {{ fprintf(stderr, \"wsp_host: in %s: a token of %u values on `%s` binds {nb} names\\n\", {wh}, (unsigned)st->tok_len, {ch}); return 1; }}",
                    channel.0,
                    nb = bindings.len(),
                    ch = c_str(self.chan(*channel)),
                );
                for (i, v) in bindings.iter().enumerate() {
                    let _ = writeln!(out, "{pad}    st->v[{}] = st->tok[{i}];", v.0);
                }
                let _ = writeln!(out, "{pad}    st->inbox = 0;");
                self.resume(cx, out, &format!("{pad}    "));
                self.block(body, cx, out, ind + 1, stack);
                let _ = writeln!(out, "{pad}}}");
            }
        }
    }

    fn chan(&self, c: wsp_ir::workload::ChannelId) -> &str {
        self.p
            .channels
            .get(c.index())
            .map_or("?", |c| c.name.as_str())
    }

    fn syncs(&mut self, reads: &[TensorId], out: &mut String, pad: &str) {
        for t in reads {
            let _ = writeln!(out, "{pad}if (wsp_sync(cx, {})) return 1;", t.0);
        }
    }

    /// The variables an iterator binds and the axes they are bound from.
    fn bound(&self, it: &Iter) -> Vec<Option<AxisId>> {
        match it {
            Iter::Axis { axis } => match self.p.axes.get(axis.index()).map(|a| &a.kind) {
                Some(AxisKind::Ragged { outer, .. } | AxisKind::Sparse { outer, .. }) => {
                    vec![Some(*outer), Some(*axis)]
                }
                _ => vec![Some(*axis)],
            },
            Iter::Row { axis, .. } => vec![Some(*axis)],
            Iter::Range { .. } => vec![None],
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn for_loop(
        &mut self,
        kind: LoopKind,
        vars: &[wsp_ir::workload::LoopVar],
        iters: &[Iter],
        body: &[WStmt],
        cx: &mut Cx,
        out: &mut String,
        ind: usize,
        stack: &mut Vec<u32>,
    ) {
        let pad = "    ".repeat(ind);
        let wh = cx.where_.clone();
        let mut reads = Vec::new();
        for it in iters {
            iter_reads(self.p, it, &mut reads);
        }
        if let Some(v) = vars.iter().find(|v| v.index() >= cx.nvars) {
            self.diags
                .push(diag(format!("loop variable #{} does not exist", v.0), None));
            return;
        }
        self.syncs(&reads, out, &pad);
        // The axes the variables are bound from (for the schedule's keys), restored after.
        let outer: Vec<Option<AxisId>> = vars.iter().map(|v| cx.var_axes[v.index()]).collect();
        let bound: Vec<Option<AxisId>> = iters.iter().flat_map(|it| self.bound(it)).collect();
        if bound.len() != vars.len() {
            self.diags.push(diag(
                format!(
                    "in {}: a loop binds {} variables but its iterators give {}",
                    wh.trim_matches('"'),
                    vars.len(),
                    bound.len()
                ),
                None,
            ));
            return;
        }
        for (v, a) in vars.iter().zip(&bound) {
            cx.var_axes[v.index()] = *a;
        }
        let seq = i32::from(kind == LoopKind::Sequential);
        let first = format!("st->L[{}]", cx.slot());
        if counted_loop(self.p, iters, &reads) {
            // Level by level, each level's bounds evaluated when it starts (as the
            // interpreter's odometer does); counters live in the state (a process resumes
            // inside the loop).
            let count = format!("st->L[{}]", cx.slot());
            let _ = writeln!(
                out,
                "{pad}{first} = 1;\n{pad}{count} = 0;\n{pad}WSP_TRY(wsp_cx_order_begin(cx, {seq}), {wh});"
            );
            let mut closes = Vec::new();
            for (lvl, (it, v)) in iters.iter().zip(vars).enumerate() {
                let p2 = "    ".repeat(ind + lvl);
                let (s, e) = match it {
                    Iter::Range { start, end } => {
                        let s = self.expr_ty(start, Ty::I, cx, "a range start");
                        let e = self.expr_ty(end, Ty::I, cx, "a range end");
                        match (s, e) {
                            (Some(s), Some(e)) => (s, e),
                            _ => return,
                        }
                    }
                    Iter::Axis { axis } => match self.flat_len(*axis, cx) {
                        Some(n) => ("INT64_C(0)".to_string(), n),
                        None => return,
                    },
                    Iter::Row { .. } => return,
                };
                let i = format!("st->L[{}]", cx.slot());
                let e_ = format!("st->L[{}]", cx.slot());
                let range_check = if matches!(it, Iter::Range { .. }) {
                    "wsp_range_ok(s_, e_); "
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "{p2}{{ int64_t s_ = {s}; int64_t e_ = {e}; {range_check}WSP_CHECK({wh}); {e_} = e_; {i} = s_; }}\n{p2}for (; {i} < {e_}; {i}++) {{\n{p2}    st->v[{}] = {i};",
                    v.0
                );
                closes.push(format!("{p2}}}\n"));
            }
            let p3 = "    ".repeat(ind + iters.len());
            let _ = writeln!(
                out,
                "{p3}if ({count}++ >= WSP_MAX_LOOP_ITERATIONS) {{ fprintf(stderr, \"wsp_host: in %s: a loop has more than 2^26 iterations\\n\", {wh}); return 1; }}"
            );
            self.iteration(body, cx, out, ind + iters.len(), &first, stack);
            for c in closes.into_iter().rev() {
                out.push_str(&c);
            }
            let _ = writeln!(out, "{pad}WSP_TRY(wsp_cx_order_end(cx), {wh});");
        } else {
            // The tuples listed up front, as the interpreter lists them (its domains read
            // data when the loop begins).
            let w = vars.len().max(1);
            let l = format!("st->T[{}]", cx.tuple());
            let _ = writeln!(
                out,
                "{pad}{{\n{pad}    int64_t tup_[{w}];\n{pad}    (void)tup_;\n{pad}    {l}.n = 0;"
            );
            let mut pos = 0usize;
            let mut closes = Vec::new();
            for (lvl, it) in iters.iter().enumerate() {
                let p2 = "    ".repeat(ind + 1 + lvl);
                let i = self.fresh("i");
                let n = self.bound(it).len();
                let vfirst = vars[pos].0;
                match it {
                    Iter::Range { start, end } => {
                        let (Some(s), Some(e)) = (
                            self.expr_ty(start, Ty::I, cx, "a range start"),
                            self.expr_ty(end, Ty::I, cx, "a range end"),
                        ) else {
                            return;
                        };
                        let _ = writeln!(
                            out,
                            "{p2}{{ int64_t s_ = {s}; int64_t e_ = {e}; wsp_range_ok(s_, e_); WSP_CHECK({wh});\n{p2}for (int64_t {i} = s_; {i} < e_; {i}++) {{\n{p2}    st->v[{vfirst}] = {i}; tup_[{pos}] = {i};"
                        );
                        closes.push(format!("{p2}}} }}\n"));
                    }
                    Iter::Row { axis, row } => {
                        let Some(b) = self.affine(row, cx) else {
                            return;
                        };
                        let b_ = self.fresh("b");
                        let _ = writeln!(out, "{p2}{{ int64_t {b_} = {b}; WSP_CHECK({wh});");
                        let Some((open, close)) = self.row_loop(*axis, &b_, &i, cx, &p2) else {
                            return;
                        };
                        let _ = writeln!(
                            out,
                            "{open}{p2}    st->v[{vfirst}] = {i}; tup_[{pos}] = {i};"
                        );
                        closes.push(format!("{close}{p2}}}\n"));
                    }
                    Iter::Axis { axis } => {
                        let kind = self.p.axes.get(axis.index()).map(|a| a.kind.clone());
                        match kind {
                            Some(
                                AxisKind::Ragged { outer, .. } | AxisKind::Sparse { outer, .. },
                            ) => {
                                let Some(nout) = self.flat_len(outer, cx) else {
                                    return;
                                };
                                let b_ = self.fresh("b");
                                let _ = writeln!(
                                    out,
                                    "{p2}{{ int64_t e_ = {nout}; WSP_CHECK({wh});\n{p2}for (int64_t {b_} = 0; {b_} < e_; {b_}++) {{"
                                );
                                let Some((open, close)) = self.row_loop(*axis, &b_, &i, cx, &p2)
                                else {
                                    return;
                                };
                                let vsecond = vars[pos + 1].0;
                                let _ = writeln!(
                                    out,
                                    "{open}{p2}    st->v[{vfirst}] = {b_}; tup_[{pos}] = {b_}; st->v[{vsecond}] = {i}; tup_[{}] = {i};",
                                    pos + 1
                                );
                                closes.push(format!("{close}{p2}}} }}\n"));
                            }
                            Some(_) => {
                                let Some(e) = self.flat_len(*axis, cx) else {
                                    return;
                                };
                                let _ = writeln!(
                                    out,
                                    "{p2}{{ int64_t e_ = {e}; WSP_CHECK({wh});\n{p2}for (int64_t {i} = 0; {i} < e_; {i}++) {{\n{p2}    st->v[{vfirst}] = {i}; tup_[{pos}] = {i};"
                                );
                                closes.push(format!("{p2}}} }}\n"));
                            }
                            None => {
                                self.diags
                                    .push(diag(format!("axis #{} does not exist", axis.0), None));
                                return;
                            }
                        }
                    }
                }
                pos += n;
            }
            let p3 = "    ".repeat(ind + 1 + iters.len());
            let _ = writeln!(
                out,
                "{p3}if (wsp_push(&{l}, {w}, tup_)) {{ WSP_CHECK({wh}); }}"
            );
            for c in closes.into_iter().rev() {
                out.push_str(&c);
            }
            let k = format!("st->L[{}]", cx.slot());
            let _ = writeln!(
                out,
                "{pad}}}\n{pad}{first} = 1;\n{pad}WSP_TRY(wsp_cx_order_begin(cx, {seq}), {wh});\n{pad}for ({k} = 0; {k} < (int64_t){l}.n; {k} += {w}) {{"
            );
            for (j, v) in vars.iter().enumerate() {
                let _ = writeln!(out, "{pad}    st->v[{}] = {l}.v[{k} + {j}];", v.0);
            }
            self.iteration(body, cx, out, ind + 1, &first, stack);
            let _ = writeln!(
                out,
                "{pad}}}\n{pad}free({l}.v);\n{pad}{l}.v = NULL; {l}.n = 0; {l}.cap = 0;\n{pad}WSP_TRY(wsp_cx_order_end(cx), {wh});"
            );
        }
        for (v, a) in vars.iter().zip(outer) {
            cx.var_axes[v.index()] = a;
        }
    }

    /// One iteration of a loop body, with its structural events.
    fn iteration(
        &mut self,
        body: &[WStmt],
        cx: &mut Cx,
        out: &mut String,
        ind: usize,
        first: &str,
        stack: &mut Vec<u32>,
    ) {
        let pad = "    ".repeat(ind);
        let wh = cx.where_.clone();
        let _ = writeln!(
            out,
            "{pad}if (!{first}) WSP_TRY(wsp_cx_order_step(cx), {wh});\n{pad}{first} = 0;\n{pad}WSP_TRY(wsp_cx_order_begin(cx, 0), {wh});"
        );
        self.block(body, cx, out, ind, stack);
        let _ = writeln!(out, "{pad}WSP_TRY(wsp_cx_order_end(cx), {wh});");
    }

    /// A loop over row `b` (a C variable) of a Ragged or Sparse axis binding `i`: the code
    /// opening it and closing it.
    fn row_loop(
        &mut self,
        axis: AxisId,
        b: &str,
        i: &str,
        cx: &Cx,
        pad: &str,
    ) -> Option<(String, String)> {
        let wh = cx.where_.clone();
        let ax = self.p.axes.get(axis.index())?;
        let int_vec = |t: TensorId| -> bool {
            self.p
                .tensors
                .get(t.index())
                .is_some_and(|d| !d.dtype.is_float() && !d.dtype.is_bool() && d.shape.len() == 1)
        };
        match &ax.kind {
            AxisKind::Ragged { lengths, per, .. } => {
                if !int_vec(*lengths) {
                    self.diags.push(diag(
                        format!(
                            "axis `{}`: its lengths must be a rank-1 integer tensor",
                            ax.name
                        ),
                        ax.at.clone(),
                    ));
                    return None;
                }
                let n = self.fresh("len");
                // Tiles of `per` elements: ⌈n / per⌉ (n is checked non-negative first).
                let tiles = match per {
                    Some(k) if *k > 1 => format!("{pad}{n} = ({n} + {k} - 1) / {k};\n"),
                    _ => String::new(),
                };
                let open = format!(
                    "{pad}{{ int64_t {n} = wsp_elem_i(cx, {t}, wsp_flat({t}, 1, &{b}));\n{pad}if (!wsp_err && ({n} < 0 || {n} > WSP_MAX_LOOP_ITERATIONS)) wsp_err = \"a Ragged row length is outside 0..=2^26\";\n{pad}WSP_CHECK({wh});\n{tiles}{pad}for (int64_t {i} = 0; {i} < {n}; {i}++) {{\n",
                    t = lengths.0
                );
                Some((open, format!("{pad}}} }}\n")))
            }
            AxisKind::Sparse {
                indptr, indices, ..
            } => {
                if !int_vec(*indptr) || !int_vec(*indices) {
                    self.diags.push(diag(
                        format!(
                            "axis `{}`: indptr and indices must be rank-1 integer tensors",
                            ax.name
                        ),
                        ax.at.clone(),
                    ));
                    return None;
                }
                let s = self.fresh("s");
                let e = self.fresh("e");
                let q = self.fresh("q");
                let open = format!(
                    "{pad}{{ int64_t b1_ = wsp_add({b}, 1);\n{pad}int64_t {s} = wsp_elem_i(cx, {p}, wsp_flat({p}, 1, &{b}));\n{pad}int64_t {e} = wsp_elem_i(cx, {p}, wsp_flat({p}, 1, &b1_));\n{pad}if (!wsp_err && {e} < {s}) wsp_err = \"a Sparse indptr is decreasing\";\n{pad}WSP_CHECK({wh});\n{pad}for (int64_t {q} = {s}; {q} < {e}; {q}++) {{\n{pad}    int64_t {i} = wsp_elem_i(cx, {x}, wsp_flat({x}, 1, &{q})); WSP_CHECK({wh});\n",
                    p = indptr.0,
                    x = indices.0
                );
                Some((open, format!("{pad}}} }}\n")))
            }
            _ => {
                self.diags.push(diag(
                    format!("axis `{}` is not Ragged or Sparse; it has no rows", ax.name),
                    ax.at.clone(),
                ));
                None
            }
        }
    }
}

/// The index among the tile parameters of parameter `j`.
fn tile_index(k: &Kernel, j: usize) -> usize {
    k.params[..j]
        .iter()
        .filter(|x| matches!(x.kind, ParamKind::Tile { .. }))
        .count()
}

fn ty_name(t: Ty) -> &'static str {
    match t {
        Ty::I => "an integer",
        Ty::F => "a float",
        Ty::B => "a bool",
    }
}

/// Static state of a workload's or process's emission.
struct Cx {
    /// The axis each loop variable is bound from, as the interpreter tracks it.
    var_axes: Vec<Option<AxisId>>,
    nvars: usize,
    /// A C string naming the workload, for messages.
    where_: String,
    /// A process step function (it returns at each step and resumes where it left).
    proc_mode: bool,
    /// Integer slots (`st->L`), tuple lists (`st->T`) and resumption labels used so far.
    slots: usize,
    tuples: usize,
    labels: usize,
}

impl Cx {
    fn new(nvars: usize, where_: String, proc_mode: bool) -> Cx {
        Cx {
            var_axes: vec![None; nvars],
            nvars,
            where_,
            proc_mode,
            slots: 0,
            tuples: 0,
            labels: 0,
        }
    }

    fn slot(&mut self) -> usize {
        self.slots += 1;
        self.slots - 1
    }

    fn tuple(&mut self) -> usize {
        self.tuples += 1;
        self.tuples - 1
    }
}

/// The C after the prelude that the call sites use (labels, slices, view errors).
pub(crate) const CALL_HELPERS: &str = r#"
/* `task k[1, 2]`, for messages. */
static inline void wsp_label(char *buf, size_t len, const char *name, const int64_t *co, int n) {
    int w = snprintf(buf, len, "%s[", name);
    for (int i = 0; i < n && w > 0 && (size_t)w < len; i++)
        w += snprintf(buf + w, len - (size_t)w, i ? ", %lld" : "%lld", (long long)co[i]);
    if (w > 0 && (size_t)w < len) snprintf(buf + w, len - (size_t)w, "]");
}

/* A slice s..e of a dimension of `size` for a tile dimension of static extent `stat`
 * (`part`: at most `stat` valid): its valid extent in *clipped; nonzero when out of range. */
static inline int wsp_slice(int64_t s, int64_t e, int64_t size, int64_t stat, int part, int64_t *clipped) {
    int64_t len;
    if (__builtin_sub_overflow(e, s, &len)) return 1;
    if (s < 0 || len < 0 || (part && len > stat) || (!part && len != stat)) return 1;
    if (e > size) {
        if (!part || s > size) return 1;
        *clipped = size - s;
    } else {
        *clipped = len;
    }
    return 0;
}

static inline int wsp_view_error(const char *task, const char *view, int dim) {
    fprintf(stderr, "wsp_host: %s: %s is out of range (or of the wrong extent) in dimension %d\n",
            task, view, dim);
    return 1;
}
"#;
