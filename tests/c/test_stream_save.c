/* Streaming saves (onnxio_save_streaming): a model's structure
 * plus tensors from a source, in any order, must give the bytes that
 * onnxio_save_model writes for the full model (every file: the model, data
 * files, the archive) in every layout; wrong tensors are refused naming
 * them, leaving the old files and no temporary file; and every allocation
 * and file operation failing in turn, or the process killed before each
 * file operation, leaves the old files or the new ones, whole. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"
#include "testutil.h"

/* ---- the model ---------------------------------------------------------------- */

static onnxio_TensorProto *add_tensor(onnxio_arena *a, onnxio_GraphProto *g, const char *name, int data_type,
                                      const int64_t *dims, size_t ndims, unsigned seed)
{
    onnxio_TensorProto *t = onnxio_list_add(a, &g->initializer, &onnxio_desc_TensorProto);
    tu_set_string(a, t, &t->name, ONNXIO_FIELD_TensorProto_name, name);
    for (size_t i = 0; i < ndims; i++) *(int64_t *)onnxio_array_append(a, &t->dims, sizeof(int64_t)) = dims[i];
    t->data_type = data_type;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    uint64_t bytes = 0;
    if (onnxio_tensor_raw_size(t, &bytes) == 1) tu_set_pattern_raw_data(t, (size_t)bytes, seed);
    return t;
}

/* The full model: float, float16 (2-D), packed int4 (odd count), a tiny
 * tensor that stays inline, an empty one, one in a subgraph, names that file
 * names cannot keep. */
/* The seed of the model the streaming saves write (the same in a crash
 * child on Windows, which makes its own). */
#define FULL_SEED 1

static onnxio_ModelProto *full_model(onnxio_arena *a, unsigned seed)
{
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 8;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    tu_set_string(a, m->graph, &m->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
    add_tensor(a, m->graph, "layer/0.weight", ONNXIO_TensorProto_DataType_FLOAT, (int64_t[]){1536}, 1, seed);
    add_tensor(a, m->graph, "h16", ONNXIO_TensorProto_DataType_FLOAT16, (int64_t[]){33, 70}, 2, seed + 1);
    add_tensor(a, m->graph, "q4", ONNXIO_TensorProto_DataType_INT4, (int64_t[]){4099}, 1, seed + 2);
    add_tensor(a, m->graph, "tiny", ONNXIO_TensorProto_DataType_FLOAT, (int64_t[]){3}, 1, seed + 3);
    add_tensor(a, m->graph, "empty", ONNXIO_TensorProto_DataType_FLOAT, (int64_t[]){0, 5}, 2, seed + 4);
    add_tensor(a, m->graph, "kept", ONNXIO_TensorProto_DataType_INT8, (int64_t[]){5000}, 1, seed + 5);
    add_tensor(a, tu_add_subgraph(a, m->graph, NULL), "sub", ONNXIO_TensorProto_DataType_FLOAT, (int64_t[]){2304},
               1, seed + 6);
    return m;
}

/* ---- the source ------------------------------------------------------------- */

typedef struct item {
    const char *name;
    const void *data;
    uint64_t size;
} item;

typedef struct source {
    item items[16];
    size_t count, next;
    int fail_at; /* 1-based call that returns -1 (0: none) */
    int calls;
} source;

static int source_fn(void *user, onnxio_stream_tensor *out)
{
    source *s = user;
    if (++s->calls == s->fail_at) return -1;
    if (s->next == s->count) return 0;
    const item *it = &s->items[s->next++];
    out->name = it->name;
    out->data = it->data;
    out->size = it->size;
    return 1;
}

static void collect(onnxio_message *msg, source *src, onnxio_ModelProto *structure);

/* The structure: a clone of `full` whose initializers, except "kept", have
 * no raw_data; the source gives their bytes from `full`, in reverse order. */
typedef struct streaming {
    onnxio_arena *arena;
    onnxio_ModelProto *structure;
    source src;
} streaming;

static onnxio_status visit_strip(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    (void)parent;
    (void)via;
    (void)ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    if (strcmp(onnxio__tensor_name(t), "kept") != 0)
        onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_raw_data]);
    return ONNXIO_OK;
}

static onnxio_status visit_collect(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via,
                                   void *ctx)
{
    (void)parent;
    (void)via;
    source *src = ctx;
    onnxio_TensorProto *t = (onnxio_TensorProto *)msg;
    if (strcmp(onnxio__tensor_name(t), "kept") == 0) return ONNXIO_OK;
    src->items[src->count++] = (item){onnxio__tensor_name(t), t->raw_data.data, t->raw_data.size};
    return ONNXIO_OK;
}

