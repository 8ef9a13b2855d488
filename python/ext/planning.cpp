// Micro-batch planning for drivers that own their offsets elsewhere (the
// PySpark data source): Spark's rate limit and its range planning with the
// data-loss rules, as pure functions over Spark's offsets JSON.
#include <nanobind/stl/string.h>

#include "common.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/source/options.hpp"
#include "kwire/source/planning.hpp"

namespace kwire::python {

namespace {

// source::rate_limit over offsets JSON ({"topic":{"0":n}}); returns the
// limited end offsets as JSON.
std::string rate_limit_json(std::int64_t limit, const std::string& from, const std::string& until,
                            const std::string& earliest_for_new) {
  return checkpoint::offsets_to_json(source::rate_limit(limit, checkpoint::offsets_from_json(from),
                                                        checkpoint::offsets_from_json(until),
                                                        checkpoint::offsets_from_json(earliest_for_new)));
}

// source::plan_batch for micro-batch [start, end) with the planning options
// (failOnDataLoss, minPartitions, maxRecordsPerPartition, kafka.group.id) of
// the streaming source options given. Returns (ranges, warnings): ranges as
// (topic, partition, fromOffset, untilOffset) tuples in plan order.
// Raises KafkaDataLossError (failOnDataLoss=true), ConfigError.
nb::tuple plan_micro_batch(const nb::dict& options, const std::string& start, const std::string& end,
                           const std::string& earliest_for_new) {
  const source::SourceOptions parsed = source::parse_source_options(to_options(options), source::QueryMode::streaming);
  const source::BatchPlan plan =
      source::plan_batch(checkpoint::offsets_from_json(start), checkpoint::offsets_from_json(end),
                         checkpoint::offsets_from_json(earliest_for_new), source::plan_options(parsed));
  nb::list ranges;
  for (const source::OffsetRange& r : plan.ranges) {
    ranges.append(nb::make_tuple(r.tp.topic, r.tp.partition, r.from_offset, r.until_offset));
  }
  nb::list warnings;
  for (const std::string& w : plan.warnings) warnings.append(w);
  return nb::make_tuple(ranges, warnings);
}

}  // namespace

void register_planning(nb::module_& m) {
  m.def("rate_limit", &rate_limit_json, nb::arg("limit"), nb::arg("start"), nb::arg("latest"),
        nb::arg("earliest_for_new"),
        "Spark's rateLimit over offsets JSON: the end offsets of a batch of at most about `limit` offsets.");
  m.def("plan_micro_batch", &plan_micro_batch, nb::arg("options"), nb::arg("start"), nb::arg("end"),
        nb::arg("earliest_for_new"),
        "Spark's offset ranges for micro-batch [start, end) with its data-loss rules: (ranges, warnings).");
}

}  // namespace kwire::python
