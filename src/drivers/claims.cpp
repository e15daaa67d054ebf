// SPDX-License-Identifier: BSL-1.0
// Claims: many try-locks in one round trip per node. A batch is one script call per
// node; a majority of nodes is asked first and the others only for the resources that
// the first answers left undecided (Redlock needs a majority, not every node). Single
// calls (async_claim, the one-lock async_settle) are queued and sent as batches by a
// per-client coalescer: whatever is queued when a batch slot is free goes together.

#include "drivers/claims.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <string_view>
#include <unordered_map>

#include "drivers/batch_rounds.hpp"
#include "drivers/carry_out.hpp"
#include "machines/batch_answers.hpp"
#include "machines/claim_decisions.hpp"
#include "machines/claim_fsm.hpp"
#include "machines/settle_fsm.hpp"
#include "quorum/operation.hpp"
#include "quorum/rules.hpp"
#include "redlock/client.hpp"
#include "scripts/script_calls.hpp"
#include "scripts/scripts.hpp"

namespace redlock {

const char* to_string(claim_status s) noexcept {
  switch (s) {
    case claim_status::won:
      return "won";
    case claim_status::held:
      return "held";
    case claim_status::done:
      return "done";
    case claim_status::duplicate:
      return "duplicate";
    case claim_status::failed:
      return "failed";
  }
  return "unknown";
}

const char* to_string(claim_mode m) noexcept {
  switch (m) {
    case claim_mode::spread_marker:
      return "spread_marker";
    case claim_mode::own_marker:
      return "own_marker";
  }
  return "unknown";
}

namespace detail {

namespace {

// Batches in flight per client and kind before single calls wait to be coalesced.
constexpr int batch_slots = 4;

// ---- claim batches -----------------------------------------------------------------

struct claim_item {
  explicit claim_item(std::string r, claim_mode m, claim_completion h = claim_completion{},
                      std::uint64_t i = 0)
      : resource(std::move(r)), mode(m), handler(std::move(h)), id(i) {}
  std::string resource;
  claim_mode mode;
  std::string key;
  std::string token;
  claim_completion handler;  // coalesced calls only; emptied once completed
  std::uint64_t id = 0;      // a coalesced call with a cancellation slot
};

// Completes a coalesced call `cancelled` ahead of its batch.
void complete_cancelled(claim_completion& h) {
  claim_result r;
  r.error = error::cancelled;
  h.post(error_code{error::cancelled}, std::move(r));
}

using claims_completion = completion<void(error_code, std::vector<claim_result>)>;
using count_completion = completion<void(error_code, std::size_t)>;

// A claim batch: the op sends and reads, its claim_fsm counts the answers and decides
// when to ask the nodes kept back, what each name ends as and where it is undone.
class claim_batch_op final : public batch_rounds<void(error_code, std::vector<claim_result>)>,
                             public coalesced_batch {
 public:
  claim_batch_op(std::shared_ptr<client_state> s, std::chrono::milliseconds ttl,
                 std::vector<claim_item> items, claims_completion whole, bool coalesced)
      : batch_rounds(std::move(s), std::move(whole)),
        ttl_(ttl),
        items_(std::move(items)),
        coalesced_(coalesced),
        fsm_(s_->size(), items_.size()) {}

  void start() {
    if (s_->closed) return fail_all(error::shut_down);
    if (!coalesced_) watch_cancellation(cancel_with_effects);
    const std::size_t n = s_->size();
    const auto unique = name_tokens();
    const auto plan = plan_claim_round(candidates(n), s_->claim_rotor++);
    start_ = boot_clock::now();  // validity counts from before the first byte can leave
    valid_until_ = validity_deadline(start_, ttl_, s_->cfg.drift_factor);
    const auto deadline = request_deadline(start_, s_->cfg.node_timeout, valid_until_);
    begin_round();
    // A connection still being made (a fresh client) is waited for within validity.
    for (std::size_t k = 0; k < plan.asks; ++k) {
      const std::size_t i = plan.ask[k];
      ask(i, unique, s_->nodes[i]->connecting() ? valid_until_ : deadline);
    }
    fsm_.planned(valid_until_, plan.later);
    act(fsm_.tally(moment()));  // every node refused: completes posted, still initiating
  }

 private:
  // Gives each name its key and, for the first of equal names, a token; returns those
  // first names, which alone are sent.
  std::vector<std::uint32_t> name_tokens() {
    std::vector<std::uint32_t> unique;
    unique.reserve(items_.size());
    std::unordered_map<std::string_view, std::uint32_t> seen;
    if (items_.size() > 1) seen.reserve(items_.size());
    for (std::uint32_t j = 0; j < items_.size(); ++j) {
      auto& it = items_[j];
      it.key = s_->names.key(it.resource);
      if (items_.size() > 1 && !seen.emplace(it.resource, j).second) {
        fsm_.duplicate(j);
        continue;
      }
      s_->tokens.next(it.token);
      // An own marker's state byte leads its token: the token is the key's whole value,
      // so unlock, extend and the undo compare it as they compare any other.
      if (it.mode == claim_mode::own_marker) it.token.insert(it.token.begin(), own_marker_held);
      unique.push_back(j);
    }
    return unique;
  }

  // What the first round's plan needs of each node. Whether a node votes is asked only
  // of nodes that take requests.
  std::span<const claim_candidate> candidates(std::size_t n) {
    const auto now = boot_clock::now();
    for (std::size_t i = 0; i < n; ++i) {
      const auto& c = *s_->nodes[i];
      auto& f = candidates_[i];
      f.ready = c.ready();
      f.accepts = c.accepts();
      f.votes = (f.ready || f.accepts) && s_->votes(i, ttl_, now);
    }
    return {candidates_.data(), n};
  }

  claim_moment moment() const { return {.now = boot_clock::now(), .closed = s_->closed}; }

  void ask(std::size_t i, const std::vector<std::uint32_t>& which,
           boot_clock::time_point deadline) {
    if (which.empty()) return;
    fsm_.asking(i, which);
    prepare(i, which);
    submit(i, deadline);  // a refusal is told as a failure of a request not sent
  }

  const script& write_call(std::string& out, std::span<const std::uint32_t> which) const override {
    write_claim(out, which, key_at(items_), token_at(items_), ttl_);
    return claim_script;
  }
  bool counts(std::size_t i) override { return voter(i, ttl_, boot_clock::now()); }

  void answered(std::size_t i, std::span<const std::uint32_t> which,
                std::span<const std::int64_t> codes) override {
    fsm_.answered(i, which, codes);
  }
  void failed(std::size_t i, std::span<const std::uint32_t> which, bool sent) override {
    fsm_.failed(i, which, sent);
  }
  void on_tally() override { act(fsm_.tally(moment())); }

  // Carries out what the machine decided (carry_out.hpp). The first round is planned per
  // node, not asked for; each name ends at complete, won or not.
  void act(const claim_action& a) { action_runner::carry_out(*this, a); }
  friend action_runner;
  void do_answer(const claim_action& a) { complete_now(a.ec, {}); }
  void do_second_round(const claim_action& a) {
    const auto deadline = request_deadline(boot_clock::now(), s_->cfg.node_timeout, valid_until_);
    for (std::size_t i = 0; i < s_->size(); ++i)
      if (a.nodes & bit(i)) ask(i, a.detail, deadline);
    act(fsm_.tally(moment()));  // all refused: decided now
  }
  void do_complete(const claim_action& a) {
    if (a.ec) return fail_all(a.ec);
    finish();
  }

  void finish() {
    const std::size_t n = s_->size();
    std::vector<claim_result> results(items_.size());
    std::vector<std::vector<std::uint32_t>> undo(n);
    for (std::uint32_t j = 0; j < items_.size(); ++j) {
      auto& it = items_[j];
      auto& r = results[j];
      const claim_ending e = fsm_.ending(j);
      r.status = e.status;
      r.error = e.error;
      if (e.keep) {
        lock_data& d = lock_access::make(r.lock);
        d.owner = s_;
        d.assign(it.key, it.key.size() - it.resource.size(), it.token);
        d.ttl = ttl_;
        d.deadline = valid_until_;
        d.nodes = fsm_.asked(j);
        s_->hold(d);
        continue;
      }
      for (std::size_t i = 0; i < n; ++i)
        if (e.undo & bit(i)) undo[i].push_back(j);
    }
    // Undo partial takes: compare-and-delete where our SET may have landed. EVAL, not
    // EVALSHA: nobody reads the reply, so a flushed script cache must not hide it.
    for (std::size_t i = 0; i < n; ++i) {
      if (undo[i].empty()) continue;
      std::string p;
      write_settle(p, undo[i], key_at(items_), token_at(items_), std::chrono::milliseconds{0},
                   send_as::text);
      s_->nodes[i]->submit_detached(std::move(p));
    }
    deliver({}, std::move(results));
  }

  // Terminal or partial: the caller hears at once; the replies are still read, and what
  // the batch took is released as a lost claim's would be (finish()).
  void on_cancel() override { act(fsm_.cancel()); }

  // The same for one coalesced call: its handler now, its name released if won.
  bool cancel_call(std::uint64_t id) override {
    for (std::uint32_t j = 0; j < items_.size(); ++j) {
      auto& it = items_[j];
      if (it.id != id) continue;
      if (it.handler && !done_ && fsm_.cancel_name(j)) complete_cancelled(it.handler);
      return true;
    }
    return false;
  }

  void fail_all(error_code ec) {
    std::vector<claim_result> results(items_.size());
    for (auto& r : results) r.error = ec;
    deliver(ec, std::move(results));
  }

  // The last reply is in. Coalesced calls have a handler each, completed as the op's own
  // would be (posted while initiating); the op then completes to nobody.
  void deliver(error_code ec, std::vector<claim_result> results) {
    if (!coalesced_) return complete(ec, std::move(results));
    for (std::size_t j = 0; j < items_.size(); ++j) {
      auto& h = items_[j].handler;
      if (!h) continue;  // cancelled already
      if (items_[j].id != 0) h.slot().clear();
      if (initiating_)
        h.post(ec, std::move(results[j]));
      else
        h.dispatch(ec, std::move(results[j]));
    }
    complete(ec, {});
    if (s_->claims) s_->claims->claim_batch_done(this);
  }

  std::chrono::milliseconds ttl_;
  std::vector<claim_item> items_;
  bool coalesced_;
  claim_fsm fsm_;
  std::array<claim_candidate, max_nodes> candidates_{};
  boot_clock::time_point start_{};
  boot_clock::time_point valid_until_{};
};

// ---- settle batches ----------------------------------------------------------------

struct settle_item {
  std::string key;
  std::string token;
  node_mask nodes = 0;
  void_completion handler;  // coalesced calls only; emptied once completed
  std::uint64_t id = 0;     // a coalesced call with a cancellation slot
};

// The nodes each claim of `items` went to: what a settle machine is made of.
std::vector<node_mask> claim_nodes(const std::vector<settle_item>& items) {
  std::vector<node_mask> nodes;
  nodes.reserve(items.size());
  for (const auto& it : items) nodes.push_back(it.nodes);
  return nodes;
}

// The driver of settle_fsm: it sends the round the machine plans, feeds it each node's
// answer, and on its completion spreads the done markers and completes the calls.
class settle_batch_op final : public batch_rounds<void(error_code, std::size_t)>,
                              public coalesced_batch {
 public:
  settle_batch_op(std::shared_ptr<client_state> s, std::chrono::milliseconds keep,
                  std::vector<settle_item> items, count_completion whole, bool coalesced,
                  std::size_t not_ours = 0)
      : batch_rounds(std::move(s), std::move(whole)),
        keep_(keep),
        items_(std::move(items)),
        fsm_(s_->size(), claim_nodes(items_), keep.count() > 0, not_ours),
        coalesced_(coalesced) {}

  void start() {
    // Terminal only: the settle scripts, once sent, still run, so the claims end settled
    // or not, which the caller cannot tell.
    if (!coalesced_) watch_cancellation(asio::cancellation_type::terminal);
    begin_round();
    act(fsm_.start());
  }

 private:
  friend action_runner;
  void act(const settle_action& a) { action_runner::carry_out(*this, a); }

  // The machine's steps (carry_out.hpp): its one round, then the completion.
  void do_send_round(const settle_action& a) {
    const auto deadline = request_deadline(boot_clock::now(), s_->cfg.node_timeout);
    for (std::size_t i = 0; i < s_->size(); ++i) {
      if (!(a.nodes & bit(i))) continue;
      prepare(i, fsm_.take_asks(i));
      submit(i, deadline);  // a refusal is tallied as a failure
    }
    act(fsm_.tally(outstanding_, s_->closed));  // completes posted: still initiating
  }
  void do_complete(const settle_action&) { round_done(); }

  const script& write_call(std::string& out, std::span<const std::uint32_t> which) const override {
    write_settle(out, which, key_at(items_), token_at(items_), keep_, send_as::sha);
    return settle_script;
  }

  void answered(std::size_t i, std::span<const std::uint32_t> which,
                std::span<const std::int64_t> codes) override {
    fsm_.answered(i, which, codes);
  }
  void failed(std::size_t i, std::span<const std::uint32_t> which, bool) override {
    fsm_.failed(i, which);
  }
  void on_tally() override { act(fsm_.tally(outstanding_, s_->closed)); }

  // Done markers settled on a majority also go to the nodes the claim never went to, onto
  // the free name only (settle_script with an empty token), reply ignored but kept across
  // reconnects: a marker on every node that answers survives the restart of one of them.
  // Own markers stay where the claim is (claim_mode::own_marker): no call beyond them.
  void spread_markers() {
    const std::size_t n = s_->size();
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<const settle_item*> rest;
      for (std::uint32_t j = 0; j < items_.size(); ++j)
        if (fsm_.spread(j, items_[j].token) & bit(i)) rest.push_back(&items_[j]);
      if (rest.empty()) continue;
      std::string p;
      write_marker_spread(
          p, rest, [](const settle_item* it) -> std::string_view { return it->key; }, keep_);
      s_->nodes[i]->submit_detached(std::move(p));
    }
  }

