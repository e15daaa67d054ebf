// SPDX-License-Identifier: BSL-1.0
#include "connection/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/post.hpp>

#include "connection/slots.hpp"
#include "redlock/error.hpp"

namespace redlock::detail {
namespace {

bool aggregate(const resp::node& n) {
  return n.kind == resp::type::array || n.kind == resp::type::map || n.kind == resp::type::set ||
         n.kind == resp::type::push;
}

// The index just past the element at `i` and everything nested in it.
std::size_t skip(const resp::reply& r, std::size_t i) {
  std::size_t open = 1;
  while (open > 0 && i < r.size()) {
    if (aggregate(r[i])) open += r[i].size;
    --open;
    ++i;
  }
  return i;
}

}  // namespace

cluster_node::cluster_node(strand_type strand, node_uri uri, const config& cfg, std::size_t id,
                           const std::vector<const script*>* preload,
                           std::shared_ptr<tls_settings> tls)
    : node(std::move(uri), id),
      strand_(std::move(strand)),
      cfg_(cfg),
      preload_(preload),
      tls_(std::move(tls)),
      owner_(cluster_slots, no_shard),
      refresh_timer_(strand_),
      pending_timer_(strand_) {
  resp::append_command(map_payload_, "CLUSTER", "SLOTS");
}

cluster_node::~cluster_node() = default;

// ---- the slot map ----------------------------------------------------------------------

std::shared_ptr<connection> cluster_node::make_connection(const node_uri& u, bool as_shard) {
  auto c = std::make_shared<connection>(strand_, u, cfg_, id_, as_shard ? preload_ : nullptr, tls_);
  if (as_shard) {
    std::weak_ptr<cluster_node> weak = weak_from_this();
    c->make_shard([weak, host = u.host](std::string payload, std::string_view error) {
      auto self = weak.lock();
      if (!self || self->closed_) return;
      auto rd = parse_redirect(error);
      if (!rd) return;
      const node_uri::endpoint to{rd->host.empty() ? host : std::string{rd->host}, rd->port};
      const std::size_t i = self->shard_for(to, {});
      if (!self->shards_[i].conn) return;
      if (rd->ask) {
        std::string asking;
        resp::append_command(asking, "ASKING");
        self->shards_[i].conn->submit_detached(std::move(asking));
      } else {
        self->owner_[rd->slot] = static_cast<std::uint16_t>(i);
        self->schedule_refresh();
      }
      self->shards_[i].conn->submit_detached(std::move(payload));
    });
    c->on_event = [weak](node& n, node_event::kind k, const std::string& message) {
      if (auto self = weak.lock()) self->on_shard_event(static_cast<connection&>(n), k, message);
    };
  }
  c->start();
  return c;
}

void cluster_node::start() {
  open_seed();
}

void cluster_node::open_seed() {
  if (seed_) seed_->close();
  const auto& e = uri_.seeds[next_seed_++ % uri_.seeds.size()];
  node_uri u = uri_;
  u.cluster = false;
  u.seeds.clear();
  u.host = e.host;
  u.port = e.port;
  seed_failed_ = false;
  seed_ = make_connection(u, false);
  ask_for_map(seed_);
}

void cluster_node::ask_for_map(const std::shared_ptr<connection>& via) {
  if (map_asked_ || closed_) return;
  map_via_ = via->uri().host;
  map_req_ = request{
      map_payload_, nullptr,     boot_clock::now() + cfg_.connect_timeout + cfg_.node_timeout,
      this,         map_request, false};
  if (auto ec = via->submit(map_req_)) return on_map(ec, nullptr);
  map_asked_ = true;
}

void cluster_node::on_map(error_code ec, const resp::reply* reply) {
  map_asked_ = false;
  if (closed_) return;
  if (!ec && (!reply || !apply_map(*reply))) ec = error::unexpected_reply;
  if (ec) {
    ++refresh_failures_;
    const std::string why =
        reply && (*reply)[0].is_error() ? std::string{(*reply)[0].text} : ec.message();
    map_problem_ = fmt::format("no slot map from {} ({})", map_via_, why);
    if (!map_known_) {
      seed_failed_ = true;
      fail_pending(ec == error::unexpected_reply ? error::node_unavailable : ec);
    }
    schedule_refresh();
    return;
  }
  refresh_failures_ = 0;
  map_problem_.clear();
  if (seed_) {
    seed_->close_gracefully(cfg_.node_timeout, {});
    seed_.reset();
  }
  const bool first = !map_known_;
  map_known_ = true;
  update_status();
  if (first) {
    auto waiting = std::move(pending_);
    pending_.clear();
    pending_timer_.cancel();
    for (request* r : waiting)
      if (auto e = route(*r)) r->sink->on_reply(r->index, e, nullptr);
  }
  auto detached = std::move(pending_detached_);
  pending_detached_.clear();
  for (auto& p : detached) route_detached(std::move(p));
  // A primary that is not ready (down, reconnecting, frozen) may be failing over: until
  // the map names one that is, it is asked again every reconnect_max, with or without
  // traffic.
  bool all_up = true;
  for (const auto& sh : shards_)
    if (sh.slots > 0 && (!sh.conn || !sh.conn->ready())) all_up = false;
  if (!all_up)
    schedule_refresh(cfg_.reconnect_max);
  else if (refresh_wanted_)
    schedule_refresh();
}

bool cluster_node::apply_map(const resp::reply& r) {
  // CLUSTER SLOTS: [[start, end, [host, port, id, ...], replicas...], ...]
  if (r.empty() || r[0].kind != resp::type::array || r[0].size == 0) return false;
  std::vector<std::uint16_t> owner(cluster_slots, no_shard);
  std::vector<std::size_t> counts;
  std::size_t i = 1;
  for (std::size_t entry = 0; entry < r[0].size; ++entry) {
    const std::size_t end = skip(r, i);
    if (r[i].kind != resp::type::array || r[i].size < 3 || i + 6 >= r.size()) return false;
    const auto& lo = r[i + 1];
    const auto& hi = r[i + 2];
    const auto& primary = r[i + 3];
    if (lo.kind != resp::type::integer || hi.kind != resp::type::integer ||
        primary.kind != resp::type::array || primary.size < 2 || !r[i + 4].is_string() ||
        r[i + 5].kind != resp::type::integer || lo.integer < 0 || hi.integer < lo.integer ||
        hi.integer >= cluster_slots || r[i + 5].integer <= 0 || r[i + 5].integer > 65535)
      return false;
    std::string host{r[i + 4].text};
    // An unknown endpoint ("" or "?") means the address we asked at.
    if (host.empty() || host == "?") host = map_via_;
    const std::string_view id = primary.size >= 3 && r[i + 6].is_string() ? r[i + 6].text : "";
    const std::size_t s = shard_for({host, static_cast<std::uint16_t>(r[i + 5].integer)}, id);
    if (counts.size() <= s) counts.resize(s + 1, 0);
    for (auto slot = lo.integer; slot <= hi.integer; ++slot)
      owner[static_cast<std::size_t>(slot)] = static_cast<std::uint16_t>(s);
    counts[s] += static_cast<std::size_t>(hi.integer - lo.integer + 1);
    i = end;
  }
  owner_ = std::move(owner);
  counts.resize(shards_.size(), 0);
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    shards_[s].slots = counts[s];
    // A primary that serves nothing now (failed over, or its slots moved away) is let go,
    // after what it was sent has been answered (its redirections are followed).
    if (counts[s] == 0 && shards_[s].conn) {
      shards_[s].conn->close_gracefully(cfg_.node_timeout, {});
      retired_.push_back(std::move(shards_[s].conn));
      shards_[s].conn.reset();
    }
  }
  std::erase_if(retired_, [](const std::shared_ptr<connection>& c) { return !c->accepts(); });
  return true;
}

