// Micro-batch planning, as Spark's Kafka source does it: rate limiting,
// offset-range splitting, data-loss classification and lag metrics.
//
// Pure functions: the caller fetches offsets from Kafka and passes them in.
// Each is O(n log n) in the number of partitions n (one lookup per topic, then
// per partition by number; bench/micro.cpp BM_PlanTrigger times a trigger).
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/protocol/topic_partition.hpp"

namespace kwire::source {

using checkpoint::PartitionOffsets;

struct SourceOptions;

using protocol::to_string;  // "topic-partition", as Kafka prints it
using protocol::TopicPartition;

/// Offsets [from_offset, until_offset) of one partition.
struct OffsetRange {
  TopicPartition tp;
  std::int64_t from_offset = 0;
  std::int64_t until_offset = 0;
  std::optional<std::string> preferred_location;
  /// until - from: an offset count, not a record count (gaps, markers).
  std::int64_t size() const { return until_offset - from_offset; }
  bool operator==(const OffsetRange&) const = default;
};

/// Spark's rateLimit: spreads `limit` offsets over the partitions of `until`
/// in proportion to their backlog (until - begin, where begin is `from`, or
/// `earliest_for_new` for a partition absent from `from`).
///  - share p = limit * (size / total); n = p < 1 ? ceil(p) : floor(p);
///  - end = min(until, begin + n), saturating at INT64_MAX;
///  - partitions with size <= 0 or without a known begin keep `until`;
///  - total backlog < 1: returns `until` unchanged.
/// The result may exceed `limit` in total (no partition is starved).
PartitionOffsets rate_limit(std::int64_t limit, const PartitionOffsets& from, const PartitionOffsets& until,
                            const PartitionOffsets& earliest_for_new);

/// Spark's KafkaOffsetRangeCalculator.getRanges (no executor locations):
///  - ranges with size <= 0 are dropped;
///  - max_records_per_partition splits each range into ceil(size / max) parts;
///  - if fewer than min_partitions ranges remain, large ranges are split in
///    proportion to their size (round(size / total * minP), at least 1), ranges
///    getting one part stay whole and the others share max(minP - #whole, 1);
///  - part i of n gets remaining / (n - i) offsets; the last absorbs rounding.
/// Output keeps input order, with each range's parts in offset order.
/// Throws std::invalid_argument if a given limit is not positive.
std::vector<OffsetRange> split_ranges(std::vector<OffsetRange> ranges, std::optional<std::int32_t> min_partitions,
                                      std::optional<std::int64_t> max_records_per_partition);

/// One range per partition, sorted by topic-partition: [lowest from, highest
/// until) of its ranges, which split_ranges leaves contiguous. A reader reads
/// each partition in one pass over its span.
std::vector<OffsetRange> partition_spans(const std::vector<OffsetRange>& ranges);

// ---- Data loss ----

enum class DataLossKind {
  partitions_deleted,
  partitions_deleted_and_group_id_config_present,
  initial_offset_not_found_for_partitions,
  added_partition_does_not_start_from_offset_zero,
  partition_offset_changed,
  could_not_read_offset_range,
};

/// Spark's sub-condition name, e.g. "PARTITIONS_DELETED".
std::string_view data_loss_name(DataLossKind kind);

/// Spark's KAFKA_DATA_LOSS error. what() is
///   "KAFKA_DATA_LOSS.<NAME>: Some data may have been lost because ... Reason: <reason>"
class DataLossError : public std::runtime_error {
 public:
  /// PARTITIONS_DELETED(_AND_GROUP_ID_CONFIG_PRESENT).
  static DataLossError partitions_deleted(const std::set<TopicPartition>& partitions, bool group_id_set);
  /// INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS.
  static DataLossError initial_offset_not_found(const std::set<TopicPartition>& partitions);
  /// ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO.
  static DataLossError added_partition_not_from_zero(const TopicPartition& tp, std::int64_t start_offset);
  /// PARTITION_OFFSET_CHANGED (start = previous offset, end = new offset).
  static DataLossError partition_offset_changed(const TopicPartition& tp, std::int64_t prev_offset,
                                                std::int64_t new_offset);
  /// COULD_NOT_READ_OFFSET_RANGE, raised by the reader for [start, end);
  /// group_id nullopt prints as "null".
  static DataLossError could_not_read_offset_range(const TopicPartition& tp, std::int64_t start_offset,
                                                   std::int64_t end_offset, const std::optional<std::string>& group_id);

