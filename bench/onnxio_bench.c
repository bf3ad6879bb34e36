/*
 * onnxio's side of the benchmarks: times the library's load and save paths
 * on one model file, or measures the peak memory of one load.
 *
 *   bench/out/onnxio_bench MODEL.onnx [REPEATS] [OUT_DIR]
 *   bench/out/onnxio_bench --external MODEL.onnx [REPEATS] [OUT_DIR]
 *   bench/out/onnxio_bench --rss MODEL.onnx copy|no_copy THREADS
 *   bench/out/onnxio_bench --archive MODEL.onnx REPEATS OUT_DIR
 *
 * Built by `make bench` against build/libonnxio.a. Times are in seconds with
 * the file already in the page cache, every run kept in "samples"; freeing
 * the arena is not timed. "_1t" / "_2t" is num_threads 1 (serial) / 2.
 *
 * A single-file model (payloads in raw_data):
 *   parse_1t, parse_2t   onnxio_parse of the whole file held in memory, copy
 *                        mode (payloads copied into owned buffers)
 *   parse_no_copy        the same with no_copy: payloads borrow the input
 *   serialize            onnxio_serialized_size + onnxio_serialize_into a
 *                        preallocated buffer
 *   load_file_1t, _2t    onnxio_load_model (payloads copied)
 *   load_file_no_copy    onnxio_load_model with no_copy (payloads stay in the
 *                        file's mapping)
 *   save_file_1t, _2t    onnxio_save_model to OUT_DIR (temporary file, fsync,
 *                        rename); skipped without OUT_DIR
 * and checks that serializing gives back the input bytes ("identical") and
 * that the saved file equals the input ("saved_identical").
 *
 * --external: a model whose payloads are in external data files:
 *   load_file_1t, _2t, load_file_no_copy   as above, external data included
 *   save_file_1t, _2t    onnxio_save_model to OUT_DIR with
 *                        external_data.location (payloads of 1024 bytes or
 *                        more go to one data file, default alignment)
 * and checks that the saved model loads back equal to the input
 * ("saved_identical"; "identical" is then the same check).
 *
 * --rss: one load in this fresh process, then the growth of resident memory:
 * peak (VmHWM after the load) minus resident (VmRSS) before it, in bytes,
 * with the payload bytes (sum of raw_data sizes) and the structure bytes
 * (onnxio_arena_used) of the loaded model. "anon_growth" is the growth of
 * private memory (RssAnon after minus before): the pages of a file mapping
 * that a no_copy load touches are page cache, counted in VmHWM but not new
 * memory.
 *
 * Prints one JSON object on stdout; on a library error prints it on stderr
 * and exits 1; bad usage exits 2.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "onnxio/onnxio.h"
#include "testutil.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check(onnxio_status st, const char *what)
{
    if (st != ONNXIO_OK) {
        fprintf(stderr, "onnxio_bench: %s: %s: %s\n", what, onnxio_status_name(st), onnxio_last_error());
        exit(1);
    }
}

static void die_errno(const char *what, const char *path)
{
    fprintf(stderr, "onnxio_bench: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "onnxio_bench: out of memory\n");
        exit(1);
    }
    return p;
}

static unsigned char *read_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die_errno("open", path);
    struct stat st;
    if (fstat(fd, &st) != 0)
        die_errno("stat", path);
    size_t n = (size_t)st.st_size;
    unsigned char *buf = xcalloc(n, 1);
    size_t done = 0;
    while (done < n) {
        ssize_t r = read(fd, buf + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die_errno("read", path);
        done += (size_t)r;
    }
    close(fd);
    *size = n;
    return buf;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* The times of one operation, run after run. */
typedef struct series {
    const char *name;
    double *v;
    int n;
} series;

enum {
    PARSE_1T, PARSE_2T, PARSE_NO_COPY, SERIALIZE, LOAD_1T, LOAD_2T, LOAD_NO_COPY, SAVE_1T, SAVE_2T,
    N_OPS
};
static const char *const op_names[N_OPS] = {
    "parse_1t", "parse_2t", "parse_no_copy", "serialize", "load_file_1t",
    "load_file_2t", "load_file_no_copy", "save_file_1t", "save_file_2t"};

static void print_series(const series *s, int count)
{
    int first = 1;
    for (int i = 0; i < count; i++) {
        if (!s[i].n)
            continue;
        printf("%s\"%s\": [", first ? "" : ", ", s[i].name);
        for (int j = 0; j < s[i].n; j++)
            printf("%s%.6f", j ? ", " : "", s[i].v[j]);
        printf("]");
        first = 0;
    }
}

