// SPDX-License-Identifier: BSL-1.0
#pragma once
// What a client checks of its configuration before anything connects, and the hint an ACL
// refusal inside one of the library's scripts gets (src/client/config_check.cpp).

#include <string>
#include <string_view>
#include <vector>

#include "redlock/config.hpp"

namespace redlock::detail {

/// For an ACL refusal inside one of our scripts (reported by Redis with the script's
/// SHA1 only): " [the script runs GET PEXPIRE; ...]", else "".
std::string acl_hint(std::string_view server_text);

/// Throws system_error(invalid_config) with `what` (a field and what is wrong with it).
[[noreturn]] void bad_config(const std::string& what);

/// Validates a configuration; throws system_error(invalid_config) naming the field. The nodes'
/// URIs, parsed, each with the config's password where its own has none.
std::vector<node_uri> validate(const config& c);

}  // namespace redlock::detail
