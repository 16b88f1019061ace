/*
** exec_info.c -- the execute info record (kiln_exec_info, kiln.h): what
** one kiln_execute call did, filled by its last step (execute.h).
*/
#include <stdlib.h>
#include <string.h>

#include "execute.h"

typedef struct seg_text {
    char flags[256];
    char path[16];
} seg_text;

struct kiln_exec_info {
    int valid;
    struct kiln_options eo;
    kiln_buf canon;
    char backend[64];
    uint64_t plan_id;
    int plan_hit;
    size_t n_segs, cap_segs;
    kiln_segment_info *segs;
    seg_text *text;
};

kiln_status kiln_exec_info_create(kiln_exec_info **out)
{
    if (out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_exec_info_create: out is NULL");
    kiln_exec_info *i = kiln__calloc(1, sizeof *i);
    if (i == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "kiln_exec_info_create: out of memory");
    *out = i;
    kiln__err_clear();
    return KILN_OK;
}

void kiln_exec_info_destroy(kiln_exec_info *info)
{
    if (info == NULL)
        return;
    kiln__buf_free(&info->canon);
    kiln__free(info->segs);
    kiln__free(info->text);
    kiln__free(info);
}

const char *kiln_exec_info_options(const kiln_exec_info *info)
{
    if (info == NULL || !info->valid || info->canon.data == NULL)
        return "";
    return info->canon.data;
}

kiln_status kiln_exec_info_plan(const kiln_exec_info *info, uint64_t *plan_id,
                                int *plan_hit)
{
    if (info == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "kiln_exec_info_plan: info is NULL");
    if (!info->valid)
        return kiln__err(KILN_ERR_STATE,
                         "kiln_exec_info_plan: no successful execute filled this record");
    if (plan_id) *plan_id = info->plan_id;
    if (plan_hit) *plan_hit = info->plan_hit;
    return KILN_OK;
}

size_t kiln_exec_info_segment_count(const kiln_exec_info *info)
{
    return info != NULL && info->valid ? info->n_segs : 0;
}

kiln_status kiln_exec_info_segment(const kiln_exec_info *info, size_t i,
                                   kiln_segment_info *out)
{
    if (info == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_exec_info_segment: NULL argument");
    /* callers built before kernel_db was appended pass the older size */
    if (out->struct_size < offsetof(kiln_segment_info, kernel_db))
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_exec_info_segment: out->struct_size %zu is too "
                         "small (set it to sizeof(kiln_segment_info))",
                         out->struct_size);
    if (!info->valid || i >= info->n_segs)
        return kiln__err(KILN_ERR_NOT_FOUND,
                         "kiln_exec_info_segment: segment %zu does not exist "
                         "(the record has %zu)",
                         i, info->valid ? info->n_segs : (size_t)0);
    size_t n = out->struct_size < sizeof *out ? out->struct_size : sizeof *out;
    memcpy(out, &info->segs[i], n);
    out->struct_size = n;
    return KILN_OK;
}

const char *kiln_db_outcome_name(kiln_db_outcome o)
{
    static const char *const names[] = {"none",   "hit",     "miss",
                                        "stored", "corrupt", "refused"};
    return (unsigned)o < sizeof names / sizeof names[0] ? names[o] : "?";
}

static const char *kind_name(kiln_segment_kind k)
{
    return k == KILN_SEG_GENERATED  ? "generated"
           : k == KILN_SEG_FALLBACK ? "fallback"
                                    : "reference";
}

static void json_str(kiln_buf *b, const char *s)
{
    kiln__buf_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            kiln__buf_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            kiln__buf_printf(b, "\\u%04x", *p);
        else
            kiln__buf_add(b, (const char *)p, 1);
    }
    kiln__buf_puts(b, "\"");
}

