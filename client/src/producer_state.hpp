// The producer's idempotence and transaction state (internal), as Java's
// TransactionManager keeps it: the producer id and epoch, each partition's
// next sequence and last acknowledged one, the sequences still unresolved,
// whether an epoch bump is due (KIP-360), and the transaction state machine
// with its abortable and fatal errors.
//
// Sequences are only touched by the sender thread; the transaction state and
// the producer id are read by the callers' threads too, under a mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "kwire/client/producer.hpp"
#include "producer_batch.hpp"

namespace kwire::client {

enum class TxnState {
  uninitialized,    // init_transactions() not called yet
  ready,            // between transactions
  in_transaction,   // begin_transaction() called
  committing,       // commit_transaction() running
  aborting,         // abort_transaction() running
  abortable_error,  // the transaction must be aborted
  fatal_error,      // nothing more can be done
};
const char* to_string(TxnState s) noexcept;

class ProducerState {
 public:
  ProducerState(bool idempotent, std::string transactional_id);

  bool idempotent() const noexcept { return idempotent_; }
  bool transactional() const noexcept { return !transactional_id_.empty(); }
  const std::string& transactional_id() const noexcept { return transactional_id_; }

  // ---- producer id (any thread) ----
  struct Id {
    std::int64_t id = -1;
    std::int16_t epoch = -1;
  };
  Id id() const;
  /// A new id or epoch: every partition's sequences start at 0 again
  /// (sender thread).
  void set_id(Id id);
  bool has_id() const { return id().id >= 0; }

  // ---- transactions (any thread) ----
  TxnState state() const;
  /// Throws what a call in the current state must throw: the fatal error,
  /// the abortable error (when `abortable_throws`), TransactionStateError.
  void check(bool abortable_throws) const;
  /// Moves to `to` when the state is one of `from` (else TransactionStateError naming `call`).
  void transition(std::initializer_list<TxnState> from, TxnState to, const char* call);
  void set_state(TxnState s);
  /// The transaction must be aborted because of `error` (kept for the
  /// callers; `bump` when the epoch must be bumped after the abort, KIP-360).
  void abortable(std::exception_ptr error, bool bump);
  /// Nothing more can be done.
  void fatal(std::exception_ptr error);
  std::exception_ptr fatal_error() const;
  std::exception_ptr abortable_error() const;
  bool bump_after_abort() const;
  void clear_abortable();
  /// Transactions v2 (KIP-890) in use (decided at init_transactions()).
  bool v2() const;
  void set_v2(bool on);
  /// Something was sent to the coordinators in this transaction (partitions
  /// or offsets): EndTxn is needed to finish it.
  bool started() const;
  void set_started(bool on);

  // ---- sequences (sender thread only) ----
  /// Numbers a batch that has no sequence yet (first send, or after an epoch
  /// bump) with the partition's next sequence and the current id and epoch.
  void number(ProducerBatch& b);
  /// A batch was written (or was a duplicate of one written).
  void acknowledged(const ProducerBatch& b);
  /// A numbered batch completed with an error: its sequence is no longer pending.
  void failed(const ProducerBatch& b);
  /// A numbered batch failed that the broker surely did not write (its last
  /// attempt was refused): the batches numbered after it move down by its
  /// record count, so that it leaves no gap (as Java's
  /// adjustSequencesDueToFailedBatch). False when it was numbered under an
  /// earlier id or epoch (nothing to move).
  bool unnumber(const ProducerBatch& b);
  /// A numbered batch of this partition with a lower sequence is still
  /// pending (queued for a retry or in flight).
  bool earlier_pending(const ProducerBatch& b) const;
  /// The partition's last acknowledged sequence (-1: none since the last reset).
  std::int32_t last_acknowledged(const TopicPartition& tp) const;
  /// Batches of the partition in flight.
  int in_flight(const TopicPartition& tp) const;
  void sent(const TopicPartition& tp);
  void answered(const TopicPartition& tp);
  /// Partitions added to the open transaction (transactions v1).
  bool added(const TopicPartition& tp) const;
  void add(const TopicPartition& tp);
  void clear_added();

  /// An epoch bump is due (idempotent producer: OUT_OF_ORDER_SEQUENCE_NUMBER
  /// on the next sequence, UNKNOWN_PRODUCER_ID, a numbered batch that failed).
  bool bump_due() const noexcept { return bump_due_; }
  void request_bump() noexcept { bump_due_ = true; }
  void bump_done() noexcept { bump_due_ = false; }

 private:
  struct Partition {
    std::int32_t next = 0;           // next batch's base sequence
    std::int32_t last_acked = -1;    // last sequence written
    std::set<std::int32_t> pending;  // base sequences not completed
    int in_flight = 0;
  };
  const bool idempotent_;
  const std::string transactional_id_;

  mutable std::mutex mu_;
  Id id_;
  TxnState state_ = TxnState::uninitialized;
  std::exception_ptr fatal_;
  std::exception_ptr abortable_;
  // Set with fatal_ or abortable_ (under mu_): check() reads it without the lock.
  std::atomic<bool> errored_{false};
  bool bump_after_abort_ = false;
  bool v2_ = false;
  bool started_ = false;

  // sender thread only
  std::map<TopicPartition, Partition> partitions_;
  std::set<TopicPartition> added_;
  bool bump_due_ = false;
};

}  // namespace kwire::client
