/*
** cache.c -- the plan cache and the kernel cache of a context, and the
** interned kernel-option variants.
**
** Keys (docs/runtime.md, "Caches and keys"):
**   plan   = fusion structural hash + input signature + plan-level options
**            (a word array built by keys.c), verified by comparing the
**            whole word array and the fusion's node and output arrays;
**   kernel = serialized segment IR after contraction (nodes, outputs,
**            traits, index width; keys.c picks it and hashes it with the
**            variant) + the variant: canonical kernel-level
**            options + backend identity string (flags, target, compiler
**            version), verified by comparing the blob bytes and the
**            variant (variants are interned by full comparison, so pointer
**            equality is full equality).
** Options of level `none` are in neither key, so they never cause a miss.
**
** Invariants (plan_table_ok() and kern_table_ok() check them, with the
** table's lock held, in assert()s of debug builds; see below):
**   - each table is a hash table of chains plus one LRU list (head = most
**     recently used); an entry is in both or in neither; an entry in use
**     when it is evicted leaves the table and is freed by its last release;
**   - count <= capacity after every insert, except that a PENDING kernel
**     is never evicted;
**   - an entry's refs counts the cache (1 while in the table) plus every
**     execute using it; the last release frees it;
**   - single flight: a missing kernel is inserted in state PENDING before it
**     is compiled (outside the lock); a second thread that needs it waits
**     on kern_cv until it is READY or FAILED.  A FAILED entry is removed
**     from the table at once, so a later call compiles again: no entry in
**     the table is FAILED.
*/
#include <assert.h>
#include <string.h>

#include "core.h"

/* ------------------------------------------------------------------ init */

static size_t pow2_at_least(size_t n)
{
    size_t b = 64;
    while (b < n && b < ((size_t)1 << 20))
        b *= 2;
    return b;
}

kiln_status kiln__caches_init(kiln__caches *c, size_t plan_cap,
                              size_t kern_cap)
{
    memset(c, 0, sizeof *c);
    c->plan_cap = plan_cap;
    c->kern_cap = kern_cap;
    c->plan_nb = pow2_at_least(plan_cap);
    c->kern_nb = pow2_at_least(kern_cap);
    c->plan_buckets = kiln__calloc(c->plan_nb, sizeof *c->plan_buckets);
    c->kern_buckets = kiln__calloc(c->kern_nb, sizeof *c->kern_buckets);
    if (c->plan_buckets == NULL || c->kern_buckets == NULL)
        goto nomem;
    if (pthread_mutex_init(&c->plan_mu, NULL) != 0)
        goto nomem;
    if (pthread_mutex_init(&c->kern_mu, NULL) != 0) {
        pthread_mutex_destroy(&c->plan_mu);
        goto nomem;
    }
    if (pthread_cond_init(&c->kern_cv, NULL) != 0) {
        pthread_mutex_destroy(&c->plan_mu);
        pthread_mutex_destroy(&c->kern_mu);
        goto nomem;
    }
    if (pthread_mutex_init(&c->var_mu, NULL) != 0) {
        pthread_mutex_destroy(&c->plan_mu);
        pthread_mutex_destroy(&c->kern_mu);
        pthread_cond_destroy(&c->kern_cv);
        goto nomem;
    }
    return KILN_OK;
nomem:
    kiln__free(c->plan_buckets);
    kiln__free(c->kern_buckets);
    return kiln__err(KILN_ERR_NO_MEMORY, "caches: out of memory");
}

static void kernel_free(kiln__kernel *k)
{
    if (k->state == 1 && k->be != NULL && k->be->release != NULL)
        k->be->release(k->be_state, k->out.handle);
    kiln__free(k->blob);
    kiln__free(k->error);
    kiln__free(k);
}

