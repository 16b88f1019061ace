/*
** cmd_run.c -- `kiln run`: execute a .kf fusion on .npy (or random) inputs,
** optionally several times in one context, printing the info record.
**
** Input names: NAME in --input/--shape is either the input's position
** (0, 1, ...) or the %name its `input` line has in the file (the parser
** renumbers values, so names are looked up in the file text here).
*/
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/npy.h"
#include "kiln.h"

#define MAX_ITEMS 64
#define MAX_INPUTS 64

static void usage(FILE *o)
{
    fprintf(o,
            "usage: kiln run FUSION.kf [--input NAME=FILE.npy]... [--random SEED]\n"
            "                [--shape NAME=AxB...]... [--size N] [--enable ITEM]...\n"
            "                [--disable ITEM]... [--repeat N] [--out DIR] [--info]\n"
            "                [--backend B]\n\n"
            "Execute a fusion.  NAME is an input's position (0, 1, ...) or the\n"
            "%%name of its `input` line.  Inputs not given with --input get\n"
            "deterministic random data from --random SEED (floats in [-2, 2),\n"
            "integers in [-100, 100]); their shape is --shape NAME=2x3, or every\n"
            "`?` axis --size N (default 4) and every declared `1` axis 1.\n\n"
            "  --enable/--disable ITEM  execute option elements (one item each)\n"
            "  --repeat N   run N times in one context (cache hits become visible)\n"
            "  --out DIR    write output J to DIR/outJ.npy (else a summary line)\n"
            "  --info       print each run's info record as one JSON line\n"
            "  --backend B  ref, cuda, auto (default: cuda if usable, else ref),\n"
            "               or the path of a backend plugin\n\n"
            ".npy dtypes: |b1 <i4 <i8 <f2 <f4 <f8, and <V2 for bf16 bit patterns.\n"
            "Exit status: 0 ok, 1 the run failed, 2 usage error.\n");
}

/* Names of the inputs in declaration order, from the file text. */
static int input_names(const char *text, char names[][64], int cap)
{
    int n = 0;
    const char *p = text;
    while (*p && n < cap) {
        const char *line = p;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : p + strlen(p);
        while (*line == ' ' || *line == '\t')
            line++;
        if (*line != '%')
            continue;
        const char *e = line + 1;
        while (isalnum((unsigned char)*e) || *e == '_')
            e++;
        const char *q = e;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q != '=')
            continue;
        q++;
        while (*q == ' ' || *q == '\t')
            q++;
        if (strncmp(q, "input", 5) != 0 || isalnum((unsigned char)q[5]))
            continue;
        snprintf(names[n++], 64, "%.*s", (int)(e - line), line);
    }
    return n;
}

/* Position of input NAME (len bytes): digits are a position below
** n_inputs, anything else a %name among the n_names names read from the
** file; -1 when there is no such input. */
static int find_input(const char *name, size_t len, char names[][64],
                      int n_names, int n_inputs)
{
    if (len > 0 && isdigit((unsigned char)name[0])) {
        char *end;
        long v = strtol(name, &end, 10);
        if ((size_t)(end - name) == len && v >= 0 && v < n_inputs)
            return (int)v;
        return -1;
    }
    for (int i = 0; i < n_names && i < n_inputs; i++)
        if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0)
            return i;
    return -1;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    while (b != NULL) {
        size_t got = fread(b + n, 1, cap - n - 1, fp);
        n += got;
        if (got == 0)
            break;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap * 2);
            if (nb == NULL) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    fclose(fp);
    if (b != NULL) {
        b[n] = '\0';
        *len = n;
    }
    return b;
}

