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
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define DATA_SIZE 64

static uint8_t data_bytes[DATA_SIZE];

/* ---- building models ------------------------------------------------------ */

static void set_string(onnxio_arena *a, void *msg, onnxio_string *s, unsigned index, const char *value)
{
    onnxio_string_set(a, s, value, strlen(value));
    onnxio_set_has(msg, index);
}

static onnxio_ModelProto *new_model(onnxio_arena *a)
{
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 8;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    set_string(a, m, &m->producer_name, ONNXIO_FIELD_ModelProto_producer_name, "test_external");
    onnxio_OperatorSetIdProto *op = onnxio_list_add(a, &m->opset_import, &onnxio_desc_OperatorSetIdProto);
    op->version = 17;
    onnxio_set_has(op, ONNXIO_FIELD_OperatorSetIdProto_version);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    set_string(a, m->graph, &m->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
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
    set_string(a, t, &t->name, ONNXIO_FIELD_TensorProto_name, name);
    return t;
}

static void add_entry(onnxio_arena *a, onnxio_TensorProto *t, const char *key, const char *value)
{
    onnxio_StringStringEntryProto *e = onnxio_list_add(a, &t->external_data, &onnxio_desc_StringStringEntryProto);
    set_string(a, e, &e->key, ONNXIO_FIELD_StringStringEntryProto_key, key);
    set_string(a, e, &e->value, ONNXIO_FIELD_StringStringEntryProto_value, value);
}

/* Writes <dir>/model.onnx: one initializer "w" whose data is external with
 * the given keys (NULL: key left out). */
static void write_external_model(const char *dir, const char *location, const char *offset, const char *length)
{
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = new_model(a);
    onnxio_TensorProto *t = add_tensor(a, m->graph, "w", 4);
    if (location) add_entry(a, t, "location", location);
    if (offset) add_entry(a, t, "offset", offset);
    if (length) add_entry(a, t, "length", length);
    t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    char *path = tu_path_join(dir, "model.onnx");
    CHECK_STATUS(onnxio_save_file(m, path, NULL), ONNXIO_OK);
    free(path);
    onnxio_arena_unref(a);
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
            CHECK_MSG(!onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location), "%s: data_location still set", what);
            CHECK_MSG(t->external_data.size == 0, "%s: external_data still set", what);
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
            CHECK(!onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location));
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
                    CHECK(!onnxio_has(l, ONNXIO_FIELD_TensorProto_data_location) && l->external_data.size == 0);
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
    onnxio_NodeProto *node = onnxio_list_add(a, &m->graph->node, &onnxio_desc_NodeProto);
    set_string(a, node, &node->op_type, ONNXIO_FIELD_NodeProto_op_type, "If");
    onnxio_AttributeProto *attr = onnxio_list_add(a, &node->attribute, &onnxio_desc_AttributeProto);
    set_string(a, attr, &attr->name, ONNXIO_FIELD_AttributeProto_name, "then_branch");
    attr->type = ONNXIO_AttributeProto_AttributeType_GRAPH;
    onnxio_set_has(attr, ONNXIO_FIELD_AttributeProto_type);
    attr->g = onnxio_message_new(a, &onnxio_desc_GraphProto);
    set_string(a, attr->g, &attr->g->name, ONNXIO_FIELD_GraphProto_name, "then");
    onnxio_TensorProto *t = add_tensor(a, attr->g, "sub", (int64_t)(sizes[n - 1] / 4));
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
        if (variant == 2) so.tensor_buffer.alignment = 64;
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
        if (loaded) CHECK_MSG(onnxio_message_equal(loaded, orig) == 1, "variant %d: loaded model != original", variant);

        /* re-saving inline gives back the original file's bytes */
        char *rpath = tu_path_join(sub, "resaved.onnx");
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
        struct rlimit saved;
        getrlimit(RLIMIT_FSIZE, &saved);
        void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = saved;
        lim.rlim_cur = 150000; /* data file: 3000 + 100000 bytes fits; nothing else is large */
        /* make the model itself large: many inline strings in doc_string */
        char *doc = malloc(200001);
        memset(doc, 'd', 200000);
        doc[200000] = '\0';
        set_string(b, model2, &model2->doc_string, ONNXIO_FIELD_ModelProto_doc_string, doc);
        free(doc);
        if (CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0)) {
            st = onnxio_save_model(model2, xpath, &so);
            setrlimit(RLIMIT_FSIZE, &saved);
            CHECK_MSG(st == ONNXIO_ERR_IO, "external save past RLIMIT_FSIZE gave %s (%s)", onnxio_status_name(st),
                      onnxio_last_error());
        }
        signal(SIGXFSZ, prev);
        check_file_is("failed external save: old model", xpath, old_model, old_n);
        check_file_is("failed external save: old data file", dpath, old_data, old_dn);
        {
            const char *const names[] = {"m.data", "m.onnx"};
            check_dir_is("failed external save", xdir, names, 2);
        }
        onnxio_arena *c = onnxio_arena_new();
        onnxio_ModelProto *back = NULL;
        CHECK_STATUS(onnxio_load_model(xpath, NULL, c, &back), ONNXIO_OK);
        if (back) CHECK_MSG(onnxio_message_equal(back, model) == 1, "the old model no longer loads as it was saved");
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

int main(int argc, char **argv)
{
    const char *repo = argc > 1 ? argv[1] : ".";
    for (int i = 0; i < DATA_SIZE; i++) data_bytes[i] = (uint8_t)(i * 7 + 3);
    test_load_refusals();
    test_corpus_external(tu_corpus_dir(repo));
    test_save_external();
    test_atomic_save();
    return tu_finish();
}
