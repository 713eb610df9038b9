//! Kernel operations: the functions a kernel body calls, and the elementwise, reduction and
//! binary operation sets the IR carries.
//!
//! [`KERNEL_FNS`] is the table of callable kernel functions: each row names the function
//! ([`KernelFn::name`]), how it is called, how many positional arguments it takes and its
//! capability family ([`Family`], a row of the capability matrix). [`UnaryOp`], [`ReduceOp`]
//! and [`BinaryOp`] are the IR's operation enums (re-exported by `wsp_ir::kernel`), so a
//! function of the table maps to its IR operation by a `match`, never by its spelling.

use serde::{Deserialize, Serialize};

/// Binary elementwise operations (broadcasting `[R,C] op [R,1] | [1,C] | [1,1] | scalar`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    /// Remainder: truncated (`fmod` for floats).
    Rem,
    Max,
    Min,
    Pow,
    /// Logical and on bool operands.
    And,
    /// Logical or on bool operands.
    Or,
}

impl BinaryOp {
    /// How the operation is written: an operator (`+`, `&&`) or a function name (`max`).
    pub const fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Pow => "pow",
            BinaryOp::And => "&&",
            BinaryOp::Or => "||",
        }
    }
}

/// Unary elementwise operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnaryOp {
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Recip,
    Tanh,
    Sigmoid,
    Sin,
    Cos,
    Relu,
    Gelu,
    Silu,
    Abs,
    Neg,
    /// Logical not on bool operands (written `!x`).
    Not,
}

impl UnaryOp {
    /// The function's name (`exp`); `not` for the `!` operator.
    pub const fn name(self) -> &'static str {
        match self {
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Recip => "recip",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Relu => "relu",
            UnaryOp::Gelu => "gelu",
            UnaryOp::Silu => "silu",
            UnaryOp::Abs => "abs",
            UnaryOp::Neg => "neg",
            UnaryOp::Not => "not",
        }
    }

    /// Whether the op needs a float operand.
    pub fn float_only(self) -> bool {
        !matches!(
            self,
            UnaryOp::Relu | UnaryOp::Abs | UnaryOp::Neg | UnaryOp::Not
        )
    }
}

/// Row and column reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReduceOp {
    RowSum,
    RowMax,
    RowMin,
    RowMean,
    ColSum,
    ColMax,
    ColMin,
}

impl ReduceOp {
    pub const fn name(self) -> &'static str {
        match self {
            ReduceOp::RowSum => "rowsum",
            ReduceOp::RowMax => "rowmax",
            ReduceOp::RowMin => "rowmin",
            ReduceOp::RowMean => "rowmean",
            ReduceOp::ColSum => "colsum",
            ReduceOp::ColMax => "colmax",
            ReduceOp::ColMin => "colmin",
        }
    }

    /// Row reductions give `[R, 1]`, column reductions `[1, C]`.
    pub fn is_row(self) -> bool {
        matches!(
            self,
            ReduceOp::RowSum | ReduceOp::RowMax | ReduceOp::RowMin | ReduceOp::RowMean
        )
    }
}

/// A function a kernel body may call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelFn {
    /// `exp(x)`, `relu(x)`, ...
    Unary(UnaryOp),
    /// `max(a, b)`, `min(a, b)`, `pow(a, b)`.
    Binary(BinaryOp),
    /// `rowsum(x)`, `colmax(x)`, ...
    Reduce(ReduceOp),
    Select,
    Matmul,
    Transpose,
    Cast,
    Full,
    Iota,
    RowTopK,
    TAlloc,
    TPush,
    TPop,
    TFree,
}

/// The capability family of a kernel operation: one row of the capability matrix
/// (`wsp_arch::capabilities`) each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    Elementwise,
    Reduction,
    Matmul,
    Transpose,
    Cast,
    RowTopK,
    IotaFull,
    SelectCompare,
    Pipe,
}

impl Family {
    pub const ALL: [Family; 9] = [
        Family::Elementwise,
        Family::Reduction,
        Family::Matmul,
        Family::Transpose,
        Family::Cast,
        Family::RowTopK,
        Family::IotaFull,
        Family::SelectCompare,
        Family::Pipe,
    ];

