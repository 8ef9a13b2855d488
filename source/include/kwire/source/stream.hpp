// A streaming query over Kafka with the semantics of Spark Structured
// Streaming's `kafka` source (micro-batch execution):
//
//  - options by Spark's names (see options.hpp); every `kafka.X` option is
//    given to the client as X;
//  - the checkpoint owns the offsets: the initial offsets are resolved once
//    from startingOffsets* and stored in sources/0/0; before batch N runs its
//    end offsets are written to offsets/N, and after the sink has made the
//    batch durable commits/N is written. A query restarted after a crash
//    replays an uncommitted batch with exactly the logged range, so a sink
//    that is idempotent per batch id (like JsonLinesSink) sees every record
//    exactly once;
//  - each batch reads [start, end) per partition, end exclusive, offsets being
//    "next offset to read" as in Spark's checkpoint files;
//  - progress per batch carries Spark's min/max/avgOffsetsBehindLatest against
//    the latest offsets fetched when the batch was planned;
//  - data loss is classified and raised (failOnDataLoss=true) or skipped with
//    a warning and counted (false), as Spark does.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/protocol/record_batch.hpp"
#include "kwire/source/options.hpp"
#include "kwire/source/planning.hpp"

namespace kwire::client {
class KafkaClient;
class Consumer;
}  // namespace kwire::client

namespace kwire::source {

/// One row of the source, Spark's schema: key, value, topic, partition, offset,
/// timestamp (ms), timestampType (-1 none, 0 CreateTime, 1 LogAppendTime), and
/// headers (only with includeHeaders=true; nullptr when the record has none).
/// Views are valid only during the Sink::write call that receives them.
struct Row {
  std::optional<protocol::ByteSpan> key;
  std::optional<protocol::ByteSpan> value;
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp = -1;
  std::int8_t timestamp_type = -1;
  const std::vector<protocol::RecordHeader>* headers = nullptr;

  std::string_view key_string() const {
    return key ? std::string_view(reinterpret_cast<const char*>(key->data()), key->size()) : std::string_view();
  }
  std::string_view value_string() const {
    return value ? std::string_view(reinterpret_cast<const char*>(value->data()), value->size()) : std::string_view();
  }
};

/// Where a query's rows go. For exactly-once output the sink must be
/// idempotent per batch id: a batch may be started again with the same id and
/// the same rows after a crash.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void begin_batch(std::int64_t batch_id) = 0;
  /// Rows of the current batch, in chunks (partition order within a chunk).
  virtual void write(std::span<const Row> rows) = 0;
  /// Make the batch durable. Returns how many rows the sink kept.
  virtual std::int64_t commit_batch(std::int64_t batch_id) = 0;
  /// Shown as the progress JSON's sink description.
  virtual std::string description() const { return "Sink"; }
};

/// Writes each batch to DIR/part-<batch id, 20 digits>.jsonl, atomically at
/// commit (temp file, fsync, rename), so a replayed batch replaces its file
/// with identical content. Each line is a JSON object with Spark's columns
/// (key and value as strings, as CAST(... AS STRING) gives them). A filter
/// and a custom formatter can be given.
class JsonLinesSink : public Sink {
 public:
  /// Returns the line to write for a row (without the newline), or nullopt to drop it.
  using Formatter = std::function<std::optional<std::string>(const Row&)>;
  explicit JsonLinesSink(std::filesystem::path dir, Formatter formatter = {});
  void begin_batch(std::int64_t batch_id) override;
  void write(std::span<const Row> rows) override;
  std::int64_t commit_batch(std::int64_t batch_id) override;
  /// The default line for a row.
  static std::string to_json(const Row& row);
  const std::filesystem::path& dir() const noexcept { return dir_; }
  std::string description() const override { return "JsonLinesSink[" + dir_.string() + "]"; }

 private:
  std::filesystem::path dir_;
  Formatter formatter_;
  std::string buffer_;
  std::int64_t kept_ = 0;
};

/// Writes rows to stdout as JSON lines (no exactly-once guarantee).
class ConsoleSink : public Sink {
 public:
  /// `formatter` as for JsonLinesSink (default: JsonLinesSink::to_json).
  explicit ConsoleSink(JsonLinesSink::Formatter formatter = {}) : formatter_(std::move(formatter)) {}
  void begin_batch(std::int64_t) override { kept_ = 0; }
  void write(std::span<const Row> rows) override;
  std::int64_t commit_batch(std::int64_t) override { return kept_; }
  std::string description() const override { return "ConsoleSink"; }

