//! The abstract syntax tree of a `.wsp` file.
//!
//! Span convention (important for incrementality):
//! * [`ItemNode::range`] is the item's **absolute** byte range in the file.
//! * Every span *inside* an [`Item`] is **relative to `ItemNode::range.start`**.
//!   Editing one item therefore leaves every other `Item` value bit-for-bit equal,
//!   so salsa can backdate the queries keyed on them.
//! * [`crate::Parse::errors`] and [`crate::Parse::tokens`] carry absolute spans.
//!
//! Every node owns its strings and has a span. Unparseable pieces become
//! `Error` nodes so that the tree always exists.

use crate::Span;

/// A name with its span.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A parsed file: its items in source order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct SourceFile {
    pub items: Vec<ItemNode>,
}

/// One top-level item with its absolute position.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ItemNode {
    /// Absolute byte range of the item (including its doc comment).
    pub range: Span,
    /// The item; spans inside are relative to `range.start`. Shared: the database keeps each
    /// item's parse and a file's parse holds the same items, so an edit copies, compares and
    /// frees only the items it touched.
    pub item: std::sync::Arc<Item>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Item {
    /// `///` doc comment lines before the item, joined with `\n`, markers stripped.
    pub docs: Option<String>,
    pub kind: ItemKind,
    /// Span of the whole item (relative: starts at 0 unless preceded by docs).
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ItemKind {
    Import(Import),
    Const(ConstDecl),
    Param(ParamDecl),
    Axis(AxisDecl),
    Tensor(TensorDecl),
    Kernel(Kernel),
    Workload(Workload),
    Channel(ChannelDecl),
    Process(Process),
    Schedule(Schedule),
    Expect(Expect),
    /// Text that could not be parsed as any item.
    Error,
}

impl Item {
    /// The declared name, if the item declares one.
    pub fn name(&self) -> Option<&Ident> {
        match &self.kind {
            ItemKind::Const(d) => Some(&d.name),
            ItemKind::Param(d) => Some(&d.name),
            ItemKind::Axis(d) => Some(&d.name),
            ItemKind::Tensor(d) => Some(&d.name),
            ItemKind::Kernel(d) => Some(&d.name),
            ItemKind::Workload(d) => Some(&d.name),
            ItemKind::Channel(d) => Some(&d.name),
            ItemKind::Process(d) => Some(&d.name),
            ItemKind::Schedule(d) => Some(&d.name),
            ItemKind::Import(_) | ItemKind::Expect(_) | ItemKind::Error => None,
        }
    }
}

/// `import std.nn.{rmsnorm, softmax}` / `import std.attention` / `import layers`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Import {
    /// Module path segments (`std`, `nn`).
    pub path: Vec<Ident>,
    /// `Some` for the `{a, b}` form: the names brought into scope.
    pub names: Option<Vec<Ident>>,
}

/// `const D = 128` or `const D: i32 = 128`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConstDecl {
    pub name: Ident,
    pub ty: Option<TypeExpr>,
    pub value: Expr,
}

/// `param batch_size: u32 = 4`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParamDecl {
    pub name: Ident,
    pub ty: TypeExpr,
    pub default: Option<Expr>,
}

/// `axis heads = Dense[8]`, `axis b = DenseDyn(n)`, `axis t = Ragged(b, lens)`,
/// `axis r = Sparse(b, indptr, indices)`. The constructor is kept as an
/// expression (an `Index` or `Call` on the constructor name); the checker
/// interprets it and reports unknown constructors.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AxisDecl {
    pub name: Ident,
    pub ctor: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorKind {
    Input,
    Output,
    /// `tensor` — scratch global tensor.
    Scratch,
    /// A workload block's local tensor (`let H: f32[64, 128] = scratch()`), as the checker
    /// names it; never the kind of a declaration item.
    Local,
}

/// `input Q: f32[B, T] = load("q.npy")`, `output O: f32[B, T]`, `tensor T0: f32[N] = full(-1e30)`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorDecl {
    pub kind: TensorKind,
    /// Span of the `input`/`output`/`tensor` keyword.
    pub kind_span: Span,
    pub name: Ident,
    pub ty: TypeExpr,
    pub init: Option<Expr>,
}

