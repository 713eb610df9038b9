//! What a recorded run shows: statistics as JSON, the Chrome trace's events and the task graph
//! as DOT (`P.seq` order dashed, labels escaped).

use super::{arch, arg, noop, order_run, task};
use crate::*;

#[test]
fn seq_order_in_the_graph_is_dashed_and_joins_many_to_many_through_a_point() {
    let mut rt = order_run(Some(Order::Seq), 3, 1);
    rt.finish().unwrap();
    let dot = rt.dot();
    assert!(dot.contains("t0 -> t1 [style=dashed"), "{dot}");
    assert!(dot.contains("t1 -> t2 [style=dashed"), "{dot}");
    assert!(!dot.contains("t0 -> t2"), "{dot}");
    // No data edges: the order is all there is.
    assert!(rt.graph_edges_for_tests().is_empty());
    let mut rt = order_run(Some(Order::Seq), 2, 3);
    rt.finish().unwrap();
    let dot = rt.dot();
    assert!(dot.contains("seq0 [shape=point"), "{dot}");
    for t in 0..3 {
        assert!(
            dot.contains(&format!("t{t} -> seq0 [style=dashed")),
            "{dot}"
        );
        assert!(
            dot.contains(&format!("seq0 -> t{} [style=dashed", t + 3)),
            "{dot}"
        );
    }
    // Nested: a Seq of steps, each a Seq of two; the inner steps chain and the outer
    // step's first task waits for the last of the step before.
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.execute = false;
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("t", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4, 16]).unwrap();
    rt.order_begin(Order::Seq);
    for i in 0..2 {
        if i > 0 {
            rt.order_step();
        }
        rt.order_begin(Order::Seq);
        for j in 0..2 {
            if j > 0 {
                rt.order_step();
            }
            let a = [arg(x, &[2 * i + j, 0], &[1, 16], Direction::InOut)];
            rt.submit(&task(k, &[i, j], &a, 1000)).unwrap();
        }
        rt.order_end().unwrap();
    }
    rt.order_end().unwrap();
    let s = rt.finish().unwrap();
    let dot = rt.dot();
    for (a, b) in [(0, 1), (1, 2), (2, 3)] {
        assert!(
            dot.contains(&format!("t{a} -> t{b} [style=dashed")),
            "{dot}"
        );
    }
    let chain = order_run(Some(Order::Seq), 4, 1)
        .finish()
        .unwrap()
        .total_cycles;
    assert_eq!(s.total_cycles, chain);
}

#[test]
fn stats_trace_and_dot_are_well_formed() {
    let mut cfg = Config::new(arch("ascend910b")).with_window(4);
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("k", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[8, 8]).unwrap();
    for i in 0..10 {
        let a = [arg(x, &[i % 2, 0], &[1, 8], Direction::InOut)];
        rt.submit(&task(k, &[i], &a, 100)).unwrap();
    }
    let s = rt.finish().unwrap();
    let j: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(j["tasks"], 10);
    assert_eq!(j["rings"][0]["name"], "task_ring");
    assert_eq!(s.edges, 8);
    let t: serde_json::Value = serde_json::from_str(&rt.chrome_trace()).unwrap();
    let evs = t["traceEvents"].as_array().unwrap();
    assert_eq!(evs.iter().filter(|e| e["cat"] == "task").count(), 10);
    assert!(evs
        .iter()
        .any(|e| e["cat"] == "stall" && e["name"] == "TASK_RING_FULL"));
    let dot = rt.dot();
    assert!(dot.contains("t0 -> t2;") && dot.contains("k[3]"), "{dot}");
    let busy: u64 = s.cores.iter().map(|c| c.busy_cycles).sum();
    assert!(busy >= 1000);
}

#[test]
fn dot_labels_are_escaped() {
    let mut cfg = Config::new(arch("ascend910b"));
    cfg.record = true;
    let mut rt = Runtime::new(cfg).unwrap();
    let k = rt.register_kernel("say \"hi\"\\", CoreClass::Vector, noop());
    let x = rt.add_tensor(4, &[4]).unwrap();
    rt.submit(&task(k, &[0], &[arg(x, &[0], &[4], Direction::Out)], 10))
        .unwrap();
    rt.finish().unwrap();
    assert!(
        rt.dot().contains(r#"[label="say \"hi\"\\[0]"]"#),
        "{}",
        rt.dot()
    );
}
