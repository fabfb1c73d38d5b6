#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define GR_ERROR_CAP 1024

static _Thread_local char error_message[GR_ERROR_CAP];

int gr_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error_message, sizeof error_message, fmt, ap);
    va_end(ap);
    return code;
}

int gr_error_wrap(int code, const char *fmt, ...)
{
    char previous[GR_ERROR_CAP];
    char prefix[GR_ERROR_CAP];
    va_list ap;

    memcpy(previous, error_message, sizeof previous);
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* prefix, then ": " and the previous message, cut to fit. */
    size_t len = strlen(prefix);
    memcpy(error_message, prefix, len + 1);
    if (previous[0] != '\0') {
        const char *parts[2] = {": ", previous};
        for (int i = 0; i < 2; i++) {
            size_t room = sizeof error_message - 1 - len;
            size_t n = strlen(parts[i]);
            n = n < room ? n : room;
            memcpy(error_message + len, parts[i], n);
            len += n;
            error_message[len] = '\0';
        }
    }
    return code;
}

const char *gr_last_error(void) { return error_message; }

void gr_clear_error(void) { error_message[0] = '\0'; }

const char *gr_status_name(int code)
{
    switch (code) {
    case GR_OK: return "ok";
    case GR_EINVAL: return "invalid input";
    case GR_EIO: return "I/O error";
    case GR_ENOMEM: return "out of memory";
    case GR_EFORMAT: return "malformed file";
    case GR_EEXIST: return "file exists";
    case GR_EUNSUPPORTED: return "unsupported";
    case GR_EDEVICE: return "device error";
    default: return "unknown error";
    }
}
