//! Placement directives checked against the program: `.spatial_map(grid: (rows, cols), ...)`
//! against the cores of the architecture model when the checker knows it (E0610), and
//! `.layout(T, shard(dim: d, parts: n))` against the views of `T` in the tasks of the scheduled
//! workload (E0612). The run checks what is only known then (E0817, E0818, E0819).

use std::collections::{BTreeMap, BTreeSet};

use wsp_arch::{Arch, CoreClass};
use wsp_diagnostics::{Diagnostic, FileName, Label};
use wsp_syntax::ast::{Directive, Expr, ExprKind, ItemKind, KernelBody, Schedule};
use wsp_syntax::visit::{walk_expr, Visitor};
use wsp_vocab::codes;
use wsp_vocab::schedule::{Directive as DirectiveKind, SHARD, SHARD_NAMES};

use crate::db::{items_of, Db, File, ItemTag, Symbol};
use crate::types::{eval_int, D};

/// E0610 and E0612 for every schedule of the file. Virtual spans ([`crate::db::real_spans`]).
#[salsa::tracked(returns(ref))]
pub fn placements(db: &dyn Db, file: File) -> Vec<Diagnostic> {
    let fname = FileName::new(file.path(db).as_str());
    let mut diags = Vec::new();
    for (_, off, item) in items_of(db, file, &[ItemTag::Schedule]) {
        let ItemKind::Schedule(s) = &item.kind else {
            continue;
        };
        let last = |k: DirectiveKind| {
            s.directives
                .iter()
                .rev()
                .find(|d| DirectiveKind::from_name(&d.name.name) == Some(k))
        };
        if let Some(d) = last(DirectiveKind::SpatialMap) {
            grid_fits(db, file, &fname, s, d, off, &mut diags);
        }
        // The last `.layout` of each tensor applies (W0601).
        let mut tensors = BTreeSet::new();
        for d in s.directives.iter().rev() {
            if DirectiveKind::from_name(&d.name.name) != Some(DirectiveKind::Layout) {
                continue;
            }
            let Some(ExprKind::Name(t)) = d.args.first().map(|a| &a.value.kind) else {
                continue;
            };
            if tensors.insert(t.name.as_str()) {
                views_fit(db, file, &fname, s, d, off, &mut diags);
            }
        }
    }
    diags
}

/// The model the checker knows for schedule `s`: the driver's (`--arch`), else the schedule's
/// own `.target(...)`. `None` when neither names one (the run checks, E0817).
fn known_model(db: &dyn Db, s: &Schedule) -> Option<Arch> {
    if let Some(m) = crate::memory::model_file(db) {
        return Some(m);
    }
    if let Some(a) = db.file_set().arch(db) {
        return Arch::builtin(a).ok();
    }
    let target = s.directives.iter().rev().find_map(|d| {
        (d.name.name == "target")
            .then(|| match d.args.first().map(|a| &a.value.kind) {
                Some(ExprKind::Name(n)) => Some(n.name.clone()),
                _ => None,
            })
            .flatten()
    })?;
    Arch::builtin(&crate::memory::builtin_arch_name(&target)?).ok()
}

/// Whether a kernel body calls `matmul`.
struct Matmul(bool);

impl<'a> Visitor<'a> for Matmul {
    fn visit_expr(&mut self, e: &'a Expr) {
        if let ExprKind::Call { callee, .. } = &e.kind {
            if matches!(&callee.kind, ExprKind::Name(n) if n.name == "matmul") {
                self.0 = true;
            }
        }
        walk_expr(self, e);
    }
}

/// The class a kernel runs on, as the runtime places it: matmul kernels on the cube cores (the
/// model's matmul class when it has none), the others on the vector cores.
fn class_on(arch: &Arch, matmul: bool) -> CoreClass {
    let class = if matmul {
        CoreClass::Cube
    } else {
        CoreClass::Vector
    };
    if arch.core_count(class) > 0 {
        class
    } else if matmul {
        arch.matmul_class
    } else {
        CoreClass::Cube
    }
}

