//! Arbitrary workloads over a fixed set of tensors, axes and kernels never panic the
//! workload interpreter: they run or fail with a message.
use super::*;
use proptest::prelude::*;

fn affine() -> impl Strategy<Value = Affine> {
    (-2i64..5, proptest::option::of((0u32..3, -1i64..3))).prop_map(|(c, t)| Affine {
        constant: c,
        terms: t
            .map(|(v, k)| (Sym::Var(LoopVar(v)), k))
            .into_iter()
            .collect(),
    })
}

fn view() -> impl Strategy<Value = TaskArg> {
    (
        0u32..3,
        proptest::collection::vec(
            prop_oneof![
                affine().prop_map(|at| ViewDim::Index { at }),
                (affine(), affine()).prop_map(|(start, end)| ViewDim::Slice { start, end }),
                Just(ViewDim::Full),
            ],
            0..4,
        ),
    )
        .prop_map(|(t, dims)| {
            TaskArg::View(View {
                tensor: TensorId(t),
                dims,
            })
        })
}

fn expr() -> impl Strategy<Value = Expr> {
    prop_oneof![
        (-2i64..6).prop_map(|i| Expr::Const {
            value: ScalarValue::Int(i)
        }),
        (0u32..3).prop_map(|v| Expr::Var { var: LoopVar(v) }),
        (0u32..2).prop_map(|p| Expr::Param {
            param: ProgParamId(p)
        }),
        (0u32..3, -1i64..5).prop_map(|(v, c)| Expr::Binary {
            op: ExprOp::Lt,
            lhs: Box::new(Expr::Elem {
                tensor: TensorId(1),
                index: vec![Expr::Var { var: LoopVar(v) }],
            }),
            rhs: Box::new(Expr::Const {
                value: ScalarValue::Int(c)
            }),
        }),
    ]
}

fn cond() -> impl Strategy<Value = Expr> {
    prop_oneof![
        3 => (0u32..3, -1i64..5).prop_map(|(v, c)| Expr::Binary {
            op: ExprOp::Lt,
            lhs: Box::new(Expr::Elem {
                tensor: TensorId(1),
                index: vec![Expr::Var { var: LoopVar(v) }],
            }),
            rhs: Box::new(Expr::Const { value: ScalarValue::Int(c) }),
        }),
        1 => expr(),
    ]
}

fn stmt() -> impl Strategy<Value = WStmt> {
    let call = (0u32..2, view(), view(), expr()).prop_map(|(k, a, b, c)| {
        WStmt::Call(TaskCall {
            kernel: KernelId(k),
            coords: vec![c],
            args: vec![a, b],
            at: None,
        })
    });
    call.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (
                proptest::collection::vec(0u32..3, 1..3),
                proptest::collection::vec(
                    prop_oneof![
                        (0u32..5).prop_map(|a| Iter::Axis { axis: AxisId(a) }),
                        (2u32..5, affine()).prop_map(|(a, row)| Iter::Row {
                            axis: AxisId(a),
                            row
                        }),
                        (expr(), expr()).prop_map(|(start, end)| Iter::Range { start, end }),
                    ],
                    1..3
                ),
                proptest::collection::vec(inner.clone(), 0..3),
            )
                .prop_map(|(vars, iters, body)| WStmt::For {
                    kind: LoopKind::Parallel,
                    vars: vars.into_iter().map(LoopVar).collect(),
                    iters,
                    body,
                }),
            (
                cond(),
                proptest::collection::vec(inner.clone(), 0..2),
                proptest::collection::vec(inner, 0..2)
            )
                .prop_map(|(cond, body, otherwise)| WStmt::When {
                    branches: vec![WhenBranch { cond, body }],
                    otherwise,
                }),
        ]
    })
}

fn base() -> Program {
    let mut p = Program::new();
    p.params.push(ProgParam {
        name: "n".into(),
        dtype: DType::I32,
        default: ScalarValue::Int(3),
    });
    p.params.push(ProgParam {
        name: "f".into(),
        dtype: F32,
        default: ScalarValue::Float(0.5),
    });
    p.kernels.push(scale_kernel("partial", 2, 2, 2.0, true));
    p.kernels.push(scale_kernel("full", 1, 2, 3.0, false));
    tensor(&mut p, "T0", TensorKind::Scratch, F32, &[3, 4], None);
    tensor(
        &mut p,
        "T1",
        TensorKind::Input,
        DType::I32,
        &[4],
        ints(&[0, 2, 1, 3]),
    );
    tensor(&mut p, "T2", TensorKind::Scratch, F32, &[2, 2, 2], None);
    let d = axis(&mut p, "d", AxisKind::Dense { size: 3 });
    axis(
        &mut p,
        "dd",
        AxisKind::DenseDyn {
            size: Expr::Param {
                param: ProgParamId(0),
            },
        },
    );
    axis(
        &mut p,
        "r",
        AxisKind::Ragged {
            outer: d,
            lengths: TensorId(1),
            per: None,
        },
    );
    axis(
        &mut p,
        "s",
        AxisKind::Sparse {
            outer: d,
            indptr: TensorId(1),
            indices: TensorId(1),
        },
    );
    axis(
        &mut p,
        "bad",
        AxisKind::Ragged {
            outer: AxisId(2),
            lengths: TensorId(0),
            per: None,
        },
    );
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn arbitrary_workloads_never_panic(stmts in proptest::collection::vec(stmt(), 1..4)) {
        let mut p = base();
        p.workloads.push(Workload {
            name: "w".into(),
            vars: vec!["a".into(), "b".into(), "c".into()],
            body: WorkloadBody::Block {
                stmts: vec![WStmt::For {
                    kind: LoopKind::Plain,
                    vars: vec![LoopVar(0), LoopVar(1), LoopVar(2)],
                    iters: (0..3)
                        .map(|_| Iter::Range {
                            start: Expr::Const { value: ScalarValue::Int(0) },
                            end: Expr::Const { value: ScalarValue::Int(2) },
                        })
                        .collect(),
                    body: stmts,
                }],
            },
        });
        let _ = crate::check::validate_program(&p);
        let params = resolve_params(&p, &[]).unwrap();
        let mut ts = init_tensors(&p, &params, Path::new("."), &[]).unwrap();
        let _ = run_workload(&p, WorkloadId(0), &params, &mut ts);
    }
}
