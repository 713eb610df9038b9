//! Loading a program's data: resolving params (with `--set` overrides), computing tensor
//! shapes, initialising global tensors (`load`, `random`, `zeros`, `ones`, `full`, literals,
//! `--input` overrides), and checking `close` expectations.

use crate::dtype::{DType, ScalarValue};
use crate::npy;
use crate::tensor::{convert, random_normal, Data, El, HostTensor};
use crate::workload::*;
use std::fmt;
use std::path::{Path, PathBuf};
use wsp_vocab::codes;

/// An error about run-time data, with a stable code (E08xx).
#[derive(Clone, Debug, PartialEq)]
pub struct DataError {
    pub code: &'static str,
    pub message: String,
    /// The tensor declaration whose data or shape is wrong, when the error is about one (not
    /// for data given with `--input`, which the source does not name).
    pub at: Option<crate::workload::SrcSpan>,
}

impl DataError {
    /// The error, located at `decl` unless it has a location already.
    fn at_decl(mut self, decl: &TensorDecl) -> DataError {
        if self.at.is_none() {
            self.at.clone_from(&decl.at);
        }
        self
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error[{}]: {}", self.code, self.message)
    }
}

impl std::error::Error for DataError {}

impl From<npy::NpyError> for DataError {
    fn from(e: npy::NpyError) -> Self {
        DataError {
            code: e.code,
            message: format!("{}: {}", e.path.display(), e.message),
            at: None,
        }
    }
}

fn derr(code: &'static str, message: impl Into<String>) -> DataError {
    DataError {
        code,
        message: message.into(),
        at: None,
    }
}

/// An error about tensor `decl` itself (its shape or source), located at its declaration.
fn decl_err(decl: &TensorDecl, code: &'static str, message: impl Into<String>) -> DataError {
    derr(code, message).at_decl(decl)
}

/// Parses a `--set NAME=value` text for a param of `dtype`.
pub fn parse_param_value(name: &str, dtype: DType, text: &str) -> Result<ScalarValue, DataError> {
    let t = text.trim();
    let bad = || {
        derr(
            codes::E0809,
            format!("--set {name}={text}: `{t}` is not a valid {dtype} value"),
        )
    };
    let v = if dtype.is_float() {
        ScalarValue::Float(t.parse::<f64>().map_err(|_| bad())?)
    } else if dtype.is_bool() {
        ScalarValue::Bool(match t {
            "true" => true,
            "false" => false,
            _ => return Err(bad()),
        })
    } else if dtype.is_signed_int() {
        let v = t.replace('_', "").parse::<i64>().map_err(|_| bad())?;
        if convert(El::I(i128::from(v)), dtype) != El::I(i128::from(v)) {
            return Err(bad());
        }
        ScalarValue::Int(v)
    } else {
        let v = t.replace('_', "").parse::<u64>().map_err(|_| bad())?;
        if convert(El::I(i128::from(v)), dtype) != El::I(i128::from(v)) {
            return Err(bad());
        }
        ScalarValue::UInt(v)
    };
    Ok(v)
}

