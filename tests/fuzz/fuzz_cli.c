/* libFuzzer target for the onnxio command (see docs/fuzzing.md): the CLI's
 * own code (info's summary and JSON, convert's checks, print) on top of the
 * library, run in-process through cli_main (cli/common.h).
 *
 * Every input is written to a file in a private temporary directory, and
 * the command runs on it these ways, each a valid command line:
 *   onnxio info IN
 *   onnxio info IN --json
 *   onnxio print IN
 *   onnxio convert IN OUT.onnx
 *   onnxio convert IN OUT.onnxz
 *   onnxio convert IN OUT.onnx --external-data d.bin
 *   onnxio cat IN -- NAME
 *   onnxio cat IN --slice 1:3 -- NAME
 *   onnxio cat IN --slice ...,-1 -- NAME
 *   onnxio cat IN --output OUT.npy -- NAME
 *   onnxio extract IN OUT.onnx --tensors NAME
 *   onnxio extract IN OUT.onnxz --tensors '*'
 * where NAME is the first initializer of the main graph when the library
 * opens IN (onnxio_tensor_file_open), else "w" (cat and extract then fail
 * cleanly).
 * Whatever the input, each must end with exit status 0 (it was a model) or
 * 1 (a clear failure), never 2 (these are no usage errors), and never crash
 * or leak (ASan and UBSan check that; cli_main must not leak what it
 * allocates, since it returns instead of exiting). A status other than 0 or
 * 1 aborts, which libFuzzer reports as a crash.
 *
 * The directory is $TMPDIR, else /dev/shm (saves fsync every file: on tmpfs
 * that costs nothing), else /tmp; it is emptied after every input (the
 * outputs, data files, and whatever a save left behind) and removed at
 * exit. The command's stdout and stderr go to /dev/null while it runs and
 * are restored after; sanitizer reports are sent to the original stderr
 * (__sanitizer_set_report_fd), so that a crash inside the command is still
 * explained. FUZZ_CLI_OUTPUT=1 leaves the command's output on the terminal
 * (to see what it says about an input: build-fuzz/fuzz_cli INPUT). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#if defined(__has_include)
#if __has_include(<sanitizer/common_interface_defs.h>)
#include <sanitizer/common_interface_defs.h>
#define HAVE_SANITIZER_REPORT_FD 1
#endif
#endif

static char dir[PATH_MAX];
static int dir_fd = -1;
static int saved_out = -1, saved_err = -1;
static int sink = -1;    /* where the command's output goes */
static int quiet = 1;    /* 0 with FUZZ_CLI_OUTPUT=1 */

static void die(const char *what)
{
    /* The real stderr, whatever the command's state. */
    if (saved_err >= 0)
        dup2(saved_err, STDERR_FILENO);
    fprintf(stderr, "fuzz_cli: %s: %s\n", what, strerror(errno));
    abort();
}

/* Removes everything inside the directory open as `fd` (not the directory
 * itself). The command writes only files there, but a directory is removed
 * too, depth first, so that nothing carries over to the next input. */
static void empty_dir(int fd)
{
    int scan = dup(fd);
    if (scan < 0)
        die("dup");
    DIR *d = fdopendir(scan);
    if (!d)
        die("fdopendir");
    rewinddir(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(fd, e->d_name, 0) == 0)
            continue;
        int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (sub < 0)
            die("cannot remove a file of the temporary directory");
        empty_dir(sub);
        close(sub);
        if (unlinkat(fd, e->d_name, AT_REMOVEDIR) != 0)
            die("cannot remove a directory of the temporary directory");
    }
    closedir(d);
}

static void remove_dir(void)
{
    if (dir_fd < 0)
        return;
    empty_dir(dir_fd);
    close(dir_fd);
    dir_fd = -1;
    rmdir(dir);
}

static void setup(void)
{
    const char *base = getenv("TMPDIR");
    struct stat st;
    if (!base || !base[0])
        base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                                                                                   : "/tmp";
    snprintf(dir, sizeof dir, "%s/onnxio-fuzz-cli-XXXXXX", base);
    if (!mkdtemp(dir))
        die("mkdtemp");
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dir_fd < 0)
        die("open the temporary directory");
    atexit(remove_dir);

    const char *show = getenv("FUZZ_CLI_OUTPUT");
    quiet = !(show && strcmp(show, "1") == 0);
    saved_out = dup(STDOUT_FILENO);
    saved_err = dup(STDERR_FILENO);
    if (saved_out < 0 || saved_err < 0)
        die("dup");
#ifdef HAVE_SANITIZER_REPORT_FD
    __sanitizer_set_report_fd((void *)(intptr_t)saved_err);
