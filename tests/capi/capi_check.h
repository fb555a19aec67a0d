/* The checks of the C API's test programs: CHECK counts a failure and goes
 * on, printing the condition and the library's last error. */
#ifndef TDMSIM_TESTS_CAPI_CHECK_H
#define TDMSIM_TESTS_CAPI_CHECK_H

#include <stdio.h>

#include "tdmsim/tdmsim_moe.h"

static int failures = 0;
#define CHECK(cond)                                                             \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__,   \
              __LINE__, #cond, tdmsim_last_error());                            \
      ++failures;                                                               \
    }                                                                           \
  } while (0)

#endif /* TDMSIM_TESTS_CAPI_CHECK_H */
