#include "kwire/source/stream.hpp"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/json_escape.hpp"

namespace kwire::source {

namespace fs = std::filesystem;
using client::KafkaClient;

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

client::TopicPartition to_client(const TopicPartition& tp) { return client::TopicPartition{tp.topic, tp.partition}; }

void warn(const std::string& text) { fmt::print(stderr, "WARN {}\n", text); }

std::string ranges_text(const std::vector<OffsetRange>& ranges) {
  std::string out;
  for (auto& r : ranges) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}:[{},{})", to_string(r.tp), r.from_offset, r.until_offset);
  }
  return out.empty() ? "-" : out;
}

}  // namespace

// ------------------------------------------------------------------ sinks

JsonLinesSink::JsonLinesSink(fs::path dir, Formatter formatter) : dir_(std::move(dir)), formatter_(std::move(formatter)) {
  fs::create_directories(dir_);
}

void JsonLinesSink::begin_batch(std::int64_t) {
  buffer_.clear();
  kept_ = 0;
}

std::string JsonLinesSink::to_json(const Row& row) {
  std::string out = "{\"key\":";
  if (row.key)
    append_json_string(out, row.key_string());
  else
    out += "null";
  out += ",\"value\":";
  if (row.value)
    append_json_string(out, row.value_string());
  else
    out += "null";
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
      else
        out += "null";
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
    out += JsonLinesSink::to_json(r);
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
    throw SourceOptionError(fmt::format(
        "invalid trigger '{}': expected available-now, once or processing-time=DURATION", text));
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
  if (lag)
    metrics = fmt::format(
        "{{\"avgOffsetsBehindLatest\":\"{:.1f}\",\"maxOffsetsBehindLatest\":\"{}\",\"minOffsetsBehindLatest\":\"{}\","
        "\"dataLoss\":\"{}\",\"offsetOutOfRange\":\"{}\"}}",
        lag->avg_offsets_behind_latest, lag->max_offsets_behind_latest, lag->min_offsets_behind_latest, data_loss,
        offset_out_of_range);
  return fmt::format(
      "{{\"batchId\":{},\"replayed\":{},\"numInputRows\":{},\"numOutputRows\":{},\"durationMs\":{},\"sources\":[{{"
      "\"description\":{},\"startOffset\":{},\"endOffset\":{},\"latestOffset\":{},\"numInputRows\":{},\"metrics\":{}}}]}}",
      batch_id, replayed, num_input_rows, num_output_rows, duration_ms, json_string(description),
      checkpoint::offsets_to_json(start_offsets), checkpoint::offsets_to_json(end_offsets),
      checkpoint::offsets_to_json(latest_offsets), num_input_rows, metrics);
}

// ------------------------------------------------------------------ query

StreamingQuery::StreamingQuery(const std::map<std::string, std::string>& options, fs::path checkpoint_dir, Sink& sink,
                               Trigger trigger)
    : options_(parse_source_options(options, QueryMode::streaming)),
      checkpoint_(std::move(checkpoint_dir)),
      sink_(sink),
      trigger_(trigger) {
  for (auto& w : options_.warnings) warn(w);
  if (trigger_.kind == Trigger::Kind::once && (options_.max_offsets_per_trigger || options_.min_offsets_per_trigger))
    warn("The read limit (maxOffsetsPerTrigger / minOffsetsPerTrigger) is ignored when Trigger.Once is used.");
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
    if (attempt < attempts) std::this_thread::sleep_for(std::chrono::milliseconds(options_.fetch_offset_retry_interval_ms));
  }
  return latest;
}

PartitionOffsets StreamingQuery::resolve_initial_offsets() {
  auto tps = discover_partitions();
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
  auto resume = checkpoint_.resume();
  if (resume.replay_batch) {
    // Replay the logged, uncommitted batch with exactly the logged range.
    const auto& end = *resume.replay_end;
    PlanOptions po = plan_options(options_);
    po.fail_on_data_loss = false;  // the range was validated when it was planned
    std::vector<TopicPartition> tps;
    for (auto& [t, parts] : end)
      for (auto& [p, _] : parts) tps.push_back({t, p});
    auto earliest = fetch_offsets(tps, client::kEarliestTimestamp);
    auto plan = plan_batch(resume.start, end, earliest, po);
    return execute(*resume.replay_batch, resume.start, end, plan.ranges, end, true, {});
  }
  PartitionOffsets start = resume.start;
  if (resume.next_batch_id == 0 && !checkpoint_.initial_offsets()) {
    start = resolve_initial_offsets();
    checkpoint_.write_initial_offsets(start);
  } else if (resume.next_batch_id == 0) {
    start = *checkpoint_.initial_offsets();
  }
  auto tps = discover_partitions();
  auto latest = latest_offsets(tps, start);

  // New partitions (not in start) begin at their earliest offset.
  std::vector<TopicPartition> new_tps;
  for (auto& tp : tps) {
    auto t = start.find(tp.topic);
    if (t == start.end() || !t->second.count(tp.partition)) new_tps.push_back(tp);
  }
  auto earliest_for_new = fetch_offsets(new_tps, client::kEarliestTimestamp);

  PartitionOffsets end = latest;
  if (trigger_.kind == Trigger::Kind::available_now) {
    if (!available_now_target_) available_now_target_ = latest;
    end = *available_now_target_;
    // Partitions that appeared after the target was taken wait for a later run.
  }
  if (trigger_.kind != Trigger::Kind::once && options_.max_offsets_per_trigger)
    end = rate_limit(*options_.max_offsets_per_trigger, start, end, earliest_for_new);

  // Nothing new?
  bool has_new = false;
  for (auto& [t, parts] : end)
    for (auto& [p, off] : parts) {
      auto st = start.find(t);
      std::int64_t from = -1;
      if (st != start.end() && st->second.count(p))
        from = st->second.at(p);
      else if (earliest_for_new.count(t) && earliest_for_new.at(t).count(p))
        from = earliest_for_new.at(t).at(p);
      if (from < 0 || off != from) has_new = true;
    }
  for (auto& [t, parts] : start)
    for (auto& [p, _] : parts)
      if (!end.count(t) || !end.at(t).count(p)) has_new = true;  // deleted partition: let planning classify it
  if (!has_new) return std::nullopt;

  auto plan = plan_batch(start, end, earliest_for_new, plan_options(options_));
  for (auto& w : plan.warnings) warn(w);
  if (plan.end.empty()) return std::nullopt;  // an empty listing never becomes a committed batch
  return execute(resume.next_batch_id, start, plan.end, plan.ranges, latest, false, plan.warnings);
}

