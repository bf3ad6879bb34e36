/* onnxio convert: re-save a model, moving tensor payloads to or from an
 * external data file. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "tensor.h"
#include "walk.h"

static int run_convert(int argc, char **argv);

#define CONVERT_DEFAULT_THRESHOLD 1024

const cli_verb cli_verb_convert = {
    "convert",
    "Re-save a model, moving tensor data to or from an external data file.",
    "onnxio convert IN OUT [--external-data LOCATION [--size-threshold BYTES]] [--inline]",
    "Loads IN and saves it as OUT (written atomically: a failed save leaves no\n"
    "partial OUT behind). OUT is written in libprotobuf's byte layout.\n"
    "\n"
    "What happens to tensor data:\n"
    "  (no option)                 Tensors stay where they are: inline tensors\n"
    "                              stay inline, and tensors with external data\n"
    "                              keep pointing at their files, which are not\n"
    "                              touched. Their locations are relative to the\n"
    "                              model's directory, so OUT must then be in the\n"
    "                              same directory as IN (use --inline or\n"
    "                              --external-data to write elsewhere).\n"
    "  --external-data LOCATION    Every raw_data payload of at least BYTES bytes\n"
    "                              (inline or external in IN) is written to the\n"
    "                              file LOCATION, relative to OUT's directory (no\n"
    "                              absolute path, no '..'); smaller ones end up\n"
    "                              inline. The file is replaced, not appended to.\n"
    "                              Tensors held in typed fields (float_data...)\n"
    "                              and in node attributes stay inline.\n"
    "  --inline                    External data is read and stored inside OUT.\n"
    "\n"
    "options:\n"
    "  --external-data LOCATION    move large tensor payloads to LOCATION\n"
    "  --size-threshold BYTES      with --external-data: the smallest payload\n"
    "                              moved (default 1024; 0 moves every non-empty\n"
    "                              payload; K, M, G suffixes are powers of 1024)\n"
    "  --inline                    bring external data back into the model\n"
    "  --help                      show this help\n",
    run_convert,
};

/* The directory part of `path` ("." when there is none), resolved. NULL
 * when it does not resolve. */