#endif
    /* /dev/null, when it is the device: on a machine where it has become a
     * regular file, writing there would fill it, so a sink file of our own
     * (outside the directory that is emptied) is truncated instead. */
    sink = open("/dev/null", O_WRONLY);
    if (sink >= 0 && (fstat(sink, &st) != 0 || !S_ISCHR(st.st_mode))) {
        close(sink);
        char path[PATH_MAX + 8];
        snprintf(path, sizeof path, "%s.out", dir);
        sink = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (sink >= 0)
            unlink(path); /* gone once closed */
    }
    if (sink < 0)
        die("open /dev/null");
}

static void silence(void)
{
    if (!quiet)
        return;
    fflush(stdout);
    fflush(stderr);
    if (dup2(sink, STDOUT_FILENO) < 0 || dup2(sink, STDERR_FILENO) < 0)
        die("dup2");
}

static void restore(void)
{
    if (!quiet)
        return;
    fflush(stdout);
    fflush(stderr);
    if (dup2(saved_out, STDOUT_FILENO) < 0 || dup2(saved_err, STDERR_FILENO) < 0)
        die("dup2");
    /* A sink file must not grow from input to input. */
    if (ftruncate(sink, 0) == 0)
        lseek(sink, 0, SEEK_SET);
}

/* Runs `onnxio ARGS...` (NULL-terminated) and checks its exit status. */
static void run(const char *const *args)
{
    char *argv[16];
    argv[0] = (char *)"onnxio";
    int argc = 1;
    for (const char *const *a = args; *a && argc < 15; a++)
        argv[argc++] = (char *)*a;
    argv[argc] = NULL;
    silence();
    int rc = cli_main(argc, argv);
    restore();
    if (rc != CLI_EXIT_OK && rc != CLI_EXIT_FAILURE) {
        fprintf(stderr, "fuzz_cli: onnxio");
        for (int i = 1; i < argc; i++)
            fprintf(stderr, " %s", argv[i]);
        fprintf(stderr, ": exit status %d (0 or 1 expected)\n", rc);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (dir_fd < 0)
        setup();
    char in[PATH_MAX + 32], out[PATH_MAX + 32], outz[PATH_MAX + 32], out_ext[PATH_MAX + 32];
    snprintf(in, sizeof in, "%s/in.onnx", dir);
    snprintf(out, sizeof out, "%s/out.onnx", dir);
    snprintf(outz, sizeof outz, "%s/out.onnxz", dir);
    snprintf(out_ext, sizeof out_ext, "%s/out-ext.onnx", dir);

    int fd = open(in, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die("create the input file");
    for (size_t done = 0; done < size;) {
        ssize_t n = write(fd, data + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("write the input file");
        done += (size_t)n;
    }
    close(fd);

    run((const char *const[]){"info", in, NULL});
    run((const char *const[]){"info", in, "--json", NULL});
    run((const char *const[]){"print", in, NULL});
    run((const char *const[]){"convert", in, out, NULL});
    run((const char *const[]){"convert", in, outz, NULL});
    run((const char *const[]){"convert", in, out_ext, "--external-data", "d.bin", NULL});

    /* cat and extract: the first initializer's name, cut at a NUL byte;
     * "w" when there is none. A pattern may not be empty (a usage error). */
    char name[256] = "w";
    onnxio_tensor_file *tf = NULL;
    onnxio_slice_options so = ONNXIO_SLICE_OPTIONS_INIT;
    so.num_threads = 1;
    if (onnxio_tensor_file_open(in, &so, &tf) == ONNXIO_OK) {
        const onnxio_ModelProto *m = onnxio_tensor_file_model(tf);
        if (m && m->graph && m->graph->initializer.size) {
            const onnxio_string *s = &m->graph->initializer.data[0]->name;
            size_t n = s->size < sizeof name - 1 ? s->size : sizeof name - 1;
            memcpy(name, s->data ? s->data : "", n);
            name[n] = '\0';
            if (!name[0])
                strcpy(name, "w");
        }
    }
    onnxio_tensor_file_close(tf);
    char npy[PATH_MAX + 32];
    snprintf(npy, sizeof npy, "%s/out.npy", dir);
    run((const char *const[]){"cat", in, "--", name, NULL});
    run((const char *const[]){"cat", in, "--slice", "1:3", "--", name, NULL});
    run((const char *const[]){"cat", in, "--slice", "...,-1", "--", name, NULL});
    run((const char *const[]){"cat", in, "--output", npy, "--", name, NULL});
    run((const char *const[]){"extract", in, out, "--tensors", name, NULL});
    run((const char *const[]){"extract", in, outz, "--tensors", "*", NULL});

    empty_dir(dir_fd);
    return 0;
}
