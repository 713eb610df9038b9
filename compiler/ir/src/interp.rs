//! The reference interpreter for kernels: simple, element by element, and obviously correct.
//! It is the oracle the JIT is tested against; its semantics are those documented in
//! [`crate::kernel`].
//!
//! Pipe sections (`cube { }` / `vector { }`) run one after the other with unbounded slot
//! queues: within a run of adjacent sections, a section that pushes to a pipe runs before the
//! sections that pop from it (program order otherwise, and when pipes go both ways). For
//! pipes in one direction this gives the results of the concurrent execution; a `tpop` on an
//! empty pipe is an error.

use crate::dtype::{DType, ScalarValue};
use crate::kernel::*;
use crate::num;
use crate::tensor::{convert, Data, El};
use std::collections::VecDeque;
use std::fmt;

/// A tile with its static shape, its valid extent and its elements (row-major over the static
/// shape; elements outside the valid extent are zero here and unspecified in general).
#[derive(Clone, Debug, PartialEq)]
pub struct Tile {
    pub dtype: DType,
    pub shape: [u32; 2],
    pub valid: [u32; 2],
    pub data: Data,
}

impl Tile {
    pub fn zeros(ty: TileType) -> Tile {
        Tile {
            dtype: ty.dtype,
            shape: ty.shape,
            valid: ty.shape,
            data: Data::zeros(ty.dtype, ty.len()),
        }
    }

    /// A full-extent tile from f64 values converted to `dtype`.
    pub fn from_f64(dtype: DType, rows: u32, cols: u32, values: &[f64]) -> Tile {
        let mut t = Tile::zeros(TileType::new(dtype, rows, cols));
        for (i, v) in values.iter().enumerate() {
            t.data.set(i, convert(El::F(*v), dtype));
        }
        t
    }

    pub fn rows(&self) -> usize {
        self.shape[0] as usize
    }
    pub fn cols(&self) -> usize {
        self.shape[1] as usize
    }

    /// Element `(r, c)`; zero of the tile's kind when out of range.
    pub fn get(&self, r: usize, c: usize) -> El {
        let z = zero_of(self.dtype);
        if r >= self.rows() || c >= self.cols() {
            return z;
        }
        self.data.get(r * self.cols() + c).unwrap_or(z)
    }

    /// Sets element `(r, c)` (ignored when out of range).
    pub fn set(&mut self, r: usize, c: usize, e: El) {
        if r < self.rows() && c < self.cols() {
            let cols = self.cols();
            self.data.set(r * cols + c, e);
        }
    }

    /// The valid elements as f64, row-major.
    pub fn valid_f64(&self) -> Vec<f64> {
        let mut out = Vec::new();
        for r in 0..self.valid[0] as usize {
            for c in 0..self.valid[1] as usize {
                out.push(self.get(r, c).as_f64());
            }
        }
        out
    }

    fn ty(&self) -> TileType {
        TileType {
            dtype: self.dtype,
            shape: self.shape,
        }
    }
}

fn zero_of(dtype: DType) -> El {
    if dtype.is_float() {
        El::F(0.0)
    } else if dtype.is_bool() {
        El::B(false)
    } else {
        El::I(0)
    }
}

/// An argument of a kernel call, one per parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelArg {
    Tile(Tile),
    Scalar(ScalarValue),
}

/// A run-time error of a kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelError {
    pub kernel: String,
    pub message: String,
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in kernel `{}`: {}", self.kernel, self.message)
    }
}

impl std::error::Error for KernelError {}

/// A runtime value.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Scalar(DType, El),
    Tile(Tile),
}

impl Val {
    fn dtype(&self) -> DType {
        match self {
            Val::Scalar(d, _) => *d,
            Val::Tile(t) => t.dtype,
        }
    }
    /// Element for broadcasting reads at result position `(r, c)`.
    fn at(&self, r: usize, c: usize) -> El {
        match self {
            Val::Scalar(_, e) => *e,
            Val::Tile(t) => {
                let rr = if t.rows() == 1 { 0 } else { r };
                let cc = if t.cols() == 1 { 0 } else { c };
                t.get(rr, cc)
            }
        }
    }
}

/// A static shape and a valid extent.
pub type Extent = ([u32; 2], [u32; 2]);

