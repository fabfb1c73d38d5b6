/* The agents' commands that read a trained policy:
 *   grove eval options  the option -> subtask success matrix
 *   grove watch         the live agent in the SDL window (or PNGs)
 *   grove bench ocn     BC speed against PyTorch (bench/ocn)
 * (grove train bc: cli/cmd_bc.c; craft run --agent ocn: cli/cmd_craft_ocn.c). */
#define _POSIX_C_SOURCE 200809L
#include "cli/commands.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "agents/compile.h"
#include "agents/demos.h"
#include "agents/ocn.h"
#include "agents/ocn_load.h"
#include "bench/ocn/bench_ocn.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "envs/craft.h"
#include "envs/expert.h"
#include "kernels/checkpoint.h"
#include "kernels/device.h"
#include "kernels/tape.h"
#include "render/frame.h"
#include "render/image.h"
#include "render/plot.h"
#include "render/pngfile.h"
#include "render/window.h"
#include "replays/replay.h"
#include "cli/craft_common.h"

/* ---- grove eval options -------------------------------------------------------- */

/* Best assignment of distinct options to subtasks (brute force over
 * permutations; K, S <= 8): the mean and minimum of the matched cells. */
static void best_assignment(const double *rate, int K, int S, int *assign,
                            double *mean, double *min)
{
    int cur[8], used[8] = {0};
    double best = -1.0;
    /* iterative DFS over injective maps subtask -> option */
    int depth = 0;
    cur[0] = -1;
    while (depth >= 0) {
        if (depth == S) {
            double s = 0.0;
            for (int j = 0; j < S; j++) {
                s += rate[cur[j] * S + j];
            }
            if (s > best) {
                best = s;
                memcpy(assign, cur, (size_t)S * sizeof *cur);
            }
            depth--;
            if (depth >= 0) {
                used[cur[depth]] = 0;
            }
            continue;
        }
        int next = cur[depth] + 1;
        while (next < K && used[next]) {
            next++;
        }
        if (next >= K) {
            cur[depth] = -1;
            depth--;
            if (depth >= 0) {
                used[cur[depth]] = 0;
            }
            continue;
        }
        cur[depth] = next;
        used[next] = 1;
        depth++;
        if (depth < S) {
            cur[depth] = -1;
        }
    }
    *mean = best / S;
    *min = 1.0;
    for (int j = 0; j < S; j++) {
        double v = rate[assign[j] * S + j];
        *min = v < *min ? v : *min;
    }
}

/* The rest of a Markdown table's header after "| option |": a column per
 * subtask, then the separator row. */
/* A subtask's column name: its letter, else its name. */
static void subtask_names(const struct craft_subtask *subs, int S,
                          char names[][32])
{
    for (int j = 0; j < S; j++) {
        char letter = craft_subtask_letter(&subs[j]);
        if (letter) {
            snprintf(names[j], 32, "%c", letter);
        } else {
            craft_subtask_name(&subs[j], names[j], 32);
        }
    }
}

/* A success matrix rate[rows, S] as CSV: header `corner,names...`, a row
 * each named row_names[i] (NULL: its index). */
static int write_matrix(const char *path, int force, const char *corner,
                        char row_names[][32], int rows, char names[][32],
                        int S, const double *rate)
{
    struct gr_atomic_file af;
    int rc = gr_atomic_open(&af, path, force);
    if (rc < 0) {
        return rc;
    }
    fprintf(af.fp, "%s", corner);
    for (int j = 0; j < S; j++) {
        fprintf(af.fp, ",%s", names[j]);
    }
    fprintf(af.fp, "\n");
    for (int i = 0; i < rows; i++) {
        if (row_names != NULL) {
            fprintf(af.fp, "%s", row_names[i]);
        } else {
            fprintf(af.fp, "%d", i);
        }
        for (int j = 0; j < S; j++) {
            fprintf(af.fp, ",%.4f", rate[i * S + j]);
        }
        fprintf(af.fp, "\n");
    }
    return gr_atomic_commit(&af);
}

static void print_table_head(char names[][32], int S)
{
    for (int j = 0; j < S; j++) {
        printf(" %s |", names[j]);
    }
    printf("\n|---|");
    for (int j = 0; j < S; j++) {
        printf("---|");
    }
    printf("\n");
}

/* The option-in-force table: per subtask (column), the share of its steps
 * on which each option was in force; then the NMI and where e_t fires. */
