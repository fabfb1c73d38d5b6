/* nlp/tasks/classify_tasks.h — the task loaders of the classifier harness:
 * logic, ListOps, SST-2 and SST-5 read through nlp/data/{logic,listops,sst}.h
 * into a struct nlp_cls_data (nlp/tasks/classify.h), with the protocols of
 * ordered_memory.md §9 and formal_tasks.md, and a one-paragraph summary of
 * what was read in d->summary (the "data summary" a trainer prints first).
 *
 *   logic    pairs, 7 classes `< > = ^ | # v`, token ids of
 *            ordered_memory.md §6 (12, padding 11), group = k (0..12,
 *            n_groups 13). DIR/train0..train{max_train_ops} minus the
 *            split's pairs; every 10th kept pair is validation; test =
 *            test0..test12 (A/B/C: the pairs with the split's pattern).
 *            Or files: --train FILE (minus the split's pairs; every 10th
 *            kept pair is validation unless --valid FILE), --test FILE.
 *   listops  sequences, 10 classes, ids of formal_tasks.md §2.4 (20,
 *            padding 0), length-bucketed. Train: --train FILE, else
 *            DIR/train_d20s.tsv when present, else generated (§2.5,
 *            listops_generate trees from `seed`). valid_n examples (1,000)
 *            are held out of it by a seeded permutation (all lengths
 *            kept); the rest keep those of <= max_train_tokens (50) tokens,
 *            the others are dropped and counted. Test: --test FILE or
 *            DIR/test_d20s.tsv when present (all lengths), else none.
 *   sst2/5   sequences, 2 / 5 classes, one vocabulary of train+dev+test
 *            words (as written; padding = the last id; the words are
 *            d->vocab_text); train = sentences, or every (non-neutral for
 *            SST-2) node, or distinct phrases (sst_train_unit); dev and
 *            test sentences. With sst_dependency, each tree (or
 *            subtree) is given as its dependency tree (nlp/data/sst_deps.h:
 *            one node per word reading it, labels of the maximal
 *            projections) and d->dep_trees is set.
 *   snli     pairs, 3 classes (entailment, neutral, contradiction), the
 *            JSON lines of nlp/data/snli.h: DIR/snli_1.0_{train,dev,test}
 *            .jsonl or the three files; one lower-cased vocabulary of every
 *            split (padding = the last id); pairs without a gold label
 *            skipped and counted (fasttrees.md §6.4).
 * With only_split (an evaluation), every task reads only what that split
 * needs (below). A path that is given but unreadable is an error;
 * "when present" means
 * the file is silently optional only where this table says so, and the
 * summary says which source was used.
 *
 * Memory: d is the caller's (nlp_cls_data_free). Errors: GR_E* with the
 * reader's message (file and line). Not thread-safe per d.
 *
 *   struct nlp_cls_task_options o;
 *   nlp_cls_task_options_default(&o);
 *   o.data = "data/logic_inference"; o.logic_split = NLP_LOGIC_SPLIT_C;
 *   if (nlp_cls_load_task(&d, "logic", &o) < 0) ... gr_last_error();
 *   fprintf(stderr, "%s\n", d.summary);
 */
#ifndef GROVE_NLP_TASKS_CLASSIFY_TASKS_H
#define GROVE_NLP_TASKS_CLASSIFY_TASKS_H

#include <stdint.h>

#include "nlp/data/logic.h"
#include "nlp/data/sst.h"
#include "nlp/tasks/classify.h"

struct nlp_cls_task_options {
    const char *data;  /* the task's folder, or NULL */
    const char *train; /* explicit files (override DIR's) or NULL */
    const char *valid;
    const char *test;
    /* logic */
    enum nlp_logic_split logic_split; /* FULL */
    int32_t max_train_ops;            /* 6 */
    /* listops */
    int32_t listops_generate;  /* trees generated without a train file: 90,000 */
    int32_t valid_n;           /* held out of train: 1,000 */
    int32_t max_train_tokens;  /* 50 (the reference's 2n-1 <= 100) */
    uint64_t seed;             /* generation and hold-out: 1111 */
    /* -1 (the default): every split, for training. NLP_CLS_TEST or
     * NLP_CLS_VALID: an evaluation of that split, so only the data it
     * needs is read: no training file is read, nor ListOps' trees
     * generated, unless the validation part is held out of them; the
     * other splits stay empty and the summary describes the split
     * evaluated. sst and snli then build their vocabulary from that split
     * alone (nlp_cls_use_vocab maps it onto the checkpoint's). */
    int only_split;
    /* sst */
    enum nlp_sst_unit sst_train_unit; /* NLP_SST_SENTENCES */
    int sst_dependency; /* 1: every SST tree converted to a dependency tree
                         * (nlp/data/sst_deps.h; for childsum), 0: the
                         * constituency trees */
};

void nlp_cls_task_options_default(struct nlp_cls_task_options *o);

/* 1 if `task` is one of logic, listops, sst2, sst5, snli. */
int nlp_cls_task_known(const char *task);

/* Loads `task` into d (initialised here; freed on failure). logic needs
 * o->data or o->train, sst o->data or all three files; listops nothing. */
int nlp_cls_load_task(struct nlp_cls_data *d, const char *task,
                      const struct nlp_cls_task_options *o);

/* For evaluating a checkpoint on data whose vocabulary was built from other
 * files: re-maps every token and tree word of d (loaded with its own
 * data-built vocabulary) onto vocab_text, the checkpoint's words (one per
 * line in id order, padding = the next id, as nlp_cls_model_load gives
 * them). A word absent there becomes the checkpoint's "<unk>", or its
 * padding id when it has no "<unk>"; *n_unknown (may be NULL) counts the
 * distinct words so mapped. d's vocab_text, vocab_size and pad_id become
 * the checkpoint's. GR_EINVAL when d has no word vocabulary (logic,
 * listops: their vocabularies are fixed). */
int nlp_cls_use_vocab(struct nlp_cls_data *d, const char *vocab_text,
                      int32_t *n_unknown);

#endif