/// Result shape and valid extent of an elementwise op over `operands` (`None`: all scalars).
pub fn broadcast_extent(operands: &[Option<Extent>]) -> Result<Option<Extent>, String> {
    let tiles: Vec<_> = operands.iter().flatten().collect();
    if tiles.is_empty() {
        return Ok(None);
    }
    let mut shape = [1u32; 2];
    for d in 0..2 {
        for (s, _) in &tiles {
            if s[d] != 1 {
                if shape[d] != 1 && shape[d] != s[d] {
                    return Err(format!(
                        "shapes do not broadcast: {}",
                        tiles
                            .iter()
                            .map(|(s, _)| format!("[{}, {}]", s[0], s[1]))
                            .collect::<Vec<_>>()
                            .join(" and ")
                    ));
                }
                shape[d] = s[d];
            }
        }
    }
    let mut valid = shape;
    for d in 0..2 {
        for (s, v) in &tiles {
            if s[d] == shape[d] {
                valid[d] = valid[d].min(v[d]);
            }
        }
    }
    Ok(Some((shape, valid)))
}

/// The most elements one tile may hold (2²⁴; on-chip buffers hold far less).
pub const MAX_TILE_ELEMENTS: usize = 1 << 24;

/// The error for a tile argument whose dtype or shape is not its parameter's (the JIT's
/// entry reports the same words).
pub fn tile_arg_mismatch(name: &str, t: &Tile, want: &TileType) -> String {
    format!(
        "argument `{name}` is {}[{}, {}], expected {}[{}, {}]",
        t.dtype, t.shape[0], t.shape[1], want.dtype, want.shape[0], want.shape[1]
    )
}

/// Runs `kernel` on `args` (one per parameter, in order). Tile arguments of `out`/`inout`
/// parameters are updated in place.
pub fn run_kernel(kernel: &Kernel, args: &mut [KernelArg]) -> Result<(), KernelError> {
    let err = |message: String| KernelError {
        kernel: kernel.name.clone(),
        message,
    };
    let Some(body) = &kernel.body else {
        let targets: Vec<_> = kernel.externs.iter().map(|e| e.target.as_str()).collect();
        return Err(err(format!(
            "the kernel has no `.wsp` body to interpret (only extern implementations for {})",
            if targets.is_empty() {
                "no target".to_string()
            } else {
                targets.join(", ")
            }
        )));
    };
    if args.len() != kernel.params.len() {
        return Err(err(format!(
            "expected {} arguments, found {}",
            kernel.params.len(),
            args.len()
        )));
    }
    for (p, a) in kernel.params.iter().zip(args.iter()) {
        match (&p.kind, a) {
            (ParamKind::Tile { tile, partial, .. }, KernelArg::Tile(t)) => {
                if t.dtype != tile.dtype || t.shape != tile.shape {
                    return Err(err(tile_arg_mismatch(&p.name, t, tile)));
                }
                for (d, part) in partial.iter().enumerate() {
                    let bad = t.valid[d] > t.shape[d] || (!part && t.valid[d] != t.shape[d]);
                    if bad || t.data.len() != tile.len() {
                        return Err(err(format!(
                            "argument `{}` has valid extent [{}, {}] for a tile of shape [{}, {}]{}",
                            p.name,
                            t.valid[0],
                            t.valid[1],
                            t.shape[0],
                            t.shape[1],
                            if *part { "" } else { " whose dimension is not partial" }
                        )));
                    }
                }
            }
            (ParamKind::Scalar { .. }, KernelArg::Scalar(_)) => {}
            _ => {
                return Err(err(format!(
                    "argument `{}` is of the wrong kind (tile vs scalar)",
                    p.name
                )))
            }
        }
    }
    let too_big = kernel
        .values
        .iter()
        .map(|v| v.ty)
        .chain(kernel.vars.iter().map(|v| v.ty))
        .filter_map(|t| t.tile())
        .chain(kernel.pipes.iter().map(|p| p.elem))
        .find(|t| t.len() > MAX_TILE_ELEMENTS);
    if let Some(t) = too_big {
        return Err(err(format!(
            "a tile of shape [{}, {}] exceeds the {MAX_TILE_ELEMENTS} elements a tile may hold",
            t.shape[0], t.shape[1]
        )));
    }
    let mut it = Interp {
        k: kernel,
        vals: vec![None; kernel.values.len()],
        vars: vec![None; kernel.vars.len()],
        pipes: vec![VecDeque::new(); kernel.pipes.len()],
        popped: vec![0; kernel.pipes.len()],
        args,
    };
    it.block(body).map_err(err)
}

struct Interp<'k, 'a> {
    k: &'k Kernel,
    vals: Vec<Option<Val>>,
    vars: Vec<Option<Val>>,
    pipes: Vec<VecDeque<Tile>>,
    popped: Vec<u32>,
    args: &'a mut [KernelArg],
}

type R<T> = Result<T, String>;

