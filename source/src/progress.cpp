// Progress output of a batch: the human line, Spark's progress JSON, the
// plan JSON and Prometheus text.
#include "kwire/source/progress.hpp"

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/source/json_escape.hpp"
#include "kwire/source/value_format.hpp"

namespace kwire::source {

namespace {

std::string ranges_text(const std::vector<OffsetRange>& ranges) {
  std::string out;
  for (auto& r : ranges) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}:[{},{})", to_string(r.tp), r.from_offset, r.until_offset);
  }
  return out.empty() ? "-" : out;
}

// A JSON number for a rate: Spark prints doubles like 12.5 and 0.0.
std::string json_double(double v) {
  if (!std::isfinite(v)) return "0.0";
  auto text = fmt::format("{}", v);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

// latestOffset: null when nothing was listed (a replayed batch).
std::string latest_json_or_null(const PartitionOffsets& latest) {
  return latest.empty() ? "null" : checkpoint::offsets_to_json(latest);
}

}  // namespace

std::string BatchProgress::to_line() const {
  std::string lag_text = "-";
  if (lag)
    lag_text = fmt::format("min {} max {} avg {:.1f}", lag->min_offsets_behind_latest, lag->max_offsets_behind_latest,
                           lag->avg_offsets_behind_latest);
  std::string extra;
  if (data_loss || offset_out_of_range)
    extra = fmt::format(" | dataLoss {} offsetOutOfRange {}", data_loss, offset_out_of_range);
  return fmt::format("batch {}{}: rows in {} out {} | {} ms | ranges {} | offsets behind latest: {}{}", batch_id,
                     replayed ? " (replayed)" : "", num_input_rows, num_output_rows, duration_ms, ranges_text(ranges),
                     lag_text, extra);
}

std::string BatchProgress::to_json(std::string_view description) const {
  // A replayed batch listed nothing: like Spark, no lag metrics and a null
  // latestOffset (Spark's JSON writer leaves the lag keys out).
  std::string metrics;
  auto add_metric = [&](std::string_view key, const std::string& value) {
    metrics += metrics.empty() ? "{" : ",";
    metrics += fmt::format("\"{}\":\"{}\"", key, value);
  };
  if (lag) {
    add_metric("avgOffsetsBehindLatest", fmt::format("{:.1f}", lag->avg_offsets_behind_latest));
    add_metric("maxOffsetsBehindLatest", std::to_string(lag->max_offsets_behind_latest));
    add_metric("minOffsetsBehindLatest", std::to_string(lag->min_offsets_behind_latest));
    if (estimated_total_bytes_behind_latest)
      add_metric("estimatedTotalBytesBehindLatest", std::to_string(*estimated_total_bytes_behind_latest));
  }
  if (lag || replayed) {
    add_metric("dataLoss", std::to_string(data_loss));
    add_metric("offsetOutOfRange", std::to_string(offset_out_of_range));
  }
  metrics += metrics.empty() ? "{}" : "}";
  std::string durations;
  for (auto& [k, v] : durations_ms) {
    durations += durations.empty() ? "{" : ",";
    durations += fmt::format("{}:{}", json_string(k), v);
  }
  durations += durations.empty() ? "{}" : "}";
  // Like Spark, the first batch of a query has no start offset in progress.
  const std::string start_json = batch_id == 0 ? "null" : checkpoint::offsets_to_json(start_offsets);
  const std::string latest_json = latest_json_or_null(latest_offsets);
  return fmt::format(
      "{{\"id\":{},\"runId\":{},\"name\":null,\"timestamp\":{},\"batchId\":{},\"batchDuration\":{},"
      "\"numInputRows\":{},\"inputRowsPerSecond\":{},\"processedRowsPerSecond\":{},\"durationMs\":{},"
      "\"stateOperators\":[],\"sources\":[{{\"description\":{},\"startOffset\":{},\"endOffset\":{},"
      "\"latestOffset\":{},\"numInputRows\":{},\"inputRowsPerSecond\":{},\"processedRowsPerSecond\":{},"
      "\"metrics\":{}}}],\"sink\":{{\"description\":{},\"numOutputRows\":{}}}}}",
      json_string(query_id), json_string(run_id), json_string(format_timestamp_ms(timestamp_ms)), batch_id, duration_ms,
      num_input_rows, json_double(input_rows_per_second), json_double(processed_rows_per_second), durations,
      json_string(description), start_json, checkpoint::offsets_to_json(end_offsets), latest_json, num_input_rows,
      json_double(input_rows_per_second), json_double(processed_rows_per_second), metrics,
      json_string(sink_description), num_output_rows);
}

