/* The public load, parse and save entry points (docs/design.md, "api"):
 * each reads its options once (options.c), then drives the codec, the
 * containers, the load pipeline (load.c) and the save pipeline (save.c).
 * Nothing here knows a file format rule. */
#include <string.h>
#include <unistd.h>

#include "io/save.h"

/* A load's expansion budget, from the resolved options. */
static onnxio__budget budget_for(const onnxio_parse_options *cfg)
{
    return (onnxio__budget){cfg->max_expansion, 0, 0, 0};
}

/* Parses `size` bytes at `data` into `msg`. `fd` >= 0 says the bytes are
 * that whole file, so that copies can be preads (the mapping's pages are
 * then never touched, and never count against the process). Payloads are
 * moved on the pool while the structure is parsed; the arena may grow only
 * as far as the budget allows. `opts` is resolved. */
/* Progress (progress.c): the operation's progress and, for a load, its
 * cancel poll, made current for the calling thread while it runs. */
typedef struct progress_scope {
    bool idle; /* nothing entered (onnxio__progress_idle) */
    onnxio__progress progress;
    onnxio__progress *saved;
    onnxio__cancel cancel;
    onnxio__cancel *saved_cancel;
} progress_scope;

static void load_begin(progress_scope *ps, const onnxio_parse_options *cfg)
{
    /* A parse without either, nothing else watched: 8 ns of a 60 ns parse
     * of a small model less. */
    if ((ps->idle = onnxio__progress_idle(cfg->progress, cfg->cancel))) return;
    onnxio__progress_enter(&ps->progress, cfg->progress, cfg->progress_user, &ps->saved);
    onnxio__cancel_enter(&ps->cancel, cfg->cancel, cfg->cancel_user, &ps->saved_cancel);
}

/* A save has no cancel poll but its progress callback's return. */
static void save_begin(progress_scope *ps, const onnxio_serialize_options *cfg)
{
    ps->idle = false;
    onnxio__progress_enter(&ps->progress, cfg->progress, cfg->progress_user, &ps->saved);
    onnxio__cancel_enter(&ps->cancel, NULL, NULL, &ps->saved_cancel);
}

static void scope_leave(progress_scope *ps)
{
    if (ps->idle) return;
    onnxio__progress_leave(&ps->saved);
    onnxio__cancel_leave(&ps->saved_cancel);
}

/* The last call (done == total) of a successful operation, then the end of
 * the scope. */
static onnxio_status progress_end(progress_scope *ps, onnxio_status s)
{
    if (!s && !ps->idle) s = onnxio__progress_report(onnxio__progress_now(), true);
    scope_leave(ps);
    return s;
}

/* A copy load of the file `fd` (-1: bytes in memory) that keeps every
 * payload: no payload_fn to skip or place some, no skip_raw_data. */
static bool copies_every_payload(const onnxio_parse_options *opts, int fd)
{
    return fd >= 0 && !opts->no_copy && !opts->skip_raw_data && !opts->payload_fn;
}

/* Whether a load with these options of the file `fd` (-1: bytes in
 * memory) of `size` bytes maps it to be read whole (onnxio__map_whole): a
 * copy load of a file of at most ONNXIO__WHOLE_MAX bytes that keeps every
 * payload (copies_every_payload). With
 * direct reads too: the pool then reads directly only the payload ranges
 * that the parse's folios left mostly uncached (a cold 0.5 GiB `.onnx`:
 * 0.199-0.228 s, against 0.224-0.256 s with the parse faulting single
 * pages). */
static bool reads_whole(const onnxio_parse_options *opts, int fd, size_t size)
{
    return copies_every_payload(opts, fd) && size <= ONNXIO__WHOLE_MAX;
}

/* What both cold whole reads below need: a copy load of the file `fd` that
 * keeps every payload, with direct reads on, no progress callback (its
 * total is the payload bytes, known only once the model is parsed), the
 * file mostly out of the page cache. */
static bool cold_whole(const onnxio_parse_options *opts, int fd, size_t size)
{
    return copies_every_payload(opts, fd) && !opts->progress && opts->direct_io == ONNXIO_ON &&
           onnxio__file_cold(fd, 0, size);
}

