// HttpRequest and HttpResponse: what a route handler sees of one request and what it answers.
//
// Both are plain owned values built by the HTTP layer (http_session.h) on the event-loop thread;
// a handler may copy or move them anywhere. Nothing here does I/O or fails: a request only exists
// once it was parsed completely within the server's limits (header size, body size), so every
// field is bounded by those limits.
#ifndef FAULTLINE_HTTP_HTTP_MESSAGE_H_
#define FAULTLINE_HTTP_HTTP_MESSAGE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace faultline {

// The methods a route can be registered for. A route for GET answers HEAD too.
enum class HttpMethod : uint8_t { kGet, kHead, kPost };

// "GET", "HEAD", "POST".
std::string_view HttpMethodName(HttpMethod method);

struct HttpRequest {
  HttpMethod method = HttpMethod::kGet;
  // The request target up to '?', exactly as sent (not percent-decoded): routes match it exactly.
  std::string path;
  // The query string after '?' as sent, and its key=value pairs in order, percent-decoded ('+' is
  // a space); a key without '=' has an empty value.
  std::string query;
  std::vector<std::pair<std::string, std::string>> query_params;
  // Header fields in the order sent, names as sent; look them up with header().
  std::vector<std::pair<std::string, std::string>> headers;
  // Empty unless the route takes POST; at most HttpServerOptions::max_body_bytes.
  std::string body;

  // The value of the first header field named `name` (case-insensitive), or empty.
  std::string_view header(std::string_view name) const;
  // The value of the first query parameter `key` (case-sensitive), or null when absent.
  const std::string* query_param(std::string_view key) const;
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Extra header fields (Allow, WWW-Authenticate, Retry-After, ...). The server sets Server,
  // Content-Type, Content-Length and Connection itself.
  std::vector<std::pair<std::string, std::string>> headers = {};
};

// Splits a query string ("a=1&b=x%20y&c") into percent-decoded pairs. A malformed escape ("%zz",
// a lone '%') is kept as written rather than rejected: a handler sees what was sent.
std::vector<std::pair<std::string, std::string>> ParseQueryString(std::string_view query);

// Whether two ASCII strings are equal ignoring case (header names, schemes, host names).
bool EqualsIgnoringCase(std::string_view a, std::string_view b);

}  // namespace faultline

#endif  // FAULTLINE_HTTP_HTTP_MESSAGE_H_
