/* POSIX's flags and types for the Win32 half of the OS layer (os_win.c),
 * included by sys.h on Windows only. The library above src/base speaks
 * POSIX to the OS layer (openat with O_NOFOLLOW, struct stat, flock's
 * LOCK_EX, mmap's MAP_PRIVATE); mingw-w64's C runtime lacks most of
 * these, so they are defined here with values that only os_win.c reads.
 * Descriptors are the C runtime's (_open_osfhandle over the HANDLEs
 * os_win.c opens), so an int still names an open file. */
#ifndef ONNXIO_BASE_OS_WIN_H
#define ONNXIO_BASE_OS_WIN_H

#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* UTF-8 paths of any length the library itself builds (Win32's MAX_PATH
 * is a limit of the ANSI calls, not of CreateFileW with "\\?\" names). */
#undef PATH_MAX
#define PATH_MAX 4096

/* open flags the C runtime does not have, above its own bits. */
#define O_DIRECTORY 0x01000000
#define O_NOFOLLOW 0x02000000
#define O_NONBLOCK 0x04000000
#define O_NOCTTY 0x08000000
#define O_CLOEXEC 0x10000000

#define AT_FDCWD (-100)
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_REMOVEDIR 0x200
#define AT_EACCESS 0x400

/* flock */
#define LOCK_SH 1
#define LOCK_EX 2
#define LOCK_NB 4
#define LOCK_UN 8

/* mmap */
#define PROT_NONE 0
#define PROT_READ 1
#define PROT_WRITE 2
#define MAP_SHARED 0x01
#define MAP_PRIVATE 0x02
#define MAP_FIXED 0x10
#define MAP_ANONYMOUS 0x20
#define MAP_NORESERVE 0x4000
#define MAP_FAILED ((void *)-1)

#ifndef S_IFLNK
#define S_IFLNK 0xA000
#endif
#ifndef S_IFSOCK
#define S_IFSOCK 0xC000
#endif
#ifndef S_IFBLK
#define S_IFBLK 0x6000
#endif
#ifndef S_ISLNK
#define S_ISLNK(m) (((m) & S_IFMT) == S_IFLNK)
#endif
#ifndef S_ISSOCK
#define S_ISSOCK(m) (((m) & S_IFMT) == S_IFSOCK)
#endif
#ifndef S_ISBLK
#define S_ISBLK(m) (((m) & S_IFMT) == S_IFBLK)
#endif
#ifndef S_ISFIFO
#define S_ISFIFO(m) (((m) & S_IFMT) == _S_IFIFO)
#endif

#ifndef EOPNOTSUPP
#define EOPNOTSUPP 130
#endif
#ifndef ELOOP
#define ELOOP 114
#endif

/* struct stat with what the library reads of it, wide enough: the C
 * runtime's has a 16-bit st_ino. The device is the volume's serial
 * number, the inode the file's 64-bit index (GetFileInformationByHandle),
 * the links its link count; st_uid is 0 (sys.h, onnxio__sys_uid). stat,
 * fstat and lstat of programs that include this header are os_win.c's. */
struct onnxio__stat {
    uint64_t st_dev;
    uint64_t st_ino;
    unsigned st_mode;
    unsigned long st_nlink;
    unsigned long st_uid;
    unsigned long st_gid;
    int64_t st_size;
    int64_t st_mtime;
};
#define stat onnxio__stat
#define fstat onnxio__fstat
#define lstat onnxio__lstat
int onnxio__stat(const char *path, struct onnxio__stat *st);
int onnxio__fstat(int fd, struct onnxio__stat *st);
int onnxio__lstat(const char *path, struct onnxio__stat *st);
/* mode_t of the C runtime is 16 bits; POSIX's values fit. */

typedef int onnxio__signals;
typedef unsigned long uid_t;

#endif
