/* tests/agents/cuda_util.h — what the CUDA parity tests of the OCN, OMPN
 * and compILE share: the skip where no GPU can run them, the largest
 * element-wise difference, and the two batches each compares on (§11's
 * tiny one and 64 real Craft demonstrations of AC and CD).
 * Include after tests/test.h. */
#ifndef GROVE_TESTS_AGENTS_CUDA_UTIL_H
#define GROVE_TESTS_AGENTS_CUDA_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "agents/demos.h"
#include "envs/craft.h"
#include "kernels/device.h"
#include "tests/agents/ocn_testutil.h"

/* -1 when a GPU is there to compare on; else what `name`'s main returns
 * (a skip, exit 77, with the reason printed). */
static inline int cu_need_gpu(const char *name)
{
    if (!gr_cuda_compiled()) {
        return test_skip(name, NULL, "CUDA is not compiled into this build");
    }
    if (gr_cuda_device_count() == 0) {
        char why[256];
        gr_cuda_status(why, sizeof why);
        return test_skip(name, TEST_NEED_GPU, "no GPU visible (%s)", why);
    }
    return -1;
}

/* max |a[i] - b[i]| over n values. */
static inline double cu_max_diff(const float *a, const float *b, int64_t n)
{
    double d = 0;
    for (int64_t i = 0; i < n; i++) {
        d = fmax(d, fabs(a[i] - b[i]));
    }
    return d;
}

/* §11's tiny batch: 3 random demonstrations (lengths 5, 3, 4; tasks 0, 1,
 * 0 of 2), O = 7, 5 actions, seed 3. b must be zeroed or built before. */
static inline void cu_tiny_batch(struct demo_set *ds, struct demo_batch *b)
{
    const int len[3] = {5, 3, 4}, task[3] = {0, 1, 0};
    tu_make_demos(ds, 3, len, task, 2, 7, 5, 3, NULL);
    const int64_t ids3[3] = {0, 1, 2};
    CHECK(demo_batch_build(b, ds, ids3, 3) == 0);
}

/* 64 expert demonstrations of tasks AC and CD (32 each, seed 5) in the
 * default world cc, all in one batch b; tasks[0..1] are AC and CD. */
static inline void cu_craft_batch(struct demo_set *ds, struct demo_batch *b,
                                  struct craft_config *cc,
                                  struct craft_task tasks[2])
{
    craft_config_default(cc);
    craft_task_parse("AC", &tasks[0]);
    craft_task_parse("CD", &tasks[1]);
    CHECK(demo_set_generate(ds, cc, tasks, 2, 32, 5, NULL, NULL) == 0);
    int64_t ids[64];
    for (int i = 0; i < 64; i++) {
        ids[i] = i;
    }
    CHECK(demo_batch_build(b, ds, ids, 64) == 0);
}

#endif
