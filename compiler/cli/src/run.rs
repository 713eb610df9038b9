//! `wsp run`: check and lower a program, JIT its kernels, run it on the task-graph runtime with
//! real data, write outputs, check expectations and report semantic time.
//!
//! Exit codes: 0 success; 1 the program has errors, a task failed, or an `expect` does not
//! hold; 2 bad usage or bad input data (missing or malformed files, unknown params); 3 the run
//! deadlocked (the runtime's report is printed); 4 the run reached `--max-tasks` or
//! `--max-cycles`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use wsp_diagnostics::render::{render_human, LineIndex};
use wsp_diagnostics::{Diagnostic, FileName, Label, Span};
use wsp_ir::exec::Place;
use wsp_ir::workload::SrcSpan;
use wsp_sim::{Options, SimError, SimRun};
use wsp_vocab::codes;

use crate::commit::FileSet;
use crate::report::{stats_json, summary};

/// What says which program runs and on what: shared by `wsp run` and `wsp graph`.
#[derive(clap::Args)]
pub struct ProgramArgs {
    /// The program to run (a .wsp file).
    path: PathBuf,
    /// The schedule to run (default: `main`, else the only schedule).
    #[arg(long)]
    schedule: Option<String>,
    /// Architecture model: a built-in name (ascend910b, ascend950, aie-ml, pto_wsp_v9) or a
    /// .toml file; default: the schedule's `.target(...)`, else ascend910b.
    #[arg(long)]
    arch: Option<String>,
    /// Set a param or DenseDyn size: `--set NAME=VALUE` (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Supply an input tensor from a .npy file: `--input NAME=path.npy` (repeatable).
    #[arg(long = "input", value_name = "NAME=PATH")]
    input: Vec<String>,
}

/// Arguments of `wsp run`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    program: ProgramArgs,
    /// Write every output tensor as NAME.npy into this directory (atomically: all or nothing).
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// Print run statistics: `json` on standard output.
    #[arg(long, value_name = "FORMAT")]
    stats: Option<String>,
    /// Write a Chrome/Perfetto trace of the modelled cores (JSON).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Write the task graph (Graphviz dot).
    #[arg(long, value_name = "FILE")]
    graph: Option<PathBuf>,
    /// Model time only: kernels do not run, outputs are not computed, data files' shapes are
    /// checked only for the tensors the orchestration reads; only expectations on
    /// `total_cycles` and `tasks` are checked.
    #[arg(long)]
    timing_only: bool,
    /// Run every kernel and the orchestration in the reference interpreters instead of the JIT.
    #[arg(long)]
    interpret: bool,
    /// Compile the orchestration even for a small run (by default a run whose loops say it
    /// submits fewer than 8,192 tasks interprets it: compiling would cost more).
    #[arg(long, conflicts_with = "interpret")]
    jit_orchestration: bool,
    /// Host threads running kernels (default 1: the orchestrating thread; at most 256).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: u16,
    /// Stop (error E0815, exit 4) rather than submit more tasks than this: a bound for
    /// pipelines that never end.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_tasks: Option<u64>,
    /// Stop (error E0815, exit 4) rather than let semantic time pass this cycle.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_cycles: Option<u64>,
    /// Print only errors and failed expectations.
    #[arg(long, short)]
    quiet: bool,
    /// `wsp graph`: only the graph is wanted, drawn so.
    #[arg(skip)]
    graph_only: Option<wsp_sim::graph::Style>,
}

/// Arguments of `wsp graph`.
#[derive(clap::Args)]
pub struct GraphArgs {
    #[command(flatten)]
    program: ProgramArgs,
    /// Where to write the graph: FILE.svg, FILE.png or FILE.pdf (laid out by Graphviz's `dot`),
    /// else DOT text (FILE.dot).
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Above this many tasks, draw one node per kernel call of each step (with its task count)
    /// instead of one per task.
    #[arg(long, value_name = "N", default_value_t = GROUP_ABOVE)]
    group_above: usize,
    /// Draw every task, however many.
    #[arg(long, conflicts_with = "group_above")]
    all: bool,
    /// Stop (error E0815, exit 4) rather than submit more tasks than this.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_tasks: Option<u64>,
}