static char *resolved_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash) {
        dir = malloc(2);
        if (dir)
            strcpy(dir, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(n + 1);
        if (dir) {
            memcpy(dir, path, n);
            dir[n] = '\0';
        }
    }
    if (!dir)
        return NULL;
    char *real = realpath(dir, NULL);
    free(dir);
    return real;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* `location` spelled without leading "./" components. */
static const char *strip_dot_slash(const char *location)
{
    while (location[0] == '.' && location[1] == '/')
        location += 2;
    return location;
}

typedef struct external_scan {
    uint64_t tensors;
    const char *out_base; /* OUT's file name, to catch OUT overwriting a data file */
    const char *clash;
} external_scan;

static void scan_external(void *ctx, void *msg)
{
    external_scan *scan = ctx;
    if (!cli_is(msg, &onnxio_desc_TensorProto) || !cli_tensor_is_external(msg))
        return;
    scan->tensors++;
    cli_external_ref ref;
    cli_tensor_external_ref(msg, &ref);
    if (ref.location.size && !memchr(ref.location.data, '\0', ref.location.size) &&
        strcmp(strip_dot_slash(ref.location.data), scan->out_base) == 0)
        scan->clash = ref.location.data;
}

/* 1 when `a` and `b` name the same existing file. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Refuses a plain convert that would break external references or
 * overwrite an external data file with the model. */
static int check_keep_external(onnxio_ModelProto *model, const char *in, const char *out)
{
    external_scan scan = {0, base_name(out), NULL};
    cli_walk(model, scan_external, &scan);
    if (scan.tensors == 0)
        return CLI_EXIT_OK;
    char *in_dir = resolved_dir(in);
    char *out_dir = resolved_dir(out);
    int out_dir_exists = out_dir != NULL;
    int same_dir = in_dir && out_dir && strcmp(in_dir, out_dir) == 0;
    free(in_dir);
    free(out_dir);
    if (!out_dir_exists)
        return cli_fail_msg("convert", out, "directory does not exist");
    if (!same_dir)
        return cli_fail_msg("convert", out,
                            "%llu tensors of the model have external data, whose locations are "
                            "relative to the input's directory; write the output next to the input, or "
                            "use --inline or --external-data LOCATION",
                            (unsigned long long)scan.tensors);
    if (scan.clash)
        return cli_fail_msg("convert", out, "would overwrite the external data file '%s' of the model",
                            scan.clash);
    return CLI_EXIT_OK;
}

/* Refuses an external data location that is OUT itself. */
static int check_location(const char *out, const char *location)
{
    const char *slash = strrchr(out, '/');
    size_t dir_len = slash ? (size_t)(slash - out) + 1 : 0;
    char *path = malloc(dir_len + strlen(location) + 1);
    if (!path)
        return cli_fail_msg("convert", out, "out of memory");
    memcpy(path, out, dir_len);
    strcpy(path + dir_len, location);
    int clash = same_file(path, out) || strcmp(strip_dot_slash(location), base_name(out)) == 0;
    free(path);
    if (clash)
        return cli_fail_msg("convert", out, "the external data location '%s' is the model file itself",
                            location);
    return CLI_EXIT_OK;
}

static int run_convert(int argc, char **argv)
{
    const char *location = NULL, *threshold_text = NULL;
    int inline_data = 0;
    const cli_option opts[] = {
        {"external-data", &location, NULL},
        {"size-threshold", &threshold_text, NULL},
        {"inline", NULL, &inline_data},
    };
    char *pos[2];
    size_t npos;
    int rc = cli_parse_args(&cli_verb_convert, argc, argv, opts, sizeof opts / sizeof opts[0], pos,
                            2, 2, &npos);
    if (rc >= 0)
        return rc;
    const char *in = pos[0], *out = pos[1];

    if (location && inline_data)
        return cli_usage_error(&cli_verb_convert, "--external-data and --inline exclude each other");
    if (location && location[0] == '\0')
        return cli_usage_error(&cli_verb_convert, "--external-data needs a file name");
    uint64_t threshold = CONVERT_DEFAULT_THRESHOLD;
    if (threshold_text) {
        if (!location)
            return cli_usage_error(&cli_verb_convert, "--size-threshold needs --external-data");
        if (cli_parse_size(threshold_text, &threshold) != 0)
            return cli_usage_error(&cli_verb_convert, "invalid byte count '%s'", threshold_text);
        /* For the library 0 means "the default"; here it means "all". */
        if (threshold == 0)
            threshold = 1;
    }

    onnxio_parse_options po = {0};
    /* Payloads point into the input's memory mapping; the save writes to a
     * temporary file and renames it, so IN and OUT may be the same file. */
    po.no_copy = true;
    po.load_external_data = (location || inline_data) ? ONNXIO_ON : ONNXIO_OFF;

    onnxio_arena *arena = onnxio_arena_new();
    if (!arena)
        return cli_fail_msg("convert", in, "out of memory");
    onnxio_ModelProto *model = NULL;
    if (cli_load_model(in, &po, arena, &model) != ONNXIO_OK) {
        rc = cli_fail("convert", in);
        onnxio_arena_unref(arena);
        return rc;
    }

    rc = location ? check_location(out, location) : !inline_data ? check_keep_external(model, in, out)
                                                                  : CLI_EXIT_OK;
    if (rc == CLI_EXIT_OK) {
        onnxio_serialize_options so = {0};
        so.external_data.location = location;
        so.external_data.size_threshold = threshold;
        if (cli_save_model(model, out, &so) != ONNXIO_OK)
            rc = cli_fail("convert", out);
    }
    onnxio_arena_unref(arena);
    return rc;
}
