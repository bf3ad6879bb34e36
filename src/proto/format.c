/* The rules of the formats, each in one place (docs/design.md, "One rule,
 * one home"): what bytes are (by their content, and with the row of their
 * file's extension), the extension table, how a tensor's external_data
 * keys read and what a location may say, and how many bits an element of
 * each data type takes. All on bytes in memory: reading a file's first
 * bytes, and taking a path apart, are the io layer's (file.c). The CLI and
 * the Python package call these; nothing else spells them out. */
#include <string.h>

#include "proto/codec.h"

/* ---- what a file is ------------------------------------------------- */

/* APPNOTE 4.3.7 and 4.3.16: the local file header and the end of central
 * directory record (the whole of an empty archive). */
static const uint8_t SIG_LOCAL[4] = {'P', 'K', 3, 4};
static const uint8_t SIG_END[4] = {'P', 'K', 5, 6};
/* The smallest archive: one end of central directory record. */
#define MIN_ARCHIVE 22
/* Bytes looked at to tell text from protobuf. */
#define TEXT_PROBE 64

static bool looks_like_text(const uint8_t *p, size_t n)
{
    if (n > TEXT_PROBE) n = TEXT_PROBE;
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
    if (i == n) return false;
    uint8_t c = p[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '<' || c == '{' || c == '#')) return false;
    for (; i < n; i++) {
        uint8_t b = p[i];
        /* Control bytes other than white space are never text; bytes from
         * 0x80 may be UTF-8. */
        if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F) return false;
    }
    return true;
}

ONNXIO_API onnxio_format onnxio_detect_format(const void *data, size_t size)
{
    const uint8_t *p = data;
    if (!p || size == 0) return ONNXIO_FORMAT_PROTOBUF;
    if (size >= 4 && (memcmp(p, SIG_LOCAL, 4) == 0 || memcmp(p, SIG_END, 4) == 0)) return ONNXIO_FORMAT_ARCHIVE;
    if (p[0] == 0 && size >= MIN_ARCHIVE) return ONNXIO_FORMAT_ARCHIVE;
    if (looks_like_text(p, size)) return ONNXIO_FORMAT_TEXT;
    return ONNXIO_FORMAT_PROTOBUF;
}

/* White space, and '#' comments to the end of their line (both text
 * formats that have comments write them so). */
static size_t skip_text_space(const uint8_t *p, size_t n, size_t i)
{
    for (;;) {
        while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r' || p[i] == '\v' || p[i] == '\f'))
            i++;
        if (i == n || p[i] != '#') return i;
        const uint8_t *nl = memchr(p + i, '\n', n - i);
        i = nl ? (size_t)(nl - p) : n;
    }
}

ONNXIO_API onnxio_text_style onnxio_detect_text_style(const void *data, size_t size)
{
    const uint8_t *p = data;
    size_t i = p ? skip_text_space(p, size, 0) : size;
    if (i == size) return ONNXIO_TEXT_PROTO;
    if (p[i] == '{') return ONNXIO_TEXT_JSON;
    if (p[i] == '<') return ONNXIO_TEXT_ONNX;
    /* a name, then '(' or '=': a graph, function or node of ONNX's textual
     * syntax without its header ("agraph (x) => (y) {...}", "y = Relu(x)");
     * protobuf text format puts ':', '{' or '<' after a field's name */
    if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || p[i] == '_')) return ONNXIO_TEXT_PROTO;
    while (i < size && ((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') ||
                        p[i] == '_'))
        i++;
    i = skip_text_space(p, size, i);
    return i < size && (p[i] == '(' || p[i] == '=') ? ONNXIO_TEXT_ONNX : ONNXIO_TEXT_PROTO;
}

const char *onnxio__text_hint(const void *data, size_t size)
{
    if (onnxio_detect_format(data, size) != ONNXIO_FORMAT_TEXT) return NULL;
    onnxio_text_style style = onnxio_detect_text_style(data, size);
    if (style == ONNXIO_TEXT_JSON)
        return "the file is text, not binary protobuf: it looks like JSON (protobuf's json_format), which "
               "onnxio_text_parse reads with ONNXIO_TEXT_JSON (Python: onnxio.load(path, format=\"json\"))";
    if (style == ONNXIO_TEXT_ONNX)
        return "the file is text, not binary protobuf: it looks like ONNX's textual syntax (onnx.printer), which "
               "onnxio_text_parse reads with ONNXIO_TEXT_ONNX (Python: onnxio.load(path, format=\"onnxtxt\"))";
    return "the file is text, not binary protobuf: it looks like protobuf text format (textproto), which "
           "onnxio_text_parse reads with ONNXIO_TEXT_PROTO (Python: onnxio.load(path, format=\"textproto\"))";
}