kiln_status kiln_exec_info_json(const kiln_exec_info *info, char **out)
{
    if (info == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_exec_info_json: NULL argument");
    if (!info->valid)
        return kiln__err(KILN_ERR_STATE,
                         "kiln_exec_info_json: no successful execute filled this record");
    kiln_buf b = {0};
    kiln__buf_puts(&b, "{\"backend\": ");
    json_str(&b, info->backend);
    kiln__buf_puts(&b, ", \"options\": ");
    json_str(&b, kiln_exec_info_options(info));
    static const struct { const char *name; kiln_level level; } lv[] = {
        {"plan", KILN_LEVEL_PLAN}, {"kernel", KILN_LEVEL_KERNEL},
        {"none", KILN_LEVEL_NONE}};
    kiln__buf_puts(&b, ", \"levels\": {");
    for (size_t k = 0; k < 3; k++) {
        kiln_buf t = {0};
        kiln__options_canonical_buf(&info->eo, lv[k].level, &t);
        kiln__buf_printf(&b, "%s\"%s\": ", k ? ", " : "", lv[k].name);
        json_str(&b, t.data ? t.data : "");
        if (t.failed)
            b.failed = 1;
        kiln__buf_free(&t);
    }
    kiln__buf_printf(&b, "}, \"plan_id\": \"%016llx\", \"plan_hit\": %s, "
                         "\"segments\": [",
                     (unsigned long long)info->plan_id,
                     info->plan_hit ? "true" : "false");
    for (size_t i = 0; i < info->n_segs; i++) {
        const kiln_segment_info *s = &info->segs[i];
        kiln__buf_printf(&b, "%s{\"kind\": \"%s\", \"what\": \"%s\", "
                             "\"kernel_id\": \"%016llx\", \"hit\": %s, "
                             "\"flags\": ",
                         i ? ", " : "", kind_name(s->kind), s->what,
                         (unsigned long long)s->kernel_id,
                         s->kernel_hit ? "true" : "false");
        json_str(&b, s->flags);
        kiln__buf_puts(&b, ", \"path\": ");
        json_str(&b, s->path);
        kiln__buf_printf(&b, ", \"device\": %d, \"gpu_ms\": %.6g, "
                             "\"kernel_db\": \"%s\"}",
                         s->device, s->gpu_ms, kiln_db_outcome_name(s->kernel_db));
    }
    kiln__buf_puts(&b, "]}");
    if (b.failed) {
        kiln__buf_free(&b);
        return kiln__err(KILN_ERR_NO_MEMORY, "kiln_exec_info_json: out of memory");
    }
    *out = b.data;
    return KILN_OK;
}


kiln_status kiln__exec_info_fill(kiln_exec_info *info,
                                 const struct kiln_options *eo,
                                 const kiln__call *c,
                                 const uint8_t *reference,
                                 const double *gpu_ms)
{
    const kiln_context *ctx = c->ctx;
    const kiln__plan *p = c->plan;
    int plan_hit = c->plan_hit;
    info->valid = 0;
    info->eo = *eo;
    info->canon.len = 0;
    if (info->canon.data != NULL)
        info->canon.data[0] = '\0';
    kiln__options_canonical_buf(eo, KILN_LEVEL_ALL, &info->canon);
    if (info->canon.failed) {
        kiln__buf_free(&info->canon);
        return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory (info)");
    }
    if (info->cap_segs < p->n_segs) {
        kiln_segment_info *s = kiln__realloc(info->segs, p->n_segs * sizeof *s);
        if (s == NULL)
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory (info)");
        info->segs = s;
        seg_text *t = kiln__realloc(info->text, p->n_segs * sizeof *t);
        if (t == NULL)
            return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory (info)");
        info->text = t;
        info->cap_segs = p->n_segs;
    }
    snprintf(info->backend, sizeof info->backend, "%s", ctx->name);
    info->plan_id = p->hash;
    info->plan_hit = plan_hit;
    info->n_segs = p->n_segs;
    for (uint32_t i = 0; i < p->n_segs; i++) {
        const kiln__kernel *k = c->kern[i];
        kiln_segment_info *s = &info->segs[i];
        memset(s, 0, sizeof *s);
        s->struct_size = sizeof *s;
        int ref = reference[i];
        s->kind = ref ? KILN_SEG_REFERENCE
                  : p->segs[i].kind == KILN_SEGK_MATMUL_FALLBACK
                      ? KILN_SEG_FALLBACK
                      : KILN_SEG_GENERATED;
        s->what = p->segs[i].what;
        s->kernel_id = k->hash;
        s->kernel_hit = c->hit[i];
        s->kernel_db = c->hit[i] ? KILN_DB_NONE : k->db; /* this call's part */
        snprintf(info->text[i].flags, sizeof info->text[i].flags, "%s",
                 ref == 2 ? "" : k->out.flags);
        snprintf(info->text[i].path, sizeof info->text[i].path, "%s",
                 ref ? "ref" : k->out.path);
        s->flags = info->text[i].flags;
        s->path = info->text[i].path;
        s->device = (!ref && ctx->be.memory == KILN_MEM_DEVICE) ? ctx->device : -1;
        s->gpu_ms = gpu_ms[i];
    }
    info->valid = 1;
    return KILN_OK;
}

void kiln__exec_info_invalidate(kiln_exec_info *info)
{
    info->valid = 0;
}
