/* ONNX's textual syntax (onnxio_text_parse with ONNXIO_TEXT_ONNX): a model
 * read to the bytes onnx.parser gives (captured from onnx 1.23), errors at
 * onnx.parser's line and column with its words, what onnx.parser throws on,
 * text that is not UTF-8, the first NUL ending the text, the depth and
 * expansion limits, the errors onnx.parser ignores (and that they cost no
 * line count), and the styles and types that are refused.
 * tests/python/test_onnxtxt.py compares with the onnx package itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxio/onnxio.h"
#include "testutil.h"

static onnxio_status parse_as(const onnxio_message_desc *desc, const char *text, size_t size, int max_depth,
                              uint64_t max_expansion, onnxio_arena *a, void **out)
{
    onnxio_text_options o = ONNXIO_TEXT_OPTIONS_INIT;
    o.style = ONNXIO_TEXT_ONNX;
    o.max_depth = max_depth;
    o.max_expansion = max_expansion;
    return onnxio_text_parse(desc, text, size, &o, a, out);
}

/* Parses `text` as `desc`; the serialized message, or NULL (*status says
 * why). */
static onnxio_buffer *bytes_of(const onnxio_message_desc *desc, const char *text, size_t size, onnxio_status *status)
{
    onnxio_arena *a = onnxio_arena_new();
    void *m = NULL;
    onnxio_buffer *b = NULL;
    *status = parse_as(desc, text, size, 0, 0, a, &m);
    if (!*status) *status = onnxio_serialize(m, &b);
    onnxio_arena_unref(a);
    return b;
}

static void check_bytes_hex(const onnxio_message_desc *desc, const char *text, const char *want_hex)
{
    onnxio_status s;
    onnxio_buffer *b = bytes_of(desc, text, strlen(text), &s);
    size_t n;
    uint8_t *want = tu_unhex(want_hex, &n);
    CHECK_MSG(s == ONNXIO_OK, "%s: %s", text, onnxio_last_error());
    if (b) CHECK_BYTES(onnxio_buffer_data(b), onnxio_buffer_size(b), want, n);
    onnxio_buffer_unref(b);
    free(want);
}

/* `size` bytes of `text` fail with `status` and a message that holds
 * `words`. */
static void check_error_n(const onnxio_message_desc *desc, const char *text, size_t size, onnxio_status status,
                          const char *words)
{
    onnxio_arena *a = onnxio_arena_new();
    void *m = (void *)1;
    onnxio_status s = parse_as(desc, text, size, 0, 0, a, &m);
    CHECK_MSG(s == status, "%.60s: %s, want %s (%s)", text, onnxio_status_name(s), onnxio_status_name(status),
              onnxio_last_error());
    CHECK(m == NULL);
    CHECK_MSG(strstr(onnxio_last_error(), words) != NULL, "%.60s: \"%s\" lacks \"%s\"", text, onnxio_last_error(),
              words);
    onnxio_arena_unref(a);
}

static void check_error(const onnxio_message_desc *desc, const char *text, onnxio_status status, const char *words)
{
    check_error_n(desc, text, strlen(text), status, words);
}

