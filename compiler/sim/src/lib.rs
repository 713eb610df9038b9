//! The `cpu_sim` backend: runs a Program IR on the task-graph runtime with real data.
//!
//! * The orchestration is JIT-compiled ([`wsp_jit::orch`]): workload bodies and CSP process
//!   bodies are native step functions that drive a [`TaskBackend`] which **submits** every
//!   task to the runtime instead of running it; when the orchestration reads data (a `when` on
//!   a runtime value, a Ragged length, a Sparse index) it waits for that tensor's producers
//!   ([`wsp_runtime::Runtime::wait_tensor`]). Process bodies are resumable state machines the
//!   runtime steps as its processes. With [`Options::interpret`] or
//!   [`Options::interpret_orchestration`], for a run that submits fewer tasks than
//!   [`Options::interpret_below`] (compiling would cost more than it saves), or when the
//!   compiler refuses the program (the reason is in [`SimRun::orchestration`]), the reference
//!   workload interpreter ([`wsp_ir::exec`]) drives the same backend instead; it is the
//!   compiled orchestration's oracle.
//! * Kernels are Cranelift-compiled ([`wsp_jit`]) when the JIT covers them (f32, f16, bf16,
//!   i32 and bool tiles); otherwise they run in the reference interpreter, and
//!   [`KernelInfo::engine`] says why.
//!   Either way the runtime calls them in dependency order on its own tensor buffers.
//! * Each task's compute cycles come from the architecture model's cost tables
//!   ([`wsp_ir::cost::task_cost`]; exactly v9's figure under `pto_wsp_v9`); the runtime adds
//!   dispatch, dependency and transfer time and keeps the clock.
//!
//! The schedule's directives become runtime [`Policies`]; a directive the simulator does not
//! enforce is an error, never silently dropped.
//!
//! `options` and `error` hold what a run is given and how it fails; `policies` and
//! `placement` what a schedule becomes on the runtime; `kernels` the kernel adapters on the
//! runtime's buffers; `backend` the [`TaskBackend`] that submits the tasks; `graph` the DOT of
//! a recorded run. This file holds the entry points and what a run reports.
//!
//! [`TaskBackend`]: exec::TaskBackend
//! [`Policies`]: rt::Policies

mod backend;
mod error;
pub mod graph;
mod kernels;
mod options;
mod placement;
mod policies;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wsp_ir::data::{self, ExpectReport};
use wsp_ir::exec::{self, ExecOutcome};
use wsp_ir::tensor::{Data, HostTensor};
use wsp_ir::workload::{Program, Stat, WorkloadId};
use wsp_runtime as rt;
use wsp_runtime::{CoreClass, Runtime, RuntimeError};
/// A deadlock's report and what its processes wait for (in [`SimError::Deadlock`]).
pub use wsp_runtime::{DeadlockReport, Wait};
use wsp_vocab::codes;

use backend::{site_attrs, take_back, Prepared, RtBackend, Submitter};
pub use error::SimError;
use error::{from_runtime, limit_message, schedule_error, setup};
use kernels::{Compiled, Interpreted};
pub use options::{Options, PROGRESS_EVERY, SMALL_RUN_TASKS};
pub use placement::kernel_class;
use placement::{grid_fits, placement_notes, sharded};
use policies::{policies, schedule_notes};

/// How a kernel was executed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    Jit,
    /// The reference interpreter, with the reason the JIT did not take it.
    Interpreter(String),
    /// Not run (`--timing-only`).
    None,
}

/// One kernel of the run.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    pub name: String,
    pub engine: Engine,
    pub class: CoreClass,
    pub tasks: u64,
}

/// Everything a run produced.
#[derive(Debug)]
pub struct SimRun {
    /// The schedule that ran (`None`: a lone workload).
    pub schedule: Option<String>,
    pub workload: String,
    /// Final contents of every global tensor, in [`Program::tensors`] order. An input that no
    /// expectation compares keeps what it started with and is not read back (its shape, no
    /// elements), nor is a local tensor; timing-only: data only for the tensors the
    /// orchestration read, the others have their shapes and no elements.
    pub tensors: Vec<HostTensor>,
    /// What the orchestration generated; its per-task list only with [`Options::record`].
    pub outcome: ExecOutcome,
    pub stats: rt::Stats,
    pub expects: Vec<ExpectReport>,
    pub kernels: Vec<KernelInfo>,
    /// Chrome trace JSON and Graphviz task graph (with [`Options::record`]).
    pub trace: Option<String>,
    pub graph: Option<String>,
    /// How the orchestration ran: [`Engine::Jit`] (compiled by [`wsp_jit::orch`]) or the
    /// reference workload interpreter, with the reason.
    pub orchestration: Engine,
    /// Time spent compiling kernels.
    pub compile_time: Duration,
    /// Time spent compiling the orchestration.
    pub orch_compile_time: Duration,
    /// Wall time of the run proper (orchestration, kernels, clock).
    pub run_time: Duration,
    /// How the model adapted the schedule (e.g. a `round_robin(n)` wider than a core class).
    pub notes: Vec<String>,
}

