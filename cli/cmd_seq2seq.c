/* grove nlp seq2seq train | translate | eval: the encoder-decoder path of
 * issue 23 §3 on parallel text (nlp/tasks/seq2seq.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/lm_common.h"
#include "core/error.h"
#include "core/files.h"
#include "nlp/data/mlu.h"
#include "nlp/tasks/seq2seq.h"
#include "train/train.h"

static int run_train(const struct cli_command *cmd, int argc, char **argv)
{
    struct nlp_s2s_train_config tc, mlu;
    nlp_s2s_train_config_default(&tc);
    nlp_s2s_train_config_mlu(&mlu);
    const char *task = NULL, *train = NULL, *valid = NULL;
    const char *model = "transformer";
    int d = tc.model.d, layers = tc.model.layers, heads = tc.model.heads;
    int ffn = tc.model.ffn, post_norm = 0;
    /* CLI_UNSET / NaN (not given, which cli_parse refuses on the command
     * line): the task's default (tsv or mlu) */
    int merges = CLI_UNSET, max_len = CLI_UNSET, batch = CLI_UNSET;
    int steps = CLI_UNSET, eval_every = CLI_UNSET, warmup = CLI_UNSET;
    int mlu_train = CLI_UNSET, mlu_valid = CLI_UNSET;
    double dropout = tc.model.dropout, dropatt = tc.model.dropout_attn;
    double lr = tc.lr_factor, ls = tc.label_smoothing, clip = tc.clip;
    double beta2 = NAN;
    int resume = 0, average_last = 0;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("task", "tsv|mlu", NULL,
                   "the task (required): tsv = parallel text from --train "
                   "and --valid (source TAB target); mlu = mathematical "
                   "language understanding (docs/nlp/mlu.md), generated "
                   "from --seed when --train/--valid are not given",
                   &task),
        CLI_STRING("train", "FILE", NULL, "training pairs (TSV)", &train),
        CLI_STRING("valid", "FILE", NULL, "validation pairs (TSV)", &valid),
        CLI_STRING("model", "NAME", "transformer",
                   "transformer|ftt|ftt-conv (the FastTrees gate in every "
                   "layer)", &model),
        CLI_INT("d", "N", "128", "model width", &d),
        CLI_INT("layers", "N", "2", "encoder and decoder layers", &layers),
        CLI_INT("heads", "N", "4", "attention heads", &heads),
        CLI_INT("ffn", "N", "512", "feed-forward size", &ffn),
        CLI_DOUBLE("dropout", "P", "0.1", "residual and embedding dropout",
                   &dropout),
        CLI_DOUBLE("dropout-attn", "P", "0.1", "attention dropout",
                   &dropatt),
        CLI_FLAG("post-norm", "post-norm layers (default pre-norm)",
                 &post_norm),
        CLI_INT("bpe-merges", "N", NULL, "BPE merges learned on the "
                "training pairs (joint; tsv 2000, mlu 0: characters)",
                &merges),
        CLI_INT("max-len", "N", NULL, "subwords per side, eos included "
                "(longer pairs are truncated and counted; tsv 64, mlu 32)",
                &max_len),
        CLI_INT("batch", "B", NULL, "pairs per step (tsv 32, mlu 256)",
                &batch),
        CLI_INT("max-steps", "N", NULL, "training steps (tsv 1000, mlu "
                "100000)", &steps),
        CLI_INT("eval-every", "N", NULL, "validation every N steps (tsv "
                "200, mlu 1000)", &eval_every),
        CLI_INT("warmup", "N", NULL, "warm-up steps of the noam schedule "
                "(tsv 400, mlu 8000)", &warmup),
        CLI_DOUBLE("adam-beta2", "B", NULL, "Adam beta2 (tsv 0.98, mlu "
                   "0.997 as T2T)", &beta2),
        CLI_FLAG("resume", "continue the run in --out from its last.ckpt "
                 "(the same options, --max-steps may grow; bit-identical "
                 "to an uninterrupted run)",
                 &resume),
        CLI_INT("average-last", "N", "0", "keep the last N validation "
                "checkpoints and write their mean to averaged.ckpt at the "
                "end (0: off, at most 64)", &average_last),
        CLI_INT("mlu-train", "N", NULL, "generated MLU training pairs "
                "(1000000)", &mlu_train),
        CLI_INT("mlu-valid", "N", NULL, "generated MLU validation pairs, "
                "and as many test pairs (10000)", &mlu_valid),
        CLI_DOUBLE("lr", "F", "2", "noam factor: lr = F d^-0.5 min(s^-0.5, "
                   "s warmup^-1.5)", &lr),
        CLI_DOUBLE("label-smoothing", "E", "0.1", "label smoothing", &ls),
        CLI_DOUBLE("clip", "NORM", "1", "global gradient-norm clipping (0: "
                   "none)", &clip),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_ALL, 0, 0, argc, argv, &common,
                       &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (task == NULL) {
        return cli_usage_error(cmd, "--task tsv|mlu is required");
    }
    const int is_mlu = strcmp(task, "mlu") == 0;
    if (!is_mlu && strcmp(task, "tsv") != 0) {
        return cli_usage_error(cmd, "--task '%s' is not tsv or mlu", task);
    }
    if (!is_mlu && (train == NULL || valid == NULL)) {
        return cli_usage_error(cmd, "--task tsv needs --train FILE and "
                               "--valid FILE");
    }
    if (is_mlu && (train == NULL) != (valid == NULL)) {
        return cli_usage_error(cmd, "--task mlu takes both --train and "
                               "--valid, or neither (generated)");
    }
    /* every numeric flag given in its range, before any default is
     * resolved */
    const struct cli_range ranges[] = {
        CLI_AT_LEAST("--d", d, 1),
        CLI_AT_LEAST("--layers", layers, 1),
        CLI_AT_LEAST("--heads", heads, 1),
        CLI_AT_LEAST("--ffn", ffn, 1),
        CLI_RATE("--dropout", dropout),
        CLI_RATE("--dropout-attn", dropatt),
        CLI_AT_LEAST("--bpe-merges", merges, 0),
        CLI_AT_LEAST("--max-len", max_len, 2),
        CLI_RANGE("--batch", batch, 1, 4096),
        CLI_AT_LEAST("--max-steps", steps, 1),
        CLI_AT_LEAST("--eval-every", eval_every, 1),
        CLI_AT_LEAST("--warmup", warmup, 1),
        CLI_RATE("--adam-beta2", beta2),
        CLI_RANGE("--average-last", average_last, 0, 64),
        CLI_RANGE("--mlu-train", mlu_train, 1, NLP_MLU_MAX_N),
        CLI_RANGE("--mlu-valid", mlu_valid, 1, NLP_MLU_MAX_N),
        CLI_POSITIVE("--lr", lr),
        CLI_RATE("--label-smoothing", ls),
        CLI_AT_LEAST("--clip", clip, 0),
    };
    if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) {
        return rc;
    }
    if ((mlu_train != CLI_UNSET || mlu_valid != CLI_UNSET) &&
        !(is_mlu && train == NULL)) {
        return cli_usage_error(cmd, "--mlu-train/--mlu-valid size the "
                               "generated MLU data (--task mlu without "
                               "--train/--valid)");
    }
    const char *paths[2] = {train, valid}, *flags[2] = {"--train", "--valid"};
    for (int i = 0; i < 2; i++) {
        if (paths[i] != NULL && !gr_path_exists(paths[i])) {
            return cli_usage_error(cmd, "%s %s: it does not exist", flags[i],
                                   paths[i]);
        }
    }
    const struct nlp_s2s_train_config *def = is_mlu ? &mlu : &tc;
    merges = merges == CLI_UNSET ? def->bpe_merges : merges;
    max_len = max_len == CLI_UNSET ? def->max_len : max_len;
    batch = batch == CLI_UNSET ? def->batch : batch;
    steps = steps == CLI_UNSET ? def->max_steps : steps;
    eval_every = eval_every == CLI_UNSET ? def->eval_every : eval_every;
    warmup = warmup == CLI_UNSET ? def->warmup : warmup;
    beta2 = isnan(beta2) ? def->adam_beta2 : beta2;
    mlu_train = mlu_train == CLI_UNSET ? (int)mlu.mlu_train : mlu_train;
    mlu_valid = mlu_valid == CLI_UNSET ? (int)mlu.mlu_valid : mlu_valid;
    if ((int64_t)mlu_train + 2 * (int64_t)mlu_valid > NLP_MLU_MAX_N) {
        return cli_usage_error(cmd, "--mlu-train %d and --mlu-valid %d: "
                               "train + 2 x valid must be <= %d", mlu_train,
                               mlu_valid, NLP_MLU_MAX_N);
    }
    if (common.out == NULL) {
        return cli_usage_error(cmd, "--out DIR (the run folder) is required");
    }
    if (d % heads != 0) {
        return cli_usage_error(cmd, "--d %d is not a multiple of --heads %d",
                               d, heads);
    }
    if (nlp_s2s_model_by_name(&tc.model, model) < 0) {
        return cli_usage_error(cmd, "--model: %s", gr_last_error());
    }
    if (resume && common.force) {
        return cli_usage_error(cmd, "--resume and --force exclude each "
                               "other");
    }
    if (resume && !gr_path_exists(common.out)) {
        return cli_usage_error(cmd, "--resume: the run folder %s does not "
                               "exist", common.out);
    }
    if (!resume && !common.force && gr_path_exists(common.out)) {
        gr_error(GR_EEXIST, "run folder %s already exists (use --force to "
                 "reuse it, or pick another --out)", common.out);
        return cli_fail(cmd);
    }
    tc.task = is_mlu ? "mlu" : "tsv";
    tc.resume = resume;
    tc.average_last = average_last;
    tc.mlu_train = mlu_train;
    tc.mlu_valid = mlu_valid;
    tc.adam_beta2 = (float)beta2;
    tc.model_name = model;
    tc.model.d = d;
    tc.model.layers = layers;
    tc.model.heads = heads;
    tc.model.ffn = ffn;
    tc.model.dropout = (float)dropout;
    tc.model.dropout_attn = (float)dropatt;
    tc.model.post_norm = post_norm;
    tc.bpe_merges = merges;
    tc.max_len = max_len;
    tc.batch = batch;
    tc.max_steps = steps;
    tc.eval_every = eval_every;
    tc.warmup = warmup;
    tc.lr_factor = (float)lr;
    tc.label_smoothing = (float)ls;
    tc.clip = (float)clip;
    tc.seed = common.seed;
    tc.train = train;
    tc.valid = valid;
    tc.out_dir = common.out;
    tc.force = common.force;
    tc.quiet = common.quiet;
    tc.argc = argc;
    tc.argv = argv;
    struct gr_ctx_config cc;
    if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
        return rc;
    }
    train_signals_install();
    struct train_run_spec spec = train_run_spec_default();
    spec.dir = common.out;
    spec.resume = resume;
    spec.force = common.force;
    if (resume && train_run_check(&spec) < 0) {
        train_signals_restore();
        return cli_usage_error(cmd, "%s", gr_last_error());
    }
    rc = nlp_s2s_train(&tc, &cc);
    train_signals_restore();
    if (rc == GR_EINVAL && strstr(gr_last_error(), "--resume") != NULL) {
        return cli_usage_error(cmd, "%s", gr_last_error());
    }
    if (rc == 0 && train_stop_requested()) {
        return 128 + train_stop_requested(); /* as the other trainers */
    }
    return rc < 0 ? cli_fail(cmd) : CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_seq2seq_train = {
    "nlp seq2seq train",
    "Train the Transformer encoder-decoder on parallel text or generated "
    "MLU (BPE, label smoothing, noam schedule, validation BLEU).",
    "",
    "The run folder holds command, config, metrics.csv (step, train_loss, "
    "valid_bleu, valid_acc, lr, wall_s), best.ckpt (by validation BLEU of "
    "greedy decoding), last.ckpt, bpe.codes and vocab.txt; a generated "
    "MLU run also mlu_train.tsv, mlu_valid.tsv and mlu_test.tsv (grove nlp "
    "seq2seq eval --test on the last gives the test accuracy). A numeric "
    "flag given outside its range (-1 included: no value stands for the "
    "task's default) is refused with one line naming the flag and the "
    "range.\n"
    "Examples:\n"
    "  grove nlp seq2seq train --task mlu --model ftt --out runs/mlu\n"
    "  grove nlp seq2seq train --task tsv --train train.tsv "
    "\\\n      --valid valid.tsv --out runs/s2s",
    run_train,
};

