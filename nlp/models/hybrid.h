/* nlp/models/hybrid.h — the hybrid ON-LSTM + SAN encoder with short-cut
 * (hybrid_and_trees.md §1; nlp/models/hybrid.c, rows "hybrid" and
 * "hybrid-san" (SAN -> ON-LSTM, H = H_S + H_R) of nlp/models/encoder.h). Besides the table's pooled vector, the states
 * themselves, for probing and the §4 identity test:
 *
 *   struct gr_tensor *hr;
 *   struct gr_tensor *h = nlp_hybrid_states(&enc, &batch, 0, rng, &hr);
 *   // h = H_R + H_S [T, B, D]; hr = H_R (top ON-LSTM layer) [T, B, D]
 *
 * `e` must be an encoder of model "hybrid" or "hybrid-san" (hr is then
 * the ON-LSTM output read from the SAN's). NULL on failure (the context's
 * error or gr_last_error). */
#ifndef GROVE_NLP_MODELS_HYBRID_H
#define GROVE_NLP_MODELS_HYBRID_H

#include "kernels/rng.h"
#include "kernels/tensor.h"
#include "nlp/models/encoder.h"

struct gr_tensor *nlp_hybrid_states(struct nlp_encoder *e,
                                    const struct nlp_encoder_batch *b,
                                    int training, struct gr_rng rng,
                                    struct gr_tensor **h_r);

#endif