std::size_t cluster_node::shard_for(const node_uri::endpoint& e, std::string_view node_id) {
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    shard& sh = shards_[s];
    if (sh.uri.host != e.host || sh.uri.port != e.port) continue;
    if (!node_id.empty()) sh.node_id = node_id;
    if (!sh.conn) sh.conn = make_connection(sh.uri, true);
    return s;
  }
  shard sh;
  sh.node_id = node_id;
  sh.uri = uri_;
  sh.uri.cluster = false;
  sh.uri.seeds.clear();
  sh.uri.host = e.host;
  sh.uri.port = e.port;
  sh.conn = make_connection(sh.uri, true);
  shards_.push_back(std::move(sh));
  return shards_.size() - 1;
}

void cluster_node::schedule_refresh(std::chrono::milliseconds at_least) {
  if (closed_) return;
  refresh_wanted_ = true;
  if (map_asked_) return;
  using std::chrono::milliseconds;
  // After a failure, back off as a reconnect does; a redirection waits reconnect_min, so
  // that a burst of MOVED replies during a resharding asks for one map, not hundreds.
  const auto lo = std::max<milliseconds::rep>(1, cfg_.reconnect_min.count());
  const auto hi = std::max(lo, static_cast<milliseconds::rep>(cfg_.reconnect_max.count()));
  const auto delay =
      milliseconds{std::min<milliseconds::rep>(hi, lo << std::min(refresh_failures_, 20))};
  const auto when =
      boot_clock::now() +
      std::max(at_least, map_known_ || refresh_failures_ > 0 ? delay : milliseconds{0});
  // One armed at most; a sooner need (a redirection while a slow periodic ask waits)
  // brings it forward.
  if (refresh_armed_ && refresh_at_ <= when) return;
  refresh_armed_ = true;
  refresh_at_ = when;
  const std::uint64_t generation = ++refresh_generation_;
  refresh_timer_.expires_at(when);  // a later wait, if any, ends as superseded
  refresh_timer_.async_wait([weak = weak_from_this(), generation](error_code ec) {
    auto self = weak.lock();
    if (!self || generation != self->refresh_generation_) return;
    self->refresh_armed_ = false;
    if (ec || self->closed_) return;
    self->refresh_wanted_ = false;
    // Any primary that is ready knows the map; with none, a seed.
    for (const auto& sh : self->shards_)
      if (sh.slots > 0 && sh.conn && sh.conn->ready()) return self->ask_for_map(sh.conn);
    if (self->seed_ && !self->seed_failed_ && self->seed_->accepts())
      return self->ask_for_map(self->seed_);
    self->open_seed();
  });
}

