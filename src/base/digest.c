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
/* ONNXIO_NO_SIMD: the portable code alone (scripts/callgraph.py parses with
 * it: the x86 intrinsics headers it finds need not match its libclang). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(ONNXIO_NO_SIMD)
#include <cpuid.h>
#include <immintrin.h>
#define ONNXIO__SHA_NI 1
#define ONNXIO__SHA_HW "SHA-NI"
#elif defined(__aarch64__) && defined(__GNUC__) && defined(__linux__) && !defined(ONNXIO_NO_SIMD)
#include <arm_neon.h>
#include <sys/auxv.h>
#define ONNXIO__SHA_ARM 1
#define ONNXIO__SHA_HW "ARMv8 SHA"
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
#define sha1_hw_blocks sha1_ni_blocks
#elif defined(ONNXIO__SHA_ARM)
/* ARMv8's SHA-1 instructions, four rounds a vsha1{c,p,m}q; the schedule
 * with vsha1su0q/vsha1su1q (Arm's A64 instruction set: SHA1C, SHA1SU0...). */
__attribute__((target("arch=armv8-a+crypto"))) static void sha1_arm_blocks(uint32_t state[5], const uint8_t *data,
                                                                          size_t blocks)
{
    static const uint32_t k[4] = {0x5A827999, 0x6ED9EBA1, 0x8F1BBCDC, 0xCA62C1D6};
    uint32x4_t abcd = vld1q_u32(state);
    uint32_t e = state[4];
    for (; blocks; blocks--, data += 64) {
        const uint32x4_t abcd_in = abcd;
        const uint32_t e_in = e;
        uint32x4_t m[4];
        for (int i = 0; i < 4; i++) m[i] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(data + 16 * i)));
        for (int g = 0; g < 20; g++) {
            /* words 4g..4g+3: from the four groups before, past the first four */
            if (g >= 4) m[g % 4] = vsha1su1q_u32(vsha1su0q_u32(m[g % 4], m[(g + 1) % 4], m[(g + 2) % 4]), m[(g + 3) % 4]);
            uint32x4_t wk = vaddq_u32(m[g % 4], vdupq_n_u32(k[g / 5]));
            uint32_t e_next = vsha1h_u32(vgetq_lane_u32(abcd, 0));
            abcd = g < 5 ? vsha1cq_u32(abcd, e, wk) : g >= 10 && g < 15 ? vsha1mq_u32(abcd, e, wk) : vsha1pq_u32(abcd, e, wk);
            e = e_next;
        }
        abcd = vaddq_u32(abcd, abcd_in);
        e += e_in;
    }
    vst1q_u32(state, abcd);
    state[4] = e;
}

static bool sha_ni_present(void)
{
    unsigned long caps = getauxval(AT_HWCAP);
    return (caps & (1ul << 5)) && (caps & (1ul << 6)); /* HWCAP_SHA1, HWCAP_SHA2 */
}
#define sha1_hw_blocks sha1_arm_blocks
#else
static bool sha_ni_present(void)
{
    return false;
}
#endif

/* 1: the SHA instructions (SHA-1 and SHA-256), 0: the portable code;
 * chosen at the first digest. */
static int sha_hardware = -1;
/* The lanes of onnxio__sha256_many: 2 AVX-512 (16, or 8 in 256-bit
 * registers), 1 AVX2 (8), 0 none (one range at a time); chosen with the
 * rest. */
static int sha_mb = -1;
static int sha_mb_present(void);
static pthread_once_t sha_once = PTHREAD_ONCE_INIT;

/* The lanes worth using: AVX-512's always (measured on this project's
 * machine, Xeon with SHA-NI, one core, 1 MiB ranges: SHA-NI 1.1 GB/s,
 * 8 ranges in AVX-512's 256-bit registers 2.6 GB/s, 16 ranges in its
 * 512-bit registers 3.5 GB/s); AVX2's (1.3 GB/s there) only without
 * SHA-NI, which other x86 CPUs run faster than this one. */
