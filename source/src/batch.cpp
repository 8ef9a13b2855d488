#include "kwire/source/batch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

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

namespace {

/// Forwards to a reader's sink, and stops that reader (ReaderStopped) once
/// another reader has failed.
struct ReaderStopped {};
class StoppableSink : public Sink {
 public:
  StoppableSink(Sink& inner, const std::atomic<bool>& stop) : inner_(inner), stop_(stop) {}
  void prepare_batch(const BatchContext& context) override { inner_.prepare_batch(context); }
  void begin_batch(std::int64_t batch_id) override { inner_.begin_batch(batch_id); }
  void write(std::span<const Row> rows) override {
    if (stop_.load(std::memory_order_relaxed)) throw ReaderStopped{};
    inner_.write(rows);
  }
  std::int64_t commit_batch(std::int64_t batch_id) override { return inner_.commit_batch(batch_id); }
  bool writes_behind() const override { return inner_.writes_behind(); }
  void release_rows() noexcept override { inner_.release_rows(); }
  std::string description() const override { return inner_.description(); }

 private:
  Sink& inner_;
  const std::atomic<bool>& stop_;
};

}  // namespace

BatchReadResult BatchQuery::read(const BatchQueryPlan& plan, std::span<Sink* const> sinks) {
  if (sinks.size() <= 1) return sinks.empty() ? BatchReadResult{} : read(plan, *sinks[0]);
  const auto started = std::chrono::steady_clock::now();
  const std::size_t readers = sinks.size();
  // A reader reads each partition in one pass over its span: the parts are
  // cut from the spans, not from the ranges.
  std::vector<BatchQueryPlan> parts(readers);
  const auto n = static_cast<std::int64_t>(readers);
  for (const OffsetRange& r : partition_spans(plan.ranges)) {
    // Part k starts k * (size / n) offsets in, plus one for each of the
    // first k parts that take one of the remainder's offsets.
    auto start = [&](std::int64_t k) { return r.from_offset + r.size() / n * k + std::min(k, r.size() % n); };
    for (std::int64_t k = 0; k < n; ++k) {
      OffsetRange part = r;
      part.from_offset = start(k);
      part.until_offset = start(k + 1);
      if (part.size() > 0) parts[static_cast<std::size_t>(k)].ranges.push_back(std::move(part));
    }
  }
  std::atomic<bool> stop{false};
  std::vector<BatchReadResult> results(readers);
  std::vector<std::exception_ptr> errors(readers);
  std::vector<std::thread> threads;
  threads.reserve(readers);
  for (std::size_t j = 0; j < readers; ++j) {
    threads.emplace_back([&, j] {
      try {
        StoppableSink sink(*sinks[j], stop);
        results[j] = read(parts[j], sink);
      } catch (const ReaderStopped&) {
      } catch (...) {
        errors[j] = std::current_exception();
        stop = true;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  BatchReadResult out;
  for (BatchReadResult& r : results) {
    out.rows += r.rows;
    out.output_rows += r.output_rows;
    out.data_loss += r.data_loss;
    out.offset_out_of_range += r.offset_out_of_range;
    for (std::string& w : r.warnings) out.warnings.push_back(std::move(w));
  }
  out.duration_ms = detail::elapsed_ms(started);
  return out;
}

}  // namespace kwire::source
