/* nlp/models/om.h — Ordered Memory (Shen et al. 2019; spec
 * ../shared/spec/ordered_memory.md): a sentence encoder that keeps a soft
 * stack of sub-tree representations in N ordered slots, with the embedding
 * in front of it, its readout, and the trees its pointers induce.
 *
 * Model (spec §2-§6): embedding E [V, D_in] (logic: U(-0.1, 0.1); ListOps:
 * N(0, 1) with a zero padding row), input dropout (dropouti, element-wise),
 * then per direction one OM over the time-major batch: the step of eqs.
 * 3.5.1-3.5.13 composed of kernel ops (so it runs on CPU and CUDA and the
 * tape differentiates it), the reference padding rule of §4.2, and the
 * readout of §5: y at the last real position of each sequence (logic,
 * right padding) or y_{T-1} (`output_last`, ListOps, left padding). With
 * `bidirection` a second OM with its own parameters reads the reversed
 * batch and its y_{T-1} is concatenated (output 2D). The task heads are in
 * nlp/models/heads.h.
 *
 * How it computes a step (the reference's semantics, exact): the input
 * projection xt and the query LN_q(W_q·drop(xt)) of every step are one
 * product each over all T·B rows; keys over the N·B candidate slots are one
 * product per step; the pointer p_t is the masked softmax of §4 (mask from
 * the previous cumulative pointer with the 1e-5 cut and the 1e-12 floor;
 * gradients flow through the mask into p_{t-1} as in the reference); the
 * slot recursion calls the gated cell only on the rows whose cp_t[i] > 0
 * (rows gathered, results scattered back): a row with cp_t[i] = 0 takes xt
 * whatever the cell says, so skipping it is exact, and padded rows are
 * skipped entirely (their state is zeroed after the step anyway, §4.2).
 * The reference skips a slot only when every row of the batch has
 * cp = 0; the results are the same, the work is not. To know which rows
 * are active the step reads cp_t to the host (free on CPU, one small copy
 * per step on CUDA).
 *
 * By default the cell is one op (gr_om_cell), the attention (keys, β, the
 * masked softmax and both cumulative pointers) is one op (gr_om_attend)
 * and the memory and candidate updates are gr_lerp / gr_lerp_rows
 * (kernels/ops.h), the same numbers with less step memory;
 * GROVE_OM_UNFUSED=1 (nlp_om_unfused) selects the composition of
 * primitive ops.
 *
 * Compaction (fused path): a row whose last real step is behind (right
 * padding) leaves the step: from then on M, Mh, p and every tensor of the
 * step hold only the rows still in it (gathered once when rows leave), and
 * y_t, p_t are scattered back to [B, ...] with zeros for the rows that
 * left (the padding rule's values). The ops work row by row and dropout
 * masks are drawn by position among the allowed pairs and active rows,
 * which never include such rows, so y and p are the same values;
 * gradients agree to rounding (a slot whose every remaining row is active
 * takes them directly instead of gathered). GROVE_OM_FULL_BATCH=1 keeps
 * every row in the step (the fused path before compaction).
 *
 * The one difference from the reference's arithmetic: the masked softmax
 * is computed as softmax(β) ⊙ m / max(Σ softmax(β) ⊙ m, 1e-12), i.e. the
 * 1e-12 floor applies to the sum divided by Z = Σ exp(β - max β) ∈ [1, N];
 * the floor only matters when every allowed slot has a logit ~27 below the
 * largest one, and slot N-1 is always allowed.
 *
 * Slots: the slot count is a run argument, not a parameter (§3): logic
 * trains and validates with 12 and tests and parses with 24
 * (cfg.nslot / cfg.nslot_eval).
 *
 * Parameter names are the reference's state-dict keys: "embedding.weight",
 * "encoder.OM_forward.input_projection.0.weight", ".activation.weight"
 * (LN_x, shared by eq. 3.5.1 and the cell output), ".distribution.query.1.",
 * ".distribution.query.2." (LN_q), ".distribution.key.1.", ".key.2.",
 * ".distribution.beta.2.", ".cell.input_t.1.", ".cell.input_t.4."; the
 * backward direction under "encoder.OM_backward.". Initial weights come from
 * (seed, name) (kernels/layers.h), the same bits on CPU and CUDA.
 *
 * Memory: parameters in the caller's context; an encode's tensors in the
 * step arena until gr_step_reset; small host scratch (active rows, masks)
 * kept in struct nlp_om and grown when a larger batch comes (freed by
 * nlp_om_free). Thread safety: one thread per model. Errors: 0 or a
 * negative GR_E* code with the message in gr_last_error() (core/error.h).
 *
 *   struct nlp_om_config cfg;
 *   nlp_om_config_default(&cfg, NLP_OM_LOGIC);
 *   struct nlp_om om;
 *   if (nlp_om_init(&om, ctx, &cfg, seed) < 0) ...;
 *   gr_step_reset(ctx);
 *   struct nlp_om_run run = nlp_om_run_train(seed, batch_index, cfg.nslot);
 *   struct gr_tensor *u;                      // [B, D] sentence vectors
 *   nlp_om_encode(&om, ids, T, B, &run, &u);  // ids [T, B] host, time-major
 *   ... head (nlp/models/heads.h), loss, gr_backward ...
 *   nlp_om_free(&om);
 */
