#include "client/wake.hpp"

#include "client/client_state.hpp"

#include <utility>

namespace redlock::detail {

void client_state::line_formed(const std::string& key) {
  if (!cfg.wake_on_release || closed) return;
  if (!wakes) wakes = std::make_unique<wake_hub>(*this);
  wakes->watch(key);
}

void client_state::line_gone(const std::string& key) {
  if (wakes) wakes->unwatch(key);
}

void client_state::end_waits() {
  // Collected first: each call leaves its line as it completes.
  std::vector<waiter*> all;
  for (auto& [key, line] : waiters) all.insert(all.end(), line.begin(), line.end());
  for (waiter* w : all) w->wake();
}

void wake_hub::open() {
  // The callbacks hold the state weakly: the hub (and its connections) belong to it.
  std::weak_ptr<client_state> weak = s_.weak_from_this();
  for (std::size_t i = 0; i < s_.nodes.size(); ++i) {
    const connection& node = *s_.nodes[i];
    auto sub = std::make_shared<connection>(s_.strand, node.uri(), s_.cfg, i, nullptr, node.tls());
    sub->make_subscriber([weak](const resp::reply& r) {
      if (auto s = weak.lock(); s && s->wakes) s->wakes->on_message(r);
    });
    sub->on_event = [weak, i](connection&, node_event::kind k, const std::string&) {
      if (auto s = weak.lock(); s && s->wakes) s->wakes->on_event(i, k);
    };
    subscribers_.push_back(std::move(sub));
  }
  up_.assign(subscribers_.size(), false);
  for (auto& sub : subscribers_) sub->start();
}

void wake_hub::watch(const std::string& key) {
  if (closed_) return;
  if (subscribers_.empty()) open();
  if (!watched_.try_emplace(key).second) return;
  for (std::size_t i = 0; i < subscribers_.size(); ++i)
    if (up_[i]) send(i, "SUBSCRIBE", key);
}

void wake_hub::unwatch(const std::string& key) {
  if (closed_ || watched_.erase(key) == 0) return;
  for (std::size_t i = 0; i < subscribers_.size(); ++i)
    if (up_[i]) send(i, "UNSUBSCRIBE", key);
}

bool wake_hub::heard(const std::string& key, std::string_view token) {
  auto it = watched_.find(key);
  if (it == watched_.end() || it->second.last_token == token) return false;
  it->second.last_token.assign(token);
  return true;
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
  } else if (k == node_event::kind::connected) {
    up_[node] = true;
    for (const auto& [key, w] : watched_) send(node, "SUBSCRIBE", key);
  }
}

void wake_hub::on_message(const resp::reply& r) {
  if (closed_) return;
  const std::string key{r[2].text};
  auto it = watched_.find(key);
  if (it == watched_.end()) return;  // a line that is gone, or a late message
  if (r[1].text == "subscribe") {
    // A release between the waiter's last attempt and this subscription went unheard:
    // the first confirmation lets the head try once more.
    if (std::exchange(it->second.confirmed, true)) return;
  } else if (!r[3].is_string() || !heard(key, r[3].text)) {
    return;  // the same release, announced by another node (or heard locally)
  }
  s_.wake_waiter(key);
}

void wake_hub::shutdown() {
  if (closed_) return;
  closed_ = true;
  watched_.clear();
  for (auto& sub : subscribers_) sub->close();
}

}  // namespace redlock::detail
