/* tests/agents/fixture_util.h — the reader of the agents' PyTorch
 * fixtures, shared by the OCN, OMPN and compILE fixture tests.
 *
 * A fixture (tests/fixtures/agents/ *_fixture.txt, made by the scripts
 * beside it) is a list of records "KEY N v1 .. vN"; 'param NAME' and
 * 'grad NAME' keys are two words; '#' starts a comment line; the 'obs'
 * records (one dense observation a step, in order) are kept as "obs I".
 * fx_load fills the table below; fx_find looks a key up (NULL, with a
 * line on stderr, when absent); fx_demo_obs writes the observations and
 * actions into a demonstration set made by tu_make_demos; fx_rel_diff is
 * the gradient comparison. Include after tests/test.h. */
#ifndef GROVE_TESTS_AGENTS_FIXTURE_UTIL_H
#define GROVE_TESTS_AGENTS_FIXTURE_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/demos.h"

#define FX_MAX_KEYS 128

struct entry {
    char key[64];
    int n;
    double *v;
};

static struct entry entries[FX_MAX_KEYS];
static int n_entries;

static inline int fx_load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    char word[64];
    while (fscanf(f, "%63s", word) == 1) {
        if (word[0] == '#') {
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n') {
            }
            continue;
        }
        struct entry *e = &entries[n_entries];
        if (strcmp(word, "param") == 0 || strcmp(word, "grad") == 0) {
            char name[40];
            if (fscanf(f, "%39s", name) != 1) {
                break;
            }
            snprintf(e->key, sizeof e->key, "%.8s %.40s", word, name);
        } else {
            snprintf(e->key, sizeof e->key, "%s", word);
        }
        if (fscanf(f, "%d", &e->n) != 1 || e->n < 0 || e->n > 1 << 20) {
            fprintf(stderr, "%s: bad count after '%s'\n", path, e->key);
            fclose(f);
            return -1;
        }
        e->v = malloc((size_t)(e->n > 0 ? e->n : 1) * sizeof *e->v);
        for (int i = 0; i < e->n; i++) {
            if (fscanf(f, "%lf", &e->v[i]) != 1) {
                fprintf(stderr, "%s: '%s' ends early\n", path, e->key);
                fclose(f);
                return -1;
            }
        }
        /* observations repeat: keep them in order under distinct keys */
        if (strcmp(word, "obs") == 0) {
            snprintf(e->key, sizeof e->key, "obs %d", n_entries);
        }
        if (++n_entries == FX_MAX_KEYS) {
            break;
        }
    }
    fclose(f);
    return 0;
}

static inline const struct entry *fx_find(const char *key)
{
    for (int i = 0; i < n_entries; i++) {
        if (strcmp(entries[i].key, key) == 0) {
            return &entries[i];
        }
    }
    fprintf(stderr, "fixture lacks '%s'\n", key);
    return NULL;
}

static inline void fx_free(void)
{
    for (int i = 0; i < n_entries; i++) {
        free(entries[i].v);
    }
    n_entries = 0;
}

/* max |scale·g - ref| / max |ref| over n values (the plain maximum when
 * ref is all zero). */
static inline double fx_rel_diff(const float *g, const double *ref,
                                 int n, double scale)
{
    double diff = 0, mx = 0;
    for (int k = 0; k < n; k++) {
        diff = fmax(diff, fabs(g[k] * scale - ref[k]));
        mx = fmax(mx, fabs(ref[k]));
    }
    return mx > 0 ? diff / mx : diff;
}

/* The fixture's observations (O values each, checked) and actions `act`
 * into ds (made by tu_make_demos with the fixture's lengths): the sparse
 * observation of every step, max_nz, the actions. Returns the number of
 * steps written (the caller checks it against its demonstrations). */
static inline int fx_demo_obs(struct demo_set *ds, int O,
                              const struct entry *act)
{
    int s = 0, nzo = 0;
    ds->nz_first[0] = 0;
    ds->max_nz = 0;
    for (int i = 0; i < n_entries; i++) {
        if (strncmp(entries[i].key, "obs ", 4) != 0) {
            continue;
        }
        CHECK(entries[i].n == O);
        int c = 0;
        for (int o = 0; o < O; o++) {
            if (entries[i].v[o] != 0.0) {
                ds->nz_idx[nzo] = (uint16_t)o;
                ds->nz_val[nzo] = (float)entries[i].v[o];
                nzo++;
                c++;
            }
        }
        ds->max_nz = c > ds->max_nz ? c : ds->max_nz;
        ds->nz_first[s + 1] = nzo;
        if (s < act->n) {
            ds->action[s] = (uint8_t)act->v[s];
        }
        s++;
    }
    return s;
}

#endif
