// SPDX-License-Identifier: BSL-1.0
#include "quorum/round.hpp"

#include <fmt/format.h>

#include "redlock/error.hpp"

namespace redlock::detail {

void round::fail(std::size_t i, error_code why, std::string_view text) {
  votes[i] = vote::failed;
  errors[i] = why;
  texts[i].assign(text);
  ++failed;
}

void round::error_reply(std::size_t i, std::string_view text) {
  fail(i,
       text.substr(0, 9) == "WRONGTYPE" ? error_code{error::wrong_type}
                                        : error_code{error::server_error},
       text);
}

void round::unreadable(std::size_t i) {
  if (votes[i] != vote::failed) fail(i, error::unexpected_reply);
}

std::string describe(const round& r, std::span<const node_label> nodes, error_code outcome,
                     const round_wording& w) {
  std::string m = fmt::format("could not {} \"{}\": {}", w.verb, w.subject, outcome.message());
  if (!w.per_node) return m;
  const std::size_t n = nodes.size();
  m += fmt::format(" ({} of {} nodes agreed, {} needed)", w.counted_yes, n, quorum(n));
  for (std::size_t i = 0; i < n; ++i) {
    m += fmt::format("; node {} ({}): ", i, nodes[i].address);
    const std::string& text = r.texts[i];
    switch (r.votes[i]) {
      case vote::pending:
        // The outcome was decided before this node's answer came: a healthy node is not
        // at fault, one with a connection problem says which.
        if (nodes[i].problem.empty())
          m += "not waited for (decided without its answer)";
        else
          m += fmt::format("no answer yet [{}]", nodes[i].problem);
        break;
      case vote::yes:
        m += text.empty() ? std::string_view{"ok"} : std::string_view{text};
        break;
      case vote::no:
        m += w.no_text;
        break;
      case vote::held:
        m += text.empty() ? std::string_view{"held by another owner"} : std::string_view{text};
        break;
      case vote::failed:
        m += r.errors[i].message();
        if (r.errors[i] == error::server_error)
          m += fmt::format(" \"{}\"{}", text, w.hint ? w.hint(text) : std::string{});
        else if (!text.empty())
          m += fmt::format(": {}", text);
        else if (!nodes[i].problem.empty())
          // Why the connection is not usable (refused, TLS, ACL, ...), when it is not.
          m += fmt::format(" [{}]", nodes[i].problem);
        break;
    }
  }
  return m;
}

std::string held_by_text(std::string_view token, bool ours) {
  // A semaphore's released permit, handed to the first call in its line (scripts.cpp).
  if (token.starts_with("o|")) return "offered to the call first in the semaphore's line";
  // Tokens come from the nodes: quote only short, printable pieces.
  auto printable = [](std::string_view s) {
    std::string out;
    for (char ch : s) out += (ch > ' ' && ch <= '~') ? ch : '?';
    return out;
  };
  const auto slash = token.find('/');
  const std::string_view digits = token.substr(0, std::min<std::size_t>(slash, 8));
  std::string who = "another owner";
  if (ours)
    who = "this client, in another of its calls";
  else if (slash != std::string_view::npos)
    who = printable(token.substr(slash + 1, 64));
  return fmt::format("held by {} (token {}...)", who, printable(digits));
}

}  // namespace redlock::detail
