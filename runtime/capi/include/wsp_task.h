/* wsp_task.h: what a kernel entry receives from the wsp runtime (C layout).
 *
 * This mirrors `wsp_runtime::api::{RawTask, RawArg}` field for field; a test of the runtime's C
 * ABI checks the sizes and offsets. A kernel entry is
 *
 *     int32_t entry(const struct wsp_raw_task *task);
 *
 * returning 0 on success, or a nonzero error code. It may write only through `out`/`inout`
 * arguments, and only inside their regions.
 */
#ifndef WSP_TASK_H
#define WSP_TASK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest rank of a region. */
#define WSP_MAX_RANK 8

/* Access direction of a region argument (`wsp_raw_arg.dir`). */
#define WSP_DIR_IN 0
#define WSP_DIR_OUT 1
#define WSP_DIR_INOUT 2

/* One region argument: a strided hyper-rectangle of a tensor. Along dimension d it covers the
 * indices offsets[d] + strides[d] * i for 0 <= i < extents[d]. Entries past `rank` are 1
 * (0 for offsets). */
struct wsp_raw_arg {
    uint8_t *base;                   /* the tensor's first byte */
    uint64_t elem_size;              /* bytes per element */
    uint64_t rank;
    int64_t dims[WSP_MAX_RANK];      /* the tensor's shape, row-major, in elements */
    int64_t offsets[WSP_MAX_RANK];
    int64_t extents[WSP_MAX_RANK];
    int64_t strides[WSP_MAX_RANK];
    uint64_t dir;                    /* WSP_DIR_* */
};

/* Everything a kernel entry receives. */
struct wsp_raw_task {
    uint64_t task;                   /* submission sequence number */
    const int64_t *coords;           /* the task's coordinates */
    uint64_t ncoords;
    const struct wsp_raw_arg *args;  /* one per tile parameter, in parameter order */
    uint64_t nargs;
    const int64_t *scalars;          /* scalar arguments: integers, or f64 bit patterns */
    uint64_t nscalars;
};

typedef int32_t (*wsp_kernel_fn)(const struct wsp_raw_task *task);

#ifdef __cplusplus
}
#endif

#endif /* WSP_TASK_H */
