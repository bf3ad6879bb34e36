/* The thread's last error message, the statuses' names and meanings (from
 * status.def) and the library version (docs/design.md "Errors"). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/sys.h"

static _Thread_local char last_error[1024];
static _Thread_local int last_errno;

/* Whether `text` ends with `tail`. */
static bool ends_with(const char *text, const char *tail)
{
    size_t n = strlen(text), m = strlen(tail);
    return m && n >= m && memcmp(text + n - m, tail, m) == 0;
}

onnxio_status onnxio__fail(onnxio_status status, const char *fmt, ...)
{
    int err = errno; /* the cause, when the message states it: before vsnprintf can change it */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    last_errno = (status == ONNXIO_ERR_IO || status == ONNXIO_ERR_NOT_FOUND) && err && ends_with(last_error, strerror(err))
                     ? err
                     : 0;
    return status;
}

onnxio_status onnxio__fail_errno(onnxio_status status, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    last_errno = err;
    return status;
}

onnxio_status onnxio__context(onnxio_status status, const char *fmt, ...)
{
    char prefix[512], old[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_error, sizeof old);
    size_t n = strlen(prefix);
    if (n > sizeof last_error - 3) n = sizeof last_error - 3;
    memcpy(last_error, prefix, n);
    memcpy(last_error + n, ": ", 2);
    size_t room = sizeof last_error - n - 3;
    size_t m = strnlen(old, room);
    memcpy(last_error + n + 2, old, m);
    last_error[n + 2 + m] = '\0';
    return status;
}

void onnxio__clear_error(void)
{
    last_error[0] = '\0';
    last_errno = 0;
}

ONNXIO_API const char *onnxio_last_error(void) { return last_error; }

ONNXIO_API int onnxio_last_errno(void) { return last_errno; }

ONNXIO_API const char *onnxio_status_name(onnxio_status status)
{
    switch (status) {
#define ONNXIO_STATUS(name, number, cls, message) \
    case ONNXIO_##name: return "ONNXIO_" #name;
#include "onnxio/status.def"
#undef ONNXIO_STATUS
    }
    return "ONNXIO_ERR_UNKNOWN";
}

ONNXIO_API const char *onnxio_status_message(onnxio_status status)
{
    switch (status) {
#define ONNXIO_STATUS(name, number, cls, message) \
    case ONNXIO_##name: return message;
#include "onnxio/status.def"
#undef ONNXIO_STATUS
    }
    return "unknown status";
}

ONNXIO_API const char *onnxio_version(void) { return ONNXIO_VERSION_STRING; }

ONNXIO_API unsigned onnxio_version_number(void) { return ONNXIO_VERSION_NUMBER; }
