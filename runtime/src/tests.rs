use crate::*;
use proptest::prelude::*;
use std::sync::{Arc, Mutex};

/// A built-in model without the orchestration's submission cost: these tests submit at cycle 0
/// and are about the graph, the rings and the event clock (`submit_cost_*` test the cost).
fn arch(name: &str) -> Arch {
    let mut a = Arch::builtin(name).unwrap();
    a.overheads.submit = 0;
    a
}

fn noop() -> Arc<dyn Kernel> {
    Arc::new(|_: &RawTask| -> Result<(), String> { Ok(()) })
}

fn task<'a>(k: KernelId, coords: &'a [i64], args: &'a [Arg], cycles: u64) -> TaskDesc<'a> {
    TaskDesc {
        kernel: k,
        coords,
        args,
        scalars: &[],
        cycles,
        key: 0,
        priority: 0,
        stream: 0,
        place: None,
    }
}

fn arg(t: TensorId, off: &[i64], ext: &[i64], dir: Direction) -> Arg {
    Arg {
        region: Region::dense(t, off, ext).unwrap(),
        dir,
    }
}

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

/// Event-model runs of `steps` steps of `width` independent 1,000-cycle tasks (disjoint
/// rows), in a `Seq` or `Par` group of steps, each step a `Par` group; recorded.
fn order_run(order: Option<Order>, steps: i64, width: i64) -> Runtime {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.execute = false;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("t", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[steps * width, 16]).unwrap();
    if let Some(o) = order {
        rt.order_begin(o);
    }
    for i in 0..steps {
        if order.is_some() && i > 0 {
            rt.order_step();
        }
        rt.order_begin(Order::Par);
        for j in 0..width {
            let a = [arg(x, &[i * width + j, 0], &[1, 16], Direction::InOut)];
            rt.submit(&task(k, &[i, j], &a, 1000)).unwrap();
        }
        rt.order_end().unwrap();
    }
    if order.is_some() {
        rt.order_end().unwrap();
    }
    rt
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
fn seq_order_in_the_graph_is_dashed_and_joins_many_to_many_through_a_point() {
    let mut rt = order_run(Some(Order::Seq), 3, 1);
    rt.finish().unwrap();
    let dot = rt.dot();
    assert!(dot.contains("t0 -> t1 [style=dashed"), "{dot}");
    assert!(dot.contains("t1 -> t2 [style=dashed"), "{dot}");
    assert!(!dot.contains("t0 -> t2"), "{dot}");
    // No data edges: the order is all there is.
    assert!(rt.graph_edges_for_tests().is_empty());
    let mut rt = order_run(Some(Order::Seq), 2, 3);
    rt.finish().unwrap();
    let dot = rt.dot();
    assert!(dot.contains("seq0 [shape=point"), "{dot}");
    for t in 0..3 {
        assert!(
            dot.contains(&format!("t{t} -> seq0 [style=dashed")),
            "{dot}"
        );
        assert!(
            dot.contains(&format!("seq0 -> t{} [style=dashed", t + 3)),
            "{dot}"
        );
    }
    // Nested: a Seq of steps, each a Seq of two; the inner steps chain and the outer
    // step's first task waits for the last of the step before.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.execute = false;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("t", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4, 16]).unwrap();
    rt.order_begin(Order::Seq);
    for i in 0..2 {
        if i > 0 {
            rt.order_step();
        }
        rt.order_begin(Order::Seq);
        for j in 0..2 {
            if j > 0 {
                rt.order_step();
            }
            let a = [arg(x, &[2 * i + j, 0], &[1, 16], Direction::InOut)];
            rt.submit(&task(k, &[i, j], &a, 1000)).unwrap();
        }
        rt.order_end().unwrap();
    }
    rt.order_end().unwrap();
    let s = rt.finish().unwrap();
    let dot = rt.dot();
    for (a, b) in [(0, 1), (1, 2), (2, 3)] {
        assert!(
            dot.contains(&format!("t{a} -> t{b} [style=dashed")),
            "{dot}"
        );
    }
    let chain = order_run(Some(Order::Seq), 4, 1)
        .finish()
        .unwrap()
        .total_cycles;
    assert_eq!(s.total_cycles, chain);
}

fn add_one_kernel() -> Arc<dyn Kernel> {
    // Adds 1 to every i32 of its single inout region (2-D, strided).
    Arc::new(|t: &RawTask| -> Result<(), String> {
        // SAFETY: the runtime passes one valid argument inside a live i32 tensor.
        let a = unsafe { &*t.args };
        for i in 0..a.extents[0] {
            for j in 0..a.extents[1] {
                let r = a.offsets[0] + a.strides[0] * i;
                let c = a.offsets[1] + a.strides[1] * j;
                let idx = (r * a.dims[1] + c) as usize;
                // SAFETY: in bounds (validated at submit), no concurrent conflicting writer.
                unsafe {
                    let p = (a.base as *mut i32).add(idx);
                    *p += 1;
                }
            }
        }
        Ok(())
    })
}

fn run_increments(threads: usize, arch_name: &str) -> (Vec<u8>, u64) {
    let mut cfg = Config::new(arch(arch_name)).with_window(8);
    cfg.threads = threads;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("inc", CoreClass::Vector, add_one_kernel());
    let x = rt.add_tensor(4, &[32, 32]).unwrap();
    for n in 0..200i64 {
        let (r, c) = ((n * 7) % 24, (n * 5) % 24);
        let s = 1 + n % 2;
        let region = Region::new(x, &[r, c], &[4, 4], &[s, s]).unwrap();
        let a = [Arg {
            region,
            dir: Direction::InOut,
        }];
        rt.submit(&task(k, &[n], &a, 50 + (n as u64 % 7) * 10))
            .unwrap();
    }
    let s = rt.finish().unwrap();
    (rt.tensor_bytes(x).unwrap().to_vec(), s.total_cycles)
}

#[test]
fn execution_and_cycles_do_not_depend_on_threads() {
    let (a, ca) = run_increments(1, "ascend910b");
    let (b, cb) = run_increments(2, "ascend910b");
    let (c, cc) = run_increments(3, "ascend910b");
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(ca, cb);
    assert_eq!(ca, cc);
    // The oracle: count how often each element was incremented.
    let mut want = vec![0i32; 32 * 32];
    for n in 0..200i64 {
        let (r, c) = ((n * 7) % 24, (n * 5) % 24);
        let s = 1 + n % 2;
        for i in 0..4 {
            for j in 0..4 {
                want[((r + s * i) * 32 + c + s * j) as usize] += 1;
            }
        }
    }
    let got: Vec<i32> = a
        .chunks(4)
        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(got, want);
    assert!(ca > 0);
}

/// Independent tasks on 2 threads: cheap kernels stay on the orchestrating thread (no pool
/// threads start); kernels measured slow go to the pool, with the same results.
#[test]
fn only_slow_kernels_start_the_pool() {
    let run = |sleep_us: u64| {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.threads = 2;
        let mut rt = Runtime::new(cfg).unwrap();
        let body = Arc::new(move |t: &RawTask| -> Result<(), String> {
            std::thread::sleep(std::time::Duration::from_micros(sleep_us));
            // SAFETY: one valid 1×1 out argument of an i32 tensor.
            let a = unsafe { &*t.args };
            let idx = (a.offsets[0] * a.dims[1] + a.offsets[1]) as usize;
            unsafe { *(a.base as *mut i32).add(idx) = 7 };
            Ok(())
        });
        let k = rt.register_kernel("k", CoreClass::Vector, body);
        let x = rt.add_tensor(4, &[64, 1]).unwrap();
        for i in 0..64 {
            let a = [arg(x, &[i, 0], &[1, 1], Direction::Out)];
            rt.submit(&task(k, &[i], &a, 10)).unwrap();
        }
        rt.finish().unwrap();
        let ok = rt
            .tensor_bytes(x)
            .unwrap()
            .chunks(4)
            .all(|b| b == 7i32.to_ne_bytes());
        (ok, rt.pool_started_for_tests())
    };
    assert_eq!(run(0), (true, false));
    assert_eq!(run(200), (true, true));
}

/// A chain through a tensor whose links alternate between a slow kernel (on the pool) and
/// cheap ones (run at their submission when nothing earlier is pending, at their dispatch
/// otherwise): every link reads the one before, so any kernel run out of dependency order
/// leaves a wrong value.
#[test]
fn cheap_kernels_run_at_submission_only_after_everything_before_them() {
    let run = |threads: usize| {
        let mut cfg = Config::new(arch("ascend910b")).with_window(16);
        cfg.threads = threads;
        let mut rt = Runtime::new(cfg).unwrap();
        let body = |sleep_us: u64| {
            Arc::new(move |t: &RawTask| -> Result<(), String> {
                std::thread::sleep(std::time::Duration::from_micros(sleep_us));
                // SAFETY: an in argument (the element before, or the first) and an out one
                // (1×1 regions of the i32 tensor of 200 rows).
                let (a, b) = unsafe { (&*t.args, &*t.args.add(1)) };
                unsafe {
                    let prev = *(a.base as *const i32).add(a.offsets[0] as usize);
                    *(b.base as *mut i32).add(b.offsets[0] as usize) = prev + 1;
                }
                Ok(())
            })
        };
        let slow = rt.register_kernel("slow", CoreClass::Vector, body(300));
        let fast = rt.register_kernel("fast", CoreClass::Vector, body(0));
        let x = rt.add_tensor(4, &[200, 1]).unwrap();
        for i in 0..200i64 {
            let k = if i % 7 == 3 { slow } else { fast };
            let a = [
                arg(x, &[(i - 1).max(0), 0], &[1, 1], Direction::In),
                arg(x, &[i, 0], &[1, 1], Direction::Out),
            ];
            // The first task reads the element it writes (0): its value becomes 1.
            rt.submit(&task(k, &[i], &a, 10)).unwrap();
        }
        rt.finish().unwrap();
        let got: Vec<i32> = rt
            .tensor_bytes(x)
            .unwrap()
            .chunks(4)
            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        (got, rt.pool_started_for_tests())
    };
    let want: Vec<i32> = (1..=200).collect();
    assert_eq!(run(1), (want.clone(), false));
    assert_eq!(run(2), (want, true));
}

/// A kernel sees each argument's `rank` entries as submitted and the canonical values past
/// it (dims, extents and strides 1, offsets 0), also when an argument of higher rank came
/// before it in the runtime's reused buffers: at submission (one thread), and at dispatch
/// once the kernel is measured slow (two threads).
#[test]
fn kernels_see_canonical_entries_past_the_rank() {
    type Seen = Vec<(u64, u64, [[i64; MAX_RANK]; 4])>;
    for (threads, sleep_us) in [(1, 0), (2, 200)] {
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let s2 = Arc::clone(&seen);
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.threads = threads;
        let mut rt = Runtime::new(cfg).unwrap();
        let body = Arc::new(move |t: &RawTask| -> Result<(), String> {
            std::thread::sleep(std::time::Duration::from_micros(sleep_us));
            // SAFETY: the runtime passes `nargs` valid arguments.
            let args = unsafe { std::slice::from_raw_parts(t.args, t.nargs as usize) };
            let mut g = s2.lock().unwrap();
            for a in args {
                g.push((t.task, a.rank, [a.dims, a.offsets, a.extents, a.strides]));
            }
            Ok(())
        });
        let k = rt.register_kernel("k", CoreClass::Vector, body);
        let big = rt.add_tensor(4, &[2, 3, 4, 5, 6]).unwrap();
        let small = rt.add_tensor(4, &[9]).unwrap();
        let five = Region::new(big, &[1, 1, 1, 1, 1], &[1, 2, 3, 4, 5], &[]).unwrap();
        let one = Region::new(small, &[2], &[3], &[2]).unwrap();
        let n = 40;
        for i in 0..n {
            let a = [Arg {
                region: if i % 2 == 0 { five } else { one },
                dir: Direction::Out,
            }];
            rt.submit(&task(k, &[i as i64], &a, 10)).unwrap();
        }
        rt.finish().unwrap();
        let pad = |v: &[i64], fill: i64| {
            let mut x = [fill; MAX_RANK];
            x[..v.len()].copy_from_slice(v);
            x
        };
        let want_five = [
            pad(&[2, 3, 4, 5, 6], 1),
            pad(&[1; 5], 0),
            pad(&[1, 2, 3, 4, 5], 1),
            pad(&[1; 5], 1),
        ];
        let want_one = [pad(&[9], 1), pad(&[2], 0), pad(&[3], 1), pad(&[2], 1)];
        let mut got = seen.lock().unwrap().clone();
        got.sort_by_key(|g| g.0);
        let want: Seen = (0..n)
            .map(|i| match i % 2 {
                0 => (i, 5, want_five),
                _ => (i, 1, want_one),
            })
            .collect();
        assert_eq!(got, want, "{threads} threads");
        assert_eq!(rt.pool_started_for_tests(), threads > 1);
    }
}

#[test]
fn kernel_error_is_reported() {
    for threads in [1, 2] {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.threads = threads;
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel(
            "bad",
            CoreClass::Vector,
            Arc::new(|_: &RawTask| -> Result<(), String> { Err("boom".into()) }),
        );
        let x = rt.add_tensor(4, &[4, 4]).unwrap();
        let a = [arg(x, &[0, 0], &[4, 4], Direction::Out)];
        rt.submit(&task(k, &[0], &a, 10)).unwrap();
        let e = rt.finish();
        match &e {
            Err(RuntimeError::Kernel {
                kernel, message, ..
            }) => {
                assert_eq!(kernel, "bad");
                assert_eq!(message, "boom");
            }
            other => panic!("{other:?}"),
        }
        // Kept for callers that passed the error on as text.
        assert_eq!(rt.kernel_failure(), e.as_ref().err());
    }
}

#[test]
fn a_kernel_failure_surfaces_in_a_later_submission_naming_its_own_task() {
    // `bad` fails on task 0; with a window of 1 the failure surfaces while a `good` task is
    // submitted: the error names `bad`, task 0 and its coordinates, not the submitted task.
    for threads in [1, 2] {
        let mut cfg = Config::new(arch("ascend910b")).with_window(1);
        cfg.threads = threads;
        let mut rt = Runtime::new(cfg).unwrap();
        let bad = rt.register_kernel(
            "bad",
            CoreClass::Vector,
            Arc::new(|_: &RawTask| -> Result<(), String> { Err("boom".into()) }),
        );
        let good = rt.register_kernel("good", CoreClass::Vector, noop());
        let x = rt.add_tensor(4, &[8, 4]).unwrap();
        let mut result = rt.submit(&task(
            bad,
            &[0],
            &[arg(x, &[0, 0], &[1, 4], Direction::Out)],
            10,
        ));
        for i in 1..8 {
            if result.is_err() {
                break;
            }
            let a = [arg(x, &[i, 0], &[1, 4], Direction::Out)];
            result = rt.submit(&task(good, &[i], &a, 10));
        }
        let e = result.and_then(|_| rt.finish().map(|_| TaskId(0)));
        match e {
            Err(RuntimeError::Kernel {
                task,
                kernel,
                coords,
                ..
            }) => assert_eq!((task, kernel.as_str(), coords), (0, "bad", vec![0])),
            other => panic!("{threads} threads: {other:?}"),
        }
    }
}

#[test]
fn a_tensor_that_cannot_be_allocated_is_an_error() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    // 2^61 bytes: no allocator gives them, and the process must not abort.
    match rt.add_tensor(8, &[1 << 29, 1 << 29]) {
        Err(RuntimeError::Api(m)) => assert!(m.contains("cannot be allocated"), "{m}"),
        other => panic!("expected an API error, got {other:?}"),
    }
    let t = rt.add_tensor(4, &[4, 4]).unwrap();
    assert_eq!(rt.tensor_bytes(t).unwrap(), &[0u8; 64][..]);
}