static void print_alignment(const struct bc_alignment *al,
                            char names[][32], int n_names, int per_task)
{
    int S = al->n_subtasks < n_names ? al->n_subtasks : n_names;
    printf("\noption in force (argmax of the controller's distribution) "
           "during each subtask, teacher-forced on %lld expert "
           "demonstrations (%d per task, new maps); share of the subtask's "
           "steps\n\n| option |",
           (long long)al->demos, per_task);
    print_table_head(names, S);
    for (int i = 0; i < al->n_options; i++) {
        printf("| %d |", i);
        for (int j = 0; j < S; j++) {
            int64_t col = 0;
            for (int k = 0; k < al->n_options; k++) {
                col += al->steps[k][j];
            }
            printf(" %.2f |",
                   col > 0 ? (double)al->steps[i][j] / (double)col : 0.0);
        }
        printf("\n");
    }
    int64_t segments = 0;
    for (int i = 0; i < al->n_options; i++) {
        for (int j = 0; j < al->n_subtasks; j++) {
            segments += al->segments[i][j];
        }
    }
    printf("\nNMI %.3f over %lld steps (%.3f over the %lld subtask "
           "segments, each under the option in force on most of its steps); "
           "mean end probability e_t %.3f on the first step of a new subtask "
           "(%lld steps), %.3f on the other steps after the first (%lld)\n",
           al->nmi, (long long)al->total_steps, al->nmi_segments,
           (long long)segments, al->end_after_boundary,
           (long long)al->n_after_boundary, al->end_elsewhere,
           (long long)al->n_elsewhere);
}

/* A table cell of a mean: "-" where there was nothing to average. */
static void print_mean_cell(double v)
{
    if (isnan(v)) {
        printf(" - |");
    } else {
        printf(" %.3f |", v);
    }
}

/* Where the policy's boundaries fall against the true ones (struct
 * bc_alignment's placement): two rows over the offsets. */
static void print_placement(const struct bc_alignment *al)
{
    const int W = BC_PLACE_MAX;
    int64_t total = 0;
    for (int k = 0; k <= 2 * W; k++) {
        total += al->place[k];
    }
    printf("\nboundary placement (P_top, teacher-forced): f1_tol0 %.3f, "
           "f1_tol1 %.3f, align_acc %.3f. Offset = predicted boundary minus "
           "the nearest true one (the step of the completing USE; %lld "
           "predicted boundaries before the last step; the outer columns "
           "count everything farther); score = mean boundary score b_t at "
           "t = true boundary + 1 + offset (offset 0: the step P_top must "
           "pick)\n\n| offset |",
           al->f1_tol0, al->f1_tol1, al->align_acc, (long long)total);
    for (int k = -W; k <= W; k++) {
        printf(k == -W ? " <=%d |" : (k == W ? " >=+%d |" : " %+d |"), k);
    }
    printf("\n|---|");
    for (int k = -W; k <= W; k++) {
        printf("---|");
    }
    printf("\n| share of predicted |");
    for (int k = 0; k <= 2 * W; k++) {
        printf(" %.3f |",
               total > 0 ? (double)al->place[k] / (double)total : 0.0);
    }
    printf("\n| mean score |");
    for (int k = 0; k <= 2 * W; k++) {
        print_mean_cell(al->around[k]);
    }
    printf("\n\n%lld of the predicted boundaries (%.3f) are at step 0 "
           "where no subtask ended (picked from b_1, the first score P_top "
           "reads); mean b_t at t = 1 .. %d:",
           (long long)al->place_first,
           total > 0 ? (double)al->place_first / (double)total : 0.0, W);
    for (int k = 0; k < W; k++) {
        printf(" %.3f", al->first[k]);
    }
    /* per subtask: does the score mark its start, or run through it? */
    char names[BC_ALIGN_MAX_SUBTASKS][32];
    int S = al->n_subtasks;
    subtask_names(al->subtasks, S, names);
    printf("\n\nmean boundary score per subtask, on its first step after a "
           "boundary and on its other steps (t >= 1)\n\n| subtask |");
    print_table_head(names, S);
    printf("| first step |");
    for (int j = 0; j < S; j++) {
        print_mean_cell(al->sub_start[j]);
    }
    printf("\n| other steps |");
    for (int j = 0; j < S; j++) {
        print_mean_cell(al->sub_rest[j]);
    }
    printf("\n");
}

/* eval options for an OMPN checkpoint: no options, so its boundaries'
 * placement on new demonstrations (bc_policy_alignment). */
