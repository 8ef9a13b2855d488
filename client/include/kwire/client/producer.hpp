// The producer, with the Java producer's configuration names and meanings
// (ProducerConfig) and its architecture: send() appends the record to its
// partition's open batch on the caller's thread (RecordAccumulator); one
// sender thread, with its own KafkaClient and connections, sends the batches
// that are full (batch.size), have waited linger.ms, or are flushed, as
// pipelined Produce requests, up to max.in.flight.requests.per.connection per
// broker, and completes each record with its partition, offset and timestamp
// or a typed error.
//
// Configuration (units in the names; defaults as Java's unless noted):
//   acks (all), linger.ms (5), batch.size (16384 bytes of records per batch),
//   buffer.memory (33554432 bytes buffered in total; a send() that finds it
//   full waits up to max.block.ms (60000) and then throws BufferExhaustedError),
//   compression.type (none), max.request.size (1048576), request.timeout.ms
//   (30000, one attempt), delivery.timeout.ms (120000: from send() to the
//   record's outcome, retries included), retries (unbounded when not given;
//   delivery.timeout.ms ends retrying), retry.backoff.ms / retry.backoff.max.ms
//   (KIP-580: doubling with 20% jitter), max.in.flight.requests.per.connection
//   (5).
//
// Idempotence (KIP-98; on by default since Kafka 3.0, KIP-679):
//   enable.idempotence=true (the default) implies acks=all and at most 5
//   requests in flight per broker. The producer gets a producer id and epoch
//   (InitProducerId) and numbers each partition's batches; the broker keeps the
//   last 5 batches of each producer per partition and writes a resent batch
//   once. Order is kept across retries with up to 5 batches in flight: a batch
//   that must be retried is resent before any later one of its partition.
//   DUPLICATE_SEQUENCE_NUMBER is a success. OUT_OF_ORDER_SEQUENCE_NUMBER and
//   UNKNOWN_PRODUCER_ID (the broker lost the producer's state) are retried
//   after bumping the epoch and numbering from 0 again (KIP-360), once no batch
//   of unknown fate is left in flight. A batch that expires in the queue
//   (delivery.timeout.ms) was never numbered, so it leaves no gap. When
//   enable.idempotence is not given and acks is not all, retries is 0 or
//   max.in.flight.requests.per.connection is above 5, idempotence is off (as in
//   Java); given as true with those, the constructor throws ConfigError.
//   A cluster whose ACLs deny IDEMPOTENT_WRITE answers
//   CLUSTER_AUTHORIZATION_FAILED: IdempotenceDeniedError, which names
//   enable.idempotence=false.
//
// Transactions (KIP-98; transactions v2, KIP-890, when the cluster's
// finalized transaction.version is 2 or more, e.g. new Kafka 4 clusters; the
// classic protocol otherwise, e.g. Kafka 3.9): set transactional.id, call
// init_transactions() once (it fences older producers of the id and
// completes their open transaction), then begin_transaction(), send(),
// send_offsets_to_transaction(), commit_transaction() or
// abort_transaction(). Readers with isolation.level=read_committed see a
// transaction's records once it commits and never those of an aborted one.
// transaction.timeout.ms (60000): the coordinator aborts a transaction open
// longer. The errors and what to do after each:
//   ProducerFencedError        another producer with this transactional.id
//                              started: close this one (fatal).
//   TransactionAbortableError  the transaction cannot commit: call
//                              abort_transaction(), then begin a new one.
//   ProducerFatalError         anything else this producer cannot recover from
//                              (authorization, an unsupported broker): close it.
// Without a transactional.id, begin/commit/abort throw TransactionStateError.
//
// Partitioning when a record names no partition: with a key,
// murmur2(key) % partitions (Java's default partitioner); without, the
// records stick to one partition until its batch is sent, then move on to the
// next (KIP-480's sticky partitioner).
//
// Thread-safe: send(), flush() and the transaction calls may be called from
// several threads (the transaction calls in the order above). Callbacks run
// on the sender thread: they must be quick and must not call flush(),
// close() or the transaction calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/client/config.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/group.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/types.hpp"
#include "kwire/protocol/record_batch.hpp"

