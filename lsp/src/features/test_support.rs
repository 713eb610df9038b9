//! The fixture the feature tests share: one file that every feature has something to say
//! about, and byte offsets into it.

use wsp_core::Workspace;

pub(super) const SRC: &str = "const N = 8\naxis rows = Dense[4]\ninput X: f32[4, 8, 8] = random(seed: 1)\noutput Y: f32[4, 8, 8]\n// a comment\n// on two lines\n/// doubles a tile\nkernel double(x: in f32[8, 8], y: out f32[8, 8]) {\n    let t = x * 2.0\n    y = t\n}\nworkload w {\n    for i in P(rows) { double[i](x: X[i], y: Y[i]) }\n}\nschedule s = w .dispatch(round_robin)\n";

pub(super) fn ws() -> Workspace {
    let mut ws = Workspace::new();
    ws.set_file("a.wsp", SRC.to_string());
    ws
}

pub(super) fn at(needle: &str, plus: usize) -> usize {
    SRC.find(needle).expect(needle) + plus
}
