/* External data (ONNX convention: data_location = EXTERNAL, external_data
 * keys location/offset/length) on load and on save, and atomic saves.
 *
 * Models are built with the C API in fresh temporary directories. Loads that
 * must be refused each have their own status; loads that must succeed are
 * checked byte for byte against the data file. Saves with
 * external_data.location are checked by reading the data file back by hand.
 * A failed save must leave the previous file (and its data) as it was and no
 * temporary file behind. Tests run as root, so failures are made without
 * permissions: missing directories, a directory as target, a payload that
 * was never loaded, and RLIMIT_FSIZE. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/resource.h>
#endif
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"
#include "testutil.h"

/* What the Windows build cannot make here (under Wine 10): symlinks
 * (CreateSymbolicLinkW makes no reparse point that Wine's file calls
 * report) and a file size limit (RLIMIT_FSIZE has no Win32 counterpart).
 * Hard links are made with CreateHardLinkA (tu_link). */
#define NO_SYMLINKS "Wine makes no symlinks (CreateSymbolicLinkW gives no reparse point)"
#define NO_RLIMIT "no RLIMIT_FSIZE to make the file system refuse a write"

/* SHA-1 of data_bytes, from Python's hashlib (an independent reference). */
#define DATA_SHA1 "bede92be29c3874e1b54ddc77988d606fc857a8e"

#define DATA_SIZE 64

static uint8_t data_bytes[DATA_SIZE];

/* ---- building models ------------------------------------------------------ */

static onnxio_ModelProto *new_model(onnxio_arena *a)
{
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 8;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    tu_set_string(a, m, &m->producer_name, ONNXIO_FIELD_ModelProto_producer_name, "test_external");
    onnxio_OperatorSetIdProto *op = onnxio_list_add(a, &m->opset_import, &onnxio_desc_OperatorSetIdProto);
    op->version = 17;
    onnxio_set_has(op, ONNXIO_FIELD_OperatorSetIdProto_version);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    tu_set_string(a, m->graph, &m->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
    return m;
}

/* An initializer of `g` named `name` of `n_floats` floats, no payload yet. */
static onnxio_TensorProto *add_tensor(onnxio_arena *a, onnxio_GraphProto *g, const char *name, int64_t n_floats)
{
    onnxio_TensorProto *t = onnxio_list_add(a, &g->initializer, &onnxio_desc_TensorProto);
    int64_t *d = onnxio_array_append(a, &t->dims, sizeof(int64_t));
    *d = n_floats;
    t->data_type = ONNXIO_TensorProto_DataType_FLOAT;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    tu_set_string(a, t, &t->name, ONNXIO_FIELD_TensorProto_name, name);
    return t;
}

static void add_entry(onnxio_arena *a, onnxio_TensorProto *t, const char *key, const char *value)
{
    onnxio_StringStringEntryProto *e = onnxio_list_add(a, &t->external_data, &onnxio_desc_StringStringEntryProto);
    tu_set_string(a, e, &e->key, ONNXIO_FIELD_StringStringEntryProto_key, key);
    tu_set_string(a, e, &e->value, ONNXIO_FIELD_StringStringEntryProto_value, value);
}

/* Writes <dir>/model.onnx: one initializer "w" whose data is external with
 * the given keys (NULL: key left out). */
/* The tensor is UINT8 with as many elements as the reference's bytes
 * (length, or what is left of the file after offset), so that the length
 * matches its shape; references that fail earlier checks get 16. */
static void write_external_model(const char *dir, const char *location, const char *offset, const char *length)
{
    char *end;
    unsigned long long off = offset ? strtoull(offset, &end, 10) : 0, n = 16;
    if (length && length[0] && strspn(length, "0123456789") == strlen(length) && strlen(length) < 8)
        n = strtoull(length, NULL, 10);
    else if (!length && off <= DATA_SIZE)
        n = DATA_SIZE - off;
    tu_write_external_model(dir, (int64_t)n, location, offset, length);
}

static void write_data_file(const char *dir, const char *name)
{
    char *path = tu_path_join(dir, name);
    if (!tu_write_file(path, data_bytes, DATA_SIZE)) {
        fprintf(stderr, "cannot write %s\n", path);
        abort();
    }
    free(path);
}

/* Loads <dir>/model.onnx (base_dir as given) and checks the status; on
 * success checks that "w" holds data_bytes[offset .. offset+length) inline. */
static void expect_load(const char *what, const char *dir, const char *base_dir, onnxio_status want, size_t offset,
                        size_t length)
{
    char *path = tu_path_join(dir, "model.onnx");
    for (int no_copy = 0; no_copy <= 1; no_copy++) {
        onnxio_parse_options opts = {0};
        opts.base_dir = base_dir;
        opts.no_copy = no_copy;
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        onnxio_status st = onnxio_load_model(path, &opts, a, &m);
        const char *mode = no_copy ? "no_copy" : "copy";
        CHECK_MSG(st == want, "%s (%s): onnxio_load_model gave %s, want %s (\"%s\")", what, mode, onnxio_status_name(st),
                  onnxio_status_name(want), onnxio_last_error());
        if (st != ONNXIO_OK && st == want) {
            CHECK_MSG(onnxio_last_error()[0] != '\0', "%s: empty error message", what);
            CHECK_MSG(m == NULL, "%s: *out set on failure", what);
        }
        if (st == ONNXIO_OK && want == ONNXIO_OK && CHECK(m && m->graph && m->graph->initializer.size == 1)) {
            onnxio_TensorProto *t = m->graph->initializer.data[0];
            CHECK_MSG(onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data), "%s: raw_data not present", what);
            CHECK_MSG(tu_inlined(t), "%s: not marked inline (data_location DEFAULT, no external_data)", what);
            CHECK_BYTES(t->raw_data.data, t->raw_data.size, data_bytes + offset, length);
        }
        onnxio_arena_unref(a);
    }
    free(path);
}

/* ---- load ------------------------------------------------------------------ */

static void test_load_refusals(void)
{
    tu_begin("external data: refused locations");
    char *root = tu_make_temp_dir("ext");
    char *base = tu_path_join(root, "base");
    char *outside = tu_path_join(root, "outside");
    mkdir(base, 0777);
    mkdir(outside, 0777);
    write_data_file(base, "data.bin");
    write_data_file(outside, "data.bin");
    write_data_file(root, "x"); /* what ../x would reach */

    char *abs_loc = tu_path_join(outside, "data.bin");
    write_external_model(base, abs_loc, "0", "16");
    expect_load("absolute location", base, NULL, ONNXIO_ERR_PATH_ABSOLUTE, 0, 0);
    free(abs_loc);

    write_external_model(base, "../x", "0", "16");
    expect_load("location ../x", base, NULL, ONNXIO_ERR_PATH_PARENT, 0, 0);
    {
        char *a = tu_path_join(base, "a");
        mkdir(a, 0777);
        free(a);
    }
    write_external_model(base, "a/../../x", "0", "16");
    expect_load("location a/../../x", base, NULL, ONNXIO_ERR_PATH_PARENT, 0, 0);
    write_external_model(base, "a/../data.bin", "0", "16");
    expect_load("location a/../data.bin (stays inside but has '..')", base, NULL, ONNXIO_ERR_PATH_PARENT, 0, 0);
    write_external_model(base, "..", "0", "16");
    expect_load("location ..", base, NULL, ONNXIO_ERR_PATH_PARENT, 0, 0);

#ifdef _WIN32
    tu_skip_windows("symlinks out of and inside the base directory: " NO_SYMLINKS);
#else
    /* symlinks in the base directory leading outside it */
    char *link = tu_path_join(base, "link.bin");
    char *target = tu_path_join(outside, "data.bin");
    CHECK(symlink(target, link) == 0);
    write_external_model(base, "link.bin", "0", "16");
    expect_load("symlink to a file outside", base, NULL, ONNXIO_ERR_PATH_ESCAPES, 0, 0);
    free(link);
    free(target);
    link = tu_path_join(base, "linkdir");
    CHECK(symlink("../outside", link) == 0);
    write_external_model(base, "linkdir/data.bin", "0", "16");
    expect_load("relative symlinked directory outside", base, NULL, ONNXIO_ERR_PATH_ESCAPES, 0, 0);
    free(link);
    link = tu_path_join(base, "rootlink");
    CHECK(symlink("/", link) == 0);
    write_external_model(base, "rootlink/etc/passwd", "0", "4");
    expect_load("symlink to /", base, NULL, ONNXIO_ERR_PATH_ESCAPES, 0, 0);
    free(link);
    /* a symlink that stays inside is fine */
    link = tu_path_join(base, "alias.bin");
    CHECK(symlink("data.bin", link) == 0);
    write_external_model(base, "alias.bin", "8", "16");
    expect_load("symlink inside the base directory", base, NULL, ONNXIO_OK, 8, 16);
    free(link);
#endif
    /* a name that merely starts with ".." is not a parent reference */
    write_data_file(base, "..w.bin");
    write_external_model(base, "..w.bin", "4", "8");
    expect_load("location ..w.bin", base, NULL, ONNXIO_OK, 4, 8);
    tu_end();

    tu_begin("external data: ranges, missing files, bad entries");
    write_external_model(base, "data.bin", "48", "32");
    expect_load("offset + length past the end", base, NULL, ONNXIO_ERR_EXTERNAL_RANGE, 0, 0);
    write_external_model(base, "data.bin", "100", "1");
    expect_load("offset past the end", base, NULL, ONNXIO_ERR_EXTERNAL_RANGE, 0, 0);
    write_external_model(base, "data.bin", "65", NULL);
    expect_load("offset past the end, no length", base, NULL, ONNXIO_ERR_EXTERNAL_RANGE, 0, 0);
    /* a 2^62-byte length must be refused before anything is allocated */
    write_external_model(base, "data.bin", "0", "4611686018427387904");
    expect_load("length 2^62", base, NULL, ONNXIO_ERR_EXTERNAL_RANGE, 0, 0);
    write_external_model(base, "data.bin", "9223372036854775807", "16");
    expect_load("offset 2^63-1 (offset + length overflows int64)", base, NULL, ONNXIO_ERR_EXTERNAL_RANGE, 0, 0);
    write_external_model(base, "data.bin", "16", "18446744073709551615");
    expect_load("length 2^64-1 (offset + length wraps)", base, NULL, ONNXIO_ERR_EXTERNAL_RANGE, 0, 0);
    write_external_model(base, "missing.bin", "0", "16");
    expect_load("missing data file", base, NULL, ONNXIO_ERR_NOT_FOUND, 0, 0);
    write_external_model(base, "nodir/data.bin", "0", "16");
    expect_load("missing directory", base, NULL, ONNXIO_ERR_NOT_FOUND, 0, 0);
    write_external_model(base, "data.bin", "abc", "16");
    expect_load("non-numeric offset", base, NULL, ONNXIO_ERR_EXTERNAL_DATA, 0, 0);
    write_external_model(base, "data.bin", "12abc", "16");
    expect_load("offset with trailing junk", base, NULL, ONNXIO_ERR_EXTERNAL_DATA, 0, 0);
    write_external_model(base, "data.bin", "0", "sixteen");
    expect_load("non-numeric length", base, NULL, ONNXIO_ERR_EXTERNAL_DATA, 0, 0);
    write_external_model(base, "data.bin", "-1", "16");
    expect_load("negative offset", base, NULL, ONNXIO_ERR_EXTERNAL_DATA, 0, 0);
    write_external_model(base, "data.bin", "", "16");
    expect_load("empty offset", base, NULL, ONNXIO_ERR_EXTERNAL_DATA, 0, 0);
    write_external_model(base, "data.bin", "99999999999999999999999", "16");
    expect_load("offset beyond 2^64", base, NULL, ONNXIO_ERR_EXTERNAL_DATA, 0, 0);
    write_external_model(base, NULL, "0", "16");
    expect_load("no location", base, NULL, ONNXIO_ERR_EXTERNAL_DATA, 0, 0);
    write_external_model(base, "", "0", "16");
    expect_load("empty location", base, NULL, ONNXIO_ERR_EXTERNAL_DATA, 0, 0);
    tu_end();

    tu_begin("external data: good references");
    write_external_model(base, "data.bin", "16", "16");
    expect_load("offset 16 length 16", base, NULL, ONNXIO_OK, 16, 16);
    write_external_model(base, "data.bin", NULL, NULL);
    expect_load("no offset, no length: the whole file", base, NULL, ONNXIO_OK, 0, DATA_SIZE);
    write_external_model(base, "data.bin", "40", NULL);
    expect_load("offset, no length: to the end", base, NULL, ONNXIO_OK, 40, DATA_SIZE - 40);
    write_external_model(base, "data.bin", "64", "0");
    expect_load("empty payload at the end", base, NULL, ONNXIO_OK, 64, 0);
    {
        char *sub = tu_path_join(base, "sub");
        mkdir(sub, 0777);
        write_data_file(sub, "d.bin");
        free(sub);
    }
    write_external_model(base, "sub/d.bin", "0", "64");
    expect_load("location in a subdirectory", base, NULL, ONNXIO_OK, 0, 64);

    /* base_dir given explicitly after moving the model elsewhere */
    write_external_model(base, "data.bin", "8", "24");
    {
        char *from = tu_path_join(base, "model.onnx");
        char *to = tu_path_join(outside, "model.onnx");
        CHECK(rename(from, to) == 0);
        /* outside/ has its own data.bin with the same bytes: remove it so that
         * only the explicit base directory can satisfy the load */
        char *other = tu_path_join(outside, "data.bin");
        unlink(other);
        expect_load("model moved, default base dir", outside, NULL, ONNXIO_ERR_NOT_FOUND, 0, 0);
        expect_load("model moved, base_dir given", outside, base, ONNXIO_OK, 8, 24);

        /* from bytes: external data is read only with a base_dir */
        size_t n;
        uint8_t *bytes = tu_read_file(to, &n);
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        CHECK_STATUS(onnxio_load_model_from_bytes(bytes, n, NULL, NULL, a, &m), ONNXIO_OK);
        if (CHECK(m && m->graph && m->graph->initializer.size == 1)) {
            onnxio_TensorProto *t = m->graph->initializer.data[0];
            CHECK(onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location));
            CHECK_EQ_INT(t->external_data.size, 3);
            CHECK(!onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data));
            /* then onnxio_load_external_data reads it */
            CHECK_STATUS(onnxio_load_external_data(m, base, NULL), ONNXIO_OK);
            CHECK(tu_inlined(t));
            CHECK_BYTES(t->raw_data.data, t->raw_data.size, data_bytes + 8, 24);
        }
        onnxio_arena_unref(a);
        a = onnxio_arena_new();
        onnxio_parse_options opts = {0};
        opts.base_dir = base;
        m = NULL;
        CHECK_STATUS(onnxio_load_model_from_bytes(bytes, n, NULL, &opts, a, &m), ONNXIO_OK);
        if (CHECK(m && m->graph && m->graph->initializer.size == 1)) {
            onnxio_TensorProto *t = m->graph->initializer.data[0];
            CHECK_BYTES(t->raw_data.data, t->raw_data.size, data_bytes + 8, 24);
        }
        onnxio_arena_unref(a);
        /* and the checks apply to onnxio_load_external_data too */
        a = onnxio_arena_new();
        opts.base_dir = NULL;
        opts.load_external_data = ONNXIO_OFF;
        m = NULL;
        CHECK_STATUS(onnxio_load_model(to, &opts, a, &m), ONNXIO_OK);
        if (m) CHECK_STATUS(onnxio_load_external_data(m, outside, NULL), ONNXIO_ERR_NOT_FOUND);
        onnxio_arena_unref(a);
        free(bytes);
        free(from);
        free(to);
        free(other);
    }
    tu_end();

    tu_remove_tree(root);
    free(base);
    free(outside);
    free(root);
}

