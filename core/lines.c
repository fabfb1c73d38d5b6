/* core/lines.c — see lines.h. */
#include "core/lines.h"

#include <string.h>

#include "core/error.h"

void gr_lines_begin(struct gr_lines *it, const char *text)
{
    it->next = text != NULL ? text : "";
    it->line = it->next;
    it->len = 0;
    it->no = 0;
}

int gr_lines_next(struct gr_lines *it)
{
    if (*it->next == '\0') {
        return 0;
    }
    const char *eol = strchr(it->next, '\n');
    it->line = it->next;
    it->len = eol != NULL ? (size_t)(eol - it->next) : strlen(it->next);
    it->next += it->len + (eol != NULL);
    it->no++;
    return 1;
}

const char *gr_lines_value(const struct gr_lines *it, const char *key,
                           size_t *len)
{
    size_t k = strlen(key);
    if (it->len <= k || strncmp(it->line, key, k) != 0 ||
        it->line[k] != ' ') {
        return NULL;
    }
    *len = it->len - k - 1;
    return it->line + k + 1;
}

int gr_lines_next_kv(struct gr_lines *it, char *buf, size_t cap,
                     const char **key, const char **value)
{
    while (gr_lines_next(it)) {
        if (it->len >= cap) {
            return gr_error(GR_EFORMAT,
                            "config line %d is longer than %zu bytes", it->no,
                            cap - 1);
        }
        memcpy(buf, it->line, it->len);
        buf[it->len] = '\0';
        char *sp = strchr(buf, ' ');
        if (sp != NULL) {
            *sp = '\0';
            *key = buf;
            *value = sp + 1;
            return 1;
        }
    }
    return 0;
}

const char *gr_lines_find(const char *text, const char *key, size_t *len)
{
    struct gr_lines it;
    gr_lines_begin(&it, text);
    while (gr_lines_next(&it)) {
        const char *v = gr_lines_value(&it, key, len);
        if (v != NULL) {
            return v;
        }
    }
    return NULL;
}
