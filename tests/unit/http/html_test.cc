#include "agent/http/html.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace faultline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(HtmlText, EscapesTheFiveSpecials) {
  EXPECT_EQ("&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;",
            HtmlText("<a href=\"x\" title='y'>&</a>"));
}

TEST(HtmlText, AScriptLineBecomesText) {
  const std::string out = HtmlText("<script>alert(1)</script><img src=x onerror=alert(2)>");
  EXPECT_THAT(out, Not(HasSubstr("<")));
  EXPECT_THAT(out, Not(HasSubstr(">")));
  EXPECT_EQ("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;", out);
}

TEST(HtmlText, BidiOverridesAndIsolatesAreShownNotApplied) {
  // "evil\u202Etxt.exe" looks like "evilexe.txt" when the override is applied.
  const std::string out = HtmlText("evil\u202Etxt.exe \u2066x\u2069 \u200Fy \u061C");
  EXPECT_THAT(out, Not(HasSubstr("\u202E")));
  EXPECT_THAT(out, Not(HasSubstr("\u2066")));
  EXPECT_THAT(out, Not(HasSubstr("\u2069")));
  EXPECT_THAT(out, Not(HasSubstr("\u200F")));
  EXPECT_THAT(out, Not(HasSubstr("\u061C")));
  EXPECT_THAT(out, HasSubstr("evil<span class=\"esc\">U+202E</span>txt.exe"));
  EXPECT_THAT(out,
              HasSubstr("<span class=\"esc\">U+2066</span>x<span class=\"esc\">U+2069</span>"));
}

TEST(HtmlText, InvisibleCharactersAreShown) {
  const std::string out = HtmlText(
      "a\u200Bb\uFEFFc\u2028d\xC2\x85"
      "e\U000E0041f\u00ADg");
  EXPECT_EQ(
      "a<span class=\"esc\">U+200B</span>b<span class=\"esc\">U+FEFF</span>c"
      "<span class=\"esc\">U+2028</span>d<span class=\"esc\">U+0085</span>e"
      "<span class=\"esc\">U+E0041</span>f<span class=\"esc\">U+00AD</span>g",
      out);
}

TEST(HtmlText, ControlCodesBecomeControlPicturesButTabStays) {
  EXPECT_EQ("\u241B[31mred\u241B[0m\tx\u2400\u240A\u2421",
            HtmlText(std::string("\x1b[31mred\x1b[0m\tx\0\n\x7f", 17)));
}

TEST(HtmlText, InvalidUtf8BecomesReplacementCharacters) {
  // A lone continuation byte, an overlong '/', an encoded surrogate, a truncated sequence.
  EXPECT_EQ("a\uFFFDb\uFFFD\uFFFDc\uFFFD\uFFFD\uFFFDd\uFFFD\uFFFD", HtmlText("a\x80"
                                                                             "b\xC0\xAF"
                                                                             "c\xED\xA0\x80"
                                                                             "d\xE2\x82"));
  EXPECT_EQ("ü€😀", HtmlText("ü€😀"));
}

TEST(HtmlText, ALongLineIsCutAtACharacterBoundaryAndSaysSo) {
  std::string line = "x" + std::string(3000000, 'a');
  std::string out;
  AppendBoundedHtmlText(out, line, 100);
  EXPECT_LT(out.size(), 200u);
  EXPECT_THAT(out, HasSubstr("… 2999901 more bytes"));
  // Cutting inside a 3-byte character keeps none of it.
  out.clear();
  AppendBoundedHtmlText(out, "ab€cd", 4);
  EXPECT_EQ("ab<span class=\"cut\">… 5 more bytes</span>", out);
  out.clear();
  AppendBoundedHtmlText(out, "ab€cd", 5);
  EXPECT_EQ("ab€<span class=\"cut\">… 2 more bytes</span>", out);
}

}  // namespace
}  // namespace faultline
