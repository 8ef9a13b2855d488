// CreatePartitions (key 37), versions 0-3, flexible from v2.
// Source: Kafka's CreatePartitionsRequest.json / CreatePartitionsResponse.json.
//
// Raises a topic's partition count to `count` (partitions can only be
// added); sent to the controller. `assignments` (one replica list per new
// partition) is null to let the cluster place them. v1 only changes
// throttling behaviour; v2 is flexible; v3 may return
// THROTTLING_QUOTA_EXCEEDED (KIP-599).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct CreatePartitionsRequest {
  static constexpr ApiKey api_key = ApiKey::create_partitions;
  static constexpr std::int16_t min_version = 0, max_version = 3, flexible_since = 2;

  struct CreatePartitionsAssignment {
    std::vector<std::int32_t> broker_ids;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(broker_ids);
    }
    friend bool operator==(const CreatePartitionsAssignment&, const CreatePartitionsAssignment&) = default;
  };

  struct CreatePartitionsTopic {
    std::string name;
    std::int32_t count = 0;                                              // the new total partition count
    std::optional<std::vector<CreatePartitionsAssignment>> assignments;  // nullable
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(count);
      v(assignments);
    }
    friend bool operator==(const CreatePartitionsTopic&, const CreatePartitionsTopic&) = default;
  };

  std::vector<CreatePartitionsTopic> topics;
  std::int32_t timeout_ms = 30000;
  bool validate_only = false;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(topics);
    v(timeout_ms);
    v(validate_only);
  }
  friend bool operator==(const CreatePartitionsRequest&, const CreatePartitionsRequest&) = default;
};

struct CreatePartitionsResponse {
  static constexpr ApiKey api_key = ApiKey::create_partitions;
  static constexpr std::int16_t min_version = 0, max_version = 3, flexible_since = 2;

  struct CreatePartitionsTopicResult {
    std::string name;
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;  // nullable
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(error_code);
      v(error_message);
    }
    friend bool operator==(const CreatePartitionsTopicResult&, const CreatePartitionsTopicResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<CreatePartitionsTopicResult> results;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(results);
  }
  friend bool operator==(const CreatePartitionsResponse&, const CreatePartitionsResponse&) = default;
};

}  // namespace kwire::protocol
