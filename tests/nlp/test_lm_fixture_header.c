/* tests/nlp/lm_fixture.h can be included by a test that calls only some of
 * its readers: under -Werror an unused static (non-inline) function in the
 * header would stop this file from compiling. It calls fx_load, fx_get and
 * fx_free on a small fixture it writes, and none of the comparisons. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include "tests/nlp/lm_fixture.h"
#include "tests/test.h"

int main(void)
{
    char path[] = "/tmp/grove_fx_header_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) {
        return test_report("nlp_lm_fixture_header");
    }
    FILE *fp = fdopen(fd, "w");
    CHECK(fp != NULL);
    fprintf(fp, "# a comment\nw 2x3 1 2 3 4 5 6.5\nb 1 -0.25\n");
    fclose(fp);
    struct fx_file f;
    CHECK(fx_load(&f, path) == 0);
    CHECK(f.n == 2);
    const struct fx_entry *w = fx_get(&f, "w");
    CHECK(w != NULL && w->ndim == 2 && w->shape[0] == 2 &&
          w->shape[1] == 3 && w->numel == 6 && w->v[5] == 6.5);
    const struct fx_entry *b = fx_get(&f, "b");
    CHECK(b != NULL && b->numel == 1 && b->v[0] == -0.25);
    fx_free(&f);
    remove(path);
    return test_report("nlp_lm_fixture_header");
}
