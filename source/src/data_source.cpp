// SourcePlanner and RangeReadSession: Spark's Kafka source split as a host
// engine runs it, planning on a driver and reading ranges on executors.
#include "kwire/source/data_source.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/batch.hpp"
#include "offset_lookup.hpp"
#include "stream_util.hpp"

namespace kwire::source {

namespace {

constexpr const char* kFailOnDataLoss = "failOnDataLoss";
constexpr const char* kIncludeHeaders = "includeHeaders";
constexpr const char* kPollTimeout = "kafkaConsumer.pollTimeoutMs";
constexpr const char* kGroupId = "executorGroupId";

std::map<std::string, std::string> client_properties(const SourceOptions& options) {
  auto props = options.kafka_params;
  props.erase("group.id");
  return props;
}

ReaderSpec make_reader_spec(const SourceOptions& options) {
  ReaderSpec spec;
  for (const auto& [k, v] : client_properties(options)) spec["kafka." + k] = v;
  spec[kFailOnDataLoss] = options.fail_on_data_loss ? "true" : "false";
  spec[kIncludeHeaders] = options.include_headers ? "true" : "false";
  spec[kPollTimeout] = std::to_string(options.poll_timeout_ms);
  spec[kGroupId] = executor_group_id(options, std::nullopt);
  return spec;
}

BatchOffsetError start_after_end(const TopicPartition& tp, std::int64_t from, std::int64_t until) {
  return BatchOffsetError(
      fmt::format("[RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET] The resolved start offset {} is greater than the "
                  "resolved end offset {} for topic {} partition {}.",
                  from, until, tp.topic, tp.partition));
}

std::int64_t offset_of(const PartitionOffsets& offsets, const TopicPartition& tp) {
  return offsets.at(tp.topic).at(tp.partition);
}

bool contains(const PartitionOffsets& offsets, const std::string& topic, std::int32_t partition) {
  auto t = offsets.find(topic);
  return t != offsets.end() && t->second.count(partition) > 0;
}

}  // namespace

// ---------------------------------------------------------------- planner

SourcePlanner::SourcePlanner(const std::map<std::string, std::string>& options, QueryMode mode)
    : options_(parse_source_options(options, mode)), reader_spec_(make_reader_spec(options_)) {
  for (const auto& w : options_.warnings) detail::warn(w);
}

SourcePlanner::~SourcePlanner() = default;

client::KafkaClient& SourcePlanner::admin() {
  if (!admin_) admin_ = std::make_unique<client::KafkaClient>(client_properties(options_));
  return *admin_;
}

std::vector<TopicPartition> SourcePlanner::partitions() { return detail::discover_partitions(admin(), options_); }

std::vector<OffsetRange> SourcePlanner::batch_ranges() {
  auto tps = partitions();
  // Each end as Spark keeps it before a task starts: earliest / latest as
  // -2 / -1, specific offsets as given, timestamps resolved.
  auto unresolved = [&](const OffsetSpec& spec, bool ending) {
    PartitionOffsets out;
    if (std::holds_alternative<EarliestOffsets>(spec) || std::holds_alternative<LatestOffsets>(spec)) {
      const std::int64_t mark = std::holds_alternative<EarliestOffsets>(spec) ? kEarliestOffset : kLatestOffset;
      for (const auto& tp : tps) out[tp.topic][tp.partition] = mark;
      return out;
    }
    // JSON offsets and timestamps: checked against the partitions (Spark's
    // texts) and resolved; JSON's -2 / -1 then go back to unresolved.
    out = detail::resolve_offsets(admin(), options_, tps, spec, ending);
    if (const auto* specific = std::get_if<SpecificOffsets>(&spec)) {
      for (const auto& [t, parts] : specific->offsets)
        for (const auto& [p, off] : parts)
          if (off == kEarliestOffset || off == kLatestOffset) out[t][p] = off;
    }
    return out;
  };
  const PartitionOffsets from = unresolved(options_.starting, false);
  const PartitionOffsets until = unresolved(options_.ending, true);

  std::vector<OffsetRange> base;
  base.reserve(tps.size());
  bool divide = options_.min_partitions && static_cast<std::size_t>(*options_.min_partitions) > tps.size();
  for (const auto& tp : tps) {
    OffsetRange r{tp, offset_of(from, tp), offset_of(until, tp), std::nullopt};
    if (r.from_offset >= 0 && r.until_offset >= 0 && r.from_offset > r.until_offset)
      throw start_after_end(tp, r.from_offset, r.until_offset);
    // Spark compares the unresolved size: -1 - from is never above the limit.
    if (options_.max_records_per_partition && r.size() > *options_.max_records_per_partition) divide = true;
    base.push_back(std::move(r));
  }
  if (!divide) return base;

  // Split on the offsets known now; each partition's outer ends stay as given.
  std::vector<TopicPartition> need_earliest, need_latest;
  for (const auto& r : base) {
    for (std::int64_t end : {r.from_offset, r.until_offset}) {
      if (end == kEarliestOffset) need_earliest.push_back(r.tp);
      if (end == kLatestOffset) need_latest.push_back(r.tp);
    }
  }
  const auto earliest = detail::fetch_offsets(admin(), options_, need_earliest, client::kEarliestTimestamp);
  const auto latest = detail::fetch_offsets(admin(), options_, need_latest, client::kLatestTimestamp);
  auto resolve = [&](const TopicPartition& tp, std::int64_t off) {
    if (off == kEarliestOffset) return offset_of(earliest, tp);
    if (off == kLatestOffset) return offset_of(latest, tp);
    return off;
  };
  std::vector<OffsetRange> resolved;
  resolved.reserve(base.size());
  for (const auto& r : base)
    resolved.push_back(OffsetRange{r.tp, resolve(r.tp, r.from_offset), resolve(r.tp, r.until_offset), std::nullopt});
  std::vector<OffsetRange> parts =
      split_ranges(std::move(resolved), options_.min_partitions, options_.max_records_per_partition);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const TopicPartition& tp = parts[i].tp;
    if (i == 0 || !(parts[i - 1].tp == tp)) parts[i].from_offset = offset_of(from, tp);
    if (i + 1 == parts.size() || !(parts[i + 1].tp == tp)) parts[i].until_offset = offset_of(until, tp);
  }
  return parts;
}

