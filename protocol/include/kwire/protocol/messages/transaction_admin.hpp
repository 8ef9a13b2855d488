// Looking at transactions and producers from outside (KIP-664, the calls of
// Kafka's kafka-transactions tool): DescribeProducers (key 61),
// DescribeTransactions (65) and ListTransactions (66). All flexible from v0.
// Source: Kafka's *Request.json / *Response.json of these APIs.
//
// DescribeProducers v0: the producers with state on a partition (sent to its
//   leader): id, epoch, last sequence and timestamp, and the offset where
//   their open transaction starts (-1: none).
// DescribeTransactions v0: the state of transactional ids (sent to their
//   coordinator): Empty, Ongoing, PrepareCommit, PrepareAbort,
//   CompleteCommit, CompleteAbort, Dead, PrepareEpochFence; timeout, start
//   time, producer id and epoch, and the partitions in the transaction.
// ListTransactions v0-2 (any broker lists the transactional ids it
//   coordinates): filtered by state and producer id; v1 adds a minimum
//   running time (DurationFilter, KIP-994), v2 a regular expression on the
//   id (TransactionalIdPattern, KIP-1152; Kafka 4.1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct DescribeProducersRequest {
  static constexpr ApiKey api_key = ApiKey::describe_producers;
  static constexpr std::int16_t min_version = 0, max_version = 0, flexible_since = 0;

  struct Topic {
    std::string name;
    std::vector<std::int32_t> partition_indexes;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(partition_indexes);
    }
    friend bool operator==(const Topic&, const Topic&) = default;
  };

  std::vector<Topic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(topics);
  }
  friend bool operator==(const DescribeProducersRequest&, const DescribeProducersRequest&) = default;
};

struct DescribeProducersResponse {
  static constexpr ApiKey api_key = ApiKey::describe_producers;
  static constexpr std::int16_t min_version = 0, max_version = 0, flexible_since = 0;

  struct ProducerState {
    std::int64_t producer_id = -1;
    std::int32_t producer_epoch = -1;  // int32 on the wire
    std::int32_t last_sequence = -1;
    std::int64_t last_timestamp = -1;
    std::int32_t coordinator_epoch = -1;
    std::int64_t current_txn_start_offset = -1;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(producer_id);
      v(producer_epoch);
      v(last_sequence);
      v(last_timestamp);
      v(coordinator_epoch);
      v(current_txn_start_offset);
    }
    friend bool operator==(const ProducerState&, const ProducerState&) = default;
  };
  struct Partition {
    std::int32_t partition_index = 0;
    std::int16_t error_code = 0;
    std::optional<std::string> error_message;
    std::vector<ProducerState> active_producers;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(error_code);
      v(error_message);
      v(active_producers);
    }
    friend bool operator==(const Partition&, const Partition&) = default;
  };
  struct Topic {
    std::string name;
    std::vector<Partition> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(partitions);
    }
    friend bool operator==(const Topic&, const Topic&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<Topic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(topics);
  }
  friend bool operator==(const DescribeProducersResponse&, const DescribeProducersResponse&) = default;
};

struct DescribeTransactionsRequest {
  static constexpr ApiKey api_key = ApiKey::describe_transactions;
  static constexpr std::int16_t min_version = 0, max_version = 0, flexible_since = 0;

  std::vector<std::string> transactional_ids;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(transactional_ids);
  }
  friend bool operator==(const DescribeTransactionsRequest&, const DescribeTransactionsRequest&) = default;
};

struct DescribeTransactionsResponse {
  static constexpr ApiKey api_key = ApiKey::describe_transactions;
  static constexpr std::int16_t min_version = 0, max_version = 0, flexible_since = 0;

  struct TopicData {
    std::string topic;
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(topic);
      v(partitions);
    }
    friend bool operator==(const TopicData&, const TopicData&) = default;
  };
  struct TransactionState {
    std::int16_t error_code = 0;
    std::string transactional_id;
    std::string transaction_state;
    std::int32_t transaction_timeout_ms = 0;
    std::int64_t transaction_start_time_ms = -1;
    std::int64_t producer_id = -1;
    std::int16_t producer_epoch = -1;
    std::vector<TopicData> topics;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(error_code);
      v(transactional_id);
      v(transaction_state);
      v(transaction_timeout_ms);
      v(transaction_start_time_ms);
      v(producer_id);
      v(producer_epoch);
      v(topics);
    }
    friend bool operator==(const TransactionState&, const TransactionState&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::vector<TransactionState> transaction_states;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(transaction_states);
  }
  friend bool operator==(const DescribeTransactionsResponse&, const DescribeTransactionsResponse&) = default;
};

struct ListTransactionsRequest {
  static constexpr ApiKey api_key = ApiKey::list_transactions;
  static constexpr std::int16_t min_version = 0, max_version = 2, flexible_since = 0;

  std::vector<std::string> state_filters;               // empty: every state
  std::vector<std::int64_t> producer_id_filters;        // empty: every producer
  std::int64_t duration_filter = -1;                    // v1+: running at least this long (ms); -1: any
  std::optional<std::string> transactional_id_pattern;  // v2+: a regular expression; null: any
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(state_filters);
    v(producer_id_filters);
    v.since(1, duration_filter);
    v.since(2, transactional_id_pattern);
  }
  friend bool operator==(const ListTransactionsRequest&, const ListTransactionsRequest&) = default;
};

struct ListTransactionsResponse {
  static constexpr ApiKey api_key = ApiKey::list_transactions;
  static constexpr std::int16_t min_version = 0, max_version = 2, flexible_since = 0;

  struct TransactionState {
    std::string transactional_id;
    std::int64_t producer_id = -1;
    std::string transaction_state;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(transactional_id);
      v(producer_id);
      v(transaction_state);
    }
    friend bool operator==(const TransactionState&, const TransactionState&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::vector<std::string> unknown_state_filters;
  std::vector<TransactionState> transaction_states;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v(unknown_state_filters);
    v(transaction_states);
  }
  friend bool operator==(const ListTransactionsResponse&, const ListTransactionsResponse&) = default;
};

}  // namespace kwire::protocol
