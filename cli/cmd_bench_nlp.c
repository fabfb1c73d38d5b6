/* grove bench nlp: ON-LSTM LM training tokens/s against the PyTorch
 * reference, measured in the same run (bench/nlp/bench_nlp.h). */
#include <stdio.h>
#include <string.h>

#include "bench/bench_util.h"
#include "bench/nlp/bench_mlm.h"
#include "bench/nlp/bench_nlp.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/lm_common.h"
#include "core/error.h"

static int run_bench_nlp(const struct cli_command *cmd, int argc, char **argv)
{
    struct cli_common common;
    int first = 0;
    struct bench_nlp_options o;
    bench_nlp_options_default(&o);
    int no_baseline = 0;
    const char *model = NULL;
    int nemb = 0, nlayers = 0, rows = 0, nheads = 0, head_size = 0;
    int parser_layers = 0;
    const struct cli_option opts[] = {
        CLI_INT("nemb", "N", "0", "--model: d (0: the scaled size's 256)",
                &nemb),
        CLI_INT("nlayers", "N", "0", "--model: layers (0: 4)", &nlayers),
        CLI_INT("rows", "N", "0", "--model: sentences per batch (0: 32)",
                &rows),
        CLI_INT("nheads", "N", "0", "--model: heads / channels (0: 8)",
                &nheads),
        CLI_INT("head-size", "N", "0", "--model udgn: channel size (0: 64)",
                &head_size),
        CLI_INT("parser-layers", "N", "0", "--model: parser layers (0: 2)",
                &parser_layers),
        CLI_STRING("cases", "LIST", "published,batch1,small",
                   "cases to run, comma-separated", &o.cases),
        CLI_STRING("models", "LIST", "onlstm",
                   "LM kinds to time, comma-separated (onlstm,lstm,ft,cft,"
                   "fft); beside onlstm each row gives its epoch time as a "
                   "fraction of grove's ON-LSTM and of the PyTorch ON-LSTM "
                   "reference",
                   &o.models),
        CLI_STRING("model", "NAME", NULL,
                   "instead of the LMs: transformer (the encoder classifier "
                   "against torch.nn.TransformerEncoderLayer, cases "
                   "classifier,tiny), or udgn / structformer (MLM training "
                   "against bench/nlp/udgn_ref.py, --windows timed batches)",
                   &model),
        CLI_FLAG("same-cell",
                 "the baseline of each --models row is the PyTorch version "
                 "of its own cell (onlstm, ft, fft), not the ON-LSTM",
                 &o.same_cell),
        CLI_INT("windows", "N", "3", "timed windows per side (median)",
                &o.windows),
        CLI_INT("warmup", "N", "1", "untimed windows first", &o.warmup),
        CLI_INT("rounds", "N", "3",
                "alternations grove, baseline per case (median, spread)",
                &o.rounds),
        CLI_FLAG("quick", "tiny sizes (a CI smoke run, not the issue's "
                 "cases)", &o.quick),
        CLI_FLAG("no-baseline", "do not run the PyTorch baseline",
                 &no_baseline),
        CLI_STRING("python", "PATH", "/usr/bin/python3",
                   "interpreter with torch for the reference", &o.python),
        CLI_STRING("script", "FILE", NULL,
                   "the reference script (default: bench/nlp/onlstm_ref.py "
                   "of the source tree)",
                   &o.script),
        CLI_END,
    };
    int rc = cli_parse(cmd, opts, CLI_COMMON_DEVICE | CLI_COMMON_THREADS, 0,
                       0, argc, argv, &common, &first);
    if (rc != CLI_CONTINUE) {
        return rc;
    }
    struct gr_ctx_config cc;
    if ((rc = lm_cli_ctx_config(cmd, &common, &cc)) != CLI_CONTINUE) {
        return rc;
    }
    if (o.windows < 1 || o.warmup < 0) {
        return cli_usage_error(cmd, "--windows must be 1 or more, --warmup 0 "
                               "or more");
    }
    if (o.rounds < 1 || o.rounds > BENCH_MAX_ROUNDS) {
        return cli_usage_error(cmd, "--rounds must be in [1, %d]",
                               BENCH_MAX_ROUNDS);
    }
    int sized = nemb || nlayers || rows || nheads || head_size ||
                parser_layers;
    int mlm = model != NULL && (strcmp(model, "udgn") == 0 ||
                                strcmp(model, "structformer") == 0);
    if (model != NULL && !mlm && strcmp(model, "transformer") != 0) {
        return cli_usage_error(cmd, "--model '%s': transformer, udgn or "
                               "structformer (the LMs go through --models)",
                               model);
    }
    if (!mlm && sized) {
        return cli_usage_error(cmd, "--nemb, --nlayers, --rows, --nheads, "
                               "--head-size and --parser-layers size the "
                               "--model benchmark (udgn, structformer)");
    }
    if (nemb < 0 || nlayers < 0 || rows < 0 || nheads < 0 || head_size < 0 ||
        parser_layers < 0) {
        return cli_usage_error(cmd, "--nemb, --nlayers, --rows, --nheads, "
                               "--head-size, --parser-layers must be >= 1 "
                               "(0: the default)");
    }
    if (mlm) {
        struct bench_mlm_options m;
        bench_mlm_options_default(&m);
        m.model = model;
        m.batches = o.windows;
        m.warmup = o.warmup;
        m.rounds = o.rounds;
        m.quick = o.quick;
        m.nemb = nemb ? nemb : m.nemb;
        m.nlayers = nlayers ? nlayers : m.nlayers;
        m.rows = rows ? rows : m.rows;
        m.nheads = nheads ? nheads : m.nheads;
        m.head_size = head_size ? head_size : m.head_size;
        m.parser_layers = parser_layers ? parser_layers : m.parser_layers;
        m.python = o.python;
        m.script = o.script;
        m.device = cc.device == GR_DEVICE_AUTO ? GR_DEVICE_CPU : cc.device;
        m.threads = common.threads;
        m.baseline = !no_baseline;
        m.build = GROVE_BUILD_TYPE;
        m.commit = GROVE_GIT_DESCRIBE;
        int bad = bench_mlm_run(&m, stdout);
        if (bad == GR_EINVAL) {
            return cli_usage_error(cmd, "%s", gr_last_error());
        }
        return bad < 0 ? cli_fail(cmd) : CLI_EXIT_OK;
    }
    if (bench_nlp_models_check(&o) < 0) {
        return cli_usage_error(cmd, "%s", gr_last_error());
    }
    o.device = cc.device == GR_DEVICE_AUTO ? GR_DEVICE_CPU : cc.device;
    o.threads = common.threads;
    o.baseline = !no_baseline;
    o.build = GROVE_BUILD_TYPE;
    o.commit = GROVE_GIT_DESCRIBE;
    if (model != NULL) {
        /* the LM case names are not the Transformer's: the default list
         * means both of its cases */
        if (o.cases != NULL && strcmp(o.cases, "published,batch1,small") == 0) {
            o.cases = NULL;
        }
        if (bench_nlp_transformer_run(&o, stdout) < 0) {
            return cli_fail(cmd);
        }
        return CLI_EXIT_OK;
    }
    if (bench_nlp_run(&o, stdout) < 0) {
        return cli_fail(cmd);
    }
    return CLI_EXIT_OK;
}

const struct cli_command cmd_bench_nlp = {
    "bench nlp",
    "Benchmark ON-LSTM LM training (tokens/s) against the PyTorch reference "
    "in the same run.",
    "",
    "Cases: published (3 layers 400/1150/400, chunk 10, batch 20, BPTT 70), "
    "batch1, small (hidden 256).\nThe two sides alternate (grove, PyTorch, "
    "grove, ...) --rounds times per case.\nPrints grove's BLAS, a Markdown "
    "table case | grove | baseline | ratio | spread (ratio = grove / "
    "PyTorch, the median of the rounds' ratios; spread = their range), and "
    "the BLAS and threads the PyTorch side ran on.\n\n"
    "Examples:\n"
    "  grove bench nlp --quick --threads 1\n"
    "  grove bench nlp --models onlstm,ft,cft,fft --cases small\n"
    "  grove bench nlp --model transformer --threads 1\n"
    "  grove bench nlp --model udgn --threads 1",
    run_bench_nlp,
};