impl Interp<'_, '_> {
    fn vname(&self, v: ValueId) -> String {
        match self.k.values.get(v.index()).and_then(|i| i.name.as_deref()) {
            Some(n) => format!("%{} (`{n}`)", v.0),
            None => format!("%{}", v.0),
        }
    }

    fn get(&self, v: ValueId) -> R<&Val> {
        match self.vals.get(v.index()) {
            Some(Some(x)) => Ok(x),
            Some(None) => Err(format!(
                "value {} is used before it is defined",
                self.vname(v)
            )),
            None => Err(format!("value %{} does not exist", v.0)),
        }
    }

    fn tile(&self, v: ValueId) -> R<&Tile> {
        match self.get(v)? {
            Val::Tile(t) => Ok(t),
            Val::Scalar(..) => Err(format!(
                "value {} is a scalar, expected a tile",
                self.vname(v)
            )),
        }
    }

    fn def(&mut self, v: ValueId, x: Val) -> R<()> {
        let info = self
            .k
            .values
            .get(v.index())
            .ok_or_else(|| format!("value %{} does not exist", v.0))?;
        let ok = match (&info.ty, &x) {
            (Type::Scalar { dtype }, Val::Scalar(d, _)) => dtype == d,
            (Type::Tile(tt), Val::Tile(t)) => tt.dtype == t.dtype && tt.shape == t.shape,
            _ => false,
        };
        if !ok {
            return Err(format!(
                "value {} is declared {} but the operation yields {}",
                self.vname(v),
                fmt_type(&info.ty),
                fmt_val_type(&x)
            ));
        }
        if let Some(slot) = self.vals.get_mut(v.index()) {
            *slot = Some(x);
        }
        Ok(())
    }

    fn index(&self, ix: &KIndex) -> R<i64> {
        let mut acc = ix.constant;
        for (v, c) in &ix.terms {
            let x = match self.get(*v)? {
                Val::Scalar(_, El::I(i)) => i64::try_from(*i).map_err(|_| "index overflow")?,
                _ => {
                    return Err(format!(
                        "index term {} is not an integer scalar",
                        self.vname(*v)
                    ))
                }
            };
            acc = x
                .checked_mul(*c)
                .and_then(|t| acc.checked_add(t))
                .ok_or("index overflow")?;
        }
        Ok(acc)
    }

    /// Checks a region against a static shape; returns (row_start, col_start).
    fn region(&self, reg: &Region, shape: [u32; 2], what: &str) -> R<(usize, usize)> {
        let rs = self.index(&reg.row_start)?;
        let cs = self.index(&reg.col_start)?;
        let fits = |s: i64, n: u32, d: u32| s >= 0 && s + i64::from(n) <= i64::from(d);
        if !fits(rs, reg.rows, shape[0]) || !fits(cs, reg.cols, shape[1]) {
            return Err(format!(
                "region [{}..{}, {}..{}] is outside {what} of shape [{}, {}]",
                rs,
                rs + i64::from(reg.rows),
                cs,
                cs + i64::from(reg.cols),
                shape[0],
                shape[1]
            ));
        }
        Ok((rs as usize, cs as usize))
    }