PartitionOffsets SourcePlanner::initial_offsets() {
  auto tps = partitions();
  return detail::resolve_offsets(admin(), options_, tps, options_.starting, false);
}

PartitionOffsets SourcePlanner::latest_offsets(const PartitionOffsets& known) {
  auto tps = partitions();
  try {
    return detail::fetch_latest_offsets(admin(), options_, tps, known);
  } catch (const client::KafkaError& e) {
    // A partition listed a moment ago may be gone (its topic was just
    // deleted): list the partitions once more, as the streaming query does.
    if (e.code() != static_cast<std::int16_t>(protocol::ErrorCode::unknown_topic_or_partition)) throw;
    tps = partitions();
    return detail::fetch_latest_offsets(admin(), options_, tps, known);
  }
}

PartitionOffsets SourcePlanner::earliest_of_new(const PartitionOffsets& known, const PartitionOffsets& wanted) {
  std::vector<TopicPartition> fresh;
  for (const auto& [t, parts] : wanted)
    for (const auto& [p, _] : parts)
      if (!contains(known, t, p)) fresh.push_back(TopicPartition{t, p});
  if (fresh.empty()) return {};
  // Only partitions that still exist are listed (Spark's
  // fetchEarliestOffsets(newPartitions)): one deleted meanwhile is then
  // missing, which planning reports as INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS.
  const auto now = partitions();
  std::vector<TopicPartition> existing;
  for (const auto& tp : fresh)
    if (std::binary_search(now.begin(), now.end(), tp)) existing.push_back(tp);
  return detail::fetch_offsets(admin(), options_, existing, client::kEarliestTimestamp);
}

PartitionOffsets SourcePlanner::rate_limit(std::int64_t limit, const PartitionOffsets& start,
                                           const PartitionOffsets& latest) {
  return source::rate_limit(limit, start, latest, earliest_of_new(start, latest));
}

BatchPlan SourcePlanner::plan_micro_batch(const PartitionOffsets& start, const PartitionOffsets& end) {
  BatchPlan plan = plan_batch(start, end, earliest_of_new(start, end), plan_options(options_));
  for (const auto& w : plan.warnings) detail::warn(w);
  return plan;
}

// ---------------------------------------------------------------- executor

namespace {

bool spec_bool(const ReaderSpec& spec, const char* key) {
  auto it = spec.find(key);
  if (it == spec.end()) throw SourceOptionError(fmt::format("reader spec: {} is missing", key));
  if (it->second == "true") return true;
  if (it->second == "false") return false;
  throw SourceOptionError(fmt::format("reader spec: {} must be true or false, got '{}'", key, it->second));
}

std::int64_t spec_int(const ReaderSpec& spec, const char* key) {
  auto it = spec.find(key);
  if (it == spec.end()) throw SourceOptionError(fmt::format("reader spec: {} is missing", key));
  std::int64_t v = 0;
  const auto& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0)
    throw SourceOptionError(fmt::format("reader spec: {} must be a non-negative integer, got '{}'", key, s));
  return v;
}

}  // namespace

RangeReadSession::RangeReadSession(const ReaderSpec& spec) {
  for (const auto& [k, v] : spec)
    if (k.rfind("kafka.", 0) == 0) client_properties_[k.substr(6)] = v;
  if (client_properties_.empty()) throw SourceOptionError("reader spec: no kafka.* client property");
  options_.fail_on_data_loss = spec_bool(spec, kFailOnDataLoss);
  options_.include_headers = spec_bool(spec, kIncludeHeaders);
  options_.poll_timeout_ms = spec_int(spec, kPollTimeout);
  auto g = spec.find(kGroupId);
  if (g != spec.end()) options_.group_id = g->second;
  client_properties_ = RangeReader::consumer_properties(std::move(client_properties_));
  // Bad client properties fail here, not at the first read.
  consumer_ = std::make_unique<client::Consumer>(client_properties_);
}

RangeReadSession::~RangeReadSession() = default;

RangeReadResult RangeReadSession::read(const OffsetRange& range, Sink& sink) {
  if (!consumer_) consumer_ = std::make_unique<client::Consumer>(client_properties_);
  try {
    OffsetRange r = range;
    r.preferred_location.reset();
    if (r.from_offset < 0 || r.until_offset < 0) {
      // Late binding, as Spark's executors: the offsets the partition has now.
      const client::TopicPartition tp{r.tp.topic, r.tp.partition};
      if (r.from_offset == kEarliestOffset) r.from_offset = consumer_->beginning_offsets({tp}).at(tp);
      if (r.until_offset == kLatestOffset) r.until_offset = consumer_->end_offsets({tp}).at(tp);
      if (r.from_offset < 0 || r.until_offset < 0)
        throw SourceOptionError(fmt::format("range of {}: offsets [{}, {}) are neither offsets nor -2 / -1",
                                            to_string(r.tp), range.from_offset, range.until_offset));
    }
    if (r.from_offset >= r.until_offset) return {};
    return RangeReader(*consumer_, options_).read({r}, sink);
  } catch (...) {
    consumer_.reset();
    throw;
  }
}

}  // namespace kwire::source
