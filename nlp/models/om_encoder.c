/* nlp/models/om_encoder.c — Ordered Memory as a row of the encoder table
 * (nlp/models/encoder.h): the adapter from struct nlp_encoder_config and
 * its batches to nlp/models/om.h. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/ops.h"
#include "nlp/models/encoder.h"
#include "nlp/models/om.h"

struct om_encoder {
    struct nlp_om om;
    int32_t *ids;      /* host copy of the batch, [T, B] */
    size_t ids_cap;
    float *probs;      /* pointers of the last encode, [T, B, N] */
    size_t probs_cap;
    int32_t T, B, N;
};

static void om_defaults(struct nlp_encoder_config *c, const char *task)
{
    struct nlp_om_config o;
    int listops = task != NULL && strcmp(task, "listops") == 0;
    nlp_om_config_default(&o, listops ? NLP_OM_LISTOPS : NLP_OM_LOGIC);
    if (task != NULL && strncmp(task, "sst", 3) == 0) {
        /* grove's choice (no reference OM on SST in ordered_memory.md):
         * the logic settings with the SST encoders' 300 units */
        o.emsize = 300;
        o.nhid = 300;
        o.nslot = o.nslot_eval = 15;
    }
    c->emsize = o.emsize;
    c->hidden = o.nhid;
    c->slots_train = o.nslot;
    c->slots_eval = o.nslot_eval;
    c->dropout_in = o.dropouti;
    c->dropout_cell = o.dropout;
    c->dropout_mem = o.dropoutm;
    c->left_pad = o.output_last;
}

static void om_config(const struct nlp_encoder_config *c,
                      struct nlp_om_config *o)
{
    nlp_om_config_default(o, c->left_pad ? NLP_OM_LISTOPS : NLP_OM_LOGIC);
    o->vocab = c->vocab;
    o->pad_id = c->pad_id;
    o->emsize = c->emsize;
    o->nhid = c->hidden;
    o->nslot = c->slots_train;
    o->nslot_eval = c->slots_eval;
    o->dropout = c->dropout_cell;
    o->dropoutm = c->dropout_mem;
    o->dropouti = c->dropout_in;
    o->output_last = c->left_pad;
    o->embed_normal = c->left_pad;
}

static int om_init(struct nlp_encoder *e, struct gr_ctx *ctx,
                   struct gr_rng rng)
{
    struct om_encoder *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return gr_error(GR_ENOMEM, "om encoder: out of memory");
    }
    e->impl = r;
    struct nlp_om_config o;
    om_config(&e->cfg, &o);
    return nlp_om_init_named(&r->om, ctx, &o,
                             rng.seed ^ gr_rng_stream(rng.stream, 3, 0, 0),
                             "enc.");
}

static struct gr_tensor *om_encode(struct nlp_encoder *e,
                                   const struct nlp_encoder_batch *b,
                                   int training, struct gr_rng rng)
{
    struct om_encoder *r = e->impl;
    if (b->ids == NULL || b->ids->ndim != 2 || b->ids->dtype != GR_I32) {
        gr_error(GR_EINVAL, "om encoder: ids must be i32 [T, B]");
        return NULL;
    }
    /* slots as the config says now (the harness may change slots_eval) */
    int32_t N = training ? e->cfg.slots_train : e->cfg.slots_eval;
    size_t n = (size_t)b->T * b->B;
    if (n > r->ids_cap) {
        int32_t *p = realloc(r->ids, n * sizeof *p);
        if (p == NULL) {
            gr_error(GR_ENOMEM, "om encoder: out of memory");
            return NULL;
        }
        r->ids = p;
        r->ids_cap = n;
    }
    if (n * (size_t)N > r->probs_cap) {
        float *p = realloc(r->probs, n * (size_t)N * sizeof *p);
        if (p == NULL) {
            gr_error(GR_ENOMEM, "om encoder: out of memory");
            return NULL;
        }
        r->probs = p;
        r->probs_cap = n * (size_t)N;
    }
    if (gr_tensor_to_host(b->ids, r->ids) < 0) {
        return NULL;
    }
    struct nlp_om_run run = training
                                ? nlp_om_run_train(rng.seed,
                                                   (int64_t)rng.stream, N)
                                : nlp_om_run_eval(N);
    run.probs_out = r->probs;
    struct gr_tensor *out = NULL;
    r->T = r->B = r->N = 0;
    if (nlp_om_encode(&r->om, r->ids, b->T, b->B, &run, &out) < 0) {
        return NULL;
    }
    r->T = b->T;
    r->B = b->B;
    r->N = N;
    return out;
}

static int32_t om_out_dim(const struct nlp_encoder *e)
{
    return e->cfg.hidden;
}

static void om_free(struct nlp_encoder *e)
{
    struct om_encoder *r = e->impl;
    if (r != NULL) {
        nlp_om_free(&r->om);
        free(r->ids);
        free(r->probs);
        free(r);
    }
    e->impl = NULL;
}

int nlp_om_encoder_probs(struct nlp_encoder *e, const float **probs,
                         int32_t *T, int32_t *B, int32_t *N)
{
    if (e == NULL || e->kind != &nlp_encoder_om || e->impl == NULL) {
        return gr_error(GR_EINVAL, "not an Ordered Memory encoder");
    }
    struct om_encoder *r = e->impl;
    if (r->T == 0) {
        return gr_error(GR_EINVAL, "om encoder: no encode to take pointers "
                                   "of");
    }
    *probs = r->probs;
    *T = r->T;
    *B = r->B;
    *N = r->N;
    return 0;
}

const struct nlp_encoder_kind nlp_encoder_om = {
    "om",
    "Ordered Memory (ordered_memory.md): 12 slots training / 24 testing on "
    "logic, 21 on ListOps",
    om_defaults,
    om_init,
    om_encode,
    om_out_dim,
    om_free,
    NULL, /* trees: nlp_om_encoder_probs + nlp_om_build_tree (§8) */
};