static int sha_mb_best(void)
{
    int have = sha_mb_present();
    return have == 1 && sha_ni_present() ? 0 : have;
}

static void sha_init(void)
{
    if (sha_hardware < 0) sha_hardware = sha_ni_present();
    if (sha_mb < 0) sha_mb = sha_mb_best();
}

const char *onnxio__sha_engine(int hardware)
{
    pthread_once(&sha_once, sha_init);
    if (hardware >= 0) {
        sha_hardware = hardware && sha_ni_present();
        sha_mb = hardware ? sha_mb_best() : 0;
    }
#ifdef ONNXIO__SHA_HW
    return sha_hardware ? ONNXIO__SHA_HW : "portable";
#else
    return "portable";
#endif
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
#ifdef ONNXIO__SHA_HW
    if (sha_hardware) {
        /* sha1dc's buffer up to a block boundary, whole blocks here. */
        size_t lead = (size_t)((64 - c->total % 64) % 64);
        if (lead > n) lead = n;
        if (lead) SHA1DCUpdate(c, p, lead);
        p += lead, n -= lead;
        size_t blocks = n / 64;
        if (blocks) {
            sha1_hw_blocks(c->ihv, (const uint8_t *)p, blocks);
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

static const uint32_t sha256_h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

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

#ifdef ONNXIO__SHA_ARM
/* ARMv8's SHA-256 instructions: four rounds a vsha256hq/vsha256h2q pair,
 * the schedule with vsha256su0q/vsha256su1q. */
__attribute__((target("arch=armv8-a+crypto"))) static void sha256_arm_blocks(uint32_t h[8], const uint8_t *p,
                                                                            size_t blocks)
{
    uint32x4_t abcd = vld1q_u32(&h[0]), efgh = vld1q_u32(&h[4]);
    for (; blocks; blocks--, p += 64) {
        const uint32x4_t abcd_in = abcd, efgh_in = efgh;
        uint32x4_t m[4];
        for (int i = 0; i < 4; i++) m[i] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * i)));
        for (int g = 0; g < 16; g++) {
            if (g >= 4)
                m[g % 4] = vsha256su1q_u32(vsha256su0q_u32(m[g % 4], m[(g + 1) % 4]), m[(g + 2) % 4], m[(g + 3) % 4]);
            uint32x4_t wk = vaddq_u32(m[g % 4], vld1q_u32(&sha256_k[4 * g]));
            uint32x4_t before = abcd;
            abcd = vsha256hq_u32(abcd, efgh, wk);
            efgh = vsha256h2q_u32(efgh, before, wk);
        }
        abcd = vaddq_u32(abcd, abcd_in);
        efgh = vaddq_u32(efgh, efgh_in);
    }
    vst1q_u32(&h[0], abcd);
    vst1q_u32(&h[4], efgh);
}
#endif

