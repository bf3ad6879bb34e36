/* onnxio cat: print a tensor of a model, or a slice of it, or write it as
 * .npy. Reads through the library's tensor slices (onnxio_tensor_file_*):
 * only the bytes asked for are read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "npprint.h"
#include "tensor.h"

static int run_cat(int argc, char **argv);

const cli_verb cli_verb_cat = {
    "cat",
    "Print a tensor (or a slice of it) of a model, or write it as .npy.",
    "onnxio cat MODEL TENSOR [--slice SPEC] [--output FILE.npy] [--threads N]",
    "Prints the initializer TENSOR of MODEL (an .onnx file, with or without\n"
    "external data, or an .onnxz archive), or the slice SPEC of it, reading only\n"
    "the bytes of the slice (the model is not loaded). First a line with the\n"
    "name, data type and the slice's shape, then the values as numpy's\n"
    "str(array) prints them (shortest round-trip digits, aligned columns,\n"
    "more than 1000 values summarised with '...'; the types numpy has only\n"
    "through ml_dtypes (the brain float, the 8-, 6- and 4-bit floats, the 4-\n"
    "and 2-bit integers) as ml_dtypes prints them; strings as Python's repr).\n"
    "Values held in typed fields (float_data, int32_data, ...) are read whole\n"
    "when they take at most 64 MiB. Values of a data type this version does\n"
    "not know print as the hex of their bytes.\n"
    "\n"
    "SPEC is numpy's basic index, one item per axis separated by commas:\n"
    "START:STOP (either may be left out; negative counts from the end; clamped\n"
    "as numpy clamps), an integer I (that axis is dropped), '...' (the axes\n"
    "not given). Axes not given are whole. Steps are not supported. For 4- and\n"
    "2-bit types the slice must begin and end on whole bytes.\n"
    "Example: --slice 0:128,:   --slice -1   --slice ...,0:8\n"
    "\n"
    "options:\n"
    "  --slice SPEC      the part to print or write (default: all of it)\n"
    "  --output FILE     write it to FILE in numpy's .npy format (version 1.0,\n"
    "                    C order; numpy.load reads it) instead of printing;\n"
    "                    types numpy has only through ml_dtypes (the brain\n"
    "                    float, the 8-, 6- and 4-bit floats, the 4- and 2-bit\n"
    "                    integers) are refused: read those with Python's\n"
    "                    onnxio.read_tensor\n"
    "  --threads N       threads for the reads (0: one per core, the default)\n"
    "  --help            show this help\n",
    run_cat,
    NULL,
};

/* ---- the slice spec ----------------------------------------------------------- */

static int parse_int(const char *s, size_t n, int64_t *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    long long v = strtoll(buf, &end, 10);
    if (*end || !((buf[0] >= '0' && buf[0] <= '9') || buf[0] == '-')) return -1;
    *out = v;
    return 0;
}

/* SPEC over `dims` (numpy's rules) as ranges and a kept-axis mask. 0, or
 * -1 after printing why (exit status 1: it is the input that is wrong for
 * this tensor, or 2 for a malformed spec: *usage). */
static int parse_spec(const char *spec, const char *tensor, const int64_t *dims, size_t rank, onnxio_slice_range *r,
                      unsigned char *kept, int *usage)
{
    for (size_t i = 0; i < rank; i++) {
        r[i] = (onnxio_slice_range){0, dims[i]};
        kept[i] = 1;
    }
    *usage = 0;
    if (!spec || !*spec) return 0;
    /* Items, and where the ellipsis is. */
    size_t items = 1, ellipsis = SIZE_MAX;
    for (const char *p = spec; *p; p++) items += *p == ',';
    const char *p = spec;
    size_t given = items;
    for (size_t i = 0; i < items; i++) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 3 && memcmp(p, "...", 3) == 0) {
            if (ellipsis != SIZE_MAX) {
                fprintf(stderr, "onnxio: cat: --slice '%s': more than one '...'\n", spec);
                *usage = 1;
                return -1;
            }
            ellipsis = i;
            given--;
        }
        p = e ? e + 1 : p + n;
    }
    if (given > rank) {
        fprintf(stderr, "onnxio: cat: --slice '%s': %zu items for tensor '%s', which has %zu axes\n", spec, given, tensor,
                rank);
        return -1;
    }
    p = spec;
    size_t axis = 0;
    for (size_t i = 0; i < items; i++) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (i == ellipsis) {
            axis += rank - given;
        } else {
            const char *colon = memchr(p, ':', n);
            int64_t d = dims[axis];
            if (colon) {
                int64_t a = 0, b = d;
                size_t na = (size_t)(colon - p), nb = n - na - 1;
                if ((na && parse_int(p, na, &a)) || (nb && parse_int(colon + 1, nb, &b)) || memchr(colon + 1, ':', nb)) {
                    fprintf(stderr, "onnxio: cat: --slice '%s': item '%.*s' is not START:STOP (steps are not supported)\n",
                            spec, (int)n, p);
                    *usage = 1;
                    return -1;
                }
                /* Python's slice.indices for step 1. */
                if (a < 0) a = a + d < 0 ? 0 : a + d;
                if (a > d) a = d;
                if (b < 0) b = b + d < 0 ? 0 : b + d;
                if (b > d) b = d;
                if (b < a) b = a;
                r[axis] = (onnxio_slice_range){a, b};
            } else {
                int64_t v;
                if (parse_int(p, n, &v)) {
                    fprintf(stderr, "onnxio: cat: --slice '%s': item '%.*s' is not an integer, START:STOP or '...'\n",
                            spec, (int)n, p);
                    *usage = 1;
                    return -1;
                }
                if (v < -d || v >= d) {
                    fprintf(stderr, "onnxio: cat: --slice '%s': index %lld is out of bounds for axis %zu of tensor '%s' "
                                    "with size %lld\n",
                            spec, (long long)v, axis, tensor, (long long)d);
                    return -1;
                }
                if (v < 0) v += d;
                r[axis] = (onnxio_slice_range){v, v + 1};
                kept[axis] = 0;
            }
            axis++;
        }
        p = e ? e + 1 : p + n;
    }
    return 0;
}