/* The external-data models of the corpus: loading reads exactly the bytes
 * the file's own external_data entries name; a dangling one is NOT_FOUND. */
static void test_corpus_external(const char *corpus)
{
    if (!corpus) return;
    tu_begin("external data of corpus models");
    static const char *const models[] = {
        "robertknight+rten__rten-onnx__test-data__mnist-external__mnist/mnist.onnx",
        "NVIDIA+TensorRT__tools__Polygraphy__tests__models__ext_weights_same_dir__ext_weights/ext_weights.onnx",
    };
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        char *path = tu_path_join(corpus, models[i]);
        if (!tu_exists(path)) {
            free(path);
            continue;
        }
        onnxio_parse_options off = {0};
        off.load_external_data = ONNXIO_OFF;
        onnxio_arena *a = onnxio_arena_new(), *b = onnxio_arena_new();
        onnxio_ModelProto *raw = NULL, *loaded = NULL;
        CHECK_STATUS(onnxio_load_model(path, &off, a, &raw), ONNXIO_OK);
        CHECK_STATUS(onnxio_load_model(path, NULL, b, &loaded), ONNXIO_OK);
        int external = 0;
        if (raw && loaded && CHECK(raw->graph && loaded->graph) &&
            CHECK(raw->graph->initializer.size == loaded->graph->initializer.size)) {
            char *dir = strdup(path);
            *strrchr(dir, '/') = '\0';
            for (size_t k = 0; k < raw->graph->initializer.size; k++) {
                onnxio_TensorProto *r = raw->graph->initializer.data[k], *l = loaded->graph->initializer.data[k];
                if (!onnxio_has(r, ONNXIO_FIELD_TensorProto_data_location)) {
                    CHECK(onnxio_message_equal(r, l) == 1);
                    continue;
                }
                external++;
                const char *loc = NULL;
                unsigned long long off_v = 0, len_v = 0;
                int has_len = 0;
                for (size_t e = 0; e < r->external_data.size; e++) {
                    onnxio_StringStringEntryProto *x = r->external_data.data[e];
                    if (strcmp(x->key.data, "location") == 0) loc = x->value.data;
                    if (strcmp(x->key.data, "offset") == 0) off_v = strtoull(x->value.data, NULL, 10);
                    if (strcmp(x->key.data, "length") == 0) {
                        len_v = strtoull(x->value.data, NULL, 10);
                        has_len = 1;
                    }
                }
                if (!CHECK(loc != NULL)) continue;
                char *dpath = tu_path_join(dir, loc);
                size_t dn;
                uint8_t *dbytes = tu_read_file(dpath, &dn);
                if (CHECK_MSG(dbytes && off_v <= dn, "%s: cannot read %s", models[i], dpath)) {
                    if (!has_len) len_v = dn - off_v;
                    CHECK_MSG(l->raw_data.size == len_v && memcmp(l->raw_data.data, dbytes + off_v, len_v) == 0,
                              "%s: tensor %s: loaded payload differs from %s[%llu, +%llu)", models[i], r->name.data, loc,
                              off_v, len_v);
                    CHECK(tu_inlined(l));
                }
                free(dbytes);
                free(dpath);
            }
            free(dir);
        }
        CHECK_MSG(external > 0, "%s: no external tensors found", models[i]);
        onnxio_arena_unref(a);
        onnxio_arena_unref(b);
        free(path);
    }
    /* dangling: the data file was never committed upstream */
    char *path = tu_path_join(corpus, "microsoft+onnxconverter-common__tests__data__image_classifier16.onnx");
    if (tu_exists(path)) {
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        CHECK_STATUS(onnxio_load_model(path, NULL, a, &m), ONNXIO_ERR_NOT_FOUND);
        CHECK(m == NULL);
        onnxio_arena_unref(a);
    }
    free(path);
    tu_end();
}

/* ---- save with external data ------------------------------------------------ */

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 31 + seed * 7 + (i >> 8));
}

/* A model with inline payloads of `sizes[i]` bytes, one of them in a
 * subgraph (an If node's then_branch initializer). */
static onnxio_ModelProto *model_with_payloads(onnxio_arena *a, const size_t *sizes, size_t n, uint8_t **payloads)
{
    onnxio_ModelProto *m = new_model(a);
    for (size_t i = 0; i < n; i++) {
        payloads[i] = malloc(sizes[i] ? sizes[i] : 1);
        fill(payloads[i], sizes[i], (unsigned)i + 1);
    }
    for (size_t i = 0; i + 1 < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%zu", i);
        onnxio_TensorProto *t = add_tensor(a, m->graph, name, (int64_t)(sizes[i] / 4));
        onnxio_span_copy_from(&t->raw_data, payloads[i], sizes[i]);
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    }
    /* the last payload: in a subgraph */
    onnxio_TensorProto *t = add_tensor(a, tu_add_subgraph(a, m->graph, "then"), "sub", (int64_t)(sizes[n - 1] / 4));
    onnxio_span_copy_from(&t->raw_data, payloads[n - 1], sizes[n - 1]);
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    return m;
}

/* Every initializer tensor of the model (main graph first, then subgraph). */
static size_t collect_tensors(onnxio_ModelProto *m, onnxio_TensorProto **out, size_t max)
{
    size_t n = 0;
    if (!m || !m->graph) return 0;
    for (size_t i = 0; i < m->graph->initializer.size && n < max; i++) out[n++] = m->graph->initializer.data[i];
    for (size_t i = 0; i < m->graph->node.size; i++)
        for (size_t k = 0; k < m->graph->node.data[i]->attribute.size; k++) {
            onnxio_AttributeProto *at = m->graph->node.data[i]->attribute.data[k];
            if (at->g)
                for (size_t j = 0; j < at->g->initializer.size && n < max; j++) out[n++] = at->g->initializer.data[j];
        }
    return n;
}

static const char *entry(onnxio_TensorProto *t, const char *key)
{
    for (size_t e = 0; e < t->external_data.size; e++)
        if (t->external_data.data[e]->key.data && strcmp(t->external_data.data[e]->key.data, key) == 0)
            return t->external_data.data[e]->value.data;
    return NULL;
}

