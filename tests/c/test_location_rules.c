/* The names an external data location may not use on Windows, in the
 * Windows build and in every other (docs/design.md, "The OS layer").
 *
 * - The rule's logic (onnxio__windows_path_problem, bytes only), on every
 *   build: each kind Windows reads otherwise than POSIX (drive letters, UNC
 *   and \\?\ paths, '..' between backslashes, alternate data streams,
 *   device names, a trailing '.' or ' ') and names it must keep.
 * - Loads of a model whose one tensor's location is each hostile kind,
 *   with a data file beside the model: the Windows build refuses every
 *   kind with the rule's status; the POSIX build refuses what it always
 *   refused (absolute paths, '..') and reads the others as the ordinary
 *   file names they are there, the data file of that literal name.
 * - A location whose first component is a symlink (on Windows: a directory
 *   symbolic link, a reparse point) to a directory outside the model's:
 *   ONNXIO_ERR_PATH_ESCAPES on both, through '/' and, on Windows, through
 *   '\'; a backslash location on Windows walks the same components as
 *   with '/'. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <winioctl.h>
#include <direct.h>
#include <wchar.h>
#endif

#include "proto/codec.h"
#include "testutil.h"

#ifdef _WIN32
#define ON_WINDOWS 1
#else
#define ON_WINDOWS 0
#endif

#define DATA_SIZE 16
static const uint8_t data_bytes[DATA_SIZE] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* A hostile location: the status of the Windows rule (and of a Windows
 * load), and that of a POSIX load, where the data file `posix_file` (under
 * the model's directory, NULL: none is made) holds the data. */
typedef struct hostile {
    const char *location;
    onnxio_status windows;
    onnxio_status posix;
    const char *posix_file;
} hostile;

