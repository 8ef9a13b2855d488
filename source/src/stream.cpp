#include "kwire/source/stream.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/json_escape.hpp"
#include "kwire/source/value_format.hpp"

namespace kwire::source {

namespace fs = std::filesystem;
using client::KafkaClient;

namespace {

// Spark's pollingDelay: the wait after a trigger that found no new data.
constexpr std::int64_t kNoDataPollingDelayMs = 10;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

client::TopicPartition to_client(const TopicPartition& tp) { return client::TopicPartition{tp.topic, tp.partition}; }

// Never throws: a warning that cannot be written (stderr on a full disk)
// must not fail the batch.
void warn(const std::string& text) { std::fprintf(stderr, "WARN %s\n", text.c_str()); }

std::string ranges_text(const std::vector<OffsetRange>& ranges) {
  std::string out;
  for (auto& r : ranges) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}:[{},{})", to_string(r.tp), r.from_offset, r.until_offset);
  }
  return out.empty() ? "-" : out;
}

std::string new_run_id() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
  std::uint64_t hi = gen(), lo = gen();
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // variant 1
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48,
                     lo & 0xffffffffffffULL);
}

// A JSON number for a rate: Spark prints doubles like 12.5 and 0.0.
std::string json_double(double v) {
  if (!std::isfinite(v)) return "0.0";
  auto text = fmt::format("{}", v);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

std::int64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since).count();
}

// The starting* options as given (keys lower-cased, sorted), to tell on a
// restart whether they changed since sources/0/0 was written.
std::string starting_options_text(const std::map<std::string, std::string>& options) {
  std::map<std::string, std::string> picked;
  for (auto& [k, v] : options) {
    std::string lower = k;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    if (lower == "startingoffsets" || lower == "startingoffsetsbytimestamp" || lower == "startingtimestamp" ||
        lower == "startingoffsetsbytimestampstrategy")
      picked[lower] = v;
  }
  std::string out;
  for (auto& [k, v] : picked) out += k + "=" + v + "\n";
  return out;
}

// A process killed while appending to a JSON Lines file can leave a partial
// last line; cut it off so the next line starts on a line of its own.
void drop_partial_last_line(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec || size == 0) return;
  std::ifstream in(p, std::ios::binary);
  std::uintmax_t keep = size;
  char c = 0;
  while (keep > 0) {
    in.seekg(static_cast<std::streamoff>(keep - 1));
    if (!in.get(c)) return;
    if (c == '\n') break;
    --keep;
  }
  if (keep == size) return;
  in.close();
  fs::resize_file(p, keep, ec);
  if (ec) warn(fmt::format("could not repair the partial last line of {}: {}", p.string(), ec.message()));
  else warn(fmt::format("removed a partial last line ({} bytes) from {}", size - keep, p.string()));
}

std::string read_text_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

namespace detail {

// Counts records and bytes (key + value + header keys and values) per
// partition for the bytes-behind estimate, and forwards everything.
class MeteringSink : public Sink {
 public:
  explicit MeteringSink(Sink& inner) : inner_(inner) {}
  void begin_batch(std::int64_t batch_id) override {
    seen_.clear();
    inner_.begin_batch(batch_id);
  }
  void write(std::span<const Row> rows) override {
    std::pair<std::int64_t, std::int64_t>* slot = nullptr;
    std::string_view last_topic;
    std::int32_t last_partition = -1;
    for (auto& r : rows) {
      if (!slot || r.partition != last_partition || r.topic != last_topic) {
        slot = &seen_[TopicPartition{std::string(r.topic), r.partition}];
        last_topic = r.topic;
        last_partition = r.partition;
      }
      std::int64_t bytes = 0;
      if (r.key) bytes += static_cast<std::int64_t>(r.key->size());
      if (r.value) bytes += static_cast<std::int64_t>(r.value->size());
      if (r.headers)
        for (auto& h : *r.headers) bytes += static_cast<std::int64_t>(h.key.size() + (h.value ? h.value->size() : 0));
      slot->first += 1;
      slot->second += bytes;
    }
    inner_.write(rows);
  }
  std::int64_t commit_batch(std::int64_t batch_id) override { return inner_.commit_batch(batch_id); }
  std::string description() const override { return inner_.description(); }
  /// (records, bytes) per partition since begin_batch.
  std::map<TopicPartition, std::pair<std::int64_t, std::int64_t>> take() { return std::move(seen_); }

 private:
  Sink& inner_;
  std::map<TopicPartition, std::pair<std::int64_t, std::int64_t>> seen_;
};

}  // namespace detail

// ------------------------------------------------------------------ sinks

JsonLinesSink::JsonLinesSink(fs::path dir, Formatter formatter)
    : dir_(std::move(dir)), formatter_(std::move(formatter)) {
  fs::create_directories(dir_);
  // A process killed while writing a batch file leaves its temp file.
  checkpoint::remove_stale_temp_files(dir_);
}

void JsonLinesSink::begin_batch(std::int64_t) {
  buffer_.clear();
  kept_ = 0;
}

