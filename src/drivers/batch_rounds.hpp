// SPDX-License-Identifier: BSL-1.0
#pragma once
// The engine of the batch kinds (claims.cpp: claim and settle batches): one script call per
// node over a list of the batch's items, one integer answered per item.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/client_state.hpp"
#include "machines/batch_answers.hpp"
#include "quorum/operation.hpp"
#include "scripts/scripts.hpp"

namespace redlock::detail {

// A quorum_op whose round sends each node one script call for a list of item indexes
// (its own list: payloads differ per node) and reads back one integer per item. Shared by
// the claim and settle batches. Waits for every node it asked; a batch that completes to
// nobody (coalesced single calls, which have a handler per item) passes no handler.
template <typename Signature>
class batch_rounds : public quorum_op<client_state, Signature> {
  using base = quorum_op<client_state, Signature>;

 protected:
  batch_rounds(std::shared_ptr<client_state> s, typename base::completion_type h)
      : base(std::move(s), nullptr, std::move(h)) {
    this->reports_ = false;
    payloads_.resize(this->s_->size());
    sent_items_.resize(this->s_->size());
  }

  /// Builds node i's call over the items in `which` (write_call words it).
  void prepare(std::size_t i, std::vector<std::uint32_t> which) {
    std::string& p = payloads_[i];
    p.clear();
    lua_ = &write_call(p, which);
    sent_items_[i] = std::move(which);
  }

  /// Sends node i's prepared call; false when the connection refused it at once (its
  /// items are then tallied as not sent).
  bool submit(std::size_t i, boot_clock::time_point deadline) {
    return this->send_to(i, payloads_[i], lua_, deadline);
  }

  /// Writes one node's call over `items` into `out` with the kind's builder; its script.
  virtual const script& write_call(std::string& out,
                                   std::span<const std::uint32_t> items) const = 0;
  /// Node i answered `codes` for `items`, one integer each, in the order sent.
  virtual void answered(std::size_t i, std::span<const std::uint32_t> items,
                        std::span<const std::int64_t> codes) = 0;
  /// Node i gave no usable answer for `items`; `sent`: its request went out, so it may
  /// have run.
  virtual void failed(std::size_t i, std::span<const std::uint32_t> items, bool sent) = 0;

 private:
  vote classify(std::size_t i, const resp::reply& r) final {
    const auto& items = sent_items_[i];
    if (!batch_answer_well_formed(r, items.size())) return vote::failed;  // on_failed tells
    codes_.resize(items.size());
    for (std::size_t k = 0; k < items.size(); ++k) codes_[k] = r[k + 1].integer;
    answered(i, items, codes_);
    return vote::yes;  // the node answered for every item
  }

  void on_failed(std::size_t i) final { failed(i, sent_items_[i], this->round_.sent_to[i]); }

  // Only a batch with a handler of its own (not coalesced) watches a slot.
  void on_cancel() override {}

  std::vector<std::string> payloads_;
  std::vector<std::vector<std::uint32_t>> sent_items_;
  std::vector<std::int64_t> codes_;  // one node's answers, read out of its reply
  const script* lua_ = nullptr;
};

// Readers of a batch item's name and token by its index, for the script builders: the
// batch's own strings go into the call, never a copy of them.
template <typename Items>
auto key_at(const Items& items) {
  return [&items](std::uint32_t j) -> std::string_view { return items[j].key; };
}
template <typename Items>
auto token_at(const Items& items) {
  return [&items](std::uint32_t j) -> std::string_view { return items[j].token; };
}

}  // namespace redlock::detail
