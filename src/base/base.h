/* The base layer (docs/design.md, "Layers"): options and their defaults
 * (options.c), the expansion budget, checksums (digest.c), progress and
 * cancel polls (progress.c). Nothing here knows messages or files. */
#ifndef ONNXIO_BASE_BASE_H
#define ONNXIO_BASE_BASE_H

#include "base/sys.h"

/* ---- options.c ---------------------------------------------------------- */

/* Reads the caller's option struct `src` (NULL: the defaults), whose first
 * member is its struct_size, into `dst` of `dst_size` bytes (this version's
 * layout), zero-filled where `src` is shorter: the "Options" rules of
 * onnxio.h. `what` names the struct in errors; `first_size` is what
 * struct_size 0 stands for, the struct's size in 0.2. */
onnxio_status onnxio__copy_options(void *dst, size_t dst_size, const void *src, const char *what, size_t first_size);
/* The size of each option struct in 0.2, what struct_size 0 stands for:
 * the members before the first one added since. A struct with no member
 * added yet is its sizeof; options.c pins every size (LP64), so that the
 * first member added to one fails the build until its macro names it. */
#define ONNXIO__SERIALIZE_OPTIONS_0_2_SIZE offsetof(onnxio_serialize_options, max_expansion)
#define ONNXIO__PARSE_OPTIONS_0_2_SIZE offsetof(onnxio_parse_options, cancel)
#define ONNXIO__TEXT_OPTIONS_0_2_SIZE offsetof(onnxio_text_options, max_expansion)
#define ONNXIO__SAFETENSORS_OPTIONS_0_2_SIZE offsetof(onnxio_safetensors_options, max_expansion)
#define ONNXIO__SLICE_OPTIONS_0_2_SIZE sizeof(onnxio_slice_options)
#define ONNXIO__CONSOLIDATE_OPTIONS_0_2_SIZE sizeof(onnxio_consolidate_options)
#define ONNXIO__CHECK_OPTIONS_0_2_SIZE sizeof(onnxio_check_options)
/* The public parse options read and checked (alignment a power of two at
 * most 1 GiB, no negative counts), with every default resolved: what the
 * library's load and parse paths use. */
onnxio_status onnxio__parse_config(const onnxio_parse_options *opts, onnxio_parse_options *cfg);
onnxio_status onnxio__serialize_config(const onnxio_serialize_options *opts, onnxio_serialize_options *cfg);
/* The serialize options of an archive save, read and checked: the
 * external data file options do not apply (ONNXIO_ERR_INVALID_ARGUMENT). */
onnxio_status onnxio__archive_save_config(const onnxio_serialize_options *opts, onnxio_serialize_options *cfg);
/* A requested depth limit (0: the default) capped at ONNXIO_MAX_DEPTH. */
int onnxio__depth_limit(int requested);
/* A requested payload alignment (0: the default). */
uint64_t onnxio__alignment(uint64_t requested);
/* A requested expansion limit (0: the default). */
uint64_t onnxio__max_expansion(uint64_t requested);
/* The alignment of a save's payloads: cfg->alignment, or the default of
 * where they go (`data_file`: an external data file, else the model or
 * archive itself). */
uint64_t onnxio__save_alignment(const onnxio_serialize_options *cfg, bool data_file);
/* The slice and consolidate options read and checked, defaults resolved
 * (for consolidation: alignment and raw_data_threshold). */
onnxio_status onnxio__slice_config(const onnxio_slice_options *opts, onnxio_slice_options *cfg);
onnxio_status onnxio__consolidate_config(const onnxio_consolidate_options *opts, onnxio_consolidate_options *cfg);

/* The expansion budget of one load (onnxio.h, "Expansion"): bytes read
 * (`input`) and bytes allocated for structure and payloads (`used`); used
 * may not pass ratio x input + ONNXIO_EXPANSION_ALLOWANCE. */
typedef struct onnxio__budget {
    uint64_t ratio;
    uint64_t input;
    uint64_t used;
    /* A merge into an existing message (onnxio_parse_into): the arena bytes
     * the tree held before, which the arena may grow by beyond the budget,
     * since an existing repeated field that takes new elements is copied
     * whole into a larger array: that copy is what the tree held, not what
     * the new bytes make. */
    uint64_t merge_credit;
} onnxio__budget;
/* The bytes the budget still allows (saturating). */
uint64_t onnxio__budget_left(const onnxio__budget *b);
/* Takes `n` bytes for `what`: ONNXIO_ERR_EXPANSION when they do not fit. */
onnxio_status onnxio__budget_take(onnxio__budget *b, uint64_t n, const char *what);