std::string JsonLinesSink::to_json(const Row& row) {
  std::string out = "{\"key\":";
  if (row.key) append_json_string(out, row.key_string());
  else out += "null";
  out += ",\"value\":";
  if (row.value) append_json_string(out, row.value_string());
  else out += "null";
  out += ",\"topic\":";
  append_json_string(out, row.topic);
  out += fmt::format(",\"partition\":{},\"offset\":{},\"timestamp\":{},\"timestampType\":{}", row.partition, row.offset,
                     row.timestamp, row.timestamp_type);
  if (row.headers) {
    out += ",\"headers\":[";
    for (std::size_t i = 0; i < row.headers->size(); ++i) {
      auto& h = (*row.headers)[i];
      out += i ? ",{\"key\":" : "{\"key\":";
      append_json_string(out, h.key);
      out += ",\"value\":";
      if (h.value)
        append_json_string(out, std::string_view(reinterpret_cast<const char*>(h.value->data()), h.value->size()));
      else out += "null";
      out += "}";
    }
    out += "]";
  }
  out += "}";
  return out;
}

void JsonLinesSink::write(std::span<const Row> rows) {
  for (auto& r : rows) {
    if (formatter_) {
      auto line = formatter_(r);
      if (!line) continue;
      buffer_ += *line;
    } else {
      buffer_ += to_json(r);
    }
    buffer_ += '\n';
    ++kept_;
  }
}

std::int64_t JsonLinesSink::commit_batch(std::int64_t batch_id) {
  checkpoint::atomic_write_file(dir_ / fmt::format("part-{:020d}.jsonl", batch_id), buffer_);
  buffer_.clear();
  return kept_;
}

