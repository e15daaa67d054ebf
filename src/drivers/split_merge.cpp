// SPDX-License-Identifier: BSL-1.0
#include "drivers/split_merge.hpp"

#include <string>
#include <vector>

#include "redlock/error.hpp"

namespace redlock::detail {
namespace {

constexpr std::string_view malformed =
    "ERR a shard's reply to its part of a split call was malformed";

resp::node integer(std::int64_t v) {
  return resp::node{.kind = resp::type::integer, .integer = v};
}
resp::node array(std::size_t size) {
  return resp::node{.kind = resp::type::array, .size = size};
}

bool flat_array(const resp::reply& r) {
  return r[0].kind == resp::type::array && r.size() == r[0].size + 1;
}

// What every merge keeps: the first error reply's text and the first failure.
class merge_base : public split_merge {
 public:
  void failed(items, error_code ec) override { fail(ec); }
  void not_sent(error_code ec) override { fail(ec); }

 protected:
  void fail(error_code ec) {
    if (!failure_) failure_ = ec ? ec : error_code{error::node_timeout};
  }
  void note_error(std::string_view text) {
    if (!error_reply_) error_text_.assign(text);
    error_reply_ = true;
  }
  resp::node error_node() const {
    return resp::node{.kind = resp::type::simple_error, .text = error_text_};
  }
  // The elements of the top array one level down, as a parsed reply has them.
  static resp::reply finish(resp::reply out) {
    for (std::size_t i = 1; i < out.size(); ++i) out[i].depth = 1;
    return out;
  }

  bool error_reply_ = false;
  std::string error_text_;
  error_code failure_;
};

class per_key_merge final : public merge_base {
 public:
  explicit per_key_merge(std::size_t n) : codes_(n, -2) {}

  bool reply(const request&, items its, const resp::reply& r) override {
    if (r[0].is_error()) {
      note_error(r[0].text);  // not run: its items stay -2
      return true;
    }
    const bool fits = flat_array(r) && r[0].size == its.size();
    for (std::size_t i = 0; i < its.size(); ++i)
      codes_[its[i]] =
          fits && r[i + 1].kind == resp::type::integer ? r[i + 1].integer : std::int64_t{-1};
    if (fits)
      answered_ = true;
    else
      note_error(malformed);
    return true;
  }
  void failed(items its, error_code ec) override {
    fail(ec);
    for (auto j : its) codes_[j] = -1;
  }
  resp::reply merged(error_code& failure) override {
    if (!answered_ && failure_) return failure = failure_, resp::reply{};
    resp::reply out{array(codes_.size())};
    for (auto c : codes_) out.push_back(integer(c));
    return finish(std::move(out));
  }

 private:
  std::vector<std::int64_t> codes_;
  bool answered_ = false;
};

// all_ones (a set's extension) or sum (a set's release).
class count_merge final : public merge_base {
 public:
  explicit count_merge(bool sum) : sum_(sum) {}

  bool reply(const request&, items, const resp::reply& r) override {
    if (r[0].is_error()) {
      note_error(r[0].text);
    } else if (r[0].kind == resp::type::integer) {
      total_ += r[0].integer;
      if (r[0].integer != 1) refused_ = true;  // all_ones: a token not found
    } else {
      note_error(malformed);
    }
    return true;
  }
  resp::reply merged(error_code& failure) override {
    const bool definite = refused_ && !sum_;
    if (failure_ && !definite) return failure = failure_, resp::reply{};
    if (definite) return {integer(0)};
    if (error_reply_) return {error_node()};
    return {integer(sum_ ? total_ : 1)};
  }

 private:
  bool sum_;
  bool refused_ = false;
  std::int64_t total_ = 0;
};

// set_acquire: {1}, {1, counter, marker, ...} or {0, k, holder}; set_raise: {1, marker, ...}
// or 0.
class set_merge final : public merge_base {
 public:
  set_merge(bool acquire, std::size_t n) : acquire_(acquire), items_in_call_(n) {}

