//! Cost of one task: the tile operations a kernel executes for given valid extents (its
//! *profile*), and the `pto_wsp_v9` compatibility cost of that profile.
//!
//! The profile is independent of any architecture: it lists every load, store, move and tile
//! operation a task executes, with its dtype and valid extent (loops unrolled), in the way
//! PTO-WSP v9 lowered kernels to PTO-ISA. Architecture models price it; [`v9_cycles`]
//! reproduces PTO-WSP v9's cpu-sim accounting exactly (every PTO-ISA instruction costs the
//! valid rows × cols of its destination, except as noted):
//!
//! * a tile parameter whose value is used by anything but the `a`/`b` operands of a `matmul`
//!   is loaded once at kernel entry (rows × cols of its valid extent); `out` parameters that
//!   are only written are not loaded;
//! * each store to an `out`/`inout` parameter costs the stored extent (plus the same again when
//!   it converts the dtype);
//! * `matmul` costs M·K·N; each of its `a`/`b` operands is loaded into the cube's input tile —
//!   a parameter by a load, any other value by a move — at its valid extent; a non-`matmul`
//!   accumulator is moved in (M·N); a result that feeds another operation other than `matmul`
//!   costs one extra M·N move to the vector unit;
//! * elementwise ops, comparisons, `select`, casts, `transpose`, `full` and reductions cost
//!   the result's extent, `rowmean` twice that (a row sum and a division);
//! * `rowtopk` sorts each valid row: 5 per element (a 32-wide sort is 5·32); `iota`, scalar
//!   operations, parameter reads, slices, variables and pipe operations are free.
//!
//! The brief form of these rules in the language sketch ("each parameter tile loaded once at
//! kernel entry") agrees with them for kernels whose `in` tiles feed vector ops and whose
//! `out` tiles are stored once; this module follows the exact form, which also gives v9's
//! published figures for kernels with `inout` tiles (`bgemm`) and with a `matmul` of a
//! computed tile (`attention`).

use crate::dtype::DType;
use crate::interp::broadcast_extent;
use crate::kernel::*;
use crate::typing::operands;
use std::collections::{HashMap, HashSet};

/// What a profiled event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A parameter tile loaded at kernel entry.
    ParamLoad(Direction),
    /// A parameter tile loaded into a cube input tile by a `matmul`.
    MatmulLoad,
    /// A tile moved between buffers: a computed `matmul` operand into the cube, a
    /// non-`matmul` accumulator into the cube, or a `matmul` result to the vector unit.
    Move,
    /// A store to an `out`/`inout` parameter; `convert` when it changes the dtype.
    Store {
        convert: bool,
    },
    /// A binary op; `form` says how its operands combine (PTO-ISA has a distinct
    /// instruction for each: `TADD`, `TADDS`, `TROWEXPANDADD`, `TCOLEXPANDADD`).
    Binary {
        op: BinaryOp,
        form: Form,
    },
    Cmp(CmpOp),
    Select,
    Unary(UnaryOp),
    Cast,
    Reduce(ReduceOp),
    /// `matmul` (rows × cols is M × N); `k` is the valid inner extent.
    Matmul {
        k: u32,
    },
    Transpose,
    Full,
    Iota,
    /// `rowtopk` sorting rows of `n` valid columns (rows × cols is the sorted extent).
    RowTopK {
        n: u32,
    },
}

/// How the operands of a binary op combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// Two tiles of the result's shape.
    Tiles,
    /// A tile and a scalar.
    Scalar,
    /// A tile and a per-row (`[R, 1]`) tile.
    RowBroadcast,
    /// A tile and a per-column (`[1, C]`) tile.
    ColBroadcast,
}

/// One executed tile operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    /// The operand dtype (for a load: the parameter's dtype).
    pub dtype: DType,
    /// Valid rows and cols of the result (of the tile, for a load).
    pub rows: u32,
    pub cols: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ext {
    Scalar,
    Int(i64),
    Tile {
        shape: [u32; 2],
        valid: [u32; 2],
        dtype: DType,
    },
}

impl Ext {
    fn pair(self) -> Option<([u32; 2], [u32; 2])> {
        match self {
            Ext::Tile { shape, valid, .. } => Some((shape, valid)),
            _ => None,
        }
    }
}

/// The events a task of kernel `k` executes, given each parameter's valid extent (`None`:
/// the static shape; ignored for scalars).
pub fn profile(k: &Kernel, extents: &[Option<[u32; 2]>]) -> Result<Vec<Event>, String> {
    let body = k
        .body
        .as_ref()
        .ok_or_else(|| format!("kernel `{}` has no `.wsp` body to cost", k.name))?;
    let mut uses = Uses::default();
    collect_uses(k, body, &mut uses);
    let mut w = Walker {
        k,
        extents,
        vals: vec![None; k.values.len()],
        vars: vec![None; k.vars.len()],
        pipes: vec![Vec::new(); k.pipes.len()],
        uses,
        events: Vec::new(),
    };
    for (i, p) in k.params.iter().enumerate() {
        if let ParamKind::Tile { dir, tile, .. } = p.kind {
            if w.uses.loaded_params.contains(&ParamId(i as u32)) {
                let v = w.param_valid(i, tile);
                w.events.push(Event {
                    kind: EventKind::ParamLoad(dir),
                    dtype: tile.dtype,
                    rows: v[0],
                    cols: v[1],
                });
            }
        }
    }
    w.block(body)
        .map_err(|e| format!("kernel `{}`: {e}", k.name))?;
    Ok(w.events)
}

