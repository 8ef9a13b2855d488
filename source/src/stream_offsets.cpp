// The streaming query's look-ups on the brokers through its admin client:
// partitions of the subscription, earliest / latest offsets and the initial
// offsets from startingOffsets*, each retried fetchOffset.numRetries times
// (the look-ups themselves are in offset_lookup.cpp, shared with the batch query).
#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/errors.hpp"
#include "kwire/source/stream.hpp"
#include "offset_lookup.hpp"
#include "stream_util.hpp"

namespace kwire::source {

std::map<std::string, std::string> StreamingQuery::client_properties() const {
  std::map<std::string, std::string> props = options_.kafka_params;
  props.erase("group.id");
  return props;
}

void StreamingQuery::commit_to_group(const PartitionOffsets& end, BatchProgress& progress) {
  std::map<TopicPartition, client::OffsetAndMetadata> offsets;
  for (auto& [topic, parts] : end)
    for (auto& [p, off] : parts) offsets[TopicPartition{topic, p}] = client::OffsetAndMetadata{off, -1, ""};
  if (offsets.empty()) return;
  try {
    if (!group_committer_) {
      auto props = options_.kafka_params;  // group.id included
      props["enable.auto.commit"] = "false";
      group_committer_ = std::make_unique<client::Consumer>(props);
    }
    // Outside any generation: the coordinator accepts it while the group has
    // no members (the query itself never joins).
    group_committer_->commit_sync(offsets);
  } catch (const std::exception& e) {
    auto g = options_.kafka_params.find("group.id");
    progress.warnings.push_back(
        fmt::format("commitOffsetsToGroup: committing the batch's end offsets to group {} "
                    "failed: {}",
                    g == options_.kafka_params.end() ? std::string("?") : g->second, e.what()));
    group_committer_.reset();
  }
}

std::vector<TopicPartition> StreamingQuery::discover_partitions() {
  return detail::discover_partitions(*admin_, options_);
}

PartitionOffsets StreamingQuery::fetch_offsets(const std::vector<TopicPartition>& tps, std::int64_t target) {
  return detail::fetch_offsets(*admin_, options_, tps, target);
}

PartitionOffsets StreamingQuery::latest_offsets(const std::vector<TopicPartition>& tps, const PartitionOffsets& known) {
  // A latest offset below one already known is re-queried (bounded), as Spark
  // does for KAFKA-7703, before anything is planned from it.
  return detail::fetch_latest_offsets(*admin_, options_, tps, known);
}

PartitionOffsets StreamingQuery::resolve_initial_offsets() {
  auto tps = discover_partitions();
  return detail::resolve_offsets(*admin_, options_, tps, options_.starting, false);
}

}  // namespace kwire::source