void onnxio__sha256(const void *data, size_t size, uint8_t out[32])
{
    pthread_once(&sha_once, sha_init);
    uint32_t h[8];
    memcpy(h, sha256_h0, sizeof h);
    void (*blocks)(uint32_t *, const uint8_t *, size_t) = sha256_c_blocks;
#ifdef ONNXIO__SHA_NI
    if (sha_hardware) blocks = sha256_ni_blocks;
#elif defined(ONNXIO__SHA_ARM)
    if (sha_hardware) blocks = sha256_arm_blocks;
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

/* ---- SHA-256 of several blocks at once --------------------------------- */

/* Multi-buffer SHA-256 (as Intel's isa-l_crypto mb_sha256): the messages
 * of one length hashed together, one message a 32-bit lane of the vector
 * registers (16 lanes with AVX-512, 8 with AVX2 or AVX-512's 256-bit
 * registers), the state words and the schedule words as vectors of the
 * lanes. Each 64-byte block of the lanes is loaded as one vector a lane
 * and transposed into a vector a word. The rounds are the specification's,
 * lane-wise: AVX-512's vprord rotates and vpternlogd does Ch, Maj and the
 * three-way XORs in one instruction each; AVX2 rotates with two shifts.
 * Messages of one length pad identically, so the padded tail blocks go
 * through the lanes too. Not on Windows: GCC does not align the stack
 * beyond 16 bytes there, and spills of these registers would fault. */
#if defined(ONNXIO__SHA_NI) && !defined(_WIN32)
#define ONNXIO__SHA_MB 1
/* The fewest ranges of one size worth the lanes (the lanes cost as much
 * full or not): 4 of AVX-512's 8 against SHA-NI (2.6 / 8 * 4 > 1.1 GB/s),
 * else 2. */
#define SHA_MB_LEAST (sha_mb == 2 && sha_hardware ? 4 : 2)

/* One round t (0-63) of the lanes, the schedule word t made first from the
 * 16 before it (w[] a ring of 16); the caller renames the state words. */
#define MB_ROUND(a, b, c, d, e, f, g, h, t)                                                                       \
    do {                                                                                                           \
        if ((t) >= 16) {                                                                                           \
            V w15_ = w[((t) + 1) & 15], w2_ = w[((t) + 14) & 15];                                                  \
            V s0_ = XOR3(ROR(w15_, 7), ROR(w15_, 18), SRL(w15_, 3));                                               \
            V s1_ = XOR3(ROR(w2_, 17), ROR(w2_, 19), SRL(w2_, 10));                                                \
            w[(t) & 15] = ADD(ADD(w[(t) & 15], s0_), ADD(w[((t) + 9) & 15], s1_));                                 \
        }                                                                                                          \
        V t1_ = ADD(ADD(h, XOR3(ROR(e, 6), ROR(e, 11), ROR(e, 25))),                                               \
                    ADD(CH(e, f, g), ADD(w[(t) & 15], SET1((int)sha256_k[t]))));                                   \
        V t2_ = ADD(XOR3(ROR(a, 2), ROR(a, 13), ROR(a, 22)), MAJ(a, b, c));                                        \
        d = ADD(d, t1_);                                                                                           \
        h = ADD(t1_, t2_);                                                                                         \
    } while (0)

/* The 64 rounds of one block of the lanes: w[16] the block's words, s[8]
 * the state, added to. */
#define MB_BLOCK()                                                                                                 \
    do {                                                                                                           \
        V a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];                          \
        _Pragma("GCC unroll 8") for (int t = 0; t < 64; t += 8)                                                    \
        {                                                                                                          \
            MB_ROUND(a, b, c, d, e, f, g, h, t);                                                                   \
            MB_ROUND(h, a, b, c, d, e, f, g, t + 1);                                                               \
            MB_ROUND(g, h, a, b, c, d, e, f, t + 2);                                                               \
            MB_ROUND(f, g, h, a, b, c, d, e, t + 3);                                                               \
            MB_ROUND(e, f, g, h, a, b, c, d, t + 4);                                                               \
            MB_ROUND(d, e, f, g, h, a, b, c, t + 5);                                                               \
            MB_ROUND(c, d, e, f, g, h, a, b, t + 6);                                                               \
            MB_ROUND(b, c, d, e, f, g, h, a, t + 7);                                                               \
        }                                                                                                          \
        s[0] = ADD(s[0], a), s[1] = ADD(s[1], b), s[2] = ADD(s[2], c), s[3] = ADD(s[3], d);                        \
        s[4] = ADD(s[4], e), s[5] = ADD(s[5], f), s[6] = ADD(s[6], g), s[7] = ADD(s[7], h);                        \
    } while (0)

