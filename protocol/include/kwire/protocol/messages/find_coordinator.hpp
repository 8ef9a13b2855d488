// FindCoordinator (key 10), versions 0-6, flexible from v3.
// Source: Kafka's FindCoordinatorRequest.json / FindCoordinatorResponse.json.
//
// Asks any broker which broker coordinates a group (key type 0) or a
// transactional id (key type 1). v0-v3 carry one key and answer with one
// node; from v4 (KIP-699) keys are batched in CoordinatorKeys and each gets
// its own Coordinator entry with its own error. v5 and v6 only widen the set
// of errors and key types (share groups, KIP-932). A group's coordinator is
// the leader of its __consumer_offsets partition; the first request for a new
// cluster may answer COORDINATOR_NOT_AVAILABLE while that topic is created.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct FindCoordinatorRequest {
  static constexpr ApiKey api_key = ApiKey::find_coordinator;
  static constexpr std::int16_t min_version = 0, max_version = 6, flexible_since = 3;

  static constexpr std::int8_t kKeyTypeGroup = 0;
  static constexpr std::int8_t kKeyTypeTransaction = 1;

  std::string key;                            // v0-v3
  std::int8_t key_type = kKeyTypeGroup;       // v1+
  std::vector<std::string> coordinator_keys;  // v4+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.until(3, key);
    v.since(1, key_type);
    v.since(4, coordinator_keys);
  }
  friend bool operator==(const FindCoordinatorRequest&, const FindCoordinatorRequest&) = default;
};

struct FindCoordinatorResponse {
  static constexpr ApiKey api_key = ApiKey::find_coordinator;
  static constexpr std::int16_t min_version = 0, max_version = 6, flexible_since = 3;

  struct Coordinator {
    std::string key;
    std::int32_t node_id = -1;
    std::string host;
    std::int32_t port = -1;
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(key);
      v(node_id);
      v(host);
      v(port);
      v(error_code);
      v(error_message);
    }
    friend bool operator==(const Coordinator&, const Coordinator&) = default;
  };

  std::int32_t throttle_time_ms = 0;         // v1+
  std::int16_t error_code = 0;               // v0-v3
  std::optional<std::string> error_message;  // v1-v3
  std::int32_t node_id = -1;                 // v0-v3
  std::string host;                          // v0-v3
  std::int32_t port = -1;                    // v0-v3
  std::vector<Coordinator> coordinators;     // v4+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(1, throttle_time_ms);
    v.until(3, error_code);
    v.range(1, 3, error_message);
    v.until(3, node_id);
    v.until(3, host);
    v.until(3, port);
    v.since(4, coordinators);
  }
  friend bool operator==(const FindCoordinatorResponse&, const FindCoordinatorResponse&) = default;
};

}  // namespace kwire::protocol
