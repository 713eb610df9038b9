//! Planning in `.wsp`: a `plan` task writing work descriptors that the workload iterates
//! (examples/planned_decode), and binary expansion into large tiles and residual tiers
//! (examples/binary_expansion); `--stats json` shows what each saves against the naive tiling.

mod common;

use common::run::{example, text, wsp};
use serde_json::Value;

/// `wsp run --stats json` of the example with extra arguments: (tasks per kernel, total tasks,
/// total cycles); every expectation must hold.
fn stats(name: &str, extra: &[&str]) -> (Vec<(String, u64)>, u64, u64) {
    let file = example(name);
    let dir = file.parent().expect("dir");
    let program = format!("{name}.wsp");
    let mut args = vec!["run", program.as_str(), "--stats", "json", "-q"];
    args.extend_from_slice(extra);
    let o = wsp(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("stats json");
    let kernels = v["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap_or("").to_string(),
                k["tasks"].as_u64().unwrap_or(0),
            )
        })
        .collect::<Vec<_>>();
    let tasks = kernels.iter().map(|k| k.1).sum();
    let cycles = v["stats"]["total_cycles"].as_u64().expect("total_cycles");
    let expects = v["expects"].as_array().expect("expects");
    assert!(
        expects.iter().all(|e| e["failure"].is_null()),
        "{expects:?}"
    );
    if !extra.contains(&"--timing-only") {
        assert!(!expects.is_empty());
    }
    (kernels, tasks, cycles)
}

fn count(kernels: &[(String, u64)], name: &str) -> u64 {
    kernels.iter().find(|k| k.0 == name).map_or(0, |k| k.1)
}

#[test]
fn the_plan_spreads_the_requests_over_the_cores_in_fewer_tasks_than_fixed_tiles() {
    // lens.npy: 1200, 40, 700, 130, 1536, 64, 900, 300 tokens. 64- and 128-token chunks
    // would be 79 and 43 (more than the 24 cube cores), so the plan takes 256: 23 chunks,
    // three of them (40, 64 and 44 tokens) on the short tier.
    let (planned, planned_tasks, planned_cycles) = stats("planned_decode", &[]);
    assert_eq!(count(&planned, "plan"), 1);
    assert_eq!(count(&planned, "decode_long"), 20);
    assert_eq!(count(&planned, "decode_short"), 3);
    assert_eq!(count(&planned, "merge"), 8);
    assert_eq!(planned_tasks, 32);

    // The naive schedule: every request in 64-token chunks.
    let (naive, naive_tasks, naive_cycles) = stats("planned_decode", &["--schedule", "naive"]);
    assert_eq!(count(&naive, "plan"), 0);
    assert_eq!(count(&naive, "decode_short"), 79);
    assert_eq!(naive_tasks, 87);
    assert!(
        planned_cycles * 2 < naive_cycles,
        "planned {planned_cycles} cycles, naive {naive_cycles}"
    );

    // More cores: 128-token chunks (43 of them fit 48), the same outputs.
    let (more, more_tasks, _) = stats("planned_decode", &["--set", "cores=48"]);
    assert_eq!(
        count(&more, "decode_long") + count(&more, "decode_short"),
        43
    );
    assert_eq!(more_tasks, 52);
}

#[test]
fn binary_expansion_takes_a_quarter_of_the_naive_steps() {
    // 704 tokens = 5 × 128 + 64: 5 × 5 large steps, 5 + 5 residual ones and the 64 × 64
    // corner, against 11 × 11 steps of 64; the outputs match the golden both ways.
    let (expanded, tasks, cycles) = stats("binary_expansion", &[]);
    for (kernel, n) in [
        ("flash_128x128", 25),
        ("flash_128x64", 5),
        ("flash_64x128", 5),
        ("flash_64x64", 1),
        ("finish", 11),
    ] {
        assert_eq!(count(&expanded, kernel), n, "{kernel}");
    }
    assert_eq!(tasks, 47);
    let (naive, naive_tasks, naive_cycles) = stats("binary_expansion", &["--schedule", "naive"]);
    assert_eq!(count(&naive, "flash_64x64"), 121);
    assert_eq!(naive_tasks, 132);
    assert!(cycles * 2 < naive_cycles, "{cycles} against {naive_cycles}");

    // At 8K, timing only (the data files hold 704 tokens; a timing run reads none): 75% fewer
    // steps.
    let at = |schedule: &str| {
        stats(
            "binary_expansion",
            &["--timing-only", "--set", "seq=8192", "--schedule", schedule],
        )
    };
    let (big, _, big_cycles) = at("main");
    let (small, _, small_cycles) = at("naive");
    assert_eq!(count(&big, "flash_128x128"), 4096);
    assert_eq!(count(&big, "flash_64x64"), 0);
    assert_eq!(count(&small, "flash_64x64"), 16384);
    assert!(
        big_cycles * 3 < small_cycles,
        "{big_cycles} against {small_cycles}"
    );
}
