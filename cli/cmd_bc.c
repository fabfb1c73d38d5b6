/* grove train bc: behaviour cloning of an OCN / MoE (agents/bc.h) on
 * train/ (run folder, metrics, checkpoints, --resume, signals). */
#define _POSIX_C_SOURCE 200809L
#include "cli/commands.h"

#include <limits.h>
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
#include "agents/ompn.h"
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
#include "train/mpi.h"
#include "cli/craft_common.h"

/* ---- grove train bc ---------------------------------------------------------- */

struct curves_ctx {
    const char *metrics;
    const char *png;
    int warned;
    int n_ys; /* 5, or 4 without the nmi (OMPN has no options) */
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
        rc = render_plot_csv(&csv, "update", ys, c->n_ys, &po, &img);
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
    const char *tasks_text = "AC,CD", *demos = NULL, *model = "ocn",
               *recipe = NULL;
    int options = 3, batch = INT_MIN, hidden = 128, width = 128, slots = 3;
    int eval_every = 100, return_every = 1000, return_episodes = 30;
    int64_t updates = 10000;
    int updates_i = INT_MIN, max_segs = 4, per_task = INT_MIN, resume = 0,
        blind = 0, no_inventory = 0;
    /* not given: n_each -1 (below 1 is refused), per_task INT_MIN,
     * balance -inf (the parser takes finite numbers only), updates and
     * batch INT_MIN, lr NaN (their defaults depend on --model) */
    int n_each = CLI_N_EACH_UNSET;
    double lr = NAN, clip = 0.2, tau = 10.0, balance = -INFINITY;
    double beta_b = 0.1, beta_z = 0.1;
    uint64_t demo_seed = 1;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("tasks", "LIST", "AC,CD",
                   "training tasks, comma-separated (each gets a controller "
                   "initial state)",
                   &tasks_text),
        CLI_INT("options", "K", "3", "number of options", &options),
        CLI_STRING("recipe", "s1|thesis", NULL,
                   "s1 (the default for S1/S2 task sets, i.e. OCN letters "
                   "only): grove's S1 recipe (docs/ocn/ppo.md), the departures "
                   "--n-each 4, --demos-per-task 24000, --blind-controller, "
                   "--options-without-inventory and --balance-options 0.1; "
                   "thesis (the default for other tasks): the thesis's settings "
                   "exactly (n_each 1, 6000 demos, every cell reads the "
                   "whole observation, no balance term). --n-each, "
                   "--demos-per-task and --balance-options override either; "
                   "the two flags add their departure to thesis",
                   &recipe),
        CLI_STRING("model", "ocn|moe|ompn|compile", "ocn",
                   "the OCN, the mixture-of-experts baseline (e = 1), OMPN "
                   "(ordered memory, no options; agents/ompn.h) "
                   "or compILE (a segmenting VAE; agents/"
                   "compile.h)",
                   &model),
        CLI_INT("max-segs", "S", "4", "compILE's segments (--model compile)",
                &max_segs),
        CLI_DOUBLE("beta-b", "B", "0.1",
                   "compILE's weight of the boundary KL (--model compile)",
                   &beta_b),
        CLI_DOUBLE("beta-z", "B", "0.1",
                   "compILE's weight of the latent KL (--model compile)",
                   &beta_z),
        CLI_INT("slots", "N", "3", "OMPN's memory slots n (--model ompn)",
                &slots),
        CLI_STRING("demos", "FILE.replay", NULL,
                   "demonstrations from a replay file (split per task in "
                   "file order, 80/20); default: generated by the expert",
                   &demos),
        CLI_INT("demos-per-task", "N", NULL,
                "expert demonstrations per task when --demos is not given "
                "(default: 24000 in the s1 recipe, 6000 in thesis)",
                &per_task),
        CLI_U64("demo-seed", "S", "1",
                "base seed of generated demonstrations (docs/craft.md, "
                "Seeds; the same maps as grove craft demos --seed S)",
                &demo_seed),
        CLI_INT("n-each", "N", NULL,
                "copies of each primitive on the generated maps (default 4 "
                "in the s1 recipe (psketch's maps), 1 in thesis; "
                "docs/craft.md); the checkpoints keep the world, so eval "
                "options, craft run and watch use it. With --demos FILE the "
                "world is the file's, and another N is refused (exit 2)",
                &n_each),
        CLI_INT("updates", "N", NULL,
                "total updates (default 10000; 3000 for --model compile; 0: "
                "write the initial model and stop)",
                &updates_i),
        CLI_INT("batch", "B", NULL,
                "demonstrations per update (default 512; 256 for --model "
                "ompn and compile, their IL settings)",
                &batch),
        CLI_DOUBLE("lr", "LR", NULL,
                   "Adam learning rate (default 0.001; 0.0001 for --model "
                   "compile)",
                   &lr),
        CLI_DOUBLE("clip", "NORM", "0.2", "global gradient-norm clipping",
                   &clip),
        CLI_DOUBLE("tau", "T", "10", "controller softmax temperature tau_C",
                   &tau),
        CLI_INT("hidden", "D", "128",
                "recurrent state size d (OMPN: the slot size)", &hidden),
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
                 "observation (not the thesis's OCN: a variant, docs/ocn, that "
                 "routes subtasks by progress, not by map)",
                 &blind),
        CLI_FLAG("options-without-inventory",
                 "the options do not read the inventory counts (not the "
                 "thesis's OCN: a variant, docs/ocn; an option then acts "
                 "the same whatever was collected before it)",
                 &no_inventory),
        CLI_DOUBLE("balance-options", "L", NULL,
                   "add L * KL(mean option use || uniform) to the loss, so "
                   "no option is left idle early in training (not in the "
                   "thesis: a variant of docs/ocn; 0: off; default 0.1 in "
                   "the s1 recipe, 0 in thesis)",
                   &balance),
        CLI_FLAG("resume", "continue the run in --out from its last.ckpt",
                 &resume),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_ALL | CLI_COMMON_OUT_REQUIRED,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (recipe != NULL && strcmp(recipe, "s1") != 0 &&
        strcmp(recipe, "thesis") != 0) {
        return cli_usage_error(cmd, "--recipe '%s' is not s1 or thesis",
                               recipe);
    }
    int is_ompn = strcmp(model, "ompn") == 0;
    int is_compile = strcmp(model, "compile") == 0;
    int kind = is_ompn || is_compile ? OCN_KIND_OCN : ocn_kind_from_name(model);
    if (kind < 0) {
        return cli_usage_error(cmd, "--model '%s' is not ocn, moe, ompn or "
                                    "compile",
                               model);
    }
    if (updates_i == INT_MIN) { /* not given */
        updates_i = is_compile ? 3000 : 10000;
    }
    updates = updates_i;
    if (isnan(lr)) {
        lr = is_compile ? 1e-4 : 1e-3;
    }
    if (is_compile && (options != 3 || tau != 10.0 || width != 128 || blind ||
                       no_inventory ||
                       (balance != -INFINITY && balance != 0.0) ||
                       slots != 3)) {
        return cli_usage_error(cmd, "--options, --tau, --width, --slots, "
                                    "--blind-controller, "
                                    "--options-without-inventory and "
                                    "--balance-options are not compILE's; "
                                    "it has --max-segs, --beta-b, --beta-z "
                                    "and --hidden");
    }
    if (!is_compile && (max_segs != 4 || beta_b != 0.1 || beta_z != 0.1)) {
        return cli_usage_error(cmd, "--max-segs, --beta-b and --beta-z are "
                                    "compILE's (--model compile)");
    }
    if (max_segs < 2 || max_segs > COMPILE_MAX_SEGS) {
        return cli_usage_error(cmd, "--max-segs %d is outside 2..%d",
                               max_segs, COMPILE_MAX_SEGS);
    }
    if (!(beta_b >= 0) || !(beta_z >= 0) || !isfinite(beta_b) ||
        !isfinite(beta_z)) {
        return cli_usage_error(cmd, "--beta-b and --beta-z must be numbers "
                                    ">= 0");
    }
    if (is_ompn && (options != 3 || tau != 10.0 || width != 128 || blind ||
                    no_inventory ||
                    (balance != -INFINITY && balance != 0.0))) {
        return cli_usage_error(cmd, "--options, --tau, --width, "
                                    "--blind-controller, "
                                    "--options-without-inventory and "
                                    "--balance-options are the OCN's; OMPN "
                                    "has --slots and --hidden");
    }
    if (!is_ompn && slots != 3) {
        return cli_usage_error(cmd, "--slots is OMPN's (--model ompn)");
    }
    if (slots < 2 || slots > OMPN_MAX_SLOTS) {
        return cli_usage_error(cmd, "--slots %d is outside 2..%d", slots,
                               OMPN_MAX_SLOTS);
    }
    if (batch == INT_MIN) { /* not given */
        batch = is_ompn || is_compile ? 256 : 512;
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
    if (balance != -INFINITY && (!(balance >= 0) || !isfinite(balance))) {
        return cli_usage_error(cmd, "--balance-options %g: expected a number "
                                    ">= 0",
                               balance);
    }
    if (eval_every < 1 || return_every < 0 || return_episodes < 1 ||
        (per_task != INT_MIN && per_task < 2)) {
        return cli_usage_error(cmd, "--eval-every >= 1, --return-every >= 0, "
                                    "--return-episodes >= 1, "
                                    "--demos-per-task >= 2");
    }
    struct craft_task tasks[DEMO_MAX_TASKS];
    int n_tasks = cli_parse_tasks(cmd, "--tasks", tasks_text, tasks,
                              DEMO_MAX_TASKS);
    if (n_tasks < 0) {
        return CLI_EXIT_USAGE;
    }
    /* the recipe (ocn.md §6.1): s1 for S1/S2 task sets unless asked
     * otherwise; each departure's own flag overrides it */
    int s1 = recipe != NULL ? strcmp(recipe, "s1") == 0
                            : cli_tasks_s1s2(tasks, n_tasks);
    int recipe_n_each = s1 ? CLI_S1S2_N_EACH : 1;
    if (per_task == INT_MIN) {
        per_task = s1 ? 24000 : 6000;
    }
    /* the recipe's world and demonstration count hold for every model
     * (Fig 5.7 compares like with like); its blind controller, options
     * without the inventory and balance term are the OCN's and MoE's */
    int has_options = !is_ompn && !is_compile;
    if (balance == -INFINITY) {
        balance = s1 && has_options ? 0.1 : 0.0;
    }
    if (s1 && has_options) {
        blind = 1;
        no_inventory = 1;
    }
    /* the world: generated demonstrations use --n-each; a replay brings
     * its own (its header), and the checkpoints keep it either way */
    struct craft_config world;
    craft_config_default(&world);
    if (demos != NULL) {
        if ((rc = cli_need_path(cmd, "--demos", demos)) != CLI_CONTINUE) {
            return rc;
        }
        /* the file's world; a world asked for (--n-each, or an explicit
         * --recipe) must be it */
        if (replay_world(demos, &world) < 0) {
            return cli_fail(cmd);
        }
        char asked[64];
        int want = n_each;
        if (n_each != CLI_N_EACH_UNSET) {
            snprintf(asked, sizeof asked, "--n-each %d", n_each);
        } else if (recipe != NULL) {
            snprintf(asked, sizeof asked, "--recipe %s", recipe);
            want = recipe_n_each;
        }
        rc = cli_check_file_world(cmd, demos, &world, want, asked);
        if (rc != 0) {
            return rc;
        }
    } else {
        rc = cli_world_n_each(
            cmd, n_each != CLI_N_EACH_UNSET ? n_each : recipe_n_each, &world);
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
    struct ompn_config ocfg;
    ompn_config_default(&ocfg);
    ocfg.n_slots = slots;
    ocfg.hidden = hidden;
    ocfg.n_tasks = n_tasks;
    memcpy(ocfg.task_names, cfg.task_names, sizeof ocfg.task_names);
    struct compile_config ccfg;
    compile_config_default(&ccfg);
    ccfg.max_segs = max_segs;
    ccfg.hidden = hidden;
    ccfg.beta_b = (float)beta_b;
    ccfg.beta_z = (float)beta_z;
    ccfg.n_tasks = n_tasks;
    memcpy(ccfg.task_names, cfg.task_names, sizeof ccfg.task_names);
    char text[OCN_CONFIG_TEXT_CAP + 1024];
    int len = is_ompn ? ompn_config_format(&ocfg, text, OCN_CONFIG_TEXT_CAP)
              : is_compile
                  ? compile_config_format(&ccfg, text, OCN_CONFIG_TEXT_CAP)
                  : ocn_config_format(&cfg, text, OCN_CONFIG_TEXT_CAP);
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

    /* MPI (train/mpi.h): every process trains on its share of each batch;
     * process 0 writes the run folder and speaks */
    int rank = train_mpi_rank(), n_ranks = train_mpi_size();
    if (n_ranks > 1 && balance > 0) {
        return cli_usage_error(cmd, "--balance-options %g (the s1 recipe's "
                                    "default) is not split across %d MPI "
                                    "processes (the term is not a sum over "
                                    "demonstrations); run it in one, or "
                                    "give --balance-options 0",
                               balance, n_ranks);
    }
    if (n_ranks > batch) {
        return cli_usage_error(cmd, "--batch %d is smaller than the %d MPI "
                                    "processes",
                               batch, n_ranks);
    }
    if (rank != 0) {
        common.quiet = 1;
    }
    struct train_run run;
    memset(&run, 0, sizeof run);
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
    /* every check runs before the run folder exists (train_run_open
     * comes last): a failed start leaves nothing behind */
    if ((rank == 0 || resume) && train_run_check(&spec) < 0) {
        return cli_fail(cmd);
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
        return cli_fail(cmd);
    }
    if (demo_set_split(&ds, 0.8) < 0) {
        demo_set_free(&ds);
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
    struct ompn_model om;
    struct compile_model cm;
    struct bc_policy pol;
    rc = cli_agents_ctx_new(&common, &ctx);
    if (rc == 0 && is_compile) {
        rc = compile_model_init(&cm, ctx, &ccfg, common.seed);
        compile_bc_policy(&cm, &pol);
    } else if (rc == 0 && is_ompn) {
        rc = ompn_model_init(&om, ctx, &ocfg, common.seed);
        ompn_bc_policy(&om, &pol);
    } else if (rc == 0) {
        rc = ocn_model_init(&m, ctx, &cfg, common.seed);
        bc_policy_ocn(&pol, &m);
    }
    if (rc == 0) {
        rc = bc_optimizer_ctx(&opt, ctx, (float)lr);
    }
    int mismatch = 0;
    if (rc == 0 && (rank == 0 || resume)) {
        rc = train_run_open(&run, &spec);
        mismatch = rc < 0 && run.config_mismatch;
    }
    char metrics[GR_PATH_MAX], png[GR_PATH_MAX];
    gr_path_join(metrics, sizeof metrics, common.out, "metrics.csv");
    gr_path_join(png, sizeof png, common.out, "curves.png");
    struct curves_ctx cv = {metrics, png, 0, is_ompn || is_compile ? 4 : 5};
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
    o.run = rank == 0 || resume ? &run : NULL;
    o.config_text = text;
    o.on_row = draw_curves;
    o.on_row_arg = &cv;
    struct bc_result res;
    memset(&res, 0, sizeof res);
    if (rc == 0 && is_compile && !common.quiet) {
        fprintf(stderr, "model: compile, %d segments, d = %d, beta_b %g, "
                        "beta_z %g, %lld parameters, on %s\n",
                max_segs, hidden, beta_b, beta_z,
                (long long)compile_param_count(&ccfg),
                gr_device_name(gr_ctx_device(ctx)));
    }
    if (rc == 0 && is_ompn && !common.quiet) {
        fprintf(stderr, "model: ompn, %d slots, d = %d, %lld parameters, "
                        "on %s\n",
                slots, hidden, (long long)ompn_param_count(&ocfg),
                gr_device_name(gr_ctx_device(ctx)));
    }
    if (rc == 0) {
        if (!common.quiet && !is_ompn && !is_compile) {
            char bal[64] = "";
            if (balance > 0) {
                snprintf(bal, sizeof bal, " (option balance %g)", balance);
            }
            fprintf(stderr, "recipe: %s (%s), world n_each %d\n",
                    s1 ? "s1" : "thesis",
                    s1 ? "docs/ocn/ppo.md" : "the thesis's settings",
                    world.n_each);
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
        rc = bc_train_policy(&pol, opt, &ds, &o, &res);
        train_signals_restore();
    }
    gr_optim_free(opt);
    gr_ctx_free(ctx);
    demo_set_free(&ds);
    if (rc == 0 && res.stopped && rank == 0) {
        train_print_stopped(&run, res.stopped_at);
    }
    train_run_close(&run);
    if (mismatch) {
        return cli_usage_error(cmd, "%s", gr_last_error());
    }
    if (rc < 0) {
        return cli_fail(cmd);
    }
    if (updates == 0 && !resume) {
        if (rank == 0) {
            printf("run %s: 0 updates\nwrote the initial model to "
                   "%s/best.ckpt and last.ckpt\n",
                   common.out, common.out);
        }
        return CLI_EXIT_OK;
    }
    if (res.stopped) {
        return 128 + train_stop_requested(); /* as a shell reports a signal */
    }
    if (rank != 0) {
        return CLI_EXIT_OK; /* process 0 reports */
    }
    char dur[32];
    gr_format_duration(res.seconds, dur, sizeof dur);
    const struct bc_row *r = &res.last;
    printf("run %s: %lld updates, %s (%.2f updates/s)\n", common.out,
           (long long)r->update, dur, res.updates_per_s);
    printf("best validation nll %.4f at update %lld -> %s/best.ckpt\n",
           res.best_nll, (long long)res.best_update, common.out);
    printf("update %lld: nll %.4f  action_acc %.4f  f1_tol0 %.4f  f1_tol1 "
           "%.4f  align_acc %.4f",
           (long long)r->update, r->nll, r->action_acc, r->f1_tol0,
           r->f1_tol1, r->align_acc);
    if (!isnan(r->nmi)) { /* OMPN has no options */
        printf("  nmi %.4f", r->nmi);
    }
    if (!isnan(r->greedy_return)) {
        printf("  greedy_return %.3f  greedy_success %.3f", r->greedy_return,
               r->greedy_success);
    }
    printf("\nwrote %s, %s, %s/last.ckpt\n", metrics, png, common.out);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_train_bc = {
    "train bc",
    "Behaviour cloning of an Option-Controller Network (or MoE, OMPN, "
    "compILE) on Craft demonstrations.",
    "",
    "For S1/S2 task sets (OCN letters only) the default is grove's S1 "
    "recipe (docs/ocn/ppo.md: the four-copy world, 24000 demonstrations per "
    "task, a controller blind to the observation, options that do not read "
    "the inventory, option-balance term 0.1); --recipe thesis gives the "
    "thesis's settings exactly (docs/models.md, OCN), and is the default "
    "for other tasks. Writes into --out: "
    "command, config, metrics.csv (update, nll, action_acc, f1_tol0, "
    "f1_tol1, align_acc, nmi, train_nll, greedy_return, greedy_success, "
    "wall_s; agents/README.md), curves.png, best.ckpt (lowest validation "
    "NLL) and last.ckpt (with the optimizer state; --resume continues from "
    "it bit for bit).\n\n"
    "Examples (the real run, then a short smoke run):\n"
    "  grove train bc --tasks AC,CD --options 3 --out runs/s1\n"
    "  grove train bc --tasks AC,CD --options 3 --updates 200 --out "
    "runs/s1-smoke",
    run_train_bc,
};
