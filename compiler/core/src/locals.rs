//! Local tensors of workload blocks: `let H: f32[64, 128] = scratch()` makes a tensor for the
//! tasks of the rest of its block, a fresh one each time the block runs (from the runtime's heap
//! arena, freed once those tasks have completed).
//!
//! The checks see a workload's local tensors as tensors of its scope ([`scope_with_locals`]),
//! so views of them are typed and bounds-checked like any other; the checker confines their
//! names to their blocks and to task arguments (E0414), and the race analysis treats a local
//! made inside a `P` loop's body as private to each iteration.

use std::collections::BTreeMap;

use wsp_syntax::ast::{Block, Ident, StmtKind, TensorKind, TypeExpr};

use crate::db::Symbol;
use crate::resolve::Scoped;

/// The local tensors a workload body makes, in source order, nested blocks included.
pub fn local_tensors(b: &Block) -> Vec<(&Ident, &TypeExpr)> {
    let mut out = Vec::new();
    collect(b, &mut out);
    out
}

fn collect<'a>(b: &'a Block, out: &mut Vec<(&'a Ident, &'a TypeExpr)>) {
    for s in &b.stmts {
        if let Some(l) = s.local_tensor() {
            out.push(l);
        }
        match &s.kind {
            StmtKind::For { body, .. }
            | StmtKind::Consume { body, .. }
            | StmtKind::Section { body, .. } => collect(body, out),
            StmtKind::When {
                branches,
                otherwise,
            } => {
                branches.iter().for_each(|(_, b)| collect(b, out));
                if let Some(b) = otherwise {
                    collect(b, out);
                }
            }
            _ => {}
        }
    }
}

/// `scope` with the local tensors of the body `b` added as tensors of kind
/// [`TensorKind::Local`] (a name the file already has keeps its meaning: that local is E0102);
/// `None` when `b` makes none.
pub fn scope_with_locals(
    scope: &BTreeMap<String, Scoped>,
    b: &Block,
    consts: &BTreeMap<String, i64>,
) -> Option<BTreeMap<String, Scoped>> {
    let locals = local_tensors(b);
    if locals.is_empty() {
        return None;
    }
    let mut out = scope.clone();
    for (name, ty) in locals {
        out.entry(name.name.clone()).or_insert_with(|| Scoped {
            symbol: Symbol::Tensor {
                kind: TensorKind::Local,
                dtype: ty.dtype.name.clone(),
                dims: crate::types::eval_dims(ty, consts),
            },
            from: None,
        });
    }
    Some(out)
}
