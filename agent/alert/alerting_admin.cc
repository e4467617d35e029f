// Alerting (alerting.h), the admin operations of the CLI and the API: fix, unfix, mute, unmute,
// and the test notification that goes through routing, rendering and delivery without writing
// lifecycle state.

#include <algorithm>

#include "agent/alert/alerting.h"
#include "agent/alert/redact.h"
#include "agent/alert/version.h"

namespace faultline {
namespace {

constexpr int64_t kMaxMuteMs = 30LL * 24 * 3600 * 1000;
constexpr char kSampleSignature[] = "faultline.test.sample";

}  // namespace

Result<FixRecord> Alerting::Fix(const FixRequest& request) {
  bool known = rules_.contains(request.selector) || tracker_.Find(request.selector) != nullptr;
  if (!known) {
    return Error{
        "", 0, "", "signature",
        "'" + request.selector + "' is neither a signature seen by this agent nor a rule id"};
  }
  if (!request.version.empty() && !IsVersion(request.version)) {
    return Error{"", 0, "", "version",
                 "'" + request.version + "' is not a PEP 440 or semver version"};
  }
  FixRecord fix;
  fix.selector = request.selector;
  fix.fixed_in = request.version;
  fix.note = request.note;
  fix.by = request.by;
  fix.origin = request.origin;
  std::vector<LifecycleEvent> events;
  const int64_t now = NowMs();
  const FixRecord stored = tracker_.AddFix(fix, now, &events);
  Raise(events, nullptr, now);
  if (request_checkpoint_) request_checkpoint_();
  return stored;
}

std::size_t Alerting::Unfix(const std::string& selector) {
  const std::size_t n = tracker_.RemoveFixes(selector);
  if (n > 0 && request_checkpoint_) request_checkpoint_();
  return n;
}

bool Alerting::Mute(const std::string& selector, int64_t duration_ms, const std::string& reason,
                    const std::string& by) {
  const int64_t now = NowMs();
  const bool any = tracker_.Mute(selector, now + std::clamp<int64_t>(duration_ms, 1, kMaxMuteMs),
                                 reason, by, now);
  if (any && request_checkpoint_) request_checkpoint_();
  return any;
}

std::size_t Alerting::Unmute(const std::string& selector) {
  std::vector<LifecycleEvent> events;
  const int64_t now = NowMs();
  const std::size_t n = tracker_.Unmute(selector, now, &events);
  Raise(events, nullptr, now);
  if (n > 0 && request_checkpoint_) request_checkpoint_();
  return n;
}

Result<std::vector<std::string>> Alerting::Test(const std::string& receiver,
                                                const std::string& signature, TestDone done) {
  std::vector<const Receiver*> targets;
  for (const Receiver& r : receivers_) {
    if (r.name() == receiver) targets.push_back(&r);
  }
  if (targets.empty()) {
    std::string names;
    for (const Receiver& r : receivers_) {
      if (names.find(r.name()) == std::string::npos)
        names += (names.empty() ? "" : ", ") + r.name();
    }
    return Error{"", 0, "", "receiver",
                 "no receiver named '" + receiver +
                     "' (configured: " + (names.empty() ? std::string("none") : names) + ")"};
  }
  const int64_t now = NowMs();
  AlertItem item;
  item.event_id = NewId("evt");
  item.kind = AlertKind::kNew;
  item.signature = signature.empty() ? kSampleSignature : signature;
  item.rule_id = item.signature.substr(0, item.signature.find('{'));
  item.title = "faultline test notification";
  item.severity = Severity::kError;
  item.state = "new";
  item.host = host_;
  item.source = "faultline-alert-test";
  item.hit = "This is a test message from faultline alert test; no failure happened.";
  item.count = 1;
  item.first_seen_ms = item.last_seen_ms = now;
  item.active_until_ms = now;
  if (const SignatureRecord* record = tracker_.Find(item.signature)) {
    item.rule_id = record->rule_id;
    item.labels = record->labels;
    item.count = record->count;
    item.hit = RedactSecrets(record->last_hit);
    item.file = RedactSecrets(record->last_file);
    item.line = record->last_line;
  }
  if (const Rule* rule = RuleOf(item.rule_id)) {
    item.title = rule->title;
    item.root_cause = rule->root_cause;
    item.fix = rule->fix;
    item.fix_command = rule->fix_command;
    item.package = rule->version_of;
  } else if (!signature.empty()) {
    return Error{"", 0, "", "signature",
                 "'" + signature + "' is neither a signature seen by this agent nor a rule id"};
  }
  Notification n;
  n.id = NewId("test");
  n.created_ms = now;
  n.test = true;
  n.items.push_back(item);
  std::vector<std::string> names;
  for (const Receiver* r : targets) {
    tests_[n.id + "\n" + r->target()] = done;
    n.receiver = r->name();
    // A test writes no state: never persisted, and so sent at once.
    outbox_->Add(r->target(), n, now, /*ephemeral=*/true);
    names.push_back(r->target());
  }
  Dispatch();
  return names;
}

}  // namespace faultline
