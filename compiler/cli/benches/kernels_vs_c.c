/* The same loops as the std kernels (and the kernels of kernels_vs_c.wsp), written as a C
 * programmer would, on row-major contiguous tiles. The benchmark kernels_vs_c.rs builds this
 * file twice (gcc -O2, and gcc -O3 -march=native) and runs
 *
 *     kernels_vs_c NAME CALLS
 *
 * which calls kernel NAME CALLS times on its own buffers (after a tenth as many to warm up)
 * and prints the nanoseconds per call. Shapes: 64-row tiles of 128 columns (TR × D), 8
 * experts keeping 2, and the extra kernels' own shapes. Buffers hold values in [-1, 1). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TR = 64, D = 128, E = 8, TOPK = 2, NBUF = 6, BUFLEN = 128 * 256 };

static float bufs[NBUF][BUFLEN] __attribute__((aligned(64)));

#define NOINLINE __attribute__((noinline))

/* c[m×n] (+)= a[m×k] · b[k×n], i-p-j order. */
static inline void mm(const float *a, const float *b, float *c, int m, int k, int n, int acc) {
    for (int i = 0; i < m; i++) {
        if (!acc)
            for (int j = 0; j < n; j++) c[i * n + j] = 0.0f;
        for (int p = 0; p < k; p++) {
            float av = a[i * k + p];
            for (int j = 0; j < n; j++) c[i * n + j] += av * b[p * n + j];
        }
    }
}

static inline float silu(float x) { return x * (1.0f / (1.0f + expf(-x))); }

/* Row softmax of x[rows×cols] into y: e = exp(x − max), y = e / Σe. */
static inline void softmax_rows(const float *x, float *y, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -INFINITY;
        for (int c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        float s = 0.0f;
        for (int c = 0; c < cols; c++) {
            yr[c] = expf(xr[c] - m);
            s += yr[c];
        }
        for (int c = 0; c < cols; c++) yr[c] = yr[c] / s;
    }
}

NOINLINE static void k_rmsnorm(float **b) {
    const float *x = b[0], *w = b[1];
    float *out = b[2];
    for (int r = 0; r < TR; r++) {
        float ss = 0.0f;
        for (int c = 0; c < D; c++) ss += x[r * D + c] * x[r * D + c];
        float inv = 1.0f / sqrtf(ss / D + 1e-6f);
        for (int c = 0; c < D; c++) out[r * D + c] = x[r * D + c] * inv * w[c];
    }
}

NOINLINE static void k_layernorm(float **b) {
    const float *x = b[0], *w = b[1], *bb = b[2];
    float *out = b[3];
    for (int r = 0; r < TR; r++) {
        const float *xr = x + r * D;
        float s = 0.0f;
        for (int c = 0; c < D; c++) s += xr[c];
        float mean = s / D, v = 0.0f;
        for (int c = 0; c < D; c++) v += (xr[c] - mean) * (xr[c] - mean);
        float inv = 1.0f / sqrtf(v / D + 1e-5f);
        for (int c = 0; c < D; c++) out[r * D + c] = (xr[c] - mean) * inv * w[c] + bb[c];
    }
}

NOINLINE static void k_softmax(float **b) { softmax_rows(b[0], b[1], TR, D); }

NOINLINE static void k_add(float **b) {
    for (int i = 0; i < TR * D; i++) b[2][i] = b[0][i] + b[1][i];
}

NOINLINE static void k_linear(float **b) { mm(b[0], b[1], b[2], TR, D, D, 0); }
NOINLINE static void k_linear_acc(float **b) { mm(b[0], b[1], b[2], TR, D, D, 1); }

NOINLINE static void k_silu_tile(float **b) {
    for (int i = 0; i < TR * D; i++) b[1][i] = silu(b[0][i]);
}

NOINLINE static void k_gelu_tile(float **b) {
    for (int i = 0; i < TR * D; i++) {
        float x = b[0][i];
        b[1][i] = 0.5f * x * (1.0f + tanhf(0.7978846f * (x + 0.044715f * x * x * x)));
    }
}

