/*
 * onnxio: ONNX model files read and written without libprotobuf.
 *
 * This header is the whole public C API. The message structs and their
 * descriptors are in onnxio/proto.h (expanded from the schema rows), the
 * statuses in onnxio/status.def. docs/design.md is the map of the library;
 * docs/security.md says what it refuses and why.
 *
 * Conventions of every function here:
 * - Functions that can fail return onnxio_status (ONNXIO_OK is 0). They never
 *   print, abort or exit. onnxio_last_error() gives a one-line message for
 *   the last failure on the calling thread that names what and where (byte
 *   offset, field, tensor or file).
 * - Sizes and offsets are in bytes and 64-bit: nothing has a 2 GiB limit.
 * - A message tree lives in an onnxio_arena and is freed with it. Tensor
 *   payloads (TensorProto.raw_data) live in refcounted onnxio_buffers and are
 *   released when their last reference goes: when the payload is replaced or
 *   cleared, or when the arena is freed.
 * - Option structs start with `struct_size` and mean "the defaults" when
 *   zero-initialized; a NULL options pointer means the same (see
 *   "Options" below for how new options stay compatible).
 * - Wire format: protobuf (proto2) as libprotobuf writes it for
 *   onnx-ml.proto (the rules that are easy to get wrong are in
 *   docs/design.md, "Wire rules").
 */
#ifndef ONNXIO_ONNXIO_H
#define ONNXIO_ONNXIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "onnxio/proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version -------------------------------------------------------- */

#define ONNXIO_VERSION_MAJOR 0
#define ONNXIO_VERSION_MINOR 2
#define ONNXIO_VERSION_PATCH 0
#define ONNXIO_VERSION_STRING "0.2.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH: 200 for 0.2.0. */
#define ONNXIO_VERSION_NUMBER (ONNXIO_VERSION_MAJOR * 10000 + ONNXIO_VERSION_MINOR * 100 + ONNXIO_VERSION_PATCH)

/* The version of the onnx package whose schema (src/schema.def: every
 * message, field and enum value, FLOAT6E2M3 and FLOAT6E3M2 included) and
 * whose Python API this release implements. The Python package reports it
 * as onnxio.__version__, so that code written against onnx that gates on
 * `onnx.__version__` takes the path for this onnx after `import onnxio as
 * onnx`; onnxio's own version is ONNXIO_VERSION_STRING (`onnxio --version`,
 * importlib.metadata.version("onnxio"), onnxio.version.onnxio_version). */
#define ONNXIO_ONNX_VERSION_STRING "1.23.2"

/* The version of the library actually linked, which may be newer than the
 * header a program was compiled with: "0.2.0" (static storage) and
 * ONNXIO_VERSION_NUMBER's value. */
const char *onnxio_version(void);
unsigned onnxio_version_number(void);

/* ---- errors --------------------------------------------------------- */

/* Every status, its number and its meaning are listed once, in
 * onnxio/status.def; ONNXIO_OK is 0 and every failure is positive. */
typedef enum onnxio_status {
#define ONNXIO_STATUS(name, number, cls, message) ONNXIO_##name = number,
#include "onnxio/status.def"
#undef ONNXIO_STATUS
} onnxio_status;

/* The symbolic name of a status ("ONNXIO_ERR_DECODE"), or
 * "ONNXIO_ERR_UNKNOWN" for a number that is none; static storage. */
const char *onnxio_status_name(onnxio_status status);
/* What a status means, in words (status.def's text: "malformed protobuf
 * bytes"); static storage. onnxio_last_error() says what happened where. */
const char *onnxio_status_message(onnxio_status status);

/* The message of the last failure on this thread; "" when none. Valid until
 * the next onnxio call on this thread. */
const char *onnxio_last_error(void);
/* The errno of the last failure on this thread when the operating system
 * refused (ONNXIO_ERR_IO, ONNXIO_ERR_NOT_FOUND: ENOENT, EACCES, EROFS,
 * ENOSPC, ...; EISDIR for a directory opened as a model file or saved
 * over), the message then ending with its strerror text; 0 for any other
 * failure, and when there was none. Changes with onnxio_last_error(). */
int onnxio_last_errno(void);

/* ---- arena ---------------------------------------------------------- */

typedef struct onnxio_arena onnxio_arena;

/* A new arena holding one reference. NULL when out of memory. */
onnxio_arena *onnxio_arena_new(void);
/* Adds a reference; returns `arena`. */
onnxio_arena *onnxio_arena_ref(onnxio_arena *arena);
/* Drops a reference; the last one frees every message of the arena and drops
 * the payload references they hold. NULL is a no-op. */
void onnxio_arena_unref(onnxio_arena *arena);
/* `size` zeroed bytes, 16-byte aligned, living as long as the arena. NULL
 * when out of memory. */
void *onnxio_arena_alloc(onnxio_arena *arena, size_t size);
/* Bytes of memory the arena holds (structure only; payloads not counted). */
size_t onnxio_arena_used(const onnxio_arena *arena);

/* ---- payload buffers ------------------------------------------------ */

/* A refcounted block of bytes (docs/design.md "Memory model"): a malloc'd block,
 * a memory-mapped file, or foreign memory with a release callback. */
typedef void (*onnxio_release_fn)(void *ctx, void *data, size_t size);

/* A new uninitialized block of `size` bytes aligned to `alignment` (a power
 * of two; 0 means ONNXIO_DEFAULT_ALIGNMENT), holding one reference. NULL when out of memory. */
onnxio_buffer *onnxio_buffer_new(size_t size, size_t alignment);
/* Wraps memory the caller owns: `release(ctx, data, size)` runs when the
 * last reference goes (release may be NULL). One reference. NULL on OOM. */
onnxio_buffer *onnxio_buffer_wrap(void *data, size_t size, onnxio_release_fn release, void *ctx);
/* Adds a reference (thread-safe); returns `buffer`. NULL is passed through. */
onnxio_buffer *onnxio_buffer_ref(onnxio_buffer *buffer);
/* Drops a reference (thread-safe); the last one releases. NULL is a no-op. */
void onnxio_buffer_unref(onnxio_buffer *buffer);
uint8_t *onnxio_buffer_data(const onnxio_buffer *buffer);
size_t onnxio_buffer_size(const onnxio_buffer *buffer);
/* The current reference count (for tests and diagnostics). */
size_t onnxio_buffer_refcount(const onnxio_buffer *buffer);
/* 1 when the buffer's memory was allocated by onnxio_buffer_new (private
 * to the library, writable); 0 for memory-mapped files and wrapped foreign
 * memory (onnxio_buffer_wrap), which must be treated as read-only. */
int onnxio_buffer_is_allocated(const onnxio_buffer *buffer);

/* Points `span` at `size` bytes at `data` held alive by `owner` (a new
 * reference is taken; NULL = borrowed), dropping the reference the span held
 * before. */
void onnxio_span_set(onnxio_span *span, uint8_t *data, size_t size, onnxio_buffer *owner);
/* Copies `size` bytes into a new owned buffer and points `span` at it. */
onnxio_status onnxio_span_copy_from(onnxio_span *span, const void *data, size_t size);
/* Drops the span's reference and empties it. */
void onnxio_span_clear(onnxio_span *span);

/* ---- messages ------------------------------------------------------- */

/* A new empty message of type `desc` in `arena` (zeroed, no field present).
 * NULL when out of memory. Example:
 *   onnxio_TensorProto *t = onnxio_message_new(arena, &onnxio_desc_TensorProto); */
void *onnxio_message_new(onnxio_arena *arena, const onnxio_message_desc *desc);
/* Unsets every field (payload references are dropped now; arena memory is
 * reclaimed only with the arena). Works at any nesting depth. */
void onnxio_message_clear(void *msg);
/* Deep copy of `src` into `dst` (same type; `dst` is cleared first). Strings
 * and arrays are copied into `arena` (dst's arena); payloads are shared
 * (a reference is taken; borrowed payloads stay borrowed). ONNXIO_ERR_DEPTH
 * when `src` is nested deeper than ONNXIO_MAX_DEPTH (dst is then partly
 * copied). */
onnxio_status onnxio_message_copy(onnxio_arena *arena, void *dst, const void *src);
/* Deep copy into a new message of `arena`; NULL when out of memory or
 * nested deeper than ONNXIO_MAX_DEPTH (onnxio_last_error() says which). */
void *onnxio_message_clone(onnxio_arena *arena, const void *src);
/* Merges `src` into `dst` as protobuf's MergeFrom does: set scalars
 * overwrite, repeated fields append, messages merge recursively.
 * ONNXIO_ERR_INVALID_ARGUMENT when dst and src are the same message (as
 * protobuf forbids), NULL, or of different types; ONNXIO_ERR_DEPTH past
 * ONNXIO_MAX_DEPTH. */
onnxio_status onnxio_message_merge(onnxio_arena *arena, void *dst, const void *src);
/* 1 when both messages have the same type, the same fields present with the
 * same values (payload bytes compared) and the same unknown-field bytes; 0
 * when they differ; -1 when out of memory (the comparison walks the trees
 * with a heap stack, so any nesting depth is compared). */
int onnxio_message_equal(const void *a, const void *b);

/* Called by onnxio_visit for each message it finds: `parent` holds it in
 * `field` (both NULL for the root). A status other than ONNXIO_OK stops
 * the walk and is what onnxio_visit returns. */
typedef onnxio_status (*onnxio_visit_fn)(void *msg, void *parent, const onnxio_field_desc *field, void *ctx);
/* Calls fn for every message of type `target` (NULL: every message) in the
 * tree under `root`, `root` included: depth first, parents before their
 * sub-messages, fields in number order, repeated ones element by element.
 * It reaches every place a type can be (subgraphs in attributes,
 * functions, sparse tensors, training graphs) through the descriptors.
 * Returns ONNXIO_OK, fn's first other status, or ONNXIO_ERR_DEPTH for a
 * tree nested deeper than ONNXIO_MAX_DEPTH (fn has then been called for
 * what lies above). The tree must not change while it is walked, except
 * inside the message fn is given (its scalars and strings). */
onnxio_status onnxio_visit(void *root, const onnxio_message_desc *target, onnxio_visit_fn fn, void *ctx);

/* Field lookup: by proto name, or by field number. NULL when there is none. */
const onnxio_field_desc *onnxio_field_by_name(const onnxio_message_desc *desc, const char *name);
const onnxio_field_desc *onnxio_field_by_number(const onnxio_message_desc *desc, uint32_t number);
/* The address of the field's member in `msg` (see proto.h for its C type). */
void *onnxio_field_ptr(void *msg, const onnxio_field_desc *field);
/* Bytes of one value of the field in its C member (proto.h's table): 4 or 8
 * for scalars, sizeof(onnxio_string) for strings and bytes,
 * sizeof(onnxio_span) for raw_data, a pointer for messages. For a repeated
 * field, the size of one array element. */
size_t onnxio_field_elem_size(const onnxio_field_desc *field);
/* 1 when a singular field is present, or a repeated field is non-empty. */
int onnxio_field_present(const void *msg, const onnxio_field_desc *field);
/* Marks a singular field present by index; clears the other oneof members
 * (their values too) when the field belongs to a oneof. */
void onnxio_set_has(void *msg, unsigned field_index);
/* Unsets one field: has-bit off, value zeroed, arrays emptied, sub-message
 * pointer NULL, payload reference dropped. */
void onnxio_field_clear(void *msg, const onnxio_field_desc *field);

/* Copies `size` bytes into `arena` (NUL-terminated) and points `dst` at them.
 * Does not touch has-bits. */
onnxio_status onnxio_string_set(onnxio_arena *arena, onnxio_string *dst, const void *data, size_t size);
/* Grows any onnxio_*_array or onnxio_*_list by one zeroed element of
 * `elem_size` bytes and returns its address; NULL when out of memory. */
void *onnxio_array_append(onnxio_arena *arena, void *array, size_t elem_size);
/* Appends a new empty message of type `desc` to an onnxio_<Message>_list and
 * returns it; NULL when out of memory. */
void *onnxio_list_add(onnxio_arena *arena, void *list, const onnxio_message_desc *desc);

/* The descriptor for a message name: "TensorProto", "onnx.TensorProto",
 * "TensorProto.Segment" or "TensorProto_Segment". NULL when unknown. */
const onnxio_message_desc *onnxio_message_desc_by_name(const char *name);
/* The name of an enum number (NULL when the number is not a value). */
const char *onnxio_enum_value_name(const onnxio_enum_desc *e, int32_t number);

/* ---- unknown fields ---------------------------------------------------- */

/* One field of a message's unknown-field bytes (onnxio_message.unknown:
 * fields the schema does not know, and enum numbers with no name, kept as
 * they were read and written back after the known fields, as libprotobuf
 * does). */
typedef struct onnxio_unknown_field {
    uint32_t number;     /* field number */
    uint8_t wire_type;   /* 0 varint, 1 fixed64, 2 length-delimited, 3 group, 5 fixed32 */
    uint64_t value;      /* wire types 0, 1 and 5: the value (fixed ones as little-endian integers) */
    const uint8_t *data; /* wire type 2: the bytes; 3: the group's fields (without its end tag), which
                          * this function reads too; they point into the input */
    size_t size;
} onnxio_unknown_field;

/* Reads the field at *offset of the `size` bytes at `data` (usually a
 * message's unknown.data and unknown.size) into *out and moves *offset past
 * it. Returns 1 when a field was read, 0 at the end, -1 when the bytes are
 * not wire format (onnxio_last_error() says where; a message's own unknown
 * bytes always read). Nothing is allocated; groups nest to any depth. */
int onnxio_unknown_field_next(const void *data, size_t size, size_t *offset, onnxio_unknown_field *out);

/* ---- limits --------------------------------------------------------- */

/* The defaults and limits below are options.def's ONNXIO_CONSTANT rows,
 * their one home; CMake writes them into onnxio/limits.h as macros. */
#include "onnxio/limits.h"

