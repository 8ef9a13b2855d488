// Typed errors raised by the client layer.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kwire::client {

/// Base of every client-side error.
class ClientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A configuration key or value that is not accepted (names the key).
class ConfigError : public ClientError {
 public:
  using ClientError::ClientError;
};

/// A wait that passed its deadline (request.timeout.ms, socket.connection.setup.timeout.ms,
/// or a poll timeout). Names the broker and the request.
class TimeoutError : public ClientError {
 public:
  using ClientError::ClientError;
};

/// A TCP connection that could not be made or was lost. Names the broker.
class ConnectionError : public ClientError {
 public:
  using ClientError::ClientError;
};

/// A TLS handshake that failed: names the broker and the reason (unknown CA,
/// host name mismatch, expired certificate, bad key file...).
class TlsError : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

/// The broker sent bytes that do not decode (names the API, version and offset).
class MalformedResponseError : public ClientError {
 public:
  using ClientError::ClientError;
};

/// Neither side speaks a common version of an API.
class UnsupportedVersionError : public ClientError {
 public:
  using ClientError::ClientError;
};

/// A Kafka error code returned by the broker, with its protocol name.
class KafkaError : public ClientError {
 public:
  KafkaError(std::int16_t code, const std::string& what) : ClientError(what), code_(code) {}
  std::int16_t code() const noexcept { return code_; }

 private:
  std::int16_t code_;
};

}  // namespace kwire::client
