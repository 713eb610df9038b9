//! NumPy `.npy` files: reading (format versions 1.0, 2.0 and 3.0; little, big and native
//! endian; C and Fortran order; every wsp dtype) and atomic writing.
//!
//! # bf16
//!
//! NumPy has no bfloat16 dtype. A bf16 tensor is written as `<u2` holding the raw bfloat16
//! bit patterns (exact, and what `ml_dtypes.bfloat16` arrays `.view(np.uint16)` give). When a
//! bf16 tensor is read, the file may hold `<u2` bit patterns, `V2` void (how `ml_dtypes` saves
//! bfloat16 arrays), or `f4`/`f8` values, which are rounded to bf16 (nearest, ties to even).
//! For every other dtype the file's dtype must be the tensor's dtype.
//!
//! # Errors
//!
//! Every error names the file and carries a stable code (see
//! `compiler/diagnostics/explanations/E08*.md`): E0801 not a `.npy` file, E0802 wrong dtype,
//! E0803 wrong shape, E0804 truncated data, E0805 unsupported `.npy` feature, E0806 I/O error.

use crate::dtype::DType;
use crate::tensor::{decode_el, encode_el, El, HostTensor};
use std::fmt;
use std::path::{Path, PathBuf};
use wsp_vocab::codes;

const MAGIC: &[u8] = b"\x93NUMPY";

/// An error about a data file.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyError {
    /// Stable code, `E0801`..`E0806`.
    pub code: &'static str,
    pub path: PathBuf,
    pub message: String,
}

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "error[{}]: {}: {}",
            self.code,
            self.path.display(),
            self.message
        )
    }
}

impl std::error::Error for NpyError {}

fn err(code: &'static str, path: &Path, message: impl Into<String>) -> NpyError {
    NpyError {
        code,
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// What a `.npy` file's header declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyHeader {
    /// The `descr` string, e.g. `<f4`.
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
    /// Offset of the data.
    pub data_offset: usize,
}

/// The element kind of a `descr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileKind {
    Plain(DType),
    /// `V2`: raw 2-byte values (ml_dtypes bfloat16).
    Void2,
}

fn parse_descr(descr: &str) -> Option<(FileKind, bool)> {
    let (order, rest) = match descr.chars().next()? {
        c @ ('<' | '>' | '|' | '=') => (c, &descr[1..]),
        _ => ('|', descr),
    };
    let big = order == '>';
    let kind = match rest {
        "f2" | "e" => FileKind::Plain(DType::F16),
        "f4" | "f" => FileKind::Plain(DType::F32),
        "f8" | "d" => FileKind::Plain(DType::F64),
        "i1" | "b" => FileKind::Plain(DType::I8),
        "i2" | "h" => FileKind::Plain(DType::I16),
        "i4" | "i" => FileKind::Plain(DType::I32),
        "i8" | "q" => FileKind::Plain(DType::I64),
        "u1" | "B" => FileKind::Plain(DType::U8),
        "u2" | "H" => FileKind::Plain(DType::U16),
        "u4" | "I" => FileKind::Plain(DType::U32),
        "u8" | "Q" => FileKind::Plain(DType::U64),
        "b1" | "?" => FileKind::Plain(DType::Bool),
        "V2" => FileKind::Void2,
        _ => return None,
    };
    Some((kind, big))
}

/// The little-endian `descr` written for `dtype` (bf16: `<u2` bit patterns).
pub fn descr_of(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 => "<f2",
        DType::Bf16 => "<u2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::Bool => "|b1",
    }
}

