// Fetch (key 1), versions 0-18, flexible from v12.
// Source: Kafka's FetchRequest.json / FetchResponse.json.
//
// Milestones: v4 isolation level and aborted transactions (record batch v2),
// v5 log start offset, v7 incremental fetch sessions (KIP-227), v9 current
// leader epoch (KIP-320), v11 rack id / preferred read replica (KIP-392),
// v12 flexible + divergence detection, v13 topic ids replace topic names
// (KIP-516), v15 ReplicaState replaces ReplicaId (KIP-903), v16 node endpoints
// in the response (KIP-951), v17 replica directory id (KIP-853), v18 follower
// high watermark (KIP-1166). Kafka 4.x brokers accept 4+.
//
// Records in a decoded response are views into the response frame.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/aborted_transaction.hpp"
#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct FetchRequest {
  static constexpr ApiKey api_key = ApiKey::fetch;
  static constexpr std::int16_t min_version = 0, max_version = 18, flexible_since = 12;

  struct ReplicaState {
    std::int32_t replica_id = -1;
    std::int64_t replica_epoch = -1;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(replica_id);
      v(replica_epoch);
    }
    friend bool operator==(const ReplicaState&, const ReplicaState&) = default;
  };

  struct FetchPartition {
    std::int32_t partition = 0;
    std::int32_t current_leader_epoch = -1;  // v9+
    std::int64_t fetch_offset = 0;
    std::int32_t last_fetched_epoch = -1;  // v12+
    std::int64_t log_start_offset = -1;    // v5+ (followers only)
    std::int32_t partition_max_bytes = 0;
    Uuid replica_directory_id;                                               // tag 0, v17+
    std::int64_t high_watermark = std::numeric_limits<std::int64_t>::max();  // tag 1, v18+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition);
      v.since(9, current_leader_epoch);
      v(fetch_offset);
      v.since(12, last_fetched_epoch);
      v.since(5, log_start_offset);
      v(partition_max_bytes);
      v.tagged(0, 17, replica_directory_id);
      v.tagged(1, 18, high_watermark, std::numeric_limits<std::int64_t>::max());
    }
    friend bool operator==(const FetchPartition&, const FetchPartition&) = default;
  };

  struct FetchTopic {
    std::string topic;  // v0-12
    Uuid topic_id;      // v13+
    std::vector<FetchPartition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v.until(12, topic);
      v.since(13, topic_id);
      v(partitions);
    }
    friend bool operator==(const FetchTopic&, const FetchTopic&) = default;
  };

  struct ForgottenTopic {
    std::string topic;  // v7-12
    Uuid topic_id;      // v13+
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v.until(12, topic);
      v.since(13, topic_id);
      v(partitions);
    }
    friend bool operator==(const ForgottenTopic&, const ForgottenTopic&) = default;
  };

  std::optional<std::string> cluster_id;  // tag 0, v12+
  std::int32_t replica_id = -1;           // v0-14; -1 for consumers
  ReplicaState replica_state;             // tag 1, v15+
  std::int32_t max_wait_ms = 0;
  std::int32_t min_bytes = 0;
  std::int32_t max_bytes = 0x7fffffff;  // v3+
  std::int8_t isolation_level = 0;      // v4+: 0 read_uncommitted, 1 read_committed
  std::int32_t session_id = 0;          // v7+
  std::int32_t session_epoch = -1;      // v7+
  std::vector<FetchTopic> topics;
  std::vector<ForgottenTopic> forgotten_topics_data;  // v7+
  std::string rack_id;                                // v11+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.tagged(0, 12, cluster_id);
    v.until(14, replica_id);
    v.tagged(1, 15, replica_state);
    v(max_wait_ms);
    v(min_bytes);
    v.since(3, max_bytes);
    v.since(4, isolation_level);
    v.since(7, session_id);
    v.since(7, session_epoch);
    v(topics);
    v.since(7, forgotten_topics_data);
    v.since(11, rack_id);
  }
  friend bool operator==(const FetchRequest&, const FetchRequest&) = default;
};

struct FetchResponse {
  static constexpr ApiKey api_key = ApiKey::fetch;
  static constexpr std::int16_t min_version = 0, max_version = 18, flexible_since = 12;

  struct EpochEndOffset {
    std::int32_t epoch = -1;
    std::int64_t end_offset = -1;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(epoch);
      v(end_offset);
    }
    friend bool operator==(const EpochEndOffset&, const EpochEndOffset&) = default;
  };

  struct LeaderIdAndEpoch {
    std::int32_t leader_id = -1;
    std::int32_t leader_epoch = -1;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(leader_id);
      v(leader_epoch);
    }
    friend bool operator==(const LeaderIdAndEpoch&, const LeaderIdAndEpoch&) = default;
  };

  struct SnapshotId {
    std::int64_t end_offset = -1;
    std::int32_t epoch = -1;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(end_offset);
      v(epoch);
    }
    friend bool operator==(const SnapshotId&, const SnapshotId&) = default;
  };

  // Declared in aborted_transaction.hpp: the record decoder takes the same type.
  using AbortedTransaction = kwire::protocol::AbortedTransaction;

  struct PartitionData {
    std::int32_t partition_index = 0;
    std::int16_t error_code = 0;
    std::int64_t high_watermark = 0;
    std::int64_t last_stable_offset = -1;                                 // v4+
    std::int64_t log_start_offset = -1;                                   // v5+
    EpochEndOffset diverging_epoch;                                       // tag 0, v12+
    LeaderIdAndEpoch current_leader;                                      // tag 1, v12+
    SnapshotId snapshot_id;                                               // tag 2, v12+
    std::optional<std::vector<AbortedTransaction>> aborted_transactions;  // v4+, nullable
    std::int32_t preferred_read_replica = -1;                             // v11+
    Records records;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(error_code);
      v(high_watermark);
      v.since(4, last_stable_offset);
      v.since(5, log_start_offset);
      v.tagged(0, 12, diverging_epoch);
      v.tagged(1, 12, current_leader);
      v.tagged(2, 12, snapshot_id);
      v.since(4, aborted_transactions);
      v.since(11, preferred_read_replica);
      v(records);
    }
    friend bool operator==(const PartitionData&, const PartitionData&) = default;
  };

  struct FetchableTopicResponse {
    std::string topic;  // v0-12
    Uuid topic_id;      // v13+
    std::vector<PartitionData> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v.until(12, topic);
      v.since(13, topic_id);
      v(partitions);
    }
    friend bool operator==(const FetchableTopicResponse&, const FetchableTopicResponse&) = default;
  };

  struct NodeEndpoint {
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
    friend bool operator==(const NodeEndpoint&, const NodeEndpoint&) = default;
  };

  std::int32_t throttle_time_ms = 0;  // v1+
  std::int16_t error_code = 0;        // v7+
  std::int32_t session_id = 0;        // v7+
  std::vector<FetchableTopicResponse> responses;
  std::vector<NodeEndpoint> node_endpoints;  // tag 0, v16+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(1, throttle_time_ms);
    v.since(7, error_code);
    v.since(7, session_id);
    v(responses);
    v.tagged(0, 16, node_endpoints);
  }
  friend bool operator==(const FetchResponse&, const FetchResponse&) = default;
};

}  // namespace kwire::protocol
