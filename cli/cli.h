/* cli/cli.h — the `grove` command line: subcommand table and option parser.
 *
 * Each subcommand declares one table of options (name, argument, default,
 * help, destination); the parser (getopt_long underneath) fills the
 * destinations, and the same table generates `--help`. The shared options
 * of every grove command (--seed, --device, --threads, --out, --force,
 * --quiet) live in struct cli_common; a command says which of them it takes
 * with a CLI_COMMON_* mask.
 *
 * --quiet is accepted by every command (a command without progress output
 * has nothing to silence). A row made with CLI_*_REQUIRED (or --out under
 * CLI_COMMON_OUT_REQUIRED) is marked "(required)" in --help and checked
 * here. --help wraps the help texts at 80 columns; a command's details end
 * with an example ("Example:" and an indented command line).
 *
 * Errors: a bad flag or value prints one line on stderr naming the flag and
 * a pointer to --help, and the command returns CLI_EXIT_USAGE (2): an
 * unknown flag, a missing value, a value that is not a number or out of the
 * type's range (the range is named), a flag given twice, a required one
 * missing. Results go to stdout, everything else to stderr.
 *
 *   static int run_foo(int argc, char **argv) {
 *       int n = 10; struct cli_common common;
 *       const struct cli_option opts[] = {
 *           CLI_INT("episodes", "N", "10", "episodes to run", &n),
 *           CLI_END,
 *       };
 *       int first = 0;
 *       int rc = cli_parse(&cmd_foo, opts, CLI_COMMON_SEED, argc, argv,
 *                          &common, &first);
 *       if (rc != CLI_CONTINUE) return rc;
 *       ...
 *   }
 */
#ifndef GROVE_CLI_CLI_H
#define GROVE_CLI_CLI_H

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1  /* the work failed (bad file, failed check) */
#define CLI_EXIT_USAGE 2 /* the command line was wrong */
#define CLI_CONTINUE (-1) /* cli_parse: options fine, go on */

enum cli_arg_type {
    CLI_ARG_FLAG,   /* no argument; int destination set to 1 */
    CLI_ARG_INT,    /* int */
    CLI_ARG_U64,    /* uint64_t */
    CLI_ARG_DOUBLE, /* double */
    CLI_ARG_STRING, /* const char * (points into argv) */
};

struct cli_option {
    const char *name;     /* long name without dashes, NULL ends a table */
    enum cli_arg_type type;
    const char *arg_name; /* "N", "FILE", ... (NULL for flags) */
    const char *default_text; /* shown in --help and parsed as the default */
    const char *help;
    void *dest;
    int required; /* 1: --help marks it "(required)", cli_parse refuses
                     a command line without it */
};

#define CLI_FLAG(n, h, d) {n, CLI_ARG_FLAG, NULL, NULL, h, d, 0}
#define CLI_INT(n, a, def, h, d) {n, CLI_ARG_INT, a, def, h, d, 0}
#define CLI_U64(n, a, def, h, d) {n, CLI_ARG_U64, a, def, h, d, 0}
#define CLI_DOUBLE(n, a, def, h, d) {n, CLI_ARG_DOUBLE, a, def, h, d, 0}
#define CLI_STRING(n, a, def, h, d) {n, CLI_ARG_STRING, a, def, h, d, 0}
/* Options without a default that every run must give. */
#define CLI_INT_REQUIRED(n, a, h, d) {n, CLI_ARG_INT, a, NULL, h, d, 1}
#define CLI_STRING_REQUIRED(n, a, h, d) {n, CLI_ARG_STRING, a, NULL, h, d, 1}
#define CLI_END {NULL, CLI_ARG_FLAG, NULL, NULL, NULL, NULL, 0}

/* Shared options; which ones a command accepts is its mask. */
enum {
    CLI_COMMON_SEED = 1 << 0,
    CLI_COMMON_DEVICE = 1 << 1,
    CLI_COMMON_THREADS = 1 << 2,
    CLI_COMMON_OUT = 1 << 3,
    CLI_COMMON_FORCE = 1 << 4,
    CLI_COMMON_QUIET = 1 << 5,
    CLI_COMMON_ALL = (1 << 6) - 1,
    /* --out, and every run must give it (implies CLI_COMMON_OUT) */
    CLI_COMMON_OUT_REQUIRED = 1 << 6,
};

enum cli_device { CLI_DEVICE_AUTO, CLI_DEVICE_CPU, CLI_DEVICE_CUDA };

struct cli_common {
    uint64_t seed;          /* --seed S (default 1) */
    enum cli_device device; /* --device cpu|cuda|auto (default auto) */
    int threads;            /* --threads N (0 = all cores) */
    const char *out;        /* --out PATH (NULL when not given) */
    int force;              /* --force: overwrite outputs */
    int quiet;              /* --quiet: no progress output */
};

struct cli_command {
    const char *name;     /* words as typed: "replay info" */
    const char *summary;  /* one line for `grove --help` */
    const char *usage;    /* positional part: "FILE", "" if none */
    const char *details;  /* paragraph after the options, or NULL */
    int (*run)(const struct cli_command *cmd, int argc, char **argv);
};