void kiln__caches_fini(kiln__caches *c)
{
    for (kiln__plan *p = c->plan_head, *n; p != NULL; p = n) {
        n = p->lru_next;
        kiln__plan_free(p);
    }
    for (kiln__kernel *k = c->kern_head, *n; k != NULL; k = n) {
        n = k->lru_next;
        kernel_free(k);
    }
    for (kiln__variant *v = c->variants, *n; v != NULL; v = n) {
        n = v->next;
        kiln__free(v);
    }
    kiln__free(c->plan_buckets);
    kiln__free(c->kern_buckets);
    pthread_mutex_destroy(&c->plan_mu);
    pthread_mutex_destroy(&c->kern_mu);
    pthread_cond_destroy(&c->kern_cv);
    pthread_mutex_destroy(&c->var_mu);
}

/* ------------------------------------------------------------ invariants */

/* Checkers used only inside assert()s (KILN_ASSERT_SLOW: they walk a whole
** table, so only debug builds run them), with the table's lock held.  Each
** returns 1 when the header's invariants hold.  kern_table_ok's
** `inserted`: the call just inserted a kernel, so the capacity rule
** applies (a PENDING kernel that becomes READY is not evicted until the
** next insert). */
static __attribute__((unused)) int plan_table_ok(const kiln__caches *c)
{
    size_t n = 0;
    for (const kiln__plan *p = c->plan_head, *prev = NULL; p != NULL;
         prev = p, p = p->lru_next) {
        if (p->lru_prev != prev || (p->lru_next == NULL && c->plan_tail != p))
            return 0; /* the LRU list is doubly linked, head to tail */
        const kiln__plan *q = c->plan_buckets[p->hash & (c->plan_nb - 1)];
        while (q != NULL && q != p)
            q = q->chain;
        if (q == NULL || atomic_load(&p->refs) < 1)
            return 0; /* in its bucket's chain; holds the cache's reference */
        if (++n > c->plan_count)
            return 0;
    }
    size_t chained = 0;
    for (size_t b = 0; b < c->plan_nb; b++)
        for (const kiln__plan *q = c->plan_buckets[b]; q != NULL; q = q->chain)
            chained++;
    return n == c->plan_count && chained == n && (n == 0) == (c->plan_tail == NULL) &&
           n <= c->plan_cap;
}

static __attribute__((unused)) int kern_table_ok(const kiln__caches *c, int inserted)
{
    size_t n = 0, pending = 0;
    for (const kiln__kernel *k = c->kern_head, *prev = NULL; k != NULL;
         prev = k, k = k->lru_next) {
        if (k->lru_prev != prev || (k->lru_next == NULL && c->kern_tail != k))
            return 0;
        const kiln__kernel *q = c->kern_buckets[k->hash & (c->kern_nb - 1)];
        while (q != NULL && q != k)
            q = q->chain;
        if (q == NULL || atomic_load(&k->refs) < 1 || !k->in_cache || k->state == 2)
            return 0; /* no FAILED entry stays in the table */
        pending += k->state == 0;
        if (++n > c->kern_count)
            return 0;
    }
    size_t chained = 0;
    for (size_t b = 0; b < c->kern_nb; b++)
        for (const kiln__kernel *q = c->kern_buckets[b]; q != NULL; q = q->chain)
            chained++;
    return n == c->kern_count && chained == n && (n == 0) == (c->kern_tail == NULL) &&
           (!inserted || n <= c->kern_cap + pending);
}

/* ------------------------------------------------------------ plan cache */

static int plan_matches(const kiln__plan *p, uint64_t h, const uint64_t *key,
                        size_t n_key, const kiln_fusion *f)
{
    return p->hash == h && p->n_key == n_key &&
           memcmp(p->key, key, n_key * sizeof *key) == 0 &&
           p->f_n_nodes == f->n_nodes && p->f_n_outputs == f->n_outputs &&
           memcmp(p->f_nodes, f->nodes, f->n_nodes * sizeof *f->nodes) == 0 &&
           memcmp(p->f_outputs, f->outputs,
                  f->n_outputs * sizeof *f->outputs) == 0;
}

