/* Test harness of the runtime's C ABI (driven by tests/c_abi.rs).
 *
 *   harness layout        prints the sizes and offsets of the header's structs
 *   harness run FILE      submits the task list in FILE, prints stats, the DOT graph and a
 *                         checksum of every tensor
 *   harness demo          a small program: vector tiles, a wait and read-back, a pipeline of
 *                         two processes over a channel, and the error paths
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wsp_runtime.h"

#define CHECK(call)                                                                  \
    do {                                                                             \
        int32_t rc_ = (call);                                                        \
        if (rc_ != WSP_RT_OK) {                                                      \
            fprintf(stderr, "%s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #call, rc_, \
                    wsp_rt_last_error(rt));                                          \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define FIELD(s, f) printf(#s "." #f " %zu %zu\n", offsetof(struct s, f), sizeof(((struct s *)0)->f))

static int layout(void) {
    printf("wsp_raw_arg %zu\n", sizeof(struct wsp_raw_arg));
    FIELD(wsp_raw_arg, base);
    FIELD(wsp_raw_arg, elem_size);
    FIELD(wsp_raw_arg, rank);
    FIELD(wsp_raw_arg, dims);
    FIELD(wsp_raw_arg, offsets);
    FIELD(wsp_raw_arg, extents);
    FIELD(wsp_raw_arg, strides);
    FIELD(wsp_raw_arg, dir);
    printf("wsp_raw_task %zu\n", sizeof(struct wsp_raw_task));
    FIELD(wsp_raw_task, task);
    FIELD(wsp_raw_task, coords);
    FIELD(wsp_raw_task, ncoords);
    FIELD(wsp_raw_task, args);
    FIELD(wsp_raw_task, nargs);
    FIELD(wsp_raw_task, scalars);
    FIELD(wsp_raw_task, nscalars);
    printf("wsp_rt_arg %zu\n", sizeof(struct wsp_rt_arg));
    FIELD(wsp_rt_arg, tensor);
    FIELD(wsp_rt_arg, rank);
    FIELD(wsp_rt_arg, offsets);
    FIELD(wsp_rt_arg, extents);
    FIELD(wsp_rt_arg, strides);
    FIELD(wsp_rt_arg, dir);
    printf("wsp_rt_task %zu\n", sizeof(struct wsp_rt_task));
    FIELD(wsp_rt_task, kernel);
    FIELD(wsp_rt_task, coords);
    FIELD(wsp_rt_task, ncoords);
    FIELD(wsp_rt_task, args);
    FIELD(wsp_rt_task, nargs);
    FIELD(wsp_rt_task, scalars);
    FIELD(wsp_rt_task, nscalars);
    FIELD(wsp_rt_task, cycles);
    FIELD(wsp_rt_task, key);
    FIELD(wsp_rt_task, priority);
    FIELD(wsp_rt_task, stream);
    printf("wsp_rt_stats %zu\n", sizeof(struct wsp_rt_stats));
    FIELD(wsp_rt_stats, tasks);
    FIELD(wsp_rt_stats, edges);
    FIELD(wsp_rt_stats, total_cycles);
    printf("wsp_rt_step %zu\n", sizeof(struct wsp_rt_step));
    FIELD(wsp_rt_step, kind);
    FIELD(wsp_rt_step, channel);
    FIELD(wsp_rt_step, token_len);
    FIELD(wsp_rt_step, token);
    FIELD(wsp_rt_step, has_after);
    FIELD(wsp_rt_step, after);
    printf("wsp_rt_process %zu\n", sizeof(struct wsp_rt_process));
    FIELD(wsp_rt_process, name);
    FIELD(wsp_rt_process, step);
    FIELD(wsp_rt_process, user);
    FIELD(wsp_rt_process, produces);
    FIELD(wsp_rt_process, nproduces);
    return 0;
}

/* Visits every element of a region: its flat index in the tensor. */
static void region_elems(const struct wsp_raw_arg *a, void (*f)(const struct wsp_raw_arg *, int64_t, void *),
                         void *cx) {
    int64_t idx[WSP_MAX_RANK] = {0};
    uint64_t r = a->rank;
    for (;;) {
        int64_t flat = 0;
        for (uint64_t d = 0; d < r; d++) flat = flat * a->dims[d] + a->offsets[d] + a->strides[d] * idx[d];
        f(a, flat, cx);
        int64_t d = (int64_t)r - 1;
        while (d >= 0 && ++idx[d] == a->extents[d]) idx[d--] = 0;
        if (d < 0) return;
    }
}

