/* The Win32 half of the OS layer (os.c says what the layer is; os_unix.c
 * is its POSIX twin, and both define the same functions of sys.h). The
 * library above src/base speaks POSIX to these functions; here each is
 * made of Win32 calls:
 *
 * - Paths are UTF-8 and become UTF-16 for the W calls (CreateFileW and
 *   friends); paths this half hands back (realpath, a descriptor's path)
 *   are the final path of the open file, "C:/dir/name", with '/' as the
 *   library's path functions expect.
 * - Descriptors are the C runtime's over the HANDLEs opened here
 *   (_open_osfhandle), always with FILE_SHARE_READ | FILE_SHARE_WRITE |
 *   FILE_SHARE_DELETE: a file one descriptor holds open can still be
 *   renamed over or removed by the save protocol, as on POSIX.
 * - openat relative to a directory descriptor is NtCreateFile with the
 *   directory's HANDLE as RootDirectory, so a walk opens each component
 *   under the directory it holds open, whatever happens to its name, as
 *   openat does; O_NOFOLLOW opens a reparse point itself
 *   (FILE_OPEN_REPARSE_POINT) and refuses it (ELOOP), and fstatat with
 *   AT_SYMLINK_NOFOLLOW reports any reparse point (symlink, junction,
 *   mount point) as S_IFLNK; readlinkat reads none (EOPNOTSUPP), so the
 *   external-data walk follows no reparse point at all.
 * - pread and pwrite are ReadFile and WriteFile with an OVERLAPPED offset
 *   (the file pointer moves, which nothing in the library reads); fsync is
 *   FlushFileBuffers (of a directory: nothing, NTFS journals its metadata
 *   and renames are made with MOVEFILE_WRITE_THROUGH); renameat is
 *   MoveFileExW(MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH), which
 *   first clears a read-only target's attribute (POSIX replaces a file
 *   whatever its mode). A target that is open or mapped (a model loaded
 *   with no_copy maps its file) is one Windows' classic rename refuses to
 *   replace; renameat then renames with POSIX semantics (FileRenameInfoEx,
 *   Windows 10 1809 and later: atomic, as on POSIX), and where the system
 *   has none (older Windows, Wine), moves the target aside first
 *   (replace_held: every mapping keeps the old bytes, as on POSIX).
 * - flock is LockFileEx on one byte far past any data (offset 2^63 - 2),
 *   so that the lock, mandatory on Windows, never blocks a read of the
 *   journal by a process that does not hold it.
 * - mmap is CreateFileMapping and MapViewOfFile (MAP_PRIVATE writable:
 *   FILE_MAP_COPY, which Windows charges to the commit limit for the whole
 *   view: there is no MAP_NORESERVE), anonymous memory VirtualAlloc; a
 *   mapping is given back once munmap has been called on all of its pages
 *   (onnxio__buffer_new_phase trims its blocks piecewise).
 * - The page-cache advice, cachestat, /proc/self/fd reopens and direct
 *   reads have no Win32 counterpart here: advice is nothing, the others
 *   say ENOSYS, and their callers take their portable path.
 * - Owners: a file's st_uid is 0, as is onnxio__sys_uid() (sys.h).
 * - The UTF-16 paths and rename records the calls need are the C runtime's
 *   malloc, outside the library's allocation count and fault injection:
 *   they stand where the POSIX half has the kernel's own copy of a path.
 *   A failure is still the call's ENOMEM. */
#ifndef _WIN32
typedef int onnxio__os_win_empty; /* ISO C: no empty translation unit */
#else
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"

#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <bcrypt.h>
#include <winternl.h>

#define fail_now(op, err) onnxio__fail_now((op), (err))

/* ---- errors and names ------------------------------------------------------ */

static int errno_of(DWORD e)
{
    switch (e) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_DRIVE:
    case ERROR_BAD_NETPATH:
    case ERROR_BAD_NET_NAME:
    case ERROR_INVALID_NAME:
    case ERROR_BAD_PATHNAME: return ENOENT;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION:
    case ERROR_PRIVILEGE_NOT_HELD: return EACCES;
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS: return EEXIST;
    case ERROR_DIRECTORY: return ENOTDIR;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY:
    case ERROR_COMMITMENT_LIMIT: return ENOMEM;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL: return ENOSPC;
    case ERROR_INVALID_HANDLE: return EBADF;
    case ERROR_NOT_SUPPORTED:
    case ERROR_CALL_NOT_IMPLEMENTED: return ENOSYS;
    case ERROR_DIR_NOT_EMPTY: return ENOTEMPTY;
    case ERROR_TOO_MANY_OPEN_FILES: return EMFILE;
    case ERROR_WRITE_PROTECT: return EROFS;
    case ERROR_FILENAME_EXCED_RANGE: return ENAMETOOLONG;
    case ERROR_CANT_RESOLVE_FILENAME: return ELOOP;
    case ERROR_INVALID_PARAMETER:
    case ERROR_NEGATIVE_SEEK: return EINVAL;
    case ERROR_BROKEN_PIPE:
    case ERROR_NO_DATA: return EPIPE;
    case ERROR_IO_PENDING: return EAGAIN;
    case ERROR_USER_MAPPED_FILE: return EBUSY; /* shrinking a file a view maps */
    default: return EIO;
    }
}

