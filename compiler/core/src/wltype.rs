//! Workload types: `Workload[Axes, Tasks, Deps]` (language.md §6).
//!
//! Axes are the loop axes from the outermost loop inwards, with their kind and, when the size is
//! a constant, their size (`Dense[2]`); Tasks are the kernels the workload calls; Deps is the chain
//! of dependency types from the outside in (`Independent ▸ Selected`).

use std::collections::{BTreeMap, BTreeSet};

use wsp_syntax::ast::*;

use crate::db::{const_values, file_items, item_ast, items_of, Db, File, ItemId, ItemTag};
use crate::types::eval_int;

struct Ctx {
    axes: BTreeMap<String, String>,
    out_axes: Vec<String>,
    tasks: Vec<String>,
    deps: Vec<&'static str>,
}

fn axis_type(ctor: &Expr, consts: &BTreeMap<String, i64>) -> String {
    match &ctor.kind {
        ExprKind::Index { base, indices } => {
            let k = match &base.kind {
                ExprKind::Name(n) => n.name.clone(),
                _ => "?".into(),
            };
            match indices.first().and_then(|i| eval_int(i, consts)) {
                Some(v) => format!("{k}[{v}]"),
                None => k,
            }
        }
        ExprKind::Call { callee, .. } => match &callee.kind {
            ExprKind::Name(n) => n.name.clone(),
            _ => "?".into(),
        },
        _ => "?".into(),
    }
}

impl Ctx {
    fn block(&mut self, b: &Block, depth: usize) {
        let mut saw_stmt = 0;
        for s in &b.stmts {
            saw_stmt += 1;
            self.stmt(s, depth);
        }
        if saw_stmt > 1 && depth == 0 && self.deps.is_empty() {
            self.deps.push("Dataflow");
        }
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) {
        match &s.kind {
            StmtKind::For { iter, body, .. } => {
                let (dep, axes) = loop_form(iter);
                if self.deps.len() == depth {
                    self.deps.push(dep);
                }
                for a in axes {
                    let t = self.axes.get(&a).cloned().unwrap_or_else(|| "?".into());
                    if self.deps.len() > depth && !self.out_axes.iter().any(|x| x == &t && t == "?")
                    {
                        self.out_axes.push(t);
                    }
                }
                self.block(body, depth + 1);
            }
            StmtKind::When {
                branches,
                otherwise,
            } => {
                if self.deps.len() == depth {
                    self.deps.push("Conditional");
                }
                for (_, b) in branches {
                    self.block(b, depth + 1);
                }
                if let Some(b) = otherwise {
                    self.block(b, depth + 1);
                }
            }
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::Send { value, .. } => self.expr(value),
            StmtKind::Consume { body, .. } => self.block(body, depth + 1),
            _ => {}
        }
    }

    fn expr(&mut self, e: &Expr) {
        if let ExprKind::Call {
            callee,
            coords: Some(_),
            ..
        } = &e.kind
        {
            if let ExprKind::Name(k) = &callee.kind {
                if !self.tasks.contains(&k.name) {
                    self.tasks.push(k.name.clone());
                }
            }
        }
    }
}

