// RenderStatusHtml: the status page at `GET /`: one self-contained HTML document, no script, no
// external resource, no build step, readable in any browser or `curl | w3m`. It refreshes itself
// every kRefreshSeconds with <meta http-equiv=refresh>.
//
// Every piece of log text goes through AppendBoundedHtmlText (agent/http/html.h): escaped,
// invisible and reordering characters shown as `U+XXXX`, each line cut at kMaxLineBytes, so a
// hostile line renders as inert, bounded text. The route also sends a Content-Security-Policy
// that allows no script at all (StatusPageHeaders), a second wall should escaping ever miss.
//
// Pure; thread-safe; nothing fails.
#ifndef FAULTLINE_API_STATUS_PAGE_H_
#define FAULTLINE_API_STATUS_PAGE_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "agent/api/status_report.h"

namespace faultline {

inline constexpr int kStatusRefreshSeconds = 5;
// A log line shown on the page: enough for any real message, never a megabyte of it.
inline constexpr std::size_t kStatusMaxLineBytes = 2048;

std::string RenderStatusHtml(const StatusReport& report);

// Headers of the page's response: no script, no framing, no caching, no sniffing.
std::vector<std::pair<std::string, std::string>> StatusPageHeaders();

}  // namespace faultline

#endif  // FAULTLINE_API_STATUS_PAGE_H_
