//! JIT-compiled orchestration: a program's workloads and CSP process bodies as native code.
//!
//! [`compile_orchestration`] lowers every `Dataflow` workload body and every process body of a
//! [`Program`] with Cranelift (see `codegen` for the code shape). Loop bounds, iteration
//! tuples (Dense, DenseDyn, ranges, Ragged rows and Sparse CSR columns), `when` conditions,
//! task coordinates, scalar arguments and the affine offsets of views are computed natively;
//! the generated code calls back into the host through a small `extern "C"` table for what
//! only the host can do: synchronise a tensor before reading it, read a tensor element,
//! resolve a view against its tensor and submit a task ([`TaskBackend::task`]), report order
//! events, run another workload, and send or receive on a channel.
//!
//! The result drives the same [`TaskBackend`] the reference interpreter
//! ([`wsp_ir::exec::run_workload_on`]) drives, with the same calls in the same order: the
//! interpreter is the oracle, and the differential tests compare task sequences, outputs and
//! errors. Process bodies are resumable state machines ([`CompiledProc::step`]): each call runs
//! until one visible action, like [`wsp_ir::exec::ProcThread::step`], so a scheduler outside
//! (the runtime) steps them on its own clock.
//!
//! Params are constants of the compiled code (the orchestration is compiled per run), and the
//! tensors' ranks and element types are fixed at compile time. A malformed program (unknown
//! ids, a loop binding a different number of variables than its iterators give, a call with
//! the wrong arguments) is refused at compile time with the reason; the caller runs the
//! interpreter instead, which reports the error where it happens.
//!
//! This module knows nothing of the runtime: it depends on wsp-ir only.

mod callbacks;
mod codegen;
#[cfg(test)]
mod tests;

use codegen::{Cb, Facts, Gen, BLOCKED, DONE, PROGRESS};
use cranelift::prelude::*;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use std::time::{Duration, Instant};
use wsp_ir::exec::{
    self, ExecError, ExecOutcome, OrderEvent, ProcAction, TaskBackend, TaskInstance, TaskName,
    TaskRecord, TaskValue, TileView, MAX_LOOP_ITERATIONS,
};
use wsp_ir::kernel::ParamKind;
use wsp_ir::tensor::{Data, HostTensor};
use wsp_ir::workload::*;
use wsp_ir::ScalarValue;

/// A static type of an orchestration value (integers i64, floats f64, bools 0/1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i64)]
pub(crate) enum Ty {
    I = 0,
    F = 1,
    B = 2,
}

impl Ty {
    fn describe(kind: i64, bits: i64) -> String {
        exec::describe_value(match kind {
            1 => ScalarValue::Float(f64::from_bits(bits as u64)),
            2 => ScalarValue::Bool(bits != 0),
            _ => ScalarValue::Int(bits),
        })
    }
}