    fn block(&mut self, stmts: &[Stmt]) -> R<()> {
        for s in exec_order(stmts) {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> R<()> {
        match s {
            Stmt::Op { results, op } => {
                if results.len() != op.num_results() {
                    return Err(format!(
                        "operation defines {} results, expected {}",
                        results.len(),
                        op.num_results()
                    ));
                }
                // Check the op against the type rules and the declared result types before
                // running it (so a malformed kernel fails cleanly and allocations stay within
                // the declared, size-checked types).
                let tys = crate::typing::result_types(self.k, op)?;
                for (r, t) in results.iter().zip(&tys) {
                    let declared = self.k.value_type(*r);
                    if declared != Some(*t) {
                        return Err(format!(
                            "value {} is declared {} but its operation yields {}",
                            self.vname(*r),
                            declared
                                .map(|d| fmt_type(&d))
                                .unwrap_or_else(|| "nothing".into()),
                            fmt_type(t)
                        ));
                    }
                }
                let vals = self.op(op)?;
                for (r, v) in results.iter().zip(vals) {
                    self.def(*r, v)?;
                }
                Ok(())
            }
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
                for i in *start..*end {
                    self.def(*index, Val::Scalar(DType::I64, El::I(i128::from(i))))?;
                    self.block(body)?;
                }
                Ok(())
            }
            Stmt::Section { body, .. } => self.block(body),
            Stmt::TAlloc { pipe, slot } => {
                let p = self.pipe(*pipe)?;
                let tile = Tile::zeros(p.elem);
                match self.vars.get_mut(slot.index()) {
                    Some(v) => *v = Some(Val::Tile(tile)),
                    None => return Err(format!("variable #{} does not exist", slot.0)),
                }
                Ok(())
            }
            Stmt::TPush { pipe, slot } => {
                let name = self.pipe(*pipe)?.name.clone();
                let v = self
                    .vars
                    .get_mut(slot.index())
                    .and_then(Option::take)
                    .ok_or_else(|| {
                        format!("tpush on pipe `{name}` of a slot that was not reserved by talloc")
                    })?;
                match v {
                    Val::Tile(t) => {
                        if let Some(q) = self.pipes.get_mut(pipe.index()) {
                            q.push_back(t);
                        }
                        Ok(())
                    }
                    Val::Scalar(..) => Err(format!("tpush on pipe `{name}` of a scalar")),
                }
            }
            Stmt::TFree { pipe, .. } => {
                let name = self.pipe(*pipe)?.name.clone();
                match self.popped.get_mut(pipe.index()) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        Ok(())
                    }
                    _ => Err(format!("tfree on pipe `{name}` without a matching tpop")),
                }
            }
        }
    }

    fn pipe(&self, p: PipeId) -> R<&Pipe> {
        self.k
            .pipes
            .get(p.index())
            .ok_or_else(|| format!("pipe #{} does not exist", p.0))
    }

    fn store(&mut self, param: ParamId, region: Option<&Region>, value: ValueId) -> R<()> {
        let p = self
            .k
            .params
            .get(param.index())
            .ok_or_else(|| format!("parameter #{} does not exist", param.0))?;
        match p.kind {
            ParamKind::Tile { dir, .. } if dir.writes() => {}
            _ => {
                return Err(format!(
                    "store to `{}`, which is not an out or inout tile",
                    p.name
                ))
            }
        }
        let src = self.tile(value)?.clone();
        let pname = p.name.clone();
        let dst_shape = match self.args.get(param.index()) {
            Some(KernelArg::Tile(t)) => t.shape,
            _ => return Err(format!("argument `{pname}` is not a tile")),
        };
        let (r0, c0, rows, cols) = match region {
            Some(reg) => {
                let (r0, c0) = self.region(reg, dst_shape, &format!("`{pname}`"))?;
                if [reg.rows, reg.cols] != src.shape {
                    return Err(format!(
                        "store of a [{}, {}] tile into a [{}, {}] region of `{pname}`",
                        src.shape[0], src.shape[1], reg.rows, reg.cols
                    ));
                }
                (r0, c0, reg.rows, reg.cols)
            }
            None => {
                if src.shape != dst_shape {
                    return Err(format!(
                        "store of a [{}, {}] tile into `{pname}` of shape [{}, {}]",
                        src.shape[0], src.shape[1], dst_shape[0], dst_shape[1]
                    ));
                }
                (0, 0, dst_shape[0], dst_shape[1])
            }
        };
        let Some(KernelArg::Tile(dst)) = self.args.get_mut(param.index()) else {
            return Err(format!("argument `{pname}` is not a tile"));
        };
        let vr = (src.valid[0].min(rows) as usize).min((dst.valid[0] as usize).saturating_sub(r0));
        let vc = (src.valid[1].min(cols) as usize).min((dst.valid[1] as usize).saturating_sub(c0));
        for r in 0..vr {
            for c in 0..vc {
                dst.set(r0 + r, c0 + c, convert(src.get(r, c), dst.dtype));
            }
        }
        Ok(())
    }

    fn assign(&mut self, var: VarId, region: Option<&Region>, value: ValueId) -> R<()> {
        let info = self
            .k
            .vars
            .get(var.index())
            .ok_or_else(|| format!("variable #{} does not exist", var.0))?;
        let vname = info.name.clone();
        let vty = info.ty;
        let src = self.get(value)?.clone();
        match region {
            None => {
                let ok = match (&vty, &src) {
                    (Type::Scalar { dtype }, Val::Scalar(d, _)) => dtype == d,
                    (Type::Tile(tt), Val::Tile(t)) => tt.dtype == t.dtype && tt.shape == t.shape,
                    _ => false,
                };
                if !ok {
                    return Err(format!(
                        "assignment of {} to `{vname}` of type {}",
                        fmt_val_type(&src),
                        fmt_type(&vty)
                    ));
                }
                if let Some(slot) = self.vars.get_mut(var.index()) {
                    *slot = Some(src);
                }
                Ok(())
            }
            Some(reg) => {
                let Val::Tile(src) = src else {
                    return Err(format!("sub-range assignment of a scalar to `{vname}`"));
                };
                let Type::Tile(tt) = vty else {
                    return Err(format!("sub-range assignment to scalar variable `{vname}`"));
                };
                let (r0, c0) = self.region(reg, tt.shape, &format!("`{vname}`"))?;
                if [reg.rows, reg.cols] != src.shape || src.dtype != tt.dtype {
                    return Err(format!(
                        "assignment of {}[{}, {}] to a [{}, {}] region of `{vname}` ({})",
                        src.dtype, src.shape[0], src.shape[1], reg.rows, reg.cols, tt.dtype
                    ));
                }
                let Some(Some(Val::Tile(dst))) = self.vars.get_mut(var.index()) else {
                    return Err(format!(
                        "sub-range assignment to `{vname}` before it has a value"
                    ));
                };
                let vr = (src.valid[0] as usize).min((dst.valid[0] as usize).saturating_sub(r0));
                let vc = (src.valid[1] as usize).min((dst.valid[1] as usize).saturating_sub(c0));
                for r in 0..vr {
                    for c in 0..vc {
                        dst.set(r0 + r, c0 + c, src.get(r, c));
                    }
                }
                Ok(())
            }
        }
    }

    fn ext(&self, v: ValueId) -> R<Option<Extent>> {
        Ok(match self.get(v)? {
            Val::Scalar(..) => None,
            Val::Tile(t) => Some((t.shape, t.valid)),
        })
    }

    /// Applies `f` elementwise over the broadcast of `operands`.
    fn elementwise(
        &self,
        operands: &[ValueId],
        dtype: DType,
        f: impl Fn(&[El]) -> R<El>,
    ) -> R<Val> {
        let exts = operands
            .iter()
            .map(|v| self.ext(*v))
            .collect::<R<Vec<_>>>()?;
        let vals = operands
            .iter()
            .map(|v| self.get(*v))
            .collect::<R<Vec<_>>>()?;
        let mut buf = Vec::with_capacity(vals.len());
        match broadcast_extent(&exts)? {
            None => {
                buf.extend(vals.iter().map(|v| v.at(0, 0)));
                Ok(Val::Scalar(dtype, f(&buf)?))
            }
            Some((shape, valid)) => {
                let mut out = Tile::zeros(TileType { dtype, shape });
                out.valid = valid;
                for r in 0..valid[0] as usize {
                    for c in 0..valid[1] as usize {
                        buf.clear();
                        buf.extend(vals.iter().map(|v| v.at(r, c)));
                        out.set(r, c, f(&buf)?);
                    }
                }
                Ok(Val::Tile(out))
            }
        }
    }

    fn same_dtype(&self, a: ValueId, b: ValueId, what: &str) -> R<DType> {
        let (da, db) = (self.get(a)?.dtype(), self.get(b)?.dtype());
        if da != db {
            return Err(format!(
                "`{what}` mixes {da} ({}) and {db} ({}); insert a `cast`",
                self.vname(a),
                self.vname(b)
            ));
        }
        Ok(da)
    }

    fn op(&mut self, op: &Op) -> R<Vec<Val>> {
        let one = |v: Val| Ok(vec![v]);
        match op {
            Op::Param { param } => {
                let p = self
                    .k
                    .params
                    .get(param.index())
                    .ok_or_else(|| format!("parameter #{} does not exist", param.0))?;
                match (&p.kind, self.args.get(param.index())) {
                    (ParamKind::Tile { .. }, Some(KernelArg::Tile(t))) => one(Val::Tile(t.clone())),
                    (ParamKind::Scalar { dtype, .. }, Some(KernelArg::Scalar(s))) => {
                        one(Val::Scalar(*dtype, El::from_scalar(*s, *dtype)))
                    }
                    _ => Err(format!("argument `{}` is of the wrong kind", p.name)),
                }
            }
            Op::Const { value, dtype } => one(Val::Scalar(*dtype, El::from_scalar(*value, *dtype))),
            Op::Binary { op, lhs, rhs } => {
                let d = self.same_dtype(*lhs, *rhs, op.symbol())?;
                let v = self.elementwise(&[*lhs, *rhs], d, |e| num::binary(*op, d, e[0], e[1]))?;
                one(v)
            }
            Op::Cmp { op, lhs, rhs } => {
                self.same_dtype(*lhs, *rhs, "comparison")?;
                let v = self.elementwise(&[*lhs, *rhs], DType::Bool, |e| {
                    Ok(El::B(num::compare(*op, e[0], e[1])))
                })?;
                one(v)
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                if self.get(*cond)?.dtype() != DType::Bool {
                    return Err(format!(
                        "`select` condition {} is not bool",
                        self.vname(*cond)
                    ));
                }
                let d = self.same_dtype(*on_true, *on_false, "select")?;
                let v = self.elementwise(&[*cond, *on_true, *on_false], d, |e| {
                    Ok(if e[0] == El::B(true) { e[1] } else { e[2] })
                })?;
                one(v)
            }
            Op::Unary { op, x } => {
                let d = self.get(*x)?.dtype();
                let v = self.elementwise(&[*x], d, |e| num::unary(*op, d, e[0]))?;
                one(v)
            }
            Op::Cast { x, dtype } => {
                let v = self.elementwise(&[*x], *dtype, |e| Ok(num::cast(e[0], *dtype)))?;
                one(v)
            }
            Op::Reduce { op, x } => one(Val::Tile(reduce(*op, self.tile(*x)?)?)),
            Op::Matmul { a, b, acc } => {
                let acc = match acc {
                    Some(c) => Some(self.tile(*c)?),
                    None => None,
                };
                one(Val::Tile(matmul(self.tile(*a)?, self.tile(*b)?, acc)?))
            }
            Op::Transpose { x } => {
                let t = self.tile(*x)?;
                let mut out = Tile::zeros(TileType::new(t.dtype, t.shape[1], t.shape[0]));
                out.valid = [t.valid[1], t.valid[0]];
                for r in 0..t.valid[0] as usize {
                    for c in 0..t.valid[1] as usize {
                        out.set(c, r, t.get(r, c));
                    }
                }
                one(Val::Tile(out))
            }
            Op::Full {
                shape,
                dtype,
                value,
            } => {
                let v = match self.get(*value)? {
                    Val::Scalar(d, e) if d == dtype => *e,
                    other => {
                        return Err(format!(
                            "`full` of {dtype} with a {} value {}",
                            fmt_val_type(other),
                            self.vname(*value)
                        ))
                    }
                };
                one(Val::Tile(Tile {
                    dtype: *dtype,
                    shape: *shape,
                    valid: *shape,
                    data: Data::filled(v, shape[0] as usize * shape[1] as usize),
                }))
            }
            Op::Iota { shape, dtype } => {
                let mut t = Tile::zeros(TileType {
                    dtype: *dtype,
                    shape: *shape,
                });
                for i in 0..t.data.len() {
                    t.data.set(i, convert(El::I(i as i128), *dtype));
                }
                one(Val::Tile(t))
            }
            Op::RowTopK { x, k } => {
                let (v, i) = rowtopk(self.tile(*x)?, *k)?;
                Ok(vec![Val::Tile(v), Val::Tile(i)])
            }
            Op::Slice { x, region } => {
                let t = self.tile(*x)?;
                let (r0, c0) = self.region(region, t.shape, &self.vname(*x))?;
                let mut out = Tile::zeros(TileType::new(t.dtype, region.rows, region.cols));
                out.valid = [
                    (t.valid[0] as usize)
                        .saturating_sub(r0)
                        .min(region.rows as usize) as u32,
                    (t.valid[1] as usize)
                        .saturating_sub(c0)
                        .min(region.cols as usize) as u32,
                ];
                for r in 0..out.valid[0] as usize {
                    for c in 0..out.valid[1] as usize {
                        out.set(r, c, t.get(r0 + r, c0 + c));
                    }
                }
                one(Val::Tile(out))
            }
            Op::VarRead { var } => {
                let name = self
                    .k
                    .vars
                    .get(var.index())
                    .map(|v| v.name.clone())
                    .ok_or_else(|| format!("variable #{} does not exist", var.0))?;
                match self.vars.get(var.index()) {
                    Some(Some(v)) => one(v.clone()),
                    _ => Err(format!("variable `{name}` is read before it is assigned")),
                }
            }
            Op::TPop { pipe } => {
                let name = self.pipe(*pipe)?.name.clone();
                let t = self
                    .pipes
                    .get_mut(pipe.index())
                    .and_then(VecDeque::pop_front)
                    .ok_or_else(|| {
                        format!(
                            "tpop on empty pipe `{name}` (the reference interpreter runs sections in \
                             program order: the producing section must come first)"
                        )
                    })?;
                if let Some(n) = self.popped.get_mut(pipe.index()) {
                    *n += 1;
                }
                one(Val::Tile(t))
            }
        }
    }
}

