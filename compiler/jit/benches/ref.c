/* The reference loops the JIT is measured against (compiled with gcc -O2 by build.rs). */
#include <stddef.h>

/* out = max(x*y + x, 0) - 0.5*y over n elements. */
void wsp_ref_chain(const float *x, const float *y, float *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float a = x[i] * y[i] + x[i];
        a = a > 0.0f ? a : 0.0f;
        out[i] = a - 0.5f * y[i];
    }
}

/* Row sums of a rows x cols matrix. */
void wsp_ref_rowsum(const float *x, float *out, size_t rows, size_t cols) {
    for (size_t r = 0; r < rows; r++) {
        float s = 0.0f;
        for (size_t c = 0; c < cols; c++) s += x[r * cols + c];
        out[r] = s;
    }
}

/* Row maxima. */
void wsp_ref_rowmax(const float *x, float *out, size_t rows, size_t cols) {
    for (size_t r = 0; r < rows; r++) {
        float m = -__builtin_inff();
        for (size_t c = 0; c < cols; c++) m = x[r * cols + c] > m ? x[r * cols + c] : m;
        out[r] = m;
    }
}

/* c = a (m x k) * b (k x n). */
void wsp_ref_matmul(const float *a, const float *b, float *c, size_t m, size_t k, size_t n) {
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) c[i * n + j] = 0.0f;
        for (size_t p = 0; p < k; p++) {
            float av = a[i * k + p];
            for (size_t j = 0; j < n; j++) c[i * n + j] += av * b[p * n + j];
        }
    }
}
