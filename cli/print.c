/* onnxio print: a model (or any ONNX message file) in protobuf text format
 * or protobuf JSON. */
#include <stdio.h>
#include <string.h>

#include "common.h"

static int run_print(int argc, char **argv);

#define PRINT_DEFAULT_MAX_BYTES 64

const cli_verb cli_verb_print = {
    "print",
    "Print a model, or another ONNX message file, in protobuf text format or JSON.",
    "onnxio print FILE [--format str|textproto|json] [--full] [--max-bytes N] [--type MESSAGE] [--external]\n"
    "                  [--max-expansion N]",
    "The output is what Python's str() of the onnx message prints, except that\n"
    "bytes fields (raw_data and the like) longer than 64 bytes are cut short,\n"
    "with a comment giving their size, unless --full is given. --format textproto\n"
    "and --format json print what onnx.save(..., format=\"textproto\" / \"json\")\n"
    "writes (with --full, the very bytes; JSON is never cut short).\n"
    "\n"
    "Tensors with external data are printed as stored in the file (their\n"
    "data_location and external_data entries); --external reads the data\n"
    "first, as onnx.load does, so that they show raw_data instead.\n"
    "\n"
    "options:\n"
    "  --format STYLE    str (the default), textproto (text_format.MessageToString)\n"
    "                    or json (json_format.MessageToJson with proto field names)\n"
    "  --full            print every byte of every bytes field\n"
    "  --max-bytes N     abbreviate bytes fields longer than N bytes (0: never)\n"
    "  --type MESSAGE    the file holds this message instead of a ModelProto,\n"
    "                    e.g. TensorProto for a test_data_set .pb file; any\n"
    "                    message of onnx.proto (\"TensorProto\", \"onnx.GraphProto\")\n"
    "  --external        read external data before printing (models only)\n"
    "  --max-expansion N refuse to load FILE when it would take more than N\n"
    "                    times its size in memory (0: the default, " CLI_STR(ONNXIO_DEFAULT_MAX_EXPANSION) ")\n"
    "  --help            show this help\n",
    run_print,
    NULL,
};

static int run_print(int argc, char **argv)
{
    int full = 0, external = 0;
    const char *type_name = NULL, *max_bytes = NULL, *expansion_text = NULL, *style = NULL;
    const cli_option opts[] = {
        {"format", &style, NULL},
        {"full", NULL, &full},
        {"max-bytes", &max_bytes, NULL},
        {"type", &type_name, NULL},
        {"external", NULL, &external},
        {"max-expansion", &expansion_text, NULL},
    };
    char *pos[1];
    size_t npos;
    int rc = cli_parse_args(&cli_verb_print, argc, argv, opts, sizeof opts / sizeof opts[0], pos,
                            1, 1, &npos);
    if (rc >= 0)
        return rc;
    const char *path = pos[0];

    onnxio_text_options to = {.max_bytes_shown = PRINT_DEFAULT_MAX_BYTES};
    if (max_bytes && cli_parse_size(max_bytes, &to.max_bytes_shown) != 0)
        return cli_usage_error(&cli_verb_print, "invalid byte count '%s'", max_bytes);
    if (full)
        to.max_bytes_shown = 0;
    if (style && strcmp(style, "textproto") == 0)
        to.style = ONNXIO_TEXT_PROTO;
    else if (style && strcmp(style, "json") == 0)
        to.style = ONNXIO_TEXT_JSON;
    else if (style && strcmp(style, "str") != 0)
        return cli_usage_error(&cli_verb_print, "unknown --format '%s' (str, textproto or json)", style);
    uint64_t max_expansion = 0;
    if ((rc = cli_parse_max_expansion(&cli_verb_print, expansion_text, &max_expansion)) >= 0)
        return rc;

    const onnxio_message_desc *desc = &onnxio_desc_ModelProto;
    if (type_name) {
        desc = onnxio_message_desc_by_name(type_name);
        if (!desc)
            return cli_usage_error(&cli_verb_print, "unknown message type '%s'", type_name);
    }
    if (external && desc != &onnxio_desc_ModelProto)
        return cli_usage_error(&cli_verb_print, "--external applies to models only");

    onnxio_parse_options po = {0};
    po.no_copy = true;
    po.load_external_data = external ? ONNXIO_ON : ONNXIO_OFF;
    po.max_expansion = max_expansion;

    onnxio_arena *arena = onnxio_arena_new();
    if (!arena)
        return cli_fail_msg("print", path, "out of memory");
    void *msg = NULL;
    onnxio_status st = cli_file_is_empty(path) ? ONNXIO_ERR_DECODE : cli_load(desc, path, &po, true, arena, &msg);
    if (st != ONNXIO_OK) {
        rc = cli_fail_hint("print", path,
                           !type_name && (st == ONNXIO_ERR_DECODE || st == ONNXIO_ERR_DEPTH)
                               ? "it was read as a ModelProto: if it holds another message, pass --type "
                                 "(TensorProto, GraphProto, NodeProto, ...)"
                               : NULL);
        onnxio_arena_unref(arena);
        return rc;
    }
    cli_note_load("print", path, msg, !type_name);
    st = onnxio_text_print(msg, &to, stdout);
    if (st == ONNXIO_OK && to.style == ONNXIO_TEXT_JSON && putchar('\n') == EOF)
        st = ONNXIO_ERR_IO;
    onnxio_arena_unref(arena);
    if (st != ONNXIO_OK) {
        rc = cli_fail("print", "<stdout>");
        return rc;
    }
    return cli_finish_stdout("print", CLI_EXIT_OK);
}
