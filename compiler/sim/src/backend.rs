//! The backend the orchestration drives: a [`TaskBackend`] that submits each task to the
//! runtime (regions, cycles, keys, placement), reads data back when the orchestration needs it,
//! and runs a `connect`'s processes as runtime processes.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use wsp_ir::cost;
use wsp_ir::data;
use wsp_ir::dtype::ScalarValue;
use wsp_ir::exec::{self, TaskBackend, TaskInstance, TaskValue};
use wsp_ir::kernel::ParamKind;
use wsp_ir::schedule::{Keys, Spatial};
use wsp_ir::tensor::{Data, HostTensor};
use wsp_ir::workload::{Program, TensorId};
use wsp_runtime as rt;
use wsp_runtime::{Arch, ProcCx, Runtime, RuntimeError};
use wsp_vocab::codes;

use crate::error::limit_message;
use crate::options::PROGRESS_EVERY;
use crate::placement::Sharded;

/// Everything needed to turn a generated task into a runtime submission.
pub(crate) struct Submitter<'p> {
    pub(crate) p: &'p Program,
    pub(crate) ids: Vec<rt::KernelId>,
    pub(crate) keys: Keys,
    pub(crate) arch: Arch,
    pub(crate) costs: HashMap<(u32, cost::Extents), u64>,
    /// Per kernel, the extents and cost of its last task (its tasks mostly share them).
    pub(crate) last_cost: Vec<Option<(cost::Extents, u64)>>,
    pub(crate) execute: bool,
    /// Per tensor: a task writes it.
    pub(crate) written: Vec<bool>,
    /// The task being submitted (its buffers are reused).
    pub(crate) pr: Prepared,
    /// Its extents per argument, reused.
    pub(crate) extents: cost::Extents,
    pub(crate) counts: Vec<u64>,
    /// Runtime tensor of rank 1 standing in for a rank-0 program tensor.
    pub(crate) scalar_tensor: Vec<bool>,
    /// Runtime channel of each program channel.
    pub(crate) channels: Vec<rt::ChannelId>,
    pub(crate) submitted: u64,
    pub(crate) progress: Option<fn(u64, u64, Option<u64>)>,
    /// The run's task count, when known before it runs (for `progress`).
    pub(crate) expected: Option<u64>,
    /// Keep the per-task records of [`SimRun::outcome`] ([`Options::record`]).
    ///
    /// [`SimRun::outcome`]: crate::SimRun::outcome
    /// [`Options::record`]: crate::Options::record
    pub(crate) records: bool,
    /// With `records`: the call site of each task submitted, in submission order.
    pub(crate) sites: Vec<Option<wsp_ir::workload::SrcSpan>>,
    /// Timing-only: how to fill a tensor of [`data::declare_tensors`] that the orchestration
    /// reads (parameters, base directory, `--input` files).
    pub(crate) deferred: Option<Sources>,
    /// The runtime tensor of each local tensor whose block is running (program tensor,
    /// instance): tasks that name the program tensor use the instance.
    pub(crate) locals: Vec<(u32, rt::TensorId)>,
    /// `.spatial_map`: the grid and its keys.
    pub(crate) spatial: Option<Spatial>,
    /// Per program tensor, its shards (`.layout`); empty when no tensor is sharded.
    pub(crate) shards: Vec<Option<Sharded>>,
    /// Per kernel: the cores of the class it runs on.
    pub(crate) kernel_cores: Vec<u32>,
}

/// What makes a program's tensors: its parameters, base directory and `--input` files.
type Sources = (Vec<ScalarValue>, PathBuf, Vec<(String, PathBuf)>);

/// A task ready to submit.
pub(crate) struct Prepared {
    kernel: rt::KernelId,
    args: Vec<rt::Arg>,
    scalars: Vec<i64>,
    cycles: u64,
    /// The dispatch, priority and stream keys.
    keys: [i64; 3],
    /// The core a placement fixes (`.spatial_map`, a shard's owner).
    place: Option<u32>,
}

