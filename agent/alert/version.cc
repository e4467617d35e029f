#include "agent/alert/version.h"

#include <cstdint>
#include <string>
#include <vector>

#include "agent/core/ascii.h"

namespace faultline {
namespace {

// Longer digit runs are not versions anyone prints; refusing them keeps every number in uint64.
constexpr std::size_t kMaxDigits = 18;

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool IsAlnum(char c) { return IsAsciiDigit(c) || (c >= 'a' && c <= 'z'); }

// A cursor over lower-cased text, which the caller owns and keeps alive.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  bool done() const { return pos_ == text_.size(); }
  char peek() const { return done() ? '\0' : text_[pos_]; }
  std::size_t pos() const { return pos_; }
  void reset(std::size_t pos) { pos_ = pos; }

  bool Eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  bool EatSeparator() { return Eat('-') || Eat('_') || Eat('.'); }
  bool EatWord(std::string_view word) {
    if (text_.compare(pos_, word.size(), word) != 0) return false;
    pos_ += word.size();
    return true;
  }
  // A run of digits; false (and nothing eaten) when there is none or it is too long.
  bool Number(uint64_t* value) {
    std::size_t end = pos_;
    while (end < text_.size() && IsAsciiDigit(text_[end])) ++end;
    if (end == pos_ || end - pos_ > kMaxDigits) return false;
    uint64_t v = 0;
    for (std::size_t i = pos_; i < end; ++i) v = v * 10 + static_cast<uint64_t>(text_[i] - '0');
    *value = v;
    pos_ = end;
    return true;
  }
  std::string_view Rest() const { return text_.substr(pos_); }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

// A PEP 440 version reduced to packaging.version's comparison key.
struct Pep440 {
  uint64_t epoch = 0;
  std::vector<uint64_t> release;  // trailing zeros removed
  // Pre-release: 0 a, 1 b, 2 rc; kNoPre sorts after every pre-release, kDevOnly before them
  // (1.0.dev0 < 1.0a0 < 1.0).
  static constexpr int kDevOnly = -1;
  static constexpr int kNoPre = 3;
  int pre_kind = kNoPre;
  uint64_t pre_number = 0;
  bool has_post = false;
  uint64_t post_number = 0;
  bool has_dev = false;
  uint64_t dev_number = 0;
  // Local segments: a number sorts after any word; absent sorts before any local version.
  struct LocalSegment {
    bool is_number;
    uint64_t number;
    std::string word;
  };
  bool has_local = false;
  std::vector<LocalSegment> local;
};

std::optional<Pep440> ParsePep440(std::string_view raw) {
  std::string lower(TrimSpace(raw));
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  Cursor in(lower);
  Pep440 v;
  in.Eat('v');
  // Epoch: digits followed by '!'.
  {
    const std::size_t start = in.pos();
    uint64_t n = 0;
    if (in.Number(&n) && in.Eat('!')) {
      v.epoch = n;
    } else {
      in.reset(start);
    }
  }
  uint64_t n = 0;
  if (!in.Number(&n)) return std::nullopt;
  v.release.push_back(n);
  for (;;) {
    const std::size_t start = in.pos();
    if (in.Eat('.') && in.Number(&n)) {
      v.release.push_back(n);
      continue;
    }
    in.reset(start);
    break;
  }
  while (!v.release.empty() && v.release.back() == 0) v.release.pop_back();

  // Pre-release.
  {
    const std::size_t start = in.pos();
    in.EatSeparator();
    int kind = -2;
    // Longer spellings first: "preview" before "pre", "rc" before "r" (a post spelling).
    if (in.EatWord("alpha")) kind = 0;
    else if (in.EatWord("beta")) kind = 1;
    else if (in.EatWord("preview") || in.EatWord("pre") || in.EatWord("rc")) kind = 2;
    else if (in.EatWord("a")) kind = 0;
    else if (in.EatWord("b")) kind = 1;
    else if (in.EatWord("c")) kind = 2;
    if (kind == -2) {
      in.reset(start);
    } else {
      v.pre_kind = kind;
      const std::size_t before_number = in.pos();
      in.EatSeparator();
      if (!in.Number(&v.pre_number)) {
        in.reset(before_number);
        v.pre_number = 0;
      }
    }
  }
  // Post-release: "-N", or [sep](post|rev|r)[sep][N].
  {
    const std::size_t start = in.pos();
    if (in.Eat('-') && in.Number(&n)) {
      v.has_post = true;
      v.post_number = n;
    } else {
      in.reset(start);
      in.EatSeparator();
      if (in.EatWord("post") || in.EatWord("rev") || in.EatWord("r")) {
        v.has_post = true;
        const std::size_t before_number = in.pos();
        in.EatSeparator();
        if (!in.Number(&v.post_number)) {
          in.reset(before_number);
          v.post_number = 0;
        }
      } else {
        in.reset(start);
      }
    }
  }
  // Dev release.
  {
    const std::size_t start = in.pos();
    in.EatSeparator();
    if (in.EatWord("dev")) {
      v.has_dev = true;
      const std::size_t before_number = in.pos();
      in.EatSeparator();
      if (!in.Number(&v.dev_number)) {
        in.reset(before_number);
        v.dev_number = 0;
      }
    } else {
      in.reset(start);
    }
  }
  if (v.pre_kind == Pep440::kNoPre && !v.has_post && v.has_dev) v.pre_kind = Pep440::kDevOnly;
  // Local version: '+' then alphanumeric segments separated by [-_.].
  if (in.Eat('+')) {
    v.has_local = true;
    std::string_view rest = in.Rest();
    std::size_t i = 0;
    while (true) {
      std::size_t end = i;
      while (end < rest.size() && IsAlnum(rest[end])) ++end;
      if (end == i) return std::nullopt;
      const std::string_view segment = rest.substr(i, end - i);
      Pep440::LocalSegment s{true, 0, ""};
      for (char c : segment) s.is_number = s.is_number && IsAsciiDigit(c);
      if (s.is_number) {
        if (segment.size() > kMaxDigits) return std::nullopt;
        for (char c : segment) s.number = s.number * 10 + static_cast<uint64_t>(c - '0');
      } else {
        s.word = std::string(segment);
      }
      v.local.push_back(std::move(s));
      if (end == rest.size()) break;
      if (rest[end] != '-' && rest[end] != '_' && rest[end] != '.') return std::nullopt;
      i = end + 1;
    }
    return v;
  }
  if (!in.done()) return std::nullopt;
  return v;
}

template <typename T>
std::strong_ordering Cmp(const T& a, const T& b) {
  return a <=> b;
}

std::strong_ordering ComparePep440(const Pep440& a, const Pep440& b) {
  if (auto c = Cmp(a.epoch, b.epoch); c != 0) return c;
  // Lexicographic, a shorter prefix first: (1) < (1, 0, 1).
  if (auto c = a.release <=> b.release; c != 0) return c;
  if (auto c = Cmp(a.pre_kind, b.pre_kind); c != 0) return c;
  if (a.pre_kind != Pep440::kNoPre && a.pre_kind != Pep440::kDevOnly) {
    if (auto c = Cmp(a.pre_number, b.pre_number); c != 0) return c;
  }
  if (auto c = Cmp(a.has_post, b.has_post); c != 0) return c;
  if (auto c = Cmp(a.post_number, b.post_number); c != 0) return c;
  // No dev release sorts after any dev release.
  if (auto c = Cmp(!a.has_dev, !b.has_dev); c != 0) return c;
  if (auto c = Cmp(a.dev_number, b.dev_number); c != 0) return c;
  if (auto c = Cmp(a.has_local, b.has_local); c != 0) return c;
  const std::size_t n = std::min(a.local.size(), b.local.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto& x = a.local[i];
    const auto& y = b.local[i];
    if (auto c = Cmp(x.is_number, y.is_number); c != 0) return c;
    if (x.is_number) {
      if (auto c = Cmp(x.number, y.number); c != 0) return c;
    } else if (auto c = x.word <=> y.word; c != 0) {
      return c;
    }
  }
  return Cmp(a.local.size(), b.local.size());
}

// A semantic version: core numbers and pre-release identifiers (build metadata has no order).
struct Semver {
  uint64_t major = 0;
  uint64_t minor = 0;
  uint64_t patch = 0;
  struct Identifier {
    bool is_number;
    uint64_t number;
    std::string word;
  };
  std::vector<Identifier> pre;
};

bool IsIdentifierChar(char c) {
  return IsAsciiDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

// A number without leading zeros, as semver requires for the core and numeric identifiers.
bool SemverNumber(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > kMaxDigits || (s.size() > 1 && s[0] == '0')) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsAsciiDigit(c)) return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// Splits `s` at '.' into non-empty identifiers of [0-9A-Za-z-].
bool Identifiers(std::string_view s, std::vector<std::string_view>* out) {
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = s.find('.', start);
    const std::string_view id = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (id.empty()) return false;
    for (char c : id) {
      if (!IsIdentifierChar(c)) return false;
    }
    out->push_back(id);
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::optional<Semver> ParseSemver(std::string_view raw) {
  std::string_view s = TrimSpace(raw);
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  if (const std::size_t plus = s.find('+'); plus != std::string_view::npos) {
    std::vector<std::string_view> build;
    if (!Identifiers(s.substr(plus + 1), &build)) return std::nullopt;
    s = s.substr(0, plus);
  }
  std::string_view pre;
  bool has_pre = false;
  if (const std::size_t dash = s.find('-'); dash != std::string_view::npos) {
    pre = s.substr(dash + 1);
    has_pre = true;
    s = s.substr(0, dash);
  }
  std::vector<std::string_view> core;
  if (!Identifiers(s, &core) || core.size() != 3) return std::nullopt;
  Semver v;
  if (!SemverNumber(core[0], &v.major) || !SemverNumber(core[1], &v.minor) ||
      !SemverNumber(core[2], &v.patch)) {
    return std::nullopt;
  }
  if (has_pre) {
    std::vector<std::string_view> ids;
    if (!Identifiers(pre, &ids)) return std::nullopt;
    for (std::string_view id : ids) {
      bool numeric = true;
      for (char c : id) numeric = numeric && IsAsciiDigit(c);
      Semver::Identifier identifier{numeric, 0, ""};
      if (numeric) {
        if (!SemverNumber(id, &identifier.number)) return std::nullopt;
      } else {
        identifier.word = std::string(id);
      }
      v.pre.push_back(std::move(identifier));
    }
  }
  return v;
}

std::strong_ordering CompareSemver(const Semver& a, const Semver& b) {
  if (auto c = Cmp(a.major, b.major); c != 0) return c;
  if (auto c = Cmp(a.minor, b.minor); c != 0) return c;
  if (auto c = Cmp(a.patch, b.patch); c != 0) return c;
  // A release sorts after its pre-releases.
  if (a.pre.empty() || b.pre.empty()) return Cmp(a.pre.empty(), b.pre.empty());
  const std::size_t n = std::min(a.pre.size(), b.pre.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto& x = a.pre[i];
    const auto& y = b.pre[i];
    // Numeric identifiers sort before alphanumeric ones.
    if (auto c = Cmp(!x.is_number, !y.is_number); c != 0) return c;
    if (x.is_number) {
      if (auto c = Cmp(x.number, y.number); c != 0) return c;
    } else if (auto c = x.word <=> y.word; c != 0) {
      return c;
    }
  }
  return Cmp(a.pre.size(), b.pre.size());
}

}  // namespace

bool IsVersion(std::string_view text, VersionScheme scheme) {
  if (scheme != VersionScheme::kSemver && ParsePep440(text)) return true;
  return scheme != VersionScheme::kPep440 && ParseSemver(text).has_value();
}

std::optional<std::strong_ordering> CompareVersions(std::string_view a, std::string_view b,
                                                    VersionScheme scheme) {
  if (scheme != VersionScheme::kSemver) {
    const std::optional<Pep440> pa = ParsePep440(a);
    const std::optional<Pep440> pb = ParsePep440(b);
    if (pa && pb) return ComparePep440(*pa, *pb);
    if (scheme == VersionScheme::kPep440) return std::nullopt;
  }
  const std::optional<Semver> sa = ParseSemver(a);
  const std::optional<Semver> sb = ParseSemver(b);
  if (sa && sb) return CompareSemver(*sa, *sb);
  return std::nullopt;
}

bool IsNewerVersion(std::string_view a, std::string_view b, VersionScheme scheme) {
  const auto order = CompareVersions(a, b, scheme);
  return order.has_value() && *order == std::strong_ordering::greater;
}

}  // namespace faultline
