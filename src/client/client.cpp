// SPDX-License-Identifier: BSL-1.0
// The client: its state's making and closing (the connections, a graceful close), shutdown, and
// the public client object. A single lock's operations (acquire, release, extend) are
// drivers/lock_ops.cpp's.

#include "redlock/client.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/system/system_error.hpp>
#include <mutex>
#include <tuple>

#include "client/call_checks.hpp"
#include "client/client_state.hpp"
#include "client/testing.hpp"
#include "connection/slots.hpp"
#include "drivers/acquisition.hpp"
#include "drivers/claims.hpp"
#include "drivers/extend.hpp"
#include "drivers/release.hpp"
#include "drivers/single_lock.hpp"
#include "machines/lock_answer.hpp"
#include "machines/shared_decisions.hpp"
#include "quorum/operation.hpp"
#include "quorum/rules.hpp"
#include "scripts/script_calls.hpp"
#include "scripts/scripts.hpp"
#include "waiting/local_waiter.hpp"
#include "waiting/wake.hpp"

namespace redlock {
namespace detail {

client_state::~client_state() = default;

client_state::client_state(asio::any_io_executor ex, config c)
    : strand(asio::make_strand(ex)),
      cfg(std::move(c)),
      names(cfg),
      obs(cfg.observer.get()),
      rng(std::random_device{}()) {
  auto uris = validate(cfg);
  for (const auto& u : uris) addresses.push_back(u.display());
  if (!cfg.owner.empty()) tokens.set_suffix("/" + cfg.owner);
  // Every script is loaded at every handshake: an EVALSHA answered NOSCRIPT is retried at
  // the back of the pipeline, behind commands sent after it.
  static const std::vector<const script*> preload(all_scripts().begin(), all_scripts().end());
  std::shared_ptr<tls_settings> tls;
  if (std::any_of(uris.begin(), uris.end(), [](const node_uri& u) { return u.tls; })) {
    std::string why;
    tls = make_tls_settings(cfg.tls, why);
    if (!tls) bad_config(why);
  }
  for (std::size_t i = 0; i < uris.size(); ++i) {
    if (uris[i].cluster) {
      nodes.push_back(
          std::make_shared<cluster_node>(strand, std::move(uris[i]), cfg, i, &preload, tls));
    } else {
      nodes.push_back(
          std::make_shared<connection>(strand, std::move(uris[i]), cfg, i, &preload, tls));
    }
  }
}

void client_state::release_detached(std::string_view key, std::string_view token,
                                    const std::array<bool, max_nodes>* only, bool announce,
                                    bool permit) {
  // EVAL, not EVALSHA: nobody reads this reply, so a flushed script cache must not
  // turn it into a silent NOSCRIPT.
  std::string payload;
  if (permit)
    write_permit_release(payload, *this, key, token, send_as::text);
  else
    write_release(payload, key, token, send_as::text, announce);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (!only || (*only)[i]) nodes[i]->submit_detached(payload);
}

void client_state::close_all_gracefully(std::function<void()> done) {
  mark_shut();
  if (closed) {
    if (done) done();
    return;
  }
  closed = true;
  if (renewals) stop_renewals(*renewals);
  if (claims) claims->shutdown();
  if (wakes) wakes->shutdown();
  end_waits();
  while (held) {
    lock_data& d = *held;
    unhold(d);
    release_detached(d.key(), d.token(), nullptr, true, !d.record_key.empty());
  }
  for (auto& [token, keys] : held_sets) release_set_detached(keys, token);
  held_sets.clear();
  auto left = std::make_shared<std::size_t>(nodes.size());
  auto finished = std::make_shared<std::function<void()>>(std::move(done));
  for (auto& n : nodes) {
    n->close_gracefully(cfg.node_timeout, [left, finished] {
      if (--*left == 0 && *finished) (*finished)();
    });
  }
}

void client_state::close_all() {
  mark_shut();
  closed = true;
  if (renewals) stop_renewals(*renewals);
  if (claims) claims->shutdown();
  if (wakes) wakes->shutdown();
  for (auto& n : nodes) n->close();
}

std::chrono::nanoseconds client_state::jitter(std::chrono::milliseconds d) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  std::uniform_int_distribution<std::int64_t> dist(ns / 2, ns + ns / 2);
  return std::chrono::nanoseconds{dist(rng)};
}

void start_shutdown(std::shared_ptr<client_state> s, void_handler handler) {
  if (!s) return complete_without_client(std::move(handler));
  auto h = take_handler(std::move(handler), s);
  // Held locks stop being valid now, before any release can reach a node.
  s->mark_shut();
  auto strand = s->strand;
  asio::dispatch(strand, [s = std::move(s), h = std::move(h)]() mutable {
    auto* state = s.get();
    // std::function needs a copyable target; the handler is move-only.
    auto done = std::make_shared<void_completion>(std::move(h));
    state->close_all_gracefully([done] { done->post(error_code{}); });
  });
}

}  // namespace detail

