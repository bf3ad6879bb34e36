/* Checksums, in one place: CRC-32 (zlib; zip entries) and SHA-1 (OpenSSL's
 * libcrypto; the external data "checksum" key). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "internal.h"

/* ---- CRC-32 ------------------------------------------------------------ */

uint32_t onnxio__crc32(uint32_t crc, const void *data, uint64_t size)
{
    const Bytef *p = data;
    while (size) {
        uInt n = size > (1u << 30) ? (1u << 30) : (uInt)size;
        crc = (uint32_t)crc32(crc, p, n);
        p += n;
        size -= n;
    }
    return crc;
}

uint32_t onnxio__crc_join(const uint32_t *pieces, uint64_t size)
{
    uint32_t crc = pieces[0];
    size_t n = onnxio__crc_pieces(size);
    for (size_t k = 1; k < n; k++) {
        uint64_t len = k + 1 < n ? ONNXIO__CRC_PIECE : size - (uint64_t)k * ONNXIO__CRC_PIECE;
        crc = (uint32_t)crc32_combine(crc, pieces[k], (z_off_t)len);
    }
    return crc;
}

/* ---- SHA-1 ------------------------------------------------------------- */

/* libcrypto initializes itself on first use, and a failed initialization
 * (out of memory) can leave it half set up: later calls then crash inside
 * it. So onnxio initializes it once, explicitly, checks the result, and
 * never calls into it again after a failure. The SHA-1 implementation is
 * fetched once too (not looked up on every digest). */
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;
static EVP_MD *sha1_md;

static void crypto_init(void)
{
    if (OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1) return;
    sha1_md = EVP_MD_fetch(NULL, "SHA1", NULL);
}

onnxio_status onnxio__sha1_begin(onnxio__sha1 *h)
{
    h->ctx = NULL;
    pthread_once(&crypto_once, crypto_init);
    if (!sha1_md)
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "cannot start OpenSSL's libcrypto for SHA-1 (out of memory?)");
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, sha1_md, NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "cannot start a SHA-1 digest");
    }
    h->ctx = ctx;
    return ONNXIO_OK;
}

onnxio_status onnxio__sha1_update(onnxio__sha1 *h, const void *data, uint64_t size)
{
    const uint8_t *p = data;
    for (uint64_t at = 0; at < size; at += 1u << 30) {
        size_t n = size - at < (1u << 30) ? (size_t)(size - at) : (1u << 30);
        if (EVP_DigestUpdate(h->ctx, p + at, n) != 1) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "SHA-1 digest failed");
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
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    int ok = EVP_DigestFinal_ex(h->ctx, md, &n) == 1 && n == 20;
    EVP_MD_CTX_free(h->ctx);
    h->ctx = NULL;
    if (!ok) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "SHA-1 digest failed");
    for (unsigned i = 0; i < 20; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return ONNXIO_OK;
}

void onnxio__sha1_abort(onnxio__sha1 *h)
{
    EVP_MD_CTX_free(h->ctx);
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
