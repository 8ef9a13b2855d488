// ListOffsets (key 2), versions 0-11, flexible from v6.
// Source: Kafka's ListOffsetsRequest.json / ListOffsetsResponse.json.
//
// v0 returns a list of offsets (MaxNumOffsets / OldStyleOffsets); from v1 a
// single (timestamp, offset) pair is returned. Versions 7-11 only widen the
// set of special timestamps a broker understands (see kTimestamp* below) and
// v10 adds TimeoutMs for tiered-storage lookups. Kafka 4.x brokers accept 1+.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct ListOffsetsRequest {
  static constexpr ApiKey api_key = ApiKey::list_offsets;
  static constexpr std::int16_t min_version = 0, max_version = 11, flexible_since = 6;

  // Special values for ListOffsetsPartition::timestamp.
  static constexpr std::int64_t kTimestampLatest = -1;                 // all versions
  static constexpr std::int64_t kTimestampEarliest = -2;               // all versions
  static constexpr std::int64_t kTimestampMax = -3;                    // v7+ (KIP-734)
  static constexpr std::int64_t kTimestampEarliestLocal = -4;          // v8+ (KIP-405)
  static constexpr std::int64_t kTimestampLatestTiered = -5;           // v9+ (KIP-1005)
  static constexpr std::int64_t kTimestampEarliestPendingUpload = -6;  // v11+ (KIP-1023)

  struct ListOffsetsPartition {
    std::int32_t partition_index = 0;
    std::int32_t current_leader_epoch = -1;  // v4+
    std::int64_t timestamp = 0;
    std::int32_t max_num_offsets = 1;  // v0 only
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v.since(4, current_leader_epoch);
      v(timestamp);
      v.until(0, max_num_offsets);
    }
    friend bool operator==(const ListOffsetsPartition&, const ListOffsetsPartition&) = default;
  };

  struct ListOffsetsTopic {
    std::string name;
    std::vector<ListOffsetsPartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(partitions);
    }
    friend bool operator==(const ListOffsetsTopic&, const ListOffsetsTopic&) = default;
  };

  std::int32_t replica_id = 0;      // consumers send -1
  std::int8_t isolation_level = 0;  // v2+: 0 read_uncommitted, 1 read_committed
  std::vector<ListOffsetsTopic> topics;
  std::int32_t timeout_ms = 0;  // v10+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(replica_id);
    v.since(2, isolation_level);
    v(topics);
    v.since(10, timeout_ms);
  }
  friend bool operator==(const ListOffsetsRequest&, const ListOffsetsRequest&) = default;
};

struct ListOffsetsResponse {
  static constexpr ApiKey api_key = ApiKey::list_offsets;
  static constexpr std::int16_t min_version = 0, max_version = 11, flexible_since = 6;

  struct ListOffsetsPartitionResponse {
    std::int32_t partition_index = 0;
    std::int16_t error_code = 0;
    std::vector<std::int64_t> old_style_offsets;  // v0 only
    std::int64_t timestamp = -1;                  // v1+
    std::int64_t offset = -1;                     // v1+
    std::int32_t leader_epoch = -1;               // v4+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(error_code);
      v.until(0, old_style_offsets);
      v.since(1, timestamp);
      v.since(1, offset);
      v.since(4, leader_epoch);
    }
    friend bool operator==(const ListOffsetsPartitionResponse&, const ListOffsetsPartitionResponse&) = default;
  };

  struct ListOffsetsTopicResponse {
    std::string name;
    std::vector<ListOffsetsPartitionResponse> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(partitions);
    }
    friend bool operator==(const ListOffsetsTopicResponse&, const ListOffsetsTopicResponse&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v2+
  std::vector<ListOffsetsTopicResponse> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(2, throttle_time_ms);
    v(topics);
  }
  friend bool operator==(const ListOffsetsResponse&, const ListOffsetsResponse&) = default;
};

}  // namespace kwire::protocol