// ---- client and lock ---------------------------------------------------------------

namespace asio = boost::asio;

namespace detail {
namespace {

// Closes the clients of an execution context when it is destroyed without their
// having been shut down. Operations in flight then complete with shut_down (their
// handlers are destroyed with the context, as Asio's own are) and free themselves;
// without this they would wait forever for replies and keep every connection alive.
class client_registry final : public asio::execution_context::service {
 public:
  using key_type = client_registry;
  static inline asio::execution_context::id id;

  explicit client_registry(asio::execution_context& ctx) : service(ctx) {}

  void add(const std::shared_ptr<client_state>& s) {
    std::lock_guard<std::mutex> g{mutex_};
    std::erase_if(states_, [](const auto& w) { return w.expired(); });
    states_.push_back(s);
  }

 private:
  void shutdown() override {
    std::vector<std::weak_ptr<client_state>> states;
    {
      std::lock_guard<std::mutex> g{mutex_};
      states.swap(states_);
    }
    // No thread runs the context any more: closing here is single-threaded.
    for (auto& w : states) {
      if (auto s = w.lock()) s->close_all();
    }
  }

  std::mutex mutex_;
  std::vector<std::weak_ptr<client_state>> states_;
};

}  // namespace
}  // namespace detail

client::client(executor_type ex, config cfg)
    : ex_(ex), state_(std::make_shared<detail::client_state>(ex, std::move(cfg))) {
  state_->wire_events();
  auto& ctx = asio::query(ex_, asio::execution::context);
  asio::use_service<detail::client_registry>(ctx).add(state_);
  asio::dispatch(state_->strand, [s = state_] {
    for (auto& n : s->nodes) n->start();
  });
}

client::~client() {
  if (!state_) return;
  state_->mark_shut();           // held locks stop being valid before their release is sent
  auto strand = state_->strand;  // not state_->strand in the call: the lambda moves state_
  // Releases what is still held and sends what is queued, then closes (if the
  // io_context keeps running; if it is destroyed first, the connections just close).
  asio::dispatch(strand, [s = std::move(state_)] { s->close_all_gracefully({}); });
}

client& client::operator=(client&& other) noexcept {
  if (this != &other) {
    client dying{std::move(*this)};
    ex_ = std::move(other.ex_);
    state_ = std::move(other.state_);
  }
  return *this;
}

std::size_t client::node_count() const noexcept {
  return state_ ? state_->size() : 0;
}

namespace detail {
struct testing_access {
  static client_state& state(client& c) { return *c.state_; }
};
}  // namespace detail

std::size_t detail::offers_subscriptions(client& c) {
  const client_state& s = testing_access::state(c);
  std::size_t n = 0;
  for (std::size_t i = 0; s.wakes && i < s.size(); ++i)
    if (s.wakes->offers_epoch(i) != 0) ++n;
  return n;
}

void detail::set_fence_writeback_hook(client& c, std::function<void(std::string_view)> hook) {
  testing_access::state(c).before_fence_writeback = std::move(hook);
}

}  // namespace redlock