/// Graphs of more tasks than this are drawn grouped unless asked otherwise: Graphviz lays out a
/// few hundred nodes in about a second, and a picture of thousands is not read task by task.
pub const GROUP_ABOVE: usize = 400;

impl From<GraphArgs> for Args {
    fn from(g: GraphArgs) -> Args {
        Args {
            program: g.program,
            out_dir: None,
            stats: None,
            trace: None,
            graph: Some(g.output),
            timing_only: true,
            interpret: false,
            jit_orchestration: false,
            threads: 1,
            max_tasks: g.max_tasks,
            max_cycles: None,
            quiet: true,
            graph_only: Some(wsp_sim::graph::Style {
                group_above: (!g.all).then_some(g.group_above),
            }),
        }
    }
}

/// Whether `path` names an image Graphviz draws (`svg`, `png`, `pdf`): its format.
fn image_format(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    ["svg", "png", "pdf"].into_iter().find(|f| *f == ext)
}

/// The bytes of a graph file: an image laid out by Graphviz's `dot` (`$WSP_DOT`, else `dot` on
/// the PATH) for `.svg`, `.png` and `.pdf`, else the DOT text itself.
fn graph_bytes(path: &Path, dot: &str) -> Result<Vec<u8>, String> {
    use std::io::Write;
    let Some(format) = image_format(path) else {
        return Ok(dot.as_bytes().to_vec());
    };
    let exe = std::env::var_os("WSP_DOT").unwrap_or_else(|| "dot".into());
    let child = std::process::Command::new(&exe)
        .arg(format!("-T{format}"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "drawing `{}` needs Graphviz's `dot` program, which is not installed: install \
                 Graphviz (Debian and Ubuntu: `apt-get install graphviz`; macOS: `brew install \
                 graphviz`; or set WSP_DOT to its path), or write the graph as DOT text with a \
                 `.dot` file name",
                path.display()
            ))
        }
        Err(e) => return Err(format!("cannot start `{}`: {e}", exe.to_string_lossy())),
    };
    // Written from a thread: `dot` may fill its output pipe before it has read all its input.
    let input = dot.to_string();
    let mut stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        stdin
            .as_mut()
            .map_or(Ok(()), |s| s.write_all(input.as_bytes()))
    });
    let out = child
        .wait_with_output()
        .map_err(|e| format!("Graphviz's `dot` failed: {e}"))?;
    let _ = writer.join();
    if !out.status.success() || out.stdout.is_empty() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "Graphviz's `dot` could not draw `{}`: {}",
            path.display(),
            why.trim()
        ));
    }
    Ok(out.stdout)
}

/// `NAME=VALUE` of option `what` (`--set`, `--input`), trimmed; an error naming the option.
pub(crate) fn split_kv(what: &str, s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("{what} `{s}` is not NAME=VALUE")),
    }
}

/// What to do when a run stops at `--max-tasks` or `--max-cycles` (E0815).
const LIMIT_HELP: &str = "a pipeline whose processes never finish runs until a limit stops it: \
     check that it ends (`wsp check` says W0505 when it cannot decide); `--max-tasks N` and \
     `--max-cycles N` set the limits";

/// A run-time error as a diagnostic: at the task call it happened in, at the axis whose data
/// is wrong, at the tensor whose data or shape is, or (a kernel's own failure) at the kernel.
fn run_error(e: &SimError, at: &SrcSpan) -> Diagnostic {
    let code = e.code();
    let (label, help) = match e {
        SimError::Kernel { .. } => (
            "this kernel failed",
            "the kernel's body failed on the tiles of the task named above",
        ),
        SimError::Setup { .. } => (
            "this tensor's data",
            "a tensor's shape and initialiser are checked before anything runs",
        ),
        SimError::Exec {
            place: Place::Axis, ..
        } => (
            "this axis's data",
            "a Ragged axis's row lengths, a Sparse axis's indptr and indices and a DenseDyn \
             axis's size are read when a loop reaches them",
        ),
        _ if code == codes::E0815 => ("the run stopped at this task", LIMIT_HELP),
        _ if code == codes::E0816 => (
            "this task found the window full",
            "the schedule's `.task_window(n, abort)` stops the run instead of waiting: raise \
             the window (a `benchmark` window reports how far it would grow), or let it stall",
        ),
        _ => (
            "in this task",
            "the task's views, keys and kernel are evaluated when it runs",
        ),
    };
    let label = crate::label_at(at, label);
    Diagnostic::new(code, e.message(), label)
        .with_help(format!("{help}; `wsp explain {code}` lists the causes"))
}