  bool reply(const request& part, items its, const resp::reply& r) override {
    const resp::node& top = r[0];
    const bool flat = flat_array(r);
    const std::size_t per_item = acquire_ ? 2 : 1;
    const bool ok = flat && top.size >= 1 && r[1].kind == resp::type::integer && r[1].integer == 1;
    if (top.is_error()) {
      // Not run (TRYAGAIN: a migration split its keys), or another refusal. It is given
      // back too: a script that failed half-way may have set some keys.
      note_error(top.text);
    } else if (ok && acquire_ && top.size == 1) {
      ++bare_parts_;
    } else if (ok && top.size == 1 + per_item * its.size()) {
      ++counted_parts_;
      values_.resize(items_in_call_ * per_item);
      for (std::size_t i = 0; i < its.size(); ++i) {
        const std::size_t at = 2 + per_item * i;
        if (acquire_ && r[at].kind != resp::type::integer) return note_error(malformed), true;
        if (acquire_) values_[its[i] * per_item] = r[at];
        values_[its[i] * per_item + per_item - 1] = vet(part, r[at + per_item - 1]);
      }
    } else if (!acquire_ && top.kind == resp::type::integer && top.integer == 0) {
      refused_ = true;
    } else if (acquire_ && flat && top.size == 3 && r[1].kind == resp::type::integer &&
               r[1].integer == 0 && r[2].kind == resp::type::integer && r[2].integer >= 1 &&
               static_cast<std::uint64_t>(r[2].integer) <= its.size()) {
      if (!refused_) {
        refused_ = true;
        refused_at_ = its[static_cast<std::size_t>(r[2].integer - 1)] + 1;
        holder_.assign(r[3].text);
      }
      return false;  // refused there: it took nothing
    } else {
      note_error(malformed);
    }
    return true;
  }
  resp::reply merged(error_code& failure) override {
    if (failure_ && !refused_) return failure = failure_, resp::reply{};
    if (refused_ && acquire_)
      return finish({array(3), integer(0), integer(refused_at_),
                     resp::node{.kind = resp::type::bulk_string, .text = holder_}});
    if (refused_) return {integer(0)};
    if (error_reply_ || (counted_parts_ > 0 && bare_parts_ > 0)) {
      if (!error_reply_)
        error_text_ = "ERR the shards' replies to the parts of a split set disagree";
      return {error_node()};
    }
    resp::reply out{array(1 + values_.size()), integer(1)};
    out.insert(out.end(), values_.begin(), values_.end());
    return finish(std::move(out));
  }
  // Whatever keeps the set from being won on this node: a refusal, an error, a failure, or
  // parts that disagree on whether the set is fenced.
  bool give_back() const override {
    return acquire_ && (refused_ || error_reply_ || failure_ || (counted_parts_ && bare_parts_));
  }

 private:
  // A marker the part's server answered, as the merged reply carries it.
  static const resp::node& vet(const request& part, const resp::node& marker) {
    static const resp::node trusted{.kind = resp::type::bulk_string, .text = vetted_marker};
    static const resp::node untrusted{.kind = resp::type::null};
    return marker_trusted(part, marker) ? trusted : untrusted;
  }

  bool acquire_;
  std::size_t items_in_call_;
  std::vector<resp::node> values_;  // per item, in the call's order
  std::int64_t refused_at_ = 0;     // acquire: the refused item (1-based, whole call)
  std::string holder_;              // acquire: who holds it
  std::size_t counted_parts_ = 0;   // parts that answered with values per item
  std::size_t bare_parts_ = 0;      // acquire: parts that answered {1}
  bool refused_ = false;
};

}  // namespace

std::unique_ptr<split_merge> merge_per_key(std::size_t n) {
  return std::make_unique<per_key_merge>(n);
}
std::unique_ptr<split_merge> merge_all_ones(std::size_t) {
  return std::make_unique<count_merge>(false);
}
std::unique_ptr<split_merge> merge_sum(std::size_t) {
  return std::make_unique<count_merge>(true);
}
std::unique_ptr<split_merge> merge_set_acquire(std::size_t n) {
  return std::make_unique<set_merge>(true, n);
}
std::unique_ptr<split_merge> merge_set_raise(std::size_t n) {
  return std::make_unique<set_merge>(false, n);
}

}  // namespace redlock::detail
