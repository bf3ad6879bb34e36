/* onnxio extract: a model keeping only the initializers a pattern selects.
 * Reads through the library's tensor slices (onnxio_tensor_file_*): only
 * the payloads of the selected initializers are read. */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "port.h"

static int run_extract(int argc, char **argv);

const cli_verb cli_verb_extract = {
    "extract",
    "Save a model keeping only the initializers that match a pattern.",
    "onnxio extract MODEL OUT --tensors PATTERN[,PATTERN...] [--external-data LOCATION] [--threads N] [--no-fsync]",
    "Saves MODEL (an .onnx file, with or without external data, or an .onnxz\n"
    "archive) as OUT with only the initializers of its main graph whose names\n"
    "match one of the patterns (fnmatch globs: * ? [abc]; comma-separated).\n"
    "Only the payloads of the selected initializers are read.\n"
    "\n"
    "The graph is kept whole (nodes, inputs, outputs, subgraphs, attribute\n"
    "tensors). Each initializer left out becomes a graph input of its data\n"
    "type and shape (unless it is one already), so OUT is a valid model whose\n"
    "missing weights are fed at run time, the way ONNX treats an initializer\n"
    "that is not in the file. A pattern that matches no initializer is an\n"
    "error. OUT is written atomically, as `onnxio convert` writes it: ending in\n"
    "\".onnxz\" as an archive, otherwise inline (or with --external-data).\n"
    "\n"
    "options:\n"
    "  --tensors PATTERNS        the initializers to keep (required)\n"
    "  --external-data LOCATION  put payloads of at least 1024 bytes in the file\n"
    "                            LOCATION next to OUT\n"
    "  --threads N               threads for payload I/O (0: one per core)\n"
    "  --no-fsync                no fsync, for scratch outputs\n"
    "  --help                    show this help\n",
    run_extract,
    NULL,
};

static int matches(const char *patterns, const char *name, unsigned char *used)
{
    int any = 0;
    size_t k = 0;
    for (const char *p = patterns; *p; k++) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char pat[1024];
        if (n < sizeof pat) {
            memcpy(pat, p, n);
            pat[n] = '\0';
            if (cli_fnmatch(pat, name) == 0) {
                any = 1;
                if (used) used[k] = 1;
            }
        }
        p = e ? e + 1 : p + n;
    }
    return any;
}

static int has_input(const onnxio_GraphProto *g, const onnxio_string *name)
{
    for (size_t i = 0; i < g->input.size; i++)
        if (cli_string_cmp(g->input.data[i]->name, *name) == 0) return 1;
    return 0;
}

/* An input named after `t`, of its data type and shape. */
static onnxio_status add_input(onnxio_arena *arena, onnxio_GraphProto *g, const onnxio_TensorProto *t)
{
    onnxio_ValueInfoProto *vi = onnxio_list_add(arena, &g->input, &onnxio_desc_ValueInfoProto);
    onnxio_TypeProto *tp = onnxio_message_new(arena, &onnxio_desc_TypeProto);
    onnxio_TypeProto_Tensor *tt = onnxio_message_new(arena, &onnxio_desc_TypeProto_Tensor);
    onnxio_TensorShapeProto *sh = onnxio_message_new(arena, &onnxio_desc_TensorShapeProto);
    if (!vi || !tp || !tt || !sh) return ONNXIO_ERR_NO_MEMORY;
    if (onnxio_string_set(arena, &vi->name, t->name.data ? t->name.data : "", t->name.size)) return ONNXIO_ERR_NO_MEMORY;
    onnxio_set_has(vi, ONNXIO_FIELD_ValueInfoProto_name);
    vi->type = tp;
    tp->tensor_type = tt;
    onnxio_set_has(tp, ONNXIO_FIELD_TypeProto_tensor_type);
    tt->elem_type = t->data_type;
    onnxio_set_has(tt, ONNXIO_FIELD_TypeProto_Tensor_elem_type);
    tt->shape = sh;
    for (size_t i = 0; i < t->dims.size; i++) {
        onnxio_TensorShapeProto_Dimension *d = onnxio_list_add(arena, &sh->dim, &onnxio_desc_TensorShapeProto_Dimension);
        if (!d) return ONNXIO_ERR_NO_MEMORY;
        d->dim_value = t->dims.data[i];
        onnxio_set_has(d, ONNXIO_FIELD_TensorShapeProto_Dimension_dim_value);
    }
    return ONNXIO_OK;
}