/* ---- file name extensions ------------------------------------------- */

/* The extension table (onnxio.h, onnxio_file_extension): onnx's registry
 * (onnx/serialization.py) for its four formats, and the archive. */
static const onnxio_file_extension extensions[] = {
    {".onnx", "protobuf", ONNXIO_FORMAT_PROTOBUF, ONNXIO_TEXT_STR},
    {".pb", "protobuf", ONNXIO_FORMAT_PROTOBUF, ONNXIO_TEXT_STR},
    {".txtpb", "textproto", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_PROTO},
    {".textproto", "textproto", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_PROTO},
    {".prototxt", "textproto", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_PROTO},
    {".pbtxt", "textproto", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_PROTO},
    {".json", "json", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_JSON},
    {".onnxjson", "json", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_JSON},
    {".onnxtxt", "onnxtxt", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_ONNX},
    {".onnxtext", "onnxtxt", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_ONNX},
    {".onnxz", "onnxz", ONNXIO_FORMAT_ARCHIVE, ONNXIO_TEXT_STR},
};

ONNXIO_API const onnxio_file_extension *onnxio_file_extension_at(size_t index)
{
    return index < sizeof extensions / sizeof extensions[0] ? &extensions[index] : NULL;
}

const onnxio_file_extension *onnxio__extension_row(const char *ext, size_t n)
{
    for (size_t i = 0; ext && i < sizeof extensions / sizeof extensions[0]; i++)
        if (strlen(extensions[i].extension) == n && memcmp(extensions[i].extension, ext, n) == 0)
            return &extensions[i];
    return NULL;
}

/* ---- what a load reads a file as ---------------------------------------- */

onnxio_file_kind onnxio__detect_kind(const void *head, size_t head_size, uint64_t size,
                                     const onnxio_file_extension *named)
{
    onnxio_file_kind k = {ONNXIO_FORMAT_PROTOBUF, ONNXIO_TEXT_STR, false, size};
    /* detect_format reads at most TEXT_PROBE bytes, and takes the size
     * for the zero-byte rule. */
    k.format = onnxio_detect_format(head, (size_t)(size < SIZE_MAX ? size : SIZE_MAX));
    if (k.format != ONNXIO_FORMAT_TEXT) return k;
    k.text_style = onnxio_detect_text_style(head, head_size);
    k.text_by_name = named && named->kind == ONNXIO_FORMAT_TEXT;
    return k;
}

/* ---- external data keys --------------------------------------------- */

ONNXIO_API bool onnxio_tensor_is_external(const onnxio_TensorProto *t)
{
    return t && onnxio__is_external(t);
}

/* A device name of Windows (CON, PRN, AUX, NUL, COM0-9, LPT0-9 and their
 * superscript-digit forms, CONIN$, CONOUT$), matched without case on the
 * part of a component before its first '.', trailing spaces dropped: what
 * Win32 opens as the device whatever directory or extension is written. */
static bool windows_device(const char *c, size_t n)
{
    static const char *const names[] = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"};
    const char *dot = memchr(c, '.', n);
    if (dot) n = (size_t)(dot - c);
    while (n && c[n - 1] == ' ') n--;
    char up[8];
    if (n < 3 || n > sizeof up) return false;
    for (size_t i = 0; i < n; i++) up[i] = c[i] >= 'a' && c[i] <= 'z' ? (char)(c[i] - 'a' + 'A') : c[i];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && memcmp(names[i], up, n) == 0) return true;
    if (memcmp(up, "COM", 3) != 0 && memcmp(up, "LPT", 3) != 0) return false;
    /* a digit, or superscript one, two or three (U+00B9, U+00B2, U+00B3) */
    if (n == 4) return up[3] >= '0' && up[3] <= '9';
    return n == 5 && (unsigned char)up[3] == 0xC2 &&
           ((unsigned char)up[4] == 0xB9 || (unsigned char)up[4] == 0xB2 || (unsigned char)up[4] == 0xB3);
}

