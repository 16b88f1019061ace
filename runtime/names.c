/*
** names.c -- dtype and op names of the public API (kiln_dtype_name,
** kiln_dtype_size, kiln_dtype_parse, kiln_op_name, kiln_op_parse), all read
** from kiln.h's KILN_DTYPE_TABLE and KILN_OP_TABLE.
*/
#include <string.h>

#include "internal.h"

const char *kiln_dtype_name(kiln_dtype t)
{
    switch (t) {
#define KILN_X_(name, value, text, size, ebits, mbits)                         \
    case name:                                                                 \
        return text;
        KILN_DTYPE_TABLE(KILN_X_)
#undef KILN_X_
    default:
        return NULL;
    }
}

size_t kiln_dtype_size(kiln_dtype t)
{
    switch (t) {
#define KILN_X_(name, value, text, size, ebits, mbits)                         \
    case name:                                                                 \
        return size;
        KILN_DTYPE_TABLE(KILN_X_)
#undef KILN_X_
    default:
        return 0;
    }
}

kiln_status kiln_dtype_parse(const char *name, kiln_dtype *out)
{
    if (name == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "kiln_dtype_parse: NULL");
    for (int t = 0; t < KILN_DTYPE_COUNT; t++) {
        if (strcmp(name, kiln_dtype_name((kiln_dtype)t)) == 0) {
            *out = (kiln_dtype)t;
            return KILN_OK;
        }
    }
    return kiln__err(KILN_ERR_DTYPE,
                     "unknown dtype '%s' (valid: bool, i32, i64, f16, bf16, "
                     "f32, f64)",
                     name);
}

static const char *const op_names[KILN_OP_COUNT] = {
#define KILN_X_(name, value, text, arity, kind) [value] = text,
    KILN_OP_TABLE(KILN_X_)
#undef KILN_X_
};

const char *kiln_op_name(kiln_op op)
{
    if ((int)op < 0 || op >= KILN_OP_COUNT)
        return NULL;
    return op_names[op];
}

kiln_status kiln_op_parse(const char *name, kiln_op *out)
{
    if (name == NULL || out == NULL)
        return kiln__err(KILN_ERR_INVALID_ARGUMENT, "kiln_op_parse: NULL");
    for (int op = 0; op < KILN_OP_COUNT; op++) {
        if (strcmp(name, op_names[op]) == 0) {
            *out = (kiln_op)op;
            return KILN_OK;
        }
    }
    return kiln__err(KILN_ERR_PARSE, "unknown op '%s'", name);
}
