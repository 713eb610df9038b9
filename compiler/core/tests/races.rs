//! Race reports name two iterations that really touch the same region, and carry the
//! machine-applicable `P` → `P.seq` fix on the `P`.

use wsp_core::Workspace;

const PROGRAM: &str = "axis tiles = Dense[8]
output Far: f32[10, 16, 16]
kernel copy(x: in f32[16, 16], y: out f32[16, 16]) { y = x }
workload far_read {
    for t in P(tiles) { copy[t](x: Far[t + 2], y: Far[t]) }
}
";

#[test]
fn race_names_overlapping_iterations_and_offers_p_seq() {
    let mut ws = Workspace::new();
    ws.set_file("r.wsp", PROGRAM.to_string());
    let diags = ws.check("r.wsp");
    let [d] = diags.as_slice() else {
        panic!("expected one diagnostic: {diags:#?}");
    };
    assert_eq!(d.code, "E0409");
    assert!(
        d.message.contains("`t = 0` and `t = 2`"),
        "message: {}",
        d.message
    );
    let fix = d.fixes.first().expect("a fix");
    let edit = fix.edits.first().expect("an edit");
    assert_eq!(edit.replacement, "P.seq");
    assert_eq!(
        &PROGRAM[edit.span.start as usize..edit.span.end as usize],
        "P"
    );
}
