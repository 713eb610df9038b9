"""Golden data for deepseek_v3.wsp: y = g·(X·W0) + (1 − g)·(X·W1), X [16,8], W0, W1 [8,8],
g [16,1]."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(9)
x = rng.standard_normal((16, 8)).astype(np.float32)
w0 = rng.standard_normal((8, 8)).astype(np.float32)
w1 = rng.standard_normal((8, 8)).astype(np.float32)
g = rng.random((16, 1)).astype(np.float32)
x64, g64 = x.astype(np.float64), g.astype(np.float64)
y = g64 * (x64 @ w0) + (1.0 - g64) * (x64 @ w1)
np.save(os.path.join(here, "x.npy"), x)
np.save(os.path.join(here, "w0.npy"), w0)
np.save(os.path.join(here, "w1.npy"), w1)
np.save(os.path.join(here, "g.npy"), g)
np.save(os.path.join(here, "y_golden.npy"), y.astype(np.float32))
