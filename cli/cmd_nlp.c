/* grove nlp tasks | corpus | parse | syneval: the NLP tasks of issue 9 that
 * need no trained model yet (the PTB corpus and its unigram oracle, the
 * parsing evaluator with the baseline parsers, syntactic evaluation with a
 * unigram scorer). The LSTM / ON-LSTM language models come with the kernel
 * layer; their commands and flags join then. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/lm_common.h"
#include "core/error.h"
#include "core/progress.h"
#include "nlp/data/corpus.h"
#include "nlp/tasks/parse.h"
#include "nlp/tasks/syneval.h"
#include "nlp/data/treebank.h"

/* "12,345" */
static const char *thousands(int64_t v, char *buf, size_t cap)
{
    char raw[32];
    snprintf(raw, sizeof raw, "%lld", (long long)(v < 0 ? -v : v));
    size_t n = strlen(raw), k = 0;
    if (v < 0 && k + 1 < cap) {
        buf[k++] = '-';
    }
    for (size_t i = 0; i < n && k + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0) {
            buf[k++] = ',';
        }
        buf[k++] = raw[i];
    }
    buf[k] = '\0';
    return buf;
}

/* ---- grove nlp tasks ---------------------------------------------------- */

static int run_tasks(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {CLI_END};
    int rc = cli_parse(cmd, opts, 0, 0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    printf(
        "lm       word-level language modelling\n"
        "  data:    Mikolov's PTB (10k words): ptb.train.txt, ptb.valid.txt, "
        "ptb.test.txt\n"
        "  models:  lstm (AWD-LSTM), onlstm (ON-LSTM), ft / cft / fft "
        "(FastTrees,\n"
        "           Conv. FastTrees, Faster FastTrees: docs/models.md), ftlstm "
        "(the\n"
        "           LSTM with the ON-LSTM recipe)\n"
        "  metrics: perplexity (exact mean; reference-compatible with "
        "--compat),\n"
        "           bits per token\n"
        "  status:  corpus, vocabulary, batching and the unigram oracle: "
        "available\n"
        "           (grove nlp corpus --data DIR); the language models: "
        "available\n"
        "           (grove nlp lm train --model "
        "onlstm|lstm|ft|cft|fft|ftlstm,\n"
        "           grove nlp lm eval)\n"
        "\n"
        "parse    unsupervised constituency parsing\n"
        "  data:    WSJ trees: NLTK's treebank.zip (sections 00-01, read "
        "directly),\n"
        "           or the full WSJ (LDC99T42) as a folder or zip of "
        "wsj_NNNN.mrg;\n"
        "           WSJ10 = <= 10 words, WSJ test = section 23\n"
        "  models:  onlstm, ft, cft, fft (syntactic distances, greedy "
        "top-down\n"
        "           parser); baselines right, left, balanced, random\n"
        "  metrics: f1_sentence_mean (the reference's \"Mean F1\"), "
        "f1_corpus_evalb\n"
        "           (EVALB-style), f1_corpus_nontrivial, per-label recall\n"
        "           (ADJP NP PP INTJ), mean depth\n"
        "  status:  tree reader, evaluator and baselines: available\n"
        "           (grove nlp parse --baseline ...); parsing with a trained\n"
        "           ON-LSTM: available (grove nlp parse --checkpoint FILE)\n"
        "\n"
        "syneval  targeted syntactic evaluation (Marvin & Linzen 2018)\n"
        "  data:    marvin_linzen_2018.tsv (22 tasks, 163,124 minimal pairs "
        "and NPI\n"
        "           triples)\n"
        "  models:  lstm, onlstm, ft, cft, fft; a unigram LM as a baseline "
        "scorer\n"
        "  metrics: accuracy per case (pairs: G > U; NPI: G > I, I > U, G > U; "
        "ties\n"
        "           are wrong), items skipped because they collapse after the "
        "<unk>\n"
        "           mapping\n"
        "  status:  reading, mapping and scoring: available with the unigram "
        "scorer\n"
        "           (grove nlp syneval --model unigram); the LSTM / ON-LSTM "
        "scorers:\n"
        "           available (grove nlp syneval --checkpoint FILE)\n"
        "\n"
        "logic    logical inference, sentence pairs (Bowman et al. 2015)\n"
        "  data:    train0-12 / test0-12 (249,069 pairs, 7 relations < > = ^ | "
        "# v);\n"
        "           train on k <= 6 operators (135,529 pairs, every 10th for\n"
        "           validation), test per k 7-12; splits A/B/C (128,969 / "
        "87,948 /\n"
        "           51,896)\n"
        "  models:  lstm, onlstm, om (Ordered Memory), ft, cft, fft "
        "(FastTrees),\n"
        "           transformer, ftt, ftt-conv, hybrid, structformer: encoders "
        "of the\n"
        "           classifier harness;\n"
        "           treelstm, childsum, rnn, mvrnn, rntn, treernn, treecell on "
        "the\n"
        "           gold bracketings\n"
        "  metrics: accuracy per k and on the split's test pairs; tree F1 "
        "against\n"
        "           the formulas' brackets\n"
        "  status:  reader, truth-table labeller (agrees with every released "
        "label),\n"
        "           splits: available (grove nlp data --task logic); "
        "generator:\n"
        "           available (grove nlp logic generate); training and "
        "evaluation:\n"
        "           available (grove nlp classify train|eval --task logic); "
        "induced\n"
        "           trees and their F1: available (grove nlp classify trees)\n"
        "\n"
        "listops  ListOps, nested list operations (Nangia & Bowman 2018)\n"
        "  data:    test_d20s.tsv (10,000); the 90,000 training trees are "
        "generated\n"
        "           (seeded, same distribution)\n"
        "  models:  lstm, onlstm, om, ft, cft, fft, transformer, ftt, "
        "ftt-conv,\n"
        "           hybrid, structformer (O(B*T^3) memory: small batches);\n"
        "           treelstm, childsum, rnn, mvrnn, rntn, treernn, treecell on "
        "the\n"
        "           gold binarised trees\n"
        "  metrics: test accuracy (model selection on 1,000 held-out training\n"
        "           examples); tree F1 against the gold binarised trees\n"
        "  status:  reader, evaluator, gold trees: available\n"
        "           (grove nlp data --task listops); generator: available\n"
        "           (grove nlp listops generate); training: as logic\n"
        "\n"
        "sst2     Stanford Sentiment Treebank, binary (sst5: five classes)\n"
        "  data:    the PTB-bracket trees train/dev/test.txt; SST-2 6,920 / "
        "872 /\n"
        "           1,821 sentences (98,794 non-neutral train nodes); SST-5 "
        "8,544 /\n"
        "           1,101 / 2,210\n"
        "  models:  lstm, onlstm, om, ft, cft, fft (the FastTrees paper's\n"
        "           256 -> 512, chunk 8), transformer, ftt, ftt-conv, hybrid,\n"
        "           structformer;\n"
        "           treelstm, childsum, rnn, mvrnn, rntn, treernn,\n"
        "           treecell on the given trees (supervision at every labelled "
        "node)\n"
        "  metrics: sentence accuracy on dev (selection) and test; the tree "
        "models\n"
        "           also over all nodes\n"
        "  status:  reader and both label sets: available\n"
        "           (grove nlp data --task sst2|sst5); training: as logic\n"
        "\n"
        "snli     Stanford NLI, sentence pairs (Bowman et al. 2015)\n"
        "  data:    snli_1.0_{train,dev,test}.jsonl (about 550k / 10k / 10k "
        "pairs;\n"
        "           not on these machines)\n"
        "  models:  lstm, onlstm, om, ft, cft, fft, structformer (pairs "
        "encoded\n"
        "           apart,\n"
        "           [u; v; u*v; |u-v|], MLP 1024)\n"
        "  metrics: test accuracy (selection on dev)\n"
        "  status:  reader and classifier: available\n"
        "           (grove nlp classify train --task snli --data DIR), tested "
        "only on\n"
        "           a 12-pair sample written by hand in the SNLI format\n"
        "           (tests/fixtures/snli)\n"
        "\n"
        "mlm      masked language modelling that induces dependency trees\n"
        "         (UDGN, StructFormer)\n"
        "  data:    Mikolov's PTB text or WSJ trees (the NLTK sample by "
        "default for\n"
        "           the trees)\n"
        "  models:  udgn (its Table 4.4 ablations as flags), structformer, "
        "transformer\n"
        "  metrics: masked-token perplexity over 5 maskings; UAS, UUAS, root "
        "accuracy\n"
        "           of the induced trees (argmax, chuliu, eisner decoders) "
        "against\n"
        "           converted trees (NOT comparable with the thesis's "
        "Stanford\n"
        "           dependencies); chain and random baselines\n"
        "  status:  training and evaluation: available (grove nlp mlm "
        "train|eval);\n"
        "           parsing: available (grove nlp depparse; grove nlp deps\n"
        "           convert|eval for gold trees and CoNLL files)\n"
        "\n"
        "seq2seq  sequence to sequence: parallel text (TSV source TAB "
        "target),\n"
        "         MLU (Wangperawong 2018)\n"
        "  data:    bring your own parallel text (IWSLT, WMT are not on these\n"
        "           machines); MLU: generated\n"
        "  models:  the Transformer encoder-decoder (pre- or post-norm; the "
        "FastTrees\n"
        "           gate, linear or conv)\n"
        "  metrics: corpus BLEU as sacreBLEU's default (13a, exp smoothing), "
        "sequence\n"
        "           accuracy\n"
        "  status:  training, evaluation and translation on parallel text: "
        "available\n"
        "           (grove nlp seq2seq train|eval|translate --task tsv: joint "
        "BPE,\n"
        "           label smoothing 0.1, noam schedule, greedy and beam "
        "decoding with\n"
        "           length penalty); MLU generated from --seed (--task mlu,\n"
        "           docs/nlp/mlu.md); --resume, checkpoint averaging\n"
        "           (--average-last N)\n");
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_tasks = {
    "nlp tasks",
    "List the NLP tasks with their data, models and metrics, and what "
    "works now.",
    "",
    "Example:\n"
    "  grove nlp tasks",
    run_tasks,
};

/* ---- grove nlp corpus --------------------------------------------------- */

static int run_corpus(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    int first = 0;
    const char *data = NULL;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("data", "DIR",
                            "folder with ptb.train.txt, ptb.valid.txt, "
                            "ptb.test.txt",
                            &data),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, 0, 0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    struct nlp_corpus c;
    if (nlp_corpus_load(&c, data) < 0) {
        return cli_fail(cmd);
    }
    struct nlp_unigram u;
    if (nlp_unigram_fit(&u, c.ids[NLP_TRAIN], c.n_tokens[NLP_TRAIN],
                        c.vocab.size) < 0) {
        nlp_corpus_free(&c);
        return cli_fail(cmd);
    }
    char a[32], b[32], d[32];
    printf("corpus:      %s\n", data);
    printf("vocabulary:  %s types (%s from train), <eos> id %d, <unk> id %d\n",
           thousands(c.vocab.size, a, sizeof a),
           thousands(c.n_types_train, b, sizeof b), c.eos, c.unk);
    static const int32_t batch[NLP_N_SPLITS] = {20, 10, 1};
    printf("\n%-6s %10s %8s %11s   %s\n", "split", "tokens", "lines",
           "unigram ppl", "batchify");
    for (int s = 0; s < NLP_N_SPLITS; s++) {
        size_t rows = nlp_batchify_rows(c.n_tokens[s], batch[s]);
        printf("%-6s %10s %8s %11.2f   B=%d: %s rows (%zu tokens dropped)\n",
               nlp_split_name(s), thousands((int64_t)c.n_tokens[s], a, sizeof a),
               thousands((int64_t)c.n_lines[s], b, sizeof b),
               nlp_unigram_perplexity(&u, c.ids[s], c.n_tokens[s]), batch[s],
               thousands((int64_t)rows, d, sizeof d),
               c.n_tokens[s] - rows * (size_t)batch[s]);
    }
    printf("\nunigram ppl: a unigram model estimated on train (with <eos>); "
           "any LM must beat its test value.\n");
    printf("first ids:  ");
    for (int32_t i = 0; i < c.vocab.size && i < 8; i++) {
        printf(" %s=%d", nlp_vocab_word(&c.vocab, i), i);
    }
    printf(" ...\n");
    nlp_unigram_free(&u);
    nlp_corpus_free(&c);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_corpus = {
    "nlp corpus",
    "Load the PTB language-modelling corpus: vocabulary, token counts, "
    "batch shapes, unigram perplexity.",
    "",
    "Example:\n"
    "  grove nlp corpus --data data/ptb",
    run_corpus,
};

/* ---- grove nlp parse ---------------------------------------------------- */

enum baseline { B_RIGHT, B_LEFT, B_BALANCED, B_RANDOM, B_MODEL };

static int run_parse(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    int first = 0;
    const char *trees = NULL, *baseline_text = NULL, *split_text = NULL;
    const char *ckpt = NULL;
    /* max_len CLI_UNSET: not given (all lengths; -1 below) */
    int max_len = CLI_UNSET, show = 0, all_labels = 0, layer = 2;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("trees", "PATH",
                            "gold trees: treebank.zip, a folder of "
                            "wsj_NNNN.mrg (the full WSJ) or one .mrg file",
                            &trees),
        CLI_STRING("baseline", "right|left|balanced|random", NULL,
                   "parse with this baseline (needs no model)",
                   &baseline_text),
        CLI_STRING("checkpoint", "FILE", NULL,
                   "parse with the syntactic distances of this ON-LSTM "
                   "(grove nlp lm train's best.ckpt)",
                   &ckpt),
        CLI_INT("layer", "L", "2",
                "with --checkpoint: the layer whose distances are used "
                "(1-based; the reference uses 2)",
                &layer),
        CLI_INT("max-len", "N", NULL,
                "only sentences of at most N words (default: all lengths; "
                "WSJ10 is 10)",
                &max_len),
        CLI_STRING("split", "all|test", "all",
                   "all: sections 00-24 (WSJ10 with --max-len 10 on the "
                   "full WSJ); test: section 23 (WSJ test)",
                   &split_text),
        CLI_FLAG("all-labels", "per-label recall for every label, not only "
                 "ADJP NP PP INTJ", &all_labels),
        CLI_INT("show", "N", "0",
                "print the gold and predicted trees of the first N sentences",
                &show),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_SEED | CLI_COMMON_DEVICE |
                           CLI_COMMON_THREADS | CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if ((baseline_text == NULL) == (ckpt == NULL)) {
        return cli_usage_error(cmd, "give either --checkpoint FILE (an "
                               "ON-LSTM) or --baseline NAME");
    }
    enum baseline which;
    const char *parser_name;
    char model_desc[1024];
    struct gr_ctx_config cc;
    if (ckpt != NULL) {
        which = B_MODEL, parser_name = model_desc;
        if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
            return rc;
        }
    } else if (strcmp(baseline_text, "right") == 0) {
        which = B_RIGHT, parser_name = "right-branching baseline";
    } else if (strcmp(baseline_text, "left") == 0) {
        which = B_LEFT, parser_name = "left-branching baseline";
    } else if (strcmp(baseline_text, "balanced") == 0) {
        which = B_BALANCED, parser_name = "balanced baseline (split floor(n/2))";
    } else if (strcmp(baseline_text, "random") == 0) {
        which = B_RANDOM,
        parser_name = "random baseline (merge a random adjacent pair)";
    } else {
        return cli_usage_error(cmd, "--baseline expects right, left, "
                               "balanced or random, got '%s'",
                               baseline_text);
    }
    enum nlp_tree_split split;
    if (strcmp(split_text, "all") == 0) {
        split = NLP_TREES_ALL;
    } else if (strcmp(split_text, "test") == 0) {
        split = NLP_TREES_TEST;
    } else {
        return cli_usage_error(cmd, "--split expects all or test, got '%s'",
                               split_text);
    }
    /* --layer's upper end is the model's layer count, checked when the
     * checkpoint is read */
    const struct cli_range ranges[] = {
        CLI_AT_LEAST("--layer", layer, 1),
        CLI_AT_LEAST("--max-len", max_len, 1),
        CLI_AT_LEAST("--show", show, 0),
    };
    if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) {
        return rc;
    }
    if (max_len == CLI_UNSET) {
        max_len = -1; /* nlp_treebank_selected: every length */
    }

    struct nlp_treebank tb;
    if (nlp_treebank_read(&tb, trees) < 0) {
        return cli_fail(cmd);
    }
    if (split == NLP_TREES_TEST) {
        int has23 = 0;
        for (int32_t f = 0; f < tb.n_files; f++) {
            has23 |= tb.files[f].section == 23;
        }
        if (!has23) {
            gr_error(GR_EINVAL, "--split test needs WSJ section 23 "
                     "(wsj_23NN.mrg), which %s does not hold%s", trees,
                     nlp_treebank_coverage(&tb) == 1
                         ? " (NLTK's sample is sections 00-01)" : "");
            nlp_treebank_free(&tb);
            return cli_fail(cmd);
        }
    }
    int32_t max_words = 1;
    for (int32_t i = 0; i < tb.n_sentences; i++) {
        if (tb.sentences[i].n_words > max_words) {
            max_words = tb.sentences[i].n_words;
        }
    }
    struct nlp_span *pred = malloc((size_t)max_words * sizeof *pred);
    struct nlp_span *work = malloc(2 * (size_t)max_words * sizeof *work);
    size_t text_cap = (size_t)max_words * 64 + 64;
    char *text = malloc(text_cap);
    if (pred == NULL || work == NULL || text == NULL) {
        free(pred);
        free(work);
        free(text);
        nlp_treebank_free(&tb);
        gr_error(GR_ENOMEM, "out of memory");
        return cli_fail(cmd);
    }
    float **dist = NULL;
    if (which == B_MODEL) {
        unsigned char *want = calloc((size_t)tb.n_sentences + 1, 1);
        for (int32_t i = 0; want != NULL && i < tb.n_sentences; i++) {
            want[i] = (unsigned char)nlp_treebank_selected(&tb, i, split,
                                                           max_len);
        }
        rc = want == NULL ? gr_error(GR_ENOMEM, "out of memory")
                          : lm_cli_parse_distances(ckpt, &cc, layer, &tb, want,
                                                   common.quiet, &dist,
                                                   model_desc,
                                                   sizeof model_desc);
        free(want);
        if (rc < 0) {
            free(pred);
            free(work);
            free(text);
            nlp_treebank_free(&tb);
            return cli_fail(cmd);
        }
    }
    struct gr_philox_stream rng = gr_philox_stream_init(common.seed, 0);
    struct nlp_parse_eval ev;
    nlp_parse_eval_init(&ev);
    int32_t n_empty = 0, n_shown = 0;
    rc = 0;
    for (int32_t i = 0; i < tb.n_sentences && rc == 0; i++) {
        const struct nlp_sentence *s = &tb.sentences[i];
        int32_t sec = tb.files[s->file].section;
        int in_split = split == NLP_TREES_TEST ? sec == 23
                                               : (sec < 0 || sec <= 24);
        if (in_split && s->n_words == 0) {
            n_empty++;
        }
        if (!nlp_treebank_selected(&tb, i, split, max_len)) {
            continue;
        }
        int32_t m = s->n_words, n = 0;
        switch (which) {
        case B_RIGHT: n = nlp_parse_right_branching(m, pred); break;
        case B_LEFT: n = nlp_parse_left_branching(m, pred); break;
        case B_BALANCED: n = nlp_parse_balanced(m, pred); break;
        case B_RANDOM: n = nlp_parse_random(m, &rng, pred, work); break;
        case B_MODEL: n = nlp_parse_distances(dist[i], m, pred); break;
        }
        rc = nlp_parse_eval_add(&ev, m, pred, n, s->gold, s->n_gold,
                                s->labeled, s->n_labeled);
        if (rc == 0 && n_shown < show) {
            n_shown++;
            printf("sentence %d (%s, tree %d), %d words\n", n_shown,
                   tb.files[s->file].name, s->index + 1, m);
            if (nlp_tree_format(s->words, m, s->gold, s->n_gold, work, text,
                                text_cap) >= 0) {
                printf("  gold:      %s\n", text);
            }
            if (nlp_tree_format(s->words, m, pred, n, work, text, text_cap) >=
                0) {
                printf("  predicted: %s\n", text);
            }
        }
    }
    if (rc < 0) {
        free(pred);
        free(work);
        free(text);
        nlp_parse_eval_free(&ev);
        lm_cli_free_distances(dist, tb.n_sentences);
        nlp_treebank_free(&tb);
        return cli_fail(cmd);
    }
    struct nlp_parse_scores sc;
    nlp_parse_eval_scores(&ev, &sc);
    char set_name[512], a[32], b[32];
    nlp_treebank_set_name(&tb, split, max_len, set_name, sizeof set_name);
    if (n_shown > 0) {
        printf("\n");
    }
    printf("set:        %s: %s sentences", set_name,
           thousands(sc.n_sentences, a, sizeof a));
    printf(" (of %s trees in %d files of %s)\n",
           thousands(tb.n_sentences, b, sizeof b), tb.n_files, tb.source);
    if (n_empty > 0) {
        printf("skipped:    %d sentences with no word left after removing "
               "punctuation and empty elements\n", n_empty);
    }
    printf("parser:     %s", parser_name);
    if (which == B_RANDOM) {
        printf(", seed %llu", (unsigned long long)common.seed);
    }
    printf("\n\n");
    if (sc.n_sentences == 0) {
        printf("no sentence selected: nothing to score\n");
    } else {
        printf("f1_sentence_mean      %6.2f   mean of per-sentence F1 (the "
               "reference's \"Mean F1\"; the published baselines' metric)\n",
               sc.f1_sentence_mean);
        printf("f1_corpus_evalb       %6.2f   corpus F1 with the "
               "whole-sentence bracket (what EVALB/COLLINS.prm computes)\n",
               sc.f1_corpus_evalb);
        printf("f1_corpus_nontrivial  %6.2f   corpus F1 without it\n",
               sc.f1_corpus_nontrivial);
        printf("mean depth            %6.2f   brackets around a word, root "
               "included\n", sc.mean_depth);
        printf("\nper-label recall (gold constituents of >= 2 words whose "
               "span is predicted):\n");
        static const char *const main_labels[] = {"ADJP", "NP", "PP", "INTJ"};
        for (int k = 0; k < 4; k++) {
            int64_t cor, tot;
            nlp_parse_eval_label(&ev, nlp_treebank_label(&tb, main_labels[k]),
                                 &cor, &tot);
            if (tot > 0) {
                printf("  %-6s %6.2f %%  (%s of %s)\n", main_labels[k],
                       100.0 * (double)cor / (double)tot,
                       thousands(cor, a, sizeof a), thousands(tot, b, sizeof b));
            } else {
                printf("  %-6s    n/a   (no gold item)\n", main_labels[k]);
            }
        }
        if (all_labels) {
            for (int32_t l = 0; l < tb.n_labels; l++) {
                int64_t cor, tot;
                int main_label = 0;
                for (int k = 0; k < 4; k++) {
                    main_label |= strcmp(tb.labels[l], main_labels[k]) == 0;
                }
                nlp_parse_eval_label(&ev, l, &cor, &tot);
                if (main_label || tot == 0) {
                    continue;
                }
                printf("  %-6s %6.2f %%  (%s of %s)\n",
                       tb.labels[l][0] ? tb.labels[l] : "(none)",
                       100.0 * (double)cor / (double)tot,
                       thousands(cor, a, sizeof a), thousands(tot, b, sizeof b));
            }
        }
        if (nlp_treebank_coverage(&tb) == 1) {
            printf("\nnote: the NLTK sample is WSJ sections 00-01, inside "
                   "PTB-LM's training text; the published sets have 7,422\n"
                   "sentences (sections 00-24, <= 10 words) and 2,416 (section "
                   "23): compare with published numbers only approximately.\n");
        }
        if (which == B_RANDOM) {
            printf("note: one seed; single seeds vary by about 1 point on "
                   "NLTK-sample WSJ10 (average several --seed values).\n");
        }
    }
    free(pred);
    free(work);
    free(text);
    nlp_parse_eval_free(&ev);
    lm_cli_free_distances(dist, tb.n_sentences);
    nlp_treebank_free(&tb);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_parse = {
    "nlp parse",
    "Evaluate unsupervised constituency parsing on WSJ trees: both F1s, "
    "per-label recall, depth.",
    "",
    "Reads the gold trees and preprocesses them as the ON-LSTM reference does "
    "(docs/tasks.md),\nthen scores the chosen parser. Examples:\n"
    "  grove nlp parse --trees treebank.zip --baseline right "
    "\\\n      --max-len 10   # NLTK-sample WSJ10\n"
    "  grove nlp parse --trees /data/wsj --baseline left "
    "\\\n      --split test   # WSJ test (full WSJ)",
    run_parse,
};

/* ---- grove nlp syneval -------------------------------------------------- */

struct unigram_scorer {
    const struct nlp_unigram *u;
    struct gr_progress progress;
    uint64_t done;
};

static int score_unigram(void *ctx, int32_t n, const int32_t *const *ids,
                         const int32_t *lens, double *logprob)
{
    struct unigram_scorer *us = ctx;
    for (int32_t i = 0; i < n; i++) {
        double s = 0.0;
        for (int32_t t = 1; t < lens[i]; t++) {
            s += us->u->logp[ids[i][t]];
        }
        logprob[i] = s;
    }
    us->done += (uint64_t)n;
    gr_progress_update(&us->progress, us->done);
    return 0;
}

static void print_acc(const struct nlp_syneval_case *c, int k)
{
    double acc = nlp_syneval_accuracy(c, k);
    if (isnan(acc)) {
        printf(" %5s", "n/a");
    } else {
        printf(" %5.2f", acc);
    }
}

/* Prints a syneval run's results (stdout). */
static void print_syneval(const char *data, const struct nlp_syneval *setp,
                          int64_t all_items,
                          const struct nlp_syneval_results *resp,
                          const char *scorer, int32_t vocab_size)
{
    char a[32], b[32];
    if (setp->n_items < all_items) {
        printf("data:       %s (%s of its %s items, spread evenly "
               "(--limit), %d tasks)\n",
               data, thousands(setp->n_items, a, sizeof a),
               thousands(all_items, b, sizeof b), setp->tasks.size);
    } else {
        printf("data:       %s (%s items, %d tasks)\n", data,
               thousands(setp->n_items, a, sizeof a), setp->tasks.size);
    }
    printf("scorer:     %s\n", scorer);
    printf("vocabulary: %d word types of the data are not in the %s-word "
           "vocabulary (-> <unk>)%s; %s items collapse to identical "
           "sentences and are skipped\n",
           resp->oov.size, thousands(vocab_size, b, sizeof b),
           resp->dot_is_unk ? ", '.' too" : "",
           thousands(resp->n_skipped, a, sizeof a));
    printf("\n%-42s %7s %7s  %-17s  %-17s  %-17s\n", "case (animate + "
           "inanimate pooled)", "items", "skipped", "accuracy",
           "thesis ON-LSTM", "thesis LSTM");
    for (int32_t k = 0; k < resp->n_cases; k++) {
        const struct nlp_syneval_case *cs = &resp->cases[k];
        printf("%-42s %7s %7s ", cs->title, thousands(cs->items, a, sizeof a),
               thousands(cs->skipped, b, sizeof b));
        int nk = cs->is_triple ? 3 : 1;
        for (int j = 0; j < 3; j++) {
            if (j < nk) {
                print_acc(cs, j);
            } else {
                printf("      ");
            }
        }
        printf("  ");
        for (int j = 0; j < 3; j++) {
            if (j < nk && !isnan(cs->published_onlstm[j])) {
                printf(" %5.2f", cs->published_onlstm[j]);
            } else {
                printf("      ");
            }
        }
        printf("  ");
        for (int j = 0; j < 3; j++) {
            if (j < nk && !isnan(cs->published_lstm[j])) {
                printf(" %5.2f", cs->published_lstm[j]);
            } else {
                printf("      ");
            }
        }
        printf("\n");
    }
    printf("\naccuracy: pairs G > U (strict: a tie is wrong); NPI triples G > "
           "I, I > U, G > U; over items not skipped.\n"
           "thesis columns: Table 3.3, LMs trained on ~90M words of "
           "Wikipedia, not comparable to a PTB-trained model.\n");
}

/* grove nlp syneval --checkpoint: the language model as scorer. */
static int syneval_report(const struct cli_command *cmd, const char *data,
                          const char *ckpt, const struct gr_ctx_config *cc,
                          int32_t batch, int64_t limit, int quiet)
{
    struct nlp_syneval set;
    if (nlp_syneval_read(&set, data) < 0) {
        return cli_fail(cmd);
    }
    int64_t all_items = set.n_items;
    nlp_syneval_limit(&set, limit);
    struct nlp_syneval_results res;
    char scorer[1024];
    int32_t vocab_size = 0;
    if (lm_cli_syneval(ckpt, cc, &set, batch, quiet, &res, &vocab_size,
                       scorer, sizeof scorer) < 0) {
        nlp_syneval_free(&set);
        return cli_fail(cmd);
    }
    print_syneval(data, &set, all_items, &res, scorer, vocab_size);
    nlp_syneval_results_free(&res);
    nlp_syneval_free(&set);
    return CLI_EXIT_OK;
}

static int run_syneval(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    int first = 0;
    const char *data = NULL, *ptb = NULL, *model = NULL, *ckpt = NULL;
    int batch = 64, limit = 0;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("data", "FILE",
                            "the Marvin & Linzen TSV "
                            "(marvin_linzen_2018.tsv)",
                            &data),
        CLI_INT("limit", "N", "0",
                "score N items spread evenly over the file, every case "
                "keeping its share (a quick look; 0: all)",
                &limit),
        CLI_STRING("model", "unigram", "unigram",
                   "the scorer without --checkpoint: unigram (estimated on "
                   "PTB train)",
                   &model),
        CLI_STRING("checkpoint", "FILE", NULL,
                   "score with this LSTM or ON-LSTM language model (grove "
                   "nlp lm train's best.ckpt; its own vocabulary)",
                   &ckpt),
        CLI_INT("batch-size", "N", "64",
                "with --checkpoint: sentences per forward pass", &batch),
        CLI_STRING("ptb", "DIR", NULL,
                   "PTB folder: the vocabulary (unknown words -> <unk>) and "
                   "the unigram counts (required without --checkpoint)",
                   &ptb),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_QUIET | CLI_COMMON_DEVICE |
                           CLI_COMMON_THREADS,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    /* checked whether or not --checkpoint uses them: a typo is refused
     * the same way in both modes */
    const struct cli_range ranges[] = {
        CLI_AT_LEAST("--limit", limit, 0),
        CLI_AT_LEAST("--batch-size", batch, 1),
    };
    if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) {
        return rc;
    }
    if (ckpt != NULL) {
        if ((rc = cli_need_path(cmd, "--data", data)) != CLI_CONTINUE) {
            return rc;
        }
        struct gr_ctx_config cc;
        if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
            return rc;
        }
        return syneval_report(cmd, data, ckpt, &cc, batch, limit,
                              common.quiet);
    }
    if (strcmp(model, "unigram") != 0) {
        return cli_usage_error(cmd, "--model expects unigram (the LSTM and "
                               "ON-LSTM language models are scored with "
                               "--checkpoint FILE), got '%s'", model);
    }
    if (ptb == NULL) {
        return cli_usage_error(cmd, "--ptb DIR is required (vocabulary and "
                               "unigram counts)");
    }
    if ((rc = cli_need_path(cmd, "--data", data)) != CLI_CONTINUE) {
        return rc;
    }
    struct nlp_corpus c;
    if (nlp_corpus_load(&c, ptb) < 0) {
        return cli_fail(cmd);
    }
    struct nlp_unigram u;
    struct nlp_syneval set;
    if (nlp_unigram_fit(&u, c.ids[NLP_TRAIN], c.n_tokens[NLP_TRAIN],
                        c.vocab.size) < 0) {
        nlp_corpus_free(&c);
        return cli_fail(cmd);
    }
    if (nlp_syneval_read(&set, data) < 0) {
        nlp_unigram_free(&u);
        nlp_corpus_free(&c);
        return cli_fail(cmd);
    }
    int64_t all_items = set.n_items;
    nlp_syneval_limit(&set, limit);
    struct unigram_scorer us;
    memset(&us, 0, sizeof us);
    us.u = &u;
    /* the run sets the total (distinct sentences) before scoring */
    gr_progress_start(&us.progress, "scoring", 0, "sentences", common.quiet);
    struct nlp_syneval_results res;
    rc = nlp_syneval_run_progress(&set, &c.vocab, c.eos, c.unk,
                                  score_unigram, &us, 4096, &us.progress,
                                  &res);
    gr_progress_finish(&us.progress);
    if (rc < 0) {
        nlp_syneval_free(&set);
        nlp_unigram_free(&u);
        nlp_corpus_free(&c);
        return cli_fail(cmd);
    }
    char scorer[1024];
    snprintf(scorer, sizeof scorer,
             "unigram LM estimated on %s/train (sum of log p over the words "
             "and the final '.')", ptb);
    print_syneval(data, &set, all_items, &res, scorer, c.vocab.size);
    nlp_syneval_results_free(&res);
    nlp_syneval_free(&set);
    nlp_unigram_free(&u);
    nlp_corpus_free(&c);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_nlp_syneval = {
    "nlp syneval",
    "Targeted syntactic evaluation (Marvin & Linzen 2018) with a language "
    "model as scorer.",
    "",
    "Without --checkpoint the scorer is PTB's unigram model (--ptb). A "
    "progress line shows the sentences scored, the total and the ETA.\n\n"
    "Examples (a quick look at 2,000 items, the whole file, a trained "
    "model):\n"
    "  grove nlp syneval --data data/marvin_linzen_2018.tsv --ptb data/ptb "
    "\\\n      --limit 2000\n"
    "  grove nlp syneval --data data/marvin_linzen_2018.tsv --ptb data/ptb\n"
    "  grove nlp syneval --data data/marvin_linzen_2018.tsv "
    "\\\n      --checkpoint runs/smoke/best.ckpt",
    run_syneval,
};