static void model_read(void)
{
    tu_begin("onnx text: a model (header, typed inputs, initializers, value_info, comment, node name, domain, "
             "empty input, attributes) serializes as onnx.parser's");
    /* onnx.parser.parse_model(text).SerializeToString(), onnx 1.23.2 */
    check_bytes_hex(&onnxio_desc_ModelProto,
                    "<ir_version: 8, opset_import: [\"\" : 18], producer_name: \"p\\\\\\\"q\">\n"
                    "agraph (float[N, 2] X, float[2] W = {0.5, -inf}) => (float[N, 2] Y)\n"
                    "   <int64[1] axes = {1}, float t>\n"
                    "{\n"
                    "   # a comment\n"
                    "   [n1] T = Mul (X, W)\n"
                    "   Y = com.ms.Foo <alpha: float = 2, names = [\"a\", \"b\"]> (T, , axes)\n"
                    "}\n",
                    "08081204705c22713aca010a140a01580a01571201541a026e3122034d756c3a000a3e0a01540a000a04617865"
                    "731201592203466f6f2a0f0a05616c7068611500000040a001012a100a056e616d65734a01614a0162a0010"
                    "83a06636f6d2e6d7312066167726170682a110802100122080000003f000080ff4201572a0d080110073a0101"
                    "4204617865735a140a0158120f0a0d080112090a0312014e0a0208025a0f0a0157120a0a08080112040a0208"
                    "0262140a0159120f0a0d080112090a0312014e0a0208026a0b0a017412060a040801120042040a001012");
    tu_end();

    tu_begin("onnx text: a graph, function or node ends with its syntax; a model reads to the end");
    onnxio_status s;
    onnxio_buffer *a = bytes_of(&onnxio_desc_NodeProto, "y = Add(x, x)", 13, &s);
    onnxio_buffer *b = bytes_of(&onnxio_desc_NodeProto, "y = Add(x, x) %% not read", 25, &s);
    CHECK(a && b);
    if (a && b) CHECK_BYTES(onnxio_buffer_data(b), onnxio_buffer_size(b), onnxio_buffer_data(a), onnxio_buffer_size(a));
    onnxio_buffer_unref(a);
    onnxio_buffer_unref(b);
    check_error(&onnxio_desc_ModelProto, "g () => () {} %%", ONNXIO_ERR_SYNTAX, "line 1 column 15:");
    tu_end();

    tu_begin("onnx text: the text ends at its first NUL, as onnx.parser's C string does");
    static const char nul[] = "g () => () {}\0 not read {{{";
    a = bytes_of(&onnxio_desc_ModelProto, nul, sizeof nul - 1, &s);
    b = bytes_of(&onnxio_desc_ModelProto, "g () => () {}", 13, &s);
    CHECK(a && b);
    if (a && b) CHECK_BYTES(onnxio_buffer_data(a), onnxio_buffer_size(a), onnxio_buffer_data(b), onnxio_buffer_size(b));
    onnxio_buffer_unref(a);
    onnxio_buffer_unref(b);
    static const char cut[] = "g () => (\0) {}";
    check_error_n(&onnxio_desc_ModelProto, cut, sizeof cut - 1, ONNXIO_ERR_SYNTAX,
                "line 1 column 10: Identifier expected but not found.");
    tu_end();
}

