/* The save pipeline's state shared by save.c and save_stream.c: what a
 * save selects, how it lays out data files, and a streaming save's slots.
 * Private to the io layer. */
#ifndef ONNXIO_IO_SAVE_H
#define ONNXIO_IO_SAVE_H

#include "io/container.h"

typedef struct selection {
    uint64_t threshold;
    bool every_tensor;        /* archives, convert_attribute; else initializers only */
    bool external_refused;    /* archives: a tensor still external cannot be saved */
    bool streaming;           /* raw_data without bytes is a placeholder (streaming saves) */
    onnxio_TensorProto **tensors;
    size_t count, capacity;
    /* external data: tensors still external, which must not refer to a
     * file this save replaces */
    onnxio_TensorProto **stale;
    size_t stale_count, stale_capacity;
} selection;

/* One payload going to a data file. */
typedef struct out_item {
    onnxio_TensorProto *tensor;
    size_t file;
    uint64_t offset;
} out_item;

typedef struct out_file {
    char *location;       /* relative to the model's directory */
    onnxio__resolved res; /* where it goes */
    int fd;               /* the temporary file while it is written */
    uint64_t size;
    size_t first, count;  /* its payloads: items[first, first + count) */
    char digest[41];
    /* Streaming saves: its payloads still to come. Such a file is not
     * written by write_batch: it is made when its first streamed payload
     * arrives, and synced and closed after its last. */
    size_t pending;
} out_file;

typedef struct dir_plan {
    out_item *items;
    size_t item_count;
    out_file *files;
    size_t count;
} dir_plan;

/* One placeholder of a streaming save: where its bytes go when they come. */
typedef enum stream_dest {
    DEST_NONE,   /* not bound yet */
    DEST_MEMORY, /* inline in a model written after every tensor came: copied into the arena */
    DEST_FD,     /* at `offset` of the file `fd` (the model file, or the archive) */
    DEST_FILE,   /* at `offset` of the data file files[file] of the plan */
} stream_dest;

typedef struct stream_slot {
    onnxio_TensorProto *t; /* the placeholder in the streaming save's copy */
    uint64_t size;         /* its bytes: data_type x dims */
    bool received;
    stream_dest dest;
    int fd;
    size_t file;
    uint64_t offset;
    uint32_t *crc;         /* archive entries: the CRC-32 pieces to fill */
    const char *what;      /* the file named in write errors */
} stream_slot;

typedef struct stream {
    onnxio_arena *arena;   /* of the copy */
    stream_slot *slots;    /* sorted by tensor name */
    size_t count;
    onnxio_tensor_source_fn source;
    void *user;
    int num_threads;
    /* DEST_FILE: the plan's files and their transaction */
    dir_plan *plan;
    onnxio__txn *txn;
    bool checksum;
} stream;

/* The external data save and the archive save of save.c; with `st`, a
 * streaming save (`model` is its copy: the placeholders' raw_data have
 * sizes, no bytes). */
onnxio_status onnxio__save_external_to(onnxio_ModelProto *model, const char *path,
                                       const onnxio_serialize_options *cfg, stream *st);
onnxio_status onnxio__save_archive_to(onnxio_ModelProto *model, const char *path,
                                      const onnxio_serialize_options *cfg, stream *st);

/* save_stream.c: where each placeholder's bytes go (a data file of the
 * plan, the model or archive file `fd` at `offset`, or memory), then the
 * source's tensors received and written there. */
onnxio_status onnxio__stream_bind_external(stream *st, const selection *sel, dir_plan *d, onnxio__txn *txn,
                                           const onnxio_serialize_options *cfg);
onnxio_status onnxio__stream_bind_memory(stream *st);
onnxio_status onnxio__stream_bind_fd(stream *st, onnxio_TensorProto *t, int fd, uint64_t offset, uint32_t *crc,
                                     const char *what);
onnxio_status onnxio__stream_receive(stream *st);
onnxio_status onnxio__save_plain_streaming(onnxio_ModelProto *model, const char *path,
                                           const onnxio_serialize_options *cfg, stream *st);

#endif
