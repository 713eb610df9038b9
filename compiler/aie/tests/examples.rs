//! Every example of `examples/manifest.toml` on the AIE target: either the emitter refuses it
//! with one of the expected diagnostics below, or the emitted tree's CPU stand-in is built
//! (CMake, else g++ directly), run, and every output tensor equals `wsp run`'s bit for bit
//! (the kernels compute wsp's arithmetic exactly), and `aie.mlir` is verified by `mlir-opt-19
//! --allow-unregistered-dialect` (Debian's mlir-19-tools: required when `CI=true`, else the
//! check is skipped with a note).

mod common;

use std::path::{Path, PathBuf};

use wsp_backend::Severity;

/// Examples the AIE target refuses, with a piece of the expected error and why.
const REFUSED: &[(&str, &str, &str)] = &[
    (
        "lightning_indexer",
        "cannot place the tasks of this `when`: its condition reads tensor data",
        "its tasks are chosen by a `when` on a tensor's contents (the effective sequence length)",
    ),
    (
        "llama_layer",
        "bytes of data memory",
        "its attention tiles and intermediates need about 600 KiB per core; a compute tile has 64 KiB",
    ),
    (
        "split_kv_decode",
        "bytes of data memory",
        "its 64×128 f32 key and value tiles (32 KiB each) fill a compute tile's 64 KiB",
    ),
    (
        "fa_slots",
        "bytes of data memory",
        "its 256-wide key and value tiles (64 KiB each in f16) pass a compute tile's 64 KiB",
    ),
    (
        "swiglu_mlp",
        "cannot make this local tensor",
        "its intermediates are local tensors, a fresh buffer from the heap arena each iteration",
    ),
    (
        "paged_gather",
        "cannot place this task: a view's position is read from a tensor at run time",
        "each block's page is tensor data (a page table)",
    ),
    (
        "tests_std_nn",
        "bytes of data memory",
        "std.nn's 64×128 f32 tiles: a kernel with three of them and its temporaries passes 64 KiB",
    ),
    (
        "tests_std_attention",
        "a view's position is read from a tensor at run time",
        "its paged decode places each page by a page table (and std.attention's 64×128 f32 tiles pass 64 KiB)",
    ),
    (
        "tests_std_moe",
        "cannot place a loop over the Sparse axis `routing`",
        "the experts a tile uses are tensor data, made at run time by `routing_csr`",
    ),
    (
        "tests_std_deepseek",
        "cannot place a loop over the Sparse axis `routing`",
        "the experts a tile uses are tensor data, made at run time by `routing_csr`",
    ),
    (
        "binary_expansion",
        "bytes of data memory",
        "its 128-row query tiles with their scores and state need about 400 KiB per core; a compute tile has 64 KiB",
    ),
    (
        "binary_expansion_naive",
        "bytes of data memory",
        "its 64×64 steps with their scores and state need about 140 KiB per compute tile",
    ),
    (
        "planned_decode",
        "cannot place this task: a view's position is read from a tensor at run time",
        "its chunks are work descriptors a `plan` task writes at run time",
    ),
    (
        "planned_decode_naive",
        "cannot place a loop over the Ragged axis `tiles`",
        "the requests' KV lengths are tensor data",
    ),
    (
        "moe_routing",
        "cannot place a loop over the Sparse axis `routing`",
        "the experts a token visits are tensor data (CSR routing)",
    ),
    (
        "varlen_attention",
        "cannot place a loop over the Ragged axis `tiles`",
        "the sequence lengths are tensor data",
    ),
];

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// The manifest's entries: name, program, schedule.
fn manifest() -> Vec<(String, PathBuf, Option<String>)> {
    let text = std::fs::read_to_string(examples_dir().join("manifest.toml")).expect("manifest");
    let table: toml::Table = text.parse().expect("manifest parses");
    table
        .iter()
        .map(|(name, v)| {
            (
                name.clone(),
                examples_dir().join(v["program"].as_str().expect("program")),
                v.get("schedule").and_then(|s| s.as_str()).map(String::from),
            )
        })
        .collect()
}

#[test]
fn every_example_emits_and_matches_wsp_run_or_is_refused_with_a_reason() {
    let base = std::env::temp_dir().join(format!("wsp-aie-examples-{}", std::process::id()));
    let mut emitted = 0;
    let mut summary: Vec<String> = Vec::new();
    let mut failures = Vec::new();
    for (name, path, schedule) in manifest() {
        let r = std::panic::catch_unwind(|| check(&base, &name, &path, schedule.as_deref()));
        match r {
            Ok(Some(line)) => {
                emitted += 1;
                summary.push(line);
            }
            Ok(None) => summary.push(format!(
                "{name}: refused as expected: {}",
                REFUSED
                    .iter()
                    .find(|(n, _, _)| *n == name)
                    .map_or("", |r| r.2)
            )),
            Err(e) => failures.push(format!(
                "{name}: {}",
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )),
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    eprintln!("{}", summary.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(emitted >= 10, "only {emitted} examples emitted");
}

/// One example (its manifest schedule, emitted with `--option schedule=NAME`): `Some(summary)`
/// when it emitted and matched, `None` when refused as expected.
fn check(base: &Path, name: &str, path: &Path, schedule: Option<&str>) -> Option<String> {
    let program = common::lower(path);
    let expected = REFUSED.iter().find(|(n, _, _)| *n == name);
    match (common::emit_schedule(&program, schedule), expected) {
        (Err(diags), Some((_, want, _))) => {
            assert!(
                diags
                    .iter()
                    .any(|d| d.severity == Severity::Error && d.message.contains(want)),
                "{name}: refused, but not with `{want}`: {diags:#?}"
            );
            // Located at the construct, where the IR knows it.
            assert!(diags.iter().all(|d| d.at.is_some()), "{name}: {diags:#?}");
            None
        }
        (Err(diags), None) => panic!("{name}: refused unexpectedly: {diags:#?}"),
        (Ok(_), Some((_, want, _))) => {
            panic!("{name}: expected a refusal (`{want}`), but it emitted")
        }
        (Ok(_), None) => {
            let n = common::run_and_compare_schedule(
                name,
                &program,
                schedule,
                &wsp_sim::base_dir_of(path),
                base,
            );
            Some(format!(
                "{name}: emitted, {n} outputs bit-identical to wsp run"
            ))
        }
    }
}
