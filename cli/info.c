/* onnxio info: a summary of a model, as text or as one JSON object. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "json.h"
#include "summary.h"
#include "tensor.h"

static int run_info(int argc, char **argv);

const cli_verb cli_verb_info = {
    "info",
    "Summarize a model: header, opsets, inputs and outputs, operators, weights.",
    "onnxio info MODEL [--json] [--max-expansion N]",
    "Shows the model's IR version, producer, domain and model version, opset\n"
    "imports and metadata; the graph's name, inputs and outputs (element type\n"
    "and shape: a number, a symbolic dimension, or '?' when unknown); the node\n"
    "count by op type (most frequent first) and the nodes of subgraphs; the\n"
    "number and total size of initializers and the 10 largest; the external\n"
    "data files the model refers to (tensors and bytes each, and whether the\n"
    "file is there, and holds the bytes its tensors need: \"short\" when an\n"
    "offset plus length runs past its end), and the tensors whose external data\n"
    "keys are invalid (no location, an absolute or '..' location, an offset or\n"
    "length that is not a number), with the reason; local functions; sparse\n"
    "initializers.\n"
    "\n"
    "For an .onnxz archive (known by its content), the external data are the\n"
    "archive entries the model's tensors refer to (and whether each is there),\n"
    "and a section \"archive\" lists every entry in directory order: its name,\n"
    "size, method (stored or deflate), the file offset of its data, the\n"
    "alignment of that offset (the largest power of two dividing it, at most\n"
    "4096), and whether a no_copy load borrows it from the file mapping instead\n"
    "of copying it (\"zero-copy\": stored, and its offset a multiple of 64, the\n"
    "default alignment; \"-\" for __MODEL_PROTO, the model itself); then the\n"
    "total: entries, bytes, and how many tensor entries are zero-copy.\n"
    "\n"
    "Sizes are payload bytes: raw_data, or the typed data fields (entries times\n"
    "the element size; strings by length), or the external data length.\n"
    "External data and archive entries are not read.\n"
    "\n"
    "In JSON, each external data file has \"exists\", \"file_size\",\n"
    "\"needed_bytes\" (the largest offset plus length of its tensors), \"short\"\n"
    "and \"refused\" (why a load would not open a file that is there: a symlink\n"
    "leading out of the model's directory, a FIFO, other hard links), and\n"
    "\"invalid_external_refs\" lists the tensors with invalid keys.\n"
    "\n"
    "options:\n"
    "  --json             print one JSON object instead of text (\"archive\" is\n"
    "                     null for a model that is not an archive)\n"
    "  --max-expansion N  refuse to load MODEL when its structure would take more\n"
    "                     than N times its size in memory (0: the default, " CLI_STR(ONNXIO_DEFAULT_MAX_EXPANSION) ")\n"
    "  --help             show this help\n",
    run_info,
    NULL,
};

/* ---- text ------------------------------------------------------------ */

/* A string of the model, control characters written as \xNN. */
static void put(onnxio_string s)
{
    cli_put_escaped(stdout, s);
}

static void put_c(const char *text)
{
    onnxio_string s = {text, strlen(text)};
    put(s);
}

static void put_dtype(int32_t data_type)
{
    char buf[32];
    fputs(cli_dtype_name(data_type, buf, sizeof buf), stdout);
}

static void put_dims(const onnxio_int64_array *dims)
{
    fputc('[', stdout);
    for (size_t i = 0; i < dims->size; i++)
        printf("%s%" PRId64, i ? ", " : "", dims->data[i]);
    fputc(']', stdout);
}

static void put_shape(const cli_value *v)
{
    fputc('[', stdout);
    for (size_t i = 0; i < v->rank; i++) {
        const cli_dim *d = &v->dims[i];
        if (i)
            fputs(", ", stdout);
        if (d->kind == CLI_DIM_VALUE)
            printf("%" PRId64, d->value);
        else if (d->kind == CLI_DIM_PARAM)
            put(d->param);
        else
            fputc('?', stdout);
    }
    fputc(']', stdout);
}

/* The widest name of `v`, at least `width`, at most 40. */
static size_t name_width(const cli_value *v, size_t count, size_t width)
{
    for (size_t i = 0; i < count; i++)
        if (v[i].name.size > width)
            width = v[i].name.size;
    return width > 40 ? 40 : width;
}