static void print_value(kiln_dtype t, const void *p, size_t i)
{
    switch (t) {
    case KILN_BOOL: printf("%s", ((const uint8_t *)p)[i] ? "true" : "false"); break;
    case KILN_I32: printf("%d", ((const int32_t *)p)[i]); break;
    case KILN_I64: printf("%lld", (long long)((const int64_t *)p)[i]); break;
    case KILN_F16:
    case KILN_BF16: printf("0x%04x", ((const uint16_t *)p)[i]); break;
    case KILN_F32: printf("%.9g", (double)((const float *)p)[i]); break;
    case KILN_F64: printf("%.17g", ((const double *)p)[i]); break;
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

static int parse_count(const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || v < 0)
        return -1;
    *out = v;
    return 0;
}

int kiln_cmd_run(int argc, char **argv)
{
    if (kiln_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    const char *path = NULL, *out_dir = NULL, *backend = "auto";
    const char *enable[MAX_ITEMS], *disable[MAX_ITEMS];
    size_t n_en = 0, n_dis = 0;
    const char *in_spec[MAX_INPUTS], *shape_spec[MAX_INPUTS];
    int n_in_spec = 0, n_shape_spec = 0, info_json = 0, have_seed = 0;
    long repeat = 1, size = 4;
    uint64_t seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = strcmp(a, "--input") == 0 || strcmp(a, "--random") == 0 ||
                    strcmp(a, "--enable") == 0 || strcmp(a, "--disable") == 0 ||
                    strcmp(a, "--repeat") == 0 || strcmp(a, "--out") == 0 ||
                    strcmp(a, "--backend") == 0 || strcmp(a, "--shape") == 0 ||
                    strcmp(a, "--size") == 0;
        if (takes && v == NULL) {
            fprintf(stderr, "kiln run: %s needs a value\n", a);
            return 2;
        }
        if (strcmp(a, "--info") == 0) {
            info_json = 1;
        } else if (strcmp(a, "--input") == 0 && n_in_spec < MAX_INPUTS) {
            in_spec[n_in_spec++] = v, i++;
        } else if (strcmp(a, "--shape") == 0 && n_shape_spec < MAX_INPUTS) {
            shape_spec[n_shape_spec++] = v, i++;
        } else if (strcmp(a, "--enable") == 0 && n_en < MAX_ITEMS) {
            enable[n_en++] = v, i++;
        } else if (strcmp(a, "--disable") == 0 && n_dis < MAX_ITEMS) {
            disable[n_dis++] = v, i++;
        } else if (strcmp(a, "--random") == 0) {
            char *end;
            errno = 0;
            seed = strtoull(v, &end, 10);
            if (errno || *v == '\0' || *end != '\0' || *v == '-') {
                fprintf(stderr, "kiln run: --random needs a non-negative integer seed, not '%s'\n", v);
                return 2;
            }
            have_seed = 1, i++;
        } else if (strcmp(a, "--repeat") == 0 || strcmp(a, "--size") == 0) {
            long n;
            if (parse_count(v, &n) != 0 || (a[2] == 'r' && n < 1)) {
                fprintf(stderr, "kiln run: %s needs a %s integer, not '%s'\n",
                        a, a[2] == 'r' ? "positive" : "non-negative", v);
                return 2;
            }
            if (a[2] == 'r')
                repeat = n;
            else
                size = n;
            i++;
        } else if (strcmp(a, "--out") == 0) {
            out_dir = v, i++;
        } else if (strcmp(a, "--backend") == 0) {
            backend = v, i++;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "kiln run: unknown or repeated-too-often option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (path == NULL) {
            path = a;
        } else {
            fprintf(stderr, "kiln run: more than one fusion file ('%s')\n", a);
            return 2;
        }
    }
    if (path == NULL) {
        fprintf(stderr, "kiln run: no fusion file given\n");
        usage(stderr);
        return 2;
    }

    size_t text_len = 0;
    char *text = read_file(path, &text_len);
    if (text == NULL) {
        fprintf(stderr, "kiln run: %s: %s\n", path, strerror(errno));
        return 1;
    }
    int rc = 1;
    kiln_fusion *f = NULL;
    kiln_context *ctx = NULL;
    kiln_exec_info *info = NULL;
    kiln_tensor *inputs[MAX_INPUTS] = {0};
    kiln_tensor **outs = NULL;
    void **host_out = NULL;
    int n_inputs = 0, n_outputs = 0;
    static char names[MAX_INPUTS][64];

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
    int n_names = input_names(text, names, MAX_INPUTS);

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
    for (int k = 0; k < n_in_spec + n_shape_spec; k++) {
        int is_in = k < n_in_spec;
        const char *s = is_in ? in_spec[k] : shape_spec[k - n_in_spec];
        const char *eq = strchr(s, '=');
        int idx = eq ? find_input(s, (size_t)(eq - s), names, n_names, n_inputs)
                     : -1;
        if (idx < 0) {
            fprintf(stderr,
                    "kiln run: %s '%s': expected NAME=%s with NAME an input "
                    "position (0..%d) or an input's %%name\n",
                    is_in ? "--input" : "--shape", s,
                    is_in ? "FILE.npy" : "AxB", n_inputs - 1);
            rc = 2;
            goto done;
        }
        if (is_in)
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
            size_t n = 1;
            for (int d = 0; d < rank; d++)
                n *= (size_t)a.sizes[d];
            a.nbytes = n * kiln_dtype_size(dt);
            a.data = malloc(a.nbytes ? a.nbytes : 1);
            if (a.data == NULL) {
                fprintf(stderr, "kiln run: out of memory\n");
                goto done;
            }
            kiln_npy_random(dt, n, &state, a.data);
        } else {
            fprintf(stderr, "kiln run: input %d (%s) has no --input file and "
                            "no --random SEED was given\n",
                    i, i < n_names ? names[i] : "?");
            rc = 2;
            goto done;
        }
        kiln_status s = kiln_tensor_create(ctx, dt, a.rank, a.sizes, NULL,
                                           device ? KILN_MEM_DEVICE : KILN_MEM_HOST,
                                           NULL, &inputs[i]);
        if (s == KILN_OK)
            s = kiln_tensor_write(ctx, inputs[i], a.data, a.nbytes);
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
                printf("%s\n", js);
            kiln_free(js);
        }
    }
    for (int j = 0; j < n_outputs; j++) {
        kiln_tensor *t = outs[j];
        size_t nbytes = (size_t)kiln_tensor_numel(t) * kiln_dtype_size(kiln_tensor_dtype(t));
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
        } else if (!info_json) {
            printf("output %d: %s [", j, kiln_dtype_name(kiln_tensor_dtype(t)));
            for (int d = 0; d < kiln_tensor_rank(t); d++)
                printf("%s%lld", d ? ", " : "", (long long)kiln_tensor_sizes(t)[d]);
            printf("]:");
            int64_t n = kiln_tensor_numel(t);
            for (int64_t q = 0; q < n && q < 8; q++) {
                printf(" ");
                print_value(kiln_tensor_dtype(t), host_out[j], (size_t)q);
            }
            printf("%s\n", n > 8 ? " ..." : "");
        }
    }
    rc = 0;
done:
    for (int j = 0; outs != NULL && j < n_outputs; j++)
        kiln_tensor_destroy(outs[j]);
    for (int j = 0; host_out != NULL && j < n_outputs; j++)
        free(host_out[j]);
    free(outs);
    free(host_out);
    for (int i = 0; i < n_inputs && i < MAX_INPUTS; i++)
        kiln_tensor_destroy(inputs[i]);
    kiln_exec_info_destroy(info);
    kiln_context_destroy(ctx);
    kiln_fusion_destroy(f);
    free(text);
    return rc;
}
