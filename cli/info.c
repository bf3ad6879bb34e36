/* onnxio info: a summary of a model, as text or as one JSON object. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "json.h"
#include "onnxz.h"
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

/* ---- types and shapes ------------------------------------------------ */

static void put_escaped(FILE *out, onnxio_string s)
{
    /* Names are shown as they are, except control characters, which could
     * otherwise drive the terminal. */
    for (size_t i = 0; i < s.size; i++) {
        unsigned char c = (unsigned char)s.data[i];
        if (c < 0x20 || c == 0x7F)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}

static void put_escaped_c(FILE *out, const char *text)
{
    onnxio_string s = {text, strlen(text)};
    put_escaped(out, s);
}

/* Whether an external data file (or archive entry) that is there is too
 * short for the ranges its tensors refer to. */
static int file_is_short(const cli_external_file *f)
{
    return f->exists && f->file_size < f->needed_bytes;
}

static void put_dtype(FILE *out, int32_t data_type)
{
    char buf[32];
    fputs(cli_dtype_name(data_type, buf, sizeof buf), out);
}

static void put_type(FILE *out, const onnxio_TypeProto *tp)
{
    if (!tp) {
        fputc('?', out);
    } else if (tp->tensor_type) {
        fputs("tensor(", out);
        put_dtype(out, tp->tensor_type->elem_type);
        fputc(')', out);
    } else if (tp->sparse_tensor_type) {
        fputs("sparse_tensor(", out);
        put_dtype(out, tp->sparse_tensor_type->elem_type);
        fputc(')', out);
    } else if (tp->sequence_type) {
        fputs("seq(", out);
        put_type(out, tp->sequence_type->elem_type);
        fputc(')', out);
    } else if (tp->map_type) {
        fputs("map(", out);
        put_dtype(out, tp->map_type->key_type);
        fputs(", ", out);
        put_type(out, tp->map_type->value_type);
        fputc(')', out);
    } else if (tp->optional_type) {
        fputs("optional(", out);
        put_type(out, tp->optional_type->elem_type);
        fputc(')', out);
    } else if (tp->opaque_type) {
        fputs("opaque(", out);
        put_escaped(out, tp->opaque_type->domain);
        if (tp->opaque_type->domain.size)
            fputc('.', out);
        put_escaped(out, tp->opaque_type->name);
        fputc(')', out);
    } else {
        fputc('?', out);
    }
}

/* The shape of a tensor or sparse tensor type; NULL for other types and for
 * tensors of unknown rank. */
static const onnxio_TensorShapeProto *type_shape(const onnxio_TypeProto *tp, int *is_tensor,
                                                 int32_t *elem_type)
{
    *is_tensor = 0;
    if (!tp)
        return NULL;
    if (tp->tensor_type) {
        *is_tensor = 1;
        *elem_type = tp->tensor_type->elem_type;
        return tp->tensor_type->shape;
    }
    if (tp->sparse_tensor_type) {
        *is_tensor = 1;
        *elem_type = tp->sparse_tensor_type->elem_type;
        return tp->sparse_tensor_type->shape;
    }
    return NULL;
}

static void put_shape(FILE *out, const onnxio_TensorShapeProto *shape)
{
    fputc('[', out);
    for (size_t i = 0; i < shape->dim.size; i++) {
        const onnxio_TensorShapeProto_Dimension *d = shape->dim.data[i];
        if (i)
            fputs(", ", out);
        if (onnxio_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_value))
            fprintf(out, "%" PRId64, d->dim_value);
        else if (onnxio_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_param))
            put_escaped(out, d->dim_param);
        else
            fputc('?', out);
    }
    fputc(']', out);
}

static void put_dims(FILE *out, const onnxio_int64_array *dims)
{
    fputc('[', out);
    for (size_t i = 0; i < dims->size; i++)
        fprintf(out, "%s%" PRId64, i ? ", " : "", dims->data[i]);
    fputc(']', out);
}

