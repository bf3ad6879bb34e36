/* Fault injection, as SQLite's test_malloc.c and its I/O error
 * injection do it: every allocation point and every open, read, write,
 * fsync, ftruncate, rename, unlink and mmap of loads, saves, archives and
 * model replacement is made to fail in turn (src/base/os.c counts them), and each
 * time the result must be a clean error (a status and a message), no leak
 * (every block onnxio allocated is freed), the existing outputs
 * byte-identical and no temporary file left. Then the save protocol's
 * crash points: the saving process is killed before each of its file
 * operations, and the next load must see the old model and its data or
 * the new ones, whole, with nothing left behind.
 *
 * Models: a synthetic one (initializers, a subgraph, names that need
 * cleaning), and a real one from ../shared/corpus when it is there. Every
 * sweep runs single-threaded, so that its points are the same every run.
 * The counts of points are printed. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"
#include "common.h" /* cli_main: the onnxio command, in-process */
#include "testutil.h"

#define IO_OPS                                                                                                    \
    ((1u << ONNXIO__OP_OPEN) | (1u << ONNXIO__OP_READ) | (1u << ONNXIO__OP_WRITE) | (1u << ONNXIO__OP_SYNC) |  \
     (1u << ONNXIO__OP_TRUNCATE) | (1u << ONNXIO__OP_RENAME) | (1u << ONNXIO__OP_UNLINK) | (1u << ONNXIO__OP_MAP))
#define ALLOC_OPS (1u << ONNXIO__OP_ALLOC)
/* What a crash can interrupt: the operations that change files. */
#define MUTATING_OPS                                                                                              \
    ((1u << ONNXIO__OP_OPEN) | (1u << ONNXIO__OP_WRITE) | (1u << ONNXIO__OP_SYNC) | (1u << ONNXIO__OP_TRUNCATE) | \
     (1u << ONNXIO__OP_RENAME) | (1u << ONNXIO__OP_UNLINK))

/* ---- the models --------------------------------------------------------------- */

static onnxio_TensorProto *add_tensor(onnxio_arena *a, onnxio_GraphProto *g, const char *name, int64_t n, unsigned seed)
{
    onnxio_TensorProto *t = onnxio_list_add(a, &g->initializer, &onnxio_desc_TensorProto);
    tu_set_string(a, t, &t->name, ONNXIO_FIELD_TensorProto_name, name);
    *(int64_t *)onnxio_array_append(a, &t->dims, sizeof(int64_t)) = n;
    t->data_type = ONNXIO_TensorProto_DataType_FLOAT;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    tu_set_pattern_raw_data(t, (size_t)n * 4, seed);
    return t;
}

/* Initializers of 6 KiB, 2 KiB, 12 bytes and 9 KiB (one in a subgraph,
 * names with characters file names cannot keep). */
static onnxio_ModelProto *synthetic_model(onnxio_arena *a, unsigned seed)
{
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 8;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    onnxio_OperatorSetIdProto *op = onnxio_list_add(a, &m->opset_import, &onnxio_desc_OperatorSetIdProto);
    op->version = 17;
    onnxio_set_has(op, ONNXIO_FIELD_OperatorSetIdProto_version);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    tu_set_string(a, m->graph, &m->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
    add_tensor(a, m->graph, "layer/0.weight", 1536, seed);
    add_tensor(a, m->graph, "layer:0 bias", 512, seed + 1);
    add_tensor(a, m->graph, "tiny", 3, seed + 2);
    add_tensor(a, tu_add_subgraph(a, m->graph, NULL), "sub", 2304, seed + 3);
    return m;
}

/* ---- scenarios -------------------------------------------------------------------- */

typedef struct world {
    const char *repo; /* the source tree (the test's argument) */
    char *dir;       /* inputs */
    char *out;       /* outputs of saves, compared after every failure */
    onnxio_ModelProto *model;
    onnxio_arena *arena;
    char *model_path, *ext_path, *archive_path, *deflated_path, *replace_path;
    char *cold_path; /* an archive of 150 KiB, past the 64 KiB its tail read takes */
} world;

static world W;

static onnxio_parse_options serial_load(bool no_copy)
{
    onnxio_parse_options o = ONNXIO_PARSE_OPTIONS_INIT;
    o.num_threads = 1;
    o.no_copy = no_copy;
    o.verify_checksum = true;
    return o;
}

static onnxio_serialize_options serial_save(void)
{
    onnxio_serialize_options o = ONNXIO_SERIALIZE_OPTIONS_INIT;
    o.num_threads = 1;
    return o;
}

static onnxio_status load(const char *path, bool no_copy)
{
    onnxio_arena *a = onnxio_arena_new();
    if (!a) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "test: no arena");
    onnxio_parse_options o = serial_load(no_copy);
    onnxio_ModelProto *m;
    onnxio_status s = onnxio_load_model(path, &o, a, &m);
    onnxio_arena_unref(a);
    return s;
}

