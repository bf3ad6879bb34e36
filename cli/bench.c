/* onnxio bench: time loading (and saving) one model with the library's
 * options, for a quick look on the user's own files and machine. The
 * comparison with libprotobuf and the onnx package is bench/bench.py. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "port.h"
#include "summary.h"
#include "walk.h"

static int run_bench(int argc, char **argv);

#define BENCH_DEFAULT_REPEAT 5
#define BENCH_MAX_REPEAT 1000

const cli_verb cli_verb_bench = {
    "bench",
    "Time loading (and saving) a model: median, fastest and slowest run.",
    "onnxio bench MODEL [--threads N] [--no-copy] [--no-direct-io] [--repeat N] [--cold] [--save] [--external-data LOCATION]",
    "Loads MODEL N times (external data included) and prints the median, the\n"
    "fastest and the slowest load in seconds, with the bytes loaded per second.\n"
    "The files (the model and its external data files) are read once before\n"
    "timing, so the figures are with them in the page cache; freeing a loaded model is not timed. With --cold, the model's\n"
    "files (the model, and its external data files) are dropped from the page\n"
    "cache before each load (posix_fadvise DONTNEED, after a sync), and each\n"
    "load follows a read(2) of the same files, dropped from the cache the same\n"
    "way, in 1 MiB calls: the reference, printed with the load's median over\n"
    "its median (pages another process keeps in memory, or that it keeps\n"
    "dirty, stay cached: the figures then say less). With --save, the model is\n"
    "then saved N times to a temporary directory (under $TMPDIR, else /tmp;\n"
    "removed afterwards) the way the library saves: a temporary file, fsync,\n"
    "rename.\n"
    "\n"
    "options:\n"
    "  --threads N                 threads for payload copies and writes (default\n"
    "                              0: one per core; 1: serial)\n"
    "  --no-copy                   load with no_copy: payloads stay in the file's\n"
    "                              memory mapping instead of being copied\n"
    "  --no-direct-io              read every payload through the page cache\n"
    "                              (direct_io off; by default a copy load reads\n"
    "                              the ranges the cache does not hold directly)\n"
    "  --repeat N                  runs of each step (default 5, at most 1000)\n"
    "  --cold                      time loads from storage, not the page cache,\n"
    "                              against reading the same files\n"
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

/* Sorts `v` and returns its median. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Sorts `v`, prints one result line and returns the median. */
static double report(const char *what, double *v, int n, uint64_t bytes)
{
    double med = median(v, n);
    char rate[40] = "";
    if (med > 0 && bytes > 0) {
        char hs[32];
        snprintf(rate, sizeof rate, ", %s/s", cli_human_size((uint64_t)((double)bytes / med), hs, sizeof hs));
    }
    printf("%-34s median %.4f s  (fastest %.4f s, slowest %.4f s, %d runs%s)\n", what, med, v[0],
           v[n - 1], n, rate);
    return med;
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

/* The files a cold run drops from the page cache and reads: open
 * descriptors, with the names they are printed by. */
typedef struct bench_files {
    int fd[64];
    char *name[64];
    size_t count;
} bench_files;

/* Adds the open file `fd`, printed as `name` (name_size bytes) in the
 * directory `dir` (NULL: `name` alone); -1 when out of memory (fd is
 * closed). */
static int add_file(bench_files *f, int fd, const char *dir, const char *name, size_t name_size)
{
    if (f->count == sizeof f->fd / sizeof f->fd[0]) {
        close(fd);
        return 0; /* the first 64 files: enough for a measurement */
    }
    size_t n = dir ? strlen(dir) + 1 : 0;
    char *p = malloc(n + name_size + 1);
    if (!p) {
        close(fd);
        return -1;
    }
    if (dir) snprintf(p, n + 1, "%s/", dir);
    memcpy(p + n, name, name_size);
    p[n + name_size] = '\0';
    f->fd[f->count] = fd;
    f->name[f->count++] = p;
    return 0;
}

static void free_files(bench_files *f)
{
    for (size_t i = 0; i < f->count; i++) {
        close(f->fd[i]);
        free(f->name[i]);
    }
    f->count = 0;
}

/* The files a load of the model at `path` reads: the model, and the
 * external data files it names that are there, opened as the library opens
 * them (an archive is one file). -1 when the model does not load or when
 * out of memory (the reason printed). */
static int model_files(const char *path, bench_files *files)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_fail_msg("bench", path, "%s", strerror(errno));
        return -1;
    }
    if (add_file(files, fd, NULL, path, strlen(path)) != 0) {
        cli_fail_msg("bench", path, "out of memory");
        return -1;
    }
    onnxio_parse_options po = {0};
    po.load_external_data = ONNXIO_OFF;
    po.skip_raw_data = true;
    po.no_copy = true;
    onnxio_arena *arena = onnxio_arena_new();
    onnxio_ModelProto *model = NULL;
    cli_summary sum;
    int rc = -1;
    if (!arena) {
        cli_fail_msg("bench", path, "out of memory");
    } else if (cli_load(&onnxio_desc_ModelProto, path, &po, true, arena, (void **)&model) != ONNXIO_OK) {
        cli_fail("bench", path);
    } else if (cli_summarize(model, path, &sum) != 0) {
        cli_summary_free(&sum);
        cli_fail_msg("bench", path, "out of memory");
    } else {
        /* Printed as the model's directory, then the location. */
        char *dir = cli_model_dir(path, NULL);
        rc = dir ? 0 : -1;
        for (size_t i = 0; rc == 0 && !sum.in_archive && i < sum.ext_count; i++) {
            const cli_external_file *f = &sum.ext[i];
            uint64_t size;
            onnxio_status st = f->exists ? cli_open_external(path, f->location, &fd, &size) : ONNXIO_ERR_NOT_FOUND;
            if (st == ONNXIO_OK)
                rc = add_file(files, fd, dir, f->location.data, f->location.size);
            else if (st == ONNXIO_ERR_NO_MEMORY)
                rc = -1;
        }
        if (rc != 0)
            cli_fail_msg("bench", path, "out of memory");
        free(dir);
        cli_summary_free(&sum);
    }
    onnxio_arena_unref(arena);
    return rc;
}

