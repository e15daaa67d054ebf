// SPDX-License-Identifier: BSL-1.0
#include "connection/slots.hpp"

#include <array>
#include <charconv>
#include <string>
#include <vector>

namespace redlock::detail {
namespace {

constexpr std::array<std::uint16_t, 256> make_crc_table() {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    std::uint16_t c = static_cast<std::uint16_t>(i << 8);
    for (int b = 0; b < 8; ++b)
      c = static_cast<std::uint16_t>((c & 0x8000) ? (c << 1) ^ 0x1021 : c << 1);
    t[i] = c;
  }
  return t;
}

constexpr auto crc_table = make_crc_table();

// Reads "<prefix><digits>\r\n" at `pos` and moves past it; false if the bytes differ.
bool read_length(std::string_view s, std::size_t& pos, char prefix, std::size_t& out) {
  if (pos >= s.size() || s[pos] != prefix) return false;
  const auto end = s.find('\r', pos);
  if (end == std::string_view::npos || end + 1 >= s.size() || s[end + 1] != '\n') return false;
  const auto [p, ec] = std::from_chars(s.data() + pos + 1, s.data() + end, out);
  if (ec != std::errc{} || p != s.data() + end) return false;
  pos = end + 2;
  return true;
}

bool read_bulk(std::string_view s, std::size_t& pos, std::string_view& out) {
  std::size_t len = 0;
  if (!read_length(s, pos, '$', len) || s.size() - pos < len + 2) return false;
  out = s.substr(pos, len);
  pos += len + 2;
  return true;
}

bool equals_nocase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  return true;
}

}  // namespace

std::uint16_t crc16(std::string_view data) noexcept {
  std::uint16_t c = 0;
  for (unsigned char ch : data)
    c = static_cast<std::uint16_t>((c << 8) ^ crc_table[((c >> 8) ^ ch) & 0xff]);
  return c;
}

std::string_view hash_tag(std::string_view key) noexcept {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) noexcept {
  return static_cast<std::uint16_t>(crc16(hash_tag(key)) & (cluster_slots - 1));
}

std::string_view slot_tag(std::uint16_t slot) {
  // The first base-36 numeral (0, 1, ..., z, 10, ...) to land in each slot: about 170,000
  // CRCs of at most 4 characters, once per process.
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(cluster_slots);
    std::size_t filled = 0;
    for (std::uint32_t n = 0; filled < cluster_slots; ++n) {
      char buf[8];
      int len = 0;
      std::uint32_t v = n;
      do {
        buf[len++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
        v /= 36;
      } while (v > 0);
      const std::string tag(buf, static_cast<std::size_t>(len));
      const auto s = static_cast<std::size_t>(crc16(tag) & (cluster_slots - 1));
      if (t[s].empty()) {
        t[s] = tag;
        ++filled;
      }
    }
    return t;
  }();
  return table[slot & (cluster_slots - 1)];
}

std::optional<std::string_view> first_key(std::string_view payload) noexcept {
  std::size_t pos = 0, argc = 0;
  if (!read_length(payload, pos, '*', argc) || argc < 2) return std::nullopt;
  std::string_view cmd, arg;
  if (!read_bulk(payload, pos, cmd) || !read_bulk(payload, pos, arg)) return std::nullopt;
  if (!equals_nocase(cmd, "EVALSHA") && !equals_nocase(cmd, "EVAL")) return arg;
  std::string_view numkeys;
  std::size_t n = 0;
  if (argc < 4 || !read_bulk(payload, pos, numkeys)) return std::nullopt;
  const auto [p, ec] = std::from_chars(numkeys.data(), numkeys.data() + numkeys.size(), n);
  if (ec != std::errc{} || p != numkeys.data() + numkeys.size() || n == 0) return std::nullopt;
  if (!read_bulk(payload, pos, arg)) return std::nullopt;
  return arg;
}

std::optional<script_call> parse_script_call(std::string_view payload) {
  std::size_t pos = 0, argc = 0;
  if (!read_length(payload, pos, '*', argc) || argc < 3) return std::nullopt;
  std::string_view cmd, numkeys;
  script_call c;
  if (!read_bulk(payload, pos, cmd)) return std::nullopt;
  c.by_sha = equals_nocase(cmd, "EVALSHA");
  if (!c.by_sha && !equals_nocase(cmd, "EVAL")) return std::nullopt;
  if (!read_bulk(payload, pos, c.script) || !read_bulk(payload, pos, numkeys)) return std::nullopt;
  std::size_t n = 0;
  const auto [p, ec] = std::from_chars(numkeys.data(), numkeys.data() + numkeys.size(), n);
  if (ec != std::errc{} || p != numkeys.data() + numkeys.size() || n > argc - 3)
    return std::nullopt;
  c.keys.resize(n);
  c.args.resize(argc - 3 - n);
  for (auto& k : c.keys)
    if (!read_bulk(payload, pos, k)) return std::nullopt;
  for (auto& a : c.args)
    if (!read_bulk(payload, pos, a)) return std::nullopt;
  if (pos != payload.size()) return std::nullopt;
  return c;
}

std::optional<redirect> parse_redirect(std::string_view text) noexcept {
  redirect r;
  if (text.substr(0, 6) == "MOVED ") {
    text.remove_prefix(6);
  } else if (text.substr(0, 4) == "ASK ") {
    text.remove_prefix(4);
    r.ask = true;
  } else {
    return std::nullopt;
  }
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  unsigned slot = 0, port = 0;
  const auto s = std::from_chars(text.data(), text.data() + space, slot);
  if (s.ec != std::errc{} || s.ptr != text.data() + space || slot >= cluster_slots)
    return std::nullopt;
  const std::string_view endpoint = text.substr(space + 1);
  const auto colon = endpoint.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const auto p =
      std::from_chars(endpoint.data() + colon + 1, endpoint.data() + endpoint.size(), port);
  if (p.ec != std::errc{} || p.ptr != endpoint.data() + endpoint.size() || port == 0 ||
      port > 65535)
    return std::nullopt;
  r.slot = static_cast<std::uint16_t>(slot);
  r.host = endpoint.substr(0, colon);  // empty: the same host as the shard that answered
  r.port = static_cast<std::uint16_t>(port);
  return r;
}

}  // namespace redlock::detail
