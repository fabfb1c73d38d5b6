/* nlp/data/deptree.h — dependency trees (dependency_parsing.md §1-§3): a
 * CoNLL-X / CoNLL-U reader, grove's constituency -> dependency converter
 * with Collins head rules, and the token filtering with gold-head
 * rerouting that every dependency evaluation applies first.
 *
 * A sentence of n tokens stores 0-based heads with the root pointing to
 * itself (heads[r] == r); a tree read from CoNLL may have several roots.
 *
 * CoNLL reader: 10 TAB-separated columns (a line without any TAB is split
 * on runs of spaces), a blank line between sentences, lines starting with
 * '#' ignored; CoNLL-U multiword ranges ("3-4") and empty nodes ("5.1")
 * are skipped. Column 1 ID (1..n in order), 2 FORM, `tag_column` the POS
 * tag, 7 HEAD (0 = root), 8 DEPREL. tag_column 0 picks the default: 4 for
 * CoNLL-X, 5 (XPOS) for CoNLL-U (a path ending in ".conllu", or a file
 * with a range/empty-node ID or a "# sent_id" / "# text" comment), since
 * UPOS tags are not PTB tags. A malformed line is GR_EFORMAT naming the
 * file and the line, e.g. "dev.conll:12: HEAD 'x' is not a number".
 *
 * Converter (§2, NOT the thesis's conversion: the thesis scored Stanford
 * basic dependencies; UAS on these trees is not comparable with it):
 * -NONE- leaves and emptied constituents deleted, labels cut at the first
 * '-' or '=' (NP-SBJ-1 -> NP; a label that starts with '-' is kept), the
 * label-less root wrapper dropped, head children by the Collins table and
 * NP rules, every non-head child's lexical head attached to the head
 * child's. All tokens are kept (punctuation too); the filtering is
 * nlp_deps_filter. DEPREL of a converted arc is "PARENT/CHILD" (the
 * labels of the constituent and of the non-head child, e.g. "S/NP",
 * "VP/NP", "NP/DT"), "ROOT" for the root: a structural label for the
 * per-label recall, not a Stanford relation.
 *
 * Memory: struct nlp_deptrees owns everything it points to until
 * nlp_deptrees_free. Read-only use is thread-safe.
 *
 *   struct nlp_treebank tb; struct nlp_deptrees all, kept;
 *   nlp_treebank_read(&tb, "treebank.zip");
 *   nlp_deps_from_treebank(&all, &tb, 0);
 *   nlp_deps_filter(&kept, &all);            // §3: word tags only
 *   ... kept.sentences[i].heads ...
 */
#ifndef GROVE_NLP_DEPTREE_H
#define GROVE_NLP_DEPTREE_H

#include <stddef.h>
#include <stdint.h>

#include "nlp/data/treebank.h"

struct nlp_dep_sentence {
    int32_t n;                  /* tokens */
    const char *const *forms;   /* [n] */
    const char *const *tags;    /* [n] */
    const char *const *labels;  /* [n] DEPREL of the arc into each token */
    const int32_t *heads;       /* [n] 0-based, root -> itself */
    const int32_t *orig;        /* [n] position before filtering (or i) */
    int32_t source;             /* sentence index in the source it came from */
    int32_t line;               /* line of the file where it begins */
};

struct nlp_deptrees {
    char name[4096];            /* file or treebank it came from */
    int32_t n_sentences;
    struct nlp_dep_sentence *sentences;
    int32_t n_skipped;          /* nlp_deps_filter: sentences left empty */
    int32_t n_multi_root;       /* sentences with more than one root */
    struct nlp_dep_sentence_store *store; /* internal */
};

/* Reads a CoNLL-X / CoNLL-U file; tag_column 1..10, or 0 for the default.
 * GR_EIO if it cannot be read, GR_EFORMAT (file:line) for a malformed line,
 * GR_EINVAL for a bad tag_column. On failure *d is left freed. */
int nlp_conll_read(struct nlp_deptrees *d, const char *path,
                   int tag_column);

/* The same on text[0, n); `name` is used in messages and decides CoNLL-U
 * by its ".conllu" suffix. */
int nlp_conll_read_text(struct nlp_deptrees *d, const char *text, size_t n,
                        const char *name, int tag_column);

/* Writes CoNLL-X (HEAD 1-based, 0 = root; tag in columns 4 and 5) of every
 * sentence to `f`. Returns 0 or GR_EIO. */
int nlp_conll_write(const struct nlp_deptrees *d, void *file);

/* Converts every tree of a treebank (one dependency sentence per treebank
 * sentence, in the same order: sentences[i].source == i). coord != 0 turns
 * on Collins' coordination tweak (a head child preceded by CC moves two
 * children left). GR_EFORMAT naming file and line for a tree it cannot
 * convert (a leaf beside subtrees, a preterminal with several words). */
int nlp_deps_from_treebank(struct nlp_deptrees *d,
                           const struct nlp_treebank *tb, int coord);

/* Converts the trees of one bracketed text (tests and tools). */
int nlp_deps_from_text(struct nlp_deptrees *d, const char *text, size_t n,
                       const char *name, int coord);

/* §3: keeps the tokens whose tag is a word tag (nlp_is_word_tag); each
 * kept token's head climbs over removed tokens to the first kept one, or
 * becomes a root (self) if it reaches a root; positions renumbered.
 * Sentences left without a token are skipped and counted in n_skipped
 * (`source` keeps the index in `in`'s source). */
int nlp_deps_filter(struct nlp_deptrees *out, const struct nlp_deptrees *in);

/* The §3 rerouting on one head array: keep[i] != 0 for kept tokens; writes
 * out[map(i)] for each kept i (0-based over kept tokens, roots to
 * themselves) and returns the number kept. Used for predictions given on
 * the gold tokens (their mask comes from the gold tags). */
int32_t nlp_deps_reroute(int32_t n, const int32_t *heads,
                         const uint8_t *keep, int32_t *out);

void nlp_deptrees_free(struct nlp_deptrees *d);

#endif
