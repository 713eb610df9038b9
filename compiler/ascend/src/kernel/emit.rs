//! The translation unit of one kernel: tile declarations, statements and ops as PTO-ISA calls.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;

use wsp_backend::BackendDiagnostic;
use wsp_ir::kernel::*;
use wsp_ir::DType;

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
    /// Per pipe: offset (relative to `kPipe`), capacity in slots, bytes per slot.
    pub pipes: Vec<(u64, u64, u64)>,
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
            Stmt::TFree { pipe, .. } => {
                let p = pipe.0;
                self.pipe_exists(*pipe)?;
                self.line(format!(
                    "if (pipe{p}_popped == 0) return {};",
                    ErrorCode::Body as i32
                ));
                self.line(format!("pipe{p}_popped--;"));
                Ok(())
            }
        }
    }

    fn pipe_exists(&self, p: PipeId) -> R<&'k Pipe> {
        self.k
            .pipes
            .get(p.index())
            .ok_or_else(|| self.err(format!("pipe #{} does not exist", p.0)))
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

    fn talloc(&mut self, pipe: PipeId, slot: VarId) -> R<()> {
        let p = self.pipe_exists(pipe)?;
        let elem = p.elem;
        let (off, cap, bytes) = self.pipes[pipe.index()];
        let v = self
            .var_tiles
            .get(&slot)
            .cloned()
            .ok_or_else(|| self.err(format!("pipe slot variable #{} is not a tile", slot.0)))?;
        if v.shape != elem.shape || v.st.dtype != elem.dtype {
            return Err(self.err("a pipe slot variable of another type than the pipe's tiles"));
        }
        let i = pipe.0;
        self.line(format!(
            "if (pipe{i}_tail - pipe{i}_head >= {cap}u) return {};",
            ErrorCode::Body as i32
        ));
        self.line(format!("pipe{i}_slot = pipe{i}_tail % {cap}u;"));
        self.line(format!(
            "TASSIGN({}, kPipe + 0x{off:x} + pipe{i}_slot * 0x{bytes:x}u);",
            v.name
        ));
        self.line(format!("{}.SetValidRow({});", v.name, elem.rows()));
        self.line(format!("{}.SetValidCol({});", v.name, elem.cols()));
        self.on_pipe("PIPE_V");
        self.line(format!("TEXPANDS({}, ({})0);", v.name, elem_ty(elem.dtype)));
        Ok(())
    }

    fn tpush(&mut self, pipe: PipeId, slot: VarId) -> R<()> {
        self.pipe_exists(pipe)?;
        let v = self
            .var_tiles
            .get(&slot)
            .cloned()
            .ok_or_else(|| self.err(format!("pipe slot variable #{} is not a tile", slot.0)))?;
        let (_, cap, _) = self.pipes[pipe.index()];
        let i = pipe.0;
        self.line(format!("pipe{i}_vr[pipe{i}_tail % {cap}u] = {};", v.vr()));
        self.line(format!("pipe{i}_vc[pipe{i}_tail % {cap}u] = {};", v.vc()));
        self.line(format!("pipe{i}_tail++;"));
        Ok(())
    }

    pub fn tpop(&mut self, res: ValueId, pipe: PipeId) -> R<()> {
        let p = self.pipe_exists(pipe)?;
        let elem = p.elem;
        let (off, cap, bytes) = self.pipes[pipe.index()];
        let i = pipe.0;
        self.line(format!(
            "if (pipe{i}_head == pipe{i}_tail) return {};",
            ErrorCode::Body as i32
        ));
        let s = self.fresh("q");
        self.line(format!("const uint64_t {s} = pipe{i}_head % {cap}u;"));
        let st = Storage::of(Loc::Vec, elem);
        let name = self.fresh("slot");
        let addr = format!("kPipe + 0x{off:x} + {s} * 0x{bytes:x}u");
        self.declare(
            &name,
            st,
            &format!("pipe{i}_vr[{s}]"),
            &format!("pipe{i}_vc[{s}]"),
            &addr,
        );
        let d = self.def_tile(
            res,
            elem,
            &format!("{name}.GetValidRow()"),
            &format!("{name}.GetValidCol()"),
        )?;
        self.on_pipe("PIPE_V");
        self.line(format!("TMOV({}, {name});", d.name));
        self.line(format!("pipe{i}_head++;"));
        self.line(format!("pipe{i}_popped++;"));
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

    // Tile variables (pipe slots live in their pipe's ring instead).
    let slot_vars: HashSet<VarId> = slot_vars(body);
    let mut var_off = HashMap::new();
    let mut var_bytes = 0u64;
    for (i, v) in k.vars.iter().enumerate() {
        if let Type::Tile(t) = v.ty {
            if !slot_vars.contains(&VarId(i as u32)) {
                var_off.insert(VarId(i as u32), var_bytes);
                var_bytes += Storage::of(Loc::Vec, t).footprint();
            }
        }
    }
    // Pipe rings: sections run one after another, so a ring holds every tile pushed before
    // the consumer runs (at least the pipe's slots).
    let mut pipes = Vec::new();
    let mut pipe_bytes = 0u64;
    for (i, p) in k.pipes.iter().enumerate() {
        let pushes = count_pushes(body, PipeId(i as u32), 1);
        let cap = pushes.max(u64::from(p.slots)).max(1);
        let slot = Storage::of(Loc::Vec, p.elem).footprint();
        pipes.push((pipe_bytes, cap, slot));
        pipe_bytes = pipe_bytes.saturating_add(cap.saturating_mul(slot));
    }

    let mut cg = Cg {
        k,
        body: String::new(),
        ind: 1,
        types: BTreeMap::new(),
        val_off,
        var_off,
        pipes,
        scratch: BTreeMap::new(),
        tmp: 0,
        last_pipe: None,
        tiles: HashMap::new(),
        var_tiles: HashMap::new(),
        uses_matmul: false,
        uses_vector: false,
        sections: HashSet::new(),
    };
    let decls = entry::declarations(&mut cg)?;
    cg.block(body)?;
    cg.barrier();

    // Buffer budget.
    let scr = |l: Loc| cg.scratch.get(&l).map(|e| e.1).unwrap_or(0);
    let k_pipe = var_bytes;
    let k_val = k_pipe.saturating_add(pipe_bytes);
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
    let code = entry::assemble(&cg, arch, &decls, [k_pipe, k_val, k_scr]);
    Ok((code, unit))
}

fn slot_vars(stmts: &[Stmt]) -> HashSet<VarId> {
    let mut out = HashSet::new();
    for s in stmts {
        match s {
            Stmt::TAlloc { slot, .. } => {
                out.insert(*slot);
            }
            Stmt::For { body, .. } | Stmt::Section { body, .. } => out.extend(slot_vars(body)),
            _ => {}
        }
    }
    out
}

fn count_pushes(stmts: &[Stmt], pipe: PipeId, mult: u64) -> u64 {
    let mut n = 0u64;
    for s in stmts {
        match s {
            Stmt::TPush { pipe: p, .. } if *p == pipe => n = n.saturating_add(mult),
            Stmt::For {
                start, end, body, ..
            } => {
                let trips = u64::try_from(end.saturating_sub(*start)).unwrap_or(0);
                n = n.saturating_add(count_pushes(body, pipe, mult.saturating_mul(trips)));
            }
            Stmt::Section { body, .. } => n = n.saturating_add(count_pushes(body, pipe, mult)),
            _ => {}
        }
    }
    n
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