/* CRC-32s are computed in pieces of this size (a pool job's pieces, the
 * CRC slots of a payload), then joined (onnxio__crc_join). */
#define ONNXIO__CRC_PIECE (8u << 20)
/* Pieces (crc slots) of a CRC job of `size` bytes. */
static inline size_t onnxio__crc_pieces(uint64_t size)
{
    return size ? (size_t)((size - 1) / ONNXIO__CRC_PIECE + 1) : 1;
}

/* digest.c: checksums. SHA-1 digests (the CPU's SHA instructions where it
 * has them, sha1collisiondetection's C code without its detection
 * elsewhere; no set-up that could fail half-way), as 40 lowercase hex
 * digits and a NUL. */
typedef struct onnxio__sha1 {
    void *ctx;
} onnxio__sha1;
onnxio_status onnxio__sha1_begin(onnxio__sha1 *h);
onnxio_status onnxio__sha1_update(onnxio__sha1 *h, const void *data, uint64_t size);
/* Feeds `n` zero bytes (the padding between aligned payloads). */
onnxio_status onnxio__sha1_zeros(onnxio__sha1 *h, uint64_t n);
/* Finishes and frees the digest (also on failure). */
onnxio_status onnxio__sha1_end(onnxio__sha1 *h, char hex[41]);
void onnxio__sha1_abort(onnxio__sha1 *h);
onnxio_status onnxio__sha1_hex(const void *data, uint64_t size, char hex[41]);
/* The SHA-1 of `size` bytes at `offset` of `fd`, read in 1 MiB pieces. */
onnxio_status onnxio__sha1_fd(int fd, uint64_t offset, uint64_t size, const char *what, char hex[41]);
/* The SHA-256 (FIPS 180-4) of `size` bytes (one block of a tensor's
 * bytes, for the block digests), with no allocation. */
void onnxio__sha256(const void *data, size_t size, uint8_t out[32]);
/* The SHA-1 and SHA-256 code in use: "SHA-NI" or "portable". `hardware` 0
 * or 1 makes later digests use the portable code or, where the CPU has
 * them, the SHA instructions (tests and benchmarks compare the two); -1
 * changes nothing. Not thread-safe against digests in progress. */
const char *onnxio__sha_engine(int hardware);
/* The SHA-256 of `count` byte ranges, data[i] of size[i] bytes, into
 * out[i]: ranges of one size several at a time on the CPU's vector lanes
 * where it has them (AVX-512: 16 or 8, AVX2: 8; not on Windows), the
 * others one at a time (onnxio__sha256). The block digests of a job's
 * piece, with no allocation. */
void onnxio__sha256_many(const uint8_t *const *data, const size_t *size, size_t count, uint8_t (*out)[32]);
/* For tests and benchmarks: the vector code of onnxio__sha256_many,
 * "AVX-512", "AVX2" or "one at a time". `engine` 2 (AVX-512), 1 (AVX2) or
 * 0 (none) makes later calls use it, or the best below it that the CPU
 * has; -1 changes nothing. onnxio__sha_engine(0) sets it to 0 and
 * onnxio__sha_engine(1) to the fastest (AVX2 only without SHA-NI). Not
 * thread-safe against digests in progress. */
const char *onnxio__sha_many_engine(int engine);
/* The CRC-32 of A || B from crc1 = CRC-32(A) and crc2 = CRC-32(B) of
 * size2 bytes (as zlib's crc32_combine). It is linear: CRC-32(A || B) =
 * onnxio__crc_combine(CRC-32(A), 0, |B|) ^ CRC-32(B). */
uint32_t onnxio__crc_combine(uint32_t crc1, uint32_t crc2, uint64_t size2);
/* The CRC-32 of `size` bytes from the CRCs of their pieces. */
uint32_t onnxio__crc_join(const uint32_t *pieces, uint64_t size);
/* The CRC-32 of `size` bytes at `data`, continuing `crc` (0 to start):
 * ISA-L's when the system has it, else libdeflate's (digest.c). */
uint32_t onnxio__crc32(uint32_t crc, const void *data, uint64_t size);
/* libdeflate's, always (for the tests: both must agree with zlib). */
uint32_t onnxio__crc32_libdeflate(uint32_t crc, const void *data, uint64_t size);
/* "ISA-L" or "libdeflate": which one onnxio__crc32 uses. */
const char *onnxio__crc32_library(void);

#include "base/progress.h"

#endif
