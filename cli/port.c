/* port.h: the system calls of the command, POSIX's or Windows'. */
#include "port.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <direct.h>
#include <windows.h>
#else
#include <fnmatch.h>
#include <pthread.h>
#include <unistd.h>
#endif

static void (*cleanup_fn)(void);

#ifndef _WIN32

int cli_fnmatch(const char *pattern, const char *name) { return fnmatch(pattern, name, 0); }

FILE *cli_memstream_open(char **buf, size_t *size) { return open_memstream(buf, size); }

int cli_memstream_close(FILE *f, char **buf, size_t *size)
{
    (void)buf, (void)size;
    return fclose(f);
}

char *cli_realpath(const char *path) { return realpath(path, NULL); }

void cli_signals_block(cli_signals *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

void cli_signals_restore(const cli_signals *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

char *cli_mkdtemp(char *template_) { return mkdtemp(template_); }

void cli_sync(void) { sync(); }

/* SIGINT, SIGTERM, SIGHUP: the cleanup runs (async-signal-safe by its
 * caller's contract), then the signal is raised again with its default
 * action, so that the process still dies of it (a shell or a supervisor
 * sees "killed by signal", not an exit status). The library's worker
 * threads and the progress thread block these signals, so the handler
 * runs on the thread that makes the onnxio calls, as the library requires. */
static void on_terminating_signal(int sig)
{
    cleanup_fn();
    signal(sig, SIG_DFL);
    /* Pending until this handler returns (the signal is blocked while it
     * runs); then the default action ends the process. */
    raise(sig);
}

void cli_install_termination(void (*cleanup)(void))
{
    cleanup_fn = cleanup;
    /* Writing past `ulimit -f` then fails with EFBIG ("File too large"),
     * which the save reports and cleans up after, instead of the default
     * SIGXFSZ killing the process with its temporary file left behind. */
    signal(SIGXFSZ, SIG_IGN);

    static const int terminating[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof terminating / sizeof terminating[0]; i++) {
        struct sigaction old;
        /* A signal the parent ignores (nohup, a background job of a
         * non-interactive shell) stays ignored. */
        if (sigaction(terminating[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
            continue;
        struct sigaction sa = {0};
        sa.sa_handler = on_terminating_signal;
        sigemptyset(&sa.sa_mask);
        /* The other terminating signals wait while the handler runs, so
         * that it never interrupts itself. */
        for (size_t k = 0; k < sizeof terminating / sizeof terminating[0]; k++)
            sigaddset(&sa.sa_mask, terminating[k]);
        sigaction(terminating[i], &sa, NULL);
    }
}

#else

/* fnmatch's rules without flags: '/' and a leading '.' are ordinary. */
int cli_fnmatch(const char *p, const char *s)
{
    for (; *p; p++, s++) {
        switch (*p) {
        case '?':
            if (!*s) return 1;
            break;
        case '*':
            while (p[1] == '*') p++;
            if (!p[1]) return 0;
            for (; *s; s++)
                if (cli_fnmatch(p + 1, s) == 0) return 0;
            return cli_fnmatch(p + 1, s);
        case '[': {
            if (!*s) return 1;
            const char *q = p + 1;
            int negate = *q == '!' || *q == '^';
            if (negate) q++;
            int hit = 0;
            const char *start = q;
            for (; *q && (*q != ']' || q == start); q++) {
                char lo = *q, hi = *q;
                if (q[1] == '-' && q[2] && q[2] != ']') hi = q[2], q += 2;
                if ((unsigned char)*s >= (unsigned char)lo && (unsigned char)*s <= (unsigned char)hi) hit = 1;
            }
            if (!*q) { /* no closing ']': a literal '[' */
                if (*s != '[') return 1;
                break;
            }
            if (hit == negate) return 1;
            p = q;
            break;
        }
        case '\\':
            if (p[1]) p++;
            /* fall through */
        default:
            if (*s != *p) return 1;
        }
    }
    return *s ? 1 : 0;
}

/* A temporary file read back at the close. */
FILE *cli_memstream_open(char **buf, size_t *size)
{
    *buf = NULL;
    *size = 0;
    return tmpfile();
}

int cli_memstream_close(FILE *f, char **buf, size_t *size)
{
    long n = fflush(f) == 0 ? ftell(f) : -1;
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    int bad = !b;
    if (b) {
        rewind(f);
        bad = fread(b, 1, (size_t)n, f) != (size_t)n;
        b[n] = '\0';
    }
    if (fclose(f) != 0) bad = 1;
    if (bad) {
        free(b);
        return -1;
    }
    *buf = b;
    *size = (size_t)n;
    return 0;
}

char *cli_realpath(const char *path)
{
    char *p = _fullpath(NULL, path, 0);
    if (p && GetFileAttributesA(p) == INVALID_FILE_ATTRIBUTES) {
        free(p);
        return NULL;
    }
    return p;
}

char *cli_mkdtemp(char *template_)
{
    for (int tries = 0; tries < 100; tries++) {
        size_t n = strlen(template_);
        if (n < 6) return NULL;
        unsigned r = GetTickCount() ^ (unsigned)GetCurrentProcessId() ^ ((unsigned)tries * 2654435761u);
        for (size_t i = n - 6; i < n; i++, r /= 36) template_[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[r % 36];
        if (_mkdir(template_) == 0) return template_;
    }
    return NULL;
}

void cli_sync(void) {}

void cli_signals_block(cli_signals *old) { *old = 0; }
void cli_signals_restore(const cli_signals *old) { (void)old; }

/* Runs on a thread of its own, which Windows starts for the event: the
 * library's state is the same for it as for any other thread of the
 * process. FALSE: the next handler, in the end the default one, ends the
 * process. */
static BOOL WINAPI on_console_event(DWORD event)
{
    (void)event;
    cleanup_fn();
    return FALSE;
}

void cli_install_termination(void (*cleanup)(void))
{
    cleanup_fn = cleanup;
    _setmode(_fileno(stdout), _O_BINARY);
    _setmode(_fileno(stdin), _O_BINARY);
    SetConsoleCtrlHandler(on_console_event, TRUE);
}

#endif
