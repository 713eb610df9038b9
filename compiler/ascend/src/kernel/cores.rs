//! Which core runs what in a kernel with pipes.
//!
//! On Ascend a kernel pipe connects the cube core (AIC) to the vector core (AIV) of a cluster,
//! or the other way round, through a ring of slots in global memory; the two sections run at
//! the same time, each on its own core. So a kernel with pipes is emitted as two functions: the
//! cube sections in program order, and the vector sections; `let` bindings outside the
//! sections (loads of parameters, constants) are computed on both cores. That is only the
//! kernel's meaning when the cores share nothing but the pipes, which [`split`] checks: every
//! pipe has its producer (`talloc`/`tpush`) on one core and its consumer (`tpop`/`tfree`) on
//! the other, no value or variable crosses between the sections, and no parameter is written
//! on one core and read or written on the other.

use std::collections::{BTreeSet, HashMap};

use wsp_ir::kernel::*;

/// Where a statement runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Core {
    /// Outside the sections: on both cores.
    Both,
    Cube,
    Vector,
}

impl Core {
    fn of(k: SectionKind) -> Core {
        match k {
            SectionKind::Cube => Core::Cube,
            SectionKind::Vector => Core::Vector,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Core::Both => "outside the sections",
            Core::Cube => "cube",
            Core::Vector => "vector",
        }
    }
}

/// A pipe's direction: the core that produces into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipeRoute {
    pub producer: Core,
    pub consumer: Core,
}

impl PipeRoute {
    /// PTO-ISA's direction name.
    pub fn direction(&self) -> &'static str {
        if self.producer == Core::Cube {
            "DIR_C2V"
        } else {
            "DIR_V2C"
        }
    }
}

/// The two cores' statements of a kernel with pipes.
pub struct Split<'k> {
    /// Statements outside the sections (`let` bindings only), run on both cores.
    pub shared: Vec<&'k Stmt>,
    pub cube: Vec<&'k Stmt>,
    pub vector: Vec<&'k Stmt>,
    /// Per pipe: its route, or `None` for a pipe no statement uses.
    pub routes: Vec<Option<PipeRoute>>,
}

#[derive(Default)]
struct Uses {
    /// Where each value is defined.
    defs: HashMap<ValueId, Core>,
    /// Every read of a value, with where it happens.
    reads: Vec<(ValueId, Core)>,
    vars: HashMap<VarId, BTreeSet<Core>>,
    param_reads: HashMap<ParamId, BTreeSet<Core>>,
    param_writes: HashMap<ParamId, BTreeSet<Core>>,
    producers: HashMap<PipeId, BTreeSet<Core>>,
    consumers: HashMap<PipeId, BTreeSet<Core>>,
}

impl Uses {
    fn block(&mut self, stmts: &[Stmt], at: Core) {
        for s in stmts {
            self.stmt(s, at);
        }
    }

    fn region(&mut self, r: Option<&Region>, at: Core) {
        if let Some(r) = r {
            for (v, _) in r.row_start.terms.iter().chain(&r.col_start.terms) {
                self.reads.push((*v, at));
            }
        }
    }

    fn stmt(&mut self, s: &Stmt, at: Core) {
        match s {
            Stmt::Op { results, op } => {
                for v in wsp_ir::typing::operands(op) {
                    self.reads.push((v, at));
                }
                match op {
                    Op::Param { param } => {
                        self.param_reads.entry(*param).or_default().insert(at);
                    }
                    Op::VarRead { var } => {
                        self.vars.entry(*var).or_default().insert(at);
                    }
                    Op::TPop { pipe } => {
                        self.consumers.entry(*pipe).or_default().insert(at);
                    }
                    _ => {}
                }
                for r in results {
                    self.defs.insert(*r, at);
                }
            }
            Stmt::Store {
                param,
                region,
                value,
            } => {
                self.reads.push((*value, at));
                self.region(region.as_ref(), at);
                self.param_writes.entry(*param).or_default().insert(at);
            }
            Stmt::Assign { var, region, value } => {
                self.reads.push((*value, at));
                self.region(region.as_ref(), at);
                self.vars.entry(*var).or_default().insert(at);
            }
            Stmt::For { index, body, .. } => {
                self.defs.insert(*index, at);
                self.block(body, at);
            }
            Stmt::Section { kind, body } => self.block(body, Core::of(*kind)),
            Stmt::TAlloc { pipe, slot } | Stmt::TPush { pipe, slot } => {
                self.producers.entry(*pipe).or_default().insert(at);
                self.vars.entry(*slot).or_default().insert(at);
            }
            Stmt::TFree { pipe, value } => {
                self.reads.push((*value, at));
                self.consumers.entry(*pipe).or_default().insert(at);
            }
        }
    }
}

