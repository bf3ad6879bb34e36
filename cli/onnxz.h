/*
 * What the command needs to know about .onnxz archives (the library's
 * container, include/onnxio/onnxio.h ".onnxz archives"): whether a file is
 * one, whether a name asks for one, and how an entry's data offset is
 * aligned.
 */
#ifndef ONNXIO_CLI_ONNXZ_H
#define ONNXIO_CLI_ONNXZ_H

#include <stdint.h>

/* The alignment the library borrows stored entries at with no_copy when no
 * other is asked for (tensor_buffer.alignment 0), and the largest alignment
 * `onnxio info` reports (the page size: beyond it nothing is gained). */
#define CLI_ARCHIVE_ZERO_COPY_ALIGNMENT 64u
#define CLI_ARCHIVE_MAX_SHOWN_ALIGNMENT 4096u

/* 1 when `path` ends in ".onnxz": onnxio_save_model writes an archive for
 * exactly these names, so the command decides by the same test. */
int cli_is_archive_name(const char *path);

/* 1 when the file at `path` starts like a zip archive, the test
 * onnxio_load_model makes ("PK\3\4", or "PK\5\6" for an archive with no
 * entries). 0 when it does not, or cannot be read (loading it then reports
 * why). */
int cli_starts_like_archive(const char *path);

/* The largest power of two dividing `offset`, at most `cap` (a power of
 * two); `cap` for offset 0. */
uint64_t cli_offset_alignment(uint64_t offset, uint64_t cap);

#endif
