/* Word vectors in the GloVe text format: see nlp/data/vectors.h. */
#define _POSIX_C_SOURCE 200809L /* getline */
#include "nlp/data/vectors.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nlp/data/vocab.h"

/* The vocabulary of vocab_text, ids in line order. */
static int vocab_of(const char *text, struct nlp_vocab *v)
{
    nlp_vocab_init(v);
    for (const char *p = text; p != NULL && *p != '\0';) {
        const char *e = strchr(p, '\n');
        size_t n = e != NULL ? (size_t)(e - p) : strlen(p);
        int32_t id;
        int rc = nlp_vocab_add(v, p, n, &id);
        if (rc < 0) {
            nlp_vocab_free(v);
            return rc;
        }
        p = e != NULL ? e + 1 : NULL;
    }
    return 0;
}

int nlp_vectors_load(const char *path, const char *vocab_text, float *table,
                     int32_t n_rows, int32_t dim, int32_t *found)
{
    if (found != NULL) {
        *found = 0;
    }
    if (vocab_text == NULL) {
        return gr_error(GR_EINVAL, "%s: the task has no word vocabulary "
                        "(a fixed set of symbols): --vectors does not "
                        "apply", path);
    }
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        return gr_error(GR_EIO, "%s: %s", path, strerror(errno));
    }
    struct nlp_vocab v;
    int rc = vocab_of(vocab_text, &v);
    if (rc < 0) {
        fclose(fp);
        return rc;
    }
    uint8_t *seen = calloc((size_t)(v.size > 0 ? v.size : 1), 1);
    float *vec = malloc((size_t)dim * sizeof *vec);
    char **fields = NULL;
    size_t cap_fields = 0;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int32_t n_found = 0;
    if (seen == NULL || vec == NULL) {
        rc = gr_error(GR_ENOMEM, "%s: out of memory", path);
    }
    while (rc == 0) {
        errno = 0;
        ssize_t len = getline(&line, &cap, fp);
        if (len < 0) {
            if (ferror(fp)) {
                rc = gr_error(GR_EIO, "%s: %s", path, strerror(errno));
            }
            break;
        }
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
            line[--len] = '\0';
        }
        if (len == 0) {
            rc = gr_error(GR_EFORMAT, "%s:%ld: empty line", path, lineno);
            break;
        }
        /* fields split on single spaces */
        size_t nf = 0;
        for (char *p = line;;) {
            if (nf == cap_fields) {
                size_t nc = cap_fields ? 2 * cap_fields : 512;
                char **f = realloc(fields, nc * sizeof *f);
                if (f == NULL) {
                    rc = gr_error(GR_ENOMEM, "%s: out of memory", path);
                    break;
                }
                fields = f;
                cap_fields = nc;
            }
            fields[nf++] = p;
            char *sp = strchr(p, ' ');
            if (sp == NULL) {
                break;
            }
            *sp = '\0';
            p = sp + 1;
        }
        if (rc < 0) {
            break;
        }
        if (lineno == 1 && nf == 2) {
            /* word2vec's "COUNT DIM" header */
            char *e1, *e2;
            strtol(fields[0], &e1, 10);
            long d = strtol(fields[1], &e2, 10);
            if (*e1 == '\0' && *e2 == '\0') {
                if (d != dim) {
                    rc = gr_error(GR_EFORMAT, "%s:1: vectors of dimension "
                                  "%ld, the model's word vectors have %d "
                                  "(give --emsize %ld)", path, d, (int)dim,
                                  d);
                }
                continue;
            }
        }
        if (nf <= (size_t)dim) {
            if (lineno == 1) {
                rc = gr_error(GR_EFORMAT, "%s:1: vectors of dimension %zu, "
                              "the model's word vectors have %d (give "
                              "--emsize %zu)", path, nf - 1, (int)dim,
                              nf - 1);
            } else {
                rc = gr_error(GR_EFORMAT, "%s:%ld: a word and %d numbers "
                              "expected, found %zu fields", path, lineno,
                              (int)dim, nf);
            }
            break;
        }
        size_t first = nf - (size_t)dim;
        if (lineno == 1 && first != 1) {
            rc = gr_error(GR_EFORMAT, "%s:1: vectors of dimension %zu, the "
                          "model's word vectors have %d (give --emsize "
                          "%zu)", path, nf - 1, (int)dim, nf - 1);
            break;
        }
        for (size_t k = 0; k < (size_t)dim; k++) {
            char *end;
            errno = 0;
            float x = strtof(fields[first + k], &end);
            if (end == fields[first + k] || *end != '\0' || !isfinite(x)) {
                rc = gr_error(GR_EFORMAT, "%s:%ld: field %zu '%.32s' is not "
                              "a number", path, lineno, first + k + 1,
                              fields[first + k]);
                break;
            }
            vec[k] = x;
        }
        if (rc < 0) {
            break;
        }
        /* the word: fields [0, first) joined by the spaces split above */
        for (size_t k = 1; k < first; k++) {
            fields[k][-1] = ' ';
        }
        int32_t id = nlp_vocab_find(&v, fields[0], strlen(fields[0]));
        if (id >= 0 && id < n_rows && !seen[id]) {
            seen[id] = 1;
            memcpy(table + (size_t)id * (size_t)dim, vec,
                   (size_t)dim * sizeof *vec);
            n_found++;
        }
    }
    free(line);
    free(fields);
    free(vec);
    free(seen);
    nlp_vocab_free(&v);
    fclose(fp);
    if (rc == 0 && found != NULL) {
        *found = n_found;
    }
    return rc;
}