  DataLossKind kind() const { return kind_; }
  /// The sub-condition text after "Reason: ".
  const std::string& reason() const { return reason_; }
  /// All partitions concerned (one for the single-partition kinds).
  const std::vector<TopicPartition>& partitions() const { return partitions_; }
  /// First concerned partition's topic / partition ("" / -1 if none).
  std::string topic() const;
  std::int32_t partition() const;
  /// Offsets of the single-partition kinds (-1 when not applicable):
  /// ADDED_PARTITION: start = earliest; OFFSET_CHANGED: start = previous, end = new;
  /// COULD_NOT_READ: [start, end).
  std::int64_t start_offset() const { return start_offset_; }
  std::int64_t end_offset() const { return end_offset_; }

 private:
  DataLossError(DataLossKind kind, std::string reason, std::vector<TopicPartition> partitions,
                std::int64_t start_offset, std::int64_t end_offset);

  DataLossKind kind_;
  std::string reason_;
  std::vector<TopicPartition> partitions_;
  std::int64_t start_offset_;
  std::int64_t end_offset_;
};

/// The warning logged (instead of throwing) when failOnDataLoss=false:
/// "KAFKA_DATA_LOSS.<NAME> (failOnDataLoss=false, continuing): <reason> <Spark's
/// instruction to set failOnDataLoss to true>".
std::string data_loss_warning(const DataLossError& error);

/// The reader's gap rule (Spark's fetchRecord): when the record after
/// `requested_offset` comes back at a higher offset, the missing offsets are
/// lost only if the earliest offset still available is past the one asked
/// for. Otherwise they were never visible (compaction, transaction markers,
/// aborted records under read_committed): skipped silently, never counted.
bool is_lost_gap(std::int64_t requested_offset, std::int64_t earliest_available);

// ---- Batch planning ----

struct PlanOptions {
  bool fail_on_data_loss = true;
  /// kafka.group.id was set (selects PARTITIONS_DELETED_AND_GROUP_ID_CONFIG_PRESENT).
  bool group_id_set = false;
  std::optional<std::int32_t> min_partitions;
  std::optional<std::int64_t> max_records_per_partition;
};

/// The planning-related part of parsed source options.
PlanOptions plan_options(const SourceOptions& options);

struct BatchPlan {
  /// Ranges to read, sorted by topic-partition (then split as split_ranges does);
  /// never a range with until <= from.
  std::vector<OffsetRange> ranges;
  /// The batch end as logged in offsets/N: `end` unchanged (the next batch starts here).
  PartitionOffsets end;
  /// One entry per data-loss case tolerated because fail_on_data_loss is false.
  std::vector<std::string> warnings;
};

/// Spark's getOffsetRangesFromResolvedOffsets for micro-batch [start, end):
///  1. partitions in `end` but not in `start` are new and start at their earliest
///     offset from `earliest_for_new` (the caller fetches earliest offsets for them;
///     entries for other partitions are ignored). New partitions missing from it:
///     INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS (skipped when tolerated). A new
///     partition whose earliest != 0: ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO
///     (read from earliest when tolerated);
///  2. partitions in `start` but not in `end`: PARTITIONS_DELETED, or
///     PARTITIONS_DELETED_AND_GROUP_ID_CONFIG_PRESENT (dropped when tolerated);
///  3. until < from: PARTITION_OFFSET_CHANGED (empty range when tolerated; the
///     next batch resumes from the new, smaller offset);
///  4. ranges go through split_ranges (empty and negative ranges dropped).
/// With fail_on_data_loss the first case found throws DataLossError, checked in
/// the order above (partitions in topic-partition order).
BatchPlan plan_batch(const PartitionOffsets& start, const PartitionOffsets& end,
                     const PartitionOffsets& earliest_for_new, const PlanOptions& options);

// ---- Progress metrics ----

struct LagMetrics {
  std::int64_t min_offsets_behind_latest = 0;
  std::int64_t max_offsets_behind_latest = 0;
  double avg_offsets_behind_latest = 0.0;
};

/// Spark's min/max/avgOffsetsBehindLatest: for each partition of `latest`
/// (offsets fetched when the batch was planned), behind = latest - consumed_end.
/// Partitions of `latest` absent from `consumed_end` are skipped. nullopt when
/// no partition qualifies.
std::optional<LagMetrics> offsets_behind_latest(const PartitionOffsets& latest, const PartitionOffsets& consumed_end);

}  // namespace kwire::source