#[test]
fn modeled_time_never_wraps() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[1, 64]).unwrap();
    let a = [arg(x, &[0, 0], &[1, 64], Direction::InOut)];
    // A task priced beyond MAX_TASK_CYCLES (a model with absurd costs) is refused.
    match rt.submit(&task(k, &[0], &a, u64::MAX)) {
        Err(RuntimeError::Api(m)) => assert!(m.contains("check the architecture model"), "{m}"),
        other => panic!("expected an API error, got {other:?}"),
    }
    // A chain of the longest tasks stops at MAX_CYCLES instead of wrapping round.
    let mut stopped = None;
    for i in 0..(1 << 15) {
        if let Err(e) = rt.submit(&task(k, &[i], &a, MAX_TASK_CYCLES - 10_000)) {
            stopped = Some(e);
            break;
        }
    }
    let e = match stopped {
        Some(e) => e,
        None => rt.finish().map(|s| s.total_cycles).unwrap_err(),
    };
    match e {
        RuntimeError::Limit(l) => {
            assert_eq!((l.what, l.limit), ("cycles", MAX_CYCLES));
            assert!(l.cycle >= MAX_CYCLES && l.cycle < MAX_CYCLES + 2 * MAX_TASK_CYCLES);
        }
        other => panic!("expected the cycle limit, got {other:?}"),
    }
}

