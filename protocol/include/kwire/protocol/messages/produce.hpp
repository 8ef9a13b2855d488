// Produce (key 0), versions 0-13, flexible from v9.
// Source: Kafka's ProduceRequest.json / ProduceResponse.json.
//
// v3 adds the transactional id and record batch v2; v8 per-record errors
// (KIP-467); v10 current leader / node endpoints in the response (KIP-951);
// v11-12 new transaction error semantics (KIP-890); v13 topic ids replace
// topic names (KIP-516). Kafka 4.x brokers accept 3+.
//
// With acks = 0 the broker sends no response at all.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct ProduceRequest {
  static constexpr ApiKey api_key = ApiKey::produce;
  static constexpr std::int16_t min_version = 0, max_version = 13, flexible_since = 9;

  struct PartitionProduceData {
    std::int32_t index = 0;
    Records records;  // nullable
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(index);
      v(records);
    }
    friend bool operator==(const PartitionProduceData&, const PartitionProduceData&) = default;
  };

  struct TopicProduceData {
    std::string name;  // v0-12
    Uuid topic_id;     // v13+
    std::vector<PartitionProduceData> partition_data;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v.until(12, name);
      v.since(13, topic_id);
      v(partition_data);
    }
    friend bool operator==(const TopicProduceData&, const TopicProduceData&) = default;
  };

  std::optional<std::string> transactional_id;  // v3+, nullable
  std::int16_t acks = 0;                        // 0, 1 or -1 (all in-sync replicas)
  std::int32_t timeout_ms = 0;
  std::vector<TopicProduceData> topic_data;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(3, transactional_id);
    v(acks);
    v(timeout_ms);
    v(topic_data);
  }
  friend bool operator==(const ProduceRequest&, const ProduceRequest&) = default;
};

struct ProduceResponse {
  static constexpr ApiKey api_key = ApiKey::produce;
  static constexpr std::int16_t min_version = 0, max_version = 13, flexible_since = 9;

  struct BatchIndexAndErrorMessage {
    std::int32_t batch_index = 0;
    std::optional<std::string> batch_index_error_message;  // nullable
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(batch_index);
      v(batch_index_error_message);
    }
    friend bool operator==(const BatchIndexAndErrorMessage&, const BatchIndexAndErrorMessage&) = default;
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

  struct PartitionProduceResponse {
    std::int32_t index = 0;
    std::int16_t error_code = 0;
    std::int64_t base_offset = 0;
    std::int64_t log_append_time_ms = -1;                  // v2+
    std::int64_t log_start_offset = -1;                    // v5+
    std::vector<BatchIndexAndErrorMessage> record_errors;  // v8+
    std::optional<std::string> error_message;              // v8+, nullable
    LeaderIdAndEpoch current_leader;                       // tag 0, v10+
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(index);
      v(error_code);
      v(base_offset);
      v.since(2, log_append_time_ms);
      v.since(5, log_start_offset);
      v.since(8, record_errors);
      v.since(8, error_message);
      v.tagged(0, 10, current_leader);
    }
    friend bool operator==(const PartitionProduceResponse&, const PartitionProduceResponse&) = default;
  };

  struct TopicProduceResponse {
    std::string name;  // v0-12
    Uuid topic_id;     // v13+
    std::vector<PartitionProduceResponse> partition_responses;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v.until(12, name);
      v.since(13, topic_id);
      v(partition_responses);
    }
    friend bool operator==(const TopicProduceResponse&, const TopicProduceResponse&) = default;
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

  std::vector<TopicProduceResponse> responses;
  std::int32_t throttle_time_ms = 0;         // v1+
  std::vector<NodeEndpoint> node_endpoints;  // tag 0, v10+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(responses);
    v.since(1, throttle_time_ms);
    v.tagged(0, 10, node_endpoints);
  }
  friend bool operator==(const ProduceResponse&, const ProduceResponse&) = default;
};

}  // namespace kwire::protocol
