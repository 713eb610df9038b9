//! Type rules of the kernel IR: result types of operations, a validator for whole kernels, and
//! a small builder that infers value types (used by lowering, tests and tools).

use crate::dtype::{DType, ScalarValue};
use crate::interp::broadcast_extent;
use crate::kernel::*;

fn ty_of(k: &Kernel, v: ValueId) -> Result<Type, String> {
    k.value_type(v)
        .ok_or_else(|| format!("value %{} does not exist", v.0))
}

fn shape_of(t: Type) -> Option<([u32; 2], [u32; 2])> {
    t.tile().map(|t| (t.shape, t.shape))
}

fn elementwise(dtype: DType, operands: &[Type]) -> Result<Type, String> {
    let exts: Vec<_> = operands.iter().map(|t| shape_of(*t)).collect();
    Ok(match broadcast_extent(&exts)? {
        None => Type::Scalar { dtype },
        Some((shape, _)) => Type::Tile(TileType { dtype, shape }),
    })
}

fn tile_of(k: &Kernel, v: ValueId, what: &str) -> Result<TileType, String> {
    ty_of(k, v)?
        .tile()
        .ok_or_else(|| format!("`{what}` needs a tile operand, %{} is a scalar", v.0))
}

/// The result types of `op` in kernel `k` (one, or two for `rowtopk`).
pub fn result_types(k: &Kernel, op: &Op) -> Result<Vec<Type>, String> {
    let t = match op {
        Op::Param { param } => {
            let p = k
                .params
                .get(param.index())
                .ok_or_else(|| format!("parameter #{} does not exist", param.0))?;
            match &p.kind {
                ParamKind::Tile { tile, .. } => Type::Tile(*tile),
                ParamKind::Scalar { dtype, .. } => Type::Scalar { dtype: *dtype },
            }
        }
        Op::Const { dtype, .. } => Type::Scalar { dtype: *dtype },
        Op::Binary { op, lhs, rhs } => {
            let (a, b) = (ty_of(k, *lhs)?, ty_of(k, *rhs)?);
            let d = a.dtype();
            if d != b.dtype() {
                return Err(format!(
                    "`{}` mixes {} and {}; insert a `cast`",
                    op.symbol(),
                    d,
                    b.dtype()
                ));
            }
            let ok = match op {
                BinaryOp::And | BinaryOp::Or => d.is_bool(),
                BinaryOp::Pow => d.is_float(),
                _ => !d.is_bool(),
            };
            if !ok {
                return Err(format!("`{}` is not defined on {d} operands", op.symbol()));
            }
            elementwise(d, &[a, b])?
        }
        Op::Cmp { lhs, rhs, .. } => {
            let (a, b) = (ty_of(k, *lhs)?, ty_of(k, *rhs)?);
            if a.dtype() != b.dtype() {
                return Err(format!(
                    "comparison mixes {} and {}; insert a `cast`",
                    a.dtype(),
                    b.dtype()
                ));
            }
            elementwise(DType::Bool, &[a, b])?
        }
        Op::Select {
            cond,
            on_true,
            on_false,
        } => {
            let (c, a, b) = (ty_of(k, *cond)?, ty_of(k, *on_true)?, ty_of(k, *on_false)?);
            if c.dtype() != DType::Bool {
                return Err(format!(
                    "`select` condition is {}, expected bool",
                    c.dtype()
                ));
            }
            if a.dtype() != b.dtype() {
                return Err(format!(
                    "`select` branches are {} and {}; insert a `cast`",
                    a.dtype(),
                    b.dtype()
                ));
            }
            elementwise(a.dtype(), &[c, a, b])?
        }
        Op::Unary { op, x } => {
            let t = ty_of(k, *x)?;
            let d = t.dtype();
            let ok = match op {
                UnaryOp::Not => d.is_bool(),
                UnaryOp::Abs | UnaryOp::Neg | UnaryOp::Relu => !d.is_bool(),
                _ => d.is_float(),
            };
            if !ok {
                return Err(format!("`{}` is not defined on {d}", op.name()));
            }
            t
        }
        Op::Cast { x, dtype } => elementwise(*dtype, &[ty_of(k, *x)?])?,
        Op::Reduce { op, x } => {
            let t = tile_of(k, *x, "reduction")?;
            if t.dtype.is_bool() || (*op == ReduceOp::RowMean && !t.dtype.is_float()) {
                return Err(format!("reduction {op:?} is not defined on {}", t.dtype));
            }
            let shape = if op.is_row() {
                [t.shape[0], 1]
            } else {
                [1, t.shape[1]]
            };
            Type::Tile(TileType {
                dtype: t.dtype.accumulator(),
                shape,
            })
        }
        Op::Matmul { a, b, acc } => {
            let (ta, tb) = (tile_of(k, *a, "matmul")?, tile_of(k, *b, "matmul")?);
            if ta.dtype != tb.dtype || !ta.dtype.is_float() {
                return Err(format!(
                    "`matmul` needs two float tiles of one dtype, found {} and {}",
                    ta.dtype, tb.dtype
                ));
            }
            if ta.shape[1] != tb.shape[0] {
                return Err(format!(
                    "`matmul` of [{}, {}] and [{}, {}]: inner dimensions differ",
                    ta.shape[0], ta.shape[1], tb.shape[0], tb.shape[1]
                ));
            }
            let out = TileType::new(ta.dtype.accumulator(), ta.shape[0], tb.shape[1]);
            if let Some(c) = acc {
                let tc = tile_of(k, *c, "matmul")?;
                if tc != out {
                    return Err(format!(
                        "`matmul` accumulator is {}[{}, {}], expected {}[{}, {}]",
                        tc.dtype, tc.shape[0], tc.shape[1], out.dtype, out.shape[0], out.shape[1]
                    ));
                }
            }
            Type::Tile(out)
        }
        Op::Transpose { x } => {
            let t = tile_of(k, *x, "transpose")?;
            Type::Tile(TileType::new(t.dtype, t.shape[1], t.shape[0]))
        }
        Op::Full {
            shape,
            dtype,
            value,
        } => {
            let v = ty_of(k, *value)?;
            if v != (Type::Scalar { dtype: *dtype }) {
                return Err(format!("`full` of {dtype} needs a scalar {dtype} value"));
            }
            Type::Tile(TileType {
                dtype: *dtype,
                shape: *shape,
            })
        }
        Op::Iota { shape, dtype } => {
            if dtype.is_bool() {
                return Err("`iota` of bool".into());
            }
            Type::Tile(TileType {
                dtype: *dtype,
                shape: *shape,
            })
        }
        Op::RowTopK { x, k: kk } => {
            let t = tile_of(k, *x, "rowtopk")?;
            if *kk > t.shape[1] {
                return Err(format!(
                    "`rowtopk` with k = {kk} on a tile of {} columns",
                    t.shape[1]
                ));
            }
            return Ok(vec![
                Type::Tile(TileType::new(t.dtype, t.shape[0], *kk)),
                Type::Tile(TileType::new(DType::I32, t.shape[0], *kk)),
            ]);
        }
        Op::Slice { x, region } => {
            let t = tile_of(k, *x, "slice")?;
            Type::Tile(TileType::new(t.dtype, region.rows, region.cols))
        }
        Op::VarRead { var } => {
            k.vars
                .get(var.index())
                .ok_or_else(|| format!("variable #{} does not exist", var.0))?
                .ty
        }
        Op::TPop { pipe } => Type::Tile(
            k.pipes
                .get(pipe.index())
                .ok_or_else(|| format!("pipe #{} does not exist", pipe.0))?
                .elem,
        ),
    };
    Ok(vec![t])
}

