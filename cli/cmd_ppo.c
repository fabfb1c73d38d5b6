/* grove train ppo (issue 20 §3): PPO fine-tuning of a new controller over
 * frozen options (agents/ppo.h), and of the baselines OMPN and compILE
 * (issue 26 §2: agents/ppo_ompn.h, agents/ppo_compile.h), on the run
 * folder of train/train.h. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/ppo.h"
#include "agents/ppo_compile.h"
#include "agents/ppo_ompn.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/craft_common.h"
#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "envs/craft.h"
#include "kernels/checkpoint.h"
#include "kernels/device.h"
#include "render/image.h"
#include "render/plot.h"
#include "render/pngfile.h"
#include "replays/replay.h"
#include "train/mpi.h"
#include "train/train.h"

/* metrics.csv (agents/README.md documents each column) */
static const struct train_column ppo_columns[] = {
    {"global_step", "%.0f"},        {"episodes", "%.0f"},
    {"episodic_return", "%.9g"},    {"episodic_length", "%.9g"},
    {"success_rate", "%.9g"},       {"eval_return", "%.9g"},
    {"eval_success", "%.9g"},       {"policy_loss", "%.9g"},
    {"value_loss", "%.9g"},         {"entropy", "%.9g"},
    {"approx_kl", "%.9g"},          {"clipfrac", "%.9g"},
    {"explained_variance", "%.9g"}, {"decisions_per_episode", "%.9g"},
    {"mean_option_duration", "%.9g"}, {"learning_rate", "%.9g"},
    {"sps", "%.1f"},                {"wall_s", "%.3f"},
};
#define N_COLUMNS (int)(sizeof ppo_columns / sizeof ppo_columns[0])

static int new_ctx(const struct cli_common *common, struct gr_ctx **ctx)
{
    struct gr_ctx_config c = gr_ctx_config_default();
    c.device = common->device == CLI_DEVICE_CPU    ? GR_DEVICE_CPU
               : common->device == CLI_DEVICE_CUDA ? GR_DEVICE_CUDA
                                                   : GR_DEVICE_AUTO;
    c.threads = common->threads;
    return gr_ctx_new(ctx, &c);
}

static void draw_curves(const char *metrics, const char *png, int *warned)
{
    struct render_csv csv;
    int rc = render_csv_read(metrics, &csv);
    if (rc == 0) {
        const char *ys[] = {"eval_return", "episodic_return", "success_rate",
                            "eval_success"};
        struct render_plot_options po = render_plot_defaults();
        po.title = "PPO: returns and success against frames";
        po.x_label = "global_step (frames)";
        struct render_image img;
        rc = render_plot_csv(&csv, "global_step", ys, 4, &po, &img);
        render_csv_free(&csv);
        if (rc == 0) {
            rc = render_png_write(png, &img, 1);
            render_image_free(&img);
        }
    }
    if (rc < 0 && !*warned) {
        fprintf(stderr, "grove train ppo: warning: curves.png: %s\n",
                gr_last_error());
        *warned = 1;
    }
}

/* The evaluation episodes as a replay, the option in force per step. */
static int write_eval_replay(const char *path, const struct craft_config *w,
                             const char *task_name, const char *agent,
                             int K, int episodes, const struct ppo_trace *tr)
{
    struct craft_task task;
    int rc = craft_task_parse(task_name, &task);
    if (rc < 0) {
        return rc;
    }
    struct replay_header h;
    replay_header_init(&h, w, agent);
    h.agent_n_options = (uint32_t)K;
    snprintf(h.grove, sizeof h.grove, "%s", GROVE_VERSION);
    struct replay_writer *wr = NULL;
    rc = replay_writer_open(&wr, path, 1, &h);
    if (rc < 0) {
        return rc;
    }
    const int T = w->max_steps;
    for (int e = 0; rc == 0 && e < episodes; e++) {
        struct craft_world x;
        rc = craft_world_reset(&x, w, tr->seed[e], &task);
        if (rc == 0) {
            /* returns the episode's index */
            rc = replay_writer_episode_start(wr, &x) < 0 ? -1 : 0;
        }
        for (int t = 0; rc == 0 && t < tr->length[e]; t++) {
            struct replay_option_info oi;
            memset(&oi, 0, sizeof oi);
            oi.has_o = 1;
            oi.o = (uint32_t)tr->option[(size_t)e * T + t];
            rc = replay_record_step(wr, &x, tr->action[(size_t)e * T + t], &oi,
                                    NULL);
        }
    }
    if (rc < 0) {
        replay_writer_abort(wr);
        return rc;
    }
    return replay_writer_close(wr);
}

