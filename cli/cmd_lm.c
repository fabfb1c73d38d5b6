/* grove nlp lm train | nlp lm eval: the LSTM and ON-LSTM language models
 * on PTB (nlp/models/onlstm.h, nlp/tasks/lm.h; on_lstm.md §7-§8). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/lm_common.h"
#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "nlp/data/corpus.h"
#include "nlp/models/onlstm.h"
#include "nlp/tasks/lm.h"
#include "train/mpi.h"
#include "train/train.h"
#include "nlp/tasks/syneval.h"
#include "nlp/data/treebank.h"
#include "render/plot.h"
#include "render/pngfile.h"

int lm_cli_ctx_config(const struct cli_command *cmd,
                      const struct cli_common *common,
                      struct gr_ctx_config *cc)
{
    *cc = gr_ctx_config_default();
    switch (common->device) {
    case CLI_DEVICE_CPU: cc->device = GR_DEVICE_CPU; break;
    case CLI_DEVICE_CUDA: cc->device = GR_DEVICE_CUDA; break;
    default: cc->device = GR_DEVICE_AUTO; break;
    }
    if (common->threads < 0) {
        return cli_usage_error(cmd, "--threads must be 0 or more, got %d",
                               common->threads);
    }
    cc->threads = common->threads;
    return CLI_CONTINUE;
}

/* ---- grove nlp lm train ------------------------------------------------- */

/* After every epoch: curves.png (train and valid perplexity per epoch) from
 * the run's metrics.csv. A failure to draw is reported once and does not
 * stop training. */
struct curve {
    const char *dir;
    int failed;
};

static int write_curve(void *user, const struct nlp_lm_epoch_log *e)
{
    (void)e;
    struct curve *cv = user;
    char csv_path[GR_PATH_MAX], png_path[GR_PATH_MAX];
    if (cv->failed ||
        gr_path_join(csv_path, sizeof csv_path, cv->dir, "metrics.csv") < 0 ||
        gr_path_join(png_path, sizeof png_path, cv->dir, "curves.png") < 0) {
        return 0;
    }
    struct render_csv csv;
    if (render_csv_read(csv_path, &csv) < 0) {
        cv->failed = 1;
    } else {
        const char *ys[2] = {"train_ppl", "val_ppl"};
        struct render_plot_options po = render_plot_defaults();
        po.title = "perplexity per epoch (train: with dropout; valid: exact)";
        po.x_label = "epoch";
        struct render_image img;
        if (render_plot_csv(&csv, "epoch", ys, 2, &po, &img) < 0) {
            cv->failed = 1;
        } else {
            cv->failed = render_png_write(png_path, &img, 1) < 0;
            render_image_free(&img);
        }
        render_csv_free(&csv);
    }
    if (cv->failed) {
        fprintf(stderr, "grove nlp lm train: warning: curves.png: %s\n",
                gr_last_error());
    }
    return 0;
}

static int parse_when(const struct cli_command *cmd, const char *text,
                      struct nlp_lm_train_config *tc)
{
    tc->n_when = 0;
    if (text == NULL || strcmp(text, "-1") == 0) {
        return CLI_CONTINUE;
    }
    char buf[512];
    if (strlen(text) >= sizeof buf) {
        return cli_usage_error(cmd, "--when: list too long");
    }
    strcpy(buf, text);
    char *items[NLP_LM_MAX_WHEN];
    int n = cli_split_list(buf, items, NLP_LM_MAX_WHEN);
    if (n < 0) {
        return cli_usage_error(cmd, "--when expects up to %d comma-separated "
                               "epochs, got '%s'",
                               NLP_LM_MAX_WHEN, text);
    }
    for (int i = 0; i < n; i++) {
        char *end = NULL;
        long v = strtol(items[i], &end, 10);
        if (*end != '\0' || v < 1 || v > 1000000) {
            return cli_usage_error(cmd, "--when: '%s' is not an epoch (1 or "
                                   "more)",
                                   items[i]);
        }
        tc->when[tc->n_when++] = (int32_t)v;
    }
    return CLI_CONTINUE;
}

