//! Whole runs: sequential and nested workloads, another kernel executor in place of the
//! interpreter, and a reference run that checks a program's expects.

use super::*;

#[test]
fn sequential_and_nested_workloads_run_in_order() {
    let mut p = Program::new();
    p.kernels.push(scale_kernel("double", 1, 1, 2.0, false));
    let x = tensor(
        &mut p,
        "X",
        TensorKind::Input,
        F32,
        &[1, 1],
        literal(&[3.0]),
    );
    let call = WStmt::Call(TaskCall {
        kernel: KernelId(0),
        coords: vec![],
        args: vec![view(x, vec![]), view(x, vec![])],
        at: None,
    });
    let a = block(&mut p, "a", &[], vec![call.clone()]);
    let b = block(&mut p, "b", &[], vec![call, WStmt::Run { workload: a }]);
    p.workloads.push(Workload {
        name: "both".into(),
        vars: vec![],
        body: WorkloadBody::Sequential { parts: vec![a, b] },
    });
    let (ts, out) = run(&p, WorkloadId(2)).unwrap();
    assert_eq!(ts[0].to_f64(), vec![24.0]);
    assert_eq!(out.tasks.len(), 3);
    // A workload that runs itself is an error, not a stack overflow.
    p.workloads.push(Workload {
        name: "loop".into(),
        vars: vec![],
        body: WorkloadBody::Sequential {
            parts: vec![WorkloadId(3)],
        },
    });
    let e = run(&p, WorkloadId(3)).unwrap_err();
    assert!(e.message.contains("nest more than 64"), "{}", e.message);
}

#[test]
fn another_kernel_executor_can_replace_the_interpreter() {
    let p = csp_program(1, 3);
    let params = resolve_params(&p, &[]).unwrap();
    let mut ts = init_tensors(&p, &params, Path::new("."), &[]).unwrap();
    let mut calls = Vec::new();
    let mut exec = |id: KernelId, k: &Kernel, args: &mut [crate::interp::KernelArg]| {
        calls.push(id.0);
        crate::interp::run_kernel(k, args).map_err(|e| e.message)
    };
    crate::exec::run_workload_with(&p, WorkloadId(0), &params, &mut ts, &mut exec).unwrap();
    assert_eq!(calls.len(), 9);
    assert_eq!(ts[3].to_f64(), vec![0.0, 1.0, 4.0, 9.0, 16.0, 25.0]);
    let mut failing = |_: KernelId, k: &Kernel, _: &mut [crate::interp::KernelArg]| {
        Err(format!("{} is not compiled", k.name))
    };
    let e = crate::exec::run_workload_with(&p, WorkloadId(0), &params, &mut ts, &mut failing)
        .unwrap_err();
    assert_eq!(e.message, "task load_tile[0]: load_tile is not compiled");
}

#[test]
fn reference_run_of_a_whole_program_checks_expects() {
    let mut p = csp_program(2, 3);
    p.expects.push(Expect::Close {
        actual: TensorId(3),
        expected: ExpectData::Init {
            init: Init::Literal {
                values: [0.0, 1.0, 4.0, 9.0, 16.0, 25.0]
                    .iter()
                    .map(|v| ScalarValue::Float(*v))
                    .collect(),
            },
        },
        rtol: 0.0,
        atol: 0.0,
    });
    p.expects.push(Expect::Stat {
        stat: Stat::Tasks,
        op: CmpOp::Eq,
        value: 9,
    });
    p.expects.push(Expect::Stat {
        stat: Stat::TotalCycles,
        op: CmpOp::Eq,
        value: 1,
    });
    let r = crate::data::run_reference(&p, None, &[], &[], Path::new(".")).unwrap();
    assert_eq!(r.outcome.tasks.len(), 9);
    assert_eq!(r.expects[0].failure, None);
    assert_eq!(r.expects[1].failure, None);
    assert_eq!(
        r.expects[2].failure.as_deref(),
        Some("total_cycles was not measured in this run")
    );
    let e = crate::data::run_reference(&p, Some("nope"), &[], &[], Path::new(".")).unwrap_err();
    assert!(e.contains("no schedule `nope`"), "{e}");
}
