#include "kwire/source/planning.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "kwire/source/options.hpp"

namespace kwire::source {
namespace {

constexpr std::string_view kDataLossMain =
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you don't want your streaming query to fail on such cases, set the "
    "source option failOnDataLoss to false. Reason:";

constexpr std::string_view kInstructionForFalse =
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you want your streaming query to fail on such cases, set the source "
    "option \"failOnDataLoss\" to \"true\".";

constexpr std::string_view kGroupIdText =
    "Kafka option 'kafka.group.id' has been set on this query, it is not recommended to set this "
    "option. This option is unsafe to use since multiple concurrent queries or sources using the "
    "same group id will interfere with each other as they are part of the same consumer group. "
    "Restarted queries may also suffer interference from the previous run having the same group "
    "id. The user should have only one query per group id, and/or set the option "
    "'kafka.session.timeout.ms' to be very small so that the Kafka consumers from the previous "
    "query are marked dead by the Kafka group coordinator before the restarted query starts "
    "running.";

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();

// Two's-complement arithmetic as on the JVM (no undefined behaviour on overflow).
std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
std::int64_t wrap_sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}

// The JVM's (long) conversion of a double: saturating, NaN -> 0.
std::int64_t java_double_to_long(double d) {
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775808.0) return kInt64Max;
  if (d <= -9223372036854775808.0) return kInt64Min;
  return static_cast<std::int64_t>(d);
}

// java.lang.Math.round(double).
std::int64_t java_round(double d) { return java_double_to_long(std::floor(d + 0.5)); }

// Lookups go topic by topic: one string comparison chain per topic, then
// integer keys, and no TopicPartition (string copy) built just to look up.
using PartitionMap = PartitionOffsets::mapped_type;

const PartitionMap* find_topic(const PartitionOffsets& m, const std::string& topic) {
  auto t = m.find(topic);
  return t == m.end() ? nullptr : &t->second;
}

std::optional<std::int64_t> find_partition(const PartitionMap* parts, std::int32_t partition) {
  if (parts == nullptr) return std::nullopt;
  auto p = parts->find(partition);
  if (p == parts->end()) return std::nullopt;
  return p->second;
}

std::size_t partition_count(const PartitionOffsets& m) {
  std::size_t n = 0;
  for (const auto& [topic, parts] : m) n += parts.size();
  return n;
}

std::string set_text(const std::set<TopicPartition>& tps) {
  std::vector<std::string> names;
  names.reserve(tps.size());
  for (const auto& tp : tps) names.push_back(to_string(tp));
  return fmt::format("Set({})", fmt::join(names, ", "));
}

// Splits one range into `parts` pieces: piece i gets remaining / (parts - i).
void split_into(const OffsetRange& range, std::int64_t parts, std::vector<OffsetRange>& out) {
  std::int64_t remaining = range.size();
  std::int64_t start = range.from_offset;
  for (std::int64_t i = 0; i < parts; ++i) {
    const std::int64_t piece = remaining / (parts - i);
    remaining -= piece;
    const std::int64_t end = std::min(wrap_add(start, piece), range.until_offset);
    out.push_back(OffsetRange{range.tp, start, end, std::nullopt});
    start = end;
  }
}

std::int64_t part_count(std::int64_t size, std::int64_t total, std::int64_t min_parts) {
  const double share = static_cast<double>(size) / static_cast<double>(total) * static_cast<double>(min_parts);
  return std::max<std::int64_t>(java_round(share), 1);
}

}  // namespace

// ---- rate_limit ----

