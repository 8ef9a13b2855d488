// CreateTopics (key 19), versions 0-7, flexible from v5.
// Source: Kafka's CreateTopicsRequest.json / CreateTopicsResponse.json.
//
// v1 validate_only and a per-topic error message; v2 throttle time; v4 lets
// num_partitions / replication_factor be -1 for the broker defaults
// (KIP-464); v5 flexible, and the response carries the resulting topic
// configuration (KIP-525); v6 may return THROTTLING_QUOTA_EXCEEDED (KIP-599);
// v7 returns the new topic id. Kafka 4.x brokers accept 2+.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct CreateTopicsRequest {
  static constexpr ApiKey api_key = ApiKey::create_topics;
  static constexpr std::int16_t min_version = 0, max_version = 7, flexible_since = 5;

  struct CreatableReplicaAssignment {
    std::int32_t partition_index = 0;
    std::vector<std::int32_t> broker_ids;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(broker_ids);
    }
    friend bool operator==(const CreatableReplicaAssignment&, const CreatableReplicaAssignment&) = default;
  };

  struct CreatableTopicConfig {
    std::string name;
    std::optional<std::string> value;  // nullable
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(value);
    }
    friend bool operator==(const CreatableTopicConfig&, const CreatableTopicConfig&) = default;
  };

  struct CreatableTopic {
    std::string name;
    std::int32_t num_partitions = 0;      // -1: manual assignment or broker default (v4+)
    std::int16_t replication_factor = 0;  // -1: manual assignment or broker default (v4+)
    std::vector<CreatableReplicaAssignment> assignments;
    std::vector<CreatableTopicConfig> configs;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(num_partitions);
      v(replication_factor);
      v(assignments);
      v(configs);
    }
    friend bool operator==(const CreatableTopic&, const CreatableTopic&) = default;
  };

  std::vector<CreatableTopic> topics;
  std::int32_t timeout_ms = 60000;
  bool validate_only = false;  // v1+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(topics);
    v(timeout_ms);
    v.since(1, validate_only);
  }
  friend bool operator==(const CreateTopicsRequest&, const CreateTopicsRequest&) = default;
};

struct CreateTopicsResponse {
  static constexpr ApiKey api_key = ApiKey::create_topics;
  static constexpr std::int16_t min_version = 0, max_version = 7, flexible_since = 5;

  struct CreatableTopicConfigs {
    std::string name;
    std::optional<std::string> value;  // nullable
    bool read_only = false;
    std::int8_t config_source = -1;
    bool is_sensitive = false;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(value);
      v(read_only);
      v(config_source);
      v(is_sensitive);
    }
    friend bool operator==(const CreatableTopicConfigs&, const CreatableTopicConfigs&) = default;
  };

  struct CreatableTopicResult {
    std::string name;
    Uuid topic_id;  // v7+
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;                   // v1+, nullable
    std::int16_t topic_config_error_code = 0;                   // tag 0, v5+
    std::int32_t num_partitions = -1;                           // v5+
    std::int16_t replication_factor = -1;                       // v5+
    std::optional<std::vector<CreatableTopicConfigs>> configs;  // v5+, nullable
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v.since(7, topic_id);
      v(error_code);
      v.since(1, error_message);
      v.tagged(0, 5, topic_config_error_code);
      v.since(5, num_partitions);
      v.since(5, replication_factor);
      v.since(5, configs);
    }
    friend bool operator==(const CreatableTopicResult&, const CreatableTopicResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v2+
  std::vector<CreatableTopicResult> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(2, throttle_time_ms);
    v(topics);
  }
  friend bool operator==(const CreateTopicsResponse&, const CreateTopicsResponse&) = default;
};

}  // namespace kwire::protocol
