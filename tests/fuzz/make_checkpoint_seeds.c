/* Writes the checkpoint seeds of fuzz_checkpoint.c with grove's own
 * writer, for the model that target loads into:
 *   fuzz_make_checkpoint_seeds DIR   ->  DIR/all.ckpt, DIR/params.ckpt
 * (tests/fuzz/seeds/checkpoint/ holds their output; rerun after a change
 * of the checkpoint format). */
#include <stdio.h>

#include "core/error.h"
#include "core/files.h"
#include "kernels/checkpoint.h"
#include "kernels/tensor.h"

struct gr_ctx *fuzz_checkpoint_model(void);

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_make_checkpoint_seeds DIR\n");
        return 2;
    }
    struct gr_ctx *ctx = fuzz_checkpoint_model();
    for (int i = 0; i < gr_ctx_n_named(ctx); i++) {
        struct gr_tensor *t = gr_ctx_named(ctx, i);
        if (t->dtype == GR_F32) {
            gr_tensor_rand_uniform(t, -1, 1, gr_rng_make(7, (uint64_t)i));
        }
    }
    char path[4096];
    gr_path_join(path, sizeof path, argv[1], "all.ckpt");
    if (gr_checkpoint_save(ctx, path, "fuzz model\nkind test\n", GR_CKPT_ALL,
                           1) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        return 1;
    }
    gr_path_join(path, sizeof path, argv[1], "params.ckpt");
    if (gr_checkpoint_save(ctx, path, "", GR_CKPT_PARAMS, 1) < 0) {
        fprintf(stderr, "%s\n", gr_last_error());
        return 1;
    }
    return 0;
}
