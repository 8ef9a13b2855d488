// Options of the Kafka source, parsed and validated as Spark's `kafka` source does.
//
// Option names are case-insensitive; values keep their case. Every `kafka.X`
// option is passed to the Kafka client as X. Unknown options are ignored, except
// that a known Kafka client option given without the `kafka.` prefix is rejected
// (kwire rule) with a hint to add the prefix.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kwire/checkpoint/checkpoint.hpp"

namespace kwire::source {

using checkpoint::PartitionOffsets;

/// Thrown for invalid source options (Spark: IllegalArgumentException).
class SourceOptionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class QueryMode { streaming, batch };

// ---- Subscription strategy (exactly one) ----

/// `assign`: explicit partitions, {"topicA":[0,1]}. Topics sorted; partitions
/// in the order given.
struct Assign {
  std::map<std::string, std::vector<std::int32_t>> partitions;
};
/// `subscribe`: comma-separated topic list (entries trimmed, empties dropped).
struct Subscribe {
  std::vector<std::string> topics;
};
/// `subscribePattern`: a regex matched with a find (not a full match), trimmed.
struct SubscribePattern {
  std::string pattern;
};
using Strategy = std::variant<Assign, Subscribe, SubscribePattern>;

// ---- Offset specifications (startingOffsets / endingOffsets and friends) ----

/// Sentinels usable inside SpecificOffsets.
inline constexpr std::int64_t kLatestOffset = -1;
inline constexpr std::int64_t kEarliestOffset = -2;

struct EarliestOffsets {};
struct LatestOffsets {};
/// Per-partition offsets; -2 = earliest, -1 = latest.
struct SpecificOffsets {
  PartitionOffsets offsets;
};
/// Per-partition timestamps (ms): first offset with record timestamp >= ts.
struct SpecificTimestamps {
  std::map<std::string, std::map<std::int32_t, std::int64_t>> timestamps;
};
/// One timestamp (ms) for every partition.
struct GlobalTimestamp {
  std::int64_t timestamp_ms = 0;
};
using OffsetSpec = std::variant<EarliestOffsets, LatestOffsets, SpecificOffsets, SpecificTimestamps, GlobalTimestamp>;

/// startingOffsetsByTimestampStrategy: what to do when no offset matches a timestamp.
enum class TimestampStrategy { error, latest };

struct SourceOptions {
  QueryMode mode = QueryMode::streaming;
  Strategy strategy;
  /// Precedence: startingTimestamp > startingOffsetsByTimestamp > startingOffsets.
  /// Default: latest (streaming), earliest (batch).
  OffsetSpec starting = LatestOffsets{};
  /// Batch only (streaming rejects ending options). Precedence: endingTimestamp >
  /// endingOffsetsByTimestamp > endingOffsets. Default: latest.
  OffsetSpec ending = LatestOffsets{};
  TimestampStrategy timestamp_strategy = TimestampStrategy::error;

  /// Specific starting offsets are >= 0, -2 (earliest) or -1 (latest);
  /// specific ending offsets are >= 0 or -1 (latest); assigned partitions are
  /// >= 0. Anything else is a SourceOptionError naming the topic-partition.
  /// Rate limits: positive ("maxOffsetsPerTrigger must be positive").
  std::optional<std::int64_t> max_offsets_per_trigger;
  std::optional<std::int64_t> min_offsets_per_trigger;
  std::int64_t max_trigger_delay_ms = 15 * 60 * 1000;
  /// bytesEstimateWindowLength (Databricks' option, streaming only): how far
  /// back observed record sizes count for estimatedTotalBytesBehindLatest.
  std::int64_t bytes_estimate_window_ms = 300 * 1000;
  std::optional<std::int32_t> min_partitions;
  std::optional<std::int64_t> max_records_per_partition;
  bool fail_on_data_loss = true;
  /// fetchOffset.numRetries, fetchOffset.retryIntervalMs and
  /// kafkaConsumer.pollTimeoutMs must be non-negative.
  int fetch_offset_num_retries = 3;
  std::int64_t fetch_offset_retry_interval_ms = 1000;
  std::int64_t poll_timeout_ms = 120000;
  bool include_headers = false;
  /// commitOffsetsToGroup (kwire's own, beyond Spark; needs kafka.group.id):
  /// after each batch is committed to the checkpoint, its end offsets are
  /// committed to that consumer group, so lag tools (kafka-consumer-groups,
  /// Burrow, exporters) see the query. Advisory only: the checkpoint stays the
  /// truth and a failed group commit is a warning in the batch's progress.
  bool commit_offsets_to_group = false;
  /// groupIdPrefix; default "spark-kafka-source" (streaming) or
  /// "spark-kafka-relation" (batch). Ignored when kafka.group.id is set.
  std::string group_id_prefix = "spark-kafka-source";

  /// Every `kafka.X` option as X (X in its original case), value unchanged.
  std::map<std::string, std::string> kafka_params;

  /// Non-fatal findings (Spark logs these as WARN): rate options in batch mode,
  /// kafka.group.id set, groupIdPrefix ignored, ...
  std::vector<std::string> warnings;

  /// True when kafka.group.id was given.
  bool group_id_set() const;

  /// Spark's source description, e.g. "KafkaV2[Subscribe[a, b]]",
  /// "KafkaV2[SubscribePattern[p]]", "KafkaV2[Assign[t-0, t-1]]".
  std::string description() const;
};

/// Parses and validates `options` for `mode`, in Spark's order and with
/// Spark's messages. Throws SourceOptionError.
SourceOptions parse_source_options(const std::map<std::string, std::string>& options, QueryMode mode);

/// Spark-style duration: "15m", "10 seconds", "500ms", "1h", "2d", "250us";
/// a plain number is milliseconds. Case-insensitive, surrounding blanks ignored.
/// Throws SourceOptionError on anything else (negative, fractional, overflow).
std::int64_t parse_duration_ms(std::string_view text);

/// True if `name` (any case, without the "kafka." prefix) is a Kafka client
/// configuration name that kwire knows (bootstrap.servers, security.protocol,
/// sasl.*, ssl.*, ...).
bool is_kafka_client_option(std::string_view name);

}  // namespace kwire::source
