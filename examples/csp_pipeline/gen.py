"""Golden data for csp_pipeline.wsp: Y = X·X elementwise, f32[8,64,64]."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(8)
x = rng.standard_normal((8, 64, 64)).astype(np.float32)
np.save(os.path.join(here, "x.npy"), x)
np.save(os.path.join(here, "y_golden.npy"), x * x)
