/* libFuzzer target for the treebank reader (nlp/data/treebank.c): any
 * bytes, as a file, through nlp_treebank_read, which sends "PK\3\4" and
 * "PK\5\6" files to the zip path (core/zip.c over libzip, then every
 * wsj_NNNN.mrg entry through the tree parser) and everything else to the
 * .mrg parser. Never a crash, a leak or an unbounded allocation; verdicts
 * are tested in tests/nlp/test_treebank.c and tests/core/test_zip.c.
 *
 * Seeds: tests/fuzz/seeds/treebank/ (make_seeds.py: a .mrg, a zip of
 * .mrg files, deflated and stored). ctest nlp_fuzz_treebank replays
 * tests/fuzz/regressions/treebank/ and the seeds. */
#include "tests/fuzz/fuzz_util.h"

#include "nlp/data/treebank.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the name matters: wsj_NNNN sets a single file's section */
    fuzz_input_accepted = 0;
    const char *path = fuzz_write_file("wsj_0001.mrg", data, size);
    if (path == NULL) {
        return 0;
    }
    struct nlp_treebank tb;
    if (nlp_treebank_read(&tb, path) == 0) {
        nlp_treebank_coverage(&tb);
        fuzz_input_accepted = tb.n_sentences > 0;
        nlp_treebank_free(&tb);
    }
    return 0;
}