 private:
  JsonLinesSink::Formatter formatter_;
  std::int64_t kept_ = 0;
};

/// Spark's triggers: AvailableNow (rate-limited batches up to the latest
/// offsets seen at start, then stop), Once (one batch of everything, limits
/// ignored with a warning), ProcessingTime (a batch every interval while new
/// data exists; runs until stop()). A ProcessingTime trigger that found no new
/// data waits at least 10 ms (Spark's pollingDelay) before the next one, so
/// an interval of 0 does not spin on ListOffsets.
struct Trigger {
  enum class Kind { available_now, once, processing_time };
  Kind kind = Kind::available_now;
  std::int64_t interval_ms = 0;
  /// "available-now", "once", "processing-time=10 seconds" (Spark durations).
  static Trigger parse(std::string_view text);
};

struct BatchProgress {
  std::int64_t batch_id = 0;
  bool replayed = false;  // re-run of a logged but uncommitted batch
  std::int64_t num_input_rows = 0;
  std::int64_t num_output_rows = 0;
  PartitionOffsets start_offsets;
  PartitionOffsets end_offsets;
  PartitionOffsets latest_offsets;  // fetched when the batch was planned
  std::vector<OffsetRange> ranges;
  std::optional<LagMetrics> lag;
  std::int64_t data_loss = 0;            // data-loss events skipped (failOnDataLoss=false)
  std::int64_t offset_out_of_range = 0;  // offsets skipped because they were out of range
  std::int64_t duration_ms = 0;
  std::vector<std::string> warnings;

  // Spark-like progress fields.
  std::string query_id;           // the checkpoint's metadata id
  std::string run_id;             // new for every StreamingQuery object
  std::int64_t timestamp_ms = 0;  // wall clock when the trigger started
  std::string sink_description;
  /// Spark's durationMs: addBatch, latestOffset, queryPlanning, walCommit,
  /// commitOffsets, triggerExecution.
  std::map<std::string, std::int64_t> durations_ms;
  /// numInputRows / seconds since the previous trigger started (0 for the first).
  double input_rows_per_second = 0.0;
  /// numInputRows / triggerExecution seconds.
  double processed_rows_per_second = 0.0;
  /// Sum over partitions of offsets behind latest x average bytes per record
  /// seen for that partition within bytesEstimateWindowLength; nullopt when
  /// no partition behind latest has been observed.
  std::optional<std::int64_t> estimated_total_bytes_behind_latest;

  /// One human line: batch id, rows in/out, ranges, offsets behind latest.
  std::string to_line() const;
  /// Spark-like progress JSON (one line): id, runId, name, timestamp, batchId,
  /// batchDuration, numInputRows, inputRowsPerSecond, processedRowsPerSecond,
  /// durationMs, stateOperators, sources, sink.
  std::string to_json(std::string_view description) const;
  /// The plan as JSON (one line): batchId, replay, startOffset, endOffset,
  /// latestOffset, ranges [{topic, partition, fromOffset, untilOffset}].
  std::string plan_json() const;
  /// The batch's metrics in Prometheus text exposition format.
  std::string to_prometheus() const;
};

namespace detail {
class MeteringSink;
}

class StreamingQuery {
 public:
  /// `options`: Spark's source options (kafka.bootstrap.servers and one of
  /// subscribe/subscribePattern/assign required). Throws SourceOptionError.
  /// The checkpoint is opened with `access` (checkpoint::Checkpoint): read_write
  /// takes its writer lock (CheckpointError "... is in use by another running
  /// query (pid N)" when held); read_only writes nothing and is only good for
  /// plan_next_batch() and next_batch_id() (running a batch throws CheckpointError).
  StreamingQuery(const std::map<std::string, std::string>& options, std::filesystem::path checkpoint_dir, Sink& sink,
                 Trigger trigger = {}, checkpoint::Access access = checkpoint::Access::read_write);
  ~StreamingQuery();

