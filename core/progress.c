#define _POSIX_C_SOURCE 200809L
#include "core/progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Seconds between plain (non-tty) lines, and between tty redraws. */
#define PLAIN_INTERVAL_S 5.0
#define TTY_INTERVAL_S 0.1
#define BAR_WIDTH 24

double gr_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void gr_format_duration(double seconds, char *out, int cap)
{
    if (seconds < 0 || seconds != seconds) {
        snprintf(out, (size_t)cap, "?");
    } else if (seconds < 60) {
        snprintf(out, (size_t)cap, "%.1fs", seconds);
    } else if (seconds < 3600) {
        int s = (int)seconds;
        snprintf(out, (size_t)cap, "%dm%02ds", s / 60, s % 60);
    } else {
        int m = (int)(seconds / 60);
        snprintf(out, (size_t)cap, "%dh%02dm", m / 60, m % 60);
    }
}

/* "12.3k" style rate with a unit. */
static void format_rate(double rate, char *out, int cap)
{
    if (rate >= 1e6) {
        snprintf(out, (size_t)cap, "%.2fM", rate / 1e6);
    } else if (rate >= 1e4) {
        snprintf(out, (size_t)cap, "%.1fk", rate / 1e3);
    } else if (rate >= 100) {
        snprintf(out, (size_t)cap, "%.0f", rate);
    } else {
        snprintf(out, (size_t)cap, "%.2f", rate);
    }
}

void gr_progress_start(struct gr_progress *p, const char *label,
                       uint64_t total, const char *unit, int quiet)
{
    memset(p, 0, sizeof *p);
    snprintf(p->label, sizeof p->label, "%s", label);
    snprintf(p->unit, sizeof p->unit, "%s", unit);
    p->total = total;
    p->quiet = quiet;
    p->is_tty = isatty(STDERR_FILENO);
    p->start_s = gr_now_seconds();
    p->last_draw_s = p->start_s;
}

void gr_progress_set_extra(struct gr_progress *p, const char *text)
{
    snprintf(p->extra, sizeof p->extra, "%s", text);
}

static void draw(struct gr_progress *p, double now, int final)
{
    double elapsed = now - p->start_s;
    double rate = elapsed > 0 ? (double)p->done / elapsed : 0.0;
    char rate_text[32], elapsed_text[32], eta_text[32];
    format_rate(rate, rate_text, sizeof rate_text);
    gr_format_duration(elapsed, elapsed_text, sizeof elapsed_text);
    /* done can pass total (PPO finishes its last rollout): no ETA then,
     * rather than the unsigned difference wrapping to centuries */
    if (p->total > 0 && rate > 0 && !final && p->done < p->total) {
        gr_format_duration((double)(p->total - p->done) / rate, eta_text,
                           sizeof eta_text);
    } else {
        snprintf(eta_text, sizeof eta_text, "-");
    }

    char line[256];
    int n = 0;
    if (p->total > 0) {
        double frac = (double)p->done / (double)p->total;
        if (frac > 1) {
            frac = 1;
        }
        char bar[BAR_WIDTH + 1];
        int filled = (int)(frac * BAR_WIDTH);
        for (int i = 0; i < BAR_WIDTH; i++) {
            bar[i] = i < filled ? '#' : '.';
        }
        bar[BAR_WIDTH] = '\0';
        /* The bar only where it is redrawn in place; logs get numbers. */
        char bar_text[BAR_WIDTH + 4] = "";
        if (p->is_tty) {
            snprintf(bar_text, sizeof bar_text, " [%s]", bar);
        }
        n = snprintf(line, sizeof line,
                     "%s%s %llu/%llu %s  %s %s/s  %s elapsed  ETA %s",
                     p->label, bar_text,
                     (unsigned long long)p->done,
                     (unsigned long long)p->total, p->unit, rate_text,
                     p->unit, elapsed_text, eta_text);
    } else {
        n = snprintf(line, sizeof line, "%s %llu %s  %s %s/s  %s elapsed",
                     p->label, (unsigned long long)p->done, p->unit,
                     rate_text, p->unit, elapsed_text);
    }
    if (p->extra[0] != '\0' && n > 0 && (size_t)n < sizeof line) {
        snprintf(line + n, sizeof line - (size_t)n, "  %s", p->extra);
    }
    if (p->is_tty) {
        fprintf(stderr, "\r\033[K%s", line);
        p->drawn = 1;
        if (final) {
            fputc('\n', stderr);
            p->drawn = 0;
        }
    } else {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
    p->last_draw_s = now;
}

void gr_progress_update(struct gr_progress *p, uint64_t done)
{
    p->done = done;
    if (p->quiet) {
        return;
    }
    double now = gr_now_seconds();
    double interval = p->is_tty ? TTY_INTERVAL_S : PLAIN_INTERVAL_S;
    if (now - p->last_draw_s >= interval) {
        draw(p, now, 0);
    }
}

void gr_progress_finish(struct gr_progress *p)
{
    if (p->quiet) {
        return;
    }
    draw(p, gr_now_seconds(), 1);
}
