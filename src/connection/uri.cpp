// SPDX-License-Identifier: BSL-1.0
#include <algorithm>
#include <cctype>
#include <charconv>

#include "redlock/config.hpp"

namespace redlock {
namespace {

bool parse_number(std::string_view s, long max, long& out) {
  if (s.empty() || s.size() > 10) return false;
  long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v < 0 || v > max) return false;
  out = v;
  return true;
}

// True if `uri` holds ",scheme://" somewhere: a list of URIs joined by commas (as the
// CLI's --nodes takes them) handed over as one. Only the scheme's shape is matched, not
// its letters, so the verdict never depends on which letters a password holds.
bool joins_several_uris(std::string_view uri) {
  for (auto comma = uri.find(','); comma != std::string_view::npos;
       comma = uri.find(',', comma + 1)) {
    std::size_t end = comma + 1;
    while (end < uri.size() && std::isalpha(static_cast<unsigned char>(uri[end]))) ++end;
    if (end > comma + 1 && uri.substr(end, 3) == "://") return true;
  }
  return false;
}

constexpr const char* several_uris = "several URIs separated by commas: give one URI per element";

}  // namespace

namespace {

std::string endpoint_text(const std::string& host, std::uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

// "host[:port]" or "[v6]:port" into out's host and port.
bool parse_endpoint(std::string_view hostport, node_uri::endpoint& out, std::string& why) {
  std::string_view port;
  const bool bracketed = !hostport.empty() && hostport.front() == '[';
  if (bracketed) {
    auto close = hostport.find(']');
    if (close == std::string_view::npos) {
      why = "unterminated '[' in IPv6 host";
      return false;
    }
    out.host = hostport.substr(1, close - 1);
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        why = "expected ':port' after ']'";
        return false;
      }
      port = after.substr(1);
      if (port.empty()) {
        why = "empty port";
        return false;
      }
    }
  } else {
    auto colon = hostport.rfind(':');
    if (colon != std::string_view::npos) {
      out.host = hostport.substr(0, colon);
      port = hostport.substr(colon + 1);
      if (port.empty()) {
        why = "empty port";
        return false;
      }
    } else {
      out.host = hostport;
    }
  }
  if (out.host.empty()) {
    why = "the node URI has no host";
    return false;
  }
  if (out.host.find_first_of(" /?#@[]") != std::string::npos ||
      std::any_of(out.host.begin(), out.host.end(),
                  [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; })) {
    why = "the host contains a character that is not allowed";
    return false;
  }
  if (!bracketed && out.host.find(':') != std::string::npos) {
    // "redis://::1" would otherwise parse as host ":" and port 1.
    why = "an IPv6 host must be written in brackets, as redis://[::1]:6379";
    return false;
  }
  if (!port.empty()) {
    long v = 0;
    if (!parse_number(port, 65535, v) || v == 0) {
      why = "the port must be a number from 1 to 65535";
      return false;
    }
    out.port = static_cast<std::uint16_t>(v);
  }
  return true;
}

}  // namespace

std::string node_uri::display() const {
  if (!cluster) return endpoint_text(host, port);
  std::string out = "cluster ";
  for (std::size_t i = 0; i < seeds.size(); ++i)
    out += (i ? "," : "") + endpoint_text(seeds[i].host, seeds[i].port);
  return out;
}

