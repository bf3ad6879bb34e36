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
    "onnxio convert IN OUT [--external-data LOCATION | --one-file-per-tensor] [--inline] [options]",
    "Loads IN and saves it as OUT (written atomically: a failed save leaves no\n"
    "partial OUT and no partial data file behind). OUT is written in\n"
    "libprotobuf's byte layout.\n"
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
    "                              absolute path, no '..', not OUT itself, no\n"
    "                              symlink or hard link leading elsewhere);\n"
    "                              smaller ones end up inline. The file is\n"
    "                              replaced, not appended to. Each payload starts\n"
    "                              at a multiple of 4096 bytes (see --alignment).\n"
    "  --one-file-per-tensor       The same, but each payload gets a file of its\n"
    "                              own in OUT's directory, named after the tensor\n"
    "                              (characters other than A-Z a-z 0-9 . _ -\n"
    "                              become '_', made unique by a _N suffix).\n"
    "  --inline                    External data is read and stored inside OUT.\n"
    "\n"
    "options:\n"
    "  --external-data LOCATION    move large tensor payloads to LOCATION\n"
    "  --one-file-per-tensor       move large tensor payloads to one file each\n"
    "  --size-threshold BYTES      the smallest payload moved (default 1024; 0\n"
    "                              moves every non-empty payload; K, M, G\n"
    "                              suffixes are powers of 1024)\n"
    "  --alignment BYTES           offset alignment of payloads in LOCATION (a\n"
    "                              power of two; default 4096; 1: none)\n"
    "  --max-file-size BYTES       with --external-data: split the data over files\n"
    "                              of at most BYTES each, named\n"
    "                              STEM-00001-of-0000N.EXT after LOCATION (a\n"
    "                              payload larger than BYTES gets its own file)\n"
    "  --checksum                  write a \"checksum\" key (SHA-1 of the data file)\n"
    "                              in every external tensor\n"
    "  --convert-attribute         also move tensors held in node attributes\n"
    "                              (Constant nodes), sparse tensors and functions,\n"
    "                              not only initializers\n"
    "  --inline                    bring external data back into the model\n"
    "  --base-dir DIR              read IN's external data from DIR instead of\n"
    "                              IN's directory\n"
    "  --verify-checksum           refuse IN's external data files whose SHA-1\n"
    "                              differs from their \"checksum\" key\n"
    "  --threads N                 threads for reading and writing payloads (0:\n"
    "                              one per core, the default; 1: serial); the\n"
    "                              output is the same whatever N\n"
    "  --no-copy                   memory-map IN and its data files and save\n"
    "                              from the mapping (the default)\n"
    "  --copy                      read IN's payloads into memory instead\n"
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
 * overwrite an external data file with the model. The references are
 * relative to `base_dir` when given, else to IN's directory. */
static int check_keep_external(onnxio_ModelProto *model, const char *in, const char *base_dir, const char *out)
{
    external_scan scan = {0, base_name(out), NULL};
    cli_walk(model, scan_external, &scan);
    if (scan.tensors == 0)
        return CLI_EXIT_OK;
    char *in_dir = base_dir ? realpath(base_dir, NULL) : resolved_dir(in);
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
                            "relative to the %s; write the output there, or "
                            "use --inline or --external-data LOCATION",
                            (unsigned long long)scan.tensors, base_dir ? "base directory" : "input's directory");
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

/* A byte count option: *out stays as it is when the option was not given. */
static int parse_size_option(const char *name, const char *text, uint64_t *out)
{
    if (text && cli_parse_size(text, out) != 0)
        return cli_usage_error(&cli_verb_convert, "--%s: invalid byte count '%s'", name, text);
    return -1;
}

