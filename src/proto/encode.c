/* Protobuf serialization of any message, byte-identical to libprotobuf
 * (docs/design.md "Wire rules"): fields in ascending number, proto2
 * presence, packing only where the schema says so, unknown fields last.
 * Exact-size memory and output handed on (a file: io/sink.c): two passes,
 * the size pass caching every message's encoded size, then the write pass
 * emitting bytes into a sink.
 * Memory that grows (onnxio_serialize_to): the write pass alone, each
 * sub-message's length prefix reserved at the width its cached size gives
 * (exact for a tree unchanged since it was parsed or serialized) and
 * corrected once the sub-message is written. */
#include <string.h>

#include "proto/codec.h"
#include "proto/wire.h"

static inline unsigned tag_size(const onnxio_field_desc *f) { return wire_varint_size((uint64_t)f->number << 3); }

static inline uint64_t scalar_wire_value(onnxio_kind kind, const void *p)
{
    switch (kind) {
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_ENUM: {
        int32_t v;
        memcpy(&v, p, 4);
        return (uint64_t)(int64_t)v; /* negative int32: 10-byte sign-extended varint */
    }
    default: {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

/* The size pass's state: the nesting limit, and whether it was passed. */
typedef struct sizing {
    int max_depth;
    bool too_deep;
} sizing;

/* Encoded size of a repeated scalar field `f` holding `a` (packed or not). */
static uint64_t scalars_size(const onnxio_field_desc *f, const onnxio__array *a)
{
    size_t n = a->size;
    if (n == 0) return 0;
    uint64_t payload = 0;
    switch ((onnxio_kind)f->kind) {
    case ONNXIO_KIND_FLOAT: payload = 4 * (uint64_t)n; break;
    case ONNXIO_KIND_DOUBLE: payload = 8 * (uint64_t)n; break;
    case ONNXIO_KIND_INT32:
    case ONNXIO_KIND_ENUM: {
        const int32_t *v = a->data;
        for (size_t i = 0; i < n; i++) payload += wire_varint_size((uint64_t)(int64_t)v[i]);
        break;
    }
    default: {
        const uint64_t *v = a->data;
        for (size_t i = 0; i < n; i++) payload += wire_varint_size(v[i]);
        break;
    }
    }
    if (f->label == ONNXIO_LABEL_PACKED) return tag_size(f) + wire_varint_size(payload) + payload;
    return payload + (uint64_t)n * tag_size(f);
}

/* ---- per-message functions, expanded from schema.def ------------------ */

/* Each message gets its own size and write function, in which every field's
 * kind, label, number and offset is a constant: no dispatch on the
 * descriptor per field (the schema is still listed once: these are macro
 * expansions of its rows). Packed repeated scalars (TensorProto's typed
 * data fields) go through the generic scalars_size / write_scalars. */
#define HAS_(M, F) ((m->base.has >> ONNXIO_FIELD_##M##_##F) & 1)
#define TAG_SIZE_(N) wire_varint_size((uint64_t)(N) << 3)
#define FIELD_DESC_(M, F) (&onnxio_desc_##M.fields[ONNXIO_FIELD_##M##_##F])

#define SZ_OPTIONAL_INT32(M, F, N, T) if (HAS_(M, F)) t += TAG_SIZE_(N) + wire_varint_size((uint64_t)(int64_t)m->F);
#define SZ_OPTIONAL_ENUM SZ_OPTIONAL_INT32
#define SZ_OPTIONAL_INT64(M, F, N, T) if (HAS_(M, F)) t += TAG_SIZE_(N) + wire_varint_size((uint64_t)m->F);
#define SZ_ONEOF_INT64 SZ_OPTIONAL_INT64
#define SZ_OPTIONAL_FLOAT(M, F, N, T) if (HAS_(M, F)) t += TAG_SIZE_(N) + 4;
#define SZ_OPTIONAL_STRING(M, F, N, T) if (HAS_(M, F)) t += TAG_SIZE_(N) + wire_varint_size(m->F.size) + m->F.size;
#define SZ_OPTIONAL_BYTES SZ_OPTIONAL_STRING
#define SZ_ONEOF_STRING SZ_OPTIONAL_STRING
#define SZ_OPTIONAL_RAW SZ_OPTIONAL_STRING
#define SZ_OPTIONAL_MESSAGE(M, F, N, T)                                        \
    if (m->F) {                                                                \
        uint64_t s_ = size_##T(z, m->F, depth + 1);                            \
        t += TAG_SIZE_(N) + wire_varint_size(s_) + s_;                         \
    }
#define SZ_ONEOF_MESSAGE SZ_OPTIONAL_MESSAGE
#define SZ_REPEATED_STRING(M, F, N, T)                                         \
    for (size_t i_ = 0; i_ < m->F.size; i_++)                                  \
        t += TAG_SIZE_(N) + wire_varint_size(m->F.data[i_].size) + m->F.data[i_].size;
#define SZ_REPEATED_BYTES SZ_REPEATED_STRING
#define SZ_REPEATED_MESSAGE(M, F, N, T)                                        \
    for (size_t i_ = 0; i_ < m->F.size; i_++) {                                \
        uint64_t s_ = size_##T(z, m->F.data[i_], depth + 1);                   \
        t += TAG_SIZE_(N) + wire_varint_size(s_) + s_;                         \
    }
#define SZ_SCALARS_(M, F, N, T) if (m->F.size) t += scalars_size(FIELD_DESC_(M, F), (const onnxio__array *)&m->F);
#define SZ_REPEATED_INT64(M, F, N, T)                                          \
    for (size_t i_ = 0; i_ < m->F.size; i_++) t += TAG_SIZE_(N) + wire_varint_size((uint64_t)m->F.data[i_]);
#define SZ_REPEATED_FLOAT(M, F, N, T) t += (uint64_t)m->F.size * (TAG_SIZE_(N) + 4);
#define SZ_PACKED_INT32 SZ_SCALARS_
#define SZ_PACKED_INT64 SZ_SCALARS_
#define SZ_PACKED_UINT64 SZ_SCALARS_
#define SZ_PACKED_FLOAT SZ_SCALARS_
#define SZ_PACKED_DOUBLE SZ_SCALARS_

#define EACH_MESSAGE(M) static uint64_t size_##M(sizing *z, onnxio_##M *m, int depth);
#include "proto/schema_messages.h"

/* `depth` is 0 for the top-level message. Past max_depth the pass stops
 * descending (the sizes are then meaningless and too_deep says so): the
 * writer never emits nesting that a reader with the same limit refuses. */
#define ONNXIO_MESSAGE(M, FULL)                                                \
    static uint64_t size_##M(sizing *z, onnxio_##M *m, int depth)              \
    {                                                                          \
        if (depth > z->max_depth) {                                            \
            z->too_deep = true;                                                \
            return 0;                                                          \
        }                                                                      \
        uint64_t t = 0;
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T) SZ_##LABEL##_##KIND(M, F, N, T)
#define ONNXIO_END_MESSAGE(M)                                                  \
        t += m->base.unknown.size;                                             \
        m->base.cached_size = t;                                               \
        return t;                                                              \
    }
#include "proto/schema_messages.h"

static uint64_t message_size(sizing *z, onnxio_message *m, int depth)
{
#define EACH_MESSAGE(M) if (m->desc == &onnxio_desc_##M) return size_##M(z, (onnxio_##M *)m, depth);
#include "proto/schema_messages.h"
    return 0; /* not a message of the schema: unreachable */
}

static onnxio_status too_deep(const onnxio_message *m, int max_depth)
{
    return onnxio__fail(ONNXIO_ERR_DEPTH, "serialize: %s nests messages deeper than %d levels (max_depth)", m->desc->name,
                        max_depth);
}

onnxio_status onnxio__size_pass(void *msg, int max_depth, uint64_t *size)
{
    sizing z = {onnxio__depth_limit(max_depth), false};
    onnxio_message *m = msg;
    *size = message_size(&z, m, 0);
    if (z.too_deep) {
        m->cached_size = ONNXIO_SIZE_TOO_DEEP;
        *size = ONNXIO_SIZE_TOO_DEEP;
        return too_deep(m, z.max_depth);
    }
    return ONNXIO_OK;
}

ONNXIO_API uint64_t onnxio_serialized_size(void *msg)
{
    uint64_t size = 0;
    if (msg) onnxio__size_pass(msg, 0, &size);
    return size;
}

/* ---- sink ----------------------------------------------------------- */

onnxio_status onnxio__sink_flush(onnxio__sink *s)
{
    if (!s->out || s->pos == 0 || s->status) return s->status;
    s->status = s->out(s->out_user, s->buf, s->pos, s->written, false);
    s->written += s->pos;
    s->pos = 0;
    return s->status;
}

/* Memory output: room for `n` more bytes, from the grow callback when
 * there is one (at least doubling, so that growth costs O(size) in all). */
static int sink_grow(onnxio__sink *s, size_t n)
{
    if (s->status) return 0;
    if (!s->grow) {
        s->status = onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "serialize: destination too small");
        return 0;
    }
    if (n > SIZE_MAX / 2 - s->pos) {
        s->status = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "serialize: output larger than memory");
        return 0;
    }
    size_t cap = s->cap > SIZE_MAX / 4 ? SIZE_MAX / 2 : 2 * s->cap;
    if (cap < s->pos + n) cap = s->pos + n;
    if (cap < 256) cap = 256;
    uint8_t *b = s->grow(s->grow_user, s->buf, s->pos, cap);
    if (!b) {
        s->status = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "serialize: out of memory growing the output to %zu bytes", cap);
        return 0;
    }
    s->buf = b;
    s->cap = cap;
    return 1;
}