/* ---- archive entries ------------------------------------------------- */

#define entry_is_model onnxio_archive_entry_is_model

/* Whether a no_copy load with the default options borrows the entry from
 * the mapping (the library's rule). */
static int entry_zero_copy(const onnxio_archive_entry *e)
{
    return onnxio_archive_entry_borrowable(e, 0);
}

static const char *method_name(uint16_t method)
{
    return method == ONNXIO_ARCHIVE_STORED ? "stored" : method == ONNXIO_ARCHIVE_DEFLATED ? "deflate" : "other";
}

typedef struct archive_totals {
    size_t entries;
    uint64_t bytes;            /* uncompressed */
    uint64_t compressed_bytes; /* as stored in the file */
    size_t tensor_entries;     /* every entry but the model */
    size_t zero_copy;          /* tensor entries a no_copy load borrows */
} archive_totals;

static archive_totals archive_sum(const onnxio_archive *a)
{
    archive_totals t = {0, 0, 0, 0, 0};
    t.entries = onnxio_archive_entry_count(a);
    for (size_t i = 0; i < t.entries; i++) {
        const onnxio_archive_entry *e = onnxio_archive_entry_at(a, i);
        t.bytes += e->size;
        t.compressed_bytes += e->compressed_size;
        if (entry_is_model(e))
            continue;
        t.tensor_entries++;
        t.zero_copy += entry_zero_copy(e) != 0;
    }
    return t;
}

static void text_archive(const onnxio_archive *a)
{
    char size[32];
    archive_totals t = archive_sum(a);
    size_t width = 4; /* "name" */
    for (size_t i = 0; i < t.entries; i++) {
        size_t n = onnxio_archive_entry_at(a, i)->name_size;
        if (n > width)
            width = n;
    }
    if (width > 40)
        width = 40;
    printf("archive:          %zu entries\n", t.entries);
    printf("  %-*s  %10s  %-7s  %12s  %5s  %s\n", (int)width, "name", "size", "method", "data offset", "align",
           "zero-copy");
    for (size_t i = 0; i < t.entries; i++) {
        const onnxio_archive_entry *e = onnxio_archive_entry_at(a, i);
        onnxio_string name = {e->name, e->name_size};
        printf("  ");
        put_escaped(stdout, name);
        printf("%*s  %10s  %-7s  %12" PRIu64 "  %5" PRIu64 "  %s\n",
               (int)(e->name_size < width ? width - e->name_size : 0), "",
               cli_human_size(e->size, size, sizeof size), method_name(e->method), e->data_offset,
               cli_offset_alignment(e->data_offset, CLI_ARCHIVE_MAX_SHOWN_ALIGNMENT),
               entry_is_model(e) ? "-" : entry_zero_copy(e) ? "yes" : "no");
    }
    printf("  total: %zu entries, %s (%" PRIu64 " bytes), %zu of %zu tensor entries zero-copy\n", t.entries,
           cli_human_size(t.bytes, size, sizeof size), t.bytes, t.zero_copy, t.tensor_entries);
}

