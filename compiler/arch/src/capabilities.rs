//! The capability matrix: for each backend, how it treats every schedule directive form, kernel
//! operation family and CSP feature of the language.
//!
//! This table is the single declaration of support. The runtime reads it for its schedule
//! policies (`wsp_runtime::policy`), and the checker reads it for `wsp check --target X`
//! (`wsp_core::capabilities`), which warns about every use a backend records or diagnoses and
//! rejects every use it does not support. Every entry that is not [`Support::Enforced`] carries a
//! one-line reason saying what happens instead.
//!
//! The Ascend and AIE entries follow the hardware facts of `std/arch` (cores, buffers, cross-core
//! FIFOs, ObjectFIFOs); where the behaviour of a backend is not certain the entry says
//! `Recorded` or `Diagnosed` rather than claim enforcement.

use std::collections::BTreeMap;
use std::fmt;

/// How a backend treats a feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Support {
    /// The backend implements the feature's semantics.
    Enforced,
    /// Accepted and recorded (in traces and metadata), but the backend's own behaviour applies.
    Recorded,
    /// Replaced by an approximation that the backend reports (the reason says which).
    Diagnosed,
    /// The backend cannot express the feature: using it is an error.
    Unsupported,
}

impl Support {
    pub const ALL: [Support; 4] = [
        Support::Enforced,
        Support::Recorded,
        Support::Diagnosed,
        Support::Unsupported,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Support::Enforced => "enforced",
            Support::Recorded => "recorded",
            Support::Diagnosed => "diagnosed",
            Support::Unsupported => "unsupported",
        }
    }

    /// The support level of a name (`enforced`, `recorded`, `diagnosed`, `unsupported`).
    pub fn from_name(s: &str) -> Option<Support> {
        Support::ALL.into_iter().find(|x| x.name() == s)
    }
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend a program can be checked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// The deterministic simulator (`wsp run`: JIT kernels on the wsp runtime).
    Sim,
    /// Huawei Ascend (AIC/AIV cores scheduled by the AICPU, PTO-ISA kernels).
    Ascend,
    /// AMD AIE-ML (statically placed compute tiles connected by ObjectFIFOs).
    Aie,
}

impl Backend {
    pub const ALL: [Backend; 3] = [Backend::Sim, Backend::Ascend, Backend::Aie];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Sim => "sim",
            Backend::Ascend => "ascend",
            Backend::Aie => "aie",
        }
    }

    pub fn from_name(s: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == s)
    }

    /// The known names, comma-separated (for usage errors).
    pub fn known() -> String {
        Backend::ALL.map(|b| b.name()).join(", ")
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What part of the language a capability belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Area {
    Schedule,
    Kernel,
    Csp,
    /// Constructs of workload bodies.
    Workload,
}

/// How one backend treats one feature, and why when it is not enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub support: Support,
    /// Empty for [`Support::Enforced`]; otherwise what happens instead, in one line.
    pub reason: &'static str,
}

/// One feature of the language and its support on every backend.
#[derive(Clone, Copy, Debug)]
pub struct Capability {
    pub area: Area,
    /// Stable key: `dispatch.round_robin`, `task_window`, `kernel.matmul`, `csp.rendezvous`.
    pub key: &'static str,
    /// How the feature is written, for messages: `.dispatch(round_robin(n))`.
    pub written: &'static str,
    /// Support on (sim, ascend, aie), in [`Backend::ALL`] order.
    pub support: [Entry; 3],
}

impl Capability {
    /// The entry of `backend`.
    pub fn on(&self, backend: Backend) -> Entry {
        self.support[backend.index()]
    }
}

const fn e() -> Entry {
    Entry {
        support: Support::Enforced,
        reason: "",
    }
}
const fn r(reason: &'static str) -> Entry {
    Entry {
        support: Support::Recorded,
        reason,
    }
}
const fn d(reason: &'static str) -> Entry {
    Entry {
        support: Support::Diagnosed,
        reason,
    }
}
const fn u(reason: &'static str) -> Entry {
    Entry {
        support: Support::Unsupported,
        reason,
    }
}

const fn cap(area: Area, key: &'static str, written: &'static str, s: [Entry; 3]) -> Capability {
    Capability {
        area,
        key,
        written,
        support: s,
    }
}

use Area::{Csp, Kernel, Schedule, Workload};