static int run_convert(int argc, char **argv)
{
    const char *location = NULL, *threshold_text = NULL, *alignment_text = NULL, *max_file_text = NULL;
    const char *threads_text = NULL, *base_dir = NULL;
    int inline_data = 0, per_tensor = 0, checksum = 0, convert_attribute = 0, no_copy = 0, copy = 0;
    int verify = 0;
    const cli_option opts[] = {
        {"external-data", &location, NULL},
        {"size-threshold", &threshold_text, NULL},
        {"inline", NULL, &inline_data},
        {"one-file-per-tensor", NULL, &per_tensor},
        {"alignment", &alignment_text, NULL},
        {"max-file-size", &max_file_text, NULL},
        {"checksum", NULL, &checksum},
        {"convert-attribute", NULL, &convert_attribute},
        {"threads", &threads_text, NULL},
        {"no-copy", NULL, &no_copy},
        {"copy", NULL, &copy},
        {"base-dir", &base_dir, NULL},
        {"verify-checksum", NULL, &verify},
    };
    char *pos[2];
    size_t npos;
    int rc = cli_parse_args(&cli_verb_convert, argc, argv, opts, sizeof opts / sizeof opts[0], pos,
                            2, 2, &npos);
    if (rc >= 0)
        return rc;
    const char *in = pos[0], *out = pos[1];
    int external = location || per_tensor;

    if (location && per_tensor)
        return cli_usage_error(&cli_verb_convert, "--external-data and --one-file-per-tensor exclude each other");
    if (external && inline_data)
        return cli_usage_error(&cli_verb_convert, "--%s and --inline exclude each other",
                               location ? "external-data" : "one-file-per-tensor");
    if (no_copy && copy)
        return cli_usage_error(&cli_verb_convert, "--copy and --no-copy exclude each other");
    if (location && location[0] == '\0')
        return cli_usage_error(&cli_verb_convert, "--external-data needs a file name");
    if (base_dir && base_dir[0] == '\0')
        return cli_usage_error(&cli_verb_convert, "--base-dir needs a directory");
    static const char *const needs_external[] = {"size-threshold", "alignment", "checksum", "convert-attribute"};
    const int given[] = {threshold_text != NULL, alignment_text != NULL, checksum, convert_attribute};
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++)
        if (given[i] && !external)
            return cli_usage_error(&cli_verb_convert, "--%s needs --external-data or --one-file-per-tensor",
                                   needs_external[i]);
    if (max_file_text && !location)
        return cli_usage_error(&cli_verb_convert, "--max-file-size needs --external-data");

    uint64_t threshold = CONVERT_DEFAULT_THRESHOLD, alignment = 0, max_file_size = 0, threads = 0;
    if ((rc = parse_size_option("size-threshold", threshold_text, &threshold)) >= 0)
        return rc;
    /* For the library 0 means "the default"; here it means "all". */
    if (threshold == 0)
        threshold = 1;
    if ((rc = parse_size_option("alignment", alignment_text, &alignment)) >= 0)
        return rc;
    if (alignment_text && (alignment == 0 || (alignment & (alignment - 1))))
        return cli_usage_error(&cli_verb_convert, "--alignment: %s is not a power of two", alignment_text);
    if ((rc = parse_size_option("max-file-size", max_file_text, &max_file_size)) >= 0)
        return rc;
    if (max_file_text && max_file_size == 0)
        return cli_usage_error(&cli_verb_convert, "--max-file-size must be at least 1");
    if (threads_text) {
        char *end;
        threads = strtoull(threads_text, &end, 10);
        if (threads_text[0] < '0' || threads_text[0] > '9' || *end || threads > 1024)
            return cli_usage_error(&cli_verb_convert, "--threads: invalid thread count '%s'", threads_text);
    }

    onnxio_parse_options po = {0};
    /* Payloads point into the input's memory mapping (unless --copy); the
     * save writes to temporary files and renames them, so IN and OUT (and
     * their data files) may be the same files. */
    po.no_copy = !copy;
    po.load_external_data = (external || inline_data) ? ONNXIO_ON : ONNXIO_OFF;
    po.num_threads = (int)threads;
    po.base_dir = base_dir;
    po.verify_checksum = verify;

    onnxio_arena *arena = onnxio_arena_new();
    if (!arena)
        return cli_fail_msg("convert", in, "out of memory");
    onnxio_ModelProto *model = NULL;
    if (cli_load_model(in, &po, arena, &model) != ONNXIO_OK) {
        rc = cli_fail("convert", in);
        onnxio_arena_unref(arena);
        return rc;
    }

    rc = location ? check_location(out, location)
                  : !external && !inline_data ? check_keep_external(model, in, base_dir, out) : CLI_EXIT_OK;
    if (rc == CLI_EXIT_OK) {
        onnxio_serialize_options so = {0};
        so.num_threads = (int)threads;
        so.tensor_buffer.alignment = alignment;
        so.external_data.location = location;
        so.external_data.size_threshold = threshold;
        so.external_data.all_tensors_to_one_file = per_tensor ? ONNXIO_OFF : ONNXIO_DEFAULT;
        so.external_data.max_file_size = max_file_size;
        so.external_data.checksum = checksum;
        so.external_data.convert_attribute = convert_attribute;
        if (cli_save_model(model, out, &so) != ONNXIO_OK)
            rc = cli_fail("convert", out);
    }
    onnxio_arena_unref(arena);
    return rc;
}
