//! Loops: a `for`'s static checks, direct loops (counted level by level) and materialised
//! loops (tuples generated first), iterations, ranges, and the rows of Ragged and Sparse axes.

use super::{mf, Gen, BEGIN_PAR, BEGIN_SEQ, END, R, STEP};
use crate::orch::Fail;
use cranelift::prelude::*;
use wsp_ir::exec::{counted_loop, iter_reads, MAX_LOOP_ITERATIONS};
use wsp_ir::workload::*;

impl Gen<'_, '_> {
    fn axis(&self, a: AxisId) -> R<&Axis> {
        self.f
            .p
            .axes
            .get(a.index())
            .ok_or_else(|| format!("axis #{} does not exist", a.0))
    }

    pub(super) fn for_(
        &mut self,
        kind: LoopKind,
        vars: &[LoopVar],
        iters: &[Iter],
        body: &[WStmt],
    ) -> R<()> {
        // Static shape: as many variables as the iterators bind, each once, all existing.
        let mut binds = Vec::new();
        for it in iters {
            match it {
                Iter::Axis { axis } => match self.axis(*axis)?.kind {
                    AxisKind::Ragged { outer, .. } | AxisKind::Sparse { outer, .. } => {
                        binds.push(Some(outer));
                        binds.push(Some(*axis));
                    }
                    _ => binds.push(Some(*axis)),
                },
                Iter::Row { axis, .. } => {
                    self.axis(*axis)?;
                    binds.push(Some(*axis));
                }
                Iter::Range { .. } => binds.push(None),
            }
        }
        if binds.len() != vars.len() {
            return Err(format!(
                "a loop binds {} variables but its iterators give {}",
                vars.len(),
                binds.len()
            ));
        }
        for (i, v) in vars.iter().enumerate() {
            if v.index() >= self.nvars() || vars[..i].contains(v) {
                return Err(format!(
                    "a loop binds variable #{} twice or not at all",
                    v.0
                ));
            }
        }
        let mut reads = Vec::new();
        for it in iters {
            iter_reads(self.f.p, it, &mut reads);
        }
        self.sync(&reads);
        // The variables' axes before the loop, restored when it ends: a task after the loop
        // is not inside it (its schedule key cannot read the loop's last values).
        let outer_axes = self.alloc(vars.len().max(1));
        for (i, (v, a)) in vars.iter().zip(&binds).enumerate() {
            let s = self.axis_slot(v.index());
            let old = self.ld(s);
            self.st(outer_axes + i, old);
            self.stc(s, a.map(|a| i64::from(a.0)).unwrap_or(-1));
        }
        let nv = vars.len();
        // Iterators whose bounds read no tensor data (Dense and DenseDyn axes, ranges) run as
        // nested counted loops around the body: the same tuples in the same order as the
        // materialised form below, with memory that does not grow with the iteration space.
        if counted_loop(self.f.p, iters, &reads) {
            if !self.process {
                self.order(if kind == LoopKind::Sequential {
                    BEGIN_SEQ
                } else {
                    BEGIN_PAR
                });
            }
            let at = Direct {
                tup: self.alloc(nv.max(1)),
                count: self.alloc(1),
            };
            self.stc(at.count, 0);
            let outer_gen = self.gen.replace((vars.to_vec(), at.tup, 0));
            let r = self.nest(iters, 0, at, body, &outer_gen);
            self.gen = outer_gen;
            r?;
        } else {
            self.materialised(kind, vars, iters, body)?;
        }
        for (i, v) in vars.iter().enumerate() {
            let old = self.ld(outer_axes + i);
            self.st(self.axis_slot(v.index()), old);
        }
        if !self.process {
            self.order(END);
        }
        Ok(())
    }