impl SimRun {
    /// True when every expectation holds.
    pub fn passed(&self) -> bool {
        self.expects.iter().all(|e| e.failure.is_none())
    }
}

/// Runs `program` on the runtime. Expectations are checked (failures are in
/// [`SimRun::expects`], not errors).
pub fn run(program: &Program, jit: &wsp_jit::Jit, opts: &Options) -> Result<SimRun, SimError> {
    run_recorded(program, jit, opts).0
}

/// The Chrome trace and the DOT task graph of a run that failed after it started (with
/// [`Options::record`]): a deadlock's or a failed task's are what one needs most.
#[derive(Clone, Debug, Default)]
pub struct Records {
    pub trace: Option<String>,
    pub graph: Option<String>,
}

impl RtBackend<'_> {
    /// The trace and the graph of workload `w` recorded so far.
    fn records(&self, program: &Program, w: WorkloadId, style: graph::Style) -> Records {
        let sites = &self.s.sites;
        let graph = graph::dot(program, w, &self.rt.task_graph(), sites, style, &|n| {
            let at = sites.get(usize::try_from(n).ok()?)?.as_ref()?;
            Some(site_attrs(at))
        });
        Records {
            trace: Some(self.rt.chrome_trace()),
            graph: Some(graph),
        }
    }
}

/// [`run`], and when the run fails after it started and [`Options::record`] asks for them,
/// its trace and graph up to the failure (empty otherwise).
pub fn run_recorded(
    program: &Program,
    jit: &wsp_jit::Jit,
    opts: &Options,
) -> (Result<SimRun, SimError>, Records) {
    let mut records = Records::default();
    let r = run_inner(program, jit, opts, &mut records);
    if r.is_ok() {
        records = Records::default();
    }
    (r, records)
}

