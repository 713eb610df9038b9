//! What `wsp run` reports: the human summary of a run (stdout, or stderr beside
//! `--stats json`) and the `--stats json` document, with the figures both take from a run.

use std::path::Path;

use wsp_sim::{Engine, Options, SimRun};

/// An engine as `--stats json` writes it: its name, and the reason the interpreter ran.
fn engine_json(e: &Engine) -> (&'static str, Option<&str>) {
    match e {
        Engine::Jit => ("jit", None),
        Engine::Interpreter(why) => ("interpreter", Some(why)),
        Engine::None => ("none", None),
    }
}

fn engine_text(e: &Engine) -> String {
    match e {
        Engine::Jit => "jit".into(),
        Engine::Interpreter(why) => format!("interpreter ({why})"),
        Engine::None => "not run".into(),
    }
}

/// The summary of a run: what ran on which model and why, the modelled time, how busy each
/// class of cores was (idle ones counted), stalls, channels, engines, and each `expect` with
/// what it measured.
/// `header`: why this model, and how the constants `--set` set read (" with rows = 32");
/// `loaded`: kernels loaded from the JIT's disk cache and compiled by Cranelift.
pub(crate) fn summary(
    run: &SimRun,
    opts: &Options,
    program: &Path,
    wall: std::time::Duration,
    (why, consts): (&str, &str),
    loaded: (usize, usize),
) -> String {
    let s = &run.stats;
    let mut o = String::new();
    let sched = run
        .schedule
        .as_deref()
        .map(|n| format!("schedule `{n}`{consts}"))
        .unwrap_or_else(|| format!("workload `{}`{consts}", run.workload));
    o.push_str(&format!(
        "ran {} ({}) on {} ({why}) [{} timing]\n",
        program.display(),
        sched,
        s.arch,
        s.timing
    ));
    let clock = opts.arch.clock_hz.max(1) as f64;
    o.push_str(&format!(
        "  tasks         {}  (edges {})\n  total_cycles  {} modelled cycles = {} at {:.2} GHz\n",
        s.tasks,
        s.edges,
        s.total_cycles,
        modelled_time(s.total_cycles as f64 / clock),
        clock / 1e9
    ));
    // Per class of cores: how many ran tasks, and the utilisation over all of them.
    for c in s.classes() {
        let (class, n, used) = (c.class, c.cores, c.used);
        if used == 0 {
            o.push_str(&format!("  {class:<13} {n} cores, all idle\n"));
        } else {
            o.push_str(&format!(
                "  {class:<13} {used} of {n} cores ran tasks ({} idle); {:.1}% busy over all {n}\n",
                n - used,
                c.utilization * 100.0,
            ));
        }
    }
    for c in &s.cores {
        if c.tasks > 0 {
            o.push_str(&format!(
                "  {:<13} {:>5.1}% busy, {} tasks, {} cycles\n",
                format!("{} {}", c.class, c.index),
                c.utilization * 100.0,
                c.tasks,
                c.busy_cycles
            ));
        }
    }
    let stalls: Vec<String> = s
        .rings
        .iter()
        .filter(|r| r.stalls > 0)
        .map(|r| format!("{} {}× ({} cycles)", r.name, r.stalls, r.stalled_cycles))
        .collect();
    o.push_str(&format!(
        "  stalls        {}\n",
        if stalls.is_empty() {
            "none".to_string()
        } else {
            stalls.join(", ")
        }
    ));
    if s.window_mode == "benchmark" {
        if let Some(w) = s.rings.first() {
            o.push_str(&format!(
                "  task window   benchmark: at most {} tasks in flight against a window of {}{}\n",
                w.high_water,
                w.capacity,
                if w.high_water > w.capacity {
                    format!(" (it would have had to grow to {})", w.high_water)
                } else {
                    " (it never filled)".to_string()
                }
            ));
        }
    }
    for c in &s.channels {
        let depth = match c.depth {
            0 => "rendezvous".to_string(),
            d => format!("high water {} of {d}", c.high_water),
        };
        o.push_str(&format!(
            "  channel {:<15} {} tokens, {depth}, waits: full {}× ({} cycles), empty {}× ({} cycles)\n",
            c.name, c.tokens, c.full_waits, c.full_wait_cycles, c.empty_waits, c.empty_wait_cycles
        ));
    }
    for k in &run.kernels {
        o.push_str(&format!(
            "  kernel {:<16} {} tasks, {}\n",
            k.name,
            k.tasks,
            engine_text(&k.engine)
        ));
    }
    o.push_str(&format!(
        "  orchestration {}\n",
        engine_text(&run.orchestration)
    ));
    for n in &run.notes {
        o.push_str(&format!("  note          {n}\n"));
    }
    let passed = run.expects.iter().filter(|e| e.failure.is_none()).count();
    if opts.timing_only {
        o.push_str("  expects       not checked (--timing-only)\n");
    } else if !run.expects.is_empty() {
        o.push_str(&format!(
            "  expects       {passed}/{} hold\n",
            run.expects.len()
        ));
        for e in &run.expects {
            o.push_str(&format!(
                "    {}: {}, {}\n",
                e.description,
                if e.failure.is_none() {
                    "holds"
                } else {
                    "FAILS"
                },
                e.measured
            ));
        }
    }
    let cached = match loaded {
        (0, _) => String::new(),
        (n, 0) => format!(", all {n} from the cache"),
        (n, _) => format!(", {n} from the cache"),
    };
    o.push_str(&format!(
        "  wall          {:.1} ms (compile {:.1} ms kernels{cached}, {:.1} ms orchestration; run {:.1} ms)\n",
        wall.as_secs_f64() * 1e3,
        run.compile_time.as_secs_f64() * 1e3,
        run.orch_compile_time.as_secs_f64() * 1e3,
        run.run_time.as_secs_f64() * 1e3
    ));
    o
}