impl Default for Prepared {
    fn default() -> Self {
        Prepared {
            kernel: rt::KernelId(0),
            args: Vec::new(),
            scalars: Vec::new(),
            cycles: 0,
            keys: [0; 3],
            place: None,
        }
    }
}

impl Prepared {
    fn desc<'a>(&'a self, coords: &'a [i64]) -> rt::TaskDesc<'a> {
        rt::TaskDesc {
            kernel: self.kernel,
            coords,
            args: &self.args,
            scalars: &self.scalars,
            cycles: self.cycles,
            key: self.keys[0],
            priority: self.keys[1],
            stream: self.keys[2],
            place: self.place,
        }
    }
}

/// A refused submission: the task's own fault (a bad region) is reported at the task; the
/// run stopping meanwhile (another task's kernel failed, a deadlock, a limit) is not.
fn submit_error(e: RuntimeError) -> exec::TaskError {
    match e {
        e @ RuntimeError::Api(_) => exec::TaskError::Task(e.to_string()),
        // A limit reached while this task was submitted: the run stops at its call.
        e @ (RuntimeError::WindowFull { .. } | RuntimeError::Limit(_)) => {
            exec::TaskError::Stopped(run_error(e))
        }
        other => exec::TaskError::Run(run_error(other)),
    }
}

/// A runtime error that stopped the run, for the orchestration to pass on: a deadlock
/// (E0811), a limit (E0815), a full abort window (E0816), anything else (E0810).
fn run_error(e: RuntimeError) -> exec::ExecError {
    match e {
        RuntimeError::Deadlock(r) => exec::ExecError::new(codes::E0811, r.to_string()),
        RuntimeError::Limit(l) => exec::ExecError::new(codes::E0815, limit_message(l)),
        e @ RuntimeError::WindowFull { .. } => exec::ExecError::new(codes::E0816, e.to_string()),
        other => exec::ExecError::new(codes::E0810, other.to_string()),
    }
}

