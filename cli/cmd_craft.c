/* grove craft run: run a random or expert agent in Craft and summarise.
 * grove bench craft: the Craft environment's speed (bench/craft).
 *
 * Episodes: for the i-th task of --tasks, episode n (0 <= n < --episodes)
 * starts from craft_episode_seed(S, i, n) (craft.md §9: world j = the
 * task's position in the list), under the default config adjusted to the
 * task (craft_config_for_task). The random agent draws its actions from the
 * episode's own Philox stream at counter offset 2^32, far past the words the
 * map generation uses, so results do not depend on --threads. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/craft/bench_craft.h"
#include "cli/build_info.h"
#include "cli/cmd_craft_ocn.h"
#include "cli/commands.h"
#include "cli/craft_common.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/random.h"
#include "envs/craft.h"
#include "envs/expert.h"
#include "replays/replay.h"

#define MAX_TASKS 64

enum agent_kind { AGENT_RANDOM, AGENT_EXPERT };

/* Per-task totals; skipped = maps the expert could not finish. */
struct task_stats {
    uint64_t episodes, successes, skipped, length_sum, steps;
    double return_sum;
};

struct run_plan {
    enum agent_kind agent;
    int n_tasks;
    struct craft_task tasks[MAX_TASKS];
    struct craft_config configs[MAX_TASKS];
    uint64_t episodes; /* per task */
    uint64_t seed;
    int print;
    atomic_uint_fast64_t done; /* episodes finished, all threads */
    struct replay_writer *rec; /* --record: every episode (one thread) */
    int rec_failed;            /* a write failed: stop, report */
};

struct worker {
    struct run_plan *plan;
    uint64_t begin, end; /* flattened (task, episode) range */
    struct task_stats stats[MAX_TASKS];
    struct gr_progress *progress; /* worker 0 only */
};

static void print_state(const struct craft_world *w, uint64_t episode,
                        int action, const struct craft_step *st)
{
    char text[CRAFT_TEXT_CAP];
    if (action < 0) {
        printf("task %s episode %llu seed %llu: start\n", w->task.name,
               (unsigned long long)episode, (unsigned long long)w->seed);
    } else {
        printf("task %s episode %llu t %d: %s, reward %g, k %d/%d%s%s\n",
               w->task.name, (unsigned long long)episode, w->t,
               craft_action_name(action), st->reward, w->k, w->task.n,
               st->terminated ? ", terminated" : "",
               st->truncated ? ", truncated" : "");
    }
    if (craft_world_render_text(w, text, sizeof text) > 0) {
        fputs(text, stdout);
    }
}

/* One episode; returns 1 when it counts, 0 when the expert skipped it. */
static int run_episode(const struct run_plan *plan, int ti, uint64_t n,
                       float *obs, struct task_stats *ts)
{
    struct craft_world w;
    uint64_t seed = craft_episode_seed(plan->seed, (uint64_t)ti, n);
    craft_world_reset(&w, &plan->configs[ti], seed, &plan->tasks[ti]);
    struct gr_philox_stream actions = gr_philox_stream_init(seed, 1ull << 32);
    struct craft_step st = {0, 0, 0, 0, 0};
    if (plan->print) {
        print_state(&w, n, -1, &st);
    }
    if (plan->rec != NULL) {
        /* --record: a map the expert cannot finish is skipped before its
         * episode starts in the replay (same counts as below) */
        static uint8_t acts[CRAFT_MAX_STEPS_LIMIT];
        int len = 0;
        if (plan->agent == AGENT_EXPERT &&
            craft_expert_rollout(&w, acts, (int)sizeof acts, &len) !=
                CRAFT_EXPERT_OK) {
            ts->skipped++;
            ts->steps += (uint64_t)len;
            return 0;
        }
        if (replay_writer_episode_start(plan->rec, &w) < 0) {
            ((struct run_plan *)plan)->rec_failed = 1;
            return 0;
        }
    }
    craft_world_observe(&w, obs);
    while (!craft_world_done(&w)) {
        int a;
        if (plan->agent == AGENT_RANDOM) {
            a = (int)(((uint64_t)gr_philox_next_u32(&actions) *
                       CRAFT_N_ACTIONS) >> 32);
        } else if (craft_expert_act(&w, &a, NULL) != CRAFT_EXPERT_OK) {
            ts->skipped++;
            ts->steps += (uint64_t)w.t;
            if (plan->print) {
                printf("task %s episode %llu: the expert cannot reach its "
                       "target (subtask %d); map skipped\n",
                       w.task.name, (unsigned long long)n, w.k);
            }
            return 0;
        }
        if (plan->rec == NULL) {
            craft_world_step(&w, a, &st);
        } else if (replay_record_step(plan->rec, &w, a, NULL, &st) < 0) {
            ((struct run_plan *)plan)->rec_failed = 1;
            return 0;
        }
        craft_world_observe(&w, obs); /* what the agent would read next */
        if (plan->print) {
            print_state(&w, n, a, &st);
        }
    }
    ts->episodes++;
    ts->successes += (uint64_t)st.terminated;
    ts->length_sum += (uint64_t)w.t;
    ts->steps += (uint64_t)w.t;
    ts->return_sum += w.episode_return;
    return 1;
}