static void collect(onnxio_message *msg, source *src, onnxio_ModelProto *structure)
{
    src->count = 0;
    onnxio__visit(msg, &onnxio_desc_TensorProto, visit_collect, src);
    for (size_t i = 0; i < src->count / 2; i++) {
        item t = src->items[i];
        src->items[i] = src->items[src->count - 1 - i];
        src->items[src->count - 1 - i] = t;
    }
    onnxio__visit(&structure->base, &onnxio_desc_TensorProto, visit_strip, NULL);
}

static void streaming_make(streaming *st, onnxio_ModelProto *full)
{
    memset(st, 0, sizeof *st);
    st->arena = onnxio_arena_new();
    onnxio_ModelProto *copy = NULL;
    onnxio_status s = onnxio__clone(st->arena, full, (void **)&copy);
    CHECK_STATUS(s, ONNXIO_OK);
    st->structure = copy;
    collect(&full->base, &st->src, copy);
}

/* ---- files ---------------------------------------------------------------- */

/* A load of `model`, its result dropped: it finishes or undoes a save that
 * died (the load's recovery). */
static void next_load(const char *model)
{
    onnxio_arena *b = onnxio_arena_new();
    onnxio_ModelProto *m;
    onnxio_load_model(model, NULL, b, &m);
    onnxio_arena_unref(b);
}

static void restore(const char *dir, const tu_snapshot *s)
{
    tu_remove_tree(dir);
    mkdir(dir, 0777);
    for (size_t i = 0; i < s->names.size; i++) {
        char *p = tu_path_join(dir, s->names.items[i]);
        tu_write_file(p, s->bytes[i], s->sizes[i]);
        free(p);
    }
}

/* ---- layouts ------------------------------------------------------------------ */

typedef struct layout {
    const char *what;
    const char *file; /* the model's name */
    onnxio_serialize_options opts;
} layout;

static size_t layouts(layout *out)
{
    size_t n = 0;
    onnxio_serialize_options o = ONNXIO_SERIALIZE_OPTIONS_INIT;
    o.num_threads = 1;
    out[n++] = (layout){"one .onnx file, inline payloads", "m.onnx", o};
    layout l = {"external data, one file", "m.onnx", o};
    l.opts.external_data.location = "m.data";
    out[n++] = l;
    l.what = "external data, one file, no alignment, checksum";
    l.opts.alignment = 1;
    l.opts.external_data.checksum = true;
    out[n++] = l;
    l = (layout){"external data, parts of at most 8 KiB", "m.onnx", o};
    l.opts.external_data.location = "m.data";
    l.opts.external_data.max_file_size = 8192;
    out[n++] = l;
    l = (layout){"external data, one file per tensor", "m.onnx", o};
    l.opts.external_data.all_tensors_to_one_file = ONNXIO_OFF;
    out[n++] = l;
    l = (layout){"external data, every payload (threshold 1), threads", "m.onnx", o};
    l.opts.external_data.location = "m.data";
    l.opts.external_data.size_threshold = 1;
    l.opts.num_threads = 4;
    out[n++] = l;
    l = (layout){".onnxz archive", "m.onnxz", o};
    out[n++] = l;
    l = (layout){".onnxz archive, every payload, fsync off", "m.onnxz", o};
    l.opts.external_data.size_threshold = 1;
    l.opts.fsync = ONNXIO_OFF;
    out[n++] = l;
    return n;
}

static char *root;

/* ---- 1. the same bytes as onnxio_save_model ----------------------------------------- */

