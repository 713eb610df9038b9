//! `wsp bench`: the PTO-WSP seed's table for the LLaMA-7B layer (or any program whose size is
//! a param): per value of the param, the tasks, the time to build and time the graph, its
//! throughput, the peak memory and the bytes per task, the modelled cycles, each class's
//! utilisation and the rings' stalls. Each row is a timing-only `wsp run` in a process of its
//! own, so its peak memory is its own; with `--repeat N` the row keeps the median run.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The built-in program: `examples/llama7b` (the seed's three phases, 64-row tiles,
/// 16T + 3T² tasks for T = seq / 64). It reads no files.
const LLAMA7B: &str = include_str!("../../../examples/llama7b/llama7b.wsp");

/// The seed's sequence lengths (its table stops at 16K; 128K is its extrapolation).
const SEQS: [i64; 6] = [1024, 2048, 4096, 8192, 16384, 131072];

/// Arguments of `wsp bench`.
#[derive(clap::Args)]
pub struct Args {
    /// The program (a .wsp file); default: the built-in LLaMA-7B layer (`examples/llama7b`).
    program: Option<PathBuf>,
    /// The param (or integer constant) each row sets.
    #[arg(long, default_value = "seq")]
    param: String,
    /// A value every row runs with (`--set NAME=VALUE`, repeatable; as for `wsp run`): a
    /// param, a `DenseDyn` size or an integer constant such as a tile size.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// The param's values, one row each (comma-separated); default 1024 to 131072 tokens.
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    values: Vec<i64>,
    /// Architecture model (as for `wsp run`).
    #[arg(long)]
    arch: Option<String>,
    /// The schedule to run (as for `wsp run`).
    #[arg(long)]
    schedule: Option<String>,
    /// Runs per row; the row shows the one with the median throughput.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=99))]
    repeat: u32,
    /// Print the rows as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// One measured run.
#[derive(Clone, Debug, serde::Serialize)]
struct Row {
    value: i64,
    tasks: u64,
    /// Building and timing the graph (`run_ms` of the run's statistics).
    run_ms: f64,
    /// The whole process: start, check, lower, compile, run, exit.
    process_ms: f64,
    tasks_per_ms: f64,
    peak_rss_bytes: Option<u64>,
    bytes_per_task: Option<f64>,
    total_cycles: u64,
    /// Per class of cores that ran tasks: busy cycles over all its cores' cycles, and how the
    /// work spread over the cores.
    utilisation: Vec<ClassUse>,
    /// Per ring that stalled: (name, stalls, stalled cycles).
    stalls: Vec<(String, u64, u64)>,
}

/// A class of cores in one run: its utilisation over all its cores, the cores that ran tasks,
/// and the busiest core's utilisation.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
struct ClassUse {
    class: String,
    utilisation: f64,
    used: u64,
    cores: u64,
    busiest: f64,
}

pub fn main(a: Args) -> ExitCode {
    let values = if a.values.is_empty() {
        SEQS.to_vec()
    } else {
        a.values.clone()
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot find the wsp executable: {e}")),
    };
    // The built-in program goes to a directory of its own, removed at the end.
    let (program, scratch) = match &a.program {
        Some(p) => (p.clone(), None),
        None => {
            let dir = std::env::temp_dir().join(format!("wsp-bench-{}", std::process::id()));
            let file = dir.join("llama7b.wsp");
            if let Err(e) =
                std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, LLAMA7B))
            {
                return fail(format!("cannot write `{}`: {e}", file.display()));
            }
            (file, Some(dir))
        }
    };
    let name = a.program.as_deref().map_or_else(
        || "the LLaMA-7B layer (examples/llama7b)".to_string(),
        |p| format!("`{}`", p.display()),
    );
    if !a.json {
        println!(
            "wsp bench: {name}, timing only, one process per run{}",
            if a.repeat > 1 {
                format!(", median of {}", a.repeat)
            } else {
                String::new()
            }
        );
        println!("{}", header(&a.param));
    }
    let mut rows = Vec::new();
    let mut status = ExitCode::SUCCESS;
    for v in values {
        let mut runs = Vec::new();
        for _ in 0..a.repeat {
            match run_once(&exe, &program, &a, v) {
                Ok(r) => runs.push(r),
                Err(m) => {
                    eprintln!("error: {} = {v}: {m}", a.param);
                    status = ExitCode::from(1);
                    break;
                }
            }
        }
        if runs.is_empty() {
            continue;
        }
        runs.sort_by(|x, y| x.tasks_per_ms.total_cmp(&y.tasks_per_ms));
        let r = runs.swap_remove(runs.len() / 2);
        if !a.json {
            println!("{}", line(&r));
        }
        rows.push(r);
    }
    if let Some(d) = scratch {
        let _ = std::fs::remove_dir_all(d);
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "program": name,
                "param": a.param,
                "rows": rows,
            }))
            .unwrap_or_default()
        );
    }
    status
}

fn fail(m: String) -> ExitCode {
    eprintln!("error: {m}");
    ExitCode::from(2)
}

/// One timing-only `wsp run` of `program` with the param at `v`, in a process of its own.
fn run_once(exe: &Path, program: &Path, a: &Args, v: i64) -> Result<Row, String> {
    let mut c = Command::new(exe);
    c.arg("run")
        .arg(program)
        .args(["--timing-only", "-q", "--stats", "json", "--set"])
        .arg(format!("{}={v}", a.param));
    for kv in &a.set {
        c.args(["--set", kv]);
    }
    if let Some(arch) = &a.arch {
        c.args(["--arch", arch]);
    }
    if let Some(s) = &a.schedule {
        c.args(["--schedule", s]);
    }
    let t0 = Instant::now();
    let out = c
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", exe.display()))?;
    let process_ms = t0.elapsed().as_secs_f64() * 1e3;
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|_| {
        let err = String::from_utf8_lossy(&out.stderr);
        format!("the run failed: {}", err.trim())
    })?;
    if let Some(e) = stats.get("error") {
        return Err(format!("the run failed: {e}"));
    }
    row(v, &stats, process_ms)
}

