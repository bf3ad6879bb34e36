#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "progress.h"

void cli_print_verb_help(const cli_verb *verb)
{
    printf("usage: %s\n\n%s\n", verb->usage, verb->summary);
    if (verb->help && verb->help[0])
        printf("\n%s", verb->help);
    if (verb->help_more) fputs(verb->help_more, stdout);
}

int cli_usage_error(const cli_verb *verb, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "onnxio: %s: ", verb->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: %s\n(see 'onnxio %s --help')\n", verb->usage, verb->name);
    return CLI_EXIT_USAGE;
}

/* A failure the command found itself (an empty file), said in place of
 * the library's last error by the next cli_fail. */
static const char *own_error;

bool cli_file_is_empty(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 0) return false;
    own_error = "the file is empty (0 bytes): no message to read";
    return true;
}

static int fail_with(const char *verb, const char *file, const char *msg, const char *hint)
{
    if (!msg || !msg[0])
        msg = "failed";
    /* The library's message may itself start with the file name. */
    size_t n = strlen(file);
    if (strncmp(msg, file, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
        msg += n + 2;
    fprintf(stderr, "onnxio: %s: %s: %s%s%s\n", verb, file, msg, hint ? "; " : "", hint ? hint : "");
    return CLI_EXIT_FAILURE;
}

int cli_fail_hint(const char *verb, const char *file, const char *hint)
{
    const char *msg = own_error ? own_error : onnxio_last_error();
    own_error = NULL;
    return fail_with(verb, file, msg, hint);
}

int cli_fail(const char *verb, const char *file) { return cli_fail_hint(verb, file, NULL); }

int cli_fail_error(const char *verb, const char *file, const char *error)
{
    return fail_with(verb, file, error, NULL);
}

void cli_note_load(const char *verb, const char *path, const void *msg, bool type_guessed)
{
    (void)verb;
    (void)path;
    const onnxio_message *m = msg;
    if (type_guessed && m && m->unknown.size > 0)
        fprintf(stderr,
                "onnxio: %s: %s: note: it has fields a %s does not know; if it holds another message, pass "
                "--type (TensorProto, GraphProto, NodeProto, ...)\n",
                verb, path, m->desc->name);
}

int cli_fail_msg(const char *verb, const char *file, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "onnxio: %s: %s: ", verb, file);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_FAILURE;
}

int cli_finish_stdout(const char *verb, int status)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int err = errno;
        fprintf(stderr, "onnxio: %s: <stdout>: write error%s%s\n", verb, err ? ": " : "",
                err ? strerror(err) : "");
        return CLI_EXIT_FAILURE;
    }
    return status;
}

static const cli_option *find_option(const cli_option *opts, size_t count, const char *name,
                                     size_t len)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(opts[i].name) == len && memcmp(opts[i].name, name, len) == 0)
            return &opts[i];
    return NULL;
}

int cli_parse_args(const cli_verb *verb, int argc, char **argv, const cli_option *opts,
                   size_t opt_count, char **pos, size_t min_pos, size_t max_pos, size_t *npos)
{
    int options_done = 0;
    *npos = 0;
    /* --help wins over anything else on the line, even errors. Option values
     * spelled "--help" are rare enough not to matter. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_print_verb_help(verb);
            return CLI_EXIT_OK;
        }
    }
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (!options_done && arg[0] == '-' && arg[1] != '\0') {
            if (arg[1] != '-')
                return cli_usage_error(verb, "unknown option '%s'", arg);
            const char *name = arg + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            const cli_option *opt = find_option(opts, opt_count, name, len);
            if (!opt)
                return cli_usage_error(verb, "unknown option '--%.*s'", (int)len, name);
            if (opt->value) {
                if (eq) {
                    *opt->value = eq + 1;
                } else {
                    if (i + 1 >= argc)
                        return cli_usage_error(verb, "option '--%s' needs a value", opt->name);
                    *opt->value = argv[++i];
                }
            } else {
                if (eq)
                    return cli_usage_error(verb, "option '--%s' takes no value", opt->name);
                *opt->flag = 1;
            }
            continue;
        }
        if (*npos >= max_pos)
            return cli_usage_error(verb, "unexpected argument '%s'", arg);
        pos[(*npos)++] = arg;
    }
    if (*npos < min_pos)
        return cli_usage_error(verb, "missing argument");
    return -1;
}

/* Reads the decimal digits at *p (at least one) into *value, leaving *p
 * after them. -1 when there are none or they overflow. */
static int parse_digits(const char **p, uint64_t *value)
{
    const char *q = *p;
    uint64_t v = 0;
    if (*q < '0' || *q > '9')
        return -1;
    for (; *q >= '0' && *q <= '9'; q++) {
        unsigned digit = (unsigned)(*q - '0');
        if (v > (UINT64_MAX - digit) / 10)
            return -1;
        v = v * 10 + digit;
    }
    *p = q;
    *value = v;
    return 0;
}

int cli_parse_size(const char *text, uint64_t *out)
{
    const char *p = text;
    uint64_t value;
    if (parse_digits(&p, &value) != 0)
        return -1;
    unsigned shift = 0;
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    default: break;
    }
    if (shift && p[0] == 'i' && p[1] == 'B')
        p += 2;
    else if (p[0] == 'B')
        p++;
    if (*p != '\0')
        return -1;
    if (shift && value > (UINT64_MAX >> shift))
        return -1;
    *out = value << shift;
    return 0;
}