fn loop_form(iter: &Expr) -> (&'static str, Vec<String>) {
    let ExprKind::Call { callee, args, .. } = &iter.kind else {
        return ("Sequential", Vec::new());
    };
    let dep = match &callee.kind {
        ExprKind::Field { field, .. } if field.name == "seq" => "Sequential",
        ExprKind::Field { field, .. } if field.name == "sel" => "Selected",
        _ => "Independent",
    };
    let axes = args
        .iter()
        .filter_map(|a| match &a.value.kind {
            ExprKind::Name(n) => Some(n.name.clone()),
            ExprKind::Index { base, .. } => match &base.kind {
                ExprKind::Name(n) => Some(n.name.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    (dep, axes)
}

/// The axes a loop's iterator iterates (`P(a, b)`: `a`, `b`; a row loop `P(tokens[b])`:
/// `tokens`; a range: none): the axes a schedule key may read inside it.
pub(crate) fn loop_axes(iter: &Expr) -> Vec<String> {
    loop_form(iter).1
}

/// The dependency type at each loop header of a workload or process body, for inlay hints:
/// `(item-relative end of the iterator expression, "Independent[rows: Dense[4]]")`, with the
/// loop's axes and their types (`?` when unknown). `axes` is [`axis_types`] of the file.
pub fn loop_headers(body: &Block, axes: &BTreeMap<String, String>) -> Vec<(u32, String)> {
    wsp_syntax::visit::statements(body)
        .into_iter()
        .filter_map(|s| match &s.kind {
            StmtKind::For { iter, .. } => {
                let (dep, names) = loop_form(iter);
                let over: Vec<String> = names
                    .iter()
                    .map(|n| {
                        let t = axes.get(n).map_or("?", String::as_str);
                        format!("{n}: {t}")
                    })
                    .collect();
                let label = if over.is_empty() {
                    dep.to_string()
                } else {
                    format!("{dep}[{}]", over.join(", "))
                };
                Some((iter.span.end, label))
            }
            _ => None,
        })
        .collect()
}

/// The type of every axis of a file, by name (`Dense[2]`, `DenseDyn`, ...).
#[salsa::tracked(returns(ref))]
pub fn axis_types(db: &dyn Db, file: File) -> BTreeMap<String, String> {
    let consts = const_values(db, file);
    let mut axes = BTreeMap::new();
    for (_, _, item) in items_of(db, file, &[ItemTag::Axis]) {
        if let ItemKind::Axis(a) = &item.kind {
            axes.insert(a.name.name.clone(), axis_type(&a.ctor, consts));
        }
    }
    axes
}

/// The axes some loop of the file's workloads and processes iterates, by name: the axes a
/// `for` names (`P(rows)`, `P.seq(a, b)`, a row `P(tokens[b])`). A schedule key reads the
/// coordinate of the loop over its axis that a task is inside, so a key over an axis of
/// this file that no loop here iterates fails for every task.
#[salsa::tracked(returns(ref))]
pub fn iterated_axes(db: &dyn Db, file: File) -> BTreeSet<String> {
    let walk = |b: &Block, out: &mut BTreeSet<String>| {
        for s in wsp_syntax::visit::statements(b) {
            if let StmtKind::For { iter, .. } = &s.kind {
                out.extend(loop_axes(iter));
            }
        }
    };
    let mut out = BTreeSet::new();
    for (_, _, item) in items_of(db, file, &[ItemTag::Workload, ItemTag::Process]) {
        match &item.kind {
            ItemKind::Workload(Workload {
                body: WorkloadBody::Block(b),
                ..
            }) => walk(b, &mut out),
            ItemKind::Process(p) => walk(&p.body, &mut out),
            _ => {}
        }
    }
    out
}

/// The type of one workload item (`None` for other items). Keyed on the item, so editing another
/// item does not re-run it.
#[salsa::tracked(returns(ref))]
pub fn workload_type<'db>(db: &'db dyn Db, item: ItemId<'db>) -> Option<String> {
    let ItemKind::Workload(w) = &item_ast(db, item).kind else {
        return None;
    };
    let file = item.file(db);
    let consts = const_values(db, file);
    let axes = axis_types(db, file);
    let ty = match &w.body {
        WorkloadBody::Block(b) => {
            let mut cx = Ctx {
                axes: axes.clone(),
                out_axes: Vec::new(),
                tasks: Vec::new(),
                deps: Vec::new(),
            };
            cx.block(b, 0);
            let axes = if cx.out_axes.is_empty() {
                "()".to_string()
            } else {
                cx.out_axes.join(" × ")
            };
            let tasks = if cx.tasks.is_empty() {
                "()".to_string()
            } else {
                cx.tasks.join(" | ")
            };
            let deps = if cx.deps.is_empty() {
                "Dataflow".to_string()
            } else {
                cx.deps.join(" ▸ ")
            };
            format!("Workload[{axes}, {tasks}, {deps}]")
        }
        WorkloadBody::Expr(e) => {
            let (form, parts) = match &e.kind {
                ExprKind::Call { callee, args, .. } => {
                    let f = match &callee.kind {
                        ExprKind::Name(n) => n.name.as_str(),
                        _ => "",
                    };
                    let parts: Vec<String> = args
                        .iter()
                        .map(|a| match &a.value.kind {
                            ExprKind::Name(n) => n.name.clone(),
                            ExprKind::Call { callee, args, .. } => {
                                match (&callee.kind, args.first()) {
                                    (ExprKind::Name(r), Some(x)) if r.name == "replicate" => {
                                        match &x.value.kind {
                                            ExprKind::Name(n) => format!(
                                                "{}×{}",
                                                n.name,
                                                args.get(1)
                                                    .and_then(|c| eval_int(&c.value, consts))
                                                    .map(|v| v.to_string())
                                                    .unwrap_or_else(|| "n".into())
                                            ),
                                            _ => "?".into(),
                                        }
                                    }
                                    _ => "?".into(),
                                }
                            }
                            _ => "?".into(),
                        })
                        .collect();
                    (f, parts)
                }
                _ => ("", Vec::new()),
            };
            let dep = match form {
                "combine" => "Combined",
                "sequential" => "Sequential",
                "connect" => "Pipeline",
                _ => "?",
            };
            format!("Workload[{}, {dep}]", parts.join(", "))
        }
    };
    Some(ty)
}

/// `(workload name, type)` for every workload of the file, in source order.
pub fn workload_types(db: &dyn Db, file: File) -> Vec<(String, String)> {
    file_items(db, file)
        .iter()
        .filter(|id| id.tag(db) == ItemTag::Workload)
        .filter_map(|id| {
            workload_type(db, *id)
                .as_ref()
                .map(|t| (id.key(db).clone(), t.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::Workspace;

    #[test]
    fn attention_type_matches_the_language_reference() {
        let src = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/ui/lang_attention.wsp"
        ))
        .unwrap();
        let mut ws = Workspace::new();
        ws.set_file("a.wsp", src);
        let t = ws.workload_types("a.wsp");
        assert_eq!(
            t,
            vec![(
                "attention".to_string(),
                "Workload[Dense[1] × Dense[2] × Dense[2], attention_tile, Independent ▸ Independent]".to_string()
            )]
        );
    }

    #[test]
    fn selected_and_compositions() {
        let src = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/ui/lang_workloads.wsp"
        ))
        .unwrap();
        let mut ws = Workspace::new();
        ws.set_file("w.wsp", src);
        let t: std::collections::BTreeMap<_, _> = ws.workload_types("w.wsp").into_iter().collect();
        assert_eq!(
            t["moe"],
            "Workload[DenseDyn × Sparse, expert, Independent ▸ Selected]"
        );
        assert_eq!(
            t["tiered"],
            "Workload[DenseDyn, attn_2k | attn_8k | attn_32k, Independent ▸ Conditional]"
        );
        assert_eq!(
            t["layer"],
            "Workload[rmsnorm_all, attention, ffn, Sequential]"
        );
        assert_eq!(t["both"], "Workload[left, right, Combined]");
    }
}
