/* .onnxz archives (zip, PKWARE APPNOTE): save -> load round trips in every
 * mode, the on-disk layout (aligned data offsets, checked both through
 * onnxio_archive_entry_at and by reading the local headers by hand),
 * borrowed and copied no_copy payloads, CRC-32 checks, hostile archives
 * (valid archives with patched bytes, and archives built from scratch here
 * with zlib), the in-place model replacement, and save option errors.
 *
 * Everything runs in fresh temporary directories; the test must also pass
 * under ASan/UBSan with leak detection. */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "io/container.h" /* onnxio__crc32 and its two libraries, onnxio__archive_read */
#include "testutil.h"

/* ---- payloads -------------------------------------------------------------- */

/* The tensors of the test model: name, bytes, and whether the default
 * threshold (1024) makes them an entry. "odd/name" becomes entry
 * "odd_name"; "ctensor" is the value of a Constant node's attribute. */
typedef struct payload {
    const char *name;
    const char *entry; /* NULL: stays inline */
    size_t size;
    uint8_t *data;
} payload;

#define BIG_SIZE ((size_t)9 * 1024 * 1024 + 5) /* > 8 MiB: two CRC pieces */

static payload payloads[] = {
    {"alpha", "alpha", BIG_SIZE, NULL},
    {"bravo", "bravo", 16384, NULL},
    {"small", NULL, 1000, NULL},
    {"odd/name", "odd_name", 2001, NULL},
    {"ctensor", "ctensor", 3000, NULL},
};
#define N_PAYLOADS (sizeof payloads / sizeof payloads[0])
#define N_ENTRIES 5 /* 4 tensor entries and __MODEL_PROTO */

static void fill_pattern(uint8_t *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t)(x >> 16);
    }
}

static void make_payloads(void)
{
    for (size_t i = 0; i < N_PAYLOADS; i++) {
        payloads[i].data = malloc(payloads[i].size);
        if (!payloads[i].data) abort();
        fill_pattern(payloads[i].data, payloads[i].size, (unsigned)i + 1);
    }
}

static void free_payloads(void)
{
    for (size_t i = 0; i < N_PAYLOADS; i++) free(payloads[i].data);
}

/* ---- building models ------------------------------------------------------- */

static onnxio_ModelProto *new_model(onnxio_arena *a, const char *producer)
{
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 8;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    tu_set_string(a, m, &m->producer_name, ONNXIO_FIELD_ModelProto_producer_name, producer);
    onnxio_OperatorSetIdProto *op = onnxio_list_add(a, &m->opset_import, &onnxio_desc_OperatorSetIdProto);
    op->version = 17;
    onnxio_set_has(op, ONNXIO_FIELD_OperatorSetIdProto_version);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    tu_set_string(a, m->graph, &m->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
    return m;
}

static void uint8_tensor(onnxio_arena *a, onnxio_TensorProto *t, const char *name, int64_t n)
{
    int64_t *d = onnxio_array_append(a, &t->dims, sizeof(int64_t));
    *d = n;
    t->data_type = ONNXIO_TensorProto_DataType_UINT8;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    tu_set_string(a, t, &t->name, ONNXIO_FIELD_TensorProto_name, name);
}

static void set_raw(onnxio_TensorProto *t, const uint8_t *data, size_t size)
{
    CHECK_STATUS(onnxio_span_copy_from(&t->raw_data, data, size), ONNXIO_OK);
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
}

/* The test model: every payload of `payloads` loaded inline. */
static onnxio_ModelProto *build_model(onnxio_arena *a, const char *producer)
{
    onnxio_ModelProto *m = new_model(a, producer);
    for (size_t i = 0; i < N_PAYLOADS; i++) {
        onnxio_TensorProto *t;
        if (strcmp(payloads[i].name, "ctensor") == 0) {
            onnxio_NodeProto *n = onnxio_list_add(a, &m->graph->node, &onnxio_desc_NodeProto);
            tu_set_string(a, n, &n->op_type, ONNXIO_FIELD_NodeProto_op_type, "Constant");
            onnxio_AttributeProto *at = onnxio_list_add(a, &n->attribute, &onnxio_desc_AttributeProto);
            tu_set_string(a, at, &at->name, ONNXIO_FIELD_AttributeProto_name, "value");
            at->type = ONNXIO_AttributeProto_AttributeType_TENSOR;
            onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_type);
            at->t = t = onnxio_message_new(a, &onnxio_desc_TensorProto);
            onnxio_set_has(at, ONNXIO_FIELD_AttributeProto_t);
        } else {
            t = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
        }
        uint8_tensor(a, t, payloads[i].name, (int64_t)payloads[i].size);
        set_raw(t, payloads[i].data, payloads[i].size);
    }
    return m;
}

/* A tensor of the test model by name (initializers and Constant values). */
static onnxio_TensorProto *find_tensor(onnxio_ModelProto *m, const char *name)
{
    if (!m || !m->graph) return NULL;
    for (size_t i = 0; i < m->graph->initializer.size; i++) {
        onnxio_TensorProto *t = m->graph->initializer.data[i];
        if (t->name.data && strcmp(t->name.data, name) == 0) return t;
    }
    for (size_t i = 0; i < m->graph->node.size; i++) {
        onnxio_NodeProto *n = m->graph->node.data[i];
        for (size_t k = 0; k < n->attribute.size; k++) {
            onnxio_TensorProto *t = n->attribute.data[k]->t;
            if (t && t->name.data && strcmp(t->name.data, name) == 0) return t;
        }
    }
    return NULL;
}

/* Checks that every tensor of `m` holds its original payload inline. */
static void check_payloads(onnxio_ModelProto *m, const char *what)
{
    for (size_t i = 0; i < N_PAYLOADS; i++) {
        onnxio_TensorProto *t = find_tensor(m, payloads[i].name);
        if (!CHECK_MSG(t != NULL, "%s: tensor '%s' missing", what, payloads[i].name)) continue;
        CHECK_MSG(onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data), "%s: '%s' has no raw_data", what, payloads[i].name);
        CHECK_MSG(t->external_data.size == 0 && (!onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location) ||
                                                 t->data_location == ONNXIO_TensorProto_DataLocation_DEFAULT),
                  "%s: '%s' still has external data", what, payloads[i].name);
        CHECK_MSG(t->raw_data.size == payloads[i].size && t->raw_data.data &&
                      memcmp(t->raw_data.data, payloads[i].data, payloads[i].size) == 0,
                  "%s: payload of '%s' differs (%zu bytes, want %zu)", what, payloads[i].name, t->raw_data.size,
                  payloads[i].size);
    }
}

/* ---- raw zip access (for checks and patches) ------------------------------- */

static uint16_t g16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t g32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* Where the records of a small classic archive are (no ZIP64, no comment). */
#define ZMAX 16
typedef struct zinfo {
    size_t eocd, cd_offset, cd_size, count;
    size_t central[ZMAX], local[ZMAX], data[ZMAX];
    char name[ZMAX][64];
} zinfo;

static bool zscan(const uint8_t *d, size_t n, zinfo *z)
{
    memset(z, 0, sizeof *z);
    if (n < 22 || g32(d + n - 22) != 0x06054b50u) return false;
    z->eocd = n - 22;
    z->count = g16(d + z->eocd + 10);
    z->cd_size = g32(d + z->eocd + 12);
    z->cd_offset = g32(d + z->eocd + 16);
    if (z->count > ZMAX) return false;
    size_t at = z->cd_offset;
    for (size_t i = 0; i < z->count; i++) {
        if (at + 46 > n || g32(d + at) != 0x02014b50u) return false;
        size_t nl = g16(d + at + 28);
        z->central[i] = at;
        z->local[i] = g32(d + at + 42);
        snprintf(z->name[i], sizeof z->name[i], "%.*s", (int)nl, (const char *)d + at + 46);
        const uint8_t *l = d + z->local[i];
        z->data[i] = z->local[i] + 30 + g16(l + 26) + g16(l + 28);
        at += 46 + nl + g16(d + at + 30) + g16(d + at + 32);
    }
    return true;
}

static int zfind(const zinfo *z, const char *name)
{
    for (size_t i = 0; i < z->count; i++)
        if (strcmp(z->name[i], name) == 0) return (int)i;
    return -1;
}

/* A __MODEL_PROTO whose UINT8 tensor "w" (dims [dim]) refers to
 * location/offset/length (NULL: key left out); its bytes in *out. */
static void external_model_bytes(const char *location, const char *offset, const char *length, int64_t dim,
                                 onnxio_buffer **out)
{
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = new_model(a, "scratch");
    onnxio_TensorProto *t = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
    uint8_tensor(a, t, "w", dim);
    const char *keys[3] = {"location", "offset", "length"}, *values[3] = {location, offset, length};
    for (int k = 0; k < 3; k++) {
        if (!values[k]) continue;
        onnxio_StringStringEntryProto *e = onnxio_list_add(a, &t->external_data, &onnxio_desc_StringStringEntryProto);
        tu_set_string(a, e, &e->key, ONNXIO_FIELD_StringStringEntryProto_key, keys[k]);
        tu_set_string(a, e, &e->value, ONNXIO_FIELD_StringStringEntryProto_value, values[k]);
    }
    t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    CHECK_STATUS(onnxio_serialize(m, out), ONNXIO_OK);
    onnxio_arena_unref(a);
}

/* ---- loading ---------------------------------------------------------------- */

/* Whether the kernel says that fewer than half of the file's pages are
 * cached (the library's rule for a cold file; false when it cannot tell). */
static bool file_cold(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    bool cold = fd >= 0 && fstat(fd, &st) == 0 && onnxio__file_cold(fd, 0, (uint64_t)st.st_size);
    if (fd >= 0) close(fd);
    return cold;
}

/* Bytes of the file in the page cache (cachestat), or UINT64_MAX when the
 * kernel cannot tell. */
static uint64_t file_cached(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    uint64_t cached = UINT64_MAX;
    if (fd >= 0 && fstat(fd, &st) == 0 && onnxio__sys_cached(fd, 0, (uint64_t)st.st_size, &cached) != 0) cached = UINT64_MAX;
    if (fd >= 0) close(fd);
    return cached;
}

/* Whether the file can be read with O_DIRECT here (not on tmpfs). */
static bool file_direct(const char *path)
{
    int fd = open(path, O_RDONLY);
    uint32_t ma, oa;
    int dfd = fd >= 0 ? onnxio__sys_open_direct(fd, &ma, &oa) : -1;
    if (dfd >= 0) close(dfd);
    if (fd >= 0) close(fd);
    return dfd >= 0;
}


static onnxio_parse_options popts(bool no_copy, int threads, onnxio_toggle verify)
{
    onnxio_parse_options o;
    memset(&o, 0, sizeof o);
    o.no_copy = no_copy;
    o.num_threads = threads;
    o.verify_crc = verify;
    return o;
}

/* Loads bytes (copy and no_copy) and a file (when `path` is not NULL)
 * expecting `want`; on failure checks for a message and, when `needle`,
 * that it says so. */
static void expect_bytes(const char *what, const uint8_t *d, size_t n, onnxio_status want, const char *needle)
{
    for (int mode = 0; mode < 2; mode++) {
        onnxio_parse_options o = popts(mode == 1, 2, ONNXIO_DEFAULT);
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = (onnxio_ModelProto *)(uintptr_t)1;
        onnxio_status st = onnxio_load_model_from_bytes(d, n, NULL, &o, a, &m);
        const char *err = onnxio_last_error();
        CHECK_MSG(st == want, "%s (%s): gave %s, want %s (\"%s\")", what, mode ? "no_copy" : "copy",
                  onnxio_status_name(st), onnxio_status_name(want), err);
        if (st != ONNXIO_OK) {
            CHECK_MSG(err[0] != '\0', "%s: empty error message", what);
            CHECK_MSG(m == NULL, "%s: *out set on failure", what);
            if (needle && st == want)
                CHECK_MSG(strstr(err, needle) != NULL, "%s: message \"%s\" does not say \"%s\"", what, err, needle);
        }
        onnxio_arena_unref(a);
    }
}

/* The same through onnxio_archive_open_bytes (structure only). */
static void expect_open(const char *what, const uint8_t *d, size_t n, onnxio_status want)
{
    onnxio_archive *ar = (onnxio_archive *)(uintptr_t)1;
    onnxio_status st = onnxio_archive_open_bytes(d, n, NULL, &ar);
    CHECK_MSG(st == want, "%s: archive_open_bytes gave %s, want %s (\"%s\")", what, onnxio_status_name(st),
              onnxio_status_name(want), onnxio_last_error());
    if (st != ONNXIO_OK) {
        CHECK_MSG(onnxio_last_error()[0] != '\0', "%s: empty error message (open)", what);
        CHECK_MSG(ar == NULL, "%s: archive set on failure", what);
    } else {
        onnxio_archive_close(ar);
    }
}

static void expect_file(const char *what, const char *dir, const uint8_t *d, size_t n, onnxio_status want)
{
    char *path = tu_path_join(dir, "hostile.onnxz");
    if (!CHECK(tu_write_file(path, d, n))) {
        free(path);
        return;
    }
    /* mode 2: a copy load of the file evicted from the page cache, which
     * reads it whole before it validates it (onnxio__archive_read). */
    for (int mode = 0; mode < 3; mode++) {
        onnxio_parse_options o = popts(mode == 1, 1, ONNXIO_DEFAULT);
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        if (mode == 2) tu_evict(path);
        onnxio_status st = onnxio_load_model(path, &o, a, &m);
        CHECK_MSG(st == want, "%s (file, %s): gave %s, want %s (\"%s\")", what, mode == 1 ? "no_copy" : mode ? "copy, cold" : "copy",
                  onnxio_status_name(st), onnxio_status_name(want), onnxio_last_error());
        if (st != ONNXIO_OK) CHECK_MSG(onnxio_last_error()[0] != '\0', "%s: empty error message (file)", what);
        onnxio_arena_unref(a);
    }
    onnxio_archive *ar = NULL;
    onnxio_status st = onnxio_archive_open(path, &ar);
    onnxio_status want_open = (want == ONNXIO_ERR_ARCHIVE) ? want : ONNXIO_OK;
    CHECK_MSG(st == want_open, "%s: archive_open gave %s, want %s (\"%s\")", what, onnxio_status_name(st),
              onnxio_status_name(want_open), onnxio_last_error());
    onnxio_archive_close(ar);
    unlink(path);
    free(path);
}

