/* core/error.h — grove's error convention.
 *
 * Functions that can fail on input return int: 0 on success or a negative
 * GR_E* code, and leave a human-readable message for gr_last_error().
 * Messages name what is wrong and where (file, byte offset, field, flag).
 * The message buffer is thread-local, so threads do not clobber each
 * other's errors. Only cli/ decides to exit; library code never does.
 *
 *   if (replay_open(&r, path) < 0) {
 *       fprintf(stderr, "grove: %s\n", gr_last_error());
 *       return 1;
 *   }
 */
#ifndef GROVE_CORE_ERROR_H
#define GROVE_CORE_ERROR_H

enum gr_status {
    GR_OK = 0,
    GR_EINVAL = -1,       /* bad argument or input value */
    GR_EIO = -2,          /* the operating system refused (open, write, ...) */
    GR_ENOMEM = -3,       /* allocation failed */
    GR_EFORMAT = -4,      /* malformed, truncated or corrupt file */
    GR_EEXIST = -5,       /* output exists and overwriting was not asked */
    GR_EUNSUPPORTED = -6, /* valid request this build or device cannot do */
    GR_EDEVICE = -7,      /* a device (CUDA, cuBLAS) call failed */
};

/* Sets the thread's message (printf-style) and returns `code`, so that a
 * failing path reads `return gr_error(GR_EINVAL, "...", ...);`. */
int gr_error(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Like gr_error, but keeps the current message and prefixes it with more
 * context: "reading x.replay: <previous message>". */
int gr_error_wrap(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The last message set on this thread ("" if none). Never NULL. */
const char *gr_last_error(void);

/* Clears the thread's message. */
void gr_clear_error(void);

/* A short name for a code: "invalid input", "I/O error", ... */
const char *gr_status_name(int code);

#endif
