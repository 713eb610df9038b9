// The Ascend implementation of the extern kernel `twice` (extern.wsp), written against the
// entry every emitted kernel has (docs/backends.md): one region per tile parameter, then per
// tile parameter two scalars, the tensor dimensions that are its rows and columns (-1: none).
// This one runs on the CPU build; 2·a is exact, as a + a is.
#include <stdint.h>
#include <wsp_task.h>

static int64_t element(const struct wsp_raw_arg *x, int64_t row_dim, int64_t col_dim, int64_t r,
                       int64_t c) {
    int64_t at = 0, stride = 1;
    for (int64_t d = (int64_t)x->rank - 1; d >= 0; --d) {
        int64_t step = d == row_dim ? r : d == col_dim ? c : 0;
        at += (x->offsets[d] + x->strides[d] * step) * stride;
        stride *= x->dims[d];
    }
    return at;
}

extern "C" int32_t wsp_kernel_twice(const struct wsp_raw_task *task) {
    if (task->nargs != 2 || task->nscalars != 4) return 1;
    const struct wsp_raw_arg *a = &task->args[0], *c = &task->args[1];
    if (a->elem_size != 4 || c->elem_size != 4) return 3;
    const int64_t *s = task->scalars;
    int64_t rows = s[2] >= 0 ? c->extents[s[2]] : 1, cols = s[3] >= 0 ? c->extents[s[3]] : 1;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < cols; ++k)
            ((float *)c->base)[element(c, s[2], s[3], r, k)] =
                2.0f * ((const float *)a->base)[element(a, s[0], s[1], r, k)];
    return 0;
}
