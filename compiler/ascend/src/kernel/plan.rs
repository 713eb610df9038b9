//! Where tiles live: the storage shape of a tile in each location (padded to the
//! architecture's alignment rules) and a liveness-based allocation of the unified buffer.

use std::collections::HashMap;
use wsp_ir::kernel::{Op, Stmt, TileType, ValueId};
use wsp_ir::DType;

/// A tile location (PTO-ISA `TileType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Loc {
    /// Unified buffer (vector unit).
    Vec,
    /// L1 (cube unit's staging buffer).
    Mat,
    /// L0A: the left matmul operand.
    Left,
    /// L0B: the right matmul operand.
    Right,
    /// L0C: the matmul accumulator.
    Acc,
}

impl Loc {
    pub fn buffer(self) -> &'static str {
        match self {
            Loc::Vec => "UB",
            Loc::Mat => "L1",
            Loc::Left => "L0A",
            Loc::Right => "L0B",
            Loc::Acc => "L0C",
        }
    }

    /// Alignment of a tile's start address in bytes.
    pub fn align(self) -> u64 {
        match self {
            Loc::Vec | Loc::Mat => 32,
            Loc::Left | Loc::Right | Loc::Acc => 512,
        }
    }
}

/// How a tile is stored: its location, element type and padded static shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Storage {
    pub loc: Loc,
    pub dtype: DType,
    pub rows: u32,
    pub cols: u32,
}

fn round_up(x: u32, m: u32) -> u32 {
    x.div_ceil(m) * m
}

impl Storage {
    /// The storage of a logical tile in `loc`. Vector tiles are row-major with rows padded to
    /// 32-byte blocks (a one-column tile too: PTO-ISA's row reductions write row-major `[R, 1]`
    /// results and its tile-scalar ops take row-major tiles only); cube tiles are padded to
    /// 16 x 16 fractals.
    pub fn of(loc: Loc, t: TileType) -> Storage {
        let es = t.dtype.size_bytes() as u32;
        let block = (32 / es).max(1);
        let (rows, cols) = match loc {
            Loc::Vec => (t.rows(), round_up(t.cols(), block)),
            _ => (round_up(t.rows(), 16), round_up(t.cols(), 16)),
        };
        Storage {
            loc,
            dtype: t.dtype,
            rows,
            cols,
        }
    }

    pub fn bytes(&self) -> u64 {
        u64::from(self.rows) * u64::from(self.cols) * self.dtype.size_bytes() as u64
    }

    /// Bytes rounded up to the location's alignment.
    pub fn footprint(&self) -> u64 {
        self.bytes().div_ceil(self.loc.align()) * self.loc.align()
    }

    /// The element offset of `(r, c)` in a vector tile as a C++ expression.
    pub fn offset_expr(&self, r: &str, c: &str) -> String {
        format!("({r}) * {} + ({c})", self.cols)
    }
}

/// Live ranges `[def, last use]` of tile values, in positions of a walk of the body in
/// execution order; a value used inside a loop that does not define it stays live to that
/// loop's end.
pub fn live_ranges(
    body: &[Stmt],
    is_tile: &dyn Fn(ValueId) -> bool,
) -> HashMap<ValueId, (usize, usize)> {
    let mut w = Walk {
        pos: 0,
        loops: Vec::new(),
        loop_ends: Vec::new(),
        defs: HashMap::new(),
        uses: Vec::new(),
    };
    w.block(body);
    let mut out: HashMap<ValueId, (usize, usize)> = HashMap::new();
    for (v, (p, _)) in &w.defs {
        if is_tile(*v) {
            out.insert(*v, (*p, *p));
        }
    }
    for (v, p, stack) in &w.uses {
        let Some((dp, dstack)) = w.defs.get(v) else {
            continue;
        };
        let Some(r) = out.get_mut(v) else { continue };
        let end = stack
            .iter()
            .find(|l| !dstack.contains(l))
            .and_then(|l| w.loop_ends.get(*l).copied())
            .unwrap_or(*p);
        r.1 = r.1.max(end).max(*dp);
    }
    out
}

struct Walk {
    pos: usize,
    loops: Vec<usize>,
    loop_ends: Vec<usize>,
    defs: HashMap<ValueId, (usize, Vec<usize>)>,
    uses: Vec<(ValueId, usize, Vec<usize>)>,
}