static void save_ok(onnxio_ModelProto *m, const char *path, int threads, uint64_t alignment)
{
    onnxio_serialize_options so;
    memset(&so, 0, sizeof so);
    so.num_threads = threads;
    so.alignment = alignment;
    CHECK_STATUS(onnxio_save_model(m, path, &so), ONNXIO_OK);
}

/* ---- round trips -------------------------------------------------------------- */

static void test_roundtrip(const char *dir)
{
    tu_begin("archive: save -> load round trips");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = build_model(a, "test_archive");
    char *path[4];
    const int threads[4] = {1, 2, 4, 0};
    for (int i = 0; i < 4; i++) {
        path[i] = tu_strdup_printf("%s/rt%d.onnxz", dir, threads[i]);
        save_ok(m, path[i], threads[i], 0);
    }
    /* the caller's model is not modified */
    check_payloads(m, "model after save");

    size_t n0 = 0;
    uint8_t *b0 = tu_read_file(path[0], &n0);
    CHECK(b0 && n0 > BIG_SIZE);
    CHECK(b0 && b0[0] == 'P' && b0[1] == 'K' && b0[2] == 3 && b0[3] == 4);
    for (int i = 1; i < 4; i++) {
        size_t n = 0;
        uint8_t *b = tu_read_file(path[i], &n);
        CHECK_MSG(b && n == n0 && memcmp(b, b0, n) == 0, "archive written with num_threads %d differs from num_threads 1",
                  threads[i]);
        free(b);
    }

    /* entries: the large payloads and the model, last */
    onnxio_archive *ar = NULL;
    if (CHECK_STATUS(onnxio_archive_open(path[0], &ar), ONNXIO_OK)) {
        CHECK_EQ_INT(onnxio_archive_entry_count(ar), N_ENTRIES);
        const onnxio_archive_entry *last = onnxio_archive_entry_at(ar, N_ENTRIES - 1);
        CHECK(last && strcmp(last->name, "__MODEL_PROTO") == 0);
        CHECK(onnxio_archive_entry_at(ar, N_ENTRIES) == NULL);
        for (size_t i = 0; i < N_PAYLOADS; i++) {
            if (!payloads[i].entry) {
                CHECK_MSG(onnxio_archive_find(ar, payloads[i].name) == NULL, "inline '%s' has an entry", payloads[i].name);
                continue;
            }
            const onnxio_archive_entry *e = onnxio_archive_find(ar, payloads[i].entry);
            if (!CHECK_MSG(e != NULL, "no entry '%s'", payloads[i].entry)) continue;
            CHECK_EQ_U64(e->size, payloads[i].size);
            CHECK_EQ_U64(e->compressed_size, payloads[i].size);
            CHECK_EQ_INT(e->method, 0);
            CHECK_EQ_U64(e->crc32, crc32(0, payloads[i].data, (uInt)payloads[i].size));
            CHECK_EQ_U64(e->name_size, strlen(payloads[i].entry));
            CHECK(e->data_offset + e->size <= n0 && memcmp(b0 + e->data_offset, payloads[i].data, e->size) == 0);
        }
        CHECK(onnxio_archive_find(ar, "odd/name") == NULL);
        onnxio_archive_close(ar);
    }

    /* structure: load_external_data OFF leaves the tensors pointing at entries */
    {
        onnxio_parse_options o = popts(false, 1, ONNXIO_DEFAULT);
        o.load_external_data = ONNXIO_OFF;
        onnxio_arena *la = onnxio_arena_new();
        onnxio_ModelProto *lm = NULL;
        if (CHECK_STATUS(onnxio_load_model(path[0], &o, la, &lm), ONNXIO_OK)) {
            onnxio_TensorProto *t = find_tensor(lm, "odd/name");
            CHECK(t && onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location) &&
                  t->data_location == ONNXIO_TensorProto_DataLocation_EXTERNAL && !onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data));
            int saw_location = 0;
            for (size_t k = 0; t && k < t->external_data.size; k++) {
                onnxio_StringStringEntryProto *e = t->external_data.data[k];
                if (strcmp(e->key.data, "location") == 0) saw_location = strcmp(e->value.data, "odd_name") == 0;
            }
            CHECK(saw_location);
            onnxio_TensorProto *s = find_tensor(lm, "small");
            CHECK(s && s->raw_data.size == 1000 && memcmp(s->raw_data.data, payloads[2].data, 1000) == 0);
        }
        onnxio_arena_unref(la);
    }

    /* every load mode gives the same model */
    for (int src = 0; src < 3; src++) {     /* file, bytes, bytes with an owner */
        for (int nc = 0; nc < 2; nc++) {
            for (int ti = 0; ti < 3; ti++) {
                onnxio_parse_options o = popts(nc, threads[ti], ONNXIO_DEFAULT);
                onnxio_arena *la = onnxio_arena_new();
                onnxio_ModelProto *lm = NULL;
                onnxio_buffer *owner = NULL;
                uint8_t *copy = NULL;
                onnxio_status st;
                if (src == 0) {
                    st = onnxio_load_model(path[0], &o, la, &lm);
                } else if (src == 1) {
                    copy = malloc(n0);
                    memcpy(copy, b0, n0);
                    st = onnxio_load_model_from_bytes(copy, n0, NULL, &o, la, &lm);
                } else {
                    owner = onnxio_buffer_new(n0, 4096);
                    memcpy(onnxio_buffer_data(owner), b0, n0);
                    st = onnxio_load_model_from_bytes(onnxio_buffer_data(owner), n0, owner, &o, la, &lm);
                }
                char *what = tu_strdup_printf("load from %s, %s, num_threads %d", src == 0 ? "file" : src == 1 ? "bytes" : "owned bytes",
                                              nc ? "no_copy" : "copy", threads[ti]);
                if (CHECK_MSG(st == ONNXIO_OK, "%s: %s (%s)", what, onnxio_status_name(st), onnxio_last_error())) {
                    check_payloads(lm, what);
                    CHECK_MSG(tu_equal_as_loaded(lm, m), "%s: loaded model differs from the saved one", what);
                    CHECK(lm->producer_name.data && strcmp(lm->producer_name.data, "test_archive") == 0);
                    if (!nc) {
                        /* copy mode: every large payload is an owned, aligned buffer */
                        for (size_t i = 0; i < N_PAYLOADS; i++) {
                            onnxio_TensorProto *t = find_tensor(lm, payloads[i].name);
                            CHECK_MSG(t && t->raw_data.owner && onnxio_buffer_is_allocated(t->raw_data.owner),
                                      "%s: '%s' not in an owned buffer", what, payloads[i].name);
                            if (payloads[i].entry)
                                CHECK_MSG(t && (uintptr_t)t->raw_data.data % 64 == 0, "%s: '%s' not 64-aligned", what,
                                          payloads[i].name);
                        }
                    } else if (src == 2) {
                        /* an owner aligned to 4096: every 64-aligned entry is borrowed from it */
                        for (size_t i = 0; i < N_PAYLOADS; i++) {
                            if (!payloads[i].entry) continue;
                            onnxio_TensorProto *t = find_tensor(lm, payloads[i].name);
                            CHECK_MSG(t && t->raw_data.owner == owner, "%s: '%s' does not hold the owner", what,
                                      payloads[i].name);
                        }
                    }
                }
                free(what);
                onnxio_arena_unref(la);
                if (owner) CHECK_EQ_INT(onnxio_buffer_refcount(owner), 1);
                onnxio_buffer_unref(owner);
                free(copy);
            }
        }
    }
    free(b0);
    for (int i = 0; i < 4; i++) {
        unlink(path[i]);
        free(path[i]);
    }
    onnxio_arena_unref(a);
}

/* ---- layout ------------------------------------------------------------------ */

/* Reads every local header of the archive by hand and checks it against
 * the entry: signature, name, sizes, CRC, data offset (from the header's
 * lengths), extra fields well-formed (only ZIP64 and the 0x786F padding). */
static void check_local_headers(const uint8_t *d, size_t n, const onnxio_archive *ar, uint64_t align, const char *what)
{
    uint64_t prev_end = 0;
    for (size_t i = 0; i < onnxio_archive_entry_count(ar); i++) {
        const onnxio_archive_entry *e = onnxio_archive_entry_at(ar, i);
        bool model = strcmp(e->name, "__MODEL_PROTO") == 0;
        if (!CHECK_MSG(e->header_offset + 30 <= n, "%s: '%s' local header past the file", what, e->name)) continue;
        const uint8_t *h = d + e->header_offset;
        CHECK_MSG(g32(h) == 0x04034b50u, "%s: '%s' no local header signature", what, e->name);
        size_t nl = g16(h + 26), xl = g16(h + 28);
        CHECK_MSG(e->header_offset + 30 + nl + xl == e->data_offset, "%s: '%s' local header lengths give data at %llu, entry says %llu",
                  what, e->name, (unsigned long long)(e->header_offset + 30 + nl + xl), (unsigned long long)e->data_offset);
        CHECK_MSG(nl == e->name_size && memcmp(h + 30, e->name, nl) == 0, "%s: '%s' local name differs", what, e->name);
        CHECK_MSG(g16(h + 8) == 0 && g16(h + 6) == 0, "%s: '%s' not stored without flags", what, e->name);
        CHECK_MSG(g32(h + 14) == e->crc32 && g32(h + 18) == e->size && g32(h + 22) == e->size,
                  "%s: '%s' local sizes/CRC differ", what, e->name);
        CHECK_MSG(e->data_offset >= prev_end, "%s: '%s' starts before the previous entry ends", what, e->name);
        prev_end = e->data_offset + e->size;
        /* extra fields: each one's header and length fit */
        for (size_t at = 0; at < xl;) {
            if (!CHECK_MSG(xl - at >= 4, "%s: '%s' extra field cut short", what, e->name)) break;
            uint16_t id = g16(h + 30 + nl + at), len = g16(h + 30 + nl + at + 2);
            CHECK_MSG(id == 0x786F || id == 0x0001, "%s: '%s' unexpected extra field 0x%04x", what, e->name, id);
            if (!CHECK_MSG(len <= xl - at - 4, "%s: '%s' extra field runs past the header", what, e->name)) break;
            at += 4 + (size_t)len;
        }
        if (!model)
            CHECK_MSG(e->data_offset % align == 0, "%s: entry '%s' data at %llu, not a multiple of %llu", what, e->name,
                      (unsigned long long)e->data_offset, (unsigned long long)align);
        /* the data is the payload, and its CRC-32 the recorded one */
        if (e->data_offset + e->size <= n)
            CHECK_MSG(crc32(0, d + e->data_offset, (uInt)e->size) == e->crc32, "%s: '%s' CRC-32 differs", what, e->name);
    }
}