    /// The key of the family's row in the capability matrix.
    pub const fn capability_key(self) -> &'static str {
        match self {
            Family::Elementwise => "kernel.elementwise",
            Family::Reduction => "kernel.reduction",
            Family::Matmul => "kernel.matmul",
            Family::Transpose => "kernel.transpose",
            Family::Cast => "kernel.cast",
            Family::RowTopK => "kernel.rowtopk",
            Family::IotaFull => "kernel.iota_full",
            Family::SelectCompare => "kernel.select_compare",
            Family::Pipe => "kernel.pipe",
        }
    }
}

/// One row of [`KERNEL_FNS`].
#[derive(Clone, Copy, Debug)]
pub struct FnInfo {
    pub f: KernelFn,
    /// How it is called, for completion and signature help: `rowsum(x) -> [R, 1]`.
    pub signature: &'static str,
    /// Positional arguments it takes (named ones, such as `matmul`'s `acc:`, aside).
    pub arity: u8,
}

const fn row(f: KernelFn, signature: &'static str, arity: u8) -> FnInfo {
    FnInfo {
        f,
        signature,
        arity,
    }
}

use KernelFn as K;

/// Every function a kernel body may call, in the order completion lists them.
pub const KERNEL_FNS: &[FnInfo] = &[
    row(K::Binary(BinaryOp::Max), "max(a, b)", 2),
    row(K::Binary(BinaryOp::Min), "min(a, b)", 2),
    row(K::Binary(BinaryOp::Pow), "pow(a, b)", 2),
    row(K::Select, "select(mask, a, b)", 3),
    row(K::Unary(UnaryOp::Exp), "exp(x)", 1),
    row(K::Unary(UnaryOp::Log), "log(x)", 1),
    row(K::Unary(UnaryOp::Sqrt), "sqrt(x)", 1),
    row(K::Unary(UnaryOp::Rsqrt), "rsqrt(x)", 1),
    row(K::Unary(UnaryOp::Recip), "recip(x)", 1),
    row(K::Unary(UnaryOp::Tanh), "tanh(x)", 1),
    row(K::Unary(UnaryOp::Sigmoid), "sigmoid(x)", 1),
    row(K::Unary(UnaryOp::Sin), "sin(x)", 1),
    row(K::Unary(UnaryOp::Cos), "cos(x)", 1),
    row(K::Unary(UnaryOp::Relu), "relu(x)", 1),
    row(K::Unary(UnaryOp::Gelu), "gelu(x)", 1),
    row(K::Unary(UnaryOp::Silu), "silu(x)", 1),
    row(K::Unary(UnaryOp::Abs), "abs(x)", 1),
    row(K::Unary(UnaryOp::Neg), "neg(x)", 1),
    row(K::Reduce(ReduceOp::RowSum), "rowsum(x) -> [R, 1]", 1),
    row(K::Reduce(ReduceOp::RowMax), "rowmax(x) -> [R, 1]", 1),
    row(K::Reduce(ReduceOp::RowMin), "rowmin(x) -> [R, 1]", 1),
    row(K::Reduce(ReduceOp::RowMean), "rowmean(x) -> [R, 1]", 1),
    row(K::Reduce(ReduceOp::ColSum), "colsum(x) -> [1, C]", 1),
    row(K::Reduce(ReduceOp::ColMax), "colmax(x) -> [1, C]", 1),
    row(K::Reduce(ReduceOp::ColMin), "colmin(x) -> [1, C]", 1),
    row(
        K::Matmul,
        "matmul(a: [M, K], b: [K, N], acc: c?) -> [M, N]",
        2,
    ),
    row(K::Transpose, "transpose(x: [R, C]) -> [C, R]", 1),
    row(K::Cast, "cast(x, dtype)", 2),
    row(K::Full, "full([R, C], value)", 2),
    row(K::Iota, "iota([R, C])", 1),
    row(K::RowTopK, "rowtopk(x, k) -> (values, indices)", 2),
    row(K::TAlloc, "talloc(pipe) -> slot", 1),
    row(K::TPush, "tpush(pipe, slot)", 2),
    row(K::TPop, "tpop(pipe) -> tile", 1),
    row(K::TFree, "tfree(pipe, tile)", 2),
];

