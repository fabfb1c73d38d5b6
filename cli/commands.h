/* cli/commands.h — every subcommand's table entry, defined in cli/cmd_*.c. */
#ifndef GROVE_CLI_COMMANDS_H
#define GROVE_CLI_COMMANDS_H

#include "cli/cli.h"

extern const struct cli_command cmd_version;
extern const struct cli_command cmd_craft_run;
extern const struct cli_command cmd_craft_demos;
extern const struct cli_command cmd_craft_play;
extern const struct cli_command cmd_replay_info;
extern const struct cli_command cmd_replay_verify;
extern const struct cli_command cmd_replay_dump;
extern const struct cli_command cmd_replay_export;
extern const struct cli_command cmd_replay_play;
extern const struct cli_command cmd_plot;
extern const struct cli_command cmd_train_bc;
extern const struct cli_command cmd_train_ppo;
extern const struct cli_command cmd_eval_options;
extern const struct cli_command cmd_watch;
extern const struct cli_command cmd_nlp_tasks;
extern const struct cli_command cmd_nlp_corpus;
extern const struct cli_command cmd_nlp_lm_train;
extern const struct cli_command cmd_nlp_lm_eval;
extern const struct cli_command cmd_nlp_parse;
extern const struct cli_command cmd_nlp_syneval;
extern const struct cli_command cmd_nlp_data;
extern const struct cli_command cmd_nlp_classify_train;
extern const struct cli_command cmd_nlp_classify_eval;
extern const struct cli_command cmd_nlp_classify_trees;
extern const struct cli_command cmd_nlp_seq2seq_train;
extern const struct cli_command cmd_nlp_seq2seq_translate;
extern const struct cli_command cmd_nlp_seq2seq_eval;
extern const struct cli_command cmd_nlp_listops_generate;
extern const struct cli_command cmd_nlp_logic_generate;
extern const struct cli_command cmd_nlp_deps_convert;
extern const struct cli_command cmd_nlp_deps_eval;
extern const struct cli_command cmd_nlp_mlm_train;
extern const struct cli_command cmd_nlp_mlm_eval;
extern const struct cli_command cmd_nlp_depparse;
extern const struct cli_command cmd_bench_craft;
extern const struct cli_command cmd_bench_kernels;
extern const struct cli_command cmd_bench_ocn;
extern const struct cli_command cmd_bench_nlp;
extern const struct cli_command cmd_bench_om;
extern const struct cli_command cmd_bench_ppo;
extern const struct cli_command cmd_bench_trees;

#endif
