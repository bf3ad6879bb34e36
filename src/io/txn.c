/* The save transaction (docs/design.md, "The save protocol"): saving one
 * or several files so that a crash at any instant leaves the old files or
 * the new ones.
 *
 * A save is a transaction. Every file it writes is first a temporary file
 * beside its target, named ".<target>.onnxio-tmp-<random>", created with
 * O_EXCL and mode 0666 (the umask applies; an existing target's mode is
 * copied), written in full and fsync'd. The transaction's journal,
 * ".<main>.onnxio-journal" beside the main file (the model, or the
 * archive), is its lock (flock) and its record: before a temporary file is
 * created, its path and its target's path are appended. To commit, the
 * journal's state byte goes from 'P' (pending) to 'C' (committed) and is
 * fsync'd; then the temporary files are renamed over their targets, data
 * files first and the main file last, the directories fsync'd, and the
 * journal removed. A save of one file skips the state change: its one
 * rename is atomic by itself.
 *
 * Whoever next loads or saves that main file replays a journal it finds
 * unlocked: 'P' removes the temporary files (the old files were never
 * touched), 'C' finishes the renames (every new file was complete and
 * synced). Only records of the expected shape are acted on: a temporary
 * file named after its target, in the same directory, owned by this user,
 * in a journal owned by this user; a planted journal can do nothing the
 * planter could not do directly.
 *
 * Loads by other users (a service saving into a directory that others
 * load from) honour the journals of a trusted owner (journal_trusted: this
 * user, root, the owner of the model file or of its directory) without
 * acting on them: a pending journal leaves the old files untouched, so
 * they load; a committed one is waited for while its save holds it, and
 * once dead it is read (inspect) to tell whether its renames are all
 * done, none done, or cut short in between, which only its owner can
 * finish. The journal is as readable as the model, so that those who may
 * load the model may read it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/io.h"
/* The absolute path of an open directory. */
static char *fd_path(int dir_fd)
{
    return onnxio__sys_fd_path(dir_fd);
}

/* ---- temporary files, for onnxio_remove_temporary_files --------------- */

/* Every temporary file a save is writing, in a list a signal handler can
 * walk: nodes are published with one atomic store after they are complete,
 * and unlinked from the list (under a lock, against other threads) before
 * they are freed. A handler runs on a thread that is not inside a list
 * change of its own (onnxio's pool threads block signals). A node marked
 * committed belongs to a save past its commit point: its file is the new
 * data, which the journal's replay still needs. */
typedef struct temp_node {
    _Atomic(struct temp_node *) next;
    atomic_int committed;
    char *path;
} temp_node;
static _Atomic(temp_node *) temps;
static pthread_mutex_t temps_lock = PTHREAD_MUTEX_INITIALIZER;

static temp_node *temp_register(const char *path)
{
    temp_node *n = onnxio__malloc(sizeof *n);
    if (!n) return NULL;
    if (!(n->path = onnxio__strdup(path))) {
        onnxio__free(n);
        return NULL;
    }
    atomic_init(&n->committed, 0);
    pthread_mutex_lock(&temps_lock);
    atomic_store(&n->next, atomic_load(&temps));
    atomic_store(&temps, n);
    pthread_mutex_unlock(&temps_lock);
    return n;
}

static void temp_forget(temp_node *n)
{
    if (!n) return;
    pthread_mutex_lock(&temps_lock);
    _Atomic(temp_node *) *link = &temps;
    for (temp_node *p = atomic_load(link); p; link = &p->next, p = atomic_load(link))
        if (p == n) {
            atomic_store(link, atomic_load(&n->next));
            break;
        }
    pthread_mutex_unlock(&temps_lock);
    onnxio__free(n->path);
    onnxio__free(n);
}

ONNXIO_API void onnxio_remove_temporary_files(void)
{
    int saved = errno;
    for (temp_node *n = atomic_load(&temps); n; n = atomic_load(&n->next))
        if (!atomic_load(&n->committed)) onnxio__sys_unlinkat(AT_FDCWD, n->path, 0);
    errno = saved;
}

/* ---- names ------------------------------------------------------------------ */

#define TMP_INFIX ".onnxio-tmp-"
#define JOURNAL_SUFFIX ".onnxio-journal"
/* Target names are cut to this in hidden names (NAME_MAX is 255). */
#define NAME_STEM 200
#define RANDOM_HEX 12

/* ".<name>" cut to NAME_STEM, followed by `suffix`, into a new string. */
static char *hidden_name(const char *name, const char *suffix)
{
    size_t n = strnlen(name, NAME_STEM), k = strlen(suffix);
    char *p = onnxio__malloc(1 + n + k + 1);
    if (!p) return NULL;
    p[0] = '.';
    memcpy(p + 1, name, n);
    memcpy(p + 1 + n, suffix, k + 1);
    return p;
}

static void random_hex(char out[RANDOM_HEX + 1])
{
    unsigned char r[RANDOM_HEX / 2];
    if (onnxio__sys_getrandom(r, sizeof r) != (ssize_t)sizeof r) {
        /* No entropy yet: pid, time and a counter still make it unique
         * among this machine's processes (O_EXCL catches the rest). */
        static atomic_uint counter;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_nsec ^
                     ((uint64_t)atomic_fetch_add(&counter, 1) << 40);
        for (size_t i = 0; i < sizeof r; i++) r[i] = (unsigned char)(x >> (8 * i));
    }
    for (size_t i = 0; i < sizeof r; i++) snprintf(out + 2 * i, 3, "%02x", r[i]);
}

