/* The PPO loss of ocn.md §7 and its gradients against PyTorch: the fixture
 * tests/fixtures/ppo/ppo_fixture.txt (made by make_fixture.py in float64
 * with the spec's literal controller: U1 on [x ; h], logits / τ_C, a value
 * head, one learned initial state read by the minibatch's first decisions
 * of an episode) holds the parameters, a minibatch of 8 decisions (2 of
 * them clipped), the loss, its parts and every controller gradient. grove
 * runs ppo_loss (sparse first layer, f32) and must match to 1e-5: the
 * scalars relatively, each gradient relative to its tensor's largest
 * magnitude; the same comparison of a gradient scaled by 1.001 must fail.
 * Usage: test_agents_ppo_fixture FIXTURE. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/ppo.h"
#include "core/error.h"
#include "kernels/tape.h"
#include "tests/test.h"

#define MAX_KEYS 64

struct entry {
    char key[64];
    int n;
    double *v;
};

static struct entry entries[MAX_KEYS];
static int n_entries;

static int load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    char word[64];
    while (n_entries < MAX_KEYS && fscanf(f, "%63s", word) == 1) {
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
        n_entries++;
    }
    fclose(f);
    return 0;
}

static const struct entry *get(const char *key)
{
    for (int i = 0; i < n_entries; i++) {
        if (strcmp(entries[i].key, key) == 0) {
            return &entries[i];
        }
    }
    fprintf(stderr, "fixture lacks '%s'\n", key);
    return NULL;
}

/* max |a - b| / max |b| (1 when b is all zero and a is not). */
static double rel_err(const float *a, const double *b, int n, double scale)
{
    double mx = 0.0, err = 0.0;
    for (int i = 0; i < n; i++) {
        mx = fmax(mx, fabs(b[i]));
        err = fmax(err, fabs(a[i] * scale - b[i]));
    }
    return mx > 0.0 ? err / mx : err;
}

static const char *const names[] = {
    "ctrl.l1.wx",    "ctrl.l1.wh",       "ctrl.l1.bias",   "ctrl.l2.weight",
    "ctrl.l2.bias",  "ctrl.head.weight", "ctrl.head.bias", "ctrl.h_init",
    "ctrl.value.weight", "ctrl.value.bias"};