namespace kwire::client {

/// A consumer's group identity as send_offsets_to_transaction() needs it
/// (Java's ConsumerGroupMetadata): Consumer::group_metadata().
using ConsumerGroupMetadata = Consumer::GroupMetadata;

/// A record to send (Java's ProducerRecord). Key, value and header values are
/// copied into the batch by send().
struct ProducerMessage {
  std::string topic;
  std::optional<std::int32_t> partition;  // nullopt: chosen by the partitioner
  std::optional<protocol::Bytes> key;
  std::optional<protocol::Bytes> value;
  std::vector<protocol::RecordHeader> headers;
  std::int64_t timestamp = -1;  // ms since the epoch; -1 = now
};

/// The same record as views into the caller's memory (nothing is kept after
/// send() returns): the form without a copy into owned buffers first.
struct ProducerRecordView {
  std::string_view topic;
  std::optional<std::int32_t> partition;
  std::optional<protocol::ByteSpan> key;
  std::optional<protocol::ByteSpan> value;
  std::span<const protocol::RecordHeader> headers;
  std::int64_t timestamp = -1;
};

/// Where a record was written (Java's RecordMetadata).
struct RecordMetadata {
  TopicPartition partition;
  /// The record's offset; -1 when acks=0 or when the broker answered
  /// DUPLICATE_SEQUENCE_NUMBER (written before, offset not returned).
  std::int64_t offset = -1;
  /// Its timestamp: the record's CreateTime, or the broker's LogAppendTime
  /// when the topic uses that.
  std::int64_t timestamp = -1;
};

/// Completion of one record: `error` is null on success, else the typed error
/// (ProduceError and subclasses, DeliveryTimeoutError, ProducerFencedError,
/// TransactionAbortedError, ...).
using SendCallback = std::function<void(const RecordMetadata& metadata, std::exception_ptr error)>;

/// A produce to one partition that failed: the broker's error code (as
/// KafkaError), the partition, and whether the error is retriable (a later
/// send may succeed; the record was already retried as retries and
/// delivery.timeout.ms allow).
class ProduceError : public KafkaError {
 public:
  ProduceError(TopicPartition tp, std::int16_t code, bool retriable, const std::string& what)
      : KafkaError(code, what), tp_(std::move(tp)), retriable_(retriable) {}
  const TopicPartition& partition() const noexcept { return tp_; }
  bool retriable() const noexcept { return retriable_; }

 private:
  TopicPartition tp_;
  bool retriable_;
};

/// NOT_ENOUGH_REPLICAS (19) or NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) with
/// acks=all: the partition's in-sync replicas are fewer than its
/// min.insync.replicas. Retriable, as Java's NotEnoughReplicas(AfterAppend)
/// Exception; raised once the retries are used up.
class NotEnoughReplicasError : public ProduceError {
 public:
  using ProduceError::ProduceError;
};

/// A record that did not complete within delivery.timeout.ms (Java's
/// TimeoutException "Expiring N record(s)"): code REQUEST_TIMED_OUT (7), or
/// the last error its partition got. When it had been sent without an answer,
/// it may still have been written.
class DeliveryTimeoutError : public ProduceError {
 public:
  using ProduceError::ProduceError;
};

/// A record larger than max.request.size or buffer.memory (Java's
/// RecordTooLargeException), refused by send() before it is queued; code
/// MESSAGE_TOO_LARGE (10). Not retriable: the record is never sent.
class RecordTooLargeError : public ProduceError {
 public:
  using ProduceError::ProduceError;
};

/// buffer.memory stayed full for max.block.ms while send() waited for room
/// (Java's BufferExhaustedException): the producer cannot send as fast as
/// records are given to it.
class BufferExhaustedError : public TimeoutError {
 public:
  using TimeoutError::TimeoutError;
};

/// The cluster refused InitProducerId for an idempotent producer with
/// CLUSTER_AUTHORIZATION_FAILED: its ACLs do not allow IDEMPOTENT_WRITE to
/// this principal. Grant it, or set enable.idempotence=false. Fatal.
class IdempotenceDeniedError : public KafkaError {
 public:
  using KafkaError::KafkaError;
};

/// Another producer with the same transactional.id has called
/// init_transactions() (PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH from a
/// coordinator): this producer can do nothing more; close it. Fatal.
class ProducerFencedError : public KafkaError {
 public:
  using KafkaError::KafkaError;
};

/// The open transaction cannot commit (a record of it failed,
/// TRANSACTION_ABORTABLE, an authorization error on a topic or group, the
/// broker lost the producer's state): call abort_transaction(), then begin a
/// new transaction. The code is the error that caused it.
class TransactionAbortableError : public KafkaError {
 public:
  using KafkaError::KafkaError;
};

/// An error this producer cannot recover from (TRANSACTIONAL_ID_AUTHORIZATION_
/// FAILED, INVALID_TXN_STATE, an unsupported broker, a broken sequence in a
/// transaction): close it and create a new one. Every later call throws it again.
class ProducerFatalError : public KafkaError {
 public:
  using KafkaError::KafkaError;
};

/// A record of a transaction that was aborted before the record was sent.
class TransactionAbortedError : public ClientError {
 public:
  using ClientError::ClientError;
};

/// A call made in the wrong transaction state (begin_transaction() twice,
/// commit without begin, send() outside a transaction of a transactional
/// producer, a transaction call without transactional.id): fix the calling code.
class TransactionStateError : public ClientError {
 public:
  using ClientError::ClientError;
};

/// Java's murmur2 as used by its default partitioner (returns the raw hash).
std::int32_t murmur2(protocol::ByteSpan data) noexcept;

/// Counters of one producer (cumulative).
struct ProducerStats {
  std::uint64_t records_sent = 0;    // acknowledged
  std::uint64_t records_failed = 0;  // completed with an error
  std::uint64_t batches_sent = 0;    // acknowledged batches
  std::uint64_t requests = 0;        // Produce requests sent (retries included)
  std::uint64_t retries = 0;         // batches sent again
  std::uint64_t max_in_flight = 0;   // most Produce requests in flight to one broker at once
  std::uint64_t epoch_bumps = 0;     // KIP-360 epoch bumps
  std::uint64_t transactions_committed = 0;
  std::uint64_t transactions_aborted = 0;
};

class Producer {
 public:
  /// Properties written inline: Producer x({{"bootstrap.servers", "host:9092"}}).
  Producer(std::initializer_list<std::pair<const std::string, std::string>> properties)
      : Producer(std::map<std::string, std::string>(properties)) {}
  /// Throws ConfigError for a bad or contradictory configuration.
  explicit Producer(const std::map<std::string, std::string>& properties);
  explicit Producer(ClientConfig config);
  /// close() with no time limit, errors swallowed.
  ~Producer();
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  /// Appends a record to its partition's batch and returns (waiting up to
  /// max.block.ms for metadata and for room in buffer.memory). `callback`
  /// runs once, on the sender thread, when the record is written or has
  /// failed. Without a callback, a failure is reported by the next flush()
  /// (the first one since the last flush()), so a send-then-flush loop sees
  /// every failure. Throws at once: ClientError for a partition that does not
  /// exist, KafkaError for a topic that does not exist, BufferExhaustedError,
  /// ClientError("record too large") for a record above max.request.size or
  /// buffer.memory, TransactionStateError outside a transaction of a
  /// transactional producer, the fatal error of a producer that has one.
  void send(const ProducerRecordView& record, SendCallback callback = nullptr);
  void send(const ProducerMessage& record, SendCallback callback = nullptr);
  /// send() returning a future of the record's metadata (the error as the
  /// future's exception).
  std::future<RecordMetadata> send_future(const ProducerRecordView& record);
  std::future<RecordMetadata> send_future(const ProducerMessage& record);

