//! Local tensors of workload blocks: `let H: f32[64, 128] = scratch()` makes a tensor for the
//! tasks of the rest of its block, a fresh one each time the block runs (from the runtime's heap
//! arena, freed once those tasks have completed).
//!
//! The checks see a workload's local tensors as tensors of its scope ([`scope_with_locals`]),
//! so views of them are typed and bounds-checked like any other; the checker confines their
//! names to their blocks and to task arguments (E0414), and the race analysis treats a local
//! made inside a `P` loop's body as private to each iteration.

use std::collections::BTreeMap;

use wsp_syntax::ast::{Block, Expr, Ident, Stmt, TensorKind, TypeExpr};
use wsp_syntax::visit::{walk_stmt, Visitor};

use crate::db::Symbol;
use crate::resolve::Scoped;

/// The local tensors a workload body makes, in source order, nested blocks included.
pub fn local_tensors(b: &Block) -> Vec<(&Ident, &TypeExpr)> {
    struct Lets<'a>(Vec<(&'a Ident, &'a TypeExpr)>);
    impl<'a> Visitor<'a> for Lets<'a> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if let Some(l) = s.local_tensor() {
                self.0.push(l);
            }
            walk_stmt(self, s);
        }
        // Expressions hold no statements.
        fn visit_expr(&mut self, _: &'a Expr) {}
    }
    let mut v = Lets(Vec::new());
    v.visit_block(b);
    v.0
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