/* Makes room for `n` (small) bytes at s->buf + s->pos. */
static inline int sink_room(onnxio__sink *s, size_t n)
{
    if (ONNXIO_LIKELY(s->cap - s->pos >= n)) return 1;
    if (!s->out) return sink_grow(s, n);
    return onnxio__sink_flush(s) == ONNXIO_OK;
}

static void sink_put(onnxio__sink *s, const void *data, size_t n)
{
    if (s->status || n == 0) return;
    if (s->out && (n >= ONNXIO__SINK_DIRECT || n > s->cap - s->pos)) {
        if (onnxio__sink_flush(s)) return;
        if (n >= ONNXIO__SINK_DIRECT || n > s->cap) {
            /* Large runs go to `out` as they are, at their offset. */
            s->status = s->out(s->out_user, data, n, s->written, true);
            s->written += n;
            return;
        }
    }
    if (s->cap - s->pos < n && !sink_grow(s, n)) return;
    memcpy(s->buf + s->pos, data, n);
    s->pos += n;
}

static inline void sink_varint(onnxio__sink *s, uint64_t v)
{
    if (!sink_room(s, s->cap - s->pos >= 10 ? 10 : wire_varint_size(v))) return;
    s->pos = (size_t)(wire_write_varint(s->buf + s->pos, v) - s->buf);
}

