//! Tile memory: the on-chip buffer each tile of a kernel lives in on the target architecture,
//! and the peak bytes each buffer holds, by liveness over the kernel body.
//!
//! # The model
//!
//! Points are the kernel's statements in program order (parameters are defined at point 0). A
//! tile is live from its definition to its last use; a use inside a loop of a tile defined
//! outside it keeps the tile live for the whole loop (the next iteration reads it again — this
//! covers `var` state carried across iterations). `out`/`inout` parameters are live to the end.
//!
//! Placement on an architecture with Ascend-style buffers (`UB`, `L1`, `L0A`, `L0B`, `L0C`):
//! a tile defined or read by a vector operation lives in `UB`; a `matmul` result (or an
//! accumulator) in `L0C`; a `matmul` operand is staged in `L1` for its lifetime and occupies
//! `L0A` (left) or `L0B` (right) from its first to its last use as an operand (loop-extended); a
//! sub-range operand `k[:, 0..128]` occupies `L0A`/`L0B` only by its own size at that point,
//! while the whole tile stays in `L1`. A tile with several roles is counted in each buffer (a
//! matmul result read by a vector op is moved from `L0C` to `UB`). An `out` tile is allocated at
//! its first write. A kernel `pipe` between the cube and vector sections crosses cores through
//! global memory on Ascend, so its slots hold no core buffer: the slot taken by `tpop` is a `UB`
//! tile while it is read, and each matmul written into a `talloc` slot's sub-range is an `L0C`
//! tile of that sub-range's size. On an architecture with one data memory (`DM`, AIE-ML) every
//! tile, and every pipe slot, lives there. Architectures without buffer figures (`pto_wsp_v9`) are not checked.
//!
//! Temporaries of an elementwise chain inside one expression (`exp(h - m)`) are not counted:
//! the JIT fuses such chains, and a backend that materialises them reports its own overflow.

use std::collections::BTreeMap;

use wsp_arch::Arch;
use wsp_diagnostics::{Diagnostic, FileName, Label};
use wsp_syntax::ast::*;
use wsp_syntax::Span;

use crate::db::{file_items, item_ast, Db, File, ItemId};
use wsp_vocab::codes;

/// The built-in model a name denotes: the model's own name, or the language's spelling with
/// `_` for `-` (`aie_ml`).
pub fn builtin_arch_name(n: &str) -> Option<String> {
    [n.to_string(), n.replace('_', "-")]
        .into_iter()
        .find(|c| Arch::builtin(c).is_ok())
}

/// The model of the driver's `--arch FILE.toml`, if it chose one (it parsed when it was set).
pub(crate) fn model_file(db: &dyn Db) -> Option<Arch> {
    let (path, text) = db.file_set().arch_file(db).as_ref()?;
    Arch::parse(text, path).ok()
}

/// The architecture model a file's kernels are checked against: the driver's choice
/// (`wsp check --arch`, a built-in name or a model file), else the `.target(...)` of its
/// schedules when they all name the same built-in model, else `ascend910b`.
#[salsa::tracked(returns(ref))]
pub fn file_target(db: &dyn Db, file: File) -> String {
    if let Some(m) = model_file(db) {
        return m.name;
    }
    if let Some(a) = db.file_set().arch(db) {
        return a.clone();
    }
    let mut targets = Vec::new();
    // Schedules only: an edit of another item does not ask this again.
    let schedules = file_items(db, file)
        .iter()
        .filter(|id| id.tag(db) == crate::db::ItemTag::Schedule);
    for id in schedules {
        if let ItemKind::Schedule(s) = &item_ast(db, *id).kind {
            for d in &s.directives {
                if d.name.name == "target" {
                    if let Some(ExprKind::Name(n)) = d.args.first().map(|a| &a.value.kind) {
                        if !targets.contains(&n.name) {
                            targets.push(n.name.clone());
                        }
                    }
                }
            }
        }
    }
    match targets.as_slice() {
        [one] => builtin_arch_name(one).unwrap_or_else(|| "ascend910b".into()),
        _ => "ascend910b".into(),
    }
}