/* The decoder's payload interface: payload.c places each payload. The
 * payloads' state is made with the first payload, so that a parse of a
 * model without any (most small models) makes none. */
typedef struct lazy_payloads {
    onnxio__payloads *payloads;
    const onnxio_parse_options *opts;
    onnxio__budget *budget;
    onnxio_buffer *in_place; /* the input, when its payloads stay in it */
    /* Where the input is: its owner (no_copy), its start, and the file it
     * is the whole of (-1: none), so that a payload can be read from it. */
    onnxio_buffer *owner;
    const uint8_t *base;
    int fd;
} lazy_payloads;

static onnxio_status payloads_make(lazy_payloads *lp)
{
    if (lp->payloads) return ONNXIO_OK;
    onnxio_status s = onnxio__payloads_new(lp->opts, NULL, lp->budget, &lp->payloads);
    if (!s && lp->in_place) onnxio__payloads_in_place(lp->payloads, lp->in_place);
    return s;
}

static onnxio_status take_payload(void *ctx, onnxio_TensorProto *tensor, const uint8_t *data, size_t size)
{
    lazy_payloads *lp = ctx;
    onnxio_status s = payloads_make(lp);
    if (s) return s;
    onnxio__payload_src src = {.data = data, .owner = lp->owner, .fd = lp->fd,
                               .offset = (uint64_t)(data - lp->base), .size = size};
    return onnxio__payload_take(lp->payloads, tensor, &src);
}

static onnxio_status parse_bytes(void *msg, const void *data, size_t size, onnxio_buffer *owner, int fd, bool mapped,
                                 bool in_place, const onnxio_parse_options *opts, onnxio_arena *arena,
                                 onnxio__budget *budget, bool *saw_external)
{
    onnxio_status s;
    const uint8_t *base = data ? data : (const void *)"";
    lazy_payloads payloads = {NULL, opts, budget, in_place ? owner : NULL, owner, base, opts->no_copy ? -1 : fd};
    bool map_advice = mapped && data && size;
    onnxio__read_ahead ahead;
    onnxio__read_ahead_init(&ahead, data, size);
    /* In place, the state gives back the parts of the input no payload
     * holds, also when none does. */
    if (in_place && (s = payloads_make(&payloads))) return s;
    onnxio__arena_expect(arena, size);
    size_t before = onnxio_arena_used(arena);
    uint64_t left = onnxio__budget_left(budget);
    left = left < UINT64_MAX - budget->merge_credit ? left + budget->merge_credit : UINT64_MAX;
    onnxio__arena_limit(arena, left < SIZE_MAX - before ? before + (size_t)left : 0);
    onnxio__decode_config cfg = {
        .arena = arena,
        .owner = owner,
        .base = base,
        .skip_raw_data = opts->skip_raw_data,
        .max_depth = opts->max_depth,
        .payload = take_payload,
        .payload_ctx = &payloads,
        .reached = map_advice ? onnxio__read_ahead_reached : NULL,
        .reached_ctx = &ahead,
        .saw_external = saw_external,
    };
    /* A load that copies every payload out of a file reads all of it;
     * otherwise only the structure is read (decode.c reads ahead of the
     * parse itself). */
    if (map_advice && reads_whole(opts, payloads.fd, size)) onnxio__map_whole(data, size);
    else if (map_advice) onnxio__map_random(data, size, true);
    s = onnxio__decode(&cfg, msg, data, size);
    if (map_advice) onnxio__map_random(data, size, false);
    /* The payloads' total is known; a model with external tensors adds
     * theirs first (load.c). */
    if (!(saw_external && *saw_external && opts->load_external_data != ONNXIO_OFF))
        onnxio__progress_ready(onnxio__progress_now());
    onnxio__arena_limit(arena, 0);
    /* What the new bytes made: the growth past the merge's credit. */
    size_t grown = onnxio_arena_used(arena) - before;
    budget->used += grown > budget->merge_credit ? grown - budget->merge_credit : 0;
    if (payloads.payloads) {
        if (!s) s = onnxio__payloads_resolve(payloads.payloads);
        onnxio_status s2 = onnxio__payloads_finish(payloads.payloads);
        onnxio__payloads_free(payloads.payloads);
        if (!s) s = s2;
    }
    /* Text handed to a binary reader fails as whatever its bytes make of
     * protobuf (a bad tag, groups nested too deep, a length past the end);
     * say what it is instead, and what reads it. */
    const char *hint;
    if ((s == ONNXIO_ERR_DECODE || s == ONNXIO_ERR_DEPTH || s == ONNXIO_ERR_EXPANSION) &&
        (hint = onnxio__text_hint(data, size)))
        onnxio__context(s, "%s", hint);
    return s;
}