/* ---- values ------------------------------------------------------------------------- */

static void print_header(const char *name, const char *dtn, const int64_t *shape, size_t kr, const char *spec)
{
    printf("%s: %s [", name, dtn);
    for (size_t i = 0; i < kr; i++) printf("%s%lld", i ? ", " : "", (long long)shape[i]);
    printf("]%s%s\n", spec ? " slice " : "", spec ? spec : "");
}

/* A slice of a STRING tensor: its values are in the structure
 * (string_data), one per element. */
static int cat_strings(const char *model, const onnxio_TensorProto *t, const char *spec, const onnxio_slice_range *r,
                       size_t rank, const int64_t *shape, size_t kr)
{
    const char *name = t->name.data ? t->name.data : "";
    uint64_t elements = 1, count = 1;
    for (size_t i = 0; i < rank; i++) {
        if (t->dims.data[i] < 0) return cli_fail_msg("cat", model, "tensor '%s': dimension %zu is negative", name, i);
        elements = t->dims.data[i] && elements > UINT64_MAX / (uint64_t)t->dims.data[i] ? UINT64_MAX
                                                                                       : elements * (uint64_t)t->dims.data[i];
        count *= (uint64_t)(r[i].stop - r[i].start);
    }
    if (elements != t->string_data.size)
        return cli_fail_msg("cat", model, "tensor '%s' holds %zu strings, its shape needs %llu", name,
                            t->string_data.size, (unsigned long long)elements);
    char dtbuf[32];
    print_header(name, cli_dtype_name(t->data_type, dtbuf, sizeof dtbuf), shape, kr, spec);
    if (count == 0) {
        puts("[]");
        return cli_finish_stdout("cat", CLI_EXIT_OK);
    }
    const onnxio_string **v = malloc((size_t)count * sizeof *v);
    int64_t *idx = malloc((rank ? rank : 1) * sizeof *idx);
    int rc = CLI_EXIT_FAILURE;
    if (!v || !idx) {
        cli_fail_msg("cat", model, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < rank; i++) idx[i] = r[i].start;
    for (uint64_t n = 0; n < count; n++) {
        uint64_t at = 0;
        for (size_t i = 0; i < rank; i++) at = at * (uint64_t)t->dims.data[i] + (uint64_t)idx[i];
        v[n] = &t->string_data.data[at];
        for (size_t i = rank; i-- > 0;) {
            if (++idx[i] < r[i].stop) break;
            idx[i] = r[i].start;
        }
    }
    if (cli_np_print(stdout, t->data_type, NULL, v, shape, kr)) {
        cli_fail_msg("cat", model, "out of memory");
        goto out;
    }
    rc = cli_finish_stdout("cat", CLI_EXIT_OK);
out:
    free(v);
    free(idx);
    return rc;
}

/* numpy's .npy format 1.0: magic, version, a little-endian u16 header
 * length, the header dict padded with spaces and a newline to a multiple of
 * 64 bytes, then the data. */
static int write_npy(const char *path, const char *descr, const int64_t *shape, size_t rank, const void *data,
                     uint64_t size)
{
    char dict[4096];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (size_t i = 0; i < rank && n < (int)sizeof dict - 64; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)shape[i], i + 1 < rank ? " " : "");
    if (n >= (int)sizeof dict - 64) return cli_fail_msg("cat", path, "the shape has too many axes for a .npy header");
    n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
    size_t total = 10 + (size_t)n + 1;
    size_t pad = (64 - total % 64) % 64;
    FILE *fp = fopen(path, "wb");
    if (!fp) return cli_fail_msg("cat", path, "%s", strerror(errno));
    unsigned hl = (unsigned)(n + pad + 1);
    unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 255), (unsigned char)(hl >> 8)};
    int ok = fwrite(head, 1, 10, fp) == 10 && fwrite(dict, 1, (size_t)n, fp) == (size_t)n;
    for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', fp) != EOF;
    ok = ok && fputc('\n', fp) != EOF && (size == 0 || fwrite(data, 1, (size_t)size, fp) == size);
    if (fclose(fp) != 0) ok = 0;
    if (!ok) return cli_fail_msg("cat", path, "cannot write: %s", strerror(errno));
    return CLI_EXIT_OK;
}

