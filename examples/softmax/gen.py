"""Golden data for softmax.wsp: row softmax of f32[1,32,256]."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(6)
x = rng.standard_normal((1, 32, 256)).astype(np.float32)
x64 = x.astype(np.float64)
e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
y = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
np.save(os.path.join(here, "x.npy"), x)
np.save(os.path.join(here, "y_golden.npy"), y)