void ConsoleSink::write(std::span<const Row> rows) {
  std::string out;
  for (auto& r : rows) {
    if (formatter_) {
      auto line = formatter_(r);
      if (!line) continue;
      out += *line;
    } else {
      out += JsonLinesSink::to_json(r);
    }
    out += '\n';
    ++kept_;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

// ---------------------------------------------------------------- trigger

Trigger Trigger::parse(std::string_view text) {
  Trigger t;
  std::string s(text);
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  if (s == "available-now" || s == "availablenow" || s == "available_now") {
    t.kind = Kind::available_now;
  } else if (s == "once") {
    t.kind = Kind::once;
  } else if (s.rfind("processing-time=", 0) == 0 || s.rfind("processingtime=", 0) == 0) {
    t.kind = Kind::processing_time;
    t.interval_ms = parse_duration_ms(s.substr(s.find('=') + 1));
  } else {
    throw SourceOptionError(
        fmt::format("invalid trigger '{}': expected available-now, once or processing-time=DURATION", text));
  }
  return t;
}

// --------------------------------------------------------------- progress

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
  std::string metrics = "{}";
  if (lag) {
    metrics = fmt::format(
        "{{\"avgOffsetsBehindLatest\":\"{:.1f}\",\"maxOffsetsBehindLatest\":\"{}\",\"minOffsetsBehindLatest\":\"{}\"",
        lag->avg_offsets_behind_latest, lag->max_offsets_behind_latest, lag->min_offsets_behind_latest);
    if (estimated_total_bytes_behind_latest)
      metrics += fmt::format(",\"estimatedTotalBytesBehindLatest\":\"{}\"", *estimated_total_bytes_behind_latest);
    metrics += fmt::format(",\"dataLoss\":\"{}\",\"offsetOutOfRange\":\"{}\"}}", data_loss, offset_out_of_range);
  }
  std::string durations;
  for (auto& [k, v] : durations_ms) {
    durations += durations.empty() ? "{" : ",";
    durations += fmt::format("{}:{}", json_string(k), v);
  }
  durations += durations.empty() ? "{}" : "}";
  // Like Spark, the first batch of a query has no start offset in progress.
  const std::string start_json = batch_id == 0 ? "null" : checkpoint::offsets_to_json(start_offsets);
  return fmt::format(
      "{{\"id\":{},\"runId\":{},\"name\":null,\"timestamp\":{},\"batchId\":{},\"batchDuration\":{},"
      "\"numInputRows\":{},\"inputRowsPerSecond\":{},\"processedRowsPerSecond\":{},\"durationMs\":{},"
      "\"stateOperators\":[],\"sources\":[{{\"description\":{},\"startOffset\":{},\"endOffset\":{},"
      "\"latestOffset\":{},\"numInputRows\":{},\"inputRowsPerSecond\":{},\"processedRowsPerSecond\":{},"
      "\"metrics\":{}}}],\"sink\":{{\"description\":{},\"numOutputRows\":{}}}}}",
      json_string(query_id), json_string(run_id), json_string(format_timestamp_ms(timestamp_ms)), batch_id, duration_ms,
      num_input_rows, json_double(input_rows_per_second), json_double(processed_rows_per_second), durations,
      json_string(description), start_json, checkpoint::offsets_to_json(end_offsets),
      checkpoint::offsets_to_json(latest_offsets), num_input_rows, json_double(input_rows_per_second),
      json_double(processed_rows_per_second), metrics, json_string(sink_description), num_output_rows);
}

std::string BatchProgress::plan_json() const {
  std::string ranges_json = "[";
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    auto& r = ranges[i];
    if (i) ranges_json += ',';
    ranges_json += fmt::format("{{\"topic\":{},\"partition\":{},\"fromOffset\":{},\"untilOffset\":{}}}",
                               json_string(r.tp.topic), r.tp.partition, r.from_offset, r.until_offset);
  }
  ranges_json += "]";
  return fmt::format(
      "{{\"batchId\":{},\"replay\":{},\"startOffset\":{},\"endOffset\":{},\"latestOffset\":{},\"ranges\":{}}}",
      batch_id, replayed, checkpoint::offsets_to_json(start_offsets), checkpoint::offsets_to_json(end_offsets),
      checkpoint::offsets_to_json(latest_offsets), ranges_json);
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

// ------------------------------------------------------------------ query

StreamingQuery::StreamingQuery(const std::map<std::string, std::string>& options, fs::path checkpoint_dir, Sink& sink,
                               Trigger trigger, checkpoint::Access access)
    : options_(parse_source_options(options, QueryMode::streaming)),
      checkpoint_(std::move(checkpoint_dir), checkpoint::Checkpoint::kDefaultMinBatchesToRetain, access),
      meter_(std::make_unique<detail::MeteringSink>(sink)),
      sink_(*meter_),
      trigger_(trigger),
      run_id_(new_run_id()),
      starting_options_text_(starting_options_text(options)) {
  for (auto& w : options_.warnings) warn(w);
  if (trigger_.kind == Trigger::Kind::once && (options_.max_offsets_per_trigger || options_.min_offsets_per_trigger))
    warn("The read limit (maxOffsetsPerTrigger / minOffsetsPerTrigger) is ignored when Trigger.Once is used.");
  if (trigger_.kind == Trigger::Kind::available_now && options_.min_offsets_per_trigger)
    warn(
        "minOffsetsPerTrigger with Trigger.AvailableNow: a batch held back by minOffsetsPerTrigger ends the run, "
        "possibly before the offsets prefetched at start are reached (as in Spark).");
  // Spark ignores the starting options once sources/0/0 exists; say so when they changed.
  const auto stored_path = checkpoint_.root() / "starting-options";
  if (checkpoint_.initial_offsets() && fs::exists(stored_path)) {
    const std::string stored = read_text_file(stored_path);
    if (stored != starting_options_text_) {
      auto one_line = [](std::string text) {
        while (!text.empty() && text.back() == '\n') text.pop_back();
        for (std::size_t i; (i = text.find('\n')) != std::string::npos;) text.replace(i, 1, "; ");
        return text;
      };
      const std::string was = one_line(stored), now = one_line(starting_options_text_);
      restart_warnings_.push_back(fmt::format(
          "The starting options differ from those that created the checkpoint (was: {}; now: {}). They are ignored "
          "on restart: the query continues from the offsets stored in {}.",
          was.empty() ? "defaults" : was, now.empty() ? "defaults" : now,
          (checkpoint_.root() / "sources" / "0" / "0").string()));
      for (auto& w : restart_warnings_) warn(w);
    }
  }
  if (!checkpoint_.read_only()) drop_partial_last_line(progress_log_path());
  admin_ = std::make_unique<KafkaClient>(client_properties());
}

StreamingQuery::~StreamingQuery() = default;

std::map<std::string, std::string> StreamingQuery::client_properties() const {
  std::map<std::string, std::string> props = options_.kafka_params;
  props.erase("group.id");
  return props;
}

std::vector<TopicPartition> StreamingQuery::discover_partitions() {
  std::vector<TopicPartition> out;
  const int attempts = std::max(1, options_.fetch_offset_num_retries);
  for (int attempt = 1;; ++attempt) {
    try {
      out.clear();
      if (auto* s = std::get_if<Subscribe>(&options_.strategy)) {
        auto md = admin_->metadata(s->topics);
        for (auto& name : s->topics) {
          auto* t = md.topic(name);
          if (!t || t->error_code != 0)
            throw client::KafkaError(t ? t->error_code : 3,
                                     fmt::format("subscribed topic '{}' is not available: {}", name,
                                                 protocol::error_name(t ? t->error_code : 3)));
          for (auto& p : t->partitions) out.push_back({name, p.partition});
        }
      } else if (auto* p = std::get_if<SubscribePattern>(&options_.strategy)) {
        std::regex re(p->pattern, std::regex::ECMAScript);
        auto md = admin_->metadata(std::nullopt);
        for (auto& t : md.topics) {
          if (t.is_internal || t.error_code != 0 || !std::regex_search(t.name, re)) continue;
          for (auto& part : t.partitions) out.push_back({t.name, part.partition});
        }
      } else {
        auto& a = std::get<Assign>(options_.strategy);
        std::vector<std::string> names;
        for (auto& [t, _] : a.partitions) names.push_back(t);
        auto md = admin_->metadata(names);
        for (auto& [name, parts] : a.partitions) {
          auto* t = md.topic(name);
          if (!t || t->error_code != 0) continue;
          for (auto part : parts)
            if (std::any_of(t->partitions.begin(), t->partitions.end(), [&](auto& x) { return x.partition == part; }))
              out.push_back({name, part});
        }
      }
      std::sort(out.begin(), out.end());
      return out;
    } catch (const client::ClientError& e) {
      if (attempt >= attempts) throw;
      warn(fmt::format("listing partitions failed (attempt {} of {}): {}", attempt, attempts, e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.fetch_offset_retry_interval_ms));
    }
  }
}

PartitionOffsets StreamingQuery::fetch_offsets(const std::vector<TopicPartition>& tps, std::int64_t target) {
  PartitionOffsets out;
  if (tps.empty()) return out;
  std::map<client::TopicPartition, std::int64_t> req;
  for (auto& tp : tps) req[to_client(tp)] = target;
  const int attempts = std::max(1, options_.fetch_offset_num_retries);
  for (int attempt = 1;; ++attempt) {
    try {
      for (auto& [tp, lo] : admin_->list_offsets(req)) out[tp.topic][tp.partition] = lo.offset;
      return out;
    } catch (const client::ClientError& e) {
      if (attempt >= attempts) throw;
      warn(fmt::format("fetching offsets failed (attempt {} of {}): {}", attempt, attempts, e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.fetch_offset_retry_interval_ms));
    }
  }
}

PartitionOffsets StreamingQuery::latest_offsets(const std::vector<TopicPartition>& tps, const PartitionOffsets& known) {
  // A latest offset below one already known is re-queried (bounded), as Spark
  // does for KAFKA-7703, before anything is planned from it.
  PartitionOffsets latest;
  const int attempts = std::max(1, options_.fetch_offset_num_retries);
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    latest = fetch_offsets(tps, client::kLatestTimestamp);
    bool backwards = false;
    for (auto& [topic, parts] : latest)
      for (auto& [p, off] : parts) {
        auto t = known.find(topic);
        if (t == known.end()) continue;
        auto k = t->second.find(p);
        if (k != t->second.end() && off < k->second) backwards = true;
      }
    if (!backwards) break;
    if (attempt < attempts)
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.fetch_offset_retry_interval_ms));
  }
  return latest;
}

