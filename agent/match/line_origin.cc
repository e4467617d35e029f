#include "agent/match/line_origin.h"

#include <array>
#include <cstddef>

#include "agent/core/ascii.h"

namespace faultline {
namespace {

// Prefixes stacked on one line by nested tools (pdsh, srun --label, torchrun, torch): more would
// be unusual, and the bound keeps the parser's cost fixed.
constexpr int kMaxPrefixes = 4;
constexpr size_t kMaxHostBytes = 64;
// Longest "(Ray ...)" prefix worth looking at.
constexpr size_t kMaxBracketBytes = 96;
// Where in a line the in-line forms are looked for: they sit near the start ("[PG 0 Rank 3]
// Watchdog caught ...", "srun: error: ..."), and a hit line can be a MiB of progress bar.
constexpr size_t kMaxInlineBytes = 512;

bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsWordChar(char c) {
  return IsAsciiDigit(c) || IsLower(c) || (c >= 'A' && c <= 'Z') || c == '_';
}
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (Lower(s[i]) != prefix[i]) return false;
  }
  return true;
}

void SkipSpaces(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}

// Takes a rank number (1 to 7 digits) from the front of `s`.
bool TakeNumber(std::string_view& s, int* value) {
  size_t n = 0;
  int v = 0;
  while (n < s.size() && IsAsciiDigit(s[n])) {
    if (n == 7) return false;
    v = v * 10 + (s[n] - '0');
    ++n;
  }
  if (n == 0) return false;
  s.remove_prefix(n);
  *value = v;
  return true;
}

bool TakeChar(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

// "[rank3]:", "[rank3]", "[Rank 3]:", "[default3]:".
bool TakeBracketRank(std::string_view& s, int* rank) {
  std::string_view r = s;
  if (!TakeChar(r, '[')) return false;
  if (StartsWithNoCase(r, "rank")) {
    r.remove_prefix(4);
  } else if (StartsWithNoCase(r, "default")) {
    r.remove_prefix(7);
  } else {
    return false;
  }
  TakeChar(r, ' ');
  if (!TakeNumber(r, rank) || !TakeChar(r, ']')) return false;
  TakeChar(r, ':');
  s = r;
  return true;
}

// OpenMPI --tag-output: "[1,3]<stderr>:".
bool TakeMpiTag(std::string_view& s, int* rank) {
  std::string_view r = s;
  int job = 0;
  if (!TakeChar(r, '[') || !TakeNumber(r, &job) || !TakeChar(r, ',') || !TakeNumber(r, rank) ||
      !TakeChar(r, ']')) {
    return false;
  }
  for (std::string_view stream : {"<stdout>:", "<stderr>:", "<stddiag>:"}) {
    if (r.substr(0, stream.size()) == stream) {
      r.remove_prefix(stream.size());
      s = r;
      return true;
    }
  }
  return false;
}

// "rank3:".
bool TakeRankColon(std::string_view& s, int* rank) {
  std::string_view r = s;
  if (!StartsWithNoCase(r, "rank")) return false;
  r.remove_prefix(4);
  if (!TakeNumber(r, rank) || !TakeChar(r, ':')) return false;
  s = r;
  return true;
}

// srun --label: "0: ", "  12: " (the label is padded to the widest task id).
bool TakeTaskLabel(std::string_view& s, int* rank) {
  std::string_view r = s;
  SkipSpaces(r);
  if (!TakeNumber(r, rank) || !TakeChar(r, ':')) return false;
  if (!r.empty() && r.front() != ' ' && r.front() != '\t') return false;  // 12:00:00 is a time
  s = r;
  return true;
}

// Ray: "(RayWorkerWrapper pid=4711, ip=10.0.0.5) ", "(pid=4711) ".
bool TakeRayPrefix(std::string_view& s, std::string_view* host) {
  if (s.empty() || s.front() != '(') return false;
  const size_t close = s.substr(0, kMaxBracketBytes).find(')');
  if (close == std::string_view::npos) return false;
  const std::string_view inside = s.substr(1, close - 1);
  if (inside.find("pid=") == std::string_view::npos) return false;
  if (const size_t ip = inside.find("ip="); ip != std::string_view::npos) {
    std::string_view value = inside.substr(ip + 3);
    value = value.substr(0, value.find(','));
    if (!value.empty()) *host = value;
  }
  s.remove_prefix(close + 1);
  return true;
}

bool IsIpv4(std::string_view s) {
  int parts = 0;
  while (true) {
    int octet = 0;
    std::string_view before = s;
    if (!TakeNumber(s, &octet) || before.size() - s.size() > 3 || octet > 255) return false;
    ++parts;
    if (s.empty()) return parts == 4;
    if (!TakeChar(s, '.')) return false;
  }
}

// Shaped like a cluster node's name: lower-case labels of [a-z0-9-], the first starting with a
// letter and ending in a digit, and not a word that tools print before a colon themselves.
bool IsNodeName(std::string_view name) {
  if (name.empty() || name.size() > kMaxHostBytes) return false;
  if (IsIpv4(name)) return true;
  const std::string_view first = name.substr(0, name.find('.'));
  if (first.empty() || !IsLower(first.front()) || !IsAsciiDigit(first.back())) return false;
  // Compiler drivers name themselves before their errors: collect2:, cc1:, gcc-12:, clang-14:.
  static constexpr std::array<std::string_view, 16> kNotHosts = {
      "python", "pip",     "step", "epoch", "iter", "batch", "layer", "line",
      "rank",   "default", "gfx",  "collect", "cc1", "gcc", "clang", "cpp"};
  for (std::string_view word : kNotHosts) {
    if (first.substr(0, word.size()) == word) return false;
  }
  size_t label_start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      const std::string_view label = name.substr(label_start, i - label_start);
      if (label.empty() || label == "so") return false;  // libcudart.so.11.0
      label_start = i + 1;
      continue;
    }
    if (!IsLower(name[i]) && !IsAsciiDigit(name[i]) && name[i] != '-') return false;
  }
  return true;
}

