/* nlp/models/heads.c — classifier heads (see nlp/models/heads.h). */
#include "nlp/models/heads.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/ops.h"

const char *nlp_head_kind_name(enum nlp_head_kind kind)
{
    switch (kind) {
    case NLP_HEAD_PAIR:
        return "pair";
    case NLP_HEAD_LINEAR:
        return "linear";
    case NLP_HEAD_MLP:
        return "mlp";
    }
    return "?";
}

int nlp_head_config_check(const struct nlp_head_config *cfg)
{
    if (cfg->kind != NLP_HEAD_PAIR && cfg->kind != NLP_HEAD_LINEAR &&
        cfg->kind != NLP_HEAD_MLP) {
        return gr_error(GR_EINVAL, "head: unknown kind %d", (int)cfg->kind);
    }
    if (cfg->in < 1 || cfg->classes < 1 ||
        (cfg->kind != NLP_HEAD_LINEAR && cfg->hidden < 1)) {
        return gr_error(GR_EINVAL, "head: sizes in %d, hidden %d, classes %d "
                                   "must be >= 1",
                        (int)cfg->in, (int)cfg->hidden, (int)cfg->classes);
    }
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f)) {
        return gr_error(GR_EINVAL, "head: dropout must be in [0, 1) (got %g)",
                        (double)cfg->dropout);
    }
    return 0;
}

int64_t nlp_head_param_count(const struct nlp_head_config *cfg)
{
    int64_t in = cfg->in, h = cfg->hidden, c = cfg->classes;
    switch (cfg->kind) {
    case NLP_HEAD_PAIR:
        return 4 * in * h + h + h * c + c;
    case NLP_HEAD_LINEAR:
        return in * c + c;
    case NLP_HEAD_MLP:
        return in * h + h + h * c + c;
    }
    return 0;
}

int nlp_head_config_write(const struct nlp_head_config *cfg,
                          struct nlp_text *t)
{
    int rc = nlp_text_printf(t,
                             "head.kind %s\nhead.in %d\nhead.hidden %d\n"
                             "head.classes %d\nhead.dropout %.9g\n",
                             nlp_head_kind_name(cfg->kind), (int)cfg->in,
                             (int)cfg->hidden, (int)cfg->classes,
                             (double)cfg->dropout);
    return rc < 0 ? rc : 0;
}

static int value(const char *text, const char *what, const char *key,
                 char *buf, size_t cap)
{
    size_t len = 0;
    const char *v = nlp_config_value(text, key, &len);
    if (v == NULL || len == 0 || len >= cap) {
        return gr_error(GR_EFORMAT, "%s: config has no valid '%s'", what,
                        key);
    }
    memcpy(buf, v, len);
    buf[len] = '\0';
    return 0;
}

static int int_value(const char *text, const char *what, const char *key,
                     int32_t *out)
{
    char buf[64];
    int rc = value(text, what, key, buf, sizeof buf);
    if (rc < 0) {
        return rc;
    }
    char *end = NULL;
    errno = 0;
    long x = strtol(buf, &end, 10);
    if (errno != 0 || *end != '\0' || x < 0 || x > INT32_MAX) {
        return gr_error(GR_EFORMAT, "%s: config key '%s': '%s' is not a "
                                    "size",
                        what, key, buf);
    }
    *out = (int32_t)x;
    return 0;
}

int nlp_head_config_read(const char *text, const char *what,
                         struct nlp_head_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    char buf[64];
    int rc = value(text, what, "head.kind", buf, sizeof buf);
    if (rc < 0) {
        return rc;
    }
    if (strcmp(buf, "pair") == 0) {
        cfg->kind = NLP_HEAD_PAIR;
    } else if (strcmp(buf, "linear") == 0) {
        cfg->kind = NLP_HEAD_LINEAR;
    } else if (strcmp(buf, "mlp") == 0) {
        cfg->kind = NLP_HEAD_MLP;
    } else {
        return gr_error(GR_EFORMAT, "%s: config key 'head.kind': '%s' is not "
                                    "pair, linear or mlp",
                        what, buf);
    }
    if ((rc = int_value(text, what, "head.in", &cfg->in)) < 0 ||
        (rc = int_value(text, what, "head.hidden", &cfg->hidden)) < 0 ||
        (rc = int_value(text, what, "head.classes", &cfg->classes)) < 0 ||
        (rc = value(text, what, "head.dropout", buf, sizeof buf)) < 0) {
        return rc;
    }
    char *end = NULL;
    cfg->dropout = strtof(buf, &end);
    if (*end != '\0') {
        return gr_error(GR_EFORMAT, "%s: config key 'head.dropout': '%s' is "
                                    "not a number",
                        what, buf);
    }
    rc = nlp_head_config_check(cfg);
    return rc < 0 ? gr_error_wrap(GR_EFORMAT, "%s", what) : 0;
}