/// Parses the header of a `.npy` file.
pub fn parse_header(bytes: &[u8], path: &Path) -> Result<NpyHeader, NpyError> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(err(
            codes::E0801,
            path,
            "not a .npy file (it does not start with the NumPy magic string \\x93NUMPY)",
        ));
    }
    let major = bytes[6];
    let (len, start) = match major {
        1 => (
            usize::from(u16::from_le_bytes([bytes[8], bytes[9]])),
            10usize,
        ),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(err(codes::E0804, path, "truncated .npy header"));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => {
            return Err(err(
                codes::E0805,
                path,
                format!(
                    "unsupported .npy format version {v}.{} (supported: 1.0, 2.0, 3.0)",
                    bytes[7]
                ),
            ))
        }
    };
    let end = start
        .checked_add(len)
        .filter(|e| *e <= bytes.len())
        .ok_or_else(|| {
            err(
                codes::E0804,
                path,
                format!(
                    "truncated .npy header: it declares {len} bytes, the file has {}",
                    bytes.len().saturating_sub(start)
                ),
            )
        })?;
    let raw = &bytes[start..end];
    let text: String = if major == 3 {
        String::from_utf8(raw.to_vec())
            .map_err(|_| err(codes::E0801, path, "the .npy header is not valid UTF-8"))?
    } else {
        raw.iter().map(|b| char::from(*b)).collect()
    };
    let dict = parse_dict(&text).map_err(|m| {
        err(
            codes::E0801,
            path,
            format!("not a .npy file: malformed header ({m}): {}", text.trim()),
        )
    })?;
    Ok(NpyHeader {
        descr: dict.0,
        fortran_order: dict.1,
        shape: dict.2,
        data_offset: end,
    })
}

/// Parses `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
fn parse_dict(text: &str) -> Result<(String, bool, Vec<usize>), String> {
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
    };
    p.ws();
    p.eat(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.ws();
        if p.peek() == Some(b'}') {
            break;
        }
        let key = p.string()?;
        p.ws();
        p.eat(b':')?;
        p.ws();
        match key.as_str() {
            "descr" => {
                if p.peek() == Some(b'[') {
                    return Err("structured dtypes are not supported".into());
                }
                descr = Some(p.string()?)
            }
            "fortran_order" => {
                fortran = Some(if p.word("True") {
                    true
                } else if p.word("False") {
                    false
                } else {
                    return Err("fortran_order is neither True nor False".into());
                })
            }
            "shape" => shape = Some(p.tuple()?),
            other => return Err(format!("unknown key '{other}'")),
        }
        p.ws();
        if p.peek() == Some(b',') {
            p.i += 1;
        }
    }
    Ok((
        descr.ok_or("no 'descr'")?,
        fortran.ok_or("no 'fortran_order'")?,
        shape.ok_or("no 'shape'")?,
    ))
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}'", char::from(c)))
        }
    }
    fn word(&mut self, w: &str) -> bool {
        if self.s[self.i.min(self.s.len())..].starts_with(w.as_bytes()) {
            self.i += w.len();
            true
        } else {
            false
        }
    }
    fn string(&mut self) -> Result<String, String> {
        let q = self
            .peek()
            .filter(|c| *c == b'\'' || *c == b'"')
            .ok_or("expected a string")?;
        self.i += 1;
        let start = self.i;
        while self.peek().ok_or("unterminated string")? != q {
            self.i += 1;
        }
        let s = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.i += 1;
        Ok(s)
    }
    fn tuple(&mut self) -> Result<Vec<usize>, String> {
        self.eat(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.ws();
            match self.peek() {
                Some(b')') => {
                    self.i += 1;
                    return Ok(dims);
                }
                Some(b',') => self.i += 1,
                Some(c) if c.is_ascii_digit() => {
                    let start = self.i;
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.i += 1;
                    }
                    // Python 2 headers may write `3L`.
                    if self.peek() == Some(b'L') {
                        self.i += 1;
                    }
                    let t = std::str::from_utf8(&self.s[start..self.i])
                        .unwrap_or("")
                        .trim_end_matches('L');
                    dims.push(t.parse().map_err(|_| format!("bad dimension {t}"))?);
                }
                _ => return Err("malformed shape tuple".into()),
            }
        }
    }
}