/// How values are used, statically.
#[derive(Default)]
struct Uses {
    /// Values defined by `Op::Param`, with their parameter.
    param_of: HashMap<ValueId, ParamId>,
    /// Values used by something other than a `matmul`'s `a`/`b` or a store/assignment.
    vector_uses: HashSet<ValueId>,
    /// Matmul results (accumulator tiles).
    matmul_results: HashSet<ValueId>,
    /// Tile parameters loaded at entry.
    loaded_params: HashSet<ParamId>,
}

fn collect_uses(k: &Kernel, body: &[Stmt], u: &mut Uses) {
    fn defs(stmts: &[Stmt], u: &mut Uses) {
        for s in stmts {
            match s {
                Stmt::Op { results, op } => match op {
                    Op::Param { param } => {
                        if let Some(r) = results.first() {
                            u.param_of.insert(*r, *param);
                        }
                    }
                    Op::Matmul { .. } => u.matmul_results.extend(results.first()),
                    _ => {}
                },
                Stmt::For { body, .. } | Stmt::Section { body, .. } => defs(body, u),
                _ => {}
            }
        }
    }
    // Values read other than as a matmul's a/b (stores and assignments included): the
    // parameters behind them are loaded at entry.
    fn reads(stmts: &[Stmt], u: &mut Uses, loaded: &mut HashSet<ValueId>) {
        for s in stmts {
            match s {
                Stmt::Op { op, .. } => match op {
                    Op::Matmul { acc, .. } => loaded.extend(acc.iter().copied()),
                    other => {
                        let ops = operands(other);
                        u.vector_uses.extend(ops.iter().copied());
                        loaded.extend(ops);
                    }
                },
                Stmt::Store { value, .. } | Stmt::Assign { value, .. } => {
                    loaded.insert(*value);
                }
                Stmt::TFree { value, .. } => {
                    loaded.insert(*value);
                }
                Stmt::For { body, .. } | Stmt::Section { body, .. } => reads(body, u, loaded),
                Stmt::TAlloc { .. } | Stmt::TPush { .. } => {}
            }
        }
    }
    defs(body, u);
    let mut loaded = HashSet::new();
    reads(body, u, &mut loaded);
    for v in loaded {
        if let Some(p) = u.param_of.get(&v) {
            if matches!(
                k.params.get(p.index()).map(|p| &p.kind),
                Some(ParamKind::Tile { .. })
            ) {
                u.loaded_params.insert(*p);
            }
        }
    }
}

struct Walker<'k> {
    k: &'k Kernel,
    extents: &'k [Option<[u32; 2]>],
    vals: Vec<Option<Ext>>,
    vars: Vec<Option<Ext>>,
    pipes: Vec<Vec<Ext>>,
    uses: Uses,
    events: Vec<Event>,
}

