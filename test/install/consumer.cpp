// SPDX-License-Identifier: BSL-1.0
// Compiles against the installed headers and links the installed library; prints the
// message of one error code so that the category really comes from the library.
#include <boost/asio/io_context.hpp>
#include <iostream>
#include <redlock/redlock.hpp>

int main() {
  boost::asio::io_context io;
  redlock::client c{io.get_executor(), redlock::config{.nodes = {"redis://127.0.0.1:1"}}};
  std::cout << redlock::make_error_code(redlock::error::contended).message() << "\n";
  return c.node_count() == 1 ? 0 : 1;
}
