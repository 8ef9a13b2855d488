// OffsetForLeaderEpoch (key 23), versions 0-4, flexible from v4.
// Source: Kafka's OffsetForLeaderEpochRequest.json / OffsetForLeaderEpochResponse.json.
//
// For each partition, asks the leader where the given leader epoch ends: the
// end offset of the largest epoch <= the one asked for (the log end offset
// when it is the current epoch). A consumer sends it after a leader change to
// check that its fetch position still exists in the new leader's log
// (KIP-320): it asks for the epoch of the last record it fetched, and if the
// returned end offset is below its position, its log has diverged (the
// records past that offset were truncated).
//
// Versions: v1 adds the leader epoch to the response, v2 the current leader
// epoch to the request (fencing, KIP-320) and the throttle time to the
// response, v3 the replica id (v3 is otherwise the same as v2), v4 is
// flexible. Kafka 4.0 removed v0-v1 (KIP-896): 4.x brokers accept 2-4, 3.x
// brokers 0-4.
//
// Partition errors: FENCED_LEADER_EPOCH (74) when current_leader_epoch is
// older than the broker's, UNKNOWN_LEADER_EPOCH (75) when newer,
// NOT_LEADER_OR_FOLLOWER (6), UNKNOWN_TOPIC_OR_PARTITION (3),
// TOPIC_AUTHORIZATION_FAILED (29). An epoch the log does not know yields
// leader_epoch -1 and end_offset -1 (UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct OffsetForLeaderEpochRequest {
  static constexpr ApiKey api_key = ApiKey::offset_for_leader_epoch;
  static constexpr std::int16_t min_version = 0, max_version = 4, flexible_since = 4;

  // Values of replica_id.
  static constexpr std::int32_t kConsumerReplicaId = -1;
  static constexpr std::int32_t kDebuggingReplicaId = -2;  // what a broker assumes below v3

  struct OffsetForLeaderPartition {
    std::int32_t partition = 0;
    /// v2+: the leader epoch the sender knows from metadata, to fence stale
    /// senders (-1: no check).
    std::int32_t current_leader_epoch = -1;
    /// The epoch to look up: a consumer's is that of the last record it fetched.
    std::int32_t leader_epoch = -1;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition);
      v.since(2, current_leader_epoch);
      v(leader_epoch);
    }
    friend bool operator==(const OffsetForLeaderPartition&, const OffsetForLeaderPartition&) = default;
  };

  struct OffsetForLeaderTopic {
    std::string topic;
    std::vector<OffsetForLeaderPartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic);
      v(partitions);
    }
    friend bool operator==(const OffsetForLeaderTopic&, const OffsetForLeaderTopic&) = default;
  };

  /// v3+: -1 for a consumer (the default here), a broker id for a follower.
  std::int32_t replica_id = kConsumerReplicaId;
  std::vector<OffsetForLeaderTopic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(3, replica_id);
    v(topics);
  }
  friend bool operator==(const OffsetForLeaderEpochRequest&, const OffsetForLeaderEpochRequest&) = default;
};

struct OffsetForLeaderEpochResponse {
  static constexpr ApiKey api_key = ApiKey::offset_for_leader_epoch;
  static constexpr std::int16_t min_version = 0, max_version = 4, flexible_since = 4;

  struct EpochEndOffset {
    std::int16_t error_code = 0;
    std::int32_t partition = 0;
    /// v1+: the largest epoch <= the requested one the leader has (-1: none).
    std::int32_t leader_epoch = -1;
    /// Where that epoch ends: the first offset of the next epoch, or the log
    /// end offset for the current epoch (-1: unknown).
    std::int64_t end_offset = -1;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(partition);
      v.since(1, leader_epoch);
      v(end_offset);
    }
    friend bool operator==(const EpochEndOffset&, const EpochEndOffset&) = default;
  };

  struct OffsetForLeaderTopicResult {
    std::string topic;
    std::vector<EpochEndOffset> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic);
      v(partitions);
    }
    friend bool operator==(const OffsetForLeaderTopicResult&, const OffsetForLeaderTopicResult&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v2+
  std::vector<OffsetForLeaderTopicResult> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(2, throttle_time_ms);
    v(topics);
  }
  friend bool operator==(const OffsetForLeaderEpochResponse&, const OffsetForLeaderEpochResponse&) = default;
};

}  // namespace kwire::protocol