int nlp_head_init(struct nlp_head *h, struct gr_ctx *ctx, const char *prefix,
                  const struct nlp_head_config *cfg, uint64_t seed)
{
    memset(h, 0, sizeof *h);
    int rc = nlp_head_config_check(cfg);
    if (rc < 0) {
        return rc;
    }
    h->cfg = *cfg;
    struct gr_rng rng = gr_rng_make(seed, 0);
    char name[160];
    snprintf(name, sizeof name, "%s.1", prefix);
    if (cfg->kind == NLP_HEAD_LINEAR) {
        return gr_linear_init(&h->a, ctx, name, cfg->in, cfg->classes, 1,
                              rng);
    }
    int in = cfg->kind == NLP_HEAD_PAIR ? 4 * cfg->in : cfg->in;
    rc = gr_linear_init(&h->a, ctx, name, in, cfg->hidden, 1, rng);
    if (rc == 0) {
        snprintf(name, sizeof name, "%s.4", prefix);
        rc = gr_linear_init(&h->b, ctx, name, cfg->hidden, cfg->classes, 1,
                            rng);
    }
    return rc;
}

struct gr_tensor *nlp_head_pair_features(struct gr_ctx *ctx,
                                         struct gr_tensor *u,
                                         struct gr_tensor *v)
{
    struct gr_tensor *parts[4] = {u, v, gr_mul(ctx, u, v),
                                  gr_abs(ctx, gr_sub(ctx, u, v))};
    return gr_concat(ctx, 4, parts, 1);
}

static struct gr_tensor *hdrop(struct gr_ctx *ctx, struct gr_tensor *x,
                               float p, int training, struct gr_rng rng,
                               uint64_t which)
{
    if (!training || p <= 0.0f || x == NULL) {
        return x;
    }
    return gr_dropout(ctx, x, p,
                      gr_rng_make(rng.seed, gr_rng_stream(rng.stream, which,
                                                          0x4ead, 0)));
}

struct gr_tensor *nlp_head_forward(struct gr_ctx *ctx,
                                   const struct nlp_head *h,
                                   struct gr_tensor *enc, int training,
                                   struct gr_rng rng)
{
    if (enc == NULL) {
        return NULL;
    }
    const struct nlp_head_config *cfg = &h->cfg;
    if (enc->ndim != 2 || enc->shape[1] != cfg->in ||
        (cfg->kind == NLP_HEAD_PAIR && enc->shape[0] % 2 != 0)) {
        char s[64];
        gr_shape_format(gr_tensor_shape(enc), s, sizeof s);
        gr_error(GR_EINVAL, "nlp_head_forward: encoder output %s, expected "
                            "[%s, %d]",
                 s, cfg->kind == NLP_HEAD_PAIR ? "2B" : "B", (int)cfg->in);
        return NULL;
    }
    struct gr_tensor *f = enc;
    if (cfg->kind == NLP_HEAD_PAIR) {
        int64_t B = enc->shape[0] / 2;
        struct gr_tensor *u = gr_slice(ctx, enc, 0, 0, B);
        struct gr_tensor *v = gr_slice(ctx, enc, 0, B, B);
        f = nlp_head_pair_features(ctx, u, v);
    }
    f = hdrop(ctx, f, cfg->dropout, training, rng, 1);
    if (cfg->kind == NLP_HEAD_LINEAR) {
        return gr_linear_forward(ctx, &h->a, f);
    }
    struct gr_tensor *a = gr_elu(ctx, gr_linear_forward(ctx, &h->a, f));
    a = hdrop(ctx, a, cfg->dropout, training, rng, 2);
    return gr_linear_forward(ctx, &h->b, a);
}
