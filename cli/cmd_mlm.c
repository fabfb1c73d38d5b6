/* grove nlp mlm train | eval and grove nlp depparse (issue 24 §3): masked
 * language modelling with UDGN or the Transformer (nlp/tasks/mlm_task.h),
 * masked-token perplexity, and dependency trees from a trained model's
 * head distributions or from chain / random baselines. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/lm_common.h"
#include "core/error.h"
#include "core/files.h"
#include "kernels/rng.h"
#include "nlp/tasks/mlm_task.h"
#include "render/deptree.h"
#include "render/plot.h"
#include "render/pngfile.h"
#include "train/train.h"

static const char not_comparable[] =
    "NOTE: UAS on trees converted by grove's Collins rules is NOT "
    "comparable with the\nthesis's (Stanford basic dependencies of WSJ "
    "section 23, made outside grove with\nCoreNLP; dependency_parsing.md "
    "§2).\n";

/* curves.png after every epoch from metrics.csv (a failure to draw is
 * reported once and does not stop training). */
struct curve {
    int failed;
};

static int write_curve(void *user, const struct nlp_mlm_epoch_log *e)
{
    struct curve *cv = user;
    char csv_path[GR_PATH_MAX], png_path[GR_PATH_MAX];
    if (cv->failed ||
        gr_path_join(csv_path, sizeof csv_path, e->dir, "metrics.csv") < 0 ||
        gr_path_join(png_path, sizeof png_path, e->dir, "curves.png") < 0) {
        return 0;
    }
    struct render_csv csv;
    if (render_csv_read(csv_path, &csv) < 0) {
        cv->failed = 1;
    } else {
        const char *ys[1] = {"valid_ppl"};
        struct render_plot_options po = render_plot_defaults();
        po.title = "masked-token validation perplexity per epoch";
        po.x_label = "epoch";
        struct render_image img;
        if (render_plot_csv(&csv, "epoch", ys, 1, &po, &img) < 0) {
            cv->failed = 1;
        } else {
            cv->failed = render_png_write(png_path, &img, 1) < 0;
            render_image_free(&img);
        }
        render_csv_free(&csv);
    }
    if (cv->failed) {
        fprintf(stderr, "grove nlp mlm train: warning: curves.png: %s\n",
                gr_last_error());
    }
    return 0;
}

static int is_ptb_dir(const char *data)
{
    char p[GR_PATH_MAX];
    return gr_path_join(p, sizeof p, data, "ptb.train.txt") == 0 &&
           gr_path_exists(p);
}