static void plan_lru_unlink(kiln__caches *c, kiln__plan *p)
{
    if (p->lru_prev) p->lru_prev->lru_next = p->lru_next;
    else c->plan_head = p->lru_next;
    if (p->lru_next) p->lru_next->lru_prev = p->lru_prev;
    else c->plan_tail = p->lru_prev;
    p->lru_prev = p->lru_next = NULL;
}

static void plan_lru_front(kiln__caches *c, kiln__plan *p)
{
    p->lru_prev = NULL;
    p->lru_next = c->plan_head;
    if (c->plan_head) c->plan_head->lru_prev = p;
    c->plan_head = p;
    if (c->plan_tail == NULL) c->plan_tail = p;
}

kiln__plan *kiln__plan_find(kiln__caches *c, uint64_t h, const uint64_t *key,
                            size_t n_key, const kiln_fusion *f)
{
    pthread_mutex_lock(&c->plan_mu);
    kiln__plan *p = c->plan_buckets[h & (c->plan_nb - 1)];
    while (p != NULL && !plan_matches(p, h, key, n_key, f))
        p = p->chain;
    if (p != NULL) {
        atomic_fetch_add(&p->refs, 1);
        if (c->plan_head != p) {
            plan_lru_unlink(c, p);
            plan_lru_front(c, p);
        }
        c->plan_hits++;
    } else {
        c->plan_misses++;
    }
    assert(p == NULL || c->plan_head == p); /* most recently used */
    KILN_ASSERT_SLOW(plan_table_ok(c));
    pthread_mutex_unlock(&c->plan_mu);
    return p;
}

void kiln__plan_release(kiln__plan *p)
{
    if (p != NULL && atomic_fetch_sub(&p->refs, 1) == 1)
        kiln__plan_free(p);
}

static void plan_unchain(kiln__caches *c, kiln__plan *p)
{
    kiln__plan **pp = &c->plan_buckets[p->hash & (c->plan_nb - 1)];
    while (*pp != p)
        pp = &(*pp)->chain;
    *pp = p->chain;
    p->chain = NULL;
}

/* Drop the cache's reference of each plan of a list linked through
** lru_next (entries already unlinked, lock not held). */
static void release_plans(kiln__plan *p)
{
    while (p != NULL) {
        kiln__plan *n = p->lru_next;
        p->lru_next = NULL;
        kiln__plan_release(p);
        p = n;
    }
}

kiln__plan *kiln__plan_insert(kiln__caches *c, kiln__plan *p)
{
    kiln_fusion f; /* a view of p's fusion arrays, for plan_matches */
    memset(&f, 0, sizeof f);
    f.nodes = p->f_nodes;
    f.n_nodes = p->f_n_nodes;
    f.outputs = p->f_outputs;
    f.n_outputs = p->f_n_outputs;
    kiln__plan *evict = NULL;
    pthread_mutex_lock(&c->plan_mu);
    size_t b = p->hash & (c->plan_nb - 1);
    kiln__plan *q = c->plan_buckets[b];
    while (q != NULL && !plan_matches(q, p->hash, p->key, p->n_key, &f))
        q = q->chain;
    if (q != NULL) { /* another thread built it first: use theirs */
        atomic_fetch_add(&q->refs, 1);
        pthread_mutex_unlock(&c->plan_mu);
        kiln__plan_free(p);
        return q;
    }
    atomic_store(&p->refs, 2); /* the cache + the caller */
    p->chain = c->plan_buckets[b];
    c->plan_buckets[b] = p;
    plan_lru_front(c, p);
    c->plan_count++;
    while (c->plan_count > c->plan_cap && c->plan_tail != NULL &&
           c->plan_tail != p) {
        kiln__plan *old = c->plan_tail;
        plan_lru_unlink(c, old);
        plan_unchain(c, old);
        c->plan_count--;
        c->plan_evictions++;
        old->lru_next = evict; /* free after unlocking */
        evict = old;
    }
    KILN_ASSERT_SLOW(plan_table_ok(c));
    pthread_mutex_unlock(&c->plan_mu);
    release_plans(evict);
    return p;
}

