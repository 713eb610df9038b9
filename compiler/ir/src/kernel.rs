//! Kernel IR: a kernel is a structured graph of tile operations over SSA values.
//!
//! # Shape
//!
//! A [`Kernel`] has parameters ([`Param`]), a table of SSA values ([`Kernel::values`], indexed
//! by [`ValueId`]), mutable variables ([`Kernel::vars`], `var` and pipe slots), pipes
//! ([`Kernel::pipes`]) and a body: a list of [`Stmt`]. Every value is defined exactly once by
//! a [`Stmt::Op`] (or as the index of a [`Stmt::For`]) before it is used, in the same block or
//! an enclosing one. Values defined inside a `for` body are redefined on every iteration (as in
//! MLIR's `scf.for`); state that crosses iterations lives in a [`Var`].
//!
//! # Types
//!
//! Every value has a [`Type`]: a scalar of a [`DType`] or a 2-D tile `dtype[rows, cols]` with a
//! static shape. 1-D tiles are normalised to `[1, N]`.
//!
//! # Valid extents (partial tiles)
//!
//! A tile parameter may be *partial* per dimension (`f32[..64, 128]`: at most 64 valid rows).
//! At run time each tile parameter receives a *valid extent* `(valid_rows, valid_cols)` not
//! larger than its static shape (equal to it in non-partial dimensions). Every tile value
//! carries a valid extent too, derived as follows:
//! * `param` load: the parameter's valid extent; `full`, `iota`, constants: the static shape;
//! * elementwise ops (binary, compare, select, unary, cast): per dimension, the minimum of the
//!   operands' valid extents over the operands that are not broadcast in that dimension;
//! * row reductions `[R, C] -> [R, 1]`: `(vr, 1)`, reducing over the `vc` valid columns;
//!   column reductions: `(1, vc)` over the `vr` valid rows;
//! * `matmul [M, K] x [K, N]`: `(vm, vn)`, summing over `min(vk_a, vk_b)`; with `acc`, the
//!   minimum with the accumulator's extent;
//! * `transpose`: swapped; `slice`: the intersection of the region with the valid extent,
//!   relative to the region start; `rowtopk`: `(vr, k)` (selecting among the `vc` valid columns);
//! * a `var` read has the extent of the value last assigned to it.
//!
//! Elements outside a value's valid extent are unspecified and never observable: stores write
//! only the valid part (clipped to the destination's valid extent), reductions ignore them.
//!
//! # Numeric semantics (the reference interpreter and every backend agree on these)
//!
//! * f16 and bf16 keep their IEEE / bfloat16 bit layouts. Elementwise operations on them
//!   compute in f32 and round the result to the operand dtype (round to nearest, ties to even).
//!   f32 computes in f32, f64 in f64.
//! * Reductions and `matmul` accumulate in [`DType::accumulator`] and yield that dtype
//!   (f16/bf16/f32 → f32). Canonical summation order (so that vectorised code can match it bit
//!   for bit): a row sum keeps four partial sums `s_l = Σ_{j ≡ l (mod 4)} x_j`, each starting at
//!   `+0.0` and adding in increasing `j`, and returns `(s_0 + s_1) + (s_2 + s_3)`; a column sum
//!   adds rows in increasing order starting at `+0.0`; `rowmean`/… divide the sum by the valid
//!   count. `matmul` computes `c_ij = acc_ij + Σ_k a_ik · b_kj` adding in increasing `k`
//!   (starting from `acc_ij`, or `+0.0`), each step a fused multiply-add
//!   `c ← fma(a_ik, b_kj, c)` (one rounding).
//! * `max`/`min` (binary and reductions) follow IEEE 754-2019 `maximum`/`minimum`: a NaN operand
//!   gives NaN, and `-0.0 < +0.0`.
//! * Integers wrap (two's complement) on `+ - *`; `/` and `%` truncate toward zero; an integer
//!   division or remainder by zero is a run-time error. `pow`, transcendental functions and
//!   `rowmean` need float operands.
//! * `gelu(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`; `sigmoid(x) = 1/(1 + e^(−x))`;
//!   `silu(x) = x·sigmoid(x)`; `rsqrt(x) = 1/√x`; `recip(x) = 1/x`; `relu(x) = max(x, 0)`.
//!   In f32 (and so f16/bf16) `exp`, `log` and `tanh` are wsp's own fixed sequences of f32
//!   operations, within 1 ulp over every input ([`crate::math`]); `sin`, `cos`, `pow` and `%`
//!   are the platform's C library's.
//! * `cast`: float→float rounds to nearest even; float→int truncates toward zero and saturates
//!   (NaN → 0); int→float rounds to nearest; int→int wraps; bool→number is 0/1; number→bool
//!   is `x != 0`.
//! * A store to an `out`/`inout` parameter converts the value to the parameter's dtype with the
//!   same rules as `cast` (round on store).
//! * `rowtopk(x, k)`: per row, the `k` largest of the valid elements, larger value first and,
//!   among equal values, the smaller column index first (NaN sorts above every number); the
//!   indices are `i32` column indices.
//! * `iota([R, C])`: element `(r, c)` is the row-major linear index `r·C + c` (so `iota([1, C])`
//!   counts columns and `iota([R, 1])` counts rows).

