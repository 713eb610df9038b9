//! The schedule's directives as runtime policies and task keys, resolved as the simulator
//! resolves them (`wsp_ir::schedule::resolve`): the emitted `wsp_configure` sets the same
//! configuration, and each task's dispatch, priority and stream keys are the same expressions.

use std::fmt::Write as _;

pub(crate) use wsp_ir::schedule::{Key, Keys};
use wsp_ir::workload::{Program, Schedule};
use wsp_runtime::{Dispatch, Policies, Pools, ReadyOrder, Streams, Timing, WindowMode};

use super::orch::c_str;

/// The runtime policies of a schedule and the key expressions of its tasks, as the simulator
/// resolves them (`wsp_ir::schedule::resolve`).
pub(crate) fn policies(p: &Program, s: Option<&Schedule>) -> Result<(Policies, Keys), String> {
    // Directives the emitted orchestration cannot honour (placements) are refused, never
    // dropped: the capability matrix declares them unsupported on Ascend, with the reason.
    for d in s.iter().flat_map(|s| &s.directives) {
        let Some(cap) = wsp_arch::capabilities::capability(d.capability_key()) else {
            continue;
        };
        let e = cap.on(wsp_arch::capabilities::Backend::Ascend);
        if e.support == wsp_arch::capabilities::Support::Unsupported {
            return Err(format!(
                "`{}` is not supported on Ascend: {}",
                cap.written, e.reason
            ));
        }
    }
    let r = wsp_ir::schedule::resolve(p, s)?;
    let mut pol = Policies::default();
    for (form, args) in &r.forms {
        pol.apply(form, args)?;
    }
    Ok((pol, r.keys))
}

/// The policy forms (name, integer arguments) that set `pol` on a fresh configuration.
pub(crate) fn forms(pol: &Policies) -> Vec<(&'static str, Vec<u32>)> {
    let mut v = vec![match pol.dispatch {
        Dispatch::RoundRobin(n) => ("round_robin", vec![n]),
        Dispatch::Affinity => ("affinity", vec![]),
        Dispatch::Hash => ("hash", vec![]),
        Dispatch::WorkSteal => ("work_steal", vec![]),
    }];
    v.push(match pol.ready {
        ReadyOrder::Fifo => ("fifo", vec![]),
        ReadyOrder::Lifo => ("lifo", vec![]),
        ReadyOrder::Priority => ("priority", vec![]),
    });
    v.push(match pol.timing {
        Timing::Immediate => ("immediate", vec![]),
        Timing::Batched(n) => ("batched", vec![n]),
        Timing::Interleaved(n) => ("interleaved", vec![n]),
        Timing::RateLimit(n) => ("rate_limit", vec![n]),
    });
    if let Some(Streams(n)) = pol.streams {
        v.push(("streams", vec![n]));
    }
    if pol.window_mode != WindowMode::Stall {
        v.push(("task_window", vec![pol.task_window, pol.window_mode.code()]));
    }
    if pol.pools != Pools::default() {
        let p = pol.pools;
        v.push((
            "task_graph",
            wsp_vocab::schedule::task_graph_form(p.tensormap, p.deplist, p.ready, p.heap),
        ));
    }
    v
}

/// `wsp_configure`: the runtime configuration of the schedule, as `wsp_sim::run` makes it
/// (the window first, which sizes the rings; the policies; room for the widest task).
pub(crate) fn configure_c(pol: &Policies, max_tiles: usize) -> String {
    let mut c = String::from(
        "/* The runtime configuration of the schedule (what `wsp run` configures). */\nint wsp_configure(wsp_rt *rt) {\n    struct wsp_cx c_ = {rt, NULL};\n    const struct wsp_cx *cx = &c_;\n",
    );
    let _ = writeln!(
        c,
        "    WSP_TRY(wsp_rt_set_task_window(rt, {}), \"task_window\");",
        pol.task_window
    );
    for (form, args) in forms(pol) {
        let a: Vec<String> = args.iter().map(u32::to_string).collect();
        let _ = writeln!(
            c,
            "    {{ static const uint32_t a_[] = {{{}}}; WSP_TRY(wsp_rt_set_policy(rt, {f}, a_, {}), {f}); }}",
            if a.is_empty() { "0".to_string() } else { a.join(", ") },
            args.len(),
            f = c_str(form)
        );
    }
    let _ = writeln!(
        c,
        "    WSP_TRY(wsp_rt_fit_region_args(rt, {max_tiles}), \"fit_region_args\");\n    return 0;\n}}\n"
    );
    c
}

/// The architecture the selected schedule names with `.target(...)`, if any (`wsp run`'s
/// default architecture).
pub fn schedule_target(p: &Program, schedule: Option<&str>) -> Option<String> {
    let (s, _) = p.select_run(schedule).ok()?;
    s?.target().map(str::to_string)
}