/// Checks a whole kernel: every value defined once before use (in scope), declared types equal
/// to the rules' result types, stores to out/inout tiles of matching shape, assignments of
/// matching type, static regions inside their tiles.
pub fn validate(k: &Kernel) -> Result<(), String> {
    let mut defined = vec![false; k.values.len()];
    let Some(body) = &k.body else {
        return Ok(());
    };
    let r = validate_block(k, body, &mut defined);
    r.map_err(|e| format!("kernel `{}`: {e}", k.name))
}

fn define(defined: &mut [bool], v: ValueId) -> Result<(), String> {
    match defined.get_mut(v.index()) {
        Some(d) if !*d => {
            *d = true;
            Ok(())
        }
        Some(_) => Err(format!("value %{} is defined twice", v.0)),
        None => Err(format!("value %{} does not exist", v.0)),
    }
}

fn used(defined: &[bool], v: ValueId) -> Result<(), String> {
    match defined.get(v.index()) {
        Some(true) => Ok(()),
        _ => Err(format!("value %{} is used before its definition", v.0)),
    }
}

fn op_operands(op: &Op) -> Vec<ValueId> {
    match op {
        Op::Param { .. }
        | Op::Const { .. }
        | Op::Iota { .. }
        | Op::VarRead { .. }
        | Op::TPop { .. } => vec![],
        Op::Binary { lhs, rhs, .. } | Op::Cmp { lhs, rhs, .. } => vec![*lhs, *rhs],
        Op::Select {
            cond,
            on_true,
            on_false,
        } => vec![*cond, *on_true, *on_false],
        Op::Unary { x, .. }
        | Op::Reduce { x, .. }
        | Op::Transpose { x }
        | Op::Cast { x, .. }
        | Op::RowTopK { x, .. } => vec![*x],
        Op::Slice { x, region } => {
            let mut v = vec![*x];
            v.extend(region_values(region));
            v
        }
        Op::Matmul { a, b, acc } => {
            let mut v = vec![*a, *b];
            v.extend(acc.iter().copied());
            v
        }
        Op::Full { value, .. } => vec![*value],
    }
}

