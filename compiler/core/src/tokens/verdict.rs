//! The verdict on one `connect`: its instances in connect order, run with the declared depths;
//! a deadlock is E0509 (each blocked process labelled with its counts) with the smallest total
//! raise of depths that completes, searched over bounded compositions, as help and fix; a
//! pipeline that cannot be decided is W0505.

use super::run::{simulate, Outcome, Wait};
use super::*;

#[allow(clippy::too_many_arguments)]
pub(super) fn analyse_connect(
    names: &[FileName],
    wname: &str,
    span: Span,
    args: &[wsp_syntax::ast::Arg],
    off: u32,
    procs: &BTreeMap<String, Result<Proc, Undecidable>>,
    chans: &[Chan],
    consts: &BTreeMap<String, i64>,
    params: &[String],
) -> Option<Diagnostic> {
    let fname = &names[0];
    let here = |span: Span| At {
        file: 0,
        span: span.shift(off),
    };
    let undecidable = |at: At, why: String| {
        Some(
            Diagnostic::new(
                codes::W0505,
                format!("cannot decide statically whether `{wname}` completes or deadlocks"),
                Label::new(fname.clone(), span, "pipeline not decided statically"),
            )
            .with_label(Label::new(names[at.file].clone(), at.span, why.clone()))
            .with_note(format!(
                "the static deadlock check counts tokens when every trip count is a constant; here {why}"
            ))
            .with_help(
                "a deadlock, if any, is reported at run time (E0811); a pipeline that never ends \
                 runs until `wsp run --max-tasks N` or `--max-cycles N` stops it (E0815)",
            ),
        )
    };
    // Instances in connect order, replicas adjacent (as `wsp run` starts them).
    let mut inst: Vec<(&Proc, String)> = Vec::new();
    for a in args {
        let (name_e, reps) = match &a.value.kind {
            ExprKind::Call {
                callee,
                args: rargs,
                ..
            } if matches!(&callee.kind, ExprKind::Name(n) if n.name == "replicate") => {
                let p = rargs.first()?;
                let n = rargs.get(1).and_then(|r| const_int(&r.value, consts));
                let Some(n) = n else {
                    // A negative count, or one without a value that names no param, is an
                    // error of its own (E0407, E0213).
                    let count = rargs.get(1).map(|r| &r.value);
                    let is_param = |x: &str| params.iter().any(|p| p == x);
                    if !count.is_some_and(|r| {
                        crate::types::eval_int(r, consts).is_none()
                            && crate::types::names_any(r, &is_param)
                    }) {
                        return None;
                    }
                    let at = rargs.get(1).map(|r| r.value.span).unwrap_or(a.value.span);
                    let why = match rargs.get(1).map(|r| &r.value.kind) {
                        Some(ExprKind::Name(x)) if params.contains(&x.name) => {
                            format!("the replica count is the param `{}`", x.name)
                        }
                        _ => "the replica count is not a constant".to_string(),
                    };
                    return undecidable(here(at), why);
                };
                // A count out of range is an error of its own (E0407): nothing to decide.
                if n == 0 || n > crate::check::MAX_PROCESSES as u64 {
                    return None;
                }
                (&p.value, n)
            }
            _ => (&a.value, 1),
        };
        // An operand that is not a process is an error of its own (E0101, E0407): nothing to
        // decide.
        let ExprKind::Name(pn) = &name_e.kind else {
            return None;
        };
        match procs.get(&pn.name) {
            None => return None,
            Some(Err(Undecidable(at, why))) => {
                return undecidable(*at, format!("in process `{}`, {why}", pn.name))
            }
            Some(Ok(p)) => {
                if reps > 4096 {
                    return undecidable(
                        here(name_e.span),
                        format!("{reps} replicas are too many to simulate"),
                    );
                }
                for r in 0..reps {
                    let label = if reps > 1 {
                        format!("{}#{r}", p.name)
                    } else {
                        p.name.clone()
                    };
                    inst.push((p, label));
                }
                // More instances than a pipeline has is an error of its own (E0407).
                if inst.len() as i64 > crate::check::MAX_PROCESSES {
                    return None;
                }
            }
        }
    }
    let procs_only: Vec<&Proc> = inst.iter().map(|(p, _)| *p).collect();
    // The channels the pipeline uses decide it; the program's others do not matter here.
    let mut used = vec![false; chans.len()];
    for p in &procs_only {
        for &c in &p.produces {
            used[c] = true;
        }
        mark_channels(&p.body, &mut used);
    }
    let mut in_use = chans.iter().zip(&used).filter(|(_, u)| **u).map(|(c, _)| c);
    if in_use.clone().any(|c| c.invalid) {
        return None;
    }
    if let Some(c) = in_use.find(|c| c.depth == u64::MAX) {
        return undecidable(
            At { file: 0, span },
            format!("the depth of channel `{}` is not a constant", c.name),
        );
    }
    let depths: Vec<u64> = chans.iter().map(|c| c.depth).collect();
    let mut budget = STEP_BUDGET;
    let too_large = || {
        undecidable(
            At { file: 0, span },
            format!(
                "the pipeline takes more than {STEP_BUDGET} abstract steps, too large to decide"
            ),
        )
    };
    let (waits, fill, counts, done) = match simulate(&procs_only, chans.len(), &depths, &mut budget)
    {
        Outcome::Completes { .. } => return None,
        Outcome::TooLarge => return too_large(),
        Outcome::Deadlock {
            waits,
            fill,
            threads,
            done,
        } => (waits, fill, threads, done),
    };
    // Deadlocked: label every blocked process.
    let describe = |w: &Wait| -> String {
        let (sent, recv) = &counts[w.thread];
        let c = &chans[w.ch];
        let who = &inst[w.thread].1;
        if w.sending {
            if c.depth == 0 {
                format!(
                    "`{who}` waits for its token on `{}` (rendezvous, depth 0) to be taken, after sending {} tokens",
                    c.name, sent[w.ch]
                )
            } else {
                format!(
                    "`{who}` waits to send on `{}`: full ({}/{} tokens), after sending {} tokens",
                    c.name, fill[w.ch], c.depth, sent[w.ch]
                )
            }
        } else {
            // The channel stays open while a producer of it has not finished.
            let open: Vec<&str> = inst
                .iter()
                .enumerate()
                .filter(|(i, (p, _))| !done[*i] && p.produces.contains(&w.ch))
                .map(|(_, (_, label))| label.as_str())
                .collect();
            let never = if open.is_empty() {
                String::new()
            } else {
                format!(
                    "; it never closes: its producer {} is blocked too",
                    open.iter()
                        .map(|l| format!("`{l}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            format!(
                "`{who}` waits on `{}`: empty, after receiving {} tokens{never}",
                c.name, recv[w.ch]
            )
        }
    };
    waits.first()?;
    // The primary label is in the analysed file: its first blocked site there, or else the
    // `connect` (every blocked process is in another file).
    let label = |w: &Wait| Label::new(names[w.at.file].clone(), w.at.span, describe(w));
    let primary = waits.iter().position(|w| w.at.file == 0);
    let mut d = Diagnostic::new(
        codes::E0509,
        format!("the pipeline `{wname}` deadlocks"),
        match primary {
            Some(i) => label(&waits[i]),
            None => Label::new(
                fname.clone(),
                span,
                "deadlocks: its blocked processes are declared in other files",
            ),
        },
    );
    for (i, w) in waits.iter().enumerate() {
        if Some(i) != primary {
            d = d.with_label(label(w));
        }
    }
    d = d.with_note("counted statically with the declared channel depths; `wsp run` reports this deadlock as E0811");
    // Unbounded channels: does any depth help?
    let mut unbounded_budget = STEP_BUDGET;
    let big: Vec<u64> = vec![u64::MAX / 2; chans.len()];
    let totals = match simulate(&procs_only, chans.len(), &big, &mut unbounded_budget) {
        Outcome::Completes { sent } => sent,
        Outcome::Deadlock { .. } => {
            return Some(d.with_help(
                "no channel depths avoid it: even with unbounded channels some process waits on an empty channel that is never filled; reorder sends and consumes (one process on the cycle must send before it consumes)",
            ))
        }
        Outcome::TooLarge => return Some(d),
    };
    // Candidate channels: those with tokens; each depth from its declared value up to its total.
    let cand: Vec<usize> = (0..chans.len())
        .filter(|&c| totals[c] > 0 && depths[c] < totals[c])
        .collect();
    let max_extra: u64 = cand.iter().map(|&c| totals[c] - depths[c]).sum();
    let mut found: Option<Vec<u64>> = None;
    let mut k = 1;
    'search: while k <= max_extra {
        let mut extra = vec![0u64; cand.len()];
        // Enumerate compositions of k over cand with per-channel caps.
        let caps: Vec<u64> = cand.iter().map(|&c| totals[c] - depths[c]).collect();
        let mut done = false;
        if !first_composition(k, &caps, &mut extra) {
            done = true;
        }
        while !done {
            let mut trial = depths.clone();
            for (i, &c) in cand.iter().enumerate() {
                trial[c] += extra[i];
            }
            match simulate(&procs_only, chans.len(), &trial, &mut budget) {
                Outcome::Completes { .. } => {
                    found = Some(trial);
                    break 'search;
                }
                Outcome::Deadlock { .. } => {}
                Outcome::TooLarge => {
                    break 'search;
                }
            }
            done = !next_composition(&caps, &mut extra);
        }
        k += 1;
    }
    let fmt_depths = |ds: &[u64]| -> String {
        (0..chans.len())
            .filter(|&c| ds[c] != depths[c])
            .map(|c| format!("`{}` depth {} (now {})", chans[c].name, ds[c], depths[c]))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let raise = |ds: &[u64]| Fix {
        title: format!("raise {}", fmt_depths(ds)),
        edits: (0..chans.len())
            .filter(|&c| ds[c] != depths[c])
            .map(|c| {
                let (span, prefix, suffix) = chans[c].fix_at;
                Edit {
                    file: names[chans[c].fix_file].clone(),
                    span,
                    replacement: format!("{prefix}{}{suffix}", ds[c]),
                }
            })
            .collect(),
    };
    Some(match found {
        Some(ds) => d
            .with_help(format!(
                "the smallest depths that complete: {}",
                fmt_depths(&ds)
            ))
            .with_fix(raise(&ds)),
        None => {
            let mut ds = depths.clone();
            for &c in &cand {
                ds[c] = totals[c];
            }
            d.with_help(format!(
                "depths that complete (the search for the smallest was too large): {}",
                fmt_depths(&ds)
            ))
            .with_fix(raise(&ds))
        }
    })
}

/// The first composition of `k` into `caps.len()` parts bounded by `caps` (lexicographically
/// largest first part), or `false` when none exists.
pub(super) fn first_composition(k: u64, caps: &[u64], out: &mut [u64]) -> bool {
    let mut left = k;
    for (o, c) in out.iter_mut().zip(caps) {
        *o = left.min(*c);
        left -= *o;
    }
    left == 0
}

/// The next composition with the same sum, in decreasing lexicographic order.
pub(super) fn next_composition(caps: &[u64], out: &mut [u64]) -> bool {
    let n = out.len();
    // Find the rightmost position i < n-1 with out[i] > 0 such that the suffix after i can
    // absorb one more unit.
    let mut suffix_sum: u64 = 0;
    let mut suffix_cap: u64 = 0;
    for i in (0..n).rev() {
        if i + 1 < n {
            suffix_sum += out[i + 1];
            suffix_cap += caps[i + 1];
        }
        if i + 1 < n && out[i] > 0 && suffix_sum < suffix_cap {
            out[i] -= 1;
            // Refill the suffix greedily from the left with suffix_sum + 1.
            let mut left = suffix_sum + 1;
            for j in i + 1..n {
                out[j] = left.min(caps[j]);
                left -= out[j];
            }
            return true;
        }
    }
    false
}