  /// Run batches until the trigger says stop (AvailableNow / Once: backlog
  /// drained; ProcessingTime: stop() or max_batches). Calls `on_progress` after
  /// each committed batch. `max_batches`, when set, must be positive
  /// (std::invalid_argument otherwise). Throws DataLossError, client errors,
  /// CheckpointError.
  void run(const std::function<void(const BatchProgress&)>& on_progress = {},
           std::optional<std::int64_t> max_batches = std::nullopt);
  /// Ask run() to return after the current batch (safe from another thread or a signal handler).
  void stop() noexcept { stop_requested_ = true; }

  /// Plan and run one batch now; nullopt when there is nothing new.
  std::optional<BatchProgress> run_once_batch();

  /// Plan the next batch as run() would, without reading it and without
  /// writing anything to the checkpoint (not even sources/0/0). nullopt when
  /// there is nothing new (or minOffsetsPerTrigger holds the batch back).
  std::optional<BatchProgress> plan_next_batch();

  /// Read `ranges` into the sink as batch `batch_id` with the query's reader
  /// (failOnDataLoss, poll timeout, headers as configured). No checkpoint
  /// file is written.
  BatchProgress read_offset_ranges(const std::vector<OffsetRange>& ranges, std::int64_t batch_id = 0);

  /// The batch id the next batch would get.
  std::int64_t next_batch_id() const { return checkpoint_.resume().next_batch_id; }
  /// <checkpoint>/progress.jsonl: one progress JSON line per batch.
  std::filesystem::path progress_log_path() const { return checkpoint_.root() / "progress.jsonl"; }

  const SourceOptions& options() const noexcept { return options_; }
  std::string description() const { return options_.description(); }

 private:
  std::optional<BatchProgress> next_batch();
  BatchProgress execute(std::int64_t batch_id, const PartitionOffsets& start, const PartitionOffsets& end,
                        std::vector<OffsetRange> ranges, const PartitionOffsets& latest, bool replay,
                        std::vector<std::string> warnings);
  std::vector<TopicPartition> discover_partitions();
  PartitionOffsets fetch_offsets(const std::vector<TopicPartition>& tps, std::int64_t target);
  PartitionOffsets resolve_initial_offsets();
  PartitionOffsets latest_offsets(const std::vector<TopicPartition>& tps, const PartitionOffsets& known);
  void read_range(const std::vector<OffsetRange>& ranges, BatchProgress& progress);
  std::map<std::string, std::string> client_properties() const;

  bool delay_batch(const PartitionOffsets& start, const PartitionOffsets& latest);
  void finish_progress(BatchProgress& progress);

  SourceOptions options_;
  checkpoint::Checkpoint checkpoint_;
  std::unique_ptr<detail::MeteringSink> meter_;  // counts bytes per partition, forwards to the user's sink
  Sink& sink_;
  Trigger trigger_;
  std::unique_ptr<client::KafkaClient> admin_;
  std::optional<PartitionOffsets> available_now_target_;
  std::atomic<bool> stop_requested_{false};
  bool first_batch_planned_ = false;

  // minOffsetsPerTrigger / maxTriggerDelay (Spark's delayBatch): wall-clock ms
  // of the last trigger that was allowed to fire; 0 so the first one fires.
  std::int64_t last_trigger_ms_ = 0;
  // Plan without running (plan_next_batch).
  bool dry_run_ = false;
  std::string run_id_;
  std::string starting_options_text_;  // the starting* options as given, for the restart warning
  std::vector<std::string> restart_warnings_;
  // Trigger timing for progress.
  std::int64_t trigger_wall_ms_ = 0;
  std::chrono::steady_clock::time_point trigger_started_{};
  std::int64_t previous_trigger_wall_ms_ = -1;
  std::int64_t latest_offset_ms_ = 0;
  std::int64_t planning_started_ms_ = 0;
  // Per partition: (wall ms, records, bytes) samples for the bytes-behind estimate.
  struct BytesSample {
    std::int64_t at_ms;
    std::int64_t records;
    std::int64_t bytes;
  };
  std::map<TopicPartition, std::vector<BytesSample>> bytes_samples_;
};

/// Reads one offset range [from, until) of `topic`-`partition` into `sink`
/// with the streaming reader, using `options` (Spark's source options; the
/// strategy options are replaced by an assign of that one partition). Nothing
/// is checkpointed. Throws DataLossError (failOnDataLoss=true), client errors.
BatchProgress read_offset_range(std::map<std::string, std::string> options, const OffsetRange& range, Sink& sink);

}  // namespace kwire::source
