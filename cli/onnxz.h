/*
 * What the command shows about .onnxz archives (the library's container,
 * include/onnxio/onnxio.h ".onnxz archives") beyond what the library says:
 * how an entry's data offset is aligned. Whether a file is an archive, and
 * whether a name asks for one, are the library's rules
 * (onnxio_detect_file_format, onnxio_path_is_archive).
 */
#ifndef ONNXIO_CLI_ONNXZ_H
#define ONNXIO_CLI_ONNXZ_H

#include <stdint.h>

/* The largest alignment `onnxio info` reports (the page size: beyond it
 * nothing is gained). */
#define CLI_ARCHIVE_MAX_SHOWN_ALIGNMENT 4096u

/* The largest power of two dividing `offset`, at most `cap` (a power of
 * two); `cap` for offset 0. */
uint64_t cli_offset_alignment(uint64_t offset, uint64_t cap);

#endif
