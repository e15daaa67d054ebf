// SPDX-License-Identifier: BSL-1.0
// The RESP codec: every type, replies split at every byte, limits and malformed input.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <string>

#include "resp/resp.hpp"

using namespace redlock::resp;

namespace {

// Parses `wire` whole, then again fed one byte at a time, and checks both agree.
reply parse_both_ways(std::string_view wire, std::vector<std::string>* texts = nullptr) {
  reply whole;
  auto r = parse(wire, whole);
  BOOST_TEST_REQUIRE(static_cast<int>(r.status) == static_cast<int>(parse_status::complete));
  BOOST_TEST(r.consumed == wire.size());

  reader rd;
  reply bytewise;
  for (std::size_t i = 0; i < wire.size(); ++i) {
    BOOST_TEST_REQUIRE(static_cast<int>(rd.next(bytewise)) ==
                       static_cast<int>(parse_status::incomplete));
    rd.feed(wire.substr(i, 1));
  }
  BOOST_TEST_REQUIRE(static_cast<int>(rd.next(bytewise)) ==
                     static_cast<int>(parse_status::complete));
  BOOST_TEST_REQUIRE(bytewise.size() == whole.size());
  for (std::size_t i = 0; i < whole.size(); ++i) {
    BOOST_TEST(static_cast<int>(bytewise[i].kind) == static_cast<int>(whole[i].kind));
    BOOST_TEST(bytewise[i].text == whole[i].text);
    BOOST_TEST(bytewise[i].integer == whole[i].integer);
    BOOST_TEST(bytewise[i].size == whole[i].size);
  }
  if (texts)
    for (auto& n : whole) texts->emplace_back(n.text);
  return whole;
}

parse_status status_of(std::string_view wire, const limits& lim = {}) {
  reply out;
  return parse(wire, out, lim).status;
}

bool is(parse_status a, parse_status b) {
  return a == b;
}

}  // namespace

BOOST_AUTO_TEST_CASE(simple_types_parse_with_their_values) {
  auto r = parse_both_ways("+OK\r\n");
  BOOST_TEST((r[0].kind == type::simple_string && r[0].text == "OK"));
  r = parse_both_ways("-ERR wrong\r\n");
  BOOST_TEST((r[0].kind == type::simple_error && r[0].text == "ERR wrong" && r[0].is_error()));
  r = parse_both_ways(":-42\r\n");
  BOOST_TEST((r[0].kind == type::integer && r[0].integer == -42));
  r = parse_both_ways("$5\r\nhe\r\nl\r\n");
  BOOST_TEST((r[0].kind == type::bulk_string && r[0].text == "he\r\nl"));
  r = parse_both_ways("$0\r\n\r\n");
  BOOST_TEST((r[0].kind == type::bulk_string && r[0].text.empty()));
  r = parse_both_ways("$-1\r\n");
  BOOST_TEST((r[0].kind == type::null));
  r = parse_both_ways("*-1\r\n");
  BOOST_TEST((r[0].kind == type::null));
}

BOOST_AUTO_TEST_CASE(resp3_types_parse) {
  auto r = parse_both_ways("_\r\n");
  BOOST_TEST((r[0].kind == type::null));
  r = parse_both_ways("#t\r\n");
  BOOST_TEST((r[0].kind == type::boolean && r[0].integer == 1));
  r = parse_both_ways("#f\r\n");
  BOOST_TEST((r[0].kind == type::boolean && r[0].integer == 0));
  r = parse_both_ways(",3.25\r\n");
  BOOST_TEST((r[0].kind == type::double_type && r[0].text == "3.25"));
  r = parse_both_ways("(12345678901234567890\r\n");
  BOOST_TEST((r[0].kind == type::big_number && r[0].text == "12345678901234567890"));
  r = parse_both_ways("!9\r\nERR boom!\r\n");
  BOOST_TEST((r[0].kind == type::bulk_error && r[0].text == "ERR boom!" && r[0].is_error()));
  r = parse_both_ways("=8\r\ntxt:some\r\n");
  BOOST_TEST((r[0].kind == type::verbatim_string && r[0].text == "some"));
  r = parse_both_ways("%1\r\n+k\r\n:1\r\n");
  BOOST_TEST((r[0].kind == type::map && r[0].size == 2 && r.size() == 3));
  r = parse_both_ways("~2\r\n:1\r\n:2\r\n");
  BOOST_TEST((r[0].kind == type::set && r[0].size == 2));
  r = parse_both_ways(">2\r\n+message\r\n+x\r\n");
  BOOST_TEST((r[0].kind == type::push && r.size() == 3));
}

