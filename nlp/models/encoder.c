/* The table of sentence encoders and their config text: see
 * nlp/models/encoder.h. */
#include "nlp/models/encoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/lines.h"

const struct nlp_encoder_kind *const nlp_encoder_kinds[] = {
    &nlp_encoder_lstm,
    &nlp_encoder_onlstm,
    &nlp_encoder_om,
    &nlp_encoder_ft,
    &nlp_encoder_cft,
    &nlp_encoder_fft,
    &nlp_encoder_transformer,
    &nlp_encoder_ftt,
    &nlp_encoder_ftt_conv,
    &nlp_encoder_hybrid,
    &nlp_encoder_hybrid_san,
    &nlp_encoder_structformer,
    &nlp_encoder_treelstm,
    &nlp_encoder_childsum,
    &nlp_encoder_rnn,
    &nlp_encoder_mvrnn,
    &nlp_encoder_rntn,
    &nlp_encoder_treernn,
    &nlp_encoder_treecell,
    NULL,
};

const struct nlp_encoder_kind *nlp_encoder_find(const char *name)
{
    for (int i = 0; nlp_encoder_kinds[i] != NULL; i++) {
        if (strcmp(nlp_encoder_kinds[i]->name, name) == 0) {
            return nlp_encoder_kinds[i];
        }
    }
    return NULL;
}

const char *nlp_encoder_names(void)
{
    static char names[256];
    if (names[0] == '\0') {
        size_t n = 0;
        for (int i = 0; nlp_encoder_kinds[i] != NULL && n < sizeof names; i++) {
            int w = snprintf(names + n, sizeof names - n, "%s%s", i ? "|" : "",
                             nlp_encoder_kinds[i]->name);
            n += w > 0 ? (size_t)w : 0;
        }
    }
    return names;
}

int nlp_encoder_config_default(struct nlp_encoder_config *c, const char *model,
                               const char *task)
{
    memset(c, 0, sizeof *c);
    const struct nlp_encoder_kind *k = nlp_encoder_find(model);
    if (k == NULL) {
        return gr_error(GR_EINVAL, "unknown model '%s' (known: %s)", model,
                        nlp_encoder_names());
    }
    snprintf(c->model, sizeof c->model, "%s", model);
    c->emsize = 128;
    c->hidden = 128;
    c->chunk = 10;
    c->slots_train = c->slots_eval = 12;
    c->layers = 2;
    c->heads = 4;
    c->ffn = 512;
    if (k->defaults != NULL) {
        k->defaults(c, task);
    }
    return 0;
}

