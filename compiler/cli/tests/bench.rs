//! `wsp bench`: the seed's table, one timing-only run per row in a process of its own.

use std::process::{Command, Output};

fn wsp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wsp"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run wsp")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The built-in LLaMA-7B layer: 16T + 3T² tasks for T = seq / 64, with its throughput, peak
/// memory, cycles and utilisation.
#[test]
fn the_built_in_layer_gives_the_seeds_task_counts() {
    let o = wsp(&["bench", "--values", "256,512", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let rows = v["rows"].as_array().expect("rows");
    let tasks: Vec<u64> = rows.iter().filter_map(|r| r["tasks"].as_u64()).collect();
    // T = 4: 64 + 48; T = 8: 128 + 192.
    assert_eq!(tasks, vec![112, 320]);
    for r in rows {
        assert!(r["tasks_per_ms"].as_f64().is_some_and(|t| t > 0.0), "{r}");
        assert!(r["total_cycles"].as_u64().is_some_and(|c| c > 0), "{r}");
        assert!(r["process_ms"].as_f64() >= r["run_ms"].as_f64(), "{r}");
        let util = r["utilisation"].as_array().expect("utilisation");
        assert!(!util.is_empty(), "{r}");
        for u in util {
            let share = u["utilisation"].as_f64().expect("utilisation");
            let busiest = u["busiest"].as_f64().expect("busiest");
            assert!(share > 0.0 && share <= busiest && busiest <= 1.0, "{r}");
            assert!(u["used"].as_u64() <= u["cores"].as_u64(), "{r}");
        }
        if cfg!(target_os = "linux") {
            assert!(
                r["peak_rss_bytes"].as_u64().is_some_and(|b| b > 1 << 20),
                "{r}"
            );
        }
    }
    // The table: a header and a row per value.
    let o = wsp(&["bench", "--values", "256"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(t.contains("tasks/ms") && t.contains("peak MiB"), "{t}");
    assert!(
        t.lines()
            .any(|l| l.trim_start().starts_with("256") && l.contains(" 112 ")),
        "{t}"
    );
}

/// Any program whose size is a param; a run that fails names its value and the error.
#[test]
fn a_program_of_ones_own_and_a_failing_row() {
    let d = std::env::temp_dir().join(format!("wsp-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("dir");
    let f = d.join("p.wsp");
    std::fs::write(
        &f,
        "param n: i64 = 4\naxis rows = DenseDyn(n)\ninput X: f32[n, 16] = random(seed: 1)\n\
         output Y: f32[n, 16]\nkernel cp(x: in f32[1, 16], y: out f32[1, 16]) { y = x }\n\
         workload w {\n    for i in P(rows) { cp[i](x: X[i], y: Y[i]) }\n}\n",
    )
    .expect("write");
    let p = f.to_str().expect("path");
    let o = wsp(&["bench", p, "--param", "n", "--values", "3,5", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let tasks: Vec<u64> = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["tasks"].as_u64())
        .collect();
    assert_eq!(tasks, vec![3, 5]);
    let o = wsp(&["bench", p, "--param", "m", "--values", "3"]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("m = 3") && err.contains("m"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `examples/llama7b` at its default 256 tokens builds `examples/llama_layer`'s graph (which
/// checks the layer's numbers against NumPy): the same tasks, edges and modelled cycles.
#[test]
fn the_layer_at_256_tokens_is_the_checked_llama_layer() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let stats = |f: &str| {
        let p = repo.join(f);
        let o = wsp(&[
            "run",
            p.to_str().expect("path"),
            "--timing-only",
            "-q",
            "--stats",
            "json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let s = &v["stats"];
        (
            s["tasks"].clone(),
            s["edges"].clone(),
            s["total_cycles"].clone(),
        )
    };
    assert_eq!(
        stats("examples/llama7b/llama7b.wsp"),
        stats("examples/llama_layer/llama_layer.wsp")
    );
}