static int eval_ompn(const struct cli_command *cmd, const char *ckpt,
                     int demos, int n_each, const struct cli_common *common)
{
    if (common->out != NULL) {
        return cli_usage_error(cmd, "--out writes the option success "
                                    "matrix; %s is an OMPN checkpoint, "
                                    "which has none",
                               ckpt);
    }
    struct ompn_loaded pol;
    if (cli_load_ompn(ckpt, common, &pol) < 0) {
        return cli_fail(cmd);
    }
    char asked[32];
    snprintf(asked, sizeof asked, "--n-each %d", n_each);
    int rc = cli_check_file_world(cmd, ckpt, &pol.world, n_each, asked);
    if (rc != 0) {
        ompn_loaded_free(&pol);
        return rc;
    }
    struct bc_policy p;
    ompn_bc_policy(&pol.model, &p);
    struct bc_alignment *al = malloc(sizeof *al);
    rc = al == NULL ? gr_error(GR_ENOMEM, "out of memory")
                    : bc_policy_alignment(&p, pol.tasks, pol.n_tasks,
                                          &pol.world, demos, BC_ALIGN_SEED,
                                          al);
    ompn_loaded_free(&pol);
    if (rc < 0) {
        free(al);
        gr_error_wrap(rc, "%s", ckpt);
        return cli_fail(cmd);
    }
    printf("%s is an OMPN checkpoint: it has no options, so no option "
           "success matrix or option table (--episodes is not used). Its "
           "boundaries on %lld new expert demonstrations (%d per task); "
           "boundary score b_t = (n - s_t) / (n - 1), s_t the expected "
           "expansion depth (agents/ompn.h):\n",
           ckpt, (long long)al->demos, demos);
    print_placement(al);
    free(al);
    return CLI_EXIT_OK;
}

/* eval options for a compILE checkpoint: its latent success matrix
 * (compile_latent_matrix), on the CPU. */
static int eval_compile(const struct cli_command *cmd, const char *ckpt,
                        const char *config, int episodes, int demos,
                        int n_each, const struct cli_common *common)
{
    struct compile_config cc;
    struct craft_config world;
    int rc = compile_config_parse(config, &cc);
    if (rc == 0) {
        rc = bc_world_parse(config, &world);
    }
    if (rc < 0) {
        gr_error_wrap(rc, "%s", ckpt);
        return cli_fail(cmd);
    }
    char asked[32];
    snprintf(asked, sizeof asked, "--n-each %d", n_each);
    rc = cli_check_file_world(cmd, ckpt, &world, n_each, asked);
    if (rc != 0) {
        return rc;
    }
    struct gr_ctx_config ccf = gr_ctx_config_default();
    ccf.device = GR_DEVICE_CPU;
    ccf.threads = common->threads;
    struct gr_ctx *ctx = NULL;
    struct compile_model m;
    rc = gr_ctx_new(&ctx, &ccf);
    if (rc == 0) {
        rc = compile_model_init(&m, ctx, &cc, 0); /* its tensors: ctx's */
    }
    if (rc == 0) {
        rc = gr_checkpoint_load(ctx, ckpt, GR_CKPT_PARAMS, NULL);
    }
    struct craft_subtask subs[CRAFT_MAX_SUBTASKS];
    double rate[CRAFT_MAX_SUBTASKS * CRAFT_MAX_SUBTASKS];
    int64_t found[CRAFT_MAX_SUBTASKS];
    double replay[3];
    int S = 0, n_replayed = 0;
    if (rc == 0) {
        rc = compile_latent_matrix(&m, &world, demos, episodes,
                                   BC_MATRIX_SEED, subs, &S, rate, found,
                                   replay, &n_replayed);
    }
    gr_ctx_free(ctx);
    if (rc < 0) {
        gr_error_wrap(rc, "%s", ckpt);
        return cli_fail(cmd);
    }
    char names[CRAFT_MAX_SUBTASKS][32];
    subtask_names(subs, S, names);
    printf("%s is a compILE checkpoint: no options, so its counterpart. "
           "Each subtask's latent is the mean latent (mu) of the segments "
           "that mostly work on it over %d expert demonstrations per "
           "training task; the decoder plays it alone and greedily on each "
           "one-subtask task (%d episodes each, on maps the expert can "
           "solve; no boundary ends it):\n\n| latent of (segments) |",
           ckpt, demos, episodes);
    print_table_head(names, S);
    double diag = 0.0;
    for (int i = 0; i < S; i++) {
        printf("| %s (%lld) |", names[i], (long long)found[i]);
        for (int j = 0; j < S; j++) {
            printf(" %.2f |", rate[i * S + j]);
        }
        printf("\n");
        diag += rate[i * S + i];
    }
    printf("\ndiagonal mean %.3f (1: each subtask's latent plays its "
           "subtask)\n",
           S > 0 ? diag / S : 0.0);
    printf("\nthe first segment of each of %d demonstrations played again "
           "from its start (its map and task): its first subtask done with "
           "the segment's own latent %.2f, with its subtask's mean latent "
           "%.2f, with a zero latent %.2f\n",
           n_replayed, replay[0], replay[1], replay[2]);
    if (common->out != NULL) {
        if (write_matrix(common->out, common->force, "latent", names, S,
                         names, S, rate) < 0) {
            return cli_fail(cmd);
        }
        printf("wrote %s\n", common->out);
    }
    return CLI_EXIT_OK;
}