/// Pipes a statement list pushes to and pops from.
fn pipe_uses(stmts: &[Stmt], push: &mut Vec<PipeId>, pop: &mut Vec<PipeId>) {
    for s in stmts {
        match s {
            Stmt::TPush { pipe, .. } => push.push(*pipe),
            Stmt::Op {
                op: Op::TPop { pipe },
                ..
            } => pop.push(*pipe),
            Stmt::For { body, .. } | Stmt::Section { body, .. } => pipe_uses(body, push, pop),
            _ => {}
        }
    }
}

/// The statements of a block in execution order (the interpreter's, and every backend that
/// runs sections one after another): each run of adjacent sections ordered by
/// [`section_order`] (producers before consumers), everything else in program order.
pub fn exec_order(stmts: &[Stmt]) -> Vec<&Stmt> {
    let mut out = Vec::with_capacity(stmts.len());
    let mut i = 0;
    while i < stmts.len() {
        let n = stmts[i..]
            .iter()
            .take_while(|s| matches!(s, Stmt::Section { .. }))
            .count();
        if n == 0 {
            out.extend(stmts.get(i));
            i += 1;
        } else {
            let group = &stmts[i..i + n];
            out.extend(
                section_order(group)
                    .into_iter()
                    .filter_map(|j| group.get(j)),
            );
            i += n;
        }
    }
    out
}

