//! What the AIE target refuses and what it warns about, on small programs: each refusal is an
//! error naming what AIE cannot do; accepted programs with a diagnosed feature carry the
//! capability matrix's warning, and still run bit-identical to `wsp run`.

mod common;

use std::path::{Path, PathBuf};

use wsp_backend::Severity;

fn programs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

fn work(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("wsp-aie-{name}-{}", std::process::id()))
}

fn errors(name: &str) -> Vec<String> {
    let p = common::lower(&programs().join(name));
    match common::emit(&p) {
        Ok(_) => panic!("{name} emitted"),
        Err(d) => {
            assert!(d.iter().all(|x| x.severity == Severity::Error), "{d:#?}");
            d.into_iter().map(|x| x.message).collect()
        }
    }
}

#[test]
fn a_cycle_of_channels_is_not_a_dag() {
    let e = errors("cyc.wsp");
    assert!(
        e.iter()
            .any(|m| m.contains("the stream graph is not a DAG") && m.contains("p1 → p2 → p1")),
        "{e:?}"
    );
}

#[test]
fn work_stealing_is_unsupported_with_the_matrix_reason() {
    let e = errors("steal.wsp");
    assert!(
        e.iter().any(
            |m| m.contains("`.dispatch(work_steal)` is not supported on AIE")
                && m.contains("no run-time scheduler can move work")
        ),
        "{e:?}"
    );
}

#[test]
fn a_rendezvous_channel_becomes_depth_one_with_a_warning_and_runs() {
    let p = common::lower(&programs().join("rdv.wsp"));
    let (tree, warnings) = common::emit(&p).expect("emits");
    assert!(
        warnings.iter().any(|w| w.severity == Severity::Warning
            && w.message.contains("a depth-0 channel becomes depth 1")),
        "{warnings:#?}"
    );
    let design = String::from_utf8_lossy(tree.get("aie.mlir").expect("design")).to_string();
    assert!(
        design.contains("sym_name = \"ch_a_0_1\", elemNumber = 1 : i32"),
        "{design}"
    );
    let w = work("rdv");
    assert_eq!(common::run_and_compare("rdv", &p, &programs(), &w), 1);
    let _ = std::fs::remove_dir_all(&w);
}

#[test]
fn a_when_on_loop_variables_is_decided_at_compile_time_and_affinity_places_by_key() {
    let p = common::lower(&programs().join("when.wsp"));
    let (plan, warnings) = wsp_aie::AieBackend.plan(&p).expect("plans");
    // task_window is diagnosed on AIE (object FIFO depths bound the work in flight).
    assert!(
        warnings.iter().any(|w| w.message.contains("task_window")),
        "{warnings:#?}"
    );
    // affinity(n): task i on tile i mod 8.
    for t in &plan.tasks {
        assert_eq!(t.tile as i64, t.coords[0] % 8);
    }
    let w = work("when");
    assert_eq!(common::run_and_compare("when", &p, &programs(), &w), 1);
    let _ = std::fs::remove_dir_all(&w);
}

#[test]
fn matmul_carries_the_bf16_warning() {
    let p = common::lower(&programs().join("ops.wsp"));
    let (_, warnings) = common::emit(&p).expect("emits");
    let w = warnings
        .iter()
        .find(|w| w.message.contains("matrix unit multiplies bf16"))
        .expect("matmul warning");
    assert!(w.at.is_some(), "at the kernel");
}

#[test]
fn blocks_around_a_pipeline_run_in_task_order_on_the_process_tiles() {
    let p = common::lower(&programs().join("mixed.wsp"));
    let (plan, _) = wsp_aie::AieBackend.plan(&p).expect("plans");
    // Each core's tasks are in increasing task order (the order the host fills their inputs).
    for t in &plan.tiles {
        let order: Vec<usize> = t
            .program
            .iter()
            .filter_map(|s| match s {
                wsp_aie::plan::Step::Task(i) => Some(*i),
                _ => None,
            })
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    }
    let w = work("mixed");
    assert_eq!(common::run_and_compare("mixed", &p, &programs(), &w), 1);
    let _ = std::fs::remove_dir_all(&w);
}

#[test]
fn replicas_take_a_tile_each_and_tokens_go_to_the_replica_that_took_them() {
    let p = common::lower(&programs().join("replicas.wsp"));
    let (plan, warnings) = wsp_aie::AieBackend.plan(&p).expect("plans");
    assert_eq!(plan.tiles.len(), 3, "loader and two workers");
    let channels: Vec<&str> = plan
        .fifos
        .iter()
        .filter(|f| matches!(f.kind, wsp_aie::plan::FifoKind::Channel(_)))
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(channels, ["ch_l2w_0_1", "ch_l2w_0_2"]);
    assert!(
        warnings.iter().any(|w| w
            .message
            .contains("each AIE replica occupies its own compute tile")),
        "{warnings:#?}"
    );
    let w = work("replicas");
    assert_eq!(common::run_and_compare("replicas", &p, &programs(), &w), 1);
    let _ = std::fs::remove_dir_all(&w);
}
