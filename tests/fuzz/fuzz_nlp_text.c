/* libFuzzer target for the nlp text readers that take a config or a table
 * in memory: a language model checkpoint's config (nlp_lm_config_read,
 * nlp_lm_config_check, and its vocabulary section, nlp_lm_vocab_read) and
 * the targeted-syntactic-evaluation TSV (nlp_syneval_parse). The first
 * byte picks the reader (even: LM config, odd: syneval), the rest is the
 * text. Never a crash, a leak or an out-of-bounds read; verdicts are
 * tested in tests/nlp/.
 *
 * Seeds: tests/fuzz/seeds/nlp_text/ (make_seeds.py). ctest nlp_fuzz_text
 * replays tests/fuzz/regressions/nlp_text/ and the seeds. */
#include "tests/fuzz/fuzz_util.h"

#include "nlp/data/vocab.h"
#include "nlp/models/onlstm.h"
#include "nlp/tasks/lm.h"
#include "nlp/tasks/syneval.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_accepted = 0;
    if (size == 0) {
        return 0;
    }
    int which = data[0] & 1;
    char *text = fuzz_strdup(data + 1, size - 1);
    if (text == NULL) {
        return 0;
    }
    if (which == 0) {
        struct nlp_lm_config cfg;
        int ok = nlp_lm_config_read(text, "fuzz", &cfg) == 0 &&
                 nlp_lm_config_check(&cfg) == 0;
        struct nlp_vocab v;
        /* the caller frees the vocabulary, as nlp_lm_load does */
        ok &= nlp_lm_vocab_read(text, "fuzz", &v) == 0;
        nlp_vocab_free(&v);
        fuzz_input_accepted = ok;
    } else {
        /* an exact-size copy, so that a read past the text is caught */
        char *exact = malloc(size > 1 ? size - 1 : 1);
        struct nlp_syneval s;
        if (exact != NULL) {
            memcpy(exact, data + 1, size - 1);
            if (nlp_syneval_parse(&s, exact, size - 1, "fuzz.tsv") == 0) {
                fuzz_input_accepted = s.n_items > 0;
                nlp_syneval_free(&s);
            }
            free(exact);
        }
    }
    free(text);
    return 0;
}
