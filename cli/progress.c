#include "progress.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Steps shorter than this print nothing; the line is then redrawn at this
 * interval. */
#define PROGRESS_DELAY_NS 400000000LL
#define PROGRESS_TICK_NS 100000000LL

static struct {
    int running;
    int stop;
    int drawn;
    const char *what;
    const char *subject;
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

static void draw(long long ns)
{
    static const char spin[] = "|/-\\";
    long long tenths = ns / 100000000LL;
    /* \r and "erase to end of line": the line is redrawn in place. */
    fprintf(stderr, "\r\033[Konnxio: %s %s ... %c %lld.%llds", progress.what, progress.subject,
            spin[tenths % 4], tenths / 10, tenths % 10);
    fflush(stderr);
    progress.drawn = 1;
}

static void *progress_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&progress.lock);
    while (!progress.stop) {
        long long ns = elapsed_ns(&progress.start);
        if (ns >= PROGRESS_DELAY_NS)
            draw(ns);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
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
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&progress.wake, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        return;
    progress.what = what;
    progress.subject = subject;
    progress.stop = 0;
    progress.drawn = 0;
    clock_gettime(CLOCK_MONOTONIC, &progress.start);
    /* The thread starts with every signal blocked (it inherits the mask),
     * so that SIGINT and the like reach the thread making the onnxio calls,
     * where main.c's handler may remove the save's temporary files. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&progress.thread, NULL, progress_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
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