static void test_alignment(const char *dir)
{
    tu_begin("archive: aligned data offsets");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = build_model(a, "align");
    const uint64_t aligns[] = {0, 64, 4096, 1, 65536, 1u << 20};
    for (size_t k = 0; k < sizeof aligns / sizeof aligns[0]; k++) {
        uint64_t align = aligns[k] ? aligns[k] : 64;
        char *path = tu_strdup_printf("%s/align%llu.onnxz", dir, (unsigned long long)aligns[k]);
        char *what = tu_strdup_printf("alignment %llu", (unsigned long long)aligns[k]);
        save_ok(m, path, 2, aligns[k]);
        size_t n = 0;
        uint8_t *d = tu_read_file(path, &n);
        onnxio_archive *ar = NULL;
        if (CHECK(d) && CHECK_STATUS(onnxio_archive_open(path, &ar), ONNXIO_OK)) {
            CHECK_EQ_INT(onnxio_archive_entry_count(ar), N_ENTRIES);
            check_local_headers(d, n, ar, align, what);
            if (align == 1) {
                /* entries really land on odd offsets (what the unaligned no_copy test relies on) */
                int odd = 0;
                for (size_t i = 0; i + 1 < onnxio_archive_entry_count(ar); i++)
                    odd += onnxio_archive_entry_at(ar, i)->data_offset % 2 == 1;
                CHECK_MSG(odd > 0, "%s: no entry on an odd offset", what);
                /* and no padding at all */
                for (size_t i = 0; i < onnxio_archive_entry_count(ar); i++) {
                    const onnxio_archive_entry *e = onnxio_archive_entry_at(ar, i);
                    CHECK_EQ_U64(e->data_offset - e->header_offset, 30 + e->name_size);
                }
            }
            if (align >= 65536) {
                /* too much padding for an extra field: a gap before the local header */
                int gaps = 0;
                for (size_t i = 0; i < onnxio_archive_entry_count(ar); i++) {
                    const onnxio_archive_entry *e = onnxio_archive_entry_at(ar, i);
                    CHECK_MSG(e->data_offset - e->header_offset <= 30 + e->name_size + 65535,
                              "%s: '%s' local header longer than possible", what, e->name);
                    gaps += e->header_offset > 0 && e->data_offset - e->header_offset < align - 64;
                }
                CHECK_MSG(gaps > 0, "%s: no entry with a gap before its local header", what);
            }
            onnxio_archive_close(ar);
        }
        /* the archive loads, in both modes; with an alignment larger than an
         * extra field can pad, the writer leaves a gap of zeros before the
         * first local header, and the load must still take the file for an
         * archive (a zero first byte is never a ModelProto). */
        if (d && n >= 4 && !(d[0] == 'P' && d[1] == 'K'))
            CHECK_MSG(d[0] == 0 && align > 65536, "%s: the file starts with neither PK nor a gap", what);
        for (int nc = 0; nc < 2; nc++) {
            onnxio_parse_options o = popts(nc, 2, ONNXIO_DEFAULT);
            onnxio_arena *la = onnxio_arena_new();
            onnxio_ModelProto *lm = NULL;
            if (CHECK_STATUS(onnxio_load_model(path, &o, la, &lm), ONNXIO_OK)) check_payloads(lm, what);
            onnxio_arena_unref(la);
        }
        /* the same through archive_open_bytes */
        if (d) {
            onnxio_archive *br = NULL;
            if (CHECK_STATUS(onnxio_archive_open_bytes(d, n, NULL, &br), ONNXIO_OK)) {
                CHECK_EQ_INT(onnxio_archive_entry_count(br), N_ENTRIES);
                check_local_headers(d, n, br, align, what);
                onnxio_archive_close(br);
            }
        }
        tu_note("%s: %zu bytes", what, n);
        free(d);
        unlink(path);
        free(path);
        free(what);
    }
    onnxio_serialize_options so;
    memset(&so, 0, sizeof so);
    so.alignment = 48;
    char *path = tu_path_join(dir, "bad_align.onnxz");
    CHECK_STATUS(onnxio_save_model(m, path, &so), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK(!tu_exists(path));
    free(path);
    onnxio_arena_unref(a);
}

/* ---- no_copy --------------------------------------------------------------------- */

static void test_no_copy(const char *dir)
{
    tu_begin("archive: no_copy spans");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = build_model(a, "nocopy");
    char *path = tu_path_join(dir, "nc.onnxz");
    char *path1 = tu_path_join(dir, "nc1.onnxz");
    save_ok(m, path, 1, 0);
    save_ok(m, path1, 1, 1);

    /* aligned entries point into the mapping and hold it */
    {
        onnxio_archive *ar = NULL;
        CHECK_STATUS(onnxio_archive_open(path, &ar), ONNXIO_OK);
        onnxio_parse_options o = popts(true, 2, ONNXIO_DEFAULT);
        onnxio_arena *la = onnxio_arena_new();
        onnxio_ModelProto *lm = NULL;
        onnxio_buffer *map = NULL;
        if (ar && CHECK_STATUS(onnxio_load_model(path, &o, la, &lm), ONNXIO_OK)) {
            check_payloads(lm, "no_copy");
            size_t holders = 0;
            for (size_t i = 0; i < N_PAYLOADS; i++) {
                if (!payloads[i].entry) continue;
                onnxio_TensorProto *t = find_tensor(lm, payloads[i].name);
                const onnxio_archive_entry *e = onnxio_archive_find(ar, payloads[i].entry);
                if (!CHECK(t && e && t->raw_data.owner)) continue;
                if (!map) map = t->raw_data.owner;
                CHECK_MSG(t->raw_data.owner == map, "'%s' holds another owner", payloads[i].name);
                CHECK_MSG(!onnxio_buffer_is_allocated(t->raw_data.owner), "'%s' was copied", payloads[i].name);
                CHECK_MSG(t->raw_data.data == onnxio_buffer_data(map) + e->data_offset,
                          "'%s' does not point at its entry's data in the mapping", payloads[i].name);
                CHECK_MSG((uintptr_t)t->raw_data.data % 64 == 0, "'%s' not aligned", payloads[i].name);
                holders++;
            }
            if (map) {
                struct stat st;
                CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == onnxio_buffer_size(map));
                CHECK_MSG(onnxio_buffer_refcount(map) >= holders, "mapping refcount %zu < %zu spans",
                          onnxio_buffer_refcount(map), holders);
                onnxio_buffer_ref(map);
            }
            /* the small one is inline in the (stored) model entry: borrowed from the mapping too */
            onnxio_TensorProto *s = find_tensor(lm, "small");
            CHECK(s && map && s->raw_data.owner == map);
        }
        onnxio_arena_unref(la);
        if (map) {
            CHECK_EQ_INT(onnxio_buffer_refcount(map), 1); /* only ours is left */
            onnxio_buffer_unref(map);
        }
        onnxio_archive_close(ar);
    }

    /* unaligned stored entries are copied under no_copy */
    {
        onnxio_archive *ar = NULL;
        CHECK_STATUS(onnxio_archive_open(path1, &ar), ONNXIO_OK);
        onnxio_parse_options o = popts(true, 2, ONNXIO_DEFAULT);
        onnxio_arena *la = onnxio_arena_new();
        onnxio_ModelProto *lm = NULL;
        int copied = 0, borrowed = 0;
        if (ar && CHECK_STATUS(onnxio_load_model(path1, &o, la, &lm), ONNXIO_OK)) {
            check_payloads(lm, "no_copy, alignment-1 archive");
            for (size_t i = 0; i < N_PAYLOADS; i++) {
                if (!payloads[i].entry) continue;
                onnxio_TensorProto *t = find_tensor(lm, payloads[i].name);
                const onnxio_archive_entry *e = onnxio_archive_find(ar, payloads[i].entry);
                if (!CHECK(t && e && t->raw_data.owner)) continue;
                if (e->data_offset % 64) {
                    CHECK_MSG(onnxio_buffer_is_allocated(t->raw_data.owner), "unaligned '%s' (offset %llu) was borrowed",
                              payloads[i].name, (unsigned long long)e->data_offset);
                    CHECK_MSG((uintptr_t)t->raw_data.data % 64 == 0, "copy of '%s' not aligned", payloads[i].name);
                    copied++;
                } else {
                    CHECK(!onnxio_buffer_is_allocated(t->raw_data.owner));
                    borrowed++;
                }
            }
        }
        CHECK_MSG(copied > 0, "no unaligned entry in the alignment-1 archive");
        tu_note("alignment-1 archive under no_copy: %d copied, %d borrowed", copied, borrowed);
        onnxio_arena_unref(la);

        /* with alignment 1 asked on load, everything is borrowed */
        o.alignment = 1;
        la = onnxio_arena_new();
        lm = NULL;
        if (CHECK_STATUS(onnxio_load_model(path1, &o, la, &lm), ONNXIO_OK)) {
            check_payloads(lm, "no_copy alignment 1");
            for (size_t i = 0; i < N_PAYLOADS; i++) {
                if (!payloads[i].entry) continue;
                onnxio_TensorProto *t = find_tensor(lm, payloads[i].name);
                CHECK_MSG(t && t->raw_data.owner && !onnxio_buffer_is_allocated(t->raw_data.owner),
                          "'%s' copied although alignment 1 was asked", payloads[i].name);
            }
        }
        onnxio_arena_unref(la);

        /* from bytes: an unaligned entry is copied, the owner released */
        size_t n = 0;
        uint8_t *d = tu_read_file(path1, &n);
        onnxio_buffer *owner = onnxio_buffer_new(n, 4096);
        memcpy(onnxio_buffer_data(owner), d, n);
        o.alignment = 0;
        la = onnxio_arena_new();
        lm = NULL;
        if (CHECK_STATUS(onnxio_load_model_from_bytes(onnxio_buffer_data(owner), n, owner, &o, la, &lm), ONNXIO_OK)) {
            check_payloads(lm, "no_copy from bytes, alignment-1 archive");
            for (size_t i = 0; i < N_PAYLOADS; i++) {
                if (!payloads[i].entry) continue;
                onnxio_TensorProto *t = find_tensor(lm, payloads[i].name);
                const onnxio_archive_entry *e = onnxio_archive_find(ar, payloads[i].entry);
                if (!CHECK(t && e)) continue;
                CHECK_MSG((t->raw_data.owner == owner) == (e->data_offset % 64 == 0), "'%s' at %llu: owner %s", payloads[i].name,
                          (unsigned long long)e->data_offset, t->raw_data.owner == owner ? "borrowed" : "copied");
            }
        }
        onnxio_arena_unref(la);
        CHECK_EQ_INT(onnxio_buffer_refcount(owner), 1);
        onnxio_buffer_unref(owner);
        free(d);
        onnxio_archive_close(ar);
    }
    unlink(path);
    unlink(path1);
    free(path);
    free(path1);
    onnxio_arena_unref(a);
}

/* ---- CRC ------------------------------------------------------------------------- */

static void crc_case(const char *what, const char *path, bool no_copy, int threads, onnxio_toggle verify, onnxio_status want,
                     const char *needle)
{
    onnxio_parse_options o = popts(no_copy, threads, verify);
    onnxio_arena *la = NULL;
    onnxio_ModelProto *lm = NULL;
    onnxio_status st;
    /* The file in the page cache, then evicted (a copy load then reads it
     * whole: onnxio__archive_read, the CRC-32s from its reads). */
    for (int cold = 0; cold < 2; cold++) {
        if (cold) tu_evict(path);
        la = onnxio_arena_new();
        lm = NULL;
        st = onnxio_load_model(path, &o, la, &lm);
        CHECK_MSG(st == want, "%s (%s%s, %d threads, verify %d): gave %s, want %s (\"%s\")", what,
                  no_copy ? "no_copy" : "copy", cold ? ", cold" : "", threads, (int)verify, onnxio_status_name(st),
                  onnxio_status_name(want), onnxio_last_error());
        if (st != ONNXIO_OK && needle)
            CHECK_MSG(strstr(onnxio_last_error(), needle) != NULL, "%s: message \"%s\" does not name '%s'", what,
                      onnxio_last_error(), needle);
        if (st != ONNXIO_OK) CHECK(lm == NULL);
        onnxio_arena_unref(la);
    }
    /* from bytes too */
    size_t n = 0;
    uint8_t *d = tu_read_file(path, &n);
    la = onnxio_arena_new();
    lm = NULL;
    st = onnxio_load_model_from_bytes(d, n, NULL, &o, la, &lm);
    CHECK_MSG(st == want, "%s (bytes, %s, %d threads, verify %d): gave %s, want %s (\"%s\")", what,
              no_copy ? "no_copy" : "copy", threads, (int)verify, onnxio_status_name(st), onnxio_status_name(want),
              onnxio_last_error());
    onnxio_arena_unref(la);
    free(d);
}

static void test_crc(const char *dir)
{
    tu_begin("archive: CRC-32");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = build_model(a, "crc");
    char *good = tu_path_join(dir, "good.onnxz");
    char *bad = tu_path_join(dir, "bad.onnxz");
    save_ok(m, good, 2, 0);
    size_t n = 0;
    uint8_t *d = tu_read_file(good, &n);
    onnxio_archive *ar = NULL;
    if (!CHECK(d) || !CHECK_STATUS(onnxio_archive_open(good, &ar), ONNXIO_OK)) goto out;
    /* a byte in each of: the big entry (first and second CRC piece), a small entry */
    struct {
        const char *entry;
        uint64_t at;
    } cases[] = {{"alpha", 5}, {"alpha", BIG_SIZE - 3}, {"ctensor", 0}, {"odd_name", 2000}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const onnxio_archive_entry *e = onnxio_archive_find(ar, cases[k].entry);
        if (!CHECK(e)) continue;
        uint8_t *c = malloc(n);
        memcpy(c, d, n);
        c[e->data_offset + cases[k].at] ^= 0x20;
        CHECK(tu_write_file(bad, c, n));
        char *what = tu_strdup_printf("byte %llu of '%s' flipped", (unsigned long long)cases[k].at, cases[k].entry);
        for (int t = 1; t <= 4; t *= 2) {
            crc_case(what, bad, false, t, ONNXIO_DEFAULT, ONNXIO_ERR_CHECKSUM, cases[k].entry);
            crc_case(what, bad, false, t, ONNXIO_ON, ONNXIO_ERR_CHECKSUM, cases[k].entry);
            crc_case(what, bad, true, t, ONNXIO_ON, ONNXIO_ERR_CHECKSUM, cases[k].entry);
        }
        crc_case(what, bad, true, 2, ONNXIO_DEFAULT, ONNXIO_OK, NULL);
        crc_case(what, bad, false, 2, ONNXIO_OFF, ONNXIO_OK, NULL);
        /* what loads without a check is the corrupted byte */
        onnxio_parse_options o = popts(false, 2, ONNXIO_OFF);
        onnxio_arena *la = onnxio_arena_new();
        onnxio_ModelProto *lm = NULL;
        if (CHECK_STATUS(onnxio_load_model(bad, &o, la, &lm), ONNXIO_OK)) {
            const char *tname = strcmp(cases[k].entry, "odd_name") == 0 ? "odd/name" : cases[k].entry;
            onnxio_TensorProto *t = find_tensor(lm, tname);
            CHECK(t && t->raw_data.size > cases[k].at && memcmp(t->raw_data.data, c + e->data_offset, t->raw_data.size) == 0);
        }
        onnxio_arena_unref(la);
        /* a skipped payload is not checked */
        o = popts(false, 2, ONNXIO_ON);
        o.skip_raw_data = true;
        la = onnxio_arena_new();
        lm = NULL;
        CHECK_STATUS(onnxio_load_model(bad, &o, la, &lm), ONNXIO_OK);
        onnxio_arena_unref(la);
        free(what);
        free(c);
    }
    /* the model entry itself */
    {
        const onnxio_archive_entry *e = onnxio_archive_find(ar, "__MODEL_PROTO");
        uint8_t *c = malloc(n);
        memcpy(c, d, n);
        /* the producer name: still a valid protobuf, so only the CRC can tell */
        uint8_t *p = memmem(c + e->data_offset, e->size, "crc", 3);
        if (CHECK(p)) {
            p[0] = 'C';
            CHECK(tu_write_file(bad, c, n));
            crc_case("model entry byte flipped", bad, false, 1, ONNXIO_DEFAULT, ONNXIO_ERR_CHECKSUM, "__MODEL_PROTO");
            crc_case("model entry byte flipped", bad, true, 1, ONNXIO_ON, ONNXIO_ERR_CHECKSUM, "__MODEL_PROTO");
            crc_case("model entry byte flipped", bad, true, 1, ONNXIO_DEFAULT, ONNXIO_OK, NULL);
        }
        free(c);
    }
    /* the unmodified file passes every check */
    crc_case("intact", good, false, 4, ONNXIO_ON, ONNXIO_OK, NULL);
    crc_case("intact", good, true, 4, ONNXIO_ON, ONNXIO_OK, NULL);
out:
    onnxio_archive_close(ar);
    free(d);
    unlink(good);
    unlink(bad);
    free(good);
    free(bad);
    onnxio_arena_unref(a);
}

