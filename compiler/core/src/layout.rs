//! How the driver cuts a file into items, and keeps the cut across edits.
//!
//! A file is held as one input per item ([`crate::db::ItemSrc`]), so an edit sets the text of
//! the items it touches and nothing else. [`recut`] finds those items: the text the old and
//! new versions share at the front and at the back is unchanged, and tokens never span lines
//! and items start at line starts ([`wsp_syntax::cut`]), so only the items around the changed
//! bytes, from the item before the first one touched to the item after the last one, are cut
//! again.
//!
//! Two coordinates exist for a position inside an item. The *real* one is its byte offset in
//! the file, and an edit moves it for every item after the edit. The *virtual* one is the
//! item's place in a [`Layout`] plus the offset inside the item: each item has a capacity
//! (room to grow) and keeps it while it fits, so an edit that keeps every item within its
//! capacity moves no virtual position. Whole-file analyses work in virtual positions (their
//! results stay equal, and salsa does not run what reads them again) and
//! [`Layout::to_real`] turns their spans into real ones at the end.

use std::ops::Range;

/// A file cut into items: where the prefix (the text before the first item) ends, each item's
/// real byte range, and the virtual layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Real start of each item, in order; the first is the prefix's length.
    pub starts: Vec<u32>,
    /// Virtual start of each item, and one past the last item's capacity: `virt[0]` is the
    /// prefix's capacity (the prefix's virtual and real positions are the same).
    pub virt: Vec<u32>,
}

/// The room an item of `len` bytes is given: half as much again and 64 bytes, rounded up to a
/// power of two, so that typing inside it rarely outgrows it.
fn capacity(len: usize) -> u64 {
    ((len + len / 2 + 64) as u64).next_power_of_two()
}

impl Layout {
    /// The layout of items with these real ranges in a text of `len` bytes (ranges contiguous
    /// from the first item's start to `len`), with `caps` for each item where it is given and
    /// still fits (`None`: a fresh capacity). Capacities fall back to the item's length (virtual
    /// = real) when the total would not fit in 32 bits.
    fn build(prefix: usize, ranges: &[Range<usize>], caps: &[Option<u64>]) -> Layout {
        let prefix_cap = capacity(prefix);
        let caps: Vec<u64> = ranges
            .iter()
            .zip(caps.iter().chain(std::iter::repeat(&None)))
            .map(|(r, c)| match c {
                Some(c) if *c > r.len() as u64 => *c,
                _ => capacity(r.len()),
            })
            .collect();
        let total: u64 = prefix_cap + caps.iter().sum::<u64>();
        let starts: Vec<u32> = ranges.iter().map(|r| r.start as u32).collect();
        let virt: Vec<u32> = if total < u32::MAX as u64 {
            let mut at = prefix_cap;
            let mut virt = Vec::with_capacity(caps.len() + 1);
            virt.push(at as u32);
            for c in &caps {
                at += c;
                virt.push(at as u32);
            }
            virt
        } else {
            let end = ranges.last().map_or(prefix, |r| r.end) as u32;
            starts.iter().copied().chain(std::iter::once(end)).collect()
        };
        Layout { starts, virt }
    }

    /// The layout of a text cut from scratch.
    pub fn fresh(text: &str) -> (Layout, Vec<Range<usize>>) {
        let ranges = wsp_syntax::cut(text);
        let prefix = ranges.first().map_or(text.len(), |r| r.start);
        (Layout::build(prefix, &ranges, &[]), ranges)
    }

    /// Each item's capacity.
    fn caps(&self) -> Vec<u64> {
        self.virt.windows(2).map(|w| (w[1] - w[0]) as u64).collect()
    }
}

/// The real position of virtual position `v` in a file whose items start at `starts` and
/// `virt` (the prefix's positions are the same in both).
pub fn to_real(starts: &[u32], virt: &[u32], v: u32) -> u32 {
    let n = starts.len().min(virt.len());
    let i = virt[..n].partition_point(|&x| x <= v);
    if i == 0 {
        v
    } else {
        starts[i - 1] + (v - virt[i - 1])
    }
}

/// The length of the longest common prefix of `a` and `b`, compared a block at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= len && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..len]
        .iter()
        .zip(&b[at..len])
        .take_while(|(x, y)| x == y)
        .count()
}

