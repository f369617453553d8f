/* check.h — the assertion of the unit-test helpers: counts checks, reports each failure with its
 * line and goes on, so that one run shows every broken expectation. */
#ifndef PROFLINK_TEST_CHECK_H
#define PROFLINK_TEST_CHECK_H

#include <stdio.h>

static int checks, failures;

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        checks++;                                                                              \
        if (!(cond)) {                                                                         \
            failures++;                                                                        \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                    \
        }                                                                                      \
    } while (0)

#endif