static void test_identical(void)
{
    layout ls[16];
    size_t n = layouts(ls);
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *full = full_model(a, 1);
    char *dir_a = tu_path_join(root, "a"), *dir_b = tu_path_join(root, "b");
    for (size_t k = 0; k < n; k++) {
        tu_begin("streamed = saved whole: %s", ls[k].what);
        tu_remove_tree(dir_a);
        tu_remove_tree(dir_b);
        mkdir(dir_a, 0777);
        mkdir(dir_b, 0777);
        char *pa = tu_path_join(dir_a, ls[k].file), *pb = tu_path_join(dir_b, ls[k].file);
        CHECK_STATUS(onnxio_save_model(full, pa, &ls[k].opts), ONNXIO_OK);
        streaming st;
        streaming_make(&st, full);
        CHECK_STATUS(onnxio_save_streaming(st.structure, pb, source_fn, &st.src, &ls[k].opts), ONNXIO_OK);
        CHECK_EQ_U64(st.src.next, st.src.count);
        tu_snapshot sa, sb;
        tu_snapshot_take(dir_a, &sa);
        tu_snapshot_take(dir_b, &sb);
        char why[256] = "";
        CHECK_MSG(sa.names.size >= 1, "nothing saved");
        CHECK_MSG(tu_snapshot_same(&sb, &sa, why, sizeof why), "%s", why);
        /* The structure is not modified: its placeholders still have no
         * raw_data. */
        CHECK(!onnxio_has(st.structure->graph->initializer.data[0], ONNXIO_FIELD_TensorProto_raw_data));
        /* And it loads back equal to the full model. */
        onnxio_arena *b = onnxio_arena_new();
        onnxio_ModelProto *back = NULL;
        onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
        po.verify_checksum = true;
        CHECK_STATUS(onnxio_load_model(pb, &po, b, &back), ONNXIO_OK);
        CHECK(back && tu_equal_as_loaded(back, full));
        onnxio_arena_unref(b);
        tu_snapshot_free(&sa);
        tu_snapshot_free(&sb);
        onnxio_arena_unref(st.arena);
        free(pa);
        free(pb);
        tu_end();
    }
    free(dir_a);
    free(dir_b);
    onnxio_arena_unref(a);
}

/* ---- 2. errors ------------------------------------------------------------------ */

static onnxio_status run_case(const layout *l, streaming *st, const char *dir)
{
    char *p = tu_path_join(dir, l->file);
    onnxio_status s = onnxio_save_streaming(st->structure, p, source_fn, &st->src, &l->opts);
    free(p);
    return s;
}

static void test_errors(void)
{
    layout ls[16];
    size_t n = layouts(ls);
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *old_m = full_model(a, 7), *full = full_model(a, FULL_SEED);
    char *dir = tu_path_join(root, "err");
    static const uint8_t junk[65536];
    for (size_t k = 0; k < n; k++) {
        tu_begin("refused, old files kept: %s", ls[k].what);
        tu_remove_tree(dir);
        mkdir(dir, 0777);
        char *p = tu_path_join(dir, ls[k].file);
        CHECK_STATUS(onnxio_save_model(old_m, p, &ls[k].opts), ONNXIO_OK);
        free(p);
        tu_snapshot old;
        tu_snapshot_take(dir, &old);
        for (int c = 0; c < 7; c++) {
            streaming st;
            streaming_make(&st, full);
            const char *want = NULL;
            switch (c) {
            case 0: /* a byte count that does not fit */
                st.src.items[1].size--;
                want = st.src.items[1].name;
                break;
            case 1: /* a tensor given twice */
                st.src.items[st.src.count] = st.src.items[0];
                st.src.count++;
                want = st.src.items[0].name;
                break;
            case 2: /* a name that is no placeholder */
                st.src.items[2].name = "kept";
                want = "kept";
                break;
            case 3: /* one never given */
                st.src.count--;
                want = st.src.items[st.src.count].name;
                break;
            case 4: /* the source fails half-way */
                st.src.fail_at = 3;
                want = "source failed";
                break;
            case 5: /* two placeholders with one name */
                tu_set_string(st.arena, st.structure->graph->initializer.data[1], 
                              &((onnxio_TensorProto *)st.structure->graph->initializer.data[1])->name,
                              ONNXIO_FIELD_TensorProto_name, "h16x");
                tu_set_string(st.arena, st.structure->graph->initializer.data[0],
                              &((onnxio_TensorProto *)st.structure->graph->initializer.data[0])->name,
                              ONNXIO_FIELD_TensorProto_name, "h16x");
                want = "h16x";
                break;
            case 6: { /* a placeholder of no fixed size */
                onnxio_TensorProto *t = st.structure->graph->initializer.data[1];
                t->data_type = ONNXIO_TensorProto_DataType_STRING;
                want = "h16";
                break;
            }
            }
            (void)junk;
            onnxio_status s = run_case(&ls[k], &st, dir);
            CHECK_MSG(s == ONNXIO_ERR_STREAM, "case %d: %s (%s)", c, onnxio_status_name(s), onnxio_last_error());
            CHECK_MSG(strstr(onnxio_last_error(), want) != NULL, "case %d: the message does not name '%s': %s", c,
                      want, onnxio_last_error());
            char why[256] = "";
            CHECK_MSG(tu_snapshot_matches(dir, &old, why, sizeof why), "case %d: %s", c, why);
            onnxio_arena_unref(st.arena);
        }
        tu_snapshot_free(&old);
        tu_end();
    }
    /* Arguments, and a target that is not a regular file. */
    tu_begin("arguments");
    streaming st;
    streaming_make(&st, full);
    CHECK_STATUS(onnxio_save_streaming(NULL, "x.onnx", source_fn, &st.src, NULL), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxio_save_streaming(st.structure, "x.onnx", NULL, &st.src, NULL), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxio_save_streaming(st.structure, "/dev/null", source_fn, &st.src, NULL), ONNXIO_ERR_IO);
    onnxio_arena_unref(st.arena);
    tu_end();
    free(dir);
    onnxio_arena_unref(a);
}

