// The producer's sender thread (internal), as Java's Sender: it owns a
// KafkaClient (and so its connections), takes ready batches from the
// accumulator, numbers them (idempotence), sends one Produce request per
// broker and drain round, up to max.in.flight.requests.per.connection per
// broker, and completes, retries or fails each batch from the answers.
// It also runs the transaction calls the callers' threads hand it
// (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit,
// EndTxn) over the client's coordinator lookup, when their turn comes: an
// EndTxn only once every batch of the transaction has completed.
//
// The retry rules of one batch (Java's Sender and TransactionManager):
//   success, DUPLICATE_SEQUENCE_NUMBER        complete (offsets from the answer)
//   a lost connection or request time-out      retry; the batch may have been
//                                              written, so it is resent as it was
//   retriable errors (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, ...)
//                                              retry after back-off (metadata
//                                              refreshed for the leader errors)
//   OUT_OF_ORDER_SEQUENCE_NUMBER               idempotent: retry; when no earlier
//                                              batch of the partition is pending,
//                                              bump the epoch first (KIP-360);
//                                              transactional: abortable
//   UNKNOWN_PRODUCER_ID                        idempotent: bump the epoch, retry;
//                                              transactional: abortable
//   TRANSACTION_ABORTABLE, INVALID_PRODUCER_EPOCH (v1)  abortable
//   PRODUCER_FENCED, INVALID_PRODUCER_EPOCH (v2)        fenced (fatal)
//   CLUSTER_AUTHORIZATION_FAILED (idempotent)  fatal: IdempotenceDeniedError
//   anything else                              fail the batch
// A batch fails once `retries` retries are used or delivery.timeout.ms has
// passed; a numbered batch that fails leaves a gap: the idempotent producer
// bumps its epoch (and numbers the waiting batches from 0) once nothing is in
// flight and no batch of unknown fate waits to be resent.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "coordinators.hpp"
#include "kwire/protocol/messages/produce.hpp"
#include "producer_accumulator.hpp"
#include "producer_cluster.hpp"
#include "producer_state.hpp"

namespace kwire::client {

/// A transaction call handed to the sender thread.
struct TxnTask {
  enum class Kind { init, send_offsets, commit, abort };
  Kind kind = Kind::init;
  Clock::time_point deadline = Clock::time_point::max();  // retries end here (max.block.ms)
  bool dropped = false;                                   // abort: the queued batches were failed
  std::map<TopicPartition, OffsetAndMetadata> offsets;
  ConsumerGroupMetadata group;
  std::promise<void> done;
};

class Sender {
 public:
  struct Hooks {
    /// Partition counts (0: unknown) and errors of the topics asked for, after each metadata refresh.
    std::function<void(const std::map<std::string, std::pair<std::int32_t, std::int16_t>>&)> publish_topics;
    /// The error of a record sent without a callback.
    std::function<void(std::exception_ptr)> silent_error;
  };

  Sender(const ClientConfig& config, RecordAccumulator& accumulator, ProducerState& state, Hooks hooks);
  ~Sender();

  void start();
  /// Stops once everything queued has completed, or at `deadline` (what is
  /// left then fails with ClientError "producer closed"). Joins the thread.
  void close(Clock::time_point deadline);
  /// Thread-safe.
  void wake();

  /// Asks for a topic's metadata (published through Hooks::publish_topics).
  void want_topic(const std::string& topic);
  /// Queues a transaction call; its future completes when it has run.
  std::future<void> submit(std::unique_ptr<TxnTask> task);

  ProducerStats stats() const;
  KafkaClient::ConnectionStats connection_stats() const;

 private:
  struct InFlight {
    ProducerCluster::Sent sent;
    std::vector<BatchPtr> batches;
  };

  void run();
  void loop_once();
  // metadata
  void refresh_metadata(Clock::time_point now);
  // idempotence
  void ensure_producer_id(Clock::time_point now);
  void maybe_bump_epoch();
  // sending
  Clock::time_point send_ready(Clock::time_point now);
  void send_request(std::int32_t node, std::vector<BatchPtr> batches, Clock::time_point now);
  std::int16_t produce_version(Connection& conn, const std::vector<BatchPtr>& batches);
  void collect();
  Clock::time_point expire(Clock::time_point now);
  // outcomes (producer_sender_outcome.cpp)
  void on_answer(InFlight& f, const protocol::ProduceResponse& resp, std::int16_t version);
  void on_lost(InFlight& f, std::int16_t code);
  void on_partition(BatchPtr b, std::int16_t code, std::int64_t base_offset, std::int64_t append_time,
                    bool leader_moved = false);
  void complete(BatchPtr b, std::int64_t base_offset, std::int64_t append_time);
  void fail(BatchPtr b, std::exception_ptr error);
  void retry(BatchPtr b, std::int16_t code, bool fate_unknown);
  void fail_all(std::exception_ptr error);
  std::exception_ptr batch_error(const ProducerBatch& b, std::int16_t code, bool exhausted) const;
  // transactions (producer_sender_txn.cpp)
  void run_tasks();
  bool task_ready(const TxnTask& t) const;
  void run_task(TxnTask& t);
  void init_producer_id(Clock::time_point deadline, bool keep_id);
  void send_offsets(const TxnTask& t);
  void end_transaction(bool commit, Clock::time_point deadline);
  /// Transactions v1: AddPartitionsToTxn for the partitions waiting to be
  /// added (one attempt; a retriable error waits out the back-off).
  void add_partitions(Clock::time_point now);
  /// Fails the queued batches once the transaction can only be aborted.
  void fail_queued_if_abortable();
  /// The typed error for a transaction coordinator's (or TxnOffsetCommit's)
  /// code, recorded in the producer's state (fatal or abortable).
  [[noreturn]] void txn_failed(std::int16_t code, const std::string& what);

  const ClientConfig& config_;
  RecordAccumulator& acc_;
  ProducerState& state_;
  Hooks hooks_;
  std::unique_ptr<KafkaClient> client_;
  std::unique_ptr<ProducerCluster> cluster_;
  std::thread thread_;

  // shared with the callers' threads
  mutable std::mutex mu_;
  bool closing_ = false;
  Clock::time_point close_deadline_ = Clock::time_point::max();
  std::set<std::string> wanted_topics_;  // asked for, not yet published
  std::deque<std::unique_ptr<TxnTask>> tasks_;
  ProducerStats stats_;
  KafkaClient::ConnectionStats connection_stats_;
  std::atomic<bool> wake_posted_{false};

  // sender thread only
  std::vector<InFlight> in_flight_;
  std::map<std::int32_t, int> node_in_flight_;
  std::set<std::string> topics_;                // every topic sent to
  std::vector<TopicPartition> acc_partitions_;  // RecordAccumulator::partitions(), as last read
  Clock::time_point expire_check_{};            // expire(): no batch expires before
  bool metadata_due_ = false;
  Clock::time_point metadata_at_{};  // last refresh
  Clock::time_point metadata_not_before_{};
  int metadata_failures_ = 0;
  int init_failures_ = 0;
  Clock::time_point init_not_before_{};
  Coordinators coordinators_;
  std::set<TopicPartition> to_add_;  // transactions v1: partitions to add before their batches go
  int add_failures_ = 0;
  Clock::time_point add_not_before_{};
  // Transactions v2: the next transaction's batches wait until then (see
  // end_transaction()).
  Clock::time_point txn_produce_not_before_{};
};

}  // namespace kwire::client