static int run_extract(int argc, char **argv)
{
    const char *patterns = NULL, *location = NULL, *threads_text = NULL;
    int no_fsync = 0;
    const cli_option opts[] = {{"tensors", &patterns, NULL},
                               {"external-data", &location, NULL},
                               {"threads", &threads_text, NULL},
                               {"no-fsync", NULL, &no_fsync}};
    char *pos[2];
    size_t npos;
    int rc = cli_parse_args(&cli_verb_extract, argc, argv, opts, sizeof opts / sizeof opts[0], pos, 2, 2, &npos);
    if (rc >= 0) return rc;
    if (!patterns || !*patterns) return cli_usage_error(&cli_verb_extract, "--tensors PATTERN is required");
    onnxio_slice_options so = ONNXIO_SLICE_OPTIONS_INIT;
    if ((rc = cli_parse_threads(&cli_verb_extract, threads_text, &so.num_threads)) >= 0) return rc;
    const char *model_path = pos[0], *out_path = pos[1];
    size_t npat = 1;
    for (const char *p = patterns; *p; p++) npat += *p == ',';
    unsigned char *used = calloc(npat, 1);
    onnxio_arena *arena = onnxio_arena_new();
    onnxio_tensor_file *f = NULL;
    int status = CLI_EXIT_FAILURE;
    if (!used || !arena) {
        cli_fail_msg("extract", model_path, "out of memory");
        goto done;
    }
    if (cli_file_is_empty(model_path) || onnxio_tensor_file_open(model_path, &so, &f)) {
        cli_fail("extract", model_path);
        goto done;
    }
    /* A copy of the structure that shares inline payloads (spans into the
     * file's mapping, which stays open until the save is done). */
    onnxio_ModelProto *m = onnxio_message_clone(arena, onnxio_tensor_file_model(f));
    if (!m) {
        cli_fail("extract", model_path);
        goto done;
    }
    onnxio_GraphProto *g = m->graph;
    size_t kept = 0;
    for (size_t i = 0; g && i < g->initializer.size; i++) {
        onnxio_TensorProto *t = g->initializer.data[i];
        const char *name = t->name.data ? t->name.data : "";
        if (!matches(patterns, name, used)) {
            if (!has_input(g, &t->name) && add_input(arena, g, t)) {
                cli_fail_msg("extract", model_path, "out of memory");
                goto done;
            }
            continue;
        }
        if (onnxio_tensor_is_external(t)) {
            /* The whole tensor as a view of the file's mapping (one run), so
             * that tensors sharing bytes share them here too and the save's
             * budget counts them once; else through the reads of a slice. */
            size_t rank = t->dims.size;
            onnxio_slice_range *r = malloc((rank ? rank : 1) * sizeof *r);
            if (!r) {
                cli_fail_msg("extract", model_path, "out of memory");
                goto done;
            }
            for (size_t k = 0; k < rank; k++) r[k] = (onnxio_slice_range){0, t->dims.data[k]};
            onnxio_buffer *b = NULL;
            const void *view = NULL;
            uint64_t size = 0;
            onnxio_status s = onnxio_tensor_file_view(f, name, r, rank, &view, &size, &b);
            if (!s && !view) {
                s = onnxio_tensor_file_read(f, name, r, rank, NULL, 0, &b, NULL);
                if (!s) view = onnxio_buffer_data(b), size = onnxio_buffer_size(b);
            }
            free(r);
            if (s) {
                cli_fail("extract", model_path);
                goto done;
            }
            onnxio_span_set(&t->raw_data, (uint8_t *)(uintptr_t)view, (size_t)size, b);
            onnxio_buffer_unref(b);
            onnxio_set_has(t, ONNXIO_FIELD_TensorProto_raw_data);
            onnxio_field_clear(t, &onnxio_desc_TensorProto.fields[ONNXIO_FIELD_TensorProto_external_data]);
            t->data_location = ONNXIO_TensorProto_DataLocation_DEFAULT;
            onnxio_set_has(t, ONNXIO_FIELD_TensorProto_data_location);
        }
        g->initializer.data[kept++] = t;
    }
    if (g) g->initializer.size = kept;
    for (size_t k = 0; k < npat; k++)
        if (!used[k]) {
            const char *p = patterns;
            for (size_t j = 0; j < k; j++) p = strchr(p, ',') + 1;
            const char *e = strchr(p, ',');
            cli_fail_msg("extract", model_path, "pattern '%.*s' matches no initializer of the main graph",
                         (int)(e ? (size_t)(e - p) : strlen(p)), p);
            goto done;
        }
    /* Other tensors still external (attributes, subgraphs) are read whole
     * from beside the model; an archive's cannot be. */
    if (cli_file_is_archive(model_path) != 1) {
        char *dir = cli_model_dir(model_path, NULL);
        onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
        po.num_threads = so.num_threads;
        onnxio_status s = dir ? onnxio_load_external_data(m, dir, &po) : ONNXIO_ERR_NO_MEMORY;
        free(dir);
        if (s) {
            cli_fail("extract", model_path);
            goto done;
        }
    }
    onnxio_serialize_options wo = ONNXIO_SERIALIZE_OPTIONS_INIT;
    wo.num_threads = so.num_threads;
    wo.external_data.location = location;
    if (no_fsync) wo.fsync = ONNXIO_OFF;
    if (cli_save_model(m, out_path, &wo)) {
        cli_fail("extract", out_path);
        goto done;
    }
    status = CLI_EXIT_OK;
done:
    onnxio_arena_unref(arena);
    onnxio_tensor_file_close(f);
    free(used);
    return status;
}
