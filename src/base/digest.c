/* Checksums, in one place: CRC-32 (zip entries, pieces joined as zlib's
 * crc32_combine joins them) and SHA-1 (the external data "checksum" key, with
 * sha1collisiondetection: third_party/sha1dc).
 *
 * The CRC-32 library, measured on this project's machine (x86-64 with
 * AVX-512 and VPCLMULQDQ, one thread, the same values from all): zlib
 * 1.2.13's crc32 7.5 GB/s, libdeflate 1.14's 17 GB/s, ISA-L 2.30's
 * crc32_gzip_refl 66 GB/s on 1 MiB pieces in cache (35 GB/s on 256 MiB;
 * the pool hands it 128 KiB pieces just read, so that they are in cache:
 * see CRC_STEP in pool.c). ISA-L is used when the system has it
 * (libisal.so.2, loaded at the first CRC): with it the CRC of an .onnxz
 * load costs 4 ms a 0.5 GiB model instead of 25. It is not linked, because
 * Debian's libisal-dev has no static library and a program that links
 * onnxio statically must still link; such a program (no dynamic linker)
 * and a system without ISA-L use libdeflate, which ships both and picks
 * its code for the CPU at run time. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <libdeflate.h>
#include <sha1dc/sha1.h>

#include "base/base.h"

/* ---- CRC-32 ------------------------------------------------------------ */

/* ISA-L's crc32_gzip_refl: zlib's convention, as libdeflate_crc32. */
typedef unsigned (*isal_crc32_fn)(unsigned crc, const unsigned char *data, uint64_t size);
static isal_crc32_fn isal_crc32;
static pthread_once_t crc32_once = PTHREAD_ONCE_INIT;

/* Joining CRCs (zlib 1.2.12's crc32_combine, which libdeflate and ISA-L
 * do not have): CRC-32(A || B) is CRC-32(A) times x^(8|B|), plus CRC-32(B),
 * in GF(2)[x] modulo CRC-32's polynomial, bits reflected (bit 31 is x^0).
 * x2n[k] is x^(2^k) modulo the polynomial, made at the first CRC. */
#define CRC32_POLY 0xedb88320u
static uint32_t x2n[32];

/* a(x) b(x) modulo the polynomial; a is not 0. */
static uint32_t multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = (uint32_t)1 << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ CRC32_POLY : b >> 1;
    }
    return p;
}

/* x^(8 n) modulo the polynomial: the product of x^(2^k) over the bits k of
 * 8 n. */
static uint32_t x8nmodp(uint64_t n)
{
    uint32_t p = (uint32_t)1 << 31; /* x^0 */
    for (unsigned k = 3; n; n >>= 1, k++)
        if (n & 1) p = multmodp(x2n[k & 31], p);
    return p;
}

static void crc32_init(void)
{
    uint32_t p = (uint32_t)1 << 30; /* x^1 */
    for (int k = 0; k < 32; k++) {
        x2n[k] = p;
        p = multmodp(p, p);
    }
    void *sym = onnxio__sys_dlsym(ONNXIO__OS_WINDOWS ? "isa-l.dll" : "libisal.so.2", "crc32_gzip_refl");
    if (sym) memcpy(&isal_crc32, &sym, sizeof sym); /* POSIX: a data pointer that is a function */
}

uint32_t onnxio__crc32(uint32_t crc, const void *data, uint64_t size)
{
    /* the same convention as zlib's crc32(): 0 to start, the CRC so far to
     * go on */
    pthread_once(&crc32_once, crc32_init);
    if (isal_crc32) return isal_crc32(crc, data, size);
    return onnxio__crc32_libdeflate(crc, data, size);
}

uint32_t onnxio__crc32_libdeflate(uint32_t crc, const void *data, uint64_t size)
{
    for (uint64_t at = 0; at < size; at += (uint64_t)1 << 30) {
        size_t n = size - at < ((uint64_t)1 << 30) ? (size_t)(size - at) : (size_t)1 << 30;
        crc = (uint32_t)libdeflate_crc32(crc, (const uint8_t *)data + at, n);
    }
    return crc;
}

const char *onnxio__crc32_library(void)
{
    pthread_once(&crc32_once, crc32_init);
    return isal_crc32 ? "ISA-L" : "libdeflate";
}

