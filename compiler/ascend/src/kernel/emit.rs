//! The translation unit of one kernel: tile declarations, statements and ops as PTO-ISA calls.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

use wsp_backend::BackendDiagnostic;
use wsp_ir::kernel::*;
use wsp_ir::DType;

use super::cores;
use super::plan::{self, Loc, Storage};
use super::scalar::elem_ty;
use super::{entry, Arch, Buffers, ErrorCode, Unit};

/// A C identifier made of `name` (other characters become `_`).
pub fn ident(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

pub(super) type R<T> = Result<T, BackendDiagnostic>;

/// A tile in C++: its object name, storage and address expression.
#[derive(Clone, Debug)]
pub(super) struct CTile {
    pub name: String,
    pub st: Storage,
    pub addr: String,
    /// Its logical (unpadded) shape.
    pub shape: [u32; 2],
}

impl CTile {
    pub fn vr(&self) -> String {
        format!("{}.GetValidRow()", self.name)
    }
    pub fn vc(&self) -> String {
        format!("{}.GetValidCol()", self.name)
    }
}

pub(super) struct Cg<'k> {
    pub k: &'k Kernel,
    pub body: String,
    pub ind: usize,
    pub types: BTreeMap<Storage, String>,
    /// Unified-buffer offsets of tile values (relative to `kVal`).
    pub val_off: HashMap<ValueId, u64>,
    /// Unified-buffer offsets of tile variables (relative to `kVar`).
    pub var_off: HashMap<VarId, u64>,
    /// Per pipe: its slot ring in global memory.
    pub pipes: Vec<PipeRing>,
    /// The pipe of each slot variable (`let slot = talloc(pipe)`).
    pub slot_of: HashMap<VarId, PipeId>,
    /// The slot tensor of each `tpop` result, for its `tfree`.
    pub popped: HashMap<ValueId, String>,
    /// Scratch in use by the current op and the peak, per location.
    pub scratch: BTreeMap<Loc, (u64, u64)>,
    pub tmp: usize,
    /// The pipe of the last emitted instruction (for set_flag / wait_flag).
    pub last_pipe: Option<&'static str>,
    pub tiles: HashMap<ValueId, CTile>,
    pub var_tiles: HashMap<VarId, CTile>,
    pub uses_matmul: bool,
    pub uses_vector: bool,
    pub sections: HashSet<&'static str>,
}

/// A pipe as a ring of slots in global memory (PTO-ISA's slot model): each slot holds the
/// tile row-major and dense, then a 32-byte trailer with its valid rows and columns.
#[derive(Clone, Debug)]
pub(super) struct PipeRing {
    pub elem: TileType,
    pub slots: u32,
    /// Offset of the trailer in a slot.
    pub trailer: u64,
    pub slot_bytes: u64,
    /// Its cores, or `None` for a pipe no statement uses.
    pub route: Option<cores::PipeRoute>,
}

impl PipeRing {
    fn new(p: &Pipe, route: Option<cores::PipeRoute>) -> PipeRing {
        let data = u64::from(p.elem.rows())
            .saturating_mul(u64::from(p.elem.cols()))
            .saturating_mul(p.elem.dtype.size_bytes() as u64);
        let trailer = data.div_ceil(32).saturating_mul(32);
        PipeRing {
            elem: p.elem,
            slots: p.slots.max(1),
            trailer,
            slot_bytes: trailer.saturating_add(32),
            route,
        }
    }
}

impl<'k> Cg<'k> {
    pub fn err(&self, msg: impl Into<String>) -> BackendDiagnostic {
        BackendDiagnostic::error(
            format!("kernel `{}`: {}", self.k.name, msg.into()),
            self.k.at.clone(),
        )
    }

    pub fn line(&mut self, s: impl AsRef<str>) {
        for _ in 0..self.ind {
            self.body.push_str("    ");
        }
        self.body.push_str(s.as_ref());
        self.body.push('\n');
    }

    /// Orders the instruction after the previous one when they run on different pipes.
    pub fn on_pipe(&mut self, p: &'static str) {
        if let Some(prev) = self.last_pipe {
            if prev != p {
                self.line(format!("set_flag({prev}, {p}, EVENT_ID0);"));
                self.line(format!("wait_flag({prev}, {p}, EVENT_ID0);"));
            }
        }
        self.last_pipe = Some(p);
    }

    pub fn barrier(&mut self) {
        self.line("pipe_barrier(PIPE_ALL);");
        self.last_pipe = None;
    }

