// FAULTLINE_REQUIRE(condition, reason): the test needs something this machine may lack (a Debian
// package, a kernel feature, ../shared beside the checkout). Missing, it skips with `reason` on a
// developer's machine and fails in CI (the CI environment variable set), where .ci/run provides
// all of it, so no test can pass in CI by not running. Use it in a test body: it returns.
#ifndef FAULTLINE_TESTS_SUPPORT_PREREQUISITE_H_
#define FAULTLINE_TESTS_SUPPORT_PREREQUISITE_H_

#include <gtest/gtest.h>

#include <cstdlib>

#define FAULTLINE_REQUIRE(condition, reason)                        \
  do {                                                              \
    if (!(condition)) {                                             \
      if (std::getenv("CI") != nullptr) {                           \
        GTEST_FAIL() << reason << " (CI provides it; not skipped)"; \
      }                                                             \
      GTEST_SKIP() << reason;                                       \
    }                                                               \
  } while (false)

#endif  // FAULTLINE_TESTS_SUPPORT_PREREQUISITE_H_
