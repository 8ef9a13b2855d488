// Idempotent-producer state and a transaction coordinator on a MockCluster,
// kept as a Kafka broker keeps them (ProducerStateManager and
// TransactionCoordinator), for producer tests.
//
// Produce: each batch with a producer id is checked against the partition's
// state of that producer: an older epoch is INVALID_PRODUCER_EPOCH; a newer
// epoch must start at sequence 0 (else OUT_OF_ORDER_SEQUENCE_NUMBER); within
// an epoch the first sequence must follow the last one written, except that
// a copy of one of the last 5 batches is answered with the offset it was
// written at and not appended again. A producer the partition has no state
// for is taken at any sequence (Kafka 2.5+). A transactional batch must be in
// its transaction: added with AddPartitionsToTxn, or (transactions v2,
// Produce v12+) added by the write itself.
//
// Coordinator calls (handlers set on the cluster): FindCoordinator answers
// the coordinator node for any key; InitProducerId hands out ids (and for a
// transactional id fences the older epoch, aborting its open transaction, or
// bumps the epoch when asked with the current one, KIP-360); AddPartitionsToTxn,
// AddOffsetsToTxn, TxnOffsetCommit and EndTxn check the id and epoch
// (PRODUCER_FENCED for an older one) and the state; EndTxn v5 bumps the
// epoch (transactions v2). A coordinator moved with set_coordinator() makes
// the old node answer NOT_COORDINATOR. No transaction markers are written.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kwire/mock/mock_cluster.hpp"
#include "kwire/protocol/topic_partition.hpp"

namespace kwire::mock {

class MockTransactions {
 public:
  /// Installs the checks and handlers on `cluster`. `v2`: the cluster has
  /// transaction.version 2 finalized (transactions v2, KIP-890).
  explicit MockTransactions(MockCluster& cluster, bool v2 = false);
  ~MockTransactions();
  MockTransactions(const MockTransactions&) = delete;
  MockTransactions& operator=(const MockTransactions&) = delete;

  /// The node FindCoordinator names (default: node 1). Moving it makes the
  /// previous node answer NOT_COORDINATOR to the coordinator calls.
  void set_coordinator(std::int32_t node);
  /// The next `times` answers of a coordinator call (InitProducerId,
  /// AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn,
  /// FindCoordinator) carry `code`; the request is otherwise ignored.
  void fail_next(protocol::ApiKey api, protocol::ErrorCode code, int times = 1);
  /// The next `times` produce batches of the partition get `code` (checked
  /// before the sequence rules; not written). Codes queue up; NONE lets a
  /// batch through as usual.
  void fail_produce(const std::string& topic, std::int32_t partition, protocol::ErrorCode code, int times = 1);
  /// The partition forgets every producer (as when retention removed their
  /// batches): the next batch of a producer is taken at any sequence.
  void forget_producers(const std::string& topic, std::int32_t partition);
  /// Copies of a recent batch are answered DUPLICATE_SEQUENCE_NUMBER (older
  /// brokers) instead of the offset they were written at.
  void duplicates_as_error(bool on);

  /// One batch written to a partition.
  struct Written {
    std::int64_t producer_id = -1;
    std::int16_t producer_epoch = -1;
    std::int32_t first_sequence = -1;
    std::int32_t last_sequence = -1;
    std::int64_t base_offset = -1;
    bool transactional = false;
    friend bool operator==(const Written&, const Written&) = default;
  };
  std::vector<Written> written(const std::string& topic, std::int32_t partition) const;
  /// Batches answered as copies of earlier ones (not written again).
  int duplicates() const;
  /// Batches refused with OUT_OF_ORDER_SEQUENCE_NUMBER.
  int out_of_order() const;

  struct Transaction {
    std::string state;  // Empty, Ongoing, CompleteCommit, CompleteAbort
    std::int64_t producer_id = -1;
    std::int16_t producer_epoch = -1;
    std::set<protocol::TopicPartition> partitions;
    std::set<std::string> groups;
    int commits = 0;
    int aborts = 0;
  };
  std::optional<Transaction> transaction(const std::string& transactional_id) const;
  /// Offsets a group got from committed transactions (TxnOffsetCommit).
  std::map<protocol::TopicPartition, std::int64_t> committed_offsets(const std::string& group) const;

  struct State;

 private:
  std::shared_ptr<State> st_;
};

}  // namespace kwire::mock