PartitionOffsets rate_limit(std::int64_t limit, const PartitionOffsets& from, const PartitionOffsets& until,
                            const PartitionOffsets& earliest_for_new) {
  // Begin offset and backlog of each partition of `until`, in its order; a
  // backlog of 0 marks a partition that keeps `until` (no begin, or size <= 0).
  struct Backlog {
    std::int64_t begin = 0;
    std::int64_t size = 0;
  };
  std::vector<Backlog> backlogs;
  backlogs.reserve(partition_count(until));
  std::int64_t total_long = 0;
  for (const auto& [topic, parts] : until) {
    const PartitionMap* from_parts = find_topic(from, topic);
    const PartitionMap* new_parts = find_topic(earliest_for_new, topic);
    for (const auto& [p, end] : parts) {
      Backlog& b = backlogs.emplace_back();
      auto begin = find_partition(from_parts, p);
      if (!begin) begin = find_partition(new_parts, p);
      if (!begin) continue;
      const std::int64_t size = wrap_sub(end, *begin);
      if (size > 0) {
        b = Backlog{*begin, size};
        total_long = wrap_add(total_long, size);
      }
    }
  }
  const double total = static_cast<double>(total_long);
  if (total < 1) return until;

  PartitionOffsets result;
  std::size_t i = 0;
  for (const auto& [topic, parts] : until) {
    if (parts.empty()) continue;
    auto& out = result.emplace_hint(result.end(), topic, PartitionMap{})->second;
    for (const auto& [p, end] : parts) {
      const Backlog& b = backlogs[i++];
      std::int64_t offset = end;
      if (b.size > 0) {
        const double prorate = static_cast<double>(limit) * (static_cast<double>(b.size) / total);
        const std::int64_t n = java_double_to_long(prorate < 1 ? std::ceil(prorate) : std::floor(prorate));
        const std::int64_t off = n > wrap_sub(kInt64Max, b.begin) ? kInt64Max : wrap_add(b.begin, n);
        offset = std::min(end, off);
      }
      out.emplace_hint(out.end(), p, offset);
    }
  }
  return result;
}

// ---- split_ranges ----

std::vector<OffsetRange> partition_spans(const std::vector<OffsetRange>& ranges) {
  std::map<TopicPartition, OffsetRange> spans;
  for (const OffsetRange& r : ranges) {
    auto [it, added] = spans.try_emplace(r.tp, r);
    if (added) continue;
    it->second.from_offset = std::min(it->second.from_offset, r.from_offset);
    it->second.until_offset = std::max(it->second.until_offset, r.until_offset);
  }
  std::vector<OffsetRange> out;
  out.reserve(spans.size());
  for (auto& [tp, span] : spans) out.push_back(std::move(span));
  return out;
}

std::vector<OffsetRange> split_ranges(std::vector<OffsetRange> ranges, std::optional<std::int32_t> min_partitions,
                                      std::optional<std::int64_t> max_records_per_partition) {
  if (min_partitions && *min_partitions <= 0) {
    throw std::invalid_argument("minPartitions must be positive");
  }
  if (max_records_per_partition && *max_records_per_partition <= 0) {
    throw std::invalid_argument("maxRecordsPerPartition must be positive");
  }

  std::vector<OffsetRange> kept;
  kept.reserve(ranges.size());
  for (auto& r : ranges) {
    if (r.size() > 0) {
      r.preferred_location.reset();
      kept.push_back(std::move(r));
    }
  }

  // 1. Cap each range at max_records_per_partition offsets.
  if (max_records_per_partition) {
    const std::int64_t max = *max_records_per_partition;
    std::vector<OffsetRange> capped;
    capped.reserve(kept.size());
    for (auto& r : kept) {
      const std::int64_t size = r.size();
      const std::int64_t parts = size / max + (size % max != 0 ? 1 : 0);
      if (parts <= 1) {
        capped.push_back(std::move(r));
      } else {
        split_into(r, parts, capped);
      }
    }
    kept = std::move(capped);
  }

  // 2. Reach min_partitions by splitting large ranges in proportion to size.
  if (!min_partitions || static_cast<std::int64_t>(kept.size()) >= *min_partitions) return kept;

  const std::int64_t min_parts = *min_partitions;
  std::int64_t total = 0;
  for (const auto& r : kept) total = wrap_add(total, r.size());

  std::vector<bool> whole(kept.size(), false);
  std::int64_t whole_count = 0;
  std::int64_t whole_total = 0;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (part_count(kept[i].size(), total, min_parts) == 1) {
      whole[i] = true;
      ++whole_count;
      whole_total = wrap_add(whole_total, kept[i].size());
    }
  }
  const std::int64_t split_total = wrap_sub(total, whole_total);
  const std::int64_t split_min_parts = std::max<std::int64_t>(min_parts - whole_count, 1);

  std::vector<OffsetRange> out;
  out.reserve(static_cast<std::size_t>(min_parts) + kept.size());
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (whole[i]) {
      out.push_back(std::move(kept[i]));
      continue;
    }
    split_into(kept[i], part_count(kept[i].size(), split_total, split_min_parts), out);
  }
  std::erase_if(out, [](const OffsetRange& r) { return r.size() <= 0; });
  return out;
}

// ---- Data loss ----

