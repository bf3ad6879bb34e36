/* The C tests' harness (see testutil.h). */
#include "testutil.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifndef _WIN32
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#endif
#ifdef _WIN32
/* The Windows build (mingw-w64, run under Wine): what the helpers use of
 * POSIX that the C runtime lacks. */
#include <direct.h>
#include <io.h>
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <bcrypt.h>
#include <psapi.h>
#include <tlhelp32.h>
char *mkdtemp(char *t)
{
    size_t n = strlen(t);
    for (unsigned tries = 0; n >= 6 && tries < 1000; tries++) {
        unsigned r = (unsigned)GetTickCount() ^ ((unsigned)GetCurrentProcessId() << 8) ^ (tries * 2654435761u);
        for (size_t i = n - 6; i < n; i++, r /= 36) t[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[r % 36];
        if (_mkdir(t) == 0) return t;
    }
    return NULL;
}
#define fdatasync(fd) _commit(fd)
#define lstat stat /* Wine shows no symlinks to the tests */
char *realpath(const char *path, char *out)
{
    char *p = _fullpath(out, path, out ? 4096 : 0);
    if (p && GetFileAttributesA(p) == INVALID_FILE_ATTRIBUTES) {
        if (!out) free(p);
        errno = ENOENT;
        return NULL;
    }
    return p;
}
int mkfifo(const char *path, int mode)
{
    (void)path, (void)mode;
    errno = ENOSYS;
    return -1;
}
void *memmem(const void *haystack, size_t haystack_size, const void *needle, size_t needle_size)
{
    const char *h = haystack;
    if (needle_size == 0) return (void *)h;
    for (size_t i = 0; i + needle_size <= haystack_size; i++)
        if (memcmp(h + i, needle, needle_size) == 0) return (void *)(h + i);
    return NULL;
}
#endif

long tu_passed, tu_failed;

/* the current group */
static char group_name[256];
static bool in_group;
static long group_checks, group_failures;
/* why the current group skipped checks ("" when it did not) */
static char group_skip[256];
/* whether tu_skip was called anywhere (a program may then run no check) */
static bool any_skip;

#define MAX_REPORTS_PER_GROUP 25

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "testutil: out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "testutil: out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

bool tu_check(bool ok, const char *file, int line, const char *fmt, ...)
{
    group_checks++;
    if (ok) {
        tu_passed++;
        return true;
    }
    tu_failed++;
    group_failures++;
    if (group_failures <= MAX_REPORTS_PER_GROUP) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stdout, "    %s:%d: ", file, line);
        vfprintf(stdout, fmt, ap);
        fputc('\n', stdout);
        va_end(ap);
    } else if (group_failures == MAX_REPORTS_PER_GROUP + 1) {
        fprintf(stdout, "    (more failures in this group are not shown)\n");
    }
    fflush(stdout);
    return false;
}

bool tu_check_status(onnxio_status got, onnxio_status want, const char *expr, const char *file, int line)
{
    if (got == want) return tu_check(true, file, line, "%s", expr);
    return tu_check(false, file, line, "%s gave %s, want %s (last error: \"%s\")", expr,
                    onnxio_status_name(got), onnxio_status_name(want), onnxio_last_error());
}

bool tu_check_bytes(const void *got, size_t got_size, const void *want, size_t want_size,
                    const char *what, const char *file, int line)
{
    if (got_size == want_size && (want_size == 0 || (got && want && memcmp(got, want, want_size) == 0)))
        return tu_check(true, file, line, "%s", what);
    size_t i = 0;
    size_t n = got_size < want_size ? got_size : want_size;
    if (got && want)
        while (i < n && ((const uint8_t *)got)[i] == ((const uint8_t *)want)[i]) i++;
    size_t from = i > 8 ? i - 8 : 0;
    char *g = tu_hex(got ? (const uint8_t *)got + from : NULL, got && got_size > from ? got_size - from : 0, 40);
    char *w = tu_hex(want ? (const uint8_t *)want + from : NULL, want && want_size > from ? want_size - from : 0, 40);
    bool r = tu_check(false, file, line,
                      "%s: bytes differ at offset %zu (got %zu bytes, want %zu); from offset %zu: got %s want %s",
                      what, i, got_size, want_size, from, g, w);
    free(g);
    free(w);
    return r;
}

void tu_begin(const char *fmt, ...)
{
    if (in_group) tu_end();
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(group_name, sizeof group_name, fmt, ap);
    va_end(ap);
    in_group = true;
    group_checks = group_failures = 0;
    group_skip[0] = '\0';
}

