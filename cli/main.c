/* grove: one binary, one subcommand per user job.
 *
 * A command's name may be several words ("replay info"); the longest name
 * matching the leading words of argv wins. `grove WORD` where WORD only
 * starts longer names ("grove replay") lists them. */
#include <stdio.h>
#include <string.h>

#include "cli/build_info.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "core/error.h"
#include "train/mpi.h"

/* Number of words of `name` that match argv[1..], or 0 if not all do. */
static int match_words(const char *name, int argc, char **argv)
{
    int words = 0;
    const char *p = name;
    while (*p) {
        const char *space = strchr(p, ' ');
        size_t len = space ? (size_t)(space - p) : strlen(p);
        if (1 + words >= argc || strlen(argv[1 + words]) != len ||
            strncmp(argv[1 + words], p, len) != 0) {
            return 0;
        }
        words++;
        p += len;
        while (*p == ' ') {
            p++;
        }
    }
    return words;
}

/* 1 if `name` starts with the `n` words argv[1..n]. */
static int starts_with_words(const char *name, int n, char **argv)
{
    const char *p = name;
    for (int i = 1; i <= n; i++) {
        size_t len = strlen(argv[i]);
        if (strncmp(p, argv[i], len) != 0 || (p[len] != ' ')) {
            return 0;
        }
        p += len + 1;
    }
    return 1;
}

static void print_overview(FILE *out)
{
    fprintf(out,
            "grove %s: a workbench for models with tree-shaped inductive "
            "biases.\n\nUsage: grove COMMAND [OPTIONS] [ARGS]\n\n"
            "Commands:\n",
            GROVE_VERSION);
    for (int i = 0; cli_commands[i] != NULL; i++) {
        fprintf(out, "  %-22s %s\n", cli_commands[i]->name,
                cli_commands[i]->summary);
    }
    fprintf(out,
            "  %-22s %s\n\n"
            "Run 'grove COMMAND --help' (or 'grove help COMMAND') for a "
            "command's options.\n",
            "help COMMAND", "Show a command's help.");
}

/* Finds the command named by argv[1..]; *words gets how many it used. */
static const struct cli_command *find_command(int argc, char **argv,
                                              int *words)
{
    const struct cli_command *best = NULL;
    int best_words = 0;
    for (int i = 0; cli_commands[i] != NULL; i++) {
        int w = match_words(cli_commands[i]->name, argc, argv);
        if (w > best_words) {
            best = cli_commands[i];
            best_words = w;
        }
    }
    *words = best_words;
    return best;
}

/* "grove replay" alone: list the commands that start with these words. */
static int list_group(int n_words, char **argv)
{
    int found = 0;
    for (int i = 0; cli_commands[i] != NULL; i++) {
        if (starts_with_words(cli_commands[i]->name, n_words, argv)) {
            if (!found) {
                printf("Usage: grove %s SUBCOMMAND [OPTIONS]\n\n"
                       "Subcommands:\n",
                       argv[1]);
            }
            printf("  %-22s %s\n", cli_commands[i]->name,
                   cli_commands[i]->summary);
            found = 1;
        }
    }
    return found;
}

/* Words of argv[1..] that form a group prefix ("nlp lm"), or 0. */
static int group_words(int argc, char **argv)
{
    int best = 0;
    for (int n = 1; n < argc; n++) {
        int any = 0;
        for (int i = 0; cli_commands[i] != NULL; i++) {
            if (starts_with_words(cli_commands[i]->name, n, argv)) {
                any = 1;
            }
        }
        if (!any) {
            break;
        }
        best = n;
    }
    return best;
}

static int run_help(int argc, char **argv)
{
    /* argv: grove help WORDS... */
    if (argc < 3) {
        print_overview(stdout);
        return 0;
    }
    int words = 0;
    const struct cli_command *cmd = find_command(argc - 1, argv + 1, &words);
    if (cmd != NULL && words == argc - 2) {
        char *help_argv[] = {argv[argc - 1], "--help", NULL};
        return cmd->run(cmd, 2, help_argv);
    }
    int g = group_words(argc - 1, argv + 1);
    if (g == argc - 2 && list_group(g, argv + 1)) {
        return 0;
    }
    fprintf(stderr, "grove help: unknown command '%s' (see 'grove --help')\n",
            argv[2]);
    return CLI_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_overview(stdout);
        return 0;
    }
    if (strcmp(argv[1], "help") == 0) {
        return run_help(argc, argv);
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("grove %s (%s)\n", GROVE_VERSION, GROVE_GIT_DESCRIBE);
        return 0;
    }

    int words = 0;
    const struct cli_command *cmd = find_command(argc, argv, &words);
    if (cmd == NULL) {
        int g = group_words(argc, argv);
        if (g > 0) {
            if (g + 1 < argc && argv[g + 1][0] != '-') {
                fprintf(stderr,
                        "grove: unknown command '%s %s' (see 'grove %s "
                        "--help')\n",
                        argv[1], argv[g + 1], argv[1]);
                return CLI_EXIT_USAGE;
            }
            int is_help = g + 1 < argc && (strcmp(argv[g + 1], "--help") == 0 ||
                                           strcmp(argv[g + 1], "-h") == 0);
            list_group(g, argv);
            return is_help ? 0 : CLI_EXIT_USAGE;
        }
        if (argv[1][0] == '-') {
            fprintf(stderr, "grove: unknown option '%s' (see 'grove --help')\n",
                    argv[1]);
        } else {
            fprintf(stderr,
                    "grove: unknown command '%s' (see 'grove --help')\n",
                    argv[1]);
        }
        return CLI_EXIT_USAGE;
    }
    /* Under mpirun, MPI starts here (train/mpi.h; a plain run never
     * starts it). The command sees its own last word as argv[0]. */
    if (train_mpi_init(&argc, &argv) < 0) {
        fprintf(stderr, "grove %s: %s\n", cmd->name, gr_last_error());
        return CLI_EXIT_FAIL;
    }
    int status = cmd->run(cmd, argc - words, argv + words);
    train_mpi_finalize();
    return status;
}