impl Submitter<'_> {
    /// Prepares task `t` in `self.pr`.
    fn prepare(&mut self, t: &TaskInstance<'_>) -> Result<(), exec::TaskError> {
        let kid = t.kernel.index();
        let mut extents = std::mem::take(&mut self.extents);
        extents.clear();
        extents.extend(t.args.iter().map(|a| match a {
            TaskValue::Tile(v) => Some(v.valid),
            TaskValue::Scalar(_) => None,
        }));
        let memo = self.last_cost.get(kid).and_then(|m| m.as_ref());
        let cycles = match memo {
            Some((e, c)) if *e == extents => *c,
            _ => {
                let c = match self.costs.get(&(t.kernel.0, extents.clone())) {
                    Some(c) => *c,
                    None => {
                        let c = cost::task_cost(&self.arch, t.ir, &extents)?.compute;
                        self.costs.insert((t.kernel.0, extents.clone()), c);
                        c
                    }
                };
                if let Some(m) = self.last_cost.get_mut(kid) {
                    *m = Some((extents.clone(), c));
                }
                c
            }
        };
        self.extents = extents;
        let pr = &mut self.pr;
        pr.args.clear();
        pr.scalars.clear();
        for (param, a) in t.ir.params.iter().zip(t.args) {
            match (a, &param.kind) {
                (TaskValue::Tile(v), ParamKind::Tile { dir, .. }) => {
                    let tid = v.tensor.index();
                    let dir = match dir {
                        wsp_ir::kernel::Direction::In => rt::Direction::In,
                        wsp_ir::kernel::Direction::Out => rt::Direction::Out,
                        wsp_ir::kernel::Direction::InOut => rt::Direction::InOut,
                    };
                    if dir.writes() {
                        if self.written.len() <= tid {
                            self.written.resize(tid + 1, false);
                        }
                        self.written[tid] = true;
                    }
                    let tensor = match self.locals.iter().rev().find(|l| l.0 == v.tensor.0) {
                        Some(l) => l.1,
                        None => rt::TensorId(v.tensor.0),
                    };
                    let scalar = self.scalar_tensor.get(tid).copied().unwrap_or(false);
                    if !scalar && (v.dims.is_empty() || v.dims.len() > rt::MAX_RANK) {
                        // Refused by `dense`, with the view's rank.
                        let offs: Vec<i64> = v.dims.iter().map(|d| d.0).collect();
                        let exts: Vec<i64> = v.dims.iter().map(|d| d.1.max(1)).collect();
                        let region = rt::Region::dense(tensor, &offs, &exts).map_err(|e| e.0)?;
                        pr.args.push(rt::Arg { region, dir });
                    } else {
                        // Written in place (a region is 200 bytes, and building one to move
                        // it cost two copies): the runtime checks every region it is given,
                        // and a resolved view's offsets are ≥ 0 and its extents ≥ 1.
                        let n = if scalar { 1 } else { v.dims.len() };
                        pr.args.push(rt::Arg {
                            region: rt::Region {
                                tensor,
                                rank: n as u8,
                                offsets: [0; rt::MAX_RANK],
                                extents: [1; rt::MAX_RANK],
                                strides: [1; rt::MAX_RANK],
                            },
                            dir,
                        });
                        if let (false, Some(a)) = (scalar, pr.args.last_mut()) {
                            for (d, x) in v.dims.iter().enumerate() {
                                (a.region.offsets[d], a.region.extents[d]) = (x.0, x.1.max(1));
                            }
                        }
                    }
                    let d = |x: Option<usize>| x.map(|x| x as i64).unwrap_or(-1);
                    pr.scalars.push(d(v.row_dim));
                    pr.scalars.push(d(v.col_dim));
                }
                (TaskValue::Scalar(s), _) => pr.scalars.push(match s {
                    ScalarValue::Float(f) => f.to_bits() as i64,
                    ScalarValue::Int(i) => *i,
                    ScalarValue::UInt(u) => *u as i64,
                    ScalarValue::Bool(b) => i64::from(*b),
                }),
                _ => return Err(format!("argument `{}` is of the wrong kind", param.name).into()),
            }
        }
        let k = &self.keys;
        pr.keys = [
            Keys::eval(&k.dispatch, t.axes)?,
            Keys::eval(&k.priority, t.axes)?,
            Keys::eval(&k.stream, t.axes)?,
        ];
        let place = if self.spatial.is_some() || !self.shards.is_empty() {
            self.place(t)?
        } else {
            None
        };
        let pr = &mut self.pr;
        pr.place = place;
        pr.kernel = *self
            .ids
            .get(kid)
            .ok_or_else(|| format!("kernel #{kid} is not registered"))?;
        pr.cycles = cycles;
        if let Some(c) = self.counts.get_mut(kid) {
            *c += 1;
        }
        Ok(())
    }

    /// The core task `t`'s placements fix: its spatial map's cell, or the owner of the shards
    /// it touches (E0818 for a view across shards, E0819 for two placements that differ).
    fn place(&self, t: &TaskInstance<'_>) -> Result<Option<u32>, exec::TaskError> {
        let cores = self
            .kernel_cores
            .get(t.kernel.index())
            .copied()
            .unwrap_or(0);
        if cores == 0 {
            return Ok(None);
        }
        let stop = |code, m: String| exec::TaskError::Stopped(exec::ExecError::new(code, m));
        // (core, tensor, shard) of the first sharded view.
        let mut owner: Option<(u32, &str, i64)> = None;
        for a in t.args {
            let TaskValue::Tile(v) = a else { continue };
            let Some(Some(sh)) = self.shards.get(v.tensor.index()) else {
                continue;
            };
            let (off, ext) = v.dims.get(sh.dim).copied().unwrap_or((0, 1));
            let (first, last) = (off, off.saturating_add(ext.max(1) - 1));
            let (fs, ls) = (first.div_euclid(sh.size), last.div_euclid(sh.size));
            if fs != ls {
                return Err(stop(
                    codes::E0818,
                    format!(
                        "its view of `{}` covers indices {first}..={last} of dimension {}, across shards {fs} and {ls} (shards of {} indices, from `.layout`)",
                        sh.name, sh.dim, sh.size
                    ),
                ));
            }
            let core = fs.rem_euclid(i64::from(cores)) as u32;
            match owner {
                Some((c, name, s)) if c != core => {
                    return Err(stop(
                        codes::E0819,
                        format!(
                            "it touches shard {s} of `{name}`, owned by core {c}, and shard {fs} of `{}`, owned by core {core}: a task runs on one core",
                            sh.name
                        ),
                    ))
                }
                Some(_) => {}
                None => owner = Some((core, &sh.name, fs)),
            }
        }
        let Some(sp) = &self.spatial else {
            return Ok(owner.map(|o| o.0));
        };
        let cell = sp.core(t.axes)?;
        let cell = u32::try_from(cell).map_err(|_| format!("grid cell {cell} is out of range"))?;
        match owner {
            Some((c, name, s)) if c != cell => Err(stop(
                codes::E0819,
                format!(
                    "`.spatial_map` places it on core {cell}, but it touches shard {s} of `{name}`, owned by core {c}: a task runs on one core"
                ),
            )),
            _ => Ok(Some(cell)),
        }
    }

    fn submitted(&mut self, r: &Runtime, at: Option<&wsp_ir::workload::SrcSpan>) {
        self.submitted += 1;
        if self.records {
            self.sites.push(at.cloned());
        }
        if let Some(f) = self.progress {
            if self.submitted.is_multiple_of(PROGRESS_EVERY) {
                f(self.submitted, r.total_cycles(), self.expected);
            }
        }
    }

    /// Fills a declared-only tensor (timing-only) that the orchestration is about to read.
    fn materialise(&self, tensor: TensorId, tensors: &mut [HostTensor]) -> Result<(), String> {
        let (Some((params, base, inputs)), Some(t)) = (&self.deferred, tensors.get(tensor.index()))
        else {
            return Ok(());
        };
        if t.data.len() == t.shape.iter().product::<usize>() {
            return Ok(());
        }
        let m = data::materialise_tensor(self.p, params, base, inputs, tensor.index()).map_err(
            |e| {
                format!(
                    "the orchestration reads data that cannot be made: {} ({})",
                    e.message, e.code
                )
            },
        )?;
        tensors[tensor.index()] = m;
        Ok(())
    }

    fn sync(
        &self,
        r: &mut Runtime,
        tensor: TensorId,
        tensors: &mut [HostTensor],
    ) -> Result<(), String> {
        if !self.written.get(tensor.index()).copied().unwrap_or(false) {
            if !self.execute {
                return self.materialise(tensor, tensors);
            }
            // Its host values went once the runtime had its buffer: read them back (no task
            // writes it, so nothing to wait for).
            let made = tensors
                .get(tensor.index())
                .is_some_and(|t| t.len() == t.shape.iter().product::<usize>());
            return if made {
                Ok(())
            } else {
                read_back(r, tensor.index(), tensors)
            };
        }
        let name = self
            .p
            .tensors
            .get(tensor.index())
            .map(|t| t.name.as_str())
            .unwrap_or("?");
        if !self.execute {
            return Err(format!(
                "the orchestration reads `{name}`, which tasks write; --timing-only cannot run a program whose control flow depends on computed data"
            ));
        }
        r.wait_tensor(rt::TensorId(tensor.0))
            .map_err(|e| e.to_string())?;
        read_back(r, tensor.index(), tensors)
    }
}