impl Walker<'_> {
    fn param_valid(&self, i: usize, tile: TileType) -> [u32; 2] {
        match self.extents.get(i).copied().flatten() {
            Some(v) => [v[0].min(tile.shape[0]), v[1].min(tile.shape[1])],
            None => tile.shape,
        }
    }

    fn get(&self, v: ValueId) -> Result<Ext, String> {
        self.vals
            .get(v.index())
            .copied()
            .flatten()
            .ok_or_else(|| format!("value %{} is used before it is defined", v.0))
    }

    fn set(&mut self, v: ValueId, e: Ext) {
        if let Some(s) = self.vals.get_mut(v.index()) {
            *s = Some(e);
        }
    }

    fn index(&self, ix: &KIndex) -> Result<i64, String> {
        let mut acc = ix.constant;
        for (v, c) in &ix.terms {
            match self.get(*v)? {
                Ext::Int(i) => acc = acc.saturating_add(i.saturating_mul(*c)),
                _ => return Err(format!("index term %{} is not a loop index", v.0)),
            }
        }
        Ok(acc)
    }

    fn block(&mut self, stmts: &[Stmt]) -> Result<(), String> {
        // Adjacent sections run producers first, as in the interpreter.
        for s in crate::interp::exec_order(stmts) {
            match s {
                Stmt::Op { results, op } => self.op(results, op)?,
                Stmt::For {
                    index,
                    start,
                    end,
                    body,
                } => {
                    for i in *start..*end {
                        self.set(*index, Ext::Int(i));
                        self.block(body)?;
                    }
                }
                Stmt::Section { body, .. } => self.block(body)?,
                Stmt::Assign { var, region, value } => {
                    let e = self.get(*value)?;
                    if region.is_none() {
                        if let Some(s) = self.vars.get_mut(var.index()) {
                            *s = Some(e);
                        }
                    }
                }
                Stmt::TAlloc { pipe, slot } => {
                    let p = self.k.pipes.get(pipe.index()).ok_or("bad pipe")?;
                    let e = Ext::Tile {
                        shape: p.elem.shape,
                        valid: p.elem.shape,
                        dtype: p.elem.dtype,
                    };
                    if let Some(s) = self.vars.get_mut(slot.index()) {
                        *s = Some(e);
                    }
                }
                Stmt::TPush { pipe, slot } => {
                    let e = self
                        .vars
                        .get(slot.index())
                        .copied()
                        .flatten()
                        .ok_or("tpush of an unreserved slot")?;
                    if let Some(q) = self.pipes.get_mut(pipe.index()) {
                        q.push(e);
                    }
                }
                Stmt::Store {
                    param,
                    region,
                    value,
                } => {
                    let (_, vv, dv) = self.tile(*value)?;
                    let p = self.k.params.get(param.index()).ok_or("bad parameter")?;
                    let ParamKind::Tile { tile, .. } = p.kind else {
                        return Err(format!("store to scalar parameter `{}`", p.name));
                    };
                    let pv = self.param_valid(param.index(), tile);
                    let (r0, c0, rows, cols) = match region {
                        Some(r) => (
                            self.index(&r.row_start)?.max(0) as u32,
                            self.index(&r.col_start)?.max(0) as u32,
                            r.rows,
                            r.cols,
                        ),
                        None => (0, 0, tile.shape[0], tile.shape[1]),
                    };
                    let ext = [
                        vv[0].min(rows).min(pv[0].saturating_sub(r0)),
                        vv[1].min(cols).min(pv[1].saturating_sub(c0)),
                    ];
                    self.emit(
                        EventKind::Store {
                            convert: dv != tile.dtype,
                        },
                        tile.dtype,
                        ext,
                    );
                }
                Stmt::TFree { .. } => {}
            }
        }
        Ok(())
    }

    fn emit(&mut self, kind: EventKind, dtype: DType, valid: [u32; 2]) {
        self.events.push(Event {
            kind,
            dtype,
            rows: valid[0],
            cols: valid[1],
        });
    }

    fn elementwise(
        &mut self,
        kind: EventKind,
        ops: &[ValueId],
        dtype: DType,
    ) -> Result<Ext, String> {
        let exts = ops
            .iter()
            .map(|v| self.get(*v).map(Ext::pair))
            .collect::<Result<Vec<_>, _>>()?;
        let in_dtype = match ops.first() {
            Some(v) => self.dtype(*v)?,
            None => dtype,
        };
        Ok(match broadcast_extent(&exts)? {
            None => Ext::Scalar,
            Some((shape, valid)) => {
                self.emit(kind, in_dtype, valid);
                Ext::Tile {
                    shape,
                    valid,
                    dtype,
                }
            }
        })
    }

    fn dtype(&self, v: ValueId) -> Result<DType, String> {
        self.k
            .value_type(v)
            .map(|t| t.dtype())
            .ok_or_else(|| format!("value %{} does not exist", v.0))
    }

    fn tile(&self, v: ValueId) -> Result<([u32; 2], [u32; 2], DType), String> {
        match self.get(v)? {
            Ext::Tile {
                shape,
                valid,
                dtype,
            } => Ok((shape, valid, dtype)),
            _ => Err(format!("value %{} is not a tile", v.0)),
        }
    }

    fn op(&mut self, results: &[ValueId], op: &Op) -> Result<(), String> {
        let r0 = *results.first().ok_or("operation without results")?;
        let ext = match op {
            Op::Param { param } => {
                let p = self.k.params.get(param.index()).ok_or("bad parameter")?;
                match p.kind {
                    ParamKind::Tile { tile, .. } => Ext::Tile {
                        shape: tile.shape,
                        valid: self.param_valid(param.index(), tile),
                        dtype: tile.dtype,
                    },
                    ParamKind::Scalar { .. } => Ext::Scalar,
                }
            }
            Op::Const { .. } => Ext::Scalar,
            Op::Binary { op, lhs, rhs } => {
                let d = self.dtype(*lhs)?;
                let (a, b) = (self.get(*lhs)?, self.get(*rhs)?);
                let form = match (a.pair(), b.pair()) {
                    (Some((sa, _)), Some((sb, _))) if sa == sb => Form::Tiles,
                    (Some((sa, _)), Some((sb, _))) => {
                        let small = if sa[0] * sa[1] <= sb[0] * sb[1] {
                            sa
                        } else {
                            sb
                        };
                        if small[1] == 1 && small[0] != 1 {
                            Form::RowBroadcast
                        } else if small[0] == 1 && small[1] != 1 {
                            Form::ColBroadcast
                        } else {
                            Form::Scalar
                        }
                    }
                    _ => Form::Scalar,
                };
                self.elementwise(EventKind::Binary { op: *op, form }, &[*lhs, *rhs], d)?
            }
            Op::Cmp { op, lhs, rhs } => {
                self.elementwise(EventKind::Cmp(*op), &[*lhs, *rhs], DType::Bool)?
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                let d = self.dtype(*on_true)?;
                self.elementwise(EventKind::Select, &[*on_true, *on_false, *cond], d)?
            }
            Op::Unary { op, x } => {
                let d = self.dtype(*x)?;
                self.elementwise(EventKind::Unary(*op), &[*x], d)?
            }
            Op::Cast { x, dtype } => self.elementwise(EventKind::Cast, &[*x], *dtype)?,
            Op::Reduce { op, x } => {
                let (shape, valid, d) = self.tile(*x)?;
                let (s, v) = if op.is_row() {
                    ([shape[0], 1], [valid[0], 1])
                } else {
                    ([1, shape[1]], [1, valid[1]])
                };
                self.emit(EventKind::Reduce(*op), d, v);
                Ext::Tile {
                    shape: s,
                    valid: v,
                    dtype: d.accumulator(),
                }
            }
            Op::Matmul { a, b, acc } => {
                let (sa, va, d) = self.tile(*a)?;
                let (sb, vb, _) = self.tile(*b)?;
                for (x, v) in [(*a, va), (*b, vb)] {
                    let kind = if self.uses.param_of.contains_key(&x) {
                        EventKind::MatmulLoad
                    } else {
                        EventKind::Move
                    };
                    self.emit(kind, d, v);
                }
                let mut valid = [va[0], vb[1]];
                if let Some(c) = acc {
                    let (_, vc, dc) = self.tile(*c)?;
                    valid = [valid[0].min(vc[0]), valid[1].min(vc[1])];
                    if !self.uses.matmul_results.contains(c) {
                        self.emit(EventKind::Move, dc, vc);
                    }
                }
                let k = va[1].min(vb[0]);
                self.emit(EventKind::Matmul { k }, d, valid);
                if self.uses.vector_uses.contains(&r0) {
                    self.emit(EventKind::Move, d.accumulator(), valid);
                }
                Ext::Tile {
                    shape: [sa[0], sb[1]],
                    valid,
                    dtype: d.accumulator(),
                }
            }
            Op::Transpose { x } => {
                let (s, v, d) = self.tile(*x)?;
                self.emit(EventKind::Transpose, d, [v[1], v[0]]);
                Ext::Tile {
                    shape: [s[1], s[0]],
                    valid: [v[1], v[0]],
                    dtype: d,
                }
            }
            Op::Full { shape, dtype, .. } => {
                self.emit(EventKind::Full, *dtype, *shape);
                Ext::Tile {
                    shape: *shape,
                    valid: *shape,
                    dtype: *dtype,
                }
            }
            Op::Iota { shape, dtype } => {
                self.emit(EventKind::Iota, *dtype, *shape);
                Ext::Tile {
                    shape: *shape,
                    valid: *shape,
                    dtype: *dtype,
                }
            }
            Op::RowTopK { x, k } => {
                let (s, v, d) = self.tile(*x)?;
                self.emit(EventKind::RowTopK { n: v[1] }, d, [v[0], v[1]]);
                let vals = Ext::Tile {
                    shape: [s[0], *k],
                    valid: [v[0], *k],
                    dtype: d,
                };
                let idx = Ext::Tile {
                    shape: [s[0], *k],
                    valid: [v[0], *k],
                    dtype: DType::I32,
                };
                if let Some(r1) = results.get(1) {
                    self.set(*r1, idx);
                }
                vals
            }
            Op::Slice { x, region } => {
                let (_, v, d) = self.tile(*x)?;
                let rs = self.index(&region.row_start)?.max(0) as u32;
                let cs = self.index(&region.col_start)?.max(0) as u32;
                Ext::Tile {
                    shape: [region.rows, region.cols],
                    valid: [
                        v[0].saturating_sub(rs).min(region.rows),
                        v[1].saturating_sub(cs).min(region.cols),
                    ],
                    dtype: d,
                }
            }
            Op::VarRead { var } => self
                .vars
                .get(var.index())
                .copied()
                .flatten()
                .ok_or("variable read before it is assigned")?,
            Op::TPop { pipe } => {
                let q = self.pipes.get_mut(pipe.index()).ok_or("bad pipe")?;
                if q.is_empty() {
                    return Err("tpop on an empty pipe".into());
                }
                q.remove(0)
            }
        };
        self.set(r0, ext);
        Ok(())
    }
}