static int run_cat(int argc, char **argv)
{
    const char *spec = NULL, *output = NULL, *threads_text = NULL;
    const cli_option opts[] = {{"slice", &spec, NULL}, {"output", &output, NULL}, {"threads", &threads_text, NULL}};
    char *pos[2];
    size_t npos;
    int rc = cli_parse_args(&cli_verb_cat, argc, argv, opts, sizeof opts / sizeof opts[0], pos, 2, 2, &npos);
    if (rc >= 0) return rc;
    onnxio_slice_options so = ONNXIO_SLICE_OPTIONS_INIT;
    if ((rc = cli_parse_threads(&cli_verb_cat, threads_text, &so.num_threads)) >= 0) return rc;
    const char *model = pos[0], *name = pos[1];
    onnxio_tensor_file *f;
    if (cli_file_is_empty(model) || onnxio_tensor_file_open(model, &so, &f)) return cli_fail("cat", model);
    const onnxio_TensorProto *t = onnxio_tensor_file_find(f, name);
    int status = CLI_EXIT_FAILURE;
    onnxio_slice_range *r = NULL;
    unsigned char *kept = NULL;
    int64_t *shape = NULL;
    onnxio_buffer *b = NULL;
    if (!t) {
        cli_fail_msg("cat", model, "no initializer named '%s'", name);
        goto done;
    }
    size_t rank = t->dims.size;
    r = malloc((rank ? rank : 1) * sizeof *r);
    kept = malloc(rank ? rank : 1);
    shape = malloc((rank ? rank : 1) * sizeof *shape);
    if (!r || !kept || !shape) {
        cli_fail_msg("cat", model, "out of memory");
        goto done;
    }
    int usage;
    if (parse_spec(spec, name, t->dims.data, rank, r, kept, &usage)) {
        if (usage) status = cli_usage_error(&cli_verb_cat, "invalid --slice");
        goto done;
    }
    size_t kr = 0;
    for (size_t i = 0; i < rank; i++)
        if (kept[i]) shape[kr++] = r[i].stop - r[i].start;
    char dtbuf[32];
    const char *dtn = cli_dtype_name(t->data_type, dtbuf, sizeof dtbuf);
    if (t->data_type == ONNXIO_TensorProto_DataType_STRING) {
        if (output) {
            cli_fail_msg("cat", output, "STRING tensors have no .npy form here: print them, or read them with "
                                        "Python's onnxio.read_tensor");
            goto done;
        }
        status = cat_strings(model, t, spec, r, rank, shape, kr);
        goto done;
    }
    onnxio_slice_stats st = {.struct_size = sizeof st};
    if (onnxio_tensor_file_read(f, name, r, rank, NULL, 0, &b, &st)) {
        cli_fail("cat", model);
        goto done;
    }
    if (output) {
        const onnxio_data_type_desc *dd = onnxio_data_type_info(t->data_type);
        const char *descr = dd ? dd->npy : NULL;
        if (!descr) {
            cli_fail_msg("cat", output, "%s has no numpy .npy type (numpy reads it only through ml_dtypes): "
                                        "read it with Python's onnxio.read_tensor", dtn);
            goto done;
        }
        status = write_npy(output, descr, shape, kr, onnxio_buffer_data(b), st.bytes);
        goto done;
    }
    print_header(name, dtn, shape, kr, spec);
    const uint8_t *data = onnxio_buffer_data(b);
    int empty = 0;
    for (size_t i = 0; i < kr; i++) empty |= shape[i] == 0;
    if (empty) {
        /* numpy prints every array of no element as [], whatever its
         * shape; nested brackets would take work the size of the other
         * axes, which a 40-byte model can make 2^124. */
        puts("[]");
    } else if (!cli_np_prints(t->data_type)) {
        for (uint64_t i = 0; i < st.bytes; i++) printf("%02x%s", data[i], (i + 1) % 32 == 0 || i + 1 == st.bytes ? "\n" : " ");
    } else if (cli_np_print(stdout, t->data_type, data, NULL, shape, kr)) {
        cli_fail_msg("cat", model, "out of memory");
        goto done;
    }
    status = cli_finish_stdout("cat", CLI_EXIT_OK);
done:
    onnxio_buffer_unref(b);
    free(r);
    free(kept);
    free(shape);
    onnxio_tensor_file_close(f);
    return status;
}
