/* ---- helpers of the generated orchestration ---- */

/* The first error of an expression (division by zero, an element out of range). */
static const char *wsp_err;
static char wsp_err_buf[256];

/* Where the generated code submits: the main orchestration (proc == NULL) or a process step. */
struct wsp_cx {
    wsp_rt *rt;
    wsp_rt_proc *proc;
};

/* A failed runtime call: the main orchestration prints the runtime's message; a process step
 * returns nonzero and the runtime reports the process's failure with the message. */
static inline int wsp_fail_cx(const struct wsp_cx *cx, const char *what) {
    if (!cx->proc) fprintf(stderr, "wsp_host: %s: %s\n", what, wsp_rt_last_error(cx->rt));
    return 1;
}

#define WSP_TRY(call, what)                                         \
    do {                                                            \
        if ((call) != WSP_RT_OK) return wsp_fail_cx(cx, what);      \
    } while (0)

#define WSP_CHECK(where)                                                    \
    do {                                                                    \
        if (wsp_err) {                                                      \
            fprintf(stderr, "wsp_host: in %s: %s\n", where, wsp_err);       \
            return 1;                                                       \
        }                                                                   \
    } while (0)

static inline int32_t wsp_cx_submit(const struct wsp_cx *cx, const struct wsp_rt_task *t, uint64_t *id) {
    return cx->proc ? wsp_rt_proc_submit(cx->proc, t, id) : wsp_rt_submit(cx->rt, t, id);
}
static inline int32_t wsp_cx_wait_tensor(const struct wsp_cx *cx, uint32_t t) {
    return cx->proc ? wsp_rt_proc_wait_tensor(cx->proc, t) : wsp_rt_wait_tensor(cx->rt, t);
}
static inline int32_t wsp_cx_wait_all(const struct wsp_cx *cx) {
    return cx->proc ? wsp_rt_proc_wait_all(cx->proc) : wsp_rt_wait_all(cx->rt);
}
static inline int32_t wsp_cx_read(const struct wsp_cx *cx, uint32_t t, uint64_t off, void *dst, uint64_t n) {
    return cx->proc ? wsp_rt_proc_read_tensor(cx->proc, t, off, dst, n) : wsp_rt_read_tensor(cx->rt, t, off, dst, n);
}
/* Program structure goes to the runtime from the main orchestration only (as `wsp run`). */
static inline int32_t wsp_cx_order_begin(const struct wsp_cx *cx, int32_t seq) {
    return cx->proc ? WSP_RT_OK : wsp_rt_order_begin(cx->rt, seq);
}
static inline int32_t wsp_cx_order_step(const struct wsp_cx *cx) {
    return cx->proc ? WSP_RT_OK : wsp_rt_order_step(cx->rt);
}
static inline int32_t wsp_cx_order_end(const struct wsp_cx *cx) {
    return cx->proc ? WSP_RT_OK : wsp_rt_order_end(cx->rt);
}

static inline int64_t wsp_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int64_t wsp_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static inline int64_t wsp_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
static inline int64_t wsp_neg(int64_t a) { return (int64_t)(0u - (uint64_t)a); }
static inline int64_t wsp_div(int64_t a, int64_t b) {
    if (b == 0) { if (!wsp_err) wsp_err = "integer division by zero"; return 0; }
    if (a == INT64_MIN && b == -1) return INT64_MIN;
    return a / b;
}
static inline int64_t wsp_rem(int64_t a, int64_t b) {
    if (b == 0) { if (!wsp_err) wsp_err = "integer division by zero"; return 0; }
    if (b == -1) return 0;
    return a % b;
}
static inline int64_t wsp_imin(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t wsp_imax(int64_t a, int64_t b) { return a > b ? a : b; }
/* IEEE 754-2019 minimum and maximum: NaN if either is; -0.0 < +0.0. */
static inline double wsp_fmin(double a, double b) {
    if (isnan(a) || isnan(b)) return NAN;
    return (a < b || (a == b && signbit(a))) ? a : b;
}
static inline double wsp_fmax(double a, double b) {
    if (isnan(a) || isnan(b)) return NAN;
    return (b > a || (a == b && signbit(a))) ? b : a;
}
static inline double wsp_fbits(uint64_t bits) { double d; memcpy(&d, &bits, 8); return d; }
static inline int64_t wsp_bits(double d) { int64_t b; memcpy(&b, &d, 8); return b; }

/* `c + sum(coef[i] * val[i])` with overflow checked. */
static inline int64_t wsp_affine(int64_t c, int n, const int64_t *coef, const int64_t *val) {
    int64_t acc = c;
    for (int i = 0; i < n; i++) {
        int64_t t;
        if (__builtin_mul_overflow(val[i], coef[i], &t) || __builtin_add_overflow(acc, t, &acc)) {
            if (!wsp_err) wsp_err = "overflow in an index expression";
            return 0;
        }
    }
    return acc;
}

/* Tensors the tasks submitted so far write (their reads wait for those tasks). */
static uint8_t wsp_written[WSP_NTENSORS];

/* The runtime tensor of each local tensor whose block is running (`let H: f32[..] = scratch()`):
 * a fresh instance from the heap arena each time the block runs. */
static uint32_t wsp_local[WSP_NTENSORS];

static inline int wsp_local_begin(const struct wsp_cx *cx, uint32_t t) {
    const struct wsp_tensor_desc *d = &wsp_tensor_descs[t];
    WSP_TRY(wsp_rt_alloc_scope_begin(cx->rt), "opening a local tensor's block");
    WSP_TRY(wsp_rt_alloc_tensor(cx->rt, d->elem_size, d->dims, d->rank, &wsp_local[t]),
            "allocating a local tensor from the heap arena");
    return 0;
}

/* Waits for the producers of tensor t, when a task writes it. */
static inline int wsp_sync(const struct wsp_cx *cx, uint32_t t) {
    if (wsp_written[t]) WSP_TRY(wsp_cx_wait_tensor(cx, t), "waiting for a tensor's producers");
    return 0;
}

/* The flat index of element idx of tensor t, or -1 (with wsp_err) outside it. */
static inline int64_t wsp_flat(uint32_t t, int n, const int64_t *idx) {
    const struct wsp_tensor_desc *d = &wsp_tensor_descs[t];
    int64_t flat = 0;
    if ((uint32_t)n != d->rank) goto out;
    for (int i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= d->dims[i]) goto out;
        flat = flat * d->dims[i] + idx[i];
    }
    return flat;
out:
    if (!wsp_err) {
        snprintf(wsp_err_buf, sizeof wsp_err_buf, "an element index is outside `%s`", d->name);
        wsp_err = wsp_err_buf;
    }
    return -1;
}