/* Message nesting: reading refuses deeper input (ONNXIO_ERR_DEPTH) at
 * max_depth levels, ONNXIO_DEFAULT_MAX_DEPTH unless raised (protobuf's
 * default too); writing refuses a tree deeper than the same limit, so that
 * whatever onnxio writes it reads back with the same options. No option
 * goes past ONNXIO_MAX_DEPTH (larger values are taken as it): it bounds the
 * C stack of every recursive walk (copy, merge, size, serialize, text).
 * As in libprotobuf, the top-level message is level 0: max_depth levels of
 * messages (and groups of unknown fields) may nest below it.
 *
 * Expansion: a load may allocate, for structure (arena) and payloads
 * (copies, inflated .onnxz entries, payload_fn placements) together, at most
 * max_expansion (ONNXIO_DEFAULT_MAX_EXPANSION unless raised) times the
 * bytes it reads (the model file or bytes, and every distinct external data
 * file or archive entry it opens), plus ONNXIO_EXPANSION_ALLOWANCE; past
 * that it fails with ONNXIO_ERR_EXPANSION before allocating more. A
 * well-formed model needs about 1x its size (payloads) plus its structure;
 * the default stops zip bombs, overlapping external data ranges and floods
 * of empty messages, the way zip readers defend against bombs. Tensors
 * that refer to the same bytes (the same file or entry, offset and length)
 * share one buffer and count once.
 *
 * Payloads of at least ONNXIO_DEFAULT_RAW_DATA_THRESHOLD bytes are "large"
 * (copied on the pool, borrowed by no_copy); ONNXIO_DEFAULT_EXTERNAL_THRESHOLD
 * is the default of external data's size_threshold. Payload buffers and
 * archive entries are aligned to ONNXIO_DEFAULT_ALIGNMENT, external data
 * offsets to ONNXIO_DEFAULT_EXTERNAL_ALIGNMENT (the page size, as
 * onnx-ml.proto recommends). */

/* ---- options -------------------------------------------------------- */

/* Every option struct starts with `struct_size`. Zero-initialized (or a
 * NULL pointer) it means the defaults: struct_size 0 stands for the layout
 * of 0.2 (the members that 0.2 had: a program built against 0.2 passes a
 * zeroed struct of that size, and nothing past it is read). A program that uses options added later sets it to
 * sizeof the struct it was compiled with (the ONNXIO_*_INIT macros do). The
 * library reads only the members struct_size covers, and refuses
 * (ONNXIO_ERR_INVALID_ARGUMENT) a larger struct whose members unknown to it
 * are not zero: an option it does not know is never silently ignored. New
 * options are only ever added at the end. The INIT macros are C
 * initializers, and in C++ expressions of the same value. */
#ifdef __cplusplus
#define ONNXIO_OPTIONS_INIT_(T) ([] { T o_{}; o_.struct_size = sizeof o_; return o_; }())
#else
#define ONNXIO_OPTIONS_INIT_(T) {.struct_size = sizeof(T)}
#endif

/* A setting whose default is "on" or depends on the mode: zero means the
 * default. */
typedef enum onnxio_toggle { ONNXIO_DEFAULT = 0, ONNXIO_ON = 1, ONNXIO_OFF = 2 } onnxio_toggle;

/* ---- payload placement ---------------------------------------------- */

/* What a payload callback decides for one tensor. */
typedef enum onnxio_payload_action {
    /* Load the payload the usual way (copied into an owned buffer, or
     * borrowed/shared with no_copy). */
    ONNXIO_PAYLOAD_LOAD = 0,
    /* Do not read it: an inline payload keeps its size with data NULL (as
     * skip_raw_data), an external one stays external (data_location and
     * external_data kept) and can be loaded later with
     * onnxio_load_tensor_external_data. */
    ONNXIO_PAYLOAD_SKIP = 1,
    /* Copy it to the memory the callback returned in *dst (`size` bytes,
     * any alignment). The span then points there and holds a reference to
     * the *owner the callback returned, or borrows the memory when *owner is
     * NULL (the caller keeps it alive as long as the tensor uses it). */
    ONNXIO_PAYLOAD_PLACED = 2,
} onnxio_payload_action;

/* One payload about to be loaded. `tensor` is fully parsed (name,
 * data_type, dims, external_data) but its raw_data is not set yet; it must
 * not be modified by the callback. Members may be added at the end. */
typedef struct onnxio_payload_request {
    const onnxio_TensorProto *tensor;
    uint64_t size;  /* payload bytes */
    bool external;  /* the payload comes from an external data file or an archive entry */
} onnxio_payload_request;

/* Decides where a payload goes (see onnxio_payload_action). Called on the
 * loading thread, once per tensor that has a raw_data payload (inline or
 * external, any size), after the whole structure is parsed, in tree order.
 * For ONNXIO_PAYLOAD_PLACED, set *dst (and optionally *owner: the span takes
 * its own reference; the callback keeps its own). A PLACED result with *dst
 * NULL and size > 0 fails the load with ONNXIO_ERR_INVALID_ARGUMENT. */
typedef onnxio_payload_action (*onnxio_payload_fn)(void *ctx, const onnxio_payload_request *request, void **dst,
                                                   onnxio_buffer **owner);

/* A progress callback (onnxio_parse_options.progress,
 * onnxio_serialize_options.progress) for displays such as `onnxio`'s
 * progress line: `done` of `total` payload bytes (TensorProto.raw_data)
 * of the operation are handled. A load's total is the payload bytes it
 * places (inline and external; a borrowed, shared or skipped payload counts
 * as done when it is placed); a save's, the loaded raw_data bytes of every
 * tensor of the tree it writes. Called on the thread that called the load
 * or save (never on a pool thread, never two calls at once), with done
 * never decreasing and total the same in every call: first once the total
 * is known (after the structure is parsed, or, for a model with external
 * data, after its external tensors are checked), then whenever at least
 * ONNXIO_PROGRESS_STEP more bytes are done (payloads move in pieces of up
 * to 8 MiB; payloads smaller than the raw_data_threshold, and on a save
 * payloads under 64 KiB, are counted at the end), and last exactly once
 * with done == total (the only call where they are equal, also when total
 * is 0), before a save replaces any file. A non-zero return cancels: the
 * load or save fails with ONNXIO_ERR_CANCELLED (a cancelled load leaves no
 * message, a cancelled save leaves every existing file as it was and
 * removes its temporary files). The callback must not call onnxio on the
 * same thread. */
typedef int (*onnxio_progress_fn)(void *user, uint64_t done, uint64_t total);
#define ONNXIO_PROGRESS_STEP (1u << 20)

/* A cancel poll (onnxio_parse_options.cancel), for an interrupt such as
 * Ctrl-C: called on the thread that called the load, while it moves or
 * waits for payloads, at least every ONNXIO_CANCEL_POLL_MS milliseconds of
 * waiting and between pieces of at most 64 MiB of payload; never on a pool
 * thread, never two calls at once. A non-zero return cancels: the load
 * fails with ONNXIO_ERR_CANCELLED and leaves no message. Unlike a progress
 * callback it changes nothing else of how the load runs (which reads, which
 * threads). The poll must not call onnxio on the same thread. */
typedef int (*onnxio_cancel_fn)(void *user);
#define ONNXIO_CANCEL_POLL_MS 20

typedef struct onnxio_parse_options {
    /* sizeof(onnxio_parse_options), or 0 (see "Options"). */
    size_t struct_size;
    /* Payloads of at least this many bytes are "large": they are the ones
     * copied by the thread pool and borrowed by no_copy. 0 means the
     * default, ONNXIO_DEFAULT_RAW_DATA_THRESHOLD bytes. */
    uint64_t raw_data_threshold;
    /* Alignment in bytes (a power of two, at most 1 GiB) of large payload
     * buffers. 0 means ONNXIO_DEFAULT_ALIGNMENT; 1 means none. With no_copy, a payload in an
     * .onnxz archive is borrowed only when its address is a multiple of it
     * (otherwise it is copied). */
    uint64_t alignment;
    /* Threads for payload copies and external data reads: 0 = one per
     * core, 1 = serial (everything on the calling thread). The result is
     * the same whatever the count. */
    int num_threads;
    /* Payloads point into the input (bytes or the file's memory mapping)
     * instead of being copied; see onnxio_parse for ownership, and
     * docs/security.md for what it means when a mapped file changes. */
    bool no_copy;
    /* Read tensors whose data_location is EXTERNAL from their files.
     * Default on for file loads; for loads from bytes it needs base_dir. */
    onnxio_toggle load_external_data;
    /* Directory that external data locations are resolved under. NULL: the
     * directory of the model file. */
    const char *base_dir;
    /* Parse structure only: payloads are not read, their sizes are kept
     * (span.data NULL, span.size set). */
    bool skip_raw_data;
    /* Maximum message nesting depth; 0 means ONNXIO_DEFAULT_MAX_DEPTH;
     * values above ONNXIO_MAX_DEPTH are taken as ONNXIO_MAX_DEPTH. */
    int max_depth;
    /* Where payloads go, tensor by tensor (NULL: every payload is loaded).
     * A callback that only returns LOAD or SKIP is a selective-loading
     * predicate. Not called with skip_raw_data. */
    onnxio_payload_fn payload_fn;
    void *payload_ctx;
    /* External data whose external_data has a "checksum" key: compute the
     * SHA-1 of the whole data file (onnx-ml.proto: "SHA1 digest of file
     * specified under 'location'"; the CPU's SHA instructions where it has
     * them), on a thread of its own while the payloads are placed, and
     * refuse a mismatch with ONNXIO_ERR_CHECKSUM: the load then returns no
     * payload. In an .onnxz archive the "file" is the entry named by
     * 'location'. SHA-1 catches damage, not a crafted file (docs/security.md). */
    bool verify_checksum;
    /* .onnxz archives: check the CRC-32 of every entry the load reads.
     * DEFAULT: on for copy loads (computed while the bytes are copied), off
     * for no_copy (it would read every page of the mapping). Deflated
     * entries are always checked as they are inflated. A mismatch is
     * ONNXIO_ERR_CHECKSUM. */
    onnxio_toggle verify_crc;
    /* The largest expansion (see "Expansion" above) of a load: 0 means
     * ONNXIO_DEFAULT_MAX_EXPANSION; UINT64_MAX means no limit. */
    uint64_t max_expansion;
    /* Called as payload bytes are placed (see onnxio_progress_fn); NULL:
     * never (and nothing is counted). With a callback, payloads are moved
     * after the structure is parsed, not during the parse. */
    onnxio_progress_fn progress;
    void *progress_user;
    /* Copy loads: read payload ranges that the page cache does not hold
     * with direct I/O (O_DIRECT, Linux), from the device into the payload
     * memory with no page-cache copy in between. DEFAULT and ON: on; the
     * file's pages read this way are then not cached for a later load, and
     * ranges at least half cached are read from the cache as before. A
     * file mostly out of the page cache, when it is an .onnxz archive or a
     * single file of at most 1 GiB (and the load has no payload or progress
     * callback), is read whole this way into memory laid out as the file,
     * each payload then taken where it landed (docs/memory.md). OFF:
     * every read goes through the page cache. Files on a file system that
     * cannot read directly are read through the page cache either way.
     * docs/io.md, "Cold ranges are read directly". Either way, a copy load whose files,
     * with what of them is cached, do not fit in the memory available
     * beside its copies drops each range it has read through the page
     * cache from the cache, so that the kernel does not evict the ranges
     * still to be read (docs/io.md, "Drop-behind when the copy and the cache cannot both stay"). */
    onnxio_toggle direct_io;
    /* Polled to cancel the load (see onnxio_cancel_fn); NULL: never. */
    onnxio_cancel_fn cancel;
    void *cancel_user;
    /* External payloads whose tensor has block digests (the SHA-256 of
     * each block of its bytes, in its metadata_props under
     * "onnxio.sha256"; onnxio_serialize_options.digests writes them):
     * check every block once the payload is placed, on the pool, and
     * refuse a mismatch with ONNXIO_ERR_CHECKSUM naming the tensor, the
     * block and its bytes (the load then returns no payload); a malformed
     * record is ONNXIO_ERR_EXTERNAL_DATA. A checked tensor loses the
     * record, as it loses its external_data keys. DEFAULT: on for copy
     * loads, off with no_copy (checking reads every page of the mapping);
     * ON: also with no_copy; OFF: never (the record is then kept). */
    onnxio_toggle verify_digests;
} onnxio_parse_options;

#define ONNXIO_PARSE_OPTIONS_INIT ONNXIO_OPTIONS_INIT_(onnxio_parse_options)

/* Moving payloads to an external data file on save (ONNX external data:
 * data_location = EXTERNAL with external_data keys location/offset/length).
 * Part of onnxio_serialize_options; its layout never changes. */
typedef struct onnxio_external_data_options {
    /* File name of the data file, relative to the model's directory; NULL:
     * payloads stay where they are (unless all_tensors_to_one_file is OFF).
     * Must pass the same safety checks as on load (no absolute path, no
     * '..', no symlink or hard link leading elsewhere, not the model file). */
    const char *location;
    /* Payloads (raw_data) of at least this many bytes go to external data.
     * 0 means ONNXIO_DEFAULT_EXTERNAL_THRESHOLD; 1 moves every non-empty payload. */
    uint64_t size_threshold;
    /* ON (default): every payload goes to `location`. OFF: one file per
     * tensor in the model's directory, named from the tensor name with
     * characters outside [A-Za-z0-9._-] replaced by '_', never starting
     * with '.', and made unique (also when case is folded, and distinct from
     * the model file) by a "_<n>" suffix; `location` is then ignored. */
    onnxio_toggle all_tensors_to_one_file;
    /* false (default), as onnx: only initializers of the main graph and of
     * subgraphs. true: every tensor with raw_data, including those in
     * attributes (Constant nodes, AttributeProto.t/tensors), in sparse
     * tensors and in functions. */
    bool convert_attribute;
    /* When non-zero, no data file grows past this many bytes: payloads go,
     * in order, into files named "<stem>-00001-of-0000N<ext>" (stem and
     * extension from `location`); a payload larger than the limit gets a file
     * of its own. 0: no limit. Ignored in one-file-per-tensor mode. */
    uint64_t max_file_size;
    /* Write a "checksum" key (SHA-1 of the whole data file, 40 hex digits)
     * in every external tensor, computed from memory on a thread of its own
     * while the data file is written and synced. */
    bool checksum;
} onnxio_external_data_options;

