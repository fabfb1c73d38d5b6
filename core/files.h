/* core/files.h — atomic file writes and run folders.
 *
 * An atomic file is written to "PATH.tmp.PID" and renamed over PATH only
 * on commit (after fflush + fsync, and an fsync of the folder), so a reader
 * never sees a half-written file and a crash leaves the old one intact.
 * Outputs are never overwritten unless the caller passes force: opening an
 * existing PATH without force is GR_EEXIST with a message that names the
 * path and suggests --force.
 *
 * A run folder (runs/NAME/) holds a training run: `command` (the command
 * line that made it, shell-quoted) and `config` (the caller's text). It is
 * refused when it exists, unless force.
 *
 *   struct gr_atomic_file af;
 *   if (gr_atomic_open(&af, path, force) < 0) return -1;
 *   fwrite(buf, 1, n, af.fp);
 *   if (gr_atomic_commit(&af) < 0) return -1;   // or gr_atomic_abort(&af)
 *
 * Not thread-safe per object; distinct objects are independent.
 */
#ifndef GROVE_CORE_FILES_H
#define GROVE_CORE_FILES_H

#include <stddef.h>
#include <stdio.h>

#define GR_PATH_MAX 4096

struct gr_atomic_file {
    FILE *fp; /* write here between open and commit */
    char path[GR_PATH_MAX];
    char tmp_path[GR_PATH_MAX + 32];
};

/* Opens a temporary file beside `path`. Fails with GR_EEXIST when `path`
 * exists and !force, GR_EIO when the folder is not writable. */
int gr_atomic_open(struct gr_atomic_file *af, const char *path, int force);

/* Flushes, fsyncs and renames the temporary file to its path. On failure
 * the temporary file is removed and `path` is untouched. */
int gr_atomic_commit(struct gr_atomic_file *af);

/* Closes and removes the temporary file; `path` is untouched. */
void gr_atomic_abort(struct gr_atomic_file *af);

/* Writes `n` bytes to `path` atomically (open + write + commit). */
int gr_write_file_atomic(const char *path, const void *data, size_t n,
                         int force);

/* 1 if something exists at `path`, else 0. */
int gr_path_exists(const char *path);

/* Creates the folder `path` and its missing parents (mode 0755); an
 * existing folder is fine. */
int gr_mkdir_p(const char *path);

/* Reads a whole file into a malloc'd buffer (NUL-terminated for text use;
 * *size excludes the NUL). `max_bytes` bounds it; larger is GR_EFORMAT. */
int gr_read_file(const char *path, size_t max_bytes, char **data,
                 size_t *size);

/* Creates the run folder `dir` (and parents) and writes `command` (argv,
 * shell-quoted, one line) and `config` (the text given, may be NULL) in it.
 * An existing `dir` is GR_EEXIST unless force, in which case it is reused
 * (files the run writes are replaced). */
int gr_run_dir_create(const char *dir, int force, int argc,
                      char *const argv[], const char *config_text);

/* Paths are bytes (POSIX): one may hold bytes that are not UTF-8 (a
 * Latin-1 file name, 0xff). A MessagePack file keeps such a string as
 * `bin`, which a Python msgpack reader returns as bytes, not as `str`
 * (whose unpacking would fail); a message shows it escaped. */

/* 1 if s[0, n) is well-formed UTF-8 (no overlong forms, no surrogates,
 * at most U+10FFFF), else 0. */
int gr_utf8_valid(const char *s, size_t n);

/* Copies the NUL-terminated `s` into out[cap] (always NUL-terminated,
 * truncated to fit), each byte of an ill-formed UTF-8 sequence as "\xNN"
 * (and a backslash as "\\" when anything was escaped): printable as is
 * on a UTF-8 terminal. Returns out. */
const char *gr_escape_bytes(const char *s, char *out, size_t cap);

/* Joins `dir` and `name` into out[cap]; GR_EINVAL if it does not fit. */
int gr_path_join(char *out, size_t cap, const char *dir, const char *name);

#endif
