/*
 * What `onnxio info` reports, computed once from a loaded model: its
 * header, the main graph's interface, node counts by op type, initializer
 * counts and sizes, the largest initializers, sparse initializers, the
 * external data files the model refers to, local functions and, for an
 * .onnxz archive, its entries. The renderers (text and JSON, in info.c)
 * print from it and compute nothing of their own.
 *
 * Strings and dims point into the model (its arena) and archive entries
 * into the archive: both must outlive the summary.
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

/* ---- the model's header ---------------------------------------------- */

typedef struct cli_opset {
    onnxio_string domain; /* as written: "" for the default domain */
    int64_t version;
} cli_opset;

typedef struct cli_key_value {
    onnxio_string key;
    onnxio_string value;
} cli_key_value;

/* ---- the main graph's inputs and outputs ------------------------------ */

enum { CLI_DIM_UNKNOWN, CLI_DIM_VALUE, CLI_DIM_PARAM };

typedef struct cli_dim {
    int kind;             /* CLI_DIM_VALUE: `value`; CLI_DIM_PARAM: `param` */
    int64_t value;
    onnxio_string param;
} cli_dim;

typedef struct cli_value {
    onnxio_string name;
    /* The type as text ("tensor(FLOAT)", "seq(tensor(INT64))",
     * "map(STRING, tensor(FLOAT))", "opaque(DOMAIN.NAME)", "?" when there
     * is none), control characters of names written as \xNN; malloc'd,
     * `type_text_size` bytes. */
    char *type_text;
    size_t type_text_size;
    /* A tensor or sparse tensor type: `elem_type`, and its shape when the
     * rank is known (`has_shape`: `rank` dims at `dims`). */
    int is_tensor;
    int sparse; /* the type is a sparse tensor's */
    int32_t elem_type;
    int has_shape;
    size_t rank;
    cli_dim *dims;
    int initializer; /* an initializer of the main graph has this name */
} cli_value;

/* ---- nodes, initializers, functions ------------------------------------ */

typedef struct cli_op_count {
    onnxio_string domain;
    onnxio_string op_type;
    uint64_t count;
} cli_op_count;

typedef struct cli_tensor_size {
    onnxio_string name;
    int32_t data_type;
    const onnxio_int64_array *dims;
    uint64_t bytes;
    int external;
    size_t order; /* position in the graph, to keep sorting stable */
} cli_tensor_size;

typedef struct cli_sparse {
    int has_values;       /* the values tensor is there: `name` is its name */
    onnxio_string name;
    int32_t data_type;    /* the values' (0 without values) */
    const onnxio_int64_array *dims; /* the dense shape */
    /* The values' first dimension, the number of stored values (0 without
     * values or dims; negative in an invalid model). */
    int64_t values_dim0;
    uint64_t bytes;       /* values and indices */
} cli_sparse;

typedef struct cli_function {
    onnxio_string domain;
    onnxio_string name;
    onnxio_string overload;
    size_t node_count;
} cli_function;

/* ---- external data ----------------------------------------------------- */

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
    int too_short;          /* it exists and file_size < needed_bytes */
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
    onnxio_string tensor; /* its name */
    onnxio_status status;
    char *message; /* onnxio_last_error() then, malloc'd (NULL when out of memory) */
} cli_bad_ref;

/* ---- archive entries --------------------------------------------------- */

typedef struct cli_archive_entry {
    const onnxio_archive_entry *entry;
    const char *method; /* "stored", "deflate" or "other" */
    uint64_t alignment; /* of the data offset, at most CLI_ARCHIVE_MAX_SHOWN_ALIGNMENT */
    int model;          /* the __MODEL_PROTO entry */
    int zero_copy;      /* a tensor entry a no_copy load borrows from the mapping */
} cli_archive_entry;

/* ---- the summary ------------------------------------------------------- */

typedef struct cli_summary {
    const char *path; /* the model's path, as given */
    uint64_t file_size;
    /* The model came from an .onnxz archive: external data locations are
     * names of its entries, not files. */
    int in_archive;

    int64_t ir_version;
    onnxio_string producer_name;
    onnxio_string producer_version;
    onnxio_string domain;
    int has_model_version;
    int64_t model_version; /* 0 when not set */
    cli_opset *opsets;
    size_t opset_count;
    cli_key_value *metadata;
    size_t metadata_count;
    size_t training_info_count;

    /* The main graph; without one, the graph's parts below are empty. */
    int has_graph;
    onnxio_string graph_name;
    cli_value *inputs;
    size_t input_count;
    cli_value *outputs;
    size_t output_count;

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
    cli_sparse *sparse;
    size_t sparse_count;

    /* External data, over every tensor of the model: the files (or
     * archive entries) by location in the order first seen, and the
     * tensors whose references are invalid. */
    cli_external_file *ext;
    size_t ext_count;
    cli_strmap ext_index; /* location -> index in ext */
    cli_bad_ref *bad_refs;
    size_t bad_ref_count;
    uint64_t external_tensors; /* all of them, valid references or not */

    cli_function *functions;
    size_t function_count;

    /* The archive's entries in directory order (in_archive only), and
     * their totals. */
    cli_archive_entry *entries;
    size_t entry_count;
    uint64_t entry_bytes;            /* uncompressed */
    uint64_t entry_compressed_bytes; /* as stored in the file */
    size_t tensor_entries;           /* every entry but the model */
    size_t zero_copy_entries;        /* tensor entries a no_copy load borrows */

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
 * nothing is read from them). Returns 0, or -1 when out of memory; free
 * `s` with cli_summary_free either way. */
int cli_summarize(onnxio_ModelProto *model, const char *model_path, cli_summary *s);
/* The same for a model loaded from the archive `archive` (opened from
 * `model_path`): locations are looked up among its entries, which are
 * listed. */
int cli_summarize_archive(onnxio_ModelProto *model, const char *model_path, const onnxio_archive *archive,
                          cli_summary *s);
void cli_summary_free(cli_summary *s);

#endif