static void errors(void)
{
    tu_begin("onnx text: syntax errors at onnx.parser's line and column, in its words");
    static const struct {
        const char *text, *words;
    } cases[] = {
        /* (onnx.parser.parse_model's "[ParseError at position (line: L column: C)]") */
        {"<ir_version: 8>\nagraph (float[N] x) => (float[N] y) {\n  y = Relu(x\n}\n",
         "line 4 column 1: Expected character ) not found."},
        {"agraph (float[N] x) = > (float[N] y) {}", "line 1 column 22: Expected character > not found."},
        {"<producer_name: \"abc>\n g () => () {}", "line 2 column 15: Incomplete string literal."},
        {"g () => () {\n  # a comment\n  y = A <f = infinite> ()\n}",
         "line 3 column 22: Expected character = not found."},
        {"g () => () { y = A <f: int = 1.5> () }",
         "line 1 column 33: Mismatch between expected type INT and specified value's typeFLOAT"},
        {"g () => () {\n y = A <t = float[N] {1}> () }",
         "line 2 column 22: Error parsing TensorProto shape (expected numeric dimension)."},
        {"<ir_version: 8, opset: []> g () => () {}", "line 1 column 23: Unhandled keyword."},
        {"g (float x) => (y) { y = A<f = []>() }",
         "line 1 column 33: Empty list attribute value requires type annotation."},
        {"agraph (", "line 1 column 9: Identifier expected but not found."},
        {"", "line 1 column 1: Identifier expected but not found."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_error(&onnxio_desc_ModelProto, cases[i].text, ONNXIO_ERR_SYNTAX, cases[i].words);
    tu_end();

    tu_begin("onnx text: what onnx.parser's C++ throws on is a syntax error naming the literal");
    check_error(&onnxio_desc_ModelProto, "<ir_version: 99999999999999999999> g () => () {}", ONNXIO_ERR_SYNTAX,
                "line 1 column 14: Integer out of range: 99999999999999999999");
    check_error(&onnxio_desc_ModelProto, "<ir_version: -9223372036854775809> g () => () {}", ONNXIO_ERR_SYNTAX,
                "Integer out of range");
    check_error(&onnxio_desc_NodeProto, "y = A <f = 1e39> ()", ONNXIO_ERR_SYNTAX,
                "line 1 column 12: Failed to parse float from string: 1e39");
    check_error(&onnxio_desc_NodeProto, "y = A <f = - 5> ()", ONNXIO_ERR_SYNTAX, "Invalid integer: - 5");
    check_error(&onnxio_desc_NodeProto, "y = A <f = 1e> ()", ONNXIO_ERR_SYNTAX,
                "Failed to parse float from string: 1e");
    /* the largest int64 and the smallest are read */
    onnxio_status s;
    onnxio_buffer *b = bytes_of(&onnxio_desc_ModelProto,
                                "<ir_version: 9223372036854775807, model_version: -9223372036854775808> g () => () {}",
                                84, &s);
    CHECK_STATUS(s, ONNXIO_OK);
    onnxio_buffer_unref(b);
    tu_end();

    tu_begin("onnx text: text that is not UTF-8 is refused where it stops being UTF-8");
    check_error(&onnxio_desc_ModelProto, "g () => () {}\n  \xff", ONNXIO_ERR_SYNTAX,
                "line 2 column 3: the text is not valid UTF-8");
    check_error(&onnxio_desc_ModelProto, "<doc_string: \"\xc3\x28\"> g () => () {}", ONNXIO_ERR_SYNTAX,
                "line 1 column 15: the text is not valid UTF-8");
    tu_end();

    tu_begin("onnx text: a style or a message type it does not have is refused");
    onnxio_arena *a = onnxio_arena_new();
    void *m = NULL;
    CHECK_STATUS(parse_as(&onnxio_desc_TensorProto, "float[1] t = {1}", 16, 0, 0, a, &m), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(onnxio_last_error(), "ModelProto, GraphProto, FunctionProto or NodeProto") != NULL);
    onnxio_ModelProto *model = onnxio_message_new(a, &onnxio_desc_ModelProto);
    onnxio_text_options o = ONNXIO_TEXT_OPTIONS_INIT;
    o.style = ONNXIO_TEXT_ONNX;
    onnxio_buffer *out = NULL;
    CHECK_STATUS(onnxio_text_format(model, &o, &out), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK(out == NULL && strstr(onnxio_last_error(), "read, not written") != NULL);
    CHECK_STATUS(onnxio_text_print(model, &o, stdout), ONNXIO_ERR_INVALID_ARGUMENT);
    o.style = (onnxio_text_style)4;
    CHECK_STATUS(onnxio_text_parse(&onnxio_desc_ModelProto, "g () => () {}", 13, &o, a, &m),
                 ONNXIO_ERR_INVALID_ARGUMENT);
    onnxio_arena_unref(a);
    tu_end();
}

/* "g (seq(seq(...float...)) x) => () {}" with `n` seq: its innermost
 * shape is at nesting 5 + 2n (model, graph, value info, then a TypeProto
 * and a Sequence per seq, then TypeProto, Tensor, TensorShapeProto). */
static char *nested_seq(size_t n)
{
    size_t size = 16 + 5 * n + n + 16;
    char *t = malloc(size);
    size_t w = (size_t)snprintf(t, size, "g (");
    for (size_t i = 0; i < n; i++) w += (size_t)snprintf(t + w, size - w, "seq(");
    w += (size_t)snprintf(t + w, size - w, "float");
    for (size_t i = 0; i < n; i++) t[w++] = ')';
    snprintf(t + w, size - w, " x) => () {}");
    return t;
}

static void limits(void)
{
    tu_begin("onnx text: max_depth counts the message nesting, as the other styles do");
    onnxio_arena *a = onnxio_arena_new();
    void *m = NULL;
    char *t = nested_seq(10);
    CHECK_STATUS(parse_as(&onnxio_desc_ModelProto, t, strlen(t), 25, 0, a, &m), ONNXIO_OK);
    CHECK_STATUS(parse_as(&onnxio_desc_ModelProto, t, strlen(t), 24, 0, a, &m), ONNXIO_ERR_DEPTH);
    CHECK(m == NULL && strstr(onnxio_last_error(), "nested deeper than 24") != NULL);
    free(t);
    /* far deeper than any limit: refused, the stack never deeper than the limit */
    t = nested_seq(200000);
    CHECK_STATUS(parse_as(&onnxio_desc_ModelProto, t, strlen(t), 0, 0, a, &m), ONNXIO_ERR_DEPTH);
    CHECK_STATUS(parse_as(&onnxio_desc_ModelProto, t, strlen(t), ONNXIO_MAX_DEPTH, 0, a, &m), ONNXIO_ERR_DEPTH);
    free(t);
    /* subgraphs in attributes: graph, node, attribute, graph, ... */
    tu_bytes b = {0};
    for (int i = 0; i < 5000; i++) tu_bytes_put(&b, "g () => () { y = If <then_branch = ", 35);
    tu_bytes_put(&b, "g () => () {}", 13);
    for (int i = 0; i < 5000; i++) tu_bytes_put(&b, "> () }", 6);
    CHECK_STATUS(parse_as(&onnxio_desc_GraphProto, (const char *)b.data, b.size, 0, 0, a, &m), ONNXIO_ERR_DEPTH);
    CHECK_STATUS(parse_as(&onnxio_desc_GraphProto, (const char *)b.data, b.size, ONNXIO_MAX_DEPTH, 0, a, &m),
                 ONNXIO_ERR_DEPTH);
    tu_bytes_free(&b);
    onnxio_arena_unref(a);
    tu_end();

    tu_begin("onnx text: max_expansion bounds the memory the message takes");
    /* 200000 unknown dimensions: "?," makes a Dimension message each */
    tu_bytes_put(&b, "g (float[", 9);
    for (int i = 0; i < 200000; i++) tu_bytes_put(&b, "?,", 2);
    tu_bytes_put(&b, "?] x) => () {}", 14);
    a = onnxio_arena_new();
    m = NULL;
    CHECK_STATUS(parse_as(&onnxio_desc_GraphProto, (const char *)b.data, b.size, 0, 2, a, &m), ONNXIO_ERR_EXPANSION);
    CHECK(m == NULL && strstr(onnxio_last_error(), "max_expansion (2)") != NULL);
    onnxio_arena_unref(a);
    a = onnxio_arena_new();
    CHECK_STATUS(parse_as(&onnxio_desc_GraphProto, (const char *)b.data, b.size, 0, 0, a, &m), ONNXIO_OK);
    if (m) CHECK_EQ_U64(((onnxio_GraphProto *)m)->input.data[0]->type->tensor_type->shape->dim.size, 200001);
    onnxio_arena_unref(a);
    tu_bytes_free(&b);
    tu_end();
}

static void ignored_errors(void)
{
    tu_begin("onnx text: an error in a function attribute's default is ignored, as onnx.parser ignores it");
    onnxio_arena *a = onnxio_arena_new();
    void *m = NULL;
    const char *t = "<domain: \"d\", opset_import: [\"\" : 18]>\nfn <a: int = \"s\", b> (x) => (y) { y = Identity(x) }";
    CHECK_STATUS(parse_as(&onnxio_desc_FunctionProto, t, strlen(t), 0, 0, a, &m), ONNXIO_OK);
    onnxio_FunctionProto *fn = m;
    if (fn) {
        /* as onnx.parser leaves it: the attribute typed by its value */
        CHECK(fn->attribute_proto.size == 1 && fn->attribute.size == 1);
        if (fn->attribute_proto.size == 1) {
            onnxio_AttributeProto *at = fn->attribute_proto.data[0];
            CHECK_EQ_INT(at->type, ONNXIO_AttributeProto_AttributeType_STRING);
            CHECK(at->s.size == 1 && at->s.data[0] == 's');
        }
    }
    tu_end();

    tu_begin("onnx text: ignored errors cost no line count (100000 of them after 32 MiB of comment)");
    tu_bytes b = {0};
    tu_bytes_put(&b, "#", 1);
    char *fill = malloc(1 << 20);
    memset(fill, 'x', 1 << 20);
    for (int i = 0; i < 32; i++) tu_bytes_put(&b, fill, 1 << 20);
    free(fill);
    tu_bytes_put(&b, "\nfn <", 5);
    for (int i = 0; i < 100000; i++) tu_bytes_put(&b, "a: int = \"s\",", 13);
    tu_bytes_put(&b, "b> (x) => (y) { y = Identity(x) }", 33);
    onnxio_arena_unref(a);
    a = onnxio_arena_new();
    /* Counting lines for each error would read 100000 x 32 MiB, hours;
     * the test's timeout fails it. */
    CHECK_STATUS(parse_as(&onnxio_desc_FunctionProto, (const char *)b.data, b.size, 0, 0, a, &m), ONNXIO_OK);
    if (m) CHECK_EQ_U64(((onnxio_FunctionProto *)m)->attribute_proto.size, 100000);
    tu_bytes_free(&b);
    onnxio_arena_unref(a);
    tu_end();
}

static void detect_style(void)
{
    tu_begin("onnx text: onnxio_detect_text_style tells ONNX's textual syntax from JSON and text format");
    static const struct {
        const char *text;
        onnxio_text_style style;
    } cases[] = {
        {"<ir_version: 8> g () => () {}", ONNXIO_TEXT_ONNX},
        {"  \n\t<", ONNXIO_TEXT_ONNX},
        {"agraph (float x) => (y) {}", ONNXIO_TEXT_ONNX},
        {"g=> () {}", ONNXIO_TEXT_ONNX},
        {"y = Relu(x)", ONNXIO_TEXT_ONNX},
        {"# a comment\n# another\n  g_1 # here\n (x) => (y) {}", ONNXIO_TEXT_ONNX},
        {"# a comment\n<", ONNXIO_TEXT_ONNX},
        {"{\"irVersion\": \"8\"}", ONNXIO_TEXT_JSON},
        {"# c\n{", ONNXIO_TEXT_JSON},
        {"ir_version: 8\ngraph { name: \"g\" }", ONNXIO_TEXT_PROTO},
        {"graph {\n}", ONNXIO_TEXT_PROTO},
        {"graph < name: \"g\" >", ONNXIO_TEXT_PROTO},
        {"# only a comment", ONNXIO_TEXT_PROTO},
        {"name", ONNXIO_TEXT_PROTO},
        {"", ONNXIO_TEXT_PROTO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        CHECK_MSG(onnxio_detect_text_style(cases[i].text, strlen(cases[i].text)) == cases[i].style, "\"%s\": %d",
                  cases[i].text, (int)onnxio_detect_text_style(cases[i].text, strlen(cases[i].text)));
    CHECK(onnxio_detect_text_style(NULL, 0) == ONNXIO_TEXT_PROTO);
    /* the error of a binary load names what reads the text */
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = NULL;
    const char *t = "agraph (float x) => (y) { y = Relu(x) }";
    CHECK(onnxio_load_model_from_bytes(t, strlen(t), NULL, NULL, a, &m) != ONNXIO_OK);
    CHECK_MSG(strstr(onnxio_last_error(), "ONNX's textual syntax (onnx.printer), which onnxio_text_parse reads with "
                                          "ONNXIO_TEXT_ONNX") != NULL,
              "%s", onnxio_last_error());
    onnxio_arena_unref(a);
    tu_end();
}

int main(void)
{
    detect_style();
    model_read();
    errors();
    limits();
    ignored_errors();
    return tu_finish();
}
