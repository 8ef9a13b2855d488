// The streaming query: batch orchestration (planning, the write-ahead and
// commit logs, reading through one long-lived consumer, progress) and the
// trigger loop.
#include "kwire/source/stream.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/json_escape.hpp"
#include "metering_sink.hpp"
#include "stream_util.hpp"

namespace kwire::source {

namespace fs = std::filesystem;
using client::KafkaClient;
using detail::elapsed_ms;
using detail::now_ms;
using detail::warn;

namespace {

std::string new_run_id() { return protocol::Uuid::random().to_string(); }

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

// The source's metadata folder as Spark names it (a qualified Hadoop path,
// "file:/abs/checkpoint/sources/0"), hashed into the readers' group id.
std::string source_metadata_path(const fs::path& root) {
  std::string abs = fs::absolute(root).lexically_normal().string();
  while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
  return "file:" + abs + "/sources/0";
}

std::string read_text_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

StreamingQuery::StreamingQuery(const std::map<std::string, std::string>& options, fs::path checkpoint_dir, Sink& sink,
                               Trigger trigger, checkpoint::Access access)
    : options_(parse_source_options(options, QueryMode::streaming)),
      checkpoint_(std::move(checkpoint_dir), checkpoint::Checkpoint::kDefaultMinBatchesToRetain, access),
      meter_(std::make_unique<detail::MeteringSink>(sink)),
      sink_(*meter_),
      trigger_(trigger),
      run_id_(new_run_id()),
      starting_options_text_(starting_options_text(options)),
      reader_group_id_(executor_group_id(options_, source_metadata_path(checkpoint_.root()))) {
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

namespace {

class SystemQueryClock : public QueryClock {
 public:
  std::int64_t now_ms() override { return detail::now_ms(); }
  void sleep_until_ms(std::int64_t until_ms, const std::atomic<bool>& stop) override {
    for (std::int64_t now = now_ms(); !stop && now < until_ms; now = now_ms())
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<std::int64_t>(until_ms - now, 100)));
  }
};

}  // namespace

std::shared_ptr<QueryClock> system_query_clock() {
  static const auto clock = std::make_shared<SystemQueryClock>();
  return clock;
}

void StreamingQuery::set_clock(std::shared_ptr<QueryClock> clock) {
  clock_ = clock ? std::move(clock) : system_query_clock();
}

std::optional<BatchProgress> StreamingQuery::run_once_batch() { return next_batch(); }

std::optional<BatchProgress> StreamingQuery::next_batch() {
  trigger_started_ = std::chrono::steady_clock::now();
  trigger_wall_ms_ = clock_->now_ms();
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
    // Nothing is listed for a replay: no latest offsets, so no lag metrics.
    return execute(*resume.replay_batch, resume.start, end, plan.ranges, {}, true, plan.warnings);
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
    if (!planner_.available_now_target) planner_.available_now_target = latest;
    end = *planner_.available_now_target;
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
  // A query with no batch logged yet always runs batch 0, even an empty one
  // (end = start): Spark's MicroBatchExecution sees a source without
  // committed offsets as having new data, so its batch ids start there.
  if (!has_new && resume.next_batch_id != 0) return std::nullopt;

  planning_started_ms_ = elapsed_ms(trigger_started_);
  BatchPlan plan;
  try {
    plan = plan_batch(start, end, earliest_for_new, plan_options(options_));
  } catch (const DataLossError&) {
    // Spark logs offsets/N (its latestOffset) before planInputPartitions
    // classifies the loss, so the failure comes after the write-ahead log
    // and a restart replays exactly this range (failing again, or skipping
    // the loss with failOnDataLoss=false).
    if (!dry_run_) checkpoint_.write_offsets(resume.next_batch_id, end, clock_->now_ms());
    throw;
  }
  for (auto& w : plan.warnings) warn(w);
  if (plan.end.empty()) return std::nullopt;  // an empty listing never becomes a committed batch
  // AvailableNow reports lag and latestOffset against the end fixed at the
  // start of the run (Spark keeps that prefetched map as its latest offsets),
  // not against offsets listed since.
  const PartitionOffsets& reported_latest =
      trigger_.kind == Trigger::Kind::available_now ? *planner_.available_now_target : latest;
  return execute(resume.next_batch_id, start, plan.end, plan.ranges, reported_latest, false, plan.warnings);
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
  if (!replay) checkpoint_.write_offsets(batch_id, end, clock_->now_ms());
  progress.durations_ms["walCommit"] = elapsed_ms(t);
  t = std::chrono::steady_clock::now();
  sink_.prepare_batch(BatchContext{checkpoint_.id(), batch_id, end, replay});
  sink_.begin_batch(batch_id);
  read_range(ranges, progress);
  progress.num_output_rows = sink_.commit_batch(batch_id);
  progress.durations_ms["addBatch"] = elapsed_ms(t);
  t = std::chrono::steady_clock::now();
  checkpoint_.write_commit(batch_id);
  if (options_.commit_offsets_to_group) commit_to_group(end, progress);
  progress.durations_ms["commitOffsets"] = elapsed_ms(t);
  progress.lag = offsets_behind_latest(latest, end);
  finish_progress(progress);
  return progress;
}

client::Consumer& StreamingQuery::consumer() {
  if (!consumer_) {
    consumer_ = std::make_unique<client::Consumer>(RangeReader::consumer_properties(client_properties()));
    ++retired_consumer_stats_.consumers_created;
  }
  return *consumer_;
}

void StreamingQuery::read_range(const std::vector<OffsetRange>& ranges, BatchProgress& progress) {
  if (ranges.empty()) return;
  auto& reader_consumer = consumer();
  RangeReadResult read;
  try {
    read = RangeReader(reader_consumer, RangeReaderOptions::from(options_, reader_group_id_)).read(ranges, sink_);
  } catch (...) {
    // As Spark drops the consumer of a failed task: the next batch starts
    // with a fresh one rather than one left mid-range.
    const auto& stats = consumer_->client().connection_stats();
    retired_consumer_stats_.consumer_connects += stats.connects;
    retired_consumer_stats_.reauthentications += stats.reauthentications;
    consumer_.reset();
    throw;
  }
  progress.num_input_rows += read.rows;
  progress.data_loss += read.data_loss;
  progress.offset_out_of_range += read.offset_out_of_range;
  for (auto& w : read.warnings) progress.warnings.push_back(std::move(w));
}

QueryConnectionStats StreamingQuery::connection_stats() const {
  QueryConnectionStats out = retired_consumer_stats_;
  const auto& admin = admin_->connection_stats();
  out.admin_connects = admin.connects;
  out.reauthentications += admin.reauthentications;
  if (consumer_) {
    const auto& c = consumer_->client().connection_stats();
    out.consumer_connects += c.connects;
    out.reauthentications += c.reauthentications;
  }
  out.connects = out.admin_connects + out.consumer_connects;
  return out;
}

void StreamingQuery::finish_progress(BatchProgress& progress) {
  // Record sizes seen in this batch feed the bytes-behind estimate.
  const std::int64_t now = clock_->now_ms();
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

std::optional<BatchProgress> StreamingQuery::plan_next_batch() {
  // A plan changes nothing: the planner's state (AvailableNow target,
  // delayBatch clock) is put back, and execute() returns before writing.
  struct Restore {
    StreamingQuery& q;
    PlannerState saved;
    ~Restore() {
      q.planner_ = std::move(saved);
      q.dry_run_ = false;
    }
  } restore{*this, planner_};
  dry_run_ = true;
  return next_batch();
}

BatchProgress StreamingQuery::read_offset_ranges(const std::vector<OffsetRange>& ranges, std::int64_t batch_id) {
  trigger_started_ = std::chrono::steady_clock::now();
  trigger_wall_ms_ = clock_->now_ms();
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
  const std::int64_t now = clock_->now_ms();
  if (now - planner_.last_trigger_ms >= options_.max_trigger_delay_ms) {
    planner_.last_trigger_ms = now;
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
  planner_.last_trigger_ms = now;
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
  const auto parsed = parse_source_options(options, QueryMode::streaming);
  for (auto& w : parsed.warnings) warn(w);
  auto props = parsed.kafka_params;
  props.erase("group.id");
  const auto started = std::chrono::steady_clock::now();
  BatchProgress progress;
  progress.run_id = new_run_id();
  progress.timestamp_ms = now_ms();
  progress.ranges = {range};
  progress.start_offsets[range.tp.topic][range.tp.partition] = range.from_offset;
  progress.end_offsets[range.tp.topic][range.tp.partition] = range.until_offset;
  progress.sink_description = sink.description();
  client::Consumer consumer(RangeReader::consumer_properties(props));
  sink.begin_batch(0);
  auto read = RangeReader(consumer, RangeReaderOptions::from(parsed, executor_group_id(parsed, std::nullopt)))
                  .read({range}, sink);
  progress.num_output_rows = sink.commit_batch(0);
  progress.num_input_rows = read.rows;
  progress.data_loss = read.data_loss;
  progress.offset_out_of_range = read.offset_out_of_range;
  progress.warnings = std::move(read.warnings);
  progress.duration_ms = elapsed_ms(started);
  progress.durations_ms["addBatch"] = progress.duration_ms;
  progress.durations_ms["triggerExecution"] = progress.duration_ms;
  return progress;
}

void StreamingQuery::run(const std::function<void(const BatchProgress&)>& on_progress,
                         std::optional<std::int64_t> max_batches) {
  if (max_batches && *max_batches <= 0)
    throw std::invalid_argument(fmt::format("max_batches must be positive, got {}", *max_batches));
  std::int64_t batches = 0;
  while (!stop_requested_) {
    const std::int64_t started_ms = clock_->now_ms();
    auto progress = next_batch();
    if (progress) {
      ++batches;
      if (on_progress) on_progress(*progress);
      if (max_batches && batches >= *max_batches) return;
      // Trigger.Once runs a single batch: after a crash that is the replay of
      // the logged, uncommitted batch (Spark's SingleBatchExecutor).
      if (trigger_.kind == Trigger::Kind::once) return;
      if (trigger_.kind != Trigger::Kind::processing_time) continue;
    } else if (trigger_.kind != Trigger::Kind::processing_time) {
      return;  // backlog drained (available-now / once)
    } else if (trigger_.interval_ms < Trigger::kNoDataPollingDelayMs) {
      // Nothing new: as Spark's pollingDelay, wait a little before asking the
      // brokers again rather than spinning on ListOffsets.
      clock_->sleep_until_ms(clock_->now_ms() + Trigger::kNoDataPollingDelayMs, stop_requested_);
      continue;
    }
    // processing-time: wait for the next interval boundary.
    const std::int64_t next_ms = trigger_.next_trigger_ms(started_ms);
    clock_->sleep_until_ms(next_ms, stop_requested_);
  }
}

}  // namespace kwire::source