static inline void sink_tag(onnxio__sink *s, const onnxio_field_desc *f, unsigned wt)
{
    sink_varint(s, wire_tag(f->number, wt));
}

/* ---- write pass ----------------------------------------------------- */

static void write_scalar(onnxio__sink *s, onnxio_kind kind, const void *p)
{
    size_t need = kind == ONNXIO_KIND_FLOAT ? 4 : kind == ONNXIO_KIND_DOUBLE ? 8
                : s->cap - s->pos >= 10 ? 10 : wire_varint_size(scalar_wire_value(kind, p));
    if (!sink_room(s, need)) return;
    if (kind == ONNXIO_KIND_FLOAT) {
        memcpy(s->buf + s->pos, p, 4);
        s->pos += 4;
    } else if (kind == ONNXIO_KIND_DOUBLE) {
        memcpy(s->buf + s->pos, p, 8);
        s->pos += 8;
    } else {
        s->pos = (size_t)(wire_write_varint(s->buf + s->pos, scalar_wire_value(kind, p)) - s->buf);
    }
}

static unsigned scalar_wire_type(onnxio_kind kind)
{
    return kind == ONNXIO_KIND_FLOAT ? WIRE_FIXED32 : kind == ONNXIO_KIND_DOUBLE ? WIRE_FIXED64 : WIRE_VARINT;
}

/* A repeated scalar field `f` holding `a` (packed or not). */
static void write_scalars(onnxio__sink *s, const onnxio_field_desc *f, const onnxio__array *a)
{
    onnxio_kind kind = (onnxio_kind)f->kind;
    size_t n = a->size;
    if (n == 0) return;
    size_t es = onnxio__elem_size(f);
    if (f->label == ONNXIO_LABEL_PACKED) {
        uint64_t payload = 0;
        if (kind == ONNXIO_KIND_FLOAT || kind == ONNXIO_KIND_DOUBLE) {
            payload = (uint64_t)n * es;
            sink_tag(s, f, WIRE_LEN);
            sink_varint(s, payload);
            sink_put(s, a->data, (size_t)payload); /* little-endian host: the array is the wire form */
            return;
        }
        for (size_t i = 0; i < n; i++) payload += wire_varint_size(scalar_wire_value(kind, (const char *)a->data + i * es));
        sink_tag(s, f, WIRE_LEN);
        sink_varint(s, payload);
        for (size_t i = 0; i < n && !s->status; i++) write_scalar(s, kind, (const char *)a->data + i * es);
        return;
    }
    unsigned wt = scalar_wire_type(kind);
    for (size_t i = 0; i < n && !s->status; i++) {
        sink_tag(s, f, wt);
        write_scalar(s, kind, (const char *)a->data + i * es);
    }
}

