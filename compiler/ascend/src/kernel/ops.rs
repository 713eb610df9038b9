//! Ops on tiles as PTO-ISA instructions.

use wsp_ir::kernel::*;
use wsp_ir::DType;

use super::emit::{compute_dtype, is_16, CTile, Cg, R};
use super::plan::Loc;
use super::scalar::{constant, elem_ty};
use super::ErrorCode;
use wsp_ir::ScalarValue;

fn min_u(a: &str, b: &str) -> String {
    format!("std::min<unsigned>({a}, {b})")
}

impl Cg<'_> {
    pub(super) fn op(&mut self, results: &[ValueId], op: &Op) -> R<()> {
        if results.len() != op.num_results() {
            return Err(self.err("an operation with the wrong number of results"));
        }
        let res = results[0];
        let rty = self.value_type(res)?;
        let Type::Tile(rt) = rty else {
            return self.scalar_op(res, rty.dtype(), op);
        };
        match op {
            Op::Param { param } => {
                let p = param.0;
                let t = self.def_tile(
                    res,
                    rt,
                    &format!("(unsigned)p{p}_rows"),
                    &format!("(unsigned)p{p}_cols"),
                )?;
                let g = self.fresh("g");
                let e = elem_ty(rt.dtype);
                self.line(format!(
                    "GlobalTensor<{e}, Shape<1, 1, 1, DYNAMIC, DYNAMIC>, Stride<1, 1, 1, DYNAMIC, DYNAMIC>> {g}(p{p}_base, Shape<1, 1, 1, DYNAMIC, DYNAMIC>(1, 1, 1, p{p}_rows, p{p}_cols), Stride<1, 1, 1, DYNAMIC, DYNAMIC>(1, 1, 1, p{p}_rs, p{p}_cs));"
                ));
                self.on_pipe("PIPE_MTE2");
                self.line(format!("TLOAD({}, {g});", t.name));
                Ok(())
            }
            Op::Binary { op: bop, lhs, rhs } => {
                self.uses_vector = true;
                let d = self.value_type(*lhs)?.dtype();
                let inst = match (bop, d) {
                    (BinaryOp::And, DType::Bool) => "TAND",
                    (BinaryOp::Or, DType::Bool) => "TOR",
                    (BinaryOp::Add, _) => "TADD",
                    (BinaryOp::Sub, _) => "TSUB",
                    (BinaryOp::Mul, _) => "TMUL",
                    (BinaryOp::Max, _) => "TMAX",
                    (BinaryOp::Min, _) => "TMIN",
                    (BinaryOp::Div, d) if d.is_float() => "TDIV",
                    (BinaryOp::Rem, d) if d.is_float() => "TFMOD",
                    (BinaryOp::Pow, d) if d.is_float() => "TPOW",
                    _ => {
                        return Err(self.err(format!(
                            "`{}` on {d} tiles has no PTO-ISA lowering (integer division needs wsp's division-by-zero error)",
                            bop.symbol()
                        )))
                    }
                };
                let (vr, vc) = self.bcast_extent(&[*lhs, *rhs], rt.shape)?;
                let a = self.bcast(*lhs, rt.shape, &vr, &vc)?;
                let b = self.bcast(*rhs, rt.shape, &vr, &vc)?;
                let tmp = if *bop == BinaryOp::Pow {
                    Some(self.temp(Loc::Vec, rt, &vr, &vc))
                } else {
                    None
                };
                let t = self.def_tile(res, rt, &vr, &vc)?;
                self.on_pipe("PIPE_V");
                match tmp {
                    Some(tmp) => self.line(format!(
                        "{inst}({}, {}, {}, {});",
                        t.name, a.name, b.name, tmp.name
                    )),
                    None => self.line(format!("{inst}({}, {}, {});", t.name, a.name, b.name)),
                }
                Ok(())
            }
            Op::Cmp { op: cop, lhs, rhs } => {
                self.uses_vector = true;
                let (vr, vc) = self.bcast_extent(&[*lhs, *rhs], rt.shape)?;
                let a = self.bcast(*lhs, rt.shape, &vr, &vc)?;
                let b = self.bcast(*rhs, rt.shape, &vr, &vc)?;
                let t = self.def_tile(res, rt, &vr, &vc)?;
                let sym = cop.symbol();
                self.scalar_elementwise(&t, &[&a, &b], |x| {
                    format!("(uint8_t)({} {sym} {})", x[0], x[1])
                });
                Ok(())
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                self.uses_vector = true;
                let (vr, vc) = self.bcast_extent(&[*cond, *on_true, *on_false], rt.shape)?;
                let c = self.bcast(*cond, rt.shape, &vr, &vc)?;
                let a = self.bcast(*on_true, rt.shape, &vr, &vc)?;
                let b = self.bcast(*on_false, rt.shape, &vr, &vc)?;
                let t = self.def_tile(res, rt, &vr, &vc)?;
                self.scalar_elementwise(&t, &[&c, &a, &b], |x| {
                    format!("{} ? {} : {}", x[0], x[1], x[2])
                });
                Ok(())
            }
            Op::Unary { op: uop, x } => {
                self.uses_vector = true;
                self.unary(res, rt, *uop, *x)
            }
            Op::Cast { x, dtype } => {
                self.uses_vector = true;
                let from = self.value_type(*x)?.dtype();
                let (vr, vc) = self.bcast_extent(&[*x], rt.shape)?;
                let src = self.bcast(*x, rt.shape, &vr, &vc)?;
                let t = self.def_tile(res, rt, &vr, &vc)?;
                self.convert(&t, &src, from, *dtype);
                Ok(())
            }
            Op::Reduce { op: rop, x } => {
                self.uses_vector = true;
                self.reduce(res, rt, *rop, *x)
            }
            Op::Matmul { a, b, acc } => {
                self.uses_matmul = true;
                self.matmul(res, rt, *a, *b, *acc)
            }
            Op::Transpose { x } => {
                self.uses_vector = true;
                let src = self.tile_of(*x)?;
                let tmp = self.temp(Loc::Vec, rt, &src.vc(), &src.vr());
                let t = self.def_tile(res, rt, &src.vc(), &src.vr())?;
                self.on_pipe("PIPE_V");
                self.line(format!("TTRANS({}, {}, {});", t.name, src.name, tmp.name));
                Ok(())
            }
            Op::Full { value, .. } => {
                self.uses_vector = true;
                let s = self.scalar_of(*value)?;
                let t = self.def_tile(res, rt, &rt.rows().to_string(), &rt.cols().to_string())?;
                self.on_pipe("PIPE_V");
                self.line(format!("TEXPANDS({}, ({}){s});", t.name, elem_ty(rt.dtype)));
                Ok(())
            }
            Op::Iota { .. } => {
                self.uses_vector = true;
                self.iota(res, rt)
            }
            Op::RowTopK { x, k } => {
                self.uses_vector = true;
                self.rowtopk(results, *x, *k)
            }
            Op::Slice { x, region } => {
                self.uses_vector = true;
                let src = self.tile_of(*x)?;
                let (r0, c0) = self.region(region, src.shape);
                let vr = format!(
                    "(unsigned)std::min<int64_t>(std::max<int64_t>((int64_t){} - {r0}, 0), {})",
                    src.vr(),
                    region.rows
                );
                let vc = format!(
                    "(unsigned)std::min<int64_t>(std::max<int64_t>((int64_t){} - {c0}, 0), {})",
                    src.vc(),
                    region.cols
                );
                let t = self.def_tile(res, rt, &vr, &vc)?;
                self.on_pipe("PIPE_V");
                self.line(format!(
                    "TEXTRACT({}, {}, (uint16_t){r0}, (uint16_t){c0});",
                    t.name, src.name
                ));
                Ok(())
            }
            Op::VarRead { var } => {
                if let Some(pipe) = self.slot_pipe(*var) {
                    return self.read_slot(res, *var, pipe);
                }
                let v = self
                    .var_tiles
                    .get(var)
                    .cloned()
                    .ok_or_else(|| self.err(format!("variable #{} is not a tile", var.0)))?;
                let t = self.def_tile(res, rt, &v.vr(), &v.vc())?;
                self.on_pipe("PIPE_V");
                self.line(format!("TMOV({}, {});", t.name, v.name));
                Ok(())
            }
            Op::TPop { pipe } => self.tpop(res, *pipe),
            Op::Const { .. } => Err(self.err("a tile-typed constant")),
        }
    }

    /// The valid extent of an elementwise result of logical `shape` over `operands`: per
    /// dimension the minimum over the tile operands not broadcast in it.
    pub(super) fn bcast_extent(
        &self,
        operands: &[ValueId],
        shape: [u32; 2],
    ) -> R<(String, String)> {
        let mut out = [shape[0].to_string(), shape[1].to_string()];
        for (d, o) in out.iter_mut().enumerate() {
            let mut parts: Vec<String> = Vec::new();
            for v in operands {
                if let Type::Tile(t) = self.value_type(*v)? {
                    if t.shape[d] == shape[d] {
                        let ct = self.tile_of(*v)?;
                        parts.push(if d == 0 { ct.vr() } else { ct.vc() });
                    }
                }
            }
            if let Some(first) = parts.first() {
                *o = parts[1..].iter().fold(first.clone(), |a, b| min_u(&a, b));
            }
        }
        let [r, c] = out;
        Ok((r, c))
    }

    /// Operand `v` as a tile of logical `shape` (expanding scalars, rows and columns).
    pub(super) fn bcast(&mut self, v: ValueId, shape: [u32; 2], vr: &str, vc: &str) -> R<CTile> {
        let ty = self.value_type(v)?;
        let d = ty.dtype();
        let full = TileType::new(d, shape[0], shape[1]);
        match ty {
            Type::Scalar { .. } => {
                let s = self.scalar_of(v)?;
                let t = self.temp(Loc::Vec, full, vr, vc);
                self.on_pipe("PIPE_V");
                self.line(format!("TEXPANDS({}, ({}){s});", t.name, elem_ty(d)));
                Ok(t)
            }
            Type::Tile(t) if t.shape == shape => self.tile_of(v),
            Type::Tile(t) => {
                let src = self.tile_of(v)?;
                let (rows_b, cols_b) = (t.shape[0] != shape[0], t.shape[1] != shape[1]);
                let out = self.temp(Loc::Vec, full, vr, vc);
                if rows_b && cols_b {
                    let mid = self.temp(Loc::Vec, TileType::new(d, 1, shape[1]), "1", vc);
                    self.on_pipe("PIPE_V");
                    self.line(format!("TROWEXPAND({}, {});", mid.name, src.name));
                    self.line(format!("TCOLEXPAND({}, {});", out.name, mid.name));
                } else if cols_b {
                    self.on_pipe("PIPE_V");
                    self.line(format!("TROWEXPAND({}, {});", out.name, src.name));
                } else {
                    self.on_pipe("PIPE_V");
                    self.line(format!("TCOLEXPAND({}, {});", out.name, src.name));
                }
                Ok(out)
            }
        }
    }

    /// `dst = cast(src)` from dtype `from` to `to` over dst's valid region.
    pub(super) fn convert(&mut self, dst: &CTile, src: &CTile, from: DType, to: DType) {
        if to == DType::Bool && from != DType::Bool {
            let zero = if from.is_float() { "0.0" } else { "0" };
            self.scalar_elementwise(dst, &[src], |x| format!("(uint8_t)({} != {zero})", x[0]));
            return;
        }
        self.on_pipe("PIPE_V");
        if from == to {
            self.line(format!("TMOV({}, {});", dst.name, src.name));
        } else {
            let mode = if from.is_float() && !to.is_float() {
                "CAST_TRUNC"
            } else {
                "CAST_RINT"
            };
            self.line(format!(
                "TCVT({}, {}, RoundMode::{mode});",
                dst.name, src.name
            ));
        }
    }

    fn float_const(&self, d: DType, x: f64) -> String {
        constant(ScalarValue::Float(x), d)
    }

    fn unary(&mut self, res: ValueId, rt: TileType, uop: UnaryOp, x: ValueId) -> R<()> {
        let d = rt.dtype;
        let src = self.tile_of(x)?;
        let (vr, vc) = (src.vr(), src.vc());
        let direct = match (uop, d) {
            (UnaryOp::Exp, _) => Some("TEXP"),
            (UnaryOp::Log, _) => Some("TLOG"),
            (UnaryOp::Sqrt, _) => Some("TSQRT"),
            (UnaryOp::Recip, _) => Some("TRECIP"),
            (UnaryOp::Abs, _) => Some("TABS"),
            (UnaryOp::Neg, _) => Some("TNEG"),
            (UnaryOp::Relu, _) => Some("TRELU"),
            _ => None,
        };
        if uop == UnaryOp::Not {
            if d != DType::Bool {
                return Err(self.err(format!("`not` on {d} tiles")));
            }
            let t = self.def_tile(res, rt, &vr, &vc)?;
            self.scalar_elementwise(&t, &[&src], |x| format!("(uint8_t)({} == 0)", x[0]));
            return Ok(());
        }
        if let Some(inst) = direct {
            if !d.is_float() && uop.float_only() {
                return Err(self.err(format!("`{}` on {d} tiles", uop.name())));
            }
            let t = self.def_tile(res, rt, &vr, &vc)?;
            self.on_pipe("PIPE_V");
            self.line(format!("{inst}({}, {});", t.name, src.name));
            return Ok(());
        }
        if !d.is_float() {
            return Err(self.err(format!("`{}` on {d} tiles", uop.name())));
        }
        // A composite: computed in f32 (f64 for f64) and rounded once to the dtype.
        let p = compute_dtype(d);
        let pt = TileType::new(p, rt.rows(), rt.cols());
        let xin = if is_16(d) {
            let t = self.temp(Loc::Vec, pt, &vr, &vc);
            self.convert(&t, &src, d, p);
            t
        } else {
            src.clone()
        };
        let y = if is_16(d) {
            self.temp(Loc::Vec, pt, &vr, &vc)
        } else {
            self.def_tile(res, rt, &vr, &vc)?
        };
        let one = self.float_const(p, 1.0);
        self.on_pipe("PIPE_V");
        match uop {
            UnaryOp::Rsqrt => {
                self.line(format!("TSQRT({}, {});", y.name, xin.name));
                self.line(format!("TRECIP({}, {});", y.name, y.name));
            }
            UnaryOp::Sigmoid | UnaryOp::Silu => {
                let s = if uop == UnaryOp::Silu {
                    self.temp(Loc::Vec, pt, &vr, &vc)
                } else {
                    y.clone()
                };
                self.line(format!("TNEG({}, {});", s.name, xin.name));
                self.line(format!("TEXP({}, {});", s.name, s.name));
                self.line(format!("TADDS({}, {}, {one});", s.name, s.name));
                self.line(format!("TRECIP({}, {});", s.name, s.name));
                if uop == UnaryOp::Silu {
                    self.line(format!("TMUL({}, {}, {});", y.name, xin.name, s.name));
                }
            }
            UnaryOp::Tanh | UnaryOp::Sin | UnaryOp::Cos => {
                let f = uop.name();
                self.elementwise_libm(&y, &xin, f);
            }
            UnaryOp::Gelu => {
                let t = self.temp(Loc::Vec, pt, &vr, &vc);
                let c = self.float_const(p, 0.797_884_560_802_865_4);
                let k = self.float_const(p, 0.044715);
                let half = self.float_const(p, 0.5);
                self.line(format!("TMULS({}, {}, {k});", t.name, xin.name));
                self.line(format!("TMUL({}, {}, {});", t.name, t.name, xin.name));
                self.line(format!("TMUL({}, {}, {});", t.name, t.name, xin.name));
                self.line(format!("TADD({}, {}, {});", t.name, xin.name, t.name));
                self.line(format!("TMULS({}, {}, {c});", t.name, t.name));
                self.elementwise_libm(&t, &t, "tanh");
                self.line(format!("TADDS({}, {}, {one});", t.name, t.name));
                self.line(format!("TMULS({}, {}, {half});", y.name, xin.name));
                self.line(format!("TMUL({}, {}, {});", y.name, y.name, t.name));
            }
            _ => return Err(self.err(format!("`{}` has no lowering", uop.name()))),
        }
        if is_16(d) {
            let t = self.def_tile(res, rt, &vr, &vc)?;
            self.convert(&t, &y, p, d);
        }
        Ok(())
    }

    /// `dst[r, c] = f(src₀[r, c], …)` on the scalar unit over dst's valid region, `f` given
    /// each source element as a C++ expression (f16 and bf16 read as float: exact). For wsp's
    /// bool tiles, which hold a byte per element: PTO-ISA's compare and select instructions
    /// use packed bit masks instead (`TCMP`/`TCMPS` pack each row's bits into bytes of its own,
    /// `TSEL` reads the bits in one run across the rows), so comparisons, selects, `not` and
    /// casts to bool run here, correct on every PTO-ISA implementation, at scalar speed.
    fn scalar_elementwise(
        &mut self,
        dst: &CTile,
        srcs: &[&CTile],
        f: impl Fn(&[String]) -> String,
    ) {
        self.on_pipe("PIPE_S");
        let reads: Vec<String> = srcs
            .iter()
            .map(|s| {
                let v = format!("{}.GetValue({})", s.name, s.st.offset_expr("r_", "c_"));
                match s.st.dtype {
                    DType::F16 | DType::Bf16 => format!("(float){v}"),
                    _ => v,
                }
            })
            .collect();
        self.line(format!(
            "for (unsigned r_ = 0; r_ < {}; r_++) for (unsigned c_ = 0; c_ < {}; c_++) {}.SetValue({}, {});",
            dst.vr(),
            dst.vc(),
            dst.name,
            dst.st.offset_expr("r_", "c_"),
            f(&reads)
        ));
    }

    /// `dst = f(src)` element by element on the scalar unit (PTO-ISA has no tanh/sin/cos
    /// instruction), on f32 or f64 tiles.
    fn elementwise_libm(&mut self, dst: &CTile, src: &CTile, f: &str) {
        // tanh is wsp's own (`wsp_math.h`, as `wsp run` computes it), sin and cos the C
        // library's.
        let f = match f {
            "tanh" => "wsp_math_tanh".to_string(),
            other => format!("std::{other}"),
        };
        self.scalar_elementwise(dst, &[src], |x| format!("{f}({})", x[0]));
    }

    fn reduce(&mut self, res: ValueId, rt: TileType, rop: ReduceOp, x: ValueId) -> R<()> {
        let xt = match self.value_type(x)? {
            Type::Tile(t) => t,
            Type::Scalar { .. } => return Err(self.err("a reduction of a scalar")),
        };
        let d = xt.dtype;
        if d == DType::Bool || (rop == ReduceOp::RowMean && !d.is_float()) {
            return Err(self.err(format!("{rop:?} on {d} tiles").to_lowercase()));
        }
        if let Some((inst, takes)) = pto_reduce_refuses(rop, d) {
            return Err(self.err(format!(
                "`{}` on {d} tiles has no PTO-ISA instruction: {inst} takes {takes}",
                format!("{rop:?}").to_lowercase()
            )));
        }
        let src0 = self.tile_of(x)?;
        let acc = d.accumulator();
        let src = if acc != d {
            let t = self.temp(
                Loc::Vec,
                TileType::new(acc, xt.rows(), xt.cols()),
                &src0.vr(),
                &src0.vc(),
            );
            self.convert(&t, &src0, d, acc);
            t
        } else {
            src0
        };
        if rop.is_row() {
            let tmp = self.temp(
                Loc::Vec,
                TileType::new(acc, xt.rows(), xt.cols()),
                &src.vr(),
                &src.vc(),
            );
            let t = self.def_tile(res, rt, &src.vr(), "1")?;
            let inst = match rop {
                ReduceOp::RowMax => "TROWMAX",
                ReduceOp::RowMin => "TROWMIN",
                _ => "TROWSUM",
            };
            self.on_pipe("PIPE_V");
            self.line(format!("{inst}({}, {}, {});", t.name, src.name, tmp.name));
            if rop == ReduceOp::RowMean {
                self.line(format!(
                    "TDIVS({}, {}, ({}){});",
                    t.name,
                    t.name,
                    elem_ty(acc),
                    src.vc()
                ));
            }
        } else {
            let t = self.def_tile(res, rt, "1", &src.vc())?;
            let inst = match rop {
                ReduceOp::ColMax => "TCOLMAX",
                ReduceOp::ColMin => "TCOLMIN",
                _ => "TCOLSUM",
            };
            self.on_pipe("PIPE_V");
            self.line(format!("{inst}({}, {});", t.name, src.name));
        }
        Ok(())
    }

    fn matmul(
        &mut self,
        res: ValueId,
        rt: TileType,
        a: ValueId,
        b: ValueId,
        acc: Option<ValueId>,
    ) -> R<()> {
        let (at, bt) = match (self.value_type(a)?, self.value_type(b)?) {
            (Type::Tile(x), Type::Tile(y)) => (x, y),
            _ => return Err(self.err("`matmul` of a scalar")),
        };
        if at.dtype != bt.dtype || !at.dtype.is_float() || at.cols() != bt.rows() {
            return Err(self.err(
                "`matmul` needs two float tiles of one dtype with matching inner dimensions",
            ));
        }
        let (va, vb) = (self.tile_of(a)?, self.tile_of(b)?);
        let am = self.temp(Loc::Mat, at, &va.vr(), &va.vc());
        let bm = self.temp(Loc::Mat, bt, &vb.vr(), &vb.vc());
        self.on_pipe("PIPE_MTE3");
        self.line(format!("TMOV({}, {});", am.name, va.name));
        self.line(format!("TMOV({}, {});", bm.name, vb.name));
        let al = self.temp(Loc::Left, at, &va.vr(), &va.vc());
        let br = self.temp(Loc::Right, bt, &vb.vr(), &vb.vc());
        self.on_pipe("PIPE_MTE1");
        self.line(format!("TMOV({}, {});", al.name, am.name));
        self.line(format!("TMOV({}, {});", br.name, bm.name));
        let (mut vr, mut vc) = (va.vr(), vb.vc());
        let cin = match acc {
            Some(c) => {
                let vcin = self.tile_of(c)?;
                vr = min_u(&vr, &vcin.vr());
                vc = min_u(&vc, &vcin.vc());
                let t = self.temp(Loc::Acc, rt, &vcin.vr(), &vcin.vc());
                self.on_pipe("PIPE_FIX");
                self.line(format!("TMOV({}, {});", t.name, vcin.name));
                Some(t)
            }
            None => None,
        };
        let c = self.temp(Loc::Acc, rt, &vr, &vc);
        self.on_pipe("PIPE_M");
        match cin {
            Some(cin) => self.line(format!(
                "TMATMUL_ACC({}, {}, {}, {});",
                c.name, cin.name, al.name, br.name
            )),
            None => self.line(format!("TMATMUL({}, {}, {});", c.name, al.name, br.name)),
        }
        let t = self.def_tile(res, rt, &vr, &vc)?;
        self.on_pipe("PIPE_FIX");
        self.line(format!("TMOV({}, {});", t.name, c.name));
        Ok(())
    }

    /// `iota([R, C])`: TCI counts along one row; more rows add `r * C` (a counted row
    /// transposed to a column, scaled and expanded). Computed in i32 (i64 for 64-bit dtypes)
    /// and converted.
    fn iota(&mut self, res: ValueId, rt: TileType) -> R<()> {
        let wd = if rt.dtype.size_bytes() == 8 && rt.dtype.is_int() {
            rt.dtype
        } else {
            DType::I32
        };
        let we = elem_ty(wd);
        let (rows, cols) = (rt.rows(), rt.cols());
        let (r, c) = (rows.to_string(), cols.to_string());
        let direct = wd == rt.dtype;
        let out = if direct {
            self.def_tile(res, rt, &r, &c)?
        } else {
            self.temp(Loc::Vec, TileType::new(wd, rows, cols), &r, &c)
        };
        let counted = |cg: &mut Self, n: u32| -> CTile {
            let t = cg.temp(Loc::Vec, TileType::new(wd, 1, n), "1", &n.to_string());
            let ty = cg.type_name(t.st);
            cg.on_pipe("PIPE_V");
            cg.line(format!("TCI<{ty}, {we}, 0>({}, ({we})0);", t.name));
            t
        };
        if rows == 1 {
            let ty = self.type_name(out.st);
            self.on_pipe("PIPE_V");
            self.line(format!("TCI<{ty}, {we}, 0>({}, ({we})0);", out.name));
        } else {
            let rrow = counted(self, rows);
            let col_t = TileType::new(wd, rows, 1);
            let tmp = self.temp(Loc::Vec, col_t, &r, "1");
            let col = if cols == 1 {
                out.clone()
            } else {
                self.temp(Loc::Vec, col_t, &r, "1")
            };
            self.on_pipe("PIPE_V");
            self.line(format!(
                "TTRANS({}, {}, {});",
                col.name, rrow.name, tmp.name
            ));
            if cols > 1 {
                let row = counted(self, cols);
                self.line(format!("TMULS({}, {}, ({we}){cols});", col.name, col.name));
                let full = TileType::new(wd, rows, cols);
                let a = self.temp(Loc::Vec, full, &r, &c);
                let b = self.temp(Loc::Vec, full, &r, &c);
                self.on_pipe("PIPE_V");
                self.line(format!("TCOLEXPAND({}, {});", a.name, row.name));
                self.line(format!("TROWEXPAND({}, {});", b.name, col.name));
                self.line(format!("TADD({}, {}, {});", out.name, a.name, b.name));
            }
        }
        if !direct {
            let t = self.def_tile(res, rt, &r, &c)?;
            self.convert(&t, &out, wd, rt.dtype);
        }
        Ok(())
    }

    fn rowtopk(&mut self, results: &[ValueId], x: ValueId, k: u32) -> R<()> {
        let (Some(&vals), Some(&idx)) = (results.first(), results.get(1)) else {
            return Err(self.err("`rowtopk` with fewer than two results"));
        };
        let (Type::Tile(xt), Type::Tile(vt), Type::Tile(it)) = (
            self.value_type(x)?,
            self.value_type(vals)?,
            self.value_type(idx)?,
        ) else {
            return Err(self.err("`rowtopk` of a scalar"));
        };
        if xt.dtype == DType::Bool || vt.dtype != xt.dtype || it.dtype != DType::I32 {
            return Err(self.err("`rowtopk` with mismatched types"));
        }
        let src = self.tile_of(x)?;
        self.line(format!(
            "if ({k}u > {}) return {};",
            src.vc(),
            ErrorCode::Body as i32
        ));
        let v = self.def_tile(vals, vt, &src.vr(), &k.to_string())?;
        let ix = self.def_tile(idx, it, &src.vr(), &k.to_string())?;
        // PTO-ISA's sorts (TSORT32/TMRGSORT) order by value only; wsp's order (NaN first,
        // ties by column) is a selection on the scalar unit.
        self.on_pipe("PIPE_S");
        let float = xt.dtype.is_float();
        let cmp_ty = if float {
            super::scalar::scalar_ty(compute_dtype(xt.dtype))
        } else {
            super::scalar::scalar_ty(xt.dtype)
        };
        let off = |t: &CTile, r: &str, c: &str| t.st.offset_expr(r, c);
        let (ox, obest, ov, oi) = (
            off(&src, "r_", "c_"),
            off(&src, "r_", "best"),
            off(&v, "r_", "j_"),
            off(&ix, "r_", "j_"),
        );
        let better = if float {
            "(std::isnan(x_) && !std::isnan(bv)) || (!std::isnan(x_) && !std::isnan(bv) && x_ > bv)"
        } else {
            "x_ > bv"
        };
        let lines = [
            format!("for (unsigned r_ = 0; r_ < {}; r_++) {{", src.vr()),
            format!("    bool taken[{}] = {{}};", xt.cols()),
            format!("    for (unsigned j_ = 0; j_ < {k}u; j_++) {{"),
            format!("        int64_t best = -1; {cmp_ty} bv = 0;"),
            format!("        for (unsigned c_ = 0; c_ < {}; c_++) {{", src.vc()),
            "            if (taken[c_]) continue;".to_string(),
            format!(
                "            {cmp_ty} x_ = ({cmp_ty}){}.GetValue({ox});",
                src.name
            ),
            format!("            if (best < 0 || {better}) {{ best = c_; bv = x_; }}"),
            "        }".to_string(),
            format!("        if (best < 0) return {};", ErrorCode::Body as i32),
            "        taken[best] = true;".to_string(),
            format!(
                "        {}.SetValue({ov}, {}.GetValue({obest}));",
                v.name, src.name
            ),
            format!("        {}.SetValue({oi}, (int32_t)best);", ix.name),
            "    }".to_string(),
            "}".to_string(),
        ];
        for l in lines {
            self.line(l);
        }
        Ok(())
    }
}

/// The PTO-ISA reductions that refuse a dtype wsp has (their static assertions): the
/// instruction and what it takes. f64 tiles are emitted although PTO-ISA has no f64 at all
/// (docs/backends.md).
fn pto_reduce_refuses(rop: ReduceOp, d: DType) -> Option<(&'static str, &'static str)> {
    match rop {
        ReduceOp::ColSum if !d.is_float() => Some(("TCOLSUM", "float tiles")),
        ReduceOp::ColMax if !d.is_float() && !matches!(d, DType::I8 | DType::U8) => {
            Some(("TCOLMAX", "float, i8 and u8 tiles"))
        }
        ReduceOp::RowSum if !d.is_float() && !matches!(d, DType::I16 | DType::I32) => {
            Some(("TROWSUM", "float, i16 and i32 tiles"))
        }
        _ => None,
    }
}
