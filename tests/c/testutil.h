/* A tiny test harness for the C tests: checks with file:line, check groups,
 * file and directory helpers, and where to find real models.
 *
 * Every test program is run as `test_x <repo-source-dir>` (CTest passes
 * CMAKE_SOURCE_DIR). It prints one line per check group, then
 * "N passed, N failed", and exits non-zero when any check failed. */
#ifndef ONNXIO_TESTUTIL_H
#define ONNXIO_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnxio/onnxio.h"

#ifdef _WIN32
/* POSIX calls the tests use that mingw-w64's C runtime lacks (testutil.c;
 * mkfifo fails with ENOSYS: Windows has no FIFOs in its file system). */
char *mkdtemp(char *templ);
char *realpath(const char *path, char *out);
int mkfifo(const char *path, int mode);
void *memmem(const void *haystack, size_t haystack_size, const void *needle, size_t needle_size);
/* mkdir with POSIX's mode argument (ignored: Windows has no such mode). */
#include <direct.h>
#include <io.h>
#define mkdir(path, mode) ((void)(mode), _mkdir(path))
#endif

/* printf-style checks of the helpers' formats: mingw-w64's C99 printf
 * (gnu_printf) in the Windows build, whose stdio is __USE_MINGW_ANSI_STDIO's. */
#if defined(__GNUC__) && defined(_WIN32)
#define TU_PRINTF(a, b) __attribute__((format(gnu_printf, a, b)))
#elif defined(__GNUC__)
#define TU_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TU_PRINTF(a, b)
#endif

/* ---- checks ---------------------------------------------------------- */

/* Records one check; prints "file:line: msg" on failure (at most a few per
 * group, so a loop over thousands of inputs stays readable). Returns `ok`. */
bool tu_check(bool ok, const char *file, int line, const char *fmt, ...)
    TU_PRINTF(4, 5)
    ;

#define CHECK(cond) tu_check((cond) ? true : false, __FILE__, __LINE__, "CHECK(%s)", #cond)
#define CHECK_MSG(cond, ...) tu_check((cond) ? true : false, __FILE__, __LINE__, __VA_ARGS__)

