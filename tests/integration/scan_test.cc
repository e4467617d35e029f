// `faultline scan` as a user runs it: real files and stdin, the JSON schema, exit codes, and bad
// input that must be reported, never crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/integration/agent_folder.h"
#include "tests/integration/process.h"

namespace faultline {
namespace {

using ::testing::HasSubstr;
using testing::RunFaultline;

constexpr char kRules[] = R"(id: t.cuda_oom
title: CUDA out of memory
severity: error
category: memory
match: ['CUDA out of memory\. Tried to allocate']
root_cause: The GPU ran out of memory.
fix: Reduce the batch size.
fix_command: export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
examples:
  match: ['torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB']
  no_match: ['memory fine']
---
id: t.pending
title: Needs confirmation
severity: error
category: build
match: ['link failed']
context:
  within_lines: 10
  requires_any: ['build aborted']
root_cause: r
fix: f
---
id: t.overflow
title: fp16 overflow
severity: warning
category: numerics
match: ['Gradient overflow']
root_cause: r
fix: f
examples:
  match: ['Gradient overflow. Skipping step']
  no_match: ['no overflow here']
)";

class ScanTest : public testing::AgentFolderTest {
 protected:
  void SetUp() override {
    AgentFolderTest::SetUp();
    WriteFile("rules/t.yaml", kRules);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
    return dir_ + "/" + name;
  }
  std::vector<std::string> Scan(std::vector<std::string> args) {
    args.insert(args.begin(), {"scan", "--rules", dir_ + "/rules"});
    return args;
  }
};

TEST_F(ScanTest, JsonReportsCountsFirstHitRootCauseAndFix) {
  const std::string log =
      Write("train.log",
            "step 1\nGradient overflow. Skipping step\nstep 2\n"
            "[rank0]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
            "step 3\nRuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\n");
  const auto r = RunFaultline(Scan({"--format", "json", log}));
  EXPECT_EQ(1, r.exit_code) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(std::vector<std::string>{log}, doc["files"].get<std::vector<std::string>>());
  EXPECT_EQ(6, doc["lines"]);
  ASSERT_EQ(2u, doc["findings"].size());
  const auto& oom = doc["findings"][0];  // errors sort before warnings
  EXPECT_EQ("t.cuda_oom", oom["signature"]);
  EXPECT_EQ("CUDA out of memory", oom["title"]);
  EXPECT_EQ("error", oom["severity"]);
  EXPECT_EQ(2, oom["count"]);
  EXPECT_EQ(log, oom["first"]["file"]);
  EXPECT_EQ(4, oom["first"]["line"]);
  EXPECT_EQ("[rank0]: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            oom["first"]["text"]);
  EXPECT_EQ("The GPU ran out of memory.", oom["root_cause"]);
  EXPECT_EQ("Reduce the batch size.", oom["fix"]);
  EXPECT_EQ("t.overflow", doc["findings"][1]["signature"]);
  EXPECT_EQ("warning", doc["findings"][1]["severity"]);
}

// The report keeps one line per signature: a 1 MiB hit line is shown by its first 4 KiB, marked
// as cut, in both formats.
TEST_F(ScanTest, AHugeHitLineIsShownByItsStart) {
  const std::string hit =
      "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB " + std::string(1 << 20, 'x');
  const std::string log = Write("huge.log", "step 1\n" + hit + "\n");
  const auto json = RunFaultline(Scan({"--format", "json", log}));
  EXPECT_EQ(1, json.exit_code) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  ASSERT_EQ(1u, doc["findings"].size());
  const auto& first = doc["findings"][0]["first"];
  EXPECT_EQ(hit.substr(0, 4096), first["text"]);
  EXPECT_EQ(true, first["text_truncated"]);
  const auto text = RunFaultline(Scan({log}));
  EXPECT_THAT(text.out, HasSubstr(hit.substr(0, 4096) + " ...\n"));
  EXPECT_LT(text.out.size(), 16u * 1024);
}

TEST_F(ScanTest, FindingsOfOneSeverityAreOrderedByWhereTheyFirstAppear) {
  // t.pending waits for its confirmation on line 4, so it settles after t.cuda_oom (line 2);
  // the report still lists it first, as it came first in the log.
  const std::string log = Write("order.log",
                                "link failed\nCUDA out of memory. Tried to allocate 1 GiB\nx\n"
                                "build aborted\n");
  const auto doc = nlohmann::json::parse(RunFaultline(Scan({"--format", "json", log})).out);
  ASSERT_EQ(2u, doc["findings"].size());
  EXPECT_EQ("t.pending", doc["findings"][0]["signature"]);
  EXPECT_EQ(1, doc["findings"][0]["first"]["line"]);
  EXPECT_EQ("t.cuda_oom", doc["findings"][1]["signature"]);
}

TEST_F(ScanTest, TextReportIsForPeople) {
  const std::string log =
      Write("a.log", "x\nRuntimeError: CUDA out of memory. Tried to allocate 1 GiB\n");
  const auto r = RunFaultline(Scan({log}));
  EXPECT_EQ(1, r.exit_code);
  EXPECT_THAT(r.out, HasSubstr("ERROR  CUDA out of memory"));
  EXPECT_THAT(r.out, HasSubstr("t.cuda_oom  (1 line)"));
  EXPECT_THAT(r.out, HasSubstr(log + ":2: RuntimeError: CUDA out of memory."));
  EXPECT_THAT(r.out, HasSubstr("root cause: The GPU ran out of memory."));
  EXPECT_THAT(r.out, HasSubstr("fix:        Reduce the batch size."));
  EXPECT_THAT(r.out, HasSubstr("run:        export PYTORCH_CUDA_ALLOC_CONF"));
}

TEST_F(ScanTest, StdinIsScannedWhenNamedDash) {
  const auto r = RunFaultline(Scan({"--format", "json", "-"}),
                              "pip install\r\nCUDA out of memory. Tried to allocate 1 GiB\r\n");
  EXPECT_EQ(1, r.exit_code) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ("-", doc["findings"][0]["first"]["file"]);
  EXPECT_EQ(2, doc["findings"][0]["first"]["line"]);
  EXPECT_EQ(2, doc["lines"]);
}

TEST_F(ScanTest, OnlyWarningsExitZero) {
  const auto r = RunFaultline(Scan({Write("w.log", "Gradient overflow. Skipping step\n")}));
  EXPECT_EQ(0, r.exit_code);
  EXPECT_THAT(r.out, HasSubstr("WARNING  fp16 overflow"));
}

TEST_F(ScanTest, CleanLogExitsZeroAndSaysSo) {
  const auto r = RunFaultline(Scan({Write("ok.log", "all good\n")}));
  EXPECT_EQ(0, r.exit_code);
  EXPECT_THAT(r.out, HasSubstr("no known failure found"));
}

TEST_F(ScanTest, ProgressBarLinesAndColourAreFramedBeforeMatching) {
  const std::string log =
      Write("bar.log",
            " 10%|#   |\r 50%|##  |\r\x1b[31mCUDA out of memory.\x1b[0m Tried to allocate 1 GiB\n");
  const auto r = RunFaultline(Scan({"--format", "json", log}));
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(3, doc["lines"]);
  EXPECT_EQ(3, doc["findings"][0]["first"]["line"]);
  EXPECT_EQ("CUDA out of memory. Tried to allocate 1 GiB", doc["findings"][0]["first"]["text"]);
}

TEST_F(ScanTest, InvalidUtf8NeverBreaksJsonOrText) {
  const std::string log =
      Write("bin.log",
            std::string("\xff\xfe\x00garbage CUDA out of memory. Tried to allocate \xc3\n", 52));
  const auto json = RunFaultline(Scan({"--format", "json", log}));
  EXPECT_EQ(1, json.exit_code) << json.err;
  const auto doc = nlohmann::json::parse(json.out);  // throws on invalid UTF-8
  EXPECT_THAT(doc["findings"][0]["first"]["text"].get<std::string>(), HasSubstr("\xEF\xBF\xBD"));
  const auto text = RunFaultline(Scan({log}));
  EXPECT_THAT(text.out, HasSubstr("\\x00garbage"));
}

TEST_F(ScanTest, HugeLineIsCutCountedAndTheNextLineStillMatches) {
  std::string big(3 << 20, 'a');
  big += "\nCUDA out of memory. Tried to allocate 1 GiB\n";
  const std::string log = Write("big.log", big);
  const auto r = RunFaultline(Scan({"--format", "json", log}));
  EXPECT_EQ(1, r.exit_code);
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(2, doc["lines"]);
  EXPECT_EQ(1, doc["lines_truncated"]);
  EXPECT_EQ(2, doc["findings"][0]["first"]["line"]);
}

TEST_F(ScanTest, SeveralFilesAreOneReport) {
  const std::string a = Write("a.log", "CUDA out of memory. Tried to allocate 1 GiB\n");
  const std::string b = Write("b.log", "x\nCUDA out of memory. Tried to allocate 1 GiB\n");
  const auto doc = nlohmann::json::parse(RunFaultline(Scan({"--format", "json", a, b})).out);
  EXPECT_EQ(3, doc["lines"]);
  EXPECT_EQ(2, doc["findings"][0]["count"]);
  EXPECT_EQ(a, doc["findings"][0]["first"]["file"]);
}

TEST_F(ScanTest, MappedFileAndPipeGiveTheSameReport) {
  // A file is read through mapped windows of a few MiB, a pipe with read(): the same bytes must
  // give the same report, with hits straddling every window boundary and a "\r\n" split by one.
  const std::string hit = "RuntimeError: CUDA out of memory. Tried to allocate 1 GiB";
  std::string text;
  for (size_t boundary = 1 << 20; boundary <= 9u << 20; boundary += 1 << 20) {
    // Odd MiB: the hit line straddles the boundary; even: its "\r" ends just before it.
    const size_t start =
        boundary % (2 << 20) != 0 ? boundary - hit.size() / 2 : boundary - hit.size() - 1;
    while (text.size() + 80 < start) text += "step ok, loss 1.25\n";
    text.append(start - 1 - text.size(), '.');
    text += "\n" + hit + "\r\n";
  }
  text += "Gradient overflow. Skipping step\r";
  const std::string log = Write("big.log", text);
  const auto from_file = RunFaultline(Scan({"--format", "json", log}));
  const auto from_pipe = RunFaultline(Scan({"--format", "json", "-"}), text);
  ASSERT_EQ(1, from_file.exit_code) << from_file.err;
  auto file_doc = nlohmann::json::parse(from_file.out);
  auto pipe_doc = nlohmann::json::parse(from_pipe.out);
  EXPECT_EQ(9, file_doc["findings"][0]["count"]);
  EXPECT_EQ(hit, file_doc["findings"][0]["first"]["text"]);
  EXPECT_EQ(pipe_doc["lines"], file_doc["lines"]);
  for (auto* doc : {&file_doc, &pipe_doc}) {
    for (auto& f : (*doc)["findings"]) f["first"].erase("file");
  }
  EXPECT_EQ(pipe_doc["findings"], file_doc["findings"]);
}

TEST_F(ScanTest, MissingFileIsAUsageError) {
  const auto r = RunFaultline(Scan({dir_ + "/nope.log"}));
  EXPECT_EQ(2, r.exit_code);
  EXPECT_THAT(r.err, HasSubstr("cannot open " + dir_ + "/nope.log: No such file or directory"));
}

TEST_F(ScanTest, BadRuleIsReportedWithFileLineAndKey) {
  std::ofstream(dir_ + "/rules/bad.yaml")
      << "id: t.bad\ntitle: t\nseverity: error\ncategory: build\nmatch: ['(']\nroot_cause: r\n"
         "fix: f\n";
  const auto r = RunFaultline(Scan({Write("a.log", "x\n")}));
  EXPECT_EQ(2, r.exit_code);
  EXPECT_THAT(r.err, HasSubstr(dir_ + "/rules/bad.yaml:5: rule 't.bad': key 'match[0]': "
                                      "invalid pattern: missing ): ("));
}

TEST_F(ScanTest, UnknownOptionIsAUsageError) {
  const auto r = RunFaultline({"scan", "--frobnicate", "x"});
  EXPECT_EQ(2, r.exit_code);
  EXPECT_THAT(r.err, HasSubstr("unknown option '--frobnicate'"));
}

TEST(Cli, EveryCommandHasHelpAndVersion) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--help"},
                                               {"scan", "--help"},
                                               {"run", "--help"},
                                               {"check", "--help"},
                                               {"rules", "--help"},
                                               {"rules", "test", "--help"}}) {
    const auto r = RunFaultline(args);
    EXPECT_EQ(0, r.exit_code) << args.back();
    EXPECT_THAT(r.out, HasSubstr("Usage: faultline")) << args[0];
  }
  const auto v = RunFaultline({"--version"});
  EXPECT_EQ(0, v.exit_code);
  EXPECT_THAT(v.out, ::testing::MatchesRegex("faultline [0-9]+\\.[0-9]+\\.[0-9]+\n"));
}

}  // namespace
}  // namespace faultline