/// Execution order of adjacent sections: producers of a pipe before its consumers (stable
/// topological order); program order when the pipes form a cycle. Backends that run sections
/// one after another (the JIT) use it to order them as the interpreter does.
pub fn section_order(group: &[Stmt]) -> Vec<usize> {
    let uses: Vec<(Vec<PipeId>, Vec<PipeId>)> = group
        .iter()
        .map(|s| {
            let (mut push, mut pop) = (Vec::new(), Vec::new());
            if let Stmt::Section { body, .. } = s {
                pipe_uses(body, &mut push, &mut pop);
            }
            (push, pop)
        })
        .collect();
    let n = group.len();
    let before = |a: usize, b: usize| a != b && uses[a].0.iter().any(|p| uses[b].1.contains(p));
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let next = (0..n).find(|&b| !done[b] && (0..n).all(|a| done[a] || !before(a, b)));
        match next {
            Some(b) => {
                done[b] = true;
                order.push(b);
            }
            None => return (0..n).collect(),
        }
    }
    order
}

fn fmt_type(t: &Type) -> String {
    match t {
        Type::Scalar { dtype } => format!("scalar {dtype}"),
        Type::Tile(t) => format!("{}[{}, {}]", t.dtype, t.shape[0], t.shape[1]),
    }
}