/// The matrix. Order: schedule directives, kernel operation families, CSP features.
pub const MATRIX: &[Capability] = &[
    // ------------------------------------------------------------------ schedule directives
    cap(
        Schedule,
        "dispatch.round_robin",
        ".dispatch(round_robin(n))",
        [
            e(),
            e(),
            d("AIE placement is static: tasks are assigned to compute tiles round-robin at compile time, not at run time"),
        ],
    ),
    cap(
        Schedule,
        "dispatch.affinity",
        ".dispatch(affinity(key))",
        [e(), e(), e()],
    ),
    cap(
        Schedule,
        "dispatch.hash",
        ".dispatch(hash(key))",
        [
            e(),
            e(),
            d("AIE placement is static: the hash is evaluated at compile time over the task coordinates, and tasks whose coordinates are only known at run time fall back to tile 0"),
        ],
    ),
    cap(
        Schedule,
        "dispatch.work_steal",
        ".dispatch(work_steal)",
        [
            e(),
            r("the AICPU scheduler binds a task to a core when it becomes ready; idle cores do not steal, so the policy is only recorded in the trace"),
            u("AIE compute tiles are placed statically and no run-time scheduler can move work between them"),
        ],
    ),
    cap(
        Schedule,
        "dispatch.by",
        ".dispatch(by(expr))",
        [e(), e(), e()],
    ),
    cap(Schedule, "ready.fifo", ".ready(fifo)", [e(), e(), e()]),
    cap(
        Schedule,
        "ready.lifo",
        ".ready(lifo)",
        [
            e(),
            r("the AICPU ready queues are first-in first-out; the requested order is only recorded in the trace"),
            u("an AIE core runs its tasks in the static order of its ObjectFIFOs; there is no ready queue to reorder"),
        ],
    ),
    cap(
        Schedule,
        "ready.priority",
        ".ready(priority(expr))",
        [
            e(),
            r("the AICPU ready queues are first-in first-out; priorities are only recorded in the trace"),
            u("an AIE core runs its tasks in the static order of its ObjectFIFOs; there is no ready queue to prioritise"),
        ],
    ),
    cap(Schedule, "timing.immediate", ".timing(immediate)", [e(), e(), e()]),
    cap(
        Schedule,
        "timing.batched",
        ".timing(batched(n))",
        [
            e(),
            e(),
            d("the whole AIE design is configured at load time, so there is no submission to batch; the directive has no effect"),
        ],
    ),
    cap(
        Schedule,
        "timing.interleaved",
        ".timing(interleaved(n))",
        [
            e(),
            r("the device orchestrator submits as fast as it can; yielding to the scheduler every n tasks is only recorded"),
            d("the whole AIE design is configured at load time, so there is no orchestrator to interleave; the directive has no effect"),
        ],
    ),
    cap(
        Schedule,
        "timing.rate_limit",
        ".timing(rate_limit(n))",
        [
            e(),
            r("the device orchestrator has no submission throttle; the rate is only recorded"),
            d("the whole AIE design is configured at load time, so there is no submission to throttle; the directive has no effect"),
        ],
    ),
    cap(
        Schedule,
        "task_window",
        ".task_window(n)",
        [
            e(),
            e(),
            d("AIE bounds work in flight by ObjectFIFO depths and buffer descriptors (16 per compute tile), not by a task window"),
        ],
    ),
    cap(
        Schedule,
        "task_graph",
        ".task_graph(tensormap: n, deplist: n, ready: n, heap: bytes)",
        [
            e(),
            e(),
            d("AIE has no run-time task graph: its buffers are ObjectFIFO elements and buffer descriptors placed at compile time"),
        ],
    ),
    cap(
        Schedule,
        "streams",
        ".streams(n)",
        [
            e(),
            e(),
            u("AIE has no run-time task streams: the order of a core's tasks is fixed when the design is placed"),
        ],
    ),
    cap(
        Schedule,
        "stream_by",
        ".stream_by(expr)",
        [
            e(),
            e(),
            u("AIE has no run-time task streams: the order of a core's tasks is fixed when the design is placed"),
        ],
    ),
    cap(Schedule, "target", ".target(arch)", [e(), e(), e()]),
    cap(
        Schedule,
        "spatial_map",
        ".spatial_map(grid: (rows, cols), at: (row_key, col_key))",
        [
            e(),
            u("the emitted orchestration hands tasks to the AICPU scheduler by dispatch policy and cannot pin a task to a core of a grid"),
            u("the AIE planner places tasks on compute tiles by the dispatch policy; it does not map a grid of keys onto tiles"),
        ],
    ),
    cap(
        Schedule,
        "layout",
        ".layout(T, shard(dim: d, parts: n))",
        [
            e(),
            u("the emitted orchestration keeps every tensor in global memory and cannot run a task on the core that owns its shard"),
            u("the AIE planner streams whole views through ObjectFIFOs; it does not split a tensor among tiles or place tasks by shard"),
        ],
    ),
    // ------------------------------------------------------------ kernel operation families
    cap(
        Kernel,
        "kernel.elementwise",
        "elementwise tile arithmetic (`+ - * /`, `exp`, `max`, ...)",
        [e(), e(), e()],
    ),
    cap(
        Kernel,
        "kernel.reduction",
        "row/column reductions (`rowsum`, `rowmax`, `colsum`, ...)",
        [e(), e(), e()],
    ),
    cap(
        Kernel,
        "kernel.matmul",
        "`matmul`",
        [
            e(),
            e(),
            d("the AIE-ML matrix unit multiplies bf16 (and integers); f16 and f32 operands are converted to bf16, which changes rounding"),
        ],
    ),
    cap(
        Kernel,
        "kernel.transpose",
        "`transpose`",
        [
            e(),
            e(),
            d("AIE-ML has no tile transpose instruction; the transpose is done by vector shuffles in data memory, at a cost the model does not price exactly"),
        ],
    ),
    cap(Kernel, "kernel.cast", "`cast`", [e(), e(), e()]),
    cap(
        Kernel,
        "kernel.rowtopk",
        "`rowtopk`",
        [
            e(),
            d("Ascend has no top-k instruction; rowtopk is lowered to 32-element sorts (TSORT32) and merges"),
            d("AIE-ML has no sort instruction; rowtopk runs as scalar compare loops on the core"),
        ],
    ),
    cap(
        Kernel,
        "kernel.iota_full",
        "`iota` / `full`",
        [
            e(),
            e(),
            e(),
        ],
    ),
    cap(
        Kernel,
        "kernel.select_compare",
        "comparisons and `select`",
        [e(), e(), e()],
    ),
    cap(
        Kernel,
        "kernel.pipe",
        "kernel pipes (`pipe`, `talloc`/`tpush`/`tpop`/`tfree`)",
        [
            e(),
            e(),
            d("an AIE compute tile has no separate cube and vector cores; the pipe becomes a buffer ring in the tile's data memory and the two sides no longer overlap"),
        ],
    ),
    cap(
        Kernel,
        "kernel.section",
        "`cube { }` / `vector { }` sections",
        [
            e(),
            e(),
            d("an AIE compute tile has no separate cube and vector cores; both sections run one after the other on the same core"),
        ],
    ),
    // ------------------------------------------------------------------------ CSP features
    cap(Csp, "csp.channel", "channels", [e(), e(), e()]),
    cap(Csp, "csp.process", "processes", [e(), e(), e()]),
    cap(
        Csp,
        "csp.replicate",
        "`replicate(process, n)`",
        [
            e(),
            e(),
            d("each AIE replica occupies its own compute tile; replicas beyond the free tiles of the array cannot be placed"),
        ],
    ),
    cap(
        Csp,
        "csp.rendezvous",
        "depth-0 (rendezvous) channels",
        [
            e(),
            d("the AICPU token queues hold at least one token; a depth-0 channel becomes depth 1, so the sender no longer waits for its receiver"),
            d("an ObjectFIFO holds at least one buffer; a depth-0 channel becomes depth 1, so the sender no longer waits for its receiver"),
        ],
    ),
    cap(
        Csp,
        "csp.latency",
        "channel `latency`",
        [
            e(),
            r("the device's own transfer time applies; the declared latency only enters the modeled time and traces"),
            r("the stream and DMA time of the array applies; the declared latency only enters the modeled time and traces"),
        ],
    ),
    // ------------------------------------------------------------------------ workload bodies
    cap(
        Workload,
        "workload.local_tensor",
        "a local tensor (`let H: f32[..] = scratch()`)",
        [
            e(),
            e(),
            u("AIE places every buffer at compile time; a local tensor takes a fresh buffer from a heap arena each time its block runs"),
        ],
    ),
];

