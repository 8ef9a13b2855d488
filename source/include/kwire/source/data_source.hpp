// The Kafka source for engines that plan and schedule themselves: the driver
// side plans as Spark's Kafka source does, the executor side reads one planned
// range. PySpark's Python data source format("kwire") is built on these two
// (python/src/kwire/spark.py); anything else that hands offset ranges to
// workers can be too.
//
//  - SourcePlanner (driver): one admin client kept for the query's life (one
//    set of connections, whatever the number of triggers); batch planning as
//    Spark 4.2's KafkaBatch, streaming offsets (initial, latest, rate limit)
//    and micro-batch ranges as its KafkaMicroBatchStream;
//  - RangeReadSession (executor): one consumer kept across reads (Spark pools
//    its executors' consumers the same way), reading a range with RangeReader
//    and Spark's reader rules; ends left unresolved by the planner (earliest,
//    latest) are bound when the read starts, as Spark's executors bind them.
//
// The planner decides what the executor needs (reader_spec()): the client
// properties, failOnDataLoss, kafkaConsumer.pollTimeoutMs, includeHeaders and
// the executor group id named in data-loss messages.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kwire/source/options.hpp"
#include "kwire/source/planning.hpp"
#include "kwire/source/range_reader.hpp"
#include "kwire/source/sink.hpp"

namespace kwire::client {
class Consumer;
class KafkaClient;
}  // namespace kwire::client

namespace kwire::source {

/// The reader settings of one query as an option map, Spark's names where
/// Spark has one: "kafka.<property>" for each client property (group.id
/// left out), "failOnDataLoss", "includeHeaders", "kafkaConsumer.pollTimeoutMs",
/// and "executorGroupId" (the group named in COULD_NOT_READ_OFFSET_RANGE).
using ReaderSpec = std::map<std::string, std::string>;

class SourcePlanner {
 public:
  /// Parses `options` for `mode` (SourceOptionError with Spark's texts; the
  /// option warnings go to warnings.hpp's handler). The admin client connects
  /// when a method first needs the brokers.
  SourcePlanner(const std::map<std::string, std::string>& options, QueryMode mode);
  ~SourcePlanner();
  SourcePlanner(const SourcePlanner&) = delete;
  SourcePlanner& operator=(const SourcePlanner&) = delete;

  const SourceOptions& options() const noexcept { return options_; }

  /// What an executor needs to read this query's ranges (RangeReadSession).
  /// Made once: its executor group id is that of the whole query, as Spark
  /// makes one per query run ("spark-kafka-relation-<uuid>-executor" in
  /// batch; "spark-kafka-source-<uuid>-executor" in streaming, where Spark
  /// also appends a hash of the checkpoint path, which a planner is not told;
  /// kafka.group.id when set).
  const ReaderSpec& reader_spec() const noexcept { return reader_spec_; }

  /// The partitions of the subscription now, sorted (KafkaError for a
  /// missing subscribed or assigned topic, after fetchOffset.numRetries).
  std::vector<TopicPartition> partitions();

  // ---- Batch queries ----

  /// The Spark partitions of a batch query, as Spark 4.2 plans them
  /// (KafkaOffsetReaderAdmin.getOffsetRangesFromUnresolvedOffsets):
  ///  - one range per partition of the subscription, empty ones included
  ///    (Spark runs a task for each); startingOffsets / endingOffsets
  ///    earliest and latest stay unresolved (kEarliestOffset = -2,
  ///    kLatestOffset = -1, also inside JSON offsets), timestamps are
  ///    resolved now (a timestamp end with no record is latest);
  ///  - a start above its end, both known, is BatchOffsetError
  ///    (RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET);
  ///  - the ranges are split only when minPartitions exceeds the number of
  ///    partitions or some range is larger than maxRecordsPerPartition, the
  ///    size being computed on the unresolved values (so an end at latest is
  ///    never split by maxRecordsPerPartition, as in Spark). Then both ends are
  ///    resolved, split_ranges() splits (dropping empty ranges), and each
  ///    partition's first start and last end go back to their unresolved form.
  /// Ranges in topic-partition order, each partition's parts in offset order.
  std::vector<OffsetRange> batch_ranges();

  // ---- Streaming queries (offsets are the next offset to read) ----

  /// startingOffsets / startingTimestamp / startingOffsetsByTimestamp of a
  /// new query, resolved for every partition of the subscription (default
  /// latest; -1 / -2 in JSON offsets resolved too), as the streaming query
  /// does for its batch 0.
  PartitionOffsets initial_offsets();
  /// The latest offsets of every partition of the subscription; a partition
  /// whose latest offset is below the one `known` has is listed again
  /// (KAFKA-7703, fetchOffset.numRetries times), as Spark's latestOffset.
  PartitionOffsets latest_offsets(const PartitionOffsets& known);
  /// Spark's rateLimit of `limit` offsets from `start` towards `latest`
  /// (planning.hpp rate_limit); a partition of `latest` absent from `start`
  /// counts from its earliest offset, listed here.
  PartitionOffsets rate_limit(std::int64_t limit, const PartitionOffsets& start, const PartitionOffsets& latest);
  /// The ranges of micro-batch [start, end) with Spark's planning data-loss
  /// rules (plan_batch; DataLossError with failOnDataLoss=true, warnings in
  /// the plan otherwise, also given to warnings.hpp's handler). The earliest
  /// offsets of new partitions are listed here.
  BatchPlan plan_micro_batch(const PartitionOffsets& start, const PartitionOffsets& end);

 private:
  client::KafkaClient& admin();
  PartitionOffsets earliest_of_new(const PartitionOffsets& known, const PartitionOffsets& wanted);

  SourceOptions options_;
  ReaderSpec reader_spec_;
  std::unique_ptr<client::KafkaClient> admin_;
};

/// Executor side: reads ranges planned by a SourcePlanner with one consumer,
/// kept from one read to the next (the fetch session and connections stay).
class RangeReadSession {
 public:
  /// `spec` is a planner's reader_spec(). Throws SourceOptionError for a
  /// malformed spec, ConfigError for bad client properties.
  explicit RangeReadSession(const ReaderSpec& spec);
  ~RangeReadSession();
  RangeReadSession(const RangeReadSession&) = delete;
  RangeReadSession& operator=(const RangeReadSession&) = delete;

  bool include_headers() const noexcept { return options_.include_headers; }

  /// Reads `range` into `sink` (Sink::write only). An end that is
  /// kEarliestOffset / kLatestOffset is bound now to the partition's earliest /
  /// latest offset (the last stable offset under read_committed); a range
  /// whose start is then at or past its end reads nothing. Errors as
  /// RangeReader::read (DataLossError, client::TimeoutError after
  /// kafkaConsumer.pollTimeoutMs without progress, client errors). After an
  /// error the consumer is replaced before the next read, as Spark does
  /// after a failed task.
  RangeReadResult read(const OffsetRange& range, Sink& sink);

 private:
  std::map<std::string, std::string> client_properties_;
  RangeReaderOptions options_;
  std::unique_ptr<client::Consumer> consumer_;
};

}  // namespace kwire::source
