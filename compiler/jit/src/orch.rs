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

/// The host callbacks of the generated code. Each returns 0 (or a value) on success and −1
/// after storing the error in the context; none unwinds.
mod callbacks {
    use super::*;

    type Sig = (&'static [char], char);

    /// `(symbol, address, (argument kinds, result kind))`; `i`: i64 or pointer, `f`: f64.
    /// The order is the one of [`super::codegen::Cb`].
    pub fn symbols() -> Vec<(&'static str, *const u8, Sig)> {
        const I2: &[char] = &['i', 'i'];
        const I3: &[char] = &['i', 'i', 'i'];
        const I4: &[char] = &['i', 'i', 'i', 'i'];
        const I5: &[char] = &['i', 'i', 'i', 'i', 'i'];
        const F2: &[char] = &['f', 'f'];
        vec![
            ("wsp_o_sync", sync as *const u8, (I2, 'i')),
            ("wsp_o_order", order as *const u8, (I2, 'i')),
            ("wsp_o_begin", begin as *const u8, (I2, 'i')),
            ("wsp_o_view", view as *const u8, (I3, 'i')),
            ("wsp_o_task", task as *const u8, (I2, 'i')),
            ("wsp_o_run", run as *const u8, (I2, 'i')),
            ("wsp_o_send", send as *const u8, (I5, 'i')),
            ("wsp_o_recv", recv as *const u8, (I4, 'i')),
            ("wsp_o_elem", elem as *const u8, (I5, 'i')),
            ("wsp_o_ragged", ragged as *const u8, (I4, 'i')),
            ("wsp_o_span", span as *const u8, (I4, 'i')),
            ("wsp_o_col", col as *const u8, (I4, 'i')),
            ("wsp_o_clear", clear as *const u8, (I2, 'i')),
            ("wsp_o_push", push as *const u8, (I4, 'i')),
            ("wsp_o_tuple", tuple as *const u8, (I4, 'i')),
            ("wsp_o_data", data as *const u8, (I3, 'i')),
            ("wsp_o_fail", fail as *const u8, (I4, 'i')),
            ("wsp_o_fmod", fmod as *const u8, (F2, 'f')),
            ("wsp_o_fmin", fmin as *const u8, (F2, 'f')),
            ("wsp_o_fmax", fmax as *const u8, (F2, 'f')),
            ("wsp_o_local", local as *const u8, (I3, 'i')),
        ]
    }

    /// Runs `f` on the context; an error is stored and reported as −1.
    fn with(
        cx: *mut Ctx<'_, '_>,
        f: impl FnOnce(&mut Ctx<'_, '_>) -> Result<i64, ExecError>,
    ) -> i64 {
        // SAFETY: the generated code passes back the context `invoke` gave it, alive and not
        // otherwise borrowed during the callback.
        let cx = unsafe { &mut *cx };
        match f(cx) {
            Ok(v) => v,
            Err(e) => {
                cx.err = Some(e);
                -1
            }
        }
    }

    /// [`with`] for a callback of call site `s`: its errors are placed at the call.
    fn with_site(
        cx: *mut Ctx<'_, '_>,
        s: i64,
        f: impl FnOnce(&mut Ctx<'_, '_>) -> Result<i64, ExecError>,
    ) -> i64 {
        with(cx, |cx| {
            f(cx).map_err(|e| match site(cx, s) {
                Ok((site, _)) => e.within(&site.call.at),
                Err(_) => e,
            })
        })
    }

    fn host<'a, 'h>(cx: &Ctx<'_, 'h>) -> &'a mut Host<'h> {
        // SAFETY: the host outlives every invocation; callbacks run one at a time and a
        // nested invocation (`run`) only starts from a callback that does not touch the
        // host again after it returns.
        unsafe { &mut *cx.host }
    }

    fn id(x: i64) -> u32 {
        u32::try_from(x).unwrap_or(u32::MAX)
    }

    extern "C" fn sync(cx: *mut Ctx<'_, '_>, t: i64) -> i64 {
        with(cx, |cx| {
            let h = host(cx);
            h.backend.sync(TensorId(id(t)), h.tensors).map_err(xerr)?;
            Ok(0)
        })
    }

    extern "C" fn order(cx: *mut Ctx<'_, '_>, ev: i64) -> i64 {
        with(cx, |cx| {
            let e = match ev {
                codegen::BEGIN_PAR => OrderEvent::Begin { seq: false },
                codegen::BEGIN_SEQ => OrderEvent::Begin { seq: true },
                codegen::STEP => OrderEvent::Step,
                _ => OrderEvent::End,
            };
            host(cx).backend.order(e).map_err(xerr)?;
            Ok(0)
        })
    }

    fn orch<'h>(cx: &Ctx<'_, 'h>) -> &'h CompiledOrch<'h> {
        // SAFETY: the host outlives every invocation (see `host`).
        unsafe { (*cx.host).o }
    }

