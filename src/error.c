/* The thread's last error message (DESIGN.md "Errors"). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static _Thread_local char last_error[1024];

onnxio_status onnxio__fail(onnxio_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
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

void onnxio__clear_error(void) { last_error[0] = '\0'; }

ONNXIO_API const char *onnxio_last_error(void) { return last_error; }

ONNXIO_API const char *onnxio_status_name(onnxio_status status)
{
    switch (status) {
    case ONNXIO_OK: return "ONNXIO_OK";
    case ONNXIO_ERR_INVALID_ARGUMENT: return "ONNXIO_ERR_INVALID_ARGUMENT";
    case ONNXIO_ERR_NO_MEMORY: return "ONNXIO_ERR_NO_MEMORY";
    case ONNXIO_ERR_DECODE: return "ONNXIO_ERR_DECODE";
    case ONNXIO_ERR_DEPTH: return "ONNXIO_ERR_DEPTH";
    case ONNXIO_ERR_IO: return "ONNXIO_ERR_IO";
    case ONNXIO_ERR_NOT_FOUND: return "ONNXIO_ERR_NOT_FOUND";
    case ONNXIO_ERR_PATH_ABSOLUTE: return "ONNXIO_ERR_PATH_ABSOLUTE";
    case ONNXIO_ERR_PATH_PARENT: return "ONNXIO_ERR_PATH_PARENT";
    case ONNXIO_ERR_PATH_ESCAPES: return "ONNXIO_ERR_PATH_ESCAPES";
    case ONNXIO_ERR_EXTERNAL_RANGE: return "ONNXIO_ERR_EXTERNAL_RANGE";
    case ONNXIO_ERR_EXTERNAL_DATA: return "ONNXIO_ERR_EXTERNAL_DATA";
    case ONNXIO_ERR_MISSING_PAYLOAD: return "ONNXIO_ERR_MISSING_PAYLOAD";
    case ONNXIO_ERR_PATH_LINK: return "ONNXIO_ERR_PATH_LINK";
    case ONNXIO_ERR_PATH_SELF: return "ONNXIO_ERR_PATH_SELF";
    case ONNXIO_ERR_CHECKSUM: return "ONNXIO_ERR_CHECKSUM";
    case ONNXIO_ERR_ARCHIVE: return "ONNXIO_ERR_ARCHIVE";
    }
    return "ONNXIO_ERR_UNKNOWN";
}
