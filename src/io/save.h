/* The save pipeline (save.c) and the container writers it drives
 * (container_dir.c, container_zip.c, the model file alone in save.c):
 * what a save selects, the writer seam, and a streaming save's source.
 * Private to the io layer. */
#ifndef ONNXIO_IO_SAVE_H
#define ONNXIO_IO_SAVE_H

#include "io/container.h"

/* A streaming save's placeholder (save_stream.c makes them): where its
 * bytes go when the source hands them over. */
typedef struct onnxio__slot {
    onnxio_TensorProto *t; /* the placeholder in the save's copy */
    uint64_t size;         /* its bytes: data_type x dims */
    bool received;
    /* Where its bytes go: the selected tensor `item` (sel.tensors[item]),
     * written by the writer's `put`; else (SIZE_MAX) inline in the model,
     * a hole at `offset` of the model file when `hole`, else copied into
     * the arena before the model is written. */
    size_t item;
    bool hole;
    uint64_t offset;
} onnxio__slot;

/* A streaming save's source: the caller's function and its placeholders,
 * sorted by tensor name. */
typedef struct onnxio__source {
    onnxio_tensor_source_fn fn;
    void *user;
    onnxio__slot *slots;
    size_t count;
} onnxio__source;

/* The tensors whose payloads leave the model. */
typedef struct onnxio__selection {
    onnxio_TensorProto **tensors;
    size_t count, capacity;
    /* Tensors still external, which must not refer to a file this save
     * replaces (external data). */
    onnxio_TensorProto **stale;
    size_t stale_count, stale_capacity;
} onnxio__selection;

typedef struct onnxio__saving onnxio__saving;

/* A container's writing half (docs/design.md, "The container seam"): the
 * one pipeline of save.c calls it in this order, having selected the
 * tensors and begun the transaction once. */
typedef struct onnxio__writer {
    /* Which tensors leave the model: every tensor (else the initializers
     * of every graph, as onnx does), and whether a tensor still external
     * is refused (else it is kept as it is, checked by `plan`). */
    bool every_tensor, external_refused;
    /* The model is written before the streamed payloads come, each left
     * as a hole in it (the model file alone); else after them. */
    bool model_first;
    /* Why the main path must be a regular file (NULL: a pipe will do). */
    const char *seeks;
    /* Lays out where every selected payload goes, for the model at
     * `path`; the tensors may get their external data keys now or in
     * `model`. Before the transaction. NULL: nothing to lay out. */
    onnxio_status (*plan)(onnxio__saving *sv, const char *path);
    /* Creates the container's files in sv->txn (beside `path`) and
     * writes every payload that has its bytes (on a pool of
     * cfg->num_threads). NULL: none. */
    onnxio_status (*write)(onnxio__saving *sv, const char *path);
    /* A streamed payload of sel.tensors[item], written before it returns
     * (the source may reuse the bytes). */
    onnxio_status (*put)(onnxio__saving *sv, size_t item, const void *data);
    /* Every payload is written: writes the model and what closes the
     * container (an archive's directory). */
    onnxio_status (*model)(onnxio__saving *sv);
    /* Frees the writer's state, also after a failure (NULL: none). */
    void (*free)(void *state);
} onnxio__writer;

/* One save. The path is not here: the pipeline names it in every error
 * (onnxio__context), and hands it to the writer only where it lays out
 * and places files beside it (plan, write); what writes bytes names the
 * file by its role ("the model file", "the archive"). */
struct onnxio__saving {
    const onnxio_serialize_options *cfg;  /* resolved */
    onnxio_arena *scratch;                /* of the copy */
    void *copy;                           /* what is written: the caller's tree, or a copy sharing its payloads */
    onnxio__selection sel;
    onnxio__txn *txn;
    onnxio__source *source;               /* NULL: not a streaming save */
    const onnxio__writer *writer;
    void *state;                          /* the writer's */
    int model_fd;                         /* the model file once written (model_first writers), for its holes */
};

/* The writers. */
extern const onnxio__writer onnxio__model_writer; /* save.c: the model file alone, payloads inline */
extern const onnxio__writer onnxio__dir_writer;   /* container_dir.c: external data files beside the model */
extern const onnxio__writer onnxio__zip_writer;   /* container_zip.c: an .onnxz archive */

/* save.c: the one save pipeline. Saves `msg` to `path` with `writer`
 * (the model writer takes any message; the others a ModelProto), from
 * `source`'s placeholders when not NULL (`msg` is then the streaming
 * save's own copy, in `arena`). `cfg` resolved. Errors name the path. */
onnxio_status onnxio__save(void *msg, const char *path, const onnxio_serialize_options *cfg,
                           const onnxio__writer *writer, onnxio__source *source, onnxio_arena *arena);

/* The writer for a save of `path`: an .onnxz archive when `archive`;
 * external data files beside the model when `model` (a ModelProto) and
 * cfg->external_data asks for them (a location, or one file per tensor);
 * else the model file alone. */
const onnxio__writer *onnxio__writer_for(const onnxio_serialize_options *cfg, bool model, bool archive);

/* write.c: what the pipeline and the writers share. */

/* Serializes `msg` (its size pass run) into the file `fd`: the structure
 * through a staging buffer, runs of ONNXIO__SINK_DIRECT bytes or more at
 * their offsets (queued on `pool` when at least `threshold` bytes and
 * `pool` is not NULL), or everything in order when `sequential` (a pipe).
 * With `defer`, a placeholder's bytes are left as a hole (onnxio__sink.defer).
 * `what` names the file in errors ("the model file"). */
onnxio_status onnxio__write_message(void *msg, int fd, const char *what, onnxio__pool *pool, uint64_t threshold,
                                    bool sequential, onnxio_status (*defer)(void *, const onnxio_TensorProto *, uint64_t),
                                    void *defer_user);
/* Writes `msg` as the transaction's main file (its size pass first, its
 * large payloads on a pool of cfg->num_threads), and *fd its descriptor
 * (the transaction's); with `defer`, the file is sized for its last hole.
 * Errors say "the model file"; the caller names its path. */
onnxio_status onnxio__write_main(onnxio__txn *txn, void *msg, const onnxio_serialize_options *cfg,
                                 onnxio_status (*defer)(void *, const onnxio_TensorProto *, uint64_t), void *defer_user,
                                 int *fd);
/* Writes `size` bytes at `offset` of `fd` on a pool of `threads`, with the
 * CRC-32 pieces when `crc`; done when it returns. */
onnxio_status onnxio__write_at(int fd, uint64_t offset, const void *data, uint64_t size, uint32_t *crc, int threads,
                               const char *what);
/* A tensor's dims as "[2, 3]", into `buf` (cut to `size`). */
const char *onnxio__dims_text(const onnxio_TensorProto *t, char *buf, size_t size);
/* Appends the external data key `key` = `value` to `t`. */
onnxio_status onnxio__add_key(onnxio_arena *arena, onnxio_TensorProto *t, const char *key, const char *value);
/* Points `t` at external data: its external_data becomes the keys
 * location, offset, length (raw_data's size) and, when given, checksum,
 * in the order the onnx package writes them; raw_data is cleared and
 * data_location set to EXTERNAL. */
onnxio_status onnxio__refer(onnxio_arena *arena, onnxio_TensorProto *t, const char *location, uint64_t offset,
                            const char *checksum);

#endif
