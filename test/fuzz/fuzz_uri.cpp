// SPDX-License-Identifier: BSL-1.0
// libFuzzer target for node URIs. Beyond "no crash, no UB": a refusal always says why
// and never repeats the credentials; an accepted URI has a usable host and port, keeps
// IPv6 hosts in brackets, and parses back to the same parts when written out again.

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "redlock/config.hpp"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view uri{reinterpret_cast<const char*>(data), size};
  redlock::node_uri u;
  std::string why;
  if (!redlock::parse_node_uri(uri, u, why)) {
    require(!why.empty(), "a refusal without a reason");
    // The reason does not depend on the credentials' letters, so it cannot be showing
    // them. Letters steer the parse only as hex digits of a percent-encoded byte: they are
    // masked by letters of the same kind (a-f stays a hex digit, g-z does not).
    if (const auto at = uri.rfind('@'); at != std::string_view::npos) {
      // Letters after the scheme only (the longest, "rediss+cluster://", is 17 bytes).
      const auto scheme_end = uri.find("://");
      const std::size_t from = scheme_end == std::string_view::npos ? 8 : scheme_end + 3;
      std::string masked{uri};
      for (std::size_t i = from; i < at; ++i)
        if (std::isxdigit(static_cast<unsigned char>(masked[i])) &&
            std::isalpha(static_cast<unsigned char>(masked[i])))
          masked[i] = 'c';
        else if (std::isalpha(static_cast<unsigned char>(masked[i])))
          masked[i] = 'Q';
      redlock::node_uri m;
      std::string why_masked;
      require(!redlock::parse_node_uri(masked, m, why_masked),
              "masking letters changed the verdict");
      require(why == why_masked, "a reason that shows credentials");
    }
    return 0;
  }
  require(u.db >= 0, "a negative database");
  require(u.cluster != u.seeds.empty(), "seeds on a plain node, or a cluster without them");
  require(!u.cluster || u.db == 0, "a cluster with a database other than 0");
  // Every address (a cluster's seeds; host and port are the first) is usable and shown as
  // host:port, and nothing else is shown.
  std::vector<redlock::node_uri::endpoint> addresses = u.seeds;
  if (!u.cluster) addresses.push_back({u.host, u.port});
  require(addresses.front().host == u.host && addresses.front().port == u.port,
          "host and port are not the first address");
  std::string shown;
  for (const auto& e : addresses) {
    require(!e.host.empty(), "accepted without a host");
    require(e.port != 0, "accepted port 0");
    for (const char ch : e.host)
      require(static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f && ch != '/' && ch != '@' &&
                  ch != ' ' && ch != ',',
              "a host with a character no resolver takes");
    const std::string host = e.host.find(':') != std::string::npos ? "[" + e.host + "]" : e.host;
    shown += (shown.empty() ? "" : ",") + host + ":" + std::to_string(e.port);
  }
  require(u.display() == (u.cluster ? "cluster " : "") + shown,
          "display() shows more than the addresses");

  // Written out again (credentials percent-encoded, as they were decoded), the URI means
  // the same.
  auto encoded = [](const std::string& text) {
    std::string out;
    for (const char ch : text) {
      if (std::isalnum(static_cast<unsigned char>(ch))) {
        out += ch;
        continue;
      }
      char byte[4];
      std::snprintf(byte, sizeof byte, "%%%02X", static_cast<unsigned char>(ch));
      out += byte;
    }
    return out;
  };
  std::string again = u.cluster ? "redis+cluster://" : "redis://";
  if (!u.password.empty()) again += encoded(u.user) + ":" + encoded(u.password) + "@";
  again += shown + "/" + std::to_string(u.db);
  redlock::node_uri v;
  std::string why2;
  require(redlock::parse_node_uri(again, v, why2), "a written-out URI does not parse");
  require(v.host == u.host && v.port == u.port && v.user == u.user && v.password == u.password &&
              v.db == u.db && v.cluster == u.cluster && v.seeds.size() == u.seeds.size(),
          "a written-out URI parses to other parts");
  return 0;
}