use crate::dtype::{DType, ScalarValue};
use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// Index into [`Kernel::params`].
    ParamId
);
id_type!(
    /// Index into [`Kernel::values`].
    ValueId
);
id_type!(
    /// Index into [`Kernel::vars`].
    VarId
);
id_type!(
    /// Index into [`Kernel::pipes`].
    PipeId
);

/// A static 2-D tile type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TileType {
    pub dtype: DType,
    /// `[rows, cols]`.
    pub shape: [u32; 2],
}

impl TileType {
    pub fn new(dtype: DType, rows: u32, cols: u32) -> TileType {
        TileType {
            dtype,
            shape: [rows, cols],
        }
    }
    pub fn rows(&self) -> u32 {
        self.shape[0]
    }
    pub fn cols(&self) -> u32 {
        self.shape[1]
    }
    pub fn len(&self) -> usize {
        self.shape[0] as usize * self.shape[1] as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The type of an SSA value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Type {
    Scalar { dtype: DType },
    Tile(TileType),
}

impl Type {
    pub fn dtype(&self) -> DType {
        match self {
            Type::Scalar { dtype } => *dtype,
            Type::Tile(t) => t.dtype,
        }
    }
    pub fn tile(&self) -> Option<TileType> {
        match self {
            Type::Tile(t) => Some(*t),
            Type::Scalar { .. } => None,
        }
    }
    pub fn scalar(dtype: DType) -> Type {
        Type::Scalar { dtype }
    }
}

/// Direction of a tile parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    In,
    Out,
    InOut,
}

impl Direction {
    pub fn reads(self) -> bool {
        matches!(self, Direction::In | Direction::InOut)
    }
    pub fn writes(self) -> bool {
        matches!(self, Direction::Out | Direction::InOut)
    }
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Param {
    pub name: String,
    #[serde(flatten)]
    pub kind: ParamKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ParamKind {
    /// A tile argument, bound to a tensor view at each task.
    Tile {
        dir: Direction,
        tile: TileType,
        /// `[rows_partial, cols_partial]`: `true` where the dimension is written `..N` (at most
        /// `N` valid; the valid extent comes from the view at run time).
        partial: [bool; 2],
    },
    /// A scalar argument with an optional default (used when the call omits it).
    Scalar {
        dtype: DType,
        default: Option<ScalarValue>,
    },
}

/// Metadata of one SSA value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ValueInfo {
    pub ty: Type,
    /// Source name (`let s = ...`), for dumps and error messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A mutable variable: a `var` of the source, or a pipe slot reserved by `talloc`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Var {
    pub name: String,
    pub ty: Type,
}

/// A kernel-level FIFO (`pipe s: Pipe[f32[128, 256], slots: 2]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Pipe {
    pub name: String,
    pub elem: TileType,
    pub slots: u32,
}

/// An implementation of a kernel for one target (`extern kernel k(...) { ascend: "k.cpp" }`):
/// the target's name and the source file's path, relative to the declaring `.wsp` file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExternImpl {
    pub target: String,
    pub path: String,
}

/// A kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    pub values: Vec<ValueInfo>,
    #[serde(default)]
    pub vars: Vec<Var>,
    #[serde(default)]
    pub pipes: Vec<Pipe>,
    /// The `.wsp` body (the reference semantics: a kernel's own body, or for an extern kernel the
    /// body of the kernel its `sim:` binding names); `None` for a kernel that only has extern
    /// implementations.
    pub body: Option<Vec<Stmt>>,
    #[serde(default)]
    pub externs: Vec<ExternImpl>,
    /// Cycles a task of this kernel takes, as an extern kernel declares them (`cost: 1200`);
    /// they replace the cost model's figure for its body on every architecture model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<u64>,
    /// The kernel's name in its declaration, for run-time errors (absent in hand-built
    /// programs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<crate::workload::SrcSpan>,
}

/// An affine index inside a kernel: `constant + Σ coeff · value`, where every value is a scalar
/// integer (typically a `for` index).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KIndex {
    pub constant: i64,
    #[serde(default)]
    pub terms: Vec<(ValueId, i64)>,
}

impl KIndex {
    pub fn constant(c: i64) -> KIndex {
        KIndex {
            constant: c,
            terms: Vec::new(),
        }
    }
}

/// A rectangular sub-range of a tile with a static extent: rows `row_start ..
/// row_start + rows`, columns `col_start .. col_start + cols`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Region {
    pub row_start: KIndex,
    pub rows: u32,
    pub col_start: KIndex,
    pub cols: u32,
}

