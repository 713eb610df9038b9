"""Golden data for attention.wsp: per-tile softmax(Q Kᵀ/√d) V with Q, K, V f32[1,2,16,8]
split into tiles of 8 rows (stored tiled: q, v [1,2,2,8,8], kᵀ [1,2,2,8,8])."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)
B, H, S, D, TS = 1, 2, 16, 8, 8
q = rng.standard_normal((B, H, S, D)).astype(np.float32)
k = rng.standard_normal((B, H, S, D)).astype(np.float32)
v = rng.standard_normal((B, H, S, D)).astype(np.float32)
qt = q.reshape(B, H, S // TS, TS, D)
kt = np.ascontiguousarray(k.reshape(B, H, S // TS, TS, D).transpose(0, 1, 2, 4, 3))
vt = v.reshape(B, H, S // TS, TS, D)
s = np.matmul(qt.astype(np.float64), kt.astype(np.float64)) / np.sqrt(D)
e = np.exp(s - s.max(axis=-1, keepdims=True))
o = np.matmul(e / e.sum(axis=-1, keepdims=True), vt.astype(np.float64)).astype(np.float32)
np.save(os.path.join(here, "q.npy"), qt)
np.save(os.path.join(here, "kt.npy"), kt)
np.save(os.path.join(here, "v.npy"), vt)
np.save(os.path.join(here, "o_golden.npy"), o)