/* ---- 3. every allocation and file operation failing in turn ------------------------ */

#define SWEEP_OPS                                                                                                    \
    ((1u << ONNXIO__OP_ALLOC) | (1u << ONNXIO__OP_OPEN) | (1u << ONNXIO__OP_READ) | (1u << ONNXIO__OP_WRITE) |       \
     (1u << ONNXIO__OP_SYNC) | (1u << ONNXIO__OP_TRUNCATE) | (1u << ONNXIO__OP_RENAME) | (1u << ONNXIO__OP_UNLINK) | \
     (1u << ONNXIO__OP_MAP))
#define MUTATING_OPS                                                                                              \
    ((1u << ONNXIO__OP_OPEN) | (1u << ONNXIO__OP_WRITE) | (1u << ONNXIO__OP_SYNC) | (1u << ONNXIO__OP_TRUNCATE) | \
     (1u << ONNXIO__OP_RENAME) | (1u << ONNXIO__OP_UNLINK))

/* A crash child: the streaming save of layout `k` of the full model into
 * `dir`, killed at its `i`th mutating operation. */
typedef struct stream_crash {
    const char *dir;
    int k;
    long i;
} stream_crash;

static void stream_crash_child(void *arg)
{
    const stream_crash *r = arg;
    layout ls[16];
    if ((size_t)r->k >= layouts(ls)) _exit(2);
    onnxio_arena *a = onnxio_arena_new();
    streaming st;
    streaming_make(&st, full_model(a, FULL_SEED));
    char *p = tu_path_join(r->dir, ls[r->k].file);
    onnxio__fault_set(MUTATING_OPS, r->i, true, false);
    onnxio_status s = onnxio_save_streaming(st.structure, p, source_fn, &st.src, &ls[r->k].opts);
    _exit(s == ONNXIO_OK ? 0 : 1);
}