void tu_end(void)
{
    if (!in_group) return;
    if (group_checks == 0 && group_skip[0]) {
        printf("skip %s (%s)\n", group_name, group_skip);
    } else if (group_checks == 0) {
        /* counted as a failed check, so that the program fails */
        tu_failed++;
        printf("FAIL %s (no checks ran, and the group declared no tu_skip)\n", group_name);
    } else if (group_failures == 0) {
        printf("ok   %s (%ld checks)\n", group_name, group_checks);
    } else {
        printf("FAIL %s (%ld of %ld checks failed)\n", group_name, group_failures, group_checks);
    }
    fflush(stdout);
    in_group = false;
}

static void skip_why(const char *label, const char *fmt, va_list ap)
{
    char why[sizeof group_skip];
    vsnprintf(why, sizeof why, fmt, ap);
    if (!why[0]) snprintf(why, sizeof why, "no reason given");
    any_skip = true;
    if (in_group && !group_skip[0]) snprintf(group_skip, sizeof group_skip, "%s", why);
    printf("     %s: %s\n", label, why);
    fflush(stdout);
}

void tu_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    skip_why("skipped", fmt, ap);
    va_end(ap);
}

void tu_skip_windows(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    skip_why("skipped on Windows", fmt, ap);
    va_end(ap);
}

void tu_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("     ", stdout);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

int tu_finish(void)
{
    tu_end();
    if (tu_passed == 0 && tu_failed == 0 && !any_skip) {
        tu_failed++;
        printf("FAIL no checks ran, and the program declared no tu_skip\n");
    }
    printf("%ld passed, %ld failed\n", tu_passed, tu_failed);
    fflush(stdout);
    return tu_failed ? 1 : 0;
}

/* ---- bytes ------------------------------------------------------------ */

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