#[test]
fn submit_rejects_bad_regions() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[8, 8]).unwrap();
    let a = [arg(x, &[4, 0], &[8, 8], Direction::In)];
    let e = rt.submit(&task(k, &[], &a, 1)).unwrap_err();
    assert!(e.to_string().contains("reaches index 11"), "{e}");
    let a = [arg(TensorId(9), &[0, 0], &[1, 1], Direction::In)];
    assert!(rt.submit(&task(k, &[], &a, 1)).is_err());
    let a = [arg(x, &[0], &[1], Direction::In)];
    assert!(rt.submit(&task(k, &[], &a, 1)).is_err());
    assert!(rt.submit(&task(KernelId(7), &[], &[], 1)).is_err());
    assert!(Region::new(x, &[0], &[0], &[]).is_err());
    assert!(rt.scope_end().is_err());
    // Region fields are public: a region built by hand is checked at submission too, and an
    // overflowing reach is an error, not a wrap or a panic.
    let good = Region::dense(x, &[0, 0], &[4, 4]).unwrap();
    let cases: [(usize, i64, i64, i64, &str); 5] = [
        (0, -4, 4, 1, "offset -4 must be ≥ 0"),
        (1, 0, 0, 1, "extent 0 ≥ 1"),
        (1, 0, 2, 0, "stride 0 ≥ 1"),
        (0, 1, 2, i64::MAX, "reaches index 9223372036854775807"),
        (1, i64::MAX, 2, 1, "reaches index 9223372036854775807"),
    ];
    let check = |rt: &mut Runtime| {
        for (d, o, e, st, msg) in cases {
            let mut r = good;
            (r.offsets[d], r.extents[d], r.strides[d]) = (o, e, st);
            for dir in [Direction::In, Direction::Out] {
                let a = [Arg { region: r, dir }];
                let err = rt.submit(&task(k, &[], &a, 1)).unwrap_err();
                assert!(err.to_string().contains(msg), "{err}");
            }
        }
    };
    check(&mut rt);
    // Again once the tensor has a grid of 4 × 4 tiles (from the first region seen), whose
    // cells skip the bounds check: `[-4, 0] + [4, 4]` has the shape of a cell before the
    // first, and these have the shape of cells past the last.
    rt.submit(&task(
        k,
        &[],
        &[arg(x, &[0, 0], &[4, 4], Direction::Out)],
        1,
    ))
    .unwrap();
    check(&mut rt);
    for (offsets, extents) in [([8, 0], [0, 4]), ([8, 0], [4, 4]), ([0, 8], [4, 4])] {
        let mut r = good;
        r.offsets[..2].copy_from_slice(&offsets);
        r.extents[..2].copy_from_slice(&extents);
        let a = [Arg {
            region: r,
            dir: Direction::In,
        }];
        assert!(rt.submit(&task(k, &[], &a, 1)).is_err(), "{r:?}");
    }
    assert_eq!(rt.finish().unwrap().tasks, 1);
}

#[test]
fn task_ring_backpressure_bounds_memory() {
    let mut cfg = Config::new(arch("ascend910b")).with_window(16);
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[1 << 16, 64]).unwrap();
    for i in 0..20_000i64 {
        let a = [
            arg(x, &[(i % 1000) * 64, 0], &[64, 64], Direction::In),
            arg(x, &[((i + 1) % 1000) * 64, 0], &[64, 64], Direction::Out),
        ];
        rt.submit(&task(k, &[i], &a, 100)).unwrap();
    }
    let s = rt.finish().unwrap();
    for r in &s.rings {
        assert!(r.high_water <= r.capacity, "{r:?}");
    }
    let ring = &s.rings[0];
    assert_eq!(ring.high_water, 16);
    assert!(ring.stalls > 0);
    assert_eq!(s.tasks, 20_000);
}

/// Closes a relation given as a square boolean matrix under transitivity.
#[allow(clippy::needless_range_loop)]
pub(crate) fn close(reach: &mut [Vec<bool>]) {
    let n = reach.len();
    for k in 0..n {
        for i in 0..n {
            if reach[i][k] {
                for j in 0..n {
                    if reach[k][j] {
                        reach[i][j] = true;
                    }
                }
            }
        }
    }
}

/// Dependency inference against the brute-force oracle: every conflicting pair is ordered by
/// the edges (transitively) and every edge joins a conflicting pair.
/// (tensor, offsets, extents, strides, direction)
type Access = (u8, [i64; 2], [i64; 2], [i64; 2], u8);

