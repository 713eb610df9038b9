//! Architecture models (cores, clocks, buffers, cost tables) shared by checker, simulator and
//! emitters.
//!
//! A model is data: a TOML file (`std/arch/*.toml`, embedded here with `include_str!` so no file
//! is needed at run time, or a user path through [`Arch::load_path`]). Every model is validated on
//! load; errors name the file, the key and what is wrong. The cost functions
//! ([`Arch::op_cycles`], [`Arch::matmul_cycles`], [`Arch::dma_cycles`]) are what the compiler uses
//! to price a task and what the runtime uses to add dispatch and transfer time.

pub mod capabilities;

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

/// The built-in models: (name, TOML source).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "ascend910b",
        include_str!("../../../std/arch/ascend910b.toml"),
    ),
    (
        "ascend950",
        include_str!("../../../std/arch/ascend950.toml"),
    ),
    ("aie-ml", include_str!("../../../std/arch/aie-ml.toml")),
    (
        "pto_wsp_v9",
        include_str!("../../../std/arch/pto_wsp_v9.toml"),
    ),
];

/// A class of modeled cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CoreClass {
    Cube,
    Vector,
    Aicpu,
}

impl CoreClass {
    pub const ALL: [CoreClass; 3] = [CoreClass::Cube, CoreClass::Vector, CoreClass::Aicpu];

    pub fn name(self) -> &'static str {
        match self {
            CoreClass::Cube => "cube",
            CoreClass::Vector => "vector",
            CoreClass::Aicpu => "aicpu",
        }
    }

    pub fn from_name(s: &str) -> Option<CoreClass> {
        CoreClass::ALL.into_iter().find(|c| c.name() == s)
    }
}

impl fmt::Display for CoreClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How time is computed for this model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingSemantics {
    /// Discrete-event simulation: data edges, dispatch/complete overheads, DMA time.
    Event,
    /// PTO-WSP v9: in-order issue over program structure, no data edges, round-robin counter in
    /// emission order, per-worker clocks summed, total = the largest clock.
    V9,
}

/// A load or validation error: which file, which key, what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchError {
    pub file: String,
    pub key: String,
    pub message: String,
}

impl fmt::Display for ArchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: key `{}`: {}", self.file, self.key, self.message)
        }
    }
}

impl std::error::Error for ArchError {}

/// An error from a cost query (unknown transfer path, unknown dtype, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostError(pub String);

impl fmt::Display for CostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CostError {}

/// `cycles = round(slope · rows · cols + bias)`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Linear {
    pub slope: f64,
    pub bias: f64,
}