    pub fn type_name(&mut self, st: Storage) -> String {
        if let Some(n) = self.types.get(&st) {
            return n.clone();
        }
        let n = format!("T{}", self.types.len());
        self.types.insert(st, n.clone());
        n
    }

    pub fn fresh(&mut self, p: &str) -> String {
        self.tmp += 1;
        format!("{p}{}", self.tmp)
    }

    pub fn value_type(&self, v: ValueId) -> R<Type> {
        self.k
            .value_type(v)
            .ok_or_else(|| self.err(format!("value %{} does not exist", v.0)))
    }

    pub fn tile_of(&self, v: ValueId) -> R<CTile> {
        self.tiles.get(&v).cloned().ok_or_else(|| {
            self.err(format!(
                "value %{} is not a tile defined before its use",
                v.0
            ))
        })
    }

    pub fn scalar_of(&self, v: ValueId) -> R<String> {
        match self.value_type(v)? {
            Type::Scalar { .. } => Ok(format!("s{}", v.0)),
            Type::Tile(_) => Err(self.err(format!("value %{} is a tile, expected a scalar", v.0))),
        }
    }

    /// Declares a tile object `name` of `st` with a valid extent at `addr`.
    pub fn declare(&mut self, name: &str, st: Storage, vr: &str, vc: &str, addr: &str) {
        let ty = self.type_name(st);
        self.line(format!("{ty} {name}({vr}, {vc});"));
        self.line(format!("TASSIGN({name}, {addr});"));
    }

    /// A scratch tile of logical type `t` in `loc`, live until the end of the current op.
    pub fn temp(&mut self, loc: Loc, t: TileType, vr: &str, vc: &str) -> CTile {
        let st = Storage::of(loc, t);
        let e = self.scratch.entry(loc).or_insert((0, 0));
        let off = e.0.div_ceil(loc.align()) * loc.align();
        e.0 = off + st.footprint();
        e.1 = e.1.max(e.0);
        let addr = if loc == Loc::Vec {
            format!("kScr + 0x{off:x}")
        } else {
            format!("0x{off:x}")
        };
        let name = self.fresh("t");
        self.declare(&name, st, vr, vc, &addr);
        CTile {
            name,
            st,
            addr,
            shape: t.shape,
        }
    }

    /// Declares the tile of value `v` (of logical type `t`) in its unified-buffer slot.
    pub fn def_tile(&mut self, v: ValueId, t: TileType, vr: &str, vc: &str) -> R<CTile> {
        let off = *self
            .val_off
            .get(&v)
            .ok_or_else(|| self.err(format!("value %{} has no buffer", v.0)))?;
        let st = Storage::of(Loc::Vec, t);
        let name = format!("v{}", v.0);
        let addr = format!("kVal + 0x{off:x}");
        self.declare(&name, st, vr, vc, &addr);
        let ct = CTile {
            name,
            st,
            addr,
            shape: t.shape,
        };
        self.tiles.insert(v, ct.clone());
        Ok(ct)
    }

    /// A tile of the same storage and address as `t` with another valid extent.
    pub fn alias(&mut self, t: &CTile, vr: &str, vc: &str) -> CTile {
        let name = self.fresh("a");
        self.declare(&name, t.st, vr, vc, &t.addr);
        CTile { name, ..t.clone() }
    }

    /// An affine index as a C++ `int64_t` expression.
    pub fn index(&self, ix: &KIndex) -> String {
        let lit = |c: i64| {
            if c == i64::MIN {
                "INT64_MIN".to_string()
            } else {
                format!("(int64_t){c}")
            }
        };
        let mut s = lit(ix.constant);
        for (v, c) in &ix.terms {
            let _ = write!(s, " + s{} * {}", v.0, lit(*c));
        }
        format!("({s})")
    }

    /// Checks a region against a static shape at run time; returns (row_start, col_start)
    /// variable names.
    pub fn region(&mut self, reg: &Region, shape: [u32; 2]) -> (String, String) {
        let r0 = self.fresh("r");
        let c0 = self.fresh("c");
        let (ri, ci) = (self.index(&reg.row_start), self.index(&reg.col_start));
        self.line(format!("const int64_t {r0} = {ri}, {c0} = {ci};"));
        self.line(format!(
            "if ({r0} < 0 || {r0} + {} > {} || {c0} < 0 || {c0} + {} > {}) return {};",
            reg.rows,
            shape[0],
            reg.cols,
            shape[1],
            ErrorCode::Body as i32
        ));
        (r0, c0)
    }

