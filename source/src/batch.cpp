#include "kwire/source/batch.hpp"

#include <chrono>

#include <fmt/format.h>

#include "kwire/client/consumer.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/source/json_escape.hpp"
#include "kwire/source/progress.hpp"
#include "offset_lookup.hpp"
#include "stream_util.hpp"

namespace kwire::source {

namespace {

std::map<std::string, std::string> client_properties(const SourceOptions& options) {
  auto props = options.kafka_params;
  props.erase("group.id");
  return props;
}

}  // namespace

std::string BatchQueryPlan::to_json() const {
  const std::string ranges_json = offset_ranges_json(ranges);
  return fmt::format("{{\"startOffsets\":{},\"endOffsets\":{},\"ranges\":{}}}", checkpoint::offsets_to_json(start),
                     checkpoint::offsets_to_json(end), ranges_json);
}

BatchQuery::BatchQuery(const std::map<std::string, std::string>& options)
    : options_(parse_source_options(options, QueryMode::batch)) {
  for (auto& w : options_.warnings) detail::warn(w);
  admin_ = std::make_unique<client::KafkaClient>(client_properties(options_));
}

BatchQuery::~BatchQuery() = default;

BatchQueryPlan BatchQuery::plan() {
  BatchQueryPlan plan;
  plan.warnings = options_.warnings;
  auto tps = detail::discover_partitions(*admin_, options_);
  plan.start = detail::resolve_offsets(*admin_, options_, tps, options_.starting, false);
  plan.end = detail::resolve_offsets(*admin_, options_, tps, options_.ending, true);
  // A retried look-up lists the partitions again: keep those both ends know.
  std::erase_if(tps, [&](const TopicPartition& tp) {
    auto known = [&](const PartitionOffsets& o) {
      auto t = o.find(tp.topic);
      return t != o.end() && t->second.count(tp.partition);
    };
    return !known(plan.start) || !known(plan.end);
  });
  std::vector<OffsetRange> ranges;
  for (const auto& tp : tps) {
    const std::int64_t from = plan.start.at(tp.topic).at(tp.partition);
    const std::int64_t until = plan.end.at(tp.topic).at(tp.partition);
    if (from > until) {
      throw BatchOffsetError(
          fmt::format("[RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET] The resolved start offset {} is greater than "
                      "the end offset {} for topic {} partition {}.",
                      from, until, tp.topic, tp.partition));
    }
    ranges.push_back(OffsetRange{tp, from, until, std::nullopt});
  }
  plan.ranges = split_ranges(std::move(ranges), options_.min_partitions, options_.max_records_per_partition);
  return plan;
}

BatchReadResult BatchQuery::read(const BatchQueryPlan& plan, Sink& sink) {
  const auto started = std::chrono::steady_clock::now();
  client::Consumer consumer(RangeReader::consumer_properties(client_properties(options_)));
  sink.begin_batch(0);
  auto read = RangeReader(consumer, RangeReaderOptions::from(options_, executor_group_id(options_, std::nullopt)))
                  .read(plan.ranges, sink);
  BatchReadResult out;
  out.output_rows = sink.commit_batch(0);
  out.rows = read.rows;
  out.data_loss = read.data_loss;
  out.offset_out_of_range = read.offset_out_of_range;
  out.warnings = std::move(read.warnings);
  out.duration_ms = detail::elapsed_ms(started);
  return out;
}

}  // namespace kwire::source