/* Copies n <= 16 bytes without a call (names and other short strings). */
static ONNXIO_ALWAYS_INLINE void copy_short(uint8_t *dst, const uint8_t *src, size_t n)
{
    uint64_t a, b;
    uint32_t c, d;
    if (n >= 8) {
        memcpy(&a, src, 8);
        memcpy(&b, src + n - 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4) {
        memcpy(&c, src, 4);
        memcpy(&d, src + n - 4, 4);
        memcpy(dst, &c, 4);
        memcpy(dst + n - 4, &d, 4);
    } else {
        for (size_t i = 0; i < n; i++) dst[i] = src[i];
    }
}

/* A tag and a length-delimited value (string, bytes, payload). */
static ONNXIO_ALWAYS_INLINE void put_len(onnxio__sink *s, uint32_t tag, const void *data, size_t n)
{
    if (ONNXIO_LIKELY(n <= 16 && s->cap - s->pos >= 32)) {
        uint8_t *p = wire_write_varint(s->buf + s->pos, tag);
        *p++ = (uint8_t)n;
        copy_short(p, data, n);
        s->pos = (size_t)(p + n - s->buf);
        return;
    }
    if (ONNXIO_LIKELY(n <= 256 && s->cap - s->pos >= n + 15)) {
        uint8_t *p = wire_write_varint(s->buf + s->pos, tag);
        p = wire_write_varint(p, n);
        memcpy(p, data, n);
        s->pos = (size_t)(p + n - s->buf);
        return;
    }
    sink_varint(s, tag);
    sink_varint(s, n);
    sink_put(s, data, n);
}

/* A tag and a varint. */
static inline void put_varint(onnxio__sink *s, uint32_t tag, uint64_t v)
{
    if (s->cap - s->pos < 15 && !sink_room(s, wire_varint_size(tag) + wire_varint_size(v))) return;
    uint8_t *p = wire_write_varint(s->buf + s->pos, tag);
    s->pos = (size_t)(wire_write_varint(p, v) - s->buf);
}

/* A TensorProto's raw_data; refused when it was not loaded. */
static void put_raw(onnxio__sink *s, const onnxio_TensorProto *t, uint32_t tag)
{
    const onnxio_span *v = &t->raw_data;
    if (v->size && !v->data && s->defer && s->out) {
        /* A streaming save's placeholder: its tag and length now, its bytes
         * a hole at their offset, filled when they come. */
        put_varint(s, tag, v->size);
        if (onnxio__sink_flush(s)) return;
        s->status = s->defer(s->defer_user, t, s->written);
        s->written += v->size;
        return;
    }
    if (v->size && !v->data) {
        s->status = onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD, "tensor '%s': raw_data (%zu bytes) was not loaded (skip_raw_data)",
                                 t->name.data ? t->name.data : "", v->size);
        return;
    }
    put_len(s, tag, v->data, v->size);
}

#define TAG_(N, WT) (((uint32_t)(N) << 3) | (WT))
#define WR_OPTIONAL_INT32(M, F, N, T) if (HAS_(M, F)) put_varint(s, TAG_(N, WIRE_VARINT), (uint64_t)(int64_t)m->F);
#define WR_OPTIONAL_ENUM WR_OPTIONAL_INT32
#define WR_OPTIONAL_INT64(M, F, N, T) if (HAS_(M, F)) put_varint(s, TAG_(N, WIRE_VARINT), (uint64_t)m->F);
#define WR_ONEOF_INT64 WR_OPTIONAL_INT64
#define WR_OPTIONAL_FLOAT(M, F, N, T)                                          \
    if (HAS_(M, F) && sink_room(s, TAG_SIZE_(N) + 4)) {                        \
        uint8_t *p_ = wire_write_varint(s->buf + s->pos, TAG_(N, WIRE_FIXED32)); \
        memcpy(p_, &m->F, 4);                                                  \
        s->pos = (size_t)(p_ + 4 - s->buf);                                    \
    }
