//! Where tasks run: a schedule's placements (`.spatial_map` cells, `.layout` shards) checked
//! against the model and the tensors, the core class of a kernel, and the notes on placements
//! the model does not time.

use wsp_ir::kernel::{Kernel, Op, Stmt};
use wsp_ir::schedule::{Shard, Spatial};
use wsp_ir::tensor::HostTensor;
use wsp_ir::workload::Program;
use wsp_runtime as rt;
use wsp_runtime::{Arch, CoreClass, Runtime};
use wsp_vocab::codes;

use crate::error::{schedule_error, SimError};

/// Where a schedule places tasks: its spatial map, and the shards of its tensors (each task
/// that touches one runs on the shard's owner, core `shard mod count` of its class).
#[derive(Default)]
pub(crate) struct Placement {
    pub(crate) spatial: Option<Spatial>,
    pub(crate) shards: Vec<Shard>,
}

/// A sharded tensor as the run places tasks by it: its name, the dimension, the shard size.
pub(crate) struct Sharded {
    pub(crate) name: String,
    pub(crate) dim: usize,
    pub(crate) size: i64,
}

/// E0817: a spatial grid larger than the cores of a class the program's kernels run on.
pub(crate) fn grid_fits(
    p: &Program,
    s: &Spatial,
    ids: &[rt::KernelId],
    r: &Runtime,
) -> Result<(), SimError> {
    for (k, id) in p.kernels.iter().zip(ids) {
        let cores = r.kernel_cores(*id);
        if s.cores() > u64::from(cores) {
            return Err(SimError::Setup {
                code: codes::E0817,
                message: format!(
                    "`.spatial_map(grid: ({}, {}), ...)` names {} cores of each class, but kernel `{}` runs on a class with {cores} cores on {}",
                    s.rows,
                    s.cols,
                    s.cores(),
                    k.name,
                    r.config().arch.name
                ),
                at: None,
            });
        }
    }
    Ok(())
}

/// The shards of `.layout`s per program tensor, checked against the tensors' shapes (E0814 for
/// a dimension the tensor lacks or a size that does not divide, known only now for shapes
/// over parameters).
pub(crate) fn sharded(
    p: &Program,
    shards: &[Shard],
    tensors: &[HostTensor],
) -> Result<Vec<Option<Sharded>>, SimError> {
    let mut out: Vec<Option<Sharded>> = (0..p.tensors.len()).map(|_| None).collect();
    for sh in shards {
        let i = sh.tensor.index();
        let (Some(decl), Some(t)) = (p.tensors.get(i), tensors.get(i)) else {
            return Err(schedule_error(format!("`.layout` of unknown tensor #{i}")));
        };
        let dim = sh.dim as usize;
        let Some(&size) = t.shape.get(dim) else {
            return Err(schedule_error(format!(
                "`.layout({}, shard(dim: {dim}, ...))`: `{}` has {} dimension(s)",
                decl.name,
                decl.name,
                t.shape.len()
            )));
        };
        let parts = sh.parts as usize;
        if parts == 0 || size % parts != 0 || size == 0 {
            return Err(schedule_error(format!(
                "`.layout({}, shard(dim: {dim}, parts: {parts}))`: dimension {dim} of `{}` has {size} indices, which do not split into {parts} equal shards",
                decl.name, decl.name
            )));
        }
        if let Some(o) = out.get_mut(i) {
            *o = Some(Sharded {
                name: decl.name.clone(),
                dim,
                size: (size / parts) as i64,
            });
        }
    }
    Ok(out)
}

fn has_matmul(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Op { op, .. } => matches!(op, Op::Matmul { .. }),
        Stmt::For { body, .. } | Stmt::Section { body, .. } => has_matmul(body),
        _ => false,
    })
}

/// The core class of a kernel: a kernel with a matmul runs on the matmul (cube) cores.
pub fn kernel_class(k: &Kernel) -> CoreClass {
    if k.body.as_deref().is_some_and(has_matmul) {
        CoreClass::Cube
    } else {
        CoreClass::Vector
    }
}

/// What the model changes about the placements: under `pto_wsp_v9`, tasks are timed in
/// program order on v9's workers, so a core placement does not change the cycles (its checks
/// still apply).
pub(crate) fn placement_notes(p: &Placement, arch: &Arch) -> Vec<String> {
    if arch.timing != wsp_arch::TimingSemantics::V9 {
        return Vec::new();
    }
    let mut set = Vec::new();
    if p.spatial.is_some() {
        set.push("`.spatial_map(...)`");
    }
    if !p.shards.is_empty() {
        set.push("`.layout(...)`");
    }
    if set.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "{}: {} times tasks in program order on its workers, not on cores, so the placement does not change its cycles (views across shards and conflicting placements are still errors)",
        set.join(" and "),
        arch.name
    )]
}
