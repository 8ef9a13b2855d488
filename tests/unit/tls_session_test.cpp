// Connection security without a broker: the KIP-368 session renewal rule, and
// certificate validity checks against a small TLS server on 127.0.0.1 whose
// certificates are made here (an expired one, one not valid yet, a valid one).
#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>

#include "kwire/client/connection.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/sasl.hpp"

namespace {

namespace asio = boost::asio;
using kwire::client::Clock;
using kwire::client::Connection;
using kwire::client::ConnectionOptions;
using kwire::client::TlsError;
using Renewal = kwire::client::Connection::SessionRenewal;
using namespace std::chrono_literals;

TEST(SessionRenewal, TimeIsTheFractionOfTheLifetime) {
  const auto start = Clock::now();
  EXPECT_EQ(Connection::reauthentication_time(start, 2000ms, 0.85) - start, std::chrono::milliseconds(1700));
  EXPECT_EQ(Connection::reauthentication_time(start, 2000ms, 0.95) - start, std::chrono::milliseconds(1900));
  EXPECT_EQ(Connection::reauthentication_time(start, 3600000ms, 0.9) - start, std::chrono::milliseconds(3240000));
  // Fractions outside [0, 1] are clamped: never after the session ends.
  EXPECT_EQ(Connection::reauthentication_time(start, 1000ms, 1.5) - start, std::chrono::milliseconds(1000));
  EXPECT_EQ(Connection::reauthentication_time(start, 1000ms, -1.0) - start, std::chrono::milliseconds(0));
}

TEST(SessionRenewal, ActionBeforeDuringAndAfterTheWindow) {
  const auto t0 = Clock::time_point{} + std::chrono::hours(1);
  const auto renew_at = t0 + 1700ms;
  const auto expires = t0 + 2000ms;
  // Not due yet, with or without requests in flight.
  EXPECT_EQ(Connection::renewal_action(t0 + 1699ms, renew_at, expires, 0), Renewal::none);
  EXPECT_EQ(Connection::renewal_action(t0 + 1699ms, renew_at, expires, 3), Renewal::none);
  // Due and the session still runs: in place, even behind requests in flight.
  EXPECT_EQ(Connection::renewal_action(t0 + 1700ms, renew_at, expires, 0), Renewal::reauthenticated);
  EXPECT_EQ(Connection::renewal_action(t0 + 1999ms, renew_at, expires, 2), Renewal::reauthenticated);
  // Session over: the broker would close the connection at the next request.
  EXPECT_EQ(Connection::renewal_action(t0 + 2000ms, renew_at, expires, 0), Renewal::reconnected);
  EXPECT_EQ(Connection::renewal_action(t0 + 5000ms, renew_at, expires, 1), Renewal::none);
  // No lifetime from the broker: never.
  EXPECT_EQ(Connection::renewal_action(t0 + std::chrono::hours(100000), Clock::time_point::max(),
                                       Clock::time_point::max(), 0),
            Renewal::none);
}

// RFC 7628 as Kafka reads it: GS2 header "n,," then 0x01-separated kvpairs
// ended by 0x01 0x01; an error JSON from the broker is answered with 0x01.
TEST(OAuthBearer, InitialResponseAndServerError) {
  kwire::client::SaslCredentials creds;
  creds.mechanism = "OAUTHBEARER";
  creds.oauth_token = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.";
  auto m = kwire::client::make_sasl_mechanism(creds);
  EXPECT_EQ(m->initial(), std::string("n,,\x01"
                                      "auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.\x01\x01"));
  EXPECT_EQ(m->server_error(), "");
  auto reply = m->step(R"({"status":"invalid_token"})");
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(*reply, std::string(1, '\x01'));
  EXPECT_EQ(m->server_error(), R"({"status":"invalid_token"})");
  // A second error message breaks the protocol.
  EXPECT_THROW(m->step(R"({"status":"invalid_token"})"), kwire::client::AuthenticationError);

  auto ok = kwire::client::make_sasl_mechanism(creds);
  ok->initial();
  EXPECT_FALSE(ok->step("").has_value());  // success: empty server answer, exchange complete
}

// --- certificates made in memory

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* x) const { X509_free(x); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

Key make_key() { return Key(EVP_EC_gen("P-256")); }

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` valid from now+not_before_s to now+not_after_s,
// signed by issuer (self-signed when null).
Cert make_cert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuer_key, long not_before_s, long not_after_s,
               bool ca, long serial) {
  Cert x(X509_new());
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), not_after_s);
  X509_set_pubkey(x.get(), key);
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509_set_issuer_name(x.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : x.get();
  if (ca) {
    add_ext(x.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(x.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(x.get(), signer, NID_basic_constraints, "CA:FALSE");
    add_ext(x.get(), signer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  }
  X509_sign(x.get(), issuer_key ? issuer_key : key, EVP_sha256());
  return x;
}

std::string pem_of(X509* x) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, x);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(b);
  return out;
}

std::string pem_of(EVP_PKEY* k) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(b, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(b);
  return out;
}

// A TLS server on 127.0.0.1 that serves one certificate: it completes (or
// fails) the handshake of each client and then closes the connection.
class TlsServer {
 public:
  TlsServer(const std::string& cert_pem, const std::string& key_pem)
      : ctx_(asio::ssl::context::tls_server), acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    ctx_.use_certificate_chain(asio::buffer(cert_pem));
    ctx_.use_private_key(asio::buffer(key_pem), asio::ssl::context::pem);
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] {
      while (!stop_) {
        boost::system::error_code ec;
        asio::ip::tcp::socket s(io_);
        acceptor_.accept(s, ec);
        if (ec || stop_) return;
        asio::ssl::stream<asio::ip::tcp::socket&> tls(s, ctx_);
        tls.handshake(asio::ssl::stream_base::server, ec);
        if (!ec) {
          // Take the client's first request, then say goodbye (close_notify).
          char buf[512];
          tls.read_some(asio::buffer(buf), ec);
          SSL_shutdown(tls.native_handle());
        }
        s.close(ec);
      }
    });
  }
  ~TlsServer() {
    stop_ = true;
    boost::system::error_code ec;
    // Wake the blocking accept with a connection of our own.
    asio::ip::tcp::socket poke(io_);
    poke.connect({asio::ip::make_address("127.0.0.1"), port_}, ec);
    thread_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  asio::io_context io_;
  asio::ssl::context ctx_;
  asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class CertificateValidity : public ::testing::Test {
 protected:
  void SetUp() override {
    ca_key_ = make_key();
    ca_ = make_cert(ca_key_.get(), "kwire-unit-ca", nullptr, nullptr, -86400L * 30, 86400L * 30, true, 1);
    server_key_ = make_key();
  }
  // Connect with the test CA trusted; returns the error text ("" on success).
  std::string connect_to(const TlsServer& server, bool* tls_error) {
    asio::io_context io;
    ConnectionOptions opts;
    opts.tls.enabled = true;
    opts.tls.ca_pem = pem_of(ca_.get());
    opts.connect_timeout = 5000ms;
    Connection c(io, "127.0.0.1", server.port(), opts);
    *tls_error = false;
    try {
      c.connect(kwire::client::deadline_after(10000ms));
    } catch (const TlsError& e) {
      *tls_error = true;
      return e.what();
    } catch (const std::exception& e) {
      return e.what();
    }
    return {};
  }
  Key ca_key_, server_key_;
  Cert ca_;
};

TEST_F(CertificateValidity, ExpiredServerCertificateIsTlsErrorSayingExpired) {
  // Valid from 10 days ago until yesterday.
  auto cert = make_cert(server_key_.get(), "localhost", ca_.get(), ca_key_.get(), -86400L * 10, -86400L, false, 2);
  TlsServer server(pem_of(cert.get()), pem_of(server_key_.get()));
  bool tls = false;
  auto what = connect_to(server, &tls);
  EXPECT_TRUE(tls) << what;
  EXPECT_NE(what.find("expired"), std::string::npos) << what;
  EXPECT_NE(what.find("127.0.0.1"), std::string::npos) << what;
}

TEST_F(CertificateValidity, NotYetValidServerCertificateIsTlsError) {
  auto cert = make_cert(server_key_.get(), "localhost", ca_.get(), ca_key_.get(), 86400L, 86400L * 10, false, 3);
  TlsServer server(pem_of(cert.get()), pem_of(server_key_.get()));
  bool tls = false;
  auto what = connect_to(server, &tls);
  EXPECT_TRUE(tls) << what;
  EXPECT_NE(what.find("not valid yet"), std::string::npos) << what;
  EXPECT_NE(what.find("127.0.0.1"), std::string::npos) << what;
}

TEST_F(CertificateValidity, CurrentCertificatePassesTheHandshake) {
  // Same CA and server, valid dates: the handshake succeeds, and the failure
  // comes only after it (this server closes instead of answering ApiVersions).
  auto cert = make_cert(server_key_.get(), "localhost", ca_.get(), ca_key_.get(), -86400L, 86400L, false, 4);
  TlsServer server(pem_of(cert.get()), pem_of(server_key_.get()));
  bool tls = true;
  auto what = connect_to(server, &tls);
  EXPECT_FALSE(tls) << what;
  EXPECT_NE(what.find("closed the connection"), std::string::npos) << what;
}

}  // namespace
