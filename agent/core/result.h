// Error and Result<T>: how load-time code (config, rules, CLI) reports what went wrong.
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

// All errors of a list, one per line.
std::string FormatErrors(const ErrorList& errors);

}  // namespace faultline

#endif  // FAULTLINE_CORE_RESULT_H_