/* ---- hostile archives --------------------------------------------------------------- */

/* A small valid archive: entries alpha (2048 bytes), bravo (4096),
 * __MODEL_PROTO, in that order. */
static uint8_t *small_archive(const char *dir, size_t *n)
{
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = new_model(a, "hostile");
    static uint8_t ad[2048], bd[4096];
    fill_pattern(ad, sizeof ad, 11);
    fill_pattern(bd, sizeof bd, 12);
    onnxio_TensorProto *t = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
    uint8_tensor(a, t, "alpha", sizeof ad);
    set_raw(t, ad, sizeof ad);
    t = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
    uint8_tensor(a, t, "bravo", sizeof bd);
    set_raw(t, bd, sizeof bd);
    char *path = tu_path_join(dir, "small.onnxz");
    save_ok(m, path, 1, 0);
    uint8_t *d = tu_read_file(path, n);
    unlink(path);
    free(path);
    onnxio_arena_unref(a);
    return d;
}

typedef struct hostile {
    tu_bytes b;
    zinfo z;
} hostile;

static uint8_t *dup_bytes(const uint8_t *d, size_t n)
{
    uint8_t *c = malloc(n ? n : 1);
    if (!c) abort();
    memcpy(c, d, n);
    return c;
}

/* Renames entry i in its local and/or central header (same length). */
static void rename_entry(uint8_t *c, const zinfo *z, int i, const char *to, int local, int central)
{
    if (local) memcpy(c + z->local[i] + 30, to, strlen(to));
    if (central) memcpy(c + z->central[i] + 46, to, strlen(to));
}

/* Inserts ZIP64 end records before the classic one of a small classic
 * archive; classic fields as given (0xFFFF... or the real values). */
static uint8_t *with_zip64(const uint8_t *d, size_t n, const zinfo *z, int classic_ff, size_t *out_n)
{
    size_t rec = z->eocd;
    uint8_t *c = malloc(n + 76);
    memcpy(c, d, rec);
    uint8_t *r = c + rec;
    tu_put32(r, 0x06064b50u);
    tu_put64(r + 4, 44);
    tu_put16(r + 12, (3u << 8) | 45u);
    tu_put16(r + 14, 45);
    tu_put32(r + 16, 0);
    tu_put32(r + 20, 0);
    tu_put64(r + 24, z->count);
    tu_put64(r + 32, z->count);
    tu_put64(r + 40, z->cd_size);
    tu_put64(r + 48, z->cd_offset);
    uint8_t *l = r + 56;
    tu_put32(l, 0x07064b50u);
    tu_put32(l + 4, 0);
    tu_put64(l + 8, rec);
    tu_put32(l + 16, 1);
    memcpy(l + 20, d + z->eocd, 22);
    uint8_t *e = l + 20;
    if (classic_ff) {
        tu_put16(e + 8, 0xFFFF);
        tu_put16(e + 10, 0xFFFF);
        tu_put32(e + 12, 0xFFFFFFFFu);
        tu_put32(e + 16, 0xFFFFFFFFu);
    }
    *out_n = n + 76;
    return c;
}

static void test_hostile(const char *dir)
{
    tu_begin("archive: hostile archives (patched)");
    size_t n = 0;
    uint8_t *d = small_archive(dir, &n);
    zinfo z;
    if (!CHECK(d && zscan(d, n, &z) && z.count == 3)) {
        free(d);
        return;
    }
    int ia = zfind(&z, "alpha"), ib = zfind(&z, "bravo"), im = zfind(&z, "__MODEL_PROTO");
    CHECK(ia >= 0 && ib >= 0 && im == 2);
    if (ia < 0 || ib < 0 || im < 0) {
        free(d);
        return;
    }
    expect_bytes("the unpatched archive", d, n, ONNXIO_OK, NULL);
    expect_open("the unpatched archive", d, n, ONNXIO_OK);

    /* truncated anywhere */
    for (size_t cut = 4; cut < n; cut += (cut < 64 || n - cut < 128) ? 1 : 97) {
        onnxio_archive *ar = NULL;
        onnxio_status st = onnxio_archive_open_bytes(d, cut, NULL, &ar);
        CHECK_MSG(st == ONNXIO_ERR_ARCHIVE && onnxio_last_error()[0], "truncated to %zu bytes: %s (\"%s\")", cut,
                  onnxio_status_name(st), onnxio_last_error());
        onnxio_archive_close(ar);
        onnxio_arena *la = onnxio_arena_new();
        onnxio_ModelProto *lm = NULL;
        st = onnxio_load_model_from_bytes(d, cut, NULL, NULL, la, &lm);
        CHECK_MSG(st == ONNXIO_ERR_ARCHIVE && lm == NULL, "load truncated to %zu bytes: %s", cut, onnxio_status_name(st));
        onnxio_arena_unref(la);
    }
    expect_file("truncated by one byte", dir, d, n - 1, ONNXIO_ERR_ARCHIVE);
    expect_file("truncated to half", dir, d, n / 2, ONNXIO_ERR_ARCHIVE);
    expect_bytes("4 bytes PK\\3\\4", (const uint8_t *)"PK\3\4", 4, ONNXIO_ERR_ARCHIVE, NULL);
    /* garbage appended: the end record no longer ends the file and has no comment to cover it */
    {
        uint8_t *c = malloc(n + 100);
        memcpy(c, d, n);
        memset(c + n, 0x55, 100);
        /* an interrupted replace leaves exactly this; it is accepted */
        expect_bytes("100 bytes appended after the end record", c, n + 100, ONNXIO_OK, NULL);
        free(c);
    }

#define PATCHED(what, want, needle, ...)                  \
    do {                                                  \
        uint8_t *c = dup_bytes(d, n);                     \
        __VA_ARGS__;                                      \
        expect_bytes(what, c, n, want, needle);           \
        if (want == ONNXIO_ERR_ARCHIVE) expect_open(what, c, n, want); \
        free(c);                                          \
    } while (0)

    size_t eo = z.eocd;
    PATCHED("no end record", ONNXIO_ERR_ARCHIVE, "end of central directory", c[eo] = 'X');
    PATCHED("central directory offset past the file", ONNXIO_ERR_ARCHIVE, NULL, tu_put32(c + eo + 16, (uint32_t)n + 100));
    PATCHED("central directory offset 0xFFFFFFFF", ONNXIO_ERR_ARCHIVE, NULL, tu_put32(c + eo + 16, 0xFFFFFFFFu));
    PATCHED("central directory size one too many", ONNXIO_ERR_ARCHIVE, NULL, tu_put32(c + eo + 12, (uint32_t)z.cd_size + 1));
    PATCHED("central directory size 0", ONNXIO_ERR_ARCHIVE, NULL, tu_put32(c + eo + 12, 0));
    PATCHED("entry count 0xFFFE", ONNXIO_ERR_ARCHIVE, "more than", tu_put16(c + eo + 8, 0xFFFE); tu_put16(c + eo + 10, 0xFFFE));
    PATCHED("entry count 0xFFFF without ZIP64", ONNXIO_ERR_ARCHIVE, "ZIP64", tu_put16(c + eo + 8, 0xFFFF); tu_put16(c + eo + 10, 0xFFFF));
    PATCHED("entry count one short", ONNXIO_ERR_ARCHIVE, NULL, tu_put16(c + eo + 8, 2); tu_put16(c + eo + 10, 2));
    PATCHED("entry count 0", ONNXIO_ERR_ARCHIVE, NULL, tu_put16(c + eo + 8, 0); tu_put16(c + eo + 10, 0));
    PATCHED("multi-disk", ONNXIO_ERR_ARCHIVE, "disk", tu_put16(c + eo + 4, 1));
    PATCHED("name '..'-component", ONNXIO_ERR_ARCHIVE, "'..'", rename_entry(c, &z, ia, "../ph", 1, 1));
    PATCHED("name with '..' inside", ONNXIO_ERR_ARCHIVE, "'..'", rename_entry(c, &z, ia, "a/../", 1, 1));
    PATCHED("name with backslash '..'", ONNXIO_ERR_ARCHIVE, "'..'", rename_entry(c, &z, ia, "a\\..\\", 1, 1));
    PATCHED("absolute name", ONNXIO_ERR_ARCHIVE, "absolute", rename_entry(c, &z, ia, "/lpha", 1, 1));
    PATCHED("drive-letter name", ONNXIO_ERR_ARCHIVE, "absolute", rename_entry(c, &z, ia, "C:pha", 1, 1));
    PATCHED("backslash-absolute name", ONNXIO_ERR_ARCHIVE, "absolute", rename_entry(c, &z, ia, "\\lpha", 1, 1));
    PATCHED("name with a NUL", ONNXIO_ERR_ARCHIVE, "NUL", c[z.local[ia] + 32] = 0; c[z.central[ia] + 48] = 0);
    PATCHED("duplicate names", ONNXIO_ERR_ARCHIVE, "two entries", rename_entry(c, &z, ib, "alpha", 1, 1));
    PATCHED("overlapping entries", ONNXIO_ERR_ARCHIVE, "overlap",
            tu_put32(c + z.local[ia] + 18, 2048 + 100); tu_put32(c + z.local[ia] + 22, 2048 + 100);
            tu_put32(c + z.central[ia] + 20, 2048 + 100); tu_put32(c + z.central[ia] + 24, 2048 + 100));
    PATCHED("two central headers for one local header", ONNXIO_ERR_ARCHIVE, NULL,
            tu_put32(c + z.central[ib] + 42, (uint32_t)z.local[ia]));
    PATCHED("entry running into the central directory", ONNXIO_ERR_ARCHIVE, NULL,
            uint32_t big = (uint32_t)(z.cd_offset - z.data[im] + 1);
            tu_put32(c + z.local[im] + 18, big); tu_put32(c + z.local[im] + 22, big);
            tu_put32(c + z.central[im] + 20, big); tu_put32(c + z.central[im] + 24, big));
    PATCHED("local name differs", ONNXIO_ERR_ARCHIVE, "names", rename_entry(c, &z, ia, "alphx", 1, 0));
    PATCHED("local size differs", ONNXIO_ERR_ARCHIVE, "disagree", tu_put32(c + z.local[ia] + 22, 2047); tu_put32(c + z.local[ia] + 18, 2047));
    PATCHED("local CRC differs", ONNXIO_ERR_ARCHIVE, "disagree", c[z.local[ia] + 14] ^= 1);
    PATCHED("local method differs", ONNXIO_ERR_ARCHIVE, "disagree", tu_put16(c + z.local[ia] + 8, 8));
    PATCHED("local flags differ (data descriptor)", ONNXIO_ERR_ARCHIVE, "disagree", tu_put16(c + z.local[ia] + 6, 8));
    PATCHED("local header offset at garbage", ONNXIO_ERR_ARCHIVE, "no local header", tu_put32(c + z.central[ib] + 42, 7));
    PATCHED("local header offset in the central directory", ONNXIO_ERR_ARCHIVE, NULL,
            tu_put32(c + z.central[ib] + 42, (uint32_t)z.cd_offset + 2));
    PATCHED("local extra length past the central directory", ONNXIO_ERR_ARCHIVE, NULL, tu_put16(c + z.local[im] + 28, 0xFFFF));
    PATCHED("central extra length past the directory", ONNXIO_ERR_ARCHIVE, NULL, tu_put16(c + z.central[im] + 30, 0xFFFF));
    PATCHED("central name length past the directory", ONNXIO_ERR_ARCHIVE, NULL, tu_put16(c + z.central[im] + 28, 0xFFFF));
    PATCHED("stored with different sizes", ONNXIO_ERR_ARCHIVE, "sizes differ", tu_put32(c + z.central[ia] + 20, 2000));
    PATCHED("size 0xFFFFFFFF without ZIP64 extra", ONNXIO_ERR_ARCHIVE, "ZIP64",
            tu_put32(c + z.central[ia] + 20, 0xFFFFFFFFu); tu_put32(c + z.central[ia] + 24, 0xFFFFFFFFu));
    PATCHED("header offset 0xFFFFFFFF without ZIP64 extra", ONNXIO_ERR_ARCHIVE, "ZIP64", tu_put32(c + z.central[ib] + 42, 0xFFFFFFFFu));
    PATCHED("local size 0xFFFFFFFF without ZIP64 extra", ONNXIO_ERR_ARCHIVE, "ZIP64",
            tu_put32(c + z.local[ia] + 18, 0xFFFFFFFFu); tu_put32(c + z.local[ia] + 22, 0xFFFFFFFFu));
    PATCHED("encrypted entry", ONNXIO_ERR_ARCHIVE, "encrypted", c[z.local[ia] + 6] |= 1; c[z.central[ia] + 8] |= 1);
    PATCHED("strong encryption flag", ONNXIO_ERR_ARCHIVE, "encrypted", c[z.local[ia] + 6] |= 0x41; c[z.central[ia] + 8] |= 0x41);
    PATCHED("method 12 (bzip2)", ONNXIO_ERR_ARCHIVE, "method 12", tu_put16(c + z.local[ia] + 8, 12); tu_put16(c + z.central[ia] + 10, 12));
    PATCHED("method 12 on the model", ONNXIO_ERR_ARCHIVE, "method 12", tu_put16(c + z.local[im] + 8, 12); tu_put16(c + z.central[im] + 10, 12));
    PATCHED("no __MODEL_PROTO", ONNXIO_ERR_ARCHIVE, "__MODEL_PROTO", rename_entry(c, &z, im, "__MODEL_PROTX", 1, 1));
    PATCHED("central disk number", ONNXIO_ERR_ARCHIVE, "disk", tu_put16(c + z.central[ia] + 34, 3));
    PATCHED("tensor location is not an entry", ONNXIO_ERR_EXTERNAL_DATA, "alpha", rename_entry(c, &z, ia, "alphx", 1, 1));
    PATCHED("entry shorter than its tensor", ONNXIO_ERR_EXTERNAL_RANGE, NULL,
            tu_put32(c + z.local[ia] + 18, 2000); tu_put32(c + z.local[ia] + 22, 2000);
            tu_put32(c + z.central[ia] + 20, 2000); tu_put32(c + z.central[ia] + 24, 2000));
    {
        uint8_t *c = dup_bytes(d, n);
        rename_entry(c, &z, ia, "alphx", 1, 1);
        expect_open("location not an entry: the structure is fine", c, n, ONNXIO_OK);
        expect_file("tensor location is not an entry", dir, c, n, ONNXIO_ERR_EXTERNAL_DATA);
        free(c);
    }
    {
        uint8_t *c = dup_bytes(d, n);
        tu_put16(c + eo + 8, 0xFFFE);
        tu_put16(c + eo + 10, 0xFFFE);
        expect_file("entry count 0xFFFE", dir, c, n, ONNXIO_ERR_ARCHIVE);
        free(c);
    }

    /* ZIP64 end records */
    tu_begin("archive: hostile archives (ZIP64 end records)");
    for (int ff = 0; ff < 2; ff++) {
        size_t n64;
        uint8_t *c = with_zip64(d, n, &z, ff, &n64);
        size_t rec = z.eocd, loc = rec + 56, end = loc + 20;
        expect_bytes(ff ? "valid ZIP64 records, classic fields 0xFF.." : "valid ZIP64 records, classic fields set", c, n64,
                     ONNXIO_OK, NULL);
        expect_open("valid ZIP64 records", c, n64, ONNXIO_OK);
#define PATCHED64(what, want, ...)                  \
    do {                                            \
        uint8_t *p = dup_bytes(c, n64);             \
        __VA_ARGS__;                                \
        expect_bytes(what, p, n64, want, NULL);     \
        expect_open(what, p, n64, want);            \
        free(p);                                    \
    } while (0)
        PATCHED64("ZIP64 locator pointing at 0", ONNXIO_ERR_ARCHIVE, tu_put64(p + loc + 8, 0));
        PATCHED64("ZIP64 locator pointing at garbage", ONNXIO_ERR_ARCHIVE, tu_put64(p + loc + 8, 100));
        PATCHED64("ZIP64 locator pointing past the file", ONNXIO_ERR_ARCHIVE, tu_put64(p + loc + 8, (uint64_t)n64 + 5));
        PATCHED64("ZIP64 locator pointing at 2^63", ONNXIO_ERR_ARCHIVE, tu_put64(p + loc + 8, (uint64_t)1 << 63));
        PATCHED64("ZIP64 locator pointing one byte early", ONNXIO_ERR_ARCHIVE, tu_put64(p + loc + 8, rec - 1));
        PATCHED64("ZIP64 locator multi-disk", ONNXIO_ERR_ARCHIVE, tu_put32(p + loc + 16, 2));
        PATCHED64("ZIP64 record size field wrong", ONNXIO_ERR_ARCHIVE, tu_put64(p + rec + 4, 45));
        PATCHED64("ZIP64 record signature wrong", ONNXIO_ERR_ARCHIVE, p[rec] = 'Q');
        PATCHED64("ZIP64 record count disagrees", ONNXIO_ERR_ARCHIVE, tu_put64(p + rec + 24, 2); tu_put64(p + rec + 32, 2));
        PATCHED64("ZIP64 record count huge", ONNXIO_ERR_ARCHIVE,
                  tu_put64(p + rec + 24, (uint64_t)1 << 61); tu_put64(p + rec + 32, (uint64_t)1 << 61));
        PATCHED64("ZIP64 record counts differ", ONNXIO_ERR_ARCHIVE, tu_put64(p + rec + 24, 2));
        PATCHED64("ZIP64 record central directory offset disagrees", ONNXIO_ERR_ARCHIVE, tu_put64(p + rec + 48, z.cd_offset + 1));
        PATCHED64("ZIP64 record central directory size disagrees", ONNXIO_ERR_ARCHIVE, tu_put64(p + rec + 40, z.cd_size - 1));
        PATCHED64("ZIP64 record central directory offset huge", ONNXIO_ERR_ARCHIVE, tu_put64(p + rec + 48, ~(uint64_t)0 - 3));
        PATCHED64("ZIP64 record multi-disk", ONNXIO_ERR_ARCHIVE, tu_put32(p + rec + 16, 1));
        if (!ff) {
            PATCHED64("classic count disagrees with ZIP64", ONNXIO_ERR_ARCHIVE, tu_put16(p + end + 8, 2); tu_put16(p + end + 10, 2));
            PATCHED64("classic offset disagrees with ZIP64", ONNXIO_ERR_ARCHIVE, tu_put32(p + end + 16, (uint32_t)z.cd_offset - 1));
        }
#undef PATCHED64
        free(c);
    }
#undef PATCHED
    free(d);
}