/* -------------------------------------------------------------- variants */

kiln_status kiln__variant_get(kiln_context *ctx, const struct kiln_options *o,
                              const kiln__variant **out)
{
    kiln__caches *c = &ctx->caches;
    struct kiln_options m;
    kiln__options_mask(o, KILN_LEVEL_KERNEL, &m);
    pthread_mutex_lock(&c->var_mu);
    for (kiln__variant *v = c->variants; v != NULL; v = v->next) {
        if (memcmp(&v->masked, &m, sizeof m) == 0) {
            pthread_mutex_unlock(&c->var_mu);
            *out = v;
            return KILN_OK;
        }
    }
    pthread_mutex_unlock(&c->var_mu);

    /* Build outside the lock; a racing thread may intern the same one. */
    kiln__variant *v = kiln__calloc(1, sizeof *v);
    if (v == NULL)
        return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
    v->masked = m;
    kiln_status s = kiln__kernel_options(&m, &v->ko, v->canonical,
                                         sizeof v->canonical);
    if (s == KILN_OK)
        s = ctx->be.identity(ctx->be_state, &v->ko, v->identity,
                             sizeof v->identity);
    if (s == KILN_OK && !kiln__be_terminated(v->identity, sizeof v->identity)) {
        kiln__err(KILN_ERR_ABI, "backend %s: the identity string for kernel "
                                "options '%s' is not NUL-terminated within "
                                "its %zu bytes",
                  ctx->name, v->canonical, sizeof v->identity);
        kiln__free(v);
        return KILN_ERR_ABI;
    }
    if (s != KILN_OK) {
        if (s != KILN_ERR_NO_MEMORY)
            kiln__err(s, "backend %s: identity failed for kernel options "
                         "'%s'",
                      ctx->name, v->canonical);
        kiln__free(v);
        return s;
    }
    v->ko.canonical = v->canonical;
    uint64_t h = kiln__fnv1a(v->canonical, strlen(v->canonical), KILN_FNV_SEED);
    h = kiln__fnv1a("\n", 1, h);
    v->hash = kiln__fnv1a(v->identity, strlen(v->identity), h);

    pthread_mutex_lock(&c->var_mu);
    for (kiln__variant *w = c->variants; w != NULL; w = w->next) {
        if (memcmp(&w->masked, &m, sizeof m) == 0) {
            pthread_mutex_unlock(&c->var_mu);
            kiln__free(v);
            *out = w;
            return KILN_OK;
        }
    }
    v->next = c->variants;
    c->variants = v;
    pthread_mutex_unlock(&c->var_mu);
    *out = v;
    return KILN_OK;
}

/* ---------------------------------------------------------- kernel cache */

static void kern_lru_unlink(kiln__caches *c, kiln__kernel *k)
{
    if (k->lru_prev) k->lru_prev->lru_next = k->lru_next;
    else c->kern_head = k->lru_next;
    if (k->lru_next) k->lru_next->lru_prev = k->lru_prev;
    else c->kern_tail = k->lru_prev;
    k->lru_prev = k->lru_next = NULL;
}

static void kern_lru_front(kiln__caches *c, kiln__kernel *k)
{
    k->lru_prev = NULL;
    k->lru_next = c->kern_head;
    if (c->kern_head) c->kern_head->lru_prev = k;
    c->kern_head = k;
    if (c->kern_tail == NULL) c->kern_tail = k;
}

/* Remove k from the table and the LRU list (lock held); the caller drops
** the cache's reference after unlocking. */
static void kern_remove(kiln__caches *c, kiln__kernel *k)
{
    kiln__kernel **pp = &c->kern_buckets[k->hash & (c->kern_nb - 1)];
    while (*pp != k)
        pp = &(*pp)->chain;
    *pp = k->chain;
    k->chain = NULL;
    kern_lru_unlink(c, k);
    k->in_cache = 0;
    c->kern_count--;
}

