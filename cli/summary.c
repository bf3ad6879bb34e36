#include "summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "port.h"
#include "onnxz.h"
#include "tensor.h"
#include "walk.h"

static const onnxio_string empty_string = {"", 0};

/* A copy of onnxio_last_error(), which the next onnxio call replaces. */
static char *last_error_copy(void)
{
    const char *msg = onnxio_last_error();
    size_t n = strlen(msg);
    char *copy = malloc(n + 1);
    if (copy)
        memcpy(copy, msg, n + 1);
    return copy;
}

/* In an archive a location names an entry (onnxio_external_ref_parse has
 * checked its spelling, so it holds no NUL byte). */
static int find_entry(cli_external_file *f, const onnxio_archive *archive)
{
    /* Names from the model need not be NUL-terminated. */
    char *name = malloc(f->location.size + 1);
    if (!name)
        return -1;
    memcpy(name, f->location.data, f->location.size);
    name[f->location.size] = '\0';
    const onnxio_archive_entry *e = onnxio_archive_find(archive, name);
    free(name);
    if (e) {
        f->exists = 1;
        f->file_size = e->size;
    }
    return 0;
}

onnxio_status cli_open_external(const char *model_path, onnxio_string location, int *fd, uint64_t *size)
{
    char *dir = cli_model_dir(model_path, NULL);
    char *loc = malloc(location.size + 1);
    onnxio_status st = ONNXIO_ERR_NO_MEMORY;
    if (dir && loc) {
        memcpy(loc, location.data, location.size);
        loc[location.size] = '\0';
        st = onnxio_external_data_open(dir, loc, ONNXIO_OPEN_READ, fd, size);
    }
    free(dir);
    free(loc);
    return st;
}

/* Opens the data file the way a load would, for its size; nothing is
 * read. */
static int open_location(cli_external_file *f, const char *model_path)
{
    int fd = -1;
    uint64_t size = 0;
    onnxio_status st = cli_open_external(model_path, f->location, &fd, &size);
    int rc = 0;
    if (st == ONNXIO_OK) {
        close(fd);
        f->exists = 1;
        f->file_size = size;
    } else if (st == ONNXIO_ERR_NO_MEMORY) {
        rc = -1;
    } else if (st != ONNXIO_ERR_NOT_FOUND && !(f->refused = last_error_copy())) {
        rc = -1;
    }
    return rc;
}

typedef struct walk_state {
    cli_summary *s;
    const char *model_path;
    const onnxio_archive *archive; /* NULL: locations are files */
    size_t ext_capacity;
    size_t bad_capacity;
    uint64_t graphs;
    uint64_t nodes;
    int failed;
} walk_state;

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Bytes of an external tensor with a valid reference into `f` (NULL: not
 * known): its length key, else what its data type and dims need, else
 * (strings, unknown types) the rest of the file. */
static uint64_t ref_bytes(const onnxio_TensorProto *t, const onnxio_external_ref *ref, const cli_external_file *f)
{
    uint64_t raw;
    if (ref->has_length)
        return ref->length;
    if (onnxio_tensor_raw_size(t, &raw) == 1)
        return raw;
    return f && f->exists && f->file_size > ref->offset ? f->file_size - ref->offset : 0;
}

static void add_bad_ref(walk_state *w, const onnxio_TensorProto *t, onnxio_status status)
{
    cli_summary *s = w->s;
    if (cli_grow((void **)&s->bad_refs, &w->bad_capacity, s->bad_ref_count, sizeof *s->bad_refs) != 0) {
        w->failed = 1;
        return;
    }
    cli_bad_ref *b = &s->bad_refs[s->bad_ref_count++];
    b->tensor = t->name;
    b->status = status;
    b->message = last_error_copy();
    if (!b->message)
        w->failed = 1;
}

static void visit_external(void *ctx, void *msg)
{
    walk_state *w = ctx;
    if (w->failed || !cli_is(msg, &onnxio_desc_TensorProto))
        return;
    const onnxio_TensorProto *t = msg;
    if (!onnxio_tensor_is_external(t))
        return;
    cli_summary *s = w->s;
    s->external_tensors++;
    onnxio_external_ref ref;
    onnxio_status st = onnxio_external_ref_parse(t, &ref);
    if (st != ONNXIO_OK) {
        /* One bad tensor does not make the summary fail: it is listed with
         * the library's reason. */
        add_bad_ref(w, t, st);
        return;
    }
    onnxio_string location = {ref.location, ref.location_size};
    int added;
    cli_strmap_entry *e = cli_strmap_upsert(&s->ext_index, location, empty_string, s->ext_count, &added);
    if (!e) {
        w->failed = 1;
        return;
    }
    if (added) {
        if (cli_grow((void **)&s->ext, &w->ext_capacity, s->ext_count, sizeof *s->ext) != 0) {
            w->failed = 1;
            return;
        }
        cli_external_file *f = &s->ext[s->ext_count++];
        memset(f, 0, sizeof *f);
        f->location = location;
        if ((w->archive ? find_entry(f, w->archive) : open_location(f, w->model_path)) != 0) {
            w->failed = 1;
            return;
        }
    }
    cli_external_file *f = &s->ext[e->value];
    f->tensors++;
    f->bytes = add_sat(f->bytes, ref_bytes(t, &ref, f));
    uint64_t end = add_sat(ref.offset, ref.has_length ? ref.length : 0);
    if (end > f->needed_bytes)
        f->needed_bytes = end;
}