/// One buffer's peak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferPeak {
    pub buffer: String,
    pub capacity: u64,
    pub peak: u64,
    /// The statement at which the peak is first reached (item-relative).
    pub at: Span,
    /// The tiles live at the peak: name, definition span (item-relative), bytes.
    pub live: Vec<(String, Span, u64)>,
}

/// A kernel's footprint on one architecture, buffer by buffer (only buffers it uses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Footprint {
    pub arch: String,
    pub buffers: Vec<BufferPeak>,
    /// Where each tile lives: name, definition span (item-relative), bytes, and the buffers it
    /// occupies (in placement order; empty for a pipe crossing cores through global memory).
    pub tiles: Vec<(String, Span, u64, Vec<String>)>,
    /// The kernel declares pipes (their slots are one way to save buffer space).
    pub pipes: bool,
}

impl Footprint {
    /// `UB 12,288 / 196,608 B · L0C 1,024 / 131,072 B` (for hovers and `--explain`).
    pub fn summary(&self) -> String {
        self.buffers
            .iter()
            .map(|b| {
                format!(
                    "{} {} / {} B",
                    b.buffer,
                    thousands(b.peak),
                    thousands(b.capacity)
                )
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

pub(crate) fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// The size in bytes of one element of a dtype.
pub fn dtype_bytes(d: &str) -> u64 {
    match d {
        "f64" | "i64" | "u64" => 8,
        "f32" | "i32" | "u32" => 4,
        "f16" | "bf16" | "i16" | "u16" => 2,
        _ => 1,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Role {
    Vector,
    Lhs,
    Rhs,
    Acc,
    /// The whole tile is staged in `L1` while sub-ranges of it feed the cube.
    Staged,
}

struct Val {
    name: String,
    span: Span,
    bytes: u64,
    def: usize,
    depth: usize,
    /// Points at which it is used, with the loops around each use (outermost first), and the
    /// role of the use (`None`: a plain read or write).
    uses: Vec<(usize, Vec<usize>, Option<Role>)>,
    def_role: Option<Role>,
    live_to_end: bool,
    /// A pipe's slots: whole kernel.
    pipe: bool,
    /// An `out` parameter: allocated at its first write.
    out_param: bool,
    /// `[rows, cols]` and element bytes, for sizing sub-ranges.
    shape: (i64, i64, u64),
}

struct Walk<'a> {
    shapes: &'a BTreeMap<u32, (String, i64, i64)>,
    consts: &'a BTreeMap<String, i64>,
    scopes: Vec<BTreeMap<String, Option<usize>>>,
    vals: Vec<Val>,
    points: Vec<Span>,
    loop_stack: Vec<usize>,
    /// Loops as `[start, end]` points.
    loops: Vec<(usize, usize)>,
    /// Pipe element shapes by pipe name, and by the names of slots taken with `talloc`.
    pipes: BTreeMap<String, (i64, i64, u64)>,
    slots: BTreeMap<String, (i64, i64, u64)>,
}

impl Walk<'_> {
    fn point(&self) -> usize {
        self.points.len().saturating_sub(1)
    }

    fn lookup(&self, n: &str) -> Option<usize> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(n))
            .copied()
            .flatten()
    }

    fn define(&mut self, n: &Ident, role: Option<Role>, live_to_end: bool) {
        let idx = self.shapes.get(&n.span.start).map(|(dt, r, c)| {
            self.vals.push(Val {
                name: n.name.clone(),
                span: n.span,
                bytes: dtype_bytes(dt) * (*r).max(0) as u64 * (*c).max(0) as u64,
                def: self.point(),
                depth: self.loop_stack.len(),
                uses: Vec::new(),
                def_role: role,
                live_to_end,
                pipe: false,
                out_param: false,
                shape: (*r, *c, dtype_bytes(dt)),
            });
            self.vals.len() - 1
        });
        if let Some(s) = self.scopes.last_mut() {
            s.insert(n.name.clone(), idx);
        }
    }

    fn hide(&mut self, n: &Ident) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(n.name.clone(), None);
        }
    }

