//! A growable array stored in fixed-size chunks: growing never copies what is there (no
//! moment with old and new storage both allocated), and at most one chunk is unused.

const BITS: u32 = 8;
const CHUNK: usize = 1 << BITS;

pub(crate) struct Chunked<T> {
    chunks: Vec<Box<[T]>>,
    len: u32,
}

impl<T: Copy + Default> Chunked<T> {
    pub(crate) fn new() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// Appends `x`; returns its index.
    pub(crate) fn push(&mut self, x: T) -> u32 {
        let i = self.len;
        if i as usize & (CHUNK - 1) == 0 {
            self.chunks
                .push(vec![T::default(); CHUNK].into_boxed_slice());
        }
        self.len += 1;
        *self.get_mut(i) = x;
        i
    }

    #[inline]
    pub(crate) fn get(&self, i: u32) -> &T {
        &self.chunks[(i >> BITS) as usize][i as usize & (CHUNK - 1)]
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, i: u32) -> &mut T {
        &mut self.chunks[(i >> BITS) as usize][i as usize & (CHUNK - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_survive_growth() {
        let mut c = Chunked::<u64>::new();
        for i in 0..1000u64 {
            assert_eq!(c.push(i * 3), i as u32);
        }
        *c.get_mut(700) = 1;
        assert_eq!(*c.get(999), 2997);
        assert_eq!(*c.get(700), 1);
        assert_eq!(c.chunks.len(), 4);
    }
}