/* The trainer of the run: agents/ppo.h's (ocn, moe, flat, oracle),
 * OMPN's (agents/ppo_ompn.h) or compILE's controller's
 * (agents/ppo_compile.h), behind the calls the command makes. */
struct ppo_any {
    struct ppo_trainer *p;
    struct ppo_ompn *o;
    struct ppo_compile *c;
};

static int64_t any_global_step(const struct ppo_any *t)
{
    return t->c != NULL   ? ppo_compile_global_step(t->c)
           : t->o != NULL ? ppo_ompn_global_step(t->o)
                          : ppo_global_step(t->p);
}

static int any_iteration(struct ppo_any *t, struct ppo_stats *st)
{
    return t->c != NULL   ? ppo_compile_iteration(t->c, st)
           : t->o != NULL ? ppo_ompn_iteration(t->o, st)
                          : ppo_iteration(t->p, st);
}

static int any_evaluate(struct ppo_any *t, int episodes, uint64_t seed,
                        struct ppo_eval *ev, const struct ppo_trace *tr)
{
    return t->c != NULL   ? ppo_compile_evaluate(t->c, episodes, seed, ev, tr)
           : t->o != NULL ? ppo_ompn_evaluate(t->o, episodes, seed, ev, tr)
                          : ppo_evaluate(t->p, episodes, seed, ev, tr);
}

static int any_save(struct ppo_any *t, const char *path, int force)
{
    return t->c != NULL   ? ppo_compile_save(t->c, path, force)
           : t->o != NULL ? ppo_ompn_save(t->o, path, force)
                          : ppo_save(t->p, path, force);
}

static int any_load(struct ppo_any *t, const char *path)
{
    return t->c != NULL   ? ppo_compile_load(t->c, path)
           : t->o != NULL ? ppo_ompn_load(t->o, path)
                          : ppo_load(t->p, path);
}

static const struct craft_config *any_world(const struct ppo_any *t)
{
    return t->c != NULL   ? ppo_compile_world(t->c)
           : t->o != NULL ? ppo_ompn_world(t->o)
                          : ppo_world(t->p);
}

static char *any_config(const struct ppo_any *t)
{
    return t->c != NULL   ? ppo_compile_checkpoint_config(t->c)
           : t->o != NULL ? ppo_ompn_checkpoint_config(t->o)
                          : ppo_checkpoint_config(t->p);
}

static void any_free(struct ppo_any *t)
{
    ppo_trainer_free(t->p);
    ppo_ompn_free(t->o);
    ppo_compile_free(t->c);
    t->p = NULL;
    t->o = NULL;
    t->c = NULL;
}

/* options in the replay: the pool's, the actions for OMPN, the models
 * for compILE */
static int any_n_options(struct ppo_any *t)
{
    return t->c != NULL   ? ppo_compile_n_models(t->c)
           : t->o != NULL ? CRAFT_N_ACTIONS
                          : ppo_model(t->p)->cfg.n_options;
}