// ---- calls split per slot ----------------------------------------------------------------

// The parts of one split call: each is routed as a request of its own (redirections and
// all), and the user's request is answered once, when the last part is, with the reply the
// lock kind's merge (split_form::merge, src/drivers/split_merge.cpp) makes of the parts'
// outcomes. This side only routes: it never reads a part's reply. When the merge says the
// call is not to be kept (a set refused or failed), the parts that may hold keys give them
// back (split_form::undo). The merged reply is "answered by" vetted_marker: the merge vets
// each part's fence markers against the server that answered it.
class cluster_node::splitter final : public request_sink {
 public:
  splitter(cluster_node& owner, request& outer, const split_form& form, split_plan plan)
      : owner_(owner),
        outer_(&outer),
        plan_(std::move(plan)),
        merge_(form.merge(plan_.items_in_call)) {
    parts_.resize(plan_.payloads.size());
    may_hold_.assign(parts_.size(), false);
  }

  // Routes every part; an error when none was accepted (then nothing will be answered).
  error_code start(std::list<splitter>::iterator self) {
    self_ = self;
    error_code first;
    for (std::size_t k = 0; k < parts_.size(); ++k) {
      parts_[k] = request{plan_.payloads[k], outer_->lua, outer_->deadline, this, k, false};
      if (const auto ec = owner_.route(parts_[k])) {
        if (!first) first = ec;
        merge_->not_sent(ec);
      } else {
        ++remaining_;
        may_hold_[k] = true;  // until its reply says it took nothing
      }
    }
    return remaining_ > 0 ? error_code{} : first;
  }