static int open_rt(const struct cli_command *cmd, const char *ckpt,
                   const struct cli_common *common,
                   struct nlp_s2s_runtime *rt)
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
    if (nlp_s2s_open(rt, ckpt, &cc) < 0) {
        return cli_fail(cmd);
    }
    return CLI_CONTINUE;
}

static int run_translate(const struct cli_command *cmd, int argc,
                         char **argv)
{
    const char *ckpt = NULL, *input = NULL;
    int beam = 4;
    double alpha = 0.6;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("checkpoint", "FILE", "a seq2seq checkpoint "
                            "(its folder holds bpe.codes and vocab.txt)",
                            &ckpt),
        CLI_STRING_REQUIRED("input", "FILE", "source sentences, one per "
                            "line", &input),
        CLI_INT("beam", "K", "4", "beam size (1: greedy)", &beam),
        CLI_DOUBLE("length-penalty", "A", "0.6", "GNMT length penalty "
                   "alpha", &alpha),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_DEVICE | CLI_COMMON_THREADS |
                                      CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    const struct cli_range ranges[] = {
        CLI_AT_LEAST("--beam", beam, 1),
        CLI_AT_LEAST("--length-penalty", alpha, 0),
    };
    if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) {
        return rc;
    }
    if (!gr_path_exists(input)) {
        return cli_usage_error(cmd, "--input %s: it does not exist", input);
    }
    struct nlp_s2s_runtime rt;
    if ((rc = open_rt(cmd, ckpt, &common, &rt)) != CLI_CONTINUE) {
        return rc;
    }
    char *buf = NULL;
    size_t size = 0;
    if (gr_read_file(input, (size_t)1 << 28, &buf, &size) < 0) {
        nlp_s2s_close(&rt);
        return cli_fail(cmd);
    }
    int64_t n = 0;
    char **lines = malloc((size + 2) * sizeof *lines);
    for (char *s = buf; lines && s && *s;) {
        char *nl = strchr(s, '\n');
        if (nl) {
            *nl = '\0';
        }
        lines[n++] = s;
        s = nl ? nl + 1 : NULL;
    }
    char **out = calloc((size_t)n + 1, sizeof *out);
    int64_t cut = 0;
    rc = lines && out ? nlp_s2s_translate(&rt, (const char *const *)lines, n,
                                          beam, (float)alpha, out, &cut)
                      : gr_error(GR_ENOMEM, "out of memory");
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        printf("%s\n", out[i]);
    }
    if (rc == 0 && cut > 0) {
        fprintf(stderr, "grove nlp seq2seq translate: %lld of %lld sources "
                "truncated to %d subwords\n", (long long)cut, (long long)n,
                (int)rt.max_len - 1);
    }
    for (int64_t i = 0; out && i < n; i++) {
        free(out[i]);
    }
    free(out);
    free(lines);
    free(buf);
    nlp_s2s_close(&rt);
    return rc < 0 ? cli_fail(cmd) : CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_seq2seq_translate = {
    "nlp seq2seq translate",
    "Translate sentences with a trained seq2seq checkpoint (beam search).",
    "",
    "Example:\n"
    "  grove nlp seq2seq translate --checkpoint runs/s2s/best.ckpt "
    "\\\n      --input test.src --beam 4 --length-penalty 0.6",
    run_translate,
};

