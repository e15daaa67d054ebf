// SPDX-License-Identifier: BSL-1.0
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

/// A batch of coalesced calls, as the coalescer sees it: it can find one of its calls by
/// id and complete it `cancelled` ahead of the batch.
class coalesced_batch {
 public:
  /// Whether the call `id` is in this batch (it was then cancelled, if still pending).
  virtual bool cancel_call(std::uint64_t id) = 0;

 protected:
  ~coalesced_batch() = default;
};

class claim_coalescer {
 public:
  explicit claim_coalescer(client_state& s) : s_(s) {}

  void add_claim(std::string resource, std::chrono::milliseconds ttl, claim_mode mode,
                 claim_completion h);
  void add_settle(std::string key, std::string token, std::uint16_t nodes,
                  std::chrono::milliseconds keep, void_completion h);
  /// A batch this coalescer started has begun or completed (its slot is then free).
  void batch_started(coalesced_batch* b) { batches_.push_back(b); }
  void claim_batch_done(coalesced_batch* b);
  void settle_batch_done(coalesced_batch* b);
  /// The call `id`'s cancellation slot fired (on the strand): a queued claim is dropped
  /// unsent, any other call is completed `cancelled` ahead of its batch.
  void cancel(std::uint64_t id);
  /// Completes every queued call with error::shut_down.
  void shutdown();

 private:
  struct pending_claim {
    std::string resource;
    std::chrono::milliseconds ttl;
    claim_mode mode;
    claim_completion handler;
    std::uint64_t id;  // 0: the handler has no cancellation slot
  };
  struct pending_settle {
    std::string key;
    std::string token;
    std::uint16_t nodes;
    std::chrono::milliseconds keep;
    void_completion handler;
    std::uint64_t id;
  };

  void schedule();
  void flush();
  /// Connects `h`'s cancellation slot, if it has one, for the types in `honoured`;
  /// returns the call's id (0 without a slot).
  template <typename Handler>
  std::uint64_t watch(Handler& h, boost::asio::cancellation_type_t honoured);
  void remove_batch(coalesced_batch* b);

  client_state& s_;
  std::vector<pending_claim> claims_;
  std::vector<pending_settle> settles_;
  std::vector<coalesced_batch*> batches_;  // in flight, claims and settles
  std::uint64_t next_id_ = 0;
  int claims_in_flight_ = 0;
  int settles_in_flight_ = 0;
  bool flush_posted_ = false;
};

}  // namespace redlock::detail