/// The program's param values: defaults, replaced by `overrides` (`NAME`, `value text`).
pub fn resolve_params(
    program: &Program,
    overrides: &[(String, String)],
) -> Result<Vec<ScalarValue>, DataError> {
    let mut vals: Vec<ScalarValue> = program.params.iter().map(|p| p.default).collect();
    for (name, text) in overrides {
        let Some(i) = program.params.iter().position(|p| &p.name == name) else {
            let known: Vec<_> = program.params.iter().map(|p| p.name.as_str()).collect();
            return Err(derr(
                codes::E0809,
                format!(
                    "--set {name}: the program has no param `{name}` (params: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        if let (Some(p), Some(slot)) = (program.params.get(i), vals.get_mut(i)) {
            *slot = parse_param_value(name, p.dtype, text)?;
        }
    }
    Ok(vals)
}

/// Evaluates an affine expression over params only.
pub fn eval_param_affine(a: &Affine, params: &[ScalarValue]) -> Result<i64, String> {
    let mut acc = a.constant;
    for (sym, c) in &a.terms {
        let v = match sym {
            Sym::Param(p) => match params.get(p.index()) {
                Some(ScalarValue::Int(i)) => *i,
                Some(ScalarValue::UInt(u)) => {
                    i64::try_from(*u).map_err(|_| format!("param value {u} is too large"))?
                }
                Some(other) => return Err(format!("param #{} is not an integer ({other:?})", p.0)),
                None => return Err(format!("param #{} does not exist", p.0)),
            },
            Sym::Var(v) => return Err(format!("loop variable #{} in a tensor shape", v.0)),
        };
        acc = v
            .checked_mul(*c)
            .and_then(|t| acc.checked_add(t))
            .ok_or("overflow in a shape expression")?;
    }
    Ok(acc)
}

/// The shape of tensor `t` under `params`.
pub fn tensor_shape(decl: &TensorDecl, params: &[ScalarValue]) -> Result<Vec<usize>, DataError> {
    let shape = decl
        .shape
        .iter()
        .map(|a| {
            let v = eval_param_affine(a, params).map_err(|m| {
                decl_err(decl, codes::E0808, format!("tensor `{}`: {m}", decl.name))
            })?;
            usize::try_from(v).map_err(|_| {
                decl_err(
                    decl,
                    codes::E0808,
                    format!("tensor `{}` has a negative dimension ({v})", decl.name),
                )
            })
        })
        .collect::<Result<Vec<usize>, _>>()?;
    if shape
        .iter()
        .try_fold(1usize, |a, d| a.checked_mul(*d))
        .is_none()
    {
        return Err(decl_err(
            decl,
            codes::E0808,
            format!(
                "tensor `{}` of shape {shape:?} has more elements than a 64-bit count holds",
                decl.name
            ),
        ));
    }
    Ok(shape)
}

/// E0808 unless tensor `decl` of `shape` can be a host tensor: at most [`MAX_ELEMENTS`]
/// elements, and memory for them now.
/// E0808 when a tensor of `shape` cannot be held as host values: past the limit of host
/// tensors, or more than can be allocated.
pub fn check_host(decl: &TensorDecl, shape: &[usize]) -> Result<(), DataError> {
    let n: usize = shape.iter().product();
    if n > MAX_ELEMENTS {
        return Err(decl_err(
            decl,
            codes::E0808,
            format!(
                "tensor `{}` of shape {shape:?} has more than {MAX_ELEMENTS} elements, the limit of host tensors",
                decl.name
            ),
        ));
    }
    can_allocate(
        &format!("tensor `{}`", decl.name),
        Data::host_bytes(decl.dtype, n),
    )
    .map_err(|e| e.at_decl(decl))
}

/// E0808 unless `bytes` can be allocated now: a tensor larger than the memory the process may
/// take is an error, not an abort in the allocator (the reservation is freed at once).
pub fn can_allocate(what: &str, bytes: usize) -> Result<(), DataError> {
    match Vec::<u8>::new().try_reserve_exact(bytes) {
        Ok(()) => Ok(()),
        Err(_) => Err(derr(
            codes::E0808,
            format!("{what} needs {bytes} bytes of memory, which cannot be allocated"),
        )),
    }
}

/// The largest number of elements of a host tensor (2³¹).
pub const MAX_ELEMENTS: usize = 1 << 31;

/// Materialises an initialiser for a tensor of `dtype` and `shape`. `what` names the tensor
/// in errors; `base_dir` resolves relative `load` paths.
pub fn materialise(
    init: &Init,
    what: &str,
    dtype: DType,
    shape: &[usize],
    base_dir: &Path,
) -> Result<HostTensor, DataError> {
    let n: usize = shape.iter().product();
    Ok(match init {
        Init::Load { path } => {
            let p = base_dir.join(path);
            npy::read_npy_as(&p, dtype, shape)?
        }
        Init::Random { seed } => {
            HostTensor::from_f64(dtype, shape.to_vec(), &random_normal(*seed, n))
        }
        Init::Zeros => HostTensor::zeros(dtype, shape.to_vec()),
        Init::Ones => HostTensor::from_f64(dtype, shape.to_vec(), &vec![1.0; n]),
        Init::Full { value } => {
            let mut t = HostTensor::zeros(dtype, shape.to_vec());
            let e = El::from_scalar(*value, dtype);
            for i in 0..n {
                t.data.set(i, e);
            }
            t
        }
        Init::Literal { values } => {
            if values.len() != n {
                return Err(derr(
                    codes::E0808,
                    format!(
                        "{what}: the literal has {} values, the shape [{}] has {n} elements",
                        values.len(),
                        shape
                            .iter()
                            .map(|d| d.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            let mut t = HostTensor::zeros(dtype, shape.to_vec());
            for (i, v) in values.iter().enumerate() {
                t.data.set(i, El::from_scalar(*v, dtype));
            }
            t
        }
    })
}

/// Initialises every global tensor. `base_dir` is the program's directory; `inputs` are
/// `--input NAME=path` overrides (paths as given, relative to the current directory).
pub fn init_tensors(
    program: &Program,
    params: &[ScalarValue],
    base_dir: &Path,
    inputs: &[(String, PathBuf)],
) -> Result<Vec<HostTensor>, DataError> {
    check_input_names(program, inputs)?;
    check_total_memory(program, params, available_memory())?;
    (0..program.tensors.len())
        .map(|i| materialise_tensor(program, params, base_dir, inputs, i))
        .collect()
}

/// The memory the system can give this process now (Linux `MemAvailable`), if known.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// E0808, before anything is allocated, when the run's tensors cannot fit in `available`
/// bytes: each tensor is held in the runtime's buffer (its dtype's bytes) and, one at a time
/// while it is made or read back, as host values ([`Data::host_bytes`]), so a run of tensors
/// that each fit may not fit together. Names the largest tensors, at the largest's
/// declaration.
pub fn check_total_memory(
    program: &Program,
    params: &[ScalarValue],
    available: Option<u64>,
) -> Result<(), DataError> {
    let Some(available) = available else {
        return Ok(());
    };
    let mut sizes: Vec<(u64, &TensorDecl)> = Vec::new();
    let read = read_back_at_end(program);
    let (mut read_host, mut buffers, mut max_made, mut max_buffer) = (0u64, 0u64, 0u64, 0u64);
    for (decl, read) in program.tensors.iter().zip(read) {
        let n: usize = tensor_shape(decl, params)?.iter().product();
        if n > MAX_ELEMENTS {
            // Past the limit of host tensors: that error, naming it, comes when it is made.
            return Ok(());
        }
        let h = Data::host_bytes(decl.dtype, n) as u64;
        let b = n.saturating_mul(decl.dtype.size_bytes()) as u64;
        buffers = buffers.saturating_add(b);
        max_buffer = max_buffer.max(b);
        if !starts_zeroed(decl, &[]) {
            max_made = max_made.max(h);
        }
        if read {
            read_host = read_host.saturating_add(h);
        }
        sizes.push((h.saturating_add(b), decl));
    }
    // A run holds each tensor in the runtime's buffer and, one tensor at a time, as host
    // values: while it makes them, every buffer and the host values of the one being made
    // (zeros need none); when it reads the results back, the host values of those it reads
    // and the buffer being read.
    let total = buffers
        .saturating_add(max_made)
        .max(read_host.saturating_add(max_buffer));
    if total <= available {
        return Ok(());
    }
    sizes.sort_by_key(|b| std::cmp::Reverse(b.0));
    let largest: Vec<String> = sizes
        .iter()
        .take(3)
        .map(|(b, d)| format!("`{}` {} MiB", d.name, b >> 20))
        .collect();
    let first = sizes[0].1;
    Err(decl_err(
        first,
        codes::E0808,
        format!(
            "the run's tensors need {} MiB (host values and the runtime's buffers), more than the {} MiB of memory available; the largest: {}",
            total >> 20,
            available >> 20,
            largest.join(", ")
        ),
    ))
}

/// Whether a tensor starts as zeros (`zeros`, or no initialiser on anything but an input, and
/// no `--input` file): the runtime's buffer needs no host values to start from.
pub fn starts_zeroed(decl: &TensorDecl, inputs: &[(String, PathBuf)]) -> bool {
    matches!(
        source(decl, inputs),
        Ok(Source::Zeros | Source::Init(Init::Zeros))
    )
}

/// Per tensor, whether a run reads it back at the end: every tensor but the local ones and the
/// inputs no expectation compares (an input keeps what it started with).
pub fn read_back_at_end(program: &Program) -> Vec<bool> {
    let mut compared = vec![false; program.tensors.len()];
    for e in &program.expects {
        if let Expect::Close {
            actual, expected, ..
        } = e
        {
            let other = match expected {
                ExpectData::Tensor { tensor } => Some(tensor.index()),
                ExpectData::Init { .. } => None,
            };
            for i in std::iter::once(actual.index()).chain(other) {
                if let Some(c) = compared.get_mut(i) {
                    *c = true;
                }
            }
        }
    }
    program
        .tensors
        .iter()
        .zip(compared)
        .map(|(t, c)| match t.kind {
            TensorKind::Local => false,
            TensorKind::Input => c,
            _ => true,
        })
        .collect()
}

/// E0809 for an `--input` that names no `input` tensor.
fn check_input_names(program: &Program, inputs: &[(String, PathBuf)]) -> Result<(), DataError> {
    for (name, _) in inputs {
        match program.tensors.iter().find(|t| &t.name == name) {
            Some(t) if t.kind == TensorKind::Input => {}
            Some(_) => {
                return Err(derr(
                    codes::E0809,
                    format!("--input {name}: `{name}` is not an `input` tensor"),
                ))
            }
            None => {
                return Err(derr(
                    codes::E0809,
                    format!("--input {name}: the program has no tensor `{name}`"),
                ))
            }
        }
    }
    Ok(())
}

/// Where a tensor's data comes from.
enum Source<'a> {
    /// `--input NAME=path`.
    Input(&'a Path),
    Init(&'a Init),
    Zeros,
}

/// Tensor `decl`'s source: E0807 for an input with none.
fn source<'a>(
    decl: &'a TensorDecl,
    inputs: &'a [(String, PathBuf)],
) -> Result<Source<'a>, DataError> {
    if let Some((_, path)) = inputs.iter().find(|(n, _)| n == &decl.name) {
        return Ok(Source::Input(path));
    }
    match &decl.init {
        Some(init) => Ok(Source::Init(init)),
        None if decl.kind == TensorKind::Input => Err(decl_err(
            decl,
            codes::E0807,
            format!(
                "input `{}` has no data: give it an initialiser or pass --input {}=path.npy",
                decl.name, decl.name
            ),
        )),
        None => Ok(Source::Zeros),
    }
}

/// The tensors of [`init_tensors`] with their shapes but no elements (`data` empty, of the
/// dtype's kind), after the same checks short of reading data: for runs that compute no
/// results (timing-only), whose orchestration may read a few tensors (fill those with
/// [`materialise_tensor`] first) and needs the rest only by shape. A tensor may be larger
/// than host tensors can be. With `check_shapes` false, a `.npy` source must still exist and
/// hold the dtype in full, but its shape is checked only when its tensor is read
/// ([`materialise_tensor`]): a timing-only run at another `--set` size than its data files'
/// needs no files of that size for the tensors it never reads.
pub fn declare_tensors(
    program: &Program,
    params: &[ScalarValue],
    base_dir: &Path,
    inputs: &[(String, PathBuf)],
    check_shapes: bool,
) -> Result<Vec<HostTensor>, DataError> {
    check_input_names(program, inputs)?;
    program
        .tensors
        .iter()
        .map(|decl| {
            let shape = tensor_shape(decl, params)?;
            let want = check_shapes.then_some(shape.as_slice());
            match source(decl, inputs)? {
                Source::Input(path) => npy::check_npy_as(path, decl.dtype, want)?,
                Source::Init(Init::Load { path }) => {
                    npy::check_npy_as(&base_dir.join(path), decl.dtype, want)
                        .map_err(|e| DataError::from(e).at_decl(decl))?
                }
                Source::Init(_) | Source::Zeros => {}
            }
            Ok(HostTensor {
                dtype: decl.dtype,
                shape,
                data: Data::zeros(decl.dtype, 0),
            })
        })
        .collect()
}

/// Tensor `index` of `program` as [`init_tensors`] makes it (for a tensor of
/// [`declare_tensors`] that the run reads after all).
pub fn materialise_tensor(
    program: &Program,
    params: &[ScalarValue],
    base_dir: &Path,
    inputs: &[(String, PathBuf)],
    index: usize,
) -> Result<HostTensor, DataError> {
    let Some(decl) = program.tensors.get(index) else {
        return Err(derr(codes::E0808, format!("no tensor #{index}")));
    };
    let shape = tensor_shape(decl, params)?;
    check_host(decl, &shape)?;
    let what = format!("tensor `{}`", decl.name);
    Ok(match source(decl, inputs)? {
        Source::Input(path) => npy::read_npy_as(path, decl.dtype, &shape)?,
        Source::Init(init) => {
            materialise(init, &what, decl.dtype, &shape, base_dir).map_err(|e| e.at_decl(decl))?
        }
        Source::Zeros => HostTensor::zeros(decl.dtype, shape),
    })
}

/// The worst element of a failed `close` check.
#[derive(Clone, Debug, PartialEq)]
pub struct CloseFailure {
    /// Multi-dimensional index of the worst element.
    pub index: Vec<usize>,
    pub expected: f64,
    pub found: f64,
    /// Elements outside the tolerance.
    pub mismatches: usize,
    pub total: usize,
}

impl fmt::Display for CloseFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} elements differ; worst at [{}]: expected {}, found {}",
            self.mismatches,
            self.total,
            self.index
                .iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            self.expected,
            self.found
        )
    }
}

/// `close(actual, expected, rtol, atol)`: `|a − e| ≤ atol + rtol·|e|` for every element (NaN
/// matches only NaN). Shapes must be equal.
pub fn check_close(
    actual: &HostTensor,
    expected: &HostTensor,
    rtol: f64,
    atol: f64,
) -> Result<Result<(), CloseFailure>, DataError> {
    if actual.shape != expected.shape {
        return Err(derr(
            codes::E0803,
            format!(
                "expect close: the tensor has shape {:?}, the expected data {:?}",
                actual.shape, expected.shape
            ),
        ));
    }
    let (a, e) = (actual.to_f64(), expected.to_f64());
    let mut worst: Option<(usize, f64)> = None;
    let mut mismatches = 0;
    for (i, (x, y)) in a.iter().zip(&e).enumerate() {
        let ok = if x.is_nan() || y.is_nan() {
            x.is_nan() && y.is_nan()
        } else if x.is_infinite() || y.is_infinite() {
            x == y
        } else {
            (x - y).abs() <= atol + rtol * y.abs()
        };
        if !ok {
            mismatches += 1;
            let excess = if x.is_nan() || y.is_nan() || x.is_infinite() || y.is_infinite() {
                f64::INFINITY
            } else {
                (x - y).abs() - (atol + rtol * y.abs())
            };
            if worst.is_none_or(|(_, w)| excess > w) {
                worst = Some((i, excess));
            }
        }
    }
    Ok(match worst {
        None => Ok(()),
        Some((i, _)) => {
            let index = unravel(i, &actual.shape);
            Err(CloseFailure {
                index,
                expected: e.get(i).copied().unwrap_or(f64::NAN),
                found: a.get(i).copied().unwrap_or(f64::NAN),
                mismatches,
                total: a.len(),
            })
        }
    })
}

/// The result of one `expect`.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectReport {
    /// Index into [`Program::expects`].
    pub index: usize,
    /// The expectation in source-like form, e.g. `close(Y, load("y.npy"), rtol: 0.0001, atol: 0.00001)`.
    pub description: String,
    /// `None` when it holds; otherwise what went wrong (code E0812).
    pub failure: Option<String>,
    /// What was measured, held or not: for `close` the largest absolute difference and where
    /// (`max |Δ| 3.1e-8 at [1, 4]`), for a statistic its value (`total_cycles is 9951`).
    pub measured: String,
}

/// The largest absolute difference between two tensors of one shape over the elements where
/// both are finite, and its multi-dimensional index (`None` when there is no such element).
pub fn max_abs_difference(actual: &HostTensor, expected: &HostTensor) -> Option<(f64, Vec<usize>)> {
    let (a, e) = (actual.to_f64(), expected.to_f64());
    let mut best: Option<(f64, usize)> = None;
    for (i, (x, y)) in a.iter().zip(&e).enumerate() {
        if x.is_finite() && y.is_finite() {
            let d = (x - y).abs();
            if best.is_none_or(|(b, _)| d > b) {
                best = Some((d, i));
            }
        }
    }
    best.map(|(d, i)| (d, unravel(i, &actual.shape)))
}

fn unravel(i: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    let mut rem = i;
    for (slot, d) in index.iter_mut().zip(shape).rev() {
        *slot = rem % d.max(&1);
        rem /= d.max(&1);
    }
    index
}

fn init_text(init: &Init) -> String {
    match init {
        Init::Load { path } => format!("load({path:?})"),
        Init::Random { seed } => format!("random(seed: {seed})"),
        Init::Zeros => "zeros".into(),
        Init::Ones => "ones".into(),
        Init::Full { value } => format!("full({})", value.as_f64()),
        Init::Literal { values } => format!("[{} values]", values.len()),
    }
}

/// Reads expected data for a tensor of `dtype`: any numeric dtype is accepted (values compare
/// as f64), except that for a bf16 tensor `<u2`/`V2` files hold bf16 bit patterns (the form
/// wsp writes bf16 in).
fn read_expected(path: &Path, dtype: DType) -> Result<HostTensor, DataError> {
    let bytes = crate::fsio::read_regular(path, u64::MAX).map_err(|e| {
        derr(
            codes::E0806,
            format!("{}: cannot read the file: {e}", path.display()),
        )
    })?;
    if dtype == DType::Bf16 {
        let h = npy::parse_header(&bytes, path)?;
        if h.descr.ends_with("u2") || h.descr.ends_with("V2") {
            return Ok(npy::decode_npy_as(&bytes, path, DType::Bf16, None)?);
        }
    }
    Ok(npy::decode_npy(&bytes, path)?)
}

/// Checks every `expect` of the program against the final `tensors` and the run's statistics
/// (`stat` gives a measured statistic, `None` when it was not measured, which fails the
/// expectation). Expected data from files may have any dtype (values compare as f64) but must
/// have the tensor's shape.
pub fn check_expects(
    program: &Program,
    tensors: &[HostTensor],
    base_dir: &Path,
    stat: impl Fn(Stat) -> Option<i64>,
) -> Result<Vec<ExpectReport>, DataError> {
    check_expects_where(program, tensors, base_dir, stat, |_| true)
}

/// [`check_expects`] on the expectations `keep` selects (a timing-only run has statistics
/// but no results).
pub fn check_expects_where(
    program: &Program,
    tensors: &[HostTensor],
    base_dir: &Path,
    stat: impl Fn(Stat) -> Option<i64>,
    keep: impl Fn(&Expect) -> bool,
) -> Result<Vec<ExpectReport>, DataError> {
    let mut out = Vec::new();
    for (index, e) in program.expects.iter().enumerate().filter(|(_, e)| keep(e)) {
        let report = match e {
            Expect::Close {
                actual,
                expected,
                rtol,
                atol,
            } => {
                let name = |t: &TensorId| {
                    program
                        .tensors
                        .get(t.index())
                        .map(|d| d.name.clone())
                        .unwrap_or_else(|| format!("#{}", t.0))
                };
                let a = tensors.get(actual.index()).ok_or_else(|| {
                    derr(
                        codes::E0812,
                        format!("expect: tensor #{} does not exist", actual.0),
                    )
                })?;
                let (etext, exp) = match expected {
                    ExpectData::Tensor { tensor } => (
                        name(tensor),
                        tensors.get(tensor.index()).cloned().ok_or_else(|| {
                            derr(codes::E0812, "expect: expected tensor does not exist")
                        })?,
                    ),
                    ExpectData::Init {
                        init: Init::Load { path },
                    } => {
                        let t = read_expected(&base_dir.join(path), a.dtype)?;
                        if t.shape != a.shape {
                            return Err(derr(
                                codes::E0803,
                                format!(
                                    "{}: shape mismatch: expected {:?} (the shape of `{}`), found {:?}",
                                    base_dir.join(path).display(),
                                    a.shape,
                                    name(actual),
                                    t.shape
                                ),
                            ));
                        }
                        (init_text(&Init::Load { path: path.clone() }), t)
                    }
                    ExpectData::Init { init } => (
                        init_text(init),
                        materialise(init, "expected data", a.dtype, &a.shape, base_dir)?,
                    ),
                };
                let description = format!(
                    "close({}, {etext}, rtol: {rtol}, atol: {atol})",
                    name(actual)
                );
                let failure = check_close(a, &exp, *rtol, *atol)?
                    .err()
                    .map(|f| format!("`{}`: {f}", name(actual)));
                let join = |ix: &[usize]| {
                    ix.iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let measured = match max_abs_difference(a, &exp) {
                    Some((d, ix)) => format!("max |Δ| {d:.3e} at [{}]", join(&ix)),
                    None => "no finite element pair to compare".to_string(),
                };
                ExpectReport {
                    index,
                    description,
                    failure,
                    measured,
                }
            }
            Expect::Stat { stat: s, op, value } => {
                let sname = match s {
                    Stat::TotalCycles => "total_cycles",
                    Stat::Tasks => "tasks",
                };
                let opname = op.symbol();
                let description = format!("{sname} {opname} {value}");
                let measured = match stat(*s) {
                    None => format!("{sname} was not measured in this run"),
                    Some(m) => format!("{sname} is {m}"),
                };
                let failure = match stat(*s) {
                    None => Some(measured.clone()),
                    Some(m) => {
                        let ok = crate::num::compare(
                            *op,
                            El::I(i128::from(m)),
                            El::I(i128::from(*value)),
                        );
                        (!ok).then(|| measured.clone())
                    }
                };
                ExpectReport {
                    index,
                    description,
                    failure,
                    measured,
                }
            }
        };
        out.push(report);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    /// Writes a tensor as `.npy` (test fixtures).
    fn write_npy(p: &std::path::Path, t: &HostTensor) -> std::io::Result<()> {
        std::fs::write(p, npy::encode_npy(t))
    }

    use super::*;

    fn prog() -> Program {
        let mut p = Program::new();
        p.params.push(ProgParam {
            name: "n".into(),
            dtype: DType::U32,
            default: ScalarValue::UInt(3),
        });
        p.tensors.push(TensorDecl {
            name: "L".into(),
            kind: TensorKind::Input,
            dtype: DType::I32,
            shape: vec![Affine::param(ProgParamId(0))],
            init: Some(Init::Literal {
                values: vec![
                    ScalarValue::Int(1),
                    ScalarValue::Int(2),
                    ScalarValue::Int(3),
                ],
            }),
            at: None,
        });
        p.tensors.push(TensorDecl {
            name: "X".into(),
            kind: TensorKind::Input,
            dtype: DType::F16,
            shape: vec![Affine::constant(2), Affine::constant(2)],
            init: Some(Init::Random { seed: 5 }),
            at: None,
        });
        p.tensors.push(TensorDecl {
            name: "Y".into(),
            kind: TensorKind::Output,
            dtype: DType::F32,
            shape: vec![Affine::constant(2)],
            init: None,
            at: None,
        });
        p
    }

    #[test]
    fn tensors_that_fit_alone_but_not_together_are_refused_before_anything_is_allocated() {
        let p = prog();
        let params = resolve_params(&p, &[]).unwrap();
        // Host values: L 3 i32 × 16 = 48, X 4 f16 × 8 = 32, Y 2 f32 × 8 = 16; runtime
        // buffers 12 + 8 + 8 = 28. Making them: 28 + the largest host tensor made (L's 48; Y
        // starts as zeros) = 76; reading the results back (Y alone: no expectation compares
        // an input): 16 + the largest buffer (12) = 28. So 76 bytes at the most.
        assert!(check_total_memory(&p, &params, Some(76)).is_ok());
        assert!(check_total_memory(&p, &params, None).is_ok());
        let e = check_total_memory(&p, &params, Some(75)).unwrap_err();
        assert_eq!(e.code, "E0808");
        assert!(
            e.message
                .contains("more than the 0 MiB of memory available")
                && e.message
                    .contains("the largest: `L` 0 MiB, `X` 0 MiB, `Y` 0 MiB"),
            "{e}"
        );
        // A machine with memory: this program's tensors fit.
        assert!(available_memory().is_none_or(|m| m > 124));
    }

    #[test]
    fn params_resolve_with_overrides_and_errors() {
        let p = prog();
        assert_eq!(resolve_params(&p, &[]).unwrap(), vec![ScalarValue::UInt(3)]);
        assert_eq!(
            resolve_params(&p, &[("n".into(), "8".into())]).unwrap(),
            vec![ScalarValue::UInt(8)]
        );
        let e = resolve_params(&p, &[("n".into(), "-1".into())]).unwrap_err();
        assert!(e.message.contains("not a valid u32"), "{e}");
        let e = resolve_params(&p, &[("m".into(), "1".into())]).unwrap_err();
        assert!(e.message.contains("no param `m` (params: n)"), "{e}");
    }

    #[test]
    fn tensors_initialise_and_literals_must_match_the_shape() {
        let p = prog();
        let params = resolve_params(&p, &[]).unwrap();
        let ts = init_tensors(&p, &params, Path::new("."), &[]).unwrap();
        assert_eq!(ts[0].to_f64(), vec![1.0, 2.0, 3.0]);
        let r = random_normal(5, 4);
        let want: Vec<f64> = r
            .iter()
            .map(|v| crate::tensor::f16_from_f64(*v).to_f64())
            .collect();
        assert_eq!(ts[1].to_f64(), want);
        assert_eq!(ts[2].to_f64(), vec![0.0, 0.0]);
        let params = resolve_params(&p, &[("n".into(), "4".into())]).unwrap();
        let e = init_tensors(&p, &params, Path::new("."), &[]).unwrap_err();
        assert_eq!(e.code, "E0808");
        assert!(
            e.message
                .contains("has 3 values, the shape [4] has 4 elements"),
            "{e}"
        );
    }

    #[test]
    fn memory_that_cannot_be_had_is_e0808() {
        assert!(can_allocate("tensor `X`", 1 << 20).is_ok());
        let e = can_allocate("tensor `X`", usize::MAX).unwrap_err();
        assert_eq!(e.code, "E0808");
        assert!(e.message.contains("tensor `X` needs"), "{e}");
        assert!(e.message.contains("cannot be allocated"), "{e}");
    }

    #[test]
    fn input_overrides_are_checked() {
        let p = prog();
        let params = resolve_params(&p, &[]).unwrap();
        let e =
            init_tensors(&p, &params, Path::new("."), &[("Y".into(), "y.npy".into())]).unwrap_err();
        assert!(e.message.contains("not an `input` tensor"), "{e}");
        let dir = std::env::temp_dir().join(format!("wsp-ir-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("x.npy");
        write_npy(&f, &HostTensor::from_f64(DType::F32, vec![2, 2], &[1.0; 4])).unwrap();
        let e = init_tensors(&p, &params, Path::new("."), &[("X".into(), f.clone())]).unwrap_err();
        assert_eq!(e.code, "E0802");
        assert!(
            e.message.contains("x.npy") && e.message.contains("expected f16"),
            "{e}"
        );
        write_npy(&f, &HostTensor::from_f64(DType::F16, vec![2, 2], &[1.0; 4])).unwrap();
        let ts = init_tensors(&p, &params, Path::new("."), &[("X".into(), f)]).unwrap();
        assert_eq!(ts[1].to_f64(), vec![1.0; 4]);
        std::fs::remove_dir_all(&dir).unwrap();
        let mut p2 = prog();
        p2.tensors[1].init = None;
        let e = init_tensors(&p2, &params, Path::new("."), &[]).unwrap_err();
        assert_eq!(e.code, "E0807");
    }

    #[test]
    fn declared_tensors_have_shapes_checked_sources_and_no_data() {
        let p = prog();
        let params = resolve_params(&p, &[]).unwrap();
        let full = init_tensors(&p, &params, Path::new("."), &[]).unwrap();
        let ts = declare_tensors(&p, &params, Path::new("."), &[], true).unwrap();
        for (i, (d, f)) in ts.iter().zip(&full).enumerate() {
            assert_eq!((d.dtype, &d.shape), (f.dtype, &f.shape));
            assert!(d.data.is_empty());
            // Read after all: what `init_tensors` made.
            let m = materialise_tensor(&p, &params, Path::new("."), &[], i).unwrap();
            assert_eq!(m.to_f64(), f.to_f64());
        }
        // A tensor beyond the host limit is declared; it is refused when it must be made.
        let mut big = prog();
        big.tensors[2].shape = vec![Affine::constant(1 << 20), Affine::constant(1 << 12)];
        let ts = declare_tensors(&big, &params, Path::new("."), &[], true).unwrap();
        assert_eq!(ts[2].shape, [1 << 20, 1 << 12]);
        let e = materialise_tensor(&big, &params, Path::new("."), &[], 2).unwrap_err();
        assert!(e.message.contains("the limit of host tensors"), "{e}");
        assert!(init_tensors(&big, &params, Path::new("."), &[]).is_err());
        // Sources are checked as `init_tensors` checks them, from a file's header and length.
        let dir = std::env::temp_dir().join(format!("wsp-ir-declare-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("x.npy");
        let code = |inputs: &[(String, PathBuf)]| {
            declare_tensors(&p, &params, Path::new("."), inputs, true).map_err(|e| e.code)
        };
        let x = |f: &Path| vec![("X".to_string(), f.to_path_buf())];
        assert_eq!(code(&x(&dir.join("none.npy"))).unwrap_err(), "E0806");
        write_npy(&f, &HostTensor::from_f64(DType::F16, vec![2, 3], &[1.0; 6])).unwrap();
        assert_eq!(code(&x(&f)).unwrap_err(), "E0803");
        assert!(declare_tensors(&p, &params, Path::new("."), &x(&f), false).is_ok());
        let i = p.tensors.iter().position(|t| t.name == "X").unwrap();
        let e = materialise_tensor(&p, &params, Path::new("."), &x(&f), i).unwrap_err();
        assert_eq!(e.code, "E0803");
        write_npy(&f, &HostTensor::from_f64(DType::F32, vec![2, 2], &[1.0; 4])).unwrap();
        assert_eq!(code(&x(&f)).unwrap_err(), "E0802");
        write_npy(&f, &HostTensor::from_f64(DType::F16, vec![2, 2], &[1.0; 4])).unwrap();
        assert!(code(&x(&f)).is_ok());
        let bytes = std::fs::read(&f).unwrap();
        std::fs::write(&f, &bytes[..bytes.len() - 1]).unwrap();
        assert_eq!(code(&x(&f)).unwrap_err(), "E0804");
        std::fs::write(&f, b"not npy").unwrap();
        assert_eq!(code(&x(&f)).unwrap_err(), "E0801");
        // Without shapes, a bad file is still refused; a file of another shape is checked
        // only when its tensor is made.
        assert_eq!(
            declare_tensors(&p, &params, Path::new("."), &x(&f), false).map_err(|e| e.code),
            Err("E0801")
        );
        assert_eq!(code(&[("Y".into(), f.clone())]).unwrap_err(), "E0809");
        std::fs::remove_dir_all(&dir).unwrap();
        let mut p2 = prog();
        p2.tensors[1].init = None;
        let e = declare_tensors(&p2, &params, Path::new("."), &[], false).unwrap_err();
        assert_eq!(e.code, "E0807");
    }

    #[test]
    fn expected_bf16_files_hold_bit_patterns() {
        let dir = std::env::temp_dir().join(format!("wsp-ir-exp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = HostTensor::from_f64(DType::Bf16, vec![2], &[1.5, -3.0]);
        write_npy(&dir.join("g.npy"), &t).unwrap();
        assert_eq!(
            read_expected(&dir.join("g.npy"), DType::Bf16)
                .unwrap()
                .to_f64(),
            vec![1.5, -3.0]
        );
        // For other dtypes the same file is plain u16 numbers.
        assert_eq!(
            read_expected(&dir.join("g.npy"), DType::F32).unwrap().dtype,
            DType::U16
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn close_reports_the_worst_element() {
        let a = HostTensor::from_f64(DType::F32, vec![2, 2], &[1.0, 2.0, 3.0, 4.5]);
        let e = HostTensor::from_f64(DType::F32, vec![2, 2], &[1.0, 2.1, 3.0, 4.0]);
        assert_eq!(check_close(&a, &a, 0.0, 0.0).unwrap(), Ok(()));
        let f = check_close(&a, &e, 1e-3, 1e-3).unwrap().unwrap_err();
        assert_eq!(f.index, vec![1, 1]);
        assert_eq!(f.mismatches, 2);
        assert_eq!((f.expected, f.found), (4.0, 4.5));
        assert!(check_close(&a, &e, 0.2, 0.0).unwrap().is_ok());
    }

    #[test]
    fn expects_report_failures_with_the_worst_element_and_stats() {
        let mut p = prog();
        let y = TensorId(2);
        p.expects.push(Expect::Close {
            actual: y,
            expected: ExpectData::Init {
                init: Init::Literal {
                    values: vec![ScalarValue::Float(0.0), ScalarValue::Float(0.5)],
                },
            },
            rtol: 0.0,
            atol: 0.1,
        });
        p.expects.push(Expect::Stat {
            stat: Stat::TotalCycles,
            op: crate::kernel::CmpOp::Eq,
            value: 4864,
        });
        p.expects.push(Expect::Close {
            actual: y,
            expected: ExpectData::Init { init: Init::Zeros },
            rtol: 0.0,
            atol: 0.0,
        });
        let params = resolve_params(&p, &[]).unwrap();
        let ts = init_tensors(&p, &params, Path::new("."), &[]).unwrap();
        let r = check_expects(&p, &ts, Path::new("."), |s| {
            (s == Stat::TotalCycles).then_some(4000)
        })
        .unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(
            r[0].failure.as_deref(),
            Some("`Y`: 1 of 2 elements differ; worst at [1]: expected 0.5, found 0")
        );
        assert_eq!(r[1].description, "total_cycles == 4864");
        assert_eq!(r[1].failure.as_deref(), Some("total_cycles is 4000"));
        assert_eq!(r[2].failure, None);
    }
}

/// Everything a reference run of a whole program produced.
#[derive(Clone, Debug)]
pub struct ReferenceRun {
    /// Final contents of every global tensor, in [`Program::tensors`] order.
    pub tensors: Vec<HostTensor>,
    pub outcome: crate::exec::ExecOutcome,
    /// One report per `expect`; `total_cycles` is not measured by the reference run, so
    /// cycle expectations report that.
    pub expects: Vec<ExpectReport>,
}

/// Runs a whole program with the reference interpreters: resolves params (`--set`), loads
/// tensors (`--input`), runs the selected schedule's workload (see [`Program::select_run`])
/// and checks the expectations.
pub fn run_reference(
    program: &Program,
    schedule: Option<&str>,
    set: &[(String, String)],
    inputs: &[(String, PathBuf)],
    base_dir: &Path,
) -> Result<ReferenceRun, String> {
    let params = resolve_params(program, set).map_err(|e| e.to_string())?;
    let mut tensors =
        init_tensors(program, &params, base_dir, inputs).map_err(|e| e.to_string())?;
    let (_, w) = program.select_run(schedule)?;
    let outcome =
        crate::exec::run_workload(program, w, &params, &mut tensors).map_err(|e| e.to_string())?;
    let n = outcome.tasks.len() as i64;
    let expects = check_expects(program, &tensors, base_dir, |s| {
        (s == Stat::Tasks).then_some(n)
    })
    .map_err(|e| e.to_string())?;
    Ok(ReferenceRun {
        tensors,
        outcome,
        expects,
    })
}