#[allow(clippy::needless_range_loop)]
fn check_deps(regions: Vec<Access>) {
    let mut cfg = Config::new(arch("ascend910b")).with_window(1024);
    cfg.execute = false;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let ts = [
        rt.add_tensor(4, &[40, 40]).unwrap(),
        rt.add_tensor(4, &[40, 40]).unwrap(),
    ];
    let mut descs = Vec::new();
    for (t, o, e, s, d) in &regions {
        let region = Region::new(ts[(*t % 2) as usize], o, e, s).unwrap();
        let dir = match d % 3 {
            0 => Direction::In,
            1 => Direction::Out,
            _ => Direction::InOut,
        };
        descs.push(Arg { region, dir });
    }
    for (i, a) in descs.iter().enumerate() {
        rt.submit(&task(k, &[i as i64], std::slice::from_ref(a), 10))
            .unwrap();
    }
    let n = descs.len();
    let conflict = |i: usize, j: usize| {
        let (a, b) = (&descs[i], &descs[j]);
        (a.dir.writes() || b.dir.writes()) && region::overlaps(&a.region, &b.region)
    };
    let mut reach = vec![vec![false; n]; n];
    for (a, b) in &rt.graph_edges_for_tests() {
        let (a, b) = (*a as usize, *b as usize);
        assert!(a < b && conflict(a, b), "false edge {a} -> {b}");
        reach[a][b] = true;
    }
    close(&mut reach);
    for j in 0..n {
        for i in 0..j {
            if conflict(i, j) {
                assert!(reach[i][j], "missed ordering {i} -> {j}");
            }
        }
    }
    // The recorded graph keeps the dependencies on tasks that had retired too: the same
    // oracle, over all of them, each edge of the kind its accesses make.
    let g = rt.task_graph();
    let mut all = vec![vec![false; n]; n];
    for e in &g.data {
        let (a, b) = (e.from as usize, e.to as usize);
        assert!(a < b && conflict(a, b), "false recorded edge {a} -> {b}");
        let (x, y) = (descs[a].dir, descs[b].dir);
        let fits = match e.kind {
            DepKind::Raw => x.writes() && y.reads(),
            DepKind::Waw => x.writes() && y.writes(),
            DepKind::War => x.reads() && y.writes(),
        };
        assert!(fits, "{a} -> {b} is not {:?}", e.kind);
        all[a][b] = true;
    }
    close(&mut all);
    for j in 0..n {
        for i in 0..j {
            if conflict(i, j) {
                assert!(all[i][j], "recorded graph misses ordering {i} -> {j}");
            }
        }
    }
    rt.finish().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn dependency_inference_matches_oracle(
        regions in proptest::collection::vec(
            (0u8..2, [0i64..20, 0i64..20], [1i64..6, 1i64..6], [1i64..4, 1i64..4], 0u8..3),
            1..40)
    ) {
        check_deps(regions);
    }
}

#[test]
fn wide_regions_use_the_wide_index() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.execute = false;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[1 << 20, 4]).unwrap();
    let w = [arg(x, &[0, 0], &[1 << 20, 4], Direction::Out)];
    let r = [arg(x, &[500_000, 0], &[1, 1], Direction::In)];
    let r2 = [arg(x, &[900_000, 0], &[8, 1], Direction::InOut)];
    rt.submit(&task(k, &[0], &w, 1)).unwrap();
    rt.submit(&task(k, &[1], &r, 1)).unwrap();
    rt.submit(&task(k, &[2], &r2, 1)).unwrap();
    assert_eq!(rt.graph_edges_for_tests(), vec![(0, 1), (0, 2)]);
    rt.finish().unwrap();
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

/// Start cycles of the tasks of a recorded run, in trace order.
fn task_starts(rt: &Runtime) -> Vec<u64> {
    let trace: serde_json::Value = serde_json::from_str(&rt.chrome_trace()).unwrap();
    let mut starts: Vec<u64> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "task")
        .map(|e| e["args"]["start_cycle"].as_u64().unwrap())
        .collect();
    starts.sort_unstable();
    starts
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

// ------------------------------------------------------------------ deadlock corpus

fn expect_deadlock(r: Result<impl std::fmt::Debug, RuntimeError>) -> DeadlockReport {
    match r {
        Err(RuntimeError::Deadlock(d)) => *d,
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn deadlock_scope_larger_than_window() {
    let mut cfg = Config::new(arch("ascend910b")).with_window(8);
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[64, 64]).unwrap();
    rt.scope_begin();
    let mut last = Ok(TaskId(0));
    for i in 0..9i64 {
        let a = [arg(x, &[i, 0], &[1, 64], Direction::Out)];
        last = rt.submit(&task(k, &[i], &a, 10));
        if last.is_err() {
            break;
        }
    }
    let d = expect_deadlock(last);
    assert_eq!(d.reason, StallReason::TaskRingFull);
    assert_eq!(d.scope_depth, 1);
    assert_eq!(d.scope_held_tasks, 8);
    assert!(
        d.mitigation.contains("at least 16 (2 × the 8 tasks"),
        "{}",
        d.mitigation
    );
    assert_eq!(d.rings[0].used, 8);
    assert!(d.to_string().contains("TASK_RING_FULL"));
}

#[test]
fn safe_scope_within_window() {
    let mut cfg = Config::new(arch("ascend910b")).with_window(16);
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[64, 64]).unwrap();
    for _ in 0..10 {
        rt.scope_begin();
        for i in 0..8i64 {
            let a = [arg(x, &[i, 0], &[1, 64], Direction::InOut)];
            rt.submit(&task(k, &[i], &a, 10)).unwrap();
        }
        rt.scope_end().unwrap();
    }
    assert_eq!(rt.finish().unwrap().tasks, 80);
}

#[test]
fn deadlock_heap_arena() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.heap_arena = 1000;
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    assert!(rt.alloc_tensor(4, &[10]).is_err()); // no scope
    rt.scope_begin();
    rt.alloc_tensor(4, &[200]).unwrap();
    let d = expect_deadlock(rt.alloc_tensor(4, &[100]));
    assert_eq!(d.reason, StallReason::HeapArenaFull);
    assert_eq!(d.scope_held_bytes, 800);
    assert!(
        d.mitigation.contains("at least 1200 bytes"),
        "{}",
        d.mitigation
    );
    // Safe: the same allocations in consecutive scopes reuse the arena.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.heap_arena = 1000;
    let mut rt = Runtime::new(cfg).unwrap();
    for _ in 0..50 {
        rt.scope_begin();
        rt.alloc_tensor(4, &[200]).unwrap();
        rt.scope_end().unwrap();
    }
    let s = rt.finish().unwrap();
    assert_eq!(s.rings[3].high_water, 800);
}

#[test]
fn deadlock_deplist_pool() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.deplist_pool = 2;
    cfg.execute = false;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4, 4]).unwrap();
    for i in 0..3 {
        let a = [arg(x, &[i, 0], &[1, 4], Direction::Out)];
        rt.submit(&task(k, &[i], &a, 10)).unwrap();
    }
    // The reader of all three rows needs three edges while they are pending, more than the
    // pool: it waits (not a deadlock) until enough have completed, then takes fewer edges.
    let a = [arg(x, &[0, 0], &[4, 4], Direction::In)];
    rt.submit(&task(k, &[9], &a, 10)).unwrap();
    let s = rt.finish().unwrap();
    let ring = s.rings.iter().find(|r| r.name == "deplist_pool").unwrap();
    assert!(ring.stalls > 0 && ring.high_water <= 2, "{ring:?}");
    assert!(s.edges <= 2, "{}", s.edges);
}

#[test]
fn deadlock_tensormap_pool() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.tensormap_pool = 2;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4, 4]).unwrap();
    let a: Vec<Arg> = (0..3)
        .map(|i| arg(x, &[i, 0], &[1, 4], Direction::In))
        .collect();
    let d = expect_deadlock(rt.submit(&task(k, &[0], &a, 10)));
    assert_eq!(d.reason, StallReason::TensormapPoolFull);
    assert!(d.mitigation.contains("at least 3"));
    // Safe: two-argument tasks stream through the pool.
    let a: Vec<Arg> = (0..2)
        .map(|i| arg(x, &[i, 0], &[1, 4], Direction::InOut))
        .collect();
    for i in 0..100 {
        rt.submit(&task(k, &[i], &a, 10)).unwrap();
    }
    assert_eq!(rt.finish().unwrap().rings[1].high_water, 2);
}