    /// Level `k` of a direct loop (see `for_`): binds position `pos` of the tuple, and at the
    /// last level runs one iteration of `body`.
    fn nest(
        &mut self,
        iters: &[Iter],
        k: usize,
        at: Direct,
        body: &[WStmt],
        outer_gen: &Option<(Vec<LoopVar>, usize, usize)>,
    ) -> R<()> {
        let Direct { tup, count } = at;
        let pos = self.gen.as_ref().map(|g| g.2).unwrap_or(0);
        let Some(it) = iters.get(k) else {
            let Some((vars, ..)) = self.gen.clone() else {
                return Err("a loop level outside its loop".into());
            };
            // The interpreter's bound on one loop's iterations.
            let n = self.ld(count);
            let over = self.b.ins().icmp_imm_s(
                IntCC::SignedGreaterThanOrEqual,
                n,
                MAX_LOOP_ITERATIONS as i64,
            );
            let msg = format!("a loop has more than {MAX_LOOP_ITERATIONS} iterations");
            self.fail_if(over, Fail::InThread(msg), n, n);
            let n1 = self.b.ins().iadd_imm_s(n, 1);
            self.st(count, n1);
            let values: Vec<Value> = (0..vars.len()).map(|i| self.ld(tup + i)).collect();
            let first = self.b.ins().icmp_imm_s(IntCC::Equal, n, 0);
            // The body resolves variables as the enclosing code does.
            let gen = std::mem::replace(&mut self.gen, outer_gen.clone());
            let r = self.iteration(&vars, &values, first, body);
            self.gen = gen;
            return r;
        };
        let (start, end) = match it {
            Iter::Range { start, end } => {
                let s = self.int(start, "a range start")?;
                let e = self.int(end, "a range end")?;
                self.range_ok(s, e);
                (s, e)
            }
            Iter::Axis { axis } => (self.c(0), self.flat(*axis)?),
            Iter::Row { .. } => return Err("a row iterator in a direct loop".into()),
        };
        self.counted(start, end, &mut |g, i| {
            g.bind_gen(tup, pos, i);
            g.set_filled(pos + 1);
            let r = g.nest(iters, k + 1, at, body, outer_gen);
            g.set_filled(pos);
            r
        })
    }

    /// A loop whose iterators read tensor data (or iterate rows): every tuple is generated
    /// first, then the body runs once per tuple.
    fn materialised(
        &mut self,
        kind: LoopKind,
        vars: &[LoopVar],
        iters: &[Iter],
        body: &[WStmt],
    ) -> R<()> {
        // Materialise the tuples.
        let nv = vars.len();
        let tbuf = self.nbufs as i64;
        self.nbufs += 1;
        let tup = self.alloc(nv.max(1));
        let t = self.c(tbuf);
        self.checked(self.cb.clear, &[t]);
        let outer_gen = self.gen.replace((vars.to_vec(), tup, 0));
        let r = self.level(iters, 0, tbuf, tup, nv);
        self.gen = outer_gen;
        r?;
        let ls = self.alloc(3); // data pointer, tuple count, next
        let t = self.c(tbuf);
        let lenp = self.slot_addr(ls + 1);
        let ptr = self.call(self.cb.data, &[self.ctx, t, lenp]);
        self.st(ls, ptr);
        if nv > 0 {
            let len = self.ld(ls + 1);
            let cnt = self.b.ins().udiv_imm_u(len, nv as i64);
            self.st(ls + 1, cnt);
        }
        self.stc(ls + 2, 0);
        if !self.process {
            self.order(if kind == LoopKind::Sequential {
                BEGIN_SEQ
            } else {
                BEGIN_PAR
            });
        }
        let head = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let next = self.ld(ls + 2);
        let cnt = self.ld(ls + 1);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, next, cnt);
        let go = self.b.create_block();
        self.b.ins().brif(more, go, &[], exit, &[]);
        self.b.switch_to_block(go);
        let ptr = self.ld(ls);
        let off = self.b.ins().imul_imm_s(next, (nv * 8) as i64);
        let row = self.b.ins().iadd(ptr, off);
        let values: Vec<Value> = (0..nv)
            .map(|i| self.b.ins().load(types::I64, mf(), row, (i * 8) as i32))
            .collect();
        let n1 = self.b.ins().iadd_imm_s(next, 1);
        self.st(ls + 2, n1);
        let first = self.b.ins().icmp_imm_s(IntCC::Equal, next, 0);
        self.iteration(vars, &values, first, body)?;
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// One iteration of a loop: `values` into its variables (bound for the body), the order
    /// events (a step between iterations; `first` is nonzero on the first), the body.
    fn iteration(
        &mut self,
        vars: &[LoopVar],
        values: &[Value],
        first: Value,
        body: &[WStmt],
    ) -> R<()> {
        let saved = self.bound.clone();
        for (v, &x) in vars.iter().zip(values) {
            let (vs, fs) = (self.val_slot(v.index()), self.flag_slot(v.index()));
            self.st(vs, x);
            self.stc(fs, 1);
            self.bound[v.index()] = true;
        }
        if !self.process {
            let step = self.b.create_block();
            let cont = self.b.create_block();
            self.b.ins().brif(first, cont, &[], step, &[]);
            self.b.switch_to_block(step);
            self.order(STEP);
            self.b.ins().jump(cont, &[]);
            self.b.switch_to_block(cont);
            self.order(BEGIN_PAR);
        }
        self.block(body)?;
        if !self.process {
            self.order(END);
        }
        self.bound = saved;
        Ok(())
    }

