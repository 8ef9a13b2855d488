// Share groups (KIP-932, "queues for Kafka"; production-ready since Kafka
// 4.2): ShareGroupHeartbeat (key 76, v1), ShareGroupDescribe (key 77, v1),
// ShareFetch (key 78, v1-2) and ShareAcknowledge (key 79, v1-2); the offset
// APIs are in share_group_offsets.hpp. All are always flexible. v0 was Kafka
// 4.0's early access, removed in 4.1, and is not declared. Source: Kafka
// 4.4.0's Share*.json specs.
//
// Membership: a member joins with epoch 0 and an empty member id chosen by the
// client (a UUID, as the Java client does), heartbeats at the interval the
// coordinator gives, leaves with epoch -1. The coordinator assigns partitions
// (several members may share one partition). Fetching: ShareFetch goes to each
// partition's leader with a share session per (member, broker): epoch 0 opens
// it, each request then increments it (wrapping to 1 after INT32_MAX), -1
// closes it; a session answers SHARE_SESSION_NOT_FOUND or
// INVALID_SHARE_SESSION_EPOCH when the epochs disagree. Records come with
// AcquiredRecords ranges (first, last, delivery count): the member holds them
// for AcquisitionLockTimeoutMs and acknowledges them on the next ShareFetch or
// with ShareAcknowledge: per offset range, one type per offset or one for the
// whole range (kAcknowledge* below; 0 marks a gap, offsets that are no record).
// v2 (KIP-1206, KIP-1222) adds ShareAcquireMode (0 batch-optimized, 1 record
// limit) and renew acknowledgements (type 4 with IsRenewAck) which extend the
// lock instead of ending it.
#pragma once

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

inline constexpr std::int8_t kAcknowledgeGap = 0;
inline constexpr std::int8_t kAcknowledgeAccept = 1;
inline constexpr std::int8_t kAcknowledgeRelease = 2;
inline constexpr std::int8_t kAcknowledgeReject = 3;
inline constexpr std::int8_t kAcknowledgeRenew = 4;  // v2+, with IsRenewAck

struct ShareGroupHeartbeatRequest {
  static constexpr ApiKey api_key = ApiKey::share_group_heartbeat;
  static constexpr std::int16_t min_version = 1, max_version = 1, flexible_since = 0;

  std::string group_id;
  std::string member_id;
  std::int32_t member_epoch = 0;  // 0 join, -1 leave
  std::optional<std::string> rack_id;
  std::optional<std::vector<std::string>> subscribed_topic_names;  // null: unchanged
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v(member_id);
    v(member_epoch);
    v(rack_id);
    v(subscribed_topic_names);
  }
  friend bool operator==(const ShareGroupHeartbeatRequest&, const ShareGroupHeartbeatRequest&) = default;
};

struct ShareGroupHeartbeatResponse {
  static constexpr ApiKey api_key = ApiKey::share_group_heartbeat;
  static constexpr std::int16_t min_version = 1, max_version = 1, flexible_since = 0;

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
  std::optional<Assignment> assignment;  // null: unchanged
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
  friend bool operator==(const ShareGroupHeartbeatResponse&, const ShareGroupHeartbeatResponse&) = default;
};

struct ShareGroupDescribeRequest {
  static constexpr ApiKey api_key = ApiKey::share_group_describe;
  static constexpr std::int16_t min_version = 1, max_version = 1, flexible_since = 0;

  std::vector<std::string> group_ids;
  bool include_authorized_operations = false;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_ids);
    v(include_authorized_operations);
  }
  friend bool operator==(const ShareGroupDescribeRequest&, const ShareGroupDescribeRequest&) = default;
};

struct ShareGroupDescribeResponse {
  static constexpr ApiKey api_key = ApiKey::share_group_describe;
  static constexpr std::int16_t min_version = 1, max_version = 1, flexible_since = 0;