const char *onnxio__windows_path_problem(const char *p, size_t n, onnxio_status *status)
{
    *status = ONNXIO_ERR_PATH_ABSOLUTE;
    /* C:x, \\server\share, \\?\C:\x, /x: what onnxio__path_problem refuses
     * on every system, said again so that this rule is whole. */
    if (n && (p[0] == '/' || p[0] == '\\')) return "is an absolute path";
    if (n >= 2 && p[1] == ':') return "is an absolute path (a drive letter)";
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && p[j] != '/' && p[j] != '\\') j++;
        const char *c = p + i;
        size_t m = j - i;
        i = j + 1;
        if (m == 0 || (m == 1 && c[0] == '.')) continue;
        *status = ONNXIO_ERR_PATH_PARENT;
        if (m == 2 && c[0] == '.' && c[1] == '.') return "has a '..' component";
        *status = ONNXIO_ERR_EXTERNAL_DATA;
        for (size_t k = 0; k < m; k++) {
            unsigned char b = (unsigned char)c[k];
            if (b == ':') return "names an alternate data stream (a ':' in a component), which Windows would open";
            if (b < 0x20 || strchr("<>\"|?*", b))
                return "has a character Windows does not allow in a file name (a control character or one of <>\"|?*)";
        }
        if (c[m - 1] == '.' || c[m - 1] == ' ')
            return "has a component ending in '.' or ' ', which Windows drops (it would open another name)";
        *status = ONNXIO_ERR_PATH_SPECIAL;
        if (windows_device(c, m)) return "names a Windows device (CON, PRN, AUX, NUL, COM0-9, LPT0-9)";
    }
    *status = ONNXIO_OK;
    return NULL;
}

const char *onnxio__path_problem(const char *p, size_t n, onnxio_status *status)
{
    *status = ONNXIO_ERR_EXTERNAL_DATA;
    if (!p || n == 0) return "is empty";
    if (memchr(p, '\0', n)) return "contains a NUL byte";
    *status = ONNXIO_ERR_PATH_ABSOLUTE;
    if (p[0] == '/' || p[0] == '\\' || (n >= 2 && p[1] == ':')) return "is an absolute path";
    *status = ONNXIO_ERR_PATH_PARENT;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && p[j] != '/' && p[j] != '\\') j++;
        if (j - i == 2 && p[i] == '.' && p[i + 1] == '.') return "has a '..' component";
        i = j + 1;
    }
    /* Windows' own names (docs/design.md, "The OS layer"): only where
     * Windows would read them so; elsewhere they are ordinary names. */
    if (ONNXIO__OS_WINDOWS) return onnxio__windows_path_problem(p, n, status);
    *status = ONNXIO_OK;
    return NULL;
}

ONNXIO_API onnxio_status onnxio_check_location(const char *loc, size_t size)
{
    onnxio_status s;
    const char *why = onnxio__path_problem(loc, size, &s);
    if (!why) return ONNXIO_OK;
    return onnxio__fail(s, "external data location '%.*s' %s", (int)strnlen(loc ? loc : "", size > 200 ? 200 : size),
                        loc ? loc : "", why);
}

/* A decimal external_data value: digits only, fitting 64 bits. */
static onnxio_status parse_u64(const onnxio_string *v, const char *key, const onnxio_TensorProto *t, uint64_t *out)
{
    uint64_t x = 0;
    if (v->size == 0) goto bad;
    for (size_t i = 0; i < v->size; i++) {
        unsigned c = (unsigned char)v->data[i];
        if (c < '0' || c > '9') goto bad;
        if (x > (UINT64_MAX - (c - '0')) / 10) goto bad;
        x = x * 10 + (c - '0');
    }
    *out = x;
    return ONNXIO_OK;
bad:
    return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                        "tensor '%s': external_data %s '%.*s' is not a non-negative decimal number of bytes (digits only, below 2^64)",
                        onnxio__tensor_name(t), key, (int)(v->size > 64 ? 64 : v->size), v->data ? v->data : "");
}

static bool key_is(const onnxio_string *k, const char *name)
{
    size_t n = strlen(name);
    return k->size == n && memcmp(k->data, name, n) == 0;
}

/* ---- block digests ----------------------------------------------------- */

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

onnxio_status onnxio__digests_find(const onnxio_TensorProto *t, uint64_t length, onnxio__digests *out, bool *found)
{
    *found = false;
    const onnxio_string *v = NULL;
    for (size_t i = 0; i < t->metadata_props.size; i++) {
        const onnxio_StringStringEntryProto *e = t->metadata_props.data[i];
        if (key_is(&e->key, ONNXIO__DIGEST_KEY)) v = &e->value;
    }
    if (!v) return ONNXIO_OK;
    onnxio_status s = onnxio__digests_parse(v->data ? v->data : "", v->size, t, length, out);
    *found = !s;
    return s;
}