static onnxio_parse_options parse_opts(int threads, bool no_copy)
{
    onnxio_parse_options o = {0};
    o.num_threads = threads;
    o.no_copy = no_copy;
    return o;
}

static void time_parse(series *s, const unsigned char *input, size_t size, onnxio_parse_options opts,
                       int repeats, size_t *arena_bytes)
{
    for (int r = 0; r < repeats; r++) {
        onnxio_arena *arena = onnxio_arena_new();
        void *msg = NULL;
        double t0 = now();
        check(onnxio_parse(&onnxio_desc_ModelProto, input, size, NULL, &opts, arena, &msg), "parse");
        s->v[s->n++] = now() - t0;
        if (arena_bytes)
            *arena_bytes = onnxio_arena_used(arena);
        onnxio_arena_unref(arena);
    }
}

static void time_load(series *s, const char *path, onnxio_parse_options opts, int repeats)
{
    for (int r = 0; r < repeats; r++) {
        onnxio_arena *arena = onnxio_arena_new();
        onnxio_ModelProto *model = NULL;
        double t0 = now();
        check(onnxio_load_model(path, &opts, arena, &model), "load_model");
        s->v[s->n++] = now() - t0;
        onnxio_arena_unref(arena);
    }
}

static void time_save(series *s, onnxio_ModelProto *model, const char *dst, const char *location,
                      int threads, int repeats)
{
    onnxio_serialize_options so = {0};
    so.num_threads = threads;
    so.external_data.location = location;
    so.external_data.size_threshold = 1024; /* what onnx.save uses */
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        check(onnxio_save_model(model, dst, &so), "save_model");
        s->v[s->n++] = now() - t0;
    }
}

/* A field of /proc/self/status in bytes ("VmHWM", "VmRSS", ...); -1 if absent. */
static long long proc_status(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long long v = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, n) == 0 && line[n] == ':') {
            v = atoll(line + n + 1) * 1024;
            break;
        }
    }
    fclose(f);
    return v;
}

static unsigned long long payload_bytes(const onnxio_ModelProto *model)
{
    unsigned long long total = 0;
    if (!model->graph)
        return 0;
    for (size_t i = 0; i < model->graph->initializer.size; i++)
        total += model->graph->initializer.data[i]->raw_data.size;
    return total;
}

static int run_rss(const char *path, const char *mode, int threads)
{
    bool no_copy;
    if (strcmp(mode, "copy") == 0)
        no_copy = false;
    else if (strcmp(mode, "no_copy") == 0)
        no_copy = true;
    else {
        fprintf(stderr, "onnxio_bench: --rss: mode must be copy or no_copy\n");
        return 2;
    }
    onnxio_parse_options opts = parse_opts(threads, no_copy);
    onnxio_arena *arena = onnxio_arena_new();
    if (!arena) {
        fprintf(stderr, "onnxio_bench: out of memory\n");
        return 1;
    }
    long long before = proc_status("VmRSS"), anon_before = proc_status("RssAnon");
    onnxio_ModelProto *model = NULL;
    double t0 = now();
    check(onnxio_load_model(path, &opts, arena, &model), "load_model");
    double t = now() - t0;
    long long hwm = proc_status("VmHWM");
    printf("{\"tool\": \"onnxio\", \"model\": ");
    json_string(path);
    printf(", \"mode\": \"%s\", \"threads\": %d, \"seconds\": %.6f, \"rss_before\": %lld, "
           "\"peak\": %lld, \"growth\": %lld, \"anon_growth\": %lld, \"rss_file_after\": %lld, "
           "\"payload_bytes\": %llu, \"structure_bytes\": %zu}\n",
           mode, threads, t, before, hwm, hwm - before, proc_status("RssAnon") - anon_before,
           proc_status("RssFile"), payload_bytes(model), onnxio_arena_used(arena));
    onnxio_arena_unref(arena);
    return 0;
}

/* --archive: the three file layouts of one model side by side, in this
 * one process, on files written to OUT_DIR by onnxio itself from MODEL:
 * the single .onnx, .onnx + one external data file (threshold 1024,
 * default 4096 alignment) and .onnxz (threshold 1024, 64 alignment). For
 * each layout "save_1t", "save_2t", "load_1t", "load_2t", "load_no_copy"
 * (copy loads of the archive check CRC-32s, the library default; for the
 * archive also "load_1t_no_crc", a copy load with verify_crc OFF). Every
 * load is compared with the model (onnxio_message_equal after the
 * first load of each layout; for the two with external data, but for the
 * data_location marks the load leaves, tests/c/testutil.c). */