static void test_faults(void)
{
    layout ls[16];
    size_t n = layouts(ls);
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *old_m = full_model(a, 7), *full = full_model(a, FULL_SEED);
    char *dir = tu_path_join(root, "faults");
    for (size_t k = 0; k < n; k++) {
        tu_begin("faults: %s", ls[k].what);
        tu_remove_tree(dir);
        mkdir(dir, 0777);
        char *p = tu_path_join(dir, ls[k].file);
        CHECK_STATUS(onnxio_save_model(full, p, &ls[k].opts), ONNXIO_OK);
        tu_snapshot new_files;
        tu_snapshot_take(dir, &new_files);
        restore(dir, &(tu_snapshot){0});
        CHECK_STATUS(onnxio_save_model(old_m, p, &ls[k].opts), ONNXIO_OK);
        tu_snapshot old;
        tu_snapshot_take(dir, &old);
        streaming st;
        streaming_make(&st, full);
        st.src.next = 0;
        onnxio__fault_set(SWEEP_OPS, 0, false, false);
        CHECK_STATUS(onnxio_save_streaming(st.structure, p, source_fn, &st.src, &ls[k].opts), ONNXIO_OK);
        long count = onnxio__fault_counted();
        onnxio__fault_set(0, 0, false, false);
        long clean = 0, tolerated = 0;
        for (long i = 1; i <= count; i++) {
            restore(dir, &old);
            st.src.next = 0;
            st.src.calls = 0;
            long live0 = onnxio__alloc_live();
            onnxio__clear_error();
            onnxio__fault_set(SWEEP_OPS, i, false, false);
            onnxio_status s = onnxio_save_streaming(st.structure, p, source_fn, &st.src, &ls[k].opts);
            bool hit = onnxio__fault_hit();
            onnxio__fault_set(0, 0, false, false);
            if (!hit) continue;
            char why[256] = "";
            if (s) {
                clean++;
                CHECK_MSG(onnxio_last_error()[0] != '\0', "point %ld: no message", i);
                bool ok = tu_snapshot_matches(dir, &old, why, sizeof why);
                if (!ok && strstr(onnxio_last_error(), "committed")) {
                    next_load(p); /* finishes the committed save */
                    ok = tu_snapshot_matches(dir, &new_files, why, sizeof why);
                }
                CHECK_MSG(ok, "point %ld failed (%s) but the files changed: %s", i, onnxio_last_error(), why);
            } else {
                tolerated++;
                bool ok = tu_snapshot_matches(dir, &new_files, why, sizeof why);
                if (!ok) { /* a journal whose removal failed: the next load removes it */
                    next_load(p);
                    ok = tu_snapshot_matches(dir, &new_files, why, sizeof why);
                }
                CHECK_MSG(ok, "point %ld tolerated, but the files are wrong: %s", i, why);
            }
            CHECK_MSG(onnxio__alloc_live() == live0, "point %ld: %ld blocks leaked", i, onnxio__alloc_live() - live0);
        }
        tu_note("%ld points: %ld clean errors, %ld tolerated", count, clean, tolerated);
        CHECK(clean > 10);

        /* Killed before each file operation: the next load sees the old
         * files or the new ones, whole. */
        restore(dir, &old);
        st.src.next = 0;
        onnxio__fault_set(MUTATING_OPS, 0, false, false);
        CHECK_STATUS(onnxio_save_streaming(st.structure, p, source_fn, &st.src, &ls[k].opts), ONNXIO_OK);
        long m_count = onnxio__fault_counted();
        onnxio__fault_set(0, 0, false, false);
        long saw_old = 0, saw_new = 0, empty_journals = 0;
        for (long i = 1; i <= m_count; i++) {
            restore(dir, &old);
            st.src.next = 0;
            char karg[32], iarg[32];
            snprintf(karg, sizeof karg, "%zu", k);
            snprintf(iarg, sizeof iarg, "%ld", i);
            const char *args[] = {".", "--crash-child", dir, karg, iarg, NULL};
            stream_crash run = {dir, (int)k, i};
            int code = tu_crash_child(stream_crash_child, &run, args);
            CHECK_MSG(code == 137, "crash point %ld: the child ended with code %d", i, code);
            onnxio_arena *b = onnxio_arena_new();
            onnxio_ModelProto *back = NULL;
            onnxio_status s = onnxio_load_model(p, NULL, b, &back);
            CHECK_MSG(s == ONNXIO_OK, "crash point %ld: the next load fails: %s", i, onnxio_last_error());
            bool is_new = back && tu_equal_as_loaded(back, full), is_old = back && tu_equal_as_loaded(back, old_m);
            if (is_old && !is_new) empty_journals += tu_take_empty_journal(p);
            char why[256] = "";
            bool files_ok = tu_snapshot_matches(dir, is_new ? &new_files : &old, why, sizeof why);
            CHECK_MSG(is_new || is_old, "crash point %ld: neither the old model nor the new one", i);
            CHECK_MSG(files_ok, "crash point %ld: the files are not the %s ones: %s", i, is_new ? "new" : "old", why);
            saw_old += is_old;
            saw_new += is_new;
            onnxio_arena_unref(b);
        }
        tu_note("%ld crash points: old %ld (%ld with an empty journal left), new %ld", m_count, saw_old, empty_journals,
                saw_new);
        CHECK(saw_old > 0 && saw_new > 0);
        onnxio_arena_unref(st.arena);
        tu_snapshot_free(&old);
        tu_snapshot_free(&new_files);
        free(p);
        tu_end();
    }
    free(dir);
    onnxio_arena_unref(a);
}

int main(int argc, char **argv)
{
    /* A crash child on Windows (tu_crash_child): REPO --crash-child DIR K I. */
    if (argc == 6 && strcmp(argv[2], "--crash-child") == 0) {
        stream_crash run = {argv[3], atoi(argv[4]), atol(argv[5])};
        stream_crash_child(&run);
    }
    root = tu_make_temp_dir("onnxio-stream-");
    test_identical();
    test_errors();
    test_faults();
    tu_remove_tree(root);
    free(root);
    return tu_finish();
}