onnxio_status onnxio__digests_parse(const char *value, size_t size, const onnxio_TensorProto *t, uint64_t length,
                                    onnxio__digests *out)
{
    const char *p = value, *end = p + size;
    uint64_t block = 0;
    while (p < end && *p >= '0' && *p <= '9' && block <= ONNXIO__CRC_PIECE) block = block * 10 + (uint64_t)(*p++ - '0');
    if (p == end || *p != ':' || block < 4096 || block > ONNXIO__CRC_PIECE || (block & (block - 1)))
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                            "tensor '%s': its %s value does not start with a block size (a power of two from 4096 to "
                            "%u) and ':'",
                            onnxio__tensor_name(t), ONNXIO__DIGEST_KEY, (unsigned)ONNXIO__CRC_PIECE);
    p++;
    uint64_t count = length ? (length - 1) / block + 1 : 0;
    if ((uint64_t)(end - p) != count * 64)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                            "tensor '%s': its %s value has %llu hex digits, %llu bytes in blocks of %llu need %llu",
                            onnxio__tensor_name(t), ONNXIO__DIGEST_KEY, (unsigned long long)(end - p),
                            (unsigned long long)length, (unsigned long long)block, (unsigned long long)(count * 64));
    for (const char *q = p; q < end; q++)
        if (hex_digit(*q) < 0)
            return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "tensor '%s': its %s value has '%c' where a hex digit goes",
                                onnxio__tensor_name(t), ONNXIO__DIGEST_KEY, *q);
    *out = (onnxio__digests){block, (size_t)count, p};
    return ONNXIO_OK;
}

void onnxio__digests_decode(const onnxio__digests *d, uint8_t (*out)[32])
{
    for (size_t k = 0; k < d->count; k++)
        for (int i = 0; i < 32; i++)
            out[k][i] = (uint8_t)(hex_digit(d->hex[64 * k + 2 * i]) << 4 | hex_digit(d->hex[64 * k + 2 * i + 1]));
}

void onnxio__digests_remove(onnxio_TensorProto *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->metadata_props.size; i++) {
        onnxio_StringStringEntryProto *e = t->metadata_props.data[i];
        if (!key_is(&e->key, ONNXIO__DIGEST_KEY)) t->metadata_props.data[n++] = e;
    }
    t->metadata_props.size = n;
}

onnxio_status onnxio__digests_set(onnxio_arena *arena, onnxio_TensorProto *t, uint64_t block, const uint8_t (*d)[32],
                                  size_t count)
{
    onnxio__digests_remove(t);
    char head[32];
    int h = snprintf(head, sizeof head, "%llu:", (unsigned long long)block);
    onnxio_StringStringEntryProto *e = onnxio_list_add(arena, &t->metadata_props, &onnxio_desc_StringStringEntryProto);
    char *value = e ? onnxio__malloc((size_t)h + 64 * count + 1) : NULL;
    if (!value) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    memcpy(value, head, (size_t)h);
    static const char digits[] = "0123456789abcdef";
    for (size_t k = 0; k < count; k++)
        for (int i = 0; i < 32; i++) {
            value[h + 64 * k + 2 * i] = digits[d[k][i] >> 4];
            value[h + 64 * k + 2 * i + 1] = digits[d[k][i] & 15];
        }
    bool failed = onnxio_string_set(arena, &e->key, ONNXIO__DIGEST_KEY, strlen(ONNXIO__DIGEST_KEY)) ||
                  onnxio_string_set(arena, &e->value, value, (size_t)h + 64 * count);
    onnxio__free(value);
    if (failed) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    onnxio_set_has(e, ONNXIO_FIELD_StringStringEntryProto_key);
    onnxio_set_has(e, ONNXIO_FIELD_StringStringEntryProto_value);
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_external_ref_parse(const onnxio_TensorProto *t, onnxio_external_ref *r)
{
    if (!t || !r) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "external_ref_parse: NULL argument");
    memset(r, 0, sizeof *r);
    const onnxio_string *location = NULL, *offset = NULL, *length = NULL, *checksum = NULL;
    for (size_t i = 0; i < t->external_data.size; i++) {
        const onnxio_StringStringEntryProto *e = t->external_data.data[i];
        if (key_is(&e->key, "location")) location = &e->value;
        else if (key_is(&e->key, "offset")) offset = &e->value;
        else if (key_is(&e->key, "length")) length = &e->value;
        else if (key_is(&e->key, "checksum")) checksum = &e->value;
    }
    if (!location)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "tensor '%s': external_data has no location", onnxio__tensor_name(t));
    onnxio_status s = onnxio_check_location(location->data, location->size);
    if (s) return onnxio__context(s, "tensor '%s'", onnxio__tensor_name(t));
    if (offset && (s = parse_u64(offset, "offset", t, &r->offset))) return s;
    if (length) {
        if ((s = parse_u64(length, "length", t, &r->length))) return s;
        r->has_length = true;
    }
    r->location = location->data;
    r->location_size = location->size;
    if (checksum) {
        r->checksum = checksum->data ? checksum->data : "";
        r->checksum_size = checksum->size;
    }
    return ONNXIO_OK;
}