BOOST_AUTO_TEST_CASE(attributes_are_dropped_and_the_annotated_value_kept) {
  auto r = parse_both_ways("|1\r\n+ttl\r\n:3\r\n:7\r\n");
  BOOST_TEST_REQUIRE(r.size() == 1u);
  BOOST_TEST((r[0].kind == type::integer && r[0].integer == 7));
  r = parse_both_ways("*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n");
  BOOST_TEST_REQUIRE(r.size() == 3u);
  BOOST_TEST((r[1].integer == 1 && r[2].integer == 2));
}

BOOST_AUTO_TEST_CASE(nested_aggregates_keep_preorder_and_depth) {
  auto r = parse_both_ways("*3\r\n*2\r\n:1\r\n$1\r\na\r\n*0\r\n+z\r\n");
  BOOST_TEST_REQUIRE(r.size() == 6u);
  BOOST_TEST((r[0].kind == type::array && r[0].size == 3 && r[0].depth == 0));
  BOOST_TEST((r[1].kind == type::array && r[1].size == 2 && r[1].depth == 1));
  BOOST_TEST((r[2].integer == 1 && r[2].depth == 2));
  BOOST_TEST((r[3].text == "a" && r[3].depth == 2));
  BOOST_TEST((r[4].kind == type::array && r[4].size == 0 && r[4].depth == 1));
  BOOST_TEST((r[5].text == "z" && r[5].depth == 1));
}

BOOST_AUTO_TEST_CASE(reader_splits_back_to_back_replies_at_every_chunk_boundary) {
  const std::string wire = "+OK\r\n$3\r\nabc\r\n:5\r\n*2\r\n$-1\r\n+x\r\n";
  for (std::size_t cut = 0; cut <= wire.size(); ++cut) {
    reader rd;
    rd.feed(std::string_view{wire}.substr(0, cut));
    std::vector<std::string> seen;
    reply r;
    auto drain = [&] {
      while (rd.next(r) == parse_status::complete)
        seen.push_back(std::string{r[0].text} + "/" + std::to_string(r.size()));
    };
    drain();
    rd.feed(std::string_view{wire}.substr(cut));
    drain();
    BOOST_TEST_REQUIRE(seen.size() == 4u, "cut at " << cut);
    BOOST_TEST(seen[0] == "OK/1");
    BOOST_TEST(seen[1] == "abc/1");
    BOOST_TEST(seen[3] == "/3");
    BOOST_TEST(rd.buffered() == 0u);
  }
}

