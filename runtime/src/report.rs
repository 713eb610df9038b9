//! Stats, deadlock reports, Chrome traces and DOT graphs.

use serde::Serialize;
use std::fmt;

/// Why the orchestration (or a process) stalled; stable names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum StallReason {
    #[serde(rename = "TASK_RING_FULL")]
    TaskRingFull,
    #[serde(rename = "TENSORMAP_POOL_FULL")]
    TensormapPoolFull,
    #[serde(rename = "DEPLIST_POOL_FULL")]
    DeplistPoolFull,
    #[serde(rename = "HEAP_ARENA_FULL")]
    HeapArenaFull,
    #[serde(rename = "READY_QUEUE_FULL")]
    ReadyQueueFull,
    #[serde(rename = "CHANNEL_EMPTY_WAIT")]
    ChannelEmptyWait,
    #[serde(rename = "CHANNEL_FULL_WAIT")]
    ChannelFullWait,
}

impl StallReason {
    pub const RINGS: [StallReason; 5] = [
        StallReason::TaskRingFull,
        StallReason::TensormapPoolFull,
        StallReason::DeplistPoolFull,
        StallReason::HeapArenaFull,
        StallReason::ReadyQueueFull,
    ];

    pub fn code(self) -> &'static str {
        match self {
            StallReason::TaskRingFull => "TASK_RING_FULL",
            StallReason::TensormapPoolFull => "TENSORMAP_POOL_FULL",
            StallReason::DeplistPoolFull => "DEPLIST_POOL_FULL",
            StallReason::HeapArenaFull => "HEAP_ARENA_FULL",
            StallReason::ReadyQueueFull => "READY_QUEUE_FULL",
            StallReason::ChannelEmptyWait => "CHANNEL_EMPTY_WAIT",
            StallReason::ChannelFullWait => "CHANNEL_FULL_WAIT",
        }
    }

    /// The ring a stall reason belongs to.
    pub fn ring(self) -> &'static str {
        match self {
            StallReason::TaskRingFull => "task_ring",
            StallReason::TensormapPoolFull => "tensormap_pool",
            StallReason::DeplistPoolFull => "deplist_pool",
            StallReason::HeapArenaFull => "heap_arena",
            StallReason::ReadyQueueFull => "ready_queue",
            StallReason::ChannelEmptyWait | StallReason::ChannelFullWait => "channel",
        }
    }
}

impl fmt::Display for StallReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Use of one bounded resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RingUse {
    pub name: &'static str,
    pub used: u64,
    pub capacity: u64,
    pub high_water: u64,
    pub stalls: u64,
    pub stalled_cycles: u64,
}

/// Whether a blocked process waits for a token or for room.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Wait {
    #[serde(rename = "empty")]
    Empty,
    #[serde(rename = "full")]
    Full,
}

/// A process blocked on a channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockedProcess {
    pub process: String,
    pub channel: String,
    pub wait: Wait,
    pub fill: u64,
    pub depth: u64,
}

/// What a deadlock looked like, and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeadlockReport {
    pub reason: StallReason,
    pub cycle: u64,
    pub blocked: Vec<BlockedProcess>,
    pub rings: Vec<RingUse>,
    pub scope_depth: u32,
    /// Tasks held by open scopes (not reclaimable before their scope ends).
    pub scope_held_tasks: u64,
    /// Heap-arena bytes held by open scopes.
    pub scope_held_bytes: u64,
    pub mitigation: String,
}

impl DeadlockReport {
    /// The runtime's state at the deadlock, a line each: every ring's use and high water, then
    /// the open scopes.
    pub fn state_lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .rings
            .iter()
            .map(|r| {
                format!(
                    "{}: {}/{} used, high-water {}",
                    r.name, r.used, r.capacity, r.high_water
                )
            })
            .collect();
        out.push(format!(
            "scope depth {}, {} tasks and {} bytes held by open scopes",
            self.scope_depth, self.scope_held_tasks, self.scope_held_bytes
        ));
        out
    }
}

impl fmt::Display for DeadlockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "deadlock at cycle {}: {}", self.cycle, self.reason)?;
        for b in &self.blocked {
            let w = match b.wait {
                Wait::Empty => "empty",
                Wait::Full => "full",
            };
            writeln!(
                f,
                "  process `{}` waits on channel `{}` ({w}, {}/{} tokens)",
                b.process, b.channel, b.fill, b.depth
            )?;
        }
        for line in self.state_lines() {
            writeln!(f, "  {line}")?;
        }
        write!(f, "  mitigation: {}", self.mitigation)
    }
}

/// Per modeled core.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoreStats {
    pub class: &'static str,
    pub index: u32,
    pub tasks: u64,
    pub busy_cycles: u64,
    pub utilization: f64,
}