static onnxio_status load_plain_copy(void) { return load(W.model_path, false); }
static onnxio_status load_plain_no_copy(void) { return load(W.model_path, true); }
static onnxio_status load_external_copy(void) { return load(W.ext_path, false); }
static onnxio_status load_external_no_copy(void) { return load(W.ext_path, true); }
static onnxio_status load_archive_copy(void) { return load(W.archive_path, false); }
static onnxio_status load_archive_no_copy(void) { return load(W.archive_path, true); }
static onnxio_status load_deflated(void) { return load(W.deflated_path, false); }
/* Evicted from the page cache first: the file read whole, directly, the
 * archive by onnxio__archive_read, the single file by onnxio__read_whole
 * with its payloads aligned in place (where the page cache cannot be
 * emptied, the load is the warm one). */
static onnxio_status load_cold(const char *path)
{
    tu_evict(path);
    return load(path, false);
}
static onnxio_status load_archive_cold(void) { return load_cold(W.cold_path); }
static onnxio_status load_plain_cold(void) { return load_cold(W.model_path); }

static char *out_path(const char *name) { return tu_path_join(W.out, name); }

static onnxio_status save_with(const char *name, onnxio_serialize_options *o)
{
    char *p = out_path(name);
    onnxio_status s = onnxio_save_model(W.model, p, o);
    free(p);
    return s;
}

static onnxio_status save_plain(void)
{
    onnxio_serialize_options o = serial_save();
    return save_with("plain.onnx", &o);
}

static onnxio_status save_one_file(void)
{
    onnxio_serialize_options o = serial_save();
    o.external_data.location = "one.data";
    o.external_data.checksum = true;
    return save_with("one.onnx", &o);
}

static onnxio_status save_per_tensor(void)
{
    onnxio_serialize_options o = serial_save();
    o.external_data.all_tensors_to_one_file = ONNXIO_OFF;
    o.external_data.convert_attribute = true;
    return save_with("per.onnx", &o);
}

static onnxio_status save_split(void)
{
    onnxio_serialize_options o = serial_save();
    o.external_data.location = "split.data";
    o.external_data.max_file_size = 8192;
    o.alignment = 64;
    return save_with("split.onnx", &o);
}

static onnxio_status save_archive(void)
{
    onnxio_serialize_options o = serial_save();
    return save_with("model.onnxz", &o);
}

static onnxio_status replace_model(void)
{
    onnxio_arena *a = onnxio_arena_new();
    if (!a) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "test: no arena");
    onnxio_parse_options po = serial_load(false);
    po.load_external_data = ONNXIO_OFF;
    onnxio_ModelProto *m = NULL;
    char *p = out_path("replace.onnxz");
    onnxio_status s = onnxio_load_model(p, &po, a, &m);
    if (!s) {
        tu_set_string(a, m, &m->producer_name, ONNXIO_FIELD_ModelProto_producer_name, "replaced");
        onnxio_serialize_options so = serial_save();
        s = onnxio_archive_replace_model(p, m, &so);
    }
    free(p);
    onnxio_arena_unref(a);
    return s;
}

/* `onnxio ARGS...` in-process, its output thrown away: its exit status as
 * a status (0: OK; 1: the library's failure, whose message it printed). */