/// The main orchestration's backend.
pub(crate) struct RtBackend<'p> {
    pub(crate) rt: Runtime,
    pub(crate) s: Submitter<'p>,
    /// The compiled orchestration, whose process bodies a `connect` steps (`None`: the
    /// interpreter's).
    pub(crate) orch: Option<&'p wsp_jit::CompiledOrch<'p>>,
}

/// A process instance the runtime steps: the interpreter's or the compiled one.
trait Stepper {
    fn name(&self) -> &str;
    fn produces(&self) -> &[wsp_ir::workload::ChannelId];
    fn step(
        &mut self,
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
        backend: &mut dyn TaskBackend,
        received: Option<Option<Vec<i64>>>,
        tasks: &mut Vec<exec::TaskRecord>,
    ) -> Result<exec::ProcAction, exec::ExecError>;
}

struct Interp<'p> {
    p: &'p Program,
    th: exec::ProcThread<'p>,
}

impl Stepper for Interp<'_> {
    fn name(&self) -> &str {
        self.th.name()
    }
    fn produces(&self) -> &[wsp_ir::workload::ChannelId] {
        &self.th.produces
    }
    fn step(
        &mut self,
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
        backend: &mut dyn TaskBackend,
        received: Option<Option<Vec<i64>>>,
        tasks: &mut Vec<exec::TaskRecord>,
    ) -> Result<exec::ProcAction, exec::ExecError> {
        self.th
            .step(self.p, params, tensors, backend, received, tasks)
    }
}

