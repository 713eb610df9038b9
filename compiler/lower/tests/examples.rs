//! Lowers the examples and runs the reference interpreter against their golden data.

use std::path::Path;

fn lower_example(name: &str) -> wsp_ir::Program {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    let path = dir.join(format!("{name}.wsp"));
    let text = std::fs::read_to_string(&path).expect("example exists");
    let mut ws = wsp_core::Workspace::new();
    let key = path.to_string_lossy().to_string();
    ws.set_file(&key, text);
    match wsp_lower::lower(&ws, &key) {
        Ok(p) => p,
        Err(d) => panic!("{name} did not lower: {d:#?}"),
    }
}

#[test]
fn validated_matmul_lowers_to_valid_ir() {
    let p = lower_example("validated_matmul");
    assert!(wsp_ir::check::validate_program(&p).is_empty());
    assert_eq!(p.kernels.len(), 1);
    assert_eq!(p.tensors.len(), 3);
    assert_eq!(p.schedules[0].name, "main");
    assert_eq!(p.expects.len(), 1);
}

#[test]
fn a_program_with_errors_returns_its_check_errors() {
    let mut ws = wsp_core::Workspace::new();
    ws.set_file("bad.wsp", "const N = M\n".into());
    let errs = wsp_lower::lower(&ws, "bad.wsp").expect_err("has errors");
    assert!(
        errs.iter().all(|d| d.code != wsp_lower::UNSUPPORTED),
        "{errs:?}"
    );
}

/// The examples that carry input data and NumPy goldens (`gen.py` next to each program).
const WITH_DATA: [&str; 14] = [
    "validated_matmul",
    "tensor_data_add",
    "tensor_data_square",
    "attention",
    "bgemm",
    "softmax",
    "e2e_rmsnorm",
    "llama",
    "deepseek_v3",
    "flashinfer_decode",
    "lightning_indexer",
    "flash_attention",
    "moe_routing",
    "varlen_attention",
];

/// The examples with data, lowered and run by the reference interpreters: every `expect`
/// (outputs against the NumPy goldens) holds.
#[test]
fn examples_with_data_match_their_goldens() {
    for name in WITH_DATA {
        let p = lower_example(name);
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples")
            .join(name);
        let run = wsp_ir::data::run_reference(&p, None, &[], &[], &dir)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!run.expects.is_empty(), "{name} has no expect");
        for e in &run.expects {
            assert!(
                e.failure.is_none(),
                "{name}: {} failed: {:?}",
                e.description,
                e.failure
            );
        }
        assert!(!run.outcome.tasks.is_empty(), "{name} ran no task");
    }
}

#[test]
fn every_example_lowers() {
    for name in WITH_DATA {
        let p = lower_example(name);
        assert!(wsp_ir::check::validate_program(&p).is_empty(), "{name}");
    }
}

/// PTO-WSP v9's clock (its cpu_sim scheduler), driven by the reference run's task records.
///
/// v9 issues tasks in emission order: a task is ready when the program structure says so
/// (`P.seq` iterations and `sequential` parts wait for the previous one; `P` iterations,
/// `combine` parts and the statements of a block all start when their parent does; data
/// edges are ignored), the issue time never goes back, a task starts when both the issue time
/// and its worker allow, and at most `task_window` tasks are in flight. Workers are chosen by
/// a round-robin counter in emission order, or by affinity on the task's first coordinate.
/// The total is the end of the last task.
struct V9Clock<'a> {
    program: &'a wsp_ir::Program,
    tasks: std::slice::Iter<'a, wsp_ir::exec::TaskRecord>,
    costs: wsp_ir::cost::V9CostCache,
    affinity: bool,
    window: usize,
    issue: u64,
    emitted: u64,
    available: Vec<u64>,
    in_flight: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
}