  /// Sends every record given so far at once (linger.ms ignored) and waits
  /// until each has completed. Throws the first error of a record sent
  /// without a callback since the last flush() (ProduceError naming the
  /// partition, NotEnoughReplicasError for 19/20, DeliveryTimeoutError...).
  void flush();

  /// Sends what is buffered and waits up to `timeout` for it to complete,
  /// then stops the sender; records still unsent fail with ClientError
  /// ("producer closed"). An open transaction is aborted by the broker after
  /// transaction.timeout.ms (or by the next init_transactions() of the id).
  /// Idempotent; later sends throw ClientError.
  void close(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());

  // ---- transactions (transactional.id set) ----

  /// Gets the producer id and epoch for transactional.id from its
  /// coordinator, fencing older producers of the id and completing their
  /// open transaction. Once, before the first transaction. Throws
  /// ProducerFatalError (TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
  /// INVALID_TRANSACTION_TIMEOUT...), TimeoutError after max.block.ms.
  void init_transactions();
  /// Starts a transaction (local: nothing is sent until the first record).
  void begin_transaction();
  /// Adds a consumer group's offsets to the transaction: they are committed
  /// with it (and dropped if it aborts). `group` is the consumer's
  /// group_metadata() (its generation and member id fence zombie members,
  /// KIP-447). Throws TransactionAbortableError (e.g. GROUP_AUTHORIZATION_FAILED),
  /// ProducerFencedError, ProducerFatalError.
  void send_offsets_to_transaction(const std::map<TopicPartition, OffsetAndMetadata>& offsets,
                                   const ConsumerGroupMetadata& group);
  /// Flushes, then commits. Throws TransactionAbortableError when a record
  /// of the transaction failed (nothing of it is visible; abort and retry),
  /// ProducerFencedError, ProducerFatalError, TimeoutError (the outcome is
  /// unknown: call commit again, or abort).
  void commit_transaction();
  /// Drops the records not sent yet (their callbacks get
  /// TransactionAbortedError), waits for those in flight, and aborts.
  void abort_transaction();

  /// Counters so far.
  ProducerStats stats() const;
  /// Connections made and SASL sessions renewed by the sender's client.
  KafkaClient::ConnectionStats connection_stats() const;
  /// Records acknowledged so far.
  std::uint64_t records_sent() const { return stats().records_sent; }
  /// Whether this producer is idempotent (enable.idempotence, decided at construction).
  bool idempotent() const noexcept;
  /// Whether transactions v2 (KIP-890) are used: known after init_transactions().
  bool transactions_v2() const;
  /// The current producer id and epoch (-1 before the first InitProducerId).
  std::pair<std::int64_t, std::int16_t> producer_id_and_epoch() const;
  const ClientConfig& config() const noexcept;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kwire::client