fn fmt_val_type(v: &Val) -> String {
    match v {
        Val::Scalar(d, _) => format!("scalar {d}"),
        Val::Tile(t) => fmt_type(&Type::Tile(t.ty())),
    }
}

/// Row sum in the canonical four-lane order.
fn lane_sum<F: num::Fl>(xs: impl Iterator<Item = F>) -> F {
    let mut s = [F::ZERO; 4];
    for (j, x) in xs.enumerate() {
        s[j % 4] = s[j % 4].add(x);
    }
    s[0].add(s[1]).add(s[2].add(s[3]))
}

fn reduce_float<F: num::Fl>(op: ReduceOp, xs: &[F]) -> F {
    match op {
        ReduceOp::RowSum => lane_sum(xs.iter().copied()),
        ReduceOp::RowMean => lane_sum(xs.iter().copied()).div(F::from64(xs.len() as f64)),
        ReduceOp::ColSum => xs.iter().fold(F::ZERO, |a, x| a.add(*x)),
        ReduceOp::RowMax | ReduceOp::ColMax => {
            xs.iter().fold(F::NEG_INF, |a, x| num::maximum(a, *x))
        }
        ReduceOp::RowMin | ReduceOp::ColMin => xs.iter().fold(F::INF, |a, x| num::minimum(a, *x)),
    }
}

