/* tests/nlp/lm_fixture.h — reads the text fixtures written by
 * tests/fixtures/nlp/gen_lm_fixtures.py ("NAME D0xD1x... v0 v1 ..." per
 * line, '#' comments) and compares tensors against them. Test-only. */
#ifndef GROVE_TESTS_NLP_LM_FIXTURE_H
#define GROVE_TESTS_NLP_LM_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "kernels/tensor.h"
#include "tests/test.h"

struct fx_entry {
    char name[128];
    int64_t numel;
    int ndim;
    int64_t shape[4];
    double *v;
};

struct fx_file {
    struct fx_entry *e;
    int n;
};

static inline int fx_load(struct fx_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    char *text = NULL;
    size_t size = 0;
    if (gr_read_file(path, (size_t)64 << 20, &text, &size) < 0) {
        fprintf(stderr, "cannot read fixture %s\n", path);
        return -1;
    }
    int cap = 0;
    char *line = text;
    while (line && *line) {
        char *eol = strchr(line, '\n');
        if (eol) {
            *eol = '\0';
        }
        if (line[0] != '#' && line[0] != '\0') {
            if (f->n == cap) {
                cap = cap ? 2 * cap : 64;
                f->e = realloc(f->e, (size_t)cap * sizeof *f->e);
            }
            struct fx_entry *e = &f->e[f->n++];
            memset(e, 0, sizeof *e);
            char *p = line;
            char *sp = strchr(p, ' ');
            size_t nl = (size_t)(sp - p);
            memcpy(e->name, p, nl < 127 ? nl : 127);
            p = sp + 1;
            e->numel = 1;
            for (;;) {
                long d = strtol(p, &p, 10);
                e->shape[e->ndim++] = d;
                e->numel *= d;
                if (*p == 'x') {
                    p++;
                } else {
                    break;
                }
            }
            e->v = malloc((size_t)e->numel * sizeof *e->v);
            for (int64_t i = 0; i < e->numel; i++) {
                e->v[i] = strtod(p, &p);
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    free(text);
    return 0;
}

static inline void fx_free(struct fx_file *f)
{
    for (int i = 0; i < f->n; i++) {
        free(f->e[i].v);
    }
    free(f->e);
}

static inline const struct fx_entry *fx_get(const struct fx_file *f,
                                            const char *name)
{
    for (int i = 0; i < f->n; i++) {
        if (strcmp(f->e[i].name, name) == 0) {
            return &f->e[i];
        }
    }
    fprintf(stderr, "fixture has no '%s'\n", name);
    return NULL;
}

static inline double fx_scalar(const struct fx_file *f, const char *name)
{
    const struct fx_entry *e = fx_get(f, name);
    return e ? e->v[0] : NAN;
}

/* A float copy of an entry (malloc'd). */
static inline float *fx_floats(const struct fx_file *f, const char *name)
{
    const struct fx_entry *e = fx_get(f, name);
    if (e == NULL) {
        return NULL;
    }
    float *x = malloc((size_t)e->numel * sizeof *x);
    for (int64_t i = 0; i < e->numel; i++) {
        x[i] = (float)e->v[i];
    }
    return x;
}

/* Compares n floats with the fixture `name`: every element within
 * rtol·max(|ref|) of the tensor (a relative tolerance at the tensor's
 * scale) plus rtol·|ref|. Prints the worst element. Returns the worst
 * error relative to the scale. */
static inline double fx_compare(const struct fx_file *f, const char *name,
                                const float *got, int64_t n, double rtol)
{
    const struct fx_entry *e = fx_get(f, name);
    CHECK_MSG(e != NULL, "missing %s", name);
    if (e == NULL) {
        return INFINITY;
    }
    CHECK_MSG(e->numel == n, "%s: %lld values, fixture %lld", name,
              (long long)n, (long long)e->numel);
    if (e->numel != n) {
        return INFINITY;
    }
    double scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(e->v[i]));
    }
    if (scale == 0.0) {
        scale = 1.0;
    }
    double worst = 0.0;
    int64_t wi = 0;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - e->v[i]);
        if (!(d <= rtol * scale + rtol * fabs(e->v[i]))) {
            bad = 1;
        }
        if (!(d / scale <= worst)) {
            worst = d / scale;
            wi = i;
        }
    }
    CHECK_MSG(!bad, "%s: element %lld is %.9g, fixture %.9g (scale %.3g)",
              name, (long long)wi, (double)got[wi], e->v[wi], scale);
    return worst;
}

/* Compares a tensor (any device) with a fixture entry. */
static inline double fx_compare_tensor(const struct fx_file *f,
                                       const char *name,
                                       const struct gr_tensor *t, double rtol)
{
    CHECK_MSG(t != NULL, "%s: tensor is NULL", name);
    if (t == NULL) {
        return INFINITY;
    }
    float *buf = malloc((size_t)t->numel * sizeof *buf);
    gr_tensor_to_host(t, buf);
    double w = fx_compare(f, name, buf, t->numel, rtol);
    free(buf);
    return w;
}

#endif
