// SPDX-License-Identifier: BSL-1.0
#include "resp/resp.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace redlock::resp {

const char* to_string(parse_status s) {
  switch (s) {
    case parse_status::complete:
      return "complete";
    case parse_status::incomplete:
      return "incomplete";
    case parse_status::bad_type:
      return "unknown RESP type byte";
    case parse_status::bad_number:
      return "malformed RESP length or integer";
    case parse_status::bad_framing:
      return "malformed RESP framing";
    case parse_status::too_large:
      return "RESP reply exceeds a size limit";
  }
  return "unknown";
}

namespace {

constexpr std::uint32_t hard_max_depth = 64;

bool parse_int(std::string_view s, std::int64_t& v) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = b + s.size();
  if (*b == '+') ++b;  // tolerated; from_chars rejects it
  auto [p, ec] = std::from_chars(b, e, v);
  return ec == std::errc{} && p == e && b != e;
}

struct frame {
  std::size_t remaining;
  std::size_t attribute_start;  // out.size() when an attribute began; npos otherwise
};
constexpr std::size_t npos = static_cast<std::size_t>(-1);

}  // namespace

namespace {

// The replies a lock cycle gets most, read without the general loop and with its result:
// an integer (":1\r\n") or a nil bulk string ("$-1\r\n") at the top level. Anything
// else, or anything unusual about these, is left to the loop (false).
bool parse_short(std::string_view data, reply& out, const limits& lim, parse_result& r) {
  if (data.size() < 4 || (data[0] != ':' && data[0] != '$') || lim.max_nodes < 1) return false;
  std::size_t cr = 1;
  while (cr < data.size() && cr < 24 && data[cr] != '\r') ++cr;
  if (cr == 1 || cr + 1 >= data.size() || data[cr] != '\r' || data[cr + 1] != '\n') return false;
  if (cr + 2 > lim.max_reply) return false;
  const std::string_view line = data.substr(1, cr - 1);
  node n;
  if (data[0] == ':') {
    if (!parse_int(line, n.integer)) return false;
    n.kind = type::integer;
  } else {
    if (line != "-1") return false;
    n.kind = type::null;
  }
  out.push_back(n);
  r = parse_result{parse_status::complete, cr + 2, 0};
  return true;
}

// A line may run 32 bytes past max_line. Finished and unfinished lines share this one
// measure, so that where a read ends never changes the verdict.
bool line_too_long(std::size_t length, const limits& lim) {
  return length > lim.max_line + 32;
}

// What reading one element's own bytes (not the elements it announces) came to.
struct element_step {
  // complete, incomplete, or the error that ends the parse
  parse_status status = parse_status::complete;
  // complete: where the next element starts; incomplete: the input length at which this
  // element can end, at the least
  std::size_t end = 0;
};

// The line of an element has no CRLF yet. Its length so far leaves out the type byte and
// a '\r' that may begin the CRLF, as a finished line's does.
element_step unfinished_line(std::string_view data, std::size_t pos, const limits& lim) {
  const std::size_t after_type = data.size() - pos - 1;
  const std::size_t so_far = after_type - (after_type > 0 && data.back() == '\r' ? 1 : 0);
  if (line_too_long(so_far, lim)) return {parse_status::too_large};
  return {parse_status::incomplete, std::max(data.size() + 1, pos + 3)};
}

element_step text_line(type kind, std::string_view line, std::size_t next, node& n) {
  n.kind = kind;
  n.text = line;
  return {parse_status::complete, next};
}

element_step integer_line(std::string_view line, std::size_t next, node& n) {
  n.kind = type::integer;
  if (!parse_int(line, n.integer)) return {parse_status::bad_number};
  return {parse_status::complete, next};
}

element_step boolean_line(std::string_view line, std::size_t next, node& n) {
  n.kind = type::boolean;
  if (line == "t")
    n.integer = 1;
  else if (line == "f")
    n.integer = 0;
  else
    return {parse_status::bad_framing};
  return {parse_status::complete, next};
}

element_step nil(std::size_t next, node& n) {
  n.kind = type::null;
  return {parse_status::complete, next};
}

element_step null_line(std::string_view line, std::size_t next, node& n) {
  if (!line.empty()) return {parse_status::bad_framing};
  return nil(next, n);
}

// The number on the line of a bulk or an aggregate: a length or a count.
struct announced {
  parse_status status = parse_status::complete;
  bool nil = false;  // -1, where the type has a nil
  std::size_t value = 0;
};

// Checked against its limit (`most`) before what it announces arrives: a server cannot
// make us buffer or wait for more than the limits allow. `inline` because, with two
// callers, GCC 12 at -O2 otherwise calls it out of line on every bulk and aggregate.
inline announced read_announced(std::string_view line, bool nil_allowed, std::size_t most) {
  std::int64_t v = 0;
  if (!parse_int(line, v)) return {parse_status::bad_number};
  if (v == -1 && nil_allowed) return {parse_status::complete, true};
  if (v < 0) return {parse_status::bad_number};
  if (static_cast<std::uint64_t>(v) > most) return {parse_status::too_large};
  return {parse_status::complete, false, static_cast<std::size_t>(v)};
}

// Bulk strings ('$'), bulk errors ('!') and verbatim strings ('='): the line holds a
// length, and the payload and its own CRLF follow the line, starting at `next`.
element_step blob(char t, std::string_view line, std::string_view data, std::size_t next,
                  const limits& lim, node& n) {
  const announced len = read_announced(line, t == '$', lim.max_bulk);
  if (len.status != parse_status::complete) return {len.status};
  if (len.nil) return nil(next, n);
  const std::size_t ulen = len.value;
  if (data.size() - next < ulen + 2) return {parse_status::incomplete, next + ulen + 2};
  if (data[next + ulen] != '\r' || data[next + ulen + 1] != '\n')
    return {parse_status::bad_framing};
  n.text = data.substr(next, ulen);
  n.kind = t == '$' ? type::bulk_string : t == '!' ? type::bulk_error : type::verbatim_string;
  if (t == '=') {
    // "txt:" prefix names the format; the payload follows it.
    if (ulen < 4 || n.text[3] != ':') return {parse_status::bad_framing};
    n.text.remove_prefix(4);
  }
  return {parse_status::complete, next + ulen + 2};
}

// Arrays ('*'), maps ('%'), sets ('~'), pushes ('>') and attributes ('|'): the line holds
// an element count, and the elements follow as elements of their own.
element_step aggregate_header(char t, std::string_view line, std::size_t next, const limits& lim,
                              node& n) {
  const announced count = read_announced(line, t == '*', lim.max_elements);
  if (count.status != parse_status::complete) return {count.status};
  if (count.nil) return nil(next, n);
  n.kind = t == '*' ? type::array : t == '%' ? type::map : t == '~' ? type::set : type::push;
  // Maps and attributes announce pairs: each key and each value is an element.
  n.size = t == '%' || t == '|' ? count.value * 2 : count.value;
  return {parse_status::complete, next};
}

// Reads the element whose type byte is at `pos` (inside `data`) into `n`. Each type byte
// goes straight to its reader, so an element costs one dispatch.
element_step read_element(std::string_view data, std::size_t pos, const limits& lim, node& n) {
  const char t = data[pos];
  const std::size_t lf = data.find("\r\n", pos + 1);
  if (lf == std::string_view::npos) return unfinished_line(data, pos, lim);
  if (line_too_long(lf - pos - 1, lim)) return {parse_status::too_large};
  const std::string_view line = data.substr(pos + 1, lf - pos - 1);
  const std::size_t next = lf + 2;
  switch (t) {
    case '+':
      return text_line(type::simple_string, line, next, n);
    case '-':
      return text_line(type::simple_error, line, next, n);
    case ',':
      return text_line(type::double_type, line, next, n);
    case '(':
      return text_line(type::big_number, line, next, n);
    case ':':
      return integer_line(line, next, n);
    case '#':
      return boolean_line(line, next, n);
    case '_':
      return null_line(line, next, n);
    case '$':
    case '!':
    case '=':
      return blob(t, line, data, next, lim, n);
    case '*':
    case '%':
    case '~':
    case '>':
    case '|':
      return aggregate_header(t, line, next, lim, n);
    default:
      return {parse_status::bad_type};
  }
}

parse_result failed(parse_status s) {
  return parse_result{s, 0, 0};
}

// The aggregates and attributes still open around the next element, innermost last. A
// fixed array, not a vector: parsing a reply allocates nothing but the reply's nodes.
class nesting {
 public:
  explicit nesting(std::uint32_t max_depth) : max_depth_(max_depth) {}

