//! Task generation: grids of tiles in program order, partial tail tiles, `when` on data an
//! earlier task wrote, Ragged and Sparse rows, and counted loops over dependent levels.

use super::*;

#[test]
fn grid_of_tiles_adds_and_records_tasks_in_program_order() {
    // C[b, 2t..2t+2, :] = A + B for b in P(batch), t in P(tiles); A, B f32[2, 4, 3].
    let mut p = Program::new();
    p.kernels.push(add_kernel(2, 3));
    let av_: Vec<f64> = (0..24).map(f64::from).collect();
    let bv: Vec<f64> = (0..24).map(|i| f64::from(i) * 10.0).collect();
    let a = tensor(
        &mut p,
        "A",
        TensorKind::Input,
        F32,
        &[2, 4, 3],
        literal(&av_),
    );
    let b = tensor(
        &mut p,
        "B",
        TensorKind::Input,
        F32,
        &[2, 4, 3],
        literal(&bv),
    );
    let c = tensor(&mut p, "C", TensorKind::Output, F32, &[2, 4, 3], None);
    let batch = axis(&mut p, "batch", AxisKind::Dense { size: 2 });
    let tiles = axis(&mut p, "tiles", AxisKind::Dense { size: 2 });
    let rows = |t: u32| ViewDim::Slice {
        start: Affine {
            constant: 0,
            terms: vec![(Sym::Var(LoopVar(t)), 2)],
        },
        end: Affine {
            constant: 2,
            terms: vec![(Sym::Var(LoopVar(t)), 2)],
        },
    };
    let call = WStmt::Call(TaskCall {
        kernel: KernelId(0),
        coords: vec![var(0), var(1)],
        args: vec![
            view(a, vec![idx(av(0)), rows(1)]),
            view(b, vec![idx(av(0)), rows(1)]),
            view(c, vec![idx(av(0)), rows(1), ViewDim::Full]),
        ],
        at: None,
    });
    let w = block(
        &mut p,
        "w",
        &["b", "t"],
        vec![WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0), LoopVar(1)],
            iters: vec![Iter::Axis { axis: batch }, Iter::Axis { axis: tiles }],
            body: vec![call],
        }],
    );
    let (ts, out) = run(&p, w).unwrap();
    let want: Vec<f64> = (0..24).map(|i| f64::from(i) * 11.0).collect();
    assert_eq!(ts[2].to_f64(), want);
    let coords: Vec<_> = out.tasks.iter().map(|t| t.coords.clone()).collect();
    assert_eq!(coords, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
    assert_eq!(out.tasks[0].extents, vec![Some([2, 3]); 3]);
    // The IR survives a JSON round trip and runs the same.
    let back = Program::from_json(&p.to_json()).unwrap();
    assert_eq!(back, p);
}

#[test]
fn partial_tail_tiles_get_their_valid_extent_and_full_tiles_are_checked() {
    // X f32[5, 2]; for i in 0..3 { scale[i](x: X[2i..2i+2, :], out: Y[2i..2i+2, :]) }.
    let mut p = Program::new();
    p.kernels.push(scale_kernel("scale", 2, 2, 2.0, true));
    let xv: Vec<f64> = (1..=10).map(f64::from).collect();
    let x = tensor(&mut p, "X", TensorKind::Input, F32, &[5, 2], literal(&xv));
    let y = tensor(&mut p, "Y", TensorKind::Output, F32, &[5, 2], None);
    let rows = ViewDim::Slice {
        start: Affine {
            constant: 0,
            terms: vec![(Sym::Var(LoopVar(0)), 2)],
        },
        end: Affine {
            constant: 2,
            terms: vec![(Sym::Var(LoopVar(0)), 2)],
        },
    };
    let body = |k: u32| {
        vec![WStmt::For {
            kind: LoopKind::Plain,
            vars: vec![LoopVar(0)],
            iters: vec![Iter::Range {
                start: Expr::Const {
                    value: ScalarValue::Int(0),
                },
                end: Expr::Const {
                    value: ScalarValue::Int(3),
                },
            }],
            body: vec![WStmt::Call(TaskCall {
                kernel: KernelId(k),
                coords: vec![var(0)],
                args: vec![view(x, vec![rows.clone()]), view(y, vec![rows.clone()])],
                at: None,
            })],
        }]
    };
    let w = block(&mut p, "w", &["i"], body(0));
    let (ts, out) = run(&p, w).unwrap();
    assert_eq!(
        ts[1].to_f64(),
        xv.iter().map(|v| v * 2.0).collect::<Vec<_>>()
    );
    assert_eq!(out.tasks[2].extents, vec![Some([1, 2]), Some([1, 2])]);

    // The same with a non-partial kernel: the tail view is out of range, an error naming the
    // task, the view and the tensor.
    p.kernels.push(scale_kernel("full_scale", 2, 2, 2.0, false));
    let w2 = block(&mut p, "w2", &["i"], body(1));
    let e = run(&p, w2).unwrap_err();
    assert_eq!(e.code, "E0810");
    assert!(
        e.message.contains("task full_scale[2]: view `x: X[4..6, 0..2]` is out of range in dimension 0 of `X` (shape [5, 2])"),
        "{}",
        e.message
    );
}

