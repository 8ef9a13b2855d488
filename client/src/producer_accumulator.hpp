// The producer's record accumulator (internal), as Java's RecordAccumulator:
// one queue of batches per partition, filled by send() on the callers'
// threads and drained by the sender thread.
//
// A record goes into its partition's last batch while that batch has room
// (batch.size bytes of records; a larger record gets a batch of its own);
// otherwise the last batch is closed and a new one opened. Each open batch
// holds max(batch.size, its first record) bytes of buffer.memory until it
// completes; append() waits up to max.block.ms for room and then throws
// BufferExhaustedError. A queue's head batch is ready to send when it is
// closed, when linger.ms has passed since it was opened, when a flush covers
// it, or when the producer closes; a batch that is retried is put back at the
// head of its queue, in sequence order, and is ready again after its back-off.
//
// Thread-safe (one mutex); callbacks are never run under it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "producer_batch.hpp"

namespace kwire::client {

class RecordAccumulator {
  struct Queue;

 public:
  RecordAccumulator(const ClientConfig& config, std::function<void()> wake_sender);

  // ---- callers' threads ----

  /// A topic's queues, found once (a record then names its topic without a
  /// lookup by name); valid as long as the accumulator.
  struct Topic;
  Topic& topic(std::string_view name);

  /// Appends one record to the batch of `topic`'s `partition`. Throws
  /// BufferExhaustedError after max.block.ms without room,
  /// RecordTooLargeError when the record alone is larger than buffer.memory
  /// or max.request.size, ClientError when the producer is closed.
  void append(Topic& topic, std::int32_t partition, std::int64_t timestamp,
              const std::optional<protocol::ByteSpan>& key, const std::optional<protocol::ByteSpan>& value,
              std::span<const protocol::RecordHeader> headers, SendCallback callback);

  /// Makes every batch opened so far ready and returns a mark for wait_flushed().
  std::uint64_t begin_flush();
  /// Waits until every batch opened before `mark` has completed (or `until`
  /// passed: false).
  bool wait_flushed(std::uint64_t mark, Clock::time_point until = Clock::time_point::max());

  /// From now on every batch is ready at once; appends throw ClientError.
  void close();
  bool closed() const;

  // ---- the sender thread ----

  /// Takes the ready head batches: for each partition whose head batch is
  /// ready, `take(tp, head)` says whether the sender sends it now (it keeps
  /// its own per-broker limits). Taken batches are closed and handed over in
  /// `out`. Returns when the next batch becomes ready by time (linger.ms or a
  /// back-off ending; time_point::max() when nothing waits).
  Clock::time_point drain(Clock::time_point now,
                          const std::function<bool(const TopicPartition&, const ProducerBatch&)>& take,
                          std::vector<BatchPtr>& out);
  /// Every partition that has had a queue (with batches or not), and how
  /// many there are: the count changes without the lock, so a caller can
  /// keep the list and ask again only when it changed.
  std::vector<TopicPartition> partitions() const;
  std::size_t partition_count() const noexcept { return queue_count_.load(std::memory_order_acquire); }
  /// Whether one of `tps` has queued batches (for the metadata they need).
  bool any_queued(std::span<const TopicPartition> tps) const;
  /// Removes the queued batches whose delivery.timeout.ms has passed (into
  /// `out`); returns the earliest deadline left.
  Clock::time_point expire(Clock::time_point now, std::vector<BatchPtr>& out);
  /// Removes every queued batch (an aborted transaction, a forced close).
  void take_all(std::vector<BatchPtr>& out);
  /// Puts a batch to be retried back at the head of its queue, before any
  /// batch with a higher sequence or without one.
  void reenqueue(BatchPtr batch);
  /// A completed batch: gives its memory back and wakes flush() waiters.
  void release(BatchPtr batch);
  /// No batch is queued.
  bool empty() const;
  /// Number of queued batches (all partitions).
  std::size_t queued_batches() const;
  /// Moves the sequences of the partition's queued batches numbered after
  /// `from` down by `by` (a batch before them failed unwritten).
  void shift_sequences(const TopicPartition& tp, std::int32_t from, std::int32_t by);
  /// A queued batch went unanswered last time (it may have been written).
  bool any_fate_unknown() const;
  /// Clears the sequences of every queued batch (after an epoch bump: they
  /// are numbered again when sent).
  void reset_sequences();

 private:
  struct Queue {
    std::deque<BatchPtr> batches;
  };

 public:
  struct Topic {
    std::string name;
    std::vector<Queue*> partitions;  // made when a partition gets its first record
  };

 private:
  BatchPtr open_batch(const TopicPartition& tp, std::size_t first_record, std::unique_lock<std::mutex>& lock);
  /// The partition's queue, made when missing (under mu_; queues are never
  /// removed, so the reference stays valid).
  Queue& queue(Topic& topic, std::int32_t partition);

  const ClientConfig& config_;
  std::function<void()> wake_sender_;
  const std::size_t batch_size_;
  const std::size_t buffer_memory_;
  const std::chrono::milliseconds linger_;
  const std::chrono::milliseconds delivery_timeout_;
  const std::chrono::milliseconds max_block_;

  mutable std::mutex mu_;
  std::condition_variable space_cv_;  // buffer.memory freed
  std::condition_variable done_cv_;   // a batch completed
  std::map<TopicPartition, Queue> queues_;
  std::atomic<std::size_t> queue_count_{0};           // queues_.size()
  std::map<std::string, Topic, std::less<>> topics_;  // never removed
  std::size_t used_ = 0;                              // buffer.memory held by batches
  std::size_t spared_ = 0;                            // ... and by the buffers of spare_ (capacity)
  std::uint64_t next_id_ = 1;
  std::uint64_t flush_mark_ = 0;        // batches with a lower id are ready
  std::set<std::uint64_t> incomplete_;  // ids of batches not yet released
  // The buffers of a completed batch, kept for a later one: the records'
  // and the callbacks' (neither allocated and page-faulted in again). The
  // records' count against buffer.memory; the callbacks' are as many as
  // the batches had.
  struct Spare {
    protocol::RecordBatchBuilder builder;
    std::vector<ProducerBatch::Pending> callbacks;
    std::size_t bytes() const noexcept { return builder.capacity(); }
  };
  std::vector<Spare> spare_;
  bool closed_ = false;
};

}  // namespace kwire::client