  std::uint32_t depth() const { return depth_; }

  // Opens a frame that `elements` more elements will finish. `attribute_start` is where
  // an attribute's nodes begin in the reply (they leave it when the attribute ends), or
  // npos for an aggregate, whose nodes stay. False when that nests too deep.
  bool open(std::size_t elements, std::size_t attribute_start) {
    if (depth_ + 1 > max_depth_) return false;
    stack_[depth_++] = frame{elements, attribute_start};
    return true;
  }

  // A value is complete: counts it in its frame, and closes every frame that it
  // completes. True when it was the reply's own value, so the reply is complete.
  bool finish_value(reply& out) {
    for (;;) {
      if (depth_ == 0) return true;
      frame& f = stack_[depth_ - 1];
      if (--f.remaining > 0) return false;
      --depth_;
      if (f.attribute_start != npos) {
        out.resize(f.attribute_start);  // drop the attribute; its value is still to come
        return false;
      }
    }
  }

  // More bytes are needed, and no answer can change before the input reaches
  // `element_end` (the end of a bulk payload, the next byte of an unfinished line): a
  // large reply arriving in small reads is not re-parsed for every read of its payload.
  // A reply that cannot fit the limits however it continues fails now, not after the
  // server has sent (and we have buffered) what it announced. The shortest way on gives
  // every element still owed one node and 3 bytes ("_\r\n"); the element under way
  // ends at `element_end`. Bytes add up. Nodes do not always: an attribute's elements
  // leave `out` when it ends, so what counts is the most `out` must hold at once, found
  // by finishing the frames from the deepest out. The verdict is exact for that shortest
  // way, so a prefix is `too_large` only if every reply it begins is.
  parse_result incomplete(const reply& out, const limits& lim, std::size_t element_end) const {
    std::size_t owed = 0;  // elements still to finish, the one under way included
    std::size_t held = out.size();
    std::size_t peak = held;
    for (std::uint32_t i = depth_; i-- > 0;) {
      // An aggregate above frame i is its element under way, already in `out`; an
      // attribute above it only annotates the element, which is still to come.
      const bool started = i + 1 < depth_ && stack_[i + 1].attribute_start == npos;
      const std::size_t todo = stack_[i].remaining - (started ? 1 : 0);
      owed += todo;
      held += todo;
      peak = std::max(peak, held);
      if (stack_[i].attribute_start != npos) held = stack_[i].attribute_start;
    }
    if (depth_ == 0 || stack_[0].attribute_start != npos) {  // the reply's own value
      ++owed;
      peak = std::max(peak, held + 1);
    }
    if (element_end + 3 * (owed - 1) > lim.max_reply || peak > lim.max_nodes)
      return failed(parse_status::too_large);
    return parse_result{parse_status::incomplete, 0, element_end};
  }