  struct TopicPartitions {
    Uuid topic_id;
    std::string topic_name;
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_id);
      v(topic_name);
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
  struct Member {
    std::string member_id;
    std::optional<std::string> rack_id;
    std::int32_t member_epoch = 0;
    std::string client_id;
    std::string client_host;
    std::vector<std::string> subscribed_topic_names;
    Assignment assignment;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(member_id);
      v(rack_id);
      v(member_epoch);
      v(client_id);
      v(client_host);
      v(subscribed_topic_names);
      v(assignment);
    }
    friend bool operator==(const Member&, const Member&) = default;
  };
  struct DescribedGroup {
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::string group_id;
    std::string group_state;  // "Empty", "Stable", "Dead"
    std::int32_t group_epoch = 0;
    std::int32_t assignment_epoch = 0;
    std::string assignor_name;
    std::vector<Member> members;
    std::int32_t authorized_operations = INT32_MIN;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(error_message);
      v(group_id);
      v(group_state);
      v(group_epoch);
      v(assignment_epoch);
      v(assignor_name);
      v(members);
      v(authorized_operations);
    }
    friend bool operator==(const DescribedGroup&, const DescribedGroup&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<DescribedGroup> groups;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(groups);
  }
  friend bool operator==(const ShareGroupDescribeResponse&, const ShareGroupDescribeResponse&) = default;
};

/// An acknowledgement of offsets [first_offset, last_offset]: one type for
/// the whole range, or one per offset.
struct AcknowledgementBatch {
  std::int64_t first_offset = 0;
  std::int64_t last_offset = 0;
  std::vector<std::int8_t> acknowledge_types;
  TaggedFields unknown_tagged_fields;
  template <class V>
  void fields(V& v) {
    v(first_offset);
    v(last_offset);
    v(acknowledge_types);
  }
  friend bool operator==(const AcknowledgementBatch&, const AcknowledgementBatch&) = default;
};

/// A partition's leader as a share answer reports it (KIP-951's shape).
struct ShareLeaderIdAndEpoch {
  std::int32_t leader_id = -1;
  std::int32_t leader_epoch = -1;
  TaggedFields unknown_tagged_fields;
  template <class V>
  void fields(V& v) {
    v(leader_id);
    v(leader_epoch);
  }
  friend bool operator==(const ShareLeaderIdAndEpoch&, const ShareLeaderIdAndEpoch&) = default;
};

struct ShareNodeEndpoint {
  std::int32_t node_id = 0;
  std::string host;
  std::int32_t port = 0;
  std::optional<std::string> rack;
  TaggedFields unknown_tagged_fields;
  template <class V>
  void fields(V& v) {
    v(node_id);
    v(host);
    v(port);
    v(rack);
  }
  friend bool operator==(const ShareNodeEndpoint&, const ShareNodeEndpoint&) = default;
};

struct ShareFetchRequest {
  static constexpr ApiKey api_key = ApiKey::share_fetch;
  static constexpr std::int16_t min_version = 1, max_version = 2, flexible_since = 0;

  struct FetchPartition {
    std::int32_t partition_index = 0;
    std::vector<AcknowledgementBatch> acknowledgement_batches;  // piggy-backed
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(acknowledgement_batches);
    }
    friend bool operator==(const FetchPartition&, const FetchPartition&) = default;
  };
  struct FetchTopic {
    Uuid topic_id;
    std::vector<FetchPartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_id);
      v(partitions);
    }
    friend bool operator==(const FetchTopic&, const FetchTopic&) = default;
  };
  struct ForgottenTopic {
    Uuid topic_id;
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_id);
      v(partitions);
    }
    friend bool operator==(const ForgottenTopic&, const ForgottenTopic&) = default;
  };

  std::optional<std::string> group_id;
  std::optional<std::string> member_id;
  std::int32_t share_session_epoch = 0;  // 0 open, -1 close, else the next epoch
  std::int32_t max_wait_ms = 0;
  std::int32_t min_bytes = 0;
  std::int32_t max_bytes = 0x7fffffff;
  std::int32_t max_records = 0;
  std::int32_t batch_size = 0;
  std::int8_t share_acquire_mode = 0;  // v2+: 0 batch-optimized, 1 record limit (KIP-1206)
  bool is_renew_ack = false;           // v2+ (KIP-1222)
  std::vector<FetchTopic> topics;
  std::vector<ForgottenTopic> forgotten_topics_data;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v(member_id);
    v(share_session_epoch);
    v(max_wait_ms);
    v(min_bytes);
    v(max_bytes);
    v(max_records);
    v(batch_size);
    v.since(2, share_acquire_mode);
    v.since(2, is_renew_ack);
    v(topics);
    v(forgotten_topics_data);
  }
  friend bool operator==(const ShareFetchRequest&, const ShareFetchRequest&) = default;
};

