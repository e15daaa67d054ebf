// libFuzzer target for node URIs. Beyond "no crash, no UB": a refusal always says why
// and never repeats the credentials; an accepted URI has a usable host and port, keeps
// IPv6 hosts in brackets, and parses back to the same parts when written out again.

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

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
    // The reason does not depend on the credentials' letters (which never steer the
    // parse), so it cannot be showing them.
    if (const auto at = uri.rfind('@'); at != std::string_view::npos) {
      std::string masked{uri};
      for (std::size_t i = 0; i < at; ++i)
        if (std::isalpha(static_cast<unsigned char>(masked[i])) && i >= 8) masked[i] = 'Q';
      redlock::node_uri m;
      std::string why_masked;
      require(!redlock::parse_node_uri(masked, m, why_masked),
              "masking letters changed the verdict");
      require(why == why_masked, "a reason that shows credentials");
    }
    return 0;
  }
  require(!u.host.empty(), "accepted without a host");
  require(u.port != 0, "accepted port 0");
  require(u.db >= 0, "a negative database");
  for (const char ch : u.host)
    require(
        static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f && ch != '/' && ch != '@' && ch != ' ',
        "a host with a character no resolver takes");
  // What is safe to print is the host and port, and nothing else.
  const std::string shown = u.display();
  const std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  require(shown == host + ":" + std::to_string(u.port), "display() shows more than host:port");

  // Written out again, the URI means the same.
  std::string again = "redis://";
  if (!u.password.empty()) again += u.user + ":" + u.password + "@";
  again += shown + "/" + std::to_string(u.db);
  redlock::node_uri v;
  std::string why2;
  require(redlock::parse_node_uri(again, v, why2), "a written-out URI does not parse");
  require(v.host == u.host && v.port == u.port && v.user == u.user && v.password == u.password &&
              v.db == u.db,
          "a written-out URI parses to other parts");
  return 0;
}