#[test]
fn a_window_of_one_fits_a_task_with_many_regions() {
    // A task of 8 regions through a window of 1: the tensor map sized from the window (4
    // entries) cannot hold it; `fit_region_args` sizes it for the widest task.
    let submit8 = |fit: bool| {
        let mut cfg = Config::new(arch("ascend910b")).with_window(1);
        if fit {
            cfg.fit_region_args(8);
        }
        let mut rt = Runtime::new(cfg)?;
        let k = rt.register_kernel("k", CoreClass::Vector, noop());
        let x = rt.add_tensor(4, &[8, 4, 4]).unwrap();
        let a: Vec<Arg> = (0..8)
            .map(|i| arg(x, &[i, 0, 0], &[1, 4, 4], Direction::InOut))
            .collect();
        for i in 0..3 {
            rt.submit(&task(k, &[i], &a, 10))?;
        }
        rt.finish()
    };
    let d = expect_deadlock(submit8(false));
    assert_eq!(d.reason, StallReason::TensormapPoolFull);
    let s = submit8(true).unwrap();
    assert_eq!((s.tasks, s.rings[1].capacity), (3, 32));
}

// ------------------------------------------------------------------ CSP

struct Loader {
    out: ChannelId,
    k: KernelId,
    x: TensorId,
    i: i64,
    n: i64,
}

impl Process for Loader {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        if self.i == self.n {
            return Ok(Step::Finished);
        }
        let a = [arg(self.x, &[self.i, 0], &[1, 8], Direction::Out)];
        let t = cx
            .submit(&task(self.k, &[self.i], &a, 100))
            .map_err(|e| e.to_string())?;
        self.i += 1;
        Ok(Step::Send {
            ch: self.out,
            token: Token::new(&[self.i - 1]),
            after: Some(t),
        })
    }
}

struct Worker {
    inp: ChannelId,
    out: Option<ChannelId>,
    k: KernelId,
    x: TensorId,
    waiting: bool,
    seen: Arc<std::sync::Mutex<Vec<i64>>>,
}

impl Process for Worker {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        if !self.waiting {
            self.waiting = true;
            return Ok(Step::Recv { ch: self.inp });
        }
        self.waiting = false;
        match cx.received() {
            Some(Received::Token(t)) => {
                let i = t.values()[0];
                self.seen.lock().map_err(|e| e.to_string())?.push(i);
                let a = [arg(self.x, &[i, 0], &[1, 8], Direction::InOut)];
                let id = cx
                    .submit(&task(self.k, &[i], &a, 50))
                    .map_err(|e| e.to_string())?;
                match self.out {
                    Some(ch) => Ok(Step::Send {
                        ch,
                        token: t,
                        after: Some(id),
                    }),
                    None => Ok(Step::Continue),
                }
            }
            Some(Received::Closed) => Ok(Step::Finished),
            None => Err("no token".into()),
        }
    }
}

fn pipeline(arch_name: &str, depth: u32, threads: usize) -> (u64, Vec<i64>, Vec<u8>) {
    let mut cfg = Config::new(arch(arch_name));
    cfg.threads = threads;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("inc", CoreClass::Vector, add_one_kernel());
    let x = rt.add_tensor(4, &[16, 8]).unwrap();
    let l2c = rt.add_channel("l2c", depth, None);
    let c2s = rt.add_channel("c2s", depth, None);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let specs = vec![
        ProcSpec {
            name: "loader".into(),
            body: Box::new(Loader {
                out: l2c,
                k,
                x,
                i: 0,
                n: 16,
            }),
            produces: vec![l2c],
        },
        ProcSpec {
            name: "computer".into(),
            body: Box::new(Worker {
                inp: l2c,
                out: Some(c2s),
                k,
                x,
                waiting: false,
                seen: Arc::new(std::sync::Mutex::new(Vec::new())),
            }),
            produces: vec![c2s],
        },
        ProcSpec {
            name: "storer".into(),
            body: Box::new(Worker {
                inp: c2s,
                out: None,
                k,
                x,
                waiting: false,
                seen: Arc::clone(&seen),
            }),
            produces: vec![],
        },
    ];
    run_csp(&mut rt, specs, &seen, x)
}

/// Runs `specs` to the end: `total_cycles`, the tokens the workers saw (`seen`) in order, and
/// tensor `x`'s bytes.
fn run_csp(
    rt: &mut Runtime,
    specs: Vec<ProcSpec<'_>>,
    seen: &std::sync::Mutex<Vec<i64>>,
    x: TensorId,
) -> (u64, Vec<i64>, Vec<u8>) {
    rt.run_processes(specs).unwrap();
    let s = rt.finish().unwrap();
    let order = seen.lock().unwrap().clone();
    (s.total_cycles, order, rt.tensor_bytes(x).unwrap().to_vec())
}

#[test]
fn csp_pipeline_runs_in_order_and_deterministically() {
    for depth in [0, 1, 2] {
        let (c1, o1, d1) = pipeline("ascend910b", depth, 1);
        let (c2, o2, d2) = pipeline("ascend910b", depth, 2);
        assert_eq!(o1, (0..16).collect::<Vec<_>>());
        assert_eq!((c1, &o1, &d1), (c2, &o2, &d2));
        // Every element incremented three times (loader, computer, storer).
        assert!(d1
            .chunks(4)
            .all(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) == 3));
    }
}

/// Thousands of replicated workers on one channel (more than the 4,096 processes of two
/// levels of the runnable and receiver sets): every token is taken exactly once, and the run
/// is the same on 1 and 2 threads.
#[test]
fn csp_thousands_of_workers_share_a_channel() {
    let run = |threads: usize| {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.threads = threads;
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("inc", CoreClass::Vector, add_one_kernel());
        let x = rt.add_tensor(4, &[6000, 8]).unwrap();
        let q = rt.add_channel("q", 4, Some(3));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut specs = vec![ProcSpec {
            name: "loader".into(),
            body: Box::new(Loader {
                out: q,
                k,
                x,
                i: 0,
                n: 6000,
            }),
            produces: vec![q],
        }];
        for w in 0..5000 {
            specs.push(ProcSpec {
                name: format!("w{w}"),
                body: Box::new(Worker {
                    inp: q,
                    out: None,
                    k,
                    x,
                    waiting: false,
                    seen: Arc::clone(&seen),
                }),
                produces: vec![],
            });
        }
        run_csp(&mut rt, specs, &seen, x)
    };
    let (c1, o1, d1) = run(1);
    let mut sorted = o1.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..6000).collect::<Vec<_>>());
    // Loader and worker each incremented every row once.
    assert!(d1
        .chunks(4)
        .all(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]) == 2));
    assert_eq!((c1, o1, d1), run(2));
}

#[test]
fn csp_v9_clocks() {
    // loader: 16 × 100; computer: max(own, token) + 50 each; storer likewise.
    let (c, _, _) = pipeline("pto_wsp_v9", 2, 1);
    assert_eq!(c, 16 * 100 + 50 + 50);
}

struct Script {
    steps: Vec<Step>,
    i: usize,
}

impl Process for Script {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        let _ = cx.received();
        let s = self.steps.get(self.i).copied().unwrap_or(Step::Finished);
        self.i += 1;
        Ok(s)
    }
}

fn script(name: &str, produces: Vec<ChannelId>, steps: Vec<Step>) -> ProcSpec<'static> {
    ProcSpec {
        name: name.into(),
        body: Box::new(Script { steps, i: 0 }),
        produces,
    }
}

fn send(ch: ChannelId, v: i64) -> Step {
    Step::Send {
        ch,
        token: Token::new(&[v]),
        after: None,
    }
}

#[test]
fn deadlock_recv_cycle() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let a = rt.add_channel("a", 1, None);
    let b = rt.add_channel("b", 1, None);
    let d = expect_deadlock(rt.run_processes(vec![
        script("p", vec![a], vec![Step::Recv { ch: b }, send(a, 1)]),
        script("q", vec![b], vec![Step::Recv { ch: a }, send(b, 1)]),
    ]));
    assert_eq!(d.reason, StallReason::ChannelEmptyWait);
    assert_eq!(d.blocked.len(), 2);
    assert_eq!(d.blocked[0].process, "p");
    assert_eq!(d.blocked[0].channel, "b");
    assert_eq!(d.blocked[0].wait, Wait::Empty);
    assert!(d.mitigation.contains("send before it receives"));
}