static int run_train(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    int first = 0;
    const char *model = NULL, *data = NULL, *when = NULL;
    const char *conv_axis = NULL;
    /* the defaults of the table below; --finetuning's (CLI_UNSET: not
     * given) depends on the model, and so do the dropouts' (NaN) */
    int emsize = 0, nhid = 0, nlayers = 0, chunk = 0, bptt = 0, batch = 0,
        nonmono = 0, finetuning = CLI_UNSET, epochs = 0, max_batches = 0,
        eval_batch = 0, test_batch = 0, resume = 0, fixed_windows = 0;
    double lr = NAN, clip = NAN, dropout = NAN, dropouth = NAN,
           dropouti = NAN, dropoute = NAN, wdrop = NAN, wdecay = NAN,
           alpha = NAN, beta = NAN;
    uint64_t seed = 141;
    const struct cli_option opts[] = {
        CLI_STRING("model", NLP_LM_KINDS, NULL,
                   "ON-LSTM, AWD-LSTM, or FastTrees (docs/models.md; "
                   "default onlstm): ft master gates from "
                   "x_t; cft a convolution on the first 2n inputs first; "
                   "fft every gate from x_t, the recurrence a linear scan "
                   "(no recurrent weights, so --wdrop does nothing); ftlstm "
                   "the repositories' LSTM baseline: an LSTM with the "
                   "ON-LSTM recipe",
                   &model),
        CLI_STRING("conv-axis", "time|batch_compat", NULL,
                   "cft only (default time): time = causal over time "
                   "(kernel 2, dilation 2; the last 2 inputs of a window "
                   "are carried into the next); batch_compat = the "
                   "reference's convolution along the batch axis "
                   "(a defect of the reference: it mixes batch neighbours), "
                   "only for parity with the published model",
                   &conv_axis),
        CLI_STRING_REQUIRED("data", "DIR",
                            "PTB folder: ptb.{train,valid,test}.txt", &data),
        CLI_INT("emsize", "N", "400", "embedding size (= last layer, tied)",
                &emsize),
        CLI_INT("nhid", "N", "1150", "hidden units of the inner layers",
                &nhid),
        CLI_INT("nlayers", "N", "3", "recurrent layers", &nlayers),
        CLI_INT("chunk-size", "N", "10",
                "ON-LSTM chunk size (layer sizes must be multiples)", &chunk),
        CLI_INT("bptt", "N", "70", "mean window length", &bptt),
        CLI_INT("batch-size", "N", "20", "training batch", &batch),
        CLI_DOUBLE("lr", "X", "30", "learning rate (SGD and ASGD)", &lr),
        CLI_DOUBLE("clip", "X", "0.25", "global gradient-norm clip (0: none)",
                   &clip),
        CLI_DOUBLE("dropout", "P", NULL,
                   "locked dropout on the last output (default 0.45 onlstm, "
                   "0.4 lstm)",
                   &dropout),
        CLI_DOUBLE("dropouth", "P", NULL,
                   "locked dropout between layers (default 0.3 onlstm, 0.25 "
                   "lstm)",
                   &dropouth),
        CLI_DOUBLE("dropouti", "P", NULL,
                   "locked dropout on the embeddings (default 0.5 onlstm, 0.4 "
                   "lstm)",
                   &dropouti),
        CLI_DOUBLE("dropoute", "P", "0.1",
                   "embedding dropout (whole word types)", &dropoute),
        CLI_DOUBLE("wdrop", "P", NULL,
                   "DropConnect on hidden-to-hidden weights (default 0.45 "
                   "onlstm, not rescaled; 0.5 lstm, inverted)",
                   &wdrop),
        CLI_DOUBLE("wdecay", "X", "1.2e-6", "weight decay (L2, all weights)",
                   &wdecay),
        CLI_DOUBLE("alpha", "X", "2", "activation regularisation (AR)",
                   &alpha),
        CLI_DOUBLE("beta", "X", "1", "temporal activation regularisation "
                   "(TAR)", &beta),
        CLI_INT("nonmono", "N", "5", "NT-ASGD non-monotone interval",
                &nonmono),
        CLI_STRING("when", "E1,E2", "-1",
                   "epochs after which the learning rate is divided by 10 "
                   "(-1, the reference's default: never)",
                   &when),
        CLI_INT("finetuning", "E", NULL,
                "epoch restarting the ASGD averaging (default 500 onlstm, 0 = "
                "never for lstm)",
                &finetuning),
        CLI_INT("epochs", "N", "1000",
                "epochs (the published run; 0: write the initial model and "
                "stop)",
                &epochs),
        CLI_INT("max-batches", "N", "0",
                "cut every epoch after N windows (smoke tests; 0 = whole "
                "epochs)",
                &max_batches),
        CLI_FLAG("fixed-windows",
                 "every training window exactly --bptt steps (no random "
                 "length, no lr rescaling): for deterministic comparisons",
                 &fixed_windows),
        CLI_INT("eval-batch-size", "N", "10", "validation batch", &eval_batch),
        CLI_INT("test-batch-size", "N", "1", "test batch", &test_batch),
        CLI_U64("seed", "S", "141", "random seed (weights, masks, windows)",
                &seed),
        CLI_FLAG("resume", "continue the run in --out from its last.ckpt "
                 "(to --epochs)", &resume),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_DEVICE | CLI_COMMON_THREADS |
                           CLI_COMMON_OUT_REQUIRED | CLI_COMMON_FORCE |
                           CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    enum nlp_lm_kind kind;
    if (nlp_lm_kind_parse(model ? model : "onlstm", &kind) < 0) {
        return cli_usage_error(cmd, "--model expects one of %s, got '%s'",
                               NLP_LM_KINDS, model);
    }
    enum gr_conv_axis axis = GR_CONV_TIME;
    if (conv_axis != NULL && gr_conv_axis_parse(conv_axis, &axis) < 0) {
        return cli_usage_error(cmd, "--conv-axis expects time or "
                               "batch_compat, got '%s'", conv_axis);
    }
    if (conv_axis != NULL && kind != NLP_LM_CFT) {
        return cli_usage_error(cmd, "--conv-axis applies to --model cft "
                               "only");
    }
    if (resume && common.force) {
        return cli_usage_error(cmd, "--resume and --force exclude each other");
    }
    /* every numeric flag in its range (nlp_lm_config_check's limits for
     * the model's; a layer size that is no multiple of --chunk-size is
     * refused by it below) */
    const struct cli_range ranges[] = {
        CLI_AT_LEAST("--emsize", emsize, 1),
        CLI_AT_LEAST("--nhid", nhid, 1),
        CLI_RANGE("--nlayers", nlayers, 1, NLP_LM_MAX_LAYERS),
        CLI_AT_LEAST("--chunk-size", chunk, 1),
        CLI_AT_LEAST("--bptt", bptt, 1),
        CLI_AT_LEAST("--batch-size", batch, 1),
        CLI_POSITIVE("--lr", lr),
        CLI_AT_LEAST("--clip", clip, 0),
        CLI_RATE("--dropout", dropout),
        CLI_RATE("--dropouth", dropouth),
        CLI_RATE("--dropouti", dropouti),
        CLI_RATE("--dropoute", dropoute),
        CLI_RATE("--wdrop", wdrop),
        CLI_AT_LEAST("--wdecay", wdecay, 0),
        CLI_AT_LEAST("--alpha", alpha, 0),
        CLI_AT_LEAST("--beta", beta, 0),
        CLI_AT_LEAST("--nonmono", nonmono, 0),
        CLI_AT_LEAST("--finetuning", finetuning, 0),
        CLI_AT_LEAST("--epochs", epochs, 0),
        CLI_AT_LEAST("--max-batches", max_batches, 0),
        CLI_AT_LEAST("--eval-batch-size", eval_batch, 1),
        CLI_AT_LEAST("--test-batch-size", test_batch, 1),
    };
    if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) {
        return rc;
    }
    struct nlp_lm_train_config tc;
    nlp_lm_train_config_default(&tc, kind);
    tc.model.emsize = emsize;
    tc.model.nhid = nhid;
    tc.model.nlayers = nlayers;
    tc.model.chunk = chunk;
    tc.model.conv_axis = axis;
    tc.model_given = model != NULL;
    if (!isnan(dropout)) {
        tc.model.dropout = (float)dropout;
    }
    if (!isnan(dropouth)) {
        tc.model.dropouth = (float)dropouth;
    }
    if (!isnan(dropouti)) {
        tc.model.dropouti = (float)dropouti;
    }
    if (!isnan(wdrop)) {
        tc.model.wdrop = (float)wdrop;
    }
    tc.model.dropoute = (float)dropoute;
    tc.model.alpha = (float)alpha;
    tc.model.beta = (float)beta;
    if (finetuning != CLI_UNSET) {
        tc.finetuning = finetuning;
    }
    tc.lr = (float)lr;
    tc.clip = (float)clip;
    tc.epochs = epochs;
    tc.batch = batch;
    tc.bptt = bptt;
    tc.wdecay = (float)wdecay;
    tc.nonmono = nonmono;
    tc.eval_batch = eval_batch;
    tc.test_batch = test_batch;
    tc.max_batches = max_batches;
    tc.fixed_windows = fixed_windows;
    tc.seed = seed;
    tc.out_dir = common.out;
    tc.force = common.force;
    tc.resume = resume;
    tc.quiet = common.quiet || train_mpi_rank() != 0;
    tc.argc = argc;
    tc.argv = argv;
    if ((rc = parse_when(cmd, when, &tc)) != CLI_CONTINUE) {
        return rc;
    }
    tc.model.vocab = 1; /* set from the corpus; checked below */
    if (!resume && nlp_lm_config_check(&tc.model) < 0) {
        return cli_usage_error(cmd, "%s", gr_last_error());
    }
    struct gr_ctx_config cc;
    if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
        return rc;
    }
    if (train_mpi_size() > batch) {
        return cli_usage_error(cmd, "--batch-size %d is smaller than the %d "
                                    "MPI processes",
                               batch, train_mpi_size());
    }
    if ((rc = cli_need_path(cmd, "--data", data)) != CLI_CONTINUE) {
        return rc;
    }
    /* the run folder's own checks first; nlp_lm_train creates it after
     * every other check, so a failed start leaves nothing behind */
    struct train_run_spec spec = train_run_spec_default();
    spec.dir = common.out;
    spec.force = common.force;
    spec.resume = resume;
    spec.what = "nlp lm train";
    int writer = train_mpi_rank() == 0;
    if ((writer || resume) && train_run_check(&spec) < 0) {
        return cli_fail(cmd);
    }
    struct nlp_corpus corpus;
    if (nlp_corpus_load(&corpus, data) < 0) {
        return cli_fail(cmd);
    }
    if (!tc.quiet) {
        fprintf(stderr, "data: %s: %zu / %zu / %zu tokens (train / valid / "
                        "test), %d word types\n",
                data, corpus.n_tokens[NLP_TRAIN], corpus.n_tokens[NLP_VALID],
                corpus.n_tokens[NLP_TEST], (int)corpus.vocab.size);
    }
    struct nlp_lm_train_result res;
    struct curve cv = {common.out, 0};
    train_signals_install();
    /* with MPI, process 0 draws the curve and reports (train/mpi.h) */
    rc = nlp_lm_train(&tc, &corpus, &cc, writer ? write_curve : NULL, &cv,
                      &res);
    train_signals_restore();
    nlp_corpus_free(&corpus);
    if (rc < 0) {
        return cli_fail(cmd);
    }
    if (res.stopped) {
        return 128 + train_stop_requested(); /* as a shell reports a signal */
    }
    if (!writer) {
        return CLI_EXIT_OK;
    }
    printf("run:        %s (%s, %d epochs, %.1f s)\n", common.out,
           nlp_lm_kind_name(tc.model.kind), (int)res.epochs_done, res.wall_s);
    if (res.epochs_done == 0) {
        /* --epochs 0: the initial model, nothing evaluated */
        printf("wrote the initial model to %s/best.ckpt and last.ckpt\n",
               common.out);
        return CLI_EXIT_OK;
    }
    printf("best valid: ppl %.2f (reference-compatible loss %.4f)\n",
           res.best_val_ppl, res.best_val_loss);
    if (res.asgd_switch_epoch > 0) {
        printf("NT-ASGD:    switched to ASGD after epoch %d\n",
               (int)res.asgd_switch_epoch);
    }
    if (!isnan(res.test_ppl)) {
        printf("test:       ppl %.2f (exact mean), %.2f (reference-compatible"
               "), batch %d, best checkpoint\n",
               res.test_ppl, res.test_ppl_compat, (int)tc.test_batch);
    }
    char path[GR_PATH_MAX];
    if (gr_path_join(path, sizeof path, common.out, "summary.txt") == 0) {
        char text[1024];
        int n = snprintf(text, sizeof text,
                         "model %s\nepochs %d\nbest_valid_ppl %.4f\n"
                         "test_ppl %.4f\ntest_ppl_compat %.4f\n"
                         "asgd_switch_epoch %d\nwall_s %.1f\n",
                         nlp_lm_kind_name(tc.model.kind),
                         (int)res.epochs_done, res.best_val_ppl,
                         res.test_ppl, res.test_ppl_compat,
                         (int)res.asgd_switch_epoch, res.wall_s);
        if (gr_write_file_atomic(path, text, (size_t)n, 1) < 0) {
            return cli_fail(cmd);
        }
    }
    /* Only what exists (a run whose validation never improved has no
     * best.ckpt). */
    static const char *const files[] = {"metrics.csv", "curves.png",
                                        "best.ckpt", "last.ckpt",
                                        "summary.txt"};
    printf("files:      ");
    const char *sep = "";
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (gr_path_join(path, sizeof path, common.out, files[i]) == 0 &&
            gr_path_exists(path)) {
            printf("%s%s%s", sep, files[i],
                   i == 0 ? " (one row per epoch)" : "");
            sep = ", ";
        }
    }
    printf("\n");
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_lm_train = {
    "nlp lm train",
    "Train the ON-LSTM, AWD-LSTM or a FastTrees language model on PTB (SGD "
    "-> NT-ASGD, the published hyperparameters).",
    "",
    "Defaults are the published run (docs/models.md): 3 layers 400/1150/400, "
    "chunk 10, batch 20,\nBPTT 70, lr 30, clip 0.25, seed 141, 1000 epochs "
    "(about 82 hours on a V100). The run folder holds metrics.csv, "
    "best.ckpt (for eval/parse/syneval), last.ckpt (for --resume).\n"
    "The parameter count is printed in digits first; --epochs 0 writes the "
    "initial model (last.ckpt) and evaluates nothing. A numeric flag given "
    "outside its range (a negative size, a dropout of 1, --finetuning -1, "
    "...) is refused with one line naming the flag and the range; no value "
    "stands for \"not given\".\n\n"
    "Examples (a smoke run of a minute, the published run, its resumption):\n"
    "  grove nlp lm train --data data/ptb --out runs/smoke --emsize 40 "
    "\\\n      --nhid 60 --epochs 2 --max-batches 50\n"
    "  grove nlp lm train --data data/ptb --out runs/onlstm\n"
    "  grove nlp lm train --data data/ptb --out runs/onlstm --resume "
    "--epochs 1000",
    run_train,
};