static void visit_graph_parts(void *ctx, void *msg)
{
    walk_state *w = ctx;
    if (cli_is(msg, &onnxio_desc_GraphProto))
        w->graphs++;
    else if (cli_is(msg, &onnxio_desc_NodeProto))
        w->nodes++;
}

/* Bytes of one tensor's payload: inline bytes, or for an external tensor its
 * length (when missing: the rest of the file after its offset, if the file
 * exists; 0 for an invalid reference). Valid once the external data are
 * summarized. */
static uint64_t tensor_bytes(const cli_summary *s, const onnxio_TensorProto *t)
{
    if (!onnxio_tensor_is_external(t))
        return cli_tensor_inline_bytes(t);
    onnxio_external_ref ref;
    if (onnxio_external_ref_parse(t, &ref) != ONNXIO_OK)
        return 0;
    onnxio_string location = {ref.location, ref.location_size};
    const cli_strmap_entry *e = cli_strmap_find(&s->ext_index, location, empty_string);
    return ref_bytes(t, &ref, e ? &s->ext[e->value] : NULL);
}

static int cmp_ops(const void *pa, const void *pb)
{
    const cli_op_count *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    int c = cli_string_cmp(a->op_type, b->op_type);
    return c ? c : cli_string_cmp(a->domain, b->domain);
}

static int cmp_sizes(const void *pa, const void *pb)
{
    const cli_tensor_size *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

static int count_ops(const onnxio_GraphProto *g, cli_summary *s)
{
    cli_strmap map;
    cli_strmap_init(&map);
    s->node_count = g->node.size;
    s->ops = calloc(g->node.size ? g->node.size : 1, sizeof *s->ops);
    if (!s->ops)
        return -1;
    for (size_t i = 0; i < g->node.size; i++) {
        const onnxio_NodeProto *n = g->node.data[i];
        onnxio_string domain = n->domain;
        if (onnxio_domain_is_default(domain.data, domain.size))
            domain = empty_string;
        int added;
        cli_strmap_entry *e = cli_strmap_upsert(&map, domain, n->op_type, s->op_count, &added);
        if (!e) {
            cli_strmap_free(&map);
            return -1;
        }
        if (added) {
            s->ops[s->op_count].domain = domain;
            s->ops[s->op_count].op_type = n->op_type;
            s->op_count++;
        }
        s->ops[e->value].count++;
    }
    cli_strmap_free(&map);
    qsort(s->ops, s->op_count, sizeof *s->ops, cmp_ops);
    return 0;
}

static int size_initializers(const onnxio_GraphProto *g, cli_summary *s)
{
    size_t n = g->initializer.size;
    s->init_count = n;
    cli_tensor_size *all = calloc(n ? n : 1, sizeof *all);
    if (!all)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const onnxio_TensorProto *t = g->initializer.data[i];
        all[i].name = t->name;
        all[i].data_type = t->data_type;
        all[i].dims = &t->dims;
        all[i].bytes = tensor_bytes(s, t);
        all[i].external = onnxio_tensor_is_external(t);
        all[i].order = i;
        s->init_bytes += all[i].bytes;
        if (!cli_strmap_upsert(&s->init_names, t->name, empty_string, 0, NULL)) {
            free(all);
            return -1;
        }
    }
    qsort(all, n, sizeof *all, cmp_sizes);
    s->largest_count = n < CLI_LARGEST_SHOWN ? n : CLI_LARGEST_SHOWN;
    s->largest = all;
    return 0;
}

/* calloc for `n` elements (one when n is 0, so that NULL means failure). */
static void *alloc_array(size_t n, size_t elem)
{
    return calloc(n ? n : 1, elem);
}

