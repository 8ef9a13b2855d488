// The producer's idempotence and transaction calls (KIP-98, KIP-360, KIP-890):
// InitProducerId (key 22), AddPartitionsToTxn (24), AddOffsetsToTxn (25),
// EndTxn (26) and TxnOffsetCommit (28).
// Source: Kafka's *Request.json / *Response.json of these APIs (Kafka 4.1 and
// 3.9 ship the versions declared here).
//
// InitProducerId v0-5, flexible from v2: a producer id and epoch for an
//   idempotent producer (null transactional id) or for a transactional id,
//   fencing older producers of that id. v3 sends the current id and epoch so
//   that a producer can bump its epoch after an error (KIP-360); v4 adds
//   PRODUCER_FENCED, v5 TRANSACTION_ABORTABLE. (v6, KIP-939's two-phase
//   commit, is unstable in Kafka 4.1 and not advertised.)
// AddPartitionsToTxn v0-5, flexible from v3: registers partitions in the open
//   transaction (classic protocol). Clients send v0-3 (one transaction); v4+
//   batches several transactions and is what brokers send to verify a
//   partition (VerifyOnly), with TRANSACTION_ABORTABLE from v5.
// AddOffsetsToTxn v0-4, flexible from v3: adds a group's offsets to the
//   transaction before TxnOffsetCommit (classic protocol only).
// EndTxn v0-5, flexible from v3: commits or aborts. v5 (transactions v2,
//   KIP-890 part 2) answers the producer id and epoch to use next: the epoch
//   is bumped at every transaction end.
// TxnOffsetCommit v0-6, flexible from v3: offsets committed with the
//   transaction, sent to the group coordinator. v3 adds the member's identity
//   (KIP-447); v5 does AddOffsetsToTxn's work itself (transactions v2); v6
//   (Kafka 4.4) names topics by id only, in requests and answers, as
//   OffsetCommit v10 does. Callers that send names stay at v5
//   (`default_max_version`, what Connection::version_for picks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/message.hpp"

namespace kwire::protocol {

struct InitProducerIdRequest {
  static constexpr ApiKey api_key = ApiKey::init_producer_id;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 2;

  std::optional<std::string> transactional_id;  // null: an idempotent producer
  std::int32_t transaction_timeout_ms = 0;
  std::int64_t producer_id = -1;     // v3+: the current id when bumping the epoch (KIP-360)
  std::int16_t producer_epoch = -1;  // v3+
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(transactional_id);
    v(transaction_timeout_ms);
    v.since(3, producer_id);
    v.since(3, producer_epoch);
  }
  friend bool operator==(const InitProducerIdRequest&, const InitProducerIdRequest&) = default;
};

struct InitProducerIdResponse {
  static constexpr ApiKey api_key = ApiKey::init_producer_id;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 2;

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = 0;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v(producer_id);
    v(producer_epoch);
  }
  friend bool operator==(const InitProducerIdResponse&, const InitProducerIdResponse&) = default;
};

struct AddPartitionsToTxnRequest {
  static constexpr ApiKey api_key = ApiKey::add_partitions_to_txn;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 3;
  /// The highest version a client sends (v4+ is for brokers).
  static constexpr std::int16_t kClientMaxVersion = 3;

  struct Topic {
    std::string name;
    std::vector<std::int32_t> partitions;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(partitions);
    }
    friend bool operator==(const Topic&, const Topic&) = default;
  };
  struct Transaction {  // v4+
    std::string transactional_id;
    std::int64_t producer_id = -1;
    std::int16_t producer_epoch = -1;
    bool verify_only = false;
    std::vector<Topic> topics;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(transactional_id);
      v(producer_id);
      v(producer_epoch);
      v(verify_only);
      v(topics);
    }
    friend bool operator==(const Transaction&, const Transaction&) = default;
  };

  std::vector<Transaction> transactions;  // v4+
  std::string v3_and_below_transactional_id;
  std::int64_t v3_and_below_producer_id = -1;
  std::int16_t v3_and_below_producer_epoch = -1;
  std::vector<Topic> v3_and_below_topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v.since(4, transactions);
    v.until(3, v3_and_below_transactional_id);
    v.until(3, v3_and_below_producer_id);
    v.until(3, v3_and_below_producer_epoch);
    v.until(3, v3_and_below_topics);
  }
  friend bool operator==(const AddPartitionsToTxnRequest&, const AddPartitionsToTxnRequest&) = default;
};

struct AddPartitionsToTxnResponse {
  static constexpr ApiKey api_key = ApiKey::add_partitions_to_txn;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 3;

  struct PartitionResult {
    std::int32_t partition_index = 0;
    std::int16_t partition_error_code = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(partition_error_code);
    }
    friend bool operator==(const PartitionResult&, const PartitionResult&) = default;
  };
  struct TopicResult {
    std::string name;
    std::vector<PartitionResult> results_by_partition;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(name);
      v(results_by_partition);
    }
    friend bool operator==(const TopicResult&, const TopicResult&) = default;
  };
  struct Result {  // v4+
    std::string transactional_id;
    std::vector<TopicResult> topic_results;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(transactional_id);
      v(topic_results);
    }
    friend bool operator==(const Result&, const Result&) = default;
  };

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;                             // v4+
  std::vector<Result> results_by_transaction;              // v4+
  std::vector<TopicResult> results_by_topic_v3_and_below;  // v0-3
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v.since(4, error_code);
    v.since(4, results_by_transaction);
    v.until(3, results_by_topic_v3_and_below);
  }
  friend bool operator==(const AddPartitionsToTxnResponse&, const AddPartitionsToTxnResponse&) = default;
};