NOINLINE static void k_relu_tile(float **b) {
    for (int i = 0; i < TR * D; i++) b[1][i] = b[0][i] > 0.0f ? b[0][i] : 0.0f;
}

NOINLINE static void k_swiglu(float **b) {
    for (int i = 0; i < TR * D; i++) b[2][i] = silu(b[0][i]) * b[1][i];
}

NOINLINE static void k_rope(float **b) {
    const float *x = b[0], *co = b[1], *si = b[2];
    float *out = b[3];
    const int h = D / 2;
    for (int r = 0; r < TR; r++)
        for (int c = 0; c < h; c++) {
            int i = r * D + c;
            out[i] = x[i] * co[i] - x[i + h] * si[i];
            out[i + h] = x[i + h] * co[i + h] + x[i] * si[i + h];
        }
}

NOINLINE static void k_attention_tile(float **b) {
    const float *q = b[0], *kt = b[1], *v = b[2];
    float *out = b[3], *s = b[4], *p = b[5];
    mm(q, kt, s, TR, D, TR, 0);
    const float scale = 1.0f / sqrtf((float)D);
    for (int i = 0; i < TR * TR; i++) s[i] *= scale;
    softmax_rows(s, p, TR, TR);
    mm(p, v, out, TR, TR, D, 0);
}

NOINLINE static void k_attn_init(float **b) {
    for (int r = 0; r < TR; r++) {
        b[0][r] = -1e30f;
        b[1][r] = 0.0f;
    }
    for (int i = 0; i < TR * D; i++) b[2][i] = 0.0f;
}

NOINLINE static void k_attn_score(float **b) {
    const float *q = b[0], *k = b[1];
    float *s = b[2];
    const float scale = 1.0f / sqrtf((float)D);
    for (int i = 0; i < TR; i++)
        for (int j = 0; j < TR; j++) {
            float acc = 0.0f;
            for (int d = 0; d < D; d++) acc += q[i * D + d] * k[j * D + d];
            s[i * TR + j] = acc * scale;
        }
}

NOINLINE static void k_attn_softmax(float **b) {
    const float *s = b[0];
    float *m = b[1], *l = b[2], *p = b[3], *c = b[4];
    for (int r = 0; r < TR; r++) {
        float mx = m[r];
        for (int j = 0; j < TR; j++) mx = s[r * TR + j] > mx ? s[r * TR + j] : mx;
        float sum = 0.0f;
        for (int j = 0; j < TR; j++) {
            p[r * TR + j] = expf(s[r * TR + j] - mx);
            sum += p[r * TR + j];
        }
        c[r] = expf(m[r] - mx);
        l[r] = l[r] * c[r] + sum;
        m[r] = mx;
    }
}

NOINLINE static void k_attn_output(float **b) {
    const float *p = b[0], *v = b[1], *c = b[2];
    float *o = b[3];
    for (int i = 0; i < TR; i++) {
        for (int j = 0; j < D; j++) o[i * D + j] *= c[i];
        for (int k = 0; k < TR; k++) {
            float pv = p[i * TR + k];
            for (int j = 0; j < D; j++) o[i * D + j] += pv * v[k * D + j];
        }
    }
}

NOINLINE static void k_attn_normalize(float **b) {
    for (int r = 0; r < TR; r++)
        for (int c = 0; c < D; c++) b[2][r * D + c] = b[0][r * D + c] / b[1][r];
}