std::string offset_ranges_json(const std::vector<OffsetRange>& ranges) {
  std::string out = "[";
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    auto& r = ranges[i];
    if (i) out += ',';
    out += fmt::format("{{\"topic\":{},\"partition\":{},\"fromOffset\":{},\"untilOffset\":{}}}",
                       json_string(r.tp.topic), r.tp.partition, r.from_offset, r.until_offset);
  }
  out += "]";
  return out;
}

std::string BatchProgress::plan_json() const {
  const std::string ranges_json = offset_ranges_json(ranges);
  return fmt::format(
      "{{\"batchId\":{},\"replay\":{},\"startOffset\":{},\"endOffset\":{},\"latestOffset\":{},\"ranges\":{}}}",
      batch_id, replayed, checkpoint::offsets_to_json(start_offsets), checkpoint::offsets_to_json(end_offsets),
      latest_json_or_null(latest_offsets), ranges_json);
}

std::string BatchProgress::to_prometheus() const {
  std::string out;
  auto metric = [&](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  auto num = [](double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("NaN"); };
  metric("kwire_batch_id", "gauge", "Id of the latest completed batch.");
  out += fmt::format("kwire_batch_id {}\n", batch_id);
  metric("kwire_batch_timestamp_seconds", "gauge", "Wall-clock time the latest batch's trigger started.");
  out += fmt::format("kwire_batch_timestamp_seconds {}\n", num(static_cast<double>(timestamp_ms) / 1000.0));
  metric("kwire_batch_input_rows", "gauge", "Rows read by the latest batch.");
  out += fmt::format("kwire_batch_input_rows {}\n", num_input_rows);
  metric("kwire_batch_output_rows", "gauge", "Rows the sink kept in the latest batch.");
  out += fmt::format("kwire_batch_output_rows {}\n", num_output_rows);
  metric("kwire_batch_input_rows_per_second", "gauge", "Input rows per second since the previous trigger.");
  out += fmt::format("kwire_batch_input_rows_per_second {}\n", num(input_rows_per_second));
  metric("kwire_batch_processed_rows_per_second", "gauge", "Input rows per second of trigger execution.");
  out += fmt::format("kwire_batch_processed_rows_per_second {}\n", num(processed_rows_per_second));
  metric("kwire_batch_duration_ms", "gauge", "Duration of the latest batch's phases (Spark's durationMs).");
  for (auto& [phase, ms] : durations_ms) out += fmt::format("kwire_batch_duration_ms{{phase=\"{}\"}} {}\n", phase, ms);
  if (lag) {
    metric("kwire_source_offsets_behind_latest", "gauge",
           "Offsets behind the latest offsets fetched when the batch was planned, over partitions.");
    out += fmt::format("kwire_source_offsets_behind_latest{{stat=\"min\"}} {}\n", lag->min_offsets_behind_latest);
    out += fmt::format("kwire_source_offsets_behind_latest{{stat=\"max\"}} {}\n", lag->max_offsets_behind_latest);
    out += fmt::format("kwire_source_offsets_behind_latest{{stat=\"avg\"}} {}\n", num(lag->avg_offsets_behind_latest));
  }
  if (estimated_total_bytes_behind_latest) {
    metric("kwire_source_estimated_total_bytes_behind_latest", "gauge",
           "Offsets behind latest times the average record size seen per partition.");
    out += fmt::format("kwire_source_estimated_total_bytes_behind_latest {}\n", *estimated_total_bytes_behind_latest);
  }
  metric("kwire_source_data_loss", "gauge", "Data-loss events skipped in the latest batch (failOnDataLoss=false).");
  out += fmt::format("kwire_source_data_loss {}\n", data_loss);
  metric("kwire_source_offset_out_of_range", "gauge", "Offsets skipped as out of range in the latest batch.");
  out += fmt::format("kwire_source_offset_out_of_range {}\n", offset_out_of_range);
  return out;
}

}  // namespace kwire::source
