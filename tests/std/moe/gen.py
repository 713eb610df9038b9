"""Inputs and NumPy goldens for moe.wsp (every kernel of std.moe): a MoE layer of 4 tiles of
64 tokens, 8 experts, top 2, in f64."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
T, R, H, E, K = 4, 64, 128, 8, 2
rng = np.random.default_rng(79)
x = rng.standard_normal((T * R, H)).astype(np.float32)
# A gate that makes tiles prefer different experts (so the tiles' expert sets differ).
wg = (rng.standard_normal((H, E)) / np.sqrt(H)).astype(np.float32)
# tile 0 leans to experts 1 and 3, tile 1 to 6, tile 2 to 0, 2 and 5; tile 3 is free
for b, es in [(0, [1, 3]), (1, [6]), (2, [0, 2, 5])]:
    x[b * R:(b + 1) * R] += 40.0 * wg[:, es].sum(axis=1) / np.sum(wg[:, es] ** 2)
wu = (rng.standard_normal((E, H, H)) / np.sqrt(H)).astype(np.float32)
wd = (rng.standard_normal((E, H, H)) / np.sqrt(H)).astype(np.float32)
for n, a in [("x", x), ("wg", wg), ("wu", wu), ("wd", wd)]:
    np.save(os.path.join(here, n + ".npy"), a)

logits = x.astype(np.float64) @ wg.astype(np.float64)
order = np.argsort(-logits, axis=1, kind="stable")[:, :K]
top = np.take_along_axis(logits, order, axis=1)
w = np.exp(top - top.max(axis=1, keepdims=True))
w /= w.sum(axis=1, keepdims=True)
silu = lambda a: a / (1 + np.exp(-a))
y = np.zeros((T * R, H))
for t in range(T * R):
    for k in range(K):
        e = order[t, k]
        h = silu(x[t].astype(np.float64) @ wu[e])
        y[t] += w[t, k] * (h @ wd[e])
present = np.zeros((T, E), dtype=bool)
for t in range(T * R):
    present[t // R, order[t]] = True
indptr = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.int32)
indices = np.zeros(T * E, dtype=np.int32)
flat = [e for b in range(T) for e in range(E) if present[b, e]]
indices[:len(flat)] = flat
np.save(os.path.join(here, "experts_golden.npy"), order.astype(np.int32))
np.save(os.path.join(here, "weights_golden.npy"), w.astype(np.float32))
np.save(os.path.join(here, "indptr_golden.npy"), indptr)
np.save(os.path.join(here, "indices_golden.npy"), indices)
np.save(os.path.join(here, "y_golden.npy"), y.astype(np.float32))
e0 = flat[0]
scaled = silu(x[:R].astype(np.float64) @ wu[e0]) @ wd[e0] * w[:R, :1]
np.save(os.path.join(here, "scaled_golden.npy"), scaled.astype(np.float32))
print("experts per tile", present.sum(axis=1), "of", E)