static onnxio_status command(const char *const *args, size_t n)
{
    char *argv[16];
    for (size_t i = 0; i < n; i++) argv[i] = (char *)args[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), err = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    int rc = cli_main((int)n, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    close(err);
    close(null);
    if (rc == 0) return ONNXIO_OK;
    /* The command printed the library's message; keep one for the check. */
    if (!onnxio_last_error()[0]) onnxio__fail(ONNXIO_ERR_IO, "onnxio exited with %d", rc);
    return rc == 2 ? ONNXIO_ERR_INVALID_ARGUMENT : ONNXIO_ERR_IO;
}

static onnxio_status convert_external(void)
{
    char *out = out_path("cv.onnx");
    const char *args[] = {"onnxio", "convert", W.ext_path, out, "--external-data", "cv.data", "--threads", "1",
                          "--checksum", "--verify-checksum", "--copy"};
    onnxio_status s = command(args, sizeof args / sizeof *args);
    free(out);
    return s;
}

static onnxio_status convert_archive(void)
{
    char *out = out_path("cv.onnxz");
    const char *args[] = {"onnxio", "convert", W.deflated_path, out, "--threads", "1"};
    onnxio_status s = command(args, sizeof args / sizeof *args);
    free(out);
    return s;
}

static onnxio_status text_and_copy(void)
{
    onnxio_buffer *b = NULL;
    onnxio_status s = onnxio_text_format(W.model, NULL, &b);
    onnxio_buffer_unref(b);
    if (s) return s;
    onnxio_arena *a = onnxio_arena_new();
    if (!a) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "test: no arena");
    void *c = onnxio_message_clone(a, W.model);
    if (!c) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "clone failed");
    onnxio_arena_unref(a);
    return s;
}

/* JSON and protobuf text format, written and read back (onnxio_text_parse's
 * allocations: arena, scratch buffer, payloads). */
static onnxio_status text_formats_round_trip(void)
{
    onnxio_status s = ONNXIO_OK;
    for (int style = ONNXIO_TEXT_PROTO; style <= ONNXIO_TEXT_JSON && !s; style++) {
        onnxio_text_options o = ONNXIO_TEXT_OPTIONS_INIT;
        o.style = (onnxio_text_style)style;
        onnxio_buffer *b = NULL;
        if ((s = onnxio_text_format(W.model, &o, &b))) break;
        onnxio_arena *a = onnxio_arena_new();
        void *back = NULL;
        if (!a) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "test: no arena");
        else s = onnxio_text_parse(&onnxio_desc_ModelProto, onnxio_buffer_data(b), onnxio_buffer_size(b), &o, a, &back);
        if (!s && onnxio_message_equal(back, W.model) != 1) s = onnxio__fail(ONNXIO_ERR_DECODE, "test: read back differs");
        onnxio_arena_unref(a);
        onnxio_buffer_unref(b);
    }
    return s;
}

/* ONNX's textual syntax read (onnxio_text_parse's allocations: arena,
 * scratch buffer, the copy of a long number), an ignored error included. */
static onnxio_status onnx_text_read(void)
{
    static const char text[] =
        "<ir_version: 10, opset_import: [\"\" : 21], doc_string: \"esc\\\"aped\">\n"
        "g (float[N] x, float[2] w = {0.10000000000000000000000000000000000000000000000000000000000000000001, 2})"
        " => (float[N] y) <int64[1] a = {1}, string[2] s = {\"p\", \"q\\\\\"}> {\n"
        "  y = If <then_branch = t () => (y) { y = Neg <l = [1, 2], f = [1.5, 2], n = \"x\"> (x) }> (x)\n}\n"
        "<domain: \"d\">\nF <a: int = \"s\", b> (x) => (y) { y = Identity(x) }\n";
    onnxio_text_options o = ONNXIO_TEXT_OPTIONS_INIT;
    o.style = ONNXIO_TEXT_ONNX;
    onnxio_arena *a = onnxio_arena_new();
    if (!a) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "test: no arena");
    void *m = NULL;
    onnxio_status s = onnxio_text_parse(&onnxio_desc_ModelProto, text, sizeof text - 1, &o, a, &m);
    const onnxio_ModelProto *model = m;
    if (!s && (model->graph->node.size != 1 || model->graph->initializer.size != 3 || model->functions.size != 1 ||
               model->functions.data[0]->attribute_proto.size != 1))
        s = onnxio__fail(ONNXIO_ERR_DECODE, "test: not the model the text holds");
    onnxio_arena_unref(a);
    return s;
}

