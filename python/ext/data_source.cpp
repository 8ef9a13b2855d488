// kwire._kwire.SourcePlanner and RangeReadSession: the driver and executor
// halves of a Kafka source whose host engine plans and schedules
// (kwire.spark's format("kwire")); offsets cross as Spark's offsets JSON.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>

#include "common.hpp"
#include "kwire/source/data_source.hpp"

namespace kwire::python {

namespace {

using source::PartitionOffsets;

nb::list ranges_list(const std::vector<source::OffsetRange>& ranges) {
  nb::list out;
  for (const source::OffsetRange& r : ranges)
    out.append(nb::make_tuple(r.tp.topic, r.tp.partition, r.from_offset, r.until_offset));
  return out;
}

class PyPlanner {
 public:
  PyPlanner(const nb::dict& options, bool streaming)
      : planner_(std::make_unique<source::SourcePlanner>(
            to_options(options), streaming ? source::QueryMode::streaming : source::QueryMode::batch)) {}

  source::SourcePlanner& get() {
    if (!planner_) throw nb::value_error("kwire: the planner is closed");
    return *planner_;
  }

  void close() {
    nb::gil_scoped_release release;
    planner_.reset();
  }

  nb::list batch_ranges() {
    source::SourcePlanner& p = get();
    std::vector<source::OffsetRange> ranges;
    {
      nb::gil_scoped_release release;
      ranges = p.batch_ranges();
    }
    return ranges_list(ranges);
  }

  std::string initial_offsets() {
    source::SourcePlanner& p = get();
    nb::gil_scoped_release release;
    return checkpoint::offsets_to_json(p.initial_offsets());
  }

  std::string latest_offsets(const std::string& known) {
    source::SourcePlanner& p = get();
    const PartitionOffsets k = checkpoint::offsets_from_json(known);
    nb::gil_scoped_release release;
    return checkpoint::offsets_to_json(p.latest_offsets(k));
  }

  std::string rate_limit(std::int64_t limit, const std::string& start, const std::string& latest) {
    source::SourcePlanner& p = get();
    const PartitionOffsets s = checkpoint::offsets_from_json(start);
    const PartitionOffsets l = checkpoint::offsets_from_json(latest);
    nb::gil_scoped_release release;
    return checkpoint::offsets_to_json(p.rate_limit(limit, s, l));
  }

  nb::tuple plan_micro_batch(const std::string& start, const std::string& end) {
    source::SourcePlanner& p = get();
    const PartitionOffsets s = checkpoint::offsets_from_json(start);
    const PartitionOffsets e = checkpoint::offsets_from_json(end);
    source::BatchPlan plan;
    {
      nb::gil_scoped_release release;
      plan = p.plan_micro_batch(s, e);
    }
    nb::list warnings;
    for (const std::string& w : plan.warnings) warnings.append(w);
    return nb::make_tuple(ranges_list(plan.ranges), warnings);
  }

 private:
  std::unique_ptr<source::SourcePlanner> planner_;
};

class PyRangeReadSession {
 public:
  explicit PyRangeReadSession(const source::ReaderSpec& spec) {
    nb::gil_scoped_release release;
    session_ = std::make_unique<source::RangeReadSession>(spec);
  }

  ~PyRangeReadSession() {
    nb::gil_scoped_release release;
    session_.reset();
  }

  void close() {
    nb::gil_scoped_release release;
    session_.reset();
  }

  // One range into an ArrowStream (Kafka schema) and the read's counters.
  nb::tuple read(const std::string& topic, std::int32_t partition, std::int64_t from, std::int64_t until) {
    if (!session_) throw nb::value_error("kwire: the reader is closed");
    auto stream = std::make_unique<ArrowStreamObject>();
    source::RangeReadResult result;
    {
      nb::gil_scoped_release release;
      source::ArrowSink sink(session_->include_headers());
      sink.begin_batch(0);
      result = session_->read(source::OffsetRange{{topic, partition}, from, until, std::nullopt}, sink);
      sink.commit_batch(0);
      ArrowSchema schema;
      source::export_kafka_schema(session_->include_headers(), &schema);
      source::export_stream(&schema, sink.take_batches(), &stream->stream);
    }
    nb::dict info;
    info["rows"] = result.rows;
    info["dataLoss"] = result.data_loss;
    info["offsetOutOfRange"] = result.offset_out_of_range;
    nb::list warnings;
    for (const std::string& w : result.warnings) warnings.append(w);
    info["warnings"] = warnings;
    return nb::make_tuple(nb::cast(stream.release(), nb::rv_policy::take_ownership), info);
  }

 private:
  std::unique_ptr<source::RangeReadSession> session_;
};

}  // namespace

void register_data_source(nb::module_& m) {
  nb::class_<PyPlanner>(m, "SourcePlanner",
                        "Driver side: plans a query as Spark's Kafka source does, with one admin client kept "
                        "until close(). Offsets in and out are Spark's offsets JSON.")
      .def(nb::init<const nb::dict&, bool>(), nb::arg("options"), nb::arg("streaming"))
      .def_prop_ro("reader_spec", [](PyPlanner& self) { return self.get().reader_spec(); })
      .def("batch_ranges", &PyPlanner::batch_ranges,
           "Spark's partitions of the batch query: [(topic, partition, from, until)], -2 / -1 unresolved.")
      .def("initial_offsets", &PyPlanner::initial_offsets)
      .def("latest_offsets", &PyPlanner::latest_offsets, nb::arg("known"))
      .def("rate_limit", &PyPlanner::rate_limit, nb::arg("limit"), nb::arg("start"), nb::arg("latest"))
      .def("plan_micro_batch", &PyPlanner::plan_micro_batch, nb::arg("start"), nb::arg("end"),
           "(ranges, warnings) of micro-batch [start, end)")
      .def("close", &PyPlanner::close);
  nb::class_<PyRangeReadSession>(m, "RangeReadSession",
                                 "Executor side: reads planned ranges with one consumer kept until close().")
      .def(nb::init<const source::ReaderSpec&>(), nb::arg("spec"))
      .def("read", &PyRangeReadSession::read, nb::arg("topic"), nb::arg("partition"), nb::arg("from_offset"),
           nb::arg("until_offset"), "(ArrowStream, info) of range [from_offset, until_offset)")
      .def("close", &PyRangeReadSession::close);
}

}  // namespace kwire::python
