/* The agents' commands (issue 8):
 *   grove train bc      behaviour cloning of an OCN / MoE (agents/bc.h)
 *   grove eval options  the option -> subtask success matrix
 *   grove watch         the live agent in the SDL window (or PNGs)
 *   grove bench ocn     BC speed against PyTorch (bench/ocn)
 * and `grove craft run --agent ocn` through the hook of cli/cmd_agents.h. */
#define _POSIX_C_SOURCE 200809L
#include "cli/cmd_agents.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/bc.h"
#include "agents/demos.h"
#include "agents/ocn.h"
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
#include "train/train.h"

/* ---- shared helpers ---------------------------------------------------------- */

static enum gr_device to_device(enum cli_device d)
{
    switch (d) {
    case CLI_DEVICE_CPU:
        return GR_DEVICE_CPU;
    case CLI_DEVICE_CUDA:
        return GR_DEVICE_CUDA;
    default:
        return GR_DEVICE_AUTO;
    }
}

static int new_ctx(const struct cli_common *common, struct gr_ctx **ctx)
{
    struct gr_ctx_config c = gr_ctx_config_default();
    c.device = to_device(common->device);
    c.threads = common->threads;
    return gr_ctx_new(ctx, &c);
}

/* Parses a comma-separated task list into tasks[cap]; returns the count or
 * -1 after printing a usage error. */
static int parse_tasks(const struct cli_command *cmd, const char *flag,
                       const char *text, struct craft_task *tasks, int cap)
{
    char list[1024];
    if (strlen(text) >= sizeof list) {
        cli_usage_error(cmd, "%s is longer than %zu characters", flag,
                        sizeof list - 1);
        return -1;
    }
    snprintf(list, sizeof list, "%s", text);
    char *items[64];
    int n = cli_split_list(list, items, cap < 64 ? cap : 64);
    if (n < 1) {
        cli_usage_error(cmd, "%s '%s' is not a comma-separated list of 1..%d "
                             "tasks",
                        flag, text, cap);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (craft_task_parse(items[i], &tasks[i]) < 0) {
            cli_usage_error(cmd, "%s: %s", flag, gr_last_error());
            return -1;
        }
        for (int j = 0; j < i; j++) {
            if (strcmp(tasks[j].name, tasks[i].name) == 0) {
                cli_usage_error(cmd, "%s names task %s twice", flag,
                                tasks[i].name);
                return -1;
            }
        }
    }
    return n;
}

/* Builds the context and model of a checkpoint and loads its parameters. */
static int load_checkpoint(const char *path, const struct cli_common *common,
                           struct gr_ctx **ctx, struct ocn_model *m,
                           struct craft_config *world)
{
    char *text = NULL;
    int rc = gr_checkpoint_read_config(path, &text);
    if (rc < 0) {
        return rc;
    }
    struct ocn_config cfg;
    rc = ocn_config_parse(text, &cfg);
    if (rc < 0) {
        free(text);
        return gr_error_wrap(rc, "%s: not an OCN checkpoint", path);
    }
    /* the world it was trained in (craft.md §3 defaults when not stated) */
    rc = bc_world_parse(text, world);
    free(text);
    if (rc < 0) {
        return gr_error_wrap(rc, "%s", path);
    }
    if (cfg.obs_size != CRAFT_OBS_SIZE || cfg.n_actions != CRAFT_N_ACTIONS) {
        return gr_error(GR_EINVAL,
                        "%s: the model reads %d observations and has %d "
                        "actions; Craft has %d and %d",
                        path, cfg.obs_size, cfg.n_actions, CRAFT_OBS_SIZE,
                        CRAFT_N_ACTIONS);
    }
    rc = new_ctx(common, ctx);
    if (rc < 0) {
        return rc;
    }
    rc = ocn_model_init(m, *ctx, &cfg, 0);
    if (rc == 0) {
        rc = gr_checkpoint_load(*ctx, path, GR_CKPT_PARAMS, NULL);
    }
    if (rc < 0) {
        gr_ctx_free(*ctx);
        *ctx = NULL;
    }
    return rc;
}

/* Index of `task` among the model's training tasks, or -1. */
static int model_task_index(const struct ocn_model *m,
                            const struct craft_task *task)
{
    for (int i = 0; i < m->cfg.n_tasks; i++) {
        struct craft_task t;
        if (craft_task_parse(m->cfg.task_names[i], &t) == 0 &&
            strcmp(t.name, task->name) == 0) {
            return i;
        }
    }
    return -1;
}

static void model_tasks_text(const struct ocn_model *m, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < m->cfg.n_tasks && n < cap; i++) {
        int w = snprintf(out + n, cap - n, "%s%s", i ? "," : "",
                         m->cfg.task_names[i]);
        if (w < 0) {
            break;
        }
        n += (size_t)w;
    }
}

/* Maps the requested tasks to the model's controller states; prints the
 * error and returns -1 when one is not a training task. */