static void sum_elem(const struct wsp_raw_arg *a, int64_t flat, void *cx) {
    uint64_t v;
    memcpy(&v, a->base + flat * 8, 8);
    *(uint64_t *)cx += v;
}

struct upd { uint64_t s; };
static void upd_elem(const struct wsp_raw_arg *a, int64_t flat, void *cx) {
    uint64_t v;
    memcpy(&v, a->base + flat * 8, 8);
    v = v * 3 + ((struct upd *)cx)->s;
    memcpy(a->base + flat * 8, &v, 8);
}

/* The test kernel (its twin is in c_abi.rs): s = coords[0] + the sum of the elements of every
 * `in` region; every element of an `out`/`inout` region becomes v * 3 + s (u64, wrapping). */
static int32_t mix(const struct wsp_raw_task *t) {
    uint64_t s = t->ncoords ? (uint64_t)t->coords[0] : 0;
    for (uint64_t i = 0; i < t->nargs; i++)
        if (t->args[i].dir == WSP_DIR_IN) region_elems(&t->args[i], sum_elem, &s);
    struct upd u = {s};
    for (uint64_t i = 0; i < t->nargs; i++)
        if (t->args[i].dir != WSP_DIR_IN) region_elems(&t->args[i], upd_elem, &u);
    return 0;
}

static int run_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); return 1; }
    char arch[64];
    unsigned window, threads;
    if (fscanf(f, "%63s %u %u", arch, &window, &threads) != 3) return 2;
    wsp_rt *rt = NULL;
    char err[256];
    if (wsp_rt_create(arch, NULL, &rt, err, sizeof err) != WSP_RT_OK) {
        fprintf(stderr, "create: %s\n", err);
        return 1;
    }
    CHECK(wsp_rt_set_task_window(rt, window));
    CHECK(wsp_rt_set_threads(rt, threads));
    CHECK(wsp_rt_set_record(rt, 1));
    char what[8];
    uint32_t ntensors = 0;
    while (fscanf(f, "%7s", what) == 1) {
        if (!strcmp(what, "P")) {
            char form[32];
            unsigned n, a[4];
            if (fscanf(f, "%31s %u", form, &n) != 2 || n > 4) return 2;
            for (unsigned i = 0; i < n; i++) if (fscanf(f, "%u", &a[i]) != 1) return 2;
            CHECK(wsp_rt_set_policy(rt, form, a, n));
        } else if (!strcmp(what, "F")) {
            unsigned n;
            if (fscanf(f, "%u", &n) != 1) return 2;
            CHECK(wsp_rt_fit_region_args(rt, n));
        } else if (!strcmp(what, "T")) {
            unsigned rank;
            int64_t dims[WSP_MAX_RANK];
            if (fscanf(f, "%u", &rank) != 1 || rank > WSP_MAX_RANK) return 2;
            for (unsigned d = 0; d < rank; d++) if (fscanf(f, "%ld", &dims[d]) != 1) return 2;
            uint32_t id;
            CHECK(wsp_rt_add_tensor(rt, 8, dims, rank, NULL, 0, &id));
            ntensors = id + 1;
        } else if (!strcmp(what, "K")) {
            char name[32], cls[16];
            uint32_t id;
            if (fscanf(f, "%31s %15s", name, cls) != 2) return 2;
            CHECK(wsp_rt_register_kernel(rt, name, mix, cls, &id));
        } else if (!strcmp(what, "S")) {
            struct wsp_rt_task t;
            memset(&t, 0, sizeof t);
            int64_t coords[4], scalars[2] = {7, -1};
            struct wsp_rt_arg args[8];
            unsigned nc, na;
            if (fscanf(f, "%u %lu %ld %ld %ld %u", &t.kernel, &t.cycles, &t.key, &t.priority, &t.stream, &nc) != 6 || nc > 4)
                return 2;
            for (unsigned i = 0; i < nc; i++) if (fscanf(f, "%ld", &coords[i]) != 1) return 2;
            if (fscanf(f, "%u", &na) != 1 || na > 8) return 2;
            for (unsigned i = 0; i < na; i++) {
                struct wsp_rt_arg *a = &args[i];
                if (fscanf(f, "%u %u %u", &a->tensor, &a->dir, &a->rank) != 3 || a->rank > WSP_MAX_RANK) return 2;
                for (unsigned d = 0; d < a->rank; d++)
                    if (fscanf(f, "%ld %ld %ld", &a->offsets[d], &a->extents[d], &a->strides[d]) != 3) return 2;
            }
            t.coords = coords; t.ncoords = nc;
            t.args = args; t.nargs = na;
            t.scalars = scalars; t.nscalars = 2;
            CHECK(wsp_rt_submit(rt, &t, NULL));
        } else if (!strcmp(what, "W")) {
            unsigned tensor;
            if (fscanf(f, "%u", &tensor) != 1) return 2;
            CHECK(wsp_rt_wait_tensor(rt, tensor));
        } else if (!strcmp(what, "B")) {
            CHECK(wsp_rt_wait_all(rt));
        } else {
            return 2;
        }
    }
    fclose(f);
    struct wsp_rt_stats s;
    CHECK(wsp_rt_finish(rt, &s));
    printf("tasks %lu edges %lu total_cycles %lu\n", s.tasks, s.edges, s.total_cycles);
    for (uint32_t t = 0; t < ntensors; t++) {
        uint64_t n;
        CHECK(wsp_rt_tensor_size(rt, t, &n));
        uint8_t *b = malloc(n);
        CHECK(wsp_rt_read_tensor(rt, t, 0, b, n));
        uint64_t h = 1469598103934665603ull;
        for (uint64_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
        printf("tensor %u %016lx\n", t, h);
        free(b);
    }
    const char *dot = wsp_rt_dot(rt);
    printf("%s", dot ? dot : "no dot\n");
    wsp_rt_destroy(rt);
    return 0;
}

