"""Inputs and NumPy goldens for nn.wsp (every kernel of std.nn), in f64 from the inputs as
stored (f16 and bf16 inputs are rounded first; bf16 files hold bit patterns)."""
import os
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
R, C = 64, 128
rng = np.random.default_rng(71)


def f32(a):
    return np.asarray(a, dtype=np.float32)


def bf16_bits(a):
    """Round f32 to bfloat16 (nearest, ties to even); the raw bits as uint16."""
    b = f32(a).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def save(name, a):
    np.save(os.path.join(here, name + ".npy"), a)


x = f32(rng.standard_normal((R, C)))
x2 = f32(rng.standard_normal((R, C)))
w = f32(rng.standard_normal((1, C)))
b = f32(rng.standard_normal((1, C)))
wm = f32(rng.standard_normal((C, C)) / np.sqrt(C))
wk = f32(rng.standard_normal((2, C, C)) / np.sqrt(C))
xk = f32(rng.standard_normal((R, 2 * C)) * 3)
pos = np.arange(R)[:, None] * (1.0 / 10000 ** (np.arange(C // 2) / (C // 2)))[None, :]
cos = f32(np.cos(np.concatenate([pos, pos], axis=1)))
sin = f32(np.sin(np.concatenate([pos, pos], axis=1)))
for n, a in [("x", x), ("x2", x2), ("w", w), ("b", b), ("wm", wm), ("wk", wk), ("xk", xk),
             ("cos", cos), ("sin", sin)]:
    save(n, a)
    save(n + "_h", a.astype(np.float16))
for n, a in [("x", x), ("wm", wm), ("wk", wk), ("xk", xk)]:
    save(n + "_b", bf16_bits(a))


def rmsnorm(x, w, eps=1e-6):
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps) * w


def layernorm(x, w, b, eps=1e-5):
    d = x - x.mean(axis=1, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=1, keepdims=True) + eps) * w + b


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def silu(x):
    return x / (1 + np.exp(-x))


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def rope(x, c, s):
    h = C // 2
    return np.concatenate([x[:, :h] * c[:, :h] - x[:, h:] * s[:, :h],
                           x[:, h:] * c[:, h:] + x[:, :h] * s[:, h:]], axis=1)


def goldens(tag, x, x2, w, b, wm, wk, xk, cos, sin):
    g = {
        "rmsnorm": rmsnorm(x, w), "layernorm": layernorm(x, w, b), "softmax": softmax(x),
        "add": x + x2, "rope": rope(x, cos, sin), "swiglu": silu(x) * x2,
        "linear": x @ wm, "linear_acc": xk[:, :C] @ wk[0] + xk[:, C:] @ wk[1],
    }
    if tag == "":
        g.update({"silu": silu(x), "gelu": gelu(x), "relu": np.maximum(x, 0),
                  "linear_gelu": gelu(x @ wm), "online_softmax": softmax(xk)})
    for n, a in g.items():
        save(f"{n}{tag}_golden", f32(a))


d = lambda a: a.astype(np.float64)
h = lambda a: a.astype(np.float16).astype(np.float64)
goldens("", d(x), d(x2), d(w), d(b), d(wm), d(wk), d(xk), d(cos), d(sin))
goldens("_h", h(x), h(x2), h(w), h(b), h(wm), h(wk), h(xk), h(cos), h(sin))
bx, bwm, bwk, bxk = (bf16_value(bf16_bits(a)) for a in (x, wm, wk, xk))
save("linear_b_golden", f32(bx @ bwm))
save("linear_acc_b_golden", f32(bxk[:, :C] @ bwk[0] + bxk[:, C:] @ bwk[1]))
