//! A schedule as runtime policies: its directives resolved to [`Policies`], its key
//! expressions and placements, and the notes on what the architecture model changes about it.

use wsp_ir::schedule::Keys;
use wsp_ir::workload::{Program, Schedule, WStmt, WorkloadBody, WorkloadId};
use wsp_runtime as rt;
use wsp_runtime::{Arch, CoreClass, Policies};

use crate::placement::{kernel_class, Placement};

/// The runtime policies of a schedule, the key expressions of its tasks and its placements
/// (`.spatial_map`, `.layout`).
pub(crate) fn policies(
    p: &Program,
    s: Option<&Schedule>,
) -> Result<(Policies, Keys, Placement), String> {
    let r = wsp_ir::schedule::resolve(p, s)?;
    let mut pol = Policies::default();
    for (form, args) in &r.forms {
        pol.apply(form, args)?;
    }
    Ok((
        pol,
        r.keys,
        Placement {
            spatial: r.spatial,
            shards: r.shards,
        },
    ))
}

/// What the model changes about the schedule: `round_robin(n)` over more cores than a class
/// used by the program has goes round the class's cores (under `pto_wsp_v9`, `n` is the
/// number of v9 workers and is taken as it is).
pub(crate) fn schedule_notes(
    program: &Program,
    w: WorkloadId,
    arch: &Arch,
    pol: &Policies,
) -> Vec<String> {
    if arch.timing == wsp_arch::TimingSemantics::V9 {
        // v9 times tasks in program order on its workers (dispatch) through its window: the
        // other policies order the run, not v9's cycles.
        let d = Policies::default();
        let mut ignored = Vec::new();
        let mut notes = Vec::new();
        // A process's tasks run on the process's own clock: neither the workers nor the
        // window of the other tasks.
        if runs_processes(program, w) {
            let mut set = Vec::new();
            if pol.dispatch != d.dispatch {
                set.push("the dispatch");
            }
            if pol.task_window != d.task_window {
                set.push("`.task_window`");
            }
            if !set.is_empty() {
                let verb = if set.len() == 1 { "does" } else { "do" };
                notes.push(format!(
                    "{}: {} times a process's tasks on the process's own clock, so {} {verb} not change its processes' cycles",
                    set.join(" and "),
                    arch.name,
                    if set.len() == 1 { "this policy" } else { "these policies" },
                ));
            }
        }
        if pol.ready != d.ready {
            ignored.push(match pol.ready {
                rt::ReadyOrder::Lifo => "`.ready(lifo)`".to_string(),
                _ => "`.ready(priority(...))`".to_string(),
            });
        }
        match pol.timing {
            rt::Timing::Immediate => {}
            rt::Timing::Batched(n) => ignored.push(format!("`.timing(batched({n}))`")),
            rt::Timing::Interleaved(n) => ignored.push(format!("`.timing(interleaved({n}))`")),
            rt::Timing::RateLimit(n) => ignored.push(format!("`.timing(rate_limit({n}))`")),
        }
        // With another dispatch, `streams(n)` is the number of v9 workers.
        if let (Some(rt::Streams(n)), rt::Dispatch::RoundRobin(_)) = (pol.streams, pol.dispatch) {
            ignored.push(format!("`.streams({n})`"));
        }
        notes.extend(ignored.into_iter().map(|p| {
            format!(
                "{p}: {} times tasks in program order on its workers, so this policy does not change its cycles",
                arch.name
            )
        }));
        return notes;
    }
    let rt::Dispatch::RoundRobin(n) = pol.dispatch else {
        return Vec::new();
    };
    let mut classes: Vec<CoreClass> = program.kernels.iter().map(kernel_class).collect();
    classes.sort();
    classes.dedup();
    classes
        .into_iter()
        .filter_map(|c| {
            let cores = *arch.cores.get(&c)?;
            (n > cores).then(|| {
                format!(
                    "`round_robin({n})`: {} has {cores} {c} cores, so {c} tasks go round {cores}",
                    arch.name
                )
            })
        })
        .collect()
}

/// Whether workload `w` runs processes: it is a `connect`, or runs one (through `sequential`,
/// `combine` or a block's `run`).
fn runs_processes(program: &Program, w: WorkloadId) -> bool {
    fn in_stmts(stmts: &[WStmt], out: &mut Vec<WorkloadId>) {
        wsp_ir::workload::walk_stmts(stmts, &mut |s| {
            if let WStmt::Run { workload } = s {
                out.push(*workload);
            }
        });
    }
    let mut seen = vec![false; program.workloads.len()];
    let mut todo = vec![w];
    while let Some(w) = todo.pop() {
        let Some(wl) = program.workloads.get(w.index()) else {
            continue;
        };
        if std::mem::replace(&mut seen[w.index()], true) {
            continue;
        }
        match &wl.body {
            WorkloadBody::Connect { .. } => return true,
            WorkloadBody::Sequential { parts } | WorkloadBody::Combine { parts } => {
                todo.extend(parts.iter().copied())
            }
            WorkloadBody::Block { stmts } => in_stmts(stmts, &mut todo),
        }
    }
    false
}
