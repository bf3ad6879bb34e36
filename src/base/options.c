/* Options (docs/design.md, "Options"): the public option structs are read
 * here, once, at the entry points, with their struct_size rules and every
 * default resolved; the rest of the library never looks at a raw option or
 * spells a default. */
#include <pthread.h>
#include <string.h>

#include "base/base.h"

/* The 0.2 layouts, pinned where they were measured (LP64: x86-64,
 * aarch64). onnxio_external_data_options is embedded by value in
 * onnxio_serialize_options, so it never grows. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(ONNXIO__PARSE_OPTIONS_0_2_SIZE == 112, "onnxio_parse_options: the 0.2 layout changed");
_Static_assert(ONNXIO__SERIALIZE_OPTIONS_0_2_SIZE == 96, "onnxio_serialize_options: the 0.2 layout changed");
_Static_assert(ONNXIO__TEXT_OPTIONS_0_2_SIZE == 24, "onnxio_text_options: the 0.2 layout changed");
_Static_assert(ONNXIO__SAFETENSORS_OPTIONS_0_2_SIZE == 56, "onnxio_safetensors_options: a member was added: "
                                                           "make ONNXIO__SAFETENSORS_OPTIONS_0_2_SIZE its offset");
_Static_assert(ONNXIO__SLICE_OPTIONS_0_2_SIZE == 40, "onnxio_slice_options: a member was added: "
                                                     "make ONNXIO__SLICE_OPTIONS_0_2_SIZE its offset");
_Static_assert(ONNXIO__CONSOLIDATE_OPTIONS_0_2_SIZE == 24, "onnxio_consolidate_options: a member was added: "
                                                           "make ONNXIO__CONSOLIDATE_OPTIONS_0_2_SIZE its offset");
_Static_assert(ONNXIO__CHECK_OPTIONS_0_2_SIZE == 40, "onnxio_check_options: a member was added: "
                                                     "make ONNXIO__CHECK_OPTIONS_0_2_SIZE its offset");
_Static_assert(sizeof(onnxio_external_data_options) == 40, "onnxio_external_data_options is frozen");
#endif

onnxio_status onnxio__copy_options(void *dst, size_t dst_size, const void *src, const char *what, size_t first_size)
{
    memset(dst, 0, dst_size);
    if (!src) return ONNXIO_OK;
    size_t given;
    memcpy(&given, src, sizeof given);
    /* 0: the layout of 0.2, whose programs may pass a zeroed struct of that
     * size (reading further would read past its end). */
    if (given == 0) given = first_size;
    if (given < sizeof(size_t) || given % sizeof(size_t))
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "%s: struct_size %zu is not the size of any version of it",
                            what, given);
    if (given > dst_size) {
        /* A newer caller: the members this version does not know must be
         * zero, or an option would be silently ignored. */
        const unsigned char *p = src;
        for (size_t i = dst_size; i < given; i++)
            if (p[i])
                return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT,
                                    "%s sets an option (at byte %zu) that onnxio %s does not know", what, i,
                                    ONNXIO_VERSION_STRING);
        given = dst_size;
    }
    memcpy(dst, src, given);
    memcpy(dst, &given, sizeof given);
    return ONNXIO_OK;
}

int onnxio__depth_limit(int requested)
{
    if (requested <= 0) return ONNXIO_DEFAULT_MAX_DEPTH;
    return requested > ONNXIO_MAX_DEPTH ? ONNXIO_MAX_DEPTH : requested;
}

static onnxio_status check_alignment(uint64_t a)
{
    if (a & (a - 1))
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "alignment %llu is not a power of two", (unsigned long long)a);
    if (a > (1u << 30))
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "alignment %llu is larger than 1 GiB", (unsigned long long)a);
    return ONNXIO_OK;
}

uint64_t onnxio__alignment(uint64_t requested) { return requested ? requested : ONNXIO_DEFAULT_ALIGNMENT; }

uint64_t onnxio__max_expansion(uint64_t requested) { return requested ? requested : ONNXIO_DEFAULT_MAX_EXPANSION; }

uint64_t onnxio__save_alignment(const onnxio_serialize_options *cfg, bool data_file)
{
    if (cfg->alignment) return cfg->alignment;
    return data_file ? ONNXIO_DEFAULT_EXTERNAL_ALIGNMENT : ONNXIO_DEFAULT_ALIGNMENT;
}

onnxio_status onnxio__slice_config(const onnxio_slice_options *opts, onnxio_slice_options *cfg)
{
    onnxio_status s = onnxio__copy_options(cfg, sizeof *cfg, opts, "onnxio_slice_options", ONNXIO__SLICE_OPTIONS_0_2_SIZE);
    if (s) return s;
    if (cfg->num_threads < 0 || cfg->max_depth < 0)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "onnxio_slice_options: negative num_threads or max_depth");
    cfg->max_expansion = onnxio__max_expansion(cfg->max_expansion);
    return ONNXIO_OK;
}

onnxio_status onnxio__consolidate_config(const onnxio_consolidate_options *opts, onnxio_consolidate_options *cfg)
{
    onnxio_status s = onnxio__copy_options(cfg, sizeof *cfg, opts, "onnxio_consolidate_options",
                                           ONNXIO__CONSOLIDATE_OPTIONS_0_2_SIZE);
    if (s) return s;
    cfg->alignment = onnxio__alignment(cfg->alignment);
    if ((s = check_alignment(cfg->alignment))) return s;
    if (!cfg->raw_data_threshold) cfg->raw_data_threshold = ONNXIO_DEFAULT_RAW_DATA_THRESHOLD;
    return ONNXIO_OK;
}

