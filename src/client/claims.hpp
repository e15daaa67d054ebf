#pragma once
// The claim coalescer: single claim and settle calls queued on the strand and sent as
// batches (see claims.cpp).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "client/client_state.hpp"
#include "quorum/rules.hpp"
#include "redlock/client.hpp"

namespace redlock::detail {

using claim_completion = completion<void(error_code, claim_result)>;

class claim_coalescer {
 public:
  explicit claim_coalescer(client_state& s) : s_(s) {}

  void add_claim(std::string resource, std::chrono::milliseconds ttl, claim_completion h);
  void add_settle(std::string key, std::string token, std::uint16_t nodes,
                  std::chrono::milliseconds keep, void_completion h);
  /// A batch this coalescer started has completed: its slot is free.
  void claim_batch_done();
  void settle_batch_done();
  /// Completes every queued call with error::shut_down.
  void shutdown();

 private:
  struct pending_claim {
    std::string resource;
    std::chrono::milliseconds ttl;
    claim_completion handler;
  };
  struct pending_settle {
    std::string key;
    std::string token;
    std::uint16_t nodes;
    std::chrono::milliseconds keep;
    void_completion handler;
  };

  void schedule();
  void flush();

  client_state& s_;
  std::vector<pending_claim> claims_;
  std::vector<pending_settle> settles_;
  int claims_in_flight_ = 0;
  int settles_in_flight_ = 0;
  bool flush_posted_ = false;
};

}  // namespace redlock::detail