/* ---- grove nlp lm eval -------------------------------------------------- */

static int run_eval(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    int first = 0;
    const char *ckpt = NULL, *data = NULL, *split_text = "test";
    int batch = CLI_UNSET, bptt = 70, compat = 0; /* batch: by --split */
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("checkpoint", "FILE",
                            "a checkpoint of grove nlp lm train", &ckpt),
        CLI_STRING_REQUIRED("data", "DIR", "PTB folder", &data),
        CLI_STRING("split", "valid|test", "test", "which split", &split_text),
        CLI_INT("batch-size", "N", NULL,
                "batch (default 1 for test, 10 for valid, as the reference)",
                &batch),
        CLI_INT("bptt", "N", "70", "window length", &bptt),
        CLI_FLAG("compat", "also print the reference-compatible value (loss "
                 "divided by rows, not predictions)", &compat),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_DEVICE | CLI_COMMON_THREADS |
                           CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    enum nlp_split split;
    if (strcmp(split_text, "test") == 0) {
        split = NLP_TEST;
    } else if (strcmp(split_text, "valid") == 0) {
        split = NLP_VALID;
    } else {
        return cli_usage_error(cmd, "--split expects valid or test, got '%s'",
                               split_text);
    }
    const struct cli_range ranges[] = {
        CLI_AT_LEAST("--batch-size", batch, 1),
        CLI_AT_LEAST("--bptt", bptt, 1),
    };
    if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) {
        return rc;
    }
    if (batch == CLI_UNSET) {
        batch = split == NLP_TEST ? 1 : 10;
    }
    struct gr_ctx_config cc;
    if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
        return rc;
    }
    rc = 0;
    struct nlp_lm_loaded ld;
    if (nlp_lm_load(&ld, ckpt, &cc) < 0) {
        return cli_fail(cmd);
    }
    struct nlp_corpus corpus;
    if (nlp_corpus_load(&corpus, data) < 0) {
        nlp_lm_loaded_free(&ld);
        return cli_fail(cmd);
    }
    if (corpus.vocab.size != ld.vocab.size) {
        gr_error(GR_EINVAL,
                 "%s has a %d-word vocabulary, the corpus in %s %d words",
                 ckpt, (int)ld.vocab.size, data, (int)corpus.vocab.size);
        rc = -1;
    }
    for (int32_t i = 0; rc != -1 && i < corpus.vocab.size; i++) {
        if (strcmp(nlp_vocab_word(&corpus.vocab, i),
                   nlp_vocab_word(&ld.vocab, i)) != 0) {
            gr_error(GR_EINVAL,
                     "%s: word %d is '%s' in the checkpoint, '%s' in the "
                     "corpus (another vocabulary)",
                     ckpt, (int)i, nlp_vocab_word(&ld.vocab, i),
                     nlp_vocab_word(&corpus.vocab, i));
            rc = -1;
        }
    }
    size_t rows = nlp_batchify_rows(corpus.n_tokens[split], batch);
    int32_t *bd = NULL;
    if (rc != -1 && rows < 2) {
        gr_error(GR_EINVAL, "%s: too few tokens for batch %d", split_text,
                 batch);
        rc = -1;
    }
    if (rc != -1) {
        bd = malloc(rows * (size_t)batch * sizeof *bd);
        if (bd == NULL ||
            nlp_batchify(corpus.ids[split], corpus.n_tokens[split], batch,
                         bd) < 0) {
            rc = -1;
        }
    }
    struct nlp_lm_eval_result ev;
    if (rc != -1 && nlp_lm_evaluate(&ld.lm, bd, rows, batch, bptt, "eval",
                                    split_text, common.quiet, &ev) < 0) {
        rc = -1;
    }
    free(bd);
    nlp_corpus_free(&corpus);
    if (rc == -1) {
        nlp_lm_loaded_free(&ld);
        return cli_fail(cmd);
    }
    printf("checkpoint: %s (%s, %d layers, %lld parameters)\n", ckpt,
           nlp_lm_kind_name(ld.lm.cfg.kind), (int)ld.lm.cfg.nlayers,
           (long long)nlp_lm_param_count(&ld.lm.cfg));
    printf("%s:       %lld predictions, batch %d, windows of %d\n",
           split_text, (long long)ev.n_predictions, batch, bptt);
    printf("perplexity  %.2f   exact mean over the predictions (loss %.4f "
           "nats, %.3f bits per token)\n",
           ev.ppl, ev.loss, ev.loss / log(2.0));
    if (compat) {
        printf("perplexity  %.2f   reference-compatible (summed window losses "
               "/ %lld rows, docs/models.md)\n",
               ev.ppl_compat, (long long)ev.rows);
    }
    nlp_lm_loaded_free(&ld);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_lm_eval = {
    "nlp lm eval",
    "Perplexity of a trained language model on PTB valid or test.",
    "",
    "Example:\n"
    "  grove nlp lm eval --checkpoint runs/smoke/best.ckpt --data data/ptb "
    "\\\n      --split valid",
    run_eval,
};