    fn set_filled(&mut self, n: usize) {
        if let Some(x) = self.gen.as_mut() {
            x.2 = n;
        }
    }

    /// Fails the run when the range `[s, e)` overflows or has more than
    /// `MAX_LOOP_ITERATIONS` iterations.
    fn range_ok(&mut self, s: Value, e: Value) {
        let (d, of) = self.b.ins().ssub_overflow(e, s);
        let gt = self.b.ins().icmp(IntCC::SignedGreaterThan, e, s);
        let big = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThan, d, MAX_LOOP_ITERATIONS as i64);
        let bad = self.b.ins().select(of, gt, big);
        self.fail_if(bad, Fail::RangeTooLong, s, e);
    }

    /// Binds position `pos` of the tuple being generated.
    fn bind_gen(&mut self, tup: usize, pos: usize, v: Value) {
        self.st(tup + pos, v);
    }

    /// A counted loop `for i in [start, end)` whose body `f` sees `i` in `ctr`.
    fn counted(
        &mut self,
        start: Value,
        end: Value,
        f: &mut dyn FnMut(&mut Self, Value) -> R<()>,
    ) -> R<()> {
        let s = self.alloc(2);
        self.st(s, start);
        self.st(s + 1, end);
        let head = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let i = self.ld(s);
        let e = self.ld(s + 1);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, i, e);
        let go = self.b.create_block();
        self.b.ins().brif(more, go, &[], exit, &[]);
        self.b.switch_to_block(go);
        f(self, i)?;
        let i = self.ld(s);
        let i1 = self.b.ins().iadd_imm_s(i, 1);
        self.st(s, i1);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// The size of a Dense/DenseDyn axis (errors as the interpreter's `flat`).
    fn flat(&mut self, a: AxisId) -> R<Value> {
        let ax = self.axis(a)?.clone();
        Ok(match &ax.kind {
            AxisKind::Dense { size } => self.c(i64::try_from(*size).unwrap_or(i64::MAX)),
            AxisKind::DenseDyn { size } => {
                let n = self.int(size, "an axis size")?;
                let neg = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, n, 0);
                let z = self.c(0);
                self.fail_if(neg, Fail::NegSize(ax.name.clone(), ax.at.clone()), n, z);
                n
            }
            _ => {
                self.fail0(Fail::Plain(format!(
                    "axis `{}` is nested; iterate it with its row (`{}[b]`) or as a whole",
                    ax.name, ax.name
                )));
                self.c(0)
            }
        })
    }

    /// Generates iterator `k` and the ones after it, pushing complete tuples to `tbuf`.
    fn level(&mut self, iters: &[Iter], k: usize, tbuf: i64, tup: usize, nv: usize) -> R<()> {
        let Some(it) = iters.get(k) else {
            let t = self.c(tbuf);
            let ptr = self.slot_addr(tup);
            let n = self.c(nv as i64);
            self.checked(self.cb.tuple, &[t, ptr, n]);
            return Ok(());
        };
        let pos = self.gen.as_ref().map(|g| g.2).unwrap_or(0);
        match it {
            Iter::Range { start, end } => {
                let s = self.int(start, "a range start")?;
                let e = self.int(end, "a range end")?;
                self.range_ok(s, e);
                self.counted(s, e, &mut |g, i| {
                    g.bind_gen(tup, pos, i);
                    g.set_filled(pos + 1);
                    let r = g.level(iters, k + 1, tbuf, tup, nv);
                    g.set_filled(pos);
                    r
                })?;
            }
            Iter::Row { axis, row } => {
                let b = self.affine(row)?;
                self.row(*axis, b, &mut |g, i| {
                    g.bind_gen(tup, pos, i);
                    g.set_filled(pos + 1);
                    let r = g.level(iters, k + 1, tbuf, tup, nv);
                    g.set_filled(pos);
                    r
                })?;
            }
            Iter::Axis { axis } => {
                let ax = self.axis(*axis)?.clone();
                match ax.kind {
                    AxisKind::Dense { .. } | AxisKind::DenseDyn { .. } => {
                        let n = self.flat(*axis)?;
                        let z = self.c(0);
                        self.counted(z, n, &mut |g, i| {
                            g.bind_gen(tup, pos, i);
                            g.set_filled(pos + 1);
                            let r = g.level(iters, k + 1, tbuf, tup, nv);
                            g.set_filled(pos);
                            r
                        })?;
                    }
                    AxisKind::Ragged { outer, .. } | AxisKind::Sparse { outer, .. } => {
                        // The whole domain first (every row's data read and checked), then
                        // the iteration, as the interpreter does.
                        let dbuf = self.nbufs as i64;
                        self.nbufs += 1;
                        let d = self.c(dbuf);
                        self.checked(self.cb.clear, &[d]);
                        let pair = self.alloc(2);
                        let n = self.flat(outer)?;
                        let z = self.c(0);
                        let axis = *axis;
                        self.counted(z, n, &mut |g, b| {
                            let bslot = g.alloc(1);
                            g.st(bslot, b);
                            g.row(axis, b, &mut |g, i| {
                                let b = g.ld(bslot);
                                g.st(pair, b);
                                g.st(pair + 1, i);
                                let d = g.c(dbuf);
                                let p = g.slot_addr(pair);
                                let two = g.c(2);
                                g.checked(g.cb.push, &[d, p, two]);
                                Ok(())
                            })
                        })?;
                        let ds = self.alloc(3);
                        let d = self.c(dbuf);
                        let lenp = self.slot_addr(ds + 1);
                        let ptr = self.call(self.cb.data, &[self.ctx, d, lenp]);
                        self.st(ds, ptr);
                        let z = self.c(0);
                        let len = self.ld(ds + 1);
                        let cnt = self.b.ins().ushr_imm_s(len, 1);
                        self.counted(z, cnt, &mut |g, j| {
                            let ptr = g.ld(ds);
                            let off = g.b.ins().imul_imm_s(j, 16);
                            let at = g.b.ins().iadd(ptr, off);
                            let b = g.b.ins().load(types::I64, mf(), at, 0);
                            let i = g.b.ins().load(types::I64, mf(), at, 8);
                            g.bind_gen(tup, pos, b);
                            g.bind_gen(tup, pos + 1, i);
                            g.set_filled(pos + 2);
                            let r = g.level(iters, k + 1, tbuf, tup, nv);
                            g.set_filled(pos);
                            r
                        })?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Calls `f` on each element of row `b` of a Ragged/Sparse axis (the row's data is read
    /// and checked whole before the first call, as the interpreter's `row`).
    fn row(&mut self, a: AxisId, b: Value, f: &mut dyn FnMut(&mut Self, Value) -> R<()>) -> R<()> {
        let ax = self.axis(a)?.clone();
        let av = self.c(i64::from(a.0));
        match ax.kind {
            AxisKind::Ragged { .. } => {
                let out = self.alloc(1);
                let op = self.slot_addr(out);
                self.checked(self.cb.ragged, &[av, b, op]);
                let n = self.ld(out);
                let z = self.c(0);
                self.counted(z, n, f)
            }
            AxisKind::Sparse { .. } => {
                let span = self.alloc(2);
                let sp = self.slot_addr(span);
                self.checked(self.cb.span, &[av, b, sp]);
                let dbuf = self.nbufs as i64;
                self.nbufs += 1;
                let d = self.c(dbuf);
                self.checked(self.cb.clear, &[d]);
                let (s, e) = (self.ld(span), self.ld(span + 1));
                let col = self.alloc(1);
                self.counted(s, e, &mut |g, i| {
                    let av = g.c(i64::from(a.0));
                    let cp = g.slot_addr(col);
                    g.checked(g.cb.col, &[av, i, cp]);
                    let d = g.c(dbuf);
                    let one = g.c(1);
                    g.checked(g.cb.push, &[d, cp, one]);
                    Ok(())
                })?;
                let ds = self.alloc(2);
                let d = self.c(dbuf);
                let lenp = self.slot_addr(ds + 1);
                let ptr = self.call(self.cb.data, &[self.ctx, d, lenp]);
                self.st(ds, ptr);
                let z = self.c(0);
                let n = self.ld(ds + 1);
                self.counted(z, n, &mut |g, j| {
                    let ptr = g.ld(ds);
                    let off = g.b.ins().imul_imm_s(j, 8);
                    let at = g.b.ins().iadd(ptr, off);
                    let c = g.b.ins().load(types::I64, mf(), at, 0);
                    f(g, c)
                })
            }
            _ => {
                self.fail0(Fail::Plain(format!(
                    "axis `{}` is not Ragged or Sparse; it has no rows",
                    ax.name
                )));
                Ok(())
            }
        }
    }
}

/// The slots of a direct loop: the tuple being generated and the iterations so far.
#[derive(Clone, Copy)]
struct Direct {
    tup: usize,
    count: usize,
}