fn describe(s: &Stmt) -> &'static str {
    match s {
        Stmt::Op { .. } => "a `let` binding",
        Stmt::Store { .. } => "a write of a parameter",
        Stmt::Assign { .. } => "an assignment",
        Stmt::For { .. } => "a `for` loop",
        Stmt::Section { .. } => "a section",
        Stmt::TAlloc { .. } => "`talloc`",
        Stmt::TPush { .. } => "`tpush`",
        Stmt::TFree { .. } => "`tfree`",
    }
}

fn one(set: Option<&BTreeSet<Core>>) -> Result<Option<Core>, Vec<Core>> {
    match set {
        None => Ok(None),
        Some(s) if s.len() == 1 => Ok(s.iter().next().copied()),
        Some(s) => Err(s.iter().copied().collect()),
    }
}

/// Splits the body of a kernel with pipes between the cube and the vector core, or says why
/// the kernel's meaning needs the sections to share more than their pipes.
pub fn split<'k>(k: &'k Kernel, body: &'k [Stmt]) -> Result<Split<'k>, String> {
    let mut split = Split {
        shared: Vec::new(),
        cube: Vec::new(),
        vector: Vec::new(),
        routes: vec![None; k.pipes.len()],
    };
    for s in body {
        match s {
            Stmt::Section {
                kind: SectionKind::Cube,
                ..
            } => split.cube.push(s),
            Stmt::Section {
                kind: SectionKind::Vector,
                ..
            } => split.vector.push(s),
            Stmt::Op {
                op: Op::TPop { .. },
                ..
            } => {
                return Err(
                    "its `tpop` is outside the `cube` and `vector` sections, so no core \
                            runs it"
                        .into(),
                )
            }
            Stmt::Op { .. } => split.shared.push(s),
            other => {
                return Err(format!(
                    "it has pipes, so its `cube` and `vector` sections run on two cores, and {} \
                     outside them belongs to neither",
                    describe(other)
                ))
            }
        }
    }
    let mut u = Uses::default();
    u.block(body, Core::Both);

    let pipe_name = |p: PipeId| {
        k.pipes
            .get(p.index())
            .map(|p| p.name.as_str())
            .unwrap_or("?")
    };
    for (i, route) in split.routes.iter_mut().enumerate() {
        let p = PipeId(i as u32);
        let name = pipe_name(p);
        let both = |what: &str, cores: Vec<Core>| {
            format!(
                "pipe `{name}` is {what} in {}; an Ascend pipe has one producing and one \
                 consuming core",
                cores
                    .iter()
                    .map(|c| format!("`{}`", c.name()))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        };
        let prod = one(u.producers.get(&p)).map_err(|c| both("written", c))?;
        let cons = one(u.consumers.get(&p)).map_err(|c| both("read", c))?;
        let other = |c: Core| match c {
            Core::Cube => Core::Vector,
            _ => Core::Cube,
        };
        *route = match (prod, cons) {
            (None, None) => None,
            (Some(Core::Both), _) | (_, Some(Core::Both)) => {
                return Err(format!(
                    "pipe `{name}` is used outside the `cube` and `vector` sections"
                ))
            }
            (Some(a), Some(b)) if a == b => {
                return Err(format!(
                    "pipe `{name}` is written and read in the `{}` section; an Ascend pipe \
                     connects the cube core to the vector core",
                    a.name()
                ))
            }
            (Some(a), Some(b)) => Some(PipeRoute {
                producer: a,
                consumer: b,
            }),
            (Some(a), None) => Some(PipeRoute {
                producer: a,
                consumer: other(a),
            }),
            (None, Some(b)) => Some(PipeRoute {
                producer: other(b),
                consumer: b,
            }),
        };
    }

    for (v, at) in &u.reads {
        if let Some(d) = u.defs.get(v) {
            if *d != *at && *d != Core::Both {
                return Err(format!(
                    "a value computed in the `{}` section is read {}; the sections run on two \
                     cores and share only their pipes",
                    d.name(),
                    if *at == Core::Both {
                        "outside the sections".to_string()
                    } else {
                        format!("in the `{}` section", at.name())
                    }
                ));
            }
        }
    }
    for (var, cores) in &u.vars {
        if cores.len() > 1 || cores.contains(&Core::Both) {
            let name = k
                .vars
                .get(var.index())
                .map(|v| v.name.as_str())
                .unwrap_or("?");
            return Err(format!(
                "variable `{name}` is used {}; the sections run on two cores and share only \
                 their pipes",
                cores
                    .iter()
                    .map(|c| match c {
                        Core::Both => "outside the sections".to_string(),
                        c => format!("in the `{}` section", c.name()),
                    })
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
    }
    for (p, writers) in &u.param_writes {
        let readers = u.param_reads.get(p).cloned().unwrap_or_default();
        let all: BTreeSet<Core> = writers.union(&readers).copied().collect();
        if all.len() > 1 {
            let name = k
                .params
                .get(p.index())
                .map(|p| p.name.as_str())
                .unwrap_or("?");
            return Err(format!(
                "parameter `{name}` is written on one core and used on the other; the sections \
                 run at the same time, so the order of those accesses is not defined"
            ));
        }
    }
    Ok(split)
}
