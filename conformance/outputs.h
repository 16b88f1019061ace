/* Caller-provided outputs for the conformance runner (docs/conformance.md,
** "Outputs as callers hand them over"): every output the runner checks is
** a view inside a larger allocation of its own, filled with a canary
** pattern, with guard regions before and after it.  Public API only, so it
** works on any backend, a plugin included, in host or device memory. */
#ifndef KILN_CONFORM_OUTPUTS_H
#define KILN_CONFORM_OUTPUTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

/* Bytes of guard before (at least) and after every output. */
#define CF_GUARD_BYTES 64

/* The canary element of `dt` for run `variant` (0 or 1): a signalling NaN
** with a recognisable payload for floats (arithmetic never produces one),
** a fixed odd pattern for integers, a byte that is neither 0 nor 1 for
** bool. */
uint64_t cf_canary(kiln_dtype dt, int variant);

/* One output in its guarded allocation. */
typedef struct cf_guarded {
    kiln_tensor *base;     /* the allocation: bool [total] (bytes) */
    kiln_tensor *view;     /* what execute gets (borrowed data) */
    kiln_dtype dtype;
    size_t off;            /* the output's first byte in the allocation */
    size_t span;           /* its storage extent in bytes */
    size_t total;
    unsigned char *fill;   /* the allocation's bytes before execute */
    unsigned char *after;  /* its bytes after execute (cf_outset_check) */
    int numel_ok;          /* contiguous: elements are checked for canaries */
    int64_t numel;
} cf_guarded;

/* The outputs of one execute. */
typedef struct cf_outset {
    size_t n;
    int variant;
    kiln_tensor **t;       /* n entries, handed to kiln_execute */
    cf_guarded *g;         /* n entries; base NULL where t[i] is not ours */
    /* inputs an output overlaps (given outputs), snapshotted before */
    size_t n_snap;
    struct cf_snap {
        size_t input;
        kiln_tensor *bytes;
        unsigned char *before;
        size_t len;
    } *snap;
} cf_outset;

/* The memory space of ctx's backend, learnt through the public API: an
** allocation of device memory succeeds only on a device-memory backend. */
kiln_memory cf_backend_memory(kiln_context *ctx);

/* Guarded, canary-filled outputs of the shapes kiln_execute gives for
** these inputs (kiln_fusion_output_sizes).  variant 0 places each output
** 16-byte aligned, variant 1 one element past that (not 16-byte aligned).
** Returns 0 on success, -1 when the inputs have no output sizes (an
** execute that must fail: s->t stays all NULL), 1 on an error (err). */
int cf_outset_make(cf_outset *s, kiln_context *ctx, const kiln_fusion *f,
                   kiln_tensor *const *in, size_t n_in, size_t n_out,
                   int variant, char *err, size_t cap);

/* The outputs a test states ("givenOutputs", an invalid numerics test):
** each {"dtype", "shape", "strides"?, "overlaps"?: {"input"|"output": k,
** "byteOffset": b}}.  Returns 0, or 1 with err (an invalid vector). */
int cf_outset_given(cf_outset *s, kiln_context *ctx, const json_t *spec,
                    kiln_tensor *const *in, size_t n_in, size_t n_out,
                    char *err, size_t cap);

/* After execute: every guard byte unchanged; with `written` (the execute
** succeeded) no element of a contiguous output still holds the canary,
** without it every byte of every allocation and every overlapped input
** unchanged.  Returns 0, or 1 with msg naming the output and the byte or
** element. */
int cf_outset_check(cf_outset *s, kiln_context *ctx, int written, char *msg,
                    size_t cap);

/* Two runs of the same execute (after cf_outset_check on both): every
** output's bytes are equal.  Returns 0, or 1 with msg naming the element. */
int cf_outset_same(const cf_outset *a, const cf_outset *b, char *msg,
                   size_t cap);

void cf_outset_free(cf_outset *s);

#endif