#[test]
fn when_branches_on_tensor_values_written_by_an_earlier_task() {
    // flag[b] is written by a task, then `when flag[b] > 5 { big } else { small }`.
    let mut p = Program::new();
    p.kernels.push(scale_kernel("double", 1, 1, 2.0, false));
    p.kernels.push(scale_kernel("big", 1, 1, 100.0, false));
    p.kernels.push(scale_kernel("small", 1, 1, -1.0, false));
    let src = tensor(
        &mut p,
        "S",
        TensorKind::Input,
        F32,
        &[3, 1],
        literal(&[1.0, 3.0, 5.0]),
    );
    let flag = tensor(&mut p, "F", TensorKind::Scratch, F32, &[3, 1], None);
    let out = tensor(&mut p, "O", TensorKind::Output, F32, &[3, 1], None);
    let batch = axis(&mut p, "batch", AxisKind::Dense { size: 3 });
    let call = |k: u32, a: TensorId, b: TensorId| {
        WStmt::Call(TaskCall {
            kernel: KernelId(k),
            coords: vec![var(0)],
            args: vec![view(a, vec![idx(av(0))]), view(b, vec![idx(av(0))])],
            at: None,
        })
    };
    let cond = Expr::Binary {
        op: ExprOp::Gt,
        lhs: Box::new(Expr::Elem {
            tensor: flag,
            index: vec![
                var(0),
                Expr::Const {
                    value: ScalarValue::Int(0),
                },
            ],
        }),
        rhs: Box::new(Expr::Const {
            value: ScalarValue::Float(5.0),
        }),
    };
    let w = block(
        &mut p,
        "w",
        &["b"],
        vec![WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0)],
            iters: vec![Iter::Axis { axis: batch }],
            body: vec![
                call(0, src, flag),
                WStmt::When {
                    branches: vec![WhenBranch {
                        cond,
                        body: vec![call(1, flag, out)],
                    }],
                    otherwise: vec![call(2, flag, out)],
                },
            ],
        }],
    );
    let (ts, out) = run(&p, w).unwrap();
    // flags 2, 6, 10 → small, big, big.
    assert_eq!(ts[2].to_f64(), vec![-2.0, 600.0, 1000.0]);
    let ks: Vec<u32> = out.tasks.iter().map(|t| t.kernel.0).collect();
    assert_eq!(ks, vec![0, 2, 0, 1, 0, 1]);
}