uint8_t *tu_unhex(const char *hex, size_t *size)
{
    size_t len = strlen(hex);
    uint8_t *out = xmalloc(len / 2 + 1);
    size_t n = 0;
    int hi = -1;
    for (const char *p = hex; *p; p++) {
        if (isspace((unsigned char)*p)) continue;
        int v = hexval(*p);
        if (v < 0) {
            fprintf(stderr, "testutil: bad hex literal \"%s\"\n", hex);
            abort();
        }
        if (hi < 0) {
            hi = v;
        } else {
            out[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    if (hi >= 0) {
        fprintf(stderr, "testutil: odd number of hex digits in \"%s\"\n", hex);
        abort();
    }
    *size = n;
    /* Exactly n bytes (at least 1), so that ASan sees a read past them. */
    uint8_t *exact = xmalloc(n ? n : 1);
    memcpy(exact, out, n);
    free(out);
    return exact;
}

char *tu_hex(const void *data, size_t size, size_t max)
{
    size_t shown = size < max ? size : max;
    char *s = xmalloc(shown * 2 + 4);
    const uint8_t *p = data;
    for (size_t i = 0; i < shown; i++) sprintf(s + 2 * i, "%02x", p[i]);
    s[shown * 2] = '\0';
    if (shown < size) strcat(s, "...");
    if (size == 0) strcpy(s, "(empty)");
    return s;
}

void tu_bytes_put(tu_bytes *b, const void *data, size_t size)
{
    if (b->size + size > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->size + size) cap *= 2;
        b->data = xrealloc(b->data, cap);
        b->cap = cap;
    }
    if (size) memcpy(b->data + b->size, data, size);
    b->size += size;
}

void tu_bytes_byte(tu_bytes *b, uint8_t byte) { tu_bytes_put(b, &byte, 1); }

void tu_bytes_varint(tu_bytes *b, uint64_t v)
{
    while (v >= 0x80) {
        tu_bytes_byte(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    tu_bytes_byte(b, (uint8_t)v);
}

void tu_bytes_tag(tu_bytes *b, uint32_t field, unsigned wire_type)
{
    tu_bytes_varint(b, ((uint64_t)field << 3) | wire_type);
}

void tu_bytes_free(tu_bytes *b)
{
    free(b->data);
    b->data = NULL;
    b->size = b->cap = 0;
}

/* ---- files ------------------------------------------------------------ */

uint8_t *tu_read_file(const char *path, size_t *size)
{
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    bool err = ferror(f) != 0;
    fclose(f);
    if (err) {
        free(buf);
        return NULL;
    }
    *size = n;
    return buf;
}

bool tu_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, size, f) == size;
    if (fclose(f) != 0) ok = false;
    return ok;
}

bool tu_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

bool tu_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void tu_strlist_add(tu_strlist *l, const char *s)
{
    if (l->size == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->items = xrealloc(l->items, l->cap * sizeof *l->items);
    }
    l->items[l->size++] = xstrdup(s);
}

void tu_strlist_free(tu_strlist *l)
{
    for (size_t i = 0; i < l->size; i++) free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->size = l->cap = 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

static void find_rec(const char *dir, const char *suffix, tu_strlist *out, int depth)
{
    if (depth > 64) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char *p = tu_path_join(dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                find_rec(p, suffix, out, depth + 1);
            else if (S_ISREG(st.st_mode) && ends_with(e->d_name, suffix))
                tu_strlist_add(out, p);
        }
        free(p);
    }
    closedir(d);
}

void tu_find_files(const char *root, const char *suffix, tu_strlist *out)
{
    size_t first = out->size;
    find_rec(root, suffix, out, 0);
    if (out->size > first) qsort(out->items + first, out->size - first, sizeof *out->items, cmp_str);
}

void tu_list_dir(const char *dir, tu_strlist *out)
{
    size_t first = out->size;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        tu_strlist_add(out, e->d_name);
    }
    closedir(d);
    if (out->size > first) qsort(out->items + first, out->size - first, sizeof *out->items, cmp_str);
}

void tu_snapshot_take(const char *dir, tu_snapshot *s)
{
    memset(s, 0, sizeof *s);
    tu_list_dir(dir, &s->names);
    s->bytes = calloc(s->names.size + 1, sizeof *s->bytes);
    s->sizes = calloc(s->names.size + 1, sizeof *s->sizes);
    for (size_t i = 0; i < s->names.size; i++) {
        char *p = tu_path_join(dir, s->names.items[i]);
        s->bytes[i] = tu_read_file(p, &s->sizes[i]);
        free(p);
    }
}

void tu_snapshot_free(tu_snapshot *s)
{
    for (size_t i = 0; i < s->names.size; i++) free(s->bytes[i]);
    free(s->bytes);
    free(s->sizes);
    tu_strlist_free(&s->names);
}

bool tu_snapshot_same(const tu_snapshot *a, const tu_snapshot *b, char *why, size_t why_size)
{
    if (a->names.size != b->names.size) {
        size_t at = (size_t)snprintf(why, why_size, "%zu files instead of %zu:", a->names.size, b->names.size);
        for (size_t i = 0; i < a->names.size && at + 2 < why_size; i++)
            at += (size_t)snprintf(why + at, why_size - at, " %s", a->names.items[i]);
        return false;
    }
    for (size_t i = 0; i < a->names.size; i++) {
        if (strcmp(a->names.items[i], b->names.items[i]) != 0) {
            snprintf(why, why_size, "'%s' instead of '%s'", a->names.items[i], b->names.items[i]);
            return false;
        }
        if (a->sizes[i] != b->sizes[i] || memcmp(a->bytes[i], b->bytes[i], a->sizes[i]) != 0) {
            snprintf(why, why_size, "'%s' differs", a->names.items[i]);
            return false;
        }
    }
    return true;
}

bool tu_snapshot_matches(const char *dir, const tu_snapshot *want, char *why, size_t why_size)
{
    tu_snapshot now;
    tu_snapshot_take(dir, &now);
    bool same = tu_snapshot_same(&now, want, why, why_size);
    tu_snapshot_free(&now);
    return same;
}

char *tu_make_temp_dir(const char *prefix)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    char *templ = tu_strdup_printf("%s/onnxio-%s-XXXXXX", tmp, prefix ? prefix : "test");
    if (!mkdtemp(templ)) {
        fprintf(stderr, "testutil: mkdtemp(%s): %s\n", templ, strerror(errno));
        abort();
    }
    return templ;
}

void tu_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
                char *p = tu_path_join(path, e->d_name);
                tu_remove_tree(p);
                free(p);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

char *tu_path_join(const char *a, const char *b)
{
    return tu_strdup_printf("%s/%s", a, b);
}

char *tu_strdup_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) abort();
    char *s = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* ---- test data -------------------------------------------------------- */

#define TESTDATA_DIR "/usr/share/libonnx-testdata/data"