static void set_errno_from(DWORD e) { errno = errno_of(e); }

/* A UTF-8 string as UTF-16 with '/' made '\' (malloc'd; NULL with
 * errno: EILSEQ for bytes that are not UTF-8). */
static wchar_t *wide(const char *s, size_t n)
{
    if (n == 0) {
        wchar_t *w = malloc(sizeof *w);
        if (!w) errno = ENOMEM;
        else w[0] = 0;
        return w;
    }
    if (n > INT_MAX) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    int k = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, (int)n, NULL, 0);
    if (k <= 0) {
        errno = EILSEQ;
        return NULL;
    }
    wchar_t *w = malloc(((size_t)k + 1) * sizeof *w);
    if (!w) {
        errno = ENOMEM;
        return NULL;
    }
    MultiByteToWideChar(CP_UTF8, 0, s, (int)n, w, k);
    w[k] = 0;
    for (int i = 0; i < k; i++)
        if (w[i] == L'/') w[i] = L'\\';
    return w;
}

/* A UTF-16 string as UTF-8 into out[size] with '\' made '/'; false when
 * it does not fit (ENAMETOOLONG). */
static bool narrow(const wchar_t *w, char *out, size_t size)
{
    int k = WideCharToMultiByte(CP_UTF8, 0, w, -1, out, size > INT_MAX ? INT_MAX : (int)size, NULL, NULL);
    if (k <= 0) {
        errno = ENAMETOOLONG;
        return false;
    }
    for (char *p = out; *p; p++)
        if (*p == '\\') *p = '/';
    return true;
}

static HANDLE handle_of(int fd)
{
    intptr_t h = fd >= 0 ? _get_osfhandle(fd) : -1;
    if (h == -1 || h == -2) {
        errno = EBADF;
        return INVALID_HANDLE_VALUE;
    }
    return (HANDLE)h;
}

/* The final path of an open HANDLE as "C:/dir/name" (the "\\?\" prefix
 * dropped; "\\?\UNC\server\share" as "//server/share"), into out[size]. */
