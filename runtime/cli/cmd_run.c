/*
** cmd_run.c -- `kiln run`: execute a .kf fusion on .npy (or random) inputs,
** optionally several times in one context, printing the info record.
**
** Input names: NAME in --input/--shape is either the input's position
** (0, 1, ...) or the %name its `input` line has in the file, as the parser
** read it (kiln_fusion_input_name): the file is never scanned a second
** way, so a name binds to the input the parser bound it to.
**
** Output: nothing reaches stdout until every run has succeeded (the text
** is collected in memory first), so a failure prints only its message.
*/
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tool/npy.h"
#include "ckd.h"
#include "kiln.h"
#include "numeric.h"

#define MAX_ITEMS 64
#define MAX_INPUTS 64

static void usage(FILE *o)
{
    fprintf(o,
            "usage: kiln run FUSION.kf [--input NAME=FILE.npy]... [--random SEED]\n"
            "                [--shape NAME=AxB...]... [--size N] [--enable ITEM]...\n"
            "                [--disable ITEM]... [--repeat N] [--out DIR] [--info]\n"
            "                [--backend B] [--layout NAME=pitched|column-major]...\n\n"
            "Execute a fusion.  NAME is an input's position (0, 1, ...) or the\n"
            "%%name of its `input` line.  Inputs not given with --input get\n"
            "deterministic random data from --random SEED (floats in [-2, 2),\n"
            "integers in [-100, 100]); their shape is --shape NAME=2x3, or every\n"
            "`?` axis --size N (default 4) and every declared `1` axis 1.\n\n"
            "  --input NAME=FILE.npy  the data of input NAME (repeatable)\n"
            "  --random SEED  random data for the inputs without --input\n"
            "  --shape NAME=AxB  the shape of a random input (repeatable)\n"
            "  --size N     every `?` axis of a random input (default 4)\n"
            "  --enable/--disable ITEM  execute option elements (one item each)\n"
            "  --layout NAME=L  pass input NAME as a strided view: pitched (unit\n"
            "               inner stride, one element of padding after every row)\n"
            "               or column-major (the fuzz category's layouts)\n"
            "  --repeat N   run N times in one context (cache hits become visible)\n"
            "  --out DIR    write output J to DIR/outJ.npy (else a summary line);\n"
            "               DIR and missing parents are created (like mkdir -p)\n"
            "               before anything runs\n"
            "  --info       print the backend used (and, for auto, why), each\n"
            "               run's info record as one JSON line, then the outputs\n"
            "  --backend B  ref, cuda, auto (default: cuda if usable, else ref),\n"
            "               or the path of a backend plugin (a name ending in .so\n"
            "               is a file: my_backend.so means ./my_backend.so)\n\n"
            "Options take their value as --opt VALUE or --opt=VALUE.  A summary\n"
            "line shows an output's dtype, shape and first 8 values (f16 and bf16\n"
            "as numbers).  Nothing is printed on stdout unless every run succeeds.\n"
            ".npy dtypes: |b1 <i4 <i8 <f2 <f4 <f8, and <V2 for bf16 bit patterns.\n"
            "Exit status: 0 ok, 1 the run failed, 2 usage error.\n");
}

/* Position of input NAME (len bytes): digits are a position below
** n_inputs, "%name" the input the parser gave that name; -1 when there is
** no such input. */
static int find_input(const kiln_fusion *f, const char *name, size_t len,
                      int n_inputs)
{
    if (len > 0 && isdigit((unsigned char)name[0])) {
        char *end;
        long v = strtol(name, &end, 10);
        if ((size_t)(end - name) == len && v >= 0 && v < n_inputs)
            return (int)v;
        return -1;
    }
    if (len < 2 || name[0] != '%')
        return -1;
    for (int i = 0; i < n_inputs; i++) {
        const char *nm = NULL;
        if (kiln_fusion_input_name(f, i, &nm) == KILN_OK && nm != NULL &&
            strlen(nm) == len - 1 && memcmp(nm, name + 1, len - 1) == 0)
            return i;
    }
    return -1;
}