static int map_tasks(const struct cli_command *cmd, const struct ocn_model *m,
                     const struct craft_task *tasks, int n, int *index)
{
    for (int i = 0; i < n; i++) {
        index[i] = model_task_index(m, &tasks[i]);
        if (index[i] < 0) {
            char have[512];
            model_tasks_text(m, have, sizeof have);
            gr_error(GR_EINVAL,
                     "task %s is not one of the checkpoint's training tasks "
                     "(%s): the controller has no initial state for it",
                     tasks[i].name, have);
            cli_fail(cmd);
            return -1;
        }
    }
    return 0;
}

static int argmax_f(const float *p, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) {
        if (p[i] > p[best]) {
            best = i;
        }
    }
    return best;
}

/* ---- grove train bc ---------------------------------------------------------- */

struct curves_ctx {
    const char *metrics;
    const char *png;
    int warned;
};

/* Redraws RUN/curves.png from metrics.csv after each row. A failure is
 * reported once and does not stop training. */
static void draw_curves(void *arg, const struct bc_row *row)
{
    struct curves_ctx *c = arg;
    (void)row;
    struct render_csv csv;
    int rc = render_csv_read(c->metrics, &csv);
    if (rc == 0) {
        const char *ys[] = {"nll", "action_acc", "f1_tol1", "align_acc",
                            "nmi"};
        struct render_plot_options po = render_plot_defaults();
        po.title = "behaviour cloning: validation metrics";
        po.x_label = "update";
        struct render_image img;
        rc = render_plot_csv(&csv, "update", ys, 5, &po, &img);
        render_csv_free(&csv);
        if (rc == 0) {
            rc = render_png_write(c->png, &img, 1);
            render_image_free(&img);
        }
    }
    if (rc < 0 && !c->warned) {
        fprintf(stderr, "grove train bc: warning: curves.png: %s\n",
                gr_last_error());
        c->warned = 1;
    }
}

static void demo_progress(void *arg, int64_t done, int64_t total)
{
    (void)total;
    gr_progress_update(arg, (uint64_t)done);
}

/* The base world of a replay file (its header). */
static int replay_world(const char *path, struct craft_config *world)
{
    struct replay_reader *r = NULL;
    int rc = replay_reader_open(&r, path, 0);
    if (rc < 0) {
        return rc;
    }
    *world = replay_reader_header(r)->env_config;
    world->reward = CRAFT_REWARD_DENSE; /* not part of the model's world */
    replay_reader_close(r);
    return 0;
}