typedef struct scenario {
    const char *name;
    onnxio_status (*run)(void);
    const char *writes; /* the main file it writes in W.out (NULL: it writes nothing) */
} scenario;

static const scenario scenarios[] = {
    {"load .onnx, copy", load_plain_copy, NULL},
    {"load .onnx, no_copy", load_plain_no_copy, NULL},
    {"load .onnx, copy, not in the page cache (read whole)", load_plain_cold, NULL},
    {"load with external data and checksums, copy", load_external_copy, NULL},
    {"load with external data and checksums, no_copy", load_external_no_copy, NULL},
    {"load .onnxz, copy (CRC-32)", load_archive_copy, NULL},
    {"load .onnxz, no_copy", load_archive_no_copy, NULL},
    {"load .onnxz with deflated entries (libdeflate)", load_deflated, NULL},
    {"load .onnxz, copy, not in the page cache (read whole)", load_archive_cold, NULL},
    {"save .onnx over an existing one", save_plain, "plain.onnx"},
    {"save with one external data file and checksums (SHA-1)", save_one_file, "one.onnx"},
    {"save one file per tensor", save_per_tensor, "per.onnx"},
    {"save split data files", save_split, "split.onnx"},
    {"save .onnxz over an existing one", save_archive, "model.onnxz"},
    {"replace the model of an .onnxz in place", replace_model, "replace.onnxz"},
    {"text format and copy", text_and_copy, NULL},
    {"JSON and text format, written and read back", text_formats_round_trip, NULL},
    {"ONNX's textual syntax read", onnx_text_read, NULL},
    {"onnxio convert: external data in, checksummed external data out", convert_external, "cv.onnx"},
    {"onnxio convert: a deflated .onnxz in, an .onnxz out", convert_archive, "cv.onnxz"},
};

/* What the next load of `name` does to a dead or failed save: finish or
 * undo it (the journal), and remove what it left behind. */
static void next_load(const char *name)
{
    char *p = out_path(name);
    onnxio_arena *a = onnxio_arena_new();
    onnxio_parse_options o = ONNXIO_PARSE_OPTIONS_INIT;
    o.load_external_data = ONNXIO_OFF;
    onnxio_ModelProto *m;
    onnxio_load_model(p, &o, a, &m);
    onnxio_arena_unref(a);
    free(p);
}

/* ---- snapshots of the output directory ---------------------------------------- */

/* Puts W.out back to `s`: other files removed, recorded ones rewritten. */
static void restore(const tu_snapshot *s)
{
    tu_strlist now = {0};
    tu_list_dir(W.out, &now);
    for (size_t i = 0; i < now.size; i++) {
        bool known = false;
        for (size_t k = 0; k < s->names.size && !known; k++) known = strcmp(now.items[i], s->names.items[k]) == 0;
        if (!known) {
            char *p = out_path(now.items[i]);
            unlink(p);
            free(p);
        }
    }
    tu_strlist_free(&now);
    for (size_t i = 0; i < s->names.size; i++) {
        char *p = out_path(s->names.items[i]);
        tu_write_file(p, s->bytes[i], s->sizes[i]);
        free(p);
    }
}

/* ---- the sweep -------------------------------------------------------------------- */

static long total_points;