/* Whether `tmp` is a temporary name made for target `name`. */
static bool is_tmp_of(const char *tmp, const char *name)
{
    size_t n = strnlen(name, NAME_STEM), k = sizeof TMP_INFIX - 1;
    return tmp[0] == '.' && strncmp(tmp + 1, name, n) == 0 && strncmp(tmp + 1 + n, TMP_INFIX, k) == 0 &&
           strlen(tmp + 1 + n + k) == RANDOM_HEX && strspn(tmp + 1 + n + k, "0123456789abcdef") == RANDOM_HEX;
}

/* Whether `entry` is the name a file `name` was moved aside to, its
 * ONNXIO__ASIDE_INFIX and hex digits at the end. With `name` NULL: of any
 * file. */
static bool is_aside_of(const char *entry, const char *name)
{
    size_t e = strlen(entry), k = sizeof ONNXIO__ASIDE_INFIX - 1, h = ONNXIO__ASIDE_HEX;
    if (e < k + h + 1 || strncmp(entry + e - h - k, ONNXIO__ASIDE_INFIX, k) != 0 ||
        strspn(entry + e - h, "0123456789abcdef") != h)
        return false;
    return !name || (strlen(name) == e - h - k && strncmp(entry, name, e - h - k) == 0);
}

bool onnxio__txn_reserved_name(const char *name)
{
    size_t n = strlen(name), j = sizeof JOURNAL_SUFFIX - 1, k = sizeof TMP_INFIX - 1;
    if (is_aside_of(name, NULL)) return true;
    if (name[0] != '.') return false;
    if (n > j && strcmp(name + n - j, JOURNAL_SUFFIX) == 0) return true;
    /* ".<target>.onnxio-tmp-<hex>": the infix RANDOM_HEX characters
     * before the end, whatever the target. */
    return n >= 1 + k + RANDOM_HEX && strncmp(name + n - RANDOM_HEX - k, TMP_INFIX, k) == 0 &&
           strspn(name + n - RANDOM_HEX, "0123456789abcdef") == RANDOM_HEX;
}

/* ---- the journal's replay ------------------------------------------------- */

#define JOURNAL_MAGIC "onnxio-journal-1"
#define JOURNAL_STATE_AT (sizeof JOURNAL_MAGIC - 1)
#define JOURNAL_HEADER (JOURNAL_STATE_AT + 2) /* magic, state byte, '\n' */

/* Splits an absolute path into an open directory and a name; the directory
 * is opened following symlinks (it was resolved when the record was made). */
static int open_parent(const char *path, const char **name)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return -1;
    char dir[PATH_MAX];
    size_t n = (size_t)(slash - path);
    if (n >= sizeof dir) return -1;
    memcpy(dir, path, n);
    dir[n] = '\0';
    *name = slash + 1;
    return onnxio__sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
}

/* A record of the expected shape, opened: both paths in one directory
 * (*dir, open; *tname and *fname their names in it). -1 otherwise. */
static int record_dir(const char *tmp, const char *final, const char **tname, const char **fname)
{
    const char *slash = strrchr(final, '/');
    if (!slash) return -1;
    *fname = slash + 1;
    size_t dir_len = (size_t)(*fname - final);
    if (strncmp(tmp, final, dir_len) != 0 || strchr(tmp + dir_len, '/')) return -1;
    return open_parent(tmp, tname);
}

/* Whether a record's temporary file is there: a name made for its target,
 * a regular file of `owner` (not renamed yet, not removed). */
