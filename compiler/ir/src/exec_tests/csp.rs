//! CSP pipelines: a round-robin over bounded channels, and deadlocks reported with their
//! processes and channels.

use super::*;

#[test]
fn csp_pipeline_runs_round_robin_with_bounded_channels() {
    let p = csp_program(2, 4);
    let (ts, out) = run(&p, WorkloadId(0)).unwrap();
    let want: Vec<f64> = (0..8).map(|i| f64::from(i * i)).collect();
    assert_eq!(ts[3].to_f64(), want);
    let trace: Vec<String> = out
        .tasks
        .iter()
        .map(|t| format!("{}{}", t.process.clone().unwrap_or_default(), t.coords[0]))
        .collect();
    // One step is one visible action: a task (with its send), or taking a token. Round 1:
    // loader runs load 0; computer takes token 0; storer waits. Round 2: load 1; square 0
    // (sends); storer takes 0. Round 3: load 2; computer takes 1; store 0. And so on.
    assert_eq!(
        trace,
        vec![
            "loader0",
            "loader1",
            "computer0",
            "loader2",
            "storer0",
            "loader3",
            "computer1",
            "storer1",
            "computer2",
            "storer2",
            "computer3",
            "storer3"
        ]
    );
    // A rendezvous channel gives the same data.
    let (ts, _) = run(&csp_program(0, 4), WorkloadId(0)).unwrap();
    assert_eq!(ts[3].to_f64(), want);
}

#[test]
fn csp_deadlock_is_reported_with_processes_and_channels() {
    // a: consume c1 { send c2 }, b: consume c2 { send c1 } — each waits for the other.
    let mut p = Program::new();
    p.channels.push(Channel {
        name: "c1".into(),
        depth: 1,
        latency: None,
    });
    p.channels.push(Channel {
        name: "c2".into(),
        depth: 1,
        latency: None,
    });
    let relay = |name: &str, from: u32, to: u32| Process {
        name: name.into(),
        consumes: vec![ChannelId(from)],
        produces: vec![ChannelId(to)],
        vars: vec!["i".into()],
        body: vec![WStmt::Consume {
            channel: ChannelId(from),
            bindings: vec![LoopVar(0)],
            body: vec![WStmt::Send {
                channel: ChannelId(to),
                payload: SendPayload::Values {
                    values: vec![var(0)],
                },
            }],
        }],
    };
    p.processes.push(relay("a", 0, 1));
    p.processes.push(relay("b", 1, 0));
    p.workloads.push(Workload {
        name: "ring".into(),
        vars: vec![],
        body: WorkloadBody::Connect {
            processes: vec![
                ConnectItem {
                    process: ProcessId(0),
                    replicas: 1,
                },
                ConnectItem {
                    process: ProcessId(1),
                    replicas: 1,
                },
            ],
        },
    });
    let e = run(&p, WorkloadId(0)).unwrap_err();
    assert_eq!(e.code, "E0811");
    assert!(
        e.message
            .contains("`a` waits on `c1` (empty), `b` waits on `c2` (empty)")
            && e.message.contains("`c1` 0/1"),
        "{}",
        e.message
    );
}