static int run_eval(const struct cli_command *cmd, int argc, char **argv)
{
    const char *ckpt = NULL, *test = NULL;
    int beam = 1;
    double alpha = 0.6;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("checkpoint", "FILE", "a seq2seq checkpoint",
                            &ckpt),
        CLI_STRING_REQUIRED("test", "FILE", "test pairs (TSV)", &test),
        CLI_INT("beam", "K", "1", "beam size (1: greedy)", &beam),
        CLI_DOUBLE("length-penalty", "A", "0.6", "GNMT length penalty "
                   "alpha", &alpha),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_DEVICE | CLI_COMMON_THREADS |
                                      CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    const struct cli_range ranges[] = {
        CLI_AT_LEAST("--beam", beam, 1),
        CLI_AT_LEAST("--length-penalty", alpha, 0),
    };
    if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) {
        return rc;
    }
    if (!gr_path_exists(test)) {
        return cli_usage_error(cmd, "--test %s: it does not exist", test);
    }
    struct nlp_s2s_runtime rt;
    if ((rc = open_rt(cmd, ckpt, &common, &rt)) != CLI_CONTINUE) {
        return rc;
    }
    double bleu = 0, acc = 0;
    int64_t n = 0;
    int64_t cut = 0;
    rc = nlp_s2s_evaluate(&rt, test, beam, (float)alpha, &bleu, &acc, &n,
                          &cut);
    if (rc == 0 && cut > 0) {
        fprintf(stderr, "grove nlp seq2seq eval: %lld sides of %lld pairs "
                "truncated to %d subwords (the model's --max-len)\n",
                (long long)cut, (long long)n, (int)rt.max_len - 1);
    }
    if (rc == 0) {
        printf("seq2seq test: BLEU %.2f, sequence accuracy %.4f on %lld "
               "pairs (beam %d)\n", bleu, acc, (long long)n, beam);
    }
    nlp_s2s_close(&rt);
    return rc < 0 ? cli_fail(cmd) : CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_seq2seq_eval = {
    "nlp seq2seq eval",
    "Corpus BLEU (sacreBLEU's default) and sequence accuracy of a seq2seq "
    "checkpoint on test pairs.",
    "",
    "Example:\n"
    "  grove nlp seq2seq eval --checkpoint runs/s2s/best.ckpt --test "
    "test.tsv",
    run_eval,
};
