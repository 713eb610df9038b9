/* wsp_runtime.h: the C ABI of the wsp runtime (crate wsp-runtime-capi, libwsp_runtime_capi.a).
 *
 * The same submit API the JIT's orchestration drives: register kernels, add tensors, submit
 * tasks with their region arguments; the runtime infers the dependencies (RAW, WAR, WAW between
 * overlapping regions), runs the kernels in dependency order on its own tensor buffers and keeps
 * the modeled clock of the architecture model. Link with -lpthread -ldl -lm.
 *
 * Conventions:
 *  - Every function returns WSP_RT_OK (0) or a WSP_RT_ERR_* code; on an error the handle keeps
 *    a message, wsp_rt_last_error(). Null pointers are refused (WSP_RT_ERR_NULL), never
 *    dereferenced; a panic inside the runtime is caught and reported (WSP_RT_ERR_PANIC).
 *  - A handle starts in its configuration phase (wsp_rt_set_*). The first call that needs the
 *    runtime (adding a tensor, a kernel or a channel; submitting) builds it from the
 *    configuration; wsp_rt_start builds it explicitly. Setters after that fail (WSP_RT_ERR_STATE).
 *  - Strings returned by the handle (wsp_rt_last_error, wsp_rt_stats_json, wsp_rt_dot,
 *    wsp_rt_deadlock_report) belong to it and stay valid until the next call returning the
 *    same kind of string, or wsp_rt_destroy.
 *  - A handle is used from one thread at a time (kernels may run on the runtime's own threads).
 */
#ifndef WSP_RUNTIME_H
#define WSP_RUNTIME_H

#include <stdint.h>
#include "wsp_task.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WSP_RT_OK 0
#define WSP_RT_ERR_NULL 1      /* a required pointer argument was null */
#define WSP_RT_ERR_ARG 2       /* an invalid argument (a bad region, an unknown name or id) */
#define WSP_RT_ERR_STATE 3     /* a call out of phase (a setter after the runtime started) */
#define WSP_RT_ERR_KERNEL 4    /* a kernel entry returned nonzero */
#define WSP_RT_ERR_DEADLOCK 5  /* nothing can run: see wsp_rt_deadlock_report */
#define WSP_RT_ERR_LIMIT 6     /* the run reached its task or cycle limit */
#define WSP_RT_ERR_PROCESS 7   /* a process step failed */
#define WSP_RT_ERR_PANIC 8     /* the runtime panicked (a bug): the handle should be destroyed */
#define WSP_RT_ERR_WINDOW 9    /* the task window was full and its mode is abort (task_window(n, 1)) */

/* The opaque runtime handle. */
typedef struct wsp_rt wsp_rt;
/* What a process step receives: submit tasks, read what its last receive produced. */
typedef struct wsp_rt_proc wsp_rt_proc;

/* One region argument of a task: along dimension d (< rank) it covers the indices
 * offsets[d] + strides[d] * i for 0 <= i < extents[d] of tensor `tensor`. Offsets >= 0,
 * extents >= 1, strides >= 1; entries past `rank` are ignored. */
struct wsp_rt_arg {
    uint32_t tensor;
    uint32_t rank;
    int64_t offsets[WSP_MAX_RANK];
    int64_t extents[WSP_MAX_RANK];
    int64_t strides[WSP_MAX_RANK];
    uint32_t dir;                    /* WSP_DIR_IN, WSP_DIR_OUT, WSP_DIR_INOUT */
};

/* A task as submitted. */
struct wsp_rt_task {
    uint32_t kernel;                 /* from wsp_rt_register_kernel */
    const int64_t *coords;           /* may be null when ncoords is 0 */
    uint64_t ncoords;
    const struct wsp_rt_arg *args;   /* may be null when nargs is 0 */
    uint64_t nargs;
    const int64_t *scalars;          /* passed to the kernel as given; may be null when 0 */
    uint64_t nscalars;
    uint64_t cycles;                 /* compute cycles from the architecture model */
    int64_t key;                     /* dispatch key (affinity, hash); 0 when unused */
    int64_t priority;                /* ready-order key (priority: higher first) */
    int64_t stream;                  /* stream key (streams(n): stream = key mod n) */
};

