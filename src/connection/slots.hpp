// SPDX-License-Identifier: BSL-1.0
#pragma once
// Redis Cluster's key space: 16384 hash slots, a key's slot from CRC16 of its hash tag,
// and where a command's key sits inside an encoded request. Pure functions, no I/O.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace redlock::detail {

inline constexpr std::uint16_t cluster_slots = 16384;

/// CRC16 (XMODEM: polynomial 0x1021, initial 0), the checksum Redis Cluster hashes with.
std::uint16_t crc16(std::string_view data) noexcept;

/// The part of `key` that decides its slot: the text between the first '{' and the first
/// '}' after it, when that is not empty; else the whole key (Redis Cluster's rule).
std::string_view hash_tag(std::string_view key) noexcept;

/// The slot of `key`: crc16(hash_tag(key)) mod 16384.
std::uint16_t key_slot(std::string_view key) noexcept;

/// A short text whose slot is `slot` ("{" + it + "}" puts a key there): the same for
/// every client and version, since keys that must share a lock key's slot are named with
/// it (the fencing counters of a fleet with a Redis Cluster node).
std::string_view slot_tag(std::uint16_t slot);

/// The first key of one RESP-encoded command (an array of bulk strings, as
/// resp::append_command writes it): argument 1 for plain commands, argument 3 for EVAL and
/// EVALSHA when they declare a key. Nothing for a command without keys (PING, a script
/// with no keys) or bytes that are not such an array.
std::optional<std::string_view> first_key(std::string_view payload) noexcept;

/// A script call (EVAL or EVALSHA) taken apart: what a cluster node needs to send a call
/// whose keys span slots as one call per shard.
struct script_call {
  bool by_sha = false;      ///< EVALSHA (else EVAL)
  std::string_view script;  ///< the SHA1, or the script's text
  std::vector<std::string_view> keys;
  std::vector<std::string_view> args;
};
/// Parses one RESP-encoded EVAL or EVALSHA; nothing for any other command or bytes that
/// are not an array of bulk strings.
std::optional<script_call> parse_script_call(std::string_view payload);

/// A redirection a cluster shard answered with: "MOVED slot host:port" (the slot lives
/// elsewhere now) or "ASK slot host:port" (this one key is being moved: ask there once,
/// after ASKING).
struct redirect {
  bool ask = false;
  std::uint16_t slot = 0;
  std::string_view host;
  std::uint16_t port = 0;
};
/// Parses an error reply's text as a redirection; nothing if it is not one.
std::optional<redirect> parse_redirect(std::string_view error_text) noexcept;

}  // namespace redlock::detail