static bool temp_there(int dir, const char *tname, const char *fname, uid_t owner)
{
    struct stat st;
    return is_tmp_of(tname, fname) && onnxio__sys_fstatat(dir, tname, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(st.st_mode) && st.st_uid == owner;
}

/* One record: roll back (remove the temporary file) or forward (rename it
 * over its target). Returns false when a rename that must happen failed.
 * Only records of the expected shape, whose file is a regular file of
 * ours, are acted on. */
/* The files a target was moved aside to (ONNXIO__ASIDE_INFIX), regular
 * files of this user: with `restore`, the first goes back under the
 * target's name; the others are removed. */
typedef struct aside_ctx {
    int dir;
    const char *name;
    bool restore;
} aside_ctx;

static void aside_entry(void *ctx, const char *entry)
{
    aside_ctx *c = ctx;
    struct stat st;
    if (!is_aside_of(entry, c->name) || onnxio__sys_fstatat(c->dir, entry, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode) || st.st_uid != onnxio__sys_uid())
        return;
    if (c->restore && onnxio__sys_renameat(c->dir, entry, c->dir, c->name) == 0) c->restore = false;
    else onnxio__sys_unlinkat(c->dir, entry, 0);
}

static bool replay_record(const char *tmp, const char *final, bool forward)
{
    const char *tname, *fname;
    int dir = record_dir(tmp, final, &tname, &fname);
    if (dir < 0) return !forward;
    bool ok = true;
    /* A rename of the Windows half cut between its two steps (the target
     * moved aside, the new file not yet in; os_win.c): before the commit
     * the old file goes back under its name, after it the old file goes.
     * A file aside beside a target that is there is a leftover of a rename
     * that finished. */
    struct stat st;
    aside_ctx aside = {dir, fname, false};
    aside.restore = !forward && onnxio__sys_fstatat(dir, fname, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
    if (temp_there(dir, tname, fname, onnxio__sys_uid())) {
        if (!forward) onnxio__sys_unlinkat(dir, tname, 0);
        else if (onnxio__sys_renameat(dir, tname, dir, fname) != 0) ok = false;
        else onnxio__sys_fsync(dir);
    }
    if (ok) onnxio__sys_each_entry(dir, aside_entry, &aside);
    onnxio__close(dir);
    return ok;
}

/* Calls fn(ctx, temporary path, target path) for each record of the
 * journal `jfd` of `size` bytes, read in chunks so that no allocation is
 * sized by the file. Records: "<temporary path>\0<target path>\0". */
static void each_record(int jfd, uint64_t size, void (*fn)(void *, const char *, const char *), void *ctx)
{
    char buf[2 * PATH_MAX + 2];
    size_t have = 0;
    uint64_t at = JOURNAL_HEADER;
    for (;;) {
        if (have < sizeof buf && at < size) {
            size_t want = sizeof buf - have;
            if (size - at < want) want = (size_t)(size - at);
            if (onnxio__sys_pread(jfd, buf + have, want, at) != (ssize_t)want) break;
            have += want;
            at += want;
        }
        char *a = memchr(buf, '\0', have);
        char *b = a ? memchr(a + 1, '\0', have - (size_t)(a + 1 - buf)) : NULL;
        if (!b) break; /* the end, or a record cut by the crash (its file was never created) */
        fn(ctx, buf, a + 1);
        size_t used = (size_t)(b + 1 - buf);
        memmove(buf, b + 1, have - used);
        have -= used;
    }
}

/* The journal's state: 'P' (pending), 'C' (committed), or 0 when it has
 * no header yet (a save that died before its first record, or one that is
 * writing it) or is not a journal. */
static char journal_state(int jfd, uint64_t size)
{
    char head[JOURNAL_HEADER];
    if (size < JOURNAL_HEADER || onnxio__sys_pread(jfd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        memcmp(head, JOURNAL_MAGIC, JOURNAL_STATE_AT) != 0)
        return 0;
    return head[JOURNAL_STATE_AT] == 'C' || head[JOURNAL_STATE_AT] == 'P' ? head[JOURNAL_STATE_AT] : 0;
}

typedef struct replay_ctx {
    bool forward, unfinished;
} replay_ctx;

static void replay_one(void *ctx, const char *tmp, const char *final)
{
    replay_ctx *c = ctx;
    if (!replay_record(tmp, final, c->forward)) c->unfinished = true;
}

/* Replays the journal open and locked as `jfd`. *unfinished is set when a
 * committed save could not be finished (a rename failed). */
static onnxio_status replay(int jfd, bool *unfinished)
{
    *unfinished = false;
    struct stat st;
    if (onnxio__sys_fstat(jfd, &st) != 0 || st.st_uid != onnxio__sys_uid() || !S_ISREG(st.st_mode)) return ONNXIO_OK;
    char state = journal_state(jfd, (uint64_t)st.st_size);
    if (!state) return ONNXIO_OK; /* empty: a save that died before its first record */
    replay_ctx c = {state == 'C', false};
    each_record(jfd, (uint64_t)st.st_size, replay_one, &c);
    *unfinished = c.unfinished;
    onnxio__clear_error();
    return ONNXIO_OK;
}

/* What a committed journal's records say of its renames: `pending`, the
 * records whose temporary file is still there (a regular file of the
 * journal's owner: not renamed yet), `done` the others. */
typedef struct inspect_ctx {
    uid_t owner;
    size_t pending, done;
} inspect_ctx;

static void inspect_one(void *ctx, const char *tmp, const char *final)
{
    inspect_ctx *c = ctx;
    const char *tname, *fname;
    int dir = record_dir(tmp, final, &tname, &fname);
    if (dir < 0) return; /* not of the expected shape */
    if (is_tmp_of(tname, fname)) {
        if (temp_there(dir, tname, fname, c->owner)) c->pending++;
        else c->done++;
    }
    onnxio__close(dir);
}

/* Whether the committed journal `jfd` (of `st`) was cut short between its
 * renames: some files are the new save's and some the old, which only a
 * replay by its owner where the directory is writable can set right. All
 * renames done (the new files) or none (the old ones) is a whole model. */
static bool renames_cut_short(int jfd, const struct stat *st)
{
    inspect_ctx c = {st->st_uid, 0, 0};
    each_record(jfd, (uint64_t)st->st_size, inspect_one, &c);
    return c.pending && c.done;
}

/* Removes the temporary files of dead single-file saves of `name` in
 * `dir_fd` (their records may not have reached the journal). Called with
 * the journal's lock held: no live save of this file is writing. */
typedef struct sweep_ctx {
    int dir_fd;
    const char *name;
} sweep_ctx;

static void sweep_entry(void *ctx, const char *entry)
{
    sweep_ctx *c = ctx;
    struct stat st;
    if (is_tmp_of(entry, c->name) && onnxio__sys_fstatat(c->dir_fd, entry, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode) && st.st_uid == onnxio__sys_uid())
        onnxio__sys_unlinkat(c->dir_fd, entry, 0);
}

static void sweep(int dir_fd, const char *name)
{
    sweep_ctx c = {dir_fd, name};
    onnxio__sys_each_entry(dir_fd, sweep_entry, &c);
}

/* The journals this thread holds locked: its saves in progress. A load or
 * slice of the same file from inside one of them (a progress callback, a
 * streaming save's tensor source, which run on the saving thread) reads
 * the old files without waiting for itself; a save of it fails at once. */
#define HELD_MAX 16
static _Thread_local struct held_journal {
    dev_t dev;
    ino_t ino;
} held[HELD_MAX];
static _Thread_local size_t held_count;

static bool held_here(const struct stat *st)
{
    for (size_t i = 0; i < held_count; i++)
        if (held[i].dev == st->st_dev && held[i].ino == st->st_ino) return true;
    return false;
}

static void hold(int jfd)
{
    struct stat st;
    if (held_count < HELD_MAX && onnxio__sys_fstat(jfd, &st) == 0) held[held_count++] = (struct held_journal){st.st_dev, st.st_ino};
}

static void release_hold(int jfd)
{
    struct stat st;
    if (jfd < 0 || onnxio__sys_fstat(jfd, &st) != 0) return;
    for (size_t i = held_count; i-- > 0;)
        if (held[i].dev == st.st_dev && held[i].ino == st.st_ino) {
            held[i] = held[--held_count];
            return;
        }
}

/* Whether the journal `st` describes is one this user may act on: a
 * regular file of its own. A save refuses any other. */
static bool journal_ours(const struct stat *st)
{
    return S_ISREG(st->st_mode) && st->st_uid == onnxio__sys_uid();
}

/* Whether a load honours the journal `st` describes, beside the main file
 * `name` in `dir_fd` (docs/security.md, "Whose journals a load honours"):
 * a regular file of this user, of root, of the owner of the main file or
 * of the owner of its directory, each of whom could replace the model
 * anyway. Any other journal was planted: a load neither waits on it nor
 * believes it. */
static bool journal_trusted(int dir_fd, const char *name, const struct stat *st)
{
    if (!S_ISREG(st->st_mode)) return false;
    if (st->st_uid == onnxio__sys_uid() || st->st_uid == 0) return true;
    struct stat o;
    if (onnxio__sys_fstat(dir_fd, &o) == 0 && o.st_uid == st->st_uid) return true;
    return onnxio__sys_fstatat(dir_fd, name, &o, AT_SYMLINK_NOFOLLOW) == 0 && o.st_uid == st->st_uid;
}

/* Opens and locks the journal of `name` in `dir_fd`. `create`: make it
 * when missing (a save); else *jfd is -1 when there is none (a load).
 * `exclusive`: LOCK_EX, else LOCK_SH. Waits for a save in progress. The
 * journal's owner and type are checked before any lock: a load ignores a
 * journal that is not this user's regular file, a save refuses it at once
 * (another user could hold its lock forever). A journal this thread holds
 * (a call from inside its own save) is never waited on: a load gets *jfd
 * -1, a save fails at once. `target`: the path saved, named when the
 * directory refuses the journal's creation (read-only, not writable);
 * a load (`create` false) creates nothing and passes NULL. */
static onnxio_status lock_journal(int dir_fd, const char *jname, const char *target, bool create, bool exclusive,
                                  int *jfd)
{
    *jfd = -1;
    for (int tries = 0; tries < 100; tries++) {
        struct stat before;
        if (onnxio__sys_fstatat(dir_fd, jname, &before, AT_SYMLINK_NOFOLLOW) == 0 && !journal_ours(&before)) {
            if (!create) return ONNXIO_OK;
            return onnxio__fail(ONNXIO_ERR_IO,
                                "cannot lock the save journal %s: it is not a regular file of this user (uid %lu owns it); "
                                "remove it to save here",
                                jname, (unsigned long)before.st_uid);
        }
        /* A load's replay only reads it (and unlinks it): a read-only
         * journal of this user's is replayed too. */
        int fd = onnxio__sys_openat(dir_fd, jname, (create ? O_RDWR | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK, 0644);
        if (fd < 0) {
            int err = errno;
            if (!create && (err == ENOENT || err == EACCES || err == EROFS)) return ONNXIO_OK;
            /* A save's first file in the target's directory: a refusal
             * there (read-only, not writable) is the target's. */
            if (create && (err == EACCES || err == EPERM || err == EROFS))
                return onnxio__fail(onnxio__errno_status(err), "cannot save %s: %s", target, strerror(err));
            return onnxio__fail(onnxio__errno_status(err), "cannot open the save journal %s: %s", jname, strerror(err));
        }
        struct stat a, b;
        if (onnxio__sys_fstat(fd, &a) != 0 || !journal_ours(&a)) {
            /* Swapped between the look and the open. */
            onnxio__close(fd);
            if (!create) return ONNXIO_OK;
            continue;
        }
        if (held_here(&a)) {
            onnxio__close(fd);
            if (!create) return ONNXIO_OK;
            return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT,
                                "cannot save a file from inside a save of it on the same thread (a progress callback or "
                                "a streaming save's tensor source): that save holds %s",
                                jname);
        }
        const int how = exclusive ? LOCK_EX : LOCK_SH;
        bool waited = false;
        int r = onnxio__sys_flock(fd, how | LOCK_NB);
        if (r != 0 && (errno == EWOULDBLOCK || errno == EAGAIN)) {
            waited = true;
            r = onnxio__sys_flock(fd, how);
        }
        if (r != 0) {
            int err = errno;
            onnxio__close(fd);
            return onnxio__fail(ONNXIO_ERR_IO, "cannot lock the save journal %s: %s", jname, strerror(err));
        }
        /* The journal may have been removed (a save that finished) while
         * this waited for its lock: then take the new one. */
        if (onnxio__sys_fstat(fd, &a) == 0 && a.st_nlink > 0 &&
            onnxio__sys_fstatat(dir_fd, jname, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            *jfd = fd;
            return ONNXIO_OK;
        }
        onnxio__close(fd);
        if (!create) return ONNXIO_OK;
        /* Waited for a save that then finished and removed its journal:
         * that is progress, not a journal that keeps changing. A save
         * among others saving the same file (threads of a service) can
         * lose that race many times in a row, and did 100 times. */
        if (waited) tries--;
    }
    return onnxio__fail(ONNXIO_ERR_IO, "cannot lock the save journal %s: it keeps changing", jname);
}

/* The directory and name of the file `path` leads to, following symlinks
 * of its last component (a save writes through them, as cp does). */
static onnxio_status resolve_target(const char *path, int *dir_fd, char **name)
{
    *dir_fd = -1;
    *name = NULL;
    char *t = NULL;
    struct stat st;
    if (onnxio__sys_fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
        /* realpath needs the target to exist; a dangling link is resolved
         * one hop at a time, as creat(2) through it would. */
        char *cur = onnxio__strdup(path);
        for (int hops = 0; cur && hops < 40; hops++) {
            if (onnxio__sys_fstatat(AT_FDCWD, cur, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode)) break;
            char buf[PATH_MAX];
            ssize_t n = onnxio__sys_readlinkat(AT_FDCWD, cur, buf, sizeof buf - 1);
            if (n <= 0) break;
            buf[n] = '\0';
            char *next;
            if (buf[0] == '/') next = onnxio__strdup(buf);
            else {
                char *dir = onnxio__model_dir(cur, NULL);
                next = dir ? onnxio__path_join(dir, buf) : NULL;
                onnxio__free(dir);
            }
            onnxio__free(cur);
            cur = next;
        }
        t = cur;
    } else {
        t = onnxio__strdup(path);
    }
    if (!t) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    char *dir = onnxio__model_dir(t, NULL);
    const char *base = onnxio_path_file_name(t);
    if (!dir || !*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
        onnxio__free(dir);
        onnxio__free(t);
        return dir ? onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "%s does not name a file", path)
                   : onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    int fd = onnxio__sys_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0) {
        int err = errno;
        onnxio_status s = onnxio__fail(onnxio__errno_status(err), "cannot open the directory %s of %s: %s", dir, path,
                                       strerror(err));
        onnxio__free(dir);
        onnxio__free(t);
        return s;
    }
    onnxio__free(dir);
    if (!(*name = onnxio__strdup(base))) {
        onnxio__close(fd);
        onnxio__free(t);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    *dir_fd = fd;
    onnxio__free(t);
    return ONNXIO_OK;
}

/* How long a load that cannot take a journal's lock waits for a
 * committed save's renames to end (polling; the renames of a save take
 * milliseconds), before it fails saying so. */
#define RENAME_WAIT_NS (30ull * 1000 * 1000 * 1000)

/* A trusted journal this load does not replay: another user's, or its own
 * where the journal or its directory cannot be written (docs/security.md,
 * "Whose journals a load honours"). No lock is taken: a pending journal
 * leaves the old files whole; a committed one is read to tell its renames
 * all done or none done (a whole model either way) from cut short between
 * them, which a live save's are for a moment (waited for, polling) and a
 * dead one's are until its owner finishes it (an error saying so). */
static onnxio_status inspect(int dir_fd, const char *name, const char *jname)
{
    uint64_t waited = 0, nap = 1000 * 1000; /* 1 ms, doubling up to 64 ms */
    for (;;) {
        int fd = onnxio__sys_openat(dir_fd, jname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
        if (fd < 0) {
            int err = errno;
            if (err == ENOENT) return ONNXIO_OK; /* its save ended */
            return onnxio__fail(ONNXIO_ERR_IO,
                                "cannot read its save journal %s (%s), so cannot tell whether a save of it is "
                                "under way; load it as the journal's owner, or once the journal is gone",
                                jname, strerror(err));
        }
        struct stat st, now;
        bool whole = true, dead = false;
        if (onnxio__sys_fstat(fd, &st) == 0 && journal_trusted(dir_fd, name, &st) && !held_here(&st) &&
            journal_state(fd, (uint64_t)st.st_size) == 'C' && renames_cut_short(fd, &st)) {
            whole = false;
            /* Its save holds it while it renames. A lock taken here means
             * no save of it runs: then, still in place and still cut
             * short, it is dead (else its save ended just now). */
            dead = onnxio__sys_flock(fd, LOCK_SH | LOCK_NB) == 0 && onnxio__sys_fstat(fd, &st) == 0 &&
                   st.st_nlink > 0 && onnxio__sys_fstatat(dir_fd, jname, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
                   now.st_dev == st.st_dev && now.st_ino == st.st_ino && renames_cut_short(fd, &st);
        }
        onnxio__close(fd); /* and a probe's lock with it */
        onnxio__clear_error();
        if (whole) return ONNXIO_OK;
        if (dead)
            return onnxio__fail(ONNXIO_ERR_IO,
                                "a save by uid %lu committed but stopped between its renames: some of its files "
                                "are the new save's, some the old; load or save it once as uid %lu where its "
                                "directory is writable to finish that save",
                                (unsigned long)st.st_uid, (unsigned long)st.st_uid);
        if (waited >= RENAME_WAIT_NS)
            return onnxio__fail(ONNXIO_ERR_IO, "a save of it has been renaming its files for %llu s",
                                (unsigned long long)(waited / 1000000000ull));
        struct timespec ts = {0, (long)nap};
        nanosleep(&ts, NULL);
        waited += nap;
        if (nap < 64ull * 1000 * 1000) nap *= 2;
    }
}

onnxio_status onnxio__recover(const char *path)
{
    int dir_fd, jfd = -1;
    char *name = NULL, *jname = NULL;
    onnxio_status s = resolve_target(path, &dir_fd, &name);
    if (s) return onnxio__clear_error(), ONNXIO_OK; /* nothing to recover where nothing can be opened */
    if (!(jname = hidden_name(name, JOURNAL_SUFFIX))) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    /* A quick look first: almost always there is no journal. */
    struct stat st;
    if (!s && onnxio__sys_fstatat(dir_fd, jname, &st, AT_SYMLINK_NOFOLLOW) == 0 && journal_trusted(dir_fd, name, &st)) {
        /* This user's own: replayed, waiting for a save in progress. */
        if (journal_ours(&st)) s = lock_journal(dir_fd, jname, NULL, false, true, &jfd);
        struct stat j;
        if (!s && jfd >= 0 && onnxio__sys_fstat(jfd, &j) == 0 && j.st_size > 0) {
            bool unfinished;
            replay(jfd, &unfinished);
            if (!unfinished) {
                sweep(dir_fd, name);
                onnxio__sys_unlinkat(dir_fd, jname, 0);
            } else if (onnxio__sys_fstat(jfd, &j) == 0 && renames_cut_short(jfd, &j)) {
                s = onnxio__fail(ONNXIO_ERR_IO,
                                 "an interrupted save committed but could not be finished here (renames refused); "
                                 "load it as a user who can write to its directory");
            }
            /* Else none of its renames could be made (a read-only
             * directory): the old files, whole; the journal stays for a
             * load that can finish it. */
        } else if (!s && jfd >= 0) {
            /* Empty: a save's that has made it and not yet locked it, or
             * one that died before its first record (and so made no
             * file). Left to that save or the next: removing it would
             * send the live save after a new journal. */
        } else if (!s) {
            /* Another user's, or one this user cannot write. */
            s = inspect(dir_fd, name, jname);
        }
    }
    onnxio__close(jfd);
    onnxio__close(dir_fd);
    onnxio__free(jname);
    onnxio__free(name);
    /* A journal that cannot be opened or locked (another user's directory)
     * is not this load's business. */
    if (s && s != ONNXIO_ERR_IO) return onnxio__clear_error(), ONNXIO_OK;
    return s ? onnxio__context(s, "%s", path) : ONNXIO_OK;
}

bool onnxio__save_crossed(const char *path, int fd)
{
    struct stat a, b;
    if (fd < 0 || onnxio__sys_fstat(fd, &a) != 0) return false;
    /* A committed journal whose renames (data files first, the main file
     * last) are some done and some not: the load may have opened data
     * files of two saves. None done: it read the old files; all done: the
     * new ones, the main file included, which the look at the path below
     * catches. That look comes second: renames made between the two are
     * seen there. */
    int dir_fd;
    char *name = NULL, *jname = NULL;
    bool crossed = false;
    if (resolve_target(path, &dir_fd, &name)) return onnxio__clear_error(), false;
    struct stat j;
    if ((jname = hidden_name(name, JOURNAL_SUFFIX)) &&
        onnxio__sys_fstatat(dir_fd, jname, &j, AT_SYMLINK_NOFOLLOW) == 0 && journal_trusted(dir_fd, name, &j)) {
        int jfd = onnxio__sys_openat(dir_fd, jname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
        /* Unreadable: no telling, so the load starts again (and its
         * recover says why it cannot go on). */
        crossed = jfd < 0 ? errno != ENOENT
                          : onnxio__sys_fstat(jfd, &j) == 0 && journal_trusted(dir_fd, name, &j) &&
                                journal_state(jfd, (uint64_t)j.st_size) == 'C' && renames_cut_short(jfd, &j);
        onnxio__close(jfd);
    }
    onnxio__close(dir_fd);
    onnxio__free(jname);
    onnxio__free(name);
    /* Every save renames a new main file over the path, last. */
    return crossed || (onnxio__sys_fstatat(AT_FDCWD, path, &b, 0) == 0 && (a.st_dev != b.st_dev || a.st_ino != b.st_ino));
}

/* ---- the transaction ---------------------------------------------------------- */

typedef struct txn_file {
    int dir_fd;          /* its directory */
    char *tmp, *name;    /* names in dir_fd */
    int fd;              /* open while being written; -1 once synced and closed */
    temp_node *node;     /* in the list of temporary files */
} txn_file;

struct onnxio__txn {
    char *what;          /* the path as given, for messages */
    int dir_fd;          /* the main file's directory */
    char *name;          /* the main file's name in it */
    char *jname;
    int jfd;             /* the journal: lock and record */
    temp_node *jnode;    /* the journal in the list of temporary files */
    uint64_t jsize;
    txn_file *files;
    size_t count, capacity;
    ssize_t main_index;  /* the main file among files, -1 before it is created */
    int stream_fd;       /* >= 0: the target is not a regular file, written in place */
    bool no_fsync;       /* onnxio_serialize_options.fsync OFF */
};

void onnxio__txn_no_fsync(onnxio__txn *t) { t->no_fsync = true; }

/* fsync, unless the transaction was told not to. */
static int txn_fsync(const onnxio__txn *t, int fd) { return t->no_fsync ? 0 : onnxio__sys_fsync(fd); }

onnxio_status onnxio__txn_begin(const char *path, onnxio__txn **out)
{
    *out = NULL;
    onnxio__txn *t = onnxio__calloc(1, sizeof *t);
    if (!t) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    t->jfd = t->stream_fd = t->dir_fd = -1;
    t->main_index = -1;
    onnxio_status s;
    if (!(t->what = onnxio__strdup(path))) {
        onnxio__free(t);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    struct stat st;
    if (onnxio__sys_fstatat(AT_FDCWD, path, &st, 0) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) {
            s = onnxio__fail_errno(ONNXIO_ERR_IO, EISDIR, "cannot save to %s: it is a directory", path);
            goto fail;
        }
        /* A terminal, a pipe, /dev/null, /dev/stdout: written in one pass,
         * in place (opened through the kernel's own links, which /proc's
         * are). */
        t->dir_fd = -1;
        t->stream_fd = onnxio__sys_openat(AT_FDCWD, path, O_WRONLY | O_NOCTTY, 0);
        if (t->stream_fd < 0) {
            int err = errno;
            s = onnxio__fail(onnxio__errno_status(err), "cannot open %s: %s", path, strerror(err));
            goto fail;
        }
        *out = t;
        return ONNXIO_OK;
    }
    if ((s = resolve_target(path, &t->dir_fd, &t->name))) goto fail;
    if (!(t->jname = hidden_name(t->name, JOURNAL_SUFFIX))) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    onnxio__signals old;
    /* Made and registered with signals blocked: a handler removing the
     * temporary files sees the journal as soon as it exists. */
    onnxio__sys_signals_block(&old);
    s = lock_journal(t->dir_fd, t->jname, path, true, true, &t->jfd);
    if (!s) {
        char *dir = fd_path(t->dir_fd);
        char *abs = dir ? onnxio__path_join(dir, t->jname) : NULL;
        if (!abs || !(t->jnode = temp_register(abs))) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        onnxio__free(dir);
        onnxio__free(abs);
    }
    onnxio__sys_signals_restore(&old);
    if (s) goto fail;
    hold(t->jfd);
    /* As readable as the model (its read bits; new files get the umask's),
     * so that those who load it can read whether a save is committing. */
    struct stat target;
    if (onnxio__sys_fstatat(t->dir_fd, t->name, &target, 0) == 0)
        onnxio__sys_fchmod(t->jfd, 0600 | (target.st_mode & 0444));
    /* An earlier save of this file that died: finish or undo it first. */
    bool unfinished;
    replay(t->jfd, &unfinished);
    if (unfinished) {
        s = onnxio__fail(ONNXIO_ERR_IO, "%s: an interrupted save committed but cannot be finished (a rename fails)",
                         path);
        goto fail;
    }
    sweep(t->dir_fd, t->name);
    char head[JOURNAL_HEADER];
    memcpy(head, JOURNAL_MAGIC, JOURNAL_STATE_AT);
    head[JOURNAL_STATE_AT] = 'P';
    head[JOURNAL_STATE_AT + 1] = '\n';
    if (onnxio__sys_ftruncate(t->jfd, 0) != 0 || onnxio__sys_pwrite(t->jfd, head, sizeof head, 0) != (ssize_t)sizeof head) {
        s = onnxio__fail(ONNXIO_ERR_IO, "cannot write the save journal of %s: %s", path, strerror(errno));
        goto fail;
    }
    t->jsize = sizeof head;
    *out = t;
    return ONNXIO_OK;
fail:
    onnxio__txn_abort(t);
    return s;
}

bool onnxio__txn_is_stream(const onnxio__txn *t) { return t->stream_fd >= 0; }

/* Appends "<dir>/<tmp>\0<dir>/<name>\0" to the journal. */
static onnxio_status journal_record(onnxio__txn *t, int dir_fd, const char *tmp, const char *name)
{
    char *dir = fd_path(dir_fd);
    if (!dir) return onnxio__fail(ONNXIO_ERR_IO, "cannot name the directory of %s (is /proc mounted?)", name);
    size_t d = strlen(dir), a = strlen(tmp), b = strlen(name);
    size_t n = 2 * (d + 1) + a + b + 2;
    char *rec = onnxio__malloc(n), *p = rec;
    onnxio_status s = ONNXIO_OK;
    if (!rec) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    else {
        p += sprintf(p, "%s/%s", dir, tmp) + 1;
        p += sprintf(p, "%s/%s", dir, name) + 1;
        if (onnxio__sys_pwrite(t->jfd, rec, n, t->jsize) != (ssize_t)n)
            s = onnxio__fail(ONNXIO_ERR_IO, "cannot write the save journal of %s: %s", t->what, strerror(errno));
        else t->jsize += n;
    }
    onnxio__free(rec);
    onnxio__free(dir);
    return s;
}

onnxio_status onnxio__txn_create(onnxio__txn *t, int dir_fd, const char *name, int *fd_out)
{
    *fd_out = -1;
    bool main = name == NULL;
    if (t->stream_fd >= 0) {
        if (!main)
            return onnxio__fail(ONNXIO_ERR_IO, "%s is not a regular file: only a model without external data can be "
                                               "written to it", t->what);
        *fd_out = t->stream_fd;
        return ONNXIO_OK;
    }
    if (main) {
        dir_fd = t->dir_fd;
        name = t->name;
    }
    if (!onnxio__grow((void **)&t->files, &t->capacity, t->count, sizeof *t->files))
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    txn_file *f = &t->files[t->count];
    memset(f, 0, sizeof *f);
    f->fd = f->dir_fd = -1;
    char suffix[sizeof TMP_INFIX + RANDOM_HEX];
    memcpy(suffix, TMP_INFIX, sizeof TMP_INFIX - 1);
    random_hex(suffix + sizeof TMP_INFIX - 1);
    onnxio_status s = ONNXIO_OK;
    if ((f->dir_fd = onnxio__sys_dup(dir_fd)) < 0 || !(f->name = onnxio__strdup(name)) || !(f->tmp = hidden_name(name, suffix))) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    /* The target as it is: keep its mode; refuse one we may not write, as
     * open(O_WRONLY) would (the rename alone would not ask). */
    struct stat st;
    bool exists = onnxio__sys_fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
    if (exists && onnxio__sys_faccessat(dir_fd, name, W_OK, AT_EACCESS) != 0 && errno == EACCES) {
        s = onnxio__fail(ONNXIO_ERR_IO, "cannot replace %s: it is read-only (%s)", name, strerror(EACCES));
        goto fail;
    }
    if ((s = journal_record(t, dir_fd, f->tmp, name))) goto fail;
    char *dir = fd_path(dir_fd);
    char *abs = dir ? onnxio__path_join(dir, f->tmp) : NULL;
    onnxio__free(dir);
    if (!abs) {
        s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        goto fail;
    }
    /* Registered as it is made, signals blocked: no instant at which the
     * file exists and a handler would not know it. */
    onnxio__signals old;
    onnxio__sys_signals_block(&old);
    f->fd = onnxio__sys_openat(dir_fd, f->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0666);
    int err = errno;
    if (f->fd >= 0 && !(f->node = temp_register(abs))) {
        onnxio__close(f->fd);
        onnxio__sys_unlinkat(dir_fd, f->tmp, 0);
        f->fd = -1;
        err = ENOMEM;
    }
    onnxio__sys_signals_restore(&old);
    onnxio__free(abs);
    if (f->fd < 0) {
        s = onnxio__fail(onnxio__errno_status(err), "cannot create a temporary file for %s: %s", name, strerror(err));
        goto fail;
    }
    if (exists && (st.st_mode & 07777) != 0666) onnxio__sys_fchmod(f->fd, st.st_mode & 07777);
    if (main) t->main_index = (ssize_t)t->count;
    t->count++;
    *fd_out = f->fd;
    return ONNXIO_OK;
fail:
    if (f->fd >= 0) {
        onnxio__close(f->fd);
        onnxio__sys_unlinkat(dir_fd, f->tmp, 0);
    }
    onnxio__close(f->dir_fd);
    onnxio__free(f->name);
    onnxio__free(f->tmp);
    return s;
}

onnxio_status onnxio__txn_sync(onnxio__txn *t, int fd)
{
    for (size_t i = 0; i < t->count; i++) {
        txn_file *f = &t->files[i];
        if (f->fd != fd || fd < 0) continue;
        onnxio_status s = ONNXIO_OK;
        if (txn_fsync(t, f->fd) != 0) s = onnxio__fail(ONNXIO_ERR_IO, "cannot sync %s: %s", f->name, strerror(errno));
        if (onnxio__close(f->fd) != 0 && !s) s = onnxio__fail(ONNXIO_ERR_IO, "cannot close %s: %s", f->name, strerror(errno));
        f->fd = -1;
        return s;
    }
    return ONNXIO_OK;
}

/* Closes the descriptors and frees the blocks of one file or of the
 * transaction itself (temporary files stay where they are). */
static void drop(temp_node *node, int fd, int dir_fd, void *a, void *b)
{
    temp_forget(node);
    onnxio__close(fd);
    onnxio__close(dir_fd);
    onnxio__free(a);
    onnxio__free(b);
}

static void txn_free(onnxio__txn *t)
{
    for (size_t i = 0; i < t->count; i++) {
        txn_file *f = &t->files[i];
        drop(f->node, f->fd, f->dir_fd, f->tmp, f->name);
    }
    onnxio__close(t->stream_fd);
    onnxio__free(t->files);
    onnxio__free(t->what);
    release_hold(t->jfd);
    drop(t->jnode, t->jfd, t->dir_fd, t->jname, t->name);
    onnxio__free(t);
}

void onnxio__txn_abort(onnxio__txn *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->count; i++) {
        txn_file *f = &t->files[i];
        onnxio__close(f->fd);
        f->fd = -1;
        if (f->tmp) onnxio__sys_unlinkat(f->dir_fd, f->tmp, 0);
    }
    if (t->jfd >= 0) onnxio__sys_unlinkat(t->dir_fd, t->jname, 0);
    txn_free(t);
}

/* fsyncs the directories of the files renamed (each once). */
static void sync_dirs(onnxio__txn *t)
{
    for (size_t i = 0; i < t->count; i++) {
        struct stat a;
        if (onnxio__sys_fstat(t->files[i].dir_fd, &a) != 0) continue;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++) {
            struct stat b;
            seen = onnxio__sys_fstat(t->files[k].dir_fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
        }
        if (!seen) txn_fsync(t, t->files[i].dir_fd);
    }
}

onnxio_status onnxio__txn_commit(onnxio__txn *t)
{
    onnxio_status s = ONNXIO_OK;
    if (t->stream_fd >= 0) {
        txn_free(t);
        return ONNXIO_OK;
    }
    for (size_t i = 0; !s && i < t->count; i++) s = onnxio__txn_sync(t, t->files[i].fd);
    if (s) {
        onnxio__txn_abort(t);
        return s;
    }
    /* The commit point: from here the journal says "finish the renames". A
     * single file needs none: its rename is atomic by itself. */
    if (t->count > 1) {
        const char state = 'C';
        if (onnxio__sys_pwrite(t->jfd, &state, 1, JOURNAL_STATE_AT) != 1 || txn_fsync(t, t->jfd) != 0 ||
            txn_fsync(t, t->dir_fd) != 0) {
            s = onnxio__fail(ONNXIO_ERR_IO, "cannot commit the save of %s: %s", t->what, strerror(errno));
            onnxio__txn_abort(t);
            return s;
        }
        for (size_t i = 0; i < t->count; i++) atomic_store(&t->files[i].node->committed, 1);
        atomic_store(&t->jnode->committed, 1);
    }
    /* Data files first, the main file last: until it is renamed, the old
     * main file is what a reader opens. */
    bool renamed = false;
    for (size_t pass = 0; pass < 2 && !s; pass++)
        for (size_t i = 0; i < t->count && !s; i++) {
            txn_file *f = &t->files[i];
            if ((ssize_t)i == t->main_index ? pass == 0 : pass == 1) continue;
            if (onnxio__sys_renameat(f->dir_fd, f->tmp, f->dir_fd, f->name) != 0) {
                s = onnxio__fail(ONNXIO_ERR_IO, "cannot rename onto %s: %s", f->name, strerror(errno));
            } else {
                renamed = true;
                onnxio__free(f->tmp);
                f->tmp = NULL;
            }
        }
    if (s && renamed) {
        /* Committed and partly renamed: the journal and the temporary
         * files stay, for the next load or save to finish. */
        s = onnxio__context(s, "the save of %s is committed but not finished: the next load or save of it finishes it",
                            t->what);
        release_hold(t->jfd);
        onnxio__close(t->jfd);
        t->jfd = -1;
        txn_free(t);
        return s;
    }
    if (s) {
        onnxio__txn_abort(t);
        return s;
    }
    sync_dirs(t);
    onnxio__sys_unlinkat(t->dir_fd, t->jname, 0);
    txn_free(t);
    return ONNXIO_OK;
}
