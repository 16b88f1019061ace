/*
** kernel_db_format.c -- the kernel database's bytes (kernel_db.h; docs/
** kernel-db.md, "The entry format"): the 128-bit hash behind the entry
** names, an entry's encoding and its checked parse, and the payload
** helpers and segment-IR codec the backends' payloads are built from.
** Pure functions of their arguments: no file is touched here (kernel_db.c
** does all of the directory work), so the fuzz target and the backends'
** deserialize() use them on memory alone.
**
** Invariant: kiln__kdb_parse and kiln__kdb_ir_decode accept only what
** kiln__kdb_encode and kiln__kdb_ir_encode write, and reject anything else
** with a reason, reading no byte past the buffer they are given.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_db.h"

static const char MAGIC[8] = {'K', 'I', 'L', 'N', 'K', 'D', 'B', '\0'};
#define HEADER 24u     /* magic, version, flags, key length */
#define TRAILER 16u    /* checksum */
#define MIN_FILE (HEADER + 8u + TRAILER)

/* ---------------------------------------------------------------- hash */

uint64_t kiln__kdb_mix64(uint64_t x) /* a bijection of 64-bit words */
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void wr64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void kiln__kdb_hash128(const void *data, size_t n, uint64_t out[2])
{
    const uint8_t *p = data;
    uint64_t a = 0x6a09e667f3bcc908ULL, b = 0xbb67ae8584caa73bULL;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = rd64(p + i);
        /* each step is a bijection of the lane for a fixed word and of the
        ** word for a fixed lane: a changed word always changes the lane */
        a = kiln__kdb_mix64(a ^ (w * 0x9e3779b97f4a7c15ULL));
        b = kiln__kdb_mix64(b + ((w << 23 | w >> 41) * 0xc2b2ae3d27d4eb4fULL));
    }
    uint8_t tail[8] = {0};
    memcpy(tail, p + i, n - i);
    uint64_t w = rd64(tail);
    a = kiln__kdb_mix64(a ^ (w * 0x9e3779b97f4a7c15ULL));
    b = kiln__kdb_mix64(b + ((w << 23 | w >> 41) * 0xc2b2ae3d27d4eb4fULL));
    out[0] = kiln__kdb_mix64(a ^ (uint64_t)n);
    out[1] = kiln__kdb_mix64(b ^ ((uint64_t)n * 0x9e3779b97f4a7c15ULL));
}

void kiln__kdb_name(const void *key, size_t n, char name[KILN__KDB_NAME_LEN + 1])
{
    uint64_t h[2];
    kiln__kdb_hash128(key, n, h);
    snprintf(name, KILN__KDB_NAME_LEN + 1, "%016llx%016llx.kdb",
             (unsigned long long)h[0], (unsigned long long)h[1]);
}

/* --------------------------------------------------------------- format */

const char *kiln__kdb_parse(const uint8_t *buf, size_t n, kiln__kdb_entry *e)
{
    if (n == 0)
        return "empty file";
    if (n < MIN_FILE)
        return "truncated (shorter than header and checksum)";
    if (memcmp(buf, MAGIC, sizeof MAGIC) != 0)
        return "bad magic (not a Kiln kernel database entry)";
    if (rd32(buf + 8) != KILN__KDB_FORMAT)
        return "unsupported format version";
    if (rd32(buf + 12) != 0)
        return "unknown flags";
    uint64_t h[2];
    kiln__kdb_hash128(buf, n - TRAILER, h);
    if (rd64(buf + n - TRAILER) != h[0] || rd64(buf + n - 8) != h[1])
        return "checksum mismatch";
    uint64_t k = rd64(buf + 16);
    if (k > n - MIN_FILE)
        return "key length beyond the end of the file";
    uint64_t p = rd64(buf + HEADER + k);
    if (p > n - MIN_FILE - k)
        return "payload length beyond the end of the file";
    if (MIN_FILE + k + p != n)
        return "bytes between the payload and the checksum";
    e->key = buf + HEADER;
    e->key_len = (size_t)k;
    e->payload = buf + HEADER + k + 8;
    e->payload_len = (size_t)p;
    return NULL;
}