impl Stepper for wsp_jit::CompiledProc<'_> {
    fn name(&self) -> &str {
        wsp_jit::CompiledProc::name(self)
    }
    fn produces(&self) -> &[wsp_ir::workload::ChannelId] {
        &self.produces
    }
    fn step(
        &mut self,
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
        backend: &mut dyn TaskBackend,
        received: Option<Option<Vec<i64>>>,
        tasks: &mut Vec<exec::TaskRecord>,
    ) -> Result<exec::ProcAction, exec::ExecError> {
        wsp_jit::CompiledProc::step(self, params, tensors, backend, received, tasks)
    }
}

/// DOT attributes linking a task's node to its call site: `URL="wsp-site:START:END:FILE"`
/// (byte offsets into FILE, as `wsp` names it), which editors open on a click.
pub(crate) fn site_attrs(at: &wsp_ir::workload::SrcSpan) -> String {
    let q = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "URL=\"wsp-site:{}:{}:{}\", tooltip=\"{}\"",
        at.start,
        at.end,
        q(&at.file),
        q(&format!("the task call in {}", at.file))
    )
}

impl TaskBackend for RtBackend<'_> {
    fn keeps_records(&self) -> bool {
        self.s.records
    }
    fn task(&mut self, t: &TaskInstance<'_>, _: &mut [HostTensor]) -> Result<(), exec::TaskError> {
        self.s.prepare(t)?;
        self.rt
            .submit(&self.s.pr.desc(t.coords))
            .map_err(submit_error)?;
        self.s.submitted(&self.rt, t.at);
        Ok(())
    }

    fn sync(&mut self, tensor: TensorId, tensors: &mut [HostTensor]) -> Result<(), String> {
        self.s.sync(&mut self.rt, tensor, tensors)
    }

    fn barrier(&mut self, _: &mut [HostTensor]) -> Result<(), String> {
        self.rt.wait_all().map_err(|e| e.to_string())
    }

    /// A fresh instance of the local tensor from the runtime's heap arena (zeroed), for the
    /// tasks of its block; a full arena stalls here, one too small stops the run (E0811).
    fn local_begin(&mut self, tensor: TensorId, _: &mut [HostTensor]) -> Result<(), String> {
        let decl = self
            .s
            .p
            .tensors
            .get(tensor.index())
            .ok_or_else(|| format!("tensor #{} does not exist", tensor.0))?;
        let dims: Vec<i64> = decl.shape.iter().map(|a| a.constant).collect();
        self.rt.alloc_scope_begin();
        let id = self
            .rt
            .alloc_tensor(decl.dtype.size_bytes() as u64, &dims)
            .map_err(|e| format!("local tensor `{}`: {e}", decl.name))?;
        self.s.locals.push((tensor.0, id));
        Ok(())
    }

    /// The instance takes no more tasks; the arena gets it back once they have retired.
    fn local_end(&mut self, tensor: TensorId) -> Result<(), String> {
        match self.s.locals.pop() {
            Some((t, _)) if t == tensor.0 => self.rt.scope_end().map_err(|e| e.to_string()),
            _ => Err(format!("local tensor #{} ends out of order", tensor.0)),
        }
    }

    fn order(&mut self, event: exec::OrderEvent) -> Result<(), String> {
        match event {
            exec::OrderEvent::Begin { seq: true } => self.rt.order_begin(rt::Order::Seq),
            exec::OrderEvent::Begin { seq: false } => self.rt.order_begin(rt::Order::Par),
            exec::OrderEvent::Step => self.rt.order_step(),
            exec::OrderEvent::End => return self.rt.order_end().map_err(|e| e.to_string()),
        }
        Ok(())
    }

    /// Runs the processes of a `connect` as runtime processes: each steps its interpreter
    /// thread, submits its tasks from its own process (its own `pto_wsp_v9` clock), and sends
    /// and receives on runtime channels (depth, closing, deadlock reports are the runtime's).
    fn connect(
        &mut self,
        program: &Program,
        _workload: &str,
        items: &[wsp_ir::workload::ConnectItem],
        params: &[ScalarValue],
        tensors: &mut [HostTensor],
    ) -> Option<Result<Vec<exec::TaskRecord>, exec::ExecError>> {
        let threads: Result<Vec<Box<dyn Stepper + '_>>, exec::ExecError> = match self.orch {
            Some(o) => o.connect_threads(items).map(|ts| {
                ts.into_iter()
                    .map(|t| Box::new(t) as Box<dyn Stepper + '_>)
                    .collect()
            }),
            None => exec::connect_threads(program, items).map(|ts| {
                ts.into_iter()
                    .map(|th| Box::new(Interp { p: program, th }) as Box<dyn Stepper + '_>)
                    .collect()
            }),
        };
        let threads = match threads {
            Ok(t) => t,
            Err(e) => return Some(Err(e)),
        };
        let RtBackend { rt, s, .. } = self;
        let channels = s.channels.clone();
        let shared = RefCell::new((s, tensors, Vec::new()));
        // A step's error with its place (a limit reached at a task's submission): the runtime
        // passes step errors on as text.
        let located: RefCell<Option<exec::ExecError>> = RefCell::new(None);
        let mut specs = Vec::new();
        for mut th in threads {
            let name = th.name().to_string();
            let mut produces = Vec::new();
            for c in th.produces() {
                match channels.get(c.index()) {
                    Some(id) => produces.push(*id),
                    None => {
                        return Some(Err(exec::ExecError::new(
                            codes::E0810,
                            format!("process `{name}` produces an unknown channel"),
                        )))
                    }
                }
            }
            let sh = &shared;
            let at = &located;
            let chans = &channels;
            let body = move |cx: &mut ProcCx<'_>| -> Result<rt::Step, String> {
                let received = cx.received().map(|r| match r {
                    rt::Received::Token(t) => Some(t.values().to_vec()),
                    rt::Received::Closed => None,
                });
                let mut g = sh.borrow_mut();
                let (s, tensors, tasks) = &mut *g;
                let mut pb = ProcBackend { cx, s, last: None };
                let action = th
                    .step(params, tensors, &mut pb, received, tasks)
                    .map_err(|e| {
                        let m = e.message.clone();
                        if e.at.is_some() {
                            *at.borrow_mut() = Some(e);
                        }
                        m
                    })?;
                let ch = |c: wsp_ir::workload::ChannelId| {
                    chans
                        .get(c.index())
                        .copied()
                        .ok_or_else(|| format!("unknown channel #{}", c.0))
                };
                Ok(match action {
                    exec::ProcAction::Continue => rt::Step::Continue,
                    exec::ProcAction::Finished => rt::Step::Finished,
                    exec::ProcAction::Recv { channel } => rt::Step::Recv { ch: ch(channel)? },
                    exec::ProcAction::Send {
                        channel,
                        token,
                        after_task,
                    } => {
                        if token.len() > rt::MAX_RANK {
                            return Err(format!(
                                "a token of {} values (at most {})",
                                token.len(),
                                rt::MAX_RANK
                            ));
                        }
                        rt::Step::Send {
                            ch: ch(channel)?,
                            token: rt::Token::new(&token),
                            after: if after_task { pb.last } else { None },
                        }
                    }
                })
            };
            specs.push(rt::ProcSpec {
                name,
                body: Box::new(body),
                produces,
            });
        }
        let r = rt.run_processes(specs);
        let (_, _, tasks) = shared.into_inner();
        let located = located.into_inner();
        Some(r.map(|()| tasks).map_err(|e| match (e, located) {
            // A step's own error (a limit reached at a task's submission, a view out of
            // range): as the step reported it, at its task's call.
            (RuntimeError::Process { .. }, Some(x)) => x,
            (e, _) => run_error(e),
        }))
    }
}

