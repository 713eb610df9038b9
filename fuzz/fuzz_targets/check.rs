//! The whole checker (resolution, types, races, workload types) never panics, and every
//! diagnostic's primary span lies inside the file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data).into_owned();
    let len = src.len() as u32;
    let mut ws = wsp_core::Workspace::new();
    ws.set_file("fuzz.wsp", src);
    for d in ws.check("fuzz.wsp") {
        if d.primary.file.as_str() == "fuzz.wsp" {
            assert!(d.primary.span.end <= len, "{d:?}");
        }
    }
    let _ = ws.workload_types("fuzz.wsp");
});
