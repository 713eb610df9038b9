//! Element types and scalar constants shared by kernels and workloads.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// An element type. Serialized as its `.wsp` spelling (`"f16"`, `"bf16"`, `"i32"`, ...).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F16,
    Bf16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Bool,
}

impl DType {
    /// Every dtype, in a fixed order.
    pub const ALL: [DType; 13] = [
        DType::F16,
        DType::Bf16,
        DType::F32,
        DType::F64,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::Bool,
    ];

    /// The `.wsp` spelling.
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::Bool => "bool",
        }
    }

    /// Parses the `.wsp` spelling.
    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }

    /// Size of one element in bytes (bool is one byte).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::Bf16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::Bf16 | DType::F32 | DType::F64)
    }

    /// f16 or bf16: stored in 16 bits, computed in f32.
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::Bf16)
    }

    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    pub fn is_unsigned_int(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    pub fn is_bool(self) -> bool {
        self == DType::Bool
    }

    /// The dtype in which reductions and `matmul` accumulate and which they yield for float
    /// operands: f32 for f16/bf16/f32, f64 for f64; integers accumulate in their own type.
    pub fn accumulator(self) -> DType {
        match self {
            DType::F16 | DType::Bf16 | DType::F32 => DType::F32,
            d => d,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A scalar constant. Serialized as a one-key object: `{"float": 1.5}`, `{"float": "-inf"}`
/// (non-finite floats are the strings `"inf"`, `"-inf"`, `"nan"`, since JSON has no such
/// numbers), `{"int": -3}`, `{"uint": 18446744073709551615}`, `{"bool": true}`.
#[derive(Clone, Copy, Debug)]
pub enum ScalarValue {
    Float(f64),
    Int(i64),
    UInt(u64),
    Bool(bool),
}

impl PartialEq for ScalarValue {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ScalarValue::Float(a), ScalarValue::Float(b)) => a.to_bits() == b.to_bits(),
            (ScalarValue::Int(a), ScalarValue::Int(b)) => a == b,
            (ScalarValue::UInt(a), ScalarValue::UInt(b)) => a == b,
            (ScalarValue::Bool(a), ScalarValue::Bool(b)) => a == b,
            _ => false,
        }
    }
}

impl ScalarValue {
    /// The value as f64 (integers convert with rounding, bool as 0/1).
    pub fn as_f64(self) -> f64 {
        match self {
            ScalarValue::Float(v) => v,
            ScalarValue::Int(v) => v as f64,
            ScalarValue::UInt(v) => v as f64,
            ScalarValue::Bool(b) => f64::from(u8::from(b)),
        }
    }
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ScalarRepr {
    Float(FloatRepr),
    Int(i64),
    Uint(u64),
    Bool(bool),
}

#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum FloatRepr {
    Num(f64),
    #[schemars(with = "SpecialFloat")]
    Special(String),
}

/// A non-finite float constant (JSON has no such numbers).
#[derive(schemars::JsonSchema)]
#[allow(dead_code)] // Only its schema is used: `FloatRepr::Special` holds the spelling.
enum SpecialFloat {
    #[schemars(rename = "inf")]
    Inf,
    #[schemars(rename = "-inf")]
    NegInf,
    #[schemars(rename = "nan")]
    Nan,
}

impl schemars::JsonSchema for ScalarValue {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ScalarValue".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        ScalarRepr::json_schema(generator)
    }
}

impl Serialize for ScalarValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let repr = match *self {
            ScalarValue::Float(v) if v.is_finite() => ScalarRepr::Float(FloatRepr::Num(v)),
            ScalarValue::Float(v) if v.is_nan() => {
                ScalarRepr::Float(FloatRepr::Special("nan".into()))
            }
            ScalarValue::Float(v) if v > 0.0 => ScalarRepr::Float(FloatRepr::Special("inf".into())),
            ScalarValue::Float(_) => ScalarRepr::Float(FloatRepr::Special("-inf".into())),
            ScalarValue::Int(v) => ScalarRepr::Int(v),
            ScalarValue::UInt(v) => ScalarRepr::Uint(v),
            ScalarValue::Bool(v) => ScalarRepr::Bool(v),
        };
        repr.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ScalarValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match ScalarRepr::deserialize(d)? {
            ScalarRepr::Float(FloatRepr::Num(v)) => ScalarValue::Float(v),
            ScalarRepr::Float(FloatRepr::Special(s)) => match s.as_str() {
                "inf" => ScalarValue::Float(f64::INFINITY),
                "-inf" => ScalarValue::Float(f64::NEG_INFINITY),
                "nan" => ScalarValue::Float(f64::NAN),
                other => {
                    return Err(serde::de::Error::custom(format!(
                        "invalid float constant {other:?}: expected a number, \"inf\", \"-inf\" or \"nan\""
                    )))
                }
            },
            ScalarRepr::Int(v) => ScalarValue::Int(v),
            ScalarRepr::Uint(v) => ScalarValue::UInt(v),
            ScalarRepr::Bool(v) => ScalarValue::Bool(v),
        })
    }
}
