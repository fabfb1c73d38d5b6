/* kernels/checkpoint.h — saving and loading a context's named tensors.
 *
 * A checkpoint is one MessagePack map:
 *   { "format": "grove-checkpoint", "version": 1,
 *     "config": <str: the model's config text, the caller's>,
 *     "config_crc32": <u32>,
 *     "tensors": { <name>: { "kind": "param"|"buffer"|"optim",
 *                            "dtype": "f32"|"i32", "shape": [d0, ...],
 *                            "data": <bin: little-endian elements>,
 *                            "crc32": <u32 of the data bytes> }, ... } }
 * (CRC-32 of core/hash.h). It is written atomically (core/files.h: a
 * temporary file renamed over the path), and an existing file is refused
 * unless `force`.
 *
 * Loading restores into the tensors of an existing context: build the
 * model first (from the config, gr_checkpoint_read_config), then load. The
 * load is all-or-nothing: the whole file is read and checked (format,
 * version, every CRC, the set of names of the selected kinds equal to the
 * context's, every shape and dtype) before any tensor is written. Errors
 * are GR_EFORMAT (or GR_EIO / GR_EINVAL) with a message naming the file and
 * the tensor: "model.ckpt: tensor 'fc.weight': shape [4, 3] in the file,
 * [4, 5] in the model", "...: truncated at byte 812 inside tensor
 * 'fc.bias'", "...: tensor 'x': CRC mismatch (stored 0x..., computed
 * 0x...)", "...: the model has tensor 'y' that the file lacks".
 *
 * Memory: buffers are malloc'd and freed inside each call; *config_out is
 * malloc'd (caller frees). Thread safety: one thread per context.
 *
 *   if (gr_checkpoint_save(ctx, "runs/a/last.ckpt", cfg_text,
 *                          GR_CKPT_ALL, force) < 0) return -1;
 *   char *cfg = NULL;
 *   gr_checkpoint_read_config("runs/a/last.ckpt", &cfg);  // build model
 *   gr_checkpoint_load(ctx, "runs/a/last.ckpt", GR_CKPT_PARAMS, NULL);
 */
#ifndef GROVE_KERNELS_CHECKPOINT_H
#define GROVE_KERNELS_CHECKPOINT_H

#include "kernels/tensor.h"

/* Which kinds of named tensors a call covers. */
enum {
    GR_CKPT_PARAMS = 1,
    GR_CKPT_BUFFERS = 2,
    GR_CKPT_OPTIM = 4,
    GR_CKPT_ALL = 7,
};

/* Writes the named tensors of the kinds in `what` and `config` (NULL is
 * written as "") to `path`. */
int gr_checkpoint_save(struct gr_ctx *ctx, const char *path,
                       const char *config, unsigned what, int force);

/* Reads `path` into the context's tensors of the kinds in `what` (the
 * file may hold other kinds too; those are ignored). When config_out is
 * not NULL it receives the config text (malloc'd). */
int gr_checkpoint_load(struct gr_ctx *ctx, const char *path, unsigned what,
                       char **config_out);

/* Reads only the config text (malloc'd into *config_out), checking the
 * format, version and config CRC. */
int gr_checkpoint_read_config(const char *path, char **config_out);

#endif