static int run_train_ppo(const struct cli_command *cmd, int argc, char **argv)
{
    struct ppo_config pc;
    ppo_config_default(&pc);
    const char *options_text = NULL, *task = NULL, *reward = "dense",
               *policy = "ocn", *init = NULL;
    int total = 2000000, num_envs = pc.num_envs, num_steps = pc.num_steps;
    int num_minibatches = pc.num_minibatches, update_epochs = pc.update_epochs;
    int anneal = 1, norm_adv = 1, hidden = 128, width = 128,
        n_each = CLI_N_EACH_UNSET;
    int eval_every = 10, eval_episodes = 100, resume = 0;
    double lr = pc.learning_rate, gamma = pc.gamma, lam = pc.gae_lambda,
           clip = pc.clip_coef, ent = pc.ent_coef, vf = pc.vf_coef,
           mgn = pc.max_grad_norm, tkl = 0.0, tau = 0.0,
           bq = pc.boundary_quantile;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("options", "FILE[,FILE...]", NULL,
                   "the options' checkpoints (grove train bc, or a PPO run's "
                   "checkpoint); several are concatenated in the order given "
                   "(S2); needed by --policy ocn and moe",
                   &options_text),
        CLI_STRING("init", "FILE[,FILE...]", NULL,
                   "--policy ompn: the OMPN behaviour-cloning checkpoint "
                   "(grove train bc --model ompn) the whole network "
                   "fine-tunes from; --policy compile: the compILE "
                   "checkpoints whose decoders a new controller drives "
                   "(several: S2, it also picks the model)",
                   &init),
        CLI_STRING_REQUIRED("task", "TASK", "the fine-tuning task, e.g. DCA",
                            &task),
        CLI_STRING("reward", "dense|sparse", "dense",
                   "the reward (docs/craft.md)",
                   &reward),
        CLI_STRING("policy", "ocn|moe|flat|oracle|ompn|compile", "ocn",
                   "ocn: a decision when the option ends; moe: a decision "
                   "every step; flat: a recurrent policy over the actions "
                   "from scratch; oracle: the expert per subtask as options "
                   "(no --options); ompn: OMPN as a recurrent policy over "
                   "the actions from its BC weights (--init); compile: "
                   "a controller of compILE latents (--init); "
                   "docs/models.md",
                   &policy),
        CLI_INT("total-timesteps", "N", "2000000",
                "frames of the run (the learning rate decays to 0 over "
                "them); 0 writes the initial model and stops",
                &total),
        CLI_INT("num-envs", "N", "16",
                "parallel worlds, all processes together (under mpirun -np "
                "P each acts about N/P of them)",
                &num_envs),
        CLI_INT("num-steps", "N", "64",
                "controller decisions per world per rollout (16 x 64 = "
                "1024 decisions per update)",
                &num_steps),
        CLI_DOUBLE("learning-rate", "LR", "0.0003", "Adam learning rate",
                   &lr),
        CLI_INT("anneal-lr", "0|1", "1",
                "decay the learning rate linearly to 0", &anneal),
        CLI_DOUBLE("gamma", "G", "0.99", "discount per frame", &gamma),
        CLI_DOUBLE("gae-lambda", "L", "0.95", "GAE lambda", &lam),
        CLI_INT("num-minibatches", "N", "4", "minibatches per epoch",
                &num_minibatches),
        CLI_INT("update-epochs", "N", "4", "epochs per update",
                &update_epochs),
        CLI_INT("norm-adv", "0|1", "1", "normalise advantages per minibatch",
                &norm_adv),
        CLI_DOUBLE("clip-coef", "E", "0.2", "PPO ratio clipping", &clip),
        CLI_DOUBLE("ent-coef", "C", "0.01", "entropy bonus", &ent),
        CLI_DOUBLE("vf-coef", "C", "0.5", "value-loss weight", &vf),
        CLI_DOUBLE("max-grad-norm", "N", "0.5", "global gradient-norm clip",
                   &mgn),
        CLI_DOUBLE("target-kl", "KL", "0",
                   "stop an update's epochs once approx_kl exceeds it (0: "
                   "off)",
                   &tkl),
        CLI_DOUBLE("tau", "T", "0",
                   "controller temperature (0: 10, or 1 for flat)", &tau),
        CLI_INT("hidden", "D", "128",
                "state size of a flat/oracle controller (ocn/moe: the "
                "options')",
                &hidden),
        CLI_INT("width", "W", "128",
                "MLP width, idem; --policy compile: its controller's width",
                &width),
        CLI_DOUBLE("boundary-quantile", "Q", "0.5",
                   "--policy compile: a segment ends where compILE's "
                   "boundary logit reaches this quantile of its peaks over "
                   "expert demonstrations (0.5: the median; lower ends "
                   "segments sooner; agents/README.md)",
                   &bq),
        CLI_INT("n-each", "N", NULL,
                "copies of each primitive (flat/oracle: default 4 for "
                "S1/S2 tasks (docs/ocn/ppo.md), else 1; ocn/moe: the options' "
                "world, and another N is refused, exit 2)",
                &n_each),
        CLI_INT("eval-every", "N", "10",
                "greedy evaluation every N updates (and at the last)",
                &eval_every),
        CLI_INT("eval-episodes", "N", "100",
                "evaluation episodes (fixed maps)", &eval_episodes),
        CLI_FLAG("resume", "continue the run in --out from its last.ckpt",
                 &resume),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_ALL | CLI_COMMON_OUT_REQUIRED,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    int pol = ppo_policy_from_name(policy);
    if (pol < 0) {
        return cli_usage_error(cmd, "--policy '%s' is not ocn, moe, flat, "
                                    "oracle, ompn or compile",
                               policy);
    }
    int rw = craft_reward_from_name(reward);
    if (rw < 0) {
        return cli_usage_error(cmd, "--reward '%s' is not dense or sparse",
                               reward);
    }
    struct craft_task tk;
    if (craft_task_parse(task, &tk) < 0) {
        return cli_usage_error(cmd, "--task: %s", gr_last_error());
    }
    int needs = pol == PPO_POLICY_OCN || pol == PPO_POLICY_MOE;
    if (needs && options_text == NULL) {
        return cli_usage_error(cmd, "--policy %s needs --options FILE",
                               policy);
    }
    if (!needs && options_text != NULL) {
        return cli_usage_error(cmd, "--policy %s takes no --options", policy);
    }
    int is_ompn = pol == PPO_POLICY_OMPN || pol == PPO_POLICY_COMPILE;
    if (is_ompn && init == NULL) {
        return cli_usage_error(cmd, "--policy %s needs --init FILE (a "
                                    "checkpoint of grove train bc --model "
                                    "%s)",
                               policy, policy);
    }
    if (!is_ompn && init != NULL) {
        return cli_usage_error(cmd, "--init is for --policy ompn and "
                                    "compile; --policy %s takes --options",
                               policy);
    }
    char ilist[4096];
    char *ipaths[PPO_MAX_SOURCES];
    int n_ipaths = 0;
    if (init != NULL) {
        if (strlen(init) >= sizeof ilist) {
            return cli_usage_error(cmd, "--init is too long");
        }
        snprintf(ilist, sizeof ilist, "%s", init);
        n_ipaths = cli_split_list(ilist, ipaths, PPO_MAX_SOURCES);
        int most = pol == PPO_POLICY_OMPN ? 1 : PPO_COMPILE_MAX_MODELS;
        if (n_ipaths < 1 || n_ipaths > most) {
            return cli_usage_error(cmd, "--init '%s': 1..%d files for "
                                        "--policy %s",
                                   init, most, policy);
        }
    }
    if (eval_every < 1 || eval_episodes < 1 || eval_episodes > 65535) {
        return cli_usage_error(cmd, "--eval-every >= 1, --eval-episodes in "
                                    "1..65535");
    }
    char list[4096];
    char *paths[PPO_MAX_SOURCES];
    int n_paths = 0;
    if (options_text != NULL) {
        if (strlen(options_text) >= sizeof list) {
            return cli_usage_error(cmd, "--options is too long");
        }
        snprintf(list, sizeof list, "%s", options_text);
        n_paths = cli_split_list(list, paths, PPO_MAX_SOURCES);
        if (n_paths < 1) {
            return cli_usage_error(cmd, "--options '%s': 1..%d files, "
                                        "comma-separated",
                                   options_text, PPO_MAX_SOURCES);
        }
    }
    pc.policy = (enum ppo_policy)pol;
    snprintf(pc.task, sizeof pc.task, "%s", tk.name);
    if (!needs && !is_ompn) {
        /* S1/S2 tasks default to their four-copy world (ocn.md §6.1) */
        rc = cli_world_n_each(cmd,
                              n_each != CLI_N_EACH_UNSET ? n_each
                                           : cli_default_n_each(&tk, 1),
                              &pc.world);
        if (rc != 0) {
            return rc;
        }
    }
    pc.world.reward = (enum craft_reward)rw;
    pc.seed = common.seed;
    pc.learning_rate = (float)lr;
    pc.anneal_lr = anneal != 0;
    pc.total_timesteps = total;
    pc.num_envs = num_envs;
    pc.num_steps = num_steps;
    pc.gamma = (float)gamma;
    pc.gae_lambda = (float)lam;
    pc.num_minibatches = num_minibatches;
    pc.update_epochs = update_epochs;
    pc.norm_adv = norm_adv != 0;
    pc.clip_coef = (float)clip;
    pc.ent_coef = (float)ent;
    pc.vf_coef = (float)vf;
    pc.max_grad_norm = (float)mgn;
    pc.target_kl = (float)tkl;
    pc.tau = (float)tau;
    pc.hidden = hidden;
    pc.width = width;
    pc.boundary_quantile = (float)bq;
    if (ppo_config_validate(&pc) < 0) {
        return cli_usage_error(cmd, "%s", gr_last_error());
    }
    /* MPI (train/mpi.h): every process acts its share of the worlds and
     * the update sums their gradients; process 0 writes and speaks */
    int rank = train_mpi_rank(), n_ranks = train_mpi_size();
    int writer = rank == 0;
    if (n_ranks > num_envs) {
        if (!writer) {
            return CLI_EXIT_USAGE; /* process 0 says why, once */
        }
        return cli_usage_error(cmd, "--num-envs %d is fewer than the %d MPI "
                                    "processes (each acts at least one world)",
                               num_envs, n_ranks);
    }
    if (!writer) {
        common.quiet = 1;
    }

    for (int i = 0; i < n_paths; i++) {
        if ((rc = cli_need_path(cmd, "--options", paths[i])) != CLI_CONTINUE) {
            return rc;
        }
    }
    for (int i = 0; i < n_ipaths; i++) {
        if ((rc = cli_need_path(cmd, "--init", ipaths[i])) != CLI_CONTINUE) {
            return rc;
        }
    }
    struct train_run_spec spec = train_run_spec_default();
    spec.dir = common.out;
    spec.force = common.force;
    spec.resume = resume;
    spec.what = "train ppo";
    rc = writer ? train_run_check(&spec) : 0;
    /* process 0's checks stop every process (one message, from it) */
    if (train_allreduce_max_int(rc < 0)) {
        return rc < 0 ? cli_fail(cmd) : CLI_EXIT_FAIL;
    }
    /* the trainer first: a bad options' file fails before the run folder */
    struct gr_ctx *ctx = NULL;
    struct ppo_any t = {NULL, NULL, NULL};
    rc = new_ctx(&common, &ctx);
    if (rc == 0) {
        rc = pol == PPO_POLICY_OMPN
                 ? ppo_ompn_new(&t.o, ctx, &pc, ipaths[0])
             : pol == PPO_POLICY_COMPILE
                 ? ppo_compile_new(&t.c, ctx, &pc,
                                   (const char *const *)ipaths, n_ipaths)
                 : ppo_trainer_new(&t.p, ctx, &pc,
                                   (const char *const *)paths, n_paths);
    }
    if (rc == 0 && t.p != NULL) {
        /* acting on this process's cores (--threads; 0: all of them,
         * shared among MPI processes); the run is the same for any count */
        int n = common.threads;
        if (n == 0) {
            long cores = sysconf(_SC_NPROCESSORS_ONLN);
            n = (int)(cores > 0 ? cores : 1) / train_mpi_size();
        }
        rc = ppo_set_acting_threads(t.p, n > 0 ? n : 1);
    }
    /* the best evaluation return so far, kept in the checkpoints */
    struct gr_tensor *best_t = NULL;
    if (rc == 0) {
        best_t = gr_buffer_new(ctx, "train.best_eval", GR_F32, gr_shape1(2));
        rc = best_t == NULL ? GR_ENOMEM : 0;
    }
    if (rc < 0) {
        any_free(&t);
        gr_ctx_free(ctx);
        return cli_fail(cmd);
    }
    if ((needs || init != NULL) && n_each != CLI_N_EACH_UNSET) {
        /* the options bring their world; --n-each only states it */
        char asked[32];
        snprintf(asked, sizeof asked, "--n-each %d", n_each);
        rc = cli_check_file_world(cmd, init != NULL ? ipaths[0] : paths[0],
                                  any_world(&t), n_each, asked);
        if (rc != 0) {
            any_free(&t);
            gr_ctx_free(ctx);
            return rc;
        }
    }
    char missing[256];
    missing[0] = '\0';
    if (t.p != NULL) {
        ppo_untrained_subtasks(t.p, missing, sizeof missing);
    }
    if (missing[0] != '\0' && writer) {
        fprintf(stderr, "grove train ppo: warning: task %s has subtasks no "
                        "option was trained on (%s)\n",
                tk.name, missing);
    }
    char *text = any_config(&t);
    if (text == NULL) {
        any_free(&t);
        gr_ctx_free(ctx);
        return cli_fail(cmd);
    }
    struct train_run run;
    memset(&run, 0, sizeof run);
    run.last_saved_step = -1;
    spec = train_run_spec_default();
    spec.dir = common.out;
    spec.force = common.force;
    spec.resume = resume;
    spec.argc = argc;
    spec.argv = argv;
    spec.config_text = text;
    spec.check_config = 1;
    spec.columns = ppo_columns;
    spec.n_columns = N_COLUMNS;
    spec.what = "train ppo";
    spec.step_unit = "frame";
    if (writer) {
        rc = train_run_open(&run, &spec);
    } else {
        /* the other processes only read last.ckpt (--resume) */
        rc = gr_path_join(run.path_last, sizeof run.path_last, common.out,
                          "last.ckpt");
        if (rc == 0) {
            rc = gr_path_join(run.path_best, sizeof run.path_best,
                              common.out, "best.ckpt");
        }
    }
    if (train_allreduce_max_int(rc < 0)) {
        free(text);
        any_free(&t);
        gr_ctx_free(ctx);
        if (rc == 0) {
            train_run_close(&run);
            return CLI_EXIT_FAIL; /* process 0 says why */
        }
        return run.config_mismatch ? cli_usage_error(cmd, "%s", gr_last_error())
                                   : cli_fail(cmd);
    }
    float best[2] = {-INFINITY, 0.0f}; /* best eval return, its frames */
    if (resume) {
        rc = any_load(&t, run.path_last);
        if (rc == 0) {
            rc = gr_tensor_to_host(best_t, best);
        }
        if (rc == 0 && writer) {
            rc = train_metrics_resume(&run, any_global_step(&t));
        }
        if (rc == 0 && writer) {
            train_note_last_saved(&run, any_global_step(&t));
        }
    }
    char metrics[GR_PATH_MAX], png[GR_PATH_MAX], replay[GR_PATH_MAX];
    gr_path_join(metrics, sizeof metrics, common.out, "metrics.csv");
    gr_path_join(png, sizeof png, common.out, "curves.png");
    gr_path_join(replay, sizeof replay, common.out, "eval.replay");
    const struct craft_config *world = any_world(&t);
    const int T = world->max_steps, E = eval_episodes;
    struct ppo_trace tr = {0};
    tr.seed = malloc((size_t)E * sizeof *tr.seed);
    tr.length = malloc((size_t)E * sizeof *tr.length);
    tr.action = malloc((size_t)E * T);
    tr.option = malloc((size_t)E * T * sizeof *tr.option);
    tr.decided = malloc((size_t)E * T);
    if (rc == 0 && (!tr.seed || !tr.length || !tr.action || !tr.option ||
                    !tr.decided)) {
        rc = gr_error(GR_ENOMEM, "out of memory for the evaluation trace");
    }
    if (rc == 0 && !common.quiet && t.c != NULL) {
        fprintf(stderr, "PPO compile on %s (%s reward): a controller of "
                        "latents over %d compILE decoder(s), %d worlds x %d "
                        "decisions, on %s%s\n",
                tk.name, reward, ppo_compile_n_models(t.c), num_envs,
                num_steps, gr_device_name(gr_ctx_device(ctx)),
                resume ? " (resumed)" : "");
    } else if (rc == 0 && !common.quiet && t.o != NULL) {
        struct ompn_model *m = ppo_ompn_model(t.o);
        fprintf(stderr, "PPO ompn on %s (%s reward): OMPN of %d slots, d = "
                        "%d, fine-tuned whole from %s, %d worlds x %d "
                        "frames, on %s%s\n",
                tk.name, reward, m->cfg.n_slots, m->cfg.hidden, init,
                num_envs, num_steps, gr_device_name(gr_ctx_device(ctx)),
                resume ? " (resumed)" : "");
    } else if (rc == 0 && !common.quiet) {
        struct ocn_model *m = ppo_model(t.p);
        fprintf(stderr, "PPO %s on %s (%s reward): K = %d options, d = %d, "
                        "w = %d, tau = %g, %d worlds x %d decisions, on %s%s\n",
                policy, tk.name, reward, m->cfg.n_options, m->cfg.hidden,
                m->cfg.width, (double)m->cfg.tau, num_envs, num_steps,
                gr_device_name(gr_ctx_device(ctx)),
                resume ? " (resumed)" : "");
    }
    if (rc == 0 && !common.quiet && n_ranks > 1) {
        fprintf(stderr, "MPI: %d processes, %d or %d worlds each\n",
                n_ranks, num_envs / n_ranks,
                (num_envs + n_ranks - 1) / n_ranks);
    }
    struct gr_progress prog;
    gr_progress_start(&prog, "ppo", (uint64_t)total, "frames", common.quiet);
    gr_progress_update(&prog, (uint64_t)any_global_step(&t));
    double t0 = gr_now_seconds();
    int warned = 0, stopped = 0;
    struct ppo_stats st;
    struct ppo_eval ev = {0};
    memset(&st, 0, sizeof st);
    int64_t frames_since = 0;
    double since = gr_now_seconds();
    train_signals_install();
    while (rc == 0 && any_global_step(&t) < total) {
        rc = any_iteration(&t, &st);
        if (rc < 0) {
            break;
        }
        frames_since += st.frames;
        int last = any_global_step(&t) >= total;
        int do_eval = st.iteration % eval_every == 0 || last;
        double er = NAN, es = NAN;
        if (do_eval) {
            rc = any_evaluate(&t, E, PPO_EVAL_SEED, &ev, &tr);
            if (rc < 0) {
                break;
            }
            er = ev.mean_return;
            es = ev.success_rate;
        }
        double now = gr_now_seconds();
        double sps = (double)st.frames / (st.rollout_s + st.update_s);
        struct train_cell c[N_COLUMNS] = {
            TRAIN_NUM(st.global_step),        TRAIN_NUM(st.total_episodes),
            TRAIN_NUM(st.episodic_return),    TRAIN_NUM(st.episodic_length),
            TRAIN_NUM(st.success_rate),       TRAIN_NUM(er),
            TRAIN_NUM(es),                    TRAIN_NUM(st.policy_loss),
            TRAIN_NUM(st.value_loss),         TRAIN_NUM(st.entropy),
            TRAIN_NUM(st.approx_kl),          TRAIN_NUM(st.clipfrac),
            TRAIN_NUM(st.explained_variance), TRAIN_NUM(st.decisions_per_episode),
            TRAIN_NUM(st.mean_option_duration), TRAIN_NUM(st.learning_rate),
            TRAIN_NUM(sps),                   TRAIN_NUM(now - t0),
        };
        /* every process evaluates (the same weights: the same numbers,
         * so the best checkpoint is the same decision everywhere) and
         * saves (ppo_save gathers the worlds; process 0 writes) */
        rc = writer ? train_metrics_row(&run, c) : 0;
        if (rc == 0 && do_eval) {
            if (writer) {
                draw_curves(metrics, png, &warned);
                rc = write_eval_replay(replay, world, tk.name, policy,
                                       any_n_options(&t), E, &tr);
            }
            if (rc == 0 && er > best[0]) {
                best[0] = (float)er;
                best[1] = (float)st.global_step;
                rc = gr_tensor_set_host(best_t, best);
                if (rc == 0) {
                    rc = any_save(&t, run.path_best, 1);
                }
            }
            if (rc == 0) {
                rc = gr_tensor_set_host(best_t, best);
            }
            if (rc == 0) {
                rc = any_save(&t, run.path_last, 1);
                train_note_last_saved(&run, st.global_step);
            }
        }
        char extra[160];
        double rate = (double)frames_since / fmax(now - since, 1e-9);
        snprintf(extra, sizeof extra, "sps %.0f  return %.3f  success %.2f  "
                 "eval %.3f",
                 rate, st.episodic_return, st.success_rate, ev.mean_return);
        gr_progress_set_extra(&prog, extra);
        gr_progress_update(&prog, (uint64_t)st.global_step);
        /* every process stops at the same update: a failure of one (2)
         * or a signal (1) */
        int flag = train_allreduce_max_int(
            rc < 0 ? 2 : train_stop_requested() != 0 ? 1 : 0);
        if (flag == 2 && rc == 0) {
            rc = gr_error(GR_EINVAL, "another MPI process failed");
        }
        if (rc == 0 && flag == 1) {
            /* stop at this update boundary with last.ckpt written */
            if (!do_eval) {
                rc = gr_tensor_set_host(best_t, best);
                if (rc == 0) {
                    rc = any_save(&t, run.path_last, 1);
                    train_note_last_saved(&run, st.global_step);
                }
            }
            stopped = 1;
            break;
        }
    }
    train_signals_restore();
    gr_progress_finish(&prog);
    /* --total-timesteps 0 (issue 21): the initial model as best.ckpt and
     * last.ckpt, nothing evaluated, no metrics row */
    int initial_only = rc == 0 && total == 0 && !resume;
    if (initial_only) {
        rc = gr_tensor_set_host(best_t, best);
        if (rc == 0) {
            rc = any_save(&t, run.path_best, 1);
        }
        if (rc == 0) {
            rc = any_save(&t, run.path_last, 1);
        }
    }
    if (rc < 0) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", gr_last_error());
        if (run.last_saved_step >= 0) {
            gr_error(rc, "%s; stopped, last.ckpt keeps global_step %lld",
                     msg, (long long)run.last_saved_step);
        } else {
            gr_error(rc, "%s; stopped before any checkpoint", msg);
        }
    } else if (stopped && writer) {
        train_print_stopped(&run, any_global_step(&t));
    }
    int64_t steps = any_global_step(&t);
    free(tr.seed);
    free(tr.length);
    free(tr.action);
    free(tr.option);
    free(tr.decided);
    free(text);
    any_free(&t);
    gr_ctx_free(ctx);
    train_run_close(&run);
    if (rc < 0) {
        return cli_fail(cmd);
    }
    if (stopped) {
        return 128 + train_stop_requested();
    }
    if (!writer) {
        return CLI_EXIT_OK; /* process 0 reports */
    }
    if (initial_only) {
        printf("wrote the initial model to %s/best.ckpt and last.ckpt\n",
               common.out);
        return CLI_EXIT_OK;
    }
    double secs = gr_now_seconds() - t0;
    char dur[32];
    gr_format_duration(secs, dur, sizeof dur);
    printf("run %s: %lld frames, %s\n", common.out, (long long)steps, dur);
    printf("last evaluation: return %.3f, success %.2f, %.1f decisions per "
           "episode (%d episodes)\n",
           ev.mean_return, ev.success_rate, ev.decisions_per_episode, E);
    printf("best evaluation return %.3f at frame %.0f -> %s/best.ckpt\n",
           (double)best[0], (double)best[1], common.out);
    printf("wrote %s, %s, %s, %s/last.ckpt\n", metrics, png, replay,
           common.out);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_train_ppo = {
    "train ppo",
    "PPO fine-tuning of a new controller over frozen options.",
    "",
    "cleanrl's ppo.py names; the defaults are the thesis's (docs/models.md, "
    "PPO with frozen options). Writes into --out: command, config, "
    "metrics.csv (global_step, "
    "episodes, episodic_return, episodic_length, success_rate, eval_return, "
    "eval_success, policy_loss, value_loss, entropy, approx_kl, clipfrac, "
    "explained_variance, decisions_per_episode, mean_option_duration, "
    "learning_rate, sps, wall_s; agents/README.md), curves.png, eval.replay "
    "(the last evaluation, option in force per step), best.ckpt (best "
    "evaluation return) and last.ckpt (with the optimizer and trainer "
    "state; --resume continues bit for bit). The checkpoints are OCN "
    "checkpoints: craft run --agent ocn, watch and eval options load them "
    "(but --policy ompn's and compile's, the baselines' own kinds). "
    "--threads N also acts on N threads (ocn, moe, flat, oracle; 0: every "
    "core), each stepping a share of the worlds: the run is the same for "
    "any N. "
    "\n\nUnder mpirun -np P (a build with MPI: grove version says mpi: yes) "
    "each process acts its share of the --num-envs worlds, seeded as in one "
    "process, and the gradients are summed: the run equals one process's "
    "with the same flags, to float rounding; process 0 writes --out "
    "(docs/scaling.md). --num-envs must be at least P; last.ckpt holds "
    "every process's worlds, so --resume works with any P."
    "\n\nExamples (a short smoke run, the real one, and it on two processes):\n"
    "  grove train ppo --policy oracle --task DCA --total-timesteps 20000 "
    "\\\n      --out runs/ppo-smoke\n"
    "  grove train ppo --options runs/s1/best.ckpt --task DCA \\\n"
    "      --reward sparse --out runs/ppo-dca\n"
    "  mpirun -np 2 grove train ppo --options runs/s1/best.ckpt \\\n"
    "      --task DCA --reward sparse --out runs/ppo-dca-mpi",
    run_train_ppo,
};