PartitionOffsets StreamingQuery::resolve_initial_offsets() {
  auto tps = discover_partitions();
  if (const auto* a = std::get_if<Assign>(&options_.strategy)) {
    // As Spark, an assigned partition that does not exist is an error, not an
    // empty stream.
    std::vector<std::string> missing;
    for (auto& [topic, parts] : a->partitions)
      for (auto p : parts)
        if (!std::binary_search(tps.begin(), tps.end(), TopicPartition{topic, p}))
          missing.push_back(to_string(TopicPartition{topic, p}));
    if (!missing.empty())
      throw SourceOptionError(fmt::format("Assigned topic-partitions do not exist (UNKNOWN_TOPIC_OR_PARTITION): {}",
                                          fmt::join(missing, ", ")));
  }
  const auto& spec = options_.starting;
  if (std::holds_alternative<EarliestOffsets>(spec)) return fetch_offsets(tps, client::kEarliestTimestamp);
  if (std::holds_alternative<LatestOffsets>(spec)) return fetch_offsets(tps, client::kLatestTimestamp);
  if (auto* s = std::get_if<SpecificOffsets>(&spec)) {
    std::set<TopicPartition> given, assigned(tps.begin(), tps.end());
    for (auto& [t, parts] : s->offsets)
      for (auto& [p, _] : parts) given.insert({t, p});
    if (given != assigned) {
      std::vector<std::string> g, a;
      for (auto& tp : given) g.push_back(to_string(tp));
      for (auto& tp : assigned) a.push_back(to_string(tp));
      throw SourceOptionError(fmt::format(
          "If startingOffsets contains specific offsets, you must specify all TopicPartitions.\nUse -1 for latest, -2 "
          "for earliest, if you don't care.\nSpecified: {}  Assigned: {}",
          fmt::join(g, ", "), fmt::join(a, ", ")));
    }
    PartitionOffsets out = s->offsets;
    std::vector<TopicPartition> need_e, need_l;
    for (auto& [t, parts] : out)
      for (auto& [p, off] : parts) {
        if (off == kEarliestOffset) need_e.push_back({t, p});
        if (off == kLatestOffset) need_l.push_back({t, p});
      }
    for (auto& [t, parts] : fetch_offsets(need_e, client::kEarliestTimestamp))
      for (auto& [p, off] : parts) out[t][p] = off;
    for (auto& [t, parts] : fetch_offsets(need_l, client::kLatestTimestamp))
      for (auto& [p, off] : parts) out[t][p] = off;
    return out;
  }
  // Timestamps.
  std::map<client::TopicPartition, std::int64_t> req;
  if (auto* g = std::get_if<GlobalTimestamp>(&spec)) {
    for (auto& tp : tps) req[to_client(tp)] = g->timestamp_ms;
  } else {
    auto& st = std::get<SpecificTimestamps>(spec);
    std::set<TopicPartition> given, assigned(tps.begin(), tps.end());
    for (auto& [t, parts] : st.timestamps)
      for (auto& [p, ts] : parts) {
        given.insert({t, p});
        req[client::TopicPartition{t, p}] = ts;
      }
    if (given != assigned)
      throw SourceOptionError(
          "KAFKA_TIMESTAMP_OFFSET_DOES_NOT_MATCH_ASSIGNED: the partitions in startingOffsetsByTimestamp do not "
          "match the assigned partitions");
  }
  PartitionOffsets out;
  std::vector<TopicPartition> to_latest;
  for (auto& [tp, lo] : admin_->list_offsets(req)) {
    if (lo.offset >= 0) {
      out[tp.topic][tp.partition] = lo.offset;
    } else if (options_.timestamp_strategy == TimestampStrategy::latest) {
      to_latest.push_back({tp.topic, tp.partition});
    } else {
      throw SourceOptionError(fmt::format("No offset matched from request of topic-partition {} and timestamp {}.",
                                          client::to_string(tp), req[tp]));
    }
  }
  for (auto& [t, parts] : fetch_offsets(to_latest, client::kLatestTimestamp))
    for (auto& [p, off] : parts) out[t][p] = off;
  return out;
}

std::optional<BatchProgress> StreamingQuery::run_once_batch() { return next_batch(); }