typedef struct onnxio_serialize_options {
    /* sizeof(onnxio_serialize_options), or 0 (see "Options"). */
    size_t struct_size;
    /* Payloads of at least this many bytes are written by the thread pool
     * at their offsets; 0 means ONNXIO_DEFAULT_RAW_DATA_THRESHOLD. */
    uint64_t raw_data_threshold;
    /* Offset alignment (a power of two, at most 1 GiB) of payloads in
     * external data files and .onnxz archives. 0 means the default:
     * ONNXIO_DEFAULT_EXTERNAL_ALIGNMENT (the page size) in external data
     * files, as onnx-ml.proto recommends ("Offset values SHOULD be
     * multiples 4096 to enable mmap support"), ONNXIO_DEFAULT_ALIGNMENT in
     * archives. 1 means none. */
    uint64_t alignment;
    /* Threads for payload writes: 0 = one per core, 1 = serial. The bytes
     * written are the same whatever the count. */
    int num_threads;
    onnxio_external_data_options external_data;
    /* Refuse (ONNXIO_ERR_DEPTH) a tree nested deeper than this: 0 means
     * ONNXIO_DEFAULT_MAX_DEPTH, what a load reads back by default;
     * values above ONNXIO_MAX_DEPTH are taken as ONNXIO_MAX_DEPTH. */
    int max_depth;
    /* DEFAULT or ON: every file a save writes is fsync'd before it replaces
     * its target, and the directories after (the save protocol of
     * docs/design.md: a crash, a kill or a power cut leaves the old files or
     * the new ones, whole). OFF: no fsync, for scratch outputs: a killed
     * save still leaves the old files or the new ones (renames are atomic
     * and the journal still works), but after a power cut or an OS crash a
     * new file may be incomplete. Also applies to
     * onnxio_archive_replace_model. */
    onnxio_toggle fsync;
    /* Called as payload bytes are written (see onnxio_progress_fn); NULL:
     * never. Not called by onnxio_archive_replace_model, which writes no
     * payload of its own. */
    onnxio_progress_fn progress;
    void *progress_user;
    /* A save writes at most this many times the distinct payload bytes the
     * tree holds, plus 1 MiB, in payloads (ONNXIO_ERR_EXPANSION before
     * anything is written): tensors that share one buffer (a no_copy load
     * of a model whose tensors all refer to one range) would otherwise turn
     * a small model into a huge file, once per tensor. 0 means
     * ONNXIO_DEFAULT_MAX_EXPANSION; UINT64_MAX means no limit. The
     * same rule as onnxio_parse_options.max_expansion for loads. */
    uint64_t max_expansion;
    /* Block digests: the SHA-256 of each ONNXIO_DIGEST_BLOCK bytes of
     * every payload the save writes to external data, computed by the
     * pool as it writes them (no second pass), kept in the tensor's
     * metadata_props under "onnxio.sha256" as "BLOCK:HEX" (docs/design.md,
     * "Block digests"; onnx ignores it). Loads check them
     * (onnxio_parse_options.verify_digests). Without it a payload the save
     * moves loses any record it had. */
    bool digests;
} onnxio_serialize_options;

#define ONNXIO_SERIALIZE_OPTIONS_INIT ONNXIO_OPTIONS_INIT_(onnxio_serialize_options)

/* ---- what a file is, and the rules of what it holds ----------------- */

/* The kinds of file onnxio tells apart by their first bytes. */
typedef enum onnxio_format {
    /* Binary protobuf (.onnx, .pb): anything that is not one of the others. */
    ONNXIO_FORMAT_PROTOBUF = 0,
    /* An .onnxz zip archive: it starts with "PK\3\4" (a local header) or
     * "PK\5\6" (an empty archive), or, when it has at least 22 bytes, with a
     * zero byte: an archive aligned past 64 KiB starts with a gap, and no
     * protobuf message starts with 0 (field number 0 does not exist). */
    ONNXIO_FORMAT_ARCHIVE = 1,
    /* Text (protobuf text format, ONNX's textual syntax, JSON): it
     * starts, after white space, with a letter, '<', '{' or '#', and its
     * first 64 bytes are printable ASCII or UTF-8 or white space. Content
     * alone cannot tell such text from a binary message whose first bytes
     * happen to be printable: onnxio_detect_kind adds the file's name, and
     * a file load (onnxio_load_model, onnxio_load_file) reads one named as
     * text (onnxio_path_extension) as text, any other as binary protobuf
     * first and as text (onnxio_detect_text_style) only when binary
     * protobuf refuses it. A load from bytes reads binary protobuf only;
     * its error then says which text the bytes look like and what reads
     * it. */
    ONNXIO_FORMAT_TEXT = 2,
} onnxio_format;

/* What `size` bytes at `data` (a whole file, or at least its first 64
 * bytes with `size` its full size) are, by their content alone. */
onnxio_format onnxio_detect_format(const void *data, size_t size);
/* The same for the file at `path`, reading its first bytes
 * (onnxio_detect_file(path).format). Errors: ONNXIO_ERR_NOT_FOUND,
 * ONNXIO_ERR_IO, ONNXIO_ERR_PATH_SPECIAL (not a regular file: nothing is
 * read from a FIFO or a device). */
onnxio_status onnxio_detect_file_format(const char *path, onnxio_format *out);
/* Whether saving to `path` writes an .onnxz archive: its extension
 * (onnxio_path_extension) is ".onnxz". */
bool onnxio_path_is_archive(const char *path);

/* A tensor's external data keys (ONNX external data: data_location =
 * EXTERNAL and external_data entries "location", a path relative to the
 * model's directory or, in an .onnxz archive, an entry name; "offset" and
 * "length", decimal byte counts, offset 0 and the rest of the file when
 * absent; "checksum", the SHA-1 of the whole file in 40 hex digits). Other
 * keys are ignored; when a key repeats, the last one counts. The strings
 * point into the tensor and live as long as it does. */
typedef struct onnxio_external_ref {
    const char *location;
    size_t location_size;
    uint64_t offset;
    uint64_t length; /* valid when has_length */
    bool has_length;
    const char *checksum; /* NULL when there is no checksum key */
    size_t checksum_size;
} onnxio_external_ref;

/* Parses the external_data keys of `t` (whatever its data_location) and
 * checks them: ONNXIO_ERR_EXTERNAL_DATA for a missing location, or an
 * offset or length that is not a plain decimal number (digits only: no
 * sign, no space, no "0x"; at most UINT64_MAX); the location as
 * onnxio_check_location checks it. */
onnxio_status onnxio_external_ref_parse(const onnxio_TensorProto *t, onnxio_external_ref *out);
/* The spelling rules of an external data location, checked without touching
 * the file system: not empty and no NUL byte (ONNXIO_ERR_EXTERNAL_DATA);
 * relative: no leading '/' or '\\', no drive letter "C:"
 * (ONNXIO_ERR_PATH_ABSOLUTE); no ".." component between separators, '/' or
 * '\\' (ONNXIO_ERR_PATH_PARENT; "a..b" is a name, not a component). The
 * Windows build also refuses the names Windows reads otherwise: a ':' in a
 * component (an alternate data stream, "name:stream"), a control character
 * or one of <>"|?* (ONNXIO_ERR_EXTERNAL_DATA), a component ending in '.'
 * or ' ' (ONNXIO_ERR_EXTERNAL_DATA: Windows would open the name without
 * them), and a device name as a component (CON, PRN, AUX, NUL, COM0-9,
 * LPT0-9, in any case, with or without an extension:
 * ONNXIO_ERR_PATH_SPECIAL); other builds read these as ordinary names. */
onnxio_status onnxio_check_location(const char *location, size_t size);
/* Whether `t` keeps its payload in external data: data_location is present
 * and EXTERNAL. */
bool onnxio_tensor_is_external(const onnxio_TensorProto *t);

/* How onnxio_external_data_open opens a data file. */
typedef enum onnxio_open_mode {
    ONNXIO_OPEN_READ = 0,   /* read only; the file must exist */
    ONNXIO_OPEN_APPEND = 1, /* read and write; created (0666 minus the umask) when missing */
} onnxio_open_mode;

/* Opens the external data file `location` under the directory `base_dir`,
 * the one way every onnxio component opens one. `location` must pass
 * onnxio_check_location. The path is walked from base_dir one component at a
 * time with openat and O_NOFOLLOW, so nothing outside base_dir is ever
 * opened: a symlink is followed only when its target, resolved the same
 * way, stays inside base_dir (else ONNXIO_ERR_PATH_ESCAPES); the file's type
 * is checked before it is opened, and it is opened with O_NONBLOCK, so a
 * FIFO, a device or a socket is refused (ONNXIO_ERR_PATH_SPECIAL) without
 * being opened; a file with other hard links is refused (ONNXIO_ERR_PATH_LINK:
 * its other name could be anywhere). On Windows a backslash separates
 * components too, each component is opened with FILE_OPEN_REPARSE_POINT,
 * and a reparse point (symlink, junction, mount point) is never followed,
 * wherever it leads (ONNXIO_ERR_PATH_ESCAPES). *fd (close it) is the open file,
 * *size (optional) its size. Other errors: ONNXIO_ERR_NOT_FOUND,
 * ONNXIO_ERR_IO, ONNXIO_ERR_NO_MEMORY. */
onnxio_status onnxio_external_data_open(const char *base_dir, const char *location, onnxio_open_mode mode, int *fd,
                                        uint64_t *size);

/* The directory in which a load of the model file at `model_path` looks
 * up its external data (onnxio_load_model, onnxio_load_file,
 * onnxio_tensor_file_open; the base directory of every location):
 * `base_dir` when it is not NULL, else the directory part of `model_path`,
 * all that comes before its last '/' ("/" when that '/' is its first byte,
 * "." when it has none; NULL model_path reads as ""). On Windows a
 * backslash separates too, and a drive's root keeps its separator ("C:"
 * and a backslash). Written
 * NUL-terminated into `buf` of `size` bytes when it fits. Returns its
 * length, as snprintf does: a return of `size` or more says that `buf`
 * was too small, and then holds the empty string (when size > 0).
 * strlen(model_path) + 2 bytes, or strlen(base_dir) + 1, always suffice.
 * Nothing is looked up on the file system, and nothing fails. */
size_t onnxio_model_dir(const char *model_path, const char *base_dir, char *buf, size_t size);
/* The file name of `path`: the part after its last '/' (on Windows, '/'
 * or backslash; all of it when it has none; "" when it ends in one). A pointer
 * into `path`; NULL for NULL. */
const char *onnxio_path_file_name(const char *path);
/* Whether the external data location `location` (`size` bytes, not
 * NUL-terminated), read in the directory of the file at `path`
 * (onnxio_model_dir without a base directory), names that file itself:
 * after any leading "./" components, it is spelled as path's file name
 * (onnxio_path_file_name). By spelling only, nothing is looked up, so a
 * file that does not exist yet (the output of a save) is found too; a
 * load compares the files themselves (ONNXIO_ERR_PATH_SELF). False for
 * NULL arguments. */
bool onnxio_location_names_file(const char *location, size_t size, const char *path);

/* Whether an operator set domain is the default one: "" and "ai.onnx"
 * name the same domain (onnx.proto, OperatorSetIdProto.domain). */
bool onnxio_domain_is_default(const char *domain, size_t size);

/* ---- tensor data types ---------------------------------------------- */

/* What the elements of a data type are. */
typedef enum onnxio_element_kind {
    ONNXIO_ELEMENT_BOOL = 1, /* one byte, 0 or 1 */
    ONNXIO_ELEMENT_INT,      /* two's complement integers */
    ONNXIO_ELEMENT_UINT,     /* unsigned integers */
    ONNXIO_ELEMENT_FLOAT,    /* binary floating point (onnxio_float_kind) */
    ONNXIO_ELEMENT_COMPLEX,  /* a real then an imaginary part, each a FLOAT of half the bits */
    ONNXIO_ELEMENT_STRING    /* byte strings, no fixed size */
} onnxio_element_kind;

/* Which bit patterns of a binary float are not finite numbers. A pattern
 * is, from the top bit down, a sign bit (absent in FNU), exponent_bits
 * bits of exponent E and mantissa_bits bits of mantissa M: E > 0 is
 * (1 + M / 2^mantissa_bits) * 2^(E - exponent_bias), E = 0 is
 * M / 2^mantissa_bits * 2^(1 - exponent_bias), except for: */
typedef enum onnxio_float_kind {
    ONNXIO_FLOAT_NONE = 0, /* not a float */
    ONNXIO_FLOAT_IEEE,     /* the largest E: infinity (M = 0) and NaN (FLOAT16, FLOAT, FLOAT8E5M2) */
    ONNXIO_FLOAT_FN,       /* no infinity; NaN where E and M are all ones (the 8-bit E4M3 FN) */
    ONNXIO_FLOAT_FNUZ,     /* no infinity, no negative zero: NaN is the sign bit alone (FLOAT8E5M2FNUZ) */
    ONNXIO_FLOAT_FINITE,   /* none: every pattern is a number (FLOAT4E2M1, FLOAT6E2M3) */
    ONNXIO_FLOAT_FNU       /* no sign bit, no zero: E = 0 is (1 + M / 2^mantissa_bits) * 2^-exponent_bias,
                            * E all ones is NaN (FLOAT8E8M0) */
} onnxio_float_kind;

/* The facts about one TensorProto.DataType value, one table for the whole
 * library (src/datatype.def), the command and the Python package. Only ever
 * read through a pointer the functions below return: members are added at
 * the end, never removed or moved. */
typedef struct onnxio_data_type_desc {
    int32_t data_type;         /* the TensorProto.DataType value */
    const char *name;          /* its enum name: "FLOAT16" */
    unsigned bits;             /* bits per element (onnxio_data_type_bits); 0 for STRING */
    int32_t storage;           /* the data type whose typed field holds its values outside raw_data
                                * (FLOAT: float_data, INT32: int32_data, INT64: int64_data,
                                * DOUBLE: double_data, UINT64: uint64_data, STRING: string_data) */
    onnxio_element_kind element;
    /* ONNXIO_ELEMENT_FLOAT, and the parts of ONNXIO_ELEMENT_COMPLEX (0
     * and ONNXIO_FLOAT_NONE otherwise): */
    unsigned exponent_bits, mantissa_bits;
    int exponent_bias;
    onnxio_float_kind float_kind;
    const char *numpy;         /* the numpy dtype's name, as onnx.helper.tensor_dtype_to_np_dtype
                                * gives it: "float32", "float8_e5m2", "object" for STRING */
    bool ml_dtypes;            /* numpy has that dtype through the ml_dtypes package only */
    const char *npy;           /* its descr in .npy files ("<f4", "|b1"); NULL for the
                                * ml_dtypes types and STRING */
    const char *safetensors;   /* the safetensors dtype ("BF16"); NULL when the format has none */
    int dlpack_code;           /* DLPack's DLDataTypeCode of its tensors (bits: `bits`, 1 lane);
                                * -1 when onnxio exports none (STRING, the packed types) */
    const char *text;          /* its name in ONNX's textual syntax: "float16" */
} onnxio_data_type_desc;

/* The facts about data type `data_type` (static storage: valid for the
 * life of the program, never freed), or NULL for UNDEFINED and numbers
 * that are no data type. */
