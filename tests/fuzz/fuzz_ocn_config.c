/* libFuzzer target for the agents' config readers: the OCN model config
 * of a policy checkpoint (ocn_config_parse, then ocn_config_format of what
 * it accepted) and the Craft world kept beside it (bc_world_parse, then
 * bc_world_format). Both read the same text, as a checkpoint's config
 * holds both. Never a crash, a leak or an out-of-bounds read; verdicts are
 * tested in tests/agents/.
 *
 * Seeds: tests/fuzz/seeds/ocn_config/ (make_seeds.py). ctest
 * agents_fuzz_config replays tests/fuzz/regressions/ocn_config/ and the
 * seeds. */
#include "tests/fuzz/fuzz_util.h"

#include "agents/bc.h"
#include "agents/ocn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_accepted = 0;
    char *text = fuzz_strdup(data, size);
    if (text == NULL) {
        return 0;
    }
    char out[4096];
    struct ocn_config c;
    int ok = ocn_config_parse(text, &c) == 0;
    if (ok) {
        ocn_config_format(&c, out, sizeof out);
    }
    struct craft_config w;
    if (bc_world_parse(text, &w) == 0) {
        bc_world_format(&w, out, sizeof out);
    } else {
        ok = 0;
    }
    fuzz_input_accepted = ok;
    free(text);
    return 0;
}
