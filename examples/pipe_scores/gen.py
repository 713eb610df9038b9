"""Golden data for pipe_scores.wsp: per 16-row tile, s = Q·K and p = exp(s − rowmax(s)),
Q [32,16], K [16,64]."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(17)
q = rng.standard_normal((32, 16)).astype(np.float32)
k = rng.standard_normal((16, 64)).astype(np.float32)
s = q.astype(np.float64) @ k.astype(np.float64)
p = np.exp(s - s.max(axis=1, keepdims=True))
np.save(os.path.join(here, "q.npy"), q)
np.save(os.path.join(here, "k.npy"), k)
np.save(os.path.join(here, "p_golden.npy"), p.astype(np.float32))