void kiln__kernel_release(kiln__kernel *k)
{
    if (k != NULL && atomic_fetch_sub(&k->refs, 1) == 1)
        kernel_free(k);
}

/* The same for kernels (linked through lru_next by the evicting code). */
static void release_kernels(kiln__kernel *k)
{
    while (k != NULL) {
        kiln__kernel *n = k->lru_next;
        kiln__kernel_release(k);
        k = n;
    }
}

/* The backend-facing segment IR of `s` under variant `v` (contracted when
** the variant allows contraction).  Borrows s's arrays. */
void kiln__pseg_ir(const kiln__pseg *s, const kiln__variant *v,
                   kiln_ir_segment *seg)
{
    kiln__pseg_segment(s, v->ko.contract, seg);
}

/* Compile blob's segment with backend (be, state); when the REFERENCE
** fallback applies to its answer (fallback.c), with the reference backend
** instead, marking the kernel `reference`. */
kiln_status kiln__compile_into(kiln_context *ctx, const kiln__pseg *s,
                               const kiln__variant *v, kiln__kernel *k,
                               char *err, size_t cap)
{
    kiln_ir_segment seg;
    kiln__pseg_ir(s, v, &seg);
    memset(&k->out, 0, sizeof k->out);
    kiln_status st = ctx->be.compile(ctx->be_state, &seg, &v->ko, &k->out,
                                     err, cap);
    k->be = &ctx->be;
    k->be_state = ctx->be_state;
    if (kiln__fallback_applies(ctx, st))
        st = kiln__fallback_compile(ctx, &seg, &v->ko, k, err, cap);
    kiln__be_str(err, cap);
    if (st == KILN_OK && (!kiln__be_terminated(k->out.path, sizeof k->out.path) ||
                          !kiln__be_terminated(k->out.flags,
                                               sizeof k->out.flags))) {
        if (k->be->release != NULL)
            k->be->release(k->be_state, k->out.handle);
        snprintf(err, cap, "compile returned a kernel path or flags string "
                           "that is not NUL-terminated within its %zu or %zu "
                           "bytes",
                 sizeof k->out.path, sizeof k->out.flags);
        st = KILN_ERR_ABI;
    }
    return st;
}