/* Element i as a number; floats with the digits that round-trip their
** dtype (f16 5, bf16 4, f32 9, f64 17 significant digits). */
static void print_value(FILE *out, kiln_dtype t, const void *p, size_t i)
{
    switch (t) {
    case KILN_BOOL: fprintf(out, "%s", ((const uint8_t *)p)[i] ? "true" : "false"); break;
    case KILN_I32: fprintf(out, "%d", ((const int32_t *)p)[i]); break;
    case KILN_I64: fprintf(out, "%lld", (long long)((const int64_t *)p)[i]); break;
    case KILN_F16:
        fprintf(out, "%.5g", kiln__f16_to_f64(((const uint16_t *)p)[i]));
        break;
    case KILN_BF16:
        fprintf(out, "%.4g", kiln__bf16_to_f64(((const uint16_t *)p)[i]));
        break;
    case KILN_F32: fprintf(out, "%.9g", (double)((const float *)p)[i]); break;
    case KILN_F64: fprintf(out, "%.17g", ((const double *)p)[i]); break;
    default: break;
    }
}

/* 1 when the context's backend keeps tensors in device memory. */
static int uses_device(kiln_context *ctx)
{
    kiln_tensor *t = NULL;
    if (kiln_tensor_create(ctx, KILN_F32, 0, NULL, NULL, KILN_MEM_DEVICE, NULL,
                           &t) != KILN_OK)
        return 0;
    kiln_tensor_destroy(t);
    return 1;
}

static int fail(const char *what)
{
    kiln_error_info e = {sizeof e, 0, 0, 0, 0, 0};
    kiln_last_error_info(&e);
    fprintf(stderr, "kiln run: %s: %s: %s\n", what, kiln_status_name(e.status),
            kiln_last_error());
    return 1;
}

enum {
    R_INPUT, R_RANDOM, R_SHAPE, R_SIZE, R_ENABLE, R_DISABLE, R_REPEAT, R_OUT,
    R_INFO, R_BACKEND, R_LAYOUT
};
static const cli_opt run_opts[] = {
    [R_INPUT] = {"--input", CLI_VALUE},     [R_RANDOM] = {"--random", CLI_VALUE},
    [R_SHAPE] = {"--shape", CLI_VALUE},     [R_SIZE] = {"--size", CLI_VALUE},
    [R_ENABLE] = {"--enable", CLI_VALUE},   [R_DISABLE] = {"--disable", CLI_VALUE},
    [R_REPEAT] = {"--repeat", CLI_VALUE},   [R_OUT] = {"--out", CLI_VALUE},
    [R_INFO] = {"--info", CLI_FLAG},        [R_BACKEND] = {"--backend", CLI_VALUE},
    [R_LAYOUT] = {"--layout", CLI_VALUE},
    {NULL, CLI_FLAG},
};

/* "backend NAME", and for auto the reason cuda was not chosen. */
static void print_backend(FILE *out, kiln_context *ctx, const char *asked)
{
    const char *name = kiln_context_backend(ctx);
    fprintf(out, "backend %s", name);
    if (strcmp(asked, "auto") == 0) {
        char why[512] = "";
        if (strcmp(name, "cuda") == 0)
            fprintf(out, " (auto: cuda is usable)");
        else if (kiln_backend_probe("cuda", why, sizeof why) != KILN_OK)
            fprintf(out, " (auto: cuda not usable: %s)", why);
        else
            fprintf(out, " (auto)");
    }
    fputc('\n', out);
}