/// E0610: the grid of `.spatial_map` has more cells than a class the scheduled workload's
/// kernels (those of this file with a body) run on has cores, on the model the checker knows.
#[allow(clippy::too_many_arguments)]
fn grid_fits(
    db: &dyn Db,
    file: File,
    fname: &FileName,
    s: &Schedule,
    d: &Directive,
    off: u32,
    diags: &mut Vec<Diagnostic>,
) {
    let consts = crate::db::const_values(db, file);
    let Some(g) = d
        .args
        .iter()
        .find(|a| a.name.as_ref().is_some_and(|n| n.name == "grid"))
    else {
        return;
    };
    let ExprKind::Tuple(xs) = &g.value.kind else {
        return;
    };
    let sizes: Vec<i64> = xs.iter().filter_map(|x| eval_int(x, consts)).collect();
    let [rows, cols] = sizes[..] else { return };
    if rows < 1 || cols < 1 {
        return;
    }
    let Some(arch) = known_model(db, s) else {
        return;
    };
    let mut kernels = BTreeSet::new();
    for (b, _) in crate::keys::scheduled_bodies(db, file, &s.workload.name) {
        kernels.extend(crate::keys::task_kernels(b));
    }
    let mut classes: BTreeMap<CoreClass, String> = BTreeMap::new();
    for (_, _, item) in items_of(db, file, &[ItemTag::Kernel]) {
        let ItemKind::Kernel(k) = &item.kind else {
            continue;
        };
        let KernelBody::Block(b) = &k.body else {
            continue;
        };
        if !kernels.contains(&k.name.name) {
            continue;
        }
        let mut m = Matmul(false);
        m.visit_block(b);
        classes
            .entry(class_on(&arch, m.0))
            .or_insert_with(|| k.name.name.clone());
    }
    let cells = rows.saturating_mul(cols);
    for (class, kernel) in classes {
        let cores = arch.core_count(class);
        if cells <= i64::from(cores) {
            continue;
        }
        diags.push(
            Diagnostic::new(
                codes::E0610,
                format!(
                    "a {rows} × {cols} grid has {cells} cells, but {} has {cores} {class} cores",
                    arch.name
                ),
                Label::new(
                    fname.clone(),
                    g.value.span.shift(off),
                    format!("{cells} cores of each class"),
                ),
            )
            .with_note(format!(
                "kernel `{kernel}` of `{}` runs on the {class} cores; the grid names cores 0 to {} of each class",
                s.workload.name,
                cells - 1
            ))
            .with_help(format!(
                "use a grid of at most {cores} cells, or target a model with more {class} cores"
            )),
        );
    }
}

/// E0612: the views of a `.layout`'s tensor in the scheduled workload's tasks that cross a
/// shard boundary for some iteration.
#[allow(clippy::too_many_arguments)]
fn views_fit(
    db: &dyn Db,
    file: File,
    fname: &FileName,
    s: &Schedule,
    d: &Directive,
    off: u32,
    diags: &mut Vec<Diagnostic>,
) {
    let consts = crate::db::const_values(db, file);
    let scope = crate::resolve::scope(db, file);
    let [t, sh] = d.args.as_slice() else { return };
    let ExprKind::Name(tensor) = &t.value.kind else {
        return;
    };
    let Some(Symbol::Tensor {
        dims: Some(shape), ..
    }) = scope.get(&tensor.name).map(|x| &x.symbol)
    else {
        return;
    };
    let ExprKind::Call { callee, args, .. } = &sh.value.kind else {
        return;
    };
    if !matches!(&callee.kind, ExprKind::Name(n) if n.name == SHARD) {
        return;
    }
    let arg = |i: usize| {
        args.iter()
            .find(|a| a.name.as_ref().is_some_and(|n| n.name == SHARD_NAMES[i]))
            .or_else(|| args.get(i).filter(|a| a.name.is_none()))
            .and_then(|a| eval_int(&a.value, consts))
    };
    let (Some(dim), Some(parts)) = (arg(0), arg(1)) else {
        return;
    };
    let Some(D::K(size)) = usize::try_from(dim).ok().and_then(|j| shape.get(j)) else {
        return;
    };
    // A sharding that does not divide the dimension is E0611.
    if parts < 1 || size % parts != 0 || *size == 0 {
        return;
    }
    let shard = size / parts;
    let sizes = crate::races::axis_sizes(db, file);
    for (b, boff) in crate::keys::scheduled_bodies(db, file, &s.workload.name) {
        let sharded = crate::races::Sharded {
            tensor: &tensor.name,
            dim: dim as usize,
            size: *size,
            shard,
        };
        let found = crate::races::straddles(b, scope, consts, sizes, &sharded);
        for v in found {
            let (fs, ls) = (v.first / shard, v.last / shard);
            let mut diag = Diagnostic::new(
                codes::E0612,
                format!(
                    "view `{}` straddles the shards of `{}`: dimension {dim} is split into {parts} shards of {shard}",
                    v.text, tensor.name
                ),
                Label::new(
                    fname.clone(),
                    v.span.shift(boff),
                    if v.whole {
                        format!("covers all {parts} shards")
                    } else {
                        format!("crosses from shard {fs} into shard {ls}")
                    },
                ),
            )
            .with_label(Label::new(
                fname.clone(),
                d.span.shift(off),
                "the tensor is sharded here",
            ));
            diag = if v.whole {
                diag.with_note(format!(
                    "the view keeps the whole of dimension {dim} (indices 0..={}), which {parts} cores own",
                    v.last
                ))
            } else {
                let at: Vec<String> = v.at.iter().map(|(n, x)| format!("`{n}` = {x}")).collect();
                let when = if at.is_empty() {
                    String::new()
                } else {
                    format!("with {}, ", at.join(", "))
                };
                diag.with_note(format!(
                    "{when}the view covers indices {}..={} of dimension {dim}: index {} is in shard {fs} ({}..={}) and index {} in shard {ls} ({}..={})",
                    v.first,
                    v.last,
                    v.first,
                    fs * shard,
                    fs * shard + shard - 1,
                    v.last,
                    ls * shard,
                    ls * shard + shard - 1
                ))
            };
            diags.push(diag.with_help(
                "a task runs on the core that owns its shard, so each view must lie within one shard: shard into parts the views align with, or tile the loop by the shard size",
            ));
        }
    }
}
