//! `--set` on an integer constant: the program is checked, lowered and compiled as if the
//! constant were declared with that value (`wsp check`, `wsp run`, `wsp emit`), in every
//! module that declares a constant of that name; params and DenseDyn sizes stay bound at run
//! time.

mod common;

use common::run::{program, text, wsp};

/// Tiles of `R` rows over `seq` rows; `Y = X * 2`.
const TILED: &str = r#"
const R = 64
const D = 16
param seq: i64 = 256
axis tiles = DenseDyn(seq / R)
input X: f32[seq, D] = random(seed: 1)
output Y: f32[seq, D]
kernel twice(x: in f32[R, D], y: out f32[R, D]) {
    y = x * 2.0
}
workload main {
    for t in P(tiles) {
        twice[t](x: X[t * R..t * R + R, :], y: Y[t * R..t * R + R, :])
    }
}
"#;

fn tasks(stats: &[u8]) -> u64 {
    let v: serde_json::Value = serde_json::from_slice(stats).expect("stats JSON");
    v["stats"]["tasks"].as_u64().expect("tasks")
}

#[test]
fn a_constant_set_on_the_command_line_sizes_the_kernels_and_the_views() {
    let d = program("set-run", TILED);
    let at = |set: &[&str]| {
        let mut args = vec!["run", "p.wsp", "--stats", "json"];
        for s in set {
            args.extend(["--set", s]);
        }
        let o = wsp(&d, &args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        (tasks(&o.stdout), text(&o.stderr))
    };
    assert_eq!(at(&[]).0, 4);
    let (n, summary) = at(&["R=32"]);
    assert_eq!(n, 8, "256 rows in 32-row tiles");
    assert!(
        summary.contains("(workload `main` with R = 32)"),
        "{summary}"
    );
    // A constant and a param together: the param is still bound at run time.
    assert_eq!(at(&["R=16", "seq=64"]).0, 4);

    // The kernel IR is compiled at the constant's value; a param's value becomes its default.
    let o = wsp(&d, &["emit", "p.wsp", "--set", "R=8", "--set", "seq=32"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let ir: serde_json::Value = serde_json::from_slice(&o.stdout).expect("IR");
    assert_eq!(
        ir["kernels"][0]["params"][0]["tile"]["shape"],
        serde_json::json!([8, 16])
    );
    assert_eq!(ir["params"][0]["default"]["int"], 32);
}

#[test]
fn the_checks_see_the_value_set() {
    let d = program("set-check", TILED);
    let o = wsp(&d, &["check", "p.wsp"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // 8192 × 16 f32 tiles do not fit in the vector core's unified buffer.
    let o = wsp(&d, &["check", "p.wsp", "--set", "R=8192"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("E0701"), "{err}");
    assert!(
        err.contains("checked 1 file with R = 8192: 1 error"),
        "{err}"
    );
    let o = wsp(&d, &["run", "p.wsp", "--set", "R=8192"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("`p.wsp` with R = 8192 does not run"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn what_cannot_be_set_is_a_usage_error() {
    let d = program("set-errors", TILED);
    for (args, says) in [
        (
            &["check", "p.wsp", "--set", "R=wide"][..],
            "`R` is an integer constant; give an integer",
        ),
        (
            &["check", "p.wsp", "--set", "seq=64"][..],
            "no integer constant `seq`",
        ),
        (
            &["run", "p.wsp", "--set", "R=8", "--set", "R=16"][..],
            "gives `R` twice",
        ),
        (&["emit", "p.wsp", "--set", "nope=1"][..], "no param `nope`"),
        (&["check", "p.wsp", "--set", "R"][..], "is not NAME=VALUE"),
    ] {
        let o = wsp(&d, args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn one_name_sets_the_constant_in_every_module_that_declares_it() {
    // std.nn and std.attention both declare TILE_ROWS and HEAD_DIM: one `--set` sizes both.
    let d = program(
        "set-modules",
        r#"
import std.nn.{ rmsnorm }
import std.attention.{ attn_init }
input X: f32[16, 32] = random(seed: 1)
input W: f32[1, 32] = random(seed: 2)
output Y: f32[16, 32]
output M: f32[16, 1]
output L: f32[16, 1]
output O: f32[16, 32]
workload main {
    rmsnorm[](x: X, w: W, out: Y)
    attn_init[](m: M, l: L, o: O)
}
"#,
    );
    let o = wsp(&d, &["check", "p.wsp"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "the 64 × 128 tiles do not take 16 × 32 views"
    );
    let o = wsp(
        &d,
        &[
            "run",
            "-q",
            "p.wsp",
            "--set",
            "TILE_ROWS=16",
            "--set",
            "HEAD_DIM=32",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}
