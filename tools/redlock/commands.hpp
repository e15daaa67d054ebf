// SPDX-License-Identifier: BSL-1.0
#pragma once
// The subcommands of the `redlock` tool; each returns the process exit code.

#include "options.hpp"

namespace redlock::cli {

int run_command(const run_options& o);
int status_command(const status_options& o);
int nodes_command(const common_options& o);

}  // namespace redlock::cli
