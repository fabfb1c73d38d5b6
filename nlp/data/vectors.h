/* nlp/data/vectors.h — pre-trained word vectors in the GloVe text format
 * ("WORD v1 ... vD", one word a line, space-separated; word2vec's text
 * format, whose first line is "COUNT DIM", is accepted too), for
 * `--vectors PATH` (issue 25): the rows of a model's word table that the
 * file has are replaced, the others keep their random init.
 *
 * The file is read line by line (GloVe 840B is 5.6 GB). A word may hold
 * spaces (a few GloVe 840B tokens do): the last D fields are the vector,
 * the rest is the word. A line whose last D fields are not all numbers, or
 * with D fields or fewer, is GR_EFORMAT "PATH:LINE: ..."; so is a
 * dimension other than the table's (named with --emsize). When a word
 * occurs twice, the first line wins (GloVe's case-sensitive files have no
 * duplicates; this keeps the rule explicit).
 */
#ifndef GROVE_NLP_DATA_VECTORS_H
#define GROVE_NLP_DATA_VECTORS_H

#include <stdint.h>

/* vocab_text: the words one per line in id order (row i of table is the
 * word on line i; ids >= the number of lines, such as padding, are never
 * written). table [n_rows, dim] on the host. *found (may be NULL): the
 * vocabulary words the file had. */
int nlp_vectors_load(const char *path, const char *vocab_text, float *table,
                     int32_t n_rows, int32_t dim, int32_t *found);

#endif
