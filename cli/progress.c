#include "progress.h"
#include "port.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Steps shorter than this print nothing (ONNXIO_PROGRESS_DELAY, in
 * seconds, overrides it: 0 draws from the start); the line is then redrawn
 * at this interval. */
#define PROGRESS_DELAY_NS 400000000LL
#define PROGRESS_TICK_NS 100000000LL
/* The clock of the drawing thread's timed waits: CLOCK_MONOTONIC, which
 * a clock change does not move, where a condition variable can be set to
 * it (pthread_condattr_setclock); macOS has no such call and waits on
 * CLOCK_REALTIME. */
#if defined(__APPLE__) || defined(_WIN32)
#define WAIT_CLOCK CLOCK_REALTIME
#else
#define WAIT_CLOCK CLOCK_MONOTONIC
#endif
/* Characters of the bar. */
#define PROGRESS_BAR 20

static struct {
    int running;
    int stop;
    int drawn;
    const char *what;
    const char *subject;
    /* Payload bytes of the step (cli_progress_bytes); has_bytes once the
     * library said its total. */
    int has_bytes;
    unsigned long long done, total;
    long long delay_ns;
    long long drawn_ns; /* when the line was last drawn (elapsed) */
    struct timespec start;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
} progress = {.lock = PTHREAD_MUTEX_INITIALIZER};

static long long elapsed_ns(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)(now.tv_sec - since->tv_sec) * 1000000000LL + (now.tv_nsec - since->tv_nsec);
}

/* "12.3 MiB" (binary units, as `onnxio info`). */
static void human(char *buf, size_t size, unsigned long long bytes)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) {
        snprintf(buf, size, "%llu B", bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, size, "%.1f %s", v, units[u]);
}

/* "1:05" or "1:02:03". */
static void clock_text(char *buf, size_t size, long long seconds)
{
    if (seconds >= 3600)
        snprintf(buf, size, "%lld:%02lld:%02lld", seconds / 3600, seconds / 60 % 60, seconds % 60);
    else
        snprintf(buf, size, "%lld:%02lld", seconds / 60, seconds % 60);
}

/* Called with the lock held. */
static void draw(long long ns)
{
    static const char spin[] = "|/-\\";
    long long tenths = ns / 100000000LL;
    /* \r and "erase to end of line": the line is redrawn in place. */
    if (!progress.has_bytes || progress.total == 0) {
        fprintf(stderr, "\r\033[Konnxio: %s %s ... %c %lld.%llds", progress.what, progress.subject,
                spin[tenths % 4], tenths / 10, tenths % 10);
    } else {
        /* As pip and huggingface_hub draw it: percentage, bar, bytes done
         * of the total, rate (decimal MB/s), time left. */
        unsigned long long done = progress.done, total = progress.total;
        int percent = (int)(done * 100.0 / (double)total);
        char bar[PROGRESS_BAR + 1];
        int filled = (int)(done * (double)PROGRESS_BAR / (double)total);
        for (int i = 0; i < PROGRESS_BAR; i++)
            bar[i] = i < filled ? '#' : '-';
        bar[PROGRESS_BAR] = '\0';
        char done_text[32], total_text[32], eta[32] = "-:--";
        human(done_text, sizeof done_text, done);
        human(total_text, sizeof total_text, total);
        double seconds = (double)ns / 1e9;
        double rate = seconds > 0 ? (double)done / seconds : 0; /* bytes per second */
        if (rate > 0)
            clock_text(eta, sizeof eta, (long long)((double)(total - done) / rate + 0.5));
        fprintf(stderr, "\r\033[Konnxio: %s %s %3d%% [%s] %s/%s %.1f MB/s ETA %s", progress.what,
                progress.subject, percent, bar, done_text, total_text, rate / 1e6, eta);
    }
    fflush(stderr);
    progress.drawn = 1;
    progress.drawn_ns = ns;
}

static void *progress_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&progress.lock);
    while (!progress.stop) {
        long long ns = elapsed_ns(&progress.start);
        if (ns >= progress.delay_ns)
            draw(ns);
        struct timespec until;
        clock_gettime(WAIT_CLOCK, &until);
        until.tv_nsec += PROGRESS_TICK_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_nsec -= 1000000000L;
            until.tv_sec += 1;
        }
        int rc = 0;
        while (!progress.stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&progress.wake, &progress.lock, &until);
    }
    pthread_mutex_unlock(&progress.lock);
    return NULL;
}

void cli_progress_begin(const char *what, const char *subject)
{
    if (progress.running || !isatty(STDERR_FILENO))
        return;
    const char *env = getenv("TERM");
    if (env && strcmp(env, "dumb") == 0)
        return;
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return;
#if !defined(__APPLE__) && !defined(_WIN32)
    pthread_condattr_setclock(&attr, WAIT_CLOCK);
#endif
    int rc = pthread_cond_init(&progress.wake, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        return;
    progress.what = what;
    progress.subject = subject;
    progress.stop = 0;
    progress.drawn = 0;
    progress.has_bytes = 0;
    progress.delay_ns = PROGRESS_DELAY_NS;
    const char *delay = getenv("ONNXIO_PROGRESS_DELAY");
    if (delay && *delay) {
        char *end;
        double v = strtod(delay, &end);
        if (*end == '\0' && v >= 0 && v < 3600)
            progress.delay_ns = (long long)(v * 1e9);
    }
    progress.done = progress.total = 0;
    clock_gettime(CLOCK_MONOTONIC, &progress.start);
    /* The thread starts with every signal blocked (it inherits the mask),
     * so that SIGINT and the like reach the thread making the onnxio calls,
     * where main.c's handler may remove the save's temporary files. */
    cli_signals old;
    cli_signals_block(&old);
    rc = pthread_create(&progress.thread, NULL, progress_main, NULL);
    cli_signals_restore(&old);
    if (rc != 0) {
        pthread_cond_destroy(&progress.wake);
        return; /* no indicator is no failure */
    }
    progress.running = 1;
}

void cli_progress_end(void)
{
    if (!progress.running)
        return;
    pthread_mutex_lock(&progress.lock);
    progress.stop = 1;
    pthread_cond_signal(&progress.wake);
    pthread_mutex_unlock(&progress.lock);
    pthread_join(progress.thread, NULL);
    pthread_cond_destroy(&progress.wake);
    if (progress.drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    progress.running = 0;
}

int cli_progress_active(void)
{
    return progress.running;
}

int cli_progress_bytes(void *user, uint64_t done, uint64_t total)
{
    (void)user;
    if (!progress.running)
        return 0;
    pthread_mutex_lock(&progress.lock);
    int first = !progress.has_bytes;
    progress.has_bytes = 1;
    progress.done = done;
    progress.total = total;
    /* Drawn now when the line is due: the first byte count at once, then
     * at most once per tick (the thread redraws in between). */
    long long ns = elapsed_ns(&progress.start);
    if (ns >= progress.delay_ns && (first || ns - progress.drawn_ns >= PROGRESS_TICK_NS))
        draw(ns);
    pthread_mutex_unlock(&progress.lock);
    return 0;
}
