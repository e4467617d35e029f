#include "agent/alert/redact.h"

#include <gtest/gtest.h>

#include <string>

namespace faultline {
namespace {

void ExpectRedacted(const std::string& line, const std::string& secret) {
  const std::string out = RedactSecrets(line);
  EXPECT_EQ(out.find(secret), std::string::npos) << line << "\n -> " << out;
  EXPECT_NE(out.find("REDACTED"), std::string::npos) << line << "\n -> " << out;
}

TEST(RedactTest, CredentialsInUrls) {
  ExpectRedacted("Looking in indexes: https://builder:s3cr3tPass@pypi.example.com/simple",
                 "s3cr3tPass");
  const std::string out =
      RedactSecrets("git clone https://oauth2:abcDEF123@gitlab.example.com/ml/repo.git");
  EXPECT_EQ("git clone https://[REDACTED]@gitlab.example.com/ml/repo.git", out);
}

TEST(RedactTest, AuthorizationHeaders) {
  ExpectRedacted("+ curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1Ni.abc' https://x", "eyJhbGci");
  ExpectRedacted("> Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA");
  ExpectRedacted("Proxy-Authorization: Negotiate YIIGhgYGKwYBBQUCoIIGejCCBnagMDAu", "YIIGhg");
  ExpectRedacted("headers={'X-Api-Key': 'k-7788aa99bb'}", "k-7788aa99bb");
  EXPECT_EQ("Authorization: [REDACTED]", RedactSecrets("Authorization: Bearer abc.def.ghi"));
}

TEST(RedactTest, KeyValueSecrets) {
  ExpectRedacted("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                 "wJalrXUtnFEMI");
  ExpectRedacted(R"({"hf_token": "abc123def456"})", "abc123def456");
  ExpectRedacted("WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "0123456789abcdef");
  ExpectRedacted("--password=hunter2 --user bob", "hunter2");
  ExpectRedacted("db_passwd: 'correct horse'", "correct");
}

TEST(RedactTest, ProviderTokensByShape) {
  const char* tokens[] = {
      "ghp_1234567890abcdefghijABCDEFGHIJ123456",
      "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
      "glpat-abcdefghij0123456789",
      "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
      "AKIAIOSFODNN7EXAMPLE",
      "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
      "sk-proj-abcdefghijklmnopqrstuvwx0123",
      "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
      "AIzaSyA-1234567890abcdefghijklmnopqrstu",
      "sk_live_0123456789abcdefABCDEF",
      "npm_abcdefghijklmnopqrstuvwxyz0123456789",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
      "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  };
  for (const char* token : tokens) {
    ExpectRedacted(std::string("using credential ") + token + " for upload", token);
  }
}

TEST(RedactTest, SlackWebhookUrls) {
  ExpectRedacted("posting to https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXX",
                 "XXXXXXXXXXXXXXXX");
}

TEST(RedactTest, PrivateKeyBlocksWholeOrCut) {
  ExpectRedacted(
      "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH "
      "PRIVATE KEY-----\nnext line",
      "b3BlbnNzaC1rZXktdjEAAAA");
  const std::string cut = RedactSecrets("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA");
  EXPECT_EQ(cut.find("MIIEpAIBAAKCAQEA"), std::string::npos) << cut;
  EXPECT_NE(RedactSecrets("x\n-----BEGIN PRIVATE KEY-----\nAAA\n-----END PRIVATE KEY-----\nnext")
                .find("next"),
            std::string::npos);
}

TEST(RedactTest, OrdinaryLogLinesAreLeftAlone) {
  for (const char* line : {
           "LINK : fatal error LNK1181: cannot open input file 'aio.lib'",
           "Successfully installed deepspeed-0.14.2 torch-2.3.1+cu121",
           "generation config: max_tokens=512 temperature=0.7",
           "Setting `pad_token_id` to `eos_token_id`:2 for open-end generation.",
           "see https://github.com/microsoft/DeepSpeed/issues/3196 for details",
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
           "tokenizer_config.json: 100%|##########| 1.2k/1.2k",
           "author: Jane Doe",
       }) {
    EXPECT_EQ(line, RedactSecrets(line));
  }
}

}  // namespace
}  // namespace faultline
