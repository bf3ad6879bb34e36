/* The progress callback of loads and saves (onnxio_progress_fn): what it
 * is told (done never decreasing, the same total in every
 * call, the last call and only it with done == total, total the payload
 * bytes of the model, counted here from the tensors the test built), on
 * every load and save path and thread count; and cancelling: a non-zero
 * return fails with ONNXIO_ERR_CANCELLED, a cancelled load leaves no model,
 * a cancelled save leaves the old files byte for byte and no temporary
 * file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Payload sizes: pieces of a large one (more than one 8 MiB piece), one
 * between the thresholds, small ones that are copied in line. */
static const size_t sizes[] = {20u << 20, 3u << 20, 100u << 10, 2048, 16};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static uint64_t payload_bytes(void)
{
    uint64_t n = 0;
    for (size_t i = 0; i < NSIZES; i++) n += sizes[i];
    return n;
}

static onnxio_ModelProto *model_of(onnxio_arena *a, unsigned seed)
{
    int64_t counts[NSIZES];
    for (size_t i = 0; i < NSIZES; i++) counts[i] = (int64_t)sizes[i];
    return tu_model_of_initializers(a, NSIZES, counts, ONNXIO_TensorProto_DataType_UINT8, 1, seed);
}

/* What the callback was told. */
typedef struct calls {
    size_t n;
    uint64_t done[4096], total[4096];
    long cancel_at; /* return 1 on this call (0-based); -1: never */
    bool cancel_last; /* return 1 on the call with done == total */
} calls;

static int record(void *user, uint64_t done, uint64_t total)
{
    calls *c = user;
    long k = (long)c->n;
    if (c->n < 4096) {
        c->done[c->n] = done;
        c->total[c->n] = total;
        c->n++;
    }
    if (c->cancel_at >= 0 && k >= c->cancel_at) return 1;
    return c->cancel_last && done == total;
}

static void calls_reset(calls *c)
{
    memset(c, 0, sizeof *c);
    c->cancel_at = -1;
}

/* The rules of a completed operation's calls. */
static void check_calls(const calls *c, uint64_t want_total, const char *what)
{
    CHECK_MSG(c->n >= 1, "%s: no progress call", what);
    if (c->n == 0) return;
    for (size_t i = 0; i < c->n; i++) {
        CHECK_MSG(c->total[i] == want_total, "%s: call %zu total %llu, want %llu", what, i,
                  (unsigned long long)c->total[i], (unsigned long long)want_total);
        CHECK_MSG(c->done[i] <= c->total[i], "%s: call %zu done %llu > total", what, i, (unsigned long long)c->done[i]);
        if (i) CHECK_MSG(c->done[i] >= c->done[i - 1], "%s: call %zu done went down", what, i);
        if (i + 1 < c->n) CHECK_MSG(c->done[i] < c->total[i], "%s: call %zu before the last says done == total", what, i);
    }
    CHECK_MSG(c->done[c->n - 1] == want_total, "%s: last call done %llu, want %llu", what,
              (unsigned long long)c->done[c->n - 1], (unsigned long long)want_total);
}

static onnxio_ModelProto *load(const char *path, int threads, bool no_copy, calls *c, onnxio_arena *a,
                               onnxio_status *st)
{
    onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
    po.num_threads = threads;
    po.no_copy = no_copy;
    po.progress = record;
    po.progress_user = c;
    onnxio_ModelProto *m = NULL;
    *st = onnxio_load_model(path, &po, a, &m);
    return m;
}

