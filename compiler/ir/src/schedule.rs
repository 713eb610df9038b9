//! A schedule as an engine applies it: the policy forms its directives set, in order, with
//! their integer arguments (what `wsp_runtime::Policies::apply` takes), and the key expressions
//! (dispatch, priority, stream) evaluated on each task's axis coordinates. The simulator and
//! the Ascend backend's orchestration both read a schedule through [`resolve`], so they
//! configure the runtime alike.

use crate::workload::{
    AxisId, DirValue, Directive, ExprOp, Policy, Program, Schedule, TensorId, WindowMode,
};
use wsp_vocab::schedule::{Directive as VocabDirective, PolicyArg};

/// A policy key: how a task's key (affinity, hash, stream, priority) is computed.
#[derive(Clone, Debug, PartialEq)]
pub enum Key {
    Int(i64),
    Axis(AxisId, String),
    Binary(ExprOp, Box<Key>, Box<Key>),
}

impl Key {
    pub fn eval(&self, axes: &[(AxisId, i64)]) -> Result<i64, String> {
        Ok(match self {
            Key::Int(v) => *v,
            Key::Axis(a, name) => axes
                .iter()
                .rev()
                .find(|(x, _)| x == a)
                .map(|(_, v)| *v)
                .ok_or_else(|| {
                    format!("the schedule's key uses axis `{name}`, but the task is not inside a loop over it")
                })?,
            Key::Binary(op, l, r) => {
                let (x, y) = (l.eval(axes)?, r.eval(axes)?);
                match op {
                    ExprOp::Add => x.wrapping_add(y),
                    ExprOp::Sub => x.wrapping_sub(y),
                    ExprOp::Mul => x.wrapping_mul(y),
                    ExprOp::Div | ExprOp::Rem if y == 0 => {
                        return Err("division by zero in the schedule's key".into())
                    }
                    ExprOp::Div => x.wrapping_div(y),
                    ExprOp::Rem => x.wrapping_rem(y),
                    ExprOp::Min => x.min(y),
                    ExprOp::Max => x.max(y),
                    other => return Err(format!("`{other:?}` in a schedule key")),
                }
            }
        })
    }
}

fn key_of(p: &Program, v: &DirValue) -> Result<Key, String> {
    Ok(match v {
        DirValue::Int { value } => Key::Int(*value),
        DirValue::Axis { axis } => Key::Axis(
            *axis,
            p.axes
                .get(axis.index())
                .map(|a| a.name.clone())
                .unwrap_or_else(|| "?".into()),
        ),
        DirValue::Binary { op, lhs, rhs } => {
            Key::Binary(*op, Box::new(key_of(p, lhs)?), Box::new(key_of(p, rhs)?))
        }
        other => {
            return Err(format!(
                "`{}` is not a key expression: a key is built from axes (as in `affinity(rows)`), integers and arithmetic",
                describe(p, other)
            ))
        }
    })
}

/// A directive argument as the program spells it (for messages).
pub fn describe(p: &Program, v: &DirValue) -> String {
    match v {
        DirValue::Int { value } => value.to_string(),
        DirValue::Float { value } => value.to_string(),
        DirValue::Str { value } => format!("{value:?}"),
        DirValue::Ident { name } => name.clone(),
        DirValue::Axis { axis } => p
            .axes
            .get(axis.index())
            .map_or_else(|| "?".into(), |a| a.name.clone()),
        DirValue::Call { name, args } => {
            let args: Vec<String> = args.iter().map(|a| describe(p, &a.value)).collect();
            format!("{name}({})", args.join(", "))
        }
        DirValue::Binary { op, lhs, rhs } => {
            let (l, r) = (describe(p, lhs), describe(p, rhs));
            match op {
                ExprOp::Add => format!("{l} + {r}"),
                ExprOp::Sub => format!("{l} - {r}"),
                ExprOp::Mul => format!("{l} * {r}"),
                ExprOp::Div => format!("{l} / {r}"),
                ExprOp::Rem => format!("{l} % {r}"),
                other => format!("{other:?}({l}, {r})").to_lowercase(),
            }
        }
    }
}