#[test]
fn deadlock_full_channel() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let a = rt.add_channel("a", 1, None);
    let b = rt.add_channel("b", 1, None);
    // p sends two tokens on a before reading b; q waits on b first.
    let d = expect_deadlock(rt.run_processes(vec![
        script(
            "p",
            vec![a],
            vec![send(a, 1), send(a, 2), Step::Recv { ch: b }],
        ),
        script(
            "q",
            vec![b],
            vec![Step::Recv { ch: b }, Step::Recv { ch: a }],
        ),
    ]));
    assert_eq!(d.reason, StallReason::ChannelFullWait);
    let p = &d.blocked[0];
    assert_eq!(
        (p.process.as_str(), p.wait, p.fill, p.depth),
        ("p", Wait::Full, 1, 1)
    );
    // `q` waits on `b`: the runtime names it, and says the depth is too small, not by how
    // much (it sees one stuck state, not the tokens still to come).
    assert!(
        d.mitigation.contains("raise its depth above 1") && d.mitigation.contains("(`q` on `b`)"),
        "{}",
        d.mitigation
    );
}

#[test]
fn safe_rendezvous_and_close() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let a = rt.add_channel("a", 0, Some(5));
    let got = Arc::new(std::sync::Mutex::new(Vec::new()));
    let g2 = Arc::clone(&got);
    let mut waiting = false;
    let consumer = move |cx: &mut ProcCx<'_>| -> Result<Step, String> {
        if waiting {
            waiting = false;
            match cx.received() {
                Some(Received::Token(t)) => {
                    g2.lock().map_err(|e| e.to_string())?.push(t.values()[0])
                }
                Some(Received::Closed) => return Ok(Step::Finished),
                None => return Err("nothing received".into()),
            }
        }
        waiting = true;
        Ok(Step::Recv { ch: a })
    };
    rt.run_processes(vec![
        script("p1", vec![a], vec![send(a, 1), send(a, 2)]),
        script("p2", vec![a], vec![send(a, 10)]),
        ProcSpec {
            name: "c".into(),
            body: Box::new(consumer),
            produces: vec![],
        },
    ])
    .unwrap();
    let mut v = got.lock().unwrap().clone();
    assert_eq!(v.len(), 3);
    v.sort();
    assert_eq!(v, vec![1, 2, 10]);
    // A rendezvous holds no token: each passes from a sender straight to the receiver.
    assert_eq!(rt.channel_high_water(a), Some(0));
    assert!(rt.finish().unwrap().total_cycles >= 5);
}

#[test]
fn a_channel_without_producers_is_closed_and_only_producers_send() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let c = rt.add_channel("c", 1, None);
    let mut asked = false;
    let consumer = move |cx: &mut ProcCx<'_>| -> Result<Step, String> {
        if !asked {
            asked = true;
            return Ok(Step::Recv { ch: c });
        }
        match cx.received() {
            Some(Received::Closed) => Ok(Step::Finished),
            other => Err(format!("expected the close, got {other:?}")),
        }
    };
    rt.run_processes(vec![ProcSpec {
        name: "cons".into(),
        body: Box::new(consumer),
        produces: vec![],
    }])
    .expect("no producer: the channel is closed, not a deadlock");
    let d = rt.add_channel("d", 1, None);
    let e = rt
        .run_processes(vec![script("rogue", vec![], vec![send(d, 1)])])
        .unwrap_err();
    assert!(e.to_string().contains("without producing it"), "{e}");
}

#[test]
fn stats_trace_and_dot_are_well_formed() {
    let mut cfg = Config::new(arch("ascend910b")).with_window(4);
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[8, 8]).unwrap();
    for i in 0..10 {
        let a = [arg(x, &[i % 2, 0], &[1, 8], Direction::InOut)];
        rt.submit(&task(k, &[i], &a, 100)).unwrap();
    }
    let s = rt.finish().unwrap();
    let j: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(j["tasks"], 10);
    assert_eq!(j["rings"][0]["name"], "task_ring");
    assert_eq!(s.edges, 8);
    let t: serde_json::Value = serde_json::from_str(&rt.chrome_trace()).unwrap();
    let evs = t["traceEvents"].as_array().unwrap();
    assert_eq!(evs.iter().filter(|e| e["cat"] == "task").count(), 10);
    assert!(evs
        .iter()
        .any(|e| e["cat"] == "stall" && e["name"] == "TASK_RING_FULL"));
    let dot = rt.dot();
    assert!(dot.contains("t0 -> t2;") && dot.contains("k[3]"), "{dot}");
    let busy: u64 = s.cores.iter().map(|c| c.busy_cycles).sum();
    assert!(busy >= 1000);
}

/// A 2-D wavefront on single elements of a wide tensor (the grid index buckets both
/// dimensions): each task depends exactly on its north and west neighbours.
#[test]
fn wavefront_edges_are_exact() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.execute = false;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let n = 12i64;
    let x = rt.add_tensor(1, &[4096, 512]).unwrap();
    let mut want = Vec::new();
    for i in 0..n {
        for j in 0..n {
            let mut a = vec![arg(x, &[i, j], &[1, 1], Direction::Out)];
            if i > 0 {
                a.push(arg(x, &[i - 1, j], &[1, 1], Direction::In));
                want.push((((i - 1) * n + j) as u64, (i * n + j) as u64));
            }
            if j > 0 {
                a.push(arg(x, &[i, j - 1], &[1, 1], Direction::In));
                want.push(((i * n + j - 1) as u64, (i * n + j) as u64));
            }
            rt.submit(&task(k, &[i, j], &a, 1_000_000)).unwrap();
        }
    }
    let mut got = rt.graph_edges_for_tests();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
    rt.finish().unwrap();
}

#[test]
fn huge_windows_clamp_the_pool_and_bad_pools_are_refused() {
    let cfg = Config::new(arch("ascend910b")).with_window(u32::MAX / 2);
    assert_eq!(cfg.tensormap_pool, MAX_POOL);
    assert_eq!(cfg.deplist_pool, u32::MAX);
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.tensormap_pool = MAX_POOL + 1;
    match Runtime::new(cfg) {
        Err(RuntimeError::Api(m)) => assert!(m.contains("above the largest pool"), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted a pool above the maximum"),
    }
    // The runtime and a builder used alone refuse bad windows and pools with one message.
    let refused = |window: u32, pool: u32, want: &str| {
        let mut cfg = Config::new(arch("ascend910b")).with_window(window);
        cfg.tensormap_pool = pool;
        for got in [Runtime::new(cfg).err(), Builder::new(window, pool, 0).err()] {
            match got {
                Some(RuntimeError::Api(m)) => assert!(m.contains(want), "{m}"),
                other => panic!("{window}, {pool}: {other:?}"),
            }
        }
    };
    refused(MAX_WINDOW + 1, 64, "above the largest window");
    refused(0, 64, "must be ≥ 1");
    refused(64, 0, "must be ≥ 1");
    refused(64, MAX_POOL + 1, "above the largest pool");
}

/// A process that never finishes: one task a step, each after the last.
struct Endless {
    k: KernelId,
    x: TensorId,
}

impl Process for Endless {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        let a = [arg(self.x, &[0, 0], &[1, 8], Direction::InOut)];
        cx.submit(&task(self.k, &[0], &a, 100))
            .map_err(|e| e.to_string())?;
        Ok(Step::Continue)
    }
}

/// Sends on `out` and receives on `inp` in turn, forever.
struct Bounce {
    out: ChannelId,
    inp: ChannelId,
    send: bool,
}