#[test]
fn ragged_and_sparse_axes_iterate_their_rows() {
    let mut p = Program::new();
    p.kernels.push(scale_kernel("k", 1, 1, 1.0, false));
    let lens = tensor(
        &mut p,
        "lens",
        TensorKind::Input,
        DType::I32,
        &[3],
        ints(&[2, 0, 3]),
    );
    let indptr = tensor(
        &mut p,
        "indptr",
        TensorKind::Input,
        DType::I32,
        &[4],
        ints(&[0, 2, 2, 3]),
    );
    let indices = tensor(
        &mut p,
        "indices",
        TensorKind::Input,
        DType::I32,
        &[3],
        ints(&[1, 3, 0]),
    );
    let x = tensor(&mut p, "X", TensorKind::Scratch, F32, &[4, 4], None);
    let batch = axis(&mut p, "batch", AxisKind::Dense { size: 3 });
    let tokens = axis(
        &mut p,
        "tokens",
        AxisKind::Ragged {
            outer: batch,
            lengths: lens,
            per: None,
        },
    );
    let routing = axis(
        &mut p,
        "routing",
        AxisKind::Sparse {
            outer: batch,
            indptr,
            indices,
        },
    );
    let call = WStmt::Call(TaskCall {
        kernel: KernelId(0),
        coords: vec![var(0), var(1)],
        args: vec![
            view(x, vec![idx(av(0)), idx(av(1))]),
            view(x, vec![idx(av(0)), idx(av(1))]),
        ],
        at: None,
    });
    let w1 = block(
        &mut p,
        "ragged",
        &["b", "t"],
        vec![WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0), LoopVar(1)],
            iters: vec![Iter::Axis { axis: tokens }],
            body: vec![call.clone()],
        }],
    );
    let w2 = block(
        &mut p,
        "sparse",
        &["b", "e"],
        vec![WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0)],
            iters: vec![Iter::Axis { axis: batch }],
            body: vec![WStmt::For {
                kind: LoopKind::Selected,
                vars: vec![LoopVar(1)],
                iters: vec![Iter::Row {
                    axis: routing,
                    row: av(0),
                }],
                body: vec![call],
            }],
        }],
    );
    let (_, out) = run(&p, w1).unwrap();
    let c: Vec<_> = out.tasks.iter().map(|t| t.coords.clone()).collect();
    assert_eq!(
        c,
        vec![vec![0, 0], vec![0, 1], vec![2, 0], vec![2, 1], vec![2, 2]]
    );
    let (_, out) = run(&p, w2).unwrap();
    let c: Vec<_> = out.tasks.iter().map(|t| t.coords.clone()).collect();
    assert_eq!(c, vec![vec![0, 1], vec![0, 3], vec![2, 0]]);
    // A bad indptr is an error, not a panic.
    p.tensors[indptr.index()].init = ints(&[0, 2, 1, 3]);
    let e = run(&p, WorkloadId(1)).unwrap_err();
    assert!(
        e.message.contains("indptr is decreasing at row 1"),
        "{}",
        e.message
    );
}

#[test]
fn counted_loops_step_like_an_odometer_over_dependent_and_empty_levels() {
    // for i, j in 0..4, 0..i { add[i, j](a: A, b: B, c: C) }: no tensor data in the bounds,
    // so the loop is counted level by level; i = 0 has no j.
    let mut p = Program::new();
    p.kernels.push(add_kernel(2, 3));
    let a = tensor(
        &mut p,
        "A",
        TensorKind::Input,
        F32,
        &[2, 3],
        literal(&[1.0; 6]),
    );
    let b = tensor(
        &mut p,
        "B",
        TensorKind::Input,
        F32,
        &[2, 3],
        literal(&[2.0; 6]),
    );
    let c = tensor(&mut p, "C", TensorKind::Output, F32, &[2, 3], None);
    let int = |v: i64| Expr::Const {
        value: ScalarValue::Int(v),
    };
    let full = |t| view(t, vec![ViewDim::Full, ViewDim::Full]);
    let call = WStmt::Call(TaskCall {
        kernel: KernelId(0),
        coords: vec![var(0), var(1)],
        args: vec![full(a), full(b), full(c)],
        at: None,
    });
    let w = block(
        &mut p,
        "w",
        &["i", "j"],
        vec![WStmt::For {
            kind: LoopKind::Parallel,
            vars: vec![LoopVar(0), LoopVar(1)],
            iters: vec![
                Iter::Range {
                    start: int(0),
                    end: int(4),
                },
                Iter::Range {
                    start: int(0),
                    end: var(0),
                },
            ],
            body: vec![call],
        }],
    );
    let (ts, out) = run(&p, w).unwrap();
    let coords: Vec<_> = out.tasks.iter().map(|t| t.coords.clone()).collect();
    let want = [[1, 0], [2, 0], [2, 1], [3, 0], [3, 1], [3, 2]];
    assert_eq!(coords, want.map(|c| c.to_vec()));
    assert_eq!(ts[2].to_f64(), vec![3.0; 6]);
}