#define CHECK_EQ_INT(got, want)                                                                  \
    do {                                                                                         \
        long long tu_g_ = (long long)(got), tu_w_ = (long long)(want);                           \
        tu_check(tu_g_ == tu_w_, __FILE__, __LINE__, "%s == %lld, want %s == %lld", #got, tu_g_, \
                 #want, tu_w_);                                                                  \
    } while (0)

#define CHECK_EQ_U64(got, want)                                                                  \
    do {                                                                                         \
        unsigned long long tu_g_ = (unsigned long long)(got), tu_w_ = (unsigned long long)(want); \
        tu_check(tu_g_ == tu_w_, __FILE__, __LINE__, "%s == %llu, want %llu", #got, tu_g_, tu_w_); \
    } while (0)

#define CHECK_STR(got, want)                                                                      \
    do {                                                                                          \
        const char *tu_g_ = (got), *tu_w_ = (want);                                               \
        tu_check(tu_g_ && tu_w_ && strcmp(tu_g_, tu_w_) == 0, __FILE__, __LINE__,                \
                 "%s == \"%s\", want \"%s\"", #got, tu_g_ ? tu_g_ : "(null)", tu_w_ ? tu_w_ : "(null)"); \
    } while (0)

/* Checks a status; on mismatch prints both names and onnxio_last_error(). */
#define CHECK_STATUS(expr, want) tu_check_status((expr), (want), #expr, __FILE__, __LINE__)
bool tu_check_status(onnxio_status got, onnxio_status want, const char *expr, const char *file, int line);

/* Checks that got[0..got_size) equals want[0..want_size); on mismatch prints
 * the first differing offset and both byte ranges around it in hex. */
#define CHECK_BYTES(got, got_size, want, want_size) \
    tu_check_bytes((got), (got_size), (want), (want_size), #got, __FILE__, __LINE__)
bool tu_check_bytes(const void *got, size_t got_size, const void *want, size_t want_size,
                    const char *what, const char *file, int line);

/* Check groups: tu_begin("name") ... tu_end() prints one line
 * "ok   name (N checks)", "FAIL name (N of M checks failed)" or
 * "skip name (reason)". A group that ends with no check fails ("FAIL name
 * (no checks ...)", counted as a failed check) unless it called tu_skip: a
 * loop over an empty list, or a branch that never ran, must not pass
 * silently. tu_begin ends the group before it. */
void tu_begin(const char *fmt, ...)
    TU_PRINTF(1, 2)
    ;
void tu_end(void);
/* Declares that the current group leaves its checks (or part of them)
 * undone, and why ("../shared/corpus is absent"): prints "     skipped:
 * <reason>" (the line scripts/test.sh sums up), and the group may then end
 * with no check. Outside a group it does the same for the whole program,
 * which may then finish with no check at all (tu_finish fails a program
 * that ran no check and declared no skip). tu_testdata_dir and
 * tu_corpus_dir call it themselves when their data is absent. */
void tu_skip(const char *fmt, ...)
    TU_PRINTF(1, 2)
    ;
/* tu_skip for a part of a test compiled out of the Windows build, POSIX-only
 * by nature (FIFOs, setrlimit, fork): prints "     skipped on Windows:
 * <reason>", the line scripts/test.sh sums up for the Windows build. */
void tu_skip_windows(const char *fmt, ...)
    TU_PRINTF(1, 2)
    ;
/* Prints an informational line (indented) inside or between groups. */
void tu_note(const char *fmt, ...)
    TU_PRINTF(1, 2)
    ;
/* Prints "N passed, N failed"; returns the exit status (0 when none failed;
 * 1 also when no check ran at all and tu_skip was not called). */
int tu_finish(void);

/* Checks counted so far (for tests that report their own totals). */
extern long tu_passed, tu_failed;

/* ---- bytes ------------------------------------------------------------ */

/* Decodes a hex string ("0a 01 ff", spaces ignored) into a malloc'd block
 * of exactly *size bytes (1 when empty), so that ASan catches a read past
 * them; aborts the test on a malformed literal (a bug in the test). */
uint8_t *tu_unhex(const char *hex, size_t *size);
/* Writes `size` bytes as lowercase hex into a malloc'd NUL-terminated string
 * (at most `max` bytes shown, then "..."). */
char *tu_hex(const void *data, size_t size, size_t max);

/* A growable byte buffer for building inputs. */
typedef struct tu_bytes {
    uint8_t *data;
    size_t size, cap;
} tu_bytes;
void tu_bytes_put(tu_bytes *b, const void *data, size_t size);
void tu_bytes_byte(tu_bytes *b, uint8_t byte);
void tu_bytes_varint(tu_bytes *b, uint64_t v);
void tu_bytes_tag(tu_bytes *b, uint32_t field, unsigned wire_type);
void tu_bytes_free(tu_bytes *b);

/* ---- building models --------------------------------------------------- */

/* Sets the string field `s` of `msg` to `value` (copied into `a`) and marks
 * the field present (`index`: its ONNXIO_FIELD_* index). */
void tu_set_string(onnxio_arena *a, void *msg, onnxio_string *s, unsigned index, const char *value);
/* Sets t->raw_data (present) to `bytes` bytes of a pattern: byte k is
 * (k*13 + seed*101 + k/512) mod 256. */
void tu_set_pattern_raw_data(onnxio_TensorProto *t, size_t bytes, unsigned seed);
/* A model (ir_version 8, graph "g") of `n` initializers w0, w1, ... of
 * `data_type` (an element of `elem_size` bytes), tensor i of counts[i]
 * elements in one dimension, its raw_data byte k being (k*7 + seed*13 + i)
 * mod 256. */
onnxio_ModelProto *tu_model_of_initializers(onnxio_arena *a, size_t n, const int64_t *counts, int data_type,
                                            size_t elem_size, unsigned seed);
/* Adds to `g` an "If" node whose "then_branch" attribute is a new, empty
 * graph named `name` (NULL: no name), and returns that graph. */
onnxio_GraphProto *tu_add_subgraph(onnxio_arena *a, onnxio_GraphProto *g, const char *name);

/* Writes <dir>/model.onnx: ir_version 8, graph "g" with one UINT8
 * initializer "w" of `elements` elements whose data is external, with the
 * keys location, offset and length given (NULL: key left out). */
void tu_write_external_model(const char *dir, int64_t elements, const char *location, const char *offset,
                             const char *length);
/* Whether a tensor read from external data (or an archive entry) is marked
 * as the onnx package marks it after load_external_data_for_tensor: no
 * external_data keys, data_location present and DEFAULT. */
bool tu_inlined(const onnxio_TensorProto *t);
/* Whether `loaded` (a model read with its external data) equals `orig` (the
 * model before it was saved with external data) once the data_location =
 * DEFAULT marks the load sets on the tensors it read are taken away: the
 * comparison works on a clone of `loaded`. */
bool tu_equal_as_loaded(const void *loaded, const void *orig);
/* Clears data_location where it is DEFAULT on every tensor under `msg`. */
void tu_drop_default_locations(void *msg);

/* ---- zip archives ------------------------------------------------------ */

/* Little-endian stores of 2, 4 and 8 bytes at `p` (zip's byte order). */
void tu_put16(uint8_t *p, uint32_t v);
void tu_put32(uint8_t *p, uint32_t v);
void tu_put64(uint8_t *p, uint64_t v);

/* One entry of a zip archive built from scratch. */
typedef struct tu_zsrc {
    const char *name;
    const uint8_t *data;
    size_t size;
    int deflated; /* 1: method 8 (zlib's raw deflate) */
    int zip64;   /* sizes as 0xFFFFFFFF with a ZIP64 extra field */
} tu_zsrc;
/* A zip archive of `n` entries, in order, local headers without padding,
 * written by hand from APPNOTE (an independent writer: not onnxio's). At
 * most 16 entries. */
void tu_zip_build(tu_bytes *b, const tu_zsrc *e, size_t n);

/* ---- files ------------------------------------------------------------ */

/* Reads a whole file into a malloc'd block (NULL and *size 0 on failure; an
 * empty file gives a non-NULL block). */
uint8_t *tu_read_file(const char *path, size_t *size);
/* The SHA-1 of the file at `path` as 40 lowercase hex digits and a NUL in
 * `out`, from a reference independent of onnxio: sha1sum(1) on POSIX,
 * CNG's BCryptHash (bcrypt.dll) on Windows. False when it cannot say. */
bool tu_sha1_file(const char *path, char out[41]);
/* The same for SHA-256, 64 digits (sha256sum(1); BCryptHash). */
bool tu_sha256_file(const char *path, char out[65]);
/* Writes (creates/truncates) a file; returns true on success. */
bool tu_write_file(const char *path, const void *data, size_t size);
bool tu_exists(const char *path);
bool tu_is_dir(const char *path);

/* A list of malloc'd strings. */
typedef struct tu_strlist {
    char **items;
    size_t size, cap;
} tu_strlist;
void tu_strlist_add(tu_strlist *l, const char *s);
void tu_strlist_free(tu_strlist *l);

/* Appends to `out`, sorted, every regular file under `root` (recursively,
 * following no symlinked directories) whose name ends with `suffix`. */
void tu_find_files(const char *root, const char *suffix, tu_strlist *out);
/* The names (not paths) of the entries of a directory, sorted, without "."
 * and "..". */
void tu_list_dir(const char *dir, tu_strlist *out);

/* The files of a directory and their bytes (sorted by name), to check that
 * an operation left it as it was or as it should be. */
typedef struct tu_snapshot {
    tu_strlist names;
    uint8_t **bytes;
    size_t *sizes;
} tu_snapshot;
void tu_snapshot_take(const char *dir, tu_snapshot *s);
void tu_snapshot_free(tu_snapshot *s);
/* Whether `a` and `b` hold the same names and bytes; when not, *why says
 * what differs (and, when the counts differ, lists a's names). */
bool tu_snapshot_same(const tu_snapshot *a, const tu_snapshot *b, char *why, size_t why_size);
/* Whether `dir` holds exactly what `want` recorded. */
bool tu_snapshot_matches(const char *dir, const tu_snapshot *want, char *why, size_t why_size);

/* Drops a file's pages from the page cache (fdatasync, then
 * posix_fadvise DONTNEED): a load of it is then cold, where the file
 * system allows it (tmpfs keeps them). */
void tu_evict_fd(int fd);
void tu_evict(const char *path);

/* The open descriptors of this process, as a bit set of the first 256
 * (a descriptor leaked, or one closed that was not the library's, shows). */
typedef struct tu_fds {
    uint64_t bits[4];
} tu_fds;
tu_fds tu_open_fds(void);
bool tu_same_fds(tu_fds a, tu_fds b);

/* How many mappings the kernel lists for this process (/proc/self/maps;
 * on Windows, the views VirtualQuery finds, named by GetMappedFileNameW)
 * of a file whose path ends with `suffix` (a full path, or "/name"); -1
 * when the list cannot be read. */
int tu_mappings_of(const char *suffix);

/* ---- system pieces, one call on both systems -------------------------- */

/* `size` zero bytes that end exactly where an inaccessible page begins
 * (mmap, then mprotect PROT_NONE; on Windows VirtualAlloc, then
 * VirtualProtect PAGE_NOACCESS): a read one byte past them faults. Never
 * given back; aborts the test when it cannot be made. */
void *tu_guard_end(size_t size);
/* Runs a child that a crash point ends (the save protocol's sweeps) and
 * returns how it ended: its exit code, 137 when a crash point killed it
 * (SIGKILL on POSIX; os.c's _exit(137) on Windows), -1 when it could not
 * be run. POSIX: fork, then fn(arg) in the child (which must not return).
 * Windows has no fork: this program runs again with `args` (a
 * NULL-terminated list, each without spaces or quotes) after its name,
 * and its main must run the same child for them. */
int tu_crash_child(void (*fn)(void *), void *arg, const char *const *args);
/* A save killed between making its journal (.NAME.onnxio-journal beside
 * the model) and writing its first byte leaves that journal empty, for
 * the next save to take over: a load cannot tell it from the journal a
 * live save has made and not yet locked. Removes the journal of
 * `model_path` when it is there and empty (so that a crash sweep can
 * compare the old files); true when it did. */
bool tu_take_empty_journal(const char *model_path);
/* The threads of this process (/proc/self/task; on Windows, a Toolhelp
 * snapshot's threads of this process); -1 when the system cannot say. */
int tu_thread_count(void);
/* pread(2) (on Windows, ReadFile at an OVERLAPPED offset on the
 * descriptor's HANDLE): bytes read, 0 at the end, -1 on an error. */
long long tu_pread(int fd, void *buf, size_t n, uint64_t offset);
/* `size` bytes aligned to `align` (a power of two), NULL when out of
 * memory (posix_memalign; _aligned_malloc); tu_aligned_free gives them
 * back. */
void *tu_aligned_alloc(size_t align, size_t size);
void tu_aligned_free(void *p);
/* A hard link `new_path` to the file `existing` (link; CreateHardLinkA):
 * 0, or -1. */
int tu_link(const char *existing, const char *new_path);
/* A shared library loaded (dlopen with RTLD_NOW | RTLD_LOCAL; LoadLibraryA),
 * NULL when it does not load; a symbol of it (dlsym; GetProcAddress); the
 * library let go (dlclose; FreeLibrary). */
void *tu_dlopen(const char *name);
void *tu_dlsym(void *lib, const char *symbol);
void tu_dlclose(void *lib);

/* A new empty directory under $TMPDIR or /tmp (malloc'd path); aborts the
 * test when it cannot be made. */
char *tu_make_temp_dir(const char *prefix);
/* Removes a file or a directory tree (does not follow symlinks). */
void tu_remove_tree(const char *path);
/* malloc'd "a/b". */
char *tu_path_join(const char *a, const char *b);
/* malloc'd printf. */
char *tu_strdup_printf(const char *fmt, ...)
    TU_PRINTF(1, 2)
    ;

/* ---- test data -------------------------------------------------------- */

/* Debian's libonnx-testdata (/usr/share/libonnx-testdata/data, or
 * $ONNXIO_LIBONNX_TESTDATA as in the Python tests), or NULL when it is not
 * installed: then, inside a group, tu_skip with the reason (the group may
 * end with no check); outside one, a line saying so, once. Where CI=true
 * its absence is also a failed check, once: scripts/bootstrap.sh installs
 * it, and CI must not lose those checks silently. */
const char *tu_testdata_dir(void);
/* <repo>/../shared/corpus, or NULL when ../shared is absent: then tu_skip or
 * a line, as tu_testdata_dir. `repo` is argv[1]; NULL means "." */
const char *tu_corpus_dir(const char *repo);

/* ---- misc ------------------------------------------------------------- */

/* Whether this run is CI's: $CI is "true" (.ci/run sets it), "1" or "yes". */
bool tu_in_ci(void);

/* True when `msg` mentions a byte offset: a decimal number next to the word
 * "offset" or "byte". */
bool tu_mentions_offset(const char *msg);

#include <string.h>

#endif