BatchProgress StreamingQuery::execute(std::int64_t batch_id, const PartitionOffsets& start, const PartitionOffsets& end,
                                      std::vector<OffsetRange> ranges, const PartitionOffsets& latest, bool replay,
                                      std::vector<std::string> warnings) {
  auto t0 = std::chrono::steady_clock::now();
  if (!replay) checkpoint_.write_offsets(batch_id, end, now_ms());
  BatchProgress progress;
  progress.batch_id = batch_id;
  progress.replayed = replay;
  progress.start_offsets = start;
  progress.end_offsets = end;
  progress.latest_offsets = latest;
  progress.ranges = ranges;
  progress.warnings = std::move(warnings);
  sink_.begin_batch(batch_id);
  read_range(ranges, progress);
  progress.num_output_rows = sink_.commit_batch(batch_id);
  checkpoint_.write_commit(batch_id);
  progress.lag = offsets_behind_latest(latest, end);
  progress.duration_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  return progress;
}

void StreamingQuery::read_range(const std::vector<OffsetRange>& ranges, BatchProgress& progress) {
  if (ranges.empty()) return;
  // Ranges of one partition are contiguous after splitting; read each
  // partition's [min from, max until) in one pass.
  std::map<client::TopicPartition, std::pair<std::int64_t, std::int64_t>> want;  // next, until
  for (auto& r : ranges) {
    auto tp = to_client(r.tp);
    auto it = want.find(tp);
    if (it == want.end())
      want[tp] = {r.from_offset, r.until_offset};
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

  const std::optional<std::string> group_id =
      options_.kafka_params.count("group.id") ? std::optional<std::string>(options_.kafka_params.at("group.id"))
                                              : std::nullopt;
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
      auto earliest = consumer.beginning_offsets({tp})[tp];
      auto latest = consumer.end_offsets({tp})[tp];
      warn(fmt::format("Some data may be lost. Recovering from the earliest offset: {} (partition {})", earliest,
                       client::to_string(tp)));
      if (next >= latest || earliest >= until) {
        progress.offset_out_of_range += until - next;
        warn(fmt::format("Skip missing records in [{}, {}) of {}", next, until, client::to_string(tp)));
        next = until;
        done.insert(tp);
        consumer.pause({tp});
      } else if (next < earliest) {
        progress.offset_out_of_range += earliest - next;
        warn(fmt::format("Skip missing records in [{}, {}) of {}", next, earliest, client::to_string(tp)));
        next = earliest;
        consumer.seek(tp, earliest);
      }
      last_progress = std::chrono::steady_clock::now();
      continue;
    }
    rows.clear();
    rows.reserve(recs.size());
    for (auto& r : recs) {
      client::TopicPartition tp{*r.topic, r.partition};
      auto it = want.find(tp);
      if (it == want.end()) continue;
      auto& [next, until] = it->second;
      if (r.offset < next) continue;
      if (r.offset >= until) continue;
      if (r.offset > next) {
        // A gap: compaction, transaction markers or aborted records are
        // invisible and fine; records that aged out (earliest moved past
        // `next`) are data loss.
        auto earliest = consumer.beginning_offsets({tp})[tp];
        if (earliest > next) {
          if (options_.fail_on_data_loss)
            throw DataLossError::could_not_read_offset_range(TopicPartition{tp.topic, tp.partition}, next, r.offset,
                                                             group_id);
          warn(fmt::format("Skip missing records in [{}, {}) of {}", next, r.offset, client::to_string(tp)));
          progress.data_loss += 1;
        }
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

void StreamingQuery::run(const std::function<void(const BatchProgress&)>& on_progress,
                         std::optional<std::int64_t> max_batches) {
  std::int64_t batches = 0;
  while (!stop_requested_) {
    auto started = std::chrono::steady_clock::now();
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
    }
    // processing-time: wait for the next interval boundary.
    auto next = started + std::chrono::milliseconds(trigger_.interval_ms);
    while (!stop_requested_ && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          next - std::chrono::steady_clock::now(), std::chrono::milliseconds(100)));
  }
}

}  // namespace kwire::source
