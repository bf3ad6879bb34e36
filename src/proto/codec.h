/* The proto layer (docs/design.md, "Layers"): the schema, message
 * operations, the wire codec (decode.c, encode.c), the text formats and
 * the format rules (format.c), on bytes in memory. It reaches payload
 * placement, read-ahead and output only through what its callers pass in
 * (onnxio__decode_config.payload and .reached, onnxio__sink.out), as
 * upb's and nanopb's codecs do: it opens, reads and writes no file and
 * starts no thread. */
#ifndef ONNXIO_PROTO_CODEC_H
#define ONNXIO_PROTO_CODEC_H

#include "memory/memory.h"

/* ---- format.c ----------------------------------------------------------- */

/* For `size` bytes at `data` that onnxio_detect_format calls text: what
 * kind of text they look like (JSON, protobuf text format, ONNX's textual
 * syntax) and which call reads it, as one clause for an error's context;
 * NULL for anything else. */
const char *onnxio__text_hint(const void *data, size_t size);

/* The extension table's row of the extension `ext` (`n` bytes, with its
 * dot), NULL when it has none. */
const onnxio_file_extension *onnxio__extension_row(const char *ext, size_t n);
/* What a load reads a file of `size` bytes named as the extension row
 * `named` says (NULL: a name of no known format) as, from its first
 * `head_size` bytes at `head` (at least min(size, 64) of them; the text
 * style is read from all of them): onnxio_detect_kind's rule. */
onnxio_file_kind onnxio__detect_kind(const void *head, size_t head_size, uint64_t size,
                                     const onnxio_file_extension *named);
/* Whether a file load reads a file of `kind` as text: one named as text
 * at once (`binary` ONNXIO_OK: nothing tried yet); one whose content only
 * looks like text once binary protobuf refused it with `binary` (what
 * text makes of protobuf: ONNXIO_ERR_DECODE, _DEPTH or _EXPANSION). */
static inline bool onnxio__reads_text(const onnxio_file_kind *kind, onnxio_status binary)
{
    if (kind->format != ONNXIO_FORMAT_TEXT) return false;
    if (kind->text_by_name) return binary == ONNXIO_OK;
    return binary == ONNXIO_ERR_DECODE || binary == ONNXIO_ERR_DEPTH || binary == ONNXIO_ERR_EXPANSION;
}
/* text_parse.c: the text route of a file load (model.c, slice.c): a
 * message of type `desc` read from `size` bytes of text in `style`
 * (onnxio_text_parse), within the load's resolved max_depth and
 * max_expansion. */
onnxio_status onnxio__parse_text(const onnxio_message_desc *desc, const void *data, size_t size,
                                 onnxio_text_style style, const onnxio_parse_options *cfg, onnxio_arena *arena,
                                 void **out);

/* The rule for a relative path inside a model's reach (an external data
 * location, an archive entry name): NULL when `p` (`n` bytes) keeps it;
 * else what is wrong ("is empty", "contains a NUL byte", "is an absolute
 * path", "has a '..' component"), and *status the status for that. */
const char *onnxio__path_problem(const char *p, size_t n, onnxio_status *status);
/* The names Windows reads otherwise than POSIX, refused by
 * onnxio__path_problem in the Windows build only (ONNXIO__OS_WINDOWS; in
 * every build a test can call this one): besides what path_problem itself
 * refuses (drive letters C:\x and C:x, a leading '/' or backslash as of
 * \\server\share and \\?\C:\x, '..' between either separator), a ':'
 * in a component (an alternate data stream: "name:stream", "x::$DATA";
 * ONNXIO_ERR_EXTERNAL_DATA), a control character or one of <>"|?*
 * (ONNXIO_ERR_EXTERNAL_DATA), a component ending in '.' or ' ' (Win32 drops
 * them and opens another name; ONNXIO_ERR_EXTERNAL_DATA), a device name in
 * any component (CON, PRN, AUX, NUL, COM0-9, LPT0-9, their superscript
 * digits, CONIN$, CONOUT$; any case, with or without an extension:
 * "a/con.txt/b"; ONNXIO_ERR_PATH_SPECIAL). Bytes only: no file is looked
 * at. */
const char *onnxio__windows_path_problem(const char *p, size_t n, onnxio_status *status);

/* Length of the well-formed UTF-8 sequence of a non-ASCII character at p
 * (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), or 0
 * (text.c; the text writers and readers). */
size_t onnxio__utf8_sequence(const unsigned char *p, size_t n);
/* The UTF-8 bytes of code point `cp` (at most U+10FFFF, not a surrogate)
 * into `out`; returns how many (1 to 4). */
