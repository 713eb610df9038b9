"""Inputs and NumPy goldens for attention.wsp (every kernel of std.attention), in f64."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
S, D, TS = 128, 128, 64
rng = np.random.default_rng(73)
q = rng.standard_normal((S, D)).astype(np.float32)
k = rng.standard_normal((S, D)).astype(np.float32)
v = rng.standard_normal((S, D)).astype(np.float32)
for n, a in [("q", q), ("k", k), ("v", v), ("kt", np.ascontiguousarray(k.T))]:
    np.save(os.path.join(here, n + ".npy"), a)


def attend(q, k, v, causal=False):
    s = q.astype(np.float64) @ k.astype(np.float64).T / np.sqrt(D)
    if causal:
        s = np.where(np.arange(len(k))[None, :] > np.arange(len(q))[:, None], -np.inf, s)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


# Paged KV: two requests decode against caches of 3 and 2 pages of 64 tokens, kept in a
# pool of 6 pages in the order the page table gives (the decode kernels take kᵀ pages).
table = np.array([[4, 0, 2], [5, 1, 0]], dtype=np.int32)
npages = np.array([3, 2], dtype=np.int32)
kpool = rng.standard_normal((6, TS, D)).astype(np.float32)
vpool = rng.standard_normal((6, TS, D)).astype(np.float32)
qd = rng.standard_normal((2, D)).astype(np.float32)
for n, a in [("table", table), ("npages", npages), ("kt_pool", np.ascontiguousarray(kpool.transpose(0, 2, 1))),
             ("v_pool", vpool), ("qd", qd)]:
    np.save(os.path.join(here, n + ".npy"), a)
paged = np.stack([attend(qd[b:b + 1], np.concatenate([kpool[p] for p in table[b, :npages[b]]]),
                         np.concatenate([vpool[p] for p in table[b, :npages[b]]]))[0] for b in range(2)])
np.save(os.path.join(here, "paged_golden.npy"), paged.astype(np.float32))
# Variable lengths: two sequences of 64 and 128 tokens, each padded to 128 rows, attention
# within each sequence (the padding rows of the output stay zero).
lens = np.array([64, 128], dtype=np.int32)
qv = rng.standard_normal((2, 128, D)).astype(np.float32)
kv = rng.standard_normal((2, 128, D)).astype(np.float32)
vv = rng.standard_normal((2, 128, D)).astype(np.float32)
for n, a in [("lens", lens), ("qv", qv), ("kv", kv), ("vv", vv)]:
    np.save(os.path.join(here, n + ".npy"), a)
varlen = np.zeros((2, 128, D))
for b in range(2):
    n = lens[b]
    varlen[b, :n] = attend(qv[b, :n], kv[b, :n], vv[b, :n])
np.save(os.path.join(here, "varlen_golden.npy"), varlen.astype(np.float32))

# Half precision: the same q, k, v rounded to f16 (the golden from the rounded values).
h = lambda a: a.astype(np.float16)
for n, a in [("q_h", h(q)), ("k_h", h(k)), ("v_h", h(v)), ("kt_h", np.ascontiguousarray(h(k).T))]:
    np.save(os.path.join(here, n + ".npy"), a)
np.save(os.path.join(here, "flash_h_golden.npy"), attend(h(q), h(k), h(v)).astype(np.float32))
np.save(os.path.join(here, "decode_h_golden.npy"), attend(h(q)[:1], h(k), h(v)).astype(np.float32))

for n, a in [("tile", attend(q[:TS], k[:TS], v[:TS])), ("flash", attend(q, k, v)),
             ("causal", attend(q, k, v, causal=True)), ("decode", attend(q[:1], k, v))]:
    np.save(os.path.join(here, n + "_golden.npy"), a.astype(np.float32))