/// Every value an op reads (index terms of slice regions included).
pub fn operands(op: &Op) -> Vec<ValueId> {
    op_operands(op)
}

fn region_values(r: &Region) -> impl Iterator<Item = ValueId> + '_ {
    r.row_start
        .terms
        .iter()
        .chain(&r.col_start.terms)
        .map(|(v, _)| *v)
}

fn check_region(r: &Region, shape: [u32; 2], defined: &[bool]) -> Result<(), String> {
    for v in region_values(r) {
        used(defined, v)?;
    }
    if r.row_start.terms.is_empty() && r.col_start.terms.is_empty() {
        let (rs, cs) = (r.row_start.constant, r.col_start.constant);
        if rs < 0
            || cs < 0
            || rs + i64::from(r.rows) > i64::from(shape[0])
            || cs + i64::from(r.cols) > i64::from(shape[1])
        {
            return Err(format!(
                "region [{}..{}, {}..{}] is outside a tile of shape [{}, {}]",
                rs,
                rs + i64::from(r.rows),
                cs,
                cs + i64::from(r.cols),
                shape[0],
                shape[1]
            ));
        }
    }
    Ok(())
}

fn validate_block(k: &Kernel, stmts: &[Stmt], defined: &mut Vec<bool>) -> Result<(), String> {
    // Values defined in this block go out of scope at its end.
    let before = defined.clone();
    for s in stmts {
        match s {
            Stmt::Op { results, op } => {
                for v in op_operands(op) {
                    used(defined, v)?;
                }
                let tys = result_types(k, op)?;
                if tys.len() != results.len() {
                    return Err(format!(
                        "operation defines {} results, expected {}",
                        results.len(),
                        tys.len()
                    ));
                }
                for (r, t) in results.iter().zip(tys) {
                    define(defined, *r)?;
                    let declared = ty_of(k, *r)?;
                    if declared != t {
                        return Err(format!(
                            "value %{} is declared {declared:?} but its operation yields {t:?}",
                            r.0
                        ));
                    }
                }
            }
            Stmt::Store {
                param,
                region,
                value,
            } => {
                used(defined, *value)?;
                let p = k
                    .params
                    .get(param.index())
                    .ok_or_else(|| format!("parameter #{} does not exist", param.0))?;
                let ParamKind::Tile { dir, tile, .. } = p.kind else {
                    return Err(format!("store to scalar parameter `{}`", p.name));
                };
                if !dir.writes() {
                    return Err(format!("store to `in` parameter `{}`", p.name));
                }
                let vt = tile_of(k, *value, "store")?;
                let shape = match region {
                    Some(r) => {
                        check_region(r, tile.shape, defined)?;
                        [r.rows, r.cols]
                    }
                    None => tile.shape,
                };
                if vt.shape != shape {
                    return Err(format!(
                        "store of a [{}, {}] tile to `{}` expects [{}, {}]",
                        vt.shape[0], vt.shape[1], p.name, shape[0], shape[1]
                    ));
                }
            }
            Stmt::Assign { var, region, value } => {
                used(defined, *value)?;
                let v = k
                    .vars
                    .get(var.index())
                    .ok_or_else(|| format!("variable #{} does not exist", var.0))?;
                let vt = ty_of(k, *value)?;
                match (region, v.ty) {
                    (None, t) if t == vt => {}
                    (Some(r), Type::Tile(tt)) => {
                        check_region(r, tt.shape, defined)?;
                        if vt != Type::Tile(TileType::new(tt.dtype, r.rows, r.cols)) {
                            return Err(format!(
                                "assignment of {vt:?} to a [{}, {}] region of `{}`",
                                r.rows, r.cols, v.name
                            ));
                        }
                    }
                    _ => {
                        return Err(format!(
                            "assignment of {vt:?} to `{}` of type {:?}",
                            v.name, v.ty
                        ))
                    }
                }
            }
            Stmt::For { index, body, .. } => {
                if ty_of(k, *index)? != Type::scalar(DType::I64) {
                    return Err(format!("loop index %{} must be a scalar i64", index.0));
                }
                define(defined, *index)?;
                validate_block(k, body, defined)?;
                // The index is scoped to the loop.
                if let Some(d) = defined.get_mut(index.index()) {
                    *d = false;
                }
            }
            Stmt::Section { body, .. } => validate_block(k, body, defined)?,
            Stmt::TAlloc { pipe, slot } | Stmt::TPush { pipe, slot } => {
                let p = k
                    .pipes
                    .get(pipe.index())
                    .ok_or_else(|| format!("pipe #{} does not exist", pipe.0))?;
                let v = k
                    .vars
                    .get(slot.index())
                    .ok_or_else(|| format!("variable #{} does not exist", slot.0))?;
                if v.ty != Type::Tile(p.elem) {
                    return Err(format!(
                        "slot `{}` does not have the element type of pipe `{}`",
                        v.name, p.name
                    ));
                }
            }
            Stmt::TFree { pipe, value } => {
                used(defined, *value)?;
                if k.pipes.get(pipe.index()).is_none() {
                    return Err(format!("pipe #{} does not exist", pipe.0));
                }
            }
        }
    }
    *defined = before;
    Ok(())
}