BOOST_AUTO_TEST_CASE(malformed_input_is_an_error_value) {
  BOOST_TEST(is(status_of("?x\r\n"), parse_status::bad_type));
  BOOST_TEST(is(status_of(":12a\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of(":\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of("$-2\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of("$x\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of("*-5\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of("$3\r\nabcd\r\n"), parse_status::bad_framing));
  BOOST_TEST(is(status_of("#x\r\n"), parse_status::bad_framing));
  BOOST_TEST(is(status_of("_x\r\n"), parse_status::bad_framing));
  BOOST_TEST(is(status_of("=2\r\nab\r\n"), parse_status::bad_framing));
  BOOST_TEST(is(status_of(":99999999999999999999\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of("$3\r\nab"), parse_status::incomplete));
  BOOST_TEST(is(status_of("*2\r\n:1\r\n"), parse_status::incomplete));
}

BOOST_AUTO_TEST_CASE(limits_stop_a_hostile_server) {
  limits lim;
  lim.max_bulk = 16;
  lim.max_elements = 4;
  lim.max_depth = 3;
  lim.max_line = 8;
  lim.max_nodes = 10;
  // A huge announced length fails at once, before any of it arrives.
  BOOST_TEST(is(status_of("$17\r\n", lim), parse_status::too_large));
  BOOST_TEST(is(status_of("$9223372036854775807\r\n", lim), parse_status::too_large));
  BOOST_TEST(is(status_of("*5\r\n", lim), parse_status::too_large));
  BOOST_TEST(is(status_of("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", lim), parse_status::too_large));
  BOOST_TEST(is(status_of("*1\r\n*1\r\n*1\r\n:1\r\n", lim), parse_status::complete));
  BOOST_TEST(is(status_of(std::string(100, 'a'), lim), parse_status::too_large));
  BOOST_TEST(
      is(status_of("*4\r\n*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n*4\r\n:1\r\n:1\r\n:1\r\n:1\r\n", lim),
         parse_status::too_large));
  // Defaults bound a 2^40-element array announcement too.
  BOOST_TEST(is(status_of("*1099511627776\r\n"), parse_status::too_large));
}

BOOST_AUTO_TEST_CASE(encoder_writes_resp_arrays_of_bulk_strings) {
  std::string out;
  append_command(out, "SET", "k", std::string_view{"a\r\nb"}, std::int64_t{-15});
  BOOST_TEST(out == "*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n$3\r\n-15\r\n");
  // The encoder's output parses as the same arguments.
  reply r;
  BOOST_TEST_REQUIRE(is(parse(out, r).status, parse_status::complete));
  BOOST_TEST((r[0].size == 4 && r[3].text == "a\r\nb" && r[4].text == "-15"));
}

BOOST_AUTO_TEST_CASE(the_encoder_counts_and_sizes_every_argument_of_a_long_command) {
  // Twelve arguments (a two-digit count), an empty one, a 100-byte one (three-digit
  // length) and the extreme integers, appended after what the buffer already held.
  std::string out = "x";
  const std::string big(100, 'b');
  append_command(out, "EVALSHA", "", big, std::int64_t{0}, std::int64_t{INT64_MIN},
                 std::int64_t{INT64_MAX}, "a", "b", "c", "d", "e", "f");
  BOOST_TEST(out.substr(0, 5) == "x*12\r");
  reply r;
  const auto res = parse(std::string_view{out}.substr(1), r);
  BOOST_TEST_REQUIRE(is(res.status, parse_status::complete));
  BOOST_TEST(res.consumed == out.size() - 1);
  BOOST_TEST_REQUIRE(r.size() == 13u);
  BOOST_TEST(r[2].text == "");
  BOOST_TEST(r[3].text == big);
  BOOST_TEST(r[5].text == "-9223372036854775808");
  BOOST_TEST(r[6].text == "9223372036854775807");
  BOOST_TEST(r[12].text == "f");
}

BOOST_AUTO_TEST_CASE(short_integer_and_nil_replies_read_as_the_general_grammar_says) {
  // The short replies have a fast path: it must agree with the grammar on every edge.
  reply r;
  auto res = parse(":1\r\n:2\r\n", r);
  BOOST_TEST_REQUIRE(is(res.status, parse_status::complete));
  BOOST_TEST(res.consumed == 4u);
  BOOST_TEST((r.size() == 1 && r[0].kind == type::integer && r[0].integer == 1));
  res = parse("$-1\r\n", r);
  BOOST_TEST_REQUIRE(is(res.status, parse_status::complete));
  BOOST_TEST((r.size() == 1 && r[0].kind == type::null && res.consumed == 5u));
  BOOST_TEST(parse(":+7\r\n", r).consumed == 5u);
  BOOST_TEST(r[0].integer == 7);
  BOOST_TEST(parse(":-9223372036854775808\r\n", r).consumed == 23u);
  BOOST_TEST(r[0].integer == INT64_MIN);
  BOOST_TEST(is(status_of(":1\r5\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of(":\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of(":x\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of("$-2\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of(":99999999999999999999\r\n"), parse_status::bad_number));
  BOOST_TEST(is(status_of("$-1\r"), parse_status::incomplete));
  BOOST_TEST(is(status_of(":12"), parse_status::incomplete));
  limits tiny;
  tiny.max_reply = 3;
  BOOST_TEST(is(status_of(":1\r\n", tiny), parse_status::too_large));
  tiny = {};
  tiny.max_nodes = 0;
  BOOST_TEST(is(status_of(":1\r\n", tiny), parse_status::too_large));
  // The general grammar's answer for a bulk of length 0, which is not a short reply.
  res = parse("$0\r\n\r\n", r);
  BOOST_TEST((is(res.status, parse_status::complete) && r[0].kind == type::bulk_string));
}

BOOST_AUTO_TEST_CASE(an_incomplete_reply_says_how_many_bytes_it_needs_at_least) {
  auto needed = [](std::string_view wire) {
    reply out;
    const auto r = parse(wire, out);
    BOOST_TEST_REQUIRE(is(r.status, parse_status::incomplete), wire);
    return r.needed;
  };
  // The end of a bulk payload; the shortest next element ("_\r\n"); one more byte of a line.
  BOOST_TEST(needed("$10\r\nab") == 17u);
  BOOST_TEST(needed("*3\r\n$10\r\nab") == 21u);
  BOOST_TEST(needed("*3\r\n") == 7u);
  BOOST_TEST(needed("*2\r\n*2\r\n:1\r\n") == 15u);
  BOOST_TEST(needed("") == 3u);
  BOOST_TEST(needed("+O") == 3u);
  BOOST_TEST(needed("+OK\r") == 5u);
  // Never more than a real reply has, at every cut of every reply.
  for (std::string_view wire :
       {"+OK\r\n", "$5\r\nhello\r\n", "*3\r\n*2\r\n:1\r\n$1\r\na\r\n*0\r\n+z\r\n",
        "%1\r\n+k\r\n:1\r\n", "|1\r\n+ttl\r\n:3\r\n:7\r\n", "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n",
        "=8\r\ntxt:some\r\n"}) {
    for (std::size_t cut = 0; cut < wire.size(); ++cut)
      BOOST_TEST(needed(wire.substr(0, cut)) <= wire.size(), wire << " cut at " << cut);
  }
}

BOOST_AUTO_TEST_CASE(a_reader_sees_a_malformed_element_as_soon_as_its_line_arrives) {
  reader rd;
  reply r;
  rd.feed("*3\r\n");
  BOOST_TEST(is(rd.next(r), parse_status::incomplete));
  rd.feed("?\r\n");  // not waiting for the two more elements the array announced
  BOOST_TEST(is(rd.next(r), parse_status::bad_type));
}

BOOST_AUTO_TEST_CASE(a_reply_beyond_the_byte_or_node_limit_fails_before_its_bytes_arrive) {
  limits lim;
  lim.max_reply = 100;
  lim.max_nodes = 10;
  BOOST_TEST(is(status_of("$200\r\n", lim), parse_status::too_large));      // 208 bytes at least
  BOOST_TEST(is(status_of("*40\r\n", lim), parse_status::too_large));       // 41 nodes at least
  BOOST_TEST(is(status_of("*9\r\n", lim), parse_status::incomplete));       // 10 nodes may fit
  BOOST_TEST(is(status_of("*2\r\n*9\r\n", lim), parse_status::too_large));  // 12 at least
  // A complete reply over the byte limit fails too, however it arrives.
  const std::string big = "$120\r\n" + std::string(120, 'x') + "\r\n";
  lim.max_bulk = 1000;
  BOOST_TEST(is(status_of(big, lim), parse_status::too_large));
  reader rd{lim};
  reply r;
  parse_status st = parse_status::incomplete;
  for (std::size_t i = 0; i < big.size() && st == parse_status::incomplete; ++i) {
    rd.feed(std::string_view{big}.substr(i, 1));
    st = rd.next(r);
  }
  BOOST_TEST(is(st, parse_status::too_large));
}

BOOST_AUTO_TEST_CASE(the_reader_gives_back_a_buffer_that_one_large_reply_grew) {
  reader rd;
  const std::string big = "$4000000\r\n" + std::string(4'000'000, 'x') + "\r\n";
  for (std::size_t at = 0; at < big.size(); at += 65536) {
    auto space = rd.prepare(65536);
    const std::size_t n = std::min<std::size_t>(65536, big.size() - at);
    std::copy_n(big.data() + at, n, space.data());
    rd.commit(n);
  }
  reply r;
  BOOST_TEST_REQUIRE(is(rd.next(r), parse_status::complete));
  BOOST_TEST(r[0].text.size() == 4'000'000u);
  BOOST_TEST(rd.capacity() >= 4'000'000u);
  rd.prepare(16);
  BOOST_TEST(rd.capacity() < (1u << 20));
}

BOOST_AUTO_TEST_CASE(where_a_read_ends_never_changes_the_verdict_on_a_long_line) {
  limits lim;
  lim.max_line = 8;  // lines up to max_line + 32 bytes pass
  const std::string longest = "+" + std::string(40, 'a') + "\r\n";
  const std::string too_long = "+" + std::string(41, 'a') + "\r\n";
  for (const auto& [wire, verdict] :
       {std::pair{longest, parse_status::complete}, std::pair{too_long, parse_status::too_large}}) {
    BOOST_TEST(is(status_of(wire, lim), verdict));
    for (std::size_t cut = 0; cut <= wire.size(); ++cut) {
      reader rd{lim};
      reply r;
      rd.feed(std::string_view{wire}.substr(0, cut));
      parse_status st = rd.next(r);
      if (st == parse_status::incomplete) {
        rd.feed(std::string_view{wire}.substr(cut));
        st = rd.next(r);
      }
      BOOST_TEST(is(st, verdict), "line of " << wire.size() << " bytes cut at " << cut);
    }
  }
  BOOST_TEST(is(status_of("\r"), parse_status::incomplete));  // a lone type byte is not a long line
}

namespace {

// No prefix of `wire` may be an error when `wire` itself is not one, and a reader fed
// `wire` in two pieces, cut anywhere, must end where a whole parse ends.
void check_every_prefix_and_split(std::string_view wire, const limits& lim, parse_status verdict) {
  BOOST_TEST_REQUIRE(is(status_of(wire, lim), verdict));
  for (std::size_t cut = 0; cut < wire.size(); ++cut) {
    BOOST_TEST(is(status_of(wire.substr(0, cut), lim), parse_status::incomplete),
               "prefix of " << cut << " bytes");
    reader rd{lim};
    reply r;
    rd.feed(wire.substr(0, cut));
    parse_status st = rd.next(r);
    if (st == parse_status::incomplete) {
      rd.feed(wire.substr(cut));
      st = rd.next(r);
    }
    BOOST_TEST(is(st, verdict), "reader fed " << cut << " bytes, then the rest");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(elements_owed_inside_attributes_do_not_make_a_prefix_too_large) {
  limits lim;
  lim.max_nodes = 24;  // as in fuzz_resp's tight limits, which found this
  // Found by fuzz_resp (minimized; its first two bytes were the fuzzer's control bytes):
  // three nested attributes of 12 elements each. The attribute elements are dropped
  // when each attribute ends, so they never pile up to 36 nodes; the whole input is a
  // reply still to come, and so must every prefix of it be.
  const std::string_view found =
      "|6\r\n|6\r\n|6\r\n(\r\n(\r\n(\r\n+\r\n(\r\n(\r\n(\r\n+\r\n(\r\n(\r\n(\r\n+\r\n";
  check_every_prefix_and_split(found, lim, parse_status::incomplete);

  // The same nesting carried to its end: the peak is 12 nodes, the reply one integer.
  std::string whole = "|6\r\n|6\r\n|6\r\n";
  auto leaves = [&](int n) {
    for (int i = 0; i < n; ++i) whole += ":0\r\n";
  };
  leaves(12);         // the inner attribute
  whole += ":1\r\n";  // the value it annotates: the middle attribute's first element
  leaves(11);         // the rest of the middle attribute
  whole += ":2\r\n";  // its value: the outer attribute's first element
  leaves(11);         // the rest of the outer attribute
  whole += ":3\r\n";  // the reply
  check_every_prefix_and_split(whole, lim, parse_status::complete);
  reply r;
  BOOST_TEST_REQUIRE(is(parse(whole, r, lim).status, parse_status::complete));
  BOOST_TEST_REQUIRE(r.size() == 1u);
  BOOST_TEST(r[0].integer == 3);

  // What cannot fit is still refused at once, attributes or not.
  limits small;
  small.max_nodes = 10;
  BOOST_TEST(is(status_of("|6\r\n", small), parse_status::too_large));  // 12 nodes at once
  small.max_nodes = 5;
  BOOST_TEST(is(status_of("*5\r\n|1\r\n", small), parse_status::too_large));  // 6 at the end
  small.max_nodes = 6;
  BOOST_TEST(is(status_of("*5\r\n|1\r\n", small), parse_status::incomplete));
}

namespace {

// A reply in one line, a word per node: its depth, its RESP type byte, then its size (an
// aggregate), its value (an integer or a boolean) or its text. A failed check prints
// both layouts whole.
std::string layout(const reply& r) {
  constexpr std::string_view marks = "+-:$_*#,(!=%~>";  // in the order of `type`
  static_assert(marks.size() == static_cast<std::size_t>(type::push) + 1);
  std::string s;
  for (const node& n : r) {
    if (!s.empty()) s += ' ';
    s += std::to_string(n.depth);
    s += marks[static_cast<std::size_t>(n.kind)];
    if (n.kind == type::array || n.kind == type::map || n.kind == type::set || n.kind == type::push)
      s += std::to_string(n.size);
    else if (n.kind == type::integer || n.kind == type::boolean)
      s += std::to_string(n.integer);
    else
      s += n.text;
  }
  return s;
}

// The reply parsed whole, and read by a reader fed it in two pieces cut at every byte,
// has the layout `want`; every prefix of it is incomplete.
void check_read_alike_at_every_cut(std::string_view wire, const limits& lim,
                                   std::string_view want) {
  check_every_prefix_and_split(wire, lim, parse_status::complete);
  reply whole;
  BOOST_TEST_REQUIRE(is(parse(wire, whole, lim).status, parse_status::complete));
  BOOST_TEST(layout(whole) == want);
  for (std::size_t cut = 0; cut <= wire.size(); ++cut) {
    reader rd{lim};
    reply r;
    rd.feed(wire.substr(0, cut));
    if (cut < wire.size())
      BOOST_TEST_REQUIRE(is(rd.next(r), parse_status::incomplete), "cut at " << cut);
    rd.feed(wire.substr(cut));
    BOOST_TEST_REQUIRE(is(rd.next(r), parse_status::complete), "cut at " << cut);
    BOOST_TEST(layout(r) == want, "cut at " << cut);
    BOOST_TEST(rd.buffered() == 0u);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(resp3_values_nested_in_aggregates_read_alike_however_the_reply_is_cut) {
  const std::string_view wire =
      ">5\r\n+message\r\n%2\r\n$3\r\nkey\r\n*3\r\n#t\r\n,1.5\r\n_\r\n=8\r\ntxt:some\r\n"
      "~2\r\n(123\r\n!3\r\nERR\r\n*0\r\n$-1\r\n:-7\r\n";
  check_read_alike_at_every_cut(
      wire, limits{},
      "0>5 1+message 1%4 2$key 2*3 3#1 3,1.5 3_ 2=some 2~2 3(123 3!ERR 1*0 1_ 1:-7");
}

BOOST_AUTO_TEST_CASE(a_limit_or_a_malformed_element_deep_in_a_reply_fails_the_whole_reply) {
  limits lim;
  lim.max_bulk = 8;
  lim.max_line = 8;  // lines up to 40 bytes
  lim.max_elements = 3;
  lim.max_depth = 4;
  // The value of a map inside an array: two frames open around it.
  const std::string at = "*1\r\n%1\r\n+k\r\n";
  auto deep = [&](std::string_view value) { return status_of(at + std::string{value}, lim); };
  const auto complete = parse_status::complete;
  const auto too_large = parse_status::too_large;
  BOOST_TEST(is(deep("$8\r\n12345678\r\n"), complete));
  BOOST_TEST(is(deep("$9\r\n"), too_large));  // before its payload arrives
  BOOST_TEST(is(deep("*3\r\n:1\r\n:2\r\n:3\r\n"), complete));
  BOOST_TEST(is(deep("*4\r\n"), too_large));
  BOOST_TEST(is(deep("~1\r\n%4\r\n"), too_large));
  BOOST_TEST(is(deep("+" + std::string(40, 'a') + "\r\n"), complete));
  BOOST_TEST(is(deep("+" + std::string(41, 'a') + "\r\n"), too_large));
  BOOST_TEST(is(deep("+" + std::string(41, 'a')), too_large));  // its CRLF still to come
  BOOST_TEST(is(deep("*1\r\n~1\r\n:1\r\n"), complete));         // four frames deep
  BOOST_TEST(is(deep("*1\r\n~1\r\n>1\r\n:1\r\n"), too_large));  // five
  BOOST_TEST(is(deep("*-1\r\n"), complete));
  BOOST_TEST(is(deep("$-1\r\n"), complete));
  BOOST_TEST(is(deep("#x\r\n"), parse_status::bad_framing));
  BOOST_TEST(is(deep("_x\r\n"), parse_status::bad_framing));
  BOOST_TEST(is(deep("=3\r\nabc\r\n"), parse_status::bad_framing));
  BOOST_TEST(is(deep("=4\r\nabcd\r\n"), parse_status::bad_framing));
  BOOST_TEST(is(deep("$3\r\nabcd\r\n"), parse_status::bad_framing));
  BOOST_TEST(is(deep(":1x\r\n"), parse_status::bad_number));
  BOOST_TEST(is(deep("!-1\r\n"), parse_status::bad_number));  // only '$' and '*' have a nil
  BOOST_TEST(is(deep("%-1\r\n"), parse_status::bad_number));
  BOOST_TEST(is(deep("|-1\r\n"), parse_status::bad_number));
  BOOST_TEST(is(deep("*-2\r\n"), parse_status::bad_number));
  BOOST_TEST(is(deep("?\r\n"), parse_status::bad_type));
  // An unfinished payload that far in asks for exactly the rest of the reply.
  reply r;
  const std::string unfinished = at + "$8\r\n1234";
  const auto res = parse(unfinished, r, lim);
  BOOST_TEST_REQUIRE(is(res.status, parse_status::incomplete));
  BOOST_TEST(res.needed == (at + "$8\r\n12345678\r\n").size());
  // Nodes: 3 around the value and 7 in it.
  const std::string ten = at + "*3\r\n*1\r\n:1\r\n:1\r\n*2\r\n:1\r\n:1\r\n";
  lim.max_nodes = 10;
  check_every_prefix_and_split(ten, lim, complete);
  lim.max_nodes = 9;
  BOOST_TEST(is(status_of(ten, lim), too_large));
}

BOOST_AUTO_TEST_CASE(attributes_inside_aggregates_leave_with_their_own_aggregates) {
  // An attribute whose key and value are aggregates, annotating a set in an array.
  const std::string_view annotated_set =
      "*2\r\n:3\r\n|1\r\n*2\r\n+a\r\n+b\r\n%1\r\n+c\r\n:4\r\n~1\r\n#t\r\n";
  limits lim;
  lim.max_nodes = 8;  // the array, 3, and the attribute's 6 nodes until it ends
  check_read_alike_at_every_cut(annotated_set, lim, "0*2 1:3 1~1 2#1");
  lim.max_nodes = 7;
  BOOST_TEST(is(status_of(annotated_set, lim), parse_status::too_large));

  // The annotated value is the last element of two arrays: it closes both.
  const std::string_view closing_two = "*1\r\n*1\r\n|1\r\n+k\r\n+v\r\n:5\r\n";
  lim = {};
  lim.max_depth = 3;  // the attribute is a frame too while it is open
  check_read_alike_at_every_cut(closing_two, lim, "0*1 1*1 2:5");
  lim.max_depth = 2;
  BOOST_TEST(is(status_of(closing_two, lim), parse_status::too_large));

  // An attribute on the reply's own value, which is an aggregate.
  check_read_alike_at_every_cut("|1\r\n+k\r\n*1\r\n:0\r\n*2\r\n:1\r\n:2\r\n", limits{},
                                "0*2 1:1 1:2");
}

// ---- Redis Cluster: slots, keys inside encoded commands, redirections -------------------

#include "connection/slots.hpp"

BOOST_AUTO_TEST_CASE(crc16_and_key_slots_match_redis_cluster_published_values) {
  using redlock::detail::crc16;
  using redlock::detail::key_slot;
  BOOST_TEST(crc16("123456789") == 0x31C3);  // the XMODEM check value
  BOOST_TEST(key_slot("foo") == 12182);
  BOOST_TEST(key_slot("bar") == 5061);
  BOOST_TEST(key_slot("hello") == 866);
  BOOST_TEST(key_slot("{user1000}.following") == key_slot("{user1000}.followers"));
  BOOST_TEST(key_slot("{user1000}.following") == key_slot("user1000"));
}

BOOST_AUTO_TEST_CASE(a_hash_tag_is_the_first_non_empty_braces) {
  using redlock::detail::hash_tag;
  BOOST_TEST(hash_tag("foo{bar}{zap}") == "bar");
  BOOST_TEST(hash_tag("foo{{bar}}zap") == "{bar");
  BOOST_TEST(hash_tag("foo{}{bar}") == "foo{}{bar}");  // empty first: the whole key
  BOOST_TEST(hash_tag("foo{bar") == "foo{bar");
  BOOST_TEST(hash_tag("plain") == "plain");
}

BOOST_AUTO_TEST_CASE(the_first_key_of_an_encoded_command_is_found_for_plain_commands_and_scripts) {
  using redlock::detail::first_key;
  std::string p;
  redlock::resp::append_command(p, "SET", "k1", "tok", "NX", "PX", "100", "GET");
  BOOST_TEST(first_key(p).value_or("-") == "k1");
  p.clear();
  redlock::resp::append_command(p, "EVALSHA", "abcd", "2", "lock:{x}", "fence");
  BOOST_TEST(first_key(p).value_or("-") == "lock:{x}");
  p.clear();
  redlock::resp::append_command(p, "eval", "return 1", "1", "k2", "arg");
  BOOST_TEST(first_key(p).value_or("-") == "k2");
  p.clear();
  redlock::resp::append_command(p, "EVALSHA", "abcd", "0", "arg");
  BOOST_TEST(!first_key(p));
  p.clear();
  redlock::resp::append_command(p, "PING");
  BOOST_TEST(!first_key(p));
  BOOST_TEST(!first_key("*2\r\n$3\r\nGET\r\n$10\r\nshort\r\n"));  // a length that overruns
  BOOST_TEST(!first_key("+OK\r\n"));
}

BOOST_AUTO_TEST_CASE(a_script_call_is_taken_apart_into_keys_and_arguments) {
  using redlock::detail::parse_script_call;
  std::string p;
  redlock::resp::append_command(p, "EVALSHA", "abcd", "3", "a", "b{t}", "c", "10", "x", "", "z");
  auto c = parse_script_call(p);
  BOOST_TEST_REQUIRE(c.has_value());
  BOOST_TEST(c->by_sha);
  BOOST_TEST(c->script == "abcd");
  BOOST_TEST((c->keys == std::vector<std::string_view>{"a", "b{t}", "c"}));
  BOOST_TEST((c->args == std::vector<std::string_view>{"10", "x", "", "z"}));
  p.clear();
  redlock::resp::append_command(p, "eval", "return 1", "0");
  c = parse_script_call(p);
  BOOST_TEST_REQUIRE(c.has_value());
  BOOST_TEST(!c->by_sha);
  BOOST_TEST(c->keys.empty());
  BOOST_TEST(c->args.empty());
  // More keys than arguments, another command, a truncated or overlong payload: nothing.
  p.clear();
  redlock::resp::append_command(p, "EVALSHA", "abcd", "3", "a", "b");
  BOOST_TEST(!parse_script_call(p));
  p.clear();
  redlock::resp::append_command(p, "SET", "k", "v", "x");
  BOOST_TEST(!parse_script_call(p));
  p.clear();
  redlock::resp::append_command(p, "EVAL", "return 1", "1", "k", "v");
  BOOST_TEST(!parse_script_call(p.substr(0, p.size() - 3)));
  BOOST_TEST(!parse_script_call(p + "+OK\r\n"));
  BOOST_TEST(!parse_script_call("*3\r\n$4\r\nEVAL\r\n$1\r\nx\r\n$2\r\n-1\r\n"));
}

BOOST_AUTO_TEST_CASE(moved_and_ask_replies_are_parsed_and_others_are_not) {
  using redlock::detail::parse_redirect;
  auto m = parse_redirect("MOVED 3999 127.0.0.1:6381");
  BOOST_REQUIRE(m);
  BOOST_TEST(!m->ask);
  BOOST_TEST(m->slot == 3999);
  BOOST_TEST(m->host == "127.0.0.1");
  BOOST_TEST(m->port == 6381);
  auto a = parse_redirect("ASK 12 ::1:7000");
  BOOST_REQUIRE(a);
  BOOST_TEST(a->ask);
  BOOST_TEST(a->host == "::1");
  auto empty_host = parse_redirect("MOVED 1 :7001");
  BOOST_REQUIRE(empty_host);
  BOOST_TEST(empty_host->host.empty());
  BOOST_TEST(!parse_redirect("MOVED 16384 h:1"));  // no such slot
  BOOST_TEST(!parse_redirect("MOVED 1 h:0"));
  BOOST_TEST(!parse_redirect("MOVED 1 h"));
  BOOST_TEST(!parse_redirect("ERR MOVED 1 h:1"));
  BOOST_TEST(!parse_redirect("WRONGTYPE Operation against a key"));
}

BOOST_AUTO_TEST_CASE(every_slot_has_a_short_tag_that_lands_in_it_and_the_tags_never_change) {
  using redlock::detail::key_slot;
  using redlock::detail::slot_tag;
  for (std::uint32_t slot = 0; slot < redlock::detail::cluster_slots; ++slot) {
    const auto tag = slot_tag(static_cast<std::uint16_t>(slot));
    BOOST_TEST_REQUIRE((!tag.empty() && tag.size() <= 4));
    BOOST_TEST_REQUIRE(key_slot("redlock:fence:{" + std::string{tag} + "}") == slot);
  }
  // Every client of a fleet must name a slot's counters alike, in every version: the
  // table is part of the key layout (docs/deployment.md).
  BOOST_TEST(slot_tag(0) == "la2");
  BOOST_TEST(slot_tag(12182) == "foo");
  BOOST_TEST(slot_tag(16383) == "hia");
}