/* ---- the demo ---- */

/* out[i] = a[i] + b[i] over 1 x n f32 regions (rank 2, all strides 1). */
static int32_t vadd(const struct wsp_raw_task *t) {
    if (t->nargs != 3) return 3;
    const struct wsp_raw_arg *a = &t->args[0], *b = &t->args[1], *o = &t->args[2];
    for (int64_t j = 0; j < o->extents[1]; j++) {
        int64_t ia = a->offsets[0] * a->dims[1] + a->offsets[1] + j;
        int64_t ib = b->offsets[0] * b->dims[1] + b->offsets[1] + j;
        int64_t io = o->offsets[0] * o->dims[1] + o->offsets[1] + j;
        ((float *)o->base)[io] = ((const float *)a->base)[ia] + ((const float *)b->base)[ib];
    }
    return 0;
}

static int32_t failing(const struct wsp_raw_task *t) {
    (void)t;
    return 42;
}

struct producer { uint32_t kernel, ch, x, y; int next; };
struct consumer { uint32_t kernel, ch, y, z; int got; int64_t sum; };

static void row_task(struct wsp_rt_task *t, struct wsp_rt_arg *args, uint32_t kernel, int64_t *coords,
                     uint32_t in, uint32_t out, int64_t row) {
    memset(t, 0, sizeof *t);
    memset(args, 0, 3 * sizeof *args);
    uint32_t ts[3] = {in, in, out};
    for (int i = 0; i < 3; i++) {
        args[i].tensor = ts[i];
        args[i].rank = 2;
        args[i].offsets[0] = row; args[i].offsets[1] = 0;
        args[i].extents[0] = 1; args[i].extents[1] = 4;
        args[i].strides[0] = 1; args[i].strides[1] = 1;
        args[i].dir = i == 2 ? WSP_DIR_OUT : WSP_DIR_IN;
    }
    coords[0] = row;
    t->kernel = kernel; t->coords = coords; t->ncoords = 1; t->args = args; t->nargs = 3;
    t->cycles = 100;
}