std::optional<BatchProgress> StreamingQuery::next_batch() {
  trigger_started_ = std::chrono::steady_clock::now();
  trigger_wall_ms_ = now_ms();
  latest_offset_ms_ = 0;
  planning_started_ms_ = 0;
  auto resume = checkpoint_.resume();
  if (resume.replay_batch) {
    // Replay the logged, uncommitted batch with exactly the logged range.
    const auto& end = *resume.replay_end;
    // As in Spark, the ranges are planned again from the logged offsets with
    // the same data-loss rules: loss that happened since the batch was
    // logged is reported (or skipped with a warning) like in a new batch.
    std::vector<TopicPartition> new_tps;
    for (auto& [t, parts] : end)
      for (auto& [p, _] : parts) {
        auto st = resume.start.find(t);
        if (st == resume.start.end() || !st->second.count(p)) new_tps.push_back({t, p});
      }
    auto earliest = fetch_offsets(new_tps, client::kEarliestTimestamp);
    auto plan = plan_batch(resume.start, end, earliest, plan_options(options_));
    for (auto& w : plan.warnings) warn(w);
    return execute(*resume.replay_batch, resume.start, end, plan.ranges, end, true, plan.warnings);
  }
  PartitionOffsets start = resume.start;
  if (resume.next_batch_id == 0 && !checkpoint_.initial_offsets()) {
    start = resolve_initial_offsets();
    if (!dry_run_) {
      checkpoint_.write_initial_offsets(start);
      checkpoint::atomic_write_file(checkpoint_.root() / "starting-options", starting_options_text_);
    }
  } else if (resume.next_batch_id == 0) {
    start = *checkpoint_.initial_offsets();
  }
  auto tps = discover_partitions();
  PartitionOffsets latest;
  try {
    latest = latest_offsets(tps, start);
  } catch (const client::KafkaError& e) {
    // A partition listed a moment ago may be gone (its topic was just
    // deleted): list the partitions once more, as Spark's retries do.
    if (e.code() != static_cast<std::int16_t>(protocol::ErrorCode::unknown_topic_or_partition)) throw;
    tps = discover_partitions();
    latest = latest_offsets(tps, start);
  }

  // New partitions (not in start) begin at their earliest offset.
  std::vector<TopicPartition> new_tps;
  for (auto& tp : tps) {
    auto t = start.find(tp.topic);
    if (t == start.end() || !t->second.count(tp.partition)) new_tps.push_back(tp);
  }
  auto earliest_for_new = fetch_offsets(new_tps, client::kEarliestTimestamp);
  latest_offset_ms_ = elapsed_ms(trigger_started_);

  PartitionOffsets end = latest;
  if (trigger_.kind == Trigger::Kind::available_now) {
    if (!available_now_target_) available_now_target_ = latest;
    end = *available_now_target_;
    // Partitions that appeared after the target was taken wait for a later run.
  }
  // minOffsetsPerTrigger / maxTriggerDelay (Spark's delayBatch), before the max limit.
  if (trigger_.kind != Trigger::Kind::once && options_.min_offsets_per_trigger && delay_batch(start, end))
    return std::nullopt;
  if (trigger_.kind != Trigger::Kind::once && options_.max_offsets_per_trigger)
    end = rate_limit(*options_.max_offsets_per_trigger, start, end, earliest_for_new);

  // No partition at all (every assigned or matching topic is gone): like
  // Spark's empty latest offsets, this is "no new offset", so no batch is
  // planned and nothing is classified until partitions exist again.
  if (end.empty()) return std::nullopt;

  // Nothing new?
  bool has_new = false;
  for (auto& [t, parts] : end)
    for (auto& [p, off] : parts) {
      auto st = start.find(t);
      std::int64_t from = -1;
      if (st != start.end() && st->second.count(p)) from = st->second.at(p);
      else if (earliest_for_new.count(t) && earliest_for_new.at(t).count(p)) from = earliest_for_new.at(t).at(p);
      if (from < 0 || off != from) has_new = true;
    }
  for (auto& [t, parts] : start)
    for (auto& [p, _] : parts)
      if (!end.count(t) || !end.at(t).count(p)) has_new = true;  // deleted partition: let planning classify it
  if (!has_new) return std::nullopt;

  planning_started_ms_ = elapsed_ms(trigger_started_);
  auto plan = plan_batch(start, end, earliest_for_new, plan_options(options_));
  for (auto& w : plan.warnings) warn(w);
  if (plan.end.empty()) return std::nullopt;  // an empty listing never becomes a committed batch
  return execute(resume.next_batch_id, start, plan.end, plan.ranges, latest, false, plan.warnings);
}

BatchProgress StreamingQuery::execute(std::int64_t batch_id, const PartitionOffsets& start, const PartitionOffsets& end,
                                      std::vector<OffsetRange> ranges, const PartitionOffsets& latest, bool replay,
                                      std::vector<std::string> warnings) {
  BatchProgress progress;
  progress.batch_id = batch_id;
  progress.replayed = replay;
  progress.start_offsets = start;
  progress.end_offsets = end;
  progress.latest_offsets = latest;
  progress.ranges = ranges;
  progress.warnings = std::move(warnings);
  if (dry_run_) return progress;  // plan_next_batch: nothing is read or written

  const std::int64_t planned_at = elapsed_ms(trigger_started_);
  progress.durations_ms["latestOffset"] = latest_offset_ms_;
  progress.durations_ms["queryPlanning"] =
      planned_at - (planning_started_ms_ ? planning_started_ms_ : latest_offset_ms_);
  auto t = std::chrono::steady_clock::now();
  if (!replay) checkpoint_.write_offsets(batch_id, end, now_ms());
  progress.durations_ms["walCommit"] = elapsed_ms(t);
  t = std::chrono::steady_clock::now();
  sink_.begin_batch(batch_id);
  read_range(ranges, progress);
  progress.num_output_rows = sink_.commit_batch(batch_id);
  progress.durations_ms["addBatch"] = elapsed_ms(t);
  t = std::chrono::steady_clock::now();
  checkpoint_.write_commit(batch_id);
  progress.durations_ms["commitOffsets"] = elapsed_ms(t);
  progress.lag = offsets_behind_latest(latest, end);
  finish_progress(progress);
  return progress;
}

