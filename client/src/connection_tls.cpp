// Connection's TLS setup: the context from the ssl.* settings, the handshake
// and the certificate checks, with error texts that say what to change.
#include <boost/asio/ssl.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "connection_tls.hpp"
#include "kwire/client/connection.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace kwire::client {

namespace detail {

// What a TLS alert from the broker most likely means, for error texts.
std::string tls_alert_hint(const boost::system::error_code& ec, bool have_client_certificate) {
  if (ec.category() != asio::error::get_ssl_category()) return {};
  switch (ERR_GET_REASON(static_cast<unsigned long>(ec.value()))) {
#ifdef SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
#endif
    case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
      // Java brokers answer a missing client certificate with bad_certificate.
      if (!have_client_certificate)
        return " (the broker requires a client certificate: set ssl.keystore.location, or "
               "ssl.certificate.location and ssl.key.location)";
      return " (the broker did not accept the client certificate)";
    default: return {};
  }
}

}  // namespace detail

namespace {

// True when a PEM file or text holds an encrypted private key.
bool pem_is_encrypted(const std::string& pem_text) { return pem_text.find("ENCRYPTED") != std::string::npos; }

std::string read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string out;
  char buf[4096];
  while (in && out.size() < (std::size_t{1} << 20)) {
    in.read(buf, sizeof buf);
    out.append(buf, static_cast<std::size_t>(in.gcount()));
  }
  return out;
}

}  // namespace

using detail::tls_alert_hint;

void Connection::start_tls(Deadline deadline) {
  const auto& t = opts_.tls;
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  auto tls_fail = [&](const std::string& what) {
    close();
    throw TlsError(fmt::format("TLS setup for broker {} failed: {}", endpoint(), what));
  };
  if (t.ca_location.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) tls_fail("cannot load the system trust store: " + ec.message());
  } else if (std::filesystem::is_directory(t.ca_location)) {
    ctx->add_verify_path(t.ca_location, ec);
    if (ec) tls_fail(fmt::format("cannot use CA directory '{}': {}", t.ca_location, ec.message()));
  } else {
    // OpenSSL's own error for a missing file is only "asio.ssl error".
    if (::access(t.ca_location.c_str(), R_OK) != 0)
      tls_fail(fmt::format("cannot load CA file '{}' (ssl.ca.location / ssl.truststore.location): {}", t.ca_location,
                           std::strerror(errno)));
    ctx->load_verify_file(t.ca_location, ec);
    if (ec) tls_fail(fmt::format("cannot load CA file '{}': {}", t.ca_location, ec.message()));
  }
  if (!t.ca_pem.empty()) {
    ctx->add_certificate_authority(asio::buffer(t.ca_pem), ec);
    if (ec) tls_fail("cannot use the CA certificates given as PEM text: " + ec.message());
  }
  // Always answer OpenSSL's password prompt: without a callback it would ask
  // on the terminal for an encrypted key.
  {
    std::string pw = t.key_password;
    ctx->set_password_callback([pw](std::size_t, asio::ssl::context::password_purpose) { return pw; });
  }
  const bool have_certificate = !t.certificate_pem.empty() || !t.certificate_location.empty();
  if (!t.certificate_pem.empty()) {
    ctx->use_certificate_chain(asio::buffer(t.certificate_pem), ec);
    if (ec) tls_fail("cannot load the client certificate given as PEM text: " + ec.message());
  } else if (!t.certificate_location.empty()) {
    ctx->use_certificate_chain_file(t.certificate_location, ec);
    if (ec) tls_fail(fmt::format("cannot load client certificate '{}': {}", t.certificate_location, ec.message()));
  }
  auto key_fail = [&](const std::string& which, bool encrypted) {
    std::string hint;
    if (encrypted)
      hint = t.key_password.empty() ? " (the key is encrypted: set ssl.key.password)"
                                    : " (the key is encrypted: is ssl.key.password right?)";
    tls_fail(fmt::format("cannot load client key {}: {}{}", which, ec.message(), hint));
  };
  if (!t.key_pem.empty()) {
    ctx->use_private_key(asio::buffer(t.key_pem), asio::ssl::context::pem, ec);
    if (ec) key_fail("given as PEM text", pem_is_encrypted(t.key_pem));
  } else if (!t.key_location.empty()) {
    ctx->use_private_key_file(t.key_location, asio::ssl::context::pem, ec);
    if (ec) key_fail("'" + t.key_location + "'", pem_is_encrypted(read_small_file(t.key_location)));
  }
  if (have_certificate && (!t.key_pem.empty() || !t.key_location.empty()) &&
      SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    ERR_clear_error();
    tls_fail("the client key does not match the client certificate");
  }
  ctx->set_verify_mode(asio::ssl::verify_peer);
  tls_ = std::make_unique<detail::TlsStream>(std::move(ctx), *socket_);

  SSL* ssl = tls_->stream.native_handle();
  boost::system::error_code addr_ec;
  auto addr = asio::ip::make_address(host_, addr_ec);
  const bool is_ip = !addr_ec;
  if (!is_ip) SSL_set_tlsext_host_name(ssl, host_.c_str());  // SNI is for names only (RFC 6066)
  if (t.verify_hostname) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    if (is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(param, addr.to_string().c_str());
    } else {
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      X509_VERIFY_PARAM_set1_host(param, host_.c_str(), 0);
    }
  }

  bool done = false;
  boost::system::error_code result;
  auto alive = alive_;
  tls_->stream.async_handshake(asio::ssl::stream_base::client, [&, alive](const boost::system::error_code& e) {
    if (!*alive) return;
    result = e;
    done = true;
  });
  try {
    run_until([&] { return done; }, deadline, "TLS handshake");
  } catch (const TimeoutError&) {
    close();
    drain();
    throw TimeoutError(fmt::format("timed out in the TLS handshake with broker {}", endpoint()));
  }
  if (!result) return;
  std::string reason;
  long verify = SSL_get_verify_result(ssl);
  switch (verify) {
    case X509_V_OK: reason = result.message() + tls_alert_hint(result, have_certificate); break;
    case X509_V_ERR_HOSTNAME_MISMATCH:
      reason = fmt::format("the broker's certificate does not match the host name '{}'", host_);
      break;
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      reason = fmt::format("the broker's certificate does not match the IP address {}", host_);
      break;
    case X509_V_ERR_CERT_HAS_EXPIRED: reason = "the broker's certificate has expired"; break;
    case X509_V_ERR_CERT_NOT_YET_VALID: reason = "the broker's certificate is not valid yet"; break;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      reason = fmt::format("the broker's certificate is signed by an unknown CA ({})",
                           X509_verify_cert_error_string(verify));
      break;
    default: reason = fmt::format("certificate verification failed: {}", X509_verify_cert_error_string(verify));
  }
  close();
  drain();
  throw TlsError(fmt::format("TLS handshake with broker {} (host '{}') failed: {}", endpoint(), host_, reason));
}

}  // namespace kwire::client