namespace {

// `uri` as an error message may show it: the credentials (everything between the scheme
// and the last '@', or before that '@' when there is no scheme) replaced by "***". The user
// name goes too: the message must not depend on any letter of the credentials.
std::string masked_uri(std::string_view uri) {
  const auto scheme = uri.find("://");
  const auto at = uri.rfind('@');
  std::string out{uri};
  if (at != std::string_view::npos) {
    const auto from = scheme != std::string_view::npos && scheme < at ? scheme + 3 : 0;
    out = std::string{uri.substr(0, from)} + "***" + std::string{uri.substr(at)};
  }
  // Control characters (a NUL would end the message early) written as \xNN.
  std::string shown;
  for (unsigned char ch : out) {
    if (ch >= 0x20 && ch != 0x7f) {
      shown += static_cast<char>(ch);
      continue;
    }
    constexpr char hex[] = "0123456789abcdef";
    shown += "\\x";
    shown += hex[ch >> 4];
    shown += hex[ch & 15];
  }
  return shown;
}

bool parse_node_uri_parts(std::string_view uri, node_uri& out, std::string& why);

// A URI's user or password, percent-decoded as URIs encode them (RFC 3986): "%40" is '@',
// "%25" is '%'. A '%' that does not start two hex digits is refused, not sent as it is.
bool percent_decoded(std::string_view text, std::string& out, const char* what, std::string& why) {
  auto hex = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
  };
  out.clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const int hi = i + 2 < text.size() ? hex(text[i + 1]) : -1;
    const int lo = i + 2 < text.size() ? hex(text[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      why = std::string{"the "} + what +
            " in the node URI has a '%' that does not start a percent-encoded byte (write "
            "'%' itself as %25)";
      return false;
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

// "user:password" or "password" (the "default" user), before a URI's last '@'.
bool parse_credentials(std::string_view cred, node_uri& out, std::string& why) {
  std::string_view user, password = cred;
  if (auto colon = cred.find(':'); colon != std::string_view::npos) {
    user = cred.substr(0, colon);
    password = cred.substr(colon + 1);
  }
  if (password.empty()) {
    why = "the node URI names credentials without a password";
    return false;
  }
  return percent_decoded(user, out.user, "user name", why) &&
         percent_decoded(password, out.password, "password", why);
}

}  // namespace

bool parse_node_uri(std::string_view uri, node_uri& out, std::string& why) {
  if (parse_node_uri_parts(uri, out, why)) return true;
  // The offending text, quoted (a trailing space shows), its password masked.
  std::string prefix = "\"" + masked_uri(uri) + "\": ";
  if (std::any_of(uri.begin(), uri.end(),
                  [](char ch) { return std::isspace(static_cast<unsigned char>(ch)); }))
    prefix += "it contains white space; ";
  why = prefix + why + " (expected redis://[user:password@]host:port[/db])";
  return false;
}

namespace {

bool parse_node_uri_parts(std::string_view uri, node_uri& out, std::string& why) {
  out = node_uri{};
  constexpr std::string_view plain = "redis://", tls = "rediss://";
  constexpr std::string_view cluster = "redis+cluster://", tls_cluster = "rediss+cluster://";
  std::string_view rest;
  if (uri.substr(0, plain.size()) == plain) {
    rest = uri.substr(plain.size());
  } else if (uri.substr(0, tls.size()) == tls) {
    rest = uri.substr(tls.size());
    out.tls = true;
  } else if (uri.substr(0, cluster.size()) == cluster) {
    rest = uri.substr(cluster.size());
    out.cluster = true;
  } else if (uri.substr(0, tls_cluster.size()) == tls_cluster) {
    rest = uri.substr(tls_cluster.size());
    out.cluster = out.tls = true;
  } else {
    why =
        "a node URI must start with redis:// or rediss:// (TLS), or redis+cluster:// or "
        "rediss+cluster:// for a Redis Cluster";
    return false;
  }
  // Caught before the credentials are split off: there, the last '@' of a joined list
  // would make everything up to the last node's password one long password.
  if (joins_several_uris(rest)) {
    why = several_uris;
    return false;
  }

  // Credentials end at the last '@' (a password may contain '@').
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    if (!parse_credentials(rest.substr(0, at), out, why)) return false;
    rest = rest.substr(at + 1);
  }

  // "redis://h1:1,h2:2": addresses joined without their schemes. No host, port or
  // database holds a comma; only a cluster's seeds are a list.
  if (!out.cluster && rest.find(',') != std::string_view::npos) {
    why = several_uris;
    return false;
  }

  std::string_view hosts = rest;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    hosts = rest.substr(0, slash);
    std::string_view db = rest.substr(slash + 1);
    long v = 0;
    if (!db.empty() && !parse_number(db, 1'000'000, v)) {
      why = "the database number after '/' must be a non-negative integer";
      return false;
    }
    if (out.cluster && v != 0) {
      why = "a Redis Cluster has database 0 only";
      return false;
    }
    out.db = static_cast<int>(v);
  }

  for (std::size_t start = 0;;) {
    const auto comma = hosts.find(',', start);
    node_uri::endpoint e;
    const auto one =
        hosts.substr(start, comma == std::string_view::npos ? hosts.npos : comma - start);
    if (!parse_endpoint(one, e, why)) {
      if (out.cluster && one.empty()) why = "an empty seed address (a stray comma)";
      return false;
    }
    out.seeds.push_back(std::move(e));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  out.host = out.seeds.front().host;
  out.port = out.seeds.front().port;
  if (!out.cluster) out.seeds.clear();
  return true;
}

}  // namespace

}  // namespace redlock
