// The Kafka sink: a query's rows written to Kafka with the contract of
// Spark's Kafka sink (KafkaSourceProvider / KafkaWriter), and kwire's
// exactly-once mode.
//
// Options, by Spark's names:
//   kafka.bootstrap.servers  required ("Option 'kafka.bootstrap.servers' must
//                            be specified for configuring Kafka producer")
//   kafka.X                  producer property X (Java names); key.serializer
//                            and value.serializer are refused as Spark
//                            refuses them (records are bytes)
//   topic                    every row goes there, overriding a topic column;
//                            without it each row's topic column is used
//   exactlyOnce              kwire's (default false): one transaction per
//                            micro-batch, see below
// Other options are ignored (Spark ignores them too). Errors: SinkOptionError.
//
// Rows: from the Kafka source (write(Row)) a row keeps its key, value,
// headers (includeHeaders=true) and partition, and its topic unless `topic`
// is set, as Spark writes a DataFrame with those columns: the record goes to
// the same partition number. From Arrow (write_arrow) the columns are
// Spark's sink columns (value required; key, topic, partition, headers
// optional; arrow_records.hpp). The record timestamp is the producer's
// current time, as Spark's.
//
// Default mode (Spark's): at-least-once. commit_batch waits for every record
// of the batch to be acknowledged and raises the first failure; a failed
// batch is written again when the query replays it, so a crash may write a
// record twice.
//
// Exactly-once mode (exactlyOnce=true, streaming queries only): the producer
// is transactional, with transactional.id "kwire-query-<query id>" (the
// checkpoint's id, so a restarted query or a stale copy of it fences the
// other; kafka.transactional.id overrides it). Batch N is one transaction:
//   1. begin: the first batch of the sink's life runs init_transactions
//      (which aborts, or finishes committing, whatever an earlier process of
//      the query left open) and reads the query's consumer group (named as
//      the transactional id) with OffsetFetch, require_stable: the group's
//      committed offsets carry "<query id>:<batch id>" of the last batch
//      committed in their metadata. The replay of that very batch over the
//      same offsets was committed before a crash: its rows are counted and
//      dropped, and the query writes commits/N. Any other batch id at or
//      below it means the checkpoint is behind the output (KafkaSinkError).
//   2. the rows are sent in the transaction;
//   3. commit_batch adds the batch's source end offsets to the transaction
//      (TxnOffsetCommit to the group, metadata "<query id>:<batch id>") and
//      commits. Partitions of a source topic deleted since the batch was
//      planned (failOnDataLoss=false) are left out, with a warning: the group
//      coordinator refuses offsets for them (UNKNOWN_TOPIC_OR_PARTITION) and
//      drops those it held, so the replay check of step 1 leaves them out
//      too (one Metadata request for the source topics per batch).
// The query then writes commits/N. A crash before step 3 completes leaves
// an open transaction that the next init_transactions aborts: the batch is
// replayed in a new one. A crash after it leaves commits/N unwritten: the
// replay finds the batch id in the group and writes nothing. Readers with
// isolation.level=read_committed see each row exactly once. The group also
// shows the query's position to lag tools (kafka-consumer-groups). An error
// inside a transaction aborts it (when the producer can still abort) and
// drops the producer: the next batch starts again from step 1.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "kwire/source/arrow.hpp"
#include "kwire/source/sink.hpp"

namespace kwire::client {
class KafkaClient;
class Producer;
struct ProducerRecordView;
}  // namespace kwire::client

namespace kwire::source {

struct KafkaSinkOptions {
  std::map<std::string, std::string> producer_properties;  // the kafka.* options without the prefix
  std::optional<std::string> topic;
  bool exactly_once = false;