#ifndef GROVE_NLP_OM_H
#define GROVE_NLP_OM_H

#include <stdint.h>

#include "kernels/layers.h"
#include "kernels/rng.h"
#include "kernels/tensor.h"
#include "nlp/models/onlstm.h" /* struct nlp_text, nlp_config_value */

enum nlp_om_task {
    NLP_OM_LOGIC = 0,   /* proplog.py defaults */
    NLP_OM_LISTOPS = 1, /* listops.py defaults */
};

struct nlp_om_config {
    int32_t vocab;       /* V: embedding rows, the padding row included */
    int32_t pad_id;      /* padding id in [0, V): positions holding it are
                            padding (the validity mask is ids != pad_id) */
    int32_t emsize;      /* D_in */
    int32_t nhid;        /* D, the slot size */
    int32_t nslot;       /* N for training (and logic validation) */
    int32_t nslot_eval;  /* N for testing and tree extraction */
    float dropout;       /* r_c: cell dropout (--dropout) */
    float dropoutm;      /* r_m: memory/attention dropout (--dropoutm) */
    float dropouti;      /* input dropout on the embeddings (--dropouti) */
    int32_t bidirection; /* 1: a second OM reads the reversed batch */
    int32_t output_last; /* 1: readout y_{T-1} (ListOps); 0: y at the last
                            real position (logic) */
    int32_t embed_normal; /* 1: E ~ N(0, 1) with a zero padding row
                             (ListOps); 0: E ~ U(-0.1, 0.1) (logic) */
};

/* The reference defaults of ordered_memory.md §2, §6, §9: logic V 12
 * (pad 11), 200/200, 12/24 slots, dropouts 0.2/0.2/0.1; ListOps V 20
 * (pad 0), 128/128, 21/21 slots, 0.1/0.3/0.1, output_last, N(0, 1). */
void nlp_om_config_default(struct nlp_om_config *cfg, enum nlp_om_task task);

/* GR_EINVAL naming the field when a size or rate is out of range. */
int nlp_om_config_check(const struct nlp_om_config *cfg);

/* Parameters of the encoder with its embedding (heads not included):
 * logic 1,086,001; ListOps 447,233 (spec §3 with nlp_head_param_count:
 * 1,247,608 and 448,523). */
int64_t nlp_om_param_count(const struct nlp_om_config *cfg);

/* Appends "om.<key> <value>" lines (a checkpoint's config text). */
int nlp_om_config_write(const struct nlp_om_config *cfg, struct nlp_text *t);

/* Reads them back; GR_EFORMAT naming the key when one is missing or
 * malformed (`what` names the source in messages). */
int nlp_om_config_read(const char *text, const char *what,
                       struct nlp_om_config *cfg);