/// The length of the longest common suffix of `a` and `b`, compared a block at a time.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let len = a.len().min(b.len());
    let (a, b) = (&a[a.len() - len..], &b[b.len() - len..]);
    let mut end = len;
    while end >= BLOCK && a[end - BLOCK..end] == b[end - BLOCK..end] {
        end -= BLOCK;
    }
    len - end
        + a[..end]
            .iter()
            .rev()
            .zip(b[..end].iter().rev())
            .take_while(|(x, y)| x == y)
            .count()
}

/// What changed when a file's text was replaced: the items kept at the front and the back
/// (their texts unchanged; the back's starts move by the change in length), the ranges of the
/// items cut again in between (real, in the new text), and the new layout.
#[derive(Debug)]
pub struct Recut {
    pub front: usize,
    pub back: usize,
    pub middle: Vec<Range<usize>>,
    pub layout: Layout,
}

/// The cut of `new` given the cut of `old` (see the module documentation), `None` when the
/// texts are the same. Equal to cutting `new` from scratch; the items outside the changed
/// region keep their capacities, and so do the ones cut again while their count stays and
/// each still fits.
pub fn recut(old: &str, layout: &Layout, new: &str) -> Option<Recut> {
    let (o, n) = (old.as_bytes(), new.as_bytes());
    let p = common_prefix(o, n);
    if p == o.len() && p == n.len() {
        return None;
    }
    let max_s = o.len().min(n.len()) - p;
    let s = common_suffix(&o[p..], &n[p..]).min(max_s);
    let starts = &layout.starts;
    let items = starts.len();
    let from_scratch = || {
        let (fresh, ranges) = Layout::fresh(new);
        Recut {
            front: 0,
            back: 0,
            middle: ranges,
            layout: fresh,
        }
    };
    if items == 0 {
        return Some(from_scratch());
    }
    // The item holding byte `at` of the old text (`None`: the prefix).
    let holding = |at: usize| starts.partition_point(|&x| x as usize <= at).checked_sub(1);
    let first_changed = holding(p);
    let last_changed = holding((o.len() - s).saturating_sub(1).max(p));
    // From the item before the first one touched (its start is still an item start) to the
    // one after the last (the next one's start is too).
    let front = match first_changed {
        None | Some(0) => 0,
        Some(a) => a - 1,
    };
    let back_first = last_changed.map_or(1, |b| b + 2).min(items);
    let region_start = if front == 0 {
        0
    } else {
        starts[front] as usize
    };
    let old_end = starts.get(back_first).map_or(o.len(), |&x| x as usize);
    let new_end = old_end + n.len() - o.len();
    let Some(piece) = new.get(region_start..new_end) else {
        return Some(from_scratch());
    };
    let cut: Vec<Range<usize>> = wsp_syntax::cut(piece)
        .into_iter()
        .map(|r| r.start + region_start..r.end + region_start)
        .collect();
    // A piece that starts at an item's start begins with that item: if it did not, cutting
    // from scratch is the answer.
    if region_start > 0 && cut.first().is_none_or(|r| r.start != region_start) {
        return Some(from_scratch());
    }
    let back = items - back_first;
    let delta = n.len() as i64 - o.len() as i64;
    let old_caps = layout.caps();
    let prefix = if region_start == 0 {
        cut.first().map_or(new_end, |r| r.start)
    } else {
        starts[0] as usize
    };
    let mut ranges: Vec<Range<usize>> = Vec::with_capacity(front + cut.len() + back);
    let mut caps: Vec<Option<u64>> = Vec::with_capacity(ranges.capacity());
    let end_of = |i: usize| starts.get(i + 1).map_or(o.len(), |&x| x as usize);
    for (i, &start) in starts.iter().enumerate().take(front) {
        ranges.push(start as usize..end_of(i));
        caps.push(old_caps.get(i).copied());
    }
    let same_count = cut.len() == items - front - back;
    for (j, r) in cut.iter().enumerate() {
        ranges.push(r.clone());
        caps.push(if same_count {
            old_caps.get(front + j).copied()
        } else {
            None
        });
    }
    let shift = |x: usize| (x as i64 + delta) as usize;
    for (i, &start) in starts.iter().enumerate().skip(back_first) {
        ranges.push(shift(start as usize)..shift(end_of(i)));
        caps.push(old_caps.get(i).copied());
    }
    let layout = Layout::build(prefix, &ranges, &caps);
    Some(Recut {
        front,
        back,
        middle: cut,
        layout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "// a module\n/// doc of N\nconst N = 8\n\nkernel k(a: in f32[8, 8], b: out f32[8, 8]) {\n    b = a\n}\n\nworkload w {\n    for i in 0..N {\n        k[i](a: A, b: B)\n    }\n}\n\nschedule s = w.dispatch(round_robin(4))\n";

    fn check(old: &str, new: &str) {
        let (l, _) = Layout::fresh(old);
        let Some(r) = recut(old, &l, new) else {
            assert_eq!(old, new);
            return;
        };
        let (fresh, ranges) = Layout::fresh(new);
        let items = l.starts.len();
        let old_ranges: Vec<Range<usize>> = (0..items)
            .map(|i| l.starts[i] as usize..l.starts.get(i + 1).map_or(old.len(), |&x| x as usize))
            .collect();
        let mut got: Vec<Range<usize>> = Vec::new();
        let delta = new.len() as i64 - old.len() as i64;
        got.extend(old_ranges[..r.front].iter().cloned());
        got.extend(r.middle.iter().cloned());
        got.extend(
            old_ranges[items - r.back..]
                .iter()
                .map(|x| (x.start as i64 + delta) as usize..(x.end as i64 + delta) as usize),
        );
        assert_eq!(got, ranges, "{old:?} -> {new:?}");
        assert_eq!(r.layout.starts, fresh.starts, "{old:?} -> {new:?}");
        // Texts kept at the front and back are the same.
        for i in 0..r.front {
            assert_eq!(old[old_ranges[i].clone()], new[ranges[i].clone()]);
        }
        for k in 0..r.back {
            let (oi, ni) = (items - 1 - k, ranges.len() - 1 - k);
            assert_eq!(old[old_ranges[oi].clone()], new[ranges[ni].clone()]);
        }
        // Virtual positions map back to real ones inside every item.
        for (i, rg) in ranges.iter().enumerate() {
            for off in [0, rg.len()] {
                let v = r.layout.virt[i] + off as u32;
                assert_eq!(
                    to_real(&r.layout.starts, &r.layout.virt, v) as usize,
                    rg.start + off
                );
            }
            assert!(r.layout.virt[i + 1] - r.layout.virt[i] > rg.len() as u32 || rg.is_empty());
        }
    }

    #[test]
    fn common_ends_by_blocks_and_bytes() {
        let a: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        for at in [0, 1, 255, 256, 257, 511, 512, 999] {
            let mut b = a.clone();
            b[at] ^= 1;
            assert_eq!(common_prefix(&a, &b), at);
            assert_eq!(common_suffix(&a, &b), 999 - at);
        }
        assert_eq!(common_prefix(&a, &a[..300]), 300);
        assert_eq!(common_suffix(&a, &a[700..]), 300);
        assert_eq!(common_suffix(&a, &a), 1000);
    }

    #[test]
    fn an_edit_inside_an_item_keeps_the_layout() {
        let new = FILE.replace("b = a", "b = a * 2.0");
        let (l, _) = Layout::fresh(FILE);
        let r = recut(FILE, &l, &new).expect("an edit");
        assert_eq!(r.layout.virt, l.virt);
        assert_ne!(r.layout.starts, l.starts);
        check(FILE, &new);
    }

    #[test]
    fn edits_anywhere_cut_as_from_scratch() {
        // Every single-byte deletion, and insertions of item keywords, doc comments, newlines
        // and garbage at every position.
        let inserts = [
            "\n",
            "kernel",
            "\nkernel q() {}\n",
            "/// d\n",
            "}",
            "{",
            "x",
            "\r\n",
            "\"",
            "é",
        ];
        for at in 0..=FILE.len() {
            if !FILE.is_char_boundary(at) {
                continue;
            }
            if at < FILE.len() {
                let mut s = FILE.to_string();
                s.remove(at);
                check(FILE, &s);
            }
            for ins in inserts {
                let mut s = FILE.to_string();
                s.insert_str(at, ins);
                check(FILE, &s);
                check(&s, FILE);
            }
        }
        check(FILE, "");
        check("", FILE);
        check("garbage\n", FILE);
    }
}
