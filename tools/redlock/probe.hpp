#pragma once
// A small blocking Redis client for `redlock status` and `redlock nodes`: one command at
// a time, every step bounded by a timeout. The lock path never uses it.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "redlock/config.hpp"

struct ssl_st;

namespace redlock::detail {
struct tls_settings;
}

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

  /// Connects (with TLS for rediss://, using `tls`, which must then be set) and
  /// authenticates (AUTH/SELECT from the URI). On failure returns false and says why in
  /// error().
  bool connect(const node_uri& uri, detail::tls_settings* tls = nullptr);
  /// Sends one command and reads its reply; nullopt (and error()) on I/O failure.
  std::optional<value> command(const std::vector<std::string>& args);
  const std::string& error() const { return error_; }

 private:
  bool fail(std::string why);
  bool start_tls(const node_uri& uri, detail::tls_settings& tls);
  // Waits until the socket is ready for what OpenSSL asked (after result `rc`).
  bool wait_for_tls(int rc, int timeout_ms);
  // Plain or TLS: bytes sent/received (> 0), or <= 0 with error() set.
  long send_some(const char* data, std::size_t n, int timeout_ms);
  long recv_some(char* data, std::size_t n, int timeout_ms);
  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  ssl_st* ssl_ = nullptr;
  std::string error_;
  std::string buffer_;
};

}  // namespace redlock::cli