struct ShareFetchResponse {
  static constexpr ApiKey api_key = ApiKey::share_fetch;
  static constexpr std::int16_t min_version = 1, max_version = 2, flexible_since = 0;

  struct AcquiredRecords {
    std::int64_t first_offset = 0;
    std::int64_t last_offset = 0;
    std::int16_t delivery_count = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(first_offset);
      v(last_offset);
      v(delivery_count);
    }
    friend bool operator==(const AcquiredRecords&, const AcquiredRecords&) = default;
  };
  struct PartitionData {
    std::int32_t partition_index = 0;
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::int16_t acknowledge_error_code = 0;
    std::optional<std::string> acknowledge_error_message;
    ShareLeaderIdAndEpoch current_leader;
    Records records;  // a view into the response frame
    std::vector<AcquiredRecords> acquired_records;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(error_code);
      v(error_message);
      v(acknowledge_error_code);
      v(acknowledge_error_message);
      v(current_leader);
      v(records);
      v(acquired_records);
    }
    friend bool operator==(const PartitionData&, const PartitionData&) = default;
  };
  struct ShareFetchableTopicResponse {
    Uuid topic_id;
    std::vector<PartitionData> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_id);
      v(partitions);
    }
    friend bool operator==(const ShareFetchableTopicResponse&, const ShareFetchableTopicResponse&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::optional<std::string> error_message;
  std::int32_t acquisition_lock_timeout_ms = 0;
  std::vector<ShareFetchableTopicResponse> responses;
  std::vector<ShareNodeEndpoint> node_endpoints;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v(error_message);
    v(acquisition_lock_timeout_ms);
    v(responses);
    v(node_endpoints);
  }
  friend bool operator==(const ShareFetchResponse&, const ShareFetchResponse&) = default;
};

struct ShareAcknowledgeRequest {
  static constexpr ApiKey api_key = ApiKey::share_acknowledge;
  static constexpr std::int16_t min_version = 1, max_version = 2, flexible_since = 0;

  struct AcknowledgePartition {
    std::int32_t partition_index = 0;
    std::vector<AcknowledgementBatch> acknowledgement_batches;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(acknowledgement_batches);
    }
    friend bool operator==(const AcknowledgePartition&, const AcknowledgePartition&) = default;
  };
  struct AcknowledgeTopic {
    Uuid topic_id;
    std::vector<AcknowledgePartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_id);
      v(partitions);
    }
    friend bool operator==(const AcknowledgeTopic&, const AcknowledgeTopic&) = default;
  };

  std::optional<std::string> group_id;
  std::optional<std::string> member_id;
  std::int32_t share_session_epoch = 0;
  bool is_renew_ack = false;  // v2+
  std::vector<AcknowledgeTopic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(group_id);
    v(member_id);
    v(share_session_epoch);
    v.since(2, is_renew_ack);
    v(topics);
  }
  friend bool operator==(const ShareAcknowledgeRequest&, const ShareAcknowledgeRequest&) = default;
};

struct ShareAcknowledgeResponse {
  static constexpr ApiKey api_key = ApiKey::share_acknowledge;
  static constexpr std::int16_t min_version = 1, max_version = 2, flexible_since = 0;

  struct PartitionData {
    std::int32_t partition_index = 0;
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    ShareLeaderIdAndEpoch current_leader;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(error_code);
      v(error_message);
      v(current_leader);
    }
    friend bool operator==(const PartitionData&, const PartitionData&) = default;
  };
  struct ShareAcknowledgeTopicResponse {
    Uuid topic_id;
    std::vector<PartitionData> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic_id);
      v(partitions);
    }
    friend bool operator==(const ShareAcknowledgeTopicResponse&, const ShareAcknowledgeTopicResponse&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::optional<std::string> error_message;
  std::int32_t acquisition_lock_timeout_ms = 0;  // v2+
  std::vector<ShareAcknowledgeTopicResponse> responses;
  std::vector<ShareNodeEndpoint> node_endpoints;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v(error_message);
    v.since(2, acquisition_lock_timeout_ms);
    v(responses);
    v(node_endpoints);
  }
  friend bool operator==(const ShareAcknowledgeResponse&, const ShareAcknowledgeResponse&) = default;
};

}  // namespace kwire::protocol