int nlp_encoder_config_check(const struct nlp_encoder_config *c)
{
    if (nlp_encoder_find(c->model) == NULL) {
        return gr_error(GR_EINVAL, "unknown model '%s' (known: %s)", c->model,
                        nlp_encoder_names());
    }
    if (c->vocab < 1 || c->pad_id < 0 || c->pad_id >= c->vocab) {
        return gr_error(GR_EINVAL, "vocabulary %d with padding id %d",
                        (int)c->vocab, (int)c->pad_id);
    }
    if (c->emsize < 1 || c->emsize > 65536 || c->hidden < 1 ||
        c->hidden > 65536) {
        return gr_error(GR_EINVAL, "emsize %d and hidden %d must be in "
                                   "1..65536",
                        (int)c->emsize, (int)c->hidden);
    }
    const float *drops[] = {&c->dropout_in, &c->dropout_cell, &c->dropout_mem,
                            &c->dropout_attn};
    const char *names[] = {"dropouti", "dropout-cell", "dropout-mem",
                           "dropout-attn"};
    for (int i = 0; i < 4; i++) {
        if (!(*drops[i] >= 0.0f && *drops[i] < 1.0f)) {
            return gr_error(GR_EINVAL, "%s %g must be in [0, 1)", names[i],
                            (double)*drops[i]);
        }
    }
    if (c->layers < 1 || c->layers > 64 || c->heads < 1 || c->ffn < 1 ||
        c->ffn > 262144) {
        return gr_error(GR_EINVAL, "layers %d (1..64), heads %d (>= 1) and "
                        "ffn %d (1..262144)", (int)c->layers, (int)c->heads,
                        (int)c->ffn);
    }
    if ((strcmp(c->model, "transformer") == 0 ||
         strncmp(c->model, "ftt", 3) == 0 ||
         strcmp(c->model, "hybrid") == 0 ||
         strcmp(c->model, "structformer") == 0) &&
        c->hidden % c->heads != 0) {
        return gr_error(GR_EINVAL, "%s: --nhid %d is not a multiple of "
                        "--heads %d", c->model, (int)c->hidden,
                        (int)c->heads);
    }
    if (strcmp(c->model, "structformer") == 0 && c->emsize != c->hidden) {
        return gr_error(GR_EINVAL, "structformer: --emsize %d must equal "
                        "--nhid %d (the parser and the layers read one "
                        "embedding)", (int)c->emsize, (int)c->hidden);
    }
    if (c->slots_train < 1 || c->slots_eval < 1) {
        return gr_error(GR_EINVAL, "slots %d / %d must be >= 1",
                        (int)c->slots_train, (int)c->slots_eval);
    }
    /* the chunked cells (ON-LSTM and FastTrees), checked here so that a
     * bad size is refused before a run folder exists */
    int chunked = strcmp(c->model, "onlstm") == 0 ||
                  strcmp(c->model, "ft") == 0 ||
                  strcmp(c->model, "cft") == 0 || strcmp(c->model, "fft") == 0;
    if (chunked && (c->chunk < 1 || c->hidden % c->chunk != 0)) {
        return gr_error(GR_EINVAL, "%s: hidden %d is not a multiple of chunk "
                        "%d", c->model, (int)c->hidden, (int)c->chunk);
    }
    if (strcmp(c->model, "cft") == 0 &&
        c->emsize < 2 * (c->hidden / c->chunk)) {
        return gr_error(GR_EINVAL, "cft: the convolution reads the first "
                        "2n = %d input features, emsize is %d (fasttrees.md "
                        "§3.2)", (int)(2 * (c->hidden / c->chunk)),
                        (int)c->emsize);
    }
    return 0;
}

/* The config fields as text: key, kind (i: int32, f: float), offset. */
struct field {
    const char *key;
    char kind;
    size_t off;
};