/* Archives built from scratch (zbuild): deflate, ZIP64 extra fields, and
 * external data keys that do not fit their entries. */
/* Opens `d` (n bytes) from its last `t` bytes as a range reader does:
 * asking again from *need while the library says so, each time from an
 * earlier byte (at most 4 rounds). NULL on error. */
static onnxio_archive *open_from_tail(const uint8_t *d, size_t n, size_t t, onnxio_status *st)
{
    uint64_t from = n - t, need = 0;
    for (int round = 0; round < 4; round++) {
        onnxio_archive *ar = NULL;
        *st = onnxio_archive_open_tail(d + from, n - (size_t)from, n, NULL, &need, &ar);
        if (*st || ar) return ar;
        if (!CHECK_MSG(need < from, "tail from %llu: asked for more from %llu, inside what it had",
                       (unsigned long long)from, (unsigned long long)need))
            return NULL;
        from = need;
    }
    CHECK_MSG(0, "tail of %zu: still asking for more after 4 rounds", t);
    return NULL;
}

/* Structure-first reading (onnxio_archive_open_tail, _entry_span,
 * _entry_read: what remote loads use) against onnxio_archive_open_bytes of
 * the whole file: every tail size gives the same entries, and each entry
 * read from its span alone gives the bytes the whole-file open points at;
 * a flipped payload byte fails the CRC; a truncated file never opens. */
static void test_open_tail(const char *dir)
{
    tu_begin("archive: opened from its tail, entries read from their spans");
    size_t n = 0;
    uint8_t *d = small_archive(dir, &n);
    onnxio_archive *ref = NULL;
    if (!CHECK(d) || !CHECK_STATUS(onnxio_archive_open_bytes(d, n, NULL, &ref), ONNXIO_OK)) {
        free(d);
        return;
    }
    size_t count = onnxio_archive_entry_count(ref);
    for (size_t t = 1; t <= n; t += (t < 200 || n - t < 200) ? 1 : 61) {
        onnxio_status st;
        onnxio_archive *ar = open_from_tail(d, n, t, &st);
        if (!CHECK_MSG(st == ONNXIO_OK && ar, "tail of %zu bytes: %s (%s)", t, onnxio_status_name(st), onnxio_last_error())) {
            onnxio_archive_close(ar);
            continue;
        }
        CHECK_EQ_INT(onnxio_archive_entry_count(ar), count);
        for (size_t i = 0; i < count && i < onnxio_archive_entry_count(ar); i++) {
            const onnxio_archive_entry *e = onnxio_archive_entry_at(ar, i), *r = onnxio_archive_entry_at(ref, i);
            CHECK_MSG(strcmp(e->name, r->name) == 0 && e->size == r->size && e->crc32 == r->crc32 &&
                          e->header_offset == r->header_offset,
                      "tail of %zu: entry %zu differs", t, i);
            uint64_t a = 0, b = 0;
            if (!CHECK_STATUS(onnxio_archive_entry_span(ar, e, &a, &b), ONNXIO_OK) ||
                !CHECK_MSG(a <= b && b <= n && a == r->header_offset && b >= r->data_offset + r->compressed_size,
                           "tail of %zu: entry %zu's span [%llu, %llu)", t, i, (unsigned long long)a, (unsigned long long)b))
                continue;
            /* the span's bytes alone, in memory of their own (ASan sees any read past them) */
            uint8_t *piece = malloc((size_t)(b - a) ? (size_t)(b - a) : 1);
            memcpy(piece, d + a, (size_t)(b - a));
            const void *data = NULL;
            onnxio_buffer *inflated = NULL;
            if (CHECK_STATUS(onnxio_archive_entry_read(ar, e, piece, (size_t)(b - a), true, 0, &data, &inflated), ONNXIO_OK))
                CHECK_MSG(memcmp(data, d + r->data_offset, (size_t)r->size) == 0, "tail of %zu: entry %zu's bytes", t, i);
            onnxio_buffer_unref(inflated);
            if (i == 0 && r->size > 0 && t == n / 2) { /* a flipped payload byte: the CRC says so */
                piece[r->data_offset - a] ^= 0x40;
                CHECK_STATUS(onnxio_archive_entry_read(ar, e, piece, (size_t)(b - a), true, 0, &data, &inflated),
                             ONNXIO_ERR_CHECKSUM);
                onnxio_buffer_unref(inflated);
                inflated = NULL;
                /* a span cut short */
                piece[r->data_offset - a] ^= 0x40;
                CHECK_MSG(onnxio_archive_entry_read(ar, e, piece, (size_t)(b - a) - 1, true, 0, &data, &inflated) != ONNXIO_OK,
                          "an entry read from one byte less than its span succeeded");
                onnxio_buffer_unref(inflated);
            }
            free(piece);
        }
        onnxio_archive_close(ar);
    }
    /* a file cut anywhere, read whole as its own tail, never opens */
    for (size_t cut = 4; cut < n; cut += (cut < 64 || n - cut < 128) ? 1 : 97) {
        uint64_t need = 0;
        onnxio_archive *ar = NULL;
        onnxio_status st = onnxio_archive_open_tail(d, cut, cut, NULL, &need, &ar);
        CHECK_MSG(st == ONNXIO_ERR_ARCHIVE && !ar, "cut to %zu bytes: %s", cut, onnxio_status_name(st));
        onnxio_archive_close(ar);
    }
    onnxio_archive_close(ref);
    free(d);
}

