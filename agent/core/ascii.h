// ASCII character classes shared by the parsers (syslog, versions, line origins, the masker).
// Plain functions on bytes, locale-free (std::isdigit depends on the locale and is undefined for
// negative chars); thread-safe; nothing fails.
#ifndef FAULTLINE_CORE_ASCII_H_
#define FAULTLINE_CORE_ASCII_H_

namespace faultline {

constexpr bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace faultline

#endif  // FAULTLINE_CORE_ASCII_H_
