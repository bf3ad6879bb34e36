/* Checksums, in one place: CRC-32 (zip entries, pieces joined as zlib's
 * crc32_combine joins them) and SHA-1 (the external data "checksum" key:
 * the CPU's SHA instructions, or sha1collisiondetection's C code,
 * third_party/sha1dc).
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
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <libdeflate.h>
#include <sha1dc/sha1.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define ONNXIO__SHA_NI 1
#endif

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

/* SHA-1 for the external data "checksum" key: whole blocks go to the CPU's
 * SHA extensions (x86 SHA-NI) where it has them, to sha1collisiondetection's
 * C code elsewhere (third_party/sha1dc, git's SHA-1: small C with no set-up
 * and no allocation of its own), whose context holds the buffered tail and
 * the length either way. sha1dc's collision detection is off: it cost more
 * than the hash itself (docs/design.md, "The OS layer"), and a checksum
 * must not depend on the machine that computed it. The context is onnxio's
 * own allocation. */
#ifdef ONNXIO__SHA_NI
/* `blocks` 64-byte blocks at `data` into `state`, four rounds an
 * instruction (Intel's "New Instructions Supporting the Secure Hash
 * Algorithm on Intel Architecture Processors" lays the schedule out). */
__attribute__((target("sha,sse4.1,ssse3"))) static void sha1_ni_blocks(uint32_t state[5], const uint8_t *data,
                                                                      size_t blocks)
{
    const __m128i order = _mm_set_epi64x(0x0001020304050607ULL, 0x08090a0b0c0d0e0fULL);
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)state), 0x1B);
    __m128i e0 = _mm_set_epi32((int)state[4], 0, 0, 0), e1;
    for (; blocks; blocks--, data += 64) {
        const __m128i abcd_in = abcd, e_in = e0;
        __m128i m[4];
        for (int i = 0; i < 4; i++)
            m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * i)), order);
        /* Rounds 0-3, then 19 groups of four: each adds the next schedule
         * words to the E of the group before and advances the schedule
         * (words 16 on: msg1, xor, msg2). */
        e0 = _mm_add_epi32(e0, m[0]);
        e1 = abcd;
        abcd = _mm_sha1rnds4_epu32(abcd, e0, 0);
#define SHA1_GROUP(i, e_this, e_next)                                                                       \
    do {                                                                                                    \
        e_this = _mm_sha1nexte_epu32(e_this, m[(i) % 4]);                                                   \
        e_next = abcd;                                                                                      \
        if ((i) >= 3 && (i) <= 18) m[((i) + 1) % 4] = _mm_sha1msg2_epu32(m[((i) + 1) % 4], m[(i) % 4]);    \
        abcd = _mm_sha1rnds4_epu32(abcd, e_this, (i) / 5);                                                  \
        if ((i) >= 1 && (i) <= 16) m[((i) + 3) % 4] = _mm_sha1msg1_epu32(m[((i) + 3) % 4], m[(i) % 4]);    \
        if ((i) >= 2 && (i) <= 17) m[((i) + 2) % 4] = _mm_xor_si128(m[((i) + 2) % 4], m[(i) % 4]);         \
    } while (0)
        SHA1_GROUP(1, e1, e0);
        SHA1_GROUP(2, e0, e1);
        SHA1_GROUP(3, e1, e0);
        SHA1_GROUP(4, e0, e1);
        SHA1_GROUP(5, e1, e0);
        SHA1_GROUP(6, e0, e1);
        SHA1_GROUP(7, e1, e0);
        SHA1_GROUP(8, e0, e1);
        SHA1_GROUP(9, e1, e0);
        SHA1_GROUP(10, e0, e1);
        SHA1_GROUP(11, e1, e0);
        SHA1_GROUP(12, e0, e1);
        SHA1_GROUP(13, e1, e0);
        SHA1_GROUP(14, e0, e1);
        SHA1_GROUP(15, e1, e0);
        SHA1_GROUP(16, e0, e1);
        SHA1_GROUP(17, e1, e0);
        SHA1_GROUP(18, e0, e1);
        SHA1_GROUP(19, e1, e0);
#undef SHA1_GROUP
        e0 = _mm_sha1nexte_epu32(e0, e_in);
        abcd = _mm_add_epi32(abcd, abcd_in);
    }
    _mm_storeu_si128((__m128i *)state, _mm_shuffle_epi32(abcd, 0x1B));
    state[4] = (uint32_t)_mm_extract_epi32(e0, 3);
}

static bool sha_ni_present(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSSE3) && (c & bit_SSE4_1) &&
           __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
}
#else
static bool sha_ni_present(void)
{
    return false;
}
#endif

/* 1: the SHA instructions (SHA-1 and SHA-256), 0: the portable code;
 * chosen at the first digest. */
static int sha_hardware = -1;
static pthread_once_t sha_once = PTHREAD_ONCE_INIT;

static void sha_init(void)
{
    if (sha_hardware < 0) sha_hardware = sha_ni_present();
}

const char *onnxio__sha_engine(int hardware)
{
    pthread_once(&sha_once, sha_init);
    if (hardware >= 0) sha_hardware = hardware && sha_ni_present();
    return sha_hardware ? "SHA-NI" : "portable";
}

onnxio_status onnxio__sha1_begin(onnxio__sha1 *h)
{
    pthread_once(&sha_once, sha_init);
    SHA1_CTX *c = onnxio__malloc(sizeof *c);
    h->ctx = c;
    if (!c) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "cannot start a SHA-1 digest");
    SHA1DCInit(c);
    SHA1DCSetUseDetectColl(c, 0);
    SHA1DCSetUseUBC(c, 0);
    return ONNXIO_OK;
}