// pdsh / clush: "node01: ".
bool TakeHostPrefix(std::string_view& s, std::string_view* host) {
  const size_t colon = s.substr(0, kMaxHostBytes + 1).find(':');
  if (colon == std::string_view::npos || colon + 1 >= s.size() || s[colon + 1] != ' ') {
    return false;
  }
  const std::string_view name = s.substr(0, colon);
  if (!IsNodeName(name)) return false;
  *host = name;
  s.remove_prefix(colon + 1);
  return true;
}

// A line number that a user's paste or a CI viewer put in front: "[80746] ". Says nothing of the
// origin, but hides the prefixes behind it.
bool TakePasteLineNumber(std::string_view& s) {
  std::string_view r = s;
  int ignored = 0;
  if (!TakeChar(r, '[') || !TakeNumber(r, &ignored) || !TakeChar(r, ']') || !TakeChar(r, ' ')) {
    return false;
  }
  s = r;
  return true;
}

// Removes the stacked prefixes from the front of `s`, noting what they say in `origin`. An inner
// prefix is the more specific one (torch's [rank5] inside the srun task of the node's launcher),
// so it overrides what an outer one said.
void StripPrefixes(std::string_view& s, LineOrigin& origin) {
  SkipSpaces(s);
  for (int i = 0; i < kMaxPrefixes; ++i) {
    int rank = LineOrigin::kNoRank;
    std::string_view host;
    if (TakeBracketRank(s, &rank) || TakeMpiTag(s, &rank) || TakeRankColon(s, &rank) ||
        TakeTaskLabel(s, &rank)) {
      if (rank <= LineOrigin::kMaxRank) origin.rank = rank;
    } else if (TakeRayPrefix(s, &host) || TakeHostPrefix(s, &host)) {
      if (!host.empty()) origin.host = host;
    } else if (!TakePasteLineNumber(s)) {
      return;
    }
    SkipSpaces(s);
  }
}

// "[Rank 3]", "[PG 1 Rank 3]", "[PG ID 0 PG GUID 0(default_pg) Rank 3]" anywhere in the line.
bool FindProcessGroupRank(std::string_view line, int* rank) {
  for (size_t at = line.find("Rank "); at != std::string_view::npos;
       at = line.find("Rank ", at + 1)) {
    if (at == 0 || (line[at - 1] != '[' && line[at - 1] != ' ')) continue;
    std::string_view r = line.substr(at + 5);
    if (TakeNumber(r, rank) && TakeChar(r, ']')) return true;
  }
  return false;
}

// "rank: 3", "rank = 3", "rank=3", but not "local_rank: 3" nor "local rank 3".
bool FindRankKey(std::string_view line, int* rank) {
  for (size_t at = 0; at + 4 <= line.size(); ++at) {
    if (Lower(line[at]) != 'r' || !StartsWithNoCase(line.substr(at), "rank")) continue;
    if (at > 0 && IsWordChar(line[at - 1])) continue;
    if (at >= 6 && StartsWithNoCase(line.substr(at - 6), "local ")) continue;
    std::string_view r = line.substr(at + 4);
    SkipSpaces(r);
    if (!TakeChar(r, ':') && !TakeChar(r, '=')) continue;
    SkipSpaces(r);
    if (TakeNumber(r, rank)) return true;
  }
  return false;
}