/// `f32`, `f32[B, 64]`, `f16[..64, 128]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TypeExpr {
    /// The dtype name as written (`f32`, `bf16`, ...); validated by the checker.
    pub dtype: Ident,
    /// `None` for a scalar type; `Some(dims)` for a tensor/tile type (may be empty: `f32[]`).
    pub dims: Option<Vec<Dim>>,
    pub span: Span,
}

/// One dimension of a tensor or tile type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dim {
    /// `true` for `..64`: at most 64 valid elements (partial tail tiles).
    pub partial: bool,
    pub size: Expr,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    In,
    Out,
    InOut,
}

/// A kernel parameter: a tile with a direction, or a scalar with an optional default.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelParam {
    pub name: Ident,
    /// `Some` for tiles (`in`, `out`, `inout`), `None` for scalars.
    pub dir: Option<(Direction, Span)>,
    pub ty: TypeExpr,
    pub default: Option<Expr>,
    pub span: Span,
}

/// `kernel k(params) { body }` or `extern kernel k(params) { ascend: "k.cpp" }`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    /// Span of the `extern` keyword, when present.
    pub extern_span: Option<Span>,
    pub name: Ident,
    pub params: Vec<KernelParam>,
    pub body: KernelBody,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KernelBody {
    /// A `.wsp` body: the reference semantics.
    Block(Block),
    /// `{ ascend: "file.cpp", aie: "file.cc", sim: reference, cost: 1200 }` — per-target
    /// implementations.
    Extern(Vec<ExternBinding>),
}

/// `target: value` in an extern kernel's body.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExternBinding {
    pub target: Ident,
    pub value: ExternValue,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ExternValue {
    /// A backend's source file (`ascend: "k.cpp"`), relative to the declaring file.
    Path(StrLit),
    /// `sim: reference_kernel`, `cost: 1200`: a name or a constant expression.
    Expr(Expr),
}

impl ExternBinding {
    /// The file path, for a binding that gives one.
    pub fn path(&self) -> Option<&StrLit> {
        match &self.value {
            ExternValue::Path(p) => Some(p),
            ExternValue::Expr(_) => None,
        }
    }

    /// The span of the value.
    pub fn value_span(&self) -> Span {
        match &self.value {
            ExternValue::Path(p) => p.span,
            ExternValue::Expr(e) => e.span,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StrLit {
    pub value: String,
    pub span: Span,
}

/// `workload w { stmts }` or `workload w = combine(a, b)` / `sequential(..)` / `connect(..)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Workload {
    pub name: Ident,
    pub body: WorkloadBody,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum WorkloadBody {
    Block(Block),
    /// `= expr`: a call of `combine`, `sequential` or `connect` (args may contain `replicate(p, n)`).
    Expr(Expr),
}

/// `channel c: Channel[depth: 2]` (also `Channel[depth: 2, latency: 10]`, or just `channel c`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChannelDecl {
    pub name: Ident,
    /// The type constructor name (`Channel`), when written.
    pub ty_name: Option<Ident>,
    pub args: Vec<Arg>,
}

/// `process p consumes a, b produces c { body }`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Process {
    pub name: Ident,
    pub consumes: Vec<Ident>,
    pub produces: Vec<Ident>,
    pub body: Block,
}

/// `schedule main = attention .dispatch(round_robin(4)) .task_window(8192)`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Schedule {
    pub name: Ident,
    pub workload: Ident,
    pub directives: Vec<Directive>,
}

/// `.name(args)` or `.name` in a schedule chain.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Directive {
    pub name: Ident,
    pub args: Vec<Arg>,
    pub span: Span,
}

/// `expect close(Y, load("g.npy"), rtol: 1e-5)` / `expect total_cycles == 4864`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Expect {
    pub expr: Expr,
}

/// `{ stmt* }`
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

impl Stmt {
    /// `let H: f32[64, 128] = scratch()` (a workload block's local tensor): its name and type.
    pub fn local_tensor(&self) -> Option<(&Ident, &TypeExpr)> {
        let StmtKind::Let {
            names,
            tuple: false,
            ty: Some(ty),
            value,
        } = &self.kind
        else {
            return None;
        };
        let (
            [name],
            ExprKind::Call {
                callee,
                coords: None,
                args,
            },
        ) = (names.as_slice(), &value.kind)
        else {
            return None;
        };
        let is_scratch =
            matches!(&callee.kind, ExprKind::Name(n) if n.name == wsp_vocab::words::LOCAL_TENSOR);
        (is_scratch && args.is_empty()).then_some((name, ty))
    }
}