static int summarize_header(const onnxio_ModelProto *m, cli_summary *s)
{
    s->ir_version = m->ir_version;
    s->producer_name = m->producer_name;
    s->producer_version = m->producer_version;
    s->domain = m->domain;
    s->has_model_version = onnxio_has(m, ONNXIO_FIELD_ModelProto_model_version);
    s->model_version = m->model_version;
    s->training_info_count = m->training_info.size;
    s->opsets = alloc_array(m->opset_import.size, sizeof *s->opsets);
    s->metadata = alloc_array(m->metadata_props.size, sizeof *s->metadata);
    s->functions = alloc_array(m->functions.size, sizeof *s->functions);
    if (!s->opsets || !s->metadata || !s->functions)
        return -1;
    for (size_t i = 0; i < m->opset_import.size; i++) {
        const onnxio_OperatorSetIdProto *o = m->opset_import.data[i];
        s->opsets[i] = (cli_opset){o->domain, o->version};
    }
    s->opset_count = m->opset_import.size;
    for (size_t i = 0; i < m->metadata_props.size; i++) {
        const onnxio_StringStringEntryProto *e = m->metadata_props.data[i];
        s->metadata[i] = (cli_key_value){e->key, e->value};
    }
    s->metadata_count = m->metadata_props.size;
    for (size_t i = 0; i < m->functions.size; i++) {
        const onnxio_FunctionProto *f = m->functions.data[i];
        s->functions[i] = (cli_function){f->domain, f->name, f->overload, f->node.size};
    }
    s->function_count = m->functions.size;
    return 0;
}

static void put_dtype(FILE *out, int32_t data_type)
{
    char buf[32];
    fputs(cli_dtype_name(data_type, buf, sizeof buf), out);
}

/* The text of a type (cli_value.type_text). The depth is bounded by the
 * parser's nesting limit, so the recursion is too. */
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
        cli_put_escaped(out, tp->opaque_type->domain);
        if (tp->opaque_type->domain.size)
            fputc('.', out);
        cli_put_escaped(out, tp->opaque_type->name);
        fputc(')', out);
    } else {
        fputc('?', out);
    }
}

static int summarize_value(const onnxio_ValueInfoProto *vi, const cli_summary *s, cli_value *v)
{
    static const onnxio_string empty = {"", 0};
    const onnxio_TypeProto *tp = vi->type;
    v->name = vi->name;
    v->initializer = cli_strmap_find(&s->init_names, vi->name, empty) != NULL;
    FILE *mem = cli_memstream_open(&v->type_text, &v->type_text_size);
    if (!mem)
        return -1;
    put_type(mem, tp);
    if (cli_memstream_close(mem, &v->type_text, &v->type_text_size) != 0)
        return -1;

    /* The element type and shape of a tensor or sparse tensor type. */
    const onnxio_TensorShapeProto *shape = NULL;
    if (tp && tp->tensor_type) {
        v->is_tensor = 1;
        v->elem_type = tp->tensor_type->elem_type;
        shape = tp->tensor_type->shape;
    } else if (tp && tp->sparse_tensor_type) {
        v->is_tensor = 1;
        v->elem_type = tp->sparse_tensor_type->elem_type;
        shape = tp->sparse_tensor_type->shape;
    }
    v->sparse = v->is_tensor && tp->sparse_tensor_type;
    if (!shape)
        return 0;
    v->has_shape = 1;
    v->rank = shape->dim.size;
    v->dims = alloc_array(v->rank, sizeof *v->dims);
    if (!v->dims)
        return -1;
    for (size_t i = 0; i < v->rank; i++) {
        const onnxio_TensorShapeProto_Dimension *d = shape->dim.data[i];
        if (onnxio_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_value))
            v->dims[i] = (cli_dim){CLI_DIM_VALUE, d->dim_value, empty};
        else if (onnxio_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_param))
            v->dims[i] = (cli_dim){CLI_DIM_PARAM, 0, d->dim_param};
        else
            v->dims[i] = (cli_dim){CLI_DIM_UNKNOWN, 0, empty};
    }
    return 0;
}

static int summarize_values(const onnxio_ValueInfoProto_list *list, const cli_summary *s, cli_value **out,
                            size_t *count)
{
    *out = alloc_array(list->size, sizeof **out);
    if (!*out)
        return -1;
    for (size_t i = 0; i < list->size; i++) {
        /* Counted first, so that summary_free frees what a failure left. */
        *count = i + 1;
        if (summarize_value(list->data[i], s, &(*out)[i]) != 0)
            return -1;
    }
    return 0;
}

