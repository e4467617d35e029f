// HTML text escaping for pages the agent renders from log lines (the status page).
//
// Log text is hostile by assumption: it may hold markup (`<script>`), bytes that are not UTF-8,
// terminal control codes, Unicode bidi overrides (U+202E turns "exe.txt" into what looks like
// "txt.exe") and invisible format characters, or be megabytes long. AppendHtmlText makes any of
// it inert text: the five HTML specials become entities; invalid UTF-8 becomes U+FFFD; C0
// control codes become their visible Control Pictures (ESC shows as U+241B), except tab; C1
// controls, bidi embeddings, overrides, isolates and marks, zero-width and other invisible
// format characters, line and paragraph separators and tag characters become a visible
// `<span class="esc">U+202E</span>`, so they neither reorder nor hide the text around them.
// AppendBoundedHtmlText also cuts the text after `max_bytes` of input (at a character boundary)
// and says how many bytes were left out.
//
// Pure functions; nothing fails; thread-safe.
#ifndef FAULTLINE_HTTP_HTML_H_
#define FAULTLINE_HTTP_HTML_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace faultline {

void AppendHtmlText(std::string& out, std::string_view text);
void AppendBoundedHtmlText(std::string& out, std::string_view text, std::size_t max_bytes);
std::string HtmlText(std::string_view text);

}  // namespace faultline

#endif  // FAULTLINE_HTTP_HTML_H_
