//! The parser never panics, and its spans stay inside the input and in order.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data);
    let p = wsp_syntax::parse(&src);
    let len = src.len() as u32;
    let mut prev_end = 0;
    for item in &p.file.items {
        assert!(item.range.start <= item.range.end && item.range.end <= len);
        assert!(item.range.start >= prev_end, "items overlap");
        prev_end = item.range.end;
    }
    for e in &p.errors {
        assert!(e.span.start <= e.span.end && e.span.end <= len);
    }
});
