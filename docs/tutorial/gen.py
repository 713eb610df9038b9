"""Inputs and NumPy goldens of the tutorial's programs (docs/tutorial.md):
softmax.wsp (x, y_golden) and ragged_attention.wsp (q, kt, v, o_golden)."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def save(name, a):
    np.save(os.path.join(here, f"{name}.npy"), a.astype(np.float32))


# softmax.wsp: the softmax of each row.
x = rng.standard_normal((256, 64)).astype(np.float32)
e = np.exp(x - x.max(axis=1, keepdims=True))
save("x", x)
save("y_golden", e / e.sum(axis=1, keepdims=True))

# ragged_attention.wsp: attention within each 32-token tile, padding keys masked.
B, TS, MAXT, D = 4, 32, 4, 32
lens = [100, 32, 70, 9]
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
    save(name, a)