static int run_eval_options(const struct cli_command *cmd, int argc,
                            char **argv)
{
    const char *ckpt = NULL;
    int episodes = 100, align_demos = 200, n_each = CLI_N_EACH_UNSET;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("checkpoint", "FILE", "the model", &ckpt),
        CLI_INT("episodes", "N", "100",
                "episodes per option and subtask", &episodes),
        CLI_INT("demos-per-task", "N", "200",
                "expert demonstrations per task for the option-in-force "
                "table (new maps; 0: skip it)",
                &align_demos),
        CLI_INT("n-each", "N", NULL,
                "the world the checkpoint must have been trained in (the "
                "world always comes from the checkpoint; another N is "
                "refused, exit 2)",
                &n_each),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_DEVICE | CLI_COMMON_THREADS |
                           CLI_COMMON_OUT | CLI_COMMON_FORCE,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (episodes < 1 || episodes > 100000) {
        return cli_usage_error(cmd, "--episodes %d is outside 1..100000",
                               episodes);
    }
    if (align_demos < 0 || align_demos > 100000) {
        return cli_usage_error(cmd,
                               "--demos-per-task %d is outside 0..100000",
                               align_demos);
    }
    if (common.out != NULL && !common.force && gr_path_exists(common.out)) {
        gr_error(GR_EEXIST, "%s exists (use --force to overwrite)",
                 common.out);
        return cli_fail(cmd);
    }
    /* a compILE checkpoint has latents, not options: its counterpart */
    char *config = NULL;
    if (gr_checkpoint_read_config(ckpt, &config) == 0 && config != NULL &&
        strncmp(config, "kind compile\n", 13) == 0) {
        rc = eval_compile(cmd, ckpt, config, episodes,
                          align_demos > 0 ? align_demos : 200, n_each,
                          &common);
        free(config);
        return rc;
    }
    if (config != NULL && strncmp(config, "kind ompn\n", 10) == 0) {
        free(config);
        return eval_ompn(cmd, ckpt, align_demos > 0 ? align_demos : 200,
                         n_each, &common);
    }
    free(config);
    struct ocn_loaded pol;
    if (cli_load_policy(ckpt, &common, &pol) < 0) {
        return cli_fail(cmd);
    }
    char asked[32];
    snprintf(asked, sizeof asked, "--n-each %d", n_each);
    rc = cli_check_file_world(cmd, ckpt, &pol.world, n_each, asked);
    if (rc != 0) {
        ocn_loaded_free(&pol);
        return rc;
    }
    struct craft_subtask subs[CRAFT_MAX_SUBTASKS];
    int S = bc_model_subtasks(&pol.model, subs, CRAFT_MAX_SUBTASKS);
    int K = pol.model.cfg.n_options;
    double *rate = malloc((size_t)(K * (S > 0 ? S : 1)) * sizeof *rate);
    rc = S < 0 ? S : (rate == NULL ? GR_ENOMEM : 0);
    if (rc == 0) {
        rc = bc_success_matrix(&pol.model, &pol.world, subs, S, episodes, BC_MATRIX_SEED,
                               rate);
    }
    struct bc_alignment *al = NULL;
    if (rc == 0 && align_demos > 0) {
        al = malloc(sizeof *al);
        rc = al == NULL ? gr_error(GR_ENOMEM, "out of memory")
                        : bc_option_alignment(&pol.model, &pol.world, align_demos,
                                              BC_ALIGN_SEED, al);
    }
    ocn_loaded_free(&pol);
    if (rc < 0) {
        free(rate);
        free(al);
        return cli_fail(cmd);
    }
    char names[CRAFT_MAX_SUBTASKS][32];
    subtask_names(subs, S, names);
    printf("success rate of each option alone on each subtask (%d episodes "
           "each, on maps the expert can solve, %s)\n\n| option |",
           episodes, ckpt);
    print_table_head(names, S);
    for (int i = 0; i < K; i++) {
        printf("| %d |", i);
        for (int j = 0; j < S; j++) {
            printf(" %.2f |", rate[i * S + j]);
        }
        printf("\n");
    }
    if (K >= S && S <= 8 && K <= 8) {
        int assign[8];
        double mean, mn;
        best_assignment(rate, K, S, assign, &mean, &mn);
        printf("\nbest one-to-one assignment:");
        for (int j = 0; j < S; j++) {
            printf(" %s->option %d (%.2f)", names[j], assign[j],
                   rate[assign[j] * S + j]);
        }
        printf("; diagonal mean %.3f, min %.3f\n", mean, mn);
    }
    if (al != NULL) {
        print_alignment(al, names, S, align_demos);
        print_placement(al);
        free(al);
    }
    if (common.out != NULL) {
        rc = write_matrix(common.out, common.force, "option", NULL, K, names,
                          S, rate);
        if (rc < 0) {
            free(rate);
            return cli_fail(cmd);
        }
        printf("wrote %s\n", common.out);
    }
    free(rate);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_eval_options = {
    "eval options",
    "The option -> subtask success matrix of a trained OCN (thesis Table "
    "5.2).",
    "",
    "For each option and each subtask of the checkpoint's training tasks, "
    "option i plays the one-subtask task alone and greedily from its initial "
    "state (end signal ignored) on the same --episodes maps, maps the expert "
    "can solve (as for demonstrations); success = the subtask done within "
    "the time limit. Prints a Markdown table "
    "and the best one-to-one assignment; --out writes it as CSV. Then, "
    "on --demos-per-task new expert demonstrations of each training task "
    "(teacher-forced, as the validation metrics), which option is in force "
    "during each subtask, their NMI (docs/formats.md, train bc's "
    "nmi), and the mean end "
    "probability right after a subtask ends and elsewhere. For a compILE "
    "checkpoint (no options), its counterpart: each subtask's mean latent "
    "over --demos-per-task demonstrations (200 when 0) played by the "
    "decoder on each subtask, then each demonstration's first segment "
    "played again from its start with its own latent, its subtask's mean "
    "and zero (agents/README.md). For an OMPN checkpoint (no options "
    "either), where its boundaries fall against the true ones on "
    "--demos-per-task demonstrations (200 when 0); for an OCN, the same "
    "table follows its alignment.\n\n"
    "Example:\n"
    "  grove eval options --checkpoint runs/s1/best.ckpt --episodes 20 "
    "\\\n      --demos-per-task 0",
    run_eval_options,
};

/* ---- grove watch ------------------------------------------------------------------ */

static const int watch_speeds[] = {1, 2, 4, 8, 15, 30, 60};
#define N_WATCH_SPEEDS ((int)(sizeof watch_speeds / sizeof watch_speeds[0]))

static int run_watch(const struct cli_command *cmd, int argc, char **argv)
{
    const char *ckpt = NULL, *tasks_text = NULL, *keys = NULL;
    int episodes = 3, headless = 0, speed = 4, frames = 0, scale = 0,
        n_each = CLI_N_EACH_UNSET;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING_REQUIRED("checkpoint", "FILE", "the trained model",
                            &ckpt),
        CLI_STRING("tasks", "LIST", NULL,
                   "tasks to play in turn, among the checkpoint's training "
                   "tasks (default: all of them)",
                   &tasks_text),
        CLI_INT("episodes", "N", "3", "episodes to play, then quit",
                &episodes),
        CLI_FLAG("headless", "no window: write every frame as a PNG into "
                             "--out (default 'watch')",
                 &headless),
        CLI_INT("speed", "STEPS", "4", "agent steps per second in the window",
                &speed),
        CLI_INT("frames", "N", "0", "stop after N frames (0: no limit)",
                &frames),
        CLI_STRING("keys", "LIST", NULL,
                   "scripted keys, one per frame (space, right, plus, minus, "
                   "n, s, q; '.' none)",
                   &keys),
        CLI_INT("scale", "N", "0", "initial window scale (0: fit)", &scale),
        CLI_INT("n-each", "N", NULL,
                "the world the checkpoint must have been trained in (the "
                "world always comes from the checkpoint; another N is "
                "refused, exit 2)",
                &n_each),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_SEED | CLI_COMMON_DEVICE |
                           CLI_COMMON_THREADS | CLI_COMMON_OUT |
                           CLI_COMMON_FORCE,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (episodes < 1 || speed < 1 || speed > 1000 || frames < 0 ||
        scale < 0 || scale > 16) {
        return cli_usage_error(cmd, "--episodes >= 1, --speed 1..1000, "
                                    "--frames >= 0, --scale 0..16");
    }
    /* scripted keys */
    enum render_key script[512];
    int n_script = 0;
    if (keys != NULL && keys[0] != '\0') {
        const char *p = keys;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            char name[32];
            if (len == 0 || len >= sizeof name || n_script == 512) {
                return cli_usage_error(cmd, "--keys: bad list '%s'", keys);
            }
            memcpy(name, p, len);
            name[len] = '\0';
            enum render_key k = RENDER_KEY_NONE;
            if (strcmp(name, ".") != 0) {
                k = render_key_parse(name);
                if (k == RENDER_KEY_NONE) {
                    return cli_usage_error(cmd, "--keys: unknown key '%s'",
                                           name);
                }
            }
            script[n_script++] = k;
            if (comma == NULL) {
                break;
            }
            p = comma + 1;
        }
    }
    const char *out_dir = common.out != NULL ? common.out : "watch";
    struct ocn_loaded pol;
    if (cli_load_policy(ckpt, &common, &pol) < 0) {
        return cli_fail(cmd);
    }
    char asked[32];
    snprintf(asked, sizeof asked, "--n-each %d", n_each);
    rc = cli_check_file_world(cmd, ckpt, &pol.world, n_each, asked);
    if (rc != 0) {
        ocn_loaded_free(&pol);
        return rc;
    }
    struct craft_task tasks[OCN_MAX_TASKS];
    int n_tasks;
    if (tasks_text == NULL) {
        n_tasks = pol.model.cfg.n_tasks;
        for (int i = 0; i < n_tasks; i++) {
            craft_task_parse(pol.model.cfg.task_names[i], &tasks[i]);
        }
    } else {
        n_tasks = cli_parse_tasks(cmd, "--tasks", tasks_text, tasks,
                              OCN_MAX_TASKS);
        if (n_tasks < 0) {
            ocn_loaded_free(&pol);
            return CLI_EXIT_USAGE;
        }
    }
    int index[OCN_MAX_TASKS];
    if (cli_map_tasks(cmd, &pol, tasks, n_tasks, index) < 0) {
        ocn_loaded_free(&pol);
        return CLI_EXIT_FAIL;
    }
    const int K = pol.model.cfg.n_options;
    struct craft_config base = pol.world;
    int fw, fh;
    render_frame_size(&base, 1, &fw, &fh);
    struct render_image img;
    memset(&img, 0, sizeof img);
    rc = render_image_init(&img, fw, fh);
    struct render_window *win = NULL;
    if (rc == 0) {
        struct render_window_options wo = {"grove watch", fw, fh,
                                           headless ? 1 : RENDER_HEADLESS_AUTO,
                                           scale};
        rc = render_window_open(&win, &wo);
        if (rc == 0 && render_window_is_headless(win) && !headless &&
            !common.quiet) {
            fprintf(stderr, "note: no display found; running headless, PNGs "
                            "go to %s\n",
                    out_dir);
        }
    }
    int is_headless = rc == 0 && render_window_is_headless(win);
    if (rc == 0 && is_headless) {
        rc = gr_mkdir_p(out_dir);
    }
    struct ocn_act_state st;
    memset(&st, 0, sizeof st);
    if (rc == 0) {
        rc = ocn_act_state_init(&st, &pol.model, 1);
    }
    struct render_timeline_step tl[4096];
    struct craft_world w;
    float obs[CRAFT_OBS_SIZE], pic[OCN_MAX_OPTIONS], end = 0.0f;
    int32_t action = -1;
    int ep = 0, decided = 0, paused = 0, quit = 0, speed_i = 2;
    for (int i = 0; i < N_WATCH_SPEEDS; i++) {
        if (watch_speeds[i] <= speed) {
            speed_i = i;
        }
    }
    float last_reward = 0.0f;
    int has_reward = 0, written = 0, script_i = 0, finished_shown = 0;
    double last_tick = gr_now_seconds();
    /* starts episode `ep` */
#define WATCH_START()                                                        \
    do {                                                                     \
        int ti_ = ep % n_tasks;                                              \
        struct craft_config cfg_;                                            \
        craft_config_for_task(&base, &tasks[ti_], &cfg_);                    \
        rc = craft_world_reset(&w, &cfg_,                                    \
                               craft_episode_seed(common.seed,               \
                                                  (uint64_t)ti_,             \
                                                  (uint64_t)(ep / n_tasks)), \
                               &tasks[ti_]);                                 \
        ocn_act_reset(&st, 0, index[ti_]);                                   \
        for (int i_ = 0; i_ < 4096; i_++) {                                  \
            tl[i_].subtask = -1;                                             \
            tl[i_].option = -1;                                              \
            tl[i_].end_prob = NAN;                                           \
        }                                                                    \
        decided = 0;                                                         \
        has_reward = 0;                                                      \
        action = -1;                                                         \
        finished_shown = 0;                                                  \
    } while (0)
    if (rc == 0) {
        WATCH_START();
    }
    if (rc == 0) {
        craft_world_observe(&w, obs);
        rc = ocn_act(&pol.model, &st, obs, &action, NULL, &end, pic);
        if (rc == 0) {
            tl[0].subtask = w.k;
            tl[0].option = cli_argmax_f(pic, K);
            tl[0].end_prob = end;
            decided = 1;
        }
    }
    for (long frame = 0; rc == 0 && !quit; frame++) {
        if (frames > 0 && frame >= frames) {
            break;
        }
        if (script_i < n_script) {
            enum render_key k = script[script_i++];
            if (k != RENDER_KEY_NONE) {
                rc = render_window_push_key(win, k);
            }
        }
        struct render_event ev;
        int step_once = 0, next_ep = 0, shot = 0;
        while (rc == 0 && render_window_poll(win, &ev)) {
            if (ev.type == RENDER_EVENT_QUIT) {
                quit = 1;
                break;
            }
            switch (ev.key) {
            case RENDER_KEY_SPACE: paused = !paused; break;
            case RENDER_KEY_RIGHT: paused = 1; step_once = 1; break;
            case RENDER_KEY_PLUS:
                speed_i = speed_i + 1 < N_WATCH_SPEEDS ? speed_i + 1 : speed_i;
                break;
            case RENDER_KEY_MINUS: speed_i = speed_i > 0 ? speed_i - 1 : 0; break;
            case RENDER_KEY_N: next_ep = 1; break;
            case RENDER_KEY_S: shot = 1; break;
            case RENDER_KEY_Q:
            case RENDER_KEY_ESCAPE: quit = 1; break;
            default: break;
            }
        }
        if (quit || rc < 0) {
            break;
        }
        double now = gr_now_seconds();
        int tick = frame > 0 && is_headless;
        tick = tick ||
                   (!paused && now - last_tick >= 1.0 / watch_speeds[speed_i]) ||
                   step_once;
        int over = craft_world_done(&w), changed = 0, decide = 0;
        if (next_ep || (tick && over && finished_shown)) {
            ep++;
            if (ep >= episodes) {
                break;
            }
            WATCH_START();
            changed = 1;
            decide = rc == 0;
        } else if (tick && !over) {
            changed = 1;
            if (decided) {
                struct craft_step s;
                rc = craft_world_step(&w, action, &s);
                last_reward = s.reward;
                has_reward = 1;
                decided = 0;
                over = craft_world_done(&w);
                if (over) {
                    printf("episode %d (task %s): %s in %d steps, return %g\n",
                           ep, w.task.name,
                           w.k >= w.task.n ? "done" : "time limit", w.t,
                           (double)w.episode_return);
                }
            }
            decide = rc == 0 && !over;
        } else if (tick && over) {
            finished_shown = 1;
        }
        if (decide) {
            /* the agent's decision in the state shown */
            craft_world_observe(&w, obs);
            rc = ocn_act(&pol.model, &st, obs, &action, NULL, &end, pic);
            if (rc == 0 && w.t < 4096) {
                tl[w.t].subtask = w.k;
                tl[w.t].option = cli_argmax_f(pic, K);
                tl[w.t].end_prob = end;
            }
            decided = 1;
        }
        if (tick) {
            last_tick = now;
        }
        if (rc < 0) {
            break;
        }
        struct render_frame f;
        memset(&f, 0, sizeof f);
        f.world = &w;
        f.episode = ep;
        f.n_episodes = episodes;
        f.n_steps = w.config.max_steps < 4096 ? w.config.max_steps : 4096;
        f.agent = "ocn";
        f.action = decided ? action : -1;
        f.action_label = "next";
        f.has_reward = has_reward;
        f.reward = last_reward;
        if (craft_world_done(&w)) {
            f.status = w.k >= w.task.n ? "task done" : "time limit";
        }
        f.timeline = 1;
        f.steps = tl;
        f.n_options = K;
        f.hint = "space pause  right step  +/- speed  n next  s shot  q quit";
        rc = render_frame_draw(&img, &f);
        if (rc == 0) {
            rc = render_window_present(win, &img);
        }
        char title[256];
        snprintf(title, sizeof title,
                 "grove watch | task %s | episode %d (0..%d) | step %d | %d "
                 "steps/s%s",
                 w.task.name, ep, episodes - 1, w.t, watch_speeds[speed_i],
                 paused ? " | paused" : "");
        render_window_set_title(win, title);
        if (rc == 0 && (shot || (is_headless && (changed || frame == 0)))) {
            char name[64], path[GR_PATH_MAX];
            snprintf(name, sizeof name, "%sep%04d_t%04d%s.png",
                     shot ? "shot-" : "", ep, w.t, decided ? "" : "_end");
            rc = gr_mkdir_p(out_dir);
            if (rc == 0) {
                rc = gr_path_join(path, sizeof path, out_dir, name);
            }
            struct render_image cap;
            if (rc == 0) {
                rc = render_window_capture(win, &cap);
            }
            if (rc == 0) {
                rc = render_png_write(path, &cap, common.force);
                render_image_free(&cap);
                written += rc == 0;
                if (rc == 0 && shot) {
                    printf("saved %s\n", path);
                }
            }
        }
        if (!is_headless) {
            render_window_wait_frame(win, 60);
        }
    }
#undef WATCH_START
    render_window_close(win);
    render_image_free(&img);
    ocn_act_state_free(&st);
    ocn_loaded_free(&pol);
    if (rc < 0) {
        return cli_fail(cmd);
    }
    if (is_headless) {
        printf("wrote %d frames to %s\n", written, out_dir);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_watch = {
    "watch",
    "Watch a trained OCN play Craft live (SDL window, or PNGs headless).",
    "",
    "The panel shows the task, the inventory, the next action, the option in "
    "control and its end probability; the strip under the grid is the "
    "episode's timeline (subtask, option in control, end probability; the "
    "strip spans the 64-step limit). Keys: space pause, right single step, "
    "+/- speed, n next episode, s screenshot (into --out), q or Esc quit. "
    "Without a display (or with --headless) every step is written as a PNG "
    "into --out.\n\n"
    "Example:\n"
    "  grove watch --checkpoint runs/s1/best.ckpt --episodes 1",
    run_watch,
};

/* ---- grove bench ocn ---------------------------------------------------------------- */

static int run_bench_ocn(const struct cli_command *cmd, int argc, char **argv)
{
    int quick = 0, no_torch = 0;
    struct bench_ocn_options o;
    bench_ocn_options_default(&o);
    const char *python = o.python, *script = o.script;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_FLAG("quick", "tiny sizes, for a smoke run", &quick),
        CLI_INT("batch", "B", "512", "demonstrations per update", &o.batch),
        CLI_INT("updates", "N", "5", "timed updates per run", &o.updates),
        CLI_INT("runs", "K", "3", "timed runs; the median is shown", &o.runs),
        CLI_FLAG("no-baseline", "do not run the PyTorch baseline",
                 &no_torch),
        CLI_STRING("python", "PATH", "/usr/bin/python3",
                   "interpreter with torch for the baseline", &python),
        CLI_STRING("script", "FILE", NULL,
                   "the baseline script (default: bench/ocn/ocn_torch.py of "
                   "the source tree)",
                   &script),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_DEVICE | CLI_COMMON_THREADS |
                           CLI_COMMON_QUIET,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (o.batch < 1 || o.batch > 65536 || o.updates < 1 || o.runs < 1 ||
        o.runs > 64) {
        return cli_usage_error(cmd, "--batch 1..65536, --updates >= 1, "
                                    "--runs 1..64");
    }
    o.quick = quick;
    o.threads = cli_threads_or_cores(common.threads);
    o.cuda = common.device == CLI_DEVICE_CUDA ||
             (common.device == CLI_DEVICE_AUTO && gr_cuda_device_count() > 0);
    o.python = no_torch ? NULL : python;
    if (script != NULL) {
        o.script = script;
    }
    o.build = GROVE_BUILD_TYPE ", " GROVE_C_COMPILER ", " GROVE_GIT_DESCRIBE;
    o.quiet = common.quiet;
    if (bench_ocn_run(&o, stdout) < 0) {
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_bench_ocn = {
    "bench ocn",
    "Behaviour-cloning speed of the OCN against the same model in PyTorch.",
    "",
    "S1 shapes (AC, CD; K = 3, d = w = 128; batch 512). The PyTorch model "
    "(bench/ocn/ocn_torch.py: dense input, nn.Linear cells, autograd) runs "
    "in the same invocation on the same batches. Prints the Markdown table "
    "case | grove | baseline | ratio and where grove's update goes.\n\n"
    "Example:\n"
    "  grove bench ocn --quick --threads 1",
    run_bench_ocn,
};
