// SPDX-License-Identifier: BSL-1.0
#pragma once
// Lock tokens: 20 random bytes from the kernel CSPRNG, hex-encoded, then "/" and the
// client's owner label (config::owner) if it has one. getrandom is read
// in blocks and sliced, so a lock costs no system call.

#include <array>
#include <cstddef>
#include <string>

namespace redlock::detail {

class token_source {
 public:
  static constexpr std::size_t token_bytes = 20;
  /// Replaces `out` with a fresh token (40 hex characters). Throws system_error if the
  /// kernel cannot provide randomness (never silently falls back to a weak source).
  void next(std::string& out);
  /// Put after the digits of every token from now on ("/" + config::owner).
  void set_suffix(std::string suffix) { suffix_ = std::move(suffix); }

 private:
  void refill();
  std::array<unsigned char, 4096> block_{};
  std::size_t used_ = block_.size();
  std::string suffix_;
};

}  // namespace redlock::detail
