// A batch query over Kafka with the semantics of Spark's batch `kafka`
// source (spark.read.format("kafka"), KafkaRelation / KafkaBatch):
//
//  - options by Spark's names, parsed in batch mode (options.hpp):
//    startingOffsets* default to earliest, endingOffsets* to latest; a
//    `latest` start or an `earliest` end (global, or -1 / -2 in the JSON) is a
//    SourceOptionError with Spark's text; maxOffsetsPerTrigger,
//    minOffsetsPerTrigger and maxTriggerDelay are ignored with Spark's warning;
//  - plan() resolves both ends to offsets and returns the ranges [start, end)
//    per partition, end exclusive, split as Spark's KafkaOffsetRangeCalculator
//    does (minPartitions, maxRecordsPerPartition);
//  - read() reads a plan into a sink as one batch (id 0) with RangeReader,
//    so data loss while reading follows Spark's reader rules (failOnDataLoss).
//
// Difference from Spark: Spark binds earliest / latest on the executor when a
// task starts (and on the driver only when ranges must be split); kwire binds
// them when planning, so the plan is a value that can be printed and read
// later with exactly those offsets. Nothing is checkpointed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kwire/source/options.hpp"
#include "kwire/source/planning.hpp"
#include "kwire/source/range_reader.hpp"
#include "kwire/source/sink.hpp"

namespace kwire::client {
class KafkaClient;
}

namespace kwire::source {

/// A resolved start offset above the resolved end offset of a partition
/// (Spark: RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET, an error whatever
/// failOnDataLoss says). what() is "[RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET]
/// The resolved start offset S is greater than the end offset E for topic T
/// partition P."
class BatchOffsetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What a batch query reads.
struct BatchQueryPlan {
  /// Resolved offsets per partition of the subscription (next offset to read;
  /// start <= end for each partition).
  PartitionOffsets start;
  PartitionOffsets end;
  /// Ranges [start, end) sorted by topic-partition, partitions with nothing
  /// to read left out, then split by minPartitions / maxRecordsPerPartition
  /// (split_ranges). Offset counts, not record counts.
  std::vector<OffsetRange> ranges;
  /// Warnings from the options (Spark logs them as WARN).
  std::vector<std::string> warnings;

  /// {"startOffsets":{"t":{"0":0}},"endOffsets":{"t":{"0":5}},
  ///  "ranges":[{"topic":"t","partition":0,"fromOffset":0,"untilOffset":5}]}
  /// (offset maps as checkpoint::offsets_to_json writes them).
  std::string to_json() const;
};

/// What BatchQuery::read did.
struct BatchReadResult {
  std::int64_t rows = 0;         // rows read (RangeReadResult::rows)
  std::int64_t output_rows = 0;  // Sink::commit_batch's count
  /// Spark's dataLoss and offsetOutOfRange metrics (see RangeReadResult).
  std::int64_t data_loss = 0;
  std::int64_t offset_out_of_range = 0;
  /// COULD_NOT_READ_OFFSET_RANGE warnings (failOnDataLoss=false).
  std::vector<std::string> warnings;
  std::int64_t duration_ms = 0;
};

class BatchQuery {
 public:
  /// `options`: Spark's source options, batch mode (kafka.bootstrap.servers
  /// and one of subscribe/subscribePattern/assign required). Throws
  /// SourceOptionError with Spark's messages. Option warnings are printed on
  /// stderr as "WARN ..." and kept in options().warnings.
  explicit BatchQuery(const std::map<std::string, std::string>& options);
  ~BatchQuery();
  BatchQuery(const BatchQuery&) = delete;
  BatchQuery& operator=(const BatchQuery&) = delete;

  /// Lists the subscription's partitions and resolves startingOffsets* and
  /// endingOffsets* for them (detail: offset_lookup.hpp; a timestamp end
  /// without a matching record is latest, a timestamp start follows
  /// startingOffsetsByTimestampStrategy). Under `assign`, a missing partition
  /// is a SourceOptionError; JSON offsets must name every partition. Throws
  /// BatchOffsetError when a start is above its end, client errors on lookups
  /// that fail fetchOffset.numRetries times.
  BatchQueryPlan plan();

  /// Reads `plan.ranges` into `sink` as batch 0 (begin_batch(0), write...,
  /// commit_batch(0)) with one consumer. Throws DataLossError
  /// (COULD_NOT_READ_OFFSET_RANGE, failOnDataLoss=true), client::TimeoutError
  /// (kafkaConsumer.pollTimeoutMs without progress), client errors, and what
  /// the sink throws; with failOnDataLoss=false lost offsets are skipped and
  /// counted, with a warning each.
  BatchReadResult read(const BatchQueryPlan& plan, Sink& sink);

  /// Reads `plan.ranges` with sinks.size() readers at once, each on its own
  /// thread with its own consumer (so its own connections): reader j reads
  /// the j-th of sinks.size() contiguous parts (equal offset counts) of every
  /// partition's span (partition_spans) into sinks[j] as batch 0, so
  /// sinks[0] holds each partition's lowest offsets. Counts and warnings are
  /// summed over the readers. The first reader's error (in reader order) is
  /// thrown once every reader has stopped; the others stop at their next
  /// write. Same errors as read().
  BatchReadResult read(const BatchQueryPlan& plan, std::span<Sink* const> sinks);

  const SourceOptions& options() const noexcept { return options_; }
  std::string description() const { return options_.description(); }

 private:
  SourceOptions options_;
  std::unique_ptr<client::KafkaClient> admin_;
};

}  // namespace kwire::source