    fn site<'h>(
        cx: &Ctx<'_, 'h>,
        s: i64,
    ) -> Result<(&'h CallSite, &'h wsp_ir::kernel::Kernel), ExecError> {
        let o = orch(cx);
        let site = o
            .calls
            .get(usize::try_from(s).unwrap_or(usize::MAX))
            .ok_or_else(|| xerr("bad call site"))?;
        let k =
            o.p.kernel(site.call.kernel)
                .ok_or_else(|| xerr(format!("kernel #{} does not exist", site.call.kernel.0)))?;
        Ok((site, k))
    }

    extern "C" fn begin(cx: *mut Ctx<'_, '_>, s: i64) -> i64 {
        with_site(cx, s, |cx| {
            let (site, _) = site(cx, s)?;
            let mut coords = std::mem::take(&mut cx.coords);
            coords.clear();
            coords.extend((0..site.call.coords.len()).map(|i| cx.slot(site.coords + i)));
            cx.coords = coords;
            // One argument per parameter (a view left from the last task is reused).
            let n = site.args.len();
            cx.args.truncate(n);
            while cx.args.len() < n {
                cx.args.push(TaskValue::Scalar(ScalarValue::Int(0)));
            }
            cx.nviews = 0;
            Ok(0)
        })
    }

    extern "C" fn view(cx: *mut Ctx<'_, '_>, s: i64, arg: i64) -> i64 {
        with_site(cx, s, |cx| {
            let (site, k) = site(cx, s)?;
            let a = usize::try_from(arg).unwrap_or(usize::MAX);
            let (Some(param), Some(TaskArg::View(v)), Some(SiteArg::View { base })) =
                (k.params.get(a), site.call.args.get(a), site.args.get(a))
            else {
                return Err(xerr("bad view argument"));
            };
            let ParamKind::Tile { tile, partial, .. } = param.kind else {
                return Err(xerr("bad view argument"));
            };
            let h = host(cx);
            let t = h
                .tensors
                .get(v.tensor.index())
                .ok_or_else(|| xerr("bad tensor"))?;
            let rank = t.shape.len();
            let mut dims = std::mem::take(&mut cx.dims);
            dims.clear();
            for d in 0..rank {
                dims.push(match v.dims.get(d) {
                    Some(ViewDim::Index { .. }) => (cx.slot(base + 2 * d), None),
                    Some(ViewDim::Slice { .. }) => {
                        (cx.slot(base + 2 * d), Some(cx.slot(base + 2 * d + 1)))
                    }
                    Some(ViewDim::Full) | None => {
                        (0, Some(t.shape.get(d).copied().unwrap_or(0) as i64))
                    }
                });
            }
            let name = TaskName {
                kernel: k,
                coords: &cx.coords,
            };
            let Some(slot) = cx.args.get_mut(a) else {
                return Err(xerr("bad view argument"));
            };
            if !matches!(slot, TaskValue::Tile(_)) {
                *slot = TaskValue::Tile(TileView::empty());
            }
            let TaskValue::Tile(tv) = slot else {
                return Err(xerr("bad view argument"));
            };
            let r = exec::resolve_view_dims(
                h.o.p,
                h.tensors,
                v,
                &dims,
                tile,
                partial,
                &name,
                &param.name,
                tv,
            );
            cx.dims = dims;
            r?;
            cx.nviews += 1;
            Ok(0)
        })
    }

    extern "C" fn task(cx: *mut Ctx<'_, '_>, s: i64) -> i64 {
        with(cx, |cx| {
            let (site, k) = site(cx, s)?;
            let mut args = std::mem::take(&mut cx.args);
            let views = site
                .args
                .iter()
                .filter(|a| matches!(a, SiteArg::View { .. }))
                .count();
            if cx.nviews != views || args.len() != site.args.len() {
                cx.args = args;
                return Err(xerr("a view was not resolved"));
            }
            for (x, a) in args.iter_mut().zip(&site.args) {
                if let SiteArg::Scalar { slot, ty } = a {
                    let bits = cx.slot(*slot);
                    *x = TaskValue::Scalar(match ty {
                        Ty::I => ScalarValue::Int(bits),
                        Ty::F => ScalarValue::Float(f64::from_bits(bits as u64)),
                        Ty::B => ScalarValue::Bool(bits != 0),
                    });
                }
            }
            let nvars = cx.nvars;
            cx.axes.clear();
            for v in 0..nvars {
                let (val, bound, axis) = (
                    cx.slot(1 + v),
                    cx.slot(1 + nvars + v),
                    cx.slot(1 + 2 * nvars + v),
                );
                if axis >= 0 && bound != 0 {
                    cx.axes.push((AxisId(id(axis)), val));
                }
            }
            let process = cx.process.then_some(cx.thread);
            let inst = TaskInstance {
                kernel: site.call.kernel,
                ir: k,
                coords: &cx.coords,
                args: &args,
                process,
                axes: &cx.axes,
                at: site.call.at.as_ref(),
            };
            let h = host(cx);
            let r = h.backend.task(&inst, h.tensors);
            if let Err(e) = r {
                return Err(e.of_task(&inst.label(), &site.call.at));
            }
            if h.backend.keeps_records() {
                let rec = TaskRecord::new(site.call.kernel, &cx.coords, process, &args);
                host(cx).out.push(rec);
            }
            cx.args = args;
            Ok(0)
        })
    }

    /// A local tensor's block begins (`begin` 1) or ends (0).
    extern "C" fn local(cx: *mut Ctx<'_, '_>, t: i64, begin: i64) -> i64 {
        with(cx, |cx| {
            let h = host(cx);
            let t = TensorId(id(t));
            if begin != 0 {
                wsp_ir::exec::local_begin(&mut *h.backend, h.tensors, t)?;
            } else {
                h.backend.local_end(t).map_err(xerr)?;
            }
            Ok(0)
        })
    }

    extern "C" fn run(cx: *mut Ctx<'_, '_>, w: i64) -> i64 {
        with(cx, |cx| {
            run_workload(host(cx), WorkloadId(id(w)))?;
            Ok(0)
        })
    }

    fn token(ptr: i64, n: i64) -> Vec<i64> {
        let n = usize::try_from(n).unwrap_or(0);
        // SAFETY: the generated code passes the address of `n` slots of its own block.
        unsafe { std::slice::from_raw_parts(ptr as *const i64, n) }.to_vec()
    }

    extern "C" fn send(cx: *mut Ctx<'_, '_>, ch: i64, ptr: i64, n: i64, after: i64) -> i64 {
        with(cx, |cx| {
            let tok = token(ptr, n);
            let c = ChannelId(id(ch));
            let p = host(cx).o.p;
            match &mut cx.io {
                Io::External(io) => {
                    io.action = Some(ProcAction::Send {
                        channel: c,
                        token: tok,
                        after_task: after != 0,
                    });
                    Ok(0)
                }
                Io::Internal { chans, st } => {
                    exec::try_send(p, chans, c, tok, st.send_state())?;
                    Ok(0)
                }
                Io::None => Err(xerr("a channel operation outside a process")),
            }
        })
    }

    /// 0: a token (written to `out`), 1: closed and empty, 2: blocked.
    extern "C" fn recv(cx: *mut Ctx<'_, '_>, ch: i64, out: i64, n: i64) -> i64 {
        with(cx, |cx| {
            let c = ChannelId(id(ch));
            let p = host(cx).o.p;
            let nb = usize::try_from(n).unwrap_or(0);
            let tok = match &mut cx.io {
                Io::External(io) => match io.inbox.take() {
                    None => {
                        io.action = Some(ProcAction::Recv { channel: c });
                        return Ok(2);
                    }
                    Some(None) => return Ok(1),
                    Some(Some(tok)) => tok,
                },
                Io::Internal { chans, st } => {
                    let q = chans
                        .get_mut(c.index())
                        .ok_or_else(|| xerr("bad channel"))?;
                    match q.queue.pop_front() {
                        Some((_, tok)) => tok,
                        None if q.live_producers == 0 => return Ok(1),
                        None => {
                            st.waiting = Some(format!("on `{}` (empty)", exec::chan_name(p, c)));
                            return Ok(2);
                        }
                    }
                }
                Io::None => return Err(xerr("a channel operation outside a process")),
            };
            if tok.len() < nb {
                return Err(xerr(format!(
                    "in {}: a token of {} values on `{}` binds {} names",
                    cx.thread,
                    tok.len(),
                    exec::chan_name(p, c),
                    nb
                )));
            }
            // SAFETY: `out` addresses `n` slots of the body's block.
            let dst = unsafe { std::slice::from_raw_parts_mut(out as *mut i64, nb) };
            dst.copy_from_slice(&tok[..nb]);
            Ok(0)
        })
    }

    extern "C" fn elem(cx: *mut Ctx<'_, '_>, t: i64, idx: i64, n: i64, out: i64) -> i64 {
        with(cx, |cx| {
            let index = token(idx, n);
            let h = host(cx);
            let v = exec::read_elem(h.o.p, h.tensors, TensorId(id(t)), &index, cx.thread)?;
            let bits = match v {
                ScalarValue::Float(f) => f.to_bits() as i64,
                ScalarValue::Int(i) => i,
                ScalarValue::UInt(u) => i64::try_from(u).unwrap_or(i64::MAX),
                ScalarValue::Bool(b) => i64::from(b),
            };
            // SAFETY: `out` addresses one slot of the body's block.
            unsafe { *(out as *mut i64) = bits };
            Ok(0)
        })
    }

    extern "C" fn ragged(cx: *mut Ctx<'_, '_>, a: i64, b: i64, out: i64) -> i64 {
        with(cx, |cx| {
            let h = host(cx);
            let n = exec::ragged_row_len(h.o.p, h.tensors, AxisId(id(a)), b, cx.thread)?;
            // SAFETY: `out` addresses one slot of the body's block.
            unsafe { *(out as *mut i64) = n };
            Ok(0)
        })
    }

    extern "C" fn span(cx: *mut Ctx<'_, '_>, a: i64, b: i64, out: i64) -> i64 {
        with(cx, |cx| {
            let h = host(cx);
            let (s, e) = exec::sparse_row_span(h.o.p, h.tensors, AxisId(id(a)), b, cx.thread)?;
            // SAFETY: `out` addresses two slots of the body's block.
            unsafe {
                *(out as *mut i64) = s;
                *(out as *mut i64).add(1) = e;
            }
            Ok(0)
        })
    }

    extern "C" fn col(cx: *mut Ctx<'_, '_>, a: i64, i: i64, out: i64) -> i64 {
        with(cx, |cx| {
            let h = host(cx);
            let c = exec::sparse_col(h.o.p, h.tensors, AxisId(id(a)), i, cx.thread)?;
            // SAFETY: `out` addresses one slot of the body's block.
            unsafe { *(out as *mut i64) = c };
            Ok(0)
        })
    }

    fn buf<'a>(cx: &'a mut Ctx<'_, '_>, b: i64) -> Result<&'a mut Vec<i64>, ExecError> {
        cx.bufs
            .get_mut(usize::try_from(b).unwrap_or(usize::MAX))
            .ok_or_else(|| xerr("bad buffer"))
    }

    extern "C" fn clear(cx: *mut Ctx<'_, '_>, b: i64) -> i64 {
        with(cx, |cx| {
            buf(cx, b)?.clear();
            Ok(0)
        })
    }

    extern "C" fn push(cx: *mut Ctx<'_, '_>, b: i64, ptr: i64, n: i64) -> i64 {
        with(cx, |cx| {
            let v = token(ptr, n);
            buf(cx, b)?.extend_from_slice(&v);
            Ok(0)
        })
    }

    /// Pushes a complete iteration tuple; more than [`MAX_LOOP_ITERATIONS`] is an error.
    extern "C" fn tuple(cx: *mut Ctx<'_, '_>, b: i64, ptr: i64, n: i64) -> i64 {
        with(cx, |cx| {
            let v = token(ptr, n);
            let thread = cx.thread.to_string();
            let bf = buf(cx, b)?;
            if bf.len() / v.len().max(1) >= MAX_LOOP_ITERATIONS {
                return Err(xerr(format!(
                    "in {thread}: a loop has more than {MAX_LOOP_ITERATIONS} iterations"
                )));
            }
            bf.extend_from_slice(&v);
            Ok(0)
        })
    }

    /// The address of buffer `b`'s values; their count goes to `len`.
    extern "C" fn data(cx: *mut Ctx<'_, '_>, b: i64, len: i64) -> i64 {
        with(cx, |cx| {
            let bf = buf(cx, b)?;
            // SAFETY: `len` addresses one slot of the body's block.
            unsafe { *(len as *mut i64) = bf.len() as i64 };
            Ok(bf.as_ptr() as i64)
        })
    }

    extern "C" fn fail(cx: *mut Ctx<'_, '_>, f: i64, a: i64, b: i64) -> i64 {
        with(cx, |cx| {
            let o = host(cx).o;
            let fail = o.fails.get(usize::try_from(f).unwrap_or(usize::MAX));
            let m = fail
                .map(|x| x.message(cx.thread, a, b))
                .unwrap_or_else(|| "unknown failure".into());
            match fail {
                Some(Fail::NegSize(_, at)) => Err(xerr(m).on_axis(at)),
                _ => Err(xerr(m)),
            }
        })
    }

    extern "C" fn fmod(x: f64, y: f64) -> f64 {
        x % y
    }
    extern "C" fn fmin(x: f64, y: f64) -> f64 {
        wsp_ir::num::minimum(x, y)
    }
    extern "C" fn fmax(x: f64, y: f64) -> f64 {
        wsp_ir::num::maximum(x, y)
    }
}