fn usage(m: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {m}");
    ExitCode::from(2)
}

pub fn main(a: Args) -> ExitCode {
    let wall = Instant::now();
    if a.program.path.is_dir() {
        return usage(format!(
            "`{}` is a directory; give one .wsp file",
            a.program.path.display()
        ));
    }
    if let Some(s) = &a.stats {
        if s != "json" {
            return usage(format!("`--stats {s}` is not known; use `--stats json`"));
        }
    }
    let mut inputs: Vec<(String, PathBuf)> = Vec::new();
    for s in &a.program.input {
        match split_kv("--input", s) {
            Ok((k, _)) if inputs.iter().any(|(n, _)| *n == k) => {
                return usage(format!("--input gives `{k}` twice; give each input once"))
            }
            Ok((k, v)) => inputs.push((k, PathBuf::from(v))),
            Err(m) => return usage(m),
        }
    }
    if let Some(d) = &a.out_dir {
        if d.exists() && !d.is_dir() {
            return usage(format!("--out-dir `{}` is not a directory", d.display()));
        }
    }

    // Check (resources on the model that will run: `--arch`, else the schedules' target)
    // and lower.
    let (mut ws, roots) = match crate::load::load(std::slice::from_ref(&a.program.path)) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let chosen = match a
        .program
        .arch
        .as_deref()
        .map(|n| crate::set_arch(&mut ws, n))
    {
        Some(Err(m)) => return usage(m),
        Some(Ok(arch)) => Some(arch),
        None => None,
    };
    let Some(root) = roots.first() else {
        return usage("nothing to run");
    };
    // Integer constants named by `--set` are set before checking and lowering; the rest bind
    // params and `DenseDyn` sizes at run time.
    let set = match crate::set_consts(&mut ws, &roots, &a.program.set) {
        Ok(rest) => rest,
        Err(m) => return usage(m),
    };
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let program = match wsp_lower::lower(&ws, root) {
        Ok(p) => p,
        Err(diags) => {
            eprint!("{}", render_human(&diags, &crate::WsSources(&ws), color));
            eprintln!(
                "error: `{root}`{} does not run: fix the errors above",
                crate::consts_note(&ws)
            );
            return ExitCode::from(1);
        }
    };

    // Every kernel a task calls runs: an extern kernel needs its `sim:` reference.
    let missing: Vec<Diagnostic> = program
        .kernels
        .iter()
        .filter(|k| k.body.is_none())
        .map(|k| {
            let at = k.at.clone().unwrap_or_else(|| SrcSpan {
                file: root.to_string(),
                start: 0,
                end: 0,
            });
            Diagnostic::new(
                codes::E0714,
                format!(
                    "the simulator has no implementation of the extern kernel `{}`",
                    k.name
                ),
                crate::label_at(&at, "no `sim:` reference",
                ),
            )
            .with_help(format!(
                "add `sim: {}_ref`, a `.wsp` kernel with the same parameters that `wsp run` runs in its place; `wsp explain E0714`",
                k.name
            ))
        })
        .collect();
    if !missing.is_empty() {
        eprint!("{}", render_human(&missing, &crate::WsSources(&ws), color));
        eprintln!("error: `{root}` does not run: fix the errors above");
        return ExitCode::from(1);
    }

    // The architecture model.
    let (sched, ran) = match program.select_run(a.program.schedule.as_deref()) {
        Ok(x) => x,
        Err(m) => return usage(m),
    };
    // A proven deadlock (E0509) of a pipeline this run runs lowers: the run shows it as it
    // happens.
    let proven: Vec<Diagnostic> = ws
        .pipeline_tokens_bound(root, &Default::default(), &ran_workloads(&program, ran))
        .into_iter()
        .filter(|d| d.code == codes::E0509)
        .collect();
    if !proven.is_empty() {
        eprint!("{}", render_human(&proven, &crate::WsSources(&ws), color));
        eprintln!("note: running `{root}` to show the deadlock `wsp check` proves (E0509)");
    }
    // `--arch` (loaded with the checks above), else the schedule's target (`cpu_sim` names
    // this simulator, not a model: it runs the default one), else ascend910b.
    let target = sched
        .and_then(|s| s.target())
        .filter(|t| *t != "cpu_sim")
        .map(str::to_string);
    let (arch, why) = match chosen {
        Some(arch) => (arch, "--arch".to_string()),
        None => {
            let why = match (&target, sched) {
                (Some(_), Some(s)) => format!("the `.target` of schedule `{}`", s.name),
                _ => "the default: no --arch, no schedule .target".to_string(),
            };
            let name = target.unwrap_or_else(|| "ascend910b".to_string());
            let n = wsp_core::memory::builtin_arch_name(&name).unwrap_or(name);
            match wsp_arch::Arch::builtin(&n) {
                Ok(x) => (x, why),
                Err(e) => return usage(e),
            }
        }
    };

    let mut opts = Options::new(arch, wsp_sim::base_dir_of(&a.program.path));
    opts.schedule = a.program.schedule.clone();
    opts.set = set;
    opts.inputs = inputs;
    opts.timing_only = a.timing_only;
    opts.record = a.trace.is_some() || a.graph.is_some();
    opts.threads = usize::from(a.threads);
    opts.interpret = a.interpret;
    opts.interpret_below = (!a.jit_orchestration).then_some(wsp_sim::SMALL_RUN_TASKS);
    opts.max_tasks = a.max_tasks;
    opts.max_cycles = a.max_cycles;
    // Pictures of more than a few hundred tasks are grouped (`wsp graph --all` draws them all);
    // DOT text keeps every task.
    opts.graph_style = a.graph_only.unwrap_or(wsp_sim::graph::Style {
        group_above: a
            .graph
            .as_deref()
            .and_then(image_format)
            .map(|_| GROUP_ABOVE),
    });
    if !a.quiet && std::io::stderr().is_terminal() {
        opts.progress = Some(progress);
    }

    // Compiled kernels are kept across runs (`WSP_CACHE_DIR`, `WSP_JIT_CACHE=off`).
    let jit = wsp_jit::Jit::with_disk_cache(wsp_jit::DiskCache::from_env());
    let _ = START.set(Instant::now());
    let (result, records) = wsp_sim::run_recorded(&program, &jit, &opts);
    if opts.progress.is_some() && SHOWN.load(std::sync::atomic::Ordering::Relaxed) {
        eprint!("\r\x1b[2K");
    }
    let run = match result {
        Ok(r) => r,
        Err(e) => {
            let place = match &e {
                SimError::Exec { at: Some(at), .. }
                | SimError::Kernel { at: Some(at), .. }
                | SimError::Setup { at: Some(at), .. } => Some(at),
                _ => None,
            };
            // After a deadlock: the static analysis of the same pipeline, with the params
            // bound to this run's values, names the smallest depths that complete, which the
            // runtime (seeing one stuck state) cannot.
            let (static_help, bound_text) = match &e {
                SimError::Deadlock(..) => deadlock_static_help(&ws, root, &program, ran, &opts.set),
                _ => (Vec::new(), String::new()),
            };
            let sources = crate::WsSources(&ws);
            match (place, &e) {
                (Some(at), _) => eprint!("{}", render_human(&[run_error(&e, at)], &sources, color)),
                (None, SimError::Deadlock(_, Some(report))) => {
                    match deadlock_diagnostic(report, &ws, &static_help, &bound_text) {
                        Some(d) => eprint!("{}", render_human(&[d], &sources, color)),
                        None => {
                            eprintln!("error[{}]: {report}", e.code());
                            for h in &static_help {
                                eprintln!("  static analysis{bound_text} (E0509): {h}");
                            }
                            eprintln!("  (causes and fixes: `wsp explain {}`)", e.code());
                        }
                    }
                }
                (None, _) => {
                    eprintln!("{e}");
                    eprintln!("  (causes and fixes: `wsp explain {}`)", e.code());
                }
            }
            if a.stats.is_some() {
                // `--stats json`: the error (with a deadlock's structured report) instead of
                // the statistics.
                let mut err = serde_json::json!({"code": e.code(), "message": e.message()});
                if let Some(at) = place {
                    let (line, column) = ws
                        .text(&FileName::new(at.file.as_str()))
                        .map_or((0, 0), |t| LineIndex::new(&t).line_col(&t, at.start));
                    err["location"] =
                        serde_json::json!({"file": at.file, "line": line, "column": column});
                }
                if let SimError::Deadlock(_, Some(report)) = &e {
                    err["deadlock"] = serde_json::json!(report);
                }
                if !static_help.is_empty() {
                    err["static_analysis"] = serde_json::json!(static_help
                        .iter()
                        .map(|h| format!("E0509{bound_text}: {h}"))
                        .collect::<Vec<_>>());
                }
                println!(
                    "{}",
                    serde_json::json!({"arch": opts.arch.name, "error": err})
                );
            }
            if e.code() == codes::E0815 && place.is_none() {
                eprintln!("  help: {LIMIT_HELP}");
            }
            // The trace and graph up to the failure: when they are needed most.
            match write_records(&records, &a) {
                Ok(Some(what)) => eprintln!("  wrote {what} up to the failure"),
                Ok(None) => {}
                Err(m) => eprintln!("error: {m}"),
            }
            return match e {
                SimError::Exec {
                    code: codes::E0815, ..
                } => ExitCode::from(4),
                SimError::Setup { .. } => ExitCode::from(2),
                SimError::Exec { .. } | SimError::Kernel { .. } => ExitCode::from(1),
                SimError::Deadlock(..) => ExitCode::from(3),
            };
        }
    };

    // Files: outputs, trace and graph, all or nothing.
    if let Err(m) = write_files(&program, &run, &a) {
        return usage(m);
    }
    if a.graph_only.is_some() {
        if let Some(path) = &a.graph {
            let grouped = a
                .graph_only
                .and_then(|s| s.group_above)
                .is_some_and(|m| run.stats.tasks > m as u64);
            println!(
                "wrote the task graph of `{root}` to `{}`: {} tasks{}",
                path.display(),
                run.stats.tasks,
                if grouped {
                    ", one node per kernel call of each step (`--all` draws every task)"
                } else {
                    ""
                }
            );
        }
        return ExitCode::SUCCESS;
    }

    if a.stats.is_some() {
        println!(
            "{}",
            stats_json(&run, &opts.arch.name, wall.elapsed(), jit.counts())
        );
    }
    if !a.quiet {
        // The summary goes to standard output, unless that carries the JSON statistics.
        let consts = crate::consts_note(&ws);
        let text = summary(
            &run,
            &opts,
            &a.program.path,
            wall.elapsed(),
            (&why, &consts),
            jit.counts(),
        );
        if a.stats.is_some() {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }
    let failed: Vec<_> = run.expects.iter().filter(|e| e.failure.is_some()).collect();
    if !failed.is_empty() {
        // In the check-time format, at the `expect` (the IR lists the root file's in order).
        let spans = expect_spans(&ws, root);
        let diags: Vec<Diagnostic> = failed
            .iter()
            .map(|e| {
                let message = format!(
                    "expect {} failed: {}",
                    e.description,
                    e.failure.as_deref().unwrap_or("")
                );
                let label = match spans.get(e.index) {
                    Some(span) => {
                        Label::new(FileName::new(root.as_str()), *span, "this expectation")
                    }
                    None => Label::new(
                        FileName::new(root.as_str()),
                        Span::new(0, 0),
                        "in this program",
                    ),
                };
                Diagnostic::new(codes::E0812, message, label).with_help(format!(
                    "measured: {}; the outputs are in the run's results (`--out-dir`) to compare",
                    e.measured
                ))
            })
            .collect();
        eprint!("{}", render_human(&diags, &crate::WsSources(&ws), color));
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
static SHOWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The progress line of a long run (after half a second), on a terminal's stderr.
fn progress(tasks: u64, cycles: u64, total: Option<u64>) {
    let Some(t0) = START.get() else { return };
    let secs = t0.elapsed().as_secs_f64();
    if secs < 0.5 {
        return;
    }
    SHOWN.store(true, std::sync::atomic::Ordering::Relaxed);
    eprint!("\r\x1b[2K  {}", progress_line(tasks, cycles, total, secs));
}

/// `running: 40960 of 102400 tasks (40%), 1234567 cycles, 81920 tasks/s, about 1 s left`;
/// without a known total, the tasks so far and the rate.
fn progress_line(tasks: u64, cycles: u64, total: Option<u64>, secs: f64) -> String {
    let rate = tasks as f64 / secs.max(1e-9);
    match total.filter(|t| *t >= tasks && *t > 0) {
        Some(t) => {
            let left = (t - tasks) as f64 / rate.max(1e-9);
            format!(
                "running: {tasks} of {t} tasks ({}%), {cycles} cycles, {rate:.0} tasks/s, about {} left",
                tasks * 100 / t,
                duration_words(left)
            )
        }
        None => format!("running: {tasks} tasks submitted, {cycles} cycles, {rate:.0} tasks/s"),
    }
}

/// `4 s`, `3 min 20 s`, `2 h 5 min`.
fn duration_words(secs: f64) -> String {
    let s = secs.round().max(0.0) as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// Writes every file the run produces — each output tensor as `NAME.npy` in `--out-dir`, the
/// trace, the graph — as one set (`crate::commit`): all go to temporary files first, then
/// replace their destinations together; when any step fails, every destination is left as it
/// was, and a switch that a killed run left half done is completed first.
fn write_files(p: &wsp_ir::Program, run: &SimRun, a: &Args) -> Result<(), String> {
    let mut dirs: Vec<PathBuf> = a.out_dir.iter().cloned().collect();
    dirs.extend(
        a.trace
            .iter()
            .chain(&a.graph)
            .map(|f| crate::commit::dir_of(f)),
    );
    dirs.sort();
    dirs.dedup();
    for d in &dirs {
        for line in crate::commit::recover(d) {
            if !a.quiet {
                eprintln!("note: {line}");
            }
        }
    }
    let mut staged = FileSet::default();
    // `--out-dir` and the parents it creates, deepest first: a failure removes them again.
    let mut created = Vec::new();
    if let (Some(dir), false) = (&a.out_dir, a.timing_only) {
        created = dir
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
            .map(Path::to_path_buf)
            .collect();
    }
    let r = stage_files(p, run, a, &mut staged).and_then(|()| staged.commit());
    if r.is_err() {
        for d in &created {
            // Only if empty: nothing of the user's is ever removed.
            let _ = std::fs::remove_dir(d);
        }
    }
    r
}

fn stage_files(
    p: &wsp_ir::Program,
    run: &SimRun,
    a: &Args,
    staged: &mut FileSet,
) -> Result<(), String> {
    if let (Some(dir), false) = (&a.out_dir, a.timing_only) {
        // One file a name: two outputs of one name (a file's own and an imported module's)
        // would overwrite each other.
        let outputs: Vec<&wsp_ir::TensorDecl> = p
            .tensors
            .iter()
            .filter(|d| d.kind == wsp_ir::TensorKind::Output)
            .collect();
        for (i, d) in outputs.iter().enumerate() {
            if let Some(e) = outputs[..i].iter().find(|e| e.name == d.name) {
                let file = |t: &wsp_ir::TensorDecl| {
                    t.at.as_ref()
                        .map_or_else(|| "?".to_string(), |s| s.file.clone())
                };
                return Err(format!(
                    "two outputs are named `{}` ({} and {}): `--out-dir` writes one `{}.npy`; rename one of them",
                    d.name,
                    file(e),
                    file(d),
                    d.name
                ));
            }
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
        for (decl, t) in p.tensors.iter().zip(&run.tensors) {
            if decl.kind == wsp_ir::TensorKind::Output {
                let dst = dir.join(format!("{}.npy", decl.name));
                staged.stage(&dst, &wsp_ir::npy::encode_npy(t))?;
            }
        }
    }
    if let (Some(path), Some(t)) = (&a.trace, &run.trace) {
        staged.stage(path, t.as_bytes())?;
    }
    if let (Some(path), Some(g)) = (&a.graph, &run.graph) {
        staged.stage(path, &graph_bytes(path, g)?)?;
    }
    Ok(())
}

/// A deadlock as a diagnostic in the program's terms: a label at each blocked process's
/// `send`/`consume` of the channel it waits on (at its declaration when it has none), the
/// mitigation and the static analysis's depths as help, the runtime's rings as a note. `None`
/// when no blocked process is declared in the loaded sources.
fn deadlock_diagnostic(
    report: &wsp_sim::DeadlockReport,
    ws: &wsp_core::Workspace,
    static_help: &[String],
    bound_text: &str,
) -> Option<Diagnostic> {
    use wsp_syntax::ast::{ItemKind, StmtKind};
    let parsed: Vec<_> = ws
        .paths()
        .into_iter()
        .filter_map(|p| Some((p.clone(), parsed(ws, &p)?)))
        .collect();
    let mut labels = Vec::new();
    for b in &report.blocked {
        let (verb, state) = match b.wait {
            wsp_sim::Wait::Full => ("send on", "full"),
            wsp_sim::Wait::Empty => ("receive from", "empty"),
        };
        let what = format!(
            "`{}` waits to {verb} `{}`: {state}, {}/{} tokens",
            b.process, b.channel, b.fill, b.depth
        );
        let base = b.process.split('#').next().unwrap_or(&b.process);
        let process = parsed.iter().find_map(|(path, parse)| {
            parse
                .file
                .items
                .iter()
                .find_map(|node| match &node.item.kind {
                    ItemKind::Process(p) if p.name.name == base => {
                        Some((path, node.range.start, p))
                    }
                    _ => None,
                })
        });
        let Some((path, off, p)) = process else {
            continue;
        };
        let file = FileName::new(path.as_str());
        let at = |s: Span| Span::new(off + s.start, off + s.end);
        let sites: Vec<Span> = wsp_syntax::visit::statements(&p.body)
            .into_iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Send { channel, .. } if b.wait == wsp_sim::Wait::Full => Some(channel),
                StmtKind::Consume { channel, .. } if b.wait == wsp_sim::Wait::Empty => {
                    Some(channel)
                }
                _ => None,
            })
            .filter(|c| c.name == b.channel)
            .map(|c| at(c.span))
            .collect();
        if sites.is_empty() {
            labels.push(Label::new(file, at(p.name.span), what));
        } else {
            for (k, s) in sites.into_iter().enumerate() {
                let m = if k == 0 { what.clone() } else { String::new() };
                labels.push(Label::new(file.clone(), s, m));
            }
        }
    }
    let mut labels = labels.into_iter();
    let mut d = Diagnostic::new(
        codes::E0811,
        format!("deadlock at cycle {}: {}", report.cycle, report.reason),
        labels.next()?,
    );
    for l in labels {
        d = d.with_label(l);
    }
    let mut help = report.mitigation.clone();
    for h in static_help {
        help.push_str(&format!("\nstatic analysis{bound_text} (E0509): {h}"));
    }
    let mut state = String::from("runtime state at the deadlock:");
    for line in report.state_lines() {
        state.push_str(&format!("\n  {line}"));
    }
    Some(d.with_help(help).with_note(state))
}

/// Writes the trace and graph of a failed run (`--trace`, `--graph`), all or nothing; says
/// what it wrote.
fn write_records(r: &wsp_sim::Records, a: &Args) -> Result<Option<String>, String> {
    let mut staged = FileSet::default();
    let mut what = Vec::new();
    if let (Some(path), Some(t)) = (&a.trace, &r.trace) {
        staged.stage(path, t.as_bytes())?;
        what.push(format!("the trace `{}`", path.display()));
    }
    if let (Some(path), Some(g)) = (&a.graph, &r.graph) {
        staged.stage(path, &graph_bytes(path, g)?)?;
        what.push(format!("the graph `{}`", path.display()));
    }
    if what.is_empty() {
        return Ok(None);
    }
    staged.commit()?;
    Ok(Some(what.join(" and ")))
}

/// The workspace's parse of a loaded file (memoised: the check already made it).
fn parsed<'w>(ws: &'w wsp_core::Workspace, path: &str) -> Option<&'w wsp_syntax::Parse> {
    Some(wsp_core::db::parse_file(ws.db(), ws.file_handle(path)?))
}

/// The byte ranges of the `expect` items of `root`, in order (what the IR's `expects` index).
fn expect_spans(ws: &wsp_core::Workspace, root: &str) -> Vec<Span> {
    parsed(ws, root).map_or_else(Vec::new, |p| {
        p.file
            .items
            .iter()
            .filter(|i| matches!(i.item.kind, wsp_syntax::ast::ItemKind::Expect(_)))
            .map(|i| i.range)
            .collect()
    })
}

/// The names of the workloads a run of `ran` runs: itself, and the workloads it composes.
fn ran_workloads(
    program: &wsp_ir::Program,
    ran: wsp_ir::WorkloadId,
) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut stack = vec![ran];
    while let Some(w) = stack.pop() {
        let Some(wl) = program.workloads.get(w.index()) else {
            continue;
        };
        if !names.insert(wl.name.clone()) {
            continue;
        }
        if let wsp_ir::WorkloadBody::Sequential { parts }
        | wsp_ir::WorkloadBody::Combine { parts } = &wl.body
        {
            stack.extend(parts.iter().copied());
        }
    }
    names
}

