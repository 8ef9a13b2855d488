// What a micro-batch did: Spark's StreamingQueryProgress fields and the
// batch's plan, with its text, JSON and Prometheus renderings.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kwire/source/planning.hpp"

namespace kwire::source {

struct BatchProgress {
  std::int64_t batch_id = 0;
  bool replayed = false;  // re-run of a logged but uncommitted batch
  std::int64_t num_input_rows = 0;
  std::int64_t num_output_rows = 0;
  PartitionOffsets start_offsets;
  PartitionOffsets end_offsets;
  PartitionOffsets latest_offsets;  // fetched when the batch was planned; empty for a replay
  std::vector<OffsetRange> ranges;
  std::optional<LagMetrics> lag;         // nullopt for a replay (nothing was listed)
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

/// Offset ranges as a JSON array of {"topic","partition","fromOffset","untilOffset"}
/// objects (end exclusive), as `--plan-only` prints them.
std::string offset_ranges_json(const std::vector<OffsetRange>& ranges);

}  // namespace kwire::source
