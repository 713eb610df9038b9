"""Golden data for e2e_rmsnorm.wsp: y = x / sqrt(mean(x²)) per row, f32[1,32,16]."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(4)
x = rng.standard_normal((1, 32, 16)).astype(np.float32)
x64 = x.astype(np.float64)
y = (x64 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True))).astype(np.float32)
np.save(os.path.join(here, "x.npy"), x)
np.save(os.path.join(here, "y_golden.npy"), y)
