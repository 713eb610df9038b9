//! Go to definition of a workload's local tensor: the name in the `let` that makes it (the
//! server resolves every other name to its top-level declaration).

use wsp_core::Workspace;
use wsp_syntax::ast::ItemKind;

use super::{enclosing, Range};

/// The name of the `let` making the local tensor `name` of the workload around `at` (a local
/// tensor is named once in its workload, E0102).
pub fn local_tensor_definition(ws: &Workspace, path: &str, name: &str, at: usize) -> Option<Range> {
    let item = enclosing(ws, path, at)?;
    let ItemKind::Workload(wsp_syntax::ast::Workload {
        body: wsp_syntax::ast::WorkloadBody::Block(b),
        ..
    }) = &item.item.kind
    else {
        return None;
    };
    let (n, _) = wsp_core::locals::local_tensors(b)
        .into_iter()
        .find(|(n, _)| n.name == name)?;
    Some((
        item.range.0 + n.span.start as usize,
        item.range.0 + n.span.end as usize,
    ))
}
