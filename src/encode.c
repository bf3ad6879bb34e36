/* Table-driven protobuf serialization of any message, byte-identical to
 * libprotobuf (docs/design.md "Wire rules"): fields in ascending number, proto2
 * presence, packing only where the schema says so, unknown fields last.
 * Two passes: the size pass caches every message's encoded size, then the
 * write pass emits bytes into a sink (exact-size memory or a file). */
#include <string.h>

#include "internal.h"
#include "wire.h"

/* Payloads at least this large bypass the file sink's staging buffer. */
#define SINK_DIRECT_WRITE 65536

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

static uint64_t message_size(sizing *z, onnxio_message *m, int depth);

static uint64_t field_size(sizing *z, const onnxio_message *m, const onnxio_field_desc *f, int depth)
{
    const void *member = onnxio__member(m, f);
    onnxio_kind kind = (onnxio_kind)f->kind;
    if (f->label >= ONNXIO_LABEL_REPEATED) {
        const onnxio__array *a = member;
        size_t n = a->size;
        if (n == 0) return 0;
        uint64_t payload = 0;
        switch (kind) {
        case ONNXIO_KIND_FLOAT: payload = 4 * (uint64_t)n; break;
        case ONNXIO_KIND_DOUBLE: payload = 8 * (uint64_t)n; break;
        case ONNXIO_KIND_INT32:
        case ONNXIO_KIND_ENUM: {
            const int32_t *v = a->data;
            for (size_t i = 0; i < n; i++) payload += wire_varint_size((uint64_t)(int64_t)v[i]);
            break;
        }
        case ONNXIO_KIND_INT64:
        case ONNXIO_KIND_UINT64: {
            const uint64_t *v = a->data;
            for (size_t i = 0; i < n; i++) payload += wire_varint_size(v[i]);
            break;
        }
        case ONNXIO_KIND_STRING:
        case ONNXIO_KIND_BYTES: {
            const onnxio_string *v = a->data;
            for (size_t i = 0; i < n; i++) payload += wire_varint_size(v[i].size) + v[i].size;
            return payload + (uint64_t)n * tag_size(f);
        }
        case ONNXIO_KIND_MESSAGE: {
            onnxio_message *const *v = a->data;
            for (size_t i = 0; i < n && !z->too_deep; i++) {
                uint64_t s = message_size(z, v[i], depth + 1);
                payload += wire_varint_size(s) + s;
            }
            return payload + (uint64_t)n * tag_size(f);
        }
        default:
            break;
        }
        if (f->label == ONNXIO_LABEL_PACKED) return tag_size(f) + wire_varint_size(payload) + payload;
        return payload + (uint64_t)n * tag_size(f);
    }
    if (kind == ONNXIO_KIND_MESSAGE) {
        onnxio_message *sub = *(onnxio_message *const *)member;
        if (!sub) return 0;
        uint64_t s = message_size(z, sub, depth + 1);
        return tag_size(f) + wire_varint_size(s) + s;
    }
    if (!((m->has >> f->index) & 1)) return 0;
    switch (kind) {
    case ONNXIO_KIND_FLOAT: return tag_size(f) + 4;
    case ONNXIO_KIND_DOUBLE: return tag_size(f) + 8;
    case ONNXIO_KIND_STRING:
    case ONNXIO_KIND_BYTES: {
        const onnxio_string *s = member;
        return tag_size(f) + wire_varint_size(s->size) + s->size;
    }
    case ONNXIO_KIND_RAW: {
        const onnxio_span *s = member;
        return tag_size(f) + wire_varint_size(s->size) + s->size;
    }
    default:
        return tag_size(f) + wire_varint_size(scalar_wire_value(kind, member));
    }
}

/* `depth` is 0 for the top-level message. Past max_depth the pass stops
 * descending (the sizes are then meaningless and too_deep says so): the
 * writer never emits nesting that a reader with the same limit refuses. */
static uint64_t message_size(sizing *z, onnxio_message *m, int depth)
{
    if (depth > z->max_depth) {
        z->too_deep = true;
        return 0;
    }
    const onnxio_message_desc *desc = m->desc;
    uint64_t total = 0;
    for (size_t i = 0; i < desc->field_count && !z->too_deep; i++) total += field_size(z, m, &desc->fields[i], depth);
    total += m->unknown.size;
    m->cached_size = total;
    return total;
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

/* Writes `n` bytes at file offset `at`: queued on the pool when allowed
 * and there is one, otherwise now. */
static onnxio_status sink_write(onnxio__sink *s, const uint8_t *data, size_t n, uint64_t at, int may_queue)
{
    if (s->sequential) return onnxio__write_all(s->fd, data, n, s->what ? s->what : "the output");
    onnxio__job job = {.kind = ONNXIO__JOB_PWRITE, .fd = s->fd, .offset = at, .src = data, .size = n,
                       .what = s->what ? s->what : "the output file"};
    return may_queue && s->pool ? onnxio__pool_add(s->pool, &job) : onnxio__job_run(&job);
}

onnxio_status onnxio__sink_flush(onnxio__sink *s)
{
    if (s->fd < 0 || s->pos == 0 || s->status) return s->status;
    /* The staging buffer is reused at once, so it is never queued. */
    s->status = sink_write(s, s->buf, s->pos, s->written, 0);
    s->written += s->pos;
    s->pos = 0;
    return s->status;
}

/* Makes room for `n` (small) bytes at s->buf + s->pos. */
static inline int sink_room(onnxio__sink *s, size_t n)
{
    if (ONNXIO_LIKELY(s->cap - s->pos >= n)) return 1;
    if (s->fd < 0) {
        s->status = onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "serialize: destination too small");
        return 0;
    }
    return onnxio__sink_flush(s) == ONNXIO_OK;
}

