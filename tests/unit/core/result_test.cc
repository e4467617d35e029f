// Result<void>: the outcome of what only acts, and the one-line and per-line forms of its errors.
#include "agent/core/result.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

TEST(ResultVoidTest, DefaultIsOkAndAnErrorIsNot) {
  const Result<void> ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(ok.errors().empty());
  const Result<void> failed = Failure("cannot listen on tcp 127.0.0.1:80: Permission denied");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ("cannot listen on tcp 127.0.0.1:80: Permission denied", failed.errors()[0].message);
  EXPECT_EQ("", failed.errors()[0].file);
}

TEST(ResultVoidTest, AnEmptyErrorListIsOk) {
  // What a loader that found nothing wrong returns through the same constructor.
  EXPECT_TRUE(Result<void>(ErrorList{}).ok());
  EXPECT_FALSE(Result<void>(ErrorList{Failure("a")}).ok());
}

TEST(ResultVoidTest, ErrorsJoinOnOneLineOrOnePerLine) {
  const ErrorList errors = {Error{.file = "faultline.yaml",
                                  .line = 12,
                                  .rule_id = "",
                                  .key = "alerts.receivers[0].url",
                                  .message = "must be http or https"},
                            Failure("cannot open /var/log/app.log: Permission denied")};
  EXPECT_EQ(
      "faultline.yaml:12: key 'alerts.receivers[0].url': must be http or https; cannot open "
      "/var/log/app.log: Permission denied",
      JoinErrors(errors));
  EXPECT_EQ(
      "error: faultline.yaml:12: key 'alerts.receivers[0].url': must be http or https\n"
      "error: cannot open /var/log/app.log: Permission denied\n",
      FormatErrors(errors));
  EXPECT_EQ("", JoinErrors({}));
}

}  // namespace
}  // namespace faultline
