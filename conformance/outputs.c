/* Caller-provided, canary-filled, guarded outputs (outputs.h). */
#include "outputs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return 1;
}

uint64_t cf_canary(kiln_dtype dt, int variant)
{
    static const uint64_t c[2][KILN_DTYPE_COUNT] = {
        {0xa5, 0xa5a5c3e1u, 0xa5a5c3e1a5a5c3e1ull, 0x7d5a, 0x7fa5, 0x7fa5c3e1u,
         0x7ff5a5c3e1a5c3e1ull},
        {0xc3, 0x5a5a3c1eu, 0x5a5a3c1e5a5a3c1eull, 0xfd3c, 0xff9c, 0xff9a3c1eu,
         0xfff3a3c1e5a3c1e5ull}};
    return (unsigned)dt < KILN_DTYPE_COUNT ? c[variant & 1][dt] : 0;
}

kiln_memory cf_backend_memory(kiln_context *ctx)
{
    int64_t one = 1;
    kiln_tensor *t = NULL;
    if (kiln_tensor_create(ctx, KILN_BOOL, 1, &one, NULL, KILN_MEM_DEVICE,
                           NULL, &t) == KILN_OK) {
        kiln_tensor_destroy(t);
        return KILN_MEM_DEVICE;
    }
    return KILN_MEM_HOST;
}

/* Storage extent in bytes of a view (0 when it has no element). */
static size_t extent_bytes(kiln_dtype dt, int rank, const int64_t *sizes,
                           const int64_t *strides)
{
    int64_t last = 0;
    for (int a = 0; a < rank; a++) {
        if (sizes[a] == 0)
            return 0;
        last += (sizes[a] - 1) * (strides ? strides[a] : 1);
    }
    if (strides == NULL) {
        int64_t n = 1;
        for (int a = 0; a < rank; a++)
            n *= sizes[a];
        last = n - 1;
    }
    return (size_t)(last + 1) * kiln_dtype_size(dt);
}

/* "[i,j,k]" of flat element k of sizes. */
static void index_text(int rank, const int64_t *sizes, int64_t k, char *buf,
                       size_t cap)
{
    int64_t idx[KILN_MAX_RANK];
    for (int a = rank - 1; a >= 0; a--) {
        idx[a] = sizes[a] ? k % sizes[a] : 0;
        k = sizes[a] ? k / sizes[a] : 0;
    }
    size_t u = 0;
    buf[0] = '\0';
    u += (size_t)snprintf(buf, cap, "[");
    for (int a = 0; a < rank && u < cap; a++)
        u += (size_t)snprintf(buf + u, cap - u, "%s%lld", a ? "," : "",
                              (long long)idx[a]);
    if (u < cap)
        snprintf(buf + u, cap - u, "]");
}

/* A guarded allocation of span bytes at offset `off` for dtype dt, filled
** with dt's canary of run `variant` (element-aligned with the output, so a
** guard element reads as a canary too); view over it unless rank < 0. */
static int guard_alloc(cf_guarded *g, kiln_context *ctx, kiln_memory mem,
                       kiln_dtype dt, int rank, const int64_t *sizes,
                       const int64_t *strides, int variant, char *err,
                       size_t cap)
{
    size_t es = kiln_dtype_size(dt);
    memset(g, 0, sizeof *g);
    g->dtype = dt;
    g->span = extent_bytes(dt, rank, sizes, strides);
    g->off = CF_GUARD_BYTES + (variant ? es : 0);
    g->total = g->off + g->span + CF_GUARD_BYTES;
    g->numel = 1;
    for (int a = 0; a < rank; a++)
        g->numel *= sizes[a];
    g->numel_ok = strides == NULL;
    g->fill = malloc(g->total);
    g->after = malloc(g->total);
    if (g->fill == NULL || g->after == NULL)
        return fail(err, cap, "out of memory");
    uint64_t c = cf_canary(dt, variant);
    unsigned char cb[8];
    for (size_t b = 0; b < 8; b++)
        cb[b] = (unsigned char)(c >> (8 * b)); /* little-endian element */
    for (size_t p = 0; p < g->total; p++)
        g->fill[p] = cb[(p + es * 8 - g->off % es) % es];
    int64_t tot = (int64_t)g->total;
    kiln_status st = kiln_tensor_create(ctx, KILN_BOOL, 1, &tot, NULL, mem,
                                        NULL, &g->base);
    if (st == KILN_OK)
        st = kiln_tensor_write(ctx, g->base, g->fill, g->total);
    if (st == KILN_OK)
        st = kiln_tensor_create(
            ctx, dt, rank, sizes, strides, mem,
            (unsigned char *)kiln_tensor_data(g->base) + g->off, &g->view);
    if (st != KILN_OK)
        return fail(err, cap, "allocating a guarded output of %zu bytes: "
                    "%s: %s", g->total, kiln_status_name(st),
                    kiln_last_error());
    return 0;
}