static int run_train_bc(const struct cli_command *cmd, int argc, char **argv)
{
    const char *tasks_text = "AC,CD", *demos = NULL, *model = "ocn";
    int options = 3, batch = 512, hidden = 128, width = 128;
    int eval_every = 100, return_every = 1000, return_episodes = 30;
    int64_t updates = 10000;
    int updates_i = 10000, per_task = 6000, resume = 0, blind = 0,
        no_inventory = 0;
    int n_each = -1; /* -1: not given */
    double lr = 1e-3, clip = 0.2, tau = 10.0, balance = 0.0;
    uint64_t demo_seed = 1;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("tasks", "LIST", "AC,CD",
                   "training tasks, comma-separated (each gets a controller "
                   "initial state)",
                   &tasks_text),
        CLI_INT("options", "K", "3", "number of options", &options),
        CLI_STRING("model", "ocn|moe", "ocn",
                   "the OCN, or the mixture-of-experts baseline (e = 1)",
                   &model),
        CLI_STRING("demos", "FILE.replay", NULL,
                   "demonstrations from a replay file (split per task in "
                   "file order, 80/20); default: generated by the expert",
                   &demos),
        CLI_INT("demos-per-task", "N", "6000",
                "expert demonstrations per task when --demos is not given",
                &per_task),
        CLI_U64("demo-seed", "S", "1",
                "base seed of generated demonstrations (craft.md §9; the "
                "same maps as grove craft demos --seed S)",
                &demo_seed),
        CLI_INT("n-each", "N", NULL,
                "copies of each primitive on the generated maps (default 1, "
                "craft.md §3; psketch used 4); the checkpoints keep the "
                "world, so eval options, craft run and watch use it",
                &n_each),
        CLI_INT("updates", "N", "10000", "total updates", &updates_i),
        CLI_INT("batch", "B", "512", "demonstrations per update", &batch),
        CLI_DOUBLE("lr", "LR", "0.001", "Adam learning rate", &lr),
        CLI_DOUBLE("clip", "NORM", "0.2", "global gradient-norm clipping",
                   &clip),
        CLI_DOUBLE("tau", "T", "10", "controller softmax temperature tau_C",
                   &tau),
        CLI_INT("hidden", "D", "128", "recurrent state size d", &hidden),
        CLI_INT("width", "W", "128", "MLP width w", &width),
        CLI_INT("eval-every", "N", "100",
                "validation metrics every N updates (and at 0 and the end)",
                &eval_every),
        CLI_INT("return-every", "N", "1000",
                "greedy episodes every N updates (0: never)", &return_every),
        CLI_INT("return-episodes", "N", "30",
                "greedy episodes per task for the returns", &return_episodes),
        CLI_FLAG("blind-controller",
                 "the controller reads only its own state, not the "
                 "observation (not ocn.md: a variant of docs/ocn that "
                 "routes subtasks by progress, not by map)",
                 &blind),
        CLI_FLAG("options-without-inventory",
                 "the options do not read the inventory counts (not ocn.md: "
                 "a variant of docs/ocn; an option then acts the same "
                 "whatever was collected before it)",
                 &no_inventory),
        CLI_DOUBLE("balance-options", "L", "0",
                   "add L * KL(mean option use || uniform) to the loss, so "
                   "no option is left idle early in training (not in the "
                   "thesis: a variant of docs/ocn; 0: off)",
                   &balance),
        CLI_FLAG("resume", "continue the run in --out from its last.ckpt",
                 &resume),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_ALL, 0, 0, argc, argv, &common,
                       &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    updates = updates_i;
    if (common.out == NULL) {
        return cli_usage_error(cmd, "--out DIR (the run folder) is required");
    }
    int kind = ocn_kind_from_name(model);
    if (kind < 0) {
        return cli_usage_error(cmd, "--model '%s' is not ocn or moe", model);
    }
    if (options < 1 || options > OCN_MAX_OPTIONS) {
        return cli_usage_error(cmd, "--options %d is outside 1..%d", options,
                               OCN_MAX_OPTIONS);
    }
    if (updates < 0 || batch < 1 || batch > 65536 || hidden < 1 ||
        hidden > 4096 || width < 1 || width > 4096) {
        return cli_usage_error(cmd, "--updates, --batch, --hidden, --width "
                                    "must be positive (batch <= 65536, sizes "
                                    "<= 4096)");
    }
    if (!(lr > 0) || !(clip > 0) || !(tau > 0)) {
        return cli_usage_error(cmd, "--lr, --clip and --tau must be positive");
    }
    if (!(balance >= 0) || !isfinite(balance)) {
        return cli_usage_error(cmd, "--balance-options %g: expected a number "
                                    ">= 0",
                               balance);
    }
    if (eval_every < 1 || return_every < 0 || return_episodes < 1 ||
        per_task < 2) {
        return cli_usage_error(cmd, "--eval-every >= 1, --return-every >= 0, "
                                    "--return-episodes >= 1, "
                                    "--demos-per-task >= 2");
    }
    struct craft_task tasks[DEMO_MAX_TASKS];
    int n_tasks = parse_tasks(cmd, "--tasks", tasks_text, tasks,
                              DEMO_MAX_TASKS);
    if (n_tasks < 0) {
        return CLI_EXIT_USAGE;
    }
    /* the world: generated demonstrations use --n-each; a replay brings
     * its own (its header), and the checkpoints keep it either way */
    struct craft_config world;
    craft_config_default(&world);
    if (demos != NULL) {
        if (n_each != -1) {
            return cli_usage_error(cmd, "--n-each is for generated "
                                        "demonstrations; --demos FILE brings "
                                        "its own world (grove craft demos "
                                        "--n-each)");
        }
        if (replay_world(demos, &world) < 0) {
            return cli_fail(cmd);
        }
    } else {
        rc = cli_world_n_each(cmd, n_each, &world);
        if (rc != 0) {
            return rc;
        }
    }
    struct ocn_config cfg;
    ocn_config_default(&cfg);
    cfg.kind = (enum ocn_kind)kind;
    cfg.n_options = options;
    cfg.hidden = hidden;
    cfg.width = width;
    cfg.tau = (float)tau;
    cfg.ctrl_blind = blind;
    if (no_inventory) {
        cfg.opt_ignore_lo = CRAFT_OBS_INVENTORY;
        cfg.opt_ignore_hi = CRAFT_OBS_DIR;
    }
    cfg.balance = (float)balance;
    cfg.n_tasks = n_tasks;
    for (int i = 0; i < n_tasks; i++) {
        snprintf(cfg.task_names[i], CRAFT_TASK_NAME_CAP, "%s", tasks[i].name);
    }
    char text[OCN_CONFIG_TEXT_CAP + 1024];
    int len = ocn_config_format(&cfg, text, OCN_CONFIG_TEXT_CAP);
    if (len < 0) {
        return cli_fail(cmd);
    }
    char demos_desc[600];
    if (demos != NULL) {
        snprintf(demos_desc, sizeof demos_desc, "file %s", demos);
    } else {
        snprintf(demos_desc, sizeof demos_desc, "expert %d per task, seed %llu",
                 per_task, (unsigned long long)demo_seed);
    }
    len += snprintf(text + len, sizeof text - (size_t)len,
                    "batch %d\nlr %.9g\nclip %.9g\nseed %llu\ndemos %s\n",
                    batch, (double)(float)lr, (double)(float)clip,
                    (unsigned long long)common.seed, demos_desc);
    if (len < 0 || (size_t)len >= sizeof text ||
        bc_world_format(&world, text + len, sizeof text - (size_t)len) < 0) {
        return cli_fail(cmd);
    }

    struct train_run run;
    struct train_run_spec spec = train_run_spec_default();
    spec.dir = common.out;
    spec.force = common.force;
    spec.resume = resume;
    spec.argc = argc;
    spec.argv = argv;
    spec.config_text = text;
    spec.check_config = 1;
    spec.columns = bc_metrics_columns(&spec.n_columns);
    spec.what = "train bc";
    if (train_run_open(&run, &spec) < 0) {
        return run.config_mismatch ? cli_usage_error(cmd, "%s", gr_last_error())
                                   : cli_fail(cmd);
    }

    /* demonstrations */
    struct demo_set ds;
    double t0 = gr_now_seconds();
    if (demos != NULL) {
        if (!common.quiet) {
            fprintf(stderr, "reading %s (re-simulating every episode)...\n",
                    demos);
        }
        rc = demo_set_load_replay(&ds, demos, tasks, n_tasks);
    } else {
        struct gr_progress p;
        gr_progress_start(&p, "demos", (uint64_t)per_task * n_tasks,
                          "demos", common.quiet);
        rc = demo_set_generate(&ds, &world, tasks, n_tasks, per_task, demo_seed,
                               demo_progress, &p);
        gr_progress_finish(&p);
    }
    if (rc < 0) {
        train_run_close(&run);
        return cli_fail(cmd);
    }
    if (demo_set_split(&ds, 0.8) < 0) {
        demo_set_free(&ds);
        train_run_close(&run);
        return cli_fail(cmd);
    }
    if (!common.quiet) {
        fprintf(stderr,
                "demonstrations: %lld (%lld train, %lld validation), %lld "
                "steps, longest %d, %.1f non-zeros per observation, %lld maps "
                "skipped, %.1f s\n",
                (long long)ds.n, (long long)ds.n_train, (long long)ds.n_val,
                (long long)ds.n_steps, ds.max_len,
                (double)ds.nz_first[ds.n_steps] / (double)ds.n_steps,
                (long long)ds.skipped, gr_now_seconds() - t0);
    }

    /* model, optimizer, training */
    struct gr_ctx *ctx = NULL;
    struct gr_optim *opt = NULL;
    struct ocn_model m;
    rc = new_ctx(&common, &ctx);
    if (rc == 0) {
        rc = ocn_model_init(&m, ctx, &cfg, common.seed);
    }
    if (rc == 0) {
        rc = bc_optimizer_new(&opt, &m, (float)lr);
    }
    char metrics[GR_PATH_MAX], png[GR_PATH_MAX];
    gr_path_join(metrics, sizeof metrics, common.out, "metrics.csv");
    gr_path_join(png, sizeof png, common.out, "curves.png");
    struct curves_ctx cv = {metrics, png, 0};
    struct bc_options o;
    bc_options_default(&o);
    o.batch = batch;
    o.updates = updates;
    o.lr = (float)lr;
    o.clip = (float)clip;
    o.eval_every = eval_every;
    o.return_every = return_every;
    o.return_episodes = return_episodes;
    o.seed = common.seed;
    o.quiet = common.quiet;
    o.run = &run;
    o.config_text = text;
    o.on_row = draw_curves;
    o.on_row_arg = &cv;
    struct bc_result res;
    memset(&res, 0, sizeof res);
    if (rc == 0) {
        if (!common.quiet) {
            char bal[64] = "";
            if (balance > 0) {
                snprintf(bal, sizeof bal, " (option balance %g)", balance);
            }
            fprintf(stderr, "model: %s%s%s%s, K = %d, d = %d, w = %d, "
                            "tau = %g, %lld parameters, on %s\n",
                    ocn_kind_name(cfg.kind),
                    blind ? " (blind controller)" : "",
                    no_inventory ? " (options without inventory)" : "",
                    bal, options, hidden, width, tau,
                    (long long)ocn_param_count(&cfg),
                    gr_device_name(gr_ctx_device(ctx)));
        }
        train_signals_install();
        rc = bc_train(&m, opt, &ds, &o, &res);
        train_signals_restore();
    }
    gr_optim_free(opt);
    gr_ctx_free(ctx);
    demo_set_free(&ds);
    if (rc == 0 && res.stopped) {
        train_print_stopped(&run, res.stopped_at);
    }
    train_run_close(&run);
    if (rc < 0) {
        return cli_fail(cmd);
    }
    if (res.stopped) {
        return 128 + train_stop_requested(); /* as a shell reports a signal */
    }
    char dur[32];
    gr_format_duration(res.seconds, dur, sizeof dur);
    const struct bc_row *r = &res.last;
    printf("run %s: %lld updates, %s (%.2f updates/s)\n", common.out,
           (long long)r->update, dur, res.updates_per_s);
    printf("best validation nll %.4f at update %lld -> %s/best.ckpt\n",
           res.best_nll, (long long)res.best_update, common.out);
    printf("update %lld: nll %.4f  action_acc %.4f  f1_tol0 %.4f  f1_tol1 "
           "%.4f  align_acc %.4f  nmi %.4f",
           (long long)r->update, r->nll, r->action_acc, r->f1_tol0,
           r->f1_tol1, r->align_acc, r->nmi);
    if (!isnan(r->greedy_return)) {
        printf("  greedy_return %.3f  greedy_success %.3f", r->greedy_return,
               r->greedy_success);
    }
    printf("\nwrote %s, %s, %s/last.ckpt\n", metrics, png, common.out);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_train_bc = {
    "train bc",
    "Behaviour cloning of an Option-Controller Network (or MoE) on Craft "
    "demonstrations.",
    "",
    "The hyperparameters of ocn.md §6 are the defaults. Writes into --out: "
    "command, config, metrics.csv (update, nll, action_acc, f1_tol0, "
    "f1_tol1, align_acc, nmi, train_nll, greedy_return, greedy_success, "
    "wall_s; agents/README.md), curves.png, best.ckpt (lowest validation "
    "NLL) and last.ckpt (with the optimizer state; --resume continues from "
    "it bit for bit). Example: grove train bc --tasks AC,CD --options 3 "
    "--out runs/s1",
    run_train_bc,
};

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
        printf("| %d |", i + 1);
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

static int run_eval_options(const struct cli_command *cmd, int argc,
                            char **argv)
{
    const char *ckpt = NULL;
    int episodes = 100, align_demos = 200;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("checkpoint", "FILE", NULL, "the model (required)", &ckpt),
        CLI_INT("episodes", "N", "100",
                "episodes per option and subtask", &episodes),
        CLI_INT("demos-per-task", "N", "200",
                "expert demonstrations per task for the option-in-force "
                "table (new maps; 0: skip it)",
                &align_demos),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_DEVICE | CLI_COMMON_THREADS |
                           CLI_COMMON_OUT | CLI_COMMON_FORCE,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (ckpt == NULL) {
        return cli_usage_error(cmd, "--checkpoint FILE is required");
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
    struct gr_ctx *ctx = NULL;
    struct ocn_model m;
    struct craft_config world;
    if (load_checkpoint(ckpt, &common, &ctx, &m, &world) < 0) {
        return cli_fail(cmd);
    }
    struct craft_subtask subs[CRAFT_MAX_SUBTASKS];
    int S = bc_model_subtasks(&m, subs, CRAFT_MAX_SUBTASKS);
    int K = m.cfg.n_options;
    double *rate = malloc((size_t)(K * (S > 0 ? S : 1)) * sizeof *rate);
    rc = S < 0 ? S : (rate == NULL ? GR_ENOMEM : 0);
    if (rc == 0) {
        rc = bc_success_matrix(&m, &world, subs, S, episodes, BC_MATRIX_SEED,
                               rate);
    }
    struct bc_alignment *al = NULL;
    if (rc == 0 && align_demos > 0) {
        al = malloc(sizeof *al);
        rc = al == NULL ? gr_error(GR_ENOMEM, "out of memory")
                        : bc_option_alignment(&m, &world, align_demos,
                                              BC_ALIGN_SEED, al);
    }
    gr_ctx_free(ctx);
    if (rc < 0) {
        free(rate);
        free(al);
        return cli_fail(cmd);
    }
    char names[CRAFT_MAX_SUBTASKS][32];
    for (int j = 0; j < S; j++) {
        char letter = craft_subtask_letter(&subs[j]);
        if (letter) {
            snprintf(names[j], sizeof names[j], "%c", letter);
        } else {
            craft_subtask_name(&subs[j], names[j], sizeof names[j]);
        }
    }
    printf("success rate of each option alone on each subtask (%d episodes "
           "each, on maps the expert can solve, %s)\n\n| option |",
           episodes, ckpt);
    print_table_head(names, S);
    for (int i = 0; i < K; i++) {
        printf("| %d |", i + 1);
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
            printf(" %s->option %d (%.2f)", names[j], assign[j] + 1,
                   rate[assign[j] * S + j]);
        }
        printf("; diagonal mean %.3f, min %.3f\n", mean, mn);
    }
    if (al != NULL) {
        print_alignment(al, names, S, align_demos);
        free(al);
    }
    if (common.out != NULL) {
        struct gr_atomic_file af;
        rc = gr_atomic_open(&af, common.out, common.force);
        if (rc == 0) {
            fprintf(af.fp, "option");
            for (int j = 0; j < S; j++) {
                fprintf(af.fp, ",%s", names[j]);
            }
            fprintf(af.fp, "\n");
            for (int i = 0; i < K; i++) {
                fprintf(af.fp, "%d", i + 1);
                for (int j = 0; j < S; j++) {
                    fprintf(af.fp, ",%.4f", rate[i * S + j]);
                }
                fprintf(af.fp, "\n");
            }
            rc = gr_atomic_commit(&af);
        }
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
    "the time limit (ocn.md §9). Prints a Markdown table "
    "and the best one-to-one assignment; --out writes it as CSV. Then, "
    "on --demos-per-task new expert demonstrations of each training task "
    "(teacher-forced, as the validation metrics), which option is in force "
    "during each subtask, the NMI of ocn.md §9, and the mean end "
    "probability right after a subtask ends and elsewhere.",
    run_eval_options,
};

/* ---- grove craft run --agent ocn ------------------------------------------------ */

int cli_craft_run_wants_ocn(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--agent=ocn") == 0) {
            return 1;
        }
        if (strcmp(argv[i], "--agent") == 0 && i + 1 < argc &&
            strcmp(argv[i + 1], "ocn") == 0) {
            return 1;
        }
    }
    return 0;
}