 private:
  std::array<frame, hard_max_depth> stack_;  // not zeroed per parse: only [0, depth_) is read
  std::uint32_t depth_ = 0;
  std::uint32_t max_depth_;
};

}  // namespace

parse_result parse(std::string_view data, reply& out, const limits& lim) {
  out.clear();
  if (parse_result r; parse_short(data, out, lim, r)) return r;
  nesting nest{std::min(lim.max_depth, hard_max_depth)};
  std::size_t pos = 0;
  for (;;) {
    if (pos > lim.max_reply) return failed(parse_status::too_large);
    if (pos >= data.size()) return nest.incomplete(out, lim, pos + 3);
    node n;
    n.depth = nest.depth();
    const bool attribute = data[pos] == '|';
    const element_step step = read_element(data, pos, lim, n);
    if (step.status == parse_status::incomplete) return nest.incomplete(out, lim, step.end);
    if (step.status != parse_status::complete) return failed(step.status);
    pos = step.end;

    if (attribute) {
      // Attributes annotate the value that follows them; we keep only that value.
      if (n.size == 0) continue;
      if (!nest.open(n.size, out.size())) return failed(parse_status::too_large);
      continue;
    }
    out.push_back(n);
    if (out.size() > lim.max_nodes) return failed(parse_status::too_large);
    if (n.size > 0) {  // only an aggregate has a size: its elements come next
      if (!nest.open(n.size, npos)) return failed(parse_status::too_large);
      continue;
    }
    if (!nest.finish_value(out)) continue;
    if (pos > lim.max_reply) return failed(parse_status::too_large);
    return parse_result{parse_status::complete, pos, 0};
  }
}

