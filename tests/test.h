/* tests/test.h — the few macros every grove test program uses.
 *
 * CHECK records a failure with file:line and goes on; TEST_MAIN's return
 * value is the verdict (non-zero if any check failed), so ctest sees it.
 * A test that needs a GPU it does not find returns TEST_SKIP (ctest
 * SKIP_RETURN_CODE) after saying why.
 */
#ifndef GROVE_TESTS_TEST_H
#define GROVE_TESTS_TEST_H

#include <math.h>
#include <stdio.h>
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

#endif
