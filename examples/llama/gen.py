"""Golden data for llama.wsp: per 8-row tile, attention, residual, rmsnorm (eps 1e-6),
relu MLP, residual; x f32[16,8], W1 [8,16], W2 [16,8]."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(8)
S, D, TS, F, eps = 16, 8, 8, 16, 1e-6
x = rng.standard_normal((S, D)).astype(np.float32)
w1 = rng.standard_normal((D, F)).astype(np.float32)
w2 = rng.standard_normal((F, D)).astype(np.float32)
out = np.zeros((S, D))
for t in range(S // TS):
    xt = x[t * TS:(t + 1) * TS].astype(np.float64)
    s = (xt @ xt.T) / np.sqrt(D)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    attn = (e / e.sum(axis=-1, keepdims=True)) @ xt
    r1 = xt + attn
    xn = r1 / np.sqrt(np.mean(r1 * r1, axis=-1, keepdims=True) + eps)
    mlp = np.maximum(xn @ w1, 0.0) @ w2
    out[t * TS:(t + 1) * TS] = r1 + mlp
np.save(os.path.join(here, "x.npy"), x)
np.save(os.path.join(here, "xt.npy"), np.ascontiguousarray(x.T))
np.save(os.path.join(here, "w1.npy"), w1)
np.save(os.path.join(here, "w2.npy"), w2)
np.save(os.path.join(here, "out_golden.npy"), out.astype(np.float32))
