/* The MLU generator (nlp/data/mlu.h). */
#include "nlp/data/mlu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/rng.h"

enum { SRC_CAP = 32, TGT_CAP = 24 }; /* room for any int / long long */

int nlp_mlu_generate(struct nlp_mlu_set *s, int64_t n, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    if (n < 1 || n > NLP_MLU_MAX_N) {
        return gr_error(GR_EINVAL, "mlu: %lld examples asked (1..%d)",
                        (long long)n, NLP_MLU_MAX_N);
    }
    const uint64_t space = 2000ull * 2000ull * 12ull;
    uint8_t *seen = calloc((size_t)(space / 8), 1);
    s->src = malloc((size_t)n * sizeof *s->src);
    s->tgt = malloc((size_t)n * sizeof *s->tgt);
    s->buf = malloc((size_t)n * (SRC_CAP + TGT_CAP));
    if (seen == NULL || s->src == NULL || s->tgt == NULL || s->buf == NULL) {
        free(seen);
        nlp_mlu_free(s);
        return gr_error(GR_ENOMEM, "mlu: out of memory for %lld examples",
                        (long long)n);
    }
    static const char ops[3] = {'+', '-', '*'};
    const uint64_t key = gr_rng_key(gr_rng_make(seed, 0x6d6c75));
    uint64_t d = 0;
    for (int64_t i = 0; i < n; d++) {
        uint64_t w = 5 * d;
        int64_t x = (int64_t)(gr_rng_u32(key, w) % 2000u) - 1000;
        int64_t y = (int64_t)(gr_rng_u32(key, w + 1) % 2000u) - 1000;
        int op = (int)(gr_rng_u32(key, w + 2) % 3u);
        int y_first = (int)(gr_rng_u32(key, w + 3) & 1u);
        int y_left = (int)(gr_rng_u32(key, w + 4) & 1u);
        uint64_t id = (((uint64_t)(x + 1000) * 2000u + (uint64_t)(y + 1000)) *
                           3u + (uint64_t)op) * 4u +
                      (uint64_t)(y_first * 2 + y_left);
        if (seen[id / 8] & (1u << (id % 8))) {
            continue;
        }
        seen[id / 8] |= (uint8_t)(1u << (id % 8));
        char *src = s->buf + i * (SRC_CAP + TGT_CAP);
        char *tgt = src + SRC_CAP;
        int first = y_first ? (int)y : (int)x, second = y_first ? (int)x
                                                                  : (int)y;
        snprintf(src, SRC_CAP, "%c=%d,%c=%d,%c%c%c", y_first ? 'y' : 'x',
                 first, y_first ? 'x' : 'y', second, y_left ? 'y' : 'x',
                 ops[op], y_left ? 'x' : 'y');
        int64_t l = y_left ? y : x, r = y_left ? x : y;
        int64_t v = op == 0 ? l + r : (op == 1 ? l - r : l * r);
        snprintf(tgt, TGT_CAP, "%lld", (long long)v);
        s->src[i] = src;
        s->tgt[i] = tgt;
        i++;
    }
    s->n = n;
    s->draws = (int64_t)d;
    free(seen);
    return 0;
}

void nlp_mlu_free(struct nlp_mlu_set *s)
{
    free(s->src);
    free(s->tgt);
    free(s->buf);
    memset(s, 0, sizeof *s);
}