static void test_save_external(void)
{
    tu_begin("save with external_data.location");
    char *dir = tu_make_temp_dir("save");
    enum { N = 4 };
    const size_t sizes[N] = {16, 2000, 5000, 3000};
    uint8_t *payloads[N];
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *orig = model_with_payloads(a, sizes, N, payloads);

    char *inline_path = tu_path_join(dir, "inline.onnx");
    CHECK_STATUS(onnxio_save_file(orig, inline_path, NULL), ONNXIO_OK);
    size_t inline_size;
    uint8_t *inline_bytes = tu_read_file(inline_path, &inline_size);
    CHECK(inline_bytes != NULL && inline_size > 10000);

    for (int variant = 0; variant < 3; variant++) {
        /* 0: default threshold (1024): the 16-byte payload stays inline;
         * 1: threshold 1: every payload moves; 2: 64-byte alignment */
        onnxio_serialize_options so = {0};
        so.external_data.location = "weights.bin";
        if (variant == 1) so.external_data.size_threshold = 1;
        if (variant == 2) so.alignment = 64;
        char *sub = tu_strdup_printf("%s/v%d", dir, variant);
        mkdir(sub, 0777);
        char *mpath = tu_path_join(sub, "model.onnx");
        char *wpath = tu_path_join(sub, "weights.bin");
        CHECK_STATUS(onnxio_save_model(orig, mpath, &so), ONNXIO_OK);

        /* the caller's model is not modified */
        onnxio_buffer *again = NULL;
        if (CHECK_STATUS(onnxio_serialize(orig, &again), ONNXIO_OK))
            CHECK_BYTES(onnxio_buffer_data(again), onnxio_buffer_size(again), inline_bytes, inline_size);
        onnxio_buffer_unref(again);

        /* the saved model, external data not loaded: the references */
        size_t wsize;
        uint8_t *wbytes = tu_read_file(wpath, &wsize);
        CHECK_MSG(wbytes != NULL, "variant %d: no weights.bin written", variant);
        onnxio_parse_options off = {0};
        off.load_external_data = ONNXIO_OFF;
        onnxio_arena *b = onnxio_arena_new();
        onnxio_ModelProto *saved = NULL;
        CHECK_STATUS(onnxio_load_model(mpath, &off, b, &saved), ONNXIO_OK);
        onnxio_TensorProto *ts[8];
        size_t nt = collect_tensors(saved, ts, 8);
        CHECK_EQ_INT(nt, N);
        for (size_t i = 0; i < nt && i < N && wbytes; i++) {
            bool should_move = variant == 1 || sizes[i] >= 1024;
            if (!should_move) {
                CHECK_MSG(!onnxio_has(ts[i], ONNXIO_FIELD_TensorProto_data_location) &&
                              onnxio_has(ts[i], ONNXIO_FIELD_TensorProto_raw_data),
                          "variant %d: tensor %zu (%zu bytes) should stay inline", variant, i, sizes[i]);
                CHECK_BYTES(ts[i]->raw_data.data, ts[i]->raw_data.size, payloads[i], sizes[i]);
                continue;
            }
            CHECK_MSG(onnxio_has(ts[i], ONNXIO_FIELD_TensorProto_data_location) &&
                          ts[i]->data_location == ONNXIO_TensorProto_DataLocation_EXTERNAL,
                      "variant %d: tensor %zu not marked EXTERNAL", variant, i);
            CHECK_MSG(!onnxio_has(ts[i], ONNXIO_FIELD_TensorProto_raw_data), "variant %d: tensor %zu keeps raw_data",
                      variant, i);
            const char *loc = entry(ts[i], "location"), *offs = entry(ts[i], "offset"), *lens = entry(ts[i], "length");
            if (!CHECK_MSG(loc && offs && lens, "variant %d: tensor %zu lacks location/offset/length", variant, i))
                continue;
            CHECK_STR(loc, "weights.bin");
            unsigned long long o = strtoull(offs, NULL, 10), l = strtoull(lens, NULL, 10);
            CHECK_EQ_U64(l, sizes[i]);
            if (variant == 2) CHECK_MSG(o % 64 == 0, "variant 2: offset %llu not 64-byte aligned", o);
            if (CHECK_MSG(o + l <= wsize, "variant %d: tensor %zu at %llu+%llu past the data file (%zu bytes)", variant,
                          i, o, l, wsize))
                CHECK_MSG(memcmp(wbytes + o, payloads[i], sizes[i]) == 0,
                          "variant %d: data file bytes at %llu differ from tensor %zu", variant, o, i);
        }
        onnxio_arena_unref(b);
        free(wbytes);

        /* loading it back gives the payloads, equal to the original */
        b = onnxio_arena_new();
        onnxio_ModelProto *loaded = NULL;
        CHECK_STATUS(onnxio_load_model(mpath, NULL, b, &loaded), ONNXIO_OK);
        nt = collect_tensors(loaded, ts, 8);
        CHECK_EQ_INT(nt, N);
        for (size_t i = 0; i < nt && i < N; i++) CHECK_BYTES(ts[i]->raw_data.data, ts[i]->raw_data.size, payloads[i], sizes[i]);
        if (loaded) CHECK_MSG(tu_equal_as_loaded(loaded, orig), "variant %d: loaded model != original", variant);

        /* re-saving inline gives back the original file's bytes, once the
         * data_location = DEFAULT marks of the load are taken away */
        char *rpath = tu_path_join(sub, "resaved.onnx");
        if (loaded) tu_drop_default_locations(loaded);
        if (loaded && CHECK_STATUS(onnxio_save_model(loaded, rpath, NULL), ONNXIO_OK)) {
            size_t rn;
            uint8_t *rb = tu_read_file(rpath, &rn);
            CHECK_BYTES(rb, rn, inline_bytes, inline_size);
            free(rb);
        }
        onnxio_arena_unref(b);
        free(rpath);
        free(mpath);
        free(wpath);
        free(sub);
    }

    /* locations that are refused on load are refused on save */
    {
        char *sub = tu_path_join(dir, "bad");
        mkdir(sub, 0777);
        char *mpath = tu_path_join(sub, "model.onnx");
        onnxio_serialize_options so = {0};
        so.external_data.location = "../escape.bin";
        CHECK_STATUS(onnxio_save_model(orig, mpath, &so), ONNXIO_ERR_PATH_PARENT);
        so.external_data.location = "/tmp/onnxio-absolute.bin";
        CHECK_STATUS(onnxio_save_model(orig, mpath, &so), ONNXIO_ERR_PATH_ABSOLUTE);
        CHECK(!tu_exists("/tmp/onnxio-absolute.bin"));
        char *esc = tu_path_join(dir, "escape.bin");
        CHECK(!tu_exists(esc));
        CHECK(!tu_exists(mpath));
        tu_strlist names = {0};
        tu_list_dir(sub, &names);
        CHECK_EQ_INT(names.size, 0);
        tu_strlist_free(&names);
        free(esc);
        free(mpath);
        free(sub);
    }

    onnxio_arena_unref(a);
    for (int i = 0; i < N; i++) free(payloads[i]);
    free(inline_bytes);
    free(inline_path);
    tu_remove_tree(dir);
    free(dir);
    tu_end();
}

/* ---- atomic saves --------------------------------------------------------------- */

/* Checks that `dir` holds exactly the `n` names given (sorted). */
static void check_dir_is(const char *what, const char *dir, const char *const *names, size_t n)
{
    tu_strlist l = {0};
    tu_list_dir(dir, &l);
    bool same = l.size == n;
    for (size_t i = 0; same && i < n; i++) same = strcmp(l.items[i], names[i]) == 0;
    if (!same) {
        char listing[1024] = "";
        for (size_t i = 0; i < l.size; i++) {
            strncat(listing, l.items[i], sizeof listing - strlen(listing) - 2);
            strncat(listing, " ", sizeof listing - strlen(listing) - 1);
        }
        CHECK_MSG(false, "%s: %s holds [%s], want %zu entries (a temporary file left behind?)", what, dir, listing, n);
    } else {
        CHECK(same);
    }
    tu_strlist_free(&l);
}

static void check_file_is(const char *what, const char *path, const uint8_t *want, size_t n)
{
    size_t got_n;
    uint8_t *got = tu_read_file(path, &got_n);
    CHECK_MSG(got && got_n == n && memcmp(got, want, n) == 0, "%s: %s was changed (%zu bytes, want %zu)", what, path,
              got_n, n);
    free(got);
}

static void test_atomic_save(void)
{
    tu_begin("atomic saves");
    char *dir = tu_make_temp_dir("atomic");
    char *path = tu_path_join(dir, "m.onnx");
    static const uint8_t old[] = "old contents of m.onnx";
    CHECK(tu_write_file(path, old, sizeof old));

    enum { N = 3 };
    const size_t sizes[N] = {4000, 100000, 3000};
    uint8_t *payloads[N];
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *model = model_with_payloads(a, sizes, N, payloads);
    const char *const only_m[] = {"m.onnx"};

    /* 1. the directory does not exist */
    char *nodir = tu_path_join(dir, "no/such/dir/m.onnx");
    onnxio_status st = onnxio_save_model(model, nodir, NULL);
    CHECK_MSG(st == ONNXIO_ERR_NOT_FOUND || st == ONNXIO_ERR_IO, "save into a missing directory gave %s",
              onnxio_status_name(st));
    CHECK(!tu_exists(nodir));
    check_dir_is("save into a missing directory", dir, only_m, 1);
    free(nodir);

    /* 2. the target is a directory: writing works, the final rename fails */
    char *adir = tu_path_join(dir, "adir");
    mkdir(adir, 0777);
    CHECK_STATUS(onnxio_save_model(model, adir, NULL), ONNXIO_ERR_IO);
    CHECK(tu_is_dir(adir));
    {
        const char *const names[] = {"adir", "m.onnx"};
        check_dir_is("save onto a directory", dir, names, 2);
    }
    rmdir(adir);
    free(adir);

    /* 3. a payload that was never loaded: serialization fails mid-file */
    {
        char *srcdir = tu_path_join(dir, "s");
        mkdir(srcdir, 0777);
        char *src = tu_path_join(srcdir, "src.onnx");
        CHECK_STATUS(onnxio_save_model(model, src, NULL), ONNXIO_OK);
        onnxio_parse_options skip = {0};
        skip.skip_raw_data = true;
        onnxio_arena *b = onnxio_arena_new();
        onnxio_ModelProto *skel = NULL;
        CHECK_STATUS(onnxio_load_model(src, &skip, b, &skel), ONNXIO_OK);
        if (skel) {
            onnxio_TensorProto *ts[4];
            size_t nt = collect_tensors(skel, ts, 4);
            CHECK_EQ_INT(nt, N);
            if (nt == N) {
                CHECK(ts[1]->raw_data.data == NULL);
                CHECK_EQ_U64(ts[1]->raw_data.size, sizes[1]); /* the size is kept */
            }
            CHECK_STATUS(onnxio_save_model(skel, path, NULL), ONNXIO_ERR_MISSING_PAYLOAD);
            check_file_is("save of a model without payloads", path, old, sizeof old);
            {
                const char *const names[] = {"m.onnx", "s"};
                check_dir_is("save of a model without payloads", dir, names, 2);
            }
            onnxio_buffer *out = NULL;
            CHECK_STATUS(onnxio_serialize(skel, &out), ONNXIO_ERR_MISSING_PAYLOAD);
            onnxio_buffer_unref(out);
            /* with external data: the data file is not left behind either */
            onnxio_serialize_options so = {0};
            so.external_data.location = "m.data";
            CHECK_STATUS(onnxio_save_model(skel, path, &so), ONNXIO_ERR_MISSING_PAYLOAD);
            check_file_is("external save of a model without payloads", path, old, sizeof old);
            {
                const char *const names[] = {"m.onnx", "s"};
                check_dir_is("external save of a model without payloads", dir, names, 2);
            }
        }
        onnxio_arena_unref(b);
        tu_remove_tree(srcdir);
        free(srcdir);
        free(src);
    }

    /* 4. the file system refuses the write (RLIMIT_FSIZE, works as root) */
#ifdef _WIN32
    tu_skip_windows("a save the file system refuses: " NO_RLIMIT);
#else
    {
        struct rlimit saved;
        getrlimit(RLIMIT_FSIZE, &saved);
        void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = saved;
        lim.rlim_cur = 32768;
        if (CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0)) {
            st = onnxio_save_model(model, path, NULL); /* > 100 KB */
            setrlimit(RLIMIT_FSIZE, &saved);
            CHECK_MSG(st == ONNXIO_ERR_IO, "save past RLIMIT_FSIZE gave %s, want ONNXIO_ERR_IO (%s)", onnxio_status_name(st),
                      onnxio_last_error());
            check_file_is("save past RLIMIT_FSIZE", path, old, sizeof old);
            check_dir_is("save past RLIMIT_FSIZE", dir, only_m, 1);
        }
        signal(SIGXFSZ, prev);
    }