/// Builds kernels with inferred value types.
#[derive(Debug)]
pub struct KernelBuilder {
    kernel: Kernel,
    blocks: Vec<Vec<Stmt>>,
    fors: Vec<(ValueId, i64, i64)>,
}

impl KernelBuilder {
    pub fn new(name: &str) -> KernelBuilder {
        KernelBuilder {
            kernel: Kernel {
                name: name.to_string(),
                params: Vec::new(),
                values: Vec::new(),
                vars: Vec::new(),
                pipes: Vec::new(),
                body: None,
                externs: Vec::new(),
                cost: None,
                at: None,
            },
            blocks: vec![Vec::new()],
            fors: Vec::new(),
        }
    }

    pub fn tile_param(&mut self, name: &str, dir: Direction, tile: TileType) -> ParamId {
        self.partial_tile_param(name, dir, tile, [false, false])
    }

    pub fn partial_tile_param(
        &mut self,
        name: &str,
        dir: Direction,
        tile: TileType,
        partial: [bool; 2],
    ) -> ParamId {
        self.kernel.params.push(Param {
            name: name.into(),
            kind: ParamKind::Tile { dir, tile, partial },
        });
        ParamId(self.kernel.params.len() as u32 - 1)
    }

    pub fn scalar_param(
        &mut self,
        name: &str,
        dtype: DType,
        default: Option<ScalarValue>,
    ) -> ParamId {
        self.kernel.params.push(Param {
            name: name.into(),
            kind: ParamKind::Scalar { dtype, default },
        });
        ParamId(self.kernel.params.len() as u32 - 1)
    }

