/* The onnxio program: signal dispositions, then cli_main (cli.c), which is
 * the whole command and can also run in-process (tests/fuzz/fuzz_cli.c). */
#include <signal.h>
#include <stddef.h>

#include "common.h"

/* SIGINT, SIGTERM, SIGHUP: the temporary files of a save in progress
 * (".NAME.onnxio-tmp-XXXXXXXXXXXX" beside its target) are removed, then the signal is
 * raised again with its default action, so that the process still dies of
 * it (a shell or a supervisor sees "killed by signal", not an exit status).
 * Only async-signal-safe calls: onnxio_remove_temporary_files is one by
 * its contract, signal and raise are POSIX ones. The library's worker
 * threads and the progress thread block these signals, so the handler runs
 * on the thread that makes the onnxio calls, as the library requires. */
static void on_terminating_signal(int sig)
{
    onnxio_remove_temporary_files();
    signal(sig, SIG_DFL);
    /* Pending until this handler returns (the signal is blocked while it
     * runs); then the default action ends the process. */
    raise(sig);
}

static void install_signal_handlers(void)
{
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

int main(int argc, char **argv)
{
    install_signal_handlers();
    return cli_main(argc, argv);
}