int cli_parse_max_expansion(const cli_verb *verb, const char *text, uint64_t *out)
{
    const char *p = text;
    uint64_t value;
    if (!text)
        return -1;
    if (parse_digits(&p, &value) == 0 && *p == '\0') {
        *out = value;
        return -1;
    }
    return cli_usage_error(verb, "--max-expansion: invalid factor '%s' (a whole number; 0: the default, %u)", text,
                           (unsigned)ONNXIO_DEFAULT_MAX_EXPANSION);
}

int cli_parse_threads(const cli_verb *verb, const char *text, int *out)
{
    *out = 0;
    if (!text)
        return -1;
    char *end;
    unsigned long long n = strtoull(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end || n > 1024)
        return cli_usage_error(verb, "--threads: invalid thread count '%s'", text);
    *out = (int)n;
    return -1;
}

int cli_string_cmp(onnxio_string a, onnxio_string b)
{
    size_t n = a.size < b.size ? a.size : b.size;
    int c = n ? memcmp(a.data, b.data, n) : 0;
    if (c == 0 && a.size != b.size)
        c = a.size < b.size ? -1 : 1;
    return c;
}

int cli_string_is(onnxio_string s, const char *text)
{
    size_t n = strlen(text);
    return s.size == n && (n == 0 || memcmp(s.data, text, n) == 0);
}

void cli_put_escaped(FILE *out, onnxio_string s)
{
    for (size_t i = 0; i < s.size; i++) {
        unsigned char c = (unsigned char)s.data[i];
        if (c < 0x20 || c == 0x7F)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}

const char *cli_human_size(uint64_t bytes, char *buf, size_t buf_size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, buf_size, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    size_t u = 0;
    v /= 1024.0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, buf_size, "%.1f %s", v, units[u]);
    return buf;
}

int cli_file_is_archive(const char *path)
{
    onnxio_format format;
    if (onnxio_detect_file_format(path, &format) != ONNXIO_OK)
        return -1;
    return format == ONNXIO_FORMAT_ARCHIVE;
}

onnxio_status cli_load(const onnxio_message_desc *desc, const char *path, const onnxio_parse_options *opts,
                       bool progress, onnxio_arena *arena, void **out)
{
    onnxio_parse_options o = opts ? *opts : (onnxio_parse_options)ONNXIO_PARSE_OPTIONS_INIT;
    if (progress) cli_progress_begin("loading", path);
    if (progress && cli_progress_active()) {
        o.struct_size = sizeof o;
        o.progress = cli_progress_bytes;
    }
    onnxio_status st = onnxio_load_file(desc, path, &o, arena, out);
    if (progress) cli_progress_end();
    return st;
}

int cli_load_structure(const char *verb, const char *path, uint64_t max_expansion, onnxio_arena **arena,
                       onnxio_ModelProto **model, onnxio_archive **archive)
{
    onnxio_parse_options po = ONNXIO_PARSE_OPTIONS_INIT;
    po.load_external_data = ONNXIO_OFF;
    po.skip_raw_data = true;
    po.no_copy = true;
    po.max_expansion = max_expansion;
    *arena = NULL;
    *model = NULL;
    *archive = NULL;
    int is_archive = cli_file_is_archive(path);
    if (is_archive < 0 || (is_archive && onnxio_archive_open(path, archive) != ONNXIO_OK))
        return cli_fail(verb, path);
    if (!(*arena = onnxio_arena_new())) {
        onnxio_archive_close(*archive);
        *archive = NULL;
        return cli_fail_msg(verb, path, "out of memory");
    }
    if (cli_file_is_empty(path) || cli_load(&onnxio_desc_ModelProto, path, &po, true, *arena, (void **)model) != ONNXIO_OK) {
        int rc = cli_fail(verb, path);
        onnxio_arena_unref(*arena);
        onnxio_archive_close(*archive);
        *arena = NULL;
        *archive = NULL;
        return rc;
    }
    return CLI_EXIT_OK;
}

char *cli_model_dir(const char *model_path, const char *base_dir)
{
    size_t n = onnxio_model_dir(model_path, base_dir, NULL, 0);
    char *dir = n < SIZE_MAX ? malloc(n + 1) : NULL;
    if (dir) onnxio_model_dir(model_path, base_dir, dir, n + 1);
    return dir;
}

/* The progress callback of a save with a gate: the line's, and the gate at
 * the last call (done == total, before any file is replaced). */
typedef struct gated {
    int (*gate)(void *user);
    void *user;
} gated;

static int gated_progress(void *user, uint64_t done, uint64_t total)
{
    const gated *g = user;
    if (cli_progress_bytes(NULL, done, total) != 0) return 1;
    return done == total ? g->gate(g->user) : 0;
}

onnxio_status cli_save_model_gated(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *opts,
                                   int (*gate)(void *user), void *gate_user)
{
    cli_progress_begin("saving", path);
    onnxio_serialize_options o = opts ? *opts : (onnxio_serialize_options)ONNXIO_SERIALIZE_OPTIONS_INIT;
    gated g = {gate, gate_user};
    if (gate) {
        o.struct_size = sizeof o;
        o.progress = gated_progress;
        o.progress_user = &g;
    } else if (cli_progress_active()) {
        o.struct_size = sizeof o;
        o.progress = cli_progress_bytes;
    }
    onnxio_status st = onnxio_save_model(model, path, &o);
    cli_progress_end();
    return st;
}

onnxio_status cli_save_model(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *opts)
{
    return cli_save_model_gated(model, path, opts, NULL, NULL);
}

int cli_grow(void **array, size_t *capacity, size_t count, size_t elem)
{
    if (count < *capacity)
        return 0;
    size_t cap = *capacity ? *capacity * 2 : 8;
    void *p = realloc(*array, cap * elem);
    if (!p)
        return -1;
    *array = p;
    *capacity = cap;
    return 0;
}