static void *worker_main(void *p)
{
    struct worker *wk = p;
    struct run_plan *plan = wk->plan;
    float obs[CRAFT_OBS_SIZE];
    uint64_t unreported = 0;
    for (uint64_t i = wk->begin; i < wk->end && !plan->rec_failed; i++) {
        int ti = (int)(i / plan->episodes);
        uint64_t n = i % plan->episodes;
        run_episode(plan, ti, n, obs, &wk->stats[ti]);
        if (++unreported == 256 || i + 1 == wk->end) {
            uint64_t d = atomic_fetch_add(&plan->done, unreported) + unreported;
            unreported = 0;
            if (wk->progress != NULL) {
                gr_progress_update(wk->progress, d);
            }
        }
    }
    return NULL;
}

static int run_craft_run(const struct cli_command *cmd, int argc, char **argv)
{
    /* --agent ocn: the OCN agent and its own options live in
     * cli/cmd_craft_ocn.c (issue 8); this is the whole hook. */
    if (cli_craft_run_wants_ocn(argc, argv)) {
        return cli_craft_run_ocn(cmd, argc, argv);
    }
    const char *agent = "random";
    const char *tasks_text = "AC,CD";
    uint64_t episodes = 100;
    int sparse = 0, print = 0, n_each = CLI_N_EACH_UNSET;
    const char *record = NULL, *checkpoint = NULL;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_STRING("agent", "random|expert|ocn", "random",
                   "who acts: uniform random actions, the scripted expert "
                   "(docs/craft.md), or a trained model (ocn: see below)",
                   &agent),
        /* never parsed here: --checkpoint sends the command line to the
         * ocn agent's table (cli/cmd_craft_ocn.c); listed for --help */
        CLI_STRING("checkpoint", "FILE",
                   NULL,
                   "--agent ocn: the trained model (grove train bc); implies "
                   "--agent ocn",
                   &checkpoint),
        CLI_STRING("tasks", "LIST", "AC,CD",
                   "comma-separated tasks: OCN letters (A wood, B gold, "
                   "C iron, D grass) or OMPN names such as make-bed",
                   &tasks_text),
        CLI_U64("episodes", "N", "100", "episodes per task", &episodes),
        CLI_FLAG("sparse", "sparse reward (1 only when the task is done)",
                 &sparse),
        CLI_INT("n-each", "N", NULL,
                "copies of each primitive on a map (default: 4 for S1/S2 "
                "task sets, i.e. OCN letters only (docs/ocn/ppo.md), else 1; "
                "docs/craft.md); with --checkpoint, the checkpoint's world "
                "(a different N is refused)",
                &n_each),
        CLI_FLAG("print", "draw the grid as text after every step (one "
                          "thread)",
                 &print),
        CLI_STRING("record", "FILE", NULL,
                   "record every episode as a replay (one thread; refused "
                   "when FILE exists, unless --force)",
                   &record),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts,
                       CLI_COMMON_SEED | CLI_COMMON_THREADS |
                           CLI_COMMON_QUIET | CLI_COMMON_FORCE,
                       0, 0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    static struct run_plan plan;
    memset(&plan, 0, sizeof plan);
    if (strcmp(agent, "random") == 0) {
        plan.agent = AGENT_RANDOM;
    } else if (strcmp(agent, "expert") == 0) {
        plan.agent = AGENT_EXPERT;
    } else {
        return cli_usage_error(cmd, "--agent '%s' is not random or expert",
                               agent);
    }
    if (episodes < 1 || episodes > (1ull << 40)) {
        return cli_usage_error(cmd, "--episodes %llu is outside 1..2^40",
                               (unsigned long long)episodes);
    }
    char list[1024];
    if (strlen(tasks_text) >= sizeof list) {
        return cli_usage_error(cmd, "--tasks is longer than %zu characters",
                               sizeof list - 1);
    }
    snprintf(list, sizeof list, "%s", tasks_text);
    char *items[MAX_TASKS];
    int n_tasks = cli_split_list(list, items, MAX_TASKS);
    if (n_tasks < 1) {
        return cli_usage_error(cmd,
                               "--tasks '%s' is not a comma-separated list of "
                               "1..%d tasks",
                               tasks_text, MAX_TASKS);
    }
    struct craft_config base;
    craft_config_default(&base);
    if (sparse) {
        base.reward = CRAFT_REWARD_SPARSE;
    }
    for (int i = 0; i < n_tasks; i++) {
        if (craft_task_parse(items[i], &plan.tasks[i]) < 0) {
            return cli_usage_error(cmd, "--tasks: %s", gr_last_error());
        }
    }
    /* S1/S2 task sets default to their four-copy world (ocn.md §6.1) */
    rc = cli_world_n_each(cmd,
                          n_each != CLI_N_EACH_UNSET
                              ? n_each
                              : cli_default_n_each(plan.tasks, n_tasks),
                          &base);
    if (rc != 0) {
        return rc;
    }
    for (int i = 0; i < n_tasks; i++) {
        craft_config_for_task(&base, &plan.tasks[i], &plan.configs[i]);
    }
    plan.n_tasks = n_tasks;
    plan.episodes = episodes;
    plan.seed = common.seed;
    plan.print = print;
    atomic_init(&plan.done, 0);

    if (record != NULL) {
        for (int i = 1; i < n_tasks; i++) {
            if (memcmp(&plan.configs[i], &plan.configs[0],
                       sizeof plan.configs[0]) != 0) {
                return cli_usage_error(cmd, "--record: '%s' needs another "
                                       "Craft config than '%s' (a replay has "
                                       "one); record them separately",
                                       plan.tasks[i].name, plan.tasks[0].name);
            }
        }
        struct replay_header h;
        replay_header_init(&h, &plan.configs[0], agent);
        snprintf(h.grove, sizeof h.grove, "%s (%s)", GROVE_VERSION,
                 GROVE_GIT_DESCRIBE);
        if (replay_writer_open(&plan.rec, record, common.force, &h) < 0) {
            return cli_fail(cmd);
        }
    }

    uint64_t total = episodes * (uint64_t)n_tasks;
    long threads = common.threads > 0 ? common.threads
                                      : sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1 || print || record != NULL) {
        threads = 1;
    }
    if ((uint64_t)threads > total) {
        threads = (long)total;
    }
    if (threads > 256) {
        threads = 256;
    }
    struct worker *workers = calloc((size_t)threads, sizeof *workers);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    if (workers == NULL || tids == NULL) {
        free(workers);
        free(tids);
        gr_error(GR_ENOMEM, "out of memory for %ld threads", threads);
        return cli_fail(cmd);
    }
    struct gr_progress progress;
    gr_progress_start(&progress, "craft run", total, "episodes",
                      common.quiet || print);
    double t0 = gr_now_seconds();
    for (long i = 0; i < threads; i++) {
        workers[i].plan = &plan;
        workers[i].begin = total * (uint64_t)i / (uint64_t)threads;
        workers[i].end = total * (uint64_t)(i + 1) / (uint64_t)threads;
        workers[i].progress = i == 0 ? &progress : NULL;
    }
    long started = 1;
    for (; started < threads; started++) {
        if (pthread_create(&tids[started], NULL, worker_main,
                           &workers[started]) != 0) {
            break;
        }
    }
    if (started < threads) {
        /* run the ranges that found no thread here */
        for (long i = started; i < threads; i++) {
            worker_main(&workers[i]);
        }
    }
    worker_main(&workers[0]);
    for (long i = 1; i < started; i++) {
        pthread_join(tids[i], NULL);
    }
    double secs = gr_now_seconds() - t0;
    gr_progress_finish(&progress);
    if (plan.rec != NULL) {
        if (plan.rec_failed) {
            replay_writer_abort(plan.rec);
            free(workers);
            free(tids);
            return cli_fail(cmd);
        }
        if (replay_writer_close(plan.rec) < 0) {
            free(workers);
            free(tids);
            return cli_fail(cmd);
        }
    }

    printf("%-12s %9s %8s %12s %8s %12s\n", "task", "episodes", "skipped",
           "mean_return", "success", "mean_length");
    struct task_stats all;
    memset(&all, 0, sizeof all);
    for (int ti = 0; ti < n_tasks; ti++) {
        struct task_stats s;
        memset(&s, 0, sizeof s);
        for (long i = 0; i < threads; i++) {
            const struct task_stats *w = &workers[i].stats[ti];
            s.episodes += w->episodes;
            s.successes += w->successes;
            s.skipped += w->skipped;
            s.length_sum += w->length_sum;
            s.steps += w->steps;
            s.return_sum += w->return_sum;
        }
        double e = (double)s.episodes;
        if (s.episodes > 0) {
            printf("%-12s %9llu %8llu %12.4f %7.2f%% %12.2f\n",
                   plan.tasks[ti].name, (unsigned long long)s.episodes,
                   (unsigned long long)s.skipped, s.return_sum / e,
                   100.0 * (double)s.successes / e, (double)s.length_sum / e);
        } else {
            printf("%-12s %9llu %8llu %12s %8s %12s\n", plan.tasks[ti].name,
                   0ull, (unsigned long long)s.skipped, "-", "-", "-");
        }
        all.episodes += s.episodes;
        all.skipped += s.skipped;
        all.steps += s.steps;
    }
    printf("total: %llu episodes, %llu steps in %.3f s: %.2f M steps/s "
           "(%ld thread%s)%s\n",
           (unsigned long long)all.episodes, (unsigned long long)all.steps,
           secs, secs > 0 ? (double)all.steps / secs / 1e6 : 0.0, threads,
           threads == 1 ? "" : "s",
           all.skipped ? ", maps skipped by the expert are not counted in "
                         "the means"
                       : "");
    if (record != NULL) {
        printf("recorded %s (agent %s; check it with grove replay "
               "verify)\n", record, agent);
    }
    free(workers);
    free(tids);
    return CLI_EXIT_OK;
}

