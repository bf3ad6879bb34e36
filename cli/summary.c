#include "summary.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
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
    const char *slash = strrchr(model_path, '/');
    size_t dir_len = !slash ? 0 : slash == model_path ? 1 : (size_t)(slash - model_path);
    char *dir = malloc(dir_len + 2);
    char *loc = malloc(location.size + 1);
    onnxio_status st = ONNXIO_ERR_NO_MEMORY;
    if (dir && loc) {
        if (dir_len)
            memcpy(dir, model_path, dir_len);
        else
            dir[dir_len++] = '.';
        dir[dir_len] = '\0';
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
    b->tensor = t;
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

uint64_t cli_summary_tensor_bytes(const cli_summary *s, const onnxio_TensorProto *t)
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
        all[i].tensor = t;
        all[i].bytes = cli_summary_tensor_bytes(s, t);
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

int cli_summarize(onnxio_ModelProto *model, const char *model_path, cli_summary *s)
{
    return cli_summarize_archive(model, model_path, NULL, s);
}

int cli_summarize_archive(onnxio_ModelProto *model, const char *model_path, const onnxio_archive *archive,
                          cli_summary *s)
{
    memset(s, 0, sizeof *s);
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

    const onnxio_GraphProto *g = model->graph;
    if (!g)
        return 0;
    cli_walk(model->graph, visit_graph_parts, &w);
    s->subgraph_count = w.graphs - 1;
    s->subgraph_node_count = w.nodes - g->node.size;
    if (count_ops(g, s) != 0 || size_initializers(g, s) != 0)
        return -1;
    return 0;
}

void cli_summary_free(cli_summary *s)
{
    free(s->ops);
    free(s->largest);
    for (size_t i = 0; i < s->ext_count; i++)
        free(s->ext[i].refused);
    free(s->ext);
    cli_strmap_free(&s->ext_index);
    for (size_t i = 0; i < s->bad_ref_count; i++)
        free(s->bad_refs[i].message);
    free(s->bad_refs);
    cli_strmap_free(&s->init_names);
    memset(s, 0, sizeof *s);
}
