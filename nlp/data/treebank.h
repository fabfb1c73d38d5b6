/* nlp/data/treebank.h — Penn Treebank .mrg reader and the parsing-evaluation
 * preprocessing of lm_and_parsing.md §2 (as the reference's data_ptb.py).
 *
 * Sources (nlp_treebank_read picks by what PATH is):
 *   - a zip archive, read directly (core/zip.h): NLTK's treebank.zip
 *     (`treebank/combined/wsj_NNNN.mrg`) or a zip of the full WSJ;
 *   - a folder, searched recursively: the LDC layout `WSJ/NN/WSJ_NNNN.MRG`,
 *     `wsj/NN/wsj_NNNN.mrg`, or NLTK's unpacked `combined/` folder;
 *   - a single .mrg file.
 * In a zip or folder only files named wsj_NNNN.mrg (any case) are read,
 * sorted by NNNN (section = NNNN / 100); other files (README.mrg, .pos,
 * .prd) are skipped and counted.
 *
 * Trees are bracketed s-expressions "(LABEL child ...)", leaves are atoms;
 * a file holds any number of them. As NLTK's reader, an empty outer
 * bracket with one child "( (S ...) )" is stripped to "(S ...)". Then, per
 * tree (§2.2):
 *   words    the leaves of preterminals whose tag is one of the 36 word
 *            tags (CC CD DT ... WRB; punctuation, $, #, -NONE- and combined
 *            tags such as JJ|RB dropped), lower-cased (ASCII), each maximal
 *            digit run replaced by "N";
 *   gold     the unlabelled gold tree: children without kept words
 *            removed, unary chains collapsed; given as its brackets (every
 *            internal node, root included: every node of the original tree
 *            with >= 2 children that keep words), in pre-order;
 *   labeled  the labelled constituents for per-label recall (§3.3): every
 *            non-preterminal node covering >= 2 kept words, root included,
 *            members of unary chains separately, with its label cut at the
 *            first '-' or '=' (NP-SBJ-1 -> NP); a set of distinct
 *            (start, end, label), as the reference's.
 * Sentences with no kept word are kept (n_words = 0) and counted in
 * n_empty: evaluation must skip and report them.
 *
 * Errors: malformed input is GR_EFORMAT naming the file, line and byte,
 * e.g. "treebank.zip:treebank/combined/wsj_0007.mrg:12: unmatched ')'
 * (byte 345)". Memory: the treebank owns everything it points to until
 * nlp_treebank_free. Thread safety: read-only use is safe from any thread.
 *
 *   struct nlp_treebank tb;
 *   if (nlp_treebank_read(&tb, "treebank.zip") < 0) { ... gr_last_error() }
 *   for (int32_t i = 0; i < tb.n_sentences; i++) {
 *       const struct nlp_sentence *s = &tb.sentences[i];
 *       if (s->n_words == 0 || s->n_words > 10) continue;   // WSJ10-style
 *       ... s->words, s->gold[s->n_gold], s->labeled[s->n_labeled]
 *   }
 *   nlp_treebank_free(&tb);
 */
#ifndef GROVE_NLP_TREEBANK_H
#define GROVE_NLP_TREEBANK_H

#include <stddef.h>
#include <stdint.h>

#include "nlp/tasks/parse.h"
#include "nlp/data/vocab.h"

struct nlp_sentence {
    int32_t file;    /* index into tb->files */
    int32_t index;   /* position of the tree in its file, 0-based */
    int32_t n_words; /* kept words; 0 = empty (skip it) */
    const char *const *words;        /* [n_words] */
    int32_t n_gold;                  /* n_words - 1 at most */
    const struct nlp_span *gold;     /* [n_gold], root first */
    int32_t n_labeled;
    const struct nlp_labeled_span *labeled; /* [n_labeled] */
    const char *tree; /* the tree's bracketed text as read, NUL-terminated */
    int32_t line;     /* the line of the file where the tree begins */
};

struct nlp_treebank_file {
    const char *name; /* path in the archive/folder (or the file path) */
    int32_t number;   /* NNNN of wsj_NNNN.mrg, -1 if the name has none */
    int32_t section;  /* number / 100, -1 if unknown */
    int32_t first_sentence, n_sentences;
};

enum nlp_treebank_source {
    NLP_TREEBANK_ZIP,
    NLP_TREEBANK_FOLDER,
    NLP_TREEBANK_FILE,
};

struct nlp_treebank {
    char source[4096];
    enum nlp_treebank_source kind;
    int32_t n_files;
    struct nlp_treebank_file *files;
    int32_t n_skipped_files; /* entries/files that are not wsj_NNNN.mrg */
    int32_t n_sentences;
    struct nlp_sentence *sentences;
    int32_t n_empty; /* sentences with no kept word */
    int32_t n_labels;
    const char *const *labels; /* [n_labels] label names, ids of labeled */
    struct nlp_treebank_store *store; /* internal */
};

/* Reads a zip, a folder or a single .mrg file (see above). On failure the
 * treebank is left freed. GR_EIO if PATH cannot be read, GR_EFORMAT for a
 * malformed archive or tree, GR_EINVAL if there is no wsj_NNNN.mrg. */
int nlp_treebank_read(struct nlp_treebank *tb, const char *path);

/* Reads one .mrg file's text[0, n) (for tests and tools); `name` is used
 * in messages and as the file name (wsj_NNNN in it sets the section). */
int nlp_treebank_read_text(struct nlp_treebank *tb, const char *text,
                           size_t n, const char *name);

void nlp_treebank_free(struct nlp_treebank *tb);

/* Id of a label ("NP"), or -1 if no item has it. */
int32_t nlp_treebank_label(const struct nlp_treebank *tb, const char *name);

/* 1 if `tag` is one of the 36 word tags of §2.2.1. */
int nlp_is_word_tag(const char *tag, size_t len);

/* Which sentences form an evaluation set (§2.3). */
enum nlp_tree_split {
    NLP_TREES_ALL,  /* sections 00-24 (and files of unknown section) */
    NLP_TREES_TEST, /* section 23 */
};

/* 1 if sentence i belongs to `split`, has >= 1 word and, when
 * max_len >= 0, at most max_len words. */
int nlp_treebank_selected(const struct nlp_treebank *tb, int32_t i,
                          enum nlp_tree_split split, int32_t max_len);

/* What the files are: 1 if every file is in sections 00-01 (NLTK's WSJ
 * sample, or part of it); 2 if all 25 sections 00-24 are present (the full
 * WSJ); 0 otherwise. */
int nlp_treebank_coverage(const struct nlp_treebank *tb);

/* The honest name of an evaluation set, e.g. "NLTK-sample WSJ10",
 * "NLTK-sample WSJ, all lengths", "WSJ10", "WSJ test", "WSJ files
 * (12 files, sections 02-03), <= 20 words". Writes into buf[cap]. */
const char *nlp_treebank_set_name(const struct nlp_treebank *tb,
                                  enum nlp_tree_split split, int32_t max_len,
                                  char *buf, size_t cap);

/* The model input of §2.2.5: out[0] = out[n_words + 1] = eos and
 * out[1 + i] = id of word i, unknown words -> unk. out has n_words + 2
 * entries. Returns how many words were unknown. */
int32_t nlp_sentence_ids(const struct nlp_sentence *s,
                         const struct nlp_vocab *v, int32_t eos, int32_t unk,
                         int32_t *out);

#endif
