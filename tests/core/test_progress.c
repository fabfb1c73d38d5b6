/* The progress reporter: plain lines when stderr is not a terminal, a
 * final line with the count, nothing at all with quiet. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/progress.h"
#include "tests/test.h"

/* Runs a short progress session with stderr sent to a file; returns what
 * it printed (malloc'd). */
static char *capture(int quiet, uint64_t last)
{
    char path[] = "/tmp/grove_test_progress_XXXXXX";
    int fd = mkstemp(path);
    int saved = dup(STDERR_FILENO);
    fflush(stderr);
    dup2(fd, STDERR_FILENO);

    struct gr_progress p;
    gr_progress_start(&p, "demos", 10, "episodes", quiet);
    for (uint64_t i = 1; i <= last; i++) {
        p.last_draw_s = -1e9; /* due for a line at every update */
        gr_progress_update(&p, i);
    }
    gr_progress_set_extra(&p, "loss 1.25");
    gr_progress_finish(&p);

    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    static char buf[4096];
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    buf[n < 0 ? 0 : n] = '\0';
    close(fd);
    unlink(path);
    return strdup(buf);
}

int main(void)
{
    char *out = capture(0, 10);
    CHECK_STR_CONTAINS(out, "demos");
    CHECK_STR_CONTAINS(out, "10/10 episodes");
    CHECK_STR_CONTAINS(out, "episodes/s");
    CHECK_STR_CONTAINS(out, "loss 1.25");
    CHECK(strchr(out, '\r') == NULL); /* not a terminal: no redraws */
    CHECK(out[strlen(out) - 1] == '\n');
    free(out);

    /* past the total (PPO ends on a whole rollout): no ETA rather than
     * the unsigned difference read as centuries */
    out = capture(0, 12);
    CHECK_STR_CONTAINS(out, "12/10 episodes");
    CHECK(strstr(out, "ETA -") != NULL);
    CHECK(strstr(out, "h-") == NULL);
    free(out);

    out = capture(1, 10);
    CHECK(out[0] == '\0');
    free(out);

    double t0 = gr_now_seconds();
    CHECK(gr_now_seconds() >= t0);
    return test_report("core_progress");
}
