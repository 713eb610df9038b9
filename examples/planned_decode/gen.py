"""Golden data for planned_decode.wsp: for each request, softmax(q kᵀ / √d) v over its own KV
length, computed in f64 in one piece from the f16 cache (the program plans, splits and merges).
Also prints the plan the program's `plan` kernel must make, for the comment and the tests."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
B, D, MAXKV, CORES = 8, 64, 2048, 24
W = B * MAXKV // 256
lens = np.array([1200, 40, 700, 130, 1536, 64, 900, 300], dtype=np.int32)
rng = np.random.default_rng(61)
q = rng.standard_normal((B, D)).astype(np.float16)
kt = rng.standard_normal((B, D, MAXKV)).astype(np.float16)
v = rng.standard_normal((B, MAXKV, D)).astype(np.float16)
o = np.zeros((B, D), dtype=np.float64)
for b in range(B):
    n = lens[b]
    s = q[b].astype(np.float64) @ kt[b, :, :n].astype(np.float64) / np.sqrt(D)
    p = np.exp(s - s.max())
    o[b] = (p / p.sum()) @ v[b, :n].astype(np.float64)
np.save(os.path.join(here, "lens.npy"), lens)
np.save(os.path.join(here, "q.npy"), q)
np.save(os.path.join(here, "kt.npy"), kt)
np.save(os.path.join(here, "v.npy"), v)
np.save(os.path.join(here, "o_golden.npy"), o.astype(np.float32))

chunk = next((c for c in (64, 128) if sum(-(-lens // c)) <= min(CORES, W)), 256)
print("chunk", chunk, "descriptors", int(sum(-(-lens // chunk))),
      "naive chunks", int(sum(-(-lens // 64))))