const char *tu_testdata_dir(void)
{
    static int state; /* 0 unknown, 1 present, 2 absent */
    static bool said;
    static const char *dir;
    if (state == 0) {
        dir = getenv("ONNXIO_LIBONNX_TESTDATA");
        if (!dir || !*dir) dir = TESTDATA_DIR;
        state = tu_is_dir(dir) ? 1 : 2;
    }
    if (state == 1) return dir;
    /* scripts/bootstrap.sh installs it: CI (CI=true) never runs without it */
    if (tu_in_ci() && !said)
        tu_check(false, __FILE__, __LINE__, "libonnx-testdata: %s is absent and CI=true (scripts/bootstrap.sh installs it)",
                 dir);
    if (in_group)
        tu_skip("libonnx-testdata: %s is absent (apt-get install libonnx-testdata)", dir);
    else if (!said)
        printf("skip checks on libonnx-testdata: %s is absent (apt-get install libonnx-testdata)\n", dir);
    said = true;
    any_skip = true;
    return NULL;
}

const char *tu_corpus_dir(const char *repo)
{
    static int state;
    static bool said;
    static char path[4096], absent[4096];
    if (state == 0) {
        snprintf(path, sizeof path, "%s/../shared/corpus", repo ? repo : ".");
        char shared[4096];
        snprintf(shared, sizeof shared, "%s/../shared", repo ? repo : ".");
        state = 2;
        if (!tu_is_dir(shared))
            snprintf(absent, sizeof absent, "%s", shared);
        else if (!tu_is_dir(path))
            snprintf(absent, sizeof absent, "%s", path);
        else
            state = 1;
    }
    if (state == 1) return path;
    if (in_group)
        tu_skip("the shared corpus: %s is absent", absent);
    else if (!said)
        printf("skip checks on the shared corpus: %s is absent\n", absent);
    said = true;
    any_skip = true;
    return NULL;
}

/* ---- misc ------------------------------------------------------------- */

bool tu_in_ci(void)
{
    const char *ci = getenv("CI");
    return ci && (strcasecmp(ci, "true") == 0 || strcmp(ci, "1") == 0 || strcasecmp(ci, "yes") == 0);
}

bool tu_mentions_offset(const char *msg)
{
    if (!msg) return false;
    bool word = strstr(msg, "offset") != NULL || strstr(msg, "byte") != NULL;
    bool digit = false;
    for (const char *p = msg; *p; p++)
        if (isdigit((unsigned char)*p)) digit = true;
    return word && digit;
}

/* ---- building models --------------------------------------------------- */

void tu_set_string(onnxio_arena *a, void *msg, onnxio_string *s, unsigned index, const char *value)
{
    onnxio_string_set(a, s, value, strlen(value));
    onnxio_set_has(msg, index);
}

void tu_set_pattern_raw_data(onnxio_TensorProto *t, size_t bytes, unsigned seed)
{
    uint8_t *p = malloc(bytes ? bytes : 1);
    for (size_t k = 0; k < bytes; k++) p[k] = (uint8_t)(k * 13 + seed * 101 + (k >> 9));
    onnxio_span_copy_from(&t->raw_data, p, bytes);
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
    free(p);
}

onnxio_ModelProto *tu_model_of_initializers(onnxio_arena *a, size_t n, const int64_t *counts, int data_type,
                                            size_t elem_size, unsigned seed)
{
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 8;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    tu_set_string(a, m->graph, &m->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
    for (size_t i = 0; i < n; i++) {
        onnxio_TensorProto *t = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
        char name[24];
        snprintf(name, sizeof name, "w%zu", i);
        tu_set_string(a, t, &t->name, ONNXIO_FIELD_TensorProto_name, name);
        *(int64_t *)onnxio_array_append(a, &t->dims, sizeof(int64_t)) = counts[i];
        t->data_type = data_type;
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
        size_t bytes = (size_t)counts[i] * elem_size;
        uint8_t *p = malloc(bytes ? bytes : 1);
        for (size_t k = 0; k < bytes; k++) p[k] = (uint8_t)(k * 7 + seed * 13 + i);
        onnxio_span_copy_from(&t->raw_data, p, bytes);
        onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
        free(p);
    }
    return m;
}

onnxio_GraphProto *tu_add_subgraph(onnxio_arena *a, onnxio_GraphProto *g, const char *name)
{
    onnxio_NodeProto *node = onnxio_list_add(a, &g->node, &onnxio_desc_NodeProto);
    tu_set_string(a, node, &node->op_type, ONNXIO_FIELD_NodeProto_op_type, "If");
    onnxio_AttributeProto *attr = onnxio_list_add(a, &node->attribute, &onnxio_desc_AttributeProto);
    tu_set_string(a, attr, &attr->name, ONNXIO_FIELD_AttributeProto_name, "then_branch");
    attr->type = ONNXIO_AttributeProto_AttributeType_GRAPH;
    onnxio_set_has(attr, ONNXIO_FIELD_AttributeProto_type);
    attr->g = onnxio_message_new(a, &onnxio_desc_GraphProto);
    if (name) tu_set_string(a, attr->g, &attr->g->name, ONNXIO_FIELD_GraphProto_name, name);
    return attr->g;
}

bool tu_inlined(const onnxio_TensorProto *t)
{
    return t->external_data.size == 0 && onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location) &&
           t->data_location == ONNXIO_TensorProto_DataLocation_DEFAULT;
}