/* Fails each counted operation of `mask` in turn while `sc` runs. */
static void sweep(const scenario *sc, unsigned mask, const char *kind)
{
    tu_snapshot before, after;
    tu_snapshot_take(W.out, &before);
    long live0 = onnxio__alloc_live();
    onnxio__fault_set(mask, 0, false, false);
    onnxio_status s = sc->run();
    long n = onnxio__fault_counted();
    onnxio__fault_set(0, 0, false, false);
    CHECK_MSG(s == ONNXIO_OK, "%s: fails without a fault: %s", sc->name, onnxio_last_error());
    CHECK_MSG(onnxio__alloc_live() == live0, "%s: leaks %ld blocks without a fault", sc->name,
              onnxio__alloc_live() - live0);
    /* What a successful run leaves (a save of the same model gives the
     * same bytes; a replacement appends). */
    tu_snapshot_take(W.out, &after);
    restore(&before);
    long failed_cleanly = 0, succeeded = 0;
    for (long i = 1; i <= n; i++) {
        restore(&before);
        onnxio__clear_error();
        live0 = onnxio__alloc_live();
        tu_fds fds0 = tu_open_fds();
        onnxio__fault_set(mask, i, false, false);
        s = sc->run();
        bool hit = onnxio__fault_hit();
        onnxio__op op = onnxio__fault_hit_op();
        onnxio__fault_set(0, 0, false, false);
        if (!hit) continue;
        char why[512] = "", message[1024];
        snprintf(message, sizeof message, "%s", onnxio_last_error());
        if (s != ONNXIO_OK) {
            failed_cleanly++;
            CHECK_MSG(message[0] != '\0', "%s, %s point %ld: %s with no message", sc->name, kind, i,
                      onnxio_status_name(s));
            /* The outputs are as they were; or, past the commit point (the
             * message says so), the new ones once the next load has run. */
            bool ok = !sc->writes || tu_snapshot_matches(W.out, &before, why, sizeof why);
            if (!ok && strstr(message, "committed")) {
                next_load(sc->writes);
                ok = tu_snapshot_matches(W.out, &after, why, sizeof why);
            }
            CHECK_MSG(ok, "%s, %s point %ld failed (%s) but the outputs changed: %s", sc->name, kind, i, message, why);
        } else {
            /* A failure the operation may ignore (an fsync of a directory):
             * the result must still be right. A journal whose removal
             * failed is removed by the next load. */
            succeeded++;
            bool ok = !sc->writes || tu_snapshot_matches(W.out, &after, why, sizeof why);
            if (!ok && op == ONNXIO__OP_UNLINK) {
                next_load(sc->writes);
                ok = tu_snapshot_matches(W.out, &after, why, sizeof why);
            }
            CHECK_MSG(ok, "%s, %s point %ld: ignored, but the outputs are wrong: %s", sc->name, kind, i, why);
        }
        CHECK_MSG(onnxio__alloc_live() == live0, "%s, %s point %ld: %ld blocks leaked (%s)", sc->name, kind, i,
                  onnxio__alloc_live() - live0, onnxio_status_name(s));
        CHECK_MSG(tu_same_fds(tu_open_fds(), fds0), "%s, %s point %ld: a file descriptor leaked or closed that was not its own",
                  sc->name, kind, i);
    }
    restore(&before);
    total_points += n;
    tu_note("%-58s %-6s %5ld points: %ld clean errors, %ld tolerated", sc->name, kind, n, failed_cleanly, succeeded);
    tu_snapshot_free(&before);
    tu_snapshot_free(&after);
}

/* ---- crash points of the save protocol ---------------------------------------------- */

/* The saves the crash sweeps kill, by number: what, the file saved, the
 * options. False past the last. */
static bool crash_case(int k, const char **what, const char **name, onnxio_serialize_options *o)
{
    *o = serial_save();
    *name = "c.onnx";
    switch (k) {
    case 0: *what = "save .onnx"; return true;
    case 1:
        *what = "save with one data file";
        o->external_data.location = "c.data";
        o->external_data.checksum = true;
        return true;
    case 2:
        *what = "save one file per tensor";
        o->external_data.all_tensors_to_one_file = ONNXIO_OFF;
        o->external_data.convert_attribute = true;
        return true;
    case 3:
        *what = "save split data files";
        o->external_data.location = "c.data";
        o->external_data.max_file_size = 8192;
        return true;
    case 4:
        *what = "save .onnxz";
        *name = "c.onnxz";
        return true;
    default: return false;
    }
}