/* ---- helpers of grove nlp parse / syneval --checkpoint ------------------ */

/* The ids of <eos> and <unk> in a model's vocabulary. */
static int special_ids(const struct nlp_lm_loaded *ld, const char *ckpt,
                       int32_t *eos, int32_t *unk)
{
    *eos = nlp_vocab_find(&ld->vocab, "<eos>", 5);
    *unk = nlp_vocab_find(&ld->vocab, "<unk>", 5);
    if (*eos < 0) {
        return gr_error(GR_EFORMAT, "%s: the vocabulary has no <eos>", ckpt);
    }
    return 0;
}

void lm_cli_free_distances(float **dist, int32_t n)
{
    if (dist == NULL) {
        return;
    }
    for (int32_t i = 0; i < n; i++) {
        free(dist[i]);
    }
    free(dist);
}

int lm_cli_parse_distances(const char *ckpt, const struct gr_ctx_config *cc,
                           int layer, const struct nlp_treebank *tb,
                           const unsigned char *want, int quiet,
                           float ***dist_out, char *desc, size_t cap)
{
    *dist_out = NULL;
    struct nlp_lm_loaded ld;
    int rc = nlp_lm_load(&ld, ckpt, cc);
    if (rc < 0) {
        return rc;
    }
    int32_t eos, unk;
    if ((rc = special_ids(&ld, ckpt, &eos, &unk)) < 0) {
        nlp_lm_loaded_free(&ld);
        return rc;
    }
    if (!nlp_lm_kind_ordered(ld.lm.cfg.kind)) {
        nlp_lm_loaded_free(&ld);
        return gr_error(GR_EINVAL, "%s is an LSTM language model: parsing "
                                   "needs the ON-LSTM's (or a FastTrees "
                                   "cell's) distances",
                        ckpt);
    }
    if (layer < 1 || layer > ld.lm.cfg.nlayers) {
        rc = gr_error(GR_EINVAL, "--layer %d: the model has layers 1 to %d",
                      layer, (int)ld.lm.cfg.nlayers);
        nlp_lm_loaded_free(&ld);
        return rc;
    }
    int32_t n = tb->n_sentences, n_sel = 0;
    float **dist = calloc((size_t)(n > 0 ? n : 1), sizeof *dist);
    float **full = calloc((size_t)(n > 0 ? n : 1), sizeof *full);
    int32_t **ids = calloc((size_t)(n > 0 ? n : 1), sizeof *ids);
    int32_t *lens = calloc((size_t)(n > 0 ? n : 1), sizeof *lens);
    int64_t n_unknown = 0, n_words = 0;
    if (dist == NULL || full == NULL || ids == NULL || lens == NULL) {
        rc = gr_error(GR_ENOMEM, "out of memory");
    }
    for (int32_t i = 0; rc == 0 && i < n; i++) {
        const struct nlp_sentence *s = &tb->sentences[i];
        if (!want[i] || s->n_words < 1) {
            continue;
        }
        ids[n_sel] = malloc((size_t)(s->n_words + 2) * sizeof **ids);
        full[n_sel] = malloc((size_t)(s->n_words + 2) * sizeof **full);
        dist[i] = malloc((size_t)s->n_words * sizeof **dist);
        if (ids[n_sel] == NULL || full[n_sel] == NULL || dist[i] == NULL) {
            rc = gr_error(GR_ENOMEM, "out of memory");
            n_sel++;
            break;
        }
        n_unknown += nlp_sentence_ids(s, &ld.vocab, eos, unk, ids[n_sel]);
        n_words += s->n_words;
        lens[n_sel] = s->n_words + 2;
        n_sel++;
    }
    if (rc == 0) {
        struct gr_progress prog;
        gr_progress_start(&prog, "distances", (uint64_t)n_sel, "sentences",
                          quiet);
        rc = nlp_lm_run_sequences(&ld.lm, n_sel, (const int32_t *const *)ids,
                                  lens, 64, NULL, layer - 1, full, &prog);
        gr_progress_finish(&prog);
    }
    /* drop the first and the last step (the two <eos>) */
    for (int32_t i = 0, k = 0; rc == 0 && i < n; i++) {
        if (dist[i] != NULL) {
            memcpy(dist[i], full[k] + 1,
                   (size_t)(lens[k] - 2) * sizeof **dist);
            k++;
        }
    }
    for (int32_t k = 0; k < n_sel; k++) {
        free(ids[k]);
        free(full[k]);
    }
    free(ids);
    free(full);
    free(lens);
    if (rc == 0) {
        snprintf(desc, cap,
                 "%s syntactic distances (layer %d of %d, forget "
                 "distance), greedy top-down split; %s, %lld of %lld words "
                 "unknown (-> <unk>)",
                 nlp_lm_kind_title(ld.lm.cfg.kind), layer,
                 (int)ld.lm.cfg.nlayers, ckpt, (long long)n_unknown,
                 (long long)n_words);
        *dist_out = dist;
    } else {
        lm_cli_free_distances(dist, n);
    }
    nlp_lm_loaded_free(&ld);
    return rc;
}

