/* core/lines.h — walking a text of "KEY VALUE" lines.
 *
 * grove's configs (OCN/OMPN/compILE policies, encoders, classifier and LM
 * checkpoints) are NUL-terminated texts of lines "KEY VALUE", split at the
 * first space. This is the one walker over them: it hands out each line in
 * turn with its 1-based number (for errors naming the line), and finds the
 * value of a key. It never allocates: a line is either a span into the
 * text or copied into a caller's buffer. The last line may lack its '\n'.
 *
 *   struct gr_lines it;
 *   char buf[1024];
 *   const char *key, *value;
 *   gr_lines_begin(&it, text);
 *   while ((rc = gr_lines_next_kv(&it, buf, sizeof buf, &key, &value)) > 0)
 *       ... it.no is the line's number ...
 *   if (rc < 0) return rc;          // a line longer than the buffer
 *
 * An iterator is a plain value: no thread-safety beyond not sharing one.
 * Errors follow core/error.h.
 */
#ifndef GROVE_CORE_LINES_H
#define GROVE_CORE_LINES_H

#include <stddef.h>

struct gr_lines {
    const char *next; /* first byte not handed out yet */
    const char *line; /* the current line (not NUL-terminated) */
    size_t len;       /* its length in bytes, without the '\n' */
    int no;           /* its number, from 1; 0 before the first */
};

/* Starts a walk over `text` (NUL-terminated; NULL is an empty text). */
void gr_lines_begin(struct gr_lines *it, const char *text);

/* Moves to the next line: 1 when there is one (it->line, it->len, it->no),
 * 0 at the end of the text. An empty line is a line; a final '\n' does not
 * start one more. */
int gr_lines_next(struct gr_lines *it);

/* The value of the current line if it reads "KEY VALUE" for this key (the
 * bytes after "KEY ", *len of them, up to the line's end), else NULL. */
const char *gr_lines_value(const struct gr_lines *it, const char *key,
                           size_t *len);

/* Moves to the next line that has a space, copies it into buf (cap bytes)
 * and splits it there: *key and *value are NUL-terminated strings in buf.
 * Lines without a space are passed over. 1 with a line, 0 at the end;
 * GR_EFORMAT for a line of cap bytes or more ("config line N is longer
 * than M bytes"). */
int gr_lines_next_kv(struct gr_lines *it, char *buf, size_t cap,
                     const char **key, const char **value);

/* The value of the first line "KEY VALUE" of `text` for this key, *len
 * bytes up to its line's end, or NULL. */
const char *gr_lines_find(const char *text, const char *key, size_t *len);

#endif