ONNXIO_API bool onnxio_domain_is_default(const char *domain, size_t size)
{
    return size == 0 || (size == 7 && domain && memcmp(domain, "ai.onnx", 7) == 0);
}

/* ---- data types ----------------------------------------------------- */

/* The rows of datatype.def, in its order. */
static const onnxio_data_type_desc data_types[] = {
#define ONNXIO_DATA_TYPE(NAME, BITS, STORAGE, ELEMENT, EXP, MANT, BIAS, FLOAT, NP, NUMPY, NPY, SAFETENSORS, RANK,   \
                         DLPACK, TEXT)                                                                            \
    {ONNXIO_TensorProto_DataType_##NAME, #NAME, BITS, ONNXIO_TensorProto_DataType_##STORAGE, ONNXIO_ELEMENT_##ELEMENT, \
     EXP, MANT, BIAS, ONNXIO_FLOAT_##FLOAT, NUMPY, DATA_TYPE_ML_##NP, NPY, SAFETENSORS, DLPACK, TEXT},
#define DATA_TYPE_ML_NP false
#define DATA_TYPE_ML_ML true
#include "datatype.def"
#undef ONNXIO_DATA_TYPE
#undef DATA_TYPE_ML_NP
#undef DATA_TYPE_ML_ML
};
#define DATA_TYPE_COUNT (sizeof data_types / sizeof data_types[0])

enum {
#define ONNXIO_DATA_TYPE(NAME, ...) DATA_TYPE_ROW_##NAME,
#include "datatype.def"
#undef ONNXIO_DATA_TYPE
};

/* Each data type's row in data_types, plus one (0: none), by value. */
static const uint8_t data_type_row[] = {
#define ONNXIO_DATA_TYPE(NAME, ...) [ONNXIO_TensorProto_DataType_##NAME] = DATA_TYPE_ROW_##NAME + 1,
#include "datatype.def"
#undef ONNXIO_DATA_TYPE
};

ONNXIO_API const onnxio_data_type_desc *onnxio_data_type_info(int32_t data_type)
{
    if (data_type < 0 || (size_t)data_type >= sizeof data_type_row || !data_type_row[data_type]) return NULL;
    return &data_types[data_type_row[data_type] - 1];
}

ONNXIO_API const onnxio_data_type_desc *onnxio_data_type_at(size_t index)
{
    return index < DATA_TYPE_COUNT ? &data_types[index] : NULL;
}

ONNXIO_API unsigned onnxio_data_type_bits(int32_t data_type)
{
    const onnxio_data_type_desc *d = onnxio_data_type_info(data_type);
    return d ? d->bits : 0;
}

ONNXIO_API int onnxio_tensor_raw_size(const onnxio_TensorProto *t, uint64_t *bytes)
{
    unsigned bits = t ? onnxio_data_type_bits(t->data_type) : 0;
    if (!bits || t->segment) return 0;
    uint64_t n = 1;
    bool overflow = false;
    for (size_t i = 0; i < t->dims.size; i++) {
        int64_t d = t->dims.data[i];
        if (d < 0) return -1;
        if (d == 0) return (*bytes = 0, 1);
        if (n > UINT64_MAX / (uint64_t)d) overflow = true;
        else n *= (uint64_t)d;
    }
    if (overflow) return -1;
    /* ceil(n * bits / 8) without overflowing n * bits. */
    if (n / 8 > UINT64_MAX / bits) return -1;
    uint64_t whole = n / 8 * bits;
    uint64_t rest = (n % 8 * bits + 7) / 8;
    if (whole > UINT64_MAX - rest) return -1;
    *bytes = whole + rest;
    return 1;
}

