// Reads offset ranges [from, until) with a consumer the caller owns and
// keeps, the way Spark's executors read a batch's ranges with their cached
// Kafka consumers (KafkaDataConsumer): the same consumer serves read after
// read, moved between them with assign/seek/pause/resume, so a query pays
// its connections (TCP, TLS, SASL) and fetch session once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kwire/source/planning.hpp"
#include "kwire/source/sink.hpp"

namespace kwire::client {
class Consumer;
}

namespace kwire::source {

struct SourceOptions;

/// The reader's settings, Spark's source options of the same meaning.
struct RangeReaderOptions {
  /// failOnDataLoss: lost offsets throw DataLossError (true) or are skipped
  /// with a warning and counted (false).
  bool fail_on_data_loss = true;
  /// kafkaConsumer.pollTimeoutMs: a read that makes no progress this long
  /// throws client::TimeoutError "Cannot fetch record for offset X in N
  /// milliseconds" (not data loss, as in Spark).
  std::int64_t poll_timeout_ms = 120000;
  /// includeHeaders: rows carry the records' headers.
  bool include_headers = false;
  /// The consumer group Spark's readers would use (executor_group_id()): only
  /// named in data-loss messages (kwire's reader assigns partitions and joins
  /// no group). nullopt prints as "null".
  std::optional<std::string> group_id;

  /// The options' reader settings; group_id is kafka.group.id when set, else
  /// `generated_group_id`.
  static RangeReaderOptions from(const SourceOptions& options, std::optional<std::string> generated_group_id = {});
};

/// Java's String.hashCode of `text` (UTF-8 in, hashed over its UTF-16 code
/// units, as the JVM does), a signed 32-bit value.
std::int32_t java_string_hash(std::string_view text);

/// The group id Spark's executors use to read a query's ranges
/// (KafkaSourceProvider): kafka.group.id when set; else
/// "<groupIdPrefix>-<random UUID>-<java_string_hash(metadata_path)>-executor"
/// for a streaming query (metadata_path being the source's checkpoint folder
/// as Spark names it, "file:/abs/checkpoint/sources/0"), or
/// "<groupIdPrefix>-<random UUID>-executor" for a batch query (no metadata_path).
/// A new UUID each call, as Spark makes one per query run.
std::string executor_group_id(const SourceOptions& options, std::optional<std::string_view> metadata_path);

/// What one RangeReader::read did.
struct RangeReadResult {
  std::int64_t rows = 0;  // rows handed to the sink
  /// Spark's dataLoss metric: gaps of aged-out records skipped inside a range.
  std::int64_t data_loss = 0;
  /// Spark's offsetOutOfRange metric: offsets skipped because the broker no
  /// longer had them when the read started or resumed.
  std::int64_t offset_out_of_range = 0;
  /// One "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE ..." warning per skipped
  /// span (failOnDataLoss=false), also printed on stderr as "WARN ...".
  std::vector<std::string> warnings;
};

/// Reads ranges into a sink with Spark's reader rules (KafkaDataConsumer.get):
///  - a record inside the range becomes a row;
///  - a record past the offset expected is a gap: data loss when the log
///    start offset is past the first missing offset (records aged out while
///    the range was read), otherwise invisible records (compaction,
///    transaction markers, aborted records) that are skipped silently. The
///    log start offset is the one the Fetch answer carried
///    (Consumer::last_fetch_info); a ListOffsets is sent only when the answer
///    had none (Fetch before v5);
///  - OFFSET_OUT_OF_RANGE (the consumer uses auto.offset.reset=none), and a
///    range that ends past the latest offset (an empty poll at a position the
///    Fetch answer reports as the log end, confirmed with one ListOffsets):
///    with failOnDataLoss=true, DataLossError COULD_NOT_READ_OFFSET_RANGE
///    naming [position, until); with false, skip to the earliest offset, or
///    skip the rest of the range when none of it is left, with a warning
///    naming the span; offsetOutOfRange counts the offsets skipped.
///
/// The consumer's positions are the read's only cursors: each partition is
/// sought to its range's start (unless already there), given a position
/// limit at its range's end (Consumer::set_position_limit) and is done when
/// its position reaches that limit; nothing past a range's end is handed out.
///
/// The consumer (created with consumer_properties()) belongs to the caller and
/// may serve any number of reads, one at a time. read() assigns it exactly the
/// ranges' partitions (assign() is called only when that set changes, so the
/// fetch session stays), seeks each to its range start when it is not there
/// and resumes it; each partition is paused as soon as its range is read, so
/// when read() returns every partition is paused. What the consumer fetched
/// past a range's end is kept for a next read starting there (the next
/// rate-limited batch); a partition sought elsewhere drops it. After read()
/// throws, the consumer may be left mid-range; the next read() seeks again,
/// but callers may prefer a new consumer, as Spark does after a failed task.
class RangeReader {
 public:
  /// Properties for the consumer: `client_properties` with
  /// auto.offset.reset=none and max.poll.records defaulting to 20000.
  static std::map<std::string, std::string> consumer_properties(std::map<std::string, std::string> client_properties);

  RangeReader(client::Consumer& consumer, RangeReaderOptions options)
      : consumer_(consumer), options_(std::move(options)) {}

  /// Reads every range into `sink` (Sink::write only: begin_batch and
  /// commit_batch are the caller's). Ranges of one partition must be
  /// contiguous (plan_batch's splits are); they are read as one span
  /// [lowest from, highest until). Empty ranges are allowed. Throws
  /// DataLossError (failOnDataLoss=true), client::TimeoutError, client errors,
  /// and whatever the sink throws.
  RangeReadResult read(const std::vector<OffsetRange>& ranges, Sink& sink);

 private:
  client::Consumer& consumer_;
  RangeReaderOptions options_;
};

}  // namespace kwire::source
