"""Golden data for tensor_data_add.wsp: C = A + B, f32[2,2,2,32,32]."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(2)
a = rng.standard_normal((2, 2, 2, 32, 32)).astype(np.float32)
b = rng.standard_normal((2, 2, 2, 32, 32)).astype(np.float32)
np.save(os.path.join(here, "a.npy"), a)
np.save(os.path.join(here, "b.npy"), b)
np.save(os.path.join(here, "c_golden.npy"), a + b)