/// Per channel of a CSP run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ChannelStats {
    pub name: String,
    pub depth: u32,
    /// Tokens sent.
    pub tokens: u64,
    /// Most tokens it held at once.
    pub high_water: u64,
    /// Sends that waited for room, and the cycles their senders waited (the
    /// `CHANNEL_FULL_WAIT` events of the trace; under `pto_wsp_v9`, on the processes' v9
    /// clocks).
    pub full_waits: u64,
    pub full_wait_cycles: u64,
    /// Receives that waited for a token, and the cycles their receivers waited
    /// (`CHANNEL_EMPTY_WAIT`).
    pub empty_waits: u64,
    pub empty_wait_cycles: u64,
}

/// Everything a run measured (machine-readable with [`Stats::to_json`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    pub arch: String,
    pub timing: &'static str,
    pub total_cycles: u64,
    pub tasks: u64,
    pub edges: u64,
    pub rings: Vec<RingUse>,
    /// What a full task window does (`stall`, `abort`, `benchmark`: then the task window's
    /// high-water mark may pass its capacity, and says how far it would have had to grow).
    pub window_mode: &'static str,
    pub cores: Vec<CoreStats>,
    pub channels: Vec<ChannelStats>,
}

/// One class of cores over a run: how many it has, how many ran tasks, and its busy share over
/// all of them (idle cores counted).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassStats {
    pub class: &'static str,
    pub cores: usize,
    pub used: usize,
    pub utilization: f64,
}

impl Stats {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Per class of cores, in the order the cores are listed.
    pub fn classes(&self) -> Vec<ClassStats> {
        let mut out: Vec<ClassStats> = Vec::new();
        let mut busy: Vec<u64> = Vec::new();
        for c in &self.cores {
            let k = match out.iter().position(|x| x.class == c.class) {
                Some(k) => k,
                None => {
                    out.push(ClassStats {
                        class: c.class,
                        cores: 0,
                        used: 0,
                        utilization: 0.0,
                    });
                    busy.push(0);
                    out.len() - 1
                }
            };
            out[k].cores += 1;
            out[k].used += usize::from(c.tasks > 0);
            busy[k] += c.busy_cycles;
        }
        for (x, b) in out.iter_mut().zip(busy) {
            x.utilization = b as f64 / (x.cores as f64 * self.total_cycles.max(1) as f64);
        }
        out
    }
}

/// A recorded trace event (cycles).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TraceEvent {
    pub name: String,
    pub lane: String,
    /// Start and duration in modelled cycles.
    pub start: u64,
    pub dur: u64,
    pub cat: &'static str,
    /// What the trace viewer shows for the event besides its name and time (a task's kernel
    /// and coordinates, the overheads the model charged it).
    pub args: Option<serde_json::Value>,
}

/// Chrome trace-event JSON: timestamps and durations in microseconds of modelled time (cycles
/// at the model's clock, `clock_hz`), so viewers label them rightly; each event keeps its
/// cycles in its arguments.
pub(crate) fn chrome_trace(events: &[TraceEvent], clock_hz: u64) -> String {
    let us = |cycles: u64| cycles as f64 * 1e6 / clock_hz.max(1) as f64;
    let mut lanes: Vec<&str> = events.iter().map(|e| e.lane.as_str()).collect();
    lanes.sort();
    lanes.dedup();
    let mut out = Vec::new();
    for (i, l) in lanes.iter().enumerate() {
        out.push(serde_json::json!({
            "name": "thread_name", "ph": "M", "pid": 0, "tid": i,
            "args": { "name": l }
        }));
    }
    for e in events {
        let tid = lanes.binary_search(&e.lane.as_str()).unwrap_or(0);
        let mut args = serde_json::json!({ "start_cycle": e.start, "cycles": e.dur });
        if let (Some(serde_json::Value::Object(extra)), Some(a)) = (&e.args, args.as_object_mut()) {
            a.extend(extra.clone());
        }
        out.push(serde_json::json!({
            "name": e.name, "cat": e.cat, "ph": "X", "pid": 0, "tid": tid,
            "ts": us(e.start), "dur": us(e.dur), "args": args
        }));
    }
    serde_json::json!({ "traceEvents": out,
        "otherData": { "time": "modelled: microseconds at the model's clock; each event's args give its cycles", "clock_hz": clock_hz } })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_counts_its_idle_cores() {
        let core = |class, index, tasks, busy_cycles| CoreStats {
            class,
            index,
            tasks,
            busy_cycles,
            utilization: 0.0,
        };
        let s = Stats {
            total_cycles: 100,
            cores: vec![
                core("vector", 0, 2, 50),
                core("vector", 1, 0, 0),
                core("cube", 0, 0, 0),
                core("vector", 2, 1, 30),
                core("vector", 3, 0, 0),
            ],
            arch: String::new(),
            timing: "event",
            tasks: 3,
            edges: 0,
            rings: Vec::new(),
            window_mode: "stall",
            channels: Vec::new(),
        };
        let c = s.classes();
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].class, c[0].cores, c[0].used), ("vector", 4, 2));
        assert_eq!(c[0].utilization, 80.0 / 400.0);
        assert_eq!(
            (c[1].class, c[1].cores, c[1].used, c[1].utilization),
            ("cube", 1, 0, 0.0)
        );
    }
}
