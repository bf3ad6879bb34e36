/* onnxio convert: re-save a model, moving tensor payloads to or from an
 * external data file, or into or out of an .onnxz archive; fill its
 * initializers from a .safetensors file, or export them as one. */
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "port.h"
#include "walk.h"

static int run_convert(int argc, char **argv);

/* --verify-checksum: the SHA-1 of every data file (the library's
 * verify_checksum, on a load of IN's structure) is computed on a thread of
 * its own while IN is loaded and OUT written, and the save waits for it
 * before it replaces any file (cli_save_model_gated): a mismatch cancels
 * the save, as it would have failed the load. */
typedef struct verifier {
    const char *in;
    onnxio_parse_options po;
    pthread_t thread;
    bool running;
    onnxio_status status;
    char message[1024];
} verifier;

static void *verify_main(void *arg)
{
    verifier *v = arg;
    onnxio_arena *arena = onnxio_arena_new();
    void *model = NULL;
    v->status = arena ? onnxio_load_file(&onnxio_desc_ModelProto, v->in, &v->po, arena, &model) : ONNXIO_ERR_NO_MEMORY;
    if (v->status) snprintf(v->message, sizeof v->message, "%s", arena ? onnxio_last_error() : "out of memory");
    onnxio_arena_unref(arena);
    return NULL;
}

/* Whether OUT is IN (the same file): a load of IN, which waits for a save
 * of IN in progress, must then be over before the save begins. */