uint8_t *kiln__kdb_encode(const void *key, size_t key_len, const void *payload,
                          size_t payload_len, size_t *size)
{
    if (key_len > KILN__KDB_MAX_ENTRY || payload_len > KILN__KDB_MAX_ENTRY ||
        key_len + payload_len > KILN__KDB_MAX_ENTRY - MIN_FILE)
        return NULL;
    size_t n = MIN_FILE + key_len + payload_len;
    uint8_t *b = kiln__malloc(n);
    if (b == NULL)
        return NULL;
    memcpy(b, MAGIC, sizeof MAGIC);
    wr32(b + 8, KILN__KDB_FORMAT);
    wr32(b + 12, 0);
    wr64(b + 16, key_len);
    if (key_len)
        memcpy(b + HEADER, key, key_len);
    wr64(b + HEADER + key_len, payload_len);
    if (payload_len)
        memcpy(b + HEADER + key_len + 8, payload, payload_len);
    uint64_t h[2];
    kiln__kdb_hash128(b, n - TRAILER, h);
    wr64(b + n - TRAILER, h[0]);
    wr64(b + n - 8, h[1]);
    *size = n;
    return b;
}

/* ------------------------------------------------------- payload helpers */

void kiln__kdb_put_u32(kiln_buf *b, uint32_t v)
{
    uint8_t x[4];
    wr32(x, v);
    kiln__buf_add(b, (const char *)x, 4);
}

void kiln__kdb_put_u64(kiln_buf *b, uint64_t v)
{
    uint8_t x[8];
    wr64(x, v);
    kiln__buf_add(b, (const char *)x, 8);
}

void kiln__kdb_put_str(kiln_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    kiln__kdb_put_u32(b, (uint32_t)n);
    if (n)
        kiln__buf_add(b, s, n);
}

void kiln__kdb_put_bytes(kiln_buf *b, const void *p, size_t n)
{
    kiln__kdb_put_u64(b, n);
    if (n)
        kiln__buf_add(b, p, n);
}

/* The next n bytes of r, or NULL (and r->bad) when fewer are left. */
static const uint8_t *take(kiln__kdb_rd *r, uint64_t n)
{
    if (r->bad || r->n - r->at < n) {
        r->bad = 1;
        return NULL;
    }
    r->at += (size_t)n;
    return r->p + r->at - n;
}

uint32_t kiln__kdb_get_u32(kiln__kdb_rd *r)
{
    const uint8_t *p = take(r, 4);
    return p ? rd32(p) : 0;
}

uint64_t kiln__kdb_get_u64(kiln__kdb_rd *r)
{
    const uint8_t *p = take(r, 8);
    return p ? rd64(p) : 0;
}

void kiln__kdb_get_str(kiln__kdb_rd *r, char *buf, size_t cap)
{
    uint32_t n = kiln__kdb_get_u32(r);
    const uint8_t *p = n < cap ? take(r, n) : NULL;
    buf[0] = '\0';
    if (p == NULL) {
        r->bad = 1;
        return;
    }
    memcpy(buf, p, n);
    buf[n] = '\0';
}

size_t kiln__kdb_get_bytes(kiln__kdb_rd *r, const uint8_t **p)
{
    uint64_t n = kiln__kdb_get_u64(r);
    *p = take(r, n);
    return *p != NULL ? (size_t)n : 0;
}

#define IR_MAGIC 0x3172696bu /* "kir1" */
#define IR_MAX 65536u