/// A run-time failure the generated code reports (`fail(id, a, b)`), worded as the
/// interpreter's.
#[derive(Clone, Debug)]
pub(crate) enum Fail {
    /// The message as is.
    Plain(String),
    /// `in {thread}: {message}`.
    InThread(String),
    /// An expression that must be an integer (`what`) was not: `a` kind, `b` bits.
    NotInt(&'static str),
    /// A `when` condition that was not a bool: `a` kind, `b` bits.
    NotBool,
    /// A range `a..b` longer than [`MAX_LOOP_ITERATIONS`].
    RangeTooLong,
    /// A DenseDyn axis of negative size `a` (the axis's name and declaration).
    NegSize(String, Option<SrcSpan>),
    /// A loop variable read before it is bound.
    Unbound(String),
}

impl Fail {
    fn message(&self, thread: &str, a: i64, b: i64) -> String {
        match self {
            Fail::Plain(m) => m.clone(),
            Fail::InThread(m) => format!("in {thread}: {m}"),
            Fail::NotInt(what) => format!(
                "in {thread}: {what} evaluated to {}, not an integer",
                Ty::describe(a, b)
            ),
            Fail::NotBool => format!(
                "in {thread}: a `when` condition evaluated to {}, not a bool",
                Ty::describe(a, b)
            ),
            Fail::RangeTooLong => format!(
                "in {thread}: range {a}..{b} has more than {MAX_LOOP_ITERATIONS} iterations"
            ),
            Fail::NegSize(axis, _) => format!("axis `{axis}` has a negative size ({a})"),
            Fail::Unbound(v) => {
                format!("in {thread}: loop variable `{v}` is read before it is bound")
            }
        }
    }
}

/// Where the generated code leaves a task call's evaluated values.
pub(crate) struct CallSite {
    pub call: TaskCall,
    /// First slot of the coordinates.
    pub coords: usize,
    /// Per kernel parameter.
    pub args: Vec<SiteArg>,
}

pub(crate) enum SiteArg {
    /// Two slots per tensor dimension: index (or slice start) and slice end.
    View {
        base: usize,
    },
    Scalar {
        slot: usize,
        ty: Ty,
    },
}

type StepFn = unsafe extern "C" fn(*mut i64, *mut Ctx<'_, '_>) -> i64;

/// One compiled body.
struct Body {
    f: StepFn,
    slots: usize,
    bufs: usize,
    nvars: usize,
}

impl Body {
    fn frame(&self) -> Frame {
        let mut slots = vec![0i64; self.slots];
        for s in &mut slots[1 + 2 * self.nvars..1 + 3 * self.nvars] {
            *s = -1;
        }
        Frame {
            slots,
            bufs: vec![Vec::new(); self.bufs],
        }
    }
}

/// The state of one invocation of a body: its slot block and its tuple buffers.
struct Frame {
    slots: Vec<i64>,
    bufs: Vec<Vec<i64>>,
}

/// A program's orchestration, compiled. Keeps its code alive.
pub struct CompiledOrch<'p> {
    p: &'p Program,
    params: Vec<ScalarValue>,
    workloads: Vec<Option<Body>>,
    processes: Vec<Body>,
    calls: Vec<CallSite>,
    fails: Vec<Fail>,
    compile_time: Duration,
    _module: JITModule,
}

impl CompiledOrch<'_> {
    /// Time spent compiling.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }
    /// Number of compiled bodies (workloads and processes).
    pub fn functions(&self) -> usize {
        self.workloads.iter().flatten().count() + self.processes.len()
    }
}

/// Why an orchestration was not compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrchRefusal(pub String);

impl std::fmt::Display for OrchRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn elem_ty(t: &HostTensor) -> Ty {
    match t.data {
        Data::Float(_) => Ty::F,
        Data::Bool(_) => Ty::B,
        _ => Ty::I,
    }
}