  /// Spark's checks (KafkaSourceProvider's sink options). Throws SinkOptionError.
  static KafkaSinkOptions parse(const std::map<std::string, std::string>& options);
};

/// The exactly-once sink found its checkpoint behind what the query wrote to
/// Kafka (see begin_batch).
class KafkaSinkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class KafkaSink : public Sink {
 public:
  /// Turns a source row into its record, as JsonLinesSink's formatter turns
  /// it into a line: `record` comes filled from the row (its topic or the
  /// `topic` option, key, value, headers, partition); the mapper may point
  /// any field at its own memory (valid until its next call) and returns
  /// true, or false to drop the row. Only for write(Row).
  using Mapper = std::function<bool(const Row& row, client::ProducerRecordView& record)>;

  /// `options`: see above. The producer connects at the first batch.
  explicit KafkaSink(const std::map<std::string, std::string>& options, Mapper mapper = {});
  explicit KafkaSink(KafkaSinkOptions options, Mapper mapper = {});
  ~KafkaSink() override;

  void prepare_batch(const BatchContext& context) override;
  /// Exactly-once: throws SinkOptionError when no streaming query called
  /// prepare_batch (a batch query cannot be exactly once), ProducerFencedError
  /// when a newer process of the query took over (then again for every later
  /// batch), KafkaSinkError when the batch id is at or below the last batch
  /// the query committed to Kafka and is not the replay of that very batch
  /// over the same offsets (the checkpoint is behind the output), client
  /// errors.
  void begin_batch(std::int64_t batch_id) override;
  /// Rows of the Kafka source. Throws ArrowRecordError for a row without a
  /// topic and no `topic` option (Spark's text), client errors
  /// (RecordTooLargeError...).
  void write(std::span<const Row> rows) override;
  /// Every row of an Arrow record batch with Spark's sink columns. Throws
  /// ArrowRecordSchemaError / ArrowRecordError (arrow_records.hpp).
  void write_arrow(const ArrowSchema& schema, const ArrowArray& batch);
  /// Waits for the batch's records (at-least-once: raises the first failed
  /// record's error) or commits its transaction. Returns the rows written
  /// (or, for a batch committed before a crash, the rows seen).
  std::int64_t commit_batch(std::int64_t batch_id) override;
  std::string description() const override;

  /// Closes the producer (waits for records in flight).
  void close();

  const KafkaSinkOptions& options() const noexcept { return options_; }
  /// Exactly-once: the transactional id and group ("" before the first batch).
  const std::string& transactional_id() const noexcept { return transactional_id_; }
  /// Exactly-once: the id of the last batch the group says was committed
  /// (-1: none), as read at the sink's first batch and moved by its commits.
  std::int64_t last_committed_batch() const noexcept { return last_committed_; }
  /// Batches found committed before a crash and not written again.
  std::int64_t batches_skipped() const noexcept { return batches_skipped_; }

 private:
  void send(const client::ProducerRecordView& record);
  void open_producer();
  void drop_producer(bool abort) noexcept;
  [[noreturn]] void fail_transaction();
  void read_last_committed_batch();
  checkpoint::PartitionOffsets existing_end();

  KafkaSinkOptions options_;
  Mapper mapper_;
  std::unique_ptr<client::Producer> producer_;
  std::unique_ptr<client::KafkaClient> admin_;  // exactly-once: the group's offsets, the source topics' metadata
  std::optional<BatchContext> context_;         // exactly-once: the batch the query prepared
  std::string transactional_id_;
  std::int64_t last_committed_ = -1;
  checkpoint::PartitionOffsets last_committed_end_;  // the offsets committed with last_committed_
  std::exception_ptr fenced_;                        // set once a newer process took the transactional id
  bool batch_open_ = false;                          // begun, not committed
  std::int64_t batch_id_ = -1;
  std::int64_t batches_skipped_ = 0;
  bool skip_ = false;  // the open batch was committed before a crash
  bool in_txn_ = false;
  std::int64_t rows_ = 0;
  // At-least-once: the first record that failed in the open batch.
  std::mutex error_mu_;
  std::exception_ptr first_error_;
  std::atomic<bool> failed_{false};
};

}  // namespace kwire::source