/// Statements of kernels, workloads and processes share one syntax; the
/// checker decides which are allowed where.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StmtKind {
    /// `let x = e`, `let x: f32[8, 1] = e`, `let (v, i) = rowtopk(x, 8)`
    Let {
        names: Vec<Ident>,
        /// `true` when written as a tuple pattern `(a, b)`.
        tuple: bool,
        ty: Option<TypeExpr>,
        value: Expr,
    },
    /// `var m = e` / `var m: f32[8, 1] = e`
    Var {
        name: Ident,
        ty: Option<TypeExpr>,
        value: Expr,
    },
    /// `place = e`, `place += e`; `place` is a `Name` or an `Index` (sub-range).
    Assign {
        target: Expr,
        op: Option<BinOp>,
        value: Expr,
    },
    /// `for i in 0..N {}`, `for b, h in P(batch, heads) {}`, `for t in P.seq(tiles) {}`,
    /// `for e in P.sel(routing[b]) {}`
    For {
        vars: Vec<Ident>,
        iter: Expr,
        body: Block,
    },
    /// `when c {} else when c2 {} else {}`
    When {
        branches: Vec<(Expr, Block)>,
        otherwise: Option<Block>,
    },
    /// `send ch, task_or_expr`
    Send { channel: Ident, value: Expr },
    /// `consume ch as i {}` / `consume ch as (b, h) {}`
    Consume {
        channel: Ident,
        bindings: Vec<Ident>,
        body: Block,
    },
    /// `pipe s: Pipe[f32[128, 256], slots: 2]`
    Pipe {
        name: Ident,
        elem: TypeExpr,
        args: Vec<Arg>,
    },
    /// `cube { }` / `vector { }`
    Section {
        kind: SectionKind,
        kind_span: Span,
        body: Block,
    },
    /// A bare expression: a task call `k[i](a: X[i])`, `tpush(s, slot)`, ...
    Expr(Expr),
    /// Unparseable statement (recovered).
    Error,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SectionKind {
    Cube,
    Vector,
}

/// A call argument, optionally named: `rtol: 1e-4`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ExprKind {
    /// Integer literal (`42`, `0x2a`, `1_024`). Out-of-range literals are a parse error
    /// and become `Error`.
    Int(u64),
    /// Float literal (`1.0`, `1e-6`).
    Float(FloatLit),
    Str(String),
    Bool(bool),
    /// An identifier (including dtype names and policy names like `fifo`).
    Name(Ident),
    /// `base.field` (`P.seq`, `std.nn`).
    Field {
        base: Box<Expr>,
        field: Ident,
    },
    Unary {
        op: UnOp,
        expr: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `f(args)`, or a task call `k[coords](args)` when `coords` is `Some`.
    Call {
        callee: Box<Expr>,
        coords: Option<Vec<Expr>>,
        args: Vec<Arg>,
    },
    /// `X[i, a..b, :]` — view or sub-range; slice entries are `Range` / `FullSlice`.
    Index {
        base: Box<Expr>,
        indices: Vec<Expr>,
    },
    /// `a..b`, `..b`, `a..` (also kernel `for` bounds).
    Range {
        start: Option<Box<Expr>>,
        end: Option<Box<Expr>>,
    },
    /// `:` inside an index — the whole dimension.
    FullSlice,
    /// `[1, 2, 3]`
    List(Vec<Expr>),
    /// `(a, b)` (a parenthesised single expression is just that expression)
    Tuple(Vec<Expr>),
    /// Unparseable expression (recovered).
    Error,
}

/// A float literal value, compared and hashed by its bits so the tree is `Eq + Hash`.
#[derive(Clone, Copy, Debug)]
pub struct FloatLit(pub f64);

impl PartialEq for FloatLit {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for FloatLit {}
impl std::hash::Hash for FloatLit {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    /// How tightly the operator binds, as the parser's Pratt table has it (higher binds
    /// tighter; all are left-associative).
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Mul | BinOp::Div | BinOp::Rem => 6,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
            BinOp::And => 3,
            BinOp::Or => 2,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}