  void on_cancel() override { complete_now(error::cancelled, 0); }

  // Terminal, for one coalesced call: its caller hears now, its settle still runs.
  bool cancel_call(std::uint64_t id) override {
    for (auto& it : items_) {
      if (it.id != id) continue;
      if (it.handler && !done_) it.handler.post(error_code{error::cancelled});
      return true;
    }
    return false;
  }

  // Every reply of the round is in.
  void round_done() {
    spread_markers();
    if (coalesced_) {
      // A handler per call, completed as the op's own would be (posted while initiating).
      for (std::uint32_t j = 0; j < items_.size(); ++j) {
        settle_item& it = items_[j];
        if (!it.handler) continue;  // cancelled already
        if (it.id != 0) it.handler.slot().clear();
        const auto ec = fsm_.outcome(j);
        if (initiating_)
          it.handler.post(ec);
        else
          it.handler.dispatch(ec);
      }
      complete({}, 0);
      if (s_->claims) s_->claims->settle_batch_done(this);
      return;
    }
    const settle_summary sum = fsm_.summary();
    complete(sum.outcome(), sum.settled());
  }

  std::chrono::milliseconds keep_;
  std::vector<settle_item> items_;
  settle_fsm fsm_;
  bool coalesced_;
};

}  // namespace

namespace {

// Starts a batch made with new, on the strand already: it frees itself (quorum_op's rule).
template <typename Op>
void launch_batch(Op* op) {
  op->run_guarded([op] { op->start(); });
}

// Takes a won claim out of `lk` (emptied, as async_unlock does) into a settle item.
bool take(client_state& s, lock& lk, settle_item& out) {
  if (!lk.owns()) return false;
  // Emptied: its destructor must not release it again.
  const lock_ptr d = lock_access::take(lk);
  s.unhold(*d);
  out.key = d->key();
  out.token = d->token();
  out.nodes = d->nodes & fleet_mask(s.size());
  return true;
}

}  // namespace

// ---- the coalescer -----------------------------------------------------------------

namespace {

// A coalesced call's cancellation slot handler. It may be emitted from another executor:
// it hops onto the strand and finds the call by id, which outlives nothing (a call that
// has completed is simply not found).
struct coalesced_cancel {
  std::weak_ptr<client_state> state;
  strand_type strand;
  std::uint64_t id;
  asio::cancellation_type_t honoured;

