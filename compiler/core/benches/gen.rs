//! The generated workspace the speed benchmarks share (`wsp check` here, the language server
//! in `compiler/cli/benches/lsp.rs`).

/// A realistic module of about `lines` lines: constants, axes, tensors, kernels with
/// reductions and matmuls, workloads with P loops and views, and schedules.
pub fn module(index: usize, lines: usize) -> String {
    let mut s = format!(
        "// generated module {index}\nconst N{index} = 8\nconst T{index} = 16\naxis rows{index} = Dense[N{index}]\naxis tiles{index} = Dense[T{index}]\n"
    );
    let mut k = 0;
    while s.lines().count() < lines {
        s.push_str(&format!(
            "input X{index}_{k}: f32[N{index}, T{index}, 16, 64] = load(\"x{k}.npy\")
output Y{index}_{k}: f32[N{index}, T{index}, 16, 64]
tensor S{index}_{k}: f32[N{index}, 16, 1]

/// kernel {k} of module {index}
kernel k{index}_{k}(x: in f32[16, 64], w: in f32[64, 64], y: out f32[16, 64], eps: f32 = 1e-6) {{
    let h = matmul(x, w)
    let m = rowmax(h)
    let e = exp(h - m)
    let s = rowsum(e)
    var acc = full([16, 64], 0.0)
    for i in 0..4 {{
        acc = acc + e / s
    }}
    y = acc * rsqrt(rowmean(x * x) + eps)
}}

input W{index}_{k}: f32[64, 64] = load(\"w{k}.npy\")
workload w{index}_{k} {{
    for r, t in P(rows{index}, tiles{index}) {{
        k{index}_{k}[r, t](x: X{index}_{k}[r, t], w: W{index}_{k}, y: Y{index}_{k}[r, t])
    }}
}}

schedule s{index}_{k} = w{index}_{k}
    .dispatch(round_robin(4))
    .task_window(8192)

"
        ));
        k += 1;
    }
    s
}
