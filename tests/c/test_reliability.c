/* Regressions of the file handling ("nothing crashes, nothing is lost"), each
 * reproducing a finding: modes and the umask, special files and symlinks as
 * external data, outputs that are symlinks, devices or read-only, and saves
 * that move nothing, the journal of a dead save (the crash-point sweep is in
 * test_faults), the option structs' sizes, and what a file is. The reference
 * is the file system itself (stat, lstat, the bytes on disk) and the
 * serialized bytes of the model. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#ifndef _WIN32
#include <sys/mman.h>
#endif
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/io.h" /* the fault layer's counter of fsync calls */
#include "testutil.h"

/* ---- a model -------------------------------------------------------------- */

/* Three FLOAT initializers of 1024 floats (4 KiB payloads) and one of 4. */
static onnxio_ModelProto *small_model(onnxio_arena *a, unsigned seed)
{
    static const int64_t counts[] = {1024, 1024, 1024, 4};
    return tu_model_of_initializers(a, 4, counts, ONNXIO_TensorProto_DataType_FLOAT, 4, seed);
}

static bool file_is(const char *path, const uint8_t *want, size_t n)
{
    size_t got_n;
    uint8_t *got = tu_read_file(path, &got_n);
    bool same = got && got_n == n && memcmp(got, want, n) == 0;
    free(got);
    return same;
}

/* The names in `dir`, space-separated, sorted (for comparisons). */
static char *listing(const char *dir)
{
    tu_strlist l = {0};
    tu_list_dir(dir, &l);
    size_t cap = 1;
    for (size_t i = 0; i < l.size; i++) cap += strlen(l.items[i]) + 1;
    char *s = calloc(1, cap);
    for (size_t i = 0; i < l.size; i++) {
        if (i) strcat(s, " ");
        strcat(s, l.items[i]);
    }
    tu_strlist_free(&l);
    return s;
}

#ifndef _WIN32
/* Modes, symlinks, FIFOs and devices: POSIX's (the Windows build names
 * these groups as skipped in main). */
/* The model's protobuf bytes (malloc'd). */
static uint8_t *bytes_of(void *m, size_t *n)
{
    onnxio_buffer *b = NULL;
    if (onnxio_serialize(m, &b)) abort();
    *n = onnxio_buffer_size(b);
    uint8_t *p = malloc(*n ? *n : 1);
    memcpy(p, onnxio_buffer_data(b), *n);
    onnxio_buffer_unref(b);
    return p;
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

/* ---- item 3: file modes without touching the umask ------------------------ */

typedef struct creator {
    const char *dir;
    atomic_int stop;
    long made, wrong;
} creator;

/* Creates files with mode 0666 as fast as it can and counts those whose
 * mode is not 0666 minus the process umask (022): what a save that sets
 * umask(0) for a moment makes other threads create. */
static void *create_files(void *arg)
{
    creator *c = arg;
    char path[512];
    for (long i = 0; !atomic_load(&c->stop); i++) {
        snprintf(path, sizeof path, "%s/f%ld", c->dir, i % 64);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0) continue;
        struct stat st;
        if (fstat(fd, &st) == 0 && (st.st_mode & 0777) != 0644) c->wrong++;
        c->made++;
        close(fd);
        unlink(path);
    }
    return NULL;
}

static void test_modes(void)
{
    tu_begin("item 3, item 11: modes of saved files, the umask never changed");
    char *dir = tu_make_temp_dir("modes");
    char *path = tu_path_join(dir, "m.onnx");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = small_model(a, 1);
    size_t n;
    uint8_t *want = bytes_of(m, &n);
    mode_t old = umask(022);

    /* A new file: 0666 minus the umask, as open(2) makes it. */
    CHECK_STATUS(onnxio_save_model(m, path, NULL), ONNXIO_OK);
    CHECK_EQ_INT(mode_of(path), 0644);
    umask(077);
    unlink(path);
    CHECK_STATUS(onnxio_save_model(m, path, NULL), ONNXIO_OK);
    CHECK_EQ_INT(mode_of(path), 0600);
    umask(022);
    /* An existing file keeps its mode, whatever the umask. */
    chmod(path, 0640);
    CHECK_STATUS(onnxio_save_model(m, path, NULL), ONNXIO_OK);
    CHECK_EQ_INT(mode_of(path), 0640);
    chmod(path, 0664);
    onnxio_serialize_options ext = ONNXIO_SERIALIZE_OPTIONS_INIT;
    ext.external_data.location = "m.data";
    CHECK_STATUS(onnxio_save_model(m, path, &ext), ONNXIO_OK);
    CHECK_EQ_INT(mode_of(path), 0664);
    char *data = tu_path_join(dir, "m.data");
    CHECK_EQ_INT(mode_of(data), 0644);
    chmod(data, 0600);
    CHECK_STATUS(onnxio_save_model(m, path, &ext), ONNXIO_OK);
    CHECK_EQ_INT(mode_of(data), 0600);

    /* A read-only output: refused unless this process may write it anyway
     * (root), as cp and open(O_WRONLY) decide; its mode is kept. */
    unlink(data);
    CHECK_STATUS(onnxio_save_model(m, path, NULL), ONNXIO_OK);
    chmod(path, 0444);
    onnxio_ModelProto *other = small_model(a, 2);
    onnxio_status st = onnxio_save_model(other, path, NULL);
    if (geteuid() != 0) {
        CHECK_STATUS(st, ONNXIO_ERR_IO);
        CHECK(strstr(onnxio_last_error(), "read-only") != NULL);
        CHECK(file_is(path, want, n));
    } else {
        CHECK_STATUS(st, ONNXIO_OK);
        tu_note("running as root: a 0444 output is replaced, as cp does, and stays 0444");
    }
    CHECK_EQ_INT(mode_of(path), 0444);
    chmod(path, 0644);

    /* Files other threads create meanwhile get their own mode: the save
     * never sets the umask (before: umask(0) for a moment in every save). */
    char *sub = tu_path_join(dir, "other");
    mkdir(sub, 0777);
    creator c = {.dir = sub};
    pthread_t th;
    pthread_create(&th, NULL, create_files, &c);
    time_t end = time(NULL) + 2;
    int saves = 0;
    while (time(NULL) < end) {
        if (onnxio_save_model(m, path, NULL) != ONNXIO_OK) break;
        saves++;
    }
    atomic_store(&c.stop, 1);
    pthread_join(th, NULL);
    CHECK_MSG(c.wrong == 0, "%ld of %ld files made during %d saves got a mode other than 0644", c.wrong, c.made, saves);
    tu_note("%d saves, %ld files made by another thread meanwhile, %ld with a wrong mode", saves, c.made, c.wrong);
    char *l = listing(dir);
    CHECK_STR(l, "m.onnx other");
    free(l);

    umask(old);
    onnxio_arena_unref(a);
    free(want);
    free(data);
    free(sub);
    free(path);
    tu_remove_tree(dir);
    free(dir);
    tu_end();
}

