/*
** fuzz_codegen.c -- libFuzzer target for `.kf` parse -> plan -> CUDA
** codegen (`make fuzz-codegen`; the planner and the code generator are
** compiled with coverage instrumentation).
**
** The input is `.kf` text.  Its FNV-1a hash picks what the text cannot say:
** the input signature (dense / 16-byte aligned per input), index64, the
** plan-level options (enable=fuse_matmul, disable=matmul_expr_eval) and
** the kernel-level ones (fast_math, disable=fma, expr_simplify passes).
** Any text must give either a parse failure (KILN_ERR_PARSE / LIMIT /
** NO_MEMORY, output untouched), or a plan (or KILN_ERR_LIMIT for a chain
** past the planner's depth) whose every segment
**   - is within KILN_SEGMENT_MAX_VIEWS of its rank (issue 11: the planner
**     splits, never hands a backend more);
**   - generates CUDA source for both IR variants, or is refused with
**     KILN_ERR_UNSUPPORTED for a reason other than its size (a valid
**     plan never makes the generator see a malformed segment:
**     KILN_ERR_INVALID_ARGUMENT would be a planner bug);
**   - (pointwise) indexes each input it loads by the linear index exactly
**     when that input has KILN_TRAIT_CONTIG (and the index pass is on),
**     else by its strides, and each output likewise.
** A violation aborts (a crash for libFuzzer).  Seeds: tests/fuzz/
** codegen_corpus (the examples/, many-input and alternating fusions).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "backends/cuda_codegen.h"

#define FAIL(...) (fprintf(stderr, "fuzz_codegen: " __VA_ARGS__), fputc('\n', stderr), abort())

/* One pointwise segment's source: each loaded input and each output
** indexed as its trait says (simplify pass `index` on). */
static void check_indexing(const char *src, const kiln_ir_segment *seg)
{
    char pat[3][80];
    for (uint32_t k = 0; k < seg->n_inputs + seg->n_outputs; k++) {
        int out = k >= seg->n_inputs;
        uint32_t j = out ? k - seg->n_inputs : k;
        uint32_t tr = out ? seg->output_traits[j] : seg->input_traits[j];
        snprintf(pat[0], sizeof pat[0], "kld(a.in%u + oi%u)", j, j);
        if (!out && strstr(src, pat[0]) == NULL)
            continue; /* not read (simplified away) */
        snprintf(pat[1], sizeof pat[1], out ? "const ix oo%u = i;" : "const ix oi%u = i;", j);
        snprintf(pat[2], sizeof pat[2],
                 out ? "oo%u += c * (ix)a.os%u[d];" : "oi%u += c * (ix)a.is%u[d];", j, j);
        int dense = (tr & KILN_TRAIT_CONTIG) != 0;
        if ((strstr(src, pat[1]) != NULL) != dense || (strstr(src, pat[2]) != NULL) == dense)
            FAIL("%s %u (traits %u) indexed wrongly", out ? "output" : "input", j, tr);
    }
}

static void check_segment(const kiln__pseg *ps, const kiln_kernel_options *ko)
{
    uint32_t views = ps->n_leaves + ps->n_outs;
    if (views > KILN_SEGMENT_MAX_VIEWS(ps->dom_rank))
        FAIL("segment with %u views over a rank-%d domain", views, ps->dom_rank);
    if (ps->kind == KILN_SEGK_MATMUL_FALLBACK)
        return; /* the library path: no generated code */
    for (int v = 0; v < 1 + ps->contracts; v++) {
        kiln_ir_segment seg;
        kiln__pseg_segment(ps, v, &seg);
        char *src = NULL;
        kiln_cuda_kinfo info;
        kiln_status s = kiln__cuda_codegen(&seg, ko, &src, &info);
        if (s == KILN_ERR_UNSUPPORTED) {
            if (strstr(kiln_last_error(), "views") != NULL)
                FAIL("planned segment refused for its size: %s", kiln_last_error());
            continue;
        }
        if (s != KILN_OK)
            FAIL("codegen of a planned segment: %s: %s", kiln_strerror(s), kiln_last_error());
        if (info.n_inputs != seg.n_inputs || info.n_outputs != seg.n_outputs)
            FAIL("kinfo view counts differ from the segment's");
        if (ps->kind == KILN_SEGK_POINTWISE && !(ko->simplify_off & (1u << 3)))
            check_indexing(src, &seg);
        kiln__free(src);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kiln_fusion *f = NULL;
    kiln_status s = kiln_fusion_parse((const char *)data, size, &f);
    if (s != KILN_OK) {
        if (f != NULL || (s != KILN_ERR_PARSE && s != KILN_ERR_LIMIT &&
                          s != KILN_ERR_NO_MEMORY))
            abort();
        return 0;
    }
    uint64_t h = kiln__fnv1a(data, size, KILN_FNV_SEED);
    struct kiln_options o;
    memset(&o, 0, sizeof o);
    if ((h & 1u) && kiln__options_apply_item(&o, KILN_SET_ENABLE, "fuse_matmul", 0) != KILN_OK)
        abort();
    if ((h & 2u) &&
        kiln__options_apply_item(&o, KILN_SET_DISABLE, "matmul_expr_eval", 0) != KILN_OK)
        abort();
    kiln_kernel_options ko;
    memset(&ko, 0, sizeof ko);
    ko.struct_size = sizeof ko;
    ko.fast_math = (h >> 2) & 1u;
    ko.contract = !((h >> 3) & 1u);
    ko.sass = 1;
    ko.simplify_off = (h >> 4) & 31u;
    ko.canonical = "";
    size_t nsig = (size_t)f->n_inputs + f->n_outputs;
    uint8_t *bits = calloc(nsig + 1, 1);
    if (bits == NULL)
        abort();
    uint64_t r = h;
    for (size_t i = 0; i < nsig; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        bits[i] = (uint8_t)((r >> 60) & (i < f->n_inputs ? 3u : 2u));
    }
    kiln__sig sig = {bits, bits + f->n_inputs, (int)((h >> 9) & 1u)};
    kiln__plan *p = NULL;
    s = kiln__plan_build(f, &o, NULL, &sig, &p);
    if (s == KILN_OK) {
        for (uint32_t i = 0; i < p->n_segs; i++)
            check_segment(&p->segs[i], &ko);
        kiln__plan_free(p);
    } else if (s != KILN_ERR_LIMIT && s != KILN_ERR_FALLBACK_DISABLED) {
        FAIL("plan: %s: %s", kiln_strerror(s), kiln_last_error());
    }
    free(bits);
    kiln_fusion_destroy(f);
    return 0;
}