std::string_view data_loss_name(DataLossKind kind) {
  switch (kind) {
    case DataLossKind::partitions_deleted: return "PARTITIONS_DELETED";
    case DataLossKind::partitions_deleted_and_group_id_config_present:
      return "PARTITIONS_DELETED_AND_GROUP_ID_CONFIG_PRESENT";
    case DataLossKind::initial_offset_not_found_for_partitions: return "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS";
    case DataLossKind::added_partition_does_not_start_from_offset_zero:
      return "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO";
    case DataLossKind::partition_offset_changed: return "PARTITION_OFFSET_CHANGED";
    case DataLossKind::could_not_read_offset_range: return "COULD_NOT_READ_OFFSET_RANGE";
  }
  return "UNKNOWN";
}

DataLossError::DataLossError(DataLossKind kind, std::string reason, std::vector<TopicPartition> partitions,
                             std::int64_t start_offset, std::int64_t end_offset)
    : std::runtime_error(fmt::format("KAFKA_DATA_LOSS.{}: {} {}", data_loss_name(kind), kDataLossMain, reason)),
      kind_(kind),
      reason_(std::move(reason)),
      partitions_(std::move(partitions)),
      start_offset_(start_offset),
      end_offset_(end_offset) {}

DataLossError DataLossError::partitions_deleted(const std::set<TopicPartition>& partitions, bool group_id_set) {
  std::string reason = fmt::format("Partitions {} have been deleted.", set_text(partitions));
  if (group_id_set) {
    reason += ' ';
    reason += kGroupIdText;
  }
  return DataLossError(
      group_id_set ? DataLossKind::partitions_deleted_and_group_id_config_present : DataLossKind::partitions_deleted,
      std::move(reason), {partitions.begin(), partitions.end()}, -1, -1);
}

DataLossError DataLossError::initial_offset_not_found(const std::set<TopicPartition>& partitions) {
  return DataLossError(
      DataLossKind::initial_offset_not_found_for_partitions,
      fmt::format("Cannot find initial offsets for partitions {}. They may have been deleted.", set_text(partitions)),
      {partitions.begin(), partitions.end()}, -1, -1);
}

DataLossError DataLossError::added_partition_not_from_zero(const TopicPartition& tp, std::int64_t start_offset) {
  return DataLossError(DataLossKind::added_partition_does_not_start_from_offset_zero,
                       fmt::format("Added partition {} starts from {} instead of 0.", to_string(tp), start_offset),
                       {tp}, start_offset, -1);
}

DataLossError DataLossError::partition_offset_changed(const TopicPartition& tp, std::int64_t prev_offset,
                                                      std::int64_t new_offset) {
  return DataLossError(DataLossKind::partition_offset_changed,
                       fmt::format("Partition {} offset was changed from {} to {}. This could be either 1) a user "
                                   "error that the start offset is set beyond available offset when starting "
                                   "query, or 2) the kafka topic-partition is deleted and re-created.",
                                   to_string(tp), prev_offset, new_offset),
                       {tp}, prev_offset, new_offset);
}

DataLossError DataLossError::could_not_read_offset_range(const TopicPartition& tp, std::int64_t start_offset,
                                                         std::int64_t end_offset,
                                                         const std::optional<std::string>& group_id) {
  return DataLossError(DataLossKind::could_not_read_offset_range,
                       fmt::format("Could not read records in offset [{}, {}) for topic partition {} with "
                                   "consumer group {}.",
                                   start_offset, end_offset, to_string(tp), group_id.value_or("null")),
                       {tp}, start_offset, end_offset);
}

std::string DataLossError::topic() const { return partitions_.empty() ? std::string() : partitions_.front().topic; }

std::int32_t DataLossError::partition() const { return partitions_.empty() ? -1 : partitions_.front().partition; }

std::string data_loss_warning(const DataLossError& error) {
  return fmt::format("KAFKA_DATA_LOSS.{} (failOnDataLoss=false, continuing): {} {}", data_loss_name(error.kind()),
                     error.reason(), kInstructionForFalse);
}

bool is_lost_gap(std::int64_t requested_offset, std::int64_t earliest_available) {
  return earliest_available > requested_offset;
}

// ---- plan_batch ----

PlanOptions plan_options(const SourceOptions& options) {
  PlanOptions p;
  p.fail_on_data_loss = options.fail_on_data_loss;
  p.group_id_set = options.group_id_set();
  p.min_partitions = options.min_partitions;
  p.max_records_per_partition = options.max_records_per_partition;
  return p;
}

