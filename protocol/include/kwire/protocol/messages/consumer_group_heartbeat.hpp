// ConsumerGroupHeartbeat (key 68), versions 0-1, always flexible: the
// consumer group protocol of KIP-848, where the coordinator assigns.
// Source: Kafka's ConsumerGroupHeartbeatRequest.json / ...Response.json.
//
// A member joins with epoch 0 and its subscription, then heartbeats every
// HeartbeatIntervalMs. Null request fields mean "unchanged since the last
// heartbeat" (send them all again after an error). The response carries the
// member's epoch and, when it changed, its assignment by topic id (null =
// unchanged). Leaving: epoch -1 (dynamic) or -2 (static, keeps the assignment
// for the session timeout). v0: the coordinator makes the member id; v1: the
// member makes it (a UUID, KIP-1082) and may subscribe by a RE2/J regex.
// Kafka 3.9 advertises v0 but answers UNSUPPORTED_VERSION unless the broker
// enables the consumer rebalance protocol; Kafka 4.x enables it by default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct ConsumerGroupHeartbeatRequest {
  static constexpr ApiKey api_key = ApiKey::consumer_group_heartbeat;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = 0;

  static constexpr std::int32_t kLeaveEpoch = -1;
  static constexpr std::int32_t kStaticLeaveEpoch = -2;

  struct TopicPartitions {
    Uuid topic_id;
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_id);
      v(partitions);
    }
    friend bool operator==(const TopicPartitions&, const TopicPartitions&) = default;
  };

  std::string group_id;
  std::string member_id;  // v0: "" on the first heartbeat; v1: made by the client
  std::int32_t member_epoch = 0;
  std::optional<std::string> instance_id;
  std::optional<std::string> rack_id;
  std::int32_t rebalance_timeout_ms = -1;
  std::optional<std::vector<std::string>> subscribed_topic_names;
  std::optional<std::string> subscribed_topic_regex;             // v1+
  std::optional<std::string> server_assignor;                    // "uniform", "range"; null = the broker's default
  std::optional<std::vector<TopicPartitions>> topic_partitions;  // owned partitions; [] on join
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v(member_id);
    v(member_epoch);
    v(instance_id);
    v(rack_id);
    v(rebalance_timeout_ms);
    v(subscribed_topic_names);
    v.since(1, subscribed_topic_regex);
    v(server_assignor);
    v(topic_partitions);
  }
  friend bool operator==(const ConsumerGroupHeartbeatRequest&, const ConsumerGroupHeartbeatRequest&) = default;
};

struct ConsumerGroupHeartbeatResponse {
  static constexpr ApiKey api_key = ApiKey::consumer_group_heartbeat;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = 0;

  struct TopicPartitions {
    Uuid topic_id;
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_id);
      v(partitions);
    }
    friend bool operator==(const TopicPartitions&, const TopicPartitions&) = default;
  };

  struct Assignment {
    std::vector<TopicPartitions> topic_partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_partitions);
    }
    friend bool operator==(const Assignment&, const Assignment&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::optional<std::string> error_message;
  std::optional<std::string> member_id;
  std::int32_t member_epoch = 0;
  std::int32_t heartbeat_interval_ms = 0;
  std::optional<Assignment> assignment;  // null = unchanged
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v(error_message);
    v(member_id);
    v(member_epoch);
    v(heartbeat_interval_ms);
    v(assignment);
  }
  friend bool operator==(const ConsumerGroupHeartbeatResponse&, const ConsumerGroupHeartbeatResponse&) = default;
};

}  // namespace kwire::protocol