fn run_inner(
    program: &Program,
    jit: &wsp_jit::Jit,
    opts: &Options,
    records: &mut Records,
) -> Result<SimRun, SimError> {
    let data_err = |e: data::DataError| SimError::Setup {
        code: e.code,
        message: e.message,
        at: e.at,
    };
    let params = data::resolve_params(program, &opts.set).map_err(data_err)?;
    // The tensors are declared (shapes, checked sources). A timing-only run computes no
    // results: only those its orchestration reads get data (and have their files' shapes
    // checked), when it reads them. Otherwise each is made when its runtime buffer is, and its
    // host values go at once (the orchestration reads them back when it needs them, and the
    // results are read at the end): the run never holds every tensor twice.
    let mut tensors = data::declare_tensors(
        program,
        &params,
        &opts.base_dir,
        &opts.inputs,
        !opts.timing_only,
    )
    .map_err(data_err)?;
    if !opts.timing_only {
        data::check_total_memory(program, &params, data::available_memory()).map_err(data_err)?;
    }
    let (sched, w) = program
        .select_run(opts.schedule.as_deref())
        .map_err(schedule_error)?;
    let (pol, keys, placement) = policies(program, sched).map_err(schedule_error)?;
    let mut notes = schedule_notes(program, w, &opts.arch, &pol);
    notes.extend(placement_notes(&placement, &opts.arch));
    let mut cfg = rt::Config::new(opts.arch.clone()).with_window(pol.task_window);
    // One task always fits, whatever the window (language.md: a window slows a run, never
    // deadlocks it).
    let views = program.kernels.iter().map(|k| {
        let tile =
            |p: &&wsp_ir::kernel::Param| matches!(p.kind, wsp_ir::kernel::ParamKind::Tile { .. });
        k.params.iter().filter(tile).count()
    });
    cfg.fit_region_args(views.max().unwrap_or(0));
    cfg.policies = pol;
    cfg.execute = !opts.timing_only;
    cfg.record = opts.record;
    cfg.threads = opts.threads.max(1);
    cfg.max_tasks = opts.max_tasks.unwrap_or(u64::MAX);
    cfg.max_cycles = opts.max_cycles.unwrap_or(rt::MAX_CYCLES);
    // A configuration the runtime refuses is a schedule (or model) it cannot run.
    let mut runtime = Runtime::new(cfg).map_err(|e| match e {
        RuntimeError::Api(m) => schedule_error(m),
        e => from_runtime(program, e),
    })?;

    let t0 = Instant::now();
    let mut kernels = Vec::new();
    let mut ids = Vec::new();
    for k in &program.kernels {
        let class = kernel_class(k);
        let (engine, body): (Engine, Arc<dyn rt::Kernel>) = if opts.timing_only {
            (Engine::None, Arc::new(Interpreted { k: k.clone() }))
        } else {
            let why = opts.interpret.then(|| "--interpret".to_string());
            match why {
                Some(w) => (
                    Engine::Interpreter(w),
                    Arc::new(Interpreted { k: k.clone() }),
                ),
                None => match jit.compile(k) {
                    Ok(ck) => (Engine::Jit, Arc::new(Compiled { ck, k: k.clone() })),
                    Err(e) if e.kind == wsp_jit::JitErrorKind::Unsupported => (
                        Engine::Interpreter(e.message),
                        Arc::new(Interpreted { k: k.clone() }),
                    ),
                    Err(e) => {
                        return Err(SimError::Exec {
                            code: codes::E0810,
                            message: e.to_string(),
                            at: None,
                            place: exec::Place::Task,
                        })
                    }
                },
            }
        };
        ids.push(runtime.register_kernel(&k.name, class, body));
        kernels.push(KernelInfo {
            name: k.name.clone(),
            engine,
            class,
            tasks: 0,
        });
    }
    let compile_time = t0.elapsed();
    if let Some(s) = &placement.spatial {
        grid_fits(program, s, &ids, &runtime)?;
    }
    let shards = if placement.shards.is_empty() {
        Vec::new()
    } else {
        sharded(program, &placement.shards, &tensors)?
    };
    let kernel_cores = ids.iter().map(|id| runtime.kernel_cores(*id)).collect();

    // The tasks the run submits, when its loops say so without data: for the small-run tier
    // and the progress display.
    let static_total = (opts.interpret_below.is_some() || opts.progress.is_some())
        .then(|| wsp_ir::counts::static_task_total(program, w, &params))
        .flatten();
    let t2 = Instant::now();
    let (orch, orchestration) = if opts.interpret {
        (None, Engine::Interpreter("--interpret".into()))
    } else if opts.interpret_orchestration {
        (
            None,
            Engine::Interpreter("the interpreted orchestration was requested".into()),
        )
    } else if let Some(n) = opts
        .interpret_below
        .and_then(|below| static_total.filter(|n| *n < below))
    {
        (
            None,
            Engine::Interpreter(format!(
                "a small run ({n} tasks): interpreting it costs less than compiling it"
            )),
        )
    } else {
        match wsp_jit::compile_orchestration(program, &params, &tensors) {
            Ok(o) => (Some(o), Engine::Jit),
            Err(why) => (None, Engine::Interpreter(why.0)),
        }
    };
    let orch_compile_time = t2.elapsed();
    let t1 = Instant::now();
    let mut scalar_tensor = Vec::new();
    for (i, t) in tensors.iter().enumerate() {
        let es = t.dtype.size_bytes() as u64;
        let dims: Vec<i64> = if t.shape.is_empty() {
            vec![1]
        } else {
            t.shape.iter().map(|d| *d as i64).collect()
        };
        // A local tensor's instances come from the heap arena while its block runs; its
        // program id stands for them and holds one element.
        let local = program.tensors[i].kind == wsp_ir::workload::TensorKind::Local;
        let dims = if local { vec![1] } else { dims };
        let decl = &program.tensors[i];
        // Zeros need no host values: the runtime's buffer starts zeroed.
        let zeros = data::starts_zeroed(decl, &opts.inputs);
        if zeros && !opts.timing_only && !local {
            // Read back at the end as host values: within the limit of host tensors.
            data::check_host(decl, &t.shape).map_err(data_err)?;
        }
        let bytes = if opts.timing_only || local || zeros {
            None
        } else {
            // The host values (within the limit of host tensors), then the runtime's copy.
            let made = data::materialise_tensor(program, &params, &opts.base_dir, &opts.inputs, i)
                .map_err(data_err)?;
            let what = format!("tensor `{}`", program.tensors[i].name);
            let n = t.shape.iter().product::<usize>();
            data::can_allocate(&what, n.saturating_mul(es as usize)).map_err(data_err)?;
            Some(made.data.to_bytes(made.dtype))
        };
        let id = runtime
            .add_tensor_data(es, &dims, bytes)
            .map_err(|e| setup(format!("tensor `{}`: {e}", program.tensors[i].name)))?;
        if id.0 as usize != i {
            return Err(setup("runtime tensor ids are out of step"));
        }
        scalar_tensor.push(t.shape.is_empty());
    }
    let channels = program
        .channels
        .iter()
        .map(|c| runtime.add_channel(&c.name, c.depth, c.latency))
        .collect();
    let mut backend = RtBackend {
        orch: orch.as_ref(),
        rt: runtime,
        s: Submitter {
            p: program,
            ids,
            keys,
            arch: opts.arch.clone(),
            costs: HashMap::new(),
            last_cost: vec![None; program.kernels.len()],
            execute: !opts.timing_only,
            written: Vec::new(),
            pr: Prepared::default(),
            extents: Vec::new(),
            counts: vec![0; program.kernels.len()],
            scalar_tensor,
            channels,
            submitted: 0,
            progress: opts.progress,
            expected: opts.progress.and(static_total),
            records: opts.record,
            sites: Vec::new(),
            deferred: opts
                .timing_only
                .then(|| (params.clone(), opts.base_dir.clone(), opts.inputs.clone())),
            locals: Vec::new(),
            spatial: placement.spatial,
            shards,
            kernel_cores,
        },
    };
    let outcome = match &orch {
        Some(o) => o.run_workload_on(w, &params, &mut tensors, &mut backend),
        None => exec::run_workload_on(program, w, &params, &mut tensors, &mut backend),
    };
    if outcome.is_err() && opts.record {
        *records = backend.records(program, w, opts.graph_style);
    }
    let outcome = match outcome {
        Ok(o) => o,
        // A limit or a deadlock that stopped the run reaches here as text when a submission
        // or a process step passed it on; the runtime keeps the limit and the report.
        // A limit reached at a submission keeps that task's call as its place.
        Err(e) if let Some(l) = backend.rt.limit_reached() => {
            return Err(SimError::Exec {
                code: codes::E0815,
                message: limit_message(l),
                at: e.at,
                place: exec::Place::Task,
            })
        }
        // So does a kernel failure, which the submission that found it passed on as text.
        Err(_) if let Some(k) = backend.rt.kernel_failure() => {
            return Err(from_runtime(program, k.clone()))
        }
        // The runtime keeps the report of the deadlock that stopped it, whichever path (a
        // submission, a process step) passed the error on as text.
        Err(e) if e.code == codes::E0811 || backend.rt.deadlock_report().is_some() => {
            let report = backend.rt.deadlock_report().cloned().map(Box::new);
            return Err(SimError::Deadlock(e.message, report));
        }
        Err(e) => {
            return Err(SimError::Exec {
                code: e.code,
                message: e.message,
                at: e.at,
                place: e.place,
            })
        }
    };
    let stats = match backend.rt.finish() {
        Ok(s) => s,
        Err(e) => {
            if opts.record {
                *records = backend.records(program, w, opts.graph_style);
            }
            return Err(from_runtime(program, e));
        }
    };
    if !opts.timing_only {
        // Inputs keep what they started with (no task writes one): read back only those an
        // expectation compares; the others' buffers are just freed.
        let read = data::read_back_at_end(program);
        for i in 0..tensors.len() {
            if !read[i] {
                tensors[i].data = Data::zeros(tensors[i].dtype, 0);
                drop(backend.rt.take_tensor_bytes(rt::TensorId(i as u32)));
                continue;
            }
            take_back(&mut backend.rt, i, &mut tensors).map_err(|m| SimError::Exec {
                code: codes::E0810,
                message: m,
                at: None,
                place: exec::Place::Task,
            })?;
        }
    }
    let run_time = t1.elapsed();
    for (k, c) in kernels.iter_mut().zip(&backend.s.counts) {
        k.tasks = *c;
    }
    let (trace, graph) = if opts.record {
        let r = backend.records(program, w, opts.graph_style);
        (r.trace, r.graph)
    } else {
        (None, None)
    };
    let total = i64::try_from(stats.total_cycles).unwrap_or(i64::MAX);
    let ntasks = i64::try_from(stats.tasks).unwrap_or(i64::MAX);
    // A timing-only run has statistics but no results: only their expectations are checked.
    let timing_only = opts.timing_only;
    let expects = data::check_expects_where(
        program,
        &tensors,
        &opts.base_dir,
        |s| match s {
            Stat::TotalCycles => Some(total),
            Stat::Tasks => Some(ntasks),
        },
        |e| !timing_only || matches!(e, wsp_ir::workload::Expect::Stat { .. }),
    )
    .map_err(data_err)?;
    Ok(SimRun {
        schedule: sched.map(|s| s.name.clone()),
        workload: program
            .workloads
            .get(w.index())
            .map(|w| w.name.clone())
            .unwrap_or_default(),
        tensors,
        outcome,
        stats,
        expects,
        kernels,
        trace,
        graph,
        orchestration,
        compile_time,
        orch_compile_time,
        run_time,
        notes,
    })
}

/// The directory a program's relative `load(...)` paths resolve against.
pub fn base_dir_of(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}
