// MatchErrors: how often a matching engine failed and its lines went the slow, exact way.
//
// Counted by MatchScratch (pattern_set.h) as running totals since the scratch was made, read by
// the metrics sink as faultline_match_errors_total{engine}. A plain value; no engine headers, so
// a sink can include it without linking Vectorscan or RE2.
#ifndef FAULTLINE_MATCH_MATCH_ERRORS_H_
#define FAULTLINE_MATCH_MATCH_ERRORS_H_

#include <cstdint>

namespace faultline {

struct MatchErrors {
  // Batches Vectorscan could not scan: a failed hs_scan, no scratch memory, or a database that
  // reported patterns the set does not have. Every prefiltered pattern then ran by its own RE2
  // on every line of the batch.
  uint64_t vectorscan = 0;
  // Lines the RE2::Set could not match (a failed match, or no set because it did not fit its
  // memory). Every fallback pattern then ran by its own RE2 on the line.
  uint64_t re2_set = 0;
};

}  // namespace faultline

#endif  // FAULTLINE_MATCH_MATCH_ERRORS_H_
