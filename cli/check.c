/* onnxio check: the library's structural check of a model
 * (onnxio_check_model), every problem listed, as text or one JSON object. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "json.h"

static int run_check(int argc, char **argv);

const cli_verb cli_verb_check = {
    "check",
    "Check a model's structure: names, graph order, tensors, attributes, external data.",
    "onnxio check MODEL [--json] [--no-data] [--max-expansion N]",
    "Checks what onnx.checker.check_model checks without the operator\n"
    "schemas and without shape inference, and lists every problem found, not\n"
    "only the first: ir_version and opset_import (present, no domain twice,\n"
    "every node's domain imported, in functions too); every node input\n"
    "defined before the node (graph inputs, initializers, earlier node\n"
    "outputs, and in a subgraph those of the graphs around it; an empty name\n"
    "is an absent optional input); every name defined once; initializer and\n"
    "attribute tensors: data_type, one data field, as many values or raw_data\n"
    "bytes as data_type and dims need; attribute values in the field their\n"
    "type names; external data: the keys, and the file (or .onnxz entry)\n"
    "opened with the checks of a load, the range inside it, and the SHA-1 of\n"
    "a \"checksum\" key. Payloads are not read (only their sizes), except data\n"
    "files whose checksum is verified.\n"
    "\n"
    "Each problem is one line: where (the graph: \"graph\", a subgraph as\n"
    "\"graph/node[I]:ATTR\", a function as \"function[DOMAIN:NAME]\", \"model\"\n"
    "for the model's own fields; the node's index and name; the attribute),\n"
    "the rule (ir-version, opset, name, undefined, redefined, node, tensor,\n"
    "attribute, external-data, checksum, function, graph), and what is wrong.\n"
    "The last line counts them.\n"
    "\n"
    "Exit status: 0 when the model has no problem, 1 when it has any (or\n"
    "cannot be read), 2 on bad usage.\n"
    "\n"
    "options:\n"
    "  --json             print one JSON object: \"file\", \"ok\", \"problem_count\"\n"
    "                     and \"problems\", each with \"rule\", \"status\" (the\n"
    "                     load's status for external data, else null), \"graph\",\n"
    "                     \"node_index\", \"node\", \"tensor\", \"attribute\" (null\n"
    "                     when none) and \"message\"\n"
    "  --no-data          read no tensor data: \"checksum\" keys and block digests\n"
    "                     are parsed, not verified against the files\n"
    "  --max-expansion N  refuse to load MODEL when its structure would take more\n"
    "                     than N times its size in memory (0: the default, " CLI_STR(ONNXIO_DEFAULT_MAX_EXPANSION) ")\n"
    "  --help             show this help\n",
    run_check,
    NULL,
};

typedef struct check_out {
    cli_json *json; /* NULL: text */
} check_out;

static void put_c(const char *s)
{
    onnxio_string v = {s, strlen(s)};
    cli_put_escaped(stdout, v);
}

static void json_opt(cli_json *j, const char *key, const char *value)
{
    cli_json_key(j, key);
    if (value)
        cli_json_cstring(j, value);
    else
        cli_json_null(j);
}

static int on_problem(void *user, const onnxio_check_problem *p)
{
    check_out *o = user;
    if (o->json) {
        cli_json *j = o->json;
        cli_json_begin_object(j);
        cli_json_key(j, "rule");
        cli_json_cstring(j, onnxio_check_rule_name(p->rule));
        json_opt(j, "status", p->status ? onnxio_status_name(p->status) : NULL);
        cli_json_key(j, "graph");
        cli_json_cstring(j, p->graph[0] ? p->graph : "model");
        cli_json_key(j, "node_index");
        if (p->node_index >= 0)
            cli_json_int(j, p->node_index);
        else
            cli_json_null(j);
        json_opt(j, "node", p->node);
        json_opt(j, "tensor", p->tensor);
        json_opt(j, "attribute", p->attribute);
        cli_json_key(j, "message");
        cli_json_cstring(j, p->message);
        cli_json_end_object(j);
        return 0;
    }
    put_c(p->graph[0] ? p->graph : "model");
    if (p->node_index >= 0) {
        printf(": node %" PRId64, p->node_index);
        if (p->node) {
            fputs(" '", stdout);
            put_c(p->node);
            fputc('\'', stdout);
        }
    }
    if (p->attribute) {
        fputs(": attribute '", stdout);
        put_c(p->attribute);
        fputc('\'', stdout);
    }
    printf(": %s: ", onnxio_check_rule_name(p->rule));
    put_c(p->message);
    fputc('\n', stdout);
    return 0;
}

static int run_check(int argc, char **argv)
{
    int json = 0, no_data = 0;
    const char *expansion_text = NULL;
    const cli_option opts[] = {
        {"json", NULL, &json}, {"no-data", NULL, &no_data}, {"max-expansion", &expansion_text, NULL}};
    char *pos[1];
    size_t npos;
    int rc = cli_parse_args(&cli_verb_check, argc, argv, opts, sizeof opts / sizeof opts[0], pos, 1, 1, &npos);
    if (rc >= 0) return rc;
    const char *path = pos[0];
    uint64_t max_expansion = 0;
    if ((rc = cli_parse_max_expansion(&cli_verb_check, expansion_text, &max_expansion)) >= 0) return rc;

    /* Structure only: external data stays external for the check to
     * examine. */
    onnxio_arena *arena;
    onnxio_ModelProto *model;
    onnxio_archive *archive;
    if ((rc = cli_load_structure("check", path, max_expansion, &arena, &model, &archive)) != CLI_EXIT_OK) return rc;
    char *dir = archive ? NULL : cli_model_dir(path, NULL);
    if (!archive && !dir) {
        onnxio_arena_unref(arena);
        return cli_fail_msg("check", path, "out of memory");
    }
    onnxio_check_options co = ONNXIO_CHECK_OPTIONS_INIT;
    co.verify_checksum = !no_data;
    co.verify_digests = !no_data;
    co.model_path = path;
    co.archive = archive;

    cli_json j;
    check_out out = {NULL};
    if (json) {
        cli_json_init(&j, stdout);
        out.json = &j;
        cli_json_begin_object(&j);
        cli_json_key(&j, "file");
        cli_json_cstring(&j, path);
        cli_json_key(&j, "problems");
        cli_json_begin_array(&j);
    }
    uint64_t problems = 0;
    onnxio_status s = onnxio_check_model(model, dir, &co, on_problem, &out, &problems);
    if (json) {
        cli_json_end_array(&j);
        cli_json_key(&j, "problem_count");
        cli_json_uint(&j, problems);
        cli_json_key(&j, "ok");
        cli_json_bool(&j, s == ONNXIO_OK && problems == 0);
        cli_json_end_object(&j);
    } else if (s == ONNXIO_OK) {
        if (problems)
            printf("%" PRIu64 " problem%s\n", problems, problems == 1 ? "" : "s");
        else
            printf("ok\n");
    }
    free(dir);
    onnxio_arena_unref(arena);
    onnxio_archive_close(archive);
    if (s) return cli_fail("check", path);
    return cli_finish_stdout("check", problems ? CLI_EXIT_FAILURE : CLI_EXIT_OK);
}