static bool final_path(HANDLE h, char *out, size_t size)
{
    wchar_t buf[PATH_MAX];
    DWORD n = GetFinalPathNameByHandleW(h, buf, PATH_MAX, FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
    if (n == 0 || n >= PATH_MAX) {
        if (n == 0) set_errno_from(GetLastError());
        else errno = ENAMETOOLONG;
        return false;
    }
    const wchar_t *p = buf;
    if (wcsncmp(p, L"\\\\?\\UNC\\", 8) == 0) {
        p += 6;
        buf[6] = L'\\';
    } else if (wcsncmp(p, L"\\\\?\\", 4) == 0) {
        p += 4;
    }
    return narrow(p, out, size);
}

/* An absolute or current-directory path for the W calls, with "\\?\" in
 * front when it is too long for MAX_PATH. */
static wchar_t *win_path(const char *path)
{
    wchar_t *w = wide(path, strlen(path));
    if (!w || wcslen(w) < MAX_PATH - 12) return w;
    DWORD n = GetFullPathNameW(w, 0, NULL, NULL);
    wchar_t *full = n ? malloc(((size_t)n + 8) * sizeof *full) : NULL;
    if (!full) {
        free(w);
        errno = n ? ENOMEM : ENOENT;
        return NULL;
    }
    wcscpy(full, L"\\\\?\\");
    GetFullPathNameW(w, n, full + 4, NULL);
    free(w);
    return full;
}

/* The path of `name` under the directory `dirfd` (or as it is, for
 * AT_FDCWD and absolute names), for the calls that take a path. */
static wchar_t *path_at(int dirfd, const char *name)
{
    bool absolute = name[0] == '/' || name[0] == '\\' || (name[0] && name[1] == ':');
    if (dirfd == AT_FDCWD || absolute) return win_path(name);
    char dir[PATH_MAX];
    HANDLE h = handle_of(dirfd);
    if (h == INVALID_HANDLE_VALUE || !final_path(h, dir, sizeof dir)) return NULL;
    size_t a = strlen(dir), b = strlen(name);
    if (a + b + 2 > sizeof dir) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    if (a && dir[a - 1] != '/') dir[a++] = '/';
    memcpy(dir + a, name, b + 1);
    return win_path(dir);
}

/* ---- opening --------------------------------------------------------------- */

static int fd_of(HANDLE h, int flags)
{
    int fd = _open_osfhandle((intptr_t)h, _O_BINARY | ((flags & O_ACCMODE) == O_RDONLY ? _O_RDONLY : 0));
    if (fd < 0) {
        CloseHandle(h);
        errno = EMFILE;
    }
    return fd;
}

typedef NTSTATUS(NTAPI *nt_create_file_fn)(PHANDLE, ACCESS_MASK, POBJECT_ATTRIBUTES, PIO_STATUS_BLOCK, PLARGE_INTEGER,
                                           ULONG, ULONG, ULONG, ULONG, PVOID, ULONG);
typedef ULONG(NTAPI *nt_status_fn)(NTSTATUS);

/* Opens `name` under the directory HANDLE `dir` (NtCreateFile with
 * RootDirectory: openat's meaning). */
static HANDLE open_under(HANDLE dir, const char *name, ACCESS_MASK access, ULONG disposition, ULONG options,
                         ULONG attributes)
{
    static nt_create_file_fn create;
    static nt_status_fn status_to_error;
    if (!create) {
        HMODULE nt = GetModuleHandleW(L"ntdll.dll");
        FARPROC a = nt ? GetProcAddress(nt, "NtCreateFile") : NULL, b = nt ? GetProcAddress(nt, "RtlNtStatusToDosError") : NULL;
        if (!a || !b) {
            errno = ENOSYS;
            return INVALID_HANDLE_VALUE;
        }
        memcpy(&status_to_error, &b, sizeof b);
        memcpy(&create, &a, sizeof a);
    }
    wchar_t *w = wide(name, strlen(name));
    if (!w) return INVALID_HANDLE_VALUE;
    size_t n = wcslen(w);
    if (n * sizeof(wchar_t) > 0xFFF0) {
        free(w);
        errno = ENAMETOOLONG;
        return INVALID_HANDLE_VALUE;
    }
    UNICODE_STRING us = {(USHORT)(n * sizeof(wchar_t)), (USHORT)(n * sizeof(wchar_t)), w};
    OBJECT_ATTRIBUTES oa;
    InitializeObjectAttributes(&oa, &us, OBJ_CASE_INSENSITIVE, dir, NULL);
    IO_STATUS_BLOCK io;
    HANDLE h = INVALID_HANDLE_VALUE;
    NTSTATUS st = create(&h, access | SYNCHRONIZE | FILE_READ_ATTRIBUTES, &oa, &io, NULL, attributes,
                         FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, disposition,
                         options | FILE_SYNCHRONOUS_IO_NONALERT | FILE_OPEN_FOR_BACKUP_INTENT, NULL, 0);
    free(w);
    if (st < 0) {
        set_errno_from(status_to_error(st));
        return INVALID_HANDLE_VALUE;
    }
    return h;
}

/* Opens `path` under `dirfd` with POSIX's `flags` as a HANDLE. */
static HANDLE open_handle(int dirfd, const char *path, int flags, mode_t mode, ACCESS_MASK extra)
{
    ACCESS_MASK access = extra;
    switch (flags & O_ACCMODE) {
    case O_RDONLY: access |= GENERIC_READ; break;
    case O_WRONLY: access |= GENERIC_WRITE | FILE_WRITE_ATTRIBUTES; break;
    default: access |= GENERIC_READ | GENERIC_WRITE | FILE_WRITE_ATTRIBUTES; break;
    }
    if (flags & O_APPEND) access = (access & ~FILE_WRITE_DATA) | FILE_APPEND_DATA;
    ULONG attributes = (flags & O_CREAT) && !(mode & 0200) ? FILE_ATTRIBUTE_READONLY : FILE_ATTRIBUTE_NORMAL;
    bool absolute = path[0] == '/' || path[0] == '\\' || (path[0] && path[1] == ':');
    HANDLE h;
    if (dirfd == AT_FDCWD || absolute) {
        DWORD how = (flags & O_CREAT) ? ((flags & O_EXCL) ? CREATE_NEW : (flags & O_TRUNC) ? CREATE_ALWAYS : OPEN_ALWAYS)
                                      : (flags & O_TRUNC) ? TRUNCATE_EXISTING : OPEN_EXISTING;
        wchar_t *w = win_path(path);
        if (!w) return INVALID_HANDLE_VALUE;
        h = CreateFileW(w, access | FILE_READ_ATTRIBUTES | SYNCHRONIZE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                        NULL, how,
                        attributes | FILE_FLAG_BACKUP_SEMANTICS | ((flags & O_NOFOLLOW) ? FILE_FLAG_OPEN_REPARSE_POINT : 0),
                        NULL);
        DWORD err = GetLastError();
        free(w);
        if (h == INVALID_HANDLE_VALUE) {
            set_errno_from(err);
            return h;
        }
    } else {
        HANDLE dir = handle_of(dirfd);
        if (dir == INVALID_HANDLE_VALUE) return dir;
        ULONG how = (flags & O_CREAT) ? ((flags & O_EXCL) ? FILE_CREATE : (flags & O_TRUNC) ? FILE_OVERWRITE_IF : FILE_OPEN_IF)
                                      : (flags & O_TRUNC) ? FILE_OVERWRITE : FILE_OPEN;
        ULONG options = ((flags & O_NOFOLLOW) ? FILE_OPEN_REPARSE_POINT : 0) |
                        ((flags & O_DIRECTORY) ? FILE_DIRECTORY_FILE : (flags & O_CREAT) ? FILE_NON_DIRECTORY_FILE : 0);
        h = open_under(dir, path, access, how, options, attributes);
        if (h == INVALID_HANDLE_VALUE) return h;
    }
    BY_HANDLE_FILE_INFORMATION info;
    if (GetFileType(h) == FILE_TYPE_DISK && GetFileInformationByHandle(h, &info)) {
        int err = 0;
        bool dir = info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY;
        if ((flags & O_NOFOLLOW) && (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) err = ELOOP;
        else if ((flags & O_DIRECTORY) && !dir) err = ENOTDIR;
        else if (dir && (flags & O_ACCMODE) != O_RDONLY) err = EISDIR;
        if (err) {
            CloseHandle(h);
            errno = err;
            return INVALID_HANDLE_VALUE;
        }
    } else if (flags & O_DIRECTORY) {
        CloseHandle(h);
        errno = ENOTDIR;
        return INVALID_HANDLE_VALUE;
    }
    return h;
}

int onnxio__sys_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    if (fail_now(ONNXIO__OP_OPEN, (flags & O_CREAT) ? ENOSPC : EIO)) return -1;
    HANDLE h = open_handle(dirfd, path, flags, mode, 0);
    return h == INVALID_HANDLE_VALUE ? -1 : fd_of(h, flags);
}

int onnxio__close(int fd) { return fd >= 0 ? _close(fd) : 0; }

/* ---- what a file is ---------------------------------------------------------- */

static int64_t unix_time(FILETIME t)
{
    uint64_t x = ((uint64_t)t.dwHighDateTime << 32) | t.dwLowDateTime;
    return (int64_t)(x / 10000000u) - 11644473600LL;
}

static int stat_handle(HANDLE h, struct stat *st, bool link)
{
    memset(st, 0, sizeof *st);
    DWORD type = GetFileType(h);
    if (type == FILE_TYPE_CHAR || type == FILE_TYPE_PIPE) {
        st->st_mode = (type == FILE_TYPE_CHAR ? S_IFCHR : _S_IFIFO) | 0666;
        st->st_nlink = 1;
        return 0;
    }
    BY_HANDLE_FILE_INFORMATION info;
    if (!GetFileInformationByHandle(h, &info)) {
        set_errno_from(GetLastError());
        return -1;
    }
    st->st_dev = info.dwVolumeSerialNumber;
    st->st_ino = ((uint64_t)info.nFileIndexHigh << 32) | info.nFileIndexLow;
    st->st_nlink = info.nNumberOfLinks;
    st->st_size = (int64_t)(((uint64_t)info.nFileSizeHigh << 32) | info.nFileSizeLow);
    st->st_mtime = unix_time(info.ftLastWriteTime);
    unsigned perm = (info.dwFileAttributes & FILE_ATTRIBUTE_READONLY) ? 0444 : 0666;
    if (link && (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) st->st_mode = S_IFLNK | 0777;
    else if (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) st->st_mode = S_IFDIR | 0777;
    else st->st_mode = S_IFREG | perm;
    return 0;
}

int onnxio__sys_fstat(int fd, struct stat *st)
{
    HANDLE h = handle_of(fd);
    return h == INVALID_HANDLE_VALUE ? -1 : stat_handle(h, st, false);
}

int onnxio__sys_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    bool link = flags & AT_SYMLINK_NOFOLLOW;
    HANDLE h = open_handle(dirfd, path, link ? O_RDONLY | O_NOFOLLOW : O_RDONLY, 0, 0);
    if (h == INVALID_HANDLE_VALUE && link && errno == ELOOP) {
        /* A reparse point (symlink, junction, mount point), not followed. */
        memset(st, 0, sizeof *st);
        st->st_mode = S_IFLNK | 0777;
        st->st_nlink = 1;
        return 0;
    }
    if (h == INVALID_HANDLE_VALUE) return -1;
    int r = stat_handle(h, st, link);
    CloseHandle(h);
    return r;
}

int onnxio__stat(const char *path, struct stat *st) { return onnxio__sys_fstatat(AT_FDCWD, path, st, 0); }
int onnxio__lstat(const char *path, struct stat *st)
{
    return onnxio__sys_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}
int onnxio__fstat(int fd, struct stat *st) { return onnxio__sys_fstat(fd, st); }

ssize_t onnxio__sys_readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
    (void)dirfd, (void)path, (void)buf, (void)size;
    errno = EOPNOTSUPP;
    return -1;
}