/* ---- item 11: symlinks, devices and pipes as outputs ------------------------ */

typedef struct reader {
    const char *path;
    uint8_t *data;
    size_t size;
} reader;

static void *read_all(void *arg)
{
    reader *r = arg;
    int fd = open(r->path, O_RDONLY);
    size_t cap = 1 << 16;
    r->data = malloc(cap);
    r->size = 0;
    for (;;) {
        if (r->size == cap) r->data = realloc(r->data, cap *= 2);
        ssize_t k = read(fd, r->data + r->size, cap - r->size);
        if (k <= 0) break;
        r->size += (size_t)k;
    }
    close(fd);
    return NULL;
}

static void test_outputs(void)
{
    tu_begin("item 11: symlinked, special and read-only outputs; saves that move nothing");
    char *dir = tu_make_temp_dir("outputs");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = small_model(a, 3);
    size_t n;
    uint8_t *want = bytes_of(m, &n);

    /* A symlink is written through to its target, and stays a link. */
    char *real = tu_path_join(dir, "real.onnx"), *link = tu_path_join(dir, "link.onnx");
    char *link2 = tu_path_join(dir, "link2.onnx");
    tu_write_file(real, "old", 3);
    CHECK(symlink("real.onnx", link) == 0 && symlink("link.onnx", link2) == 0);
    CHECK_STATUS(onnxio_save_model(m, link2, NULL), ONNXIO_OK);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(lstat(link2, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(file_is(real, want, n));
    /* A dangling link: its target is created, as creat(2) through it would. */
    char *dangling = tu_path_join(dir, "dangling.onnx"), *made = tu_path_join(dir, "made.onnx");
    CHECK(symlink("made.onnx", dangling) == 0);
    CHECK_STATUS(onnxio_save_model(m, dangling, NULL), ONNXIO_OK);
    CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(file_is(made, want, n));
    /* An archive through a link too. */
    char *zreal = tu_path_join(dir, "real.onnxz"), *zlink = tu_path_join(dir, "zlink.onnxz");
    tu_write_file(zreal, "old", 3);
    CHECK(symlink("real.onnxz", zlink) == 0);
    CHECK_STATUS(onnxio_save_model(m, zlink, NULL), ONNXIO_OK);
    CHECK(lstat(zlink, &st) == 0 && S_ISLNK(st.st_mode));
    onnxio_arena *b = onnxio_arena_new();
    onnxio_ModelProto *back = NULL;
    CHECK_STATUS(onnxio_load_model(zreal, NULL, b, &back), ONNXIO_OK);
    CHECK(back && tu_equal_as_loaded(back, m));
    onnxio_arena_unref(b);

    /* Not a regular file: /dev/null, a FIFO (what /dev/stdout often is) are
     * written in one pass, never replaced. */
    CHECK_STATUS(onnxio_save_model(m, "/dev/null", NULL), ONNXIO_OK);
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    char *fifo = tu_path_join(dir, "out.fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    reader r = {fifo, NULL, 0};
    pthread_t th;
    pthread_create(&th, NULL, read_all, &r);
    CHECK_STATUS(onnxio_save_model(m, fifo, NULL), ONNXIO_OK);
    pthread_join(th, NULL);
    CHECK_BYTES(r.data, r.size, want, n);
    free(r.data);
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    /* through /proc/self/fd, as /dev/stdout is: a pipe */
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", pfd[1]);
    char rproc[64];
    snprintf(rproc, sizeof rproc, "/proc/self/fd/%d", pfd[0]);
    reader pr = {rproc, NULL, 0};
    pthread_create(&th, NULL, read_all, &pr);
    CHECK_STATUS(onnxio_save_model(m, proc, NULL), ONNXIO_OK);
    close(pfd[1]);
    pthread_join(th, NULL);
    close(pfd[0]);
    CHECK_BYTES(pr.data, pr.size, want, n);
    free(pr.data);
    /* What needs seeking or a directory is refused, leaving nothing. */
    onnxio_serialize_options ext = ONNXIO_SERIALIZE_OPTIONS_INIT;
    ext.external_data.location = "out.data";
    char *before = listing(dir);
    CHECK_STATUS(onnxio_save_model(m, "/dev/null", &ext), ONNXIO_ERR_IO);
    CHECK_STATUS(onnxio_save_archive(m, "/dev/null", NULL), ONNXIO_ERR_IO);
    CHECK_STATUS(onnxio_save_model(m, dir, NULL), ONNXIO_ERR_IO);
    char *after = listing(dir);
    CHECK_STR(after, before);
    free(before);
    free(after);

    /* External data that moves nothing writes no data file. */
    char *sub = tu_path_join(dir, "nothing");
    mkdir(sub, 0777);
    char *p = tu_path_join(sub, "m.onnx");
    onnxio_serialize_options big = ONNXIO_SERIALIZE_OPTIONS_INIT;
    big.external_data.location = "m.data";
    big.external_data.size_threshold = 1 << 20;
    CHECK_STATUS(onnxio_save_model(m, p, &big), ONNXIO_OK);
    char *l = listing(sub);
    CHECK_STR(l, "m.onnx");
    free(l);
    CHECK(file_is(p, want, n));

    onnxio_arena_unref(a);
    free(want);
    free(real);
    free(link);
    free(link2);
    free(dangling);
    free(made);
    free(zreal);
    free(zlink);
    free(fifo);
    free(sub);
    free(p);
    tu_remove_tree(dir);
    free(dir);
    tu_end();
}

/* ---- items 6 and 7: special files and symlinks as external data --------------- */

/* A model whose initializer "w" (UINT8, 16) refers to `location`. */
static void write_ref_model(const char *path, const char *location)
{
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    onnxio_TensorProto *t = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
    tu_set_string(a, t, &t->name, ONNXIO_FIELD_TensorProto_name, "w");
    *(int64_t *)onnxio_array_append(a, &t->dims, sizeof(int64_t)) = 16;
    t->data_type = ONNXIO_TensorProto_DataType_UINT8;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    onnxio_StringStringEntryProto *e = onnxio_list_add(a, &t->external_data, &onnxio_desc_StringStringEntryProto);
    tu_set_string(a, e, &e->key, ONNXIO_FIELD_StringStringEntryProto_key, "location");
    tu_set_string(a, e, &e->value, ONNXIO_FIELD_StringStringEntryProto_value, location);
    t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    if (onnxio_save_file(m, path, NULL)) abort();
    onnxio_arena_unref(a);
}

typedef struct fifo_writer {
    const char *path;
    atomic_int opened;
} fifo_writer;

/* Blocks in open(O_WRONLY) until some reader opens the FIFO. */
static void *open_for_writing(void *arg)
{
    fifo_writer *w = arg;
    int fd = open(w->path, O_WRONLY);
    atomic_store(&w->opened, 1);
    if (fd >= 0) close(fd);
    return NULL;
}

/* "<dir>/<name>" in a buffer of the caller's (no allocation to free). */
static const char *in(char buf[512], const char *dir, const char *name)
{
    snprintf(buf, 512, "%s/%s", dir, name);
    return buf;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_special_data(void)
{
    tu_begin("items 6, 7: FIFOs, devices and symlinks leaving the directory as external data");
    char *dir = tu_make_temp_dir("special");
    char *base = tu_path_join(dir, "model"), *outside = tu_path_join(dir, "outside");
    mkdir(base, 0777);
    mkdir(outside, 0777);
    char *model = tu_path_join(base, "m.onnx");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = NULL;

    /* A FIFO in the model's directory: refused at once, never opened. */
    char *fifo = tu_path_join(base, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    write_ref_model(model, "fifo");
    time_t t0 = time(NULL);
    CHECK_STATUS(onnxio_load_model(model, NULL, a, &m), ONNXIO_ERR_PATH_SPECIAL);
    CHECK(strstr(onnxio_last_error(), "FIFO") != NULL);
    int fd = -1;
    CHECK_STATUS(onnxio_external_data_open(base, "fifo", ONNXIO_OPEN_READ, &fd, NULL), ONNXIO_ERR_PATH_SPECIAL);
    CHECK_STATUS(onnxio_external_data_open(base, "fifo", ONNXIO_OPEN_APPEND, &fd, NULL), ONNXIO_ERR_PATH_SPECIAL);
    CHECK(fd == -1);
    /* A device, and a directory. */
    char buf[512];
    CHECK(symlink("/dev/zero", in(buf, base, "zero")) == 0);
    write_ref_model(model, "zero");
    CHECK_STATUS(onnxio_load_model(model, NULL, a, &m), ONNXIO_ERR_PATH_ESCAPES);
    mkdir(in(buf, base, "sub"), 0777);
    write_ref_model(model, "sub");
    CHECK_STATUS(onnxio_load_model(model, NULL, a, &m), ONNXIO_ERR_PATH_SPECIAL);
    CHECK(time(NULL) - t0 < 5);

    /* A symlink to a FIFO outside: refused without opening the FIFO, so a
     * writer blocked on it stays blocked (before: the loader's open()
     * followed the link and released it). */
    char *ofifo = tu_path_join(outside, "fifo");
    CHECK(mkfifo(ofifo, 0600) == 0);
    char *lnk = tu_path_join(base, "link");
    CHECK(symlink(ofifo, lnk) == 0);
    fifo_writer w = {ofifo, 0};
    pthread_t th;
    pthread_create(&th, NULL, open_for_writing, &w);
    sleep_ms(100);
    write_ref_model(model, "link");
    CHECK_STATUS(onnxio_load_model(model, NULL, a, &m), ONNXIO_ERR_PATH_ESCAPES);
    onnxio_parse_options nc = ONNXIO_PARSE_OPTIONS_INIT;
    nc.no_copy = true;
    CHECK_STATUS(onnxio_load_model(model, &nc, a, &m), ONNXIO_ERR_PATH_ESCAPES);
    CHECK_STATUS(onnxio_external_data_open(base, "link", ONNXIO_OPEN_READ, &fd, NULL), ONNXIO_ERR_PATH_ESCAPES);
    sleep_ms(200);
    CHECK_MSG(atomic_load(&w.opened) == 0, "the FIFO's writer was released: the FIFO was opened");
    /* Release it ourselves. */
    int rfd = open(ofifo, O_RDONLY | O_NONBLOCK);
    pthread_join(th, NULL);
    if (rfd >= 0) close(rfd);

    /* Symlinks that stay inside are followed, relative and absolute; an
     * escape through '..' in a target is not. */
    char *dataf = tu_path_join(base, "data.bin");
    uint8_t sixteen[16] = {1, 2, 3};
    tu_write_file(dataf, sixteen, sizeof sixteen);
    mkdir(in(buf, base, "d"), 0777);
    CHECK(symlink("../data.bin", in(buf, base, "d/rel")) == 0);
    CHECK(symlink(dataf, in(buf, base, "abs")) == 0);
    CHECK(symlink("../../outside/x", in(buf, base, "d/up")) == 0);
    const struct {
        const char *location;
        onnxio_status want;
    } cases[] = {{"d/rel", ONNXIO_OK}, {"abs", ONNXIO_OK}, {"./d/../data.bin", ONNXIO_ERR_PATH_PARENT},
                 {"d/up", ONNXIO_ERR_PATH_ESCAPES}, {"missing", ONNXIO_ERR_NOT_FOUND}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_ref_model(model, cases[i].location);
        onnxio_status st = onnxio_load_model(model, NULL, a, &m);
        CHECK_MSG(st == cases[i].want, "location %s: %s, want %s (%s)", cases[i].location, onnxio_status_name(st),
                  onnxio_status_name(cases[i].want), onnxio_last_error());
    }
    /* external_data_open: the one checked open, also for writing. */
    uint64_t size = 0;
    CHECK_STATUS(onnxio_external_data_open(base, "d/rel", ONNXIO_OPEN_READ, &fd, &size), ONNXIO_OK);
    CHECK_EQ_U64(size, 16);
    close(fd);
    mode_t old = umask(022);
    CHECK_STATUS(onnxio_external_data_open(base, "new.bin", ONNXIO_OPEN_APPEND, &fd, &size), ONNXIO_OK);
    umask(old);
    close(fd);
    char *newf = tu_path_join(base, "new.bin");
    CHECK_EQ_INT(mode_of(newf), 0644);
    CHECK_STATUS(onnxio_external_data_open(base, "../outside/x", ONNXIO_OPEN_APPEND, &fd, NULL), ONNXIO_ERR_PATH_PARENT);
    char *ox = tu_path_join(outside, "x");
    CHECK(!tu_exists(ox));

    onnxio_arena_unref(a);
    free(base);
    free(outside);
    free(model);
    free(fifo);
    free(ofifo);
    free(lnk);
    free(dataf);
    free(newf);
    free(ox);
    tu_remove_tree(dir);
    free(dir);
    tu_end();
}

#endif

/* ---- item 4: the journal of a save that died ---------------------------------- */

/* Writes a journal as a save writes it: header, state, then records. */
static void write_journal(const char *path, char state, const char *const *paths, size_t n)
{
    tu_bytes b = {0};
    tu_bytes_put(&b, "onnxio-journal-1", 16);
    tu_bytes_byte(&b, (uint8_t)state);
    tu_bytes_byte(&b, '\n');
    for (size_t i = 0; i < n; i++) tu_bytes_put(&b, paths[i], strlen(paths[i]) + 1);
    tu_write_file(path, b.data, b.size);
    tu_bytes_free(&b);
}

static void test_journal(void)
{
    tu_begin("item 4: a dead save's journal is finished or undone by the next load");
    char *dir0 = tu_make_temp_dir("journal");
    char real[4096];
    char *dir = realpath(dir0, real) ? strdup(real) : strdup(dir0);
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *old_m = small_model(a, 4), *new_m = small_model(a, 5);
    char *model = tu_path_join(dir, "m.onnx"), *data = tu_path_join(dir, "m.data");
    char *jpath = tu_path_join(dir, ".m.onnx.onnxio-journal");
    onnxio_serialize_options ext = ONNXIO_SERIALIZE_OPTIONS_INIT;
    ext.external_data.location = "m.data";

    /* Two complete saves give the old and the new files; the new ones are
     * moved aside as if a save had written them and died. */
    for (int state = 0; state < 2; state++) {
        CHECK_STATUS(onnxio_save_model(new_m, model, &ext), ONNXIO_OK);
        size_t nm, nd;
        uint8_t *new_model = tu_read_file(model, &nm), *new_data = tu_read_file(data, &nd);
        CHECK_STATUS(onnxio_save_model(old_m, model, &ext), ONNXIO_OK);
        char *tm = tu_path_join(dir, ".m.onnx.onnxio-tmp-0123456789ab");
        char *td = tu_path_join(dir, ".m.data.onnxio-tmp-ba9876543210");
        CHECK(tu_write_file(tm, new_model, nm) && tu_write_file(td, new_data, nd));
        free(new_model);
        free(new_data);
        size_t on, dn;
        uint8_t *old_model = tu_read_file(model, &on), *old_data = tu_read_file(data, &dn);
        const char *recs[] = {td, data, tm, model};
        write_journal(jpath, state ? 'C' : 'P', recs, 4);
        onnxio_arena *b = onnxio_arena_new();
        onnxio_ModelProto *back = NULL;
        CHECK_STATUS(onnxio_load_model(model, NULL, b, &back), ONNXIO_OK);
        /* 'C': every new file was complete, so the renames are finished;
         * 'P': the old files were never touched, the new ones go. */
        CHECK(back && tu_equal_as_loaded(back, state ? new_m : old_m));
        onnxio_arena_unref(b);
        char *l = listing(dir);
        CHECK_STR(l, "m.data m.onnx");
        free(l);
        if (!state) CHECK(file_is(model, old_model, on) && file_is(data, old_data, dn));
        free(old_model);
        free(old_data);
        free(tm);
        free(td);
    }

    /* A planted journal acts only on records of the expected shape: a
     * temporary file named for its target, in its directory. */
    char *victim = tu_path_join(dir, "victim"), *bait = tu_path_join(dir, "bait");
    tu_write_file(victim, "keep", 4);
    tu_write_file(bait, "evil", 4);
    const char *evil[] = {bait, victim};
    write_journal(jpath, 'C', evil, 2);
    onnxio_arena *b = onnxio_arena_new();
    onnxio_ModelProto *back = NULL;
    CHECK_STATUS(onnxio_load_model(model, NULL, b, &back), ONNXIO_OK);
    onnxio_arena_unref(b);
    CHECK(file_is(victim, (const uint8_t *)"keep", 4) && file_is(bait, (const uint8_t *)"evil", 4));
    CHECK(!tu_exists(jpath));

    /* A save killed inside a rename of the Windows half, between moving
     * the old file aside and moving the new one in (os_win.c): the target
     * is missing, the old file is "<name>.onnxio-old-<16 hex>", the new
     * one its temporary file. Before the commit ('P') the next load puts
     * the old file back; after it ('C') the new one goes in and the old
     * one away. Either way no aside file stays. */
    {
        char *sm = tu_path_join(dir, "s.onnx"), *sj = tu_path_join(dir, ".s.onnx.onnxio-journal");
        char *st = tu_path_join(dir, ".s.onnx.onnxio-tmp-0123456789ab");
        char *sa = tu_path_join(dir, "s.onnx.onnxio-old-0123456789abcdef");
        CHECK_STATUS(onnxio_save_model(new_m, sm, NULL), ONNXIO_OK);
        size_t nn, on;
        uint8_t *nb = tu_read_file(sm, &nn);
        CHECK_STATUS(onnxio_save_model(old_m, sm, NULL), ONNXIO_OK);
        uint8_t *ob = tu_read_file(sm, &on);
        for (int state = 0; state < 3; state++) {
            unlink(sm);
            CHECK(tu_write_file(sa, ob, on));
            /* state 2: the rename finished, only removing the old file
             * was cut short. */
            CHECK(tu_write_file(state == 2 ? sm : st, nb, nn));
            const char *recs[] = {st, sm};
            write_journal(sj, state == 1 ? 'C' : 'P', recs, 2);
            onnxio_arena *b = onnxio_arena_new();
            onnxio_ModelProto *back = NULL;
            CHECK_STATUS(onnxio_load_model(sm, NULL, b, &back), ONNXIO_OK);
            CHECK_MSG(back && tu_equal_as_loaded(back, state ? new_m : old_m), "aside, state %d: the wrong model", state);
            onnxio_arena_unref(b);
            CHECK_MSG(state ? file_is(sm, nb, nn) : file_is(sm, ob, on), "aside, state %d: the wrong file", state);
            CHECK(!tu_exists(sa) && !tu_exists(st) && !tu_exists(sj));
        }
        /* A data file may not be named as an aside file (a replay would
         * remove it). */
        onnxio_serialize_options ax = ONNXIO_SERIALIZE_OPTIONS_INIT;
        ax.external_data.location = "w.onnxio-old-0123456789abcdef";
        CHECK_STATUS(onnxio_save_model(new_m, sm, &ax), ONNXIO_ERR_EXTERNAL_DATA);
        free(nb);
        free(ob);
        unlink(sm);
        free(sm);
        free(sj);
        free(st);
        free(sa);
    }

    /* An empty journal is the one a save has just made and not yet
     * locked: a load leaves it there (removing it sent that save after a
     * new journal, again and again under a stream of loads), and the next
     * save takes it over and removes it. */
    tu_write_file(jpath, "", 0);
    b = onnxio_arena_new();
    back = NULL;
    CHECK_STATUS(onnxio_load_model(model, NULL, b, &back), ONNXIO_OK);
    CHECK(back && tu_equal_as_loaded(back, new_m));
    onnxio_arena_unref(b);
    CHECK(tu_exists(jpath));
    CHECK_STATUS(onnxio_save_model(old_m, model, &ext), ONNXIO_OK);
    CHECK(!tu_exists(jpath));

    onnxio_arena_unref(a);
    free(model);
    free(data);
    free(jpath);
    free(victim);
    free(bait);
    tu_remove_tree(dir);
    free(dir);
    free(dir0);
    tu_end();
}

/* ---- the data type table --------------------------------------------------------- */

/* onnxio_data_type_info and onnxio_data_type_at against the schema's
 * TensorProto.DataType enum (schema.def, checked against onnx's .proto by
 * tests/python/test_schema.py): one row per value but UNDEFINED, each
 * found by its number, with the enum's name; nothing for other numbers.
 * The columns are checked against numpy, ml_dtypes, safetensors, torch and
 * onnx by tests/python/test_data_types.py. */
static void test_data_type_table(void)
{
    tu_begin("the data type table: one row per TensorProto.DataType value, found by its number");
    const onnxio_enum_desc *en = &onnxio_enum_TensorProto_DataType;
    size_t rows = 0;
    while (onnxio_data_type_at(rows)) rows++;
    CHECK_EQ_INT((int)rows, (int)en->value_count - 1);
    for (size_t i = 0; i < en->value_count; i++) {
        int32_t n = en->values[i].number;
        const onnxio_data_type_desc *d = onnxio_data_type_info(n);
        if (n == ONNXIO_TensorProto_DataType_UNDEFINED) {
            CHECK(d == NULL);
            continue;
        }
        CHECK(d != NULL);
        if (!d) continue;
        CHECK_EQ_INT(d->data_type, n);
        CHECK_STR(d->name, en->values[i].name);
        CHECK_EQ_INT((int)onnxio_data_type_bits(n), (int)d->bits);
        CHECK(onnxio_data_type_info(d->storage) != NULL);
        size_t seen = 0;
        for (size_t k = 0; k < rows; k++) seen += onnxio_data_type_at(k) == d;
        CHECK_EQ_INT((int)seen, 1);
    }
    int32_t none[] = {-1, ONNXIO_TensorProto_DataType_FLOAT6E3M2 + 1, 255, 256, INT32_MAX, INT32_MIN};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        CHECK(onnxio_data_type_info(none[i]) == NULL);
        CHECK_EQ_INT((int)onnxio_data_type_bits(none[i]), 0);
    }
    CHECK(onnxio_data_type_at(rows) == NULL && onnxio_data_type_at(SIZE_MAX) == NULL);
    tu_end();
}

/* ---- options, versions, formats ------------------------------------------------ */

static void test_options_and_formats(void)
{
    tu_begin("option struct sizes, the version, what a file is");
    CHECK_STR(onnxio_version(), ONNXIO_VERSION_STRING);
    CHECK_EQ_INT(onnxio_version_number(), ONNXIO_VERSION_NUMBER);
    CHECK_STR(onnxio_status_name(ONNXIO_ERR_EXPANSION), "ONNXIO_ERR_EXPANSION");
    CHECK(strlen(onnxio_status_message(ONNXIO_ERR_PATH_SPECIAL)) > 10);

    /* A caller compiled against a newer header whose extra options are
     * zero is fine; one that sets an option this version lacks is refused. */
    struct {
        onnxio_parse_options o;
        uint64_t newer;
    } bigger;
    memset(&bigger, 0, sizeof bigger);
    bigger.o.struct_size = sizeof bigger;
    uint8_t model[] = {0x08, 0x08};
    onnxio_arena *a = onnxio_arena_new();
    void *m;
    CHECK_STATUS(onnxio_parse(&onnxio_desc_ModelProto, model, sizeof model, NULL, &bigger.o, a, &m), ONNXIO_OK);
    bigger.newer = 1;
    CHECK_STATUS(onnxio_parse(&onnxio_desc_ModelProto, model, sizeof model, NULL, &bigger.o, a, &m),
                 ONNXIO_ERR_INVALID_ARGUMENT);
    onnxio_parse_options odd = ONNXIO_PARSE_OPTIONS_INIT;
    odd.struct_size = 3;
    CHECK_STATUS(onnxio_parse(&onnxio_desc_ModelProto, model, sizeof model, NULL, &odd, a, &m),
                 ONNXIO_ERR_INVALID_ARGUMENT);
    /* max_depth past the cap is taken as the cap. */
    onnxio_parse_options deep = ONNXIO_PARSE_OPTIONS_INIT;
    deep.max_depth = 1000000;
    CHECK_STATUS(onnxio_parse(&onnxio_desc_ModelProto, model, sizeof model, NULL, &deep, a, &m), ONNXIO_OK);

    /* What a file is. */
    uint8_t zeros[22] = {0};
    CHECK_EQ_INT(onnxio_detect_format("PK\3\4", 4), ONNXIO_FORMAT_ARCHIVE);
    CHECK_EQ_INT(onnxio_detect_format("PK\5\6", 4), ONNXIO_FORMAT_ARCHIVE);
    CHECK_EQ_INT(onnxio_detect_format(zeros, sizeof zeros), ONNXIO_FORMAT_ARCHIVE);
    CHECK_EQ_INT(onnxio_detect_format(zeros, 21), ONNXIO_FORMAT_PROTOBUF);
    CHECK_EQ_INT(onnxio_detect_format(model, sizeof model), ONNXIO_FORMAT_PROTOBUF);
    const char *text = "ir_version: 8\ngraph {\n  name: \"g\"\n}\n";
    CHECK_EQ_INT(onnxio_detect_format(text, strlen(text)), ONNXIO_FORMAT_TEXT);
    CHECK_EQ_INT(onnxio_detect_format("<\n ir_version: 8", 16), ONNXIO_FORMAT_TEXT);
    CHECK(onnxio_path_is_archive("a/b.onnxz") && !onnxio_path_is_archive("a.onnx") && !onnxio_path_is_archive("onnxz"));
    char *dir = tu_make_temp_dir("formats");
    char *p = tu_path_join(dir, "text.onnx");
    tu_write_file(p, text, strlen(text));
    onnxio_format f;
    CHECK_STATUS(onnxio_detect_file_format(p, &f), ONNXIO_OK);
    CHECK_EQ_INT(f, ONNXIO_FORMAT_TEXT);
    /* Binary protobuf refuses it: read as the text it is (test_detect.c). */
    onnxio_ModelProto *mm;
    CHECK_STATUS(onnxio_load_model(p, NULL, a, &mm), ONNXIO_OK);
    CHECK(mm->graph && mm->graph->name.size == 1 && mm->graph->name.data[0] == 'g');
    char *fifo = tu_path_join(dir, "fifo");
    if (mkfifo(fifo, 0600) == 0) CHECK_STATUS(onnxio_detect_file_format(fifo, &f), ONNXIO_ERR_PATH_SPECIAL);
    else tu_skip_windows("what a FIFO is: mkfifo: %s (Windows has none)", strerror(errno));

    /* Data type sizes and a tensor's raw size. */
    CHECK_EQ_INT(onnxio_data_type_bits(ONNXIO_TensorProto_DataType_FLOAT), 32);
    CHECK_EQ_INT(onnxio_data_type_bits(ONNXIO_TensorProto_DataType_INT4), 4);
    CHECK_EQ_INT(onnxio_data_type_bits(ONNXIO_TensorProto_DataType_STRING), 0);
    onnxio_TensorProto *t = onnxio_message_new(a, &onnxio_desc_TensorProto);
    t->data_type = ONNXIO_TensorProto_DataType_INT4;
    *(int64_t *)onnxio_array_append(a, &t->dims, sizeof(int64_t)) = 3;
    uint64_t bytes = 0;
    CHECK_EQ_INT(onnxio_tensor_raw_size(t, &bytes), 1);
    CHECK_EQ_U64(bytes, 2);
    t->dims.data[0] = -1;
    CHECK_EQ_INT(onnxio_tensor_raw_size(t, &bytes), -1);
    /* External data keys: digits only. */
    onnxio_StringStringEntryProto *e = onnxio_list_add(a, &t->external_data, &onnxio_desc_StringStringEntryProto);
    tu_set_string(a, e, &e->key, ONNXIO_FIELD_StringStringEntryProto_key, "location");
    tu_set_string(a, e, &e->value, ONNXIO_FIELD_StringStringEntryProto_value, "a..b");
    e = onnxio_list_add(a, &t->external_data, &onnxio_desc_StringStringEntryProto);
    tu_set_string(a, e, &e->key, ONNXIO_FIELD_StringStringEntryProto_key, "offset");
    tu_set_string(a, e, &e->value, ONNXIO_FIELD_StringStringEntryProto_value, "+0");
    onnxio_external_ref r;
    CHECK_STATUS(onnxio_external_ref_parse(t, &r), ONNXIO_ERR_EXTERNAL_DATA);
    tu_set_string(a, e, &e->value, ONNXIO_FIELD_StringStringEntryProto_value, "12");
    CHECK_STATUS(onnxio_external_ref_parse(t, &r), ONNXIO_OK);
    CHECK(r.offset == 12 && !r.has_length && !r.checksum && strcmp(r.location, "a..b") == 0);
    CHECK_STATUS(onnxio_check_location("x/../y", 6), ONNXIO_ERR_PATH_PARENT);
    CHECK_STATUS(onnxio_check_location("C:x", 3), ONNXIO_ERR_PATH_ABSOLUTE);

    onnxio_arena_unref(a);
    free(p);
    free(fifo);
    tu_remove_tree(dir);
    free(dir);
    tu_end();
}

/* Saves `m` to `dir`/`name` with fsync `toggle`, counting the fsync calls
 * (the fault layer's counter, no fault injected); returns the count and
 * the file's bytes in *data. */
static long synced_save(onnxio_ModelProto *m, const char *dir, const char *name, onnxio_toggle toggle,
                        const char *location, uint8_t **data, size_t *size)
{
    char *p = tu_path_join(dir, name);
    onnxio_serialize_options o = ONNXIO_SERIALIZE_OPTIONS_INIT;
    o.fsync = toggle;
    o.external_data.location = location;
    onnxio__fault_set(1u << ONNXIO__OP_SYNC, 0, false, false);
    onnxio_status s = onnxio_path_is_archive(p) ? onnxio_save_archive(m, p, &o) : onnxio_save_model(m, p, &o);
    long n = onnxio__fault_counted();
    onnxio__fault_set(0, 0, false, false);
    CHECK_MSG(s == ONNXIO_OK, "save %s: %s", name, onnxio_last_error());
    *data = tu_read_file(p, size);
    free(p);
    return n;
}

/* ---- threads saving one file --------------------------------------------------- */

/* Threads of one process saving the same file over and over (a service's
 * workers): each save waits for the one in progress, whose journal is
 * gone once it gets the lock, and takes the next. One thread could lose
 * that race 100 times in a row and fail ("it keeps changing"); none may.
 * The saves sync (the default), so that each holds its journal long
 * enough for the others to queue on it, as a service's saves do. */
typedef struct saver {
    const char *path;
    onnxio_ModelProto *m;
    int saves, failed;
    char error[256];
} saver;

static void *save_often(void *arg)
{
    saver *s = arg;
    onnxio_serialize_options o = ONNXIO_SERIALIZE_OPTIONS_INIT;
    o.num_threads = 1;
    for (int i = 0; i < s->saves; i++)
        if (onnxio_save_model(s->m, s->path, &o) != ONNXIO_OK && !s->failed++)
            snprintf(s->error, sizeof s->error, "%s", onnxio_last_error());
    return NULL;
}

static void test_threads_saving(void)
{
    tu_begin("threads saving one file: every save succeeds");
    char *dir = tu_make_temp_dir("savers");
    char *path = tu_path_join(dir, "m.onnx");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = small_model(a, 6);
    enum { THREADS = 4 };
    saver s[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        s[i] = (saver){path, m, 300, 0, ""};
        pthread_create(&t[i], NULL, save_often, &s[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK_MSG(s[i].failed == 0, "thread %d: %d of %d saves failed: %s", i, s[i].failed, s[i].saves, s[i].error);
    }
    char *l = listing(dir);
    CHECK_STR(l, "m.onnx");
    free(l);
    onnxio_arena_unref(a);
    free(path);
    tu_remove_tree(dir);
    free(dir);
    tu_end();
}

static void test_fsync_off(void)
{
    tu_begin("fsync OFF: the same files, no fsync call; ON and DEFAULT sync");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    onnxio_TensorProto *t = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
    float w[2048];
    for (int i = 0; i < 2048; i++) w[i] = (float)i;
    t->data_type = ONNXIO_TensorProto_DataType_FLOAT;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    int64_t *dim = onnxio_array_append(a, &t->dims, sizeof *dim);
    *dim = 2048;
    CHECK_STATUS(onnxio_span_copy_from(&t->raw_data, w, sizeof w), ONNXIO_OK);
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    char *dir = tu_make_temp_dir("fsync");
    const char *names[][2] = {{"plain.onnx", NULL}, {"ext.onnx", "ext.data"}, {"arch.onnxz", NULL}};
    for (size_t i = 0; i < 3; i++) {
        uint8_t *on, *off, *dflt;
        size_t n_on, n_off, n_dflt;
        long synced = synced_save(m, dir, names[i][0], ONNXIO_ON, names[i][1], &on, &n_on);
        long unsynced = synced_save(m, dir, names[i][0], ONNXIO_OFF, names[i][1], &off, &n_off);
        long by_default = synced_save(m, dir, names[i][0], ONNXIO_DEFAULT, names[i][1], &dflt, &n_dflt);
        CHECK_MSG(synced > 0 && by_default == synced, "%s: %ld fsyncs with ON, %ld by default", names[i][0], synced,
                  by_default);
        CHECK_MSG(unsynced == 0, "%s: %ld fsyncs with fsync OFF", names[i][0], unsynced);
        CHECK_MSG(n_on == n_off && memcmp(on, off, n_on) == 0, "%s: other bytes with fsync OFF", names[i][0]);
        free(on);
        free(off);
        free(dflt);
    }
    /* Replacing an archive's model in place: the same. */
    char *arch = tu_path_join(dir, "arch.onnxz");
    onnxio_serialize_options o = ONNXIO_SERIALIZE_OPTIONS_INIT;
    long counts[2];
    for (int k = 0; k < 2; k++) {
        o.fsync = k ? ONNXIO_OFF : ONNXIO_ON;
        onnxio_ModelProto *back;
        onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
        po.load_external_data = ONNXIO_OFF;
        CHECK_STATUS(onnxio_load_model(arch, &po, a, &back), ONNXIO_OK);
        onnxio__fault_set(1u << ONNXIO__OP_SYNC, 0, false, false);
        onnxio_status s = onnxio_archive_replace_model(arch, back, &o);
        counts[k] = onnxio__fault_counted();
        onnxio__fault_set(0, 0, false, false);
        CHECK_MSG(s == ONNXIO_OK, "replace_model: %s", onnxio_last_error());
    }
    CHECK_MSG(counts[0] > 0 && counts[1] == 0, "replace_model: %ld fsyncs ON, %ld OFF", counts[0], counts[1]);
    free(arch);
    tu_remove_tree(dir);
    free(dir);
    onnxio_arena_unref(a);
}

/* A program built against 0.2 passes option structs of 0.2's size,
 * zeroed (struct_size 0): the library must not read past them. Each sits
 * at the end of a page whose next page is inaccessible. */
static void test_options_of_0_2(void)
{
    tu_begin("struct_size 0 reads exactly the 0.2 layout of grown structs");
    char *dir = tu_make_temp_dir("onnxio-abi");
    char *path = tu_path_join(dir, "m.onnx");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 8;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);

    size_t so_size = offsetof(onnxio_serialize_options, max_expansion);
    onnxio_serialize_options *so = tu_guard_end(so_size);
    CHECK_STATUS(onnxio_save_model(m, path, so), ONNXIO_OK);
    CHECK_STATUS(onnxio_save_file(m, path, so), ONNXIO_OK);

    size_t to_size = offsetof(onnxio_text_options, max_expansion);
    onnxio_text_options *to = tu_guard_end(to_size);
    onnxio_buffer *text = NULL;
    CHECK_STATUS(onnxio_text_format(m, to, &text), ONNXIO_OK);
    void *back = NULL;
    if (text)
        CHECK_STATUS(onnxio_text_parse(&onnxio_desc_ModelProto, onnxio_buffer_data(text), onnxio_buffer_size(text), to,
                                       a, &back),
                     ONNXIO_OK);
    onnxio_buffer_unref(text);
    onnxio_arena_unref(a);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
    tu_end();
}

/* onnxio_last_errno: the errno of an operating system refusal (checked
 * against the errno that open(2) gives on the same path), 0 for any other
 * failure and after a success. */
static void test_last_errno(void)
{
    tu_begin("onnxio_last_errno: the operating system's errno of the last failure");
    char *dir = tu_make_temp_dir("errno");
    char *missing = tu_path_join(dir, "missing.onnx"), *in_missing = tu_path_join(missing, "m.onnx");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = NULL;
    struct {
        const char *path;
        int flags;
        onnxio_status load;
    } cases[] = {{missing, O_RDONLY, ONNXIO_ERR_NOT_FOUND}, {dir, O_WRONLY, ONNXIO_ERR_IO}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
#ifdef _WIN32
        if (cases[i].flags == O_WRONLY) {
            tu_skip_windows("the errno of a directory opened for writing: the C runtime's open says EACCES, the "
                            "library EISDIR (it names a directory as such)");
            continue;
        }
#endif
        errno = 0;
        int fd = open(cases[i].path, cases[i].flags);
        int want = errno;
        CHECK(fd < 0 && want != 0);
        CHECK_STATUS(onnxio_load_model(cases[i].path, NULL, a, &m), cases[i].load);
        CHECK_MSG(onnxio_last_errno() == want, "%s: errno %d, want %d (%s)", cases[i].path, onnxio_last_errno(), want,
                  onnxio_last_error());
    }
    /* A save into a directory that does not exist: open(2)'s ENOENT. */
    onnxio_ModelProto *empty = onnxio_message_new(a, &onnxio_desc_ModelProto);
    CHECK(empty && onnxio_save_model(empty, in_missing, NULL) == ONNXIO_ERR_NOT_FOUND);
    CHECK(onnxio_last_errno() == ENOENT);
    /* Not the operating system's: no errno, even with a stale errno set. */
    static const unsigned char bad[] = {0xff};
    errno = ENOENT;
    CHECK(onnxio_load_model_from_bytes(bad, sizeof bad, NULL, NULL, a, &m) == ONNXIO_ERR_DECODE);
    CHECK(onnxio_last_errno() == 0);
    onnxio_arena_unref(a);
    free(in_missing);
    free(missing);
    tu_remove_tree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
#ifndef _WIN32
    signal(SIGPIPE, SIG_IGN);
#endif
    test_options_and_formats();
    test_data_type_table();
    test_options_of_0_2();
#ifdef _WIN32
    tu_skip_windows("modes of saved files and the umask (Windows has no POSIX modes)");
    tu_skip_windows("symlinked, FIFO, device and read-only outputs (no symlinks or FIFOs under Wine)");
    tu_skip_windows("FIFOs, devices and symlinks as external data (no FIFOs; test_location_rules checks the walk)");
#else
    test_modes();
    test_outputs();
    test_special_data();
#endif
    test_journal();
    test_threads_saving();
    test_fsync_off();
    test_last_errno();
    return tu_finish();
}