/// The backend of one process step: submits through the process's context.
struct ProcBackend<'c, 'r, 's, 'p> {
    cx: &'c mut ProcCx<'r>,
    s: &'s mut Submitter<'p>,
    /// The task this step submitted (a token sent with it waits for it).
    last: Option<rt::TaskId>,
}

impl TaskBackend for ProcBackend<'_, '_, '_, '_> {
    fn keeps_records(&self) -> bool {
        self.s.records
    }
    fn task(&mut self, t: &TaskInstance<'_>, _: &mut [HostTensor]) -> Result<(), exec::TaskError> {
        self.s.prepare(t)?;
        let id = self
            .cx
            .submit(&self.s.pr.desc(t.coords))
            .map_err(submit_error)?;
        self.last = Some(id);
        self.s.submitted(self.cx.runtime(), t.at);
        Ok(())
    }

    fn sync(&mut self, tensor: TensorId, tensors: &mut [HostTensor]) -> Result<(), String> {
        self.s.sync(self.cx.runtime(), tensor, tensors)
    }

    fn barrier(&mut self, _: &mut [HostTensor]) -> Result<(), String> {
        self.cx.runtime().wait_all().map_err(|e| e.to_string())
    }

    fn connect(
        &mut self,
        _: &Program,
        workload: &str,
        _: &[wsp_ir::workload::ConnectItem],
        _: &[ScalarValue],
        _: &mut [HostTensor],
    ) -> Option<Result<Vec<exec::TaskRecord>, exec::ExecError>> {
        Some(Err(exec::ExecError::new(
            codes::E0810,
            format!(
                "a process runs `{workload}`, a `connect`; pipelines do not nest inside processes"
            ),
        )))
    }
}

fn read_back(r: &mut Runtime, i: usize, tensors: &mut [HostTensor]) -> Result<(), String> {
    let bytes = r
        .tensor_bytes(rt::TensorId(i as u32))
        .ok_or("the runtime lost a tensor")?;
    set_from_bytes(tensors, i, bytes)
}

/// [`read_back`] at the end of a run, moving the bytes out of the runtime: a tensor is never
/// held twice while the results are read.
pub(crate) fn take_back(
    r: &mut Runtime,
    i: usize,
    tensors: &mut [HostTensor],
) -> Result<(), String> {
    let bytes = r
        .take_tensor_bytes(rt::TensorId(i as u32))
        .ok_or("the runtime lost a tensor")?;
    set_from_bytes(tensors, i, &bytes)
}

/// Host tensor `i`'s values from the runtime's bytes of it.
fn set_from_bytes(tensors: &mut [HostTensor], i: usize, bytes: &[u8]) -> Result<(), String> {
    let t = tensors.get_mut(i).ok_or("bad tensor")?;
    let n = t.shape.iter().product();
    t.data = Data::from_bytes(t.dtype, bytes, n, false).ok_or("short tensor buffer")?;
    Ok(())
}