int onnxio__sys_dup(int fd)
{
    if (fail_now(ONNXIO__OP_OPEN, EMFILE)) return -1;
    HANDLE h = handle_of(fd), d;
    if (h == INVALID_HANDLE_VALUE) return -1;
    if (!DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &d, 0, FALSE, DUPLICATE_SAME_ACCESS)) {
        set_errno_from(GetLastError());
        return -1;
    }
    return fd_of(d, O_RDWR);
}

int onnxio__sys_set_blocking(int fd)
{
    (void)fd;
    return 0;
}

ssize_t onnxio__sys_getrandom(void *buf, size_t n)
{
    if (n > ULONG_MAX) n = ULONG_MAX;
    if (BCryptGenRandom(NULL, buf, (ULONG)n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0) {
        errno = EAGAIN;
        return -1;
    }
    return (ssize_t)n;
}

char *onnxio__sys_realpath(const char *path, char out[PATH_MAX])
{
    if (fail_now(ONNXIO__OP_OPEN, EIO)) return NULL;
    HANDLE h = open_handle(AT_FDCWD, path, O_RDONLY, 0, 0);
    if (h == INVALID_HANDLE_VALUE) return NULL;
    bool ok = final_path(h, out, PATH_MAX);
    CloseHandle(h);
    return ok ? out : NULL;
}

char *onnxio__sys_fd_path(int fd)
{
    char buf[PATH_MAX];
    HANDLE h = handle_of(fd);
    return h != INVALID_HANDLE_VALUE && final_path(h, buf, sizeof buf) ? onnxio__strdup(buf) : NULL;
}

int onnxio__sys_each_entry(int dir_fd, void (*fn)(void *ctx, const char *name), void *ctx)
{
    char dir[PATH_MAX];
    HANDLE h = handle_of(dir_fd);
    if (h == INVALID_HANDLE_VALUE || !final_path(h, dir, sizeof dir - 3)) return -1;
    strcat(dir, "/*");
    wchar_t *w = win_path(dir);
    if (!w) return -1;
    WIN32_FIND_DATAW e;
    HANDLE f = FindFirstFileW(w, &e);
    free(w);
    if (f == INVALID_HANDLE_VALUE) {
        set_errno_from(GetLastError());
        return -1;
    }
    do {
        char name[MAX_PATH * 4];
        if (WideCharToMultiByte(CP_UTF8, 0, e.cFileName, -1, name, sizeof name, NULL, NULL) > 0) fn(ctx, name);
    } while (FindNextFileW(f, &e));
    FindClose(f);
    return 0;
}

/* ---- reads and writes ----------------------------------------------------------- */

ssize_t onnxio__sys_pread(int fd, void *buf, size_t n, uint64_t offset)
{
    if (fail_now(ONNXIO__OP_READ, EIO)) return -1;
    HANDLE h = handle_of(fd);
    if (h == INVALID_HANDLE_VALUE) return -1;
    OVERLAPPED o = {0};
    o.Offset = (DWORD)offset;
    o.OffsetHigh = (DWORD)(offset >> 32);
    DWORD got = 0;
    if (!ReadFile(h, buf, n > (1u << 30) ? (1u << 30) : (DWORD)n, &got, &o)) {
        DWORD e = GetLastError();
        if (e == ERROR_HANDLE_EOF) return 0;
        set_errno_from(e);
        return -1;
    }
    return (ssize_t)got;
}

ssize_t onnxio__sys_pwrite(int fd, const void *buf, size_t n, uint64_t offset)
{
    if (fail_now(ONNXIO__OP_WRITE, ENOSPC)) return -1;
    HANDLE h = handle_of(fd);
    if (h == INVALID_HANDLE_VALUE) return -1;
    OVERLAPPED o = {0};
    o.Offset = (DWORD)offset;
    o.OffsetHigh = (DWORD)(offset >> 32);
    DWORD done = 0;
    if (!WriteFile(h, buf, n > (1u << 30) ? (1u << 30) : (DWORD)n, &done, &o)) {
        set_errno_from(GetLastError());
        return -1;
    }
    return (ssize_t)done;
}

ssize_t onnxio__sys_write(int fd, const void *buf, size_t n)
{
    if (fail_now(ONNXIO__OP_WRITE, ENOSPC)) return -1;
    HANDLE h = handle_of(fd);
    if (h == INVALID_HANDLE_VALUE) return -1;
    DWORD done = 0;
    if (!WriteFile(h, buf, n > (1u << 30) ? (1u << 30) : (DWORD)n, &done, NULL)) {
        set_errno_from(GetLastError());
        return -1;
    }
    return (ssize_t)done;
}

int onnxio__sys_fsync(int fd)
{
    if (fail_now(ONNXIO__OP_SYNC, EIO)) return -1;
    HANDLE h = handle_of(fd);
    if (h == INVALID_HANDLE_VALUE) return -1;
    BY_HANDLE_FILE_INFORMATION info;
    if (GetFileInformationByHandle(h, &info) && (info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) return 0;
    if (!FlushFileBuffers(h)) {
        DWORD e = GetLastError();
        /* A handle without write access (a file opened to be read) has
         * nothing of this process's to flush. */
        if (e == ERROR_ACCESS_DENIED || e == ERROR_INVALID_HANDLE) return 0;
        set_errno_from(e);
        return -1;
    }
    return 0;
}

int onnxio__sys_ftruncate(int fd, uint64_t size)
{
    if (fail_now(ONNXIO__OP_TRUNCATE, ENOSPC)) return -1;
    HANDLE h = handle_of(fd);
    if (h == INVALID_HANDLE_VALUE) return -1;
    FILE_END_OF_FILE_INFO eof;
    eof.EndOfFile.QuadPart = (LONGLONG)size;
    if (!SetFileInformationByHandle(h, FileEndOfFileInfo, &eof, sizeof eof)) {
        set_errno_from(GetLastError());
        return -1;
    }
    return 0;
}

/* FILE_RENAME_INFO's flags for FileRenameInfoEx (Windows 10 1709 and
 * later; mingw-w64's headers may lack them). */
#define RENAME_REPLACE_IF_EXISTS 0x1
#define RENAME_POSIX_SEMANTICS 0x2
#define RENAME_INFO_EX ((FILE_INFO_BY_HANDLE_CLASS)22)

/* Renames `from` over `to` with POSIX semantics: the name `to` moves to
 * the new file at once, while handles and mappings of the old file keep
 * it. Fails (ERROR_INVALID_PARAMETER) where the system has no such
 * rename. */
static bool rename_posix(const wchar_t *from, const wchar_t *to)
{
    size_t n = wcslen(to);
    if (n > (ULONG_MAX - sizeof(FILE_RENAME_INFO)) / sizeof(wchar_t) - 1) {
        SetLastError(ERROR_FILENAME_EXCED_RANGE);
        return false;
    }
    size_t size = sizeof(FILE_RENAME_INFO) + (n + 1) * sizeof(wchar_t);
    FILE_RENAME_INFO *info = calloc(1, size);
    if (!info) {
        SetLastError(ERROR_NOT_ENOUGH_MEMORY);
        return false;
    }
    HANDLE h = CreateFileW(from, DELETE | SYNCHRONIZE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS, NULL);
    bool ok = false;
    if (h != INVALID_HANDLE_VALUE) {
        *(DWORD *)info = RENAME_REPLACE_IF_EXISTS | RENAME_POSIX_SEMANTICS; /* the Flags of the union */
        info->FileNameLength = (DWORD)(n * sizeof(wchar_t));
        memcpy(info->FileName, to, n * sizeof(wchar_t));
        ok = SetFileInformationByHandle(h, RENAME_INFO_EX, info, (DWORD)size) != 0;
        DWORD e = GetLastError();
        CloseHandle(h);
        SetLastError(ok ? 0 : e);
    }
    free(info);
    return ok;
}

/* Replaces `to`, which something holds open or mapped, by `from` where the
 * system has no POSIX rename: `to` is first renamed aside to
 * "<to>.onnxio-old-<random>" in its directory (Windows renames a file in
 * use, it does not replace one), then `from` takes its name, and the old
 * file is removed (a mapped one stays until its mappings end, on Windows;
 * Wine removes it at once). If `from` cannot take the name, the old file
 * goes back. Between the two renames the name is briefly absent: a load
 * then finds no file, never a mix of two; a save killed there leaves the
 * old file aside, which the next load or save puts back (before the
 * save's commit) or removes (after it): txn.c, replay_record. */
static bool replace_held(const wchar_t *from, const wchar_t *to, DWORD how)
{
    static const wchar_t tag[] = L"" ONNXIO__ASIDE_INFIX;
    size_t n = wcslen(to), tn = sizeof tag / sizeof tag[0] - 1;
    wchar_t *aside = malloc((n + tn + ONNXIO__ASIDE_HEX + 1) * sizeof(wchar_t));
    if (!aside) {
        SetLastError(ERROR_NOT_ENOUGH_MEMORY);
        return false;
    }
    uint64_t r = 0;
    if (onnxio__sys_getrandom(&r, sizeof r) != (ssize_t)sizeof r) r = GetTickCount64() ^ GetCurrentProcessId();
    memcpy(aside, to, n * sizeof(wchar_t));
    memcpy(aside + n, tag, tn * sizeof(wchar_t));
    for (int i = 0; i < ONNXIO__ASIDE_HEX; i++) aside[n + tn + i] = L"0123456789abcdef"[(r >> (60 - 4 * i)) & 15];
    aside[n + tn + ONNXIO__ASIDE_HEX] = 0;
    bool ok = false;
    if (MoveFileExW(to, aside, MOVEFILE_WRITE_THROUGH)) {
        if (MoveFileExW(from, to, how)) {
            ok = true;
            DeleteFileW(aside);
        } else {
            DWORD e = GetLastError();
            MoveFileExW(aside, to, MOVEFILE_WRITE_THROUGH);
            SetLastError(e);
        }
    }
    free(aside);
    return ok;
}

int onnxio__sys_renameat(int olddir, const char *oldpath, int newdir, const char *newpath)
{
    if (fail_now(ONNXIO__OP_RENAME, EIO)) return -1;
    wchar_t *from = path_at(olddir, oldpath), *to = from ? path_at(newdir, newpath) : NULL;
    int r = -1;
    if (from && to) {
        const DWORD how = MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH;
        if (MoveFileExW(from, to, how)) {
            r = 0;
        } else {
            DWORD e = GetLastError();
            DWORD a = GetFileAttributesW(to);
            if (e == ERROR_ACCESS_DENIED && a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_READONLY) &&
                !(a & FILE_ATTRIBUTE_DIRECTORY) && SetFileAttributesW(to, a & ~FILE_ATTRIBUTE_READONLY)) {
                if (MoveFileExW(from, to, how)) r = 0;
                else e = GetLastError(), SetFileAttributesW(to, a);
            }
            if (r && (e == ERROR_ACCESS_DENIED || e == ERROR_SHARING_VIOLATION) && a != INVALID_FILE_ATTRIBUTES &&
                !(a & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_READONLY))) {
                /* The target is in use: open, or mapped. */
                if (rename_posix(from, to) || replace_held(from, to, how)) r = 0;
                else e = GetLastError();
            }
            if (r) set_errno_from(e);
        }
    }
    free(from);
    free(to);
    return r;
}