NOINLINE static void k_decode_split(float **b) {
    const float *q = b[0], *kt = b[1], *v = b[2];
    float *m = b[3], *l = b[4], *o = b[5];
    float s[TR];
    const float scale = 1.0f / sqrtf((float)D);
    for (int j = 0; j < TR; j++) s[j] = 0.0f;
    for (int d = 0; d < D; d++)
        for (int j = 0; j < TR; j++) s[j] += q[d] * kt[d * TR + j];
    float mx = -INFINITY;
    for (int j = 0; j < TR; j++) {
        s[j] *= scale;
        mx = s[j] > mx ? s[j] : mx;
    }
    float sum = 0.0f;
    for (int j = 0; j < TR; j++) {
        s[j] = expf(s[j] - mx);
        sum += s[j];
    }
    m[0] = mx;
    l[0] = sum;
    for (int c = 0; c < D; c++) o[c] = 0.0f;
    for (int j = 0; j < TR; j++)
        for (int c = 0; c < D; c++) o[c] += s[j] * v[j * D + c];
}

NOINLINE static void k_decode_merge(float **b) {
    enum { S = 16 };
    const float *m = b[0], *l = b[1], *o = b[2];
    float *out = b[3];
    float mx = -INFINITY, w[S], sum = 0.0f;
    for (int i = 0; i < S; i++) mx = m[i] > mx ? m[i] : mx;
    for (int i = 0; i < S; i++) {
        w[i] = expf(m[i] - mx);
        sum += l[i] * w[i];
    }
    for (int c = 0; c < D; c++) {
        float acc = 0.0f;
        for (int i = 0; i < S; i++) acc += o[i * D + c] * w[i];
        out[c] = acc / sum;
    }
}

NOINLINE static void k_route(float **b) {
    const float *x = b[0], *wg = b[1];
    float *wt = b[2], *logits = b[4];
    int32_t *ex = (int32_t *)b[3];
    mm(x, wg, logits, TR, D, E, 0);
    for (int r = 0; r < TR; r++) {
        const float *lr = logits + r * E;
        float v[TOPK];
        int idx[TOPK];
        int n = 0;
        for (int e = 0; e < E; e++) {
            int pos = n;
            while (pos > 0 && lr[e] > v[pos - 1]) pos--;
            if (pos >= TOPK) continue;
            for (int j = (n < TOPK ? n : TOPK - 1); j > pos; j--) {
                v[j] = v[j - 1];
                idx[j] = idx[j - 1];
            }
            v[pos] = lr[e];
            idx[pos] = e;
            if (n < TOPK) n++;
        }
        float mx = v[0] > v[1] ? v[0] : v[1], s = 0.0f, ev[TOPK];
        for (int j = 0; j < TOPK; j++) {
            ev[j] = expf(v[j] - mx);
            s += ev[j];
        }
        for (int j = 0; j < TOPK; j++) {
            wt[r * TOPK + j] = ev[j] / s;
            ex[r * TOPK + j] = idx[j];
        }
    }
}

NOINLINE static void k_expert_up(float **b) {
    mm(b[0], b[1], b[2], TR, D, D, 0);
    for (int i = 0; i < TR * D; i++) b[2][i] = silu(b[2][i]);
}

NOINLINE static void k_expert_down(float **b) { mm(b[0], b[1], b[2], TR, D, D, 0); }

NOINLINE static void k_scale_add(float **b) {
    for (int r = 0; r < TR; r++)
        for (int c = 0; c < D; c++) b[2][r * D + c] = b[2][r * D + c] + b[0][r * D + c] * b[1][r];
}

NOINLINE static void k_exp_chain(float **b) {
    for (int i = 0; i < 64 * 64; i++) b[1][i] = expf(b[0][i]) * 2.0f + b[0][i];
}

NOINLINE static void k_softmax_wide(float **b) { softmax_rows(b[0], b[1], 64, 256); }

NOINLINE static void k_matmul_64(float **b) { mm(b[0], b[1], b[2], 64, 64, 64, 0); }

/* f16 operands, f32 result: each operand widened where it is used. */
NOINLINE static void k_matmul_f16(float **b) {
    const _Float16 *a = (const _Float16 *)b[0], *bb = (const _Float16 *)b[1];
    float *c = b[2];
    enum { N = 128 };
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < N; j++) c[i * N + j] = 0.0f;
        for (int p = 0; p < N; p++) {
            float av = (float)a[i * N + p];
            for (int j = 0; j < N; j++) c[i * N + j] += av * (float)bb[p * N + j];
        }
    }
}