  void on_reply(std::size_t k, error_code ec, const resp::reply* r) override {
    if (ec || !r)
      merge_->failed(plan_.items[k], ec);
    else
      may_hold_[k] = merge_->reply(parts_[k], plan_.items[k], *r);
    if (--remaining_ == 0) finish();
  }

 private:
  void finish() {
    if (merge_->give_back() && plan_.undo.size() == parts_.size())
      for (std::size_t k = 0; k < parts_.size(); ++k)
        if (may_hold_[k]) owner_.route_detached(std::move(plan_.undo[k]));
    // Out of the node's list first (answering may start another call on this node); this
    // splitter ends with the function, after the user's request was answered.
    std::list<splitter> ending;
    ending.splice(ending.end(), owner_.splits_, self_);
    request& outer = *outer_;
    error_code failure;
    const resp::reply out = merge_->merged(failure);
    if (out.empty()) return outer.sink->on_reply(outer.index, failure, nullptr);
    static const std::string vetted{vetted_marker};
    outer.answered_by = &vetted;
    outer.sink->on_reply(outer.index, {}, &out);
  }

  cluster_node& owner_;
  request* outer_;
  split_plan plan_;
  std::unique_ptr<split_merge> merge_;
  std::vector<request> parts_;
  std::vector<bool> may_hold_;  // sent, and not refused: may hold its keys
  std::list<splitter>::iterator self_;
  std::size_t remaining_ = 0;
};

cluster_node::plan_result cluster_node::plan_split(std::string_view payload, const split_form* form,
                                                   split_plan& out) {
  const auto call = parse_script_call(payload);
  if (!call) return plan_result::whole;
  // A detached payload names its script only in its text (EVAL) or SHA1 (EVALSHA).
  if (!form && preload_)
    for (const script* sc : *preload_)
      if (sc->split && (call->by_sha ? sc->sha : sc->body) == call->script) form = sc->split;
  if (!form || call->keys.empty() || call->args.size() < form->shared_args)
    return plan_result::whole;
  const bool per_item_args = call->args.size() > form->shared_args;
  const std::size_t kpi = per_item_args ? form->keys_per_item : 1;
  const std::size_t api = per_item_args ? form->args_per_item : 0;
  if (kpi == 0 || call->keys.size() % kpi != 0) return plan_result::whole;
  const std::size_t m = call->keys.size() / kpi;
  if (call->args.size() != form->shared_args + api * m) return plan_result::whole;
  const std::uint16_t first = key_slot(call->keys[0]);
  if (std::all_of(call->keys.begin(), call->keys.end(),
                  [&](std::string_view k) { return key_slot(k) == first; }))
    return plan_result::whole;  // one slot: the call as it is
  // One part per slot, in order of first appearance (a set of 64 names: at most 64 parts).
  std::vector<std::uint16_t> slot_of_part;
  for (std::uint32_t j = 0; j < m; ++j) {
    const std::uint16_t slot = key_slot(call->keys[j * kpi]);
    if (owner_[slot] == no_shard || !shards_[owner_[slot]].conn) return plan_result::unmapped;
    const auto part = static_cast<std::size_t>(
        std::find(slot_of_part.begin(), slot_of_part.end(), slot) - slot_of_part.begin());
    if (part == slot_of_part.size()) {
      slot_of_part.push_back(slot);
      out.items.emplace_back();
    }
    out.items[part].push_back(j);
  }
  out.items_in_call = m;
  out.payloads.resize(out.items.size());
  for (std::size_t k = 0; k < out.items.size(); ++k) {
    const auto& items = out.items[k];
    resp::command_writer w{out.payloads[k]};
    w.begin(3 + (kpi + api) * items.size() + form->shared_args)
        .arg(call->by_sha ? "EVALSHA" : "EVAL")
        .arg(call->script)
        .arg(std::int64_t(kpi * items.size()));
    for (auto j : items)
      for (std::size_t t = 0; t < kpi; ++t) w.arg(call->keys[j * kpi + t]);
    for (std::size_t i = 0; i < form->shared_args; ++i) w.arg(call->args[i]);
    for (auto j : items)
      for (std::size_t t = 0; t < api; ++t) w.arg(call->args[form->shared_args + j * api + t]);
    if (form->undo && form->shared_args > 0) {
      // EVAL: nobody reads its reply, so a flushed script cache must not hide it.
      out.undo.emplace_back();
      resp::command_writer u{out.undo.back()};
      u.begin(4 + items.size()).arg("EVAL").arg(form->undo->body).arg(std::int64_t(items.size()));
      for (auto j : items) u.arg(call->keys[j * kpi]);
      u.arg(call->args[0]);
    }
  }
  return plan_result::split;
}