int onnxio__sys_unlinkat(int dirfd, const char *path, int flags)
{
    if (fail_now(ONNXIO__OP_UNLINK, EIO)) return -1;
    wchar_t *w = path_at(dirfd, path);
    if (!w) return -1;
    BOOL ok = (flags & AT_REMOVEDIR) ? RemoveDirectoryW(w) : DeleteFileW(w);
    DWORD e = ok ? 0 : GetLastError();
    if (!ok && e == ERROR_ACCESS_DENIED && !(flags & AT_REMOVEDIR)) {
        /* POSIX removes a file whatever its mode; Windows keeps a
         * read-only one. */
        DWORD a = GetFileAttributesW(w);
        if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_READONLY) &&
            SetFileAttributesW(w, a & ~FILE_ATTRIBUTE_READONLY)) {
            ok = DeleteFileW(w);
            e = ok ? 0 : GetLastError();
            if (!ok) SetFileAttributesW(w, a);
        }
    }
    free(w);
    if (!ok) {
        set_errno_from(e);
        return -1;
    }
    return 0;
}

int onnxio__sys_faccessat(int dirfd, const char *path, int mode, int flags)
{
    (void)flags;
    struct stat st;
    if (onnxio__sys_fstatat(dirfd, path, &st, 0) != 0) return -1;
    if ((mode & W_OK) && !(st.st_mode & 0200)) {
        errno = EACCES;
        return -1;
    }
    return 0;
}

