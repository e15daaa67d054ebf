// SPDX-License-Identifier: BSL-1.0
// The election's two rounds as quorum operations: one request per node, answers read by
// election_decisions, completion as soon as nothing more can change the outcome.

#include "drivers/election_round.hpp"

#include <fmt/format.h>

#include <vector>

#include "client/client_state.hpp"
#include "drivers/release.hpp"
#include "quorum/operation.hpp"
#include "scripts/script_calls.hpp"
#include "scripts/scripts.hpp"

namespace redlock::detail {
namespace {

class election_round_op final
    : public quorum_op<client_state, void(error_code, election_round_result)> {
 public:
  election_round_op(std::shared_ptr<client_state> s, bool read, election_round_handler h)
      : quorum_op(std::move(s), nullptr, std::move(h)), read_(read) {
    verb_ = read ? "read the election" : "write the leader's record";
    reports_ = false;
    views_.resize(s_->size());
  }

  void start(std::string payload) {
    if (s_->closed) return complete(error::shut_down, {});
    payload_ = std::move(payload);
    // A read has no effect to undo; a write may already have run somewhere.
    watch_cancellation(read_ ? cancel_any : cancel_with_effects);
    const auto now = boot_clock::now();
    // A fresh client may still be connecting: its requests wait for the handshake.
    send_to_all(payload_, read_ ? &election_read_script : &election_record_script,
                now + s_->cfg.node_timeout, now + s_->cfg.connect_timeout + s_->cfg.node_timeout);
    sent_all_ = true;
    decide();
  }

 private:
  // One server listed twice, or a replica, would count twice towards an observer's
  // majority: as for a lock, only independent masters are asked.
  bool should_send(std::size_t i) override {
    std::string why;
    if (s_->independent(i, &why)) return true;
    held_back(i, std::move(why));
    return false;
  }

  vote classify(std::size_t i, const resp::reply& r) override {
    if (read_) return read_election_answer(r, views_[i]) ? vote::yes : vote::failed;
    if (r.empty() || r[0].kind != resp::type::integer) return vote::failed;
    return r[0].integer == 1 ? vote::yes : vote::no;
  }

  void on_tally() override {
    if (sent_all_) decide();
  }

  void on_cancel() override { complete(error::cancelled, found()); }

  void decide() {
    const std::size_t n = s_->size();
    const std::size_t in = round_.yes + round_.no + round_.held + round_.failed;
    if (read_) {
      if (!election_read_decided(decide_leader(views_, n), in, n)) return;
    } else if (round_.yes < quorum(n) && in < n) {
      return;
    }
    complete({}, found());
  }

  election_round_result found() const {
    election_round_result out;
    const std::size_t n = s_->size();
    if (read_) {
      out.leader = decide_leader(views_, n);
      out.nodes = views_;
    } else {
      out.written = round_.yes;
    }
    return out;
  }

  bool read_;
  bool sent_all_ = false;
  std::string payload_;
  std::vector<election_node_view> views_;
};

// A leader's resignation: the lock's release (every node, whatever its standing; late
// nodes in the background), with a script that also deletes the leader's record beside the
// lock key (election_resign_script).
class resign_op final : public lock_release_op {
 public:
  using lock_release_op::lock_release_op;

  void start(lock& lk, std::string record_key) {
    if (!take(lk, "resign")) return;
    record_key_ = std::move(record_key);
    // A member: a connection still being made keeps the request (a view of it) until ready.
    write_election_resign(payload_, key_, record_key_, token_, send_as::sha);
    release(payload_, election_resign_script);
  }

 private:
  // As a lock's release: a node that may not have run it gets it in the background, kept
  // across reconnects (as text: nobody reads the reply, so NOSCRIPT must not lose it).
  void on_unsent(std::size_t i) override {
    std::string payload;
    write_election_resign(payload, key_, record_key_, token_, send_as::text);
    s_->nodes[i]->submit_detached(std::move(payload));
  }

  std::string record_key_;
  std::string payload_;
};

void launch_round(std::shared_ptr<client_state> s, bool read, std::string payload,
                  election_round_handler h) {
  if (!s) return complete_without_client(std::move(h), election_round_result{});
  const auto& strand = s->strand;  // kept alive by the op
  launch_op(new election_round_op(std::move(s), read, std::move(h)), strand,
            [payload = std::move(payload)](election_round_op& op) mutable {
              op.start(std::move(payload));
            });
}

}  // namespace

std::string election_record_key(const client_state& s, std::string_view name) {
  const std::string key = s.names.key(name);
  std::string tag;
  if (auto t = s.colocation_tag(key)) tag = fmt::format("{{{}}}:", *t);
  return s.names.election_record(tag, name);
}

void start_election_write(std::shared_ptr<client_state> s, std::string lock_key,
                          std::string record_key, std::string token, std::uint64_t term,
                          std::string value, std::chrono::milliseconds record_ttl,
                          election_round_handler h) {
  std::string payload;
  write_election_record(payload, lock_key, record_key, token, term, value, record_ttl);
  launch_round(std::move(s), false, std::move(payload), std::move(h));
}

void start_election_resign(std::shared_ptr<client_state> s, lock lk, std::string record_key,
                           void_handler h) {
  if (!s) return complete_without_client(std::move(h));
  const auto& strand = s->strand;  // kept alive by the op
  // The operation owns the lock until it starts on the strand.
  launch_op(new resign_op(std::move(s), nullptr, std::move(h)), strand,
            [lk = std::move(lk), key = std::move(record_key)](resign_op& op) mutable {
              op.start(lk, std::move(key));
            });
}

void start_election_read(std::shared_ptr<client_state> s, std::string lock_key,
                         std::string record_key, election_round_handler h) {
  std::string payload;
  write_election_read(payload, lock_key, record_key);
  launch_round(std::move(s), true, std::move(payload), std::move(h));
}

}  // namespace redlock::detail