/* One episode's record, kept until its chunk is written. */
struct ep_trace {
    uint8_t *action; /* [max_steps] */
    int32_t *option;
    float *po;       /* [max_steps, K] */
    float *pe;
};

static void print_world(const struct craft_world *w, uint64_t episode,
                        int action, int option, float pe)
{
    char text[CRAFT_TEXT_CAP];
    if (action < 0) {
        printf("task %s episode %llu seed %llu: start\n", w->task.name,
               (unsigned long long)episode, (unsigned long long)w->seed);
    } else {
        printf("task %s episode %llu t %d: %s (option %d, end p %.2f), k "
               "%d/%d\n",
               w->task.name, (unsigned long long)episode, w->t,
               craft_action_name(action), option + 1, (double)pe, w->k,
               w->task.n);
    }
    if (craft_world_render_text(w, text, sizeof text) > 0) {
        fputs(text, stdout);
    }
}

int cli_craft_run_ocn(const struct cli_command *cmd, int argc, char **argv)
{
    const char *agent = "ocn", *ckpt = NULL, *tasks_text = NULL,
               *record = NULL;
    uint64_t episodes = 100;
    int sparse = 0, print = 0;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("agent", "ocn", "ocn",
                   "the OCN agent (random and expert: grove craft run "
                   "--help)",
                   &agent),
        CLI_STRING("checkpoint", "FILE", NULL,
                   "the trained model (grove train bc; required)", &ckpt),
        CLI_STRING("tasks", "LIST", NULL,
                   "tasks to play, among the checkpoint's training tasks "
                   "(default: all of them)",
                   &tasks_text),
        CLI_U64("episodes", "N", "100", "episodes per task", &episodes),
        CLI_FLAG("sparse", "sparse reward (1 only when the task is done)",
                 &sparse),
        CLI_FLAG("print", "draw the grid as text after every step",
                 &print),
        CLI_STRING("record", "FILE", NULL,
                   "record every episode as a replay with the option in "
                   "control, the controller's distribution and the end "
                   "probability (o, po, pe)",
                   &record),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_SEED | CLI_COMMON_DEVICE |
                           CLI_COMMON_THREADS | CLI_COMMON_QUIET |
                           CLI_COMMON_FORCE,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (strcmp(agent, "ocn") != 0) {
        return cli_usage_error(cmd, "--agent '%s': this is the ocn agent's "
                                    "table",
                               agent);
    }
    if (ckpt == NULL) {
        return cli_usage_error(cmd, "--agent ocn needs --checkpoint FILE");
    }
    if (episodes < 1 || episodes > (1ull << 30)) {
        return cli_usage_error(cmd, "--episodes %llu is outside 1..2^30",
                               (unsigned long long)episodes);
    }
    struct gr_ctx *ctx = NULL;
    struct ocn_model m;
    struct craft_config world;
    if (load_checkpoint(ckpt, &common, &ctx, &m, &world) < 0) {
        return cli_fail(cmd);
    }
    struct craft_task tasks[OCN_MAX_TASKS];
    int n_tasks;
    if (tasks_text == NULL) {
        n_tasks = m.cfg.n_tasks;
        for (int i = 0; i < n_tasks; i++) {
            craft_task_parse(m.cfg.task_names[i], &tasks[i]);
        }
    } else {
        n_tasks = parse_tasks(cmd, "--tasks", tasks_text, tasks,
                              OCN_MAX_TASKS);
        if (n_tasks < 0) {
            gr_ctx_free(ctx);
            return CLI_EXIT_USAGE;
        }
    }
    int index[OCN_MAX_TASKS];
    if (map_tasks(cmd, &m, tasks, n_tasks, index) < 0) {
        gr_ctx_free(ctx);
        return CLI_EXIT_FAIL;
    }
    struct craft_config base = world;
    if (sparse) {
        base.reward = CRAFT_REWARD_SPARSE;
    }
    const int K = m.cfg.n_options;
    struct replay_writer *wr = NULL;
    if (record != NULL) {
        struct replay_header h;
        replay_header_init(&h, &base, "ocn");
        snprintf(h.agent_checkpoint, sizeof h.agent_checkpoint, "%s", ckpt);
        h.agent_n_options = (uint32_t)K;
        snprintf(h.grove, sizeof h.grove, "%s", GROVE_VERSION);
        if (replay_writer_open(&wr, record, common.force, &h) < 0) {
            gr_ctx_free(ctx);
            return cli_fail(cmd);
        }
    }
    uint64_t total = episodes * (uint64_t)n_tasks;
    int E = print ? 1 : (total < 256 ? (int)total : 256);
    int T_max = base.max_steps;
    struct craft_world *w = malloc((size_t)E * sizeof *w);
    float *obs = malloc((size_t)E * CRAFT_OBS_SIZE * sizeof *obs);
    int32_t *act = malloc((size_t)E * sizeof *act);
    float *end = malloc((size_t)E * sizeof *end);
    float *pic = malloc((size_t)E * K * sizeof *pic);
    uint8_t *done = malloc((size_t)E);
    struct ep_trace *tr = calloc((size_t)E, sizeof *tr);
    int ok = w && obs && act && end && pic && done && tr;
    for (int j = 0; ok && j < E; j++) {
        tr[j].action = malloc((size_t)T_max);
        tr[j].option = malloc((size_t)T_max * sizeof(int32_t));
        tr[j].po = malloc((size_t)T_max * K * sizeof(float));
        tr[j].pe = malloc((size_t)T_max * sizeof(float));
        ok = tr[j].action && tr[j].option && tr[j].po && tr[j].pe;
    }
    struct ocn_act_state st;
    memset(&st, 0, sizeof st);
    rc = ok ? ocn_act_state_init(&st, &m, E)
            : gr_error(GR_ENOMEM, "out of memory for %d worlds", E);
    double *ret = calloc((size_t)n_tasks, sizeof *ret);
    double *succ = calloc((size_t)n_tasks, sizeof *succ);
    double *lens = calloc((size_t)n_tasks, sizeof *lens);
    double *switches = calloc((size_t)n_tasks, sizeof *switches);
    /* the expert on the same maps: how much of the agent's shortfall is
     * maps nobody can solve (craft.md §8; about 0.2 % of maps, 2.4 % with
     * four copies of each primitive) */
    double *expert = calloc((size_t)n_tasks, sizeof *expert);
    uint8_t *expert_actions = malloc((size_t)T_max + 1);
    if (rc == 0 &&
        (!ret || !succ || !lens || !switches || !expert || !expert_actions)) {
        rc = gr_error(GR_ENOMEM, "out of memory");
    }
    struct gr_progress prog;
    gr_progress_start(&prog, "craft run", total, "episodes",
                      common.quiet || print);
    double t0 = gr_now_seconds();
    uint64_t steps_total = 0;
    for (uint64_t c0 = 0; rc == 0 && c0 < total; c0 += (uint64_t)E) {
        int n = (int)(total - c0 < (uint64_t)E ? total - c0 : (uint64_t)E);
        for (int j = 0; j < n && rc == 0; j++) {
            uint64_t g = c0 + (uint64_t)j;
            int ti = (int)(g / episodes);
            uint64_t ep = g % episodes;
            struct craft_config cfg;
            craft_config_for_task(&base, &tasks[ti], &cfg);
            rc = craft_world_reset(&w[j], &cfg,
                                   craft_episode_seed(common.seed,
                                                      (uint64_t)ti, ep),
                                   &tasks[ti]);
            ocn_act_reset(&st, j, index[ti]);
            done[j] = 0;
            if (print) {
                print_world(&w[j], ep, -1, 0, 0.0f);
            }
        }
        for (int j = n; j < E; j++) {
            done[j] = 1; /* a last, partial chunk */
        }
        int left = n;
        while (rc == 0 && left > 0) {
            for (int j = 0; j < E; j++) {
                craft_world_observe(&w[j < n ? j : 0],
                                    obs + (int64_t)j * CRAFT_OBS_SIZE);
            }
            rc = ocn_act(&m, &st, obs, act, NULL, end, pic);
            for (int j = 0; rc == 0 && j < n; j++) {
                if (done[j]) {
                    continue;
                }
                int t = w[j].t;
                tr[j].action[t] = (uint8_t)act[j];
                tr[j].option[t] = argmax_f(pic + (int64_t)j * K, K);
                memcpy(tr[j].po + (int64_t)t * K, pic + (int64_t)j * K,
                       (size_t)K * sizeof(float));
                tr[j].pe[t] = end[j];
                struct craft_step s;
                rc = craft_world_step(&w[j], act[j], &s);
                if (print && rc == 0) {
                    print_world(&w[j], (c0 + (uint64_t)j) % episodes, act[j],
                                tr[j].option[t], end[j]);
                }
                if (s.terminated || s.truncated) {
                    done[j] = 1;
                    left--;
                }
            }
        }
        for (int j = 0; rc == 0 && j < n; j++) {
            uint64_t g = c0 + (uint64_t)j;
            int ti = (int)(g / episodes);
            ret[ti] += w[j].episode_return;
            succ[ti] += w[j].k >= w[j].task.n;
            lens[ti] += w[j].t;
            steps_total += (uint64_t)w[j].t;
            int sw = 0;
            for (int t = 1; t < w[j].t; t++) {
                sw += tr[j].option[t] != tr[j].option[t - 1];
            }
            switches[ti] += sw;
            /* the episode's start again: the expert plays a copy of it,
             * the replay re-simulates it step by step */
            struct craft_world x;
            int expert_length;
            rc = craft_world_reset(&x, &w[j].config, w[j].seed, &w[j].task);
            if (rc == 0) {
                int es = craft_expert_rollout(&x, expert_actions, T_max + 1,
                                              &expert_length);
                expert[ti] += es == CRAFT_EXPERT_OK;
                rc = es < 0 ? es : 0;
            }
            if (rc == 0 && wr != NULL) {
                rc = replay_writer_episode_start(wr, &x) < 0 ? -1 : 0;
                for (int t = 0; rc == 0 && t < w[j].t; t++) {
                    struct replay_option_info oi;
                    oi.has_o = 1;
                    oi.o = (uint32_t)tr[j].option[t];
                    oi.n_po = (uint32_t)K;
                    oi.po = tr[j].po + (int64_t)t * K;
                    oi.has_pe = 1;
                    oi.pe = tr[j].pe[t];
                    rc = replay_record_step(wr, &x, tr[j].action[t], &oi,
                                            NULL);
                }
            }
        }
        gr_progress_update(&prog, c0 + (uint64_t)n);
    }
    gr_progress_finish(&prog);
    double secs = gr_now_seconds() - t0;
    if (wr != NULL) {
        if (rc < 0) {
            replay_writer_abort(wr);
        } else if (replay_writer_close(wr) < 0) {
            rc = -1;
        }
    }
    if (rc == 0) {
        printf("%-12s %9s %12s %8s %12s %14s %15s\n", "task", "episodes",
               "mean_return", "success", "mean_length", "mean_switches",
               "expert_success");
        for (int ti = 0; ti < n_tasks; ti++) {
            double e = (double)episodes;
            printf("%-12s %9llu %12.4f %7.2f%% %12.2f %14.2f %14.2f%%\n",
                   tasks[ti].name, (unsigned long long)episodes, ret[ti] / e,
                   100.0 * succ[ti] / e, lens[ti] / e, switches[ti] / e,
                   100.0 * expert[ti] / e);
        }
        printf("total: %llu episodes, %llu steps in %.3f s (agent ocn, %s, "
               "greedy; switches = changes of the option in control; "
               "expert_success = the expert of craft.md §8 on the same maps)\n",
               (unsigned long long)total, (unsigned long long)steps_total,
               secs, gr_device_name(gr_ctx_device(ctx)));
        if (record != NULL) {
            printf("recorded %s (agent ocn, with o/po/pe; check it with "
                   "grove replay verify)\n",
                   record);
        }
    }
    ocn_act_state_free(&st);
    for (int j = 0; tr != NULL && j < E; j++) {
        free(tr[j].action);
        free(tr[j].option);
        free(tr[j].po);
        free(tr[j].pe);
    }
    free(tr);
    free(w);
    free(obs);
    free(act);
    free(end);
    free(pic);
    free(done);
    free(ret);
    free(succ);
    free(lens);
    free(switches);
    free(expert);
    free(expert_actions);
    gr_ctx_free(ctx);
    return rc < 0 ? cli_fail(cmd) : CLI_EXIT_OK;
}

