// The one place that includes Boost.Asio and Beast.
//
// Boost 1.74's Asio does not compile under C++20 with g++ 12 unless <utility> is included first
// (it uses std::exchange and friends through transitive includes that C++20 no longer provides).
// Every file that needs Asio or Beast includes this header instead of Boost's.
#ifndef FAULTLINE_CORE_ASIO_H_
#define FAULTLINE_CORE_ASIO_H_

#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace faultline {
namespace asio = boost::asio;
namespace beast = boost::beast;
}  // namespace faultline

#endif  // FAULTLINE_CORE_ASIO_H_