// "srun: error: node07: task 3: Exited with exit code 1", "srun: error: node07: tasks 0-3: Killed".
void FindSrunTask(std::string_view line, LineOrigin& origin) {
  constexpr std::string_view kSrun = "srun: error: ";
  const size_t at = line.find(kSrun);
  if (at == std::string_view::npos) return;
  std::string_view r = line.substr(at + kSrun.size());
  const size_t colon = r.substr(0, kMaxHostBytes + 1).find(": task");
  if (colon == std::string_view::npos || colon == 0) return;
  if (origin.host.empty()) origin.host = r.substr(0, colon);
  r.remove_prefix(colon + 6);
  int rank = 0;
  if (TakeChar(r, ' ') && TakeNumber(r, &rank) && TakeChar(r, ':') && !origin.has_rank()) {
    origin.rank = rank;
  }
}

// "slurmstepd: error: *** JOB 42 ON node07 CANCELLED AT ... DUE TO TIME LIMIT ***" (also STEP).
void FindSlurmNode(std::string_view line, LineOrigin& origin) {
  const size_t stars = line.find("*** ");
  if (stars == std::string_view::npos) return;
  const std::string_view r = line.substr(stars + 4);
  if (r.substr(0, 4) != "JOB " && r.substr(0, 5) != "STEP ") return;
  const size_t on = r.find(" ON ");
  if (on == std::string_view::npos) return;
  std::string_view node = r.substr(on + 4);
  node = node.substr(0, node.find(' '));
  if (!node.empty() && node.size() <= kMaxHostBytes) origin.host = node;
}

// torchrun summary lines are "  <key padded to 10>: <value>". Returns the key, or empty.
std::string_view SummaryKey(std::string_view line, std::string_view* value) {
  SkipSpaces(line);
  size_t n = 0;
  while (n < line.size() && (IsLower(line[n]) || line[n] == '_')) ++n;
  if (n == 0) return {};
  const std::string_view key = line.substr(0, n);
  std::string_view r = line.substr(n);
  SkipSpaces(r);
  if (!TakeChar(r, ':')) return {};
  SkipSpaces(r);
  *value = r;
  return key;
}

// Reads host and rank of the torchrun summary entry that `line` (one of its key lines) is part of
// from the lines above it, up to the entry's "[N]:" header.
void ReadSummaryEntry(std::string_view line, std::span<const std::string_view> before,
                      LineOrigin& origin) {
  std::string_view value;
  const std::string_view key = SummaryKey(line, &value);
  if (key != "exitcode" && key != "error_file" && key != "traceback" && key != "rank" &&
      key != "host") {
    return;
  }
  for (size_t i = before.size() + 1; i-- > 0;) {
    std::string_view text = i == before.size() ? line : before[i];
    LineOrigin ignored;
    StripPrefixes(text, ignored);
    std::string_view header = text;
    int index = 0;
    if (TakeChar(header, '[') && TakeNumber(header, &index) && TakeChar(header, ']') &&
        TakeChar(header, ':')) {
      origin.first_observed = index == 0;
      return;
    }
    const std::string_view k = SummaryKey(text, &value);
    if (k == "rank") {
      int rank = 0;
      if (TakeNumber(value, &rank)) origin.rank = rank;
    } else if (k == "host") {
      value = value.substr(0, value.find(' '));
      if (!value.empty() && value.size() <= kMaxHostBytes) origin.host = value;
    } else if (k != "time" && k != "exitcode" && k != "error_file" && k != "traceback") {
      return;
    }
  }
}

}  // namespace

LineOrigin ParseLineOrigin(std::string_view line, std::span<const std::string_view> before) {
  LineOrigin origin;
  std::string_view rest = line;
  StripPrefixes(rest, origin);
  rest = rest.substr(0, kMaxInlineBytes);
  int rank = 0;
  if (!origin.has_rank() && (FindProcessGroupRank(rest, &rank) || FindRankKey(rest, &rank)) &&
      rank <= LineOrigin::kMaxRank) {
    origin.rank = rank;
  }
  FindSrunTask(rest, origin);
  if (origin.host.empty()) FindSlurmNode(rest, origin);
  ReadSummaryEntry(rest, before, origin);
  return origin;
}

}  // namespace faultline