onnxio_status onnxio__typed_to_raw(const onnxio_TensorProto *t, uint64_t bytes, uint8_t *dst, onnxio_status status)
{
    const onnxio_data_type_desc *d = onnxio_data_type_info(t->data_type);
    unsigned bits = d ? d->bits : 0;
    const uint8_t *src;
    size_t have, src_width;
    switch (d ? d->storage : ONNXIO_TensorProto_DataType_UNDEFINED) {
    case ONNXIO_TensorProto_DataType_FLOAT: /* FLOAT, COMPLEX64 */
        src = (const uint8_t *)t->float_data.data, have = t->float_data.size, src_width = 4, bits = 32;
        break;
    case ONNXIO_TensorProto_DataType_DOUBLE: /* DOUBLE, COMPLEX128 */
        src = (const uint8_t *)t->double_data.data, have = t->double_data.size, src_width = 8, bits = 64;
        break;
    case ONNXIO_TensorProto_DataType_INT64:
        src = (const uint8_t *)t->int64_data.data, have = t->int64_data.size, src_width = 8;
        break;
    case ONNXIO_TensorProto_DataType_UINT64: /* UINT32, UINT64 */
        src = (const uint8_t *)t->uint64_data.data, have = t->uint64_data.size, src_width = 8;
        break;
    default:
        src = (const uint8_t *)t->int32_data.data, have = t->int32_data.size, src_width = 4;
        if (bits < 8 && bits != 6) bits = 8; /* one packed byte per value */
        break;
    }
    /* Values the field must hold: one per element (two for complex), one
     * per packed byte for 4- and 2-bit types. */
    uint64_t count = bits == 6 ? (bytes * 8) / 6 : bytes / (bits / 8);
    if (bits == 6) {
        /* The elements: raw_data's bytes do not say, the dims do. */
        count = 1;
        for (size_t i = 0; i < t->dims.size; i++) count *= (uint64_t)t->dims.data[i];
    }
    if (have != count)
        return onnxio__fail(status, "tensor '%s' holds %zu values in its typed data field, its type and shape need %llu",
                            onnxio__tensor_name(t), have, (unsigned long long)count);
    if (!dst) return ONNXIO_OK;
    if (bits == 6) {
        memset(dst, 0, (size_t)bytes);
        for (size_t i = 0; i < have; i++) {
            unsigned v = src[i * src_width] & 0x3F;
            uint64_t at = (uint64_t)i * 6;
            dst[at / 8] |= (uint8_t)(v << (at % 8));
            if (at % 8 > 2) dst[at / 8 + 1] |= (uint8_t)(v >> (8 - at % 8));
        }
        return ONNXIO_OK;
    }
    size_t width = bits / 8;
    for (size_t i = 0; i < have; i++) /* little-endian: the low `width` bytes of each value */
        memcpy(dst + i * width, src + i * src_width, width);
    return ONNXIO_OK;
}

const unsigned onnxio__tensor_typed_fields[ONNXIO__TYPED_FIELDS] = {
    ONNXIO_FIELD_TensorProto_float_data, ONNXIO_FIELD_TensorProto_int32_data,  ONNXIO_FIELD_TensorProto_string_data,
    ONNXIO_FIELD_TensorProto_int64_data, ONNXIO_FIELD_TensorProto_double_data, ONNXIO_FIELD_TensorProto_uint64_data,
};

onnxio_status onnxio__check_raw_size(const onnxio_TensorProto *t, uint64_t length, const char *where)
{
    uint64_t want;
    int known = onnxio_tensor_raw_size(t, &want);
    if (known == 0) return ONNXIO_OK; /* strings, unknown types, segments: no fixed size */
    if (known < 0) {
        for (size_t i = 0; i < t->dims.size; i++)
            if (t->dims.data[i] < 0)
                return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA, "tensor '%s': dimension %zu is negative (%lld)",
                                    onnxio__tensor_name(t), i, (long long)t->dims.data[i]);
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                            "tensor '%s': its shape has more elements than any file can hold (external data %s)",
                            onnxio__tensor_name(t), where);
    }
    if (length != want)
        return onnxio__fail(ONNXIO_ERR_EXTERNAL_DATA,
                            "tensor '%s': external data length %llu in %s does not match its type and shape (%llu bytes)",
                            onnxio__tensor_name(t), (unsigned long long)length, where, (unsigned long long)want);
    return ONNXIO_OK;
}
