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
//  - a query with no batch logged yet always runs batch 0, even when it is
//    empty (end = start), as Spark's MicroBatchExecution does, so batch ids
//    match Spark's;
//  - data loss found while planning a batch (Spark's planInputPartitions)
//    is raised after offsets/N is written, as in Spark, so a restart replays
//    that logged range;
//  - progress per batch carries Spark's min/max/avgOffsetsBehindLatest against
//    the latest offsets fetched when the batch was planned (AvailableNow: the
//    end fixed at the start of the run);
//  - data loss is classified and raised (failOnDataLoss=true) or skipped with
//    a warning and counted (false), as Spark does;
//  - the batches are read by one consumer kept for the life of the query
//    (RangeReader), as Spark's executors cache their Kafka consumers.
//
// This header includes sink.hpp (Row, Sink, JsonLinesSink, ConsoleSink),
// trigger.hpp, progress.hpp (BatchProgress) and range_reader.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/source/options.hpp"
#include "kwire/source/planning.hpp"
#include "kwire/source/progress.hpp"
#include "kwire/source/range_reader.hpp"
#include "kwire/source/sink.hpp"
#include "kwire/source/trigger.hpp"

namespace kwire::client {
class KafkaClient;
class Consumer;
}  // namespace kwire::client

namespace kwire::source {

/// Connections made by a query's Kafka clients: the admin client (partition
/// listing, offset look-ups) and the consumer that reads the batches.
struct QueryConnectionStats {
  /// TCP connections opened, each with its TLS and SASL handshakes
  /// (KafkaClient::ConnectionStats::connects, summed over the clients).
  std::uint64_t connects = 0;
  std::uint64_t admin_connects = 0;
  std::uint64_t consumer_connects = 0;  // of every consumer the query created
  /// In-place SASL re-authentications (KIP-368), summed over the clients.
  std::uint64_t reauthentications = 0;
  /// Consumers created: one for the life of the query, plus one after each
  /// read that failed (the failed read's consumer is closed, as Spark drops
  /// the consumer of a failed task). 0 until a batch reads something.
  std::uint64_t consumers_created = 0;
};

/// The time a streaming query reads and waits on: trigger times (the
/// processing-time interval's boundaries, maxTriggerDelay, the polling delay
/// of a trigger without data), the timestamps of progress lines and offsets
/// files, and the bytes-behind window. Durations of the work itself
/// (durationMs) are measured with the steady clock. system_query_clock() by
/// default; tests give a manual clock, so that no test waits in real time.
class QueryClock {
 public:
  virtual ~QueryClock() = default;
  /// Milliseconds since the Unix epoch.
  virtual std::int64_t now_ms() = 0;
  /// Returns once now_ms() >= `until_ms`, or sooner once `stop` is set
  /// (looked at least every 100 ms).
  virtual void sleep_until_ms(std::int64_t until_ms, const std::atomic<bool>& stop) = 0;
};

/// The system clock (std::chrono::system_clock) and real sleeps.
std::shared_ptr<QueryClock> system_query_clock();

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

  /// The clock the query's triggers read and wait on (QueryClock); set before
  /// run(). A null pointer puts the system clock back.
  void set_clock(std::shared_ptr<QueryClock> clock);

  /// Plan and run one batch now; nullopt when there is nothing new.
  std::optional<BatchProgress> run_once_batch();

  /// Plan the next batch as run() would, without reading it, without
  /// writing anything to the checkpoint (not even sources/0/0) or the sink,
  /// and without changing the query: the AvailableNow end and the
  /// minOffsetsPerTrigger delay clock are left for the first real batch.
  /// nullopt when there is nothing new (or minOffsetsPerTrigger holds the
  /// batch back).
  std::optional<BatchProgress> plan_next_batch();

  /// Read `ranges` into the sink as batch `batch_id` with the query's reader
  /// and consumer (failOnDataLoss, poll timeout, headers as configured). No
  /// checkpoint file is written.
  BatchProgress read_offset_ranges(const std::vector<OffsetRange>& ranges, std::int64_t batch_id = 0);

  /// The batch id the next batch would get.
  std::int64_t next_batch_id() const { return checkpoint_.resume().next_batch_id; }
  /// <checkpoint>/progress.jsonl: one progress JSON line per batch.
  std::filesystem::path progress_log_path() const { return checkpoint_.root() / "progress.jsonl"; }

  const SourceOptions& options() const noexcept { return options_; }
  std::string description() const { return options_.description(); }

  /// Connections made so far by the query's clients. With one consumer per
  /// query, `connects` does not grow with the number of batches (unless a
  /// broker connection is lost and made again).
  QueryConnectionStats connection_stats() const;

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
  client::Consumer& consumer();
  std::map<std::string, std::string> client_properties() const;

  bool delay_batch(const PartitionOffsets& start, const PartitionOffsets& latest);
  void finish_progress(BatchProgress& progress);

  SourceOptions options_;
  checkpoint::Checkpoint checkpoint_;
  std::unique_ptr<detail::MeteringSink> meter_;  // counts bytes per partition, forwards to the user's sink
  Sink& sink_;
  Trigger trigger_;
  std::unique_ptr<client::KafkaClient> admin_;
  // The consumer every batch is read with, created by the first batch that
  // reads something; dropped (and its connections counted in
  // retired_consumer_stats_) when a read fails.
  std::unique_ptr<client::Consumer> consumer_;
  // commitOffsetsToGroup: a consumer of kafka.group.id that only commits.
  std::unique_ptr<client::Consumer> group_committer_;
  void commit_to_group(const PartitionOffsets& end, BatchProgress& progress);
  QueryConnectionStats retired_consumer_stats_;
  std::atomic<bool> stop_requested_{false};
  std::shared_ptr<QueryClock> clock_ = system_query_clock();

  // What planning carries from one trigger to the next; plan_next_batch()
  // puts it back as it was.
  struct PlannerState {
    // AvailableNow: the latest offsets fetched at the first plan, the end of the run.
    std::optional<PartitionOffsets> available_now_target;
    // minOffsetsPerTrigger / maxTriggerDelay (Spark's delayBatch): wall-clock
    // ms of the last trigger that was allowed to fire; 0 so the first one fires.
    std::int64_t last_trigger_ms = 0;
  };
  PlannerState planner_;
  // Plan without running (plan_next_batch).
  bool dry_run_ = false;
  std::string run_id_;
  std::string starting_options_text_;  // the starting* options as given, for the restart warning
  std::string reader_group_id_;        // named in COULD_NOT_READ_OFFSET_RANGE (executor_group_id)
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