static void test_paths(const char *dir)
{
    const int threads[] = {1, 2, 0};
    uint64_t want = payload_bytes();
    calls *c = malloc(sizeof *c);
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = model_of(a, 1);
    struct {
        const char *name, *location;
    } kinds[] = {{"plain.onnx", NULL}, {"ext.onnx", "ext.data"}, {"arch.onnxz", NULL}};
    for (size_t k = 0; k < 3; k++)
        for (size_t ti = 0; ti < 3; ti++) {
            tu_begin("progress of a save and a load: %s, num_threads %d", kinds[k].name, threads[ti]);
            char *path = tu_path_join(dir, kinds[k].name);
            onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
            so.num_threads = threads[ti];
            so.external_data.location = kinds[k].location;
            so.progress = record;
            so.progress_user = c;
            so.fsync = ONNXIO_OFF;
            calls_reset(c);
            CHECK_STATUS(onnxio_save_model(m, path, &so), ONNXIO_OK);
            check_calls(c, want, "save");
            /* The 20 MiB payload is written in pieces: some call comes
             * before the last one. */
            CHECK_MSG(c->n >= 2, "save: %zu calls", c->n);
            for (int nc = 0; nc < 2; nc++) {
                onnxio_arena *b = onnxio_arena_new();
                calls_reset(c);
                onnxio_status st;
                onnxio_ModelProto *back = load(path, threads[ti], nc == 1, c, b, &st);
                CHECK_STATUS(st, ONNXIO_OK);
                check_calls(c, want, nc ? "no_copy load" : "load");
                if (!nc) CHECK_MSG(c->n >= 2, "load: %zu calls", c->n);
                CHECK(back && tu_equal_as_loaded(back, m));
                onnxio_arena_unref(b);
            }
            free(path);
            tu_end();
        }

    tu_begin("progress: skip_raw_data (total 0), parse from bytes, load_external_data");
    {
        char *path = tu_path_join(dir, "plain.onnx");
        onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
        po.skip_raw_data = true;
        po.progress = record;
        po.progress_user = c;
        calls_reset(c);
        onnxio_arena *b = onnxio_arena_new();
        onnxio_ModelProto *back = NULL;
        CHECK_STATUS(onnxio_load_model(path, &po, b, &back), ONNXIO_OK);
        check_calls(c, 0, "skip_raw_data");
        CHECK_EQ_U64(c->n, 1);
        size_t n;
        uint8_t *bytes = tu_read_file(path, &n);
        po.skip_raw_data = false;
        calls_reset(c);
        void *msg = NULL;
        CHECK_STATUS(onnxio_parse(&onnxio_desc_ModelProto, bytes, n, NULL, &po, b, &msg), ONNXIO_OK);
        check_calls(c, want, "parse");
        free(bytes);
        free(path);
        /* External data loaded afterwards. */
        path = tu_path_join(dir, "ext.onnx");
        po.load_external_data = ONNXIO_OFF;
        po.progress = NULL;
        CHECK_STATUS(onnxio_load_model(path, &po, b, &back), ONNXIO_OK);
        po.progress = record;
        calls_reset(c);
        CHECK_STATUS(onnxio_load_external_data(back, dir, &po), ONNXIO_OK);
        /* The payloads of at least 1024 bytes were external; the 16 bytes
         * stayed inline. */
        check_calls(c, want - 16, "load_external_data");
        CHECK(back && tu_equal_as_loaded(back, m));
        free(path);
        onnxio_arena_unref(b);
    }
    tu_end();
    onnxio_arena_unref(a);
    free(c);
}

static void test_cancel(const char *dir)
{
    calls *c = malloc(sizeof *c);
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *old = model_of(a, 1), *m = model_of(a, 2);
    const char *names[] = {"c.onnx", "c_ext.onnx", "c.onnxz"};
    const char *locations[] = {NULL, "c.data", NULL};
    for (size_t k = 0; k < 3; k++)
        for (int at = 0; at < 3; at++) {
            /* at 0: the first call; 1: the second; 2: the last call. */
            tu_begin("cancel a save of %s at the %s call (num_threads %d)", names[k], at == 2 ? "last" : at ? "second" : "first",
                     at == 1 ? 1 : 0);
            char *path = tu_path_join(dir, names[k]);
            onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
            so.external_data.location = locations[k];
            so.num_threads = at == 1 ? 1 : 0;
            CHECK_STATUS(onnxio_save_model(old, path, &so), ONNXIO_OK);
            tu_strlist before = {0}, after = {0};
            tu_list_dir(dir, &before);
            size_t n_old, n_data = 0;
            uint8_t *bytes_old = tu_read_file(path, &n_old), *data_old = NULL;
            char *data_path = locations[k] ? tu_path_join(dir, locations[k]) : NULL;
            if (data_path) data_old = tu_read_file(data_path, &n_data);
            calls_reset(c);
            if (at < 2) c->cancel_at = at;
            else c->cancel_last = true;
            so.progress = record;
            so.progress_user = c;
            CHECK_STATUS(onnxio_save_model(m, path, &so), ONNXIO_ERR_CANCELLED);
            CHECK_MSG(strstr(onnxio_last_error(), "cancelled") != NULL, "message: %s", onnxio_last_error());
            if (at < 2) CHECK_EQ_U64(c->n, (uint64_t)at + 1);
            size_t n_now, n_data_now = 0;
            uint8_t *bytes_now = tu_read_file(path, &n_now);
            CHECK_BYTES(bytes_now, n_now, bytes_old, n_old);
            if (data_path) {
                uint8_t *data_now = tu_read_file(data_path, &n_data_now);
                CHECK_BYTES(data_now, n_data_now, data_old, n_data);
                free(data_now);
            }
            /* No temporary file, no journal left. */
            tu_list_dir(dir, &after);
            CHECK_EQ_U64(after.size, before.size);
            for (size_t i = 0; i < after.size && i < before.size; i++) CHECK_STR(after.items[i], before.items[i]);
            /* And the old model loads; a cancelled load gives nothing. */
            onnxio_arena *b = onnxio_arena_new();
            onnxio_status st;
            calls_reset(c);
            onnxio_ModelProto *back = load(path, 0, false, c, b, &st);
            CHECK_STATUS(st, ONNXIO_OK);
            CHECK(back && tu_equal_as_loaded(back, old));
            calls_reset(c);
            if (at < 2) c->cancel_at = at;
            else c->cancel_last = true;
            back = load(path, at == 1 ? 1 : 0, false, c, b, &st);
            CHECK_STATUS(st, ONNXIO_ERR_CANCELLED);
            CHECK(back == NULL);
            onnxio_arena_unref(b);
            tu_strlist_free(&before);
            tu_strlist_free(&after);
            free(bytes_old);
            free(bytes_now);
            free(data_old);
            free(data_path);
            free(path);
            tu_end();
        }
    onnxio_arena_unref(a);
    free(c);
}