NOINLINE static void k_linear_gelu(float **b) {
    mm(b[0], b[1], b[2], TR, D, D, 0);
    for (int i = 0; i < TR * D; i++) {
        float x = b[2][i];
        b[2][i] = 0.5f * x * (1.0f + tanhf(0.7978846f * (x + 0.044715f * x * x * x)));
    }
}

NOINLINE static void k_softmax_stats(float **b) {
    const float *x = b[0];
    float *m = b[1], *l = b[2];
    for (int r = 0; r < TR; r++) {
        float mx = m[r];
        for (int c = 0; c < D; c++) mx = x[r * D + c] > mx ? x[r * D + c] : mx;
        float s = 0.0f;
        for (int c = 0; c < D; c++) s += expf(x[r * D + c] - mx);
        l[r] = l[r] * expf(m[r] - mx) + s;
        m[r] = mx;
    }
}

NOINLINE static void k_softmax_apply(float **b) {
    const float *x = b[0], *m = b[1], *l = b[2];
    float *out = b[3];
    for (int r = 0; r < TR; r++)
        for (int c = 0; c < D; c++) out[r * D + c] = expf(x[r * D + c] - m[r]) / l[r];
}

NOINLINE static void k_attn_score_causal(float **b) {
    const float *q = b[0], *k = b[1];
    float *s = b[2];
    const float scale = 1.0f / sqrtf((float)D);
    for (int i = 0; i < TR; i++) {
        for (int j = 0; j <= i; j++) {
            float acc = 0.0f;
            for (int d = 0; d < D; d++) acc += q[i * D + d] * k[j * D + d];
            s[i * TR + j] = acc * scale;
        }
        for (int j = i + 1; j < TR; j++) s[i * TR + j] = -1e30f;
    }
}

/* std.nn's f16 forms: f16 tiles, every sum and product in f32, one rounding on the store. */
NOINLINE static void k_rmsnorm_f16(float **b) {
    const _Float16 *x = (const _Float16 *)b[0], *w = (const _Float16 *)b[1];
    _Float16 *out = (_Float16 *)b[2];
    for (int r = 0; r < TR; r++) {
        float ss = 0.0f;
        for (int c = 0; c < D; c++) {
            float v = (float)x[r * D + c];
            ss += v * v;
        }
        float inv = 1.0f / sqrtf(ss / D + 1e-6f);
        for (int c = 0; c < D; c++) out[r * D + c] = (_Float16)((float)x[r * D + c] * inv * (float)w[c]);
    }
}

NOINLINE static void k_softmax_f16(float **b) {
    const _Float16 *x = (const _Float16 *)b[0];
    _Float16 *y = (_Float16 *)b[1];
    float e[D];
    for (int r = 0; r < TR; r++) {
        float m = -INFINITY;
        for (int c = 0; c < D; c++) m = (float)x[r * D + c] > m ? (float)x[r * D + c] : m;
        float s = 0.0f;
        for (int c = 0; c < D; c++) {
            e[c] = expf((float)x[r * D + c] - m);
            s += e[c];
        }
        for (int c = 0; c < D; c++) y[r * D + c] = (_Float16)(e[c] / s);
    }
}

/* c += a · b with f16 operands, accumulated in f32. */
static inline void mm_f16(const _Float16 *a, const _Float16 *bb, float *c, int m, int k, int n) {
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++) {
            float av = (float)a[i * k + p];
            for (int j = 0; j < n; j++) c[i * n + j] += av * (float)bb[p * n + j];
        }
}

