/* The shared option parser: one table per command, getopt_long underneath,
 * the same table prints --help. */
#define _POSIX_C_SOURCE 200809L
#include "cli/cli.h"

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files.h"

#define MAX_OPTIONS 96

/* The shared options, in the order --help lists them. `dest` is filled in
 * per parse, pointing into the caller's struct cli_common. */
struct common_option {
    unsigned bit;
    struct cli_option opt;
};

static const struct common_option common_options[] = {
    {CLI_COMMON_SEED,
     CLI_U64("seed", "S", "1", "base seed of every random stream", NULL)},
    {CLI_COMMON_DEVICE,
     CLI_STRING("device", "cpu|cuda|auto", "auto",
                "where to compute (auto: cuda when a GPU is visible)", NULL)},
    {CLI_COMMON_THREADS,
     CLI_INT("threads", "N", "0", "CPU threads (0: all cores)", NULL)},
    {CLI_COMMON_OUT, CLI_STRING("out", "PATH", NULL, "output path", NULL)},
    {CLI_COMMON_FORCE,
     CLI_FLAG("force", "overwrite existing outputs", NULL)},
    {CLI_COMMON_QUIET,
     CLI_FLAG("quiet", "no progress output on stderr", NULL)},
};
#define N_COMMON (sizeof common_options / sizeof common_options[0])

int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fprintf(stderr, "grove %s: %s (see 'grove %s --help')\n", cmd->name,
            message, cmd->name);
    return CLI_EXIT_USAGE;
}

int cli_fail(const struct cli_command *cmd)
{
    fprintf(stderr, "grove %s: %s\n", cmd->name, gr_last_error());
    return CLI_EXIT_FAIL;
}

int cli_need_path(const struct cli_command *cmd, const char *flag,
                  const char *path)
{
    if (path == NULL || gr_path_exists(path)) {
        return CLI_CONTINUE;
    }
    return cli_usage_error(cmd, "%s %s: it does not exist", flag, path);
}

int cli_check_ranges(const struct cli_command *cmd, const struct cli_range *c,
                     size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double v = c[i].v;
        if (c[i].unset) {
            continue;
        }
        if ((c[i].lo_open ? v > c[i].lo : v >= c[i].lo) &&
            (c[i].hi_open ? v < c[i].hi : v <= c[i].hi)) {
            continue;
        }
        char range[64];
        if (isinf(c[i].hi)) {
            snprintf(range, sizeof range, "%s %.15g", c[i].lo_open ? ">" : ">=",
                     c[i].lo);
        } else if (c[i].lo_open || c[i].hi_open) {
            snprintf(range, sizeof range, "%s%.15g, %.15g%s",
                     c[i].lo_open ? "(" : "[", c[i].lo, c[i].hi,
                     c[i].hi_open ? ")" : "]");
        } else {
            snprintf(range, sizeof range, "%.15g..%.15g", c[i].lo, c[i].hi);
        }
        return cli_usage_error(cmd, "%s %.15g is out of range (%s)",
                               c[i].flag, v, range);
    }
    return CLI_CONTINUE;
}

int cli_split_list(char *text, char **items, int cap)
{
    int n = 0;
    char *p = text;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma != NULL) {
            *comma = '\0';
        }
        if (*p == '\0' || n == cap) {
            return -1;
        }
        items[n++] = p;
        if (comma == NULL) {
            return n;
        }
        p = comma + 1;
    }
}