/* The cancel poll (onnxio_parse_options.cancel): asked to cancel at its
 * first or second poll, a load fails with ONNXIO_ERR_CANCELLED and gives
 * no model; a poll that never cancels gives the model the test built. With
 * struct_size 0 (the 0.2 layout, which has no cancel member) the member is
 * not read. */
typedef struct polls {
    int n, cancel_at; /* -1: never */
} polls;

static int poll_once(void *user)
{
    polls *p = user;
    return p->cancel_at >= 0 && p->n++ >= p->cancel_at;
}

static void test_cancel_poll(const char *dir)
{
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = model_of(a, 3);
    const char *names[] = {"p.onnx", "p_ext.onnx", "p.onnxz"};
    const char *locations[] = {NULL, "p.data", NULL};
    for (size_t k = 0; k < 3; k++)
        for (int threads = 0; threads <= 1; threads++) {
            tu_begin("cancel poll: load of %s, num_threads %d", names[k], threads);
            char *path = tu_path_join(dir, names[k]);
            onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
            so.external_data.location = locations[k];
            CHECK_STATUS(onnxio_save_model(m, path, &so), ONNXIO_OK);
            for (int at = -1; at <= 1; at++) {
                onnxio_arena *b = onnxio_arena_new();
                polls p = {0, at};
                onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
                po.num_threads = threads;
                po.cancel = poll_once;
                po.cancel_user = &p;
                onnxio_ModelProto *back = NULL;
                onnxio_status st = onnxio_load_model(path, &po, b, &back);
                if (at < 0) {
                    CHECK_STATUS(st, ONNXIO_OK);
                    CHECK(back && tu_equal_as_loaded(back, m));
                } else {
                    CHECK_STATUS(st, ONNXIO_ERR_CANCELLED);
                    CHECK(back == NULL);
                    CHECK_MSG(strstr(onnxio_last_error(), "cancel") != NULL, "message: %s", onnxio_last_error());
                }
                /* struct_size 0: the 0.2 layout, without the poll. */
                p = (polls){0, 0};
                po.struct_size = 0;
                back = NULL;
                CHECK_STATUS(onnxio_load_model(path, &po, b, &back), ONNXIO_OK);
                CHECK(back && tu_equal_as_loaded(back, m));
                CHECK_EQ_U64((uint64_t)p.n, 0);
                onnxio_arena_unref(b);
            }
            free(path);
            tu_end();
        }
    onnxio_arena_unref(a);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char *dir = tu_make_temp_dir("onnxio_progress");
    test_paths(dir);
    test_cancel(dir);
    test_cancel_poll(dir);
    tu_remove_tree(dir);
    free(dir);
    return tu_finish();
}