struct AddOffsetsToTxnRequest {
  static constexpr ApiKey api_key = ApiKey::add_offsets_to_txn;
  static constexpr std::int16_t min_version = 0, max_version = 4, flexible_since = 3;

  std::string transactional_id;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::string group_id;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(transactional_id);
    v(producer_id);
    v(producer_epoch);
    v(group_id);
  }
  friend bool operator==(const AddOffsetsToTxnRequest&, const AddOffsetsToTxnRequest&) = default;
};

struct AddOffsetsToTxnResponse {
  static constexpr ApiKey api_key = ApiKey::add_offsets_to_txn;
  static constexpr std::int16_t min_version = 0, max_version = 4, flexible_since = 3;

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
  }
  friend bool operator==(const AddOffsetsToTxnResponse&, const AddOffsetsToTxnResponse&) = default;
};

struct EndTxnRequest {
  static constexpr ApiKey api_key = ApiKey::end_txn;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 3;

  std::string transactional_id;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  bool committed = false;  // true: commit, false: abort
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(transactional_id);
    v(producer_id);
    v(producer_epoch);
    v(committed);
  }
  friend bool operator==(const EndTxnRequest&, const EndTxnRequest&) = default;
};

struct EndTxnResponse {
  static constexpr ApiKey api_key = ApiKey::end_txn;
  static constexpr std::int16_t min_version = 0, max_version = 5, flexible_since = 3;

  std::int32_t throttle_time_ms = 0;
  std::int16_t error_code = 0;
  std::int64_t producer_id = -1;     // v5+: the id for the next transaction
  std::int16_t producer_epoch = -1;  // v5+: the epoch for the next transaction
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(throttle_time_ms);
    v(error_code);
    v.since(5, producer_id);
    v.since(5, producer_epoch);
  }
  friend bool operator==(const EndTxnResponse&, const EndTxnResponse&) = default;
};

struct TxnOffsetCommitRequest {
  static constexpr ApiKey api_key = ApiKey::txn_offset_commit;
  static constexpr std::int16_t min_version = 0, max_version = 6, flexible_since = 3;
  static constexpr std::int16_t default_max_version = 5;  // v6 needs topic ids

  struct Partition {
    std::int32_t partition_index = 0;
    std::int64_t committed_offset = -1;
    std::int32_t committed_leader_epoch = -1;  // v2+
    std::optional<std::string> committed_metadata;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(committed_offset);
      v.since(2, committed_leader_epoch);
      v(committed_metadata);
    }
    friend bool operator==(const Partition&, const Partition&) = default;
  };
  struct Topic {
    std::string name;  // up to v5
    std::vector<Partition> partitions;
    TaggedFields unknown_tagged_fields;
    Uuid topic_id = {};  // v6+, in place of the name on the wire (last here, so {name, partitions, tags} stays)
    template <class V>
    void fields(V& v) {
      v.until(5, name);
      v.since(6, topic_id);
      v(partitions);
    }
    friend bool operator==(const Topic&, const Topic&) = default;
  };

  std::string transactional_id;
  std::string group_id;
  std::int64_t producer_id = -1;
  std::int16_t producer_epoch = -1;
  std::int32_t generation_id = -1;               // v3+
  std::string member_id;                         // v3+
  std::optional<std::string> group_instance_id;  // v3+, nullable
  std::vector<Topic> topics;
  TaggedFields unknown_tagged_fields;

  template <class V>
  void fields(V& v) {
    v(transactional_id);
    v(group_id);
    v(producer_id);
    v(producer_epoch);
    v.since(3, generation_id);
    v.since(3, member_id);
    v.since(3, group_instance_id);
    v(topics);
  }
  friend bool operator==(const TxnOffsetCommitRequest&, const TxnOffsetCommitRequest&) = default;
};

struct TxnOffsetCommitResponse {
  static constexpr ApiKey api_key = ApiKey::txn_offset_commit;
  static constexpr std::int16_t min_version = 0, max_version = 6, flexible_since = 3;

  struct Partition {
    std::int32_t partition_index = 0;
    std::int16_t error_code = 0;
    TaggedFields unknown_tagged_fields;
    template <class V>
    void fields(V& v) {
      v(partition_index);
      v(error_code);
    }
    friend bool operator==(const Partition&, const Partition&) = default;
  };
  struct Topic {
    std::string name;  // up to v5
    std::vector<Partition> partitions;
    TaggedFields unknown_tagged_fields;
    Uuid topic_id = {};  // v6+, in place of the name on the wire (last here, so {name, partitions, tags} stays)
    template <class V>
    void fields(V& v) {
      v.until(5, name);
      v.since(6, topic_id);
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
  friend bool operator==(const TxnOffsetCommitResponse&, const TxnOffsetCommitResponse&) = default;
};

}  // namespace kwire::protocol
