"""Golden data for paged_gather.wsp: logical block b of Y is page Table[b] of Pages,
RMS-normalised (computed in f64)."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
B, R, D, EPS = 8, 64, 64, 1e-6
rng = np.random.default_rng(41)
pages = rng.standard_normal((B * R, D)).astype(np.float32)
table = rng.permutation(B).astype(np.int32).reshape(1, B)
w = (1.0 + 0.1 * rng.standard_normal((1, D))).astype(np.float32)
y = np.zeros((B * R, D))
for b in range(B):
    x = pages[table[0, b] * R:(table[0, b] + 1) * R].astype(np.float64)
    y[b * R:(b + 1) * R] = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS) * w
np.save(os.path.join(here, "pages.npy"), pages)
np.save(os.path.join(here, "table.npy"), table)
np.save(os.path.join(here, "w.npy"), w)
np.save(os.path.join(here, "y_golden.npy"), y.astype(np.float32))