BatchPlan plan_batch(const PartitionOffsets& start, const PartitionOffsets& end,
                     const PartitionOffsets& earliest_for_new, const PlanOptions& options) {
  BatchPlan plan;
  plan.end = end;
  auto report = [&](const DataLossError& e) {
    if (options.fail_on_data_loss) throw e;
    plan.warnings.push_back(data_loss_warning(e));
  };

  // The maps iterate in (topic, partition) order, the order of TopicPartition,
  // so every pass below visits partitions in the order the rules check them.

  // 1. New partitions (in end, not in start) start at their earliest offset.
  struct NewPartition {
    const std::string* topic;
    std::int32_t partition;
    std::int64_t earliest;
  };
  std::vector<NewPartition> new_initial;
  std::set<TopicPartition> not_found;
  for (const auto& [topic, parts] : end) {
    const PartitionMap* start_parts = find_topic(start, topic);
    const PartitionMap* earliest_parts = find_topic(earliest_for_new, topic);
    for (const auto& [p, offset] : parts) {
      (void)offset;
      if (start_parts != nullptr && start_parts->count(p)) continue;
      if (auto earliest = find_partition(earliest_parts, p)) {
        new_initial.push_back(NewPartition{&topic, p, *earliest});
      } else {
        not_found.insert(not_found.end(), TopicPartition{topic, p});
      }
    }
  }
  if (!not_found.empty()) report(DataLossError::initial_offset_not_found(not_found));
  for (const auto& n : new_initial) {
    if (n.earliest != 0)
      report(DataLossError::added_partition_not_from_zero(TopicPartition{*n.topic, n.partition}, n.earliest));
  }

  // 2. Partitions that disappeared.
  std::set<TopicPartition> deleted;
  for (const auto& [topic, parts] : start) {
    const PartitionMap* end_parts = find_topic(end, topic);
    for (const auto& [p, offset] : parts) {
      (void)offset;
      if (end_parts == nullptr || !end_parts->count(p)) deleted.insert(deleted.end(), TopicPartition{topic, p});
    }
  }
  if (!deleted.empty()) report(DataLossError::partitions_deleted(deleted, options.group_id_set));

  // 3. Ranges over partitions with a known start (new ones come up in the
  // same order as in step 1, so a cursor finds their earliest offset).
  std::vector<OffsetRange> ranges;
  ranges.reserve(partition_count(end));
  auto next_new = new_initial.cbegin();
  for (const auto& [topic, parts] : end) {
    const PartitionMap* start_parts = find_topic(start, topic);
    for (const auto& [p, until] : parts) {
      std::optional<std::int64_t> from = find_partition(start_parts, p);
      if (!from) {
        if (next_new == new_initial.cend() || next_new->topic != &topic || next_new->partition != p)
          continue;  // start unknown: skipped
        from = (next_new++)->earliest;
      }
      TopicPartition tp{topic, p};
      if (until < *from) report(DataLossError::partition_offset_changed(tp, *from, until));
      ranges.push_back(OffsetRange{std::move(tp), *from, until, std::nullopt});
    }
  }

  // 4. Drop empty/negative ranges and split.
  plan.ranges = split_ranges(std::move(ranges), options.min_partitions, options.max_records_per_partition);
  return plan;
}

// ---- Lag metrics ----

std::optional<LagMetrics> offsets_behind_latest(const PartitionOffsets& latest, const PartitionOffsets& consumed_end) {
  std::int64_t count = 0, sum = 0;
  LagMetrics m;
  m.min_offsets_behind_latest = kInt64Max;
  m.max_offsets_behind_latest = kInt64Min;
  for (const auto& [topic, parts] : latest) {
    const PartitionMap* consumed_parts = find_topic(consumed_end, topic);
    if (consumed_parts == nullptr) continue;
    for (const auto& [p, latest_offset] : parts) {
      auto consumed = find_partition(consumed_parts, p);
      if (!consumed) continue;
      const std::int64_t behind = wrap_sub(latest_offset, *consumed);
      m.min_offsets_behind_latest = std::min(m.min_offsets_behind_latest, behind);
      m.max_offsets_behind_latest = std::max(m.max_offsets_behind_latest, behind);
      sum = wrap_add(sum, behind);
      ++count;
    }
  }
  if (count == 0) return std::nullopt;
  m.avg_offsets_behind_latest = static_cast<double>(sum) / static_cast<double>(count);
  return m;
}

}  // namespace kwire::source