int lm_cli_syneval(const char *ckpt, const struct gr_ctx_config *cc,
                   const struct nlp_syneval *set, int32_t batch, int quiet,
                   struct nlp_syneval_results *res, int32_t *vocab_size,
                   char *desc, size_t cap)
{
    struct nlp_lm_loaded ld;
    int rc = nlp_lm_load(&ld, ckpt, cc);
    if (rc < 0) {
        return rc;
    }
    int32_t eos, unk;
    if ((rc = special_ids(&ld, ckpt, &eos, &unk)) < 0) {
        nlp_lm_loaded_free(&ld);
        return rc;
    }
    struct gr_progress prog;
    gr_progress_start(&prog, "scoring", 0, "sentences", quiet);
    struct nlp_lm_scorer sc = {&ld.lm, batch, &prog};
    rc = nlp_syneval_run_progress(set, &ld.vocab, eos, unk,
                                  nlp_lm_syneval_score, &sc, 4096, &prog,
                                  res);
    gr_progress_finish(&prog);
    *vocab_size = ld.vocab.size;
    snprintf(desc, cap,
             "%s language model from %s (%d layers; sum of log p over the "
             "words and the final '.')",
             nlp_lm_kind_title(ld.lm.cfg.kind), ckpt,
             (int)ld.lm.cfg.nlayers);
    nlp_lm_loaded_free(&ld);
    return rc;
}