impl Process for Bounce {
    fn step(&mut self, cx: &mut ProcCx<'_>) -> Result<Step, String> {
        let _ = cx.received();
        self.send = !self.send;
        Ok(if self.send {
            Step::Recv { ch: self.inp }
        } else {
            send(self.out, 0)
        })
    }
}

fn endless(arch_name: &str, max_tasks: u64, max_cycles: u64) -> (RuntimeError, Runtime) {
    let mut cfg = Config::new(arch(arch_name)).with_window(4);
    cfg.execute = false;
    cfg.max_tasks = max_tasks;
    cfg.max_cycles = max_cycles;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[1, 8]).unwrap();
    let spec = ProcSpec {
        name: "endless".into(),
        body: Box::new(Endless { k, x }),
        produces: vec![],
    };
    let e = rt.run_processes(vec![spec]).expect_err("a limit stops it");
    (e, rt)
}

#[test]
fn limits_stop_a_run_that_never_ends() {
    // Tasks: exactly `max_tasks` are submitted; the error passes through the process as
    // text, and the runtime keeps the limit for its caller.
    let (e, rt) = endless("ascend910b", 1000, u64::MAX);
    let l = rt.limit_reached().expect("kept");
    assert_eq!((l.what, l.limit, l.tasks), ("tasks", 1000, 1000));
    assert!(e.to_string().contains("limit of 1000 tasks"), "{e}");
    // Cycles on the event clock: the run stops at the first event past the limit.
    let (_, rt) = endless("ascend910b", u64::MAX, 50_000);
    let l = rt.limit_reached().expect("kept");
    assert_eq!((l.what, l.limit), ("cycles", 50_000));
    assert!(l.cycle > 50_000 && l.cycle < 51_000, "{l:?}");
    assert!(l.tasks > 10 && l.tasks < 100, "{l:?}");
    // Under v9 the limit is on v9's clocks: 100 cycles a task on one process.
    let (_, rt) = endless("pto_wsp_v9", u64::MAX, 50_000);
    let l = rt.limit_reached().expect("kept");
    assert_eq!((l.what, l.tasks, l.cycle), ("cycles", 501, 50_100), "{l:?}");
    // Tokens passed round forever at one instant: no task, no cycle passing.
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let (ab, ba) = (rt.add_channel("ab", 1, None), rt.add_channel("ba", 1, None));
    let bounce = |name: &str, out, inp, send_first| ProcSpec {
        name: name.into(),
        body: Box::new(Bounce {
            out,
            inp,
            send: send_first,
        }),
        produces: vec![out],
    };
    let e = rt
        .run_processes(vec![
            bounce("ping", ab, ba, true),
            bounce("pong", ba, ab, false),
        ])
        .expect_err("a livelock");
    let l = rt.limit_reached().expect("kept");
    assert_eq!((l.limit, l.tasks, l.cycle), (MAX_IDLE_STEPS, 0, 0), "{l:?}");
    assert!(
        e.to_string().contains("without a task or a cycle passing"),
        "{e}"
    );
    // Without limits nothing is kept.
    let rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    assert!(rt.limit_reached().is_none());
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

// ---------------------------------------------------------------- misuse and edge cases

/// A kernel that sleeps `ms` milliseconds for tasks numbered `from` on, then writes 0xAB at
/// its one-byte-element argument's offset.
fn late_writer(from: u64, ms: u64) -> Arc<dyn Kernel> {
    Arc::new(move |t: &RawTask| -> Result<(), String> {
        let wait = if t.task >= from { ms * 1000 } else { 0 } + 20;
        std::thread::sleep(std::time::Duration::from_micros(wait));
        // SAFETY: one valid rank-1 argument of a one-byte tensor.
        let a = unsafe { &*t.args };
        unsafe { *a.base.add(a.offsets[0] as usize) = 0xAB };
        Ok(())
    })
}

#[test]
fn tensor_bytes_waits_for_kernels_on_the_pool() {
    // Tasks 10 and 11 run on the pool for 150 ms after their submission returned: the bytes
    // handed out are theirs, and no thread writes them while they are borrowed.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.threads = 2;
    cfg.policies.timing = Timing::Batched(2);
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("late", CoreClass::Vector, late_writer(10, 150));
    let x = rt.add_tensor(1, &[64]).unwrap();
    for i in 0..12 {
        let a = [arg(x, &[i], &[1], Direction::Out)];
        rt.submit(&task(k, &[i], &a, 1000)).unwrap();
    }
    let s = rt.tensor_bytes(x).unwrap();
    // SAFETY: a plain read of the borrowed bytes (volatile: read them again for real).
    let before = unsafe { std::ptr::read_volatile(&s[10]) };
    std::thread::sleep(std::time::Duration::from_millis(300));
    let after = unsafe { std::ptr::read_volatile(&s[10]) };
    assert_eq!(before, after);
    rt.finish().unwrap();
    assert_eq!(rt.tensor_bytes(x).unwrap()[..12], [0xAB; 12]);
}

#[test]
fn a_scratch_tensor_takes_no_task_after_its_scope() {
    for threads in [1, 2] {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.threads = threads;
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("late", CoreClass::Vector, late_writer(0, 0));
        rt.scope_begin();
        let t = rt.alloc_tensor(1, &[16]).unwrap();
        rt.submit(&task(k, &[0], &[arg(t, &[0], &[1], Direction::Out)], 10))
            .unwrap();
        rt.scope_end().unwrap();
        let e = rt
            .submit(&task(k, &[1], &[arg(t, &[1], &[1], Direction::Out)], 10))
            .unwrap_err();
        assert!(e.to_string().contains("scope that has ended"), "{e}");
        rt.finish().unwrap();
    }
}

#[test]
fn a_held_batch_is_issued_before_a_stall_is_called_a_deadlock() {
    // The arena's bytes are held by a task the batch holds back: issuing it frees them.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.heap_arena = 1024;
    cfg.policies.timing = Timing::Batched(8);
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    for i in 0..3 {
        rt.scope_begin();
        let t = rt.alloc_tensor(4, &[256]).unwrap();
        rt.submit(&task(k, &[i], &[arg(t, &[0], &[256], Direction::Out)], 100))
            .unwrap();
        rt.scope_end().unwrap();
    }
    assert_eq!(rt.finish().unwrap().tasks, 3);
    // A process sends a token after a task the batch holds; its consumer receives it.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.policies.timing = Timing::Batched(4);
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[1, 8]).unwrap();
    let ch = rt.add_channel("ready", 1, None);
    let sent = Box::new(Loader {
        out: ch,
        k,
        x,
        i: 0,
        n: 1,
    });
    rt.run_processes(vec![
        ProcSpec {
            name: "producer".into(),
            body: sent,
            produces: vec![ch],
        },
        script(
            "consumer",
            vec![],
            vec![Step::Recv { ch }, Step::Recv { ch }],
        ),
    ])
    .unwrap();
}

#[test]
fn runs_of_processes_one_after_another() {
    // Each run opens the channels its producers produce; a run after one that stopped is
    // refused rather than served by the stopped run's processes.
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let c = rt.add_channel("c", 2, None);
    for v in [1, 11] {
        rt.run_processes(vec![
            script("q", vec![], vec![Step::Recv { ch: c }; 3]),
            script("p", vec![c], vec![send(c, v), send(c, v + 1)]),
        ])
        .unwrap();
    }
    let d = expect_deadlock(rt.run_processes(vec![
        script("p", vec![c], vec![send(c, 1), send(c, 2), send(c, 3)]),
        script("idle", vec![], vec![]),
    ]));
    assert_eq!(d.reason, StallReason::ChannelFullWait);
    let e = rt
        .run_processes(vec![script("q", vec![], vec![Step::Recv { ch: c }])])
        .unwrap_err();
    assert!(e.to_string().contains("did not finish"), "{e}");
}