void StreamingQuery::finish_progress(BatchProgress& progress) {
  // Record sizes seen in this batch feed the bytes-behind estimate.
  const std::int64_t now = now_ms();
  for (auto& [tp, seen] : meter_->take())
    if (seen.first > 0) bytes_samples_[tp].push_back({now, seen.first, seen.second});
  std::optional<std::int64_t> bytes_behind;
  for (auto it = bytes_samples_.begin(); it != bytes_samples_.end();) {
    auto& samples = it->second;
    samples.erase(
        std::remove_if(samples.begin(), samples.end(),
                       [&](const BytesSample& s) { return now - s.at_ms > options_.bytes_estimate_window_ms; }),
        samples.end());
    if (samples.empty()) {
      it = bytes_samples_.erase(it);
      continue;
    }
    ++it;
  }
  for (auto& [topic, parts] : progress.latest_offsets)
    for (auto& [p, latest] : parts) {
      auto e = progress.end_offsets.find(topic);
      if (e == progress.end_offsets.end() || !e->second.count(p)) continue;
      const std::int64_t behind = std::max<std::int64_t>(0, latest - e->second.at(p));
      auto s = bytes_samples_.find(TopicPartition{topic, p});
      if (s == bytes_samples_.end()) {
        if (behind == 0) bytes_behind = bytes_behind.value_or(0);
        continue;
      }
      std::int64_t records = 0, bytes = 0;
      for (auto& x : s->second) records += x.records, bytes += x.bytes;
      bytes_behind = bytes_behind.value_or(0) +
                     static_cast<std::int64_t>(static_cast<double>(behind) * static_cast<double>(bytes) /
                                               static_cast<double>(records));
    }
  progress.estimated_total_bytes_behind_latest = bytes_behind;

  progress.query_id = checkpoint_.id();
  progress.run_id = run_id_;
  progress.timestamp_ms = trigger_wall_ms_;
  progress.sink_description = sink_.description();
  if (!restart_warnings_.empty()) {
    progress.warnings.insert(progress.warnings.begin(), restart_warnings_.begin(), restart_warnings_.end());
    restart_warnings_.clear();
  }
  progress.duration_ms = elapsed_ms(trigger_started_);
  progress.durations_ms["triggerExecution"] = progress.duration_ms;
  const double rows = static_cast<double>(progress.num_input_rows);
  progress.processed_rows_per_second =
      progress.duration_ms > 0 ? rows * 1000.0 / static_cast<double>(progress.duration_ms) : 0.0;
  progress.input_rows_per_second =
      previous_trigger_wall_ms_ >= 0 && trigger_wall_ms_ > previous_trigger_wall_ms_
          ? rows * 1000.0 / static_cast<double>(trigger_wall_ms_ - previous_trigger_wall_ms_)
          : 0.0;
  previous_trigger_wall_ms_ = trigger_wall_ms_;

  std::ofstream log(progress_log_path(), std::ios::app | std::ios::binary);
  log << progress.to_json(description()) << '\n';
  log.flush();
  if (!log) warn(fmt::format("could not append to the progress log {}", progress_log_path().string()));
}

