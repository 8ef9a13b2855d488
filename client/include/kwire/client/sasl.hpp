// SASL mechanisms kwire speaks, as sans-I/O token builders: each produces the
// client's next token from the server's last one. The Connection carries the
// tokens in SaslAuthenticate requests.
//
// PLAIN (RFC 4616), SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677; no
// channel binding), OAUTHBEARER (RFC 7628, a token supplied by the caller) and
// GSSAPI (RFC 4752, Kerberos through Cyrus SASL; see make_gssapi).
// Error texts never contain the password, the salted password or the token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kwire/client/errors.hpp"

namespace kwire::client {

/// Authentication rejected by the broker, or a SASL exchange that could not be
/// completed safely (bad nonce, too few iterations, wrong server signature).
/// Names the mechanism and the reason; never carries secrets.
class AuthenticationError : public ClientError {
 public:
  AuthenticationError(std::string mechanism, const std::string& what)
      : ClientError(what), mechanism_(std::move(mechanism)) {}
  const std::string& mechanism() const noexcept { return mechanism_; }

 private:
  std::string mechanism_;
};

/// One SASL client exchange.
class SaslMechanism {
 public:
  virtual ~SaslMechanism() = default;
  virtual const std::string& name() const = 0;
  /// The first token the client sends.
  virtual std::string initial() = 0;
  /// The server's answer to the last token: the next token to send, or nullopt
  /// when the exchange is complete. Throws AuthenticationError.
  virtual std::optional<std::string> step(const std::string& server_token) = 0;
  /// What the broker said about a failure inside the exchange, when the
  /// mechanism carries one (OAUTHBEARER's JSON error, RFC 7628 3.2.2); empty
  /// otherwise. Never holds secrets.
  virtual std::string server_error() const { return {}; }
};

struct SaslCredentials {
  std::string mechanism;  // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER
  std::string username;
  std::string password;
  std::string oauth_token;  // OAUTHBEARER
  // GSSAPI (Kerberos V5 through Cyrus SASL's GSSAPI plugin, RFC 4752):
  std::string kerberos_service_name = "kafka";  // first part of the broker's principal, SERVICE/HOST@REALM
  std::string kerberos_keytab;                  // client keytab; empty: the ticket cache (kinit) or KRB5_CLIENT_KTNAME
  std::string kerberos_principal;               // client principal; empty: the keytab's first one / the cache's
  std::string broker_host;                      // HOST of the broker's principal (the Connection sets its host name)
};

/// Throws ConfigError for an unknown mechanism.
std::unique_ptr<SaslMechanism> make_sasl_mechanism(const SaslCredentials& creds);

/// SCRAM's salted password, RFC 5802's Hi(password, salt, iterations):
/// PBKDF2-HMAC with the mechanism's hash, `length` bytes (32 or 64).
using ScramKeyDerivation = std::function<std::string(const std::string& password, const std::string& salt,
                                                     int iterations, std::size_t length)>;

/// SCRAM with a fixed client nonce (tests); make_sasl_mechanism draws a random
/// one. `derive` replaces PBKDF2 when set: fuzzing and tests use a cheap
/// stand-in, since 4096+ PBKDF2 iterations per exchange would dominate them.
std::unique_ptr<SaslMechanism> make_scram(const std::string& mechanism, const std::string& username,
                                          const std::string& password, const std::string& client_nonce,
                                          ScramKeyDerivation derive = {});

/// Username and password from a Java JAAS line (PlainLoginModule / ScramLoginModule).
/// Throws ConfigError (without the value) when they are missing.
void parse_jaas_config(const std::string& jaas, std::string& username, std::string& password);

/// GSSAPI through Cyrus SASL (libsasl2 and its GSSAPI plugin, Debian
/// libsasl2-modules-gssapi-mit). The broker's service principal is
/// kerberos_service_name/broker_host (the realm from krb5.conf, which
/// KRB5_CONFIG may name). Credentials: with kerberos_keytab, a ticket is
/// obtained from the keytab into a private in-memory cache of this process
/// (gss_acquire_cred_from; the user's ticket cache is neither read nor
/// written) and renewed from it when it expires; otherwise the default
/// credentials (ticket cache from kinit, or KRB5_CLIENT_KTNAME) are used.
/// No security layer is negotiated (Kafka's brokers offer "auth" only).
/// The KDC is contacted synchronously inside initial() / step().
/// initial() and step() throw AuthenticationError("GSSAPI", ...) naming the
/// cause: the Cyrus GSSAPI plugin missing ("no worthy mechs"), an unreadable
/// keytab, no ticket, a principal the KDC does not know, a key that does not
/// match the KDC's (wrong or outdated keytab), an unreachable KDC.
std::unique_ptr<SaslMechanism> make_gssapi(const SaslCredentials& creds);

/// A Java JAAS option's value (key="value" or key=value), or nullopt when the
/// line does not set it.
std::optional<std::string> jaas_option(const std::string& jaas, const std::string& key);

/// keyTab and principal from Java's Kerberos JAAS line
/// (com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true
/// keyTab="..." principal="..."); keyTab is taken only with useKeyTab=true.
/// Options not set leave the outputs unchanged. Throws ConfigError for a
/// line that is not a Krb5LoginModule line or sets useKeyTab=true without keyTab.
void parse_kerberos_jaas_config(const std::string& jaas, std::string& keytab, std::string& principal);

std::string base64_encode(const std::string& raw);
/// Throws AuthenticationError("base64", ...) on invalid input.
std::string base64_decode(const std::string& text);

}  // namespace kwire::client