/// The v9 cycles of one event.
pub fn v9_event_cycles(e: &Event) -> u64 {
    let rc = u64::from(e.rows) * u64::from(e.cols);
    match e.kind {
        EventKind::Matmul { k } => rc * u64::from(k),
        EventKind::RowTopK { .. } => 5 * rc,
        EventKind::Reduce(ReduceOp::RowMean) => 2 * rc,
        EventKind::Store { convert: true } => 2 * rc,
        EventKind::Iota => 0,
        _ => rc,
    }
}

/// The `pto_wsp_v9` compute cycles of a task of kernel `k` with the given valid extents.
pub fn v9_cycles(k: &Kernel, extents: &[Option<[u32; 2]>]) -> Result<u64, String> {
    if let Some(n) = k.cost {
        return Ok(n);
    }
    Ok(profile(k, extents)?.iter().map(v9_event_cycles).sum())
}

/// Valid extents of a task's parameters (`None` for scalars).
pub type Extents = Vec<Option<[u32; 2]>>;

/// Memoised [`v9_cycles`] per kernel and valid extents (tasks of one kernel mostly share
/// their extents).
#[derive(Debug, Default)]
pub struct V9CostCache {
    cache: HashMap<(usize, Extents), u64>,
}

impl V9CostCache {
    pub fn new() -> V9CostCache {
        V9CostCache::default()
    }

    /// The v9 cycles of a task of `kernels[id]` with `extents`.
    pub fn cycles(
        &mut self,
        kernels: &[Kernel],
        id: usize,
        extents: &[Option<[u32; 2]>],
    ) -> Result<u64, String> {
        if let Some(c) = self.cache.get(&(id, extents.to_vec())) {
            return Ok(*c);
        }
        let k = kernels
            .get(id)
            .ok_or_else(|| format!("kernel #{id} does not exist"))?;
        let c = v9_cycles(k, extents)?;
        self.cache.insert((id, extents.to_vec()), c);
        Ok(c)
    }
}

