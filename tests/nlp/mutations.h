/* tests/nlp/mutations.h — the mutation check shared by the data readers'
 * tests (logic, ListOps, SST): 3000 copies of a valid text, each with one
 * to three bytes replaced, deleted or inserted from the format's alphabet
 * (Philox-seeded, so every run tries the same copies), must each be read
 * with its invariants holding or refused with GR_EFORMAT and a message
 * that starts with the file's name and a colon (the line follows), never
 * a crash (the ASan build runs this too). Some copies must be accepted and
 * some refused. Include after tests/test.h. */
#ifndef GROVE_TESTS_NLP_MUTATIONS_H
#define GROVE_TESTS_NLP_MUTATIONS_H

#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "core/random.h"

/* Reads text[0..n) as the file `name` and returns the reader's code; when
 * it is 0, adds to *bad the entries that break an invariant. Frees what
 * it read either way. */
typedef int (*mut_read_fn)(const char *text, size_t n, const char *name,
                           int *bad);

static inline void mut_check(const char *base, const char *alphabet,
                             const char *name, mut_read_fn read)
{
    struct gr_philox_stream r = gr_philox_stream_init(77, 0);
    size_t base_n = strlen(base), n_alpha = strlen(alphabet);
    size_t name_n = strlen(name);
    char buf[4096];
    if (base_n + 4 > sizeof buf) {
        CHECK_MSG(0, "mutation base of %zu bytes is too long", base_n);
        return;
    }
    int bad_message = 0, bad_rc = 0, accepted = 0;
    for (int trial = 0; trial < 3000; trial++) {
        size_t n = base_n;
        memcpy(buf, base, n);
        int edits = 1 + (int)(gr_philox_next_u32(&r) % 3);
        for (int e = 0; e < edits; e++) {
            size_t at = gr_philox_next_u32(&r) % n;
            char c = alphabet[gr_philox_next_u32(&r) % n_alpha];
            switch (gr_philox_next_u32(&r) % 3) {
            case 0:
                buf[at] = c;
                break;
            case 1:
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
                break;
            default:
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = c;
                n++;
                break;
            }
        }
        int rc = read(buf, n, name, &bad_rc);
        if (rc == 0) {
            accepted++;
        } else if (rc != GR_EFORMAT) {
            bad_rc++;
        } else if (strncmp(gr_last_error(), name, name_n) != 0 ||
                   gr_last_error()[name_n] != ':') {
            bad_message++;
        }
    }
    CHECK_MSG(bad_rc == 0 && bad_message == 0, "%d wrong codes, %d messages "
              "without file and line", bad_rc, bad_message);
    CHECK(accepted > 0 && accepted < 3000);
}

#endif
