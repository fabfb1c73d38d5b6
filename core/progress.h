/* core/progress.h — progress reporting for long work.
 *
 * On a terminal (stderr is a tty): a bar redrawn in place at most ~10 times
 * a second, with count, rate and ETA. Otherwise (CI, logs): a plain line
 * every few seconds. With quiet: nothing. Everything goes to stderr, so
 * results on stdout stay clean. The struct is the caller's; no allocation.
 *
 *   struct gr_progress p;
 *   gr_progress_start(&p, "demos", total, "episodes", quiet);
 *   for (i = 0; i < total; i++) { work(); gr_progress_update(&p, i + 1); }
 *   gr_progress_finish(&p);
 *
 * `extra` (gr_progress_set_extra) is shown after the rate, for example a
 * current loss. Not thread-safe: report from one thread.
 */
#ifndef GROVE_CORE_PROGRESS_H
#define GROVE_CORE_PROGRESS_H

#include <stdint.h>

struct gr_progress {
    char label[48];
    char unit[24];
    char extra[96];
    uint64_t total; /* 0 = unknown: no bar, no ETA */
    uint64_t done;
    double start_s;
    double last_draw_s;
    int quiet;
    int is_tty;
    int drawn; /* a tty line is on screen and needs a newline at finish */
};

/* Monotonic seconds, for rates and timing. */
double gr_now_seconds(void);

void gr_progress_start(struct gr_progress *p, const char *label,
                       uint64_t total, const char *unit, int quiet);

/* Records `done` units finished; draws when it is time to. */
void gr_progress_update(struct gr_progress *p, uint64_t done);

/* Text shown after the rate (truncated to fit); "" clears it. */
void gr_progress_set_extra(struct gr_progress *p, const char *text);

/* Draws the final state and ends the line. */
void gr_progress_finish(struct gr_progress *p);

/* Formats `seconds` as "1h02m", "3m05s" or "12.3s" into out[cap]. */
void gr_format_duration(double seconds, char *out, int cap);

#endif
