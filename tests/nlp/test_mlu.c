/* The MLU generator (nlp/data/mlu.h): every target checked by a second
 * evaluator written here (a character parser of "v=INT,v=INT,a OP b" with
 * 64-bit arithmetic), held first to the paper's example (x=85, y=-523,
 * x*y = -44455); determinism per seed; distinct sources; the draw's
 * distribution (both variables cover [-1000, 999], each operator and each
 * order about equally often); bad sizes refused. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nlp/data/mlu.h"
#include "tests/test.h"

/* Parses a signed decimal at *p; returns 0 on a malformed number. */
static int parse_int(const char **p, long long *v)
{
    int neg = 0;
    if (**p == '-') {
        neg = 1;
        (*p)++;
    }
    if (**p < '0' || **p > '9') {
        return 0;
    }
    long long r = 0;
    while (**p >= '0' && **p <= '9') {
        r = r * 10 + (**p - '0');
        (*p)++;
    }
    *v = neg ? -r : r;
    return 1;
}

/* Evaluates an MLU source; 0 when it does not have the task's form. */
static int eval_src(const char *s, long long *out, long long *xv,
                    long long *yv, char *opc, int *y_first, int *y_left)
{
    long long val[2] = {0, 0};
    int have[2] = {0, 0};
    const char *p = s;
    for (int k = 0; k < 2; k++) {
        if ((p[0] != 'x' && p[0] != 'y') || p[1] != '=') {
            return 0;
        }
        int which = p[0] == 'y';
        if (k == 0) {
            *y_first = which;
        }
        p += 2;
        if (have[which] || !parse_int(&p, &val[which]) || *p != ',') {
            return 0;
        }
        have[which] = 1;
        p++;
    }
    if ((p[0] != 'x' && p[0] != 'y') || (p[2] != 'x' && p[2] != 'y') ||
        p[0] == p[2] || p[3] != '\0') {
        return 0;
    }
    long long a = val[p[0] == 'y'], b = val[p[2] == 'y'];
    *y_left = p[0] == 'y';
    *opc = p[1];
    *xv = val[0];
    *yv = val[1];
    switch (p[1]) {
    case '+': *out = a + b; return 1;
    case '-': *out = a - b; return 1;
    case '*': *out = a * b; return 1;
    default: return 0;
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    long long v = 0, xv, yv;
    char opc;
    int yf, yl;
    CHECK(eval_src("x=85,y=-523,x*y", &v, &xv, &yv, &opc, &yf, &yl) &&
          v == -44455);
    CHECK(eval_src("y=129,x=531,x-y", &v, &xv, &yv, &opc, &yf, &yl) &&
          v == 402 && yf == 1 && yl == 0);
    CHECK(!eval_src("x=1,x=2,x+y", &v, &xv, &yv, &opc, &yf, &yl));

    enum { N = 100000 };
    struct nlp_mlu_set a, b, c;
    CHECK(nlp_mlu_generate(&a, N, 7) == 0);
    CHECK(nlp_mlu_generate(&b, N, 7) == 0);
    CHECK(nlp_mlu_generate(&c, N, 8) == 0);
    CHECK(a.n == N && a.draws >= N);
    int64_t same = 0, differ = 0, bad = 0;
    long long xmin = 0, xmax = 0, ymin = 0, ymax = 0;
    int64_t nop[3] = {0, 0, 0}, nyf = 0, nyl = 0;
    for (int64_t i = 0; i < N; i++) {
        same += strcmp(a.src[i], b.src[i]) == 0 &&
                strcmp(a.tgt[i], b.tgt[i]) == 0;
        differ += strcmp(a.src[i], c.src[i]) != 0;
        if (!eval_src(a.src[i], &v, &xv, &yv, &opc, &yf, &yl)) {
            if (bad++ < 3) {
                fprintf(stderr, "malformed source '%s'\n", a.src[i]);
            }
            continue;
        }
        char want[32];
        snprintf(want, sizeof want, "%lld", v);
        if (strcmp(want, a.tgt[i]) != 0 && bad++ < 3) {
            fprintf(stderr, "'%s': target '%s', evaluated %s\n", a.src[i],
                    a.tgt[i], want);
        }
        xmin = i == 0 || xv < xmin ? xv : xmin;
        xmax = i == 0 || xv > xmax ? xv : xmax;
        ymin = i == 0 || yv < ymin ? yv : ymin;
        ymax = i == 0 || yv > ymax ? yv : ymax;
        nop[opc == '+' ? 0 : (opc == '-' ? 1 : 2)]++;
        nyf += yf;
        nyl += yl;
    }
    CHECK(bad == 0);
    CHECK(same == N);
    CHECK(differ > N * 99 / 100);
    CHECK(xmin == -1000 && xmax == 999 && ymin == -1000 && ymax == 999);
    for (int k = 0; k < 3; k++) {
        CHECK(nop[k] > N * 31 / 100 && nop[k] < N * 35 / 100);
    }
    CHECK(nyf > N * 48 / 100 && nyf < N * 52 / 100);
    CHECK(nyl > N * 48 / 100 && nyl < N * 52 / 100);
    /* distinct: the source determines the example */
    char **sorted = malloc(N * sizeof *sorted);
    memcpy(sorted, a.src, N * sizeof *sorted);
    qsort(sorted, N, sizeof *sorted, cmp_str);
    int64_t dup = 0;
    for (int64_t i = 1; i < N; i++) {
        dup += strcmp(sorted[i - 1], sorted[i]) == 0;
    }
    CHECK(dup == 0);
    free(sorted);
    /* a prefix of a longer generation is the shorter one (splits by
     * position are stable under a larger n) */
    struct nlp_mlu_set small;
    CHECK(nlp_mlu_generate(&small, 1000, 7) == 0);
    int64_t prefix = 0;
    for (int64_t i = 0; i < 1000; i++) {
        prefix += strcmp(small.src[i], a.src[i]) == 0;
    }
    CHECK(prefix == 1000);
    nlp_mlu_free(&small);
    nlp_mlu_free(&a);
    nlp_mlu_free(&b);
    nlp_mlu_free(&c);
    CHECK(nlp_mlu_generate(&a, 0, 1) == GR_EINVAL);
    CHECK(strstr(gr_last_error(), "1..24000000") != NULL);
    CHECK(nlp_mlu_generate(&a, NLP_MLU_MAX_N + 1, 1) == GR_EINVAL);
    return test_report("nlp_seq2seq_mlu");
}
