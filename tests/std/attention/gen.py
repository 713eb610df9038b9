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


for n, a in [("tile", attend(q[:TS], k[:TS], v[:TS])), ("flash", attend(q, k, v)),
             ("causal", attend(q, k, v, causal=True)), ("decode", attend(q[:1], k, v))]:
    np.save(os.path.join(here, n + "_golden.npy"), a.astype(np.float32))
