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

namespace {

// A topic the metadata does not list, or lists with an error. An unknown
// topic reads as Spark shows it (the message of Java's
// UnknownTopicOrPartitionException, which Admin.describeTopics raises),
// followed by the topic's name.
client::KafkaError missing_topic(std::int16_t code, std::string_view how, const std::string& name) {
  if (code == static_cast<std::int16_t>(protocol::ErrorCode::unknown_topic_or_partition))
    return client::KafkaError(code, fmt::format("This server does not host this topic-partition. ({} topic '{}', "
                                                "UNKNOWN_TOPIC_OR_PARTITION)",
                                                how, name));
  return client::KafkaError(code,
                            fmt::format("{} topic '{}' is not available: {}", how, name, protocol::error_name(code)));
}

}  // namespace

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
          if (!t || t->error_code != 0) throw missing_topic(t ? t->error_code : 3, "subscribed", name);
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
          if (!t || t->error_code != 0) throw missing_topic(t ? t->error_code : 3, "assigned", name);
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

namespace {

// Scala's Set(...) text of partitions, sorted (Spark's order follows its
// hash sets).
std::string set_text(const std::set<TopicPartition>& tps) {
  std::vector<std::string> names;
  for (auto& tp : tps) names.push_back(to_string(tp));
  return fmt::format("Set({})", fmt::join(names, ", "));
}

// Spark's withRetries around a driver look-up (KafkaOffsetReaderAdmin): the
// whole look-up (listing the partitions, checking the offsets given against
// them, listing offsets) is tried fetchOffset.numRetries times,
// fetchOffset.retryIntervalMs apart, and the last error is thrown. The
// partitions are listed again for every attempt after the first.
template <typename Body>
PartitionOffsets with_retries(client::KafkaClient& admin, const SourceOptions& options,
                              std::vector<TopicPartition>& tps, Body&& body) {
  const int attempts = std::max(1, options.fetch_offset_num_retries);
  for (int attempt = 1;; ++attempt) {
    try {
      if (attempt > 1) tps = discover_partitions(admin, options);
      return body();
    } catch (const std::exception& e) {
      if (attempt >= attempts) throw;
      warn(fmt::format("Error in attempt {} of {} getting Kafka offsets: {}", attempt, attempts, e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(options.fetch_offset_retry_interval_ms));
    }
  }
}

// Earliest / latest for the partitions of `out` holding -2 / -1.
void resolve_special(client::KafkaClient& admin, PartitionOffsets& out) {
  std::map<client::TopicPartition, std::int64_t> req;
  for (auto& [t, parts] : out)
    for (auto& [p, off] : parts) {
      if (off == kEarliestOffset) req[client::TopicPartition{t, p}] = client::kEarliestTimestamp;
      if (off == kLatestOffset) req[client::TopicPartition{t, p}] = client::kLatestTimestamp;
    }
  if (req.empty()) return;
  for (auto& [tp, lo] : admin.list_offsets(req)) out[tp.topic][tp.partition] = lo.offset;
}

}  // namespace

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
                                 std::vector<TopicPartition>& tps, const OffsetSpec& spec, bool ending) {
  if (std::holds_alternative<EarliestOffsets>(spec))
    return fetch_offsets(admin, options, tps, client::kEarliestTimestamp);
  if (std::holds_alternative<LatestOffsets>(spec)) return fetch_offsets(admin, options, tps, client::kLatestTimestamp);
  if (auto* s = std::get_if<SpecificOffsets>(&spec)) {
    std::set<TopicPartition> given;
    for (auto& [t, parts] : s->offsets)
      for (auto& [p, _] : parts) given.insert({t, p});
    auto check = [&] {
      const std::set<TopicPartition> assigned(tps.begin(), tps.end());
      if (given == assigned) return;
      if (options.mode == QueryMode::batch)
        // KafkaOffsetReaderAdmin.fetchPartitionOffsets, for either end and
        // not retried (Spark 4.2's error-conditions text, lines joined by \n).
        throw SourceOptionError(fmt::format(
            "[KAFKA_START_OFFSET_DOES_NOT_MATCH_ASSIGNED] Partitions specified for Kafka start offsets don't match "
            "what are assigned. Maybe topic partitions are created \nor deleted while the query is running. Use -1 "
            "for latest, -2 for earliest.\nSpecified: {} Assigned: {}",
            set_text(given), set_text(assigned)));
      // fetchSpecificOffsets (a stream's startingOffsets): an assertion, retried.
      throw SourceOptionError(fmt::format(
          "assertion failed: If startingOffsets contains specific offsets, you must specify all TopicPartitions.\n"
          "Use -1 for latest, -2 for earliest, if you don't care.\nSpecified: {} Assigned: {}",
          set_text(given), set_text(assigned)));
    };
    if (options.mode == QueryMode::batch) {
      check();
      PartitionOffsets out = s->offsets;
      return with_retries(admin, options, tps, [&] {
        resolve_special(admin, out);
        return out;
      });
    }
    return with_retries(admin, options, tps, [&] {
      check();
      PartitionOffsets out = s->offsets;
      resolve_special(admin, out);
      return out;
    });
  }
  // Timestamps (fetchSpecificTimestampBasedOffsets /
  // fetchGlobalTimestampBasedOffsets): the check, the listing and a start
  // without a match under the `error` strategy are all retried.
  return with_retries(admin, options, tps, [&] {
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
        throw SourceOptionError(fmt::format(
            "[KAFKA_TIMESTAMP_OFFSET_DOES_NOT_MATCH_ASSIGNED] Partitions specified for Kafka timestamp based {} "
            "offsets don't match what are assigned. Maybe topic partitions are created \nor deleted while the "
            "query is running, or you didn't specify all the partitions.\nSpecified: {} Assigned: {}",
            ending ? "end" : "start", set_text(given), set_text(assigned)));
    }
    PartitionOffsets out;
    for (auto& [tp, lo] : admin.list_offsets(req)) {
      if (lo.offset >= 0) {
        out[tp.topic][tp.partition] = lo.offset;
      } else if (ending || options.timestamp_strategy == TimestampStrategy::latest) {
        out[tp.topic][tp.partition] = kLatestOffset;
      } else {
        throw SourceOptionError(fmt::format("No offset matched from request of topic-partition {} and timestamp {}.",
                                            client::to_string(tp), req[tp]));
      }
    }
    resolve_special(admin, out);
    return out;
  });
}

}  // namespace kwire::source::detail
