/* Load and save entry points and their options (docs/design.md "api"). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Parses `size` bytes at `data` into `msg`. `fd` >= 0 says the bytes are
 * that whole file, so that copies can be preads (the mapping's pages are
 * then never touched, and never count against the process). Payloads are
 * moved on the pool while the structure is parsed. `opts` is resolved
 * (onnxio__parse_config). */
static onnxio_status parse_bytes(void *msg, const void *data, size_t size, onnxio_buffer *owner, int fd,
                                 const onnxio_parse_options *opts, onnxio_arena *arena, bool *saw_external)
{
    onnxio_status s;
    onnxio__pool *pool = NULL;
    onnxio__payloads *payloads = NULL;
    if ((s = onnxio__pool_new(opts->num_threads, &pool))) return s;
    if ((s = onnxio__payloads_new(opts, pool, &payloads))) {
        onnxio__pool_finish(pool);
        return s;
    }
    onnxio__decode_config cfg = {
        .arena = arena,
        .owner = owner,
        .base = data ? data : (const void *)"",
        .skip_raw_data = opts->skip_raw_data,
        .max_depth = opts->max_depth,
        .payloads = payloads,
        .fd = opts->no_copy ? -1 : fd,
        .saw_external = saw_external,
    };
    s = onnxio__decode(&cfg, msg, data, size);
    if (!s) s = onnxio__payloads_resolve(payloads);
    onnxio_status s2 = onnxio__pool_finish(pool);
    onnxio__payloads_free(payloads);
    return s ? s : s2;
}

ONNXIO_API onnxio_status onnxio_parse_into(void *msg, const void *data, size_t size, onnxio_buffer *owner,
                                           const onnxio_parse_options *opts, onnxio_arena *arena)
{
    onnxio__clear_error();
    if (!msg || !arena || (!data && size)) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "parse: NULL argument");
    onnxio_parse_options cfg;
    onnxio_status s = onnxio__parse_config(opts, &cfg);
    if (s) return s;
    return parse_bytes(msg, data, size, owner, -1, &cfg, arena, NULL);
}

ONNXIO_API onnxio_status onnxio_parse(const onnxio_message_desc *desc, const void *data, size_t size,
                                      onnxio_buffer *owner, const onnxio_parse_options *opts,
                                      onnxio_arena *arena, void **out)
{
    if (!out || !desc) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "parse: NULL argument");
    *out = NULL;
    void *m = onnxio_message_new(arena, desc);
    if (!m) return onnxio__fail(arena ? ONNXIO_ERR_NO_MEMORY : ONNXIO_ERR_INVALID_ARGUMENT, "parse: cannot create the message");
    onnxio_status s = onnxio_parse_into(m, data, size, owner, opts, arena);
    if (s) {
        onnxio_message_clear(m);
        return s;
    }
    *out = m;
    return ONNXIO_OK;
}

static int wants_external(const onnxio_parse_options *opts)
{
    return opts->load_external_data != ONNXIO_OFF;
}

/* Loads the .onnxz archive in `data` (docs/onnxz.md): its __MODEL_PROTO
 * parsed as a model file is, then every external tensor resolved to its
 * entry. */
static onnxio_status load_archive(const uint8_t *data, size_t size, onnxio_buffer *owner, int fd, const char *what,
                                  const onnxio_parse_options *opts, onnxio_arena *arena, void **out)
{
    onnxio_status s;
    onnxio_archive *a;
    if ((s = onnxio__archive_open(data, size, owner, fd, what, &a))) return s;
    const uint8_t *model_data;
    size_t model_size;
    onnxio_buffer *model_owner = NULL;
    void *m = NULL;
    bool saw_external = false;
    if (!(s = onnxio__archive_model(a, opts->verify_crc == ONNXIO_ON, &model_data, &model_size, &model_owner))) {
        if (!(m = onnxio_message_new(arena, &onnxio_desc_ModelProto)))
            s = onnxio__fail(arena ? ONNXIO_ERR_NO_MEMORY : ONNXIO_ERR_INVALID_ARGUMENT, "load: cannot create the message");
        else if ((s = parse_bytes(m, model_data, model_size, model_owner, -1, opts, arena, &saw_external)))
            onnxio__context(s, "entry __MODEL_PROTO");
        else if (saw_external && wants_external(opts))
            s = onnxio__archive_load_payloads(a, m, opts);
    }
    onnxio_buffer_unref(model_owner);
    onnxio_archive_close(a);
    if (s) {
        if (m) onnxio_message_clear(m);
        return s;
    }
    *out = m;
    return ONNXIO_OK;
}

