// SPDX-License-Identifier: BSL-1.0
// libFuzzer target for the RESP codec. Beyond "no crash, no UB, no leak" it checks what
// the connection relies on: a reply parsed whole equals the same reply fed in arbitrary
// chunks; every text view lies inside the reply's bytes; aggregates hold exactly their
// elements; the limits hold; an incomplete reply's `needed` never overshoots, and a
// prefix of a complete reply is never an error; the encoder's output parses back.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "resp/resp.hpp"

using namespace redlock::resp;

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

bool is_error(parse_status s) {
  return s != parse_status::complete && s != parse_status::incomplete;
}

// Pre-order with sizes: walking from node i consumes exactly its subtree.
std::size_t check_subtree(const reply& r, std::size_t i, std::uint32_t depth) {
  require(i < r.size(), "an aggregate announces more elements than follow it");
  require(r[i].depth == depth, "depth disagrees with nesting");
  const bool aggregate = r[i].kind == type::array || r[i].kind == type::map ||
                         r[i].kind == type::set || r[i].kind == type::push;
  require(aggregate || r[i].size == 0, "a scalar with a size");
  std::size_t next = i + 1;
  for (std::size_t k = 0; k < r[i].size; ++k) next = check_subtree(r, next, depth + 1);
  return next;
}

void check_reply(std::string_view wire, const parse_result& res, const reply& r,
                 const limits& lim) {
  require(res.consumed > 0 && res.consumed <= wire.size(), "consumed out of range");
  require(res.consumed <= lim.max_reply, "a complete reply above max_reply");
  require(!r.empty() && r.size() <= lim.max_nodes, "node count out of range");
  require(check_subtree(r, 0, 0) == r.size(), "nodes after the top node's subtree");
  const char* begin = wire.data();
  const char* end = wire.data() + res.consumed;
  for (const node& n : r) {
    require(n.depth <= lim.max_depth, "nesting beyond max_depth");  // max_depth aggregates deep
    if (!n.text.empty())
      require(n.text.data() >= begin && n.text.data() + n.text.size() <= end,
              "a text view outside the reply");
    if (n.kind == type::bulk_string || n.kind == type::bulk_error)
      require(n.text.size() <= lim.max_bulk, "a bulk string above max_bulk");
  }
}

bool same(const reply& a, const reply& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].kind != b[i].kind || a[i].depth != b[i].depth || a[i].size != b[i].size ||
        a[i].integer != b[i].integer || a[i].text != b[i].text)
      return false;
  }
  return true;
}

struct outcome {
  std::vector<reply> replies;       // texts copied: the reader's buffer moves
  std::deque<std::string> storage;  // stable: the replies view into it
  parse_status last = parse_status::incomplete;
};

// Replies one after another, parsed from the whole input.
outcome parse_all(std::string_view wire, const limits& lim) {
  outcome o;
  reply r;
  std::size_t at = 0;
  for (;;) {
    const auto rest = wire.substr(at);
    const auto res = parse(rest, r, lim);
    o.last = res.status;
    if (res.status != parse_status::complete) {
      if (res.status == parse_status::incomplete) {
        require(res.needed > rest.size(), "needed does not ask for more bytes");
      }
      return o;
    }
    check_reply(rest, res, r, lim);
    // A prefix of a complete reply is incomplete, and asks for no more than the reply.
    const std::size_t step = res.consumed > 300 ? res.consumed / 97 + 1 : 1;
    reply scratch;
    for (std::size_t k = 0; k < res.consumed; k += step) {
      const auto p = parse(rest.substr(0, k), scratch, lim);
      require(p.status == parse_status::incomplete,
              "a prefix of a complete reply is not incomplete");
      require(p.needed <= res.consumed, "needed overshoots the reply");
    }
    for (auto& n : r) n.text = o.storage.emplace_back(n.text);
    o.replies.push_back(r);
    at += res.consumed;
  }
}

// The same input through a reader, in chunks whose sizes come from `seed`.
outcome read_chunked(std::string_view wire, const limits& lim, std::uint32_t seed) {
  outcome o;
  reader rd{lim};
  reply r;
  std::size_t at = 0;
  for (;;) {
    const auto st = rd.next(r);
    if (st == parse_status::complete) {
      for (auto& n : r) n.text = o.storage.emplace_back(n.text);
      o.replies.push_back(r);
      continue;
    }
    if (st != parse_status::incomplete || at == wire.size()) {
      o.last = st;
      return o;
    }
    seed = seed * 1103515245u + 12345u;
    const std::size_t n = std::min<std::size_t>(wire.size() - at, 1 + (seed >> 16) % 64);
    rd.feed(wire.substr(at, n));
    at += n;
  }
}

void check_encoder(std::string_view wire) {
  std::vector<std::string_view> args;
  for (std::size_t at = 0; at <= wire.size() && args.size() < 8;) {
    const auto cut = wire.find('|', at);
    args.push_back(
        wire.substr(at, cut == std::string_view::npos ? std::string_view::npos : cut - at));
    if (cut == std::string_view::npos) break;
    at = cut + 1;
  }
  std::string out;
  command_writer w{out};
  w.begin(args.size());
  for (auto a : args) w.arg(a);
  limits big;
  big.max_line = 1u << 20;
  reply r;
  const auto res = parse(out, r, big);
  require(res.status == parse_status::complete && res.consumed == out.size(),
          "an encoded command does not parse");
  require(r.size() == args.size() + 1 && r[0].size == args.size(), "encoded arity differs");
  for (std::size_t i = 0; i < args.size(); ++i)
    require(r[i + 1].text == args[i], "argument differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // Byte 0 chooses the limits, byte 1 seeds the chunking; the rest is the wire.
  const std::uint8_t ctl = data[0];
  const std::uint32_t seed = data[1];
  const std::string_view wire{reinterpret_cast<const char*>(data + 2), size - 2};
  limits lim;
  if (ctl & 1) {
    lim.max_bulk = 40;
    lim.max_line = 24;
    lim.max_elements = 6;
    lim.max_nodes = 24;
    lim.max_depth = 4;
    lim.max_reply = 300;
  }
  const outcome whole = parse_all(wire, lim);
  const outcome chunked = read_chunked(wire, lim, seed);
  // The same replies however the bytes arrive, and an error in one way of reading is an
  // error in the other (which limit or rule is named first may differ).
  require(whole.replies.size() == chunked.replies.size(),
          "whole and chunked parsing yield different numbers of replies");
  for (std::size_t i = 0; i < whole.replies.size(); ++i)
    require(same(whole.replies[i], chunked.replies[i]), "whole and chunked replies differ");
  require(is_error(whole.last) == is_error(chunked.last), "an error in one way of reading only");
  if (ctl & 2) check_encoder(wire);
  return 0;
}