/* One direction's parameters. */
struct nlp_om_dir {
    struct gr_linear_layer in;   /* W_in [D, D_in] */
    struct gr_tensor *ln_x_g, *ln_x_b; /* LN_x, shared (eqs 3.5.1, 3.5.13) */
    struct gr_linear_layer q;    /* W_q [D, D] */
    struct gr_tensor *ln_q_g, *ln_q_b;
    struct gr_linear_layer k;    /* W_k [D, D] */
    struct gr_tensor *ln_k_g, *ln_k_b;
    struct gr_linear_layer beta; /* w_β [1, D] */
    struct gr_linear_layer c1;   /* W_1 [4D, 2D] */
    struct gr_linear_layer c2;   /* W_2 [4D, 4D] */
};

struct nlp_om {
    struct nlp_om_config cfg;
    struct gr_ctx *ctx;
    struct gr_tensor *embedding; /* [V, D_in] "embedding.weight" */
    struct nlp_om_dir dir[2];    /* forward, backward (bidirection) */
    /* host scratch (internal) */
    void *scratch_;
    size_t scratch_cap_;
};

/* Creates and initialises the parameters in ctx (which must not already
 * hold them). seed: the run's seed. */
int nlp_om_init(struct nlp_om *m, struct gr_ctx *ctx,
                const struct nlp_om_config *cfg, uint64_t seed);

/* The same with every parameter name prefixed by `prefix` (at most 64
 * characters; "enc." in the encoder table, nlp/models/encoder.h). */
int nlp_om_init_named(struct nlp_om *m, struct gr_ctx *ctx,
                      const struct nlp_om_config *cfg, uint64_t seed,
                      const char *prefix);

/* Frees the host scratch (the parameters stay in the context). */
void nlp_om_free(struct nlp_om *m);

/* ---- one encode call ---- */

/* Dropout purposes (Philox streams, see nlp_om_run). */
enum nlp_om_purpose {
    NLP_OM_RNG_INPUT = 1, /* embeddings (dropouti) */
    NLP_OM_RNG_QUERY = 2, /* drop_rm(xt) before W_q */
    NLP_OM_RNG_KEY = 3,   /* drop_rm(Mh_{t-1}) before W_k */
    NLP_OM_RNG_BETA = 4,  /* drop_rm(ReLU(q + k)) */
    NLP_OM_RNG_CELL_IN = 5,  /* drop_rc([v; h]) */
    NLP_OM_RNG_CELL_HID = 6, /* drop_rc(ReLU(W_1 .. + b_1)) */
};

struct nlp_om_run {
    int training;     /* 1: dropout on (drawn from seed, batch) */
    uint64_t seed;    /* the run's seed */
    int64_t batch;    /* which batch: the masks' stream (epoch·n + i) */
    int32_t nslot;    /* N for this call (>= 2) */
    float *probs_out; /* host [T, B, N]: the forward pointers p_t (after
                         the padding rule), or NULL */
};

/* Training mode with slots `nslot`. */
struct nlp_om_run nlp_om_run_train(uint64_t seed, int64_t batch,
                                   int32_t nslot);

/* Evaluation mode (no dropout) with slots `nslot`. */
struct nlp_om_run nlp_om_run_eval(int32_t nslot);

/* The key of a dropout draw: (seed, stream(batch, t·64 + slot, purpose,
 * direction)). */
struct gr_rng nlp_om_rng(uint64_t seed, int64_t batch, int64_t t, int slot,
                         int purpose, int direction);

/* The encoder interface: ids [T, B] host i32, time-major, values in
 * [0, V) (cfg.pad_id marks padding) -> *out [B, D] (or [B, 2D] with
 * bidirection), a step tensor on the tape. Pair tasks put the B/2 premises
 * first and the B/2 hypotheses after them in one batch (spec §7). A
 * sequence with no real token reads y at time T-1 (the reference's
 * `lengths - 1` wraps to -1). */
int nlp_om_encode(struct nlp_om *m, const int32_t *ids, int32_t T, int32_t B,
                  const struct nlp_om_run *run, struct gr_tensor **out);

/* The layers under nlp_om_encode, for tests and fixtures. */

/* What one direction returns: every step's output and pointer. */
struct nlp_om_seq {
    struct gr_tensor *y; /* [T, B, D]: y_t (zero at padded positions) */
    struct gr_tensor *p; /* [T, B, N]: p_t (zero at padded positions) */
};