#[test]
fn the_earliest_failing_task_is_reported_whatever_the_threads() {
    // Task 20 is long in model time and task 30 short; both fail. One thread runs kernels in
    // submission order; with a pool, 30 may finish failing first on the host.
    let run = |threads: usize| {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.threads = threads;
        let mut rt = Runtime::new(cfg).unwrap();
        let body = Arc::new(|t: &RawTask| -> Result<(), String> {
            std::thread::sleep(std::time::Duration::from_micros(300));
            match t.task {
                20 => {
                    std::thread::sleep(std::time::Duration::from_millis(30));
                    Err("boom 20".into())
                }
                30 => Err("boom 30".into()),
                _ => Ok(()),
            }
        });
        let k = rt.register_kernel("k", CoreClass::Vector, body);
        let x = rt.add_tensor(4, &[64]).unwrap();
        let mut err = None;
        for i in 0..40 {
            let cycles = if i == 20 { 100_000 } else { 10 };
            let a = [arg(x, &[i], &[1], Direction::Out)];
            if let Err(e) = rt.submit(&task(k, &[i], &a, cycles)) {
                err = Some(e);
                break;
            }
        }
        match err.or_else(|| rt.finish().err()) {
            Some(RuntimeError::Kernel { task, .. }) => task,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(run(1), 20);
    assert_eq!(run(2), 20);
}

#[test]
fn a_nested_scope_asks_for_a_window_that_holds_every_open_scope() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b")).with_window(8)).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[64]).unwrap();
    rt.scope_begin();
    for i in 0..7 {
        rt.submit(&task(k, &[i], &[arg(x, &[i], &[1], Direction::Out)], 10))
            .unwrap();
    }
    rt.scope_begin();
    rt.submit(&task(k, &[7], &[arg(x, &[7], &[1], Direction::Out)], 10))
        .unwrap();
    let d = expect_deadlock(rt.submit(&task(k, &[8], &[arg(x, &[8], &[1], Direction::Out)], 10)));
    assert_eq!(d.reason, StallReason::TaskRingFull);
    assert!(
        d.mitigation
            .contains("at least 16 (2 × the 8 tasks the 2 open scopes hold"),
        "{}",
        d.mitigation
    );
}

#[test]
fn models_and_policies_built_by_hand_are_checked() {
    let mut a = arch("ascend910b");
    a.cores.clear();
    assert!(Runtime::new(Config::new(a)).is_err());
    let mut a = arch("ascend910b");
    a.overheads.complete = u64::MAX;
    assert!(Runtime::new(Config::new(a)).is_err());
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.policies.dispatch = Dispatch::RoundRobin(0);
    assert!(Runtime::new(cfg).is_err());
    // Streams, and v9 workers, are kept from the start: a count past the most is refused
    // (an error, not an allocation that aborts), on any model.
    for (name, n) in [
        ("ascend910b", MAX_STREAMS),
        ("ascend910b", u32::MAX),
        ("pto_wsp_v9", MAX_STREAMS + 1),
    ] {
        let mut cfg = Config::new(arch(name));
        cfg.policies.dispatch = Dispatch::Affinity;
        cfg.policies.streams = Some(Streams(n));
        assert_eq!(Runtime::new(cfg).is_ok(), n <= MAX_STREAMS, "{name} {n}");
    }
    assert!(Builder::new(8, 64, MAX_STREAMS as usize + 1).is_err());
    for (n, ok) in [
        (MAX_STREAMS, true),
        (MAX_STREAMS + 1, false),
        (u32::MAX, false),
    ] {
        let mut cfg = Config::new(arch("pto_wsp_v9"));
        cfg.policies.dispatch = Dispatch::RoundRobin(n);
        assert_eq!(Runtime::new(cfg).is_ok(), ok, "{n}");
    }
    // On an event-timed model a round robin goes round the cores it has.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.policies.dispatch = Dispatch::RoundRobin(u32::MAX);
    assert!(Runtime::new(cfg).is_ok());
    // A model with no cube cores runs cube kernels on the cores it has.
    let mut a = arch("ascend910b");
    a.cores.remove(&CoreClass::Cube);
    a.matmul_class = CoreClass::Cube;
    let mut rt = Runtime::new(Config::new(a)).unwrap();
    let k = rt.register_kernel("mm", CoreClass::Cube, noop());
    let x = rt.add_tensor(4, &[4]).unwrap();
    rt.submit(&task(k, &[0], &[arg(x, &[0], &[4], Direction::Out)], 10))
        .unwrap();
    rt.finish().unwrap();
}

#[test]
fn a_channel_latency_past_every_limit_stops_the_run() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4]).unwrap();
    rt.submit(&task(k, &[0], &[arg(x, &[0], &[4], Direction::Out)], 1000))
        .unwrap();
    rt.wait_all().unwrap();
    let c = rt.add_channel("slow", 1, Some(u64::MAX));
    let r = rt.run_processes(vec![
        script("p", vec![c], vec![send(c, 1)]),
        script("q", vec![], vec![Step::Recv { ch: c }]),
    ]);
    assert!(matches!(r, Err(RuntimeError::Limit { .. })), "{r:?}");
}

#[test]
fn dot_labels_are_escaped() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("say \"hi\"\\", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4]).unwrap();
    rt.submit(&task(k, &[0], &[arg(x, &[0], &[4], Direction::Out)], 10))
        .unwrap();
    rt.finish().unwrap();
    assert!(
        rt.dot().contains(r#"[label="say \"hi\"\\[0]"]"#),
        "{}",
        rt.dot()
    );
}

#[test]
fn a_one_index_region_with_a_stride_below_one_is_refused() {
    let mut rt = Runtime::new(Config::new(arch("ascend910b"))).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4, 4]).unwrap();
    // The first region sets a grid of 1×1 cells.
    rt.submit(&task(
        k,
        &[0],
        &[arg(x, &[0, 0], &[1, 1], Direction::Out)],
        10,
    ))
    .unwrap();
    for s in [0, -7] {
        let mut a = arg(x, &[1, 1], &[1, 1], Direction::Out);
        a.region.strides[0] = s;
        assert!(rt.submit(&task(k, &[1], &[a], 10)).is_err(), "stride {s}");
    }
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

#[test]
fn a_rendezvous_sender_waits_until_its_token_is_received() {
    // A token sent after a task is sent when the task completes: through a rendezvous the
    // producer cannot submit its next task before then; through a channel of depth 1 it can.
    let starts = |depth: u32| {
        let mut cfg = Config::new(arch("ascend910b"));
        cfg.record = true;
        let mut rt = Runtime::new(cfg).unwrap();
        let k = rt.register_kernel("cp", CoreClass::Vector, noop());
        let x = rt.add_tensor(4, &[3, 8]).unwrap();
        let c = rt.add_channel("c", depth, None);
        rt.run_processes(vec![
            ProcSpec {
                name: "p".into(),
                body: Box::new(Loader {
                    out: c,
                    k,
                    x,
                    i: 0,
                    n: 3,
                }),
                produces: vec![c],
            },
            script("q", vec![], vec![Step::Recv { ch: c }; 4]),
        ])
        .unwrap();
        rt.finish().unwrap();
        task_starts(&rt)
    };
    let (rendezvous, buffered) = (starts(0), starts(1));
    assert_eq!(buffered[..2], [0, 0], "{buffered:?}");
    // Each of the loader's tasks takes 100 cycles.
    assert!(rendezvous[1] > rendezvous[0] + 100, "{rendezvous:?}");
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