/* Parses a whole file: mapped, and in no_copy mode payloads keep the
 * mapping alive. A model file may be an .onnxz archive (*was_archive is
 * then set, and its payloads are loaded too). */
static onnxio_status load_mapped(const onnxio_message_desc *desc, const char *path, const onnxio_parse_options *opts,
                                 onnxio_arena *arena, void **out, bool *saw_external, bool *was_archive)
{
    onnxio_buffer *map;
    int fd;
    *out = NULL;
    onnxio_status s = onnxio__map_file(path, &map, &fd);
    if (s) return s;
    const uint8_t *data = onnxio_buffer_data(map);
    size_t size = onnxio_buffer_size(map);
    void *m = NULL;
    if (was_archive && onnxio_detect_format(data, size) == ONNXIO_FORMAT_ARCHIVE) {
        *was_archive = true;
        s = load_archive(data, size, map, fd, path, opts, arena, &m);
    } else if (!(m = onnxio_message_new(arena, desc))) {
        s = onnxio__fail(arena ? ONNXIO_ERR_NO_MEMORY : ONNXIO_ERR_INVALID_ARGUMENT, "load: cannot create the message");
    } else if ((s = parse_bytes(m, data, size, map, fd, opts, arena, saw_external))) {
        onnxio_message_clear(m);
        onnxio__context(s, "%s", path);
    }
    close(fd);
    onnxio_buffer_unref(map);
    if (s) return s;
    *out = m;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_load_file(const onnxio_message_desc *desc, const char *path,
                                          const onnxio_parse_options *opts, onnxio_arena *arena, void **out)
{
    if (!path || !out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load: NULL argument");
    onnxio__clear_error();
    onnxio_parse_options cfg;
    onnxio_status s = onnxio__parse_config(opts, &cfg);
    if (s) return s;
    return load_mapped(desc, path, &cfg, arena, out, NULL, NULL);
}

ONNXIO_API onnxio_status onnxio_load_model(const char *path, const onnxio_parse_options *opts,
                                           onnxio_arena *arena, onnxio_ModelProto **out)
{
    if (!path || !out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load: NULL argument");
    onnxio__clear_error();
    onnxio_parse_options cfg;
    onnxio_status s = onnxio__parse_config(opts, &cfg);
    if (s) return s;
    opts = &cfg;
    void *m;
    bool saw_external = false, was_archive = false;
    s = load_mapped(&onnxio_desc_ModelProto, path, opts, arena, &m, &saw_external, &was_archive);
    if (s) return s;
    if (!was_archive && saw_external && wants_external(opts)) {
        char *dir = opts->base_dir ? NULL : onnxio__dirname(path);
        const char *base = opts->base_dir ? opts->base_dir : dir;
        if (!base) return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
        s = onnxio__load_external(m, base, opts, path);
        onnxio__free(dir);
        if (s) {
            onnxio_message_clear(m);
            return onnxio__context(s, "%s", path);
        }
    }
    *out = m;
    return ONNXIO_OK;
}

ONNXIO_API onnxio_status onnxio_load_model_from_bytes(const void *data, size_t size, onnxio_buffer *owner,
                                                      const onnxio_parse_options *opts, onnxio_arena *arena,
                                                      onnxio_ModelProto **out)
{
    if (!out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load: NULL argument");
    onnxio__clear_error();
    onnxio_parse_options cfg;
    onnxio_status s = onnxio__parse_config(opts, &cfg);
    if (s) return s;
    void *m;
    if (onnxio_detect_format(data, size) == ONNXIO_FORMAT_ARCHIVE) {
        s = load_archive(data, size, owner, -1, NULL, &cfg, arena, &m);
        *out = s ? NULL : m;
        return s;
    }
    s = onnxio_parse(&onnxio_desc_ModelProto, data, size, owner, opts, arena, &m);
    if (s) return s;
    if (wants_external(&cfg) && cfg.base_dir) {
        s = onnxio_load_external_data(m, opts->base_dir, opts);
        if (s) {
            onnxio_message_clear(m);
            return s;
        }
    }
    *out = m;
    return ONNXIO_OK;
}

/* Writes `msg` to a temporary file beside `path` (*f), structure through a
 * staging buffer, large payloads at their offsets on `pool` (which the
 * caller finishes before committing); the caller commits or aborts *f. */
static onnxio_status write_temp(void *msg, const char *path, int max_depth, onnxio__pool *pool,
                                onnxio__atomic_file *f)
{
    uint64_t size;
    *f = (onnxio__atomic_file){-1, NULL, NULL, NULL};
    onnxio_status s = onnxio__size_pass(msg, max_depth, &size);
    if (s) return onnxio__context(s, "saving %s", path);
    s = onnxio__atomic_open(path, f);
    if (s) return s;
    size_t cap = 1u << 20;
    uint8_t *staging = onnxio__malloc(cap);
    if (!staging) {
        onnxio__atomic_abort(f);
        return onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    }
    onnxio__sink sink = {.buf = staging, .cap = cap, .fd = f->fd, .pool = pool, .threshold = 1, .what = f->tmp_path};
    s = onnxio__encode(msg, &sink);
    if (!s) s = onnxio__sink_flush(&sink);
    onnxio__free(staging);
    if (s) return onnxio__context(s, "saving %s", path);
    return ONNXIO_OK;
}

static onnxio_status write_file(void *msg, const char *path, const onnxio_serialize_options *opts)
{
    onnxio__atomic_file f;
    onnxio__pool *pool;
    onnxio_status s = onnxio__pool_new(opts ? opts->num_threads : 0, &pool);
    if (s) return s;
    s = write_temp(msg, path, opts->max_depth, pool, &f);
    /* Every queued write must be over before the file is synced or removed. */
    onnxio_status s2 = onnxio__pool_finish(pool);
    if (!s && s2) s = onnxio__context(s2, "saving %s", path);
    if (s) {
        onnxio__atomic_abort(&f);
        return s;
    }
    return onnxio__atomic_commit(&f);
}

ONNXIO_API onnxio_status onnxio_save_file(void *msg, const char *path, const onnxio_serialize_options *opts)
{
    if (!msg || !path) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "save: NULL argument");
    onnxio__clear_error();
    onnxio_serialize_options cfg;
    onnxio_status s = onnxio__serialize_config(opts, &cfg);
    if (s) return s;
    return write_file(msg, path, &cfg);
}

ONNXIO_API onnxio_status onnxio_save_model(onnxio_ModelProto *model, const char *path,
                                           const onnxio_serialize_options *opts)
{
    if (!model || !path) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "save: NULL argument");
    onnxio__clear_error();
    if (onnxio_path_is_archive(path)) return onnxio_save_archive(model, path, opts);
    onnxio_serialize_options cfg;
    onnxio_status s = onnxio__serialize_config(opts, &cfg);
    if (s) return s;
    opts = &cfg;
    if (!opts->external_data.location && opts->external_data.all_tensors_to_one_file != ONNXIO_OFF)
        return write_file(model, path, opts);

    /* The caller's model stays as it is: rewrite a copy whose payloads are
     * shared, not copied. */
    onnxio_arena *scratch = onnxio_arena_new();
    onnxio_ModelProto *copy = NULL;
    if (!scratch) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    else if (!(s = onnxio__clone(scratch, model, (void **)&copy))) {
        /* Every file is written in full before any replaces anything. */
        onnxio__data_files *data = NULL;
        if (!(s = onnxio__save_external(scratch, copy, path, opts, &data))) {
            onnxio__atomic_file model_file;
            onnxio__pool *pool = NULL;
            if (!(s = onnxio__pool_new(opts->num_threads, &pool))) {
                s = write_temp(copy, path, opts->max_depth, pool, &model_file);
                onnxio_status s2 = onnxio__pool_finish(pool);
                if (!s && s2) s = onnxio__context(s2, "saving %s", path);
                if (s) onnxio__atomic_abort(&model_file);
            }
            if (s) onnxio__data_files_abort(data);
            else if ((s = onnxio__data_files_commit(data))) onnxio__atomic_abort(&model_file);
            else s = onnxio__atomic_commit(&model_file);
        }
    }
    onnxio_arena_unref(scratch);
    return s;
}