/* Drops the files' pages from the page cache (clean pages only: the caller
 * syncs first). */
static void evict(const bench_files *files)
{
#ifdef POSIX_FADV_DONTNEED /* not on macOS: its "cold" runs are warm */
    for (size_t i = 0; i < files->count; i++)
        (void)posix_fadvise(files->fd[i], 0, 0, POSIX_FADV_DONTNEED);
#else
    (void)files;
#endif
}

/* Reads the files through in 1 MiB read(2) calls: the reference of a cold
 * load. Returns the seconds, or a negative value when a read fails. */
static double time_read(const bench_files *files, char *buf, size_t size)
{
    double t0 = now();
    for (size_t i = 0; i < files->count; i++) {
        ssize_t n;
        if (lseek(files->fd[i], 0, SEEK_SET) != 0)
            return -1;
        while ((n = read(files->fd[i], buf, size)) > 0)
            ;
        if (n < 0)
            return -1;
    }
    return now() - t0;
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
    int no_copy = 0, save = 0, cold = 0, no_direct = 0;
    const cli_option opts[] = {
        {"threads", &threads_text, NULL},
        {"repeat", &repeat_text, NULL},
        {"external-data", &location, NULL},
        {"no-copy", NULL, &no_copy},
        {"no-direct-io", NULL, &no_direct},
        {"cold", NULL, &cold},
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
    if (location && (location[0] == '\0' || onnxio_path_file_name(location) != location || strcmp(location, ".") == 0 ||
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
    po.direct_io = no_direct ? ONNXIO_OFF : ONNXIO_DEFAULT;

    /* The first load also warms external data files and gives the sizes. */
    onnxio_arena *arena = onnxio_arena_new();
    onnxio_ModelProto *model = NULL;
    if (!arena) {
        free(v);
        return cli_fail_msg("bench", in, "out of memory");
    }
    if (cli_file_is_empty(in) || cli_load(&onnxio_desc_ModelProto, in, &po, false, arena, (void **)&model) != ONNXIO_OK) {
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

    /* Cold: the files, the reference reads' buffer and their times. */
    bench_files files = {.count = 0};
    enum { READ_CHUNK = 1 << 20 };
    char *read_buf = NULL;
    double *read_v = NULL;
    if (rc < 0) {
        if (model_files(in, &files) != 0)
            rc = CLI_EXIT_FAILURE;
        else if (!(read_buf = malloc(READ_CHUNK)) || !(read_v = calloc((size_t)repeat, sizeof *read_v)))
            rc = cli_fail_msg("bench", in, "out of memory");
        else if (!cold) {
            /* Warm: every file read through once (a load that reads cold
             * files directly leaves them out of the page cache). */
            if (time_read(&files, read_buf, READ_CHUNK) < 0)
                rc = cli_fail_msg("bench", in, "cannot read the model's files: %s", strerror(errno));
        } else {
            printf("cold: before each run, the page cache of %zu file%s dropped:", files.count,
                   files.count == 1 ? "" : "s");
            for (size_t i = 0; i < files.count; i++)
                printf(" %s", files.name[i]);
            printf("\n");
            cli_sync();
        }
    }
    for (long r = 0; r < repeat && rc < 0; r++) {
        if (cold) {
            evict(&files);
            if ((read_v[r] = time_read(&files, read_buf, READ_CHUNK)) < 0) {
                rc = cli_fail_msg("bench", in, "cannot read the model's files: %s", strerror(errno));
                break;
            }
            evict(&files);
        }
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        if (!a) {
            rc = cli_fail_msg("bench", in, "out of memory");
            break;
        }
        double t0 = now();
        onnxio_status s = cli_load(&onnxio_desc_ModelProto, in, &po, false, a, (void **)&m);
        v[r] = now() - t0;
        if (s != ONNXIO_OK)
            rc = cli_fail("bench", in);
        onnxio_arena_unref(a);
    }
    if (rc < 0) {
        char label[80];
        if (cold) {
            uint64_t file_bytes = 0;
            struct stat fst;
            for (size_t i = 0; i < files.count; i++)
                if (fstat(files.fd[i], &fst) == 0)
                    file_bytes += (uint64_t)fst.st_size;
            report("read(2) of the same files, cold:", read_v, (int)repeat, file_bytes);
        }
        snprintf(label, sizeof label, "load (%s, num_threads %ld%s%s):", no_copy ? "no_copy" : "copy", threads,
                 no_direct ? ", direct_io off" : "", cold ? ", cold" : "");
        double load_median = report(label, v, (int)repeat, no_copy ? 0 : pc.bytes);
        if (cold) {
            double read_median = median(read_v, (int)repeat);
            if (read_median > 0)
                printf("load / read: %.3f (medians)\n", load_median / read_median);
        }
    }
    free_files(&files);
    free(read_buf);
    free(read_v);

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
        else if (cli_load(&onnxio_desc_ModelProto, in, &lo, false, arena, (void **)&model) != ONNXIO_OK)
            rc = cli_fail("bench", in);
        else if (!cli_mkdtemp(dir))
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