    pub fn var(&mut self, name: &str, ty: Type) -> VarId {
        self.kernel.vars.push(Var {
            name: name.into(),
            ty,
        });
        VarId(self.kernel.vars.len() as u32 - 1)
    }

    pub fn pipe(&mut self, name: &str, elem: TileType, slots: u32) -> PipeId {
        self.kernel.pipes.push(Pipe {
            name: name.into(),
            elem,
            slots,
        });
        PipeId(self.kernel.pipes.len() as u32 - 1)
    }

    fn new_value(&mut self, ty: Type) -> ValueId {
        self.kernel.values.push(ValueInfo { ty, name: None });
        ValueId(self.kernel.values.len() as u32 - 1)
    }

    /// Names a value (for dumps and messages).
    pub fn name(&mut self, v: ValueId, name: &str) {
        if let Some(i) = self.kernel.values.get_mut(v.index()) {
            i.name = Some(name.into());
        }
    }

    fn push(&mut self, s: Stmt) {
        if let Some(b) = self.blocks.last_mut() {
            b.push(s);
        }
    }

    /// Appends an operation; returns its results.
    pub fn op_n(&mut self, op: Op) -> Result<Vec<ValueId>, String> {
        let tys = result_types(&self.kernel, &op)?;
        let results: Vec<ValueId> = tys.into_iter().map(|t| self.new_value(t)).collect();
        self.push(Stmt::Op {
            results: results.clone(),
            op,
        });
        Ok(results)
    }

    /// Appends a single-result operation.
    pub fn op(&mut self, op: Op) -> Result<ValueId, String> {
        let r = self.op_n(op)?;
        r.first()
            .copied()
            .ok_or_else(|| "operation has no result".to_string())
    }

    pub fn load(&mut self, param: ParamId) -> Result<ValueId, String> {
        self.op(Op::Param { param })
    }

    pub fn constant(&mut self, value: ScalarValue, dtype: DType) -> Result<ValueId, String> {
        self.op(Op::Const { value, dtype })
    }

    pub fn binary(&mut self, op: BinaryOp, lhs: ValueId, rhs: ValueId) -> Result<ValueId, String> {
        self.op(Op::Binary { op, lhs, rhs })
    }

    pub fn unary(&mut self, op: UnaryOp, x: ValueId) -> Result<ValueId, String> {
        self.op(Op::Unary { op, x })
    }

    pub fn store(&mut self, param: ParamId, value: ValueId) {
        self.push(Stmt::Store {
            param,
            region: None,
            value,
        });
    }

    /// Appends any statement (stores with regions, assignments, pipe statements).
    pub fn stmt(&mut self, s: Stmt) {
        self.push(s);
    }

    /// Opens `for i in start..end`; returns the index value.
    pub fn begin_for(&mut self, start: i64, end: i64) -> ValueId {
        let index = self.new_value(Type::scalar(DType::I64));
        self.fors.push((index, start, end));
        self.blocks.push(Vec::new());
        index
    }

    /// Closes the innermost `for`.
    pub fn end_for(&mut self) -> Result<(), String> {
        let (index, start, end) = self.fors.pop().ok_or("end_for without begin_for")?;
        let body = self.blocks.pop().unwrap_or_default();
        self.push(Stmt::For {
            index,
            start,
            end,
            body,
        });
        Ok(())
    }

    /// Finishes the kernel and validates it.
    pub fn finish(mut self) -> Result<Kernel, String> {
        if !self.fors.is_empty() {
            return Err("unclosed `for` in kernel builder".into());
        }
        self.kernel.body = Some(self.blocks.pop().unwrap_or_default());
        validate(&self.kernel)?;
        Ok(self.kernel)
    }
}