/// The capability with this key.
pub fn capability(key: &str) -> Option<&'static Capability> {
    MATRIX.iter().find(|c| c.key == key)
}

/// How `backend` treats the feature `key` (`None` for an unknown key).
pub fn support(backend: Backend, key: &str) -> Option<Entry> {
    capability(key).map(|c| c.on(backend))
}

/// How one backend treats one feature: an owned [`Entry`] (external backends declare theirs at
/// run time).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableEntry {
    pub support: Support,
    /// Empty for [`Support::Enforced`]; otherwise what happens instead, in one line.
    pub reason: String,
}

/// One backend's column of the matrix as a value: the support of every key of [`MATRIX`] on
/// the backend named [`CapabilityTable::name`]. Built-in backends derive theirs from the
/// matrix ([`CapabilityTable::builtin`]); external backends declare theirs
/// ([`CapabilityTable::declared`]). Owned, comparable and hashable, so the checker can hold it
/// as an input.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CapabilityTable {
    name: String,
    builtin: Option<Backend>,
    /// Every key of [`MATRIX`], in matrix order of keys (a `BTreeMap` for lookups).
    entries: BTreeMap<&'static str, TableEntry>,
}

impl CapabilityTable {
    /// The column of a built-in backend, as the matrix declares it.
    pub fn builtin(backend: Backend) -> CapabilityTable {
        CapabilityTable {
            name: backend.name().to_string(),
            builtin: Some(backend),
            entries: MATRIX
                .iter()
                .map(|c| {
                    let e = c.on(backend);
                    (
                        c.key,
                        TableEntry {
                            support: e.support,
                            reason: e.reason.to_string(),
                        },
                    )
                })
                .collect(),
        }
    }

