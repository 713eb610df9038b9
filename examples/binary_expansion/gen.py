"""Golden data for binary_expansion.wsp: softmax(Q Kᵀ / √d) V over 704 tokens, in f64 in one
piece from the f16 inputs (the program tiles it with an online softmax)."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
S, D = 704, 32
rng = np.random.default_rng(67)
q = rng.standard_normal((S, D)).astype(np.float16)
kt = rng.standard_normal((D, S)).astype(np.float16)
v = rng.standard_normal((S, D)).astype(np.float16)
s = q.astype(np.float64) @ kt.astype(np.float64) / np.sqrt(D)
p = np.exp(s - s.max(axis=1, keepdims=True))
o = (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
np.save(os.path.join(here, "q.npy"), q)
np.save(os.path.join(here, "kt.npy"), kt)
np.save(os.path.join(here, "v.npy"), v)
np.save(os.path.join(here, "o_golden.npy"), o.astype(np.float32))