static const hostile hostiles[] = {
    {"C:\\data.bin", ONNXIO_ERR_PATH_ABSOLUTE, ONNXIO_ERR_PATH_ABSOLUTE, NULL},
    {"C:data.bin", ONNXIO_ERR_PATH_ABSOLUTE, ONNXIO_ERR_PATH_ABSOLUTE, NULL},
    {"c:/data.bin", ONNXIO_ERR_PATH_ABSOLUTE, ONNXIO_ERR_PATH_ABSOLUTE, NULL},
    {"\\\\server\\share\\data.bin", ONNXIO_ERR_PATH_ABSOLUTE, ONNXIO_ERR_PATH_ABSOLUTE, NULL},
    {"\\\\?\\C:\\data.bin", ONNXIO_ERR_PATH_ABSOLUTE, ONNXIO_ERR_PATH_ABSOLUTE, NULL},
    {"\\\\.\\C:\\data.bin", ONNXIO_ERR_PATH_ABSOLUTE, ONNXIO_ERR_PATH_ABSOLUTE, NULL},
    {"//server/share/data.bin", ONNXIO_ERR_PATH_ABSOLUTE, ONNXIO_ERR_PATH_ABSOLUTE, NULL},
    {"\\data.bin", ONNXIO_ERR_PATH_ABSOLUTE, ONNXIO_ERR_PATH_ABSOLUTE, NULL},
    {"sub\\..\\..\\data.bin", ONNXIO_ERR_PATH_PARENT, ONNXIO_ERR_PATH_PARENT, NULL},
    {"..\\data.bin", ONNXIO_ERR_PATH_PARENT, ONNXIO_ERR_PATH_PARENT, NULL},
    {"sub/..\\data.bin", ONNXIO_ERR_PATH_PARENT, ONNXIO_ERR_PATH_PARENT, NULL},
    {"data.bin:stream", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data.bin:stream"},
    {"data.bin::$DATA", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data.bin::$DATA"},
    {"data.bin:stream:$DATA", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data.bin:stream:$DATA"},
    {"sub/C:data.bin", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "sub/C:data.bin"},
    {"CON", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "CON"},
    {"con", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "con"},
    {"PRN.bin", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "PRN.bin"},
    {"aux.tar.gz", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "aux.tar.gz"},
    {"NUL", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "NUL"},
    {"nul .txt", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "nul .txt"},
    {"COM1", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "COM1"},
    {"com9.bin", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "com9.bin"},
    {"LPT1.txt", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "LPT1.txt"},
    {"Lpt9", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "Lpt9"},
    {"COM\xc2\xb9", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "COM\xc2\xb9"},
    {"CONIN$", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "CONIN$"},
    {"sub/CON.txt/data.bin", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "sub/CON.txt/data.bin"},
    {"sub\\aux\\data.bin", ONNXIO_ERR_PATH_SPECIAL, ONNXIO_OK, "sub\\aux\\data.bin"},
    {"data.bin.", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data.bin."},
    {"data.bin ", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data.bin "},
    {"sub./data.bin", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "sub./data.bin"},
    {"...", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "..."},
    {"data?.bin", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data?.bin"},
    {"data*.bin", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data*.bin"},
    {"data<1>.bin", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data<1>.bin"},
    {"data|x.bin", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data|x.bin"},
    {"data\".bin", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data\".bin"},
    {"data\t.bin", ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_OK, "data\t.bin"},
};

/* Names every build keeps, Windows' rule included. */
static const char *const kept[] = {
    "data.bin", "sub/data.bin", "sub\\data.bin", "./data.bin", ".\\sub\\data.bin", "a..b", ".hidden", "x.y.z",
    "CONFIG.bin", "console", "NULL", "COM10", "LPT", "com", "AUXILIARY.bin", "CON_data", "xCON", "data bin",
    "sub//data.bin", "\xc3\xa9t\xc3\xa9.bin", "COM\xc2\xb4",
};

static void check_rule(void)
{
    tu_begin("the Windows rule's logic (every build)");
    for (size_t i = 0; i < sizeof hostiles / sizeof hostiles[0]; i++) {
        const hostile *h = &hostiles[i];
        onnxio_status s;
        const char *why = onnxio__windows_path_problem(h->location, strlen(h->location), &s);
        CHECK_MSG(why && s == h->windows, "'%s': the Windows rule gave %s (%s), want %s", h->location,
                  onnxio_status_name(s), why ? why : "kept", onnxio_status_name(h->windows));
    }
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        onnxio_status s;
        const char *why = onnxio__windows_path_problem(kept[i], strlen(kept[i]), &s);
        CHECK_MSG(!why && s == ONNXIO_OK, "'%s': the Windows rule refused it (%s)", kept[i], why ? why : "");
    }
    tu_end();

    tu_begin("onnxio_check_location: the Windows rule %s", ON_WINDOWS ? "applied" : "not applied (POSIX names)");
    for (size_t i = 0; i < sizeof hostiles / sizeof hostiles[0]; i++) {
        const hostile *h = &hostiles[i];
        /* A POSIX build refuses by the spelling what it refuses at all. */
        onnxio_status want = ON_WINDOWS ? h->windows : h->posix;
        onnxio_status got = onnxio_check_location(h->location, strlen(h->location));
        CHECK_MSG(got == want, "'%s': onnxio_check_location gave %s, want %s (\"%s\")", h->location,
                  onnxio_status_name(got), onnxio_status_name(want), onnxio_last_error());
    }
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        CHECK_STATUS(onnxio_check_location(kept[i], strlen(kept[i])), ONNXIO_OK);
    tu_end();
}

/* ---- loads ----------------------------------------------------------------- */

/* Writes <dir>/model.onnx: one UINT8 initializer "w" of DATA_SIZE bytes in
 * external data at `location`. */
static void write_model(const char *dir, const char *location)
{
    tu_write_external_model(dir, DATA_SIZE, location, NULL, NULL);
}

/* Makes the directories of `rel` under `dir` ('/' only), then the file. */
static bool make_data_file(const char *dir, const char *rel)
{
    char *path = tu_path_join(dir, rel);
    for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    bool ok = tu_write_file(path, data_bytes, DATA_SIZE);
    free(path);
    return ok;
}

/* Loads <dir>/model.onnx and checks the status; on success, the bytes. */
static void expect_load(const char *dir, const char *what, onnxio_status want)
{
    char *path = tu_path_join(dir, "model.onnx");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = NULL;
    onnxio_status got = onnxio_load_model(path, NULL, a, &m);
    CHECK_MSG(got == want, "'%s': onnxio_load_model gave %s, want %s (\"%s\")", what, onnxio_status_name(got),
              onnxio_status_name(want), onnxio_last_error());
    if (got == ONNXIO_OK && want == ONNXIO_OK && CHECK(m && m->graph && m->graph->initializer.size == 1)) {
        const onnxio_TensorProto *t = m->graph->initializer.data[0];
        CHECK_BYTES(t->raw_data.data, t->raw_data.size, data_bytes, DATA_SIZE);
    }
    onnxio_arena_unref(a);
    free(path);
}

static void check_loads(void)
{
    tu_begin("loads of hostile locations (%s)", ON_WINDOWS ? "Windows: refused" : "POSIX: as before");
    for (size_t i = 0; i < sizeof hostiles / sizeof hostiles[0]; i++) {
        const hostile *h = &hostiles[i];
        char *dir = tu_make_temp_dir("onnxio-names");
        /* A data file the name could reach: on Windows the one it would
         * open after the system's reading (data.bin), elsewhere the
         * literal name. */
        CHECK(make_data_file(dir, "data.bin"));
        if (!ON_WINDOWS && h->posix_file) CHECK_MSG(make_data_file(dir, h->posix_file), "cannot make '%s'", h->posix_file);
        write_model(dir, h->location);
        expect_load(dir, h->location, ON_WINDOWS ? h->windows : h->posix);
        tu_remove_tree(dir);
        free(dir);
    }
    tu_end();

    tu_begin("a backslash location (%s)", ON_WINDOWS ? "Windows: a separator" : "POSIX: a byte of the name");
    char *dir = tu_make_temp_dir("onnxio-names");
    CHECK(make_data_file(dir, ON_WINDOWS ? "sub/data.bin" : "sub\\data.bin"));
    write_model(dir, "sub\\data.bin");
    expect_load(dir, "sub\\data.bin", ONNXIO_OK);
    if (!ON_WINDOWS) {
        /* sub/data.bin is another file: the name "sub\data.bin" is not it. */
        tu_remove_tree(dir);
        free(dir);
        dir = tu_make_temp_dir("onnxio-names");
        CHECK(make_data_file(dir, "sub/data.bin"));
        write_model(dir, "sub\\data.bin");
        expect_load(dir, "sub\\data.bin (only sub/data.bin exists)", ONNXIO_ERR_NOT_FOUND);
    }
    tu_remove_tree(dir);
    free(dir);
    tu_end();
}

/* ---- the model's own path -------------------------------------------------- */

/* The model's directory and file name from its path, against Python's
 * ntpath (Windows) and posixpath (elsewhere): ntpath.dirname and
 * ntpath.basename of each path give the Windows column. Then a model
 * with external data loaded through a path spelled with backslashes: on
 * Windows its data is found beside it. */
static void check_model_path(void)
{
    tu_begin("the model's path (%s)", ON_WINDOWS ? "Windows: '/' and backslash separate" : "POSIX: '/' separates");
    static const struct {
        const char *path, *win_dir, *win_name, *posix_dir, *posix_name;
    } cases[] = {
        {"C:\\models\\m.onnx", "C:\\models", "m.onnx", ".", "C:\\models\\m.onnx"},
        {"C:\\m.onnx", "C:\\", "m.onnx", ".", "C:\\m.onnx"},
        {"a/b\\m.onnx", "a/b", "m.onnx", "a", "b\\m.onnx"},
        {"a\\b/m.onnx", "a\\b", "m.onnx", "a\\b", "m.onnx"},
        {"/m.onnx", "/", "m.onnx", "/", "m.onnx"},
        {"m.onnx", ".", "m.onnx", ".", "m.onnx"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        onnxio_model_dir(cases[i].path, NULL, buf, sizeof buf);
        CHECK_STR(buf, ON_WINDOWS ? cases[i].win_dir : cases[i].posix_dir);
        CHECK_STR(onnxio_path_file_name(cases[i].path), ON_WINDOWS ? cases[i].win_name : cases[i].posix_name);
    }
    if (ON_WINDOWS) {
        char *dir = tu_make_temp_dir("onnxio-names");
        CHECK(make_data_file(dir, "data.bin"));
        write_model(dir, "data.bin");
        char *path = tu_path_join(dir, "model.onnx");
        for (char *p = path; *p; p++)
            if (*p == '/') *p = '\\';
        onnxio_arena *a = onnxio_arena_new();
        onnxio_ModelProto *m = NULL;
        CHECK_MSG(onnxio_load_model(path, NULL, a, &m) == ONNXIO_OK, "%s: %s", path, onnxio_last_error());
        if (m && CHECK(m->graph && m->graph->initializer.size == 1)) {
            const onnxio_TensorProto *t = m->graph->initializer.data[0];
            CHECK_BYTES(t->raw_data.data, t->raw_data.size, data_bytes, DATA_SIZE);
        }
        /* A save through that spelling: its journal and temporary file
         * beside it, none left. */
        CHECK_STATUS(onnxio_save_model(m, path, NULL), ONNXIO_OK);
        tu_strlist names = {0};
        tu_list_dir(dir, &names);
        CHECK_EQ_INT((int)names.size, 2);
        tu_strlist_free(&names);
        onnxio_arena_unref(a);
        free(path);
        tu_remove_tree(dir);
        free(dir);
    }
    tu_end();
}

/* ---- a link out of the model's directory ------------------------------------ */

/* Makes <dir>/<name> a directory link to `target`: a symlink on POSIX, a
 * directory symbolic link (a reparse point) on Windows. NULL on success,
 * else why not. */
static const char *make_dir_link(const char *dir, const char *name, const char *target, char *why, size_t size)
{
    char *path = tu_path_join(dir, name);
#ifdef _WIN32
    wchar_t wlink[MAX_PATH], wtarget[MAX_PATH];
    MultiByteToWideChar(CP_UTF8, 0, path, -1, wlink, MAX_PATH);
    MultiByteToWideChar(CP_UTF8, 0, target, -1, wtarget, MAX_PATH);
    for (wchar_t *p = wlink; *p; p++)
        if (*p == L'/') *p = L'\\';
    for (wchar_t *p = wtarget; *p; p++)
        if (*p == L'/') *p = L'\\';
    /* A directory symbolic link (SYMBOLIC_LINK_FLAG_DIRECTORY |
     * SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE), else a junction
     * (FSCTL_SET_REPARSE_POINT, IO_REPARSE_TAG_MOUNT_POINT). */
    BOOLEAN made = CreateSymbolicLinkW(wlink, wtarget, 0x1 | 0x2);
    DWORD attr = GetFileAttributesW(wlink);
    bool ok = made && attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_REPARSE_POINT);
    int n = snprintf(why, size, "CreateSymbolicLinkW %s", made ? "succeeded but made no reparse point" : "failed");
    if (!ok && attr == INVALID_FILE_ATTRIBUTES && CreateDirectoryW(wlink, NULL)) {
        struct {
            DWORD tag;
            WORD length, reserved, sub_offset, sub_length, print_offset, print_length;
            WCHAR buf[2 * MAX_PATH + 8];
        } rp;
        memset(&rp, 0, sizeof rp);
        wchar_t sub[MAX_PATH + 8];
        swprintf(sub, MAX_PATH + 8, L"\\??\\%ls", wtarget);
        size_t sl = wcslen(sub) * sizeof(WCHAR), pl = wcslen(wtarget) * sizeof(WCHAR);
        memcpy(rp.buf, sub, sl);
        memcpy((char *)rp.buf + sl + sizeof(WCHAR), wtarget, pl);
        rp.tag = IO_REPARSE_TAG_MOUNT_POINT;
        rp.sub_length = (WORD)sl;
        rp.print_offset = (WORD)(sl + sizeof(WCHAR));
        rp.print_length = (WORD)pl;
        rp.length = (WORD)(8 + sl + pl + 2 * sizeof(WCHAR));
        HANDLE h = CreateFileW(wlink, GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
                               FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
        DWORD got, err = 0;
        if (h == INVALID_HANDLE_VALUE || !DeviceIoControl(h, FSCTL_SET_REPARSE_POINT, &rp, rp.length + 8u, NULL, 0, &got, NULL))
            err = GetLastError();
        if (h != INVALID_HANDLE_VALUE) CloseHandle(h);
        attr = GetFileAttributesW(wlink);
        ok = !err && attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_REPARSE_POINT);
        if (!ok) {
            RemoveDirectoryW(wlink);
            snprintf(why + n, size - (size_t)n, "; a junction: FSCTL_SET_REPARSE_POINT gave error %lu (%s)",
                     (unsigned long)err, err == ERROR_NOT_SUPPORTED ? "ERROR_NOT_SUPPORTED, as under Wine 8" : "no junction");
        }
    }
    free(path);
    return ok ? NULL : why;
#else
    int r = symlink(target, path);
    if (r != 0) snprintf(why, size, "symlink: %s", strerror(errno));
    free(path);
    return r == 0 ? NULL : why;
#endif
}

static void remove_dir_link(const char *dir, const char *name)
{
    char *path = tu_path_join(dir, name);
#ifdef _WIN32
    /* The link itself, never what it names. */
    wchar_t w[MAX_PATH];
    MultiByteToWideChar(CP_UTF8, 0, path, -1, w, MAX_PATH);
    RemoveDirectoryW(w);
#else
    unlink(path);
#endif
    free(path);
}

static void check_link_out(void)
{
    tu_begin("a %s leading out of the model's directory", ON_WINDOWS ? "directory symbolic link (reparse point)" : "symlink");
    char *outside = tu_make_temp_dir("onnxio-outside");
    char *dir = tu_make_temp_dir("onnxio-names");
    CHECK(make_data_file(outside, "data.bin"));
    char why[200];
    const char *no = make_dir_link(dir, "out", outside, why, sizeof why);
    if (no) {
        /* Wine (or the system) made no link: said, not passed silently. */
        tu_skip("cannot make a directory link here: %s", no);
    } else {
        write_model(dir, "out/data.bin");
        expect_load(dir, "out/data.bin", ONNXIO_ERR_PATH_ESCAPES);
        if (ON_WINDOWS) {
            write_model(dir, "out\\data.bin");
            expect_load(dir, "out\\data.bin", ONNXIO_ERR_PATH_ESCAPES);
        }
        int fd = -1;
        CHECK_STATUS(onnxio_external_data_open(dir, "out/data.bin", ONNXIO_OPEN_READ, &fd, NULL), ONNXIO_ERR_PATH_ESCAPES);
        CHECK(fd == -1);
        remove_dir_link(dir, "out");
        char *kept_file = tu_path_join(outside, "data.bin");
        CHECK_MSG(tu_exists(kept_file), "the file outside is gone");
        free(kept_file);
    }
    tu_remove_tree(dir);
    tu_remove_tree(outside);
    free(dir);
    free(outside);
    tu_end();
}

int main(void)
{
    check_rule();
    check_loads();
    check_model_path();
    check_link_out();
    return tu_finish();
}
