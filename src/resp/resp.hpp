// SPDX-License-Identifier: BSL-1.0
#pragma once
// RESP codec: a command encoder and an incremental reply parser. Pure code, no I/O,
// no exceptions out of the parser: every input, however hostile, yields a value or a
// parse error, and the limits below bound the memory a bogus server can make us use.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redlock::resp {

/// Types of reply nodes. RESP2 types plus those RESP3 adds, so that a server speaking
/// RESP3 cannot confuse the parser (we never ask for RESP3 ourselves).
enum class type : std::uint8_t {
  simple_string,    // +OK
  simple_error,     // -ERR ...
  integer,          // :1
  bulk_string,      // $3 foo
  null,             // $-1, *-1 or RESP3 _
  array,            // *N
  boolean,          // #t
  double_type,      // ,1.5 (kept as text)
  big_number,       // (123 (kept as text)
  bulk_error,       // !N ...
  verbatim_string,  // =N txt:...
  map,              // %N (size counts keys and values: 2 * N)
  set,              // ~N
  push,             // >N, out-of-band data
};

/// One node of a reply, in pre-order. Aggregates store their element count in `size`;
/// their elements follow them. `text` points into the parser's buffer and is valid
/// until the next call that changes the buffer.
struct node {
  type kind = type::null;
  std::uint32_t depth = 0;
  std::size_t size = 0;
  std::int64_t integer = 0;
  std::string_view text;

  bool is_error() const { return kind == type::simple_error || kind == type::bulk_error; }
  bool is_string() const {
    return kind == type::simple_string || kind == type::bulk_string ||
           kind == type::verbatim_string;
  }
};

/// A whole reply: its nodes in pre-order (`nodes[0]` is the top).
using reply = std::vector<node>;

/// Hard limits applied while parsing. A reader buffers at most `max_reply` bytes (plus
/// one read) and a reply holds at most `max_nodes` nodes, whatever a server sends.
struct limits {
  std::size_t max_bulk = 16u << 20;     ///< longest bulk string, bytes
  std::size_t max_line = 64u << 10;     ///< longest simple line, bytes
  std::size_t max_elements = 1u << 20;  ///< most elements in one aggregate
  std::size_t max_nodes = 1u << 21;     ///< most nodes in one reply
  std::uint32_t max_depth = 32;         ///< deepest nesting
  std::size_t max_reply = 64u << 20;    ///< most bytes in one reply, all nodes together
};

enum class parse_status : std::uint8_t {
  complete,     ///< a reply was parsed; `consumed` bytes belong to it
  incomplete,   ///< more bytes are needed
  bad_type,     ///< unknown type byte
  bad_number,   ///< malformed length or integer
  bad_framing,  ///< missing CRLF, bad boolean, ...
  too_large,    ///< a limit was exceeded
};

const char* to_string(parse_status s);

/// Parses one reply from the front of `data`, or says what is wrong with it.
/// Stateless: call again with more bytes after `incomplete`.
struct parse_result {
  parse_status status = parse_status::incomplete;
  std::size_t consumed = 0;
  /// After `incomplete`: no call gives another answer before `data` is at least this
  /// long (the end of a bulk payload still to come, or one more byte), so a reader need
  /// not parse again before. A reply that cannot fit the limits, however it continues,
  /// is `too_large` at once.
  std::size_t needed = 0;
};
parse_result parse(std::string_view data, reply& out, const limits& lim = {});

/// Incremental reader: owns the receive buffer, accepts arbitrary chunks (one byte at a
/// time works), and yields complete replies.
class reader {
 public:
  explicit reader(limits lim = {}) : limits_(lim) {}

  /// Space to read into (at least `min_free` bytes); call commit() with what was written.
  std::span<char> prepare(std::size_t min_free = 16u << 10);
  void commit(std::size_t n) { end_ += n; }
  /// Copies a chunk into the buffer (tests, fuzzing).
  void feed(std::string_view chunk);

  /// Parses the next complete reply, if any. After `complete`, the reply's text views
  /// stay valid until the next call to next(), prepare() or feed().
  parse_status next(reply& out);

  /// Drops everything buffered (after a protocol error or a reconnect) and gives back
  /// a buffer that a large reply grew.
  void reset();
  std::size_t buffered() const { return end_ - begin_; }
  /// Bytes of buffer held now (for tests of the memory bound).
  std::size_t capacity() const { return buf_.capacity(); }

 private:
  void compact();
  void shrink_if_idle();

  limits limits_;
  std::vector<char> buf_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  std::size_t want_ = 0;  // no complete reply can exist before this many bytes
};

/// Appends one command in RESP array form to `out`.
class command_writer {
 public:
  explicit command_writer(std::string& out) : out_(out) {}
  /// Starts a command of `argc` arguments (the command name counts).
  command_writer& begin(std::size_t argc);
  command_writer& arg(std::string_view a);
  command_writer& arg(std::int64_t v);

 private:
  std::string& out_;
};

namespace detail {
// Bytes an argument takes at most in a command: "$" + length + CRLF + data + CRLF.
inline std::size_t encoded_bound(std::string_view a) {
  return a.size() + 24;
}
inline std::size_t encoded_bound(std::int64_t) {
  return 48;
}
// A char array argument is a string literal ("SET", "PX"): its length is the array's less the
// terminating null, known at compile time (a string_view of it would call strlen).
template <std::size_t N>
constexpr std::size_t encoded_bound(const char (&)[N]) {
  return N - 1 + 24;
}
}  // namespace detail

namespace detail {
/// Write "<mark><n>\r\n" / one argument at `p`, which has room for it (encoded_bound);
/// return the end.
char* put_header(char* p, char mark, std::size_t n) noexcept;
char* put_arg(char* p, std::string_view a) noexcept;
char* put_arg(char* p, std::int64_t v) noexcept;
template <std::size_t N>
char* put_arg(char* p, const char (&literal)[N]) noexcept {
  return put_arg(p, std::string_view{literal, N - 1});
}
}  // namespace detail

/// Appends one command of `args`: string views, integers, or string literals (a char
/// array is taken as a literal: all of it but its last byte).
template <typename... Args>
void append_command(std::string& out, const Args&... args) {
  // Sized once, written in place, then trimmed: one allocation at most and no
  // per-argument appends.
  const std::size_t old = out.size();
  out.resize(old + 24 + (detail::encoded_bound(args) + ... + 0));
  char* p = detail::put_header(out.data() + old, '*', sizeof...(Args));
  ((p = detail::put_arg(p, args)), ...);
  out.resize(static_cast<std::size_t>(p - out.data()));
}

}  // namespace redlock::resp
