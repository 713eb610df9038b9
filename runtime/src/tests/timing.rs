//! Time under the policies: the `pto_wsp_v9` clocks, `Seq` and `Par` program order on the event
//! clock, dispatch, ready-order and timing policies, the window's effect on time, utilization,
//! the orchestration's submission cost and placed tasks. Semantic time is deterministic: the
//! same submissions give the same cycles.

use super::{arch, arg, noop, order_run, task, task_starts};
use crate::*;

/// Eight independent v9 tasks of 4096 cycles on `round_robin(4)` through a window of
/// `window`, timing only (`record`: with a trace).
fn v9_eight_tasks(window: u32, record: bool) -> Runtime {
    let mut cfg = Config::new(arch("pto_wsp_v9")).with_window(window);
    cfg.policies.apply("round_robin", &[4]).unwrap();
    cfg.execute = false;
    cfg.record = record;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("square", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[8 * 64, 64]).unwrap();
    for i in 0..8 {
        let a = [arg(x, &[i * 64, 0], &[64, 64], Direction::InOut)];
        rt.submit(&task(k, &[i], &a, 4096)).unwrap();
    }
    rt
}

#[test]
fn v9_round_robin_eight_tasks() {
    let mut rt = v9_eight_tasks(Policies::default().task_window, false);
    assert_eq!(rt.finish().unwrap().total_cycles, 8192);
}