/* `blocks` 64-byte blocks from each of p[0..15] into the state st[word][lane]. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void sha256_x16_blocks(uint32_t st[8][16],
                                                                                  const uint8_t *const p[16],
                                                                                  size_t blocks)
{
    typedef __m512i V;
#define ADD(x, y) _mm512_add_epi32(x, y)
#define ROR(x, n) _mm512_ror_epi32(x, n)
#define SRL(x, n) _mm512_srli_epi32(x, n)
#define XOR3(x, y, z) _mm512_ternarylogic_epi32(x, y, z, 0x96)
#define CH(x, y, z) _mm512_ternarylogic_epi32(x, y, z, 0xCA)
#define MAJ(x, y, z) _mm512_ternarylogic_epi32(x, y, z, 0xE8)
#define SET1(x) _mm512_set1_epi32(x)
    const V order = _mm512_broadcast_i32x4(_mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL));
    V s[8];
    for (int i = 0; i < 8; i++) s[i] = _mm512_loadu_si512(st[i]);
    for (size_t at = 0; at < blocks * 64; at += 64) {
        V r[16], q[16], w[16];
        for (int i = 0; i < 16; i++) r[i] = _mm512_shuffle_epi8(_mm512_loadu_si512(p[i] + at), order);
        /* 16 x 16 words: pairs of rows, then fours, within 128-bit lanes;
         * then the 128-bit lanes. */
        for (int i = 0; i < 8; i++) {
            q[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            q[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        for (int i = 0; i < 4; i++) {
            r[4 * i] = _mm512_unpacklo_epi64(q[4 * i], q[4 * i + 2]);
            r[4 * i + 1] = _mm512_unpackhi_epi64(q[4 * i], q[4 * i + 2]);
            r[4 * i + 2] = _mm512_unpacklo_epi64(q[4 * i + 1], q[4 * i + 3]);
            r[4 * i + 3] = _mm512_unpackhi_epi64(q[4 * i + 1], q[4 * i + 3]);
        }
        /* r[4i+m], 128-bit lane L: word 4L+m of rows 4i..4i+3 */
        for (int m = 0; m < 4; m++) {
            V x0 = _mm512_shuffle_i32x4(r[m], r[4 + m], 0x44), x1 = _mm512_shuffle_i32x4(r[m], r[4 + m], 0xEE);
            V y0 = _mm512_shuffle_i32x4(r[8 + m], r[12 + m], 0x44);
            V y1 = _mm512_shuffle_i32x4(r[8 + m], r[12 + m], 0xEE);
            w[m] = _mm512_shuffle_i32x4(x0, y0, 0x88);
            w[4 + m] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
            w[8 + m] = _mm512_shuffle_i32x4(x1, y1, 0x88);
            w[12 + m] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
        }
        MB_BLOCK();
    }
    for (int i = 0; i < 8; i++) _mm512_storeu_si512(st[i], s[i]);
#undef ADD
#undef ROR
#undef SRL
#undef XOR3
#undef CH
#undef MAJ
#undef SET1
}

/* The 8 x 8 transpose of the 256-bit rows r[0..7] into w[0..7]. */
#define MB_TRANSPOSE8(r, w)                                                                                        \
    do {                                                                                                           \
        V t_[8], u_[8];                                                                                            \
        for (int i = 0; i < 4; i++) {                                                                              \
            t_[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);                                             \
            t_[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);                                         \
        }                                                                                                          \
        for (int i = 0; i < 2; i++) {                                                                              \
            u_[4 * i] = _mm256_unpacklo_epi64(t_[4 * i], t_[4 * i + 2]);                                           \
            u_[4 * i + 1] = _mm256_unpackhi_epi64(t_[4 * i], t_[4 * i + 2]);                                       \
            u_[4 * i + 2] = _mm256_unpacklo_epi64(t_[4 * i + 1], t_[4 * i + 3]);                                   \
            u_[4 * i + 3] = _mm256_unpackhi_epi64(t_[4 * i + 1], t_[4 * i + 3]);                                   \
        }                                                                                                          \
        for (int m = 0; m < 4; m++) {                                                                              \
            w[m] = _mm256_permute2x128_si256(u_[m], u_[4 + m], 0x20);                                              \
            w[4 + m] = _mm256_permute2x128_si256(u_[m], u_[4 + m], 0x31);                                          \
        }                                                                                                          \
    } while (0)

/* The blocks of 8 lanes, p[0..7], st[word][0..7]: the loads, the byte
 * order and the transpose (AVX2 either way). */
#define MB_X8_BODY()                                                                                               \
    do {                                                                                                           \
        const V order = _mm256_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL, 0x0c0d0e0f08090a0bLL,        \
                                          0x0405060700010203LL);                                                   \
        V s[8];                                                                                                    \
        for (int i = 0; i < 8; i++) s[i] = _mm256_loadu_si256((const __m256i *)st[i]);                             \
        for (size_t at = 0; at < blocks * 64; at += 64) {                                                          \
            V r[8], w[16];                                                                                         \
            for (int i = 0; i < 8; i++)                                                                            \
                r[i] = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(p[i] + at)), order);               \
            MB_TRANSPOSE8(r, w);                                                                                   \
            for (int i = 0; i < 8; i++)                                                                            \
                r[i] = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(p[i] + at + 32)), order);          \
            MB_TRANSPOSE8(r, (w + 8));                                                                             \
            MB_BLOCK();                                                                                            \
        }                                                                                                          \
        for (int i = 0; i < 8; i++) _mm256_storeu_si256((__m256i *)st[i], s[i]);                                   \
    } while (0)