const onnxio_data_type_desc *onnxio_data_type_info(int32_t data_type);
/* The index'th data type of the table, for walking it (index 0, 1, ...
 * until NULL): in the order of onnx's TENSOR_TYPE_MAP (onnx/_mapping.py),
 * every TensorProto.DataType value but UNDEFINED once. Static storage. */
const onnxio_data_type_desc *onnxio_data_type_at(size_t index);
/* Bits of one element of a TensorProto.DataType value: 32 for FLOAT, 8 for
 * BOOL and the 8-bit floats, 6 for FLOAT6E2M3 and FLOAT6E3M2, 4 for INT4,
 * UINT4 and FLOAT4E2M1, 2 for INT2 and UINT2; 0 for STRING, UNDEFINED and
 * numbers that are no data type (onnxio_data_type_info's `bits`). */
unsigned onnxio_data_type_bits(int32_t data_type);
/* The bytes raw_data must hold for t's data_type and dims: elements times
 * bits, sub-byte types packed and rounded up to whole bytes (onnx-ml.proto,
 * TensorProto.raw_data). Returns 1 with *bytes set; 0 when the size is not
 * fixed (STRING, UNDEFINED or an unknown data_type, or a segment of a
 * larger tensor); -1 when a dimension is negative or the size does not fit
 * 64 bits. */
int onnxio_tensor_raw_size(const onnxio_TensorProto *t, uint64_t *bytes);

/* ---- parse and serialize (any message, memory to memory) ------------ */

/* Parses `size` bytes of protobuf wire format as a message of type `desc`
 * into a new message in `arena` (*out). Strings and structure are copied into
 * the arena. Payloads: copied into owned buffers, unless opts->no_copy, in
 * which case each payload points into `data` and holds a reference to
 * `owner`, or, when `owner` is NULL, borrows `data` (the caller keeps it
 * alive while the message is used). External data is not touched here.
 * Errors: ONNXIO_ERR_DECODE (what and at which byte offset),
 * ONNXIO_ERR_DEPTH, ONNXIO_ERR_NO_MEMORY, ONNXIO_ERR_INVALID_ARGUMENT. On
 * error *out is NULL and the arena may hold garbage (free it or ignore). */
onnxio_status onnxio_parse(const onnxio_message_desc *desc, const void *data, size_t size,
                           onnxio_buffer *owner, const onnxio_parse_options *opts,
                           onnxio_arena *arena, void **out);
/* Parses into an existing message, merging as protobuf's MergeFromString. */
onnxio_status onnxio_parse_into(void *msg, const void *data, size_t size, onnxio_buffer *owner,
                                const onnxio_parse_options *opts, onnxio_arena *arena);

/* Runs the size pass and returns the exact encoded size of `msg` in bytes
 * (also cached in every message of the tree for the write pass), or
 * ONNXIO_SIZE_TOO_DEEP when the tree is nested deeper than
 * ONNXIO_DEFAULT_MAX_DEPTH (onnxio_serialize_into then fails with
 * ONNXIO_ERR_DEPTH; saving to a file takes a higher max_depth). */
uint64_t onnxio_serialized_size(void *msg);
#define ONNXIO_SIZE_TOO_DEEP UINT64_MAX
/* Serializes `msg` into `size` bytes at `dst`; `size` must be what
 * onnxio_serialized_size(msg) just returned. Bytes are those libprotobuf
 * writes. Errors: ONNXIO_ERR_INVALID_ARGUMENT (size mismatch),
 * ONNXIO_ERR_MISSING_PAYLOAD, ONNXIO_ERR_DEPTH. */
onnxio_status onnxio_serialize_into(void *msg, void *dst, uint64_t size);
/* Serializes `msg` into a new buffer (*out, one reference). Errors as
 * onnxio_serialize_into, and ONNXIO_ERR_NO_MEMORY. */
onnxio_status onnxio_serialize(void *msg, onnxio_buffer **out);
/* Makes a serialization's destination larger, as realloc does: returns
 * memory of `size` bytes whose first `used` bytes are those at `data` (which
 * it may release), or NULL when out of memory (`data` then stays valid and
 * is the caller's to release). `data` is NULL when the destination was. */
typedef void *(*onnxio_grow_fn)(void *user, void *data, size_t used, size_t size);
/* Serializes `msg` in one pass, without the size pass: into `dst`
 * (`capacity` bytes; NULL and 0 are allowed), asking `grow` for more room
 * as needed (at least doubling; `grow` NULL: running out of room is
 * ONNXIO_ERR_INVALID_ARGUMENT). *size gets the bytes written, the same
 * bytes as onnxio_serialize_into; they start at the destination's last
 * address (`dst` or what `grow` returned last; the caller keeps track in
 * `user`). A sub-message's length is written at the width of its
 * cached_size, which a parse sets to the bytes it read and a serialization
 * to the bytes it wrote, and moved when that width turns out wrong: a tree
 * unchanged since it was parsed or serialized is written without a move,
 * and msg->cached_size (every message's, in fact) is then the exact size,
 * the best `capacity` for the next call. Errors: ONNXIO_ERR_NO_MEMORY
 * (grow returned NULL), ONNXIO_ERR_MISSING_PAYLOAD, ONNXIO_ERR_DEPTH
 * (nested deeper than ONNXIO_DEFAULT_MAX_DEPTH),
 * ONNXIO_ERR_INVALID_ARGUMENT. */
onnxio_status onnxio_serialize_to(void *msg, void *dst, size_t capacity, onnxio_grow_fn grow, void *user,
                                  size_t *size);

/* ---- files ---------------------------------------------------------- */

/* Loads a model file (ModelProto) into `arena`. The file is memory-mapped;
 * with no_copy, payloads point into the mapping and hold a reference to it,
 * otherwise they are read into owned buffers (on num_threads threads) and
 * the mapping is released before returning (docs/memory.md has every mode).
 * External data is read (unless load_external_data is OFF) from files
 * resolved under opts->base_dir or the model's directory, opened with
 * onnxio_external_data_open's checks. Refused, each before any payload is
 * allocated or read: absolute locations and '..' components
 * (ONNXIO_ERR_PATH_ABSOLUTE / PATH_PARENT), symlinks leading outside that
 * directory (PATH_ESCAPES), anything but a regular file (PATH_SPECIAL),
 * data files with other hard links (PATH_LINK), a location naming the model
 * file itself (PATH_SELF), offset/length outside the file (EXTERNAL_RANGE),
 * a length that does not match the tensor's data_type and dims
 * (EXTERNAL_DATA), more than max_expansion (EXPANSION), and with
 * verify_checksum a SHA-1 mismatch (CHECKSUM, once the payloads are placed).
 * Tensors that refer to the same bytes share one payload buffer. Loaded tensors hold their payload in
 * raw_data, their external_data keys removed and data_location set to
 * DEFAULT (present, as the onnx package's load_external_data_for_tensor
 * leaves it).
 *
 * Every format is read, as onnxio_detect_kind says of the file (its
 * content first, its name second): a file that onnxio_detect_format calls
 * an archive is loaded as an .onnxz archive (see ".onnxz archives" below;
 * base_dir does not apply); tensors read from its entries lose
 * data_location altogether, as they were before the archive was written.
 * Text (protobuf text format, JSON, ONNX's textual syntax: ONNXIO_FORMAT_TEXT
 * in a file whose extension names a text format, or any text that binary
 * protobuf refuses) is read by onnxio_text_parse in the style its content
 * shows (onnxio_detect_text_style), within max_depth and max_expansion,
 * its errors naming line and column; its raw_data are owned copies
 * (no_copy, payload_fn and skip_raw_data do not apply to them), and its
 * external data is read as a binary model's. A binary file whose first
 * bytes are printable stays binary. When an earlier
 * save of `path` was interrupted, its journal is finished or rolled back
 * first (see onnxio_save_model). A load never mixes two saves: one that
 * finds a save of `path` in progress waits for it, and one that a save
 * overtook while it opened the data files (the model from before the save,
 * a data file from after) starts again; after 16 such starts it fails with
 * ONNXIO_ERR_IO. A load called from inside a save of the same file on the
 * same thread (a progress callback, a streaming save's tensor source)
 * reads the files as they were before that save. */
onnxio_status onnxio_load_model(const char *path, const onnxio_parse_options *opts,
                                onnxio_arena *arena, onnxio_ModelProto **out);
/* Loads a model from bytes (see onnxio_parse for ownership). External data
 * is read only when opts->base_dir is given. Bytes that start like a zip
 * archive are loaded as an .onnxz archive (no_copy payloads then point into
 * `data`). */
onnxio_status onnxio_load_model_from_bytes(const void *data, size_t size, onnxio_buffer *owner,
                                           const onnxio_parse_options *opts, onnxio_arena *arena,
                                           onnxio_ModelProto **out);
/* Loads a file holding any one message (e.g. a TensorProto .pb file), in
 * any of the formats onnxio_load_model reads (ONNX's textual syntax holds
 * a ModelProto, GraphProto, FunctionProto or NodeProto only:
 * ONNXIO_ERR_INVALID_ARGUMENT for others); external data is read for a
 * ModelProto only. */
onnxio_status onnxio_load_file(const onnxio_message_desc *desc, const char *path,
                               const onnxio_parse_options *opts, onnxio_arena *arena, void **out);

/* Saves a model to `path`, crash-consistently (docs/design.md, "The save
 * protocol"): every file is written in full as a temporary file beside its
 * target and fsync'd before any target is replaced; a save of several files
 * (a model with external data) records its renames in a journal first, so
 * that whatever instant the process dies, the old model and its data or the
 * new ones are what the next onnxio load or save of `path` sees, and it
 * removes what the dead save left behind. On any failure the previous files
 * are untouched and the temporary files removed.
 *
 * The target: a symlink is written through to the file it leads to (as cp
 * does); an existing file keeps its mode, and one that is not writable is
 * refused (ONNXIO_ERR_IO, EACCES); a new file gets 0666 minus the process
 * umask (the umask is never changed); a target that is not a regular file
 * (a pipe, a terminal, /dev/null) is written in one sequential pass, without
 * a temporary file.
 *
 * Payloads are written at their offsets on num_threads threads; the bytes
 * do not depend on the count. With opts->external_data (location set, or
 * all_tensors_to_one_file OFF), the raw_data payloads it selects (see
 * onnxio_external_data_options) go to data files and the saved model refers
 * to them; `model` itself is not modified; when no payload qualifies, no
 * data file is written. The same path checks as on load apply to the data
 * files. A tensor that is still external and refers to a data file this
 * save replaces is refused (ONNXIO_ERR_EXTERNAL_DATA): load its data first.
 * A path ending in ".onnxz" is saved as an archive (onnxio_save_archive).
 * ONNXIO_ERR_DEPTH for a tree nested deeper than opts->max_depth. */
onnxio_status onnxio_save_model(onnxio_ModelProto *model, const char *path,
                                const onnxio_serialize_options *opts);
/* Saves any message to `path` as onnxio_save_model does (no external
 * data). */
onnxio_status onnxio_save_file(void *msg, const char *path, const onnxio_serialize_options *opts);

/* Reads the payloads of every tensor of `model` that is still external
 * (data_location = EXTERNAL), resolving locations under `base_dir` with the
 * same checks as onnxio_load_model. opts->no_copy maps each data file once
 * and shares it; otherwise payloads are read (in parallel with
 * num_threads) into owned buffers. payload_fn and verify_checksum apply. */
onnxio_status onnxio_load_external_data(onnxio_ModelProto *model, const char *base_dir,
                                        const onnxio_parse_options *opts);
/* The same for one tensor (does nothing when it is not external). */
onnxio_status onnxio_load_tensor_external_data(onnxio_TensorProto *tensor, const char *base_dir,
                                               const onnxio_parse_options *opts);

/* ---- .onnxz archives (docs/onnxz.md) --------------------------------- */

/* An .onnxz file is a zip archive (PKWARE APPNOTE 6.3.x): one stored entry
 * per large tensor payload, each starting on an aligned file offset (the
 * padding is an extra field of the local header), and last the entry
 * "__MODEL_PROTO", the ModelProto, whose tensors refer to their entries
 * with the ordinary external data keys (data_location = EXTERNAL,
 * location = entry name, offset and length within the entry). ZIP64
 * records are written whenever a size, offset or count needs them, and
 * every entry has its CRC-32. docs/onnxz.md is the full format.
 *
 * onnxio_load_model and onnxio_load_model_from_bytes recognize an archive
 * by its first bytes (onnxio_detect_format) and load it: the central
 * directory is validated, __MODEL_PROTO parsed, and every external tensor
 * resolved to its entry (unless load_external_data is OFF: the tensors then
 * stay external, referring to entry names). no_copy gives payloads that
 * point into the archive's mapping (stored entries whose data address is a
 * multiple of opts->alignment: for a file, its offset; others are copied);
 * copy mode reads them on num_threads threads, checking CRC-32s (see
 * verify_crc). Entries compressed with deflate are inflated once, however
 * many tensors refer to them, and count against max_expansion.
 * onnxio_save_model writes an archive when onnxio_path_is_archive(path).
 *
 * Errors of a malformed or hostile archive, each before any payload is
 * allocated: ONNXIO_ERR_ARCHIVE for bad or inconsistent records (end of
 * central directory, ZIP64 records, central headers that disagree with
 * local headers), entry names that are absolute or have a '..' component
 * or a NUL, duplicate names, entries that overlap each other or the
 * central directory or run past the end of the file, encrypted entries,
 * methods other than stored and deflate, a missing __MODEL_PROTO;
 * ONNXIO_ERR_EXTERNAL_DATA / ONNXIO_ERR_EXTERNAL_RANGE for a tensor whose
 * location is not an entry, or whose offset and length do not fit the
 * entry or its type and shape; ONNXIO_ERR_CHECKSUM for a CRC-32 mismatch;
 * ONNXIO_ERR_EXPANSION past max_expansion. */

/* The entry that holds the model. */
#define ONNXIO_ARCHIVE_MODEL_ENTRY "__MODEL_PROTO"
/* Compression methods of entries (APPNOTE 4.4.5); onnxio reads these two. */
#define ONNXIO_ARCHIVE_STORED 0
#define ONNXIO_ARCHIVE_DEFLATED 8