static onnxio_status new_message(onnxio_arena *arena, const onnxio_message_desc *desc, void **out)
{
    *out = arena ? onnxio_message_new(arena, desc) : NULL;
    if (!*out) return onnxio__fail(arena ? ONNXIO_ERR_NO_MEMORY : ONNXIO_ERR_INVALID_ARGUMENT, "load: cannot create the message");
    return ONNXIO_OK;
}

/* Parses into `msg`; `merge`: it may hold fields already (the public
 * onnxio_parse_into), whose arrays the budget does not charge to `data`. */
static onnxio_status parse_into(void *msg, const void *data, size_t size, onnxio_buffer *owner,
                                const onnxio_parse_options *opts, onnxio_arena *arena, bool merge)
{
    onnxio__clear_error();
    if (!msg || !arena || (!data && size)) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "parse: NULL argument");
    onnxio_parse_options cfg;
    onnxio_status s = onnxio__parse_config(opts, &cfg);
    if (s) return s;
    onnxio__budget budget = budget_for(&cfg);
    budget.input = size;
    if (merge) budget.merge_credit = onnxio_arena_used(arena);
    progress_scope ps;
    load_begin(&ps, &cfg);
    s = parse_bytes(msg, data, size, owner, -1, false, false, &cfg, arena, &budget, NULL);
    return progress_end(&ps, s);
}

ONNXIO_API onnxio_status onnxio_parse_into(void *msg, const void *data, size_t size, onnxio_buffer *owner,
                                           const onnxio_parse_options *opts, onnxio_arena *arena)
{
    return parse_into(msg, data, size, owner, opts, arena, true);
}

ONNXIO_API onnxio_status onnxio_parse(const onnxio_message_desc *desc, const void *data, size_t size,
                                      onnxio_buffer *owner, const onnxio_parse_options *opts,
                                      onnxio_arena *arena, void **out)
{
    if (!out || !desc) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "parse: NULL argument");
    *out = NULL;
    void *m;
    /* The root goes in the block sized for the tree (as parse_bytes asks),
     * not in a first block of its own. */
    if (arena) onnxio__arena_expect(arena, size);
    onnxio_status s = new_message(arena, desc, &m);
    if (s) return s;
    if ((s = parse_into(m, data, size, owner, opts, arena, false))) {
        onnxio_message_clear(m);
        return s;
    }
    *out = m;
    return ONNXIO_OK;
}

/* Reads the payloads of the external tensors under `root` from `c`. */
static onnxio_status load_from(onnxio__container *c, onnxio_message *root, const onnxio_parse_options *cfg,
                               onnxio__budget *budget)
{
    onnxio_status s = onnxio__load_external_payloads(root, c, cfg, budget);
    onnxio__container_close(c);
    return s;
}

/* Whether a load with these options of the single file `fd` of `size`
 * bytes reads it whole into memory with direct reads first
 * (onnxio__read_whole) and parses it there, its payloads made aligned in
 * place (onnxio__payloads_in_place): cold_whole, a file of at most
 * ONNXIO__WHOLE_MAX bytes, an alignment of at most 64. The device writes
 * every byte where it stays, and each payload moves by a few bytes in
 * memory: a cold 0.5 GiB .onnx took 0.293 s mapped whole and 0.248 s so
 * (the moves on 2 cores 0.02 s of it), `cat` 0.259 s. Above
 * ONNXIO__WHOLE_MAX the moves would cost more than the per-payload direct
 * reads save (3.5 and 16 GiB loads already run at 0.6-0.75x `cat`). */
