//! The kernel arguments of in-flight tasks whose kernels wait for their dispatch (a kernel
//! runs at its submission when nothing before it is pending on the host), from submission
//! until the kernel runs: one record per task in a ring of words. Tasks retire in submission
//! order, so records are freed in the order they were written; the ring is allocated at the
//! first record, sized for a window of small records, and grows only for larger ones (never
//! per task).
//!
//! A record is contiguous (a record that would cross the ring's end starts at its beginning
//! instead): three counts (coordinates, scalars, region arguments), the coordinates, the
//! scalars, then per argument one word (tensor, direction, rank) and the region's (offset,
//! extent, stride) per dimension. (Interleaved: copying a few words each way is then a loop,
//! where three short slices would be three calls to `memcpy`.) The kernel's [`RawArg`]s are
//! built from the record when the kernel runs.

use crate::api::{Arg, RawArg, MAX_RANK};

/// A kernel argument before it is filled (what a dimension past the rank holds).
pub(crate) const RAW_ARG: RawArg = RawArg {
    base: std::ptr::null_mut(),
    elem_size: 0,
    rank: 0,
    dims: [1; MAX_RANK],
    offsets: [0; MAX_RANK],
    extents: [1; MAX_RANK],
    strides: [1; MAX_RANK],
    dir: 0,
};

pub(crate) struct ExecRing {
    /// A power of two long (or empty).
    words: Vec<i64>,
    /// Positions (words written since the start, not wrapped): the next record's, and the
    /// oldest live record's.
    head: u64,
    tail: u64,
    /// Words to allocate at the first record.
    first: usize,
}

/// One region argument of a record.
pub(crate) struct RecArg<'a> {
    pub tensor: u32,
    /// 0 in, 1 out, 2 inout (as [`RawArg::dir`]).
    pub dir: u64,
    /// (offset, extent, stride) per dimension.
    pub dims: &'a [[i64; 3]],
}

/// A task's record, read back.
pub(crate) struct Record<'a> {
    pub coords: &'a [i64],
    pub scalars: &'a [i64],
    nargs: usize,
    args: &'a [i64],
}

impl<'a> Record<'a> {
    pub(crate) fn args(&self) -> impl Iterator<Item = RecArg<'a>> + 'a {
        let mut rest = self.args;
        (0..self.nargs).map(move |_| {
            let w = rest[0] as u64;
            let rank = (w >> 40) as usize;
            let (r, tail) = rest[1..].split_at(3 * rank);
            rest = tail;
            RecArg {
                tensor: w as u32,
                dir: (w >> 32) & 0xff,
                dims: r.as_chunks().0,
            }
        })
    }
}

impl RecArg<'_> {
    /// Writes the kernel's view of the argument into `a`, on a tensor of `elem_size`-byte
    /// elements and shape `dims` (1 past its rank) whose first byte is `base`. (In place: a
    /// `RawArg` is 288 bytes, and building one to move it costs a call to `memcpy`.)
    pub(crate) fn fill(
        &self,
        a: &mut RawArg,
        base: *mut u8,
        elem_size: u64,
        dims: &[i64; MAX_RANK],
    ) {
        a.base = base;
        a.elem_size = elem_size;
        a.rank = self.dims.len() as u64;
        a.dims = *dims;
        a.offsets = [0; MAX_RANK];
        a.extents = [1; MAX_RANK];
        a.strides = [1; MAX_RANK];
        a.dir = self.dir;
        for (d, &[o, e, s]) in self.dims.iter().take(MAX_RANK).enumerate() {
            a.offsets[d] = o;
            a.extents[d] = e;
            a.strides[d] = s;
        }
    }
}

impl ExecRing {
    /// An empty ring that allocates `first` words (rounded up to a power of two) at its first
    /// record; sized for a full window of the caller's usual records, it grows only for
    /// larger ones.
    pub(crate) fn new(first: usize) -> ExecRing {
        ExecRing {
            words: Vec::new(),
            head: 0,
            tail: 0,
            first,
        }
    }

