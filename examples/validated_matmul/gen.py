"""Golden data for validated_matmul.wsp: C = A·B, f32[1,16,16]."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(1)
a = rng.standard_normal((1, 16, 16)).astype(np.float32)
b = rng.standard_normal((1, 16, 16)).astype(np.float32)
c = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
np.save(os.path.join(here, "a.npy"), a)
np.save(os.path.join(here, "b.npy"), b)
np.save(os.path.join(here, "c_golden.npy"), c)
