/* onnxio bench: time loading (and saving) one model with the library's
 * options, for a quick look on the user's own files and machine. The
 * comparison with libprotobuf and the onnx package is bench/bench.py. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "walk.h"

static int run_bench(int argc, char **argv);

#define BENCH_DEFAULT_REPEAT 5
#define BENCH_MAX_REPEAT 1000

const cli_verb cli_verb_bench = {
    "bench",
    "Time loading (and saving) a model: median, fastest and slowest run.",
    "onnxio bench MODEL [--threads N] [--no-copy] [--repeat N] [--save] [--external-data LOCATION]",
    "Loads MODEL N times (external data included) and prints the median, the\n"
    "fastest and the slowest load in seconds, with the bytes loaded per second.\n"
    "The file is read once before timing, so the figures are with it in the\n"
    "page cache; freeing a loaded model is not timed. With --save, the model is\n"
    "then saved N times to a temporary directory (under $TMPDIR, else /tmp;\n"
    "removed afterwards) the way the library saves: a temporary file, fsync,\n"
    "rename.\n"
    "\n"
    "options:\n"
    "  --threads N                 threads for payload copies and writes (default\n"
    "                              0: one per core; 1: serial)\n"
    "  --no-copy                   load with no_copy: payloads stay in the file's\n"
    "                              memory mapping instead of being copied\n"
    "  --repeat N                  runs of each step (default 5, at most 1000)\n"
    "  --save                      also time saving the model as one file\n"
    "  --external-data LOCATION    also time saving it with payloads of 1024\n"
    "                              bytes or more in the data file LOCATION (a\n"
    "                              plain file name; implies --save)\n"
    "  --help                      show this help\n"
    "\n"
    "This is a quick measurement, not a comparison: see BENCHMARKS.md for\n"
    "onnxio against libprotobuf and the onnx package.\n",
    run_bench,
    NULL,
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts `v` and prints one result line. */
static void report(const char *what, double *v, int n, uint64_t bytes)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    char rate[40] = "";
    if (med > 0 && bytes > 0) {
        char hs[32];
        snprintf(rate, sizeof rate, ", %s/s", cli_human_size((uint64_t)((double)bytes / med), hs, sizeof hs));
    }
    printf("%-34s median %.4f s  (fastest %.4f s, slowest %.4f s, %d runs%s)\n", what, med, v[0],
           v[n - 1], n, rate);
}

typedef struct payload_count {
    uint64_t bytes;
    uint64_t tensors;
} payload_count;

static void count_payload(void *ctx, void *msg)
{
    payload_count *c = ctx;
    if (cli_is(msg, &onnxio_desc_TensorProto) && ((onnxio_TensorProto *)msg)->raw_data.size) {
        c->bytes += ((onnxio_TensorProto *)msg)->raw_data.size;
        c->tensors++;
    }
}

/* Reads the whole file once so that every timed run finds it in the page
 * cache, as the first would not. */
static void warm_file(const char *path)
{
    enum { CHUNK = 1 << 16 };
    FILE *f = fopen(path, "rb");
    /* Heap, not static: cli_main keeps no state between calls. */
    char *buf = malloc(CHUNK);
    if (f && buf)
        while (fread(buf, 1, CHUNK, f) == CHUNK)
            ;
    free(buf);
    if (f)
        fclose(f);
}