static const struct field fields[] = {
    {"enc-vocab", 'i', offsetof(struct nlp_encoder_config, vocab)},
    {"enc-pad", 'i', offsetof(struct nlp_encoder_config, pad_id)},
    {"enc-emsize", 'i', offsetof(struct nlp_encoder_config, emsize)},
    {"enc-hidden", 'i', offsetof(struct nlp_encoder_config, hidden)},
    {"enc-chunk", 'i', offsetof(struct nlp_encoder_config, chunk)},
    {"enc-slots-train", 'i', offsetof(struct nlp_encoder_config, slots_train)},
    {"enc-slots-eval", 'i', offsetof(struct nlp_encoder_config, slots_eval)},
    {"enc-dropouti", 'f', offsetof(struct nlp_encoder_config, dropout_in)},
    {"enc-dropout-cell", 'f', offsetof(struct nlp_encoder_config, dropout_cell)},
    {"enc-dropout-mem", 'f', offsetof(struct nlp_encoder_config, dropout_mem)},
    {"enc-left-pad", 'b', offsetof(struct nlp_encoder_config, left_pad)},
    {"enc-layers", 'i', offsetof(struct nlp_encoder_config, layers)},
    {"enc-heads", 'i', offsetof(struct nlp_encoder_config, heads)},
    {"enc-ffn", 'i', offsetof(struct nlp_encoder_config, ffn)},
    {"enc-dropout-attn", 'f', offsetof(struct nlp_encoder_config,
                                       dropout_attn)},
    {"enc-post-norm", 'b', offsetof(struct nlp_encoder_config, post_norm)},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

int nlp_encoder_config_format(const struct nlp_encoder_config *c, char *out,
                              size_t cap, int *len)
{
    int n = snprintf(out + *len, cap - (size_t)*len, "enc-model %s\n",
                     c->model);
    if (n < 0 || (size_t)(*len + n) >= cap) {
        return gr_error(GR_EINVAL, "encoder config: text too long");
    }
    *len += n;
    for (size_t i = 0; i < N_FIELDS; i++) {
        const char *p = (const char *)c + fields[i].off;
        if (fields[i].kind == 'f') {
            n = snprintf(out + *len, cap - (size_t)*len, "%s %.9g\n",
                         fields[i].key, (double)*(const float *)p);
        } else if (fields[i].kind == 'b') {
            n = snprintf(out + *len, cap - (size_t)*len, "%s %d\n",
                         fields[i].key, *(const int *)p);
        } else {
            n = snprintf(out + *len, cap - (size_t)*len, "%s %d\n",
                         fields[i].key, (int)*(const int32_t *)p);
        }
        if (n < 0 || (size_t)(*len + n) >= cap) {
            return gr_error(GR_EINVAL, "encoder config: text too long");
        }
        *len += n;
    }
    return 0;
}

/* The value after "KEY " on a line of text (read on to its '\n'), or
 * NULL. */
static const char *find_value(const char *text, const char *key)
{
    size_t len;
    return gr_lines_find(text, key, &len);
}

int nlp_encoder_config_parse(const char *text, const char *what,
                             struct nlp_encoder_config *c)
{
    const char *v = find_value(text, "enc-model");
    if (v == NULL) {
        return gr_error(GR_EFORMAT, "%s: no 'enc-model' line (not a grove "
                                    "classifier checkpoint?)",
                        what);
    }
    char model[NLP_ENCODER_NAME_CAP];
    size_t n = strcspn(v, "\n");
    if (n == 0 || n >= sizeof model) {
        return gr_error(GR_EFORMAT, "%s: bad enc-model line", what);
    }
    memcpy(model, v, n);
    model[n] = '\0';
    int rc = nlp_encoder_config_default(c, model, NULL);
    if (rc < 0) {
        return gr_error_wrap(rc, "%s", what);
    }
    for (size_t i = 0; i < N_FIELDS; i++) {
        v = find_value(text, fields[i].key);
        if (v == NULL) {
            continue;
        }
        char *end;
        char *p = (char *)c + fields[i].off;
        if (fields[i].kind == 'f') {
            double d = strtod(v, &end);
            *(float *)p = (float)d;
        } else {
            long l = strtol(v, &end, 10);
            if (fields[i].kind == 'b') {
                *(int *)p = (int)l;
            } else {
                *(int32_t *)p = (int32_t)l;
            }
        }
        if (end == v || (*end != '\n' && *end != '\0')) {
            return gr_error(GR_EFORMAT, "%s: bad value on the %s line", what,
                            fields[i].key);
        }
    }
    return nlp_encoder_config_check(c) < 0 ? gr_error_wrap(GR_EFORMAT, "%s",
                                                           what)
                                           : 0;
}

int nlp_encoder_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                     const struct nlp_encoder_config *c, struct gr_rng rng)
{
    memset(e, 0, sizeof *e);
    int rc = nlp_encoder_config_check(c);
    if (rc < 0) {
        return rc;
    }
    e->kind = nlp_encoder_find(c->model);
    e->cfg = *c;
    e->ctx = ctx;
    rc = e->kind->init(e, ctx, rng);
    if (rc < 0) {
        nlp_encoder_free(e);
    }
    return rc;
}

struct gr_tensor *nlp_encoder_encode(struct nlp_encoder *e,
                                     const struct nlp_encoder_batch *b,
                                     int training, struct gr_rng rng)
{
    return e->kind->encode(e, b, training, rng);
}

int32_t nlp_encoder_out_dim(const struct nlp_encoder *e)
{
    return e->kind->out_dim(e);
}

void nlp_encoder_free(struct nlp_encoder *e)
{
    if (e->kind != NULL && e->kind->free != NULL) {
        e->kind->free(e);
    }
    e->impl = NULL;
    e->kind = NULL;
}