#endif

    /* 5. success replaces the file, leaves nothing else */
    CHECK_STATUS(onnxio_save_model(model, path, NULL), ONNXIO_OK);
    check_dir_is("successful save", dir, only_m, 1);
    {
        onnxio_arena *b = onnxio_arena_new();
        onnxio_ModelProto *m2 = NULL;
        CHECK_STATUS(onnxio_load_model(path, NULL, b, &m2), ONNXIO_OK);
        if (m2) CHECK(onnxio_message_equal(m2, model) == 1);
        onnxio_arena_unref(b);
    }
    tu_end();

    /* 6. a failed save of a model with external data must not damage the data
     * of the model it was replacing: the old model still loads with its old
     * payloads. Made to fail after the data file is written: the data file
     * (one 4000-byte payload) fits under RLIMIT_FSIZE, the model (with a
     * 100000-byte payload kept inline by the threshold) does not. */
    tu_begin("atomic saves with external data");
    {
        char *xdir = tu_path_join(dir, "x");
        mkdir(xdir, 0777);
        char *xpath = tu_path_join(xdir, "m.onnx");
        onnxio_serialize_options so = {0};
        so.external_data.location = "m.data";
        so.external_data.size_threshold = 2000;
        /* the old model: all three payloads external */
        onnxio_serialize_options all = so;
        all.external_data.size_threshold = 1;
        CHECK_STATUS(onnxio_save_model(model, xpath, &all), ONNXIO_OK);
        size_t old_n;
        uint8_t *old_model = tu_read_file(xpath, &old_n);
        char *dpath = tu_path_join(xdir, "m.data");
        size_t old_dn;
        uint8_t *old_data = tu_read_file(dpath, &old_dn);

        /* a different model to save over it */
        onnxio_arena *b = onnxio_arena_new();
        const size_t sizes2[N] = {3000, 100000, 100};
        uint8_t *payloads2[N];
        onnxio_ModelProto *model2 = model_with_payloads(b, sizes2, N, payloads2);
        so.external_data.size_threshold = 2000; /* 3000 and 100000 go to m.data */
#ifdef _WIN32
        tu_skip_windows("an external save the file system refuses after the data file: " NO_RLIMIT);
#else
        struct rlimit saved;
        getrlimit(RLIMIT_FSIZE, &saved);
        void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = saved;
        lim.rlim_cur = 150000; /* data file: 3000 + 100000 bytes fits; nothing else is large */
        /* make the model itself large: many inline strings in doc_string */
        char *doc = malloc(200001);
        memset(doc, 'd', 200000);
        doc[200000] = '\0';
        tu_set_string(b, model2, &model2->doc_string, ONNXIO_FIELD_ModelProto_doc_string, doc);
        free(doc);
        if (CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0)) {
            st = onnxio_save_model(model2, xpath, &so);
            setrlimit(RLIMIT_FSIZE, &saved);
            CHECK_MSG(st == ONNXIO_ERR_IO, "external save past RLIMIT_FSIZE gave %s (%s)", onnxio_status_name(st),
                      onnxio_last_error());
        }
        signal(SIGXFSZ, prev);
#endif
        check_file_is("failed external save: old model", xpath, old_model, old_n);
        check_file_is("failed external save: old data file", dpath, old_data, old_dn);
        {
            const char *const names[] = {"m.data", "m.onnx"};
            check_dir_is("failed external save", xdir, names, 2);
        }
        onnxio_arena *c = onnxio_arena_new();
        onnxio_ModelProto *back = NULL;
        CHECK_STATUS(onnxio_load_model(xpath, NULL, c, &back), ONNXIO_OK);
        if (back) CHECK_MSG(tu_equal_as_loaded(back, model), "the old model no longer loads as it was saved");
        onnxio_arena_unref(c);

        /* the same without resource limits: a small payload that was never
         * loaded (data NULL, as after skip_raw_data) stays inline, so the
         * data file is written first and the model fails after it */
        if (tu_write_file(dpath, old_data, old_dn) && tu_write_file(xpath, old_model, old_n)) {
            onnxio_TensorProto *ts[4];
            size_t nt = collect_tensors(model2, ts, 4);
            if (CHECK(nt == N)) {
                onnxio_span_set(&ts[2]->raw_data, NULL, 100, NULL); /* 100 bytes, never loaded */
                onnxio_field_clear(model2, &onnxio_desc_ModelProto.fields[ONNXIO_FIELD_ModelProto_doc_string]);
                CHECK_STATUS(onnxio_save_model(model2, xpath, &so), ONNXIO_ERR_MISSING_PAYLOAD);
                check_file_is("failed external save (missing payload): old model", xpath, old_model, old_n);
                check_file_is("failed external save (missing payload): old data file", dpath, old_data, old_dn);
                const char *const names[] = {"m.data", "m.onnx"};
                check_dir_is("failed external save (missing payload)", xdir, names, 2);
            }
        }
        onnxio_arena_unref(b);
        for (int i = 0; i < N; i++) free(payloads2[i]);
        free(old_model);
        free(old_data);
        free(dpath);
        free(xpath);
        free(xdir);
    }
    tu_end();

    onnxio_arena_unref(a);
    for (int i = 0; i < N; i++) free(payloads[i]);
    tu_remove_tree(dir);
    free(dir);
    free(path);
}

/* ---- hard links, the model itself, lengths, checksums ------------------------ */

/* Writes <dir>/model.onnx: one initializer "w" of `data_type` and `dims`
 * whose data is external (location, offset 0, length, optional checksum). */
static void write_typed_model(const char *dir, const char *location, const char *length, int32_t data_type,
                              const int64_t *dims, size_t nd, const char *checksum)
{
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = new_model(a);
    onnxio_TensorProto *t = add_tensor(a, m->graph, "w", 1);
    onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_dims]);
    for (size_t i = 0; i < nd; i++) *(int64_t *)onnxio_array_append(a, &t->dims, sizeof(int64_t)) = dims[i];
    t->data_type = data_type;
    add_entry(a, t, "location", location);
    add_entry(a, t, "offset", "0");
    add_entry(a, t, "length", length);
    if (checksum) add_entry(a, t, "checksum", checksum);
    t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    char *path = tu_path_join(dir, "model.onnx");
    CHECK_STATUS(onnxio_save_file(m, path, NULL), ONNXIO_OK);
    free(path);
    onnxio_arena_unref(a);
}

/* Loads <dir>/model.onnx in copy and no_copy mode; both must give `want`. */
static void expect_status(const char *what, const char *dir, bool verify, onnxio_status want)
{
    char *path = tu_path_join(dir, "model.onnx");
    for (int no_copy = 0; no_copy <= 1; no_copy++) {
        onnxio_parse_options o = {0};
        o.no_copy = no_copy;
        o.verify_checksum = verify;
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        onnxio_status st = onnxio_load_model(path, &o, a, &m);
        CHECK_MSG(st == want, "%s (%s): gave %s, want %s (\"%s\")", what, no_copy ? "no_copy" : "copy",
                  onnxio_status_name(st), onnxio_status_name(want), onnxio_last_error());
        onnxio_arena_unref(a);
    }
    free(path);
}