#define WR_OPTIONAL_STRING(M, F, N, T) if (HAS_(M, F)) put_len(s, TAG_(N, WIRE_LEN), m->F.data, m->F.size);
#define WR_OPTIONAL_BYTES WR_OPTIONAL_STRING
#define WR_ONEOF_STRING WR_OPTIONAL_STRING
#define WR_OPTIONAL_RAW(M, F, N, T) if (HAS_(M, F)) put_raw(s, m, TAG_(N, WIRE_LEN));
/* One pass: a sub-message's length turned out to need `need` bytes where
 * `width` were reserved at `at`: moves its `len` bytes. */
static void resize_length(onnxio__sink *s, size_t at, unsigned width, unsigned need, size_t len)
{
    if (need > width && !sink_room(s, need - width)) return;
    memmove(s->buf + at + need, s->buf + at + width, len);
    s->pos = s->pos + need - width;
}

/* One pass: the tag, and room for the length at the width of the cached
 * size; returns where the length goes (its reserved width in *width). */
static ONNXIO_ALWAYS_INLINE size_t open_sub(onnxio__sink *s, uint32_t tag, uint64_t cached, unsigned *width)
{
    unsigned k = cached && cached != ONNXIO_SIZE_TOO_DEEP ? wire_varint_size(cached) : 1;
    *width = k;
    if (ONNXIO_UNLIKELY(++s->depth > s->max_depth) && !s->status)
        s->status = onnxio__fail(ONNXIO_ERR_DEPTH, "serialize: messages nest deeper than %d levels (max_depth)", s->max_depth);
    if (s->status || !sink_room(s, wire_varint_size(tag) + k)) return 0;
    s->pos = (size_t)(wire_write_varint(s->buf + s->pos, tag) - s->buf);
    size_t at = s->pos;
    s->pos += k;
    return at;
}

/* One pass: the sub-message `sub` now ends at s->pos; writes its length at
 * `at`, moving its bytes when the reserved width was wrong. */
static ONNXIO_ALWAYS_INLINE void close_sub(onnxio__sink *s, size_t at, unsigned width, onnxio_message *sub)
{
    s->depth--;
    if (s->status) return;
    size_t len = s->pos - at - width;
    unsigned need = wire_varint_size(len);
    if (ONNXIO_UNLIKELY(need != width)) {
        resize_length(s, at, width, need, len);
        if (s->status) return;
    }
    wire_write_varint(s->buf + at, len);
    sub->cached_size = len;
}

#define WR_SUB_(N, T, SUB)                                                     \
    if (s->one_pass) {                                                         \
        unsigned w_;                                                           \
        size_t at_ = open_sub(s, TAG_(N, WIRE_LEN), (SUB)->base.cached_size, &w_); \
        write_##T(s, SUB);                                                     \
        close_sub(s, at_, w_, &(SUB)->base);                                   \
    } else {                                                                   \
        put_varint(s, TAG_(N, WIRE_LEN), (SUB)->base.cached_size);             \
        write_##T(s, SUB);                                                     \
    }
#define WR_OPTIONAL_MESSAGE(M, F, N, T) if (m->F) { WR_SUB_(N, T, m->F) }
#define WR_ONEOF_MESSAGE WR_OPTIONAL_MESSAGE
#define WR_REPEATED_STRING(M, F, N, T)                                         \
    for (size_t i_ = 0; i_ < m->F.size; i_++) put_len(s, TAG_(N, WIRE_LEN), m->F.data[i_].data, m->F.data[i_].size);
#define WR_REPEATED_BYTES WR_REPEATED_STRING
#define WR_REPEATED_MESSAGE(M, F, N, T)                                        \
    for (size_t i_ = 0; i_ < m->F.size && !s->status; i_++) {                  \
        if (i_ + ONNXIO__PREFETCH_AHEAD < m->F.size)                           \
            ONNXIO__PREFETCH_MESSAGE(T, m->F.data[i_ + ONNXIO__PREFETCH_AHEAD]); \
        WR_SUB_(N, T, m->F.data[i_])                                           \
    }
#define WR_SCALARS_(M, F, N, T) if (m->F.size) write_scalars(s, FIELD_DESC_(M, F), (const onnxio__array *)&m->F);
#define WR_REPEATED_INT64(M, F, N, T)                                          \
    for (size_t i_ = 0; i_ < m->F.size; i_++) put_varint(s, TAG_(N, WIRE_VARINT), (uint64_t)m->F.data[i_]);
