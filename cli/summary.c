#include "summary.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tensor.h"
#include "walk.h"

static const onnxio_string empty_string = {"", 0};

/* A location is looked at only when it stays under the model's directory
 * by its spelling: relative, no '..' component (the library's own rule for
 * loading; symlinks are not chased here since nothing is read). */
static int location_is_safe(onnxio_string loc)
{
    if (loc.size == 0 || loc.data[0] == '/' || memchr(loc.data, '\0', loc.size))
        return 0;
    size_t start = 0;
    for (size_t i = 0; i <= loc.size; i++) {
        if (i == loc.size || loc.data[i] == '/' || loc.data[i] == '\\') {
            if (i - start == 2 && loc.data[start] == '.' && loc.data[start + 1] == '.')
                return 0;
            start = i + 1;
        }
    }
    return 1;
}

/* In an archive a location names an entry; the same spelling rules apply,
 * since the library refuses unsafe entry names anyway. */
static void find_entry(cli_external_file *f, const onnxio_archive *archive)
{
    f->checked = location_is_safe(f->location);
    if (!f->checked)
        return;
    /* Names from the model need not be NUL-terminated. */
    char *name = malloc(f->location.size + 1);
    if (!name)
        return;
    memcpy(name, f->location.data, f->location.size);
    name[f->location.size] = '\0';
    const onnxio_archive_entry *e = onnxio_archive_find(archive, name);
    free(name);
    if (e) {
        f->exists = 1;
        f->file_size = e->size;
    }
}

static void stat_location(cli_external_file *f, const char *model_path)
{
    f->checked = location_is_safe(f->location);
    if (!f->checked)
        return;
    const char *slash = strrchr(model_path, '/');
    size_t dir_len = slash ? (size_t)(slash - model_path) + 1 : 0;
    char *path = malloc(dir_len + f->location.size + 1);
    if (!path)
        return;
    memcpy(path, model_path, dir_len);
    memcpy(path + dir_len, f->location.data, f->location.size);
    path[dir_len + f->location.size] = '\0';
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        f->exists = 1;
        f->file_size = (uint64_t)st.st_size;
    }
    free(path);
}

typedef struct walk_state {
    cli_summary *s;
    const char *model_path;
    const onnxio_archive *archive; /* NULL: locations are files */
    cli_strmap files; /* location -> index in s->ext */
    size_t ext_capacity;
    uint64_t graphs;
    uint64_t nodes;
    int failed;
} walk_state;

static void visit_external(void *ctx, void *msg)
{
    walk_state *w = ctx;
    if (w->failed || !cli_is(msg, &onnxio_desc_TensorProto))
        return;
    const onnxio_TensorProto *t = msg;
    if (!cli_tensor_is_external(t))
        return;
    cli_summary *s = w->s;
    s->external_tensors++;
    cli_external_ref ref;
    cli_tensor_external_ref(t, &ref);
    if (ref.location.size == 0) {
        s->external_unnamed++;
        return;
    }
    int added;
    cli_strmap_entry *e = cli_strmap_upsert(&w->files, ref.location, empty_string, s->ext_count,
                                            &added);
    if (!e) {
        w->failed = 1;
        return;
    }
    if (added) {
        if (s->ext_count == w->ext_capacity) {
            size_t cap = w->ext_capacity ? w->ext_capacity * 2 : 8;
            cli_external_file *grown = realloc(s->ext, cap * sizeof *grown);
            if (!grown) {
                w->failed = 1;
                return;
            }
            s->ext = grown;
            w->ext_capacity = cap;
        }
        cli_external_file *f = &s->ext[s->ext_count++];
        memset(f, 0, sizeof *f);
        f->location = ref.location;
        if (w->archive)
            find_entry(f, w->archive);
        else
            stat_location(f, w->model_path);
    }
    cli_external_file *f = &s->ext[e->value];
    f->tensors++;
    f->bytes += cli_summary_tensor_bytes(s, t);
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
    if (!cli_tensor_is_external(t))
        return cli_tensor_inline_bytes(t);
    cli_external_ref ref;
    cli_tensor_external_ref(t, &ref);
    if (ref.has_length)
        return ref.length;
    for (size_t i = 0; i < s->ext_count; i++) {
        const cli_external_file *f = &s->ext[i];
        if (f->location.size == ref.location.size &&
            memcmp(f->location.data, ref.location.data, ref.location.size) == 0)
            return f->exists && f->file_size > ref.offset ? f->file_size - ref.offset : 0;
    }
    return 0;
}

static int cmp_ops(const void *pa, const void *pb)
{
    const cli_op_count *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    size_t n = a->op_type.size < b->op_type.size ? a->op_type.size : b->op_type.size;
    int c = memcmp(a->op_type.data, b->op_type.data, n);
    if (c == 0 && a->op_type.size != b->op_type.size)
        c = a->op_type.size < b->op_type.size ? -1 : 1;
    if (c != 0)
        return c;
    n = a->domain.size < b->domain.size ? a->domain.size : b->domain.size;
    c = memcmp(a->domain.data, b->domain.data, n);
    if (c == 0 && a->domain.size != b->domain.size)
        c = a->domain.size < b->domain.size ? -1 : 1;
    return c;
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
        /* "" and "ai.onnx" are the same domain. */
        onnxio_string domain = n->domain;
        if (domain.size == 7 && memcmp(domain.data, "ai.onnx", 7) == 0)
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
        all[i].external = cli_tensor_is_external(t);
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
    struct stat st;
    if (stat(model_path, &st) == 0)
        s->file_size = (uint64_t)st.st_size;

    walk_state w = {.s = s, .model_path = model_path, .archive = archive};
    cli_strmap_init(&w.files);
    cli_walk(model, visit_external, &w);
    cli_strmap_free(&w.files);
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
    free(s->ext);
    cli_strmap_free(&s->init_names);
    memset(s, 0, sizeof *s);
}