/* Parses `text` into opt->dest; on failure prints the usage line. */
static int set_value(const struct cli_command *cmd,
                     const struct cli_option *opt, const char *text)
{
    char *end = NULL;
    errno = 0;
    switch (opt->type) {
    case CLI_ARG_FLAG:
        *(int *)opt->dest = 1;
        return 0;
    case CLI_ARG_INT: {
        long v = strtol(text, &end, 10);
        if (end == text || *end != '\0') {
            return cli_usage_error(cmd, "--%s expects an integer, got '%s'",
                                   opt->name, text);
        }
        if (errno != 0 || v < -2147483647L || v > 2147483647L) {
            return cli_usage_error(cmd,
                                   "--%s %s is out of range "
                                   "(-2147483647..2147483647)",
                                   opt->name, text);
        }
        *(int *)opt->dest = (int)v;
        return 0;
    }
    case CLI_ARG_U64: {
        if (text[0] == '-') {
            return cli_usage_error(cmd,
                                   "--%s expects a non-negative integer, "
                                   "got '%s'",
                                   opt->name, text);
        }
        unsigned long long v = strtoull(text, &end, 0);
        if (end == text || *end != '\0') {
            return cli_usage_error(cmd,
                                   "--%s expects a non-negative integer, "
                                   "got '%s'",
                                   opt->name, text);
        }
        if (errno != 0) {
            return cli_usage_error(cmd,
                                   "--%s %s is out of range "
                                   "(0..18446744073709551615)",
                                   opt->name, text);
        }
        *(uint64_t *)opt->dest = (uint64_t)v;
        return 0;
    }
    case CLI_ARG_DOUBLE: {
        double v = strtod(text, &end);
        if (end == text || *end != '\0' || isnan(v)) {
            return cli_usage_error(cmd, "--%s expects a number, got '%s'",
                                   opt->name, text);
        }
        if (!isfinite(v) || (errno != 0 && fabs(v) > 1.0)) {
            return cli_usage_error(cmd,
                                   "--%s %s is out of range (a finite "
                                   "number of magnitude at most %g)",
                                   opt->name, text, DBL_MAX);
        }
        *(double *)opt->dest = v;
        return 0;
    }
    case CLI_ARG_STRING:
        *(const char **)opt->dest = text;
        return 0;
    }
    return CLI_EXIT_USAGE;
}

#define HELP_WIDTH 80  /* --help wraps its text at this column */
#define HELP_LEFT 26   /* width of the option column */
#define HELP_INDENT (2 + HELP_LEFT + 1)

void cli_print_wrapped(FILE *out, const char *text, int col, int indent)
{
    const char *p = text;
    int at_line_start = 1;
    while (*p) {
        while (*p == ' ') {
            p++;
        }
        if (*p == '\0') {
            break;
        }
        int len = (int)strcspn(p, " ");
        if (!at_line_start && col + 1 + len > HELP_WIDTH - 1) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
            at_line_start = 1;
        }
        if (!at_line_start) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", len, p);
        col += len;
        at_line_start = 0;
        p += len;
    }
    fputc('\n', out);
}

static void print_option(const struct cli_option *opt, int required)
{
    char left[64], help[1024];
    if (opt->arg_name != NULL) {
        snprintf(left, sizeof left, "--%s %s", opt->name, opt->arg_name);
    } else {
        snprintf(left, sizeof left, "--%s", opt->name);
    }
    size_t n = (size_t)snprintf(help, sizeof help, "%s", opt->help);
    if (required && n < sizeof help) {
        n += (size_t)snprintf(help + n, sizeof help - n, " (required)");
    } else if (opt->default_text != NULL && n < sizeof help) {
        snprintf(help + n, sizeof help - n, " (default: %s)",
                 opt->default_text);
    }
    /* a long option name gets a line of its own: the columns never touch */
    if ((int)strlen(left) >= HELP_LEFT) {
        printf("  %s\n%*s", left, HELP_INDENT, "");
    } else {
        printf("  %-*s ", HELP_LEFT, left);
    }
    cli_print_wrapped(stdout, help, HELP_INDENT, HELP_INDENT);
}

/* The details paragraph: each line wrapped at HELP_WIDTH; a line that
 * starts with spaces (an example command) is printed as it is. */