/* One entry of an archive's central directory. */
typedef struct onnxio_archive_entry {
    const char *name;         /* the entry name, NUL-terminated (valid while the archive is open) */
    size_t name_size;         /* bytes of name */
    uint64_t header_offset;   /* file offset of its local header */
    uint64_t data_offset;     /* file offset of its first data byte */
    uint64_t size;            /* uncompressed bytes */
    uint64_t compressed_size; /* bytes in the file (= size when stored) */
    uint32_t crc32;           /* as recorded in the central directory */
    uint16_t method;          /* 0 stored, 8 deflate */
} onnxio_archive_entry;

/* An opened, validated archive (its central directory and local headers;
 * payloads are not read). */
typedef struct onnxio_archive onnxio_archive;

/* Maps the archive at `path` and validates its structure (the checks
 * above). *out is freed with onnxio_archive_close. */
onnxio_status onnxio_archive_open(const char *path, onnxio_archive **out);
/* The same over `size` bytes at `data`; `owner` (may be NULL: the caller
 * keeps the bytes alive until the archive is closed) gets a reference. */
onnxio_status onnxio_archive_open_bytes(const void *data, size_t size, onnxio_buffer *owner, onnxio_archive **out);
void onnxio_archive_close(onnxio_archive *archive);
/* Entries in central-directory order. */
size_t onnxio_archive_entry_count(const onnxio_archive *archive);
const onnxio_archive_entry *onnxio_archive_entry_at(const onnxio_archive *archive, size_t index);
/* The entry with this exact name, or NULL. */
const onnxio_archive_entry *onnxio_archive_find(const onnxio_archive *archive, const char *name);
/* Whether `e` is the model (ONNXIO_ARCHIVE_MODEL_ENTRY). */
bool onnxio_archive_entry_is_model(const onnxio_archive_entry *e);
/* Whether a no_copy load of the archive from its file borrows the tensor
 * entry `e` from the mapping rather than copying it: it is stored and its
 * data offset is a multiple of `alignment` (0: ONNXIO_DEFAULT_ALIGNMENT),
 * the no_copy load's alignment option. */
bool onnxio_archive_entry_borrowable(const onnxio_archive_entry *e, uint64_t alignment);

/* Structure-first reading (remote sources: a front end that
 * fetches byte ranges itself, python/onnxio/_remote.py). The front end
 * fetches the last bytes of the file (e.g. 64 KiB) and opens the archive
 * from them; the library validates the end records, the ZIP64 records and
 * the central directory as onnxio_archive_open does, and asks for more
 * when they start before the tail. Each entry's local header is checked
 * when the front end hands over the entry's bytes
 * (onnxio_archive_entry_read), against its central header and the entries
 * around it; until then the checks that need it use the smallest local
 * header the central header allows (30 bytes + the name: every overlap
 * and size check of onnxio_archive_open that the central directory can
 * decide is made at open). Entries the front end never fetches never have
 * their local header checked. */

/* Opens the archive of `file_size` bytes from its last `tail_size` bytes
 * at `tail` (`owner`, may be NULL, gets a reference; otherwise the caller
 * keeps them alive until the archive is closed). When the end records or
 * the central directory start before the tail (or the end record must be
 * searched for in the whole file: docs/onnxz.md, "Finding the end
 * record"), returns ONNXIO_OK with *out NULL and *need the file offset
 * from which the bytes are needed (always inside the file, and only after
 * the records that point there were checked): open again with the tail
 * from *need. Otherwise *need is UINT64_MAX and *out the archive, or the
 * error onnxio_archive_open gives. With the whole file as the tail, every
 * local header is checked at open, as onnxio_archive_open_bytes does. In
 * an archive opened from a shorter tail, an entry's data_offset is 0 until
 * onnxio_archive_entry_read has checked it. */
onnxio_status onnxio_archive_open_tail(const void *tail, size_t tail_size, uint64_t file_size, onnxio_buffer *owner,
                                       uint64_t *need, onnxio_archive **out);
/* The file's bytes [*start, *end) a reader fetches to read entry `e`: its
 * local header and its data (at most 30 + name + 65535 + compressed size
 * bytes, and never past the next entry's local header or the central
 * directory). ONNXIO_ERR_INVALID_ARGUMENT if `e` is not the archive's. */
onnxio_status onnxio_archive_entry_span(const onnxio_archive *archive, const onnxio_archive_entry *e, uint64_t *start,
                                        uint64_t *end);
/* Reads entry `e` from `bytes`, the file's bytes from its span's start
 * (`size` at least the span's length; bytes past the span are ignored):
 * its local header is checked against its central header (name, method,
 * flags, CRC-32 and sizes, the data inside the span: ONNXIO_ERR_ARCHIVE,
 * an entry whose header or data reach past the span overlapping the next
 * entry), e->data_offset set, then its data: a stored entry's CRC-32 is
 * checked when `verify_crc` (ONNXIO_ERR_CHECKSUM) and *data points into
 * `bytes` (*inflated NULL); a deflated entry is inflated into *inflated (a
 * new buffer, CRC-32 always checked; refused past max_expansion times its
 * compressed size plus ONNXIO_EXPANSION_ALLOWANCE, 0: the default) and
 * *data points at its bytes. e->size bytes at *data either way. */
onnxio_status onnxio_archive_entry_read(onnxio_archive *archive, const onnxio_archive_entry *e, const void *bytes,
                                        size_t size, bool verify_crc, uint64_t max_expansion, const void **data,
                                        onnxio_buffer **inflated);

/* One external payload of a model read from an archive: the entry and the
 * checked range inside its uncompressed bytes. */
typedef struct onnxio_archive_range {
    onnxio_TensorProto *tensor; /* a tensor of the tree (data_location EXTERNAL) */
    const onnxio_archive_entry *entry;
    uint64_t offset; /* the payload is the entry's bytes [offset, offset + length) */
    uint64_t length;
} onnxio_archive_range;

/* Lists every tensor under `root` (as onnxio_external_ranges walks them)
 * whose data is external, resolved in `archive` by a load's rules: the
 * keys parsed (ONNXIO_ERR_EXTERNAL_DATA, ONNXIO_ERR_PATH_ABSOLUTE,
 * ONNXIO_ERR_PATH_PARENT), the location (leading "./" removed) an entry
 * (ONNXIO_ERR_EXTERNAL_DATA) other than the model (ONNXIO_ERR_PATH_SELF),
 * the range inside the entry's uncompressed size and the length what the
 * type and shape need (ONNXIO_ERR_EXTERNAL_RANGE, ONNXIO_ERR_EXTERNAL_DATA).
 * *out (free with onnxio_archive_ranges_free; NULL when *count is 0). */
onnxio_status onnxio_archive_ranges(onnxio_archive *archive, onnxio_message *root, onnxio_archive_range **out,
                                    size_t *count);
void onnxio_archive_ranges_free(onnxio_archive_range *ranges);

/* Saves `model` as an .onnxz archive at `path`, whatever its extension,
 * atomically (temporary file, fsync, rename). Every tensor anywhere in the
 * model (initializers, attributes, sparse tensors, functions) whose loaded
 * raw_data has at least opts->external_data.size_threshold bytes (0:
 * ONNXIO_DEFAULT_EXTERNAL_THRESHOLD)
 * gets an entry named after the tensor (characters outside [A-Za-z0-9._-]
 * replaced by '_', never starting with '.', unique also when case is
 * folded, by a "_<n>" suffix), its data on a multiple of
 * opts->alignment (0: 64) in the file. Payloads and their
 * CRC-32s are written on num_threads threads; the bytes do not depend on
 * the count. `model` is not modified. Other external_data options must be
 * unset (ONNXIO_ERR_INVALID_ARGUMENT). A tensor that is still external
 * (never loaded) is refused with ONNXIO_ERR_MISSING_PAYLOAD. */
onnxio_status onnxio_save_archive(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *opts);

/* Replaces the __MODEL_PROTO of the existing archive at `path` by `model`,
 * without moving or rewriting any other entry. Tensors of `model` that are
 * external must refer to entries of the archive (as after a load with
 * load_external_data OFF), checked as on load; loaded payloads are written
 * inline in the new __MODEL_PROTO. The new model and central directory are
 * appended and the old end records removed in an order that leaves, after a
 * crash at any point, a valid archive with either the old or the new model
 * (docs/onnxz.md, "Replacing the model"); the old model's bytes stay in the
 * file, unreferenced, until the archive is rewritten (onnxio_save_archive).
 * Memory mappings of the archive stay valid. */
onnxio_status onnxio_archive_replace_model(const char *path, onnxio_ModelProto *model,
                                           const onnxio_serialize_options *opts);

/* Removes every temporary file that onnxio saves are writing in this
 * process and have not committed yet (the journal of a save that has
 * committed is left for the next load or save to finish). Async-signal-safe:
 * meant for a handler of SIGINT, SIGTERM or SIGHUP of a program whose onnxio
 * calls run on the thread that takes the signal (onnxio's own threads block
 * signals), before it exits. The onnxio command does this. */
void onnxio_remove_temporary_files(void);

/* ---- streaming saves ------------------------------------------------ */

/* One tensor handed to a streaming save by its source: `size` bytes at
 * `data`, the tensor's raw_data as ONNX lays it out (little-endian, sub-byte
 * types packed), for the placeholder initializer `name` (NUL-terminated).
 * Both stay the source's: they must stay valid until the source is called
 * again or the save returns; the library reads them and never keeps them. */
typedef struct onnxio_stream_tensor {
    const char *name;
    const void *data;
    uint64_t size;
} onnxio_stream_tensor;

/* The tensor source of a streaming save: fills *out with the next tensor
 * and returns 1, returns 0 when there are no more, or a negative value to
 * abandon the save (ONNXIO_ERR_STREAM, every existing file left as it was,
 * no temporary file left). Called on the thread that called the save, never
 * twice at once; tensors may come in any order. */
typedef int (*onnxio_tensor_source_fn)(void *user, onnxio_stream_tensor *out);

/* Saves a model whose initializer payloads arrive one at a time from
 * `source`, with memory bounded by the largest tensor the source holds (the
 * library keeps none of the streamed bytes, except those of tensors that
 * stay inline in the model of an external data save or an archive: smaller
 * than external_data.size_threshold, kept until the model is written).
 *
 * `model` is the structure: its **placeholders** are the initializers (of
 * every graph) with no payload: no raw_data, no typed data (float_data,
 * int32_data, ...), not external. Each placeholder's byte count is known
 * from its data_type and dims (onnxio_tensor_raw_size; STRING and unknown
 * types cannot be placeholders), so the layout of every file is fixed before
 * any tensor arrives, and each tensor is written at its place as it comes.
 * The source must give every placeholder exactly once, by name, with
 * exactly that many bytes. Initializers that hold their payload are saved
 * as onnxio_save_model saves them. `model` is not modified.
 *
 * The files are the bytes onnxio_save_model(full, path, opts) writes for
 * the model `full` whose placeholders hold the streamed bytes as raw_data,
 * whatever the order of arrival: with opts->external_data, data files (one
 * file, max_file_size parts, or one file per tensor; with checksum, each
 * data file is read back once for its SHA-1); a path ending in ".onnxz",
 * an archive; otherwise one .onnx file with every payload inline, its
 * structure written first with holes where the payloads go (their lengths
 * are known), filled as they arrive.
 *
 * Crash-consistent as onnxio_save_model (docs/design.md, "The save
 * protocol"): the same transaction of temporary files, fsync (unless
 * opts->fsync is OFF), journal and renames; a per-tensor data file is
 * created when its tensor arrives and synced and closed when it is written.
 * On any failure, the save is abandoned: every existing file is as it was
 * and no temporary file is left. The target must be a regular file (or
 * not exist): ONNXIO_ERR_IO for a pipe or a device.
 *
 * Errors: ONNXIO_ERR_STREAM, naming the tensor, for a name that is no
 * placeholder, a tensor given twice, a byte count that does not match,
 * placeholders never given, two placeholders with one name, a placeholder
 * whose size is not fixed, or a source that returned a negative value;
 * ONNXIO_ERR_MISSING_PAYLOAD for a payload that was never loaded; the
 * errors of onnxio_save_model. opts->progress counts every payload byte,
 * streamed or not. */
onnxio_status onnxio_save_streaming(onnxio_ModelProto *model, const char *path, onnxio_tensor_source_fn source,
                                    void *source_user, const onnxio_serialize_options *opts);

/* ---- safetensors files ---------------------------------------------- */

/* The safetensors format (https://github.com/huggingface/safetensors): an
 * 8-byte little-endian length N, N bytes of UTF-8 JSON (written padded with
 * spaces so that N is a multiple of 8), then the data. The JSON is one
 * object: each tensor's name maps to {"dtype": "F16", "shape": [..],
 * "data_offsets": [begin, end]} (byte offsets from the start of the data),
 * and the optional key "__metadata__" to an object of string values. The
 * tensors cover the data exactly: sorted by offset, each begins where the
 * previous one ends, the last ends at the end of the file, and end - begin
 * is the elements of `shape` times the dtype's size.
 *
 * onnxio reads the header with its own parser, which accepts exactly this
 * schema: JSON (RFC 8259) with no duplicate key, every tensor key present
 * once and no other, offsets and dimensions plain non-negative integers.
 * It refuses, with ONNXIO_ERR_SAFETENSORS and a message naming the tensor
 * and the byte of the file: a file shorter than 8 bytes, N larger than
 * ONNXIO_SAFETENSORS_MAX_HEADER or than the rest of the file, JSON that is
 * malformed or not UTF-8, an unknown dtype, offsets with a gap, an overlap
 * or an end past the data, a byte count that does not match dtype and
 * shape. Nothing is allocated from a number the file states before it is
 * checked against the file's size. */

/* The largest header accepted: 100 MB, the reference implementation's
 * limit. */
#define ONNXIO_SAFETENSORS_MAX_HEADER 100000000u

/* Whether `path` names a .safetensors file: it ends in ".safetensors" (how
 * the onnxio command tells a safetensors OUT). */
bool onnxio_path_is_safetensors(const char *path);

/* The ONNX TensorProto.DataType of a safetensors dtype ("F32": FLOAT,
 * "F8_E5M2": FLOAT8E5M2, "C64": COMPLEX64, ...: the safetensors column of
 * the data type table, onnxio_data_type_info), 0
 * (UNDEFINED) for a dtype with no ONNX equivalent that onnxio maps ("F4",
 * "F6_E2M3", "F6_E3M2": their bit packing is not specified alike by both
 * formats) or no dtype at all. `dtype` is NUL-terminated. */
int32_t onnxio_safetensors_data_type(const char *dtype);
/* The safetensors dtype of an ONNX data type ("F32" for FLOAT; static
 * storage), or NULL when safetensors has none (STRING, COMPLEX128, the
 * 2- and 4-bit integers, ...). The two functions read the data type table. */