static int run_archive(const char *path, int repeats, const char *out_dir)
{
    static const char *const layouts[3] = {"onnx", "onnx_external", "onnxz"};
    static const char *const ops[6] = {"save_1t", "save_2t", "load_1t", "load_2t", "load_no_copy", "load_1t_no_crc"};
    series s[3][6];
    memset(s, 0, sizeof s);
    onnxio_arena *arena = onnxio_arena_new();
    onnxio_ModelProto *model = NULL;
    onnxio_parse_options lo = parse_opts(0, false);
    check(onnxio_load_model(path, &lo, arena, &model), "load_model");
    char dst[3][4096];
    snprintf(dst[0], sizeof dst[0], "%s/bench.onnx", out_dir);
    snprintf(dst[1], sizeof dst[1], "%s/bench_ext.onnx", out_dir);
    snprintf(dst[2], sizeof dst[2], "%s/bench.onnxz", out_dir);
    int identical = 1;
    unsigned long long sizes[3] = {0, 0, 0};
    for (int l = 0; l < 3; l++) {
        for (int k = 0; k < 6; k++) {
            s[l][k].name = ops[k];
            s[l][k].v = xcalloc((size_t)repeats, sizeof(double));
        }
        const char *location = l == 1 ? "bench_ext.onnx.data" : NULL;
        time_save(&s[l][0], model, dst[l], location, 1, repeats);
        time_save(&s[l][1], model, dst[l], location, 2, repeats);
        struct stat st;
        if (stat(dst[l], &st) == 0) sizes[l] = (unsigned long long)st.st_size;
        onnxio_arena *back_arena = onnxio_arena_new();
        onnxio_ModelProto *back = NULL;
        check(onnxio_load_model(dst[l], &lo, back_arena, &back), "load_model (saved)");
        /* Loaded external data leaves data_location = DEFAULT set, as
         * onnx's load_external_data_for_tensor does: equal but for it. */
        identical &= l == 0 ? onnxio_message_equal(model, back) == 1 : tu_equal_as_loaded(back, model);
        onnxio_arena_unref(back_arena);
        time_load(&s[l][2], dst[l], parse_opts(1, false), repeats);
        time_load(&s[l][3], dst[l], parse_opts(2, false), repeats);
        time_load(&s[l][4], dst[l], parse_opts(1, true), repeats);
        if (l == 2) {
            onnxio_parse_options o = parse_opts(1, false);
            o.verify_crc = ONNXIO_OFF;
            time_load(&s[l][5], dst[l], o, repeats);
        }
    }
    printf("{\"tool\": \"onnxio\", \"version\": \"%s\", \"model\": ", ONNXIO_VERSION_STRING);
    json_string(path);
    printf(", \"repeats\": %d, \"identical\": %s, \"file_bytes\": {\"onnx\": %llu, \"onnx_external\": %llu, "
           "\"onnxz\": %llu}, \"samples\": {",
           repeats, identical ? "true" : "false", sizes[0], sizes[1], sizes[2]);
    for (int l = 0; l < 3; l++) {
        printf("%s\"%s\": {", l ? ", " : "", layouts[l]);
        print_series(s[l], 6);
        printf("}");
        for (int k = 0; k < 6; k++) free(s[l][k].v);
    }
    printf("}}\n");
    for (int l = 0; l < 3; l++) unlink(dst[l]);
    char data[4200];
    snprintf(data, sizeof data, "%s/bench_ext.onnx.data", out_dir);
    unlink(data);
    onnxio_arena_unref(arena);
    return identical ? 0 : 1;
}

static int usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--external] MODEL.onnx [REPEATS] [OUT_DIR]\n"
            "       %s --rss MODEL.onnx copy|no_copy THREADS\n"
            "       %s --archive MODEL.onnx REPEATS OUT_DIR\n",
            argv0, argv0, argv0);
    return 2;
}

