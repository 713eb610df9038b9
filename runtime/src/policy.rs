//! Schedule policies as a registry: each policy kind has a parser entry and the key of its row in
//! the capability matrix of `wsp_arch::capabilities`, which declares, per backend, whether it is
//! enforced, recorded, diagnosed or unsupported (the runtime keeps no table of its own).

pub use wsp_arch::capabilities::Support;
use wsp_arch::capabilities::{self, Backend};
pub use wsp_vocab::schedule::WindowMode;
use wsp_vocab::schedule::{Directive, Policy};

/// Dispatch of tasks to modeled cores of their class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Task `i` of a class (in emission order) goes to core `i mod n` (n capped by the class count).
    RoundRobin(u32),
    /// Core `key mod count` (`affinity(key)`, and `by(expr)`'s custom key).
    Affinity,
    /// Core `hash(key) mod count`.
    Hash,
    /// Any idle core takes the next ready task.
    WorkSteal,
}

/// Order in which ready tasks of a core are started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadyOrder {
    Fifo,
    Lifo,
    /// Highest key first, ties in ready order.
    Priority,
}

/// When submitted tasks become visible to the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// At once.
    Immediate,
    /// In groups of `n` (the rest at the end of the orchestration).
    Batched(u32),
    /// The orchestrator yields to the scheduler for `dispatch` cycles after every `n` tasks.
    Interleaved(u32),
    /// At most `n` tasks per 1000 cycles.
    RateLimit(u32),
}

/// Streams: tasks of one stream (stream_by key mod n) run in submission order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Streams(pub u32);

/// Ring sizes a schedule gives (`.task_graph(...)`); `None` keeps the size the window implies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pools {
    pub tensormap: Option<u32>,
    pub deplist: Option<u32>,
    pub ready: Option<u32>,
    pub heap: Option<u64>,
}

/// A schedule as the runtime enforces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policies {
    pub dispatch: Dispatch,
    pub ready: ReadyOrder,
    pub timing: Timing,
    pub task_window: u32,
    /// What a full window does.
    pub window_mode: WindowMode,
    pub streams: Option<Streams>,
    pub pools: Pools,
}

impl Default for Policies {
    fn default() -> Self {
        Policies {
            dispatch: Dispatch::WorkSteal,
            ready: ReadyOrder::Fifo,
            timing: Timing::Immediate,
            task_window: 1024,
            window_mode: WindowMode::Stall,
            streams: None,
            pools: Pools::default(),
        }
    }
}

/// One registry entry. Its names come from the language's vocabulary (`wsp_vocab::schedule`).
pub struct PolicyInfo {
    pub directive: &'static str,
    pub form: &'static str,
    /// The row of the capability matrix (`wsp_arch::capabilities::MATRIX`) declaring support.
    pub capability: &'static str,
    pub parse: fn(&[u32], &mut Policies) -> Result<(), String>,
}

/// What a registry entry applies: a policy, or a directive that takes a count.
enum Form {
    Policy(Policy),
    Directive(Directive),
}

const fn row(form: Form, parse: fn(&[u32], &mut Policies) -> Result<(), String>) -> PolicyInfo {
    let (directive, form, capability) = match form {
        Form::Policy(p) => (p.directive().name(), p.name(), p.capability_key()),
        Form::Directive(d) => (d.name(), d.name(), d.name()),
    };
    PolicyInfo {
        directive,
        form,
        capability,
        parse,
    }
}

fn one(args: &[u32], what: &str) -> Result<u32, String> {
    match args {
        [n] if *n > 0 => Ok(*n),
        _ => Err(format!("`{what}` takes one argument ≥ 1, found {args:?}")),
    }
}

fn none(args: &[u32], what: &str) -> Result<(), String> {
    if args.is_empty() {
        Ok(())
    } else {
        Err(format!("`{what}` takes no argument, found {args:?}"))
    }
}