    /// A backend that keeps every feature (the Program IR records all of them).
    pub fn all_enforced(name: &str) -> CapabilityTable {
        CapabilityTable::uniform(name, Support::Enforced, "")
    }

    /// A backend that treats every feature alike (`reason` is dropped for
    /// [`Support::Enforced`]; otherwise it says what happens instead).
    pub fn uniform(name: &str, support: Support, reason: &str) -> CapabilityTable {
        let reason = if support == Support::Enforced {
            String::new()
        } else {
            reason.to_string()
        };
        CapabilityTable {
            name: name.to_string(),
            builtin: None,
            entries: MATRIX
                .iter()
                .map(|c| {
                    (
                        c.key,
                        TableEntry {
                            support,
                            reason: reason.clone(),
                        },
                    )
                })
                .collect(),
        }
    }

    /// A backend's declared column: `entries` are `(key, support, reason)`; every key of the
    /// matrix not listed takes `default` (with `default_reason`). Errors name an unknown or
    /// repeated key, or a non-enforced entry without a reason.
    pub fn declared(
        name: &str,
        default: Support,
        default_reason: &str,
        entries: impl IntoIterator<Item = (String, Support, String)>,
    ) -> Result<CapabilityTable, String> {
        let check = |key: &str, support: Support, reason: &str| -> Result<(), String> {
            if support != Support::Enforced && reason.trim().is_empty() {
                return Err(format!(
                    "capability `{key}` is declared {support} without a reason (say what happens instead)"
                ));
            }
            Ok(())
        };
        let mut declared: BTreeMap<&'static str, TableEntry> = BTreeMap::new();
        for (key, support, reason) in entries {
            let Some(cap) = capability(&key) else {
                return Err(format!(
                    "unknown capability key `{key}`; known keys: {}",
                    MATRIX.iter().map(|c| c.key).collect::<Vec<_>>().join(", ")
                ));
            };
            check(cap.key, support, &reason)?;
            let reason = if support == Support::Enforced {
                String::new()
            } else {
                reason
            };
            if declared
                .insert(cap.key, TableEntry { support, reason })
                .is_some()
            {
                return Err(format!("capability `{key}` is declared twice"));
            }
        }
        let mut entries = BTreeMap::new();
        for c in MATRIX {
            let e = match declared.remove(c.key) {
                Some(e) => e,
                None => {
                    check(c.key, default, default_reason)?;
                    TableEntry {
                        support: default,
                        reason: if default == Support::Enforced {
                            String::new()
                        } else {
                            default_reason.to_string()
                        },
                    }
                }
            };
            entries.insert(c.key, e);
        }
        Ok(CapabilityTable {
            name: name.to_string(),
            builtin: None,
            entries,
        })
    }

    /// The backend's name, for messages (`the `aie` backend`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The built-in backend this column is the matrix's column of, if it is one.
    pub fn builtin_backend(&self) -> Option<Backend> {
        self.builtin
    }

    /// How the backend treats the feature `key` (`None` for an unknown key).
    pub fn entry(&self, key: &str) -> Option<&TableEntry> {
        self.entries.get(key)
    }

