//! Inlay hints: the type of each workload, the dependency type at each loop header of a
//! workload or process, and the tile type of each kernel `let`/`var` written without one.

use std::collections::{BTreeMap, BTreeSet};

use wsp_core::Workspace;
use wsp_syntax::ast::ItemKind;
use wsp_syntax::{lex, Token};

use super::text_of;
use crate::analysis::{decls, ident_at};

/// Inlay hints: `(byte offset, label)` after the names of workloads (their inferred
/// `Workload[...]` type), after each loop header of a workload or process (its dependency type
/// over its axes), and after kernel `let`/`var` bindings written without a type (their tile
/// type, when its shape is constant).
pub fn inlay_hints(ws: &Workspace, path: &str) -> Vec<(usize, String)> {
    let Some(text) = text_of(ws, path) else {
        return Vec::new();
    };
    let items = decls(ws, path);
    let mut out = Vec::new();
    let types: BTreeMap<String, String> = ws.workload_types(path).into_iter().collect();
    let mut consts = BTreeMap::new();
    for d in &items {
        if let ItemKind::Const(c) = &d.item.kind {
            if let Some(v) = wsp_core::types::eval_int(&c.value, &consts) {
                consts.insert(c.name.name.clone(), v);
            }
        }
    }
    let axes = ws
        .file_handle(path)
        .map(|f| wsp_core::wltype::axis_types(ws.db(), f).clone())
        .unwrap_or_default();
    let loops = |body: &wsp_syntax::ast::Block, base: usize, out: &mut Vec<(usize, String)>| {
        for (end, label) in wsp_core::wltype::loop_headers(body, &axes) {
            out.push((base + end as usize, format!(": {label}")));
        }
    };
    for d in &items {
        match &d.item.kind {
            ItemKind::Workload(w) => {
                if let Some(t) = types.get(&w.name.name) {
                    out.push((d.name.1, format!(": {t}")));
                }
                if let wsp_syntax::ast::WorkloadBody::Block(b) = &w.body {
                    loops(b, d.range.0, &mut out);
                }
            }
            ItemKind::Process(p) => loops(&p.body, d.range.0, &mut out),
            ItemKind::Kernel(k) => {
                let params: BTreeSet<u32> = k.params.iter().map(|p| p.name.span.start).collect();
                for (at, (dtype, r, c)) in wsp_core::types::kernel_tile_shapes(k, &consts) {
                    if params.contains(&at) {
                        continue;
                    }
                    let s = d.range.0 + at as usize;
                    let Some((_, _, e)) = ident_at(&text, s) else {
                        continue;
                    };
                    // Already annotated (`let x: f32[8, 8] = …`)?
                    let annotated = lex(&text[e..])
                        .into_iter()
                        .find(|t| t.kind != Token::Newline)
                        .is_some_and(|t| t.kind == Token::Colon);
                    if !annotated {
                        out.push((e, format!(": {dtype}[{r}, {c}]")));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::test_support::{at, ws};

    #[test]
    fn inlay_hints_show_workload_and_tile_types() {
        let ws = ws();
        let h = inlay_hints(&ws, "a.wsp");
        assert!(
            h.iter()
                .any(|(o, l)| *o == at("w {", 1) && l.starts_with(": Workload[")),
            "{h:?}"
        );
        assert!(h.contains(&(at("t = x", 1), ": f32[8, 8]".into())), "{h:?}");
        // The dependency type at the loop header, after `P(rows)`.
        assert!(
            h.contains(&(at("P(rows)", 7), ": Independent[rows: Dense[4]]".into())),
            "{h:?}"
        );
    }
}