static void test_load_safety_more(void)
{
    tu_begin("external data: hard links and the model file itself");
    char *root = tu_make_temp_dir("ext2");
    char *base = tu_path_join(root, "base");
    char *outside = tu_path_join(root, "outside");
    mkdir(base, 0777);
    mkdir(outside, 0777);
    write_data_file(base, "data.bin");
    write_data_file(outside, "secret.bin");
    {
        char *secret = tu_path_join(outside, "secret.bin"), *hl = tu_path_join(base, "h.bin");
        CHECK(tu_link(secret, hl) == 0);
        write_external_model(base, "h.bin", "0", "16");
        expect_load("hard link to a file outside", base, NULL, ONNXIO_ERR_PATH_LINK, 0, 0);
        free(secret);
        free(hl);
        char *data = tu_path_join(base, "data.bin"), *data2 = tu_path_join(base, "data2.bin");
        CHECK(tu_link(data, data2) == 0);
        write_external_model(base, "data.bin", "0", "16");
        expect_load("data file with a second name", base, NULL, ONNXIO_ERR_PATH_LINK, 0, 0);
        unlink(data2);
        expect_load("the second name removed", base, NULL, ONNXIO_OK, 0, 16);
        free(data);
        free(data2);
    }
    write_external_model(base, "model.onnx", "0", "16");
    expect_load("location is the model file", base, NULL, ONNXIO_ERR_PATH_SELF, 0, 0);
    write_external_model(base, "./model.onnx", "0", "16");
    expect_load("location ./model.onnx", base, NULL, ONNXIO_ERR_PATH_SELF, 0, 0);
#ifdef _WIN32
    tu_skip_windows("a symlink to the model file: " NO_SYMLINKS);
#else
    {
        char *lnk = tu_path_join(base, "self.lnk");
        CHECK(symlink("model.onnx", lnk) == 0);
        write_external_model(base, "self.lnk", "0", "16");
        expect_load("symlink to the model file", base, NULL, ONNXIO_ERR_PATH_SELF, 0, 0);
        free(lnk);
    }
#endif
    write_external_model(base, "data.bin", "65", "0");
    expect_load("offset past the end", base, NULL, ONNXIO_ERR_EXTERNAL_RANGE, 0, 0);
    tu_end();

    tu_begin("external data: length against type and shape");
    static const struct {
        int32_t type;
        int64_t dims[3];
        size_t nd;
        const char *length;
        bool ok;
    } cases[] = {
        {ONNXIO_TensorProto_DataType_FLOAT, {4}, 1, "16", true},
        {ONNXIO_TensorProto_DataType_FLOAT, {4}, 1, "12", false},
        {ONNXIO_TensorProto_DataType_FLOAT, {4}, 1, "20", false},
        {ONNXIO_TensorProto_DataType_FLOAT, {2, 3}, 2, "24", true},
        {ONNXIO_TensorProto_DataType_FLOAT, {0}, 0, "4", true}, /* a scalar */
        {ONNXIO_TensorProto_DataType_FLOAT, {3, 0}, 2, "0", true},
        {ONNXIO_TensorProto_DataType_FLOAT, {3, 0}, 2, "4", false},
        {ONNXIO_TensorProto_DataType_INT4, {5}, 1, "3", true},
        {ONNXIO_TensorProto_DataType_INT4, {5}, 1, "2", false},
        {ONNXIO_TensorProto_DataType_UINT4, {4}, 1, "2", true},
        {ONNXIO_TensorProto_DataType_FLOAT4E2M1, {3}, 1, "2", true},
        {ONNXIO_TensorProto_DataType_UINT2, {5}, 1, "2", true},
        {ONNXIO_TensorProto_DataType_INT2, {4}, 1, "1", true},
        {ONNXIO_TensorProto_DataType_INT2, {5}, 1, "1", false},
        {ONNXIO_TensorProto_DataType_COMPLEX64, {2}, 1, "16", true},
        {ONNXIO_TensorProto_DataType_COMPLEX128, {2}, 1, "32", true},
        {ONNXIO_TensorProto_DataType_COMPLEX128, {2}, 1, "16", false},
        {ONNXIO_TensorProto_DataType_DOUBLE, {3}, 1, "24", true},
        {ONNXIO_TensorProto_DataType_BOOL, {10}, 1, "10", true},
        {ONNXIO_TensorProto_DataType_BFLOAT16, {8}, 1, "16", true},
        {ONNXIO_TensorProto_DataType_FLOAT8E4M3FN, {7}, 1, "7", true},
        {ONNXIO_TensorProto_DataType_INT64, {2}, 1, "16", true},
        {ONNXIO_TensorProto_DataType_STRING, {3}, 1, "10", true},    /* not checked */
        {ONNXIO_TensorProto_DataType_UNDEFINED, {3}, 1, "5", true}, /* not checked */
        {ONNXIO_TensorProto_DataType_FLOAT, {-1}, 1, "16", false},
        {ONNXIO_TensorProto_DataType_FLOAT, {1LL << 40, 1LL << 40}, 2, "16", false}, /* elements overflow */
        {ONNXIO_TensorProto_DataType_INT64, {1LL << 61}, 1, "16", false},            /* bytes overflow */
        {ONNXIO_TensorProto_DataType_COMPLEX128, {1LL << 60}, 1, "16", false},
        {ONNXIO_TensorProto_DataType_INT2, {INT64_MAX}, 1, "16", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_typed_model(base, "data.bin", cases[i].length, cases[i].type, cases[i].dims, cases[i].nd, NULL);
        char what[96];
        snprintf(what, sizeof what, "case %zu (type %d, length %s)", i, (int)cases[i].type, cases[i].length);
        expect_status(what, base, false, cases[i].ok ? ONNXIO_OK : ONNXIO_ERR_EXTERNAL_DATA);
    }
    tu_end();

    tu_begin("external data: checksum key verified on request");
    const int64_t d64[] = {64};
    write_typed_model(base, "data.bin", "64", ONNXIO_TensorProto_DataType_UINT8, d64, 1, DATA_SHA1);
    expect_status("right checksum", base, true, ONNXIO_OK);
    write_typed_model(base, "data.bin", "64", ONNXIO_TensorProto_DataType_UINT8, d64, 1,
                      "BEDE92BE29C3874E1B54DDC77988D606FC857A8E");
    expect_status("right checksum in upper case", base, true, ONNXIO_OK);
    write_typed_model(base, "data.bin", "64", ONNXIO_TensorProto_DataType_UINT8, d64, 1,
                      "bede92be29c3874e1b54ddc77988d606fc857a8f");
    expect_status("wrong checksum", base, true, ONNXIO_ERR_CHECKSUM);
    expect_status("wrong checksum, not verified", base, false, ONNXIO_OK);
    write_typed_model(base, "data.bin", "64", ONNXIO_TensorProto_DataType_UINT8, d64, 1, "xyz");
    expect_status("malformed checksum", base, true, ONNXIO_ERR_CHECKSUM);
    tu_end();

    tu_remove_tree(root);
    free(base);
    free(outside);
    free(root);
}

/* ---- save modes ------------------------------------------------------------- */

enum { NT = 7 };
/* The tensors of rich_model, in tree order: initializers t0..t2, the
 * subgraph initializer, a Constant node's value, a sparse initializer's
 * values, a function's Constant value. */
static const char *const rich_names[NT] = {"t0", "t1", "t2", "sub", "const", "sparse_values", "fconst"};

static onnxio_TensorProto *uint8_tensor(onnxio_arena *a, onnxio_TensorProto *t, const char *name, const uint8_t *p, size_t n)
{
    int64_t *d = onnxio_array_append(a, &t->dims, sizeof(int64_t));
    *d = (int64_t)n;
    t->data_type = ONNXIO_TensorProto_DataType_UINT8;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    tu_set_string(a, t, &t->name, ONNXIO_FIELD_TensorProto_name, name);
    onnxio_span_copy_from(&t->raw_data, p, n);
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    return t;
}

static onnxio_AttributeProto *constant_node(onnxio_arena *a, void *nodes)
{
    onnxio_NodeProto *node = onnxio_list_add(a, nodes, &onnxio_desc_NodeProto);
    tu_set_string(a, node, &node->op_type, ONNXIO_FIELD_NodeProto_op_type, "Constant");
    onnxio_AttributeProto *attr = onnxio_list_add(a, &node->attribute, &onnxio_desc_AttributeProto);
    tu_set_string(a, attr, &attr->name, ONNXIO_FIELD_AttributeProto_name, "value");
    attr->type = ONNXIO_AttributeProto_AttributeType_TENSOR;
    onnxio_set_has(attr, ONNXIO_FIELD_AttributeProto_type);
    attr->t = onnxio_message_new(a, &onnxio_desc_TensorProto);
    return attr;
}

static onnxio_ModelProto *rich_model(onnxio_arena *a, const size_t *sizes, uint8_t **payloads)
{
    onnxio_ModelProto *m = model_with_payloads(a, sizes, 4, payloads);
    for (int i = 4; i < NT; i++) {
        payloads[i] = malloc(sizes[i]);
        fill(payloads[i], sizes[i], (unsigned)i + 1);
    }
    uint8_tensor(a, constant_node(a, &m->graph->node)->t, "const", payloads[4], sizes[4]);
    onnxio_SparseTensorProto *sp = onnxio_list_add(a, &m->graph->sparse_initializer, &onnxio_desc_SparseTensorProto);
    sp->values = uint8_tensor(a, onnxio_message_new(a, &onnxio_desc_TensorProto), "sparse_values", payloads[5], sizes[5]);
    onnxio_FunctionProto *f = onnxio_list_add(a, &m->functions, &onnxio_desc_FunctionProto);
    tu_set_string(a, f, &f->name, ONNXIO_FIELD_FunctionProto_name, "f");
    tu_set_string(a, f, &f->domain, ONNXIO_FIELD_FunctionProto_domain, "local");
    uint8_tensor(a, constant_node(a, &f->node)->t, "fconst", payloads[6], sizes[6]);
    return m;
}

/* rich_model's tensors, found by walking the structure by hand. */
static void rich_tensors(onnxio_ModelProto *m, onnxio_TensorProto **out)
{
    memset(out, 0, NT * sizeof *out);
    if (!m || !m->graph) return;
    onnxio_TensorProto *ts[8];
    size_t n = collect_tensors(m, ts, 8);
    for (size_t i = 0; i < n && i < 4; i++) out[i] = ts[i];
    for (size_t i = 0; i < m->graph->node.size; i++)
        if (strcmp(m->graph->node.data[i]->op_type.data, "Constant") == 0) out[4] = m->graph->node.data[i]->attribute.data[0]->t;
    if (m->graph->sparse_initializer.size) out[5] = m->graph->sparse_initializer.data[0]->values;
    if (m->functions.size && m->functions.data[0]->node.size) out[6] = m->functions.data[0]->node.data[0]->attribute.data[0]->t;
}

static bool is_external_t(const onnxio_TensorProto *t)
{
    return onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location) &&
           t->data_location == ONNXIO_TensorProto_DataLocation_EXTERNAL;
}

typedef struct saved_info {
    char location[NT][256];
    unsigned long long offset[NT], length[NT];
    bool external[NT];
} saved_info;

/* Checks a saved model by hand: which tensors are external, that the bytes
 * at their offset in their data file are the payload, offsets aligned,
 * checksum keys equal to tu_sha1_file's; then that a normal load gives every
 * payload back. */
static void check_saved(const char *what, const char *dir, const char *model, const size_t *sizes, uint8_t **payloads,
                        const bool *want_external, unsigned long long alignment, bool checksum, saved_info *info)
{
    char *mpath = tu_path_join(dir, model);
    onnxio_parse_options off = {0};
    off.load_external_data = ONNXIO_OFF;
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = NULL;
    CHECK_STATUS(onnxio_load_model(mpath, &off, a, &m), ONNXIO_OK);
    onnxio_TensorProto *ts[NT];
    rich_tensors(m, ts);
    saved_info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    for (int i = 0; i < NT; i++) {
        if (!CHECK_MSG(ts[i] != NULL, "%s: tensor %s missing", what, rich_names[i])) continue;
        info->external[i] = is_external_t(ts[i]);
        if (!want_external[i]) {
            CHECK_MSG(!info->external[i], "%s: %s should stay inline", what, rich_names[i]);
            CHECK_BYTES(ts[i]->raw_data.data, ts[i]->raw_data.size, payloads[i], sizes[i]);
            continue;
        }
        if (!CHECK_MSG(info->external[i] && !onnxio_has(ts[i], ONNXIO_FIELD_TensorProto_raw_data),
                       "%s: %s should be external", what, rich_names[i]))
            continue;
        const char *loc = entry(ts[i], "location"), *o = entry(ts[i], "offset"), *l = entry(ts[i], "length");
        const char *sum = entry(ts[i], "checksum");
        if (!CHECK_MSG(loc && o && l, "%s: %s lacks keys", what, rich_names[i])) continue;
        snprintf(info->location[i], sizeof info->location[i], "%s", loc);
        info->offset[i] = strtoull(o, NULL, 10);
        info->length[i] = strtoull(l, NULL, 10);
        CHECK_EQ_U64(info->length[i], sizes[i]);
        CHECK_MSG(info->offset[i] % alignment == 0, "%s: %s at offset %llu, not a multiple of %llu", what, rich_names[i],
                  info->offset[i], alignment);
        char *dpath = tu_path_join(dir, loc);
        size_t dn;
        uint8_t *d = tu_read_file(dpath, &dn);
        if (CHECK_MSG(d && info->offset[i] + sizes[i] <= dn, "%s: %s past the end of %s", what, rich_names[i], loc))
            CHECK_BYTES(d + info->offset[i], sizes[i], payloads[i], sizes[i]);
        CHECK_MSG((sum != NULL) == checksum, "%s: %s: checksum key %s", what, rich_names[i], sum ? "present" : "absent");
        char want[41];
        if (sum && CHECK(tu_sha1_file(dpath, want))) CHECK_STR(sum, want);
        free(d);
        free(dpath);
    }
    onnxio_arena_unref(a);
    /* and the data files hold nothing else: payloads and zero padding */
    for (int i = 0; i < NT; i++) {
        if (!info->external[i]) continue;
        char *dpath = tu_path_join(dir, info->location[i]);
        size_t dn;
        uint8_t *d = tu_read_file(dpath, &dn);
        unsigned long long end = 0;
        bool *covered = calloc(dn + 1, 1);
        for (int k = 0; k < NT; k++)
            if (info->external[k] && strcmp(info->location[k], info->location[i]) == 0) {
                if (info->offset[k] + info->length[k] > end) end = info->offset[k] + info->length[k];
                for (unsigned long long b = info->offset[k]; b < info->offset[k] + info->length[k] && b < dn; b++) covered[b] = 1;
            }
        CHECK_MSG(end == dn, "%s: %s is %zu bytes, its last payload ends at %llu", what, info->location[i], dn, end);
        size_t junk = 0;
        for (size_t b = 0; d && b < dn; b++) junk += !covered[b] && d[b] != 0;
        CHECK_MSG(junk == 0, "%s: %s has %zu non-zero padding bytes", what, info->location[i], junk);
        free(covered);
        free(d);
        free(dpath);
    }
    /* a normal load gives back every payload */
    for (int v = 0; v <= 1; v++) {
        onnxio_parse_options o = {0};
        o.no_copy = v;
        o.verify_checksum = checksum;
        a = onnxio_arena_new();
        m = NULL;
        CHECK_STATUS(onnxio_load_model(mpath, &o, a, &m), ONNXIO_OK);
        rich_tensors(m, ts);
        for (int i = 0; i < NT && m; i++) {
            if (!CHECK(ts[i] != NULL)) continue;
            CHECK_MSG(!is_external_t(ts[i]), "%s: %s still external after load", what, rich_names[i]);
            CHECK_BYTES(ts[i]->raw_data.data, ts[i]->raw_data.size, payloads[i], sizes[i]);
        }
        onnxio_arena_unref(a);
    }
    free(mpath);
}