/* What a run measured. */
struct wsp_rt_stats {
    uint64_t tasks;
    uint64_t edges;
    uint64_t total_cycles;
};

/* ---- creation and configuration ---- */

/* A runtime for a built-in architecture model (`ascend910b`, `ascend950`, `pto_wsp_v9`, ...), or,
 * when model_toml is not null, for the model that TOML text describes (arch_name then names it
 * in errors). On an error *out is null and the message is written, truncated, to err_buf when
 * it is not null. */
int32_t wsp_rt_create(const char *arch_name, const char *model_toml, wsp_rt **out,
                      char *err_buf, uint64_t err_len);
void wsp_rt_destroy(wsp_rt *rt);

/* The task window (tasks in flight; the other rings are sized from it). Default 1024. */
int32_t wsp_rt_set_task_window(wsp_rt *rt, uint32_t window);
/* Host threads running kernels (1: on the orchestrating thread; the default). */
int32_t wsp_rt_set_threads(wsp_rt *rt, uint32_t threads);
/* A schedule policy by form name with integer arguments, as the runtime's policy registry
 * knows them: round_robin(n), affinity, by, hash, work_steal, fifo, lifo, priority, immediate,
 * batched(n), interleaved(n), rate_limit(n), task_window(n), task_window(n, mode) (mode 0 stall,
 * 1 abort, 2 benchmark), streams(n). */
int32_t wsp_rt_set_policy(wsp_rt *rt, const char *form, const uint32_t *args, uint32_t nargs);
/* The most region arguments a task has: grows the tensor map so one task always fits. */
int32_t wsp_rt_fit_region_args(wsp_rt *rt, uint32_t nargs);
/* Record the task graph and a trace (for wsp_rt_dot); memory grows with the task count. */
int32_t wsp_rt_set_record(wsp_rt *rt, int32_t record);
/* 0: timing only (kernels are not run, tensors have no buffers). Default 1. */
int32_t wsp_rt_set_execute(wsp_rt *rt, int32_t execute);
/* Stop the run instead of submitting more tasks or passing this cycle (0: no limit). */
int32_t wsp_rt_set_limits(wsp_rt *rt, uint64_t max_tasks, uint64_t max_cycles);
/* Builds the runtime from the configuration (else the first call that needs it does). */
int32_t wsp_rt_start(wsp_rt *rt);

/* ---- kernels and tensors ---- */

/* Registers a kernel of a core class (`cube`, `vector`, `aicpu`); its id in *out (0, 1, ...). */
int32_t wsp_rt_register_kernel(wsp_rt *rt, const char *name, wsp_kernel_fn entry,
                               const char *core_class, uint32_t *out);
/* Adds a tensor of rank dims (row-major), elem_size bytes an element; `data` (nbytes, exactly
 * the tensor's size) is its initial contents, or null for zeros. Its id in *out (0, 1, ...). */
int32_t wsp_rt_add_tensor(wsp_rt *rt, uint64_t elem_size, const int64_t *dims, uint32_t rank,
                          const void *data, uint64_t nbytes, uint32_t *out);
/* A tensor's size in bytes. */
int32_t wsp_rt_tensor_size(wsp_rt *rt, uint32_t tensor, uint64_t *out);
/* Copies nbytes of a tensor's current contents from byte `offset` to dst. Wait for its
 * producers first (wsp_rt_wait_tensor) to read what they computed. */
int32_t wsp_rt_read_tensor(wsp_rt *rt, uint32_t tensor, uint64_t offset, void *dst,
                           uint64_t nbytes);

/* ---- submission ---- */

/* Submits a task from the main orchestration; its sequence number in *out when not null.
 * Stalls (advancing the modeled clock) while a bounded ring is full. */
int32_t wsp_rt_submit(wsp_rt *rt, const struct wsp_rt_task *task, uint64_t *out);
/* Waits until every task submitted so far that writes the tensor has completed. */
int32_t wsp_rt_wait_tensor(wsp_rt *rt, uint32_t tensor);
/* Waits until every task submitted so far has completed (a `sequential` boundary). */
int32_t wsp_rt_wait_all(wsp_rt *rt);
/* Scopes: intermediates of wsp_rt_alloc_tensor live until their scope ends and its tasks retire. */
int32_t wsp_rt_scope_begin(wsp_rt *rt);
/* A scope that bounds its allocations' lifetime alone: its tasks retire as they complete, and
 * what it allocated is freed once it has ended and the tasks submitted before then have retired
 * (a workload block's local tensor). Ended by wsp_rt_scope_end. */