const char *onnxio_safetensors_dtype(int32_t data_type);

/* One tensor of an opened file. */
typedef struct onnxio_safetensors_tensor {
    const char *name;     /* NUL-terminated (a name holding "\u0000" is refused) */
    size_t name_size;     /* bytes of name */
    const char *dtype;    /* the dtype as written, static storage ("F16") */
    int32_t data_type;    /* onnxio_safetensors_data_type(dtype): 0 when none */
    size_t rank;          /* entries of shape */
    const int64_t *shape; /* dimensions, each at most INT64_MAX */
    uint64_t offset;      /* file offset of the first byte (8 + N + begin) */
    uint64_t size;        /* bytes (end - begin) */
} onnxio_safetensors_tensor;

/* An opened .safetensors file: its validated header (nothing of the data
 * is read). */
typedef struct onnxio_safetensors onnxio_safetensors;

/* Reads and validates the header of the file at `path` (the checks above).
 * *out is freed with onnxio_safetensors_close. Errors:
 * ONNXIO_ERR_SAFETENSORS, ONNXIO_ERR_NOT_FOUND, ONNXIO_ERR_IO (also for a
 * path that is not a regular file), ONNXIO_ERR_NO_MEMORY. */
onnxio_status onnxio_safetensors_open(const char *path, onnxio_safetensors **out);
/* The same over `size` bytes at `data` (a whole file; the caller keeps them
 * while the result is used: names and shapes are copies, offsets refer to
 * `data`). */
onnxio_status onnxio_safetensors_open_bytes(const void *data, size_t size, onnxio_safetensors **out);
/* NULL is a no-op. */
void onnxio_safetensors_close(onnxio_safetensors *file);
/* Tensors, in the order of their offsets. */
size_t onnxio_safetensors_count(const onnxio_safetensors *file);
const onnxio_safetensors_tensor *onnxio_safetensors_at(const onnxio_safetensors *file, size_t index);
/* The tensor with this exact name (NUL-terminated), or NULL. */
const onnxio_safetensors_tensor *onnxio_safetensors_find(const onnxio_safetensors *file, const char *name);
/* The "__metadata__" entries, in file order: key and value
 * (NUL-terminated; valid while the file is open). 0 / NULL past the end. */
size_t onnxio_safetensors_metadata_count(const onnxio_safetensors *file);
const char *onnxio_safetensors_metadata_key(const onnxio_safetensors *file, size_t index);
const char *onnxio_safetensors_metadata_value(const onnxio_safetensors *file, size_t index);

typedef struct onnxio_safetensors_options {
    /* sizeof(onnxio_safetensors_options), or 0 (see "Options"). */
    size_t struct_size;
    /* The tensors to load or save, by name (`name_count` NUL-terminated
     * strings); NULL: all (see each function). */
    const char *const *names;
    size_t name_count;
    /* Load: payloads point into a private mapping of the file (one
     * onnxio_buffer that every payload holds a reference to; it is unmapped
     * with the last one) instead of being read into owned buffers. See
     * docs/security.md, "no_copy and files that change". */
    bool no_copy;
    /* Load with names NULL: tensors of the file that no initializer has are
     * skipped instead of refused. */
    bool allow_unknown;
    /* Threads for payload reads and writes: 0 = one per core, 1 = serial. */
    int num_threads;
    /* Save: "__metadata__" entries, `metadata_count` pairs of
     * NUL-terminated UTF-8 strings: key, value, key, value, ... */
    const char *const *metadata;
    size_t metadata_count;
    /* Save: as onnxio_serialize_options.fsync (OFF: no fsync). */
    onnxio_toggle fsync;
    /* Save: as onnxio_serialize_options.max_expansion, the save budget:
     * tensors whose payloads add up to more than this many times the
     * distinct bytes they come from, plus ONNXIO_EXPANSION_ALLOWANCE, are
     * refused (ONNXIO_ERR_EXPANSION) before anything is written. 0:
     * ONNXIO_DEFAULT_MAX_EXPANSION; UINT64_MAX: no limit. */
    uint64_t max_expansion;
} onnxio_safetensors_options;

#define ONNXIO_SAFETENSORS_OPTIONS_INIT ONNXIO_OPTIONS_INIT_(onnxio_safetensors_options)

/* Fills initializers of `model`'s main graph (graph.initializer) by name
 * from the .safetensors file at `path`. With opts->names NULL, every tensor
 * of the file is loaded into the initializer of its name; a file tensor
 * that no initializer has is refused (ONNXIO_ERR_SAFETENSORS) unless
 * opts->allow_unknown, and initializers the file lacks keep what they hold.
 * With names, exactly those tensors are loaded, and each must be in the file
 * and in the model. Each initializer must already have the tensor's type
 * and shape: its data_type the dtype's (onnxio_safetensors_data_type) and
 * its dims the shape, else ONNXIO_ERR_SAFETENSORS ("tensor 'w': safetensors
 * has F32 [4, 4], the model has FLOAT16 [4, 4]"); two initializers of the
 * same name are refused too. A filled initializer holds its payload in
 * raw_data; its typed data fields (float_data, ...), external_data and
 * data_location are cleared. Payloads are copied into owned buffers (read
 * on num_threads threads), or with opts->no_copy point into a private
 * mapping of the file. Everything is checked and read before the first
 * initializer changes: on any error `model` is as it was. Errors: those of
 * onnxio_safetensors_open, ONNXIO_ERR_SAFETENSORS as above,
 * ONNXIO_ERR_INVALID_ARGUMENT (no model, no graph, bad options),
 * ONNXIO_ERR_NO_MEMORY, ONNXIO_ERR_IO. */
onnxio_status onnxio_safetensors_load_into(onnxio_ModelProto *model, const char *path,
                                           const onnxio_safetensors_options *opts);

/* Writes initializers of `model`'s main graph as a .safetensors file at
 * `path`, with the save protocol of onnxio_save_model (a temporary file
 * beside the target, fsync'd, renamed over it: a failed or killed save
 * leaves the previous file whole). opts->names NULL: every initializer;
 * else those named, in any order (each must exist). The file is what the
 * reference writer (safetensors' serialize_file) makes of the same tensors:
 * tensors ordered by dtype (larger dtypes first, as its Dtype enum orders
 * them) and then by name, "__metadata__" first when opts->metadata is given,
 * the header compact JSON padded with spaces to a multiple of 8 bytes, so
 * that every tensor starts on a multiple of its element size. Values in
 * raw_data are written as they are; values in typed fields (float_data,
 * int32_data, int64_data, double_data, uint64_data) are converted to
 * little-endian raw bytes as onnx's numpy_helper.to_array reads them.
 * `model` is not modified. Errors: ONNXIO_ERR_SAFETENSORS for a data type
 * safetensors cannot hold (onnxio_safetensors_dtype NULL), a segment, a
 * name that is not UTF-8 or appears twice, values that do not match the
 * dims; ONNXIO_ERR_MISSING_PAYLOAD for a tensor whose data was never loaded
 * (still external, or skip_raw_data); ONNXIO_ERR_INVALID_ARGUMENT (no
 * graph, an unknown name, bad options); ONNXIO_ERR_IO,
 * ONNXIO_ERR_NO_MEMORY. */
onnxio_status onnxio_safetensors_save(onnxio_ModelProto *model, const char *path,
                                      const onnxio_safetensors_options *opts);

/* ---- tensor slices (partial reads) --------------------------------- */

/* Reading part of one tensor of a model file without loading the model:
 * the file's structure is parsed as a no_copy load parses it (from a
 * private mapping: only the pages that hold structure are read, never a
 * payload), then only the bytes of the requested elements are read, with
 * one pread per contiguous run of them, on the thread pool. The source is a
 * model path: an .onnx file with inline payloads, an .onnx file with
 * external data (resolved under base_dir or the model's directory, with
 * onnxio_external_data_open's checks), or an .onnxz archive (known by its
 * first bytes). A tensor is an initializer of the main graph or of a
 * subgraph, found by name (the first in tree order).
 *
 * A slice is one half-open range [start, stop) per axis, steps of 1, with
 * 0 <= start <= stop <= dim: the elements whose index on every axis lies
 * in its range. The slice's bytes are those elements in row-major order,
 * packed as raw_data packs them: what the raw_data of a tensor of dims
 * (stop - start, ...) holding them would be. For the 4- and 2-bit types
 * (INT4, UINT4, FLOAT4E2M1, INT2, UINT2; two or four elements per byte),
 * every run of the slice must start and end on a whole byte of the
 * payload (or end at the tensor's end); otherwise ONNXIO_ERR_SLICE says
 * which axis breaks it. FLOAT6 types (6 bits) follow the same rule.
 *
 * Values in a typed field (float_data, int32_data, ...) are converted
 * whole to raw bytes as onnx's numpy_helper.to_array reads them, then
 * sliced, when they take at most 64 MiB decoded; larger ones fail with
 * ONNXIO_ERR_SLICE (load the model whole). What cannot be sliced
 * (ONNXIO_ERR_SLICE): STRING tensors, segments, UNDEFINED or unknown data
 * types. Block digests are verified: every whole block a slice touches is
 * hashed (from the mapping, or read a block at a time) and compared with
 * its digest, ONNXIO_ERR_CHECKSUM naming the tensor and the block; the
 * other blocks are not read. Checksums are not (neither an external
 * "checksum" key nor an archive entry's CRC-32: both cover whole entries,
 * which a slice does not read). A deflated archive entry is
 * inflated whole when it is first read (charged to max_expansion).
 * Hostile files fail as loads do (the same checks of structure, locations,
 * ranges and sizes, before anything is allocated from a number they
 * state). */

/* One axis of a slice: the indices start, start + 1, ..., stop - 1. */
typedef struct onnxio_slice_range {
    int64_t start;
    int64_t stop;
} onnxio_slice_range;

typedef struct onnxio_slice_options {
    /* sizeof(onnxio_slice_options), or 0 (see "Options"). */
    size_t struct_size;
    /* Threads for the reads: 0 = one per core, 1 = serial (every pread on
     * the calling thread). */
    int num_threads;
    /* Directory that external data locations are resolved under. NULL: the
     * directory of the model file. */
    const char *base_dir;
    /* The largest expansion of the structure's parse and of inflated
     * archive entries, as onnxio_parse_options.max_expansion (0: 100). */
    uint64_t max_expansion;
    /* Maximum message nesting depth, as onnxio_parse_options.max_depth. */
    int max_depth;
} onnxio_slice_options;

#define ONNXIO_SLICE_OPTIONS_INIT ONNXIO_OPTIONS_INIT_(onnxio_slice_options)

/* What one read did (filled when a read succeeds; members may be added at
 * the end, and only the members struct_size covers are written; 0 means
 * this version's layout). */
typedef struct onnxio_slice_stats {
    size_t struct_size;
    /* Bytes of the slice (what was written to the destination). */
    uint64_t bytes;
    /* Payload bytes read for it: the bytes of every pread, plus bytes
     * copied from memory that holds a payload whole (an inflated entry, an
     * inflated model entry). Structure bytes are not counted. */
    uint64_t bytes_read;
    /* Contiguous runs read (one pread each, cut into pieces of 8 MiB
     * between threads when larger). */
    uint64_t runs;
    /* Bytes of the tensor's whole payload. */
    uint64_t payload_bytes;
    /* Payload bytes hashed to check block digests: the whole blocks the
     * slice touches (0 without digests). */
    uint64_t bytes_checked;
} onnxio_slice_stats;

/* An opened model file: its parsed structure and its data files or archive
 * entries, opened when first needed. Calls on one handle may come from
 * several threads (they are serialized). */
typedef struct onnxio_tensor_file onnxio_tensor_file;

/* Opens the model file `path` (see above; read as onnxio_load_model reads
 * it, text formats included: onnxio_detect_kind) and parses its
 * structure; no payload is read. A journal left by an interrupted save of
 * `path` is finished or rolled back first (as onnxio_load_model does).
 * Errors: those of onnxio_load_model for the file itself (NOT_FOUND, IO,
 * DECODE, DEPTH, ARCHIVE, EXPANSION, SYNTAX, NO_MEMORY), INVALID_ARGUMENT
 * for bad options. *out is freed with onnxio_tensor_file_close. */
onnxio_status onnxio_tensor_file_open(const char *path, const onnxio_slice_options *opts, onnxio_tensor_file **out);
/* NULL is a no-op. */
void onnxio_tensor_file_close(onnxio_tensor_file *file);
/* The model's structure, valid until the handle is closed: tensors in
 * external data (and every tensor of an archive) are still external;
 * inline raw_data points into the file's mapping (reading it reads those
 * pages). Must not be modified. */
const onnxio_ModelProto *onnxio_tensor_file_model(const onnxio_tensor_file *file);
/* The initializer named `name` (NUL-terminated): the main graph's, else
 * the first of a subgraph in tree order; NULL when there is none. */
const onnxio_TensorProto *onnxio_tensor_file_find(const onnxio_tensor_file *file, const char *name);

/* Checks a slice of tensor `t` and gives its size in bytes (*bytes):
 * `rank` ranges, one per axis (rank == t's dims; 0 for a scalar). Errors
 * (ONNXIO_ERR_SLICE, naming the tensor, the axis and the values): another
 * rank, start < 0, stop < start, stop > dim, a packed type whose runs do
 * not begin and end on whole bytes, a tensor that cannot be sliced (see
 * above). */
onnxio_status onnxio_tensor_slice_size(const onnxio_TensorProto *t, const onnxio_slice_range *ranges, size_t rank,
                                       uint64_t *bytes);

/* Reads the slice `ranges` (`rank` of them) of the tensor `name` into
 * `dst` (`dst_size` bytes, at least the slice's: onnxio_tensor_slice_size),
 * or, when dst is NULL, into a new buffer of exactly the slice's size (*out,
 * one reference; 64-byte aligned). `stats` (optional) says what was read.
 * Errors: ONNXIO_ERR_NOT_FOUND (no initializer of that name),
 * ONNXIO_ERR_SLICE (see onnxio_tensor_slice_size),
 * ONNXIO_ERR_INVALID_ARGUMENT (dst too small, NULL arguments), the external
 * data errors of onnxio_load_model for the tensor's file or entry (checked
 * when it is first used), ONNXIO_ERR_IO (a failed or short read; or a
 * save of `path` replaced the model after the handle was opened, before
 * the data file this tensor needs was first opened: that file may hold
 * another save's bytes, so the read is refused and the handle must be
 * opened again), ONNXIO_ERR_CHECKSUM (a block the slice touches differs
 * from its digest), ONNXIO_ERR_NO_MEMORY. */
