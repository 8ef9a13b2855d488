// DeleteRecords (key 21), versions 0-2, flexible from v2.
// Source: Kafka's DeleteRecordsRequest.json / DeleteRecordsResponse.json.
//
// Moves each partition's log start offset up to the given offset (records
// below it become unreadable); sent to the partition leaders. An offset of -1
// means "up to the high watermark". v1 only changes throttling behaviour (the
// response is sent before the client is throttled); v2 is flexible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct DeleteRecordsRequest {
  static constexpr ApiKey api_key = ApiKey::delete_records;
  static constexpr std::int16_t min_version = 0, max_version = 2, flexible_since = 2;

  struct DeleteRecordsPartition {
    std::int32_t partition_index = 0;
    std::int64_t offset = 0;  // new log start offset; -1 = high watermark
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(offset);
    }
    friend bool operator==(const DeleteRecordsPartition&, const DeleteRecordsPartition&) = default;
  };

  struct DeleteRecordsTopic {
    std::string name;
    std::vector<DeleteRecordsPartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(partitions);
    }
    friend bool operator==(const DeleteRecordsTopic&, const DeleteRecordsTopic&) = default;
  };

  std::vector<DeleteRecordsTopic> topics;
  std::int32_t timeout_ms = 30000;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(topics);
    v(timeout_ms);
  }
  friend bool operator==(const DeleteRecordsRequest&, const DeleteRecordsRequest&) = default;
};

struct DeleteRecordsResponse {
  static constexpr ApiKey api_key = ApiKey::delete_records;
  static constexpr std::int16_t min_version = 0, max_version = 2, flexible_since = 2;

  struct DeleteRecordsPartitionResult {
    std::int32_t partition_index = 0;
    std::int64_t low_watermark = -1;  // the partition's log start offset after the call
    std::int16_t error_code = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(low_watermark);
      v(error_code);
    }
    friend bool operator==(const DeleteRecordsPartitionResult&, const DeleteRecordsPartitionResult&) = default;
  };

  struct DeleteRecordsTopicResult {
    std::string name;
    std::vector<DeleteRecordsPartitionResult> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(partitions);
    }
    friend bool operator==(const DeleteRecordsTopicResult&, const DeleteRecordsTopicResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<DeleteRecordsTopicResult> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(topics);
  }
  friend bool operator==(const DeleteRecordsResponse&, const DeleteRecordsResponse&) = default;
};

}  // namespace kwire::protocol