/// The help of the static deadlock analysis (E0509) for the pipelines of `root` that workload
/// `ran` runs (itself, or the workloads it composes), with its params bound to a run's values
/// (defaults, then `--set`), and how those values read (" with n = 8").
fn deadlock_static_help(
    ws: &wsp_core::Workspace,
    root: &str,
    program: &wsp_ir::Program,
    ran: wsp_ir::WorkloadId,
    set: &[(String, String)],
) -> (Vec<String>, String) {
    let names = ran_workloads(program, ran);
    let mut bound = std::collections::BTreeMap::new();
    if let Ok(vals) = wsp_ir::data::resolve_params(program, set) {
        for (p, v) in program.params.iter().zip(vals) {
            let v = match v {
                wsp_ir::ScalarValue::Int(i) => Some(i),
                wsp_ir::ScalarValue::UInt(u) => i64::try_from(u).ok(),
                _ => None,
            };
            if let Some(v) = v {
                bound.insert(p.name.clone(), v);
            }
        }
    }
    let help: Vec<String> = ws
        .pipeline_tokens_bound(root, &bound, &names)
        .into_iter()
        .filter(|d| d.code == codes::E0509)
        .filter_map(|d| d.help)
        .collect();
    let text = if bound.is_empty() {
        String::new()
    } else {
        let vals: Vec<String> = bound.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        format!(" with {}", vals.join(", "))
    };
    (help, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_has_an_eta_when_the_count_is_known() {
        assert_eq!(
            progress_line(40_960, 1_234, Some(102_400), 2.0),
            "running: 40960 of 102400 tasks (40%), 1234 cycles, 20480 tasks/s, about 3 s left"
        );
        assert_eq!(
            progress_line(4_096, 10, None, 2.0),
            "running: 4096 tasks submitted, 10 cycles, 2048 tasks/s"
        );
        // A count the run outgrew is not a count.
        assert!(!progress_line(9, 1, Some(4), 1.0).contains(" of "));
        assert_eq!(duration_words(200.0), "3 min 20 s");
        assert_eq!(duration_words(7_500.0), "2 h 5 min");
    }
}