fn int_args(p: &Program, d: &str, args: &[DirValue]) -> Result<Vec<u32>, String> {
    args.iter()
        .map(|a| match *a {
            DirValue::Int { value } => u32::try_from(value)
                .map_err(|_| format!("`{d}` takes a count from 0 to 2³², found {value}")),
            ref other => Err(format!(
                "`{d}` takes integer counts, found `{}`",
                describe(p, other)
            )),
        })
        .collect()
}

/// The key expressions of a schedule: each policy that reads a key has its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Keys {
    /// `affinity(key)` or `hash(key)`.
    pub dispatch: Option<Key>,
    /// `priority(key)`.
    pub priority: Option<Key>,
    /// `stream_by(key)`, else the dispatch key.
    pub stream: Option<Key>,
}

impl Keys {
    pub fn eval(k: &Option<Key>, axes: &[(AxisId, i64)]) -> Result<i64, String> {
        k.as_ref().map_or(Ok(0), |k| k.eval(axes))
    }
}

impl Schedule {
    /// The architecture model its `.target(...)` names; the last one applies, as for every
    /// directive given twice (W0601).
    pub fn target(&self) -> Option<&str> {
        self.directives.iter().rev().find_map(|d| match d {
            Directive::Target { arch } => Some(arch.as_str()),
            _ => None,
        })
    }
}

/// `.spatial_map(grid: (rows, cols), at: (row, col))`: the grid and its two keys.
#[derive(Clone, Debug, PartialEq)]
pub struct Spatial {
    pub rows: u32,
    pub cols: u32,
    pub row: Key,
    pub col: Key,
}

impl Spatial {
    /// The cores of a class the grid covers (`rows × cols`).
    pub fn cores(&self) -> u64 {
        u64::from(self.rows) * u64::from(self.cols)
    }

    /// The core of a task: `(row mod rows) * cols + (col mod cols)`, from its axis coordinates.
    pub fn core(&self, axes: &[(AxisId, i64)]) -> Result<u64, String> {
        let r = self.row.eval(axes)?.rem_euclid(i64::from(self.rows)) as u64;
        let c = self.col.eval(axes)?.rem_euclid(i64::from(self.cols)) as u64;
        Ok(r * u64::from(self.cols) + c)
    }
}

/// `.layout(T, shard(dim: d, parts: n))`: a tensor split into equal shards along a dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub tensor: TensorId,
    pub dim: u32,
    pub parts: u32,
}

/// A schedule resolved: the policy forms to apply in order (`("round_robin", [4])`,
/// `("task_window", [64])`), its keys, and its placements (`.spatial_map`, the `.layout`s,
/// the last per tensor).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resolved {
    pub forms: Vec<(&'static str, Vec<u32>)>,
    pub keys: Keys,
    pub spatial: Option<Spatial>,
    pub shards: Vec<Shard>,
}