/* Reads element `flat` of tensor t as raw bytes into *out (8 bytes, zero-extended). */
static inline int wsp_elem_raw(const struct wsp_cx *cx, uint32_t t, int64_t flat, uint64_t *out) {
    const struct wsp_tensor_desc *d = &wsp_tensor_descs[t];
    *out = 0;
    if (flat < 0) return 1;
    if (wsp_cx_read(cx, t, (uint64_t)flat * d->elem_size, out, d->elem_size) != WSP_RT_OK) {
        if (!wsp_err) {
            snprintf(wsp_err_buf, sizeof wsp_err_buf, "reading `%s`: %s", d->name,
                     cx->proc ? "the runtime refused" : wsp_rt_last_error(cx->rt));
            wsp_err = wsp_err_buf;
        }
        return 1;
    }
    return 0;
}

static inline double wsp_half_to_double(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* Element `flat` of tensor t as a float (a float tensor). */
static inline double wsp_elem_f(const struct wsp_cx *cx, uint32_t t, int64_t flat) {
    uint64_t raw;
    if (wsp_elem_raw(cx, t, flat, &raw)) return 0.0;
    switch (wsp_tensor_descs[t].dtype) {
    case WSP_F16: return wsp_half_to_double((uint16_t)raw);
    case WSP_BF16: { uint32_t b = (uint32_t)raw << 16; float f; memcpy(&f, &b, 4); return f; }
    case WSP_F32: { uint32_t b = (uint32_t)raw; float f; memcpy(&f, &b, 4); return f; }
    default: return wsp_fbits(raw);
    }
}

/* Element `flat` of tensor t as an integer (an integer tensor). */
static inline int64_t wsp_elem_i(const struct wsp_cx *cx, uint32_t t, int64_t flat) {
    uint64_t raw;
    if (wsp_elem_raw(cx, t, flat, &raw)) return 0;
    switch (wsp_tensor_descs[t].dtype) {
    case WSP_I8: return (int8_t)raw;
    case WSP_I16: return (int16_t)raw;
    case WSP_I32: return (int32_t)raw;
    case WSP_U8: case WSP_U16: case WSP_U32: return (int64_t)raw;
    case WSP_U64:
        if (raw > (uint64_t)INT64_MAX && !wsp_err) wsp_err = "an element does not fit in i64";
        return (int64_t)raw;
    default: return (int64_t)raw;
    }
}

static inline int wsp_elem_b(const struct wsp_cx *cx, uint32_t t, int64_t flat) {
    uint64_t raw;
    if (wsp_elem_raw(cx, t, flat, &raw)) return 0;
    return raw != 0;
}

/* A growable list of loop tuples. */
struct wsp_tuples { int64_t *v; size_t n, cap; };

static inline int wsp_push(struct wsp_tuples *l, int w, const int64_t *vals) {
    if (l->n / (size_t)w >= WSP_MAX_LOOP_ITERATIONS) {
        if (!wsp_err) wsp_err = "a loop has more than 2^26 iterations";
        return 1;
    }
    if (l->n + (size_t)w > l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        while (cap < l->n + (size_t)w) cap *= 2;
        int64_t *v = realloc(l->v, cap * sizeof *v);
        if (!v) { if (!wsp_err) wsp_err = "out of memory listing a loop"; return 1; }
        l->v = v;
        l->cap = cap;
    }
    memcpy(l->v + l->n, vals, (size_t)w * sizeof *vals);
    l->n += (size_t)w;
    return 0;
}

/* A range's bounds: no more than 2^26 iterations. */
static inline void wsp_range_ok(int64_t s, int64_t e) {
    int64_t d;
    if (__builtin_sub_overflow(e, s, &d)) d = e > s ? INT64_MAX : INT64_MIN;
    if (d > WSP_MAX_LOOP_ITERATIONS && !wsp_err) wsp_err = "a range has more than 2^26 iterations";
}
