/* Replacing the model entry of an .onnxz archive (onnxio_archive_replace_model):
 * the archive opened and locked, every external reference of the new
 * model checked against the archive's entries (the load pipeline's
 * checks, loading nothing), the model serialized; zip.c then appends it
 * and switches the directory in one step. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "io/container.h"

/* Checks that every tensor of `model` still external names an entry of the
 * archive, with an offset and length inside it and matching its type and
 * shape: the load pipeline's checks, loading nothing. */
static onnxio_status check_refs(onnxio_archive *a, onnxio_ModelProto *model)
{
    onnxio_parse_options opts;
    onnxio_status s = onnxio__parse_config(NULL, &opts);
    if (s) return s;
    opts.skip_raw_data = true;
    onnxio__container *c;
    if ((s = onnxio__zip_container(a, &opts, false, &c))) return s;
    onnxio__budget budget = {UINT64_MAX, 0, 0, 0};
    s = onnxio__load_external_payloads(&model->base, c, &opts, &budget);
    onnxio__container_close(c);
    return s;
}

ONNXIO_API onnxio_status onnxio_archive_replace_model(const char *path, onnxio_ModelProto *model,
                                                      const onnxio_serialize_options *opts)
{
    if (!model || !path) return onnxio__fail(ONNXIO_ERR_INVALID_ARGUMENT, "archive_replace_model: NULL argument");
    onnxio__clear_error();
    onnxio_serialize_options cfg;
    onnxio_status s = onnxio__archive_save_config(opts, &cfg);
    if (s) return s;
    int fd = onnxio__sys_openat(AT_FDCWD, path, O_RDWR, 0);
    if (fd < 0) {
        int err = errno;
        return onnxio__fail(onnxio__errno_status(err), "cannot open %s: %s", path, strerror(err));
    }
    onnxio_buffer *map = NULL, *model_buf = NULL;
    onnxio_archive *a = NULL;
    onnxio__zip_replace r = {0};
    /* One writer at a time. */
    if (onnxio__sys_flock(fd, LOCK_EX | LOCK_NB) != 0) {
        s = onnxio__fail(ONNXIO_ERR_IO, "%s is being written by another process", path);
        goto done;
    }
    if ((s = onnxio__map_fd(fd, path, &map))) goto done;
    if ((s = onnxio__archive_open(onnxio_buffer_data(map), onnxio_buffer_size(map), map, fd, path, false, &a))) goto done;
    if ((s = check_refs(a, model))) goto done;
    if ((s = onnxio__serialize(model, cfg.max_depth, &model_buf))) goto done;
    if ((s = onnxio__zip_replace_prepare(a, &r))) goto done;
    /* Unmapped before the file is cut (Windows refuses to shrink a mapped
     * file). */
    onnxio_archive_close(a);
    onnxio_buffer_unref(map);
    a = NULL;
    map = NULL;
    s = onnxio__zip_replace_model_entry(fd, path, &r, onnxio_buffer_data(model_buf), onnxio_buffer_size(model_buf),
                                        cfg.fsync != ONNXIO_OFF);
done:
    if (s) s = onnxio__context(s, "replacing the model of %s", path);
    onnxio__zip_replace_free(&r);
    onnxio_archive_close(a);
    onnxio_buffer_unref(map);
    onnxio_buffer_unref(model_buf);
    onnxio__close(fd);
    return s;
}
