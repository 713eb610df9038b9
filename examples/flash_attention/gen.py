"""Golden data for flash_attention.wsp: plain softmax(Q Kᵀ/√D) V (the online softmax must
agree with it)."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
NQ, NK, TS, D = 2, 4, 16, 16
rng = np.random.default_rng(29)
q = rng.standard_normal((NQ, TS, D)).astype(np.float32)
kt = rng.standard_normal((NK, D, TS)).astype(np.float32)
v = rng.standard_normal((NK, TS, D)).astype(np.float32)
k_all = np.concatenate(list(kt), axis=1)  # [D, NK*TS]
v_all = np.concatenate(list(v), axis=0)   # [NK*TS, D]
o = np.zeros((NQ, TS, D), np.float32)
for i in range(NQ):
    s = (q[i] @ k_all) / np.sqrt(D)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    o[i] = (e / e.sum(axis=1, keepdims=True)) @ v_all
for name, a in [("q", q), ("kt", kt), ("v", v), ("o_golden", o)]:
    np.save(os.path.join(here, f"{name}.npy"), a)