int main(int argc, char **argv)
{
    if (argc < 2 || load(argv[1]) < 0) {
        fprintf(stderr, "usage: test_agents_ppo_fixture FIXTURE\n");
        return 1;
    }
    const struct entry *cfg = get("config");
    if (cfg == NULL || cfg->n != 9) {
        return 1;
    }
    const int K = (int)cfg->v[0], D = (int)cfg->v[1], W = (int)cfg->v[2],
              O = (int)cfg->v[3], M = (int)cfg->v[4];
    const float tau = (float)cfg->v[5], clip = (float)cfg->v[6],
                vf = (float)cfg->v[7], ent = (float)cfg->v[8];
    struct gr_ctx_config cc = gr_ctx_config_default();
    cc.device = GR_DEVICE_CPU;
    struct gr_ctx *ctx = NULL;
    if (gr_ctx_new(&ctx, &cc) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        return 1;
    }
    struct ocn_config oc;
    ocn_config_default(&oc);
    oc.n_options = K;
    oc.hidden = D;
    oc.width = W;
    oc.obs_size = O;
    oc.tau = tau;
    oc.value_head = 1;
    oc.n_tasks = 1;
    strcpy(oc.task_names[0], "DCA");
    struct ocn_model m;
    CHECK(ocn_model_init(&m, ctx, &oc, 1) == 0);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "param %s", names[i]);
        const struct entry *e = get(key);
        struct gr_tensor *t = gr_ctx_find(ctx, names[i]);
        CHECK(e != NULL && t != NULL && e->n == t->numel);
        if (e == NULL || t == NULL || e->n != t->numel) {
            return test_report("agents_ppo_fixture");
        }
        float *h = malloc((size_t)e->n * sizeof *h);
        for (int j = 0; j < e->n; j++) {
            h[j] = (float)e->v[j];
        }
        gr_tensor_set_host(t, h);
        free(h);
    }
    const struct entry *obs = get("obs"), *hc = get("hc"),
                       *first = get("first"), *opt = get("option"),
                       *lpo = get("logp_old"), *adv = get("adv"),
                       *ret = get("ret");
    if (!obs || !hc || !first || !opt || !lpo || !adv || !ret) {
        return 1;
    }
    /* sparse rows of the observations */
    int nz = 1;
    for (int i = 0; i < M; i++) {
        int c = 0;
        for (int o = 0; o < O; o++) {
            c += obs->v[i * O + o] != 0.0;
        }
        nz = c > nz ? c : nz;
    }
    int32_t *idx = malloc((size_t)(M * nz) * sizeof *idx);
    float *val = malloc((size_t)(M * nz) * sizeof *val);
    for (int i = 0; i < M; i++) {
        int c = 0;
        for (int o = 0; o < O; o++) {
            if (obs->v[i * O + o] != 0.0) {
                idx[i * nz + c] = o;
                val[i * nz + c] = (float)obs->v[i * O + o];
                c++;
            }
        }
        for (; c < nz; c++) {
            idx[i * nz + c] = -1;
            val[i * nz + c] = 0.0f;
        }
    }
    float *fhc = malloc((size_t)(M * D) * sizeof *fhc);
    float *f[5];
    int32_t *fopt = malloc((size_t)M * sizeof *fopt);
    for (int i = 0; i < M * D; i++) {
        fhc[i] = (float)hc->v[i];
    }
    const struct entry *src[5] = {first, lpo, adv, ret, NULL};
    for (int k = 0; k < 4; k++) {
        f[k] = malloc((size_t)M * sizeof(float));
        for (int i = 0; i < M; i++) {
            f[k][i] = (float)src[k]->v[i];
        }
    }
    for (int i = 0; i < M; i++) {
        fopt[i] = (int32_t)opt->v[i];
    }
    struct ppo_minibatch b = {M, nz, idx, val, fhc, f[0], fopt, f[1], f[2],
                              f[3]};
    gr_zero_grad(ctx);
    struct ppo_loss_out lo;
    int rc = ppo_loss(&m, &b, clip, vf, ent, 1, &lo);
    CHECK_MSG(rc == 0, "%s", gr_last_error());
    if (rc == 0) {
        double loss = gr_tensor_item(lo.loss);
        const double want[6] = {get("loss")->v[0],     get("policy_loss")->v[0],
                                get("value_loss")->v[0], get("entropy")->v[0],
                                get("approx_kl")->v[0],  get("clipfrac")->v[0]};
        const double have[6] = {loss,         lo.policy_loss, lo.value_loss,
                                lo.entropy,   lo.approx_kl,   lo.clipfrac};
        const char *what[6] = {"loss",    "policy_loss", "value_loss",
                               "entropy", "approx_kl",   "clipfrac"};
        for (int i = 0; i < 6; i++) {
            double tol = 1e-5 * fmax(fabs(want[i]), 1e-3);
            CHECK_MSG(fabs(have[i] - want[i]) <= tol, "%s: grove %.9g, torch "
                                                      "%.9g",
                      what[i], have[i], want[i]);
        }
        CHECK(lo.clipfrac > 0.0 && lo.clipfrac < 1.0); /* both branches */
        CHECK(gr_backward(ctx, lo.loss) == 0);
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            char key[64];
            snprintf(key, sizeof key, "grad %s", names[i]);
            const struct entry *e = get(key);
            struct gr_tensor *t = gr_ctx_find(ctx, names[i]);
            float *g = malloc((size_t)t->numel * sizeof *g);
            gr_tensor_to_host(t->grad, g);
            double err = rel_err(g, e->v, e->n, 1.0);
            printf("%-18s grad rel err %.2e\n", names[i], err);
            CHECK_MSG(err <= 1e-5, "%s: gradient off by %.2e", names[i], err);
            double mx = 0.0;
            for (int j = 0; j < e->n; j++) {
                mx = fmax(mx, fabs(e->v[j]));
            }
            if (mx > 0.0) {
                /* the comparison can fail: a 0.1 % scaled gradient does */
                CHECK(rel_err(g, e->v, e->n, 1.001) > 1e-5);
            }
            free(g);
        }
    }
    free(idx);
    free(val);
    free(fhc);
    free(fopt);
    for (int k = 0; k < 4; k++) {
        free(f[k]);
    }
    for (int i = 0; i < n_entries; i++) {
        free(entries[i].v);
    }
    gr_ctx_free(ctx);
    return test_report("agents_ppo_fixture");
}