int kiln_cmd_run(int argc, char **argv)
{
    static const char cmd[] = "kiln run";
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *path = NULL, *out_dir = NULL, *backend = "auto";
    const char *enable[MAX_ITEMS], *disable[MAX_ITEMS];
    size_t n_en = 0, n_dis = 0;
    const char *in_spec[MAX_INPUTS], *shape_spec[MAX_INPUTS];
    int n_in_spec = 0, n_shape_spec = 0, info_json = 0, have_seed = 0;
    const char *layout_spec[MAX_INPUTS];
    int n_layout_spec = 0;
    long repeat = 1, size = 4;
    uint64_t seed = 0;
    cli_args args;
    cli_args_init(&args, cmd, run_opts, argc, argv);
    const char *val;
    int opt;
    while ((opt = cli_next(&args, &val)) != CLI_DONE) {
        int full = 0;
        switch (opt) {
        case CLI_USAGE: return 2;
        case CLI_POSITIONAL:
            if (path != NULL)
                return cli_usage(cmd, "more than one fusion file ('%s')", val);
            path = val;
            break;
        case R_INFO: info_json = 1; break;
        case R_INPUT:
            if (!(full = n_in_spec == MAX_INPUTS))
                in_spec[n_in_spec++] = val;
            break;
        case R_SHAPE:
            if (!(full = n_shape_spec == MAX_INPUTS))
                shape_spec[n_shape_spec++] = val;
            break;
        case R_LAYOUT:
            if (!(full = n_layout_spec == MAX_INPUTS))
                layout_spec[n_layout_spec++] = val;
            break;
        case R_ENABLE:
            if (!(full = n_en == MAX_ITEMS))
                enable[n_en++] = val;
            break;
        case R_DISABLE:
            if (!(full = n_dis == MAX_ITEMS))
                disable[n_dis++] = val;
            break;
        case R_RANDOM: {
            char *end;
            errno = 0;
            seed = strtoull(val, &end, 10);
            if (errno || !isdigit((unsigned char)*val) || *end != '\0')
                return cli_usage(cmd, "--random needs a non-negative integer "
                                 "seed, not '%s'", val);
            have_seed = 1;
            break;
        }
        case R_REPEAT:
            if (cli_long(cmd, "--repeat", val, 1, LONG_MAX, &repeat) != 0)
                return 2;
            break;
        case R_SIZE:
            if (cli_long(cmd, "--size", val, 0, LONG_MAX, &size) != 0)
                return 2;
            break;
        case R_OUT: out_dir = val; break;
        case R_BACKEND: backend = val; break;
        default: return 2;
        }
        if (full)
            return cli_usage(cmd, "at most %d %s options", MAX_ITEMS,
                             run_opts[opt].name);
    }
    if (path == NULL)
        return cli_usage(cmd, "no fusion file given");
    if (out_dir != NULL) { /* before anything runs: mkdir -p, writable */
        char err[4400];
        if (cli_make_dir(out_dir, err, sizeof err) != 0)
            return cli_usage(cmd, "--out %s", err);
    }

    size_t text_len = 0;
    char rerr[4400];
    char *text = cli_read_file(path, &text_len, rerr, sizeof rerr);
    if (text == NULL) {
        fprintf(stderr, "kiln run: %s\n", rerr);
        return 1;
    }
    int rc = 1;
    kiln_fusion *f = NULL;
    kiln_context *ctx = NULL;
    kiln_exec_info *info = NULL;
    kiln_tensor *inputs[MAX_INPUTS] = {0}, *bases[MAX_INPUTS] = {0};
    kiln_tensor **outs = NULL;
    void **host_out = NULL;
    int n_inputs = 0, n_outputs = 0;
    char *res_text = NULL; /* stdout, held back until the end */
    size_t res_len = 0;
    FILE *res = open_memstream(&res_text, &res_len);
    if (res == NULL) {
        fprintf(stderr, "kiln run: out of memory\n");
        free(text);
        return 1;
    }

    if (kiln_fusion_parse(text, text_len, &f) != KILN_OK) {
        fprintf(stderr, "kiln run: %s:%s\n", path, kiln_last_error());
        goto done;
    }
    kiln_fusion_num_inputs(f, &n_inputs);
    kiln_fusion_num_outputs(f, &n_outputs);
    if (n_inputs > MAX_INPUTS) {
        fprintf(stderr, "kiln run: at most %d inputs are supported\n", MAX_INPUTS);
        goto done;
    }

    kiln_context_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.backend = backend;
    if (kiln_context_create(&cfg, &ctx) != KILN_OK) {
        rc = fail("context");
        goto done;
    }
    int device = uses_device(ctx);

    /* which input comes from which file / shape */
    const char *file_of[MAX_INPUTS] = {0};
    const char *shape_of[MAX_INPUTS] = {0};
    const char *layout_of[MAX_INPUTS] = {0};
    for (int k = 0; k < n_in_spec + n_shape_spec + n_layout_spec; k++) {
        int is_in = k < n_in_spec;
        int is_layout = k >= n_in_spec + n_shape_spec;
        const char *s = is_in ? in_spec[k]
                        : is_layout ? layout_spec[k - n_in_spec - n_shape_spec]
                                    : shape_spec[k - n_in_spec];
        const char *eq = strchr(s, '=');
        int idx = eq ? find_input(f, s, (size_t)(eq - s), n_inputs) : -1;
        if (idx < 0) {
            fprintf(stderr,
                    "kiln run: %s '%s': expected NAME=%s with NAME an input "
                    "position (0..%d) or an input's %%name\n",
                    is_in ? "--input" : is_layout ? "--layout" : "--shape", s,
                    is_in ? "FILE.npy" : is_layout ? "LAYOUT" : "AxB",
                    n_inputs - 1);
            rc = 2;
            goto done;
        }
        if (is_layout) {
            int64_t st[1];
            size_t sto;
            if (kiln_npy_layout(eq + 1, 0, NULL, st, &sto) != 0) {
                fprintf(stderr, "kiln run: --layout '%s': the layout is "
                                "pitched or column-major\n", s);
                rc = 2;
                goto done;
            }
            layout_of[idx] = eq + 1;
        } else if (is_in)
            file_of[idx] = eq + 1;
        else
            shape_of[idx] = eq + 1;
    }
    uint64_t state = seed;
    for (int i = 0; i < n_inputs; i++) {
        kiln_dtype dt;
        int rank;
        uint8_t bc[KILN_MAX_RANK];
        kiln_fusion_io(f, 0, i, &dt, &rank, bc);
        kiln_npy a;
        char err[512];
        memset(&a, 0, sizeof a);
        if (file_of[i] != NULL) {
            if (kiln_npy_read(file_of[i], &a, err, sizeof err) != 0) {
                fprintf(stderr, "kiln run: input %d: %s\n", i, err);
                goto done;
            }
            if (a.dtype != dt) {
                fprintf(stderr, "kiln run: input %d: %s holds %s, the fusion "
                                "declares %s\n",
                        i, file_of[i], kiln_dtype_name(a.dtype), kiln_dtype_name(dt));
                kiln_npy_free(&a);
                goto done;
            }
        } else if (have_seed) {
            a.dtype = dt;
            a.rank = rank;
            for (int d = 0; d < rank; d++)
                a.sizes[d] = bc[d] ? 1 : size;
            if (shape_of[i] != NULL) {
                const char *s = shape_of[i];
                int r = 0;
                while (*s && r < KILN_MAX_RANK) {
                    char *end;
                    long long v = strtoll(s, &end, 10);
                    if (end == s || v < 0)
                        break;
                    a.sizes[r++] = v;
                    s = *end == 'x' ? end + 1 : end;
                    if (*end != 'x')
                        break;
                }
                if (*s != '\0' || r != rank) {
                    fprintf(stderr, "kiln run: --shape for input %d: '%s' is "
                                    "not %d sizes like 2x3\n",
                            i, shape_of[i], rank);
                    rc = 2;
                    goto done;
                }
            }
            if (kiln_npy_alloc(&a, err, sizeof err) != 0) {
                fprintf(stderr, "kiln run: input %d: %s\n", i, err);
                goto done;
            }
            kiln_npy_random(dt, a.nbytes / kiln_dtype_size(dt), &state, a.data);
        } else {
            const char *nm = NULL;
            kiln_fusion_input_name(f, i, &nm);
            fprintf(stderr, "kiln run: input %d (%%%s) has no --input file and "
                            "no --random SEED was given\n",
                    i, nm ? nm : "?");
            rc = 2;
            goto done;
        }
        kiln_status s;
        size_t es = kiln_dtype_size(dt), numel = a.nbytes / es;
        if (layout_of[i] != NULL && a.rank > 0 && numel > 0) {
            /* the values in a strided view over a 1-D tensor whose gaps hold
            ** all-ones bytes (NaN, -1, true), as the fuzz category runs it */
            int64_t strides[KILN_MAX_RANK];
            size_t storage = 1;
            kiln_npy_layout(layout_of[i], a.rank, a.sizes, strides, &storage);
            unsigned char *buf = malloc(storage * es);
            int64_t len = (int64_t)storage;
            s = buf == NULL ? KILN_ERR_NO_MEMORY
                            : kiln_tensor_create(ctx, dt, 1, &len, NULL,
                                                 device ? KILN_MEM_DEVICE
                                                        : KILN_MEM_HOST,
                                                 NULL, &bases[i]);
            if (s == KILN_OK) {
                memset(buf, 0xff, storage * es);
                for (size_t k = 0; k < numel; k++) {
                    size_t off = 0, r = k;
                    for (int d = a.rank - 1; d >= 0; d--) {
                        off += (r % (size_t)a.sizes[d]) * (size_t)strides[d];
                        r /= (size_t)a.sizes[d];
                    }
                    memcpy(buf + off * es, (unsigned char *)a.data + k * es, es);
                }
                s = kiln_tensor_write(ctx, bases[i], buf, storage * es);
            }
            if (s == KILN_OK)
                s = kiln_tensor_create(ctx, dt, a.rank, a.sizes, strides,
                                       device ? KILN_MEM_DEVICE : KILN_MEM_HOST,
                                       kiln_tensor_data(bases[i]), &inputs[i]);
            free(buf);
        } else {
            s = kiln_tensor_create(ctx, dt, a.rank, a.sizes, NULL,
                                   device ? KILN_MEM_DEVICE : KILN_MEM_HOST,
                                   NULL, &inputs[i]);
            if (s == KILN_OK)
                s = kiln_tensor_write(ctx, inputs[i], a.data, a.nbytes);
        }
        kiln_npy_free(&a);
        if (s != KILN_OK) {
            rc = fail("input tensor");
            goto done;
        }
    }

    outs = calloc((size_t)n_outputs + 1, sizeof *outs);
    host_out = calloc((size_t)n_outputs + 1, sizeof *host_out);
    if (outs == NULL || host_out == NULL || kiln_exec_info_create(&info) != KILN_OK) {
        fprintf(stderr, "kiln run: out of memory\n");
        goto done;
    }
    kiln_exec_options eo = {sizeof eo, enable, n_en, disable, n_dis, NULL};
    if (info_json)
        print_backend(res, ctx, backend);
    for (long r = 0; r < repeat; r++) {
        for (int j = 0; j < n_outputs; j++) {
            kiln_tensor_destroy(outs[j]);
            outs[j] = NULL;
        }
        if (kiln_execute(ctx, f, inputs, (size_t)n_inputs, outs,
                         (size_t)n_outputs, &eo, info) != KILN_OK) {
            char what[64];
            snprintf(what, sizeof what, "execute (run %ld)", r + 1);
            rc = fail(what);
            goto done;
        }
        if (info_json) {
            char *js = NULL;
            if (kiln_exec_info_json(info, &js) == KILN_OK)
                fprintf(res, "%s\n", js);
            kiln_free(js);
        }
    }
    for (int j = 0; j < n_outputs; j++) {
        kiln_tensor *t = outs[j];
        size_t nbytes = 0;
        if (kiln_ckd_bytes(kiln_tensor_numel(t),
                           kiln_dtype_size(kiln_tensor_dtype(t)), &nbytes)) {
            fprintf(stderr, "kiln run: output %d: size overflows\n", j);
            goto done;
        }
        host_out[j] = malloc(nbytes ? nbytes : 1);
        if (host_out[j] == NULL) {
            fprintf(stderr, "kiln run: out of memory\n");
            goto done;
        }
        if (kiln_tensor_read(ctx, t, host_out[j], nbytes) != KILN_OK) {
            rc = fail("reading an output");
            goto done;
        }
        if (out_dir != NULL) {
            char file[4096], err[512];
            snprintf(file, sizeof file, "%s/out%d.npy", out_dir, j);
            if (kiln_npy_write(file, kiln_tensor_dtype(t), kiln_tensor_rank(t),
                               kiln_tensor_sizes(t), host_out[j], err, sizeof err) != 0) {
                fprintf(stderr, "kiln run: %s\n", err);
                goto done;
            }
        } else {
            fprintf(res, "output %d: %s [", j, kiln_dtype_name(kiln_tensor_dtype(t)));
            for (int d = 0; d < kiln_tensor_rank(t); d++)
                fprintf(res, "%s%lld", d ? ", " : "",
                        (long long)kiln_tensor_sizes(t)[d]);
            fprintf(res, "]:");
            int64_t n = kiln_tensor_numel(t);
            for (int64_t q = 0; q < n && q < 8; q++) {
                fputc(' ', res);
                print_value(res, kiln_tensor_dtype(t), host_out[j], (size_t)q);
            }
            fprintf(res, "%s\n", n > 8 ? " ..." : "");
        }
    }
    if (fflush(res) != 0 || ferror(res)) {
        fprintf(stderr, "kiln run: out of memory\n");
        goto done;
    }
    rc = fwrite(res_text, 1, res_len, stdout) == res_len && fflush(stdout) == 0
             ? 0 : 1;
done:
    for (int j = 0; outs != NULL && j < n_outputs; j++)
        kiln_tensor_destroy(outs[j]);
    for (int j = 0; host_out != NULL && j < n_outputs; j++)
        free(host_out[j]);
    free(outs);
    free(host_out);
    for (int i = 0; i < n_inputs && i < MAX_INPUTS; i++) {
        kiln_tensor_destroy(inputs[i]); /* views before their storage */
        kiln_tensor_destroy(bases[i]);
    }
    kiln_exec_info_destroy(info);
    kiln_context_destroy(ctx);
    kiln_fusion_destroy(f);
    free(text);
    fclose(res);
    free(res_text);
    return rc;
}