/* What parse and serialize options share: checked, then defaults. */
static onnxio_status common(int *max_depth, int num_threads, uint64_t alignment, uint64_t *raw_data_threshold)
{
    if (*max_depth < 0) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "max_depth %d is negative", *max_depth);
    if (num_threads < 0) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "num_threads %d is negative", num_threads);
    onnxio_status s = check_alignment(alignment);
    if (s) return s;
    if (*raw_data_threshold == 0) *raw_data_threshold = ONNXIO_DEFAULT_RAW_DATA_THRESHOLD;
    *max_depth = onnxio__depth_limit(*max_depth);
    return ONNXIO_OK;
}

static onnxio_status parse_config(const onnxio_parse_options *opts, onnxio_parse_options *cfg);

/* The defaults, resolved once: a parse without options (every small parse
 * from Python) copies them, where resolving them took 5% of an empty
 * parse's time. */
static onnxio_parse_options parse_defaults;
static pthread_once_t parse_defaults_once = PTHREAD_ONCE_INIT;
static void parse_defaults_make(void) { (void)parse_config(NULL, &parse_defaults); }

onnxio_status onnxio__parse_config(const onnxio_parse_options *opts, onnxio_parse_options *cfg)
{
    if (opts) return parse_config(opts, cfg);
    pthread_once(&parse_defaults_once, parse_defaults_make);
    *cfg = parse_defaults;
    return ONNXIO_OK;
}

static onnxio_status parse_config(const onnxio_parse_options *opts, onnxio_parse_options *cfg)
{
    onnxio_status s = onnxio__copy_options(cfg, sizeof *cfg, opts, "onnxio_parse_options", ONNXIO__PARSE_OPTIONS_0_2_SIZE);
    if (!s) s = common(&cfg->max_depth, cfg->num_threads, cfg->alignment, &cfg->raw_data_threshold);
    if (s) return s;
    if (cfg->alignment == 0) cfg->alignment = ONNXIO_DEFAULT_ALIGNMENT;
    if (cfg->max_expansion == 0) cfg->max_expansion = ONNXIO_DEFAULT_MAX_EXPANSION;
    /* CRC checks read every byte: free while copying, a full extra pass
     * over the mapping with no_copy. */
    if (cfg->verify_crc == ONNXIO_DEFAULT) cfg->verify_crc = cfg->no_copy ? ONNXIO_OFF : ONNXIO_ON;
    if (cfg->verify_digests == ONNXIO_DEFAULT) cfg->verify_digests = cfg->no_copy ? ONNXIO_OFF : ONNXIO_ON;
    if (cfg->skip_raw_data) cfg->payload_fn = NULL;
    /* Direct reads only where payloads are copied (no_copy maps the file). */
    if (cfg->direct_io == ONNXIO_DEFAULT) cfg->direct_io = ONNXIO_ON;
    if (cfg->no_copy) cfg->direct_io = ONNXIO_OFF;
    return ONNXIO_OK;
}

onnxio_status onnxio__serialize_config(const onnxio_serialize_options *opts, onnxio_serialize_options *cfg)
{
    onnxio_status s = onnxio__copy_options(cfg, sizeof *cfg, opts, "onnxio_serialize_options", ONNXIO__SERIALIZE_OPTIONS_0_2_SIZE);
    if (!s) s = common(&cfg->max_depth, cfg->num_threads, cfg->alignment, &cfg->raw_data_threshold);
    if (s) return s;
    /* The alignment's default depends on where payloads go (save.c). */
    if (cfg->external_data.size_threshold == 0) cfg->external_data.size_threshold = ONNXIO_DEFAULT_EXTERNAL_THRESHOLD;
    if (cfg->max_expansion == 0) cfg->max_expansion = ONNXIO_DEFAULT_MAX_EXPANSION;
    return ONNXIO_OK;
}

onnxio_status onnxio__archive_save_config(const onnxio_serialize_options *opts, onnxio_serialize_options *cfg)
{
    onnxio_status s = onnxio__serialize_config(opts, cfg);
    if (s) return s;
    const onnxio_external_data_options *x = &cfg->external_data;
    if (x->location || x->all_tensors_to_one_file == ONNXIO_OFF || x->max_file_size || x->checksum)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT,
                            "external data options (location, all_tensors_to_one_file, max_file_size, checksum) do not "
                            "apply to an .onnxz archive");
    return ONNXIO_OK;
}

uint64_t onnxio__budget_left(const onnxio__budget *b)
{
    /* An overflow check, not a division: the division was 2% of an empty
     * parse from Python. */
    uint64_t cap;
    if (__builtin_mul_overflow(b->ratio, b->input, &cap) || __builtin_add_overflow(cap, ONNXIO_EXPANSION_ALLOWANCE, &cap))
        cap = UINT64_MAX;
    return cap > b->used ? cap - b->used : 0;
}

onnxio_status onnxio__budget_take(onnxio__budget *b, uint64_t n, const char *what)
{
    if (n > onnxio__budget_left(b))
        return onnxio__fail(ONNXIO_ERR_EXPANSION,
                            "%s: loading would take %llu bytes of memory for %llu bytes read, more than max_expansion "
                            "(%llu) times that plus %u MiB; raise max_expansion if the input is trusted",
                            what, (unsigned long long)(b->used + n), (unsigned long long)b->input,
                            (unsigned long long)b->ratio, (unsigned)(ONNXIO_EXPANSION_ALLOWANCE >> 20));
    b->used += n;
    return ONNXIO_OK;
}
