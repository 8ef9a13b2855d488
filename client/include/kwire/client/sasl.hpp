// SASL mechanisms kwire speaks, as sans-I/O token builders: each produces the
// client's next token from the server's last one. The Connection carries the
// tokens in SaslAuthenticate requests.
//
// PLAIN (RFC 4616), SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677; no
// channel binding) and OAUTHBEARER (RFC 7628, a token supplied by the caller).
// Error texts never contain the password, the salted password or the token.
#pragma once

#include <cstdint>
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
};

struct SaslCredentials {
  std::string mechanism;  // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER
  std::string username;
  std::string password;
  std::string oauth_token;  // OAUTHBEARER
};

/// Throws ConfigError for an unknown mechanism.
std::unique_ptr<SaslMechanism> make_sasl_mechanism(const SaslCredentials& creds);

/// SCRAM with a fixed client nonce (tests); make_sasl_mechanism draws a random one.
std::unique_ptr<SaslMechanism> make_scram(const std::string& mechanism, const std::string& username,
                                          const std::string& password, const std::string& client_nonce);

/// Username and password from a Java JAAS line (PlainLoginModule / ScramLoginModule).
/// Throws ConfigError (without the value) when they are missing.
void parse_jaas_config(const std::string& jaas, std::string& username, std::string& password);

std::string base64_encode(const std::string& raw);
/// Throws AuthenticationError("base64", ...) on invalid input.
std::string base64_decode(const std::string& text);

}  // namespace kwire::client