    /// Every feature's entry, in matrix order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Capability, &TableEntry)> + '_ {
        MATRIX
            .iter()
            .filter_map(|c| self.entries.get(c.key).map(|e| (c, e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wsp_vocab::ops::Family;
    use wsp_vocab::schedule::{Directive, Policy};

    #[test]
    fn every_loss_has_a_reason_and_enforced_has_none() {
        for c in MATRIX {
            for b in Backend::ALL {
                let en = c.on(b);
                assert_eq!(
                    en.support == Support::Enforced,
                    en.reason.is_empty(),
                    "{} on {b}",
                    c.key
                );
            }
        }
    }

    #[test]
    fn keys_are_unique_and_cover_the_language() {
        let mut keys: Vec<&str> = MATRIX.iter().map(|c| c.key).collect();
        keys.sort();
        let n = keys.len();
        keys.dedup();
        assert_eq!(n, keys.len(), "duplicate keys");
        // Every directive, policy and kernel operation family of the language has a row.
        for p in Policy::ALL {
            assert!(capability(p.capability_key()).is_some(), "{p:?}");
        }
        for d in Directive::ALL {
            if let Some(k) = d.capability_key() {
                assert!(capability(k).is_some(), "{d:?}");
            }
        }
        for f in Family::ALL {
            assert!(capability(f.capability_key()).is_some(), "{f:?}");
        }
    }

    #[test]
    fn tables_are_the_matrix_columns_or_declared() {
        for b in Backend::ALL {
            let t = CapabilityTable::builtin(b);
            assert_eq!(t.name(), b.name());
            assert_eq!(t.builtin_backend(), Some(b));
            assert_eq!(t.iter().count(), MATRIX.len());
            for c in MATRIX {
                let e = t.entry(c.key).unwrap();
                assert_eq!(
                    (e.support, e.reason.as_str()),
                    (c.on(b).support, c.on(b).reason)
                );
            }
        }
        assert_eq!(
            CapabilityTable::builtin(Backend::Aie),
            CapabilityTable::builtin(Backend::Aie)
        );
        assert_ne!(
            CapabilityTable::builtin(Backend::Aie),
            CapabilityTable::builtin(Backend::Sim)
        );
        let all = CapabilityTable::all_enforced("ir");
        assert!(all
            .iter()
            .all(|(_, e)| e.support == Support::Enforced && e.reason.is_empty()));

        let t = CapabilityTable::declared(
            "summary",
            Support::Enforced,
            "",
            [(
                "kernel.pipe".to_string(),
                Support::Unsupported,
                "no pipes".to_string(),
            )],
        )
        .unwrap();
        assert_eq!(
            t.entry("kernel.pipe").unwrap().support,
            Support::Unsupported
        );
        assert_eq!(t.entry("kernel.matmul").unwrap().support, Support::Enforced);
        assert_eq!(t.builtin_backend(), None);
        // Undeclared keys take the default, which needs a reason unless enforced.
        assert!(CapabilityTable::declared("x", Support::Unsupported, "", []).is_err());
        let t = CapabilityTable::declared("x", Support::Unsupported, "not declared", []).unwrap();
        assert_eq!(t.entry("csp.channel").unwrap().reason, "not declared");
        for bad in [
            vec![(
                "kernel.teleport".to_string(),
                Support::Enforced,
                String::new(),
            )],
            vec![(
                "kernel.pipe".to_string(),
                Support::Recorded,
                " ".to_string(),
            )],
            vec![
                ("kernel.pipe".to_string(), Support::Enforced, String::new()),
                ("kernel.pipe".to_string(), Support::Enforced, String::new()),
            ],
        ] {
            assert!(CapabilityTable::declared("x", Support::Enforced, "", bad).is_err());
        }
        assert_eq!(Support::from_name("diagnosed"), Some(Support::Diagnosed));
        assert_eq!(Support::from_name("maybe"), None);
    }

    #[test]
    fn lookups() {
        assert_eq!(Backend::from_name("aie"), Some(Backend::Aie));
        assert_eq!(Backend::from_name("gpu"), None);
        assert_eq!(Backend::known(), "sim, ascend, aie");
        assert_eq!(
            support(Backend::Aie, "dispatch.work_steal").map(|e| e.support),
            Some(Support::Unsupported)
        );
        assert_eq!(
            support(Backend::Sim, "timing.batched").map(|e| e.support),
            Some(Support::Enforced)
        );
        assert!(support(Backend::Sim, "kernel.teleport").is_none());
    }
}
