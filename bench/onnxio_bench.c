/*
 * onnxio's side of the benchmarks: times the library's load and save paths
 * on one model file.
 *
 *   bench/out/onnxio_bench MODEL.onnx [REPEATS] [OUT_DIR] [THREADS]
 *
 * Built by `make bench` against build/libonnxio.a. Every figure is the best
 * of REPEATS runs (default 5), in seconds, with the file already in the page
 * cache; "samples" has every run:
 *   parse                onnxio_parse of the whole file held in memory, copy
 *                        mode (payloads copied into owned buffers)
 *   parse_no_copy        the same with no_copy: payloads borrow the input
 *   serialize            onnxio_serialized_size + onnxio_serialize_into a
 *                        preallocated buffer
 *   load_file            onnxio_load_model (mmap, payloads copied)
 *   load_file_no_copy    onnxio_load_model with no_copy (payloads stay in the
 *                        mapping)
 *   save_file            onnxio_save_model to OUT_DIR (temporary file, fsync,
 *                        rename); skipped without OUT_DIR
 * Freeing the arena is not timed. THREADS sets num_threads in the options
 * (default 0: one per core). It also checks that serializing gives back the
 * input bytes, and that the saved file equals the input. Prints one JSON
 * object on stdout; on a library error prints it on stderr and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "onnxio/onnxio.h"

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

static unsigned char *read_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        die_errno("open", path);
    struct stat st;
    if (fstat(fd, &st) != 0)
        die_errno("stat", path);
    size_t n = (size_t)st.st_size;
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf) {
        fprintf(stderr, "onnxio_bench: out of memory\n");
        exit(1);
    }
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
    double best;
    double *v;
    int n;
} series;

static void record(series *s, double t)
{
    s->v[s->n++] = t;
    if (s->n == 1 || t < s->best)
        s->best = t;
}

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

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.onnx [REPEATS] [OUT_DIR] [THREADS]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    if (repeats < 1)
        repeats = 1;
    const char *out_dir = argc > 3 && argv[3][0] ? argv[3] : NULL;
    int threads = argc > 4 ? atoi(argv[4]) : 0;

    size_t size;
    unsigned char *input = read_file(path, &size);

    onnxio_parse_options copy_opts = {0};
    copy_opts.num_threads = threads;
    onnxio_parse_options borrow_opts = copy_opts;
    borrow_opts.no_copy = true;

    enum { PARSE, PARSE_NO_COPY, SERIALIZE, LOAD_FILE, LOAD_FILE_NO_COPY, SAVE_FILE, N_OPS };
    static const char *const op_names[N_OPS] = {"parse", "parse_no_copy", "serialize",
                                                "load_file", "load_file_no_copy", "save_file"};
    series ops[N_OPS];
    memset(ops, 0, sizeof ops);
    for (int i = 0; i < N_OPS; i++) {
        ops[i].name = op_names[i];
        ops[i].v = calloc((size_t)repeats, sizeof(double));
        if (!ops[i].v) {
            fprintf(stderr, "onnxio_bench: out of memory\n");
            return 1;
        }
    }
    int identical = 0, saved_identical = -1;
    size_t arena_bytes = 0;

    for (int r = 0; r < repeats; r++) {
        onnxio_arena *arena = onnxio_arena_new();
        void *msg = NULL;
        double t0 = now();
        check(onnxio_parse(&onnxio_desc_ModelProto, input, size, NULL, &copy_opts, arena, &msg), "parse");
        record(&ops[PARSE], now() - t0);
        arena_bytes = onnxio_arena_used(arena);
        onnxio_arena_unref(arena);
    }

    for (int r = 0; r < repeats; r++) {
        onnxio_arena *arena = onnxio_arena_new();
        void *msg = NULL;
        double t0 = now();
        check(onnxio_parse(&onnxio_desc_ModelProto, input, size, NULL, &borrow_opts, arena, &msg),
              "parse (no_copy)");
        record(&ops[PARSE_NO_COPY], now() - t0);
        onnxio_arena_unref(arena);
    }

    {
        onnxio_arena *arena = onnxio_arena_new();
        void *msg = NULL;
        check(onnxio_parse(&onnxio_desc_ModelProto, input, size, NULL, &copy_opts, arena, &msg), "parse");
        unsigned char *output = malloc(size ? size : 1);
        if (!output) {
            fprintf(stderr, "onnxio_bench: out of memory\n");
            return 1;
        }
        uint64_t out_size = 0;
        for (int r = 0; r < repeats; r++) {
            double t0 = now();
            out_size = onnxio_serialized_size(msg);
            if (out_size != size) {
                fprintf(stderr, "onnxio_bench: serialized size %llu differs from the input's %zu\n",
                        (unsigned long long)out_size, size);
                identical = 0;
                break;
            }
            check(onnxio_serialize_into(msg, output, out_size), "serialize_into");
            record(&ops[SERIALIZE], now() - t0);
            identical = memcmp(output, input, size) == 0;
        }
        free(output);

        if (out_dir) {
            char dst[4096];
            snprintf(dst, sizeof dst, "%s/onnxio_bench_out.onnx", out_dir);
            onnxio_serialize_options sopts = {0};
            sopts.num_threads = threads;
            for (int r = 0; r < repeats; r++) {
                double t0 = now();
                check(onnxio_save_model((onnxio_ModelProto *)msg, dst, &sopts), "save_model");
                record(&ops[SAVE_FILE], now() - t0);
            }
            size_t saved_size;
            unsigned char *saved = read_file(dst, &saved_size);
            saved_identical = saved_size == size && memcmp(saved, input, size) == 0;
            free(saved);
            unlink(dst);
        }
        onnxio_arena_unref(arena);
    }

    for (int r = 0; r < repeats; r++) {
        onnxio_arena *arena = onnxio_arena_new();
        onnxio_ModelProto *model = NULL;
        double t0 = now();
        check(onnxio_load_model(path, &copy_opts, arena, &model), "load_model");
        record(&ops[LOAD_FILE], now() - t0);
        onnxio_arena_unref(arena);
    }

    for (int r = 0; r < repeats; r++) {
        onnxio_arena *arena = onnxio_arena_new();
        onnxio_ModelProto *model = NULL;
        double t0 = now();
        check(onnxio_load_model(path, &borrow_opts, arena, &model), "load_model (no_copy)");
        record(&ops[LOAD_FILE_NO_COPY], now() - t0);
        onnxio_arena_unref(arena);
    }

    printf("{\"tool\": \"onnxio\", \"version\": \"%s\", \"model\": ", ONNXIO_VERSION_STRING);
    json_string(path);
    printf(", \"bytes\": %zu, \"repeats\": %d, \"threads\": %d, \"arena_bytes\": %zu, ",
           size, repeats, threads, arena_bytes);
    for (int i = 0; i < N_OPS; i++) {
        if (ops[i].n)
            printf("\"%s\": %.6f, ", ops[i].name, ops[i].best);
        else
            printf("\"%s\": null, ", ops[i].name);
    }
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
