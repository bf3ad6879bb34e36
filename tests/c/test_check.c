/* onnxio_check_model's contract: every problem reported through the
 * callback with its rule and place, the count, a callback that stops the
 * check, the arguments it refuses, external data keys checked without a
 * base directory. tests/python/test_check.py checks the rules themselves
 * against onnx.checker, through `onnxio check`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxio/onnxio.h"
#include "testutil.h"

/* A model in protobuf text format, parsed into `arena`. */
static onnxio_ModelProto *model_from_text(onnxio_arena *arena, const char *text)
{
    onnxio_text_options o = ONNXIO_TEXT_OPTIONS_INIT;
    o.style = ONNXIO_TEXT_PROTO;
    void *m = NULL;
    CHECK_STATUS(onnxio_text_parse(&onnxio_desc_ModelProto, text, strlen(text), &o, arena, &m), ONNXIO_OK);
    return m;
}

static const char good[] = "ir_version: 8\n"
                           "opset_import { domain: \"\" version: 17 }\n"
                           "graph {\n"
                           "  name: \"g\"\n"
                           "  input { name: \"x\" }\n"
                           "  output { name: \"y\" }\n"
                           "  node { input: \"x\" output: \"t\" op_type: \"Relu\" }\n"
                           "  node { input: \"t\" input: \"\" output: \"y\" op_type: \"Relu\" }\n"
                           "}\n";

/* Node 1 reads z, defined nowhere, and writes t, which node 0 wrote. */
static const char two_problems[] = "ir_version: 8\n"
                                   "opset_import { domain: \"\" version: 17 }\n"
                                   "graph {\n"
                                   "  name: \"g\"\n"
                                   "  input { name: \"x\" }\n"
                                   "  output { name: \"y\" }\n"
                                   "  node { input: \"x\" output: \"t\" op_type: \"Relu\" }\n"
                                   "  node { input: \"z\" output: \"t\" op_type: \"Relu\" name: \"second\" }\n"
                                   "  node { input: \"t\" output: \"y\" op_type: \"Relu\" }\n"
                                   "}\n";

typedef struct seen {
    int count, stop_after;
    onnxio_check_rule rule[4];
    int64_t node_index[4];
    char graph[4][32], node[4][32], tensor[4][32];
} seen;

static int collect(void *user, const onnxio_check_problem *p)
{
    seen *s = user;
    if (s->count < 4) {
        int i = s->count;
        s->rule[i] = p->rule;
        s->node_index[i] = p->node_index;
        snprintf(s->graph[i], sizeof s->graph[i], "%s", p->graph);
        snprintf(s->node[i], sizeof s->node[i], "%s", p->node ? p->node : "(none)");
        snprintf(s->tensor[i], sizeof s->tensor[i], "%s", p->tensor ? p->tensor : "(none)");
        CHECK(p->message && p->message[0]);
        CHECK_EQ_INT(p->status, ONNXIO_OK);
    }
    s->count++;
    return s->stop_after && s->count >= s->stop_after;
}

static void problems_and_places(void)
{
    tu_begin("check: every problem through the callback, with its rule and place; a good model has none");
    onnxio_arena *a = onnxio_arena_new();
    uint64_t n = 99;
    onnxio_ModelProto *m = model_from_text(a, good);
    if (m) {
        CHECK_STATUS(onnxio_check_model(m, NULL, NULL, NULL, NULL, &n), ONNXIO_OK);
        CHECK_EQ_U64(n, 0);
    }
    m = model_from_text(a, two_problems);
    if (m) {
        seen s = {0};
        CHECK_STATUS(onnxio_check_model(m, NULL, NULL, collect, &s, &n), ONNXIO_OK);
        CHECK_EQ_U64(n, 2);
        CHECK_EQ_INT(s.count, 2);
        CHECK_EQ_INT(s.rule[0], ONNXIO_CHECK_UNDEFINED);
        CHECK_STR(s.graph[0], "graph");
        CHECK_EQ_INT(s.node_index[0], 1);
        CHECK_STR(s.node[0], "second");
        CHECK_STR(s.tensor[0], "z");
        CHECK_EQ_INT(s.rule[1], ONNXIO_CHECK_REDEFINED);
        CHECK_STR(s.tensor[1], "t");
        /* without a callback, the same count */
        CHECK_STATUS(onnxio_check_model(m, NULL, NULL, NULL, NULL, &n), ONNXIO_OK);
        CHECK_EQ_U64(n, 2);
    }
    CHECK_STR(onnxio_check_rule_name(ONNXIO_CHECK_UNDEFINED), "undefined");
    CHECK_STR(onnxio_check_rule_name(ONNXIO_CHECK_EXTERNAL_DATA), "external-data");
    CHECK_STR(onnxio_check_rule_name((onnxio_check_rule)999), "unknown");
    onnxio_arena_unref(a);
    tu_end();
}

static void stops_and_refusals(void)
{
    tu_begin("check: a callback that returns non-zero stops it (ERR_CANCELLED); a NULL model is refused");
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = model_from_text(a, two_problems);
    uint64_t n = 0;
    if (m) {
        seen s = {.stop_after = 1};
        CHECK_STATUS(onnxio_check_model(m, NULL, NULL, collect, &s, &n), ONNXIO_ERR_CANCELLED);
        CHECK_EQ_INT(s.count, 1);
        CHECK_EQ_U64(n, 1);
        /* an option struct larger than the library's, with a member it
         * does not know set, is refused ("Options" in onnxio.h) */
        struct {
            onnxio_check_options o;
            uint64_t unknown;
        } big = {{.struct_size = sizeof big}, 1};
        CHECK_STATUS(onnxio_check_model(m, NULL, &big.o, NULL, NULL, &n), ONNXIO_ERR_INVALID_ARGUMENT);
    }
    CHECK_STATUS(onnxio_check_model(NULL, NULL, NULL, NULL, NULL, &n), ONNXIO_ERR_INVALID_ARGUMENT);
    onnxio_arena_unref(a);
    tu_end();
}

static onnxio_status first_status;

static int first(void *user, const onnxio_check_problem *p)
{
    (void)user;
    if (!first_status) first_status = p->status;
    CHECK_EQ_INT(p->rule, ONNXIO_CHECK_EXTERNAL_DATA);
    CHECK_STR(p->tensor, "w");
    return 0;
}

static void external_keys_without_a_directory(void)
{
    tu_begin("check: external data keys are checked without a base directory (a '..' location)");
    static const char text[] = "ir_version: 8\n"
                               "opset_import { domain: \"\" version: 17 }\n"
                               "graph {\n"
                               "  name: \"g\"\n"
                               "  output { name: \"w\" }\n"
                               "  initializer { name: \"w\" data_type: 1 dims: 2 data_location: EXTERNAL\n"
                               "    external_data { key: \"location\" value: \"../w.bin\" } }\n"
                               "}\n";
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = model_from_text(a, text);
    uint64_t n = 0;
    if (m) {
        first_status = ONNXIO_OK;
        CHECK_STATUS(onnxio_check_model(m, NULL, NULL, first, NULL, &n), ONNXIO_OK);
        CHECK_EQ_U64(n, 1);
        CHECK_EQ_INT(first_status, ONNXIO_ERR_PATH_PARENT);
    }
    onnxio_arena_unref(a);
    tu_end();
}

int main(void)
{
    problems_and_places();
    stops_and_refusals();
    external_keys_without_a_directory();
    return tu_finish();
}