/* One direction over x [T, B, D_in] (embedded, already dropped) with the
 * validity mask valid [T·B] host (1 real, 0 padding; NULL: all real) and N
 * slots. `dir` 0 forward, 1 backward (which parameters and dropout
 * streams). */
int nlp_om_forward(struct nlp_om *m, int dir, struct gr_tensor *x,
                   const uint8_t *valid, const struct nlp_om_run *run,
                   struct nlp_om_seq *out);

/* xt = LN_x(W_in x + b_in): x [..., D_in] -> [..., D] (eq. 3.5.1). */
struct gr_tensor *nlp_om_input(struct nlp_om *m, int dir, struct gr_tensor *x);

/* Whether the plain composition of ops is used instead of the fused cell
 * and attention (gr_om_cell, gr_om_attend, kernels/ops.h): the
 * environment variable GROVE_OM_UNFUSED set to anything but "" or "0".
 * Same numbers either way; kept for comparison and so that the fixture
 * tests check both. */
int nlp_om_unfused(void);

/* The gated recursive cell (eqs 3.5.12-3.5.13) without dropout:
 * v, h [R, D] -> [R, D]. */
struct gr_tensor *nlp_om_cell(struct nlp_om *m, int dir, struct gr_tensor *v,
                              struct gr_tensor *h);

/* ---- induced trees (spec §8) ---- */

/* The distances of one sequence from its pointers: probs [n, N] (the
 * sequence's rows of p_t), d_0 = N_eval, d_t = argmax_i p_t[i] (first
 * maximum) for t >= 1. */
void nlp_om_distances(const float *probs, int32_t n, int32_t nslot,
                      int32_t *dist);

/* build_tree of §8 over n >= 1 leaves: writes the n - 1 internal nodes as
 * spans [lo, hi) of leaves in the order they are built (children before
 * parents; the root, [0, n), last) into spans[2·(n-1)]. Returns n - 1. */
int32_t nlp_om_build_tree(const int32_t *dist, int32_t n, int32_t *spans);

/* The tree of `spans` (as nlp_om_build_tree writes them, n leaves) with
 * the leaves where drop[i] != 0 deleted and unary nodes collapsed (the
 * reference's remove_bracket): writes the remaining brackets as spans over
 * the kept leaves (renumbered 0..kept-1), children before parents, into
 * out[2·(kept-1)] and returns how many (at most kept - 1; a bracket equal
 * to one already written, i.e. a unary chain, is written once). */
int32_t nlp_om_tree_remove_leaves(const int32_t *spans, int32_t n,
                                  const uint8_t *drop, int32_t *out);

/* The tree as nested brackets "((a b) c)" over words[0..n-1] (spans as
 * above, n leaves, n_spans brackets forming a tree: each one splits into
 * brackets or leaves). Writes at most cap bytes; returns the length it
 * needed (as snprintf). */
int nlp_om_tree_format(const int32_t *spans, int32_t n_spans, int32_t n,
                       const char *const *words, char *out, size_t cap);

/* ---- the encoder table (nlp/models/encoder.h) ---- */

/* nlp_encoder_om, the row "om" of the table: nlp_om under "enc.", its
 * config from struct nlp_encoder_config (emsize, hidden, slots_train /
 * slots_eval, dropout_in / dropout_cell / dropout_mem; left_pad selects
 * the ListOps form: y_{T-1} readout and an N(0, 1) embedding). A training
 * encode uses slots_train, an evaluation encode slots_eval as the config
 * holds it at that call (logic validation: set it to slots_train first).
 * Dropout masks: (rng.seed, batch = rng.stream). */
struct nlp_encoder;

/* The forward pointers of the last encode: *probs [T, B, N] (host, owned
 * by the encoder, valid until its next encode or free) with T, B, N.
 * Trees: nlp_om_distances and nlp_om_build_tree per sequence (for
 * left-padded batches, skip each sequence's padded steps). GR_EINVAL
 * before any encode or for another model. */
int nlp_om_encoder_probs(struct nlp_encoder *e, const float **probs,
                         int32_t *T, int32_t *B, int32_t *N);

#endif