static bool same_file(const char *in, const char *out)
{
    struct stat a, b;
    return stat(in, &a) == 0 && stat(out, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void verify_start(verifier *v, const char *in, const onnxio_parse_options *po)
{
    v->in = in;
    v->po = *po;
    v->po.struct_size = sizeof v->po;
    v->po.skip_raw_data = true;
    v->po.load_external_data = ONNXIO_ON;
    v->po.verify_checksum = true;
    v->po.progress = NULL;
    v->running = pthread_create(&v->thread, NULL, verify_main, v) == 0;
    if (!v->running) verify_main(v);
}

/* Joins the thread (once); its status. */
static onnxio_status verify_join(verifier *v)
{
    if (v->running) pthread_join(v->thread, NULL);
    v->running = false;
    return v->status;
}

static int verify_gate(void *user)
{
    return verify_join(user) != ONNXIO_OK;
}

/* The help, in two string literals (cli_verb.help and .help_more): a C
 * compiler need not take one longer than 4095 bytes. */
#define CONVERT_HELP_1 \
    "Loads IN (an .onnx file, with or without external data, or an .onnxz\n" \
    "archive, known by its content) and saves it as OUT, atomically: a failed\n" \
    "save leaves no partial OUT or data file behind. OUT ending in \".onnxz\" is\n" \
    "written as an archive, any other OUT in libprotobuf's byte layout. The\n" \
    "CRC-32 of every entry read from an IN archive is checked (also with\n" \
    "--no-copy).\n" \
    "\n" \
    "What happens to tensor data (OUT not .onnxz):\n" \
    "  (no option)               Inline tensors stay inline; external ones keep\n" \
    "                            pointing at their files (not touched), whose\n" \
    "                            locations are relative to the model's directory:\n" \
    "                            OUT must then be in IN's directory. An IN archive\n" \
    "                            is read as with --inline (its entry names mean\n" \
    "                            nothing outside it).\n" \
    "  --external-data LOCATION  Every raw_data payload of at least BYTES bytes\n" \
    "                            goes to the file LOCATION, relative to OUT's\n" \
    "                            directory (no absolute path, no '..', not OUT, no\n" \
    "                            link leading elsewhere; replaced, not appended\n" \
    "                            to), each at a multiple of 4096 (--alignment);\n" \
    "                            smaller ones end up inline.\n" \
    "  --one-file-per-tensor     The same, one file per payload in OUT's directory,\n" \
    "                            named after the tensor (characters other than\n" \
    "                            A-Z a-z 0-9 . _ - become '_'; a _N suffix makes\n" \
    "                            names unique).\n" \
    "  --inline                  External data is read and stored inside OUT.\n" \
    "\n" \
    "OUT ending in \".onnxz\": every payload of IN is read, and every tensor of\n" \
    "the model (initializers, attributes, sparse tensors, functions) whose\n" \
    "raw_data has at least BYTES bytes gets a stored entry named after it, its\n" \
    "data on a multiple of --alignment (default 64) in the file; the model is\n" \
    "the last entry, __MODEL_PROTO. An archive IN is rewritten (new alignment or\n" \
    "threshold, no space left by replaced models). --external-data,\n" \
    "--one-file-per-tensor, --max-file-size, --checksum, --inline and\n" \
    "--convert-attribute (archives take every tensor) are usage errors.\n" \
    "\n" \
    "options (--external-data, --one-file-per-tensor, --inline: see above):\n" \
    "  --size-threshold BYTES    the smallest payload moved to a file or entry\n" \
    "                            (default 1024; 0: every non-empty one; K, M, G\n" \
    "                            suffixes are powers of 1024)\n" \
    "  --alignment BYTES         offset alignment of payloads (a power of two;\n" \
    "                            default 4096 in LOCATION, 64 in archives; 1: none)\n" \
    "  --max-file-size BYTES     with --external-data: split the data over files\n" \
    "                            of at most BYTES, named STEM-00001-of-0000N.EXT\n" \
    "                            after LOCATION (a larger payload gets its own)\n" \
    "  --checksum                write a \"checksum\" key (SHA-1 of the data file)\n" \
    "                            in every external tensor\n" \
    "  --digests                 write block digests: the SHA-256 of every 1 MiB\n" \
    "                            of each moved payload, in its tensor's\n" \
    "                            metadata_props (\"onnxio.sha256\"; onnx ignores\n" \
    "                            it); IN's are checked whenever they are there\n" \
    "  --no-fsync                no fsync, for scratch outputs (a power cut may\n" \
    "                            leave OUT incomplete; a kill still cannot)\n" \
    "  --convert-attribute       also move tensors of node attributes (Constant\n" \
    "                            nodes), sparse tensors and functions\n" \
    "  --base-dir DIR            read IN's external data from DIR, not IN's\n" \
    "                            directory\n" \
    "  --verify-checksum         refuse IN's external data (or entries) whose\n" \
    "                            SHA-1 differs from their \"checksum\" key\n"
#define CONVERT_HELP_2 \
    "  --threads N               threads for payload I/O (0: one per core, the\n" \
    "                            default; 1: serial); the same output for any N\n" \
    "  --no-copy                 memory-map IN and its data (the default)\n" \
    "  --copy                    read IN's payloads into memory instead\n" \
    "  --max-expansion N         refuse to load IN when it would take more than N\n" \
    "                            times its size in memory (structure, copied and\n" \
    "                            inflated payloads), or OUT's payloads N times the\n" \
    "                            bytes they share (0: the default, " CLI_STR(ONNXIO_DEFAULT_MAX_EXPANSION) ")\n" \
    "  --help                    show this help\n" \
    "\n" \
    "safetensors (https://github.com/huggingface/safetensors):\n" \
    "  --weights FILE            fill IN's initializers by name from the\n" \
    "                            .safetensors FILE before saving OUT (any OUT\n" \
    "                            above): each tensor of FILE goes into the\n" \
    "                            initializer of its name, which must have its\n" \
    "                            data type and shape; a tensor no initializer has\n" \
    "                            is an error; initializers FILE lacks stay as they\n" \
    "                            are. FILE is memory-mapped (--copy reads it).\n" \
    "  OUT ending in \".safetensors\": every initializer of IN's main graph is\n" \
    "                            written to OUT (no model), as the safetensors\n" \
    "                            package's save_file writes them; only --threads,\n" \
    "                            --no-fsync, --copy/--no-copy, --base-dir,\n" \
    "                            --verify-checksum and --max-expansion apply.\n"

const cli_verb cli_verb_convert = {
    "convert",
    "Re-save a model, moving tensor data to or from external data, an archive or safetensors.",
    "onnxio convert IN OUT [--weights FILE.safetensors] [--external-data LOCATION | --one-file-per-tensor]\n"
    "       [--inline] [options]",
    CONVERT_HELP_1,
    run_convert,
    CONVERT_HELP_2,
};

/* The usage error for the first option given (given[i]) that does not
 * apply to `what`, or -1 when none is. */
static int refuse_options(const char *const *names, const int *given, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (given[i]) return cli_usage_error(&cli_verb_convert, "--%s does not apply to %s", names[i], what);
    return -1;
}

/* The model's directory (cli_model_dir: `base_dir`, or the directory of
 * `path`), resolved. NULL when it does not resolve. */
static char *resolved_dir(const char *path, const char *base_dir)
{
    char *dir = cli_model_dir(path, base_dir);
    char *real = dir ? cli_realpath(dir) : NULL;
    free(dir);
    return real;
}

typedef struct external_scan {
    uint64_t tensors;
    const char *out; /* OUT, to catch it overwriting a data file */
    int clash;
} external_scan;

static void scan_external(void *ctx, void *msg)
{
    external_scan *scan = ctx;
    if (!cli_is(msg, &onnxio_desc_TensorProto) || !onnxio_tensor_is_external(msg))
        return;
    scan->tensors++;
    onnxio_external_ref ref;
    /* A reference the library refuses leads to no file a load would ever
     * read, so OUT cannot break it. */
    if (onnxio_external_ref_parse(msg, &ref) == ONNXIO_OK &&
        onnxio_location_names_file(ref.location, ref.location_size, scan->out))
        scan->clash = 1;
}

/* Refuses a plain convert that would break external references or
 * overwrite an external data file with the model. The references are
 * relative to `base_dir` when given, else to IN's directory. */
static int check_keep_external(onnxio_ModelProto *model, const char *in, const char *base_dir, const char *out)
{
    external_scan scan = {0, out, 0};
    cli_walk(model, scan_external, &scan);
    if (scan.tensors == 0)
        return CLI_EXIT_OK;
    char *in_dir = resolved_dir(in, base_dir);
    char *out_dir = resolved_dir(out, NULL);
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
                            onnxio_path_file_name(out));
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
    const char *threads_text = NULL, *base_dir = NULL, *expansion_text = NULL, *weights = NULL;
    int inline_data = 0, per_tensor = 0, checksum = 0, convert_attribute = 0, no_copy = 0, copy = 0;
    int verify = 0, no_fsync = 0, digests = 0;
    const cli_option opts[] = {
        {"no-fsync", NULL, &no_fsync},
        {"external-data", &location, NULL},
        {"size-threshold", &threshold_text, NULL},
        {"inline", NULL, &inline_data},
        {"one-file-per-tensor", NULL, &per_tensor},
        {"alignment", &alignment_text, NULL},
        {"max-file-size", &max_file_text, NULL},
        {"checksum", NULL, &checksum},
        {"digests", NULL, &digests},
        {"convert-attribute", NULL, &convert_attribute},
        {"threads", &threads_text, NULL},
        {"no-copy", NULL, &no_copy},
        {"copy", NULL, &copy},
        {"base-dir", &base_dir, NULL},
        {"verify-checksum", NULL, &verify},
        {"max-expansion", &expansion_text, NULL},
        {"weights", &weights, NULL},
    };
    char *pos[2];
    size_t npos;
    int rc = cli_parse_args(&cli_verb_convert, argc, argv, opts, sizeof opts / sizeof opts[0], pos,
                            2, 2, &npos);
    if (rc >= 0)
        return rc;
    const char *in = pos[0], *out = pos[1];
    int external = location || per_tensor;
    int out_archive = onnxio_path_is_archive(out);
    int out_safetensors = onnxio_path_is_safetensors(out);

    if (out_safetensors) {
        /* A safetensors file holds initializers and nothing else: options
         * that place payloads or keep them out make no sense. */
        static const char *const refused[] = {"external-data", "one-file-per-tensor", "max-file-size", "checksum",
                                              "convert-attribute", "inline", "size-threshold", "alignment",
                                              "weights", "digests"};
        const int given[] = {location != NULL, per_tensor, max_file_text != NULL, checksum, convert_attribute,
                             inline_data, threshold_text != NULL, alignment_text != NULL, weights != NULL, digests};
        int rc = refuse_options(refused, given, sizeof given / sizeof given[0],
                                "a .safetensors OUT (it holds every initializer's data and nothing else)");
        if (rc >= 0) return rc;
    }
    if (weights && weights[0] == '\0')
        return cli_usage_error(&cli_verb_convert, "--weights needs a file name");

    if (out_archive) {
        /* An archive holds its payloads itself: options that place them in
         * other files, or keep them out of the archive, make no sense. */
        static const char *const refused[] = {"external-data", "one-file-per-tensor", "max-file-size",
                                              "checksum", "convert-attribute", "inline"};
        const int given[] = {location != NULL, per_tensor, max_file_text != NULL, checksum, convert_attribute,
                             inline_data};
        int rc = refuse_options(refused, given, sizeof given / sizeof given[0],
                                "an .onnxz output (an archive holds every payload of at least --size-threshold "
                                "bytes, from any tensor)");
        if (rc >= 0) return rc;
    }
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
    static const char *const needs_external[] = {"size-threshold", "alignment", "checksum", "convert-attribute",
                                                 "digests"};
    const int given[] = {threshold_text != NULL, alignment_text != NULL, checksum, convert_attribute, digests};
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++)
        if (given[i] && !external && !out_archive)
            return cli_usage_error(&cli_verb_convert,
                                   "--%s needs --external-data, --one-file-per-tensor or an .onnxz OUT",
                                   needs_external[i]);
    if (max_file_text && !location)
        return cli_usage_error(&cli_verb_convert, "--max-file-size needs --external-data");

    /* 0 leaves the threshold to the library's default (1024). */
    uint64_t threshold = 0, alignment = 0, max_file_size = 0, max_expansion = 0;
    if ((rc = parse_size_option("size-threshold", threshold_text, &threshold)) >= 0)
        return rc;
    /* For the library 0 means "the default"; here it means "all". */
    if (threshold_text && threshold == 0)
        threshold = 1;
    if ((rc = parse_size_option("alignment", alignment_text, &alignment)) >= 0)
        return rc;
    if (alignment_text && (alignment == 0 || (alignment & (alignment - 1))))
        return cli_usage_error(&cli_verb_convert, "--alignment: %s is not a power of two", alignment_text);
    if ((rc = parse_size_option("max-file-size", max_file_text, &max_file_size)) >= 0)
        return rc;
    if (max_file_text && max_file_size == 0)
        return cli_usage_error(&cli_verb_convert, "--max-file-size must be at least 1");
    if ((rc = cli_parse_max_expansion(&cli_verb_convert, expansion_text, &max_expansion)) >= 0)
        return rc;
    int threads;
    if ((rc = cli_parse_threads(&cli_verb_convert, threads_text, &threads)) >= 0)
        return rc;

    /* An archive's tensors refer to its entries by name, which mean nothing
     * once the model is out of the archive: its payloads are always read
     * (the content decides, not the name, as for the library's load). An
     * archive OUT needs every payload too (a tensor left external is
     * refused by the writer). */
    int in_archive = cli_file_is_archive(in);
    if (in_archive < 0)
        return cli_fail("convert", in);
    int load_payloads = external || inline_data || out_archive || in_archive || out_safetensors;

    onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
    /* Payloads point into the input's memory mapping (unless --copy); the
     * save writes to temporary files and renames them, so IN and OUT (and
     * their data files) may be the same files. */
    po.no_copy = !copy;
    po.load_external_data = load_payloads ? ONNXIO_ON : ONNXIO_OFF;
    po.num_threads = threads;
    po.base_dir = base_dir;
    /* Checked on a thread of its own, unless OUT is IN. */
    bool verify_beside = verify && !same_file(in, out);
    po.verify_checksum = verify && !verify_beside;
    /* A no_copy load does not check an archive's CRC-32s by default, to
     * avoid reading every page of the mapping; but a convert reads every
     * payload anyway, and without the check a damaged entry would be
     * written out with a fresh, matching CRC-32 (gpt2, 500 MB: about 10%
     * more time). */
    po.verify_crc = ONNXIO_ON;
    /* Block digests likewise: the convert reads every payload it moves. */
    po.verify_digests = ONNXIO_ON;
    po.max_expansion = max_expansion;

    onnxio_arena *arena = onnxio_arena_new();
    if (!arena)
        return cli_fail_msg("convert", in, "out of memory");
    onnxio_ModelProto *model = NULL;
    if (cli_file_is_empty(in)) {
        onnxio_arena_unref(arena);
        return cli_fail("convert", in);
    }
    verifier check = {0};
    if (verify_beside) verify_start(&check, in, &po);
    if (cli_load(&onnxio_desc_ModelProto, in, &po, true, arena, (void **)&model) != ONNXIO_OK) {
        rc = cli_fail("convert", in);
        verify_join(&check);
        onnxio_arena_unref(arena);
        return rc;
    }

    /* The weights go in before anything is checked or saved: a tensor that
     * was external and is filled no longer refers to its file. */
    if (weights) {
        onnxio_safetensors_options wo = ONNXIO_SAFETENSORS_OPTIONS_INIT;
        wo.no_copy = !copy;
        wo.num_threads = threads;
        if (onnxio_safetensors_load_into(model, weights, &wo) != ONNXIO_OK) {
            rc = cli_fail("convert", weights);
            verify_join(&check);
            onnxio_arena_unref(arena);
            return rc;
        }
    }
    if (out_safetensors) {
        if (verify_join(&check)) {
            onnxio_arena_unref(arena);
            return cli_fail_error("convert", in, check.message);
        }
        onnxio_safetensors_options wo = ONNXIO_SAFETENSORS_OPTIONS_INIT;
        wo.num_threads = threads;
        wo.fsync = no_fsync ? ONNXIO_OFF : ONNXIO_DEFAULT;
        wo.max_expansion = max_expansion;
        rc = onnxio_safetensors_save(model, out, &wo) == ONNXIO_OK ? CLI_EXIT_OK : cli_fail("convert", out);
        onnxio_arena_unref(arena);
        return rc;
    }

    /* An external data location that is OUT itself is the library's to
     * refuse (ONNXIO_ERR_PATH_SELF), with the other location rules. */
    rc = !load_payloads ? check_keep_external(model, in, base_dir, out) : CLI_EXIT_OK;
    if (rc == CLI_EXIT_OK) {
        onnxio_serialize_options so = ONNXIO_SERIALIZE_OPTIONS_INIT;
        so.max_expansion = max_expansion;
        so.num_threads = threads;
        so.alignment = alignment;
        so.fsync = no_fsync ? ONNXIO_OFF : ONNXIO_DEFAULT;
        /* For an archive the threshold picks the tensors that get entries;
         * the other external_data options stay unset, as the writer
         * requires. */
        so.external_data.size_threshold = threshold;
        so.digests = digests;
        if (!out_archive) {
            so.external_data.location = location;
            so.external_data.all_tensors_to_one_file = per_tensor ? ONNXIO_OFF : ONNXIO_DEFAULT;
            so.external_data.max_file_size = max_file_size;
            so.external_data.checksum = checksum;
            so.external_data.convert_attribute = convert_attribute;
        }
        onnxio_status st = cli_save_model_gated(model, out, &so, verify_beside ? verify_gate : NULL, &check);
        if (verify_join(&check))
            rc = cli_fail_error("convert", in, check.message);
        else if (st != ONNXIO_OK)
            rc = cli_fail("convert", out);
    } else {
        verify_join(&check); /* the refusal said already */
    }
    onnxio_arena_unref(arena);
    return rc;
}
