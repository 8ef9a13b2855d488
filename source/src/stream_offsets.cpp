// The query's look-ups on the brokers through its admin client: partitions
// of the subscription, earliest / latest offsets and the initial offsets
// from startingOffsets*, each retried fetchOffset.numRetries times.
#include <algorithm>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/stream.hpp"
#include "stream_util.hpp"

namespace kwire::source {

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
      detail::warn(fmt::format("listing partitions failed (attempt {} of {}): {}", attempt, attempts, e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.fetch_offset_retry_interval_ms));
    }
  }
}

PartitionOffsets StreamingQuery::fetch_offsets(const std::vector<TopicPartition>& tps, std::int64_t target) {
  PartitionOffsets out;
  if (tps.empty()) return out;
  std::map<client::TopicPartition, std::int64_t> req;
  for (auto& tp : tps) req[tp] = target;
  const int attempts = std::max(1, options_.fetch_offset_num_retries);
  for (int attempt = 1;; ++attempt) {
    try {
      for (auto& [tp, lo] : admin_->list_offsets(req)) out[tp.topic][tp.partition] = lo.offset;
      return out;
    } catch (const client::ClientError& e) {
      if (attempt >= attempts) throw;
      detail::warn(fmt::format("fetching offsets failed (attempt {} of {}): {}", attempt, attempts, e.what()));
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

}  // namespace kwire::source