NOINLINE static void k_linear_f16(float **b) {
    static float acc[TR * D];
    for (int i = 0; i < TR * D; i++) acc[i] = 0.0f;
    mm_f16((const _Float16 *)b[0], (const _Float16 *)b[1], acc, TR, D, D);
    _Float16 *out = (_Float16 *)b[2];
    for (int i = 0; i < TR * D; i++) out[i] = (_Float16)acc[i];
}

NOINLINE static void k_linear_acc_f16(float **b) {
    mm_f16((const _Float16 *)b[0], (const _Float16 *)b[1], b[2], TR, D, D);
}

static const struct {
    const char *name;
    void (*f)(float **);
} KERNELS[] = {
    {"rmsnorm", k_rmsnorm},
    {"layernorm", k_layernorm},
    {"softmax", k_softmax},
    {"add", k_add},
    {"linear", k_linear},
    {"linear_acc", k_linear_acc},
    {"silu_tile", k_silu_tile},
    {"gelu_tile", k_gelu_tile},
    {"relu_tile", k_relu_tile},
    {"swiglu", k_swiglu},
    {"rope", k_rope},
    {"linear_gelu", k_linear_gelu},
    {"softmax_stats", k_softmax_stats},
    {"softmax_apply", k_softmax_apply},
    {"attention_tile", k_attention_tile},
    {"attn_init", k_attn_init},
    {"attn_score", k_attn_score},
    {"attn_score_causal", k_attn_score_causal},
    {"attn_softmax", k_attn_softmax},
    {"attn_output", k_attn_output},
    {"attn_normalize", k_attn_normalize},
    {"decode_split", k_decode_split},
    {"decode_merge", k_decode_merge},
    {"route", k_route},
    {"expert_up", k_expert_up},
    {"expert_down", k_expert_down},
    {"scale_add", k_scale_add},
    {"exp_chain", k_exp_chain},
    {"softmax_wide", k_softmax_wide},
    {"matmul_64", k_matmul_64},
    {"matmul_f16", k_matmul_f16},
    {"rmsnorm_f16", k_rmsnorm_f16},
    {"softmax_f16", k_softmax_f16},
    {"linear_f16", k_linear_f16},
    {"linear_acc_f16", k_linear_acc_f16},
};

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s NAME CALLS\n", argv[0]);
        return 2;
    }
    void (*f)(float **) = NULL;
    for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
        if (strcmp(KERNELS[i].name, argv[1]) == 0) f = KERNELS[i].f;
    if (!f) {
        fprintf(stderr, "no kernel `%s`\n", argv[1]);
        return 2;
    }
    long calls = atol(argv[2]);
    uint32_t seed = 12345;
    float *ptrs[NBUF];
    for (int k = 0; k < NBUF; k++) {
        ptrs[k] = bufs[k];
        for (int i = 0; i < BUFLEN; i++) {
            seed = seed * 1664525u + 1013904223u;
            bufs[k][i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
        }
    }
    /* The kernels' f16 buffers (a bit per argument), filled from the upper half's values. */
    static const struct {
        const char *name;
        unsigned f16;
    } HALF[] = {
        {"matmul_f16", 3}, {"rmsnorm_f16", 7}, {"softmax_f16", 3},
        {"linear_f16", 7}, {"linear_acc_f16", 3},
    };
    for (size_t i = 0; i < sizeof HALF / sizeof HALF[0]; i++)
        if (strcmp(argv[1], HALF[i].name) == 0)
            for (int k = 0; k < NBUF; k++)
                if (HALF[i].f16 >> k & 1) {
                    _Float16 *h = (_Float16 *)bufs[k];
                    for (int j = 0; j < BUFLEN / 2; j++) h[j] = (_Float16)bufs[k][BUFLEN / 2 + j];
                }
    for (long i = 0; i < calls / 10 + 1; i++) {
        f(ptrs);
        __asm__ volatile("" ::: "memory");
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < calls; i++) {
        f(ptrs);
        __asm__ volatile("" ::: "memory");
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    printf("%.3f\n", ns / (double)calls);
    return 0;
}