int onnxio__sys_fchmod(int fd, mode_t mode)
{
    HANDLE h = handle_of(fd);
    if (h == INVALID_HANDLE_VALUE) return -1;
    FILE_BASIC_INFO b;
    if (!GetFileInformationByHandleEx(h, FileBasicInfo, &b, sizeof b)) {
        set_errno_from(GetLastError());
        return -1;
    }
    DWORD a = (mode & 0200) ? (b.FileAttributes & ~FILE_ATTRIBUTE_READONLY) : (b.FileAttributes | FILE_ATTRIBUTE_READONLY);
    if (a == b.FileAttributes) return 0;
    b.FileAttributes = a ? a : FILE_ATTRIBUTE_NORMAL;
    if (!SetFileInformationByHandle(h, FileBasicInfo, &b, sizeof b)) {
        set_errno_from(GetLastError());
        return -1;
    }
    return 0;
}

/* The byte flock locks: past any data a file of the library has, so that
 * reads, which Windows would refuse in a range another handle locked, are
 * never refused. */
#define LOCK_OFFSET_LOW 0xFFFFFFFEu
#define LOCK_OFFSET_HIGH 0x7FFFFFFFu

int onnxio__sys_flock(int fd, int op)
{
    HANDLE h = handle_of(fd);
    if (h == INVALID_HANDLE_VALUE) return -1;
    OVERLAPPED o = {0};
    o.Offset = LOCK_OFFSET_LOW;
    o.OffsetHigh = LOCK_OFFSET_HIGH;
    /* flock converts a lock the descriptor holds (not atomically); on
     * Windows a second lock of the same handle would stack. */
    UnlockFileEx(h, 0, 1, 0, &o);
    if (op & LOCK_UN) return 0;
    DWORD how = ((op & LOCK_EX) ? LOCKFILE_EXCLUSIVE_LOCK : 0) | ((op & LOCK_NB) ? LOCKFILE_FAIL_IMMEDIATELY : 0);
    if (!LockFileEx(h, how, 0, 1, 0, &o)) {
        DWORD e = GetLastError();
        errno = (e == ERROR_LOCK_VIOLATION || e == ERROR_IO_PENDING) ? EWOULDBLOCK : errno_of(e);
        return -1;
    }
    return 0;
}

