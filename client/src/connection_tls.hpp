// The TLS layer of a Connection (connection_tls.cpp sets it up).
#pragma once

#include <memory>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/system/error_code.hpp>

namespace kwire::client::detail {

// The TLS layer over a Connection's TCP socket (which it does not own).
struct TlsStream {
  TlsStream(std::unique_ptr<boost::asio::ssl::context> c, boost::asio::ip::tcp::socket& s)
      : context(std::move(c)), stream(s, *context) {}
  std::unique_ptr<boost::asio::ssl::context> context;
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket&> stream;
};

// What a TLS alert from the broker most likely means, for error texts ("" when
// nothing more can be said).
std::string tls_alert_hint(const boost::system::error_code& ec, bool have_client_certificate);

}  // namespace kwire::client::detail
