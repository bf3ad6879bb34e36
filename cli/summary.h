/*
 * What `onnxio info` reports, computed from a loaded model: node counts by
 * op type, initializer counts and sizes, the largest initializers, and the
 * external data files the model refers to. Rendering (text or JSON) is in
 * info.c.
 */
#ifndef ONNXIO_CLI_SUMMARY_H
#define ONNXIO_CLI_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "onnxio/onnxio.h"
#include "strmap.h"

#define CLI_LARGEST_SHOWN 10
/* Tensors with invalid external data references listed in text (JSON lists
 * every one). */
#define CLI_BAD_REFS_SHOWN 10

typedef struct cli_op_count {
    onnxio_string domain;
    onnxio_string op_type;
    uint64_t count;
} cli_op_count;

typedef struct cli_tensor_size {
    const onnxio_TensorProto *tensor;
    uint64_t bytes;
    int external;
    size_t order; /* position in the graph, to keep sorting stable */
} cli_tensor_size;

typedef struct cli_external_file {
    onnxio_string location; /* as written in the model (onnxio_check_location passed) */
    uint64_t tensors;       /* tensors that refer to it */
    uint64_t bytes;         /* sum of their lengths */
    /* The largest offset + length among its tensors (offset alone for a
     * tensor without a length: the rest of the file must at least start
     * there): the file or entry must hold this many bytes. */
    uint64_t needed_bytes;
    int exists;             /* the file opens as the library opens it, or the archive entry exists */
    uint64_t file_size;     /* when it exists: its size (an entry's uncompressed size) */
    /* A file that is there but that the library refuses to open (a
     * symlink leading out of the model's directory, a FIFO, a file with
     * other hard links): onnxio_last_error() then, malloc'd; NULL
     * otherwise (also when the file is simply missing). */
    char *refused;
} cli_external_file;

/* A tensor whose external_data keys onnxio_external_ref_parse refuses (no
 * location, an absolute or '..' location, an offset or length that is not a
 * number): no file is looked for, and its bytes count as 0. */
typedef struct cli_bad_ref {
    const onnxio_TensorProto *tensor;
    onnxio_status status;
    char *message; /* onnxio_last_error() then, malloc'd (NULL when out of memory) */
} cli_bad_ref;

typedef struct cli_summary {
    uint64_t file_size;
    /* The model came from an .onnxz archive: external data locations are
     * names of its entries, not files. */
    int in_archive;

    /* The main graph's nodes, by (domain, op_type), most frequent first. */
    uint64_t node_count;
    cli_op_count *ops;
    size_t op_count;
    /* Graphs in node attributes (Loop, If, Scan bodies...), at any depth. */
    uint64_t subgraph_count;
    uint64_t subgraph_node_count;

    /* The main graph's initializers. */
    uint64_t init_count;
    uint64_t init_bytes;
    cli_tensor_size *largest; /* the biggest first, at most CLI_LARGEST_SHOWN */
    size_t largest_count;

    /* External data, over every tensor of the model: the files (or
     * archive entries) by location in the order first seen, and the
     * tensors whose references are invalid. */
    cli_external_file *ext;
    size_t ext_count;
    cli_strmap ext_index; /* location -> index in ext */
    cli_bad_ref *bad_refs;
    size_t bad_ref_count;
    uint64_t external_tensors; /* all of them, valid references or not */

    /* Names of the main graph's initializers, to mark graph inputs that are
     * initializers (models before IR version 4 list them as inputs). */
    cli_strmap init_names;
} cli_summary;

/* Opens the external data file `location` of the model at `model_path` as
 * a load opens it (onnxio_external_data_open in the model's directory:
 * beneath it, no symlink leading out, regular files only): its status, and
 * on success *fd and *size. ONNXIO_ERR_NO_MEMORY when out of memory. */
onnxio_status cli_open_external(const char *model_path, onnxio_string location, int *fd, uint64_t *size);

/* Fills `s` for `model`, loaded from `model_path` (external data files are
 * opened in its directory as the library opens them, for their sizes;
 * nothing is read from them). Returns 0, or -1 when out of memory. */
int cli_summarize(onnxio_ModelProto *model, const char *model_path, cli_summary *s);
/* The same for a model loaded from the archive `archive` (opened from
 * `model_path`): locations are looked up among its entries. */
int cli_summarize_archive(onnxio_ModelProto *model, const char *model_path, const onnxio_archive *archive,
                          cli_summary *s);
void cli_summary_free(cli_summary *s);

/* Bytes of one tensor's payload: inline bytes, or for an external tensor its
 * length (when missing: the rest of the file after its offset, if the file
 * exists; 0 for an invalid reference). Valid once cli_summarize has
 * returned. */
uint64_t cli_summary_tensor_bytes(const cli_summary *s, const onnxio_TensorProto *t);

#endif
