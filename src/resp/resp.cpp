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

}  // namespace

parse_result parse(std::string_view data, reply& out, const limits& lim) {
  out.clear();
  if (parse_result r; parse_short(data, out, lim, r)) return r;
  std::array<frame, hard_max_depth> stack;
  std::uint32_t depth = 0;
  const std::uint32_t max_depth = std::min(lim.max_depth, hard_max_depth);
  std::size_t pos = 0;

  auto fail = [&](parse_status s) { return parse_result{s, 0, 0}; };
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
  auto incomplete = [&](std::size_t element_end) {
    std::size_t owed = 0;  // elements still to finish, the one under way included
    std::size_t held = out.size();
    std::size_t peak = held;
    for (std::uint32_t i = depth; i-- > 0;) {
      // An aggregate above frame i is its element under way, already in `out`; an
      // attribute above it only annotates the element, which is still to come.
      const bool started = i + 1 < depth && stack[i + 1].attribute_start == npos;
      const std::size_t todo = stack[i].remaining - (started ? 1 : 0);
      owed += todo;
      held += todo;
      peak = std::max(peak, held);
      if (stack[i].attribute_start != npos) held = stack[i].attribute_start;
    }
    if (depth == 0 || stack[0].attribute_start != npos) {  // the reply's own value
      ++owed;
      peak = std::max(peak, held + 1);
    }
    if (element_end + 3 * (owed - 1) > lim.max_reply || peak > lim.max_nodes)
      return fail(parse_status::too_large);
    return parse_result{parse_status::incomplete, 0, element_end};
  };

  for (;;) {
    if (pos > lim.max_reply) return fail(parse_status::too_large);
    if (pos >= data.size()) return incomplete(pos + 3);
    const char t = data[pos];
    const std::size_t lf = data.find("\r\n", pos + 1);
    if (lf == std::string_view::npos) {
      // The line so far, without its type byte and a '\r' that may begin its CRLF: the
      // same measure as below, so that where a read ends never changes the verdict.
      const std::size_t after_type = data.size() - pos - 1;
      const std::size_t so_far = after_type - (after_type > 0 && data.back() == '\r' ? 1 : 0);
      if (so_far > lim.max_line + 32) return fail(parse_status::too_large);
      return incomplete(std::max(data.size() + 1, pos + 3));
    }
    if (lf - pos - 1 > lim.max_line + 32) return fail(parse_status::too_large);
    const std::string_view line = data.substr(pos + 1, lf - pos - 1);
    std::size_t next = lf + 2;

    node n;
    n.depth = depth;
    bool aggregate = false;
    bool attribute = false;
    switch (t) {
      case '+':
        n.kind = type::simple_string;
        n.text = line;
        break;
      case '-':
        n.kind = type::simple_error;
        n.text = line;
        break;
      case ',':
        n.kind = type::double_type;
        n.text = line;
        break;
      case '(':
        n.kind = type::big_number;
        n.text = line;
        break;
      case ':':
        n.kind = type::integer;
        if (!parse_int(line, n.integer)) return fail(parse_status::bad_number);
        break;
      case '#':
        n.kind = type::boolean;
        if (line == "t")
          n.integer = 1;
        else if (line == "f")
          n.integer = 0;
        else
          return fail(parse_status::bad_framing);
        break;
      case '_':
        if (!line.empty()) return fail(parse_status::bad_framing);
        n.kind = type::null;
        break;
      case '$':
      case '!':
      case '=': {
        std::int64_t len = 0;
        if (!parse_int(line, len)) return fail(parse_status::bad_number);
        if (len == -1 && t == '$') {
          n.kind = type::null;
          break;
        }
        if (len < 0) return fail(parse_status::bad_number);
        if (static_cast<std::uint64_t>(len) > lim.max_bulk) return fail(parse_status::too_large);
        const auto ulen = static_cast<std::size_t>(len);
        if (data.size() - next < ulen + 2) return incomplete(next + ulen + 2);
        if (data[next + ulen] != '\r' || data[next + ulen + 1] != '\n')
          return fail(parse_status::bad_framing);
        n.text = data.substr(next, ulen);
        n.kind = t == '$' ? type::bulk_string : t == '!' ? type::bulk_error : type::verbatim_string;
        if (t == '=') {
          // "txt:" prefix names the format; the payload follows it.
          if (ulen < 4 || n.text[3] != ':') return fail(parse_status::bad_framing);
          n.text.remove_prefix(4);
        }
        next += ulen + 2;
        break;
      }
      case '*':
      case '%':
      case '~':
      case '>':
      case '|': {
        std::int64_t count = 0;
        if (!parse_int(line, count)) return fail(parse_status::bad_number);
        if (count == -1 && t == '*') {
          n.kind = type::null;
          break;
        }
        if (count < 0) return fail(parse_status::bad_number);
        auto ucount = static_cast<std::uint64_t>(count);
        if (ucount > lim.max_elements) return fail(parse_status::too_large);
        if (t == '%' || t == '|') ucount *= 2;
        n.kind = t == '*' ? type::array : t == '%' ? type::map : t == '~' ? type::set : type::push;
        n.size = static_cast<std::size_t>(ucount);
        aggregate = true;
        attribute = t == '|';
        break;
      }
      default:
        return fail(parse_status::bad_type);
    }
    pos = next;

    if (attribute) {
      // Attributes annotate the value that follows them; we keep only that value.
      if (n.size == 0) continue;
      if (depth + 1 > max_depth) return fail(parse_status::too_large);
      stack[depth++] = frame{n.size, out.size()};
      continue;
    }
    out.push_back(n);
    if (out.size() > lim.max_nodes) return fail(parse_status::too_large);
    if (aggregate && n.size > 0) {
      if (depth + 1 > max_depth) return fail(parse_status::too_large);
      stack[depth++] = frame{n.size, npos};
      continue;
    }
    // A value is complete: pop every aggregate it completes.
    for (;;) {
      if (depth == 0) {
        if (pos > lim.max_reply) return fail(parse_status::too_large);
        return parse_result{parse_status::complete, pos, 0};
      }
      frame& f = stack[depth - 1];
      if (--f.remaining > 0) break;
      --depth;
      if (f.attribute_start != npos) {
        out.resize(f.attribute_start);  // drop the attribute; its value is still to come
        break;
      }
    }
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
