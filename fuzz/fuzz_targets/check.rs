//! The whole checker (resolution, types, races, workload types) never panics, and every
//! diagnostic's primary span lies inside the file. Then an edit (a piece of the text moved to
//! its end) checked incrementally gives what a fresh check of the edited text gives.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = String::from_utf8_lossy(data).into_owned();
    let len = src.len() as u32;
    let mut ws = wsp_core::Workspace::new();
    ws.set_file("fuzz.wsp", src.clone());
    for d in ws.check("fuzz.wsp") {
        if d.primary.file.as_str() == "fuzz.wsp" {
            assert!(d.primary.span.end <= len, "{d:?}");
        }
    }
    let _ = ws.workload_types("fuzz.wsp");
    // The edit: the text from a third to a half of the way moved to the end.
    let cut = |f: usize| {
        let mut i = src.len() * f / 6;
        while !src.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let (a, b) = (cut(2), cut(3));
    let edited = format!("{}{}{}", &src[..a], &src[b..], &src[a..b]);
    ws.set_file("fuzz.wsp", edited.clone());
    let mut fresh = wsp_core::Workspace::new();
    fresh.set_file("fuzz.wsp", edited);
    assert_eq!(ws.check("fuzz.wsp"), fresh.check("fuzz.wsp"));
});
