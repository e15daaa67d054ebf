// SPDX-License-Identifier: BSL-1.0
#pragma once
// Reading a server's INFO text, apart from the connection: the parts that read it without
// a socket (an inspection's machine) need no Asio.

#include <string_view>

namespace redlock::detail {

/// The value of "name:" in an INFO reply's text ("uptime_in_seconds:123" gives "123"),
/// "" if absent.
std::string_view info_field(std::string_view info, std::string_view name);

}  // namespace redlock::detail