void kiln__kdb_ir_encode(const kiln_ir_segment *seg,
                         const kiln_kernel_options *ko, kiln_buf *b)
{
    kiln__kdb_put_u32(b, IR_MAGIC);
    kiln__kdb_put_u32(b, seg->kind);
    kiln__kdb_put_u32(b, seg->n_nodes);
    for (uint32_t i = 0; i < seg->n_nodes; i++) {
        const kiln_ir_node *x = &seg->nodes[i];
        kiln__kdb_put_u32(b, x->op);
        kiln__kdb_put_u32(b, x->dtype);
        kiln__kdb_put_u32(b, x->rank);
        for (int k = 0; k < 3; k++)
            kiln__kdb_put_u32(b, (uint32_t)x->args[k]);
        kiln__kdb_put_u32(b, x->bcast);
        kiln__kdb_put_u32(b, x->axes);
        kiln__kdb_put_u32(b, x->flags);
        kiln__kdb_put_u32(b, (uint32_t)x->io);
        kiln__kdb_put_u64(b, x->bits);
    }
    kiln__kdb_put_u32(b, seg->n_inputs);
    kiln__kdb_put_u32(b, seg->n_outputs);
    for (uint32_t j = 0; j < seg->n_outputs; j++)
        kiln__kdb_put_u32(b, (uint32_t)seg->outputs[j]);
    int traits = seg->input_traits != NULL && seg->output_traits != NULL;
    kiln__kdb_put_u32(b, (uint32_t)traits);
    for (uint32_t j = 0; traits && j < seg->n_inputs; j++)
        kiln__kdb_put_u32(b, seg->input_traits[j]);
    for (uint32_t j = 0; traits && j < seg->n_outputs; j++)
        kiln__kdb_put_u32(b, seg->output_traits[j]);
    kiln__kdb_put_u32(b, seg->index64);
    kiln__kdb_put_u32(b, (uint32_t)(ko->fast_math != 0));
    kiln__kdb_put_u32(b, (uint32_t)(ko->lineinfo != 0));
    kiln__kdb_put_u32(b, (uint32_t)(ko->debug != 0));
    kiln__kdb_put_u32(b, (uint32_t)(ko->contract != 0));
    kiln__kdb_put_u32(b, (uint32_t)(ko->sass != 0));
    kiln__kdb_put_u64(b, ko->simplify_off);
    kiln__kdb_put_str(b, ko->canonical);
}

void kiln__kdb_ir_free(kiln__kdb_ir *ir)
{
    if (ir == NULL)
        return;
    kiln__free(ir->nodes);
    kiln__free(ir->outputs);
    kiln__free(ir->in_traits);
    kiln__free(ir->out_traits);
    memset(ir, 0, sizeof *ir);
}

static kiln_status ir_bad(kiln__kdb_ir *t, const char *what)
{
    kiln__kdb_ir_free(t);
    if (what == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "kernel payload: out of memory");
    return kiln__err(KILN_ERR_CORRUPT, "kernel payload: %s", what);
}

