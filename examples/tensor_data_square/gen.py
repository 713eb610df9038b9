"""Golden data for tensor_data_square.wsp: Y = X·X elementwise, f32[2,4,32,32]."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(3)
x = rng.standard_normal((2, 4, 32, 32)).astype(np.float32)
np.save(os.path.join(here, "x.npy"), x)
np.save(os.path.join(here, "y_golden.npy"), x * x)
