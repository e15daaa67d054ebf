// SPDX-License-Identifier: BSL-1.0
// redlock: a distributed flock(1) across Redis masters (docs/cli.md).

#include <fmt/format.h>

#include <boost/system/system_error.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "redlock/error.hpp"

namespace {

// A system_error's text without the " [category:value]" that Boost.System appends: the
// person reading it wants the words, which already say what is wrong.
std::string without_code(const boost::system::system_error& e) {
  std::string text = e.what();
  const auto tail = text.rfind(fmt::format(" [{}:", e.code().category().name()));
  if (tail != std::string::npos && text.back() == ']') text.erase(tail);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace redlock::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    fmt::print(args.empty() ? stderr : stdout, "{}", help_text(""));
    return args.empty() ? exit_usage : exit_ok;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    if (args.size() > 1) {
      fmt::print(stderr, "redlock: --version takes no arguments\n");
      return exit_usage;
    }
    fmt::print("redlock {}\n", REDLOCK_VERSION);
    return exit_ok;
  }
  const std::string sub = args[0];
  args.erase(args.begin());
  try {
    if (!is_command(sub)) {
      fmt::print(stderr, "redlock: unknown command \"{}\" (try redlock --help)\n", sub);
      return exit_usage;
    }
    if (wants_help(args)) return fmt::print("{}", help_text(sub)), exit_ok;
    if (sub == "run") return run_command(parse_run(args));
    if (sub == "status") return status_command(parse_status(args));
    return nodes_command(parse_nodes(args));
  } catch (const usage_error& e) {
    fmt::print(stderr, "redlock: {}\n", e.what);
    return exit_usage;
  } catch (const boost::system::system_error& e) {
    // The client refused its configuration: the command line asked for it.
    const bool usage =
        e.code() == redlock::error::invalid_config || redlock::is_argument_error(e.code());
    fmt::print(stderr, "redlock: {}\n", without_code(e));
    return usage ? exit_usage : exit_software;
  } catch (const std::exception& e) {
    fmt::print(stderr, "redlock: {}\n", e.what());
    return exit_software;
  }
}