const struct cli_command cmd_craft_run = {
    "craft run",
    "Run a random or expert agent in Craft and summarise the episodes.",
    "",
    "Prints one line per task (episodes, maps skipped by the expert, mean "
    "return, success rate, mean length) and a total with steps per second. "
    "Episode n of the i-th task uses seed mix64(mix64(S ^ i) ^ n) "
    "(docs/craft.md); results do not depend on --threads.\n\n"
    "--agent ocn (or --checkpoint FILE alone) plays a model of grove train "
    "bc: --checkpoint FILE is required, --tasks defaults to the "
    "checkpoint's training tasks, --device cpu|cuda|auto picks where it "
    "runs, --record also stores the option in control and the controller's "
    "probabilities, and the world comes from the checkpoint (--n-each N "
    "other than the checkpoint's is refused, exit 2). All of "
    "its options: grove craft run --agent ocn --help.\n\n"
    "Example:\n"
    "  grove craft run --agent expert --tasks AC --episodes 10",
    run_craft_run,
};

static int run_bench_craft(const struct cli_command *cmd, int argc,
                           char **argv)
{
    int quick = 0, runs = 5, no_process = 0;
    struct cli_common common;
    int first = 0;
    const struct cli_option opts[] = {
        CLI_FLAG("quick", "tiny workloads, for a smoke run", &quick),
        CLI_INT("runs", "K", "5", "timed runs per case; the median is shown",
                &runs),
        CLI_FLAG("no-process",
                 "skip the whole-process row (grove craft run ...)",
                 &no_process),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_THREADS | CLI_COMMON_QUIET, 0, 0,
                       argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    if (runs < 1 || runs > 64) {
        return cli_usage_error(cmd, "--runs %d is outside 1..64", runs);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    struct bench_craft_options o;
    memset(&o, 0, sizeof o);
    o.quick = quick;
    o.runs = runs;
    o.threads = common.threads > 0 ? common.threads
                                   : (int)(cores >= 2 ? cores : 2);
    o.grove_path = no_process ? NULL : "/proc/self/exe";
    o.build = GROVE_BUILD_TYPE ", " GROVE_C_COMPILER ", " GROVE_GIT_DESCRIBE;
    o.quiet = common.quiet;
    if (bench_craft_run(&o, stdout) < 0) {
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_bench_craft = {
    "bench craft",
    "Speed of the Craft environment: steps/s, observation limit, expert.",
    "",
    "Prints a Markdown table: case | grove | baseline | ratio | target.\n\n"
    "Example:\n"
    "  grove bench craft --quick",
    run_bench_craft,
};
