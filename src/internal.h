/* Private declarations shared by the library's source files. */
#ifndef ONNXIO_INTERNAL_H
#define ONNXIO_INTERNAL_H

#include "onnxio/onnxio.h"

#if defined(__GNUC__)
#define ONNXIO_API __attribute__((visibility("default")))
#define ONNXIO_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define ONNXIO_LIKELY(x) __builtin_expect(!!(x), 1)
#define ONNXIO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define ONNXIO_API
#define ONNXIO_PRINTF(a, b)
#define ONNXIO_LIKELY(x) (x)
#define ONNXIO_UNLIKELY(x) (x)
#endif

#define ONNXIO_DEFAULT_MAX_DEPTH 100
#define ONNXIO_DEFAULT_RAW_DATA_THRESHOLD 1024
#define ONNXIO_DEFAULT_EXTERNAL_THRESHOLD 1024

/* error.c: records the thread's last error and returns `status`. */
onnxio_status onnxio__fail(onnxio_status status, const char *fmt, ...) ONNXIO_PRINTF(2, 3);
/* Prefixes the current last error with more context ("loading x.onnx: ..."). */
onnxio_status onnxio__context(onnxio_status status, const char *fmt, ...) ONNXIO_PRINTF(2, 3);
void onnxio__clear_error(void);

/* arena.c: payload spans whose owner reference the arena drops when freed. */
onnxio_status onnxio__arena_track_span(onnxio_arena *arena, onnxio_span *span);
/* arena.c: allocation that returns uninitialized memory (strings, bytes). */
void *onnxio__arena_alloc_raw(onnxio_arena *arena, size_t size);

/* message.c */
static inline void *onnxio__member(const void *msg, const onnxio_field_desc *f)
{
    return (char *)msg + f->offset;
}
/* Generic view of every onnxio_*_array / onnxio_*_list. */
typedef struct onnxio__array {
    void *data;
    size_t size;
    size_t capacity;
} onnxio__array;
/* Makes room for `extra` more elements of `elem_size`; NULL when out of memory. */
void *onnxio__array_reserve(onnxio_arena *arena, onnxio__array *a, size_t elem_size, size_t extra);
/* Size in bytes of one element of a repeated field. */
size_t onnxio__elem_size(const onnxio_field_desc *f);
/* Message of a MESSAGE field (the arena of `msg` is needed to create it). */
void *onnxio__message_new_tracked(onnxio_arena *arena, const onnxio_message_desc *desc);
onnxio_status onnxio__append_unknown(onnxio_arena *arena, onnxio_message *m, const uint8_t *p, size_t n);

/* decode.c */
typedef struct onnxio__decode_config {
    onnxio_arena *arena;
    onnxio_buffer *owner;   /* keeps input alive in no_copy mode */
    const uint8_t *base;    /* start of the whole input (for error offsets) */
    bool no_copy;
    bool skip_raw_data;
    int max_depth;
} onnxio__decode_config;
onnxio_status onnxio__decode(const onnxio__decode_config *cfg, onnxio_message *msg,
                             const uint8_t *data, size_t size);

/* encode.c: a destination for serialized bytes. */
typedef struct onnxio__sink {
    uint8_t *buf;        /* memory output: the whole destination; file output: a staging buffer */
    size_t pos;
    size_t cap;
    int fd;              /* -1 for memory output */
    uint64_t written;    /* bytes flushed to fd */
    onnxio_status status;
} onnxio__sink;
onnxio_status onnxio__encode(void *msg, onnxio__sink *sink);
onnxio_status onnxio__sink_flush(onnxio__sink *sink);

/* file.c */
typedef struct onnxio__atomic_file {
    int fd;
    char *tmp_path;
    char *final_path;
} onnxio__atomic_file;
/* Maps a whole file read-only-shared/copy-on-write; an empty file gives a
 * buffer of size 0. */
onnxio_status onnxio__map_file(const char *path, onnxio_buffer **out);
onnxio_status onnxio__atomic_open(const char *path, onnxio__atomic_file *f);
onnxio_status onnxio__atomic_commit(onnxio__atomic_file *f);
void onnxio__atomic_abort(onnxio__atomic_file *f);
onnxio_status onnxio__write_all(int fd, const void *data, size_t size, const char *what);
/* The directory part of a path ("." when none); malloc'd. */
char *onnxio__dirname(const char *path);
char *onnxio__path_join(const char *dir, const char *name);

/* external.c */
/* Checks an external-data location: relative, no '..', not empty. */
onnxio_status onnxio__check_location(const char *location, size_t size);
/* Moves the large initializer payloads of `model` (a scratch copy in
 * `arena`) to the external data file named by opts->external_data under
 * `dir`, left uncommitted in *data (see onnxio__atomic_commit). */
onnxio_status onnxio__save_external(onnxio_arena *arena, onnxio_ModelProto *model, const char *dir,
                                    const onnxio_serialize_options *opts, onnxio__atomic_file *data);

/* message.c: calls fn(msg, parent, field) for every message of type
 * `target` in the tree under `root` (depth first, in field order), where
 * `parent`/`field` say where it was found (NULL for the root itself). */
typedef onnxio_status (*onnxio__visit_fn)(onnxio_message *msg, onnxio_message *parent,
                                          const onnxio_field_desc *field, void *ctx);
onnxio_status onnxio__visit(onnxio_message *root, const onnxio_message_desc *target,
                            onnxio__visit_fn fn, void *ctx);

#endif
