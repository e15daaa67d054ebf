// SPDX-License-Identifier: BSL-1.0
#include "client/token.hpp"

#include <sys/random.h>

#include <array>
#include <boost/system/system_error.hpp>
#include <cerrno>
#include <cstring>

namespace redlock::detail {

void token_source::refill() {
  std::size_t got = 0;
  while (got < block_.size()) {
    const ssize_t n = ::getrandom(block_.data() + got, block_.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw boost::system::system_error(errno, boost::system::system_category(), "getrandom");
    }
    got += static_cast<std::size_t>(n);
  }
  used_ = 0;
}

void token_source::next(std::string& out) {
  if (block_.size() - used_ < token_bytes) refill();
  // Two hex digits per byte from one table lookup.
  static constexpr auto pairs = [] {
    constexpr char hex[] = "0123456789abcdef";
    std::array<char, 512> t{};
    for (std::size_t b = 0; b < 256; ++b) {
      t[2 * b] = hex[b >> 4];
      t[2 * b + 1] = hex[b & 0xf];
    }
    return t;
  }();
  out.resize(token_bytes * 2 + suffix_.size());
  char* p = out.data();
  // The owner goes after the digits: a token's first byte is always a hex digit, so the
  // claim scripts' state bytes ("C", "D") can never be mistaken for one.
  std::memcpy(p + token_bytes * 2, suffix_.data(), suffix_.size());
  for (std::size_t i = 0; i < token_bytes; ++i) {
    std::memcpy(p + 2 * i, pairs.data() + 2 * block_[used_ + i], 2);
  }
  // Used bytes are wiped so that no token can be derived twice from the same block.
  std::fill_n(block_.begin() + static_cast<std::ptrdiff_t>(used_), token_bytes, 0);
  used_ += token_bytes;
}

}  // namespace redlock::detail
