/* tests/test.h — the few macros every grove test program uses.
 *
 * CHECK records a failure with file:line and goes on; test_report's return
 * value is the verdict (non-zero if any check failed), so ctest sees it.
 *
 * Skipping goes through one place, here (and tests/skip.sh for the shell
 * tests): a test that misses a GPU or a data set says why with
 * test_absent (checks of its that need it are left out) or ends with
 * test_skip (exit 77, ctest SKIP_RETURN_CODE). With GROVE_REQUIRE_GPU=1
 * or GROVE_REQUIRE_DATA=1 in the environment the same absence is a
 * failure instead, so a skipped test cannot pass for a run one where the
 * GPU or ../shared/data is meant to be there (scripts/test.sh sets them).
 *
 * Golden files are rewritten only through test_update_golden: with
 * GROVE_UPDATE_GOLDEN=1, never in CI, and a run that rewrites fails.
 */
#ifndef GROVE_TESTS_TEST_H
#define GROVE_TESTS_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_SKIP 77

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                          \
    do {                                                                     \
        test_checks++;                                                       \
        if (!(cond)) {                                                       \
            test_failures++;                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
        }                                                                    \
    } while (0)

#define CHECK_MSG(cond, ...)                                                 \
    do {                                                                     \
        test_checks++;                                                       \
        if (!(cond)) {                                                       \
            test_failures++;                                                 \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
                    #cond);                                                  \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                   \
    CHECK_MSG((unsigned long long)(a) == (unsigned long long)(b),            \
              "%llx != %llx", (unsigned long long)(a),                       \
              (unsigned long long)(b))

#define CHECK_NEAR(a, b, tol)                                                \
    CHECK_MSG(fabs((double)(a) - (double)(b)) <= (tol), "%.9g vs %.9g",     \
              (double)(a), (double)(b))

#define CHECK_STR_CONTAINS(hay, needle)                                      \
    CHECK_MSG(strstr((hay), (needle)) != NULL, "'%s' lacks '%s'", (hay),     \
              (needle))

/* Ends a test program: prints a summary, returns the verdict. */
static inline int test_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, test_checks, test_failures);
    return test_failures == 0 ? 0 : 1;
}

/* What a test may need and miss: the suffix of GROVE_REQUIRE_<NEED>. */
#define TEST_NEED_GPU "GPU"   /* a CUDA device (in a build with CUDA) */
#define TEST_NEED_DATA "DATA" /* a data set under ../shared/data */

static inline int test_required(const char *need)
{
    char var[64];
    snprintf(var, sizeof var, "GROVE_REQUIRE_%s", need);
    const char *v = getenv(var);
    return v != NULL && strcmp(v, "1") == 0;
}

static inline int test_vabsent(const char *need, const char *fmt, va_list ap)
{
    char why[1024];
    vsnprintf(why, sizeof why, fmt, ap);
    if (need != NULL && test_required(need)) {
        test_checks++;
        test_failures++;
        fprintf(stderr, "FAIL: %s (GROVE_REQUIRE_%s=1: this must run)\n",
                why, need);
        return 1;
    }
    printf("skip: %s\n", why);
    return 0;
}

/* `need` (TEST_NEED_GPU, TEST_NEED_DATA; NULL for what no variable can
 * require, such as CUDA not compiled in) is absent, for the reason printf'd
 * from fmt: prints "skip: ...", and the caller leaves out the checks that
 * need it. When GROVE_REQUIRE_<need>=1, counts a failure instead (on
 * stderr). Returns 1 when it counted a failure. */
static inline int test_absent(const char *need, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline int test_absent(const char *need, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = test_vabsent(need, fmt, ap);
    va_end(ap);
    return rc;
}

/* The same, ending the test (return its value from main): TEST_SKIP, or
 * the failing verdict when `need` was required or an earlier check
 * failed. */
static inline int test_skip(const char *name, const char *need,
                            const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline int test_skip(const char *name, const char *need,
                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    test_vabsent(need, fmt, ap);
    va_end(ap);
    return test_failures ? test_report(name) : TEST_SKIP;
}

/* 1 in a CI run: CI set to anything but "", "0" or "false". */
static inline int test_in_ci(void)
{
    const char *ci = getenv("CI");
    return ci != NULL && ci[0] != 0 && strcmp(ci, "0") != 0 &&
           strcmp(ci, "false") != 0;
}

/* Whether the caller may rewrite the golden file `path` now: only with
 * GROVE_UPDATE_GOLDEN=1 and outside CI. A run that rewrites a golden has
 * compared nothing, so it counts a failure (run again without the
 * variable, and look at the new golden before committing it); the
 * variable set in CI is a failure too, and nothing is rewritten. */
static inline int test_update_golden(const char *path)
{
    const char *u = getenv("GROVE_UPDATE_GOLDEN");
    if (u == NULL || strcmp(u, "1") != 0) {
        return 0;
    }
    test_checks++;
    test_failures++;
    if (test_in_ci()) {
        fprintf(stderr, "FAIL: GROVE_UPDATE_GOLDEN=1 in a CI run (CI=%s): "
                "%s is not rewritten\n", getenv("CI"), path);
        return 0;
    }
    fprintf(stderr, "FAIL (on purpose): GROVE_UPDATE_GOLDEN=1 rewrites %s; "
            "this run compares nothing: look at the image, then run again "
            "without the variable\n", path);
    return 1;
}

#endif
