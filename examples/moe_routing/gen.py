"""Golden data for moe_routing.wsp: top-2 expert routing per token tile, then the experts."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
B, E, T = 4, 4, 16
rng = np.random.default_rng(17)
x = rng.standard_normal((B, T, T)).astype(np.float32)
wr = rng.standard_normal((T, E)).astype(np.float32)
w = rng.standard_normal((E, T, T)).astype(np.float32)

route = np.zeros(2 * B, dtype=np.int32)
y = np.zeros((B, E, T, T), dtype=np.float32)
for b in range(B):
    scores = (x[b] @ wr).sum(axis=0)
    # Larger score first; equal scores keep the lower expert first (a stable sort).
    top = np.argsort(-scores, kind="stable")[:2]
    route[2 * b : 2 * b + 2] = top
    for e in top:
        y[b, e] = x[b] @ w[e]

for name, a in [("x", x), ("wr", wr), ("w", w), ("route_golden", route), ("y_golden", y)]:
    np.save(os.path.join(here, f"{name}.npy"), a)
