// SPDX-License-Identifier: BSL-1.0
#pragma once
#include "redlock/detail/cxx20.hpp"  // first: says at once when C++20 is missing
/// What went wrong, for people and for programs: the diagnostics of a failed operation,
/// and the exception that carries them.

#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "redlock/observer.hpp"  // node_answer

namespace redlock {

/// One node's part in a failed operation's last round, as data.
struct node_diagnostic {
  std::size_t node = 0;   ///< index in config::nodes
  std::string address{};  ///< "host:port", never credentials
  node_answer answer = node_answer::no_answer;
  boost::system::error_code error{};  ///< set when answer is failed or held_back
  /// What the node said beyond its answer: the server's error text, why it may not vote,
  /// a qualified yes, or why its connection is not usable. Often empty.
  std::string detail{};
};

/// Details of a failed operation: `message` for people (which nodes said what, never a
/// password), `nodes` for programs. Filled by the overloads that take a `diagnostics&`
/// and by the with_diagnostics token (the default), when the operation fails; cleared
/// when it succeeds (nothing is formatted or allocated then).
struct diagnostics {
  std::string message{};
  /// One entry per node, in config::nodes order, when requests went out; empty when
  /// the call was refused before any (an argument error, shut_down, no_lock, ...).
  std::vector<node_diagnostic> nodes{};
};

/// A system_error that carries the failed operation's diagnostics: what() is
/// diagnostics().message (which names the error) followed by "[category:value]", or the
/// error's own text when there is no message; code() is the error the operation
/// completed with. Thrown by operations completed with the with_diagnostics token (the
/// default token).
class error_with_diagnostics : public boost::system::system_error {
 public:
  error_with_diagnostics(const boost::system::error_code& ec, diagnostics diag)
      : boost::system::system_error(ec),
        diag_(std::move(diag)),
        what_(diag_.message.empty() ? std::string{boost::system::system_error::what()}
                                    : diag_.message + " [" + ec.category().name() + ":" +
                                          std::to_string(ec.value()) + "]") {}

  const char* what() const noexcept override { return what_.c_str(); }
  const diagnostics& get_diagnostics() const noexcept { return diag_; }

 private:
  diagnostics diag_;
  std::string what_;
};

}  // namespace redlock