static bool same_file_bytes(const char *a, const char *b)
{
    size_t na, nb;
    uint8_t *x = tu_read_file(a, &na), *y = tu_read_file(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* A payload callback that skips tensor "t2" and loads the others. */
static onnxio_payload_action skip_t2(void *ctx, const onnxio_payload_request *r, void **dst, onnxio_buffer **owner)
{
    (void)dst;
    (void)owner;
    (*(int *)ctx)++;
    return strcmp(r->tensor->name.data, "t2") == 0 ? ONNXIO_PAYLOAD_SKIP : ONNXIO_PAYLOAD_LOAD;
}

static void test_save_modes(void)
{
    char *root = tu_make_temp_dir("modes");
    const size_t sizes[NT] = {16, 2000, 5000, 3000, 1500, 1200, 1100};
    uint8_t *payloads[NT];
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = rich_model(a, sizes, payloads);
    const bool init_only[NT] = {false, true, true, true, false, false, false};
    const bool everything[NT] = {false, true, true, true, true, true, true};

    tu_begin("save: default alignment 4096, initializers only");
    {
        char *dir = tu_path_join(root, "default");
        mkdir(dir, 0777);
        char *mpath = tu_path_join(dir, "m.onnx");
        onnxio_serialize_options so = {0};
        so.external_data.location = "w.bin";
        CHECK_STATUS(onnxio_save_model(m, mpath, &so), ONNXIO_OK);
        saved_info info;
        check_saved("default", dir, "m.onnx", sizes, payloads, init_only, 4096, false, &info);
        /* tree order: a graph's nodes (field 1) come before its
         * initializers (field 5), so the subgraph's "sub" is first */
        CHECK_EQ_U64(info.offset[3], 0);
        CHECK_EQ_U64(info.offset[1], 4096);
        CHECK_EQ_U64(info.offset[2], 8192);
        free(mpath);
        free(dir);
    }
    tu_end();

    tu_begin("save: convert_attribute, alignment 1, threshold 1");
    {
        char *dir = tu_path_join(root, "attr");
        mkdir(dir, 0777);
        char *mpath = tu_path_join(dir, "m.onnx");
        onnxio_serialize_options so = {0};
        so.external_data.location = "w.bin";
        so.external_data.convert_attribute = true;
        so.external_data.size_threshold = 1;
        so.alignment = 1;
        CHECK_STATUS(onnxio_save_model(m, mpath, &so), ONNXIO_OK);
        const bool all[NT] = {true, true, true, true, true, true, true};
        saved_info info;
        check_saved("convert_attribute", dir, "m.onnx", sizes, payloads, all, 1, false, &info);
        /* packed, in tree order: sub, const (nodes), t0..t2, sparse, function */
        static const int order[NT] = {3, 4, 0, 1, 2, 5, 6};
        unsigned long long at = 0;
        for (int k = 0; k < NT; k++) {
            CHECK_EQ_U64(info.offset[order[k]], at);
            at += sizes[order[k]];
        }
        free(mpath);
        free(dir);
    }
    tu_end();

    tu_begin("save: the same bytes for 1, 2 and 4 threads (checksum on)");
    {
        char *first_m = NULL, *first_w = NULL;
        const int threads[] = {1, 2, 4};
        for (int k = 0; k < 3; k++) {
            char *dir = tu_strdup_printf("%s/threads%d", root, threads[k]);
            mkdir(dir, 0777);
            char *mpath = tu_path_join(dir, "m.onnx"), *wpath = tu_path_join(dir, "w.bin");
            onnxio_serialize_options so = {0};
            so.num_threads = threads[k];
            so.external_data.location = "w.bin";
            so.external_data.convert_attribute = true;
            so.external_data.checksum = true;
            CHECK_STATUS(onnxio_save_model(m, mpath, &so), ONNXIO_OK);
            check_saved("threads", dir, "m.onnx", sizes, payloads, everything, 4096, true, NULL);
            if (!first_m) {
                first_m = mpath;
                first_w = wpath;
            } else {
                CHECK_MSG(same_file_bytes(first_m, mpath), "model bytes differ with %d threads", threads[k]);
                CHECK_MSG(same_file_bytes(first_w, wpath), "data bytes differ with %d threads", threads[k]);
                free(mpath);
                free(wpath);
            }
            free(dir);
        }
        free(first_m);
        free(first_w);
    }
    tu_end();

    tu_begin("save: max_file_size splits into numbered files");
    {
        const size_t big[NT] = {16, 2000, 7000, 3000, 1500, 1200, 1100};
        uint8_t *pl[NT];
        onnxio_arena *b = onnxio_arena_new();
        onnxio_ModelProto *mb = rich_model(b, big, pl);
        char *dir = tu_path_join(root, "split");
        mkdir(dir, 0777);
        char *mpath = tu_path_join(dir, "m.onnx");
        onnxio_serialize_options so = {0};
        so.external_data.location = "w.bin";
        so.external_data.convert_attribute = true;
        so.external_data.max_file_size = 3500;
        so.external_data.checksum = true;
        so.alignment = 1;
        CHECK_STATUS(onnxio_save_model(mb, mpath, &so), ONNXIO_OK);
        saved_info info;
        check_saved("split", dir, "m.onnx", big, pl, everything, 1, true, &info);
        /* tree order: sub 3000 | const 1500 + t1 2000 (exactly the limit) |
         * t2 7000 (alone, over the limit) | sparse 1200 + fconst 1100 */
        tu_strlist names = {0};
        tu_list_dir(dir, &names);
        CHECK_EQ_INT(names.size, 5);
        size_t number = 0;
        for (size_t i = 0; i < names.size; i++) {
            if (strcmp(names.items[i], "m.onnx") == 0) continue;
            char want[64];
            snprintf(want, sizeof want, "w-%05zu-of-00004.bin", ++number);
            CHECK_STR(names.items[i], want);
            char *p = tu_path_join(dir, names.items[i]);
            struct stat st;
            int count = 0;
            for (int t = 0; t < NT; t++) count += info.external[t] && strcmp(info.location[t], names.items[i]) == 0;
            if (CHECK(stat(p, &st) == 0))
                CHECK_MSG(st.st_size <= 3500 || count == 1, "%s: %lld bytes over the limit with %d payloads",
                          names.items[i], (long long)st.st_size, count);
            free(p);
        }
        CHECK_STR(info.location[3], "w-00001-of-00004.bin");
        CHECK_STR(info.location[4], "w-00002-of-00004.bin");
        CHECK_STR(info.location[1], "w-00002-of-00004.bin");
        CHECK_EQ_U64(info.offset[1], 1500);
        CHECK_STR(info.location[2], "w-00003-of-00004.bin");
        CHECK_STR(info.location[5], "w-00004-of-00004.bin");
        CHECK_STR(info.location[6], "w-00004-of-00004.bin");
        CHECK_EQ_U64(info.offset[6], 1200);
        tu_strlist_free(&names);
        free(mpath);
        free(dir);
        onnxio_arena_unref(b);
        for (int i = 0; i < NT; i++) free(pl[i]);
    }
    tu_end();

    tu_begin("save: one file per tensor");
    {
        onnxio_arena *b = onnxio_arena_new();
        onnxio_ModelProto *mb = new_model(b);
        static const char *const tnames[] = {"a/b", "A_B", ".hidden", "model.onnx", "", "x:y", "a_b_1"};
        static const char *const fnames[] = {"a_b", "A_B_1", "_hidden", "model.onnx_1", "tensor", "x_y", "a_b_1_1"};
        enum { K = 7 };
        uint8_t *pl[K];
        for (int i = 0; i < K; i++) {
            pl[i] = malloc(2000);
            fill(pl[i], 2000, 40 + (unsigned)i);
            onnxio_TensorProto *t = onnxio_list_add(b, &mb->graph->initializer, &onnxio_desc_TensorProto);
            uint8_tensor(b, t, tnames[i], pl[i], 2000);
        }
        char *dir = tu_path_join(root, "per_tensor");
        mkdir(dir, 0777);
        char *mpath = tu_path_join(dir, "model.onnx");
        onnxio_serialize_options so = {0};
        so.external_data.all_tensors_to_one_file = ONNXIO_OFF;
        so.external_data.checksum = true;
        CHECK_STATUS(onnxio_save_model(mb, mpath, &so), ONNXIO_OK);
        tu_strlist names = {0};
        tu_list_dir(dir, &names);
        CHECK_EQ_INT(names.size, K + 1);
        for (size_t i = 0; i < names.size; i++)
            for (size_t j = i + 1; j < names.size; j++)
                CHECK_MSG(strcasecmp(names.items[i], names.items[j]) != 0, "%s and %s differ only in case",
                          names.items[i], names.items[j]);
        tu_strlist_free(&names);
        onnxio_parse_options off = {0};
        off.load_external_data = ONNXIO_OFF;
        onnxio_arena *c = onnxio_arena_new();
        onnxio_ModelProto *back = NULL;
        CHECK_STATUS(onnxio_load_model(mpath, &off, c, &back), ONNXIO_OK);
        for (int i = 0; back && i < K; i++) {
            onnxio_TensorProto *t = back->graph->initializer.data[i];
            CHECK(is_external_t(t));
            CHECK_STR(entry(t, "location"), fnames[i]);
            CHECK_STR(entry(t, "offset"), "0");
            char *p = tu_path_join(dir, fnames[i]);
            size_t n;
            uint8_t *d = tu_read_file(p, &n);
            CHECK_BYTES(d, n, pl[i], 2000);
            char want[41];
            if (CHECK(tu_sha1_file(p, want))) CHECK_STR(entry(t, "checksum"), want);
            free(d);
            free(p);
        }
        onnxio_arena_unref(c);
        c = onnxio_arena_new();
        back = NULL;
        onnxio_parse_options verify = {0};
        verify.verify_checksum = true;
        CHECK_STATUS(onnxio_load_model(mpath, &verify, c, &back), ONNXIO_OK);
        if (back) CHECK(tu_equal_as_loaded(back, mb));
        onnxio_arena_unref(c);
        /* a changed byte is caught */
        char *p = tu_path_join(dir, "x_y");
        pl[5][100] ^= 1;
        CHECK(tu_write_file(p, pl[5], 2000));
        c = onnxio_arena_new();
        back = NULL;
        CHECK_STATUS(onnxio_load_model(mpath, &verify, c, &back), ONNXIO_ERR_CHECKSUM);
        onnxio_arena_unref(c);
        free(p);
        free(mpath);
        free(dir);
        onnxio_arena_unref(b);
        for (int i = 0; i < K; i++) free(pl[i]);
    }
    tu_end();

    tu_begin("save: re-saving to the location it was loaded from");
    {
        char *dir = tu_path_join(root, "resave");
        mkdir(dir, 0777);
        char *mpath = tu_path_join(dir, "m.onnx"), *wpath = tu_path_join(dir, "w.bin");
        onnxio_serialize_options packed = {0};
        packed.external_data.location = "w.bin";
        packed.external_data.convert_attribute = true;
        packed.alignment = 1;
        CHECK_STATUS(onnxio_save_model(m, mpath, &packed), ONNXIO_OK);
        const size_t packed_size = 2000 + 5000 + 3000 + 1500 + 1200 + 1100;
        struct stat st;
        CHECK(stat(wpath, &st) == 0 && (size_t)st.st_size == packed_size);
        for (int no_copy = 0; no_copy <= 1; no_copy++) {
            for (int round = 0; round < 2; round++) {
                onnxio_parse_options o = {0};
                o.no_copy = no_copy;
                onnxio_arena *b = onnxio_arena_new();
                onnxio_ModelProto *loaded = NULL;
                CHECK_STATUS(onnxio_load_model(mpath, &o, b, &loaded), ONNXIO_OK);
                /* aligned first: the data file grows; packed again: it shrinks back */
                onnxio_serialize_options so = packed;
                if (round == 0) so.alignment = 0;
                if (loaded) CHECK_STATUS(onnxio_save_model(loaded, mpath, &so), ONNXIO_OK);
                onnxio_arena_unref(b);
                check_saved("re-save", dir, "m.onnx", sizes, payloads, everything, round == 0 ? 4096 : 1, false, NULL);
                CHECK(stat(wpath, &st) == 0);
                if (round == 0) CHECK_EQ_U64(st.st_size, 6 * 4096 + 1100);
                else CHECK_EQ_U64(st.st_size, packed_size);
            }
        }
        /* saving twice: the same bytes */
        size_t n1, n2;
        uint8_t *w1 = tu_read_file(wpath, &n1);
        CHECK_STATUS(onnxio_save_model(m, mpath, &packed), ONNXIO_OK);
        uint8_t *w2 = tu_read_file(wpath, &n2);
        CHECK_BYTES(w2, n2, w1, n1);
        free(w1);
        free(w2);
        /* a model whose tensors are all still external moves nothing: its
         * data file is not rewritten (no data file is written when no
         * payload moves), so it stays what the tensors refer to */
        onnxio_parse_options off = {0};
        off.load_external_data = ONNXIO_OFF;
        onnxio_arena *b = onnxio_arena_new();
        onnxio_ModelProto *ext = NULL;
        CHECK_STATUS(onnxio_load_model(mpath, &off, b, &ext), ONNXIO_OK);
        struct stat before, after;
        CHECK(stat(wpath, &before) == 0);
        if (ext) CHECK_STATUS(onnxio_save_model(ext, mpath, &packed), ONNXIO_OK);
        CHECK(stat(wpath, &after) == 0 && after.st_ino == before.st_ino && after.st_mtime == before.st_mtime);
        check_saved("after a re-save of external tensors", dir, "m.onnx", sizes, payloads, everything, 1, false, NULL);
        onnxio_arena_unref(b);
        free(mpath);
        free(wpath);
        free(dir);
    }
    tu_end();

    tu_begin("load: one tensor at a time, skipped payloads stay external, moved directories");
    {
        char *dir = tu_path_join(root, "lazy");
        mkdir(dir, 0777);
        char *mpath = tu_path_join(dir, "m.onnx");
        onnxio_serialize_options so = {0};
        so.external_data.location = "w.bin";
        so.external_data.convert_attribute = true;
        CHECK_STATUS(onnxio_save_model(m, mpath, &so), ONNXIO_OK);
        for (int no_copy = 0; no_copy <= 1; no_copy++) {
            onnxio_parse_options off = {0};
            off.load_external_data = ONNXIO_OFF;
            off.no_copy = no_copy;
            onnxio_arena *b = onnxio_arena_new();
            onnxio_ModelProto *lm = NULL;
            CHECK_STATUS(onnxio_load_model(mpath, &off, b, &lm), ONNXIO_OK);
            onnxio_TensorProto *ts[NT];
            rich_tensors(lm, ts);
            if (lm && CHECK(ts[2] && ts[3] && ts[0])) {
                CHECK(is_external_t(ts[2]) && is_external_t(ts[3]));
                CHECK_STATUS(onnxio_load_tensor_external_data(ts[2], dir, &off), ONNXIO_OK);
                CHECK(!is_external_t(ts[2]) && ts[2]->external_data.size == 0);
                CHECK_BYTES(ts[2]->raw_data.data, ts[2]->raw_data.size, payloads[2], sizes[2]);
                CHECK(is_external_t(ts[3]));
                CHECK_STATUS(onnxio_load_tensor_external_data(ts[0], dir, &off), ONNXIO_OK); /* inline: nothing */
                CHECK_BYTES(ts[0]->raw_data.data, ts[0]->raw_data.size, payloads[0], sizes[0]);
                CHECK_STATUS(onnxio_load_external_data(lm, dir, &off), ONNXIO_OK);
                for (int i = 0; i < NT; i++) {
                    CHECK(!is_external_t(ts[i]));
                    CHECK_BYTES(ts[i]->raw_data.data, ts[i]->raw_data.size, payloads[i], sizes[i]);
                }
                CHECK(tu_equal_as_loaded(lm, m));
            }
            onnxio_arena_unref(b);
        }
        /* a payload callback's SKIP leaves that tensor external */
        for (int no_copy = 0; no_copy <= 1; no_copy++) {
            int calls = 0;
            onnxio_parse_options o = {0};
            o.no_copy = no_copy;
            o.payload_fn = skip_t2;
            o.payload_ctx = &calls;
            onnxio_arena *b = onnxio_arena_new();
            onnxio_ModelProto *lm = NULL;
            CHECK_STATUS(onnxio_load_model(mpath, &o, b, &lm), ONNXIO_OK);
            CHECK(calls == NT);
            onnxio_TensorProto *ts[NT];
            rich_tensors(lm, ts);
            for (int i = 0; lm && i < NT; i++) {
                if (!CHECK(ts[i] != NULL)) continue;
                if (i == 2) {
                    CHECK(is_external_t(ts[2]) && !onnxio_has(ts[2], ONNXIO_FIELD_TensorProto_raw_data));
                    CHECK_STR(entry(ts[2], "location"), "w.bin");
                } else {
                    CHECK(!is_external_t(ts[i]));
                    CHECK_BYTES(ts[i]->raw_data.data, ts[i]->raw_data.size, payloads[i], sizes[i]);
                }
            }
            if (lm && ts[2]) {
                o.payload_fn = NULL;
                CHECK_STATUS(onnxio_load_tensor_external_data(ts[2], dir, &o), ONNXIO_OK);
                CHECK_BYTES(ts[2]->raw_data.data, ts[2]->raw_data.size, payloads[2], sizes[2]);
                CHECK(tu_equal_as_loaded(lm, m));
            }
            onnxio_arena_unref(b);
        }
        /* a wrong base directory: not found */
        {
            onnxio_parse_options off = {0};
            off.load_external_data = ONNXIO_OFF;
            onnxio_arena *b = onnxio_arena_new();
            onnxio_ModelProto *lm = NULL;
            CHECK_STATUS(onnxio_load_model(mpath, &off, b, &lm), ONNXIO_OK);
            onnxio_TensorProto *ts[NT];
            rich_tensors(lm, ts);
            if (lm && ts[1]) CHECK_STATUS(onnxio_load_tensor_external_data(ts[1], root, NULL), ONNXIO_ERR_NOT_FOUND);
            if (ts[1]) CHECK(is_external_t(ts[1]));
            onnxio_arena_unref(b);
        }
        /* moving the directory keeps the model loadable */
        char *moved = tu_path_join(root, "lazy-moved");
        CHECK(rename(dir, moved) == 0);
        check_saved("moved", moved, "m.onnx", sizes, payloads, everything, 4096, false, NULL);
        free(moved);
        free(mpath);
        free(dir);
    }
    tu_end();

    tu_begin("save: refused targets");
    {
        char *dir = tu_path_join(root, "refuse"), *outside = tu_path_join(root, "refuse-outside");
        mkdir(dir, 0777);
        mkdir(outside, 0777);
        char *mpath = tu_path_join(dir, "m.onnx");
        CHECK_STATUS(onnxio_save_model(m, mpath, NULL), ONNXIO_OK);
        size_t model_n;
        uint8_t *model_bytes = tu_read_file(mpath, &model_n);
        write_data_file(outside, "x.bin");
        write_data_file(outside, "y.bin");
        char *x = tu_path_join(outside, "x.bin"), *y = tu_path_join(outside, "y.bin");
        char *hl = tu_path_join(dir, "hl.bin"), *sl = tu_path_join(dir, "sl.bin"), *ld = tu_path_join(dir, "ld");
        char *alias = tu_path_join(dir, "alias");
        CHECK(tu_link(x, hl) == 0);
#ifdef _WIN32
        tu_skip_windows("saves to symlinks sl.bin, ld/ and alias: " NO_SYMLINKS);
#else
        CHECK(symlink(y, sl) == 0);
        CHECK(symlink(outside, ld) == 0);
        CHECK(symlink("m.onnx", alias) == 0);
#endif
        static const struct {
            const char *location;
            onnxio_status want;
        } bad[] = {
            {"m.onnx", ONNXIO_ERR_PATH_SELF},   {"./m.onnx", ONNXIO_ERR_PATH_SELF},
            {"alias", ONNXIO_ERR_PATH_SELF},    {"hl.bin", ONNXIO_ERR_PATH_LINK},
            {"sl.bin", ONNXIO_ERR_PATH_ESCAPES}, {"ld/w.bin", ONNXIO_ERR_PATH_ESCAPES},
            {"ld/x.bin", ONNXIO_ERR_PATH_ESCAPES}, {"../w.bin", ONNXIO_ERR_PATH_PARENT},
            {"nodir/w.bin", ONNXIO_ERR_NOT_FOUND},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            if (ONNXIO__OS_WINDOWS && (strcmp(bad[i].location, "alias") == 0 || strcmp(bad[i].location, "sl.bin") == 0 ||
                                       strncmp(bad[i].location, "ld/", 3) == 0))
                continue; /* no symlinks made */
            onnxio_serialize_options so = {0};
            so.external_data.location = bad[i].location;
            onnxio_status st = onnxio_save_model(m, mpath, &so);
            CHECK_MSG(st == bad[i].want, "save to location %s gave %s, want %s (%s)", bad[i].location,
                      onnxio_status_name(st), onnxio_status_name(bad[i].want), onnxio_last_error());
            /* split names are checked the same way */
            so.external_data.max_file_size = 1000;
            if (strcmp(bad[i].location, "ld/w.bin") == 0) CHECK_STATUS(onnxio_save_model(m, mpath, &so), bad[i].want);
        }
        check_file_is("refused saves: the model", mpath, model_bytes, model_n);
        check_file_is("refused saves: outside x.bin", x, data_bytes, DATA_SIZE);
        check_file_is("refused saves: outside y.bin", y, data_bytes, DATA_SIZE);
        {
#ifdef _WIN32
            const char *const names[] = {"hl.bin", "m.onnx"};
#else
            const char *const names[] = {"alias", "hl.bin", "ld", "m.onnx", "sl.bin"};
#endif
            check_dir_is("refused saves", dir, names, sizeof names / sizeof names[0]);
            const char *const onames[] = {"x.bin", "y.bin"};
            check_dir_is("refused saves: outside", outside, onames, 2);
        }
        /* a symlink that stays inside is written through to its target,
         * as cp does: the link stays a link */
#ifdef _WIN32
        tu_skip_windows("a save through a symlink inside: " NO_SYMLINKS);
#else
        write_data_file(dir, "target.bin");
        char *inl = tu_path_join(dir, "in.bin"), *target = tu_path_join(dir, "target.bin");
        CHECK(symlink("target.bin", inl) == 0);
        onnxio_serialize_options so = {0};
        so.external_data.location = "in.bin";
        CHECK_STATUS(onnxio_save_model(m, mpath, &so), ONNXIO_OK);
        struct stat lst;
        CHECK(lstat(inl, &lst) == 0 && S_ISLNK(lst.st_mode));
        size_t tn = 0, ln = 0;
        uint8_t *tb = tu_read_file(target, &tn), *lb = tu_read_file(inl, &ln);
        CHECK(tb && lb && tn == ln && tn != DATA_SIZE && memcmp(tb, lb, tn) == 0);
        free(tb);
        free(lb);
        check_saved("symlink inside", dir, "m.onnx", sizes, payloads, init_only, 4096, false, NULL);
        free(inl);
        free(target);
#endif
        free(model_bytes);
        free(x);
        free(y);
        free(hl);
        free(sl);
        free(ld);
        free(alias);
        free(mpath);
        free(dir);
        free(outside);
    }
    tu_end();

    onnxio_arena_unref(a);
    for (int i = 0; i < NT; i++) free(payloads[i]);
    tu_remove_tree(root);
    free(root);
}

/* ---- mapping in windows ------------------------------------------------------ */

/* A large file is mapped in windows, each from its own open file
 * description of the file (src/io/file.c, map_windows): with one-page windows,
 * the kernel's /proc/self/maps must list one mapping of the data file per
 * window (ceil(size / page)) while the model is loaded and none after; the
 * payloads, which cross window edges, must be the data file's bytes; no
 * descriptor may stay open; and an mmap failing at any point, once or from
 * then on, must give a load with the right bytes or a clean error. */
static void test_map_windows(void)
{
    tu_begin("external data: no_copy maps a large file in windows, one open file description each");
#ifdef _WIN32
    const size_t page = onnxio__page_size(); /* GetSystemInfo's dwPageSize */
#else
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
#endif
    const size_t size = 10 * page + page / 2;
    uint8_t *bytes = malloc(size);
    for (size_t i = 0; i < size; i++) bytes[i] = (uint8_t)(i * 131 + i / 7);
    const size_t edges[] = {0, 1, page + 3, 4 * page - 5, 9 * page + 7, size};
    enum { NT = sizeof edges / sizeof edges[0] - 1 };
#ifdef _WIN32
    /* One view of the whole file: the Windows build has no new open file
     * description to map a window from (os_win.c, onnxio__sys_reopen). */
    const int views = 1;
#else
    const int views = (int)((size + page - 1) / page);
#endif

    char *dir = tu_make_temp_dir("win");
    char *data = tu_path_join(dir, "windows.bin");
    CHECK(tu_write_file(data, bytes, size));
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = new_model(a);
    for (int i = 0; i < NT; i++) {
        char name[8], off[32], len[32];
        snprintf(name, sizeof name, "w%d", i);
        snprintf(off, sizeof off, "%zu", edges[i]);
        snprintf(len, sizeof len, "%zu", edges[i + 1] - edges[i]);
        onnxio_TensorProto *t = add_tensor(a, m->graph, name, (int64_t)(edges[i + 1] - edges[i]));
        t->data_type = ONNXIO_TensorProto_DataType_UINT8;
        add_entry(a, t, "location", "windows.bin");
        add_entry(a, t, "offset", off);
        add_entry(a, t, "length", len);
        t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    }
    char *path = tu_path_join(dir, "model.onnx");
    CHECK_STATUS(onnxio_save_file(m, path, NULL), ONNXIO_OK);
    onnxio_arena_unref(a);

    onnxio__test_map_window = page;
    const tu_fds fds = tu_open_fds();
    int loaded = 0, refused = 0, recovered = 0;
    /* nth 0: no failure; then the nth mmap fails, once or from then on. */
    for (long nth = 0; nth <= 2 + (long)NT + 11; nth++) {
        for (int persistent = 0; persistent <= (nth ? 1 : 0); persistent++) {
            onnxio_parse_options opts = {0};
            opts.no_copy = true;
            onnxio_arena *b = onnxio_arena_new();
            onnxio_ModelProto *got = NULL;
            if (nth) onnxio__fault_set(1u << ONNXIO__OP_MAP, nth, false, persistent);
            onnxio_status st = onnxio_load_model(path, &opts, b, &got);
            bool hit = onnxio__fault_hit();
            onnxio__fault_set(0, 0, false, false);
            if (st == ONNXIO_OK) {
                loaded++;
                recovered += hit;
                if (nth == 0) CHECK_EQ_INT(tu_mappings_of("/windows.bin"), views);
                if (CHECK(got && got->graph && got->graph->initializer.size == NT))
                    for (int i = 0; i < NT; i++) {
                        onnxio_TensorProto *t = got->graph->initializer.data[i];
                        CHECK_BYTES(t->raw_data.data, t->raw_data.size, bytes + edges[i], edges[i + 1] - edges[i]);
                    }
            } else {
                refused++;
                CHECK_MSG(onnxio_last_error()[0] != '\0', "mmap %ld failing: empty error message", nth);
                CHECK_MSG(got == NULL, "mmap %ld failing: *out set on failure", nth);
            }
            onnxio_arena_unref(b);
            CHECK_MSG(tu_mappings_of("/windows.bin") == 0, "mmap %ld failing (%s): the data file still mapped", nth,
                      persistent ? "from then on" : "once");
            CHECK_MSG(tu_same_fds(tu_open_fds(), fds), "mmap %ld failing: a descriptor left open or closed", nth);
        }
    }
    onnxio__test_map_window = 0;
    /* The failures reached the windows: loads that succeeded though an
     * mmap failed (a window mapped back from the first description), and
     * loads refused. */
#ifdef _WIN32
    CHECK(refused > 0);
    tu_skip_windows("an mmap failing after the first: one view per file, no later window to fail");
#else
    CHECK(recovered > 0 && refused > 0);
#endif
    tu_note("%d loads (%d with an mmap failed), %d refused", loaded, recovered, refused);
    free(path);
    free(data);
    free(bytes);
    tu_remove_tree(dir);
    free(dir);
    tu_end();
}

/* SHA-1 and SHA-256, the SHA instructions' code and the portable code,
 * against sha1sum(1) and sha256sum(1) (CNG's BCryptHash on Windows):
 * lengths about every block boundary and the padding's length boundary
 * (55, 56, 63, 64 bytes into a block), unaligned starts, and SHA-1 updates
 * cut at odd places, as the save feeds payloads and padding in pieces. */
static void test_sha_engines(void)
{
    tu_begin("SHA-1 and SHA-256: the SHA instructions (here: %s) and the portable code against sha1sum, sha256sum",
             onnxio__sha_engine(1));
    char *dir = tu_make_temp_dir("onnxio-sha");
    size_t big = (1u << 20) + 4097;
    uint8_t *bytes = malloc(big + 1);
    for (size_t i = 0; i < big + 1; i++) bytes[i] = (uint8_t)(i * 2654435761u >> 13);
    static const size_t lengths[] = {0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096, 65536 + 7};
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0] + 1; k++) {
        size_t n = k < sizeof lengths / sizeof lengths[0] ? lengths[k] : big;
        for (size_t shift = 0; shift < 2; shift++) {
            const uint8_t *at = bytes + shift;
            char *path = tu_strdup_printf("%s/sha-%zu-%zu.bin", dir, n, shift);
            char want[41], want256[65];
            if (CHECK(tu_write_file(path, at, n)) && CHECK(tu_sha1_file(path, want)) &&
                CHECK(tu_sha256_file(path, want256))) {
                for (int hardware = 1; hardware >= 0; hardware--) {
                    const char *engine = onnxio__sha_engine(hardware);
                    char whole[41], pieces[41];
                    CHECK_STATUS(onnxio__sha1_hex(at, n, whole), ONNXIO_OK);
                    CHECK_MSG(strcmp(whole, want) == 0, "SHA-1, %s, %zu bytes at +%zu: %s, want %s", engine, n, shift,
                              whole, want);
                    onnxio__sha1 h;
                    CHECK_STATUS(onnxio__sha1_begin(&h), ONNXIO_OK);
                    for (size_t done = 0, cut = 1; done < n; cut = cut * 3 + 1) {
                        size_t m = n - done < cut ? n - done : cut;
                        CHECK_STATUS(onnxio__sha1_update(&h, at + done, m), ONNXIO_OK);
                        done += m;
                    }
                    CHECK_STATUS(onnxio__sha1_end(&h, pieces), ONNXIO_OK);
                    CHECK_MSG(strcmp(pieces, want) == 0, "SHA-1, %s, %zu bytes at +%zu in pieces: %s, want %s", engine,
                              n, shift, pieces, want);
                    uint8_t d[32];
                    onnxio__sha256(at, n, d);
                    char got256[65];
                    for (int i = 0; i < 32; i++) snprintf(got256 + 2 * i, 3, "%02x", d[i]);
                    CHECK_MSG(strcmp(got256, want256) == 0, "SHA-256, %s, %zu bytes at +%zu: %s, want %s", engine, n,
                              shift, got256, want256);
                }
            }
            remove(path);
            free(path);
        }
    }
    onnxio__sha_engine(1);
    free(bytes);
    tu_remove_tree(dir);
    free(dir);
    tu_end();
}

