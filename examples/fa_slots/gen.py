"""Golden data for fa_slots.wsp: softmax(q·kᵀ/√d)·v for 128 queries over 512 keys, head 128,
f16 inputs, computed in f64 (both kernels round p to f16 before p·v: the tolerance covers it)."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
SQ, SK, HD = 128, 512, 128
rng = np.random.default_rng(43)
q = rng.standard_normal((SQ, HD)).astype(np.float16)
kt = rng.standard_normal((HD, SK)).astype(np.float16)
v = rng.standard_normal((SK, HD)).astype(np.float16)
s = q.astype(np.float64) @ kt.astype(np.float64) / np.sqrt(HD)
p = np.exp(s - s.max(axis=1, keepdims=True))
y = (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
np.save(os.path.join(here, "q.npy"), q)
np.save(os.path.join(here, "kt.npy"), kt)
np.save(os.path.join(here, "v.npy"), v)
np.save(os.path.join(here, "y_golden.npy"), y.astype(np.float32))