/// Resolves a schedule (`None`: no schedule, the defaults). The last directive of a name
/// applies (W0601), its key with it; streams need a key to say which stream a task is on
/// (`.stream_by(expr)`, else the dispatch key), and `.stream_by` needs `.streams(n)`.
pub fn resolve(p: &Program, s: Option<&Schedule>) -> Result<Resolved, String> {
    let mut r = Resolved::default();
    let Some(s) = s else {
        return Ok(r);
    };
    let mut streams: Option<u32> = None;
    // The dispatch a directive sets (a placement cannot be combined with one).
    let mut dispatch: Option<Policy> = None;
    for d in &s.directives {
        match d {
            Directive::Target { .. } => {}
            Directive::SpatialMap {
                rows,
                cols,
                row,
                col,
            } => {
                if *rows == 0 || *cols == 0 {
                    return Err(format!(
                        "schedule `{}`: `.spatial_map` needs a grid of at least 1 × 1, found {rows} × {cols}",
                        s.name
                    ));
                }
                r.spatial = Some(Spatial {
                    rows: *rows,
                    cols: *cols,
                    row: key_of(p, row)?,
                    col: key_of(p, col)?,
                });
            }
            Directive::Layout { tensor, dim, parts } => {
                let t = p
                    .tensors
                    .get(tensor.index())
                    .ok_or_else(|| format!("`.layout` of unknown tensor #{}", tensor.0))?;
                if *parts == 0 {
                    return Err(format!(
                        "schedule `{}`: `.layout({}, ...)` needs at least one shard",
                        s.name, t.name
                    ));
                }
                r.shards.retain(|x| x.tensor != *tensor);
                r.shards.push(Shard {
                    tensor: *tensor,
                    dim: *dim,
                    parts: *parts,
                });
            }
            Directive::TaskWindow { size: value, .. } | Directive::Streams { count: value } => {
                let name = d.kind().name();
                let n = u32::try_from(*value)
                    .map_err(|_| format!("`{name}({value})` is out of range"))?;
                if matches!(d, Directive::Streams { .. }) {
                    streams = Some(n);
                }
                match d {
                    // A mode other than stall is the form's second argument.
                    Directive::TaskWindow { mode, .. } if *mode != WindowMode::Stall => {
                        r.forms.push((name, vec![n, mode.code()]))
                    }
                    _ => r.forms.push((name, vec![n])),
                }
            }
            Directive::StreamBy { key } => r.keys.stream = Some(key_of(p, key)?),
            // Sizes as `task_graph(tensormap, deplist, ready, heap low, heap high)`, 0: unset.
            Directive::TaskGraph {
                tensormap,
                deplist,
                ready,
                heap,
            } => r.forms.push((
                "task_graph",
                wsp_vocab::schedule::task_graph_form(*tensormap, *deplist, *ready, *heap),
            )),
            Directive::Policy { policy, args } => {
                match policy.directive() {
                    VocabDirective::Dispatch => {
                        r.keys.dispatch = None;
                        dispatch = Some(*policy);
                    }
                    VocabDirective::Ready => r.keys.priority = None,
                    _ => {}
                }
                let form = policy.name();
                match policy.arg() {
                    PolicyArg::Axis | PolicyArg::Key => {
                        let v = args
                            .first()
                            .ok_or_else(|| format!("`{form}(...)` needs a key expression"))?;
                        r.forms.push((form, Vec::new()));
                        let k = Some(key_of(p, v)?);
                        match policy {
                            Policy::Priority => r.keys.priority = k,
                            _ => r.keys.dispatch = k,
                        }
                    }
                    PolicyArg::Count | PolicyArg::None => {
                        r.forms.push((form, int_args(p, form, args)?))
                    }
                }
            }
        }
    }
    // A spatial map places every task: a dispatch policy beside it would never apply.
    if let (Some(_), Some(policy)) = (&r.spatial, dispatch) {
        return Err(format!(
            "schedule `{}`: `.spatial_map(...)` places every task on a core, so it cannot be combined with `.dispatch({})`",
            s.name,
            policy.written()
        ));
    }
    // Streams need a key to say which stream a task is on, and a key picks one only among
    // streams: neither is left to mean something silently.
    let stream_by = r.keys.stream.is_some();
    if r.keys.stream.is_none() {
        r.keys.stream.clone_from(&r.keys.dispatch);
    }
    match (streams, &r.keys.stream) {
        (Some(n), None) if n > 1 => {
            return Err(format!(
                "schedule `{}`: `.streams({n})` needs `.stream_by(expr)` (or a dispatch key) to say which stream a task is on; without one every task would be on one stream",
                s.name
            ))
        }
        (None, _) if stream_by => {
            return Err(format!(
                "schedule `{}`: `.stream_by(...)` needs `.streams(n)`, the number of streams its key picks among",
                s.name
            ))
        }
        _ => {}
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::WorkloadId;

    fn schedule(directives: Vec<Directive>) -> Schedule {
        Schedule {
            name: "s".into(),
            workload: WorkloadId(0),
            directives,
        }
    }

    #[test]
    fn forms_in_order_and_the_last_target_applies() {
        let p = Program::new();
        let s = schedule(vec![
            Directive::Target {
                arch: "ascend950".into(),
            },
            Directive::Policy {
                policy: Policy::RoundRobin,
                args: vec![DirValue::Int { value: 4 }],
            },
            Directive::TaskWindow {
                size: 64,
                mode: Default::default(),
            },
            Directive::Target {
                arch: "ascend910b".into(),
            },
        ]);
        assert_eq!(s.target(), Some("ascend910b"));
        let r = resolve(&p, Some(&s)).expect("resolves");
        assert_eq!(
            r.forms,
            vec![("round_robin", vec![4]), ("task_window", vec![64])]
        );
        assert_eq!(r.keys, Keys::default());
        assert_eq!(resolve(&p, None).expect("defaults"), Resolved::default());
    }

    #[test]
    fn placements_resolve_and_a_spatial_map_takes_no_dispatch() {
        let mut p = Program::new();
        for name in ["A", "B"] {
            p.tensors.push(crate::workload::TensorDecl {
                name: name.into(),
                kind: crate::workload::TensorKind::Input,
                dtype: crate::dtype::DType::F32,
                shape: vec![],
                init: None,
                at: None,
            });
        }
        let map = Directive::SpatialMap {
            rows: 2,
            cols: 3,
            row: DirValue::Int { value: 5 },
            col: DirValue::Int { value: -1 },
        };
        let layout = |t: u32, parts: u32| Directive::Layout {
            tensor: TensorId(t),
            dim: 0,
            parts,
        };
        let r = resolve(
            &p,
            Some(&schedule(vec![
                map.clone(),
                layout(0, 2),
                layout(1, 4),
                layout(0, 8),
            ])),
        )
        .expect("resolves");
        let sp = r.spatial.expect("a spatial map");
        // Row 5 mod 2 = 1, column -1 mod 3 = 2 (Euclidean): core 1 * 3 + 2.
        assert_eq!((sp.cores(), sp.core(&[]).expect("keys")), (6, 5));
        // The last layout of a tensor applies.
        assert_eq!(
            r.shards
                .iter()
                .map(|s| (s.tensor.0, s.parts))
                .collect::<Vec<_>>(),
            [(1, 4), (0, 8)]
        );
        let both = resolve(
            &p,
            Some(&schedule(vec![
                map,
                Directive::Policy {
                    policy: Policy::WorkSteal,
                    args: vec![],
                },
            ])),
        );
        assert!(both
            .unwrap_err()
            .contains("cannot be combined with `.dispatch(work_steal)`"));
        let none = resolve(&p, Some(&schedule(vec![layout(0, 0)])));
        assert!(none.unwrap_err().contains("at least one shard"));
    }

    #[test]
    fn streams_and_their_key_go_together() {
        let p = Program::new();
        let streams = resolve(&p, Some(&schedule(vec![Directive::Streams { count: 4 }])));
        assert!(streams.unwrap_err().contains("needs `.stream_by(expr)`"));
        let by = resolve(
            &p,
            Some(&schedule(vec![Directive::StreamBy {
                key: DirValue::Int { value: 1 },
            }])),
        );
        assert!(by.unwrap_err().contains("needs `.streams(n)`"));
        let both = resolve(
            &p,
            Some(&schedule(vec![
                Directive::Streams { count: 4 },
                Directive::StreamBy {
                    key: DirValue::Int { value: 3 },
                },
            ])),
        )
        .expect("resolves");
        assert_eq!(both.keys.stream, Some(Key::Int(3)));
        let bad = resolve(
            &p,
            Some(&schedule(vec![Directive::TaskWindow {
                size: -1,
                mode: Default::default(),
            }])),
        );
        assert!(bad.unwrap_err().contains("out of range"));
    }
}