/// Compiles every workload body and process body of `p` for a run with `params` on tensors
/// shaped like `tensors` (only their element types and ranks are read).
pub fn compile_orchestration<'p>(
    p: &'p Program,
    params: &[ScalarValue],
    tensors: &[HostTensor],
) -> Result<CompiledOrch<'p>, OrchRefusal> {
    let t0 = Instant::now();
    let refuse = |m: String| OrchRefusal(m);
    if tensors.len() != p.tensors.len() {
        return Err(refuse(format!(
            "expected {} tensors, found {}",
            p.tensors.len(),
            tensors.len()
        )));
    }
    let tinfo: Vec<(Ty, usize)> = tensors
        .iter()
        .map(|t| (elem_ty(t), t.shape.len()))
        .collect();
    let facts = Facts {
        p,
        params,
        tensors: &tinfo,
    };
    let isa = crate::host_isa().map_err(|e| refuse(format!("no host ISA: {e}")))?;
    let mut jb = JITBuilder::with_isa(isa, default_libcall_names());
    for (name, addr, _) in callbacks::symbols() {
        jb.symbol(name, addr);
    }
    let mut module = JITModule::new(jb);
    let ptr = module.target_config().pointer_type();
    let mut imports = Vec::new();
    for (name, _, sig) in callbacks::symbols() {
        let mut s = module.make_signature();
        let (args, ret) = sig;
        for a in args {
            s.params.push(AbiParam::new(if *a == 'f' {
                types::F64
            } else {
                types::I64
            }));
        }
        s.returns.push(AbiParam::new(if ret == 'f' {
            types::F64
        } else {
            types::I64
        }));
        let id = module
            .declare_function(name, Linkage::Import, &s)
            .map_err(|e| refuse(format!("code generation failed: {e}")))?;
        imports.push(id);
    }
    let mut calls = Vec::new();
    let mut fails = Vec::new();
    let mut fctx = FunctionBuilderContext::new();
    let mut ctx = module.make_context();
    // (function id, slots, bufs, nvars) per body, workloads first.
    let mut bodies: Vec<(Option<cranelift_module::FuncId>, usize, usize, usize)> = Vec::new();
    let mut jobs: Vec<(String, &[String], &[WStmt], bool)> = Vec::new();
    for wl in &p.workloads {
        match &wl.body {
            WorkloadBody::Block { stmts } => jobs.push((wl.name.clone(), &wl.vars, stmts, false)),
            _ => jobs.push((wl.name.clone(), &[], &[], false)),
        }
    }
    for pr in &p.processes {
        jobs.push((pr.name.clone(), &pr.vars, &pr.body, true));
    }
    for (i, (name, vars, stmts, process)) in jobs.iter().enumerate() {
        let is_block = *process
            || matches!(
                p.workloads.get(i).map(|w| &w.body),
                Some(WorkloadBody::Block { .. })
            );
        if !is_block {
            bodies.push((None, 0, 0, 0));
            continue;
        }
        let mut sig = module.make_signature();
        sig.params.push(AbiParam::new(ptr));
        sig.params.push(AbiParam::new(ptr));
        sig.returns.push(AbiParam::new(types::I64));
        let fid = module
            .declare_function(&format!("wsp_orch_{i}"), Linkage::Local, &sig)
            .map_err(|e| refuse(format!("code generation failed: {e}")))?;
        ctx.func.signature = sig;
        let (slots, nbufs) = {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let r: Vec<_> = imports
                .iter()
                .map(|id| module.declare_func_in_func(*id, b.func))
                .collect();
            let cb = Cb {
                sync: r[0],
                order: r[1],
                begin: r[2],
                view: r[3],
                task: r[4],
                run: r[5],
                send: r[6],
                recv: r[7],
                elem: r[8],
                ragged: r[9],
                span: r[10],
                col: r[11],
                clear: r[12],
                push: r[13],
                tuple: r[14],
                data: r[15],
                fail: r[16],
                fmod: r[17],
                fmin: r[18],
                fmax: r[19],
                local: r[20],
            };
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            let slots_v = b.block_params(entry)[0];
            let ctx_v = b.block_params(entry)[1];
            let start = b.create_block();
            let err = b.create_block();
            // The entry goes first in the layout; the dispatch on the resume point is filled
            // in by `finish`.
            let dispatch = b.create_block();
            b.switch_to_block(entry);
            b.ins().jump(dispatch, &[]);
            b.switch_to_block(start);
            let nv = vars.len();
            let mut g = Gen {
                f: &facts,
                b,
                cb,
                slots: slots_v,
                ctx: ctx_v,
                process: *process,
                var_names: vars,
                next_slot: 1 + 3 * nv,
                nbufs: 0,
                resume: vec![start],
                err,
                bound: vec![false; nv],
                gen: None,
                fails: &mut fails,
                calls: &mut calls,
            };
            g.block(stmts).map_err(|m| {
                refuse(format!(
                    "{} `{name}`: {m}",
                    if *process { "process" } else { "workload" }
                ))
            })?;
            let (slots, nbufs) = (g.next_slot, g.nbufs);
            g.finish(dispatch, module.target_config());
            (slots, nbufs)
        };
        module
            .define_function(fid, &mut ctx)
            .map_err(|e| refuse(format!("code generation failed in `{name}`: {e:?}")))?;
        module.clear_context(&mut ctx);
        bodies.push((Some(fid), slots, nbufs, vars.len()));
    }
    module
        .finalize_definitions()
        .map_err(|e| refuse(format!("code generation failed: {e}")))?;
    let mut made: Vec<Option<Body>> = bodies
        .into_iter()
        .map(|(fid, slots, bufs, nvars)| {
            fid.map(|fid| {
                let code = module.get_finalized_function(fid);
                // SAFETY: `code` is a finalised function declared with the `StepFn` signature.
                let f = unsafe { std::mem::transmute::<*const u8, StepFn>(code) };
                Body {
                    f,
                    slots,
                    bufs,
                    nvars,
                }
            })
        })
        .collect();
    let processes: Vec<Body> = made
        .split_off(p.workloads.len())
        .into_iter()
        .flatten()
        .collect();
    Ok(CompiledOrch {
        p,
        params: params.to_vec(),
        workloads: made,
        processes,
        calls,
        fails,
        compile_time: t0.elapsed(),
        _module: module,
    })
}

