//! Parsing frees everything it allocates: the grammar is rebuilt per parse, and a grammar that
//! referred to itself strongly (chumsky's `Recursive::declare` + `define`) leaked all of it on
//! every parse — a language server parses on every keystroke. A counting allocator measures
//! the live bytes around many parses.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::SeqCst);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::SeqCst);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

const SRC: &str = "import std.nn.{rmsnorm}
const N = 4
axis rows = Dense[N]
input X: f32[N, 8, 8] = random(seed: 1)
output Y: f32[N, 8, 8]
/// doubles
kernel k(x: in f32[8, 8], y: out f32[8, 8]) {
    let s = rowsum(x * 2.0) + (1 - 2) * 3
    for i in 0..2 { y[0..4, :] = x[0..4, :] }
    y = x + s
}
workload w {
    for i in P(rows) {
        when X[i, 0, 0] > 0.0 { k[i](x: X[i], y: Y[i]) } else { k[i](x: X[i], y: Y[i]) }
    }
}
schedule main = w.dispatch(round_robin(4)).task_window(8)
kernel broken(x: in f32[8, 8] {
    y = (x +
}
";

#[test]
fn repeated_parses_do_not_grow_live_memory() {
    // Warm-up: one-time allocations (lazy statics, thread-locals) happen here.
    for _ in 0..3 {
        drop(wsp_syntax::parse(SRC));
    }
    let before = LIVE.load(Ordering::SeqCst);
    for _ in 0..200 {
        let p = wsp_syntax::parse(SRC);
        assert!(!p.errors.is_empty());
        drop(p);
    }
    let grown = LIVE.load(Ordering::SeqCst) - before;
    // A leaked grammar is kilobytes per parse (hundreds of KB here); allow noise.
    assert!(grown < 4096, "200 parses left {grown} bytes live");
}