static int set_init(cf_outset *s, size_t n_out, int variant, char *err,
                    size_t cap)
{
    memset(s, 0, sizeof *s);
    s->n = n_out;
    s->variant = variant;
    s->t = calloc(n_out + 1, sizeof *s->t);
    s->g = calloc(n_out + 1, sizeof *s->g);
    if (s->t == NULL || s->g == NULL)
        return fail(err, cap, "out of memory");
    return 0;
}

int cf_outset_make(cf_outset *s, kiln_context *ctx, const kiln_fusion *f,
                   kiln_tensor *const *in, size_t n_in, size_t n_out,
                   int variant, char *err, size_t cap)
{
    if (set_init(s, n_out, variant, err, cap))
        return 1;
    kiln_view *v = calloc(n_in + 1, sizeof *v);
    int64_t *sizes = calloc(n_out * KILN_MAX_RANK + 1, sizeof *sizes);
    int rc = 0;
    if (v == NULL || sizes == NULL) {
        rc = fail(err, cap, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n_in; i++) {
        const kiln_tensor *t = in[i];
        size_t es = kiln_dtype_size(kiln_tensor_dtype(t));
        v[i].data = kiln_tensor_data(t);
        v[i].dtype = (int32_t)kiln_tensor_dtype(t);
        v[i].rank = kiln_tensor_rank(t);
        v[i].memory = (int32_t)kiln_tensor_memory(t);
        for (int a = 0; a < v[i].rank; a++) {
            v[i].sizes[a] = kiln_tensor_sizes(t)[a];
            v[i].byte_strides[a] = kiln_tensor_strides(t)[a] * (int64_t)es;
        }
    }
    if (kiln_fusion_output_sizes(f, v, n_in, sizes, n_out * KILN_MAX_RANK) !=
        KILN_OK) {
        rc = -1;
        goto done;
    }
    kiln_memory mem = cf_backend_memory(ctx);
    for (size_t j = 0; j < n_out && rc == 0; j++) {
        kiln_dtype dt;
        int rank;
        uint8_t bc[KILN_MAX_RANK];
        if (kiln_fusion_io(f, 1, (int)j, &dt, &rank, bc) != KILN_OK)
            rc = fail(err, cap, "kiln_fusion_io(output %zu): %s", j,
                      kiln_last_error());
        else if (guard_alloc(&s->g[j], ctx, mem, dt, rank,
                             &sizes[j * KILN_MAX_RANK], NULL, variant, err,
                             cap))
            rc = 1;
        else
            s->t[j] = s->g[j].view;
    }
done:
    free(v);
    free(sizes);
    return rc;
}

/* Bytes [data, data + len) of memory space mem as a bool tensor. */
static kiln_status bytes_view(kiln_context *ctx, kiln_memory mem, void *data,
                              size_t len, kiln_tensor **out)
{
    int64_t n = (int64_t)len;
    return kiln_tensor_create(ctx, KILN_BOOL, 1, &n, NULL, mem, data, out);
}

int cf_outset_given(cf_outset *s, kiln_context *ctx, const json_t *spec,
                    kiln_tensor *const *in, size_t n_in, size_t n_out,
                    char *err, size_t cap)
{
    if (set_init(s, n_out, 0, err, cap))
        return 1;
    if (!json_is_array(spec) || json_array_size(spec) != n_out)
        return fail(err, cap, "givenOutputs: must list %zu outputs", n_out);
    kiln_memory mem = cf_backend_memory(ctx);
    s->snap = calloc(n_out + 1, sizeof *s->snap);
    if (s->snap == NULL)
        return fail(err, cap, "out of memory");
    for (size_t j = 0; j < n_out; j++) {
        const json_t *e = json_array_get(spec, j);
        const json_t *sh = json_object_get(e, "shape");
        const json_t *sd = json_object_get(e, "strides");
        const json_t *ov = json_object_get(e, "overlaps");
        kiln_dtype dt;
        int64_t sizes[KILN_MAX_RANK], strides[KILN_MAX_RANK];
        int rank = (int)json_array_size(sh);
        if (kiln_dtype_parse(json_string_value(json_object_get(e, "dtype")),
                             &dt) != KILN_OK || rank > KILN_MAX_RANK ||
            (sd != NULL && json_array_size(sd) != (size_t)rank))
            return fail(err, cap, "givenOutputs[%zu]: needs a dtype, a shape "
                        "of rank <= %d and strides of its rank", j,
                        KILN_MAX_RANK);
        for (int a = 0; a < rank; a++) {
            sizes[a] = json_integer_value(json_array_get(sh, a));
            strides[a] = sd ? json_integer_value(json_array_get(sd, a)) : 0;
        }
        const int64_t *stp = sd ? strides : NULL;
        if (ov == NULL) {
            if (guard_alloc(&s->g[j], ctx, mem, dt, rank, sizes, stp, 0, err,
                            cap))
                return 1;
            s->t[j] = s->g[j].view;
            continue;
        }
        const json_t *ij = json_object_get(ov, "input");
        const json_t *oj = json_object_get(ov, "output");
        size_t k = (size_t)json_integer_value(ij ? ij : oj);
        size_t boff = (size_t)json_integer_value(json_object_get(ov, "byteOffset"));
        size_t span = extent_bytes(dt, rank, sizes, stp);
        unsigned char *data;
        size_t room;
        if (ij != NULL) {
            if (k >= n_in)
                return fail(err, cap, "givenOutputs[%zu].overlaps.input: "
                            "%zu is not an input", j, k);
            const kiln_tensor *t = in[k];
            data = kiln_tensor_data(t);
            room = extent_bytes(kiln_tensor_dtype(t), kiln_tensor_rank(t),
                                kiln_tensor_sizes(t), kiln_tensor_strides(t));
            /* the input's storage, to prove nothing was written to it */
            struct cf_snap *sn = &s->snap[s->n_snap++];
            sn->input = k;
            sn->len = room;
            sn->before = malloc(room + 1);
            if (sn->before == NULL)
                return fail(err, cap, "out of memory");
            kiln_status st = bytes_view(ctx, kiln_tensor_memory(t), data,
                                        room, &sn->bytes);
            if (st == KILN_OK)
                st = kiln_tensor_read(ctx, sn->bytes, sn->before, room);
            if (st != KILN_OK)
                return fail(err, cap, "reading input %zu: %s", k,
                            kiln_last_error());
        } else {
            if (k >= j || s->g[k].base == NULL)
                return fail(err, cap, "givenOutputs[%zu].overlaps.output: "
                            "%zu is not an earlier output of its own", j, k);
            data = (unsigned char *)kiln_tensor_data(s->g[k].view);
            room = s->g[k].total - s->g[k].off;
        }
        if (boff + span > room || boff % kiln_dtype_size(dt) != 0)
            return fail(err, cap, "givenOutputs[%zu]: %zu bytes at byte "
                        "offset %zu do not fit the %zu bytes it overlaps, "
                        "element-aligned", j, span, boff, room);
        kiln_status st = kiln_tensor_create(ctx, dt, rank, sizes, stp, mem,
                                            data + boff, &s->t[j]);
        if (st != KILN_OK)
            return fail(err, cap, "givenOutputs[%zu]: %s: %s", j,
                        kiln_status_name(st), kiln_last_error());
    }
    return 0;
}

int cf_outset_check(cf_outset *s, kiln_context *ctx, int written, char *msg,
                    size_t cap)
{
    for (size_t j = 0; j < s->n; j++) {
        cf_guarded *g = &s->g[j];
        if (g->base == NULL)
            continue;
        kiln_status st = kiln_tensor_read(ctx, g->base, g->after, g->total);
        if (st != KILN_OK)
            return fail(msg, cap, "outputs[%zu]: reading its allocation back: "
                        "%s: %s", j, kiln_status_name(st), kiln_last_error());
        for (size_t p = 0; p < g->total; p++) {
            int inside = p >= g->off && p < g->off + g->span;
            if ((inside && written) || g->after[p] == g->fill[p])
                continue;
            if (inside)
                return fail(msg, cap, "failed kiln_execute wrote outputs[%zu]:"
                            " byte %zu of its storage is 0x%02x, the canary "
                            "0x%02x", j, p - g->off, g->after[p], g->fill[p]);
            if (p < g->off)
                return fail(msg, cap, "outputs[%zu]: a write outside the "
                            "output: guard byte %zu before its start (byte "
                            "offset -%zu) is 0x%02x, the guard was 0x%02x "
                            "(output at allocation offset %zu, %zu bytes)",
                            j, g->off - p, g->off - p, g->after[p],
                            g->fill[p], g->off, g->span);
            return fail(msg, cap, "outputs[%zu]: a write outside the output: "
                        "guard byte %zu past its end (byte offset %zu) is "
                        "0x%02x, the guard was 0x%02x (output at allocation "
                        "offset %zu, %zu bytes)", j, p - g->off - g->span,
                        p - g->off, g->after[p], g->fill[p], g->off, g->span);
        }
        if (!written || !g->numel_ok)
            continue;
        size_t es = kiln_dtype_size(g->dtype);
        const unsigned char *c = g->fill + g->off;
        for (int64_t k = 0; k < g->numel; k++) {
            const unsigned char *e = g->after + g->off + (size_t)k * es;
            if (memcmp(e, c, es) != 0)
                continue;
            char idx[128];
            index_text(kiln_tensor_rank(g->view), kiln_tensor_sizes(g->view),
                       k, idx, sizeof idx);
            return fail(msg, cap, "outputs[%zu] element %lld %s was never "
                        "written: it still holds the canary 0x%llx (%s, run "
                        "%d)", j, (long long)k, idx,
                        (unsigned long long)cf_canary(g->dtype, s->variant),
                        kiln_dtype_name(g->dtype), s->variant + 1);
        }
    }
    for (size_t i = 0; i < s->n_snap && !written; i++) {
        struct cf_snap *sn = &s->snap[i];
        unsigned char *now = malloc(sn->len + 1);
        if (now == NULL)
            return fail(msg, cap, "out of memory");
        kiln_status st = kiln_tensor_read(ctx, sn->bytes, now, sn->len);
        size_t p = 0;
        while (st == KILN_OK && p < sn->len && now[p] == sn->before[p])
            p++;
        free(now);
        if (st != KILN_OK)
            return fail(msg, cap, "reading input %zu back: %s", sn->input,
                        kiln_last_error());
        if (p < sn->len)
            return fail(msg, cap, "failed kiln_execute wrote input %zu (which "
                        "an output overlaps): byte %zu changed", sn->input,
                        p);
    }
    return 0;
}

int cf_outset_same(const cf_outset *a, const cf_outset *b, char *msg,
                   size_t cap)
{
    for (size_t j = 0; j < a->n && j < b->n; j++) {
        const cf_guarded *x = &a->g[j], *y = &b->g[j];
        if (x->base == NULL || y->base == NULL || x->span != y->span)
            continue;
        size_t es = kiln_dtype_size(x->dtype);
        for (size_t p = 0; p < x->span; p += es) {
            const unsigned char *u = x->after + x->off + p;
            const unsigned char *v = y->after + y->off + p;
            if (memcmp(u, v, es) == 0)
                continue;
            uint64_t bu = 0, bv = 0;
            for (size_t q = 0; q < es; q++) {
                bu |= (uint64_t)u[q] << (8 * q);
                bv |= (uint64_t)v[q] << (8 * q);
            }
            char idx[128];
            index_text(kiln_tensor_rank(x->view), kiln_tensor_sizes(x->view),
                       (int64_t)(p / es), idx, sizeof idx);
            return fail(msg, cap, "outputs[%zu] element %zu %s differs between "
                        "two runs with different canaries: 0x%llx, then "
                        "0x%llx", j, p / es, idx, (unsigned long long)bu,
                        (unsigned long long)bv);
        }
    }
    return 0;
}

void cf_outset_free(cf_outset *s)
{
    for (size_t j = 0; s->t && j < s->n; j++) {
        kiln_tensor_destroy(s->t[j]);
        if (s->g[j].view != s->t[j])
            kiln_tensor_destroy(s->g[j].view);
    }
    for (size_t j = 0; s->g && j < s->n; j++) {
        kiln_tensor_destroy(s->g[j].base);
        free(s->g[j].fill);
        free(s->g[j].after);
    }
    for (size_t i = 0; i < s->n_snap; i++) {
        kiln_tensor_destroy(s->snap[i].bytes);
        free(s->snap[i].before);
    }
    free(s->t);
    free(s->g);
    free(s->snap);
    memset(s, 0, sizeof *s);
}