fn xerr(message: impl Into<String>) -> ExecError {
    ExecError::new(wsp_vocab::codes::E0810, message)
}

/// The state shared by every body invocation of one run.
struct Host<'h> {
    o: &'h CompiledOrch<'h>,
    tensors: &'h mut [HostTensor],
    backend: &'h mut dyn TaskBackend,
    out: Vec<TaskRecord>,
    depth: usize,
}

/// Channel I/O of a process step: handed to an outside scheduler, or the interpreter-style
/// round-robin's own channels.
enum Io<'c> {
    /// A workload body: no channels.
    None,
    External(&'c mut ExtIo),
    Internal {
        chans: &'c mut [exec::Chan],
        st: &'c mut ProcState,
    },
}

#[derive(Default)]
struct ExtIo {
    inbox: Option<Option<Vec<i64>>>,
    action: Option<ProcAction>,
}

/// Channel state of a process instance under the built-in round-robin.
#[derive(Default)]
struct ProcState {
    pending: Option<(ChannelId, Vec<i64>)>,
    awaiting: Option<(ChannelId, u64)>,
    waiting: Option<String>,
}

impl ProcState {
    fn send_state(&mut self) -> exec::SendState<'_> {
        exec::SendState {
            pending: &mut self.pending,
            awaiting: &mut self.awaiting,
            waiting: &mut self.waiting,
        }
    }
}

/// What a callback sees: the run, the invocation's frame and thread.
pub(crate) struct Ctx<'c, 'h> {
    host: *mut Host<'h>,
    slots: *mut i64,
    bufs: &'c mut Vec<Vec<i64>>,
    thread: &'c str,
    /// `Some`: a process instance (its tasks carry its name).
    process: bool,
    io: Io<'c>,
    err: Option<ExecError>,
    /// The current task's coordinates, the evaluated dimensions of the view being resolved,
    /// its arguments (views resolve in place, reusing the last task's) and axis coordinates:
    /// buffers reused from task to task.
    coords: Vec<i64>,
    dims: Vec<(i64, Option<i64>)>,
    args: Vec<TaskValue>,
    axes: Vec<(AxisId, i64)>,
    /// Views the current task has resolved.
    nviews: usize,
    /// The body's loop variable count (the slot layout's `V`).
    nvars: usize,
}

impl Ctx<'_, '_> {
    fn slot(&self, i: usize) -> i64 {
        // SAFETY: every slot index the generated code passes is below the body's slot count
        // (allocated by the same lowering), and `slots` points at that many.
        unsafe { *self.slots.add(i) }
    }
}

/// Runs one invocation of `body` on `frame`.
fn invoke(
    host: *mut Host<'_>,
    body: &Body,
    frame: &mut Frame,
    thread: &str,
    process: bool,
    io: Io<'_>,
) -> Result<i64, ExecError> {
    let Frame { slots, bufs } = frame;
    let mut cx = Ctx {
        host,
        slots: slots.as_mut_ptr(),
        bufs,
        thread,
        process,
        io,
        err: None,
        coords: Vec::new(),
        dims: Vec::new(),
        args: Vec::new(),
        axes: Vec::new(),
        nviews: 0,
        nvars: body.nvars,
    };
    // SAFETY: `slots` has the body's slot count, `cx` outlives the call, and the callbacks
    // only touch them through the pointers handed over.
    let r = unsafe { (body.f)(cx.slots, &mut cx) };
    if r < 0 {
        return Err(cx
            .err
            .take()
            .unwrap_or_else(|| xerr(format!("in {thread}: the compiled orchestration failed"))));
    }
    Ok(r)
}