/* ---- mappings ------------------------------------------------------------------- */

/* Every mapping made here, so that munmap knows what it unmaps and gives
 * it back once every page has been unmapped. */
typedef struct region {
    uint8_t *base;
    size_t size, live; /* whole pages */
    bool anonymous;
} region;

static SRWLOCK regions_lock = SRWLOCK_INIT;
static region *regions;
static size_t regions_count, regions_capacity;

static size_t pages_of(size_t n)
{
    size_t page = onnxio__page_size();
    return (n + page - 1) / page * page;
}

static bool region_add(void *base, size_t size, bool anonymous)
{
    AcquireSRWLockExclusive(&regions_lock);
    bool ok = onnxio__grow((void **)&regions, &regions_capacity, regions_count, sizeof *regions);
    if (ok) regions[regions_count++] = (region){base, pages_of(size), pages_of(size), anonymous};
    ReleaseSRWLockExclusive(&regions_lock);
    return ok;
}

void *onnxio__sys_mmap(size_t size, int prot, int flags, int fd)
{
    if (fail_now(ONNXIO__OP_MAP, ENOMEM)) return MAP_FAILED;
    if (size == 0) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    void *p;
    if (flags & MAP_ANONYMOUS) {
        if (!(p = VirtualAlloc(NULL, size, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE))) {
            errno = ENOMEM;
            return MAP_FAILED;
        }
        if (!region_add(p, size, true)) {
            VirtualFree(p, 0, MEM_RELEASE);
            errno = ENOMEM;
            return MAP_FAILED;
        }
        return p;
    }
    HANDLE h = handle_of(fd);
    if (h == INVALID_HANDLE_VALUE) return MAP_FAILED;
    bool write = prot & PROT_WRITE, private = flags & MAP_PRIVATE;
    DWORD protect = write ? (private ? PAGE_WRITECOPY : PAGE_READWRITE) : PAGE_READONLY;
    DWORD access = write ? (private ? FILE_MAP_COPY : FILE_MAP_WRITE) : FILE_MAP_READ;
    HANDLE m = CreateFileMappingW(h, NULL, protect, (DWORD)((uint64_t)size >> 32), (DWORD)size, NULL);
    if (!m) {
        set_errno_from(GetLastError());
        return MAP_FAILED;
    }
    p = MapViewOfFile(m, access, 0, 0, size);
    DWORD e = GetLastError();
    CloseHandle(m); /* the view keeps the section */
    if (!p) {
        set_errno_from(e);
        return MAP_FAILED;
    }
    if (!region_add(p, size, false)) {
        UnmapViewOfFile(p);
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return p;
}

void *onnxio__sys_mmap_at(void *addr, size_t size, int prot, int flags, int fd, uint64_t offset)
{
    (void)addr, (void)size, (void)prot, (void)flags, (void)fd, (void)offset;
    errno = ENOSYS;
    return MAP_FAILED;
}

int onnxio__sys_munmap(void *p, size_t size)
{
    uint8_t *at = p;
    AcquireSRWLockExclusive(&regions_lock);
    size_t i = 0;
    while (i < regions_count && !(at >= regions[i].base && at < regions[i].base + regions[i].size)) i++;
    if (i == regions_count) {
        ReleaseSRWLockExclusive(&regions_lock);
        errno = EINVAL;
        return -1;
    }
    region *r = &regions[i];
    size_t page = onnxio__page_size();
    uint8_t *start = (uint8_t *)((uintptr_t)at & ~(uintptr_t)(page - 1));
    uint8_t *end = at + size;
    if (end > r->base + r->size) end = r->base + r->size;
    size_t n = pages_of((size_t)(end - start));
    if (n > r->live) n = r->live;
    r->live -= n;
    region done = *r;
    if (!r->live) regions[i] = regions[--regions_count];
    ReleaseSRWLockExclusive(&regions_lock);
    if (done.live) {
        /* Part of anonymous memory goes back now; a view's part waits for
         * the rest of the view. */
        if (done.anonymous) VirtualFree(start, n, MEM_DECOMMIT);
        return 0;
    }
    return (done.anonymous ? VirtualFree(done.base, 0, MEM_RELEASE) : UnmapViewOfFile(done.base)) ? 0 : -1;
}

int onnxio__sys_cached(int fd, uint64_t offset, uint64_t size, uint64_t *cached)
{
    (void)fd, (void)offset, (void)size, (void)cached;
    errno = ENOSYS;
    return -1;
}

uint64_t onnxio__sys_available_memory(void)
{
    if (onnxio__test_available_memory) return onnxio__test_available_memory;
    MEMORYSTATUSEX m = {.dwLength = sizeof m};
    return GlobalMemoryStatusEx(&m) ? m.ullAvailPhys : UINT64_MAX;
}

uint64_t onnxio__sys_free_memory(void)
{
    if (onnxio__test_available_memory) return onnxio__test_available_memory;
    MEMORYSTATUSEX m = {.dwLength = sizeof m};
    return GlobalMemoryStatusEx(&m) ? m.ullAvailPhys : 0;
}

void onnxio__sys_drop_cached(int fd, uint64_t offset, uint64_t size) { (void)fd, (void)offset, (void)size; }

int onnxio__sys_reopen(int fd, int flags)
{
    (void)fd, (void)flags;
    errno = ENOSYS;
    return -1;
}

int onnxio__sys_open_direct(int fd, uint32_t *mem_align, uint32_t *offset_align)
{
    (void)fd, (void)mem_align, (void)offset_align;
    errno = ENOSYS;
    return -1;
}

void *onnxio__sys_dlsym(const char *library, const char *symbol)
{
    HMODULE h = LoadLibraryA(library);
    FARPROC f = h ? GetProcAddress(h, symbol) : NULL;
    void *p;
    memcpy(&p, &f, sizeof p);
    return p;
}

size_t onnxio__page_size(void)
{
    static _Atomic size_t page;
    size_t n = atomic_load_explicit(&page, memory_order_relaxed);
    if (!n) {
        SYSTEM_INFO si;
        GetSystemInfo(&si);
        n = si.dwPageSize ? si.dwPageSize : 4096;
        atomic_store_explicit(&page, n, memory_order_relaxed);
    }
    return n;
}

/* Paging advice: nothing on Windows (it only tunes paging). */
void onnxio__map_random(const void *p, size_t size, bool random) { (void)p, (void)size, (void)random; }
void onnxio__map_whole(const void *p, size_t size) { (void)p, (void)size; }
void onnxio__map_drop(const void *p, size_t size) { (void)p, (void)size; }
void onnxio__map_hugepage(void *p, size_t size) { (void)p, (void)size; }
void onnxio__map_populate(void *p, size_t size) { (void)p, (void)size; }
void onnxio__map_willneed(const void *p, size_t size) { (void)p, (void)size; }

/* ---- the process ----------------------------------------------------------------- */

unsigned long onnxio__sys_uid(void) { return 0; }

unsigned onnxio__sys_cpu_count(void)
{
    DWORD n = GetActiveProcessorCount(ALL_PROCESSOR_GROUPS);
    return n ? (unsigned)n : 1;
}

void onnxio__sys_signals_block(onnxio__signals *old) { *old = 0; }
void onnxio__sys_signals_restore(const onnxio__signals *old) { (void)old; }

#endif