/// In the statistics' JSON, lists only the cores that ran tasks under `cores`, and the idle
/// ones per class as index ranges under `idle_cores` (`{"cube": "0-23", "vector": "4-47"}`).
fn compact_idle_cores(stats: &mut serde_json::Value) {
    let Some(cores) = stats.get_mut("cores").and_then(|c| c.as_array_mut()) else {
        return;
    };
    let mut idle: Vec<(String, Vec<u64>)> = Vec::new();
    cores.retain(|c| {
        if c["tasks"].as_u64().unwrap_or(0) > 0 {
            return true;
        }
        let class = c["class"].as_str().unwrap_or("?").to_string();
        let index = c["index"].as_u64().unwrap_or(0);
        match idle.iter_mut().find(|(k, _)| *k == class) {
            Some((_, v)) => v.push(index),
            None => idle.push((class, vec![index])),
        }
        false
    });
    let ranges = |v: &[u64]| {
        let mut out: Vec<String> = Vec::new();
        let mut i = 0;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            out.push(if i == j {
                v[i].to_string()
            } else {
                format!("{}-{}", v[i], v[j])
            });
            i = j + 1;
        }
        out.join(",")
    };
    let map: serde_json::Map<String, serde_json::Value> = idle
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(ranges(v))))
        .collect();
    if let Some(o) = stats.as_object_mut() {
        o.insert("idle_cores".into(), serde_json::Value::Object(map));
    }
}

/// Seconds of modelled time in the unit that reads best (`5.38 µs`).
fn modelled_time(secs: f64) -> String {
    if secs >= 1.0 {
        format!("{secs:.3} s")
    } else if secs >= 1e-3 {
        format!("{:.3} ms", secs * 1e3)
    } else {
        format!("{:.3} µs", secs * 1e6)
    }
}

/// `loaded`: as [`summary`]'s.
pub(crate) fn stats_json(
    run: &SimRun,
    arch: &str,
    wall: std::time::Duration,
    loaded: (usize, usize),
) -> String {
    let kernels: Vec<serde_json::Value> = run
        .kernels
        .iter()
        .map(|k| {
            let (engine, reason) = engine_json(&k.engine);
            serde_json::json!({
                "name": k.name,
                "tasks": k.tasks,
                "engine": engine,
                "reason": reason,
            })
        })
        .collect();
    let expects: Vec<serde_json::Value> = run
        .expects
        .iter()
        .map(|e| {
            serde_json::json!({"expect": e.description, "failure": e.failure, "measured": e.measured})
        })
        .collect();
    let mut stats: serde_json::Value =
        serde_json::from_str(&run.stats.to_json()).unwrap_or(serde_json::Value::Null);
    compact_idle_cores(&mut stats);
    let (orch_engine, orch_reason) = engine_json(&run.orchestration);
    let v = serde_json::json!({
        "arch": arch,
        "schedule": run.schedule,
        "workload": run.workload,
        "stats": stats,
        "classes": run.stats.classes(),
        "kernels": kernels,
        "expects": expects,
        "wall_ms": wall.as_secs_f64() * 1e3,
        "compile_ms": run.compile_time.as_secs_f64() * 1e3,
        "jit_cache": { "loaded": loaded.0, "compiled": loaded.1 },
        "orchestration": {
            "engine": orch_engine,
            "reason": orch_reason,
            "compile_ms": run.orch_compile_time.as_secs_f64() * 1e3,
        },
        "run_ms": run.run_time.as_secs_f64() * 1e3,
        "peak_rss_bytes": peak_rss_bytes(),
        "notes": run.notes,
    });
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// This process's peak resident memory so far, in bytes (Linux: `VmHWM` of
/// `/proc/self/status`; `None` elsewhere).
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}