/// Binary, unary and reduction operations: declared once, in the language's vocabulary.
pub use wsp_vocab::ops::{BinaryOp, ReduceOp, UnaryOp};

/// Comparisons; the result has dtype bool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// The operator as `.wsp`, C and C++ write it.
    pub const fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// An operation producing values. Serialized with a `"kind"` tag.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Op {
    /// Reads a parameter: a tile param gives its current contents (an `inout` tile sees earlier
    /// stores of this task), a scalar param its value.
    Param {
        param: ParamId,
    },
    /// A scalar constant of the given dtype.
    Const {
        value: ScalarValue,
        dtype: DType,
    },
    Binary {
        op: BinaryOp,
        lhs: ValueId,
        rhs: ValueId,
    },
    Cmp {
        op: CmpOp,
        lhs: ValueId,
        rhs: ValueId,
    },
    /// `select(cond, on_true, on_false)`; `cond` is bool and broadcasts like a binary operand.
    Select {
        cond: ValueId,
        on_true: ValueId,
        on_false: ValueId,
    },
    Unary {
        op: UnaryOp,
        x: ValueId,
    },
    Reduce {
        op: ReduceOp,
        x: ValueId,
    },
    /// `matmul(a, b)` or `matmul(a, b, acc: c)`.
    Matmul {
        a: ValueId,
        b: ValueId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        acc: Option<ValueId>,
    },
    Transpose {
        x: ValueId,
    },
    Cast {
        x: ValueId,
        dtype: DType,
    },
    /// `full([rows, cols], value)`; `value` is a scalar of `dtype`.
    Full {
        shape: [u32; 2],
        dtype: DType,
        value: ValueId,
    },
    Iota {
        shape: [u32; 2],
        dtype: DType,
    },
    /// `let (values, indices) = rowtopk(x, k)`: two results, `[R, k]` of x's dtype and
    /// `[R, k]` i32.
    RowTopK {
        x: ValueId,
        k: u32,
    },
    /// A static-extent sub-range of a tile value.
    Slice {
        x: ValueId,
        region: Region,
    },
    /// The current value of a variable (a snapshot).
    VarRead {
        var: VarId,
    },
    /// `tpop(pipe)`: the oldest pushed slot of the pipe.
    TPop {
        pipe: PipeId,
    },
}

impl Op {
    /// Number of results the op defines.
    pub fn num_results(&self) -> usize {
        match self {
            Op::RowTopK { .. } => 2,
            _ => 1,
        }
    }
}

/// Which unit a pipe section runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SectionKind {
    Cube,
    Vector,
}

/// A statement. Serialized with a `"stmt"` tag.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "stmt", rename_all = "snake_case")]
pub enum Stmt {
    /// Defines `results` (one, or two for `rowtopk`).
    Op { results: Vec<ValueId>, op: Op },
    /// Stores a tile to an `out`/`inout` parameter, whole or a static sub-range, converting to
    /// the parameter's dtype (round on store).
    Store {
        param: ParamId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        region: Option<Region>,
        value: ValueId,
    },
    /// Assigns a variable, whole or a static sub-range (`slot[:, 0..128] = ...`).
    Assign {
        var: VarId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        region: Option<Region>,
        value: ValueId,
    },
    /// `for index in start..end { body }` with constant bounds; `index` is a scalar i64 value.
    For {
        index: ValueId,
        start: i64,
        end: i64,
        body: Vec<Stmt>,
    },
    /// `cube { }` / `vector { }`.
    Section { kind: SectionKind, body: Vec<Stmt> },
    /// `let slot = talloc(pipe)`: reserves a slot; `slot` is a variable of the pipe's element
    /// type, written by [`Stmt::Assign`].
    TAlloc { pipe: PipeId, slot: VarId },
    /// `tpush(pipe, slot)`: commits the slot's contents.
    TPush { pipe: PipeId, slot: VarId },
    /// `tfree(pipe, value)`: releases a slot obtained by `tpop`.
    TFree { pipe: PipeId, value: ValueId },
}

impl Kernel {
    /// The type of a value (`None` if the id is out of range).
    pub fn value_type(&self, v: ValueId) -> Option<Type> {
        self.values.get(v.index()).map(|i| i.ty)
    }

    pub fn param_by_name(&self, name: &str) -> Option<(ParamId, &Param)> {
        self.params
            .iter()
            .enumerate()
            .find(|(_, p)| p.name == name)
            .map(|(i, p)| (ParamId(i as u32), p))
    }

    /// Tile parameters with their ids.
    pub fn tile_params(
        &self,
    ) -> impl Iterator<Item = (ParamId, Direction, TileType, [bool; 2])> + '_ {
        self.params
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p.kind {
                ParamKind::Tile { dir, tile, partial } => {
                    Some((ParamId(i as u32), dir, tile, partial))
                }
                ParamKind::Scalar { .. } => None,
            })
    }
}
