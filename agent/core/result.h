// Error and Result<T>: how code that can fail reports what went wrong: loaders (config, rules,
// versions), the CLI, and what starts the daemon (sources opening their files and sockets, the
// HTTP server binding, the state store opening). There is one style: a function that makes a T
// returns Result<T>, one that only acts returns Result<void>; none takes an error
// out-parameter. The one typed exception is state/sqlite.h's DbStatus, which carries SQLite's
// result code because callers branch on it (a full disk is handled, not reported).
//
// An Error names where the problem is (file, line, rule id, key) and what it is, so that a user can
// go straight to the offending line. Loaders collect every Error of one load in an ErrorList and
// fail the load as a whole when the list is not empty. Errors are plain values: copyable, no
// exceptions. The per-line path never produces them.
#ifndef FAULTLINE_CORE_RESULT_H_
#define FAULTLINE_CORE_RESULT_H_

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace faultline {

struct Error {
  std::string file;     // empty when the error is not tied to a file
  int line = 0;         // 1-based; 0 when unknown
  std::string rule_id;  // empty outside rules
  std::string key;      // the YAML key or CLI flag at fault; empty when none applies
  std::string message;

  // "file:line: rule 'id': key 'k': message", leaving out the parts that are empty.
  std::string ToString() const;
};

// An Error that is only a message (a socket that cannot bind, a pipe that cannot be opened).
inline Error Failure(std::string message) {
  return Error{.file = "", .line = 0, .rule_id = "", .key = "", .message = std::move(message)};
}

using ErrorList = std::vector<Error>;

// Either a T or the errors that prevented it.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : errors_{std::move(error)} {}  // NOLINT
  Result(ErrorList errors) : errors_(std::move(errors)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const ErrorList& errors() const { return errors_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  ErrorList errors_;
};

// The outcome of an action that makes nothing: ok, or the errors that stopped it.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;                                       // ok
  Result(Error error) : errors_{std::move(error)} {}        // NOLINT: implicit by design
  Result(ErrorList errors) : errors_(std::move(errors)) {}  // NOLINT

  bool ok() const { return errors_.empty(); }
  const ErrorList& errors() const { return errors_; }

 private:
  ErrorList errors_;
};

// All errors of a list, one per line, each as "error: ...\n" (for stderr).
std::string FormatErrors(const ErrorList& errors);
// All errors of a list on one line, joined by "; " (for a log line).
std::string JoinErrors(const ErrorList& errors);

}  // namespace faultline

#endif  // FAULTLINE_CORE_RESULT_H_