static void sink_put(onnxio__sink *s, const void *data, size_t n)
{
    if (s->status || n == 0) return;
    if (s->fd >= 0 && (n >= SINK_DIRECT_WRITE || n > s->cap - s->pos)) {
        if (onnxio__sink_flush(s)) return;
        if (n >= SINK_DIRECT_WRITE || n > s->cap) {
            /* Large payloads go straight to their offset in the file, on
             * the pool when there is one. */
            s->status = sink_write(s, data, n, s->written, n >= s->threshold);
            s->written += n;
            return;
        }
    }
    if (s->cap - s->pos < n) {
        s->status = onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "serialize: destination too small");
        return;
    }
    if (s->fd < 0 && s->pool && n >= s->threshold) {
        onnxio__job job = {.kind = ONNXIO__JOB_COPY, .dst = s->buf + s->pos, .src = data, .size = n, .what = "memory"};
        s->status = onnxio__pool_add(s->pool, &job);
    } else {
        memcpy(s->buf + s->pos, data, n);
    }
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

static void write_message(onnxio__sink *s, const onnxio_message *m);

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

static void write_field(onnxio__sink *s, const onnxio_message *m, const onnxio_field_desc *f)
{
    const void *member = onnxio__member(m, f);
    onnxio_kind kind = (onnxio_kind)f->kind;
    if (f->label >= ONNXIO_LABEL_REPEATED) {
        const onnxio__array *a = member;
        size_t n = a->size;
        if (n == 0) return;
        size_t es = onnxio__elem_size(f);
        switch (kind) {
        case ONNXIO_KIND_STRING:
        case ONNXIO_KIND_BYTES: {
            const onnxio_string *v = a->data;
            for (size_t i = 0; i < n; i++) {
                sink_tag(s, f, WIRE_LEN);
                sink_varint(s, v[i].size);
                sink_put(s, v[i].data, v[i].size);
            }
            return;
        }
        case ONNXIO_KIND_MESSAGE: {
            onnxio_message *const *v = a->data;
            for (size_t i = 0; i < n; i++) {
                sink_tag(s, f, WIRE_LEN);
                sink_varint(s, v[i]->cached_size);
                write_message(s, v[i]);
            }
            return;
        }
        default:
            break;
        }
        if (f->label == ONNXIO_LABEL_PACKED) {
            uint64_t payload = 0;
            if (kind == ONNXIO_KIND_FLOAT || kind == ONNXIO_KIND_DOUBLE) {
                payload = (uint64_t)n * es;
                sink_tag(s, f, WIRE_LEN);
                sink_varint(s, payload);
                sink_put(s, a->data, (size_t)payload); /* little-endian host: the array is the wire form */
                return;
            }
            for (size_t i = 0; i < n; i++)
                payload += wire_varint_size(scalar_wire_value(kind, (const char *)a->data + i * es));
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
        return;
    }
    if (kind == ONNXIO_KIND_MESSAGE) {
        const onnxio_message *sub = *(onnxio_message *const *)member;
        if (!sub) return;
        sink_tag(s, f, WIRE_LEN);
        sink_varint(s, sub->cached_size);
        write_message(s, sub);
        return;
    }
    if (!((m->has >> f->index) & 1)) return;
    switch (kind) {
    case ONNXIO_KIND_STRING:
    case ONNXIO_KIND_BYTES: {
        const onnxio_string *v = member;
        sink_tag(s, f, WIRE_LEN);
        sink_varint(s, v->size);
        sink_put(s, v->data, v->size);
        return;
    }
    case ONNXIO_KIND_RAW: {
        const onnxio_span *v = member;
        if (v->size && !v->data) {
            const onnxio_string *name = &((const onnxio_TensorProto *)m)->name;
            s->status = onnxio__fail(ONNXIO_ERR_MISSING_PAYLOAD,
                                     "tensor '%s': raw_data (%zu bytes) was not loaded (skip_raw_data)",
                                     name->data ? name->data : "", v->size);
            return;
        }
        sink_tag(s, f, WIRE_LEN);
        sink_varint(s, v->size);
        sink_put(s, v->data, v->size);
        return;
    }
    default:
        sink_tag(s, f, scalar_wire_type(kind));
        write_scalar(s, kind, member);
        return;
    }
}

static void write_message(onnxio__sink *s, const onnxio_message *m)
{
    const onnxio_message_desc *desc = m->desc;
    for (size_t i = 0; i < desc->field_count && !s->status; i++) write_field(s, m, &desc->fields[i]);
    sink_put(s, m->unknown.data, m->unknown.size);
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
    if (size == ONNXIO_SIZE_TOO_DEEP) return too_deep(msg, ONNXIO_DEFAULT_MAX_DEPTH);
    if (((onnxio_message *)msg)->cached_size != size)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT,
                            "serialize: destination is %llu bytes but the message needs %llu (call onnxio_serialized_size first)",
                            (unsigned long long)size, (unsigned long long)((onnxio_message *)msg)->cached_size);
    onnxio__sink sink = {.buf = dst, .cap = (size_t)size, .fd = -1};
    onnxio_status s = onnxio__encode(msg, &sink);
    if (!s && sink.pos != size)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "serialize: wrote %zu bytes, expected %llu (message changed?)",
                            sink.pos, (unsigned long long)size);
    return s;
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