// ---- requests --------------------------------------------------------------------------

error_code cluster_node::submit(request& r) {
  if (closed_) return error::shut_down;
  if (!map_known_) {
    if (seed_failed_) return error::node_unavailable;
    if (pending_.size() >= cfg_.max_queued_per_node) return error::overloaded;
    pending_.push_back(&r);
    watch_pending();
    return {};
  }
  return route(r);
}

error_code cluster_node::route(request& outer) {
  if (outer.lua && outer.lua->split) {
    split_plan plan;
    switch (plan_split(outer.payload, outer.lua->split, plan)) {
      case plan_result::whole:
        break;
      case plan_result::unmapped:
        schedule_refresh();
        return error::node_unavailable;
      case plan_result::split: {
        auto it = splits_.emplace(splits_.end(), *this, outer, *outer.lua->split, std::move(plan));
        const error_code ec = it->start(it);
        if (ec) splits_.erase(it);
        return ec;
      }
    }
  }
  const auto key = first_key(outer.payload);
  std::uint16_t s = no_shard;
  if (key) {
    s = owner_[key_slot(*key)];
  } else {
    // A command without a key (an inspection) goes to any primary: one that is ready,
    // else one still connecting (it waits for the handshake).
    for (std::size_t k = 0; k < shards_.size() && s == no_shard; ++k)
      if (shards_[k].slots > 0 && shards_[k].conn && shards_[k].conn->ready())
        s = static_cast<std::uint16_t>(k);
    for (std::size_t k = 0; k < shards_.size() && s == no_shard; ++k)
      if (shards_[k].slots > 0 && shards_[k].conn && shards_[k].conn->accepts())
        s = static_cast<std::uint16_t>(k);
  }
  if (s == no_shard || !shards_[s].conn) {
    schedule_refresh();
    return error::node_unavailable;
  }
  std::size_t h;
  if (free_hops_.empty()) {
    hops_.emplace_back();
    h = hops_.size() - 1;
  } else {
    h = free_hops_.back();
    free_hops_.pop_back();
  }
  hops_[h] = hop{request{outer.payload, outer.lua, outer.deadline, this, h, false}, &outer, s, 0};
  const error_code ec = send_hop(h, s, false);
  // The primary is down: its replica may be taking over. Ask again, not too often.
  if (ec == error::node_unavailable) schedule_refresh(cfg_.reconnect_max);
  return ec;
}

error_code cluster_node::send_hop(std::size_t h, std::size_t s, bool asking) {
  hop& hp = hops_[h];
  hp.at = static_cast<std::uint16_t>(s);
  connection& to = *shards_[s].conn;
  const error_code ec = asking ? to.submit_asking(hp.inner) : to.submit(hp.inner);
  if (ec) {
    hp.outer = nullptr;
    free_hops_.push_back(h);
  }
  return ec;
}

void cluster_node::on_reply(std::size_t index, error_code ec, const resp::reply* reply) {
  if (index == map_request) return on_map(ec, reply);
  hop& hp = hops_[index];
  if (!ec && reply && (*reply)[0].is_error() && !closed_ && hp.redirects < max_redirects) {
    if (const auto rd = parse_redirect((*reply)[0].text)) {
      // Refused without running: send it where the slot (or this key) lives now.
      ++hp.redirects;
      const std::string host = rd->host.empty() ? shards_[hp.at].uri.host : std::string{rd->host};
      const std::size_t to = shard_for({host, rd->port}, {});
      if (!rd->ask) {
        owner_[rd->slot] = static_cast<std::uint16_t>(to);
        schedule_refresh();
      }
      request* outer = hp.outer;
      const auto e = send_hop(index, to, rd->ask);
      if (e) outer->sink->on_reply(outer->index, e, nullptr);
      return;
    }
  }
  request* outer = hp.outer;
  hp.outer = nullptr;
  free_hops_.push_back(index);
  outer->answered_by = hp.inner.answered_by;  // the shard's server, for fence markers
  outer->sink->on_reply(outer->index, ec, reply);
}