/// A row or column reduction (see [`crate::kernel`] for order and dtypes).
pub fn reduce(op: ReduceOp, t: &Tile) -> Result<Tile, String> {
    let acc = t.dtype.accumulator();
    if t.dtype.is_bool() || (op == ReduceOp::RowMean && !t.dtype.is_float()) {
        return Err(format!("{op:?} is not defined on {} tiles", t.dtype).to_lowercase());
    }
    let row = op.is_row();
    let (outer, inner) = if row {
        (t.valid[0] as usize, t.valid[1] as usize)
    } else {
        (t.valid[1] as usize, t.valid[0] as usize)
    };
    let shape = if row {
        [t.shape[0], 1]
    } else {
        [1, t.shape[1]]
    };
    let mut out = Tile::zeros(TileType { dtype: acc, shape });
    out.valid = if row {
        [t.valid[0], 1]
    } else {
        [1, t.valid[1]]
    };
    for o in 0..outer {
        let elems: Vec<El> = (0..inner)
            .map(|i| if row { t.get(o, i) } else { t.get(i, o) })
            .collect();
        let r = match acc {
            DType::F32 => {
                let xs: Vec<f32> = elems.iter().map(|e| e.as_f64() as f32).collect();
                El::F(f64::from(reduce_float(op, &xs)))
            }
            DType::F64 => {
                let xs: Vec<f64> = elems.iter().map(|e| e.as_f64()).collect();
                El::F(reduce_float(op, &xs))
            }
            d => {
                let xs = elems.iter().map(|e| match e {
                    El::I(i) => *i,
                    _ => 0,
                });
                let (lo, hi) = match (
                    convert(El::F(f64::NEG_INFINITY), d),
                    convert(El::F(f64::INFINITY), d),
                ) {
                    (El::I(lo), El::I(hi)) => (lo, hi),
                    _ => (0, 0),
                };
                El::I(match op {
                    ReduceOp::RowSum | ReduceOp::ColSum => {
                        xs.fold(0i128, |a, x| crate::tensor::wrap_int(d, a + x))
                    }
                    ReduceOp::RowMax | ReduceOp::ColMax => xs.fold(lo, i128::max),
                    ReduceOp::RowMin | ReduceOp::ColMin => xs.fold(hi, i128::min),
                    ReduceOp::RowMean => 0,
                })
            }
        };
        if row {
            out.set(o, 0, r);
        } else {
            out.set(0, o, r);
        }
    }
    Ok(out)
}

fn matmul_in<F: num::Fl>(a: &Tile, b: &Tile, acc: Option<&Tile>, out: &mut Tile, kk: usize) {
    for i in 0..out.valid[0] as usize {
        for j in 0..out.valid[1] as usize {
            let mut c = match acc {
                Some(t) => F::from64(t.get(i, j).as_f64()),
                None => F::ZERO,
            };
            for k in 0..kk {
                c = F::from64(a.get(i, k).as_f64()).mul_add(F::from64(b.get(k, j).as_f64()), c);
            }
            out.set(i, j, El::F(c.to64()));
        }
    }
}

/// `matmul(a, b, acc)`.
pub fn matmul(a: &Tile, b: &Tile, acc: Option<&Tile>) -> Result<Tile, String> {
    if a.dtype != b.dtype || !a.dtype.is_float() {
        return Err(format!(
            "`matmul` needs two float tiles of one dtype, found {} and {}",
            a.dtype, b.dtype
        ));
    }
    if a.shape[1] != b.shape[0] {
        return Err(format!(
            "`matmul` of [{}, {}] and [{}, {}]: inner dimensions differ",
            a.shape[0], a.shape[1], b.shape[0], b.shape[1]
        ));
    }
    let rd = a.dtype.accumulator();
    let shape = [a.shape[0], b.shape[1]];
    let mut valid = [a.valid[0], b.valid[1]];
    if let Some(c) = acc {
        if c.dtype != rd || c.shape != shape {
            return Err(format!(
                "`matmul` accumulator is {}[{}, {}], expected {rd}[{}, {}]",
                c.dtype, c.shape[0], c.shape[1], shape[0], shape[1]
            ));
        }
        valid = [valid[0].min(c.valid[0]), valid[1].min(c.valid[1])];
    }
    let mut out = Tile::zeros(TileType { dtype: rd, shape });
    out.valid = valid;
    let kk = a.valid[1].min(b.valid[0]) as usize;
    if rd == DType::F64 {
        matmul_in::<f64>(a, b, acc, &mut out, kk);
    } else {
        matmul_in::<f32>(a, b, acc, &mut out, kk);
    }
    Ok(out)
}

/// `rowtopk(x, k)`: values and i32 column indices.
pub fn rowtopk(x: &Tile, k: u32) -> Result<(Tile, Tile), String> {
    if k > x.valid[1] {
        return Err(format!(
            "`rowtopk` with k = {k} on a tile with {} valid columns",
            x.valid[1]
        ));
    }
    let mut vals = Tile::zeros(TileType::new(x.dtype, x.shape[0], k));
    let mut idx = Tile::zeros(TileType::new(DType::I32, x.shape[0], k));
    vals.valid = [x.valid[0], k];
    idx.valid = [x.valid[0], k];
    for r in 0..x.valid[0] as usize {
        let mut row: Vec<(El, usize)> =
            (0..x.valid[1] as usize).map(|c| (x.get(r, c), c)).collect();
        row.sort_by(|a, b| num::topk_order(*a, *b));
        for (j, (v, c)) in row.into_iter().take(k as usize).enumerate() {
            vals.set(r, j, v);
            idx.set(r, j, El::I(c as i128));
        }
    }
    Ok((vals, idx))
}
