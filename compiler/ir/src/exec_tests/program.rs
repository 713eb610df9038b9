//! The Program IR as data: JSON versions and round trips of every construct, validation,
//! the choice of what to run, and the capability keys of directives.

use super::*;

#[test]
fn program_json_rejects_other_versions() {
    let mut p = Program::new();
    p.version = 99;
    let e = Program::from_json(&p.to_json()).unwrap_err();
    assert!(e.contains("unsupported Program IR version 99"), "{e}");
    let e = Program::from_json("{\"kernels\": []}").unwrap_err();
    assert!(e.contains("no numeric `version`"), "{e}");
}

#[test]
fn every_ir_construct_round_trips_through_json_and_validates() {
    let mut p = csp_program(2, 4);
    p.source = Some("examples/csp.wsp".into());
    p.params.push(ProgParam {
        name: "bs".into(),
        dtype: DType::U32,
        default: ScalarValue::UInt(4),
    });
    p.params.push(ProgParam {
        name: "eps".into(),
        dtype: F32,
        default: ScalarValue::Float(f64::NAN),
    });
    let lens = tensor(
        &mut p,
        "lens",
        TensorKind::Input,
        DType::I32,
        &[4],
        Some(Init::Load {
            path: "lens.npy".into(),
        }),
    );
    tensor(
        &mut p,
        "R",
        TensorKind::Input,
        DType::Bf16,
        &[4],
        Some(Init::Random { seed: 3 }),
    );
    tensor(
        &mut p,
        "O1",
        TensorKind::Scratch,
        DType::F16,
        &[4],
        Some(Init::Ones),
    );
    tensor(
        &mut p,
        "Z",
        TensorKind::Scratch,
        DType::F16,
        &[4],
        Some(Init::Zeros),
    );
    let m = tensor(
        &mut p,
        "M",
        TensorKind::Scratch,
        F32,
        &[4],
        Some(Init::Full {
            value: ScalarValue::Float(f64::NEG_INFINITY),
        }),
    );
    p.tensors[m.index()].shape = vec![Affine::param(ProgParamId(0))];
    let dynb = axis(
        &mut p,
        "batch",
        AxisKind::DenseDyn {
            size: Expr::Param {
                param: ProgParamId(0),
            },
        },
    );
    axis(
        &mut p,
        "tokens",
        AxisKind::Ragged {
            outer: dynb,
            lengths: lens,
            per: None,
        },
    );
    axis(
        &mut p,
        "routing",
        AxisKind::Sparse {
            outer: dynb,
            indptr: lens,
            indices: lens,
        },
    );
    p.workloads.push(Workload {
        name: "both".into(),
        vars: vec![],
        body: WorkloadBody::Combine {
            parts: vec![WorkloadId(0)],
        },
    });
    p.schedules.push(Schedule {
        name: "main".into(),
        workload: WorkloadId(0),
        directives: vec![
            Directive::Policy {
                policy: Policy::RoundRobin,
                args: vec![DirValue::Int { value: 4 }],
            },
            Directive::StreamBy {
                key: DirValue::Binary {
                    op: ExprOp::Rem,
                    lhs: Box::new(DirValue::Axis { axis: dynb }),
                    rhs: Box::new(DirValue::Int { value: 4 }),
                },
            },
            Directive::Policy {
                policy: Policy::Priority,
                args: vec![DirValue::Call {
                    name: "max".into(),
                    args: vec![DirArg {
                        name: Some("key".into()),
                        value: DirValue::Float { value: 0.5 },
                    }],
                }],
            },
            Directive::Target {
                arch: "ascend910b".into(),
            },
            Directive::TaskWindow {
                size: 64,
                mode: Default::default(),
            },
        ],
    });
    p.expects.push(Expect::Close {
        actual: TensorId(3),
        expected: ExpectData::Init {
            init: Init::Load {
                path: "y.npy".into(),
            },
        },
        rtol: 1e-5,
        atol: 1e-6,
    });
    p.expects.push(Expect::Stat {
        stat: Stat::TotalCycles,
        op: CmpOp::Eq,
        value: 114688,
    });
    assert_eq!(crate::check::validate_program(&p), Vec::<String>::new());
    let json = p.to_json();
    let back = Program::from_json(&json).unwrap();
    // ScalarValue compares floats by bits, so the NaN default round-trips as equal.
    assert_eq!(back, p);
    assert!(json.contains("\"nan\"") && json.contains("\"-inf\""));

    // Broken references are reported, not panics.
    let mut bad = p.clone();
    if let WorkloadBody::Connect { processes } = &mut bad.workloads[0].body {
        processes.push(ConnectItem {
            process: ProcessId(9),
            replicas: 1,
        });
    }
    bad.processes[0].vars.clear();
    bad.axes[1].kind = AxisKind::Ragged {
        outer: AxisId(7),
        lengths: TensorId(99),
        per: None,
    };
    let errs = crate::check::validate_program(&bad);
    assert!(
        errs.iter().any(|e| e.contains("process #9 does not exist")),
        "{errs:?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("loop variable #0 is outside")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("axis #7 does not exist")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("tensor #99 does not exist")),
        "{errs:?}"
    );
}

#[test]
fn select_run_picks_main_the_only_schedule_or_the_only_workload() {
    let mut p = csp_program(1, 2);
    assert_eq!(p.select_run(None).unwrap().1, WorkloadId(0));
    assert!(p.select_run(None).unwrap().0.is_none());
    p.schedules.push(Schedule {
        name: "fast".into(),
        workload: WorkloadId(0),
        directives: vec![],
    });
    assert_eq!(
        p.select_run(None).unwrap().0.map(|s| s.name.as_str()),
        Some("fast")
    );
    p.schedules.push(Schedule {
        name: "slow".into(),
        workload: WorkloadId(0),
        directives: vec![],
    });
    let e = p.select_run(None).unwrap_err();
    assert!(e.contains("several schedules (fast, slow)"), "{e}");
    assert_eq!(
        p.select_run(Some("slow"))
            .unwrap()
            .0
            .map(|s| s.name.as_str()),
        Some("slow")
    );
    let e = p.select_run(Some("x")).unwrap_err();
    assert!(e.contains("no schedule `x` (schedules: fast, slow)"), "{e}");
    p.schedules.push(Schedule {
        name: "main".into(),
        workload: WorkloadId(0),
        directives: vec![],
    });
    assert_eq!(
        p.select_run(None).unwrap().0.map(|s| s.name.as_str()),
        Some("main")
    );
}

#[test]
fn every_directive_has_its_capability_key() {
    use wsp_vocab::schedule::Directive as D;
    let key = DirValue::Int { value: 1 };
    for d in [
        Directive::TaskWindow {
            size: 1,
            mode: Default::default(),
        },
        Directive::Streams { count: 1 },
        Directive::StreamBy { key },
        Directive::Target { arch: "x".into() },
    ] {
        assert_eq!(Some(d.capability_key()), d.kind().capability_key());
    }
    for p in Policy::ALL {
        let d = Directive::Policy {
            policy: p,
            args: vec![],
        };
        assert_eq!(d.capability_key(), p.capability_key());
        assert_ne!(d.kind(), D::Target);
    }
}