kiln_status kiln__kdb_ir_decode(const uint8_t *p, size_t n, size_t *used,
                                kiln__kdb_ir *out)
{
    kiln__kdb_rd r = {p, n, 0, 0};
    kiln__kdb_ir t;
    memset(&t, 0, sizeof t);
    if (kiln__kdb_get_u32(&r) != IR_MAGIC)
        return ir_bad(&t, "no segment IR (bad magic)");
    uint32_t kind = kiln__kdb_get_u32(&r);
    uint32_t nn = kiln__kdb_get_u32(&r);
    if (r.bad || kind > KILN_SEGK_MATMUL_FALLBACK || nn == 0 || nn > IR_MAX ||
        (n - r.at) / 48 < nn) /* 48 bytes per node */
        return ir_bad(&t, "bad segment kind or node count");
    t.nodes = kiln__calloc(nn, sizeof *t.nodes);
    if (t.nodes == NULL)
        return ir_bad(&t, NULL);
    for (uint32_t i = 0; i < nn; i++) {
        kiln_ir_node *x = &t.nodes[i];
        uint32_t op = kiln__kdb_get_u32(&r), dt = kiln__kdb_get_u32(&r);
        uint32_t rank = kiln__kdb_get_u32(&r);
        if (op >= KILN_OP_COUNT || dt >= KILN_DTYPE_COUNT || rank > KILN_MAX_RANK)
            return ir_bad(&t, "node op, dtype or rank out of range");
        x->op = (uint16_t)op;
        x->dtype = (uint8_t)dt;
        x->rank = (uint8_t)rank;
        for (int k = 0; k < 3; k++) {
            x->args[k] = (int32_t)kiln__kdb_get_u32(&r);
            if (x->args[k] < -1 || x->args[k] >= (int32_t)i)
                return ir_bad(&t, "node operand is not an earlier node");
        }
        x->bcast = kiln__kdb_get_u32(&r);
        x->axes = kiln__kdb_get_u32(&r);
        x->flags = kiln__kdb_get_u32(&r);
        x->io = (int32_t)kiln__kdb_get_u32(&r);
        x->bits = kiln__kdb_get_u64(&r);
    }
    uint32_t ni = kiln__kdb_get_u32(&r), no = kiln__kdb_get_u32(&r);
    if (r.bad || ni > IR_MAX || no == 0 || no > IR_MAX ||
        (n - r.at) / 4 < no)
        return ir_bad(&t, "bad input or output count");
    for (uint32_t i = 0; i < nn; i++)
        if (t.nodes[i].io < -1 || t.nodes[i].io >= (int32_t)ni)
            return ir_bad(&t, "input index out of range");
    t.outputs = kiln__calloc(no, sizeof *t.outputs);
    if (t.outputs == NULL)
        return ir_bad(&t, NULL);
    for (uint32_t j = 0; j < no; j++) {
        t.outputs[j] = (int32_t)kiln__kdb_get_u32(&r);
        if (t.outputs[j] < 0 || t.outputs[j] >= (int32_t)nn)
            return ir_bad(&t, "output refers to no node");
    }
    uint32_t traits = kiln__kdb_get_u32(&r);
    if (r.bad || traits > 1 || (traits && (n - r.at) / 4 < (uint64_t)ni + no))
        return ir_bad(&t, "bad trait block");
    if (traits) {
        t.in_traits = kiln__calloc(ni + 1, sizeof *t.in_traits);
        t.out_traits = kiln__calloc(no, sizeof *t.out_traits);
        if (t.in_traits == NULL || t.out_traits == NULL)
            return ir_bad(&t, NULL);
        for (uint32_t j = 0; j < ni; j++)
            t.in_traits[j] = kiln__kdb_get_u32(&r);
        for (uint32_t j = 0; j < no; j++)
            t.out_traits[j] = kiln__kdb_get_u32(&r);
    }
    uint32_t idx64 = kiln__kdb_get_u32(&r);
    uint32_t fm = kiln__kdb_get_u32(&r), li = kiln__kdb_get_u32(&r);
    uint32_t dbg = kiln__kdb_get_u32(&r), ct = kiln__kdb_get_u32(&r);
    uint32_t sass = kiln__kdb_get_u32(&r);
    uint64_t simp = kiln__kdb_get_u64(&r);
    kiln__kdb_get_str(&r, t.canonical, sizeof t.canonical);
    if (r.bad || idx64 > 1 || fm > 1 || li > 1 || dbg > 1 || ct > 1 || sass > 1)
        return ir_bad(&t, "bad kernel options");
    t.seg.struct_size = sizeof t.seg;
    t.seg.kind = kind;
    t.seg.nodes = t.nodes;
    t.seg.n_nodes = nn;
    t.seg.n_inputs = ni;
    t.seg.outputs = t.outputs;
    t.seg.n_outputs = no;
    t.seg.input_traits = t.in_traits;
    t.seg.output_traits = t.out_traits;
    t.seg.index64 = idx64;
    t.ko.struct_size = sizeof t.ko;
    t.ko.fast_math = (int)fm;
    t.ko.lineinfo = (int)li;
    t.ko.debug = (int)dbg;
    t.ko.contract = (int)ct;
    t.ko.sass = (int)sass;
    t.ko.simplify_off = simp;
    *out = t;
    /* the pointers into t moved with the copy */
    out->ko.canonical = out->canonical;
    *used = r.at;
    return KILN_OK;
}