int32_t wsp_rt_alloc_scope_begin(wsp_rt *rt);
int32_t wsp_rt_scope_end(wsp_rt *rt);
int32_t wsp_rt_alloc_tensor(wsp_rt *rt, uint64_t elem_size, const int64_t *dims, uint32_t rank,
                            uint32_t *out);
/* Program structure for the pto_wsp_v9 clock (a loop: begin, step between iterations, end;
 * seq = 1 for a sequential group). The event clock ignores it. */
int32_t wsp_rt_order_begin(wsp_rt *rt, int32_t seq);
int32_t wsp_rt_order_step(wsp_rt *rt);
int32_t wsp_rt_order_end(wsp_rt *rt);

/* ---- channels and processes ---- */

/* A channel of `depth` tokens (0: rendezvous); latency < 0: the model's channel latency. */
int32_t wsp_rt_add_channel(wsp_rt *rt, const char *name, uint32_t depth, int64_t latency,
                           uint32_t *out);

#define WSP_STEP_CONTINUE 0
#define WSP_STEP_SEND 1
#define WSP_STEP_RECV 2
#define WSP_STEP_FINISHED 3

/* What a process step wants next (its callback fills it). */
struct wsp_rt_step {
    uint32_t kind;                   /* WSP_STEP_* */
    uint32_t channel;                /* SEND, RECV */
    uint32_t token_len;              /* SEND: values in token (at most WSP_MAX_RANK) */
    int64_t token[WSP_MAX_RANK];
    int32_t has_after;               /* SEND: deliver the token once task `after` completes */
    uint64_t after;
};

/* One step of a process: returns 0 and fills *step, or nonzero to fail the run. */
typedef int32_t (*wsp_rt_step_fn)(void *user, wsp_rt_proc *cx, struct wsp_rt_step *step);

struct wsp_rt_process {
    const char *name;
    wsp_rt_step_fn step;
    void *user;
    const uint32_t *produces;        /* the channels it produces (closed when all finish) */
    uint32_t nproduces;
};

/* Runs processes to completion on the event clock. */
int32_t wsp_rt_run_processes(wsp_rt *rt, const struct wsp_rt_process *procs, uint32_t nprocs);

/* Inside a step: submit a task from this process. */
int32_t wsp_rt_proc_submit(wsp_rt_proc *cx, const struct wsp_rt_task *task, uint64_t *out);
/* Inside a step: what the last RECV produced, taken once. *status: 0 nothing, 1 a token
 * (token_len values in token, which holds WSP_MAX_RANK), 2 the channel is closed and empty. */
int32_t wsp_rt_proc_received(wsp_rt_proc *cx, int32_t *status, int64_t *token,
                             uint32_t *token_len);
/* Inside a step: wait for a tensor's producers, and read it; wait for every task so far. */
int32_t wsp_rt_proc_wait_tensor(wsp_rt_proc *cx, uint32_t tensor);
int32_t wsp_rt_proc_wait_all(wsp_rt_proc *cx);
int32_t wsp_rt_proc_read_tensor(wsp_rt_proc *cx, uint32_t tensor, uint64_t offset, void *dst,
                                uint64_t nbytes);

/* ---- the end of a run ---- */

/* Drains every pending task; the run's statistics in *out when not null. */
int32_t wsp_rt_finish(wsp_rt *rt, struct wsp_rt_stats *out);
/* The statistics so far as JSON (the runtime's Stats), the task graph as DOT (needs record),
 * the report of the deadlock that stopped the run (empty when none), the last error. */
const char *wsp_rt_stats_json(wsp_rt *rt);
const char *wsp_rt_dot(wsp_rt *rt);
const char *wsp_rt_deadlock_report(wsp_rt *rt);
const char *wsp_rt_last_error(const wsp_rt *rt);

#ifdef __cplusplus
}
#endif

#endif /* WSP_RUNTIME_H */
