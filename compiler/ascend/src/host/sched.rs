//! The schedule's directives as runtime policies and task keys, exactly as the simulator
//! reads them (`wsp_sim`'s `policies`): the emitted `wsp_configure` sets the same
//! configuration, and each task's dispatch, priority and stream keys are the same expressions.

use std::fmt::Write as _;

use wsp_ir::workload::{AxisId, DirValue, Directive, ExprOp, Policy, Program, Schedule};
use wsp_runtime::{Dispatch, Policies, ReadyOrder, Streams, Timing};
use wsp_vocab::schedule::{Directive as VocabDirective, PolicyArg};

use super::orch::c_str;

/// A policy key over the axes a task is inside.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Key {
    Int(i64),
    Axis(AxisId, String),
    Binary(ExprOp, Box<Key>, Box<Key>),
}

/// The key expressions of a schedule.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Keys {
    pub dispatch: Option<Key>,
    pub priority: Option<Key>,
    pub stream: Option<Key>,
}

fn key_of(p: &Program, v: &DirValue) -> Result<Key, String> {
    Ok(match v {
        DirValue::Int { value } => Key::Int(*value),
        DirValue::Axis { axis } => Key::Axis(
            *axis,
            p.axes
                .get(axis.index())
                .map_or_else(|| "?".into(), |a| a.name.clone()),
        ),
        DirValue::Binary { op, lhs, rhs } => {
            Key::Binary(*op, Box::new(key_of(p, lhs)?), Box::new(key_of(p, rhs)?))
        }
        _ => return Err("a schedule key is built from axes, integers and arithmetic".to_string()),
    })
}

fn int_args(d: &str, args: &[DirValue]) -> Result<Vec<u32>, String> {
    args.iter()
        .map(|a| match *a {
            DirValue::Int { value } => u32::try_from(value)
                .map_err(|_| format!("`{d}` takes a count from 0 to 2³², found {value}")),
            _ => Err(format!("`{d}` takes integer counts")),
        })
        .collect()
}

/// The runtime policies of a schedule and the key expressions of its tasks.
pub(crate) fn policies(p: &Program, s: Option<&Schedule>) -> Result<(Policies, Keys), String> {
    let mut pol = Policies::default();
    let mut keys = Keys::default();
    let Some(s) = s else {
        return Ok((pol, keys));
    };
    for d in &s.directives {
        match d {
            Directive::Target { .. } => {}
            Directive::TaskWindow { size: value } | Directive::Streams { count: value } => {
                let name = d.kind().name();
                let n = u32::try_from(*value)
                    .map_err(|_| format!("`{name}({value})` is out of range"))?;
                pol.apply(name, &[n])?;
            }
            Directive::StreamBy { key } => keys.stream = Some(key_of(p, key)?),
            Directive::Policy { policy, args } => {
                // The last directive of a name applies (W0601), its key with it.
                match policy.directive() {
                    VocabDirective::Dispatch => keys.dispatch = None,
                    VocabDirective::Ready => keys.priority = None,
                    _ => {}
                }
                let form = policy.name();
                match policy.arg() {
                    PolicyArg::Axis | PolicyArg::Key => {
                        let v = args
                            .first()
                            .ok_or_else(|| format!("`{form}(...)` needs a key expression"))?;
                        pol.apply(form, &[])?;
                        let k = Some(key_of(p, v)?);
                        match policy {
                            Policy::Priority => keys.priority = k,
                            _ => keys.dispatch = k,
                        }
                    }
                    PolicyArg::Count | PolicyArg::None => {
                        pol.apply(form, &int_args(form, args)?)?
                    }
                }
            }
        }
    }
    let stream_by = keys.stream.is_some();
    if keys.stream.is_none() {
        keys.stream.clone_from(&keys.dispatch);
    }
    match (pol.streams, &keys.stream) {
        (Some(Streams(n)), None) if n > 1 => {
            return Err(format!(
                "schedule `{}`: `.streams({n})` needs `.stream_by(expr)` (or a dispatch key) to say which stream a task is on",
                s.name
            ))
        }
        (None, _) if stream_by => {
            return Err(format!(
                "schedule `{}`: `.stream_by(...)` needs `.streams(n)`",
                s.name
            ))
        }
        _ => {}
    }
    Ok((pol, keys))
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
    s?.directives.iter().rev().find_map(|d| match d {
        Directive::Target { arch } => Some(arch.clone()),
        _ => None,
    })
}