static void sha1_update(SHA1_CTX *c, const char *p, size_t n)
{
#ifdef ONNXIO__SHA_NI
    if (sha_hardware) {
        /* sha1dc's buffer up to a block boundary, whole blocks here. */
        size_t lead = (size_t)((64 - c->total % 64) % 64);
        if (lead > n) lead = n;
        if (lead) SHA1DCUpdate(c, p, lead);
        p += lead, n -= lead;
        size_t blocks = n / 64;
        if (blocks) {
            sha1_ni_blocks(c->ihv, (const uint8_t *)p, blocks);
            c->total += (uint64_t)blocks * 64;
            p += blocks * 64, n -= blocks * 64;
        }
    }
#endif
    if (n) SHA1DCUpdate(c, p, n);
}

onnxio_status onnxio__sha1_update(onnxio__sha1 *h, const void *data, uint64_t size)
{
    const char *p = data;
    for (uint64_t at = 0; at < size; at += 1u << 30) {
        size_t n = size - at < (1u << 30) ? (size_t)(size - at) : (1u << 30);
        sha1_update(h->ctx, p + at, n);
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
    SHA1DCFinal(md, h->ctx); /* detection is off: never a collision */
    onnxio__free(h->ctx);
    h->ctx = NULL;
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

/* ---- SHA-256 ----------------------------------------------------------- */

/* SHA-256 (FIPS 180-4) of one block of a tensor's bytes, for the block
 * digests: the SHA instructions where the CPU has them, else the
 * specification's rounds in C. */
static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror32(uint32_t x, unsigned n) { return x >> n | x << (32 - n); }

static void sha256_c_blocks(uint32_t h[8], const uint8_t *p, size_t blocks)
{
    for (; blocks; blocks--, p += 64) {
        uint32_t w[64];
        for (int t = 0; t < 16; t++)
            w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 | (uint32_t)p[4 * t + 2] << 8 | p[4 * t + 3];
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = ror32(w[t - 15], 7) ^ ror32(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = ror32(w[t - 2], 17) ^ ror32(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
        for (int t = 0; t < 64; t++) {
            uint32_t t1 = hh + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + sha256_k[t] + w[t];
            uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
    }
}

#ifdef ONNXIO__SHA_NI
/* Four rounds an instruction pair (sha256rnds2 twice), the schedule with
 * sha256msg1/sha256msg2, as Intel's SHA extensions paper lays it out. The
 * state lives as ABEF and CDGH. */
__attribute__((target("sha,sse4.1,ssse3"))) static void sha256_ni_blocks(uint32_t h[8], const uint8_t *p,
                                                                        size_t blocks)
{
    const __m128i order = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
    __m128i state1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); /* EFGH */
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);                                  /* ABEF */
    state1 = _mm_blend_epi16(state1, tmp, 0xF0);                                        /* CDGH */
    for (; blocks; blocks--, p += 64) {
        const __m128i abef = state0, cdgh = state1;
        __m128i m[4];
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            if (i < 4) m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), order);
            __m128i msg = _mm_add_epi32(m[i % 4], _mm_loadu_si128((const __m128i *)&sha256_k[4 * i]));
            state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
            if (i >= 3 && i <= 14) {
                /* words 4(i+1).. from those before: m[i+1] += W[t-7], then msg2 */
                __m128i w7 = _mm_alignr_epi8(m[i % 4], m[(i + 3) % 4], 4);
                m[(i + 1) % 4] = _mm_sha256msg2_epu32(_mm_add_epi32(m[(i + 1) % 4], w7), m[i % 4]);
            }
            state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(msg, 0x0E));
            if (i >= 1 && i <= 12) m[(i + 3) % 4] = _mm_sha256msg1_epu32(m[(i + 3) % 4], m[i % 4]);
        }
        state0 = _mm_add_epi32(state0, abef);
        state1 = _mm_add_epi32(state1, cdgh);
    }
    tmp = _mm_shuffle_epi32(state0, 0x1B);        /* FEBA */
    state1 = _mm_shuffle_epi32(state1, 0xB1);     /* DCHG */
    state0 = _mm_blend_epi16(tmp, state1, 0xF0);  /* DCBA */
    state1 = _mm_alignr_epi8(state1, tmp, 8);     /* ABEF */
    _mm_storeu_si128((__m128i *)&h[0], state0);
    _mm_storeu_si128((__m128i *)&h[4], state1);
}
#endif

void onnxio__sha256(const void *data, size_t size, uint8_t out[32])
{
    pthread_once(&sha_once, sha_init);
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    void (*blocks)(uint32_t *, const uint8_t *, size_t) = sha256_c_blocks;
#ifdef ONNXIO__SHA_NI
    if (sha_hardware) blocks = sha256_ni_blocks;
#endif
    const uint8_t *p = data;
    size_t whole = size / 64;
    if (whole) blocks(h, p, whole);
    /* The tail, the 0x80 byte, zeros, and the length in bits, big-endian. */
    uint8_t last[128] = {0};
    size_t rest = size - whole * 64;
    memcpy(last, p + whole * 64, rest);
    last[rest] = 0x80;
    size_t n = rest < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)size * 8;
    for (int i = 0; i < 8; i++) last[n - 1 - i] = (uint8_t)(bits >> (8 * i));
    blocks(h, last, n / 64);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(h[i] >> 8);
        out[4 * i + 3] = (uint8_t)h[i];
    }
}
