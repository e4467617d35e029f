#include "agent/discover/masker.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace faultline {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Mask(std::string_view line) {
  std::vector<std::string> tokens;
  MaskLine(line, tokens);
  return tokens;
}

TEST(Masker, NumbersSignedDecimalAndWithUnitsAreVariables) {
  EXPECT_THAT(Mask("exits with return code = -9 after 12ms using 3.5GiB (50%)"),
              ElementsAre("exits", "with", "return", "code", "=", "<*>", "after", "<*>", "using",
                          "<*>", "(<*>)"));
  EXPECT_THAT(Mask("Tried to allocate 2.12 GiB"), ElementsAre("Tried", "to", "allocate", "<*>", "GiB"));
}

TEST(Masker, CodesThatNameAFailureStay) {
  EXPECT_THAT(Mask("LINK : fatal error LNK1181: cannot open"),
              ElementsAre("LINK", ":", "fatal", "error", "LNK1181:", "cannot", "open"));
  EXPECT_THAT(Mask("no kernel image for sm_86 on rank3"),
              ElementsAre("no", "kernel", "image", "for", "sm_86", "on", "rank3"));
}

TEST(Masker, HexAndHexIdentifiers) {
  EXPECT_THAT(Mask("HRESULT = 0x800f080d at 7f3a2b1c9d8e"),
              ElementsAre("HRESULT", "=", "<*>", "at", "<*>"));
  // Eight hex letters with no digit are a word.
  EXPECT_THAT(Mask("deadbeef"), ElementsAre("deadbeef"));
}

TEST(Masker, PathsAbsoluteRelativeAndWindows) {
  EXPECT_THAT(Mask("/src/csrc/adam.cu:12:10: fatal error: libaio.h: No such file"),
              ElementsAre("<*>", "fatal", "error:", "libaio.h:", "No", "such", "file"));
  EXPECT_THAT(Mask("open C:\\build\\x\\aio.obj and torch/nn/modules/module.py:12"),
              ElementsAre("open", "<*>", "and", "<*>"));
  // One slash is not a path: HTTP/1.1 keeps its name.
  EXPECT_THAT(Mask("\"GET /v2/abc/servers?all=1 HTTP/1.1\""),
              ElementsAre("\"GET", "<*>", "HTTP/<*>\""));
}

TEST(Masker, AddressesAndUrls) {
  EXPECT_THAT(Mask("from 10.0.3.7:29500 to [::1] via 2607:f140:6000:8:c6b3:1ff:fecd:467f"),
              ElementsAre("from", "<*>", "to", "[::<*>]", "via", "<*>"));
  EXPECT_THAT(Mask("mac 00:1b:21:3a:4f:5e host node7.cluster.local:8080"),
              ElementsAre("mac", "<*>", "host", "<*>"));
  EXPECT_THAT(Mask("GET https://huggingface.co/api/models?x=1 failed"),
              ElementsAre("GET", "<*>", "failed"));
  // A clock time is not an IPv6 address, but it is a number.
  EXPECT_THAT(Mask("at 11:35:59"), ElementsAre("at", "<*>"));
}

TEST(Masker, UuidsAndDates) {
  EXPECT_THAT(Mask("[instance: b9000564-fe1a-409b-b8cc-1e88b294cd1d] VM Paused"),
              ElementsAre("[instance:", "<*>]", "VM", "Paused"));
  EXPECT_THAT(Mask("connection at Sat Jul  9 11:35:59 2005 closed"),
              ElementsAre("connection", "at", "<*>", "closed"));
  EXPECT_THAT(Mask("2024-06-01 12:00:00,123 ERROR x"), ElementsAre("<*>", "ERROR", "x"));
  EXPECT_THAT(Mask("t=2024-06-01T12:00:00.5+02:00"), ElementsAre("t=", "<*>"));
}

TEST(Masker, QuotedStringsWithoutSpaces) {
  EXPECT_THAT(Mask("No module named 'flash_attn' in `site`"),
              ElementsAre("No", "module", "named", "<*>", "in", "<*>"));
  // A quoted phrase is kept as words, and an apostrophe is no quote.
  EXPECT_THAT(Mask("isn't \"a b\""), ElementsAre("isn't", "\"a", "b\""));
}

TEST(Masker, KeyValueSplitsAtTheFirstEquals) {
  EXPECT_THAT(Mask("uid=0 tty=ssh rhost=5.36.59.76 =x"),
              ElementsAre("uid=", "<*>", "tty=", "ssh", "rhost=", "<*>", "=x"));
}

TEST(Masker, WhitespaceRunsAndEmptyLines) {
  EXPECT_THAT(Mask("  a \t b  "), ElementsAre("a", "b"));
  EXPECT_TRUE(Mask("").empty());
  EXPECT_TRUE(Mask("   ").empty());
}

TEST(Masker, BytesAboveAsciiAreKeptAndNeverSplit) {
  EXPECT_THAT(Mask("已杀死 12"), ElementsAre("已杀死", "<*>"));
}

TEST(Masker, VariableLike) {
  EXPECT_TRUE(IsVariableLike("<*>"));
  EXPECT_TRUE(IsVariableLike("node-<*>"));
  EXPECT_TRUE(IsVariableLike("ee0"));
  EXPECT_FALSE(IsVariableLike("Resumed"));
  EXPECT_FALSE(IsVariableLike("com.apple.heartbeat:"));
}

}  // namespace
}  // namespace faultline