/// The names of [`KERNEL_FNS`], in table order.
pub const KERNEL_FN_NAMES: [&str; KERNEL_FNS.len()] = {
    let mut out = [""; KERNEL_FNS.len()];
    let mut i = 0;
    while i < KERNEL_FNS.len() {
        out[i] = KERNEL_FNS[i].f.name();
        i += 1;
    }
    out
};

impl KernelFn {
    /// The function's name as written.
    pub const fn name(self) -> &'static str {
        match self {
            K::Unary(op) => op.name(),
            K::Binary(op) => op.symbol(),
            K::Reduce(op) => op.name(),
            K::Select => "select",
            K::Matmul => "matmul",
            K::Transpose => "transpose",
            K::Cast => "cast",
            K::Full => "full",
            K::Iota => "iota",
            K::RowTopK => "rowtopk",
            K::TAlloc => "talloc",
            K::TPush => "tpush",
            K::TPop => "tpop",
            K::TFree => "tfree",
        }
    }

    /// The callable function of this name.
    pub fn from_name(name: &str) -> Option<KernelFn> {
        KERNEL_FNS.iter().map(|r| r.f).find(|f| f.name() == name)
    }

    /// The function's row of [`KERNEL_FNS`]; `None` for an operation that is not called by
    /// name (`!`'s `Not`, the arithmetic operators).
    pub fn info(self) -> Option<&'static FnInfo> {
        KERNEL_FNS.iter().find(|r| r.f == self)
    }

    /// How it is called, for a function called by name.
    pub fn signature(self) -> Option<&'static str> {
        self.info().map(|r| r.signature)
    }

    /// The capability family.
    pub const fn family(self) -> Family {
        match self {
            K::Unary(_) | K::Binary(_) => Family::Elementwise,
            K::Reduce(_) => Family::Reduction,
            K::Select => Family::SelectCompare,
            K::Matmul => Family::Matmul,
            K::Transpose => Family::Transpose,
            K::Cast => Family::Cast,
            K::Full | K::Iota => Family::IotaFull,
            K::RowTopK => Family::RowTopK,
            K::TAlloc | K::TPush | K::TPop | K::TFree => Family::Pipe,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut names = KERNEL_FN_NAMES.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), KERNEL_FNS.len());
        for r in KERNEL_FNS {
            assert_eq!(KernelFn::from_name(r.f.name()), Some(r.f));
            assert!(r.signature.starts_with(r.f.name()), "{}", r.signature);
            assert_eq!(r.f.signature(), Some(r.signature));
        }
        assert_eq!(KernelFn::from_name("not"), None, "`!` is an operator");
        assert_eq!(KernelFn::from_name("+"), None);
        assert!(KernelFn::Unary(UnaryOp::Not).info().is_none());
        assert!(KernelFn::Binary(BinaryOp::Add).signature().is_none());
    }

    #[test]
    fn every_unary_and_reduction_is_callable() {
        use UnaryOp::*;
        for op in [
            Exp, Log, Sqrt, Rsqrt, Recip, Tanh, Sigmoid, Sin, Cos, Relu, Gelu, Silu, Abs, Neg,
        ] {
            assert_eq!(KernelFn::from_name(op.name()), Some(KernelFn::Unary(op)));
        }
        use ReduceOp::*;
        for op in [RowSum, RowMax, RowMin, RowMean, ColSum, ColMax, ColMin] {
            assert_eq!(KernelFn::from_name(op.name()), Some(KernelFn::Reduce(op)));
            assert_eq!(op.is_row(), op.name().starts_with("row"));
        }
    }

    #[test]
    fn every_family_is_used() {
        for fam in Family::ALL {
            assert!(
                KERNEL_FNS.iter().any(|r| r.f.family() == fam),
                "{fam:?} has no function"
            );
        }
    }
}