impl V9Clock<'_> {
    fn advance_to(&mut self, t: u64) {
        self.issue = self.issue.max(t);
        while self.in_flight.peek().is_some_and(|r| r.0 <= self.issue) {
            self.in_flight.pop();
        }
    }

    fn task(&mut self, kernel: wsp_ir::KernelId, ready: u64) -> u64 {
        let rec = self
            .tasks
            .next()
            .expect("the run recorded fewer tasks than the program");
        assert_eq!(rec.kernel, kernel, "task records follow program order");
        let cycles = self
            .costs
            .cycles(&self.program.kernels, rec.kernel.index(), &rec.extents)
            .expect("v9 cost");
        let n = self.available.len() as u64;
        let w = if self.affinity {
            rec.coords
                .first()
                .copied()
                .unwrap_or(0)
                .rem_euclid(n as i64) as usize
        } else {
            (self.emitted % n) as usize
        };
        self.emitted += 1;
        self.advance_to(ready);
        while self.in_flight.len() >= self.window {
            let next = self.in_flight.peek().map_or(0, |r| r.0);
            self.advance_to(next);
        }
        let end = self.available[w].max(self.issue) + cycles;
        self.available[w] = end;
        self.in_flight.push(std::cmp::Reverse(end));
        end
    }

    fn workload(&mut self, id: wsp_ir::WorkloadId, ready: u64) -> u64 {
        use wsp_ir::WorkloadBody;
        match &self.program.workloads[id.index()].body {
            WorkloadBody::Block { stmts } => self.block(stmts, ready),
            WorkloadBody::Sequential { parts } => {
                parts.iter().fold(ready, |t, w| self.workload(*w, t))
            }
            WorkloadBody::Combine { parts } => parts
                .iter()
                .fold(ready, |done, w| done.max(self.workload(*w, ready))),
            WorkloadBody::Connect { .. } => panic!("v9 clock: connect(..) is not modelled here"),
        }
    }

    /// A block: every statement starts when the block does (v9 has no data edges).
    fn block(&mut self, stmts: &[wsp_ir::WStmt], ready: u64) -> u64 {
        stmts
            .iter()
            .fold(ready, |done, s| done.max(self.stmt(s, ready)))
    }

    fn stmt(&mut self, s: &wsp_ir::WStmt, ready: u64) -> u64 {
        use wsp_ir::{AxisKind, Iter, LoopKind, WStmt};
        match s {
            WStmt::Call(c) => self.task(c.kernel, ready),
            WStmt::Run { workload } => self.workload(*workload, ready),
            WStmt::For {
                kind, iters, body, ..
            } => {
                let n: u64 = iters
                    .iter()
                    .map(|it| match it {
                        Iter::Axis { axis } => match self.program.axes[axis.index()].kind {
                            AxisKind::Dense { size } => size,
                            ref other => panic!("v9 clock: axis {other:?} is not modelled here"),
                        },
                        other => panic!("v9 clock: iterator {other:?} is not modelled here"),
                    })
                    .product();
                let mut done = ready;
                for _ in 0..n {
                    done = match kind {
                        LoopKind::Sequential => self.block(body, done),
                        _ => done.max(self.block(body, ready)),
                    };
                }
                done
            }
            WStmt::When {
                branches,
                otherwise,
            } => {
                // The branch taken is the one whose tasks the run recorded next.
                let next = self.tasks.clone().next().map(|r| r.kernel);
                let first_call = |b: &[WStmt]| match b.first() {
                    Some(WStmt::Call(c)) => Some(c.kernel),
                    _ => None,
                };
                let body = branches
                    .iter()
                    .map(|b| b.body.as_slice())
                    .chain(std::iter::once(otherwise.as_slice()))
                    .find(|b| first_call(b) == next)
                    .expect("v9 clock: a `when` branch must start with a task call");
                self.block(body, ready)
            }
            other => panic!("v9 clock: {other:?} is not modelled here"),
        }
    }
}

/// The schedule's dispatch policy (affinity or round-robin) and task window.
fn v9_schedule(p: &wsp_ir::Program, schedule: &str) -> (bool, usize) {
    use wsp_ir::DirValue;
    let s = p
        .schedules
        .iter()
        .find(|s| s.name == schedule)
        .unwrap_or_else(|| panic!("no schedule `{schedule}`"));
    let mut affinity = false;
    let mut window = usize::MAX;
    for d in &s.directives {
        match (d.name.as_str(), d.args.first().map(|a| &a.value)) {
            ("dispatch", Some(DirValue::Call { name, .. })) => {
                assert!(
                    name == "round_robin" || name == "affinity",
                    "v9 clock: dispatch `{name}` is not modelled here"
                );
                affinity = name == "affinity";
            }
            ("task_window", Some(DirValue::Int { value })) => window = *value as usize,
            _ => {}
        }
    }
    (affinity, window)
}

/// Every example in `examples/manifest.toml` reproduces its PTO-WSP v9 `total_cycles`: the
/// reference run's tasks, priced by `wsp_ir::cost::v9_cycles`, on v9's clock over 4 workers.
#[test]
fn examples_reproduce_their_v9_total_cycles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let text = std::fs::read_to_string(root.join("manifest.toml")).expect("manifest");
    let manifest: toml::Table = text.parse().expect("manifest.toml parses");
    assert!(
        manifest
            .values()
            .filter(|e| e.get("v9_total_cycles").is_some())
            .count()
            >= 11,
        "manifest lists the v9 examples"
    );
    let mut wrong = Vec::new();
    for (name, entry) in &manifest {
        // Entries beyond v9 (no published figure) are not on v9's clock.
        if entry.get("v9_total_cycles").is_none() {
            continue;
        }
        let program = entry["program"].as_str().expect("program path");
        let schedule = entry["schedule"].as_str().expect("schedule name");
        let expected = entry["v9_total_cycles"]
            .as_integer()
            .expect("v9_total_cycles") as u64;
        assert_eq!(
            program,
            format!("{name}/{name}.wsp"),
            "{name}: program path"
        );
        let p = lower_example(name);
        let dir = root.join(name);
        let run = wsp_ir::data::run_reference(&p, Some(schedule), &[], &[], &dir)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let (affinity, window) = v9_schedule(&p, schedule);
        let wid = p
            .schedules
            .iter()
            .find(|s| s.name == schedule)
            .map(|s| s.workload)
            .expect("schedule");
        let mut clock = V9Clock {
            program: &p,
            tasks: run.outcome.tasks.iter(),
            costs: wsp_ir::cost::V9CostCache::new(),
            affinity,
            window,
            issue: 0,
            emitted: 0,
            available: vec![0; 4],
            in_flight: Default::default(),
        };
        let total = clock.workload(wid, 0);
        assert!(
            clock.tasks.next().is_none(),
            "{name}: every recorded task is on the clock"
        );
        if total != expected {
            wrong.push(format!(
                "{name}: v9 total_cycles {total}, manifest {expected}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
