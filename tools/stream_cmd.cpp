#include <csignal>
#include <stdexcept>

#include <fmt/format.h>

#include "commands.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/source/stream.hpp"

namespace kwire::tools {

using namespace kwire::source;

namespace {
StreamingQuery* g_query = nullptr;
void on_stop(int) {
  if (g_query) g_query->stop();
}

std::map<std::string, std::string> source_options(const CommonOptions& common, const std::vector<std::string>& opts) {
  std::map<std::string, std::string> out;
  for (auto& kv : opts) {
    auto [k, v] = split_key_value(kv, "-o option");
    out[k] = v;
  }
  for (auto& kv : common.properties) {
    auto [k, v] = split_key_value(kv, "-X property");
    out["kafka." + k] = v;
  }
  if (!common.brokers.empty()) out["kafka.bootstrap.servers"] = common.brokers;
  return out;
}
}  // namespace

int cmd_stream(const CommonOptions& common, const StreamArgs& args) {
  auto options = source_options(common, args.options);
  std::unique_ptr<Sink> sink;
  if (args.sink == "console") {
    sink = std::make_unique<ConsoleSink>();
  } else if (args.sink.rfind("jsonl:", 0) == 0 && args.sink.size() > 6) {
    sink = std::make_unique<JsonLinesSink>(args.sink.substr(6));
  } else {
    throw std::invalid_argument(fmt::format("invalid --sink '{}': expected jsonl:DIR or console", args.sink));
  }
  StreamingQuery query(options, args.checkpoint, *sink, Trigger::parse(args.trigger));
  g_query = &query;
  std::signal(SIGINT, on_stop);
  std::signal(SIGTERM, on_stop);
  auto description = query.description();
  query.run(
      [&](const BatchProgress& p) {
        if (args.json_progress)
          fmt::print(stderr, "{}\n", p.to_json(description));
        else
          fmt::print(stderr, "{}\n", p.to_line());
      },
      args.max_batches);
  g_query = nullptr;
  return 0;
}

int cmd_lag(const CommonOptions& common, const LagArgs& args) {
  auto options = source_options(common, args.options);
  std::map<std::string, std::string> props;
  for (auto& [k, v] : options)
    if (k.rfind("kafka.", 0) == 0) props[k.substr(6)] = v;
  if (!props.count("bootstrap.servers"))
    throw std::invalid_argument("no broker given: use -b HOST:PORT or -o kafka.bootstrap.servers=HOST:PORT");
  checkpoint::Checkpoint cp(args.checkpoint);
  auto last = cp.latest_commit_batch();
  if (!last) throw std::invalid_argument(fmt::format("checkpoint '{}' has no committed batch", args.checkpoint));
  auto consumed = cp.read_offsets(*last);
  client::KafkaClient client(props);
  std::map<client::TopicPartition, std::int64_t> req;
  for (auto& [t, parts] : consumed)
    for (auto& [p, _] : parts) req[client::TopicPartition{t, p}] = client::kLatestTimestamp;
  PartitionOffsets latest;
  for (auto& [tp, lo] : client.list_offsets(req)) latest[tp.topic][tp.partition] = lo.offset;
  auto lag = offsets_behind_latest(latest, consumed);
  if (args.json) {
    if (lag)
      fmt::print("{{\"batchId\":{},\"minOffsetsBehindLatest\":{},\"maxOffsetsBehindLatest\":{},"
                 "\"avgOffsetsBehindLatest\":{:.1f},\"endOffset\":{},\"latestOffset\":{}}}\n",
                 *last, lag->min_offsets_behind_latest, lag->max_offsets_behind_latest, lag->avg_offsets_behind_latest,
                 checkpoint::offsets_to_json(consumed), checkpoint::offsets_to_json(latest));
    else
      fmt::print("{{\"batchId\":{}}}\n", *last);
    return 0;
  }
  for (auto& [t, parts] : latest)
    for (auto& [p, off] : parts) {
      auto c = consumed.at(t).at(p);
      fmt::print("{} [{}] consumed {} latest {} behind {}\n", t, p, c, off, off - c);
    }
  if (lag)
    fmt::print("offsets behind latest: min {} max {} avg {:.1f}\n", lag->min_offsets_behind_latest,
               lag->max_offsets_behind_latest, lag->avg_offsets_behind_latest);
  return 0;
}

}  // namespace kwire::tools
