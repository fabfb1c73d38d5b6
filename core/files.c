#define _POSIX_C_SOURCE 200809L
#include "core/files.h"

#include "core/error.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gr_path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Length of the well-formed UTF-8 sequence at s[0, n), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf;
    if (c < 0x80) {
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80; /* no overlong form */
        hi = c == 0xed ? 0x9f : 0xbf; /* no surrogate */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf; /* at most U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < len; i++) {
        if (s[i] < 0x80 || s[i] > 0xbf) {
            return 0;
        }
    }
    return len;
}

int gr_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(p + i, n - i);
        if (k == 0) {
            return 0;
        }
        i += k;
    }
    return 1;
}

const char *gr_escape_bytes(const char *s, char *out, size_t cap)
{
    size_t n = strlen(s), o = 0;
    int escape = !gr_utf8_valid(s, n);
    const unsigned char *p = (const unsigned char *)s;
    if (cap == 0) {
        return out;
    }
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(p + i, n - i);
        char piece[8];
        size_t m;
        if (k == 0) {
            m = (size_t)snprintf(piece, sizeof piece, "\\x%02x", p[i]);
            k = 1;
        } else if (escape && p[i] == '\\') {
            memcpy(piece, "\\\\", 2);
            m = 2;
        } else {
            memcpy(piece, p + i, k);
            m = k;
        }
        if (o + m >= cap) {
            break;
        }
        memcpy(out + o, piece, m);
        o += m;
        i += k;
    }
    out[o] = '\0';
    return out;
}

int gr_path_join(char *out, size_t cap, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    const char *sep = (dl > 0 && dir[dl - 1] != '/') ? "/" : "";
    int n = snprintf(out, cap, "%s%s%s", dir, sep, name);
    if (n < 0 || (size_t)n >= cap) {
        return gr_error(GR_EINVAL, "path too long: %s/%s", dir, name);
    }
    return 0;
}

/* fsync the folder holding `path`, so the rename itself is durable. */
static void fsync_parent(const char *path)
{
    char copy[GR_PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int gr_atomic_open(struct gr_atomic_file *af, const char *path, int force)
{
    memset(af, 0, sizeof *af);
    if (strlen(path) >= sizeof af->path) {
        return gr_error(GR_EINVAL, "path too long: %.64s...", path);
    }
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            return gr_error(GR_EINVAL, "%s is a folder, not a file", path);
        }
        if (!force) {
            return gr_error(GR_EEXIST,
                            "%s already exists (use --force to overwrite)",
                            path);
        }
    }
    snprintf(af->path, sizeof af->path, "%s", path);
    snprintf(af->tmp_path, sizeof af->tmp_path, "%s.tmp.%ld", path,
             (long)getpid());
    af->fp = fopen(af->tmp_path, "wb");
    if (af->fp == NULL) {
        return gr_error(GR_EIO, "cannot write %s: %s", path,
                        strerror(errno));
    }
    return 0;
}

int gr_atomic_commit(struct gr_atomic_file *af)
{
    int failed = 0;
    int saved_errno = 0;
    if (fflush(af->fp) != 0 || ferror(af->fp)) {
        failed = 1;
        saved_errno = errno;
    } else if (fsync(fileno(af->fp)) != 0) {
        failed = 1;
        saved_errno = errno;
    }
    if (fclose(af->fp) != 0 && !failed) {
        failed = 1;
        saved_errno = errno;
    }
    af->fp = NULL;
    if (!failed && rename(af->tmp_path, af->path) != 0) {
        failed = 1;
        saved_errno = errno;
    }
    if (failed) {
        unlink(af->tmp_path);
        return gr_error(GR_EIO, "writing %s failed: %s", af->path,
                        strerror(saved_errno));
    }
    fsync_parent(af->path);
    return 0;
}

void gr_atomic_abort(struct gr_atomic_file *af)
{
    if (af->fp != NULL) {
        fclose(af->fp);
        af->fp = NULL;
    }
    if (af->tmp_path[0] != '\0') {
        unlink(af->tmp_path);
    }
}

int gr_write_file_atomic(const char *path, const void *data, size_t n,
                         int force)
{
    struct gr_atomic_file af;
    int rc = gr_atomic_open(&af, path, force);
    if (rc < 0) {
        return rc;
    }
    if (n > 0 && fwrite(data, 1, n, af.fp) != n) {
        int e = errno;
        gr_atomic_abort(&af);
        return gr_error(GR_EIO, "writing %s failed: %s", path, strerror(e));
    }
    return gr_atomic_commit(&af);
}

int gr_mkdir_p(const char *path)
{
    char buf[GR_PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        return gr_error(GR_EINVAL, "bad folder path '%s'", path);
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
                return gr_error(GR_EIO, "cannot create folder %s: %s", buf,
                                strerror(errno));
            }
            buf[i] = c;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return gr_error(GR_EIO, "%s exists and is not a folder", path);
    }
    return 0;
}

