"""Golden data for residual_tiles.wsp: RMSnorm of 104 rows of 64 (computed in f64)."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
S, D, EPS = 104, 64, 1e-6
rng = np.random.default_rng(47)
x = rng.standard_normal((S, D)).astype(np.float32)
w = (1.0 + 0.1 * rng.standard_normal((1, D))).astype(np.float32)
x64 = x.astype(np.float64)
y = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + EPS) * w
np.save(os.path.join(here, "x.npy"), x)
np.save(os.path.join(here, "w.npy"), w)
np.save(os.path.join(here, "y_golden.npy"), y.astype(np.float32))
