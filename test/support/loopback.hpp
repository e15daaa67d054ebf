// SPDX-License-Identifier: BSL-1.0
#pragma once
// Listening on a free loopback port, for the servers tests run in-process.

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>

namespace redlock::test {

/// Opens `acceptor` on 127.0.0.1 on a port the OS picks, listening; returns the port.
/// Throws boost::system::system_error.
inline std::uint16_t listen_on_loopback(boost::asio::ip::tcp::acceptor& acceptor) {
  using boost::asio::ip::tcp;
  const tcp::endpoint ep{boost::asio::ip::address_v4::loopback(), 0};
  acceptor.open(ep.protocol());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind(ep);
  acceptor.listen();
  return acceptor.local_endpoint().port();
}

}  // namespace redlock::test
