#pragma once
// A small blocking Redis client for `redlock status` and `redlock nodes`: one command at
// a time, every step bounded by a timeout. The lock path never uses it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "redlock/config.hpp"

namespace redlock::cli {

/// A reply as a tree that owns its text.
struct value {
  enum class kind { string, error, integer, nil, array } what = kind::nil;
  std::string text;
  std::int64_t integer = 0;
  std::vector<value> elements;
};

class probe {
 public:
  explicit probe(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  ~probe();
  probe(const probe&) = delete;
  probe& operator=(const probe&) = delete;

  /// Connects and authenticates (AUTH/SELECT from the URI). On failure returns false
  /// and says why in error().
  bool connect(const node_uri& uri);
  /// Sends one command and reads its reply; nullopt (and error()) on I/O failure.
  std::optional<value> command(const std::vector<std::string>& args);
  const std::string& error() const { return error_; }

 private:
  bool fail(std::string why);
  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  std::string error_;
  std::string buffer_;
};

}  // namespace redlock::cli
