#include "agent/alert/redact.h"

#include <re2/re2.h>

#include <memory>
#include <utility>
#include <vector>

namespace faultline {
namespace {

struct Replacement {
  std::unique_ptr<RE2> pattern;
  std::string rewrite;
};

// In order: whole blocks and structured places first, so that a later, shorter pattern does not
// cut a token in half and leave its tail readable.
std::vector<Replacement> CompileReplacements() {
  const std::pair<const char*, const char*> kPatterns[] = {
      // PEM private keys: the whole block, or the rest of the text when the block was cut.
      {R"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z))",
       "[REDACTED PRIVATE KEY]"},
      // user:password@ in any URL.
      {R"(\b([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s:@]+:[^/\s@]+@)", "\\1[REDACTED]@"},
      // Slack incoming webhooks carry their secret in the path.
      {R"(hooks\.slack\.com/(services|workflows|triggers)/[A-Za-z0-9/_\-]+)",
       "hooks.slack.com/\\1/[REDACTED]"},
      // Authorization-style headers, with or without a scheme word.
      {R"((?i)\b((?:proxy-)?authorization|x-api-key|api-key|x-auth-token)(["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token|digest|negotiate|apikey)\s+)?[^\s"',;]+)",
       "\\1\\2[REDACTED]"},
      // Provider tokens by shape.
      {R"(\bgh[pousr]_[A-Za-z0-9]{20,255}\b)", "[REDACTED]"},
      {R"(\bgithub_pat_[A-Za-z0-9_]{20,255}\b)", "[REDACTED]"},
      {R"(\bglpat-[A-Za-z0-9_\-]{20,}\b)", "[REDACTED]"},
      {R"(\bxox[abposr]-[A-Za-z0-9\-]{10,}\b)", "[REDACTED]"},
      {R"(\bxapp-[A-Za-z0-9\-]{10,}\b)", "[REDACTED]"},
      {R"(\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)", "[REDACTED]"},
      {R"(\bhf_[A-Za-z0-9]{30,}\b)", "[REDACTED]"},
      {R"(\bsk-[A-Za-z0-9_\-]{20,}\b)", "[REDACTED]"},
      {R"(\bAIza[0-9A-Za-z_\-]{35}\b)", "[REDACTED]"},
      {R"(\b[rs]k_(?:live|test)_[0-9a-zA-Z]{16,}\b)", "[REDACTED]"},
      {R"(\bnpm_[A-Za-z0-9]{36}\b)", "[REDACTED]"},
      {R"(\bpypi-[A-Za-z0-9_\-]{40,}\b)", "[REDACTED]"},
      {R"(\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})", "[REDACTED]"},
      {R"(\bwhsec_[A-Za-z0-9+/=]{16,})", "[REDACTED]"},
      // key=value and "key": "value" where the key names a secret.
      {R"((?i)\b([a-z0-9_.\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|auth|credentials?)["']?\s*[:=]\s*["']?)([^\s"',;&]+))",
       "\\1[REDACTED]"},
  };
  std::vector<Replacement> out;
  RE2::Options options;
  options.set_log_errors(false);
  for (const auto& [pattern, rewrite] : kPatterns) {
    out.push_back({std::make_unique<RE2>(pattern, options), rewrite});
  }
  return out;
}

const std::vector<Replacement>& Replacements() {
  static const std::vector<Replacement> replacements = CompileReplacements();
  return replacements;
}

}  // namespace

std::string RedactSecrets(std::string_view text) {
  std::string out(text);
  for (const Replacement& r : Replacements()) {
    if (r.pattern->ok()) RE2::GlobalReplace(&out, *r.pattern, r.rewrite);
  }
  return out;
}

}  // namespace faultline