static int summarize_sparse(const onnxio_GraphProto *g, cli_summary *s)
{
    s->sparse = alloc_array(g->sparse_initializer.size, sizeof *s->sparse);
    if (!s->sparse)
        return -1;
    for (size_t i = 0; i < g->sparse_initializer.size; i++) {
        const onnxio_SparseTensorProto *sp = g->sparse_initializer.data[i];
        cli_sparse *c = &s->sparse[i];
        c->dims = &sp->dims;
        if (sp->values) {
            c->has_values = 1;
            c->name = sp->values->name;
            c->data_type = sp->values->data_type;
            c->values_dim0 = sp->values->dims.size ? sp->values->dims.data[0] : 0;
            c->bytes += tensor_bytes(s, sp->values);
        }
        if (sp->indices)
            c->bytes += tensor_bytes(s, sp->indices);
    }
    s->sparse_count = g->sparse_initializer.size;
    return 0;
}

static const char *method_name(uint16_t method)
{
    return method == ONNXIO_ARCHIVE_STORED ? "stored" : method == ONNXIO_ARCHIVE_DEFLATED ? "deflate" : "other";
}

static int summarize_archive(const onnxio_archive *a, cli_summary *s)
{
    size_t n = onnxio_archive_entry_count(a);
    s->entries = alloc_array(n, sizeof *s->entries);
    if (!s->entries)
        return -1;
    s->entry_count = n;
    for (size_t i = 0; i < n; i++) {
        const onnxio_archive_entry *e = onnxio_archive_entry_at(a, i);
        cli_archive_entry *c = &s->entries[i];
        c->entry = e;
        c->method = method_name(e->method);
        c->alignment = cli_offset_alignment(e->data_offset, CLI_ARCHIVE_MAX_SHOWN_ALIGNMENT);
        c->model = onnxio_archive_entry_is_model(e);
        s->entry_bytes += e->size;
        s->entry_compressed_bytes += e->compressed_size;
        if (c->model)
            continue;
        /* Borrowed by a no_copy load with the default options (the
         * library's rule). */
        c->zero_copy = onnxio_archive_entry_borrowable(e, 0) != 0;
        s->tensor_entries++;
        s->zero_copy_entries += c->zero_copy;
    }
    return 0;
}

int cli_summarize(onnxio_ModelProto *model, const char *model_path, cli_summary *s)
{
    return cli_summarize_archive(model, model_path, NULL, s);
}

int cli_summarize_archive(onnxio_ModelProto *model, const char *model_path, const onnxio_archive *archive,
                          cli_summary *s)
{
    memset(s, 0, sizeof *s);
    s->path = model_path;
    s->in_archive = archive != NULL;
    cli_strmap_init(&s->init_names);
    cli_strmap_init(&s->ext_index);
    struct stat st;
    if (stat(model_path, &st) == 0)
        s->file_size = (uint64_t)st.st_size;

    walk_state w = {.s = s, .model_path = model_path, .archive = archive};
    cli_walk(model, visit_external, &w);
    if (w.failed)
        return -1;
    for (size_t i = 0; i < s->ext_count; i++)
        s->ext[i].too_short = s->ext[i].exists && s->ext[i].file_size < s->ext[i].needed_bytes;

    if (summarize_header(model, s) != 0 || (archive && summarize_archive(archive, s) != 0))
        return -1;

    const onnxio_GraphProto *g = model->graph;
    if (!g)
        return 0;
    s->has_graph = 1;
    s->graph_name = g->name;
    cli_walk(model->graph, visit_graph_parts, &w);
    s->subgraph_count = w.graphs - 1;
    s->subgraph_node_count = w.nodes - g->node.size;
    /* Initializers first: inputs and outputs are marked by their names. */
    if (count_ops(g, s) != 0 || size_initializers(g, s) != 0 || summarize_sparse(g, s) != 0 ||
        summarize_values(&g->input, s, &s->inputs, &s->input_count) != 0 ||
        summarize_values(&g->output, s, &s->outputs, &s->output_count) != 0)
        return -1;
    return 0;
}

static void free_values(cli_value *v, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        free(v[i].type_text);
        free(v[i].dims);
    }
    free(v);
}

void cli_summary_free(cli_summary *s)
{
    free(s->opsets);
    free(s->metadata);
    free_values(s->inputs, s->input_count);
    free_values(s->outputs, s->output_count);
    free(s->ops);
    free(s->largest);
    free(s->sparse);
    for (size_t i = 0; i < s->ext_count; i++)
        free(s->ext[i].refused);
    free(s->ext);
    cli_strmap_free(&s->ext_index);
    for (size_t i = 0; i < s->bad_ref_count; i++)
        free(s->bad_refs[i].message);
    free(s->bad_refs);
    free(s->functions);
    free(s->entries);
    cli_strmap_free(&s->init_names);
    memset(s, 0, sizeof *s);
}