fn shape_str(s: &[usize]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Decodes a whole `.npy` file of any supported dtype (bf16 is never inferred: `<u2` reads
/// as u16, `V2` is rejected; use [`decode_npy_as`]).
pub fn decode_npy(bytes: &[u8], path: &Path) -> Result<HostTensor, NpyError> {
    let h = parse_header(bytes, path)?;
    let (kind, big) = parse_descr(&h.descr).ok_or_else(|| unsupported_descr(&h.descr, path))?;
    let FileKind::Plain(dtype) = kind else {
        return Err(err(
            codes::E0805,
            path,
            format!(
                "dtype '{}' has no wsp equivalent unless read as bf16",
                h.descr
            ),
        ));
    };
    read_data(bytes, &h, dtype, big, path, |e| e, dtype)
}

fn unsupported_descr(descr: &str, path: &Path) -> NpyError {
    err(
        codes::E0805,
        path,
        format!(
            "unsupported dtype '{descr}' (wsp reads f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1, and V2 as bf16)"
        ),
    )
}

fn read_data(
    bytes: &[u8],
    h: &NpyHeader,
    file_dtype: DType,
    big: bool,
    path: &Path,
    map: impl Fn(El) -> El,
    dtype: DType,
) -> Result<HostTensor, NpyError> {
    let n = h
        .shape
        .iter()
        .try_fold(1usize, |a, d| a.checked_mul(*d))
        .ok_or_else(|| err(codes::E0801, path, "the shape's element count overflows"))?;
    let size = file_dtype.size_bytes();
    let data = &bytes[h.data_offset.min(bytes.len())..];
    let need = n.saturating_mul(size);
    if data.len() < need {
        return Err(err(
            codes::E0804,
            path,
            format!(
                "truncated data: shape {} of '{}' needs {need} bytes, the file has {}",
                shape_str(&h.shape),
                h.descr,
                data.len()
            ),
        ));
    }
    let mut out = HostTensor::zeros(dtype, h.shape.clone());
    let rank = h.shape.len();
    // Fortran order: the file's element k is at column-major position k.
    let mut idx = vec![0usize; rank];
    for (k, chunk) in data.chunks_exact(size).take(n).enumerate() {
        let e = map(decode_el(file_dtype, chunk, big));
        let dst = if h.fortran_order && rank > 1 {
            let off = idx
                .iter()
                .zip(&h.shape)
                .fold(0usize, |acc, (i, d)| acc * d + i);
            // advance column-major counter
            for (i, d) in idx.iter_mut().zip(&h.shape) {
                *i += 1;
                if *i < *d {
                    break;
                }
                *i = 0;
            }
            off
        } else {
            k
        };
        out.data.set(dst, e);
    }
    Ok(out)
}

/// How the data of a `.npy` file checked against a wanted dtype is stored.
#[derive(Clone, Copy)]
enum Stored {
    /// bf16 as raw 16-bit patterns (`<u2` or `V2`).
    Bf16Bits,
    /// Values of this dtype, converted to the wanted one (f4/f8 for bf16).
    Convert(DType),
    /// Exactly the wanted dtype.
    Same,
}

/// Checks a `.npy` header against `dtype` (see the bf16 rule above) and, if given, `shape`.
fn check_header(
    h: &NpyHeader,
    path: &Path,
    dtype: DType,
    shape: Option<&[usize]>,
) -> Result<(Stored, bool), NpyError> {
    let (kind, big) = parse_descr(&h.descr).ok_or_else(|| unsupported_descr(&h.descr, path))?;
    if let Some(s) = shape {
        if s != h.shape.as_slice() {
            return Err(err(
                codes::E0803,
                path,
                format!(
                    "shape mismatch: expected {dtype}{}, found {}{} ('{}')",
                    shape_str(s),
                    match kind {
                        FileKind::Plain(d) => d.name(),
                        FileKind::Void2 => "V2",
                    },
                    shape_str(&h.shape),
                    h.descr
                ),
            ));
        }
    }
    let mismatch = |found: &str| {
        err(
            codes::E0802,
            path,
            format!(
                "dtype mismatch: expected {dtype} ('{}'{}), found {found} ('{}')",
                descr_of(dtype),
                if dtype == DType::Bf16 {
                    ": bf16 bit patterns; f4/f8 values are also accepted"
                } else {
                    ""
                },
                h.descr
            ),
        )
    };
    let stored = match (dtype, kind) {
        (DType::Bf16, FileKind::Plain(DType::U16)) | (DType::Bf16, FileKind::Void2) => {
            Stored::Bf16Bits
        }
        (DType::Bf16, FileKind::Plain(d @ (DType::F32 | DType::F64))) => Stored::Convert(d),
        (d, FileKind::Plain(f)) if d == f => Stored::Same,
        (_, FileKind::Plain(f)) => return Err(mismatch(f.name())),
        (_, FileKind::Void2) => return Err(mismatch("V2 (raw 2-byte values)")),
    };
    Ok((stored, big))
}

/// Decodes a `.npy` file that must hold `dtype` (see the bf16 rule above) and, if given,
/// `shape`.
pub fn decode_npy_as(
    bytes: &[u8],
    path: &Path,
    dtype: DType,
    shape: Option<&[usize]>,
) -> Result<HostTensor, NpyError> {
    let h = parse_header(bytes, path)?;
    match check_header(&h, path, dtype, shape)? {
        (Stored::Bf16Bits, big) => read_data(
            bytes,
            &h,
            DType::U16,
            big,
            path,
            |e| match e {
                El::I(bits) => El::F(half::bf16::from_bits(bits as u16).to_f64()),
                other => other,
            },
            DType::Bf16,
        ),
        (Stored::Convert(d), big) => read_data(
            bytes,
            &h,
            d,
            big,
            path,
            |e| crate::tensor::convert(e, dtype),
            dtype,
        ),
        (Stored::Same, big) => read_data(bytes, &h, dtype, big, path, |e| e, dtype),
    }
}

/// Checks, from its header and its length alone, that the `.npy` file at `path` holds
/// `dtype` and, if given, `shape`, in full: the errors [`read_npy_as`] gives, without reading
/// the data (a timing-only run needs an input's data only if its orchestration reads it, and
/// then checks the shape as it reads).
pub fn check_npy_as(path: &Path, dtype: DType, shape: Option<&[usize]>) -> Result<(), NpyError> {
    let cannot = |e: std::io::Error| err(codes::E0806, path, format!("cannot read the file: {e}"));
    // A FIFO or a device would block the open or never end: only a regular file.
    if !std::fs::metadata(path).map_err(cannot)?.is_file() {
        return Err(cannot(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a directory, FIFO, socket or device)",
        )));
    }
    let mut f = std::fs::File::open(path).map_err(cannot)?;
    let len = f.metadata().map_err(cannot)?.len();
    // The fixed part of the header, then as much of the rest as it declares (a header is
    // small; a bad length is found by `parse_header` against the bytes read).
    let mut head = vec![0u8; 12];
    let got = read_up_to(&mut f, &mut head).map_err(cannot)?;
    head.truncate(got);
    let declared = match head.get(6) {
        Some(1) if got >= 10 => 10 + usize::from(u16::from_le_bytes([head[8], head[9]])),
        Some(2 | 3) if got >= 12 => {
            12 + u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize
        }
        _ => got,
    };
    let want = declared.min(len as usize).min(1 << 24);
    if want > head.len() {
        let mut rest = vec![0u8; want - head.len()];
        let got = read_up_to(&mut f, &mut rest).map_err(cannot)?;
        head.extend_from_slice(&rest[..got]);
    }
    let h = parse_header(&head, path)?;
    let (stored, _) = check_header(&h, path, dtype, shape)?;
    let size = match stored {
        Stored::Bf16Bits => 2,
        Stored::Convert(d) => d.size_bytes(),
        Stored::Same => dtype.size_bytes(),
    };
    let n = h
        .shape
        .iter()
        .try_fold(1usize, |a, d| a.checked_mul(*d))
        .ok_or_else(|| err(codes::E0801, path, "the shape's element count overflows"))?;
    let need = n.saturating_mul(size) as u64;
    let have = len.saturating_sub(h.data_offset as u64);
    if have < need {
        return Err(err(
            codes::E0804,
            path,
            format!(
                "truncated data: shape {} of '{}' needs {need} bytes, the file has {have}",
                shape_str(&h.shape),
                h.descr
            ),
        ));
    }
    Ok(())
}