/// The PTO-ISA instruction an event corresponds to (`TADD`, `TROWEXPANDMUL`, `TMATMUL`,
/// `TLOAD`, ...): the key of an architecture model's cost table.
pub fn isa_name(e: &Event) -> String {
    let bin = |op: BinaryOp| match op {
        BinaryOp::Add => "ADD",
        BinaryOp::Sub => "SUB",
        BinaryOp::Mul => "MUL",
        BinaryOp::Div => "DIV",
        BinaryOp::Rem => "REM",
        BinaryOp::Max => "MAX",
        BinaryOp::Min => "MIN",
        BinaryOp::Pow => "POW",
        BinaryOp::And => "AND",
        BinaryOp::Or => "OR",
    };
    match e.kind {
        EventKind::ParamLoad(_) | EventKind::MatmulLoad => "TLOAD".into(),
        EventKind::Move => "TMOV".into(),
        EventKind::Store { .. } => "TSTORE".into(),
        EventKind::Binary { op, form } => match form {
            Form::Tiles => format!("T{}", bin(op)),
            Form::Scalar => format!("T{}S", bin(op)),
            Form::RowBroadcast => format!("TROWEXPAND{}", bin(op)),
            Form::ColBroadcast => format!("TCOLEXPAND{}", bin(op)),
        },
        EventKind::Cmp(_) => "TCMP".into(),
        EventKind::Select => "TSEL".into(),
        EventKind::Unary(op) => format!("T{}", op.name().to_uppercase()),
        EventKind::Cast => "TCVT".into(),
        EventKind::Reduce(op) => format!("T{}", format!("{op:?}").to_uppercase()),
        EventKind::Matmul { .. } => "TMATMUL".into(),
        EventKind::Transpose => "TTRANS".into(),
        EventKind::Full => "TEXPANDS".into(),
        EventKind::Iota => "TIOTA".into(),
        EventKind::RowTopK { .. } => "TSORT32".into(),
    }
}

/// A task's cost under an architecture model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskCost {
    /// Cycles on the cores: vector ops, cube matmuls and in-core moves (for `pto_wsp_v9`,
    /// everything v9 counted, loads and stores included: [`v9_cycles`]).
    pub compute: u64,
    /// Bytes the task loads from global memory (its parameter tiles; the runtime prices the
    /// transfers with the model's DMA table).
    pub load_bytes: u64,
    /// Bytes the task stores to global memory.
    pub store_bytes: u64,
}

/// The cost of a task of a kernel that declares its cycles (`cost: n`): those cycles, and its
/// tile parameters' valid extents as the bytes it loads (`in`, `inout`) and stores (`out`,
/// `inout`).
fn declared_cost(k: &Kernel, cycles: u64, extents: &[Option<[u32; 2]>]) -> TaskCost {
    let mut c = TaskCost {
        compute: cycles,
        ..TaskCost::default()
    };
    for (id, dir, tile, _) in k.tile_params() {
        let [r, cols] = match extents.get(id.index()).copied().flatten() {
            Some(v) => [v[0].min(tile.shape[0]), v[1].min(tile.shape[1])],
            None => tile.shape,
        };
        let bytes = u64::from(r) * u64::from(cols) * tile.dtype.size_bytes() as u64;
        if dir.reads() {
            c.load_bytes = c.load_bytes.saturating_add(bytes);
        }
        if dir.writes() {
            c.store_bytes = c.store_bytes.saturating_add(bytes);
        }
    }
    c
}

