/* What the command needs of the system that Windows lacks or spells
 * otherwise: one place for it, so that the verbs' files have no #ifdef.
 * On POSIX systems these are the system's own calls; on Windows (mingw-w64)
 * port.c implements them. The library's own system calls are not here:
 * they go through its OS layer (src/base/os_unix.c, os_win.c). */
#ifndef ONNXIO_CLI_PORT_H
#define ONNXIO_CLI_PORT_H

#include <stdio.h>

#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#include <stdlib.h>
/* The C runtime opens files in text mode unless told; the command reads
 * and writes bytes. O_CLOEXEC does not exist (no exec to guard). */
#ifndef O_CLOEXEC /* the library's own (base/os_win.h) where both are included: its tests */
#define O_CLOEXEC _O_BINARY
#endif
#define CLI_PRINTF(a, b) __attribute__((format(gnu_printf, a, b)))
#else
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#endif

/* Blocks every signal on the calling thread (pthread_sigmask), the mask
 * before in *old; restore puts it back. Nothing on Windows, where a
 * console event is handled on a thread of its own. */
#ifdef _WIN32
typedef int cli_signals;
#else
#include <signal.h>
typedef sigset_t cli_signals;
#endif
void cli_signals_block(cli_signals *old);
void cli_signals_restore(const cli_signals *old);

/* fnmatch(pattern, name, 0): 0 when `name` matches the glob `pattern`
 * (* ? [abc] [!abc] [a-z], '\' quoting the next character). */
int cli_fnmatch(const char *pattern, const char *name);
/* A stream whose bytes end up in *buf (malloc'd, NUL-terminated, *size
 * bytes) once cli_memstream_close returns 0 (open_memstream and fclose). */
FILE *cli_memstream_open(char **buf, size_t *size);
int cli_memstream_close(FILE *f, char **buf, size_t *size);
/* realpath(path, NULL): the absolute path, malloc'd; NULL when it does not
 * resolve. */
char *cli_realpath(const char *path);
/* mkdtemp(template) */
char *cli_mkdtemp(char *template_);
/* sync(): every file system's dirty data to its disk (nothing on Windows,
 * which has no call for all volumes at once). */
void cli_sync(void);
/* Runs `cleanup` when the process is told to end (SIGINT, SIGTERM, SIGHUP;
 * on Windows Ctrl-C, Ctrl-Break and the console closing), then ends as
 * it would have; ignores SIGXFSZ. Puts stdin and stdout in binary mode on
 * Windows. */
void cli_install_termination(void (*cleanup)(void));

#endif
