"""Golden data for llama_layer.wsp: one LLaMA decoder layer (rmsnorm, Q/K/V projections,
rotate-half RoPE, softmax attention over the whole sequence, output projection, residual,
rmsnorm, SwiGLU MLP, residual) in plain NumPy, f32 inputs, computed in f64.

`generate(out, S, D)` writes the inputs and the golden of S tokens of one D-wide head into
`out`; tests/std/llama/tiles_32x64/gen.py calls it for other sizes."""
import os
import numpy as np

EPS = 1e-6


def f32(a):
    return np.asarray(a, dtype=np.float32)


def generate(out, S=256, D=128, seed=31):
    rng = np.random.default_rng(seed)
    x = f32(rng.standard_normal((S, D)))
    w = {n: f32(rng.standard_normal((D, D)) / np.sqrt(D)) for n in ["wq", "wk", "wv", "wo", "wg", "wu", "wd"]}
    wn1 = f32(1.0 + 0.1 * rng.standard_normal((1, D)))
    wn2 = f32(1.0 + 0.1 * rng.standard_normal((1, D)))
    pos = np.arange(S)[:, None]
    inv = 10000.0 ** (-np.arange(D // 2) / (D // 2))
    ang = np.concatenate([pos * inv, pos * inv], axis=1)
    cos, sin = f32(np.cos(ang)), f32(np.sin(ang))

    def rmsnorm(a, g):
        return a / np.sqrt((a * a).mean(axis=1, keepdims=True) + EPS) * g

    def rope(a):
        h = D // 2
        a1, a2 = a[:, :h], a[:, h:]
        return np.concatenate([a1 * cos[:, :h] - a2 * sin[:, :h], a2 * cos[:, h:] + a1 * sin[:, h:]], axis=1)

    def silu(a):
        return a / (1.0 + np.exp(-a))

    X = x.astype(np.float64)
    W = {n: a.astype(np.float64) for n, a in w.items()}
    xn = rmsnorm(X, wn1)
    q, k, v = rope(xn @ W["wq"]), rope(xn @ W["wk"]), xn @ W["wv"]
    s = q @ k.T / np.sqrt(D)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    attn = (e / e.sum(axis=1, keepdims=True)) @ v
    h1 = X + attn @ W["wo"]
    hn = rmsnorm(h1, wn2)
    y = h1 + (silu(hn @ W["wg"]) * (hn @ W["wu"])) @ W["wd"]

    arrays = {"x": x, "wn1": wn1, "wn2": wn2, "cos": cos, "sin": sin, "y_golden": f32(y), **w}
    for name, a in arrays.items():
        np.save(os.path.join(out, f"{name}.npy"), a)


if __name__ == "__main__":
    generate(os.path.dirname(os.path.abspath(__file__)))
