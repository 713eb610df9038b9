"""Inputs and NumPy goldens for deepseek.wsp (every kernel of std.deepseek): a MoE layer with
DeepSeek-V3's sigmoid gate over 4 tiles of 64 tokens, and the lightning indexer's top-16 keys
for two query tiles (128 and 512 keys: the two selection tiers), in f64."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
T, R, H, E, K = 4, 64, 128, 8, 2
rng = np.random.default_rng(83)
save = lambda n, a: np.save(os.path.join(here, n + ".npy"), a)

# MoE with the sigmoid gate and a balancing bias.
x = rng.standard_normal((T * R, H)).astype(np.float32)
wg = (rng.standard_normal((H, E)) / np.sqrt(H)).astype(np.float32)
for b, es in [(0, [1, 3]), (1, [6]), (2, [0, 2, 5])]:
    x[b * R:(b + 1) * R] += 6.0 * wg[:, es].sum(axis=1) / np.sum(wg[:, es] ** 2)
bias = (rng.standard_normal((1, E)) * 0.05).astype(np.float32)
wu = (rng.standard_normal((E, H, H)) / np.sqrt(H)).astype(np.float32)
wd = (rng.standard_normal((E, H, H)) / np.sqrt(H)).astype(np.float32)
for n, a in [("x", x), ("wg", wg), ("bias", bias), ("wu", wu), ("wd", wd)]:
    save(n, a)
s = 1 / (1 + np.exp(-(x.astype(np.float64) @ wg.astype(np.float64))))
order = np.argsort(-(s + bias), axis=1, kind="stable")[:, :K]
g = np.take_along_axis(s, order, axis=1)
w = g / g.sum(axis=1, keepdims=True)
silu = lambda a: a / (1 + np.exp(-a))
y = np.zeros((T * R, H))
for t in range(T * R):
    for k in range(K):
        e = order[t, k]
        y[t] += w[t, k] * (silu(x[t].astype(np.float64) @ wu[e]) @ wd[e])
save("experts_golden", order.astype(np.int32))
save("weights_golden", w.astype(np.float32))
save("y_golden", y.astype(np.float32))

# Lightning indexer: 4 heads of 32, 512 keys, top 16; query tile 0 sees 128 keys, tile 1 all.
NQ, NK, HI, DI, TOPK = 2, 512, 4, 32, 16
lens = np.array([128, 512], dtype=np.int32)
qi = rng.standard_normal((NQ * R, HI * DI)).astype(np.float16)
ki = rng.standard_normal((NK, DI)).astype(np.float16)
wi = rng.random((NQ * R, HI)).astype(np.float32)
for n, a in [("lens", lens), ("qi", qi), ("ki", ki), ("wi", wi)]:
    save(n, a)
sc = np.zeros((NQ * R, NK))
for h in range(HI):
    qh = qi[:, h * DI:(h + 1) * DI].astype(np.float64)
    sc += wi[:, h:h + 1].astype(np.float64) * np.maximum(qh @ ki.astype(np.float64).T, 0)
top = np.zeros((NQ * R, TOPK), dtype=np.int32)
for i in range(NQ):
    rows = sc[i * R:(i + 1) * R, :lens[i]]
    top[i * R:(i + 1) * R] = np.argsort(-rows, axis=1, kind="stable")[:, :TOPK]
save("top_golden", top)