/// The cost of a task of kernel `k` with the given valid extents under `arch`: exactly
/// [`v9_cycles`] for a model with v9 timing; otherwise each event priced by the model —
/// `matmul` by [`wsp_arch::Arch::matmul_cycles`], every other operation and in-core move by
/// [`wsp_arch::Arch::op_cycles`] under its PTO-ISA name ([`isa_name`]; `rowmean` as
/// `TROWSUM` + `TDIVS`, a converting store adds a `TCVT`), loads and stores as bytes.
pub fn task_cost(
    arch: &wsp_arch::Arch,
    k: &Kernel,
    extents: &[Option<[u32; 2]>],
) -> Result<TaskCost, String> {
    if let Some(n) = k.cost {
        return Ok(declared_cost(k, n, extents));
    }
    let events = profile(k, extents)?;
    let mut c = TaskCost::default();
    for e in &events {
        let (r, cols) = (u64::from(e.rows), u64::from(e.cols));
        let bytes = r * cols * e.dtype.size_bytes() as u64;
        match e.kind {
            EventKind::ParamLoad(_) | EventKind::MatmulLoad => {
                c.load_bytes = c.load_bytes.saturating_add(bytes)
            }
            EventKind::Store { .. } => c.store_bytes = c.store_bytes.saturating_add(bytes),
            _ => {}
        }
    }
    if arch.timing == wsp_arch::TimingSemantics::V9 {
        c.compute = events.iter().map(v9_event_cycles).sum();
        return Ok(c);
    }
    let dt = |d: DType| d.name();
    let op = |name: &str, d: DType, r: u64, cols: u64| {
        arch.op_cycles(name, dt(d), r, cols)
            .map_err(|e| format!("kernel `{}`: {e}", k.name))
    };
    for e in &events {
        let (r, cols) = (u64::from(e.rows), u64::from(e.cols));
        // Saturating: a model with absurd costs prices a task at `u64::MAX`, which the runtime
        // refuses, instead of wrapping round to a plausible small number.
        let cycles = match e.kind {
            EventKind::ParamLoad(_)
            | EventKind::MatmulLoad
            | EventKind::Store { convert: false } => 0,
            EventKind::Store { convert: true } => op("TCVT", e.dtype, r, cols)?,
            EventKind::Matmul { k: kk } => arch
                .matmul_cycles(r, u64::from(kk), cols, dt(e.dtype))
                .map_err(|err| format!("kernel `{}`: {err}", k.name))?,
            EventKind::Reduce(ReduceOp::RowMean) => op("TROWSUM", e.dtype, r, cols)?
                .saturating_add(op("TDIVS", e.dtype.accumulator(), r, 1)?),
            _ => op(&isa_name(e), e.dtype, r, cols)?,
        };
        c.compute = c.compute.saturating_add(cycles);
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::ScalarValue;
    use crate::typing::KernelBuilder;

    const F32: DType = DType::F32;

    fn binary_kernel(
        n: u32,
        f: impl FnOnce(&mut KernelBuilder, ValueId, ValueId) -> ValueId,
    ) -> Kernel {
        let mut kb = KernelBuilder::new("k");
        let t = TileType::new(F32, n, n);
        let pa = kb.tile_param("a", Direction::In, t);
        let pb = kb.tile_param("b", Direction::In, t);
        let pc = kb.tile_param("c", Direction::Out, t);
        let a = kb.load(pa).unwrap();
        let b = kb.load(pb).unwrap();
        let c = f(&mut kb, a, b);
        kb.store(pc, c);
        kb.finish().unwrap()
    }

    #[test]
    fn v9_matmul_16_and_add_32_match_published_figures() {
        let k = binary_kernel(16, |kb, a, b| {
            kb.op(Op::Matmul { a, b, acc: None }).unwrap()
        });
        assert_eq!(v9_cycles(&k, &[None, None, None]).unwrap(), 256 * 3 + 4096);
        assert_eq!(v9_cycles(&k, &[None, None, None]).unwrap(), 4864);
        let k = binary_kernel(32, |kb, a, b| kb.binary(BinaryOp::Add, a, b).unwrap());
        assert_eq!(v9_cycles(&k, &[None, None, None]).unwrap(), 4096);
    }

    #[test]
    fn v9_matmul_feeding_an_op_costs_a_move() {
        // c = matmul(a, b) * 0.5 on 8×8: 3·64 + 512 + 64 (move) + 64 (mul).
        let k = binary_kernel(8, |kb, a, b| {
            let m = kb.op(Op::Matmul { a, b, acc: None }).unwrap();
            let h = kb.constant(ScalarValue::Float(0.5), F32).unwrap();
            kb.binary(BinaryOp::Mul, m, h).unwrap()
        });
        assert_eq!(
            v9_cycles(&k, &[None, None, None]).unwrap(),
            192 + 512 + 64 + 64
        );
    }

    #[test]
    fn v9_rmsnorm_16x16_and_partial_extents() {
        // v9 e2e_rmsnorm: out = x * rsqrt(rowmean(x*x)): load 256; x*x 256; rowmean 2·16 (sum
        // and divide); rsqrt 16; x*r 256; store 256 → 1072.
        let mut kb = KernelBuilder::new("rmsnorm");
        let t = TileType::new(F32, 16, 16);
        let px = kb.partial_tile_param("x", Direction::In, t, [true, false]);
        let po = kb.partial_tile_param("out", Direction::Out, t, [true, false]);
        let x = kb.load(px).unwrap();
        let sq = kb.binary(BinaryOp::Mul, x, x).unwrap();
        let m = kb
            .op(Op::Reduce {
                op: ReduceOp::RowMean,
                x: sq,
            })
            .unwrap();
        let r = kb.unary(UnaryOp::Rsqrt, m).unwrap();
        let y = kb.binary(BinaryOp::Mul, x, r).unwrap();
        kb.store(po, y);
        let k = kb.finish().unwrap();
        assert_eq!(v9_cycles(&k, &[None, None]).unwrap(), 1072);
        // With 4 valid rows: 64 + 64 + 8 + 4 + 64 + 64.
        assert_eq!(v9_cycles(&k, &[Some([4, 16]), Some([4, 16])]).unwrap(), 268);
    }

    #[test]
    fn v9_attention_tile_matches_1680() {
        // s = matmul(q, k_t) * scale; e = exp(s - rowmax(s)); out = matmul(e / rowsum(e), v)
        // on 8×8: loads of q, k_t into the cube 128; matmul 512; move to vector 64; mul 64;
        // rowmax 8; sub 64; exp 64; rowsum 8; div 64; move of the computed operand 64; load of
        // v 64; matmul 512; store 64 = 1680.
        let mut kb = KernelBuilder::new("attention_tile");
        let t = TileType::new(F32, 8, 8);
        let pq = kb.tile_param("q", Direction::In, t);
        let pk = kb.tile_param("k_t", Direction::In, t);
        let pv = kb.tile_param("v", Direction::In, t);
        let po = kb.tile_param("out", Direction::Out, t);
        let q = kb.load(pq).unwrap();
        let kt = kb.load(pk).unwrap();
        let v = kb.load(pv).unwrap();
        let s = kb
            .op(Op::Matmul {
                a: q,
                b: kt,
                acc: None,
            })
            .unwrap();
        let c = kb
            .constant(ScalarValue::Float(1.0 / 8f64.sqrt()), F32)
            .unwrap();
        let s = kb.binary(BinaryOp::Mul, s, c).unwrap();
        let mx = kb
            .op(Op::Reduce {
                op: ReduceOp::RowMax,
                x: s,
            })
            .unwrap();
        let d = kb.binary(BinaryOp::Sub, s, mx).unwrap();
        let e = kb.unary(UnaryOp::Exp, d).unwrap();
        let sum = kb
            .op(Op::Reduce {
                op: ReduceOp::RowSum,
                x: e,
            })
            .unwrap();
        let w = kb.binary(BinaryOp::Div, e, sum).unwrap();
        let o = kb
            .op(Op::Matmul {
                a: w,
                b: v,
                acc: None,
            })
            .unwrap();
        kb.store(po, o);
        let k = kb.finish().unwrap();
        assert_eq!(v9_cycles(&k, &[None, None, None, None]).unwrap(), 1680);
    }

    #[test]
    fn v9_gemm_tile_with_inout_accumulator_matches_bgemm() {
        // c_tile += matmul(a, b) with f16 a, b and f32 inout c on 16×16: cube loads 512;
        // load of c 256; matmul 4096; move to vector 256; add 256; store 256 = 5632
        // (v9 bgemm: 275968 = 49 · 5632).
        let mut kb = KernelBuilder::new("gemm_tile");
        let h = TileType::new(DType::F16, 16, 16);
        let pa = kb.tile_param("a", Direction::In, h);
        let pb = kb.tile_param("b", Direction::In, h);
        let pc = kb.tile_param("c", Direction::InOut, TileType::new(F32, 16, 16));
        let a = kb.load(pa).unwrap();
        let b = kb.load(pb).unwrap();
        let c = kb.load(pc).unwrap();
        let m = kb.op(Op::Matmul { a, b, acc: None }).unwrap();
        let s = kb.binary(BinaryOp::Add, c, m).unwrap();
        kb.store(pc, s);
        let k = kb.finish().unwrap();
        assert_eq!(v9_cycles(&k, &[None, None, None]).unwrap(), 5632);
        // The same with the accumulator form: the inout tile is loaded and moved into the cube.
        let mut kb = KernelBuilder::new("gemm_acc");
        let pa = kb.tile_param("a", Direction::In, h);
        let pb = kb.tile_param("b", Direction::In, h);
        let pc = kb.tile_param("c", Direction::InOut, TileType::new(F32, 16, 16));
        let a = kb.load(pa).unwrap();
        let b = kb.load(pb).unwrap();
        let c = kb.load(pc).unwrap();
        let m = kb.op(Op::Matmul { a, b, acc: Some(c) }).unwrap();
        kb.store(pc, m);
        let k = kb.finish().unwrap();
        assert_eq!(
            v9_cycles(&k, &[None, None, None]).unwrap(),
            512 + 256 + 256 + 4096 + 256
        );
    }

    #[test]
    fn v9_llama_mlp_tile() {
        // h = matmul(x, w1); r = max(h, 0); out = matmul(r, w2) with x 8×8, w1 8×16, w2 16×8:
        // loads 64 + 128; matmul 1024; move 128; max 128; move 128; load 128; matmul 1024;
        // store 64 = 2816 (with v9's attention 1680 and residual add 256: llama's 4752).
        let mut kb = KernelBuilder::new("mlp_tile");
        let px = kb.tile_param("x", Direction::In, TileType::new(F32, 8, 8));
        let p1 = kb.tile_param("w1", Direction::In, TileType::new(F32, 8, 16));
        let p2 = kb.tile_param("w2", Direction::In, TileType::new(F32, 16, 8));
        let po = kb.tile_param("out", Direction::Out, TileType::new(F32, 8, 8));
        let x = kb.load(px).unwrap();
        let w1 = kb.load(p1).unwrap();
        let w2 = kb.load(p2).unwrap();
        let h = kb
            .op(Op::Matmul {
                a: x,
                b: w1,
                acc: None,
            })
            .unwrap();
        let z = kb.constant(ScalarValue::Float(0.0), F32).unwrap();
        let r = kb.binary(BinaryOp::Max, h, z).unwrap();
        let y = kb
            .op(Op::Matmul {
                a: r,
                b: w2,
                acc: None,
            })
            .unwrap();
        kb.store(po, y);
        let k = kb.finish().unwrap();
        assert_eq!(v9_cycles(&k, &[None; 4]).unwrap(), 2816);
    }

    #[test]
    fn cost_cache_memoises_per_extent() {
        let k = binary_kernel(16, |kb, a, b| {
            kb.op(Op::Matmul { a, b, acc: None }).unwrap()
        });
        let ks = vec![k];
        let mut c = V9CostCache::new();
        assert_eq!(c.cycles(&ks, 0, &[None, None, None]).unwrap(), 4864);
        assert_eq!(c.cycles(&ks, 0, &[None, None, None]).unwrap(), 4864);
        // 8 valid rows of a: 8·16 + 256 loads, 8·16·16 matmul, 8·16 store.
        let part = [Some([8, 16]), None, Some([8, 16])];
        assert_eq!(c.cycles(&ks, 0, &part).unwrap(), 128 + 256 + 2048 + 128);
        assert!(c.cycles(&ks, 1, &part).is_err());
    }

    #[test]
    fn arch_models_price_profiles() {
        let v9 = wsp_arch::Arch::builtin("pto_wsp_v9").unwrap();
        let b910 = wsp_arch::Arch::builtin("ascend910b").unwrap();
        let mm = binary_kernel(16, |kb, a, b| {
            kb.op(Op::Matmul { a, b, acc: None }).unwrap()
        });
        let add = binary_kernel(32, |kb, a, b| kb.binary(BinaryOp::Add, a, b).unwrap());
        let ext = [None, None, None];
        assert_eq!(task_cost(&v9, &mm, &ext).unwrap().compute, 4864);
        assert_eq!(task_cost(&v9, &add, &ext).unwrap().compute, 4096);
        // 910B: TADD fp32 = round(0.0330 · 1024 + 24) = 58; loads 2 · 4 KiB, store 4 KiB.
        let c = task_cost(&b910, &add, &ext).unwrap();
        assert_eq!(
            c,
            TaskCost {
                compute: 58,
                load_bytes: 8192,
                store_bytes: 4096
            }
        );
        // 910B cube: 6 + 2 · ⌈16/16⌉ · ⌈16/8⌉ · ⌈16/16⌉ = 10 for fp32.
        let c = task_cost(&b910, &mm, &ext).unwrap();
        assert_eq!(
            c,
            TaskCost {
                compute: 10,
                load_bytes: 2048,
                store_bytes: 1024
            }
        );
        // An op the table lacks uses the model's fallback; a dtype the cube lacks is an error.
        let ex = binary_kernel(8, |kb, a, _| kb.unary(UnaryOp::Exp, a).unwrap());
        assert!(task_cost(&b910, &ex, &[None, None, None]).unwrap().compute > 0);
        let mut kb = KernelBuilder::new("mm64");
        let t = TileType::new(DType::F64, 4, 4);
        let pa = kb.tile_param("a", Direction::In, t);
        let po = kb.tile_param("o", Direction::Out, t);
        let a = kb.load(pa).unwrap();
        let m = kb.op(Op::Matmul { a, b: a, acc: None }).unwrap();
        kb.store(po, m);
        let k64 = kb.finish().unwrap();
        let e = task_cost(&b910, &k64, &[None, None]).unwrap_err();
        assert!(e.contains("mm64") && e.contains("f64"), "{e}");
    }

    #[test]
    fn isa_names_follow_pto_isa() {
        let k = binary_kernel(4, |kb, a, b| {
            let r = kb
                .op(Op::Reduce {
                    op: ReduceOp::RowMax,
                    x: a,
                })
                .unwrap();
            let s = kb.binary(BinaryOp::Sub, a, r).unwrap();
            let c = kb.constant(ScalarValue::Float(2.0), F32).unwrap();
            let m = kb.binary(BinaryOp::Mul, s, c).unwrap();
            kb.binary(BinaryOp::Add, m, b).unwrap()
        });
        let names: Vec<String> = profile(&k, &[None, None, None])
            .unwrap()
            .iter()
            .map(isa_name)
            .collect();
        assert_eq!(
            names,
            vec![
                "TLOAD",
                "TLOAD",
                "TROWMAX",
                "TROWEXPANDSUB",
                "TMULS",
                "TADD",
                "TSTORE"
            ]
        );
    }

    #[test]
    fn v9_profile_lists_loads_moves_and_stores() {
        let k = binary_kernel(4, |kb, a, b| {
            let m = kb.op(Op::Matmul { a, b, acc: None }).unwrap();
            kb.op(Op::Cast { x: m, dtype: F32 }).unwrap()
        });
        let kinds: Vec<EventKind> = profile(&k, &[None, None, None])
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect();
        assert_eq!(
            kinds,
            vec![
                EventKind::MatmulLoad,
                EventKind::MatmulLoad,
                EventKind::Matmul { k: 4 },
                EventKind::Move,
                EventKind::Cast,
                EventKind::Store { convert: false },
            ]
        );
    }

    #[test]
    fn v9_sort_and_loops() {
        // v9 lightning indexer: top-8 indices of a 1×32 row: load 32; sort 5·32; store 8 = 200.
        let mut kb = KernelBuilder::new("topk");
        let px = kb.tile_param("x", Direction::In, TileType::new(F32, 1, 32));
        let pv = kb.tile_param("v", Direction::Out, TileType::new(F32, 1, 8));
        let pi = kb.tile_param("i", Direction::Out, TileType::new(DType::I32, 1, 8));
        let x = kb.load(px).unwrap();
        let r = kb.op_n(Op::RowTopK { x, k: 8 }).unwrap();
        kb.store(pv, r[0]);
        kb.store(pi, r[1]);
        let k = kb.finish().unwrap();
        assert_eq!(
            v9_cycles(&k, &[None, None, None]).unwrap(),
            32 + 8 + 8 + 160
        );
        // A loop of 3 adds on 2×2: load 4, 3 adds 12, store 4.
        let mut kb = KernelBuilder::new("loop");
        let t = TileType::new(F32, 2, 2);
        let px = kb.tile_param("x", Direction::In, t);
        let po = kb.tile_param("o", Direction::Out, t);
        let acc = kb.var("acc", Type::Tile(t));
        let x = kb.load(px).unwrap();
        kb.stmt(Stmt::Assign {
            var: acc,
            region: None,
            value: x,
        });
        kb.begin_for(0, 3);
        let cur = kb.op(Op::VarRead { var: acc }).unwrap();
        let n = kb.binary(BinaryOp::Add, cur, x).unwrap();
        kb.stmt(Stmt::Assign {
            var: acc,
            region: None,
            value: n,
        });
        kb.end_for().unwrap();
        let fin = kb.op(Op::VarRead { var: acc }).unwrap();
        kb.store(po, fin);
        let k = kb.finish().unwrap();
        assert_eq!(v9_cycles(&k, &[None, None]).unwrap(), 8 + 12);
    }
}