size_t onnxio__utf8_encode(uint32_t cp, char out[4]);

/* The one JSON string reader (text.c; onnxio_json_write_string is its
 * writer), for the JSON text format and safetensors headers. */
typedef enum onnxio__json_error {
    ONNXIO__JSON_OK,
    ONNXIO__JSON_UNTERMINATED,   /* the input ends inside the string */
    ONNXIO__JSON_CONTROL,        /* a raw character below 0x20 */
    ONNXIO__JSON_ESCAPE,         /* a backslash and no valid escape */
    ONNXIO__JSON_HEX,            /* \u and not four hex digits */
    ONNXIO__JSON_LOW_SURROGATE,  /* \uDC00-\uDFFF with no high surrogate before it */
    ONNXIO__JSON_HIGH_SURROGATE, /* \uD800-\uDBFF with no low surrogate after it */
    ONNXIO__JSON_NUL,            /* \u0000, refused with ONNXIO__JSON_NO_NUL */
    ONNXIO__JSON_UTF8,           /* raw bytes that are not UTF-8, refused with ONNXIO__JSON_STRICT_UTF8 */
    ONNXIO__JSON_SINK,           /* `put` failed */
} onnxio__json_error;
#define ONNXIO__JSON_NO_NUL 1u       /* refuse \u0000 (a name that becomes a C string) */
#define ONNXIO__JSON_STRICT_UTF8 2u  /* refuse raw bytes that are not well-formed UTF-8 */
/* Reads the JSON string (RFC 8259) whose opening quote is at *p, within
 * `end`, handing its decoded bytes to put(ctx, bytes, n) in order (runs of
 * raw bytes, then each escape's UTF-8); the decoded bytes never outnumber
 * the encoded ones, so `put` may write over the input behind *p. On
 * success *p is past the closing quote. On failure *p is where the
 * problem is (the opening quote for UNTERMINATED, the escape's backslash
 * for escapes and surrogates). */
onnxio__json_error onnxio__json_string(const char **p, const char *end, unsigned flags,
                                       int (*put)(void *ctx, const char *bytes, size_t n), void *ctx);

/* text.c: writes `msg` in opts' text style (onnxio_text_format's rules),
 * handing the text to put(user, bytes, n) as a buffer of 4 KiB or more
 * fills, in order (put returns nonzero when it fails: ONNXIO_ERR_IO).
 * `what` names the call in errors. */
onnxio_status onnxio__text_write(const void *msg, const onnxio_text_options *opts, const char *what,
                                 int (*put)(void *user, const char *bytes, size_t n), void *user);

/* Refuses a payload length that is not what the tensor's data_type and dims
 * need (onnxio_tensor_raw_size) with ONNXIO_ERR_EXTERNAL_DATA; tensors
 * without a fixed size pass. `where` names the file or entry. */
onnxio_status onnxio__check_raw_size(const onnxio_TensorProto *t, uint64_t length, const char *where);
/* The raw_data bytes (`bytes` of them: onnxio_tensor_raw_size) of a
 * tensor whose values are in its typed field, as onnx's
 * numpy_helper.to_array reads them: float_data (FLOAT, COMPLEX64),
 * double_data (DOUBLE, COMPLEX128), int64_data (INT64), uint64_data
 * (UINT32, UINT64), int32_data for the rest; each value cut to its low
 * bytes, little-endian (the bits of the 16-bit floats, BOOL, 8-bit floats;
 * for 4- and 2-bit types each int32_data value is one packed byte; FLOAT6
 * values, one per element, are packed as raw_data packs them). Written
 * to `dst` (NULL: only checked). `status` (the caller's: ERR_SLICE,
 * ERR_SAFETENSORS), naming the tensor, when the field holds a number of
 * values other than the shape needs. Shared by the slice reader and the
 * safetensors writer. */
onnxio_status onnxio__typed_to_raw(const onnxio_TensorProto *t, uint64_t bytes, uint8_t *dst, onnxio_status status);

/* Makes room for `extra` more elements of `elem_size`; NULL when out of memory. */
void *onnxio__array_reserve(onnxio_arena *arena, onnxio__array *a, size_t elem_size, size_t extra);
/* Size in bytes of one element of a repeated field. */
size_t onnxio__elem_size(const onnxio_field_desc *f);
onnxio_status onnxio__append_unknown(onnxio_arena *arena, onnxio_message *m, const uint8_t *p, size_t n);
/* onnxio_message_clone with its status (NO_MEMORY or DEPTH). */
onnxio_status onnxio__clone(onnxio_arena *arena, const void *src, void **out);