static void json_archive(cli_json *j, const onnxio_archive *a)
{
    archive_totals t = archive_sum(a);
    cli_json_begin_object(j);
    cli_json_key(j, "entries");
    cli_json_begin_array(j);
    for (size_t i = 0; i < t.entries; i++) {
        const onnxio_archive_entry *e = onnxio_archive_entry_at(a, i);
        cli_json_begin_object(j);
        cli_json_key(j, "name");
        cli_json_string(j, e->name, e->name_size);
        cli_json_key(j, "size");
        cli_json_uint(j, e->size);
        cli_json_key(j, "compressed_size");
        cli_json_uint(j, e->compressed_size);
        cli_json_key(j, "method");
        cli_json_cstring(j, method_name(e->method));
        cli_json_key(j, "crc32");
        cli_json_uint(j, e->crc32);
        cli_json_key(j, "header_offset");
        cli_json_uint(j, e->header_offset);
        cli_json_key(j, "data_offset");
        cli_json_uint(j, e->data_offset);
        cli_json_key(j, "alignment");
        cli_json_uint(j, cli_offset_alignment(e->data_offset, CLI_ARCHIVE_MAX_SHOWN_ALIGNMENT));
        cli_json_key(j, "model");
        cli_json_bool(j, entry_is_model(e));
        cli_json_key(j, "zero_copy");
        if (entry_is_model(e))
            cli_json_null(j);
        else
            cli_json_bool(j, entry_zero_copy(e));
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
    cli_json_key(j, "entry_count");
    cli_json_uint(j, t.entries);
    cli_json_key(j, "bytes");
    cli_json_uint(j, t.bytes);
    cli_json_key(j, "compressed_bytes");
    cli_json_uint(j, t.compressed_bytes);
    cli_json_key(j, "tensor_entries");
    cli_json_uint(j, t.tensor_entries);
    cli_json_key(j, "zero_copy_entries");
    cli_json_uint(j, t.zero_copy);
    cli_json_end_object(j);
}

/* ---- text ------------------------------------------------------------ */

static size_t name_width(const onnxio_ValueInfoProto_list *list, size_t width)
{
    for (size_t i = 0; i < list->size; i++)
        if (list->data[i]->name.size > width)
            width = list->data[i]->name.size;
    return width > 40 ? 40 : width;
}

static void text_values(const char *title, const onnxio_ValueInfoProto_list *list,
                        const cli_summary *s, size_t width)
{
    static const onnxio_string empty = {"", 0};
    printf("%s (%zu):\n", title, list->size);
    for (size_t i = 0; i < list->size; i++) {
        const onnxio_ValueInfoProto *v = list->data[i];
        printf("  ");
        put_escaped(stdout, v->name);
        size_t pad = v->name.size < width ? width - v->name.size : 0;
        printf("%*s  ", (int)pad, "");
        int is_tensor;
        int32_t elem = 0;
        const onnxio_TensorShapeProto *shape = type_shape(v->type, &is_tensor, &elem);
        if (is_tensor) {
            if (v->type->sparse_tensor_type)
                fputs("sparse ", stdout);
            put_dtype(stdout, elem);
            fputc(' ', stdout);
            if (shape)
                put_shape(stdout, shape);
            else
                fputs("(unknown rank)", stdout);
        } else {
            put_type(stdout, v->type);
        }
        if (cli_strmap_find(&s->init_names, v->name, empty))
            fputs("  (initializer)", stdout);
        fputc('\n', stdout);
    }
}

static void text_tensor_line(const onnxio_TensorProto *t, uint64_t bytes, int external)
{
    char size[32];
    printf("    %10s  ", cli_human_size(bytes, size, sizeof size));
    put_dtype(stdout, t->data_type);
    fputc(' ', stdout);
    put_dims(stdout, &t->dims);
    fputs("  ", stdout);
    put_escaped(stdout, t->name);
    if (external)
        fputs("  (external)", stdout);
    fputc('\n', stdout);
}

static void print_text(const char *path, const onnxio_ModelProto *m, const cli_summary *s,
                       const onnxio_archive *archive)
{
    char size[32];
    printf("file:             %s (%s)\n", path, cli_human_size(s->file_size, size, sizeof size));
    printf("ir_version:       %" PRId64 "\n", m->ir_version);
    printf("producer:         ");
    put_escaped(stdout, m->producer_name);
    if (m->producer_version.size) {
        if (m->producer_name.size)
            fputc(' ', stdout);
        put_escaped(stdout, m->producer_version);
    }
    if (!m->producer_name.size && !m->producer_version.size)
        fputs("(none)", stdout);
    fputc('\n', stdout);
    if (m->domain.size) {
        printf("domain:           ");
        put_escaped(stdout, m->domain);
        fputc('\n', stdout);
    }
    if (onnxio_has(m, ONNXIO_FIELD_ModelProto_model_version))
        printf("model_version:    %" PRId64 "\n", m->model_version);
    printf("opset_import:     ");
    for (size_t i = 0; i < m->opset_import.size; i++) {
        const onnxio_OperatorSetIdProto *o = m->opset_import.data[i];
        printf("%s", i ? ", " : "");
        if (o->domain.size)
            put_escaped(stdout, o->domain);
        else
            fputs("ai.onnx", stdout);
        printf(" %" PRId64, o->version);
    }
    if (m->opset_import.size == 0)
        fputs("(none)", stdout);
    fputc('\n', stdout);
    for (size_t i = 0; i < m->metadata_props.size; i++) {
        const onnxio_StringStringEntryProto *e = m->metadata_props.data[i];
        printf("%s", i ? "                  " : "metadata_props:   ");
        put_escaped(stdout, e->key);
        fputs(" = ", stdout);
        onnxio_string v = e->value;
        int cut = v.size > 60;
        if (cut)
            v.size = 60;
        put_escaped(stdout, v);
        printf("%s\n", cut ? "..." : "");
    }
    if (m->training_info.size)
        printf("training_info:    %zu\n", m->training_info.size);

    const onnxio_GraphProto *g = m->graph;
    if (!g) {
        printf("graph:            (none)\n");
    } else {
        printf("graph:            ");
        put_escaped(stdout, g->name);
        fputc('\n', stdout);
        size_t width = name_width(&g->output, name_width(&g->input, 0));
        text_values("inputs", &g->input, s, width);
        text_values("outputs", &g->output, s, width);

        printf("nodes (%" PRIu64 ", %zu op types):\n", s->node_count, s->op_count);
        for (size_t i = 0; i < s->op_count; i++) {
            const cli_op_count *op = &s->ops[i];
            printf("  %8" PRIu64 "  ", op->count);
            /* A node without an op_type is invalid, but still counted:
             * say so rather than print nothing. */
            if (op->op_type.size)
                put_escaped(stdout, op->op_type);
            else
                fputs("(no op_type)", stdout);
            if (op->domain.size) {
                fputs(" (", stdout);
                put_escaped(stdout, op->domain);
                fputc(')', stdout);
            }
            fputc('\n', stdout);
        }
        if (s->subgraph_count)
            printf("subgraphs:        %" PRIu64 " (%" PRIu64 " nodes)\n", s->subgraph_count,
                   s->subgraph_node_count);

        printf("initializers:     %" PRIu64 " (%s, %" PRIu64 " bytes)\n", s->init_count,
               cli_human_size(s->init_bytes, size, sizeof size), s->init_bytes);
        if (s->largest_count) {
            printf("  largest:\n");
            for (size_t i = 0; i < s->largest_count; i++)
                text_tensor_line(s->largest[i].tensor, s->largest[i].bytes, s->largest[i].external);
        }
        if (g->sparse_initializer.size) {
            printf("sparse initializers (%zu):\n", g->sparse_initializer.size);
            for (size_t i = 0; i < g->sparse_initializer.size; i++) {
                const onnxio_SparseTensorProto *sp = g->sparse_initializer.data[i];
                uint64_t bytes = 0;
                if (sp->values)
                    bytes += cli_summary_tensor_bytes(s, sp->values);
                if (sp->indices)
                    bytes += cli_summary_tensor_bytes(s, sp->indices);
                printf("    %10s  ", cli_human_size(bytes, size, sizeof size));
                put_dtype(stdout, sp->values ? sp->values->data_type : 0);
                fputc(' ', stdout);
                put_dims(stdout, &sp->dims);
                printf("  nnz %" PRIu64 "  ",
                       sp->values && sp->values->dims.size ? (uint64_t)sp->values->dims.data[0] : 0);
                if (sp->values)
                    put_escaped(stdout, sp->values->name);
                fputc('\n', stdout);
            }
        }
    }

    if (s->external_tensors) {
        printf("external data:    %" PRIu64 " %s in %zu %s\n", s->external_tensors,
               s->external_tensors == 1 ? "tensor" : "tensors", s->ext_count,
               s->in_archive ? (s->ext_count == 1 ? "archive entry" : "archive entries")
                             : (s->ext_count == 1 ? "file" : "files"));
        for (size_t i = 0; i < s->ext_count; i++) {
            const cli_external_file *f = &s->ext[i];
            printf("  ");
            put_escaped(stdout, f->location);
            printf(": %" PRIu64 " %s, %s", f->tensors, f->tensors == 1 ? "tensor" : "tensors", cli_human_size(f->bytes, size, sizeof size));
            if (f->refused) {
                fputs(" (refused: ", stdout);
                put_escaped_c(stdout, f->refused);
                fputc(')', stdout);
            } else if (!f->exists) {
                fputs(s->in_archive ? " (no such entry)" : " (missing)", stdout);
            } else if (file_is_short(f)) {
                printf(" (short: %" PRIu64 " bytes, its tensors need %" PRIu64 ")", f->file_size, f->needed_bytes);
            }
            fputc('\n', stdout);
        }
        if (s->bad_ref_count) {
            printf("  invalid references: %zu %s\n", s->bad_ref_count, s->bad_ref_count == 1 ? "tensor" : "tensors");
            size_t shown = s->bad_ref_count < CLI_BAD_REFS_SHOWN ? s->bad_ref_count : CLI_BAD_REFS_SHOWN;
            for (size_t i = 0; i < shown; i++) {
                fputs("    ", stdout);
                put_escaped_c(stdout, s->bad_refs[i].message ? s->bad_refs[i].message : "");
                fputc('\n', stdout);
            }
            if (shown < s->bad_ref_count)
                printf("    ... and %zu more (--json lists them all)\n", s->bad_ref_count - shown);
        }
    }

    if (m->functions.size) {
        printf("functions (%zu):\n", m->functions.size);
        for (size_t i = 0; i < m->functions.size; i++) {
            const onnxio_FunctionProto *f = m->functions.data[i];
            printf("  ");
            if (f->domain.size) {
                put_escaped(stdout, f->domain);
                fputs("::", stdout);
            }
            put_escaped(stdout, f->name);
            if (f->overload.size) {
                fputc(':', stdout);
                put_escaped(stdout, f->overload);
            }
            printf(" (%zu nodes)\n", f->node.size);
        }
    }
    if (archive)
        text_archive(archive);
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

static void json_type_string(cli_json *j, const onnxio_TypeProto *tp)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        cli_json_null(j);
        return;
    }
    put_type(mem, tp);
    if (fclose(mem) != 0) {
        free(text);
        cli_json_null(j);
        return;
    }
    cli_json_string(j, text, len);
    free(text);
}