static void text_values(const char *title, const cli_value *values, size_t count, size_t width)
{
    printf("%s (%zu):\n", title, count);
    for (size_t i = 0; i < count; i++) {
        const cli_value *v = &values[i];
        printf("  ");
        put(v->name);
        size_t pad = v->name.size < width ? width - v->name.size : 0;
        printf("%*s  ", (int)pad, "");
        if (v->is_tensor) {
            if (v->sparse)
                fputs("sparse ", stdout);
            put_dtype(v->elem_type);
            fputc(' ', stdout);
            if (v->has_shape)
                put_shape(v);
            else
                fputs("(unknown rank)", stdout);
        } else {
            fwrite(v->type_text, 1, v->type_text_size, stdout);
        }
        if (v->initializer)
            fputs("  (initializer)", stdout);
        fputc('\n', stdout);
    }
}

static void text_header(const cli_summary *s)
{
    char size[32];
    printf("file:             %s (%s)\n", s->path, cli_human_size(s->file_size, size, sizeof size));
    printf("ir_version:       %" PRId64 "\n", s->ir_version);
    printf("producer:         ");
    put(s->producer_name);
    if (s->producer_version.size) {
        if (s->producer_name.size)
            fputc(' ', stdout);
        put(s->producer_version);
    }
    if (!s->producer_name.size && !s->producer_version.size)
        fputs("(none)", stdout);
    fputc('\n', stdout);
    if (s->domain.size) {
        printf("domain:           ");
        put(s->domain);
        fputc('\n', stdout);
    }
    if (s->has_model_version)
        printf("model_version:    %" PRId64 "\n", s->model_version);
    printf("opset_import:     ");
    for (size_t i = 0; i < s->opset_count; i++) {
        const cli_opset *o = &s->opsets[i];
        printf("%s", i ? ", " : "");
        if (o->domain.size)
            put(o->domain);
        else
            fputs("ai.onnx", stdout);
        printf(" %" PRId64, o->version);
    }
    if (s->opset_count == 0)
        fputs("(none)", stdout);
    fputc('\n', stdout);
    for (size_t i = 0; i < s->metadata_count; i++) {
        const cli_key_value *e = &s->metadata[i];
        printf("%s", i ? "                  " : "metadata_props:   ");
        put(e->key);
        fputs(" = ", stdout);
        onnxio_string v = e->value;
        int cut = v.size > 60;
        if (cut)
            v.size = 60;
        put(v);
        printf("%s\n", cut ? "..." : "");
    }
    if (s->training_info_count)
        printf("training_info:    %zu\n", s->training_info_count);
}

static void text_graph(const cli_summary *s)
{
    char size[32];
    printf("graph:            ");
    put(s->graph_name);
    fputc('\n', stdout);
    size_t width = name_width(s->outputs, s->output_count, name_width(s->inputs, s->input_count, 0));
    text_values("inputs", s->inputs, s->input_count, width);
    text_values("outputs", s->outputs, s->output_count, width);

    printf("nodes (%" PRIu64 ", %zu op types):\n", s->node_count, s->op_count);
    for (size_t i = 0; i < s->op_count; i++) {
        const cli_op_count *op = &s->ops[i];
        printf("  %8" PRIu64 "  ", op->count);
        /* A node without an op_type is invalid, but still counted: say so
         * rather than print nothing. */
        if (op->op_type.size)
            put(op->op_type);
        else
            fputs("(no op_type)", stdout);
        if (op->domain.size) {
            fputs(" (", stdout);
            put(op->domain);
            fputc(')', stdout);
        }
        fputc('\n', stdout);
    }
    if (s->subgraph_count)
        printf("subgraphs:        %" PRIu64 " (%" PRIu64 " nodes)\n", s->subgraph_count, s->subgraph_node_count);

    printf("initializers:     %" PRIu64 " (%s, %" PRIu64 " bytes)\n", s->init_count,
           cli_human_size(s->init_bytes, size, sizeof size), s->init_bytes);
    if (s->largest_count)
        printf("  largest:\n");
    for (size_t i = 0; i < s->largest_count; i++) {
        const cli_tensor_size *t = &s->largest[i];
        printf("    %10s  ", cli_human_size(t->bytes, size, sizeof size));
        put_dtype(t->data_type);
        fputc(' ', stdout);
        put_dims(t->dims);
        fputs("  ", stdout);
        put(t->name);
        if (t->external)
            fputs("  (external)", stdout);
        fputc('\n', stdout);
    }
    if (s->sparse_count)
        printf("sparse initializers (%zu):\n", s->sparse_count);
    for (size_t i = 0; i < s->sparse_count; i++) {
        const cli_sparse *sp = &s->sparse[i];
        printf("    %10s  ", cli_human_size(sp->bytes, size, sizeof size));
        put_dtype(sp->data_type);
        fputc(' ', stdout);
        put_dims(sp->dims);
        /* Unlike JSON's "nnz", a negative count is shown as the unsigned
         * number it converts to. */
        printf("  nnz %" PRIu64 "  ", (uint64_t)sp->values_dim0);
        if (sp->has_values)
            put(sp->name);
        fputc('\n', stdout);
    }
}