  void operator()(asio::cancellation_type_t type) const {
    if ((type & honoured) == asio::cancellation_type::none) return;
    asio::dispatch(strand, [w = state, id = id] {
      if (auto s = w.lock(); s && s->claims) s->claims->cancel(id);
    });
  }
};

}  // namespace

template <typename Handler>
std::uint64_t claim_coalescer::watch(Handler& h, asio::cancellation_type_t honoured) {
  auto slot = h.slot();
  if (!slot.is_connected()) return 0;
  const std::uint64_t id = ++next_id_;
  slot.template emplace<coalesced_cancel>(s_.weak_from_this(), s_.strand, id, honoured);
  return id;
}

void claim_coalescer::add_claim(std::string resource, std::chrono::milliseconds ttl,
                                claim_mode mode, claim_completion h) {
  // As async_try_claim: the call may have taken its name, which is then released.
  const auto id = watch(h, cancel_with_effects);
  claims_.push_back(pending_claim{std::move(resource), ttl, mode, std::move(h), id});
  schedule();
}

void claim_coalescer::add_settle(std::string key, std::string token, std::uint16_t nodes,
                                 std::chrono::milliseconds keep, void_completion h) {
  // Terminal only, as a settle of a span: the settle is sent all the same.
  const auto id = watch(h, asio::cancellation_type::terminal);
  settles_.push_back(
      pending_settle{std::move(key), std::move(token), nodes, keep, std::move(h), id});
  schedule();
}

void claim_coalescer::cancel(std::uint64_t id) {
  // A queued claim was never sent: it is dropped. A queued settle stays queued (the
  // claim is out of its lock object already) and settles to nobody.
  for (auto p = claims_.begin(); p != claims_.end(); ++p) {
    if (p->id != id) continue;
    auto h = std::move(p->handler);
    claims_.erase(p);
    return complete_cancelled(h);
  }
  for (auto& p : settles_) {
    if (p.id != id) continue;
    if (p.handler) std::exchange(p.handler, {}).post(error_code{error::cancelled});
    return;
  }
  for (auto* b : batches_)
    if (b->cancel_call(id)) return;
}

void claim_coalescer::remove_batch(coalesced_batch* b) {
  batches_.erase(std::remove(batches_.begin(), batches_.end(), b), batches_.end());
}

void claim_coalescer::schedule() {
  if (flush_posted_) return;
  flush_posted_ = true;
  asio::post(s_.strand, [s = s_.shared_from_this()] {
    if (s->claims) {
      s->claims->flush_posted_ = false;
      s->claims->flush();
    }
  });
}

void claim_coalescer::flush() {
  auto s = s_.shared_from_this();
  while (!claims_.empty() && claims_in_flight_ < batch_slots) {
    const auto ttl = claims_.front().ttl;
    std::vector<claim_item> items;
    for (auto& p : take_batch(claims_, [](const pending_claim& p) { return p.ttl; }))
      items.emplace_back(std::move(p.resource), p.mode, std::move(p.handler), p.id);
    ++claims_in_flight_;
    auto* op = new claim_batch_op(s, ttl, std::move(items), claims_completion{}, true);
    batch_started(op);
    launch_batch(op);
  }
  while (!settles_.empty() && settles_in_flight_ < batch_slots) {
    const auto keep = settles_.front().keep;
    std::vector<settle_item> items;
    for (auto& p : take_batch(settles_, [](const pending_settle& p) { return p.keep; }))
      items.push_back(
          settle_item{std::move(p.key), std::move(p.token), p.nodes, std::move(p.handler), p.id});
    ++settles_in_flight_;
    auto* op = new settle_batch_op(s, keep, std::move(items), count_completion{}, true);
    batch_started(op);
    launch_batch(op);
  }
}

void claim_coalescer::claim_batch_done(coalesced_batch* b) {
  remove_batch(b);
  --claims_in_flight_;
  if (!claims_.empty()) schedule();
}

void claim_coalescer::settle_batch_done(coalesced_batch* b) {
  remove_batch(b);
  --settles_in_flight_;
  if (!settles_.empty()) schedule();
}

void claim_coalescer::shutdown() {
  auto claims = std::move(claims_);
  auto settles = std::move(settles_);
  claims_.clear();
  settles_.clear();
  auto s = s_.shared_from_this();
  for (auto& p : claims) {
    claim_result r;
    r.error = error::shut_down;
    p.handler.post(error_code{error::shut_down}, std::move(r));
  }
  for (auto& p : settles) p.handler.post(error_code{error::shut_down});
}

// ---- entry points ------------------------------------------------------------------

void start_try_claim(std::shared_ptr<client_state> s, std::vector<std::string> resources,
                     std::chrono::milliseconds ttl, claim_mode mode, claims_handler handler) {
  auto h = take_handler(std::move(handler), s);
  if (!s) return h.post(error_code{error::shut_down}, std::vector<claim_result>{});
  auto strand = s->strand;
  asio::dispatch(strand, [s = std::move(s), resources = std::move(resources), ttl, mode,
                          h = std::move(h)]() mutable {
    auto fail = [&](error_code ec) { h.post(ec, std::vector<claim_result>{}); };
    if (s->closed) return fail(error::shut_down);
    if (resources.size() > max_claim_batch) return fail(error::too_many_resources);
    if (std::any_of(resources.begin(), resources.end(), bad_name))
      return fail(error::invalid_resource);
    if (!check_ttl(ttl, s->cfg).empty()) return fail(error::invalid_ttl);
    if (bad_mode(mode)) return fail(error::invalid_argument);
    if (resources.empty()) return fail(error_code{});
    std::vector<claim_item> items;
    items.reserve(resources.size());
    for (auto& r : resources) items.emplace_back(std::move(r), mode);
    launch_batch(new claim_batch_op(s, ttl, std::move(items), std::move(h), false));
  });
}

void start_claim(std::shared_ptr<client_state> s, std::string resource,
                 std::chrono::milliseconds ttl, claim_mode mode, claim_handler handler) {
  auto fail = [](claim_completion& hh, error_code ec) {
    claim_result r;
    r.error = ec;
    hh.post(ec, std::move(r));
  };
  auto h = take_handler(std::move(handler), s);
  if (!s) return fail(h, error::shut_down);
  auto strand = s->strand;
  asio::dispatch(strand, [s = std::move(s), resource = std::move(resource), ttl, mode,
                          h = std::move(h), fail]() mutable {
    if (s->closed) return fail(h, error::shut_down);
    if (bad_name(resource)) return fail(h, error::invalid_resource);
    if (!check_ttl(ttl, s->cfg).empty()) return fail(h, error::invalid_ttl);
    if (bad_mode(mode)) return fail(h, error::invalid_argument);
    if (!s->claims) s->claims = std::make_unique<claim_coalescer>(*s);
    s->claims->add_claim(std::move(resource), ttl, mode, std::move(h));
  });
}

void start_settle(std::shared_ptr<client_state> s, std::span<lock> claims,
                  std::chrono::milliseconds keep, count_handler handler) {
  auto h = take_handler(std::move(handler), s);
  if (!s) return h.post(error_code{error::shut_down}, std::size_t{0});
  auto strand = s->strand;
  asio::dispatch(strand, [s = std::move(s), claims, keep, h = std::move(h)]() mutable {
    if (s->closed) return h.post(error_code{error::shut_down}, std::size_t{0});
    if (claims.size() > max_claim_batch)
      return h.post(error_code{error::too_many_resources}, std::size_t{0});
    if (bad_keep(keep)) return h.post(error_code{error::invalid_argument}, std::size_t{0});
    std::vector<settle_item> items;
    items.reserve(claims.size());
    std::size_t not_ours = 0;  // empty locks (lost claims, released or moved from)
    for (auto& lk : claims) {
      settle_item it;
      if (take(*s, lk, it))
        items.push_back(std::move(it));
      else
        ++not_ours;
    }
    if (items.empty())
      return h.post(not_ours ? error_code{error::not_held} : error_code{}, std::size_t{0});
    launch_batch(new settle_batch_op(s, keep, std::move(items), std::move(h), false, not_ours));
  });
}

void start_settle_one(std::shared_ptr<client_state> s, lock& lk, std::chrono::milliseconds keep,
                      void_handler handler) {
  auto h = take_handler(std::move(handler), s);
  if (!s) return h.post(error_code{error::shut_down});
  auto strand = s->strand;
  asio::dispatch(strand, [s = std::move(s), &lk, keep, h = std::move(h)]() mutable {
    if (s->closed) return h.post(error_code{error::shut_down});
    if (bad_keep(keep)) return h.post(error_code{error::invalid_argument});
    settle_item it;
    // An empty lock (default-made, moved from, already settled) is not "taken by another".
    if (lock_access::token(lk).empty()) return h.post(error_code{error::no_lock});
    if (!take(*s, lk, it)) return h.post(error_code{error::not_held});
    if (!s->claims) s->claims = std::make_unique<claim_coalescer>(*s);
    s->claims->add_settle(std::move(it.key), std::move(it.token), it.nodes, keep, std::move(h));
  });
}

}  // namespace detail
}  // namespace redlock
