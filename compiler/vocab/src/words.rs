//! Builtin words other than operations and schedule directives.

/// The element types, as written.
pub const DTYPES: &[&str] = &[
    "f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool",
];

/// Initialisers of global tensors (`tensor X: f32[8] = load("x.npy")`).
pub const INITIALISERS: &[&str] = &["load", "random", "zeros", "ones", "full"];

/// The opt-in lints (`wsp check --warn NAME`), with what each reports.
pub const LINTS: &[(&str, &str)] = &[(
    "narrowing",
    "W0201: a store into an `out`/`inout` tile of a dtype that cannot hold every value stored",
)];

/// What makes a workload block's local tensor: `let H: f32[64, 128] = scratch()`.
pub const LOCAL_TENSOR: &str = "scratch";

/// Axis constructors (`axis x = Dense[8]`).
pub const AXIS_CTORS: &[&str] = &["Dense", "DenseDyn", "Ragged", "Sparse"];

/// How each of [`AXIS_CTORS`] is written (completion).
pub fn axis_ctor_signature(name: &str) -> Option<&'static str> {
    Some(match name {
        "Dense" => "Dense[n]: a constant size",
        "DenseDyn" => "DenseDyn(size): a runtime size (a param)",
        "Ragged" => {
            "Ragged(outer, lens) or Ragged(outer, lens, per: k): per outer index, lens[i] rows, or the ⌈lens[i] / k⌉ tiles of k that cover them"
        }
        "Sparse" => "Sparse(outer, indptr, indices): CSR rows of selected columns",
        _ => return None,
    })
}

/// Names usable in workload and process bodies besides user items.
pub const WORKLOAD_BUILTINS: &[&str] = &[
    "P",
    "combine",
    "sequential",
    "connect",
    "replicate",
    "min",
    "max",
];

/// Names usable in `expect` items.
pub const EXPECT_BUILTINS: &[&str] = &[
    "close",
    "total_cycles",
    "tasks",
    "load",
    "random",
    "zeros",
    "ones",
    "full",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_axis_constructor_has_a_signature() {
        for c in AXIS_CTORS {
            assert!(axis_ctor_signature(c).is_some(), "{c}");
        }
    }
}