void cluster_node::submit_detached(std::string payload) {
  if (closed_) return;
  if (!map_known_) {
    if (pending_detached_.size() < cfg_.max_queued_per_node)
      pending_detached_.push_back(std::move(payload));
    return;
  }
  route_detached(std::move(payload));
}

void cluster_node::route_detached(std::string payload) {
  split_plan plan;
  switch (plan_split(payload, nullptr, plan)) {
    case plan_result::whole:
      break;
    case plan_result::unmapped:
      if (pending_detached_.size() < cfg_.max_queued_per_node)
        pending_detached_.push_back(std::move(payload));
      schedule_refresh();
      return;
    case plan_result::split:
      for (auto& part : plan.payloads) route_detached(std::move(part));
      return;
  }
  const auto key = first_key(payload);
  const std::uint16_t s = key ? owner_[key_slot(*key)] : no_shard;
  if (s == no_shard || !shards_[s].conn) {
    // Kept for the next map (bounded, as a connection bounds what waits for it).
    if (pending_detached_.size() < cfg_.max_queued_per_node)
      pending_detached_.push_back(std::move(payload));
    schedule_refresh();
    return;
  }
  shards_[s].conn->submit_detached(std::move(payload));
}

void cluster_node::fail_pending(error_code ec) {
  auto waiting = std::move(pending_);
  pending_.clear();
  pending_timer_.cancel();
  for (request* r : waiting) r->sink->on_reply(r->index, ec, nullptr);
}

void cluster_node::watch_pending() {
  if (pending_armed_ || pending_.empty()) return;
  auto first = pending_.front()->deadline;
  for (request* r : pending_) first = std::min(first, r->deadline);
  pending_armed_ = true;
  pending_timer_.expires_at(first);
  pending_timer_.async_wait([weak = weak_from_this()](error_code) {
    auto self = weak.lock();
    if (!self) return;
    self->pending_armed_ = false;
    const auto now = boot_clock::now();
    std::vector<request*> late;
    std::erase_if(self->pending_, [&](request* r) {
      if (r->deadline > now) return false;
      late.push_back(r);
      return true;
    });
    for (request* r : late) r->sink->on_reply(r->index, error::node_timeout, nullptr);
    self->watch_pending();
  });
}

// ---- status ----------------------------------------------------------------------------

void cluster_node::on_shard_event(connection& c, node_event::kind k, const std::string& message) {
  if (closed_) return;
  if (k == node_event::kind::connected) {
    // A primary promoted from a replica may have lost writes it acknowledged as a replica's
    // master never did (replication is asynchronous): from now on it counts as a restart.
    const std::int64_t promotion = c.status().second_repl_offset;
    const shard* sh = nullptr;
    for (const auto& s : shards_)
      if (s.conn.get() == &c) sh = &s;
    const std::string who = sh && !sh->node_id.empty() ? sh->node_id : c.uri().display();
    auto seen = std::find_if(promotions_.begin(), promotions_.end(),
                             [&](const auto& p) { return p.first == who; });
    if (promotion != -1 && (seen == promotions_.end() || seen->second != promotion)) {
      if (seen == promotions_.end())
        promotions_.emplace_back(who, promotion);
      else
        seen->second = promotion;
      held_from_ = boot_clock::now();
      update_status();
      if (on_event)
        on_event(*this, node_event::kind::restarted,
                 fmt::format("shard {} was promoted from a replica (a failover): it counts as "
                             "a restarted server",
                             c.uri().display()));
    }
  }
  if (k == node_event::kind::disconnected || k == node_event::kind::connect_failed)
    schedule_refresh();  // a failover may follow: learn the new primary
  update_status();
  if (on_event) on_event(*this, k, fmt::format("shard {}: {}", c.uri().display(), message));
}

