/* Stopping a trainer at an update boundary on SIGINT/SIGTERM: see
 * train/train.h. The handler only records the signal; the trainer polls
 * train_stop_requested() between updates, writes last.ckpt and returns. A
 * second SIGINT falls through to the default action (the user insists). */
#define _POSIX_C_SOURCE 200809L
#include "train/train.h"
#include "train/mpi.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t stop_signal;
static struct sigaction old_int, old_term;
static int installed;

static void on_signal(int sig)
{
    stop_signal = sig;
    if (sig == SIGINT) {
        /* the next SIGINT ends the process the usual way */
        signal(SIGINT, SIG_DFL);
    }
}

void train_signals_install(void)
{
    if (installed) {
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    installed = 1;
}

void train_signals_restore(void)
{
    if (!installed) {
        return;
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    installed = 0;
}

int train_stop_requested(void)
{
    return (int)stop_signal;
}

void train_request_stop(int sig)
{
    stop_signal = sig;
}

static void print_quoted(const char *s)
{
    if (s[0] != '\0' && strpbrk(s, " \t\n'\"\\$`*?[]{}()<>|&;#~") == NULL) {
        fputs(s, stderr);
        return;
    }
    fputc('\'', stderr);
    for (; *s; s++) {
        if (*s == '\'') {
            fputs("'\\''", stderr);
        } else {
            fputc(*s, stderr);
        }
    }
    fputc('\'', stderr);
}

void train_print_stopped(const struct train_run *run, int64_t step)
{
    int sig = train_stop_requested();
    const struct train_run_spec *s = &run->spec;
    fprintf(stderr, "grove %s: %s: stopped at %s %lld, %s written; continue "
                    "with:\n  ",
            s->what, sig == SIGTERM ? "SIGTERM" : "SIGINT",
            s->step_unit ? s->step_unit : "update", (long long)step,
            run->path_last);
    if (train_mpi_size() > 1) {
        /* the run's processes share the work: resume with as many */
        fprintf(stderr, "mpirun -np %d ", train_mpi_size());
    }
    fprintf(stderr, "grove %s", s->what);
    int has_resume = 0;
    for (int i = 1; i < s->argc; i++) {
        if (strcmp(s->argv[i], "--force") == 0) {
            continue;
        }
        has_resume |= strcmp(s->argv[i], "--resume") == 0;
        fputc(' ', stderr);
        print_quoted(s->argv[i]);
    }
    fputs(has_resume ? "\n" : " --resume\n", stderr);
}