void StreamingQuery::read_range(const std::vector<OffsetRange>& ranges, BatchProgress& progress) {
  if (ranges.empty()) return;
  // Ranges of one partition are contiguous after splitting; read each
  // partition's [min from, max until) in one pass.
  std::map<client::TopicPartition, std::pair<std::int64_t, std::int64_t>> want;  // next, until
  for (auto& r : ranges) {
    auto tp = to_client(r.tp);
    auto it = want.find(tp);
    if (it == want.end()) want[tp] = {r.from_offset, r.until_offset};
    else {
      it->second.first = std::min(it->second.first, r.from_offset);
      it->second.second = std::max(it->second.second, r.until_offset);
    }
  }
  auto props = client_properties();
  props["auto.offset.reset"] = "none";
  if (!props.count("max.poll.records")) props["max.poll.records"] = "100000";
  client::Consumer consumer(props);
  std::vector<client::TopicPartition> tps;
  for (auto& [tp, _] : want) tps.push_back(tp);
  consumer.assign(tps);
  for (auto& [tp, w] : want) consumer.seek(tp, w.first);

  const std::optional<std::string> group_id = options_.kafka_params.count("group.id")
                                                  ? std::optional<std::string>(options_.kafka_params.at("group.id"))
                                                  : std::nullopt;
  // failOnDataLoss=false: one warning per skipped span, printed and kept in the progress.
  auto skip_lost = [&](const TopicPartition& tp, std::int64_t from, std::int64_t to, const std::string& detail) {
    auto text = fmt::format(
        "{} {}", data_loss_warning(DataLossError::could_not_read_offset_range(tp, from, to, group_id)), detail);
    warn(text);
    progress.warnings.push_back(std::move(text));
  };
  std::set<client::TopicPartition> done;
  auto mark_done_if_reached = [&](const client::TopicPartition& tp) {
    if (done.count(tp)) return;
    if (want[tp].first >= want[tp].second || consumer.position(tp) >= want[tp].second) {
      done.insert(tp);
      consumer.pause({tp});
    }
  };
  for (auto& tp : tps) mark_done_if_reached(tp);

  const auto poll_timeout = std::chrono::milliseconds(options_.poll_timeout_ms);
  auto last_progress = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  while (done.size() < tps.size()) {
    client::ConsumerRecords recs;
    try {
      recs = consumer.poll(std::min(poll_timeout, std::chrono::milliseconds(1000)));
    } catch (const client::OffsetOutOfRangeError& e) {
      auto tp = e.partition();
      auto& [next, until] = want[tp];
      if (options_.fail_on_data_loss)
        throw DataLossError::could_not_read_offset_range(TopicPartition{tp.topic, tp.partition}, next, until, group_id);
      // Spark's rule: compare the offset with the range the broker still has.
      const auto earliest = consumer.beginning_offsets({tp})[tp];
      const auto latest = consumer.end_offsets({tp})[tp];
      const TopicPartition stp{tp.topic, tp.partition};
      if (next >= latest || earliest >= until) {
        // Nothing of [next, until) is left: skip the whole range.
        skip_lost(stp, next, until,
                  fmt::format("Some data may be lost. Recovering from the earliest offset: {}. The current available "
                              "offset range is [{}, {}). Offset {} is out of range, and records in [{}, {}) will be "
                              "skipped.",
                              earliest, earliest, latest, next, next, until));
        progress.offset_out_of_range += until - next;
        next = until;
        done.insert(tp);
        consumer.pause({tp});
        last_progress = std::chrono::steady_clock::now();
      } else if (next < earliest) {
        // The head of the range aged out: continue from the earliest offset.
        skip_lost(stp, next, earliest,
                  fmt::format("Some data may be lost. Recovering from the earliest offset: {}. The current available "
                              "offset range is [{}, {}). Offset {} is out of range, and records in [{}, {}) will be "
                              "skipped.",
                              earliest, earliest, latest, next, next, earliest));
        progress.offset_out_of_range += earliest - next;
        next = earliest;
        consumer.seek(tp, earliest);
        last_progress = std::chrono::steady_clock::now();
      } else {
        // The offset is inside [earliest, latest) again (the log changed
        // between the fetch and the listing): fetch it again, bounded by the
        // poll timeout.
        consumer.seek(tp, next);
        if (std::chrono::steady_clock::now() - last_progress > poll_timeout)
          throw client::TimeoutError(fmt::format("Cannot fetch record for offset {} in {} milliseconds (partition {})",
                                                 next, options_.poll_timeout_ms, client::to_string(tp)));
      }
      continue;
    }
    rows.clear();
    rows.reserve(recs.size());
    // A poll hands out each partition's records together: look the
    // partition up once per run, not once per record.
    auto it = want.end();
    const std::string* run_topic = nullptr;
    std::int32_t run_partition = -1;
    for (auto& r : recs) {
      if (r.topic != run_topic || r.partition != run_partition) {
        run_topic = r.topic;
        run_partition = r.partition;
        it = want.find(client::TopicPartition{*r.topic, r.partition});
      }
      if (it == want.end()) continue;
      const client::TopicPartition& tp = it->first;
      auto& [next, until] = it->second;
      if (r.offset < next || next >= until) continue;
      if (r.offset > next && is_lost_gap(next, consumer.beginning_offsets({tp})[tp])) {
        // Records aged out while the range was being read. With the gap
        // reaching `until` the rest of the range is gone.
        const std::int64_t gap_end = std::min(r.offset, until);
        const TopicPartition stp{tp.topic, tp.partition};
        if (options_.fail_on_data_loss) throw DataLossError::could_not_read_offset_range(stp, next, gap_end, group_id);
        skip_lost(stp, next, gap_end, fmt::format("Skip missing records in [{}, {}).", next, gap_end));
        progress.data_loss += 1;
        next = gap_end;
      }
      if (r.offset >= until) {
        next = std::max(next, until);
        continue;
      }
      Row row;
      row.key = r.key;
      row.value = r.value;
      row.topic = *r.topic;
      row.partition = r.partition;
      row.offset = r.offset;
      row.timestamp = r.timestamp;
      row.timestamp_type = r.timestamp_type;
      row.headers = options_.include_headers && r.headers && !r.headers->empty() ? r.headers : nullptr;
      rows.push_back(row);
      next = r.offset + 1;
    }
    if (!rows.empty()) {
      sink_.write(rows);
      progress.num_input_rows += static_cast<std::int64_t>(rows.size());
      last_progress = std::chrono::steady_clock::now();
    }
    for (auto& tp : tps) {
      if (done.count(tp)) continue;
      auto pos = consumer.position(tp);
      if (pos > want[tp].first && pos <= want[tp].second) {
        want[tp].first = std::max(want[tp].first, pos);
        last_progress = std::chrono::steady_clock::now();
      }
      mark_done_if_reached(tp);
    }
    if (done.size() < tps.size() && std::chrono::steady_clock::now() - last_progress > poll_timeout) {
      for (auto& tp : tps)
        if (!done.count(tp))
          throw client::TimeoutError(fmt::format("Cannot fetch record for offset {} in {} milliseconds (partition {})",
                                                 want[tp].first, options_.poll_timeout_ms, client::to_string(tp)));
    }
  }
}

