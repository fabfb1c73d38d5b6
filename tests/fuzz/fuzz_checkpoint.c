/* libFuzzer target for the checkpoint reader (kernels/checkpoint.c): any
 * bytes, as a file, read for its config (gr_checkpoint_read_config) and
 * loaded into a small context whose names, shapes and dtypes match the
 * seeds (a parameter pair, an i32 buffer and Adam's state), so that a
 * mutated seed reaches the tensor checks and the copy into the tensors.
 * The reader must never crash, leak or read out of bounds; its verdicts
 * are tested in tests/kernels/test_checkpoint.c.
 *
 * Seeds: tests/fuzz/seeds/checkpoint/ (make_checkpoint_seeds.c). Built
 * with -DGROVE_FUZZ=ON; the same function replays tests/fuzz/regressions/
 * checkpoint/ and the seeds in ctest kernels_fuzz_checkpoint. */
#include "tests/fuzz/fuzz_util.h"

#include "kernels/checkpoint.h"
#include "kernels/optim.h"
#include "kernels/tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
struct gr_ctx *fuzz_checkpoint_model(void);

/* The context the seeds were written from (make_checkpoint_seeds.c). */
struct gr_ctx *fuzz_checkpoint_model(void)
{
    static struct gr_ctx *ctx;
    static struct gr_optim *opt;
    if (ctx != NULL) {
        return ctx;
    }
    struct gr_ctx_config cfg = gr_ctx_config_default();
    cfg.device = GR_DEVICE_CPU;
    cfg.step_chunk_bytes = 1 << 16;
    if (gr_ctx_new(&ctx, &cfg) < 0) {
        abort();
    }
    gr_param_new(ctx, "fc.weight", gr_shape2(3, 4));
    gr_param_new(ctx, "fc.bias", gr_shape1(3));
    gr_buffer_new(ctx, "step", GR_I32, gr_shape1(2));
    struct gr_optim_config oc = gr_optim_config_default(GR_OPTIM_ADAM);
    if (gr_optim_new(&opt, ctx, "adam", &oc) < 0) {
        abort();
    }
    return ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_accepted = 0;
    const char *path = fuzz_write_file("fuzz.ckpt", data, size);
    if (path == NULL) {
        return 0;
    }
    char *config = NULL;
    if (gr_checkpoint_read_config(path, &config) == 0) {
        free(config);
        config = NULL;
    }
    struct gr_ctx *ctx = fuzz_checkpoint_model();
    if (gr_checkpoint_load(ctx, path, GR_CKPT_PARAMS, &config) == 0) {
        free(config);
        fuzz_input_accepted = 1;
    }
    gr_checkpoint_load(ctx, path, GR_CKPT_ALL, NULL);
    return 0;
}