#define WR_REPEATED_FLOAT(M, F, N, T)                                          \
    for (size_t i_ = 0; i_ < m->F.size && sink_room(s, TAG_SIZE_(N) + 4); i_++) { \
        uint8_t *p_ = wire_write_varint(s->buf + s->pos, TAG_(N, WIRE_FIXED32)); \
        memcpy(p_, &m->F.data[i_], 4);                                         \
        s->pos = (size_t)(p_ + 4 - s->buf);                                    \
    }
#define WR_PACKED_INT32 WR_SCALARS_
#define WR_PACKED_INT64 WR_SCALARS_
#define WR_PACKED_UINT64 WR_SCALARS_
#define WR_PACKED_FLOAT WR_SCALARS_
#define WR_PACKED_DOUBLE WR_SCALARS_

#define EACH_MESSAGE(M) static void write_##M(onnxio__sink *s, onnxio_##M *m);
#include "proto/schema_messages.h"

#define ONNXIO_MESSAGE(M, FULL)                                                \
    static void write_##M(onnxio__sink *s, onnxio_##M *m)                      \
    {                                                                          \
        if (s->status) return;
#define ONNXIO_FIELD(M, F, N, KIND, LABEL, ONEOF, T) WR_##LABEL##_##KIND(M, F, N, T)
#define ONNXIO_END_MESSAGE(M)                                                  \
        sink_put(s, m->base.unknown.data, m->base.unknown.size);               \
    }
#include "proto/schema_messages.h"

static void write_message(onnxio__sink *s, onnxio_message *m)
{
#define EACH_MESSAGE(M) if (m->desc == &onnxio_desc_##M) { write_##M(s, (onnxio_##M *)m); return; }
#include "proto/schema_messages.h"
}

onnxio_status onnxio__encode(void *msg, onnxio__sink *sink)
{
    write_message(sink, msg);
    return sink->status;
}

ONNXIO_API onnxio_status onnxio_serialize_into(void *msg, void *dst, uint64_t size)
{
    if (!msg || (!dst && size && size != ONNXIO_SIZE_TOO_DEEP))
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "serialize: NULL argument");
    if (size == ONNXIO_SIZE_TOO_DEEP) return too_deep(msg, onnxio__depth_limit(0));
    if (((onnxio_message *)msg)->cached_size != size)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT,
                            "serialize: destination is %llu bytes but the message needs %llu (call onnxio_serialized_size first)",
                            (unsigned long long)size, (unsigned long long)((onnxio_message *)msg)->cached_size);
    onnxio__sink sink = {.buf = dst, .cap = (size_t)size};
    onnxio_status s = onnxio__encode(msg, &sink);
    if (!s && sink.pos != size)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "serialize: wrote %zu bytes, expected %llu (message changed?)",
                            sink.pos, (unsigned long long)size);
    return s;
}

ONNXIO_API onnxio_status onnxio_serialize_to(void *msg, void *dst, size_t capacity, onnxio_grow_fn grow, void *user,
                                             size_t *size)
{
    if (size) *size = 0;
    if (!msg || !size || (!dst && capacity)) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "serialize: NULL argument");
    onnxio__sink sink = {.buf = dst, .cap = capacity, .one_pass = true,
                         .max_depth = onnxio__depth_limit(0), .grow = grow, .grow_user = user};
    onnxio_message *m = msg;
    write_message(&sink, m);
    if (sink.status) {
        if (sink.status == ONNXIO_ERR_DEPTH) m->cached_size = ONNXIO_SIZE_TOO_DEEP;
        return sink.status;
    }
    m->cached_size = sink.pos;
    *size = sink.pos;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_serialize(void *msg, onnxio_buffer **out)
{
    if (!msg || !out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "serialize: NULL argument");
    return onnxio__serialize(msg, 0, out);
}

onnxio_status onnxio__serialize(void *msg, int max_depth, onnxio_buffer **out)
{
    *out = NULL;
    uint64_t size;
    onnxio_status st = onnxio__size_pass(msg, max_depth, &size);
    if (st) return st;
    if (size > SIZE_MAX) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "serialize: %llu bytes do not fit in memory", (unsigned long long)size);
    onnxio_buffer *b = onnxio_buffer_new((size_t)size, 64);
    if (!b) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "serialize: out of memory for %llu bytes", (unsigned long long)size);
    onnxio_status s = onnxio_serialize_into(msg, onnxio_buffer_data(b), size);
    if (s) {
        onnxio_buffer_unref(b);
        return s;
    }
    *out = b;
    return ONNXIO_OK;
}