static void test_scratch(const char *dir)
{
    tu_begin("archive: archives built from scratch");
    static uint8_t w[3000];
    fill_pattern(w, sizeof w, 21);
    /* make it compressible so that deflate really deflates */
    for (size_t i = 1000; i < 2000; i++) w[i] = (uint8_t)(i % 7);
    tu_bytes b = {0};

    /* an empty zip: only an end record */
    {
        uint8_t e[22] = {0x50, 0x4b, 5, 6};
        expect_bytes("empty zip", e, 22, ONNXIO_ERR_ARCHIVE, "__MODEL_PROTO");
        expect_open("empty zip", e, 22, ONNXIO_ERR_ARCHIVE);
    }

#define MODEL(loc, off, len, dim)                                                     \
    onnxio_buffer *mb = NULL;                                                         \
    external_model_bytes(loc, off, len, dim, &mb);                                    \
    const uint8_t *mdata = mb ? onnxio_buffer_data(mb) : (const uint8_t *)"";         \
    size_t msize = mb ? onnxio_buffer_size(mb) : 0

    /* a valid one, loaded in every mode; stored and deflated payload and model */
    for (int variant = 0; variant < 6; variant++) {
        MODEL("w", "0", "3000", 3000);
        tu_zsrc e[2] = {{"w", w, sizeof w, variant & 1, variant >= 4},
                     {"__MODEL_PROTO", mdata, msize, (variant >> 1) & 1, variant == 5}};
        tu_zip_build(&b, e, 2);
        char *what = tu_strdup_printf("scratch archive (payload %s, model %s%s)", e[0].deflated ? "deflated" : "stored",
                                      e[1].deflated ? "deflated" : "stored", variant >= 4 ? ", ZIP64 extra fields" : "");
        for (int nc = 0; nc < 2; nc++) {
            onnxio_parse_options o = popts(nc, 2, nc ? ONNXIO_ON : ONNXIO_DEFAULT);
            onnxio_arena *la = onnxio_arena_new();
            onnxio_ModelProto *lm = NULL;
            onnxio_buffer *owner = onnxio_buffer_new(b.size, 4096);
            memcpy(onnxio_buffer_data(owner), b.data, b.size);
            onnxio_status st = onnxio_load_model_from_bytes(onnxio_buffer_data(owner), b.size, owner, &o, la, &lm);
            if (CHECK_MSG(st == ONNXIO_OK, "%s: %s (%s)", what, onnxio_status_name(st), onnxio_last_error()) &&
                CHECK(lm && lm->graph && lm->graph->initializer.size == 1)) {
                onnxio_TensorProto *t = lm->graph->initializer.data[0];
                CHECK_BYTES(t->raw_data.data, t->raw_data.size, w, sizeof w);
                /* Read from an entry: no external_data and no data_location,
                 * as before the archive was written (docs/onnxz.md). */
                CHECK(t->external_data.size == 0 && !onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location));
                if (nc && e[0].deflated)
                    CHECK_MSG(t->raw_data.owner && onnxio_buffer_is_allocated(t->raw_data.owner),
                              "%s: a deflated payload is not in its own buffer", what);
            }
            onnxio_arena_unref(la);
            CHECK_EQ_INT(onnxio_buffer_refcount(owner), 1);
            onnxio_buffer_unref(owner);
        }
        onnxio_archive *ar = NULL;
        if (CHECK_STATUS(onnxio_archive_open_bytes(b.data, b.size, NULL, &ar), ONNXIO_OK)) {
            const onnxio_archive_entry *ew = onnxio_archive_find(ar, "w");
            CHECK(ew && ew->size == sizeof w && ew->method == (e[0].deflated ? 8 : 0));
            CHECK(ew && ew->data_offset + ew->compressed_size <= b.size);
            if (e[0].deflated) CHECK(ew && ew->compressed_size < sizeof w);
            onnxio_archive_close(ar);
        }
        if (variant == 1) {
            /* the deflated payload, hostile */
            zinfo z;
            CHECK(zscan(b.data, b.size, &z));
            int iw = zfind(&z, "w");
            uint8_t *c = dup_bytes(b.data, b.size);
            c[z.data[iw] + 3] ^= 0x55;
            for (size_t at = 0; at < 40; at += 3) {
                memcpy(c, b.data, b.size);
                c[z.data[iw] + at] ^= 0x55;
                onnxio_arena *la = onnxio_arena_new();
                onnxio_ModelProto *lm = NULL;
                onnxio_status st = onnxio_load_model_from_bytes(c, b.size, NULL, NULL, la, &lm);
                CHECK_MSG((st == ONNXIO_ERR_ARCHIVE || st == ONNXIO_ERR_CHECKSUM) && onnxio_last_error()[0],
                          "corrupt deflate data (byte %zu): %s (\"%s\")", at, onnxio_status_name(st), onnxio_last_error());
                onnxio_arena_unref(la);
            }
            memcpy(c, b.data, b.size);
            tu_put32(c + z.local[iw] + 14, 0x12345678u);
            tu_put32(c + z.central[iw] + 16, 0x12345678u);
            expect_bytes("deflated entry with a wrong CRC", c, b.size, ONNXIO_ERR_CHECKSUM, "'w'");
            memcpy(c, b.data, b.size);
            tu_put32(c + z.local[iw] + 22, 0x7FFFFFFFu);
            tu_put32(c + z.central[iw] + 24, 0x7FFFFFFFu);
            expect_bytes("deflate bomb claim (2 GiB from a few bytes)", c, b.size, ONNXIO_ERR_ARCHIVE, "more than deflate");
            {
                /* recorded as 2999 bytes (and the tensor as 2999) while it inflates to 3000 */
                onnxio_buffer *mb2 = NULL;
                external_model_bytes("w", "0", "2999", 2999, &mb2);
                tu_zsrc e2[2] = {{"w", w, sizeof w, 1, 0}, {"__MODEL_PROTO", onnxio_buffer_data(mb2), onnxio_buffer_size(mb2), 0, 0}};
                tu_bytes b2 = {0};
                tu_zip_build(&b2, e2, 2);
                zinfo z2;
                CHECK(zscan(b2.data, b2.size, &z2));
                tu_put32(b2.data + z2.local[0] + 22, 2999);
                tu_put32(b2.data + z2.central[0] + 24, 2999);
                expect_bytes("deflate data longer than its recorded size", b2.data, b2.size, ONNXIO_ERR_ARCHIVE,
                             "inflates to more than its recorded size");
                tu_bytes_free(&b2);
                onnxio_buffer_unref(mb2);
            }
            memcpy(c, b.data, b.size);
            tu_put32(c + z.local[iw] + 22, 3001);
            tu_put32(c + z.central[iw] + 24, 3001);
            expect_bytes("deflate data shorter than its recorded size", c, b.size, ONNXIO_ERR_ARCHIVE,
                         "inflates to less than its recorded size");
            free(c);
        }
        if (variant == 4) {
            /* a ZIP64 extra field too short for what its header says it holds */
            zinfo z;
            CHECK(zscan(b.data, b.size, &z));
            uint8_t *c = dup_bytes(b.data, b.size);
            int iw = zfind(&z, "w");
            tu_put16(c + z.central[iw] + 46 + 1 + 2, 8);
            expect_bytes("ZIP64 extra field lacking a value", c, b.size, ONNXIO_ERR_ARCHIVE, NULL);
            memcpy(c, b.data, b.size);
            tu_put64(c + z.central[iw] + 46 + 1 + 4, (uint64_t)1 << 62);
            tu_put64(c + z.central[iw] + 46 + 1 + 12, (uint64_t)1 << 62);
            expect_bytes("ZIP64 extra field with 2^62-byte sizes", c, b.size, ONNXIO_ERR_ARCHIVE, NULL);
            free(c);
        }
        free(what);
        onnxio_buffer_unref(mb);
    }

    /* external data keys that do not fit the entry */
    struct {
        const char *what, *loc, *off, *len;
        int64_t dim;
        onnxio_status want;
        size_t from;
    } refs[] = {
        {"sub-range of an entry", "w", "16", "32", 32, ONNXIO_OK, 16},
        {"no length key: the rest of the entry", "w", "1000", NULL, 2000, ONNXIO_OK, 1000},
        {"location with ./", "./w", "0", "3000", 3000, ONNXIO_OK, 0},
        {"offset + length past the entry", "w", "2990", "11", 11, ONNXIO_ERR_EXTERNAL_RANGE, 0},
        {"offset past the entry", "w", "3001", "0", 0, ONNXIO_ERR_EXTERNAL_RANGE, 0},
        {"length past the entry", "w", "0", "3001", 3001, ONNXIO_ERR_EXTERNAL_RANGE, 0},
        {"huge length", "w", "0", "18446744073709551615", 16, ONNXIO_ERR_EXTERNAL_RANGE, 0},
        {"huge offset", "w", "18446744073709551615", "1", 1, ONNXIO_ERR_EXTERNAL_RANGE, 0},
        {"length differs from the shape", "w", "0", "3000", 2999, ONNXIO_ERR_EXTERNAL_DATA, 0},
        {"location is not an entry", "v", "0", "16", 16, ONNXIO_ERR_EXTERNAL_DATA, 0},
        {"location is a directory-style name", "w/", "0", "16", 16, ONNXIO_ERR_EXTERNAL_DATA, 0},
        {"location is the model entry", "__MODEL_PROTO", "0", "4", 4, ONNXIO_ERR_PATH_SELF, 0},
        {"location with '..'", "../w", "0", "16", 16, ONNXIO_ERR_PATH_PARENT, 0},
        {"absolute location", "/w", "0", "16", 16, ONNXIO_ERR_PATH_ABSOLUTE, 0},
        {"no location", NULL, "0", "16", 16, ONNXIO_ERR_EXTERNAL_DATA, 0},
        {"offset not a number", "w", "x", "16", 16, ONNXIO_ERR_EXTERNAL_DATA, 0},
    };
    for (size_t k = 0; k < sizeof refs / sizeof refs[0]; k++) {
        MODEL(refs[k].loc, refs[k].off, refs[k].len, refs[k].dim);
        tu_zsrc e[2] = {{"w", w, sizeof w, 0, 0}, {"__MODEL_PROTO", mdata, msize, 0, 0}};
        tu_zip_build(&b, e, 2);
        expect_bytes(refs[k].what, b.data, b.size, refs[k].want, NULL);
        if (refs[k].want == ONNXIO_OK) {
            onnxio_arena *la = onnxio_arena_new();
            onnxio_ModelProto *lm = NULL;
            if (CHECK_STATUS(onnxio_load_model_from_bytes(b.data, b.size, NULL, NULL, la, &lm), ONNXIO_OK)) {
                onnxio_TensorProto *t = lm->graph->initializer.data[0];
                CHECK_BYTES(t->raw_data.data, t->raw_data.size, w + refs[k].from, (size_t)refs[k].dim);
            }
            onnxio_arena_unref(la);
        }
        onnxio_buffer_unref(mb);
    }

    /* two tensors sharing one entry, and a ZIP64 archive written by hand */
    {
        MODEL("w", "0", "3000", 3000);
        tu_zsrc e[3] = {{"w", w, sizeof w, 0, 0}, {"x", w, 100, 0, 0}, {"__MODEL_PROTO", mdata, msize, 0, 0}};
        tu_zip_build(&b, e, 3);
        expect_bytes("an unreferenced entry", b.data, b.size, ONNXIO_OK, NULL);
        expect_file("an unreferenced entry", dir, b.data, b.size, ONNXIO_OK);
        onnxio_buffer_unref(mb);
    }
    tu_bytes_free(&b);
#undef MODEL
}

/* The whole-entry CRC is checked for a sub-range in copy mode, not with
 * no_copy by default. */
static void test_subrange_crc(void)
{
    tu_begin("archive: CRC of entries read in part");
    static uint8_t w[3000];
    fill_pattern(w, sizeof w, 31);
    onnxio_buffer *mb = NULL;
    external_model_bytes("w", "16", "32", 32, &mb);
    tu_bytes b = {0};
    tu_zsrc e[2] = {{"w", w, sizeof w, 0, 0}, {"__MODEL_PROTO", onnxio_buffer_data(mb), onnxio_buffer_size(mb), 0, 0}};
    tu_zip_build(&b, e, 2);
    zinfo z;
    CHECK(zscan(b.data, b.size, &z));
    b.data[z.data[0] + 2500] ^= 1; /* outside the tensor's range */
    for (int nc = 0; nc < 2; nc++) {
        for (int v = 0; v < 3; v++) {
            onnxio_parse_options o = popts(nc, 2, (onnxio_toggle)v);
            onnxio_arena *la = onnxio_arena_new();
            onnxio_ModelProto *lm = NULL;
            onnxio_status st = onnxio_load_model_from_bytes(b.data, b.size, NULL, &o, la, &lm);
            bool verify = v == ONNXIO_ON || (v == ONNXIO_DEFAULT && !nc);
            CHECK_MSG(st == (verify ? ONNXIO_ERR_CHECKSUM : ONNXIO_OK), "sub-range, %s, verify_crc %d: %s (%s)",
                      nc ? "no_copy" : "copy", v, onnxio_status_name(st), onnxio_last_error());
            onnxio_arena_unref(la);
        }
    }
    tu_bytes_free(&b);
    onnxio_buffer_unref(mb);
}

/* ---- replacing the model ------------------------------------------------------------ */

/* Checks that every non-model entry of `after` has the same offsets and
 * the same bytes (local header through data) as in `before`. */
static void check_entries_kept(const char *what, const uint8_t *d0, size_t n0, const onnxio_archive *a0, const uint8_t *d1,
                               size_t n1, const onnxio_archive *a1)
{
    size_t kept = 0;
    for (size_t i = 0; i < onnxio_archive_entry_count(a0); i++) {
        const onnxio_archive_entry *e0 = onnxio_archive_entry_at(a0, i);
        if (strcmp(e0->name, "__MODEL_PROTO") == 0) continue;
        const onnxio_archive_entry *e1 = onnxio_archive_find(a1, e0->name);
        if (!CHECK_MSG(e1 != NULL, "%s: entry '%s' is gone", what, e0->name)) continue;
        CHECK_MSG(e1->header_offset == e0->header_offset && e1->data_offset == e0->data_offset && e1->size == e0->size &&
                      e1->crc32 == e0->crc32,
                  "%s: entry '%s' moved or changed", what, e0->name);
        uint64_t end = e0->data_offset + e0->size;
        CHECK_MSG(end <= n0 && end <= n1 &&
                      memcmp(d0 + e0->header_offset, d1 + e0->header_offset, (size_t)(end - e0->header_offset)) == 0,
                  "%s: bytes of entry '%s' changed", what, e0->name);
        kept++;
    }
    CHECK_EQ_INT(onnxio_archive_entry_count(a1), onnxio_archive_entry_count(a0));
    CHECK_EQ_INT(kept, N_ENTRIES - 1);
}

/* Loads `path` (a copy load) and checks its producer_name and payloads. */
static void check_loaded(const char *path, const char *producer, const char *what)
{
    onnxio_arena *la = onnxio_arena_new();
    onnxio_ModelProto *lm = NULL;
    if (CHECK_STATUS(onnxio_load_model(path, NULL, la, &lm), ONNXIO_OK)) {
        CHECK_STR(lm->producer_name.data, producer);
        check_payloads(lm, what);
    }
    onnxio_arena_unref(la);
}

