// Metadata (key 3), versions 0-13, flexible from v9.
// Source: Kafka's MetadataRequest.json / MetadataResponse.json.
//
// Request notes: in v0 an empty topic list means "all topics"; from v1 a null
// list (std::nullopt) means "all topics" and an empty list means "none".
// v10 added topic ids and a nullable topic name, but brokers only honour
// lookups by id from v12. v13 adds a top-level error code to the response
// (KIP-1102, e.g. REBOOTSTRAP_REQUIRED). Kafka 4.x brokers accept 4-13.
//
// Strings whose spec says "nullableVersions" later than "versions" are
// std::optional here for every version; sending null at a version where the
// field is not nullable is the caller's mistake and a broker will reject it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct MetadataRequest {
  static constexpr ApiKey api_key = ApiKey::metadata;
  static constexpr std::int16_t min_version = 0, max_version = 13, flexible_since = 9;

  struct MetadataRequestTopic {
    Uuid topic_id;                    // v10+
    std::optional<std::string> name;  // nullable from v10
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v.since(10, topic_id);
      v(name);
    }
    friend bool operator==(const MetadataRequestTopic&, const MetadataRequestTopic&) = default;
  };

  std::optional<std::vector<MetadataRequestTopic>> topics;  // nullable from v1
  bool allow_auto_topic_creation = true;                    // v4+
  bool include_cluster_authorized_operations = false;       // v8-10
  bool include_topic_authorized_operations = false;         // v8+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(topics);
    v.since(4, allow_auto_topic_creation);
    v.range(8, 10, include_cluster_authorized_operations);
    v.since(8, include_topic_authorized_operations);
  }
  friend bool operator==(const MetadataRequest&, const MetadataRequest&) = default;
};

struct MetadataResponse {
  static constexpr ApiKey api_key = ApiKey::metadata;
  static constexpr std::int16_t min_version = 0, max_version = 13, flexible_since = 9;
  /// Value of the authorized-operations bitfields when they were not requested.
  static constexpr std::int32_t kAuthorizedOperationsOmitted = std::numeric_limits<std::int32_t>::min();

  struct MetadataResponseBroker {
    std::int32_t node_id = 0;
    std::string host;
    std::int32_t port = 0;
    std::optional<std::string> rack;  // v1+, nullable
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(node_id);
      v(host);
      v(port);
      v.since(1, rack);
    }
    friend bool operator==(const MetadataResponseBroker&, const MetadataResponseBroker&) = default;
  };

  struct MetadataResponsePartition {
    std::int16_t error_code = 0;
    std::int32_t partition_index = 0;
    std::int32_t leader_id = 0;
    std::int32_t leader_epoch = -1;  // v7+
    std::vector<std::int32_t> replica_nodes;
    std::vector<std::int32_t> isr_nodes;
    std::vector<std::int32_t> offline_replicas;  // v5+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(partition_index);
      v(leader_id);
      v.since(7, leader_epoch);
      v(replica_nodes);
      v(isr_nodes);
      v.since(5, offline_replicas);
    }
    friend bool operator==(const MetadataResponsePartition&, const MetadataResponsePartition&) = default;
  };

  struct MetadataResponseTopic {
    std::int16_t error_code = 0;
    std::optional<std::string> name;  // nullable from v12 (unknown topic queried by id)
    Uuid topic_id;                    // v10+
    bool is_internal = false;         // v1+
    std::vector<MetadataResponsePartition> partitions;
    std::int32_t topic_authorized_operations = kAuthorizedOperationsOmitted;  // v8+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(name);
      v.since(10, topic_id);
      v.since(1, is_internal);
      v(partitions);
      v.since(8, topic_authorized_operations);
    }
    friend bool operator==(const MetadataResponseTopic&, const MetadataResponseTopic&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v3+
  std::vector<MetadataResponseBroker> brokers;
  std::optional<std::string> cluster_id;  // v2+, nullable
  std::int32_t controller_id = -1;        // v1+
  std::vector<MetadataResponseTopic> topics;
  std::int32_t cluster_authorized_operations = kAuthorizedOperationsOmitted;  // v8-10
  std::int16_t error_code = 0;                                                // v13+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(3, throttle_time_ms);
    v(brokers);
    v.since(2, cluster_id);
    v.since(1, controller_id);
    v(topics);
    v.range(8, 10, cluster_authorized_operations);
    v.since(13, error_code);
  }
  friend bool operator==(const MetadataResponse&, const MetadataResponse&) = default;
};

}  // namespace kwire::protocol