/* The models of the crash sweeps: the old one, and the new one saved over
 * it (the same in a child on Windows, which makes its own). */
#define CRASH_OLD_SEED 1
#define CRASH_NEW_SEED 9

/* A crash child: the save of crash case `k` of `m`, killed at its `i`th
 * mutating operation (exit code 0 when it has fewer). */
typedef struct crash_run {
    int k;
    long i;
    onnxio_ModelProto *m;
} crash_run;

static void crash_child(void *arg)
{
    const crash_run *r = arg;
    const char *what, *name;
    onnxio_serialize_options o;
    if (!crash_case(r->k, &what, &name, &o)) _exit(2);
    char *path = out_path(name);
    onnxio__fault_set(MUTATING_OPS, r->i, true, false);
    onnxio_status s = onnxio_save_model(r->m, path, &o);
    _exit(s == ONNXIO_OK ? 0 : 1);
}

/* Kills a child at each mutating operation of crash case `k`, a save of
 * `new_m` over files a save of `old_m` made, then loads (which finishes
 * or undoes what the child left) and checks: the old model or the new
 * one, whole, and exactly the old files or the new ones. */
static void crash_sweep(int k, onnxio_ModelProto *old_m, onnxio_ModelProto *new_m)
{
    const char *what, *name;
    onnxio_serialize_options o;
    crash_case(k, &what, &name, &o);
    const onnxio_serialize_options *opts = &o;
    char *path = out_path(name);
    /* The new files, and the old ones, as a complete save leaves them. */
    tu_remove_tree(W.out);
    mkdir(W.out, 0777);
    CHECK_STATUS(onnxio_save_model(new_m, path, opts), ONNXIO_OK);
    tu_snapshot new_files;
    tu_snapshot_take(W.out, &new_files);
    tu_remove_tree(W.out);
    mkdir(W.out, 0777);
    CHECK_STATUS(onnxio_save_model(old_m, path, opts), ONNXIO_OK);
    tu_snapshot old_files;
    tu_snapshot_take(W.out, &old_files);
    onnxio__fault_set(MUTATING_OPS, 0, false, false);
    CHECK_STATUS(onnxio_save_model(new_m, path, opts), ONNXIO_OK);
    long n = onnxio__fault_counted();
    onnxio__fault_set(0, 0, false, false);
    long saw_old = 0, saw_new = 0, empty_journals = 0;
    for (long i = 1; i <= n + 1; i++) {
        tu_remove_tree(W.out);
        mkdir(W.out, 0777);
        restore(&old_files);
        char karg[16], iarg[32];
        snprintf(karg, sizeof karg, "%d", k);
        snprintf(iarg, sizeof iarg, "%ld", i);
        const char *args[] = {W.repo, "--crash-child", W.dir, karg, iarg, NULL};
        crash_run run = {k, i, new_m};
        int code = tu_crash_child(crash_child, &run, args);
        CHECK_MSG(code == 137 || (i > n && code == 0), "%s, crash point %ld: the child ended with code %d", what, i,
                  code);
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *back = NULL;
        onnxio_parse_options po = serial_load(false);
        onnxio_status s = onnxio_load_model(path, &po, a, &back);
        CHECK_MSG(s == ONNXIO_OK, "%s, crash point %ld: the next load fails: %s", what, i, onnxio_last_error());
        bool is_old = back && tu_equal_as_loaded(back, old_m);
        bool is_new = back && tu_equal_as_loaded(back, new_m);
        CHECK_MSG(is_old || is_new, "%s, crash point %ld: the model loaded is neither the old one nor the new one", what,
                  i);
        if (is_old && !is_new) empty_journals += tu_take_empty_journal(path);
        char why[512] = "";
        bool files_ok = is_new ? tu_snapshot_matches(W.out, &new_files, why, sizeof why) : tu_snapshot_matches(W.out, &old_files, why, sizeof why);
        CHECK_MSG(files_ok, "%s, crash point %ld: after the next load the files are not the %s ones: %s", what, i,
                  is_new ? "new" : "old", why);
        saw_old += is_old && !is_new;
        saw_new += is_new;
        onnxio_arena_unref(a);
    }
    total_points += n + 1;
    tu_note("%-58s %5ld crash points: old model %ld times (%ld with an empty journal left), new %ld times", what, n + 1,
            saw_old, empty_journals, saw_new);
    tu_snapshot_free(&old_files);
    tu_snapshot_free(&new_files);
    free(path);
}