int main(int argc, char **argv)
{
    const char *argv0 = argv[0];
    if (argc >= 2 && strcmp(argv[1], "--rss") == 0) {
        if (argc != 5)
            return usage(argv0);
        return run_rss(argv[2], argv[3], atoi(argv[4]));
    }
    if (argc >= 2 && strcmp(argv[1], "--archive") == 0) {
        if (argc != 5)
            return usage(argv0);
        int repeats = atoi(argv[3]);
        return run_archive(argv[2], repeats < 1 ? 1 : repeats, argv[4]);
    }
    bool external = false;
    if (argc >= 2 && strcmp(argv[1], "--external") == 0) {
        external = true;
        argc--;
        argv++;
    }
    if (argc < 2)
        return usage(argv0);
    const char *path = argv[1];
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    if (repeats < 1)
        repeats = 1;
    const char *out_dir = argc > 3 && argv[3][0] ? argv[3] : NULL;

    series ops[N_OPS];
    memset(ops, 0, sizeof ops);
    for (int i = 0; i < N_OPS; i++) {
        ops[i].name = op_names[i];
        ops[i].v = xcalloc((size_t)repeats, sizeof(double));
    }
    int identical = 0, saved_identical = -1;
    size_t arena_bytes = 0, size = 0;
    unsigned char *input = NULL;

    if (!external) {
        input = read_file(path, &size);
        time_parse(&ops[PARSE_1T], input, size, parse_opts(1, false), repeats, &arena_bytes);
        time_parse(&ops[PARSE_2T], input, size, parse_opts(2, false), repeats, NULL);
        time_parse(&ops[PARSE_NO_COPY], input, size, parse_opts(1, true), repeats, NULL);
    } else {
        struct stat st;
        if (stat(path, &st) != 0)
            die_errno("stat", path);
        size = (size_t)st.st_size;
    }

    /* One model in memory (payloads owned), serialized and saved. */
    {
        onnxio_arena *arena = onnxio_arena_new();
        onnxio_ModelProto *model = NULL;
        onnxio_parse_options lo = parse_opts(0, false);
        check(onnxio_load_model(path, &lo, arena, &model), "load_model");
        if (external)
            arena_bytes = onnxio_arena_used(arena);
        if (!external) {
            unsigned char *output = xcalloc(size, 1);
            for (int r = 0; r < repeats; r++) {
                double t0 = now();
                uint64_t out_size = onnxio_serialized_size(model);
                if (out_size != size) {
                    fprintf(stderr, "onnxio_bench: serialized size %llu differs from the input's %zu\n",
                            (unsigned long long)out_size, size);
                    identical = 0;
                    break;
                }
                check(onnxio_serialize_into(model, output, out_size), "serialize_into");
                ops[SERIALIZE].v[ops[SERIALIZE].n++] = now() - t0;
                identical = memcmp(output, input, size) == 0;
            }
            free(output);
        }
        if (out_dir) {
            char dst[4096];
            snprintf(dst, sizeof dst, "%s/onnxio_bench_out.onnx", out_dir);
            const char *location = external ? "onnxio_bench_out.onnx.data" : NULL;
            time_save(&ops[SAVE_1T], model, dst, location, 1, repeats);
            time_save(&ops[SAVE_2T], model, dst, location, 2, repeats);
            if (!external) {
                size_t saved_size;
                unsigned char *saved = read_file(dst, &saved_size);
                saved_identical = saved_size == size && memcmp(saved, input, size) == 0;
                free(saved);
            } else {
                onnxio_arena *back_arena = onnxio_arena_new();
                onnxio_ModelProto *back = NULL;
                check(onnxio_load_model(dst, &lo, back_arena, &back), "load_model (saved)");
                saved_identical = identical = onnxio_message_equal(model, back);
                onnxio_arena_unref(back_arena);
                char data[4200];
                snprintf(data, sizeof data, "%s/%s", out_dir, location);
                unlink(data);
            }
            unlink(dst);
        }
        onnxio_arena_unref(arena);
    }

    time_load(&ops[LOAD_1T], path, parse_opts(1, false), repeats);
    time_load(&ops[LOAD_2T], path, parse_opts(2, false), repeats);
    time_load(&ops[LOAD_NO_COPY], path, parse_opts(1, true), repeats);

    printf("{\"tool\": \"onnxio\", \"version\": \"%s\", \"model\": ", ONNXIO_VERSION_STRING);
    json_string(path);
    printf(", \"external\": %s, \"bytes\": %zu, \"repeats\": %d, \"arena_bytes\": %zu, ",
           external ? "true" : "false", size, repeats, arena_bytes);
    printf("\"identical\": %s, \"saved_identical\": %s, \"samples\": {",
           identical ? "true" : "false",
           saved_identical < 0 ? "null" : saved_identical ? "true" : "false");
    print_series(ops, N_OPS);
    printf("}}\n");
    for (int i = 0; i < N_OPS; i++)
        free(ops[i].v);
    free(input);
    return 0;
}
