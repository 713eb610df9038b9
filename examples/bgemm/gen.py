"""Golden data for bgemm.wsp: C = A·B with f16 A, B [1,64,64] and f32 C."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(5)
a = rng.standard_normal((1, 64, 64)).astype(np.float16)
b = rng.standard_normal((1, 64, 64)).astype(np.float16)
c = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
np.save(os.path.join(here, "a.npy"), a)
np.save(os.path.join(here, "b.npy"), b)
np.save(os.path.join(here, "c_golden.npy"), c)
