//! Kernels on the host: results and cycles do not depend on the threads, kernels run in a
//! dependency order (at submission, at dispatch or on the pool), see their arguments as
//! submitted, and the failure reported is the earliest failing task's.

use super::{add_one_kernel, arch, arg, late_writer, noop, task};
use crate::*;
use std::sync::{Arc, Mutex};

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
