"""Golden data for split_kv_decode.wsp: softmax(q kᵀ / √d) v over the 512 tokens of the cache,
computed in f64 in one piece (the program splits and merges)."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
D, CACHE, KV = 128, 512, 512
rng = np.random.default_rng(53)
q = rng.standard_normal((1, D)).astype(np.float32)
kt = rng.standard_normal((D, CACHE)).astype(np.float32)
v = rng.standard_normal((CACHE, D)).astype(np.float32)
s = q.astype(np.float64) @ kt[:, :KV].astype(np.float64) / np.sqrt(D)
p = np.exp(s - s.max())
o = (p / p.sum()) @ v[:KV].astype(np.float64)
np.save(os.path.join(here, "q.npy"), q)
np.save(os.path.join(here, "kt.npy"), kt)
np.save(os.path.join(here, "v.npy"), v)
np.save(os.path.join(here, "o_golden.npy"), o.astype(np.float32))
