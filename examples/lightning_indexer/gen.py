"""Golden data for lightning_indexer.wsp: stable top-8 indices (score descending, then index
ascending) of 32 scores per row, f32[2,4,32]; eff_seq covers all four tiers."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(10)
B, T, C, K = 2, 4, 32, 8
scores = rng.standard_normal((B, T, C)).astype(np.float32)
scores[0, 1, 5] = scores[0, 1, 9]  # a tie: the smaller index ranks first
eff_seq = np.array([[512, 4096, 16384, 131072], [2048, 8192, 65536, 70000]], dtype=np.int32)
idx = np.empty((B, T, K), dtype=np.int32)
cand = np.arange(C)
for b in range(B):
    for t in range(T):
        order = np.lexsort((cand, -scores[b, t].astype(np.float64)))
        idx[b, t] = order[:K]
np.save(os.path.join(here, "scores.npy"), scores)
np.save(os.path.join(here, "eff_seq.npy"), eff_seq)
np.save(os.path.join(here, "idx_golden.npy"), idx)
