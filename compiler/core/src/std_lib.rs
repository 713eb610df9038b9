//! The `.wsp` standard library, embedded at build time from `std/*.wsp`.

include!(concat!(env!("OUT_DIR"), "/std_modules.rs"));

/// `std.<name>` module names available.
pub fn modules() -> Vec<String> {
    STD_MODULES
        .iter()
        .map(|(n, _)| format!("std.{n}"))
        .collect()
}
