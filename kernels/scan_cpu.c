/* The linear scan on the CPU (kernels/scan.h): sequential over the t
 * steps, each step one pass over the n = B·H lanes that the compiler
 * vectorises (contiguous, restrict, no branch in the inner loop). With n
 * in the thousands a step is a few microseconds; the whole recurrence of a
 * Faster FastTrees window is memory-bound (about 4 floats per element). */
#include "kernels/scan.h"

#include <stddef.h>

int gr_cpu_scan_fwd(void *st, const float *a, const float *b,
                    const float *c0, float *c, int64_t t, int64_t n)
{
    (void)st;
    for (int64_t s = 0; s < t; s++) {
        const float *restrict as = a + s * n;
        const float *restrict bs = b + s * n;
        float *restrict cs = c + s * n;
        if (s == 0 && c0 == NULL) {
            for (int64_t j = 0; j < n; j++) {
                cs[j] = bs[j];
            }
            continue;
        }
        const float *restrict cp = s == 0 ? c0 : c + (s - 1) * n;
        for (int64_t j = 0; j < n; j++) {
            cs[j] = as[j] * cp[j] + bs[j];
        }
    }
    return 0;
}

int gr_cpu_scan_bwd(void *st, const float *a, const float *c,
                    const float *c0, const float *gc, float *d, float *ga,
                    float *gb, float *gc0, int64_t t, int64_t n)
{
    (void)st;
    for (int64_t s = t - 1; s >= 0; s--) {
        float *restrict ds = d + s * n;
        const float *restrict gs = gc ? gc + s * n : NULL;
        if (s == t - 1) {
            for (int64_t j = 0; j < n; j++) {
                ds[j] = gs ? gs[j] : 0.0f;
            }
        } else {
            const float *restrict an = a + (s + 1) * n;
            const float *restrict dn = d + (s + 1) * n;
            if (gs) {
                for (int64_t j = 0; j < n; j++) {
                    ds[j] = gs[j] + an[j] * dn[j];
                }
            } else {
                for (int64_t j = 0; j < n; j++) {
                    ds[j] = an[j] * dn[j];
                }
            }
        }
        if (gb) {
            float *restrict g = gb + s * n;
            for (int64_t j = 0; j < n; j++) {
                g[j] += ds[j];
            }
        }
        if (ga) {
            float *restrict g = ga + s * n;
            if (s > 0) {
                const float *restrict cp = c + (s - 1) * n;
                for (int64_t j = 0; j < n; j++) {
                    g[j] += ds[j] * cp[j];
                }
            } else if (c0) {
                for (int64_t j = 0; j < n; j++) {
                    g[j] += ds[j] * c0[j];
                }
            }
        }
    }
    if (gc0 && t > 0) {
        for (int64_t j = 0; j < n; j++) {
            gc0[j] += a[j] * d[j];
        }
    }
    return 0;
}