/* The SHA-256 of `n` bytes at `p` by sha256sum (CNG on Windows), as hex. */
static bool sha256_want(const char *dir, const uint8_t *p, size_t n, char want[65])
{
    char *path = tu_strdup_printf("%s/range.bin", dir);
    bool ok = tu_write_file(path, p, n) && tu_sha256_file(path, want);
    remove(path);
    free(path);
    return ok;
}

/* Compares out[0..count) with want[], and out[count] (when below `cap`)
 * with the 0xA5 bytes it was filled with. */
static void sha256_many_compare(const char *what, size_t count, size_t cap, uint8_t (*out)[32], char (*want)[65])
{
    for (size_t i = 0; i < count; i++) {
        char got[65];
        for (int b = 0; b < 32; b++) snprintf(got + 2 * b, 3, "%02x", out[i][b]);
        CHECK_MSG(strcmp(got, want[i]) == 0, "%s, range %zu of %zu: %s, want %s", what, i, count, got, want[i]);
    }
    if (count < cap) {
        bool untouched = true;
        for (int b = 0; b < 32; b++) untouched &= out[count][b] == 0xA5;
        CHECK_MSG(untouched, "%s: digest %zu written, past the %zu ranges", what, count, count);
    }
}

/* onnxio__sha256_many against sha256sum, with every engine (the portable
 * code or the SHA instructions one range at a time, AVX2's 8 lanes,
 * AVX-512's 8 or 16, as far as the CPU has them): 1 to 17 ranges of one
 * length (about the padding's boundaries, a whole block, 1 MiB), each
 * range other bytes and most of them starting unaligned, so that a lane
 * mixed up with another or a padding lane leaking out shows; and 70 ranges
 * of mixed lengths in one call (more than the 64 it groups at a time). */