int gr_read_file(const char *path, size_t max_bytes, char **data,
                 size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        return gr_error(GR_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap + 1);
    if (buf == NULL) {
        fclose(fp);
        return gr_error(GR_ENOMEM, "out of memory reading %s", path);
    }
    for (;;) {
        if (len == cap) {
            if (cap > max_bytes) {
                break; /* already past the limit: reported below */
            }
            /* Grow to at most one byte past the limit, to detect it. */
            cap = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
            char *grown = realloc(buf, cap + 1);
            if (grown == NULL) {
                free(buf);
                fclose(fp);
                return gr_error(GR_ENOMEM, "out of memory reading %s", path);
            }
            buf = grown;
        }
        size_t got = fread(buf + len, 1, cap - len, fp);
        len += got;
        if (got == 0) {
            break;
        }
    }
    if (len > max_bytes) {
        free(buf);
        fclose(fp);
        return gr_error(GR_EFORMAT, "%s is larger than %zu bytes", path,
                        max_bytes);
    }
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        free(buf);
        return gr_error(GR_EIO, "error reading %s", path);
    }
    buf[len] = '\0';
    *data = buf;
    *size = len;
    return 0;
}

/* Appends `arg` to `out` quoted for a POSIX shell when it needs quoting. */
static void append_shell_quoted(FILE *out, const char *arg)
{
    int plain = arg[0] != '\0';
    for (const char *p = arg; *p; p++) {
        if (!(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789-_./=:,+@%",
                     *p))) {
            plain = 0;
            break;
        }
    }
    if (plain) {
        fputs(arg, out);
        return;
    }
    fputc('\'', out);
    for (const char *p = arg; *p; p++) {
        if (*p == '\'') {
            fputs("'\\''", out);
        } else {
            fputc(*p, out);
        }
    }
    fputc('\'', out);
}

int gr_run_dir_create(const char *dir, int force, int argc,
                      char *const argv[], const char *config_text)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            return gr_error(GR_EEXIST, "%s exists and is not a folder", dir);
        }
        if (!force) {
            return gr_error(GR_EEXIST,
                            "run folder %s already exists (use --force to "
                            "reuse it, or pick another --out)",
                            dir);
        }
    }
    int rc = gr_mkdir_p(dir);
    if (rc < 0) {
        return rc;
    }
    char path[GR_PATH_MAX];
    struct gr_atomic_file af;
    if ((rc = gr_path_join(path, sizeof path, dir, "command")) < 0 ||
        (rc = gr_atomic_open(&af, path, 1)) < 0) {
        return rc;
    }
    for (int i = 0; i < argc; i++) {
        if (i > 0) {
            fputc(' ', af.fp);
        }
        append_shell_quoted(af.fp, argv[i]);
    }
    fputc('\n', af.fp);
    if ((rc = gr_atomic_commit(&af)) < 0) {
        return rc;
    }
    if (config_text != NULL) {
        if ((rc = gr_path_join(path, sizeof path, dir, "config")) < 0) {
            return rc;
        }
        rc = gr_write_file_atomic(path, config_text, strlen(config_text), 1);
    }
    return rc;
}
