//! Snapshot tests of rendered diagnostics: the terminal form (plain, as on a non-TTY) and the
//! JSON form of a few fixtures whose diagnostics cover every part of a report (primary and
//! secondary labels, notes, help, several files' worth of codes). A change in wording or layout
//! shows up as a snapshot diff to review (`cargo insta review`).

use std::sync::Arc;

use wsp_core::Workspace;
use wsp_diagnostics::render::{render_human, render_json, Sources};
use wsp_diagnostics::FileName;

struct Ws<'a>(&'a Workspace);

impl Sources for Ws<'_> {
    fn text(&self, file: &FileName) -> Option<Arc<str>> {
        self.0.text(file)
    }
}

fn render(fixture: &str) -> (String, String) {
    let path = format!("{}/../../tests/ui/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).expect("fixture exists");
    let name = format!("tests/ui/{fixture}");
    let mut ws = Workspace::new();
    ws.set_file(&name, src);
    let diags = ws.check(&name);
    assert!(!diags.is_empty(), "{fixture} has no diagnostics to render");
    let sources = Ws(&ws);
    (
        render_human(&diags, &sources, false),
        render_json(&diags, &sources),
    )
}

macro_rules! snapshot {
    ($test:ident, $fixture:literal) => {
        #[test]
        fn $test() {
            let (human, json) = render($fixture);
            insta::assert_snapshot!(concat!(stringify!($test), "_human"), human);
            insta::assert_snapshot!(concat!(stringify!($test), "_json"), json);
        }
    };
}

snapshot!(races, "races.wsp");
snapshot!(types_kernels, "types_kernels.wsp");
snapshot!(names, "names.wsp");
snapshot!(syntax_errors, "syntax_errors.wsp");
snapshot!(view_bounds, "view_bounds.wsp");