static int32_t produce(void *user, wsp_rt_proc *cx, struct wsp_rt_step *step) {
    struct producer *p = user;
    if (p->next == 4) { step->kind = WSP_STEP_FINISHED; return 0; }
    struct wsp_rt_task t; struct wsp_rt_arg args[3]; int64_t coords[1];
    row_task(&t, args, p->kernel, coords, p->x, p->y, p->next);
    uint64_t id;
    if (wsp_rt_proc_submit(cx, &t, &id) != WSP_RT_OK) return 1;
    step->kind = WSP_STEP_SEND; step->channel = p->ch; step->token_len = 1;
    step->token[0] = p->next; step->has_after = 1; step->after = id;
    p->next++;
    return 0;
}

static int32_t consume(void *user, wsp_rt_proc *cx, struct wsp_rt_step *step) {
    struct consumer *c = user;
    int32_t status; int64_t tok[WSP_MAX_RANK]; uint32_t n;
    if (wsp_rt_proc_received(cx, &status, tok, &n) != WSP_RT_OK) return 1;
    if (status == 2) {
        if (wsp_rt_proc_wait_all(cx) != WSP_RT_OK) return 1;
        step->kind = WSP_STEP_FINISHED;
        return 0;
    }
    if (status == 1) {
        struct wsp_rt_task t; struct wsp_rt_arg args[3]; int64_t coords[1];
        row_task(&t, args, c->kernel, coords, c->y, c->z, tok[0]);
        if (wsp_rt_proc_submit(cx, &t, NULL) != WSP_RT_OK) return 1;
        c->got++; c->sum += tok[0];
    }
    step->kind = WSP_STEP_RECV; step->channel = c->ch;
    return 0;
}

