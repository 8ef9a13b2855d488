// SaslHandshake (key 17), versions 0-1, never flexible.
// Source: the protocol guide and Kafka's SaslHandshakeRequest/Response.json.
// v0 is followed by raw SASL tokens on the socket (no Kafka framing around
// them); v1 is followed by SaslAuthenticate requests that carry the tokens.
#pragma once

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct SaslHandshakeRequest {
  static constexpr ApiKey api_key = ApiKey::sasl_handshake;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = kNeverFlexible;

  std::string mechanism;  // e.g. "PLAIN", "SCRAM-SHA-256"
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(mechanism);
  }
  friend bool operator==(const SaslHandshakeRequest&, const SaslHandshakeRequest&) = default;
};

struct SaslHandshakeResponse {
  static constexpr ApiKey api_key = ApiKey::sasl_handshake;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = kNeverFlexible;

  std::int16_t error_code = 0;          // UNSUPPORTED_SASL_MECHANISM (33) etc.
  std::vector<std::string> mechanisms;  // what the broker has enabled
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(error_code);
    v(mechanisms);
  }
  friend bool operator==(const SaslHandshakeResponse&, const SaslHandshakeResponse&) = default;
};

}  // namespace kwire::protocol