impl Walk {
    fn def(&mut self, v: ValueId) {
        self.defs.insert(v, (self.pos, self.loops.clone()));
    }
    fn use_(&mut self, v: ValueId) {
        self.uses.push((v, self.pos, self.loops.clone()));
    }
    fn block(&mut self, stmts: &[Stmt]) {
        for s in wsp_ir::interp::exec_order(stmts) {
            self.pos += 1;
            match s {
                Stmt::Op { results, op } => {
                    for v in op_operands(op) {
                        self.use_(v);
                    }
                    for r in results {
                        self.def(*r);
                    }
                }
                Stmt::Store { value, .. }
                | Stmt::Assign { value, .. }
                | Stmt::TFree { value, .. } => self.use_(*value),
                Stmt::For { index, body, .. } => {
                    let id = self.loop_ends.len();
                    self.loop_ends.push(0);
                    self.def(*index);
                    self.loops.push(id);
                    self.block(body);
                    self.loops.pop();
                    self.pos += 1;
                    self.loop_ends[id] = self.pos;
                }
                Stmt::Section { body, .. } => self.block(body),
                Stmt::TAlloc { .. } | Stmt::TPush { .. } => {}
            }
        }
    }
}

/// The values an op reads.
pub fn op_operands(op: &Op) -> Vec<ValueId> {
    match op {
        Op::Param { .. }
        | Op::Const { .. }
        | Op::Iota { .. }
        | Op::VarRead { .. }
        | Op::TPop { .. } => {
            vec![]
        }
        Op::Binary { lhs, rhs, .. } | Op::Cmp { lhs, rhs, .. } => vec![*lhs, *rhs],
        Op::Select {
            cond,
            on_true,
            on_false,
        } => vec![*cond, *on_true, *on_false],
        Op::Unary { x, .. }
        | Op::Reduce { x, .. }
        | Op::Transpose { x }
        | Op::Cast { x, .. }
        | Op::RowTopK { x, .. }
        | Op::Slice { x, .. } => vec![*x],
        Op::Matmul { a, b, acc } => {
            let mut v = vec![*a, *b];
            v.extend(acc);
            v
        }
        Op::Full { value, .. } => vec![*value],
    }
}

/// First-fit placement of live ranges: offsets (from 0) such that values whose ranges overlap
/// do not share bytes; returns the offsets and the peak.
pub fn place(items: &[(ValueId, (usize, usize), u64)], align: u64) -> (HashMap<ValueId, u64>, u64) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (items[i].1 .0, items[i].0));
    let mut placed: Vec<(usize, u64)> = Vec::new();
    let mut out = HashMap::new();
    let mut peak = 0;
    for i in order {
        let (v, (d, l), size) = items[i];
        let mut busy: Vec<(u64, u64)> = placed
            .iter()
            .filter(|(j, _)| {
                let (d2, l2) = items[*j].1;
                d2 <= l && d <= l2
            })
            .map(|(j, off)| (*off, off + items[*j].2))
            .collect();
        busy.sort();
        let mut off = 0u64;
        for (s, e) in busy {
            if off + size <= s {
                break;
            }
            off = off.max(e.div_ceil(align) * align);
        }
        placed.push((i, off));
        out.insert(v, off);
        peak = peak.max(off + size);
    }
    (out, peak)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_pads_to_the_alignment_rules() {
        let s = Storage::of(Loc::Vec, TileType::new(DType::F32, 16, 1));
        assert_eq!((s.rows, s.cols), (16, 8));
        let s = Storage::of(Loc::Vec, TileType::new(DType::F16, 4, 20));
        assert_eq!((s.rows, s.cols), (4, 32));
        let s = Storage::of(Loc::Left, TileType::new(DType::F16, 20, 40));
        assert_eq!((s.rows, s.cols), (32, 48));
        assert_eq!(s.footprint() % 512, 0);
    }

    #[test]
    fn overlapping_ranges_get_disjoint_bytes_and_dead_ones_are_reused() {
        let items = [
            (ValueId(0), (1, 3), 64),
            (ValueId(1), (2, 5), 64),
            (ValueId(2), (4, 6), 64),
        ];
        let (off, peak) = place(&items, 32);
        assert_ne!(off[&ValueId(0)], off[&ValueId(1)]);
        assert_ne!(off[&ValueId(1)], off[&ValueId(2)]);
        assert_eq!(off[&ValueId(2)], off[&ValueId(0)]);
        assert_eq!(peak, 128);
    }
}
