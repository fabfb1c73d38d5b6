/* libFuzzer target for the classification data readers of nlp/data/: the
 * ListOps TSV (nlp_listops_read_text), the logical-inference pairs
 * (nlp_logic_read_text) and the SST trees (nlp_sst_read_text). The first
 * byte picks the reader (0: ListOps, 1: logic, 2: SST, by value mod 3),
 * the rest is the file's text. Never a crash, a leak or an out-of-bounds
 * read; verdicts are tested in tests/nlp/.
 *
 * Seeds: tests/fuzz/seeds/nlp_data/ (make_seeds.py). ctest nlp_fuzz_data
 * replays tests/fuzz/regressions/nlp_data/ and the seeds. */
#include "tests/fuzz/fuzz_util.h"

#include "nlp/data/listops.h"
#include "nlp/data/logic.h"
#include "nlp/data/sst.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_accepted = 0;
    if (size == 0) {
        return 0;
    }
    /* an exact-size copy, so that a read past the text is caught */
    size_t n = size - 1;
    char *text = malloc(n > 0 ? n : 1);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data + 1, n);
    switch (data[0] % 3) {
    case 0: {
        struct nlp_listops_set s;
        if (nlp_listops_read_text(&s, text, n, "fuzz.tsv") == 0) {
            fuzz_input_accepted = s.n > 0;
            nlp_listops_free(&s);
        }
        break;
    }
    case 1: {
        struct nlp_logic_set s;
        nlp_logic_set_init(&s);
        if (nlp_logic_read_text(&s, text, n, "train0") == 0) {
            fuzz_input_accepted = s.n > 0;
        }
        nlp_logic_set_free(&s);
        break;
    }
    default: {
        struct nlp_sst s;
        nlp_sst_init(&s);
        if (nlp_sst_read_text(&s, NLP_TRAIN, text, n, "train.txt") == 0) {
            fuzz_input_accepted = s.n_trees[NLP_TRAIN] > 0;
        }
        nlp_sst_free(&s);
        break;
    }
    }
    free(text);
    return 0;
}