static void test_sha256_many(void)
{
    onnxio__sha_engine(1);
    tu_begin("SHA-256 of many ranges at once (onnxio__sha256_many; vector lanes here: %s) against sha256sum",
             onnxio__sha_many_engine(2));
    onnxio__sha_engine(1);
    char *dir = tu_make_temp_dir("onnxio-sha-many");
    static const size_t lengths[] = {0, 1, 55, 56, 63, 64, 65, 1000, 65536 + 7, 1u << 20};
    enum { NL = sizeof lengths / sizeof lengths[0], MOST = 17, MIXED = 70 };
    size_t cap = (size_t)MOST * ((1u << 20) + 7) + 64;
    uint8_t *bytes = malloc(cap);
    uint64_t x = 1;
    for (size_t i = 0; i < cap; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        bytes[i] = (uint8_t)(x >> 56);
    }
    const uint8_t *data[MIXED];
    size_t size[MIXED];
    uint8_t(*out)[32] = malloc(sizeof *out * MIXED);
    char(*want)[65] = malloc(sizeof *want * MIXED);
    for (size_t k = 0; k <= NL; k++) {
        /* one length, range i at i (n + 7): its own bytes, starts at
         * every alignment; or mixed lengths */
        size_t most = k < NL ? MOST : MIXED;
        bool ok = true;
        for (size_t i = 0; i < most && ok; i++) {
            size_t n = k < NL ? lengths[k] : lengths[(i * 7 + i / 10) % NL];
            data[i] = bytes + (k < NL ? i * (n + 7) : (i * 104729) % (cap - n));
            size[i] = n;
            ok = CHECK(sha256_want(dir, data[i], n, want[i]));
        }
        if (!ok) continue;
        for (int hardware = 1; hardware >= 0; hardware--)
            for (int engine = 2; engine >= 0; engine--) {
                onnxio__sha_engine(hardware);
                const char *lanes = onnxio__sha_many_engine(engine);
                if (engine && strcmp(lanes, engine == 2 ? "AVX-512" : "AVX2") != 0) continue; /* not here */
                char *what = k < NL ? tu_strdup_printf("%s, %s, %zu bytes", onnxio__sha_engine(-1), lanes, lengths[k])
                                    : tu_strdup_printf("%s, %s, mixed lengths", onnxio__sha_engine(-1), lanes);
                for (size_t count = k < NL ? 1 : MIXED; count <= most; count++) {
                    memset(out, 0xA5, sizeof *out * MIXED);
                    onnxio__sha256_many(data, size, count, out);
                    sha256_many_compare(what, count, MIXED, out, want);
                }
                free(what);
            }
    }
    onnxio__sha_engine(1);
    free(want);
    free(out);
    free(bytes);
    tu_remove_tree(dir);
    free(dir);
    tu_end();
}

int main(int argc, char **argv)
{
    const char *repo = argc > 1 ? argv[1] : ".";
    for (int i = 0; i < DATA_SIZE; i++) data_bytes[i] = (uint8_t)(i * 7 + 3);
    test_load_refusals();
    test_corpus_external(tu_corpus_dir(repo));
    test_save_external();
    test_atomic_save();
    test_load_safety_more();
    test_save_modes();
    test_map_windows();
    test_sha_engines();
    test_sha256_many();
    return tu_finish();
}