void tu_drop_default_locations(void *msg)
{
    const onnxio_message_desc *d = ((onnxio_message *)msg)->desc;
    if (d == &onnxio_desc_TensorProto) {
        onnxio_TensorProto *t = msg;
        if (onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location) &&
            t->data_location == ONNXIO_TensorProto_DataLocation_DEFAULT)
            onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_data_location]);
    }
    for (size_t i = 0; i < d->field_count; i++) {
        const onnxio_field_desc *f = &d->fields[i];
        if (f->kind != ONNXIO_KIND_MESSAGE) continue;
        char *member = (char *)msg + f->offset;
        if (f->label == ONNXIO_LABEL_REPEATED) {
            struct { void **data; size_t size, capacity; } *a = (void *)member;
            for (size_t k = 0; k < a->size; k++) tu_drop_default_locations(a->data[k]);
        } else if (*(void **)member) {
            tu_drop_default_locations(*(void **)member);
        }
    }
}

bool tu_equal_as_loaded(const void *loaded, const void *orig)
{
    onnxio_arena *a = onnxio_arena_new();
    void *clone = a ? onnxio_message_clone(a, loaded) : NULL;
    bool same = false;
    if (clone) {
        tu_drop_default_locations(clone);
        same = onnxio_message_equal(clone, orig) == 1;
    }
    onnxio_arena_unref(a);
    return same;
}

/* ---- zip archives ------------------------------------------------------ */

void tu_put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
void tu_put32(uint8_t *p, uint32_t v)
{
    tu_put16(p, v & 0xFFFF);
    tu_put16(p + 2, v >> 16);
}
void tu_put64(uint8_t *p, uint64_t v)
{
    tu_put32(p, (uint32_t)v);
    tu_put32(p + 4, (uint32_t)(v >> 32));
}

static uint8_t *deflate_raw(const uint8_t *src, size_t n, size_t *out_size)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    size_t cap = deflateBound(&z, (uLong)n) + 16;
    uint8_t *out = malloc(cap);
    if (!out) abort();
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
    *out_size = z.total_out;
    deflateEnd(&z);
    return out;
}

#define TU_ZMAX 16

/* The ZIP64 extended information extra field (APPNOTE 4.5.3): both sizes. */
static void zip64_extra(tu_bytes *b, uint64_t size, uint64_t compressed)
{
    uint8_t x[20];
    tu_put16(x, 1);
    tu_put16(x + 2, 16);
    tu_put64(x + 4, size);
    tu_put64(x + 12, compressed);
    tu_bytes_put(b, x, 20);
}