/* ---- setting up -------------------------------------------------------------------- */

/* The model's inputs: a plain file, with external data, an archive, and an
 * archive with deflated entries (built by an independent zip writer). */
static void make_inputs(void)
{
    W.model_path = tu_path_join(W.dir, "m.onnx");
    W.ext_path = tu_path_join(W.dir, "ext.onnx");
    W.archive_path = tu_path_join(W.dir, "m.onnxz");
    W.deflated_path = tu_path_join(W.dir, "deflated.onnxz");
    onnxio_serialize_options o = ONNXIO_SERIALIZE_OPTIONS_INIT;
    CHECK_STATUS(onnxio_save_model(W.model, W.model_path, &o), ONNXIO_OK);
    CHECK_STATUS(onnxio_save_model(W.model, W.archive_path, &o), ONNXIO_OK);
    o.external_data.location = "ext.data";
    o.external_data.checksum = true;
    CHECK_STATUS(onnxio_save_model(W.model, W.ext_path, &o), ONNXIO_OK);
    /* Deflated: the archive's entries, recompressed by tu_zip_build. */
    onnxio_archive *ar = NULL;
    CHECK_STATUS(onnxio_archive_open(W.archive_path, &ar), ONNXIO_OK);
    size_t n = ar ? onnxio_archive_entry_count(ar) : 0;
    size_t fsize;
    uint8_t *file = tu_read_file(W.archive_path, &fsize);
    tu_zsrc src[16];
    for (size_t i = 0; i < n && i < 16; i++) {
        const onnxio_archive_entry *e = onnxio_archive_entry_at(ar, i);
        src[i] = (tu_zsrc){e->name, file + e->data_offset, (size_t)e->size, 1, 0};
    }
    tu_bytes b = {0};
    tu_zip_build(&b, src, n < 16 ? n : 16);
    tu_write_file(W.deflated_path, b.data, b.size);
    tu_bytes_free(&b);
    free(file);
    onnxio_archive_close(ar);
    /* Large enough that a cold load reads more than its tail. */
    W.cold_path = tu_path_join(W.dir, "cold.onnxz");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = synthetic_model(a, 5);
    add_tensor(a, m->graph, "w48k", 12 * 1024, 6);
    add_tensor(a, m->graph, "w70k", 17500, 7);
    add_tensor(a, m->graph, "w33k", 8448, 8);
    o = (onnxio_serialize_options)ONNXIO_SERIALIZE_OPTIONS_INIT;
    CHECK_STATUS(onnxio_save_model(m, W.cold_path, &o), ONNXIO_OK);
    onnxio_arena_unref(a);
}

/* The outputs the saves overwrite: a complete save of each first. */
static void make_outputs(void)
{
    tu_remove_tree(W.out);
    mkdir(W.out, 0777);
    for (size_t i = 0; i < sizeof scenarios / sizeof *scenarios; i++)
        if (scenarios[i].writes && scenarios[i].run != replace_model) CHECK_STATUS(scenarios[i].run(), ONNXIO_OK);
    char *r = out_path("replace.onnxz");
    onnxio_serialize_options o = serial_save();
    CHECK_STATUS(onnxio_save_model(W.model, r, &o), ONNXIO_OK);
    free(r);
}

static void run_model(const char *what, onnxio_ModelProto *m, onnxio_arena *arena)
{
    W.model = m;
    W.arena = arena;
    tu_begin("fault injection, %s: every allocation, every file operation", what);
    make_inputs();
    make_outputs();
    for (size_t i = 0; i < sizeof scenarios / sizeof *scenarios; i++) {
        sweep(&scenarios[i], ALLOC_OPS, "alloc");
        sweep(&scenarios[i], IO_OPS, "I/O");
    }
    tu_end();
    free(W.model_path);
    free(W.ext_path);
    free(W.archive_path);
    free(W.deflated_path);
    free(W.cold_path);
}

