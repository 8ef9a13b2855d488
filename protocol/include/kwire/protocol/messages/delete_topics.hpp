// DeleteTopics (key 20), versions 0-6, flexible from v4.
// Source: Kafka's DeleteTopicsRequest.json / DeleteTopicsResponse.json.
//
// v1 throttle time; v3 may return TOPIC_DELETION_DISABLED; v5 error messages
// and THROTTLING_QUOTA_EXCEEDED (KIP-599); v6 replaces the list of names with
// (name, topic id) pairs where either may identify the topic.
// Kafka 4.x brokers accept 1+.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct DeleteTopicsRequest {
  static constexpr ApiKey api_key = ApiKey::delete_topics;
  static constexpr std::int16_t min_version = 0, max_version = 6, flexible_since = 4;

  struct DeleteTopicState {
    std::optional<std::string> name;  // null when deleting by id
    Uuid topic_id;                    // zero when deleting by name
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(topic_id);
    }
    friend bool operator==(const DeleteTopicState&, const DeleteTopicState&) = default;
  };

  std::vector<DeleteTopicState> topics;  // v6+
  std::vector<std::string> topic_names;  // v0-5
  std::int32_t timeout_ms = 0;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(6, topics);
    v.until(5, topic_names);
    v(timeout_ms);
  }
  friend bool operator==(const DeleteTopicsRequest&, const DeleteTopicsRequest&) = default;
};

struct DeleteTopicsResponse {
  static constexpr ApiKey api_key = ApiKey::delete_topics;
  static constexpr std::int16_t min_version = 0, max_version = 6, flexible_since = 4;

  struct DeletableTopicResult {
    std::optional<std::string> name;  // nullable from v6
    Uuid topic_id;                    // v6+
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;  // v5+, nullable
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v.since(6, topic_id);
      v(error_code);
      v.since(5, error_message);
    }
    friend bool operator==(const DeletableTopicResult&, const DeletableTopicResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v1+
  std::vector<DeletableTopicResult> responses;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(1, throttle_time_ms);
    v(responses);
  }
  friend bool operator==(const DeleteTopicsResponse&, const DeleteTopicsResponse&) = default;
};

}  // namespace kwire::protocol