/* 8 lanes in AVX-512's 256-bit registers (vprord, vpternlogd). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void sha256_x8vl_blocks(uint32_t st[8][16],
                                                                                   const uint8_t *const p[16],
                                                                                   size_t blocks)
{
    typedef __m256i V;
#define ADD(x, y) _mm256_add_epi32(x, y)
#define ROR(x, n) _mm256_ror_epi32(x, n)
#define SRL(x, n) _mm256_srli_epi32(x, n)
#define XOR3(x, y, z) _mm256_ternarylogic_epi32(x, y, z, 0x96)
#define CH(x, y, z) _mm256_ternarylogic_epi32(x, y, z, 0xCA)
#define MAJ(x, y, z) _mm256_ternarylogic_epi32(x, y, z, 0xE8)
#define SET1(x) _mm256_set1_epi32(x)
    MB_X8_BODY();
#undef ADD
#undef ROR
#undef SRL
#undef XOR3
#undef CH
#undef MAJ
#undef SET1
}

/* 8 lanes with AVX2 alone. */
__attribute__((target("avx2"))) static void sha256_x8_blocks(uint32_t st[8][16], const uint8_t *const p[16],
                                                              size_t blocks)
{
    typedef __m256i V;
#define ADD(x, y) _mm256_add_epi32(x, y)
#define ROR(x, n) _mm256_or_si256(_mm256_srli_epi32(x, n), _mm256_slli_epi32(x, 32 - (n)))
#define SRL(x, n) _mm256_srli_epi32(x, n)
#define XOR3(x, y, z) _mm256_xor_si256(_mm256_xor_si256(x, y), z)
#define CH(x, y, z) _mm256_xor_si256(_mm256_and_si256(x, _mm256_xor_si256(y, z)), z)
#define MAJ(x, y, z) _mm256_or_si256(_mm256_and_si256(x, y), _mm256_and_si256(z, _mm256_or_si256(x, y)))
#define SET1(x) _mm256_set1_epi32(x)
    MB_X8_BODY();
#undef ADD
#undef ROR
#undef SRL
#undef XOR3
#undef CH
#undef MAJ
#undef SET1
}
#undef MB_X8_BODY
#undef MB_TRANSPOSE8
#undef MB_BLOCK
#undef MB_ROUND

/* What the CPU and the OS have: 2 AVX-512 (F, BW, VL, and the OS saving
 * the registers), 1 AVX2, 0 neither. */