static void json_dims(cli_json *j, const onnxio_int64_array *dims)
{
    cli_json_begin_flat_array(j);
    for (size_t i = 0; i < dims->size; i++)
        cli_json_int(j, dims->data[i]);
    cli_json_end_array(j);
}

static void json_values(cli_json *j, const char *key, const onnxio_ValueInfoProto_list *list,
                        const cli_summary *s)
{
    static const onnxio_string empty = {"", 0};
    cli_json_key(j, key);
    cli_json_begin_array(j);
    for (size_t i = 0; i < list->size; i++) {
        const onnxio_ValueInfoProto *v = list->data[i];
        cli_json_begin_object(j);
        cli_json_key(j, "name");
        json_str(j, v->name);
        cli_json_key(j, "type");
        json_type_string(j, v->type);
        int is_tensor;
        int32_t elem = 0;
        const onnxio_TensorShapeProto *shape = type_shape(v->type, &is_tensor, &elem);
        cli_json_key(j, "elem_type");
        if (is_tensor)
            json_dtype(j, elem);
        else
            cli_json_null(j);
        cli_json_key(j, "shape");
        if (shape) {
            cli_json_begin_flat_array(j);
            for (size_t k = 0; k < shape->dim.size; k++) {
                const onnxio_TensorShapeProto_Dimension *d = shape->dim.data[k];
                if (onnxio_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_value))
                    cli_json_int(j, d->dim_value);
                else if (onnxio_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_param))
                    json_str(j, d->dim_param);
                else
                    cli_json_null(j);
            }
            cli_json_end_array(j);
        } else {
            cli_json_null(j);
        }
        cli_json_key(j, "initializer");
        cli_json_bool(j, cli_strmap_find(&s->init_names, v->name, empty) != NULL);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
}

