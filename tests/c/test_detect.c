/* What a load reads a file as, and where it looks for its external data:
 * the extension table (onnxio_file_extension_at, onnxio_path_extension,
 * onnxio_path_is_archive), the rule of content first and name second
 * (onnxio_detect_kind, onnxio_detect_file), the model's directory and a
 * path's file name (onnxio_model_dir, onnxio_path_file_name,
 * onnxio_location_names_file), and file loads of every text format
 * (onnxio_load_model, onnxio_load_file, onnxio_tensor_file_open) against
 * the binary file of the same model. tests/python/test_cli.py and
 * test_text_formats.py compare the text loads with onnx's own parsers. */
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "onnxio/onnxio.h"
#include "testutil.h"

static void extension_table(void)
{
    tu_begin("detect: the extension table, and the extension of a path as os.path.splitext takes it");
    static const struct {
        const char *ext, *format;
        onnxio_format kind;
        onnxio_text_style style;
    } want[] = {
        {".onnx", "protobuf", ONNXIO_FORMAT_PROTOBUF, ONNXIO_TEXT_STR},
        {".pb", "protobuf", ONNXIO_FORMAT_PROTOBUF, ONNXIO_TEXT_STR},
        {".txtpb", "textproto", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_PROTO},
        {".textproto", "textproto", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_PROTO},
        {".prototxt", "textproto", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_PROTO},
        {".pbtxt", "textproto", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_PROTO},
        {".json", "json", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_JSON},
        {".onnxjson", "json", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_JSON},
        {".onnxtxt", "onnxtxt", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_ONNX},
        {".onnxtext", "onnxtxt", ONNXIO_FORMAT_TEXT, ONNXIO_TEXT_ONNX},
        {".onnxz", "onnxz", ONNXIO_FORMAT_ARCHIVE, ONNXIO_TEXT_STR},
    };
    size_t n = sizeof want / sizeof want[0];
    for (size_t i = 0; i < n; i++) {
        const onnxio_file_extension *e = onnxio_file_extension_at(i);
        if (!CHECK_MSG(e != NULL, "row %zu missing", i)) continue;
        CHECK_STR(e->extension, want[i].ext);
        CHECK_STR(e->format, want[i].format);
        CHECK_EQ_INT(e->kind, want[i].kind);
        CHECK_EQ_INT(e->text_style, want[i].style);
        char path[64];
        snprintf(path, sizeof path, "dir.x/model%s", want[i].ext);
        CHECK(onnxio_path_extension(path) == e);
    }
    CHECK(onnxio_file_extension_at(n) == NULL);
    /* os.path.splitext: the last '.' of the file name, not a leading one;
     * compared as written (onnx's registry is a dict). */
    static const char *const none[] = {".json", "..json", "dir/.txtpb", "model", "model.JSON", "model.json/",
                                       "a.json/model", "model.onnx.bak", "", "onnxz"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        CHECK_MSG(onnxio_path_extension(none[i]) == NULL, "'%s' has an extension row", none[i]);
    CHECK(onnxio_path_extension(NULL) == NULL);
    CHECK(onnxio_path_extension(".a.json") == onnxio_file_extension_at(6));
    CHECK(onnxio_path_extension("m.tar.onnxz") == onnxio_file_extension_at(10));
    CHECK(onnxio_path_is_archive("a/b.onnxz") && !onnxio_path_is_archive("a.onnx") && !onnxio_path_is_archive("onnxz"));
    CHECK(!onnxio_path_is_archive("a.onnxz/b") && !onnxio_path_is_archive(NULL));
    tu_end();
}

static void paths(void)
{
    tu_begin("detect: the model's directory, a path's file name, a location naming the model file");
    static const struct {
        const char *path, *base, *dir;
    } cases[] = {
        {"model.onnx", NULL, "."},        {"a/model.onnx", NULL, "a"},   {"/model.onnx", NULL, "/"},
        {"/a/b/model.onnx", NULL, "/a/b"}, {"a//m.onnx", NULL, "a/"},     {"a/", NULL, "a"},
        {"a/model.onnx", "base", "base"},  {"m.onnx", "/x/y/", "/x/y/"}, {NULL, NULL, "."},
        {"", NULL, "."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        size_t n = onnxio_model_dir(cases[i].path, cases[i].base, buf, sizeof buf);
        CHECK_EQ_U64(n, strlen(cases[i].dir));
        CHECK_STR(buf, cases[i].dir);
        /* the length alone, as snprintf gives it */
        CHECK_EQ_U64(onnxio_model_dir(cases[i].path, cases[i].base, NULL, 0), n);
    }
    /* too small: the length, and an empty string */
    char small[4] = "zzz";
    CHECK_EQ_U64(onnxio_model_dir("abcd/m.onnx", NULL, small, sizeof small), 4);
    CHECK_STR(small, "");
    char fits[5];
    CHECK_EQ_U64(onnxio_model_dir("abcd/m.onnx", NULL, fits, sizeof fits), 4);
    CHECK_STR(fits, "abcd");

    CHECK_STR(onnxio_path_file_name("a/b/m.onnx"), "m.onnx");
    CHECK_STR(onnxio_path_file_name("m.onnx"), "m.onnx");
    CHECK_STR(onnxio_path_file_name("/m"), "m");
    CHECK_STR(onnxio_path_file_name("a/"), "");
    CHECK(onnxio_path_file_name(NULL) == NULL);

    CHECK(onnxio_location_names_file("w.bin", 5, "dir/w.bin"));
    CHECK(onnxio_location_names_file("././w.bin", 9, "w.bin"));
    CHECK(onnxio_location_names_file("w.bin-and-more", 5, "/x/w.bin")); /* `size` bytes of it */
    CHECK(!onnxio_location_names_file("w.bin", 5, "dir/w.bin2"));
    CHECK(!onnxio_location_names_file("sub/w.bin", 9, "dir/sub/w.bin")); /* in OUT's directory, not below it */
    CHECK(!onnxio_location_names_file(NULL, 0, "w") && !onnxio_location_names_file("w", 1, NULL));
    tu_end();
}

/* A ModelProto whose first opset_import's domain is 61 letters: its first
 * 64 bytes are printable ("BA\n=aaa..."), which the content rule calls
 * text. */
static onnxio_buffer *printable_binary(void)
{
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = onnxio_message_new(a, &onnxio_desc_ModelProto);
    onnxio_OperatorSetIdProto *op = onnxio_list_add(a, &m->opset_import, &onnxio_desc_OperatorSetIdProto);
    char domain[62];
    memset(domain, 'a', 61);
    domain[61] = '\0';
    tu_set_string(a, op, &op->domain, ONNXIO_FIELD_OperatorSetIdProto_domain, domain);
    op->version = 1;
    onnxio_set_has(op, ONNXIO_FIELD_OperatorSetIdProto_version);
    onnxio_buffer *b = NULL;
    CHECK_STATUS(onnxio_serialize(m, &b), ONNXIO_OK);
    onnxio_arena_unref(a);
    return b;
}

static void kinds(void)
{
    tu_begin("detect: content first (archive, binary, text), the name second (text at once, or binary first)");
    const char *text = "ir_version: 8\ngraph {\n  name: \"g\"\n}\n";
    onnxio_file_kind k = onnxio_detect_kind(text, strlen(text), "m.txtpb");
    CHECK_EQ_INT(k.format, ONNXIO_FORMAT_TEXT);
    CHECK_EQ_INT(k.text_style, ONNXIO_TEXT_PROTO);
    CHECK(k.text_by_name);
    CHECK_EQ_U64(k.size, strlen(text));
    /* the content's style, whichever text format the name names */
    k = onnxio_detect_kind("{\"irVersion\": \"8\"}", 18, "m.txtpb");
    CHECK(k.format == ONNXIO_FORMAT_TEXT && k.text_style == ONNXIO_TEXT_JSON && k.text_by_name);
    k = onnxio_detect_kind("<ir_version: 8> g () => () {}", 29, "dir/m.json");
    CHECK(k.format == ONNXIO_FORMAT_TEXT && k.text_style == ONNXIO_TEXT_ONNX && k.text_by_name);
    /* text under another name: binary first */
    k = onnxio_detect_kind(text, strlen(text), "m.onnx");
    CHECK(k.format == ONNXIO_FORMAT_TEXT && k.text_style == ONNXIO_TEXT_PROTO && !k.text_by_name);
    k = onnxio_detect_kind(text, strlen(text), NULL);
    CHECK(k.format == ONNXIO_FORMAT_TEXT && !k.text_by_name);
    /* binary content is binary under any name */
    const uint8_t model[] = {0x08, 0x08, 0x3a, 0x03, 0x12, 0x01, 'g'};
    k = onnxio_detect_kind(model, sizeof model, "m.json");
    CHECK(k.format == ONNXIO_FORMAT_PROTOBUF && k.text_style == ONNXIO_TEXT_STR && !k.text_by_name);
    /* an archive is one under any name */
    k = onnxio_detect_kind("PK\3\4", 4, "m.txtpb");
    CHECK(k.format == ONNXIO_FORMAT_ARCHIVE && !k.text_by_name);
    uint8_t zeros[22] = {0};
    CHECK_EQ_INT(onnxio_detect_kind(zeros, sizeof zeros, "m.onnx").format, ONNXIO_FORMAT_ARCHIVE);
    CHECK_EQ_INT(onnxio_detect_kind(zeros, 21, "m.onnx").format, ONNXIO_FORMAT_PROTOBUF);
    CHECK_EQ_INT(onnxio_detect_kind(NULL, 0, "m.json").format, ONNXIO_FORMAT_PROTOBUF);
    onnxio_buffer *pb = printable_binary();
    k = onnxio_detect_kind(onnxio_buffer_data(pb), onnxio_buffer_size(pb), "m.onnx");
    CHECK(k.format == ONNXIO_FORMAT_TEXT && !k.text_by_name);

    /* the same from files: the first 4 KiB and the size */
    char *dir = tu_make_temp_dir("detect");
    char *p = tu_path_join(dir, "m.prototxt");
    char big[8192];
    memset(big, '#', sizeof big); /* a comment line past the first 4 KiB */
    big[5000] = '\n';
    memcpy(big + 5001, "{\"a\": 1}", 8);
    tu_write_file(p, big, 5009);
    CHECK_STATUS(onnxio_detect_file(p, &k), ONNXIO_OK);
    /* the style is read from the first 4 KiB only: all comment */
    CHECK(k.format == ONNXIO_FORMAT_TEXT && k.text_style == ONNXIO_TEXT_PROTO && k.text_by_name);
    CHECK_EQ_U64(k.size, 5009);
    onnxio_format f;
    CHECK_STATUS(onnxio_detect_file_format(p, &f), ONNXIO_OK);
    CHECK_EQ_INT(f, ONNXIO_FORMAT_TEXT);
    char *z = tu_path_join(dir, "m.onnx");
    uint8_t gap[100] = {0};
    tu_write_file(z, gap, sizeof gap);
    CHECK_STATUS(onnxio_detect_file(z, &k), ONNXIO_OK);
    CHECK(k.format == ONNXIO_FORMAT_ARCHIVE && k.size == 100);
    char *missing = tu_path_join(dir, "missing.onnx");
    k.size = 7;
    CHECK_STATUS(onnxio_detect_file(missing, &k), ONNXIO_ERR_NOT_FOUND);
    CHECK(k.size == 7 && strstr(onnxio_last_error(), "missing.onnx") != NULL);
    char *fifo = tu_path_join(dir, "fifo.json");
    if (mkfifo(fifo, 0600) == 0) CHECK_STATUS(onnxio_detect_file(fifo, &k), ONNXIO_ERR_PATH_SPECIAL);
    else tu_skip("a FIFO: mkfifo: %s (Windows has none)", strerror(errno));
    CHECK_STATUS(onnxio_detect_file(NULL, &k), ONNXIO_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxio_detect_file(p, NULL), ONNXIO_ERR_INVALID_ARGUMENT);
    onnxio_buffer_unref(pb);
    tu_remove_tree(dir);
    free(p);
    free(z);
    free(missing);
    free(fifo);
    free(dir);
    tu_end();
}

/* The bytes of the model loaded from `path` (external data loaded), or
 * NULL after a failed check. */
static onnxio_buffer *loaded_bytes(const char *path, const onnxio_parse_options *opts)
{
    onnxio_arena *a = onnxio_arena_new();
    onnxio_ModelProto *m = NULL;
    onnxio_buffer *b = NULL;
    onnxio_status s = onnxio_load_model(path, opts, a, &m);
    if (CHECK_MSG(s == ONNXIO_OK, "%s: %s", path, onnxio_last_error())) CHECK_STATUS(onnxio_serialize(m, &b), ONNXIO_OK);
    onnxio_arena_unref(a);
    return b;
}

static bool same_buffers(onnxio_buffer *a, onnxio_buffer *b)
{
    return a && b && onnxio_buffer_size(a) == onnxio_buffer_size(b) &&
           memcmp(onnxio_buffer_data(a), onnxio_buffer_data(b), onnxio_buffer_size(a)) == 0;
}

static int progress_calls;
static uint64_t progress_done, progress_total;

static int count_progress(void *user, uint64_t done, uint64_t total)
{
    (void)user;
    progress_calls++;
    progress_done = done;
    progress_total = total;
    return 0;
}

static void text_loads(void)
{
    tu_begin("detect: file loads read every text format, and external data beside it, as the binary file");
    char *dir = tu_make_temp_dir("textload");
    char *data = tu_path_join(dir, "w.bin");
    const float w[4] = {1, 2, 3, 4};
    tu_write_file(data, w, sizeof w);
    /* The structure, external data included, as binary and in each text
     * style; ONNX's textual syntax as onnx.printer writes such a model. */
    const char *proto = "ir_version: 10\n"
                        "opset_import {\n  domain: \"\"\n  version: 21\n}\n"
                        "graph {\n  node {\n    input: \"x\"\n    input: \"w\"\n    output: \"y\"\n"
                        "    op_type: \"Add\"\n  }\n  name: \"g\"\n"
                        "  initializer {\n    dims: 4\n    data_type: 1\n    name: \"w\"\n"
                        "    external_data {\n      key: \"location\"\n      value: \"w.bin\"\n    }\n"
                        "    data_location: EXTERNAL\n  }\n"
                        "  input {\n    name: \"x\"\n    type {\n      tensor_type {\n        elem_type: 1\n"
                        "        shape {\n          dim {\n            dim_value: 4\n          }\n        }\n"
                        "      }\n    }\n  }\n"
                        "  output {\n    name: \"y\"\n    type {\n      tensor_type {\n        elem_type: 1\n"
                        "        shape {\n          dim {\n            dim_value: 4\n          }\n        }\n"
                        "      }\n    }\n  }\n}\n";
    onnxio_arena *a = onnxio_arena_new();
    void *m = NULL;
    onnxio_text_options to = ONNXIO_TEXT_OPTIONS_INIT;
    to.style = ONNXIO_TEXT_PROTO;
    CHECK_STATUS(onnxio_text_parse(&onnxio_desc_ModelProto, proto, strlen(proto), &to, a, &m), ONNXIO_OK);
    char *binary = tu_path_join(dir, "m.onnx");
    CHECK_STATUS(onnxio_save_file(m, binary, NULL), ONNXIO_OK);
    onnxio_buffer *json = NULL;
    to.style = ONNXIO_TEXT_JSON;
    CHECK_STATUS(onnxio_text_format(m, &to, &json), ONNXIO_OK);
    onnxio_buffer *want = loaded_bytes(binary, NULL);
    const char *onnxtxt = "<ir_version: 10, opset_import: [\"\" : 21]>\n"
                          "g (float[4] x) => (float[4] y)\n"
                          "   <float[4] w = [\"location\": \"w.bin\"]>\n"
                          "{\n   y = Add (x, w)\n}\n";
    static const struct {
        const char *name;
        int which; /* 0 textproto, 1 JSON, 2 ONNX's textual syntax */
    } files[] = {
        {"m.txtpb", 0}, {"m.textproto", 0}, {"m.model", 0}, {"text.onnx", 0}, {"m.json", 1},
        {"m.onnxjson", 1}, {"json.pb", 1}, {"m.onnxtxt", 2}, {"m.onnxtext", 2}, {"onnxtxt.onnx", 2},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *p = tu_path_join(dir, files[i].name);
        if (files[i].which == 0) tu_write_file(p, proto, strlen(proto));
        else if (files[i].which == 1) tu_write_file(p, onnxio_buffer_data(json), onnxio_buffer_size(json));
        else tu_write_file(p, onnxtxt, strlen(onnxtxt));
        onnxio_buffer *got = loaded_bytes(p, NULL);
        /* ONNX's textual syntax sets no producer and lists the input
         * shapes as onnx.parser does; its model is checked against the
         * binary one through its tensor only */
        if (files[i].which < 2) CHECK_MSG(same_buffers(got, want), "%s differs from the binary model", files[i].name);
        onnxio_arena *b = onnxio_arena_new();
        onnxio_ModelProto *lm = NULL;
        if (CHECK_STATUS(onnxio_load_model(p, NULL, b, &lm), ONNXIO_OK)) {
            const onnxio_TensorProto *t = lm->graph->initializer.data[0];
            CHECK_BYTES(t->raw_data.data, t->raw_data.size, w, sizeof w);
            CHECK(!onnxio_tensor_is_external(t));
        }
        /* without external data, the tensor stays external */
        onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
        po.load_external_data = ONNXIO_OFF;
        if (CHECK_STATUS(onnxio_load_model(p, &po, b, &lm), ONNXIO_OK))
            CHECK(onnxio_tensor_is_external(lm->graph->initializer.data[0]));
        /* with a progress callback: one last call, done == total */
        po = (onnxio_parse_options)ONNXIO_PARSE_OPTIONS_INIT;
        po.progress = count_progress;
        progress_calls = 0;
        if (CHECK_STATUS(onnxio_load_model(p, &po, b, &lm), ONNXIO_OK))
            CHECK(progress_calls >= 1 && progress_done == progress_total && progress_total == sizeof w);
        /* slices read the same file */
        onnxio_tensor_file *f = NULL;
        if (CHECK_STATUS(onnxio_tensor_file_open(p, NULL, &f), ONNXIO_OK)) {
            onnxio_slice_range r = {1, 3};
            onnxio_buffer *s = NULL;
            if (CHECK_STATUS(onnxio_tensor_file_read(f, "w", &r, 1, NULL, 0, &s, NULL), ONNXIO_OK))
                CHECK_BYTES(onnxio_buffer_data(s), onnxio_buffer_size(s), w + 1, 2 * sizeof(float));
            onnxio_buffer_unref(s);
            onnxio_tensor_file_close(f);
        }
        onnxio_arena_unref(b);
        onnxio_buffer_unref(got);
        free(p);
    }

    /* any message: a TensorProto in text */
    char *tp = tu_path_join(dir, "t.txtpb");
    const char *tensor = "dims: 2\ndata_type: 7\nint64_data: 5\nint64_data: -6\nname: \"t\"\n";
    tu_write_file(tp, tensor, strlen(tensor));
    void *t = NULL;
    if (CHECK_STATUS(onnxio_load_file(&onnxio_desc_TensorProto, tp, NULL, a, &t), ONNXIO_OK))
        CHECK(((onnxio_TensorProto *)t)->int64_data.size == 2 && ((onnxio_TensorProto *)t)->int64_data.data[1] == -6);
    /* ONNX's textual syntax holds no TensorProto */
    char *ot = tu_path_join(dir, "t.onnxtxt");
    tu_write_file(ot, onnxtxt, strlen(onnxtxt));
    CHECK_STATUS(onnxio_load_file(&onnxio_desc_TensorProto, ot, NULL, a, &t), ONNXIO_ERR_INVALID_ARGUMENT);

    /* errors name the file, the line and the column */
    char *bad = tu_path_join(dir, "bad.txtpb");
    tu_write_file(bad, "ir_version: 8\nbogus: 1\n", 23);
    onnxio_ModelProto *lm = NULL;
    CHECK_STATUS(onnxio_load_model(bad, NULL, a, &lm), ONNXIO_ERR_SYNTAX);
    CHECK_MSG(strstr(onnxio_last_error(), "bad.txtpb") && strstr(onnxio_last_error(), "line 2 column 1"), "%s",
              onnxio_last_error());
    CHECK(lm == NULL);
    /* a text extension on binary content: binary */
    char *bin_json = tu_path_join(dir, "binary.json");
    onnxio_buffer *bb = NULL;
    CHECK_STATUS(onnxio_serialize(m, &bb), ONNXIO_OK);
    tu_write_file(bin_json, onnxio_buffer_data(bb), onnxio_buffer_size(bb));
    onnxio_parse_options off = ONNXIO_PARSE_OPTIONS_INIT;
    off.load_external_data = ONNXIO_OFF;
    onnxio_buffer *got = loaded_bytes(bin_json, &off);
    CHECK(same_buffers(got, bb));
    onnxio_buffer_unref(got);
    /* a binary model whose first bytes are printable stays binary */
    onnxio_buffer *pb = printable_binary();
    char *pp = tu_path_join(dir, "printable.onnx");
    tu_write_file(pp, onnxio_buffer_data(pb), onnxio_buffer_size(pb));
    got = loaded_bytes(pp, NULL);
    CHECK(same_buffers(got, pb));
    onnxio_buffer_unref(got);
    /* bytes are binary protobuf only: text fails with the hint */
    CHECK_STATUS(onnxio_load_model_from_bytes(proto, strlen(proto), NULL, NULL, a, &lm), ONNXIO_ERR_DECODE);
    CHECK(strstr(onnxio_last_error(), "text format") != NULL);

    onnxio_buffer_unref(pb);
    onnxio_buffer_unref(bb);
    onnxio_buffer_unref(json);
    onnxio_buffer_unref(want);
    onnxio_arena_unref(a);
    tu_remove_tree(dir);
    free(pp);
    free(bin_json);
    free(bad);
    free(ot);
    free(tp);
    free(binary);
    free(data);
    free(dir);
    tu_end();
}

int main(void)
{
    extension_table();
    paths();
    kinds();
    text_loads();
    return tu_finish();
}
