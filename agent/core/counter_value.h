// CounterValue: one counter series and its value, as the metrics hand it to the state store to
// save and take back at start (sink/metrics.h, state/counter_states.h). A plain value.
#ifndef FAULTLINE_CORE_COUNTER_VALUE_H_
#define FAULTLINE_CORE_COUNTER_VALUE_H_

#include <map>
#include <string>

namespace faultline {

struct CounterValue {
  std::string family;                         // faultline_lines_total
  std::map<std::string, std::string> labels;  // {source: app}
  double value = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_CORE_COUNTER_VALUE_H_