static void json_tensor(cli_json *j, const onnxio_TensorProto *t, uint64_t bytes, int external)
{
    cli_json_begin_object(j);
    cli_json_key(j, "name");
    json_str(j, t->name);
    cli_json_key(j, "data_type");
    json_dtype(j, t->data_type);
    cli_json_key(j, "dims");
    json_dims(j, &t->dims);
    cli_json_key(j, "bytes");
    cli_json_uint(j, bytes);
    cli_json_key(j, "external");
    cli_json_bool(j, external);
    cli_json_end_object(j);
}

static void print_json(const char *path, const onnxio_ModelProto *m, const cli_summary *s,
                       const onnxio_archive *archive)
{
    cli_json jw;
    cli_json *j = &jw;
    cli_json_init(j, stdout);
    cli_json_begin_object(j);
    cli_json_key(j, "file");
    cli_json_cstring(j, path);
    cli_json_key(j, "file_size");
    cli_json_uint(j, s->file_size);
    cli_json_key(j, "ir_version");
    cli_json_int(j, m->ir_version);
    cli_json_key(j, "producer_name");
    json_str(j, m->producer_name);
    cli_json_key(j, "producer_version");
    json_str(j, m->producer_version);
    cli_json_key(j, "domain");
    json_str(j, m->domain);
    cli_json_key(j, "model_version");
    cli_json_int(j, m->model_version);

    cli_json_key(j, "opset_import");
    cli_json_begin_array(j);
    for (size_t i = 0; i < m->opset_import.size; i++) {
        const onnxio_OperatorSetIdProto *o = m->opset_import.data[i];
        cli_json_begin_object(j);
        cli_json_key(j, "domain");
        json_str(j, o->domain);
        cli_json_key(j, "version");
        cli_json_int(j, o->version);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);

    cli_json_key(j, "metadata_props");
    cli_json_begin_array(j);
    for (size_t i = 0; i < m->metadata_props.size; i++) {
        const onnxio_StringStringEntryProto *e = m->metadata_props.data[i];
        cli_json_begin_object(j);
        cli_json_key(j, "key");
        json_str(j, e->key);
        cli_json_key(j, "value");
        json_str(j, e->value);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
    cli_json_key(j, "training_info");
    cli_json_uint(j, m->training_info.size);

    static const onnxio_ValueInfoProto_list no_values = {NULL, 0, 0};
    static const onnxio_SparseTensorProto_list no_sparse = {NULL, 0, 0};
    const onnxio_GraphProto *g = m->graph;
    cli_json_key(j, "graph_name");
    if (g)
        json_str(j, g->name);
    else
        cli_json_null(j);
    json_values(j, "inputs", g ? &g->input : &no_values, s);
    json_values(j, "outputs", g ? &g->output : &no_values, s);

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
    for (size_t i = 0; i < s->largest_count; i++)
        json_tensor(j, s->largest[i].tensor, s->largest[i].bytes, s->largest[i].external);
    cli_json_end_array(j);
    cli_json_end_object(j);

    const onnxio_SparseTensorProto_list *sparse = g ? &g->sparse_initializer : &no_sparse;
    cli_json_key(j, "sparse_initializers");
    cli_json_begin_array(j);
    for (size_t i = 0; i < sparse->size; i++) {
        const onnxio_SparseTensorProto *sp = sparse->data[i];
        uint64_t bytes = 0;
        if (sp->values)
            bytes += cli_summary_tensor_bytes(s, sp->values);
        if (sp->indices)
            bytes += cli_summary_tensor_bytes(s, sp->indices);
        cli_json_begin_object(j);
        cli_json_key(j, "name");
        if (sp->values)
            json_str(j, sp->values->name);
        else
            cli_json_null(j);
        cli_json_key(j, "data_type");
        json_dtype(j, sp->values ? sp->values->data_type : 0);
        cli_json_key(j, "dims");
        json_dims(j, &sp->dims);
        cli_json_key(j, "nnz");
        cli_json_uint(j, sp->values && sp->values->dims.size && sp->values->dims.data[0] > 0
                             ? (uint64_t)sp->values->dims.data[0]
                             : 0);
        cli_json_key(j, "bytes");
        cli_json_uint(j, bytes);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);

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
            cli_json_bool(j, file_is_short(f));
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
        json_str(j, b->tensor->name);
        cli_json_key(j, "status");
        cli_json_cstring(j, onnxio_status_name(b->status));
        cli_json_key(j, "message");
        cli_json_cstring(j, b->message);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);

    cli_json_key(j, "functions");
    cli_json_begin_array(j);
    for (size_t i = 0; i < m->functions.size; i++) {
        const onnxio_FunctionProto *f = m->functions.data[i];
        cli_json_begin_object(j);
        cli_json_key(j, "domain");
        json_str(j, f->domain);
        cli_json_key(j, "name");
        json_str(j, f->name);
        cli_json_key(j, "overload");
        json_str(j, f->overload);
        cli_json_key(j, "node_count");
        cli_json_uint(j, f->node.size);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
    cli_json_key(j, "archive");
    if (archive)
        json_archive(j, archive);
    else
        cli_json_null(j);
    cli_json_end_object(j);
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

    /* Structure only: payload sizes are kept, nothing is copied, and
     * external data files are not opened. */
    onnxio_parse_options po = {0};
    po.load_external_data = ONNXIO_OFF;
    po.skip_raw_data = true;
    po.no_copy = true;
    po.max_expansion = max_expansion;

    /* An archive (by its content, as the load decides) is opened and
     * validated on its own to list its entries; nothing of their data is
     * read. */
    int is_archive = cli_file_is_archive(path);
    if (is_archive < 0)
        return cli_fail("info", path);
    onnxio_archive *archive = NULL;
    if (is_archive && onnxio_archive_open(path, &archive) != ONNXIO_OK)
        return cli_fail("info", path);

    onnxio_arena *arena = onnxio_arena_new();
    if (!arena) {
        onnxio_archive_close(archive);
        return cli_fail_msg("info", path, "out of memory");
    }
    onnxio_ModelProto *model = NULL;
    if (cli_load_model(path, &po, arena, &model) != ONNXIO_OK) {
        rc = cli_fail("info", path);
        onnxio_arena_unref(arena);
        onnxio_archive_close(archive);
        return rc;
    }
    cli_note_load("info", path, model, !archive);
    cli_summary s;
    if (cli_summarize_archive(model, path, archive, &s) != 0) {
        cli_summary_free(&s);
        onnxio_arena_unref(arena);
        onnxio_archive_close(archive);
        return cli_fail_msg("info", path, "out of memory");
    }
    if (json)
        print_json(path, model, &s, archive);
    else
        print_text(path, model, &s, archive);
    cli_summary_free(&s);
    onnxio_arena_unref(arena);
    onnxio_archive_close(archive);
    return cli_finish_stdout("info", CLI_EXIT_OK);
}