/* A model of `k` initializers of 2 KiB saved with their payloads in one
 * data file, then loaded: the files it opens, counted. */
static long opens_for_load(int k, bool no_copy)
{
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    for (int i = 0; i < k; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        add_tensor(a, m->graph, name, 512, (unsigned)i);
    }
    char file[32];
    snprintf(file, sizeof file, "k%d.onnx", k);
    char *path = tu_path_join(W.dir, file);
    onnxio_serialize_options o = serial_save();
    o.external_data.location = "k.bin";
    CHECK_STATUS(onnxio_save_model(m, path, &o), ONNXIO_OK);
    onnxio__fault_set(1u << ONNXIO__OP_OPEN, 0, false, false);
    CHECK_STATUS(load(path, no_copy), ONNXIO_OK);
    long n = onnxio__fault_counted();
    onnxio__fault_set(0, 0, false, false);
    onnxio_arena_unref(a);
    free(path);
    return n;
}

int main(int argc, char **argv)
{
    const char *repo = argc > 1 ? argv[1] : ".";
    W.repo = repo;
    /* A crash child on Windows (tu_crash_child): REPO --crash-child DIR K I. */
    if (argc == 6 && strcmp(argv[2], "--crash-child") == 0) {
        W.dir = argv[3];
        W.out = tu_path_join(W.dir, "out");
        onnxio_arena *arena = onnxio_arena_new();
        crash_run run = {atoi(argv[4]), atol(argv[5]), synthetic_model(arena, CRASH_NEW_SEED)};
        crash_child(&run);
    }
    onnxio__alloc_track(true);
#ifdef SIGPIPE
    signal(SIGPIPE, SIG_IGN);
#endif
    W.dir = tu_make_temp_dir("faults");
    W.out = tu_path_join(W.dir, "out");
    mkdir(W.out, 0777);
    onnxio_arena *arena = onnxio_arena_new();
    onnxio_ModelProto *synthetic = synthetic_model(arena, CRASH_OLD_SEED);
    W.model = synthetic;

    /* The tensors that name one data file: its location walked, and the
     * file opened, once (the walk per tensor made a no_copy load of gpt2
     * ten times slower). */
    tu_begin("external data: one data file opened once, however many tensors name it");
    for (int no_copy = 0; no_copy < 2; no_copy++) {
        long few = opens_for_load(4, no_copy), many = opens_for_load(64, no_copy);
        CHECK_MSG(few > 0 && many == few, "%s load: %ld files opened for 4 tensors, %ld for 64",
                  no_copy ? "no_copy" : "copy", few, many);
    }
    tu_end();

    run_model("a synthetic model", synthetic, arena);

    /* A real model, when ../shared is beside the repository. */
    const char *corpus = tu_corpus_dir(repo);
    if (corpus) {
        char *p = tu_path_join(corpus, "robertknight+rten__rten-onnx__test-data__mnist.onnx");
        onnxio_arena *ra = onnxio_arena_new();
        onnxio_ModelProto *real = NULL;
        CHECK_STATUS(onnxio_load_model(p, NULL, ra, &real), ONNXIO_OK);
        if (real) run_model("mnist.onnx of the corpus", real, ra);
        onnxio_arena_unref(ra);
        free(p);
    } else {
        tu_skip("the real-model sweeps: ../shared/corpus is not beside the repository");
    }

    /* The save protocol, killed at each step. */
    tu_begin("crash points: a save killed before each file operation, then the next load");
    onnxio_ModelProto *changed = synthetic_model(arena, CRASH_NEW_SEED);
    W.model = synthetic;
    const char *what, *name;
    onnxio_serialize_options o;
    for (int k = 0; crash_case(k, &what, &name, &o); k++) crash_sweep(k, synthetic, changed);
    tu_end();

    tu_note("%ld fault and crash points in all", total_points);
    onnxio_arena_unref(arena);
    tu_remove_tree(W.dir);
    free(W.dir);
    free(W.out);
    return tu_finish();
}