/* Whether field `f` of `msg` is present (onnxio_field_present, inline
 * for the codec): a repeated field has an element, a message field its
 * struct, any other field its has-bit. */
static inline int onnxio__field_present(const void *msg, const onnxio_field_desc *f)
{
    const void *member = onnxio__member(msg, f);
    if (f->label >= ONNXIO_LABEL_REPEATED) return ((const onnxio__array *)member)->size != 0;
    if (f->kind == ONNXIO_KIND_MESSAGE) return *(void *const *)member != NULL;
    return (int)((((const onnxio_message *)msg)->has >> f->index) & 1);
}
/* The other member of f's oneof that is present in `m`, or NULL (NULL too
 * when f is in no oneof). */
static inline const onnxio_field_desc *onnxio__oneof_other(const onnxio_message *m, const onnxio_field_desc *f)
{
    if (!f->oneof) return NULL;
    for (size_t i = 0; i < m->desc->field_count; i++) {
        const onnxio_field_desc *g = &m->desc->fields[i];
        if (g != f && g->oneof == f->oneof && onnxio__field_present(m, g)) return g;
    }
    return NULL;
}

/* decode.c */
typedef struct onnxio__decode_config {
    onnxio_arena *arena;
    onnxio_buffer *owner;   /* keeps input alive in no_copy mode */
    const uint8_t *base;    /* start of the whole input (for error offsets) */
    bool skip_raw_data;
    int max_depth;
    /* Where raw_data goes: called with payload_ctx for every TensorProto
     * payload read, its `size` bytes at `data` (inside the input), so that
     * the codec knows nothing of placement, pools or files (a load passes
     * model.c's take_payload, which hands them to payload.c). */
    onnxio_status (*payload)(void *ctx, onnxio_TensorProto *tensor, const uint8_t *data, size_t size);
    void *payload_ctx;
    /* Called with reached_ctx when the parse first stands at or past
     * `next` (the value the previous call returned; 0 before the first
     * call, so the first field makes one), with where it stands: the
     * caller may read ahead of the parse in a file mapping
     * (onnxio__read_ahead in file.c) and returns the next position to be
     * called at (UINTPTR_MAX: never again). NULL: never called. */
    uintptr_t (*reached)(void *ctx, const uint8_t *at);
    void *reached_ctx;
    /* Set when a TensorProto with data_location EXTERNAL was read, so that
     * loading a model without external data skips the walk that looks for
     * it (NULL: not wanted). */
    bool *saw_external;
} onnxio__decode_config;
onnxio_status onnxio__decode(const onnxio__decode_config *cfg, onnxio_message *msg,
                             const uint8_t *data, size_t size);

/* encode.c: a destination for serialized bytes, in memory or handed on.
 * The size pass must have run (onnxio__size_pass), except with one_pass. */
typedef struct onnxio__sink {
    uint8_t *buf;        /* memory output: the whole destination; handed on: a staging buffer */
    size_t pos;
    size_t cap;
    onnxio_status status;
    /* Output handed on (NULL: memory output). `out` takes bytes at their
     * offset `at` of the output: what the staging buffer holds, when it
     * is full and at onnxio__sink_flush (`kept` false: buf is reused once
     * `out` returns), and any run of at least ONNXIO__SINK_DIRECT bytes of
     * the message itself (a payload, a long string), never staged (`kept`
     * true: the bytes outlive the encode, so `out` may write them later,
     * as io/sink.c does on the pool). `written` is the offset of buf[0]. */
    onnxio_status (*out)(void *user, const uint8_t *data, size_t n, uint64_t at, bool kept);
    void *out_user;
    uint64_t written;
    /* One pass (onnxio_serialize_to): memory output without a size pass.
     * A sub-message's length is written where its cached size (the last
     * parse's or serialization's) says, and moved once the real one is
     * known if its varint is longer or shorter; `grow` makes room. */
    bool one_pass;
    int depth, max_depth;
    onnxio_grow_fn grow; /* NULL: a full destination is an error */
    void *grow_user;
    /* Holes (output handed on): a raw_data without its bytes (data NULL,
     * size > 0), a streaming save's placeholder, is written as its tag and
     * length, its bytes left for later at offset `at`, which defer
     * records (NULL: such a payload is an error, ONNXIO_ERR_MISSING_PAYLOAD). */
    onnxio_status (*defer)(void *user, const onnxio_TensorProto *t, uint64_t at);
    void *defer_user;
} onnxio__sink;
/* Runs at least this long are handed to onnxio__sink.out as they are. */
#define ONNXIO__SINK_DIRECT 65536
onnxio_status onnxio__encode(void *msg, onnxio__sink *sink);
/* The size pass with a nesting limit (0: the default; capped): ERR_DEPTH,
 * and *size ONNXIO_SIZE_TOO_DEEP, past it. */