static void text_external(const cli_summary *s)
{
    char size[32];
    printf("external data:    %" PRIu64 " %s in %zu %s\n", s->external_tensors,
           s->external_tensors == 1 ? "tensor" : "tensors", s->ext_count,
           s->in_archive ? (s->ext_count == 1 ? "archive entry" : "archive entries")
                         : (s->ext_count == 1 ? "file" : "files"));
    for (size_t i = 0; i < s->ext_count; i++) {
        const cli_external_file *f = &s->ext[i];
        printf("  ");
        put(f->location);
        printf(": %" PRIu64 " %s, %s", f->tensors, f->tensors == 1 ? "tensor" : "tensors",
               cli_human_size(f->bytes, size, sizeof size));
        if (f->refused) {
            fputs(" (refused: ", stdout);
            put_c(f->refused);
            fputc(')', stdout);
        } else if (!f->exists) {
            fputs(s->in_archive ? " (no such entry)" : " (missing)", stdout);
        } else if (f->too_short) {
            printf(" (short: %" PRIu64 " bytes, its tensors need %" PRIu64 ")", f->file_size, f->needed_bytes);
        }
        fputc('\n', stdout);
    }
    if (!s->bad_ref_count)
        return;
    printf("  invalid references: %zu %s\n", s->bad_ref_count, s->bad_ref_count == 1 ? "tensor" : "tensors");
    size_t shown = s->bad_ref_count < CLI_BAD_REFS_SHOWN ? s->bad_ref_count : CLI_BAD_REFS_SHOWN;
    for (size_t i = 0; i < shown; i++) {
        fputs("    ", stdout);
        put_c(s->bad_refs[i].message ? s->bad_refs[i].message : "");
        fputc('\n', stdout);
    }
    if (shown < s->bad_ref_count)
        printf("    ... and %zu more (--json lists them all)\n", s->bad_ref_count - shown);
}

static void text_functions(const cli_summary *s)
{
    printf("functions (%zu):\n", s->function_count);
    for (size_t i = 0; i < s->function_count; i++) {
        const cli_function *f = &s->functions[i];
        printf("  ");
        if (f->domain.size) {
            put(f->domain);
            fputs("::", stdout);
        }
        put(f->name);
        if (f->overload.size) {
            fputc(':', stdout);
            put(f->overload);
        }
        printf(" (%zu nodes)\n", f->node_count);
    }
}

static void text_archive(const cli_summary *s)
{
    char size[32];
    size_t width = 4; /* "name" */
    for (size_t i = 0; i < s->entry_count; i++)
        if (s->entries[i].entry->name_size > width)
            width = s->entries[i].entry->name_size;
    if (width > 40)
        width = 40;
    printf("archive:          %zu entries\n", s->entry_count);
    printf("  %-*s  %10s  %-7s  %12s  %5s  %s\n", (int)width, "name", "size", "method", "data offset", "align",
           "zero-copy");
    for (size_t i = 0; i < s->entry_count; i++) {
        const cli_archive_entry *c = &s->entries[i];
        const onnxio_archive_entry *e = c->entry;
        onnxio_string name = {e->name, e->name_size};
        printf("  ");
        put(name);
        printf("%*s  %10s  %-7s  %12" PRIu64 "  %5" PRIu64 "  %s\n",
               (int)(e->name_size < width ? width - e->name_size : 0), "",
               cli_human_size(e->size, size, sizeof size), c->method, e->data_offset, c->alignment,
               c->model ? "-" : c->zero_copy ? "yes" : "no");
    }
    printf("  total: %zu entries, %s (%" PRIu64 " bytes), %zu of %zu tensor entries zero-copy\n", s->entry_count,
           cli_human_size(s->entry_bytes, size, sizeof size), s->entry_bytes, s->zero_copy_entries,
           s->tensor_entries);
}

