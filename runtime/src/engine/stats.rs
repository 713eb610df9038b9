//! What a run reports: its statistics (cores, rings, channels; under `pto_wsp_v9`, the
//! workers' and processes' clocks instead of the event model's cores, and v9's window stalls)
//! and, with `Config::record`, the trace's events (tasks, dispatch overheads, stalls) and their
//! Chrome JSON. The trace builders are out of line: a run that does not record never calls
//! them.

use super::Runtime;
use crate::report::{chrome_trace, CoreStats, RingUse, StallReason, Stats, TraceEvent};
use wsp_arch::TimingSemantics;

impl Runtime {
    /// Each ring's use. Under `pto_wsp_v9` the stalls are v9's, on its clock: the window's
    /// (the one resource v9 models), none for the other rings.
    pub(super) fn ring_uses(&self) -> Vec<RingUse> {
        let queued = self.classes.iter().map(|c| c.queued as u64).max();
        let v9 = self.cfg.arch.timing == TimingSemantics::V9;
        StallReason::RINGS
            .iter()
            .zip(self.rings.iter())
            .enumerate()
            .map(|(i, (r, s))| {
                let (stalls, stalled_cycles) = match (v9, i) {
                    (false, _) => (s.stalls, s.stalled),
                    (true, 0) => self.v9.window_stalls(),
                    (true, _) => (0, 0),
                };
                let used = match i {
                    0 => self.next_seq - self.head,
                    1 => self.build.entries_from(self.head),
                    4 => queued.unwrap_or(0),
                    _ => s.used,
                };
                RingUse {
                    name: r.ring(),
                    used,
                    capacity: s.cap,
                    high_water: s.hw,
                    stalls,
                    stalled_cycles,
                }
            })
            .collect()
    }

    pub fn stats(&self) -> Stats {
        let total = self.total_cycles();
        let mut cores = Vec::new();
        if self.cfg.arch.timing == TimingSemantics::V9 {
            // v9 time is the workers' and processes' clocks: report those, not the event
            // model's cores.
            let util = |busy: u64| busy as f64 / total.max(1) as f64;
            let workers = self.v9.load().iter().map(|l| ("v9_worker", l));
            let procs = self.procs.iter().map(|p| ("v9_process", &p.v9_load));
            let mut index = [0u32; 2];
            for (class, &(tasks, busy)) in workers.chain(procs) {
                if tasks == 0 {
                    continue;
                }
                let i = &mut index[usize::from(class == "v9_process")];
                cores.push(CoreStats {
                    class,
                    index: *i,
                    tasks,
                    busy_cycles: busy,
                    utilization: util(busy),
                });
                *i += 1;
            }
        } else {
            for c in &self.classes {
                for (i, k) in c.cores.iter().enumerate() {
                    cores.push(CoreStats {
                        class: c.class.name(),
                        index: i as u32,
                        tasks: k.tasks,
                        busy_cycles: k.busy,
                        // Of `total_cycles` (the clock ends later, after the last
                        // completion's handling, which no core spends).
                        utilization: if total == 0 {
                            0.0
                        } else {
                            k.busy as f64 / total as f64
                        },
                    });
                }
            }
        }
        Stats {
            arch: self.cfg.arch.name.clone(),
            timing: match self.cfg.arch.timing {
                TimingSemantics::Event => "event",
                TimingSemantics::V9 => "v9",
            },
            total_cycles: total,
            tasks: self.next_seq,
            edges: self.total_edges,
            rings: self.ring_uses(),
            window_mode: self.cfg.policies.window_mode.name(),
            cores,
            channels: self.channels.iter().map(|c| c.stats.clone()).collect(),
        }
    }

    /// Chrome trace-event JSON (needs `Config::record`).
    pub fn chrome_trace(&self) -> String {
        chrome_trace(&self.trace, self.cfg.arch.clock_hz)
    }

    /// A task's name in traces: its kernel and coordinates, `k[1, 2]`.
    pub(super) fn task_name(&self, kernel: u32, coords: &[i64]) -> String {
        format!("{}{coords:?}", self.kernels[kernel as usize].name)
    }

    #[cold]
    pub(super) fn trace_stall(&mut self, ring: usize, t0: u64) {
        let r = StallReason::RINGS[ring];
        self.trace.push(TraceEvent {
            name: r.code().to_string(),
            lane: "orchestrator".into(),
            start: t0,
            dur: self.now - t0,
            cat: "stall",
            args: None,
        });
    }

    /// A task's trace arguments: its kernel and coordinates (out of line: only a recorded run
    /// builds them, and the submission path stays small).
    #[cold]
    #[inline(never)]
    pub(super) fn task_args(&self, kernel: u32, coords: &[i64]) -> serde_json::Value {
        serde_json::json!({
            "kernel": self.kernels[kernel as usize].name,
            "coords": coords,
        })
    }

    /// The trace of a task dispatched now onto core `k` of class `ci`, ending at `end`; the
    /// model's dispatch overhead is a slice nested at its start, and its arguments name the
    /// kernel, the coordinates and the overheads (the completion ones the runtime charges after
    /// the core is free).
    #[cold]
    pub(super) fn trace_dispatch(&mut self, seq: u64, kernel: u32, ci: usize, k: usize, end: u64) {
        let coords: Vec<i64> = self
            .graph_nodes
            .get(seq as usize)
            .map_or(Vec::new(), |n| n.2.values().to_vec());
        let name = self.task_name(kernel, &coords);
        let class = self.classes[ci].class;
        let lane = format!("{class}{k:03}");
        let oh = self.cfg.arch.overheads;
        let dispatch = oh.dispatch.min(end - self.now);
        self.trace.push(TraceEvent {
            name: name.clone(),
            lane: lane.clone(),
            start: self.now,
            dur: end - self.now,
            cat: "task",
            args: Some(serde_json::json!({
                "kernel": self.kernels[kernel as usize].name,
                "coords": coords,
                "dispatch_cycles": dispatch,
                "complete_cycles": oh.complete,
                "resolve_cycles": oh.resolve,
            })),
        });
        if dispatch > 0 {
            self.trace.push(TraceEvent {
                name: "dispatch".into(),
                lane,
                start: self.now,
                dur: dispatch,
                cat: "overhead",
                args: Some(serde_json::json!({ "task": name })),
            });
        }
    }
}
