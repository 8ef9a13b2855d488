// kwire._kwire: the extension module. Batch reads here; the consumer and the
// streaming query in their own files.
#include <nanobind/stl/string.h>

#include "common.hpp"
#include "kwire/source/batch.hpp"
#include "kwire/version.hpp"

namespace kwire::python {

namespace {

// plan() + read() of a batch query into a stream object; returns
// (stream, read counters as a dict).
nb::tuple read_batch(const nb::dict& options) {
  auto opts = to_options(options);
  std::atomic<bool> abort{false};
  PendingError pending;
  std::unique_ptr<source::BatchQuery> query;
  auto stream = std::make_unique<ArrowStreamObject>();
  source::BatchReadResult result;
  std::string plan_json;
  run_interruptible(
      [&] {
        query = std::make_unique<source::BatchQuery>(opts);
        source::BatchQueryPlan plan = query->plan();
        plan_json = plan.to_json();
        if (abort) throw PythonRaised();
        // Ctrl-C on the waiting thread sets `abort`: the read stops at its next chunk.
        source::export_batch_query(*query, plan, &stream->stream, &result, [&] { return abort.load(); });
      },
      abort, pending);
  nb::dict info;
  info["rows"] = result.rows;
  info["dataLoss"] = result.data_loss;
  info["offsetOutOfRange"] = result.offset_out_of_range;
  info["durationMs"] = result.duration_ms;
  nb::list warnings;
  for (const std::string& w : result.warnings) warnings.append(w);
  for (const std::string& w : query->options().warnings) warnings.append(w);
  info["warnings"] = warnings;
  info["plan"] = plan_json;
  return nb::make_tuple(nb::cast(stream.release(), nb::rv_policy::take_ownership), info);
}

std::string plan_batch(const nb::dict& options) {
  auto opts = to_options(options);
  std::atomic<bool> abort{false};
  PendingError pending;
  std::string json;
  run_interruptible(
      [&] {
        source::BatchQuery query(opts);
        json = query.plan().to_json();
      },
      abort, pending);
  return json;
}

nb::object kafka_schema(bool include_headers) {
  ArrowSchema schema;
  source::export_kafka_schema(include_headers, &schema);
  nb::object out = make_schema_object(schema);
  schema.release(&schema);
  return out;
}

}  // namespace

}  // namespace kwire::python

NB_MODULE(_kwire, m) {
  namespace nb = nanobind;
  using namespace kwire::python;
  m.doc() = "kwire's C++ core: Kafka reads exported as Arrow record batches";
  // The one version: project() in the top-level CMakeLists.txt.
  m.attr("__version__") = KWIRE_VERSION_STRING;
  register_errors(m);
  register_arrow_objects(m);
  register_consumer(m);
  register_share_consumer(m);
  register_stream(m);
  register_producer(m);
  register_kafka_sink(m);
  register_postgres_sink(m);
  register_planning(m);
  register_data_source(m);
  register_warnings(m);
  register_avro(m);
  register_protobuf(m);
  register_part_files(m);
  m.def("read", &read_batch, nb::arg("options"),
        "Batch query (Spark's batch options): (ArrowStream, info dict). The GIL is released while reading.");
  m.def("plan", &plan_batch, nb::arg("options"), "The batch query's plan as JSON (resolved offsets and ranges).");
  m.def("kafka_schema", &kafka_schema, nb::arg("include_headers") = false, "Spark's Kafka schema (ArrowSchema).");
}