std::optional<BatchProgress> StreamingQuery::plan_next_batch() {
  dry_run_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{dry_run_};
  return next_batch();
}

BatchProgress StreamingQuery::read_offset_ranges(const std::vector<OffsetRange>& ranges, std::int64_t batch_id) {
  trigger_started_ = std::chrono::steady_clock::now();
  trigger_wall_ms_ = now_ms();
  BatchProgress progress;
  progress.batch_id = batch_id;
  progress.ranges = ranges;
  for (auto& r : ranges) {
    auto& s = progress.start_offsets[r.tp.topic][r.tp.partition];
    auto& e = progress.end_offsets[r.tp.topic][r.tp.partition];
    s = s ? std::min(s, r.from_offset) : r.from_offset;
    e = std::max(e, r.until_offset);
  }
  sink_.begin_batch(batch_id);
  read_range(ranges, progress);
  progress.num_output_rows = sink_.commit_batch(batch_id);
  meter_->take();
  progress.query_id = checkpoint_.id();
  progress.run_id = run_id_;
  progress.timestamp_ms = trigger_wall_ms_;
  progress.sink_description = sink_.description();
  progress.duration_ms = elapsed_ms(trigger_started_);
  progress.durations_ms["addBatch"] = progress.duration_ms;
  progress.durations_ms["triggerExecution"] = progress.duration_ms;
  return progress;
}

bool StreamingQuery::delay_batch(const PartitionOffsets& start, const PartitionOffsets& latest) {
  // Spark's delayBatch: fire when maxTriggerDelay has passed since the last
  // trigger that fired (the first trigger always fires), else only when at
  // least minOffsetsPerTrigger new offsets exist; a partition absent from
  // `start` counts its whole latest offset.
  const std::int64_t now = now_ms();
  if (now - last_trigger_ms_ >= options_.max_trigger_delay_ms) {
    last_trigger_ms_ = now;
    return false;
  }
  double fresh = 0;
  for (auto& [topic, parts] : latest)
    for (auto& [p, off] : parts) {
      std::int64_t current = 0;
      auto t = start.find(topic);
      if (t != start.end()) {
        auto c = t->second.find(p);
        if (c != t->second.end()) current = c->second;
      }
      fresh += static_cast<double>(off - current);
    }
  if (fresh < static_cast<double>(*options_.min_offsets_per_trigger)) return true;
  last_trigger_ms_ = now;
  return false;
}

BatchProgress read_offset_range(std::map<std::string, std::string> options, const OffsetRange& range, Sink& sink) {
  for (auto it = options.begin(); it != options.end();) {
    std::string lower = it->first;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    const bool drop = lower == "subscribe" || lower == "subscribepattern" || lower == "assign" ||
                      lower.rfind("starting", 0) == 0 || lower.rfind("ending", 0) == 0;
    it = drop ? options.erase(it) : std::next(it);
  }
  options["assign"] = fmt::format("{{{}:[{}]}}", json_string(range.tp.topic), range.tp.partition);
  // The query object needs a checkpoint folder; a private temporary one is
  // used and removed, so nothing is checkpointed.
  const fs::path dir = fs::temp_directory_path() / fmt::format("kwire-read-range-{}", new_run_id());
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  StreamingQuery query(options, dir, sink);
  return query.read_offset_ranges({range}, 0);
}

void StreamingQuery::run(const std::function<void(const BatchProgress&)>& on_progress,
                         std::optional<std::int64_t> max_batches) {
  if (max_batches && *max_batches <= 0)
    throw std::invalid_argument(fmt::format("max_batches must be positive, got {}", *max_batches));
  std::int64_t batches = 0;
  while (!stop_requested_) {
    const std::int64_t started_ms = now_ms();
    auto progress = next_batch();
    if (progress) {
      ++batches;
      if (on_progress) on_progress(*progress);
      if (max_batches && batches >= *max_batches) return;
      // A replayed batch is followed by normal planning.
      if (trigger_.kind == Trigger::Kind::once && !progress->replayed) return;
      if (trigger_.kind != Trigger::Kind::processing_time) continue;
    } else if (trigger_.kind != Trigger::Kind::processing_time) {
      return;  // backlog drained (available-now / once)
    } else if (trigger_.interval_ms < kNoDataPollingDelayMs) {
      // Nothing new: as Spark's pollingDelay, wait a little before asking the
      // brokers again rather than spinning on ListOffsets.
      std::this_thread::sleep_for(std::chrono::milliseconds(kNoDataPollingDelayMs));
      continue;
    }
    // processing-time: wait for the next interval boundary. As Spark's
    // ProcessingTimeExecutor, boundaries are wall-clock multiples of the
    // interval; a trigger that overran its interval is followed at once.
    if (trigger_.interval_ms <= 0) continue;
    const std::int64_t next_ms = started_ms / trigger_.interval_ms * trigger_.interval_ms + trigger_.interval_ms;
    for (std::int64_t now = now_ms(); !stop_requested_ && now < next_ms; now = now_ms())
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<std::int64_t>(next_ms - now, 100)));
  }
}

}  // namespace kwire::source
