#include "offset_lookup.hpp"

#include <algorithm>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "stream_util.hpp"

namespace kwire::source::detail {

std::vector<TopicPartition> discover_partitions(client::KafkaClient& admin, const SourceOptions& options) {
  std::vector<TopicPartition> out;
  const int attempts = std::max(1, options.fetch_offset_num_retries);
  for (int attempt = 1;; ++attempt) {
    try {
      out.clear();
      if (auto* s = std::get_if<Subscribe>(&options.strategy)) {
        auto md = admin.metadata(s->topics);
        for (auto& name : s->topics) {
          auto* t = md.topic(name);
          if (!t || t->error_code != 0)
            throw client::KafkaError(t ? t->error_code : 3,
                                     fmt::format("subscribed topic '{}' is not available: {}", name,
                                                 protocol::error_name(t ? t->error_code : 3)));
          for (auto& p : t->partitions) out.push_back({name, p.partition});
        }
      } else if (auto* p = std::get_if<SubscribePattern>(&options.strategy)) {
        std::regex re(p->pattern, std::regex::ECMAScript);
        auto md = admin.metadata(std::nullopt);
        for (auto& t : md.topics) {
          if (t.is_internal || t.error_code != 0 || !std::regex_search(t.name, re)) continue;
          for (auto& part : t.partitions) out.push_back({t.name, part.partition});
        }
      } else {
        auto& a = std::get<Assign>(options.strategy);
        std::vector<std::string> names;
        for (auto& [t, _] : a.partitions) names.push_back(t);
        auto md = admin.metadata(names);
        // As Spark's AssignStrategy: the topics are described (a missing one
        // fails, after the retries, as under subscribe) and the assigned
        // partitions that exist are kept; a partition number the topic does
        // not have is left out without a warning.
        for (auto& [name, parts] : a.partitions) {
          auto* t = md.topic(name);
          if (!t || t->error_code != 0)
            throw client::KafkaError(t ? t->error_code : 3,
                                     fmt::format("assigned topic '{}' is not available: {}", name,
                                                 protocol::error_name(t ? t->error_code : 3)));
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
      std::this_thread::sleep_for(std::chrono::milliseconds(options.fetch_offset_retry_interval_ms));
    }
  }
}

namespace {

// ListOffsets tried fetchOffset.numRetries times, fetchOffset.retryIntervalMs
// apart, then the last error is thrown (Spark's withRetries).
std::map<client::TopicPartition, client::ListedOffset> list_offsets_with_retries(
    client::KafkaClient& admin, const SourceOptions& options,
    const std::map<client::TopicPartition, std::int64_t>& req) {
  const int attempts = std::max(1, options.fetch_offset_num_retries);
  for (int attempt = 1;; ++attempt) {
    try {
      return admin.list_offsets(req);
    } catch (const client::ClientError& e) {
      if (attempt >= attempts) throw;
      warn(fmt::format("fetching offsets failed (attempt {} of {}): {}", attempt, attempts, e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(options.fetch_offset_retry_interval_ms));
    }
  }
}

}  // namespace

PartitionOffsets fetch_offsets(client::KafkaClient& admin, const SourceOptions& options,
                               const std::vector<TopicPartition>& tps, std::int64_t target) {
  PartitionOffsets out;
  if (tps.empty()) return out;
  std::map<client::TopicPartition, std::int64_t> req;
  for (auto& tp : tps) req[tp] = target;
  for (auto& [tp, lo] : list_offsets_with_retries(admin, options, req)) out[tp.topic][tp.partition] = lo.offset;
  return out;
}

PartitionOffsets fetch_latest_offsets(client::KafkaClient& admin, const SourceOptions& options,
                                      const std::vector<TopicPartition>& tps, const PartitionOffsets& known) {
  PartitionOffsets latest;
  const int attempts = std::max(1, options.fetch_offset_num_retries);
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    latest = fetch_offsets(admin, options, tps, client::kLatestTimestamp);
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
      std::this_thread::sleep_for(std::chrono::milliseconds(options.fetch_offset_retry_interval_ms));
  }
  return latest;
}

PartitionOffsets resolve_offsets(client::KafkaClient& admin, const SourceOptions& options,
                                 const std::vector<TopicPartition>& tps, const OffsetSpec& spec, bool ending,
                                 std::string_view option) {
  if (std::holds_alternative<EarliestOffsets>(spec))
    return fetch_offsets(admin, options, tps, client::kEarliestTimestamp);
  if (std::holds_alternative<LatestOffsets>(spec)) return fetch_offsets(admin, options, tps, client::kLatestTimestamp);
  if (auto* s = std::get_if<SpecificOffsets>(&spec)) {
    std::set<TopicPartition> given, assigned(tps.begin(), tps.end());
    for (auto& [t, parts] : s->offsets)
      for (auto& [p, _] : parts) given.insert({t, p});
    if (given != assigned) {
      // Spark's assertion (KafkaOffsetReader fetchSpecificOffsets for a
      // stream, fetchPartitionOffsets for a batch, which says startingOffsets
      // for either end), its sets printed as Scala does: Set(t-0, t-1).
      // kwire lists the partitions sorted; Spark's order follows its hash sets.
      std::vector<std::string> g, a;
      for (auto& tp : given) g.push_back(to_string(tp));
      for (auto& tp : assigned) a.push_back(to_string(tp));
      (void)option;
      throw SourceOptionError(fmt::format(
          "assertion failed: If startingOffsets contains specific offsets, you must specify all TopicPartitions.\n"
          "Use -1 for latest, -2 for earliest{}.\nSpecified: Set({}) Assigned: Set({})",
          options.mode == QueryMode::batch ? "" : ", if you don't care", fmt::join(g, ", "), fmt::join(a, ", ")));
    }
    PartitionOffsets out = s->offsets;
    std::vector<TopicPartition> need_e, need_l;
    for (auto& [t, parts] : out)
      for (auto& [p, off] : parts) {
        if (off == kEarliestOffset) need_e.push_back({t, p});
        if (off == kLatestOffset) need_l.push_back({t, p});
      }
    for (auto& [t, parts] : fetch_offsets(admin, options, need_e, client::kEarliestTimestamp))
      for (auto& [p, off] : parts) out[t][p] = off;
    for (auto& [t, parts] : fetch_offsets(admin, options, need_l, client::kLatestTimestamp))
      for (auto& [p, off] : parts) out[t][p] = off;
    return out;
  }
  // Timestamps.
  std::map<client::TopicPartition, std::int64_t> req;
  if (auto* g = std::get_if<GlobalTimestamp>(&spec)) {
    for (auto& tp : tps) req[tp] = g->timestamp_ms;
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
          fmt::format("KAFKA_TIMESTAMP_OFFSET_DOES_NOT_MATCH_ASSIGNED: the partitions in {}ByTimestamp do not "
                      "match the assigned partitions",
                      option));
  }
  PartitionOffsets out;
  std::vector<TopicPartition> to_latest;
  for (auto& [tp, lo] : list_offsets_with_retries(admin, options, req)) {
    if (lo.offset >= 0) {
      out[tp.topic][tp.partition] = lo.offset;
    } else if (ending || options.timestamp_strategy == TimestampStrategy::latest) {
      to_latest.push_back({tp.topic, tp.partition});
    } else {
      throw SourceOptionError(fmt::format("No offset matched from request of topic-partition {} and timestamp {}.",
                                          client::to_string(tp), req[tp]));
    }
  }
  for (auto& [t, parts] : fetch_offsets(admin, options, to_latest, client::kLatestTimestamp))
    for (auto& [p, off] : parts) out[t][p] = off;
  return out;
}

}  // namespace kwire::source::detail
