// SaslAuthenticate (key 36), versions 0-2, flexible from v2.
// Source: the protocol guide and Kafka's SaslAuthenticateRequest/Response.json.
// Carries one SASL token each way after a v1 SaslHandshake. From v1 the broker
// reports how long the authenticated session lasts (KIP-368); 0 means no limit.
#pragma once

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct SaslAuthenticateRequest {
  static constexpr ApiKey api_key = ApiKey::sasl_authenticate;
  static constexpr std::int16_t min_version = 0, max_version = 2, flexible_since = 2;

  Bytes auth_bytes;  // the client's SASL token for this step
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(auth_bytes);
  }
  friend bool operator==(const SaslAuthenticateRequest&, const SaslAuthenticateRequest&) = default;
};

struct SaslAuthenticateResponse {
  static constexpr ApiKey api_key = ApiKey::sasl_authenticate;
  static constexpr std::int16_t min_version = 0, max_version = 2, flexible_since = 2;

  std::int16_t error_code = 0;               // SASL_AUTHENTICATION_FAILED (58) etc.
  std::optional<std::string> error_message;  // null when there is no error
  Bytes auth_bytes;                          // the server's SASL token
  std::int64_t session_lifetime_ms = 0;      // v1+; 0 = no re-authentication needed
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(error_code);
    v(error_message);
    v(auth_bytes);
    v.since(1, session_lifetime_ms);
  }
  friend bool operator==(const SaslAuthenticateResponse&, const SaslAuthenticateResponse&) = default;
};

}  // namespace kwire::protocol