kiln_status kiln__kernel_get(kiln_context *ctx, const kiln__pseg *s,
                             const kiln__variant *v, int nocache, int use_db,
                             kiln__kernel **out, int *hit)
{
    kiln__caches *c = &ctx->caches;
    uint64_t h;
    const kiln__segir *kir = kiln__kernel_key(s, v, &h);
    char err[KILN_ERR_MSG_CAP];
    err[0] = '\0';
    kiln__kernel *k;
    pthread_mutex_lock(&c->kern_mu);
    if (!nocache) {
        for (k = c->kern_buckets[h & (c->kern_nb - 1)]; k != NULL;
             k = k->chain) {
            if (k->hash == h && k->var == v && k->blob_len == kir->blob_len &&
                memcmp(k->blob, kir->blob, kir->blob_len) == 0)
                break;
        }
        if (k != NULL) {
            atomic_fetch_add(&k->refs, 1);
            c->kern_hits++;
            if (c->kern_head != k) {
                kern_lru_unlink(c, k);
                kern_lru_front(c, k);
            }
            while (k->state == 0)
                pthread_cond_wait(&c->kern_cv, &c->kern_mu);
            KILN_ASSERT_SLOW(kern_table_ok(c, 0));
            pthread_mutex_unlock(&c->kern_mu);
            if (k->state == 2) {
                kiln_status st = k->status;
                kiln__err(st, "%s", k->error ? k->error : "compile failed");
                kiln__kernel_release(k);
                return st;
            }
            *out = k;
            *hit = 1;
            return KILN_OK;
        }
    }
    c->kern_misses++;
    k = kiln__calloc(1, sizeof *k);
    uint8_t *blob = kiln__malloc(kir->blob_len);
    if (k == NULL || blob == NULL) {
        pthread_mutex_unlock(&c->kern_mu);
        kiln__free(k);
        kiln__free(blob);
        return kiln__err(KILN_ERR_NO_MEMORY, "execute: out of memory");
    }
    memcpy(blob, kir->blob, kir->blob_len);
    k->hash = h;
    k->blob = blob;
    k->blob_len = kir->blob_len;
    k->var = v;
    k->state = 0;
    kiln__kernel *evict = NULL;
    if (!nocache) {
        atomic_store(&k->refs, 2);
        size_t b = h & (c->kern_nb - 1);
        k->chain = c->kern_buckets[b];
        c->kern_buckets[b] = k;
        kern_lru_front(c, k);
        k->in_cache = 1;
        c->kern_count++;
        for (kiln__kernel *t = c->kern_tail;
             c->kern_count > c->kern_cap && t != NULL;) {
            kiln__kernel *prev = t->lru_prev;
            if (t != k && t->state != 0) { /* never evict a pending one */
                kern_remove(c, t);
                c->kern_evictions++;
                t->lru_next = evict;
                evict = t;
            }
            t = prev;
        }
    } else {
        atomic_store(&k->refs, 1);
    }
    KILN_ASSERT_SLOW(kern_table_ok(c, 1));
    pthread_mutex_unlock(&c->kern_mu);
    release_kernels(evict);

    /* nocache (disable=nvrtc_caching) recompiles: no database either */
    int compiled = 0;
    kiln_status st = kiln__kdb_obtain(ctx, s, v, kir, k, use_db && !nocache,
                                      &compiled, err, sizeof err);

    pthread_mutex_lock(&c->kern_mu);
    c->compiles += (uint64_t)compiled;
    if (st == KILN_OK) {
        k->state = 1;
        if (k->be->memory == KILN_MEM_DEVICE)
            c->loads++;
    } else {
        k->state = 2;
        k->status = st;
        k->error = kiln__strdup(err[0] ? err : kiln_strerror(st));
        if (k->in_cache) {
            kern_remove(c, k);
            atomic_fetch_sub(&k->refs, 1); /* the cache's; waiters hold theirs */
        }
    }
    pthread_cond_broadcast(&c->kern_cv);
    KILN_ASSERT_SLOW(kern_table_ok(c, 0));
    pthread_mutex_unlock(&c->kern_mu);
    if (st != KILN_OK) {
        kiln__err(st, "backend %s: %s", ctx->name,
                  err[0] ? err : kiln_strerror(st));
        kiln__kernel_release(k);
        return st;
    }
    *out = k;
    *hit = 0;
    return KILN_OK;
}

/* ------------------------------------------------------------- clearing */

kiln_status kiln_context_clear_caches(kiln_context *ctx)
{
    if (ctx == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT,
                         "kiln_context_clear_caches: ctx is NULL");
    kiln__caches *c = &ctx->caches;
    kiln__plan *plans = NULL;
    pthread_mutex_lock(&c->plan_mu);
    while (c->plan_tail != NULL) {
        kiln__plan *old = c->plan_tail;
        plan_lru_unlink(c, old);
        plan_unchain(c, old);
        c->plan_count--;
        c->plan_evictions++;
        old->lru_next = plans; /* released after unlocking */
        plans = old;
    }
    pthread_mutex_unlock(&c->plan_mu);
    kiln__kernel *kerns = NULL;
    pthread_mutex_lock(&c->kern_mu);
    for (kiln__kernel *t = c->kern_tail; t != NULL;) {
        kiln__kernel *prev = t->lru_prev;
        if (t->state != 0) { /* a pending one's compiler still needs it */
            kern_remove(c, t);
            c->kern_evictions++;
            t->lru_next = kerns;
            kerns = t;
        }
        t = prev;
    }
    pthread_mutex_unlock(&c->kern_mu);
    release_plans(plans);
    release_kernels(kerns);
    kiln__err_clear();
    return KILN_OK;
}
