"""Golden data for varlen_attention.wsp: block-local attention per 16-token tile of three
variable-length sequences (padding keys masked in each sequence's last tile)."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
B, TS, MAXT, D = 3, 16, 7, 16
lens = [40, 16, 100]
rng = np.random.default_rng(23)
q = np.zeros((B, MAXT, TS, D), np.float32)
kt = np.zeros((B, MAXT, D, TS), np.float32)
v = np.zeros((B, MAXT, TS, D), np.float32)
o = np.zeros((B, MAXT, TS, D), np.float32)
for b in range(B):
    for t in range((lens[b] + TS - 1) // TS):
        n = min(TS, lens[b] - TS * t)  # tokens in this tile
        q[b, t, :n] = rng.standard_normal((n, D))
        kt[b, t, :, :n] = rng.standard_normal((D, n))
        v[b, t, :n] = rng.standard_normal((n, D))
        s = (q[b, t] @ kt[b, t]) / np.sqrt(D)
        s[:, n:] = -1e30
        e = np.exp(s - s.max(axis=1, keepdims=True))
        o[b, t] = (e / e.sum(axis=1, keepdims=True)) @ v[b, t]
for name, a in [("q", q), ("kt", kt), ("v", v), ("o_golden", o)]:
    np.save(os.path.join(here, f"{name}.npy"), a)