    pub fn block(&mut self, stmts: &[Stmt]) -> R<()> {
        for s in wsp_ir::interp::exec_order(stmts) {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> R<()> {
        self.scratch.values_mut().for_each(|e| e.0 = 0);
        match s {
            Stmt::Op { results, op } => self.op(results, op),
            Stmt::Store {
                param,
                region,
                value,
            } => self.store(*param, region.as_ref(), *value),
            Stmt::Assign { var, region, value } => self.assign(*var, region.as_ref(), *value),
            Stmt::For {
                index,
                start,
                end,
                body,
            } => {
                let i = format!("s{}", index.0);
                self.line(format!(
                    "for (int64_t {i} = {start}; {i} < {end}; ++{i}) {{"
                ));
                self.ind += 1;
                self.barrier();
                self.block(body)?;
                self.ind -= 1;
                self.line("}");
                self.barrier();
                Ok(())
            }
            Stmt::Section { kind, body } => {
                let k = match kind {
                    SectionKind::Cube => "cube",
                    SectionKind::Vector => "vector",
                };
                self.sections.insert(k);
                self.line(format!("{{ /* {k} section */"));
                self.ind += 1;
                self.block(body)?;
                self.ind -= 1;
                self.line("}");
                Ok(())
            }
            Stmt::TAlloc { pipe, slot } => self.talloc(*pipe, *slot),
            Stmt::TPush { pipe, slot } => self.tpush(*pipe, *slot),
            Stmt::TFree { pipe, value } => self.tfree(*pipe, *value),
        }
    }

    fn param_tile(&self, p: ParamId) -> R<(Direction, TileType, [bool; 2])> {
        match self.k.params.get(p.index()).map(|p| &p.kind) {
            Some(ParamKind::Tile { dir, tile, partial }) => Ok((*dir, *tile, *partial)),
            _ => Err(self.err(format!("parameter #{} is not a tile", p.0))),
        }
    }

    fn store(&mut self, param: ParamId, region: Option<&Region>, value: ValueId) -> R<()> {
        let (dir, pt, _) = self.param_tile(param)?;
        if !dir.writes() {
            return Err(self.err(format!(
                "store to `{}`, which is not an out or inout tile",
                self.k.params[param.index()].name
            )));
        }
        let src = self.tile_of(value)?;
        let src_t = match self.value_type(value)? {
            Type::Tile(t) => t,
            Type::Scalar { .. } => return Err(self.err("store of a scalar")),
        };
        let (shape, r0, c0) = match region {
            Some(reg) => {
                let (r0, c0) = self.region(reg, pt.shape);
                ([reg.rows, reg.cols], r0, c0)
            }
            None => (pt.shape, "0".to_string(), "0".to_string()),
        };
        if shape != src_t.shape {
            return Err(self.err(format!(
                "store of a [{}, {}] tile into a [{}, {}] destination",
                src_t.shape[0], src_t.shape[1], shape[0], shape[1]
            )));
        }
        let src = if src_t.dtype != pt.dtype {
            let t = self.temp(
                Loc::Vec,
                TileType::new(pt.dtype, shape[0], shape[1]),
                &src.vr(),
                &src.vc(),
            );
            self.convert(&t, &src, src_t.dtype, pt.dtype);
            t
        } else {
            src
        };
        let p = param.0;
        let vr = format!(
            "std::min<int64_t>(std::min<int64_t>({}, {}), std::max<int64_t>(p{p}_rows - {r0}, 0))",
            src.vr(),
            shape[0]
        );
        let vc = format!(
            "std::min<int64_t>(std::min<int64_t>({}, {}), std::max<int64_t>(p{p}_cols - {c0}, 0))",
            src.vc(),
            shape[1]
        );
        let (nr, nc) = (self.fresh("n"), self.fresh("n"));
        self.line(format!("const int64_t {nr} = {vr}, {nc} = {vc};"));
        self.line(format!("if ({nr} > 0 && {nc} > 0) {{"));
        self.ind += 1;
        let g = self.fresh("g");
        let e = elem_ty(pt.dtype);
        self.line(format!(
            "GlobalTensor<{e}, Shape<1, 1, 1, DYNAMIC, DYNAMIC>, Stride<1, 1, 1, DYNAMIC, DYNAMIC>> {g}(p{p}_base + {r0} * p{p}_rs + {c0} * p{p}_cs, Shape<1, 1, 1, DYNAMIC, DYNAMIC>(1, 1, 1, {nr}, {nc}), Stride<1, 1, 1, DYNAMIC, DYNAMIC>(1, 1, 1, p{p}_rs, p{p}_cs));"
        ));
        let a = self.alias(&src, &format!("(unsigned){nr}"), &format!("(unsigned){nc}"));
        self.on_pipe("PIPE_MTE3");
        self.line(format!("TSTORE({g}, {});", a.name));
        self.ind -= 1;
        self.line("}");
        Ok(())
    }

    fn assign(&mut self, var: VarId, region: Option<&Region>, value: ValueId) -> R<()> {
        if let Some(pipe) = self.slot_pipe(var) {
            return self.assign_slot(var, pipe, region, value);
        }
        let info = self
            .k
            .vars
            .get(var.index())
            .ok_or_else(|| self.err(format!("variable #{} does not exist", var.0)))?;
        let vty = info.ty;
        match (vty, region) {
            (Type::Scalar { .. }, None) => {
                let s = self.scalar_of(value)?;
                self.line(format!("x{} = {s};", var.0));
                Ok(())
            }
            (Type::Scalar { .. }, Some(_)) => Err(self.err(format!(
                "sub-range assignment to scalar variable `{}`",
                info.name
            ))),
            (Type::Tile(tt), reg) => {
                let dst = self
                    .var_tiles
                    .get(&var)
                    .cloned()
                    .ok_or_else(|| self.err(format!("variable `{}` has no tile", info.name)))?;
                let src = self.tile_of(value)?;
                let st = self.value_type(value)?;
                match reg {
                    None => {
                        if st != Type::Tile(tt) {
                            return Err(self.err(format!(
                                "assignment of a value of another type to `{}`",
                                info.name
                            )));
                        }
                        self.line(format!("{}.SetValidRow({});", dst.name, src.vr()));
                        self.line(format!("{}.SetValidCol({});", dst.name, src.vc()));
                        self.on_pipe("PIPE_V");
                        self.line(format!("TMOV({}, {});", dst.name, src.name));
                    }
                    Some(reg) => {
                        if st != Type::Tile(TileType::new(tt.dtype, reg.rows, reg.cols)) {
                            return Err(self.err(format!(
                                "assignment to a [{}, {}] region of `{}` of a value of another type",
                                reg.rows, reg.cols, info.name
                            )));
                        }
                        let (r0, c0) = self.region(reg, tt.shape);
                        let vr = format!(
                            "(unsigned)std::min<int64_t>({}, std::max<int64_t>((int64_t){} - {r0}, 0))",
                            src.vr(),
                            dst.vr()
                        );
                        let vc = format!(
                            "(unsigned)std::min<int64_t>({}, std::max<int64_t>((int64_t){} - {c0}, 0))",
                            src.vc(),
                            dst.vc()
                        );
                        let a = self.alias(&src, &vr, &vc);
                        self.on_pipe("PIPE_V");
                        self.line(format!(
                            "TINSERT({}, {}, (uint16_t){r0}, (uint16_t){c0});",
                            dst.name, a.name
                        ));
                    }
                }
                Ok(())
            }
        }
    }

    fn ring(&self, pipe: PipeId) -> R<PipeRing> {
        self.pipes
            .get(pipe.index())
            .cloned()
            .ok_or_else(|| self.err(format!("pipe #{} does not exist", pipe.0)))
    }

    /// A dense row-major `[nr, nc]` view at `ptr` of a slot with `cols` columns.
    fn slot_view(&mut self, e: &str, ptr: &str, nr: &str, nc: &str, cols: u32) -> String {
        let g = self.fresh("g");
        self.line(format!(
            "GlobalTensor<{e}, Shape<1, 1, 1, DYNAMIC, DYNAMIC>, Stride<1, 1, 1, DYNAMIC, DYNAMIC>> {g}({ptr}, Shape<1, 1, 1, DYNAMIC, DYNAMIC>(1, 1, 1, {nr}, {nc}), Stride<1, 1, 1, DYNAMIC, DYNAMIC>(1, 1, 1, {cols}, 1));"
        ));
        g
    }

    /// `return 6` unless the slot tensor `x` is bound to a slot.
    fn bound(&mut self, x: &str) {
        self.line(format!(
            "if ({x}.data() == nullptr) return {};",
            ErrorCode::Body as i32
        ));
    }

    /// The pipe of slot variable `var`, when it is one.
    pub fn slot_pipe(&self, var: VarId) -> Option<PipeId> {
        self.slot_of.get(&var).copied()
    }

    /// The ring of `pipe`, its index and the C name of `slot`, which must be its slot variable.
    fn slot_ring(&self, pipe: PipeId, slot: VarId) -> R<(PipeRing, u32, String)> {
        let r = self.ring(pipe)?;
        if self.slot_pipe(slot) != Some(pipe) {
            return Err(self.err(format!(
                "variable #{} is not a slot of pipe #{}",
                slot.0, pipe.0
            )));
        }
        Ok((r, pipe.0, format!("x{}", slot.0)))
    }

    /// `let slot = talloc(pipe)`: waits for a free slot (TALLOC) and fills it with zeros.
    fn talloc(&mut self, pipe: PipeId, slot: VarId) -> R<()> {
        let (r, i, x) = self.slot_ring(pipe, slot)?;
        let (rows, cols) = (r.elem.rows(), r.elem.cols());
        self.barrier();
        self.line(format!("wsp_cpu::TALLOC<Pipe{i}, Slot{i}>(pipe{i}, {x});"));
        self.bound(&x);
        self.line(format!("{x}_vr = {rows}; {x}_vc = {cols};"));
        // The slot starts as zeros (PTO-ISA leaves it as the last consumer did): one zero row
        // stored over each of its rows.
        let e = elem_ty(r.elem.dtype);
        let z = self.temp(
            Loc::Vec,
            TileType::new(r.elem.dtype, 1, cols),
            "1",
            &cols.to_string(),
        );
        self.on_pipe("PIPE_V");
        self.line(format!("TEXPANDS({}, ({e})0);", z.name));
        self.on_pipe("PIPE_MTE3");
        let row = self.fresh("r");
        self.line(format!(
            "for (int64_t {row} = 0; {row} < {rows}; ++{row}) {{"
        ));
        self.ind += 1;
        let g = self.slot_view(
            e,
            &format!("{x}.data() + {row} * {cols}"),
            "1",
            &cols.to_string(),
            cols,
        );
        self.line(format!("TSTORE({g}, {});", z.name));
        self.ind -= 1;
        self.line("}");
        Ok(())
    }

    /// `tpush(pipe, slot)`: the slot's valid extent into its trailer, then commits it (TPUSH).
    fn tpush(&mut self, pipe: PipeId, slot: VarId) -> R<()> {
        let (r, i, x) = self.slot_ring(pipe, slot)?;
        self.bound(&x);
        self.barrier();
        self.line(format!(
            "{{ uint32_t *ext = reinterpret_cast<uint32_t *>(reinterpret_cast<uint8_t *>({x}.data()) + {}); ext[0] = {x}_vr; ext[1] = {x}_vc; }}",
            r.trailer
        ));
        self.line(format!("wsp_cpu::TPUSH<Pipe{i}, Slot{i}>(pipe{i}, {x});"));
        self.bound(&x);
        let e = elem_ty(r.elem.dtype);
        self.line(format!("TASSIGN({x}, ({e} *)nullptr);"));
        Ok(())
    }

    /// `tpop(pipe)`: waits for the oldest committed slot (TPOP) and loads it.
    pub fn tpop(&mut self, res: ValueId, pipe: PipeId) -> R<()> {
        let r = self.ring(pipe)?;
        let i = pipe.0;
        let (rows, cols) = (r.elem.rows(), r.elem.cols());
        let e = elem_ty(r.elem.dtype);
        let q = self.fresh("q");
        self.barrier();
        self.line(format!(
            "Slot{i} {q}(({e} *)nullptr, Shape<1, 1, 1, DYNAMIC, DYNAMIC>(1, 1, 1, {rows}, {cols}), Stride<1, 1, 1, DYNAMIC, DYNAMIC>(1, 1, 1, {cols}, 1));"
        ));
        self.line(format!("wsp_cpu::TPOP<Pipe{i}, Slot{i}>(pipe{i}, {q});"));
        self.bound(&q);
        self.line(format!(
            "const uint32_t *{q}_ext = reinterpret_cast<const uint32_t *>(reinterpret_cast<const uint8_t *>({q}.data()) + {});",
            r.trailer
        ));
        self.line(format!(
            "if ({q}_ext[0] > {rows}u || {q}_ext[1] > {cols}u) return {};",
            ErrorCode::Body as i32
        ));
        let (vr, vc) = (format!("{q}_ext[0]"), format!("{q}_ext[1]"));
        let d = self.def_tile(res, r.elem, &vr, &vc)?;
        let g = self.slot_view(e, &format!("{q}.data()"), &vr, &vc, cols);
        self.on_pipe("PIPE_MTE2");
        self.line(format!("TLOAD({}, {g});", d.name));
        self.popped.insert(res, q);
        Ok(())
    }

    /// `tfree(pipe, value)`: releases the slot `value` was popped from (TFREE).
    fn tfree(&mut self, pipe: PipeId, value: ValueId) -> R<()> {
        self.ring(pipe)?;
        let q = self.popped.get(&value).cloned().ok_or_else(|| {
            self.err(format!(
                "tfree on pipe #{} of value %{}, which no tpop returned",
                pipe.0, value.0
            ))
        })?;
        let i = pipe.0;
        self.barrier();
        self.line(format!("wsp_cpu::TFREE<Pipe{i}, Slot{i}>(pipe{i}, {q});"));
        self.bound(&q);
        Ok(())
    }

    /// A read of slot variable `var` (before its `tpush`): loads its valid extent.
    pub fn read_slot(&mut self, res: ValueId, var: VarId, pipe: PipeId) -> R<()> {
        let r = self.ring(pipe)?;
        let x = format!("x{}", var.0);
        self.bound(&x);
        let d = self.def_tile(res, r.elem, &format!("{x}_vr"), &format!("{x}_vc"))?;
        let e = elem_ty(r.elem.dtype);
        let g = self.slot_view(
            e,
            &format!("{x}.data()"),
            &format!("{x}_vr"),
            &format!("{x}_vc"),
            r.elem.cols(),
        );
        self.on_pipe("PIPE_MTE2");
        self.line(format!("TLOAD({}, {g});", d.name));
        Ok(())
    }

    /// `slot = v` / `slot[region] = v` on a slot variable: stores into the slot.
    fn assign_slot(
        &mut self,
        var: VarId,
        pipe: PipeId,
        region: Option<&Region>,
        value: ValueId,
    ) -> R<()> {
        let r = self.ring(pipe)?;
        let tt = r.elem;
        let src = self.tile_of(value)?;
        let st = self.value_type(value)?;
        let x = format!("x{}", var.0);
        let e = elem_ty(tt.dtype);
        self.bound(&x);
        let (ptr, nr, nc) = match region {
            None => {
                if st != Type::Tile(tt) {
                    return Err(self.err(format!(
                        "assignment of a value of another type to the slot of pipe #{}",
                        pipe.0
                    )));
                }
                self.line(format!("{x}_vr = {}; {x}_vc = {};", src.vr(), src.vc()));
                (format!("{x}.data()"), format!("{x}_vr"), format!("{x}_vc"))
            }
            Some(reg) => {
                if st != Type::Tile(TileType::new(tt.dtype, reg.rows, reg.cols)) {
                    return Err(self.err(format!(
                        "assignment to a [{}, {}] region of a slot of a value of another type",
                        reg.rows, reg.cols
                    )));
                }
                let (r0, c0) = self.region(reg, tt.shape);
                let (nr, nc) = (self.fresh("n"), self.fresh("n"));
                self.line(format!(
                    "const int64_t {nr} = std::min<int64_t>({}, std::max<int64_t>((int64_t){x}_vr - {r0}, 0)), {nc} = std::min<int64_t>({}, std::max<int64_t>((int64_t){x}_vc - {c0}, 0));",
                    src.vr(),
                    src.vc()
                ));
                (format!("{x}.data() + {r0} * {} + {c0}", tt.cols()), nr, nc)
            }
        };
        self.line(format!("if ({nr} > 0 && {nc} > 0) {{"));
        self.ind += 1;
        let g = self.slot_view(e, &ptr, &nr, &nc, tt.cols());
        let a = self.alias(&src, &format!("(unsigned){nr}"), &format!("(unsigned){nc}"));
        self.on_pipe("PIPE_MTE3");
        self.line(format!("TSTORE({g}, {});", a.name));
        self.ind -= 1;
        self.line("}");
        Ok(())
    }
}

/// The largest tile dimension (PTO-ISA's tile coordinates are `uint16_t`).
const MAX_DIM: u32 = 65535;

/// Emits the translation unit of `k`.
pub fn emit(k: &Kernel, arch: Arch, buffers: Buffers) -> R<(String, Unit)> {
    let err =
        |m: String| BackendDiagnostic::error(format!("kernel `{}`: {m}", k.name), k.at.clone());
    let Some(body) = &k.body else {
        let targets: Vec<_> = k.externs.iter().map(|e| e.target.as_str()).collect();
        return Err(err(format!(
            "the kernel has no `.wsp` body to lower, only extern implementations ({})",
            if targets.is_empty() {
                "none".to_string()
            } else {
                targets.join(", ")
            }
        ))
        .with_help("the host side uses an `ascend` extern implementation as given"));
    };
    // Tile coordinates are 16-bit in PTO-ISA (TEXTRACT/TINSERT take uint16_t indices).
    let tiles = k
        .values
        .iter()
        .map(|v| v.ty)
        .chain(k.vars.iter().map(|v| v.ty))
        .filter_map(|t| t.tile())
        .chain(k.pipes.iter().map(|p| p.elem))
        .chain(k.tile_params().map(|(_, _, t, _)| t));
    for t in tiles {
        if t.rows() == 0 || t.cols() == 0 || t.rows() > MAX_DIM || t.cols() > MAX_DIM {
            return Err(err(format!(
                "a tile of shape [{}, {}]: PTO-ISA tiles have 1 to {MAX_DIM} rows and columns",
                t.rows(),
                t.cols()
            )));
        }
    }
    let is_tile = |v: ValueId| matches!(k.value_type(v), Some(Type::Tile(_)));
    let live = plan::live_ranges(body, &is_tile);
    let mut items: Vec<(ValueId, (usize, usize), u64)> = live
        .iter()
        .filter_map(|(v, r)| {
            let t = k.value_type(*v)?.tile()?;
            Some((*v, *r, Storage::of(Loc::Vec, t).footprint()))
        })
        .collect();
    items.sort_by_key(|x| x.0);
    let (val_off, val_peak) = plan::place(&items, Loc::Vec.align());

    // A kernel with pipes runs its sections on two cores, sharing the slot rings.
    let split = if k.pipes.is_empty() {
        None
    } else {
        Some(cores::split(k, body).map_err(|m| {
            err(m).with_help(
                "keep each side of a pipe in one section, and give each section its own values, \
                 variables and output tiles",
            )
        })?)
    };
    if k.pipes.len() > 256 {
        return Err(err(format!(
            "{} pipes: PTO-ISA names a pipe's cross-core flag with 8 bits",
            k.pipes.len()
        )));
    }
    let mut slot_of = BTreeMap::new();
    collect_slots(body, &mut slot_of);
    for (v, p) in &slot_of {
        match (k.vars.get(v.index()), k.pipes.get(p.index())) {
            (Some(var), Some(pipe)) if var.ty == Type::Tile(pipe.elem) => {}
            _ => {
                return Err(err(format!(
                    "variable #{} is not a slot of pipe #{}'s tile type",
                    v.0, p.0
                )))
            }
        }
    }
    // Tile variables (pipe slots live in their pipe's ring in global memory instead).
    let mut var_off = HashMap::new();
    let mut var_bytes = 0u64;
    for (i, v) in k.vars.iter().enumerate() {
        if let Type::Tile(t) = v.ty {
            if !slot_of.contains_key(&VarId(i as u32)) {
                var_off.insert(VarId(i as u32), var_bytes);
                var_bytes += Storage::of(Loc::Vec, t).footprint();
            }
        }
    }
    let pipes: Vec<PipeRing> = k
        .pipes
        .iter()
        .enumerate()
        .map(|(i, p)| PipeRing::new(p, split.as_ref().and_then(|s| s.routes[i])))
        .collect();

    let mut cg = Cg {
        k,
        body: String::new(),
        ind: 1,
        types: BTreeMap::new(),
        val_off,
        var_off,
        pipes,
        slot_of: slot_of.into_iter().collect(),
        popped: HashMap::new(),
        scratch: BTreeMap::new(),
        tmp: 0,
        last_pipe: None,
        tiles: HashMap::new(),
        var_tiles: HashMap::new(),
        uses_matmul: false,
        uses_vector: false,
        sections: HashSet::new(),
    };
    let decls = match &split {
        None => {
            let decls = entry::declarations(&mut cg)?;
            cg.block(body)?;
            cg.barrier();
            decls
        }
        Some(split) => {
            two_cores(&mut cg, split)?;
            String::new()
        }
    };

    // Buffer budget (per core: with pipes, each core's buffers hold what its sections use).
    let scr = |l: Loc| cg.scratch.get(&l).map(|e| e.1).unwrap_or(0);
    let k_val = var_bytes;
    let k_scr = k_val.saturating_add(val_peak);
    let ub = k_scr.saturating_add(scr(Loc::Vec));
    for (loc, need, have) in [
        (Loc::Vec, ub, buffers.ub),
        (Loc::Mat, scr(Loc::Mat), buffers.l1),
        (Loc::Left, scr(Loc::Left), buffers.l0a),
        (Loc::Right, scr(Loc::Right), buffers.l0b),
        (Loc::Acc, scr(Loc::Acc), buffers.l0c),
    ] {
        let what = loc.buffer();
        if need > have {
            return Err(err(format!(
                "its tiles need {need} bytes of {what} at once, {} has {have}",
                arch.name()
            ))
            .with_help("split the kernel's work into smaller tiles"));
        }
    }
    let unit = if cg.uses_matmul && (cg.uses_vector || cg.sections.contains("vector")) {
        Unit::Mixed
    } else if cg.uses_matmul || cg.sections.contains("cube") && !cg.sections.contains("vector") {
        Unit::Cube
    } else if cg.sections.len() == 2 {
        Unit::Mixed
    } else {
        Unit::Vector
    };
    let code = entry::assemble(&cg, arch, &decls, [k_val, k_scr]);
    Ok((code, unit))
}

/// The pipe of every slot variable (the variable a `talloc` binds).
fn collect_slots(stmts: &[Stmt], out: &mut BTreeMap<VarId, PipeId>) {
    for s in stmts {
        match s {
            Stmt::TAlloc { pipe, slot } => {
                out.insert(*slot, *pipe);
            }
            Stmt::For { body, .. } | Stmt::Section { body, .. } => collect_slots(body, out),
            _ => {}
        }
    }
}

/// The body of a kernel with pipes: the slot rings, a function per core (its variables, the
/// shared `let` bindings, then its sections), and the two cores run side by side. On the device
/// the cube core (AIC) and the vector core (AIV) each run their function; the CPU build runs the
/// cube's on a thread of its own. When a core's function returns, the pipes it feeds or drains
/// are ended, so the other core's waits on it fail instead of hanging.
fn two_cores(cg: &mut Cg<'_>, split: &cores::Split<'_>) -> R<()> {
    let rings: Vec<(usize, cores::PipeRoute)> = cg
        .pipes
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.route.map(|r| (i, r)))
        .collect();
    for (i, _) in &rings {
        let p = &cg.pipes[*i];
        let (bytes, slots) = (p.slot_bytes, p.slots);
        cg.line(format!(
            "wsp_cpu::Ring ring{i}({bytes}u, {slots}u); /* pipe `{}`: the slots in global memory */",
            cg.k.pipes[*i].name
        ));
    }
    for (core, fname, stmts) in [
        (cores::Core::Cube, "aic", &split.cube),
        (cores::Core::Vector, "aiv", &split.vector),
    ] {
        cg.line(format!("auto {fname} = [&]() -> int32_t {{"));
        cg.ind += 1;
        let decls = entry::declarations(cg)?;
        cg.body.push_str(&decls);
        for (i, r) in &rings {
            if r.producer == core || r.consumer == core {
                cg.line(format!("Pipe{i} pipe{i}(ring{i});"));
            }
        }
        cg.last_pipe = None;
        for s in split.shared.iter().chain(stmts.iter()) {
            cg.stmt(s)?;
        }
        cg.barrier();
        cg.line("return 0;");
        cg.ind -= 1;
        cg.line("};");
    }
    let ends = |cg: &mut Cg<'_>, core: cores::Core| {
        for (i, r) in &rings {
            let side = if r.producer == core {
                "producer_done"
            } else {
                "consumer_done"
            };
            cg.line(format!("ring{i}.{side}();"));
        }
    };
    cg.line("std::atomic<int32_t> first_error{0};");
    cg.line("std::thread cube_core([&] {");
    cg.ind += 1;
    cg.line("int32_t expected = 0;");
    cg.line("const int32_t rc = aic();");
    cg.line("if (rc != 0) first_error.compare_exchange_strong(expected, rc);");
    ends(cg, cores::Core::Cube);
    cg.ind -= 1;
    cg.line("});");
    cg.line("{");
    cg.ind += 1;
    cg.line("int32_t expected = 0;");
    cg.line("const int32_t rc = aiv();");
    cg.line("if (rc != 0) first_error.compare_exchange_strong(expected, rc);");
    ends(cg, cores::Core::Vector);
    cg.ind -= 1;
    cg.line("}");
    cg.line("cube_core.join();");
    cg.line("if (first_error.load() != 0) return first_error.load();");
    Ok(())
}

/// The float type composite ops compute in for a float dtype.
pub(super) fn compute_dtype(d: DType) -> DType {
    if d == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

pub(super) fn is_16(d: DType) -> bool {
    matches!(d, DType::F16 | DType::Bf16)
}