static int parse_count(const char *text, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int time_saves(onnxio_ModelProto *model, const char *dir, const char *location, int threads,
                      double *v, int repeat, const char *in)
{
    char path[PATH_MAX], data[PATH_MAX];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    snprintf(data, sizeof data, "%s/%s", dir, location ? location : "");
    onnxio_serialize_options so = {0};
    so.num_threads = threads;
    so.external_data.location = location;
    /* 0: the library's default threshold (1024 bytes, as --help says). */
    so.external_data.size_threshold = 0;
    int rc = CLI_EXIT_OK;
    for (int r = 0; r < repeat; r++) {
        double t0 = now();
        if (onnxio_save_model(model, path, &so) != ONNXIO_OK) {
            rc = cli_fail("bench", in);
            break;
        }
        v[r] = now() - t0;
    }
    struct stat st;
    uint64_t written = 0;
    if (stat(path, &st) == 0)
        written += (uint64_t)st.st_size;
    if (location && stat(data, &st) == 0)
        written += (uint64_t)st.st_size;
    unlink(path);
    if (location)
        unlink(data);
    if (rc == CLI_EXIT_OK) {
        char label[80];
        snprintf(label, sizeof label, location ? "save, external data:" : "save:");
        report(label, v, repeat, written);
    }
    return rc;
}

static int run_bench(int argc, char **argv)
{
    const char *threads_text = NULL, *repeat_text = NULL, *location = NULL;
    int no_copy = 0, save = 0;
    const cli_option opts[] = {
        {"threads", &threads_text, NULL},
        {"repeat", &repeat_text, NULL},
        {"external-data", &location, NULL},
        {"no-copy", NULL, &no_copy},
        {"save", NULL, &save},
    };
    char *pos[1];
    size_t npos;
    int rc = cli_parse_args(&cli_verb_bench, argc, argv, opts, sizeof opts / sizeof opts[0], pos, 1, 1,
                            &npos);
    if (rc >= 0)
        return rc;
    const char *in = pos[0];
    long threads = 0, repeat = BENCH_DEFAULT_REPEAT;
    if (threads_text && parse_count(threads_text, 0, 1024, &threads) != 0)
        return cli_usage_error(&cli_verb_bench, "invalid thread count '%s' (0 to 1024)", threads_text);
    if (repeat_text && parse_count(repeat_text, 1, BENCH_MAX_REPEAT, &repeat) != 0)
        return cli_usage_error(&cli_verb_bench, "invalid repeat count '%s' (1 to %d)", repeat_text,
                               BENCH_MAX_REPEAT);
    if (location && (location[0] == '\0' || strchr(location, '/') || strcmp(location, ".") == 0 ||
                     strcmp(location, "..") == 0 || strcmp(location, "model.onnx") == 0))
        return cli_usage_error(&cli_verb_bench,
                               "--external-data needs a plain file name other than model.onnx");

    struct stat st;
    if (stat(in, &st) != 0)
        return cli_fail_msg("bench", in, "%s", strerror(errno));
    warm_file(in);

    double *v = calloc((size_t)repeat, sizeof *v);
    if (!v)
        return cli_fail_msg("bench", in, "out of memory");
    onnxio_parse_options po = {0};
    po.num_threads = (int)threads;
    po.no_copy = no_copy != 0;

    /* The first load also warms external data files and gives the sizes. */
    onnxio_arena *arena = onnxio_arena_new();
    onnxio_ModelProto *model = NULL;
    if (!arena) {
        free(v);
        return cli_fail_msg("bench", in, "out of memory");
    }
    if (onnxio_load_model(in, &po, arena, &model) != ONNXIO_OK) {
        rc = cli_fail("bench", in);
        onnxio_arena_unref(arena);
        free(v);
        return rc;
    }
    payload_count pc = {0, 0};
    cli_walk(model, count_payload, &pc);
    char hs1[32], hs2[32], hs3[32];
    printf("%s: %s file, %s in %llu tensor payloads, %s of structure\n", in,
           cli_human_size((uint64_t)st.st_size, hs1, sizeof hs1), cli_human_size(pc.bytes, hs2, sizeof hs2),
           (unsigned long long)pc.tensors, cli_human_size(onnxio_arena_used(arena), hs3, sizeof hs3));
    onnxio_arena_unref(arena);

    for (long r = 0; r < repeat && rc < 0; r++) {
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        if (!a) {
            rc = cli_fail_msg("bench", in, "out of memory");
            break;
        }
        double t0 = now();
        onnxio_status s = onnxio_load_model(in, &po, a, &m);
        v[r] = now() - t0;
        if (s != ONNXIO_OK)
            rc = cli_fail("bench", in);
        onnxio_arena_unref(a);
    }
    if (rc < 0) {
        char label[80];
        snprintf(label, sizeof label, "load (%s, num_threads %ld):", no_copy ? "no_copy" : "copy", threads);
        report(label, v, (int)repeat, no_copy ? 0 : pc.bytes);
    }

    if (rc < 0 && (save || location)) {
        /* Saved from a copy-mode load so that the payloads do not depend on
         * the input file staying as it is. */
        onnxio_parse_options lo = {0};
        lo.num_threads = (int)threads;
        const char *tmpdir = getenv("TMPDIR");
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/onnxio-bench-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
        arena = onnxio_arena_new();
        model = NULL;
        if (!arena)
            rc = cli_fail_msg("bench", in, "out of memory");
        else if (onnxio_load_model(in, &lo, arena, &model) != ONNXIO_OK)
            rc = cli_fail("bench", in);
        else if (!mkdtemp(dir))
            rc = cli_fail_msg("bench", dir, "cannot create a temporary directory: %s", strerror(errno));
        else {
            int r2 = CLI_EXIT_OK;
            if (save)
                r2 = time_saves(model, dir, NULL, (int)threads, v, (int)repeat, in);
            if (r2 == CLI_EXIT_OK && location)
                r2 = time_saves(model, dir, location, (int)threads, v, (int)repeat, in);
            rmdir(dir);
            if (r2 != CLI_EXIT_OK)
                rc = r2;
        }
        onnxio_arena_unref(arena);
    }
    free(v);
    return cli_finish_stdout("bench", rc < 0 ? CLI_EXIT_OK : rc);
}