static int run_train(const struct cli_command *cmd, int argc, char **argv)
{
    struct nlp_mlm_train_config tc;
    nlp_mlm_train_config_default(&tc);
    struct nlp_mlm_options *o = &tc.opt;
    const char *model = "udgn", *data = NULL, *trees = NULL;
    const char *positions = NULL;
    int nemb = o->nemb, nlayers = o->nlayers, nheads = o->nheads;
    int head_size = o->head_size, players = o->parser_layers;
    int pos_classes = o->pos_classes, epochs = tc.epochs, max_batches = 0;
    int batch_tokens = tc.batch_tokens, eval_runs = tc.eval_runs;
    int min_count = 0, trees_limit = 0, resume = 0;
    int no_nonlinear = 0, no_gates = 0, sigmoid = 0, single = 0, abs_pos = 0;
    double dropout = o->dropout, dropatt = o->dropatt;
    double pdrop = o->parser_dropout, lr = tc.lr, rate = tc.mask_rate;
    double clip = tc.clip, wd = tc.weight_decay;
    struct cli_common common;
    int first = 0;
    char model_help[256];
    snprintf(model_help, sizeof model_help, "the model: %s",
             nlp_mlm_model_names());
    const struct cli_option opts[] = {
        CLI_STRING("model", "NAME", "udgn", model_help, &model),
        CLI_STRING_REQUIRED("data", "DIR", "a folder with ptb.train.txt "
                            "(Mikolov's PTB text) or a treebank (NLTK's "
                            "treebank.zip, a WSJ folder)", &data),
        CLI_STRING("trees", "FILE", NULL, "gold trees for the per-epoch UAS "
                   "(CoNLL or a treebank); default: the --data treebank, or "
                   "treebank_sample/treebank.zip beside a PTB folder",
                   &trees),
        CLI_INT("trees-limit", "N", "0", "score the first N gold sentences "
                "only (0: all)", &trees_limit),
        CLI_INT("nemb", "N", "512", "embedding / hidden size", &nemb),
        CLI_INT("nlayers", "N", "8", "DGN (or Transformer) layers",
                &nlayers),
        CLI_INT("nheads", "N", "8", "channels (UDGN) or attention heads",
                &nheads),
        CLI_INT("head-size", "N", "128", "UDGN channel size d_c", &head_size),
        CLI_INT("parser-layers", "N", "3", "UDGN parser BiLSTM layers",
                &players),
        CLI_INT("pos-classes", "K", "5", "UDGN POS-like role classes of the "
                "parser embedding (0: the released code's plain embedding)",
                &pos_classes),
        CLI_DOUBLE("dropout", "P", "0.2", "dropout", &dropout),
        CLI_DOUBLE("dropatt", "P", "0.1", "dropout on the edge / attention "
                   "weights", &dropatt),
        CLI_DOUBLE("parser-dropout", "P", "0.2", "dropout inside the UDGN "
                   "parser", &pdrop),
        CLI_FLAG("no-nonlinear", "ablation: tanh(V) -> V", &no_nonlinear),
        CLI_FLAG("no-gates", "ablation: no output gate sigma(G)", &no_gates),
        CLI_FLAG("no-competition-sigmoid", "ablation: a sigmoid per channel "
                 "instead of the softmax across channels", &sigmoid),
        CLI_FLAG("single-channel", "ablation: one channel of nheads x "
                 "head-size", &single),
        CLI_FLAG("abs-pos", "ablation: no relative-position bias; learned "
                 "absolute positions (512)", &abs_pos),
        CLI_STRING("positions", "KIND", NULL, "transformer: learned (the "
                   "default: 500 absolute positions, the reference's "
                   "--pos_emb) or sinusoidal", &positions),
        CLI_INT("epochs", "N", "100", "epochs", &epochs),
        CLI_INT("max-batches", "N", "0", "batches per epoch (0: all; smoke "
                "runs)", &max_batches),
        CLI_INT("batch-tokens", "N", "4096", "tokens per batch (sum of "
                "sentence lengths stays below it)", &batch_tokens),
        CLI_INT("eval-runs", "N", "5", "maskings averaged for the "
                "validation perplexity", &eval_runs),
        CLI_INT("min-count", "N", "0", "vocabulary threshold (0: 1 for PTB "
                "text, 5 for a treebank)", &min_count),
        CLI_DOUBLE("lr", "F", "1e-3", "Adam learning rate", &lr),
        CLI_DOUBLE("mask-rate", "P", "0.3", "masking probability", &rate),
        CLI_DOUBLE("clip", "NORM", "0.25", "global gradient-norm clipping "
                   "(0: none)", &clip),
        CLI_DOUBLE("wdecay", "F", "1.2e-6", "L2 weight decay (Adam)", &wd),
        CLI_FLAG("resume", "continue the run in --out from its last.ckpt",
                 &resume),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_ALL | CLI_COMMON_OUT_REQUIRED, 0,
                       0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    const struct nlp_mlm_model_entry *e = nlp_mlm_model_find(model);
    if (!e) {
        return cli_usage_error(cmd, "--model '%s': expected %s", model,
                               nlp_mlm_model_names());
    }
    const struct cli_range ranges[] = {
        CLI_AT_LEAST("--trees-limit", trees_limit, 0),
        CLI_AT_LEAST("--nemb", nemb, 1),
        CLI_AT_LEAST("--nlayers", nlayers, 1),
        CLI_AT_LEAST("--nheads", nheads, 1),
        CLI_AT_LEAST("--head-size", head_size, 1),
        CLI_AT_LEAST("--parser-layers", players, 1),
        CLI_AT_LEAST("--pos-classes", pos_classes, 0),
        CLI_RATE("--dropout", dropout),
        CLI_RATE("--dropatt", dropatt),
        CLI_RATE("--parser-dropout", pdrop),
        CLI_AT_LEAST("--epochs", epochs, 0),
        CLI_AT_LEAST("--max-batches", max_batches, 0),
        CLI_AT_LEAST("--batch-tokens", batch_tokens, 1),
        CLI_AT_LEAST("--eval-runs", eval_runs, 1),
        CLI_AT_LEAST("--min-count", min_count, 0),
        CLI_POSITIVE("--lr", lr),
        CLI_OPEN("--mask-rate", rate, 0, 1),
        CLI_AT_LEAST("--clip", clip, 0),
        CLI_AT_LEAST("--wdecay", wd, 0),
    };
    if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) {
        return rc;
    }
    if (strcmp(model, "udgn") != 0 &&
        (no_nonlinear || no_gates || sigmoid || single || abs_pos)) {
        return cli_usage_error(cmd, "the ablation flags apply to --model "
                               "udgn only");
    }
    if (positions && strcmp(positions, "learned") != 0 &&
        strcmp(positions, "sinusoidal") != 0) {
        return cli_usage_error(cmd, "--positions '%s': expected learned or "
                               "sinusoidal", positions);
    }
    if (positions && strcmp(model, "transformer") != 0) {
        return cli_usage_error(cmd, "--positions applies to --model "
                               "transformer only");
    }
    if (!gr_path_exists(data)) {
        return cli_usage_error(cmd, "--data %s: it does not exist", data);
    }
    if (trees && !gr_path_exists(trees)) {
        return cli_usage_error(cmd, "--trees %s: it does not exist", trees);
    }
    static char def_trees[GR_PATH_MAX];
    if (!trees && e->heads) {
        if (is_ptb_dir(data)) {
            char up[GR_PATH_MAX];
            if (gr_path_join(up, sizeof up, data,
                             "../treebank_sample/treebank.zip") == 0 &&
                gr_path_exists(up)) {
                snprintf(def_trees, sizeof def_trees, "%s", up);
                trees = def_trees;
            }
        } else {
            trees = data;
        }
    }
    snprintf(o->model, sizeof o->model, "%s", model);
    o->nemb = nemb;
    o->nlayers = nlayers;
    o->nheads = nheads;
    o->head_size = head_size;
    o->parser_layers = players;
    o->pos_classes = pos_classes;
    o->dropout = (float)dropout;
    o->dropatt = (float)dropatt;
    o->parser_dropout = (float)pdrop;
    o->no_nonlinear = no_nonlinear;
    o->no_gates = no_gates;
    o->sigmoid = sigmoid;
    o->single_channel = single;
    o->abs_pos = abs_pos;
    o->learned_pos = !positions || strcmp(positions, "learned") == 0;
    tc.data = data;
    tc.trees = trees;
    tc.trees_limit = trees_limit;
    tc.epochs = epochs;
    tc.max_batches = max_batches;
    tc.batch_tokens = batch_tokens;
    tc.eval_runs = eval_runs;
    tc.min_count = min_count;
    tc.lr = (float)lr;
    tc.mask_rate = (float)rate;
    tc.clip = (float)clip;
    tc.weight_decay = (float)wd;
    tc.seed = common.seed;
    tc.out_dir = common.out;
    tc.force = common.force;
    tc.resume = resume;
    tc.quiet = common.quiet;
    tc.argc = argc;
    tc.argv = argv;
    struct curve cv = {0};
    tc.on_epoch = write_curve;
    tc.user = &cv;
    struct gr_ctx_config cc;
    if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
        return rc;
    }
    int usage = 0;
    train_signals_install();
    rc = nlp_mlm_train(&tc, &cc, &usage);
    train_signals_restore();
    if (rc < 0) {
        return usage ? cli_usage_error(cmd, "%s", gr_last_error())
                     : cli_fail(cmd);
    }
    if (train_stop_requested()) {
        return 128 + train_stop_requested(); /* as the other trainers */
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_mlm_train = {
    "nlp mlm train",
    "Train a masked language model (UDGN, or the Transformer baseline) and "
    "watch its induced dependency trees.",
    "",
    "The models and the training setup: docs/models.md. Adam 1e-3, clip "
    "0.25, masking 0.3, ReduceLROnPlateau on "
    "validation loss, batches of < 4,096 tokens. The run folder holds "
    "command, config, vocab.txt, metrics.csv (epoch, train_loss, valid_ppl, "
    "uas, uuas, lr, wall_s; UAS/UUAS by argmax decoding on --trees), "
    "curves.png, best.ckpt (lowest validation loss) and last.ckpt "
    "(--resume continues bit-identically). UAS on trees converted by grove "
    "is NOT comparable with the thesis's.\n"
    "Example:\n"
    "  grove nlp mlm train --data ../shared/data/ptb --out runs/udgn "
    "\\\n      --nemb 128 --nlayers 2",
    run_train,
};

static int open_rt(const struct cli_command *cmd, const char *ckpt,
                   const struct cli_common *common,
                   struct nlp_mlm_runtime *rt)
{
    struct gr_ctx_config cc;
    int rc = lm_cli_ctx_config(cmd, common, &cc);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (!gr_path_exists(ckpt)) {
        return cli_usage_error(cmd, "--checkpoint %s: it does not exist",
                               ckpt);
    }
    if (nlp_mlm_open(rt, ckpt, &cc) < 0) {
        return cli_fail(cmd);
    }
    return CLI_CONTINUE;
}

static int run_eval(const struct cli_command *cmd, int argc, char **argv)
{
    const char *ckpt = NULL, *data = NULL, *split = "test";
    int runs = 5, batch_tokens = 4096;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("checkpoint", "FILE", "an MLM checkpoint "
                            "(vocab.txt beside it)", &ckpt),
        CLI_STRING("data", "DIR", NULL, "the corpus (default: the run's "
                   "--data)", &data),
        CLI_STRING("split", "NAME", "test", "valid or test", &split),
        CLI_INT("eval-runs", "N", "5", "independent maskings averaged",
                &runs),
        CLI_INT("batch-tokens", "N", "4096", "tokens per batch", &batch_tokens),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_SEED | CLI_COMMON_DEVICE |
                                      CLI_COMMON_THREADS | CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (strcmp(split, "valid") != 0 && strcmp(split, "test") != 0) {
        return cli_usage_error(cmd, "--split '%s': expected valid or test",
                               split);
    }
    const struct cli_range ranges[] = {
        CLI_AT_LEAST("--eval-runs", runs, 1),
        CLI_AT_LEAST("--batch-tokens", batch_tokens, 1),
    };
    if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) {
        return rc;
    }
    if (data && !gr_path_exists(data)) {
        return cli_usage_error(cmd, "--data %s: it does not exist", data);
    }
    struct nlp_mlm_runtime rt;
    if ((rc = open_rt(cmd, ckpt, &common, &rt)) != CLI_CONTINUE) {
        return rc;
    }
    struct nlp_mlm_corpus c;
    memset(&c, 0, sizeof c);
    const char *dir = data ? data : rt.data;
    rc = nlp_mlm_load_data(&c, dir, rt.min_count);
    if (rc == 0 && c.vocab.size != rt.vocab.size) {
        rc = gr_error(GR_EINVAL, "--data %s gives a vocabulary of %d words, "
                      "the checkpoint's has %d: not the run's corpus", dir,
                      c.vocab.size, rt.vocab.size);
    }
    for (int32_t i = 0; rc == 0 && i < c.vocab.size; i++) {
        if (strcmp(nlp_vocab_word(&c.vocab, i),
                   nlp_vocab_word(&rt.vocab, i)) != 0) {
            rc = gr_error(GR_EINVAL, "--data %s: word %d is '%s', the "
                          "checkpoint's is '%s': not the run's corpus", dir,
                          i, nlp_vocab_word(&c.vocab, i),
                          nlp_vocab_word(&rt.vocab, i));
        }
    }
    const struct nlp_mlm_split *s =
        strcmp(split, "valid") == 0 ? &c.valid : &c.test;
    double ppl = 0.0, loss = 0.0;
    if (rc == 0 && s->n_sentences == 0) {
        rc = gr_error(GR_EINVAL, "--data %s: the %s split is empty", dir,
                      split);
    }
    if (rc == 0) {
        rc = nlp_mlm_perplexity(rt.ctx, rt.entry, rt.model, s, batch_tokens,
                                rt.mask_rate, runs, rt.seed, &ppl, &loss);
    }
    if (rc == 0) {
        printf("%s %s: masked-token perplexity %.2f (loss %.4f; %d "
               "maskings at rate %.2f; %d sentences, %lld tokens)\n",
               rt.entry->name, split, ppl, loss, runs, (double)rt.mask_rate,
               s->n_sentences, (long long)s->n_tokens);
    }
    nlp_mlm_free(&c);
    nlp_mlm_close(&rt);
    return rc < 0 ? cli_fail(cmd) : CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_mlm_eval = {
    "nlp mlm eval",
    "Masked-token perplexity of an MLM checkpoint, averaged over several "
    "maskings.",
    "",
    "Perplexity = exp of the mean over --eval-runs maskings of the "
    "token-weighted mean masked cross entropy (docs/models.md); the maskings "
    "are seeded by the run's seed.\n"
    "Example:\n"
    "  grove nlp mlm eval --checkpoint runs/udgn/best.ckpt --eval-runs 5",
    run_eval,
};

/* ---- grove nlp depparse ------------------------------------------------ */

static int write_conll(const char *path, int force,
                       const struct nlp_deptrees *g, int32_t ns,
                       const int32_t *pred)
{
    struct gr_atomic_file af;
    int rc = gr_atomic_open(&af, path, force);
    if (rc < 0) {
        return rc;
    }
    FILE *f = af.fp;
    int64_t at = 0;
    for (int32_t i = 0; i < ns; i++) {
        const struct nlp_dep_sentence *s = &g->sentences[i];
        for (int32_t t = 0; t < s->n; t++) {
            int32_t h = pred[at + t];
            fprintf(f, "%d\t%s\t_\t%s\t%s\t_\t%d\t%s\t_\t_\n", t + 1,
                    s->forms[t], s->tags[t], s->tags[t],
                    h == t ? 0 : h + 1, h == t ? "root" : "dep");
        }
        fputc('\n', f);
        at += s->n;
    }
    if (ferror(f)) {
        gr_atomic_abort(&af);
        return gr_error(GR_EIO, "%s: write failed", path);
    }
    return gr_atomic_commit(&af);
}

static void baseline_heads(int kind, const struct nlp_dep_sentence *s,
                           enum nlp_dep_decoder dec, uint64_t seed,
                           int32_t index, float *H, int32_t *p)
{
    int32_t n = s->n;
    if (kind == 1 || kind == 2) {
        for (int32_t i = 0; i < n; i++) {
            p[i] = kind == 1 ? (i == 0 ? 0 : i - 1)
                             : (i == n - 1 ? i : i + 1);
        }
        return;
    }
    uint64_t key = gr_rng_key(gr_rng_make(seed, 0x72616e64ull +
                                                    (uint64_t)index));
    for (int64_t k = 0; k < (int64_t)n * n; k++) {
        H[k] = gr_rng_uniform(key, (uint64_t)k);
    }
    for (int32_t i = 0; i < n; i++) {
        H[(int64_t)i * n + i] = 0.0f;
    }
    nlp_deps_decode(dec, H, n, p);
}

/* Attachment recall of the ten most frequent gold labels. */
static void print_labels(const struct nlp_dep_eval *ev)
{
    int32_t top[10];
    int nt = 0;
    for (int32_t i = 0; i < ev->n_labels; i++) {
        int k = nt < 10 ? nt++ : 10;
        if (k == 10 && ev->label_total[i] <= ev->label_total[top[9]]) {
            continue;
        }
        if (k == 10) {
            k = 9;
        }
        while (k > 0 && ev->label_total[top[k - 1]] < ev->label_total[i]) {
            top[k] = top[k - 1];
            k--;
        }
        top[k] = i;
    }
    if (nt == 0) {
        return;
    }
    printf("attachment recall of the most frequent gold labels:");
    for (int k = 0; k < nt; k++) {
        printf("%s %s %.1f (%lld)", k ? "," : "", ev->labels[top[k]],
               nlp_dep_eval_label_recall(ev, top[k]),
               (long long)ev->label_total[top[k]]);
    }
    printf("\n");
}

/* Table 4.3: the ten most frequent gold labels, each with its best
 * (layer, channel) and the Pearson correlation. */
static int print_channels(struct nlp_mlm_runtime *rt,
                          const struct nlp_deptrees *gold, int32_t ns)
{
    struct nlp_mlm_channel_corr cc;
    int rc = nlp_mlm_channel_correlation(rt->ctx, rt->entry, rt->model,
                                         &rt->vocab, gold, ns, &cc);
    if (rc < 0) {
        return rc;
    }
    printf("channel / label correlation (Table 4.3; %lld gold arcs, "
           "child -> head):\n", (long long)cc.n_arcs);
    printf("  %-16s %8s  %-13s %s\n", "label", "arcs", "layer.channel",
           "r");
    unsigned char *done = calloc((size_t)cc.n_labels + 1, 1);
    for (int k = 0; done && k < 10 && k < cc.n_labels; k++) {
        int32_t best = -1;
        for (int32_t i = 0; i < cc.n_labels; i++) {
            if (!done[i] && (best < 0 || cc.count[i] > cc.count[best])) {
                best = i;
            }
        }
        done[best] = 1;
        printf("  %-16s %8lld  %5d.%-7d %.2f\n", cc.labels[best],
               (long long)cc.count[best], cc.layer[best] + 1,
               cc.channel[best] + 1, cc.r[best]);
    }
    free(done);
    nlp_mlm_channel_corr_free(&cc);
    return 0;
}

static int run_depparse(const struct cli_command *cmd, int argc, char **argv)
{
    const char *ckpt = NULL, *trees = NULL, *baseline = NULL;
    const char *decoder = "chuliu";
    int limit = 0, tag_column = 0, converted = 0, draw = 0, channels = 0;
    const char *png = NULL;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("checkpoint", "FILE", NULL, "an MLM checkpoint with a "
                   "parser (udgn)", &ckpt),
        CLI_STRING("baseline", "NAME", NULL, "instead of --checkpoint: left "
                   "(each word headed by the previous one), right (by the "
                   "next) or random (uniform scores, then --decoder)",
                   &baseline),
        CLI_STRING_REQUIRED("trees", "FILE", "gold trees: CoNLL-X/U, or a "
                            "treebank (treebank.zip, folder, .mrg) "
                            "converted by grove's Collins rules", &trees),
        CLI_STRING("decoder", "NAME", "chuliu", "argmax (not always a "
                   "tree), chuliu (single root), eisner (projective) or "
                   "structformer (a structformer checkpoint only: the "
                   "highest token the root, the others their argmax "
                   "parent)",
                   &decoder),
        CLI_INT("limit", "N", "0", "the first N sentences only (0: all)",
                &limit),
        CLI_INT("tag-column", "N", "0", "CoNLL column of the POS tag: 0 = 4 "
                "for CoNLL-X, 5 (XPOS) for CoNLL-U", &tag_column),
        CLI_INT("draw", "K", "0", "with --png: draw sentence K (1-based) as "
                "arcs over its words, the gold above, the parse below "
                "(green where right, red where wrong)", &draw),
        CLI_STRING("png", "FILE", NULL, "the picture of --draw", &png),
        CLI_FLAG("channels", "with a udgn --checkpoint: the channel / label "
                 "correlation of thesis Table 4.3 (the best layer and "
                 "channel per gold label)", &channels),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_ALL, 0, 0, argc, argv, &common,
                       &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if ((ckpt == NULL) == (baseline == NULL)) {
        return cli_usage_error(cmd, "give exactly one of --checkpoint and "
                               "--baseline");
    }
    int base = 0;
    if (baseline) {
        base = strcmp(baseline, "left") == 0    ? 1
               : strcmp(baseline, "right") == 0 ? 2
               : strcmp(baseline, "random") == 0 ? 3 : 0;
        if (!base) {
            return cli_usage_error(cmd, "--baseline '%s': expected left, "
                                   "right or random", baseline);
        }
    }
    int dec = nlp_dep_decoder_parse(decoder);
    if (dec < 0) {
        return cli_usage_error(cmd, "--decoder '%s': expected argmax, "
                               "chuliu, eisner or structformer", decoder);
    }
    if (dec == NLP_DEP_STRUCTFORMER && baseline) {
        return cli_usage_error(cmd, "--decoder structformer needs a "
                               "structformer --checkpoint, not --baseline");
    }
    if (limit < 0) {
        return cli_usage_error(cmd, "--limit must be >= 0");
    }
    if (tag_column < 0 || tag_column > 10) {
        return cli_usage_error(cmd, "--tag-column must be 0..10, got %d",
                               tag_column);
    }
    if (channels && !ckpt) {
        return cli_usage_error(cmd, "--channels needs --checkpoint");
    }
    if ((draw > 0) != (png != NULL) || draw < 0) {
        return cli_usage_error(cmd, "--draw K (>= 1) and --png FILE go "
                               "together");
    }
    if (png && !common.force && gr_path_exists(png)) {
        return cli_usage_error(cmd, "--png %s exists (use --force to "
                               "replace it)", png);
    }
    rc = cli_need_path(cmd, "--trees", trees);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (common.out && !common.force && gr_path_exists(common.out)) {
        return cli_usage_error(cmd, "--out %s exists (use --force to "
                               "replace it)", common.out);
    }
    struct nlp_mlm_runtime rt;
    memset(&rt, 0, sizeof rt);
    if (ckpt) {
        if ((rc = open_rt(cmd, ckpt, &common, &rt)) != CLI_CONTINUE) {
            return rc;
        }
        if (!rt.entry->heads) {
            nlp_mlm_close(&rt);
            return cli_usage_error(cmd, "--checkpoint %s: model '%s' has no "
                                   "parser", ckpt, rt.opt.model);
        }
        if (dec == NLP_DEP_STRUCTFORMER &&
            strcmp(rt.entry->name, "structformer") != 0) {
            nlp_mlm_close(&rt);
            return cli_usage_error(cmd, "--decoder structformer: --checkpoint "
                                   "%s is a '%s' model, not structformer",
                                   ckpt, rt.opt.model);
        }
    }
    struct nlp_deptrees gold;
    if (nlp_mlm_load_trees(&gold, trees, tag_column, &converted) < 0) {
        if (ckpt) {
            nlp_mlm_close(&rt);
        }
        return cli_fail(cmd);
    }
    int32_t ns = gold.n_sentences;
    if (limit > 0 && limit < ns) {
        ns = limit;
    }
    int64_t tokens = 0;
    int32_t nmax = 1;
    for (int32_t i = 0; i < ns; i++) {
        tokens += gold.sentences[i].n;
        nmax = gold.sentences[i].n > nmax ? gold.sentences[i].n : nmax;
    }
    int32_t *pred = malloc((size_t)(tokens + 1) * sizeof *pred);
    struct nlp_dep_eval ev;
    nlp_dep_eval_init(&ev);
    rc = pred ? 0 : gr_error(GR_ENOMEM, "depparse: out of memory");
    if (rc == 0 && ckpt) {
        rc = nlp_mlm_depparse(rt.ctx, rt.entry, rt.model, &rt.vocab, &gold,
                              ns, (enum nlp_dep_decoder)dec, pred, &ev);
    } else if (rc == 0) {
        float *H = malloc((size_t)nmax * nmax * sizeof *H);
        rc = H ? 0 : gr_error(GR_ENOMEM, "depparse: out of memory");
        int64_t at = 0;
        for (int32_t i = 0; rc == 0 && i < ns; i++) {
            const struct nlp_dep_sentence *s = &gold.sentences[i];
            baseline_heads(base, s, (enum nlp_dep_decoder)dec, common.seed,
                           i, H, pred + at);
            rc = nlp_dep_eval_add(&ev, s->n, pred + at, s->heads, s->labels);
            at += s->n;
        }
        free(H);
    }
    if (rc == 0 && draw > ns) {
        rc = gr_error(GR_EINVAL, "--draw %d: only %d sentences were parsed",
                      draw, ns);
    }
    if (rc == 0 && common.out) {
        rc = write_conll(common.out, common.force, &gold, ns, pred);
    }
    if (rc == 0 && png) {
        int64_t at = 0;
        for (int32_t i = 0; i < draw - 1; i++) {
            at += gold.sentences[i].n;
        }
        const struct nlp_dep_sentence *s = &gold.sentences[draw - 1];
        char title[256];
        snprintf(title, sizeof title, "sentence %d: gold (above), %s%s%s "
                 "(below)", draw, ckpt ? rt.entry->name : baseline,
                 (base == 1 || base == 2) ? "" : ", ",
                 (base == 1 || base == 2) ? "" : nlp_dep_decoder_name(dec));
        rc = render_deptree_png(png, s->forms, s->n, s->heads, pred + at,
                                title, common.force);
    }
    if (rc == 0) {
        struct nlp_dep_scores sc;
        nlp_dep_eval_scores(&ev, &sc);
        if (converted) {
            fputs(not_comparable, stdout);
        } else {
            printf("NOTE: gold trees from %s; the thesis's UAS is on Stanford "
                   "basic dependencies of\nWSJ section 23 (compare only "
                   "with that conversion).\n", trees);
        }
        printf("%s, decoder %s: %lld sentences, %lld tokens (word tags "
               "only)\n", ckpt ? rt.entry->name : baseline,
               (base == 1 || base == 2) ? "-" : nlp_dep_decoder_name(dec),
               (long long)sc.n_sentences, (long long)sc.n_tokens);
        printf("UAS %.1f  UUAS %.1f  root %.1f\n", sc.uas, sc.uuas, sc.root);
        print_labels(&ev);
        if (common.out) {
            printf("wrote %s\n", common.out);
        }
        if (png) {
            printf("drew sentence %d to %s\n", draw, png);
        }
        if (channels) {
            rc = print_channels(&rt, &gold, ns);
        }
    }
    nlp_dep_eval_free(&ev);
    free(pred);
    nlp_deptrees_free(&gold);
    if (ckpt) {
        nlp_mlm_close(&rt);
    }
    return rc < 0 ? cli_fail(cmd) : CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_depparse = {
    "nlp depparse",
    "Unsupervised dependency parsing with an MLM checkpoint's head "
    "distributions, or a chain / random baseline.",
    "",
    "Gold trees are §3-filtered (word tags only, heads rerouted); the "
    "model reads each sentence alone, unmasked. Prints UAS, UUAS and root "
    "accuracy; --out writes the predicted trees as CoNLL-X. UAS on trees "
    "converted by grove is NOT comparable with the thesis's.\n"
    "Example:\n"
    "  grove nlp depparse --checkpoint runs/udgn/best.ckpt "
    "\\\n      --trees ../shared/data/treebank_sample/treebank.zip "
    "--decoder chuliu",
    run_depparse,
};