void tu_zip_build(tu_bytes *b, const tu_zsrc *e, size_t n)
{
    size_t local[TU_ZMAX], csize[TU_ZMAX];
    uint32_t crc[TU_ZMAX];
    if (n > TU_ZMAX) abort();
    b->size = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *data = e[i].data;
        size_t cs = e[i].size;
        uint8_t *defl = NULL;
        if (e[i].deflated) data = defl = deflate_raw(e[i].data, e[i].size, &cs);
        crc[i] = (uint32_t)crc32(0, e[i].data, (uInt)e[i].size);
        csize[i] = cs;
        local[i] = b->size;
        uint8_t h[30];
        size_t nl = strlen(e[i].name);
        tu_put32(h, 0x04034b50u);
        tu_put16(h + 4, e[i].zip64 ? 45 : 20);
        tu_put16(h + 6, 0);
        tu_put16(h + 8, e[i].deflated ? 8 : 0);
        tu_put32(h + 10, 0);
        tu_put32(h + 14, crc[i]);
        tu_put32(h + 18, e[i].zip64 ? 0xFFFFFFFFu : (uint32_t)cs);
        tu_put32(h + 22, e[i].zip64 ? 0xFFFFFFFFu : (uint32_t)e[i].size);
        tu_put16(h + 26, (uint32_t)nl);
        tu_put16(h + 28, e[i].zip64 ? 20 : 0);
        tu_bytes_put(b, h, 30);
        tu_bytes_put(b, e[i].name, nl);
        if (e[i].zip64) zip64_extra(b, e[i].size, cs);
        tu_bytes_put(b, data, cs);
        free(defl);
    }
    size_t cd = b->size;
    for (size_t i = 0; i < n; i++) {
        uint8_t h[46];
        size_t nl = strlen(e[i].name);
        memset(h, 0, sizeof h);
        tu_put32(h, 0x02014b50u);
        tu_put16(h + 4, (3u << 8) | 45u);
        tu_put16(h + 6, e[i].zip64 ? 45 : 20);
        tu_put16(h + 10, e[i].deflated ? 8 : 0);
        tu_put32(h + 16, crc[i]);
        tu_put32(h + 20, e[i].zip64 ? 0xFFFFFFFFu : (uint32_t)csize[i]);
        tu_put32(h + 24, e[i].zip64 ? 0xFFFFFFFFu : (uint32_t)e[i].size);
        tu_put16(h + 28, (uint32_t)nl);
        tu_put16(h + 30, e[i].zip64 ? 20 : 0);
        tu_put32(h + 42, (uint32_t)local[i]);
        tu_bytes_put(b, h, 46);
        tu_bytes_put(b, e[i].name, nl);
        if (e[i].zip64) zip64_extra(b, e[i].size, csize[i]);
    }
    uint8_t end[22];
    memset(end, 0, sizeof end);
    tu_put32(end, 0x06054b50u);
    tu_put16(end + 8, (uint32_t)n);
    tu_put16(end + 10, (uint32_t)n);
    tu_put32(end + 12, (uint32_t)(b->size - cd));
    tu_put32(end + 16, (uint32_t)cd);
    tu_bytes_put(b, end, 22);
}

void tu_evict_fd(int fd)
{
    (void)fdatasync(fd);
#ifdef POSIX_FADV_DONTNEED
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
#endif
}

void tu_evict(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    tu_evict_fd(fd);
    close(fd);
}

#ifdef _WIN32
/* The views of files in this process's address space (VirtualQuery, one
 * per MEM_MAPPED allocation), each named by GetMappedFileNameW: a device
 * path (\Device\HarddiskVolume1\dir\name), compared from its end with
 * `suffix` less its drive, with backslashes for slashes, case folded. */
int tu_mappings_of(const char *suffix)
{
    char want[4096];
    const char *p = suffix;
    if (isalpha((unsigned char)p[0]) && p[1] == ':') p += 2;
    size_t k = 0;
    for (; *p && k + 1 < sizeof want; p++) want[k++] = *p == '/' ? '\\' : (char)tolower((unsigned char)*p);
    want[k] = '\0';
    int n = 0;
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    for (char *at = si.lpMinimumApplicationAddress; at < (char *)si.lpMaximumApplicationAddress;) {
        MEMORY_BASIC_INFORMATION mb;
        if (VirtualQuery(at, &mb, sizeof mb) != sizeof mb) break;
        if (mb.State == MEM_COMMIT && mb.Type == MEM_MAPPED && mb.BaseAddress == mb.AllocationBase) {
            wchar_t w[4096];
            DWORD len = GetMappedFileNameW(GetCurrentProcess(), mb.BaseAddress, w, 4096);
            char name[4096];
            size_t m = 0;
            for (DWORD i = 0; i < len && m + 1 < sizeof name; i++)
                name[m++] = w[i] == L'/' ? '\\' : w[i] < 128 ? (char)tolower((int)w[i]) : '?';
            name[m] = '\0';
            if (m >= k && strcmp(name + m - k, want) == 0) n++;
        }
        at = (char *)mb.BaseAddress + mb.RegionSize;
    }
    return n;
}
#else
int tu_mappings_of(const char *suffix)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[4096];
    int n = 0;
    size_t k = strlen(suffix);
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\n");
        line[len] = '\0';
        if (len >= k && strcmp(line + len - k, suffix) == 0) n++;
    }
    fclose(f);
    return n;
}
#endif

