//! Errors and the cache: out-of-range regions, extents rejected before running, cache hits on
//! identical kernels, unsupported kernels.

use crate::common::{args_for, f32t, kernel2, tt};
use wsp_ir::interp::{run_kernel, KernelArg};
use wsp_ir::kernel::*;
use wsp_ir::typing::KernelBuilder;
use wsp_ir::DType;
use wsp_jit::Jit;

#[test]
fn out_of_range_region_is_an_error_naming_the_view() {
    let mut b = KernelBuilder::new("oob");
    let x = b.tile_param("x", Direction::In, f32t(2, 4));
    let o = b.tile_param("out", Direction::Out, f32t(4, 4));
    let xv = b.load(x).unwrap();
    let i = b.begin_for(0, 4);
    b.stmt(Stmt::Store {
        param: o,
        region: Some(Region {
            row_start: KIndex {
                constant: 0,
                terms: vec![(i, 1)],
            },
            rows: 2,
            col_start: KIndex::constant(0),
            cols: 4,
        }),
        value: xv,
    });
    b.end_for().unwrap();
    let k = b.finish().unwrap();
    let ck = Jit::new().compile(&k).unwrap();
    let mut args = args_for(&k, 1, None);
    let e = ck.run(&mut args).unwrap_err();
    assert!(e.message.contains("`out`"), "{e}");
    assert!(run_kernel(&k, &mut args_for(&k, 1, None)).is_err());
}

#[test]
fn bad_extent_is_rejected_before_running() {
    let k = kernel2(
        "ext",
        f32t(4, 4),
        f32t(4, 4),
        f32t(4, 4),
        false,
        |b, x, y| b.binary(BinaryOp::Add, x, y).unwrap(),
    );
    let ck = Jit::new().compile(&k).unwrap();
    let mut args = args_for(&k, 1, None);
    if let KernelArg::Tile(t) = &mut args[0] {
        t.valid = [3, 4];
    }
    let e = ck.run(&mut args).unwrap_err();
    assert!(
        e.message.contains("`x`") && e.message.contains("rows"),
        "{e}"
    );
}

#[test]
fn cache_hits_on_identical_kernels_and_unsupported_is_an_error() {
    let jit = Jit::new();
    let mk = || {
        kernel2("c", f32t(4, 4), f32t(4, 4), f32t(4, 4), false, |b, x, y| {
            b.binary(BinaryOp::Add, x, y).unwrap()
        })
    };
    let a = jit.compile(&mk()).unwrap();
    let b = jit.compile(&mk()).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    assert_eq!(jit.cached(), 1);
    let mut kb = KernelBuilder::new("f64");
    let x = kb.tile_param("x", Direction::In, tt(DType::F64, 2, 8));
    let o = kb.tile_param("out", Direction::Out, tt(DType::F64, 2, 8));
    let xv = kb.load(x).unwrap();
    let r = kb.binary(BinaryOp::Add, xv, xv).unwrap();
    kb.store(o, r);
    let e = jit.compile(&kb.finish().unwrap()).err().unwrap();
    assert_eq!(e.kind, wsp_jit::JitErrorKind::Unsupported);
    assert!(e.message.contains("f64"), "{e}");
}