uint32_t onnxio__crc_combine(uint32_t crc1, uint32_t crc2, uint64_t size2)
{
    pthread_once(&crc32_once, crc32_init);
    return multmodp(x8nmodp(size2), crc1) ^ crc2;
}

uint32_t onnxio__crc_join(const uint32_t *pieces, uint64_t size)
{
    uint32_t crc = pieces[0];
    size_t n = onnxio__crc_pieces(size);
    for (size_t k = 1; k < n; k++) {
        uint64_t len = k + 1 < n ? ONNXIO__CRC_PIECE : size - (uint64_t)k * ONNXIO__CRC_PIECE;
        crc = onnxio__crc_combine(crc, pieces[k], len);
    }
    return crc;
}

/* ---- SHA-1 ------------------------------------------------------------- */

/* sha1collisiondetection (git's SHA-1), not a crypto library: it is small
 * C with no set-up and no allocation of its own, so every platform and a
 * wheel get the same code, and it refuses data built as one half of a known
 * SHA-1 collision attack (SHAttered, SHA-mbles), which a checksum key could
 * not tell from its twin. Its price is speed (docs/design.md, "The OS
 * layer", gives the figures). The context is onnxio's own allocation. */
onnxio_status onnxio__sha1_begin(onnxio__sha1 *h)
{
    SHA1_CTX *c = onnxio__malloc(sizeof *c);
    h->ctx = c;
    if (!c) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "cannot start a SHA-1 digest");
    SHA1DCInit(c);
    /* A detected collision block fails the digest instead of changing it
     * (sha1dc's "safe hash"), so that a digest is always plain SHA-1. */
    SHA1DCSetSafeHash(c, 0);
    return ONNXIO_OK;
}

onnxio_status onnxio__sha1_update(onnxio__sha1 *h, const void *data, uint64_t size)
{
    const char *p = data;
    for (uint64_t at = 0; at < size; at += 1u << 30) {
        size_t n = size - at < (1u << 30) ? (size_t)(size - at) : (1u << 30);
        SHA1DCUpdate(h->ctx, p + at, n);
    }
    return ONNXIO_OK;
}

onnxio_status onnxio__sha1_zeros(onnxio__sha1 *h, uint64_t n)
{
    static const uint8_t zeros[4096];
    while (n) {
        size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
        onnxio_status s = onnxio__sha1_update(h, zeros, k);
        if (s) return s;
        n -= k;
    }
    return ONNXIO_OK;
}

onnxio_status onnxio__sha1_end(onnxio__sha1 *h, char hex[41])
{
    unsigned char md[20];
    int collision = SHA1DCFinal(md, h->ctx);
    onnxio__free(h->ctx);
    h->ctx = NULL;
    if (collision)
        return onnxio__fail(ONNXIO_ERR_CHECKSUM,
                            "the data holds a block of a known SHA-1 collision attack: its SHA-1 cannot vouch for it");
    for (unsigned i = 0; i < sizeof md; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return ONNXIO_OK;
}

void onnxio__sha1_abort(onnxio__sha1 *h)
{
    onnxio__free(h->ctx);
    h->ctx = NULL;
}

onnxio_status onnxio__sha1_hex(const void *data, uint64_t size, char hex[41])
{
    onnxio__sha1 h;
    onnxio_status s = onnxio__sha1_begin(&h);
    if (!s) s = onnxio__sha1_update(&h, data, size);
    if (s) {
        onnxio__sha1_abort(&h);
        return s;
    }
    return onnxio__sha1_end(&h, hex);
}

onnxio_status onnxio__sha1_fd(int fd, uint64_t offset, uint64_t size, const char *what, char hex[41])
{
    onnxio__sha1 h;
    onnxio_status s = onnxio__sha1_begin(&h);
    size_t cap = 1u << 20;
    uint8_t *buf = s ? NULL : onnxio__malloc(cap);
    if (!s && !buf) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    for (uint64_t at = 0; !s && at < size;) {
        size_t want = size - at < cap ? (size_t)(size - at) : cap;
        if (!(s = onnxio__read_at(fd, buf, want, offset + at, what))) s = onnxio__sha1_update(&h, buf, want);
        at += want;
    }
    onnxio__free(buf);
    if (s) {
        onnxio__sha1_abort(&h);
        return s;
    }
    return onnxio__sha1_end(&h, hex);
}
