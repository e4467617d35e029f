#include "agent/alert/webhook_signing.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace faultline {
namespace {

// The spec's range for the random part of a secret.
constexpr std::size_t kMinSecretBytes = 24;
constexpr std::size_t kMaxSecretBytes = 64;
constexpr std::string_view kSecretPrefix = "whsec_";

}  // namespace

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &length);
  return std::string(reinterpret_cast<const char*>(mac), length);
}

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(n));
  // EVP_DecodeBlock keeps the zero bytes that padding stands for: drop one per '='.
  for (std::size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) {
    if (out.empty()) return std::nullopt;
    out.pop_back();
  }
  return out;
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xF]);
  }
  return out;
}

Result<std::string> ParseWebhookSecret(std::string_view secret) {
  if (secret.starts_with(kSecretPrefix)) secret.remove_prefix(kSecretPrefix.size());
  std::optional<std::string> key = Base64Decode(secret);
  if (!key) {
    return Failure("a webhook secret is 'whsec_' followed by base64; this one does not decode");
  }
  if (key->size() < kMinSecretBytes || key->size() > kMaxSecretBytes) {
    return Failure(
        "a webhook secret must decode to 24..64 bytes (Standard Webhooks); this one is " +
        std::to_string(key->size()));
  }
  return std::move(*key);
}

std::string StandardWebhookSignature(std::string_view key, std::string_view id, int64_t timestamp,
                                     std::string_view body) {
  std::string content;
  content.reserve(id.size() + body.size() + 24);
  content.append(id);
  content.push_back('.');
  content.append(std::to_string(timestamp));
  content.push_back('.');
  content.append(body);
  return "v1," + Base64Encode(HmacSha256(key, content));
}

std::string StandardWebhookSignatureHeader(const std::vector<std::string>& keys,
                                           std::string_view id, int64_t timestamp,
                                           std::string_view body) {
  std::string header;
  for (const std::string& key : keys) {
    if (!header.empty()) header.push_back(' ');
    header += StandardWebhookSignature(key, id, timestamp, body);
  }
  return header;
}

std::string GithubSignature256(std::string_view secret, std::string_view body) {
  return "sha256=" + HexEncode(HmacSha256(secret, body));
}

}  // namespace faultline