static void test_replace(const char *dir)
{
    tu_begin("archive: replacing the model");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = build_model(a, "before");
    char *path = tu_path_join(dir, "replace.onnxz");
    save_ok(m, path, 2, 0);
    size_t n0 = 0;
    uint8_t *d0 = tu_read_file(path, &n0);
    onnxio_archive *a0 = NULL;
    CHECK_STATUS(onnxio_archive_open_bytes(d0, n0, NULL, &a0), ONNXIO_OK);

    /* a mapping taken before the replace */
    onnxio_parse_options nco = popts(true, 1, ONNXIO_DEFAULT);
    onnxio_arena *keep_arena = onnxio_arena_new();
    onnxio_ModelProto *kept = NULL;
    CHECK_STATUS(onnxio_load_model(path, &nco, keep_arena, &kept), ONNXIO_OK);

    /* the structure, tensors left external */
    onnxio_parse_options so = popts(false, 1, ONNXIO_DEFAULT);
    so.load_external_data = ONNXIO_OFF;
    onnxio_arena *sa = onnxio_arena_new();
    onnxio_ModelProto *sm = NULL;
    CHECK_STATUS(onnxio_load_model(path, &so, sa, &sm), ONNXIO_OK);
#ifdef _WIN32
    /* The replace's switch shrinks the file, which Wine refuses while any
     * view maps it (ERROR_USER_MAPPED_FILE; Windows refuses a shrink below
     * a mapped section's size only). Done, or refused with the file still
     * the old archive; then the mapping goes before the rounds. */
    if (sm) {
        onnxio_status st = onnxio_archive_replace_model(path, sm, NULL);
        if (st != ONNXIO_OK) {
            CHECK_STATUS(st, ONNXIO_ERR_IO);
            CHECK_MSG(strstr(onnxio_last_error(), "it still holds the old model") != NULL, "replace refused: %s",
                      onnxio_last_error());
            check_loaded(path, "before", "after a refused replace");
            onnxio_arena_unref(keep_arena);
            keep_arena = NULL;
            kept = NULL;
            tu_skip_windows("a no_copy mapping alive through the replace: the system refuses to shrink a mapped file");
        }
    }
#endif
    for (int round = 1; round <= 2 && sm && a0; round++) {
        char *producer = tu_strdup_printf("after-%d", round);
        tu_set_string(sa, sm, &sm->producer_name, ONNXIO_FIELD_ModelProto_producer_name, producer);
        tu_set_string(sa, sm, &sm->doc_string, ONNXIO_FIELD_ModelProto_doc_string, "replaced in place");
        CHECK_STATUS(onnxio_archive_replace_model(path, sm, NULL), ONNXIO_OK);
        size_t n1 = 0;
        uint8_t *d1 = tu_read_file(path, &n1);
        onnxio_archive *a1 = NULL;
        if (CHECK(d1) && CHECK_STATUS(onnxio_archive_open_bytes(d1, n1, NULL, &a1), ONNXIO_OK)) {
            char *what = tu_strdup_printf("replace %d", round);
            check_entries_kept(what, d0, n0, a0, d1, n1, a1);
            CHECK_MSG(n1 > n0, "%s: the archive did not grow (%zu -> %zu)", what, n0, n1);
            /* the old model's bytes are still there, unreferenced */
            CHECK(memcmp(d1, d0, (size_t)onnxio_archive_find(a0, "__MODEL_PROTO")->data_offset) == 0);
            free(what);
            onnxio_archive_close(a1);
        }
        free(d1);
        for (int nc = 0; nc < 2; nc++) {
            onnxio_parse_options o = popts(nc, 2, ONNXIO_ON);
            onnxio_arena *la = onnxio_arena_new();
            onnxio_ModelProto *lm = NULL;
            if (CHECK_STATUS(onnxio_load_model(path, &o, la, &lm), ONNXIO_OK)) {
                CHECK_STR(lm->producer_name.data, producer);
                CHECK_STR(lm->doc_string.data, "replaced in place");
                check_payloads(lm, "after replace");
            }
            onnxio_arena_unref(la);
        }
        /* the mapping taken before still reads the right bytes */
        if (kept) check_payloads(kept, "no_copy model loaded before the replace");
        free(producer);
    }

    /* a replacement whose external tensor names a missing entry: refused,
     * the file untouched */
    {
        size_t nb = 0;
        uint8_t *before = tu_read_file(path, &nb);
        onnxio_TensorProto *t = find_tensor(sm, "bravo");
        for (size_t k = 0; t && k < t->external_data.size; k++) {
            onnxio_StringStringEntryProto *e = t->external_data.data[k];
            if (strcmp(e->key.data, "location") == 0) onnxio_string_set(sa, &e->value, "nope", 4);
        }
        CHECK_STATUS(onnxio_archive_replace_model(path, sm, NULL), ONNXIO_ERR_EXTERNAL_DATA);
        CHECK(onnxio_last_error()[0] != '\0');
        size_t na = 0;
        uint8_t *after = tu_read_file(path, &na);
        CHECK_BYTES(after, na, before, nb);
        free(after);
        /* ... and one whose offset + length runs past the entry */
        for (size_t k = 0; t && k < t->external_data.size; k++) {
            onnxio_StringStringEntryProto *e = t->external_data.data[k];
            if (strcmp(e->key.data, "location") == 0) onnxio_string_set(sa, &e->value, "bravo", 5);
            if (strcmp(e->key.data, "offset") == 0) onnxio_string_set(sa, &e->value, "8", 1);
        }
        CHECK_STATUS(onnxio_archive_replace_model(path, sm, NULL), ONNXIO_ERR_EXTERNAL_RANGE);
        after = tu_read_file(path, &na);
        CHECK_BYTES(after, na, before, nb);
        free(after);
        /* external data options are refused too */
        onnxio_serialize_options xo;
        memset(&xo, 0, sizeof xo);
        xo.external_data.location = "data.bin";
        CHECK_STATUS(onnxio_archive_replace_model(path, sm, &xo), ONNXIO_ERR_INVALID_ARGUMENT);
        after = tu_read_file(path, &na);
        CHECK_BYTES(after, na, before, nb);
        free(after);
        free(before);
        char *missing = tu_path_join(dir, "missing.onnxz");
        CHECK_STATUS(onnxio_archive_replace_model(missing, m, NULL), ONNXIO_ERR_NOT_FOUND);
        free(missing);
    }

    /* a replacement with loaded payloads: written inline in the new model */
    {
        onnxio_arena *fa = onnxio_arena_new();
        onnxio_ModelProto *full = build_model(fa, "inline");
        CHECK_STATUS(onnxio_archive_replace_model(path, full, NULL), ONNXIO_OK);
        check_loaded(path, "inline", "after replace with inline payloads");
        onnxio_arena_unref(fa);
        if (kept) check_payloads(kept, "no_copy model loaded before the replaces");
    }
    /* a replace of a file that is not an archive */
    {
        char *plain = tu_path_join(dir, "plain.onnxz");
        CHECK(tu_write_file(plain, "\x08\x07", 2));
        CHECK_STATUS(onnxio_archive_replace_model(plain, m, NULL), ONNXIO_ERR_ARCHIVE);
        unlink(plain);
        free(plain);
    }

    onnxio_arena_unref(keep_arena);
    onnxio_arena_unref(sa);
    onnxio_archive_close(a0);
    free(d0);
    unlink(path);
    free(path);
    onnxio_arena_unref(a);
}

/* ---- save errors ------------------------------------------------------------------------ */