/* ---- grove watch ------------------------------------------------------------------ */

static const int watch_speeds[] = {1, 2, 4, 8, 15, 30, 60};
#define N_WATCH_SPEEDS ((int)(sizeof watch_speeds / sizeof watch_speeds[0]))

static int run_watch(const struct cli_command *cmd, int argc, char **argv)
{
    const char *ckpt = NULL, *tasks_text = NULL, *keys = NULL;
    int episodes = 3, headless = 0, speed = 4, frames = 0, scale = 0;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("checkpoint", "FILE", NULL, "the trained model (required)",
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
    if (ckpt == NULL) {
        return cli_usage_error(cmd, "--checkpoint FILE is required");
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
    struct gr_ctx *ctx = NULL;
    struct ocn_model m;
    struct craft_config world;
    if (load_checkpoint(ckpt, &common, &ctx, &m, &world) < 0) {
        return cli_fail(cmd);
    }
    struct craft_task tasks[OCN_MAX_TASKS];
    int n_tasks;
    if (tasks_text == NULL) {
        n_tasks = m.cfg.n_tasks;
        for (int i = 0; i < n_tasks; i++) {
            craft_task_parse(m.cfg.task_names[i], &tasks[i]);
        }
    } else {
        n_tasks = parse_tasks(cmd, "--tasks", tasks_text, tasks,
                              OCN_MAX_TASKS);
        if (n_tasks < 0) {
            gr_ctx_free(ctx);
            return CLI_EXIT_USAGE;
        }
    }
    int index[OCN_MAX_TASKS];
    if (map_tasks(cmd, &m, tasks, n_tasks, index) < 0) {
        gr_ctx_free(ctx);
        return CLI_EXIT_FAIL;
    }
    const int K = m.cfg.n_options;
    struct craft_config base = world;
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
        if (rc == 0 && render_window_is_headless(win) && !headless) {
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
        rc = ocn_act_state_init(&st, &m, 1);
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
        rc = ocn_act(&m, &st, obs, &action, NULL, &end, pic);
        if (rc == 0) {
            tl[0].subtask = w.k;
            tl[0].option = argmax_f(pic, K);
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
            rc = ocn_act(&m, &st, obs, &action, NULL, &end, pic);
            if (rc == 0 && w.t < 4096) {
                tl[w.t].subtask = w.k;
                tl[w.t].option = argmax_f(pic, K);
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
                 "grove watch | task %s | episode %d/%d | step %d | %d steps/s%s",
                 w.task.name, ep + 1, episodes, w.t, watch_speeds[speed_i],
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
    gr_ctx_free(ctx);
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
    "into --out.",
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
        CLI_FLAG("no-torch", "skip the PyTorch baseline", &no_torch),
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
    o.threads = common.threads > 0 ? common.threads : 2;
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
    "case | grove | baseline | ratio and where grove's update goes.",
    run_bench_ocn,
};