    /// Words the ring holds (its memory, for tests).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.words.len()
    }

    /// Writes a task's record; returns its position.
    pub(crate) fn push(&mut self, coords: &[i64], scalars: &[i64], args: &[Arg]) -> u64 {
        // Room for the largest record of these counts (no pass over the arguments first).
        let len = 3 + coords.len() + scalars.len() + args.len() * (1 + 3 * MAX_RANK);
        let len64 = len as u64;
        let at = loop {
            let cap = self.words.len() as u64;
            let mut at = self.head;
            if cap > 0 && (at & (cap - 1)) + len64 > cap {
                // Start at the ring's beginning.
                at = at.next_multiple_of(cap);
            }
            if cap > 0 && at + len64 - self.tail <= cap {
                break at;
            }
            self.grow(at + len64 - self.tail);
        };
        let mask = self.words.len() - 1;
        let i = at as usize & mask;
        let w = &mut self.words[i..i + len];
        w[0] = coords.len() as i64;
        w[1] = scalars.len() as i64;
        w[2] = args.len() as i64;
        let (c, mut rest) = w[3..].split_at_mut(coords.len() + scalars.len());
        // One loop over both (a few words: `copy_from_slice` would call `memcpy` twice).
        let nc = coords.len();
        for (i, x) in c.iter_mut().enumerate() {
            *x = if i < nc { coords[i] } else { scalars[i - nc] };
        }
        for a in args {
            let r = &a.region;
            let n = (r.rank as usize).min(MAX_RANK);
            let dir = a.dir.code();
            rest[0] = (r.tensor.0 as u64 | dir << 32 | (n as u64) << 40) as i64;
            let (d, tail) = rest[1..].split_at_mut(3 * n);
            for (k, w) in d.as_chunks_mut().0.iter_mut().enumerate() {
                *w = [r.offsets[k], r.extents[k], r.strides[k]];
            }
            rest = tail;
        }
        self.head = at + (len - rest.len()) as u64;
        at
    }

    /// Room for `live` words from `tail` on, in a ring at least twice as long. Records keep
    /// their positions: a record that did not cross the old ring's end does not cross the new
    /// one's (whose length is a multiple of the old).
    #[cold]
    fn grow(&mut self, live: u64) {
        let cap = (2 * self.words.len())
            .max(live.next_power_of_two() as usize)
            .max(self.first.next_power_of_two());
        let mut w = vec![0i64; cap];
        let (old, new) = (self.words.len() as u64, cap as u64);
        for p in (self.tail..self.head).filter(|_| old > 0) {
            w[(p & (new - 1)) as usize] = self.words[(p & (old - 1)) as usize];
        }
        self.words = w;
    }

    /// The record at `pos` (which [`ExecRing::push`] returned and is not yet released).
    pub(crate) fn record(&self, pos: u64) -> Record<'_> {
        let i = pos as usize & (self.words.len() - 1);
        let w = &self.words[i..];
        let (nc, ns, na) = (w[0] as usize, w[1] as usize, w[2] as usize);
        let w = &w[3..];
        Record {
            coords: &w[..nc],
            scalars: &w[nc..nc + ns],
            nargs: na,
            args: &w[nc + ns..],
        }
    }

    /// Frees every record before position `pos` (their tasks have retired).
    pub(crate) fn release_to(&mut self, pos: u64) {
        self.tail = pos;
    }

    /// The position the next record would start from: releasing to it frees every record.
    pub(crate) fn end(&self) -> u64 {
        self.head
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Direction, Region, TensorId};

    fn arg(t: u32, o: &[i64], e: &[i64], dir: Direction) -> Arg {
        Arg {
            region: Region::dense(TensorId(t), o, e).unwrap(),
            dir,
        }
    }

    /// Records read back as written, across wraps and growth, while a window of them is live.
    #[test]
    fn records_survive_wraps_and_growth() {
        let mut r = ExecRing::new(64);
        // (position, coordinates, scalars, arguments) of the live records.
        type Live = (u64, Vec<i64>, Vec<i64>, Vec<Arg>);
        let mut live: std::collections::VecDeque<Live> = Default::default();
        for i in 0..2000i64 {
            let coords: Vec<i64> = (0..(i % 4)).map(|k| i * 10 + k).collect();
            let scalars: Vec<i64> = (0..(i % 3)).map(|k| -i - k).collect();
            let args: Vec<Arg> = (0..(i % 5))
                .map(|k| {
                    let rank = 1 + (i + k) as usize % 3;
                    let o: Vec<i64> = (0..rank as i64).map(|d| i + d).collect();
                    let e: Vec<i64> = (0..rank as i64).map(|d| 1 + d + k).collect();
                    let dir = [Direction::In, Direction::Out, Direction::InOut][k as usize % 3];
                    arg(k as u32 + 7, &o, &e, dir)
                })
                .collect();
            let pos = r.push(&coords, &scalars, &args);
            live.push_back((pos, coords, scalars, args));
            // A window that grows to 64 records, then shrinks to 8 and grows again.
            let window = if i < 1000 { 64 } else { 8 + (i as usize % 50) };
            while live.len() > window {
                live.pop_front();
                r.release_to(live.front().map_or(r.end(), |l| l.0));
            }
            for (pos, coords, scalars, args) in &live {
                let rec = r.record(*pos);
                assert_eq!(rec.coords, &coords[..]);
                assert_eq!(rec.scalars, &scalars[..]);
                let got: Vec<RecArg> = rec.args().collect();
                assert_eq!(got.len(), args.len());
                for (g, a) in got.iter().zip(args) {
                    let n = a.region.rank as usize;
                    assert_eq!(g.tensor, a.region.tensor.0);
                    let dims: Vec<[i64; 3]> = (0..n)
                        .map(|k| {
                            let r = &a.region;
                            [r.offsets[k], r.extents[k], r.strides[k]]
                        })
                        .collect();
                    assert_eq!(g.dims, &dims[..]);
                    let dir = a.dir.code();
                    assert_eq!(g.dir, dir);
                    // Garbage everywhere `fill` must write.
                    let mut raw = RawArg {
                        offsets: [7; MAX_RANK],
                        extents: [7; MAX_RANK],
                        strides: [7; MAX_RANK],
                        dir: 9,
                        ..RAW_ARG
                    };
                    g.fill(&mut raw, std::ptr::null_mut(), 4, &[9; MAX_RANK]);
                    assert_eq!(
                        (raw.elem_size, raw.dims, raw.dir),
                        (4, [9; MAX_RANK], g.dir)
                    );
                    assert_eq!(raw.rank as usize, n);
                    assert_eq!(&raw.offsets[..n], &a.region.offsets[..n]);
                    assert_eq!(&raw.strides[..n], &a.region.strides[..n]);
                    assert_eq!(raw.offsets[n..], [0; MAX_RANK][n..]);
                    assert_eq!(raw.extents[n..], [1; MAX_RANK][n..]);
                    assert_eq!(raw.strides[n..], [1; MAX_RANK][n..]);
                }
            }
        }
        // The ring is sized by the live records, not by the 2,000 written.
        assert!(r.capacity() <= 4096, "{}", r.capacity());
    }
}
