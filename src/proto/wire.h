/* Protobuf wire format primitives: varint, zigzag, fixed32/64, tags
 * (https://protobuf.dev/programming-guides/encoding/). Reads are bounds
 * checked against `end`; writes go to memory the caller sized exactly with
 * the *_size functions. */
#ifndef ONNXIO_WIRE_H
#define ONNXIO_WIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum {
    WIRE_VARINT = 0,
    WIRE_FIXED64 = 1,
    WIRE_LEN = 2,
    WIRE_START_GROUP = 3,
    WIRE_END_GROUP = 4,
    WIRE_FIXED32 = 5,
};

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "onnxio assumes a little-endian host (fixed32/fixed64 and raw_data are little-endian on the wire)"
#endif

/* Reads a varint of at most `max_bytes` bytes. Returns the byte after it,
 * or NULL when the input ends first or the varint is longer. */
static inline const uint8_t *wire_read_varint_upto(const uint8_t *p, const uint8_t *end, uint64_t *out,
                                                   unsigned max_bytes)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 7 * max_bytes; shift += 7) {
        if (p >= end) return NULL;
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *out = v;
            return p;
        }
    }
    return NULL;
}

/* Reads a varint of at most 10 bytes. Returns the byte after it, or NULL
 * when the input ends first or the varint is longer than 10 bytes. */
static inline const uint8_t *wire_read_varint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    if (p < end && *p < 0x80) {
        *out = *p;
        return p + 1;
    }
    return wire_read_varint_upto(p, end, out, 10);
}

/* Reads a tag: a varint of at most 5 bytes, as libprotobuf and upb read
 * one (a longer tag, even one padded with 0x80 bytes, is a corrupt
 * message). Returns the byte after it, or NULL when the input ends first
 * or the tag is longer. A value past 32 bits is the caller's to refuse
 * (its field number is past 2^29 - 1). */
static inline const uint8_t *wire_read_tag(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    return wire_read_varint_upto(p, end, out, 5);
}

static inline unsigned wire_varint_size(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *wire_write_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint32_t wire_load32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t wire_load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint8_t *wire_store32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
    return p + 4;
}

static inline uint8_t *wire_store64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
    return p + 8;
}

static inline uint64_t wire_tag(uint32_t number, unsigned wire_type)
{
    return ((uint64_t)number << 3) | wire_type;
}

static inline uint64_t wire_zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t wire_unzigzag64(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

#endif