static void print_details(const char *details)
{
    const char *p = details;
    char line[2048];
    while (*p) {
        size_t len = strcspn(p, "\n");
        if (len >= sizeof line) {
            len = sizeof line - 1;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        if (line[0] == ' ' || line[0] == '\0') {
            printf("%s\n", line);
        } else {
            cli_print_wrapped(stdout, line, 0, 0);
        }
        p += len;
        if (*p == '\n') {
            p++;
        }
    }
}

void cli_print_help(const struct cli_command *cmd,
                    const struct cli_option *opts, unsigned common_mask)
{
    common_mask |= CLI_COMMON_QUIET;
    if (common_mask & CLI_COMMON_OUT_REQUIRED) {
        common_mask |= CLI_COMMON_OUT;
    }
    printf("Usage: grove %s [OPTIONS]%s%s\n\n", cmd->name,
           cmd->usage[0] ? " " : "", cmd->usage);
    cli_print_wrapped(stdout, cmd->summary, 0, 0);
    printf("\nOptions:\n");
    for (const struct cli_option *o = opts; o != NULL && o->name; o++) {
        print_option(o, o->required);
    }
    for (size_t i = 0; i < N_COMMON; i++) {
        if (common_mask & common_options[i].bit) {
            print_option(&common_options[i].opt,
                         common_options[i].bit == CLI_COMMON_OUT &&
                             (common_mask & CLI_COMMON_OUT_REQUIRED));
        }
    }
    printf("  %-*s %s\n", HELP_LEFT, "-h, --help", "show this help");
    if (cmd->details != NULL) {
        printf("\n");
        print_details(cmd->details);
    }
}

/* Flags that were renamed (issue 21: one name across commands): an old
 * name is refused with its new one, where the command takes the new one. */
static const char *const renamed[][2] = {
    {"no-torch", "no-baseline"},
};

static const char *renamed_to(const char *arg, const struct cli_option *table,
                              int n)
{
    if (strncmp(arg, "--", 2) != 0) {
        return NULL;
    }
    size_t len = strcspn(arg + 2, "=");
    for (size_t r = 0; r < sizeof renamed / sizeof renamed[0]; r++) {
        if (strlen(renamed[r][0]) != len ||
            strncmp(arg + 2, renamed[r][0], len) != 0) {
            continue;
        }
        for (int i = 0; i < n; i++) {
            if (strcmp(table[i].name, renamed[r][1]) == 0) {
                return renamed[r][1];
            }
        }
    }
    return NULL;
}

int cli_parse(const struct cli_command *cmd, const struct cli_option *opts,
              unsigned common_mask, int min_pos, int max_pos, int argc,
              char **argv, struct cli_common *common, int *first_pos)
{
    struct cli_option table[MAX_OPTIONS];
    struct option long_opts[MAX_OPTIONS + 2];
    int given[MAX_OPTIONS] = {0};
    const char *device_text = "auto";
    int n = 0;

    common_mask |= CLI_COMMON_QUIET;
    if (common_mask & CLI_COMMON_OUT_REQUIRED) {
        common_mask |= CLI_COMMON_OUT;
    }

    memset(common, 0, sizeof *common);
    common->seed = 1;
    common->device = CLI_DEVICE_AUTO;

    for (const struct cli_option *o = opts; o != NULL && o->name; o++) {
        if (n == MAX_OPTIONS) {
            return cli_usage_error(cmd, "internal: too many options");
        }
        table[n++] = *o;
    }
    for (size_t i = 0; i < N_COMMON; i++) {
        if (!(common_mask & common_options[i].bit)) {
            continue;
        }
        struct cli_option o = common_options[i].opt;
        switch (common_options[i].bit) {
        case CLI_COMMON_SEED: o.dest = &common->seed; break;
        case CLI_COMMON_DEVICE: o.dest = &device_text; break;
        case CLI_COMMON_THREADS: o.dest = &common->threads; break;
        case CLI_COMMON_OUT:
            o.dest = &common->out;
            o.required = (common_mask & CLI_COMMON_OUT_REQUIRED) != 0;
            break;
        case CLI_COMMON_FORCE: o.dest = &common->force; break;
        case CLI_COMMON_QUIET: o.dest = &common->quiet; break;
        default: break;
        }
        table[n++] = o;
    }

    /* Defaults first, from the same text --help shows. */
    for (int i = 0; i < n; i++) {
        if (table[i].type == CLI_ARG_FLAG) {
            *(int *)table[i].dest = 0;
        } else if (table[i].type == CLI_ARG_STRING) {
            *(const char **)table[i].dest = table[i].default_text;
        } else if (table[i].default_text != NULL) {
            int rc = set_value(cmd, &table[i], table[i].default_text);
            if (rc != 0) {
                return rc;
            }
        }
    }

    for (int i = 0; i < n; i++) {
        long_opts[i].name = table[i].name;
        long_opts[i].has_arg =
            table[i].type == CLI_ARG_FLAG ? no_argument : required_argument;
        long_opts[i].flag = NULL;
        long_opts[i].val = 1000 + i;
    }
    long_opts[n] = (struct option){"help", no_argument, NULL, 'h'};
    long_opts[n + 1] = (struct option){NULL, 0, NULL, 0};

    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":h", long_opts, NULL);
        if (c == -1) {
            break;
        }
        if (c == 'h') {
            cli_print_help(cmd, opts, common_mask);
            return CLI_EXIT_OK;
        }
        if (c == '?') {
            const char *bad = argv[optind - 1];
            if (optopt != 0 && optopt < 1000) {
                return cli_usage_error(cmd, "unknown option '-%c'", optopt);
            }
            const char *now = renamed_to(bad, table, n);
            if (now != NULL) {
                return cli_usage_error(cmd, "'%s' is now '--%s'", bad, now);
            }
            return cli_usage_error(cmd, "unknown option '%s'", bad);
        }
        if (c == ':') {
            return cli_usage_error(cmd, "option '%s' needs a value",
                                   argv[optind - 1]);
        }
        if (given[c - 1000]++) {
            return cli_usage_error(cmd, "--%s is given twice",
                                   table[c - 1000].name);
        }
        int rc = set_value(cmd, &table[c - 1000], optarg);
        if (rc != 0) {
            return rc;
        }
    }
    for (int i = 0; i < n; i++) {
        if (table[i].required && !given[i]) {
            if (table[i].arg_name != NULL) {
                return cli_usage_error(cmd, "--%s %s is required",
                                       table[i].name, table[i].arg_name);
            }
            return cli_usage_error(cmd, "--%s is required", table[i].name);
        }
    }

    if (common_mask & CLI_COMMON_DEVICE) {
        if (strcmp(device_text, "auto") == 0) {
            common->device = CLI_DEVICE_AUTO;
        } else if (strcmp(device_text, "cpu") == 0) {
            common->device = CLI_DEVICE_CPU;
        } else if (strcmp(device_text, "cuda") == 0) {
            common->device = CLI_DEVICE_CUDA;
        } else {
            return cli_usage_error(cmd,
                                   "--device expects cpu, cuda or auto, "
                                   "got '%s'",
                                   device_text);
        }
    }
    if ((common_mask & CLI_COMMON_THREADS) && common->threads < 0) {
        return cli_usage_error(cmd, "--threads must be 0 or more, got %d",
                               common->threads);
    }

    int n_pos = argc - optind;
    if (n_pos < min_pos) {
        return cli_usage_error(cmd, "missing argument %s", cmd->usage);
    }
    if (max_pos >= 0 && n_pos > max_pos) {
        return cli_usage_error(cmd, "unexpected argument '%s'",
                               argv[optind + max_pos]);
    }
    *first_pos = optind;
    return CLI_CONTINUE;
}

int cli_threads_or_cores(int threads)
{
    if (threads > 0) {
        return threads;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? (int)cores : 1;
}