/* Parses argv (argv[0] is the command's last word) against `opts` and the
 * common options in `common_mask`. Fills destinations (defaults first),
 * `*common` and the index of the first positional argument in *first_pos.
 * Checks the positional count is within [min_pos, max_pos] (max_pos < 0:
 * unbounded). Returns CLI_CONTINUE, CLI_EXIT_OK (after --help) or
 * CLI_EXIT_USAGE (after printing one line). */
int cli_parse(const struct cli_command *cmd, const struct cli_option *opts,
              unsigned common_mask, int min_pos, int max_pos, int argc,
              char **argv, struct cli_common *common, int *first_pos);

/* Prints a command's help (usage, options with defaults) to stdout. */
void cli_print_help(const struct cli_command *cmd,
                    const struct cli_option *opts, unsigned common_mask);

/* Prints `text` word by word from column `col` (where the cursor already
 * is), breaking lines before column 80; continuation lines start at column
 * `indent`. Ends with a newline. */
void cli_print_wrapped(FILE *out, const char *text, int col, int indent);

/* One-line usage error: "grove CMD: MESSAGE (see 'grove CMD --help')" on
 * stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "grove CMD: <gr_last_error()>" on stderr; returns CLI_EXIT_FAIL. */
int cli_fail(const struct cli_command *cmd);

/* An input path given to `flag` must exist (docs/data.md: a path that
 * does not exist is a wrong command line): CLI_CONTINUE when path is NULL
 * or exists, else the usage line "FLAG PATH: it does not exist" and
 * CLI_EXIT_USAGE. */
int cli_need_path(const struct cli_command *cmd, const char *flag,
                  const char *path);

/* ---- the range of a numeric flag ----
 * A flag whose default is resolved after parsing (it depends on the task or
 * the model) starts at CLI_UNSET (an int) or NAN (a double): cli_parse
 * refuses both on the command line, so every value a user can type, -1
 * included, is a value given and is checked against the flag's range; none
 * stands for "not given".
 *
 *   int batch = CLI_UNSET; double lr = NAN;
 *   ... cli_parse ...
 *   const struct cli_range ranges[] = {
 *       CLI_AT_LEAST("--batch", batch, 1),
 *       CLI_POSITIVE("--lr", lr),
 *   };
 *   if ((rc = CLI_CHECK_RANGES(cmd, ranges)) != CLI_CONTINUE) return rc;
 *   if (batch == CLI_UNSET) batch = the task's default;
 */
#define CLI_UNSET INT_MIN

struct cli_range {
    const char *flag;     /* as typed: "--batch" */
    double v;             /* the value */
    int unset;            /* 1: not given (an int CLI_UNSET, a double NaN) */
    double lo, hi;        /* allowed: lo <= v <= hi (HUGE_VAL: no bound) */
    int lo_open, hi_open; /* 1: lo < v, v < hi */
};

/* Whether v (an int or a double flag) was not given: CLI_UNSET for an int
 * only, so that a double typed as -2147483648 is still checked. */
#define CLI_IS_UNSET(v)                                                       \
    _Generic((v), int: (v) == CLI_UNSET, default: isnan((double)(v)))
#define CLI_RANGE_ROW_(flag, v, lo, hi, lo_open, hi_open)                     \
    {flag, (double)(v), CLI_IS_UNSET(v), lo, hi, lo_open, hi_open}

/* lo..hi, both ends allowed */
#define CLI_RANGE(flag, v, lo, hi) CLI_RANGE_ROW_(flag, v, lo, hi, 0, 0)
/* lo or more */
#define CLI_AT_LEAST(flag, v, lo) CLI_RANGE_ROW_(flag, v, lo, HUGE_VAL, 0, 0)
/* more than 0 (a learning rate) */
#define CLI_POSITIVE(flag, v) CLI_RANGE_ROW_(flag, v, 0, HUGE_VAL, 1, 0)
/* [0, 1) (a dropout rate) */
#define CLI_RATE(flag, v) CLI_RANGE_ROW_(flag, v, 0, 1, 0, 1)
/* (lo, hi), both ends excluded (a masking probability) */
#define CLI_OPEN(flag, v, lo, hi) CLI_RANGE_ROW_(flag, v, lo, hi, 1, 1)

/* The first flag of c[0, n) given outside its range: prints the usage line
 * "FLAG V is out of range (RANGE)" (RANGE as ">= 1", "> 0", "1..64",
 * "[0, 1)") and returns CLI_EXIT_USAGE; else CLI_CONTINUE. */
int cli_check_ranges(const struct cli_command *cmd, const struct cli_range *c,
                     size_t n);
#define CLI_CHECK_RANGES(cmd, table)                                          \
    cli_check_ranges(cmd, table, sizeof(table) / sizeof((table)[0]))

/* Splits a comma-separated list in place into at most `cap` items;
 * returns the count, or -1 when there are more than `cap` or an empty item. */
int cli_split_list(char *text, char **items, int cap);

/* The thread count a --threads value asks for: itself when positive, else
 * (0: "all cores") the online cores. For commands that need a number, as
 * the benchmarks, which print it. */
int cli_threads_or_cores(int threads);

/* The program's command table, NULL-terminated (cli/commands.c). */
extern const struct cli_command *const cli_commands[];

#endif