static int sha_mb_present(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) != 6 || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX2)) return 0;
    return (lo & 0xE6) == 0xE6 && (b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512VL) ? 2 : 1;
}
#else
static int sha_mb_present(void)
{
    return 0;
}
#endif

#ifdef ONNXIO__SHA_MB
/* The SHA-256 of the n (2 to 16) ranges data[idx[k]] of `size` bytes each
 * into out[idx[k]], in 16 lanes if n > 8, else 8; the lanes left over
 * hash the first range again. */
static void sha256_lanes(const uint8_t *const *data, const size_t *idx, size_t n, size_t size, uint8_t (*out)[32])
{
    void (*blocks)(uint32_t(*)[16], const uint8_t *const *, size_t) =
        n > 8 ? sha256_x16_blocks : sha_mb == 2 ? sha256_x8vl_blocks : sha256_x8_blocks;
    uint32_t st[8][16];
    for (int i = 0; i < 8; i++)
        for (int l = 0; l < 16; l++) st[i][l] = sha256_h0[i];
    const uint8_t *p[16];
    for (size_t k = 0; k < 16; k++) p[k] = data[idx[k < n ? k : 0]];
    size_t whole = size / 64;
    if (whole) blocks(st, p, whole);
    /* The tails, the 0x80 byte, zeros, and the length in bits,
     * big-endian: the same blocks' count in every lane. */
    uint8_t last[16][128];
    size_t rest = size - whole * 64, nb = rest < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)size * 8;
    for (size_t k = 0; k < n; k++) {
        memset(last[k], 0, nb);
        memcpy(last[k], data[idx[k]] + whole * 64, rest);
        last[k][rest] = 0x80;
        for (int i = 0; i < 8; i++) last[k][nb - 1 - i] = (uint8_t)(bits >> (8 * i));
    }
    for (size_t k = 0; k < 16; k++) p[k] = last[k < n ? k : 0];
    blocks(st, p, nb / 64);
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < 8; i++) {
            uint8_t *o = out[idx[k]] + 4 * i;
            o[0] = (uint8_t)(st[i][k] >> 24), o[1] = (uint8_t)(st[i][k] >> 16);
            o[2] = (uint8_t)(st[i][k] >> 8), o[3] = (uint8_t)st[i][k];
        }
}
#endif

void onnxio__sha256_many(const uint8_t *const *data, const size_t *size, size_t count, uint8_t (*out)[32])
{
    pthread_once(&sha_once, sha_init);
    /* 64 ranges at a time, those of one size gathered into lanes */
    for (size_t base = 0; base < count; base += 64) {
        size_t end = count - base < 64 ? count : base + 64;
        uint64_t done = 0;
        for (size_t i = base; i < end; i++) {
            if (done >> (i - base) & 1) continue;
#ifdef ONNXIO__SHA_MB
            size_t idx[16], n = 0, lanes = sha_mb == 2 ? 16 : sha_mb == 1 ? 8 : 0;
            for (size_t j = i; j < end && n < lanes; j++)
                if (!(done >> (j - base) & 1) && size[j] == size[i]) {
                    idx[n++] = j;
                    done |= (uint64_t)1 << (j - base);
                }
            if (n >= SHA_MB_LEAST) {
                sha256_lanes(data, idx, n, size[i], out);
                continue;
            }
            for (size_t k = 1; k < n; k++) onnxio__sha256(data[idx[k]], size[idx[k]], out[idx[k]]);
#endif
            onnxio__sha256(data[i], size[i], out[i]);
        }
    }
}

const char *onnxio__sha_many_engine(int engine)
{
    pthread_once(&sha_once, sha_init);
    if (engine >= 0) {
        int have = sha_mb_present();
        sha_mb = engine < have ? engine : have;
    }
    return sha_mb == 2 ? "AVX-512" : sha_mb == 1 ? "AVX2" : "one at a time";
}
