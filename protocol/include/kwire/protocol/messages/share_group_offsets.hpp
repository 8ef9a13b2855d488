// The share-group offset APIs (KIP-932): DescribeShareGroupOffsets (key 90,
// v0-1), AlterShareGroupOffsets (key 91, v0) and DeleteShareGroupOffsets
// (key 92, v0): a share group's start offsets, read, set or deleted by an
// administrator. Always flexible. Source: Kafka 4.4.0's
// *ShareGroupOffsets*.json specs. Membership and fetching are in
// share_group.hpp.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct DescribeShareGroupOffsetsRequest {
  static constexpr ApiKey api_key = ApiKey::describe_share_group_offsets;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = 0;

  struct RequestTopic {
    std::string topic_name;
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_name);
      v(partitions);
    }
    friend bool operator==(const RequestTopic&, const RequestTopic&) = default;
  };
  struct RequestGroup {
    std::string group_id;
    std::optional<std::vector<RequestTopic>> topics;  // null: every topic
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(group_id);
      v(topics);
    }
    friend bool operator==(const RequestGroup&, const RequestGroup&) = default;
  };

  std::vector<RequestGroup> groups;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(groups);
  }
  friend bool operator==(const DescribeShareGroupOffsetsRequest&, const DescribeShareGroupOffsetsRequest&) = default;
};

struct DescribeShareGroupOffsetsResponse {
  static constexpr ApiKey api_key = ApiKey::describe_share_group_offsets;
  static constexpr std::int16_t min_version = 0, max_version = 1, flexible_since = 0;

  struct ResponsePartition {
    std::int32_t partition_index = 0;
    std::int64_t start_offset = -1;  // -1: not initialized
    std::int32_t leader_epoch = -1;
    std::int64_t lag = -1;  // v1+ (KIP-1226)
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(start_offset);
      v(leader_epoch);
      v.since(1, lag);
      v(error_code);
      v(error_message);
    }
    friend bool operator==(const ResponsePartition&, const ResponsePartition&) = default;
  };
  struct ResponseTopic {
    std::string topic_name;
    Uuid topic_id;
    std::vector<ResponsePartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_name);
      v(topic_id);
      v(partitions);
    }
    friend bool operator==(const ResponseTopic&, const ResponseTopic&) = default;
  };
  struct ResponseGroup {
    std::string group_id;
    std::vector<ResponseTopic> topics;
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(group_id);
      v(topics);
      v(error_code);
      v(error_message);
    }
    friend bool operator==(const ResponseGroup&, const ResponseGroup&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<ResponseGroup> groups;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(groups);
  }
  friend bool operator==(const DescribeShareGroupOffsetsResponse&, const DescribeShareGroupOffsetsResponse&) = default;
};

struct AlterShareGroupOffsetsRequest {
  static constexpr ApiKey api_key = ApiKey::alter_share_group_offsets;
  static constexpr std::int16_t min_version = 0, max_version = 0, flexible_since = 0;

  struct RequestPartition {
    std::int32_t partition_index = 0;
    std::int64_t start_offset = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(start_offset);
    }
    friend bool operator==(const RequestPartition&, const RequestPartition&) = default;
  };
  struct RequestTopic {
    std::string topic_name;
    std::vector<RequestPartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_name);
      v(partitions);
    }
    friend bool operator==(const RequestTopic&, const RequestTopic&) = default;
  };

  std::string group_id;
  std::vector<RequestTopic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v(topics);
  }
  friend bool operator==(const AlterShareGroupOffsetsRequest&, const AlterShareGroupOffsetsRequest&) = default;
};

struct AlterShareGroupOffsetsResponse {
  static constexpr ApiKey api_key = ApiKey::alter_share_group_offsets;
  static constexpr std::int16_t min_version = 0, max_version = 0, flexible_since = 0;

  struct ResponsePartition {
    std::int32_t partition_index = 0;
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(error_code);
      v(error_message);
    }
    friend bool operator==(const ResponsePartition&, const ResponsePartition&) = default;
  };
  struct ResponseTopic {
    std::string topic_name;
    Uuid topic_id;
    std::vector<ResponsePartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_name);
      v(topic_id);
      v(partitions);
    }
    friend bool operator==(const ResponseTopic&, const ResponseTopic&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::optional<std::string> error_message;
  std::vector<ResponseTopic> responses;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v(error_message);
    v(responses);
  }
  friend bool operator==(const AlterShareGroupOffsetsResponse&, const AlterShareGroupOffsetsResponse&) = default;
};

struct DeleteShareGroupOffsetsRequest {
  static constexpr ApiKey api_key = ApiKey::delete_share_group_offsets;
  static constexpr std::int16_t min_version = 0, max_version = 0, flexible_since = 0;

  struct RequestTopic {
    std::string topic_name;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_name);
    }
    friend bool operator==(const RequestTopic&, const RequestTopic&) = default;
  };

  std::string group_id;
  std::vector<RequestTopic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v(topics);
  }
  friend bool operator==(const DeleteShareGroupOffsetsRequest&, const DeleteShareGroupOffsetsRequest&) = default;
};

struct DeleteShareGroupOffsetsResponse {
  static constexpr ApiKey api_key = ApiKey::delete_share_group_offsets;
  static constexpr std::int16_t min_version = 0, max_version = 0, flexible_since = 0;

  struct ResponseTopic {
    std::string topic_name;
    Uuid topic_id;
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_name);
      v(topic_id);
      v(error_code);
      v(error_message);
    }
    friend bool operator==(const ResponseTopic&, const ResponseTopic&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::optional<std::string> error_message;
  std::vector<ResponseTopic> responses;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v(error_message);
    v(responses);
  }
  friend bool operator==(const DeleteShareGroupOffsetsResponse&, const DeleteShareGroupOffsetsResponse&) = default;
};

}  // namespace kwire::protocol
