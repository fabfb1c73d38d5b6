/* SST constituency -> dependency trees by the label-free head rule of
 * nlp/data/sst_deps.h. */
#include "nlp/data/sst_deps.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int nlp_sst_punct(const char *word)
{
    static const char *const brackets[] = {"-LRB-", "-RRB-", "-LSB-",
                                           "-RSB-", "-LCB-", "-RCB-"};
    if (word == NULL || word[0] == '\0') {
        return 0;
    }
    for (size_t i = 0; i < sizeof brackets / sizeof brackets[0]; i++) {
        if (strcmp(word, brackets[i]) == 0) {
            return 1;
        }
    }
    for (const char *p = word; *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;
        /* ASCII punctuation: !"#$%&'()*+,-./ :;<=>?@ [\]^_` {|}~ */
        int punct = (c >= 33 && c <= 47) || (c >= 58 && c <= 64) ||
                    (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
        if (!punct) {
            return 0;
        }
    }
    return 1;
}

int nlp_sst_dependency(const struct nlp_sst_tree *t, int32_t k,
                       const struct nlp_vocab *v, int32_t *head,
                       int8_t *label)
{
    if (k < 0 || k >= t->n_nodes) {
        return gr_error(GR_EINVAL, "sst dependency: node %d of a %d-node "
                        "tree", (int)k, (int)t->n_nodes);
    }
    const struct nlp_sst_node *root = &t->nodes[k];
    int32_t base = root->start, n = root->end - root->start;
    int32_t m = 2 * n - 1; /* the subtree's nodes: k .. k + m - 1 */
    if (n < 1 || k + m > t->n_nodes) {
        return gr_error(GR_EINVAL, "sst dependency: node %d spans %d words "
                        "past the tree (line %d)", (int)k, (int)n,
                        (int)t->line);
    }
    int32_t *hd = malloc((size_t)m * sizeof *hd);
    uint8_t *pun = malloc((size_t)m);
    if (hd == NULL || pun == NULL) {
        free(hd);
        free(pun);
        return gr_error(GR_ENOMEM, "sst dependency: out of memory");
    }
    int rc = 0;
    /* pre-order: a node comes before its descendants, so the reverse
     * visits children first, and a word's label is last written by its
     * highest constituent (the maximal projection) */
    for (int32_t j = m - 1; j >= 0 && rc == 0; j--) {
        const struct nlp_sst_node *nd = &t->nodes[k + j];
        if (nd->left < 0) {
            int32_t w = nd->start - base;
            hd[j] = w;
            pun[j] = (uint8_t)nlp_sst_punct(
                nlp_vocab_word(v, t->words[nd->start]));
            label[w] = nd->label;
            continue;
        }
        int32_t l = nd->left - k, r = nd->right - k;
        if (l <= j || r <= j || l >= m || r >= m) {
            rc = gr_error(GR_EINVAL, "sst dependency: node %d has children "
                          "%d, %d outside its subtree (line %d)",
                          (int)(k + j), (int)nd->left, (int)nd->right,
                          (int)t->line);
            break;
        }
        int left_heads = pun[r] && !pun[l];
        int32_t h = left_heads ? l : r, dep = left_heads ? r : l;
        hd[j] = hd[h];
        pun[j] = (uint8_t)(pun[l] && pun[r]);
        head[hd[dep]] = hd[h];
        label[hd[j]] = nd->label;
    }
    if (rc == 0) {
        head[hd[0]] = -1;
    }
    free(hd);
    free(pun);
    return rc;
}