    fn use_name(&mut self, n: &str, role: Option<Role>) {
        if let Some(i) = self.lookup(n) {
            let p = self.point();
            let loops = self.loop_stack.clone();
            self.vals[i].uses.push((p, loops, role));
        }
    }

    /// A tile that exists only at the current point (a sub-range fed to the cube, an unnamed
    /// matmul result written into a slot), in the buffer of `role`.
    fn transient(&mut self, name: String, span: Span, bytes: u64, role: Role) {
        let p = self.point();
        let loops = self.loop_stack.clone();
        self.vals.push(Val {
            name,
            span,
            bytes,
            def: p,
            depth: loops.len(),
            uses: vec![(p, loops, Some(role))],
            def_role: Some(role),
            live_to_end: false,
            pipe: false,
            out_param: false,
            shape: (0, 0, 0),
        });
    }

    /// Bytes of a sub-range `t[a..b, c..d]` of a tile with shape `shape`.
    fn sub_bytes(&self, shape: (i64, i64, u64), indices: &[Expr]) -> Option<u64> {
        let dims = [shape.0, shape.1];
        let skip = 2usize.saturating_sub(indices.len());
        let mut bytes = shape.2;
        for (k, d) in dims.iter().enumerate() {
            let ext = match k.checked_sub(skip).and_then(|i| indices.get(i)) {
                None => *d,
                Some(ix) => match &ix.kind {
                    ExprKind::FullSlice => *d,
                    ExprKind::Range { start, end } => {
                        let a = match start {
                            Some(a) => crate::types::eval_int(a, self.consts)?,
                            None => 0,
                        };
                        let b = match end {
                            Some(b) => crate::types::eval_int(b, self.consts)?,
                            None => *d,
                        };
                        (b - a).max(0)
                    }
                    _ => 1,
                },
            };
            bytes = bytes.checked_mul(ext.max(0) as u64)?;
        }
        Some(bytes)
    }

    fn operand(&mut self, a: &Expr, role: Role) {
        match &a.kind {
            ExprKind::Name(n) => self.use_name(&n.name, Some(role)),
            ExprKind::Index { base, indices } => {
                let ExprKind::Name(n) = &base.kind else {
                    return self.expr(a);
                };
                indices.iter().for_each(|i| self.expr(i));
                let Some(i) = self.lookup(&n.name) else {
                    return;
                };
                self.use_name(&n.name, Some(Role::Staged));
                let shape = self.vals[i].shape;
                if let Some(bytes) = self.sub_bytes(shape, indices) {
                    let text = crate::types::expr_text(a);
                    self.transient(text, a.span, bytes, role);
                }
            }
            _ => self.expr(a),
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Name(n) => self.use_name(&n.name, Some(Role::Vector)),
            ExprKind::Call { callee, args, .. } => {
                let f = match &callee.kind {
                    ExprKind::Name(n) => n.name.as_str(),
                    _ => "",
                };
                for (i, a) in args.iter().enumerate() {
                    let role = if f == "matmul" {
                        match (a.name.as_ref().map(|n| n.name.as_str()), i) {
                            (Some("acc"), _) => Some(Role::Acc),
                            (None, 0) => Some(Role::Lhs),
                            (None, 1) => Some(Role::Rhs),
                            _ => None,
                        }
                    } else if matches!(f, "tpush" | "tfree" | "talloc" | "tpop") {
                        None
                    } else {
                        Some(Role::Vector)
                    };
                    match (&a.value.kind, role) {
                        (_, Some(r @ (Role::Lhs | Role::Rhs))) => self.operand(&a.value, r),
                        (ExprKind::Name(n), Some(r)) => self.use_name(&n.name, Some(r)),
                        (ExprKind::Name(n), None) => self.use_name(&n.name, None),
                        _ => self.expr(&a.value),
                    }
                }
            }
            ExprKind::Unary { expr, .. } => self.expr(expr),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Index { base, indices } => {
                self.expr(base);
                indices.iter().for_each(|i| self.expr(i));
            }
            ExprKind::Range { start, end } => {
                start.iter().chain(end.iter()).for_each(|x| self.expr(x));
            }
            ExprKind::List(xs) | ExprKind::Tuple(xs) => xs.iter().for_each(|x| self.expr(x)),
            ExprKind::Field { base, .. } => self.expr(base),
            _ => {}
        }
    }