impl<'p> CompiledOrch<'p> {
    /// Runs workload `w` like [`wsp_ir::exec::run_workload_on`], sending every task to
    /// `backend`. `params` must be the ones the orchestration was compiled for.
    pub fn run_workload_on(
        &self,
        w: WorkloadId,
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
        backend: &mut dyn TaskBackend,
    ) -> Result<ExecOutcome, ExecError> {
        if tensors.len() != self.p.tensors.len() {
            return Err(xerr(format!(
                "expected {} tensors, found {}",
                self.p.tensors.len(),
                tensors.len()
            )));
        }
        self.check_params(params)?;
        let mut host = Host {
            o: self,
            tensors,
            backend,
            out: Vec::new(),
            depth: 0,
        };
        run_workload(&mut host, w)?;
        Ok(ExecOutcome { tasks: host.out })
    }

    fn check_params(&self, params: &[ScalarValue]) -> Result<(), ExecError> {
        if params != self.params.as_slice() {
            return Err(xerr(
                "the orchestration was compiled for other params; compile it again",
            ));
        }
        Ok(())
    }

    /// The process instances of a `connect` ([`wsp_ir::exec::connect_instances`]), compiled.
    pub fn connect_threads(
        &self,
        items: &[ConnectItem],
    ) -> Result<Vec<CompiledProc<'_>>, ExecError> {
        exec::connect_instances(self.p, items)?
            .into_iter()
            .map(|(id, pr, name)| {
                let body = self
                    .processes
                    .get(id.index())
                    .ok_or_else(|| xerr(format!("process `{}` is not compiled", pr.name)))?;
                Ok(CompiledProc {
                    o: self,
                    body,
                    frame: body.frame(),
                    name,
                    io: ExtIo::default(),
                    st: ProcState::default(),
                    produces: pr.produces.clone(),
                    done: false,
                })
            })
            .collect()
    }
}

/// One process instance of a `connect`, compiled; stepped by an outside scheduler.
pub struct CompiledProc<'o> {
    o: &'o CompiledOrch<'o>,
    body: &'o Body,
    frame: Frame,
    name: String,
    io: ExtIo,
    st: ProcState,
    /// The channels this instance produces.
    pub produces: Vec<ChannelId>,
    done: bool,
}

impl CompiledProc<'_> {
    /// `name` or `name#replica`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs the process until its next visible action, like
    /// [`wsp_ir::exec::ProcThread::step`].
    pub fn step(
        &mut self,
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
        backend: &mut dyn TaskBackend,
        received: Option<Option<Vec<i64>>>,
        tasks: &mut Vec<TaskRecord>,
    ) -> Result<ProcAction, ExecError> {
        self.o.check_params(params)?;
        self.io.action = None;
        if received.is_some() {
            self.io.inbox = received;
        }
        if self.done {
            return Ok(ProcAction::Finished);
        }
        let mut host = Host {
            o: self.o,
            tensors,
            backend,
            out: Vec::new(),
            depth: 1,
        };
        let r = invoke(
            &mut host,
            self.body,
            &mut self.frame,
            &self.name,
            true,
            Io::External(&mut self.io),
        );
        tasks.append(&mut host.out);
        let r = r?;
        if r == DONE {
            self.done = true;
        }
        Ok(match (r, self.io.action.take()) {
            (_, Some(a)) => a,
            (DONE, None) => ProcAction::Finished,
            (PROGRESS, None) => ProcAction::Continue,
            _ => {
                return Err(xerr(format!(
                    "process `{}` blocked without a channel action",
                    self.name
                )))
            }
        })
    }

    /// One step under the built-in round-robin (the interpreter's `Machine::step` for a
    /// process thread with its own channels).
    fn step_internal(
        &mut self,
        host: *mut Host<'_>,
        chans: &mut [exec::Chan],
    ) -> Result<i64, ExecError> {
        let p = self.o.p;
        self.st.waiting = None;
        if let Some((c, serial)) = self.st.awaiting {
            let ch = chans.get(c.index()).ok_or_else(|| xerr("bad channel"))?;
            if ch.queue.iter().any(|(s, _)| *s == serial) {
                self.st.waiting = Some(format!(
                    "for its token on `{}` to be taken",
                    exec::chan_name(p, c)
                ));
                return Ok(BLOCKED);
            }
            self.st.awaiting = None;
        }
        if let Some((c, tok)) = self.st.pending.take() {
            return Ok(if exec::try_send(p, chans, c, tok, self.st.send_state())? {
                PROGRESS
            } else {
                BLOCKED
            });
        }
        invoke(
            host,
            self.body,
            &mut self.frame,
            &self.name,
            true,
            Io::Internal {
                chans,
                st: &mut self.st,
            },
        )
    }
}

