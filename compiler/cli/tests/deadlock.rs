//! The static deadlock verdict (E0509 deadlocks, W0505 undecided, nothing: completes) against
//! `wsp run` on the same programs: every pipeline the static check calls safe runs without a
//! deadlock report, every one it calls deadlocking stops with E0811 (exit 3), and the depths of
//! its quick fix complete while one token less on any raised channel deadlocks again.
//!
//! The corpus: the `tests/ui/csp_deadlock_*.wsp` fixtures and the `csp_pipeline` example, plus pipelines generated from a fixed seed (sources sending on several channels in
//! loops, relays, sinks with nested or sequential `consume`s, replicated stages, depths 0–2).

use std::path::{Path, PathBuf};
use std::process::Command;

use wsp_core::Workspace;
use wsp_diagnostics::{Diagnostic, FileName};

#[derive(Debug, PartialEq)]
enum Verdict {
    Completes,
    Deadlocks,
    Undecided,
}

fn static_verdict(text: &str) -> (Verdict, Vec<Diagnostic>) {
    let mut ws = Workspace::new();
    ws.set_file("p.wsp", text.to_string());
    let diags = ws.check("p.wsp");
    let errors: Vec<_> = diags
        .iter()
        .filter(|d| d.code.starts_with('E') && d.code != "E0509")
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    assert!(
        errors.is_empty(),
        "corpus program has errors {errors:?}:\n{text}"
    );
    let v = if diags.iter().any(|d| d.code == "E0509") {
        Verdict::Deadlocks
    } else if diags.iter().any(|d| d.code == "W0505") {
        Verdict::Undecided
    } else {
        Verdict::Completes
    };
    (v, diags)
}

fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(format!("wsp-deadlock-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Runs the program with `wsp run`: `true` when it deadlocked (exit 3, E0811), `false` when it
/// completed; anything else fails the test.
fn runtime_deadlocks(text: &str, name: &str, data_dir: Option<&Path>) -> bool {
    runtime_report(text, name, data_dir).is_some()
}

/// The deadlock report `wsp run` printed (exit 3), or `None` when the run completed.
fn runtime_report(text: &str, name: &str, data_dir: Option<&Path>) -> Option<String> {
    let dir = scratch();
    let src_dir = data_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.clone());
    let file = src_dir.join(format!("{name}.wsp"));
    let owned = data_dir.is_none();
    if owned {
        std::fs::write(&file, text).expect("write program");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_wsp"))
        .arg("run")
        .arg(&file)
        .arg("--out-dir")
        .arg(dir.join(format!("{name}.out")))
        .arg("-q")
        .env("NO_COLOR", "1")
        .output()
        .expect("run wsp");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    match out.status.code() {
        Some(0) => None,
        Some(3) => {
            assert!(
                stderr.contains("E0811") || stdout.contains("E0811"),
                "exit 3 without E0811:\n{stderr}"
            );
            Some(stderr)
        }
        c => panic!("`wsp run` of {name} exited {c:?}:\n{stdout}\n{stderr}\n{text}"),
    }
}

/// Cross-checks one program; returns its verdict.
fn cross_check(text: &str, name: &str, data_dir: Option<&Path>) -> Verdict {
    let (v, diags) = static_verdict(text);
    match v {
        Verdict::Completes => assert!(
            !runtime_deadlocks(text, name, data_dir),
            "{name}: the static check calls it safe but `wsp run` deadlocked:\n{text}"
        ),
        Verdict::Deadlocks => {
            let report = runtime_report(text, name, data_dir).unwrap_or_else(|| {
                panic!(
                    "{name}: the static check reports a deadlock but `wsp run` completed:\n{text}"
                )
            });
            let d = diags.iter().find(|d| d.code == "E0509").expect("E0509");
            // The proof is an error, shown before the run that demonstrates it.
            assert!(
                report.contains("[E0509] Error") && report.contains("running `"),
                "{name}: `wsp run` does not say that the deadlock is proven:\n{report}"
            );
            // The runtime's report carries the static mitigation too.
            let help = d.help.as_deref().unwrap_or_default();
            assert!(
                report.contains(&format!(" (E0509): {help}")),
                "{name}: the deadlock report lacks the static depths:\n{report}"
            );
            if d.fixes.is_empty() {
                // No depth helps: unbounded channels deadlock too.
                assert!(
                    d.help
                        .as_deref()
                        .is_some_and(|h| h.contains("no channel depths")),
                    "{name}: E0509 without a fix must say no depth helps: {d:#?}"
                );
                return v;
            }
            let file = &d.primary.file;
            let fixed = d.fixes[0].apply_to(file, text);
            assert_eq!(
                static_verdict(&fixed).0,
                Verdict::Completes,
                "{name}: the suggested depths still deadlock statically:\n{fixed}"
            );
            assert!(
                !runtime_deadlocks(&fixed, &format!("{name}_fixed"), None),
                "{name}: `wsp run` deadlocks with the suggested depths:\n{fixed}"
            );
            // Minimal: one token less on any raised channel deadlocks (statically and at run
            // time) again.
            for e in &d.fixes[0].edits {
                let Ok(n) = e
                    .replacement
                    .trim_matches(|c: char| !c.is_ascii_digit())
                    .parse::<u64>()
                else {
                    continue;
                };
                let less = e.replacement.replace(&n.to_string(), &(n - 1).to_string());
                let mut one_less = d.fixes[0].clone();
                for x in &mut one_less.edits {
                    if x.span == e.span {
                        x.replacement = less.clone();
                    }
                }
                let lower = one_less.apply_to(file, text);
                assert_eq!(
                    static_verdict(&lower).0,
                    Verdict::Deadlocks,
                    "{name}: depths below the suggestion complete statically:\n{lower}"
                );
                assert!(
                    runtime_deadlocks(&lower, &format!("{name}_less"), None),
                    "{name}: depths below the suggestion complete at run time:\n{lower}"
                );
            }
        }
        Verdict::Undecided => {
            // Nothing is claimed; the run must still end (complete or report), never hang.
            runtime_deadlocks(text, name, data_dir);
        }
    }
    v
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn fixture_verdicts_agree_with_the_runtime() {
    let mut seen = Vec::new();
    let ui = repo().join("tests/ui");
    let mut files: Vec<_> = std::fs::read_dir(&ui)
        .expect("tests/ui")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("csp_deadlock_") && n.ends_with(".wsp"))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    for f in &files {
        let text = std::fs::read_to_string(f).expect("fixture");
        let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or("x");
        seen.push((name.to_string(), cross_check(&text, name, None)));
    }
    // The CSP example, run where its data lives.
    let dir = repo().join("examples/csp_pipeline");
    let text = std::fs::read_to_string(dir.join("csp_pipeline.wsp")).expect("csp_pipeline.wsp");
    seen.push((
        "csp_pipeline".into(),
        cross_check(&text, "csp_pipeline", Some(&dir)),
    ));
    // The fixtures cover every verdict.
    for want in [Verdict::Completes, Verdict::Deadlocks, Verdict::Undecided] {
        assert!(
            seen.iter().any(|(_, v)| *v == want),
            "{want:?} missing: {seen:?}"
        );
    }
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random pipeline with static counts: a source sending on its channels in loops (several
/// sends per iteration, or one loop per channel), an optional relay (possibly replicated), and
/// a sink whose `consume`s are nested or sequential.
fn generate(rng: &mut Rng) -> String {
    let nchan = 1 + rng.below(3) as usize;
    let n = 1 + rng.below(4);
    let m = 1 + rng.below(3);
    let mut s = format!(
        "axis tiles = Dense[{n}]\naxis more = Dense[{m}]\n\
         input X: f32[4, 4, 4] = random(seed: 1)\noutput Y: f32[4, 4, 4]\n\
         kernel copy(src: in f32[4, 4], dst: out f32[4, 4]) {{ dst = src }}\n"
    );
    let relay = nchan >= 2 && rng.below(2) == 0;
    // Channels c0..: the source produces all but, with a relay, the last one, which the
    // relay produces from c0.
    let src_chans: Vec<usize> = (0..nchan).filter(|&c| !(relay && c == nchan - 1)).collect();
    for c in 0..nchan {
        s += &format!("channel c{c}: Channel[depth: {}]\n", rng.below(3));
    }
    // Source.
    let prod: Vec<String> = src_chans.iter().map(|c| format!("c{c}")).collect();
    s += &format!("process source produces {} {{\n", prod.join(", "));
    if rng.below(2) == 0 {
        // One loop, every channel each iteration (random order).
        let mut order = src_chans.clone();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let sends: Vec<String> = order.iter().map(|c| format!("send c{c}, i")).collect();
        s += &format!("    for i in P.seq(tiles) {{ {} }}\n", sends.join("; "));
    } else {
        for c in &src_chans {
            let ax = if rng.below(2) == 0 { "tiles" } else { "more" };
            s += &format!("    for i in P.seq({ax}) {{ send c{c}, i }}\n");
        }
    }
    s += "}\n";
    // Relay c0 -> c{last}.
    let mut stages = vec!["source".to_string()];
    let mut sink_chans: Vec<usize> = src_chans.clone();
    if relay {
        let last = nchan - 1;
        sink_chans.retain(|&c| c != 0);
        sink_chans.push(last);
        s += &format!(
            "process relay consumes c0 produces c{last} {{\n    consume c0 as i {{ send c{last}, i }}\n}}\n"
        );
        stages.push(if rng.below(3) == 0 {
            "replicate(relay, 2)".into()
        } else {
            "relay".into()
        });
    }
    // Sink: nested or sequential consumes of its channels (random order).
    let mut order = sink_chans.clone();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let cons: Vec<String> = order.iter().map(|c| format!("c{c}")).collect();
    s += &format!("process sink consumes {} {{\n", cons.join(", "));
    let task = "copy[@](src: X[@], dst: Y[@])";
    if rng.below(2) == 0 {
        let mut body = task.replace('@', "v0");
        for (k, c) in order.iter().enumerate().rev() {
            body = format!("consume c{c} as v{k} {{ {body} }}");
        }
        // Only the innermost variable is used; the others are bound but unused.
        s += &format!("    {body}\n");
    } else {
        for (k, c) in order.iter().enumerate() {
            s += &format!(
                "    consume c{c} as v{k} {{ {} }}\n",
                task.replace('@', &format!("v{k}"))
            );
        }
    }
    s += "}\n";
    stages.push("sink".into());
    s += &format!("workload w = connect({})\n", stages.join(", "));
    s
}

#[test]
fn generated_pipeline_verdicts_agree_with_the_runtime() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut safe, mut dead) = (0, 0);
    for k in 0..100 {
        let text = generate(&mut rng);
        match cross_check(&text, &format!("gen{k}"), None) {
            Verdict::Completes => {
                safe += 1;
                // The task window only stalls submission: a window of one task never
                // deadlocks a pipeline that completes (docs/language.md).
                let tight = format!("{text}schedule tight = w.task_window(1)\n");
                assert!(
                    !runtime_deadlocks(&tight, &format!("gen{k}_window1"), None),
                    "a task window of 1 deadlocked:\n{tight}"
                );
            }
            Verdict::Deadlocks => dead += 1,
            Verdict::Undecided => panic!("a static pipeline was not decided:\n{text}"),
        }
    }
    eprintln!("generated pipelines: {safe} complete, {dead} deadlock");
    // The generator reaches both verdicts.
    assert!(safe >= 10 && dead >= 10, "safe {safe}, deadlocking {dead}");
}

/// A pipeline over a `DenseDyn(n)` axis is not decided by `wsp check` (W0505), but after a
/// deadlock `wsp run` redoes the count with the run's value of `n`: the report (text and
/// JSON) names the depth that run needs, which the runtime's own stuck state cannot, and
/// that depth completes.
#[test]
fn a_run_deadlock_gets_the_static_depths_for_its_param_values() {
    let prog = |depth: u32| {
        format!(
            "param n: u32 = 8\n\
             axis tiles = DenseDyn(n)\n\
             input X: f32[16, 4] = random(seed: 1)\n\
             output Y: f32[16, 4]\n\
             output Z: f32[16, 4]\n\
             kernel cp(src: in f32[4], dst: out f32[4]) {{ dst = src }}\n\
             channel a: Channel[depth: {depth}]\n\
             channel b: Channel[depth: 2]\n\
             process prod produces a, b {{\n\
             \x20   for i in P.seq(tiles) {{ send a, cp[i](src: X[i], dst: Y[i]) }}\n\
             \x20   for i in P.seq(tiles) {{ send b, cp[i](src: X[i], dst: Z[i]) }}\n\
             }}\n\
             process cons consumes a, b {{\n\
             \x20   consume b as i {{ cp[i](src: Y[i], dst: Z[i]) }}\n\
             \x20   consume a as i {{ cp[i](src: Y[i], dst: Y[i]) }}\n\
             }}\n\
             workload w = connect(prod, cons)\n"
        )
    };
    let text = prog(2);
    assert_eq!(static_verdict(&text).0, Verdict::Undecided);
    let dir = scratch();
    let file = dir.join("dyn_depths.wsp");
    std::fs::write(&file, &text).expect("write");
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_wsp"))
            .arg("run")
            .arg(&file)
            .args(["-q", "--timing-only"])
            .args(extra)
            .env("NO_COLOR", "1")
            .output()
            .expect("run wsp");
        assert_eq!(out.status.code(), Some(3));
        (
            String::from_utf8_lossy(&out.stderr).into_owned(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (err, _) = run(&[]);
    assert!(
        err.contains("static analysis with n = 8 (E0509): the smallest depths that complete: `a` depth 8 (now 2)"),
        "{err}"
    );
    assert!(err.contains("raise its depth above 2"), "{err}");
    let (err, _) = run(&["--set", "n=5"]);
    assert!(
        err.contains("with n = 5 (E0509)") && err.contains("`a` depth 5"),
        "{err}"
    );
    let (_, json) = run(&["--stats", "json"]);
    let v: serde_json::Value = serde_json::from_str(json.trim()).expect("json");
    let s = v["error"]["static_analysis"][0]
        .as_str()
        .unwrap_or_default();
    assert!(
        s.contains("E0509 with n = 8") && s.contains("`a` depth 8"),
        "{v}"
    );
    // The depth it names completes.
    assert!(!runtime_deadlocks(&prog(8), "dyn_depths8", None));
}

/// A pipeline built from stages of another file: the static verdict and its depths follow the
/// imports (the fix edits the file that declares each channel), and agree with `wsp run`.
#[test]
fn a_pipeline_across_files_is_decided_and_fixed_where_its_channels_are_declared() {
    let dir = scratch().join("across");
    std::fs::create_dir_all(&dir).expect("dir");
    let stages = "axis tiles = Dense[6]
input X: f32[6, 4, 4] = random(seed: 3)
channel c: Channel[depth: 1]
process split produces c, d {
    for i in P.seq(tiles) { send c, i }
    for i in P.seq(tiles) { send d, i }
}
channel d: Channel[depth: 1]
";
    let main = "import stages.{c, d, split, X}
output Z: f32[6, 4, 4]
kernel keep(src: in f32[4, 4], dst: out f32[4, 4]) { dst = src }
process join consumes c, d {
    consume d as i {
        consume c as j { keep[j](src: X[j], dst: Z[j]) }
    }
}
workload w = connect(split, join)
";
    let check = |stages: &str, main: &str| {
        let mut ws = Workspace::new();
        let (sp, mp) = (dir.join("stages.wsp"), dir.join("main.wsp"));
        let (sp, mp) = (sp.to_string_lossy(), mp.to_string_lossy());
        ws.set_file(&sp, stages.to_string());
        ws.set_file(&mp, main.to_string());
        let diags = ws.check(&mp);
        assert!(
            diags
                .iter()
                .all(|d| !d.code.starts_with('E') || d.code == "E0509"),
            "{diags:#?}"
        );
        diags
            .into_iter()
            .find(|d| d.code == "E0509" || d.code.starts_with("W050"))
    };
    // `wsp run` of main.wsp as written in `dir`, with these stages: its deadlock report.
    std::fs::write(dir.join("main.wsp"), main).expect("write");
    let run = |stages: &str| {
        std::fs::write(dir.join("stages.wsp"), stages).expect("write");
        runtime_report(main, "main", Some(&dir))
    };
    let d = check(stages, main).expect("a verdict");
    assert_eq!(d.code, "E0509", "{d:#?}");
    // Every blocked process is in stages.wsp or main.wsp; the primary label is main's.
    assert!(d.primary.file.as_str().ends_with("main.wsp"), "{d:#?}");
    assert!(
        d.secondary
            .iter()
            .any(|l| l.file.as_str().ends_with("stages.wsp")),
        "{d:#?}"
    );
    let report = run(stages).expect("`wsp run` deadlocks too");
    let help = d.help.as_deref().unwrap_or_default();
    assert!(report.contains(&format!(" (E0509): {help}")), "{report}");
    // The fix raises both channels, in stages.wsp where they are declared.
    let fix = &d.fixes[0];
    assert!(
        fix.edits
            .iter()
            .all(|e| e.file.as_str().ends_with("stages.wsp")),
        "{fix:#?}"
    );
    let sp = FileName::new(dir.join("stages.wsp").to_string_lossy().as_ref());
    let fixed = fix.apply_to(&sp, stages);
    assert!(check(&fixed, main).is_none(), "still deadlocks:\n{fixed}");
    assert!(run(&fixed).is_none(), "`wsp run` deadlocks:\n{fixed}");
}

/// A proven deadlock fails `wsp check` (exit 1, E0509 an error), so CI stops on it.
#[test]
fn a_proven_deadlock_fails_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ui");
    for f in [
        "csp_deadlock_full.wsp",
        "csp_deadlock_cycle.wsp",
        "csp_deadlock_rendezvous.wsp",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_wsp"))
            .arg("check")
            .arg(root.join(f))
            .env("NO_COLOR", "1")
            .output()
            .expect("run wsp");
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{f}:\n{text}");
        assert!(text.contains("[E0509] Error"), "{f}:\n{text}");
    }
    // Undecided (counts are data) stays a warning: exit 0.
    let out = Command::new(env!("CARGO_BIN_EXE_wsp"))
        .arg("check")
        .arg(root.join("csp_deadlock_undecided.wsp"))
        .output()
        .expect("run wsp");
    assert_eq!(out.status.code(), Some(0));
}