#ifdef _WIN32
void *tu_guard_end(size_t size)
{
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    size_t page = si.dwPageSize;
    uint8_t *p = VirtualAlloc(NULL, 2 * page, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    DWORD old;
    if (!p || !VirtualProtect(p + page, page, PAGE_NOACCESS, &old)) {
        fprintf(stderr, "tu_guard_end: VirtualAlloc/VirtualProtect failed (error %lu)\n", (unsigned long)GetLastError());
        exit(1);
    }
    memset(p + page - size, 0, size);
    return p + page - size;
}

int tu_thread_count(void)
{
    HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
    if (snap == INVALID_HANDLE_VALUE) return -1;
    THREADENTRY32 te = {.dwSize = sizeof te};
    DWORD self = GetCurrentProcessId();
    int n = 0;
    for (BOOL more = Thread32First(snap, &te); more; more = Thread32Next(snap, &te)) n += te.th32OwnerProcessID == self;
    CloseHandle(snap);
    return n;
}

long long tu_pread(int fd, void *buf, size_t n, uint64_t offset)
{
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    OVERLAPPED ov = {.Offset = (DWORD)offset, .OffsetHigh = (DWORD)(offset >> 32)};
    DWORD got = 0;
    if (h == INVALID_HANDLE_VALUE) return -1;
    if (!ReadFile(h, buf, n > 0x40000000 ? 0x40000000 : (DWORD)n, &got, &ov))
        return GetLastError() == ERROR_HANDLE_EOF ? 0 : -1;
    return got;
}

void *tu_aligned_alloc(size_t align, size_t size) { return _aligned_malloc(size ? size : 1, align); }
void tu_aligned_free(void *p) { _aligned_free(p); }

int tu_link(const char *existing, const char *new_path) { return CreateHardLinkA(new_path, existing, NULL) ? 0 : -1; }

void *tu_dlopen(const char *name) { return (void *)LoadLibraryA(name); }
void *tu_dlsym(void *lib, const char *symbol)
{
    FARPROC f = GetProcAddress((HMODULE)lib, symbol);
    void *p;
    memcpy(&p, &f, sizeof p);
    return p;
}
void tu_dlclose(void *lib) { FreeLibrary((HMODULE)lib); }
#else
void *tu_guard_end(size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *p = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    if (mprotect(p + page, (size_t)page, PROT_NONE) != 0) {
        perror("mprotect");
        exit(1);
    }
    memset(p + page - size, 0, size);
    return p + page - size;
}

int tu_thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

long long tu_pread(int fd, void *buf, size_t n, uint64_t offset) { return pread(fd, buf, n, (off_t)offset); }

void *tu_aligned_alloc(size_t align, size_t size)
{
    void *p = NULL;
    return posix_memalign(&p, align, size) == 0 ? p : NULL;
}
void tu_aligned_free(void *p) { free(p); }

int tu_link(const char *existing, const char *new_path) { return link(existing, new_path); }

void *tu_dlopen(const char *name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
void *tu_dlsym(void *lib, const char *symbol) { return dlsym(lib, symbol); }
void tu_dlclose(void *lib) { dlclose(lib); }
#endif

tu_fds tu_open_fds(void)
{
    tu_fds f = {{0, 0, 0, 0}};
    for (int fd = 0; fd < 256; fd++)
#ifdef _WIN32
        if (_get_osfhandle(fd) != -1) f.bits[fd / 64] |= 1ull << (fd % 64);
#else
        if (fcntl(fd, F_GETFD) != -1) f.bits[fd / 64] |= 1ull << (fd % 64);
#endif
    return f;
}

bool tu_same_fds(tu_fds a, tu_fds b) { return memcmp(&a, &b, sizeof a) == 0; }

#ifdef _WIN32
static bool sha_file(const char *path, LPCWSTR algorithm, size_t bytes, char *out)
{
    size_t n;
    uint8_t *data = tu_read_file(path, &n);
    if (!data || n > ULONG_MAX) return free(data), false;
    UCHAR digest[32];
    BCRYPT_ALG_HANDLE alg;
    NTSTATUS st = BCryptOpenAlgorithmProvider(&alg, algorithm, NULL, 0);
    if (BCRYPT_SUCCESS(st)) {
        st = BCryptHash(alg, NULL, 0, data, (ULONG)n, digest, (ULONG)bytes);
        BCryptCloseAlgorithmProvider(alg, 0);
    }
    free(data);
    if (!BCRYPT_SUCCESS(st)) return false;
    for (size_t i = 0; i < bytes; i++) sprintf(out + 2 * i, "%02x", digest[i]);
    return true;
}

bool tu_sha1_file(const char *path, char out[41]) { return sha_file(path, BCRYPT_SHA1_ALGORITHM, 20, out); }
bool tu_sha256_file(const char *path, char out[65]) { return sha_file(path, BCRYPT_SHA256_ALGORITHM, 32, out); }
#else
static bool sha_file(const char *tool, const char *path, size_t hex, char *out)
{
    char *cmd = tu_strdup_printf("%s '%s'", tool, path);
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p) return false;
    bool ok = fread(out, 1, hex, p) == hex;
    out[hex] = '\0';
    return pclose(p) == 0 && ok;
}

bool tu_sha1_file(const char *path, char out[41]) { return sha_file("sha1sum", path, 40, out); }
bool tu_sha256_file(const char *path, char out[65]) { return sha_file("sha256sum", path, 64, out); }
#endif

#ifdef _WIN32
int tu_crash_child(void (*fn)(void *), void *arg, const char *const *args)
{
    (void)fn, (void)arg;
    wchar_t exe[MAX_PATH + 1];
    DWORD n = GetModuleFileNameW(NULL, exe, MAX_PATH);
    if (n == 0 || n >= MAX_PATH) return -1;
    size_t len = wcslen(exe) + 3;
    for (size_t i = 0; args[i]; i++) len += strlen(args[i]) + 3;
    wchar_t *cmd = calloc(len + 1, sizeof *cmd);
    if (!cmd) return -1;
    size_t at = (size_t)swprintf(cmd, len + 1, L"\"%ls\"", exe);
    for (size_t i = 0; args[i]; i++) {
        cmd[at++] = L' ';
        int k = MultiByteToWideChar(CP_UTF8, 0, args[i], -1, cmd + at, (int)(len - at));
        if (k <= 0) return free(cmd), -1;
        at += (size_t)k - 1;
    }
    fflush(NULL);
    STARTUPINFOW si = {.cb = sizeof si};
    PROCESS_INFORMATION pi;
    BOOL ok = CreateProcessW(exe, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi);
    free(cmd);
    if (!ok) return -1;
    WaitForSingleObject(pi.hProcess, INFINITE);
    DWORD code = (DWORD)-1;
    GetExitCodeProcess(pi.hProcess, &code);
    CloseHandle(pi.hThread);
    CloseHandle(pi.hProcess);
    return (int)code;
}
#else
int tu_crash_child(void (*fn)(void *), void *arg, const char *const *args)
{
    (void)args;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        fn(arg);
        _exit(126);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return -1;
    if (WIFSIGNALED(st)) return WTERMSIG(st) == SIGKILL ? 137 : -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
#endif

bool tu_take_empty_journal(const char *model_path)
{
    const char *slash = strrchr(model_path, '/');
    const char *name = slash ? slash + 1 : model_path;
    char *journal = tu_strdup_printf("%.*s.%s.onnxio-journal", (int)(name - model_path), model_path, name);
    struct stat st;
    bool empty = stat(journal, &st) == 0 && st.st_size == 0 && unlink(journal) == 0;
    free(journal);
    return empty;
}

void tu_write_external_model(const char *dir, int64_t elements, const char *location, const char *offset,
                             const char *length)
{
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    m->ir_version = 8;
    onnxio_set_has(m, ONNXIO_FIELD_ModelProto_ir_version);
    m->graph = onnxio_message_new(a, &onnxio_desc_GraphProto);
    tu_set_string(a, m->graph, &m->graph->name, ONNXIO_FIELD_GraphProto_name, "g");
    onnxio_TensorProto *t = onnxio_list_add(a, &m->graph->initializer, &onnxio_desc_TensorProto);
    *(int64_t *)onnxio_array_append(a, &t->dims, sizeof(int64_t)) = elements;
    t->data_type = ONNXIO_TensorProto_DataType_UINT8;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_type);
    tu_set_string(a, t, &t->name, ONNXIO_FIELD_TensorProto_name, "w");
    const char *keys[] = {"location", "offset", "length"}, *values[] = {location, offset, length};
    for (int i = 0; i < 3; i++) {
        if (!values[i]) continue;
        onnxio_StringStringEntryProto *e = onnxio_list_add(a, &t->external_data, &onnxio_desc_StringStringEntryProto);
        tu_set_string(a, e, &e->key, ONNXIO_FIELD_StringStringEntryProto_key, keys[i]);
        tu_set_string(a, e, &e->value, ONNXIO_FIELD_StringStringEntryProto_value, values[i]);
    }
    t->data_location = ONNXIO_TensorProto_DataLocation_EXTERNAL;
    onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
    char *path = tu_path_join(dir, "model.onnx");
    CHECK_STATUS(onnxio_save_file(m, path, NULL), ONNXIO_OK);
    free(path);
    onnxio_arena_unref(a);
}