static int demo(void) {
    wsp_rt *rt = NULL;
    char err[256];
    if (wsp_rt_create("no_such_arch", NULL, &rt, err, sizeof err) != WSP_RT_ERR_ARG || rt) return 10;
    printf("unknown arch: %s\n", err);
    if (wsp_rt_create("ascend910b", NULL, &rt, err, sizeof err) != WSP_RT_OK) return 11;
    /* Null pointers are refused. */
    if (wsp_rt_submit(rt, NULL, NULL) != WSP_RT_ERR_NULL) return 12;
    printf("null task: %s\n", wsp_rt_last_error(rt));
    if (wsp_rt_set_policy(rt, "teleport", NULL, 0) != WSP_RT_ERR_ARG) return 13;
    uint32_t four = 4;
    CHECK(wsp_rt_set_policy(rt, "round_robin", &four, 1));
    CHECK(wsp_rt_set_task_window(rt, 8));
    int64_t dims[2] = {4, 4};
    float xs[16], ys[16];
    for (int i = 0; i < 16; i++) { xs[i] = (float)i; ys[i] = 0.5f * (float)i; }
    uint32_t x, y, z, k, bad;
    CHECK(wsp_rt_add_tensor(rt, 4, dims, 2, xs, sizeof xs, &x));
    if (wsp_rt_set_threads(rt, 2) != WSP_RT_ERR_STATE) return 14;
    if (wsp_rt_add_tensor(rt, 4, dims, 2, xs, 3, &y) != WSP_RT_ERR_ARG) return 15;
    CHECK(wsp_rt_add_tensor(rt, 4, dims, 2, NULL, 0, &y));
    CHECK(wsp_rt_add_tensor(rt, 4, dims, 2, NULL, 0, &z));
    CHECK(wsp_rt_register_kernel(rt, "vadd", vadd, "vector", &k));
    if (wsp_rt_register_kernel(rt, "v", vadd, "gpu", &bad) != WSP_RT_ERR_ARG) return 16;
    /* y = x + x, row by row; then read y back after waiting for its producers. */
    for (int64_t r = 0; r < 4; r++) {
        struct wsp_rt_task t; struct wsp_rt_arg args[3]; int64_t coords[1];
        row_task(&t, args, k, coords, x, y, r);
        CHECK(wsp_rt_submit(rt, &t, NULL));
    }
    /* A region past the tensor is refused, with a message. */
    {
        struct wsp_rt_task t; struct wsp_rt_arg args[3]; int64_t coords[1];
        row_task(&t, args, k, coords, x, y, 9);
        if (wsp_rt_submit(rt, &t, NULL) != WSP_RT_ERR_ARG) return 17;
        printf("bad region: %s\n", wsp_rt_last_error(rt));
    }
    CHECK(wsp_rt_wait_tensor(rt, y));
    float back[16];
    CHECK(wsp_rt_read_tensor(rt, y, 0, back, sizeof back));
    for (int i = 0; i < 16; i++) if (back[i] != 2.0f * (float)i) return 18;
    (void)ys;
    /* A pipeline: the producer computes z-rows of y... as tokens, the consumer z = y + y. */
    uint32_t ch;
    CHECK(wsp_rt_add_channel(rt, "rows", 1, -1, &ch));
    struct producer p = {k, ch, x, y, 0};
    struct consumer c = {k, ch, y, z, 0, 0};
    struct wsp_rt_process procs[2] = {
        {"producer", produce, &p, &ch, 1},
        {"consumer", consume, &c, NULL, 0},
    };
    CHECK(wsp_rt_run_processes(rt, procs, 2));
    if (c.got != 4 || c.sum != 6) return 19;
    struct wsp_rt_stats s;
    CHECK(wsp_rt_finish(rt, &s));
    CHECK(wsp_rt_read_tensor(rt, z, 0, back, sizeof back));
    for (int i = 0; i < 16; i++) if (back[i] != 4.0f * (float)i) return 20;
    printf("tasks %lu edges %lu total_cycles %lu\n", s.tasks, s.edges, s.total_cycles);
    const char *json = wsp_rt_stats_json(rt);
    if (!json || !strstr(json, "\"total_cycles\"")) return 21;
    printf("deadlock report: [%s]\n", wsp_rt_deadlock_report(rt));
    wsp_rt_destroy(rt);

    /* A failing kernel is reported with its code. */
    if (wsp_rt_create("ascend910b", NULL, &rt, err, sizeof err) != WSP_RT_OK) return 22;
    CHECK(wsp_rt_add_tensor(rt, 4, dims, 2, NULL, 0, &x));
    CHECK(wsp_rt_register_kernel(rt, "failing", failing, "cube", &k));
    {
        struct wsp_rt_task t; struct wsp_rt_arg args[3]; int64_t coords[1];
        row_task(&t, args, k, coords, x, x, 0);
        args[2].dir = WSP_DIR_INOUT;
        args[0].offsets[0] = 1; args[1].offsets[0] = 2;
        int32_t rc = wsp_rt_submit(rt, &t, NULL);
        if (rc == WSP_RT_OK) rc = wsp_rt_finish(rt, NULL);
        if (rc != WSP_RT_ERR_KERNEL) return 23;
        printf("kernel failure: %s\n", wsp_rt_last_error(rt));
    }
    wsp_rt_destroy(rt);

    /* A deadlock: a consumer waits on a channel nobody produces... and a producer blocks. */
    if (wsp_rt_create("ascend910b", NULL, &rt, err, sizeof err) != WSP_RT_OK) return 24;
    CHECK(wsp_rt_add_channel(rt, "stuck", 0, -1, &ch));
    {
        struct producer p2 = {0, ch, 0, 0, 0};
        (void)p2;
        struct consumer c2 = {0, ch, 0, 0, 0, 0};
        uint32_t ch2;
        CHECK(wsp_rt_add_channel(rt, "never", 1, -1, &ch2));
        struct consumer c3 = {0, ch2, 0, 0, 0, 0};
        /* Each consumes the channel the other produces: neither sends. */
        struct wsp_rt_process ps[2] = {
            {"left", consume, &c2, &ch2, 1},
            {"right", consume, &c3, &ch, 1},
        };
        int32_t rc = wsp_rt_run_processes(rt, ps, 2);
        if (rc != WSP_RT_ERR_DEADLOCK) return 25;
        const char *rep = wsp_rt_deadlock_report(rt);
        if (!rep || !*rep) return 26;
        printf("deadlock: %s\n", wsp_rt_last_error(rt));
    }
    wsp_rt_destroy(rt);
    wsp_rt_destroy(NULL);
    printf("demo ok\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "layout")) return layout();
    if (argc >= 3 && !strcmp(argv[1], "run")) return run_file(argv[2]);
    if (argc >= 2 && !strcmp(argv[1], "demo")) return demo();
    fprintf(stderr, "usage: harness layout | run FILE | demo\n");
    return 2;
}