fn run_workload(host: &mut Host<'_>, w: WorkloadId) -> Result<(), ExecError> {
    host.depth += 1;
    if host.depth > 64 {
        return Err(xerr(
            "workloads nest more than 64 deep (a workload runs itself?)",
        ));
    }
    let o = host.o;
    let wl =
        o.p.workloads
            .get(w.index())
            .ok_or_else(|| xerr(format!("workload #{} does not exist", w.0)))?;
    let order = |host: &mut Host<'_>, e: OrderEvent| host.backend.order(e).map_err(xerr);
    let r = match &wl.body {
        WorkloadBody::Block { .. } => {
            let body = o
                .workloads
                .get(w.index())
                .and_then(Option::as_ref)
                .ok_or_else(|| xerr(format!("workload `{}` is not compiled", wl.name)))?;
            let mut frame = body.frame();
            let name = format!("workload `{}`", wl.name);
            order(host, OrderEvent::Begin { seq: false })?;
            let r = invoke(host, body, &mut frame, &name, false, Io::None)?;
            if r != DONE {
                return Err(xerr(format!("{name} uses a channel outside a process")));
            }
            order(host, OrderEvent::End)
        }
        WorkloadBody::Sequential { parts } => {
            order(host, OrderEvent::Begin { seq: true })?;
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    host.backend.barrier(host.tensors).map_err(xerr)?;
                    order(host, OrderEvent::Step)?;
                }
                run_workload(host, *part)?;
            }
            order(host, OrderEvent::End)
        }
        WorkloadBody::Combine { parts } => {
            order(host, OrderEvent::Begin { seq: false })?;
            for part in parts {
                run_workload(host, *part)?;
            }
            order(host, OrderEvent::End)
        }
        WorkloadBody::Connect { processes } => {
            match host
                .backend
                .connect(o.p, &wl.name, processes, &o.params, host.tensors)
            {
                Some(r) => r.map(|tasks| host.out.extend(tasks)),
                None => run_connect(host, &wl.name, processes),
            }
        }
    };
    host.depth -= 1;
    r
}

/// The built-in deterministic round-robin of a `connect` (the interpreter's, shared:
/// [`exec::round_robin`]).
fn run_connect(host: &mut Host<'_>, wname: &str, items: &[ConnectItem]) -> Result<(), ExecError> {
    let o = host.o;
    let mut threads = o.connect_threads(items)?;
    let host: *mut Host<'_> = host;
    exec::round_robin(
        o.p,
        wname,
        &mut threads,
        |t| t.produces.clone(),
        |t| (t.name.clone(), t.st.waiting.clone().unwrap_or_default()),
        |th, chans| {
            Ok(match th.step_internal(host, chans)? {
                PROGRESS => exec::Step::Progress,
                BLOCKED => exec::Step::Blocked,
                _ => exec::Step::Done,
            })
        },
    )
}
