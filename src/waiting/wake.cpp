// SPDX-License-Identifier: BSL-1.0
#include "waiting/wake.hpp"

#include <algorithm>
#include <utility>

#include "client/client_state.hpp"

namespace redlock::detail {

void client_state::line_formed(const std::string& key) {
  if (!cfg.wake_on_release || closed) return;
  if (!wakes) wakes = std::make_unique<wake_hub>(*this);
  wakes->watch(key);
}

void client_state::line_gone(const std::string& key) {
  if (wakes) wakes->unwatch(key);
}

void client_state::set_waits(set_waiter& w, const std::vector<std::string>& keys) {
  lines.set_waits(w, keys);
  for (const auto& key : keys) line_formed(key);
}

void client_state::set_stops(set_waiter& w, const std::vector<std::string>& keys) {
  for (std::string_view key : lines.set_stops(w, keys)) line_gone(std::string{key});
}

void client_state::wake_waiter_after(std::string_view key, boot_clock::duration delay) {
  if (waiter* head = lines.head(key))
    head->wake_after(std::chrono::duration_cast<std::chrono::nanoseconds>(delay));
}

void client_state::wake_waiter(std::string_view key, std::string_view token, bool announced) {
  waiter* const head = lines.head(key);
  const bool line = head != nullptr;
  if (!announced && wakes && !token.empty()) {
    // A local hand-off wins every race (the woken SET leaves in the same write as the
    // release): after a run of them, this release is left to its announcement, which
    // reaches this line's head and every other client's at about the same time.
    if (line && !wakes->hand_off_locally(key, token)) {
      wake_sets(key, token);
      return;
    }
    // The nodes' announcements of this release must not wake the next head again.
    wakes->heard(key, token);
  }
  if (head) head->wake();
  wake_sets(key, token);
}

void client_state::wake_sets(std::string_view key, std::string_view token) {
  if (!lines.any_sets()) return;  // the common path: nobody waits on a set
  for (set_waiter* w : lines.sets_on(key)) w->wake(token);
}

void client_state::end_waits() {
  // Collected first: each call leaves the list (and its line, a set its keys) as it
  // completes. Every acquisition in progress, not only those in a line: one whose attempt
  // is out is in none, and when its round is decided the lines are gone. Then the permits
  // waiting on their keys, and those in semaphores' lines.
  for (acquisition* c : lines.calls()) c->end_at_shutdown();
  // Election observers among the sets read once more, and find the client shut down.
  for (set_waiter* w : lines.all_sets()) w->wake({});
  wake_permit_waiters();
}

void wake_hub::open() {
  // The callbacks hold the state weakly: the hub (and its connections) belong to it.
  std::weak_ptr<client_state> weak = s_.weak_from_this();
  for (std::size_t i = 0; i < s_.nodes.size(); ++i) {
    const node& n = *s_.nodes[i];
    // A cluster publishes to every server in it: one subscriber, on its first seed, hears
    // every release.
    node_uri u = n.uri();
    u.cluster = false;
    u.seeds.clear();
    auto sub = std::make_shared<connection>(s_.strand, std::move(u), s_.cfg, i, nullptr, n.tls());
    sub->make_subscriber([weak, i](const resp::reply& r) {
      if (auto s = weak.lock(); s && s->wakes) s->wakes->on_message(i, r);
    });
    sub->on_event = [weak, i](node&, node_event::kind k, const std::string&) {
      if (auto s = weak.lock(); s && s->wakes) s->wakes->on_event(i, k);
    };
    subscribers_.push_back(std::move(sub));
  }
  up_.assign(subscribers_.size(), false);
  offers_epoch_.assign(subscribers_.size(), 0);
  for (auto& sub : subscribers_) sub->start();
}

void wake_hub::watch(const std::string& key) {
  if (closed_) return;
  if (subscribers_.empty()) open();
  if (++watched_[key].watchers > 1) return;
  for (std::size_t i = 0; i < subscribers_.size(); ++i)
    if (up_[i]) send(i, "SUBSCRIBE", key);
}

void wake_hub::watch_offers(const std::string& channel) {
  if (closed_ || !offers_.empty()) return;
  offers_ = channel;
  watch(channel);  // never unwatched: one SUBSCRIBE for the client's life
}

void wake_hub::unwatch(const std::string& key) {
  if (closed_) return;
  auto it = watched_.find(key);
  if (it == watched_.end() || --it->second.watchers > 0) return;
  watched_.erase(it);
  for (std::size_t i = 0; i < subscribers_.size(); ++i)
    if (up_[i]) send(i, "UNSUBSCRIBE", key);
}

bool wake_hub::heard(std::string_view key, std::string_view token) {
  auto it = watched_.find(key);
  if (it == watched_.end()) return false;
  watched& w = it->second;
  if (std::find(w.recent.begin(), w.recent.end(), token) != w.recent.end()) return false;
  w.recent[w.next].assign(token);
  w.next = (w.next + 1) % w.recent.size();
  return true;
}

bool wake_hub::hand_off_locally(std::string_view key, std::string_view token) {
  auto it = watched_.find(key);
  if (it == watched_.end() || !it->second.confirmed) return true;  // no announcement comes
  watched& w = it->second;
  w.yielded = ++w.local_handoffs > local_handoff_budget;
  if (!w.yielded) return true;
  w.local_handoffs = 0;
  w.yielded_token.assign(token);
  w.yielded_at = boot_clock::now();
  return false;
}

bool wake_hub::yielding(std::string_view key) const {
  auto it = watched_.find(key);
  return it != watched_.end() && it->second.yielded;
}

bool wake_hub::released(std::string_view key, std::string_view token) const {
  auto it = watched_.find(key);
  return it != watched_.end() && !token.empty() &&
         std::find(it->second.recent.begin(), it->second.recent.end(), token) !=
             it->second.recent.end();
}

void wake_hub::send(std::size_t node, std::string_view command, const std::string& key) {
  // One channel per command: each has exactly one reply, matched in order.
  std::string payload;
  resp::append_command(payload, command, key);
  subscribers_[node]->submit_detached(std::move(payload));
}

void wake_hub::on_event(std::size_t node, node_event::kind k) {
  if (closed_) return;
  if (k == node_event::kind::disconnected) {
    up_[node] = false;  // the server forgot our channels; resubscribed at the next connect
    offers_epoch_[node] = 0;
  } else if (k == node_event::kind::connected) {
    up_[node] = true;
    for (const auto& [key, w] : watched_) send(node, "SUBSCRIBE", key);
  }
}

void wake_hub::on_message(std::size_t node, const resp::reply& r) {
  if (closed_) return;
  if (!offers_.empty() && r[2].text == offers_) {
    // A subscription that came up may have missed offers: every waiting call sweeps.
    if (r[1].text == "subscribe") {
      offers_epoch_[node] = ++epochs_;
      return s_.wake_permit_waiters();
    }
    if (r[3].is_string()) s_.permit_offered(node, r[3].text);
    return;
  }
  const std::string key{r[2].text};
  auto it = watched_.find(key);
  if (it == watched_.end()) return;  // a line or set that is gone, or a late message
  std::string_view token;
  if (r[1].text == "subscribe") {
    // A release between the waiters' last attempt and this subscription went unheard:
    // the first confirmation lets the head (and the sets waiting) try once more.
    if (std::exchange(it->second.confirmed, true)) return;
  } else if (!r[3].is_string() || !heard(key, r[3].text)) {
    return;  // the same release, announced by another node (or heard locally)
  } else {
    token = r[3].text;  // a set waits on several keys: the same release on another is no news
    watched& w = it->second;
    if (!w.yielded_token.empty() && token == w.yielded_token) {
      // Our own release, left to the others: every client hears it now. The local head
      // tries after as long again as the announcement took to come back (another
      // client's waiter needs about that to be scheduled and to send its SET).
      w.yielded_token.clear();
      s_.wake_waiter_after(key, boot_clock::now() - w.yielded_at);
      s_.wake_sets(key, token);
      return;
    }
    w.local_handoffs = 0;
    w.yielded = false;
  }
  s_.wake_waiter(key, token, true);
}

void wake_hub::shutdown() {
  if (closed_) return;
  closed_ = true;
  watched_.clear();
  for (auto& sub : subscribers_) sub->close();
}

}  // namespace redlock::detail
