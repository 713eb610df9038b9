//! A set of small indices (processes) with its lowest member at or after an index in
//! O(log₆₄ n): a bit set with a summary level above it for each 64 words below. The CSP
//! scheduler keeps its runnable processes and each channel's waiting receivers in these, so a
//! step costs the same with two processes as with thousands.

#[derive(Default, Clone, Debug)]
pub(crate) struct IdSet {
    /// `levels[0]`: a bit a member; `levels[k + 1]`: a bit a nonzero word of `levels[k]`. The
    /// last level is one word.
    levels: Vec<Vec<u64>>,
}

impl IdSet {
    /// The number of indices the set holds without growing.
    fn capacity(&self) -> usize {
        self.levels.first().map_or(0, |l| l.len() * 64)
    }

    fn grow(&mut self, n: usize) {
        let members: Vec<usize> = self.iter().collect();
        let mut words = n.div_ceil(64).max(1);
        self.levels.clear();
        loop {
            self.levels.push(vec![0; words]);
            if words == 1 {
                break;
            }
            words = words.div_ceil(64);
        }
        for i in members {
            self.insert(i);
        }
    }

    pub(crate) fn insert(&mut self, i: usize) {
        if i >= self.capacity() {
            self.grow((i + 1).max(2 * self.capacity()));
        }
        let mut p = i;
        for level in &mut self.levels {
            let w = &mut level[p / 64];
            let was = *w;
            *w |= 1 << (p % 64);
            if was != 0 {
                break;
            }
            p /= 64;
        }
    }

    pub(crate) fn remove(&mut self, i: usize) {
        if i >= self.capacity() {
            return;
        }
        let mut p = i;
        for level in &mut self.levels {
            let w = &mut level[p / 64];
            *w &= !(1 << (p % 64));
            if *w != 0 {
                break;
            }
            p /= 64;
        }
    }

    /// The lowest member at or after `from`.
    pub(crate) fn next(&self, from: usize) -> Option<usize> {
        let (mut lvl, mut pos) = (0, from);
        loop {
            let w = pos / 64;
            let bits = *self.levels.get(lvl)?.get(w)? & (!0u64 << (pos % 64));
            if bits != 0 {
                let mut p = w * 64 + bits.trailing_zeros() as usize;
                while lvl > 0 {
                    lvl -= 1;
                    p = p * 64 + self.levels[lvl][p].trailing_zeros() as usize;
                }
                return Some(p);
            }
            // Nothing left in this word: the next nonzero word, one level up.
            lvl += 1;
            pos = w + 1;
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        let mut from = 0;
        std::iter::from_fn(move || {
            let i = self.next(from)?;
            from = i + 1;
            Some(i)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::IdSet;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Against `BTreeSet`: random inserts and removes over a range that needs three
        /// levels, with the successor of random points after each.
        #[test]
        fn matches_a_btreeset(ops in prop::collection::vec((any::<bool>(), 0usize..300_000), 1..400),
                              probes in prop::collection::vec(0usize..300_000, 1..20)) {
            let (mut s, mut o) = (IdSet::default(), BTreeSet::new());
            for (add, i) in ops {
                if add {
                    s.insert(i);
                    o.insert(i);
                } else {
                    s.remove(i);
                    o.remove(&i);
                }
                for &p in &probes {
                    prop_assert_eq!(s.next(p), o.range(p..).next().copied());
                }
            }
            prop_assert_eq!(s.iter().collect::<Vec<_>>(), o.iter().copied().collect::<Vec<_>>());
        }
    }

    #[test]
    fn word_edges() {
        let mut s = IdSet::default();
        assert_eq!(s.next(0), None);
        for i in [0, 63, 64, 4095, 4096, 262_143, 262_144] {
            s.insert(i);
        }
        let all: Vec<usize> = s.iter().collect();
        assert_eq!(all, [0, 63, 64, 4095, 4096, 262_143, 262_144]);
        assert_eq!(s.next(65), Some(4095));
        assert_eq!(s.next(262_145), None);
        s.remove(4095);
        s.remove(4096);
        assert_eq!(s.next(65), Some(262_143));
        s.remove(1 << 40);
    }
}