/// A row from a run's `--stats json`.
fn row(value: i64, j: &serde_json::Value, process_ms: f64) -> Result<Row, String> {
    let s = &j["stats"];
    let tasks = s["tasks"]
        .as_u64()
        .ok_or("no task count in the statistics")?;
    let total_cycles = s["total_cycles"].as_u64().unwrap_or(0);
    let run_ms = j["run_ms"].as_f64().unwrap_or(0.0);
    let peak = j["peak_rss_bytes"].as_u64();
    // Each class's busy share over all its cores, the idle ones counted, as the run says; and
    // its busiest core (the per-core figures of the run's `stats.cores`).
    let cores = s["cores"].as_array().cloned().unwrap_or_default();
    let utilisation = j["classes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["used"].as_u64().is_some_and(|u| u > 0))
        .map(|c| {
            let class = c["class"].as_str().unwrap_or("?").to_string();
            let busiest = cores
                .iter()
                .filter(|k| k["class"].as_str() == Some(class.as_str()))
                .filter_map(|k| k["utilization"].as_f64())
                .fold(0.0, f64::max);
            ClassUse {
                utilisation: c["utilization"].as_f64().unwrap_or(0.0),
                used: c["used"].as_u64().unwrap_or(0),
                cores: c["cores"].as_u64().unwrap_or(0),
                busiest,
                class,
            }
        })
        .collect();
    let stalls = s["rings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let n = r["stalls"].as_u64().filter(|n| *n > 0)?;
            Some((
                r["name"].as_str().unwrap_or("?").to_string(),
                n,
                r["stalled_cycles"].as_u64().unwrap_or(0),
            ))
        })
        .collect();
    Ok(Row {
        value,
        tasks,
        run_ms,
        process_ms,
        tasks_per_ms: tasks as f64 / run_ms.max(1e-6),
        peak_rss_bytes: peak,
        bytes_per_task: peak.map(|p| p as f64 / tasks.max(1) as f64),
        total_cycles,
        utilisation,
        stalls,
    })
}

fn header(param: &str) -> String {
    format!(
        "{:>8} {:>11} {:>9} {:>10} {:>9} {:>10} {:>10} {:>14}  {}",
        param,
        "tasks",
        "run ms",
        "tasks/ms",
        "proc ms",
        "peak MiB",
        "B/task",
        "total_cycles",
        "utilisation; stalls"
    )
}

fn line(r: &Row) -> String {
    let util: Vec<String> = r
        .utilisation
        .iter()
        .map(|c| {
            format!(
                "{} {:.1}% ({}/{} cores, busiest {:.1}%)",
                c.class,
                c.utilisation * 100.0,
                c.used,
                c.cores,
                c.busiest * 100.0
            )
        })
        .collect();
    let stalls = if r.stalls.is_empty() {
        "no stalls".to_string()
    } else {
        r.stalls
            .iter()
            .map(|(n, k, c)| format!("{n} {k}× ({c} cycles)"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "{:>8} {:>11} {:>9.1} {:>10.0} {:>9.1} {:>10} {:>10} {:>14}  {}; {stalls}",
        r.value,
        r.tasks,
        r.run_ms,
        r.tasks_per_ms,
        r.process_ms,
        r.peak_rss_bytes.map_or_else(
            || "-".to_string(),
            |b| format!("{:.1}", b as f64 / 1048576.0)
        ),
        r.bytes_per_task
            .map_or_else(|| "-".to_string(), |b| format!("{b:.0}")),
        r.total_cycles,
        util.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_takes_the_classes_that_ran_tasks() {
        let j = serde_json::json!({
            "run_ms": 2.0,
            "peak_rss_bytes": 4096,
            "classes": [
                {"class": "vector", "cores": 4, "used": 1, "utilization": 0.125},
                {"class": "cube", "cores": 2, "used": 0, "utilization": 0.0},
            ],
            "stats": {
                "tasks": 8, "total_cycles": 100,
                "cores": [
                    {"class": "vector", "index": 0, "utilization": 0.25},
                    {"class": "vector", "index": 1, "utilization": 0.5},
                    {"class": "cube", "index": 0, "utilization": 0.0},
                ],
                "rings": [{"name": "task_ring", "stalls": 2, "stalled_cycles": 30},
                          {"name": "heap_arena", "stalls": 0, "stalled_cycles": 0}],
            }
        });
        let r = row(1024, &j, 5.0).expect("row");
        assert_eq!(r.tasks, 8);
        assert_eq!(r.tasks_per_ms, 4.0);
        assert_eq!(r.bytes_per_task, Some(512.0));
        assert_eq!(
            r.utilisation,
            vec![ClassUse {
                class: "vector".into(),
                utilisation: 0.125,
                used: 1,
                cores: 4,
                busiest: 0.5
            }]
        );
        assert!(
            line(&r).contains("vector 12.5% (1/4 cores, busiest 50.0%)"),
            "{}",
            line(&r)
        );
        assert_eq!(r.stalls, vec![("task_ring".to_string(), 2, 30)]);
    }
}