onnxio_status onnxio__size_pass(void *msg, int max_depth, uint64_t *size);
/* onnxio_serialize with a nesting limit. */
onnxio_status onnxio__serialize(void *msg, int max_depth, onnxio_buffer **out);
onnxio_status onnxio__sink_flush(onnxio__sink *sink);

/* A tensor's name for messages ("" when it has none). */
static inline const char *onnxio__tensor_name(const onnxio_TensorProto *t)
{
    return t->name.data ? t->name.data : "";
}

/* Block digests (docs/design.md, "Block digests"): the SHA-256 of each
 * `block` bytes of a tensor's payload, the last block shorter, kept in
 * the tensor's metadata_props under ONNXIO__DIGEST_KEY as "BLOCK:HEX",
 * BLOCK in decimal and HEX the digests' 64 hex digits each, in order. */
#define ONNXIO__DIGEST_KEY "onnxio.sha256"
typedef struct onnxio__digests {
    uint64_t block;  /* a power of two from 4 KiB to ONNXIO__CRC_PIECE */
    size_t count;    /* ceil(length / block) */
    const char *hex; /* count * 64 hex digits, in the tensor's arena */
} onnxio__digests;
/* The digests of tensor `t` for a payload of `length` bytes: *found false
 * when it has none; ONNXIO_ERR_EXTERNAL_DATA naming the tensor when its
 * value is malformed (a block size out of range, a digit count other than
 * the length needs, a character that is no hex digit). */
onnxio_status onnxio__digests_find(const onnxio_TensorProto *t, uint64_t length, onnxio__digests *out, bool *found);
/* The same rules for a record's value of `size` bytes (an archive's
 * digests entry holds them by entry name), for tensor `t`. */
onnxio_status onnxio__digests_parse(const char *value, size_t size, const onnxio_TensorProto *t, uint64_t length,
                                    onnxio__digests *out);
/* The 32-byte digests of a checked record (onnxio__digests_find). */
void onnxio__digests_decode(const onnxio__digests *d, uint8_t (*out)[32]);
/* Sets t's record (replacing one there) to `count` digests of `block`. */
onnxio_status onnxio__digests_set(onnxio_arena *arena, onnxio_TensorProto *t, uint64_t block, const uint8_t (*d)[32],
                                  size_t count);
/* Removes t's record, if any (its bytes changed place, or were checked). */
void onnxio__digests_remove(onnxio_TensorProto *t);

/* A tensor whose payload is in external data (data_location EXTERNAL). */
static inline bool onnxio__is_external(const onnxio_TensorProto *t)
{
    return onnxio_has(t, ONNXIO_FIELD_TensorProto_data_location) &&
           t->data_location == ONNXIO_TensorProto_DataLocation_EXTERNAL;
}

/* The fields of TensorProto that hold its values other than raw_data
 * (onnx-ml.proto: float_data, int32_data, string_data, int64_data,
 * double_data, uint64_data), in field-index form; ONNXIO__TYPED_FIELDS of
 * them. */
#define ONNXIO__TYPED_FIELDS 6
extern const unsigned onnxio__tensor_typed_fields[ONNXIO__TYPED_FIELDS];

/* A tensor holding values in one of those fields. */
static inline bool onnxio__has_typed_data(const onnxio_TensorProto *t)
{
    for (size_t i = 0; i < ONNXIO__TYPED_FIELDS; i++) {
        const onnxio_field_desc *f = &onnxio_desc_TensorProto.fields[onnxio__tensor_typed_fields[i]];
        if (((const onnxio__array *)onnxio__member(t, f))->size) return true;
    }
    return false;
}

/* message.c: calls fn(msg, parent, field) for every message of type
 * `target` (NULL: every message) in the tree under `root` (depth first, in
 * field order; onnxio_visit is the public form), where
 * `parent`/`field` say where it was found (NULL for the root itself). */
typedef onnxio_status (*onnxio__visit_fn)(onnxio_message *msg, onnxio_message *parent,
                                          const onnxio_field_desc *field, void *ctx);
onnxio_status onnxio__visit(onnxio_message *root, const onnxio_message_desc *target,
                            onnxio__visit_fn fn, void *ctx);

#endif