namespace faultline {
namespace {

// Several files of many batches each, with hits that wait for context across batch boundaries:
// matching on worker threads (the default on a machine with several CPUs, and --threads 4)
// reports exactly what matching on the reading thread (--threads 1) does.
TEST_F(ScanTest, ThreadsChangeNothingButTheSpeed) {
  std::vector<std::string> logs;
  for (int file = 0; file < 3; ++file) {
    std::string text;
    for (int line = 0; text.size() < (4u << 20); ++line) {
      text += "step " + std::to_string(line) + " loss 0.25 lr 1e-4 all fine here\n";
      if (line % 997 == 0)
        text += "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n";
      if (line % 1499 == 5) text += "link failed\n";
      if (line % 2999 == 9) text += "build aborted\n";
      if (line % 401 == 0) text += "Gradient overflow. Skipping step\n";
    }
    logs.push_back(Write("big" + std::to_string(file) + ".log", text));
  }
  std::vector<std::string> args = {"--format", "json"};
  args.insert(args.end(), logs.begin(), logs.end());
  const auto one = RunFaultline(Scan([&] {
    auto a = args;
    a.insert(a.begin(), {"--threads", "1"});
    return a;
  }()));
  ASSERT_EQ(one.exit_code, 1) << one.err;
  const auto findings = nlohmann::json::parse(one.out);
  ASSERT_GE(findings["findings"].size(), 3u) << one.out.substr(0, 2000);
  for (const char* threads : {"2", "4"}) {
    auto a = args;
    a.insert(a.begin(), {"--threads", threads});
    const auto many = RunFaultline(Scan(a));
    EXPECT_EQ(many.exit_code, 1) << many.err;
    EXPECT_EQ(many.out, one.out) << threads << " threads";
  }
  const auto by_default = RunFaultline(Scan(args));
  EXPECT_EQ(by_default.out, one.out);
}

TEST_F(ScanTest, ThreadsOutsideOneToEightIsAUsageError) {
  const std::string log = Write("x.log", "all good\n");
  for (const char* bad : {"0", "9", "two", ""}) {
    const auto r = RunFaultline(Scan({"--threads", bad, log}));
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("--threads must be a number from 1 to 8")) << bad;
  }
}

}  // namespace
}  // namespace faultline