/// Reads until `buf` is full or the file ends; the bytes read.
fn read_up_to(f: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn read_file(path: &Path) -> Result<Vec<u8>, NpyError> {
    // Any size (a tensor's data is bounded by its declared shape), but only a regular file.
    crate::fsio::read_regular(path, u64::MAX)
        .map_err(|e| err(codes::E0806, path, format!("cannot read the file: {e}")))
}

/// Reads a `.npy` file of any supported dtype.
pub fn read_npy(path: &Path) -> Result<HostTensor, NpyError> {
    decode_npy(&read_file(path)?, path)
}

/// Reads a `.npy` file that must hold `dtype` and `shape`.
pub fn read_npy_as(path: &Path, dtype: DType, shape: &[usize]) -> Result<HostTensor, NpyError> {
    decode_npy_as(&read_file(path)?, path, dtype, Some(shape))
}

/// Encodes a tensor as a version 1.0 `.npy` file (2.0 if the header does not fit), C order,
/// little endian; bf16 as `<u2` bit patterns.
pub fn encode_npy(t: &HostTensor) -> Vec<u8> {
    let shape = match t.shape.len() {
        1 => format!("({},)", t.shape[0]),
        _ => format!(
            "({})",
            t.shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        descr_of(t.dtype)
    );
    // Total header (magic + version + len + dict + padding + '\n') is a multiple of 64.
    let mut out = Vec::with_capacity(128 + t.len() * t.dtype.size_bytes());
    let v1_total = (10 + dict.len() + 1).div_ceil(64) * 64;
    let (version, prefix) = if v1_total - 10 <= usize::from(u16::MAX) {
        (1u8, 10)
    } else {
        (2u8, 12)
    };
    let total = (prefix + dict.len() + 1).div_ceil(64) * 64;
    let hlen = total - prefix;
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(hlen as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(hlen as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    for i in 0..t.len() {
        if let Some(e) = t.data.get(i) {
            if t.dtype == DType::Bf16 {
                let bits = crate::tensor::bf16_from_f64(e.as_f64()).to_bits();
                out.extend_from_slice(&bits.to_le_bytes());
            } else {
                encode_el(e, t.dtype, &mut out, false);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_check_agrees_with_reading() {
        // Every prefix of valid files (versions 1 and 2, bf16 from f4, and a plain dtype), and
        // wanted dtypes and shapes that do and do not match: `check_npy_as` gives what
        // `read_npy_as` gives, without reading the data.
        let dir = std::env::temp_dir().join(format!("wsp-npy-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t.npy");
        let mut files = vec![
            encode_npy(&HostTensor::from_f64(DType::F32, vec![2, 3], &[1.5; 6])),
            encode_npy(&HostTensor::from_f64(DType::I16, vec![4], &[2.0; 4])),
        ];
        let mut v2 = header(
            2,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
        );
        v2.extend_from_slice(&[0u8; 24]);
        files.push(v2);
        let wants = [
            (DType::F32, vec![2, 3]),
            (DType::Bf16, vec![2, 3]),
            (DType::F32, vec![3, 2]),
            (DType::I16, vec![4]),
            (DType::I32, vec![4]),
        ];
        for bytes in &files {
            for cut in 0..=bytes.len() {
                std::fs::write(&f, &bytes[..cut]).unwrap();
                for (dtype, shape) in &wants {
                    let read = read_npy_as(&f, *dtype, shape)
                        .map(|_| ())
                        .map_err(|e| e.code);
                    let check = check_npy_as(&f, *dtype, Some(shape)).map_err(|e| e.code);
                    assert_eq!(
                        check,
                        read,
                        "{dtype} {shape:?}, {cut} of {} bytes",
                        bytes.len()
                    );
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn header(version: u8, dict: &str) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[version, 0]);
        let prefix = if version == 1 { 10 } else { 12 };
        let total = (prefix + dict.len() + 1).div_ceil(64) * 64;
        let hlen = total - prefix;
        if version == 1 {
            out.extend_from_slice(&(hlen as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(hlen as u32).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.resize(total - 1, b' ');
        out.push(b'\n');
        out
    }

    fn p() -> &'static Path {
        Path::new("x.npy")
    }

    #[test]
    fn round_trips_every_dtype() {
        for d in DType::ALL {
            let vals: Vec<f64> = (0..6).map(|i| f64::from(i) * 1.5).collect();
            let t = HostTensor::from_f64(d, vec![2, 3], &vals);
            let bytes = encode_npy(&t);
            assert_eq!(
                bytes.iter().position(|b| *b == b'\n').map(|i| (i + 1) % 64),
                Some(0)
            );
            let back = decode_npy_as(&bytes, p(), d, Some(&[2, 3])).unwrap();
            assert_eq!(back, t, "{d}");
            if d != DType::Bf16 {
                assert_eq!(decode_npy(&bytes, p()).unwrap(), t, "{d}");
            }
        }
        // Rank 1 and rank 0.
        let t = HostTensor::from_f64(DType::I32, vec![3], &[1.0, 2.0, 3.0]);
        let bytes = encode_npy(&t);
        assert!(String::from_utf8_lossy(&bytes).contains("'shape': (3,)"));
        assert_eq!(decode_npy(&bytes, p()).unwrap(), t);
        let t = HostTensor::from_f64(DType::F64, vec![], &[4.0]);
        assert_eq!(decode_npy(&encode_npy(&t), p()).unwrap(), t);
    }

    #[test]
    fn f16_and_bf16_bit_layouts() {
        let t = HostTensor::from_f64(DType::F16, vec![1], &[1.0]);
        let bytes = encode_npy(&t);
        assert!(String::from_utf8_lossy(&bytes).contains("'descr': '<f2'"));
        assert_eq!(&bytes[bytes.len() - 2..], &[0x00, 0x3c]);
        let t = HostTensor::from_f64(DType::Bf16, vec![1], &[1.0]);
        let bytes = encode_npy(&t);
        assert!(String::from_utf8_lossy(&bytes).contains("'descr': '<u2'"));
        assert_eq!(&bytes[bytes.len() - 2..], &[0x80, 0x3f]);
        // bf16 read from f4 values rounds to nearest even: 257 → 256.
        let f = HostTensor::from_f64(DType::F32, vec![2], &[257.0, 259.0]);
        let t = decode_npy_as(&encode_npy(&f), p(), DType::Bf16, Some(&[2])).unwrap();
        assert_eq!(t.to_f64(), vec![256.0, 260.0]);
        // V2 (ml_dtypes) bit patterns.
        let mut b = header(
            1,
            "{'descr': '|V2', 'fortran_order': False, 'shape': (1,), }",
        );
        b.extend_from_slice(&[0x80, 0x3f]);
        assert_eq!(
            decode_npy_as(&b, p(), DType::Bf16, None).unwrap().to_f64(),
            vec![1.0]
        );
    }

    #[test]
    fn big_endian_fortran_order_and_header_versions() {
        // (2, 3) int16, big endian, Fortran order: the file lists columns.
        let mut b = header(
            1,
            "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }",
        );
        for v in [1i16, 4, 2, 5, 3, 6] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        let t = decode_npy(&b, p()).unwrap();
        assert_eq!(t.shape, vec![2, 3]);
        assert_eq!(t.to_f64(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        for version in [2u8, 3] {
            let mut b = header(
                version,
                "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,)}",
            );
            b.extend_from_slice(&1.5f32.to_le_bytes());
            b.extend_from_slice(&(-2.0f32).to_le_bytes());
            assert_eq!(
                decode_npy(&b, p()).unwrap().to_f64(),
                vec![1.5, -2.0],
                "v{version}"
            );
        }
    }

    #[test]
    fn errors_name_file_expected_and_found() {
        let e = decode_npy(b"hello world, not numpy", p()).unwrap_err();
        assert_eq!(e.code, "E0801");
        assert!(e.to_string().contains("x.npy: not a .npy file"), "{e}");

        let t = HostTensor::from_f64(DType::F32, vec![2, 3], &[0.0; 6]);
        let bytes = encode_npy(&t);
        let e = decode_npy_as(&bytes, p(), DType::F16, Some(&[2, 3])).unwrap_err();
        assert_eq!(e.code, "E0802");
        assert!(
            e.message
                .contains("expected f16 ('<f2'), found f32 ('<f4')"),
            "{e}"
        );

        let e = decode_npy_as(&bytes, p(), DType::F32, Some(&[3, 2])).unwrap_err();
        assert_eq!(e.code, "E0803");
        assert!(
            e.message.contains("expected f32[3, 2], found f32[2, 3]"),
            "{e}"
        );

        let e = decode_npy(&bytes[..bytes.len() - 3], p()).unwrap_err();
        assert_eq!(e.code, "E0804");
        assert!(e.message.contains("needs 24 bytes, the file has 21"), "{e}");

        let e = decode_npy(&bytes[..20], p()).unwrap_err();
        assert_eq!(e.code, "E0804");

        let mut b = header(
            1,
            "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
        );
        b.extend_from_slice(&[0; 8]);
        assert_eq!(decode_npy(&b, p()).unwrap_err().code, "E0805");
        let b = header(
            1,
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
        );
        assert_eq!(decode_npy(&b, p()).unwrap_err().code, "E0801");
        let mut b = header(1, "{'descr': '<f4'}");
        b[6] = 9;
        assert_eq!(decode_npy(&b, p()).unwrap_err().code, "E0805");

        let e = read_npy(Path::new("/nonexistent/dir/y.npy")).unwrap_err();
        assert_eq!(e.code, "E0806");
        assert!(e.to_string().contains("/nonexistent/dir/y.npy"));
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_npy(&bytes, Path::new("f.npy"));
            let _ = decode_npy_as(&bytes, Path::new("f.npy"), DType::Bf16, Some(&[2]));
        }

        #[test]
        fn decoding_arbitrary_headers_never_panics(
            dict in "\\{'descr': '[<>|=]?[a-zA-Z]?[0-9]?', 'fortran_order': (True|False|x), 'shape': \\(([0-9]{0,20}, ?){0,3}\\), \\}",
            data in proptest::collection::vec(any::<u8>(), 0..64),
            version in 1u8..4,
        ) {
            let mut b = MAGIC.to_vec();
            b.extend_from_slice(&[version, 0]);
            if version == 1 {
                b.extend_from_slice(&(dict.len() as u16).to_le_bytes());
            } else {
                b.extend_from_slice(&(dict.len() as u32).to_le_bytes());
            }
            b.extend_from_slice(dict.as_bytes());
            b.extend_from_slice(&data);
            let _ = decode_npy(&b, Path::new("f.npy"));
        }

        #[test]
        fn f32_round_trips(vals in proptest::collection::vec(any::<f32>(), 1..40)) {
            let t = HostTensor::from_f64(DType::F32, vec![vals.len()], &vals.iter().map(|v| f64::from(*v)).collect::<Vec<_>>());
            let back = decode_npy(&encode_npy(&t), Path::new("f.npy")).unwrap();
            prop_assert_eq!(back.data.to_bytes(DType::F32), t.data.to_bytes(DType::F32));
        }
    }
}
