//! How each kernel's tiles travel, and the capability warnings of its operations.

use super::*;
// ------------------------------------------------------------------------ kernels

pub(super) fn uses_op(stmts: &[Stmt], f: &dyn Fn(&Op) -> bool) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Op { op, .. } => f(op),
        Stmt::For { body, .. } | Stmt::Section { body, .. } => uses_op(body, f),
        _ => false,
    })
}

pub(super) fn has_stmt(stmts: &[Stmt], f: &dyn Fn(&Stmt) -> bool) -> bool {
    stmts.iter().any(|s| {
        f(s) || match s {
            Stmt::For { body, .. } | Stmt::Section { body, .. } => has_stmt(body, f),
            _ => false,
        }
    })
}

/// How a kernel's tile parameters travel (see [`KernelIo`]).
pub fn kernel_io(k: &Kernel) -> KernelIo {
    let body = k.body.as_deref().unwrap_or(&[]);
    let any_partial = k.tile_params().any(|(_, _, _, p)| p[0] || p[1]);
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    for (id, dir, _, _) in k.tile_params() {
        let whole_store = body
            .iter()
            .any(|s| matches!(s, Stmt::Store { param, region: None, .. } if *param == id));
        let reads_it = uses_op(body, &|o| matches!(o, Op::Param { param } if *param == id));
        let read = match dir {
            Direction::In | Direction::InOut => true,
            // The kernel reads the tensor's values.
            Direction::Out if reads_it => true,
            // Elements the kernel does not store keep the tensor's contents: an out tile is
            // brought in unless one top-level store covers it (with no partial extents that
            // could leave part of it unwritten).
            Direction::Out => !whole_store || any_partial,
        };
        if read {
            reads.push(id.index());
        }
        if dir.writes() {
            writes.push(id.index());
        }
    }
    let size = |ps: &[usize]| -> u64 {
        k.tile_params()
            .filter(|(id, _, _, _)| ps.contains(&id.index()))
            .map(|(_, _, t, _)| align4(t.len() as u64 * t.dtype.size_bytes() as u64))
            .sum()
    };
    KernelIo {
        in_bytes: size(&reads),
        out_bytes: size(&writes),
        reads,
        writes,
        locals: kernel_cc::locals_bytes(k),
    }
}

pub(super) fn kernel_warnings(k: &Kernel, diags: &mut Diags) {
    let body = k.body.as_deref().unwrap_or(&[]);
    let mut feats: Vec<&str> = Vec::new();
    if uses_op(body, &|o| matches!(o, Op::Matmul { .. })) {
        feats.push("kernel.matmul");
    }
    if uses_op(body, &|o| matches!(o, Op::Transpose { .. })) {
        feats.push("kernel.transpose");
    }
    if uses_op(body, &|o| matches!(o, Op::RowTopK { .. })) {
        feats.push("kernel.rowtopk");
    }
    if !k.pipes.is_empty() {
        feats.push("kernel.pipe");
    }
    if has_stmt(body, &|s| matches!(s, Stmt::Section { .. })) {
        feats.push("kernel.section");
    }
    for f in feats {
        if let Some(c) = capabilities::capability(f) {
            let e = c.on(CapBackend::Aie);
            if e.support != Support::Enforced {
                diags.push(
                    warning(
                        format!("kernel `{}`: {} on AIE: {}", k.name, c.written, e.reason),
                        k.at.clone(),
                    )
                    .with_capability(f),
                );
                if f == "kernel.matmul" {
                    // What the matrix does not say: which rounding each build computes.
                    diags.push(warning(
                        format!(
                            "kernel `{}`: the emitted C++ computes wsp's f32 `matmul`, which the CPU stand-in runs; on the device the matrix unit's bf16 rounding applies",
                            k.name
                        ),
                        k.at.clone(),
                    ));
                }
            }
        }
    }
}