std::span<char> reader::prepare(std::size_t min_free) {
  shrink_if_idle();
  if (buf_.size() - end_ < min_free) {
    compact();
    if (buf_.size() - end_ < min_free) buf_.resize(end_ + min_free);
  }
  return {buf_.data() + end_, buf_.size() - end_};
}

void reader::feed(std::string_view chunk) {
  if (chunk.empty()) return;  // memcpy from or to a null pointer is undefined, even for 0 bytes
  auto space = prepare(chunk.size());
  std::memcpy(space.data(), chunk.data(), chunk.size());
  commit(chunk.size());
}

void reader::compact() {
  if (begin_ == 0) return;
  std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
}

parse_status reader::next(reply& out) {
  const std::size_t have = end_ - begin_;
  if (have == 0 || have < want_) return parse_status::incomplete;
  auto r = parse(std::string_view{buf_.data() + begin_, have}, out, limits_);
  if (r.status == parse_status::complete) {
    begin_ += r.consumed;
    want_ = 0;
    if (begin_ == end_) begin_ = end_ = 0;
  } else if (r.status == parse_status::incomplete) {
    want_ = std::max(have + 1, r.needed);
  }
  return r.status;
}

void reader::reset() {
  begin_ = end_ = 0;
  want_ = 0;
  shrink_if_idle();
}

void reader::shrink_if_idle() {
  // One large reply must not pin its buffer for the life of the connection.
  constexpr std::size_t keep = 1u << 20;
  if (begin_ == end_ && buf_.capacity() > keep) std::vector<char>{}.swap(buf_);
}

namespace {

// "<mark><n>\r\n" appended in one piece.
void append_header(std::string& out, char mark, std::size_t n) {
  char tmp[24];
  out.append(tmp, detail::put_header(tmp, mark, n));
}

}  // namespace

namespace detail {

char* put_header(char* p, char mark, std::size_t n) noexcept {
  *p++ = mark;
  if (n < 10) {
    *p++ = static_cast<char>('0' + n);
  } else if (n < 100) {
    *p++ = static_cast<char>('0' + n / 10);
    *p++ = static_cast<char>('0' + n % 10);
  } else {
    p = std::to_chars(p, p + 20, n).ptr;
  }
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

char* put_arg(char* p, std::string_view a) noexcept {
  p = put_header(p, '$', a.size());
  if (!a.empty()) std::memcpy(p, a.data(), a.size());
  p += a.size();
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

char* put_arg(char* p, std::int64_t v) noexcept {
  char tmp[24];
  const char* end = std::to_chars(tmp, tmp + sizeof tmp, v).ptr;
  return put_arg(p, std::string_view{tmp, static_cast<std::size_t>(end - tmp)});
}

}  // namespace detail

command_writer& command_writer::begin(std::size_t argc) {
  append_header(out_, '*', argc);
  return *this;
}

command_writer& command_writer::arg(std::string_view a) {
  append_header(out_, '$', a.size());
  out_.append(a.data(), a.size());
  out_.append("\r\n", 2);
  return *this;
}

command_writer& command_writer::arg(std::int64_t v) {
  char tmp[24];
  auto [p, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
  (void)ec;
  return arg(std::string_view{tmp, static_cast<std::size_t>(p - tmp)});
}

}  // namespace redlock::resp