    fn value_role(value: &Expr) -> Option<Role> {
        match &value.kind {
            ExprKind::Call { callee, .. } => match &callee.kind {
                ExprKind::Name(n) if n.name == "matmul" => Some(Role::Acc),
                ExprKind::Name(n) if n.name == "talloc" => None,
                _ => Some(Role::Vector),
            },
            _ => Some(Role::Vector),
        }
    }

    /// The shape of a pipe slot bound by `talloc` (looked up through the pipe's element type).
    fn slot_shape(&self, e: &Expr) -> Option<(i64, i64, u64)> {
        let ExprKind::Name(n) = &e.kind else {
            return None;
        };
        self.slots.get(&n.name).copied()
    }

    fn block(&mut self, b: &Block) {
        self.scopes.push(BTreeMap::new());
        for s in &b.stmts {
            self.stmt(s);
        }
        self.scopes.pop();
    }

    fn stmt(&mut self, s: &Stmt) {
        // Point at a compound statement's header, not its whole body.
        let body = match &s.kind {
            StmtKind::For { body, .. } | StmtKind::Section { body, .. } => Some(body.span),
            StmtKind::When { branches, .. } => branches.first().map(|b| b.1.span),
            _ => None,
        };
        let span = match body {
            Some(b) if b.start > s.span.start => Span {
                start: s.span.start,
                end: b.start,
            },
            _ => s.span,
        };
        self.points.push(span);
        match &s.kind {
            StmtKind::Let { names, value, .. } => {
                self.expr(value);
                let role = Self::value_role(value);
                if role.is_none() {
                    // `let slot = talloc(s)`: remember the slot's shape.
                    if let (ExprKind::Call { args, .. }, Some(n)) = (&value.kind, names.first()) {
                        if let Some(ExprKind::Name(p)) = args.first().map(|a| &a.value.kind) {
                            if let Some(sh) = self.pipes.get(&p.name).copied() {
                                self.slots.insert(n.name.clone(), sh);
                            }
                        }
                    }
                }
                for n in names {
                    match role {
                        Some(r) => self.define(n, Some(r), false),
                        None => self.hide(n),
                    }
                }
            }
            StmtKind::Var { name, value, .. } => {
                self.expr(value);
                self.define(name, Self::value_role(value), false);
            }
            StmtKind::Assign { target, op, value } => {
                self.expr(value);
                let role = Self::value_role(value);
                let base = match &target.kind {
                    ExprKind::Name(n) => Some(n),
                    ExprKind::Index { base, indices } => {
                        indices.iter().for_each(|i| self.expr(i));
                        match &base.kind {
                            ExprKind::Name(n) => Some(n),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                let is_slot = base.is_some_and(|n| self.lookup(&n.name).is_none());
                if let (true, Some(Role::Acc), ExprKind::Index { base: b, indices }) =
                    (is_slot, role, &target.kind)
                {
                    // `slot[:, 0..128] = matmul(..)`: the result is a cube tile of the
                    // sub-range's size, copied out into the pipe slot.
                    if let (ExprKind::Name(n), Some(shape)) = (&b.kind, self.slot_shape(b)) {
                        if let Some(bytes) = self.sub_bytes(shape, indices) {
                            self.transient(
                                format!("{}[..] result", n.name),
                                value.span,
                                bytes,
                                Role::Acc,
                            );
                        }
                    }
                }
                if let Some(n) = base {
                    // `acc += matmul(...)` reads the accumulator too.
                    let role = if op.is_some() && role == Some(Role::Acc) {
                        Some(Role::Acc)
                    } else {
                        role
                    };
                    self.use_name(&n.name, role);
                }
            }
            StmtKind::For { iter, body, .. } => {
                self.expr(iter);
                let id = self.loops.len();
                let start = self.point();
                self.loops.push((start, start));
                self.loop_stack.push(id);
                self.block(body);
                self.loop_stack.pop();
                self.loops[id].1 = self.point();
            }
            StmtKind::When {
                branches,
                otherwise,
            } => {
                for (c, b) in branches {
                    self.expr(c);
                    self.block(b);
                }
                if let Some(b) = otherwise {
                    self.block(b);
                }
            }
            StmtKind::Pipe { name, elem, args } => {
                let slots = args
                    .iter()
                    .find(|a| a.name.as_ref().is_some_and(|n| n.name == "slots"))
                    .and_then(|a| crate::types::eval_int(&a.value, self.consts))
                    .unwrap_or(1)
                    .max(1) as u64;
                let dims: Option<Vec<i64>> =
                    crate::types::eval_dims(elem, self.consts).and_then(|d| {
                        d.iter()
                            .map(|x| match x {
                                crate::types::D::K(v) if *v >= 0 => Some(*v),
                                _ => None,
                            })
                            .collect()
                    });
                let eb = dtype_bytes(&elem.dtype.name);
                if let Some([r, c]) = dims.as_deref() {
                    self.pipes.insert(name.name.clone(), (*r, *c, eb));
                }
                let elems = dims.map(|d| d.iter().map(|v| *v as u64).product::<u64>());
                if let Some(elems) = elems {
                    self.vals.push(Val {
                        name: format!("pipe {} ({slots} slots)", name.name),
                        span: name.span,
                        bytes: slots * elems * dtype_bytes(&elem.dtype.name),
                        def: self.point(),
                        depth: self.loop_stack.len(),
                        uses: Vec::new(),
                        def_role: Some(Role::Vector),
                        live_to_end: true,
                        pipe: true,
                        out_param: false,
                        shape: (0, 0, 0),
                    });
                }
                self.hide(name);
            }
            StmtKind::Section { body, .. } => self.block(body),
            StmtKind::Expr(e) => self.expr(e),
            _ => {}
        }
    }
}

/// Which buffer a role lives in, on an architecture with these buffers.
fn buffer_of(arch: &Arch, role: Role) -> Option<(&'static str, bool)> {
    if arch.buffer("UB").is_some() {
        // (buffer, held for the whole lifetime)
        Some(match role {
            Role::Vector => ("UB", true),
            Role::Acc => ("L0C", true),
            Role::Lhs => ("L0A", false),
            Role::Rhs => ("L0B", false),
            Role::Staged => ("L1", true),
        })
    } else if arch.buffer("DM").is_some() {
        Some(("DM", true))
    } else {
        None
    }
}

/// The footprint of a kernel on an architecture; `None` when the architecture has no buffer
/// figures or the kernel has an `extern` body.
pub fn footprint(k: &Kernel, consts: &BTreeMap<String, i64>, arch: &Arch) -> Option<Footprint> {
    let KernelBody::Block(body) = &k.body else {
        return None;
    };
    buffer_of(arch, Role::Vector)?;
    let shapes = crate::types::kernel_tile_shapes(k, consts);
    let mut w = Walk {
        shapes: &shapes,
        consts,
        scopes: vec![BTreeMap::new()],
        vals: Vec::new(),
        points: vec![k.name.span],
        loop_stack: Vec::new(),
        loops: Vec::new(),
        pipes: BTreeMap::new(),
        slots: BTreeMap::new(),
    };
    for p in &k.params {
        if let Some((dir, _)) = &p.dir {
            let to_end = !matches!(dir, Direction::In);
            w.define(&p.name, None, to_end);
            if matches!(dir, Direction::Out) {
                if let Some(v) = w.vals.last_mut().filter(|v| v.span == p.name.span) {
                    v.out_param = true;
                }
            }
        }
    }
    w.block(body);
    let end = w.point();
    // (buffer, from, to, value)
    let mut spans: Vec<(&'static str, usize, usize, usize)> = Vec::new();
    for (i, v) in w.vals.iter().enumerate() {
        let widen = |p: usize, loops: &[usize], lo: &mut usize, hi: &mut usize| {
            *lo = (*lo).min(p);
            *hi = (*hi).max(p);
            for l in loops.iter().skip(v.depth) {
                let (s, e) = w.loops[*l];
                *lo = (*lo).min(s);
                *hi = (*hi).max(e);
            }
        };
        let mut roles: BTreeMap<Role, (usize, usize)> = BTreeMap::new();
        let def = if v.out_param {
            v.uses.iter().map(|u| u.0).min().unwrap_or(v.def)
        } else {
            v.def
        };
        let (mut lo, mut hi) = (def, def);
        for (p, loops, _) in &v.uses {
            widen(*p, loops, &mut lo, &mut hi);
        }
        if v.live_to_end {
            hi = end;
        }
        for (p, loops, role) in &v.uses {
            if let Some(r) = role {
                let e = roles.entry(*r).or_insert((usize::MAX, 0));
                let (mut a, mut b) = *e;
                widen(*p, loops, &mut a, &mut b);
                *e = (a, b);
            }
        }
        if let Some(r) = v.def_role {
            roles.entry(r).or_insert((def, def));
        }
        if v.pipe {
            // On Ascend the cube → vector FIFO crosses cores through global memory: its slots
            // hold no core's buffer (a popped slot is counted where it is read). On a single
            // data memory (AIE-ML) the slots live in it.
            if arch.buffer("UB").is_some() {
                continue;
            }
            roles.clear();
            roles.insert(Role::Vector, (v.def, end));
        }
        if roles.is_empty() {
            // A parameter only passed through (`tpush`) or never used: staged in vector memory.
            roles.insert(Role::Vector, (lo, hi));
        }
        let mut staged = false;
        for (r, (a, b)) in roles {
            let Some((buf, whole)) = buffer_of(arch, r) else {
                continue;
            };
            let (a, b) = if whole { (lo, hi) } else { (a, b) };
            spans.push((buf, a, b, i));
            let named = v.shape.2 > 0;
            if named && matches!(r, Role::Lhs | Role::Rhs) && !staged && arch.buffer("L1").is_some()
            {
                staged = true;
                spans.push(("L1", lo, hi, i));
            }
        }
    }
    let buffers = peaks(&spans, &w, arch);
    // The buffers each value is in, in the order its spans name them.
    let mut bufs_of: Vec<Vec<String>> = vec![Vec::new(); w.vals.len()];
    for (buf, _, _, j) in &spans {
        if let Some(b) = bufs_of.get_mut(*j) {
            if !b.iter().any(|x| x == buf) {
                b.push(buf.to_string());
            }
        }
    }
    let tiles = w
        .vals
        .iter()
        .zip(bufs_of)
        .map(|(v, bufs)| (v.name.clone(), v.span, v.bytes, bufs))
        .collect();
    let order = ["UB", "L1", "L0A", "L0B", "L0C", "DM"];
    let mut out: Vec<BufferPeak> = buffers;
    out.sort_by_key(|b| order.iter().position(|o| *o == b.buffer));
    Some(Footprint {
        arch: arch.name.clone(),
        buffers: out,
        tiles,
        pipes: w.vals.iter().any(|v| v.pipe),
    })
}

/// Each buffer's peak: the first point where the bytes of the values live in it (a value
/// counted once however many of its spans cover the point) are largest, and those values.
/// A sweep over the spans' ends: n·log n in the spans (a scan of every span at every point was
/// quadratic in a long kernel).
fn peaks(
    spans: &[(&'static str, usize, usize, usize)],
    w: &Walk<'_>,
    arch: &Arch,
) -> Vec<BufferPeak> {
    // Per (buffer, value), its spans merged into disjoint intervals.
    let mut by: BTreeMap<(&'static str, usize), Vec<(usize, usize)>> = BTreeMap::new();
    for (buf, a, b, i) in spans {
        if a <= b {
            by.entry((buf, *i)).or_default().push((*a, *b));
        }
    }
    // Per buffer: (point, +bytes at a start / −bytes after an end).
    let mut events: BTreeMap<&'static str, Vec<(usize, i128)>> = BTreeMap::new();
    for ((buf, i), mut iv) in by {
        iv.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (a, b) in iv {
            match merged.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        let bytes = i128::from(w.vals[i].bytes);
        let ev = events.entry(buf).or_default();
        for (a, b) in merged {
            ev.push((a, bytes));
            ev.push((b.saturating_add(1), -bytes));
        }
    }
    let mut out = Vec::new();
    for (buf, mut ev) in events {
        // At one point the ends (after the previous point) come before the starts.
        ev.sort_unstable_by_key(|(p, d)| (*p, *d > 0));
        let first = ev
            .iter()
            .filter(|(_, d)| *d > 0)
            .map(|(p, _)| *p)
            .min()
            .unwrap_or(0);
        let (mut cur, mut peak, mut at) = (0i128, 0i128, None);
        for (p, d) in ev {
            cur += d;
            if d > 0 && cur > peak {
                peak = cur;
                at = Some(p);
            }
        }
        // The values live at the peak, in the order of their spans.
        let mut live: Vec<usize> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        if let Some(p) = at {
            for (b, a, e, i) in spans {
                if *b == buf && *a <= p && p <= *e && seen.insert(*i) {
                    live.push(*i);
                }
            }
        }
        let point = at.unwrap_or(first);
        out.push(BufferPeak {
            buffer: buf.to_string(),
            capacity: arch.buffer(buf).unwrap_or(0),
            peak: u64::try_from(peak).unwrap_or(0),
            at: w.points[point.min(w.points.len().saturating_sub(1))],
            live: live
                .iter()
                .map(|i| (w.vals[*i].name.clone(), w.vals[*i].span, w.vals[*i].bytes))
                .collect(),
        });
    }
    out
}

/// A kernel's footprint on its file's target (see [`file_target`]).
#[salsa::tracked(returns(ref))]
pub fn kernel_footprint<'db>(db: &'db dyn Db, item: ItemId<'db>) -> Option<Footprint> {
    let ItemKind::Kernel(k) = &item_ast(db, item).kind else {
        return None;
    };
    let file = item.file(db);
    let arch = match model_file(db) {
        Some(m) => m,
        None => Arch::builtin(file_target(db, file)).ok()?,
    };
    footprint(k, crate::db::const_values(db, file), &arch)
}

/// E0701 for every buffer of a kernel whose peak exceeds its capacity (item-relative spans).
pub fn memory_diagnostics(file: &FileName, kernel: &str, fp: &Footprint) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for b in &fp.buffers {
        if b.peak <= b.capacity {
            continue;
        }
        let mut d = Diagnostic::new(
            codes::E0701,
            format!(
                "kernel `{kernel}` needs {} bytes of {} on {}, which has {} bytes",
                thousands(b.peak),
                b.buffer,
                fp.arch,
                thousands(b.capacity)
            ),
            Label::new(file.clone(), b.at, format!("{} peaks here", b.buffer)),
        );
        let mut live = b.live.clone();
        live.sort_by_key(|x| std::cmp::Reverse(x.2));
        for (name, span, bytes) in &live {
            d = d.with_label(Label::new(
                file.clone(),
                *span,
                format!("`{name}`: {} bytes", thousands(*bytes)),
            ));
        }
        d = d.with_note(format!(
            "live in {} at the peak: {}",
            b.buffer,
            live.iter()
                .map(|(n, _, by)| format!("`{n}` {} B", thousands(*by)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let largest = live
            .first()
            .map(|(n, _, by)| format!(" (`{n}` alone holds {})", thousands(*by)))
            .unwrap_or_default();
        d = d.with_help(if fp.pipes {
            format!(
                "use smaller tiles, fewer pipe slots, or split the work into sub-tiles (e.g. fill a pipe slot from several narrower cube tiles) so that at most {} bytes are live in {}{largest}",
                thousands(b.capacity),
                b.buffer
            )
        } else {
            format!(
                "use smaller tiles, or split the work into sub-tiles (more tasks over smaller views), so that at most {} bytes are live in {}{largest}",
                thousands(b.capacity),
                b.buffer
            )
        });
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::Workspace;

    fn codes(src: &str) -> Vec<String> {
        let mut ws = Workspace::new();
        ws.set_file("m.wsp", src.to_string());
        ws.check("m.wsp")
            .into_iter()
            .map(|d| format!("{}: {}", d.code, d.message))
            .collect()
    }

    #[test]
    fn small_kernel_fits() {
        let d = codes("kernel k(x: in f32[16, 64], y: out f32[16, 64]) {\n    y = exp(x)\n}\n");
        assert!(d.is_empty(), "{d:?}");
    }

    #[test]
    fn k_and_v_together_in_l0b_overflow() {
        let src = "kernel attn(q: in f16[64, 128], k: in f16[128, 256], v: in f16[256, 128], o: out f32[64, 128]) {
    var acc = full([64, 128], 0.0)
    for j in 0..2 {
        let s = matmul(q, k)
        let p = cast(s, f16)
        acc = acc + matmul(p, v)
    }
    o = acc
}
";
        let d = codes(src);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].starts_with("E0701: kernel `attn` needs 131,072 bytes of L0B on ascend910b, which has 65,536 bytes"),
            "{d:?}"
        );
    }

    #[test]
    fn the_help_names_the_largest_tile_and_pipe_slots_only_with_pipes() {
        let help = |src: &str| {
            let mut ws = Workspace::new();
            ws.set_file("m.wsp", src.to_string());
            let d = ws.check("m.wsp");
            assert!(
                d.iter().all(|d| d.code == "E0701") && !d.is_empty(),
                "{d:?}"
            );
            d[0].help.clone().unwrap_or_default()
        };
        let plain =
            help("kernel k(a: in f32[256, 512], b: out f32[256, 512]) {\n    b = a + a\n}\n");
        assert!(!plain.contains("pipe"), "{plain}");
        assert!(
            plain.contains("at most 196,608 bytes are live in UB"),
            "{plain}"
        );
        assert!(plain.contains("alone holds 524,288"), "{plain}");
        let piped = help(
            "kernel k(q: in f32[128, 64], k: in f32[64, 512], out: out f32[128, 512]) {
    pipe s: Pipe[f32[128, 512], slots: 2]
    cube {
        let slot = talloc(s)
        slot = matmul(q, k)
        tpush(s, slot)
    }
    vector {
        let t = tpop(s)
        out = exp(t)
        tfree(s, t)
    }
}
",
        );
        assert!(piped.contains("fewer pipe slots"), "{piped}");
    }

    #[test]
    fn target_changes_capacity() {
        // 96 KB of UB: fits ascend910b (192 KB), overflows AIE-ML's 64 KB data memory.
        let body = "kernel k(x: in f32[96, 128], y: out f32[96, 128]) {\n    y = x * 2.0\n}\n";
        assert!(codes(body).is_empty());
        let aie = format!(
            "{body}axis a = Dense[1]\ninput X: f32[96, 128] = random(1)\noutput Y: f32[96, 128]\nworkload w {{\n    for i in P(a) {{\n        k[i](x: X, y: Y)\n    }}\n}}\nschedule s = w\n    .target(aie_ml)\n"
        );
        let d = codes(&aie);
        assert!(d.iter().any(|x| x.contains("of DM on aie-ml")), "{d:?}");
    }
}