impl Linear {
    fn eval(&self, elems: u64) -> u64 {
        let v = (self.slope * elems as f64 + self.bias).round();
        if v.is_finite() && v > 0.0 {
            v as u64
        } else {
            0
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCore {
    count: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOverheads {
    #[serde(default)]
    submit: u64,
    dispatch: u64,
    complete: u64,
    resolve: u64,
    #[serde(default)]
    channel_latency: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatmul {
    kind: String,
    #[serde(default)]
    class: Option<String>,
    #[serde(default)]
    base: u64,
    #[serde(default)]
    block_m: u64,
    #[serde(default)]
    block_n: u64,
    #[serde(default)]
    k_bytes: u64,
    #[serde(default)]
    per_dtype: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFallback {
    #[serde(default)]
    slope: Option<f64>,
    #[serde(default)]
    slope_per_byte: Option<f64>,
    bias: f64,
}

#[derive(Clone, Debug, Deserialize)]
struct RawOp {
    class: String,
    #[serde(flatten)]
    per_dtype: BTreeMap<String, Linear>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArch {
    name: String,
    #[serde(default)]
    description: String,
    clock_hz: u64,
    timing: String,
    #[serde(default)]
    estimate: bool,
    #[serde(default)]
    estimated_fields: Vec<String>,
    cores: BTreeMap<String, RawCore>,
    #[serde(default)]
    buffers: BTreeMap<String, u64>,
    overheads: RawOverheads,
    #[serde(default)]
    dma: BTreeMap<String, toml::Value>,
    matmul: RawMatmul,
    #[serde(default)]
    ops: BTreeMap<String, RawOp>,
    #[serde(default)]
    fallback: BTreeMap<String, RawFallback>,
    #[serde(default)]
    task_io: BTreeMap<String, String>,
}

/// The cube MAD cost model.
#[derive(Clone, Debug, PartialEq)]
pub enum MatmulModel {
    /// `base + c(dtype) · ⌈M/block_m⌉ · ⌈K/(k_bytes/sizeof)⌉ · ⌈N/block_n⌉`.
    Fractal {
        base: u64,
        block_m: u64,
        block_n: u64,
        k_bytes: u64,
        per_dtype: BTreeMap<String, u64>,
    },
    /// `M · K · N` (the v9 accounting).
    Product,
}

/// The cost of one vector/scalar operation: per (op, dtype) table, with the class fallback.
#[derive(Clone, Debug, PartialEq)]
pub struct OpCost {
    pub class: CoreClass,
    /// Per dtype name; `any` matches every dtype.
    pub per_dtype: BTreeMap<String, Linear>,
}

/// Fallback formula for ops without a table entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fallback {
    /// `slope · elems + bias`.
    PerElement(Linear),
    /// `slope · bytes + bias`.
    PerByte(Linear),
}

/// Transfer bandwidths.
#[derive(Clone, Debug, PartialEq)]
pub enum DmaModel {
    /// Transfers cost nothing (v9).
    Free,
    /// GiB/s per path name (`"GM->UB"`).
    Paths(BTreeMap<String, f64>),
}

/// Runtime overheads per task, in cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overheads {
    /// The orchestration thread's time to submit one task (build its descriptor, find its
    /// dependencies): it submits the next task no sooner.
    pub submit: u64,
    pub dispatch: u64,
    pub complete: u64,
    pub resolve: u64,
    pub channel_latency: u64,
}

/// A validated architecture model.
#[derive(Clone, Debug, PartialEq)]
pub struct Arch {
    pub name: String,
    pub description: String,
    pub clock_hz: u64,
    pub timing: TimingSemantics,
    /// True when some figures are estimates (press-level or carried over).
    pub estimate: bool,
    pub estimated_fields: Vec<String>,
    /// Core classes present, with their counts (count ≥ 1).
    pub cores: BTreeMap<CoreClass, u32>,
    /// Buffer capacities in bytes by name (`UB`, `L1`, `L0A`, ...).
    pub buffers: BTreeMap<String, u64>,
    pub overheads: Overheads,
    pub dma: DmaModel,
    pub matmul: MatmulModel,
    /// The core class matmul runs on.
    pub matmul_class: CoreClass,
    pub ops: BTreeMap<String, OpCost>,
    pub fallback: BTreeMap<CoreClass, Fallback>,
    /// Per core class, the (load, store) transfer paths a task's region arguments move over.
    pub task_io: BTreeMap<CoreClass, (String, String)>,
}

/// Size in bytes of a dtype by name, `None` if unknown.
pub fn dtype_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "bool" | "i8" | "u8" | "int8" | "uint8" => 1,
        "f16" | "fp16" | "bf16" | "i16" | "u16" | "int16" => 2,
        "f32" | "fp32" | "i32" | "u32" | "int32" => 4,
        "f64" | "fp64" | "i64" | "u64" | "int64" => 8,
        _ => return None,
    })
}

/// The canonical table spelling of a dtype name (`f32` → `fp32`).
fn canonical_dtype(dtype: &str) -> &str {
    match dtype {
        "f16" => "fp16",
        "f32" => "fp32",
        "f64" => "fp64",
        "i8" => "int8",
        "i16" => "int16",
        "i32" => "int32",
        "i64" => "int64",
        other => other,
    }
}

/// The most cores of one class a model may declare (the runtime numbers a class's cores in 16
/// bits); far above any real target.
pub const MAX_CORES: u32 = 65_534;

/// The largest per-task overhead a model may declare (cycles): far above any real target, and
/// far enough below 2^64 that the runtime's clock cannot wrap.
pub const MAX_OVERHEAD: u64 = 1 << 40;

fn err(file: &str, key: impl Into<String>, message: impl Into<String>) -> ArchError {
    ArchError {
        file: file.to_string(),
        key: key.into(),
        message: message.into(),
    }
}

fn check_finite(file: &str, key: &str, v: f64, positive: bool) -> Result<(), ArchError> {
    if !v.is_finite() {
        return Err(err(
            file,
            key,
            format!("must be a finite number, found {v}"),
        ));
    }
    if positive && v <= 0.0 {
        return Err(err(file, key, format!("must be greater than 0, found {v}")));
    }
    if !positive && v < 0.0 {
        return Err(err(file, key, format!("must not be negative, found {v}")));
    }
    Ok(())
}

impl Arch {
    /// Names of the built-in models.
    pub fn builtin_names() -> impl Iterator<Item = &'static str> {
        BUILTIN.iter().map(|(n, _)| *n)
    }

    /// A built-in model by name. Each is parsed once per process (a parse is tens of
    /// microseconds; the language server and every runtime ask again).
    pub fn builtin(name: &str) -> Result<Arch, ArchError> {
        static PARSED: [OnceLock<Result<Arch, ArchError>>; BUILTIN.len()] =
            [const { OnceLock::new() }; BUILTIN.len()];
        match BUILTIN.iter().position(|(n, _)| *n == name) {
            Some(i) => {
                let (n, src) = BUILTIN[i];
                PARSED[i]
                    .get_or_init(|| Arch::parse(src, &format!("std/arch/{n}.toml")))
                    .clone()
            }
            None => Err(err(
                name,
                "",
                format!(
                    "no built-in architecture `{name}`; known: {}",
                    Arch::builtin_names().collect::<Vec<_>>().join(", ")
                ),
            )),
        }
    }

    /// Loads a user model from a TOML file.
    pub fn load_path(path: &Path) -> Result<Arch, ArchError> {
        let file = path.display().to_string();
        let src = std::fs::read_to_string(path)
            .map_err(|e| err(&file, "", format!("cannot read the file: {e}")))?;
        Arch::parse(&src, &file)
    }

    /// Parses and validates a model; `file` names it in errors.
    pub fn parse(src: &str, file: &str) -> Result<Arch, ArchError> {
        let raw: RawArch = toml::from_str(src).map_err(|e| {
            let msg = e.message().to_string();
            let loc = e
                .span()
                .map(|s| {
                    let line = src[..s.start.min(src.len())].matches('\n').count() + 1;
                    format!(" (line {line})")
                })
                .unwrap_or_default();
            err(file, "", format!("{msg}{loc}"))
        })?;
        Arch::validate(raw, file)
    }

    fn validate(raw: RawArch, file: &str) -> Result<Arch, ArchError> {
        if raw.name.trim().is_empty() {
            return Err(err(file, "name", "must not be empty"));
        }
        if raw.clock_hz == 0 {
            return Err(err(file, "clock_hz", "must be greater than 0"));
        }
        let timing = match raw.timing.as_str() {
            "event" => TimingSemantics::Event,
            "v9" => TimingSemantics::V9,
            other => {
                return Err(err(
                    file,
                    "timing",
                    format!("expected \"event\" or \"v9\", found \"{other}\""),
                ))
            }
        };
        let mut cores = BTreeMap::new();
        for (name, c) in &raw.cores {
            let class = CoreClass::from_name(name).ok_or_else(|| {
                err(
                    file,
                    format!("cores.{name}"),
                    "unknown core class; expected cube, vector or aicpu",
                )
            })?;
            if c.count == 0 {
                return Err(err(
                    file,
                    format!("cores.{name}.count"),
                    "must be at least 1 (remove the class if the target has none)",
                ));
            }
            if c.count > MAX_CORES {
                return Err(err(
                    file,
                    format!("cores.{name}.count"),
                    format!("must be at most {MAX_CORES}, found {}", c.count),
                ));
            }
            cores.insert(class, c.count);
        }
        if !cores.contains_key(&CoreClass::Vector) && !cores.contains_key(&CoreClass::Cube) {
            return Err(err(
                file,
                "cores",
                "a model needs at least one compute class (cube or vector)",
            ));
        }
        for (k, v) in &raw.buffers {
            if *v == 0 {
                return Err(err(
                    file,
                    format!("buffers.{k}"),
                    "capacity must be greater than 0",
                ));
            }
        }
        let dma = if raw.dma.get("free").and_then(|v| v.as_bool()) == Some(true) {
            if raw.dma.len() > 1 {
                return Err(err(
                    file,
                    "dma",
                    "`free = true` excludes per-path bandwidths",
                ));
            }
            DmaModel::Free
        } else {
            let mut paths = BTreeMap::new();
            for (k, v) in &raw.dma {
                let key = format!("dma.\"{k}\"");
                let bw = v
                    .as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .ok_or_else(|| err(file, &key, "expected a bandwidth in GiB/s (a number)"))?;
                check_finite(file, &key, bw, true)?;
                if !k.contains("->") {
                    return Err(err(
                        file,
                        &key,
                        "a path is written `SRC->DST`, e.g. \"GM->UB\"",
                    ));
                }
                paths.insert(k.clone(), bw);
            }
            DmaModel::Paths(paths)
        };
        let class_of = |key: &str, s: &str| {
            CoreClass::from_name(s).ok_or_else(|| {
                err(
                    file,
                    key,
                    format!("unknown core class \"{s}\"; expected cube, vector or aicpu"),
                )
            })
        };
        let matmul_class = match &raw.matmul.class {
            Some(c) => class_of("matmul.class", c)?,
            None => CoreClass::Cube,
        };
        if !cores.contains_key(&matmul_class) {
            return Err(err(
                file,
                "matmul.class",
                format!("matmul runs on `{matmul_class}` but the model has no such cores"),
            ));
        }
        let matmul = match raw.matmul.kind.as_str() {
            "product" => MatmulModel::Product,
            "fractal" => {
                let m = &raw.matmul;
                for (k, v) in [
                    ("block_m", m.block_m),
                    ("block_n", m.block_n),
                    ("k_bytes", m.k_bytes),
                ] {
                    if v == 0 {
                        return Err(err(file, format!("matmul.{k}"), "must be greater than 0"));
                    }
                }
                if m.per_dtype.is_empty() {
                    return Err(err(
                        file,
                        "matmul.per_dtype",
                        "a fractal matmul needs a cycles-per-block factor for at least one dtype",
                    ));
                }
                for k in m.per_dtype.keys() {
                    match dtype_size(k) {
                        Some(sz) if m.k_bytes.is_multiple_of(sz) => {}
                        Some(sz) => {
                            return Err(err(
                                file,
                                format!("matmul.per_dtype.{k}"),
                                format!(
                                    "k_bytes {} is not a multiple of the dtype size {sz}",
                                    m.k_bytes
                                ),
                            ))
                        }
                        None => {
                            return Err(err(file, format!("matmul.per_dtype.{k}"), "unknown dtype"))
                        }
                    }
                }
                MatmulModel::Fractal {
                    base: m.base,
                    block_m: m.block_m,
                    block_n: m.block_n,
                    k_bytes: m.k_bytes,
                    per_dtype: m
                        .per_dtype
                        .iter()
                        .map(|(k, v)| (canonical_dtype(k).to_string(), *v))
                        .collect(),
                }
            }
            other => {
                return Err(err(
                    file,
                    "matmul.kind",
                    format!("expected \"fractal\" or \"product\", found \"{other}\""),
                ))
            }
        };
        let mut ops = BTreeMap::new();
        for (name, op) in &raw.ops {
            let class = class_of(&format!("ops.{name}.class"), &op.class)?;
            let mut per = BTreeMap::new();
            for (dt, lin) in &op.per_dtype {
                let key = format!("ops.{name}.{dt}");
                if dt != "any" && dtype_size(dt).is_none() {
                    return Err(err(
                        file,
                        &key,
                        "unknown dtype (use fp16, bf16, fp32, int8, ... or any)",
                    ));
                }
                check_finite(file, &format!("{key}.slope"), lin.slope, false)?;
                check_finite(file, &format!("{key}.bias"), lin.bias, false)?;
                per.insert(canonical_dtype(dt).to_string(), *lin);
            }
            if per.is_empty() {
                return Err(err(
                    file,
                    format!("ops.{name}"),
                    "needs at least one dtype entry",
                ));
            }
            ops.insert(
                name.clone(),
                OpCost {
                    class,
                    per_dtype: per,
                },
            );
        }
        let mut fallback = BTreeMap::new();
        for (name, f) in &raw.fallback {
            let key = format!("fallback.{name}");
            let class = match name.as_str() {
                "scalar" => CoreClass::Aicpu,
                other => class_of(&key, other)?,
            };
            check_finite(file, &format!("{key}.bias"), f.bias, false)?;
            let fb = match (f.slope, f.slope_per_byte) {
                (Some(s), None) => {
                    check_finite(file, &format!("{key}.slope"), s, false)?;
                    Fallback::PerElement(Linear {
                        slope: s,
                        bias: f.bias,
                    })
                }
                (None, Some(s)) => {
                    check_finite(file, &format!("{key}.slope_per_byte"), s, false)?;
                    Fallback::PerByte(Linear {
                        slope: s,
                        bias: f.bias,
                    })
                }
                _ => {
                    return Err(err(
                        file,
                        key,
                        "give exactly one of `slope` (per element) or `slope_per_byte`",
                    ))
                }
            };
            fallback.insert(class, fb);
        }
        if !fallback.contains_key(&CoreClass::Vector) {
            return Err(err(
                file,
                "fallback.vector",
                "missing: ops without a table entry need a vector fallback formula",
            ));
        }
        let mut task_io: BTreeMap<CoreClass, (String, String)> = BTreeMap::new();
        for (k, path) in &raw.task_io {
            let key = format!("task_io.{k}");
            let (class, load) = match k.rsplit_once('_') {
                Some((c, "load")) => (class_of(&key, c)?, true),
                Some((c, "store")) => (class_of(&key, c)?, false),
                _ => {
                    return Err(err(
                        file,
                        key,
                        "expected `<class>_load` or `<class>_store`, e.g. vector_load",
                    ))
                }
            };
            if let DmaModel::Paths(paths) = &dma {
                if !paths.contains_key(path) {
                    return Err(err(
                        file,
                        key,
                        format!("transfer path \"{path}\" is not in the [dma] table"),
                    ));
                }
            }
            let e = task_io.entry(class).or_default();
            if load {
                e.0 = path.clone();
            } else {
                e.1 = path.clone();
            }
        }
        for (class, (l, s)) in &task_io {
            if l.is_empty() || s.is_empty() {
                return Err(err(
                    file,
                    format!(
                        "task_io.{class}_{}",
                        if l.is_empty() { "load" } else { "store" }
                    ),
                    "missing: give both the load and the store path of a class",
                ));
            }
        }
        let o = &raw.overheads;
        for (key, v) in [
            ("submit", o.submit),
            ("dispatch", o.dispatch),
            ("complete", o.complete),
            ("resolve", o.resolve),
            ("channel_latency", o.channel_latency),
        ] {
            if v > MAX_OVERHEAD {
                return Err(err(
                    file,
                    format!("overheads.{key}"),
                    format!("must be at most {MAX_OVERHEAD} cycles (2^40), found {v}"),
                ));
            }
        }
        Ok(Arch {
            task_io,
            name: raw.name,
            description: raw.description,
            clock_hz: raw.clock_hz,
            timing,
            estimate: raw.estimate,
            estimated_fields: raw.estimated_fields,
            cores,
            buffers: raw.buffers,
            overheads: Overheads {
                submit: raw.overheads.submit,
                dispatch: raw.overheads.dispatch,
                complete: raw.overheads.complete,
                resolve: raw.overheads.resolve,
                channel_latency: raw.overheads.channel_latency,
            },
            dma,
            matmul,
            matmul_class,
            ops,
            fallback,
        })
    }

    /// Number of cores of a class (0 if the model has none).
    pub fn core_count(&self, class: CoreClass) -> u32 {
        self.cores.get(&class).copied().unwrap_or(0)
    }

    /// Capacity in bytes of a named buffer.
    pub fn buffer(&self, name: &str) -> Option<u64> {
        self.buffers.get(name).copied()
    }

    /// The core class an op runs on (table entry, else vector).
    pub fn op_class(&self, op: &str) -> CoreClass {
        self.ops
            .get(op)
            .map(|o| o.class)
            .unwrap_or(CoreClass::Vector)
    }

    /// Cycles of a vector/scalar op over a `rows × cols` tile of `dtype`:
    /// `round(slope · rows · cols + bias)` from the (op, dtype) table, else (op, `any`), else
    /// the fallback formula of the op's class.
    pub fn op_cycles(&self, op: &str, dtype: &str, rows: u64, cols: u64) -> Result<u64, CostError> {
        let elems = rows.saturating_mul(cols);
        let dt = canonical_dtype(dtype);
        if let Some(entry) = self.ops.get(op) {
            if let Some(lin) = entry
                .per_dtype
                .get(dt)
                .or_else(|| entry.per_dtype.get("any"))
            {
                return Ok(lin.eval(elems));
            }
        }
        let class = self.op_class(op);
        let fb = self
            .fallback
            .get(&class)
            .or_else(|| self.fallback.get(&CoreClass::Vector))
            .ok_or_else(|| {
                CostError(format!(
                    "model `{}` has no fallback cost for `{op}`",
                    self.name
                ))
            })?;
        Ok(match fb {
            Fallback::PerElement(l) => l.eval(elems),
            Fallback::PerByte(l) => {
                let sz = dtype_size(dtype).ok_or_else(|| {
                    CostError(format!("unknown dtype `{dtype}` in the cost of `{op}`"))
                })?;
                l.eval(elems.saturating_mul(sz))
            }
        })
    }

    /// Cycles of an `M×K · K×N` matmul with operands of `dtype`.
    pub fn matmul_cycles(&self, m: u64, k: u64, n: u64, dtype: &str) -> Result<u64, CostError> {
        match &self.matmul {
            MatmulModel::Product => Ok(m.saturating_mul(k).saturating_mul(n)),
            MatmulModel::Fractal {
                base,
                block_m,
                block_n,
                k_bytes,
                per_dtype,
            } => {
                let dt = canonical_dtype(dtype);
                let c = per_dtype.get(dt).ok_or_else(|| {
                    CostError(format!(
                        "model `{}` has no matmul cost for dtype `{dtype}` (known: {})",
                        self.name,
                        per_dtype.keys().cloned().collect::<Vec<_>>().join(", ")
                    ))
                })?;
                let sz = dtype_size(dt).unwrap_or(1);
                let block_k = (k_bytes / sz).max(1);
                let blocks = m
                    .div_ceil(*block_m)
                    .saturating_mul(k.div_ceil(block_k))
                    .saturating_mul(n.div_ceil(*block_n));
                Ok(base.saturating_add(c.saturating_mul(blocks)))
            }
        }
    }

    /// Cycles to move `bytes` over a transfer path (`"GM->UB"`): `bytes / (GiB/s · 2^30) · clock`,
    /// rounded up.
    pub fn dma_cycles(&self, bytes: u64, path: &str) -> Result<u64, CostError> {
        match &self.dma {
            DmaModel::Free => Ok(0),
            DmaModel::Paths(paths) => {
                let bw = paths.get(path).ok_or_else(|| {
                    CostError(format!(
                        "model `{}` has no transfer path `{path}` (known: {})",
                        self.name,
                        paths.keys().cloned().collect::<Vec<_>>().join(", ")
                    ))
                })?;
                let secs = bytes as f64 / (bw * (1u64 << 30) as f64);
                Ok((secs * self.clock_hz as f64).ceil() as u64)
            }
        }
    }
}

impl Arch {
    /// Transfer cycles a task of `class` spends moving its region arguments: `in_bytes` over the
    /// class's load path and `out_bytes` over its store path (0 when the model has no `task_io`
    /// entry for the class or transfers are free).
    pub fn task_io_cycles(
        &self,
        class: CoreClass,
        in_bytes: u64,
        out_bytes: u64,
    ) -> Result<u64, CostError> {
        match self.task_io.get(&class) {
            None => Ok(0),
            Some((load, store)) => {
                Ok(self.dma_cycles(in_bytes, load)? + self.dma_cycles(out_bytes, store)?)
            }
        }
    }
}

#[cfg(test)]
mod tests;