onnxio_status onnxio_tensor_file_read(onnxio_tensor_file *file, const char *name, const onnxio_slice_range *ranges,
                                      size_t rank, void *dst, uint64_t dst_size, onnxio_buffer **out,
                                      onnxio_slice_stats *stats);

/* The slice as a view, without copying, when it is one contiguous run of
 * its payload: *data points at its bytes in a private mapping of the file
 * (or an inflated entry), *size is their count, and *owner a new reference
 * that keeps them alive (they stay valid after the handle is closed; the
 * mapping goes with the last reference). When the slice is not one run,
 * *data is NULL and nothing else is set (read it with
 * onnxio_tensor_file_read). See docs/security.md, "no_copy and files that
 * change". Errors as onnxio_tensor_file_read. */
onnxio_status onnxio_tensor_file_view(onnxio_tensor_file *file, const char *name, const onnxio_slice_range *ranges,
                                      size_t rank, const void **data, uint64_t *size, onnxio_buffer **owner);

/* One call: open `path`, read the slice as onnxio_tensor_file_read does,
 * close; opened again when a save replaced the files in between (up to 16
 * times, each after waiting for the save). A program that reads several
 * tensors of one file opens it once. */
onnxio_status onnxio_read_tensor_slice(const char *path, const char *name, const onnxio_slice_range *ranges,
                                       size_t rank, void *dst, uint64_t dst_size, onnxio_buffer **out,
                                       const onnxio_slice_options *opts, onnxio_slice_stats *stats);

/* ---- consolidation -------------------------------------------------- */

typedef struct onnxio_consolidate_options {
    /* sizeof(onnxio_consolidate_options), or 0 (see "Options"). */
    size_t struct_size;
    /* Payloads of at least this many bytes move; 0 means
     * ONNXIO_DEFAULT_EXTERNAL_THRESHOLD. */
    uint64_t raw_data_threshold;
    /* Offset alignment in the buffer (a power of two, at most 1 GiB); 0
     * means 64. */
    uint64_t alignment;
} onnxio_consolidate_options;

/* Moves every loaded raw_data payload of at least
 * opts->raw_data_threshold bytes in the tree under `msg` (any message;
 * usually a ModelProto) into one new buffer: each payload at an offset
 * rounded up to opts->alignment, the buffer itself aligned the same way.
 * Each such tensor then holds a shared reference to the buffer and drops its
 * old payload; smaller, skipped and external payloads are left as they
 * were. Copies run on one thread per core. *out (optional) receives a new
 * reference to the buffer (NULL when no payload qualified). Errors:
 * ONNXIO_ERR_NO_MEMORY (nothing changed), ONNXIO_ERR_INVALID_ARGUMENT,
 * ONNXIO_ERR_DEPTH (past ONNXIO_MAX_DEPTH; nothing changed). */
onnxio_status onnxio_consolidate_tensors_to_buffer(void *msg, const onnxio_consolidate_options *opts,
                                                   onnxio_buffer **out);

/* ---- text formats --------------------------------------------------- */

/* Which text a message is written as, and read from. STR, PROTO and JSON
 * are written byte for byte as Python protobuf (protobuf 7, the upb
 * backend) writes them; ONNX is read only. */
typedef enum onnxio_text_style {
    /* str(message): upb's text encoder (floats and doubles as %g with
     * FLT_DIG / DBL_DIG digits, widened until they read back). What
     * `onnxio print` and the Python classes' str() give. */
    ONNXIO_TEXT_STR = 0,
    /* google.protobuf.text_format.MessageToString(message), which
     * onnx.save(..., format="textproto") writes: the same layout, floats as
     * Python's repr() of the shortest decimal that reads back as the same
     * float (type_checkers.ToShortestFloat), doubles as repr(). */
    ONNXIO_TEXT_PROTO = 1,
    /* google.protobuf.json_format.MessageToJson(message,
     * preserving_proto_field_name=True), which onnx.save(..., format="json")
     * writes: proto field names, indent 2, int64 and uint64 as strings,
     * bytes in base64, enums by name, "NaN" / "Infinity" / "-Infinity",
     * non-ASCII escaped as \uXXXX. No newline at the end. */
    ONNXIO_TEXT_JSON = 2,
    /* ONNX's textual syntax, the language of onnx.parser and onnx.printer
     * (files named *.onnxtxt): `<ir_version: 8, opset_import: ["" : 18]>
     * agraph (float[N, 128] X) => (float[N] Y) { Y = Relu(X) }`. Read
     * only: onnxio_text_format and onnxio_text_print refuse it
     * (ONNXIO_ERR_INVALID_ARGUMENT; onnx.printer writes it). What
     * onnxio_text_parse accepts and builds is what onnx.parser (ONNX 1.23)
     * does, see there. */
    ONNXIO_TEXT_ONNX = 3,
} onnxio_text_style;

/* Which text style `size` bytes of text (ONNXIO_FORMAT_TEXT) look like,
 * after white space and '#' comment lines: '{' is JSON; '<', or a name
 * followed by '(' or '=' (a graph, function or node without the model's
 * header: "agraph (x) => (y) {...}"), is ONNX's textual syntax; anything
 * else is protobuf text format (a field's name is followed by ':', '{' or
 * '<'). ONNXIO_TEXT_PROTO stands for protobuf text format (STR reads the
 * same). What the library's file loads (onnxio_detect_kind) and the
 * binary loads' error messages go by. */
onnxio_text_style onnxio_detect_text_style(const void *data, size_t size);

/* ---- what a load reads a file as ------------------------------------ */

/* The file name extensions whose format onnxio knows, one row each: the
 * extension table of the library (onnxio_path_extension, the loads'
 * choice between text and binary, onnxio_path_is_archive) and of the
 * Python package's onnxio.serialization registry, which takes the rows of
 * onnx's formats ("protobuf", "textproto", "json", "onnxtxt") from here. */
typedef struct onnxio_file_extension {
    const char *extension;        /* with its dot: ".txtpb" */
    const char *format;           /* onnx's format name ("protobuf", "textproto", "json", "onnxtxt"); "onnxz" for archives */
    onnxio_format kind;           /* ONNXIO_FORMAT_PROTOBUF, _TEXT or _ARCHIVE */
    onnxio_text_style text_style; /* ONNXIO_FORMAT_TEXT rows: ONNXIO_TEXT_PROTO, _JSON or _ONNX; else ONNXIO_TEXT_STR */
} onnxio_file_extension;

/* Row `index` of the extension table (static storage), NULL past the
 * last: ".onnx" and ".pb" (protobuf); ".txtpb", ".textproto", ".prototxt",
 * ".pbtxt" (textproto); ".json", ".onnxjson" (json); ".onnxtxt",
 * ".onnxtext" (onnxtxt); ".onnxz" (onnxz). */
const onnxio_file_extension *onnxio_file_extension_at(size_t index);
/* The row of `path`'s extension, as Python's os.path.splitext takes it
 * (the last '.' of the file name and what follows, not a leading '.':
 * ".json" alone has none) and compares it (case-sensitive, as onnx's
 * registry); NULL when the table has none, or for NULL. */
const onnxio_file_extension *onnxio_path_extension(const char *path);

/* What a load reads a file as: by its content first, its name second. */
typedef struct onnxio_file_kind {
    /* By the content (onnxio_detect_format): ONNXIO_FORMAT_ARCHIVE (read
     * as an .onnxz archive whatever its name), ONNXIO_FORMAT_PROTOBUF
     * (binary protobuf whatever its name: no text starts so) or
     * ONNXIO_FORMAT_TEXT. */
    onnxio_format format;
    /* ONNXIO_FORMAT_TEXT: the style its text is read in, by its content
     * (onnxio_detect_text_style: ONNXIO_TEXT_PROTO, _JSON or _ONNX); else
     * ONNXIO_TEXT_STR. */
    onnxio_text_style text_style;
    /* ONNXIO_FORMAT_TEXT: its name's extension names a text format
     * (onnxio_path_extension): a load reads it as text only. Otherwise
     * its content only looks like text, and a load reads it as binary
     * protobuf first and as text only when binary protobuf refuses it, so
     * that a binary model whose first bytes are printable stays binary. */
    bool text_by_name;
    /* The file's size in bytes. */
    uint64_t size;
} onnxio_file_kind;

/* What a load reads `size` bytes at `data` (a whole file) named `name`
 * (a path or a file name; NULL: none) as. Nothing is read but `data`. */
onnxio_file_kind onnxio_detect_kind(const void *data, size_t size, const char *name);
/* The same for the file at `path`, reading its first 4 KiB (and its
 * size). Errors: ONNXIO_ERR_NOT_FOUND, ONNXIO_ERR_IO,
 * ONNXIO_ERR_PATH_SPECIAL (not a regular file: nothing is read from a
 * FIFO or a device), ONNXIO_ERR_INVALID_ARGUMENT (NULL argument); *out is
 * then unchanged. */
onnxio_status onnxio_detect_file(const char *path, onnxio_file_kind *out);

typedef struct onnxio_text_options {
    /* sizeof(onnxio_text_options), or 0 (see "Options"). */
    size_t struct_size;
    /* Text styles STR and PROTO: bytes fields (raw_data, string_data,
     * AttributeProto.s, ...) longer than this print only their first
     * max_bytes_shown bytes, followed by a text-format comment giving the
     * full size: `"..." # N bytes, first K shown`. String fields are never
     * abbreviated. 0 prints everything (JSON always prints everything). */
    uint64_t max_bytes_shown;
    /* What is written or read; ONNXIO_TEXT_STR and ONNXIO_TEXT_PROTO read
     * the same way (protobuf's text format); ONNXIO_TEXT_ONNX is only
     * read. */
    onnxio_text_style style;
    /* Reading: the deepest message nesting accepted, as
     * onnxio_parse_options.max_depth (0: ONNXIO_DEFAULT_MAX_DEPTH). */
    int max_depth;
    /* Reading: the message (structure and raw_data) may take at most this
     * many times the text's size plus ONNXIO_EXPANSION_ALLOWANCE, as
     * onnxio_parse_options.max_expansion (0: ONNXIO_DEFAULT_MAX_EXPANSION). */
    uint64_t max_expansion;
} onnxio_text_options;

#define ONNXIO_TEXT_OPTIONS_INIT ONNXIO_OPTIONS_INIT_(onnxio_text_options)

/* `msg` written as text in opts->style (NULL opts: ONNXIO_TEXT_STR); unknown
 * fields are not written (protobuf's writers skip them too). *out is a new
 * buffer holding the text (not NUL-terminated; its size is the text's
 * length). Errors: ONNXIO_ERR_DEPTH (a tree nested deeper than
 * ONNXIO_MAX_DEPTH), ONNXIO_ERR_MISSING_PAYLOAD (JSON: a payload that was
 * never loaded), ONNXIO_ERR_NO_MEMORY, ONNXIO_ERR_INVALID_ARGUMENT (also
 * for ONNXIO_TEXT_ONNX, which is not written). */
onnxio_status onnxio_text_format(const void *msg, const onnxio_text_options *opts, onnxio_buffer **out);
/* The same, written to a stdio stream. ONNXIO_ERR_IO when writing fails. */
onnxio_status onnxio_text_print(const void *msg, const onnxio_text_options *opts, FILE *stream);

/* Reads `size` bytes of text (UTF-8) in opts->style into a new message of
 * type `desc` in `arena` (*out), accepting what protobuf's own readers
 * accept: google.protobuf.text_format.Parse (comments, ':' optional before
 * a message, '{}' or '<>', [a, b] lists, ',' or ';' after a field, adjacent
 * strings joined, C escapes, decimal / hex / octal integers, enum names or
 * numbers, inf / nan) and google.protobuf.json_format.Parse (proto or
 * lowerCamelCase names, null for "not set", integers as numbers or
 * strings, base64 in either alphabet, "NaN" / "Infinity"). raw_data is
 * copied into an owned payload.
 *
 * ONNXIO_TEXT_ONNX reads what onnx.parser (ONNX 1.23) reads and builds the
 * message it builds, field presence included (its serialization is
 * byte for byte that of onnx's): `desc` is ModelProto (parse_model),
 * GraphProto (parse_graph), FunctionProto (parse_function) or NodeProto
 * (parse_node); others are ONNXIO_ERR_INVALID_ARGUMENT. As onnx.parser:
 * '#' starts a comment; a graph, function or node ends where its syntax
 * ends, and what follows it is not read (a model reads functions to the
 * end); the text ends at its first NUL byte; a backslash in a string keeps
 * the byte after it as it is; an error in the default value of a
 * function's attribute is ignored, reading going on from where it
 * stopped; list attribute values that are tensors, graphs or types are
 * read but not kept. Its syntax errors carry onnx.parser's words at
 * onnx.parser's line and column; where onnx.parser's C++ throws instead
 * (an integer past 64 bits, a float past its range, '-' apart from its
 * digits) the error names the literal. The whole text must be UTF-8.
 *
 * Errors: ONNXIO_ERR_SYNTAX, naming the line and column, for text that is
 * not valid in the style or does not fit the schema (an unknown field, a
 * value out of range, a singular field given twice, two members of one
 * oneof, a string that is not UTF-8), ONNXIO_ERR_DEPTH, ONNXIO_ERR_EXPANSION
 * (the message would take more memory than opts->max_expansion allows:
 * "Expansion" above, the text's size as the bytes read),
 * ONNXIO_ERR_NO_MEMORY, ONNXIO_ERR_INVALID_ARGUMENT. On error *out is NULL
 * and the arena may hold garbage. */
onnxio_status onnxio_text_parse(const onnxio_message_desc *desc, const void *text, size_t size,
                                const onnxio_text_options *opts, onnxio_arena *arena, void **out);

/* JSON strings (RFC 8259), written one way for every JSON the library and
 * its tools write: '"' and '\\' escaped, \b \f \n \r \t by letter, other
 * bytes below 0x20 as \u00xx. The flags add:
 * - ONNXIO_JSON_ESCAPE_DEL: 0x7f as \u007f.
 * - ONNXIO_JSON_ASCII: every non-ASCII code point as \uxxxx (a surrogate
 *   pair past U+FFFF), as Python's json.dumps(ensure_ascii=True); without
 *   it UTF-8 is written as it is.
 * - ONNXIO_JSON_INVALID_SURROGATE: a byte that is not part of well-formed
 *   UTF-8 (RFC 3629) as \udcxx, as Python's surrogateescape decoding has
 *   it; ONNXIO_JSON_INVALID_REPLACE: as \ufffd; neither: as it is.
 * Who uses which: protobuf's json_format (ONNXIO_TEXT_JSON) ASCII |
 * ESCAPE_DEL | INVALID_SURROGATE; safetensors headers (serde_json) none;
 * the `onnxio` command's JSON ESCAPE_DEL | INVALID_REPLACE. */