#[test]
fn v9_traces_and_stalls_are_on_the_v9_clock() {
    // Through a window of 2, v9 runs two at a time (16,384 cycles) on workers 0 to 3; the
    // trace and the stalls say the same.
    let mut rt = v9_eight_tasks(2, true);
    let s = rt.finish().unwrap();
    assert_eq!(s.total_cycles, 16384);
    let trace: serde_json::Value = serde_json::from_str(&rt.chrome_trace()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let tasks: Vec<&serde_json::Value> = events.iter().filter(|e| e["cat"] == "task").collect();
    assert_eq!(tasks.len(), 8);
    let end = tasks
        .iter()
        .map(|e| e["args"]["start_cycle"].as_f64().unwrap() + e["args"]["cycles"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(end, 16384.0, "the trace ends where total_cycles does");
    // Viewers get microseconds of modelled time (cycles at the model's clock).
    let clock = trace["otherData"]["clock_hz"].as_f64().unwrap();
    let last = tasks
        .iter()
        .map(|e| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!((last - 16384.0 * 1e6 / clock).abs() < 1e-6, "{last}");
    assert!(tasks
        .iter()
        .all(|e| e["args"]["kernel"].is_string() && e["args"]["coords"].is_array()));
    // Tasks 3, 5 and 7 each wait 4096 cycles for the pair before them to end (both leave
    // the window at once, so 4, 6 and 8 do not wait): in the stats and on the trace, at v9's
    // issue times.
    let ring = &s.rings[0];
    assert_eq!((ring.stalls, ring.stalled_cycles), (3, 3 * 4096));
    let orchestrator = events
        .iter()
        .find(|e| e["name"] == "thread_name" && e["args"]["name"] == "orchestrator")
        .map(|e| e["tid"].clone());
    let stalls: Vec<(f64, f64, &str)> = events
        .iter()
        .filter(|e| e["cat"] == "stall")
        .inspect(|e| assert_eq!(Some(e["tid"].clone()), orchestrator))
        .map(|e| {
            let (ts, dur) = (
                e["args"]["start_cycle"].as_f64().unwrap(),
                e["args"]["cycles"].as_f64().unwrap(),
            );
            (ts, dur, e["name"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        stalls,
        [
            (0.0, 4096.0, "TASK_RING_FULL"),
            (4096.0, 4096.0, "TASK_RING_FULL"),
            (8192.0, 4096.0, "TASK_RING_FULL"),
        ]
    );
    assert!(s.rings[1..].iter().all(|r| r.stalled_cycles == 0));
}

#[test]
fn v9_single_matmul_and_no_data_edges() {
    let mut cfg = Config::new(arch("pto_wsp_v9"));
    cfg.execute = false;
    let mut rt = Runtime::new(cfg.clone()).unwrap();
    let k = rt.register_kernel("mm", CoreClass::Cube, noop());
    let x = rt.add_tensor(4, &[16, 16]).unwrap();
    let a = [arg(x, &[0, 0], &[16, 16], Direction::InOut)];
    rt.submit(&task(k, &[0], &a, 4864)).unwrap();
    assert_eq!(rt.finish().unwrap().total_cycles, 4864);
    // v9 time ignores data edges: a chain of 4 on round_robin(4) takes one task's time.
    cfg.policies.apply("round_robin", &[4]).unwrap();
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("t", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[16, 16]).unwrap();
    for i in 0..4 {
        let a = [arg(x, &[0, 0], &[16, 16], Direction::InOut)];
        rt.submit(&task(k, &[i], &a, 100)).unwrap();
    }
    let s = rt.finish().unwrap();
    assert_eq!(s.total_cycles, 100);
    assert_eq!(s.edges, 3);
}

#[test]
fn v9_time_follows_program_order_groups() {
    // Two P.seq chains of 4 steps (100 cycles each) on disjoint rows, round_robin(4).
    let run = |name: &str, groups: bool| {
        let mut cfg = Config::new(arch(name));
        cfg.policies.apply("round_robin", &[4]).unwrap();
        cfg.execute = false;
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("t", CoreClass::Vector, noop());
        let x = rt.add_tensor(4, &[2, 16]).unwrap();
        if groups {
            rt.order_begin(Order::Par);
        }
        for c in 0..2 {
            if groups {
                rt.order_begin(Order::Seq);
            }
            for i in 0..4 {
                if groups && i > 0 {
                    rt.order_step();
                }
                let a = [arg(x, &[c, 0], &[1, 16], Direction::InOut)];
                rt.submit(&task(k, &[c, i], &a, 100)).unwrap();
            }
            if groups {
                rt.order_end().unwrap();
            }
        }
        if groups {
            assert_eq!(rt.order_depth(), 1);
            rt.order_end().unwrap();
            assert!(
                rt.order_end().is_err(),
                "an unbalanced order_end is an API error"
            );
        }
        rt.finish().unwrap()
    };
    // v9 without structure: 8 independent tasks on 4 workers.
    assert_eq!(run("pto_wsp_v9", false).total_cycles, 200);
    // v9 with structure: each step waits for the previous one, and issue never goes back:
    // the second chain issues at 300 (the first chain's last issue) and ends at 300 + 400.
    let s = run("pto_wsp_v9", true);
    assert_eq!(s.total_cycles, 700);
    // Its statistics are the v9 workers': 2 tasks of 100 cycles each.
    assert_eq!(s.cores.len(), 4);
    for (i, c) in s.cores.iter().enumerate() {
        assert_eq!(
            (c.class, c.index, c.tasks, c.busy_cycles),
            ("v9_worker", i as u32, 2, 200)
        );
    }
    // On the event model these chains already follow their data edges: the groups add no time.
    assert_eq!(
        run("ascend910b", true).total_cycles,
        run("ascend910b", false).total_cycles
    );
}

#[test]
fn seq_steps_of_independent_tasks_take_the_sum_of_their_times_and_par_the_max() {
    let total = |o, steps, width| order_run(o, steps, width).finish().unwrap().total_cycles;
    let one = total(None, 1, 1);
    assert!(one >= 1000);
    // P: four independent tasks run side by side (48 vector cores): one task's time.
    assert_eq!(total(Some(Order::Par), 4, 1), one);
    assert_eq!(total(None, 4, 1), one);
    // P.seq: each starts after the one before it has completed.
    let seq = total(Some(Order::Seq), 4, 1);
    assert!(seq >= 4 * 1000, "{seq}");
    assert!(seq >= 4 * one - 3 * 200, "{seq} vs {one}");
    // Steps of four side by side: four times a step, not sixteen tasks' time.
    assert_eq!(total(Some(Order::Seq), 4, 4), seq);
    assert_eq!(total(Some(Order::Par), 4, 4), one);
}

#[test]
fn policies_change_time_deterministically() {
    let run = |form: &str, args: &[u32], ready: &str| {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.execute = false;
        cfg.policies.apply(form, args).unwrap();
        cfg.policies.apply(ready, &[]).unwrap();
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("k", CoreClass::Vector, noop());
        let x = rt.add_tensor(4, &[256, 64]).unwrap();
        for i in 0..200i64 {
            let a = [arg(x, &[i % 256, 0], &[1, 64], Direction::InOut)];
            let c = [i];
            let mut t = task(k, &c, &a, 1000 + (i as u64 % 5) * 100);
            t.key = i % 3;
            t.priority = i % 3;
            t.stream = i % 3;
            rt.submit(&t).unwrap();
        }
        rt.finish().unwrap().total_cycles
    };
    let rr1 = run("round_robin", &[1], "fifo");
    let rr4 = run("round_robin", &[4], "fifo");
    let ws = run("work_steal", &[], "fifo");
    let aff = run("affinity", &[], "priority");
    assert!(rr1 > rr4, "{rr1} {rr4}");
    assert!(rr4 >= ws);
    assert!(aff > ws);
    assert_eq!(rr4, run("round_robin", &[4], "fifo"));
    let b = run("batched", &[16], "lifo");
    let rl = run("rate_limit", &[1], "fifo");
    let il = run("interleaved", &[1], "fifo");
    assert!(rl > ws, "{rl} {ws}");
    assert!(il > ws, "{il} {ws}");
    assert!(b > 0);
    let st = run("streams", &[1], "fifo");
    assert!(st >= 200 * 1000, "{st}");
}

#[test]
fn rate_limit_and_interleaved_let_n_tasks_through_per_period() {
    // Six independent short tasks on plenty of cores: only the issue timing spaces them.
    let run = |form: &str, n: u32| {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.execute = false;
        cfg.record = true;
        cfg.policies.apply(form, &[n]).unwrap();
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("k", CoreClass::Vector, noop());
        let x = rt.add_tensor(4, &[6, 64]).unwrap();
        for i in 0..6i64 {
            let a = [arg(x, &[i, 0], &[1, 64], Direction::Out)];
            rt.submit(&task(k, &[i], &a, 10)).unwrap();
        }
        rt.finish().unwrap();
        task_starts(&rt)
    };
    assert_eq!(run("rate_limit", 1), [0, 1000, 2000, 3000, 4000, 5000]);
    assert_eq!(run("rate_limit", 2), [0, 0, 1000, 1000, 2000, 2000]);
    assert_eq!(run("rate_limit", 4), [0, 0, 0, 0, 1000, 1000]);
    let d = arch("ascend910b").overheads.dispatch.max(1);
    assert_eq!(run("interleaved", 3), [0, 0, 0, d, d, d]);
    assert_eq!(run("interleaved", 1), [0, d, 2 * d, 3 * d, 4 * d, 5 * d]);
}

/// A task's successors, and a task submitted after it retired, both start `complete +
/// resolve` cycles after it ends: the slot is freed only once the runtime has handled the
/// completion. So a dependent chain takes the same time through any window, and a wider
/// window never slows independent tasks.
#[test]
fn a_larger_window_never_slows_the_run() {
    let run = |window: u32, chain: bool| {
        let mut cfg = Config::new(arch("ascend910b")).with_window(window);
        cfg.execute = false;
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("k", CoreClass::Vector, noop());
        let x = rt.add_tensor(4, &[64, 64]).unwrap();
        for i in 0..40i64 {
            let row = if chain { 0 } else { i };
            let a = [arg(x, &[row, 0], &[1, 64], Direction::InOut)];
            rt.submit(&task(k, &[i], &a, 500)).unwrap();
        }
        rt.finish().unwrap().total_cycles
    };
    let oh = arch("ascend910b").overheads;
    let one = run(1, true);
    assert!(one >= 40 * (500 + oh.complete + oh.resolve), "{one}");
    for w in [2, 3, 8, 1024] {
        assert_eq!(run(w, true), one, "window {w}");
    }
    let mut last = run(1, false);
    for w in [2, 3, 8, 16, 64, 1024] {
        let c = run(w, false);
        assert!(c <= last, "window {w}: {c} after {last}");
        last = c;
    }
    assert!(last < one / 10, "{last} vs {one}");
}

#[test]
fn utilization_is_busy_cycles_over_total_cycles() {
    // One task: its core is busy from 0 to the run's end, the completion's handling after it
    // is no core's time.
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4]).unwrap();
    rt.submit(&task(k, &[0], &[arg(x, &[0], &[4], Direction::Out)], 500))
        .unwrap();
    let s = rt.finish().unwrap();
    let busy: Vec<_> = s.cores.iter().filter(|c| c.tasks > 0).collect();
    assert_eq!(busy.len(), 1);
    assert_eq!(busy[0].busy_cycles, s.total_cycles);
    assert_eq!(busy[0].utilization, 1.0);
}

/// `n` independent 1,000-cycle tasks (`chain`: a dependent chain of 5,000-cycle tasks) under
/// `policy` on ascend910b with its submission cost.
fn submitted(n: i64, chain: bool, policy: Option<(&str, u32)>) -> Stats {
    let mut cfg = Config::new(Arch::builtin("ascend910b").unwrap());
    if let Some((p, a)) = policy {
        cfg.policies.apply(p, &[a]).unwrap();
    }
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("t", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[n, 16]).unwrap();
    for i in 0..n {
        let row = if chain { 0 } else { i };
        let a = [arg(x, &[row, 0], &[1, 16], Direction::InOut)];
        rt.submit(&task(k, &[i], &a, if chain { 5000 } else { 1000 }))
            .unwrap();
    }
    rt.finish().unwrap()
}

#[test]
fn submit_cost_paces_the_orchestration_and_batching_shows_in_the_cycles() {
    let o = Arch::builtin("ascend910b").unwrap().overheads;
    assert!(o.submit > 0);
    // The eighth task is submitted after eight submissions; it then runs as the first did.
    let one = submitted(1, false, None).total_cycles;
    let eight = submitted(8, false, None).total_cycles;
    assert_eq!(eight, one + 7 * o.submit);
    // Batches of 4: the first task waits for the rest of its batch to be submitted, and a
    // chain of tasks longer than a submission starts that much later.
    let chain = submitted(8, true, None).total_cycles;
    let batched = submitted(8, true, Some(("batched", 4))).total_cycles;
    assert_eq!(batched, chain + 3 * o.submit);
    // Independent tasks: the last batch is issued when the last task is submitted either way.
    assert_eq!(
        submitted(8, false, Some(("batched", 4))).total_cycles,
        eight
    );
    // A window of 1: each task's slot is freed only when the one before it has been handled.
    let narrow = submitted(8, false, Some(("task_window", 1))).total_cycles;
    assert!(narrow > eight, "{narrow} vs {eight}");
}

/// A placed task runs on the core it names, under any dispatch policy (work stealing
/// included, where unplaced tasks still go to any idle core); a core past the class's count is
/// refused before anything is submitted.
#[test]
fn placed_tasks_run_on_their_cores() {
    for dispatch in [Dispatch::WorkSteal, Dispatch::RoundRobin(4), Dispatch::Hash] {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.policies.dispatch = dispatch;
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("k", CoreClass::Vector, noop());
        assert_eq!(rt.kernel_cores(k), 48);
        let x = rt.add_tensor(4, &[64]).unwrap();
        for i in 0..8i64 {
            let coords = [i];
            let mut t = task(k, &coords, &[], 100);
            let args = [arg(x, &[i], &[1], Direction::Out)];
            t.args = &args;
            // The even tasks on core 7, the odd ones left to the policy.
            t.place = (i % 2 == 0).then_some(7);
            rt.submit(&t).unwrap();
        }
        rt.finish().unwrap();
        let s = rt.stats();
        let on = |c: u32| {
            s.cores
                .iter()
                .find(|x| x.class == "vector" && x.index == c)
                .map_or(0, |x| x.tasks)
        };
        assert!(on(7) >= 4, "{dispatch:?}: {} on core 7", on(7));
        assert_eq!(s.tasks, 8);
    }
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4]).unwrap();
    let args = [arg(x, &[0], &[4], Direction::Out)];
    let mut t = task(k, &[0], &args, 10);
    t.place = Some(48);
    let e = rt.submit(&t).unwrap_err().to_string();
    assert!(
        e.contains("placed on vector core 48") && e.contains("48 vector cores"),
        "{e}"
    );
}