void cluster_node::update_status() {
  node_status st;
  st.session = status_.session + 1;
  st.promoted_at = held_from_;
  std::vector<std::string> ids;
  for (const auto& sh : shards_) {
    if (sh.slots == 0 || !sh.conn) continue;
    const node_status& cs = sh.conn->status();
    if (!cs.run_id.empty()) ids.push_back(cs.run_id);
    st.started_at = std::max(st.started_at, cs.started_at);
    st.clock_jump_at = std::max(st.clock_jump_at, cs.clock_jump_at);
  }
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) st.run_id += (st.run_id.empty() ? "" : ",") + id;
  status_ = std::move(st);
}

bool cluster_node::ready() const {
  if (closed_ || !map_known_) return false;
  bool any = false;
  for (const auto& sh : shards_) {
    if (sh.slots == 0) continue;
    if (!sh.conn || !sh.conn->ready()) return false;
    any = true;
  }
  return any;
}

// Before the first map a request waits for it (unless the seeds gave none); after, it
// depends on the primaries: whether any of them `(connection.*test)()`.
bool cluster_node::any_primary(bool (connection::*test)() const) const {
  if (closed_) return false;
  if (!map_known_) return !seed_failed_;
  return std::any_of(shards_.begin(), shards_.end(), [&](const shard& sh) {
    return sh.slots > 0 && sh.conn && ((*sh.conn).*test)();
  });
}

bool cluster_node::connecting() const {
  return any_primary(&connection::connecting);
}

bool cluster_node::accepts() const {
  return any_primary(&connection::accepts);
}

const std::string& cluster_node::last_problem() const {
  problem_.clear();
  if (!map_known_) {
    problem_ = map_problem_.empty() ? "asking for the slot map" : map_problem_;
    if (seed_ && !seed_->last_problem().empty())
      problem_ += fmt::format(" [seed {}: {}]", seed_->uri().display(), seed_->last_problem());
    return problem_;
  }
  for (const auto& sh : shards_) {
    if (sh.slots == 0) continue;
    if (!sh.conn)
      problem_ = fmt::format("shard {} has no connection", sh.uri.display());
    else if (!sh.conn->last_problem().empty())
      problem_ = fmt::format("shard {}: {}", sh.uri.display(), sh.conn->last_problem());
    if (!problem_.empty()) break;
  }
  if (problem_.empty()) problem_ = map_problem_;
  return problem_;
}

std::vector<shard_view> cluster_node::shards() const {
  std::vector<shard_view> out;
  for (const auto& sh : shards_) {
    if (sh.slots == 0) continue;
    out.push_back(shard_view{sh.uri.display(), sh.node_id, sh.slots, sh.conn && sh.conn->ready(),
                             sh.conn ? sh.conn->last_problem() : "no connection"});
  }
  return out;
}

// ---- closing ---------------------------------------------------------------------------

void cluster_node::close() {
  if (closed_) return;
  closed_ = true;
  refresh_timer_.cancel();
  pending_timer_.cancel();
  if (seed_) seed_->close();
  for (auto& sh : shards_)
    if (sh.conn) sh.conn->close();
  for (auto& c : retired_) c->close();
  pending_detached_.clear();
  fail_pending(error::shut_down);
}

void cluster_node::close_gracefully(std::chrono::milliseconds limit, std::function<void()> done) {
  std::vector<std::shared_ptr<connection>> open;
  if (!closed_) {
    for (auto& sh : shards_)
      if (sh.conn) open.push_back(sh.conn);
    for (auto& c : retired_) open.push_back(c);
  }
  if (open.empty()) {
    close();
    if (done) done();
    return;
  }
  auto left = std::make_shared<std::size_t>(open.size());
  auto self = shared_from_this();
  auto one_done = [self, left, done = std::move(done)]() mutable {
    if (--*left > 0) return;
    self->close();
    if (done) done();
  };
  for (auto& c : open) c->close_gracefully(limit, one_done);
}

}  // namespace redlock::detail