#define ONNXIO_JSON_ESCAPE_DEL 1u
#define ONNXIO_JSON_ASCII 2u
#define ONNXIO_JSON_INVALID_SURROGATE 4u
#define ONNXIO_JSON_INVALID_REPLACE 8u
/* Writes the `size` bytes at `data` as one JSON string, quotes included,
 * in pieces through out(ctx, bytes, n). Returns 0, or the first non-zero
 * value out returned (the rest is then not written). */
typedef int (*onnxio_write_fn)(void *ctx, const void *bytes, size_t n);
int onnxio_json_write_string(const void *data, size_t size, unsigned flags, onnxio_write_fn out, void *ctx);

/* ---- remote sources ---------------------------------------------------- */

/* A front end that reads external data from somewhere the library cannot
 * open (object storage, HTTP: python/onnxio/_remote.py) asks the library
 * which byte ranges a load needs, fetches them itself, and hands each
 * payload back; every rule stays here: the keys are parsed and the location
 * checked by onnxio_external_ref_parse (no absolute path, no '..'
 * component), the range is checked against the data file's size and the
 * length against the tensor's type and shape, as a local load checks them.
 * What cannot apply to a remote file (symlinks, hard links, special files,
 * "not the model file" by inode) is the front end's to say. */

/* One external payload a load needs, checked. */
typedef struct onnxio_external_range {
    onnxio_TensorProto *tensor; /* a tensor of the tree (data_location EXTERNAL) */
    const char *location;       /* its "location" key: points into the tensor, not NUL-terminated */
    size_t location_size;
    uint64_t offset;            /* the payload's bytes in the data file: [offset, offset + length) */
    uint64_t length;
} onnxio_external_range;

/* Says the size in bytes of the data file `location` (already checked by
 * onnxio_check_location), or returns a failed status (the status is the
 * call's; its message the callback's, through whatever channel it has:
 * the library adds none). Called once per external tensor, in tree order,
 * on the calling thread. */
typedef onnxio_status (*onnxio_location_size_fn)(void *ctx, const char *location, size_t location_size,
                                                 uint64_t *size);

/* Lists every tensor under `root` (any message: initializers, subgraphs,
 * attributes, sparse tensors, functions, as a load walks them) whose data
 * is external, with its checked range, in tree order: *out (free it with
 * onnxio_external_ranges_free; NULL when *count is 0) holds *count
 * entries. Errors, before anything is returned: ONNXIO_ERR_EXTERNAL_DATA,
 * ONNXIO_ERR_PATH_ABSOLUTE, ONNXIO_ERR_PATH_PARENT (the keys and the
 * location), ONNXIO_ERR_EXTERNAL_RANGE (offset or length past the file's
 * size, or a length that is not what the type and shape need), the
 * status of `size_fn`, ONNXIO_ERR_NO_MEMORY. */
onnxio_status onnxio_external_ranges(onnxio_message *root, onnxio_location_size_fn size_fn, void *ctx,
                                     onnxio_external_range **out, size_t *count);
void onnxio_external_ranges_free(onnxio_external_range *ranges);

/* Sets the payload of an external tensor fetched by the caller: raw_data
 * becomes the `size` bytes at `data` (owned by `owner`, which gets a
 * reference; NULL: borrowed, the caller keeps them alive), and the tensor
 * stops being external as after any load (data_location present and
 * DEFAULT, no external_data). ONNXIO_ERR_INVALID_ARGUMENT when `size` is
 * not what onnxio_tensor_raw_size says for its type and shape (when that
 * is fixed). A tensor with block digests (its "onnxio.sha256" record) has
 * every block checked first, on the pool: ONNXIO_ERR_CHECKSUM naming the
 * tensor and the block, the tensor left as it was; the record is removed
 * once the tensor takes the bytes. */
onnxio_status onnxio_tensor_set_fetched_payload(onnxio_TensorProto *t, void *data, size_t size,
                                                onnxio_buffer *owner);
/* The same for a payload fetched from an .onnxz archive's entry (the
 * ranges of onnxio_archive_ranges): the tensor loses data_location
 * altogether, as a local load of the archive leaves it (docs/onnxz.md). */
onnxio_status onnxio_tensor_set_fetched_entry(onnxio_TensorProto *t, void *data, size_t size, onnxio_buffer *owner);
/* Gives an archive opened from its tail its block digests: the bytes of
 * its "__BLOCK_DIGESTS" entry as onnxio_archive_entry_read gave them
 * (docs/onnxz.md, "The block digests entry"), copied. ONNXIO_ERR_ARCHIVE
 * when they are not such an entry (the header line, "NAME RECORD" lines,
 * a name twice). An archive opened whole reads its own entry when a load
 * first needs it. */
onnxio_status onnxio_archive_set_digests(onnxio_archive *archive, const void *bytes, size_t size);
/* Checks the `size` bytes fetched for a range of onnxio_archive_ranges
 * (its `tensor` and `entry`) against the archive's block digests for that
 * entry, every block on the pool, before the front end sets them
 * (onnxio_tensor_set_fetched_entry): ONNXIO_OK when the archive has none
 * for it; ONNXIO_ERR_CHECKSUM naming the tensor and the block;
 * ONNXIO_ERR_EXTERNAL_DATA for a malformed record; ONNXIO_ERR_ARCHIVE for
 * an archive opened from its tail whose digests entry exists and was not
 * given (onnxio_archive_set_digests). */
onnxio_status onnxio_archive_check_payload(onnxio_archive *archive, const onnxio_TensorProto *tensor,
                                           const onnxio_archive_entry *entry, const void *data, size_t size);

/* ---- checking a model ------------------------------------------------- */

/* onnxio_check_model checks the structure of a model without libprotobuf
 * and without reading payloads (docs/c.md, "Checking a model"). Its rules
 * follow onnx-ml.proto and docs/IR.md of ONNX 1.23 as onnx.checker
 * (onnx/checker.cc, check_model) applies them, without the operator schemas
 * (what each op_type takes and makes is not checked) and without shape
 * inference. Every problem found is reported, not only the first. Not
 * checked: what each operator takes and makes (no schemas), value types
 * and shapes (value_info, the main graph's inputs and outputs), an
 * ir_version newer than this library knows, duplicate metadata_props
 * keys, the graphs of training_info, the index values of sparse tensors
 * (they are payload). Each problem names one rule: */
typedef enum onnxio_check_rule {
    /* ir_version absent or not positive. */
    ONNXIO_CHECK_IR_VERSION = 1,
    /* opset_import absent when ir_version >= 3, present when below; a
     * domain imported twice ("" and "ai.onnx" are one domain); a node whose
     * domain the model (or, in a function, the function) does not
     * import. */
    ONNXIO_CHECK_OPSET = 2,
    /* A name that must not be empty is: the graph's, an initializer's, a
     * graph input's or output's, an attribute's, a function's (and its
     * domain, absent, for ir_version >= 8). */
    ONNXIO_CHECK_NAME = 3,
    /* A node input that nothing before it defines (graph inputs,
     * initializers, earlier node outputs, and in a subgraph the same of
     * every enclosing graph up to its node; in a function, its inputs and
     * earlier node outputs only), or a graph output that nothing defines.
     * An empty input name is an absent optional input. */
    ONNXIO_CHECK_UNDEFINED = 4,
    /* A name defined twice (single static assignment): two graph inputs,
     * two initializers, a node output that a graph input, an initializer
     * or another node output (of this graph or an enclosing one) already
     * defines; two function inputs or outputs. An initializer may be a
     * graph input too; for ir_version <= 3 it must be one. */
    ONNXIO_CHECK_REDEFINED = 5,
    /* A node with neither inputs nor outputs, or an attribute name twice. */
    ONNXIO_CHECK_NODE = 6,
    /* A tensor's data_type (absent, UNDEFINED, unknown) or data: not
     * exactly one data field for a non-empty tensor, data in an empty one,
     * values in the typed field of another data_type, a typed field with
     * fewer values than data_type and dims need (strings: string_data
     * entries), raw_data of another length than onnxio_tensor_raw_size
     * says, strings in raw_data; a sparse tensor's values and indices
     * shapes. */
    ONNXIO_CHECK_TENSOR = 7,
    /* An attribute whose value is not of its declared type: type absent
     * (ir_version >= 2), a value field other than the one `type` names
     * (UNDEFINED names none), more than one value field. (A ref_attr_name
     * beside a value is not one: onnx.checker takes the value as the
     * default.) */
    ONNXIO_CHECK_ATTRIBUTE = 8,
    /* External data that a load would refuse: the keys and location
     * (onnxio_external_ref_parse), a data field beside them, and with a
     * base directory or an archive the file or entry itself (opened with
     * onnxio_external_data_open's checks, range and length as a load
     * checks them). `status` is the load's status. */
    ONNXIO_CHECK_EXTERNAL_DATA = 9,
    /* With verify_checksum: a "checksum" key that is not the SHA-1 of its
     * file (or a file built to collide in SHA-1), as a load with
     * onnxio_parse_options.verify_checksum refuses it. */
    ONNXIO_CHECK_CHECKSUM = 10,
    /* A block digest record that is malformed, or with verify_digests a
     * block whose SHA-256 differs from its digest (the first such block of
     * the tensor, and how many there are). */
    ONNXIO_CHECK_DIGEST = 11,
    /* A function's id (domain, name, overload) twice in the model, or an
     * output or attribute name twice in one function. */
    ONNXIO_CHECK_FUNCTION = 12,
    /* The model has no graph. */
    ONNXIO_CHECK_GRAPH = 13,
} onnxio_check_rule;

/* The rule's short name, for output: "ir-version", "opset", "name",
 * "undefined", "redefined", "node", "tensor", "attribute",
 * "external-data", "checksum", "digest", "function", "graph"; "unknown" for a number
 * that is none. Static storage. */
const char *onnxio_check_rule_name(onnxio_check_rule rule);

/* One problem. The strings are NUL-terminated, valid only during the
 * callback that is given the problem (copy what is kept); a name from the
 * model is cut at its first NUL byte. Members may be added at the end. */
typedef struct onnxio_check_problem {
    onnxio_check_rule rule;
    /* EXTERNAL_DATA and CHECKSUM: the status a load fails with for it
     * (ONNXIO_ERR_PATH_PARENT, ONNXIO_ERR_EXTERNAL_RANGE, ...); ONNXIO_OK
     * for the other rules. */
    onnxio_status status;
    /* Where: the graph, "" for the model itself. "graph" is the main graph;
     * a subgraph adds "/node[I]:ATTR" for attribute ATTR of node I (and
     * "[J]" for the J'th graph of a GRAPHS attribute), as in
     * "graph/node[4]:then_branch"; "function[DOMAIN:NAME]" is a local
     * function (":OVERLOAD" added when it has one). */
    const char *graph;
    /* The node's index in its graph or function, -1 when the problem is
     * not a node's; `node` its name (NULL when none). */
    int64_t node_index;
    const char *node;
    /* The tensor or value concerned (an initializer, an input or output
     * name, an attribute's tensor); NULL when none. */
    const char *tensor;
    /* The attribute concerned (NULL when none). */
    const char *attribute;
    /* What is wrong, one line. */
    const char *message;
} onnxio_check_problem;

/* Called once per problem, in the order the model is walked: the model's
 * fields, the local functions, then the graph (inputs, initializers, nodes
 * in order, each node's subgraphs before its outputs, outputs). A non-zero
 * return stops the check (onnxio_check_model then returns
 * ONNXIO_ERR_CANCELLED). It must not change the model. */
typedef int (*onnxio_check_fn)(void *user, const onnxio_check_problem *problem);

typedef struct onnxio_check_options {
    /* sizeof(onnxio_check_options), or 0 (see "Options"). */
    size_t struct_size;
    /* Check every "checksum" key against the SHA-1 of its data file (or
     * archive entry): reads each such file whole, once. Needs base_dir or
     * archive. */
    bool verify_checksum;
    /* The model's own file, refused as a data file (ONNXIO_ERR_PATH_SELF),
     * as a load refuses it; NULL: not known. */
    const char *model_path;
    /* The model was read from this .onnxz archive: external data names its
     * entries, which are checked instead of files under base_dir. It must
     * outlive the call. NULL: none. */
    onnxio_archive *archive;
    /* Check the block digests ("onnxio.sha256" in a tensor's
     * metadata_props) of every external payload that has them against its
     * bytes, from the file's mapping, on the pool. A malformed record is
     * reported either way. Needs base_dir or archive. */
    bool verify_digests;
} onnxio_check_options;

#define ONNXIO_CHECK_OPTIONS_INIT ONNXIO_OPTIONS_INIT_(onnxio_check_options)

/* Checks `model` (loaded any way: a structure-only load with
 * skip_raw_data, no_copy and load_external_data OFF is enough, and is
 * what `onnxio check` does, since payload bytes are never read: only
 * raw_data sizes) and calls `fn` (NULL: none, only counted) for each
 * problem. External data: the keys are always checked; when `base_dir`
 * (the directory locations are resolved under, as onnxio_model_dir gives
 * it) or opts->archive is given, each data file or entry is opened and the
 * range checked too (files are mapped, nothing is copied), and with
 * opts->verify_checksum the "checksum" keys. Tensors already loaded
 * (data_location not EXTERNAL) are checked as inline data. `*problems`
 * (may be NULL) gets the number of problems reported.
 *
 * Returns ONNXIO_OK when the check ran to its end, problems or not;
 * ONNXIO_ERR_INVALID_ARGUMENT (NULL model, bad options),
 * ONNXIO_ERR_NO_MEMORY, ONNXIO_ERR_DEPTH (a tree nested deeper than
 * ONNXIO_MAX_DEPTH), ONNXIO_ERR_CANCELLED (fn returned non-zero); then
 * `*problems` counts what was reported before. Nothing in the model is
 * changed, nothing is kept after the call; thread-safe for distinct
 * models, and for one model checked by several threads at once. */
onnxio_status onnxio_check_model(const onnxio_ModelProto *model, const char *base_dir,
                                 const onnxio_check_options *opts, onnxio_check_fn fn, void *user,
                                 uint64_t *problems);

#ifdef __cplusplus
}
#endif
#endif
