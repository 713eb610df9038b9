"""Golden data for flashinfer_decode.wsp: softmax(q Kᵀ/√d) V, q [1,16], K, V [64,16]."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
d, kv = 16, 64
q = rng.standard_normal((1, d)).astype(np.float32)
k = rng.standard_normal((kv, d)).astype(np.float32)
v = rng.standard_normal((kv, d)).astype(np.float32)
s = (q.astype(np.float64) @ k.T.astype(np.float64)) / np.sqrt(d)
e = np.exp(s - s.max(axis=-1, keepdims=True))
o = ((e / e.sum(axis=-1, keepdims=True)) @ v.astype(np.float64)).astype(np.float32)
np.save(os.path.join(here, "q.npy"), q)
np.save(os.path.join(here, "kt.npy"), np.ascontiguousarray(k.T))
np.save(os.path.join(here, "v.npy"), v)
np.save(os.path.join(here, "o_golden.npy"), o)
