#include "agent/api/status_page.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "agent/api/status_json.h"

namespace faultline {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const StatusReport::TimePoint kNow{std::chrono::seconds(1780000000)};

StatusReport ReportWithHit(std::string text, std::vector<std::string> context) {
  StatusReport r;
  r.version = "1.2.3";
  r.generated_at = kNow;
  r.started_at = kNow - std::chrono::hours(2);
  StatusReport::Signature& s = r.signatures.emplace_back();
  s.signature = "gpu.cuda.oom{gpu=0}";
  s.rule_id = "gpu.cuda.oom";
  s.title = "CUDA out of memory";
  s.worst_severity = Severity::kError;
  s.count = 42;
  s.first_seen = kNow - std::chrono::minutes(90);
  s.last_seen = kNow - std::chrono::seconds(7);
  FindingEvent hit;
  hit.rule_id = s.rule_id;
  hit.signature = s.signature;
  hit.source_id = "train";
  hit.stream_name = "/var/log/train.log";
  hit.line_number = 812;
  hit.observed_at = s.last_seen;
  hit.text = std::move(text);
  hit.context_before = std::move(context);
  s.last_hit = hit;
  r.signatures_total = 1;
  StatusReport::Source& source = r.sources.emplace_back();
  source.id = "train";
  source.lines = 1000;
  source.bytes = 65536;
  source.status.type = "file";
  source.status.streams.push_back({"/var/log/train.log", 60000, 5536, true, false});
  source.status.problems.push_back({"/var/log/secret.log", "Permission denied"});
  r.rules.loaded = 239;
  r.rules.patterns = 512;
  r.rules.paths = {"/etc/faultline/rules"};
  r.rules.loaded_at = r.started_at;
  return r;
}

TEST(StatusPage, ShowsSignaturesCountsTimesAndTheLastHitWithItsContext) {
  const std::string page = RenderStatusHtml(ReportWithHit(
      "torch.OutOfMemoryError: CUDA out of memory.", {"step 41", "step 42 loss=1.3"}));
  EXPECT_THAT(page, HasSubstr("<meta http-equiv=\"refresh\" content=\"5\">"));
  EXPECT_THAT(page, HasSubstr("<code class=\"sig\">gpu.cuda.oom{gpu=0}</code>"));
  EXPECT_THAT(page, HasSubstr("CUDA out of memory</div>"));
  EXPECT_THAT(page, HasSubstr("<td class=\"n\">42</td>"));
  EXPECT_THAT(page, HasSubstr("90 min ago"));
  EXPECT_THAT(page, HasSubstr("7 s ago"));
  EXPECT_THAT(page, HasSubstr("step 41\nstep 42 loss=1.3\n<span class=\"hit\">torch.OutOfMemory"));
  EXPECT_THAT(page, HasSubstr("/var/log/train.log:812"));
  EXPECT_THAT(page, HasSubstr("lag <b>5.4 KiB</b>"));
  EXPECT_THAT(page, HasSubstr("/var/log/secret.log</code>: Permission denied"));
  EXPECT_THAT(page, HasSubstr("239 rules loaded (512 patterns)"));
  EXPECT_THAT(page, HasSubstr("No reload since the agent started"));
  // No lifecycle tracker yet: no state column.
  EXPECT_THAT(page, Not(HasSubstr("<th>State</th>")));
}

TEST(StatusPage, HostileLogTextRendersInertAndBounded) {
  const std::string script = "<script>document.body.dataset.x='pw'+'ned'</script>";
  const std::string huge(1 << 20, 'A');
  const std::string page = RenderStatusHtml(
      ReportWithHit(script + " evil\u202Etxt.exe " + huge,
                    {"<img src=x onerror=alert(1)>", "</pre></td></tr></table><h1>x", huge}));
  EXPECT_THAT(page, Not(HasSubstr("<script")));
  EXPECT_THAT(page, Not(HasSubstr("<img")));
  EXPECT_THAT(page, Not(HasSubstr("</pre></td></tr></table><h1>x")));
  EXPECT_THAT(page, Not(HasSubstr("\u202E")));
  EXPECT_THAT(page, HasSubstr("&lt;script&gt;document.body.dataset.x=&#39;pw&#39;+&#39;ned&#39;"));
  EXPECT_THAT(page, HasSubstr("evil<span class=\"esc\">U+202E</span>txt.exe"));
  // Two megabyte lines on the page cost at most kStatusMaxLineBytes each.
  EXPECT_LT(page.size(), 20000u);
  EXPECT_THAT(page, HasSubstr("more bytes</span>"));
}

TEST(StatusPage, HeadersForbidEveryScript) {
  bool csp = false;
  for (const auto& [name, value] : StatusPageHeaders()) {
    if (name == "Content-Security-Policy") {
      csp = true;
      EXPECT_THAT(value, HasSubstr("default-src 'none'"));
      EXPECT_THAT(value, Not(HasSubstr("script-src")));
    }
  }
  EXPECT_TRUE(csp);
}

TEST(StatusPage, ShowsTheStateWhenTheTrackerGivesOneAndTheLastReload) {
  StatusReport r = ReportWithHit("x", {});
  r.signatures[0].state = "regressed";
  r.last_reload = StatusReport::Reload{.at = kNow - std::chrono::seconds(3),
                                       .trigger = "SIGHUP",
                                       .ok = false,
                                       .errors = {"/etc/f.yaml:4: key 'http.listen': <bad>"},
                                       .warnings = {},
                                       .duration_ms = 12.5,
                                       .apply_ms = 1.5};
  r.reloads_failed = 1;
  const std::string page = RenderStatusHtml(r);
  EXPECT_THAT(page, HasSubstr("<th>State</th>"));
  EXPECT_THAT(page, HasSubstr("<td>regressed</td>"));
  EXPECT_THAT(page, HasSubstr("0 applied, 1 rejected"));
  EXPECT_THAT(page, HasSubstr("by SIGHUP, <span class=\"bad\">rejected"));
  EXPECT_THAT(page, HasSubstr("key &#39;http.listen&#39;: &lt;bad&gt;"));
}

TEST(StatusJson, CarriesTheSameReport) {
  const nlohmann::json j =
      nlohmann::json::parse(StatusJson(ReportWithHit("<script>x</script>", {"before"})));
  ASSERT_EQ(1u, j["signatures"].size());
  const auto& s = j["signatures"][0];
  EXPECT_EQ("gpu.cuda.oom{gpu=0}", s["signature"]);
  EXPECT_EQ(42, s["count"]);
  EXPECT_EQ("error", s["worst_severity"]);
  EXPECT_TRUE(s["state"].is_null());
  EXPECT_EQ("<script>x</script>", s["last_hit"]["text"]);
  EXPECT_EQ("before", s["last_hit"]["context_before"][0]);
  EXPECT_EQ(812, s["last_hit"]["line"]);
  EXPECT_EQ("2026-05-28T20:26:33Z", s["last_seen"]);
  EXPECT_EQ("train", j["sources"][0]["id"]);
  EXPECT_EQ(5536, j["sources"][0]["streams"][0]["lag_bytes"]);
  EXPECT_EQ("Permission denied", j["sources"][0]["problems"][0]["message"]);
  EXPECT_EQ(239, j["rules"]["loaded"]);
  EXPECT_TRUE(j["reloads"]["last"].is_null());
}

StatusReport ReportWithUnrecognised(std::string first_text) {
  StatusReport r = ReportWithHit("x", {});
  r.unrecognised.enabled = true;
  r.unrecognised.templates_total = 3;
  r.unrecognised.lines = 9;
  r.unrecognised.evicted = 4;
  r.unrecognised.templates.push_back({.id = "7acfb9913d20",
                                      .text = "ShardCorruptError: shard <*> truncated",
                                      .cue = "python_exception",
                                      .severity = Severity::kError,
                                      .count = 7,
                                      .first_seen = kNow - std::chrono::minutes(30),
                                      .last_seen = kNow - std::chrono::seconds(3),
                                      .source_id = "train",
                                      .stream = "/var/log/train.log",
                                      .line_number = 55,
                                      .first_text = std::move(first_text)});
  return r;
}

TEST(StatusPage, ShowsUnrecognisedTemplatesWithTheirFirstLine) {
  const std::string page = RenderStatusHtml(ReportWithUnrecognised(
      "ShardCorruptError: shard /d/a.tar truncated <script>alert(1)</script>"));
  EXPECT_THAT(page, HasSubstr("Unrecognised errors (3 templates, 9 lines)"));
  EXPECT_THAT(page, HasSubstr("<code class=\"tpl\">ShardCorruptError: shard &lt;*&gt; truncated"
                              "</code>"));
  EXPECT_THAT(page, HasSubstr("<code>7acfb9913d20</code> · python_exception"));
  EXPECT_THAT(page, HasSubstr("<td class=\"n\">7</td>"));
  EXPECT_THAT(page, HasSubstr("/var/log/train.log:55"));
  EXPECT_THAT(page, HasSubstr("truncated &lt;script&gt;alert(1)&lt;/script&gt;</pre>"));
  EXPECT_THAT(page, Not(HasSubstr("<script")));
  EXPECT_THAT(page, HasSubstr("Showing the 1 with most lines"));
  EXPECT_THAT(page, HasSubstr("4 templates seen longest ago were forgotten"));
  // Before the sources.
  EXPECT_LT(page.find("id=\"unrecognised\""), page.find("id=\"sources\""));

  StatusReport off = ReportWithHit("x", {});
  EXPECT_THAT(RenderStatusHtml(off), HasSubstr("Off (<code>discover.enabled: false</code>)"));
}

TEST(StatusJson, CarriesTheUnrecognisedTemplates) {
  const nlohmann::json j = nlohmann::json::parse(StatusJson(ReportWithUnrecognised("line")));
  const auto& u = j["unrecognised"];
  EXPECT_EQ(true, u["enabled"]);
  EXPECT_EQ(3, u["templates_total"]);
  EXPECT_EQ(9, u["lines"]);
  EXPECT_EQ(4, u["evicted"]);
  ASSERT_EQ(1u, u["templates"].size());
  const auto& t = u["templates"][0];
  EXPECT_EQ("7acfb9913d20", t["template_id"]);
  EXPECT_EQ("unrecognised.7acfb9913d20", t["signature"]);
  EXPECT_EQ("ShardCorruptError: shard <*> truncated", t["template"]);
  EXPECT_EQ(7, t["count"]);
  EXPECT_EQ("error", t["severity"]);
  EXPECT_EQ("/var/log/train.log", t["first"]["file"]);
  EXPECT_EQ(55, t["first"]["line"]);
  EXPECT_EQ("line", t["first"]["text"]);
}

}  // namespace
}  // namespace faultline
