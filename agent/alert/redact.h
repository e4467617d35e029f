// RedactSecrets: removes credentials from log text before it leaves the host in a notification
// (docs/design.md section 5). Build and training logs print them more often than anyone wants: a
// `pip install` from a private index with the password in the URL, a `curl -H "Authorization:
// Bearer ..."` echoed by `set -x`, an `HF_TOKEN=hf_...` in a dumped environment.
//
// What is replaced by `[REDACTED]`:
//   - credentials in URLs (`https://user:password@host`): the user and password;
//   - the value of `Authorization:` / `Proxy-Authorization:` / `X-Api-Key:` headers;
//   - `key = value` pairs whose key names a secret (password, passwd, secret, token, api_key,
//     access_key, private_key, client_secret, auth, credentials), in any case and with any prefix
//     (`AWS_SECRET_ACCESS_KEY=`, `"hf_token": "`);
//   - provider tokens recognised by their shape wherever they appear: GitHub (ghp_, gho_, ghu_,
//     ghs_, ghr_, github_pat_), GitLab (glpat-), Slack (xox?-, xapp-, incoming-webhook paths),
//     AWS access key ids (AKIA/ASIA), Hugging Face (hf_), OpenAI and Anthropic (sk-), Google
//     (AIza), Stripe (sk_live_, rk_test_, ...), npm (npm_), PyPI (pypi-), JSON Web Tokens,
//     Standard Webhooks secrets (whsec_);
//   - PEM private key blocks, from BEGIN to END (or to the end of the text when cut).
//
// The patterns are compiled once, on first use; RE2 keeps the cost linear in the text. Redaction
// runs when a notification is built, never on the per-line path. Thread-safe; never throws.
#ifndef FAULTLINE_ALERT_REDACT_H_
#define FAULTLINE_ALERT_REDACT_H_

#include <string>
#include <string_view>

namespace faultline {

inline constexpr std::string_view kRedacted = "[REDACTED]";

// `text` with every secret described above replaced by kRedacted.
std::string RedactSecrets(std::string_view text);

}  // namespace faultline

#endif  // FAULTLINE_ALERT_REDACT_H_