/// Every policy the runtime knows.
pub const REGISTRY: &[PolicyInfo] = &[
    row(Form::Policy(Policy::RoundRobin), |a, p| {
        p.dispatch = Dispatch::RoundRobin(one(a, "round_robin")?);
        Ok(())
    }),
    row(Form::Policy(Policy::Affinity), |a, p| {
        none(a, "affinity")?;
        p.dispatch = Dispatch::Affinity;
        Ok(())
    }),
    row(
        Form::Policy(Policy::By),
        // A custom key: the task's key is its core, modulo the class's count, as `affinity`.
        |a, p| {
            none(a, "by")?;
            p.dispatch = Dispatch::Affinity;
            Ok(())
        },
    ),
    row(Form::Policy(Policy::Hash), |a, p| {
        none(a, "hash")?;
        p.dispatch = Dispatch::Hash;
        Ok(())
    }),
    row(Form::Policy(Policy::WorkSteal), |a, p| {
        none(a, "work_steal")?;
        p.dispatch = Dispatch::WorkSteal;
        Ok(())
    }),
    row(Form::Policy(Policy::Fifo), |a, p| {
        none(a, "fifo")?;
        p.ready = ReadyOrder::Fifo;
        Ok(())
    }),
    row(Form::Policy(Policy::Lifo), |a, p| {
        none(a, "lifo")?;
        p.ready = ReadyOrder::Lifo;
        Ok(())
    }),
    row(Form::Policy(Policy::Priority), |a, p| {
        none(a, "priority")?;
        p.ready = ReadyOrder::Priority;
        Ok(())
    }),
    row(Form::Policy(Policy::Immediate), |a, p| {
        none(a, "immediate")?;
        p.timing = Timing::Immediate;
        Ok(())
    }),
    row(Form::Policy(Policy::Batched), |a, p| {
        p.timing = Timing::Batched(one(a, "batched")?);
        Ok(())
    }),
    row(Form::Policy(Policy::Interleaved), |a, p| {
        p.timing = Timing::Interleaved(one(a, "interleaved")?);
        Ok(())
    }),
    row(Form::Policy(Policy::RateLimit), |a, p| {
        p.timing = Timing::RateLimit(one(a, "rate_limit")?);
        Ok(())
    }),
    row(Form::Directive(Directive::TaskWindow), |a, p| {
        // `task_window(n)`, or `task_window(n, mode)` with the mode's code.
        let (n, mode) = match a {
            [n] => (*n, WindowMode::Stall),
            [n, m] => (
                *n,
                WindowMode::from_code(*m).ok_or_else(|| {
                    format!("`task_window` has no window mode {m} (0 stall, 1 abort, 2 benchmark)")
                })?,
            ),
            _ => {
                return Err(format!(
                    "`task_window` takes a size and a mode, found {a:?}"
                ))
            }
        };
        p.task_window = one(&[n], "task_window")?;
        p.window_mode = mode;
        Ok(())
    }),
    row(Form::Directive(Directive::TaskGraph), |a, p| {
        let (tensormap, deplist, ready, heap) = wsp_vocab::schedule::task_graph_sizes(a)
            .ok_or_else(|| format!("`task_graph` takes five sizes, found {a:?}"))?;
        p.pools = Pools {
            tensormap,
            deplist,
            ready,
            heap,
        };
        Ok(())
    }),
    row(Form::Directive(Directive::Streams), |a, p| {
        p.streams = Some(Streams(one(a, "streams")?));
        Ok(())
    }),
];

impl Policies {
    /// Applies a directive form with integer arguments, e.g. `("round_robin", &[4])`.
    pub fn apply(&mut self, form: &str, args: &[u32]) -> Result<(), String> {
        let info = REGISTRY.iter().find(|i| i.form == form).ok_or_else(|| {
            format!(
                "unknown policy `{form}`; known: {}",
                REGISTRY
                    .iter()
                    .map(|i| i.form)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        (info.parse)(args, self)
    }

    /// How `backend` (`sim`, `ascend`, `aie`) treats the policy form `form`, as the capability
    /// matrix declares it.
    pub fn support(form: &str, backend: &str) -> Option<Support> {
        let info = REGISTRY.iter().find(|i| i.form == form)?;
        let backend = Backend::from_name(backend)?;
        capabilities::support(backend, info.capability).map(|e| e.support)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_parses_every_form() {
        let mut p = Policies::default();
        p.apply("round_robin", &[4]).unwrap();
        assert_eq!(p.dispatch, Dispatch::RoundRobin(4));
        p.apply("lifo", &[]).unwrap();
        assert_eq!(p.ready, ReadyOrder::Lifo);
        p.apply("batched", &[8]).unwrap();
        assert_eq!(p.timing, Timing::Batched(8));
        p.apply("task_window", &[64]).unwrap();
        assert_eq!(p.task_window, 64);
        p.apply("task_window", &[8, WindowMode::Abort.code()])
            .unwrap();
        assert_eq!((p.task_window, p.window_mode), (8, WindowMode::Abort));
        assert!(p.apply("task_window", &[8, 7]).is_err());
        p.apply("streams", &[2]).unwrap();
        assert_eq!(p.streams, Some(Streams(2)));
        assert!(p.apply("round_robin", &[0]).unwrap_err().contains("≥ 1"));
        assert!(p.apply("fifo", &[1]).is_err());
        assert!(p
            .apply("teleport", &[])
            .unwrap_err()
            .contains("round_robin"));
    }

    #[test]
    fn every_policy_has_a_row_in_the_capability_matrix() {
        for info in REGISTRY {
            let cap = capabilities::capability(info.capability)
                .unwrap_or_else(|| panic!("no capability row `{}`", info.capability));
            assert_eq!(
                wsp_vocab::schedule::capability_key(info.directive, Some(info.form)),
                Some(cap.key)
            );
        }
        // Every policy of the language, and every directive that takes a count, has a row.
        for p in Policy::ALL {
            assert!(REGISTRY.iter().any(|i| i.form == p.name()), "{p:?}");
        }
        for d in [Directive::TaskWindow, Directive::Streams] {
            assert!(REGISTRY.iter().any(|i| i.form == d.name()), "{d:?}");
        }
        assert_eq!(Policies::support("round_robin", "gpu"), None);
    }

    #[test]
    fn simulator_enforces_every_policy() {
        for info in REGISTRY {
            assert_eq!(
                Policies::support(info.form, "sim"),
                Some(Support::Enforced),
                "{}",
                info.form
            );
        }
        assert_eq!(
            Policies::support("work_steal", "aie"),
            Some(Support::Unsupported)
        );
    }
}
