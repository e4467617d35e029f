// Notifications for the renderer tests: a DeepSpeed regression as the version story tells it.
#ifndef FAULTLINE_TESTS_UNIT_ALERT_ALERT_TEST_ITEMS_H_
#define FAULTLINE_TESTS_UNIT_ALERT_ALERT_TEST_ITEMS_H_

#include <string>

#include "agent/alert/notification.h"

namespace faultline {

inline AlertItem RegressionItem() {
  AlertItem item;
  item.event_id = "evt_1";
  item.kind = AlertKind::kRegression;
  item.signature = "deepspeed.async_io.windows_link{lib=aio}";
  item.rule_id = "deepspeed.async_io.windows_link";
  item.labels = {{"lib", "aio"}};
  item.title = "DeepSpeed async_io op builder cannot link aio.lib on native Windows";
  item.severity = Severity::kError;
  item.state = "regressed";
  item.root_cause = "async_io links against libaio, which exists only on Linux.";
  item.fix = "Build with DS_BUILD_AIO=0.";
  item.fix_command = "set DS_BUILD_AIO=0 && pip install deepspeed";
  item.source = "wheels";
  item.host = "win-builder-03";
  item.file = "C:/ci/build-8812.log";
  item.line = 812;
  item.context_before = {"building async_io", "cl.exe /c test.c"};
  item.hit = "LINK : fatal error LNK1181: cannot open input file 'aio.lib'";
  item.context_after = {"[ERROR] Unable to pre-compile async_io"};
  item.count = 41;
  item.count_since_last = 3;
  item.first_seen_ms = 1786000000000;
  item.last_seen_ms = 1790769602000;
  item.package = "deepspeed";
  item.seen_in_version = "0.15.1";
  item.versions_seen = {"0.14.2", "0.15.1"};
  item.fixed_in_version = "0.15.0";
  item.fixed_at_ms = 1789000000000;
  item.fix_note = "op builder skips aio on Windows";
  item.fixed_by = "alice";
  item.regression_basis = "version";
  item.active_until_ms = 1790856002000;
  return item;
}

inline Notification OneItemNotification(AlertItem item = RegressionItem()) {
  Notification n;
  n.id = "ntf_01";
  n.receiver = "team";
  n.created_ms = 1790769605000;
  n.items.push_back(std::move(item));
  return n;
}

}  // namespace faultline

#endif  // FAULTLINE_TESTS_UNIT_ALERT_ALERT_TEST_ITEMS_H_
