//! What to run and how: the run's [`Options`], and how often its progress is reported.

use std::path::PathBuf;
use wsp_runtime::Arch;

use crate::graph;

/// What to run and how.
#[derive(Clone, Debug)]
pub struct Options {
    /// The schedule to run (see [`Program::select_run`]).
    ///
    /// [`Program::select_run`]: wsp_ir::workload::Program::select_run
    pub schedule: Option<String>,
    /// `--set NAME=VALUE` for params and DenseDyn sizes.
    pub set: Vec<(String, String)>,
    /// `--input NAME=path.npy`.
    pub inputs: Vec<(String, PathBuf)>,
    /// Where `load("...")` paths are relative to (the program's directory).
    pub base_dir: PathBuf,
    pub arch: Arch,
    /// Time only: kernels are not run and outputs are not computed.
    pub timing_only: bool,
    /// Record a Chrome trace, the task graph and the per-task list of [`SimRun::outcome`]
    /// (memory grows with the task count).
    ///
    /// [`SimRun::outcome`]: crate::SimRun::outcome
    pub record: bool,
    /// Host threads running kernels (1: on the orchestrating thread).
    pub threads: usize,
    /// Run every kernel and the orchestration in the reference interpreters (no JIT).
    pub interpret: bool,
    /// Run the orchestration in the reference workload interpreter (kernels still JIT).
    pub interpret_orchestration: bool,
    /// Interpret the orchestration, instead of compiling it, when its loops say without data
    /// that the run submits fewer tasks than this ([`wsp_ir::counts::static_task_total`]):
    /// compiling costs a few milliseconds, interpreting a fraction of a microsecond more a
    /// task ([`SMALL_RUN_TASKS`] is where they meet). `None`: always compile.
    pub interpret_below: Option<u64>,
    /// Stop with E0815 instead of submitting more tasks than this, or of letting semantic
    /// time pass this cycle (a bound for pipelines that never end).
    pub max_tasks: Option<u64>,
    pub max_cycles: Option<u64>,
    /// How the task graph is drawn (with `record`).
    pub graph_style: graph::Style,
    /// Called every [`PROGRESS_EVERY`] tasks with the tasks submitted, the cycles so far and
    /// the tasks the run will submit when its loops say so without data
    /// ([`wsp_ir::counts::static_task_total`]): a progress display, with an ETA when known.
    pub progress: Option<fn(u64, u64, Option<u64>)>,
}

/// The task count below which `wsp run` interprets the orchestration
/// ([`Options::interpret_below`]): compiling the LLaMA layer's orchestration takes about 4 ms,
/// and the interpreter costs about 0.36 µs more a task (docs/perf.md).
pub const SMALL_RUN_TASKS: u64 = 8192;

/// How often [`Options::progress`] is called, in tasks.
pub const PROGRESS_EVERY: u64 = 4096;

impl Options {
    pub fn new(arch: Arch, base_dir: impl Into<PathBuf>) -> Options {
        Options {
            schedule: None,
            set: Vec::new(),
            inputs: Vec::new(),
            base_dir: base_dir.into(),
            arch,
            timing_only: false,
            record: false,
            threads: 1,
            interpret: false,
            interpret_orchestration: false,
            interpret_below: None,
            max_tasks: None,
            max_cycles: None,
            graph_style: graph::Style::default(),
            progress: None,
        }
    }
}