static bool reads_file_whole(const onnxio_parse_options *opts, int fd, size_t size)
{
    return size <= ONNXIO__WHOLE_MAX && opts->alignment <= 64 && cold_whole(opts, fd, size);
}

/* Whether a load with these options of the archive file `fd` of `size`
 * bytes reads it whole into memory with direct reads first
 * (onnxio__archive_read): cold_whole, external data loaded. Its entries
 * are 64-byte aligned in the file, so in a buffer laid out as the file
 * each payload is in place, aligned, and the device writes it there: a
 * cold 0.5 GiB archive took 0.308 s read entry by entry and 0.249 s so,
 * `cat` 0.259 s. A warm archive is read as before, entry by entry out of
 * the page cache. */
static bool reads_archive_whole(const onnxio_parse_options *opts, int fd, size_t size)
{
    return opts->load_external_data != ONNXIO_OFF && cold_whole(opts, fd, size);
}

/* Loads the .onnxz archive in `data` (docs/onnxz.md): its __MODEL_PROTO
 * parsed as a model file is, then every external tensor loaded from its
 * entry. */
static onnxio_status load_archive(const uint8_t *data, size_t size, onnxio_buffer *owner, int fd,
                                  const onnxio_parse_options *cfg, onnxio_arena *arena, onnxio__budget *budget,
                                  void **out)
{
    onnxio_archive *a = NULL;
    onnxio_status s = ONNXIO_OK;
    if (reads_archive_whole(cfg, fd, size)) s = onnxio__archive_read(fd, size, NULL, cfg, &a);
    bool read = a != NULL;
    if (!s && !read) s = onnxio__archive_open(data, size, owner, fd, NULL, reads_whole(cfg, fd, size), &a);
    if (s) return s;
    const onnxio_archive_entry *me = onnxio__archive_model(a);
    const uint8_t *model_data;
    onnxio_buffer *model_owner = NULL;
    void *m = NULL;
    bool saw_external = false;
    budget->input += me->compressed_size;
    if (!(s = onnxio__archive_entry_bytes(a, me, cfg->verify_crc == ONNXIO_ON, budget, &model_data, &model_owner)) &&
        !(s = new_message(arena, &onnxio_desc_ModelProto, &m))) {
        if ((s = parse_bytes(m, model_data, (size_t)me->size, model_owner, -1, fd >= 0 && !read && model_owner == owner,
                             false, cfg, arena, budget, &saw_external)))
            onnxio__context(s, "entry " ONNXIO__MODEL_ENTRY);
        else if (saw_external && cfg->load_external_data != ONNXIO_OFF) {
            onnxio__container *c;
            if (!(s = onnxio__zip_container(a, cfg, read, &c))) s = load_from(c, m, cfg, budget);
        }
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

/* Reads the external payloads under the model `m` of the file `path`
 * (open as `fd`) from its directory or base_dir, then asks whether a save
 * crossed the load (*crossed: checked after a failure too, since a data
 * file of another save fails checks). */
static onnxio_status load_beside(onnxio_message *m, const char *path, int fd, const onnxio_parse_options *cfg,
                                 onnxio__budget *budget, bool *crossed)
{
    char *dir = onnxio__model_dir(path, cfg->base_dir);
    onnxio__container *c;
    onnxio_status s;
    if (!dir) s = onnxio__fail(ONNXIO_ERR_NO_MEMORY, "out of memory");
    else if (!(s = onnxio__dir_container(dir, path, cfg, &c))) s = load_from(c, m, cfg, budget);
    onnxio__free(dir);
    *crossed = onnxio__save_crossed(path, fd);
    return s;
}

static onnxio_status find_external(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    (void)parent;
    (void)via;
    if (onnxio__is_external((const onnxio_TensorProto *)msg)) *(bool *)ctx = true;
    return ONNXIO_OK;
}

/* The text route of a file load (onnxio__reads_text): the message of
 * `size` bytes at `data` read as text in `style`; *saw_external: a model
 * with external tensors, whose data the caller reads as for a binary
 * file. The text's raw_data are owned copies: the progress counts no
 * payload bytes of its own, only its external ones. */
static onnxio_status read_text(const onnxio_message_desc *desc, const uint8_t *data, size_t size,
                               onnxio_text_style style, const onnxio_parse_options *cfg, onnxio_arena *arena,
                               onnxio__budget *budget, void **out, bool *saw_external)
{
    onnxio__clear_error();
    size_t before = onnxio_arena_used(arena);
    onnxio_status s = onnxio__parse_text(desc, data, size, style, cfg, arena, out);
    if (s) return s;
    if (desc == &onnxio_desc_ModelProto && cfg->load_external_data != ONNXIO_OFF)
        s = onnxio__visit(*out, &onnxio_desc_TensorProto, find_external, saw_external);
    if (!*saw_external) onnxio__progress_ready(onnxio__progress_now());
    budget->input = size;
    budget->used += onnxio_arena_used(arena) - before;
    return s;
}

/* Loads a whole file: mapped, and in no_copy mode payloads keep the
 * mapping alive. The file is read as onnxio_detect_kind says (its content
 * first, its name second): an .onnxz archive (a model file), text, or
 * binary protobuf, and text when binary protobuf refuses text; a model's
 * external data is read from beside it (or base_dir). *crossed: a save of
 * the file replaced files while the load opened them
 * (onnxio__save_crossed): the result is discarded and the caller starts
 * again. */
static onnxio_status load_once(const onnxio_message_desc *desc, const char *path, onnxio_parse_options *cfg,
                               onnxio_arena *arena, void **out, bool *crossed)
{
    *out = NULL;
    *crossed = false;
    bool model = desc == &onnxio_desc_ModelProto;
    /* A save of this file that died: finish or undo it before reading; a
     * save in progress: wait for it. */
    onnxio_status s;
    if ((s = onnxio__recover(path))) return s;
    onnxio_buffer *map;
    int fd;
    if ((s = onnxio__map_file(path, &map, &fd))) return s;
    /* Random access until a parse reads its own way ahead (decode.c): the
     * first look at the file (its format) must not read 8 MiB around it. */
    onnxio__map_random(onnxio_buffer_data(map), onnxio_buffer_size(map), true);
    const uint8_t *data = onnxio_buffer_data(map);
    size_t size = onnxio_buffer_size(map);
    onnxio__budget budget = budget_for(cfg);
    void *m = NULL;
    bool saw_external = false;
    onnxio_file_kind kind = onnxio__detect_kind(data, size, size, onnxio_path_extension(path));
    if (model && kind.format == ONNXIO_FORMAT_ARCHIVE) {
        /* One file: one save's, whatever happens beside it. */
        s = load_archive(data, size, map, fd, cfg, arena, &budget, &m);
    } else {
        bool text = onnxio__reads_text(&kind, ONNXIO_OK);
        if (!text && !(s = new_message(arena, desc, &m))) {
            budget.input = size;
            onnxio_buffer *whole = NULL;
            if (reads_file_whole(cfg, fd, size)) s = onnxio__read_whole(fd, size, "the file", cfg, &whole);
            if (!s)
                s = whole ? parse_bytes(m, onnxio_buffer_data(whole), size, whole, -1, false, true, cfg, arena,
                                        &budget, model ? &saw_external : NULL)
                          : parse_bytes(m, data, size, map, fd, true, false, cfg, arena, &budget,
                                        model ? &saw_external : NULL);
            onnxio_buffer_unref(whole);
            /* Text that binary protobuf refuses: read as the text it is. */
            if (s && (text = onnxio__reads_text(&kind, s))) {
                onnxio_message_clear(m);
                m = NULL;
                budget = budget_for(cfg);
                saw_external = false;
            }
        }
        if (text) s = read_text(desc, data, size, kind.text_style, cfg, arena, &budget, &m, &saw_external);
        if (!s && saw_external && cfg->load_external_data != ONNXIO_OFF)
            s = load_beside(m, path, fd, cfg, &budget, crossed);
        if ((s || *crossed) && m) {
            onnxio_message_clear(m);
            m = NULL;
        }
    }
    if (s) onnxio__context(s, "%s", path);
    onnxio__close(fd);
    onnxio_buffer_unref(map);
    if (s || *crossed) return s;
    *out = m;
    return ONNXIO_OK;
}

static onnxio_status load_path(const onnxio_message_desc *desc, const char *path, const onnxio_parse_options *opts,
                               onnxio_arena *arena, void **out)
{
    *out = NULL;
    onnxio_parse_options cfg;
    onnxio_status s = onnxio__parse_config(opts, &cfg);
    if (s) return s;
    progress_scope ps;
    load_begin(&ps, &cfg);
    bool crossed = true;
    for (int attempt = 0; crossed && attempt < ONNXIO__LOAD_ATTEMPTS; attempt++) {
        onnxio__clear_error();
        s = load_once(desc, path, &cfg, arena, out, &crossed);
    }
    if (crossed)
        s = onnxio__fail(ONNXIO_ERR_IO, "%s: saves kept replacing its files while it was loaded (%d attempts)", path,
                         ONNXIO__LOAD_ATTEMPTS);
    if ((s = progress_end(&ps, s)) && *out) {
        onnxio_message_clear(*out);
        *out = NULL;
    }
    return s;
}

ONNXIO_API onnxio_status onnxio_load_file(const onnxio_message_desc *desc, const char *path,
                                          const onnxio_parse_options *opts, onnxio_arena *arena, void **out)
{
    if (!path || !out || !desc) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load: NULL argument");
    onnxio__clear_error();
    return load_path(desc, path, opts, arena, out);
}

ONNXIO_API onnxio_status onnxio_load_model(const char *path, const onnxio_parse_options *opts,
                                           onnxio_arena *arena, onnxio_ModelProto **out)
{
    if (!path || !out) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load: NULL argument");
    onnxio__clear_error();
    return load_path(&onnxio_desc_ModelProto, path, opts, arena, (void **)out);
}

ONNXIO_API onnxio_status onnxio_load_model_from_bytes(const void *data, size_t size, onnxio_buffer *owner,
                                                      const onnxio_parse_options *opts, onnxio_arena *arena,
                                                      onnxio_ModelProto **out)
{
    if (!out || (!data && size)) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load: NULL argument");
    *out = NULL;
    onnxio__clear_error();
    onnxio_parse_options cfg;
    onnxio_status s = onnxio__parse_config(opts, &cfg);
    if (s) return s;
    onnxio__budget budget = budget_for(&cfg);
    void *m = NULL;
    progress_scope ps;
    load_begin(&ps, &cfg);
    if (onnxio_detect_format(data, size) == ONNXIO_FORMAT_ARCHIVE) {
        s = load_archive(data, size, owner, -1, &cfg, arena, &budget, &m);
    } else if (!(s = new_message(arena, &onnxio_desc_ModelProto, &m))) {
        bool saw_external = false;
        budget.input = size;
        /* Without base_dir no external data is read. */
        if (!cfg.base_dir) cfg.load_external_data = ONNXIO_OFF;
        s = parse_bytes(m, data, size, owner, -1, false, false, &cfg, arena, &budget, &saw_external);
        if (!s && saw_external && cfg.load_external_data != ONNXIO_OFF) {
            onnxio__container *c;
            if (!(s = onnxio__dir_container(cfg.base_dir, NULL, &cfg, &c))) s = load_from(c, m, &cfg, &budget);
        }
    }
    if ((s = progress_end(&ps, s))) {
        if (m) onnxio_message_clear(m);
        return s;
    }
    *out = m;
    return ONNXIO_OK;
}

/* Loads the external payloads under `root` from base_dir. */
static onnxio_status load_external(onnxio_message *root, const char *base_dir, const onnxio_parse_options *opts)
{
    onnxio_parse_options cfg;
    onnxio_status s = onnxio__parse_config(opts, &cfg);
    if (s) return s;
    onnxio__budget budget = budget_for(&cfg);
    onnxio__container *c;
    if ((s = onnxio__dir_container(base_dir, NULL, &cfg, &c))) return s;
    progress_scope ps;
    load_begin(&ps, &cfg);
    return progress_end(&ps, load_from(c, root, &cfg, &budget));
}

ONNXIO_API onnxio_status onnxio_load_external_data(onnxio_ModelProto *model, const char *base_dir,
                                                   const onnxio_parse_options *opts)
{
    if (!model || !base_dir) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load_external_data: NULL argument");
    onnxio__clear_error();
    return load_external(&model->base, base_dir, opts);
}

ONNXIO_API onnxio_status onnxio_load_tensor_external_data(onnxio_TensorProto *tensor, const char *base_dir,
                                                          const onnxio_parse_options *opts)
{
    if (!tensor || !base_dir)
        return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "load_tensor_external_data: NULL argument");
    onnxio__clear_error();
    /* A TensorProto holds no other TensorProto: the visit is this tensor. */
    return load_external(&tensor->base, base_dir, opts);
}

/* ---- save ------------------------------------------------------------------ */

/* Each tensor's loaded raw_data into the save's budget. */
static onnxio_status add_payload(onnxio_message *msg, onnxio_message *parent, const onnxio_field_desc *via, void *ctx)
{
    (void)parent;
    (void)via;
    const onnxio_TensorProto *t = (const onnxio_TensorProto *)msg;
    if (!onnxio_has(t, ONNXIO_FIELD_TensorProto_raw_data)) return ONNXIO_OK;
    return onnxio__save_budget_add(ctx, t->raw_data.data, t->raw_data.size);
}

/* One walk of the tree before a save: the progress total of `p` (NULL:
 * none; the loaded raw_data bytes of every tensor), and the save's budget
 * (onnxio__save_budget_check, what bounds a load's memory bounds a save's
 * output). */
static onnxio_status save_payloads(void *msg, const char *path, uint64_t ratio, onnxio__progress *p)
{
    if (ratio == UINT64_MAX && !p) return ONNXIO_OK;
    onnxio__save_budget b = {0};
    onnxio_status s = onnxio__visit(msg, &onnxio_desc_TensorProto, add_payload, &b);
    if (s) {
        onnxio__save_budget_free(&b);
        if (s == ONNXIO_ERR_NO_MEMORY) return s;
        /* Deeper than any save writes: the writer refuses it with its own
         * max_depth message (with progress, the walk's). */
        return p ? s : (onnxio__clear_error(), ONNXIO_OK);
    }
    onnxio__progress_total(p, b.written);
    onnxio__progress_ready(p);
    return onnxio__save_budget_check(&b, path, ratio);
}

/* The three save entry points: arguments, options, then the pipeline. */
typedef enum save_kind { SAVE_MESSAGE, SAVE_MODEL, SAVE_ARCHIVE } save_kind;

static onnxio_status save(void *msg, const char *path, const onnxio_serialize_options *opts, save_kind kind)
{
    if (!msg || !path) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "save: NULL argument");
    onnxio__clear_error();
    if (kind == SAVE_MODEL && onnxio_path_is_archive(path)) kind = SAVE_ARCHIVE;
    onnxio_serialize_options cfg;
    onnxio_status s = kind == SAVE_ARCHIVE ? onnxio__archive_save_config(opts, &cfg) : onnxio__serialize_config(opts, &cfg);
    if (s) return s;
    progress_scope ps;
    save_begin(&ps, &cfg);
    if ((s = save_payloads(msg, path, cfg.max_expansion, onnxio__progress_now()))) return progress_end(&ps, s);
    /* save.c makes the last progress call before it commits. */
    s = onnxio__save(msg, path, &cfg, onnxio__writer_for(&cfg, kind != SAVE_MESSAGE, kind == SAVE_ARCHIVE), NULL, NULL);
    scope_leave(&ps);
    return s;
}

ONNXIO_API onnxio_status onnxio_save_file(void *msg, const char *path, const onnxio_serialize_options *opts)
{
    return save(msg, path, opts, SAVE_MESSAGE);
}

ONNXIO_API onnxio_status onnxio_save_archive(onnxio_ModelProto *model, const char *path, const onnxio_serialize_options *opts)
{
    return save(model, path, opts, SAVE_ARCHIVE);
}

ONNXIO_API onnxio_status onnxio_save_model(onnxio_ModelProto *model, const char *path,
                                           const onnxio_serialize_options *opts)
{
    return save(model, path, opts, SAVE_MODEL);
}