static void test_save_errors(const char *dir)
{
    tu_begin("archive: save option errors");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = build_model(a, "errors");
    char *path = tu_path_join(dir, "err.onnxz");
    onnxio_serialize_options so;
    memset(&so, 0, sizeof so);
    so.external_data.location = "data.bin";
    CHECK_STATUS(onnxio_save_model(m, path, &so), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK(onnxio_last_error()[0] != '\0');
    CHECK_STATUS(onnxio_save_archive(m, path, &so), ONNXIO_ERR_INVALID_ARGUMENT);
    memset(&so, 0, sizeof so);
    so.external_data.all_tensors_to_one_file = ONNXIO_OFF;
    CHECK_STATUS(onnxio_save_model(m, path, &so), ONNXIO_ERR_INVALID_ARGUMENT);
    memset(&so, 0, sizeof so);
    so.external_data.checksum = true;
    CHECK_STATUS(onnxio_save_model(m, path, &so), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK(!tu_exists(path));

    /* a tensor that is still external */
    save_ok(m, path, 1, 0);
    onnxio_parse_options o = popts(false, 1, ONNXIO_DEFAULT);
    o.load_external_data = ONNXIO_OFF;
    onnxio_arena *la = onnxio_arena_new();
    onnxio_ModelProto *lm = NULL;
    if (CHECK_STATUS(onnxio_load_model(path, &o, la, &lm), ONNXIO_OK)) {
        char *other = tu_path_join(dir, "err2.onnxz");
        CHECK_STATUS(onnxio_save_model(lm, other, NULL), ONNXIO_ERR_MISSING_PAYLOAD);
        CHECK(strstr(onnxio_last_error(), "external") != NULL);
        CHECK(!tu_exists(other));
        /* in place over its own archive too: the old file stays */
        size_t nb = 0;
        uint8_t *before = tu_read_file(path, &nb);
        CHECK_STATUS(onnxio_save_model(lm, path, NULL), ONNXIO_ERR_MISSING_PAYLOAD);
        size_t na = 0;
        uint8_t *after = tu_read_file(path, &na);
        CHECK_BYTES(after, na, before, nb);
        free(before);
        free(after);
        free(other);
    }
    onnxio_arena_unref(la);
    /* a skip_raw_data load cannot be saved either */
    o = popts(false, 1, ONNXIO_DEFAULT);
    o.skip_raw_data = true;
    la = onnxio_arena_new();
    lm = NULL;
    if (CHECK_STATUS(onnxio_load_model(path, &o, la, &lm), ONNXIO_OK)) {
        char *other = tu_path_join(dir, "err3.onnxz");
        onnxio_status st = onnxio_save_model(lm, other, NULL);
        CHECK_MSG(st == ONNXIO_ERR_MISSING_PAYLOAD, "save of a skip_raw_data model gave %s", onnxio_status_name(st));
        CHECK(!tu_exists(other));
        free(other);
    }
    onnxio_arena_unref(la);
    /* the directory list: nothing but the archive is left behind */
    tu_strlist names = {0};
    tu_list_dir(dir, &names);
    for (size_t i = 0; i < names.size; i++)
        CHECK_MSG(strcmp(names.items[i], "err.onnxz") == 0, "left behind: %s", names.items[i]);
    tu_strlist_free(&names);
    unlink(path);
    free(path);
    onnxio_arena_unref(a);
}

/* The CRC-32 that checks entries, against zlib's crc32: ISA-L's (used
 * when libisal.so.2, on Windows isa-l.dll, loads) and libdeflate's
 * (otherwise), at every length around their block sizes, at odd
 * alignments, and continued in pieces. */
static void test_crc_libraries(void)
{
    tu_begin("CRC-32: ISA-L (when the system has it) and libdeflate give zlib's values");
    const char *lib = ONNXIO__OS_WINDOWS ? "isa-l.dll" : "libisal.so.2";
    void *isal = tu_dlopen(lib);
    CHECK_MSG(strcmp(onnxio__crc32_library(), isal ? "ISA-L" : "libdeflate") == 0, "using %s, %s %s",
              onnxio__crc32_library(), lib, isal ? "loads" : "is missing");
    if (isal) tu_dlclose(isal);
    size_t n = 3 << 20;
    uint8_t *b = malloc(n + 64);
    uint32_t x = 12345;
    for (size_t i = 0; i < n + 64; i++) b[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 23);
    static const size_t lens[] = {0, 1, 7, 15, 16, 17, 63, 64, 65, 255, 256, 257, 4095, 4096, 4097, 65536, 1 << 20, 3 << 20};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
        for (size_t off = 0; off < 4; off++) {
            uint32_t want = (uint32_t)crc32(0, b + off * 13, (uInt)lens[k]);
            CHECK_MSG(onnxio__crc32(0, b + off * 13, lens[k]) == want, "%s, %zu bytes at +%zu",
                      onnxio__crc32_library(), lens[k], off * 13);
            CHECK_MSG(onnxio__crc32_libdeflate(0, b + off * 13, lens[k]) == want, "libdeflate, %zu bytes at +%zu",
                      lens[k], off * 13);
        }
    /* Continued: the CRC so far as the start of the next piece. */
    uint32_t c = 0;
    for (size_t at = 0; at < n; at += 100003) c = onnxio__crc32(c, b + at, n - at < 100003 ? n - at : 100003);
    CHECK(c == (uint32_t)crc32(0, b, (uInt)n));
    free(b);
    tu_end();
}


/* ---- cold copy loads: the archive read whole ------------------------------------ */

/* A field of /proc/self/status in bytes ("RssAnon: ", "RssFile: "; 0
 * when /proc cannot say). */
static uint64_t status_bytes(const char *field)
{
#ifdef _WIN32
    /* Under Wine, /proc/self/status is Linux's view of the Wine process,
     * not of this Windows program's memory. */
    (void)field;
    return 0;
#else
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    uint64_t kib = 0;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && sscanf(line + n, "%llu", (unsigned long long *)&kib) == 1) break;
    if (f) fclose(f);
    return kib * 1024;
#endif
}

static uint64_t rss_anon(void) { return status_bytes("RssAnon:"); }

/* Opening an archive reads each entry's local header through the file
 * mapping, and the kernel maps the whole page-cache folio around each
 * (up to 2 MiB on Linux 6.18, which caches a file read in order in large
 * folios). Those pages leave the process once the headers are read, with
 * random access too (the mapping of an archive that a load does not read
 * whole: over 1 GiB, no_copy, onnxio_archive_open): a 3.5 GiB archive
 * kept 385 MiB of them mapped through a copy load. 24 entries of 3 MiB,
 * the file evicted and then read in order; RssFile before and after the
 * open. Where the kernel caches small folios the growth is small either
 * way. */
static void test_headers_unmapped(const char *dir)
{
    tu_begin("archive: the pages around the local headers leave the process after the open");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = new_model(a, "headers");
    const size_t n = 24, size = (size_t)3 << 20;
    uint8_t *bytes = malloc(size);
    if (!CHECK(bytes)) {
        onnxio_arena_unref(a);
        tu_end();
        return;
    }
    for (size_t i = 0; i < size; i++) bytes[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < n; i++) {
        onnxio_TensorProto *t = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
        char name[16];
        snprintf(name, sizeof name, "w%zu", i);
        uint8_tensor(a, t, name, (int64_t)size);
        set_raw(t, bytes, size);
    }
    char *path = tu_path_join(dir, "headers.onnxz");
    save_ok(m, path, 2, 0);
    tu_evict(path);
    int fd = open(path, O_RDONLY);
    if (CHECK(fd >= 0)) {
        while (read(fd, bytes, size) > 0) {
        }
        close(fd);
    }
    uint64_t before = status_bytes("RssFile:");
    onnxio_archive *ar = NULL;
    if (CHECK_STATUS(onnxio_archive_open(path, &ar), ONNXIO_OK) && before) {
        uint64_t after = status_bytes("RssFile:");
        CHECK_MSG(after < before + ((uint64_t)4 << 20), "opening %zu entries of 3 MiB maps %llu KiB of the file (at most 4 MiB)",
                  n, (unsigned long long)((after > before ? after - before : 0) >> 10));
    } else if (!before) {
        tu_skip("the pages of the file mapped: no RssFile in /proc/self/status here");
    }
    onnxio_archive_close(ar);
    unlink(path);
    free(bytes);
    free(path);
    onnxio_arena_unref(a);
    tu_end();
}

/* onnxio__archive_read on archives of two writers (onnxio's, 64-byte
 * aligned entries with padding in the local headers; tu_zip_build's, no
 * padding, a deflated entry, entries of 0 bytes to 9 MiB, some sharing a
 * 4 KiB block): the bytes it holds are the file's, every stored entry's
 * CRC-32 it derived from its reads equals zlib's of the entry's bytes,
 * and the entries laid out for it (the data running to the next read) have
 * one, on 1 to 4 threads, the file cached or not. */
static void check_read_whole(const char *what, const char *path, const char *big_entry)
{
    size_t n = 0;
    uint8_t *file = tu_read_file(path, &n);
    if (!CHECK(file)) return;
    /* way 0: one read, then the CRC-32s; way 1: reads on the pool, each
     * CRC-32 as it lands (what archives over 1 GiB take) */
    for (int run = 0; run < 12; run++) {
        int way = run / 6, threads = 1 << (run / 2 % 3), cold = run % 2;
        onnxio__archive_one_read_max = way ? 0 : ONNXIO__WHOLE_MAX;
        if (cold) tu_evict(path);
        int fd = open(path, O_RDONLY);
        onnxio_parse_options o = popts(false, threads, ONNXIO_ON);
        o.direct_io = ONNXIO_ON;
        onnxio_archive *a = NULL;
        CHECK_STATUS(onnxio__archive_read(fd, n, path, &o, &a), ONNXIO_OK);
        close(fd);
        if (!CHECK_MSG(a, "%s: read whole (%d threads)", what, threads)) continue;
        CHECK_MSG(memcmp(onnxio__archive_data(a), file, n) == 0, "%s, %d threads%s: the bytes read are the file's", what,
                  threads, cold ? ", cold" : "");
        size_t known = 0;
        for (size_t i = 0; i < onnxio_archive_entry_count(a); i++) {
            const onnxio_archive_entry *e = onnxio_archive_entry_at(a, i);
            uint32_t crc;
            if (!onnxio__archive_known_crc(a, e, &crc)) {
                CHECK_MSG(!big_entry || strcmp(e->name, big_entry) != 0, "%s: entry '%s' has its CRC-32 from the reads",
                          what, e->name);
                continue;
            }
            known++;
            CHECK_MSG(e->method == ONNXIO_ARCHIVE_STORED, "%s: only stored entries", what);
            uint32_t want = (uint32_t)crc32(0, file + e->data_offset, (uInt)e->size);
            CHECK_MSG(crc == want && crc == e->crc32, "%s, %d threads: entry '%s' (%llu bytes at %llu): CRC-32 %08x from the reads, zlib's %08x",
                      what, threads, e->name, (unsigned long long)e->size, (unsigned long long)e->data_offset, crc, want);
        }
        CHECK_MSG(known > 0, "%s: some CRC-32s come from the reads", what);
        onnxio_archive_close(a);
    }
    onnxio__archive_one_read_max = ONNXIO__WHOLE_MAX;
    free(file);
}

static void test_read_whole(const char *dir)
{
    tu_begin("archive: read whole, CRC-32s from the reads");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = build_model(a, "whole");
    char *path = tu_path_join(dir, "whole.onnxz");
    save_ok(m, path, 2, 0);
    check_read_whole("onnxio's archive", path, "alpha");
    /* Another writer's: unaligned, a deflated entry, empty and one-byte
     * entries, neighbours in one 4 KiB block, a 9 MiB entry that spans two
     * CRC pieces and ends mid-block. */
    static const size_t sizes[] = {0, 1, 511, 4096, 5000, 70001, BIG_SIZE};
    uint8_t *big = malloc(BIG_SIZE);
    fill_pattern(big, BIG_SIZE, 77);
    tu_zsrc e[9];
    char names[9][16];
    size_t k = 0;
    for (; k < sizeof sizes / sizeof sizes[0]; k++) {
        snprintf(names[k], sizeof names[k], "e%zu", k);
        e[k] = (tu_zsrc){names[k], big + k * 13, sizes[k] - (sizes[k] == BIG_SIZE ? 13 * k : 0), 0, 0};
    }
    e[k++] = (tu_zsrc){"deflated", big, 300000, 1, 0};
    onnxio_buffer *mb = NULL;
    external_model_bytes("e4", "0", "5000", 5000, &mb);
    e[k++] = (tu_zsrc){"__MODEL_PROTO", onnxio_buffer_data(mb), onnxio_buffer_size(mb), 0, 0};
    tu_bytes b = {0};
    tu_zip_build(&b, e, k);
    char *other = tu_path_join(dir, "other.onnxz");
    CHECK(tu_write_file(other, b.data, b.size));
    check_read_whole("another writer's archive", other, "e6");
    /* A copy load of it, cold, gives the entry's bytes. */
    tu_evict(other);
    onnxio_parse_options o = popts(false, 2, ONNXIO_DEFAULT);
    onnxio_arena *la = onnxio_arena_new();
    onnxio_ModelProto *lm = NULL;
    if (CHECK_STATUS(onnxio_load_model(other, &o, la, &lm), ONNXIO_OK) && CHECK(lm->graph && lm->graph->initializer.size == 1)) {
        onnxio_TensorProto *t = lm->graph->initializer.data[0];
        CHECK(t->raw_data.size == 5000 && memcmp(t->raw_data.data, big + 4 * 13, 5000) == 0);
    }
    onnxio_arena_unref(la);
    tu_bytes_free(&b);
    onnxio_buffer_unref(mb);
    free(big);
    unlink(other);
    unlink(path);
    free(other);
    free(path);
    onnxio_arena_unref(a);
    tu_end();
}

/* A copy load of an archive that is not in the page cache reads the file
 * whole, directly, into one buffer laid out as the file
 * (onnxio__archive_read), and each tensor takes its entry's bytes there:
 * the payloads are the model's, 64-byte aligned, writable, the file is
 * left out of the page cache (the reads went around it), a tensor's memory
 * goes when the tensor does, and two tensors of one entry do not share
 * bytes. */
static void test_cold_read(const char *dir)
{
    tu_begin("archive: a cold copy load reads the file whole");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = build_model(a, "cold");
    char *path = tu_path_join(dir, "cold.onnxz");
    save_ok(m, path, 2, 0);
    tu_evict(path);
    bool cold = file_cold(path), direct = file_direct(path);
    if (!cold) tu_skip("the page cache keeps %s after posix_fadvise(DONTNEED), or cannot say: loads here are warm", path);
    else if (!direct) tu_skip("no O_DIRECT on this file system: the archive is read whole through the page cache");
    struct stat st;
    CHECK(stat(path, &st) == 0);
    onnxio_archive *ar = NULL;
    CHECK_STATUS(onnxio_archive_open(path, &ar), ONNXIO_OK);
    const onnxio_archive_entry *ea = ar ? onnxio_archive_find(ar, "alpha") : NULL, *eb = ar ? onnxio_archive_find(ar, "bravo") : NULL;
    for (int threads = 1; threads <= 4; threads *= 2) {
        tu_evict(path);
        onnxio_parse_options o = popts(false, threads, ONNXIO_DEFAULT);
        onnxio_arena *la = onnxio_arena_new();
        onnxio_ModelProto *lm = NULL;
        char *what = tu_strdup_printf("cold copy load, %d threads", threads);
        if (CHECK_STATUS(onnxio_load_model(path, &o, la, &lm), ONNXIO_OK)) {
            check_payloads(lm, what);
            for (size_t i = 0; i < N_PAYLOADS; i++) {
                onnxio_TensorProto *t = find_tensor(lm, payloads[i].name);
                if (!t || !payloads[i].entry) continue;
                CHECK_MSG((uintptr_t)t->raw_data.data % 64 == 0 && onnxio_buffer_is_allocated(t->raw_data.owner),
                          "%s: '%s' is 64-byte aligned and the load's own memory", what, payloads[i].name);
            }
            /* Laid out as the file: two payloads lie as far apart in
             * memory as in the file. */
            onnxio_TensorProto *ta = find_tensor(lm, "alpha"), *tb = find_tensor(lm, "bravo");
            if (cold && CHECK(ea && eb && ta && tb))
                CHECK_MSG(tb->raw_data.data - ta->raw_data.data == (ptrdiff_t)(eb->data_offset - ea->data_offset),
                          "%s: 'alpha' and 'bravo' lie in one buffer laid out as the file", what);
            uint64_t cached = file_cached(path);
            if (cold && direct && cached != UINT64_MAX)
                CHECK_MSG(cached < (uint64_t)st.st_size / 4, "%s: the file stays out of the page cache (%llu of %llu bytes cached)",
                          what, (unsigned long long)cached, (unsigned long long)st.st_size);
        }
        free(what);
        onnxio_arena_unref(la);
    }
    onnxio_archive_close(ar);
    /* A tensor's memory goes with it: the 9 MiB of 'alpha'. */
    tu_evict(path);
    onnxio_arena *la = onnxio_arena_new();
    onnxio_ModelProto *lm = NULL;
    onnxio_parse_options o = popts(false, 2, ONNXIO_DEFAULT);
    if (CHECK_STATUS(onnxio_load_model(path, &o, la, &lm), ONNXIO_OK)) {
        onnxio_TensorProto *t = find_tensor(lm, "alpha");
        uint64_t before = rss_anon();
        if (CHECK(t) && before) {
            /* every page of it resident first */
            volatile uint8_t sum = 0;
            for (size_t i = 0; i < t->raw_data.size; i += 4096) sum = (uint8_t)(sum + t->raw_data.data[i]);
            before = rss_anon();
            onnxio_span_clear(&t->raw_data);
            uint64_t after = rss_anon();
            CHECK_MSG(after + 8 * 1024 * 1024 <= before, "clearing 'alpha' (9 MiB) gives its memory back: RssAnon %llu -> %llu",
                      (unsigned long long)before, (unsigned long long)after);
        } else if (!before) {
            tu_skip("clearing a tensor gives its memory back: no RssAnon in /proc/self/status here");
        }
    }
    onnxio_arena_unref(la);
    /* Two tensors of one entry: the model replaced by one where 'alpha2'
     * names entry 'alpha' too; each gets the bytes, not the same bytes.
     * The model replaced is a no_copy load's, alive through the replace;
     * a copy load's on Windows, which refuses to shrink a mapped file
     * (the refusal is checked in test_replace). */
#ifdef _WIN32
    o = popts(false, 1, ONNXIO_DEFAULT);
#else
    o = popts(true, 1, ONNXIO_DEFAULT);
#endif
    o.load_external_data = ONNXIO_OFF;
    la = onnxio_arena_new();
    lm = NULL;
    if (CHECK_STATUS(onnxio_load_model(path, &o, la, &lm), ONNXIO_OK)) {
        onnxio_TensorProto *t = find_tensor(lm, "alpha");
        onnxio_TensorProto *t2 = onnxio_list_add(la, &lm->graph->initializer, &onnxio_desc_TensorProto);
        CHECK_STATUS(onnxio_message_copy(la, t2, t), ONNXIO_OK);
        tu_set_string(la, t2, &t2->name, ONNXIO_FIELD_TensorProto_name, "alpha2");
        onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
        CHECK_STATUS(onnxio_archive_replace_model(path, lm, &so), ONNXIO_OK);
    }
    onnxio_arena_unref(la);
    tu_evict(path);
    la = onnxio_arena_new();
    lm = NULL;
    o = popts(false, 2, ONNXIO_DEFAULT);
    if (CHECK_STATUS(onnxio_load_model(path, &o, la, &lm), ONNXIO_OK)) {
        onnxio_TensorProto *t = find_tensor(lm, "alpha"), *t2 = find_tensor(lm, "alpha2");
        if (CHECK(t && t2)) {
            CHECK(t->raw_data.size == BIG_SIZE && memcmp(t->raw_data.data, payloads[0].data, BIG_SIZE) == 0);
            CHECK(t2->raw_data.size == BIG_SIZE && memcmp(t2->raw_data.data, payloads[0].data, BIG_SIZE) == 0);
            CHECK_MSG(t->raw_data.data != t2->raw_data.data, "two tensors of one entry have bytes of their own");
        }
    }
    onnxio_arena_unref(la);
    unlink(path);
    free(path);
    onnxio_arena_unref(a);
    tu_end();
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    make_payloads();
    char *dir = tu_make_temp_dir("archive");
    test_roundtrip(dir);
    test_alignment(dir);
    test_no_copy(dir);
    test_crc(dir);
    test_read_whole(dir);
    test_cold_read(dir);
    test_headers_unmapped(dir);
    test_hostile(dir);
    test_open_tail(dir);
    test_scratch(dir);
    test_subrange_crc();
    test_crc_libraries();
    test_replace(dir);
    test_save_errors(dir);
    tu_remove_tree(dir);
    free(dir);
    free_payloads();
    return tu_finish();
}