static void print_text(const cli_summary *s)
{
    text_header(s);
    if (s->has_graph)
        text_graph(s);
    else
        printf("graph:            (none)\n");
    if (s->external_tensors)
        text_external(s);
    if (s->function_count)
        text_functions(s);
    if (s->in_archive)
        text_archive(s);
}

/* ---- JSON ------------------------------------------------------------ */

static void json_str(cli_json *j, onnxio_string s)
{
    cli_json_string(j, s.data, s.size);
}

static void json_dtype(cli_json *j, int32_t data_type)
{
    char buf[32];
    cli_json_cstring(j, cli_dtype_name(data_type, buf, sizeof buf));
}

static void json_dims(cli_json *j, const onnxio_int64_array *dims)
{
    cli_json_begin_flat_array(j);
    for (size_t i = 0; i < dims->size; i++)
        cli_json_int(j, dims->data[i]);
    cli_json_end_array(j);
}

static void json_values(cli_json *j, const char *key, const cli_value *values, size_t count)
{
    cli_json_key(j, key);
    cli_json_begin_array(j);
    for (size_t i = 0; i < count; i++) {
        const cli_value *v = &values[i];
        cli_json_begin_object(j);
        cli_json_key(j, "name");
        json_str(j, v->name);
        cli_json_key(j, "type");
        cli_json_string(j, v->type_text, v->type_text_size);
        cli_json_key(j, "elem_type");
        if (v->is_tensor)
            json_dtype(j, v->elem_type);
        else
            cli_json_null(j);
        cli_json_key(j, "shape");
        if (v->has_shape) {
            cli_json_begin_flat_array(j);
            for (size_t k = 0; k < v->rank; k++) {
                const cli_dim *d = &v->dims[k];
                if (d->kind == CLI_DIM_VALUE)
                    cli_json_int(j, d->value);
                else if (d->kind == CLI_DIM_PARAM)
                    json_str(j, d->param);
                else
                    cli_json_null(j);
            }
            cli_json_end_array(j);
        } else {
            cli_json_null(j);
        }
        cli_json_key(j, "initializer");
        cli_json_bool(j, v->initializer);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
}

static void json_header(cli_json *j, const cli_summary *s)
{
    cli_json_key(j, "file");
    cli_json_cstring(j, s->path);
    cli_json_key(j, "file_size");
    cli_json_uint(j, s->file_size);
    cli_json_key(j, "ir_version");
    cli_json_int(j, s->ir_version);
    cli_json_key(j, "producer_name");
    json_str(j, s->producer_name);
    cli_json_key(j, "producer_version");
    json_str(j, s->producer_version);
    cli_json_key(j, "domain");
    json_str(j, s->domain);
    cli_json_key(j, "model_version");
    cli_json_int(j, s->model_version);

    cli_json_key(j, "opset_import");
    cli_json_begin_array(j);
    for (size_t i = 0; i < s->opset_count; i++) {
        cli_json_begin_object(j);
        cli_json_key(j, "domain");
        json_str(j, s->opsets[i].domain);
        cli_json_key(j, "version");
        cli_json_int(j, s->opsets[i].version);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);

    cli_json_key(j, "metadata_props");
    cli_json_begin_array(j);
    for (size_t i = 0; i < s->metadata_count; i++) {
        cli_json_begin_object(j);
        cli_json_key(j, "key");
        json_str(j, s->metadata[i].key);
        cli_json_key(j, "value");
        json_str(j, s->metadata[i].value);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
    cli_json_key(j, "training_info");
    cli_json_uint(j, s->training_info_count);
}

static void json_graph(cli_json *j, const cli_summary *s)
{
    cli_json_key(j, "graph_name");
    if (s->has_graph)
        json_str(j, s->graph_name);
    else
        cli_json_null(j);
    json_values(j, "inputs", s->inputs, s->input_count);
    json_values(j, "outputs", s->outputs, s->output_count);

    cli_json_key(j, "node_count");
    cli_json_uint(j, s->node_count);
    cli_json_key(j, "op_types");
    cli_json_begin_array(j);
    for (size_t i = 0; i < s->op_count; i++) {
        cli_json_begin_object(j);
        cli_json_key(j, "op_type");
        json_str(j, s->ops[i].op_type);
        cli_json_key(j, "domain");
        json_str(j, s->ops[i].domain);
        cli_json_key(j, "count");
        cli_json_uint(j, s->ops[i].count);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
    cli_json_key(j, "subgraphs");
    cli_json_begin_object(j);
    cli_json_key(j, "count");
    cli_json_uint(j, s->subgraph_count);
    cli_json_key(j, "node_count");
    cli_json_uint(j, s->subgraph_node_count);
    cli_json_end_object(j);

    cli_json_key(j, "initializers");
    cli_json_begin_object(j);
    cli_json_key(j, "count");
    cli_json_uint(j, s->init_count);
    cli_json_key(j, "bytes");
    cli_json_uint(j, s->init_bytes);
    cli_json_key(j, "largest");
    cli_json_begin_array(j);
    for (size_t i = 0; i < s->largest_count; i++) {
        const cli_tensor_size *t = &s->largest[i];
        cli_json_begin_object(j);
        cli_json_key(j, "name");
        json_str(j, t->name);
        cli_json_key(j, "data_type");
        json_dtype(j, t->data_type);
        cli_json_key(j, "dims");
        json_dims(j, t->dims);
        cli_json_key(j, "bytes");
        cli_json_uint(j, t->bytes);
        cli_json_key(j, "external");
        cli_json_bool(j, t->external);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
    cli_json_end_object(j);

    cli_json_key(j, "sparse_initializers");
    cli_json_begin_array(j);
    for (size_t i = 0; i < s->sparse_count; i++) {
        const cli_sparse *sp = &s->sparse[i];
        cli_json_begin_object(j);
        cli_json_key(j, "name");
        if (sp->has_values)
            json_str(j, sp->name);
        else
            cli_json_null(j);
        cli_json_key(j, "data_type");
        json_dtype(j, sp->data_type);
        cli_json_key(j, "dims");
        json_dims(j, sp->dims);
        cli_json_key(j, "nnz");
        cli_json_uint(j, sp->values_dim0 > 0 ? (uint64_t)sp->values_dim0 : 0);
        cli_json_key(j, "bytes");
        cli_json_uint(j, sp->bytes);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
}

static void json_external(cli_json *j, const cli_summary *s)
{
    cli_json_key(j, "external_data");
    cli_json_begin_array(j);
    for (size_t i = 0; i < s->ext_count; i++) {
        const cli_external_file *f = &s->ext[i];
        cli_json_begin_object(j);
        cli_json_key(j, "location");
        json_str(j, f->location);
        cli_json_key(j, "tensors");
        cli_json_uint(j, f->tensors);
        cli_json_key(j, "bytes");
        cli_json_uint(j, f->bytes);
        cli_json_key(j, "exists");
        cli_json_bool(j, f->exists);
        cli_json_key(j, "file_size");
        if (f->exists)
            cli_json_uint(j, f->file_size);
        else
            cli_json_null(j);
        cli_json_key(j, "needed_bytes");
        cli_json_uint(j, f->needed_bytes);
        cli_json_key(j, "short");
        if (f->exists)
            cli_json_bool(j, f->too_short);
        else
            cli_json_null(j);
        cli_json_key(j, "refused");
        if (f->refused)
            cli_json_cstring(j, f->refused);
        else
            cli_json_null(j);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
    cli_json_key(j, "external_tensors");
    cli_json_uint(j, s->external_tensors);
    cli_json_key(j, "invalid_external_refs");
    cli_json_begin_array(j);
    for (size_t i = 0; i < s->bad_ref_count; i++) {
        const cli_bad_ref *b = &s->bad_refs[i];
        cli_json_begin_object(j);
        cli_json_key(j, "tensor");
        json_str(j, b->tensor);
        cli_json_key(j, "status");
        cli_json_cstring(j, onnxio_status_name(b->status));
        cli_json_key(j, "message");
        cli_json_cstring(j, b->message);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
}

static void json_functions(cli_json *j, const cli_summary *s)
{
    cli_json_key(j, "functions");
    cli_json_begin_array(j);
    for (size_t i = 0; i < s->function_count; i++) {
        const cli_function *f = &s->functions[i];
        cli_json_begin_object(j);
        cli_json_key(j, "domain");
        json_str(j, f->domain);
        cli_json_key(j, "name");
        json_str(j, f->name);
        cli_json_key(j, "overload");
        json_str(j, f->overload);
        cli_json_key(j, "node_count");
        cli_json_uint(j, f->node_count);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
}

static void json_archive(cli_json *j, const cli_summary *s)
{
    cli_json_begin_object(j);
    cli_json_key(j, "entries");
    cli_json_begin_array(j);
    for (size_t i = 0; i < s->entry_count; i++) {
        const cli_archive_entry *c = &s->entries[i];
        const onnxio_archive_entry *e = c->entry;
        cli_json_begin_object(j);
        cli_json_key(j, "name");
        cli_json_string(j, e->name, e->name_size);
        cli_json_key(j, "size");
        cli_json_uint(j, e->size);
        cli_json_key(j, "compressed_size");
        cli_json_uint(j, e->compressed_size);
        cli_json_key(j, "method");
        cli_json_cstring(j, c->method);
        cli_json_key(j, "crc32");
        cli_json_uint(j, e->crc32);
        cli_json_key(j, "header_offset");
        cli_json_uint(j, e->header_offset);
        cli_json_key(j, "data_offset");
        cli_json_uint(j, e->data_offset);
        cli_json_key(j, "alignment");
        cli_json_uint(j, c->alignment);
        cli_json_key(j, "model");
        cli_json_bool(j, c->model);
        cli_json_key(j, "zero_copy");
        if (c->model)
            cli_json_null(j);
        else
            cli_json_bool(j, c->zero_copy);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
    cli_json_key(j, "entry_count");
    cli_json_uint(j, s->entry_count);
    cli_json_key(j, "bytes");
    cli_json_uint(j, s->entry_bytes);
    cli_json_key(j, "compressed_bytes");
    cli_json_uint(j, s->entry_compressed_bytes);
    cli_json_key(j, "tensor_entries");
    cli_json_uint(j, s->tensor_entries);
    cli_json_key(j, "zero_copy_entries");
    cli_json_uint(j, s->zero_copy_entries);
    cli_json_end_object(j);
}

static void print_json(const cli_summary *s)
{
    cli_json j;
    cli_json_init(&j, stdout);
    cli_json_begin_object(&j);
    json_header(&j, s);
    json_graph(&j, s);
    json_external(&j, s);
    json_functions(&j, s);
    cli_json_key(&j, "archive");
    if (s->in_archive)
        json_archive(&j, s);
    else
        cli_json_null(&j);
    cli_json_end_object(&j);
}

/* ---- the verb -------------------------------------------------------- */

static int run_info(int argc, char **argv)
{
    int json = 0;
    const char *expansion_text = NULL;
    const cli_option opts[] = {{"json", NULL, &json}, {"max-expansion", &expansion_text, NULL}};
    char *pos[1];
    size_t npos;
    int rc = cli_parse_args(&cli_verb_info, argc, argv, opts, sizeof opts / sizeof opts[0], pos, 1, 1, &npos);
    if (rc >= 0)
        return rc;
    const char *path = pos[0];
    uint64_t max_expansion = 0;
    if ((rc = cli_parse_max_expansion(&cli_verb_info, expansion_text, &max_expansion)) >= 0)
        return rc;

    /* Structure only, external data files not opened; an archive is
     * opened on its own to list its entries, nothing of their data read. */
    onnxio_arena *arena;
    onnxio_ModelProto *model;
    onnxio_archive *archive;
    if ((rc = cli_load_structure("info", path, max_expansion, &arena, &model, &archive)) != CLI_EXIT_OK)
        return rc;
    cli_note_load("info", path, model, !archive);
    cli_summary s;
    if (cli_summarize_archive(model, path, archive, &s) != 0) {
        cli_summary_free(&s);
        onnxio_arena_unref(arena);
        onnxio_archive_close(archive);
        return cli_fail_msg("info", path, "out of memory");
    }
    if (json)
        print_json(&s);
    else
        print_text(&s);
    cli_summary_free(&s);
    onnxio_arena_unref(arena);
    onnxio_archive_close(archive);
    return cli_finish_stdout("info", CLI_EXIT_OK);
}
