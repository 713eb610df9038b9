"""Golden data for swiglu_mlp.wsp: Y = (silu(X·Wg) ⊙ (X·Wu))·Wd per 64-row tile (in f64)."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
S, D = 512, 128
rng = np.random.default_rng(77)
x = rng.standard_normal((S, D)).astype(np.float32)
wg = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32)
wu = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32)
wd = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32)
g = x.astype(np.float64) @ wg
u = x.astype(np.float64) @ wu
a = g / (1.0 + np.exp(-g)) * u
y = a @ wd
for name, v in [("x", x), ("wg", wg), ("wu", wu), ("wd", wd), ("y_golden", y.astype(np.float32))]:
    np.save(os.path.join(here, name + ".npy"), v)
